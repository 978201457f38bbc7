"""`backend.cluster` of a CSX backend: the cluster manager the later releases' backend has, and
ModelZoo's trainer asks (its `config`, `workflow_id`, `start_workflow`, `stop_workflow`,
`client.list_workflow_jobs()`, `active_resources()`, `check_storage_connectivity()`).

On the real system a workflow groups a run's compile and execute jobs on the cluster and may
reserve their resources between them. Here the cluster is one CS-2 behind one csd, and what
holds it for a run is the run's lease on csd, taken by the run itself: a workflow is only a name
for the runs this process makes. start_workflow() gives it an id (once), stop_workflow() ends it;
`client.list_workflow_jobs()` answers no compile jobs and the runs csd knows as this process's
execute jobs; active_resources() is 1, the one system.
"""

from __future__ import annotations

import uuid


class WorkflowClient:
    """What ModelZoo asks the cluster's management client: the workflow's jobs."""

    def __init__(self, run_ids):
        self._run_ids = run_ids

    def list_workflow_jobs(self) -> tuple[list, list]:
        """(compile jobs, execute jobs) of the workflow: no compile jobs (csd compiles nothing
        apart), and the runs this process has opened on csd, oldest first."""
        return [], list(self._run_ids)


class Cluster:
    """The cluster of a CSX backend (see the module docstring): `config` is its ClusterConfig,
    `run_ids` the list of runs its csd link opens (csd_link.CsdLink.run_ids)."""

    def __init__(self, config, run_ids: list):
        self.config = config
        self.workflow_id: str | None = None
        self.client = WorkflowClient(run_ids)

    def start_workflow(self, lock_resources: bool = True) -> bool:
        """Name this process's runs a workflow; True if this started it, False if one was running.
        `lock_resources` is taken as the real one takes it: each run's lease already holds the
        system while the run lasts."""
        if self.workflow_id is not None:
            return False
        self.workflow_id = f"wflow-{uuid.uuid4().hex[:12]}"
        return True

    def stop_workflow(self) -> None:
        """End the workflow (runs already made stay on csd's record)."""
        self.workflow_id = None

    def active_resources(self) -> int:
        """The systems the workflow may run on: the one CS-2 behind csd."""
        if self.workflow_id is None:
            raise RuntimeError("No workflow has been initialized. Use the `start_workflow` method to initialize "
                               "a new workflow first.")
        return 1

    def check_storage_connectivity(self) -> bool:
        """Whether the cluster reaches the run's object storage: ModelZoo asks only for S3
        checkpoint paths, which are refused here (cerebras.appliance.storage.s3_storage); a
        local path needs no check."""
        return True

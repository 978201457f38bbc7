"""cstorch.distributed.cluster_resolver and service_resolver(), as ModelZoo's input functions read
them to split their files over the input workers: the real dataclasses and their checks, and the
cluster csd runs: one CS-2, the workers of an input worker process, the master's one task."""

import pytest

import csadmin.cstorch as cstorch
from csadmin.cstorch.distributed.cluster_resolver import ClusterSpec, TaskRole, TaskSpec
from csadmin.cstorch.utils.data.worker_info import WorkerInfo
from csadmin.errors import InvalidArgument
from tests.cstorch.run_state import fresh_run  # noqa: F401


def test_an_input_worker_sees_its_task_among_the_workers_of_one_cs2(fresh_run):
    fresh_run.is_input_worker, fresh_run.worker = True, WorkerInfo(2, 3)
    resolver = cstorch.distributed.service_resolver()
    spec = resolver.cluster_spec
    assert (spec.num_csx, spec.num_workers_per_csx, spec.num_tasks()) == (1, 3, 3)
    task = spec.task()
    assert (task.rank, task.local_rank, task.wse_id, task.roles) == (2, 2, 0, [TaskRole.WORKER])
    assert resolver.streamer_ordinals() == [0, 1, 2] and resolver.receiver_ordinals() == []


def test_the_scripts_process_is_the_master_alone(fresh_run):
    spec = cstorch.distributed.service_resolver().cluster_spec
    assert spec.task().roles == [TaskRole.MASTER] and spec.num_workers_per_csx == 0


def test_modelzoos_own_specs_are_built_and_checked():
    task = TaskSpec(rank=0, local_rank=0, wse_id=0, node_name="unknown")
    assert ClusterSpec([task], 0, 1, 1).task(0) is task
    with pytest.raises(InvalidArgument, match="Invalid task rank 3"):
        ClusterSpec([task], 0, 1, 1).task(3)
    with pytest.raises(InvalidArgument, match=r"Expected task ranks to be \[0, 1\], but got \[0, 0\]"):
        ClusterSpec([task, task], 0, 1, 2)
    with pytest.raises(InvalidArgument, match="node_name must not be empty"):
        TaskSpec(rank=0, local_rank=0, wse_id=0, node_name="")

"""What ModelZoo 2.10's trainer reaches in cerebras.pytorch beyond the names the other tests pin
(docs/cstorch/generations.md, "The real package's other module paths"): each behaves as the real
one does where the trainer reads it. tests/zoo/test_modelzoo_210.py runs the trainer
itself; these pin each piece on its own."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch
from torch.optim.optimizer import ParamsT
from torch.utils._pytree import tree_flatten

import csadmin.cstorch as cstorch
from csadmin.cstorch import distributed, torch_compat
from csadmin.cstorch.backend.cluster import Cluster
from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.distributed.cluster_resolver import TaskRole
from csadmin.cstorch.utils.data.utils import Schedule
from csadmin.cstorch.utils.tracker import RateTracker
from tests.cstorch.v2 import csx


def test_dataclasses_replace_builds_a_torch_treespec():
    """ModelZoo 2.10 (written for torch 2.4) rebuilds pytree specs with dataclasses.replace."""
    torch_compat.accept_dataclass_fields()
    torch_compat.accept_dataclass_fields()  # idempotent
    _, spec = tree_flatten({"a": (1, 2)})
    child = spec.children()[0]
    rebuilt = dataclasses.replace(child, type=list, children_specs=child.children())
    assert rebuilt.type is list and rebuilt.num_children == 2 and rebuilt.children() == child.children()
    with pytest.raises(TypeError):
        type(spec)(dict)


def test_the_cluster_as_the_master_and_as_an_input_worker_sees_it():
    spec = distributed.service_resolver().cluster_spec
    assert (distributed.get_ordinal(), distributed.num_tasks(), spec.num_workers_per_csx) == (0, 1, 0)
    assert spec.task().roles == [TaskRole.MASTER] and distributed.service_resolver().streamer_ordinals() == []
    backend = process_backend.current()
    backend.is_input_worker, backend.worker = True, process_backend.WorkerInfo(1, 3)
    spec = distributed.service_resolver().cluster_spec
    assert (spec.rank, spec.num_tasks(), spec.task().local_rank, spec.task().roles) == (1, 3, 1, [TaskRole.WORKER])
    assert distributed.service_resolver().streamer_ordinals() == [0, 1, 2]
    config = distributed.ClusterConfig(num_csx=1, mount_dirs=["/data"])
    assert hash(config) == hash(distributed.ClusterConfig(num_csx=1, mount_dirs=["/data"]))


def test_a_schedule_iterates_and_finds_its_next_step():
    schedule = Schedule([Schedule.Range(start=1, end=8, step=3, include_last=True), Schedule.Range(10, 12, 1, False)])
    assert list(schedule) == [1, 4, 7, 10, 11] and len(schedule) == 5 and schedule.range() == [range(1, 8, 3), range(10, 12)]
    assert (schedule.start, schedule.final_step) == (1, 11)
    assert [schedule.next_immediate_step(t) for t in (0, 2, 7, 8, 11)] == [1, 4, 7, 10, 11]
    with pytest.raises(ValueError, match="exceeds the last interval step 11"):
        schedule.next_immediate_step(12)
    schedule.intervals[0].start = 4  # mutable, as ModelZoo moves a range's start on resume
    assert list(schedule.intervals[0]) == [4, 7]
    assert Schedule([]).next_immediate_step(3) is None


def test_a_csx_backend_has_a_cluster_a_movable_artifact_dir_and_no_appliance(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    assert isinstance(backend.cluster, Cluster) and backend._impl is backend and backend.appliance is None
    assert backend.cluster.workflow_id is None and backend.cluster.start_workflow()
    assert not backend.cluster.start_workflow(lock_resources=False) and backend.cluster.active_resources() == 1
    assert backend.cluster.client.list_workflow_jobs() == ([], [])
    backend.cluster.stop_workflow()
    assert backend.cluster.workflow_id is None
    backend.artifact_dir = tmp_path / "logs" / "run1"
    assert backend.artifact_dir == str(tmp_path / "logs" / "run1") and (tmp_path / "logs" / "run1").is_dir()


def test_the_rate_tracker_resets_and_the_optimizers_signatures_type_params_and_lr():
    tracker = RateTracker()
    tracker.add(8)
    tracker.reset()
    assert tracker.total_count == 0
    for cls in (cstorch.optim.AdamW, cstorch.optim.SGD, cstorch.optim.Adam):
        parameters = inspect.signature(cls).parameters
        assert parameters["params"].annotation is ParamsT and parameters["lr"].annotation is float

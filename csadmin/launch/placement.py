"""csrun_wse's layout of a job, decided before anything is allocated (pure: no I/O).

`--total-nodes N`, `--single-task-nodes S`, `--tasks-per-node T`, `--cpus-per-task C`: the
first S nodes run one task each — the training process on the node the system is attached to —
and the other N - S nodes run T input worker tasks each, C CPUs per task; `--cyclic` deals the
worker tasks out node by node (task 0 on the first worker node, task 1 on the second, …) instead
of filling each node in turn. The workers' count is the run's `num_workers_per_csx`; each worker
knows its index (its Slurm task id within the workers) for sharding.

Weight streaming (`python-ws`) needs at least two single-task nodes (003); pipelined
(`python-pt`) one.
"""

from __future__ import annotations

from dataclasses import dataclass

from csadmin import errors

# 003, on csrun_wse's command line.
WS_SINGLE_TASK_RULE = "On Weight streaming execution at least two single task cpu nodes are required"
INTERPRETERS = {"python-ws": ("WEIGHT_STREAMING", "cs2_weight_streaming", 2),
                "python-pt": ("PIPELINED", "cs2_pipelined", 1)}


@dataclass(frozen=True)
class Plan:
    interpreter: str
    total_nodes: int
    single_task_nodes: int
    tasks_per_node: int
    cpus_per_task: int
    cyclic: bool

    @property
    def execmode(self) -> str:
        return INTERPRETERS[self.interpreter][0]

    @property
    def feature(self) -> str:
        """The node feature (slurm.conf Features=) the execution mode is asked for with."""
        return INTERPRETERS[self.interpreter][1]

    @property
    def worker_nodes(self) -> int:
        return self.total_nodes - self.single_task_nodes

    @property
    def workers(self) -> int:
        """Input worker tasks: num_workers_per_csx (0: the training process feeds itself)."""
        return self.worker_nodes * self.tasks_per_node


def plan(interpreter: str, total_nodes: int | None, single_task_nodes: int | None, tasks_per_node: int | None,
         cpus_per_task: int | None, cyclic: bool) -> Plan:
    """The job's layout, or UsageError naming the rule a request breaks (nothing is allocated)."""
    if interpreter not in INTERPRETERS:
        raise errors.UsageError(f"{interpreter!r} is not an interpreter.", f"Use {' or '.join(INTERPRETERS)}.")
    least = INTERPRETERS[interpreter][2]
    single = least if single_task_nodes is None else single_task_nodes
    total = single if total_nodes is None else total_nodes
    for name, value in (("--total-nodes", total), ("--single-task-nodes", single),
                        ("--tasks-per-node", tasks_per_node), ("--cpus-per-task", cpus_per_task)):
        if value is not None and value < 1:
            raise errors.UsageError(f"{name} must be at least 1, not {value}.", f"Give {name} a positive count.")
    if single < least:
        raise errors.UsageError(
            f"--single-task-nodes {single} with {interpreter}: {WS_SINGLE_TASK_RULE}.",
            "Use --single-task-nodes 2 (or more), and --total-nodes at least that many.")
    if total < single:
        raise errors.UsageError(f"--total-nodes {total} is fewer than --single-task-nodes {single}.",
                                "The single-task nodes are part of the total: raise --total-nodes.")
    return Plan(interpreter, total, single, tasks_per_node or 1, cpus_per_task or 1, cyclic)

"""`cstorch.utils.benchmark.benchmark_dataloader(...)`: the real package's dataloader benchmark
(`cszoo data_info`'s throughput report, with its sampling and profiling of the input workers).
Not built here: calling it is refused, naming it and what measures a run's input instead."""

from csadmin.errors import InvalidState


def benchmark_dataloader(input_fn, num_epochs=None, steps_per_epoch=None, sampling_frequency=None,
                         profile_activities=None, print_metrics=True):
    """Refused (see the module docstring)."""
    raise InvalidState("cstorch.utils.benchmark.benchmark_dataloader (the dataloader benchmark) is not built here.",
                       hint="Run the input under a DataExecutor: the run's samples_per_sec scalars and "
                            "performance.json say its throughput.")

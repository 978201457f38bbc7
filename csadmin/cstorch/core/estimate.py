"""How long one execution of a compiled program takes on its device: the denominator of its
est_samples_per_sec (performance.json, compile_report.txt, csd's suspected_input_bottleneck).

The simulated device is the machine the program runs on, so the estimate is measured — but it
must be the program's, not the machine's load of the moment: the same program gets the same
estimate (within the 20% docs/cstorch.md reports) whatever else the machine runs.

  * On the CPU: the program is executed `runs` times on scratch state, each op timed by the
    executing thread's CPU time (time.thread_time: the time the thread ran, not the time other
    processes held the core), and the estimate is the sum over its ops of each op's shortest
    time. An op is short (microseconds to milliseconds), so among a few executions one usually
    ran without a neighbour's time slice evicting its caches half-way: the sum of those shortest
    times is the program's own cost, where the fastest whole execution (tens of milliseconds)
    seldom escapes one. The Python that binds the op calls together is not counted (about a
    microsecond an op, as the replay calls them).
  * On a CUDA device: the fastest of `runs` whole executions by the clock, between
    torch.cuda.synchronize() calls (the GPU's time; the CPU's load hardly touches it).
"""

from __future__ import annotations

import time

import torch
from torch import fx


class _OpTimer(fx.Interpreter):
    """Executes a program's graph, keeping each op's shortest CPU time so far in `shortest`."""

    def __init__(self, module: fx.GraphModule, shortest: dict):
        super().__init__(module)
        self.shortest = shortest

    def run_node(self, node: fx.Node):
        if node.op != "call_function":
            return super().run_node(node)
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        start = time.thread_time()
        result = node.target(*args, **kwargs)
        spent = time.thread_time() - start
        if spent < self.shortest.get(node, float("inf")):
            self.shortest[node] = spent
        return result


def program_seconds(module: fx.GraphModule, forward, inputs: list, state: list, runs: int) -> float:
    """Seconds one execution of `module` (whose code, bound for speed, is `forward`) takes on
    its device, measured on `inputs` and `state` (scratch: they may change) as the module
    docstring says."""
    with torch.no_grad():
        if any(t.is_cuda for t in (*inputs, *state)):
            best = float("inf")
            for _ in range(runs):
                torch.cuda.synchronize()
                start = time.perf_counter()
                forward(None, inputs, state)
                torch.cuda.synchronize()
                best = min(best, time.perf_counter() - start)
            return best
        shortest: dict = {}
        for _ in range(runs):
            _OpTimer(module, shortest).run(inputs, state)
        return sum(shortest.values())

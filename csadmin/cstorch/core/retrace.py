"""`cstorch.backends.csx.debug.retrace_every_iteration`: trace every step again, and refuse a step
whose graph is not the first step's.

Without it the step's Python runs once per run (its first step is captured and the program
replayed), so a Python branch that would go another way later is never seen. With it, every
step's function runs again under a capture (leaving no trace: the state, the gradients and the
RNG are put back, as at the first capture), and its aten ops are compared, in order, with the
first capture's: more, fewer or other ops would be a second compile, which the system does not
allow (001: the fabric is never reprogrammed in a run), so the step is refused with
ReprogramForbidden saying where the graphs part, before it executes. The same graph executes as
usual.
"""

from __future__ import annotations

from torch import fx

from csadmin.errors import ReprogramForbidden

from .half_precision import capture_executor
from ..amp.precision import half_format, step_autocast
from .capture import Capture

NEXT = ("This will cause a second compile which is currently not allowed. Ensure that all controls lead to the "
        "same graph: no Python branch on a value that changes between steps.")


def ops(graph: fx.Graph) -> tuple:
    """The graph's aten ops, in the order the step ran them."""
    return tuple(str(node.target) for node in graph.nodes
                 if node.op == "call_function" and hasattr(node.target, "_schema"))


def check(step_fn, backend, run, args: tuple, kwargs: dict, inputs: list) -> None:
    """Capture this call of `step_fn` again and refuse it if its ops differ from the first step's."""
    params = backend.parameters()
    grads_before = [p.grad for p in params]
    cap = Capture(inputs, step_fn.described, execute=capture_executor(half_format()))  # as the first capture
    run.capture, run.captured_closures = cap, []
    try:
        with backend.stepping(), cap, step_autocast([*params, *inputs]):
            step_fn.fn(*args, **kwargs)
        now = ops(cap.graph)
    finally:
        run.capture, run.captured_closures = None, []
        cap.restore()
        for p, g in zip(params, grads_before):
            p.grad = g
    _compare(run.traced_ops, now, run.step - run.first_step + 1)


def _compare(first: tuple, now: tuple, iteration: int) -> None:
    for k, (was, op) in enumerate(zip(first, now)):
        if was != op:
            raise ReprogramForbidden(
                f"At operation {k + 1} of the step, the traced graph at iteration {iteration} calls `{op}` where "
                f"the first iteration called `{was}`: the functions are different.", NEXT)
    if len(now) != len(first):
        more = "more" if len(now) > len(first) else "fewer"
        raise ReprogramForbidden(
            f"Traced graph at iteration {iteration} has {more} operations ({len(now)}) than the traced graph at the "
            f"first iteration ({len(first)}).", NEXT)

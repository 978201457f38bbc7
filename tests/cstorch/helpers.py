"""Shared pieces of the cstorch tests: the system in weight streaming, a small model and data,
and configure() pointed at a test csd."""

from __future__ import annotations

import contextlib
import os

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

import csadmin.cstorch as cstorch
from tests.harness import Daemon

aten = torch.ops.aten


def weight_streaming(daemon: Daemon) -> None:
    """Put the daemon's system in weight streaming and ACTIVE."""
    with daemon.client() as c:
        if c.system_show()["activeExecmode"] != "WEIGHT_STREAMING":
            c.system_standby()
            c.wait_for(state="STANDBY", timeout=20)
            c.execmode_setup("WEIGHT_STREAMING")
        if c.system_show()["state"] != "ACTIVE":
            c.system_activate()
        c.wait_for(state="ACTIVE", execmode="WEIGHT_STREAMING", timeout=20)


@pytest.fixture(scope="module")
def ws_csd():
    """One csd in weight streaming, ACTIVE, for a test module (runs end between tests, so they
    share it). Imported by the modules' conftest or the test files that use it."""
    daemon = Daemon().start()
    weight_streaming(daemon)
    yield daemon
    daemon.cleanup()


# The products the numerics contract defines itself (docs/cstorch.md, point 4): half-rounded
# inputs, a float32 sum, one rounding of the result.
_PRODUCTS = {
    aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default, aten.addbmm.default,
    aten.mv.default, aten.addmv.default, aten.dot.default, aten.convolution.default,
    aten.convolution_backward.default,
}


class _ProductsInFloat32(TorchDispatchMode):
    """Matrix products and convolutions on half tensors summed as the contract says: in float32 on
    the half values, the result rounded once to the half dtype. Eager autocast's own half kernels
    sum in an order of their own that depends on the processor (on one with AVX512-FP16 a 32-term
    float16 dot product already rounds differently from float32's MKL order now and then), so a
    baseline that left them to the kernel would hold bit for bit on some CPUs only."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        halves = {x.dtype for x in flat if isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16)}
        if func not in _PRODUCTS or len(halves) != 1:
            return func(*args, **kwargs)
        half = halves.pop()
        wide = tree_map(lambda x: x.float() if isinstance(x, torch.Tensor) and x.dtype == half else x, (args, kwargs))
        return tree_map(lambda x: x.to(half) if isinstance(x, torch.Tensor) else x, func(*wide[0], **wide[1]))


@contextlib.contextmanager
def as_the_system():
    """The numerics the runtime gives a step, for an eager baseline: CPU autocast to float16 (001:
    the computation other than the weight update happens in float16, the casts inserted for you),
    its products summed in float32 as the contract defines them (_ProductsInFloat32). Spelled in
    plain torch, not through cstorch, so a baseline does not lean on what it checks."""
    with torch.autocast("cpu", dtype=torch.float16), _ProductsInFloat32():
        yield


def eagerly(step):
    """`step` as plain eager PyTorch with the system's numerics: each call runs under as_the_system()."""
    def run(*args, **kwargs):
        with as_the_system():
            return step(*args, **kwargs)
    return run


def configure(daemon: Daemon, tmp_path, **kwargs):
    return cstorch.configure(
        model_dir=str(tmp_path / "model"), compile_dir=str(tmp_path / "compile"),
        mgmt_address=daemon.connection_file, key=daemon.admin_key, **kwargs)


def model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))


def batches(n: int, batch_size: int = 32, seed: int = 1):
    """`n` batches of a separable problem: the label is whether the first feature is positive."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n * batch_size, 8, generator=g)
    y = (x[:, 0] > 0).long()
    return [(x[i * batch_size:(i + 1) * batch_size], y[i * batch_size:(i + 1) * batch_size]) for i in range(n)]


class Trainer:
    """cstorch.compile + SGD + a compile_step over `net`, as the document's training example.
    With `logits=True` the step returns (logits, loss) instead of the loss."""

    def __init__(self, net: torch.nn.Module, lr: float = 0.1, logits: bool = False):
        self.net = net
        self.compiled = cstorch.compile(net, backend="wse_ws")
        self.optimizer = cstorch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.logits = logits

        self.step = cstorch.compile_step(self.body)

    def body(self, inputs, targets):
        """One training step, as the compile_step function's body."""
        self.optimizer.zero_grad()
        logits = self.compiled(inputs)
        loss = self.loss_fn(logits, targets)
        loss.backward()
        self.optimizer.step()
        return (logits, loss) if self.logits else loss


def run_record(daemon: Daemon) -> dict:
    """The newest run csd knows."""
    with daemon.client() as c:
        return c.runs_list()["runs"][0]


def files(path) -> list[str]:
    return sorted(os.listdir(path))

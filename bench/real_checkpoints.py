"""Checkpoints both ways between the real package (cerebras-pytorch 2.10) and csadmin.cstorch.

Run by hand, never in CI (issue 37). With the project's venv (torch, h5py, hdf5plugin):

    .venv/bin/python bench/real_checkpoints.py                         # wheels from PyPI
    .venv/bin/python bench/real_checkpoints.py --wheels /tmp/realwheels  # or a folder of wheels
    .venv/bin/python bench/real_checkpoints.py --venv /tmp/cs-real --write-fixtures

1. Makes a throwaway venv (Python 3.11, `--venv`, kept if it exists) and installs
   cerebras-pytorch==2.10.0 in it (it pulls torch 2.4 and cerebras-appliance).
2. In that venv, the real package writes small checkpoints with its own `cstorch.save`: a model's
   state dict with SGD's, Adam's and AdamW's state dicts after three steps on seeded batches
   (expected.pt also keeps the next three batches and the parameters after them: the real trajectory
   a resumed run must follow); its GradScaler's state dicts (dynamic and static, as it gives them on
   a CSX backend); a nested dict of ints, floats, strings, lists, None, a bfloat16 and a 0-d tensor.
   Beside them, `expected.pt` (torch.save of the same values: a record independent of HDF5) is what
   tests/cstorch/storage/test_real_checkpoints.py compares every loaded tensor with, bit for bit.
   `--write-fixtures` copies them to tests/cstorch/storage/fixtures/real_checkpoints/.
3. Here, csadmin.cstorch writes the same values in the 2.x format (cstorch.save) and in R1.8's
   (storage/format_r18.py, what save writes for a configure-based script); then the real package
   reads both with its own `cstorch.load` and compares every value with what was written.
4. Prints, for each of those files, whether the real package read it and found every value equal
   (the other direction, ours reading its files, is tests/cstorch/storage/test_real_checkpoints.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "tests", "cstorch", "storage", "fixtures", "real_checkpoints")
NAMES = ("sgd", "adam", "adamw", "scaler", "nested")
TRAJECTORIES = "trajectories"  # in expected.pt only: the batches and the parameters after them


# -- inside the real package's venv -----------------------------------------------------------------


def _real_write(out: str) -> None:
    import collections
    import copy

    import torch

    import cerebras.pytorch as cstorch

    cstorch.backend("CPU")
    states, trajectories = {}, {}

    def model():  # small: each tensor costs the file a few KiB of HDF5 structure
        torch.manual_seed(0)
        return torch.nn.Linear(3, 2)

    def steps(net, optimizer, batches):
        for x in batches:
            optimizer.zero_grad()
            net(x).pow(2).mean().backward()
            optimizer.step()

    for name, make in (("sgd", lambda p: cstorch.optim.SGD(p, lr=0.1, momentum=0.9)),
                       ("adam", lambda p: cstorch.optim.Adam(p, lr=0.01, eps=1e-8)),
                       ("adamw", lambda p: cstorch.optim.AdamW(p, lr=0.01, eps=1e-8, weight_decay=0.01))):
        net = model()
        optimizer = make(net.parameters())
        torch.manual_seed(1)
        batches = [torch.randn(5, 3) for _ in range(6)]
        steps(net, optimizer, batches[:3])
        # (copies: a state dict holds the live tensors, which the next steps change)
        states[name] = copy.deepcopy({"model": net.state_dict(), "optimizer": optimizer.state_dict()})
        steps(net, optimizer, batches[3:])
        trajectories[name] = {"batches": batches[3:], "continued": {k: v.clone() for k, v in net.state_dict().items()}}
    states["scaler"] = _real_scaler_states(cstorch, torch)
    states["nested"] = {
        "global_step": 7, "ratio": 0.25, "flag": True, "name": "run ✓", "nothing": None,
        "list": [1, 2.5, "three", [4, None]], "pair": (1, "two"),
        "odict": collections.OrderedDict([("b", 1), ("a", torch.arange(3))]),
        "bf16": torch.tensor([1.5, -2.25, 3.0e38], dtype=torch.bfloat16),
        "scalar": torch.tensor(0.125), "int64": torch.tensor([2**40, -1]), "mask": torch.tensor([True, False]),
        "half": torch.tensor([0.5, 65504.0], dtype=torch.float16), "keys": {1: "int", "a": {"b": torch.ones(2, 2)}},
    }
    for name, state in states.items():
        cstorch.save(state, os.path.join(out, f"{name}.mdl"))
    torch.save({**states, TRAJECTORIES: trajectories}, os.path.join(out, "expected.pt"))


def _real_scaler_states(cstorch, torch) -> dict:
    """The real GradScaler's state dicts. On a CPU backend it returns {} (its state only exists on
    a CSX backend), so its own state_dict is asked with the backend reading as CSX."""
    from types import SimpleNamespace

    dynamic = cstorch.amp.GradScaler(loss_scale="dynamic")
    dynamic.load_state_dict({"loss_scale": torch.tensor(1024.0), "steps_since_rescale": torch.tensor(7),
                             "overflows_since_rescale": torch.tensor(1), "num_skipped_steps": torch.tensor(2)})
    static = cstorch.amp.GradScaler(loss_scale=8.0)
    states = {}
    for name, scaler in (("dynamic", dynamic), ("static", static)):
        real_backend = scaler.backend
        scaler.backend = SimpleNamespace(backend_type=SimpleNamespace(is_csx=True))
        try:
            states[name] = scaler.state_dict()
        finally:
            scaler.backend = real_backend
    return states


def _real_read(folder: str) -> None:
    """Load every .mdl in `folder` with the real package; compare with expected.pt; print JSON."""
    import torch

    import cerebras.pytorch as cstorch

    expected = torch.load(os.path.join(folder, "expected.pt"), weights_only=False)
    report = {}
    for name in sorted(expected):
        for suffix in ("", ".r18"):
            path = os.path.join(folder, f"{name}{suffix}.mdl")
            if not os.path.exists(path):
                continue
            try:
                loaded = cstorch.load(path)
                report[f"{name}{suffix}"] = "equal" if _same(loaded, expected[name]) else "read, NOT equal"
            except Exception as e:  # noqa: BLE001  (a report of what the real package did)
                report[f"{name}{suffix}"] = f"not read: {type(e).__name__}: {str(e)[:200]}"
    print(json.dumps(report))


def _same(a, b) -> bool:
    import torch

    if isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(b, dict):
        return isinstance(a, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# -- here, in the project's venv --------------------------------------------------------------------


def _venv(path: str, python: str, wheels: str | None) -> str:
    exe = os.path.join(path, "bin", "python")
    if not os.path.exists(exe):
        subprocess.run([python, "-m", "venv", path], check=True)
        found = [os.path.join(wheels, n) for n in sorted(os.listdir(wheels)) if n.endswith(".whl")] if wheels else []
        subprocess.run([exe, "-m", "pip", "install", "-q", *(found or ["cerebras-pytorch==2.10.0"])], check=True)
    return exe


def _ours_write(folder: str) -> None:
    """Our files for the same values: NAME.mdl (cstorch.save, 2.x) and NAME.r18.mdl (R1.8's)."""
    import h5py
    import torch

    sys.path.insert(0, ROOT)
    from csadmin.cstorch.storage import checkpoint, format_r18

    expected = torch.load(os.path.join(folder, "expected.pt"), weights_only=False)
    for name, state in expected.items():
        if name == TRAJECTORIES:
            continue
        checkpoint.save(state, os.path.join(folder, f"{name}.mdl"))
        with h5py.File(os.path.join(folder, f"{name}.r18.mdl"), "w") as f:
            format_r18.write(f, state)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=os.path.join(tempfile.gettempdir(), "cstorch-real-venv"))
    parser.add_argument("--python", default="python3.11", help="the interpreter the venv is made with")
    parser.add_argument("--wheels", help="a folder of the real wheels to install instead of PyPI's")
    parser.add_argument("--write-fixtures", action="store_true", help=f"copy the real files to {FIXTURES}")
    parser.add_argument("--inside", nargs=2, metavar=("write|read", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        (_real_write if args.inside[0] == "write" else _real_read)(args.inside[1])
        return 0
    real = _venv(args.venv, args.python, args.wheels)
    with tempfile.TemporaryDirectory() as work:
        theirs, ours = os.path.join(work, "theirs"), os.path.join(work, "ours")
        os.makedirs(theirs)
        subprocess.run([real, __file__, "--inside", "write", theirs], check=True, cwd=work)
        shutil.copytree(theirs, ours)
        for name in NAMES:
            os.remove(os.path.join(ours, f"{name}.mdl"))
        _ours_write(ours)
        done = subprocess.run([real, __file__, "--inside", "read", ours], check=True, cwd=work,
                              capture_output=True, text=True)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        print("The real package reading csadmin.cstorch's files:")
        for name, result in report.items():
            print(f"  {name:12} {result}")
        if args.write_fixtures:
            os.makedirs(FIXTURES, exist_ok=True)
            for name in (*NAMES, "expected"):
                suffix = ".pt" if name == "expected" else ".mdl"
                shutil.copy(os.path.join(theirs, name + suffix), os.path.join(FIXTURES, name + suffix))
            print(f"fixtures written to {FIXTURES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

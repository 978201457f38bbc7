"""Running the vendor's ModelZoo R1.8 as its users run it, for the tests of tests/zoo: the release
extracted once a module (never edited), a model's run.py under `python -m csadmin.cstorch` against
a csd, and what csd and the model directory hold afterwards.

    release = extract(tmp_path_factory)        # skips, saying why, without ../shared or its requirements
    done = run_py(ws_csd, Zoo(folder, params, path), model_dir, "--mode", "train")
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass

from tests.harness import ROOT
from tests.zoo.releases import SHARED, require_release

ARCHIVE = os.path.join(SHARED, "modelzoo-1.8.0.tar.gz")
# What the release imports on every path (its requirements_cb_pt.txt and requirements_cb.txt),
# by module name and PyPI name.
REQUIRES = {"nltk": "nltk", "keras_preprocessing": "Keras-Preprocessing", "jsonschema": "jsonschema"}


@dataclass(frozen=True)
class Zoo:
    """One model of an extracted release: its folder (run.py's), the params to run with, and the
    PYTHONPATH entries after ROOT (the release's root first)."""

    folder: str
    params: str
    path: tuple[str, ...]


def extract(tmp_path_factory) -> tuple[str, tuple[str, ...]]:
    """(the release's root, the PYTHONPATH entries its scripts need) of a fresh extraction; skips
    where the archive (a fresh clone without ../shared) or the release's own import-time
    requirements are absent."""
    require_release(ARCHIVE, "R1.8", REQUIRES, "pip install " + " ".join(REQUIRES.values()))
    base = tmp_path_factory.mktemp("modelzoo18")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(base, filter="data")
    release = os.path.join(base, "modelzoo-1.8.0")
    return release, (release, *_torchvision_path(str(base)))


def _torchvision_path(base) -> list[str]:
    """Where the scripts find `torchvision`. The release's wheel branch imports torchvision and
    torchvision.io.image only to silence their warnings at import (no NLP model uses either).
    PyPI's torchvision cannot load beside the project's CPU build of torch (its C++ ops are built
    for CUDA torch: `operator torchvision::nms does not exist`), so where the real one does not
    import the scripts get a package of that name that says, on any use, that it is not torchvision."""
    probe = subprocess.run([sys.executable, "-c", "import torchvision.io.image"], capture_output=True)
    if probe.returncode == 0:
        return []
    folder = os.path.join(base, "no-torchvision")
    os.makedirs(os.path.join(folder, "torchvision", "io"))
    body = ('"""Not torchvision: the test stand-in for an import ModelZoo 1.8 makes and its NLP models never '
            'use."""\n\n'
            "def __getattr__(name):\n"
            "    raise ImportError(f'torchvision.{name}: torchvision is not installed (tests/zoo stand-in)')\n")
    for module in ("__init__.py", "io/__init__.py", "io/image.py"):
        with open(os.path.join(folder, "torchvision", module), "w") as f:
            f.write(body)
    return [folder]


def run_py(ws_csd, zoo: Zoo, model_dir, *args, params=None) -> subprocess.CompletedProcess:
    """The model's run.py with its params (or `params`), as a user runs it against csd."""
    env = ws_csd.env()
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *zoo.path,
                                         *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    command = [sys.executable, "-m", "csadmin.cstorch", "run.py", "CSX", "weight_streaming", "--params",
               params or zoo.params, "--model_dir", str(model_dir), "--compile_dir", str(model_dir / "compile"), *args]
    return subprocess.run(command, cwd=zoo.folder, env=env, capture_output=True, text=True, timeout=300)


def runs(ws_csd) -> list[dict]:
    """csd's runs, newest first."""
    with ws_csd.client() as c:
        return c.runs_list()["runs"]


def programmings(ws_csd, run_id: str) -> int:
    """How many times csd programmed the fabric for `run_id`."""
    with ws_csd.client() as c:
        return sum(e["type"] == "EventProgrammingStarted" and e["details"].get("runId") == run_id
                   for e in c.events_show(max_count=2000))


def scalars(log_dir) -> dict:
    """TensorBoard's scalars under `log_dir`: tag -> {step: value}."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}

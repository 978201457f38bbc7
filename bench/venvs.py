"""The throwaway virtualenvs the suite measures in, made from PyPI by the suite itself.

- `csd`: csd from a wheel built from this checkout (a copy of it, so the checkout gets no
  build/ or egg-info), installed with its dependencies and compiled once. PYTHONDONTWRITEBYTECODE=1
  is set on these machines, so a source checkout would recompile on every start: we time an
  installed, compiled wheel, as a host runs it. The load generators, the bare pyzmq echo and
  PUB servers and the driver itself run here too, so every ZeroMQ peer uses the same pyzmq/libzmq.
- `circus` and `supervisor`: the contenders, latest release, compiled the same way.
- `plot`: matplotlib, for the PNG (kept out of the csd venv, which stays a production install).

`--venvs DIR` keeps the contenders' venvs in DIR between runs (the csd wheel is rebuilt and
reinstalled every time); by default everything lives in the run's temp dir and goes with it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

CONTENDERS = {"circus": ["circus"], "supervisor": ["supervisor"], "plot": ["matplotlib"]}


def _python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


def _pip(venv: str, *args: str) -> None:
    subprocess.run([_python(venv), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
                   check=True)


def _create(venv: str) -> bool:
    """Make `venv` unless it exists; return whether it was made now."""
    if os.path.exists(_python(venv)):
        return False
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    return True


def _compile(venv: str) -> None:
    # Compile once, as pip normally leaves an install (here PYTHONDONTWRITEBYTECODE=1 stops it).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([_python(venv), "-m", "compileall", "-q", "-j", "0", os.path.join(venv, "lib")],
                   check=True, env=env, stdout=subprocess.DEVNULL)


def build_wheel(root: str, work: str) -> str:
    """A wheel of the checkout at `root` (its working tree, uncommitted changes included)."""
    src = os.path.join(work, "src")
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(root, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "bench"))
    out = os.path.join(work, "wheel")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "-w", out, src], check=True)
    return os.path.join(out, next(n for n in os.listdir(out) if n.endswith(".whl")))


def prepare(root: str, tmp: str, keep_dir: str | None, say=print) -> dict[str, str]:
    """Create (or reuse from `keep_dir`) every venv; return {name: venv path}."""
    base = keep_dir or os.path.join(tmp, "venvs")
    os.makedirs(base, exist_ok=True)
    venvs = {}
    say("venv csd: building the wheel of this checkout and installing it")
    wheel = build_wheel(root, os.path.join(tmp, "build"))
    venvs["csd"] = os.path.join(base, "csd")
    _create(venvs["csd"])
    _pip(venvs["csd"], "--force-reinstall", "--no-deps", wheel)
    _pip(venvs["csd"], wheel)  # its dependencies, if not there yet
    _compile(venvs["csd"])
    for name, packages in CONTENDERS.items():
        venvs[name] = os.path.join(base, name)
        if _create(venvs[name]):
            say(f"venv {name}: installing {' '.join(packages)} from PyPI")
            _pip(venvs[name], *packages)
            _compile(venvs[name])
    return venvs


def versions(venvs: dict[str, str]) -> dict[str, str]:
    """Installed versions of what is measured, for the results file."""
    wanted = {"csd": ["csadmin", "pyzmq"], "circus": ["circus", "pyzmq", "tornado"], "supervisor": ["supervisor"],
              "plot": ["matplotlib"]}
    found = {}
    for name, packages in wanted.items():
        code = ("import importlib.metadata as m, json, zmq; "
                f"d={{p: m.version(p) for p in {packages!r}}}; d['libzmq']=zmq.zmq_version(); print(json.dumps(d))"
                if "pyzmq" in packages else
                f"import importlib.metadata as m, json; print(json.dumps({{p: m.version(p) for p in {packages!r}}}))")
        out = subprocess.run([_python(venvs[name]), "-c", code], capture_output=True, text=True)
        for key, value in (json.loads(out.stdout) if out.returncode == 0 else {}).items():
            found[f"{name}:{key}"] = value
    return found

"""Packaging: one version source for `cs` and `csd`, `python -m csadmin` / `python -m csadmin.daemon`,
one import name (the repository's daemon/ and statemachine/ folders are csadmin.daemon and
csadmin.statemachine), and a wheel built by `pip` that installs and works outside the source tree."""

import os
import pathlib
import subprocess
import sys
import sysconfig
import tomllib
import zipfile

import pytest

import csadmin
from tests.harness import ROOT, build_wheel, wait_until


def run(*cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kwargs)


def test_one_version_source():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "csadmin.__version__"}


@pytest.mark.parametrize("module, name", [("csadmin", "cs"), ("csadmin.daemon", "csd")])
def test_python_dash_m_runs_each_program(module, name):
    done = run(sys.executable, "-m", module, "--version", cwd=ROOT)
    assert (done.returncode, done.stdout.strip()) == (0, f"{name} {csadmin.__version__}"), done


@pytest.mark.skipif(
    not os.environ.get("CI"),
    reason="builds a wheel with pip and installs it in a fresh venv (~4 s); runs in CI (CI=true), "
           "or locally with CI=1",
)
def test_the_wheel_installs_and_serves(tmp_path):
    wheel = pathlib.Path(build_wheel(tmp_path))
    assert wheel.name == f"csadmin-{csadmin.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = next(z.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert {n.split("/")[0] for n in names if not n.startswith("csadmin-")} == {"csadmin"}
    assert {"csadmin/daemon/process/server.py", "csadmin/daemon/commands/system_standby.py",
            "csadmin/statemachine/device.py"} <= set(names)
    data = f"csadmin-{csadmin.__version__}.data/data/share/csadmin/systemd/"
    assert {data + f for f in ("csd.service", "csd.sysusers", "csd.toml")} <= set(names)
    slurm = f"csadmin-{csadmin.__version__}.data/data/share/csadmin/slurm/"
    scripts = ("cs-healthcheck", "cs-features", "cs-reboot", "cs-prolog", "cs-epilog")
    samples = ("cs-slurm.env", "slurm.conf", "gres.conf", "helpers.conf", "slurmd-cs2.conf")
    assert {slurm + f for f in scripts + samples} <= set(names)
    share = f"csadmin-{csadmin.__version__}.data/data/share/"
    assert {share + "bash-completion/completions/cs", share + "zsh/site-functions/_cs"} <= set(names)
    assert "cs = csadmin.main:main" in entry_points and "csd = csadmin.daemon.main:main" in entry_points

    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", "--without-pip", str(venv)).returncode == 0
    py, bindir = str(venv / "bin" / "python"), venv / "bin"
    installed = run(sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-index", str(wheel))
    assert installed.returncode == 0, installed.stderr
    # Dependencies come from this environment (no network here); a bare path line in a .pth file
    # appends the directory after the venv's own site-packages, so the wheel's packages win.
    site = run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    # Exactly one import package and its dist-info: no top-level `daemon` or `statemachine` to
    # overwrite PyPI's python-daemon or python-statemachine in a runtime's environment.
    assert set(os.listdir(site)) == {"csadmin", f"csadmin-{csadmin.__version__}.dist-info"}, os.listdir(site)
    with open(os.path.join(site, "deps.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")

    out = str(tmp_path)  # cwd outside the source tree
    assert (venv / "share" / "csadmin" / "systemd" / "csd.service").exists()
    completion = venv / "share" / "bash-completion" / "completions" / "cs"
    assert completion.read_text() == open(os.path.join(ROOT, "completions", "bash", "cs")).read()
    for script in scripts:  # Slurm runs them as they are installed: they must stay executable
        assert os.access(venv / "share" / "csadmin" / "slurm" / script, os.X_OK), script
    where = run(py, "-c", "import csadmin.daemon.process.server, csadmin.statemachine.device as d; print(d.__file__)", cwd=out)
    assert where.stdout.startswith(site), where
    for cmd, expected in (([bindir / "cs", "--version"], "cs"), ([bindir / "csd", "--version"], "csd"),
                          ([py, "-m", "csadmin", "--version"], "cs"), ([py, "-m", "csadmin.daemon", "--version"], "csd")):
        done = run(*map(str, cmd), cwd=out)
        assert done.stdout.strip() == f"{expected} {csadmin.__version__}", done

    endpoint = f"ipc://{tmp_path}/csd.sock"
    key = tmp_path / "admin.key_secret"  # every socket is CURVE: the installed csd makes the keys
    keys = run(str(bindir / "csd"), "keys", "init", "--state-dir", str(tmp_path / "state"), "--out", str(key), cwd=out)
    assert keys.returncode == 0, keys
    csd = subprocess.Popen([str(bindir / "csd"), "--config", os.devnull, "--state-dir", str(tmp_path / "state"),
                            "--endpoint", endpoint, "--events-endpoint", f"ipc://{tmp_path}/ev.sock"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=out)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CS_") and k != "PYTHONPATH"}
        env.update(CS_ENDPOINT=endpoint, CS_KEY=str(key))  # csd.json beside the socket gives the server key
        shown = wait_until(
            lambda: (r := run(str(bindir / "cs"), "--output-format", "json", "system", "show", env=env, cwd=out)).returncode == 0 and r,
            timeout=30, what="the installed cs to reach the installed csd",
        )
        assert '"systemType": "cs2"' in shown.stdout or '"systemType":"cs2"' in shown.stdout
    finally:
        csd.terminate()
        assert csd.wait(timeout=10) == 0


def test_the_repository_folders_are_csadmins_packages():
    """daemon/ and statemachine/ are csadmin.daemon and csadmin.statemachine in a source checkout
    too, and only by that name: a top-level `import daemon` would load a second copy of csd."""
    code = "import csadmin.daemon.process.server, csadmin.statemachine.device as d; print(d.__file__)"
    done = run(sys.executable, "-c", code, cwd=ROOT)
    assert done.stdout.strip() == os.path.join(ROOT, "csadmin", "statemachine", "device.py"), done
    for name, says in (("daemon", "csadmin.daemon"), ("statemachine", "csadmin.statemachine")):
        done = run(sys.executable, "-c", f"import {name}", cwd=ROOT)
        assert done.returncode == 1 and "ImportError: " in done.stderr and says in done.stderr, done

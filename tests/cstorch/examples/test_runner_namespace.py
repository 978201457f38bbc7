"""`python -m csadmin.cstorch` leaves the `cerebras` namespace open and runs console scripts by
name: a distribution installed into `cerebras` (as ModelZoo's `cerebras.modelzoo` is) imports beside
the runner's `cerebras.pytorch`, every module the runner registers has a `__spec__` (ModelZoo asks
`importlib.util.find_spec("cerebras_appliance")`), and `python -m csadmin.cstorch cszoo fit …` finds
an installed entry point, or a Python script on PATH. No csd: nothing here steps."""

import os
import subprocess
import sys
import textwrap

from tests.harness import ROOT


def _runner(tmp_path, *args, path_dirs=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, *map(str, path_dirs)]),
               PATH=os.pathsep.join([*map(str, path_dirs), os.environ.get("PATH", "")]))
    return subprocess.run([sys.executable, "-m", "csadmin.cstorch", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def _distribution(site, name="fakezoo", script="cszoo"):
    """A namespace portion `cerebras/zoo` and a distribution whose console script `script` runs
    `fakezoo.cli:main`, laid out as pip installs them."""
    (site / "cerebras" / "zoo").mkdir(parents=True)
    (site / "cerebras" / "zoo" / "__init__.py").write_text("ZOO = 'installed'\n")
    (site / name).mkdir()
    (site / name / "__init__.py").write_text("")
    (site / name / "cli.py").write_text(textwrap.dedent("""
        import sys
        import cerebras.pytorch as cstorch
        from cerebras.zoo import ZOO

        def main():
            print("cli", ZOO, cstorch.__name__, sys.argv[1:])
            return 3 if "--fail" in sys.argv else 0
    """))
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[console_scripts]\n{script} = {name}.cli:main\n")


def test_an_installed_cerebras_distribution_imports_beside_the_runners_cerebras_pytorch(tmp_path):
    site = tmp_path / "site"
    _distribution(site)
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import importlib.util
        import cerebras.pytorch as cstorch
        import cerebras_pytorch.experimental as r18
        import csadmin.cstorch
        from cerebras.zoo import ZOO
        from cerebras_appliance.run_utils import get_debug_args
        assert cstorch is csadmin.cstorch, cstorch
        # R1.8's package: csadmin.cstorch's names, its compile R1.8's (the parameters then on "xla")
        assert all(getattr(r18, n) is getattr(cstorch, n) for n in cstorch.__all__ if n != "compile")
        assert r18.compile is not cstorch.compile and r18.optim is cstorch.optim
        for name in ("cerebras", "cerebras.pytorch", "cerebras_pytorch", "cerebras_pytorch.experimental",
                     "cerebras_appliance", "cerebras_appliance.run_utils", "cerebras.pytorch.optim"):
            assert importlib.util.find_spec(name) is not None, name
        print("ok", ZOO)
    """))
    done = _runner(tmp_path, "train.py", path_dirs=[site])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok installed"


def test_without_an_installed_namespace_cerebras_is_an_empty_package_with_a_spec(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import importlib.util
        import cerebras
        assert cerebras.__spec__ is not None and list(cerebras.__path__) == []
        assert importlib.util.find_spec("cerebras").name == "cerebras"
        try:
            import cerebras.modelzoo
        except ModuleNotFoundError as missing:
            print("missing", missing.name)
    """))
    done = _runner(tmp_path, "train.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "missing cerebras.modelzoo"


def test_a_console_script_runs_by_name_from_its_entry_point_with_its_arguments_and_status(tmp_path):
    site = tmp_path / "site"
    _distribution(site)
    done = _runner(tmp_path, "cszoo", "fit", "params.yaml", path_dirs=[site])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cli installed csadmin.cstorch ['fit', 'params.yaml']"
    failed = _runner(tmp_path, "cszoo", "fit", "--fail", path_dirs=[site])
    assert failed.returncode == 3, failed.stderr


def test_a_python_script_on_path_runs_by_name(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "mytool"
    tool.write_text("#!/usr/bin/env python3\nimport sys\nimport cerebras.pytorch as c\nprint('tool', c.__name__, sys.argv[1:])\n")
    tool.chmod(0o755)
    done = _runner(tmp_path, "mytool", "--x", path_dirs=[bin_dir])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tool csadmin.cstorch ['--x']"


def test_a_name_that_is_neither_a_file_nor_a_console_script_is_refused_with_the_usage(tmp_path):
    done = _runner(tmp_path, "no-such-tool-here")
    assert done.returncode == 2
    assert "no such script or console script: no-such-tool-here" in done.stderr
    assert "usage: python -m csadmin.cstorch" in done.stderr


def test_the_runner_registers_the_appliance_package_with_its_levels(tmp_path):
    """`cerebras.appliance` and each module of it is csadmin.appliance's, with a spec, and the
    loggers under "cerebras" have VERBOSE and TRACE, as importing the real package gives them."""
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import importlib.util, logging, pkgutil
        import csadmin.appliance
        from cerebras.appliance.storage import H5Writer, StorageWriter
        from cerebras.appliance.log import VERBOSE, named_class_logger
        from cerebras.appliance.utils.debug_args import get_debug_args
        import cerebras.appliance.storage.h5_storage as h5
        assert H5Writer is h5.H5Writer and h5.__name__ == "csadmin.appliance.storage.h5_storage"
        for info in pkgutil.walk_packages(csadmin.appliance.__path__, "cerebras.appliance."):
            assert importlib.util.find_spec(info.name) is not None, info.name
        logging.basicConfig(level=VERBOSE, format="%(levelname)s %(name)s %(message)s")
        logging.getLogger("cerebras.test").verbose("loud")
        logging.getLogger("cerebras.appliance").trace("hidden")
        print("ok")
    """))
    done = _runner(tmp_path, "train.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok" and "VERBOSE cerebras.test loud" in done.stderr and "hidden" not in done.stderr


def test_a_python_process_the_script_starts_imports_the_same_names(tmp_path):
    """ModelZoo R1.8's eval_all and train_and_eval run `sys.executable run.py ...` again, once per
    checkpoint or round: that process imports the names as the runner's does, each name first."""
    site = tmp_path / "site"
    _distribution(site)
    child = textwrap.dedent("""
        import sys, importlib
        first = importlib.import_module(sys.argv[1])
        import csadmin.cstorch, cerebras.pytorch, cerebras_pytorch.experimental as r18
        from cerebras.zoo import ZOO
        from cerebras.appliance.storage import StorageReader
        from cerebras_appliance.run_utils import get_debug_args
        assert cerebras.pytorch is csadmin.cstorch and r18.compile is not csadmin.cstorch.compile
        print(sys.argv[1], "->", first.__name__, ZOO)
    """)
    (tmp_path / "child.py").write_text(child)
    names = ["cerebras_pytorch", "cerebras_pytorch.experimental", "cerebras.pytorch", "cerebras_appliance",
             "cerebras.appliance"]
    (tmp_path / "train.py").write_text(textwrap.dedent(f"""
        import subprocess, sys
        import cerebras.pytorch
        for name in {names!r}:
            subprocess.run([sys.executable, "child.py", name], check=True)
    """))
    done = _runner(tmp_path, "train.py", path_dirs=[site])
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "cerebras_pytorch -> cerebras_pytorch installed",
        "cerebras_pytorch.experimental -> cerebras_pytorch.experimental installed",
        "cerebras.pytorch -> csadmin.cstorch installed", "cerebras_appliance -> cerebras_appliance installed",
        "cerebras.appliance -> csadmin.appliance installed"]
    # a process the script did not start (no runner above it) finds none of them
    plain = subprocess.run([sys.executable, "child.py", "cerebras_pytorch"], cwd=tmp_path, capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert plain.returncode == 1 and "No module named 'cerebras_pytorch'" in plain.stderr

"""`make run` installs only what the product needs; `make test` everything the suite needs
(test tools and the cstorch extra). The product install is done for real in a fresh venv."""

import os
import subprocess

from tests.harness import ROOT


def make(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def test_make_run_installs_the_product_only(tmp_path):
    venv = str(tmp_path / "venv")
    done = make(f"{venv}/.product", f"VENV={venv}")
    assert done.returncode == 0, done.stdout + done.stderr
    listed = subprocess.run([f"{venv}/bin/python", "-m", "pip", "list", "--format=freeze"], capture_output=True,
                            text=True, timeout=120)
    installed = {line.split("==")[0].lower().replace("_", "-") for line in listed.stdout.splitlines()}
    assert {"csadmin", "pyzmq", "prompt-toolkit"} <= installed
    assert not installed & {"pytest", "hypothesis", "pexpect", "torch", "h5py"}, installed
    # With the product installed, `make run` installs nothing more: it starts the console.
    assert make("-n", "run", f"VENV={venv}").stdout.split("\n")[0] == f"{venv}/bin/cs --embedded"
    assert os.access(f"{venv}/bin/cs", os.X_OK)


def test_make_test_still_installs_the_test_tools_and_cstorch(tmp_path):
    venv = tmp_path / "fresh"
    planned = make("-n", "test", f"VENV={venv}").stdout
    assert "pip install --quiet -e '.[test,cstorch]'" in planned and "torch==" in planned
    # ModelZoo 2.10's requirements (tests/zoo), and its bigcode_eval from ../shared where it is
    assert "pip install --quiet -e '.[zoo]'" in planned and "--no-deps ../shared/modelzoo/bigcode" in planned
    # the whole suite, in parallel workers; then what measures the CPU's speed, by itself
    assert planned.rstrip().splitlines()[-2:] == [f"{venv}/bin/python -m pytest -n 4 -m 'not alone'",
                                                  f"{venv}/bin/python -m pytest -m alone"], planned


def test_the_unit_tier_collects_only_its_files():
    """`-m unit` reads only the unit tier's files and folders (tests/conftest.py): a folder with
    none is skipped whole, a unit file is read, and any other selection reads everything."""
    from types import SimpleNamespace

    from tests.conftest import TESTS, pytest_ignore_collect

    def ignored(markexpr: str, path: str) -> bool:
        config = SimpleNamespace(getoption=lambda name: markexpr)
        return bool(pytest_ignore_collect(TESTS / path, config))

    assert not ignored("unit", "cstorch") and not ignored("unit", "cstorch/amp")
    assert not ignored("unit", "cstorch/amp/test_formats.py") and not ignored("unit", "statemachine/test_faults.py")
    assert ignored("unit", "cstorch/examples") and ignored("unit", "slurm")
    assert ignored("unit", "cstorch/amp/test_formats_exhaustive.py") and ignored("unit", "daemon/test_op_replies.py")
    assert not ignored("not alone", "cstorch/examples") and not ignored("integration", "slurm")


def test_make_test_fast_runs_the_unit_tier_and_its_files_exist():
    """`make test-fast` is `pytest -m unit`; every file the tiers name exists, so a renamed test
    file cannot drop out of its tier unnoticed."""
    from tests.conftest import REAL, TESTS, UNIT

    planned = make("-n", "test-fast").stdout
    assert planned.rstrip().endswith("-m pytest -q -m unit"), planned
    missing = [entry for entry in UNIT + REAL if not (TESTS / entry).exists()]
    assert not missing, missing


def test_make_docs_installs_the_docs_extra_by_its_own_stamp_and_builds_strictly(tmp_path):
    """`make docs` puts the `docs` extra (mkdocs, mkdocstrings) in the venv, remembered by a stamp of
    its own, and builds the site strictly into site/: a broken link or a docstring that does not
    render fails it. No torch: the reference is read from the source."""
    venv = tmp_path / "fresh"
    planned = make("-n", "docs", f"VENV={venv}").stdout
    assert "pip install --quiet -e '.[docs]'" in planned and f"touch {venv}/.docs" in planned, planned
    assert "torch" not in planned, planned
    assert planned.rstrip().splitlines()[-1] == \
        f"NO_MKDOCS_2_WARNING=1 {venv}/bin/mkdocs build --strict --site-dir site", planned

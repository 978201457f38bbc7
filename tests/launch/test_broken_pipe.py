"""`csrun_wse --help | head -1`: a reader that goes away early ends a launcher quietly with 141
(128 + SIGPIPE), as `cs` does (tests/csadmin/test_broken_pipe.py), never a BrokenPipeError
traceback."""

import os
import subprocess

import pytest

from csadmin import errors
from tests.launch.helpers import BIN

LAUNCHERS = ("csrun_cpu", "csrun_wse", "cs_input_analyzer")


@pytest.mark.parametrize("name", LAUNCHERS)
def test_help_into_a_closed_pipe_exits_quietly(name, tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone: every write to the pipe fails with EPIPE
    try:
        r = subprocess.run([os.path.join(BIN, name), "--help"], stdout=write_end, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, text=True, cwd=str(tmp_path), timeout=60)
    finally:
        os.close(write_end)
    assert r.stderr == "" and r.returncode == errors.EXIT_BROKEN_PIPE == 141, r.stderr


@pytest.mark.parametrize("name", LAUNCHERS)
def test_help_piped_to_head(name, tmp_path):
    """The everyday case, through a real shell pipeline."""
    r = subprocess.run(["sh", "-c", f'"{os.path.join(BIN, name)}" --help | head -1'], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=60, stdin=subprocess.DEVNULL)
    assert r.stderr == "" and r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: {name} ") and len(r.stdout.splitlines()) == 1

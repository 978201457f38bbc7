"""`cs … | head`: a reader that goes away early ends cs quietly with 141 (128 + SIGPIPE, what a
shell reports for a Unix tool killed by SIGPIPE), not a BrokenPipeError traceback (issue 26)."""

import os
import subprocess
import sys

from csadmin import errors
from tests.harness import ROOT


def _with_reader_gone(csd, *args, stdin=subprocess.DEVNULL):
    """Run cs with its stdout a real pipe whose read end is closed before cs writes."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone: every write to the pipe fails with EPIPE
    try:
        return subprocess.run([sys.executable, "-m", "csadmin", *args], stdout=write_end, stderr=subprocess.PIPE,
                              stdin=stdin, text=True, env=csd.env(), cwd=ROOT, timeout=60)
    finally:
        os.close(write_end)


def test_one_shot_into_a_closed_pipe_exits_quietly(csd):
    r = _with_reader_gone(csd, "events", "show")
    assert r.stderr == "" and r.returncode == errors.EXIT_BROKEN_PIPE == 141


def test_script_into_a_closed_pipe_exits_quietly_and_stops(csd):
    r = _with_reader_gone(csd, "-c", "system show; system standby --no-confirm")
    assert r.stderr == "" and r.returncode == errors.EXIT_BROKEN_PIPE
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE", "the script stopped at the first line it could not report"


def test_piped_to_head(csd):
    """The everyday case, through a real shell pipeline: more output than head reads."""
    script = "events show --max-count 1000\n" * 200
    r = subprocess.run(["sh", "-c", f'"{sys.executable}" -m csadmin | head -n 1'],
                       input=script, capture_output=True, text=True, env=csd.env(), cwd=ROOT, timeout=120)
    assert "Traceback" not in r.stderr and "BrokenPipeError" not in r.stderr, r.stderr
    assert r.stderr == ""
    assert len(r.stdout.splitlines()) == 1 and r.returncode == 0

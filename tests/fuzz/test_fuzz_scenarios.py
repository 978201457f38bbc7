"""Hostile fault scenario files through both paths (issue 24): `csd --faults FILE` at start and
`cs system fault scenario FILE` against a running csd, plus hostile texts sent over the wire
directly (what a client other than `cs` may send). Every one is refused with a usage error that
names the file and the limit it is over, with no traceback and no INTERNAL answer, and neither
process grows past 64 MB (peak RSS: wait4's for the one-shot processes, measured from a small
parent of their own; /proc's VmHWM for the running csd). A well-formed scenario of 1,000 faults
still loads on both paths. Generated texts check the nesting scan against the parser itself: what it lets through never makes tomllib
recurse past the limit. CI generates FUZZ_SCENARIOS texts (default 300); `make fuzz` more."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import tomllib
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from csadmin import errors
from csadmin.shared.scenario_limits import MAX_BYTES, problem
from csadmin.statemachine.faults.scenario import ScenarioError, parse
from tests.harness import ROOT, Daemon

from . import scenario_corpus

TEXTS = int(os.environ.get("FUZZ_SCENARIOS", "300"))
PEAK_RSS_KB = 64 * 1024


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return scenario_corpus.write_all(str(tmp_path_factory.mktemp("hostile-scenarios")))


@pytest.fixture(scope="module")
def csd():
    daemon = Daemon().start()
    yield daemon
    daemon.cleanup()


# Linux counts in a child's peak RSS the memory of the process it was forked from (the high-water
# mark is copied at fork and kept across exec), and pytest here is 100+ MB: so the command is run
# from a small Python process of its own (~10 MB), which reports the command's wait4 figure.
_MEASURE = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
sys.stdout.flush()
os.write(1, b"\\npeak-rss-kb %d\\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(command: list[str], env: dict | None = None) -> tuple[int, str, int]:
    """(exit status, what it printed, its peak RSS in KB)."""
    done = subprocess.run([sys.executable, "-c", _MEASURE, *command], env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    output, _, peak = done.stdout.decode("utf-8", "replace").rpartition("\npeak-rss-kb ")
    return done.returncode, output, int(peak)


def vm_peak_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])


def assert_refused(name: str, status: int, output: str, peak_kb: int, says: str, shown: str) -> None:
    assert status == errors.EXIT_USAGE, (name, status, output)
    assert says in output and shown in output, (name, output)
    assert "Traceback" not in output and "INTERNAL" not in output and "RecursionError" not in output, (name, output)
    assert peak_kb < PEAK_RSS_KB, (name, f"peak RSS {peak_kb} KB")


@pytest.mark.parametrize("name", list(scenario_corpus.HOSTILE))
def test_csd_refuses_a_hostile_scenario_file_at_start(corpus, name, tmp_path):
    path, says = corpus[name]
    command = [sys.executable, "-m", "csadmin.daemon", "--config", os.devnull, "--state-dir", str(tmp_path / "state"),
               "--endpoint", f"ipc://{tmp_path}/csd.sock", "--faults", path]
    status, output, peak = run_measured(command)
    assert_refused(name, status, output, peak, says, os.path.basename(path))
    assert not os.path.exists(tmp_path / "csd.sock")  # refused before it bound anything


@pytest.mark.parametrize("name", ["dev-zero", "nested-arrays.toml", "latin-1.toml"])
def test_csd_refuses_a_hostile_faults_scenario_named_in_its_config_file(corpus, name, tmp_path):
    path, says = corpus[name]
    config = tmp_path / "csd.toml"
    config.write_text(f"faults_scenario = {json.dumps(path)}\n")
    command = [sys.executable, "-m", "csadmin.daemon", "--config", str(config), "--check-config"]
    status, output, peak = run_measured(command)
    assert_refused(name, status, output, peak, says, os.path.basename(path))
    assert "`faults_scenario`" in output


@pytest.mark.parametrize("name", list(scenario_corpus.HOSTILE))
def test_cs_refuses_a_hostile_scenario_file_before_sending_it(corpus, csd, name):
    path, says = corpus[name]
    command = [sys.executable, "-m", "csadmin", "system", "fault", "scenario", path, "--no-confirm"]
    status, output, peak = run_measured(command, env=csd.env())
    assert_refused(name, status, output, peak, says, os.path.basename(path))


def hostile_texts() -> dict[str, str]:
    """Texts a client other than `cs` may send, within the wire's bound or just past it."""
    fault = scenario_corpus.FAULT.format(at=1)
    return {
        "nested arrays": "x = " + "[" * 5000 + "]" * 5000,
        "nested tables": "x = " + "{a = " * 600 + "1" + "}" * 600,
        "behind a string": 'x = [[[[ "]]]]" ' + "[" * 300 + "]" * 304,
        "huge integer": scenario_corpus.FAULT.format(at="9" * 50_000),
        "nul": 'description = "\x00"\n' + fault,
        "lone surrogate": 'description = "\udcff"\n' + fault,
        "over the bound": "# " + "x" * MAX_BYTES,
        "wide characters": "# " + "é" * (MAX_BYTES // 2 + 1),
        "dotted keys": "a" + ".a" * 20_000 + " = 1",
        "quoted dotted keys": '"a"' + '."a"' * 5_000 + " = 1",
        "1,001 faults": "".join(scenario_corpus.FAULT.format(at=i) for i in range(1_001)),
    }


def raw_call(csd, op: str, args: dict) -> dict:
    """One request as any client may frame it: JSON with \\u escapes (a lone surrogate too)."""
    import json

    import zmq

    ctx = zmq.Context()
    sock = csd.secure(ctx.socket(zmq.DEALER))
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(csd.endpoint)
        frame = json.dumps({"v": 1, "id": "1", "op": op, "args": args}, ensure_ascii=False)
        # UTF-8 as cs sends it (one frame stays under 64 KiB), with a lone surrogate as its escape.
        sock.send(re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", frame).encode())
        assert sock.poll(30_000, zmq.POLLIN), f"no answer to {op}"
        return json.loads(sock.recv())
    finally:
        sock.close(0)
        ctx.term()


def test_hostile_texts_over_the_wire_are_refused_never_internal(csd):
    with csd.client() as client:
        before = client.fault_list()
    for name, text in hostile_texts().items():
        for dry_run in (True, False):
            reply = raw_call(csd, "system.fault.scenario", {"text": text, "source": "hostile.toml", "dry_run": dry_run})
            # BAD_REQUEST: the frame itself is refused (a lone surrogate is not text).
            assert reply["ok"] is False and reply["error"]["code"] in ("INVALID_ARGUMENT", "BAD_REQUEST"), (name, reply)
            assert "RecursionError" not in reply["error"]["message"], name
    with csd.client() as client:
        assert client.fault_list() == before  # nothing half-applied
    assert csd.proc.poll() is None and vm_peak_kb(csd.proc.pid) < PEAK_RSS_KB


def test_a_thousand_faults_load_through_cs_and_at_csd_start(tmp_path):
    scenario = tmp_path / "thousand.toml"
    scenario.write_text(scenario_corpus.thousand_faults())
    assert scenario.stat().st_size <= MAX_BYTES
    daemon = Daemon(extra_args=["--faults", str(scenario)]).start()
    try:
        with daemon.client() as client:
            listing = client.fault_list()
            assert len(listing["scenario"]["steps"]) == 1_000 and len(listing["faults"]) == 1_000
        loaded = daemon.cs("system", "fault", "scenario", str(scenario), "--no-confirm")
        assert loaded.returncode == 0, loaded.stderr
        assert "loaded: 1000 step(s)" in loaded.stdout
        assert vm_peak_kb(daemon.proc.pid) < PEAK_RSS_KB
    finally:
        daemon.cleanup()


# -- the nesting scan against the parser ----------------------------------------------------------


def _stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


PIECES = ["[", "]", "{", "}", "a = ", "1", "1.5", ", ", "\n", '"', "'", '"""', "'''", "#", "\\", "x", "]]", "[[",
          " ", ".", "a.", '"k".', "= "]
FRAMES = 200  # what MAX_NESTING levels of tomllib's recursion need, with room to spare


@settings(max_examples=TEXTS, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(PIECES), max_size=400).map("".join), st.integers(0, 400), st.integers(0, 400))
def test_what_the_nesting_scan_lets_through_parses_in_bounded_depth(body, deep, dotted):
    limit = sys.getrecursionlimit()
    for text in (body, "x = " + "[" * deep + body + "]" * deep, "a" + ".a" * dotted + " = " + body):
        if problem(text, "t.toml") is not None:
            continue
        sys.setrecursionlimit(_stack_depth() + FRAMES)  # deeper than MAX_NESTING allows: RecursionError
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            pass
        finally:
            sys.setrecursionlimit(limit)
        try:
            parse(text, "t.toml")
        except ScenarioError:
            pass

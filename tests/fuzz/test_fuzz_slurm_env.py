"""Hostile environments for the Slurm hooks (issue 24): what slurmd passes to `cs slurm prolog`,
`epilog` and `health-check` is a job's, so it is untrusted bytes. Against a real csd and a
stand-in scontrol (tests/slurm/fake_scontrol.py): every value that is not UTF-8, is over its
length or holds a control character is refused with exit 2 and a message naming the variable,
the prolog drains the node saying why, and nothing a value says is ever run by a shell. The
corpus runs the real `cs` one-shot; generated environments (FUZZ_SLURM_ENVS, default 60; `make
fuzz` more) run the hooks in this process, where any exception is a traceback `cs` would print.
0 tracebacks, 0 INTERNAL."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from csadmin import errors
from csadmin.slurm.environment import LIMITS
from tests.harness import ROOT, Daemon
from tests.slurm.fake_scontrol import PLAIN_JOB, FakeSlurm

ENVS = int(os.environ.get("FUZZ_SLURM_ENVS", "60"))
READS = {  # hook → the variables it reads
    "prolog": ("SLURM_JOB_ID", "SLURM_JOB_USER", "SLURM_JOB_CONSTRAINTS", "SLURMD_NODENAME"),
    "epilog": ("SLURM_JOB_ID",),
    "health-check": ("SLURMD_NODENAME",),
}
SANE = {"SLURM_JOB_ID": b"7", "SLURM_JOB_USER": b"alice", "SLURM_JOB_CONSTRAINTS": b"", "SLURMD_NODENAME": b"n1"}


def hostile_values(variable: str) -> dict[str, bytes]:
    return {
        "not UTF-8": b"7\xff\xfe",
        "an encoded surrogate": b"7\xed\xb3\xbf",
        "an overlong encoding": b"\xc0\xaf",
        "over its length": b"7" * (LIMITS[variable] + 1),
        "a newline": b"7\nReason=pwned",
        "an escape sequence": b"\x1b]0;pwned\x07",
    }


@pytest.fixture(scope="module")
def csd():
    daemon = Daemon(activate_seconds=0.2, standby_seconds=0.2)
    daemon.slurm_key = daemon.add_key("slurm", "admin")
    daemon.start()
    yield daemon
    daemon.cleanup()


@pytest.fixture
def slurm(tmp_path):
    fake = FakeSlurm(tmp_path)
    fake.job(PLAIN_JOB)  # no wafer: a prolog that accepts its environment returns at once
    return fake


def environment(csd, slurm, **values: bytes) -> dict[bytes, bytes]:
    env = {k.encode(): v.encode() for k, v in csd.env(csd.slurm_key).items()}
    env.update({b"PATH": slurm.path.encode(), b"FAKE_SLURM": slurm.dir.encode(),
                b"CS_SLURM_LOG": os.path.join(slurm.dir, "hooks.log").encode()})
    env.update({k.encode(): v for k, v in {**SANE, **values}.items()})
    return env


def run_hook(csd, slurm, hook: str, **values: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "csadmin", "slurm", hook, "--wait", "2"] if hook == "prolog" else
                          [sys.executable, "-m", "csadmin", "slurm", hook],
                          env=environment(csd, slurm, **values), cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=60)


CASES = [(hook, variable, kind) for hook, variables in READS.items() for variable in variables
         for kind in hostile_values(variable)]


@pytest.mark.parametrize("hook, variable, kind", CASES, ids=lambda x: x.replace(" ", "-"))
def test_a_hostile_value_is_refused_by_name_and_never_a_traceback(csd, slurm, hook, variable, kind):
    done = run_hook(csd, slurm, hook, **{variable: hostile_values(variable)[kind]})
    stderr = done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr and b"INTERNAL" not in done.stderr, stderr
    assert done.returncode == errors.EXIT_USAGE, stderr
    assert f"cs slurm {hook}: {variable} " in stderr and "pwned" not in stderr, stderr
    drains = slurm.updates()
    if hook == "health-check" or variable == "SLURMD_NODENAME":
        assert drains == []  # the node's own name is what cannot be trusted: Slurm drains it for the failure
    else:
        # One line: a newline in a value would have split the reason scontrol recorded.
        assert len(drains) == 1 and drains[0].startswith(f"update NodeName=n1 State=DRAIN Reason=cs {hook}: {variable} ")
    with csd.client() as client:
        assert client.system_show()["slurmJob"] is None


@pytest.mark.parametrize("value", [b"$(touch {marker})", b"`touch {marker}`", b"7; touch {marker}",
                                   b"7 && touch {marker}", b"--help", b"-1"])
def test_shell_words_in_the_environment_are_never_run(csd, slurm, tmp_path, value):
    marker = str(tmp_path / "ran").encode()
    hostile = value.replace(b"{marker}", marker)
    for hook, variables in READS.items():
        for variable in variables:
            done = run_hook(csd, slurm, hook, **{variable: hostile})
            assert b"Traceback" not in done.stderr and b"INTERNAL" not in done.stderr, done.stderr
            assert not os.path.exists(marker), (hook, variable)


# -- generated environments, in this process ------------------------------------------------------------

VALUES = st.one_of(st.binary(max_size=80), st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
                   st.integers(0, 2000).map(lambda n: b"7" * n), st.sampled_from([b"", b"7", b"cs2_pipelined"]))


def test_generated_environments_never_end_in_a_traceback(csd, slurm):
    from csadmin import main

    codes: dict[int, int] = {}
    base = environment(csd, slurm)

    @settings(max_examples=ENVS, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(sorted(READS)), st.dictionaries(st.sampled_from(sorted(SANE)), VALUES, max_size=4))
    def one(hook, values):
        for name in SANE:
            os.environb.pop(name.encode(), None)
        for name, value in {**base, **{k.encode(): v for k, v in values.items()}}.items():
            if b"\x00" in value or b"=" in name:
                continue  # an environment cannot hold these
            os.environb[name] = value
        argv = ["slurm", hook, *(["--wait", "1"] if hook == "prolog" else [])]
        code = main.main(argv)  # an exception here is the traceback `cs` would print
        assert code in (errors.EXIT_OK, errors.EXIT_USAGE, errors.EXIT_STATE, errors.EXIT_UNREACHABLE), (hook, code)
        codes[code] = codes.get(code, 0) + 1

    saved = dict(os.environb)
    try:
        one()
    finally:
        os.environb.clear()
        os.environb.update(saved)
    with csd.client() as client:
        assert client.system_show()["slurmJob"] is None
    print(f"\nslurm hooks, generated environments: exit codes {codes}")

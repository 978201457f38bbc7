"""Restarting slurmd as rebooted (csadmin/slurm/slurmd.py) when systemd runs it: the systemctl
calls, in order, with a stand-in systemctl that records them. (Without systemd, the real restart
runs in tests/slurm/test_slurm_cluster.py on every mode switch.)"""

from __future__ import annotations

import os

import pytest

from csadmin.slurm import slurmd
from csadmin.slurm.report import Reporter
from tests.harness import ROOT

FAKE_SYSTEMCTL = """#!/bin/sh
echo "$*" >> "$FAKE_SYSTEMD/calls"
case "$1" in
  show) cat "$FAKE_SYSTEMD/execstart" ;;
  restart) exit "$(cat "$FAKE_SYSTEMD/restart_status")" ;;
esac
"""


@pytest.fixture
def systemd(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "systemctl").write_text(FAKE_SYSTEMCTL)
    (bindir / "systemctl").chmod(0o755)
    (tmp_path / "restart_status").write_text("0")
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SYSTEMD", str(tmp_path))
    monkeypatch.delenv("CS_SLURM_LOG", raising=False)
    return tmp_path


def calls(systemd) -> list[str]:
    return (systemd / "calls").read_text().splitlines()


def test_slurmd_gets_dash_b_for_this_one_start_only(systemd):
    assert slurmd.restart_with_systemd(Reporter("reboot")) is True
    assert calls(systemd) == ["set-environment CS2_SLURMD_FLAGS=-b", "restart slurmd.service",
                              "unset-environment CS2_SLURMD_FLAGS"]


def test_a_failed_restart_is_reported_and_the_flag_still_unset(systemd, capsys):
    (systemd / "restart_status").write_text("1")
    assert slurmd.restart_with_systemd(Reporter("reboot")) is False
    assert calls(systemd)[-1] == "unset-environment CS2_SLURMD_FLAGS"
    assert "`systemctl restart slurmd` failed" in capsys.readouterr().err


def test_the_unit_must_pass_the_flag_through_the_shipped_drop_in(systemd):
    with open(os.path.join(ROOT, "slurm", "slurmd-cs2.conf")) as f:
        drop_in = [line for line in f if line.startswith("ExecStart=/")]
    assert len(drop_in) == 1 and f"${slurmd.SYSTEMD_FLAGS_VAR}" in drop_in[0]
    (systemd / "execstart").write_text("ExecStart={ path=/usr/sbin/slurmd ; argv[]=/usr/sbin/slurmd -D -s "
                                       "$SLURMD_OPTIONS ; ignore_errors=no }\n")
    problem = slurmd.systemd_unit_ready()
    assert problem and "slurmd-cs2.conf" in problem
    (systemd / "execstart").write_text(drop_in[0].replace("ExecStart=", "ExecStart={ argv[]=") + " }\n")
    assert slurmd.systemd_unit_ready() is None


def test_a_process_not_started_by_slurmd_finds_no_slurmd():
    assert slurmd.find_slurmd() is None  # pytest's ancestors are no slurmd


@pytest.mark.parametrize("request_at", [100.0, 100.34, 100.999])
def test_slurmd_starts_again_late_enough_to_look_booted_after_the_request(request_at):
    """slurmctld waits for a boot time (the registration's second minus slurmd -b's uptime, 1 s)
    not before the reboot request's second; the restarter begins at or after the request."""
    for started in (request_at, request_at + 0.5, request_at + 3):
        registered = slurmd.boot_second_after(started)  # at the earliest
        assert int(registered) - 1 >= int(request_at)
        assert registered - started <= 2  # and no later than needed

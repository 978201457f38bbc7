"""A real Slurm cluster for the tests: munged, slurmctld and slurmd from the Debian packages,
every path in one temp dir, free TCP ports on loopback, stopped by PID at the end. One node, or
several on this one host (Debian's slurmd is built with multiple-slurmd support: each node its
own `Port`, `slurmd -N NAME`, and per-node spool, pid and log files through `%n`), each node
with its own csd.

Its configuration is the shipped sample (slurm/): the slurm.conf lines, gres.conf, helpers.conf
and the cs-* scripts, copied into the temp dir with /etc/slurm/ replaced by it, plus the
settings a cluster needs anyway (ports, spool, state, logs, munge socket) and cs-slurm.env
pointing the scripts at the test's csd, as docs/slurm.md tells an admin to do; with several
nodes, each node's csd is in its own `cs-slurm.NODE.env` (docs/slurm.md, "Several nodes").
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from typing import NamedTuple

from csadmin.slurm.scontrol import Node, parse_node
from tests.harness import ROOT, Daemon, wait_until

SAMPLES = os.path.join(ROOT, "slurm")
SCRIPTS = ("cs-healthcheck", "cs-features", "cs-reboot", "cs-prolog", "cs-epilog")
NODE = "cs2node"


def missing_programs() -> list[str]:
    return [p for p in ("munged", "slurmctld", "slurmd", "scontrol", "sbatch", "squeue") if shutil.which(p) is None]


def needs_slurm() -> list:
    """The marks of a test module that runs a real cluster: Slurm installed, and root."""
    import pytest

    missing = missing_programs()
    return [
        pytest.mark.skipif(bool(missing), reason=(
            f"Slurm is not installed (missing: {', '.join(missing)}); .ci/run installs it with "
            "`apt-get install --no-install-recommends slurmctld slurmd slurm-client munge`")),
        pytest.mark.skipif(os.geteuid() != 0, reason="slurmd and the scripts it runs need root (CI runs as root)"),
    ]


class NodeSystems(NamedTuple):
    """A cluster of several nodes, each with its own CS-2: its csd, and a trainer's key for it."""

    csds: dict[str, Daemon]
    trainers: dict[str, str]  # node -> an operator's secret key file on its csd
    cluster: "Cluster"


def site_of(nodes: tuple[str, ...], health_interval: int) -> NodeSystems:
    """One started csd per node (serial CS2-<NODE>, quick mode switches), each holding the Slurm
    scripts' key (admin) and a trainer's (operator); the Cluster around them, not started. The
    caller cleans up the cluster, then the csds."""
    csds = {n: Daemon(activate_seconds=0.3, standby_seconds=0.3, extra_args=["--serial", f"CS2-{n.upper()}"])
            for n in nodes}
    scripts = {n: d.add_key("slurm", "admin") for n, d in csds.items()}
    trainers = {n: d.add_key("trainer", "operator") for n, d in csds.items()}
    for d in csds.values():
        d.start()
    cluster = Cluster(None, None, health_interval, nodes={n: (csds[n].connection_file, scripts[n]) for n in nodes})
    return NodeSystems(csds, trainers, cluster)


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Cluster:
    def __init__(self, csd_connection: str | None, slurm_key: str | None, health_interval: int,
                 nodes: dict[str, tuple[str, str]] | None = None):
        """One node (NODE) with csd at `csd_connection`, or `nodes`: name -> (csd's connection
        file, the scripts' key) for each node."""
        self.nodes = nodes or {NODE: (csd_connection, slurm_key)}
        self.dir = tempfile.mkdtemp(prefix="slurm-t-")
        self.etc = self._mkdir("etc")
        spools = ["spool"] if len(self.nodes) == 1 else [f"spool.{name}" for name in self.nodes]
        for name in ("state", "log", "run", "out", *spools):
            self._mkdir(name)
        self.munge = self._mkdir("munge", 0o700)
        self.conf = os.path.join(self.etc, "slurm.conf")
        self.hook_log = os.path.join(self.dir, "log", "cs-slurm.log")
        self.health_interval = health_interval
        self._write_config()

    def _mkdir(self, name: str, mode: int = 0o755) -> str:
        path = os.path.join(self.dir, name)
        os.mkdir(path, mode)
        return path

    def path(self, *parts: str) -> str:
        return os.path.join(self.dir, *parts)

    # -- configuration -------------------------------------------------------------------------

    def _sample(self, name: str) -> str:
        with open(os.path.join(SAMPLES, name)) as f:
            return f.read().replace("/etc/slurm/", self.etc + "/")

    def _write(self, name: str, text: str, mode: int = 0o644) -> None:
        path = os.path.join(self.etc, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    def _write_config(self) -> None:
        ctld_port, slurmd_port, *node_ports = free_ports(2 + len(self.nodes))
        d = self.dir
        sample = self._sample("slurm.conf")
        sample = re.sub(r"^HealthCheckInterval=\d+", f"HealthCheckInterval={self.health_interval}", sample, flags=re.M)
        sample = re.sub(r"^ResumeTimeout=\d+", "ResumeTimeout=120", sample, flags=re.M)
        # The sample's node line, made this host's: loopback, and more CPUs than jobs need, so
        # that only the wafer (gres cs) serialises wafer jobs. Several nodes: one line each, on
        # a port of its own.
        node_line = re.search(r"^NodeName=cs2-node1 (.*)$", sample, flags=re.M).group(1)
        many = len(self.nodes) > 1
        lines = "\n".join(f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=4 "
                          + (f"Port={port} " if many else "") + node_line
                          for name, port in zip(self.nodes, node_ports))
        sample = re.sub(r"^NodeName=cs2-node1 .*$", lambda _: lines, sample, flags=re.M)
        per_node = ".%n" if many else ""
        self._write("slurm.conf", f"""# A test cluster (tests/slurm/cluster.py) around the shipped sample lines.
ClusterName=cstest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge}/munge.sock
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool{per_node}
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd{per_node}.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd{per_node}.log
SlurmctldDebug=debug
SlurmdDebug=debug
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=1
MailProg=/bin/true
# Backfill every second, so a job that fits beside a pending one starts without waiting 30 s.
SchedulerParameters=bf_interval=1
# Kill a cancelled or failed job step within seconds, not the default 30.
KillWait=5
PartitionName=cs Nodes={",".join(self.nodes)} Default=YES MaxTime=INFINITE State=UP
{sample}""")
        self._write("gres.conf", self._sample("gres.conf"))
        self._write("helpers.conf", self._sample("helpers.conf"))
        for script in SCRIPTS:
            self._write(script, self._sample(script), 0o755)
        bindir = os.path.dirname(sys.executable)  # the venv's: its `cs` is this source tree's
        common = f"PATH={bindir}:$PATH\nPYTHONPATH={ROOT}\nCS_SLURM_LOG={self.hook_log}\n"
        if not many:  # SLURM_CONF: the scripts find it beside them
            ((connection, key),) = self.nodes.values()
            self._write("cs-slurm.env", f"CS_CONNECT={connection}\nCS_KEY={key}\n{common}")
            return
        self._write("cs-slurm.env", common)
        for name, (connection, key) in self.nodes.items():
            self._write(f"cs-slurm.{name}.env", f"CS_CONNECT={connection}\nCS_KEY={key}\n")

    # -- processes -----------------------------------------------------------------------------

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "CS_"))}
        env.update(SLURM_CONF=self.conf, **extra)
        return env

    def _run(self, *cmd: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env or self.env(), cwd=self.dir,
                              stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr}{done.stdout}\n{self.logs()}")
        return done

    def start(self) -> "Cluster":
        with open(os.path.join(self.munge, "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(os.path.join(self.munge, "munge.key"), 0o400)
        # --force: the temp dir's parent (/tmp) is world-writable, which munged refuses by default.
        self._run("munged", "--force", f"--socket={self.munge}/munge.sock", f"--key-file={self.munge}/munge.key",
                  f"--pid-file={self.path('run', 'munged.pid')}", f"--log-file={self.path('log', 'munged.log')}",
                  f"--seed-file={self.munge}/seed")
        wait_until(lambda: os.path.exists(os.path.join(self.munge, "munge.sock")), 30, what="munged's socket")
        self._run("slurmctld", "-f", self.conf)
        for name in self.nodes:
            # Several slurmd on one host: each names its node to the scripts that slurmd does
            # not tell (the features helper, the reboot program inherit slurmd's environment).
            env = self.env(CS_SLURM_NODE=name) if len(self.nodes) > 1 else None
            self._run("slurmd", "-f", self.conf, "-N", name, env=env)
        for name in self.nodes:
            self.wait_node(lambda n: n.state == "IDLE" and not n.flags, what="the node to be IDLE", name=name)
        return self

    def _pid_files(self) -> list[str]:
        """slurmd's (one per node when there are several), slurmctld's, munged's: stop order."""
        slurmd = ["slurmd"] if len(self.nodes) == 1 else [f"slurmd.{name}" for name in self.nodes]
        return [*slurmd, "slurmctld", "munged"]

    def pid(self, daemon: str) -> int | None:
        try:
            with open(self.path("run", f"{daemon}.pid")) as f:
                return int(f.read().strip() or 0) or None
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        """Cancel what is left in the queue (so no job's processes outlive the test), then stop
        slurmd, slurmctld and munged by the PIDs they wrote."""
        if self.pid("slurmctld") is not None:
            cancelled = self._run("scancel", "--partition=cs", check=False)
            if cancelled.returncode == 0:
                try:
                    wait_until(lambda: not self._run("squeue", "-h", "-p", "cs", check=False).stdout.strip(), 30,
                               interval=0.2, what="the queue to empty")
                except AssertionError:
                    pass  # stopping slurmd below ends what is left
        for daemon in self._pid_files():
            pid = self.pid(daemon)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 30
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self) -> str:
        parts = []
        slurmd = ["slurmd.log"] if len(self.nodes) == 1 else [f"slurmd.{name}.log" for name in self.nodes]
        for name in ("cs-slurm.log", "slurmctld.log", *slurmd):
            try:
                with open(self.path("log", name), errors="replace") as f:
                    lines = f.readlines()[-60:]
            except OSError:
                continue
            parts.append(f"--- {name} (last {len(lines)} lines)\n{''.join(lines)}")
        return "\n".join(parts)

    # -- Slurm, as a user and an admin see it --------------------------------------------------

    def sbatch(self, *options: str, script: str, env: dict | None = None) -> str:
        path = self.path("out", f"job-{time.monotonic_ns()}.sh")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script + "\n")
        done = self._run("sbatch", "--parsable", "-o", self.path("out", "%j.out"), *options, path, env=env)
        return done.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict:
        """{State, Reason, …} of a job, from `scontrol show job -o`."""
        line = self._run("scontrol", "show", "job", "-o", job_id).stdout
        return dict(re.findall(r"(?:^|\s)(JobState|Reason|Features|NodeList)=(\S*)", line))

    def wait_job(self, job_id: str, predicate, timeout: float = 90, what: str = "") -> dict:
        return wait_until(lambda: (j := self.job(job_id)) and predicate(j) and j, timeout, interval=0.2,
                          what=f"job {job_id}: {what}\n{self.logs()}")

    def node(self, name: str = NODE) -> Node:
        return parse_node(self._run("scontrol", "show", "node", "-o", name).stdout.strip())

    def wait_node(self, predicate, timeout: float = 90, what: str = "", name: str = NODE) -> Node:
        return wait_until(lambda: (n := self.node(name)) and predicate(n) and n, timeout, interval=0.2,
                          what=f"node {name}: {what}\n{self.logs()}")

    def scontrol(self, *args: str) -> None:
        self._run("scontrol", *args)

    def scancel(self, job_id: str) -> None:
        self._run("scancel", job_id)

    def runtime_saw(self, job_id: str, timeout: float = 90) -> dict:
        """What job `job_id`'s runtime (tests/slurm/runtime.py) wrote once it opened its run."""
        import json

        path = self.path("out", f"{job_id}.json")
        wait_until(lambda: os.path.exists(path), timeout, interval=0.1,
                   what=f"job {job_id}'s runtime to open its run\n{self.logs()}")
        with open(path) as f:
            return json.load(f)

    def hook_lines(self, hook: str) -> list[str]:
        try:
            with open(self.hook_log, errors="replace") as f:
                return [line for line in f if f"cs slurm {hook}:" in line]
        except FileNotFoundError:
            return []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False

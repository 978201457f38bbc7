"""The shipped unit under a real systemd: a throwaway Debian 12 container (container.py) where
systemd is PID 1, csd's wheel is installed by running docs/operations.md's install blocks as they
are written, and csd is then used, reloaded, killed, hung, stopped and crash-looped the way an
admin and the world would. The host is checked afterwards to be as it was.

One container serves every test here, in file order (each test leaves csd running and healthy
for the next). Where the machine cannot boot one (not root, no systemd-nspawn, no namespaces)
every test is skipped, with the reason in pytest's summary.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.harness import ROOT, build_wheel, wait_until
from tests.systemd import container

OPERATIONS = os.path.join(ROOT, "docs", "operations.md")
SECURITY = os.path.join(ROOT, "docs", "security.md")
CONFIG = "/etc/csd/csd.toml"
INSTALL_DIR = "/root/install"  # the admin's working directory: the wheel, and wheels/ for offline pip
MAX_EXPOSURE = 1.5


def doc_blocks(path: str, heading: str) -> list[str]:
    """The ```sh blocks of the section `heading` (up to the next `## ` heading) of a doc."""
    with open(path) as f:
        text = f.read()
    section = text[text.index(heading):]
    end = section.find("\n## ", len(heading))
    section = section if end < 0 else section[:end]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.S)


class Box:
    """The booted container with csd installed, and what the tests ask of it."""

    def __init__(self, machine: container.Container, host: container.HostSnapshot):
        self.c = machine
        self.host = host
        self.finished: list[str] | None = None
        self.install: subprocess.CompletedProcess | None = None  # docs' root block, as run
        self.alice_first_show: subprocess.CompletedProcess | None = None  # docs' block for alice
        self.figures: dict[str, float] = {}  # seconds (and the exposure), printed at the end

    def run(self, script: str, **kw) -> subprocess.CompletedProcess:
        return self.c.run(script, **kw)

    def cs(self, args: str, user: str = "alice", check: bool = True) -> subprocess.CompletedProcess:
        return self.c.run(f"cs {args}", user=user, check=check, timeout=60)

    def show(self) -> dict:
        """csd's state as alice's `cs system show` reports it."""
        return json.loads(self.cs("--output-format json system show").stdout)

    def prop(self, name: str) -> str:
        return self.props(name)[name]

    def props(self, *names: str) -> dict[str, str]:
        """The unit's properties, as systemd has them now."""
        out = self.run("systemctl show csd " + " ".join(f"-p {n}" for n in names)).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self) -> list[str]:
        """csd's journal (its JSON lines and systemd's lines about the unit), oldest first."""
        return self.run("journalctl -u csd -o cat --no-pager").stdout.splitlines()

    def events_since(self, mark: int) -> list[dict]:
        lines = self.journal()[mark:]
        return [json.loads(line) for line in lines if line.startswith("{")]

    def wait_journal(self, mark: int, needle: str, timeout: float = 30.0) -> list[str]:
        return wait_until(lambda: (lines := self.journal()[mark:]) and any(needle in l for l in lines) and lines,
                          timeout=timeout, interval=0.1, what=f"{needle!r} in csd's journal")

    def wait_active(self, old_pid: str | None = None, timeout: float = 60.0) -> str:
        """Wait until csd is active (running) with a main PID other than `old_pid`; return it."""
        def up():
            p = self.props("ActiveState", "SubState", "MainPID")
            running = (p["ActiveState"], p["SubState"]) == ("active", "running")
            return p["MainPID"] if running and p["MainPID"] not in ("0", old_pid) else None
        return wait_until(up, timeout=timeout, interval=0.05, what="csd to be active (running) again")

    def restart(self) -> None:
        # More than 5 starts in 30 s are refused (StartLimitBurst=); these tests restart often,
        # so they do what docs/operations.md tells an admin: reset-failed first.
        self.run("systemctl reset-failed csd && systemctl restart csd")

    def set_config(self, **settings) -> None:
        """Set keys in /etc/csd/csd.toml as an admin would edit it (other lines kept)."""
        path = self.c.host_path(CONFIG)
        with open(path) as f:
            lines = [l for l in f.read().splitlines() if l.split("=")[0].strip() not in settings]
        lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items() if v is not None]
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")

    def finish(self) -> list[str]:
        """Destroy the container; what it left on the host, in words."""
        if self.finished is None:
            mount_dir = os.path.basename(self.c.mount_dir or "")
            self.c.destroy()
            self.finished = self.host.changes(mount_dir)
            self.host.remove_sentinel()
        return self.finished


def _wheelhouse(wheel: str, dest: str) -> None:
    """csadmin's dependencies as wheels for Debian's python3 (the container has no network)."""
    version = subprocess.run(["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", dest, "--only-binary=:all:",
                           "--python-version", version, wheel], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"pip download of csadmin's dependencies failed:\n{done.stderr}"


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    why = container.unavailable()
    if why:
        pytest.skip(f"cannot boot a real systemd in a container here: {why}")
    work = tmp_path_factory.mktemp("boot")
    wheel = build_wheel(work)
    _wheelhouse(wheel, str(work / "wheels"))
    machine = container.Container(str(work))
    booted = Box(machine, container.HostSnapshot(machine.name))
    try:
        started = time.monotonic()
        booted.c.boot()
        booted.figures["boot_seconds"] = time.monotonic() - started
        _install_as_documented(booted, wheel, str(work / "wheels"))
        yield booted
    finally:
        left = booted.finish()
    assert left == [], "the container left traces on the host:\n" + "\n".join(left)


def _install_as_documented(box: Box, wheel: str, wheels: str) -> None:
    shutil.copytree(wheels, box.c.host_path(f"{INSTALL_DIR}/wheels"))
    shutil.copy(wheel, box.c.host_path(INSTALL_DIR))
    # alice: an admin with a login on the host; bob: a user who is not an admin.
    box.run("useradd --create-home alice && useradd --create-home bob")
    as_root, as_alice = doc_blocks(OPERATIONS, "## Install as a service")[:2]
    started = time.monotonic()
    box.install = box.run(f"cd {INSTALL_DIR}\nset -euxo pipefail\n{as_root}", timeout=600,
                          env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": f"{INSTALL_DIR}/wheels",
                               "DEBIAN_FRONTEND": "noninteractive"})
    box.figures["install_seconds"] = time.monotonic() - started
    box.alice_first_show = box.run(f"set -eu\n{as_alice}", user="alice")


# -- the container is what it claims to be ------------------------------------------------------


def test_systemd_is_pid_1_of_its_own_namespaces_on_a_tmpfs_overlay(box):
    with open(f"/proc/{box.c.pid1}/comm") as f:
        assert f.read().strip() == "systemd"
    assert box.c.namespaces_differ_from_the_hosts() == dict.fromkeys(("pid", "mnt", "uts", "ipc", "net", "cgroup"), True)
    root = box.run("findmnt -n -o FSTYPE,OPTIONS /").stdout
    assert root.startswith("overlay") and "lowerdir=/," in root, root
    assert f"upperdir={box.c.mount_dir}/upper," in root, root
    # ... and that upper layer is a tmpfs, mounted only in nspawn's own mount namespace.
    with open(f"/proc/{box.c.nspawn.pid}/mountinfo") as f:
        theirs = {line.split()[4]: line.split(" - ")[1].split()[0] for line in f}
    assert theirs[box.c.mount_dir] == "tmpfs" and theirs["/run"] == "tmpfs"
    with open("/proc/self/mountinfo") as f:
        assert box.c.mount_dir not in f.read()
    assert box.run("ls /sys/class/net").stdout.split() == ["lo"]  # a private network: loopback only


# -- install and first use, as docs/operations.md says -------------------------------------------


def test_the_documented_install_gets_a_non_root_admin_to_cs_system_show(box):
    assert "Active: active (running)" in box.install.stdout, box.install.stdout
    assert 'Status: "ACTIVE, execution mode PIPELINED"' in box.install.stdout
    shown = box.alice_first_show.stdout
    assert "ACTIVE" in shown and "PIPELINED" in shown, shown
    assert box.run("systemctl is-enabled csd").stdout.strip() == "enabled"
    assert box.run("id -nG alice").stdout.split().count("csd") == 1
    whoami = json.loads(box.cs("--output-format json whoami").stdout)
    assert (whoami["name"], whoami["role"]) == ("alice", "admin")


def test_start_returns_once_csd_answers(box):
    mark = len(box.journal())
    started = time.monotonic()
    box.restart()
    box.figures["start_seconds"] = time.monotonic() - started
    # No waiting: Type=notify means `systemctl restart` returned after READY=1, which csd sends
    # after recovery and bind, so the very first request is answered.
    assert box.show()["state"] == "ACTIVE"
    # And systemd took csd as started only after csd had logged `ready` (then sent READY=1).
    ready = next(e for e in box.events_since(mark) if e["event"] == "ready")
    logged = datetime.datetime.fromisoformat(ready["timestamp"].replace("Z", "+00:00"))
    entered = box.run("systemctl show -p ActiveEnterTimestamp --value --timestamp=us+utc csd").stdout.strip()
    active = datetime.datetime.strptime(entered, "%a %Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=datetime.timezone.utc)
    assert logged <= active, (logged, active)
    assert box.prop("StatusText") == "ACTIVE, execution mode PIPELINED"


def test_an_admin_in_group_csd_runs_the_procedure_and_status_follows(box):
    # Simulated durations, short for speed; activation long enough to be caught PENDING (kill -9).
    box.set_config(activate_seconds=3.0, standby_seconds=0.5)
    box.run(f"csd --config {CONFIG} --check-config --quiet")
    box.restart()
    box.cs("system standby --no-confirm")
    wait_until(lambda: box.prop("StatusText") == "STANDBY, execution mode PIPELINED", timeout=15,
               what="STATUS= to say STANDBY")
    box.cs("config execmode setup --mode weight-streaming --no-confirm")
    box.cs("system activate --no-confirm")
    wait_until(lambda: box.prop("StatusText") == "ACTIVE, execution mode WEIGHT_STREAMING", timeout=15,
               what="STATUS= to say ACTIVE in WEIGHT_STREAMING")
    shown = box.show()
    assert (shown["state"], shown["activeExecmode"]) == ("ACTIVE", "WEIGHT_STREAMING"), shown


def test_a_user_outside_group_csd_reaches_neither_the_socket_nor_the_state(box):
    # bob even holds a registered key: the socket directory keeps him out before CURVE does.
    box.run("runuser -u bob -- mkdir -p ~bob/.config/cs && "
            "csd keys add bob --role viewer --out ~bob/.config/cs/client.key_secret && "
            "chown bob: ~bob/.config/cs/client.key_secret")
    refused = box.cs("system show", user="bob", check=False)
    assert refused.returncode == 5, refused  # permission, said as such (not "csd is not running")
    said = refused.stdout + refused.stderr
    assert "Permission denied on /run/csd" in said and "group csd" in said, refused
    # The state store and keys are csd's alone, even for admins (StateDirectoryMode=0700).
    for user in ("alice", "bob"):
        peek = box.run("cat /var/lib/csd/csd.sqlite3 > /dev/null", user=user, check=False)
        assert peek.returncode != 0 and "Permission denied" in peek.stderr, peek


def test_keys_made_as_the_service_user_are_csds_and_files_have_the_documented_modes(box):
    # docs/security.md: `csd keys` as the user csd runs as edits the service's own registry.
    with open(SECURITY) as f:
        security = f.read()
    assert "runuser -u csd -- csd keys list" in security
    added = box.run("runuser -u csd -- csd keys add runtime-1 --role operator").stdout
    assert "/var/lib/csd/keys/clients/runtime-1.key_secret" in added, added
    listed = box.run("runuser -u csd -- csd keys list").stdout
    assert re.search(r"^alice\s+admin\s+active", listed, re.M) and re.search(r"^runtime-1\s+operator", listed, re.M)
    box.run("install -m 0600 -o alice -g alice /var/lib/csd/keys/clients/runtime-1.key_secret ~alice/rt.key_secret")
    whoami = json.loads(box.cs("--key ~/rt.key_secret --output-format json whoami").stdout)
    assert (whoami["name"], whoami["role"]) == ("runtime-1", "operator")

    # Every mode docs/security.md states, as the running service made them.
    table = re.findall(r"^\| `([^`]+)` \| [^|]+ \| (0[0-7]{3}) \|$", security, re.M)
    assert {name for name, _ in table} == {"server.key_secret", "server.key", "registry.json", "clients/NAME.key_secret"}
    expected = {f"/var/lib/csd/keys/{name.replace('NAME', 'runtime-1')}": mode for name, mode in table}
    assert re.search(r"csd writes `csd.json` \(mode 0644", security)
    expected.update({"/run/csd/csd.json": "0644", "/var/lib/csd/keys": "0700", "/var/lib/csd": "0700"})
    actual = {path: oct(os.stat(box.c.host_path(path)).st_mode & 0o777)[2:].rjust(4, "0") for path in expected}
    assert actual == expected
    owners = box.run("stat -c '%U' /var/lib/csd/keys/registry.json /var/lib/csd/keys/server.key_secret").stdout
    assert owners.split() == ["csd", "csd"]


def test_reload_applies_a_good_config_and_fails_visibly_on_a_bad_one(box):
    pid = box.prop("MainPID")
    mark = len(box.journal())
    box.set_config(log_level="debug")
    box.run("systemctl reload csd")
    box.wait_journal(mark, '"event": "reloaded"')
    box.show()  # a read: logged only at debug, so this line proves the level applied live
    box.wait_journal(mark, '"op": "system.show"')

    box.set_config(log_levle="info")  # a typo
    failed = box.run("systemctl reload csd", check=False)
    assert failed.returncode != 0, failed
    status = box.run("systemctl status csd --no-pager", check=False).stdout
    assert "unknown key `log_levle`" in status and "Active: active (running)" in status, status
    assert box.prop("MainPID") == pid  # the same csd, still serving with its old settings
    assert box.show()["state"] == "ACTIVE"
    box.set_config(log_levle=None, log_level=None)
    box.run("systemctl reload csd")


def test_the_documented_log_queries_read_the_journal(box):
    # The journal of csd's unit also holds systemd's plain lines and, after the refused reload
    # above, csd's plain-text reason: the documented queries must read past them.
    (block,) = doc_blocks(OPERATIONS, "## Logs")
    queries = [q for q in block.replace("\\\n", " ").splitlines() if q.strip() and " -f " not in q]
    assert len(queries) == 3, queries
    outputs = [box.run(f"set -o pipefail; {q}").stdout for q in queries]
    assert '"event": "ready"' in outputs[0] and '"event": "stopping"' in outputs[0], outputs[0]


def test_kill_9_restarts_csd_with_its_state_and_rolls_an_interrupted_activation_forward(box):
    box.cs("system standby --no-confirm")
    box.cs("config execmode setup --mode weight-streaming --no-confirm")
    box.run("systemctl reset-failed csd")  # the restart below must not meet the start limit
    activating = box.c.spawn("cs system activate --no-confirm", user="alice")
    try:
        wait_until(lambda: box.prop("StatusText").startswith("PENDING_ACTIVE"), timeout=15,
                   what="STATUS= to say PENDING_ACTIVE")
        pid, restarts, mark = box.prop("MainPID"), int(box.prop("NRestarts")), len(box.journal())
        killed = time.monotonic()
        box.run(f"kill -9 {pid}")
        box.wait_active(old_pid=pid)
        box.figures["kill9_restart_seconds"] = time.monotonic() - killed
    finally:
        box.c.stop(activating)
    assert int(box.prop("NRestarts")) == restarts + 1
    box.wait_journal(mark, '"event": "transition_rolled_forward"')
    shown = box.show()
    assert (shown["state"], shown["activeExecmode"]) == ("ACTIVE", "WEIGHT_STREAMING"), shown
    assert box.prop("StatusText") == "ACTIVE, execution mode WEIGHT_STREAMING"


def test_the_watchdog_kills_a_hung_csd_and_systemd_restarts_it(box):
    # The shipped WatchdogSec=30s would make this test wait half a minute; a drop-in (the way
    # docs/operations.md says to change the unit) shortens it. csd pings at half of whatever
    # systemd asks for ($WATCHDOG_USEC), so the mechanism under test is the same.
    dropin = box.c.host_path("/etc/systemd/system/csd.service.d")
    os.makedirs(dropin)
    with open(f"{dropin}/watchdog.conf", "w") as f:
        f.write("[Service]\nWatchdogSec=6s\n")
    try:
        box.run("systemctl daemon-reload")
        box.restart()
        assert box.prop("WatchdogUSec") == "6s"
        # The serving loop pings every 3 s (half of $WATCHDOG_USEC), so a healthy csd lives on.
        pings = [int(box.prop("WatchdogTimestampMonotonic"))]
        for _ in range(2):
            pings.append(wait_until(lambda: (t := int(box.prop("WatchdogTimestampMonotonic"))) != pings[-1] and t,
                                    timeout=15, interval=0.2, what="csd's next watchdog ping"))
        assert 2_000_000 < pings[2] - pings[1] < 6_000_000, pings  # µs: every ~3 s, well inside 6 s
        pid, mark = box.prop("MainPID"), len(box.journal())
        box.run("systemctl reset-failed csd")
        box.run(f"kill -STOP {pid}")  # hung: alive, but its loop never runs
        box.wait_active(old_pid=pid, timeout=60)
        box.wait_journal(mark, "Watchdog timeout (limit 6s)!")
        shown = box.show()
        assert (shown["state"], shown["activeExecmode"]) == ("ACTIVE", "WEIGHT_STREAMING"), shown
    finally:
        shutil.rmtree(dropin)
        box.run("systemctl daemon-reload")
        box.restart()
    assert box.prop("WatchdogUSec") == "30s"


def test_a_tcp_endpoint_on_a_specific_loopback_address(box):
    # libzmq resolves a named bind address with getifaddrs() (netlink): the unit must allow it.
    box.set_config(tcp_endpoint="tcp://127.0.0.1:9000", tcp_events_endpoint="tcp://127.0.0.1:9001")
    box.restart()
    with open(box.c.host_path("/run/csd/csd.json")) as f:
        server_key = json.load(f)["server_key"]
    shown = json.loads(box.cs(f"--endpoint tcp://127.0.0.1:9000 --server-key '{server_key}' "
                              "--output-format json system show").stdout)
    assert shown["state"] == "ACTIVE"
    box.set_config(tcp_endpoint=None, tcp_events_endpoint=None)
    box.restart()


def test_the_metrics_listener_passes_the_units_ip_and_address_family_rules(box):
    # docs/operations.md, "Metrics": a loopback listener needs no change to the hardened unit
    # (IPAddressAllow=localhost, RestrictAddressFamilies=, SystemCallFilter=). A scraper on the
    # host (here: root in the container, outside the unit) reads it over IPv4 loopback.
    box.set_config(metrics_endpoint="9464")
    box.restart()
    box.wait_active()
    fetch = ("/usr/bin/python3 -c 'import urllib.request; "
             "print(urllib.request.urlopen(\"http://127.0.0.1:9464/metrics\", timeout=10).read().decode())'")
    body = box.run(fetch).stdout
    assert 'csd_system_health{health="OK"} 1.0' in body and 'csd_lifecycle_state{state="ACTIVE"} 1.0' in body
    with open(box.c.host_path("/run/csd/csd.json")) as f:
        assert json.load(f)["metrics_url"] == "http://127.0.0.1:9464/metrics"
    # The fault a scrape sees is the one an admin injected through cs.
    box.cs("system fault inject temperature-high-warn --no-confirm")
    wait_until(lambda: 'csd_system_health{health="DEGRADED"} 1.0' in box.run(fetch).stdout, timeout=30,
               interval=0.5, what="the scrape to show the injected warning")
    box.cs("system fault clear --all --no-confirm")
    report = box.run("systemd-analyze security csd --no-pager", check=False).stdout
    match = re.search(r"Overall exposure level for csd\.service: (\d+\.\d+)", report)
    assert match and float(match.group(1)) <= MAX_EXPOSURE, report
    box.set_config(metrics_endpoint=None)
    box.restart()


def test_the_documented_foreground_command_runs_the_services_csd(box):
    (block,) = doc_blocks(OPERATIONS, "## Troubleshoot")
    *before, foreground = [line for line in block.splitlines() if line.strip()]
    assert before == ["systemctl stop csd"] and foreground.startswith("runuser -u csd -- "), block
    before_show = box.show()
    box.run("\n".join(before))
    log = os.path.join(box.c.workdir, "foreground.log")
    csd = box.c.spawn(foreground, log=log)
    try:
        # alice's plain `cs` reaches it (the same /run/csd, the group can connect) and sees the
        # service's state (the same /var/lib/csd), not a fresh, empty system.
        shown = wait_until(lambda: box.cs("--output-format json system show", check=False).returncode == 0
                           and box.show(), timeout=60, interval=0.2, what="the foreground csd to answer alice")
        assert (shown["state"], shown["activeExecmode"], shown["seq"]) == \
            (before_show["state"], before_show["activeExecmode"], before_show["seq"])
        with open(log, errors="replace") as f:
            console = f.read()
        assert "state_dir=/var/lib/csd" in console and "ipc:///run/csd/csd.sock" in console, console
    finally:
        os.kill(box.c.descendant(csd, "/usr/local/bin/csd"), signal.SIGINT)  # Ctrl-C
        assert csd.wait(timeout=30) == 0  # csd's own exit code, through runuser and nsenter: a clean stop
    box.run("systemctl start csd")
    assert box.show()["seq"] == before_show["seq"]


def test_stop_is_quick_and_clean_and_cs_then_says_csd_is_not_running(box):
    mark = len(box.journal())
    started = time.monotonic()
    box.run("systemctl stop csd")
    box.figures["stop_seconds"] = time.monotonic() - started
    assert box.prop("ActiveState") == "inactive" and box.prop("Result") == "success"
    assert box.prop("ExecMainStatus") == "0"
    box.wait_journal(mark, '"event": "stopping"')
    assert not os.path.exists(box.c.host_path("/run/csd/csd.json"))
    assert os.path.isdir(box.c.host_path("/run/csd"))  # RuntimeDirectoryPreserve=yes
    refused = box.cs("system show", check=False)
    assert refused.returncode == 7, refused
    assert "csd is not listening at ipc:///run/csd/csd.sock" in refused.stdout + refused.stderr, refused
    box.run("systemctl start csd")


def test_a_bad_config_fails_the_start_at_once_without_a_restart_loop(box):
    box.set_config(serial=7)  # a number where a string is due: exit code 2
    failed = box.run("systemctl reset-failed csd; systemctl restart csd", check=False)
    assert failed.returncode != 0
    # RestartPreventExitStatus=2: straight to failed, not "activating (auto-restart)".
    assert box.props("ActiveState", "ExecMainStatus", "NRestarts") == \
        {"ActiveState": "failed", "ExecMainStatus": "2", "NRestarts": "0"}
    status = box.run("systemctl status csd --no-pager", check=False).stdout
    assert "`serial` must be a string" in status, status
    box.set_config(serial=None)
    box.restart()


def test_a_crash_loop_ends_in_failed_with_the_reason_in_status(box):
    # Something else holds csd's TCP port: every start fails (exit 1) and Restart= retries.
    holder = box.c.spawn("exec python3 -c 'import socket, time\n"
                         "s = socket.socket(); s.bind((\"127.0.0.1\", 9002)); s.listen(); time.sleep(600)'")
    try:
        box.run("until python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9002))' 2>/dev/null;"
                " do sleep 0.05; done", timeout=30)
        box.set_config(tcp_endpoint="tcp://127.0.0.1:9002")
        mark = len(box.journal())
        started = time.monotonic()
        failed = box.run("systemctl reset-failed csd; systemctl restart csd", check=False)
        assert failed.returncode != 0
        wait_until(lambda: box.prop("ActiveState") == "failed", timeout=90, interval=0.2,
                   what="the crash loop to end in failed")
        box.figures["crash_loop_seconds"] = time.monotonic() - started
        # StartLimitBurst=5: five starts (the first and four restarts); the fifth restart systemd
        # schedules (and counts) is refused, and the unit stays failed.
        assert box.prop("NRestarts") == "5"
        status = box.run("systemctl status csd --no-pager", check=False).stdout
        assert ("cannot start: cannot listen on tcp://127.0.0.1:9002, the tcp_endpoint setting (--tcp-endpoint"
                in status and "Address already in use" in status), status
        box.wait_journal(mark, "Start request repeated too quickly")
    finally:
        box.c.stop(holder, signal.SIGKILL)
    box.set_config(tcp_endpoint=None)
    box.restart()
    shown = box.show()
    assert (shown["state"], shown["activeExecmode"]) == ("ACTIVE", "WEIGHT_STREAMING"), shown


def test_the_exposure_of_the_running_unit_is_low(box):
    report = box.run("systemd-analyze security csd --no-pager", check=False).stdout
    match = re.search(r"Overall exposure level for csd\.service: (\d+\.\d+)", report)
    assert match, report
    box.figures["exposure"] = float(match.group(1))
    assert box.figures["exposure"] <= MAX_EXPOSURE, report


def test_the_host_is_left_as_it_was(box):
    print(" ".join(f"{name}={value:.2f}" for name, value in box.figures.items()))  # shown with -s
    assert box.finish() == []

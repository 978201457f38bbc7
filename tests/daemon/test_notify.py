"""csd speaks sd_notify to a fake systemd: a datagram socket the test binds, named by
$NOTIFY_SOCKET as a path or as an `@` abstract name, exactly as systemd passes it."""

import json
import os
import signal
import socket
import time

import pytest

from csadmin.daemon.process.notify import Notifier
from tests.harness import Daemon, wait_until


class FakeSystemd:
    """The receiving end of $NOTIFY_SOCKET; records every datagram as a dict of its fields."""

    def __init__(self, kind: str, directory: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if kind == "path":
            self.address = os.path.join(directory, "notify")
            self.sock.bind(self.address)
        else:
            name = f"csd-test-notify-{os.getpid()}-{os.urandom(4).hex()}"
            self.sock.bind("\0" + name)
            self.address = "@" + name
        self.seen: list[dict] = []

    def receive(self, timeout: float) -> dict | None:
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return None
        message = dict(line.split("=", 1) for line in data.decode().splitlines())
        self.seen.append(message)
        return message

    def wait_for(self, key: str, value: str | None = "1", timeout: float = 20.0) -> dict:
        """The next message with `key` (= `value` unless None); earlier ones stay in `seen`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.receive(max(0.01, deadline - time.monotonic()))
            if message is not None and key in message and (value is None or message[key] == value):
                return message
        raise AssertionError(f"no {key}={value} within {timeout} s; got {self.seen}")

    def close(self):
        self.sock.close()


@pytest.fixture
def systemd(tmp_path):
    fake = FakeSystemd("path", str(tmp_path))
    yield fake
    fake.close()


@pytest.fixture(params=["path", "abstract"])
def any_systemd(request, tmp_path):
    """Both forms systemd uses for $NOTIFY_SOCKET: a socket file, and `@name` (abstract)."""
    fake = FakeSystemd(request.param, str(tmp_path))
    yield fake
    fake.close()


def notified_csd(make_csd, systemd, env=None, **kwargs) -> Daemon:
    return make_csd(env={"NOTIFY_SOCKET": systemd.address, **(env or {})}, **kwargs)


def test_ready_only_after_recovery_and_bind(make_csd, any_systemd):
    systemd = any_systemd
    # A crash in PENDING_STANDBY leaves a transition for the next start to roll forward.
    csd = notified_csd(make_csd, systemd, standby_seconds=3600).spawn()
    systemd.wait_for("READY")
    with csd.client() as c:
        assert c.system_standby()["state"] == "PENDING_STANDBY"
    systemd.wait_for("STATUS", "PENDING_STANDBY, execution mode PIPELINED")
    csd.kill9()
    systemd.seen.clear()
    csd.spawn()

    ready = systemd.wait_for("READY")
    # Recovered before READY: the status it came with already says STANDBY...
    assert ready["STATUS"].startswith("STANDBY,")
    # ...and the request socket answers at once, with the rolled-forward state.
    with csd.client(timeout=2, retries=0) as c:
        assert c.system_show()["state"] == "STANDBY"
    assert not any("READY" in m for m in systemd.seen[:-1])


def test_status_follows_the_lifecycle(make_csd, systemd):
    csd = notified_csd(make_csd, systemd, standby_seconds=0.2).spawn()
    assert systemd.wait_for("READY")["STATUS"] == "ACTIVE, execution mode PIPELINED"
    with csd.client() as c:
        c.system_standby()
    assert systemd.wait_for("STATUS", "PENDING_STANDBY, execution mode PIPELINED")
    assert systemd.wait_for("STATUS", "STANDBY, execution mode PIPELINED")


def test_status_says_the_health_a_fault_brings(make_csd, systemd):
    csd = notified_csd(make_csd, systemd).spawn()
    systemd.wait_for("READY")
    with csd.client() as c:
        c.fault_inject("pump-missing")
        assert systemd.wait_for("STATUS", "ACTIVE, execution mode PIPELINED, systemHealth MISSING")
        c.fault_clear("pump-missing")
    assert systemd.wait_for("STATUS", "ACTIVE, execution mode PIPELINED")


def test_watchdog_pings_keep_coming_at_half_the_interval(make_csd, systemd):
    # WATCHDOG_USEC=200 ms: a ping every 100 ms from the serving loop.
    csd = notified_csd(make_csd, systemd, env={"WATCHDOG_USEC": "200000"}).spawn()
    systemd.wait_for("READY")
    started = time.monotonic()
    for _ in range(5):
        systemd.wait_for("WATCHDOG", timeout=5)
    # Five pings need at least four intervals; never a flood (load only makes them later).
    assert time.monotonic() - started >= 0.3
    with csd.client() as c:  # serving requests does not starve the pings
        for _ in range(50):
            c.system_show()
    systemd.wait_for("WATCHDOG", timeout=5)


def test_no_watchdog_pings_when_meant_for_another_pid(make_csd, systemd):
    csd = notified_csd(make_csd, systemd, env={"WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"},
                       standby_seconds=0.5).spawn()
    systemd.wait_for("READY")
    with csd.client() as c:  # half a second of serving: several intervals' worth
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=20)
    csd.proc.send_signal(signal.SIGTERM)
    systemd.wait_for("STOPPING")
    assert not any("WATCHDOG" in m for m in systemd.seen)


def test_stopping_on_sigterm_then_clean_exit(make_csd, any_systemd):
    systemd = any_systemd
    csd = notified_csd(make_csd, systemd).spawn()
    systemd.wait_for("READY")
    csd.proc.send_signal(signal.SIGTERM)
    systemd.wait_for("STOPPING")
    assert csd.proc.wait(timeout=10) == 0


def log_lines(csd) -> list[dict]:
    return [json.loads(line) for line in csd.log().splitlines() if line.startswith("{")]


def test_no_ready_when_csd_cannot_start_and_status_says_why(csd, make_csd, systemd):
    second = notified_csd(make_csd, systemd)
    second.state_dir = csd.state_dir  # held by the running csd's lock
    second.spawn()
    assert second.proc.wait(timeout=30) == 1
    status = systemd.wait_for("STATUS", None)["STATUS"]
    assert status.startswith("cannot start: Another csd is already using")
    assert not any("READY" in m for m in systemd.seen)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def test_sighup_reloads_the_log_level(make_csd, systemd, tmp_path):
    config = tmp_path / "csd.toml"
    _write(config, 'log_level = "info"\n')
    csd = notified_csd(make_csd, systemd, log_level=None, extra_args=["--config", str(config)]).spawn()
    systemd.wait_for("READY")
    with csd.client() as c:
        c.system_show()  # a read: DEBUG, so not logged at info
    assert '"op": "system.show"' not in csd.log()

    _write(config, 'log_level = "debug"\n')
    csd.proc.send_signal(signal.SIGHUP)
    reloading = systemd.wait_for("RELOADING")
    assert int(reloading["MONOTONIC_USEC"]) > 0
    assert systemd.wait_for("READY")["STATUS"].startswith("ACTIVE,")
    with csd.client() as c:
        c.system_show()
    wait_until(lambda: '"op": "system.show"' in csd.log(), what="the read logged at debug after reload")


def test_bad_config_on_reload_keeps_serving_with_old_settings(make_csd, systemd, tmp_path):
    config = tmp_path / "csd.toml"
    _write(config, 'log_level = "info"\n')
    csd = notified_csd(make_csd, systemd, log_level=None, extra_args=["--config", str(config)]).spawn()
    systemd.wait_for("READY")
    _write(config, 'log_level = "info"\nlog_levle = "debug"\n')
    csd.proc.send_signal(signal.SIGHUP)
    systemd.wait_for("RELOADING")
    systemd.wait_for("READY")
    wait_until(lambda: "reload_failed" in csd.log(), what="reload_failed in the log")
    assert "log_levle" in csd.log()
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"


def test_reload_names_settings_that_need_a_restart(make_csd, systemd, tmp_path):
    config = tmp_path / "csd.toml"
    _write(config, "")
    csd = notified_csd(make_csd, systemd, extra_args=["--config", str(config)]).spawn()
    systemd.wait_for("READY")
    _write(config, 'serial = "CS2-0042"\n')
    csd.proc.send_signal(signal.SIGHUP)
    systemd.wait_for("RELOADING")
    systemd.wait_for("READY")
    line = wait_until(lambda: next((e for e in log_lines(csd) if e["event"] == "restart_required"), None),
                      what="restart_required in the log")
    assert line["keys"] == ["serial"]


def test_without_notify_socket_csd_runs_as_before(csd):
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"


# -- the Notifier on its own ----------------------------------------------------------------------


def test_notifier_is_a_no_op_without_notify_socket():
    n = Notifier({})
    assert not n.enabled and n.watchdog_ms is None
    assert n.ready("x") is False and n.watchdog() is False and n.stopping() is False


@pytest.mark.parametrize(
    "env, interval",
    [
        ({"WATCHDOG_USEC": "200000"}, 100),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 15_000),
        ({"WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval_is_half_of_watchdog_usec(env, interval):
    assert Notifier(env).watchdog_ms == interval


def test_notifier_sends_one_datagram_per_call(systemd):
    n = Notifier({"NOTIFY_SOCKET": systemd.address})
    assert n.ready("ACTIVE, execution mode PIPELINED")
    assert systemd.receive(5) == {"READY": "1", "STATUS": "ACTIVE, execution mode PIPELINED"}
    n.close()
    assert n.watchdog() is False  # closed: a no-op, never an exception


def test_a_vanished_notify_socket_never_raises(tmp_path):
    n = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    assert n.enabled and n.ready() is False

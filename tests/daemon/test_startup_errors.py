"""csd's start-up errors name the culprit: an endpoint that cannot be bound is named with the
setting (flag and csd.toml key) that chose it, not just "OSError: [Errno 98] Address already in
use". Real csd processes, a real socket holding the port."""

import socket

import pytest

from tests.harness import Daemon


@pytest.fixture
def taken_port():
    with socket.create_server(("127.0.0.1", 0)) as held:
        yield held.getsockname()[1]


def failed_start(extra_args) -> str:
    daemon = Daemon(extra_args=extra_args)
    try:
        daemon.spawn()
        assert daemon.proc.wait(timeout=60) == 1
        return daemon.log()
    finally:
        daemon.cleanup()


def test_a_taken_metrics_port_names_the_endpoint_and_the_option(taken_port):
    log = failed_start(["--metrics-endpoint", str(taken_port), "--log-format", "console"])
    assert f"cannot listen on 127.0.0.1:{taken_port}, the metrics_endpoint setting (--metrics-endpoint, " \
           "or `metrics_endpoint` in csd.toml): Address already in use" in log
    assert f"grep :{taken_port}" in log and "choose another with --metrics-endpoint" in log
    assert "OSError" not in log and "Traceback" not in log


def test_a_taken_tcp_endpoint_names_its_option(taken_port):
    log = failed_start(["--tcp-endpoint", f"tcp://127.0.0.1:{taken_port}", "--log-format", "console"])
    assert f"cannot listen on tcp://127.0.0.1:{taken_port}, the tcp_endpoint setting (--tcp-endpoint" in log
    assert "ZMQError" not in log and "Traceback" not in log


def test_an_address_csd_may_not_use_says_so_without_blaming_another_process():
    log = failed_start(["--metrics-endpoint", "192.0.2.1:9464", "--log-format", "console"])  # not this host's
    assert "cannot listen on 192.0.2.1:9464, the metrics_endpoint setting (--metrics-endpoint" in log
    assert "Choose another with --metrics-endpoint." in log and "Stop what holds it" not in log


def test_starts_that_fail_on_a_taken_port_stop_cleanly_and_keep_the_state(taken_port):
    # systemd's Restart= starts csd again and again while the port is taken: every start must name
    # the port (not take the write-ahead log, which SQLite folds in and removes when the failed
    # start closes the store, for one lost in a crash), and the state is all there afterwards.
    daemon = Daemon()
    try:
        daemon.start()
        with daemon.client() as c:
            c.system_standby()
        daemon.stop()
        daemon.extra_args = ["--tcp-endpoint", f"tcp://127.0.0.1:{taken_port}", "--log-format", "console"]
        for _ in range(3):
            daemon.spawn()
            assert daemon.proc.wait(timeout=60) == 1
            log = daemon.log()
            assert log.count(f"cannot listen on tcp://127.0.0.1:{taken_port}") >= 1
            assert "write-ahead log" not in log, log
        daemon.extra_args = []
        daemon.start()
        with daemon.client() as c:
            assert c.system_show()["state"] in ("PENDING_STANDBY", "STANDBY")
    finally:
        daemon.cleanup()

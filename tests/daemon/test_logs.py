"""csd's logs: JSON lines when stdout is not a terminal (each line parses, with the documented
fields), a console rendering on a terminal, library (stdlib logging) lines in the same format,
one INFO line per mutating request and reads only at DEBUG."""

import json
import logging
import os
import subprocess
import sys

import pytest
import structlog

from csadmin.daemon.process import logs
from tests.harness import ROOT

REQUEST_FIELDS = {"event", "level", "timestamp", "logger", "id", "op", "client", "role", "outcome", "latency_ms"}


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _a_read_and_a_standby(make_csd, log_level: str) -> list[dict]:
    """csd's log lines after a read and a standby, at `log_level` (raises if one is not JSON)."""
    csd = make_csd(log_level=log_level).start()
    with csd.client() as c:
        c.system_show()
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=20)
    csd.stop()
    return json_lines(csd.log())


def test_every_line_is_json_and_requests_have_the_documented_fields(make_csd):
    lines = _a_read_and_a_standby(make_csd, "info")
    assert all({"event", "level", "timestamp", "logger"} <= set(line) for line in lines), lines
    requests = [line for line in lines if line["event"] == "request"]
    # At info, the mutating request is logged and the reads (system.show, wait_for's polls) are not.
    assert {line["op"] for line in requests} == {"system.standby"}
    (standby,) = requests
    assert set(standby) == REQUEST_FIELDS
    assert standby["level"] == "info" and standby["outcome"] == "ok" and standby["role"] == "admin"
    assert isinstance(standby["latency_ms"], float) and standby["latency_ms"] >= 0
    assert standby["timestamp"].endswith("Z")
    assert {"ready", "timers_fired", "stopping"} <= {line["event"] for line in lines}
    assert {line["logger"] for line in lines} == {"csd"}  # transitions' chatter stays at debug


def test_reads_are_logged_at_debug(make_csd):
    lines = _a_read_and_a_standby(make_csd, "debug")
    reads = [line for line in lines if line.get("op") == "system.show"]
    assert reads and all(line["level"] == "debug" for line in reads)
    # The state machine library's own (stdlib) lines come through in the same JSON format.
    library_lines = [line for line in lines if line["logger"].startswith("transitions")]
    assert library_lines and all({"event", "level", "timestamp"} <= set(line) for line in library_lines)


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)
    structlog.reset_defaults()


def test_library_logs_go_through_the_same_processors(capsys, restore_logging):
    log = logs.configure("info", "json")
    log.info("own_line", answer=42)
    logging.getLogger("transitions.core").warning("Can't trigger event %s", "standby")
    logging.getLogger("zmq").debug("below the level: dropped")
    own, foreign = json_lines(capsys.readouterr().out)
    assert own["event"] == "own_line" and own["logger"] == "csd" and own["answer"] == 42
    assert foreign == {
        "event": "Can't trigger event standby", "logger": "transitions.core",
        "level": "warning", "timestamp": foreign["timestamp"],
    }


def test_reconfigure_changes_the_level(capsys, restore_logging):
    logs.configure("info", "json").debug("hidden")
    logs.configure("debug", "json").debug("shown")
    assert [line["event"] for line in json_lines(capsys.readouterr().out)] == ["shown"]


def test_console_rendering_on_a_terminal():
    primary, secondary = os.openpty()
    code = "from csadmin.daemon.process.logs import configure; configure('info', 'auto').info('hello_tty', answer=42)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=secondary, stderr=subprocess.STDOUT, cwd=ROOT)
    os.close(secondary)
    output = b""
    try:
        while True:
            chunk = os.read(primary, 4096)
            if not chunk:
                break
            output += chunk
    except OSError:  # EIO: the child closed the terminal
        pass
    finally:
        os.close(primary)
    assert proc.wait(timeout=30) == 0
    text = output.decode()
    assert "hello_tty" in text and "answer=42" in text
    assert not text.lstrip().startswith("{")

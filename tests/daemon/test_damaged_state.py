"""A damaged state directory after kill -9, against the real csd: it refuses to start (exit 1,
`cannot_start`, the files and the recovery steps named) rather than serve a fresh system with
every acknowledged change gone (issue 10)."""

import json
import os

import pytest


def _with_changes(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
        c.execmode_setup("WEIGHT_STREAMING")
    csd.kill9()


def _refuses_to_start(csd) -> str:
    csd.spawn()
    assert csd.proc.wait(timeout=30) == 1
    lines = [json.loads(line) for line in csd.log().splitlines() if line.startswith("{")]
    failure = [line for line in lines if line["event"] == "cannot_start"][-1]
    return failure["reason"]


@pytest.mark.parametrize("damage", ["truncate the database", "garbage write-ahead log"])
def test_damaged_store_after_kill9_is_refused_with_the_recovery_steps(csd, damage):
    _with_changes(csd)
    db = os.path.join(csd.state_dir, "csd.sqlite3")
    saved = {name: open(name, "rb").read() for name in (db, db + "-wal") if os.path.exists(name)}
    if damage == "truncate the database":
        os.truncate(db, 0)
    else:
        with open(db + "-wal", "wb") as f:
            f.write(os.urandom(len(saved[db + "-wal"])))
    reason = _refuses_to_start(csd)
    assert db in reason and "backup" in reason and "csd.identity" in reason
    # Put the files back, as the steps say: csd starts with every acknowledged change.
    for name, data in saved.items():
        with open(name, "wb") as f:
            f.write(data)
    csd.start()
    with csd.client() as c:
        snap = c.system_show()
    assert (snap["state"], snap["configuredExecmode"]) == ("STANDBY", "WEIGHT_STREAMING")


def test_a_fresh_state_directory_still_starts(csd):
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"
    assert os.path.exists(os.path.join(csd.state_dir, "csd.identity"))


def test_a_stopped_csd_leaves_no_socket_files(csd):
    csd.stop()
    assert not os.path.exists(csd.endpoint[len("ipc://"):])
    assert not os.path.exists(csd.events_endpoint[len("ipc://"):])

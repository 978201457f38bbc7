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


def _put_back(saved: dict[str, bytes]) -> None:
    for name, data in saved.items():
        with open(name, "wb") as f:
            f.write(data)


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
    _put_back(saved)  # as the steps say: csd starts with every acknowledged change
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


def _acknowledged_after_a_clean_restart(csd, changes: int) -> dict:
    """A clean stop (SQLite checkpoints everything into the database, and csd.identity records
    the exact seq), a start, then `changes` acknowledged mode changes (only in the write-ahead
    log) and kill -9: the issue's "checkpointed recently" case, within csd.identity's 10 s."""
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=20)
    csd.restart()
    with csd.client() as c:
        for n in range(changes):
            c.execmode_setup(("WEIGHT_STREAMING", "PIPELINED")[n % 2])
        acknowledged = c.system_show()
    csd.kill9()
    return acknowledged


@pytest.mark.parametrize("damage", ["delete the WAL", "delete the WAL and its index", "empty the WAL",
                                    "cut the WAL short"])
def test_a_lost_write_ahead_log_after_kill9_is_refused_not_silently_forgotten(csd, damage):
    """Issue 24: after kill -9, deleting the WAL of a recently checkpointed database lost every
    change in it (246 acknowledged events) without a word. Now csd refuses to start, and with the
    log put back it starts with every acknowledged change."""
    acknowledged = _acknowledged_after_a_clean_restart(csd, 12)
    db = os.path.join(csd.state_dir, "csd.sqlite3")
    wal = db + "-wal"
    saved = {name: open(name, "rb").read() for name in (wal, db + "-shm")}
    if damage.startswith("delete the WAL"):
        os.unlink(wal)
        if "index" in damage:
            os.unlink(db + "-shm")
    else:
        os.truncate(wal, 0 if damage == "empty the WAL" else len(saved[wal]) // 2)
    reason = _refuses_to_start(csd)
    assert f"write-ahead log {wal} is damaged or lost" in reason and "stopped uncleanly" in reason
    assert "backup" in reason and "start over" in reason
    _put_back(saved)
    csd.start()
    with csd.client() as c:
        after = c.system_show()
    assert (after["seq"], after["configuredExecmode"]) == (acknowledged["seq"], acknowledged["configuredExecmode"])


def _flip_everywhere(path: str, old: bytes, new: bytes) -> int:
    """Replace `old` by `new` (one bit apart) wherever it is in the file: a bit flipped on disk
    in every copy SQLite keeps of a value. Returns how many copies were changed."""
    with open(path, "r+b") as f:
        data = f.read()
        count = data.count(old)
        f.seek(0)
        f.write(data.replace(old, new))
    return count


def test_a_flipped_bit_in_a_closed_runs_total_is_refused_naming_the_table_and_row(csd):
    """Issue 24: a closed run's totalSamples 1234 -> 1235 (one bit, in every copy) was served.
    Now csd refuses to start, naming the table and row; with the file put back it serves 1234."""
    from tests.daemon.test_runs import descriptor

    with csd.client() as c, c.open_run(mode="train", owner="job-7") as run:
        run.program(descriptor(c))
        run.stream(1234)
        run.close()
        run_id = run.id
    csd.stop()
    db = os.path.join(csd.state_dir, "csd.sqlite3")
    saved = open(db, "rb").read()
    assert _flip_everywhere(db, b'"totalSamples": 1234', b'"totalSamples": 1235') >= 1
    reason = _refuses_to_start(csd)
    assert f"The state store {db} is damaged: table " in reason and "fails its checksum" in reason
    assert "backup" in reason and "start over" in reason
    with open(db, "wb") as f:
        f.write(saved)
    csd.start()
    with csd.client() as c:
        assert c.runs_show(run_id)["totalSamples"] == 1234


def test_damage_met_while_serving_stops_csd_with_the_clear_message_and_it_stays_refused(csd):
    """An audit record is not read at start; damage in it is met by `audit show`: the reply says
    the store is damaged (not "This is a bug"), csd stops (exit 1, `store_damaged`), and every
    start after refuses, naming the row, until the database is put back."""
    from csadmin import errors

    with csd.client() as c:
        with pytest.raises(errors.NotFound):
            c.runs_abort("run-424242")  # a refusal: audited, in the audit table only
    csd.stop()
    db = os.path.join(csd.state_dir, "csd.sqlite3")
    saved = open(db, "rb").read()
    assert _flip_everywhere(db, b"run-424242", b"run-424243") >= 1  # its args and its message
    csd.start()
    with csd.client(retries=0) as c:
        with pytest.raises(errors.Internal) as info:
            c.audit_show(max_count=100)
    assert "state store is damaged (table audit, row n=" in info.value.message
    assert "This is a bug" not in info.value.hint and "backup" in info.value.hint
    assert csd.proc.wait(timeout=20) == 1
    lines = [json.loads(line) for line in csd.log().splitlines() if line.startswith("{")]
    stopped = [line for line in lines if line["event"] == "store_damaged"][-1]
    assert "table audit, row n=" in stopped["reason"] and "start over" in stopped["reason"]
    with open(os.path.join(csd.state_dir, "csd.identity")) as f:
        assert "table audit" in json.load(f)["damaged"]

    reason = _refuses_to_start(csd)  # the row is not read at start, but csd remembers
    assert "table audit, row n=" in reason and "fails its checksum" in reason
    with open(db, "wb") as f:
        f.write(saved)
    csd.start()
    with csd.client() as c:
        assert any("run-424242" in e["args"] for e in c.audit_show(max_count=100))


@pytest.mark.parametrize("how", ["move the files aside", "empty the database and delete the identity"])
def test_starting_over_as_documented_stays_possible(csd, how):
    _with_changes(csd)
    db = os.path.join(csd.state_dir, "csd.sqlite3")
    os.unlink(db + "-wal")
    assert "stopped uncleanly" in _refuses_to_start(csd)
    if how == "move the files aside":
        aside = os.path.join(csd.dir, "aside")
        os.makedirs(aside)
        for name in os.listdir(csd.state_dir):
            if name.startswith("csd.sqlite3") or name == "csd.identity":
                os.rename(os.path.join(csd.state_dir, name), os.path.join(aside, name))
    else:
        os.truncate(db, 0)
        os.unlink(os.path.join(csd.state_dir, "csd.identity"))
    csd.start()
    with csd.client() as c:
        snap = c.system_show()
        assert (snap["state"], snap["configuredExecmode"]) == ("ACTIVE", "PIPELINED")  # a fresh system
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
    csd.kill9()
    csd.start()  # and it is protected like any other from then on
    with csd.client() as c:
        assert c.system_show()["state"] == "STANDBY"

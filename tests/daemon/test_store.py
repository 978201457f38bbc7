"""The state store on real files: limits that hold across restarts, and a database that is
empty, replaced, rolled back or missing its write-ahead log is refused, never taken for a fresh
system (issue 10)."""

import json
import os
import shutil

import pytest

from csadmin.daemon.store.identity import FILE_NAME
from csadmin.daemon.store.store import Store, StoreError
from csadmin.statemachine.events import Event

SNAPSHOT = {"serial": "CS2-0001", "state": "STANDBY", "configuredExecmode": "PIPELINED",
            "activeExecmode": "PIPELINED", "pendingUntil": None}


class Seq:
    def __init__(self):
        self.n = 0

    def events(self, count=1):
        out = []
        for _ in range(count):
            self.n += 1
            out.append(Event(self.n, "EventStandbyIssued", "INFO", 1000 + self.n, {}))
        return out


def _count(store, table):
    return store.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_trimming_holds_across_restarts(tmp_path):
    """After 9 restarts of 450 changes each the events table held 12,154 rows (limit 10,000):
    the trimming counter started again at every start. Here, scaled down: limit 100."""
    seq, request = Seq(), 0
    for _restart in range(9):
        store = Store(str(tmp_path), keep_events=100, keep_replies=100, keep_audit=100)
        for _ in range(45):
            request += 1
            audit = [(1, "admin", "admin", "system.standby", "{}", "ok", "m")] * 2
            store.commit(SNAPSHOT, seq.events(3), [(b"c", json.dumps(request), "fp", b"reply")], audit=audit)
        store.close()
    store = Store(str(tmp_path), keep_events=100, keep_replies=100, keep_audit=100)
    try:
        assert _count(store, "events") == 100 and _count(store, "replies") == 100 and _count(store, "audit") == 100
        assert store.load(100)[1][-1].seq == seq.n, "the newest are kept"
        # Within a run the tables stay within about 1% of their limit.
        for _ in range(50):
            request += 1
            store.commit(SNAPSHOT, seq.events(3), [(b"c", json.dumps(request), "fp", b"r")])
            assert _count(store, "events") <= 100 + 1 + 3
    finally:
        store.close()


def test_a_fresh_state_directory_starts_and_records_its_database(tmp_path):
    store = Store(str(tmp_path), keep_events=10)
    database = store.database
    store.close()
    identity = json.loads((tmp_path / FILE_NAME).read_text())
    assert identity["database"] == database and identity["seq"] == 0
    Store(str(tmp_path), keep_events=10).close()  # and opens again


def _used(tmp_path, commits=5) -> Seq:
    """A state dir csd has used: some changes, and csd.identity recording them."""
    seq = Seq()
    store = Store(str(tmp_path), keep_events=100)
    for _ in range(commits):
        store.commit(SNAPSHOT, seq.events())
    store.record_progress(force=True)
    store.close()
    return seq


@pytest.mark.parametrize("damage", ["truncate", "delete"])
def test_an_empty_or_missing_database_is_refused(tmp_path, damage):
    _used(tmp_path)
    db = tmp_path / "csd.sqlite3"
    if damage == "truncate":
        db.write_bytes(b"")
    else:
        db.unlink()
    with pytest.raises(StoreError) as info:
        Store(str(tmp_path), keep_events=100)
    message = str(info.value)
    assert str(db) in message and FILE_NAME in message and "fresh system" in message
    assert "backup" in message, "the recovery steps are given"
    assert not db.exists() or db.stat().st_size == 0 or damage == "delete", "nothing was written"


def test_a_garbage_write_ahead_log_is_refused(tmp_path):
    """SQLite silently ignores (and deletes) a WAL that is garbage: every change since the last
    checkpoint would be gone with `quick_check` saying ok."""
    _used(tmp_path)
    wal = tmp_path / "csd.sqlite3-wal"
    wal.write_bytes(os.urandom(8192))
    with pytest.raises(StoreError) as info:
        Store(str(tmp_path), keep_events=100)
    assert "write-ahead log" in str(info.value) and str(wal) in str(info.value)
    assert wal.stat().st_size == 8192, "the evidence is left as it was"


def test_a_database_that_went_back_in_time_is_refused(tmp_path):
    old = tmp_path / "old"
    _used(tmp_path, commits=2)
    os.makedirs(old)
    for name in ("csd.sqlite3", "csd.sqlite3-wal"):
        if (tmp_path / name).exists():
            shutil.copy(tmp_path / name, old / name)
    seq = Seq()
    seq.n = 2
    store = Store(str(tmp_path), keep_events=100)
    for _ in range(3):
        store.commit(SNAPSHOT, seq.events())
    store.record_progress(force=True)
    store.close()
    for name in ("csd.sqlite3", "csd.sqlite3-wal"):  # an older copy put back
        (tmp_path / name).unlink(missing_ok=True)
        if (old / name).exists():
            shutil.copy(old / name, tmp_path / name)
    with pytest.raises(StoreError, match="went back in time"):
        Store(str(tmp_path), keep_events=100)
    (tmp_path / FILE_NAME).unlink()  # the documented way to accept a restored backup
    Store(str(tmp_path), keep_events=100).close()


def test_another_systems_database_is_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _used(a)
    _used(b)
    shutil.copy(b / "csd.sqlite3", a / "csd.sqlite3")
    with pytest.raises(StoreError, match="replaced"):
        Store(str(a), keep_events=100)


def test_a_state_directory_from_before_the_identity_file_is_adopted(tmp_path):
    _used(tmp_path)
    (tmp_path / FILE_NAME).unlink()
    store = Store(str(tmp_path), keep_events=100)
    assert store.committed_seq == 5
    store.close()
    assert json.loads((tmp_path / FILE_NAME).read_text())["seq"] == 5


def test_an_unreadable_identity_file_is_refused(tmp_path):
    _used(tmp_path)
    (tmp_path / FILE_NAME).write_text("{not json")
    with pytest.raises(StoreError, match="cannot be read"):
        Store(str(tmp_path), keep_events=100)


def test_old_replies_without_a_fingerprint_are_dropped_at_open(tmp_path):
    import sqlite3

    db = sqlite3.connect(tmp_path / "csd.sqlite3")
    db.execute("CREATE TABLE replies (n INTEGER PRIMARY KEY AUTOINCREMENT, client BLOB NOT NULL, "
               "request_id TEXT NOT NULL, reply BLOB NOT NULL)")
    db.execute("INSERT INTO replies (client, request_id, reply) VALUES (x'01', '7', x'02')")
    db.commit()
    db.close()
    store = Store(str(tmp_path), keep_events=10)
    try:
        assert store.load(100)[2] == []
        store.commit(SNAPSHOT, [], [(b"c", "7", "fp", b"r")])
        assert store.load(100)[2] == [(b"c", "7", "fp", b"r")]
    finally:
        store.close()


# -- the event log of record (issue 12) ----------------------------------------------------------

TYPES = ["EventStandbyIssued", "EventPendingStandby", "EventActivateIssued", "EventActivateCompleted"]


def _mixed(count: int) -> list[Event]:
    return [Event(n, TYPES[n % len(TYPES)], "INFO", 1000 + n // 2, {"n": n}) for n in range(1, count + 1)]


def test_events_are_answered_from_the_store_exactly_as_the_model_would(tmp_path):
    """Store.events (what events.show reads) agrees with EventLog.query on every filter."""
    from csadmin.statemachine.events import EventLog
    events = _mixed(200)
    log = EventLog(capacity=1_000)
    log.restore(events)
    store = Store(str(tmp_path), keep_events=1_000)
    try:
        store.commit(SNAPSHOT, events)
        for query in [{}, {"max_count": 7}, {"max_count": 0}, {"max_count": 1_000}, {"event_type": "EventActivate*"},
                      {"event_type": "EventPendingStandby", "max_count": 3}, {"event_type": "Event*Issued"},
                      {"event_type": "Event[!A]*", "max_count": 5}, {"event_type": "eventactivate*"},
                      {"event_type": "Event?ctivateIssued"}, {"from_time": 1090}, {"from_time": 1090, "max_count": 4},
                      {"after_seq": 190}, {"after_seq": 2, "event_type": "EventActivate*", "max_count": 1}]:
            assert store.events(**query) == [e.to_dict() for e in log.query(**query)], query
    finally:
        store.close()


def test_events_show_with_max_count_reads_an_index_not_the_log(tmp_path):
    store = Store(str(tmp_path), keep_events=10_000)
    try:
        store.commit(SNAPSHOT, _mixed(5_000))
        for sql in ("SELECT body FROM events ORDER BY seq DESC LIMIT 1000",
                    "SELECT body FROM events WHERE type = 'EventStandbyIssued' ORDER BY seq DESC LIMIT 1000"):
            plan = " ".join(row[-1] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql))
            assert "TEMP B-TREE" not in plan, plan  # read newest first along a key, no sort of everything kept
        plan = " ".join(row[-1] for row in store.db.execute(
            "EXPLAIN QUERY PLAN SELECT body FROM events WHERE type = 'x' ORDER BY seq DESC LIMIT 5"))
        assert "events_by_type" in plan, plan
    finally:
        store.close()


def test_a_restart_reads_only_the_newest_events(tmp_path):
    store = Store(str(tmp_path), keep_events=100_000)
    store.commit(SNAPSHOT, _mixed(50_000))
    store.close()
    store = Store(str(tmp_path), keep_events=100_000)
    try:
        _, events, _ = store.load(1_000)
        assert [e.seq for e in events] == list(range(49_001, 50_001))
        assert len(store.events(max_count=10_000)) == 10_000  # the rest stays queryable on disk
    finally:
        store.close()


def test_trimming_runs_in_bounded_steps(tmp_path):
    """A limit lowered far below what is kept is reached over several commits, each deleting at
    most PRUNE_STEP rows, never in one long delete."""
    from csadmin.daemon.store.trim import PRUNE_STEP
    store = Store(str(tmp_path), keep_events=100_000)
    store.commit(SNAPSHOT, _mixed(10_000))
    store.close()
    store = Store(str(tmp_path), keep_events=1_000)
    try:
        step = PRUNE_STEP
        assert _count(store, "events") == 10_000 - step  # the start trimmed one step only
        seq, counts = 10_000, []
        while _count(store, "events") > 1_000 + 1:
            before = _count(store, "events")
            seq += 1
            store.commit(SNAPSHOT, [Event(seq, "EventStandbyIssued", "INFO", 5_000, {})])
            counts.append(before + 1 - _count(store, "events"))
            assert len(counts) < 100, "trimming does not converge"
        assert max(counts) <= step and store.events(max_count=1)[0]["seq"] == seq
    finally:
        store.close()


def test_a_store_from_before_the_indexed_log_is_migrated(tmp_path):
    import sqlite3
    store = Store(str(tmp_path), keep_events=100)
    store.close()
    db = sqlite3.connect(os.path.join(tmp_path, "csd.sqlite3"))
    db.execute("DROP TABLE events")
    db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    db.executemany("INSERT INTO events (seq, body) VALUES (?, ?)", [(e.seq, json.dumps(e.to_dict())) for e in _mixed(20)])
    db.commit()
    db.close()
    store = Store(str(tmp_path), keep_events=100)
    try:
        assert store.events(event_type="EventActivateIssued") == [e.to_dict() for e in _mixed(20)
                                                                  if e.type == "EventActivateIssued"]
        assert store.events(from_time=1009) == [e.to_dict() for e in _mixed(20) if e.triggerTime >= 1009]
    finally:
        store.close()


# The tables as the csd before row checksums (and numbered commits) made them.
SCHEMA_BEFORE_CHECKSUMS = """
CREATE TABLE meta    (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE device  (id INTEGER PRIMARY KEY CHECK (id = 1), snapshot TEXT NOT NULL);
CREATE TABLE events  (seq INTEGER PRIMARY KEY, body TEXT NOT NULL, type TEXT, time INTEGER);
CREATE TABLE replies (n INTEGER PRIMARY KEY AUTOINCREMENT, client BLOB NOT NULL, request_id TEXT NOT NULL,
                      reply BLOB NOT NULL, fingerprint TEXT);
CREATE TABLE runs    (number INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL);
CREATE TABLE audit   (n INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, name TEXT, role TEXT, op TEXT,
                      args TEXT NOT NULL, outcome TEXT NOT NULL, message TEXT NOT NULL);
"""


def test_a_store_from_before_row_checksums_opens_and_is_checked_from_then_on(tmp_path):
    """Upgrade: the rows get their checksums at the first start (taken as they are, after
    quick_check), the state is served as it was, and a value changed afterwards is refused."""
    import sqlite3

    db = sqlite3.connect(tmp_path / "csd.sqlite3")
    db.executescript(SCHEMA_BEFORE_CHECKSUMS)
    db.execute("INSERT INTO meta VALUES ('database', 'feedc0de')")
    db.execute("INSERT INTO device VALUES (1, ?)", (json.dumps(SNAPSHOT),))
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?)",
                   [(e.seq, json.dumps(e.to_dict()), e.type, e.triggerTime) for e in _mixed(20)])
    db.execute("INSERT INTO runs VALUES (1, 'run-000001', ?)", (json.dumps({"runId": "run-000001", "number": 1,
                                                                          "totalSamples": 1234}),))
    db.execute("INSERT INTO replies (client, request_id, reply, fingerprint) VALUES (x'01', '\"7\"', x'7b7d', 'fp')")
    db.execute("INSERT INTO audit (time, name, role, op, args, outcome, message) "
               "VALUES (1, 'admin', 'admin', 'system.standby', '{}', 'ok', 'm')")
    db.commit()
    db.close()
    (tmp_path / FILE_NAME).write_text(json.dumps({"database": "feedc0de", "created": 1, "seq": 20, "written": 1}))

    store = Store(str(tmp_path), keep_events=100)
    try:
        snapshot, events, replies = store.load(100)
        assert snapshot == SNAPSHOT and [e.to_dict() for e in events] == [e.to_dict() for e in _mixed(20)]
        assert replies == [(b"\x01", '"7"', "fp", b"{}")]
        assert store.load_runs(10)[0]["totalSamples"] == 1234
        assert store.audit_entries(10)[0]["op"] == "system.standby"
        for table in ("meta", "device", "events", "replies", "runs", "audit"):
            assert store.db.execute(f"SELECT COUNT(*) FROM {table} WHERE rowsum IS NULL").fetchone()[0] == 0, table
    finally:
        store.close()

    db = sqlite3.connect(tmp_path / "csd.sqlite3")
    db.execute("UPDATE runs SET body = replace(body, '1234', '1235')")  # what a flipped bit does
    db.commit()
    db.close()
    store = Store(str(tmp_path), keep_events=100)
    try:
        with pytest.raises(StoreError) as info:
            store.load_runs(10)  # what csd reads at start (daemon/process/boot.py)
    finally:
        store.close()
    assert "is damaged: table runs, row number=1 fails its checksum" in str(info.value)


def test_sqlite_finding_the_file_corrupt_is_refused_with_the_clear_message(tmp_path):
    """Garbage over the database's pages: SQLite's own "malformed" or "not a database" never
    reaches the operator; the message names the file and the recovery steps."""
    import sqlite3

    _used(tmp_path, commits=50)
    path = tmp_path / "csd.sqlite3"
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 4096):  # every page's header but the first's
        data[offset:offset + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        Store(str(tmp_path), keep_events=100)
    message = str(info.value)
    assert message.startswith(f"The state store {path} is damaged") and "start over" in message
    assert not isinstance(info.value.__cause__, sqlite3.Error) and "malformed" not in message


def test_text_damaged_into_invalid_utf8_is_named_not_a_decoding_error(tmp_path):
    """Python's sqlite3 cannot decode it ("Could not decode to UTF-8 column 'body'"): the store
    finds the row by its bytes and refuses it like any other damage."""
    import sqlite3

    store = Store(str(tmp_path), keep_events=100)
    store.commit(SNAPSHOT, _mixed(20))
    store.close()
    db = sqlite3.connect(tmp_path / "csd.sqlite3")
    db.execute("UPDATE events SET body = CAST(X'7b22ff227d' AS TEXT) WHERE seq = 7")
    db.commit()
    db.close()
    store = Store(str(tmp_path), keep_events=100)
    try:
        with pytest.raises(StoreError) as info:
            store.events()
    finally:
        store.close()
    message = str(info.value)
    assert "is damaged: table events, row seq=7 fails its checksum (text that is not UTF-8)" in message
    assert "decode" not in message and "start over" in message

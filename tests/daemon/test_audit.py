"""The audit trail of requests that changed nothing: rate-limited per source with counted
summaries, written in batches; its log lines coalesced the same way (unit tests, injected clock)."""

from csadmin.daemon.serve.audit import FLUSH_SECONDS, HANDSHAKES, PER_SECOND, AuditTrail, record
from csadmin.daemon.serve.coalesce import Coalescer
from tests.daemon.recording import Log


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


class Store:
    def __init__(self):
        self.batches = []

    def audit(self, rows):
        self.batches.append(list(rows))

    @property
    def rows(self):
        return [row for batch in self.batches for row in batch]


def _trail():
    clock, store, log = Clock(), Store(), Log()
    return AuditTrail(store, log, clock=clock), clock, store, log


def test_coalescer_keeps_a_few_per_source_and_counts_the_rest():
    clock = Clock()
    c = Coalescer(per_second=3, clock=clock)
    assert [c.admit("a", "x") for _ in range(5)] == [True, True, True, False, False]
    assert c.admit("b", "x"), "sources are limited apart"
    assert c.summaries() == [], "the second is not over yet"
    clock.now += 1.0
    (summary,) = c.summaries()
    assert (summary.source, summary.count, summary.kinds) == ("a", 2, [("x", 2)])
    assert c.summaries() == [], "each summary is given once"
    assert c.admit("a", "x"), "a new second, a new allowance"


def test_coalescer_forgets_idle_sources_and_bounds_the_kinds():
    clock = Clock()
    c = Coalescer(per_second=0, clock=clock)
    for i in range(50):
        c.admit("a", f"kind-{i}")
    clock.now += 1.0
    (summary,) = c.summaries()
    assert summary.count == 50 and len(summary.kinds) <= 6 and ("other", 45) in summary.kinds
    assert not c._windows, "nothing is kept for a source gone quiet"


def test_denial_flood_is_kept_at_a_bounded_rate_with_a_counted_summary():
    trail, clock, store, log = _trail()
    for _ in range(5000):
        row = record("viewer", "viewer", "system.standby", {}, "PERMISSION_DENIED", "Permission denied")
        trail.add("viewer", row, "request_denied", client="viewer")
    clock.now += FLUSH_SECONDS
    trail.tick()
    assert len(store.rows) == PER_SECOND, "only the first few are written one by one"
    assert len([line for line in log.lines if line[1] == "request_denied"]) == PER_SECOND, "log lines too"
    clock.now += 1.0
    trail.tick()
    summary = store.rows[-1]
    assert summary[1] == "viewer" and summary[5] == "PERMISSION_DENIED"
    assert "4990 more refused requests from key 'viewer'" in summary[6] and "system.standby PERMISSION_DENIED ×4990" in summary[6]
    assert ("warning", "refusals_coalesced") in [(lvl, ev) for lvl, ev, _ in log.lines]
    assert len(store.batches) == 2, "written in batches: one transaction per flush, not one per denial"


def test_refused_handshakes_are_coalesced_in_the_audit_log_and_the_log():
    trail, clock, store, log = _trail()
    for _ in range(25):
        row = record(None, None, "connect", {"public_key": "k" * 40, "address": "127.0.0.1"}, "REFUSED",
                     "Handshake refused: unknown or revoked key.")
        trail.add(HANDSHAKES, row, "connection_refused", address="127.0.0.1")
    clock.now += 1.0
    trail.tick()
    assert len(store.rows) == PER_SECOND + 1
    assert "15 more refused handshakes" in store.rows[-1][6] and store.rows[-1][3] == "connect"
    assert len([line for line in log.lines if line[1] == "connection_refused"]) == PER_SECOND


def test_records_wait_at_most_the_flush_interval_and_ride_along_with_a_change():
    trail, clock, store, log = _trail()
    trail.add("admin", record("admin", "admin", "system.activate", {}, "INVALID_STATE", "no"))
    trail.tick()
    assert store.batches == [], "not yet: batched"
    assert len(trail.take()) == 1 and trail.take() == [], "a commit takes the waiting rows with it"
    trail.add("admin", record("admin", "admin", "system.activate", {}, "INVALID_STATE", "no"))
    clock.now += FLUSH_SECONDS
    trail.tick()
    assert len(store.rows) == 1


def test_entries_include_records_still_waiting():
    class ReadableStore(Store):
        def audit_entries(self, n):
            return self.rows[-n:]

    store = ReadableStore()
    trail = AuditTrail(store, Log(), clock=Clock())
    trail.add("admin", record("admin", "admin", "runs.abort", {"run_id": "x"}, "NOT_FOUND", "No run"))
    assert len(trail.entries(10)) == 1


def test_a_record_bounds_what_it_keeps_of_a_strangers_request():
    row = record("v", "viewer", "o" * 5000, {"x": "y" * 5000}, "PERMISSION_DENIED", "m", now_ms=1)
    assert len(row[3]) <= 101 and len(row[4]) <= 1001
    assert record("v", "viewer", ["not", "a", "str"], None, "X", "m")[3:5] == (None, "{}")

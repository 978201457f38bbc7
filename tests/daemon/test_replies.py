"""The reply cache: a retry gets its first reply; an id reused for another request never does;
7 and "7" are different ids; bounded (unit tests; tests/daemon/test_replay.py runs it in csd)."""

import pytest

from csadmin.daemon.serve.replies import ReplyCache, Reused, fingerprint


def test_fingerprint_covers_op_and_canonical_args():
    assert fingerprint("system.standby", {}) != fingerprint("system.activate", {})
    assert fingerprint("runs.abort", {"run_id": "a", "reason": "b"}) == fingerprint("runs.abort", {"reason": "b", "run_id": "a"})
    assert fingerprint("runs.abort", {"run_id": "a"}) != fingerprint("runs.abort", {"run_id": "b"})
    assert fingerprint("x", {"n": 1}) != fingerprint("x", {"n": "1"})


def test_a_retry_gets_the_first_reply():
    cache = ReplyCache()
    fp = fingerprint("system.standby", {})
    assert cache.lookup(b"c", "X", fp) is None
    cache.remember(b"c", "X", fp, b"first")
    assert cache.lookup(b"c", "X", fp) == b"first"
    assert cache.lookup(b"other-client", "X", fp) is None, "ids are per client"


def test_an_id_reused_for_another_request_is_refused():
    cache = ReplyCache()
    cache.remember(b"c", "X", fingerprint("config.execmode.setup", {"mode": "WEIGHT_STREAMING"}), b"refused")
    with pytest.raises(Reused):
        cache.lookup(b"c", "X", fingerprint("system.standby", {}))
    with pytest.raises(Reused):
        cache.lookup(b"c", "X", fingerprint("config.execmode.setup", {"mode": "PIPELINED"}))


def test_integer_and_string_ids_never_collide():
    cache = ReplyCache()
    cache.remember(b"c", 7, fingerprint("system.standby", {}), b"standby")
    assert cache.lookup(b"c", "7", fingerprint("system.activate", {})) is None
    assert cache.lookup(b"c", 7, fingerprint("system.standby", {})) == b"standby"


def test_bounded_oldest_first_and_rows_round_trip():
    cache = ReplyCache(keep=3)
    rows = [cache.remember(b"c", i, "fp", f"r{i}".encode()) for i in range(5)]
    assert len(cache) == 3 and cache.lookup(b"c", 0, "fp") is None and cache.lookup(b"c", 4, "fp") == b"r4"
    reloaded = ReplyCache(keep=3, rows=rows)
    assert len(reloaded) == 3 and reloaded.lookup(b"c", 2, "fp") == b"r2"

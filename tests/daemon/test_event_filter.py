"""daemon/store/event_filter.py: an events query's filter in SQL (its results against SQLite are checked
beside the model's EventLog.query in tests/daemon/test_store.py)."""

from __future__ import annotations

from csadmin.daemon.store.event_filter import where


def test_no_filter_is_no_clause():
    assert where() == ("", [])


def test_an_exact_type_is_matched_with_equals_so_the_type_index_answers_it():
    assert where("EventActivateIssued") == (" WHERE type = ?", ["EventActivateIssued"])


def test_a_glob_keeps_its_case_and_spells_negation_as_sqlite_does():
    assert where("Event[!A]*") == (" WHERE type GLOB ?", ["Event[^A]*"])
    assert where("event?ctivate*") == (" WHERE type GLOB ?", ["event?ctivate*"])


def test_every_bound_is_a_parameter_never_text_in_the_sql():
    clause, params = where("Event*'; DROP TABLE events; --", from_time=5, after_seq=7)
    assert clause == " WHERE type GLOB ? AND time >= ? AND seq > ?"
    assert params == ["Event*'; DROP TABLE events; --", 5, 7]

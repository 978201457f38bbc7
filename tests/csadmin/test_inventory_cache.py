"""The inventory's parse cache (csadmin/clientlib/inventory_cache.py): an entry is used only for the exact
text it was parsed from, and a cache that cannot be read or written costs a parse, never an error."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib

import pytest

from csadmin import errors
from csadmin.clientlib import inventory, inventory_cache
from tests.harness import ROOT


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "cs"


def load(path) -> tuple[str, ...]:
    return tuple(s.connect for s in inventory.parse(path.read_bytes(), str(path)).systems)


def no_toml(monkeypatch) -> None:
    def refuse(text):
        raise AssertionError("parsed the TOML again")

    monkeypatch.setattr(tomllib, "loads", refuse)


def test_the_same_text_is_not_parsed_twice_and_gives_the_same_inventory(tmp_path, cache, monkeypatch):
    path = tmp_path / "systems.toml"
    path.write_text('[systems.a]\nconnect = "a.json"\ntags = ["lab"]\n\n[systems.b]\nconnect = "b.json"\n')
    first = inventory.parse(path.read_bytes(), str(path))
    (entry,) = cache.iterdir()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    no_toml(monkeypatch)
    assert inventory.parse(path.read_bytes(), str(path)) == first


def test_an_edit_is_seen_at_once_even_with_the_same_size_and_time(tmp_path, cache, monkeypatch):
    path = tmp_path / "systems.toml"
    path.write_text('[systems.a]\nconnect = "a.json"\n')
    when = path.stat().st_mtime_ns
    assert load(path) == (str(tmp_path / "a.json"),)
    path.write_text('[systems.a]\nconnect = "b.json"\n')
    os.utime(path, ns=(when, when))  # what a racy clock or a restore from backup would leave
    assert load(path) == (str(tmp_path / "b.json"),)


def test_an_edit_that_breaks_the_file_is_refused_not_served_from_the_cache(tmp_path, cache):
    path = tmp_path / "systems.toml"
    path.write_text('[systems.a]\nconnect = "a.json"\n')
    load(path)
    path.write_text('[systems.a\nconnect = "a.json"\n')
    with pytest.raises(errors.UsageError, match="is not valid"):
        load(path)


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"path": 1}', b"\xff\xfe", b'{"path": "x", "text": "y"}'])
def test_a_damaged_entry_is_a_miss_and_is_written_again(tmp_path, cache, monkeypatch, damage):
    path = tmp_path / "systems.toml"
    path.write_text('[systems.a]\nconnect = "a.json"\n')
    load(path)
    (entry,) = cache.iterdir()
    entry.write_bytes(damage)
    assert load(path) == (str(tmp_path / "a.json"),)
    no_toml(monkeypatch)
    assert load(path) == (str(tmp_path / "a.json"),)  # rewritten by the parse before


def test_two_inventories_do_not_share_an_entry(tmp_path, cache, monkeypatch):
    one, two = tmp_path / "one.toml", tmp_path / "two.toml"
    one.write_text('[systems.a]\nconnect = "one.json"\n')
    two.write_text('[systems.a]\nconnect = "two.json"\n')
    load(one), load(two)
    no_toml(monkeypatch)
    assert (load(one), load(two)) == ((str(tmp_path / "one.json"),), (str(tmp_path / "two.json"),))


def test_a_cache_that_cannot_be_written_costs_a_parse_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # makedirs fails: a file is in the way
    path = tmp_path / "systems.toml"
    path.write_text('[systems.a]\nconnect = "a.json"\n')
    assert load(path) == load(path) == (str(tmp_path / "a.json"),)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_document_json_cannot_hold_is_not_cached_and_still_refused(tmp_path, cache):
    path = tmp_path / "systems.toml"
    path.write_text('[systems.a]\nconnect = 1979-05-27\n')  # a TOML date
    with pytest.raises(errors.UsageError, match="connect must be a non-empty string"):
        load(path)
    assert not cache.exists() or not list(cache.iterdir())


@pytest.mark.integration
def test_a_second_cs_process_reads_the_inventory_without_loading_tomllib(tmp_path):
    path = tmp_path / "systems.toml"
    path.write_text('[systems.a]\nconnect = "a.json"\n')
    env = {**os.environ, "CS_INVENTORY": str(path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": ROOT}
    probe = "import sys; from csadmin.clientlib import inventory; inventory.load(); print('tomllib' in sys.modules)"
    runs = [subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=ROOT)
            for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["True", "False"], [r.stderr for r in runs]

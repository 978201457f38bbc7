"""The inventory file (csadmin/clientlib/inventory.py): where it is looked for, and every mistake in it
refused with the file and the fix (a single unit: files only, no csd)."""

from __future__ import annotations

import pytest

from csadmin import errors
from csadmin.clientlib import inventory

KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"


def write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_the_users_file_wins_over_the_system_wide_one(tmp_path, monkeypatch):
    monkeypatch.delenv("CS_INVENTORY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    site = write(tmp_path / "site.toml", '[systems.site-a]\nconnect = "/run/csd/csd.json"\n')
    monkeypatch.setattr(inventory, "SYSTEM_WIDE", site)
    assert inventory.candidates() == [str(tmp_path / "config" / "cs" / "systems.toml"), site]
    assert [s.name for s in inventory.load().systems] == ["site-a"]  # no user file: the site's
    (tmp_path / "config" / "cs").mkdir(parents=True)
    write(tmp_path / "config" / "cs" / "systems.toml", '[systems.mine]\nconnect = "csd.json"\n')
    inv = inventory.load()
    assert [s.name for s in inv.systems] == ["mine"]  # the first found is the whole inventory
    assert inv.systems[0].connect == str(tmp_path / "config" / "cs" / "csd.json")  # relative to the file
    monkeypatch.setenv("CS_INVENTORY", site)
    assert inventory.candidates() == [site]


def test_a_system_by_endpoint_with_its_own_key_and_tags(tmp_path):
    path = write(tmp_path / "s.toml", f'[systems.b]\nendpoint = "tcp://cs2-b:5555"\nserver_key = "{KEY}"\n'
                                      'key = "~/k.key_secret"\ntags = ["lab"]\n')
    (b,) = inventory.parse(open(path, "rb").read(), path).systems
    assert (b.endpoint, b.server_key, b.tags, b.connect) == ("tcp://cs2-b:5555", KEY, ("lab",), None)
    assert b.key.endswith("/k.key_secret") and "~" not in b.key


@pytest.mark.parametrize("text, problem", [
    ("[systems.a\n", "Expected ']'"),
    ('[other]\nx = 1\n', "unknown top-level key(s) other"),
    ('[systems.a]\nconnect = "x"\ncolour = "red"\n', "unknown key(s) colour"),
    ('[systems.a]\ntags = ["x"]\n', "needs either connect"),
    ('[systems.a]\nconnect = "x"\nendpoint = "tcp://h:1"\n', "needs either connect"),
    ('[systems.a]\nendpoint = "tcp://h:1"\nserver_key = "short"\n', "is not a server key"),
    ('[systems.a]\nconnect = ""\n', "connect must be a non-empty string"),
    ('[systems.a]\nconnect = "x"\ntags = "lab"\n', "tags must be a list"),
    ('[systems."has space"]\nconnect = "x"\n', "system name 'has space'"),
    ("systems = 3\n", "must be a table"),
])
def test_every_mistake_is_refused_naming_the_file(tmp_path, text, problem):
    path = write(tmp_path / "s.toml", text)
    with pytest.raises(errors.UsageError) as caught:
        inventory.parse(open(path, "rb").read(), path)
    assert problem in caught.value.message and path in caught.value.message
    assert "README" in caught.value.hint


def test_select_keeps_the_order_asked_for_and_filters_by_every_tag(tmp_path):
    path = write(tmp_path / "s.toml", '[systems.a]\nconnect = "x"\ntags = ["lab", "ws"]\n'
                                      '[systems.b]\nconnect = "y"\ntags = ["lab"]\n')
    inv = inventory.parse(open(path, "rb").read(), path)
    assert [s.name for s in inv.select(["b", "a"])] == ["b", "a"]
    assert [s.name for s in inv.select(tags=["lab", "ws"])] == ["a"]
    with pytest.raises(errors.NotFound, match="No system `c`"):
        inv.select(["c"])

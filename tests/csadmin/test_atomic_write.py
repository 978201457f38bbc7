"""Every file csadmin writes is replaced whole and durably (csadmin/shared/atomic_write.py): a
reader sees the old file or the new one, a failed write leaves the old one and no temporary
file, the permissions asked for hold whatever the umask, and the file and then its directory
are fsynced, so neither the content nor the rename is lost in a crash."""

from __future__ import annotations

import json
import os
import stat

import pytest

from csadmin.clientlib.runs import write_performance
from csadmin.shared.atomic_write import Replacing, write_atomically


@pytest.fixture
def fsynced(monkeypatch):
    """The paths os.fsync was called on, in order (the real fsync still runs)."""
    calls: list[str] = []
    real = os.fsync

    def spy(fd):
        calls.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return calls


@pytest.fixture
def umask():
    """Set the process umask for one test, and put the old one back."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def test_the_file_is_replaced_whole_and_text_is_written_as_utf8(tmp_path):
    path = tmp_path / "f.json"
    path.write_text("old")
    write_atomically(str(path), "naïve ✓\n")
    assert path.read_bytes() == "naïve ✓\n".encode()
    write_atomically(str(path), b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert os.listdir(tmp_path) == ["f.json"]


@pytest.mark.parametrize("mask, mode, expected", [
    (0o077, 0o644, 0o644),  # a public file is readable as documented even under a tight umask
    (0o000, 0o600, 0o600),  # a secret is never wider, under any umask
    (0o022, None, 0o644),  # None: as open() makes it
    (0o077, None, 0o600),
])
def test_the_mode_asked_for_holds_whatever_the_umask(tmp_path, umask, mask, mode, expected):
    umask(mask)
    path = tmp_path / "key"
    write_atomically(str(path), b"x", mode)
    assert stat.S_IMODE(os.stat(path).st_mode) == expected


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "checkpoint.h5"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with Replacing(str(path)) as temporary:
            with open(temporary, "wb") as f:
                f.write(b"half of the new")
            raise RuntimeError("the writer failed")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["checkpoint.h5"]


def test_the_temporary_is_beside_the_file_so_the_rename_is_atomic(tmp_path):
    with Replacing(str(tmp_path / "a.yaml")) as temporary:
        assert os.path.dirname(temporary) == str(tmp_path) and temporary != str(tmp_path / "a.yaml")
        open(temporary, "w").close()
    assert os.listdir(tmp_path) == ["a.yaml"]


def test_the_file_and_then_its_directory_are_fsynced(tmp_path, fsynced):
    path = tmp_path / "csd.json"
    write_atomically(str(path), b"{}")
    assert len(fsynced) == 2
    assert os.path.dirname(fsynced[0]) == str(tmp_path) and fsynced[0] != str(path)  # the new content, before the rename
    assert fsynced[1] == str(tmp_path)  # the rename itself


def test_a_runs_performance_json_is_durable(tmp_path, fsynced):
    """A run's performance.json (written when the run closes) is fsynced like every other file,
    so a crash after the run closed cannot lose it."""
    performance = {"samples_per_sec": 12.5, "total_samples": 100}
    path = write_performance(str(tmp_path / "out"), performance)
    assert json.loads(open(path).read()) == performance
    assert fsynced[-1] == str(tmp_path / "out") and os.path.dirname(fsynced[-2]) == str(tmp_path / "out")

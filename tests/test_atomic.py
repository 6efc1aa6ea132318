"""annotate.atomic.write_atomic: whole files or the old one, never half, never a stray temp."""

from __future__ import annotations

import os

import pytest

from annotate.atomic import write_atomic


def test_writes_text_and_bytes_and_makes_parents(tmp_path):
    p = tmp_path / "a" / "b" / "f.txt"
    write_atomic(p, "héllo\n")
    assert p.read_text(encoding="utf-8") == "héllo\n"
    write_atomic(p, b"\x00\x01")
    assert p.read_bytes() == b"\x00\x01"
    assert os.listdir(p.parent) == ["f.txt"]
    umask = os.umask(0)
    os.umask(umask)
    assert p.stat().st_mode & 0o777 == 0o666 & ~umask  # like any file the user writes, not mkstemp's 0600


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "f.json"
    write_atomic(p, "old")

    def boom(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(p, "new")
    assert p.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.json"]

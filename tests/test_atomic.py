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


def test_an_sqlite_database_appears_whole_or_not_at_all(tmp_path):
    """write_sqlite_atomic: a fill that fails leaves neither the database nor its temporary file;
    one that succeeds is committed and renamed into place with the page size asked for."""
    import sqlite3

    import pytest

    from annotate.atomic import write_sqlite_atomic

    db = tmp_path / "sub" / "x.sqlite"

    def broken(conn):
        conn.execute("CREATE TABLE t (a)")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_sqlite_atomic(db, broken)
    assert not db.exists() and list(db.parent.iterdir()) == []

    write_sqlite_atomic(db, lambda c: c.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
                        if c.execute("CREATE TABLE t (a)") else None, page_size=8192)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (2,)
        assert conn.execute("PRAGMA page_size").fetchone() == (8192,)
    finally:
        conn.close()
    assert [p.name for p in db.parent.iterdir()] == ["x.sqlite"]

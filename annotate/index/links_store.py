"""The cross-language tables' snapshot: one SQLite file per (indexed content, links version) in
`config.index_dir()/links/`, beside the index's own snapshots and apart from their tables.

Like the index's store it is data only, written once into a temporary file and renamed into
place, opened `immutable=1` (nothing written when reading, a read-only cache works), its tables
STRICT, and checked before use: schema text, meta values and file length. A snapshot that fails
is built again (or, in a read-only cache, built in memory with one line on stderr). The three
newest snapshots are kept.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Callable
from urllib.parse import quote

from annotate.errors import AnnotateError
from annotate.index.crosslang import DispatchBranch, DispatchMacro, Export, Links, OpRegistration, links_version

if TYPE_CHECKING:
    from annotate.config import Config
    from annotate.index.api import Index

SCHEMA_VERSION = "1"
KEEP = 3

_DDL = (
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT",
    "CREATE TABLE exports(id INTEGER PRIMARY KEY, upstream TEXT NOT NULL, path TEXT NOT NULL, line INTEGER NOT NULL,"
    " rule TEXT NOT NULL, module TEXT, name TEXT NOT NULL, function TEXT NOT NULL) STRICT",
    "CREATE TABLE ops(id INTEGER PRIMARY KEY, upstream TEXT NOT NULL, path TEXT NOT NULL, line INTEGER NOT NULL,"
    " op TEXT NOT NULL, function TEXT NOT NULL) STRICT",
    "CREATE TABLE macros(id INTEGER PRIMARY KEY, upstream TEXT NOT NULL, path TEXT NOT NULL, line INTEGER NOT NULL,"
    " name TEXT NOT NULL, params TEXT NOT NULL, branches TEXT NOT NULL, variants INTEGER NOT NULL) STRICT",
)
_SCHEMA = tuple(sorted(_DDL))


class LinksStoreError(AnnotateError):
    pass


def _error(where: str, why: str) -> LinksStoreError:
    return LinksStoreError(f"{where}: unusable cross-language links cache ({why})",
                           hint="delete that file (any part of the cache's index/ is safe to delete); "
                                "the next command rebuilds it")


def snapshot_path(config: "Config", index: "Index") -> Path:
    import hashlib

    key = hashlib.sha1(f"{links_version()}\0{index.content_key()}".encode()).hexdigest()[:20]
    return config.index_dir() / "links" / f"links-{key}.sqlite"


def write(path: Path, links: Links, meta: dict[str, str]) -> None:
    from annotate.atomic import write_sqlite_atomic

    def fill(conn: sqlite3.Connection) -> None:
        for stmt in _DDL:
            conn.execute(stmt)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        conn.executemany("INSERT INTO exports(upstream, path, line, rule, module, name, function)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [(e.upstream, e.path, e.line, e.rule, e.module, e.name, e.function) for e in links.exports])
        conn.executemany("INSERT INTO ops(upstream, path, line, op, function) VALUES (?, ?, ?, ?, ?)",
                         [(o.upstream, o.path, o.line, o.op, o.function) for o in links.ops])
        conn.executemany("INSERT INTO macros(upstream, path, line, name, params, branches, variants)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [(m.upstream, m.path, m.line, m.name, json.dumps(list(m.params)),
                           json.dumps([[list(b.conditions), [list(x) for x in b.bindings]] for b in m.branches]),
                           m.variants) for m in links.macros])

    write_sqlite_atomic(path, fill)


def _length_ok(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(100)
        size = os.fstat(f.fileno()).st_size
    if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
        return False
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    return pages > 0 and page * pages == size


def read(path: Path, expect: dict[str, str]) -> Links:
    """The snapshot at `path`, checked; LinksStoreError when it cannot be used, FileNotFoundError
    when there is none."""
    where = str(path)
    if not path.exists():
        raise FileNotFoundError(where)
    try:
        if not _length_ok(path):
            raise _error(where, "not a complete SQLite file")
        conn = sqlite3.connect(f"file:{quote(str(path), safe='/')}?mode=ro&immutable=1", uri=True)
    except (OSError, sqlite3.Error) as exc:
        raise _error(where, f"{type(exc).__name__}: {exc}") from None
    try:
        schema = tuple(sorted(r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")))
        if schema != _SCHEMA:
            raise _error(where, "another schema")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        want = {"schema": SCHEMA_VERSION, **expect}
        wrong = [k for k, v in want.items() if meta.get(k) != v]
        if wrong:
            raise _error(where, f"its {wrong[0]} is {meta.get(wrong[0])!r}, not {want[wrong[0]]!r}")
        exports = tuple(Export(*r) for r in conn.execute(
            "SELECT upstream, path, line, rule, module, name, function FROM exports ORDER BY id"))
        ops = tuple(OpRegistration(*r) for r in conn.execute(
            "SELECT upstream, path, line, op, function FROM ops ORDER BY id"))
        macros = []
        for up, p, line, name, params, branches, variants in conn.execute(
                "SELECT upstream, path, line, name, params, branches, variants FROM macros ORDER BY id"):
            bs = json.loads(branches)
            macros.append(DispatchMacro(up, p, line, name, tuple(json.loads(params)),
                                        tuple(DispatchBranch(tuple(c), tuple((n, v) for n, v in b)) for c, b in bs),
                                        variants))
        return Links(exports, ops, tuple(macros))
    except (sqlite3.Error, ValueError, TypeError) as exc:
        raise _error(where, f"{type(exc).__name__}: {exc}") from None
    finally:
        conn.close()


def _prune(d: Path, keep: Path) -> None:
    try:
        found = sorted((p for p in d.glob("links-*.sqlite") if p != keep), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for p in found[KEEP - 1:]:
        try:
            p.unlink()
        except OSError:
            pass


def open_or_build(config: "Config", index: "Index", build: Callable[["Index"], Links]) -> Links:
    from annotate.index.cache import may_write
    from annotate.terminal import echo

    path = snapshot_path(config, index)
    meta = {"links_version": links_version(), "content_key": index.content_key()}
    try:
        return read(path, meta)
    except FileNotFoundError:
        damaged = None
    except LinksStoreError as exc:
        damaged = exc
    links = build(index)
    d = path.parent
    if may_write(config.index_dir()) and (not d.exists() or may_write(d)):
        try:
            write(path, links, {"schema": SCHEMA_VERSION, **meta})
            _prune(d, path)
        except OSError:
            pass  # a cache we may not write only costs the scan next time
    elif damaged is not None:
        echo(f"annotate: the index cache is read-only ({damaged.message}); cross-language links made in memory, "
             "not saved", err=True)
    return links

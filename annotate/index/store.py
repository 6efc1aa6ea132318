"""The index's data-only store: one SQLite database per indexed tree (one upstream at one
content), holding the resolved FileIndex of every file plus what re-resolution needs.

Why SQLite: loading runs no code (a cache carried from another machine is data, never a
program, unlike a pickle), a database opens in about a millisecond, and the questions a command
asks (`find`, `callers`, `facts`, `symbols_in` ...) are indexed queries that read a few pages,
so a command about one function never reads the whole index.

A snapshot is written once into a temporary file and renamed into place; it never changes
after that, so readers open it with `immutable=1` (no locks, no journal, nothing written
beside it; a read-only cache works). Tables are STRICT, so a value of the wrong type cannot be
stored, and `open_store` checks the schema text, the schema version and the file length before
anything is read: a file that fails is a `StoreError`, which the loader treats as a miss (and
rebuilds) or reports in one line. Damage found later, inside a page, is a `StoreError` too.

Row order is the FileIndex order (files by path; symbols, edges and facts in extraction
order), so what comes out equals what went in.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

from annotate.errors import AnnotateError
from annotate.index.model import (CallEdge, FileIndex, MacroDef, MemoryFact, Symbol, TypeDef, TypeField, Use,
                                  split_key, symbol_key)

SCHEMA_VERSION = "2"

_DDL = (
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT",
    "CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, blob TEXT NOT NULL,"
    " language TEXT NOT NULL, includes TEXT NOT NULL, raw_includes TEXT NOT NULL,"
    " error_nodes INTEGER NOT NULL, diagnostics TEXT NOT NULL) STRICT",
    "CREATE TABLE symbols(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, name TEXT NOT NULL,"
    " qualified_name TEXT NOT NULL, kind TEXT NOT NULL, signature TEXT NOT NULL, template_params TEXT,"
    " start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, body_start_line INTEGER NOT NULL,"
    " fingerprint TEXT NOT NULL, anonymous_namespace INTEGER NOT NULL, qualifiers TEXT NOT NULL,"
    " parse_errors INTEGER NOT NULL, min_args INTEGER, max_args INTEGER) STRICT",
    "CREATE TABLE edges(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, caller INTEGER NOT NULL,"
    " callee_name TEXT NOT NULL, kind TEXT NOT NULL, line INTEGER NOT NULL, col INTEGER NOT NULL, via TEXT,"
    " nargs INTEGER, receiver TEXT) STRICT",
    "CREATE TABLE targets(edge INTEGER NOT NULL, pos INTEGER NOT NULL, symbol INTEGER NOT NULL,"
    " PRIMARY KEY (edge, pos)) STRICT, WITHOUT ROWID",
    "CREATE TABLE facts(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, symbol INTEGER NOT NULL,"
    " kind TEXT NOT NULL, detail TEXT NOT NULL, line INTEGER NOT NULL, rule TEXT NOT NULL) STRICT",
    "CREATE TABLE types(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, name TEXT NOT NULL,"
    " qualified_name TEXT NOT NULL, kind TEXT NOT NULL, signature TEXT NOT NULL, template_params TEXT,"
    " specialization TEXT, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,"
    " body_start_line INTEGER NOT NULL, fingerprint TEXT NOT NULL, bases TEXT NOT NULL, nested TEXT NOT NULL,"
    " decorators TEXT NOT NULL, anonymous_namespace INTEGER NOT NULL, parse_errors INTEGER NOT NULL) STRICT",
    "CREATE TABLE fields(id INTEGER PRIMARY KEY, type INTEGER NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,"
    " decl TEXT NOT NULL, line INTEGER NOT NULL, value TEXT) STRICT",
    "CREATE TABLE macros(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, name TEXT NOT NULL, params TEXT,"
    " body TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, fingerprint TEXT NOT NULL) STRICT",
    # uses of types and macros by functions; a use's targets are a set (types.id or macros.id by
    # its kind) shared by every use with the same targets (a name with 30 specialisations is
    # used in hundreds of functions: one set, not thousands of rows)
    "CREATE TABLE uses(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, user INTEGER NOT NULL, kind TEXT NOT NULL,"
    " name TEXT NOT NULL, how TEXT NOT NULL, line INTEGER NOT NULL, col INTEGER NOT NULL,"
    " targets INTEGER NOT NULL) STRICT",
    "CREATE TABLE target_sets(id INTEGER NOT NULL, pos INTEGER NOT NULL, target INTEGER NOT NULL,"
    " PRIMARY KEY (id, pos)) STRICT, WITHOUT ROWID",
    # what resolving uses again after a change needs (extract_types: raw mentions per function)
    "CREATE TABLE mentions(symbol INTEGER PRIMARY KEY, names TEXT NOT NULL) STRICT",
)
# created after the rows are in (faster than keeping them up to date row by row)
_INDEXES = (
    "CREATE INDEX symbols_by_qname ON symbols(qualified_name)",
    "CREATE INDEX symbols_by_name ON symbols(name)",
    "CREATE INDEX symbols_by_file ON symbols(file, start_line)",
    "CREATE INDEX edges_by_caller ON edges(caller)",
    "CREATE INDEX targets_by_symbol ON targets(symbol)",
    "CREATE INDEX facts_by_symbol ON facts(symbol)",
    "CREATE INDEX types_by_qname ON types(qualified_name)",
    "CREATE INDEX types_by_name ON types(name)",
    "CREATE INDEX types_by_file ON types(file, start_line)",
    "CREATE INDEX fields_by_type ON fields(type)",
    "CREATE INDEX macros_by_name ON macros(name)",
    "CREATE INDEX uses_by_user ON uses(user)",
    "CREATE INDEX uses_by_targets ON uses(targets)",
    "CREATE INDEX target_sets_by_target ON target_sets(target)",
)
_SCHEMA = tuple(sorted(_DDL + _INDEXES))

_SYM_COLS = ("s.name, s.qualified_name, s.kind, s.signature, s.template_params, s.start_line, s.end_line,"
             " s.body_start_line, s.fingerprint, s.anonymous_namespace, s.qualifiers, s.parse_errors, f.path")
_SYM_FROM = " FROM symbols s JOIN files f ON f.id = s.file"
# The FileIndex order of a file's symbols is extraction order; queries list by position.
_BY_POSITION = " ORDER BY f.path, s.start_line, s.end_line, s.id"


class StoreError(AnnotateError):
    """A snapshot that cannot be used: missing, damaged, of another schema or another tree."""


def _store_error(where: str, why: str) -> StoreError:
    return StoreError(f"{where}: unusable index cache ({why})",
                      hint="delete that file (any part of the cache's index/ is safe to delete); "
                           "the next command rebuilds it")


# ---- writing ---------------------------------------------------------------------------------

def write_store(conn: sqlite3.Connection, meta: dict[str, str], extracted: dict, resolved: dict[str, FileIndex]) -> None:
    """Fill an empty database: `resolved` (path -> resolved FileIndex) and, from `extracted`
    (path -> extract.Extracted), the unresolved includes, arities, argument counts and receiver
    classes that resolving again after a change needs."""
    for stmt in _DDL:
        conn.execute(stmt)
    ids: dict[str, int] = {}
    file_rows, sym_rows, edge_rows, target_rows, fact_rows = [], [], [], [], []
    paths = sorted(resolved)
    sid = 0
    for fid, path in enumerate(paths, 1):
        fi, ex = resolved[path], extracted[path]
        file_rows.append((fid, path, fi.blob, fi.language, json.dumps(list(fi.includes)),
                          json.dumps(list(ex.file.includes)), fi.error_nodes, json.dumps(list(fi.diagnostics))))
        for s in fi.symbols:
            sid += 1
            ids.setdefault(s.key, sid)
            if any(not q or q.split() != [q] for q in s.is_cuda_qualified):
                raise ValueError(f"{path}: qualifier with blanks in {s.is_cuda_qualified!r}")
            lo, hi = ex.arity.get(s.key) or (None, None)
            sym_rows.append((sid, fid, s.name, s.qualified_name, s.kind, s.signature, s.template_params,
                             s.start_line, s.end_line, s.body_start_line, s.fingerprint, int(s.anonymous_namespace),
                             " ".join(s.is_cuda_qualified), s.parse_errors, lo, hi))
    eid = 0
    for fid, path in enumerate(paths, 1):
        fi, ex = resolved[path], extracted[path]
        for i, e in enumerate(fi.edges):
            if e.path != path:
                raise ValueError(f"{path}: an edge of another file ({e.path})")
            eid += 1
            nargs = ex.nargs[i] if i < len(ex.nargs) else None
            recv = ex.receivers[i] if i < len(ex.receivers) else None
            edge_rows.append((eid, fid, ids[e.caller], e.callee_name, e.kind, e.line, e.column, e.via, nargs, recv))
            target_rows.extend((eid, pos, ids[k]) for pos, k in enumerate(e.callees))
        for f in fi.facts:
            if f.path != path:
                raise ValueError(f"{path}: a fact of another file ({f.path})")
            fact_rows.append((fid, ids[f.symbol], f.kind, f.detail, f.line, f.rule))
    conn.executemany("INSERT INTO files VALUES (?,?,?,?,?,?,?,?)", file_rows)
    conn.executemany("INSERT INTO symbols VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", sym_rows)
    conn.executemany("INSERT INTO edges VALUES (?,?,?,?,?,?,?,?,?,?)", edge_rows)
    conn.executemany("INSERT INTO targets VALUES (?,?,?)", target_rows)
    conn.executemany("INSERT INTO facts(file, symbol, kind, detail, line, rule) VALUES (?,?,?,?,?,?)", fact_rows)
    _write_types(conn, paths, resolved, extracted, ids)
    for stmt in _INDEXES:
        conn.execute(stmt)
    conn.executemany("INSERT INTO meta VALUES (?,?)", sorted({**meta, "schema": SCHEMA_VERSION}.items()))
    conn.commit()


def _write_types(conn: sqlite3.Connection, paths: list[str], resolved: dict[str, FileIndex], extracted: dict,
                 sym_ids: dict[str, int]) -> None:
    """Types with their fields, macros, uses with their targets, and the raw mentions."""
    type_rows, field_rows, macro_rows, use_rows, target_rows = [], [], [], [], []
    mention_rows: dict[int, str] = {}
    tids: dict[str, int] = {}
    mids: dict[str, int] = {}
    tid = mid = 0
    for fid, path in enumerate(paths, 1):
        fi = resolved[path]
        for t in fi.types:
            tid += 1
            tids.setdefault(t.key, tid)
            type_rows.append((tid, fid, t.name, t.qualified_name, t.kind, t.signature, t.template_params,
                              t.specialization, t.start_line, t.end_line, t.body_start_line, t.fingerprint,
                              json.dumps(list(t.bases)), json.dumps(list(t.nested)), json.dumps(list(t.decorators)),
                              int(t.anonymous_namespace), t.parse_errors))
            field_rows.extend((tid, f.name, f.kind, f.type, f.line, f.value) for f in t.fields)
        for m in fi.macros:
            mid += 1
            mids.setdefault(m.key, mid)
            macro_rows.append((mid, fid, m.name, None if m.params is None else json.dumps(list(m.params)), m.body,
                               m.start_line, m.end_line, m.fingerprint))
    uid = 0
    sets: dict[tuple, int] = {}
    for fid, path in enumerate(paths, 1):
        for u in resolved[path].uses:
            if u.path != path:
                raise ValueError(f"{path}: a use of another file ({u.path})")
            uid += 1
            to = tids if u.kind == "type" else mids
            ids = (u.kind, *(to[k] for k in u.targets))
            set_id = sets.get(ids)
            if set_id is None:
                set_id = sets[ids] = len(sets) + 1
                target_rows.extend((set_id, pos, t) for pos, t in enumerate(ids[1:]))
            use_rows.append((uid, fid, sym_ids[u.user], u.kind, u.name, u.how, u.line, u.column, set_id))
        for key, raw in (extracted[path].mentions or {}).items():
            if raw:
                mention_rows[sym_ids[key]] = json.dumps(list(raw))  # one row per id (keys are unique)
    conn.executemany("INSERT INTO types VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", type_rows)
    conn.executemany("INSERT INTO fields(type, name, kind, decl, line, value) VALUES (?,?,?,?,?,?)", field_rows)
    conn.executemany("INSERT INTO macros VALUES (?,?,?,?,?,?,?,?)", macro_rows)
    conn.executemany("INSERT INTO uses VALUES (?,?,?,?,?,?,?,?,?)", use_rows)
    conn.executemany("INSERT INTO target_sets VALUES (?,?,?)", target_rows)
    conn.executemany("INSERT INTO mentions VALUES (?,?)", sorted(mention_rows.items()))


def create_store(path: Path | None, meta: dict[str, str], extracted: dict, resolved: dict[str, FileIndex]) -> "Store":
    """Write a snapshot to `path` (atomically: a temporary file renamed into place) and open
    it; `path=None` keeps it in memory (an index nobody caches)."""
    if path is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        write_store(conn, meta, extracted, resolved)
        store = Store(conn, f"<{meta.get('upstream', '?')} in memory>", None, dict(meta, schema=SCHEMA_VERSION))
        store.hold(resolved)
        return store
    from annotate.atomic import write_sqlite_atomic

    # the whole schema in the first page, the meta table in the second: damage further in is
    # found inside a page (one-line error), not taken for another schema
    write_sqlite_atomic(path, lambda conn: write_store(conn, meta, extracted, resolved), page_size=8192)
    store = open_store(path, meta)
    store.hold(resolved)
    return store


# ---- reading ---------------------------------------------------------------------------------

def _connect_ro(path: Path) -> sqlite3.Connection:
    # immutable: the file never changes once renamed into place, so no locks, no journal
    uri = f"file:{quote(str(path), safe='/')}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def _length_ok(path: Path) -> bool:
    """The header's page size times page count is the file's length (a truncated copy fails)."""
    with open(path, "rb") as f:
        head = f.read(100)
        size = os.fstat(f.fileno()).st_size
    if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
        return False
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    return pages > 0 and page * pages == size


def open_store(path: Path, expect: dict[str, str]) -> "Store":
    """The snapshot at `path`, checked against the schema and against `expect` (meta values such
    as the upstream and tree key it must hold); StoreError when it does not qualify."""
    where = str(path)
    try:
        if not _length_ok(path):
            raise _store_error(where, "not a complete SQLite file")
        conn = _connect_ro(path)
    except FileNotFoundError:
        raise StoreError(f"{where}: no such index snapshot") from None
    except (OSError, sqlite3.Error) as exc:
        raise _store_error(where, f"{type(exc).__name__}: {exc}") from None
    try:
        schema = tuple(sorted(r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")))
        if schema != _SCHEMA:
            raise _store_error(where, "another schema")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error as exc:
        conn.close()
        raise _store_error(where, f"{type(exc).__name__}: {exc}") from None
    except StoreError:
        conn.close()
        raise
    want = {"schema": SCHEMA_VERSION, **expect}
    wrong = [k for k, v in want.items() if meta.get(k) != v]
    if wrong:
        conn.close()
        raise _store_error(where, f"its {wrong[0]} is {meta.get(wrong[0])!r}, not {want[wrong[0]]!r}")
    return Store(conn, where, path, meta)


def read_meta(path: Path) -> dict[str, str] | None:
    """The meta table of a snapshot that passes the checks, else None (used to pick one whose
    extraction can be reused)."""
    try:
        st = open_store(path, {})
    except StoreError:
        return None
    try:
        return dict(st.meta)
    finally:
        st.close()


class Store:
    """Queries over one snapshot, answering with the model's objects. Every SQLite failure
    becomes a StoreError naming the file."""

    def __init__(self, conn: sqlite3.Connection, location: str, path: Path | None, meta: dict[str, str]):
        self._conn_, self._pid = conn, os.getpid()
        self.location, self.path, self.meta = location, path, meta
        self.upstream = meta["upstream"]
        self.tree_key = meta.get("tree_key", "")
        self._file_ids: dict[str, int] | None = None
        self._held: dict[str, FileIndex] | None = None

    def hold(self, resolved: dict[str, FileIndex]) -> None:
        """Keep `resolved`, what was just written, for the first load of everything (the build
        that made the snapshot reads it whole next: reading it back is the same objects, made
        again at a second or more of CPU)."""
        self._held = resolved

    @property
    def _conn(self) -> sqlite3.Connection:
        # A connection must not cross fork() (the site renders in forked workers): a child
        # opens its own. An in-memory store has no file to share and is used as inherited.
        if self._pid != os.getpid() and self.path is not None:
            self._conn_ = _connect_ro(self.path)
            self._pid = os.getpid()
        return self._conn_

    def close(self) -> None:
        try:
            self._conn_.close()
        except sqlite3.Error:
            pass

    def _q(self, sql: str, args=()) -> list[tuple]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise _store_error(self.location, f"{type(exc).__name__}: {exc}") from None

    # -- files --
    def file_ids(self) -> dict[str, int]:
        if self._file_ids is None:
            self._file_ids = dict(self._q("SELECT path, id FROM files ORDER BY path"))
        return self._file_ids

    def paths(self) -> list[str]:
        return list(self.file_ids())

    def blobs(self) -> dict[str, str]:
        return dict(self._q("SELECT path, blob FROM files ORDER BY path"))

    def diagnostics(self) -> list[tuple[str, str]]:
        out = []
        for path, raw in self._q("SELECT path, diagnostics FROM files WHERE diagnostics != '[]' ORDER BY path"):
            out.extend((path, str(m)) for m in _json_list(raw, self.location))
        return out

    # -- symbols --
    def _symbol(self, r) -> Symbol:
        return Symbol(self.upstream, r[12], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]),
                      tuple(r[10].split()), r[11])

    def _symbols(self, where: str, args=(), order: str = _BY_POSITION) -> list[Symbol]:
        return [self._symbol(r) for r in self._q(f"SELECT {_SYM_COLS}{_SYM_FROM} {where}{order}", args)]

    def symbols_in(self, path: str) -> list[Symbol]:
        return self._symbols("WHERE f.path = ?", (path,))

    def all_symbols(self) -> list[Symbol]:
        return self._symbols("")

    def with_qualified_name(self, name: str) -> list[Symbol]:
        return self._symbols("WHERE s.qualified_name = ?", (name,))

    def with_name(self, name: str) -> list[Symbol]:
        return self._symbols("WHERE s.name = ?", (name,))

    def with_qualified_name_prefix(self, prefix: str) -> list[Symbol]:
        # a range over the qualified-name index (LIKE would not use it, and `_` is a wildcard there)
        return self._symbols("WHERE s.qualified_name >= ? AND s.qualified_name < ?", (prefix, prefix + "\U0010ffff"))

    def qualified_names(self) -> list[str]:
        return [r[0] for r in self._q("SELECT DISTINCT qualified_name FROM symbols")]

    def names(self) -> list[str]:
        return [r[0] for r in self._q("SELECT DISTINCT name FROM symbols")]

    def _ids(self, key: str) -> list[int]:
        from annotate.index.model import split_key

        try:
            up, qname, path, line = split_key(key)
        except ValueError:
            return []
        if up != self.upstream:
            return []
        return [r[0] for r in self._q("SELECT s.id" + _SYM_FROM + " WHERE f.path = ? AND s.start_line = ? AND"
                                      " s.qualified_name = ? ORDER BY s.id", (path, line, qname))]

    def symbol(self, key: str) -> Symbol | None:
        ids = self._ids(key)
        got = self._symbols("WHERE s.id = ?", (ids[0],)) if ids else []
        return got[0] if got else None

    def enclosing(self, path: str, line: int) -> Symbol | None:
        # the innermost definition holding the line; of equal spans, the last one in the file
        got = self._symbols("WHERE f.path = ? AND s.start_line <= ? AND s.end_line >= ?", (path, line, line),
                            " ORDER BY s.end_line - s.start_line, s.start_line DESC, s.id DESC LIMIT 1")
        return got[0] if got else None

    # -- types and macros --
    def _types(self, where: str, args=()) -> list[TypeDef]:
        rows = self._q("SELECT t.id, t.name, t.qualified_name, t.kind, t.signature, t.template_params,"
                       " t.specialization, t.start_line, t.end_line, t.body_start_line, t.fingerprint, t.bases,"
                       " t.nested, t.decorators, t.anonymous_namespace, t.parse_errors, f.path FROM types t JOIN files f"
                       f" ON f.id = t.file {where} ORDER BY f.path, t.start_line, t.id", args)
        fields: dict[int, list[TypeField]] = defaultdict(list)
        if rows:
            for tid, name, kind, decl, line, value in self._q(
                    "SELECT type, name, kind, decl, line, value FROM fields WHERE type IN"
                    " (SELECT value FROM json_each(?)) ORDER BY id", (json.dumps([r[0] for r in rows]),)):
                fields[tid].append(TypeField(name, kind, decl, line, value))
        return [self._typedef(r[1:], r[16], fields.get(r[0], ())) for r in rows]

    def _typedef(self, r, path: str, fields) -> TypeDef:
        name, qn, kind, sig, tp, spec, sl, el, bl, fp, bases, nested, decos, anon, perr = r[:15]
        loc = self.location
        return TypeDef(self.upstream, path, name, qn, kind, sig, tp, spec, sl, el, bl, fp, tuple(fields),
                       tuple(_json_list(bases, loc)), tuple(_json_list(nested, loc)), tuple(_json_list(decos, loc)),
                       bool(anon), perr)

    def _macros(self, where: str, args=()) -> list[MacroDef]:
        return [self._macro(r[:7], r[7]) for r in self._q(
            "SELECT m.name, m.params, m.body, m.start_line, m.end_line, m.fingerprint, m.id, f.path FROM macros m"
            f" JOIN files f ON f.id = m.file {where} ORDER BY f.path, m.start_line, m.id", args)]

    def _macro(self, r, path: str) -> MacroDef:
        name, params, body, sl, el, fp = r[:6]
        return MacroDef(self.upstream, path, name, None if params is None else tuple(_json_list(params, self.location)),
                        body, sl, el, fp)

    def types_in(self, path: str) -> list[TypeDef]:
        return self._types("WHERE f.path = ?", (path,))

    def macros_in(self, path: str) -> list[MacroDef]:
        return self._macros("WHERE f.path = ?", (path,))

    def types_with_qualified_name(self, name: str) -> list[TypeDef]:
        return self._types("WHERE t.qualified_name = ?", (name,))

    def types_with_name(self, name: str) -> list[TypeDef]:
        return self._types("WHERE t.name = ?", (name,))

    def macros_with_name(self, name: str) -> list[MacroDef]:
        return self._macros("WHERE m.name = ?", (name,))

    def type_qualified_names(self) -> list[str]:
        return [r[0] for r in self._q("SELECT DISTINCT qualified_name FROM types")]

    def macro_names(self) -> list[str]:
        return [r[0] for r in self._q("SELECT DISTINCT name FROM macros")]

    def _def_id(self, table: str, name_col: str, key: str) -> int | None:
        try:
            up, qname, path, line = split_key(key)
        except ValueError:
            return None
        if up != self.upstream:
            return None
        got = self._q(f"SELECT x.id FROM {table} x JOIN files f ON f.id = x.file WHERE f.path = ? AND"
                      f" x.start_line = ? AND x.{name_col} = ? ORDER BY x.id LIMIT 1", (path, line, qname))
        return got[0][0] if got else None

    def type_by_key(self, key: str) -> TypeDef | None:
        tid = self._def_id("types", "qualified_name", key)
        got = self._types("WHERE t.id = ?", (tid,)) if tid is not None else []
        return got[0] if got else None

    def macro_by_key(self, key: str) -> MacroDef | None:
        mid = self._def_id("macros", "name", key)
        got = self._macros("WHERE m.id = ?", (mid,)) if mid is not None else []
        return got[0] if got else None

    def _uses(self, where: str, args) -> list[Use]:
        rows = self._q("SELECT u.targets, u.kind, u.name, u.how, u.line, u.col, s.qualified_name, s.start_line, f.path"
                       " FROM uses u JOIN symbols s ON s.id = u.user JOIN files f ON f.id = s.file"
                       f" WHERE {where} ORDER BY u.id", args)
        if not rows:
            return []
        targets: dict[tuple[str, int], list[str]] = defaultdict(list)
        for table, name_col, kind in (("types", "qualified_name", "type"), ("macros", "name", "macro")):
            ids = json.dumps(sorted({r[0] for r in rows if r[1] == kind}))
            for set_id, qname, line, path in self._q(
                    f"SELECT ts.id, x.{name_col}, x.start_line, f.path FROM target_sets ts JOIN {table} x ON"
                    " x.id = ts.target JOIN files f ON f.id = x.file WHERE ts.id IN (SELECT value FROM json_each(?))"
                    " ORDER BY ts.id, ts.pos", (ids,)):
                targets[(kind, set_id)].append(symbol_key(self.upstream, qname, path, line))
        up = self.upstream
        return [Use(symbol_key(up, q, p, sl), kind, name, how, p, line, col, tuple(targets.get((kind, t), ())))
                for t, kind, name, how, line, col, q, sl, p in rows]

    def uses_by(self, key: str) -> list[Use]:
        ids = self._ids(key)
        return self._uses("u.user IN (SELECT value FROM json_each(?))", (json.dumps(ids),)) if ids else []

    def users_of(self, kind: str, key: str) -> list[Use]:
        table, col = ("types", "qualified_name") if kind == "type" else ("macros", "name")
        tid = self._def_id(table, col, key)
        if tid is None:
            return []
        return self._uses("u.kind = ? AND u.targets IN (SELECT ts.id FROM target_sets ts WHERE ts.target = ?)",
                          (kind, tid))

    # -- edges and facts --
    def _edges(self, where: str, args) -> list[CallEdge]:
        """Edges chosen by `where` (over `e`, the edges table), in store order, with their targets."""
        rows = self._q("SELECT e.id, e.callee_name, e.kind, e.line, e.col, e.via, s.qualified_name, s.start_line,"
                       " f.path FROM edges e JOIN symbols s ON s.id = e.caller JOIN files f ON f.id = s.file "
                       f"WHERE {where} ORDER BY e.id", args)
        if not rows:
            return []
        targets: dict[int, list[str]] = defaultdict(list)
        for edge, qname, line, path in self._q(
                "SELECT t.edge, s.qualified_name, s.start_line, f.path FROM targets t JOIN symbols s ON"
                " s.id = t.symbol JOIN files f ON f.id = s.file WHERE t.edge IN (SELECT value FROM json_each(?))"
                " ORDER BY t.edge, t.pos", (json.dumps([r[0] for r in rows]),)):
            targets[edge].append(symbol_key(self.upstream, qname, path, line))
        up = self.upstream
        return [CallEdge(symbol_key(up, q, p, sl), name, kind, p, line, col, tuple(targets.get(i, ())), via)
                for i, name, kind, line, col, via, q, sl, p in rows]

    def callees(self, key: str) -> list[CallEdge]:
        ids = self._ids(key)
        return self._edges("e.caller IN (SELECT value FROM json_each(?))", (json.dumps(ids),)) if ids else []

    def callers(self, key: str) -> list[CallEdge]:
        ids = self._ids(key)
        return self._edges("e.id IN (SELECT edge FROM targets WHERE symbol IN (SELECT value FROM json_each(?)))",
                           (json.dumps(ids),)) if ids else []

    def facts(self, key: str) -> list[MemoryFact]:
        ids = self._ids(key)
        if not ids:
            return []
        rows = self._q("SELECT x.kind, x.detail, x.line, x.rule, f.path FROM facts x JOIN files f ON f.id = x.file"
                       " WHERE x.symbol IN (SELECT value FROM json_each(?)) ORDER BY x.id", (json.dumps(ids),))
        return [MemoryFact(key, kind, detail, path, line, rule) for kind, detail, line, rule, path in rows]

    # -- everything at once --
    def load(self, only: set[str] | None = None, resolved: bool = True) -> dict:
        """path -> FileIndex of every file (or of `only`): resolved as the index answers, or, with
        resolved=False, as extraction gave it (`extract.Extracted`, edges without targets and
        includes as written), for resolving again after other files changed."""
        import gc

        if only is None and resolved and self._held is not None:
            got, self._held = self._held, None  # handed over once: the caller keeps it
            return {p: got[p] for p in sorted(got)}
        was = gc.isenabled()
        gc.disable()  # ~10^6 small objects: the cyclic GC would only scan them again and again
        try:
            return self._load(only, resolved)
        finally:
            if was:
                gc.enable()

    def _rows(self, files: dict, few: bool, resolved: bool) -> tuple[list, list, list, list, list]:
        """Rows of symbols, edges, targets, facts of `files` (file id -> row), and (id, qualified
        name, line, path) of targets outside them: indexed queries for a few files, else whole
        tables (filtered while assembling)."""
        if not few:
            return (self._q("SELECT * FROM symbols ORDER BY id"), self._q("SELECT * FROM edges ORDER BY id"),
                    self._q("SELECT edge, symbol FROM targets ORDER BY edge, pos") if resolved else [],
                    self._q("SELECT file, symbol, kind, detail, line, rule FROM facts ORDER BY id"), [])
        of = "(SELECT value FROM json_each(?))"
        sym_rows = self._q(f"SELECT * FROM symbols WHERE file IN {of} ORDER BY id", (json.dumps(list(files)),))
        sym_ids = json.dumps([r[0] for r in sym_rows])
        edge_rows = self._q(f"SELECT * FROM edges WHERE caller IN {of} ORDER BY id", (sym_ids,))
        target_rows = self._q(f"SELECT edge, symbol FROM targets WHERE edge IN {of} ORDER BY edge, pos",
                              (json.dumps([r[0] for r in edge_rows]),)) if resolved else []
        fact_rows = self._q(f"SELECT file, symbol, kind, detail, line, rule FROM facts WHERE symbol IN {of}"
                            " ORDER BY id", (sym_ids,))
        outside = self._q("SELECT s.id, s.qualified_name, s.start_line, f.path FROM symbols s JOIN files f ON"
                          f" f.id = s.file WHERE s.id IN {of}", (json.dumps([t for _, t in target_rows]),))
        return sym_rows, edge_rows, target_rows, fact_rows, outside

    def _load(self, only: set[str] | None, resolved: bool) -> dict:
        up, loc = self.upstream, self.location
        files = {fid: row for fid, *row in self._q("SELECT id, path, blob, language, includes, raw_includes,"
                                                     " error_nodes, diagnostics FROM files ORDER BY path")
                 if only is None or row[0] in only}
        few = only is not None and len(files) <= 64  # a few files: indexed queries, not a full read
        sym_rows, edge_rows, target_rows, fact_rows, outside = self._rows(files, few, resolved)
        paths = self.paths_by_id() if only is not None and resolved else {}
        syms: dict[int, list[Symbol]] = defaultdict(list)
        key_of: dict[int, str] = {sid: symbol_key(up, qn, path, sl) for sid, qn, sl, path in outside}
        arity: dict[int, dict[str, tuple[int, int]]] = defaultdict(dict)
        for sid, fid, name, qn, kind, sig, tp, sl, el, bl, fp, anon, quals, perr, lo, hi in sym_rows:
            row = files.get(fid)
            if row is None:
                if resolved:  # a target of an edge of the files asked for
                    key_of[sid] = symbol_key(up, qn, paths[fid], sl)
                continue
            s = Symbol(up, row[0], name, qn, kind, sig, tp, sl, el, bl, fp, bool(anon), tuple(quals.split()), perr)
            syms[fid].append(s)
            key_of[sid] = s.key
            if lo is not None:
                arity[fid][s.key] = (lo, hi)
        targets: dict[int, list[str]] = defaultdict(list)
        for edge, sid in target_rows:
            targets[edge].append(key_of[sid])
        edges: dict[int, list] = defaultdict(list)
        extra: dict[int, tuple[list, list]] = defaultdict(lambda: ([], []))
        for eid, fid, caller, name, kind, line, col, via, nargs, recv in edge_rows:
            row = files.get(fid)
            if row is None:
                continue
            edges[fid].append(CallEdge(key_of[caller], name, kind, row[0], line, col,
                                       tuple(targets.get(eid, ())) if resolved else (), via))
            extra[fid][0].append(nargs)
            extra[fid][1].append(recv)
        facts: dict[int, list[MemoryFact]] = defaultdict(list)
        for fid, sid, kind, detail, line, rule in fact_rows:
            row = files.get(fid)
            if row is not None:
                facts[fid].append(MemoryFact(key_of[sid], kind, detail, row[0], line, rule))
        types, macros, uses, mentions = self._load_types(files, few, resolved, key_of)
        out = {}
        for fid, (path, blob, lang, incs, raw_incs, errs, diags) in files.items():
            fi = FileIndex(up, path, blob, lang, tuple(syms.get(fid, ())), tuple(edges.get(fid, ())),
                           tuple(facts.get(fid, ())), tuple(_json_list(incs if resolved else raw_incs, loc)), errs,
                           tuple(_json_list(diags, loc)), tuple(types.get(fid, ())), tuple(macros.get(fid, ())),
                           tuple(uses.get(fid, ())))
            if resolved:
                out[path] = fi
            else:
                # the extractor's types only when re-resolving (a reader of the index needs none of it)
                from annotate.index.extract import Extracted

                nargs, recv = extra.get(fid, ([], []))
                out[path] = Extracted(fi, arity.get(fid, {}), tuple(nargs), tuple(recv), mentions.get(fid, {}))
        return out

    def _load_types(self, files: dict, few: bool, resolved: bool, key_of: dict[int, str]):
        """Per file id: types (with fields), macros, uses (resolved) or raw mentions (not resolved)."""
        of = "(SELECT value FROM json_each(?))"
        fids = json.dumps(list(files))
        if few:
            trows = self._q(f"SELECT * FROM types WHERE file IN {of} ORDER BY id", (fids,))
            frows = self._q(f"SELECT type, name, kind, decl, line, value FROM fields WHERE type IN {of} ORDER BY id",
                            (json.dumps([r[0] for r in trows]),))
            mrows = self._q(f"SELECT * FROM macros WHERE file IN {of} ORDER BY id", (fids,))
            urows = self._q(f"SELECT * FROM uses WHERE file IN {of} ORDER BY id", (fids,)) if resolved else []
            utrows = self._q(f"SELECT id, target FROM target_sets WHERE id IN {of} ORDER BY id, pos",
                             (json.dumps(sorted({r[8] for r in urows})),)) if resolved else []
            nrows = [] if resolved else self._q(f"SELECT symbol, names FROM mentions WHERE symbol IN {of}",
                                                (json.dumps(list(key_of)),))
        else:
            trows = self._q("SELECT * FROM types ORDER BY id")
            frows = self._q("SELECT type, name, kind, decl, line, value FROM fields ORDER BY id")
            mrows = self._q("SELECT * FROM macros ORDER BY id")
            urows = self._q("SELECT * FROM uses ORDER BY id") if resolved else []
            utrows = self._q("SELECT id, target FROM target_sets ORDER BY id, pos") if resolved else []
            nrows = [] if resolved else self._q("SELECT symbol, names FROM mentions")
        paths = self.paths_by_id()
        fields: dict[int, list[TypeField]] = defaultdict(list)
        for tid, name, kind, decl, line, value in frows:
            fields[tid].append(TypeField(name, kind, decl, line, value))
        types: dict[int, list[TypeDef]] = defaultdict(list)
        macros: dict[int, list[MacroDef]] = defaultdict(list)
        tkey: dict[int, str] = {}
        mkey: dict[int, str] = {}
        for tid, fid, *r in trows:
            if fid in files:
                t = self._typedef(r, files[fid][0], fields.get(tid, ()))
                types[fid].append(t)
                tkey[tid] = t.key
        for mid, fid, *r in mrows:
            if fid in files:
                m = self._macro(r, files[fid][0])
                macros[fid].append(m)
                mkey[mid] = m.key
        uses: dict[int, list[Use]] = defaultdict(list)
        if urows:
            targets: dict[int, list[int]] = defaultdict(list)
            for set_id, target in utrows:
                targets[set_id].append(target)
            for kind, known, table, col in (("type", tkey, "types", "qualified_name"), ("macro", mkey, "macros", "name")):
                wanted = {r[8] for r in urows if r[3] == kind}
                missing = sorted({t for sid in wanted for t in targets.get(sid, ())} - set(known))
                for xid, qn, line, fid in (self._q(f"SELECT id, {col}, start_line, file FROM {table} WHERE id IN {of}",
                                                   (json.dumps(missing),)) if missing else []):
                    known[xid] = symbol_key(self.upstream, qn, paths[fid], line)
            for uid, fid, user, kind, name, how, line, col, set_id in urows:
                if fid in files:
                    known = tkey if kind == "type" else mkey
                    uses[fid].append(Use(key_of[user], kind, name, how, files[fid][0], line, col,
                                         tuple(known[t] for t in targets.get(set_id, ()))))
        mentions: dict[int, dict[str, tuple[str, ...]]] = defaultdict(dict)
        if nrows:
            fid_of = {k: split_key(v)[2] for k, v in key_of.items()}
            by_path = {row[0]: fid for fid, row in files.items()}
            for sid, names in nrows:
                key = key_of.get(sid)
                if key is not None:
                    mentions[by_path[fid_of[sid]]][key] = tuple(_json_list(names, self.location))
        return types, macros, uses, mentions

    def paths_by_id(self) -> dict[int, str]:
        return {v: k for k, v in self.file_ids().items()}


def _json_list(raw: str, where: str) -> list:
    try:
        got = json.loads(raw)
    except ValueError:
        got = None
    if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
        raise _store_error(where, "a list column that is not a JSON list of strings")
    return got

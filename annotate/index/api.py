"""The index as a library: `load_index(config)` for the pinned sources, `index_directory` for
any tree. Other stages import this module; they never parse the CLI's output."""

from __future__ import annotations

import difflib
import hashlib
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Hashable, TypeVar

from annotate.config import Config
from annotate.errors import AnnotateError, Diagnostic, UsageError
from annotate.index.model import CallEdge, FileIndex, MemoryFact, Symbol, bare_name, language_of, parse_symbol
from annotate.index.store import Store, StoreError

SKIP_DIRS = {".git", "__pycache__", "node_modules", ".github"}
T = TypeVar("T")


# ---- the Index ----------------------------------------------------------------------------

class Index:
    """Read-only view over the resolved index of one or more upstreams, each held by a store
    (annotate/index/store.py): questions about one function are answered by indexed queries,
    and only `files()` and `all_symbols()` read everything.

    The interface, and the rule for absent things, is `annotate.index.model.IndexView`: a
    lookup of one named thing (`root`, `file`, `source`, `symbol`, `resolve`, `text_of`) raises
    UsageError when it is absent; a query for a collection returns []; `enclosing` returns None.
    """

    def __init__(self, stores: dict[str, Store], roots: dict[str, Path], stats: dict | None = None):
        self._stores = dict(stores)
        self._roots = {k: Path(v) for k, v in roots.items()}
        self.stats = stats or {}
        self._sources: dict[tuple[str, str], str] = {}
        self._loaded: dict[str, dict[str, FileIndex]] = {}  # upstream -> path -> FileIndex, once asked
        self._graphs: dict[str, _Graph] = {}  # upstream -> edges and facts by key, once loaded
        self._memo: dict = {}

    @classmethod
    def merged(cls, *indexes: "Index") -> "Index":
        """One Index over the upstreams of several (each upstream in one of them only)."""
        stores, roots, stats = {}, {}, {}
        for ix in indexes:
            for up in ix.upstreams():
                if up in stores:
                    raise ValueError(f"upstream {up!r} is in two of the indexes to merge")
                stores[up], roots[up], stats[up] = ix._stores[up], ix._roots[up], ix.stats.get(up, {})
        return cls(stores, roots, stats)

    # -- upstreams and files --
    def upstreams(self) -> list[str]:
        return list(self._stores)

    def _store(self, upstream: str) -> Store:
        try:
            return self._stores[upstream]
        except KeyError:
            raise UsageError(f"upstream '{upstream}' is not in the index",
                             hint="indexed upstreams: " + (", ".join(self._stores) or "none")) from None

    def root(self, upstream: str) -> Path:
        self._store(upstream)
        return self._roots[upstream]

    def content_key(self) -> str:
        """Changes exactly when the indexed content does (another file, another blob, another
        index version): a digest of the upstreams' tree keys, known without reading the index."""
        h = hashlib.sha256()
        for up in sorted(self._stores):
            h.update(f"{up}\0{self._stores[up].tree_key}\n".encode())
        return h.hexdigest()[:32]

    def paths(self, upstream: str) -> list[str]:
        st = self._stores.get(upstream)
        return st.paths() if st is not None else []

    def has_file(self, upstream: str, path: str) -> bool:
        st = self._stores.get(upstream)
        return st is not None and path in st.file_ids()

    def _files_of(self, upstream: str) -> dict[str, FileIndex]:
        got = self._loaded.get(upstream)
        if got is None:
            got = self._loaded[upstream] = self._stores[upstream].load()
            # Whoever reads everything (the site) then asks about every function: from here on
            # edges and facts come from memory, built now so that forked workers share them.
            self._graphs[upstream] = _Graph(got.values())
        return got

    def files(self, upstream: str | None = None) -> list[FileIndex]:
        ups = [upstream] if upstream else self.upstreams()
        return [fi for up in ups if up in self._stores for fi in self._files_of(up).values()]

    def file(self, upstream: str, path: str) -> FileIndex:
        if not self.has_file(upstream, path):
            self._store(upstream)
            raise UsageError(f"{upstream}:{path} is not in the index", hint=_near_hint(path, self.paths(upstream)))
        if upstream in self._loaded:
            return self._loaded[upstream][path]
        return self._stores[upstream].load(only={path})[path]

    def source(self, upstream: str, path: str) -> str:
        key = (upstream, path)
        if key not in self._sources:
            if not self.has_file(upstream, path):
                self.file(upstream, path)  # raises, naming the nearest paths
            where = self._roots[upstream] / path
            try:
                data = where.read_bytes()
            except OSError as exc:
                raise UsageError(f"{where}: cannot read: {exc.strerror or exc}",
                                 hint="the checkout changed after it was indexed; run the command again") from None
            self._sources[key] = data.decode("utf-8", "replace")
        return self._sources[key]

    # -- symbols --
    def symbols_in(self, upstream: str, path: str) -> list[Symbol]:
        return self._stores[upstream].symbols_in(path) if self.has_file(upstream, path) else []

    def all_symbols(self) -> list[Symbol]:
        return [s for st in self._stores.values() for s in st.all_symbols()]

    def symbol(self, key: str) -> Symbol:
        st = self._stores.get(key.partition(":")[0])
        got = st.symbol(key) if st is not None else None
        if got is None:
            raise UsageError(f"no symbol with key {key!r}")
        return got

    def find(self, name: str, upstream: str | None = None) -> list[Symbol]:
        """Exact qualified name, else a suffix on '::' (or '.') boundaries, else the bare name."""
        name = name.strip()
        stores = [st for up, st in self._stores.items() if upstream is None or up == upstream]
        exact = [s for st in stores for s in st.with_qualified_name(name)]
        if exact:
            return _ordered(exact)
        last = bare_name(name)
        pool = [s for st in stores for s in st.with_name(last)]
        suffix = [s for s in pool if s.qualified_name.endswith("::" + name) or s.qualified_name.endswith("." + name)]
        if suffix:
            return _ordered(suffix)
        if name == last:
            return _ordered(pool)
        return []

    def resolve(self, spec: str) -> Symbol:
        """[UPSTREAM:]qualified_name[@path:line] -> the one Symbol it names, or UsageError."""
        upstream, name, path, line = self.parse_spec(spec)
        cands = self.find(name, upstream)
        if path is not None:
            cands = [s for s in cands if s.path == path or s.path.endswith("/" + path)]
            if line is not None:
                exact = [s for s in cands if s.start_line == line]
                cands = exact or [s for s in cands if s.start_line <= line <= s.end_line]
        if len(cands) == 1:
            return cands[0]
        if not cands:
            pool = sorted({q for up, st in self._stores.items() if upstream is None or up == upstream
                           for q in st.qualified_names()})
            near = difflib.get_close_matches(name, pool, n=8, cutoff=0.6)
            if not near:
                names = sorted({n for st in self._stores.values() for n in st.names()})
                near_bare = difflib.get_close_matches(bare_name(name), names, n=5, cutoff=0.6)
                near = [s.qualified_name for b in near_bare for st in self._stores.values()
                        for s in st.with_name(b)][:8]
            hint = ("nearest names: " + ", ".join(dict.fromkeys(near))) if near else "no similar names"
            raise UsageError(f"unknown symbol '{spec}'", hint=hint)
        listing = "\n".join(f"    {s.key}" for s in cands[:30])
        more = f"\n    ... and {len(cands) - 30} more" if len(cands) > 30 else ""
        raise UsageError(f"ambiguous symbol '{spec}': {len(cands)} definitions",
                         hint="name one of them exactly:\n" + listing + more)

    def parse_spec(self, spec: str) -> tuple[str | None, str, str | None, int | None]:
        s = parse_symbol(spec, self.upstreams())
        return s.upstream, s.name, s.path, s.line

    def diagnostics(self) -> list[Diagnostic]:
        """Per-file problems (a file that failed to extract), as warnings naming the file."""
        return [Diagnostic("warning", msg, file=f"{up}:{path}", code="index-extract")
                for up, st in self._stores.items() for path, msg in st.diagnostics()]

    # -- graph and facts --
    def _edges(self, key: str, reverse: bool) -> list[CallEdge]:
        up = key.partition(":")[0]
        st, g = self._stores.get(up), self._graphs.get(up)
        if st is None:
            return []
        if reverse:
            edges = g.callers.get(key, []) if g is not None else st.callers(key)
            return sorted(edges, key=lambda e: (e.path, e.line, e.column))
        edges = g.callees.get(key, []) if g is not None else st.callees(key)
        return sorted(edges, key=lambda e: (e.line, e.column))

    def callees(self, sym: Symbol) -> list[CallEdge]:
        return self._edges(sym.key, False)

    def callers(self, sym: Symbol) -> list[CallEdge]:
        return self._edges(sym.key, True)

    def facts(self, sym: Symbol) -> list[MemoryFact]:
        st, g = self._stores.get(sym.upstream), self._graphs.get(sym.upstream)
        if st is None:
            return []
        facts = g.facts.get(sym.key, []) if g is not None else st.facts(sym.key)
        return sorted(facts, key=lambda f: (f.line, f.kind))

    def callgraph(self, sym: Symbol, reverse: bool = False, depth: int = 1) -> list[CallEdge]:
        """Edges reachable from `sym` within `depth` steps (callers' edges when reverse)."""
        out: list[CallEdge] = []
        seen_edges: set = set()
        frontier = [sym.key]
        visited = {sym.key}
        for _ in range(max(depth, 0)):
            nxt = []
            for key in frontier:
                for e in self._edges(key, reverse):
                    ident = (e.caller, e.callee_name, e.kind, e.path, e.line, e.column, key if reverse else None)
                    if ident in seen_edges:
                        continue
                    seen_edges.add(ident)
                    out.append(e)
                    for k in ([e.caller] if reverse else e.callees):
                        if k not in visited:
                            visited.add(k)
                            nxt.append(k)
            frontier = nxt
            if not frontier:
                break
        return out

    def enclosing(self, upstream: str, path: str, line: int) -> Symbol | None:
        st = self._stores.get(upstream)
        return st.enclosing(path, line) if st is not None else None

    def text_of(self, sym: Symbol) -> str:
        lines = self.source(sym.upstream, sym.path).splitlines(keepends=True)
        return "".join(lines[sym.start_line - 1:sym.end_line])

    # -- what consumers derive from the index, kept as long as it lives --
    def memo(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`, computed once per key for this index (`annotate serve` rebuilds the site
        many times against one loaded index)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]


class _Graph:
    """Edges and facts of a loaded upstream by Symbol.key, in store order (what the store's
    queries answer, without a query per function)."""

    def __init__(self, files):
        self.callees: dict[str, list[CallEdge]] = {}
        self.callers: dict[str, list[CallEdge]] = {}
        self.facts: dict[str, list[MemoryFact]] = {}
        for fi in files:
            for e in fi.edges:
                self.callees.setdefault(e.caller, []).append(e)
                for k in dict.fromkeys(e.callees):
                    self.callers.setdefault(k, []).append(e)
            for f in fi.facts:
                self.facts.setdefault(f.symbol, []).append(f)


def _ordered(syms: list[Symbol]) -> list[Symbol]:
    return sorted(syms, key=lambda s: (s.upstream, s.path, s.start_line))


def _near_hint(path: str, paths: list[str]) -> str | None:
    near = difflib.get_close_matches(path, paths, n=5, cutoff=0.5)
    return ("nearest paths: " + ", ".join(near)) if near else None


# ---- building -----------------------------------------------------------------------------

def scan(root: Path, paths: list[str] | None = None) -> dict[str, tuple[int, int, int]]:
    """Every indexable file under root (or under the given sub-paths), '/'-separated, sorted,
    with its stat data (size, mtime, inode)."""
    from annotate.index.cache import stat_tuple

    out: dict[str, tuple[int, int, int]] = {}
    prefix = len(os.path.join(str(root), ""))
    bases = [root / p for p in paths] if paths else [root]
    for base in bases:
        if base.is_file():
            rel = base.relative_to(root).as_posix()
            if language_of(rel):
                out[rel] = stat_tuple(base.stat())
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for fn in filenames:
                if language_of(fn):
                    full = os.path.join(dirpath, fn)
                    try:
                        st = os.stat(full)
                    except OSError:
                        continue
                    out[full[prefix:].replace(os.sep, "/")] = stat_tuple(st)
    return dict(sorted(out.items()))


def source_files(root: Path, paths: list[str] | None = None) -> list[str]:
    """Every indexable file under root (or under the given sub-paths), '/'-separated, sorted."""
    return list(scan(root, paths))


def _blob_ids(root: Path, listing: dict[str, tuple], known: dict[str, tuple]) -> tuple[dict[str, str], int]:
    """path -> git blob id, from the stat cache where the stat data still matches, else hashed.
    Returns (blobs, number of files hashed)."""
    blobs, hashed = {}, 0
    for rel, st in listing.items():
        got = known.get(rel)
        if got is not None and got[0] == st:
            blobs[rel] = got[1]
            continue
        from annotate.fetch.lock import git_blob_id

        blobs[rel] = git_blob_id((root / rel).read_bytes())
        hashed += 1
    return blobs, hashed


def _extract_one(args):
    from annotate.index.extract import Extracted, extract_full

    upstream, root, path, blob = args
    try:
        data = (Path(root) / path).read_bytes()
        # the blob of what was parsed, should the file have changed since it was hashed: a
        # snapshot's per-file blob always describes its extraction (reuse goes by it)
        from annotate.fetch.lock import git_blob_id

        blob = git_blob_id(data)
        ex = extract_full(upstream, path, data)
    except Exception as exc:  # one unparsable file must not end the run; it is reported
        return Extracted(FileIndex(upstream=upstream, path=path, blob=blob, language=language_of(path) or "cuda",
                                   diagnostics=(f"extraction failed: {type(exc).__name__}: {exc}",)))
    return replace(ex, file=replace(ex.file, blob=blob))


def _extract_task(task):
    tree, args = task
    return tree, _extract_one(args)


def _workers(n_todo: int) -> int:
    env = os.environ.get("ANNOTATE_INDEX_JOBS")
    if env and env.isdigit():
        return max(1, int(env))
    if n_todo < 40:
        return 1
    return max(1, min(os.cpu_count() or 1, 16))


class _CacheLock:
    """The index lock, taken only to write; `writable` is False (and nothing is written) when
    the cache cannot be written (a read-only copy)."""

    def __init__(self, config: Config):
        self.config, self.lock, self.writable = config, None, False

    def __enter__(self) -> "_CacheLock":
        from filelock import FileLock

        from annotate.index.cache import may_write

        path = self.config.lock_path("index")
        try:
            for d in (self.config.cache_dir, path.parent, self.config.index_dir()):
                if not d.is_dir():
                    d.mkdir(parents=True, exist_ok=True)
                if not may_write(d):
                    return self
            self.lock = FileLock(str(path))
            self.lock.acquire()
            self.writable = True
        except OSError:
            self.lock = None
        return self

    def __exit__(self, *exc) -> None:
        if self.lock is not None:
            self.lock.release()


class _Tree:
    """One tree to index: its files, their blob ids (stat cache, else hashed) and its key."""

    def __init__(self, upstream: str, root: Path, paths: list[str] | None, config: Config | None):
        from annotate.index import cache
        from annotate.index.parse import resolve_version, tool_version

        self.t0 = time.perf_counter()
        self.upstream, self.root, self.config = upstream, root, config
        self.taken_ns = time.time_ns()
        self.listing = scan(root, paths)
        self.stat_file = cache.stat_path(config, upstream, root) if config is not None else None
        self.known = cache.read_stats(self.stat_file, root) if self.stat_file is not None else {}
        self.blobs, hashed = _blob_ids(root, self.listing, self.known)
        rv = resolve_version()
        tkey = cache.tree_key(rv, list(self.blobs.items()))
        self.meta = {"upstream": upstream, "tree_key": tkey, "tool_version": tool_version(), "resolve_version": rv}
        self.expect = {"upstream": upstream, "tree_key": tkey, "resolve_version": rv}
        self.path = cache.snapshot_path(config, upstream, tkey) if config is not None else None
        self.stats = {"files": len(self.blobs), "hashed": hashed, "parsed": 0, "cached_files": 0,
                      "resolved_cache": False}
        self.damaged: StoreError | None = None
        self.found: dict = {}
        self.todo: list = []

    def open_cached(self) -> Store | None:
        from annotate.index.store import open_store

        if self.path is None:
            return None
        try:
            store = open_store(self.path, self.expect)
        except StoreError as exc:
            if self.path.exists():
                self.damaged = exc
            return None
        self.stats["resolved_cache"] = True
        return store

    def save_stats(self) -> None:
        from annotate.index import cache

        if self.stat_file is None or not self.stats["hashed"] or not cache.may_write(self.config.index_dir()):
            return
        try:
            cache.write_stats(self.stat_file, self.root, {p: (self.listing[p], b) for p, b in self.blobs.items()},
                              self.taken_ns, self.known)
        except OSError:
            pass  # a cache we may not write only costs the hashing next time


def _open_or_build(trees: list[_Tree], config: Config | None, progress: bool) -> dict[str, Store]:
    """The store of every tree: its cached snapshot when there is one (no lock, nothing
    written), else built, all missing trees together, and cached when the cache is writable."""
    stores = {t.upstream: t.open_cached() for t in trees}
    missing = [t for t in trees if stores[t.upstream] is None]
    if missing and config is None:
        stores.update(_build(missing, None, False, progress))
    elif missing:
        with _CacheLock(config) as lock:
            if lock.writable:  # built by another process while this one waited for the lock
                for t in missing:
                    stores[t.upstream] = t.open_cached()
                missing = [t for t in missing if stores[t.upstream] is None]
            else:  # rebuilt, but cannot be kept: say so, once per tree
                for t in missing:
                    why = t.damaged.message if t.damaged is not None else f"{t.upstream} is not in it"
                    print(f"annotate: the index cache is read-only ({why}); indexing {t.upstream} in memory, "
                          "not saved", file=sys.stderr)
            if missing:
                stores.update(_build(missing, config, lock.writable, progress))
    for t in trees:
        t.save_stats()
        t.stats["seconds"] = time.perf_counter() - t.t0
    return stores


def build_upstream(upstream: str, root: Path, paths: list[str] | None = None,
                   config: Config | None = None, progress: bool = False) -> tuple[Store, dict]:
    """The store of one tree (edges resolved): the cached snapshot when config is given and one
    of this content exists, else built (reusing the extraction of unchanged files from the newest
    snapshot of the same upstream) and cached. Without config it is built in memory."""
    tree = _Tree(upstream, Path(root), paths, config)
    return _open_or_build([tree], config, progress)[upstream], tree.stats


def _reusable(config: Config | None, upstream: str, blobs: dict[str, str], tool: str) -> dict:
    """path -> Extracted of the files whose blob is unchanged since the newest snapshot of this
    upstream made by the same extractor (a changed file is re-parsed alone)."""
    if config is None:
        return {}
    from annotate.index import cache
    from annotate.index.store import open_store, read_meta

    for cand in cache.snapshots(config, upstream):
        meta = read_meta(cand)
        if not meta or meta.get("tool_version") != tool or meta.get("upstream") != upstream:
            continue
        try:
            st = open_store(cand, {"upstream": upstream})
            try:
                old = st.blobs()
                same = {p for p, b in blobs.items() if old.get(p) == b}
                return st.load(only=same, resolved=False) if same else {}
            finally:
                st.close()
        except StoreError:
            continue
    return {}


def _build(trees: list[_Tree], config: Config | None, writable: bool, progress: bool) -> dict[str, Store]:
    """Extract what no snapshot has, in one process pool for all trees (the biggest tree first,
    its biggest files first, so the pool stays busy to the end); a tree is resolved and written
    as soon as its last file is in, while the pool goes on with the next."""
    t0 = time.perf_counter()
    for t in trees:
        t.found = {p: replace(ex, file=replace(ex.file, blob=t.blobs[p]))
                   for p, ex in _reusable(config, t.upstream, t.blobs, t.meta["tool_version"]).items()}
        t.stats["cached_files"] = len(t.found)
        t.todo = sorted(((t.upstream, str(t.root), p, b) for p, b in t.blobs.items() if p not in t.found),
                        key=lambda a, t=t: -t.listing[a[2]][0])
        t.stats["parsed"] = len(t.todo)
        t.stats["phases"] = {"reuse": time.perf_counter() - t0}
        if progress and t.todo:
            print(f"annotate: indexing {len(t.todo)} files of {t.upstream}", file=sys.stderr)
    order = sorted(range(len(trees)), key=lambda i: -sum(trees[i].listing[a[2]][0] for a in trees[i].todo))
    tasks = [(i, args) for i in order for args in trees[i].todo]
    left = {i: len(trees[i].todo) for i in order}
    stores: dict[str, Store] = {}

    def finish(i: int) -> None:
        t = trees[i]
        t.stats["phases"]["extract"] = time.perf_counter() - t0
        stores[t.upstream] = _resolve_and_store(t, config, writable)

    for i in order:
        if not left[i]:
            finish(i)
    jobs = _workers(len(tasks))
    if jobs == 1:
        results = map(_extract_task, tasks)
        pool = None
    else:
        import multiprocessing as mp

        from annotate.index.extract import warm_up

        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        if ctx.get_start_method() == "fork":
            warm_up()
        pool = ctx.Pool(jobs)
        results = pool.imap_unordered(_extract_task, tasks, chunksize=4)
    try:
        for n, (i, ex) in enumerate(results, 1):
            trees[i].found[ex.file.path] = ex
            left[i] -= 1
            if progress and n % 200 == 0:
                print(f"  indexed {n}/{len(tasks)} files", file=sys.stderr)
            if not left[i]:
                finish(i)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return stores


def _resolve_and_store(t: _Tree, config: Config | None, writable: bool) -> Store:
    from annotate.index import cache
    from annotate.index.resolve import resolve_upstream
    from annotate.index.store import create_store

    t1 = time.perf_counter()
    found = {p: t.found[p] for p in sorted(t.found)}
    files = {p: ex.file for p, ex in found.items()}
    arity = {k: v for ex in found.values() for k, v in ex.arity.items()}
    resolved = resolve_upstream(files, arity, {p: ex.nargs for p, ex in found.items()},
                                {p: ex.receivers for p, ex in found.items()})
    t2 = time.perf_counter()
    store = create_store(t.path if writable else None, t.meta, found, resolved)
    if writable:
        cache.prune_snapshots(config, t.upstream, t.path)
    t.found = {}
    t.stats["phases"].update(resolve=t2 - t1, write=time.perf_counter() - t2)
    return store


def index_directory(upstream: str, root: Path, paths: list[str] | None = None,
                    config: Config | None = None) -> Index:
    """Index any tree (another version of an upstream, a test fixture dir). Not cached unless a
    config is given."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise AnnotateError(f"{root}: not a directory")
    store, stats = build_upstream(upstream, root, paths, config=config)
    return Index({upstream: store}, {upstream: root}, {upstream: stats})


def fetched_roots(config: Config, upstreams: list[str] | None = None) -> dict[str, Path]:
    """upstream -> checkout root of every fetched pin (the fetch stage decides what 'fetched' is)."""
    return _fetched(config, upstreams)[1]


def _fetched(config: Config, upstreams: list[str] | None) -> tuple[dict, dict[str, Path]]:
    from annotate.upstreams import checkout_root, load_upstreams

    pins = load_upstreams(config)
    names = list(upstreams) if upstreams else list(pins)
    unknown = [n for n in names if n not in pins]
    if unknown:
        raise UsageError(f"unknown upstream '{unknown[0]}'", hint="known upstreams: " + ", ".join(pins))
    try:
        from annotate.fetch.api import fetched_root  # the fetch stage decides what "fetched" means
    except ImportError:  # a tree without the fetch stage: a checkout directory is enough
        fetched_root = None
    out = {}
    for n in names:
        if fetched_root is not None:
            root = fetched_root(config, n)
        else:
            cand = checkout_root(config, pins[n])
            root = cand if cand.is_dir() else None
        if root is not None:
            out[n] = Path(root)
    return pins, out


def load_index(config: Config, upstreams: list[str] | None = None, progress: bool = False) -> Index:
    """The index of every fetched pin (or of `upstreams`), cached by content in config.index_dir().
    Warm, it opens one snapshot per upstream and hashes no file whose stat data is unchanged;
    it writes nothing and takes no lock unless something has to be (re)built."""
    pins, roots = _fetched(config, upstreams)
    if not roots:
        which = ", ".join(upstreams) if upstreams else "no pinned upstream"
        raise AnnotateError(f"{which} is not fetched into {config.cache_dir}",
                            hint="run `annotate fetch` first")
    missing = [u for u in (upstreams or []) if u not in roots]
    if missing:
        raise AnnotateError(f"{', '.join(missing)} is not fetched into {config.cache_dir}",
                            hint=f"run `annotate fetch {' '.join(missing)}` first")
    trees = [_Tree(up, root, [p for p in pins[up].index_paths() if (root / p).exists()], config)
             for up, root in roots.items()]
    stores = _open_or_build(trees, config, progress)
    return Index({t.upstream: stores[t.upstream] for t in trees}, roots, {t.upstream: t.stats for t in trees})

"""Building the index of trees: list their files and take their blob ids (a stat cache spares
the hashing), open the snapshot of that content if the cache has it, else extract what no
snapshot has in one process pool, resolve, and write a new snapshot (store.py).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import replace
from pathlib import Path

from annotate.config import Config
from annotate.index.model import FileIndex, language_of
from annotate.index.store import Store, StoreError
from annotate.progress import Reporter
from annotate.terminal import echo

SKIP_DIRS = {".git", "__pycache__", "node_modules", ".github"}


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


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"][^>"\r\n]+[>"])', re.M)


def _under(path: str, prefixes: list[str]) -> bool:
    return any(path == r or path.startswith(r + "/") for r in prefixes)


def included_files(root: Path, paths: list[str], included_only: list[str]) -> set[str]:
    """The files under the `included_only` prefixes that the other C/CUDA files among `paths`
    reach through #include, directly or through each other, each directive resolved as the index
    resolves it (`resolve.IncludeResolver` over `paths`). Directives are read with a pattern,
    not parsed: one inside a comment or a dead #if branch counts too, so this is a superset of
    what the parse finds. A target chosen among same-named files stays the one chosen once the
    other files are left out: it is the nearest of all of them, so of the files kept too."""
    from annotate.index.resolve import IncludeResolver

    resolver = IncludeResolver(paths)
    todo = [p for p in paths if not _under(p, included_only) and language_of(p) == "cuda"]
    seen: set[str] = set()
    while todo:
        p = todo.pop()
        try:
            data = (root / p).read_bytes()
        except OSError:
            continue
        for m in _INCLUDE.finditer(data):
            got = resolver.resolve(p, m.group(1).decode("utf-8", "replace"))
            if got is not None and got not in seen and _under(got, included_only):
                seen.add(got)
                todo.append(got)
    return seen


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


def _workers(n_todo: int, jobs: int | None = None) -> int:
    if jobs:  # Config.index_jobs(): $ANNOTATE_INDEX_JOBS
        return jobs
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


class Tree:
    """One tree to index: its files, their blob ids (stat cache, else hashed) and its key."""

    def __init__(self, upstream: str, root: Path, paths: list[str] | None, config: Config | None,
                 included_only: list[str] | None = None):
        from annotate.index import cache
        from annotate.index.parse import resolve_version, tool_version

        self.t0 = time.perf_counter()
        self.upstream, self.root, self.config = upstream, root, config
        # paths (among `paths`) of which only the files the others #include are indexed
        self.included_only = sorted(included_only or ())
        self.taken_ns = time.time_ns()
        self.listing = scan(root, paths)
        self.stat_file = cache.stat_path(config, upstream, root) if config is not None else None
        self.known = cache.read_stats(self.stat_file, root) if self.stat_file is not None else {}
        self.blobs, hashed = _blob_ids(root, self.listing, self.known)
        rv = resolve_version()
        # the key of what is listed (all of it hashed, so the stat cache spares it next time) and
        # of the rule choosing what of it is indexed
        rule = f"\0included-only:{','.join(self.included_only)}" if self.included_only else ""
        tkey = cache.tree_key(rv + rule, list(self.blobs.items()))
        self.meta = {"upstream": upstream, "tree_key": tkey, "tool_version": tool_version(), "resolve_version": rv}
        self.expect = {"upstream": upstream, "tree_key": tkey, "resolve_version": rv}
        self.path = cache.snapshot_path(config, upstream, tkey) if config is not None else None
        self.stats = {"files": len(self.blobs), "hashed": hashed, "parsed": 0, "cached_files": 0,
                      "resolved_cache": False}
        self.damaged: StoreError | None = None
        self.found: dict = {}
        self.todo: list = []
        self.indexed: dict[str, str] = self.blobs  # what is extracted: `blobs` less what no file includes

    def choose(self) -> None:
        """Leave out the files under `included_only` that no other file reaches by #include (only
        when building: a snapshot holds what was chosen)."""
        if self.included_only:
            keep = included_files(self.root, list(self.blobs), self.included_only)
            self.indexed = {p: b for p, b in self.blobs.items() if not _under(p, self.included_only) or p in keep}
        self.stats["indexed"] = len(self.indexed)

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


def open_or_build(trees: list[Tree], config: Config | None, progress: bool | Reporter) -> dict[str, Store]:
    """The store of every tree: its cached snapshot when there is one (no lock, nothing
    written), else built, all missing trees together, and cached when the cache is writable."""
    stores = {t.upstream: t.open_cached() for t in trees}
    missing = [t for t in trees if stores[t.upstream] is None]
    reporter = Reporter.of(progress)
    if missing and config is None:
        stores.update(_build(missing, None, False, reporter))
    elif missing:
        with _CacheLock(config) as lock:
            if lock.writable:  # built by another process while this one waited for the lock
                for t in missing:
                    stores[t.upstream] = t.open_cached()
                missing = [t for t in missing if stores[t.upstream] is None]
            else:  # rebuilt, but cannot be kept: say so, once per tree
                for t in missing:
                    why = t.damaged.message if t.damaged is not None else f"{t.upstream} is not in it"
                    echo(f"annotate: the index cache is read-only ({why}); indexing {t.upstream} in memory, "
                         "not saved", err=True)
            if missing:
                stores.update(_build(missing, config, lock.writable, reporter))
    for t in trees:
        t.save_stats()
        t.stats["seconds"] = time.perf_counter() - t.t0
    return stores


def build_upstream(upstream: str, root: Path, paths: list[str] | None = None,
                   config: Config | None = None, progress: bool | Reporter = False) -> tuple[Store, dict]:
    """The store of one tree (edges resolved): the cached snapshot when config is given and one
    of this content exists, else built (reusing the extraction of unchanged files from the newest
    snapshot of the same upstream) and cached. Without config it is built in memory."""
    tree = Tree(upstream, Path(root), paths, config)
    return open_or_build([tree], config, progress)[upstream], tree.stats


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


def _build(trees: list[Tree], config: Config | None, writable: bool, reporter: Reporter) -> dict[str, Store]:
    """Extract what no snapshot has, in one process pool for all trees (the biggest tree first,
    its biggest files first, so the pool stays busy to the end); a tree is resolved and written
    as soon as its last file is in, while the pool goes on with the next."""
    t0 = time.perf_counter()
    for t in trees:
        t.choose()
        t.found = {p: replace(ex, file=replace(ex.file, blob=t.indexed[p]))
                   for p, ex in _reusable(config, t.upstream, t.indexed, t.meta["tool_version"]).items()}
        t.stats["cached_files"] = len(t.found)
        t.todo = sorted(((t.upstream, str(t.root), p, b) for p, b in t.indexed.items() if p not in t.found),
                        key=lambda a, t=t: -t.listing[a[2]][0])
        t.stats["parsed"] = len(t.todo)
        t.stats["phases"] = {"reuse": time.perf_counter() - t0}
        if t.todo:
            reporter.say(f"annotate: indexing {len(t.todo)} files of {t.upstream}")
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
    jobs = _workers(len(tasks), config.index_jobs() if config is not None else None)
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
        with reporter.bar("indexing", len(tasks)) as advance:
            for i, ex in results:
                trees[i].found[ex.file.path] = ex
                left[i] -= 1
                advance(1)
                if not left[i]:
                    finish(i)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return stores


def _resolve_and_store(t: Tree, config: Config | None, writable: bool) -> Store:
    from annotate.index import cache
    from annotate.index.resolve import resolve_upstream
    from annotate.index.store import create_store
    from annotate.index.uses import resolve_uses

    t1 = time.perf_counter()
    found = {p: t.found[p] for p in sorted(t.found)}
    files = {p: ex.file for p, ex in found.items()}
    arity = {k: v for ex in found.values() for k, v in ex.arity.items()}
    resolved = resolve_upstream(files, arity, {p: ex.nargs for p, ex in found.items()},
                                {p: ex.receivers for p, ex in found.items()})
    uses = resolve_uses(resolved, {p: ex.mentions for p, ex in found.items()})
    resolved = {p: replace(fi, uses=uses[p]) if p in uses else fi for p, fi in resolved.items()}
    t2 = time.perf_counter()
    store = create_store(t.path if writable else None, t.meta, found, resolved)
    if writable:
        cache.prune_snapshots(config, t.upstream, t.path)
    t.found = {}
    t.stats["phases"].update(resolve=t2 - t1, write=time.perf_counter() - t2)
    return store

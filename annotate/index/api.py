"""The index as a library: `load_index(config)` for the pinned sources, `index_directory` for
any tree. Other stages import this module; they never parse the CLI's output."""

from __future__ import annotations

import difflib
import os
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from annotate.config import Config
from annotate.errors import AnnotateError, Diagnostic, UsageError
from annotate.fetch.lock import git_blob_id
from annotate.index.model import CallEdge, FileIndex, MemoryFact, Symbol, bare_name, language_of, parse_symbol

SKIP_DIRS = {".git", "__pycache__", "node_modules", ".github"}


# ---- the Index ----------------------------------------------------------------------------

class Index:
    """Read-only view over the FileIndex of one or more upstreams (edges resolved)."""

    def __init__(self, files: dict[str, dict[str, FileIndex]], roots: dict[str, Path],
                 stats: dict | None = None):
        import gc

        was = gc.isenabled()
        gc.disable()  # building the maps allocates ~10^6 list cells; GC passes only slow it
        try:
            self._build(files, roots, stats)
        finally:
            if was:
                gc.enable()

    def _build(self, files, roots, stats) -> None:
        self._files = files  # upstream -> path -> FileIndex
        self._roots = roots
        self.stats = stats or {}
        self._sources: dict[tuple[str, str], str] = {}
        self._by_key: dict[str, Symbol] = {}
        self._by_qname: dict[str, list[Symbol]] = defaultdict(list)
        self._by_name: dict[str, list[Symbol]] = defaultdict(list)
        self._callees: dict[str, list[CallEdge]] = defaultdict(list)
        self._callers: dict[str, list[CallEdge]] = defaultdict(list)
        self._facts: dict[str, list[MemoryFact]] = defaultdict(list)
        self._file_syms: dict[tuple[str, str], list[Symbol]] = {}
        for up, by_path in files.items():
            for path, fi in by_path.items():
                syms = sorted(fi.symbols, key=lambda s: (s.start_line, s.end_line))
                self._file_syms[(up, path)] = syms
                for s in syms:
                    self._by_key[s.key] = s
                    self._by_qname[s.qualified_name].append(s)
                    self._by_name[s.name].append(s)
                for e in fi.edges:
                    self._callees[e.caller].append(e)
                    for k in e.callees:
                        self._callers[k].append(e)
                for f in fi.facts:
                    self._facts[f.symbol].append(f)

    # -- files --
    def upstreams(self) -> list[str]:
        return list(self._files)

    def root(self, upstream: str) -> Path:
        return self._roots[upstream]

    def files(self, upstream: str | None = None) -> list[FileIndex]:
        ups = [upstream] if upstream else list(self._files)
        return [fi for up in ups for _, fi in sorted(self._files.get(up, {}).items())]

    def file(self, upstream: str, path: str) -> FileIndex:
        try:
            return self._files[upstream][path]
        except KeyError:
            raise UsageError(f"{upstream}:{path} is not in the index",
                             hint=_near_hint(path, list(self._files.get(upstream, {})))) from None

    def source(self, upstream: str, path: str) -> str:
        key = (upstream, path)
        if key not in self._sources:
            self.file(upstream, path)
            data = (self._roots[upstream] / path).read_bytes()
            self._sources[key] = data.decode("utf-8", "replace")
        return self._sources[key]

    # -- symbols --
    def symbols_in(self, upstream: str, path: str) -> list[Symbol]:
        self.file(upstream, path)
        return list(self._file_syms.get((upstream, path), []))

    def all_symbols(self) -> list[Symbol]:
        return [s for syms in self._file_syms.values() for s in syms]

    def symbol(self, key: str) -> Symbol:
        try:
            return self._by_key[key]
        except KeyError:
            raise UsageError(f"no symbol with key {key!r}") from None

    def find(self, name: str, upstream: str | None = None) -> list[Symbol]:
        """Exact qualified name, else a suffix on '::' (or '.') boundaries, else the bare name."""
        name = name.strip()

        def ok(s: Symbol) -> bool:
            return upstream is None or s.upstream == upstream

        exact = [s for s in self._by_qname.get(name, ()) if ok(s)]
        if exact:
            return _ordered(exact)
        last = bare_name(name)
        pool = [s for s in self._by_name.get(last, ()) if ok(s)]
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
            pool = sorted({s.qualified_name for s in self.all_symbols() if upstream is None or s.upstream == upstream})
            near = difflib.get_close_matches(name, pool, n=8, cutoff=0.6)
            if not near:
                bare = bare_name(name)
                names = sorted({s.name for s in self.all_symbols()})
                near_bare = difflib.get_close_matches(bare, names, n=5, cutoff=0.6)
                near = [s.qualified_name for b in near_bare for s in self._by_name[b]][:8]
            hint = ("nearest names: " + ", ".join(dict.fromkeys(near))) if near else "no similar names"
            raise UsageError(f"unknown symbol '{spec}'", hint=hint)
        listing = "\n".join(f"    {s.upstream}:{s.qualified_name}@{s.path}:{s.start_line}" for s in cands[:30])
        more = f"\n    ... and {len(cands) - 30} more" if len(cands) > 30 else ""
        raise UsageError(f"ambiguous symbol '{spec}': {len(cands)} definitions",
                         hint="name one of them exactly:\n" + listing + more)

    def parse_spec(self, spec: str) -> tuple[str | None, str, str | None, int | None]:
        s = parse_symbol(spec, list(self._files))
        return s.upstream, s.name, s.path, s.line

    def diagnostics(self) -> list[Diagnostic]:
        """Per-file problems (a file that failed to extract), as warnings naming the file."""
        out = []
        for up, by_path in self._files.items():
            for path, fi in by_path.items():
                for msg in fi.diagnostics:
                    out.append(Diagnostic("warning", msg, file=f"{up}:{path}", code="index-extract"))
        return out

    # -- graph and facts --
    def callees(self, sym: Symbol) -> list[CallEdge]:
        return sorted(self._callees.get(sym.key, []), key=lambda e: (e.line, e.column))

    def callers(self, sym: Symbol) -> list[CallEdge]:
        return sorted(self._callers.get(sym.key, []), key=lambda e: (e.path, e.line, e.column))

    def facts(self, sym: Symbol) -> list[MemoryFact]:
        return sorted(self._facts.get(sym.key, []), key=lambda f: (f.line, f.kind))

    def callgraph(self, sym: Symbol, reverse: bool = False, depth: int = 1) -> list[CallEdge]:
        """Edges reachable from `sym` within `depth` steps (callers' edges when reverse)."""
        out: list[CallEdge] = []
        seen_edges: set = set()
        frontier = [sym.key]
        visited = {sym.key}
        for _ in range(max(depth, 0)):
            nxt = []
            for key in frontier:
                s = self._by_key.get(key)
                if s is None:
                    continue
                edges = self.callers(s) if reverse else self.callees(s)
                for e in edges:
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
        syms = self._file_syms.get((upstream, path), [])
        best = None
        for s in syms:
            if s.start_line > line:
                break
            if s.start_line <= line <= s.end_line and (best is None or s.end_line - s.start_line <= best.end_line - best.start_line):
                best = s
        return best

    def text_of(self, sym: Symbol) -> str:
        lines = self.source(sym.upstream, sym.path).splitlines(keepends=True)
        return "".join(lines[sym.start_line - 1:sym.end_line])


def _ordered(syms: list[Symbol]) -> list[Symbol]:
    return sorted(syms, key=lambda s: (s.upstream, s.path, s.start_line))


def _near_hint(path: str, paths: list[str]) -> str | None:
    near = difflib.get_close_matches(path, paths, n=5, cutoff=0.5)
    return ("nearest paths: " + ", ".join(near)) if near else None


# ---- building -----------------------------------------------------------------------------

def source_files(root: Path, paths: list[str] | None = None) -> list[str]:
    """Every indexable file under root (or under the given sub-paths), '/'-separated, sorted."""
    out = []
    bases = [root / p for p in paths] if paths else [root]
    for base in bases:
        if base.is_file():
            rel = base.relative_to(root).as_posix()
            if language_of(rel):
                out.append(rel)
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for fn in filenames:
                if language_of(fn):
                    out.append((Path(dirpath) / fn).relative_to(root).as_posix())
    return sorted(set(out))


def _extract_one(args):
    from annotate.index.extract import Extracted, extract_full

    upstream, path, data, blob = args
    try:
        ex = extract_full(upstream, path, data)
    except Exception as exc:  # one unparsable file must not end the run; it is reported
        return Extracted(FileIndex(upstream=upstream, path=path, blob=blob, language=language_of(path) or "cuda",
                                   diagnostics=(f"extraction failed: {type(exc).__name__}: {exc}",)))
    return replace(ex, file=replace(ex.file, blob=blob))


def _workers(n_todo: int) -> int:
    env = os.environ.get("ANNOTATE_INDEX_JOBS")
    if env and env.isdigit():
        return max(1, int(env))
    if n_todo < 40:
        return 1
    return max(1, min(os.cpu_count() or 1, 16))


def _extract_many(todo: list[tuple[str, str, bytes, str]], progress: bool) -> list:
    jobs = _workers(len(todo))
    if jobs == 1:
        return [_extract_one(t) for t in todo]
    import multiprocessing as mp

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    out = []
    with ctx.Pool(jobs) as pool:
        for i, fi in enumerate(pool.imap(_extract_one, todo, chunksize=8)):
            out.append(fi)
            if progress and i % 200 == 0:
                print(f"  indexed {i}/{len(todo)} files", file=sys.stderr)
    return out


def build_upstream(upstream: str, root: Path, paths: list[str] | None = None,
                   config: Config | None = None, progress: bool = False) -> tuple[dict[str, FileIndex], dict]:
    """FileIndex (resolved) of every source file of one tree; uses the cache when config is given."""
    from annotate.index import cache
    from annotate.index.parse import resolve_version, tool_version
    from annotate.index.resolve import resolve_upstream

    t0 = time.perf_counter()
    version = tool_version()
    rels = source_files(root, paths)
    entries: list[tuple[str, str, bytes | None]] = []
    for rel in rels:
        data = (root / rel).read_bytes()
        entries.append((rel, git_blob_id(data), data))
    stats = {"files": len(entries), "parsed": 0, "cached_files": 0, "resolved_cache": False}
    tkey = cache.tree_key(resolve_version(), [(p, b) for p, b, _ in entries])
    if config is not None:
        rpath = cache.resolved_path(config, upstream, tkey)
        got = cache.read(rpath)
        if isinstance(got, dict):
            stats.update(resolved_cache=True, seconds=time.perf_counter() - t0)
            return got, stats
    from annotate.index.extract import Extracted

    found: dict[str, Extracted] = {}
    todo = []
    for rel, blob, data in entries:
        ex = None
        if config is not None:
            ex = cache.read(cache.file_entry_path(config, version, cache.file_key(upstream, rel, blob)))
        if isinstance(ex, Extracted):
            found[rel] = ex
            stats["cached_files"] += 1
        else:
            todo.append((upstream, rel, data, blob))
    if progress and todo:
        print(f"annotate: indexing {len(todo)} files of {upstream}", file=sys.stderr)
    for ex in _extract_many(todo, progress):
        found[ex.file.path] = ex
        stats["parsed"] += 1
        if config is not None:
            key = cache.file_key(upstream, ex.file.path, ex.file.blob)
            cache.write(config, cache.file_entry_path(config, version, key), ex)
    files = {p: found[p].file for p in sorted(found)}
    arity = {k: v for ex in found.values() for k, v in ex.arity.items()}
    resolved = resolve_upstream(files, arity, {p: ex.nargs for p, ex in found.items()},
                                {p: ex.receivers for p, ex in found.items()})
    if config is not None:
        cache.touch_version(config, version)
        cache.prune_versions(config, version)
        rpath = cache.resolved_path(config, upstream, tkey)
        cache.write(config, rpath, resolved)
        cache.prune_resolved(config, upstream, rpath)
    stats["seconds"] = time.perf_counter() - t0
    return resolved, stats


def index_directory(upstream: str, root: Path, paths: list[str] | None = None,
                    config: Config | None = None) -> Index:
    """Index any tree (another version of an upstream, a test fixture dir). Not cached unless a
    config is given."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise AnnotateError(f"{root}: not a directory")
    files, stats = build_upstream(upstream, root, paths, config=config)
    return Index({upstream: files}, {upstream: root}, {upstream: stats})


def fetched_roots(config: Config, upstreams: list[str] | None = None) -> dict[str, Path]:
    """upstream -> checkout root of every fetched pin (the fetch stage decides what 'fetched' is)."""
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
    return out


def load_index(config: Config, upstreams: list[str] | None = None, progress: bool = False) -> Index:
    """The index of every fetched pin (or of `upstreams`), cached by content in config.index_dir()."""
    from filelock import FileLock

    roots = fetched_roots(config, upstreams)
    if not roots:
        which = ", ".join(upstreams) if upstreams else "no pinned upstream"
        raise AnnotateError(f"{which} is not fetched into {config.cache_dir}",
                            hint="run `annotate fetch` first")
    missing = [u for u in (upstreams or []) if u not in roots]
    if missing:
        raise AnnotateError(f"{', '.join(missing)} is not fetched into {config.cache_dir}",
                            hint=f"run `annotate fetch {' '.join(missing)}` first")
    files, stats = {}, {}
    lock_file = config.lock_path("index")
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    from annotate.upstreams import load_upstreams

    pins = load_upstreams(config)
    with FileLock(str(lock_file)):
        for up, root in roots.items():
            paths = [p for p in pins[up].index_paths() if (root / p).exists()]
            files[up], stats[up] = build_upstream(up, root, paths, config=config, progress=progress)
    return Index(files, roots, stats)

"""The index as a library: `load_index(config)` for the pinned sources, `index_directory` for
any tree. Other stages import this module; they never parse the CLI's output."""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Callable, Hashable, TypeVar

from annotate.config import Config
from annotate.errors import AnnotateError, Diagnostic, UsageError
# build_upstream and source_files are imported from here by tests and benchmarks (the benchmark
# also runs against trees older than index/build.py)
from annotate.index.build import Tree, build_upstream, open_or_build, source_files  # noqa: F401
from annotate.index.model import (CallEdge, FileIndex, MacroDef, MemoryFact, Symbol, TypeDef, Use, bare_name,
                                  parse_symbol)
from annotate.index.store import Store
from annotate.progress import Reporter

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

    def blobs(self, upstream: str) -> dict[str, str]:
        """path -> git blob id of every indexed file of `upstream` (no file is loaded)."""
        if upstream in self._loaded:
            return {p: fi.blob for p, fi in self._loaded[upstream].items()}
        st = self._stores.get(upstream)
        return st.blobs() if st is not None else {}

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

        def near() -> list[str]:
            pool = sorted({q for up, st in self._stores.items() if upstream is None or up == upstream
                           for q in st.qualified_names()})
            got = difflib.get_close_matches(name, pool, n=8, cutoff=0.6)
            if not got:
                names = sorted({n for st in self._stores.values() for n in st.names()})
                near_bare = difflib.get_close_matches(bare_name(name), names, n=5, cutoff=0.6)
                got = [s.qualified_name for b in near_bare for st in self._stores.values()
                       for s in st.with_name(b)][:8]
            return got

        return _one(spec, "symbol", self.find(name, upstream), path, line, near)

    # -- types and macros --
    def types_in(self, upstream: str, path: str) -> list[TypeDef]:
        return self._stores[upstream].types_in(path) if self.has_file(upstream, path) else []

    def macros_in(self, upstream: str, path: str) -> list[MacroDef]:
        return self._stores[upstream].macros_in(path) if self.has_file(upstream, path) else []

    def find_type(self, name: str, upstream: str | None = None) -> list[TypeDef]:
        """Like `find`: the exact qualified name, else a suffix on '::' (or '.') boundaries, else
        the bare name. Every specialisation of a template is a TypeDef of its own."""
        name = name.strip()
        stores = [st for up, st in self._stores.items() if upstream is None or up == upstream]
        exact = [t for st in stores for t in st.types_with_qualified_name(name)]
        if exact:
            return _ordered(exact)
        last = bare_name(name)
        pool = [t for st in stores for t in st.types_with_name(last)]
        suffix = [t for t in pool if t.qualified_name.endswith("::" + name) or t.qualified_name.endswith("." + name)]
        if suffix:
            return _ordered(suffix)
        return _ordered(pool) if name == last else []

    def find_macro(self, name: str, upstream: str | None = None) -> list[MacroDef]:
        """Every `#define` of that name (a macro defined in several files or `#if` branches has
        several)."""
        return _ordered([m for up, st in self._stores.items() if upstream is None or up == upstream
                         for m in st.macros_with_name(name.strip())])

    def resolve_type(self, spec: str) -> TypeDef:
        """[UPSTREAM:]qualified_name[@path[:line]] -> the one TypeDef it names, or UsageError."""
        upstream, name, path, line = self.parse_spec(spec)

        def near() -> list[str]:
            pool = sorted({q for up, st in self._stores.items() if upstream is None or up == upstream
                           for q in st.type_qualified_names()})
            return difflib.get_close_matches(name, pool, n=8, cutoff=0.6) or [
                q for q in pool if bare_name(q) == bare_name(name)][:8]

        return _one(spec, "type", self.find_type(name, upstream), path, line, near)

    def resolve_macro(self, spec: str) -> MacroDef:
        """[UPSTREAM:]NAME[@path[:line]] -> the one MacroDef it names, or UsageError."""
        upstream, name, path, line = self.parse_spec(spec)

        def near() -> list[str]:
            pool = sorted({n for up, st in self._stores.items() if upstream is None or up == upstream
                           for n in st.macro_names()})
            return difflib.get_close_matches(name, pool, n=8, cutoff=0.6)

        return _one(spec, "macro", self.find_macro(name, upstream), path, line, near)

    def type_def(self, key: str) -> TypeDef:
        st = self._stores.get(key.partition(":")[0])
        got = st.type_by_key(key) if st is not None else None
        if got is None:
            raise UsageError(f"no type with key {key!r}")
        return got

    def macro_def(self, key: str) -> MacroDef:
        st = self._stores.get(key.partition(":")[0])
        got = st.macro_by_key(key) if st is not None else None
        if got is None:
            raise UsageError(f"no macro with key {key!r}")
        return got

    def uses_by(self, sym: Symbol) -> list[Use]:
        """The types and macros `sym` uses (one Use per name: where it is first written)."""
        st, g = self._stores.get(sym.upstream), self._graphs.get(sym.upstream)
        if st is None:
            return []
        uses = g.uses_by.get(sym.key, []) if g is not None else st.uses_by(sym.key)
        return sorted(uses, key=lambda u: (u.line, u.column, u.kind, u.name))

    def _users(self, kind: str, key: str, upstream: str) -> list[Use]:
        st, g = self._stores.get(upstream), self._graphs.get(upstream)
        if st is None:
            return []
        uses = g.users.get((kind, key), []) if g is not None else st.users_of(kind, key)
        return sorted(uses, key=lambda u: (u.path, u.line, u.column))

    def type_users(self, t: TypeDef) -> list[Use]:
        """The functions that use the type (declare, take, name as a template argument or scope)."""
        return self._users("type", t.key, t.upstream)

    def macro_users(self, m: MacroDef) -> list[Use]:
        """The functions that invoke the macro (in their head or body)."""
        return self._users("macro", m.key, m.upstream)

    def methods_of(self, t: TypeDef) -> list[Symbol]:
        """The member functions defined for this type: those defined inside its body, and (when
        it is the only definition of its name) those defined out of class as `T::f`."""
        st = self._stores.get(t.upstream)
        if st is None or t.kind == "enum":
            return []
        sep = "." if t.kind == "python-class" else "::"
        prefix = t.qualified_name + sep
        inside = [s for s in st.symbols_in(t.path) if t.start_line <= s.start_line and s.end_line <= t.end_line
                  and s.qualified_name.startswith(prefix) and sep not in s.qualified_name[len(prefix):]]
        if len(st.types_with_qualified_name(t.qualified_name)) == 1:
            seen = {s.key for s in inside}
            inside += [s for s in st.with_qualified_name_prefix(prefix) if s.key not in seen
                       and sep not in s.qualified_name[len(prefix):]]
        return _ordered(inside)

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

    def text_of(self, sym: Symbol | TypeDef | MacroDef) -> str:
        """The definition's lines (a function's, a type's or a macro's) as they are in the file."""
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
    """Edges, facts and uses of a loaded upstream by key, in store order (what the store's
    queries answer, without a query per function)."""

    def __init__(self, files):
        self.callees: dict[str, list[CallEdge]] = {}
        self.callers: dict[str, list[CallEdge]] = {}
        self.facts: dict[str, list[MemoryFact]] = {}
        self.uses_by: dict[str, list[Use]] = {}
        self.users: dict[tuple[str, str], list[Use]] = {}
        for fi in files:
            for u in fi.uses:
                self.uses_by.setdefault(u.user, []).append(u)
                for k in dict.fromkeys(u.targets):
                    self.users.setdefault((u.kind, k), []).append(u)
            for e in fi.edges:
                self.callees.setdefault(e.caller, []).append(e)
                for k in dict.fromkeys(e.callees):
                    self.callers.setdefault(k, []).append(e)
            for f in fi.facts:
                self.facts.setdefault(f.symbol, []).append(f)


def named_kind(index: "Index", spec: str) -> str:
    """What a SYMBOL names: "function" when some function has that name, else "type" or "macro"
    when one of those has it, else "function" (whose lookup then says it is unknown, with the
    nearest names). `annotate show` and `annotate new` decide with it when no flag says."""
    upstream, name, _, _ = index.parse_spec(spec)
    if index.find(name, upstream):
        return "function"
    if index.find_type(name, upstream):
        return "type"
    if index.find_macro(name, upstream):
        return "macro"
    return "function"


def _ordered(syms: list) -> list:
    return sorted(syms, key=lambda s: (s.upstream, s.path, s.start_line))


def _one(spec: str, what: str, cands: list, path: str | None, line: int | None, near: Callable[[], list[str]]):
    """The one definition of `cands` that `@path[:line]` leaves (line = the start line, or any line
    inside), or UsageError: the candidates when several are left, the nearest names when none."""
    if path is not None:
        cands = [s for s in cands if s.path == path or s.path.endswith("/" + path)]
        if line is not None:
            exact = [s for s in cands if s.start_line == line]
            cands = exact or [s for s in cands if s.start_line <= line <= s.end_line]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        got = near()
        hint = ("nearest names: " + ", ".join(dict.fromkeys(got))) if got else "no similar names"
        raise UsageError(f"unknown {what} '{spec}'", hint=hint)
    listing = "\n".join(f"    {s.key}" for s in cands[:30])
    more = f"\n    ... and {len(cands) - 30} more" if len(cands) > 30 else ""
    raise UsageError(f"ambiguous {what} '{spec}': {len(cands)} definitions",
                     hint="name one of them exactly:\n" + listing + more)


def _near_hint(path: str, paths: list[str]) -> str | None:
    near = difflib.get_close_matches(path, paths, n=5, cutoff=0.5)
    return ("nearest paths: " + ", ".join(near)) if near else None


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
    """(the pins, upstream -> root of those of `upstreams` (default all) that are fetched)."""
    from annotate.fetch.api import fetched_root  # the fetch stage decides what "fetched" means
    from annotate.upstreams import load_upstreams

    pins = load_upstreams(config)
    names = list(upstreams) if upstreams else list(pins)
    unknown = [n for n in names if n not in pins]
    if unknown:
        raise UsageError(f"unknown upstream '{unknown[0]}'", hint="known upstreams: " + ", ".join(pins))
    roots = {n: fetched_root(config, n) for n in names}
    return pins, {n: Path(r) for n, r in roots.items() if r is not None}


def load_index(config: Config, upstreams: list[str] | None = None, progress: bool | Reporter = False) -> Index:
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
    trees = [Tree(up, root, [p for p in pins[up].index_paths() if (root / p).exists()], config,
                  pins[up].included_only_paths())
             for up, root in roots.items()]
    stores = open_or_build(trees, config, progress)
    return Index({t.upstream: stores[t.upstream] for t in trees}, roots, {t.upstream: t.stats for t in trees})

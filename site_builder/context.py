"""What every page of one build is planned from, gathered once: `SiteContext`, made from a
Project (its index, its annotations, its pins) and the harness runs; and the links between
pages that every plan makes (to a function, to a course ref, to a runs page).

Plain typed data only: no source text, no markup (Markdown is rendered by
`site_builder.markdown`, which sanitises it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from annotate.errors import AnnotateError, Diagnostic
# which files are sources, and in which language, is the index's decision (one function for both)
from annotate.index.model import CallEdge, FileIndex, IndexView, MacroDef, Symbol, TypeDef, language_of
from annotate.notes.model import AnnotationSet, Course, FunctionNote, MacroNote, Text, TypeNote
from annotate.upstreams import Upstream
from site_builder import names
from site_builder.compiled import CompiledSite, LazyCompiledSite, compiled_site
from site_builder.markdown import plain_text, render_markdown
from site_builder.model import Label, Link, TextView, msg
from site_builder.runs import KernelRuns
from site_builder.traces import TraceData

if TYPE_CHECKING:
    from annotate.harness.compiled import CompiledView
    from annotate.project import Project

FileKey = tuple[str, str]  # (upstream, path)
# kernel -> ((qualified name in the spec, Symbol.keys of its rendered definitions), ...)
RunSymbols = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class IndexPart:
    """The part of a context that depends on the index and the pins alone: kept in the index's
    memo (`Index.memo`), so the rebuilds of `annotate serve`, which keep one index, make it once."""

    rendered: Mapping[FileKey, FileIndex]  # the files the site shows, sorted
    symbols: Mapping[str, Symbol]  # Symbol.key -> Symbol, in rendered files
    all_symbols: Mapping[str, Symbol]  # Symbol.key -> Symbol, the whole index


@dataclass(frozen=True)
class SiteContext:
    """Everything the page plans of one build read, typed and read-only (frozen; the mappings
    are typed read-only and nothing writes to them after make_context)."""

    index: IndexView
    upstreams: Mapping[str, Upstream]  # the pins this build renders
    part: IndexPart
    notes: Mapping[str, FunctionNote]  # Symbol.key -> the reviewer's note (rendered files only)
    courses: Mapping[str, Course]  # course id -> course map, in file order
    steps: Mapping[str, tuple[str, int]]  # step id -> (course id, index of the step in it)
    file_overviews: Mapping[FileKey, Text]
    file_diagnostics: Mapping[FileKey, tuple[str, ...]]  # annotation problems, as text, per source file
    diagnostics: tuple[str, ...]  # every annotation problem, as text (the home page)
    runs: tuple[KernelRuns, ...]  # harness kernels, by name
    runs_problems: tuple[str, ...]  # specs that do not load
    run_symbols: Mapping[str, RunSymbols]  # kernel -> the definitions its spec names
    harness_of: Mapping[str, tuple[str, ...]]  # Symbol.key -> kernels whose spec names it
    repo_root: Path | None = None  # record and spec paths are shown relative to it
    # TypeDef.key / MacroDef.key -> the reviewer's note (definitions in rendered files only)
    type_notes: Mapping[str, TypeNote] = field(default_factory=dict)
    macro_notes: Mapping[str, MacroNote] = field(default_factory=dict)
    annotations: AnnotationSet = field(default_factory=AnnotationSet)
    # the committed SASS, facts, profiles (LazyCompiledSite after a note edit: the same questions)
    compiled: CompiledSite | LazyCompiledSite = field(default_factory=CompiledSite)
    any_type_notes: bool = False  # some type or macro is annotated (in any file: users link to it)
    noted_files: frozenset[FileKey] = frozenset()  # rendered files with an annotated type or macro
    traces: tuple[TraceData, ...] = ()  # the traced entry points (annotate trace), in the rules' order
    trace_of: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # Symbol.key -> entries through it

    @property
    def rendered(self) -> Mapping[FileKey, FileIndex]:
        return self.part.rendered

    @property
    def symbols(self) -> Mapping[str, Symbol]:
        return self.part.symbols

    @property
    def all_symbols(self) -> Mapping[str, Symbol]:
        return self.part.all_symbols

    def calls(self, key: str) -> Sequence[CallEdge]:
        """Outgoing edges of a function (asked of the index, which keeps both directions)."""
        sym = self.part.all_symbols.get(key)
        return self.index.callees(sym) if sym is not None else ()

    def callers(self, key: str) -> Sequence[CallEdge]:
        sym = self.part.all_symbols.get(key)
        return self.index.callers(sym) if sym is not None else ()

    def find(self, name: str, upstream: str | None = None) -> list[Symbol]:
        """Definitions of a name; none (never an error) for a name the index does not know."""
        try:
            return self.index.find(name, upstream=upstream)
        except AnnotateError:
            return []


def rendered_paths(index: IndexView, upstreams: Mapping[str, Upstream],
                   only: Sequence[str] = (), also: Iterable[FileKey] = ()) -> dict[FileKey, FileIndex]:
    """The files the site shows: under an upstream's `render` paths, C/CUDA or Python, and the
    indexed files in `also` (`shown_beyond_render`)."""
    out = {}
    extra: dict[str, set[str]] = {}
    for up, path in also:
        extra.setdefault(up, set()).add(path)
    for name in index.upstreams():
        up = upstreams.get(name)
        if up is None or (only and name not in only):
            continue
        more = extra.get(name, ())
        for fi in index.files(name):
            if language_of(fi.path) and (any(fi.path.startswith(r) for r in up.render) or fi.path in more):
                out[(name, fi.path)] = fi
    return dict(sorted(out.items()))


def shown_beyond_render(index: IndexView, annotations: AnnotationSet | None) -> tuple[FileKey, ...]:
    """Indexed files outside every `render` path that the site shows all the same: the files an
    annotation file is about, and the files a course ref names (the file, or the definitions of
    the name, as `annotate status --courses` counts them). The CuTe headers Flash-Attention uses
    are indexed as a submodule, not rendered, yet carry notes and sit on phase 4.2's reading list."""
    if annotations is None:
        return ()
    from annotate.notes.api import ref_files

    out: set[FileKey] = set()
    for af in annotations.files:
        if af.upstream and af.path and index.has_file(af.upstream, af.path):
            out.add((af.upstream, af.path))
    for course in annotations.courses:
        for step in course.steps:
            for ref in step.refs:
                up = ref.partition(":")[0]
                out.update((up, p) for p in ref_files(index, ref, annotations))
    return tuple(sorted(k for k in out if language_of(k[1])))


def index_part(index: IndexView, upstreams: Mapping[str, Upstream], only: Sequence[str] = (),
               also: Iterable[FileKey] = ()) -> IndexPart:
    rendered = rendered_paths(index, upstreams, only, also)
    all_symbols: dict[str, Symbol] = {}
    symbols: dict[str, Symbol] = {}
    for fi in index.files():
        shown = (fi.upstream, fi.path) in rendered
        for s in fi.symbols:
            all_symbols[s.key] = s
            if shown:
                symbols[s.key] = s
    # Plain dicts behind read-only types: these are read in the planner's innermost loops, where a
    # MappingProxyType lookup costs noticeably more than a dict's. Nothing writes to them.
    return IndexPart(rendered, symbols, all_symbols)


class _LazyFiles(Mapping[FileKey, FileIndex]):
    """The rendered files of an index, each read from it when first asked for: a build after a
    note edit plans a few pages and must not read the whole index for them."""

    def __init__(self, index: IndexView, keys: list[FileKey]):
        self._index, self._keys, self._set = index, keys, frozenset(keys)
        self._got: dict[FileKey, FileIndex] = {}

    def __getitem__(self, key: FileKey) -> FileIndex:
        if key not in self._set:
            raise KeyError(key)
        got = self._got.get(key)
        if got is None:
            got = self._got[key] = self._index.file(*key)
        return got

    def __contains__(self, key: object) -> bool:
        return key in self._set

    def loaded(self, key: FileKey) -> FileIndex | None:
        """The file when something already asked for it, else None (nothing is read)."""
        return self._got.get(key)

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class _LazySymbols(Mapping[str, Symbol]):
    """Symbol.key -> Symbol as `index_part` maps them (of one key, the last definition in its
    file), read a file at a time when first asked for; only rendered files when `rendered` is
    given."""

    def __init__(self, index: IndexView, rendered: _LazyFiles | None):
        self._index, self._rendered = index, rendered
        self._files: dict[FileKey, dict[str, Symbol]] = {}

    def _file(self, key: FileKey) -> dict[str, Symbol]:
        got = self._files.get(key)
        if got is None:
            # the file's definitions only (one query), not its whole FileIndex: a page asks about
            # the targets of its calls in a score of other files
            if self._rendered is not None:
                loaded = self._rendered.loaded(key)
                syms = loaded.symbols if loaded is not None else \
                    self._index.symbols_in(*key) if key in self._rendered else ()
            else:
                syms = self._index.symbols_in(*key)
            got = self._files[key] = {s.key: s for s in syms}
        return got

    def __getitem__(self, key: str) -> Symbol:
        try:
            up, _qname, path, _line = names.split_key(key)
        except ValueError:
            raise KeyError(key) from None
        if self._rendered is not None and (up, path) not in self._rendered:
            raise KeyError(key)
        if self._rendered is None and not self._index.has_file(up, path):
            raise KeyError(key)
        return self._file((up, path))[key]

    def _keys(self) -> list[FileKey]:
        if self._rendered is not None:
            return list(self._rendered)
        return [(fi.upstream, fi.path) for fi in self._index.files()]

    def __iter__(self):
        seen: set[str] = set()
        for fk in self._keys():
            for k in self._file(fk):
                if k not in seen:
                    seen.add(k)
                    yield k

    def __len__(self) -> int:
        return sum(1 for _ in self)


def lazy_index_part(index: IndexView, upstreams: Mapping[str, Upstream], only: Sequence[str] = (),
                    also: Iterable[FileKey] = ()) -> IndexPart:
    """`index_part` that reads the index only as far as it is asked: the file list at once, a
    file's definitions, calls and facts when something on a page needs them."""
    keys = []
    also = set(also)
    for name in index.upstreams():
        up = upstreams.get(name)
        if up is None or (only and name not in only):
            continue
        keys += [(name, p) for p in index.paths(name)
                 if language_of(p) and (any(p.startswith(r) for r in up.render) or (name, p) in also)]
    rendered = _LazyFiles(index, sorted(keys))
    return IndexPart(rendered, _LazySymbols(index, rendered), _LazySymbols(index, None))


def memo_index_part(index: IndexView, upstreams: Mapping[str, Upstream], only: Sequence[str] = (),
                    also: Iterable[FileKey] = ()) -> IndexPart:
    """`index_part`, made once per index, pins and extra files: `annotate serve` rebuilds against
    one index, so a note edit does not walk the whole index again."""
    also = tuple(sorted(set(also)))
    key = ("site_builder.context.index_part",
           tuple(sorted((k, v.commit, v.render) for k, v in upstreams.items())), tuple(only), also)
    return index.memo(key, lambda: index_part(index, upstreams, only, also))


def site_context(project: "Project", lazy: bool = False,
                 kernels_of: Mapping[str, tuple[str, ...]] | None = None) -> SiteContext:
    """The context of a build of `project`: its selected pins, index and annotations, and the
    harness runs of its repository with the compiled view committed for each. `lazy`: over
    `lazy_index_part`, for a build that plans a few pages (a note edit); with `kernels_of`
    (source page -> the harnesses whose records name its file, as the last build of the same
    records found them) a page's compiled view reads only those records."""
    from annotate.harness.compiled import load_compiled
    from site_builder.runs import load_runs
    from site_builder.traces import load_traces

    pins = project.selected
    also = shown_beyond_render(project.index, project.annotations)
    part = (lazy_index_part if lazy else memo_index_part)(project.index, pins, project.only, also)
    if lazy and kernels_of is not None:
        # the pages of a note edit: source pages, which name a kernel's runs page but show none
        # of its records (the runs pages and the home page are left as the last build made them)
        runs, problems = load_runs(project.config, records=False)
        by_file = {k: kernels_of.get(names.source_page(*k), ()) for k in part.rendered}
        return make_context(project.index, part, project.annotations, pins, runs, problems,
                            repo_root=project.config.repo_root, traces=load_traces(project),
                            compiled_by_file=(lambda kernel: load_compiled(project.config, kernel), by_file))
    runs, problems = load_runs(project.config)
    # read once per build: every committed SASS record, fact report, identity card and profile
    compiled = [load_compiled(project.config, kr.spec.name) for kr in runs]
    return make_context(project.index, part, project.annotations, pins, runs, problems,
                        repo_root=project.config.repo_root, compiled=compiled, traces=load_traces(project))


def make_context(index: IndexView, part: IndexPart, annotations: AnnotationSet | None,
                 upstreams: Mapping[str, Upstream], runs: Iterable[KernelRuns] = (),
                 runs_problems: Iterable[str] = (), repo_root: Path | None = None,
                 compiled: Iterable["CompiledView"] = (), traces: Iterable[TraceData] = (),
                 compiled_by_file: tuple[Callable[[str], "CompiledView"], Mapping[FileKey, tuple[str, ...]]] | None = None,
                 ) -> SiteContext:
    """`compiled_by_file`: (load a harness's view, file -> the harnesses to load for it), read
    as pages ask (`LazyCompiledSite`), instead of the views in `compiled`."""
    runs = tuple(runs)
    run_symbols, harness_of = _harness_links(index, part, runs)
    aset = annotations or AnnotationSet()
    notes = {}
    for fn in aset.functions():
        # the notes of rendered definitions, the first of each (AnnotationSet.for_symbol)
        s = fn.symbol
        if s is not None and s.key not in notes and (s.upstream, s.path) in part.rendered \
                and aset.for_symbol(s) is fn:
            notes[s.key] = fn
    type_notes: dict[str, TypeNote] = {}
    macro_notes: dict[str, MacroNote] = {}
    for t in aset.types():
        if t.typedef is not None and (t.typedef.upstream, t.typedef.path) in part.rendered:
            type_notes.setdefault(t.typedef.key, t)
    for m in aset.macros():
        if m.macro is not None and (m.macro.upstream, m.macro.path) in part.rendered:
            macro_notes.setdefault(m.macro.key, m)
    spec_keys = {k: dict(v) for k, v in run_symbols.items()}
    if compiled_by_file is not None:
        site = LazyCompiledSite(compiled_by_file[0], [kr.spec.name for kr in runs], compiled_by_file[1],
                                part.rendered, spec_keys)
    else:
        site = compiled_site(compiled, part.rendered, spec_keys)
    traces = tuple(t for t in traces if t.entry_key in part.all_symbols)
    trace_of: dict[str, tuple[str, ...]] = {}
    for t in traces:
        for key in t.through:
            if t.entry not in trace_of.get(key, ()):
                trace_of[key] = trace_of.get(key, ()) + (t.entry,)
    overviews = {(af.upstream, af.path): af.overview for af in aset.files
                 if af.upstream and af.path and af.overview}
    per_file: dict[FileKey, list[str]] = {}
    ups = list(dict.fromkeys(u for u, _ in part.rendered))
    for d in aset.diagnostics:
        where = diagnostic_target(d, part.rendered, ups)
        if where:
            per_file.setdefault(where, []).append(diagnostic_text(d))
    return SiteContext(
        index=index, upstreams=dict(upstreams), part=part,
        notes=notes, courses={c.id: c for c in aset.courses}, steps=_steps(aset.courses),
        file_overviews=overviews, file_diagnostics={k: tuple(v) for k, v in per_file.items()},
        diagnostics=tuple(diagnostic_text(d) for d in aset.diagnostics),
        runs=runs, runs_problems=tuple(runs_problems), run_symbols=run_symbols,
        harness_of=harness_of, repo_root=repo_root, type_notes=type_notes, macro_notes=macro_notes,
        annotations=aset, compiled=site,
        any_type_notes=any(True for _ in aset.types()) or any(True for _ in aset.macros()),
        noted_files=frozenset((n.definition.upstream, n.definition.path)
                              for n in (*type_notes.values(), *macro_notes.values())),
        traces=traces, trace_of=trace_of)


def _steps(courses: Iterable[Course]) -> dict[str, tuple[str, int]]:
    """Step id -> (course, index); of two steps with one id, the first is linked to."""
    out: dict[str, tuple[str, int]] = {}
    for c in courses:
        for i, st in enumerate(c.steps):
            out.setdefault(st.id, (c.id, i))
    return out


def _harness_links(index: IndexView, part: IndexPart, runs: tuple[KernelRuns, ...]):
    """(kernel -> the definitions its spec names, Symbol.key -> the kernels naming it)."""
    run_symbols: dict[str, RunSymbols] = {}
    harness_of: dict[str, tuple[str, ...]] = {}
    for kr in runs:
        spec = kr.spec
        found = []
        for qname in (*spec.symbols, *spec.launchers):
            keys = spec_symbol_keys(index, part, spec.upstream, qname, kr.includes)
            found.append((qname, keys))
            for k in keys:
                if spec.name not in harness_of.get(k, ()):
                    harness_of[k] = harness_of.get(k, ()) + (spec.name,)
        run_symbols[spec.name] = tuple(found)
    return run_symbols, harness_of


def spec_symbol_keys(index: IndexView, part: IndexPart, upstream: str, qname: str,
                     includes: Sequence[str] = ()) -> tuple[str, ...]:
    """The rendered definitions a harness spec's symbol names: exact qualified name first;
    of several, those in a header the harness includes directly when there are any."""
    try:
        found = index.find(qname, upstream=upstream)
    except AnnotateError:  # an unknown name stays plain text
        return ()
    exact = [s for s in found if s.qualified_name == qname] or found
    direct = [s for s in exact if any(s.path == i or s.path.endswith("/" + i) for i in includes)]
    if len({s.path for s in exact}) > 1 and direct:
        exact = direct
    return tuple(s.key for s in exact if s.key in part.symbols)


def diagnostic_target(d: Diagnostic, rendered: Mapping[FileKey, FileIndex],
                      upstreams: Iterable[str] | None = None) -> FileKey | None:
    """The rendered file an annotation problem is about: the first (in `rendered`'s order) whose
    "<upstream>/<path>" ends the problem's file name (without .yaml). `upstreams`: those of
    `rendered`, when the caller knows them."""
    f = (d.file or "").replace("\\", "/")
    if f.endswith(".yaml"):
        f = f[: -len(".yaml")]
    found = []
    for up in (upstreams if upstreams is not None else dict.fromkeys(u for u, _ in rendered)):
        at = f.find(up + "/")
        while at >= 0:
            key = (up, f[at + len(up) + 1:])
            if key in rendered:
                found.append(key)
            at = f.find(up + "/", at + 1)
    if len(found) > 1:  # a path that ends another's: the first of them in `rendered`
        return next(k for k in rendered if k in found)
    return found[0] if found else None


def diagnostic_text(d: Diagnostic) -> str:
    where = f"line {d.line}: " if d.line else ""
    sym = f" [{d.symbol}]" if d.symbol else ""
    return f"{d.severity}: {where}{d.message}{sym}"


# ---- text --------------------------------------------------------------------------------

def text_view(t: Text | None) -> TextView | None:
    """An annotation text -> its rendered (sanitised) Markdown, per language."""
    if t is None or (not t.en and not t.zh):
        return None
    return TextView(render_markdown(t.en), render_markdown(t.zh) if t.zh else None)


def label(t: Text | None, default: str = "") -> Label | str:
    """A short text (a title) in both languages, as plain text; `default` when there is none."""
    if t is None or (not t.en and not t.zh):
        return default
    return Label(t.en, t.zh)


def text_plain(t: Text | None, lang: str = "en") -> str:
    """A text reduced to searchable plain text, in one language ("" when not written in it)."""
    if t is None:
        return ""
    return plain_text(t.zh if lang == "zh" else t.en)


# ---- links -------------------------------------------------------------------------------

def symbol_link(ctx: SiteContext, from_page: str, key: str, label: str | None = None,
                titled: bool = True) -> Link:
    """A link to a function's heading, or plain text when its file is not on the site.

    `titled=False` leaves out the hover title (the long lists repeat it thousands of times).
    """
    sym = ctx.all_symbols.get(key)
    lab = label or (sym.qualified_name if sym else names.split_key(key)[1])
    if sym is not None and key in ctx.symbols:
        page, anchor = names.symbol_href_target(key)
        return Link(lab, names.rel_href(from_page, page, anchor), f"{sym.path}:{sym.start_line}" if titled else "")
    if not titled:
        return Link(lab, None, "")
    return Link(lab, None, msg("link.not_rendered", where=f"{sym.path}:{sym.start_line}") if sym else msg("link.unresolved"))


def definition_link(ctx: SiteContext, from_page: str, d: TypeDef | MacroDef, label: str | None = None) -> Link:
    """A link to a type or a macro: its note's heading when annotated, else its first line;
    plain text when its file is not on the site."""
    what = "macro" if isinstance(d, MacroDef) else "type"
    lab = label or (d.qualified_name + (f"<{d.specialization}>" if what == "type" and d.specialization else ""))
    where = f"{d.path}:{d.start_line}"
    if (d.upstream, d.path) not in ctx.rendered:
        return Link(lab, None, msg("link.not_rendered", where=where))
    if d.key in (ctx.macro_notes if what == "macro" else ctx.type_notes):
        page, anchor = names.definition_href_target(d.key, what)
    else:
        page, anchor = names.source_page(d.upstream, d.path), names.line_anchor(d.start_line)
    return Link(lab, names.rel_href(from_page, page, anchor), where)


def resolve_ref(ctx: SiteContext, ref: str) -> FileKey | Symbol | TypeDef | MacroDef | None:
    """What a course reference ("upstream:path" or "upstream:qualified_name") names on the site:
    a rendered file, a rendered function (the first, of several), else a rendered type or macro
    (the annotated definition first, then a primary template before its specialisations), or
    nothing. The names are the ones `annotate check` accepts in a ref."""
    up, _, rest = ref.partition(":")
    if not rest:
        up, rest = "", ref
    if (up, rest) in ctx.rendered:
        return up, rest
    sym = next((s for s in ctx.find(rest, upstream=up or None) if s.key in ctx.symbols), None)
    if sym is not None:
        return sym
    for defs, notes in ((_lookup(ctx.index.find_type, rest, up), ctx.type_notes),
                        (_lookup(ctx.index.find_macro, rest, up), ctx.macro_notes)):
        shown = [d for d in defs if (d.upstream, d.path) in ctx.rendered]
        if shown:
            return min(shown, key=lambda d: (d.key not in notes, getattr(d, "specialization", None) is not None))
    return None


def _lookup(find, name: str, upstream: str) -> list:
    try:
        return find(name, upstream=upstream or None)
    except AnnotateError:  # a name the index cannot look up is not found
        return []


def ref_link(ctx: SiteContext, from_page: str, ref: str) -> Link:
    """A course reference -> a link to the file's page, the function's heading, or the type's or
    macro's (its note's heading, else its first line)."""
    target = resolve_ref(ctx, ref)
    if isinstance(target, Symbol):
        return symbol_link(ctx, from_page, target.key, label=target.qualified_name)
    if isinstance(target, (TypeDef, MacroDef)):
        return definition_link(ctx, from_page, target, label=target.qualified_name)
    if target is not None:
        return Link(target[1], names.rel_href(from_page, names.source_page(*target)), ref)
    return Link(ref, None, msg("link.not_found"))


def cite_link(ctx: SiteContext, from_page: str, cite: str) -> Link:
    """Code an answer cites: "upstream:path:first[-last]" links to the first line, a function to
    its heading; the label is what a reader looks for ("vec_dtypes.cuh:38–41")."""
    from annotate.notes.api import parse_cite

    up, path, first, last = parse_cite(cite)
    if first is None:
        return ref_link(ctx, from_page, cite)
    label = path.rsplit("/", 1)[-1] + f":{first}" + (f"–{last}" if last != first else "")
    if (up, path) not in ctx.rendered:
        return Link(label, None, msg("link.not_rendered", where=f"{path}:{first}"))
    return Link(label, names.rel_href(from_page, names.source_page(up, path), names.line_anchor(first)),
                f"{up}:{path}")


def trace_link(ctx: SiteContext, from_page: str, entry: str) -> Link:
    """A link to a traced entry point's page (the rules' name of the entry as its label)."""
    return Link(entry, names.rel_href(from_page, names.trace_page(entry)), f"annotate trace {entry}")


def runs_link(ctx: SiteContext, from_page: str, kernel: str) -> Link:
    """A link to a kernel's runs page; plain text when no such harness exists."""
    if any(kr.spec.name == kernel for kr in ctx.runs):
        return Link(kernel, names.rel_href(from_page, names.runs_page(kernel)), f"annotate run {kernel}")
    return Link(kernel, None, msg("link.no_harness"))

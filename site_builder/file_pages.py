"""One source page's plan (`model.FilePlan`): its definitions, the call links in its code, the
marks on its lines and the panels around each definition. No source text: `site_builder.code`
adds the tokenised lines in the worker processes.

What a page shows beyond the code comes from *sources*, listed in three tables:
- `MARK_SOURCES`: per-line marks: the index's memory facts (with the compiler's verdict on
  each), the SASS each line compiled to, and its share of a profiled launch's warp samples. A
  source gives each function's marks (and those of lines no function owns), a legend title and
  a label per kind;
- `PANEL_SOURCES`: per-function panels: the cross-reference list, the compiled resources, the
  annotated types and macros it uses, the call graph, the reviewer's note and the list of
  detected memory facts. A source gives a function's panels and, unless they follow from the
  index alone, a key of what else they depend on (for the page's cache key);
- `DEFINITION_SOURCES`: definitions drawn besides the functions: the annotated types and
  macros, each with its own heading, panels and notes at its lines.
A new source is one entry in a table, a function, and for a new panel type a dataclass in
`model.py` and a macro in `templates/panels.html.jinja2`.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable, Mapping

# which files are sources, and in which language, is the index's decision (one function for both)
from annotate.index.model import CallEdge, FileIndex, MacroDef, MemoryFact, Symbol, TypeDef, Use, language_of
from annotate.notes.model import FunctionNote, InlineNote, MacroNote, TypeNote
from site_builder import graph, names
from site_builder.compiled import (
    MAX_ON_MARK, OPCODE_FAMILIES, PLAIN, PLAIN_CSS, FileCompiled, LineEntry, ProfiledLine, counts_text,
    fact_verdict, family, named_counts,
)
from site_builder.context import (SiteContext, definition_link, label, ref_link, runs_link, symbol_link,
                                  text_view, trace_link)
from site_builder.facts import fact_label, fact_style, fact_words
from site_builder.model import (
    CallGraph,
    CallNote,
    CallNotesPanel,
    CodeLink,
    CompiledRef,
    Crumb,
    DefinitionView,
    FilePlan,
    GraphPanel,
    InlineNoteView,
    Legend,
    LegendEntry,
    Link,
    Mark,
    MarkCheck,
    MarkListPanel,
    MemberNoteView,
    Msg,
    MemoryPanel,
    MemoryView,
    NoteLinksPanel,
    NoteView,
    Panel,
    ProfileBody,
    ProfileView,
    ResourceRow,
    ResourcesPanel,
    SassBlock,
    SassBody,
    StallView,
    TextPanel,
    TracePathPanel,
    UsersPanel,
    UsesPanel,
    XRef,
    XRefPanel,
    msg,
)

MAX_CALLERS = 12  # callers listed per function (the rest are counted)
MAX_SITES = 3  # call sites listed per caller/callee pair
MAX_USERS = 12  # functions listed as users of a type or macro
MAX_SASS_LINES = 48  # SASS instructions listed per instantiation and line (the rest: `annotate sass`)
MAX_STALLS = 4  # stall reasons listed per profiled line
FACT_SOURCE = "fact"
SASS_SOURCE = "sass"
PROFILE_SOURCE = "profile"


@dataclass(frozen=True)
class FileScope:
    """The page being planned, as the sources see it."""

    ctx: SiteContext
    upstream: str
    path: str
    page: str
    fi: FileIndex
    edges_by_caller: Mapping[str, tuple[CallEdge, ...]]
    facts_by_symbol: Mapping[str, tuple[MemoryFact, ...]]
    compiled: FileCompiled | None = None  # what the committed SASS records say about this file
    # what the page's key and its plan both ask for, made once (a page rendered without a key
    # from the last build has both made in one worker): panels, definitions, note views
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def note(self, sym: Symbol) -> FunctionNote | None:
        return self.ctx.notes.get(sym.key)

    def panels(self, make: Callable[["FileScope", Symbol], Iterable[Panel]], sym: Symbol) -> tuple[Panel, ...]:
        """`make(self, sym)`, a panel source's panels, made once per page."""
        k = (make, sym.key)
        got = self.memo.get(k)
        if got is None:
            got = self.memo[k] = tuple(make(self, sym))
        return got

    def once(self, what: object, make: Callable[[], object]):
        """`make()`, once per page for `what`."""
        if what not in self.memo:
            self.memo[what] = make()
        return self.memo[what]

    def marks(self, sym: Symbol | None) -> tuple[Mark, ...]:
        """A function's marks, every source's (`None`: the marks of lines no function owns)."""
        return tuple(m for src in MARK_SOURCES for m in src.marks(self, sym))

    @cached_property
    def _compiled_owner(self) -> dict[int, str | None]:
        """Each line the compiled view has something on -> the Symbol.key of the innermost
        function holding it (None: no function does)."""
        fc = self.compiled
        if fc is None:
            return {}
        syms = sorted(self.fi.symbols, key=lambda s: (s.start_line, -s.end_line))
        out: dict[int, str | None] = {}
        for line in sorted(set(fc.sass) | set(fc.profiles)):
            owner = None
            for s in syms:  # later starts are nested deeper (or follow): the last match is innermost
                if s.start_line > line:
                    break
                if line <= s.end_line:
                    owner = s.key
            out[line] = owner
        return out

    @cached_property
    def refs(self) -> dict[tuple, str]:
        """(kernel, arch, mangled) of each instantiation, (kernel, shape, function) of each profiled
        launch, with code or samples on this page -> its number on the page ("1", "P1"): newest
        arch first, then in the order the lines meet them."""
        fc = self.compiled
        if fc is None:
            return {}
        seen: dict[tuple, int] = {}
        for entries in fc.sass.values():
            for e in entries:
                seen.setdefault((e.kernel, e.sass.arch, e.sass.function.mangled), len(seen))
        order = sorted(seen, key=lambda k: (-_arch_number(k[1]), seen[k]))
        out = {k: str(i + 1) for i, k in enumerate(order)}
        prof: dict[tuple, tuple] = {}
        for entries in fc.profiles.values():
            for p in entries:
                if p.line.samples > 0:
                    prof.setdefault((p.kernel, p.shape, p.function), (not p.current, len(prof)))
        for i, k in enumerate(sorted(prof, key=lambda k: prof[k])):
            out[k] = f"P{i + 1}"
        return out

    def compiled_refs(self) -> tuple[CompiledRef, ...]:
        from annotate.harness.ptxas import short_kernel_name

        fc = self.compiled
        if fc is None:
            return ()
        found: dict[str, CompiledRef] = {}
        for entries in fc.sass.values():
            for e in entries:
                ref = self.refs[(e.kernel, e.sass.arch, e.sass.function.mangled)]
                if ref not in found:
                    found[ref] = CompiledRef(ref, _runs_link(self.ctx, self.page, e.kernel), e.sass.arch,
                                             e.sass.function.short_name(200))
        for entries in fc.profiles.values():
            for p in entries:
                ref = self.refs.get((p.kernel, p.shape, p.function))
                if ref is not None and ref not in found:
                    found[ref] = CompiledRef(ref, _runs_link(self.ctx, self.page, p.kernel), "",
                                             short_kernel_name(p.function, 200), p.shape, p.device, p.current)
        return tuple(sorted(found.values(), key=lambda r: (r.ref.startswith("P"), int(r.ref.lstrip("P")))))

    def compiled_lines(self, sym: Symbol | None) -> list[int]:
        """The lines with compiled data that `sym` (None: no function) owns."""
        key = sym.key if sym is not None else None
        return [n for n, k in self._compiled_owner.items() if k == key]


# ---- mark sources ------------------------------------------------------------------------

@dataclass(frozen=True)
class MarkSource:
    name: str  # Mark.source
    legend_title: Msg
    marks: Callable[[FileScope, Symbol | None], Iterable[Mark]]  # a function's marks (None: lines no function owns)
    label: Callable[[str], str | Msg]  # a kind's label in the legend


def fact_marks(scope: FileScope, sym: Symbol | None) -> Iterable[Mark]:
    """The memory facts the index's rules found in a function, each with the compiler's verdict
    where a committed fact report checked it (joined by line and rule; the words stay the index's)."""
    if sym is None:
        return
    checked = scope.compiled.facts if scope.compiled is not None else {}
    for f in sorted(scope.facts_by_symbol.get(sym.key, ()), key=lambda f: (f.line, f.kind)):
        abbr, css = fact_style(f.kind)
        yield Mark(FACT_SOURCE, f.kind, f.line, abbr, css, fact_words(f.rule, f.detail),
                   check=fact_check(checked.get((f.line, f.rule), ())))


CHECK_SIGNS = {"confirmed": ("ok", "✓"), "nearby": ("near", "≈"), "not-confirmed": ("no", "✗"), "no-code": ("none", "∅")}


def fact_check(checks) -> MarkCheck | None:
    v = fact_verdict(checks)
    if v is None:
        return None
    state, sign = CHECK_SIGNS[v.status]
    ops, recs = counts_text(v.opcodes, 4) or "—", records_text(v.records)
    if v.status == "confirmed":
        title = msg("check.ok", found=ops, records=recs)
    elif v.status == "nearby":
        title = msg("check.near", found=ops, line=v.near_line or 0, records=recs)
    elif v.status == "not-confirmed":
        title = msg("check.no", found=ops, records=recs)
    else:
        title = msg("check.none", records=recs)
    return MarkCheck(state, sign, title)


def records_text(records: Iterable[str]) -> str:
    """Record labels grouped by kernel: "decode_kernel.sm90", "decode_kernel.sm80" ->
    "decode_kernel sm90/80"."""
    by_kernel: dict[str, list[str]] = {}
    for r in records:
        kernel, _, arch = r.rpartition(".sm")
        by_kernel.setdefault(kernel or r, []).append(arch)
    return ", ".join(f"{k} sm" + "/".join(a for a in archs if a) if any(archs) else k for k, archs in by_kernel.items())


def sass_marks(scope: FileScope, sym: Symbol | None) -> Iterable[Mark]:
    """What each line compiled to in the catalog kernels' featured instantiations: a marker
    naming its memory, tensor-core, shuffle and barrier opcodes (those of the calls inlined at
    the line too), or counting its instructions; it expands into the SASS per kernel and arch."""
    if scope.compiled is None:
        return
    for line in scope.compiled_lines(sym):
        entries = scope.compiled.sass.get(line)
        if entries:
            mark = _sass_mark(scope, line, entries)
            if mark is not None:
                yield mark


def _sass_mark(scope: FileScope, line: int, entries: tuple[LineEntry, ...]) -> Mark | None:
    newest = entries[0].sass.arch
    # the marker tells the largest instantiation of the newest arch; the expansion tells them all
    lead = max((e for e in entries if e.sass.arch == newest), key=lambda e: sum(e.sass.line.counts.values()))
    own = sum(lead.sass.line.counts.values())
    merged: Counter = Counter(lead.sass.line.counts)
    merged.update(lead.sass.line.via)
    named = named_counts(merged)
    if not own and not named:
        return None
    if named:
        kind = family(named[0][0])
        abbr = " ".join(f"{op}×{n}" if n > 1 else op for op, n in named[:MAX_ON_MARK])
        abbr += " …" if len(named) > MAX_ON_MARK else ""
        css = OPCODE_FAMILIES[kind][1]
    else:
        kind, abbr, css = PLAIN, str(own), PLAIN_CSS
    title = msg("sass.mark_title", n=own, arch=newest, kernel=lead.kernel, count=len(entries))
    return Mark(SASS_SOURCE, kind, line, abbr, "sm " + css, title, body=_sass_body(scope, line, entries))


def _sass_body(scope: FileScope, line: int, entries: tuple[LineEntry, ...]) -> SassBody:
    blocks = []
    for e in entries:
        ls = e.sass.line
        blocks.append(SassBlock(
            scope.refs[(e.kernel, e.sass.arch, e.sass.function.mangled)], e.sass.arch,
            counts_text(ls.counts), counts_text(ls.via) if ls.via else "",
            tuple(ls.sass[:MAX_SASS_LINES]), max(0, len(ls.sass) - MAX_SASS_LINES)))
    where = f"{scope.upstream}:{scope.path}:{line}"
    return SassBody(tuple(blocks), f"annotate sass {entries[0].kernel} --line {where}")


def _runs_link(ctx: SiteContext, page: str, kernel: str) -> Link:
    """A harness's runs page, without the hover text (these repeat on every marker's list)."""
    link = runs_link(ctx, page, kernel)
    return Link(link.label, link.href) if link.href else link


def _arch_number(arch: str) -> int:
    digits = "".join(ch for ch in arch if ch.isdigit())
    return int(digits) if digits else 0


def sass_label(kind: str) -> str | Msg:
    from site_builder.i18n import catalogue

    mid = "sass.op." + kind
    return Msg(mid) if mid in catalogue() else kind


def profile_marks(scope: FileScope, sym: Symbol | None) -> Iterable[Mark]:
    """A profiled line's share of its launch's warp samples (Nsight Compute, from a GPU run), as
    a small bar; it expands into the samples by stall reason and the instructions executed. A
    profile measured on an older build of the harness than the committed SASS is marked so."""
    if scope.compiled is None:
        return
    for line in scope.compiled_lines(sym):
        entries = [p for p in scope.compiled.profiles.get(line, ()) if p.line.samples > 0 and p.kernel_samples > 0]
        if not entries:
            continue
        entries.sort(key=lambda p: (not p.current, -p.line.samples / p.kernel_samples))
        lead = entries[0]
        share = 100.0 * lead.line.samples / lead.kernel_samples
        kind = "current" if lead.current else "old"
        title = (msg("profile.mark_title", share=_pct(share), kernel=lead.kernel, shape=lead.shape) if lead.current
                 else msg("profile.mark_title_old", share=_pct(share), kernel=lead.kernel, shape=lead.shape))
        yield Mark(PROFILE_SOURCE, kind, line, _pct(share), "pm" + ("" if lead.current else " old"), title,
                   body=ProfileBody(tuple(_profile_view(scope, p) for p in entries)),
                   bar=max(1, min(100, round(share))))


def _profile_view(scope: FileScope, p: ProfiledLine) -> ProfileView:
    ln = p.line
    share = 100.0 * ln.samples / p.kernel_samples
    stalls = sorted(ln.stalls.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_STALLS]
    extras = []
    if ln.l2_excessive:
        extras.append(msg("profile.l2_excess", n=f"{ln.l2_excessive:,}"))
    if ln.smem_excessive:
        extras.append(msg("profile.smem_excess", n=f"{ln.smem_excessive:,}"))
    if ln.divergent_branches:
        extras.append(msg("profile.divergent", n=f"{ln.divergent_branches:,}"))
    return ProfileView(
        scope.refs[(p.kernel, p.shape, p.function)], p.current, ln.samples, _pct(share), max(1, min(100, round(share))),
        tuple(StallView(stall_label(r), n, round(100 * n / ln.samples) if ln.samples else 0) for r, n in stalls),
        f"{ln.instructions:,}", tuple(extras))


def stall_label(reason: str) -> str | Msg:
    from site_builder.i18n import catalogue

    mid = "stall." + reason
    return Msg(mid) if mid in catalogue() else reason.replace("_", " ")


def profile_label(kind: str) -> str | Msg:
    return msg("profile.legend_old") if kind == "old" else msg("profile.legend_current")


def _pct(x: float) -> str:
    return f"{x:.1f}%" if x >= 0.05 else "<0.1%"


MARK_SOURCES: tuple[MarkSource, ...] = (
    MarkSource(FACT_SOURCE, msg("legend.facts"), fact_marks, fact_label),
    MarkSource(SASS_SOURCE, msg("legend.sass"), sass_marks, sass_label),
    MarkSource(PROFILE_SOURCE, msg("legend.profile"), profile_marks, profile_label),
)


# ---- panel sources -----------------------------------------------------------------------

@dataclass(frozen=True)
class PanelSource:
    name: str
    panels: Callable[[FileScope, Symbol], Iterable[Panel]]
    # what the panels depend on beyond the index and the pins (whose key covers every page),
    # as text for the page's key; None: nothing beyond them
    key: Callable[[FileScope, Symbol], str] | None


def xref_panels(scope: FileScope, sym: Symbol) -> Iterable[Panel]:
    """Callees and launches grouped by target (their sites are linked in the code below), and
    callers with their first call sites."""
    ctx, page = scope.ctx, scope.page
    callees, launches = [], []
    ordered = sorted(scope.edges_by_caller.get(sym.key, ()), key=lambda e: (e.line, e.column))
    for _target, kind, es in _group(ordered, lambda e: e.callees[0] if e.callees else "?" + e.callee_name):
        e0 = es[0]
        link = (symbol_link(ctx, page, e0.callees[0], label=_callee_label(ctx, e0), titled=False)
                if e0.callees else Link(e0.callee_name))
        (launches if kind == "launch" else callees).append(XRef(link, kind, (), len(es) - 1))
    incoming = sorted(ctx.callers(sym.key), key=lambda e: (e.path != sym.path, e.path, e.line))
    groups = _group(incoming, lambda e: e.caller)
    callers = [_caller_xref(scope, sym, caller, kind, es) for caller, kind, es in groups[:MAX_CALLERS]]
    if callers or callees or launches:
        yield XRefPanel(10, tuple(callers), tuple(callees), tuple(launches),
                        max(0, len(groups) - MAX_CALLERS), open=scope.note(sym) is not None)


def _caller_xref(scope: FileScope, sym: Symbol, caller: str, kind: str, es: list[CallEdge]) -> XRef:
    cup = names.split_key(caller)[0]
    caller_page = names.source_page(cup, es[0].path)
    shown = (cup, es[0].path) in scope.ctx.rendered
    sites = tuple(Link(f"{e.path.rsplit('/', 1)[-1]}:{e.line}" if e.path != sym.path else f"L{e.line}",
                       names.rel_href(scope.page, caller_page, names.line_anchor(e.line)) if shown else None)
                  for e in es[:MAX_SITES])
    return XRef(symbol_link(scope.ctx, scope.page, caller, titled=False), kind, sites, max(0, len(es) - MAX_SITES))


def graph_panels(scope: FileScope, sym: Symbol) -> Iterable[Panel]:
    if scope.note(sym) is not None:
        yield GraphPanel(20, call_graph(scope.ctx, scope.page, sym))


def graph_key(scope: FileScope, sym: Symbol) -> str:
    """The graph is drawn from the index, but annotated neighbours rank first when it folds."""
    if scope.note(sym) is None:
        return ""
    keys = _graph_keys(scope.ctx, sym)
    return " ".join(sorted(k for k in keys if k in scope.ctx.notes))


def note_panels(scope: FileScope, sym: Symbol) -> Iterable[Panel]:
    """The reviewer's note: its text fields, memory path, notes on calls, and where it leads."""
    note = scope.note(sym)
    if note is None:
        return
    ctx, page = scope.ctx, scope.page
    for order, title, text in ((10, "note.summary", note.summary), (20, "note.decomposition", note.decomposition),
                               (50, "note.sync", note.sync), (60, "note.first_look", note.first_look)):
        tv = text_view(text)
        if tv:
            yield TextPanel(order, msg(title), tv)
    if note.memory:
        yield MemoryPanel(30, tuple(MemoryView(text_view(m.what), m.path, text_view(m.how)) for m in note.memory))
    calls = _call_notes(ctx, page, sym, note)
    if calls:
        yield CallNotesPanel(70, calls)
    courses = tuple(_course_link(ctx, page, cid) for cid in note.course)
    harness = runs_link(ctx, page, note.harness) if note.harness else None
    if courses or harness:
        yield NoteLinksPanel(90, courses, harness)


def fact_list_panels(scope: FileScope, sym: Symbol) -> Iterable[Panel]:
    """An annotated function lists its detected memory facts beside the reviewer's memory notes."""
    if scope.note(sym) is None:
        return
    facts = tuple(fact_marks(scope, sym))
    if facts:
        yield MarkListPanel(40, msg("note.facts"), facts)


def resource_panels(scope: FileScope, sym: Symbol) -> Iterable[Panel]:
    """A kernel a harness compiles: registers, shared memory, spills and instruction mix of each
    instantiation in the committed SASS records, the newest arch's first featured one summed up."""
    found = scope.ctx.compiled.instantiations.get(sym.key)
    if not found:
        return
    # the instantiations whose lines the pages show (all of them are on the runs page)
    rows = tuple(resource_row(scope.ctx, scope.page, i.kernel, i.arch, i.function) for i in found if i.function.files)
    lead = next((i for i in found if i.function.files), found[0])
    fn = lead.function
    summary = msg("resources.summary", arch=lead.arch, registers=_dash(fn.registers), smem=_dash(fn.smem_static),
                  spills=_dash(None if fn.spill_stores is None else (fn.spill_stores or 0) + (fn.spill_loads or 0)),
                  instructions=f"{fn.instructions:,}", n=len(found))
    yield ResourcesPanel(12, summary, rows, len(found))


def resource_row(ctx: SiteContext, page: str, kernel: str, arch: str, fn) -> ResourceRow:
    spills = "—" if fn.spill_stores is None else f"{fn.spill_stores} / {fn.spill_loads or 0}"
    named = named_counts(fn.mix)
    return ResourceRow(_runs_link(ctx, page, kernel), arch, fn.short_name(200), _dash(fn.registers),
                       _dash(fn.smem_static), _dash(fn.stack), spills, f"{fn.instructions:,}",
                       " ".join(f"{op}×{n}" if n > 1 else op for op, n in named), bool(fn.files))


def _dash(x) -> str:
    return "—" if x is None else str(x)


def uses_panels(scope: FileScope, sym: Symbol) -> Iterable[Panel]:
    """The annotated types and macros a function uses (`Index.uses_by`, `AnnotationSet.for_use`),
    each linking to its note."""
    ctx = scope.ctx
    if not ctx.any_type_notes:
        return
    seen: dict[str, tuple[Link, Msg]] = {}
    for u in ctx.index.uses_by(sym):
        for n in ctx.annotations.for_use(u):
            d = n.definition
            if d is not None and d.key not in seen:
                seen[d.key] = (definition_link(ctx, scope.page, d), _kind_msg(d))
    if seen:
        yield UsesPanel(5, tuple(seen.values()))


def _kind_msg(d: TypeDef | MacroDef) -> Msg:
    return msg("kind.macro") if isinstance(d, MacroDef) else kind_label(d.kind)  # type: ignore[return-value]


def _panels_repr(panels: Callable[[FileScope, Symbol], Iterable[Panel]]) -> Callable[[FileScope, Symbol], str]:
    """The key of a source whose panels appear only on annotated definitions: their repr."""
    def key(scope: FileScope, sym: Symbol) -> str:
        return repr(scope.panels(panels, sym)) if scope.note(sym) is not None else ""
    return key


def _any_repr(panels: Callable[[FileScope, Symbol], Iterable[Panel]]) -> Callable[[FileScope, Symbol], str]:
    """The key of a source whose panels may appear on any definition: their repr."""
    def key(scope: FileScope, sym: Symbol) -> str:
        found = scope.panels(panels, sym)
        return repr(found) if found else ""
    return key


def trace_panels(scope: FileScope, sym: Symbol) -> Iterable[Panel]:
    """A function on a traced chain: "on the path of" the entry points, each linking to its trace."""
    entries = scope.ctx.trace_of.get(sym.key)
    if entries:
        yield TracePathPanel(4, tuple(trace_link(scope.ctx, scope.page, e) for e in entries))


PANEL_SOURCES: tuple[PanelSource, ...] = (
    PanelSource("xrefs", xref_panels, None),  # `open` follows the note, which the notes' key covers
    PanelSource("traces", trace_panels, _any_repr(trace_panels)),
    PanelSource("uses", uses_panels, _any_repr(uses_panels)),
    PanelSource("resources", resource_panels, _any_repr(resource_panels)),
    PanelSource("graph", graph_panels, graph_key),
    PanelSource("notes", note_panels, _panels_repr(note_panels)),
    PanelSource("fact-list", fact_list_panels, _panels_repr(fact_list_panels)),
)


# ---- definitions besides the functions: annotated types and macros -------------------------------

@dataclass(frozen=True)
class DefinitionSource:
    name: str
    definitions: Callable[[FileScope], Iterable[DefinitionView]]  # their views are their own key


def type_definitions(scope: FileScope) -> Iterable[DefinitionView]:
    """Each annotated type of the file: summary and layout beside its heading, a note per member
    beside the member's line, the in-body notes, its users and course links."""
    ctx = scope.ctx
    if (scope.upstream, scope.path) not in ctx.noted_files:
        return
    for t in scope.fi.types:
        note = ctx.type_notes.get(t.key)
        if note is None:
            continue
        aside: list[Panel] = []
        for order, title, text in ((10, "note.summary", note.summary), (20, "note.layout", note.layout)):
            tv = text_view(text)
            if tv:
                aside.append(TextPanel(order, msg(title), tv))
        users = _users_panel(scope, ctx.index.type_users(t), msg("users.type"))
        aside += [users] if users else []
        aside += _course_panel(ctx, scope.page, note.course)
        members = [(fn.name, line, text_view(fn.text)) for fn in note.fields for line in fn.lines]
        name = t.qualified_name + (f"<{t.specialization}>" if t.specialization else "")
        yield _definition(scope, t.key, names.type_anchor(t.key), t.name, name, t.kind, t.signature,
                          t.start_line, t.end_line, note, tuple(aside), _def_notes(note.notes, members, note), "type")


def macro_definitions(scope: FileScope) -> Iterable[DefinitionView]:
    """Each annotated macro of the file: summary and what an invocation expands to beside its
    `#define`, the in-body notes, where it is invoked and course links."""
    ctx = scope.ctx
    if (scope.upstream, scope.path) not in ctx.noted_files:
        return
    for m in scope.fi.macros:
        note = ctx.macro_notes.get(m.key)
        if note is None:
            continue
        aside: list[Panel] = []
        for order, title, text in ((10, "note.summary", note.summary), (20, "note.expands_to", note.expands_to)):
            tv = text_view(text)
            if tv:
                aside.append(TextPanel(order, msg(title), tv))
        users = _users_panel(scope, ctx.index.macro_users(m), msg("users.macro"))
        aside += [users] if users else []
        aside += _course_panel(ctx, scope.page, note.course)
        yield _definition(scope, m.key, names.macro_anchor(m.key), m.name, m.name, "macro", m.signature,
                          m.start_line, m.end_line, note, tuple(aside), _def_notes(note.notes, [], note), "macro")


def _definition(scope: FileScope, key: str, anchor: str, name: str, qname: str, kind: str, signature: str,
                start: int, end: int, note: TypeNote | MacroNote, aside: tuple[Panel, ...],
                inline: tuple[InlineNoteView, ...], what: str) -> DefinitionView:
    return DefinitionView(
        key=key, anchor=anchor, name=name, qualified_name=qname, kind=kind,
        kind_label=msg("kind.macro") if what == "macro" else kind_label(kind), signature=signature,
        start_line=start, end_line=end,
        source_url=scope.ctx.upstreams[scope.upstream].source_url(scope.path, start),
        note=_def_status(note), harnesses=(), head=(), aside=tuple(sorted(aside, key=lambda p: p.order)),  # type: ignore[attr-defined]
        marks=(), inline_notes=inline, what=what)


def _def_status(note: TypeNote | MacroNote) -> NoteView:
    status = note.status or "ok"
    message: Msg | str = ""
    if status == "stale":
        message = (msg("note.stale_def_fingerprint", seen=note.fingerprint, now=note.current_fingerprint or "?")
                   if note.fingerprint else msg("note.stale_def"))
    elif status not in ("ok", "unfingerprinted"):
        message = msg("note.status", status=status)
    return NoteView(status, message)


def _def_notes(notes: Iterable[InlineNote], members: list[tuple[str, int, object]],
               note: TypeNote | MacroNote) -> tuple[InlineNoteView, ...]:
    """In-body notes and member notes, one row note per line (members declared on one line,
    `int b, seqlen_q;`, share it)."""
    stale = note.status == "stale"
    by_line: dict[int, InlineNoteView] = {}
    for n in notes:
        tv = text_view(n.text)
        if n.line and tv and n.line not in by_line:
            by_line[n.line] = InlineNoteView(n.line, max(n.end_line or n.line, n.line), n.at, tv, stale)
    mem: dict[int, list[MemberNoteView]] = defaultdict(list)
    for name, line, tv in members:
        if tv is not None:
            mem[line].append(MemberNoteView(name, tv))  # type: ignore[arg-type]
    for line, ms in mem.items():
        old = by_line.get(line)
        if old is None:
            by_line[line] = InlineNoteView(line, line, ", ".join(m.name for m in ms), None, stale, tuple(ms))
        else:
            by_line[line] = InlineNoteView(old.line, old.end_line, old.at, old.text, stale, tuple(ms))
    return tuple(v for _, v in sorted(by_line.items()))


def _users_panel(scope: FileScope, uses: list[Use], title: Msg) -> UsersPanel | None:
    """Functions using a type or invoking a macro, each with its first use linked."""
    groups: dict[str, list[Use]] = {}
    for u in sorted(uses, key=lambda u: (u.path != scope.path, u.path, u.line)):
        groups.setdefault(u.user, []).append(u)
    if not groups:
        return None
    users = []
    for user, us in list(groups.items())[:MAX_USERS]:
        up = names.split_key(user)[0]
        shown = (up, us[0].path) in scope.ctx.rendered
        site_page = names.source_page(up, us[0].path)
        sites = tuple(Link(f"{u.path.rsplit('/', 1)[-1]}:{u.line}" if u.path != scope.path else f"L{u.line}",
                           names.rel_href(scope.page, site_page, names.line_anchor(u.line)) if shown else None)
                      for u in us[:1])
        users.append(XRef(symbol_link(scope.ctx, scope.page, user, titled=False), "use", sites))
    return UsersPanel(30, title, tuple(users), max(0, len(groups) - MAX_USERS))


def _course_panel(ctx: SiteContext, page: str, course: Iterable[str]) -> list[Panel]:
    courses = tuple(_course_link(ctx, page, cid) for cid in course)
    return [NoteLinksPanel(90, courses, None)] if courses else []


DEFINITION_SOURCES: tuple[DefinitionSource, ...] = (
    DefinitionSource("types", type_definitions),
    DefinitionSource("macros", macro_definitions),
)


# ---- the plan ----------------------------------------------------------------------------

def file_scope(ctx: SiteContext, upstream: str, path: str) -> FileScope:
    fi = ctx.rendered[(upstream, path)]
    edges: dict[str, list[CallEdge]] = defaultdict(list)
    for e in fi.edges:
        edges[e.caller].append(e)
    facts: dict[str, list[MemoryFact]] = defaultdict(list)
    for f in fi.facts:
        facts[f.symbol].append(f)
    return FileScope(ctx, upstream, path, names.source_page(upstream, path), fi,
                     {k: tuple(v) for k, v in edges.items()}, {k: tuple(v) for k, v in facts.items()},
                     ctx.compiled.file(upstream, path))


def plan_file(ctx: SiteContext, upstream: str, path: str, scope: FileScope | None = None) -> FilePlan:
    """The page of a source file. `scope`: the page's `file_scope`, when its key was made from it."""
    scope = scope or file_scope(ctx, upstream, path)
    up = ctx.upstreams[upstream]
    page = scope.page
    views = [definition_view(scope, s) for s in scope.fi.symbols]
    views += [d for src in DEFINITION_SOURCES for d in _definitions(scope, src)]
    functions = tuple(sorted(views, key=lambda d: (d.start_line, -d.end_line)))
    loose = scope.marks(None)  # lines no function owns (a type's member initialiser, a macro's body)
    marks = tuple(sorted([*(m for fv in functions for m in fv.marks), *loose],
                         key=lambda m: (m.line, _source_rank(m), m.kind)))
    crumbs = [Crumb(up.title, names.rel_href(page, names.INDEX_PAGE, names.upstream_anchor(upstream)))]
    crumbs += [Crumb(p, None) for p in path.split("/")]
    return FilePlan(
        page=page,
        root=names.root_prefix(page),
        upstream=upstream,
        upstream_title=up.title,
        path=path,
        language=language_of(path),
        source_url=up.source_url(path),
        commit=up.commit,
        crumbs=tuple(crumbs),
        overview=text_view(ctx.file_overviews.get((upstream, path))),
        functions=functions,
        links=code_links(scope),
        marks=marks,
        legends=legends(marks),
        diagnostics=ctx.file_diagnostics.get((upstream, path), ()),
        compiled_refs=scope.compiled_refs(),
    )


def definition_view(scope: FileScope, s: Symbol) -> DefinitionView:
    ctx, page = scope.ctx, scope.page
    note = scope.note(s)
    panels = [p for src in PANEL_SOURCES for p in scope.panels(src.panels, s)]
    return DefinitionView(
        key=s.key,
        anchor=names.symbol_anchor(s.key),
        name=s.name,
        qualified_name=s.qualified_name,
        kind=s.kind,
        kind_label=kind_label(s.kind),
        signature=s.signature,
        start_line=s.start_line,
        end_line=s.end_line,
        source_url=ctx.upstreams[scope.upstream].source_url(s.path, s.start_line),
        note=_note_view(scope, note, s) if note is not None else None,
        harnesses=tuple(runs_link(ctx, page, k) for k in ctx.harness_of.get(s.key, ())),
        head=_placed(panels, "head"),
        aside=_placed(panels, "aside"),
        marks=scope.marks(s),
        inline_notes=_inline_notes(scope, note, s) if note is not None else (),
    )


def _note_view(scope: FileScope, note: FunctionNote, s: Symbol):
    return scope.once(("note_view", s.key), lambda: note_view(note, s))


def _inline_notes(scope: FileScope, note: FunctionNote, s: Symbol):
    return scope.once(("inline_notes", s.key), lambda: inline_notes(note, s))


def _definitions(scope: FileScope, src: "DefinitionSource") -> tuple[DefinitionView, ...]:
    return scope.once(("definitions", src.name), lambda: tuple(src.definitions(scope)))


def _source_rank(m: Mark) -> int:
    return next((i for i, src in enumerate(MARK_SOURCES) if src.name == m.source), len(MARK_SOURCES))


def kind_label(kind: str) -> Msg | str:
    """The heading's words for a kind of definition: its catalogue message, else the kind itself
    (a kind the index learns later still shows)."""
    from site_builder.i18n import catalogue

    mid = "kind." + kind
    return Msg(mid) if mid in catalogue() else kind


def _placed(panels: list[Panel], place: str) -> tuple[Panel, ...]:
    return tuple(sorted((p for p in panels if p.place == place), key=lambda p: p.order))  # type: ignore[attr-defined]


def code_links(scope: FileScope) -> tuple[CodeLink, ...]:
    """Every call in the file whose callee is defined on the site links to that definition."""
    links = []
    for e in scope.fi.edges:
        target = next((k for k in e.callees if k in scope.ctx.symbols), None)
        if target is None:
            continue
        tpage, anchor = names.symbol_href_target(target)
        links.append(CodeLink(e.line, e.column, _called_identifier(e.callee_name),
                              names.rel_href(scope.page, tpage, anchor), e.callee_name))
    return tuple(sorted(links, key=lambda c: (c.line, c.column)))


def legends(marks: tuple[Mark, ...]) -> tuple:
    out = []
    for src in MARK_SOURCES:
        count: dict[str, int] = defaultdict(int)
        style: dict[str, Mark] = {}
        for m in marks:
            if m.source == src.name:
                count[m.kind] += 1
                style.setdefault(m.kind, m)
        if count:
            entries = tuple(LegendEntry(k, style[k].css, _legend_abbr(src.name, k, style[k]), src.label(k), n)
                            for k, n in _legend_order(src.name, count))
            out.append(Legend(src.name, src.legend_title, entries))
        if src.name == FACT_SOURCE:
            checks = Counter(m.check.state for m in marks if m.source == FACT_SOURCE and m.check is not None)
            if checks:
                signs = {state: sign for state, sign in CHECK_SIGNS.values()}
                out.append(Legend("check", msg("legend.checks"), tuple(
                    LegendEntry(state, "fx " + state, signs[state], CHECK_LABELS[state], checks[state])
                    for state in signs if state in checks)))
    return tuple(out)


CHECK_LABELS = {"ok": msg("check.legend_ok"), "near": msg("check.legend_near"), "no": msg("check.legend_no"),
                "none": msg("check.legend_none")}


def _legend_order(source: str, count: dict[str, int]) -> list[tuple[str, int]]:
    if source == SASS_SOURCE:  # the opcode table's order: global memory first, plain code last
        order = [*OPCODE_FAMILIES, PLAIN]
        return sorted(count.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    return sorted(count.items())


def _legend_abbr(source: str, kind: str, m: Mark) -> str:
    """The legend's sample marker: a SASS family's name (the markers also carry counts), a bar."""
    if source == SASS_SOURCE:
        return kind if kind != PLAIN else "12"
    if source == PROFILE_SOURCE:
        return "%"
    return m.abbr


def note_view(note: FunctionNote, s: Symbol) -> NoteView:
    status = note.status or "ok"
    message: Msg | str = ""
    if status == "stale":
        message = (msg("note.stale_fingerprint", seen=note.fingerprint, now=s.fingerprint) if note.fingerprint
                   else msg("note.stale"))
    elif status not in ("ok", "unfingerprinted"):  # no fingerprint is a reviewer's chore, not the reader's
        message = msg("note.status", status=status)
    return NoteView(status, message)


def inline_notes(note: FunctionNote, s: Symbol) -> tuple[InlineNoteView, ...]:
    """The in-body notes that anchored inside this definition, by line."""
    out = []
    for n in note.notes:
        tv = text_view(n.text)
        if n.line and tv and s.start_line <= n.line <= s.end_line:
            end = n.end_line or n.line
            out.append(InlineNoteView(n.line, min(max(end, n.line), s.end_line), n.at, tv,
                                      stale=(note.status == "stale")))
    return tuple(sorted(out, key=lambda n: n.line))


def _call_notes(ctx: SiteContext, page: str, s: Symbol, note: FunctionNote) -> tuple[CallNote, ...]:
    """The notes on callees, each linked to the callee it names (by qualified or written name)."""
    callee_keys: dict[str, str] = {}
    for e in ctx.calls(s.key):
        if e.callees:
            sym = ctx.all_symbols.get(e.callees[0])
            if sym:
                callee_keys.setdefault(sym.qualified_name, sym.key)
                callee_keys.setdefault(e.callee_name, sym.key)
    out = []
    for name, text in note.calls.items():
        key = callee_keys.get(name) or next(
            (k for q, k in callee_keys.items() if q.endswith("::" + name) or name.endswith("::" + q)), None)
        link = symbol_link(ctx, page, key, label=name) if key else ref_link(ctx, page, f"{s.upstream}:{name}")
        out.append(CallNote(link if link.href else Link(name, None, link.title), text_view(text)))
    return tuple(out)


def _course_link(ctx: SiteContext, page: str, cid: str) -> Link:
    """A note's course tag: a course's page, or a step's own page."""
    if cid in ctx.courses:
        return Link(label(ctx.courses[cid].title, cid), names.rel_href(page, names.course_page(cid)), cid)
    if cid in ctx.steps:
        course_id, i = ctx.steps[cid]
        step = ctx.courses[course_id].steps[i]
        return Link(label(step.title, cid), names.rel_href(page, names.step_page(course_id, cid)), cid)
    return Link(cid, None, msg("link.no_course"))


def _called_identifier(callee_name: str) -> str:
    """The identifier the index's column points at: the last name, without template args."""
    name = callee_name.split("<", 1)[0].strip()
    for sep in ("::", "."):
        name = name.rsplit(sep, 1)[-1]
    return name.strip()


def _group(edges: Iterable[CallEdge], target_of: Callable[[CallEdge], str]) -> list[tuple[str, str, list[CallEdge]]]:
    """Edges -> [(target key, kind, [edges])] in first-seen order."""
    groups: dict[tuple[str, str], list[CallEdge]] = {}
    for e in edges:
        groups.setdefault((target_of(e), e.kind), []).append(e)
    return [(k[0], k[1], v) for k, v in groups.items()]


def _callee_label(ctx: SiteContext, e: CallEdge) -> str:
    sym = ctx.all_symbols.get(e.callees[0])
    return sym.qualified_name if sym else e.callee_name


# ---- the call graph ------------------------------------------------------------------------

CALLEE_DEPTH = 2
MAX_GRAPH_NODES = 40  # stop adding levels past this many nodes


def _graph_edges(ctx: SiteContext, s: Symbol) -> list[tuple[str, int, str, str, str | None]]:
    """(from, layer of the new end, edge kind, to, fallback label) in visiting order: callers one
    level up, callees two levels down; unresolved callees only at the first level."""
    out: list[tuple[str, int, str, str, str | None]] = []
    seen = {s.key}
    for e in ctx.callers(s.key):
        out.append((e.caller, -1, e.kind, s.key, None))
        seen.add(e.caller)
    frontier = [s.key]
    for depth in range(1, CALLEE_DEPTH + 1):
        nxt = []
        for key in frontier:
            for e in ctx.calls(key):
                if e.callees:
                    ck = e.callees[0]
                    out.append((key, depth, e.kind, ck, None))
                    if ck not in seen:
                        seen.add(ck)
                        nxt.append(ck)
                elif depth == 1:
                    out.append((key, depth, e.kind, "?" + e.callee_name, e.callee_name))
                    seen.add("?" + e.callee_name)
        frontier = nxt
        if len(seen) > MAX_GRAPH_NODES:
            break
    return out


def _graph_keys(ctx: SiteContext, s: Symbol) -> set[str]:
    return {s.key} | {k for a, _, _, b, _ in _graph_edges(ctx, s) for k in (a, b)}


def call_graph(ctx: SiteContext, page: str, s: Symbol) -> CallGraph:
    """Callers (one level) and callees (two levels) of `s`, laid out as layers."""
    nodes: dict[str, graph.GNode] = {}

    def node(key: str, layer: int, role: str, fallback: str | None = None) -> str:
        if key not in nodes:
            sym = ctx.all_symbols.get(key)
            label = sym.name if sym else (fallback or key)
            link = symbol_link(ctx, page, key) if sym else Link(label, None, msg("link.unresolved"))
            rank = 0 if key in ctx.notes else (1 if link.href else (2 if sym else 3))
            nodes[key] = graph.GNode(key, label, sym.qualified_name if sym else label, link.href, role, layer, rank)
        return key

    node(s.key, 0, "self")
    edges: list[tuple[str, str, str]] = []
    for a, layer, kind, b, fallback in _graph_edges(ctx, s):
        if layer < 0:
            edges.append((node(a, layer, "caller"), b, kind))
        else:
            edges.append((a, node(b, layer, "callee", fallback), kind))
    return graph.layout(list(nodes.values()), edges)


# ---- the page's key ---------------------------------------------------------------------------

def note_digest(ctx: SiteContext, upstream: str, path: str, scope: FileScope | None = None) -> str:
    """What a source page shows beyond the index (whose key covers the rest), as a short digest
    (part of the page's key): the file's overview and annotation problems, and per definition
    its note's state, its harnesses and what each panel source says it depends on. `scope`: the
    page's `file_scope`, to be planned from next (what both ask for is made once)."""
    scope = scope or file_scope(ctx, upstream, path)
    parts = [repr(text_view(ctx.file_overviews.get((upstream, path)))),
             repr(ctx.file_diagnostics.get((upstream, path), ())),
             ctx.compiled.file_digest(upstream, path)]  # SASS, fact verdicts, profiles on its lines
    for src in DEFINITION_SOURCES:
        parts += [f"{src.name}\0{d!r}" for d in _definitions(scope, src)]
    for s in scope.fi.symbols:
        key = s.key
        note = ctx.notes.get(key)
        if note is not None:
            parts.append(f"{key}\0{_note_view(scope, note, s)!r}\0{_inline_notes(scope, note, s)!r}")
        for src in PANEL_SOURCES:
            if src.key is not None:
                k = src.key(scope, s)
                if k:
                    parts.append(f"{key}\0{src.name}\0{k}")
        if key in ctx.harness_of:
            parts.append(f"{key}\0{ctx.harness_of[key]}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:24]

"""One source page's plan (`model.FilePlan`): its definitions, the call links in its code, the
marks on its lines and the panels around each definition. No source text: `site_builder.code`
adds the tokenised lines in the worker processes.

What a page shows beyond the code comes from *sources*, listed in two tables:
- `MARK_SOURCES`: per-line marks (today the index's memory facts). A source gives each
  definition's marks, a legend title and a label per kind;
- `PANEL_SOURCES`: per-definition panels (today the cross-reference list, the call graph, the
  reviewer's note and the list of detected memory facts). A source gives a definition's panels
  and, unless they follow from the index alone, a key of what else they depend on (for the
  page's cache key).
A new source (SASS instruction classes, profiler samples, types and macros, resource cards) is
one entry in a table, a function, and for a new panel type a dataclass in `model.py` and a
macro in `templates/panels.html.jinja2`.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

# which files are sources, and in which language, is the index's decision (one function for both)
from annotate.index.model import CallEdge, FileIndex, MemoryFact, Symbol, language_of
from annotate.notes.model import FunctionNote
from site_builder import graph, names
from site_builder.context import SiteContext, label, ref_link, runs_link, symbol_link, text_view
from site_builder.facts import fact_label, fact_style
from site_builder.model import (
    CallGraph,
    CallNote,
    CallNotesPanel,
    CodeLink,
    Crumb,
    DefinitionView,
    FilePlan,
    GraphPanel,
    InlineNoteView,
    Legend,
    LegendEntry,
    Link,
    Mark,
    MarkListPanel,
    Msg,
    MemoryPanel,
    MemoryView,
    NoteLinksPanel,
    NoteView,
    Panel,
    TextPanel,
    XRef,
    XRefPanel,
    msg,
)

MAX_CALLERS = 12  # callers listed per function (the rest are counted)
MAX_SITES = 3  # call sites listed per caller/callee pair
FACT_SOURCE = "fact"


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

    def note(self, sym: Symbol) -> FunctionNote | None:
        return self.ctx.notes.get(sym.key)

    def marks(self, sym: Symbol) -> tuple[Mark, ...]:
        """A definition's marks, every source's."""
        return tuple(m for src in MARK_SOURCES for m in src.marks(self, sym))


# ---- mark sources ------------------------------------------------------------------------

@dataclass(frozen=True)
class MarkSource:
    name: str  # Mark.source
    legend_title: Msg
    marks: Callable[[FileScope, Symbol], Iterable[Mark]]  # one definition's marks
    label: Callable[[str], str | Msg]  # a kind's label in the legend


def fact_marks(scope: FileScope, sym: Symbol) -> Iterable[Mark]:
    """The memory facts the index's rules found in a definition."""
    for f in sorted(scope.facts_by_symbol.get(sym.key, ()), key=lambda f: (f.line, f.kind)):
        abbr, css = fact_style(f.kind)
        yield Mark(FACT_SOURCE, f.kind, f.line, abbr, css, f.detail)


MARK_SOURCES: tuple[MarkSource, ...] = (
    MarkSource(FACT_SOURCE, msg("legend.facts"), fact_marks, fact_label),
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
    facts = tuple(m for m in scope.marks(sym) if m.source == FACT_SOURCE)
    if facts:
        yield MarkListPanel(40, msg("note.facts"), facts)


def _panels_repr(panels: Callable[[FileScope, Symbol], Iterable[Panel]]) -> Callable[[FileScope, Symbol], str]:
    """The key of a source whose panels appear only on annotated definitions: their repr."""
    def key(scope: FileScope, sym: Symbol) -> str:
        return repr(tuple(panels(scope, sym))) if scope.note(sym) is not None else ""
    return key


PANEL_SOURCES: tuple[PanelSource, ...] = (
    PanelSource("xrefs", xref_panels, None),  # `open` follows the note, which the notes' key covers
    PanelSource("graph", graph_panels, graph_key),
    PanelSource("notes", note_panels, _panels_repr(note_panels)),
    PanelSource("fact-list", fact_list_panels, _panels_repr(fact_list_panels)),
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
                     {k: tuple(v) for k, v in edges.items()}, {k: tuple(v) for k, v in facts.items()})


def plan_file(ctx: SiteContext, upstream: str, path: str) -> FilePlan:
    scope = file_scope(ctx, upstream, path)
    up = ctx.upstreams[upstream]
    page = scope.page
    symbols = sorted(scope.fi.symbols, key=lambda s: (s.start_line, -s.end_line))
    functions = tuple(definition_view(scope, s) for s in symbols)
    marks = tuple(sorted((m for fv in functions for m in fv.marks), key=lambda m: (m.line, m.kind)))
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
    )


def definition_view(scope: FileScope, s: Symbol) -> DefinitionView:
    ctx, page = scope.ctx, scope.page
    note = scope.note(s)
    panels = [p for src in PANEL_SOURCES for p in src.panels(scope, s)]
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
        note=note_view(note, s) if note is not None else None,
        harnesses=tuple(runs_link(ctx, page, k) for k in ctx.harness_of.get(s.key, ())),
        head=_placed(panels, "head"),
        aside=_placed(panels, "aside"),
        marks=scope.marks(s),
        inline_notes=inline_notes(note, s) if note is not None else (),
    )


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
            entries = tuple(LegendEntry(k, style[k].css, style[k].abbr, src.label(k), n)
                            for k, n in sorted(count.items()))
            out.append(Legend(src.name, src.legend_title, entries))
    return tuple(out)


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

def note_digest(ctx: SiteContext, upstream: str, path: str) -> str:
    """What a source page shows beyond the index (whose key covers the rest), as a short digest
    (part of the page's key): the file's overview and annotation problems, and per definition
    its note's state, its harnesses and what each panel source says it depends on."""
    scope = file_scope(ctx, upstream, path)
    parts = [repr(text_view(ctx.file_overviews.get((upstream, path)))),
             repr(ctx.file_diagnostics.get((upstream, path), ()))]
    for s in scope.fi.symbols:
        key = s.key
        note = ctx.notes.get(key)
        if note is not None:
            parts.append(f"{key}\0{note_view(note, s)!r}\0{inline_notes(note, s)!r}")
        for src in PANEL_SOURCES:
            if src.key is not None:
                k = src.key(scope, s)
                if k:
                    parts.append(f"{key}\0{src.name}\0{k}")
        if key in ctx.harness_of:
            parts.append(f"{key}\0{ctx.harness_of[key]}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:24]

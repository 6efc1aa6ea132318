"""Index + annotations -> page plans (`model.FilePlan`, `IndexPage`, `CoursePage`) and the
search index data. Runs in the main process; no source text, no markup (Markdown is
rendered by `site_builder.markdown`, which sanitises it).

The annotation objects come from `annotate.notes` (FunctionNote, Course, ...); this module
reads them through the documented attributes only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from site_builder import graph, names
from site_builder.facts import fact_style
# which files are sources, and in which language, is the index's decision (one function for both)
from annotate.index.model import language_of
from site_builder.markdown import plain_text, render_markdown
from site_builder.model import (
    CallNote,
    CodeLink,
    CourseLink,
    CoursePage,
    CourseStepView,
    CourseView,
    Coverage,
    Crumb,
    FactMark,
    FilePlan,
    FileRow,
    FunctionView,
    IndexPage,
    InlineNoteView,
    CheckView,
    LegendEntry,
    Link,
    MemoryView,
    NoteView,
    RecordView,
    RunnableRow,
    RunsPage,
    RunsView,
    TextView,
    TimingView,
    UpstreamView,
    XRef,
)


@dataclass
class SiteContext:
    """What every plan needs, computed once per build from the index and the annotations."""

    index: Any  # annotate.index.api.Index
    annotations: Any  # annotate.notes.api.AnnotationSet (or None: no notes at all)
    upstreams: dict  # name -> annotate.upstreams.Upstream
    rendered: dict[tuple[str, str], Any] = field(default_factory=dict)  # (up, path) -> FileIndex
    symbols: dict[str, Any] = field(default_factory=dict)  # Symbol.key -> Symbol (rendered files)
    all_symbols: dict[str, Any] = field(default_factory=dict)  # Symbol.key -> Symbol (whole index)
    callers: Any = None  # .get(callee key) -> incoming edges (see _EdgesOf)
    calls: Any = None  # .get(caller key) -> outgoing edges
    notes: dict[str, Any] = field(default_factory=dict)  # Symbol.key -> FunctionNote
    courses: dict[str, Any] = field(default_factory=dict)  # course id -> Course
    file_overviews: dict[tuple[str, str], Any] = field(default_factory=dict)
    file_diagnostics: dict[tuple[str, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    runs: list = field(default_factory=list)  # site_builder.runs.KernelRuns, by kernel name
    runs_problems: list[str] = field(default_factory=list)
    # spec name -> index symbol: kernel -> ((qualified name in the spec, rendered Symbol.keys), ...)
    run_symbols: dict[str, tuple] = field(default_factory=dict)
    harness_of: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # Symbol.key -> kernels
    repo_root: Path | None = None  # the repository (Config.repo_root): record and spec paths are shown relative to it


def rendered_paths(index, upstreams: dict, only: list[str] | None = None) -> dict[tuple[str, str], Any]:
    """The files the site shows: under an upstream's `render` paths, C/CUDA or Python."""
    out = {}
    for name in index.upstreams():
        up = upstreams.get(name)
        if up is None or (only and name not in only):
            continue
        for fi in index.files(name):
            if language_of(fi.path) and any(fi.path.startswith(r) for r in up.render):
                out[(name, fi.path)] = fi
    return dict(sorted(out.items()))


class _EdgesOf:
    """`ctx.calls` / `ctx.callers`: edges by Symbol.key, asked of the index (which keeps
    both directions already) instead of copied for every build."""

    def __init__(self, index, symbols: dict, reverse: bool) -> None:
        self._index, self._symbols, self._reverse = index, symbols, reverse

    def get(self, key: str, default=()):
        sym = self._symbols.get(key)
        if sym is None:
            return default
        return (self._index.callers if self._reverse else self._index.callees)(sym) or default


def _index_part(index, upstreams: dict, only) -> tuple:
    # The index-derived part of the context, kept by the index it came from: `annotate serve`
    # rebuilds many times against one loaded index.
    memo_key = ("site_builder.pages", tuple(sorted((k, v.commit, v.render) for k, v in upstreams.items())),
                tuple(only or ()))

    def make() -> tuple:
        rendered = rendered_paths(index, upstreams, only)
        all_symbols, symbols = {}, {}
        for fi in index.files():
            shown = (fi.upstream, fi.path) in rendered
            for s in fi.symbols:
                all_symbols[s.key] = s
                if shown:
                    symbols[s.key] = s
        calls, callers = _EdgesOf(index, all_symbols, False), _EdgesOf(index, all_symbols, True)
        return rendered, all_symbols, symbols, calls, callers

    return index.memo(memo_key, make)


def make_context(index, annotations, upstreams: dict, only: list[str] | None = None,
                 runs: tuple[list, list[str]] | None = None, repo_root: Path | None = None) -> SiteContext:
    """`runs`: (site_builder.runs.KernelRuns list, problems) as `runs.load_runs` returns them."""
    ctx = SiteContext(index=index, annotations=annotations, upstreams=upstreams, repo_root=repo_root)
    ctx.rendered, ctx.all_symbols, ctx.symbols, ctx.calls, ctx.callers = _index_part(index, upstreams, only)
    if runs is not None:
        ctx.runs, ctx.runs_problems = list(runs[0]), list(runs[1])
        for kr in ctx.runs:
            spec = kr.spec
            found = []
            for qname in (*spec.symbols, *spec.launchers):
                keys = _spec_symbol_keys(ctx, spec.upstream, qname, getattr(kr, "includes", ()))
                found.append((qname, keys))
                for k in keys:
                    if spec.name not in ctx.harness_of[k]:
                        ctx.harness_of[k].append(spec.name)
            ctx.run_symbols[spec.name] = tuple(found)
    if annotations is not None:
        for s in ctx.symbols.values():
            note = annotations.for_symbol(s)
            if note is not None:
                ctx.notes[s.key] = note
        for c in getattr(annotations, "courses", None) or ():
            ctx.courses[c.id] = c
        for af in getattr(annotations, "files", None) or ():
            up, path = getattr(af, "upstream", None), getattr(af, "path", None)
            if up and path and getattr(af, "overview", None):
                ctx.file_overviews[(up, path)] = af.overview
        for d in getattr(annotations, "diagnostics", None) or ():
            where = _diagnostic_target(d, ctx)
            if where:
                ctx.file_diagnostics[where].append(_diagnostic_text(d))
    return ctx


def _spec_symbol_keys(ctx: SiteContext, upstream: str, qname: str, includes=()) -> tuple[str, ...]:
    """The rendered definitions a harness spec's symbol names: exact qualified name first;
    of several, those in a header the harness includes directly when there are any."""
    try:
        found = ctx.index.find(qname, upstream=upstream)
    except Exception:  # an unknown name stays plain text
        return ()
    exact = [s for s in found if s.qualified_name == qname] or found
    direct = [s for s in exact if any(s.path == i or s.path.endswith("/" + i) for i in includes)]
    if len({s.path for s in exact}) > 1 and direct:
        exact = direct
    return tuple(s.key for s in exact if s.key in ctx.symbols)


def _diagnostic_target(d, ctx: SiteContext) -> tuple[str, str] | None:
    f = (getattr(d, "file", None) or "").replace("\\", "/")
    if f.endswith(".yaml"):
        f = f[: -len(".yaml")]
    for up, path in ctx.rendered:
        if f.endswith(f"{up}/{path}"):
            return up, path
    return None


def _diagnostic_text(d) -> str:
    where = f"line {d.line}: " if getattr(d, "line", None) else ""
    sym = f" [{d.symbol}]" if getattr(d, "symbol", None) else ""
    return f"{d.severity}: {where}{d.message}{sym}"


# ---- text --------------------------------------------------------------------------------

def text_view(t) -> TextView | None:
    """Annotation Text (`.en`, `.zh`) or a bare string -> rendered TextView."""
    if t is None:
        return None
    en = t if isinstance(t, str) else getattr(t, "en", None)
    zh = None if isinstance(t, str) else getattr(t, "zh", None)
    if not en and not zh:
        return None
    return TextView(render_markdown(en), render_markdown(zh) if zh else None)


def text_str(t) -> str:
    """A Text or a string as one plain string (English): titles, table cells."""
    if t is None:
        return ""
    return t if isinstance(t, str) else str(getattr(t, "en", "") or "")


def _text_plain(t) -> str:
    if t is None:
        return ""
    return plain_text(t if isinstance(t, str) else getattr(t, "en", "") or "")


# ---- links -------------------------------------------------------------------------------

def symbol_link(ctx: SiteContext, from_page: str, key: str, label: str | None = None,
                titled: bool = True) -> Link:
    """A link to a function's heading, or plain text when its file is not on the site.

    `titled=False` leaves out the hover title (the long lists repeat it thousands of times).
    """
    sym = ctx.all_symbols.get(key)
    lab = label or (sym.qualified_name if sym else names.split_key(key)[1])
    if key in ctx.symbols:
        page, anchor = names.symbol_href_target(key)
        return Link(lab, names.rel_href(from_page, page, anchor), f"{sym.path}:{sym.start_line}" if titled else "")
    where = f"{sym.path}:{sym.start_line} (not rendered)" if sym else "unresolved"
    return Link(lab, None, where if titled else "")


def ref_link(ctx: SiteContext, from_page: str, ref: str) -> Link:
    """A course reference "upstream:path" or "upstream:qualified_name" -> Link."""
    up, _, rest = ref.partition(":")
    if not rest:
        up, rest = "", ref
    if (up, rest) in ctx.rendered:
        return Link(rest, names.rel_href(from_page, names.source_page(up, rest)), ref)
    try:
        found = ctx.index.find(rest, upstream=up or None)
    except Exception:  # an unknown name is plain text, never a dead link
        found = []
    for s in found:
        if s.key in ctx.symbols:
            return symbol_link(ctx, from_page, s.key, label=s.qualified_name)
    return Link(ref, None, "not found in the index")


def note_digest(ctx: SiteContext, upstream: str, path: str) -> str:
    """What the annotations contribute to one source page, as a short digest (part of its
    key). Everything else on the page derives from the index, whose key covers it."""
    import hashlib

    fi = ctx.rendered[(upstream, path)]
    page = names.source_page(upstream, path)
    parts = [repr(text_view(ctx.file_overviews.get((upstream, path)))),
             repr(ctx.file_diagnostics.get((upstream, path), ()))]
    for s in fi.symbols:
        note = ctx.notes.get(s.key)
        if note is not None:
            parts.append(s.key)
            parts.append(repr(_note_view(ctx, page, s, note)))
        if s.key in ctx.harness_of:
            parts.append(f"{s.key}\0{ctx.harness_of[s.key]}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:24]


# ---- file plans --------------------------------------------------------------------------

def plan_file(ctx: SiteContext, upstream: str, path: str) -> FilePlan:
    fi = ctx.rendered[(upstream, path)]
    up = ctx.upstreams[upstream]
    page = names.source_page(upstream, path)
    symbols = sorted(fi.symbols, key=lambda s: (s.start_line, -s.end_line))
    edges_by_caller: dict[str, list] = defaultdict(list)
    for e in fi.edges:
        edges_by_caller[e.caller].append(e)
    facts_by_symbol: dict[str, list] = defaultdict(list)
    for f in fi.facts:
        facts_by_symbol[f.symbol].append(f)

    functions = []
    for s in symbols:
        functions.append(_function_view(ctx, page, up, s, edges_by_caller.get(s.key, []),
                                        facts_by_symbol.get(s.key, [])))

    links = []
    for e in fi.edges:
        target = next((k for k in e.callees if k in ctx.symbols), None)
        if target is None:
            continue
        tpage, anchor = names.symbol_href_target(target)
        name = _called_identifier(e.callee_name)
        links.append(CodeLink(e.line, e.column, name, names.rel_href(page, tpage, anchor), e.callee_name))
    links.sort(key=lambda c: (c.line, c.column))

    facts = tuple(sorted((m for fv in functions for m in fv.facts), key=lambda m: (m.line, m.kind)))
    legend_count: dict[str, int] = defaultdict(int)
    for m in facts:
        legend_count[m.kind] += 1
    legend = tuple(
        LegendEntry(k, *_legend_style(k), count=n) for k, n in sorted(legend_count.items())
    )
    parts = path.split("/")
    crumbs = [Crumb(up.title, names.rel_href(page, names.INDEX_PAGE, names.upstream_anchor(upstream)))]
    crumbs += [Crumb(p, None) for p in parts]
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
        functions=tuple(functions),
        links=tuple(links),
        facts=facts,
        legend=legend,
        diagnostics=tuple(ctx.file_diagnostics.get((upstream, path), ())),
    )


def _legend_style(kind: str) -> tuple[str, str, str]:
    abbr, label, css = fact_style(kind)
    return css, abbr, label


def _called_identifier(callee_name: str) -> str:
    """The identifier the index's column points at: the last name, without template args."""
    name = callee_name.split("<", 1)[0].strip()
    for sep in ("::", "."):
        name = name.rsplit(sep, 1)[-1]
    return name.strip()


MAX_CALLERS = 12  # callers listed per function (the rest are counted)
MAX_SITES = 3  # call sites listed per caller/callee pair


def _group(edges, target_of) -> list[tuple]:
    """Edges -> [(target key, kind, [edges])] in first-seen order."""
    groups: dict[tuple, list] = {}
    for e in edges:
        groups.setdefault((target_of(e), e.kind), []).append(e)
    return [(k[0], k[1], v) for k, v in groups.items()]


def _function_view(ctx: SiteContext, page: str, up, s, out_edges: list, facts: list) -> FunctionView:
    callees, launches = [], []
    ordered = sorted(out_edges, key=lambda e: (e.line, e.column))
    for target, kind, es in _group(ordered, lambda e: e.callees[0] if e.callees else "?" + e.callee_name):
        e0 = es[0]
        link = (symbol_link(ctx, page, e0.callees[0], label=_callee_label(ctx, e0), titled=False)
                if e0.callees else Link(e0.callee_name))
        # The call sites are right below, linked in the code: only their number is listed.
        xr = XRef(link, kind, (), len(es) - 1)
        (launches if kind == "launch" else callees).append(xr)
    callers = []
    incoming = sorted(ctx.callers.get(s.key, ()), key=lambda e: (e.path != s.path, e.path, e.line))
    groups = _group(incoming, lambda e: e.caller)
    for caller, kind, es in groups[:MAX_CALLERS]:
        cup = names.split_key(caller)[0]
        caller_page = names.source_page(cup, es[0].path)
        shown = (cup, es[0].path) in ctx.rendered
        sites = tuple(Link(f"{e.path.rsplit('/', 1)[-1]}:{e.line}" if e.path != s.path else f"L{e.line}",
                           names.rel_href(page, caller_page, names.line_anchor(e.line)) if shown else None)
                      for e in es[:MAX_SITES])
        callers.append(XRef(symbol_link(ctx, page, caller, titled=False), kind, sites, max(0, len(es) - MAX_SITES)))
    marks = tuple(_fact_mark(f) for f in sorted(facts, key=lambda f: (f.line, f.kind)))
    note = ctx.notes.get(s.key)
    note_view, inline = (None, ())
    graph_view = None
    if note is not None:
        note_view, inline = _note_view(ctx, page, s, note)
        graph_view = call_graph(ctx, page, s)
    return FunctionView(
        key=s.key,
        anchor=names.symbol_anchor(s.key),
        name=s.name,
        qualified_name=s.qualified_name,
        kind=s.kind,
        signature=s.signature,
        start_line=s.start_line,
        end_line=s.end_line,
        callers=tuple(callers),
        callees=tuple(callees),
        launches=tuple(launches),
        facts=marks,
        note=note_view,
        more_callers=max(0, len(groups) - MAX_CALLERS),
        inline_notes=inline,
        graph=graph_view,
        source_url=up.source_url(s.path, s.start_line),
        harnesses=tuple(runs_link(ctx, page, k) for k in ctx.harness_of.get(s.key, ())),
    )


def _callee_label(ctx: SiteContext, e) -> str:
    sym = ctx.all_symbols.get(e.callees[0])
    return sym.qualified_name if sym else e.callee_name


def _fact_mark(f) -> FactMark:
    abbr, _label, css = fact_style(f.kind)
    return FactMark(f.kind, f.detail, f.line, css, abbr)


def _note_view(ctx: SiteContext, page: str, s, note) -> tuple[NoteView, tuple[InlineNoteView, ...]]:
    status = getattr(note, "status", "ok") or "ok"
    message = ""
    if status == "stale":
        seen = getattr(note, "fingerprint", None)
        message = ("The code of this function changed since the note was written"
                   + (f" (fingerprint {seen} → {s.fingerprint})" if seen else "")
                   + "; read it with care.")
    elif status == "unfingerprinted":
        message = ""  # a reviewer's chore (`annotate check` reports it), not the reader's concern
    elif status != "ok":
        message = f"Annotation status: {status}."
    calls = []
    callee_keys = {}
    for fi_edge in ctx.calls.get(s.key, ()):
        if fi_edge.callees:
            sym = ctx.all_symbols.get(fi_edge.callees[0])
            if sym:
                callee_keys.setdefault(sym.qualified_name, sym.key)
                callee_keys.setdefault(fi_edge.callee_name, sym.key)
    for name, text in (getattr(note, "calls", None) or {}).items():
        key = callee_keys.get(name) or next(
            (k for q, k in callee_keys.items() if q.endswith("::" + name) or name.endswith("::" + q)), None)
        link = symbol_link(ctx, page, key, label=name) if key else ref_link(ctx, page, f"{s.upstream}:{name}")
        calls.append(CallNote(link if link.href else Link(name, None, link.title), text_view(text)))
    courses = []
    for cid in getattr(note, "course", None) or ():
        if cid in ctx.courses:
            courses.append(Link(text_str(ctx.courses[cid].title) or cid,
                                names.rel_href(page, names.course_page(cid)), cid))
        else:
            courses.append(Link(cid, None, "no such course map yet"))
    memory = tuple(MemoryView(text_view(getattr(m, "what", None)), str(getattr(m, "path", "") or ""),
                              text_view(getattr(m, "how", None)))
                   for m in getattr(note, "memory", None) or ())
    view = NoteView(
        status=status,
        status_message=message,
        summary=text_view(getattr(note, "summary", None)),
        decomposition=text_view(getattr(note, "decomposition", None)),
        memory=memory,
        sync=text_view(getattr(note, "sync", None)),
        first_look=text_view(getattr(note, "first_look", None)),
        calls=tuple(calls),
        courses=tuple(courses),
        harness=runs_link(ctx, page, note.harness) if getattr(note, "harness", None) else None,
    )
    inline = []
    for n in getattr(note, "notes", None) or ():
        line = getattr(n, "line", None)
        tv = text_view(getattr(n, "text", None))
        if line and tv and s.start_line <= line <= s.end_line:
            end = getattr(n, "end_line", None) or line
            inline.append(InlineNoteView(line, min(max(end, line), s.end_line), str(getattr(n, "at", "")), tv,
                                         stale=(status == "stale")))
    inline.sort(key=lambda n: n.line)
    return view, tuple(inline)


def call_graph(ctx: SiteContext, page: str, s, callee_depth: int = 2):
    """Callers (one level) and callees (two levels) of `s`, laid out as layers."""
    nodes: dict[str, graph.GNode] = {}
    edges: list[tuple[str, str, str]] = []

    def node(key: str, layer: int, role: str, fallback: str | None = None) -> str:
        if key not in nodes:
            sym = ctx.all_symbols.get(key)
            label = sym.name if sym else (fallback or key)
            link = symbol_link(ctx, page, key) if sym else Link(label, None, "unresolved")
            rank = 0 if key in ctx.notes else (1 if link.href else (2 if sym else 3))
            nodes[key] = graph.GNode(key, label, sym.qualified_name if sym else label,
                                     link.href, role, layer, rank)
        return key

    node(s.key, 0, "self")
    for e in ctx.callers.get(s.key, ()):
        edges.append((node(e.caller, -1, "caller"), s.key, e.kind))
    frontier = [s.key]
    for depth in range(1, callee_depth + 1):
        nxt = []
        for key in frontier:
            for e in ctx.calls.get(key, ()):
                if e.callees:
                    ck = e.callees[0]
                    fresh = ck not in nodes
                    edges.append((key, node(ck, depth, "callee"), e.kind))
                    if fresh:
                        nxt.append(ck)
                elif depth == 1:
                    edges.append((key, node("?" + e.callee_name, depth, "callee", e.callee_name), e.kind))
        frontier = nxt
        if len(nodes) > 40:
            break
    return graph.layout(list(nodes.values()), edges)


# ---- index, courses, search ---------------------------------------------------------------

def file_counts(ctx: SiteContext, upstream: str, path: str) -> tuple[int, int, int]:
    fi = ctx.rendered[(upstream, path)]
    annotated = [ctx.notes[s.key] for s in fi.symbols if s.key in ctx.notes]
    stale = sum(1 for n in annotated if getattr(n, "status", "ok") == "stale")
    return len(fi.symbols), len(annotated), stale


def index_page(ctx: SiteContext, line_counts: dict[tuple[str, str], int]) -> IndexPage:
    page = names.INDEX_PAGE
    ups = []
    for name, up in ctx.upstreams.items():
        rows = []
        tf = ta = ts_ = 0
        for (u, path) in ctx.rendered:
            if u != name:
                continue
            f, a, st = file_counts(ctx, u, path)
            tf, ta, ts_ = tf + f, ta + a, ts_ + st
            rows.append(FileRow(path, names.rel_href(page, names.source_page(u, path)),
                                line_counts.get((u, path), 0), f, a, st))
        if not rows:
            continue
        ups.append(UpstreamView(name, names.upstream_anchor(name), up.title, up.tag, up.commit, up.commit_url(), up.render,
                                Coverage(tf, ta, ts_), tuple(rows)))
    courses = tuple(CourseLink(text_str(c.title) or c.id, names.rel_href(page, names.course_page(c.id)),
                               len(c.steps or ())) for c in ctx.courses.values())
    diags = tuple(_diagnostic_text(d) for d in (getattr(ctx.annotations, "diagnostics", None) or ()))
    diags += tuple(ctx.runs_problems)
    return IndexPage(page, names.root_prefix(page), tuple(ups), courses, diags, runnable_rows(ctx, page),
                     names.runnable_anchor())


def course_page(ctx: SiteContext, course) -> CoursePage:
    page = names.course_page(course.id)
    steps = tuple(
        CourseStepView(i + 1, st.id, names.step_anchor(st.id), text_str(st.title) or st.id, text_view(st.text),
                       tuple(ref_link(ctx, page, r) for r in (st.refs or ())))
        for i, st in enumerate(course.steps or ())
    )
    view = CourseView(course.id, page, text_str(course.title) or course.id, text_view(course.text), steps)
    return CoursePage(page, names.root_prefix(page), view)


def search_digest(ctx: SiteContext) -> str:
    """What the annotations contribute to the search index (the index's key covers the rest)."""
    import hashlib

    parts = [f"{k}\0{_text_plain(getattr(n, 'summary', None))}\0{_text_plain(getattr(n, 'first_look', None))}"
             for k, n in sorted(ctx.notes.items())]
    parts += [f"{c.id}\0{text_str(c.title)}" for c in ctx.courses.values()]
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def search_data(ctx: SiteContext) -> dict:
    """The client-side search index: pages once, then one compact row per function."""
    pages: list[str] = []
    page_no: dict[str, int] = {}
    rows = []
    for key, s in sorted(ctx.symbols.items(), key=lambda kv: (kv[1].upstream, kv[1].path, kv[1].start_line)):
        page, anchor = names.symbol_href_target(key)
        if page not in page_no:
            page_no[page] = len(pages)
            pages.append(page)
        note = ctx.notes.get(key)
        text = ""
        if note is not None:
            text = " ".join(x for x in (_text_plain(getattr(note, "summary", None)),
                                        _text_plain(getattr(note, "first_look", None))) if x)[:300]
        rows.append([s.qualified_name, s.kind, page_no[page], anchor, 1 if note is not None else 0, text])
    files = []
    for (up, path) in ctx.rendered:
        page = names.source_page(up, path)
        if page not in page_no:
            page_no[page] = len(pages)
            pages.append(page)
        files.append([f"{up}:{path}", page_no[page]])
    courses = [[text_str(c.title) or c.id, names.course_page(c.id)] for c in ctx.courses.values()]
    return {"v": 1, "pages": pages, "symbols": rows, "files": files, "courses": courses}


# ---- harness results --------------------------------------------------------------------------
# Records are data (site_builder.runs reads them as written); every field is read defensively
# and turned into text here, and escaped by the templates.

def runs_link(ctx: SiteContext, from_page: str, kernel: str) -> Link:
    """A link to a kernel's runs page; plain text when no such harness exists."""
    if any(kr.spec.name == kernel for kr in ctx.runs):
        return Link(kernel, names.rel_href(from_page, names.runs_page(kernel)), f"annotate run {kernel}")
    return Link(kernel, None, "no such harness in vendor_kernels/")


def _num(x, spec: str) -> str:
    if not _is_num(x):
        return "—" if x is None else str(x)
    return format(x, spec)


def _d(x) -> dict:
    return x if isinstance(x, dict) else {}


def _l(x) -> list:
    return x if isinstance(x, list) else []


def _params(p) -> str:
    return " ".join(f"{k}={v}" for k, v in _d(p).items())


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _worst(outputs: list, key: str):
    """The largest error over outputs; "inf/nan" when one is not a finite number."""
    vals = [_d(o).get(key) for o in outputs]
    if any(not _is_num(v) for v in vals):
        return "inf/nan"
    return max(vals) if vals else None


def _check_views(record: dict) -> tuple[CheckView, ...]:
    by_shape: dict[str, list[dict]] = {}
    for c in _l(record.get("checks")):
        c = _d(c)
        by_shape.setdefault(str(c.get("shape", "?")), []).append(c)
    out = []
    for shape, cs in by_shape.items():
        outs = [_d(o) for c in cs for o in _l(c.get("outputs"))]
        tol = _d(outs[0].get("tol")) if outs else {}
        passed = all(c.get("passed") is True for c in cs)
        problem = ""
        if not passed:
            failed = next(c for c in cs if c.get("passed") is not True)
            if failed.get("error"):
                problem = str(failed["error"])
            else:
                o = next((o for o in _l(failed.get("outputs")) if _d(o).get("passed") is not True), {})
                o = _d(o)
                problem = (f"{o.get('output', '?')}: worst at {o.get('worst_index')} got {o.get('worst_got')} "
                           f"want {o.get('worst_want')}; {o.get('nonfinite', 0)} non-finite")
        out.append(CheckView(
            shape=shape, params=_params(cs[0].get("params")), trials=len(cs),
            rel_l2=_num(_worst(outs, "rel_l2"), ".2e"), max_abs=_num(_worst(outs, "max_abs"), ".2e"),
            tolerance=(f"rel L2 ≤ {_num(tol.get('rel_l2'), '.0e')}, max abs ≤ {_num(tol.get('max_abs'), '.0e')}"
                       if tol else "—"),
            passed=passed, problem=problem))
    return tuple(out)


def _timing_views(record: dict) -> tuple[TimingView, ...]:
    out = []
    for t in _l(record.get("timings")):
        t = _d(t)
        k = _d(t.get("kernel"))
        if not k:  # cut short by a CUDA error
            continue
        compute = t.get("bound") == "compute"
        rate = (f"{_num(t.get('TFLOPs'), '.1f')} TFLOP/s" if compute else f"{_num(t.get('GBps'), '.0f')} GB/s")
        sp = t.get("torch_vs_kernel")
        out.append(TimingView(
            shape=str(t.get("shape", "?")), params=_params(t.get("params")),
            median_us=_num(k.get("median_us"), ".1f"), p10_us=_num(k.get("p10_us"), ".1f"),
            p90_us=_num(k.get("p90_us"), ".1f"), rate=rate,
            pct_peak=f"{_num(t.get('pct_peak'), '.0f')}%" if t.get("pct_peak") is not None else "—",
            torch_us=_num(t.get("torch_us"), ".1f"),
            speedup=f"{_num(sp, '.2f')}×" if isinstance(sp, (int, float)) else "—",
            passed=_d(t.get("check")).get("passed") is True))
    return tuple(out)


def _record_view(number: int, rf, repo_root) -> RecordView:
    r = rf.record
    dev, build, peaks = _d(r.get("device")), _d(r.get("build")), _d(r.get("peaks"))
    where = _shown_path(rf.path, repo_root) if rf.source == "committed" else str(rf.path)
    cached = build.get("cached")
    return RecordView(
        number=number, anchor=names.record_anchor(number), local=rf.source == "local",
        source=f"{rf.source}: {where}",
        device=str(dev.get("name", "unknown device")), capability=str(dev.get("capability", "—")),
        driver=str(dev.get("driver", "—")), torch=str(dev.get("torch", "—")), cuda=str(dev.get("cuda", "—")),
        date=str(r.get("created", "—")), seed=str(r.get("seed", "—")), command=str(r.get("command", "")),
        passed=r.get("passed") is True, fatal=str(r.get("fatal") or ""),
        copy_peak=_num(peaks.get("copy_GBps"), ".0f"), matmul_peak=_num(peaks.get("bf16_TFLOPs"), ".0f"),
        bound="bf16 matmul TFLOP/s" if r.get("bound") == "compute" else "device-to-device copy GB/s",
        pins=tuple((str(k), str(v)) for k, v in _d(r.get("pins")).items()),
        checks=_check_views(r), timings=_timing_views(r),
        compile_s=_num(build.get("compile_s"), ".1f"),
        cache_hit="yes" if cached is True else ("no" if cached is False else "—"),
        load_s=_num(build.get("load_s"), ".2f"), arch=str(build.get("arch", "—")),
    )


def _shown_path(path: Path, repo_root: Path | None) -> str:
    """A repository file as the site names it: relative to the repository when inside it."""
    try:
        return path.relative_to(repo_root).as_posix() if repo_root else str(path)
    except ValueError:
        return str(path)


def runs_page(ctx: SiteContext, kr) -> RunsPage:
    spec = kr.spec
    page = names.runs_page(spec.name)

    def links(qnames) -> tuple[Link, ...]:
        found = dict(ctx.run_symbols.get(spec.name, ()))
        out = []
        for q in qnames:
            keys = found.get(q, ())
            out.append(symbol_link(ctx, page, keys[0], label=q) if keys else Link(q, None, "not on this site"))
        return tuple(out)

    spec_path = _shown_path(spec.spec_file, ctx.repo_root)
    view = RunsView(
        kernel=spec.name, title=spec.title, upstream=spec.upstream,
        symbols=links(spec.symbols), launchers=links(spec.launchers),
        command=f"annotate run {spec.name}", baseline=spec.baseline, notes=spec.notes.strip(),
        bound=spec.bound, dtypes=tuple(spec.dtypes), spec_path=spec_path,
        records=tuple(_record_view(i + 1, rf, ctx.repo_root) for i, rf in enumerate(kr.records)),
        problems=tuple(kr.problems),
    )
    return RunsPage(page, names.root_prefix(page),
                    names.rel_href(page, names.INDEX_PAGE, names.runnable_anchor()), view)


def runnable_rows(ctx: SiteContext, page: str) -> tuple[RunnableRow, ...]:
    rows = []
    for kr in ctx.runs:
        name = kr.spec.name
        recs = kr.records or (None,)
        for i, rf in enumerate(recs):
            href = names.rel_href(page, names.runs_page(name), names.record_anchor(i + 1) if rf else None)
            link = Link(name, href, kr.spec.title)
            if rf is None:
                rows.append(RunnableRow(link, "no record yet", False, "", "—", "—", "—", False))
                continue
            r = rf.record
            t = next((_d(t) for t in _l(r.get("timings")) if _d(_d(t).get("kernel"))), {})
            rows.append(RunnableRow(
                kernel=link, device=str(_d(r.get("device")).get("name", "unknown device")),
                local=rf.source == "local", shape=str(t.get("shape", "")),
                time_us=_num(_d(t.get("kernel")).get("median_us"), ".1f"),
                pct_peak=f"{_num(t.get('pct_peak'), '.0f')}%" if t.get("pct_peak") is not None else "—",
                torch_us=_num(t.get("torch_us"), ".1f"), passed=r.get("passed") is True))
    return tuple(rows)

"""The pages around the code: the home page (pins, coverage, courses, runnable kernels,
reviewers' diagnostics), one page per course map, and the client-side search index."""

from __future__ import annotations

from collections.abc import Mapping

from annotate.index.model import MacroDef, Symbol, TypeDef
from annotate.notes.model import Course, CourseStep, FunctionNote, MacroNote, TypeNote
from site_builder import names
from site_builder.context import (SiteContext, cite_link, label, ref_link, resolve_ref, runs_link, symbol_link,
                                  text_plain, text_view, trace_link)
from site_builder.model import (
    DeadEndView,
    DispatchView,
    GuardView,
    HopView,
    Msg,
    TraceNode,
    TracePage,
    CourseLink,
    CoursePage,
    CourseStepView,
    CheckpointView,
    CourseView,
    Coverage,
    ErrorPage,
    Link,
    QuestionView,
    ReadingItem,
    StepPage,
    FileRow,
    IndexPage,
    UpstreamView,
)
from site_builder.traces import GuardData, HopData, TraceData, note_words, trace_words
from site_builder.run_views import runnable_rows


def file_counts(ctx: SiteContext, upstream: str, path: str) -> tuple[int, int, int]:
    """(functions, annotated, stale) of one rendered file."""
    fi = ctx.rendered[(upstream, path)]
    annotated = [ctx.notes[s.key] for s in fi.symbols if s.key in ctx.notes]
    stale = sum(1 for n in annotated if n.status == "stale")
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
        ups.append(UpstreamView(name, names.upstream_anchor(name), up.title, up.tag, up.commit, up.commit_url(),
                                up.render, Coverage(tf, ta, ts_), tuple(rows)))
    courses = tuple(CourseLink(label(c.title, c.id), names.rel_href(page, names.course_page(c.id)),
                               len(c.steps)) for c in ctx.courses.values())
    return IndexPage(page, names.root_prefix(page), tuple(ups), courses, ctx.diagnostics + ctx.runs_problems,
                     runnable_rows(ctx, page), names.runnable_anchor(),
                     tuple(trace_link(ctx, page, t.entry) for t in ctx.traces), names.traces_anchor())


def error_page(root: str = "") -> ErrorPage:
    """The page for an address that is not on the site. The site has one at its root;
    `annotate serve` draws it for the address asked (`root`: the way back to the site root)."""
    return ErrorPage(names.ERROR_PAGE, root)


def course_page(ctx: SiteContext, course: Course) -> CoursePage:
    page = names.course_page(course.id)
    steps = tuple(
        CourseStepView(i + 1, st.id, names.step_anchor(st.id), label(st.title, st.id), text_view(st.text),
                       tuple(ref_link(ctx, page, r) for r in st.refs),
                       names.rel_href(page, names.step_page(course.id, st.id)), _exercise_count(st))
        for i, st in enumerate(course.steps)
    )
    view = CourseView(course.id, page, label(course.title, course.id), text_view(course.text), steps)
    return CoursePage(page, names.root_prefix(page), view)


def _exercise_count(st: CourseStep) -> int:
    ex = st.exercises
    return len(ex.questions) + len(ex.homework) + len(ex.checkpoints)


def step_page(ctx: SiteContext, course: Course, i: int) -> StepPage:
    """Step `i` of a course on its own page: goals, the reading list linked to the annotated code,
    the runnable kernel, questions with folded answers that cite the code, homework, checkpoints."""
    st = course.steps[i]
    page = names.step_page(course.id, st.id)

    def neighbour(j: int) -> Link | None:
        if not 0 <= j < len(course.steps):
            return None
        other = course.steps[j]
        return Link(label(other.title, other.id), names.rel_href(page, names.step_page(course.id, other.id)))

    ex = st.exercises
    questions = tuple(QuestionView(n, names.question_anchor(n), text_view(q.question), text_view(q.answer),
                                   tuple(cite_link(ctx, page, c) for c in q.cites))
                      for n, q in enumerate(ex.questions, 1))
    return StepPage(
        page=page, root=names.root_prefix(page),
        course=Link(label(course.title, course.id),
                    names.rel_href(page, names.course_page(course.id), names.step_anchor(st.id))),
        number=i + 1, id=st.id, title=label(st.title, st.id), text=text_view(st.text),
        goals=tuple(text_view(g) for g in st.goals),
        reading=tuple(_reading_item(ctx, page, r) for r in st.refs),
        harness=runs_link(ctx, page, st.harness) if st.harness else None,
        traces=tuple(trace_link(ctx, page, t.entry) for t in ctx.traces if st.id in t.steps),
        questions=questions, homework=tuple(text_view(h) for h in ex.homework),
        checkpoints=tuple(CheckpointView(names.tick_key(course.id, st.id, n), text_view(c))
                          for n, c in enumerate(ex.checkpoints, 1)),
        prev=neighbour(i - 1), next=neighbour(i + 1))


def _reading_item(ctx: SiteContext, page: str, ref: str) -> ReadingItem:
    """A reading-list entry: where it leads, and whether a reviewer's note is there (on the
    function, type or macro, or on anything of the file)."""
    target = resolve_ref(ctx, ref)
    if isinstance(target, Symbol):
        annotated = target.key in ctx.notes
    elif isinstance(target, TypeDef):
        annotated = target.key in ctx.type_notes
    elif isinstance(target, MacroDef):
        annotated = target.key in ctx.macro_notes
    elif target is not None:
        annotated = target in ctx.noted_files or any(s.key in ctx.notes for s in ctx.rendered[target].symbols)
    else:
        annotated = False
    return ReadingItem(ref_link(ctx, page, ref), annotated)


SEARCH_TEXT = 300  # characters of note text kept per function and language


def _note_text(note: FunctionNote | TypeNote | MacroNote, lang: str) -> str:
    """What search finds a definition by besides its name: its summary and first look (a type's
    layout, a macro's expansion), plain."""
    second = getattr(note, "first_look", None) or getattr(note, "layout", None) or getattr(note, "expands_to", None)
    parts = (text_plain(note.summary, lang), text_plain(second, lang))
    return " ".join(x for x in parts if x)[:SEARCH_TEXT]


def search_data(ctx: SiteContext) -> dict:
    """The client-side search index as the browser holds it once both parts are loaded: pages
    once, then one compact row per function, type and macro: [qualified name, kind, page number,
    anchor, annotated 0/1, note text en, note text zh]. Search matches the name and the note text
    in either language, whatever the page shows. The site ships it in two parts: what follows
    from the index alone (`search_base`, `search-index.js`) and what the notes and courses add
    (`search_notes`, `search-notes.js`), so that a note edit rewrites only the second."""
    base = search_base(ctx)
    return merge_search(base, search_notes(search_rows(base["keys"]), ctx))


def search_base(ctx: SiteContext) -> dict:
    """The part of the search index that follows from the index alone (the build caches it by
    the index's key, so that a note edit does not walk every definition): the pages, a row per
    function, type and macro as it is without a note, the files; `keys` names each row's
    definition (["function" | "type" | "macro", its key])."""
    pages: list[str] = []
    page_no: dict[str, int] = {}

    def number(page: str) -> int:
        if page not in page_no:
            page_no[page] = len(pages)
            pages.append(page)
        return page_no[page]

    rows, keys = [], []
    for key, s in sorted(ctx.symbols.items(), key=lambda kv: (kv[1].upstream, kv[1].path, kv[1].start_line)):
        page, anchor = names.symbol_href_target(key)
        rows.append([s.qualified_name, s.kind, number(page), anchor, 0, "", ""])
        keys.append(["function", key])
    # types and macros link to their line; an annotated one to its note's heading, on the same
    # page (search_with_notes)
    for (up, path), fi in ctx.rendered.items():
        for d, what in [*((t, "type") for t in fi.types), *((m, "macro") for m in fi.macros)]:
            page, anchor = names.source_page(up, path), names.line_anchor(d.start_line)
            name = d.qualified_name + (f"<{d.specialization}>" if what == "type" and d.specialization else "")
            rows.append([name, "macro" if what == "macro" else d.kind, number(page), anchor, 0, "", ""])
            keys.append([what, d.key])
    files = [[f"{up}:{path}", number(names.source_page(up, path))] for (up, path) in ctx.rendered]
    return {"pages": pages, "symbols": rows, "keys": keys, "files": files}


def checked_search_keys(keys: object) -> list | None:
    """`search_base`'s `keys` as read back from the cache, or None when they are not such a list."""
    if isinstance(keys, list) and all(isinstance(k, list) and len(k) == 2 and k[0] in ("function", "type", "macro")
                                      and isinstance(k[1], str) for k in keys):
        return keys
    return None


def checked_search_base(data: object) -> dict | None:
    """`search_base` as read back from the cache, or None when it is not one (the build makes it
    again): the shape is checked, the text is data that the search index escapes as JSON."""
    if not isinstance(data, dict) or set(data) != {"pages", "symbols", "keys", "files"}:
        return None
    pages, rows, keys, files = data["pages"], data["symbols"], data["keys"], data["files"]
    if not (isinstance(pages, list) and isinstance(rows, list) and checked_search_keys(keys) is not None
            and isinstance(files, list) and len(rows) == len(keys) and all(isinstance(p, str) for p in pages)
            and all(isinstance(r, list) and len(r) == 7 and isinstance(r[2], int) for r in rows)
            and all(isinstance(f, list) and len(f) == 2 for f in files)):
        return None
    return data


def search_rows(keys: list) -> dict[tuple[str, str], int]:
    """(kind, key) -> its row in `search_base`'s symbols, from the base's `keys`."""
    return {(what, key): i for i, (what, key) in enumerate(keys)}


def search_notes(rows: Mapping[tuple[str, str], int], ctx: SiteContext) -> dict:
    """What the notes, the courses and the traces add to `search_base` (whose rows `rows`
    numbers): per annotated definition [its row, the anchor of its note, note text en, zh]; the
    course and step titles and the traced entry points."""
    notes = []
    for what, by_key in (("function", ctx.notes), ("type", ctx.type_notes), ("macro", ctx.macro_notes)):
        for key, note in sorted(by_key.items()):
            row = rows.get((what, key))
            if row is None:
                continue
            anchor = names.symbol_href_target(key)[1] if what == "function" else \
                names.definition_href_target(key, what)[1]
            notes.append([row, anchor, _note_text(note, "en"), _note_text(note, "zh")])
    notes.sort(key=lambda n: n[0])
    courses = [[c.title.en or c.id, names.course_page(c.id), c.title.zh or ""] for c in ctx.courses.values()]
    courses += [[st.title.en or st.id, names.step_page(c.id, st.id), st.title.zh or "", "js.step"]
                for c in ctx.courses.values() for st in c.steps]
    courses += [[t.entry, names.trace_page(t.entry), "", "js.trace"] for t in ctx.traces]
    return {"v": 3, "notes": notes, "courses": courses}


def merge_search(base: dict, notes: dict) -> dict:
    """The two parts as search.js merges them in the browser (`search_data`)."""
    rows = [list(r) for r in base["symbols"]]
    for row, anchor, en, zh in notes["notes"]:
        rows[row][3:7] = [anchor, 1, en, zh]
    return {"v": 3, "pages": base["pages"], "symbols": rows, "files": base["files"], "courses": notes["courses"]}


# ---- traces ---------------------------------------------------------------------------------------

def trace_page(ctx: SiteContext, t: TraceData) -> TracePage:
    """One traced entry point: its chains as a tree (chains sharing their first hops share them),
    each hop with its kind, the code that makes it (linked to its line), the conditions it is
    taken under and the dispatch macros it passes; the kernels at the ends, with their harnesses."""
    page = names.trace_page(t.entry)

    def hop_view(h: HopData) -> HopView:
        where = _line_link(ctx, page, h.upstream, h.path, h.line)
        target = symbol_link(ctx, page, h.dst, label=h.target) if h.dst else Link(trace_words(h.target, "targets"))
        guards = tuple(guard_view(h.upstream, g) for g in h.guards)
        dispatch = tuple(DispatchView(d.macro, _where_link(ctx, page, h.upstream, d.defined_at), d.branches, d.total,
                                      d.generated) for d in h.dispatch)
        return HopView(h.kind, _hop_label(h.kind), where, target, h.written, guards, dispatch, trace_words(h.detail),
                       ", ".join(f"{a}={b}" for a, b in h.binds))

    def guard_view(upstream: str, g: GuardData) -> GuardView:
        return GuardView(g.text, _line_link(ctx, page, upstream, g.path, g.line), g.decided is not None,
                         note_words(g.note))

    # the tree: a node per distinct hop under the same parent
    roots: dict = {}
    for c in t.chains:
        level = roots
        for i, h in enumerate(c.hops):
            node = level.setdefault(h, {"children": {}, "kernel": None})
            if i == len(c.hops) - 1:
                node["kernel"] = c.kernel
            level = node["children"]

    def build(level: dict) -> tuple[TraceNode, ...]:
        out = []
        for h, node in level.items():
            k = node["kernel"]
            out.append(TraceNode(hop_view(h), build(node["children"]),
                                 symbol_link(ctx, page, k) if k else None,
                                 tuple(runs_link(ctx, page, r) for r in ctx.harness_of.get(k, ())) if k else ()))
        return tuple(out)

    kernels = tuple(symbol_link(ctx, page, k) for k in dict.fromkeys(c.kernel for c in t.chains))
    upstream = names.split_key(t.entry_key)[0]
    when = ",".join(f"{k}={v}" for k, v in t.when)
    steps = []
    for sid in t.steps:
        if sid in ctx.steps:
            course_id, i = ctx.steps[sid]
            st = ctx.courses[course_id].steps[i]
            steps.append(Link(label(st.title, sid), names.rel_href(page, names.step_page(course_id, sid)), sid))
    return TracePage(
        page=page, root=names.root_prefix(page), entry=t.entry,
        entry_link=symbol_link(ctx, page, t.entry_key, label=t.entry), when=t.when,
        command=f"annotate trace {t.entry}" + (f" --when '{when}'" if when else ""),
        steps=tuple(steps), roots=build(roots), chains=len(t.chains), kernels=kernels,
        undecided=tuple(guard_view(upstream, g) for g in t.undecided),
        dead_ends=tuple(DeadEndView(trace_words(d.reason), tuple(hop_view(h) for h in d.hops)) for d in t.dead_ends),
        truncated=t.truncated)


def _hop_label(kind: str) -> str | Msg:
    from site_builder.i18n import catalogue

    mid = "hop." + kind
    return Msg(mid) if mid in catalogue() else kind


def _line_link(ctx: SiteContext, page: str, upstream: str, path: str, line: int) -> Link:
    """`path:line`, linking to the line where the file is on the site."""
    label_ = f"{path}:{line}"
    if (upstream, path) in ctx.rendered:
        return Link(label_, names.rel_href(page, names.source_page(upstream, path), names.line_anchor(line)))
    return Link(label_)


def _where_link(ctx: SiteContext, page: str, upstream: str, where: str) -> Link:
    path, _, line = where.rpartition(":")
    return _line_link(ctx, page, upstream, path, int(line)) if line.isdigit() and path else Link(where)

"""The pages around the code: the home page (pins, coverage, courses, runnable kernels,
reviewers' diagnostics), one page per course map, and the client-side search index."""

from __future__ import annotations

import hashlib

from annotate.index.model import Symbol
from annotate.notes.model import Course, CourseStep, FunctionNote
from site_builder import names
from site_builder.context import (SiteContext, cite_link, label, ref_link, resolve_ref, runs_link, text_plain,
                                  text_view)
from site_builder.model import (
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
                     runnable_rows(ctx, page), names.runnable_anchor())


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
        questions=questions, homework=tuple(text_view(h) for h in ex.homework),
        checkpoints=tuple(CheckpointView(names.tick_key(course.id, st.id, n), text_view(c))
                          for n, c in enumerate(ex.checkpoints, 1)),
        prev=neighbour(i - 1), next=neighbour(i + 1))


def _reading_item(ctx: SiteContext, page: str, ref: str) -> ReadingItem:
    """A reading-list entry: where it leads, and whether a reviewer's note is there (on the
    function, or on any function of the file)."""
    target = resolve_ref(ctx, ref)
    if isinstance(target, Symbol):
        annotated = target.key in ctx.notes
    elif target is not None:
        annotated = any(s.key in ctx.notes for s in ctx.rendered[target].symbols)
    else:
        annotated = False
    return ReadingItem(ref_link(ctx, page, ref), annotated)


def search_digest(ctx: SiteContext) -> str:
    """What the annotations contribute to the search index (the index's key covers the rest)."""
    parts = [f"{k}\0{_note_text(n, 'en')}\0{_note_text(n, 'zh')}" for k, n in sorted(ctx.notes.items())]
    parts += [f"{c.id}\0{c.title!r}\0{[st.title for st in c.steps]!r}" for c in ctx.courses.values()]
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


SEARCH_TEXT = 300  # characters of note text kept per function and language


def _note_text(note: FunctionNote, lang: str) -> str:
    """What search finds a function by besides its name: its summary and first look, plain."""
    parts = (text_plain(note.summary, lang), text_plain(note.first_look, lang))
    return " ".join(x for x in parts if x)[:SEARCH_TEXT]


def search_data(ctx: SiteContext) -> dict:
    """The client-side search index: pages once, then one compact row per function:
    [qualified name, kind, page number, anchor, annotated 0/1, note text en, note text zh].
    Search matches the name and the note text in either language, whatever the page shows."""
    pages: list[str] = []
    page_no: dict[str, int] = {}

    def number(page: str) -> int:
        if page not in page_no:
            page_no[page] = len(pages)
            pages.append(page)
        return page_no[page]

    rows = []
    for key, s in sorted(ctx.symbols.items(), key=lambda kv: (kv[1].upstream, kv[1].path, kv[1].start_line)):
        page, anchor = names.symbol_href_target(key)
        note = ctx.notes.get(key)
        en, zh = (_note_text(note, "en"), _note_text(note, "zh")) if note is not None else ("", "")
        rows.append([s.qualified_name, s.kind, number(page), anchor, 1 if note is not None else 0, en, zh])
    files = [[f"{up}:{path}", number(names.source_page(up, path))] for (up, path) in ctx.rendered]
    courses = [[c.title.en or c.id, names.course_page(c.id), c.title.zh or ""] for c in ctx.courses.values()]
    courses += [[st.title.en or st.id, names.step_page(c.id, st.id), st.title.zh or "", "js.step"]
                for c in ctx.courses.values() for st in c.steps]
    return {"v": 2, "pages": pages, "symbols": rows, "files": files, "courses": courses}

"""The site's page model and templates on the demo fixture (tests/data/site).

Two snapshots per page (tests/data/site/snapshots/): a text dump of the model (`*.model.txt`)
and the rendered HTML (`*.html`), so that a model change and a template change show up in
different diffs; plus assertions on the HTML. A missing snapshot fails; after an intended change
regenerate them with `pytest tests/test_site_model.py --update-snapshots` (or run this file
directly) and review the diff.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import (  # noqa: E402
    DECODE, EVIL_MARKDOWN, NORM, REPO, SNAPSHOTS, UP, demo_context, dump_model, dump_page,
)

from annotate.config import Config  # noqa: E402
from site_builder import file_pages, names, site_pages  # noqa: E402
from site_builder.code import build_page, pieces  # noqa: E402
from site_builder.graph import GNode, layout  # noqa: E402
from site_builder.highlight import _grammar, highlight  # noqa: E402
from site_builder.markdown import render_markdown  # noqa: E402
from site_builder.render import (render_course, render_file, render_index, render_search_index,  # noqa: E402
                                 render_search_notes, render_step)

@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Config:
    """The fixture repository (one harness spec, two records); a cache of its own."""
    return Config.load(environ={}, cache_dir=tmp_path_factory.mktemp("cache"), repo_root=REPO)


@pytest.fixture(scope="module")
def bare_config(tmp_path_factory) -> Config:
    """A repository root with no harness at all."""
    root = tmp_path_factory.mktemp("bare")
    return Config.load(environ={}, cache_dir=root / "cache", repo_root=root)


def _page(config: Config, path: str, **kw):
    ctx = demo_context(config, **kw)
    plan = file_pages.plan_file(ctx, UP, path)
    text = ctx.index.source(UP, path)
    return ctx, build_page(plan, text, highlight(text, "cuda"))


@pytest.mark.parametrize("path", [NORM, DECODE])
def test_file_page_snapshots(config, snapshot, path):
    _, page = _page(config, path, stale_decode=True)
    snapshot(SNAPSHOTS / (Path(path).name + ".model.txt"), dump_page(page))
    snapshot(SNAPSHOTS / (Path(path).name + ".html"), render_file(page))


def test_home_course_and_search_snapshots(config, snapshot):
    ctx = demo_context(config)
    home = site_pages.index_page(ctx, {(UP, NORM): 36, (UP, DECODE): 28})
    snapshot(SNAPSHOTS / "index.model.txt", dump_model(home))
    snapshot(SNAPSHOTS / "index.html", render_index(home))
    course = site_pages.course_page(ctx, ctx.courses["demo-course"])
    snapshot(SNAPSHOTS / "course-demo-course.model.txt", dump_model(course))
    snapshot(SNAPSHOTS / "course-demo-course.html", render_course(course))
    step = site_pages.step_page(ctx, ctx.courses["demo-course"], 0)
    snapshot(SNAPSHOTS / "step-demo-course-day-1.model.txt", dump_model(step))
    snapshot(SNAPSHOTS / "step-demo-course-day-1.html", render_step(step))
    base = site_pages.search_base(ctx)
    snapshot(SNAPSHOTS / "search-index.js", render_search_index(base))
    snapshot(SNAPSHOTS / "search-notes.js", render_search_notes(site_pages.search_notes(site_pages.search_rows(base["keys"]), ctx)))


def test_sections_follow_functions_and_notes(config):
    _, page = _page(config, NORM)
    heads = [s.function.name for s in page.sections if s.head]
    assert heads == ["shfl_xor_sync", "RMSNormKernel", "RMSNorm"]
    kernel = next(s for s in page.sections if s.head and s.function.name == "RMSNormKernel")
    # The in-body note opens a new row at its line, beside the code it explains.
    noted = [r for r in kernel.rows if r.note]
    assert len(noted) == 1 and "sum_sq += math::shfl_xor_sync" in "".join(t for _, t, _ in pieces(noted[0].lines[0]))
    assert kernel.lead_rows == 1
    # Every line of the file appears exactly once, in order.
    nos = [ln.no for s in page.sections for r in s.rows for ln in r.lines]
    assert nos == list(range(1, page.line_count + 1))


def test_file_page_html(config):
    _, page = _page(config, NORM)
    html = render_file(page)
    # stable line anchors and function anchors
    for n in (1, 12, page.line_count):
        assert f"<p id=L{n}>" in html or f"<p id=L{n} class=n>" in html
    assert 'id="f-RMSNormKernel-12"' in html and 'id="f-shfl_xor_sync-7"' in html
    # source text is escaped, never interpreted
    assert "<b>not markup</b>" not in html and "&lt;b&gt;not markup&lt;/b&gt;" in html
    assert "&lt;/b&gt; &amp; more" in html and "&lt;<b>typename</b>" in html
    # the annotation sits beside its function, with the note's Markdown rendered
    assert '<aside class="note fn"' in html and "<strong>warp reduction</strong>" in html
    assert '<aside class="note in"' in html and "Five butterfly steps" in html
    # a call links to its definition (same page), the launch edge is marked
    assert '<a href="#f-shfl_xor_sync-7">shfl_xor_sync</a>' in html
    assert 'class="e launch"' in html
    # memory facts: markers on their lines and a legend
    # (its words in both languages: the rule's English template read back, its Chinese filled)
    assert re.search(r'<p id=L14>.*?<sup class="fm fc1" tabindex=0 title="访存特征 shared-static：静态 shared memory：'
                     r'[^"]*" data-en-title="shared-static: static shared memory: [^"]*"[^>]*>S</sup>', html)
    assert '<dl class="legend">' in html
    # unresolved names stay plain text in the code
    assert "rsqrtf</a>" not in html


def test_cross_file_links_and_unresolved_names(config):
    _, page = _page(config, DECODE, stale_decode=True)
    html = render_file(page)
    assert '<a href="norm.cuh.html#f-shfl_xor_sync-7">shfl_xor_sync</a>' in html
    assert '<a href="norm.cuh.html#f-RMSNorm-31">RMSNorm</a>' in html
    assert "undefined_helper</a>" not in html and "undefined_helper(out)" in html
    # the stale note is visibly marked
    assert '<div class="fg an stale"' in html and "changed since the note was written" in html


def _elements(html: str) -> list[tuple[str, dict]]:
    from html.parser import HTMLParser

    found = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    P().feed(html)
    return found


def assert_inert(html: str) -> None:
    """No script or image element, no event-handler attribute, no script/data URL."""
    for tag, attrs in _elements(html):
        assert tag not in ("script", "img", "iframe", "object", "embed"), tag
        for k, v in attrs.items():
            assert not k.startswith("on"), (tag, k)
            if k in ("href", "src", "action", "xlink:href"):
                assert not (v or "").strip().lower().startswith(("javascript:", "data:", "vbscript:")), (tag, v)


def test_code_text_escaping():
    from site_builder.code import escape_attr, escape_text, line_pieces
    from site_builder.model import CodeLink

    assert escape_text('a < b && c > "d"') == 'a &lt; b &amp;&amp; c &gt; "d"'
    assert escape_attr('x"><script>&') == "x&quot;&gt;&lt;script&gt;&amp;"
    pieces = line_pieces('f<int>(x) && "<s>"', ((10, 18, "s"),), [CodeLink(1, 0, "f", 'p.html#a"b', "f")], None)
    assert pieces == (("", "f", 'p.html#a&quot;b'), ("", "&lt;int&gt;(x) ", None), ("", "&amp;&amp; ", None),
                      ("s", '"&lt;s&gt;"', None)) or "".join(t for _, t, _ in pieces) == 'f&lt;int&gt;(x) &amp;&amp; "&lt;s&gt;"'


def test_hostile_annotation_is_neutralised(config):
    _, page = _page(config, NORM, evil=True)
    html = render_file(page)
    aside = html[html.index('<aside class="note fn"'):]
    aside = aside[: aside.index("</aside>")]
    assert "window.__pwned" in aside  # the text is shown ...
    assert_inert(aside)  # ... and nothing in it can run
    scripts = [a.get("src") for t, a in _elements(html) if t == "script"]
    assert scripts == [f"../../../../assets/{js}.js" for js in ("lang", "site", "messages", "search")]


def test_markdown_sanitiser():
    html = str(render_markdown(EVIL_MARKDOWN + "\n\n# Title\n\n[ok](https://example.org) <b onclick=x>b</b>"))
    assert_inert(html)
    assert '<a href="https://example.org" rel="noopener noreferrer">ok</a>' in html
    assert "<h4>Title</h4>" in html  # headings are demoted below the page's own


def test_index_course_and_search(bare_config):
    ctx = demo_context(bare_config)
    idx = site_pages.index_page(ctx, {(UP, NORM): 36, (UP, DECODE): 28})
    up = idx.upstreams[0]
    assert (up.coverage.functions, up.coverage.annotated) == (7, 2)
    html = render_index(idx)
    assert 'href="https://example.invalid/demo/tree/' in html  # the pin links to its commit
    assert 'href="src/demo/include/demo/norm.cuh.html"' in html
    assert 'href="courses/demo-course.html"' in html
    course = site_pages.course_page(ctx, next(iter(ctx.courses.values())))
    chtml = render_course(course)
    assert 'href="../src/demo/include/demo/norm.cuh.html#f-RMSNormKernel-12"' in chtml
    assert ('<span class="unres" title="索引中找不到" data-en-title="not found in the index" '
            'data-zh-title="索引中找不到">demo:no::such_thing</span>') in chtml
    base = site_pages.search_base(ctx)
    js = render_search_index(base)
    assert js.startswith("window.ANNOTATE_SEARCH=") and "demo::RMSNormKernel" in js and "</script" not in js
    notes = render_search_notes(site_pages.search_notes(site_pages.search_rows(base["keys"]), ctx))
    assert notes.startswith("window.ANNOTATE_SEARCH_NOTES=") and "</script" not in notes


def test_step_page(config):
    ctx = demo_context(config)
    step = site_pages.step_page(ctx, ctx.courses["demo-course"], 0)
    assert step.page == "courses/demo-course/day-1.html" and step.root == "../../"
    assert [(r.link.href, r.annotated) for r in step.reading] == [
        ("../../src/demo/include/demo/norm.cuh.html#f-RMSNormKernel-12", True),
        ("../../src/demo/include/demo/norm.cuh.html", True)]
    assert step.harness.href == "../../runs/rmsnorm.html"
    (q,) = step.questions
    assert [(c.label, c.href) for c in q.cites] == [
        ("norm.cuh:20–22", "../../src/demo/include/demo/norm.cuh.html#L20"),
        ("demo::math::shfl_xor_sync", "../../src/demo/include/demo/norm.cuh.html#f-shfl_xor_sync-7"),
        ("gone.cuh:3", None)]  # not on the site: plain text
    assert [c.key for c in step.checkpoints] == ["annotate-tick:demo-course/day-1/1"]
    assert step.prev is None and step.next.href == "day-2.html"
    assert step.course.href == "../demo-course.html#step-day-1"
    html = render_step(step)
    assert '<details class="answer"><summary>' in html and 'data-tick="annotate-tick:demo-course/day-1/1"' in html
    # a function's course tag that names a step leads to the step's page
    plan = file_pages.plan_file(ctx, UP, NORM)
    kern = next(f for f in plan.functions if f.qualified_name == "demo::RMSNormKernel")
    from site_builder.model import NoteLinksPanel

    (links,) = [p for p in kern.aside if isinstance(p, NoteLinksPanel)]
    assert [c.href for c in links.courses] == ["../../../../courses/demo-course.html",
                                              "../../../../courses/demo-course/day-1.html"]


def _step_with_refs(config, refs: tuple[str, ...], keep_type_notes: bool = True):
    """The step page of a one-step course reading `refs`, on the demo fixture's annotations
    (without its notes on types and macros when `keep_type_notes` is false)."""
    import dataclasses

    from annotate.notes import model as M
    from annotate.project import open_project
    from site_builder.context import site_context
    from site_support import demo_annotations, demo_index, demo_upstream

    index = demo_index()
    aset = demo_annotations(index)
    course = M.Course("c", M.Text("C"), None, (M.CourseStep("s", M.Text("S"), None, refs),))
    files = aset.files if keep_type_notes else tuple(dataclasses.replace(f, types=(), macros=()) for f in aset.files)
    aset = dataclasses.replace(aset, files=files, courses=(course,))
    ctx = site_context(open_project(config, index=index, annotations=aset, pins={UP: demo_upstream()}))
    return site_pages.step_page(ctx, ctx.courses["c"], 0)


def test_files_outside_the_render_paths_are_shown_when_annotated_or_on_a_reading_list(config):
    """A pin indexes more than it renders (Flash-Attention's cutlass submodule): a file outside
    every `render` path still gets its page when an annotation file is about it or a course ref
    names it (or a definition in it), and no other such file does."""
    import dataclasses

    from annotate.notes import model as M
    from annotate.project import open_project
    from site_builder.context import site_context
    from site_support import demo_annotations, demo_index, demo_upstream

    index = demo_index()
    narrow = dataclasses.replace(demo_upstream(), render=("include/demo/none/",))
    aset = demo_annotations(index)

    def rendered(files, refs):
        course = M.Course("c", M.Text("C"), None, (M.CourseStep("s", M.Text("S"), None, refs),))
        a = dataclasses.replace(aset, files=files, courses=(course,))
        ctx = site_context(open_project(config, index=index, annotations=a, pins={UP: narrow}))
        return sorted(p for _, p in ctx.rendered), ctx

    assert rendered((), ())[0] == []
    norm_only = tuple(f for f in aset.files if f.path == NORM)
    assert rendered(norm_only, ())[0] == [NORM]  # its annotation file
    assert rendered((), (f"{UP}:{DECODE}",))[0] == [DECODE]  # a file ref
    got, ctx = rendered((), (f"{UP}:demo::DecodeKernel", f"{UP}:no::such_thing"))
    assert got == [DECODE]  # the file defining a named function
    step = site_pages.step_page(ctx, ctx.courses["c"], 0)
    assert step.reading[0].link.href == "../../src/demo/include/demo/decode.cuh.html#f-DecodeKernel-14"


def test_step_refs_to_types_and_macros_link_to_their_notes(config):
    step = _step_with_refs(config, (f"{UP}:demo::DecodeParams", f"{UP}:DEMO_SWITCH", f"{UP}:DecodeParams",
                                    f"{UP}:demo::NoSuchType"))
    assert [(r.link.label, r.link.href, r.annotated) for r in step.reading] == [
        ("demo::DecodeParams", "../../src/demo/include/demo/decode.cuh.html#t-DecodeParams-41", True),
        ("DEMO_SWITCH", "../../src/demo/include/demo/decode.cuh.html#m-DEMO_SWITCH-31", True),
        ("demo::DecodeParams", "../../src/demo/include/demo/decode.cuh.html#t-DecodeParams-41", True),
        ("demo:demo::NoSuchType", None, False)]  # still not found, as before
    html = render_step(step)
    assert 'href="../../src/demo/include/demo/decode.cuh.html#m-DEMO_SWITCH-31"' in html


def test_step_refs_to_unannotated_types_and_macros_link_to_their_first_line(config):
    step = _step_with_refs(config, (f"{UP}:demo::DecodeParams", f"{UP}:DEMO_SWITCH"), keep_type_notes=False)
    assert [(r.link.href, r.annotated) for r in step.reading] == [
        ("../../src/demo/include/demo/decode.cuh.html#L41", False),
        ("../../src/demo/include/demo/decode.cuh.html#L31", False)]


def test_names():
    key = "flashinfer:flashinfer::norm::RMSNormKernel@include/flashinfer/norm.cuh:42"
    assert names.split_key(key) == ("flashinfer", "flashinfer::norm::RMSNormKernel", "include/flashinfer/norm.cuh", 42)
    assert names.symbol_anchor(key) == "f-RMSNormKernel-42"
    assert names.symbol_anchor("x:a::operator()@a.h:3") == "f-operator_-3"
    assert names.source_page("flashinfer", "include/a.cuh") == "src/flashinfer/include/a.cuh.html"
    assert names.rel_href("src/u/include/x/a.html", "src/u/include/y/b.html", "L3") == "../y/b.html#L3"
    assert names.rel_href("src/u/a.html", "src/u/a.html", "L3") == "#L3"
    assert names.rel_href("index.html", "src/u/a.html") == "src/u/a.html"
    assert names.rel_href("courses/c.html", "index.html") == "../index.html"
    assert names.root_prefix("src/u/include/a.html") == "../../../"


def test_queries_compile_against_pinned_grammars():
    for lang in ("cuda", "python"):
        _grammar(lang)
    toks = highlight('__global__ void k() { int x = 1; /* c */ return; }\n', "cuda")[0]
    classes = {c for _, _, c in toks}
    assert {"m", "t", "f", "n", "c", "k"} <= classes
    py = highlight("def f(x):\n    return 'a'  # c\n", "python")
    assert ("f" in {c for _, _, c in py[0]}) and {"s", "c"} <= {c for _, _, c in py[1]}


def test_non_ascii_columns():
    text = 'int a = 1; // é ü\nconst char* s = "ß"; int b = 2;\n'
    toks = highlight(text, "cuda")
    line = text.split("\n")[1]
    assert any(line[a:b] == "2" and c == "n" for a, b, c in toks[1])


def test_graph_layout_layers_do_not_overlap():
    nodes = [GNode("s", "self", "", None, "self", 0)] + [
        GNode(f"c{i}", f"caller_{i}", "", "#", "caller", -1) for i in range(14)] + [
        GNode(f"d{i}", f"callee_{i}", "", None, "callee", 1) for i in range(3)]
    edges = [(f"c{i}", "s", "call") for i in range(14)] + [("s", "d0", "launch"), ("s", "d1", "call"), ("s", "d2", "call")]
    g = layout(nodes, edges)
    assert any(n.role == "more" for n in g.nodes)  # 14 callers fold into 8 + "+6 more"
    boxes = [(n.x, n.y, n.x + n.w, n.y + n.h) for n in g.nodes]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
    assert all(0 <= n.x and n.x + n.w <= g.width and n.y + n.h <= g.height for n in g.nodes)
    assert sum(e.kind == "launch" for e in g.edges) == 1


def test_graph_overflow_keeps_the_important_callees():
    # 12 callees: the three ranked 0 (annotated) sort last by name but must stay visible,
    # the intrinsics (rank 3) fold into "+N more".
    nodes = [GNode("s", "self", "", None, "self", 0)] + [
        GNode(f"i{i}", f"a_intrinsic_{i}", "", None, "callee", 1, 3) for i in range(9)] + [
        GNode(f"k{i}", f"z_kernel_step_{i}", "", "#", "callee", 1, 0) for i in range(3)]
    g = layout(nodes, [("s", n.id, "call") for n in nodes[1:]])
    shown = {n.label for n in g.nodes}
    assert {"z_kernel_step_0", "z_kernel_step_1", "z_kernel_step_2"} <= shown
    assert "+4 more" in shown


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "--update-snapshots"]))

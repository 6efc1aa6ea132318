"""The compiled view and the notes on types and macros in the site's page model, on the demo
fixture: the SASS markers of each line (per kernel and arch, expandable), the compiler's verdict
beside the index's memory facts (joined by line and rule, the words the index's), the per-line
profile with a profile of an older build flagged, a kernel's resources, the annotated types and
macros with their members' notes at their lines, their users, the uses of a function, search,
and the page key following the records.

The fixture's SASS records and fact reports were made by nvcc from the demo sources
(tests/data/site/make_compiled.py); its identity card and profiles are made up.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import DECODE, NORM, REPO, UP, demo_context, demo_index  # noqa: E402

from annotate.config import Config  # noqa: E402
from annotate.harness.compiled import load_compiled  # noqa: E402
from annotate.harness.sassfacts import FactCheck  # noqa: E402
from site_builder import file_pages, names, site_pages  # noqa: E402
from site_builder.code import build_page  # noqa: E402
from site_builder.compiled import compiled_site, fact_verdict, named_counts, short_opcode  # noqa: E402
from site_builder.highlight import highlight  # noqa: E402
from site_builder.i18n import pair  # noqa: E402
from site_builder.model import ProfileBody, ResourcesPanel, SassBody, TextPanel, UsersPanel, UsesPanel  # noqa: E402
from site_builder.render import render_file  # noqa: E402


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Config:
    return Config.load(environ={}, cache_dir=tmp_path_factory.mktemp("cache"), repo_root=REPO)


@pytest.fixture(scope="module")
def ctx(config):
    return demo_context(config)


def en(x) -> str:
    return pair(x)[0]


def _marks(plan, source: str) -> dict:
    return {m.line: m for m in plan.marks if m.source == source}


def _html(ctx, path: str) -> str:
    plan = file_pages.plan_file(ctx, UP, path)
    text = ctx.index.source(UP, path)
    return render_file(build_page(plan, text, highlight(text, "cuda")))


# ---- opcodes -------------------------------------------------------------------------------------

def test_opcodes_keep_what_a_reader_looks_for():
    assert short_opcode("LDGSTS.E.BYPASS.LTC128B.128") == "LDGSTS"
    assert short_opcode("LDG.E.128") == "LDG.E.128" and short_opcode("LDS.U.128") == "LDS.128"
    assert short_opcode("HMMA.16816.F32") == "HMMA" and short_opcode("BAR.SYNC.DEFER_BLOCKING") == "BAR"
    # the table's order (global memory first), arithmetic left out, one family's forms summed
    assert named_counts({"FFMA": 9, "SHFL.BFLY": 5, "LDG.E.128": 1, "LDG.E": 2, "LDGSTS.E.BYPASS.128": 8}) == [
        ("LDGSTS", 8), ("LDG.E", 2), ("LDG.E.128", 1), ("SHFL", 5)]


# ---- SASS markers ----------------------------------------------------------------------------------

def test_a_line_shows_what_it_compiled_to_in_each_kernel_and_arch(ctx):
    plan = file_pages.plan_file(ctx, UP, DECODE)
    sass = _marks(plan, "sass")
    loads = sass[17]  # acc += q[i] * k[i];
    assert (loads.kind, loads.abbr, loads.css) == ("LDG", "LDG.E×2", "sm fc6")
    body = loads.body
    assert isinstance(body, SassBody) and [(b.ref, b.arch) for b in body.blocks] == [("1", "90"), ("3", "80")]
    assert "LDG.E×2" in body.blocks[0].counts and any("LDG.E " in s for s in body.blocks[0].sass)
    assert body.command == "annotate sass warp_decode --line demo:include/demo/decode.cuh:17"
    # a call line: nothing of its own, the shuffles of the helper inlined there
    call = sass[19]  # acc = warp_sum(acc);
    assert call.abbr == "SHFL×5" and call.body.blocks[0].counts == "" and "SHFL.BFLY×5" in call.body.blocks[0].via
    # a line of plain arithmetic counts its instructions
    assert sass[16].kind == "code" and sass[16].abbr.isdigit() and sass[16].css == "sm sg"
    # the instantiations the numbers refer to, newest arch first
    refs = [(r.ref, r.arch, r.function) for r in plan.compiled_refs if not r.shape]
    assert refs == [("1", "90", "demo::DecodeKernel"), ("2", "90", "demo::ParamsKernel"),
                    ("3", "80", "demo::DecodeKernel"), ("4", "80", "demo::ParamsKernel")]
    assert all(r.kernel.href == "../../../../runs/warp_decode.html" for r in plan.compiled_refs)
    # the legend names the families found, plain code last
    (legend,) = [lg for lg in plan.legends if lg.source == "sass"]
    kinds = [e.kind for e in legend.entries]
    assert kinds[-1] == "code" and "LDG" in kinds and "SHFL" in kinds
    assert en(next(e.label for e in legend.entries if e.kind == "LDG")) == "global load"


def test_a_helper_inlined_into_two_kernels_lists_both(ctx):
    """norm.cuh's shuffle helper is inlined into rmsnorm's kernel and into warp_decode's."""
    plan = file_pages.plan_file(ctx, UP, NORM)
    body = _marks(plan, "sass")[8].body
    kernels = {r.ref: r.kernel.label for r in plan.compiled_refs}
    assert sorted({kernels[b.ref] for b in body.blocks}) == ["rmsnorm", "warp_decode"]
    assert [b.arch for b in body.blocks] == ["90", "90", "80", "80"]


def test_the_sass_expands_under_its_line_in_phrasing_markup(ctx):
    html = _html(ctx, DECODE)
    line = html[html.index("<p id=L17>"):]
    line = line[: line.index("<p id=L18>")]
    assert '<button type=button class="fm sm fc6" aria-expanded=false>LDG.E×2</button><span class="mx">' in line
    # a block element would end the <p>: only span / code / a inside the expansion
    body = line[line.index('<span class="mx">'):]
    assert not any(f"<{t}" in body for t in ("div", "table", "pre", "details", "p ", "ul", "section"))
    assert "#1 sm_90" in body and "00f0 LDG.E R2, desc[UR4][R2.64]" in body


def test_sass_text_is_escaped(config, tmp_path):
    """Record text is data: an operand that looks like markup stays text."""
    view = load_compiled(config, "warp_decode")
    rec = view.sass[0]
    fn = rec.functions[1]
    sf = fn.files[0]
    ln = replace(sf.lines[0], sass=('0000 <script>window.__pwned=1</script>',))
    hostile = replace(rec, functions=(rec.functions[0], replace(fn, files=(replace(sf, lines=(ln, *sf.lines[1:])),))))
    ctx = demo_context(config)
    site = compiled_site([replace(view, sass=(hostile,))], ctx.rendered, {k: dict(v) for k, v in ctx.run_symbols.items()})
    html = _html(replace(ctx, compiled=site), DECODE)
    assert "<script>window" not in html and "&lt;script&gt;window.__pwned=1" in html


# ---- facts, confirmed or not ----------------------------------------------------------------------

def test_fact_markers_carry_the_compilers_verdict_with_the_index_words(ctx):
    plan = file_pages.plan_file(ctx, UP, NORM)
    facts = {(m.line, m.kind): m for m in plan.marks if m.source == "fact"}
    barrier = facts[(24, "barrier")]
    assert barrier.detail == demo_index().file(UP, NORM).facts[-1].detail  # the index's words, not the report's
    assert (barrier.check.state, barrier.check.sign) == ("ok", "✓")
    assert en(barrier.check.title) == "confirmed by the compiler: BAR.SYNC.DEFER_BLOCKING (rmsnorm sm90/80)"
    shfl = facts[(8, "warp-shuffle")]  # inlined into both harnesses: counted once per report, not summed
    assert en(shfl.check.title) == "confirmed by the compiler: SHFL.BFLY×5 (rmsnorm sm90/80, warp_decode sm90/80)"
    (legend,) = [lg for lg in plan.legends if lg.source == "check"]
    assert [(e.kind, e.abbr, e.count) for e in legend.entries] == [("ok", "✓", 4)]
    html = _html(ctx, NORM)
    assert '<sup class="fm fc3" title="barrier: __syncthreads">B</sup><sup class="fx ok"' in html


def _check(status, **kw) -> tuple[str, FactCheck]:
    return ("k", FactCheck(file="demo:x.cuh", line=3, kind="cp-async", rule="r", status=status, **kw))


def test_verdicts_over_several_reports():
    confirmed = _check("confirmed", found={"LDGSTS.E.128": 8}, records=("k.sm90",))
    wrong = _check("not-confirmed", instead={"STS": 4}, records=("k.sm80",))
    nocode = _check("no-code", records=("j.sm90",))
    # code that confirms it anywhere confirms it
    v = fact_verdict([nocode, wrong, confirmed])
    assert (v.status, v.opcodes, v.records) == ("confirmed", {"LDGSTS.E.128": 8}, ("k.sm90",))
    # a fact whose lines compiled to other instructions is not confirmed: never shown as confirmed
    v = fact_verdict([wrong, nocode])
    assert (v.status, v.opcodes) == ("not-confirmed", {"STS": 4})
    check = file_pages.fact_check([wrong])
    assert (check.state, check.sign) == ("no", "✗")
    assert en(check.title) == "not confirmed by the compiler: these lines compiled to STS×4 (k sm80)"
    assert file_pages.fact_check([_check("nearby", found={"LDGSTS": 1}, near_line=5, records=("k.sm90",))]).sign == "≈"
    # not measured: no verdict at all
    assert fact_verdict([_check("not-compiled"), _check("unchecked")]) is None
    assert file_pages.fact_check([]) is None


# ---- profiles -------------------------------------------------------------------------------------

def test_profiled_lines_show_their_share_and_stalls(ctx):
    plan = file_pages.plan_file(ctx, UP, DECODE)
    prof = _marks(plan, "profile")
    m = prof[16]  # 500 of the launch's 1000 samples
    assert (m.abbr, m.bar, m.css, m.kind) == ("50.0%", 50, "pm", "current")
    body = m.body
    assert isinstance(body, ProfileBody) and [(e.ref, e.current) for e in body.entries] == [("P1", True), ("P2", False)]
    top = body.entries[0]
    assert (top.samples, top.share, top.instructions) == (500, "50.0%", "448")
    assert [(en(s.reason), s.percent) for s in top.stalls] == [
        ("waiting for global/local memory", 60), ("fixed-latency dependency", 30), ("issuing", 10)]
    assert [en(x) for x in prof[9].body.entries[0].extras] == ["4 excess shared-memory wavefronts (bank conflicts)"]
    old = [r for r in plan.compiled_refs if r.shape == "n4096-old"]
    assert [(r.ref, r.current, r.device) for r in old] == [("P2", False, "Demo GPU")]


def test_a_profile_of_an_older_build_is_flagged(config):
    """Only the profile whose SASS record is no longer committed: its markers say so."""
    ctx = demo_context(config)
    views = [load_compiled(config, kr.spec.name) for kr in ctx.runs]
    views = [replace(v, profiles=tuple(p for p in v.profiles if p.shape.endswith("-old"))) for v in views]
    site = compiled_site(views, ctx.rendered, {k: dict(v) for k, v in ctx.run_symbols.items()})
    plan = file_pages.plan_file(replace(ctx, compiled=site), UP, DECODE)
    m = _marks(plan, "profile")[16]
    assert (m.css, m.kind) == ("pm old", "old") and en(m.detail).endswith(
        "measured on an earlier build of the harness: click for the stalls")
    (legend,) = [lg for lg in plan.legends if lg.source == "profile"]
    assert [e.kind for e in legend.entries] == ["old"]


# ---- a kernel's resources -----------------------------------------------------------------------------

def test_a_kernel_heading_shows_its_resources(ctx):
    plan = file_pages.plan_file(ctx, UP, DECODE)
    kern = next(f for f in plan.functions if f.qualified_name == "demo::DecodeKernel")
    (res,) = [p for p in kern.head if isinstance(p, ResourcesPanel)]
    assert [(r.arch, r.function, r.spills) for r in res.rows] == [("90", "demo::DecodeKernel", "0 / 0"),
                                                                  ("80", "demo::DecodeKernel", "0 / 0")]
    assert en(res.summary).startswith("Compiled, sm_90: 15 registers · 0 B static shared memory · 0 B spilled")
    assert "SHFL×5" in res.rows[0].mix
    helper = next(f for f in plan.functions if f.qualified_name == "demo::warp_sum")
    assert not any(isinstance(p, ResourcesPanel) for p in helper.head)  # no harness compiles it alone


# ---- types and macros ---------------------------------------------------------------------------------

def test_an_annotated_type_and_macro_are_drawn_beside_their_definitions(ctx):
    plan = file_pages.plan_file(ctx, UP, DECODE)
    t = next(f for f in plan.functions if f.what == "type")
    assert (t.anchor, t.qualified_name, en(t.kind_label), t.start_line, t.end_line) == (
        "t-DecodeParams-41", "demo::DecodeParams", "struct", 41, 45)
    assert [en(p.title) for p in t.aside if isinstance(p, TextPanel)] == ["Summary", "Layout"]
    (users,) = [p for p in t.aside if isinstance(p, UsersPanel)]
    assert [(u.target.label, u.target.href, u.sites[0].label) for u in users.users] == [
        ("demo::ParamsKernel", "#f-ParamsKernel-47", "L47")]
    # members at their lines; two declared on one line share the line's note with the in-body note
    notes = {n.line: n for n in t.inline_notes}
    assert [m.name for m in notes[42].members] == ["q"] and notes[42].text is None
    assert [m.name for m in notes[44].members] == ["n", "stride"] and notes[44].text.en == "<p>Two members on one line.</p>"
    m = next(f for f in plan.functions if f.what == "macro")
    assert (m.anchor, en(m.kind_label)) == ("m-DEMO_SWITCH-31", "macro")
    assert [en(p.title) for p in m.aside if isinstance(p, TextPanel)] == ["Summary", "Expands to"]
    assert en(next(p for p in m.aside if isinstance(p, UsersPanel)).title) == "Invoked by"
    # the page's sections: the type and the macro have their own heading
    page = build_page(plan, ctx.index.source(UP, DECODE), highlight(ctx.index.source(UP, DECODE), "cuda"))
    heads = [s.function.anchor for s in page.sections if s.head]
    assert "t-DecodeParams-41" in heads and "m-DEMO_SWITCH-31" in heads
    html = render_file(page)
    assert 'id="t-DecodeParams-41"' in html and '<span class="kind k-struct">' in html
    assert '<div class="mb"><code>stride</code>' in html
    # counted apart from the functions on the page's header line
    assert "<span lang=en>4 functions</span>" in html and "2 annotated types and macros" in html


def test_a_function_lists_the_annotated_types_and_macros_it_uses(ctx):
    plan = file_pages.plan_file(ctx, UP, DECODE)
    kern = next(f for f in plan.functions if f.qualified_name == "demo::ParamsKernel")
    (uses,) = [p for p in kern.head if isinstance(p, UsesPanel)]
    assert [(link.label, link.href, en(kind)) for link, kind in uses.uses] == [
        ("demo::DecodeParams", "#t-DecodeParams-41", "struct"), ("DEMO_SWITCH", "#m-DEMO_SWITCH-31", "macro")]
    other = next(f for f in plan.functions if f.qualified_name == "demo::DecodeKernel")
    assert not any(isinstance(p, UsesPanel) for p in other.head)


def test_without_notes_types_are_plain_code_and_search_links_their_line(bare_ctx):
    plan = file_pages.plan_file(bare_ctx, UP, DECODE)
    assert all(f.what == "function" for f in plan.functions)
    assert not any(isinstance(p, UsesPanel) for f in plan.functions for p in f.head)
    rows = {r[0]: r for r in site_pages.search_data(bare_ctx)["symbols"]}
    assert rows["demo::DecodeParams"][1:2] == ["struct"] and rows["demo::DecodeParams"][3] == "L41"
    assert rows["DEMO_SWITCH"][3] == "L31" and rows["DEMO_SWITCH"][4] == 0


@pytest.fixture(scope="module")
def bare_ctx(config):
    from annotate.notes.model import AnnotationSet
    from annotate.project import open_project
    from site_builder.context import site_context
    from site_support import demo_upstream

    project = open_project(config, index=demo_index(), annotations=AnnotationSet(), pins={UP: demo_upstream()})
    return site_context(project)


def test_search_finds_types_and_macros_by_name_and_note(ctx):
    data = site_pages.search_data(ctx)
    rows = {r[0]: r for r in data["symbols"]}
    t = rows["demo::DecodeParams"]
    assert data["pages"][t[2]] == names.source_page(UP, DECODE) and t[3] == "t-DecodeParams-41" and t[4] == 1
    assert "ParamsKernel" in t[5] and "启动所需的参数" in t[6]
    m = rows["DEMO_SWITCH"]
    assert m[1] == "macro" and m[3] == "m-DEMO_SWITCH-31" and "compile-time constant" in m[5]


# ---- the page key follows the records -------------------------------------------------------------

def test_a_changed_record_changes_the_keys_of_the_pages_it_touches(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    config = Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=root)
    before = {p: file_pages.note_digest(demo_context(config), UP, p) for p in (NORM, DECODE)}
    # one instruction of a decode.cuh line (warp_decode's sm_90 record) becomes another
    rec = root / "vendor_kernels" / "results" / "sass" / "warp_decode.sm90.json"
    text = rec.read_text()
    assert text.count('"00f0 LDG.E R2, desc[UR4][R2.64]"') == 1  # line 17 of decode.cuh
    rec.write_text(text.replace('"00f0 LDG.E R2, desc[UR4][R2.64]"', '"00f0 LDG.E.64 R2, desc[UR4][R2.64]"'))
    after = {p: file_pages.note_digest(demo_context(config), UP, p) for p in (NORM, DECODE)}
    assert after[DECODE] != before[DECODE] and after[NORM] == before[NORM]


def test_a_changed_record_renders_again_exactly_what_it_touches(tmp_path, monkeypatch):
    """The stamp sees the record (a no-op build would not), and the build renders the source page
    whose line changed, nothing else."""
    from site_builder import render
    from site_builder.build import input_stamp
    from site_support import build_fixture_site, demo_upstream

    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    config = Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=root)
    out = tmp_path / "site"
    build_fixture_site(config, out)
    stamp = input_stamp(config, {UP: demo_upstream()})
    rendered = []
    for fn in ("render_runs", "render_index", "render_course", "render_step", "render_file", "render_search_index"):
        real = getattr(render, fn)
        monkeypatch.setattr(render, fn, lambda *a, _fn=fn, _real=real: rendered.append(
            (_fn, getattr(a[0], "page", None) or getattr(getattr(a[0], "plan", None), "page", None))) or _real(*a))
    rec = root / "vendor_kernels" / "results" / "sass" / "warp_decode.sm90.json"
    rec.write_text(rec.read_text().replace('"00f0 LDG.E R2, desc[UR4][R2.64]"', '"00f0 LDG.E.64 R2, desc[UR4][R2.64]"'))
    assert input_stamp(config, {UP: demo_upstream()}) != stamp
    rep = build_fixture_site(config, out)
    # (the runs page shows the record's resources and mix, which this edit leaves as they were)
    assert rendered == [("render_file", names.source_page(UP, DECODE))]
    assert rep.pages_rendered == 1 and "LDG.E.64 R2" in (out / names.source_page(UP, DECODE)).read_text()

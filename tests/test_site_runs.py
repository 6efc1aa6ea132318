"""Harness results on the site: runs/<kernel>.html, the home page's "Runnable kernels" table, links
from annotated functions and from the kernels' upstream symbols, and the incremental keys.

Fixture: a repository root `tests/data/site/repo` holding one harness spec (`rmsnorm`, naming the
demo fixture's `demo::RMSNormKernel`) and two committed records (default device and nvidia-h200/).
Local records are written into a temporary cache by the tests themselves.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import (  # noqa: E402
    NORM, REPO, SNAPSHOTS, UP, build_fixture_site, demo_context, demo_upstream,
)

from annotate.config import Config  # noqa: E402
from site_builder import file_pages, names, render, run_views, site_pages  # noqa: E402
from site_builder.model import NoteLinksPanel  # noqa: E402
from site_builder.runs import load_runs, newest_local, record_paths, stat_paths  # noqa: E402
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture
def runs_config(tmp_path: Path) -> Config:
    return Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=REPO)


def _local_record(config: Config, stamp: str, **changes) -> Path:
    rec = json.loads(config.committed_result("rmsnorm").read_text())
    rec.update(changes)
    path = config.result_record("rmsnorm", stamp)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


def _ctx(config: Config):
    return demo_context(config)


def en(x) -> str:
    """What the English page shows of a model value (a message, a label or plain text)."""
    from site_builder.i18n import pair

    return pair(x)[0]


def _harness_note(fv):
    """The `harness:` link of an annotated function's note."""
    return next(p for p in fv.aside if isinstance(p, NoteLinksPanel)).harness


# ---- reading specs and records (torch-free) ---------------------------------------------------

def test_record_paths_committed_devices_then_newest_local(runs_config):
    got = [(s, d, p.name) for s, d, p in record_paths(runs_config, "rmsnorm")]
    assert got == [("committed", "", "rmsnorm.json"), ("committed", "nvidia-h200", "rmsnorm.json")]
    assert newest_local(runs_config, "rmsnorm") is None
    _local_record(runs_config, "20261122T010000Z")
    newer = _local_record(runs_config, "20261122T020000Z")
    assert newest_local(runs_config, "rmsnorm") == newer
    assert record_paths(runs_config, "rmsnorm")[-1] == ("local", "", newer)
    assert newer in stat_paths(runs_config)


def test_unreadable_record_is_a_problem_not_a_crash(runs_config):
    path = runs_config.result_record("rmsnorm", "20261122T030000Z")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    runs, problems = load_runs(runs_config)
    kr = runs[0]
    assert problems == [] and len(kr.records) == 2 and [k.spec.name for k in runs] == ["rmsnorm", "warp_decode"]
    assert kr.problems and "unreadable record" in kr.problems[0]


def test_deeply_nested_record_is_one_problem_and_the_build_works(runs_config, tmp_path):
    """A record under the cache's results nested far deeper than any record (json.loads alone
    raises RecursionError on it): one problem line on the runs page, every other page built."""
    path = runs_config.result_record("rmsnorm", "20261122T035000Z")
    path.parent.mkdir(parents=True)
    path.write_text("[" * 200_000 + "]" * 200_000)
    (kr, _), problems = load_runs(runs_config)
    assert problems == [] and [rf.source for rf in kr.records] == ["committed", "committed"]
    assert kr.problems == (f"{path.name}: unreadable record (nested deeper than 32 levels)",)
    out = tmp_path / "site"
    build_fixture_site(runs_config, out)
    html = (out / "runs" / "rmsnorm.html").read_text()
    assert "nested deeper than 32 levels" in html and "NVIDIA H200" in html
    assert (out / "index.html").is_file()


def test_records_are_typed(runs_config):
    (kr, _), _ = load_runs(runs_config)
    h100 = kr.records[0]
    assert h100.run.device.name == "NVIDIA H100 80GB HBM3" and h100.run.seed == 1234
    assert h100.run.timings[0].kernel.median_us == 32.976 and h100.run.checks[0].outputs[0].worst_index == (0, 2)


def test_site_modules_do_not_import_torch(runs_config):
    code = ("import sys; from pathlib import Path; from annotate.config import Config; "
            "import site_builder.build, site_builder.file_pages, site_builder.run_views, site_builder.render; "
            "from site_builder.runs import load_runs; "
            f"c = Config.load(environ={{}}, cache_dir=Path({str(runs_config.cache_dir)!r}), "
            f"repo_root=Path({str(REPO)!r})); "
            "runs, _ = load_runs(c); assert runs[0].records; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent.parent)


# ---- the page model -----------------------------------------------------------------------------

def test_runs_page_model(runs_config):
    ctx = _ctx(runs_config)
    kr, _ = ctx.runs
    rp = run_views.runs_page(ctx, kr)
    r = rp.runs
    assert rp.page == names.runs_page("rmsnorm") == "runs/rmsnorm.html" and rp.root == "../"
    assert r.title == "Demo RMSNorm (fp16)" and r.command == "annotate run rmsnorm"
    assert r.spec_path == "vendor_kernels/rmsnorm/spec.yaml"
    (sym,) = r.symbols
    assert sym.label == "demo::RMSNormKernel"
    assert sym.href == "../src/demo/include/demo/norm.cuh.html#f-RMSNormKernel-12"
    (launcher,) = r.launchers
    assert launcher.href is None  # not in the index: plain text, never a dead link
    h100, h200 = r.records
    assert (h100.device, h200.device) == ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
    assert not h100.local and en(h100.source) == "committed: vendor_kernels/results/rmsnorm.json"
    assert en(h200.source) == "committed: vendor_kernels/results/nvidia-h200/rmsnorm.json"
    assert (h100.driver, h100.torch, h100.cuda, h100.date, h100.seed) == (
        "580.159.04", "2.11.0+cu130", "13.0", "2026-11-22T03:12:35Z", "1234")
    assert h100.passed and (h100.copy_peak, h100.matmul_peak) == ("3004", "797")
    assert (h100.compile_s, en(h100.cache_hit)) == ("29.8", "no")
    c1, c2 = h100.checks
    assert (c1.shape, c1.trials, c1.rel_l2, c1.max_abs, c1.passed) == ("b1-d128", 2, "3.50e-04", "1.90e-03", True)
    assert en(c1.tolerance) == "rel L2 ≤ 2e-03, max abs ≤ 1e-02" and c1.params == "dtype=float16 batch=1 d=128"
    (t,) = h100.timings
    assert (t.shape, t.median_us, t.p10_us, t.p90_us) == ("b4096-d4096", "33.0", "30.5", "34.0")
    assert (t.rate, t.pct_peak, t.torch_us, t.speedup) == ("2035 GB/s", "68%", "33.0", "1.00×")


def test_failed_and_malformed_record_fields(runs_config):
    rec = json.loads(runs_config.committed_result("rmsnorm").read_text())
    rec["checks"][1]["passed"] = False
    rec["checks"][1]["outputs"][0].update(passed=False, rel_l2="nan", worst_index=[0, 7])
    rec["checks"][2]["passed"] = False
    rec["checks"][2]["error"] = "CUDA error: an illegal memory access"
    rec["passed"] = False
    rec["device"] = "not a mapping"
    rec["timings"].append({"shape": "cut-short"})  # a CUDA error stopped it: no "kernel"
    _local_record(runs_config, "20261122T040000Z", **rec)
    ctx = _ctx(runs_config)
    local = run_views.runs_page(ctx, ctx.runs[0]).runs.records[-1]
    assert local.local and not local.passed and en(local.device) == "unknown device"
    c1, c2 = local.checks
    assert not c1.passed and c1.rel_l2 == "inf/nan" and "[0, 7]" in en(c1.problem)
    assert not c2.passed and c2.problem == "CUDA error: an illegal memory access"
    assert [t.shape for t in local.timings] == ["b4096-d4096"]
    rows = run_views.runnable_rows(ctx, names.INDEX_PAGE)
    assert [(en(r.device), r.local, r.passed) for r in rows] == [
        ("NVIDIA H100 80GB HBM3", False, True), ("NVIDIA H200", False, True), ("unknown device", True, False),
        ("no record yet", False, False)]


def test_index_rows_and_links_from_functions(runs_config):
    ctx = _ctx(runs_config)
    rows = run_views.runnable_rows(ctx, names.INDEX_PAGE)
    assert [(r.kernel.href, r.shape, r.time_us, r.pct_peak, r.torch_us, r.passed) for r in rows] == [
        ("runs/rmsnorm.html#rec-1", "b4096-d4096", "33.0", "68%", "33.0", True),
        ("runs/rmsnorm.html#rec-2", "b4096-d4096", "25.5", "66%", "30.1", True),
        ("runs/warp_decode.html", "", "—", "—", "—", False)]  # a spec with no run record yet
    plan = file_pages.plan_file(ctx, UP, NORM)
    kern = next(f for f in plan.functions if f.qualified_name == "demo::RMSNormKernel")
    assert [(h.label, h.href) for h in kern.harnesses] == [("rmsnorm", "../../../../runs/rmsnorm.html")]
    assert _harness_note(kern).href == "../../../../runs/rmsnorm.html"
    others = [f for f in plan.functions if f is not kern]
    assert all(not f.harnesses for f in others)


def test_harness_without_a_spec_stays_plain_text(tmp_path):
    bare = Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=tmp_path)  # no vendor_kernels/
    ctx = demo_context(bare)
    assert ctx.runs == ()
    plan = file_pages.plan_file(ctx, UP, NORM)
    kern = next(f for f in plan.functions if f.qualified_name == "demo::RMSNormKernel")
    assert _harness_note(kern).href is None and not kern.harnesses


def test_overloads_prefer_the_header_the_harness_includes(tmp_path):
    from annotate.index.api import index_directory
    from site_builder.context import index_part, spec_symbol_keys

    for rel in ("include/demo/a.cuh", "include/demo/hopper/b.cuh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("namespace demo {\n__device__ void f(int x) { }\n}\n")
    index = index_directory(UP, tmp_path)
    part = index_part(index, {UP: demo_upstream()})
    a, b = sorted(s.key for s in index.find("demo::f", upstream=UP))
    assert "hopper" in b and spec_symbol_keys(index, part, UP, "demo::f", ("demo/a.cuh",)) == (a,)
    assert spec_symbol_keys(index, part, UP, "demo::f", ("other.h",)) == (a, b)
    assert spec_symbol_keys(index, part, UP, "demo::f") == (a, b)
    assert spec_symbol_keys(index, part, UP, "demo::no_such") == ()


def dump_runs(rp) -> str:
    """A text dump of a runs page's model (the snapshot a record-format change shows up in)."""
    r = rp.runs
    out = [f"page {rp.page} root={rp.root!r} home={rp.home}",
           f"kernel {r.kernel} title={r.title!r} upstream={r.upstream} spec={r.spec_path} bound={r.bound}",
           f"command {r.command!r} baseline={r.baseline!r} dtypes={r.dtypes}"]
    out += [f"symbol {x.label} -> {x.href}" for x in r.symbols]
    out += [f"launcher {x.label} -> {x.href} ({x.title})" for x in r.launchers]
    for x in r.records:
        out.append(f"record #{x.number} {x.anchor} local={x.local} passed={x.passed} {x.source}")
        out.append(f"  device {x.device} sm{x.capability} driver {x.driver} torch {x.torch} cuda {x.cuda}")
        out.append(f"  date {x.date} seed {x.seed} pins {x.pins} fatal={x.fatal!r}")
        out.append(f"  peaks copy {x.copy_peak} GB/s, bf16 {x.matmul_peak} TFLOP/s ({x.bound})")
        out.append(f"  build compile {x.compile_s} s, cache hit {x.cache_hit}, load {x.load_s} s, sm_{x.arch}")
        for c in x.checks:
            out.append(f"  check {c.shape} [{c.params}] x{c.trials} rel {c.rel_l2} abs {c.max_abs} "
                       f"({c.tolerance}) passed={c.passed} {c.problem}".rstrip())
        for t in x.timings:
            out.append(f"  time {t.shape} [{t.params}] {t.median_us} us ({t.p10_us}-{t.p90_us}) {t.rate} "
                       f"{t.pct_peak} torch {t.torch_us} us {t.speedup} passed={t.passed}")
    for c in r.identity:
        out.append(f"identity sm{c.arch} vs sm{c.upstream_arch} nvcc {c.nvcc}: {c.verdict} ({en(c.summary)}); "
                   f"upstream kernels {c.upstream_kernels}, only harness {c.only_harness}, only upstream {c.only_upstream}")
        out += [f"  {k.status} {k.function} {k.instructions}/{k.upstream_instructions} differing {k.differing}"
                for k in c.kernels]
    out += [f"compiled sm{x.arch} {x.function} regs {x.registers} smem {x.smem} stack {x.stack} spills {x.spills} "
            f"insns {x.instructions} [{x.mix}] featured={x.featured}" for x in r.compiled]
    out += [f"compiled file {x.label} -> {x.href}" for x in r.compiled_files]
    out += [f"profile {p.shape} {p.device} current={p.current} samples {p.samples} {p.kernels}" for p in r.profiles]
    out += [f"problem {p}" for p in r.problems]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("kernel", ["rmsnorm", "warp_decode"])
def test_runs_page_snapshots(runs_config, snapshot, kernel):
    ctx = _ctx(runs_config)
    rp = run_views.runs_page(ctx, next(kr for kr in ctx.runs if kr.spec.name == kernel))
    snapshot(SNAPSHOTS / f"runs-{kernel}.model.txt", dump_runs(rp))
    snapshot(SNAPSHOTS / f"runs-{kernel}.html", render.render_runs(rp))


def test_runs_page_shows_the_compiled_view(runs_config):
    """The identity card, every instantiation's resources, the pages with per-line SASS, and the
    profiles, the one measured on an older build flagged."""
    ctx = _ctx(runs_config)
    r = run_views.runs_page(ctx, next(kr for kr in ctx.runs if kr.spec.name == "warp_decode")).runs
    (card,) = r.identity
    assert (card.arch, card.verdict, en(card.verdict_label)) == ("90", "identical", "identical")
    assert [k.status for k in card.kernels] == ["identical", "identical"] and card.only_upstream == ("-DDEMO",)
    assert [x.arch for x in r.compiled] == ["90", "90", "80", "80"] and all(x.featured for x in r.compiled)
    assert {x.label for x in r.compiled_files} == {"include/demo/decode.cuh", "include/demo/norm.cuh"}
    assert [(p.shape, p.current) for p in r.profiles] == [("n4096", True), ("n4096-old", False)]
    html = render.render_runs(run_views.runs_page(ctx, next(kr for kr in ctx.runs if kr.spec.name == "warp_decode")))
    assert 'id="identity-sm90"' in html and "demo::ParamsKernel" in html


def test_an_unreadable_compiled_record_is_a_problem_on_its_runs_page(tmp_path):
    """A broken SASS record is one line on the kernel's runs page; the rest of its view still shows."""
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    (root / "vendor_kernels" / "results" / "sass" / "warp_decode.sm80.json").write_text("{not json")
    config = Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=root)
    ctx = _ctx(config)
    r = run_views.runs_page(ctx, next(kr for kr in ctx.runs if kr.spec.name == "warp_decode")).runs
    assert r.problems == ("warp_decode.sm80.json: unreadable record (invalid JSON at line 1)",)
    assert [x.arch for x in r.compiled] == ["90", "90"] and r.identity


# ---- templates --------------------------------------------------------------------------------

def test_runs_page_html_escapes_record_fields(runs_config):
    _local_record(runs_config, "20261122T050000Z", created=HOSTILE, seed=HOSTILE, fatal=HOSTILE,
                  device={"name": HOSTILE, "driver": "<b>x</b>"}, pins={"demo": HOSTILE})
    ctx = _ctx(runs_config)
    html = render.render_runs(run_views.runs_page(ctx, ctx.runs[0]))
    assert "<script>" not in html and "<img" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert '<a href="../index.html#runnable"><span lang=en>runnable kernels</span>' in html
    assert 'class="record local' in html and '<span class="badge local"><span lang=en>local</span>' in html
    for text in ("annotate run rmsnorm", "NVIDIA H200", "2035 GB/s", "68%", "1.00×", "cold compile 29.8 s",
                 "<span lang=en>cache hit:</span><span lang=zh>命中缓存：</span> <span lang=en>no</span>",
                 "copy 3004 GB/s", "bf16 matmul 797 TFLOP/s", "rel L2 ≤ 2e-03",
                 'href="../src/demo/include/demo/norm.cuh.html#f-RMSNormKernel-12"', 'id="rec-2"'):
        assert text in html, text
    home = site_pages.index_page(ctx, {})
    ihtml = render.render_index(home)
    assert "Runnable kernels" in ihtml and 'href="runs/rmsnorm.html#rec-1"' in ihtml and "<script>w" not in ihtml


def test_function_heading_links_to_runs_page(runs_config):
    from site_builder.code import build_page
    from site_builder.highlight import highlight

    ctx = _ctx(runs_config)
    plan = file_pages.plan_file(ctx, UP, NORM)
    text = ctx.index.source(UP, NORM)
    html = render.render_file(build_page(plan, text, highlight(text, "cuda")))
    assert ('<a class="badge run" href="../../../../runs/rmsnorm.html" title="annotate run rmsnorm">'
            '<span lang=en>runs in harness rmsnorm</span><span lang=zh>可运行：rmsnorm</span></a>') in html
    assert '<a class="runs" href="../../../../runs/rmsnorm.html"' in html


# ---- the build: pages, keys, incremental rebuilds ------------------------------------------------

def test_build_writes_runs_pages_and_a_new_record_rebuilds_only_them(runs_config, tmp_path, monkeypatch):
    out = tmp_path / "site"
    rep = build_fixture_site(runs_config, out)
    assert (out / "runs" / "rmsnorm.html").is_file()
    assert "Runnable kernels" in (out / "index.html").read_text()
    manifest = json.loads((out / names.MANIFEST).read_text())
    before = {p: (out / p).stat().st_mtime_ns for p in manifest["outputs"]}
    rep = build_fixture_site(runs_config, out)
    assert rep.stats.written == 0 and rep.pages_rendered == 0
    rendered = []
    for fn in ("render_runs", "render_index", "render_course", "render_file", "render_search_index"):
        real = getattr(render, fn)
        monkeypatch.setattr(render, fn, lambda *a, _fn=fn, _real=real: rendered.append(_fn) or _real(*a))
    _local_record(runs_config, "20261122T060000Z", device={"name": "Local GPU"})
    rep = build_fixture_site(runs_config, out)
    assert sorted(rendered) == ["render_index", "render_runs"]
    changed = {p for p in before if (out / p).stat().st_mtime_ns != before[p]}
    assert changed == {"runs/rmsnorm.html", "index.html"}
    assert rep.pages_rendered == 0  # no source page rendered again
    assert "Local GPU" in (out / "runs" / "rmsnorm.html").read_text()


def test_stamp_sees_a_new_local_record(runs_config):
    from site_builder.build import input_stamp

    pins = {UP: demo_upstream()}
    a = input_stamp(runs_config, pins)
    assert input_stamp(runs_config, pins) == a
    _local_record(runs_config, "20261122T070000Z")
    assert input_stamp(runs_config, pins) != a


# ---- the real committed records --------------------------------------------------------------

@pytest.mark.slow
def test_real_committed_records_render(pinned, real_config):
    from annotate.index.api import load_index
    from annotate.project import open_project
    from site_builder.context import site_context

    pinned("flashinfer")
    pinned("flash-attention")
    index = load_index(real_config)
    runs, problems = load_runs(real_config)
    assert problems == []
    assert {r.spec.name for r in runs} >= {"decode_kernel", "rmsnorm", "silu_and_mul", "merge_state",
                                            "prefill_kernel", "flash_fwd"}
    ctx = site_context(open_project(real_config, index=index))
    for kr in runs:
        committed = [rf for rf in kr.records if rf.source == "committed"]
        assert len(committed) >= 2, kr.spec.name  # the default device and nvidia-h200/
        rp = run_views.runs_page(ctx, kr)
        assert all(link.href for link in rp.runs.symbols), (kr.spec.name, rp.runs.symbols)
        for rec in rp.runs.records[:len(committed)]:
            assert rec.passed and rec.checks and rec.timings, (kr.spec.name, rec.device)
            assert all(t.median_us != "—" and t.pct_peak.endswith("%") for t in rec.timings)
        html = render.render_runs(rp)
        assert "NVIDIA H200" in html and "annotate run " + kr.spec.name in html
    decode = next(s for s in index.find("SingleDecodeWithKVCacheKernel", upstream="flashinfer") if s.key in ctx.symbols)
    assert ctx.harness_of[decode.key] == ("decode_kernel",)
    # the sm90 overload of SinglePrefillWithKVCacheDispatched is not what the harness includes
    assert not [k for k in ctx.harness_of if "/hopper/" in k], [k for k in ctx.harness_of if "/hopper/" in k]


# ---- in the browser -----------------------------------------------------------------------------

@pytest.mark.browser
def test_runs_page_in_chromium(runs_config, tmp_path):
    from site_browser import available, chromium

    if not available():
        pytest.skip("needs /usr/bin/chromium and /usr/bin/chromedriver")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _local_record(runs_config, "20261122T080000Z", device={"name": HOSTILE}, fatal=HOSTILE)
    out = tmp_path / "site"
    build_fixture_site(runs_config, out)
    with chromium(1400, 1000) as d:
        d.get((out / names.source_page(UP, NORM)).as_uri())
        d.find_element(By.CSS_SELECTOR, "a.badge.run").click()  # "runs in harness rmsnorm"
        WebDriverWait(d, 10).until(lambda d: d.current_url.endswith("runs/rmsnorm.html"))
        assert d.execute_script("return window.__pwned === undefined")
        assert d.execute_script("return document.querySelectorAll('img').length") == 0
        records = d.find_elements(By.CSS_SELECTOR, "section.record")
        assert len(records) == 3 and "local" in records[2].get_attribute("class")
        assert HOSTILE in records[2].find_element(By.TAG_NAME, "h2").text  # shown as text
        d.find_element(By.LINK_TEXT, "demo::RMSNormKernel").click()
        WebDriverWait(d, 10).until(lambda d: d.current_url.endswith("norm.cuh.html#f-RMSNormKernel-12"))

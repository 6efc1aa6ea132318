"""Trace pages (traces/<entry>.html) on the trace fixture (tests/data/trace, the tiny Python + C++
tree the trace tests use): the chains as a tree hop by hop, each hop's kind, its code linked to
its line, the conditions with what the example parameters decide, the dispatch macros, the kernels
with their harnesses; "on the path of" on every function of a chain; the site's cache of traces.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from annotate.index.crosslang import Entry, Extension, build_links, rules  # noqa: E402
from annotate.index.trace import EntryTrace, find_entry, trace  # noqa: E402
from annotate.upstreams import Upstream  # noqa: E402
from site_builder import file_pages, names, site_pages  # noqa: E402
from site_builder.context import make_context, memo_index_part  # noqa: E402
from site_builder.i18n import pair  # noqa: E402
from site_builder.model import TracePathPanel  # noqa: E402
from site_builder.render import render_index, render_trace  # noqa: E402
from site_builder.traces import from_json, to_json, trace_data  # noqa: E402

DATA = Path(__file__).parent / "data" / "trace"


def en(x) -> str:
    return pair(x)[0]


@pytest.fixture(scope="module")
def ix():
    from annotate.index.api import index_directory

    return index_directory("demo", DATA)


@pytest.fixture(scope="module")
def traced(ix):
    """The fixture's entries, traced as the site's entries are (Project.traces), with the
    fixture's extension module named as the shipped rules name the pins'."""
    ext = Extension("demo", "demo_attn_cuda", ("csrc/attn_api.cpp", "csrc/inst/*.cu"), "the fixture's setup")
    demo_rules = dataclasses.replace(rules(), extensions=(ext,))
    links = build_links(ix)
    out = []
    for e in (Entry("pkg.ops.norm", (), ("day-13",)),
              Entry("pkg.attn_func", (("head_dim", "128"), ("causal", "true"), ("torch", "2.5")))):
        t = trace(ix, links, find_entry(ix, e.entry), dict(e.when), demo_rules)
        out.append(EntryTrace(e, t))
    return tuple(out)


def _upstream() -> Upstream:
    return Upstream(name="demo", title="Demo", url="https://example.invalid/demo.git", web="https://example.invalid/demo",
                    tag="v0", commit="0" * 40, paths=("csrc/", "include/", "pkg/"),
                    render=("csrc/", "include/", "pkg/"), lock="locks/demo.json", archive=None)


@pytest.fixture(scope="module")
def ctx(ix, traced):
    pins = {"demo": _upstream()}
    return make_context(ix, memo_index_part(ix, pins), None, pins,
                        traces=[trace_data(et.entry, et.trace) for et in traced])


def _walk(nodes):
    for n in nodes:
        yield n
        yield from _walk(n.children)


def test_a_trace_page_shows_the_chains_hop_by_hop(ctx):
    (norm, attn) = ctx.traces
    tp = site_pages.trace_page(ctx, norm)
    assert tp.page == names.trace_page("pkg.ops.norm") == "traces/pkg.ops.norm.html" and tp.root == "../"
    assert tp.command == "annotate trace pkg.ops.norm" and tp.chains == 2
    assert [k.label for k in tp.kernels] == ["demo::NormKernel", "pkg.dsl.NormKernel.kernel"]
    # the two backends part at the first hop: two roots, each a straight chain
    assert [en(n.hop.kind_label) for n in tp.roots] == ["JIT module", "call"]
    jit = tp.roots[0]
    chain = [jit, *_walk(jit.children)]
    assert [(n.hop.kind, n.hop.where.label) for n in chain] == [
        ("jit-module", "pkg/ops.py:22"), ("export", "csrc/norm_binding.cu:3"), ("dispatch", "csrc/norm.cu:8"),
        ("launch", "include/norm.cuh:13")]
    # each hop's code links to its line on the source page
    assert chain[2].hop.where.href == "../src/demo/csrc/norm.cu.html#L8"
    assert chain[2].hop.written.startswith("return demo::Norm<c_type>(")
    assert chain[2].hop.target.label == "demo::Norm"
    assert chain[2].hop.target.href.startswith("../src/demo/include/norm.cuh.html#f-Norm-")
    # the condition of the JIT branch, not decided without --when
    (g,) = jit.hop.guards
    assert (g.text, g.decided, g.where.label, g.where.href) == (
        "_use_cuda_norm(x.device)", False, "pkg/ops.py:21", "../src/demo/pkg/ops.py.html#L21")
    (d,) = chain[2].hop.dispatch
    assert (d.macro, d.branches, d.total, d.defined.label, d.defined.href) == (
        "DISPATCH_DTYPE", 2, 2, "csrc/dispatch.h:5", "../src/demo/csrc/dispatch.h.html#L5")
    # the chain ends at the kernel, linked to its definition
    assert (chain[-1].kernel.label, chain[-1].kernel.href) == ("demo::NormKernel", "../src/demo/include/norm.cuh.html#f-NormKernel-5")
    assert [n.kernel for n in chain[:-1]] == [None, None, None]
    assert [(g.text, g.decided) for g in tp.undecided] == [
        ("_use_cuda_norm(x.device)", False), ("input_ndim == 2", False), ("not _use_cuda_norm(x.device)", False)]


def test_parameters_decide_conditions_and_forks_share_their_hops(ctx):
    tp = site_pages.trace_page(ctx, ctx.traces[1])
    assert tp.when == (("causal", "true"), ("head_dim", "128"), ("torch", "2.5"))
    assert tp.command == "annotate trace pkg.attn_func --when 'causal=true,head_dim=128,torch=2.5'"
    nodes = list(_walk(tp.roots))
    torch_op = next(n for n in nodes if n.hop.kind == "torch-op")
    assert [(g.text, g.decided) for g in torch_op.hop.guards] == [("torch.__version__ >= '2.4.0'", True)]
    # the fp16 and bf16 chains share their first hops and part at the specialisation
    assert tp.chains == 2 and len(nodes) == 5 + 2 * 6  # 11 hops each, 5 of them shared
    fork = next(n for n in nodes if len(n.children) > 1)
    assert fork.hop.kind == "call" and [c.hop.kind for c in fork.children] == ["specialisation", "specialisation"]
    spec = fork.children[0].hop
    assert [(d.macro, d.branches, d.total) for d in spec.dispatch][1:] == [("HEADDIM_SWITCH", 1, 2), ("CAUSAL_SWITCH", 1, 2)]
    html = render_trace(tp)
    assert "<code>head_dim=128</code>" in html and '<ol class="fork">' in html and 'class="hop k-specialisation"' in html


def test_the_page_renders_in_both_languages_with_code_escaped(ctx):
    html = render_trace(site_pages.trace_page(ctx, ctx.traces[0]))
    assert "<span lang=en>JIT module</span><span lang=zh>JIT 模块</span>" in html
    assert "<span lang=en>reaches the kernel</span><span lang=zh>到达内核</span>" in html
    assert 'href="../src/demo/pkg/ops.py.html#L22"' in html
    assert '<code class="hc">NormKernel&lt;T&gt;&lt;&lt;&lt;1, d&gt;&gt;&gt;(x, w, out, d);</code>' in html


def test_functions_on_a_chain_link_to_their_traces(ctx, ix):
    (norm, _attn) = ctx.traces
    assert ctx.trace_of[norm.entry_key] == ("pkg.ops.norm",)
    kernel = ix.resolve("demo::NormKernel")
    plan = file_pages.plan_file(ctx, "demo", kernel.path)
    fv = next(f for f in plan.functions if f.key == kernel.key)
    (panel,) = [p for p in fv.head if isinstance(p, TracePathPanel)]
    assert [(e.label, e.href) for e in panel.entries] == [("pkg.ops.norm", "../../../traces/pkg.ops.norm.html")]
    # the home page lists them; search finds them
    home = site_pages.index_page(ctx, {})
    assert [t.label for t in home.traces] == ["pkg.ops.norm", "pkg.attn_func"]
    assert 'href="traces/pkg.ops.norm.html"' in render_index(home)
    courses = site_pages.search_data(ctx)["courses"]
    assert ["pkg.ops.norm", "traces/pkg.ops.norm.html", "", "js.trace"] in courses


def test_trace_data_round_trips_through_json(ctx):
    assert from_json(to_json(ctx.traces)) == ctx.traces
    with pytest.raises((ValueError, KeyError, TypeError)):
        from_json('[{"entry": "x"}]')


def test_the_site_keeps_traces_in_its_cache(tmp_path, ix, traced, monkeypatch):
    """Traced once per index and rules: the next build reads them back; a damaged file is traced again."""
    from annotate.config import Config
    from annotate.project import Project, open_project
    from site_builder.traces import load_traces

    config = Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=tmp_path)
    project = open_project(config, index=ix, pins={"demo": _upstream()})
    calls = []
    monkeypatch.setattr(Project, "traces", lambda self: calls.append(1) or traced)
    first = load_traces(project)
    assert [t.entry for t in first] == ["pkg.ops.norm", "pkg.attn_func"] and calls == [1]
    assert load_traces(project) == first and calls == [1]
    (cached,) = (config.site_cache_dir() / "traces").glob("traces-*.json")
    cached.write_text("[{")
    assert load_traces(project) == first and calls == [1, 1]

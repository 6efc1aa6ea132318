"""The index on the real pinned sources (slow: needs `annotate fetch`; see the `pinned` fixture).

Hand-checked edges, symbols and ranges from the issue, plus the recall/fact-label data staying
true at the pins."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ix(pinned, real_config):
    from annotate.index.api import load_index

    pinned("flashinfer")
    pinned("flash-attention")
    return load_index(real_config)


def callee_names(ix, sym, kind=None):
    return {ix.symbol(k).qualified_name for e in ix.callees(sym) if kind in (None, e.kind) for k in e.callees}


def test_decode_dispatch_launches_decode_kernel(ix):
    disp = ix.resolve("flashinfer:flashinfer::SingleDecodeWithKVCacheDispatched")
    launches = [e for e in ix.callees(disp) if e.kind == "launch"]
    assert launches and all(e.via == "cudaLaunchKernel" for e in launches)
    assert callee_names(ix, disp, "launch") == {"flashinfer::SingleDecodeWithKVCacheKernel"}
    line = ix.source("flashinfer", disp.path).splitlines()[launches[0].line - 1]
    assert line[launches[0].column:].startswith("kernel")


def test_decode_kernel_calls_its_helpers(ix):
    k = ix.resolve("flashinfer:flashinfer::SingleDecodeWithKVCacheKernel")
    assert k.kind == "kernel"
    assert {"flashinfer::compute_qk", "flashinfer::update_local_state", "flashinfer::sync_state"} <= callee_names(ix, k)
    callers = {ix.symbol(e.caller).qualified_name for e in ix.callers(k)}
    assert "flashinfer::SingleDecodeWithKVCacheDispatched" in callers


def test_rmsnorm_calls_shfl_xor_sync(ix):
    k = ix.resolve("flashinfer:flashinfer::norm::RMSNormKernel")
    assert "flashinfer::math::shfl_xor_sync" in callee_names(ix, k)
    assert k.template_params == "uint32_t VEC_SIZE, typename T"


def test_fa2_run_flash_fwd_launches_flash_fwd_kernel(ix):
    run = ix.resolve("flash-attention:flash::run_flash_fwd")
    assert run.path == "csrc/flash_attn/src/flash_fwd_launch_template.h"
    assert "flash::flash_fwd_kernel" in callee_names(ix, run, "launch")
    kern = ix.resolve("flash-attention:flash::flash_fwd_kernel")
    assert kern.kind == "kernel" and "flash::compute_attn" in callee_names(ix, kern)


def test_fa2_compute_attn_calls_rowblock(ix):
    attn = ix.resolve("flash-attention:flash::compute_attn")
    assert callee_names(ix, attn) == {"flash::compute_attn_1rowblock"}
    row = ix.resolve("flash-attention:flash::compute_attn_1rowblock")
    assert row.kind == "device" and row.path == "csrc/flash_attn/src/flash_fwd_kernel.h"
    # softmax.template softmax_rescale_o<...>(...) resolves to the method of flash::Softmax
    assert "flash::Softmax::softmax_rescale_o" in callee_names(ix, row)


def test_ranges_cover_template_heads(ix):
    for spec in ("flashinfer:flashinfer::norm::RMSNormKernel", "flashinfer:flashinfer::SingleDecodeWithKVCacheKernel",
                 "flash-attention:flash::compute_attn_1rowblock", "flashinfer:flashinfer::SinglePrefillWithKVCacheDevice"):
        s = ix.resolve(spec)
        lines = ix.source(s.upstream, s.path).splitlines()
        assert lines[s.start_line - 1].lstrip().startswith("template"), spec
        assert lines[s.end_line - 1].rstrip().endswith("}"), spec
        assert s.start_line < s.body_start_line <= s.end_line
        assert ix.text_of(s).count("\n") == s.end_line - s.start_line + 1


def test_prefill_device_survives_unbalanced_arch_guards(ix):
    dev = ix.resolve("flashinfer:flashinfer::SinglePrefillWithKVCacheDevice")
    assert dev.kind == "device" and dev.end_line - dev.start_line > 300
    ker = ix.resolve("flashinfer:flashinfer::SinglePrefillWithKVCacheKernel")
    assert ker.kind == "kernel" and dev.qualified_name in callee_names(ix, ker)


def test_course_file_symbols_and_python(ix):
    names = {s.qualified_name for s in ix.symbols_in("flashinfer", "include/flashinfer/norm.cuh")}
    assert {"flashinfer::norm::RMSNorm", "flashinfer::norm::RMSNormKernel"} <= names
    py = [s for f in ix.files("flashinfer") if f.path.startswith("flashinfer/jit/") for s in f.symbols]
    assert len(py) > 50 and all(s.kind == "python" for s in py)
    assert ix.find("flashinfer.jit.core.gen_jit_spec")
    fa_py = [s for s in ix.all_symbols() if s.upstream == "flash-attention" and s.path.startswith("flash_attn/")]
    assert any(s.name == "flash_attn_func" for s in fa_py)


def test_fact_labels_hold(ix):
    import yaml

    from annotate.config import REPO_ROOT

    labels = yaml.safe_load((REPO_ROOT / "tests" / "data" / "index_fact_labels.yaml").read_text())
    tp = fp = fn = 0
    for item in labels["kernels"]:
        s = ix.resolve(item["symbol"])
        assert s.path == item["path"]
        truth = {(f["kind"], f["line"]) for f in item["facts"]}
        got = {(f.kind, f.line) for f in ix.facts(s)}
        tp, fp, fn = tp + len(truth & got), fp + len(got - truth), fn + len(truth - got)
    assert tp / (tp + fp) >= 0.95 and tp / (tp + fn) >= 0.95


def test_cli_on_pins(ix, capsys):  # ix: skips unless the pins are fetched
    import json

    from annotate.cli import main

    assert main(["callgraph", "flashinfer::norm::RMSNormKernel", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["root"] == "flashinfer::norm::RMSNormKernel"
    assert any(e["callee"] == "flashinfer::math::shfl_xor_sync" and e["kind"] == "call" for e in data["edges"])
    assert any(not e["resolved"] for e in data["edges"])  # __syncthreads: kept, flagged unresolved
    assert main(["facts", "flash::compute_attn_1rowblock", "--json"]) == 0
    kinds = {f["kind"] for f in json.loads(capsys.readouterr().out)}
    assert {"cp-async", "barrier", "tensor-core", "shared-dynamic"} <= kinds
    assert main(["symbols", "flashinfer:include/flashinfer/norm.cuh", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["start_line"] >= 1
    assert main(["show", "flash-attention:flash::compute_attn", "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "compute_attn_1rowblock" in out and "callers" in out


def test_store_queries_agree_with_the_loaded_index(ix, real_config):
    # the same answers from SQL queries (a fresh index) and from memory (after files())
    import random

    from annotate.index.api import load_index

    fresh = load_index(real_config)
    syms = [s for fi in ix.files() for s in fi.symbols]
    for s in random.Random(11).sample(syms, 1500):
        assert fresh.callees(s) == ix.callees(s) and fresh.callers(s) == ix.callers(s)
        assert fresh.facts(s) == ix.facts(s) and fresh.symbol(s.key) == s

"""Cross-language traces on a tiny Python + C++ tree (tests/data/trace): each rule of
rules/crosslang.yaml on an example, the tables kept beside the index, the walk hop by hop,
--when, and the command's output."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from annotate.errors import UsageError
from annotate.index.conditions import Decider, negate
from annotate.index.crosslang import (Extension, RulesError, build_links, dispatch_tables, macro_branches,
                                      parse_rules, read_defines, rules, scan_exports)
from annotate.index.trace import find_entry, trace

DATA = Path(__file__).parent / "data" / "trace"


@pytest.fixture(scope="module")
def ix():
    from annotate.index.api import index_directory

    return index_directory("demo", DATA)


@pytest.fixture(scope="module")
def links(ix):
    return build_links(ix)


@pytest.fixture(scope="module")
def demo_rules():
    # the fixture's extension module is named here, as the pins' is in the shipped rules
    ext = Extension("demo", "demo_attn_cuda", ("csrc/attn_api.cpp", "csrc/inst/*.cu"), "the fixture's setup")
    return dataclasses.replace(rules(), extensions=(ext,))


def run(ix, links, demo_rules, entry, **when):
    return trace(ix, links, find_entry(ix, entry), {k: str(v) for k, v in when.items()}, demo_rules)


def hops(chain):
    return [(h.kind, h.target, h.path, h.line) for h in chain.hops]


# ---- the rules file ---------------------------------------------------------------------------------

def test_shipped_rules_parse_and_name_known_keys():
    r = rules()
    keys = set(r.key_names())
    assert {"dtype", "head_dim", "causal", "backend", "pass"} <= keys
    assert all(v.key in keys for v in r.variables)
    assert {e.id for e in r.exports} == {"tvm-ffi", "pybind11", "torch-library", "torch-library-def"}
    assert r.spec_makers.search("gen_single_decode_module") and not r.spec_makers.search("gen_jit_spec")
    assert r.type_value("dtype", "cutlass::half_t") == "fp16"
    assert [e.entry for e in r.entries][:2] == ["flashinfer.norm.rmsnorm", "flashinfer.norm.fused_add_rmsnorm"]


def test_entry_steps_name_course_steps():
    import yaml

    ids = set()
    for course in (Path(__file__).parent.parent / "annotations" / "courses").glob("*.yaml"):
        ids |= {s["id"] for s in yaml.safe_load(course.read_text(encoding="utf-8"))["steps"]}
    steps = [s for e in rules().entries for s in e.steps]
    assert steps and set(steps) <= ids, set(steps) - ids


@pytest.mark.parametrize("text, message", [
    ("python: {loaders: [x]}\n", "missing `python.spec_makers`"),
    ("python:\n  spec_makers: '('\n", "crosslang.yaml:2: bad regex"),
    ("exports:\n  - {id: x, pattern: 'NO_GROUPS'}\n", "needs groups name and function"),
    ("keys: {a: b}\nvariables:\n  - {match: x, key: nope}\n", "crosslang.yaml:12: unknown key 'nope'"),
    ("keys: {a: b}\nvariables:\n  - {match: x, key: a, round_up: [128, 64]}\n",
     "crosslang.yaml:12: round_up must be a list of increasing integers"),
])
def test_rule_errors_name_file_and_line(text, message):
    base = textwrap.dedent("""
        python:
          loaders: [build_and_load]
          spec_makers: 'gen_'
          default_source_dir: csrc
          op_registrars: 'custom_op'
          autograd_bases: 'Function'
        dispatch: {macros: '_SWITCH$'}
        body: {max_wrapper_lines: 25}
    """)
    # a table with the `python` part broken, or a valid `python` part (lines 2-9) and a broken rest
    with pytest.raises(RulesError) as got:
        parse_rules(text if "python" in text else base + text)
    assert message in got.value.message


# ---- dispatch macros read from #define -----------------------------------------------------------

def test_dispatch_macros_read_from_defines():
    text = (DATA / "csrc" / "dispatch.h").read_text()
    names = [d[0] for d in read_defines(text)]
    assert names == ["DISPATCH_DTYPE", "_DISPATCH_CASE_F16", "BOOL_SWITCH", "CAUSAL_SWITCH", "CAUSAL_SWITCH",
                     "FP16_SWITCH", "HEADDIM_SWITCH"]
    macros = {m.name: m for m in dispatch_tables({"csrc/dispatch.h": text}, "demo", rules().dispatch_macros)}
    assert set(macros) == {"DISPATCH_DTYPE", "BOOL_SWITCH", "CAUSAL_SWITCH", "FP16_SWITCH", "HEADDIM_SWITCH"}
    # a switch whose first case comes from a helper macro, expanded
    assert [(b.conditions, b.bindings) for b in macros["DISPATCH_DTYPE"].branches] == [
        (("code == float16_code",), (("T_NAME", "nv_half"),)),
        (("code == bfloat16_code",), (("T_NAME", "nv_bfloat16"),)),
    ]
    # else-if chain: each branch carries the negations of the ones before it
    assert [(b.conditions, b.bindings) for b in macros["HEADDIM_SWITCH"].branches] == [
        (("D <= 64",), (("kHeadDim", "64"),)),
        (("!(D <= 64)", "D <= 128"), (("kHeadDim", "128"),)),
    ]
    # of two definitions under #if, the one with the most branches (the alias of BOOL_SWITCH)
    causal = macros["CAUSAL_SWITCH"]
    assert causal.variants == 2 and causal.params == ("FLAG", "NAME", "__VA_ARGS__")
    assert [b.bindings for b in causal.at(["params.is_causal", "Is_causal", "[&]{}"])] == [
        (("Is_causal", "true"),), (("Is_causal", "false"),)]
    assert causal.at(["params.is_causal", "Is_causal", "f"])[0].conditions == ("params.is_causal",)


def test_macro_branches_of_a_brace_block_switch():
    body = ("switch (v) { case 16: { constexpr size_t V = 16; __VA_ARGS__ break; } "
            "case 8: { constexpr size_t V = 8; __VA_ARGS__ break; } default: { err(); } }")
    assert [(b.conditions, b.bindings) for b in macro_branches(body)] == [
        (("v == 16",), (("V", "16"),)), (("v == 8",), (("V", "8"),))]


def test_scan_exports_each_rule():
    text = textwrap.dedent("""
        TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, single_decode_run);
        void helper() { m.def("not_an_export", &f); }
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, mod) {
          mod.def("fwd", &FLASH_NAMESPACE::mha_fwd, "Forward pass");
        }
        TORCH_LIBRARY_IMPL(fa3, CUDA, m) {
          m.impl("bwd", &mha_bwd);
        }
    """)
    got = [(e.rule, e.module, e.name, e.function, e.line) for e in scan_exports(text, "x.cpp", "demo", rules().exports)]
    assert got == [("tvm-ffi", None, "run", "single_decode_run", 2),
                   ("pybind11", "TORCH_EXTENSION_NAME", "fwd", "FLASH_NAMESPACE::mha_fwd", 5),
                   ("torch-library", "fa3", "bwd", "mha_bwd", 8)]


def test_links_of_the_fixture(links):
    assert sorted((e.path, e.name, e.function) for e in links.exports) == [
        ("csrc/attn_api.cpp", "fwd", "demo::attn_fwd"),
        ("csrc/decode_binding.cu", "run", "decode_run"),
        ("csrc/decode_sm90_binding.cu", "run", "decode_run_sm90"),
        ("csrc/norm_binding.cu", "rmsnorm", "rmsnorm"),
    ]
    assert [(o.op, o.function) for o in links.ops] == [("demo::_attn_forward", "demo:pkg.attn._attn_forward@pkg/attn.py:12")]
    assert sorted(m.name for m in links.macros) == ["BOOL_SWITCH", "CAUSAL_SWITCH", "DISPATCH_DTYPE", "FP16_SWITCH",
                                                    "HEADDIM_SWITCH"]


# ---- conditions ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, lang, when, env, expect", [
    ("params.d <= 128", "cuda", {"head_dim": "100"}, {}, True),
    ("!(params.d <= 64) && params.d <= 128", "cuda", {"head_dim": "256"}, {}, False),
    ("!params.is_bf16", "cuda", {"dtype": "fp16"}, {}, True),
    ("!Is_causal", "cuda", {}, {"Is_causal": "true"}, False),
    ("params.num_splits <= 1 && !force_split", "cuda", {}, {"force_split": "false"}, None),
    ("params.num_splits <= 1 && !force_split", "cuda", {"num_splits": "1"}, {"force_split": "false"}, True),
    ("seq_len <= 256 || tmp == nullptr", "cuda", {"kv_len": "128"}, {}, True),
    ("seq_len <= 256 || tmp == nullptr", "cuda", {"kv_len": "4096"}, {}, None),
    ("HEAD_DIM <= 256", "cuda", {"head_dim": "128"}, {"HEAD_DIM": "{{ head_dim_qk }}"}, True),
    ("elem_type_is_half", "cuda", {}, {}, None),
    ("_use_cuda_norm(input.device)", "python", {"backend": "cuda"}, {}, True),
    ("not _use_cuda_norm(x.device)", "python", {"backend": "cuda"}, {}, False),
    ("torch.__version__ >= '2.4.0'", "python", {"torch": "2.5"}, {}, True),
    ("torch.__version__ >= '2.4.0'", "python", {"torch": "2.3.1"}, {}, False),
    ("fp8_enabled", "python", {"dtype": "fp8_e4m3"}, {}, True),
    ("input.dim() == 3", "python", {}, {}, None),
    # FA3's backward chooses on head_dim rounded up (round_up_headdim)
    ("params.d_rounded == 128", "cuda", {"head_dim": "128"}, {}, True),
    ("params.d_rounded == 128", "cuda", {"head_dim": "100"}, {}, True),
    ("params.d_rounded == 96", "cuda", {"head_dim": "100"}, {}, False),
    ("params.d_rounded == 256", "cuda", {"head_dim": "512"}, {}, None),  # past the last step: not known
    ("!params.is_e4m3", "cuda", {"dtype": "bf16"}, {}, True),
    ("not launch_with_pdl", "cuda", {}, {"launch_with_pdl": "false"}, True),  # C++'s alternative tokens
    ("!(not launch_with_pdl)", "cuda", {}, {"launch_with_pdl": "false"}, False),
    ("a and not b or c", "cuda", {}, {"a": "true", "b": "true", "c": "false"}, False),
])
def test_decider(text, lang, when, env, expect):
    assert Decider(rules(), when, env).decide(text, lang).value is expect


def test_negate_reads_like_the_other_branch():
    assert negate("params.is_causal", "cuda") == "!params.is_causal"
    assert negate("!Is_causal", "cuda") == "Is_causal"
    assert negate("!(a && b)", "cuda") == "a && b"
    assert negate("a <= 2", "cuda") == "!(a <= 2)"
    assert negate("use_tensor_cores", "python") == "not use_tensor_cores"
    assert negate("backend == 'fa3'", "python") == "not (backend == 'fa3')"


# ---- the walk ------------------------------------------------------------------------------------

def test_jit_module_export_dispatch_launch(ix, links, demo_rules):
    t = run(ix, links, demo_rules, "pkg.norm", backend="cuda")
    assert t.entry.qualified_name == "pkg.ops.norm"  # through the package's re-export
    assert len(t.chains) == 1
    c = t.chains[0]
    assert hops(c) == [
        ("jit-module", "JIT module of pkg.jit.modules.gen_norm_module", "pkg/ops.py", 22),
        ("export", "rmsnorm", "csrc/norm_binding.cu", 3),
        ("dispatch", "demo::Norm", "csrc/norm.cu", 8),
        ("launch", "demo::NormKernel", "include/norm.cuh", 13),
    ]
    jit, export, disp, launch = c.hops
    assert [(g.text, g.decided, g.keys) for g in jit.guards] == [("_use_cuda_norm(x.device)", True, ("backend",))]
    assert "compiles csrc/norm.cu, csrc/norm_binding.cu" in jit.detail and "loaded at pkg/ops.py:17" in jit.detail
    assert export.written == "TVM_FFI_DLL_EXPORT_TYPED_FUNC(rmsnorm, rmsnorm);" and export.src is None
    assert [g.text for g in disp.guards] == ["input_ndim == 2"] and disp.guards[0].decided is None
    (d,) = disp.dispatch
    assert (d.macro, d.line, d.defined_at, d.total) == ("DISPATCH_DTYPE", 7, "csrc/dispatch.h:5", 2)
    assert [b.bindings for b in d.branches] == [(("c_type", "nv_half"),), (("c_type", "nv_bfloat16"),)]
    assert c.kernel == launch.dst and t.kernels == (launch.dst,)
    assert [g.text for g in t.undecided] == ["input_ndim == 2"]


def test_both_backends_with_their_conditions(ix, links, demo_rules):
    t = run(ix, links, demo_rules, "pkg.ops.norm")
    assert [ix.symbol(k).qualified_name for k in t.kernels] == ["demo::NormKernel", "pkg.dsl.NormKernel.kernel"]
    dsl = next(c for c in t.chains if c.kernel.startswith("demo:pkg.dsl"))
    assert hops(dsl) == [
        ("call", "pkg.dsl.norm_dsl", "pkg/ops.py", 24),
        ("call", "pkg.dsl._compiled_norm", "pkg/dsl.py", 23),
        ("dsl-compile", "pkg.dsl.NormKernel.__call__", "pkg/dsl.py", 19),
        ("launch", "pkg.dsl.NormKernel.kernel", "pkg/dsl.py", 10),
    ]
    assert [(g.text, g.decided) for g in dsl.hops[0].guards] == [("not _use_cuda_norm(x.device)", None)]
    # --when takes one branch
    assert [ix.symbol(k).qualified_name for k in run(ix, links, demo_rules, "pkg.ops.norm", backend="cute-dsl").kernels] \
        == ["pkg.dsl.NormKernel.kernel"]


def test_when_drops_a_type_no_dispatch_branch_takes(ix, links, demo_rules):
    t = run(ix, links, demo_rules, "pkg.ops.norm", backend="cuda", dtype="fp32")
    assert t.chains == ()
    t = run(ix, links, demo_rules, "pkg.ops.norm", backend="cuda", dtype="bf16")
    (d,) = t.chains[0].hops[2].dispatch
    assert [b.bindings for b in d.branches] == [(("c_type", "nv_bfloat16"),)]


def test_namespace_closure_and_jit_template(ix, links, demo_rules):
    t = run(ix, links, demo_rules, "pkg.ops.decode")
    (c,) = t.chains
    assert hops(c) == [
        ("call", "pkg.ops.get_decode_module.run_decode", "pkg/ops.py", 41),
        ("jit-module", "JIT module of pkg.jit.modules.gen_decode_module", "pkg/ops.py", 34),
        ("export", "decode_run", "csrc/decode_binding.cu", 3),
        ("specialisation", "demo::DecodeDispatched", "csrc/decode.cu", 6),
        ("launch", "demo::DecodeKernel", "include/decode.cuh", 14),
    ]
    _, jit, export, spec, launch = c.hops
    assert "renders csrc/decode_config.jinja, csrc/decode_inst.jinja" in jit.detail
    # the binding file is compiled only for backend == "fa2" (the spec maker's own condition)
    assert [g.text for g in export.guards] == ["backend == 'fa2'"]
    (d,) = spec.dispatch
    assert (d.macro, d.defined_at, d.generated) == ("DISPATCH_context", "csrc/decode_config.jinja:4", True)
    assert d.branches[0].bindings == (("AttentionVariant", "{{ variant_name }}"),)
    assert spec.detail.startswith("instantiated by the JIT template csrc/decode_inst.jinja:5")
    assert dict(spec.env)["HEAD_DIM"] == "{{ head_dim_qk }}"
    # the launcher's `if (HEAD_DIM <= 256)` reads the template parameter, decided by --when
    assert launch.guards[0].decided is None
    got = run(ix, links, demo_rules, "pkg.ops.decode", head_dim=128, backend="fa2")
    assert got.chains[0].hops[-1].guards[0].decided is True and got.dead_ends == ()
    assert run(ix, links, demo_rules, "pkg.ops.decode", head_dim=512, backend="fa2").chains == ()
    # the other backend's export leads to code the index sees no launch in: said, not dropped
    (dead,) = t.dead_ends
    assert dead.hops[-1].target == "decode_run_sm90" and "no kernel launch" in dead.reason
    assert [g.text for g in dead.hops[-1].guards] == ["not (backend == 'fa2')"]


def test_autograd_torch_op_extension_pointer_specialisation(ix, links, demo_rules):
    t = run(ix, links, demo_rules, "pkg.attn_func", head_dim=100, dtype="fp16", causal="true", torch="2.5",
            **{"pass": "forward"})
    (c,) = t.chains
    assert hops(c) == [
        ("autograd", "pkg.attn.AttnFunc.forward", "pkg/attn.py", 34),
        ("torch-op", "pkg.attn._attn_forward", "pkg/attn.py", 26),
        ("extension", "extension module demo_attn_cuda", "pkg/attn.py", 14),
        ("export", "demo::attn_fwd", "csrc/attn_api.cpp", 29),
        ("call", "demo::run_attn", "csrc/attn_api.cpp", 21),
        ("specialisation", "demo::run_attn_", "csrc/attn_api.cpp", 10),
        ("call", "demo::run_attn_hdim128", "csrc/inst/attn_hdim128_fp16_causal.cu", 7),
        ("call", "demo::run_attn_kernel", "csrc/attn_launch.h", 39),
        ("launch", "demo::attn_fwd_kernel", "csrc/attn_launch.h", 30),
        ("body", "demo::compute_attn", "csrc/attn_launch.h", 23),
        ("body", "demo::compute_attn_1rowblock", "csrc/attn_launch.h", 18),
    ]
    assert "through the function pointer launch = &run_attn (line 20)" in c.hops[4].detail
    spec = c.hops[5]
    assert spec.dst.endswith("@csrc/inst/attn_hdim128_fp16_causal.cu:5")
    assert "explicit specialisation run_attn_<cutlass::half_t, 128, true>" in spec.detail
    assert [(d.macro, [b.bindings for b in d.branches]) for d in spec.dispatch] == [
        ("FP16_SWITCH", [(("elem_type", "cutlass::half_t"),)]),
        ("HEADDIM_SWITCH", [(("kHeadDim", "128"),)]),
        ("CAUSAL_SWITCH", [(("Is_causal", "true"),)]),
    ]
    # the default argument of run_attn is bound; only num_splits stays open
    assert [(g.text, g.decided) for g in spec.guards] == [("params.num_splits <= 1 && !force_split", None)]
    # template arguments flow into the callee: `if constexpr (!Is_causal)` decided statically
    hdim = c.hops[6]
    assert dict(hdim.env) == {"T": "cutlass::half_t", "Is_causal": "true"}
    assert [(g.text, g.decided) for g in c.hops[7].guards] == [("Is_causal", True)]
    # the import chosen at module level under a condition no --when key names stays open
    assert [g.text for g in t.undecided] == ["not USE_TRITON", "params.num_splits <= 1 && !force_split"]


def test_without_when_every_specialisation_is_a_chain(ix, links, demo_rules):
    t = run(ix, links, demo_rules, "pkg.attn.AttnFunc.forward", torch="2.5")
    specs = sorted({c.hops[4].dst.split("@")[1] for c in t.chains})
    assert specs == ["csrc/inst/attn_hdim128_bf16.cu:5", "csrc/inst/attn_hdim128_bf16_causal.cu:5",
                     "csrc/inst/attn_hdim128_fp16.cu:5", "csrc/inst/attn_hdim128_fp16_causal.cu:5",
                     "csrc/inst/attn_hdim64_fp16.cu:5"]
    hd64 = next(c for c in t.chains if "hdim64" in c.hops[4].dst)
    assert [[b.bindings for b in d.branches] for d in hd64.hops[4].dispatch][1] == [(("kHeadDim", "64"),)]
    # each chain takes exactly the branch of run_attn_hdim128 its causal value allows
    for c in t.chains:
        causal = dict(c.hops[5].env)["Is_causal"]
        assert c.hops[6].line == (39 if causal == "true" else 37)


def test_backward_pass_and_dead_ends(ix, links, demo_rules):
    t = run(ix, links, demo_rules, "pkg.attn_func", torch="2.5", rocm="false", **{"pass": "backward"})
    assert t.chains == ()
    reasons = {(d.hops[-1].kind, d.reason) for d in t.dead_ends}
    assert ("extension", "extension module demo_attn_cuda exports no `bwd` that the export rules find") in reasons
    # the alternative module the Python file imports under a condition is followed as Python
    t = run(ix, links, demo_rules, "pkg.attn._attn_forward")
    assert t.chains and all(c.hops[0].kind == "extension" for c in t.chains)


def test_entry_errors(ix, links, demo_rules):
    with pytest.raises(UsageError) as got:
        find_entry(ix, "pkg.ops.nrom")
    assert got.value.message == "unknown entry 'pkg.ops.nrom'" and "pkg.ops.norm" in got.value.hint
    with pytest.raises(UsageError) as got:
        run(ix, links, demo_rules, "pkg.ops.norm", colour="red")
    assert "unknown --when key 'colour'" in got.value.message and "head_dim" in got.value.hint
    assert find_entry(ix, "demo:pkg.attn_func").qualified_name == "pkg.attn.attn_func"


def test_through_lists_every_function_on_a_chain(ix, links, demo_rules):
    t = run(ix, links, demo_rules, "pkg.ops.norm", backend="cuda")
    names = [ix.symbol(k).qualified_name for k in t.through()]
    assert names == ["pkg.ops.norm", "rmsnorm", "demo::Norm", "demo::NormKernel"]


# ---- the command's output ------------------------------------------------------------------------

def test_text_and_json_output(ix, links, demo_rules):
    from annotate.commands.trace import parse_when, trace_json, trace_lines

    t = run(ix, links, demo_rules, "pkg.ops.norm", backend="cuda")
    lines = trace_lines(ix, t)
    assert lines[0] == "pkg.ops.norm   demo:pkg/ops.py:20   when backend=cuda"
    assert lines[1].startswith("  - jit-module     JIT module of pkg.jit.modules.gen_norm_module   pkg/ops.py:22   "
                               "if _use_cuda_norm(x.device)   ")
    assert lines[4].startswith("        - launch         demo::NormKernel   include/norm.cuh:13") and \
        lines[4].endswith("[kernel]")
    assert "input_ndim == 2   csrc/norm.cu:6   (--when ndim)" in "\n".join(lines)
    data = json.loads(json.dumps(trace_json(ix, t)))
    assert data["entry"] == "pkg.ops.norm" and data["when"] == {"backend": "cuda"}
    first = data["chains"][0]["hops"][0]
    assert set(first) == {"kind", "caller", "callee", "caller_key", "callee_key", "upstream", "file", "line", "written",
                          "when", "dispatch", "binds", "detail"}
    assert first["when"] == [{"condition": "_use_cuda_norm(x.device)", "file": "pkg/ops.py", "line": 21,
                              "decided": True, "keys": ["backend"], "note": rules().variable("_use_cuda_norm(x)").note}]
    assert "FLASHINFER_USE_CUDA_NORM=1" in first["when"][0]["note"]
    assert data["chains"][0]["hops"][2]["dispatch"][0]["branches"][0] == {"conditions": ["x.dtype() == float16_code"],
                                                                         "bindings": {"c_type": "nv_half"}}
    assert parse_when(["head_dim=128,dtype=fp16", "causal=true"]) == {"head_dim": "128", "dtype": "fp16", "causal": "true"}
    with pytest.raises(UsageError):
        parse_when(["head_dim"])


# ---- the tables kept beside the index ------------------------------------------------------------

def test_links_snapshot_warm_damaged_and_read_only(tmp_path, tmp_config, monkeypatch, capsys):
    from annotate.index import crosslang, links_store
    from annotate.index.api import index_directory

    tree = tmp_path / "tree"
    shutil.copytree(DATA, tree)
    ix = index_directory("demo", tree, config=tmp_config)
    first = crosslang.load_links(ix, tmp_config)
    path = links_store.snapshot_path(tmp_config, ix)
    assert path.is_file() and first == build_links(ix)

    # warm: a fresh index of the same content reads the snapshot and scans nothing
    def no_scan(*a, **k):
        raise AssertionError("scanned although the snapshot is there")

    ix2 = index_directory("demo", tree, config=tmp_config)
    monkeypatch.setattr(crosslang, "build_links", no_scan)
    assert crosslang.load_links(ix2, tmp_config) == first
    monkeypatch.undo()

    # damaged: rebuilt and written again
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(links_store.LinksStoreError):
        links_store.read(path, {})
    ix3 = index_directory("demo", tree, config=tmp_config)
    assert crosslang.load_links(ix3, tmp_config) == first
    assert links_store.read(path, {}) == first

    # read-only cache with a damaged snapshot: made in memory, said once, nothing written
    path.write_bytes(b"garbage" * 20)
    before = path.read_bytes()
    mode = (tmp_config.index_dir() / "links").stat().st_mode
    for d in (tmp_config.index_dir() / "links", tmp_config.index_dir()):
        os.chmod(d, 0o555)
    try:
        ix4 = index_directory("demo", tree, config=tmp_config)
        assert crosslang.load_links(ix4, tmp_config) == first
    finally:
        for d in (tmp_config.index_dir(), tmp_config.index_dir() / "links"):
            os.chmod(d, mode)
    assert path.read_bytes() == before
    err = capsys.readouterr().err
    assert "unusable cross-language links cache" in err and "not saved" in err


def test_links_snapshot_keyed_by_content(tmp_path, tmp_config):
    from annotate.index import crosslang, links_store
    from annotate.index.api import index_directory

    tree = tmp_path / "tree"
    shutil.copytree(DATA, tree)
    ix = index_directory("demo", tree, config=tmp_config)
    crosslang.load_links(ix, tmp_config)
    before = links_store.snapshot_path(tmp_config, ix)
    binding = tree / "csrc" / "norm_binding.cu"
    binding.write_text(binding.read_text() + "TVM_FFI_DLL_EXPORT_TYPED_FUNC(rmsnorm2, rmsnorm);\n")
    os.utime(binding, (1, 1))  # stat data other than the recorded one: hashed again
    ix2 = index_directory("demo", tree, config=tmp_config)
    after = links_store.snapshot_path(tmp_config, ix2)
    assert after != before
    assert "rmsnorm2" in {e.name for e in crosslang.load_links(ix2, tmp_config).exports}


EARLY_EXITS = """\
int run(Params& params) {
  if (!params.is_e4m3) {
#ifndef DISABLE_64
    if (params.d <= 64) {
      if constexpr (Arch == 90) {
        if (params.dv > 256) { return go<64, 512>(params); }
      }
      return go<64, 64>(params);
    }
#endif
#ifndef DISABLE_96
    if (params.d <= 96) { return go<96, 96>(params); }
#else
    if (params.d <= 80) { return go<80, 80>(params); }
#endif
    if (params.d <= 128) { return go<128, 128>(params); }
    log(params);
    if (params.d <= 256) { return go<256, 256>(params); }
  }
#if FAST
  if (fast) return 0;
#else
  slow(params);
#endif
  return 1;
}
"""


@pytest.mark.parametrize("call, guards", [
    ("go<64, 64>", ["!params.is_e4m3", "params.d <= 64"]),
    ("go<128, 128>", ["!params.is_e4m3", "!(params.d <= 64)", "!(params.d <= 96)", "params.d <= 128"]),
    ("go<256, 256>", ["!params.is_e4m3", "!(params.d <= 64)", "!(params.d <= 96)", "!(params.d <= 128)",
                      "params.d <= 256"]),
    ("slow(params)", []),  # the early return is in the other branch of the group
])
def test_guards_after_an_if_that_returns(call, guards):
    """FA3's head-dim chains are separate `if`s that return, in `#ifndef` groups: a call after
    one runs only where its condition is false. An `if` that may fall through, or one in the
    `#else` of a group, guards nothing after it."""
    from annotate.index.trace_cpp import CppFile

    line = next(i for i, ln in enumerate(EARLY_EXITS.splitlines(), 1) if call in ln)
    column = EARLY_EXITS.splitlines()[line - 1].index(call)
    got = CppFile(EARLY_EXITS.encode()).guards_at(line, column)
    assert [g.text for g in got] == guards

"""Cross-language traces on the real pins (slow: needs `annotate fetch`), asserted hop by hop:
the chains issue 17 names, read by hand in the pinned sources."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(pinned, real_config):
    from annotate.project import open_project

    pinned("flashinfer")
    pinned("flash-attention")
    return open_project(real_config)


def steps(chain):
    """(kind, what it reaches, evidence file) per hop; lines are checked where they matter."""
    return [(h.kind, h.target, h.path) for h in chain.hops]


def kernel_names(project, t):
    return [project.index.symbol(k).qualified_name for k in t.kernels]


def test_rmsnorm_cuda_branch(project):
    t = project.trace("flashinfer.rmsnorm", {"backend": "cuda", "ndim": "2"})
    assert t.entry.qualified_name == "flashinfer.norm.rmsnorm"
    (c,) = t.chains
    assert steps(c) == [
        ("call", "flashinfer.norm._rmsnorm_impl", "flashinfer/norm/__init__.py"),
        ("jit-module", "JIT module of flashinfer.jit.norm.gen_norm_module", "flashinfer/norm/__init__.py"),
        ("export", "rmsnorm", "csrc/flashinfer_norm_binding.cu"),
        ("dispatch", "flashinfer::norm::RMSNorm", "csrc/norm.cu"),
        ("launch", "flashinfer::norm::RMSNormKernel", "include/flashinfer/norm.cuh"),
    ]
    call, jit, export, disp, launch = c.hops
    assert jit.written == "get_norm_module().rmsnorm(out, input, weight, eps, enable_pdl)"
    assert "compiles csrc/norm.cu, csrc/flashinfer_norm_binding.cu" in jit.detail
    assert export.written == "TVM_FFI_DLL_EXPORT_TYPED_FUNC(rmsnorm, rmsnorm);"
    assert export.dst == "flashinfer:rmsnorm@csrc/norm.cu:24"
    assert [d.macro for d in disp.dispatch] == ["DISPATCH_DLPACK_DTYPE_TO_CTYPE_FP16"]
    assert [b.bindings for b in disp.dispatch[0].branches] == [(("c_type", "nv_half"),), (("c_type", "nv_bfloat16"),)]
    assert (launch.line, [d.macro for d in launch.dispatch]) == (142, ["DISPATCH_ALIGNED_VEC_SIZE"])
    assert t.undecided == ()


def test_rmsnorm_shows_both_backends_with_their_conditions(project):
    t = project.trace("flashinfer.norm.rmsnorm", {"ndim": "2"})
    assert kernel_names(project, t) == ["flashinfer::norm::RMSNormKernel",
                                        "flashinfer.norm.kernels.rmsnorm.RMSNormKernel.kernel"]
    cuda, dsl = t.chains
    assert [g.text for g in cuda.hops[1].guards] == ["_use_cuda_norm(input.device)"]
    assert steps(dsl) == [
        ("call", "flashinfer.norm._rmsnorm_impl", "flashinfer/norm/__init__.py"),
        ("call", "flashinfer.norm.kernels.rmsnorm.rmsnorm_cute", "flashinfer/norm/__init__.py"),
        ("call", "flashinfer.norm.kernels.rmsnorm._get_compiled_rmsnorm_kernel", "flashinfer/norm/kernels/rmsnorm.py"),
        ("dsl-compile", "flashinfer.norm.kernels.rmsnorm.RMSNormKernel.__call__", "flashinfer/norm/kernels/rmsnorm.py"),
        ("launch", "flashinfer.norm.kernels.rmsnorm.RMSNormKernel.kernel", "flashinfer/norm/kernels/rmsnorm.py"),
    ]
    # the CuTe DSL path is imported only when FLASHINFER_USE_CUDA_NORM is not set
    assert [g.text for g in dsl.hops[1].guards] == ["not _use_cuda_norm(input.device)", "not input.dim() == 3",
                                                    "not _USE_CUDA_NORM"] or \
        [g.text for g in dsl.hops[1].guards] == ["not _use_cuda_norm(input.device)", "not (input.dim() == 3)",
                                                 "not _USE_CUDA_NORM"]
    assert {g.keys for g in dsl.hops[1].guards} == {("backend",), ("ndim",)}


def test_single_decode_chain(project):
    t = project.trace("flashinfer.single_decode_with_kv_cache",
                      {"use_tensor_cores": "false", "kv_len": "128", "dtype": "fp16", "head_dim": "128"})
    (c,) = t.chains
    assert steps(c) == [
        ("call", "flashinfer.decode.get_single_decode_module.run_single_decode", "flashinfer/decode.py"),
        ("jit-module", "JIT module of flashinfer.jit.attention.modules.gen_single_decode_module", "flashinfer/decode.py"),
        ("export", "single_decode_with_kv_cache", "csrc/single_decode_jit_binding.cu"),
        ("specialisation", "flashinfer::SingleDecodeWithKVCacheDispatched", "csrc/single_decode.cu"),
        ("launch", "flashinfer::SingleDecodeWithKVCacheKernel", "include/flashinfer/attention/decode.cuh"),
    ]
    call, jit, export, spec, launch = c.hops
    assert [g.text for g in call.guards] == ["not use_tensor_cores"] and call.line == 671
    assert jit.written == "run_func(" and jit.line == 172  # run_func = module.run, in the closure
    assert "renders csrc/single_decode_customize_config.jinja, csrc/single_decode_kernel_inst.jinja" in jit.detail
    assert export.written == "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, single_decode_with_kv_cache);"
    (d,) = spec.dispatch
    assert (d.macro, d.defined_at) == ("DISPATCH_context", "csrc/single_decode_customize_config.jinja:10")
    assert spec.detail.startswith("instantiated by the JIT template csrc/single_decode_kernel_inst.jinja:7")
    assert dict(spec.env)["HEAD_DIM"] == "{{ head_dim_qk }}"
    assert (launch.line, [g.text for g in launch.guards]) == (698, ["seq_len <= 256 || tmp == nullptr"])
    # a long KV goes through the partition-kv launch and merges the partial states
    long = project.trace("flashinfer.single_decode_with_kv_cache", {"use_tensor_cores": "false", "kv_len": "4096"})
    assert "flashinfer::MergeStatesKernel" in kernel_names(project, long)


FA_FWD = {"head_dim": "128", "dtype": "fp16", "causal": "true", "pass": "forward", "torch": "2.5", "rocm": "false",
          "num_splits": "1", "dropout": "false"}


def test_flash_attn_func_hdim128_fp16_causal(project):
    t = project.trace("flash_attn.flash_attn_func", FA_FWD)
    assert kernel_names(project, t) == ["flash::flash_fwd_kernel"]
    # two tile shapes, chosen on the GPU at run time (sm8x or not): the same kernel template
    assert len(t.chains) == 2
    c = t.chains[0]
    assert steps(c) == [
        ("autograd", "flash_attn.flash_attn_interface.FlashAttnFunc.forward", "flash_attn/flash_attn_interface.py"),
        ("torch-op", "flash_attn.flash_attn_interface._flash_attn_forward", "flash_attn/flash_attn_interface.py"),
        ("extension", "extension module flash_attn_2_cuda", "flash_attn/flash_attn_interface.py"),
        ("export", "flash::mha_fwd", "csrc/flash_attn/flash_api.cpp"),
        ("call", "flash::run_mha_fwd", "csrc/flash_attn/flash_api.cpp"),
        ("specialisation", "flash::run_mha_fwd_", "csrc/flash_attn/flash_api.cpp"),
        ("call", "flash::run_mha_fwd_hdim128", "csrc/flash_attn/src/flash_fwd_hdim128_fp16_causal_sm80.cu"),
        ("dispatch", "flash::run_flash_fwd", "csrc/flash_attn/src/flash_fwd_launch_template.h"),
        ("launch", "flash::flash_fwd_kernel", "csrc/flash_attn/src/flash_fwd_launch_template.h"),
        ("body", "flash::compute_attn", "csrc/flash_attn/src/flash_fwd_launch_template.h"),
        ("body", "flash::compute_attn_1rowblock", "csrc/flash_attn/src/flash_fwd_kernel.h"),
    ]
    export, spec, hdim, run = c.hops[3], c.hops[5], c.hops[6], c.hops[7]
    assert export.written.startswith('m.def("fwd", &FLASH_NAMESPACE::mha_fwd')
    assert spec.dst == "flash-attention:flash::run_mha_fwd_@csrc/flash_attn/src/flash_fwd_hdim128_fp16_causal_sm80.cu:9"
    assert [(d.macro, [b.bindings for b in d.branches]) for d in spec.dispatch] == [
        ("FP16_SWITCH", [(("elem_type", "cutlass::half_t"),)]),
        ("HEADDIM_SWITCH", [(("kHeadDim", "128"),)]),
        ("BOOL_SWITCH", [(("Is_causal", "true"),)]),
    ]
    assert [(g.text, g.decided) for g in spec.guards] == [("params.num_splits <= 1 && !force_split_kernel", True)]
    assert dict(hdim.env) == {"T": "cutlass::half_t", "Is_causal": "true"}
    assert [d.macro for d in run.dispatch] == ["DROPOUT_SWITCH"]
    assert [b.bindings for b in run.dispatch[0].branches] == [(("Is_dropout", "false"),)]
    assert {c.hops[7].line for c in t.chains} == {237, 240}  # is_sm8x: 64x64 tiles, else 128x64
    assert [g.text for g in t.undecided] == ["seqlen_k > 0", "is_sm8x", "!is_sm8x"]


def test_flash_attn_func_without_when_reaches_split_and_backward(project):
    t = project.trace("flash_attn.flash_attn_func", {"torch": "2.5", "rocm": "false"})
    names = set(kernel_names(project, t))
    assert {"flash::flash_fwd_kernel", "flash::flash_fwd_splitkv_kernel", "flash::flash_fwd_splitkv_combine_kernel",
            "flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"} <= names
    specs = {c.hops[5].dst.split("@")[1].split(":")[0] for c in t.chains if c.hops[5].kind == "specialisation"}
    assert len([s for s in specs if "flash_fwd_hdim" in s]) == 24  # every forward instantiation file


def test_backward_reaches_the_seqk_parallel_kernel(project):
    t = project.trace("flash_attn.flash_attn_interface.FlashAttnFunc.backward",
                      {"head_dim": "128", "dtype": "fp16", "causal": "true", "torch": "2.5", "rocm": "false"})
    assert kernel_names(project, t) == ["flash::flash_bwd_dot_do_o_kernel",
                                        "flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
                                        "flash::flash_bwd_convert_dq_kernel"]
    c = next(c for c in t.chains if c.kernel.startswith("flash-attention:flash::flash_bwd_dq_dk_dv_loop_seqk_parallel"))
    assert steps(c) == [
        ("torch-op", "flash_attn.flash_attn_interface._flash_attn_backward", "flash_attn/flash_attn_interface.py"),
        ("extension", "extension module flash_attn_2_cuda", "flash_attn/flash_attn_interface.py"),
        ("export", "flash::mha_bwd", "csrc/flash_attn/flash_api.cpp"),
        ("call", "flash::run_mha_bwd", "csrc/flash_attn/flash_api.cpp"),
        ("specialisation", "flash::run_mha_bwd_", "csrc/flash_attn/flash_api.cpp"),
        ("call", "flash::run_mha_bwd_hdim128", "csrc/flash_attn/src/flash_bwd_hdim128_fp16_causal_sm80.cu"),
        ("dispatch", "flash::run_flash_bwd", "csrc/flash_attn/src/flash_bwd_launch_template.h"),
        ("call", "flash::run_flash_bwd_seqk_parallel", "csrc/flash_attn/src/flash_bwd_launch_template.h"),
        ("launch", "flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "csrc/flash_attn/src/flash_bwd_launch_template.h"),
        ("body", "flash::compute_dq_dk_dv_seqk_parallel", "csrc/flash_attn/src/flash_bwd_launch_template.h"),
        ("body", "flash::compute_dq_dk_dv_1colblock", "csrc/flash_attn/src/flash_bwd_kernel.h"),
    ]
    # mha_bwd calls run_mha_bwd through a local function pointer
    assert "through the function pointer launch = &run_mha_bwd" in c.hops[3].detail
    assert c.hops[4].dst.endswith("@csrc/flash_attn/src/flash_bwd_hdim128_fp16_causal_sm80.cu:9")


def test_varlen_and_kvcache_entries(project):
    t = project.trace("flash_attn.flash_attn_varlen_func", FA_FWD)
    # mha_varlen_fwd passes force_split_kernel = paged_KV: with one split, a paged KV cache still
    # takes the split-KV kernel, so both stay, the split one under the condition it cannot decide
    assert kernel_names(project, t) == ["flash::flash_fwd_kernel", "flash::flash_fwd_splitkv_kernel"]
    assert t.chains[0].hops[3].target == "flash::mha_varlen_fwd"
    split = next(c for c in t.chains if c.kernel.startswith("flash-attention:flash::flash_fwd_splitkv_kernel"))
    assert [(g.text, g.decided) for g in split.hops[5].guards] == [
        ("!(params.num_splits <= 1 && !force_split_kernel)", None)]
    t = project.trace("flash_attn.flash_attn_with_kvcache", {"head_dim": "128", "dtype": "fp16", "causal": "true"})
    assert t.chains[0].hops[1].target == "flash::mha_fwd_kvcache"
    assert "flash::flash_fwd_splitkv_kernel" in kernel_names(project, t)


def _has_fa3(pinned) -> bool:
    """The checkout holds FA3's C++ (the git route does; the PyPI archive route has only the
    Python of `hopper/`)."""
    return (pinned("flash-attention") / "hopper" / "flash_api.cpp").is_file()


def test_every_site_entry_reaches_a_kernel(project, pinned):
    traces = project.traces()
    assert len(traces) >= 7
    assert [et.entry.entry for et in traces][:3] == ["flashinfer.norm.rmsnorm", "flashinfer.norm.fused_add_rmsnorm",
                                                    "flashinfer.decode.single_decode_with_kv_cache"]
    for et in traces:
        t = et.trace
        if not t.chains and et.entry.entry.startswith("hopper.") and not _has_fa3(pinned):
            # no FA3 C++ in this checkout: the trace says where it stops and why
            op = "bwd" if et.entry.entry.endswith(".backward") else "fwd"
            assert [d.reason for d in t.dead_ends] == [f"no registration of the torch op flash_attn_3::{op} found"]
            continue
        assert t.chains, t.entry.qualified_name
        assert all(project.index.symbol(c.kernel).kind == "kernel" or c.kernel.split(":", 1)[1].split("@")[0].endswith(
            ".kernel") for c in t.chains)


def test_fa3_backward_takes_the_rounded_head_dim(project, pinned):
    """The backward chooses on `params.d_rounded` (head_dim rounded up): for head_dim 128 on sm_90
    without softcap, one instantiation, launched through cutlass's device_kernel."""
    if not _has_fa3(pinned):
        pytest.skip("FA3's C++ (hopper/flash_api.cpp) is not in this checkout (PyPI archive route)")
    t = project.trace("hopper.flash_attn_interface.FlashAttnFunc.backward",
                      {"dtype": "bf16", "head_dim": "128", "causal": "true", "arch": "90", "softcap": "false"})
    assert kernel_names(project, t) == ["cutlass::device_kernel"]
    specs = {h.dst for c in t.chains for h in c.hops if h.kind == "specialisation"}
    assert specs == {"flash-attention:run_mha_bwd_@hopper/instantiations/flash_bwd_hdim128_bf16_sm90.cu:8"}
    spec = next(h for h in t.chains[0].hops if h.kind == "specialisation")
    assert [(g.text, g.decided) for g in spec.guards] == [
        ("params.is_bf16", True), ("!(params.d_rounded == 64)", True), ("!(params.d_rounded == 96)", True),
        ("params.d_rounded == 128", True)]
    # every launch passes `false /*launch_with_pdl*/`: cutlass's `if (not launch_with_pdl)` is decided,
    # so only the plain <<<>>> launch stays (five call sites: preprocess, main, dQ, and dK/dV with GQA)
    launches = [c.hops[-1] for c in t.chains]
    assert {(h.path, h.line) for h in launches} == {("csrc/cutlass/include/cutlass/kernel_launch.h", 91)}
    assert {c.hops[-2].line for c in t.chains} == {74, 221, 248, 288, 290}
    assert all([(g.text, g.decided) for g in h.guards] == [("not launch_with_pdl", True)] for h in launches)


def test_fa3_forward_reaches_cutlass_device_kernel(project, pinned):
    """FA3 has no `__global__` of its own: run_flash_fwd launches cutlass's generic
    device_kernel<AttnKernel>, through kernel_launch or, with a cluster, launch_kernel_on_cluster.
    The head-dim `if`s return, so for head_dim 128 only the 128 branch is left."""
    if not _has_fa3(pinned):
        pytest.skip("FA3's C++ (hopper/flash_api.cpp) is not in this checkout (PyPI archive route)")
    t = project.trace("hopper.flash_attn_interface.flash_attn_func",
                      {"dtype": "bf16", "head_dim": "128", "causal": "true", "pass": "forward", "num_splits": "1"})
    assert kernel_names(project, t) == ["flash::prepare_varlen_num_blocks_kernel", "cutlass::device_kernel"]
    c = next(c for c in t.chains if c.hops[-1].path == "hopper/flash_fwd_launch_template.h")
    assert steps(c) == [
        ("autograd", "hopper.flash_attn_interface.FlashAttnFunc.forward", "hopper/flash_attn_interface.py"),
        ("call", "hopper.flash_attn_interface._flash_attn_forward", "hopper/flash_attn_interface.py"),
        ("torch-op", "mha_fwd", "hopper/flash_attn_interface.py"),
        ("call", "run_mha_fwd", "hopper/flash_api.cpp"),
        ("dispatch", "run_mha_fwd_constexpr", "hopper/flash_api.cpp"),
        ("call", "run_mha_fwd_", "hopper/flash_api.cpp"),
        ("dispatch", "run_flash_fwd", "hopper/flash_fwd_launch_template.h"),
        ("launch", "cutlass::device_kernel", "hopper/flash_fwd_launch_template.h"),
    ]
    hdim = c.hops[5]
    assert [(g.text, g.decided) for g in hdim.guards] == [
        ("!params.is_e4m3", True), ("params.is_bf16", True), ("!(params.d <= 64)", True),
        ("!(params.d <= 96)", True), ("params.d <= 128", True)]
    assert {h.line for ch in t.chains for h in ch.hops if h.target == "run_mha_fwd_"} == {hdim.line}
    cluster = c.hops[-1]
    assert "launch_kernel_on_cluster" in cluster.written and [g.text for g in cluster.guards] == ["size(ClusterShape{}) > 1"]
    assert {(h.path, h.line) for ch in t.chains for h in ch.hops[-1:] if h.target == "cutlass::device_kernel"} == {
        ("hopper/flash_fwd_launch_template.h", cluster.line),
        ("csrc/cutlass/include/cutlass/kernel_launch.h", 91), ("csrc/cutlass/include/cutlass/kernel_launch.h", 116)}


def test_the_command(real_config, pinned, capsys):
    from annotate.cli import main

    pinned("flashinfer")
    assert main(["trace", "flashinfer.rmsnorm", "--when", "backend=cuda,ndim=2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [h["kind"] for h in data["chains"][0]["hops"]] == ["call", "jit-module", "export", "dispatch", "launch"]
    assert main(["trace", "flashinfer.rmsnrom"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("annotate: error: unknown entry 'flashinfer.rmsnrom'") and "flashinfer.norm.rmsnorm" in err
    assert main(["trace", "flashinfer.rmsnorm", "--when", "colour=red"]) == 2
    assert "unknown --when key 'colour'" in capsys.readouterr().err


def test_fa3_keys_cut_the_varlen_and_gqa_branches(project, pinned):
    """`varlen` and `gqa` bind the names FA3's VARLEN_SWITCH and BOOL_SWITCH(params.h != params.h_k)
    give: without them the forward prepares the varlen scheduler too, and the backward launches the
    dK/dV postprocess kernels that only GQA needs (flash_bwd_launch_template.h:288, 290)."""
    if not _has_fa3(pinned):
        pytest.skip("FA3's C++ (hopper/flash_api.cpp) is not in this checkout (PyPI archive route)")
    fwd = {"dtype": "bf16", "head_dim": "128", "causal": "true", "pass": "forward", "num_splits": "1", "varlen": "false"}
    assert kernel_names(project, project.trace("hopper.flash_attn_interface.flash_attn_func", fwd)) == [
        "cutlass::device_kernel"]
    bwd = {"dtype": "bf16", "head_dim": "128", "causal": "true", "arch": "90", "softcap": "false", "varlen": "false"}
    lines = {g: {c.hops[-2].line for c in project.trace("hopper.flash_attn_interface.FlashAttnFunc.backward",
                                                          {**bwd, "gqa": g}).chains} for g in ("false", "true")}
    assert lines == {"false": {74, 221, 248}, "true": {74, 221, 248, 288, 290}}

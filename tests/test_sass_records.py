"""Per-line SASS records (annotate.harness.sass): nvdisasm's inlined-at frames read and attributed
to upstream lines, the typed record and its bounded reader, `annotate sass` on the command line,
and (nvcc) the real route on a tiny fixture kernel and on the committed catalog records."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from annotate.cli import main
from annotate.errors import AnnotateError, UsageError
from annotate.harness import sass
from annotate.harness.ptxas import KernelResources
from annotate.harness.record import RecordError
from annotate.harness.spec import load_spec

from harness_support import make_kernel


def _disasm(root, build) -> str:
    """nvdisasm -g -gi output in the shape it prints: a run of `//## File` lines (innermost
    frame first) before each instruction group."""
    return f"""\t.target\tsm_90

//--------------------- .text._Z6kernelPf --------------------------
\t.section\t.text._Z6kernelPf,"ax",@progbits
_Z6kernelPf:
.text._Z6kernelPf:
\t//## File "{root}/include/flashinfer/attention/decode.cuh", line 10
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "{root}/include/flashinfer/attention/../math.cuh", line 5 inlined at "{root}/include/flashinfer/attention/decode.cuh", line 12
\t//## File "{root}/include/flashinfer/attention/decode.cuh", line 12
        /*0010*/                   SHFL.BFLY PT, R3, R2, 0x10, 0x1f ;
        /*0020*/                   SHFL.BFLY PT, R4, R3, 0x8, 0x1f ;
\t//## File "/usr/local/cuda/include/cuda_fp16.hpp", line 300 inlined at "{root}/include/flashinfer/vec_dtypes.cuh", line 40
\t//## File "{root}/include/flashinfer/vec_dtypes.cuh", line 40 inlined at "{root}/include/flashinfer/attention/decode.cuh", line 14
\t//## File "{root}/include/flashinfer/attention/decode.cuh", line 14
        /*0030*/                   HADD2.F32 R5, -RZ, R6.H0_H0 ;
.L_x_0:
        /*0040*/              @!P0 BRA `(.L_x_0) ;
\t//## File "{build}/src/launcher.cu", line 3
        /*0050*/                   EXIT ;
//--------------------- .text._Z5otherPf --------------------------
\t//## File "{root}/include/flashinfer/attention/decode.cuh", line 99
        /*0000*/                   EXIT ;
"""


def _res(mangled, name, regs=40):
    return KernelResources("launcher.cu", mangled, name, "sm_90", regs, 1, 1024, 380, 0, 0, 0)


@pytest.fixture
def fixture_record(tmp_path, tmp_config):
    root = tmp_path / "checkout"
    (root / "include" / "flashinfer").mkdir(parents=True)
    text = _disasm(root, tmp_path / "build")
    spec = dataclasses.replace(load_spec(tmp_config, "decode_kernel"), symbols=("flashinfer::Kernel",))
    res = [_res("_Z6kernelPf", "void flashinfer::Kernel<8u>(float*)"), _res("_Z5otherPf", "void other(float*)")]
    rec = sass.build_record(spec, "90", {"launcher.cu": text}, res, sass.SourceMap.of({"flashinfer": root}),
                            nvcc="13.0", key="k" * 64)
    return rec, text


def test_parse_reads_every_instruction_with_its_chain(fixture_record, tmp_path):
    _, text = fixture_record
    fns = sass.parse_disassembly(text)
    assert [f.mangled for f in fns] == ["_Z6kernelPf", "_Z5otherPf"]
    insns = fns[0].instructions
    assert [i.address for i in insns] == [0, 0x10, 0x20, 0x30, 0x40, 0x50]
    assert [i.opcode for i in insns] == ["LDC", "SHFL.BFLY", "SHFL.BFLY", "HADD2.F32", "BRA", "EXIT"]
    assert insns[4].text == "@!P0 BRA `(.L_x_0)"
    assert len(insns[3].frames) == 3 and insns[3].frames[0][0].endswith("cuda_fp16.hpp")
    assert insns[4].frames == insns[3].frames  # a label does not end a group's chain


def test_attribution_goes_to_the_innermost_upstream_frame(fixture_record):
    rec, _ = fixture_record
    assert [f.name for f in rec.functions] == ["void flashinfer::Kernel<8u>(float*)"]  # other() filtered out
    fn = rec.functions[0]
    assert fn.symbol == "flashinfer::Kernel" and fn.registers == 40 and fn.instructions == 6
    assert fn.unattributed == 1  # EXIT: only the harness's launcher frame
    assert fn.mix == {"BRA": 1, "EXIT": 1, "HADD2.F32": 1, "LDC": 1, "SHFL.BFLY": 2}
    # attention/../math.cuh normalised; the shuffles are the helper's, and reach the call line
    math = fn.line("flashinfer:include/flashinfer/math.cuh", 5)
    assert math.counts == {"SHFL.BFLY": 2} and math.sass == ("0010 SHFL.BFLY PT, R3, R2, 0x10, 0x1f",
                                                             "0020 SHFL.BFLY PT, R4, R3, 0x8, 0x1f")
    call = fn.line("flashinfer:include/flashinfer/attention/decode.cuh", 12)
    assert call.counts == {} and call.via == {"SHFL.BFLY": 2}
    # a toolkit frame (cuda_fp16.hpp) falls through to the nearest upstream one
    vec = fn.line("flashinfer:include/flashinfer/vec_dtypes.cuh", 40)
    assert vec.counts == {"BRA": 1, "HADD2.F32": 1}
    assert fn.line("flashinfer:include/flashinfer/attention/decode.cuh", 14).via == {"BRA": 1, "HADD2.F32": 1}
    assert not any("cuda" in f.path.split(":")[0] for f in fn.files)


def test_record_round_trips_and_reads_tolerantly(fixture_record, tmp_path):
    rec, _ = fixture_record
    path = tmp_path / "r.json"
    sass.write_sass_record(path, rec)
    assert sass.load_sass_record(path) == rec
    text = path.read_text()
    assert sass.record_json_text(sass.load_sass_record(path)) == text  # written back byte for byte
    data = json.loads(text)
    data["new_key"] = 1
    data["functions"][0]["registers"] = "many"  # mistyped: default
    data["functions"][0]["files"][0]["lines"][0]["zzz"] = [1]
    back = sass.SassRecord.from_json(data)
    assert back.functions[0].registers is None and back.functions[0].instructions == 6


@pytest.mark.parametrize("content, why", [
    ("[1, 2]", "not a JSON object"), ("{", "invalid JSON"), ("[" * 40 + "]" * 40, "nested deeper"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_unreadable_records_are_one_line(tmp_path, content, why):
    p = tmp_path / "bad.json"
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(RecordError, match=why):
        sass.load_sass_record(p)


def test_compact_keeps_per_line_data_of_the_featured_kernels_only(fixture_record):
    rec, _ = fixture_record
    two = dataclasses.replace(rec, functions=rec.functions + (dataclasses.replace(
        rec.functions[0], mangled="_Z6kernel2", name="void flashinfer::Kernel<4u>(float*)"),))
    out = sass.compact(two, ["Kernel<8u>"])
    assert [bool(f.files) for f in out.functions] == [True, False]
    assert out.functions[1].mix == two.functions[1].mix and out.functions[1].registers == 40
    assert sass.compact(two, []) == two
    with pytest.raises(AnnotateError, match="names no kernel"):
        sass.compact(two, ["Kernel<16u>"])


def test_line_lookups(fixture_record):
    rec, _ = fixture_record
    assert sass.parse_line_arg("decode.cuh:12") == ("decode.cuh", 12)
    for bad in ("decode.cuh", "decode.cuh:x", ":3", "a:0"):
        with pytest.raises(UsageError, match="FILE:LINE"):
            sass.parse_line_arg(bad)
    assert sass.match_file(rec, "attention/decode.cuh") == "flashinfer:include/flashinfer/attention/decode.cuh"
    assert sass.match_file(rec, "flashinfer:include/flashinfer/math.cuh") == "flashinfer:include/flashinfer/math.cuh"
    with pytest.raises(UsageError, match="no code from a file"):
        sass.match_file(rec, "prefill.cuh")
    assert sass.code_lines(rec, "flashinfer:include/flashinfer/attention/decode.cuh") == [10, 12, 14]


def test_base_name_and_symbol_filter():
    n = "void flash::flash_fwd_kernel<Traits<128, 64>, false>(flash::Flash_fwd_params)"
    assert sass.base_name(n) == "flash::flash_fwd_kernel"
    assert sass.base_name("void flashinfer::MergeStateKernel<8u, __half, __half>(__half*)") == "flashinfer::MergeStateKernel"
    assert sass.symbol_of(n, ["flash::compute_attn", "flash::flash_fwd_kernel"]) == "flash::flash_fwd_kernel"
    assert sass.symbol_of("void flashinfer::MergeStatesKernel<8u>(float*)", ["flashinfer::MergeStateKernel"]) is None


# ---- the command line ----------------------------------------------------------------------------
def test_cli_errors_are_one_line(capsys):
    assert main(["sass", "nope", "--committed"]) == 2
    assert "unknown kernel 'nope'" in capsys.readouterr().err
    assert main(["sass", "rmsnorm", "--line", "norm.cuh"]) == 2
    assert "expected FILE:LINE" in capsys.readouterr().err
    # the arch names record files and build folders: nothing but a compute capability
    for bad in ("../x", "abc", "9", "90;x"):
        assert main(["sass", "rmsnorm", "--committed", "--arch", bad]) == 2
        err = capsys.readouterr().err
        assert "expected a compute capability" in err and len(err.strip().splitlines()) == 1
    assert sass.parse_arch("sm_90a") == "90a" and sass.parse_arch("80") == "80"
    for args, why in [(["--committed", "--save"], "drop --committed"), (["--identity", "-k", "x"], "--identity takes no"),
                      (["--committed", "-k", "99"], "has 10 kernels"), (["--committed", "-k", "zzz"], "no kernel of rmsnorm"),
                      (["--committed", "--line", "nothere.cuh:3"], "no code from a file named"),
                      (["--committed", "--arch", "75"], "no committed SASS record for sm_75")]:
        assert main(["sass", "rmsnorm", *args]) in (1, 2), args
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2, args


def test_cli_reads_the_committed_record_without_nvcc(capsys):
    assert main(["sass", "rmsnorm", "--committed", "-k", "8u, __half>"]) == 0
    out = capsys.readouterr().out
    assert "flashinfer:include/flashinfer/norm.cuh" in out and "RMSNormKernel<8u, __half>" in out
    committed = sass.load_sass_record(sass.committed_path(_config(), "rmsnorm", "90"))
    fn = next(f for f in committed.functions if f.files and "__half>" in f.name)
    sf = next(f for f in fn.files if f.path.endswith("norm.cuh"))
    line = next(ln for ln in sf.lines if ln.sass)
    assert main(["sass", "rmsnorm", "--committed", "-k", "8u, __half>", "--line", f"norm.cuh:{line.line}", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["sass"] == list(line.sass) and hits[0]["file"] == sf.path
    # a line with no code: one line naming the nearest lines that have some
    assert main(["sass", "rmsnorm", "--committed", "--line", "norm.cuh:1"]) == 2
    err = capsys.readouterr().err
    assert "compiled to no instruction" in err and "nearest lines with code" in err and "Traceback" not in err


def test_cli_without_nvcc_says_so(monkeypatch, capsys):
    from annotate.harness import toolchain

    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOME", toolchain.Path("/nonexistent-cuda"))
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    assert main(["sass", "rmsnorm"]) == 1
    err = capsys.readouterr().err
    assert "needs nvcc" in err and "--committed" in err and len(err.strip().splitlines()) == 2


def _config():
    from annotate.config import Config

    return Config.load()


# ---- nvcc: the real route on a tiny fixture kernel -----------------------------------------------
HELPER = r"""#pragma once
namespace toy {
__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) {
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  }
  return x;
}
__device__ __forceinline__ void copy_async(float4* smem, const float4* gmem) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
               ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void wait_all() { asm volatile("cp.async.wait_all;\n" ::); }
// named like FlashInfer's cp.async helpers, but a plain copy through registers
__device__ __forceinline__ void load_128b_async(float4* smem, const float4* gmem) { *smem = *gmem; }

template <int N>
__global__ void ToyKernel(float* out, const float4* in) {
  __shared__ float4 tile[2 * N];
  copy_async(tile + threadIdx.x, in + threadIdx.x);
  commit();
  wait_all();
  load_128b_async(tile + N + threadIdx.x, in + N + threadIdx.x);
  __syncthreads();
  float4 v = tile[(threadIdx.x + 1) % (2 * N)];
  float s = warp_sum(v.x + v.y + v.z + v.w);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
}  // namespace toy
"""

LAUNCHER = r"""#include <toy/helper.cuh>
template __global__ void toy::ToyKernel<64>(float*, const float4*);
__global__ void not_in_the_spec(float* o) { o[threadIdx.x] = 1.f; }
"""


def toy_upstream(tmp_path, cfg_factory):
    """A spec whose `flashinfer:include` is a fixture checkout holding toy/helper.cuh."""
    from annotate.config import REPO_ROOT, Config
    from annotate.upstreams import checkout_root, get_upstream

    spec = {"name": "toy", "upstream": "flashinfer", "symbols": ["toy::ToyKernel"], "sources": ["launcher.cu"],
            "binding": "binding.cpp", "includes": ["flashinfer:include"], "dtypes": ["float16"],
            "tolerance": {"float16": {"rel_l2": 1e-3, "max_abs": 1e-2}}, "check": [{"name": "a"}]}
    root = tmp_path / "vendor_kernels"
    folder = make_kernel(root, spec)
    (folder / "launcher.cu").write_text(LAUNCHER)
    (root / "upstreams.yaml").write_text((REPO_ROOT / "vendor_kernels" / "upstreams.yaml").read_text())
    cfg = dataclasses.replace(Config.load(environ={"PATH": os.environ.get("PATH", "")}, cache_dir=tmp_path / "cache"),
                              repo_root=root.parent)
    checkout = checkout_root(cfg, get_upstream(cfg, "flashinfer"))
    (checkout / "include" / "toy").mkdir(parents=True)
    (checkout / "include" / "toy" / "helper.cuh").write_text(HELPER)
    return cfg, load_spec(cfg, "toy"), checkout


def need_tools():
    from annotate.harness import toolchain

    try:
        tc = toolchain.find_toolchain(os.environ)
    except AnnotateError:
        pytest.skip("nvcc not found")
    try:
        return toolchain.find_binary_tools(tc, os.environ)
    except AnnotateError as exc:
        if os.environ.get("CI"):
            pytest.fail(exc.message)
        pytest.skip(exc.message)


def line_of(text: str, needle: str, nth: int = 0) -> int:
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    return hits[nth]


@pytest.mark.nvcc
def test_fixture_kernel_lines_through_inlined_helpers(tmp_path):
    need_tools()
    cfg, spec, _ = toy_upstream(tmp_path, None)
    rec, path = sass.sass_record(cfg, spec, "90")
    assert path.name == sass.RECORD_FILE and [f.symbol for f in rec.functions] == ["toy::ToyKernel"]
    fn = rec.functions[0]
    helper = "flashinfer:include/toy/helper.cuh"
    assert [f.path for f in fn.files] == [helper]  # only upstream files, paths relative to the checkout
    shfl = fn.line(helper, line_of(HELPER, "__shfl_xor_sync"))
    assert sum(n for op, n in shfl.counts.items() if op.startswith("SHFL.BFLY")) == 5  # unrolled x5
    call = fn.line(helper, line_of(HELPER, "float s = warp_sum"))
    assert call.via.get("SHFL.BFLY", 0) == 5  # the call line sees its inlined callee's shuffles
    asm_last = line_of(HELPER, '::"r"(s), "l"(gmem)')  # inline asm: the statement's last line
    assert any(op.startswith("LDGSTS") for op in fn.line(helper, asm_last).counts)
    assert any(op.startswith("LDGSTS") for op in fn.line(helper, line_of(HELPER, "copy_async(tile")).via)
    assert any(op.startswith("BAR.SYNC") for op in fn.line(helper, line_of(HELPER, "__syncthreads")).counts)
    assert fn.smem_static == 2 * 64 * 16 and fn.registers and fn.spill_stores == 0
    again, _ = sass.sass_record(cfg, spec, "90")  # from the cache, same record
    assert again == rec
    check = sass.lineinfo_check(cfg, spec, "90")
    assert check.ok and check.functions == 2  # ToyKernel and not_in_the_spec, both unchanged


# ---- CI: the committed catalog records regenerate ----------------------------------------------------
@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["rmsnorm", "decode_kernel"])
def test_committed_records_regenerate(pinned, real_config, kernel):
    need_tools()
    pinned("flashinfer")
    spec = load_spec(real_config, kernel)
    fresh, _ = sass.sass_record(real_config, spec, "90")
    fresh = sass.compact(fresh, spec.sass_featured)
    committed = sass.load_sass_record(sass.committed_path(real_config, kernel, "90"))
    assert [f.mangled for f in fresh.functions] == [f.mangled for f in committed.functions]
    for a, b in zip(fresh.functions, committed.functions):
        assert (a.instructions, a.mix, a.registers, a.spill_stores) == (b.instructions, b.mix, b.registers, b.spill_stores), a.name
        counts = lambda fn: {(f.path, ln.line): (ln.counts, ln.via) for f in fn.files for ln in f.lines}
        assert counts(a) == counts(b), a.name

"""Build plumbing without a GPU: the cache key, flags, staging, ptxas parsing, compile errors."""

from __future__ import annotations

import dataclasses

import pytest

from annotate.config import REPO_ROOT, Config
from annotate.errors import AnnotateError
from annotate.harness import build
from annotate.harness.spec import load_spec

from harness_support import NVCC_ERROR_LOG, PTXAS_LOG, make_kernel

BASE = dict(pins={"flashinfer": "a" * 40}, files={"launcher.cu": "int x;", "binding.cpp": "int y;"},
            flags=["-O3", "-std=c++17"], arch="90", torch_version="2.11.0+cu130", cuda_version="13.0")


def _key(**changes):
    args = {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
            for k, v in BASE.items()}
    args.update(changes)
    return build.build_key(**args)


def test_key_is_stable_and_hex():
    assert _key() == _key()
    assert len(_key()) == 64 and int(_key(), 16) >= 0


@pytest.mark.parametrize("change", [
    dict(pins={"flashinfer": "b" * 40}),
    dict(pins={"flashinfer": "a" * 40, "flashinfer/cccl": "c" * 40}),
    dict(files={"launcher.cu": "int x; ", "binding.cpp": "int y;"}),
    dict(files={"launcher2.cu": "int x;", "binding.cpp": "int y;"}),
    dict(files={"launcher.cu": "int x;", "binding.cpp": "int y;", "instantiation.h": "#define A 1"}),
    dict(flags=["-O3", "-std=c++20"]),
    dict(flags=["-std=c++17", "-O3"]),
    dict(flags=["-O3", "-std=c++17", "-DX"]),
    dict(arch="90a"),
    dict(torch_version="2.14.1"),
    dict(cuda_version="13.1"),
    dict(route="nvcc"),
])
def test_every_input_changes_the_key(change):
    assert _key(**change) != _key()


def test_key_fields_cannot_run_together():
    # The same characters split differently between fields must not collide.
    a = _key(flags=["-O3", "-std=c++17"])
    b = _key(flags=["-O3-std=c++17"])
    assert a != b


def test_flags_undo_torch_half_macros_and_name_the_arch(tmp_config):
    spec = load_spec(tmp_config, "decode_kernel")
    flags = build.nvcc_flags(spec, "90")
    for f in ("-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
              "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__"):
        assert f in flags
    assert "-gencode=arch=compute_90,code=sm_90" in flags
    assert "-std=c++17" in flags
    fa = build.nvcc_flags(load_spec(tmp_config, "flash_fwd"), "80")
    assert "-std=c++20" in fa and "-DFLASHATTENTION_DISABLE_DROPOUT" in fa


def test_instantiation_header_and_staging(tmp_path, tmp_config):
    spec = load_spec(tmp_config, "decode_kernel")
    text = build.instantiation_header(spec)
    assert "#define ANNOTATE_DTYPE half" in text and "#define ANNOTATE_HEAD_DIM 128" in text
    staged = build.stage_sources(spec, tmp_path / "src")
    assert set(staged) >= {"launcher.cu", "binding.cpp", "launcher.h", "instantiation.h",
                           "annotate_launcher.h", "annotate_binding.h"}
    mtime = (tmp_path / "src" / "launcher.cu").stat().st_mtime_ns
    build.stage_sources(spec, tmp_path / "src")  # unchanged content: not rewritten
    assert (tmp_path / "src" / "launcher.cu").stat().st_mtime_ns == mtime


def test_spec_pins_include_submodules(tmp_config):
    pins = build.spec_pins(tmp_config, load_spec(tmp_config, "flash_fwd"))
    assert pins["flash-attention"].startswith("060c9188")
    assert pins["flash-attention/cutlass"].startswith("dc481792")


def test_build_dir_comes_from_config(tmp_config):
    assert tmp_config.build_dir("decode_kernel", "ab" * 32) == \
        tmp_config.builds_dir() / ("decode_kernel-" + "ab" * 8)


def test_missing_include_folder_says_fetch(tmp_config):
    spec = load_spec(tmp_config, "decode_kernel")
    with pytest.raises(AnnotateError, match="is missing") as exc:
        build.include_dirs(tmp_config, spec)
    assert "annotate fetch flashinfer" in exc.value.hint


def test_parse_ptxas_entries_only():
    ks = build.parse_ptxas(PTXAS_LOG, source="launcher.cu")
    assert [k.mangled for k in ks] == [
        "_ZN10flashinfer16MergeStateKernelILj8E6__halfS1_EEvPT0_PfS3_S4_PT1_S4_jj", "_Z10big_kernelPf"]
    a, b = ks
    assert (a.registers, a.smem_static, a.stack, a.spill_stores, a.spill_loads) == (32, 0, 0, 0, 0)
    assert (b.registers, b.barriers, b.smem_static, b.stack, b.spill_stores, b.spill_loads) == \
        (255, 1, 16384, 176, 260, 300)
    assert a.arch == "sm_90" and a.cmem == 380
    assert "MergeStateKernel" in a.name
    if a.name != a.mangled:  # demangled when c++filt is present
        assert a.short_name().startswith("flashinfer::MergeStateKernel<8u")


def test_first_errors_and_compile_error_message(tmp_path, tmp_config):
    errs = build.first_errors(NVCC_ERROR_LOG)
    assert len(errs) == 2
    assert errs[0].startswith("/cache/checkouts/flashinfer-a0a6b019b9b2/include/flashinfer/fastdiv.cuh(39): error:")
    assert "cuda::fast_mod_div" in errs[0]
    spec = load_spec(tmp_config, "decode_kernel")
    err = build.compile_error(spec, NVCC_ERROR_LOG, tmp_path / "src" / "launcher.cu", tmp_path / "build.log")
    assert "compiling decode_kernel failed" in err.message and "qualified name is not allowed" in err.message
    assert str(tmp_path / "src" / "launcher.cu") in err.hint and "build.log" in err.hint


def test_system_headers_missing_is_an_actionable_error(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "_nvidia_pip_include_dirs", lambda: [])
    fake_nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    (tmp_path / "cuda" / "include").mkdir(parents=True)
    (tmp_path / "cuda" / "include" / "cuda_runtime.h").write_text("")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    with pytest.raises(AnnotateError, match="cublasLt.h") as exc:
        build.system_header_dirs(("cublasLt.h",), fake_nvcc)
    assert "nvidia-cublas" in exc.value.hint
    (tmp_path / "cuda" / "include" / "cublasLt.h").write_text("")
    assert build.system_header_dirs(("cublasLt.h",), fake_nvcc) == []  # the toolkit has it
    pip_inc = tmp_path / "site" / "nvidia" / "cu13" / "include"
    pip_inc.mkdir(parents=True)
    (pip_inc / "curand_kernel.h").write_text("")
    monkeypatch.setattr(build, "_nvidia_pip_include_dirs", lambda: [pip_inc])
    assert build.system_header_dirs(("cublasLt.h", "curand_kernel.h"), fake_nvcc) == [pip_inc]


def test_torch_headers_without_cuda_are_named(monkeypatch, tmp_path):
    import importlib.util

    fake = tmp_path / "torch"
    (fake / "include" / "c10").mkdir(parents=True)

    class Spec:
        submodule_search_locations = [str(fake)]

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: Spec() if name == "torch" else None)
    with pytest.raises(AnnotateError, match="no CUDA headers") as exc:
        build.torch_include_dirs(require_cuda=True)
    assert "torch==2.14.1" in exc.value.hint
    (fake / "include" / "c10" / "cuda" / "impl").mkdir(parents=True)
    (fake / "include" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").write_text("")
    assert build.torch_include_dirs(require_cuda=True)[0] == fake / "include"


def test_cached_build_dir_is_keyed_per_kernel(tmp_path):
    root = tmp_path / "vendor_kernels"
    make_kernel(root)
    cfg = dataclasses.replace(Config.load(environ={}, cache_dir=tmp_path / "c"), repo_root=root.parent)
    spec = load_spec(cfg, "toy")
    files = build.staged_files(spec)
    assert "instantiation.h" in files and "annotate_launcher.h" in files


# ---- nvcc on a toy harness (no pins needed): the compile-only route end to end ---------------
TOY_KERNEL = r"""
#include "instantiation.h"
#include "annotate_launcher.h"
template <int N>
__global__ void toy_kernel(float* out) {
  __shared__ float tile[N];
  tile[threadIdx.x % N] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % N] * ANNOTATE_SCALE;
}
template __global__ void toy_kernel<ANNOTATE_N>(float*);
"""


def _toy(tmp_path, source: str):
    spec = {"name": "toy", "upstream": "flashinfer", "sources": ["launcher.cu"], "binding": "binding.cpp",
            "instantiate": {"N": 64, "SCALE": "2.0f"}, "dtypes": ["float16"],
            "tolerance": {"float16": {"rel_l2": 1e-3, "max_abs": 1e-2}}, "check": [{"name": "a"}]}
    root = tmp_path / "vendor_kernels"
    folder = make_kernel(root, spec)
    (folder / "launcher.cu").write_text(source)
    (root / "upstreams.yaml").write_text((REPO_ROOT / "vendor_kernels" / "upstreams.yaml").read_text())
    cfg = dataclasses.replace(Config.load(environ={}, cache_dir=tmp_path / "cache"), repo_root=root.parent)
    return cfg, load_spec(cfg, "toy")


@pytest.mark.nvcc
def test_compile_only_reports_real_ptxas_resources(tmp_path):
    if build.find_nvcc() is None:
        pytest.skip("nvcc not found")
    cfg, spec = _toy(tmp_path, TOY_KERNEL)
    res = build.compile_only(cfg, spec, arch="90")
    assert len(res.kernels) == 1
    k = res.kernels[0]
    assert "toy_kernel<64>" in k.name or "toy_kernel" in k.mangled
    assert k.registers > 0 and k.smem_static == 64 * 4 and k.stack == 0 and k.spill_stores == 0
    assert k.arch == "sm_90"
    # the build directory is keyed: same inputs -> same folder, another arch -> another
    again = build.compile_only(cfg, spec, arch="90")
    other = build.compile_only(cfg, spec, arch="80")
    assert again.directory == res.directory != other.directory


@pytest.mark.nvcc
def test_compile_failure_shows_first_errors_and_the_generated_file(tmp_path):
    if build.find_nvcc() is None:
        pytest.skip("nvcc not found")
    cfg, spec = _toy(tmp_path, TOY_KERNEL.replace("__syncthreads();", "__syncthreads()  // missing ;\n  int = ;"))
    with pytest.raises(AnnotateError) as exc:
        build.compile_only(cfg, spec, arch="90")
    err = exc.value
    assert "compiling toy failed" in err.message and "error" in err.message
    assert "launcher.cu" in err.message  # nvcc names the staged file and line
    assert "generated sources:" in err.hint and str(cfg.builds_dir()) in err.hint


def test_records_store_the_build_directory_relative_to_the_cache(tmp_config):
    # records are committed and shown on the site: no machine's cache path in them
    from annotate.harness.runner import _portable_build

    inside = {"directory": str(tmp_config.builds_dir() / "rmsnorm-0123456789abcdef"), "cached": True}
    assert _portable_build(tmp_config, inside)["directory"] == "$ANNOTATE_CACHE_DIR/builds/rmsnorm-0123456789abcdef"
    outside = {"directory": "/elsewhere/build", "cached": False}
    assert _portable_build(tmp_config, outside) == outside

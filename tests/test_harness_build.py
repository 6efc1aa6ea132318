"""Build plumbing without a GPU: the cache key, flags, staging, toolchain discovery, ptxas
parsing, compile errors, the JIT build's plan, and the nvcc-only route end to end on a toy."""

from __future__ import annotations

import dataclasses
import os

import pytest

from annotate.config import REPO_ROOT, Config
from annotate.errors import AnnotateError
from annotate.harness import jit, nvcc, staging, toolchain
from annotate.harness.ptxas import parse_ptxas
from annotate.harness.spec import load_spec

from harness_support import NVCC_ERROR_LOG, PTXAS_LOG, make_kernel

BASE = dict(pins={"flashinfer": "a" * 40}, files={"launcher.cu": "int x;", "binding.cpp": "int y;"},
            flags=["-O3", "-std=c++17"], arch="90", torch_version="2.11.0+cu130", cuda_version="13.0")


def _key(**changes):
    args = {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
            for k, v in BASE.items()}
    args.update(changes)
    return staging.build_key(**args)


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
    flags = staging.nvcc_flags(spec, "90")
    for f in ("-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
              "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__"):
        assert f in flags
    assert "-gencode=arch=compute_90,code=sm_90" in flags
    assert "-std=c++17" in flags
    fa = staging.nvcc_flags(load_spec(tmp_config, "flash_fwd"), "80")
    assert "-std=c++20" in fa and "-DFLASHATTENTION_DISABLE_DROPOUT" in fa


def test_instantiation_header_and_staging(tmp_path, tmp_config):
    spec = load_spec(tmp_config, "merge_state")
    text = staging.instantiation_header(spec)
    assert "#define ANNOTATE_DTYPE half" in text
    staged = staging.stage_sources(spec, tmp_path / "src")
    assert set(staged) >= {"launcher.cu", "binding.cpp", "launcher.h", "instantiation.h",
                           "annotate_launcher.h", "annotate_binding.h"}
    mtime = (tmp_path / "src" / "launcher.cu").stat().st_mtime_ns
    staging.stage_sources(spec, tmp_path / "src")  # unchanged content: not rewritten
    assert (tmp_path / "src" / "launcher.cu").stat().st_mtime_ns == mtime


def test_spec_pins_include_submodules(tmp_config):
    pins = staging.spec_pins(tmp_config, load_spec(tmp_config, "flash_fwd"))
    assert pins["flash-attention"].startswith("060c9188")
    assert pins["flash-attention/cutlass"].startswith("dc481792")


def test_build_dir_comes_from_config(tmp_config):
    assert tmp_config.build_dir("decode_kernel", "ab" * 32) == \
        tmp_config.builds_dir() / ("decode_kernel-" + "ab" * 8)


def test_missing_include_folder_says_fetch(tmp_config):
    spec = load_spec(tmp_config, "decode_kernel")
    with pytest.raises(AnnotateError, match="is missing") as exc:
        staging.include_dirs(tmp_config, spec)
    assert "annotate fetch flashinfer" in exc.value.hint


def test_parse_ptxas_entries_only():
    ks = parse_ptxas(PTXAS_LOG, source="launcher.cu", env=os.environ)
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
    errs = staging.first_errors(NVCC_ERROR_LOG)
    assert len(errs) == 2
    assert errs[0].startswith("/cache/checkouts/flashinfer-a0a6b019b9b2/include/flashinfer/fastdiv.cuh(39): error:")
    assert "cuda::fast_mod_div" in errs[0]
    spec = load_spec(tmp_config, "decode_kernel")
    err = staging.compile_error(spec.name, NVCC_ERROR_LOG, tmp_path / "src" / "launcher.cu", tmp_path / "build.log")
    assert "compiling decode_kernel failed" in err.message and "qualified name is not allowed" in err.message
    assert str(tmp_path / "src" / "launcher.cu") in err.hint and "build.log" in err.hint


def _fake_toolkit(tmp_path):
    home = tmp_path / "cuda"
    (home / "include").mkdir(parents=True)
    (home / "include" / "cuda_runtime.h").write_text("")
    (home / "bin").mkdir()
    (home / "bin" / "nvcc").write_text("")
    return home


def test_system_headers_missing_is_an_actionable_error(tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "_nvidia_pip_dirs", lambda sub: [])
    home = _fake_toolkit(tmp_path)
    tc = toolchain.find_toolchain({"CUDA_HOME": str(home)})
    assert tc.nvcc == home / "bin" / "nvcc" and tc.home == home
    with pytest.raises(AnnotateError, match="cublasLt.h") as exc:
        toolchain.system_header_dirs(("cublasLt.h",), tc)
    assert "nvidia-cublas" in exc.value.hint
    (home / "include" / "cublasLt.h").write_text("")
    assert toolchain.system_header_dirs(("cublasLt.h",), tc) == []  # the toolkit has it
    pip_inc = tmp_path / "site" / "nvidia" / "cu13" / "include"
    pip_inc.mkdir(parents=True)
    (pip_inc / "curand_kernel.h").write_text("")
    monkeypatch.setattr(toolchain, "_nvidia_pip_dirs", lambda sub: [pip_inc] if sub == "include" else [])
    assert toolchain.system_header_dirs(("cublasLt.h", "curand_kernel.h"), tc) == [pip_inc]


def test_toolchain_comes_from_the_given_environment_only(tmp_path, monkeypatch):
    """A wrapper nvcc on PATH (outside the toolkit) still finds the toolkit root; the build
    environment carries it as CUDA_HOME; nothing is read from or written to os.environ."""
    home = _fake_toolkit(tmp_path)
    wrapper = tmp_path / "wrap" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text("#!/bin/sh\n")
    wrapper.chmod(0o755)
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOME", home)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "not-this-one"))
    before = dict(os.environ)
    tc = toolchain.find_toolchain({"PATH": str(wrapper.parent)})
    assert tc.nvcc == wrapper and tc.home == home
    env = tc.env({"PATH": "/bin", "MAX_JOBS": "3"})
    assert env == {"PATH": "/bin", "MAX_JOBS": "3", "CUDA_HOME": str(home)}
    assert tc.env({"CUDA_HOME": "/mine"})["CUDA_HOME"] == "/mine"  # the user's choice wins
    assert dict(os.environ) == before
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOME", tmp_path / "nowhere")
    with pytest.raises(AnnotateError, match="nvcc not found"):
        toolchain.find_toolchain({"PATH": str(tmp_path / "empty")})


def test_binary_tools_toolkit_then_pip_then_path(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path)
    tc = toolchain.Toolchain(nvcc=home / "bin" / "nvcc", home=home)
    pip_bin = tmp_path / "site" / "nvidia" / "cu13" / "bin"
    pip_bin.mkdir(parents=True)
    monkeypatch.setattr(toolchain, "_nvidia_pip_dirs", lambda sub: [pip_bin] if sub == "bin" else [])
    with pytest.raises(AnnotateError, match="cuobjdump and nvdisasm not found") as exc:
        toolchain.find_binary_tools(tc, {"PATH": str(tmp_path / "empty")})
    assert "nvidia-cuda-cuobjdump" in exc.value.hint
    for d, name in ((pip_bin, "cuobjdump"), (pip_bin, "nvdisasm"), (home / "bin", "nvdisasm")):
        (d / name).write_text("")
    tools = toolchain.find_binary_tools(tc, {})
    assert tools == toolchain.BinaryTools(cuobjdump=pip_bin / "cuobjdump", nvdisasm=home / "bin" / "nvdisasm")


def test_torch_headers_without_cuda_are_named(monkeypatch, tmp_path):
    import importlib.util

    fake = tmp_path / "torch"
    (fake / "include" / "c10").mkdir(parents=True)

    class Spec:
        submodule_search_locations = [str(fake)]

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: Spec() if name == "torch" else None)
    with pytest.raises(AnnotateError, match="no CUDA headers") as exc:
        toolchain.torch_include_dirs(require_cuda=True)
    assert "torch==2.14.1" in exc.value.hint
    (fake / "include" / "c10" / "cuda" / "impl").mkdir(parents=True)
    (fake / "include" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").write_text("")
    assert toolchain.torch_include_dirs(require_cuda=True)[0] == fake / "include"


def test_cached_build_dir_is_keyed_per_kernel(tmp_path):
    root = tmp_path / "vendor_kernels"
    make_kernel(root)
    cfg = dataclasses.replace(Config.load(environ={}, cache_dir=tmp_path / "c"), repo_root=root.parent)
    spec = load_spec(cfg, "toy")
    files = staging.staged_files(spec)
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


def _toy(tmp_path, source: str, environ: dict | None = None):
    spec = {"name": "toy", "upstream": "flashinfer", "sources": ["launcher.cu"], "binding": "binding.cpp",
            "instantiate": {"N": 64, "SCALE": "2.0f"}, "dtypes": ["float16"],
            "tolerance": {"float16": {"rel_l2": 1e-3, "max_abs": 1e-2}}, "check": [{"name": "a"}]}
    root = tmp_path / "vendor_kernels"
    folder = make_kernel(root, spec)
    (folder / "launcher.cu").write_text(source)
    (root / "upstreams.yaml").write_text((REPO_ROOT / "vendor_kernels" / "upstreams.yaml").read_text())
    env = {"PATH": os.environ.get("PATH", "")} if environ is None else environ
    cfg = dataclasses.replace(Config.load(environ=env, cache_dir=tmp_path / "cache"), repo_root=root.parent)
    return cfg, load_spec(cfg, "toy")


def _need_nvcc():
    try:
        return toolchain.find_toolchain(os.environ)
    except AnnotateError:
        pytest.skip("nvcc not found")


def _need_binary_tools(tc):
    try:
        return toolchain.find_binary_tools(tc, os.environ)
    except AnnotateError as exc:
        if os.environ.get("CI"):
            pytest.fail(exc.message)  # make test installs them (pyproject extra `sass`)
        pytest.skip(exc.message)


@pytest.mark.nvcc
def test_compile_only_reports_real_ptxas_resources(tmp_path):
    _need_nvcc()
    cfg, spec = _toy(tmp_path, TOY_KERNEL)
    res = nvcc.compile_only(cfg, spec, arch="90")
    assert len(res.kernels) == 1
    k = res.kernels[0]
    assert "toy_kernel<64>" in k.name or "toy_kernel" in k.mangled
    assert k.registers > 0 and k.smem_static == 64 * 4 and k.stack == 0 and k.spill_stores == 0
    assert k.arch == "sm_90"
    assert res.outputs["launcher.cu"].endswith("launcher.o") and os.path.isfile(res.outputs["launcher.cu"])
    # the build directory is keyed: same inputs -> same folder, another arch or flag -> another
    again = nvcc.compile_only(cfg, spec, arch="90")
    other = nvcc.compile_only(cfg, spec, arch="80")
    lines = nvcc.compile_only(cfg, spec, arch="90", extra_flags=["-lineinfo"])
    assert again.directory == res.directory
    assert len({res.directory, other.directory, lines.directory}) == 3
    assert [(x.registers, x.smem_static) for x in lines.kernels] == [(k.registers, k.smem_static)]


@pytest.mark.nvcc
def test_cubin_with_lines_disassembles_to_source_lines(tmp_path):
    """The route a per-line SASS view builds on: a -lineinfo cubin, nvdisasm with inlined-at
    frames, and an object's SASS through cuobjdump; the same kernel in both."""
    from annotate.harness.disasm import disassemble

    tools = _need_binary_tools(_need_nvcc())
    cfg, spec = _toy(tmp_path, TOY_KERNEL)
    cub = nvcc.compile_only(cfg, spec, arch="90", extra_flags=["-lineinfo"], output="cubin")
    cubin = cub.outputs["launcher.cu"]
    assert cubin.endswith("launcher.cubin")
    text = disassemble(cubin, tools, line_info=True)
    body = TOY_KERNEL.splitlines()
    sync_line = next(i for i, ln in enumerate(body, 1) if "__syncthreads" in ln)
    assert f'launcher.cu", line {sync_line}' in text  # the barrier's own source line
    assert "BAR.SYNC" in text and "STS" in text and "LDS" in text
    obj = nvcc.compile_only(cfg, spec, arch="90").outputs["launcher.cu"]
    sass = disassemble(obj, tools)
    assert "Function : _Z10toy_kernelILi64EEvPf" in sass and "BAR.SYNC" in sass
    with pytest.raises(AnnotateError, match="from a cubin"):
        disassemble(obj, tools, line_info=True)


@pytest.mark.nvcc
def test_nvcc_compile_any_folder_of_sources(tmp_path):
    """No spec needed: sources, flags and include folders in, one object each out; a failing
    source is returned with its log, not raised."""
    tc = _need_nvcc()
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "k.h").write_text("#define WIDTH 32\n")
    (tmp_path / "a.cu").write_text('#include "k.h"\n__global__ void a(float* o) { o[threadIdx.x % WIDTH] = 1.f; }\n')
    (tmp_path / "b.cu").write_text("__global__ void b(float* o) { o[0] = undefined_name; }\n")
    units = nvcc.nvcc_compile(tc, [tmp_path / "a.cu", tmp_path / "b.cu"], tmp_path / "out",
                              flags=staging.gencode_flags("80"), includes=[tmp_path / "inc"],
                              jobs=2, env=os.environ)
    a, b = units
    assert a.returncode == 0 and a.output == tmp_path / "out" / "a.o" and a.output.is_file()
    assert [k.arch for k in parse_ptxas(a.log)] == ["sm_80"]
    assert b.returncode != 0 and "undefined_name" in b.log


@pytest.mark.nvcc
def test_compile_failure_shows_first_errors_and_the_generated_file(tmp_path):
    _need_nvcc()
    cfg, spec = _toy(tmp_path, TOY_KERNEL.replace("__syncthreads();", "__syncthreads()  // missing ;\n  int = ;"))
    with pytest.raises(AnnotateError) as exc:
        nvcc.compile_only(cfg, spec, arch="90")
    err = exc.value
    assert "compiling toy failed" in err.message and "error" in err.message
    assert "launcher.cu" in err.message  # nvcc names the staged file and line
    assert "generated sources:" in err.hint and str(cfg.builds_dir()) in err.hint


# ---- the JIT route's plumbing (the compile itself runs on the GPU machines) ---------------------
def test_jit_plan_is_keyed_like_the_build(tmp_path):
    cfg, spec = _toy(tmp_path, TOY_KERNEL)
    plan = jit.plan_build(cfg, spec, "90", torch_version="2.11.0+cu130", cuda_version="13.0")
    assert plan.flags == (*staging.nvcc_flags(spec, "90"), *staging.LINEINFO_FLAGS)  # line tables for ncu
    assert plan.directory == cfg.build_dir("toy", plan.key) and plan.name == f"annotate_toy_{plan.key[:12]}"
    assert plan.so == plan.directory / f"{plan.name}.so"
    for other in (jit.plan_build(cfg, spec, "80", torch_version="2.11.0+cu130", cuda_version="13.0"),
                  jit.plan_build(cfg, spec, "90", torch_version="2.14.1", cuda_version="13.0")):
        assert other.key != plan.key and other.directory != plan.directory


def test_jit_job_passes_its_environment_explicitly(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path)
    cfg, spec = _toy(tmp_path, TOY_KERNEL, environ={"PATH": "/bin", "MAX_JOBS": "3"})
    tc = toolchain.Toolchain(nvcc=home / "bin" / "nvcc", home=home)
    plan = jit.plan_build(cfg, spec, "90", torch_version="t", cuda_version="c")
    before = dict(os.environ)
    job, env = jit.build_job(cfg, spec, plan, tc)
    assert env == {"PATH": "/bin", "MAX_JOBS": "3", "CUDA_HOME": str(home)} and dict(os.environ) == before
    src = plan.directory / "src"
    assert job["sources"] == [str(src / "launcher.cu"), str(src / "binding.cpp")]
    assert job["extra_cuda_cflags"] == list(plan.flags) and job["extra_include_paths"][0] == str(src)
    assert job["build_directory"] == str(plan.directory) and job["name"] == plan.name
    assert (src / "instantiation.h").is_file()
    bad, spec = _toy(tmp_path, TOY_KERNEL, environ={"MAX_JOBS": "many"})
    with pytest.raises(AnnotateError, match="MAX_JOBS"):
        jit.build_job(bad, spec, plan, tc)


CHILD_OK = ("import json, os, sys; job = json.load(sys.stdin); "
            "print('building', job['name'], 'with CUDA_HOME', os.environ['CUDA_HOME']); "
            "open(os.path.join(job['build_directory'], job['name'] + '.so'), 'w').close()")
CHILD_FAILS = ("import sys; sys.stdin.read(); "
               "print('/x/launcher.cu(7): error: identifier \"oops\" is undefined'); print('  oops;'); "
               "sys.exit('RuntimeError: Error building extension')")


def test_jit_compile_runs_a_child_and_reports_its_errors(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path)
    cfg, spec = _toy(tmp_path, TOY_KERNEL)
    tc = toolchain.Toolchain(nvcc=home / "bin" / "nvcc", home=home)
    plan = jit.plan_build(cfg, spec, "90", torch_version="t", cuda_version="c")
    monkeypatch.setattr(jit, "_BUILD_CHILD", CHILD_OK)
    assert jit._compile(cfg, spec, plan, tc, verbose=False) >= 0
    assert plan.so.is_file()
    assert f"with CUDA_HOME {home}" in (plan.directory / jit.BUILD_LOG).read_text()
    stamp = jit._write_stamp(plan, 1.234, "t", "c")
    assert jit._read_stamp(plan) == stamp and stamp["compile_s"] == 1.23
    plan.so.unlink()
    assert jit._read_stamp(plan) is None  # a stamp without its .so is no build
    monkeypatch.setattr(jit, "_BUILD_CHILD", CHILD_FAILS)
    with pytest.raises(AnnotateError) as exc:
        jit._compile(cfg, spec, plan, tc, verbose=False)
    assert "compiling toy failed" in exc.value.message and 'identifier "oops" is undefined' in exc.value.message
    assert "build.log" in exc.value.hint


def test_records_store_the_build_directory_relative_to_the_cache(tmp_config):
    # records are committed and shown on the site: no machine's cache path in them
    from annotate.harness.record import BuildInfo
    from annotate.harness.runner import portable_build

    inside = BuildInfo(directory=str(tmp_config.builds_dir() / "rmsnorm-0123456789abcdef"), cached=True)
    assert portable_build(tmp_config, inside).directory == "$ANNOTATE_CACHE_DIR/builds/rmsnorm-0123456789abcdef"
    outside = BuildInfo(directory="/elsewhere/build", cached=False)
    assert portable_build(tmp_config, outside) == outside


# ---- the shared launcher header, compiled for real -------------------------------------------
DISPATCH_LAUNCHER = r"""
#include "annotate_launcher.h"
template <typename T>
__global__ void fill(T* out, T value) { out[threadIdx.x] = value; }

int fill_launcher(int dtype_code, void* out, void* stream) {
  return annotate_dispatch_dtype(dtype_code, [&](auto type) {
    using T = typename decltype(type)::type;
    fill<T><<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<T*>(out), T(1));
    return annotate_status(cudaSuccess);
  });
}
"""


@pytest.mark.nvcc
@pytest.mark.parametrize("instantiate, kernels", [
    ({"DTYPE_0": "float", "DTYPE_1": "double"}, {"_Z4fillIfEvPT_S0_", "_Z4fillIdEvPT_S0_"}),
    ({"DTYPE_0": "float"}, {"_Z4fillIfEvPT_S0_"}),
])
def test_dtype_dispatch_instantiates_exactly_the_spec_types(tmp_path, instantiate, kernels):
    """The common launcher header (vendor_kernels/common) as the catalog's launchers use it."""
    _need_nvcc()
    cfg, spec = _toy(tmp_path, DISPATCH_LAUNCHER)
    common = spec.folder.parent / "common" / "annotate_launcher.h"
    common.write_text((REPO_ROOT / "vendor_kernels" / "common" / "annotate_launcher.h").read_text())
    spec = dataclasses.replace(spec, instantiate=instantiate)
    res = nvcc.compile_only(cfg, spec, arch="80")
    assert {k.mangled for k in res.kernels} == kernels


# ---- the JIT route for real, without a GPU (a CUDA build of torch and ninja are enough) -------
@pytest.mark.nvcc
@pytest.mark.slow
def test_jit_build_then_cache_hit(pinned, real_config, tmp_path):
    """merge_state built by cpp_extension in its child process and imported here; the second
    call imports the same .so without compiling (the GPU machines run this route)."""
    import shutil

    torch = pytest.importorskip("torch")
    if not torch.version.cuda or shutil.which("ninja") is None:
        pytest.skip("needs a CUDA build of torch and ninja (the GPU machines have both)")
    _need_nvcc()
    pinned("flashinfer")
    cfg = dataclasses.replace(real_config, cache_dir=tmp_path / "cache")
    cfg = dataclasses.replace(cfg, environ={**real_config.environ, "MAX_JOBS": "2"})
    cfg.cache_dir.mkdir()
    os.symlink(real_config.checkouts_dir(), cfg.checkouts_dir())
    spec = load_spec(cfg, "merge_state")
    module, built = jit.ensure_built(cfg, spec, "90")
    assert not built.cached and built.compile_s > 0 and callable(module.merge_state)
    again, hit = jit.ensure_built(cfg, spec, "90")
    assert hit.cached and hit.key == built.key and hit.compile_s == built.compile_s
    assert (tmp_path / "cache" / "builds").is_dir() and jit.BUILD_LOG in os.listdir(built.directory)

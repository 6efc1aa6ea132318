"""Shared helpers for the harness tests: a throwaway kernel folder and sample compiler logs."""

from __future__ import annotations

from pathlib import Path

import yaml

MINIMAL_SPEC = {
    "name": "toy",
    "title": "a toy harness",
    "upstream": "flashinfer",
    "symbols": ["flashinfer::ToyKernel"],
    "sources": ["launcher.cu"],
    "binding": "binding.cpp",
    "headers": ["launcher.h"],
    "includes": ["flashinfer:include"],
    "instantiate": {"DTYPE": "half", "HEAD_DIM": 128},
    "dtypes": ["float16"],
    "tolerance": {"float16": {"rel_l2": 2e-3, "max_abs": 1e-2}},
    "check": [{"name": "small", "n": 3}, {"name": "edge", "n": 1}],
    "time": [{"name": "big", "n": 1 << 20}],
}


def make_kernel(root: Path, spec: dict | None = None, name: str = "toy") -> Path:
    """vendor_kernels-like folder `root/<name>` holding a spec and empty sources."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    data = dict(MINIMAL_SPEC if spec is None else spec)
    data.setdefault("name", name)
    (folder / "spec.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    for f in ("launcher.cu", "binding.cpp", "launcher.h"):
        (folder / f).write_text(f"// {f}\n", encoding="utf-8")
    common = root / "common"
    common.mkdir(exist_ok=True)
    (common / "annotate_launcher.h").write_text("// common\n", encoding="utf-8")
    return folder


# What `nvcc -Xptxas -v` prints (trimmed from a real sm_90 compile of the decode launcher).
PTXAS_LOG = """\
ptxas info    : 11 bytes gmem
ptxas info    : Compiling entry function '_ZN10flashinfer16MergeStateKernelILj8E6__halfS1_EEvPT0_PfS3_S4_PT1_S4_jj' for 'sm_90'
ptxas info    : Function properties for _ZN10flashinfer16MergeStateKernelILj8E6__halfS1_EEvPT0_PfS3_S4_PT1_S4_jj
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 380 bytes cmem[0]
ptxas info    : Compile time = 5.318 ms
ptxas info    : Function properties for _ZN4cute10some_helperEv
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z10big_kernelPf' for 'sm_90'
ptxas info    : Function properties for _Z10big_kernelPf
    176 bytes stack frame, 260 bytes spill stores, 300 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 176 bytes cumulative stack size, 16384 bytes smem, 400 bytes cmem[0]
"""

NVCC_ERROR_LOG = """\
[1/3] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile ... -c /cache/builds/x/src/launcher.cu -o launcher.cuda.o
FAILED: launcher.cuda.o
/cache/checkouts/flashinfer-a0a6b019b9b2/include/flashinfer/fastdiv.cuh(39): error: qualified name is not allowed
    cuda::fast_mod_div<uint32_t> impl_;
    ^

/cache/checkouts/flashinfer-a0a6b019b9b2/include/flashinfer/fastdiv.cuh(39): error: expected a ";"
    cuda::fast_mod_div<uint32_t> impl_;
                      ^

2 errors detected in the compilation of "/cache/builds/x/src/launcher.cu".
ninja: build stopped: subcommand failed.
"""

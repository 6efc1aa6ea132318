"""A tiny upstream and a harness over it, for the extraction tests: three headers (macros, a
vector type with specialisations and overloads, a kernel with its launcher), indexed by the
real indexer."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.index_support import write_tree

UPSTREAM = {
    "include/demo/macros.cuh": """
        #pragma once
        #define DEMO_INLINE __device__ __forceinline__
        #define DEMO_UNUSED_MACRO 42
        #define DEMO_SCALE(x) ((x) * kScale)
        #ifdef DEMO_FAST
        #define DEMO_BIAS 1.0f
        #else
        #define DEMO_BIAS 2.0f
        #endif
        constexpr float kScale = 2.0f;
        constexpr float kUnused = 3.0f;
        """,
    "include/demo/vec.cuh": """
        #pragma once
        #include <cuda_runtime.h>
        #include "macros.cuh"
        namespace demo {
        // the primary template: declared, never defined
        template <typename T, int N>
        struct vec;

        // any float vector: a loop
        template <int N>
        struct vec<float, N> {
          float data[N];
          DEMO_INLINE float sum() const {
            float s = 0.f;
        #pragma unroll
            for (int i = 0; i < N; ++i) s += data[i];
            return s;
          }
        };

        // one float: what the partial specialisation would also do, computed differently
        template <>
        struct vec<float, 1> {
          float data[1];
          DEMO_INLINE float sum() const;
        };

        DEMO_INLINE float vec<float, 1>::sum() const { return data[0] * 0.5f + data[0] * 0.5f + 1e-30f; }

        template <>
        struct vec<double, 1> {
          double data[1];
          DEMO_INLINE double sum() const { return data[0]; }
        };

        DEMO_INLINE float helper(float x) { return x + DEMO_BIAS; }
        DEMO_INLINE double helper(double x) { return x - DEMO_BIAS; }
        DEMO_INLINE float unused_fn(float x) { return x * kUnused; }
        }  // namespace demo
        """,
    "include/demo/kernel.cuh": """
        #pragma once
        #include "vec.cuh"
        namespace demo {
        template <int N>
        __global__ void Kernel(float* out) {
          vec<float, N> v;
        #pragma unroll
          for (int i = 0; i < N; ++i) v.data[i] = out[i];
          out[0] = DEMO_SCALE(helper(v.sum()));
        }

        template <int N>
        cudaError_t Launch(float* out, cudaStream_t stream) {
          Kernel<N><<<1, 1, 0, stream>>>(out);
          return cudaGetLastError();
        }

        __global__ void OtherKernel(float* out) { out[0] = unused_fn(1.f); }
        }  // namespace demo
        """,
}

LAUNCHER = """
    // The demo harness: runs demo::Kernel for one and for four floats.
    #include <demo/kernel.cuh>

    #include "launcher.h"

    int run(float* out, void* stream) {
      auto s = static_cast<cudaStream_t>(stream);
      return static_cast<int>(demo::Launch<1>(out, s)) + static_cast<int>(demo::Launch<4>(out, s));
    }
    """

SPEC = {
    "name": "demo_kernel",
    "upstream": "demo",
    "symbols": ["demo::Kernel"],
    "launchers": ["demo::Launch"],
    "sources": ["launcher.cu"],
    "binding": "binding.cpp",
    "headers": ["launcher.h"],
    "includes": ["demo:include"],
    "dtypes": ["float32"],
    "tolerance": {"float32": {"rel_l2": 1e-6, "max_abs": 1e-6}},
    "check": [{"name": "one", "n": 1}],
}


def make_demo(tmp_path: Path):
    """(upstream root, harness folder, index of the upstream)."""
    from annotate.index.api import index_directory

    root = write_tree(tmp_path / "demo", UPSTREAM)
    folder = write_tree(tmp_path / "harness", {"launcher.cu": LAUNCHER,
                                                "launcher.h": "#pragma once\nint run(float* out, void* stream);\n",
                                                "binding.cpp": "// no binding: nvcc tests only\n"})
    (folder / "spec.yaml").write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    return root, folder, index_directory("demo", root)


def demo_plan(tmp_path: Path, index: bool = True):
    from annotate.extract.api import Origin, plan_from
    from annotate.extract.closure import IncludeDir
    from annotate.harness.spec import load_spec_dir

    root, folder, idx = make_demo(tmp_path)
    spec = load_spec_dir(folder)
    dirs = [IncludeDir(root / "include", False, "demo:include")]
    return plan_from(spec, Origin("demo", "Demo", "v1", "c0ffee" * 6 + "beef"), root, dirs, idx if index else None)


def piece_named(plan, name: str, nth: int = 0):
    hits = [p for p in plan.closure.pieces if name in plan.reach.infos[p.index].declares
            or plan.reach.infos[p.index].specialises == name]
    return hits[nth]

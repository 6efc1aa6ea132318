"""Kernel harnesses: JIT-compile the pinned upstream kernels unmodified, verify them against a
float64 reference and time them (`annotate run`; see docs/harness.md).

Modules: spec (spec.yaml -> KernelSpec), build (cache key, torch cpp_extension build, nvcc
compile-only), verify (poison/compare), timing (CUDA events, peaks), refs (float64 math),
runner (one run -> record), results (tables), cli (`annotate run`).
"""

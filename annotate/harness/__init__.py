"""Kernel harnesses: JIT-compile the pinned upstream kernels unmodified, verify them against a
float64 reference and time them (`annotate run`; see docs/harness.md).

Modules, upstream first:
- spec: spec.yaml -> KernelSpec;  record: RunRecord, the typed run record (read, write);
- toolchain: nvcc, the toolkit, CUDA library and torch headers, cuobjdump / nvdisasm;
- staging: flags, staged sources, pins, the build key, compile errors (shared by both routes);
- jit: the torch cpp_extension build a GPU run imports;  nvcc: nvcc-only objects / cubins;
  ptxas: the per-kernel resource report;  disasm: SASS from an object or cubin;
- verify (poison/compare), timing (CUDA events, peaks), refs (float64 math);
- runner: one run (check, time, assemble) -> record;  results: terminal tables;  cli: `annotate run`.
"""

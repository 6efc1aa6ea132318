"""nvcc alone (no GPU, no torch unless a launcher includes torch's CUDA headers): compile
sources into objects or cubins and read ptxas's report of each kernel's registers, shared
memory, stack and spills.

Two layers:
- `nvcc_compile`: any list of .cu files with given flags and include folders -> one object
  (`-c`) or cubin (`-cubin`) per source, with ptxas's log. Nothing harness-specific.
- `compile_only`: a harness spec -> its staged sources compiled with exactly the flags and
  include folders of the harness build (annotate.harness.staging), plus any extra flags
  (`-lineinfo` ...), into a keyed folder of the cache. `annotate run --compile-only` is this.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from annotate.config import Config
from annotate.harness import staging
from annotate.harness.ptxas import KernelResources, parse_ptxas
from annotate.harness.spec import KernelSpec
from annotate.harness.toolchain import (
    Toolchain, find_toolchain, nvcc_version, system_header_dirs, torch_include_dirs,
    torch_version_without_import,
)

# output kind -> (nvcc's flag, file suffix)
OUTPUTS = {"object": ("-c", ".o"), "cubin": ("-cubin", ".cubin")}


@dataclass(frozen=True)
class CompiledUnit:
    """One source compiled (or not: returncode != 0, log says why)."""

    source: Path
    output: Path  # the object or cubin
    log: str  # nvcc's and ptxas's output (-Xptxas -v)
    seconds: float
    returncode: int


def nvcc_compile(toolchain: Toolchain, sources: Sequence[Path], out_dir: Path, *,
                 flags: Sequence[str], includes: Sequence[Path] = (),
                 system_includes: Sequence[Path] = (), output: str = "object", jobs: int = 1,
                 env: Mapping[str, str]) -> list[CompiledUnit]:
    """Compile each source into `out_dir/<stem>.o` (or `.cubin`), `jobs` at a time, with
    ptxas's resource report in each unit's log; nvcc runs in `env` (Config.environ: its PATH
    finds the host compiler). Failures are returned, not raised."""
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
    mode, suffix = OUTPUTS[output]
    out_dir.mkdir(parents=True, exist_ok=True)
    base = [str(toolchain.nvcc), mode, *flags, "-Xptxas", "-v"]
    base += [f"-I{p}" for p in includes] + [x for p in system_includes for x in ("-isystem", str(p))]
    run_env = toolchain.env(env)

    def one(src: Path) -> CompiledUnit:
        out = out_dir / (src.stem + suffix)
        t0 = time.perf_counter()
        res = subprocess.run([*base, str(src), "-o", str(out)], capture_output=True, text=True, env=run_env)
        return CompiledUnit(src, out, res.stdout + res.stderr, time.perf_counter() - t0, res.returncode)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, sources))


@dataclass(frozen=True)
class CompileOnlyResult:
    kernel: str
    arch: str
    nvcc: str
    seconds: float
    sources: dict  # source name -> seconds
    kernels: tuple[KernelResources, ...]
    directory: str
    outputs: dict  # source name -> the object or cubin it compiled to

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "arch": self.arch, "nvcc": self.nvcc, "seconds": self.seconds,
                "sources": dict(self.sources), "kernels": [k.to_json() for k in self.kernels],
                "directory": self.directory, "outputs": dict(self.outputs)}


@dataclass(frozen=True)
class CompileOnlyPlan:
    """One nvcc-only build, decided before anything is compiled: its flags, key and folder."""

    flags: tuple[str, ...]
    key: str
    directory: Path
    nvcc: str  # nvcc's version


def compile_only_plan(config: Config, spec: KernelSpec, arch: str = "90", *,
                      extra_flags: Sequence[str] = (), output: str = "object") -> CompileOnlyPlan:
    """The flags, key and folder `compile_only` uses (so a product kept in that folder, e.g. a
    SASS record, is found again without compiling)."""
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
    tc = find_toolchain(config.environ)
    flags = [*staging.nvcc_flags(spec, arch), *extra_flags]
    cuda = nvcc_version(tc.nvcc)
    tv = torch_version_without_import() or "none"
    key = staging.build_key(pins=staging.spec_pins(config, spec), files=staging.staged_files(spec, config),
                            flags=flags, arch=arch, torch_version=tv if spec.torch_headers else "n/a",
                            cuda_version=cuda, route="nvcc" if output == "object" else f"nvcc-{output}")
    return CompileOnlyPlan(tuple(flags), key, config.build_dir(spec.name, key), cuda)


def compile_only(config: Config, spec: KernelSpec, arch: str = "90", *,
                 extra_flags: Sequence[str] = (), output: str = "object",
                 jobs: int | None = None) -> CompileOnlyResult:
    """Compile a harness's launchers as its build does (same staged text, same flags, same
    include folders) plus `extra_flags`, into a folder keyed by all of them; the per-kernel
    resources from ptxas. Any folder with a spec.yaml works (annotate.harness.spec.load_spec_dir)."""
    tc = find_toolchain(config.environ)
    plan = compile_only_plan(config, spec, arch, extra_flags=extra_flags, output=output)
    flags, cuda, bdir = list(plan.flags), plan.nvcc, plan.directory
    staged = staging.stage_sources(spec, bdir / "src", config)
    sys_incs = system_header_dirs(spec.system_headers, tc)
    if spec.torch_headers:
        sys_incs += torch_include_dirs(require_cuda=True)
    t0 = time.perf_counter()
    jobs = jobs or config.max_jobs() or min(len(spec.sources), os.cpu_count() or 1)
    units = nvcc_compile(tc, [staged[Path(s).name] for s in spec.sources], bdir, flags=flags,
                         includes=[bdir / "src", *staging.include_dirs(config, spec)],
                         system_includes=sys_incs, output=output, jobs=jobs, env=config.environ)
    kernels: list[KernelResources] = []
    for src, unit in zip(spec.sources, units):
        log_file = bdir / (Path(src).stem + ".ptxas.log")
        staging.write_if_different(log_file, unit.log)
        if unit.returncode != 0:
            raise staging.compile_error(spec.name, unit.log, unit.source, log_file)
        kernels.extend(parse_ptxas(unit.log, source=src, env=config.environ))
    return CompileOnlyResult(
        kernel=spec.name, arch=arch, nvcc=cuda, seconds=time.perf_counter() - t0,
        sources={s: round(u.seconds, 2) for s, u in zip(spec.sources, units)},
        kernels=tuple(kernels), directory=str(bdir),
        outputs={s: str(u.output) for s, u in zip(spec.sources, units)})

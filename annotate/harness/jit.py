"""The JIT build a GPU run imports: the staged harness sources compiled by
torch.utils.cpp_extension with ninja into config.build_dir(kernel, key), then imported.

The key (annotate.harness.staging.build_key) hashes the pin commits, the harness sources, the
flags, the target arch and the torch/CUDA versions, so a change of any of them builds afresh
and nothing else does. A file lock plus a re-check lets concurrent runs share one build; a hit
imports the built .so directly (no ninja run, 0.01-0.04 s).

cpp_extension takes its settings from its process's environment (CUDA_HOME when it is first
imported, MAX_JOBS for ninja), so the compile runs in a child process given exactly that
environment (Config.environ plus the toolkit found here): nothing writes os.environ.

torch is imported lazily, inside the functions that need it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from annotate.config import Config
from annotate.harness import staging
from annotate.harness.record import BuildInfo
from annotate.harness.spec import KernelSpec
from annotate.harness.toolchain import Toolchain, find_toolchain, system_header_dirs

STAMP_FILE = "annotate-build.json"
BUILD_LOG = "build.log"
# The child needs nothing of ours: its arguments arrive as JSON on stdin.
_BUILD_CHILD = "import json, sys; from torch.utils.cpp_extension import load; load(**json.load(sys.stdin))"


@dataclass(frozen=True)
class JitPlan:
    """One build, decided before anything is compiled: its flags, key, module and folder."""

    kernel: str
    arch: str
    flags: tuple[str, ...]
    key: str
    name: str  # the Python module name (TORCH_EXTENSION_NAME)
    directory: Path

    @property
    def so(self) -> Path:
        return self.directory / f"{self.name}.so"

    @property
    def stamp(self) -> Path:
        return self.directory / STAMP_FILE


def module_name(spec: KernelSpec, key: str) -> str:
    return f"annotate_{spec.name}_{key[:12]}"


def plan_build(config: Config, spec: KernelSpec, arch: str, *, torch_version: str,
               cuda_version: str) -> JitPlan:
    flags = [*staging.nvcc_flags(spec, arch), *staging.LINEINFO_FLAGS]
    key = staging.build_key(pins=staging.spec_pins(config, spec), files=staging.staged_files(spec, config),
                            flags=flags, arch=arch, torch_version=torch_version,
                            cuda_version=cuda_version, route="torch")
    return JitPlan(spec.name, arch, tuple(flags), key, module_name(spec, key), config.build_dir(spec.name, key))


def build_job(config: Config, spec: KernelSpec, plan: JitPlan, toolchain: Toolchain,
              verbose: bool = False) -> tuple[dict, dict[str, str]]:
    """(cpp_extension.load's arguments, the child's environment) for one build; stages the
    sources into the build folder's src/."""
    src_dir = plan.directory / "src"
    staged = staging.stage_sources(spec, src_dir, config)
    sources = [str(staged[Path(s).name]) for s in spec.sources] + [str(staged[Path(spec.binding).name])]
    incs = [src_dir, *staging.include_dirs(config, spec), *system_header_dirs(spec.system_headers, toolchain)]
    config.max_jobs()  # a bad $MAX_JOBS is named here, not deep inside ninja
    job = dict(name=plan.name, sources=sources, extra_include_paths=[str(p) for p in incs],
               extra_cflags=["-O3", "-DNDEBUG"], extra_cuda_cflags=list(plan.flags),
               build_directory=str(plan.directory), verbose=verbose, with_cuda=True,
               is_python_module=True)
    return job, toolchain.env(config.environ)


def ensure_built(config: Config, spec: KernelSpec, arch: str, verbose: bool = False):
    """(module, BuildInfo): build on a miss, import the existing .so on a hit."""
    import torch

    t0 = time.perf_counter()
    plan = plan_build(config, spec, arch, torch_version=torch.__version__,
                      cuda_version=str(torch.version.cuda))
    stamp = _read_stamp(plan)
    cached = stamp is not None
    if not cached:
        from filelock import FileLock

        lock = config.lock_path(f"build-{plan.directory.name}")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(lock)):
            stamp = _read_stamp(plan)  # another process may have built it while we waited
            cached = stamp is not None
            if not cached:
                compile_s = _compile(config, spec, plan, find_toolchain(config.environ), verbose)
                stamp = _write_stamp(plan, compile_s, torch.__version__, str(torch.version.cuda))
    module = _load_so(plan.name, plan.so)
    return module, BuildInfo(name=plan.name, key=plan.key, directory=str(plan.directory), cached=cached,
                             compile_s=stamp.get("compile_s"), load_s=time.perf_counter() - t0,
                             arch=arch, flags=plan.flags)


def _read_stamp(plan: JitPlan) -> dict | None:
    """The stamp of a finished build of exactly this plan, or None."""
    try:
        data = json.loads(plan.stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != plan.key or not plan.so.is_file():
        return None
    return data


def _write_stamp(plan: JitPlan, compile_s: float, torch_version: str, cuda_version: str) -> dict:
    data = {"key": plan.key, "so": plan.so.name, "module": plan.name, "kernel": plan.kernel,
            "compile_s": round(compile_s, 2), "arch": plan.arch, "flags": list(plan.flags),
            "torch": torch_version, "cuda": cuda_version,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    staging.write_if_different(plan.stamp, json.dumps(data, indent=2) + "\n")
    return data


def _compile(config: Config, spec: KernelSpec, plan: JitPlan, toolchain: Toolchain, verbose: bool) -> float:
    """Run cpp_extension.load in a child process; its output is the build log."""
    job, env = build_job(config, spec, plan, toolchain, verbose)
    log_file = plan.directory / BUILD_LOG
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", _BUILD_CHILD], input=json.dumps(job),
                         capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    log = res.stdout + res.stderr
    staging.write_if_different(log_file, log)
    if verbose:
        sys.stderr.write(log)
    if res.returncode != 0 or not plan.so.is_file():
        raise staging.compile_error(spec.name, log, plan.directory / "src", log_file)
    return seconds


def _load_so(name: str, so_path: Path):
    import importlib.machinery
    import importlib.util

    import torch  # noqa: F401  (the .so links against libtorch: load it first)

    loader = importlib.machinery.ExtensionFileLoader(name, str(so_path))
    mspec = importlib.util.spec_from_file_location(name, str(so_path), loader=loader)
    module = importlib.util.module_from_spec(mspec)
    loader.exec_module(module)
    return module

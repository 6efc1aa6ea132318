"""One `annotate run KERNEL`: build, check, time, assemble the record, write it.

The steps, each a function a test can call:
- `run_checks`: every check shape, `trials` times, each on fresh inputs from its own seed,
  outputs poisoned, one launch, compared with the float64 reference (`verify_once`);
- `run_timings`: the device's peaks, then per timed shape: verify it too, time the kernel and
  the PyTorch baseline (`time_shape`), and work out the rates (`timed_result`, pure);
- `assemble` (pure): the RunRecord from what those returned.
A CUDA error poisons the context, so the first one stops the run and is recorded.

Launches go through a `Harness` (spec, reference module, built extension, device): "cuda" on a
GPU; the tests drive the same steps on "cpu" with a stand-in extension. torch is imported
lazily; `require_gpu` turns "no torch / no CUDA device" into NoGPUError, which the CLI prints
as one line (exit 2).
"""

from __future__ import annotations

import dataclasses
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from annotate.config import Config
from annotate.errors import NoGPUError
from annotate.harness.record import (
    BuildInfo, CheckResult, Device, Peaks, RunRecord, TimedShape, Timing, write_record,
)
from annotate.harness.spec import KernelSpec, Shape, load_reference

Log = Callable[[str], None]
# The trial number whose seed a timed shape's inputs come from (check trials count from 0).
TIMED_TRIAL = 10_000


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class RunOptions:
    shapes: tuple[str, ...] | None = None
    seed: int | None = None
    do_time: bool = True
    trials: int | None = None
    verbose: bool = False
    command: str = ""  # the command line that asked for this run, recorded as given


@dataclass(frozen=True)
class Harness:
    """What a launch needs, and where its tensors live."""

    spec: KernelSpec
    ref: ModuleType  # the kernel's reference.py
    ext: Any  # the built extension (or a stand-in with the same functions)
    device: str = "cuda"

    def generator(self, seed: int):
        import torch

        g = torch.Generator(device=self.device)
        g.manual_seed(seed)
        return g

    def stream(self) -> int:
        import torch

        return torch.cuda.current_stream().cuda_stream if self.device == "cuda" else 0

    def synchronize(self) -> None:
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()

    def release(self) -> None:
        import torch

        if self.device == "cuda":
            torch.cuda.empty_cache()


# ---- the machine ---------------------------------------------------------------------------------
def require_gpu() -> None:
    try:
        import torch
    except ImportError as exc:
        why = "torch is not installed" if isinstance(exc, ModuleNotFoundError) else \
            f"torch cannot be imported ({str(exc).splitlines()[0]})"
        raise NoGPUError(f"no GPU here: {why}, so nothing can run on a CUDA device "
                         "(use --compile-only to compile with nvcc alone)") from None
    if not torch.cuda.is_available():
        raise NoGPUError("no CUDA GPU is visible on this machine (torch.cuda.is_available() is False); "
                         "use --compile-only to compile and see registers/shared memory without one")


def gpu_arch() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"{major}{minor}"


def driver_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def device_info() -> Device:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return Device(
        name=props.name, capability=f"{props.major}.{props.minor}",
        multiprocessors=props.multi_processor_count, memory_GiB=round(props.total_memory / 2**30, 1),
        l2_MB=round(getattr(props, "L2_cache_size", 0) / 1e6, 1), driver=driver_version(),
        torch=torch.__version__, cuda=torch.version.cuda, python=platform.python_version(),
        host=platform.node())


# ---- check ---------------------------------------------------------------------------------------
def verify_once(h: Harness, shape: Shape, seed: int, trial: int | None = None) -> CheckResult:
    """Fresh inputs from `seed`, poisoned outputs, one launch, compare with the float64 reference."""
    from annotate.harness.verify import compare, poison

    tol = h.spec.tolerance_for(shape["dtype"])
    inputs = h.ref.make_inputs(shape, h.generator(seed), h.device)
    outputs = h.ref.make_outputs(shape, inputs)
    for t in outputs.values():
        poison(t)
    base = CheckResult(shape=shape.name, params=dict(shape.params), seed=seed, trial=trial)
    try:
        h.ref.launch(h.ext, shape, inputs, outputs, h.stream())
        h.synchronize()
    except RuntimeError as exc:  # torch.AcceleratorError is a RuntimeError too
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        # A CUDA error (misaligned address, illegal access) poisons the context: nothing after
        # it can run in this process, so the run stops here and records why.
        return dataclasses.replace(base, passed=False, error=msg,
                                   fatal="CUDA error" in msg or "cudaError" in msg)
    want = h.ref.reference(shape, inputs)
    comps = tuple(compare(name, outputs[name], w, tol) for name, w in want.items())
    return dataclasses.replace(base, outputs=comps, passed=all(c.passed for c in comps))


def _describe(c: CheckResult) -> str:
    return c.error or "; ".join(f"{o.output} rel_l2 {o.rel_l2:.2e} max_abs {o.max_abs:.2e}" for o in c.outputs)


def run_checks(h: Harness, shapes: tuple[Shape, ...], base_seed: int, trials: int,
               log: Log = _stderr) -> tuple[tuple[CheckResult, ...], str | None]:
    """(every check, the CUDA error that stopped them or None)."""
    from annotate.harness.verify import trial_seed

    checks: list[CheckResult] = []
    for shape in shapes:
        for trial in range(trials):
            c = verify_once(h, shape, trial_seed(base_seed, h.spec.name, shape.name, trial), trial)
            log(f"  check {shape.name} trial {trial}: {'ok' if c.passed else 'MISMATCH'}  {_describe(c)}")
            for o in c.outputs:
                if not o.passed:
                    log("    " + o.describe())
            checks.append(c)
            if c.fatal:
                return tuple(checks), _stopped(h, c, log)
        h.release()
    return tuple(checks), None


def _stopped(h: Harness, c: CheckResult, log: Log) -> str:
    fatal = f"{c.shape}: {c.error}"
    log(f"{h.spec.name}: stopping after a CUDA error ({fatal})")
    return fatal


# ---- time ----------------------------------------------------------------------------------------
def time_shape(h: Harness, shape: Shape, seed: int, flusher) -> tuple[Timing, Timing | None]:
    """(the kernel's time, the PyTorch baseline's or None) on inputs from `seed`."""
    from annotate.harness.timing import bench

    inputs = h.ref.make_inputs(shape, h.generator(seed), h.device)
    outputs = h.ref.make_outputs(shape, inputs)
    stream = h.stream()
    kt = bench(lambda: h.ref.launch(h.ext, shape, inputs, outputs, stream), flusher)
    base_fn = h.ref.baseline(shape, inputs)
    bt = bench(base_fn, flusher) if base_fn is not None else None
    del inputs, outputs, base_fn
    h.release()
    return kt, bt


def timed_result(shape: Shape, seed: int, kernel: Timing, torch_time: Timing | None, cost: dict,
                 peaks: Peaks, bound: str, check: CheckResult) -> TimedShape:
    """The rates of one timed shape: bytes and flops per second, and % of the measured peaks
    (the headline % is of the peak `bound` names)."""
    sec = kernel.median_us * 1e-6
    gbps = cost.get("bytes", 0) / sec / 1e9
    tflops = cost.get("flops", 0) / sec / 1e12
    pct_bw = 100 * gbps / peaks.copy_gbps
    pct_fl = 100 * tflops / peaks.bf16_tflops
    return TimedShape(
        shape=shape.name, params=dict(shape.params), seed=seed, kernel=kernel,
        bytes=cost.get("bytes", 0), flops=cost.get("flops", 0), gbps=gbps, tflops=tflops,
        pct_peak_bw=pct_bw, pct_peak_flops=pct_fl, pct_peak=pct_bw if bound == "memory" else pct_fl,
        bound=bound, torch=torch_time, torch_us=torch_time.median_us if torch_time else None,
        torch_vs_kernel=torch_time.median_us / kernel.median_us if torch_time else None, check=check)


def run_timings(h: Harness, shapes: tuple[Shape, ...], base_seed: int,
                log: Log = _stderr, peaks: Peaks | None = None) -> tuple[tuple[TimedShape, ...], Peaks, str | None]:
    """(every timed shape, the peaks they are measured against, the CUDA error that stopped
    them or None). Each timed shape is verified too, on the inputs it is timed on. `peaks`:
    already measured in this process (two copies compared side by side share them)."""
    from annotate.harness.timing import L2Flusher, measure_peaks
    from annotate.harness.verify import trial_seed

    peaks = peaks or measure_peaks()
    log(f"{h.spec.name}: device peaks: copy {peaks.copy_gbps:.0f} GB/s, bf16 matmul "
        f"{peaks.bf16_tflops:.0f} TFLOP/s")
    flusher = L2Flusher()
    timings: list[TimedShape] = []
    for shape in shapes:
        seed = trial_seed(base_seed, h.spec.name, shape.name, TIMED_TRIAL)
        check = verify_once(h, shape, seed)
        if check.fatal:
            timings.append(TimedShape(shape=shape.name, params=dict(shape.params), seed=seed, check=check))
            return tuple(timings), peaks, _stopped(h, check, log)
        if not check.passed:
            log(f"  time {shape.name}: MISMATCH " + (check.error or "; ".join(
                o.describe() for o in check.outputs if not o.passed)))
        kt, bt = time_shape(h, shape, seed, flusher)
        t = timed_result(shape, seed, kt, bt, h.ref.cost(shape), peaks, h.spec.bound, check)
        timings.append(t)
        torch_txt = f"; torch {bt.median_us:.1f} us" if bt else ""
        log(f"  time {shape.name}: {kt.median_us:.1f} us, {t.gbps:.0f} GB/s ({t.pct_peak_bw:.0f}% of copy), "
            f"{t.tflops:.1f} TFLOP/s ({t.pct_peak_flops:.0f}% of bf16 mm){torch_txt}")
    return tuple(timings), peaks, None


# ---- assemble --------------------------------------------------------------------------------------
def portable_build(config: Config, build: BuildInfo) -> BuildInfo:
    """The build with its directory relative to the cache (records travel and get committed;
    the machine's cache path means nothing elsewhere)."""
    try:
        rel = Path(build.directory or "").relative_to(config.cache_dir)
    except ValueError:
        return build
    return dataclasses.replace(build, directory="$ANNOTATE_CACHE_DIR/" + rel.as_posix())


def assemble(config: Config, spec: KernelSpec, *, pins: dict[str, str], created: str, seed: int,
             command: str, device: Device, build: BuildInfo, checks: tuple[CheckResult, ...],
             timings: tuple[TimedShape, ...], peaks: Peaks | None, fatal: str | None) -> RunRecord:
    """The record of one run. It passed when nothing stopped it and every verification (the
    check shapes' and the timed shapes') passed."""
    passed = not fatal and all(c.passed for c in checks) and \
        all(t.check is not None and t.check.passed for t in timings)
    return RunRecord(
        kernel=spec.name, title=spec.title, symbols=spec.symbols, launchers=spec.launchers,
        upstream=spec.upstream, pins=dict(pins), created=created, seed=seed, command=command,
        device=device, fatal=fatal, build=portable_build(config, build), baseline=spec.baseline,
        bound=spec.bound, peaks=peaks, checks=checks, timings=timings, passed=passed)


# ---- the run ---------------------------------------------------------------------------------------
def run_kernel(config: Config, spec: KernelSpec, opts: RunOptions,
               log: Log = _stderr) -> tuple[RunRecord, Path]:
    """Build + check + time one harness; (the record, the file it was written to in the cache)."""
    require_gpu()
    from annotate.harness.jit import ensure_built
    from annotate.harness.staging import spec_pins
    from annotate.harness.verify import new_base_seed

    seed = opts.seed if opts.seed is not None else new_base_seed()
    log(f"{spec.name}: seed {seed} (replay with --seed {seed})")
    t0 = time.perf_counter()
    ext, build = ensure_built(config, spec, gpu_arch(), verbose=opts.verbose)
    log(f"{spec.name}: {'cache hit' if build.cached else 'compiled'} in {time.perf_counter() - t0:.1f} s "
        f"-> {build.directory}")
    h = Harness(spec, load_reference(spec), ext)
    device = device_info()  # before any launch: a CUDA error would make this fail
    check_shapes, time_shapes = spec.select(list(opts.shapes) if opts.shapes else None)
    checks, fatal = run_checks(h, check_shapes, seed, opts.trials or spec.trials, log)
    timings: tuple[TimedShape, ...] = ()
    peaks = None
    if opts.do_time and time_shapes and not fatal:
        timings, peaks, fatal = run_timings(h, time_shapes, seed, log)
    now = time.gmtime()
    record = assemble(config, spec, pins=spec_pins(config, spec), created=time.strftime("%Y-%m-%dT%H:%M:%SZ", now),
                      seed=seed, command=opts.command or f"annotate run {spec.name}", device=device,
                      build=build, checks=checks, timings=timings, peaks=peaks, fatal=fatal)
    path = config.result_record(spec.name, time.strftime("%Y%m%dT%H%M%SZ", now))
    write_record(path, record)
    return record, path


def build_only(config: Config, spec: KernelSpec, verbose: bool = False) -> tuple[BuildInfo, float]:
    """(the build, wall seconds) of the torch extension alone, on the GPU machine."""
    require_gpu()
    from annotate.harness.jit import ensure_built

    t0 = time.perf_counter()
    _, build = ensure_built(config, spec, gpu_arch(), verbose=verbose)
    return build, time.perf_counter() - t0

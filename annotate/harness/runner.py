"""One `annotate run KERNEL`: build, verify every check shape, time every time shape, record.

Imports torch lazily (inside functions); `require_gpu` turns "no torch / no CUDA device" into
NoGPUError, which the CLI prints as one line (exit 2).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

from annotate.config import Config
from annotate.errors import NoGPUError
from annotate.harness.spec import KernelSpec, Shape, load_reference

RECORD_SCHEMA = 1


def _portable_build(config, build: dict) -> dict:
    """The build section with its directory relative to the cache (records travel and get
    committed; the machine's cache path means nothing elsewhere)."""
    from pathlib import Path

    d = Path(build.get("directory") or "")
    try:
        build = {**build, "directory": "$ANNOTATE_CACHE_DIR/" + d.relative_to(config.cache_dir).as_posix()}
    except ValueError:
        pass
    return build


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


def device_info() -> dict:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "memory_GiB": round(props.total_memory / 2**30, 1),
        "l2_MB": round(getattr(props, "L2_cache_size", 0) / 1e6, 1),
        "driver": driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "host": platform.node(),
    }


@dataclass
class RunOptions:
    shapes: list[str] | None = None
    seed: int | None = None
    do_time: bool = True
    trials: int | None = None
    verbose: bool = False


def _gen(seed: int):
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g


def _poison_all(outputs: dict) -> None:
    from annotate.harness.verify import poison

    for t in outputs.values():
        poison(t)


def _check_once(spec: KernelSpec, ref, ext, shape: Shape, seed: int) -> dict:
    """Fresh inputs from `seed`, poisoned outputs, one launch, compare with the float64 reference."""
    import torch

    from annotate.harness.verify import compare

    dtype = shape["dtype"]
    tol = spec.tolerance_for(dtype)
    entry = {"shape": shape.name, "params": shape.params, "seed": seed}
    inputs = ref.make_inputs(shape, _gen(seed), "cuda")
    outputs = ref.make_outputs(shape, inputs)
    _poison_all(outputs)
    stream = torch.cuda.current_stream().cuda_stream
    try:
        ref.launch(ext, shape, inputs, outputs, stream)
        torch.cuda.synchronize()
    except RuntimeError as exc:  # torch.AcceleratorError is a RuntimeError too
        msg = str(exc).strip().splitlines()[0]
        # A CUDA error (misaligned address, illegal access) poisons the context: nothing after
        # it can run in this process, so the run stops here and records why.
        entry.update(passed=False, error=msg, fatal="CUDA error" in msg or "cudaError" in msg)
        return entry
    want = ref.reference(shape, inputs)
    comps = [compare(name, outputs[name], w, tol) for name, w in want.items()]
    entry["outputs"] = [c.to_json() for c in comps]
    entry["passed"] = all(c.passed for c in comps)
    entry["_comparisons"] = comps
    del inputs, outputs, want
    return entry


def run_kernel(config: Config, spec: KernelSpec, opts: RunOptions,
               log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> dict:
    """Build + verify + time one harness; returns the record (also written to the cache)."""
    require_gpu()
    import torch

    from annotate.harness.build import ensure_built, spec_pins
    from annotate.harness.timing import L2Flusher, bench, measure_peaks
    from annotate.harness.verify import new_base_seed, trial_seed

    seed = opts.seed if opts.seed is not None else new_base_seed()
    log(f"{spec.name}: seed {seed} (replay with --seed {seed})")
    arch = gpu_arch()
    ref = load_reference(spec)
    t0 = time.perf_counter()
    ext, build = ensure_built(config, spec, arch, verbose=opts.verbose)
    log(f"{spec.name}: {'cache hit' if build.cached else 'compiled'} in {time.perf_counter() - t0:.1f} s "
        f"-> {build.directory}")
    check_shapes, time_shapes = spec.select(opts.shapes)
    trials = opts.trials or spec.trials

    device = device_info()  # before any launch: a CUDA error would make this fail
    checks = []
    fatal = None
    for shape in check_shapes:
        if fatal:
            break
        for trial in range(trials):
            s = trial_seed(seed, spec.name, shape.name, trial)
            entry = _check_once(spec, ref, ext, shape, s)
            entry["trial"] = trial
            comps = entry.pop("_comparisons", [])
            status = "ok" if entry["passed"] else "MISMATCH"
            detail = entry.get("error") or "; ".join(
                f"{c.output} rel_l2 {c.rel_l2:.2e} max_abs {c.max_abs:.2e}" for c in comps)
            log(f"  check {shape.name} trial {trial}: {status}  {detail}")
            if not entry["passed"]:
                for c in comps:
                    if not c.passed:
                        log("    " + c.describe())
            checks.append(entry)
            if entry.get("fatal"):
                fatal = f"{shape.name}: {entry['error']}"
                log(f"{spec.name}: stopping after a CUDA error ({fatal})")
                break
        if not fatal:
            torch.cuda.empty_cache()

    timings = []
    peaks = None
    if opts.do_time and time_shapes and not fatal:
        peaks = measure_peaks()
        log(f"{spec.name}: device peaks: copy {peaks.copy_gbps:.0f} GB/s, bf16 matmul "
            f"{peaks.bf16_tflops:.0f} TFLOP/s")
        flusher = L2Flusher()
        for shape in time_shapes:
            s = trial_seed(seed, spec.name, shape.name, 10_000)
            entry = _check_once(spec, ref, ext, shape, s)  # the timed output is verified too
            comps = entry.pop("_comparisons", [])
            if entry.get("fatal"):
                fatal = f"{shape.name}: {entry['error']}"
                log(f"{spec.name}: stopping after a CUDA error ({fatal})")
                timings.append({"shape": shape.name, "params": shape.params, "check": entry})
                break
            if not entry["passed"]:
                log(f"  time {shape.name}: MISMATCH " + (entry.get("error") or "; ".join(
                    c.describe() for c in comps if not c.passed)))
            inputs = ref.make_inputs(shape, _gen(s), "cuda")
            outputs = ref.make_outputs(shape, inputs)
            stream = torch.cuda.current_stream().cuda_stream
            kt = bench(lambda: ref.launch(ext, shape, inputs, outputs, stream), flusher)
            base_fn = ref.baseline(shape, inputs)
            bt = bench(base_fn, flusher) if base_fn is not None else None
            cost = ref.cost(shape)
            sec = kt.median_us * 1e-6
            gbps = cost.get("bytes", 0) / sec / 1e9
            tflops = cost.get("flops", 0) / sec / 1e12
            pct_bw = 100 * gbps / peaks.copy_gbps
            pct_fl = 100 * tflops / peaks.bf16_tflops
            t = {
                "shape": shape.name, "params": shape.params, "seed": s,
                "kernel": kt.to_json(), "bytes": cost.get("bytes", 0), "flops": cost.get("flops", 0),
                "GBps": round(gbps, 1), "TFLOPs": round(tflops, 2),
                "pct_peak_bw": round(pct_bw, 1), "pct_peak_flops": round(pct_fl, 1),
                "pct_peak": round(pct_bw if spec.bound == "memory" else pct_fl, 1),
                "bound": spec.bound,
                "torch": bt.to_json() if bt else None,
                "torch_us": round(bt.median_us, 2) if bt else None,
                "torch_vs_kernel": round(bt.median_us / kt.median_us, 2) if bt else None,
                "check": entry,
            }
            timings.append(t)
            torch_txt = f"; torch {bt.median_us:.1f} us" if bt else ""
            log(f"  time {shape.name}: {kt.median_us:.1f} us, {gbps:.0f} GB/s ({pct_bw:.0f}% of copy), "
                f"{tflops:.1f} TFLOP/s ({pct_fl:.0f}% of bf16 mm){torch_txt}")
            del inputs, outputs
            torch.cuda.empty_cache()

    passed = not fatal and all(c["passed"] for c in checks) and all(t["check"]["passed"] for t in timings)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    record = {
        "schema": RECORD_SCHEMA,
        "kernel": spec.name,
        "title": spec.title,
        "symbols": list(spec.symbols),
        "launchers": list(spec.launchers),
        "upstream": spec.upstream,
        "pins": spec_pins(config, spec),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seed": seed,
        "command": "annotate run " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["run"] else sys.argv[1:]),
        "device": device,
        "fatal": fatal,
        "build": _portable_build(config, build.to_json()),
        "baseline": spec.baseline,
        "bound": spec.bound,
        "peaks": peaks.to_json() if peaks else None,
        "checks": checks,
        "timings": timings,
        "passed": passed,
    }
    path = config.result_record(spec.name, stamp)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    record["_path"] = str(path)
    return record


def build_only(config: Config, spec: KernelSpec, verbose: bool = False) -> dict:
    require_gpu()
    from annotate.harness.build import ensure_built

    t0 = time.perf_counter()
    _, build = ensure_built(config, spec, gpu_arch(), verbose=verbose)
    return {"kernel": spec.name, "wall_s": round(time.perf_counter() - t0, 2), **build.to_json()}

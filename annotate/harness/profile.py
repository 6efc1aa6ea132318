"""`annotate profile KERNEL`: Nsight Compute's source-level counters, per upstream source line.

Three steps, the first two on a GPU machine:
1. `collect` runs `ncu` on a child process (`target`) that builds the harness, makes the inputs
   of one timed shape and launches the kernel(s) once to warm up and once inside an NVTX range;
   ncu profiles only the launches inside that range (every kernel the upstream launcher starts,
   e.g. decode's split-KV kernel and its MergeStates).
2. `dump` reads the report through Nsight Compute's own Python module (`ncu_report`) and writes
   every instanced source counter per SASS address, with the address's source file and line.
3. `lines` (anywhere) folds that dump into a compact per-source-line record: stall samples by
   reason, instructions executed, excessive sectors and bank conflicts per upstream line.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

NVTX_RANGE = "annotate-profile"
SECTIONS = ("SourceCounters", "WarpStateStats", "LaunchStats", "Occupancy", "SpeedOfLight",
            "MemoryWorkloadAnalysis")
# Whole-kernel metrics kept beside the per-line ones.
SUMMARY_METRICS = (
    "gpu__time_duration.sum", "launch__grid_size", "launch__block_size", "launch__grid_dim_x",
    "launch__grid_dim_y", "launch__grid_dim_z", "launch__block_dim_x", "launch__block_dim_y",
    "launch__block_dim_z", "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static", "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed", "smsp__inst_executed.sum",
    "smsp__cycles_active.avg", "sm__cycles_elapsed.max",
)


def ncu_python_dir() -> str | None:
    """Nsight Compute's `extras/python` (holds ncu_report), newest version first."""
    roots = sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True)
    roots += sorted(glob.glob("/usr/local/cuda*/nsight-compute*/extras/python"), reverse=True)
    return roots[0] if roots else None


def target(kernel: str, shape_name: str) -> int:
    """The profiled process: one warm-up launch, then one launch inside the NVTX range."""
    import torch

    from annotate.config import Config
    from annotate.harness.jit import ensure_built
    from annotate.harness.runner import gpu_arch
    from annotate.harness.spec import load_reference, load_spec

    config = Config.load()
    spec = load_spec(config, kernel)
    ref = load_reference(spec)
    ext, _build = ensure_built(config, spec, gpu_arch())
    check, timed = spec.select([shape_name])
    shape = (list(timed) + list(check))[0]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    inputs = ref.make_inputs(shape, gen, "cuda")
    outputs = ref.make_outputs(shape, inputs)
    stream = torch.cuda.current_stream().cuda_stream
    ref.launch(ext, shape, inputs, outputs, stream)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    ref.launch(ext, shape, inputs, outputs, stream)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    return 0


def collect(kernel: str, shape_name: str, report: Path, ncu: str = "ncu") -> int:
    """Run ncu on `target` and write `report` (.ncu-rep)."""
    cmd = [ncu, "--force-overwrite", "--export", str(report), "--nvtx", "--nvtx-include",
           f"{NVTX_RANGE}/", "--replay-mode", "kernel", "--clock-control", "none",
           "--import-source", "no"]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += [sys.executable, "-m", "annotate.harness.profile", "target", kernel, shape_name]
    print(" ".join(cmd), flush=True)
    return subprocess.call(cmd)


def _value(m):
    try:
        v = m.value()
    except Exception:  # noqa: BLE001 - a metric ncu cannot convert is left out
        return None
    return v if isinstance(v, (int, float, str)) else None


def _instance(metric, i: int):
    """Instance `i` of an instanced metric (ncu_report's accessors differ between versions)."""
    for how in ("value", "as_uint64", "as_double"):
        try:
            return getattr(metric, how)(i)
        except Exception:  # noqa: BLE001 - try the next accessor
            continue
    return None


def dump(report: Path, out: Path) -> dict:
    """Every action of `report`: summary metrics and, per SASS address, instanced counters."""
    sys.path.insert(0, ncu_python_dir() or "")
    import ncu_report  # noqa: PLC0415 - only on a machine with Nsight Compute

    ctx = ncu_report.load_report(str(report))
    actions = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            entry = {"name": act.name(ncu_report.IAction.NameBase_DEMANGLED),
                     "mangled": act.name(ncu_report.IAction.NameBase_MANGLED),
                     "summary": {}, "instanced": [], "pcs": {}}
            for name in SUMMARY_METRICS:
                m = act.metric_by_name(name)
                if m is not None:
                    entry["summary"][name] = _value(m)
            per_pc: dict[int, dict] = {}
            for name in act.metric_names():
                m = act.metric_by_name(name)
                if m is None or not m.has_correlation_ids() or m.num_instances() == 0:
                    continue
                ids = m.correlation_ids()
                entry["instanced"].append(name)
                for i in range(m.num_instances()):
                    pc, v = _instance(ids, i), _instance(m, i)
                    # some counters correlate to opcodes, not addresses: per-line data wants addresses
                    if not isinstance(pc, int) or not isinstance(v, (int, float)) or not v:
                        continue
                    per_pc.setdefault(int(pc), {})[name] = v
            for pc, vals in per_pc.items():
                row = {"m": vals}
                try:
                    row["sass"] = act.sass_by_pc(pc)
                except Exception:  # noqa: BLE001
                    pass
                try:
                    si = act.source_info(pc)
                    if si is not None:
                        row["file"], row["line"] = si.file_name(), si.line()
                except Exception:  # noqa: BLE001
                    pass
                entry["pcs"][str(pc)] = row
            actions.append(entry)
    data = {"report": report.name, "actions": actions}
    with gzip.open(out, "wt", encoding="utf-8") as f:
        json.dump(data, f)
    return data


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("usage: python -m annotate.harness.profile target|collect|dump ...", file=sys.stderr)
        return 2
    verb, rest = argv[0], argv[1:]
    if verb == "target":
        return target(rest[0], rest[1])
    if verb == "collect":
        return collect(rest[0], rest[1], Path(rest[2]), os.environ.get("NCU", "ncu"))
    if verb == "dump":
        dump(Path(rest[0]), Path(rest[1]))
        return 0
    print(f"unknown verb {verb!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""`annotate profile KERNEL --shape NAME`: Nsight Compute's source-level counters, per upstream
source line.

Three steps, the first two on a GPU machine:
1. `collect` runs `ncu` on a child process (`target`) that builds the harness, makes the inputs
   of one timed shape and launches the kernel(s) once to warm up and once inside an NVTX range;
   ncu profiles only the launches inside that range (every kernel the upstream launcher starts,
   e.g. decode's split-KV kernel and its MergeStates). The JIT build carries -lineinfo
   (annotate.harness.jit), so ncu can map each SASS address to source.
2. `dump` reads the report through Nsight Compute's own Python module (`ncu_report`) and writes
   every instanced source counter per SASS address, with the address's source file and line.
3. `lines` (anywhere, `fold`) folds that dump into a compact `ProfileRecord`: per kernel its
   launch, occupancy and throughputs, and per upstream source line the warp-stall samples by
   reason, instructions executed, excessive L2 sectors and shared-memory wavefronts. Given the
   SASS record of the same build (annotate.harness.sass), each address goes to the innermost
   *upstream* line of its inlining chain, so an instruction ncu places in cuda_fp16.hpp counts
   for the vec_dtypes.cuh line that called it; without one, ncu's own line is kept (toolkit
   files as `cuda:<header>`).

What the per-line numbers mean (ncu's metric names in brackets):
- samples [smsp__pcsamp_sample_count]: warp-state samples taken while a warp was at one of the
  line's instructions; stalls [smsp__pcsamp_warps_issue_stalled_<reason>]: those samples by the
  reason the warp was waiting (long_scoreboard: a global/local memory result; short_scoreboard:
  shared memory or MUFU; barrier: __syncthreads; wait: a fixed-latency dependency; mio_throttle
  / lg_throttle: the shared / global memory instruction queues full; math_pipe_throttle: the
  pipe busy; selected: issuing, not stalled); not_issued: the samples in which no instruction
  was issued at all.
- instructions [inst_executed]: warp-level instructions executed; thread_instructions
  [thread_inst_executed_true]: the threads that were predicated on.
- l2_sectors / l2_sectors_ideal [memory_l2_theoretical_sectors_global(_ideal)]: 32-byte sectors
  global accesses asked of L2, and the least a perfectly coalesced access needs;
  l2_excessive [derived__memory_l2_theoretical_sectors_global_excessive]: the difference.
- smem_wavefronts / smem_wavefronts_ideal [memory_l1_wavefronts_shared(_ideal)]: shared-memory
  wavefronts and the ideal count; smem_excessive [derived__memory_l1_wavefronts_shared_excessive]:
  the extra ones, i.e. bank conflicts.
"""

from __future__ import annotations

import csv
import glob
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from annotate.harness.record import RecordError, _check_bounds, _opt, _Part, _read, _text_depth

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
    where = ncu_python_dir()
    if where is None:
        from annotate.errors import AnnotateError

        raise AnnotateError("Nsight Compute's Python module (extras/python/ncu_report.py) was not found",
                            hint=f"the report is kept: {report}; fold it where ncu is installed")
    sys.path.insert(0, where)
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


# ---- lines: a dump folded per source line ----------------------------------------------------
PROFILE_SCHEMA = 1
MAX_DUMP_BYTES = 64 * 2**20  # uncompressed; the catalog's dumps are 1-10 MiB
STALL = "smsp__pcsamp_warps_issue_stalled_"
# per-line counters: record field <- ncu's instanced metric
LINE_METRICS = {
    "samples": "smsp__pcsamp_sample_count",
    "instructions": "inst_executed",
    "thread_instructions": "thread_inst_executed_true",
    "l2_sectors": "memory_l2_theoretical_sectors_global",
    "l2_sectors_ideal": "memory_l2_theoretical_sectors_global_ideal",
    "l2_excessive": "derived__memory_l2_theoretical_sectors_global_excessive",
    "smem_wavefronts": "memory_l1_wavefronts_shared",
    "smem_wavefronts_ideal": "memory_l1_wavefronts_shared_ideal",
    "smem_excessive": "derived__memory_l1_wavefronts_shared_excessive",
    "divergent_branches": "smsp__branch_targets_threads_divergent",
}
# whole-kernel numbers from the "details" page (ncu --csv --page details): key <- (section, metric)
DETAILS = {
    "duration_us": ("GPU Speed Of Light Throughput", "Duration"),
    "sm_mhz": ("GPU Speed Of Light Throughput", "SM Frequency"),
    "memory_pct": ("GPU Speed Of Light Throughput", "Memory Throughput"),
    "dram_pct": ("GPU Speed Of Light Throughput", "DRAM Throughput"),
    "l1_pct": ("GPU Speed Of Light Throughput", "L1/TEX Cache Throughput"),
    "l2_pct": ("GPU Speed Of Light Throughput", "L2 Cache Throughput"),
    "sm_pct": ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"),
    "dram_tbps": ("Memory Workload Analysis", "Memory Throughput"),
    "l2_hit_pct": ("Memory Workload Analysis", "L2 Hit Rate"),
    "occupancy_theoretical_pct": ("Occupancy", "Theoretical Occupancy"),
    "occupancy_achieved_pct": ("Occupancy", "Achieved Occupancy"),
    "block_limit_registers": ("Occupancy", "Block Limit Registers"),
    "block_limit_shared_mem": ("Occupancy", "Block Limit Shared Mem"),
    "block_limit_warps": ("Occupancy", "Block Limit Warps"),
    "warp_cycles_per_instruction": ("Warp State Statistics", "Warp Cycles Per Issued Instruction"),
}


@dataclass(frozen=True)
class ProfileLine(_Part):
    line: int = _opt(default=0)
    sass: int = _opt(default=0)  # SASS addresses folded into this line
    samples: int = _opt(default=0)
    stalls: dict = _opt(factory=dict, omit="empty")  # reason -> samples
    not_issued: int = _opt(default=0, omit=lambda ln: not ln.not_issued)
    instructions: int = _opt(default=0)
    thread_instructions: int = _opt(default=0)
    l2_sectors: int = _opt(default=0, omit=lambda ln: not ln.l2_sectors)
    l2_sectors_ideal: int = _opt(default=0, omit=lambda ln: not ln.l2_sectors)
    l2_excessive: int = _opt(default=0, omit=lambda ln: not ln.l2_excessive)
    smem_wavefronts: int = _opt(default=0, omit=lambda ln: not ln.smem_wavefronts)
    smem_wavefronts_ideal: int = _opt(default=0, omit=lambda ln: not ln.smem_wavefronts)
    smem_excessive: int = _opt(default=0, omit=lambda ln: not ln.smem_excessive)
    divergent_branches: int = _opt(default=0, omit=lambda ln: not ln.divergent_branches)


@dataclass(frozen=True)
class ProfileFile(_Part):
    path: str = _opt(default="")  # "flashinfer:include/flashinfer/attention/decode.cuh", "cuda:cuda_fp16.hpp"
    lines: tuple[ProfileLine, ...] = _opt(default=())


@dataclass(frozen=True)
class ProfileKernel(_Part):
    """One profiled launch."""

    name: str = _opt(default="")
    mangled: str = _opt(default="")
    attribution: str = _opt(default="ncu")  # "sass-record": lines from the build's SASS record; "ncu"
    grid: tuple[int, ...] = _opt(default=())
    block: tuple[int, ...] = _opt(default=())
    registers: int | None = _opt()
    smem_static: int | None = _opt()
    smem_dynamic: int | None = _opt()
    waves: float | None = _opt(ndigits=2)
    duration_ns: float | None = _opt()
    instructions: int | None = _opt()  # smsp__inst_executed.sum
    throughput: dict = _opt(factory=dict)  # the DETAILS keys (from the details page), and the dump's own
    samples: int = _opt(default=0)
    stalls: dict = _opt(factory=dict)  # reason -> samples over the whole kernel
    unattributed_samples: int = _opt(default=0)  # samples at addresses with no source line
    files: tuple[ProfileFile, ...] = _opt(default=())


@dataclass(frozen=True)
class ProfileRecord(_Part):
    schema: int = _opt(default=PROFILE_SCHEMA)
    kernel: str = _opt(default="")  # the harness
    shape: str = _opt(default="")
    device: str | None = _opt()
    report: str | None = _opt()
    sass_record: str | None = _opt(omit="none")  # the build key of the SASS record used, if any
    kernels: tuple[ProfileKernel, ...] = _opt(default=())

    @classmethod
    def from_json(cls, data: object, where: str = "profile record") -> "ProfileRecord":
        _check_bounds(data, where)
        if not isinstance(data, dict):
            raise RecordError(where, f"not a JSON object but {type(data).__name__}")
        return _read(cls, data)


_CHECKOUT = re.compile(r"/checkouts/(?P<up>[A-Za-z0-9_.-]+?)-[0-9a-f]{12}/(?P<rel>.+)$")
_TOOLKIT = re.compile(r"/(?:cuda[^/]*|nvidia/[^/]+)/(?:targets/[^/]+/)?include/(?P<rel>.+)$")


def normalise_path(path: str, upstreams: tuple[str, ...] = ()) -> str:
    """A source path as ncu recorded it on the GPU machine -> `upstream:relative` for a file of
    a pinned checkout, `cuda:<header>` for the toolkit's, else `other:<file name>` (no machine
    path is ever kept)."""
    norm = os.path.normpath(path).replace(os.sep, "/")
    if m := _CHECKOUT.search(norm):
        if not upstreams or m.group("up") in upstreams:
            return f"{m.group('up')}:{m.group('rel')}"
    if m := _TOOLKIT.search(norm):
        return f"cuda:{m.group('rel')}"
    return f"other:{os.path.basename(norm)}"


def read_dump(path: Path) -> dict:
    """A dump written by `dump` (gzip JSON), bounded; RecordError (one line) otherwise."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read(MAX_DUMP_BYTES + 1)
    except (gzip.BadGzipFile, EOFError):
        raise RecordError(str(path), "not a gzip file (or a truncated one)") from None
    except OSError as exc:  # missing, a folder, no permission
        raise RecordError(str(path), exc.strerror or exc.__class__.__name__) from None
    if len(raw) > MAX_DUMP_BYTES:
        raise RecordError(str(path), f"larger than {MAX_DUMP_BYTES // 2**20} MiB uncompressed")
    try:
        text = raw.decode("utf-8")
        if _text_depth(text) > 12:
            raise RecordError(str(path), "nested deeper than 12 levels")
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError):
        raise RecordError(str(path), "not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("actions"), list):
        raise RecordError(str(path), "not a profile dump (no `actions` list)")
    return data


def read_details(text: str) -> list[dict]:
    """Per profiled kernel (in the report's order), the DETAILS numbers of ncu's details CSV."""
    out: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO(text)):
        rid = row.get("ID", "")
        got = out.setdefault(rid, {})
        for key, (section, metric) in DETAILS.items():
            if row.get("Section Name") == section and row.get("Metric Name") == metric:
                got[key] = _number(row.get("Metric Value", ""), row.get("Metric Unit", ""))
    return [v for _, v in sorted(out.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 1 << 30)]


def _number(value: str, unit: str = "") -> float | None:
    try:
        x = float(value.replace(",", ""))
    except ValueError:
        return None
    return x * 1000 if unit.lower() == "ghz" else x  # SM frequency in MHz


def _int(x) -> int:
    return int(x) if isinstance(x, (int, float)) else 0


def sass_lines(function) -> dict[int, tuple[str, int]]:
    """SASS address -> (file, line) of its innermost upstream frame, from a record's function
    (annotate.harness.sass.SassFunction): its per-line SASS texts begin with the address."""
    out = {}
    for sf in function.files:
        for ln in sf.lines:
            for text in ln.sass:
                addr = text.split(" ", 1)[0]
                try:
                    out[int(addr, 16)] = (sf.path, ln.line)
                except ValueError:
                    continue
    return out


def fold(dump: dict, *, kernel: str, shape: str, details: list[dict] | None = None, sass=None,
         device: str | None = None, upstreams: tuple[str, ...] = ()) -> ProfileRecord:
    """A dump's actions folded per source line. `sass`: a SassRecord of the build that was
    profiled (matched per kernel by mangled name), else ncu's own lines are used."""
    by_mangled = {f.mangled: f for f in sass.functions} if sass is not None else {}
    kernels = []
    for i, act in enumerate(dump.get("actions") or []):
        if not isinstance(act, dict):
            continue
        pcs = act.get("pcs") if isinstance(act.get("pcs"), dict) else {}
        summary = act.get("summary") if isinstance(act.get("summary"), dict) else {}
        base = (pcs.get("0") or {}).get("m", {}).get("launch__function_pcs")
        fn = by_mangled.get(act.get("mangled"))
        table = sass_lines(fn) if fn is not None and fn.files else {}
        lines: dict[tuple[str, int], dict] = {}
        total_stalls: Counter = Counter()
        samples = unattributed = 0
        for key, row in pcs.items():
            try:
                pc = int(key)
            except ValueError:
                continue
            if not isinstance(base, int) or pc < base or not isinstance(row, dict):
                continue  # ids below the function's first address count opcodes or occupancy steps
            m = row.get("m") if isinstance(row.get("m"), dict) else {}
            loc = table.get(pc - base)
            if loc is None and not table and isinstance(row.get("file"), str) and isinstance(row.get("line"), int):
                loc = (normalise_path(row["file"], upstreams), row["line"])
            n = _int(m.get(LINE_METRICS["samples"]))
            samples += n
            stalls = {k[len(STALL):]: _int(v) for k, v in m.items()
                      if k.startswith(STALL) and not k.endswith("_not_issued") and _int(v)}
            total_stalls.update(stalls)
            if loc is None:
                unattributed += n
                continue
            acc = lines.setdefault(loc, {"sass": 0, "stalls": Counter(), "not_issued": 0,
                                         **{f: 0 for f in LINE_METRICS}})
            acc["sass"] += 1
            acc["stalls"].update(stalls)
            acc["not_issued"] += sum(_int(v) for k, v in m.items() if k.startswith(STALL) and k.endswith("_not_issued"))
            for field_, metric in LINE_METRICS.items():
                acc[field_] += _int(m.get(metric))
        by_file: dict[str, list[ProfileLine]] = {}
        for (path, line), acc in sorted(lines.items()):
            by_file.setdefault(path, []).append(ProfileLine(
                line=line, sass=acc["sass"], stalls=dict(acc["stalls"].most_common()), not_issued=acc["not_issued"],
                **{f: acc[f] for f in LINE_METRICS}))
        det = (details[i] if details and i < len(details) else {})
        own = {k: summary[k] for k in ("sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                                       "sm__warps_active.avg.pct_of_peak_sustained_active") if k in summary}
        kernels.append(ProfileKernel(
            name=str(act.get("name", "")), mangled=str(act.get("mangled", "")),
            attribution="sass-record" if table else "ncu",
            grid=tuple(_int(summary.get(f"launch__grid_dim_{a}")) for a in "xyz"),
            block=tuple(_int(summary.get(f"launch__block_dim_{a}")) for a in "xyz"),
            registers=summary.get("launch__registers_per_thread"),
            smem_static=summary.get("launch__shared_mem_per_block_static"),
            smem_dynamic=summary.get("launch__shared_mem_per_block_dynamic"),
            waves=summary.get("launch__waves_per_multiprocessor"),
            duration_ns=summary.get("gpu__time_duration.sum"),
            instructions=_int(summary.get("smsp__inst_executed.sum")) or None,
            throughput={**{k: v for k, v in det.items() if v is not None}, **own},
            samples=samples, stalls=dict(total_stalls.most_common()), unattributed_samples=unattributed,
            files=tuple(ProfileFile(path=p, lines=tuple(ls)) for p, ls in sorted(by_file.items()))))
    return ProfileRecord(kernel=kernel, shape=shape, device=device, report=dump.get("report"),
                         sass_record=getattr(sass, "key", None), kernels=tuple(kernels))


def profile_json_text(record: ProfileRecord) -> str:
    data = record.to_json()
    kernels = data.pop("kernels")
    head = json.dumps(data, indent=1)[:-2]
    parts = []
    for k in kernels:
        files = k.pop("files")
        body = json.dumps(k, separators=(", ", ": "))[:-1]
        fparts = []
        for f in files:
            lines = ",\n".join("     " + json.dumps(ln, separators=(",", ":")) for ln in f["lines"])
            fparts.append(f'   {{"path": {json.dumps(f["path"])}, "lines": [\n{lines}\n   ]}}')
        parts.append("  " + body + ', "files": [\n' + ",\n".join(fparts) + "\n  ]}")
    return head + ',\n "kernels": [\n' + ",\n".join(parts) + "\n ]\n}\n"


def write_profile(path: Path, record: ProfileRecord) -> None:
    from annotate.atomic import write_atomic

    write_atomic(path, profile_json_text(record))


def load_profile(path: Path) -> ProfileRecord:
    from annotate.harness.record import read_record_json

    return ProfileRecord.from_json(read_record_json(Path(path)), where=str(path))


def committed_profile(config, kernel: str, shape: str) -> Path:
    """vendor_kernels/results/profiles/<kernel>.<shape>.json: what the site shows."""
    return config.committed_results_dir() / "profiles" / f"{kernel}.{shape}.json"


def local_profile(config, kernel: str, shape: str) -> Path:
    """This machine's folded record (the cache's results folder)."""
    return config.results_dir() / "profiles" / f"{kernel}.{shape}.json"


def run_profile(config, spec, shape: str, *, dump_file: str | None = None, details: str | None = None,
                sass_file: str | None = None, device: str | None = None) -> ProfileRecord:
    """collect + dump + lines on a GPU machine, or lines alone from an existing dump."""
    from annotate.errors import AnnotateError
    from annotate.harness import sass as sass_mod

    upstreams = tuple(dict.fromkeys([spec.upstream, *(i.upstream for i in spec.includes)]))
    if dump_file is None:
        ncu = shutil.which(config.environ.get("NCU", "ncu"), path=config.environ.get("PATH"))
        if ncu is None:  # before any work folder is made
            raise AnnotateError("annotate profile needs Nsight Compute: ncu was not found (PATH or $NCU)",
                                hint="on a machine without a GPU, fold a dump taken on one: --from-dump DUMP.json.gz")
        work = config.results_dir() / "profiles" / f"{spec.name}.{shape}"
        work.mkdir(parents=True, exist_ok=True)
        report = work / "report.ncu-rep"
        if collect(spec.name, shape, report, ncu) != 0 or not report.is_file():
            raise AnnotateError(f"ncu failed to profile {spec.name} {shape}",
                                hint="annotate profile needs a CUDA GPU and Nsight Compute (ncu on PATH or $NCU)")
        dump_path = work / "dump.json.gz"
        dump(report, dump_path)
        det = subprocess.run([ncu, "--import", str(report), "--csv", "--page", "details"],
                             capture_output=True, text=True)
        details_text = det.stdout if det.returncode == 0 else ""
        (work / "details.csv").write_text(details_text, encoding="utf-8")
        device = device or _device_name()
    else:
        dump_path = Path(dump_file)
        try:
            details_text = Path(details).read_text(encoding="utf-8") if details else ""
        except OSError as exc:
            raise AnnotateError(f"{details}: cannot read ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise AnnotateError(f"{details}: not UTF-8 text (expected ncu --csv --page details)") from None
    data = read_dump(dump_path)
    try:
        per_kernel = read_details(details_text) if details_text else None
    except csv.Error as exc:
        raise AnnotateError(f"{details or 'details.csv'}: not ncu's details CSV ({exc})") from None
    record = None
    if sass_file:
        record = sass_mod.load_sass_record(Path(sass_file))
    elif dump_file is None:
        try:
            from annotate.harness.runner import gpu_arch

            record, _ = sass_mod.sass_record(config, spec, gpu_arch())
        except AnnotateError as exc:  # no nvcc / nvdisasm here: ncu's own lines
            print(f"annotate: note: no SASS record ({exc.message}); keeping ncu's source lines", file=sys.stderr)
    folded = fold(data, kernel=spec.name, shape=shape, details=per_kernel, sass=record, device=device,
                  upstreams=upstreams)
    if not folded.kernels:  # nothing was written yet: an empty record would hide the mistake
        raise AnnotateError(f"{dump_path}: the dump holds no profiled kernel",
                            hint=f"ncu profiles only the launches inside the NVTX range {NVTX_RANGE!r}")
    return folded


def _device_name() -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001 - the name is informative only
        return None


def print_profile(record: ProfileRecord, path: Path, top: int = 12) -> None:
    from annotate.terminal import echo

    echo(f"{record.kernel} {record.shape}: {len(record.kernels)} kernel(s); record: {path}")
    for k in record.kernels:
        t = k.throughput
        echo(f"\n{k.name[:140]}")
        echo(f"  grid {k.grid} block {k.block}, {k.registers} registers, smem {k.smem_static}+{k.smem_dynamic} B; "
             f"{(k.duration_ns or 0) / 1000:.1f} µs; occupancy {t.get('occupancy_achieved_pct', '-')}% of "
             f"{t.get('occupancy_theoretical_pct', '-')}%; DRAM {t.get('dram_pct', '-')}%, SM {t.get('sm_pct', '-')}%")
        echo(f"  stalls: " + ", ".join(f"{r} {n}" for r, n in list(k.stalls.items())[:6])
             + f" (of {k.samples} samples; lines from {k.attribution})")
        rows = sorted(((ln.samples, f.path, ln) for f in k.files for ln in f.lines), key=lambda r: -r[0])[:top]
        for n, p, ln in rows:
            why = ", ".join(f"{r} {c}" for r, c in list(ln.stalls.items())[:3])
            extra = (f"; L2 excess {ln.l2_excessive}" if ln.l2_excessive else "") + \
                    (f"; bank conflicts {ln.smem_excessive}" if ln.smem_excessive else "")
            echo(f"  {n:>7}  {p.split(':', 1)[1]}:{ln.line}  ({why}{extra})")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("usage: python -m annotate.harness.profile target|collect|dump|lines ...", file=sys.stderr)
        return 2
    verb, rest = argv[0], argv[1:]
    if verb == "target":
        return target(rest[0], rest[1])
    if verb == "collect":
        return collect(rest[0], rest[1], Path(rest[2]), os.environ.get("NCU", "ncu"))
    if verb == "dump":
        dump(Path(rest[0]), Path(rest[1]))
        return 0
    if verb == "lines":  # DUMP KERNEL SHAPE OUT [DETAILS_CSV [SASS_RECORD]]
        from annotate.harness.sass import load_sass_record

        data = read_dump(Path(rest[0]))
        details = read_details(Path(rest[4]).read_text(encoding="utf-8")) if len(rest) > 4 else None
        sass = load_sass_record(Path(rest[5])) if len(rest) > 5 else None
        write_profile(Path(rest[3]), fold(data, kernel=rest[1], shape=rest[2], details=details, sass=sass))
        return 0
    print(f"unknown verb {verb!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

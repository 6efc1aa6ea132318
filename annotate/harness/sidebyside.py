"""`annotate run KERNEL --source DIR`: a learner's copy of a harness (an extracted, perhaps
edited folder) beside the pinned original, on the same inputs.

- `compare_builds`: both compiled by nvcc alone with the same flags for one target; each
  kernel's SASS compared (identical or not, the first differing instructions, the
  instruction-mix difference) and ptxas's registers / shared memory / spills of both. No GPU.
- `run_side_by_side`: both built as torch extensions and run through the same check and timing
  steps as `annotate run` (same seed, so the same inputs), then `compare_records` (pure) lines
  the two records up: verification of both, time and % of peak of both, the ratio.

A compile error in the copy is reported against the learner's files (the staged copy's path
in nvcc's messages is replaced by the folder's), with nvcc's first errors.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass
from pathlib import Path

from annotate.config import Config
from annotate.errors import AnnotateError, UsageError
from annotate.harness.ptxas import KernelResources
from annotate.harness.record import RunRecord
from annotate.harness.sassdiff import KernelDiff, diff_kernel, pair_kernels, parse_sass, template_name
from annotate.harness.spec import KernelSpec, load_spec_dir

PINNED = "pinned"  # RunRecord.source of the catalog's own harness


def load_source_spec(kernel: str, folder: Path) -> KernelSpec:
    """The copy's spec; it must be a copy of `kernel` (same name, so the same seeds)."""
    folder = Path(folder).expanduser().resolve()
    if not (folder / "spec.yaml").is_file():
        raise UsageError(f"{folder}: no spec.yaml here",
                         hint=f"make a copy with `annotate extract {kernel} --into {folder}`")
    spec = load_spec_dir(folder, catalog=False)
    if spec.name != kernel:
        raise UsageError(f"{folder / 'spec.yaml'}: a copy of '{spec.name}', not of '{kernel}'",
                         hint=f"annotate run {spec.name} --source {folder}")
    return spec


# nvcc's front end (`f.cu(12): error: …`, `catastrophic error`) and the host compiler (`f.cu:12:3: error: …`)
_LOCATED = re.compile(r"^\s*(?P<file>\S.*?)(?:\((?P<l1>\d+)\)|:(?P<l2>\d+)(?::\d+)?):\s*"
                      r"(?:catastrophic error|fatal error|error)\s*:?\s*(?P<text>.*)$")
_FULL_LOG = re.compile(r"full log: (\S+)")


def in_their_files(config: Config, err: AnnotateError, spec: KernelSpec) -> AnnotateError:
    """The compile error with the staged copies' paths (<cache>/builds/<kernel>-<key>/src/x)
    replaced by the learner's own files (<folder>/x); lines are the same (staging copies).

    One line names the first error's file and line (`<folder>/kernel.cu:2122: expected a ";"`);
    the hint holds the code at that line, nvcc's next errors and where the full log is."""
    staged = re.compile(re.escape(str(config.builds_dir())) + r"/" + re.escape(spec.name) + r"-[0-9a-f]+/src/")
    msg = staged.sub(str(spec.folder) + "/", err.message)
    hint = staged.sub(str(spec.folder) + "/", err.hint or "")
    lines = msg.splitlines()
    located = [(i, m) for i, m in ((i, _LOCATED.match(ln)) for i, ln in enumerate(lines)) if m]
    if not located:
        head = msg.replace(f"compiling {spec.name} failed", f"compiling the copy in {spec.folder} failed")
        return type(err)(head, hint=hint or None)
    i, m = located[0]
    where = f"{m.group('file')}:{m.group('l1') or m.group('l2')}"
    rest = []
    if i + 1 < len(lines) and not _LOCATED.match(lines[i + 1]):
        rest.append(f"the line: {lines[i + 1].strip()}")
    more = [lines[j].strip() for j, _ in located[1:]]
    if more:
        rest.append(f"then {len(more)} more: " + " | ".join(more[:3]) + (" | …" if len(more) > 3 else ""))
    log = _FULL_LOG.search(hint)
    if log:
        rest.append(f"nvcc's full log: {log.group(1)}")
    return type(err)(f"{where}: {m.group('text').strip()} (the copy in {spec.folder} does not compile)",
                     hint="\n    ".join(rest) or None)


# ---- compile only --------------------------------------------------------------------------------

@dataclass(frozen=True)
class BuildComparison:
    arch: str
    nvcc: str
    kernels: tuple[KernelDiff, ...]  # per kernel of either build
    pinned: tuple[KernelResources, ...]
    source: tuple[KernelResources, ...]
    pinned_seconds: float
    source_seconds: float

    @property
    def identical(self) -> bool:
        return bool(self.kernels) and all(k.identical for k in self.kernels)

    def resources(self) -> list[tuple[str, KernelResources | None, KernelResources | None]]:
        """(kernel, pinned's, copy's) per kernel, pinned order first."""
        a = {(r.source, r.mangled): r for r in self.pinned}
        b = {(r.source, r.mangled): r for r in self.source}
        keys = list(a) + [k for k in b if k not in a]
        return [((a.get(k) or b.get(k)).short_name(90), a.get(k), b.get(k)) for k in keys]

    def to_json(self) -> dict:
        return {"arch": self.arch, "nvcc": self.nvcc, "identical": self.identical,
                "kernels": [k.to_json() for k in self.kernels],
                "pinned": [r.to_json() for r in self.pinned], "source": [r.to_json() for r in self.source],
                "pinned_seconds": round(self.pinned_seconds, 2), "source_seconds": round(self.source_seconds, 2)}


def _kernels_of(config: Config, result, spec: KernelSpec) -> dict[str, object]:
    from annotate.harness.disasm import disassemble
    from annotate.harness.toolchain import find_binary_tools, find_toolchain

    tools = find_binary_tools(find_toolchain(config.environ), config.environ)
    out = {}
    for src in spec.sources:
        for name, k in parse_sass(disassemble(Path(result.outputs[src]), tools)).items():
            out[f"{Path(src).stem}:{name}"] = k
    return out


def compare_builds(config: Config, pinned: KernelSpec, source: KernelSpec, arch: str = "90", *,
                   pinned_build=None) -> BuildComparison:
    """Both harnesses compiled with nvcc alone for `arch` (the same flags: each spec's own,
    which an extraction copies), their kernels' SASS compared. `pinned_build`: the pinned
    harness's CompileOnlyResult for `arch`, when the caller already has it."""
    from annotate.harness.nvcc import compile_only

    t0 = time.perf_counter()
    a = pinned_build or compile_only(config, pinned, arch)
    ta = a.seconds if pinned_build is not None else time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        b = compile_only(config, source, arch)
    except AnnotateError as exc:
        raise in_their_files(config, exc, source) from None
    tb = time.perf_counter() - t0
    ka, kb = _kernels_of(config, a, pinned), _kernels_of(config, b, source)
    diffs = []
    for x, y in pair_kernels(list(ka), list(kb), base=_template_of):
        d = diff_kernel(ka.get(x) if x else None, kb.get(y) if y else None)
        diffs.append(dataclasses.replace(d, name=x or y, other=y if x and y and y != x else None))
    return BuildComparison(arch, a.nvcc, tuple(diffs), a.kernels, b.kernels, ta, tb)


def _template_of(key: str) -> str | None:
    """`launcher:flashinfer::MergeStatesKernel` for the key `launcher:_ZN10flashinfer17MergeStatesKernelI…`."""
    stem, _, mangled = key.partition(":")
    name = template_name(mangled)
    return f"{stem}:{name}" if name else None


# ---- on a GPU ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShapeComparison:
    shape: str
    pinned_passed: bool
    source_passed: bool
    pinned_rel_l2: float | None
    source_rel_l2: float | None
    pinned_us: float | None = None
    source_us: float | None = None
    pinned_pct: float | None = None
    source_pct: float | None = None

    @property
    def ratio(self) -> float | None:
        """copy time / pinned time (below 1: the copy is faster)."""
        if self.pinned_us and self.source_us:
            return self.source_us / self.pinned_us
        return None

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "ratio": self.ratio}


@dataclass(frozen=True)
class RunComparison:
    kernel: str
    source: str  # the copy's folder
    seed: int
    checks: tuple[ShapeComparison, ...]
    timings: tuple[ShapeComparison, ...]
    pinned_passed: bool
    source_passed: bool

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "source": self.source, "seed": self.seed,
                "pinned_passed": self.pinned_passed, "source_passed": self.source_passed,
                "checks": [c.to_json() for c in self.checks], "timings": [t.to_json() for t in self.timings]}


def _worst_rel(c) -> float | None:
    vals = [o.rel_l2 for o in c.outputs if o.rel_l2 is not None] if c is not None else []
    return max(vals) if vals else None


def compare_records(pinned: RunRecord, source: RunRecord) -> RunComparison:
    """The two records of one side-by-side run, shape by shape (trials collapsed: a shape
    passed when all its trials did; the error shown is the worst)."""
    def by_shape(record: RunRecord) -> dict[str, list]:
        out: dict[str, list] = {}
        for c in record.checks:
            out.setdefault(c.shape, []).append(c)
        return out

    pa, pb = by_shape(pinned), by_shape(source)
    checks = []
    for shape in list(pa) + [s for s in pb if s not in pa]:
        ca, cb = pa.get(shape, []), pb.get(shape, [])
        ra = [r for r in (_worst_rel(c) for c in ca) if r is not None]
        rb = [r for r in (_worst_rel(c) for c in cb) if r is not None]
        checks.append(ShapeComparison(shape, bool(ca) and all(c.passed for c in ca),
                                      bool(cb) and all(c.passed for c in cb),
                                      max(ra) if ra else None, max(rb) if rb else None))
    ta = {t.shape: t for t in pinned.timings}
    tb = {t.shape: t for t in source.timings}
    timings = []
    for shape in list(ta) + [s for s in tb if s not in ta]:
        a, b = ta.get(shape), tb.get(shape)
        timings.append(ShapeComparison(
            shape, bool(a and a.check and a.check.passed), bool(b and b.check and b.check.passed),
            _worst_rel(a.check) if a else None, _worst_rel(b.check) if b else None,
            a.kernel.median_us if a and a.kernel else None, b.kernel.median_us if b and b.kernel else None,
            a.pct_peak if a else None, b.pct_peak if b else None))
    return RunComparison(pinned.kernel, source.source or "", source.seed, tuple(checks), tuple(timings),
                         pinned.passed, source.passed)


def side_by_side(config: Config, pinned, source, opts, *, seed: int, device, builds, peaks=None,
                 log=None, now: time.struct_time | None = None) -> tuple[RunRecord, RunRecord, RunComparison]:
    """The two harnesses (annotate.harness.runner.Harness: the pinned one, the copy) through
    the same check and timing steps on the same inputs; (pinned record, copy's record,
    comparison). Everything but building runs here, so the tests drive it on the CPU."""
    from annotate.harness import runner
    from annotate.harness.staging import spec_pins

    log = log or runner._stderr
    now = now or time.gmtime()
    check_shapes, time_shapes = pinned.spec.select(list(opts.shapes) if opts.shapes else None)
    trials = opts.trials or pinned.spec.trials
    records = []
    for h, build, label in ((pinned, builds[0], PINNED), (source, builds[1], str(source.spec.folder))):
        log(f"{h.spec.name} ({label}):")
        checks, fatal = runner.run_checks(h, check_shapes, seed, trials, log)
        timings: tuple = ()
        if opts.do_time and time_shapes and not fatal:
            timings, peaks, fatal = runner.run_timings(h, time_shapes, seed, log, peaks=peaks)
        rec = runner.assemble(config, h.spec, pins=spec_pins(config, h.spec),
                              created=time.strftime("%Y-%m-%dT%H:%M:%SZ", now), seed=seed,
                              command=opts.command or f"annotate run {pinned.spec.name} --source {source.spec.folder}",
                              device=device, build=build, checks=checks, timings=timings, peaks=peaks,
                              fatal=fatal)
        records.append(dataclasses.replace(rec, source=label))
    return records[0], records[1], compare_records(records[0], records[1])


def record_paths(config: Config, kernel: str, now: time.struct_time) -> tuple[Path, Path]:
    """Where the two records of one side-by-side run go (the copy's is marked `-source`)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", now)
    return config.result_record(kernel, stamp), config.result_record(kernel, stamp + "-source")


def run_side_by_side(config: Config, pinned: KernelSpec, source: KernelSpec, opts, log=None):
    """On a GPU: build both, run both on the same inputs, write both records; (pinned record,
    copy's record, comparison, the two record files)."""
    from annotate.harness import runner
    from annotate.harness.jit import ensure_built
    from annotate.harness.record import write_record
    from annotate.harness.spec import load_reference
    from annotate.harness.verify import new_base_seed

    log = log or runner._stderr
    runner.require_gpu()
    seed = opts.seed if opts.seed is not None else new_base_seed()
    log(f"{pinned.name}: seed {seed} (replay with --seed {seed}), pinned and {source.folder}")
    arch = runner.gpu_arch()
    ext_a, build_a = ensure_built(config, pinned, arch, verbose=opts.verbose)
    try:
        ext_b, build_b = ensure_built(config, source, arch, verbose=opts.verbose)
    except AnnotateError as exc:
        raise in_their_files(config, exc, source) from None
    ha = runner.Harness(pinned, load_reference(pinned), ext_a)
    hb = runner.Harness(source, load_reference(source, tag="source"), ext_b)
    now = time.gmtime()
    a, b, cmp = side_by_side(config, ha, hb, opts, seed=seed, device=runner.device_info(),
                             builds=(build_a, build_b), log=log, now=now)
    paths = record_paths(config, pinned.name, now)
    write_record(paths[0], a)
    write_record(paths[1], b)
    return a, b, cmp, paths


# ---- text ----------------------------------------------------------------------------------------

def _res(r: KernelResources | None) -> str:
    if r is None:
        return "(absent)"
    return (f"{r.registers} regs, {r.smem_static} B smem, spills {r.spill_stores}/{r.spill_loads} B, "
            f"stack {r.stack} B")


def _delta(a: KernelResources | None, b: KernelResources | None) -> str:
    if a is None or b is None:
        return ""
    parts = []
    for label, x, y in (("registers", a.registers, b.registers), ("smem", a.smem_static, b.smem_static),
                        ("spill stores", a.spill_stores, b.spill_stores), ("stack", a.stack, b.stack)):
        if x is not None and y is not None and x != y:
            parts.append(f"{label} {'+' if y > x else '−'}{abs(y - x)}")
    return ", ".join(parts)


def build_comparison_lines(kernel: str, folder: Path, cmp: BuildComparison) -> list[str]:
    out = [f"{kernel}: pinned vs {folder}, sm_{cmp.arch}, nvcc {cmp.nvcc} "
           f"(compile {cmp.pinned_seconds:.1f} s / {cmp.source_seconds:.1f} s)"]
    res = {f"{r.source and Path(r.source).stem}:{r.mangled}": r for r in cmp.pinned}
    res_b = {f"{r.source and Path(r.source).stem}:{r.mangled}": r for r in cmp.source}
    for k in cmp.kernels:
        a, b = res.get(k.name), res_b.get(k.other or k.name)
        shown = (a or b).short_name(240) if (a or b) else k.name
        out.append(f"  {shown}")
        if k.other:
            copy_name = b.short_name(240) if b else k.other
            out.append(f"    paired with the copy's {copy_name} (the same template; its arguments changed)")
        out.append(f"    pinned {_res(a)}")
        out.append(f"    copy   {_res(b)}" + (f"   ({_delta(a, b)})" if _delta(a, b) else ""))
        if k.identical:
            out.append(f"    SASS identical ({k.instructions[0]} instructions)")
        else:
            out.append(f"    SASS differs: {k.instructions[0]} -> {k.instructions[1]} instructions"
                       + (f"; mix: {k.mix_text()}" if k.mix else ""))
            for line in k.first_difference:
                out.append(f"      {line}")
    same = sum(k.identical for k in cmp.kernels)
    out.append(f"  {same} of {len(cmp.kernels)} kernels have identical SASS")
    return out


def print_build_comparison(kernel: str, folder: Path, cmp: BuildComparison) -> None:
    from annotate.terminal import echo

    for line in build_comparison_lines(kernel, folder, cmp):
        echo(line)


def _f(x, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def run_comparison_lines(cmp: RunComparison, paths=()) -> list[str]:
    out = [f"{cmp.kernel}: pinned vs {cmp.source} (seed {cmp.seed}: both on the same inputs)",
           f"  {'shape':<32} {'pinned':>22} {'copy':>22}"]
    for c in cmp.checks:
        a = f"{'ok' if c.pinned_passed else 'FAIL'} {_f(c.pinned_rel_l2, '.1e')}"
        b = f"{'ok' if c.source_passed else 'FAIL'} {_f(c.source_rel_l2, '.1e')}"
        out.append(f"  {c.shape:<32} {a:>22} {b:>22}")
    if cmp.timings:
        out.append(f"  {'timed shape':<32} {'pinned µs (% peak)':>22} {'copy µs (% peak)':>22} {'copy/pinned':>12}")
        for t in cmp.timings:
            a = f"{_f(t.pinned_us, '.1f')} ({_f(t.pinned_pct, '.0f')}%)"
            b = f"{_f(t.source_us, '.1f')} ({_f(t.source_pct, '.0f')}%)"
            flag = "" if t.source_passed else "  copy FAILED verification"
            out.append(f"  {t.shape:<32} {a:>22} {b:>22} {_f(t.ratio, '.2f'):>12}{flag}")
    out.append(f"  verification: pinned {'passed' if cmp.pinned_passed else 'FAILED'}, "
               f"copy {'passed' if cmp.source_passed else 'FAILED'}")
    for p in paths:
        out.append(f"  record: {p}")
    return out


def print_run_comparison(cmp: RunComparison, paths=()) -> None:
    from annotate.terminal import echo

    for line in run_comparison_lines(cmp, paths):
        echo(line)

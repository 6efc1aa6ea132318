"""Run records and compile-only reports as rich tables in the terminal (the `--json` output is
the same objects' to_json)."""

from __future__ import annotations

import math

from annotate.harness.record import CheckResult, RunRecord


def _fmt(x, spec: str = ".3g", none: str = "—") -> str:
    if x is None:
        return none
    if isinstance(x, str):
        return x
    return format(x, spec)


def _worst(c: CheckResult, attr: str):
    """The largest error over a check's outputs; "inf/nan" when one is not finite."""
    vals = [getattr(o, attr) for o in c.outputs]
    if any(v is None or not math.isfinite(v) for v in vals):
        return "inf/nan"
    return max(vals, default=None)


def check_rows(record: RunRecord) -> list[list[str]]:
    rows = []
    for c in record.checks:
        rel = _worst(c, "rel_l2")
        mab = max((o.max_abs for o in c.outputs if o.max_abs is not None and math.isfinite(o.max_abs)),
                  default=None)
        status = "ok" if c.passed else ("ERROR: " + c.error if c.error else "MISMATCH")
        rows.append([_fmt(c.shape), _fmt(c.trial, "d", ""), _fmt(rel, ".2e"), _fmt(mab, ".2e"), status])
    return rows


def timing_rows(record: RunRecord) -> list[list[str]]:
    rows = []
    for t in record.timings:
        if t.kernel is None:  # cut short by a CUDA error
            continue
        outs = t.check.outputs if t.check else ()
        rel = max((o.rel_l2 for o in outs if o.rel_l2 is not None and math.isfinite(o.rel_l2)), default=None)
        rate = f"{_fmt(t.tflops, '.1f')} TFLOP/s" if t.bound == "compute" else f"{_fmt(t.gbps, '.0f')} GB/s"
        rows.append([
            _fmt(t.shape), _fmt(rel, ".1e"), _fmt(t.kernel.median_us, ".1f"), rate,
            f"{_fmt(t.pct_peak, '.0f')}%", _fmt(t.torch_us, ".1f"), _fmt(t.torch_vs_kernel, ".2f"),
        ])
    return rows


def print_record(record: RunRecord, path=None, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    dev = record.device
    build = record.build
    console.print(f"[bold]{record.kernel}[/] — {record.title or ''}")
    if dev is not None:
        console.print(f"  device {dev.name} (driver {dev.driver}), torch {dev.torch}, "
                      f"CUDA {dev.cuda}; seed {record.seed}")
    pins = ", ".join(f"{k}@{str(v)[:12]}" for k, v in record.pins.items())
    if build is not None:
        console.print(f"  pins {pins}; build {'cache hit' if build.cached else 'compiled'} "
                      f"(load {_fmt(build.load_s, '.2f')} s, compile {_fmt(build.compile_s, '.1f')} s)")
    if record.peaks is not None:
        p = record.peaks
        console.print(f"  measured peaks: copy {_fmt(p.copy_gbps, '.0f')} GB/s, "
                      f"bf16 matmul {_fmt(p.bf16_tflops, '.0f')} TFLOP/s")
    if record.checks:
        t = Table(title="verification (float64 reference)")
        for col in ("shape", "trial", "rel L2", "max abs", "status"):
            t.add_column(col)
        for row in check_rows(record):
            t.add_row(*row, style=None if row[-1] == "ok" else "bold red")
        console.print(t)
    if record.timings:
        peak = "copy bandwidth" if record.bound == "memory" else "bf16 matmul"
        t = Table(title=f"timing (median, L2 flushed; % of measured {peak})")
        for col in ("shape", "rel L2", "µs", "rate", "% peak", "torch µs", "torch/kernel"):
            t.add_column(col, justify="right" if col not in ("shape",) else "left")
        for row in timing_rows(record):
            t.add_row(*row)
        console.print(t)
    if record.fatal:
        console.print(f"  [bold red]stopped by a CUDA error:[/] {record.fatal}")
    status = "[green]PASSED[/]" if record.passed else "[bold red]FAILED[/]"
    console.print(f"  {status}; record: {path or ''}")


def print_compile_only(result, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    srcs = ", ".join(f"{k} {v:.1f} s" for k, v in result.sources.items())
    console.print(f"[bold]{result.kernel}[/]: nvcc {result.nvcc}, sm_{result.arch}, {result.seconds:.1f} s ({srcs})")
    t = Table(title="ptxas resources per kernel (static shared memory; dynamic is set at launch)")
    for col in ("kernel", "source", "regs", "smem B", "stack B", "spill st/ld B"):
        t.add_column(col, justify="left" if col in ("kernel", "source") else "right", overflow="fold")
    for k in result.kernels:
        t.add_row(k.short_name(), k.source, _fmt(k.registers, "d"), _fmt(k.smem_static, "d"),
                  _fmt(k.stack, "d"), f"{_fmt(k.spill_stores, 'd')}/{_fmt(k.spill_loads, 'd')}")
    console.print(t)
    console.print(f"  objects and ptxas logs in {result.directory}")

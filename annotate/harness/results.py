"""Rendering run records and compile-only reports as rich tables (and Markdown for the docs)."""

from __future__ import annotations

import json
from pathlib import Path


def _fmt(x, spec: str = ".3g", none: str = "—") -> str:
    if x is None:
        return none
    if isinstance(x, str):
        return x
    return format(x, spec)


def check_rows(record: dict) -> list[list[str]]:
    rows = []
    for c in record.get("checks", []):
        outs = c.get("outputs") or []
        rel = max((o["rel_l2"] for o in outs if isinstance(o["rel_l2"], (int, float))), default=None)
        mab = max((o["max_abs"] for o in outs if isinstance(o["max_abs"], (int, float))), default=None)
        if any(not isinstance(o["rel_l2"], (int, float)) for o in outs):
            rel = "inf/nan"
        status = "ok" if c["passed"] else ("ERROR: " + c["error"] if c.get("error") else "MISMATCH")
        rows.append([c["shape"], str(c.get("trial", "")), _fmt(rel, ".2e"), _fmt(mab, ".2e"), status])
    return rows


def timing_rows(record: dict) -> list[list[str]]:
    rows = []
    for t in record.get("timings", []):
        if "kernel" not in t:  # cut short by a CUDA error
            continue
        outs = t["check"].get("outputs") or []
        rel = max((o["rel_l2"] for o in outs if isinstance(o["rel_l2"], (int, float))), default=None)
        rate = f"{t['TFLOPs']:.1f} TFLOP/s" if t.get("bound") == "compute" else f"{t['GBps']:.0f} GB/s"
        rows.append([
            t["shape"], _fmt(rel, ".1e"), f"{t['kernel']['median_us']:.1f}", rate,
            f"{t['pct_peak']:.0f}%", _fmt(t.get("torch_us"), ".1f"),
            _fmt(t.get("torch_vs_kernel"), ".2f"),
        ])
    return rows


def print_record(record: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    dev = record.get("device", {})
    build = record.get("build", {})
    console.print(f"[bold]{record['kernel']}[/] — {record.get('title', '')}")
    console.print(f"  device {dev.get('name')} (driver {dev.get('driver')}), torch {dev.get('torch')}, "
                  f"CUDA {dev.get('cuda')}; seed {record['seed']}")
    pins = ", ".join(f"{k}@{v[:12]}" for k, v in record.get("pins", {}).items())
    console.print(f"  pins {pins}; build {'cache hit' if build.get('cached') else 'compiled'} "
                  f"(load {build.get('load_s', 0):.2f} s, compile {_fmt(build.get('compile_s'), '.1f')} s)")
    if record.get("peaks"):
        p = record["peaks"]
        console.print(f"  measured peaks: copy {p['copy_GBps']:.0f} GB/s, bf16 matmul {p['bf16_TFLOPs']:.0f} TFLOP/s")
    if record.get("checks"):
        t = Table(title="verification (float64 reference)")
        for col in ("shape", "trial", "rel L2", "max abs", "status"):
            t.add_column(col)
        for row in check_rows(record):
            t.add_row(*row, style=None if row[-1] == "ok" else "bold red")
        console.print(t)
    if record.get("timings"):
        t = Table(title=f"timing (median, L2 flushed; % of measured {'copy bandwidth' if record.get('bound') == 'memory' else 'bf16 matmul'})")
        for col in ("shape", "rel L2", "µs", "rate", "% peak", "torch µs", "torch/kernel"):
            t.add_column(col, justify="right" if col not in ("shape",) else "left")
        for row in timing_rows(record):
            t.add_row(*row)
        console.print(t)
    if record.get("fatal"):
        console.print(f"  [bold red]stopped by a CUDA error:[/] {record['fatal']}")
    status = "[green]PASSED[/]" if record["passed"] else "[bold red]FAILED[/]"
    console.print(f"  {status}; record: {record.get('_path', '')}")


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


def compile_only_json(result) -> dict:
    from dataclasses import asdict

    d = asdict(result)
    d["kernels"] = [asdict(k) for k in result.kernels]
    return d


def markdown_table(records: list[dict]) -> str:
    """kernel × shape × error × time × % of peak × PyTorch time, for docs/harness.md."""
    lines = ["| kernel | shape | rel. L2 error | max abs error | time (µs) | rate | % of peak | PyTorch (µs) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        for t in r.get("timings", []):
            if "kernel" not in t:
                continue
            outs = t["check"].get("outputs") or []
            rel = max((o["rel_l2"] for o in outs), default=None)
            mab = max((o["max_abs"] for o in outs), default=None)
            rate = f"{t['TFLOPs']:.1f} TFLOP/s" if t.get("bound") == "compute" else f"{t['GBps']:.0f} GB/s"
            peak = "copy" if t.get("bound") == "memory" else "bf16 mm"
            lines.append(f"| {r['kernel']} | {t['shape']} | {_fmt(rel, '.1e')} | {_fmt(mab, '.1e')} | "
                         f"{t['kernel']['median_us']:.1f} | {rate} | {t['pct_peak']:.0f}% of {peak} | "
                         f"{_fmt(t.get('torch_us'), '.1f')} |")
    return "\n".join(lines) + "\n"


def load_record(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))

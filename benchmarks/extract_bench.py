"""Measure `annotate extract`'s reduction: per catalog kernel, cold (a fresh extract cache: every
oracle compile runs) and cached, printed side by side with what naive delta debugging would
cost (one compile per candidate).

    ANNOTATE_CACHE_DIR=<cache> python benchmarks/extract_bench.py [KERNEL ...] [--arch 90 ...]

The pinned checkouts are read from <cache>; the cold runs use a temporary cache that links to
them (nothing in <cache> is written).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotate.config import Config  # noqa: E402
from annotate.extract.api import extracted_lines, make_plan, reduce_plan  # noqa: E402
from annotate.harness.spec import kernel_names, load_spec  # noqa: E402
from annotate.index.api import load_index  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="*")
    ap.add_argument("--arch", action="append")
    args = ap.parse_args()
    real = Config.load()
    arches = tuple(args.arch or ("90", "80"))
    names = args.kernels or kernel_names(real)
    print(f"{'kernel':<16}{'static':>7}{'dead':>6}{'cands':>7}{'tests':>7}{'dropped':>8}"
          f"{'cold s':>9}{'cpu s':>8}{'s/test':>8}{'cached s':>10}{'lines':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        cold = Config.load(environ=dict(os.environ), cache_dir=Path(tmp))
        os.symlink(real.checkouts_dir(), cold.checkouts_dir())
        for name in names:
            spec = load_spec(real, name)
            plan = make_plan(real, spec, load_index(real, [spec.upstream]))
            c0, t0 = _cpu(), time.perf_counter()
            red = reduce_plan(cold, plan, arches)
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            t1 = time.perf_counter()
            again = reduce_plan(cold, plan, arches)
            hit = time.perf_counter() - t1
            assert again.cached
            keep = set(plan.reach.by_name) - set(red.dead) - set(red.dropped)
            print(f"{name:<16}{red.static:>7}{len(red.dead):>6}{red.candidates:>7}{red.tests:>7}"
                  f"{len(red.dropped):>8}{wall:>9.1f}{cpu:>8.1f}{wall / max(red.tests, 1):>8.1f}{hit:>10.2f}"
                  f"{extracted_lines(plan, keep):>6}/{plan.closure.lines:<6}")
    print(f"targets: {', '.join('sm_' + a for a in arches)}; cpu s = nvcc's user+system time; "
          "naive delta debugging would run one compile per candidate (cands)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`annotate status --courses` side by side with `annotate check`: both read the same index
(warm: the cache named by ANNOTATE_CACHE_DIR) and the same annotation files, so the coverage
should cost about what the check costs. Each command runs in fresh processes, alternated, and
the medians are printed with their ratio.

    ANNOTATE_CACHE_DIR=<cache> python benchmarks/coverage_bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

COMMANDS = {"check": ["check"], "status --courses": ["status", "--courses", "--json"]}


def run(args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "annotate", *args], cwd=REPO, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    for argv in COMMANDS.values():  # warm the index cache and the file system first
        run(argv)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, argv in COMMANDS.items():
            times[name].append(run(argv))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    for name, ts in times.items():
        print(f"annotate {name:17s} median {med[name]:6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in ts)})")
    print(f"ratio status --courses / check: {med['status --courses'] / med['check']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

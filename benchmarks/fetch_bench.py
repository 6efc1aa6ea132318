"""Cold and warm `annotate fetch` times for each route, each run a fresh `python -m annotate` process.

    ANNOTATE_URL_FLASHINFER=... ANNOTATE_URL_FLASH_ATTENTION=... ANNOTATE_URL_CUTLASS=... ANNOTATE_URL_CCCL=... \
    python benchmarks/fetch_bench.py [--repeat N] [--routes git,archive]

The git route is measured against the mirrors those variables name (local paths or URLs).

git     : URL overrides to local snapshots (DIR/<owner>+<repo>/repo, as the `fetch` search tool
          leaves them), the way a user with an internal mirror runs it; skipped without them.
archive : pip download from the package index (network), then the same run with the
          download already in the cache's downloads/ (what a re-fetch after `rm -r checkouts`
          costs).
warm    : a second `annotate fetch` on the same cache (record present: no network, no hashing).
verify  : `annotate fetch --verify` on a warm cache (every file hashed against the lock).
auto    : plain `annotate fetch` with the pin file's github.com URLs: on a host that cannot reach
          GitHub the git route gives up at once and the archive route runs.
Every run uses a new temporary ANNOTATE_CACHE_DIR; the user's cache is never touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MIRROR_VARS = ("ANNOTATE_URL_FLASHINFER", "ANNOTATE_URL_FLASH_ATTENTION", "ANNOTATE_URL_CUTLASS", "ANNOTATE_URL_CCCL")


def run(env: dict[str, str], *args: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "annotate", "fetch", "-q", *args], cwd=REPO, env=env,
                          capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"annotate fetch {' '.join(args)} failed:\n{proc.stderr}")
    return dt


def bench(env_extra: dict[str, str], args: list[str], repeat: int, downloads: Path | None = None,
          keep_downloads: Path | None = None):
    """(cold, warm, verify) times; `downloads` seeds each cache's downloads/, `keep_downloads` saves the first."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("ANNOTATE_")}
    cold, warm, verify = [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="annotate-bench-") as tmp:
            cache = Path(tmp) / "cache"
            env = {**base, **env_extra, "ANNOTATE_CACHE_DIR": str(cache)}
            if downloads is not None:
                shutil.copytree(downloads, cache / "downloads")
            cold.append(run(env, *args))
            warm.append(run(env, *args))
            verify.append(run(env, "--verify", *args))
            if keep_downloads is not None and not keep_downloads.exists():
                shutil.copytree(cache / "downloads", keep_downloads)
    return cold, warm, verify


def fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):6.2f} s" + (f" (min {min(xs):.2f}, max {max(xs):.2f})" if len(xs) > 1 else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--routes", default="git,archive")
    a = ap.parse_args()
    routes = a.routes.split(",")
    rows = []
    if "git" in routes:
        mirrors = {v: os.environ[v] for v in MIRROR_VARS if os.environ.get(v)}
        if len(mirrors) == len(MIRROR_VARS):
            rows.append(("git (mirrors)", *bench(mirrors, ["--via", "git"], a.repeat)))
        else:
            print(f"git: set {', '.join(MIRROR_VARS)} to mirrors to measure the git route; skipped",
                  file=sys.stderr)
    if "archive" in routes:
        with tempfile.TemporaryDirectory(prefix="annotate-bench-dl-") as keep:
            saved = Path(keep) / "downloads"
            # downloading from the index once is enough to show its cost (and spares PyPI)
            rows.append(("archive (pip download from PyPI)",
                         *bench({}, ["--via", "archive"], 1, keep_downloads=saved)))
            rows.append(("archive (download already cached)",
                         *bench({}, ["--via", "archive"], a.repeat, downloads=saved)))
            # the default `annotate fetch` on a host without GitHub: git fails fast, archive follows
            rows.append(("auto, no GitHub (download cached)", *bench({}, [], a.repeat, downloads=saved)))
    print(f"annotate fetch, both pins (flashinfer + flash-attention with cutlass); python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cpus; median of runs")
    print(f"{'route':36} {'cold':>24} {'warm':>24} {'--verify (warm)':>24}")
    for label, cold, warm, verify in rows:
        print(f"{label:36} {fmt(cold):>24} {fmt(warm):>24} {fmt(verify):>24}")


if __name__ == "__main__":
    main()

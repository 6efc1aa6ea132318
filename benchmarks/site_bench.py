"""Site build speed and size, side by side with Pygments highlighting the same files.

    ANNOTATE_CACHE_DIR=... python benchmarks/site_bench.py [--out DIR] [--skip-pygments] [--skip-browser]

Measures, on the real pins (fetched, index cache warm):
  1. Pygments alone (CudaLexer/PythonLexer + HtmlFormatter, one process) over every file the
     site renders — the baseline the whole build is compared with;
  2. a cold build (empty output dir, empty token cache; index loaded from its cache);
  3. a no-op rebuild (nothing changed) in a fresh process, as `annotate build` runs it;
  4. a rebuild after editing one annotation file: in a fresh process (CLI: loads the index)
     and in-process with the index already loaded (what `annotate serve` does);
  5. output size against the source bytes rendered;
  6. the largest page (attention/prefill.cuh) loaded in headless Chromium (navigation start
     to the load event, from the Navigation Timing API).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

EDIT_FILE = "annotations/flashinfer/include/flashinfer/norm.cuh.yaml"
LARGEST = "src/flashinfer/include/flashinfer/attention/prefill.cuh.html"


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def pygments_pass(files: list[tuple[str, str]]) -> tuple[float, float, int]:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CudaLexer, PythonLexer

    fmt = HtmlFormatter(linenos=False)
    lexers = {"cuda": CudaLexer(), "python": PythonLexer()}
    out = 0
    t, c = time.perf_counter(), cpu()
    for path, text in files:
        out += len(highlight(text, lexers["python" if path.endswith(".py") else "cuda"], fmt))
    return time.perf_counter() - t, cpu() - c, out


def run_cli(args: list[str], env: dict) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "annotate", *args], cwd=REPO, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def chromium_load(page: Path) -> float:
    from site_browser import chromium

    with chromium(1600, 1000) as d:
        d.get(page.as_uri())  # warm the browser process itself
        times = []
        for _ in range(3):
            d.get("about:blank")
            d.get(page.as_uri())
            times.append(d.execute_script(
                "const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime;"))
        return min(times) / 1000.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--skip-pygments", action="store_true")
    ap.add_argument("--skip-browser", action="store_true")
    a = ap.parse_args()

    from annotate.config import Config
    from annotate.project import open_project
    from site_builder import build
    from site_builder.context import rendered_paths

    config = Config.load()
    served = open_project(config, fetch=True)  # `annotate serve` keeps this one's index
    pins, index = dict(served.pins), served.index
    out = a.out or Path(tempfile.mkdtemp(prefix="annotate-site-bench-"))
    files = [(p, index.source(u, p)) for (u, p) in rendered_paths(index, pins)]
    src_bytes = sum(len(t.encode("utf-8")) for _, t in files)
    rows = [("files rendered", f"{len(files)}"), ("source bytes rendered", f"{src_bytes / 1e6:.2f} MB")]

    if not a.skip_pygments:
        wall, c, size = pygments_pass(files)
        rows.append(("Pygments alone (1 process)", f"{wall:.1f} s wall, {c:.1f} s CPU, {size / 1e6:.1f} MB HTML"))

    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(config.site_cache_dir(), ignore_errors=True)
    t, c = time.perf_counter(), cpu()
    rep = build.build_site(open_project(config, fetch=True), out, jobs=a.jobs)
    rows.append(("cold build (whole site)", f"{time.perf_counter() - t:.1f} s wall, {cpu() - c:.1f} s CPU "
                 f"({rep.pages_rendered} pages; " + ", ".join(f"{k} {v:.1f}" for k, v in rep.timings) + ")"))

    env = dict(os.environ)
    rows.append(("no-op rebuild (`annotate build`, fresh process)",
                 f"{run_cli(['build', '--out', str(out), '-q'], env):.2f} s"))
    t = time.perf_counter()
    rep = build.build_site(open_project(config, fetch=True), out)
    rows.append(("no-op rebuild (build_site call)", f"{time.perf_counter() - t:.3f} s (noop={rep.noop})"))

    # `annotate serve` builds once with the index it keeps; later rebuilds reuse it.
    build.build_site(served.with_fresh_annotations(), out)
    t = time.perf_counter()
    build.build_site(served.with_fresh_annotations(), out)
    rows.append(("nothing changed (index kept, as `annotate serve`)", f"{time.perf_counter() - t:.2f} s"))

    edit = REPO / EDIT_FILE
    original = edit.read_bytes()
    try:
        edit.write_bytes(original.replace(b"Normalisation kernels:", b"Normalisation kernels (bench edit 1):", 1))
        rows.append(("one annotation edited (`annotate build`, fresh process)",
                     f"{run_cli(['build', '--out', str(out), '-q'], env):.2f} s"))
        edit.write_bytes(original.replace(b"Normalisation kernels:", b"Normalisation kernels (bench edit 2):", 1))
        t = time.perf_counter()
        rep = build.build_site(served.with_fresh_annotations(), out)
        rows.append(("one annotation edited (index kept, as `annotate serve`)",
                     f"{time.perf_counter() - t:.2f} s ({rep.pages_rendered} source page(s) rendered; "
                     + ", ".join(f"{k} {v:.2f}" for k, v in rep.timings) + ")"))
    finally:
        edit.write_bytes(original)
    build.build_site(served.with_fresh_annotations(), out)

    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    srcs = sum(p.stat().st_size for p in (out / "src").rglob("*.html"))
    rows.append(("output size", f"{total / 1e6:.1f} MB in all ({srcs / 1e6:.1f} MB source pages) = "
                 f"{total / src_bytes:.2f}x the source bytes"))
    if not a.skip_browser:
        page = out / LARGEST
        rows.append(("largest page in headless Chromium", f"{page.stat().st_size / 1e3:.0f} kB, "
                     f"load event after {chromium_load(page):.2f} s"))
    width = max(len(k) for k, _ in rows)
    print(f"site benchmark ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}); output {out}")
    for k, v in rows:
        print(f"  {k.ljust(width)}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

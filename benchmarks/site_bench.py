"""The site's speed, side by side with Pygments and Doxygen over the same files, in one run.

    ANNOTATE_CACHE_DIR=<cache with the pins fetched> python benchmarks/site_bench.py
        [--runs N] [--jobs N] [--symbol SYMBOL] [--skip-doxygen] [--browser] [--keep]

Everything runs in a fresh temporary directory: a cache whose checkouts are hard links to the
fetched ones (the user's cache is only read), and a copy of the repository's inputs
(`vendor_kernels/`, `annotations/`, `schema/`, named by $ANNOTATE_ROOT) so that the note edits
never touch the repository. Each row is a fresh process, timed from the outside:

  Pygments     CudaLexer / PythonLexer + HtmlFormatter(linenos="table") over exactly the files
               the site renders, one process, each page written to a file: the baseline;
  Doxygen      the Debian package (installed here with apt-get when missing), its
               cross-referenced source browser, EXTRACT_ALL, no dot graphs, the same files;
  cold         `annotate build` into an empty cache (index + render) and an empty output dir;
  render only  `annotate build` again with the index cached, an empty output dir and an empty
               token cache (what the site caches of the index alone, traces and the search
               index's part, stays cached like the index);
  no-op        `annotate build` with nothing changed (median of 3);
  note edit    one function note's text edited, then `annotate build` (median of 3 edits);
  serve        the same edit under `annotate serve`: its rebuild after a save, timed inside the
               serving process (the first save, then the median of three more);
  show         `annotate show SYMBOL` on the warm cache (median of 3, after one warm-up).

The machine is shared, so absolute times move with its load: the ratios against the baselines
measured in the same run are what to compare. CPU is the CPU time of the process and every
process it waited for; peak memory is the largest sum of the proportional set sizes (PSS) of
the process tree, sampled every 250 ms (forked workers share pages, PSS counts them once). The
sampler runs in this process, on the same cores: reading a process's smaps_rollup costs about
2.5 ms per 600 MB, so sampling three build processes every 50 ms took some 15% of a core from the
build being timed (and 8% from Doxygen), every 250 ms about 3%.
Under load from other sessions, Linux's autogroup scheduler gives this session one share of
the machine, however many processes it runs: the build's parallel workers then gain nothing
over one process and the wall-time ratios approach the CPU-time ratios, which are printed too.

The commands run with Python's bytecode cache on (as an installed package has it; the
repository's modules are compiled first), whatever PYTHONDONTWRITEBYTECODE says here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

EDIT_FILE = "annotations/flashinfer/include/flashinfer/norm.cuh.yaml"
EDIT_FROM = "Pass 1 accumulates the sum of squares"  # in the summary of flashinfer::norm::RMSNormKernel
SYMBOL = "flashinfer::norm::RMSNormKernel"
LARGEST = "src/flashinfer/include/flashinfer/attention/prefill.cuh.html"
INPUTS = ("vendor_kernels", "annotations", "schema")  # what $ANNOTATE_ROOT must hold
SAMPLE_EVERY = 0.25  # seconds between two samples of the memory of a process tree

PYGMENTS = r"""
import json, sys
from pathlib import Path
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer, PythonLexer
files, out = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])
fmt = HtmlFormatter(linenos="table")
lexers = {"cuda": CudaLexer(), "python": PythonLexer()}
for i, path in enumerate(files):
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lexer = lexers["python" if path.endswith(".py") else "cuda"]
    (out / f"{i}.html").write_text(highlight(text, lexer, fmt), encoding="utf-8")
"""

# `annotate serve`'s rebuild after a save, timed inside the process that serves (as
# site_builder.serve does it: the annotations read again, the loaded index kept)
SERVE = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import site_bench
from annotate.config import Config
from annotate.project import open_project
from site_builder.build import build_site
from site_builder.serve import _State, _rebuild
out, root, first = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[4])
project = open_project(Config.load())
project.index  # as serve starts: the index loaded once and kept
build_site(project, out)
state, times = _State(), []
for n in range(first, first + 4):
    site_bench.edit_note(root, n)
    t = time.perf_counter()
    _rebuild(project.with_fresh_annotations(), out, None, state)
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""

DOXYFILE = """\
PROJECT_NAME           = "site-bench"
OUTPUT_DIRECTORY       = {out}
INPUT                  = @INCLUDE_LIST@
EXTENSION_MAPPING      = cu=C++ cuh=C++
EXTRACT_ALL            = YES
SOURCE_BROWSER         = YES
REFERENCED_BY_RELATION = YES
REFERENCES_RELATION    = YES
HAVE_DOT               = NO
GENERATE_HTML          = YES
GENERATE_LATEX         = NO
QUIET                  = YES
WARNINGS               = NO
WARN_IF_UNDOCUMENTED   = NO
WARN_LOGFILE           = {out}/warnings.txt
"""


# ---- measuring one process ---------------------------------------------------------------

@dataclass
class Run:
    wall: float
    cpu: float
    peak_mb: float = 0.0


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(cmd: list[str], env: dict, cwd: Path = REPO, memory: bool = False) -> Run:
    """Run `cmd` to completion (output discarded, failure fatal) and time it from outside."""
    c0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(SAMPLE_EVERY):
            peak = max(peak, sum(_pss_kb(p) for p in _tree(proc.pid)))

    sampler = threading.Thread(target=sample, daemon=True) if memory and Path("/proc/self/smaps_rollup").exists() else None
    if sampler:
        sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    if sampler:
        stop.set()
        sampler.join()
    if proc.returncode != 0:
        sys.exit(f"site_bench: {' '.join(map(str, cmd[:4]))} ... failed (exit {proc.returncode}):\n"
                 + err.decode("utf-8", "replace")[-3000:])
    return Run(wall, _children_cpu() - c0, peak / 1024)


def median_run(runs: list[Run]) -> Run:
    runs = sorted(runs, key=lambda r: r.wall)
    return runs[len(runs) // 2]


# ---- the temporary workspace ----------------------------------------------------------------

def link_tree(src: Path, dst: Path) -> None:
    """A copy of `src` made of hard links (plain copies across file systems)."""
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, symlinks=True, copy_function=link)


def workspace(config, base: Path) -> tuple[Path, Path]:
    """(repository inputs, empty cache with the pins' checkouts linked in) under `base`."""
    from annotate.fetch.api import read_record
    from annotate.upstreams import load_upstreams

    root, cache = base / "root", base / "cache"
    for name in INPUTS:
        shutil.copytree(config.repo_root / name, root / name)
    (cache / "checkouts").mkdir(parents=True)
    for up in load_upstreams(config).values():
        rec = read_record(config, up)
        if rec is None:
            sys.exit(f"site_bench: {up.name} is not fetched into {config.cache_dir}; run `annotate fetch` first")
        link_tree(config.checkout_dir(up.name, up.commit), cache / "checkouts" / rec.root.name)
        shutil.copy2(config.fetch_record(up.name, up.commit), cache / "checkouts")
    return root, cache


def rendered_files(env: dict) -> list[Path]:
    """The absolute paths of the source files the site renders (from the warm index)."""
    code = ("import json\nfrom annotate.config import Config\nfrom annotate.project import open_project\n"
            "from site_builder.context import rendered_paths, shown_beyond_render\n"
            "p = open_project(Config.load()); ix = p.index\n"
            "also = shown_beyond_render(ix, p.annotations)\n"
            "print(json.dumps([str(ix.root(u) / f) for u, f in rendered_paths(ix, p.selected, also=also)]))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True, text=True)
    return [Path(p) for p in json.loads(out.stdout)]


def ensure_doxygen() -> str | None:
    """The doxygen binary, installed from the Debian archive when missing (needs root)."""
    found = shutil.which("doxygen")
    if found:
        return found
    for cmd in (["apt-get", "install", "-y", "doxygen"], ["apt-get", "update"], ["apt-get", "install", "-y", "doxygen"]):
        if subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0 and \
                shutil.which("doxygen"):
            break
    return shutil.which("doxygen")


def dir_mb(d: Path) -> float:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) / 1e6


def edit_note(root: Path, n: int) -> None:
    f = root / EDIT_FILE
    text = f.read_text(encoding="utf-8")
    marker = f"{EDIT_FROM} (edit {n - 1})" if n > 1 else EDIT_FROM
    if marker not in text:
        sys.exit(f"site_bench: '{marker}' is not in {EDIT_FILE}; update EDIT_FROM")
    f.write_text(text.replace(marker, f"{EDIT_FROM} (edit {n})", 1), encoding="utf-8")


# ---- one run of every row -------------------------------------------------------------------

def one_run(config, args, base: Path) -> list[tuple[str, str, str]]:
    root, cache = workspace(config, base)
    env = {**os.environ, "ANNOTATE_CACHE_DIR": str(cache), "ANNOTATE_ROOT": str(root), "PYTHONPATH": str(REPO)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "annotate", "site_builder"], cwd=REPO, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    out = base / "site"
    annotate = [sys.executable, "-m", "annotate"]
    build = annotate + ["build", "--out", str(out), "-q"] + (["--jobs", str(args.jobs)] if args.jobs else [])

    load0 = os.getloadavg()[0]
    cold = measure(build, env, memory=True)
    site_mb = dir_mb(out)
    files = rendered_files(env)
    src_mb = sum(p.stat().st_size for p in files) / 1e6
    (base / "files.json").write_text(json.dumps([str(p) for p in files]))

    (base / "pygments").mkdir()
    pyg = measure([sys.executable, "-c", PYGMENTS, str(base / "files.json"), str(base / "pygments")], env, memory=True)
    pyg_mb = dir_mb(base / "pygments")

    dox = None
    if not args.skip_doxygen:
        doxygen = ensure_doxygen()
        if doxygen is None:
            print("site_bench: doxygen is not installed and apt-get could not install it; its row is left out")
        else:
            (base / "doxygen").mkdir()
            (base / "Doxyfile").write_text(DOXYFILE.format(out=base / "doxygen") + "".join(
                f'INPUT += "{p}"\n' for p in files))
            dox = measure([doxygen, str(base / "Doxyfile")], env, cwd=base, memory=True)
            dox_mb = dir_mb(base / "doxygen")

    shutil.rmtree(out)
    # the token cache emptied; what the site keeps of the index alone (the traces, the search
    # index's part) stays, like the index
    shutil.rmtree(cache / "site" / "tokens", ignore_errors=True)
    render = measure(build, env)
    noop = median_run([measure(build, env) for _ in range(3)])
    edits = []
    for n in (1, 2, 3):
        edit_note(root, n)
        edits.append(measure(build, env))
    edit = median_run(edits)
    served = subprocess.run([sys.executable, "-c", SERVE, str(out), str(root), str(REPO / "benchmarks"), "4"],
                            cwd=REPO, env=env, capture_output=True, text=True)
    if served.returncode != 0:
        sys.exit(f"site_bench: the serve row failed:\n{served.stderr[-3000:]}")
    saves = json.loads(served.stdout.strip().splitlines()[-1])
    show_cmd = annotate + ["show", args.symbol, "--no-color"]
    measure(show_cmd, env)
    show = median_run([measure(show_cmd, env) for _ in range(3)])
    load1 = os.getloadavg()[0]

    def vs(r: Run) -> str:
        parts = [f"{r.wall / pyg.wall:.2f}× Pygments"]
        if dox:
            parts.append(f"{r.wall / dox.wall:.2f}× Doxygen")
        cpu = [f"{r.cpu / pyg.cpu:.2f}×"] + ([f"{r.cpu / dox.cpu:.2f}×"] if dox else [])
        return ", ".join(parts) + f" (CPU {' and '.join(cpu)})"

    rows = [("files rendered", f"{len(files)} files, {src_mb:.1f} MB", ""),
            ("Pygments alone, same files", f"{pyg.wall:.1f} s ({pyg.cpu:.1f} s CPU; {pyg_mb:.0f} MB of HTML, "
             f"{pyg.peak_mb / 1e3:.2f} GB peak)", "baseline")]
    if dox:
        rows.append(("Doxygen, same files", f"{dox.wall:.1f} s ({dox.cpu:.1f} s CPU; {dox_mb:.0f} MB of HTML, "
                     f"{dox.peak_mb / 1e3:.2f} GB peak)", "peer"))
    rows += [
        ("cold `annotate build` (index + render)", f"{cold.wall:.1f} s = {vs(cold)}; {cold.cpu:.1f} s CPU, "
         f"{site_mb:.0f} MB of HTML, {cold.peak_mb / 1e3:.2f} GB peak", "≤ 1.0× both"),
        ("render only (index cached, empty out dir, token cache empty)",
         f"{render.wall:.1f} s = {render.wall / pyg.wall:.2f}× Pygments (CPU {render.cpu / pyg.cpu:.2f}×; "
         f"{render.cpu:.1f} s CPU)", "≤ 0.25×"),
        ("no-op rebuild, fresh process", f"{noop.wall:.2f} s ({noop.cpu:.2f} s CPU)", "≤ 0.2 s"),
        ("one annotation edited, `annotate build` in a fresh process",
         f"{edit.wall:.2f} s ({edit.cpu:.2f} s CPU)", "≤ 0.5 s"),
        ("one annotation edited under `annotate serve` (its rebuild, timed in its process)",
         f"first save {saves[0]:.2f} s, then {statistics.median(saves[1:]):.2f} s (median of {len(saves) - 1})", ""),
        (f"`annotate show {args.symbol}`, warm", f"{show.wall:.2f} s ({show.cpu:.2f} s CPU)", "≤ 0.5 s"),
    ]
    if args.browser:
        from site_browser import chromium

        page = out / LARGEST
        with chromium(1600, 1000) as d:
            d.get(page.as_uri())  # warm the browser process itself
            times = []
            for _ in range(3):
                d.get("about:blank")
                d.get(page.as_uri())
                times.append(d.execute_script("const n = performance.getEntriesByType('navigation')[0]; "
                                              "return n.loadEventEnd - n.startTime;"))
        rows.append(("largest page in headless Chromium", f"{page.stat().st_size / 1e3:.0f} kB, load event after "
                     f"{min(times) / 1000:.2f} s", ""))
    rows.append(("load average (start → end)", f"{load0:.1f} → {load1:.1f} on {os.cpu_count()} cores", ""))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=1, help="measure every row this many times (a table each)")
    ap.add_argument("--jobs", type=int, default=None, help="--jobs for annotate build (default: all cores)")
    ap.add_argument("--symbol", default=SYMBOL, help=f"what `annotate show` shows (default {SYMBOL})")
    ap.add_argument("--skip-doxygen", action="store_true")
    ap.add_argument("--browser", action="store_true", help="also time the largest page in headless Chromium")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories (and say where)")
    args = ap.parse_args()

    from annotate.config import Config

    config = Config.load()
    for i in range(args.runs):
        base = Path(tempfile.mkdtemp(prefix="annotate-site-bench-"))
        try:
            rows = one_run(config, args, base)
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)
        print(f"\nrun {i + 1} of {args.runs}" + (f" (kept in {base})" if args.keep else ""))
        print("| | measured | goal |\n|---|---|---|")
        for name, value, goal in rows:
            print(f"| {name} | {value} | {goal} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

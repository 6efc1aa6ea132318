"""Measure the index: function-definition recall on the course files (against universal-ctags,
with ctags's own errors corrected by hand in tests/data/index_recall_corrections.yaml), fact
precision/recall on hand-labelled kernels (tests/data/index_fact_labels.yaml), and speed: cold
and warm index of every fetched pin and the warm commands, each in fresh processes and fresh
temporary caches (the user's cache is only read), side by side with another revision.

    ANNOTATE_CACHE_DIR=<cache> python benchmarks/index_bench.py [--recall] [--facts]
        [--time [--baseline REV] [--repeat N]] [--sample-edges N] [-v]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotate.config import Config  # noqa: E402
from annotate.index.api import fetched_roots, load_index  # noqa: E402

DATA = REPO / "tests" / "data"


def course_files(roots: dict[str, Path]) -> dict[str, list[str]]:
    spec = yaml.safe_load((DATA / "index_course_files.yaml").read_text())
    out = {}
    for up, pats in spec.items():
        if up not in roots:
            continue
        files = []
        for pat in pats:
            if any(c in pat for c in "*?["):
                base = roots[up] / Path(pat).parent
                files += sorted(f"{Path(pat).parent.as_posix()}/{p.name}" for p in base.iterdir()
                                if fnmatch.fnmatch(p.name, Path(pat).name))
            else:
                files.append(pat)
        out[up] = files
    return out


def ctags_functions(root: Path, path: str) -> list[tuple[str, int]]:
    cmd = ["ctags", "--languages=C++", "--langmap=C++:+.cu.cuh", "--kinds-C++=f", "--fields=+n",
           "--output-format=json", "-o", "-", path]
    res = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True)
    out = []
    for line in res.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") == "tag":
            out.append((tag["name"], int(tag["line"])))
    return out


def load_corrections() -> dict:
    p = DATA / "index_recall_corrections.yaml"
    return (yaml.safe_load(p.read_text()) or {}) if p.exists() else {}


def expected_functions(up: str, root: Path, path: str, corrections: dict) -> list[tuple[str, int]]:
    """ctags's function tags of one file with the hand corrections applied."""
    import re

    tags = set(ctags_functions(root, path))
    for d in corrections.get("drop_name_patterns") or []:
        tags = {t for t in tags if not re.search(d["pattern"], t[0])}
    for item in ((corrections.get("renamed") or {}).get(up) or {}).get(path) or []:
        if (item["ctags"], int(item["line"])) in tags:
            tags.discard((item["ctags"], int(item["line"])))
            tags.add((item["actual"], int(item["line"])))
    for item in ((corrections.get("missed_by_ctags") or {}).get(up) or {}).get(path) or []:
        tags.add((item["name"], int(item["line"])))
    return sorted(tags, key=lambda t: t[1])


def recall(index, roots, verbose: bool) -> dict:
    corrections = load_corrections()
    total = found = 0
    per_file = {}
    misses = []
    extras = []
    for up, files in course_files(roots).items():
        for path in files:
            syms = index.symbols_in(up, path)
            exp = expected_functions(up, roots[up], path, corrections)
            hit = 0
            matched = set()
            for name, line in exp:
                ok = [s for s in syms if s.name.replace(" ", "") == name.replace(" ", "") and s.start_line <= line <= s.end_line]
                if ok:
                    hit += 1
                    matched.update(s.key for s in ok)
                else:
                    misses.append(f"{up}:{path}:{line} {name}")
            for s in syms:
                if s.key not in matched and not any(n.replace(" ", "") == s.name and s.start_line <= ln <= s.end_line for n, ln in exp):
                    extras.append(f"{up}:{path}:{s.start_line} {s.qualified_name}")
            per_file[f"{up}:{path}"] = (hit, len(exp))
            total += len(exp)
            found += hit
    print(f"function recall on {len(per_file)} course files: {found}/{total} = {found / max(total, 1):.4f}")
    if verbose:
        for f, (h, n) in per_file.items():
            print(f"  {h:4d}/{n:<4d} {f}")
    for m in misses:
        print("  MISSED", m)
    if verbose:
        for e in extras:
            print("  EXTRA (index finds, ctags+corrections do not)", e)
    print(f"  index definitions not in the expected list: {len(extras)}")
    return {"found": found, "total": total, "misses": misses, "extras": len(extras)}


def fact_scores(index, verbose: bool) -> dict:
    labels = yaml.safe_load((DATA / "index_fact_labels.yaml").read_text())
    out = {}
    for group, items in (("labelled", [k for k in labels["kernels"] if not k.get("held_out")]),
                         ("held-out", [k for k in labels["kernels"] if k.get("held_out")])):
        tp = fp = fn = 0
        for item in items:
            sym = index.resolve(item["symbol"])
            truth = {(f["kind"], int(f["line"])) for f in item["facts"]}
            got = {(f.kind, f.line) for f in index.facts(sym)}
            ktp, kfp, kfn = len(truth & got), len(got - truth), len(truth - got)
            tp, fp, fn = tp + ktp, fp + kfp, fn + kfn
            p = ktp / max(ktp + kfp, 1)
            r = ktp / max(ktp + kfn, 1)
            print(f"  {item['symbol']}: precision {p:.3f} recall {r:.3f} ({ktp} tp, {kfp} fp, {kfn} fn)")
            if verbose:
                for k, ln in sorted(got - truth, key=lambda x: x[1]):
                    print(f"     FP {k} line {ln}")
                for k, ln in sorted(truth - got, key=lambda x: x[1]):
                    print(f"     FN {k} line {ln}")
        p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        print(f"facts, {group} ({len(items)} functions): precision {p:.3f} recall {r:.3f} "
              f"({tp} tp, {fp} fp, {fn} fn)")
        out[group] = {"precision": p, "recall": r, "tp": tp, "fp": fp, "fn": fn}
    return out


def sample_edges(index, roots, n: int, seed: int = 7) -> None:
    """Print n random resolved edges out of the course files, for checking by hand."""
    import random

    rnd = random.Random(seed)
    pool = []
    for up, files in course_files(roots).items():
        for path in files:
            pool += [e for e in index.file(up, path).edges if e.callees]
    print(f"{n} of {len(pool)} resolved edges in the course files (seed {seed}):")
    for e in rnd.sample(pool, min(n, len(pool))):
        tg = [index.symbol(k) for k in e.callees]
        print(f"  {e.path}:{e.line} {e.kind} {e.callee_name!r} -> {len(tg)} x {tg[0].qualified_name} "
              f"@{tg[0].path}:{tg[0].start_line} [{tg[0].kind}]")


# ---- speed, side by side with another revision -------------------------------------------------

SHOW = ["show", "flashinfer::norm::RMSNormKernel", "--no-color"]
SYMBOLS = ["symbols", "flashinfer:include/flashinfer/norm.cuh", "--json"]
CHECK = ["check"]
TRACE = ["trace", "flashinfer.rmsnorm", "--when", "backend=cuda,ndim=2"]

# Runs in a fresh interpreter with PYTHONPATH = the tree measured (this one or the baseline),
# so both sides are measured by the same code. Prints one JSON object.
_CHILD = r"""
import json, os, resource, shutil, sys, time
from pathlib import Path

def cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

what, cache = sys.argv[1], Path(sys.argv[2])
os.environ["ANNOTATE_CACHE_DIR"] = str(cache)
from annotate.config import Config
from annotate.index.api import build_upstream, load_index
config = Config.load()
out = {}
if what == "cold":
    t, c = time.perf_counter(), cpu()
    load_index(config)
    out = {"wall": time.perf_counter() - t, "cpu": cpu() - c}
elif what == "warm":
    load_index(config)  # a first load may still record stat data; the second is the steady state
    t = time.perf_counter()
    load_index(config)
    out = {"wall": time.perf_counter() - t}
elif what == "links-cold":  # the cross-language tables of a warm index: scanned and written
    try:
        from annotate.index.crosslang import load_links
    except ImportError:  # a revision before them
        load_links = None
    if load_links is not None:
        ix = load_index(config)
        t, c = time.perf_counter(), cpu()
        load_links(ix, config)
        out = {"wall": time.perf_counter() - t, "cpu": cpu() - c}
elif what == "warm-links":  # load_index and the links, as `annotate trace` opens them
    try:
        from annotate.index.crosslang import load_links
    except ImportError:
        load_links = lambda ix, config: None  # noqa: E731
    load_links(load_index(config), config)
    t = time.perf_counter()
    load_links(load_index(config), config)
    out = {"wall": time.perf_counter() - t}
elif what == "one-changed":
    src, copy = Path(sys.argv[3]), Path(sys.argv[4])
    for sub in ("include", "csrc", "flashinfer/jit"):
        shutil.copytree(src / sub, copy / sub)
    build_upstream("flashinfer", copy, config=config)
    victim = copy / "include/flashinfer/norm.cuh"
    victim.write_text(victim.read_text() + "\n// edited\n")
    t = time.perf_counter()
    _, stats = build_upstream("flashinfer", copy, config=config)
    out = {"wall": time.perf_counter() - t, "parsed": stats["parsed"]}
print(json.dumps(out))
"""


def _export(rev: str, into: Path) -> Path:
    """The tree of `rev` of this repository (tracked files only) under `into`."""
    import io
    import tarfile

    data = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def _fresh_cache(config: Config, into: Path) -> Path:
    """An empty cache that shares the fetched checkouts of `config`'s (linked, never written)."""
    (into / "checkouts").mkdir(parents=True)
    for p in config.checkouts_dir().iterdir():
        if p.is_dir():
            (into / "checkouts" / p.name).symlink_to(p.resolve())
        elif p.name.endswith(".fetch.json"):
            shutil.copy(p, into / "checkouts" / p.name)
    return into


def _env(tree: Path, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANNOTATE_")}
    env.update(PYTHONPATH=str(tree), ANNOTATE_CACHE_DIR=str(cache), ANNOTATE_ROOT=str(tree))
    return env


def _child(tree: Path, cache: Path, *args: str) -> dict:
    res = subprocess.run([sys.executable, "-c", _CHILD, *args], cwd=tree, env=_env(tree, cache),
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"measuring {tree} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _command(tree: Path, cache: Path, argv: list[str], repeat: int) -> float:
    """Median wall time of `annotate ARGV` in fresh processes (the cache warm)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "annotate", *argv], cwd=tree, env=_env(tree, cache),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def speed(config: Config, roots: dict[str, Path], baseline: str | None, repeat: int) -> dict:
    """Cold index of every fetched pin (fresh cache), warm load_index, one file changed, and
    `annotate show|symbols|check` warm in fresh processes: for this tree and, when `baseline` is
    given, for that revision, interleaved in one run so both see the same machine load."""
    sides = {"now": REPO}
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="index-bench-") as tmp:
        tmp = Path(tmp)
        if baseline:
            sides = {baseline: _export(baseline, tmp / "baseline"), "now": REPO}
        caches = {name: _fresh_cache(config, tmp / f"cache-{i}") for i, name in enumerate(sides)}
        for name, tree in sides.items():  # interleaved row by row, not side by side in blocks
            out[name] = {"cold": _child(tree, caches[name], "cold", str(caches[name]))}
        for name, tree in sides.items():
            out[name]["links-cold"] = _child(tree, caches[name], "links-cold", str(caches[name]))
        for name, tree in sides.items():
            out[name]["warm"] = _child(tree, caches[name], "warm", str(caches[name]))
        for name, tree in sides.items():
            out[name]["warm-links"] = _child(tree, caches[name], "warm-links", str(caches[name]))
        if "flashinfer" in roots:
            for i, (name, tree) in enumerate(sides.items()):
                out[name]["one"] = _child(tree, _fresh_cache(config, tmp / f"one-cache-{i}"), "one-changed",
                                          str(tmp / f"one-cache-{i}"), str(roots["flashinfer"]), str(tmp / f"one-{i}"))
        for label, argv in (("show", SHOW), ("symbols", SYMBOLS), ("check", CHECK), ("trace", TRACE)):
            for name, tree in sides.items():
                if label == "trace" and not (tree / "annotate" / "commands" / "trace.py").is_file():
                    continue
                out[name][label] = _command(tree, caches[name], argv, repeat)
    _print_speed(out, list(sides), repeat)
    return out


def _print_speed(out: dict, names: list[str], repeat: int) -> None:
    rows = [("cold index of both pins, wall (s)", lambda d: d["cold"]["wall"]),
            ("cold index of both pins, CPU of all processes (s)", lambda d: d["cold"]["cpu"]),
            ("cold cross-language links of both pins (scan + write), wall (s)",
             lambda d: d["links-cold"].get("wall")),
            ("cold cross-language links, CPU (s)", lambda d: d["links-cold"].get("cpu")),
            ("warm load_index (s)", lambda d: d["warm"]["wall"]),
            ("warm load_index + cross-language links (s)", lambda d: d["warm-links"]["wall"]),
            ("one FlashInfer file changed, re-index (s)", lambda d: d["one"]["wall"] if "one" in d else None),
            (f"`annotate {' '.join(SHOW)}` (s, median of {repeat})", lambda d: d["show"]),
            (f"`annotate {' '.join(SYMBOLS)}` (s)", lambda d: d["symbols"]),
            ("`annotate check` (s)", lambda d: d["check"]),
            (f"`annotate {' '.join(TRACE)}` (s)", lambda d: d.get("trace"))]
    head = "| what | " + " | ".join(names) + (" | now / " + names[0] + " |" if len(names) > 1 else " |")
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for label, get in rows:
        vals = [get(out[n]) for n in names]
        if all(v is None for v in vals):
            continue
        cells = ["n/a" if v is None else f"{v:.3f}" if v < 1 else f"{v:.2f}" for v in vals]
        ratio = f" | {vals[-1] / vals[0]:.2f}x" if len(vals) > 1 and None not in vals and vals[0] else (
            " | n/a" if len(vals) > 1 else "")
        print(f"| {label} | " + " | ".join(cells) + ratio + " |")
    for n in names:
        if "one" in out[n]:
            print(f"  ({n}: {out[n]['one']['parsed']} file(s) parsed after the one-file change)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recall", action="store_true")
    ap.add_argument("--facts", action="store_true")
    ap.add_argument("--time", action="store_true", help="speed: cold, warm, one file changed, commands")
    ap.add_argument("--baseline", metavar="REV", help="with --time: also measure this git revision, interleaved")
    ap.add_argument("--repeat", type=int, default=3, help="with --time: fresh processes per command (median)")
    ap.add_argument("--sample-edges", type=int, default=0, metavar="N",
                    help="print N random resolved edges of the course files to check by hand")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    every = not (args.recall or args.facts or args.time or args.sample_edges)
    config = Config.load()
    roots = fetched_roots(config)
    if not roots:
        print("no pins fetched: run `annotate fetch`", file=sys.stderr)
        return 1
    index = load_index(config) if (every or args.recall or args.facts or args.sample_edges) else None
    if every or args.recall:
        recall(index, roots, args.verbose)
    if every or args.facts:
        fact_scores(index, args.verbose)
    if args.sample_edges:
        sample_edges(index, roots, args.sample_edges)
    if every or args.time:
        speed(config, roots, args.baseline, max(1, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())

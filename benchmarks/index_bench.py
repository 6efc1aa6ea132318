"""Measure the index: function-definition recall on the course files (against universal-ctags,
with ctags's own errors corrected by hand in tests/data/index_recall_corrections.yaml), fact
precision/recall on hand-labelled kernels (tests/data/index_fact_labels.yaml), and cold/warm
index time of every fetched pin.

    ANNOTATE_CACHE_DIR=<cache> python benchmarks/index_bench.py [--recall] [--facts] [--time] [-v]
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
from annotate.index.api import build_upstream, fetched_roots, load_index  # noqa: E402

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


def timings(config: Config, roots: dict[str, Path]) -> dict:
    """Cold (empty cache), warm (same files), and one-file-changed (per-file cache + re-resolve)
    index times, in a throw-away cache so the user's cache is untouched; then load_index on the
    real cache as other stages call it."""
    out = {"cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        cold_cfg = Config.load(environ={}, cache_dir=Path(tmp) / "cache")
        t0 = time.perf_counter()
        n = 0
        for up, root in roots.items():
            files, stats = build_upstream(up, root, config=cold_cfg)
            n += stats["files"]
        out["cold_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for up, root in roots.items():
            build_upstream(up, root, config=cold_cfg)
        out["warm_s"] = time.perf_counter() - t0
        # one file changed: a copy of the first upstream with one file edited
        up, root = next(iter(roots.items()))
        copy = Path(tmp) / "tree"
        shutil.copytree(root, copy)
        victim = sorted(p for p in copy.rglob("*.cuh"))[0]
        victim.write_text(victim.read_text() + "\n// edited\n")
        t0 = time.perf_counter()
        _, stats = build_upstream(up, copy, config=cold_cfg)
        out["one_changed_s"] = time.perf_counter() - t0
        out["one_changed_parsed"] = stats["parsed"]
    t0 = time.perf_counter()
    load_index(config)
    out["warm_load_index_s"] = time.perf_counter() - t0
    out["files"] = n
    print(f"index of {n} files ({', '.join(roots)}) on {out['cores']} cores: cold {out['cold_s']:.1f} s, "
          f"warm {out['warm_s']:.2f} s (load_index {out['warm_load_index_s']:.2f} s); one file of {up} changed: "
          f"{out['one_changed_s']:.2f} s, {out['one_changed_parsed']} file parsed")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recall", action="store_true")
    ap.add_argument("--facts", action="store_true")
    ap.add_argument("--time", action="store_true")
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
    index = load_index(config)
    if every or args.recall:
        recall(index, roots, args.verbose)
    if every or args.facts:
        fact_scores(index, args.verbose)
    if args.sample_edges:
        sample_edges(index, roots, args.sample_edges)
    if every or args.time:
        timings(config, roots)
    return 0


if __name__ == "__main__":
    sys.exit(main())

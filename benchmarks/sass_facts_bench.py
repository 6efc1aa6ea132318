"""Measure the index's memory-fact rules against the compiler: every fact of a function that
compiled into a catalog kernel, confirmed or not by the SASS of its statement
(annotate/harness/rules/sass_facts.yaml), and every instruction of the tracked classes explained
by a fact of its kind up its inlining chain, or not. Nobody labelled anything: nvcc is the judge.

    ANNOTATE_CACHE_DIR=<cache> python benchmarks/sass_facts_bench.py [--arch 90] [--kernels a,b]
        [--misses N] [--json FILE]

Needs nvcc and nvdisasm (the -lineinfo cubins are compiled once and cached) and the pins
fetched and indexed. Prints precision (strict: confirmed on the statement's own lines; lenient:
also on a neighbouring line, where the scheduler sometimes lists an instruction), recall per
kind, the rules' wrong claims (facts whose statement compiled to none of their opcodes) and
their misses (instructions of a tracked class whose chain meets no fact of that kind).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotate.commands.sass import fact_sites  # noqa: E402
from annotate.config import Config  # noqa: E402
from annotate.harness import sass, sassfacts  # noqa: E402
from annotate.harness.spec import kernel_names, load_spec  # noqa: E402


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="90")
    ap.add_argument("--kernels", help="comma-separated harnesses (default: the catalog)")
    ap.add_argument("--misses", type=int, default=25, help="misses listed per kind")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args(argv)
    config = Config.load()
    names = args.kernels.split(",") if args.kernels else kernel_names(config)
    t0 = time.perf_counter()
    records, chains = [], []
    for name in names:
        spec = load_spec(config, name)
        rec, _ = sass.sass_record(config, spec, args.arch)
        records.append(rec)
        label = sassfacts.record_label(rec)
        chains += sassfacts.chains_of(label, sass.upstream_chains(config, spec, args.arch))
    t_sass = time.perf_counter() - t0

    from annotate.project import open_project

    upstreams = sorted({f.split(":", 1)[0] for r in records for f in r.files()})
    index = open_project(config, upstreams=upstreams).index
    files = sorted({f for r in records for f in r.files()})
    sites = fact_sites(index, files)
    report = sassfacts.check_facts(sites, records)
    prec = sassfacts.precision(report)
    rec = sassfacts.recall(sites, chains)
    print(f"records: {', '.join(report.records)} (sm_{args.arch}; nvcc + nvdisasm {t_sass:.1f} s)")
    print(f"facts in functions that compiled in: {len(report.facts)} — "
          + ", ".join(f"{s} {prec.counts.get(s, 0)}" for s in sassfacts.STATUSES if s != sassfacts.NOT_COMPILED))
    print(f"precision: strict {_pct(prec.strict)}, lenient (±{report.near} lines) {_pct(prec.lenient)}")
    print(f"recall (instructions explained by a fact of their kind): {_pct(rec.ratio())}")
    print(f"\n{'kind':<16} {'facts':>5} {'conf':>5} {'near':>5} {'not':>5} {'nocode':>6} {'strict':>7} {'lenient':>8}"
          f" {'instrs':>7} {'explained':>9} {'recall':>7}")
    kinds = sorted(set(prec.per_kind) | set(rec.per_kind))
    for k in kinds:
        c = prec.per_kind.get(k, {})
        strict, lenient = sassfacts.kind_precision(prec, k)
        got, total = rec.per_kind.get(k, (0, 0))
        print(f"{k:<16} {sum(c.values()):>5} {c.get('confirmed', 0):>5} {c.get('nearby', 0):>5} "
              f"{c.get('not-confirmed', 0):>5} {c.get('no-code', 0):>6} {_pct(strict):>7} {_pct(lenient):>8} "
              f"{total:>7} {got:>9} {_pct(got / total if total else None):>7}")

    wrong = [f for f in report.facts if f.status == sassfacts.NOT_CONFIRMED]
    print(f"\nclaimed wrongly ({len(wrong)}: the statement compiled, to none of the kind's opcodes):")
    by_rule = defaultdict(list)
    for f in wrong:
        by_rule[(f.kind, f.rule)].append(f)
    for (kind, rule), fs in sorted(by_rule.items(), key=lambda kv: -len(kv[1])):
        print(f"  {kind} / {rule}: {len(fs)}")
        for f in fs[:8]:
            got = ", ".join(f"{op}×{n}" for op, n in Counter(f.instead).most_common(4))
            print(f"    {f.file.split(':', 1)[1]}:{f.line}-{f.end}  {f.detail[:70]}  -> {got}")
    near = [f for f in report.facts if f.status == sassfacts.NEARBY]
    if near:
        print(f"\nconfirmed only on a neighbouring line ({len(near)}):")
        for f in near[:12]:
            print(f"    {f.file.split(':', 1)[1]}:{f.start}-{f.end} {f.kind} found at line {f.near_line}")
    print("\nmissed (instructions of a tracked class, grouped by innermost line, with no fact of their kind on the chain):")
    by_kind = defaultdict(list)
    for m in rec.misses:
        by_kind[m.kind].append(m)
    for kind, ms in sorted(by_kind.items()):
        ms.sort(key=lambda m: -sum(m.opcodes.values()))
        total = sum(sum(m.opcodes.values()) for m in ms)
        print(f"  {kind}: {total} instructions at {len(ms)} sites")
        for m in ms[:args.misses]:
            ops = ", ".join(f"{op}×{n}" for op, n in m.opcodes.items())
            at = " < ".join(a.split(":", 1)[1] for a in m.at[:3]) if m.at else ""
            print(f"    {m.file.split(':', 1)[1]}:{m.line}  {ops}" + (f"  (inlined at {at})" if at else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "records": list(report.records), "counts": prec.counts, "per_kind": prec.per_kind,
            "precision_strict": prec.strict, "precision_lenient": prec.lenient,
            "recall": rec.ratio(), "recall_per_kind": {k: list(v) for k, v in rec.per_kind.items()},
        }, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

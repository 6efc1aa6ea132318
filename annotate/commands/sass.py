"""`annotate sass KERNEL`: what each upstream source line of a harness kernel compiled to.

The SASS comes from the harness (annotate.harness.sass: nvcc -lineinfo cubins, nvdisasm -g -gi,
no GPU); `--facts` joins it with the index's memory facts (annotate.harness.sassfacts), which
is why this command sits above both stages.
"""

from __future__ import annotations

import argparse
from collections import Counter

from annotate.errors import AnnotateError, UsageError

# Modifiers left out of the short class names printed in the terminal (cache and address-mode
# hints); the records keep the full opcode.
_NOISE = {"E", "CONSTANT", "BYPASS", "LTC64B", "LTC128B", "LTC256B", "EF", "EL", "LU", "NA",
          "STRONG", "GPU", "SYS", "SM", "DEFER_BLOCKING", "ZFILL"}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sass", help="what each upstream source line of a harness kernel compiled to (nvcc, no GPU)",
        description="Compile a harness (vendor_kernels/KERNEL) with -lineinfo, disassemble it with "
                    "nvdisasm -g -gi and attribute every instruction to the innermost upstream "
                    "source line it came from. Prints the kernels' resources and, per source line, "
                    "the instruction classes; --line shows that line's SASS.")
    p.add_argument("kernel", help="harness name (annotate run --list)")
    p.add_argument("--arch", default="90", help="target: 90 (default), 90a, 80")
    p.add_argument("--line", metavar="FILE:LINE",
                   help="that line's SASS in every kernel it compiled into (FILE: any suffix of the path)")
    p.add_argument("-k", "--kernel-filter", dest="only", metavar="TEXT",
                   help="only the instantiations whose name contains TEXT, or the one numbered TEXT")
    p.add_argument("--facts", action="store_true",
                   help="also check the index's memory facts of the functions that compiled in "
                        "against the SASS (needs the pins indexed)")
    p.add_argument("--identity", action="store_true",
                   help="the identity card instead: compile upstream's own instantiation of these "
                        "kernels (vendor_kernels/KERNEL/identity.yaml) and compare the SASS with the "
                        "harness's; exit 1 when they differ")
    p.add_argument("--committed", action="store_true",
                   help="read the committed record (vendor_kernels/results/sass/) instead of "
                        "compiling: needs no nvcc")
    p.add_argument("--save", action="store_true",
                   help="write the committed records: vendor_kernels/results/sass/KERNEL.smARCH.json "
                        "(compacted) and KERNEL.smARCH.facts.json (needs the index); with --identity "
                        "vendor_kernels/results/identity/KERNEL.smARCH.json")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_sass)


def short_class(opcode: str) -> str:
    head, *mods = opcode.split(".")
    return ".".join([head, *(m for m in mods if m not in _NOISE)])


def classes_text(counts: dict, limit: int = 8) -> str:
    c: Counter = Counter()
    for op, n in counts.items():
        c[short_class(op)] += n
    items = c.most_common()
    text = " ".join(f"{op}×{n}" if n > 1 else op for op, n in items[:limit])
    return text + (f" …+{len(items) - limit}" if len(items) > limit else "")


# ---- the record --------------------------------------------------------------------------------
def load(config, spec, arch: str, committed: bool):
    from annotate.harness import sass

    if committed:
        path = sass.committed_path(config, spec.name, arch)
        if not path.is_file():
            raise AnnotateError(f"{spec.name}: no committed SASS record for sm_{arch} ({path})",
                                hint=f"annotate sass {spec.name} --arch {arch} --save (needs nvcc)")
        return sass.load_sass_record(path), path
    try:
        return sass.sass_record(config, spec, arch)
    except AnnotateError as exc:
        if exc.message.startswith("nvcc not found"):
            raise AnnotateError(f"annotate sass needs nvcc to compile {spec.name}, and nvcc was not found",
                                hint="install the CUDA toolkit (or set CUDA_HOME); `--committed` "
                                     "reads the record committed in vendor_kernels/results/sass/") from None
        raise


def select(record, only: str | None):
    fns = list(record.functions)
    if not only:
        return fns
    if only.isdigit():
        i = int(only)
        if i >= len(fns):
            raise UsageError(f"-k {only}: {record.kernel} has {len(fns)} kernels (0-{len(fns) - 1})")
        return [fns[i]]
    hit = [f for f in fns if only in f.name or only in f.mangled]
    if not hit:
        raise UsageError(f"-k {only!r}: no kernel of {record.kernel} has that in its name",
                         hint=f"`annotate sass {record.kernel}` lists them")
    return hit


# ---- facts (the index) ----------------------------------------------------------------------------
def statement_spans(source: str, facts) -> dict[tuple[str, int], tuple[int, int]]:
    """(rule, line) -> (first, last) line of the statement holding that fact, from the same
    tree-sitter parse and rules the index uses."""
    from annotate.index.facts import apply_rules, fact_query_source
    from annotate.index.parse import captured, parser, prepare_cuda, run_queries

    wanted = {(f.rule, f.line) for f in facts}
    root = parser("cuda").parse(prepare_cuda(source.encode("utf-8"))).root_node
    stop = {"compound_statement", "translation_unit", "if_statement", "for_statement", "while_statement",
            "do_statement", "switch_statement", "case_statement", "field_declaration_list",
            "template_declaration", "function_definition", "lambda_expression"}
    simple = {"expression_statement", "declaration", "return_statement", "field_declaration"}
    out: dict[tuple[str, int], tuple[int, int]] = {}
    found = run_queries("cuda", root, (), (("facts", fact_query_source()),))
    for node in captured(found["facts"], "n"):
        line = node.start_point[0] + 1
        rules = [r.id for r, _ in apply_rules(node) if (r.id, line) in wanted]
        if not rules:
            continue
        n = node
        while n.type not in simple and n.parent is not None and n.parent.type not in stop:
            n = n.parent
        span = (n.start_point[0] + 1, n.end_point[0] + 1)
        for rid in rules:
            old = out.get((rid, line))
            out[(rid, line)] = span if old is None else (min(old[0], span[0]), max(old[1], span[1]))
    return out


def fact_sites(index, files) -> list:
    """FactSite values for every fact the index has in `files` (`upstream:path`, the records'
    spelling); files the index does not cover (build-only pins) have none."""
    from annotate.harness.sassfacts import FactSite

    sites = []
    for f in files:
        upstream, _, path = f.partition(":")
        if not index.has_file(upstream, path):
            continue
        fi = index.file(upstream, path)
        if not fi.facts:
            continue
        spans = statement_spans(index.source(upstream, path), fi.facts)
        for fact in fi.facts:
            sym = index.symbol(fact.symbol)
            start, end = spans.get((fact.rule, fact.line), (fact.line, fact.line))
            sites.append(FactSite(file=f, line=fact.line, start=start, end=end, kind=fact.kind,
                                  rule=fact.rule, detail=fact.detail, function=fact.symbol,
                                  function_start=sym.start_line, function_end=sym.end_line))
    return sites


def fact_report(config, records):
    from annotate.harness.sassfacts import check_facts
    from annotate.project import open_project

    upstreams = sorted({f.split(":", 1)[0] for r in records for f in r.files()})
    index = open_project(config, upstreams=upstreams).index
    files = sorted({f for r in records for f in r.files()})
    return check_facts(fact_sites(index, files), records)


# ---- the command -------------------------------------------------------------------------------------
def cmd_sass(args: argparse.Namespace, config) -> int:
    from annotate.harness import sass
    from annotate.harness.spec import load_spec

    spec = load_spec(config, args.kernel)
    args.arch = sass.parse_arch(args.arch)
    where = sass.parse_line_arg(args.line) if args.line else None  # bad FILE:LINE before any work
    if args.save and args.committed:
        raise UsageError("--save writes the committed record from a fresh one: drop --committed")
    if args.identity:
        if args.line or args.facts or args.committed or args.only:
            raise UsageError("--identity takes no --line, --facts, --committed or -k")
        return _identity(config, spec, args.arch, args.save, args.json)
    record, path = load(config, spec, args.arch, args.committed)
    fns = select(record, args.only)
    report = fact_report(config, [record]) if args.facts or args.save else None
    if args.save:
        _save(config, record, report)
    if where is not None:
        return _line(record, fns, where, args.json)
    if args.json:
        from annotate.jsonout import print_json

        data = record.to_json()
        if args.only:
            keep = {f.mangled for f in fns}
            data["functions"] = [f for f in data["functions"] if f["mangled"] in keep]
        if report is not None:
            data["facts"] = [f.to_json() for f in report.facts]
        print_json(data)
        return 0
    _overview(record, fns, path)
    if report is not None:
        _facts(report)
    return 0


def _save(config, record, report) -> None:
    from annotate.harness import sass
    from annotate.harness.sassfacts import committed_form, write_fact_report
    from annotate.harness.spec import load_spec
    from annotate.terminal import echo

    spec = load_spec(config, record.kernel)
    compact = sass.compact(record, spec.sass_featured)
    out = sass.committed_path(config, record.kernel, record.arch)
    sass.write_sass_record(out, compact)
    echo(f"wrote {out} ({out.stat().st_size // 1024} KiB)", err=True)
    if report is not None:
        fout = sass.committed_facts_path(config, record.kernel, record.arch)
        write_fact_report(fout, committed_form(report))
        echo(f"wrote {fout} ({fout.stat().st_size // 1024} KiB)", err=True)


def _identity(config, spec, arch: str, save: bool, as_json: bool) -> int:
    from annotate.harness import identity
    from annotate.terminal import echo

    try:
        card = identity.identity_card(config, spec, arch)
    except AnnotateError as exc:
        if exc.message.startswith("nvcc not found"):
            raise AnnotateError(f"annotate sass --identity needs nvcc to compile {spec.name} twice, "
                                "and nvcc was not found", hint="install the CUDA toolkit (or set CUDA_HOME)") from None
        raise
    if save:
        out = identity.card_path(config, spec.name, arch)
        identity.write_card(out, card)
        echo(f"wrote {out}", err=True)
    if as_json:
        from annotate.jsonout import print_json

        print_json(card.to_json())
    else:
        echo(f"{spec.name} sm_{arch} (upstream builds sm_{card.upstream_arch}): {card.verdict.upper()}: {card.summary}")
        echo(f"  upstream: {card.route}")
        if card.only_upstream:
            echo(f"  flags only upstream passes: {' '.join(card.only_upstream)}")
        if card.only_harness:
            echo(f"  flags only the harness passes: {' '.join(card.only_harness)}")
        for k in card.kernels:
            if k.status != "identical":
                echo(f"  {k.status}: {k.name[:140]}")
                if k.closest:
                    echo(f"    upstream's nearest: {k.closest[:140]}")
                for d in k.diff:
                    echo(f"    {d}")
    return 0 if card.identical else 1


def _overview(record, fns, path) -> None:
    from annotate.terminal import echo

    echo(f"{record.kernel} sm_{record.arch}: {len(record.functions)} kernels, nvcc {record.nvcc}, "
         f"-lineinfo cubins; record: {path}")
    echo(f"{'#':>3}  {'regs':>4} {'smem':>6} {'stack':>5} {'spill st/ld':>11} {'instrs':>6}  kernel")
    index = {f.mangled: i for i, f in enumerate(record.functions)}
    for f in fns:
        spill = f"{f.spill_stores}/{f.spill_loads}" if f.spill_stores is not None else "-"
        echo(f"{index[f.mangled]:>3}  {_n(f.registers):>4} {_n(f.smem_static):>6} {_n(f.stack):>5} "
             f"{spill:>11} {f.instructions:>6}  {display_name(f)}")
    fn = fns[0]
    if not fn.files:
        echo(f"\n(kernel {index[fn.mangled]} has no per-line data in this record: the committed record "
             "keeps it for the featured kernels; compile to see all)")
        return
    echo(f"\nper source line, kernel {index[fn.mangled]} (-k N for another; --line FILE:LINE for the SASS):")
    echo(f"  mix: {classes_text(fn.mix, 12)}")
    for sf in fn.files:
        echo(f"{sf.path}")
        for ln in sf.lines:
            own = classes_text(ln.counts) if ln.counts else ""
            via = f"  (inlined calls: {classes_text(ln.via, 5)})" if ln.via else ""
            echo(f"  {ln.line:>5}  {own}{via}")


def _line(record, fns, where, as_json: bool) -> int:
    from annotate.harness import sass
    from annotate.terminal import echo

    wanted, line = where
    path = sass.match_file(record, wanted)
    keep = {f.mangled for f in fns}
    hits = [(f, ln) for f, ln in sass.lines_of(record, path, line) if f.mangled in keep]
    if not hits:
        have = sass.code_lines(record, path)
        near = sorted(have, key=lambda n: abs(n - line))[:6]
        raise UsageError(f"{path}:{line} compiled to no instruction of {record.kernel} (sm_{record.arch})",
                         hint="nearest lines with code: " + ", ".join(map(str, sorted(near))))
    if as_json:
        from annotate.jsonout import print_json

        print_json([{"kernel": f.name, "mangled": f.mangled, "file": path, "line": line,
                     "counts": ln.counts, "via": ln.via, "sass": list(ln.sass)} for f, ln in hits])
        return 0
    for f, ln in hits:
        echo(f"{path}:{line} in {display_name(f)}")
        if ln.counts:
            echo(f"  {classes_text(ln.counts, 20)}")
        for text in ln.sass:
            echo(f"    {text}")
        if ln.via:
            echo(f"  through the calls on this line (inlined): {classes_text(ln.via, 20)}")
    return 0


def _facts(report) -> None:
    from annotate.harness.sassfacts import precision
    from annotate.terminal import echo

    p = precision(report)
    echo(f"\nmemory facts of the functions that compiled in ({', '.join(report.records)}): "
         + ", ".join(f"{k} {v}" for k, v in sorted(p.counts.items())))
    for f in report.facts:
        extra = f" at line {f.near_line}" if f.near_line else ""
        got = classes_text(f.found or f.instead, 4)
        echo(f"  {f.status:<13} {f.file.split(':', 1)[1]}:{f.line}  {f.kind}: {f.detail[:70]}"
             f"{extra}{'  [' + got + ']' if got else ''}")


def display_name(fn, width: int = 110) -> str:
    """The demangled name without namespaces, `void` and parameters: the template arguments
    are what tell a harness's instantiations apart."""
    import re

    from annotate.harness.sass import base_name

    name = re.sub(r"\b[A-Za-z_]\w*::", "", fn.short_name(10_000))
    base = re.sub(r"\b[A-Za-z_]\w*::", "", base_name(fn.name))
    return name if len(name) <= width else name[:width - 1] + "…" if name.startswith(base) else name


def _n(x) -> str:
    return "-" if x is None else str(x)

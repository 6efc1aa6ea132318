"""`annotate extract KERNEL [--into DIR]`: the kernel's upstream closure as a standalone folder,
with the proof (SASS identical to the pinned build) printed.

It reads the index and the notes (for the reviewers' summaries) and the harness, so it lives
here, above them, and takes a Project. Everything printed is plain text (annotate.terminal).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_DIR = "{kernel}-extracted"  # under the current directory


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "extract", help="the kernel's upstream code flattened into one file, in a folder that runs",
        description="Write a standalone folder: kernel.cu (the upstream code the harness "
                    "instantiates, flattened out of its headers, each piece with its source "
                    "lines and summary), the harness rewritten to use it, and a README; then "
                    "compile it and the pinned harness with the same flags and compare their SASS.")
    p.add_argument("kernel", metavar="KERNEL", help="a harness name (annotate run --list)")
    p.add_argument("--into", metavar="DIR", help=f"the folder to write (default ./{DEFAULT_DIR.format(kernel='KERNEL')})")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty folder annotate did not write, or over edited files")
    p.add_argument("--arch", action="append", metavar="N",
                   help="targets to compare, first one first (default: 90, then 80 where the kernel builds for it)")
    p.add_argument("--no-reduce", action="store_true",
                   help="keep what static analysis keeps; do not ask the compiler what can go")
    p.add_argument("--no-verify", action="store_true", help="write the folder without the SASS comparison")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_extract)


def cmd_extract(args, config) -> int:
    from annotate.errors import UsageError
    from annotate.extract.api import DEFAULT_ARCHES, extract
    from annotate.extract.folder import prepare_folder
    from annotate.harness.spec import load_spec
    from annotate.project import open_project
    from annotate.terminal import echo

    spec = load_spec(config, args.kernel)
    arches = tuple(a.strip() for a in (args.arch or DEFAULT_ARCHES))
    bad = [a for a in arches if not a.rstrip("a").isdigit()]
    if bad:
        raise UsageError(f"--arch {bad[0]}: expected a compute capability like 90, 90a or 80")
    into = Path(args.into) if args.into else Path.cwd() / DEFAULT_DIR.format(kernel=spec.name)
    prepare_folder(into, force=args.force)  # refuse before any work
    project = open_project(config, upstreams=[spec.upstream], progress=not args.quiet)
    log = (lambda line: None) if args.quiet else (lambda line: echo(line, err=True))
    report = extract(config, spec, into, index=project.index, annotations=project.annotations,
                     force=args.force, do_reduce=not args.no_reduce, do_verify=not args.no_verify,
                     arches=arches, log=log)
    if args.json:
        from annotate.jsonout import print_json

        print_json(report.to_json())
    else:
        print_report(report)
    return 0 if report.identical in (True, None) else 1


def print_report(report) -> None:
    from annotate.terminal import echo

    r = report.reduction
    echo(f"{report.kernel}: extracted into {report.folder}")
    echo(f"  kernel.cu: {report.extracted_lines:,} of {report.closure_lines:,} upstream lines "
         f"({report.headers} headers; {report.pieces} of {report.total_pieces} pieces), "
         f"{report.kernel_lines:,} lines with provenance comments")
    if r.skipped:
        echo(f"  reduction: skipped (--no-reduce); {r.static} pieces reached by name")
    else:
        how = "from the cache" if r.cached else f"{r.seconds:.0f} s"
        echo(f"  reduction: {r.static} pieces reached by name, {len(r.dead)} preprocessed away, "
             f"{len(r.dropped)} of {r.candidates} candidates dropped by the compiler "
             f"({r.tests} compiles at cicc -{r.level or 'O3'}, {how})")
    if report.fallback:
        echo(f"  note: {report.fallback}")
    for b in report.builds:
        verdict = "identical" if b.identical else "DIFFERENT"
        echo(f"  sm_{b.arch}: SASS {verdict} for {sum(k.identical for k in b.kernels)} of {len(b.kernels)} "
             f"kernels; compile {b.pinned_seconds:.1f} s pinned, {b.source_seconds:.1f} s extracted")
        for k in b.kernels:
            if not k.identical:
                echo(f"    {k.name}: {k.instructions[0]} vs {k.instructions[1]} instructions")
                for line in k.first_difference:
                    echo(f"      {line}")
        for name, a, c in b.resources():
            echo(f"    {name}")
            echo(f"      pinned    {_res(a)}")
            echo(f"      extracted {_res(c)}")
    for a, why in report.unsupported:
        echo(f"  sm_{a}: not compared: the pinned harness does not build for it ({why})")
    for w in report.warnings:
        echo(f"  warning: {w}")
    if not report.builds:
        echo("  not verified (--no-verify): run `annotate run "
             f"{report.kernel} --source {report.folder} --compile-only` to compare")


def _res(r) -> str:
    if r is None:
        return "(absent)"
    return (f"{r.registers} registers, {r.smem_static} B static smem, "
            f"{r.spill_stores}/{r.spill_loads} B spill stores/loads, {r.stack} B stack")

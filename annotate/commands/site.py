"""`annotate build` and `annotate serve`: adapters over site_builder.build / serve.

Arguments are checked here, before any pin, index or note is loaded: an output directory the
build must not write to, a port out of range, a worker count below one are one line each.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from annotate.errors import UsageError
from annotate.terminal import echo


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "build", help="write the static site (default: ./_site)",
        description="Build the annotated, cross-referenced static site for the pinned sources. "
                    "Fetches the pins first if they are missing. Only pages whose inputs changed "
                    "are rendered again; opening index.html from disk works (no server needed).",
    )
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="output directory (default: _site in the current directory)")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty DIR that was not built by annotate (its files may be overwritten)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--upstream", action="append", default=None, metavar="NAME",
                   help="build only this upstream (repeatable)")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    p.set_defaults(func=cmd_build)

    s = subparsers.add_parser(
        "serve", help="serve the site on 127.0.0.1 and rebuild on save",
        description="Build the site, serve it on 127.0.0.1, and rebuild what changed whenever an "
                    "annotation file, template or asset is saved; open pages reload themselves.",
    )
    s.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000; 0 = any free port)")
    s.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="output directory (default: _site in the current directory)")
    s.add_argument("--force", action="store_true", help="as for build: write into a non-empty foreign DIR")
    s.add_argument("--jobs", "-j", type=int, default=None, help="worker processes for the first build")
    s.set_defaults(func=cmd_serve)


def _out_dir(args) -> Path:
    from site_builder.build import default_out_dir
    from site_builder.output import prepare_out_dir

    return prepare_out_dir(args.out if args.out is not None else default_out_dir(), args.force)


def _jobs(args) -> int | None:
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be 1 or more, got {args.jobs}")
    return args.jobs


def cmd_build(args: argparse.Namespace, config) -> int:
    from annotate.project import open_project
    from site_builder.build import build_site

    out, jobs = _out_dir(args), _jobs(args)
    project = open_project(config, upstreams=args.upstream, fetch=True, progress=not args.quiet)
    report = build_site(project, out, jobs=jobs, force=args.force)
    if report.annotation_errors:
        echo(f"annotate: {report.annotation_errors} error(s) in the annotation files (listed on the home page; "
             "`annotate check` shows them)", err=True)
    if not args.quiet:
        echo(describe(report))
    return 0


def describe(report) -> str:
    where = report.out_dir
    if report.noop:
        return f"site up to date in {where} ({report.pages_total} source pages; {report.seconds:.2f} s)"
    st = report.stats
    return (f"site in {where}: {report.pages_rendered} of {report.pages_total} source pages rendered, "
            f"{st.written} files written, {st.unchanged} unchanged, {st.removed} removed "
            f"({report.seconds:.2f} s); open {where / 'index.html'}")


def cmd_serve(args: argparse.Namespace, config) -> int:
    from annotate.project import open_project
    from site_builder.serve import serve

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    out, jobs = _out_dir(args), _jobs(args)
    project = open_project(config, fetch=True, progress=True)
    return serve(project, out_dir=out, port=args.port, jobs=jobs, force=args.force)

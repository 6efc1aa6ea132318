"""`annotate build` and `annotate serve`: thin adapters over site_builder.build / serve.

Imports nothing heavy at module level (the GPU machines load every stage's cli module).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "build", help="write the static site (default: ./_site)",
        description="Build the annotated, cross-referenced static site for the pinned sources. "
                    "Fetches the pins first if they are missing. Only pages whose inputs changed "
                    "are rendered again; opening index.html from disk works (no server needed).",
    )
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="output directory (default: _site in the current directory)")
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
    s.add_argument("--jobs", "-j", type=int, default=None, help="worker processes for the first build")
    s.set_defaults(func=cmd_serve)


def cmd_build(args: argparse.Namespace, config) -> int:
    from site_builder.build import build_site

    report = build_site(config, args.out, upstreams=args.upstream, jobs=args.jobs, progress=not args.quiet)
    if not args.quiet:
        print(describe(report))
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
    from site_builder.serve import serve

    return serve(config, out_dir=args.out, port=args.port, jobs=args.jobs)

"""`annotate check`, `annotate new`, `annotate schema`. Imports are inside the handlers: this
module is imported on every `annotate` run, including on machines without pydantic."""

from __future__ import annotations

import argparse
from pathlib import Path

from annotate.terminal import echo


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="validate every annotation file against the pinned sources",
                       description="Validate annotation files: YAML and schema errors, unresolved or "
                                   "ambiguous functions, anchors, stale fingerprints; with --against, "
                                   "drift to another version. Exit 1 on errors, 0 on clean or warnings only.")
    p.add_argument("files", nargs="*", type=Path, metavar="FILE",
                   help="check only these annotation files (default: all under the annotations root)")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.add_argument("--strict", action="store_true", help="warnings are fatal too (for CI)")
    p.add_argument("--refresh", action="store_true",
                   help="write the current fingerprints into the files (comments and layout kept)")
    p.add_argument("--against", metavar="REF",
                   help="also resolve the annotations at REF (tag/commit) of the same upstream and report drift; "
                        "needs a local git mirror (ANNOTATE_URL_<UPSTREAM> or --git-dir)")
    p.add_argument("--against-dir", metavar="DIR", help="like --against, for a directory tree of the other version")
    p.add_argument("--git-dir", metavar="DIR", help="local git repository of the upstream (history for diffs, --against)")
    p.add_argument("--upstream", metavar="NAME", help="limit --against to this upstream")
    p.add_argument("--annotations", metavar="DIR", type=Path,
                   help="annotations root (default: annotations/ of the repository)")
    p.add_argument("--source", metavar="UPSTREAM=DIR", action="append", default=[],
                   help="index DIR as UPSTREAM instead of the fetched pin (repeatable)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("new", help="write a stub for a function (or a type, or a macro) into the right YAML file")
    p.add_argument("symbol", metavar="SYMBOL", help="[UPSTREAM:]qualified_name[@path:line]")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--type", action="store_true",
                       help="SYMBOL names a struct / class / union / enum: a stub under `types:` with every member")
    which.add_argument("--macro", action="store_true", help="SYMBOL names a #define: a stub under `macros:`")
    p.add_argument("--annotations", metavar="DIR", type=Path, help="annotations root (default: annotations/)")
    p.add_argument("--source", metavar="UPSTREAM=DIR", action="append", default=[],
                   help="index DIR as UPSTREAM instead of the fetched pin")
    p.set_defaults(func=cmd_new)

    p = sub.add_parser("schema", help="write the JSON Schema of annotation files (schema/annotation.schema.json)")
    p.add_argument("--check", action="store_true", help="exit 1 if the committed schema is out of date")
    p.set_defaults(func=cmd_schema)


def _sources(args) -> dict[str, Path]:
    from annotate.errors import UsageError

    out = {}
    for s in args.source:
        up, sep, d = s.partition("=")
        if not sep or not up or not d:
            raise UsageError(f"--source wants UPSTREAM=DIR, got '{s}'")
        if not Path(d).is_dir():
            raise UsageError(f"--source {s}: no such directory")
        out[up] = Path(d)
    return out


def make_project(config, args):
    """The Project `check` and `new` work on: the pins' index, or the --source trees instead."""
    from annotate.project import open_project

    return open_project(config, annotations_root=args.annotations, sources=_sources(args))


def known_harnesses(config) -> set[str] | None:
    """Names `annotate run` knows (folders with a spec.yaml); None (no check) if there are none yet."""
    from annotate.harness.spec import kernel_names

    try:
        names = set(kernel_names(config))
    except OSError:
        return None
    return names or None


def _inside(p: Path, root: Path) -> bool:
    import os

    try:
        Path(os.path.abspath(p)).relative_to(Path(os.path.abspath(root)))
        return True
    except ValueError:
        return False


def cmd_check(args, config) -> int:
    import time

    from annotate.errors import UsageError
    from annotate.notes.check import StaleExplainer, format_report, run_check
    from annotate.notes.history import default_indexer

    if args.against and args.against_dir:
        raise UsageError("give --against or --against-dir, not both")
    project = make_project(config, args)
    root = project.annotations_dir
    outside = [f for f in args.files if not Path(f).is_file() or not _inside(Path(f), root)]
    if outside:
        raise UsageError(f"{outside[0]}: not an annotation file under {root}",
                         hint="give files under the annotations root, or --annotations DIR")
    t0 = time.perf_counter()
    index = project.index
    t_index = time.perf_counter() - t0
    explainer = StaleExplainer(config, indexer=default_indexer(), git_dir=args.git_dir,
                               against_tree=args.against_dir, against_ref=args.against)
    report = run_check(config, index, args.annotations, refresh=args.refresh, explainer=explainer,
                       only=list(args.files) or None, known_harnesses=known_harnesses(config))
    if args.against or args.against_dir:
        from annotate.notes.drift import run_drift

        run_drift(config, report, index, ref=args.against, tree=args.against_dir, git_dir=args.git_dir,
                  upstream=args.upstream, indexer=default_indexer())
    report.index_seconds = t_index
    report.elapsed = time.perf_counter() - t0 - t_index
    if args.json:
        from annotate.jsonout import print_json

        print_json(report.to_json())
    else:
        echo(format_report(report))
    return report.exit_code(args.strict)


def cmd_new(args, config) -> int:
    from annotate.notes.api import display_path
    from annotate.notes.new import new_stub

    project = make_project(config, args)
    kind = "type" if args.type else "macro" if args.macro else None  # None: a function, else what it names
    res = new_stub(config, project.index, args.symbol, args.annotations, kind=kind)
    verb = "created" if res.created else "added to"
    echo(f"{display_path(config, res.file)}:{res.line}: {verb}: stub for {res.key}")
    return 0


def cmd_schema(args, config) -> int:
    from annotate.notes.schema import json_schema_text

    text = json_schema_text()
    path = config.schema_file
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if args.check:
        if current != text:
            echo(f"{path}: out of date; run `annotate schema`", err=True)
            return 1
        echo(f"{path}: up to date")
        return 0
    if current != text:
        from annotate.atomic import write_atomic

        write_atomic(path, text)
        echo(f"wrote {path}")
    else:
        echo(f"{path}: up to date")
    return 0

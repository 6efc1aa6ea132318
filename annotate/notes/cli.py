"""`annotate check`, `annotate new`, `annotate schema`. Imports are inside the handlers: this
module is imported on every `annotate` run, including on machines without pydantic."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


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

    p = sub.add_parser("new", help="write a stub for a function into the right YAML file")
    p.add_argument("symbol", metavar="SYMBOL", help="[UPSTREAM:]qualified_name[@path:line]")
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


def make_index(config, args):
    srcs = _sources(args)
    if srcs:
        from annotate.index.api import Index, index_directory

        if len(srcs) > 1:
            return Index.merged(*[index_directory(up, d, None) for up, d in srcs.items()])
        (up, d), = srcs.items()
        # no config: caching another tree of the same upstream would prune the pin's resolved index
        return index_directory(up, d, None)
    from annotate.index.api import load_index

    return load_index(config)


def _inside(p: Path, root: Path) -> bool:
    import os

    try:
        Path(os.path.abspath(p)).relative_to(Path(os.path.abspath(root)))
        return True
    except ValueError:
        return False


def cmd_check(args, config) -> int:
    from annotate.errors import UsageError
    from annotate.notes.check import StaleExplainer, format_report, report_json, run_check
    from annotate.notes.history import default_indexer

    if args.against and args.against_dir:
        raise UsageError("give --against or --against-dir, not both")
    root = args.annotations or config.annotations_dir
    outside = [f for f in args.files if not Path(f).is_file() or not _inside(Path(f), root)]
    if outside:
        raise UsageError(f"{outside[0]}: not an annotation file under {root}",
                         hint="give files under the annotations root, or --annotations DIR")
    import time

    t0 = time.perf_counter()
    index = make_index(config, args)
    t_index = time.perf_counter() - t0
    explainer = StaleExplainer(config, indexer=default_indexer(), git_dir=args.git_dir,
                               against_tree=args.against_dir, against_ref=args.against)
    report = run_check(config, index, args.annotations, refresh=args.refresh, explainer=explainer,
                       only=list(args.files) or None)
    if args.against or args.against_dir:
        from annotate.notes.drift import run_drift

        run_drift(config, report, index, ref=args.against, tree=args.against_dir, git_dir=args.git_dir,
                  upstream=args.upstream, indexer=default_indexer())
    report.index_seconds = t_index
    report.elapsed = time.perf_counter() - t0 - t_index
    if args.json:
        print(report_json(report))
    else:
        print(format_report(report))
    return report.exit_code(args.strict)


def cmd_new(args, config) -> int:
    from annotate.notes.new import new_stub

    index = make_index(config, args)
    res = new_stub(config, index, args.symbol, args.annotations)
    from annotate.notes.api import display_path

    verb = "created" if res.created else "added to"
    print(f"{display_path(config, res.file)}:{res.line}: {verb}: stub for {res.key}")
    return 0


def cmd_schema(args, config) -> int:
    from annotate.notes.schema import json_schema_text

    text = json_schema_text()
    path = config.schema_file
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if args.check:
        if current != text:
            print(f"{path}: out of date; run `annotate schema`", file=sys.stderr)
            return 1
        print(f"{path}: up to date")
        return 0
    if current != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    else:
        print(f"{path}: up to date")
    return 0

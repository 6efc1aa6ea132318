"""The command line: a thin adapter over functions a test can call in-process.

Each stage owns a small `cli` module with `register(subparsers)`; it must import nothing
heavy at module level, because `annotate run` has to work on GPU machines that carry only
torch, PyYAML and Jinja2. Whole-run failures arrive as AnnotateError and are formatted here,
once.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from annotate import __version__
from annotate.errors import AnnotateError

# Stage command modules, in the order their commands appear in --help.
COMMAND_MODULES = [
    "annotate.fetch.cli",
    "annotate.index.cli",
    "annotate.notes.cli",
    "site_builder.cli",
    "annotate.harness.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="annotate",
        description="A code-reading companion for FlashInfer and Flash-Attention.",
    )
    parser.add_argument("--version", action="version", version=f"annotate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from annotate.config import Config

    try:
        config = Config.load()
        return int(args.func(args, config) or 0)
    except AnnotateError as exc:
        print(f"annotate: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("annotate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

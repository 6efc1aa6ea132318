"""The command line: a thin adapter over functions a test can call in-process.

The commands live in annotate/commands/ (one module per group, above every stage) and in the
harness's own `cli` module (`annotate run` and friends, which import no other stage). Each has
`register(subparsers)` and must import nothing heavy at module level, because `annotate run`
has to work on GPU machines that carry only torch, PyYAML and Jinja2. Whole-run failures arrive
as AnnotateError and are formatted here, once, as plain text (control characters escaped).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from annotate import __version__
from annotate.errors import AnnotateError
from annotate.terminal import echo

# Stage command modules, in the order their commands appear in --help.
COMMAND_MODULES = [
    "annotate.commands.fetch",
    "annotate.commands.index",
    "annotate.commands.show",
    "annotate.commands.trace",
    "annotate.commands.notes",
    "annotate.commands.site",
    "annotate.commands.extract",
    "annotate.harness.cli",
    "annotate.commands.sass",
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
        echo(f"annotate: error: {exc.message}", err=True)
        if exc.hint:
            echo(f"  hint: {exc.hint}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        echo("annotate: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

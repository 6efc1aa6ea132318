"""Everything the command line shows a person: text made safe for a terminal, and the one Rich console.

Annotation keys and text, file names, pip's output and upstream source are data. Printed raw, an
ESC or OSC sequence in them can retitle the window, write the clipboard or clear the screen, and
Rich would read `[link=...]` in a note as markup. So every line the CLI prints goes through
`printable` (control characters shown as `\\x1b`-style escapes), and the console below treats every
string as plain text (no markup, no emoji codes, no highlighting) and cleans it the same way.
Rich is imported on first use: `annotate run` must start on machines that carry little else.
"""

from __future__ import annotations

import sys
from typing import TextIO

# C0 and C1 controls and DEL, but not tab or newline; plus the Unicode bidirectional overrides,
# which reorder what a reader sees without being visible themselves.
_BIDI = (0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069)
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if c not in (0x09, 0x0A)}
_ESCAPES.update({c: f"\\u{c:04x}" for c in _BIDI})


def printable(text: object) -> str:
    """`text` with every control character written as a visible escape (tab and newline kept)."""
    return str(text).translate(_ESCAPES)


def echo(text: object = "", *, err: bool = False, file: TextIO | None = None) -> None:
    """print() for anything that may hold user or upstream text."""
    print(printable(text), file=file or (sys.stderr if err else sys.stdout), flush=True)


_CONSOLE_CLASS = None


def _console_class():
    global _CONSOLE_CLASS
    if _CONSOLE_CLASS is None:
        from rich.console import Console

        class PlainTextConsole(Console):
            """Every str it renders (print arguments, table cells, titles) is plain, cleaned text."""

            def render_str(self, text, **kwargs):
                kwargs.update(markup=False, emoji=False, highlight=False)
                return super().render_str(printable(text), **kwargs)

        _CONSOLE_CLASS = PlainTextConsole
    return _CONSOLE_CLASS


def console(*, stderr: bool = False, no_color: bool = False, width: int | None = None):
    """The CLI's Rich console. Piped output (a pager, a file, a test) gets `width` columns (default
    160) instead of being squeezed to 80."""
    cls = _console_class()
    stream = sys.stderr if stderr else sys.stdout
    if width is None and not stream.isatty():
        width = 160
    return cls(file=stream, stderr=stderr, no_color=no_color, highlight=False, markup=False, emoji=False,
               soft_wrap=False, width=width)


def plain(text: object, style: str | None = None):
    """A Rich Text holding `text` as it is (cleaned), never read as markup."""
    from rich.text import Text

    return Text(printable(text), style=style or "")

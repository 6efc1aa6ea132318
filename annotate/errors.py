"""Errors that end a whole run. The CLI formats them once; nothing else prints them.

Per-item problems (one stale note, one unparsable file) are not exceptions: they are
`Diagnostic` values collected by the stage and reported together.
"""

from __future__ import annotations

from dataclasses import dataclass


class AnnotateError(Exception):
    """A failure the user can act on: a one-line message plus an optional hint (the fix)."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(AnnotateError):
    """Bad arguments or an unknown/ambiguous name on the command line."""

    exit_code = 2


class NoGPUError(AnnotateError):
    """A GPU-only action was asked for on a machine without a usable CUDA device."""

    exit_code = 2


@dataclass(frozen=True)
class Diagnostic:
    """One per-item problem, located as precisely as the stage can."""

    severity: str  # "error" | "warning" | "info"
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    code: str | None = None  # a short stable identifier, e.g. "stale", "unknown-key"
    symbol: str | None = None
    detail: str | None = None  # extra multi-line text (a diff, a candidate list)

    def location(self) -> str:
        parts = [self.file or "<unknown>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def format(self) -> str:
        """The diagnostic as terminal text: `file:line:col: severity [code]: message`, then the
        detail indented. File names, keys and quoted text are data: control characters in them
        are escaped (annotate.terminal.printable), so a diagnostic cannot drive the terminal."""
        from annotate.terminal import printable

        code = f" [{self.code}]" if self.code else ""
        text = printable(f"{self.location()}: {self.severity}{code}: {self.message}")
        if self.detail:
            text += "\n" + "\n".join("    " + printable(ln) for ln in self.detail.splitlines())
        return text

"""Progress for long work (fetch, index, site): Rich spinners and bars on stderr, or nothing.

One reporter for every stage, so that `-q` silences all of them the same way and a log (CI)
gets plain lines instead of redrawn bars.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


class Reporter:
    """say() prints a line; step() shows a spinner while a block runs; bar() counts items."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._made = None  # the console, made on first use: a build with nothing to say imports no Rich

    @property
    def _console(self):
        if self._made is None and self.enabled:
            from annotate.terminal import console

            self._made = console(stderr=True)
        return self._made

    @property
    def _live(self) -> bool:
        # live displays only on a terminal; in logs (CI) they would print as blank lines
        return self.enabled and self._console.is_terminal

    @classmethod
    def of(cls, progress: "bool | Reporter") -> "Reporter":
        """A stage's `progress` argument (on/off, or the caller's reporter) as a Reporter."""
        return progress if isinstance(progress, Reporter) else cls(bool(progress))

    def say(self, message: str) -> None:
        if self._console is not None:
            self._console.print(message, soft_wrap=True)

    def _progress(self, with_bar: bool):
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                                   TimeElapsedColumn)

        cols = [SpinnerColumn(), TextColumn("{task.description}", markup=False)]
        if with_bar:
            cols += [BarColumn(), MofNCompleteColumn()]
        cols.append(TimeElapsedColumn())
        return Progress(*cols, console=self._console, transient=True)

    @contextlib.contextmanager
    def step(self, description: str) -> Iterator[Callable[[str], None]]:
        """A spinner; the yielded function replaces its text (e.g. with a tool's latest line)."""
        if not self._live:
            yield lambda _text: None
            return
        from annotate.terminal import printable

        description = printable(description)
        with self._progress(False) as prog:
            task = prog.add_task(description, total=None)
            yield lambda text: prog.update(task, description=f"{description}: {printable(text[:80])}")

    @contextlib.contextmanager
    def bar(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        if not self._live:
            yield lambda _n=1: None
            return
        from annotate.terminal import printable

        with self._progress(True) as prog:
            task = prog.add_task(printable(description), total=total)
            yield lambda n=1: prog.advance(task, n)

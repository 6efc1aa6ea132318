"""Finding code text inside a function body, ignoring whitespace."""

from __future__ import annotations

import bisect
import difflib
from functools import lru_cache


def compact(text: str) -> str:
    return "".join(text.split())


def find_anchor(body: str, at: str) -> list[tuple[int, int]]:
    """Every place `at` occurs in `body`, whitespace ignored on both sides.

    Returns (first_line, last_line) pairs as 0-based line offsets into `body`. Overlapping
    matches count separately: an anchor must pick out one place.
    """
    needle = compact(at)
    if not needle:
        return []
    hay, starts = _compacted(body)

    def line_of(i: int) -> int:
        return bisect.bisect_right(starts, i) - 1

    out: list[tuple[int, int]] = []
    start = hay.find(needle)
    while start != -1:
        out.append((line_of(start), line_of(start + len(needle) - 1)))
        start = hay.find(needle, start + 1)
    return out


@lru_cache(maxsize=64)
def _compacted(body: str) -> tuple[str, list[int]]:
    """The body without white space, and where each line starts in it; a position maps back to
    the last line starting at or before it (blank lines start where the next line does). A
    function's notes all search one body: it is compacted once."""
    starts, pos = [], 0
    parts = []
    for line in body.split("\n"):
        part = compact(line)
        parts.append(part)
        starts.append(pos)
        pos += len(part)
    return "".join(parts), starts


def nearest_line(body: str, at: str) -> tuple[int, str] | None:
    """The body line (0-based offset, text) most similar to `at`, if any is close."""
    cands = [(i, ln.strip()) for i, ln in enumerate(body.split("\n")) if ln.strip()]
    if not cands:
        return None
    target = " ".join(at.split())
    best = max(cands, key=lambda c: difflib.SequenceMatcher(None, target, c[1]).ratio())
    if difflib.SequenceMatcher(None, target, best[1]).ratio() < 0.45:
        return None
    return best

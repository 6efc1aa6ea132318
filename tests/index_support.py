"""Helpers for the index tests: index a handful of snippet files written to a temp dir."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def index_snippets(tmp_path: Path, files: dict[str, str], upstream: str = "demo"):
    from annotate.index.api import index_directory

    return index_directory(upstream, write_tree(tmp_path / "src", files))


def line_of(text: str, needle: str, nth: int = 0) -> int:
    """1-based line of the nth line containing `needle` in the dedented snippet."""
    lines = textwrap.dedent(text).lstrip("\n").splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if needle in ln]
    return hits[nth]

"""Fixtures for the notes tests: the real index (`index_directory`) of tiny sources.

`NORM_SRC` is tests/data/notes/src/include/demo/norm.cuh (a C++-like file written for these
tests); `index_of` indexes it, or variants of it, from a temporary tree. The real pins are used
by the integration tests (test_notes_real.py).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

DATA = Path(__file__).parent / "data" / "notes"
NORM_SRC = (DATA / "src" / "include" / "demo" / "norm.cuh").read_text(encoding="utf-8")


def index_of(files: dict[tuple[str, str], str]):
    """The real Index of `files` ((upstream, path) -> text), written under a temporary directory
    that lives as long as the test process (the index reads source text lazily)."""
    from annotate.index.api import Index, index_directory

    base = Path(tempfile.mkdtemp(prefix="annotate-notes-test-"))
    atexit.register(shutil.rmtree, base, True)
    parts = []
    for up in sorted({u for u, _ in files}):
        for (u, path), text in files.items():
            if u == up:
                (base / up / path).parent.mkdir(parents=True, exist_ok=True)
                (base / up / path).write_text(text, encoding="utf-8")
        parts.append(index_directory(up, base / up))
    return Index.merged(*parts)


def write_annotation(root: Path, upstream: str, path: str, body: str, schema_line: str | None = "auto",
                     config=None) -> Path:
    """Write annotations/<upstream>/<path>.yaml under `root`; `body` is the YAML after line 1."""
    import os

    f = root / upstream / f"{path}.yaml"
    f.parent.mkdir(parents=True, exist_ok=True)
    head = ""
    if schema_line == "auto" and config is not None:
        rel = Path(os.path.relpath(config.schema_file, f.parent)).as_posix()
        head = f"# yaml-language-server: $schema={rel}\n"
    elif schema_line not in (None, "auto"):
        head = schema_line + "\n"
    f.write_text(head + body, encoding="utf-8")
    return f

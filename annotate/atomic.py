"""The one way this project replaces a file: write a temporary file beside it, then rename.

Readers never see half a file, a crash leaves the old one, and two processes writing the same
path (two `annotate build`s, a fetch racing a status) each rename a whole file of their own.

`write_atomic` makes files of our own (caches, records, site output); `write_sqlite_atomic` the
same for an SQLite database built in one go (the index store, the cross-language links).
`rewrite_atomic` edits a file a person owns (an annotation file): the edit lands on the file a
symbolic link points to, and the file keeps its permission bits, read-only ones included.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import sqlite3

_UMASK = None


def _mode() -> int:
    # mkstemp creates 0600; caches and outputs are shared like any file the user writes
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0)
        os.umask(_UMASK)
    return 0o666 & ~_UMASK


def write_atomic(path: Path, data: bytes | str, *, mkdir: bool = True) -> None:
    """Replace `path` with `data` (str is written as UTF-8) atomically."""
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    _replace(path, data, _mode())


def write_sqlite_atomic(path: Path, fill: Callable[["sqlite3.Connection"], None], *,
                        page_size: int | None = None) -> None:
    """Build an SQLite database at `path` atomically: `fill(conn)` writes it into a temporary
    file beside `path`, renamed into place once committed. No journal and no syncs while it is
    written: a half-written temporary file is never renamed, so there is nothing to recover.
    `page_size` must be set before the first table, so it is a parameter, not part of `fill`."""
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode=OFF")
            conn.execute("PRAGMA synchronous=OFF")
            if page_size is not None:
                conn.execute(f"PRAGMA page_size={int(page_size)}")
            fill(conn)
            conn.commit()
        finally:
            conn.close()
        os.chmod(tmp, _mode())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def rewrite_atomic(path: Path, data: bytes | str) -> Path:
    """Replace the contents of the existing file `path` atomically, as an edit: through a
    symbolic link to its target, keeping the target's permission bits. Returns the file written."""
    target = Path(os.path.realpath(path))
    _replace(target, data, os.stat(target).st_mode & 0o7777)
    return target


def _replace(path: Path, data: bytes | str, mode: int) -> None:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

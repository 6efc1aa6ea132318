"""The one way this project replaces a file: write a temporary file beside it, then rename.

Readers never see half a file, a crash leaves the old one, and two processes writing the same
path (two `annotate build`s, a fetch racing a status) each rename a whole file of their own.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.chmod(tmp, _mode())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

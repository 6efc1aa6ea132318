"""The on-disk cache of the index, keyed by content.

- per file: `index_dir()/files/<tool version>/<kk>/<key>.pickle`, key = sha1 of (upstream,
  path, git blob id); a changed file misses alone and is re-parsed alone.
- per upstream: `index_dir()/resolved/<upstream>-<tree key>.pickle`, the resolved FileIndex of
  every file, keyed by the tool version and the sorted (path, blob) list; a warm load reads
  this one file.
Writes go to a temporary file in the cache's tmp dir and are renamed into place (atomic), so
concurrent readers never see half a file.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from annotate.config import Config


def git_blob_id(data: bytes) -> str:
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def file_key(upstream: str, path: str, blob: str) -> str:
    return hashlib.sha1(f"{upstream}\0{path}\0{blob}".encode()).hexdigest()


def tree_key(version: str, entries: list[tuple[str, str]]) -> str:
    h = hashlib.sha1(version.encode())
    for path, blob in sorted(entries):
        h.update(f"{path}\0{blob}\n".encode())
    return h.hexdigest()[:20]


def file_entry_path(config: Config, version: str, key: str) -> Path:
    return config.index_dir() / "files" / version / key[:2] / f"{key}.pickle"


def resolved_path(config: Config, upstream: str, tkey: str) -> Path:
    return config.index_dir() / "resolved" / f"{upstream}-{tkey}.pickle"


def read(path: Path):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError):
        return None


def write(config: Config, path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = config.tmp_dir()
    tmp_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=tmp_dir, suffix=".pickle")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def prune_resolved(config: Config, upstream: str, keep: Path) -> None:
    """Old resolved snapshots of this upstream are dead weight once a new one is written."""
    d = config.index_dir() / "resolved"
    for p in d.glob(f"{upstream}-*.pickle"):
        if p != keep and p.name.rsplit("-", 1)[0] == upstream:
            try:
                p.unlink()
            except OSError:
                pass

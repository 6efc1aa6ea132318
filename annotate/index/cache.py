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

import gc
import hashlib
import pickle
from pathlib import Path

from annotate.atomic import write_atomic
from annotate.config import Config


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
    # Unpickling ~10^6 small objects: the cyclic GC would scan them again and again (2x slower).
    was = gc.isenabled()
    gc.disable()
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
        return None
    finally:
        if was:
            gc.enable()


def write(config: Config, path: Path, obj) -> None:
    write_atomic(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def prune_resolved(config: Config, upstream: str, keep: Path, keep_last: int = 3) -> None:
    """Keep the newest few resolved snapshots of this upstream (several checkouts of this tool
    at different versions may share one cache), delete older ones."""
    d = config.index_dir() / "resolved"
    olds = [p for p in d.glob(f"{upstream}-*.pickle") if p != keep and p.name[: -len(".pickle")].rsplit("-", 1)[0] == upstream]
    olds.sort(key=lambda p: p.stat().st_mtime if p.exists() else 0, reverse=True)
    for p in olds[keep_last - 1:]:
        try:
            p.unlink()
        except OSError:
            pass


def touch_version(config: Config, version: str) -> None:
    """Mark the per-file cache of this tool version as used now (prune_versions keeps the newest)."""
    d = config.index_dir() / "files" / version
    d.mkdir(parents=True, exist_ok=True)
    (d / ".used").touch()


def prune_versions(config: Config, current: str, keep_last: int = 3) -> None:
    """Per-file caches of other tool versions (older checkouts of this tool sharing the cache)
    beyond the newest few are deleted; a version in use elsewhere just re-parses on a miss."""
    import shutil

    d = config.index_dir() / "files"
    if not d.is_dir():
        return

    def used(p: Path) -> float:
        try:
            return (p / ".used").stat().st_mtime
        except OSError:
            return 0.0

    others = sorted((p for p in d.iterdir() if p.is_dir() and p.name != current), key=used, reverse=True)
    for p in others[keep_last - 1:]:
        shutil.rmtree(p, ignore_errors=True)

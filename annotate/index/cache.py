"""Where the index keeps what it derived, in `config.index_dir()` (all of it data, none of it
code; any part is safe to delete):

- `trees/<upstream>-<tree key>.sqlite`: the snapshot of one tree (store.py), keyed by the
  resolve version and the sorted (path, git blob id) list; never changed once written.
- `stat/<upstream>-<root digest>.json`: file stat data -> git blob id for one checkout, so a
  warm load hashes no source file that did not change (stat data is only trusted for files
  older than the moment they were recorded, as git does for its index).

Pre-SQLite versions of annotate kept pickles under `files/` and `resolved/`; they are never read.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from annotate.atomic import write_atomic
from annotate.config import Config

SNAPSHOT_SUFFIX = ".sqlite"
STAT_FORMAT = 2
# A file modified within this many seconds of being recorded may change again within the same
# mtime tick without its stat data changing; such entries are not kept (hashed again next time).
RACY_SECONDS = 2.0


def tree_key(version: str, entries: list[tuple[str, str]]) -> str:
    h = hashlib.sha1(version.encode())
    for path, blob in sorted(entries):
        h.update(f"{path}\0{blob}\n".encode())
    return h.hexdigest()[:20]


def snapshot_path(config: Config, upstream: str, tkey: str) -> Path:
    return config.index_dir() / "trees" / f"{upstream}-{tkey}{SNAPSHOT_SUFFIX}"


def snapshots(config: Config, upstream: str) -> list[Path]:
    """Snapshots of this upstream in the cache, newest first."""
    d = config.index_dir() / "trees"
    try:
        found = [p for p in d.iterdir() if p.name.endswith(SNAPSHOT_SUFFIX)
                 and p.name[: -len(SNAPSHOT_SUFFIX)].rsplit("-", 1)[0] == upstream]
    except OSError:
        return []

    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(found, key=mtime, reverse=True)


def prune_snapshots(config: Config, upstream: str, keep: Path, keep_last: int = 3) -> None:
    """Keep the newest few snapshots of this upstream (checkouts of this tool at other versions
    may share one cache, each with its own), delete older ones and abandoned temporary files."""
    for p in [q for q in snapshots(config, upstream) if q != keep][keep_last - 1:]:
        try:
            p.unlink()
        except OSError:
            pass
    d = config.index_dir() / "trees"
    now = time.time()
    for p in d.glob(f".{upstream}-*.tmp"):
        try:
            if now - p.stat().st_mtime > 3600:  # older than any build still writing it
                p.unlink()
        except OSError:
            pass


# ---- stat data -> blob id ------------------------------------------------------------------

def stat_path(config: Config, upstream: str, root: Path) -> Path:
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:16]
    return config.index_dir() / "stat" / f"{upstream}-{digest}.json"


def stat_tuple(st: os.stat_result) -> tuple[int, int, int]:
    # Not ctime: `chmod -R a-w` on a cache (a read-only copy) changes it for every file of the
    # checkouts inside, and an edit always moves mtime.
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def may_write(d: Path) -> bool:
    """Whether to write into `d`: it is writable, and its mode still has a write bit (root may
    write anywhere, but a cache someone made read-only stays untouched)."""
    try:
        return os.access(d, os.W_OK) and bool(d.stat().st_mode & 0o222)
    except OSError:
        return False


def read_stats(path: Path, root: Path) -> dict[str, tuple[tuple[int, int, int], str]]:
    """path -> (stat tuple, blob id) as recorded for `root`; {} when absent or not well formed."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict) or raw.get("format") != STAT_FORMAT or raw.get("root") != str(root):
        return {}
    files = raw.get("files")
    if not isinstance(files, dict):
        return {}
    out = {}
    for rel, v in files.items():
        if (isinstance(v, list) and len(v) == 4 and all(type(x) is int for x in v[:3]) and isinstance(v[3], str)
                and len(v[3]) == 40):
            out[rel] = (tuple(v[:3]), v[3])
    return out


def write_stats(path: Path, root: Path, entries: dict[str, tuple[tuple[int, int, int], str]],
                taken_ns: int, known: dict | None = None) -> bool:
    """Record stat data -> blob for the files that were older than RACY_SECONDS at `taken_ns`;
    nothing is written when that is what `known` (the file as read) already says."""
    limit = taken_ns - int(RACY_SECONDS * 1e9)
    keep = {rel: v for rel, v in sorted(entries.items()) if v[0][1] < limit}
    if known is not None and keep == known:
        return False
    files = {rel: [*st, blob] for rel, (st, blob) in keep.items()}
    write_atomic(path, json.dumps({"format": STAT_FORMAT, "root": str(root), "files": files}, separators=(",", ":")))
    return True

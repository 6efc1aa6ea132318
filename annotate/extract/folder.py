"""The one place that writes an extracted folder (`annotate extract KERNEL --into DIR`).

Safety rules, checked before anything is compiled:
- DIR is a directory (made if missing), never a file, a link, or the root of a file system;
- a non-empty DIR must hold the manifest of an earlier extraction (`.annotate-extract.json`),
  else it is refused (one line) unless `force`;
- a file annotate wrote there and somebody edited since is not overwritten unless `force`
  (the manifest records each file's hash): a learner's edits are never lost silently;
- only plain file names are written, directly inside DIR: nothing outside it is touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from annotate.atomic import write_atomic
from annotate.errors import AnnotateError, UsageError

MANIFEST = ".annotate-extract.json"
MANIFEST_MAX_BYTES = 1 << 20


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(folder: Path) -> dict | None:
    p = folder / MANIFEST
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MANIFEST_MAX_BYTES:
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return None
    return data


def prepare_folder(folder: Path, force: bool = False) -> Path:
    """Check DIR before any work; return it resolved. Raises UsageError (exit 2)."""
    folder = Path(os.path.abspath(Path(folder).expanduser()))
    if folder == Path(folder.anchor):
        raise UsageError(f"refusing to extract into the root of a file system ({folder})")
    if folder.is_symlink():
        raise UsageError(f"{folder} is a symbolic link; name the directory itself")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a directory")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        manifest = _read_manifest(folder)
        if manifest is None:
            raise UsageError(f"{folder} is not empty and annotate did not extract into it; "
                             "name an empty or new folder (or pass --force)")
        edited = _edited(folder, manifest)
        if edited:
            raise UsageError(f"{folder / edited[0]} was edited since annotate wrote it; "
                             "extract into another folder to keep the edits (or pass --force)")
    return folder


def _edited(folder: Path, manifest: Mapping) -> list[str]:
    out = []
    for name, digest in sorted(manifest.get("files", {}).items()):
        p = folder / str(name)
        if not _plain_name(str(name)) or not p.is_file() or p.is_symlink():
            continue
        if _sha(p.read_bytes()) != digest:
            out.append(str(name))
    return out


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..") and "\0" not in name


def write_folder(folder: Path, files: Mapping[str, str], stamp: Mapping) -> list[str]:
    """Write every file (plain names only) and the manifest; returns the names written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    digests = {}
    for name, text in files.items():
        if not _plain_name(name):
            raise AnnotateError(f"internal: refusing to write {name!r} (not a plain file name)")
        p = folder / name
        if p.is_symlink() or (p.exists() and not p.is_file()):
            raise AnnotateError(f"{p} is not a plain file; refusing to replace it")
        data = text.encode("utf-8")
        write_atomic(p, data, mkdir=False)
        digests[name] = _sha(data)
        written.append(name)
    manifest = {"version": 1, **dict(stamp), "files": digests}
    write_atomic(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n", mkdir=False)
    return written

"""Re-verify a checkout on disk against the locks: every file hashed, nothing trusted."""

from __future__ import annotations

import os
from pathlib import Path

from annotate.config import Config
from annotate.errors import AnnotateError
from annotate.progress import Reporter
from annotate.upstreams import Upstream


def verify_tree(config: Config, up: Upstream, root: Path, reporter: Reporter) -> tuple[int, list[str]]:
    """(files checked, lock paths absent from the tree). AnnotateError naming the first bad file."""
    from annotate.fetch import lock as locks  # here: `stat_digest` (every build's stamp) needs none of it

    expected = locks.expected_files(config, up)
    present: list[str] = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for f in files:
            present.append(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/"))
    with reporter.bar(f"verify {up.name}", len(present)) as advance:
        for rel in sorted(present):
            advance(1)
            want = expected.get(rel)
            if want is None:
                raise AnnotateError(f"{up.name}: {root / rel}: not in the lock (no such file at the pinned commit)",
                                    hint=f"annotate fetch --force {up.name}")
            got = locks.file_blob_id(root / rel)
            if got != want:
                raise AnnotateError(f"{up.name}: {root / rel}: blob {got[:12]} differs from the lock's {want[:12]}",
                                    hint=f"the checkout was modified: annotate fetch --force {up.name}")
    missing = sorted(set(expected) - set(present))
    return len(present), missing


def stat_digest(root: Path, paths: list[str] | tuple[str, ...] | None = None) -> str:
    """A digest of every file's path, size and modification time under `root` (or under its
    sub-paths `paths`); no file is read.

    Taken over the whole tree when it is verified and kept in its fetch record: a later digest
    that differs means the tree changed on disk since (a hand edit, a restored file), so `status`
    stops calling it verified. The site's input stamp takes it over the paths the index reads.
    """
    import hashlib

    h = hashlib.sha256()

    def walk(d: str, rel: str) -> None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            name = f"{rel}{e.name}"
            if e.is_dir(follow_symlinks=False):
                walk(e.path, name + "/")
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))

    for sub in (paths if paths is not None else [""]):
        sub = sub.strip("/")
        base = os.path.join(root, sub) if sub else str(root)
        if os.path.isdir(base):
            walk(base, f"{sub}/" if sub else "")
        elif os.path.lexists(base):
            st = os.lstat(base)
            h.update(f"{sub}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:32]

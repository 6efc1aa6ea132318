"""Locks: the git blob id of every file under a pin's sparse paths, recorded from a git repository.

A lock is what makes the archive route trustworthy: a release archive is only accepted file by
file, when each file's git blob id equals the one git records at the pinned commit. Locks are
written by `annotate lock` from any git directory that holds the pinned commit (a snapshot, a
mirror, a clone) and are committed under vendor_kernels/locks/.

Format (JSON, sorted, one file per line so diffs stay readable):
    {"name": ..., "commit": ..., "paths": [...], "exclude": [...],
     "files": {"include/a.h": "<40 hex>", ...}}
`exclude` (only when the pin has one) holds the pin's patterns; the files they match are not in
`files`, and no route fetches them. Paths in `files` are relative to the repository the lock
describes (for a submodule: the submodule's root, not the superproject's).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from annotate import git
from annotate.config import Config
from annotate.errors import AnnotateError
from annotate.upstreams import Submodule, Upstream, matches_exclude
from annotate.atomic import write_atomic


def git_blob_id(data: bytes) -> str:
    """The id git gives a blob with these bytes (sha1 of 'blob <size>\\0' + data)."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def file_blob_id(path: Path) -> str:
    """Blob id of a file on disk; a symbolic link hashes its target text, as git stores it."""
    if path.is_symlink():
        return git_blob_id(os.readlink(path).encode())
    return git_blob_id(path.read_bytes())


@dataclass(frozen=True)
class Lock:
    name: str
    commit: str
    paths: tuple[str, ...]
    files: dict[str, str]  # path -> blob id
    exclude: tuple[str, ...] = ()  # the pin's patterns, when it has any

    def prefixed(self, prefix: str) -> dict[str, str]:
        """files with `prefix` put in front (a submodule's lock placed inside its superproject)."""
        prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        return {prefix + p: b for p, b in self.files.items()}


def load_lock(config: Config, lock_rel: str, name: str, commit: str) -> Lock:
    path = config.lock_file(lock_rel)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnnotateError(f"{path}: lock for {name} not found",
                            hint=f"write it from a git copy of the pin: annotate lock {name} --from GITDIR") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AnnotateError(f"{path}: invalid lock JSON: {exc}") from None
    if raw.get("commit") != commit:
        raise AnnotateError(
            f"{path}: lock is for commit {str(raw.get('commit'))[:12]}, but the pin of {name} is {commit[:12]}",
            hint=f"regenerate it: annotate lock {name} --from GITDIR")
    return Lock(name=raw.get("name", name), commit=commit, paths=tuple(raw.get("paths") or ()),
                files=dict(raw.get("files") or {}), exclude=tuple(raw.get("exclude") or ()))


def pin_lock(config: Config, pin: Upstream | Submodule) -> Lock:
    """The lock of `pin`, which must have been written for the pin's own paths and exclusions:
    otherwise it would vouch for a different file set than the routes fetch."""
    lock = load_lock(config, pin.lock, pin.name, pin.commit)
    if (lock.paths, lock.exclude) != (tuple(pin.paths), tuple(pin.exclude)):
        raise AnnotateError(
            f"{config.lock_file(pin.lock)}: lock is for paths {list(lock.paths)} excluding {list(lock.exclude)}, "
            f"but the pin of {pin.name} has paths {list(pin.paths)} excluding {list(pin.exclude)}",
            hint=f"regenerate it: annotate lock {pin.name} --from GITDIR")
    return lock


def expected_files(config: Config, up: Upstream) -> dict[str, str]:
    """Every file a complete checkout of `up` holds (superproject + submodules), path -> blob id."""
    files = dict(pin_lock(config, up).files)
    for sub in up.submodules:
        files.update(pin_lock(config, sub).prefixed(sub.path))
    return files


# ---- reading a git repository (through annotate.git) ------------------------------------------
def resolve_gitdir(path: Path) -> Path:
    """A work tree or a bare repository -> its git directory."""
    gitdir = git.find_git_dir(path)
    if gitdir is None:
        raise AnnotateError(f"{path}: not a git repository")
    return gitdir


def tree_entries(gitdir: Path, commit: str, paths: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(mode, blob id, path) of every file under `paths` at `commit`; reads trees only, no blobs."""
    if not paths:
        return []
    # gitlinks (submodules) are not files of this repository
    return [(mode, oid, p) for mode, kind, oid, p in git.Repo(gitdir).ls_tree(commit, paths) if kind == "blob"]


def gitlink_at(gitdir: Path, commit: str, path: str) -> str | None:
    """The submodule commit the superproject records at `path` (None when there is no gitlink)."""
    for _mode, kind, oid, p in git.Repo(gitdir).ls_tree(commit, [path.strip("/")], recursive=False):
        if kind == "commit" and p == path.strip("/"):
            return oid
    return None


def has_commit(gitdir: Path, commit: str) -> bool:
    return git.Repo(gitdir).has_commit(commit)


def pin_entries(gitdir: Path, commit: str, paths: tuple[str, ...],
                exclude: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    """tree_entries under `paths` less the files the pin's `exclude` patterns match."""
    return [e for e in tree_entries(gitdir, commit, paths) if not matches_exclude(e[2], exclude)]


def lock_from_git(gitdir: Path, name: str, commit: str, paths: tuple[str, ...],
                  exclude: tuple[str, ...] = ()) -> Lock:
    if not has_commit(gitdir, commit):
        raise AnnotateError(f"commit {commit} not found in {gitdir}", hint="is the mirror up to date?")
    entries = tree_entries(gitdir, commit, paths)
    for pattern in exclude:  # a pattern that matches nothing is a typo or a pin that moved on
        if not any(matches_exclude(p, (pattern,)) for _m, _o, p in entries):
            raise AnnotateError(f"{name}: exclude pattern {pattern!r} matches no file under "
                                f"{', '.join(paths)} at {commit[:12]}",
                                hint="fix or drop it in vendor_kernels/upstreams.yaml")
    files = {p: oid for _mode, oid, p in entries if not matches_exclude(p, exclude)}
    if not files:
        raise AnnotateError(f"{gitdir}: no files under {', '.join(paths)} at {commit[:12]}")
    return Lock(name=name, commit=commit, paths=tuple(paths), files=files, exclude=tuple(exclude))


def write_lock(path: Path, lock: Lock) -> None:
    data = {"name": lock.name, "commit": lock.commit, "paths": list(lock.paths)}
    if lock.exclude:  # absent otherwise, so that locks of pins without one stay as they were
        data["exclude"] = list(lock.exclude)
    data["files"] = dict(sorted(lock.files.items()))
    write_atomic(path, json.dumps(data, indent=1) + "\n")


def lock_targets(config: Config, ups: dict[str, Upstream]) -> dict[str, tuple[Upstream | Submodule, Upstream]]:
    """Every lockable name (upstreams and their submodules) -> (pin, the upstream it belongs to)."""
    out: dict[str, tuple[Upstream | Submodule, Upstream]] = {}
    for up in ups.values():
        out[up.name] = (up, up)
        for sub in up.submodules:
            out[sub.name] = (sub, up)
    return out

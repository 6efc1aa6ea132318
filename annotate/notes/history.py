"""Recovering the body a reviewer fingerprinted, to show what changed since.

Two sources, tried in order: a store of bodies in the cache (every fingerprint that
`annotate new` / `annotate check --refresh` writes is stored with its text), and the
history of a local git mirror of the upstream (the directory or file:// URL given by
ANNOTATE_URL_<UPSTREAM> or --git-dir): the file's past versions are indexed until one holds
the function with that fingerprint.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from annotate.config import Config
from annotate.atomic import write_atomic

# index_directory(upstream, root, paths) -> Index; injectable for tests
Indexer = Callable[[str, Path, list], object]

MAX_REVS = 60
MAX_DIFF_LINES = 40


def default_indexer() -> Indexer:
    from annotate.index.api import index_directory

    return index_directory


class BodyStore:
    """fingerprint -> body text, in the cache (config.notes_bodies_dir())."""

    def __init__(self, config: Config):
        self.dir = config.notes_bodies_dir()

    def get(self, fp: str | None) -> str | None:
        if not fp or len(fp) != 16 or not all(c in "0123456789abcdef" for c in fp):
            return None
        p = self.dir / f"{fp}.txt"
        try:
            return p.read_text(encoding="utf-8")
        except OSError:
            return None

    def put(self, fp: str, text: str) -> None:
        try:
            p = self.dir / f"{fp}.txt"
            if not p.exists():
                write_atomic(p, text)
        except OSError:
            pass  # the store is a convenience; a read-only cache must not fail a check


def local_git_dir(location: str | os.PathLike | None) -> Path | None:
    """A local git directory (bare or with a work tree) named by a path or file:// URL."""
    if not location:
        return None
    loc = str(location)
    if loc.startswith("file://"):
        loc = loc[len("file://"):]
    if "://" in loc or loc.startswith("git@"):
        return None
    p = Path(loc).expanduser()
    if not p.is_dir():
        return None
    try:
        out = subprocess.run(["git", "-C", str(p), "rev-parse", "--absolute-git-dir"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def git_dir_for(config: Config, upstream: str, explicit: str | None = None) -> Path | None:
    if explicit:
        return local_git_dir(explicit)
    url, _ = config.url_for(upstream, "")
    return local_git_dir(url)


class GitRepo:
    def __init__(self, git_dir: Path):
        self.git_dir = git_dir

    def _git(self, *args: str, timeout: int = 60) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args], capture_output=True,
                              timeout=timeout)

    def rev_parse(self, ref: str) -> str | None:
        out = self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        return out.stdout.decode().strip() or None if out.returncode == 0 else None

    def show(self, ref: str, path: str) -> str | None:
        out = self._git("show", f"{ref}:{path}")
        if out.returncode != 0:
            return None
        return out.stdout.decode("utf-8", errors="replace")

    def revs_touching(self, ref: str, path: str, limit: int = MAX_REVS) -> list[str]:
        out = self._git("rev-list", f"--max-count={limit}", ref, "--", path)
        return out.stdout.decode().split() if out.returncode == 0 else []

    def grep_files(self, ref: str, word: str, pathspecs: list[str]) -> list[str]:
        out = self._git("grep", "-l", "-F", "-e", word, ref, "--", *pathspecs)
        if out.returncode != 0:
            return []
        return [ln.split(":", 1)[1] for ln in out.stdout.decode().splitlines() if ":" in ln]

    def export(self, ref: str, paths: list[str], dest: Path) -> list[str]:
        """Write those files at `ref` under dest; returns the paths that existed there."""
        got = []
        for p in paths:
            text = self.show(ref, p)
            if text is None:
                continue
            target = dest / p
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            got.append(p)
        return got


def find_in_history(repo: GitRepo, ref: str, upstream: str, path: str, qualified_name: str,
                    fingerprint: str, indexer: Indexer) -> tuple[str, str, int] | None:
    """(commit, body text, its first line) of the newest version of `path` before `ref` where the function
    had `fingerprint`."""
    seen_blobs: set[str] = set()
    for rev in repo.revs_touching(ref, path):
        text = repo.show(rev, path)
        if text is None or text in seen_blobs:
            continue
        seen_blobs.add(text)
        with tempfile.TemporaryDirectory(prefix="annotate-hist-") as tmp:
            f = Path(tmp) / path
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text, encoding="utf-8")
            try:
                idx = indexer(upstream, Path(tmp), [path])
                for sym in idx.symbols_in(upstream, path):
                    if sym.qualified_name == qualified_name and sym.fingerprint == fingerprint:
                        return rev, idx.text_of(sym), sym.start_line
            except Exception:  # an old version the parser cannot read: try the next one
                continue
    return None


def short_diff(old: str, new: str, old_label: str, new_label: str, old_start: int = 1,
               new_start: int = 1, max_lines: int = MAX_DIFF_LINES) -> str:
    """A unified diff with one line of context, line numbers in the upstream files."""
    a, b = old.splitlines(), new.splitlines()
    lines = []
    for ln in difflib.unified_diff(a, b, old_label, new_label, n=1, lineterm=""):
        if ln.startswith("@@"):
            # rebase hunk headers onto file line numbers
            try:
                _, olds, news, _ = ln.split(" ", 3) if ln.count(" ") >= 3 else (*ln.split(" "), "")
                o = olds[1:].split(",")
                n = news[1:].split(",")
                o[0] = str(int(o[0]) + old_start - 1)
                n[0] = str(int(n[0]) + new_start - 1)
                ln = f"@@ -{','.join(o)} +{','.join(n)} @@"
            except ValueError:
                pass
        lines.append(ln)
    if len(lines) > max_lines:
        more = len(lines) - max_lines
        lines = lines[:max_lines] + [f"... ({more} more diff lines)"]
    return "\n".join(lines)

"""Recovering the body a reviewer fingerprinted, to show what changed since.

Two sources, tried in order: a store of bodies in the cache (every fingerprint that
`annotate new` / `annotate check --refresh` writes is stored with its text), and the
history of a local git mirror of the upstream (a path or file:// URL in ANNOTATE_URL_<UPSTREAM>,
or --git-dir; annotate.git decides what a URL names): the file's past versions are indexed until one holds
the function with that fingerprint.
"""

from __future__ import annotations

import difflib
import tempfile
from pathlib import Path
from typing import Callable

from annotate import git
from annotate.atomic import write_atomic
from annotate.config import Config

# The notes' view of a repository's history (drift.py reads it through this name too).
GitRepo = git.Repo

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


def git_dir_for(config: Config, upstream: str, explicit: str | None = None) -> Path | None:
    """The local git directory holding the upstream's history: --git-dir, else the upstream's URL
    override when it names a repository on this machine (a path or a file:// URL)."""
    location = explicit or config.url_for(upstream, "")[0]
    if not location:
        return None
    where = git.remote(str(location))
    return git.find_git_dir(where.path) if where.local else None


def definitions_in(index, upstream: str, path: str, kind: str = "function") -> list:
    """The functions, types or macros (by `kind`) an index holds in one file."""
    if kind == "type":
        return index.types_in(upstream, path)
    if kind == "macro":
        return index.macros_in(upstream, path)
    return index.symbols_in(upstream, path)


def all_definitions(index, upstream: str, kind: str = "function") -> list:
    """Every function, type or macro (by `kind`) an index holds for one upstream."""
    if kind == "function":
        return [s for s in index.all_symbols() if s.upstream == upstream]
    return [d for fi in index.files(upstream) for d in (fi.types if kind == "type" else fi.macros)]


def find_in_history(repo: GitRepo, ref: str, upstream: str, path: str, qualified_name: str,
                    fingerprint: str, indexer: Indexer, kind: str = "function") -> tuple[str, str, int] | None:
    """(commit, body text, its first line) of the newest version of `path` before `ref` where the function
    (or type or macro, by `kind`) had `fingerprint`."""
    seen_blobs: set[str] = set()
    for rev in repo.revs_touching(ref, path, MAX_REVS):
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
                for sym in definitions_in(idx, upstream, path, kind):
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

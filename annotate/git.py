"""The one way this project drives git: the `git` program, run with an explicit git directory.

Three places need git — the fetch's git route, `annotate lock` and the notes' history (stale
diffs, `check --against`) — and all of them come here, so what a URL means and how a failure
reads is decided once.

What a URL means (`remote(url)`), as git itself reads it:
- a plain path (`/srv/mirrors/x.git`, `~/src/x`) is a repository on this machine, read in place:
  the fetch clones it `--shared` (nothing copied), locks and history read it directly;
- a `file://` URL is also a repository on this machine (locks and history read it directly), but
  the fetch goes through git's transport, exactly as `git clone file://…` does, so it behaves
  like a remote (blobless fetch of one commit) and needs a complete repository;
- anything else (https, ssh, `user@host:path`) is a remote.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence
from urllib.parse import unquote, urlsplit

from annotate.config import child_env
from annotate.errors import AnnotateError

# Ceiling for one git command; reachability is probed first, so an offline host fails long before.
COMMAND_TIMEOUT = 3600
# Reading a local repository (ls-tree, show, rev-list) takes seconds at most.
READ_TIMEOUT = 120

_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")


class GitError(AnnotateError):
    """A git command failed; `stderr` holds what git said."""

    def __init__(self, message: str, stderr: str = ""):
        super().__init__(message)
        self.stderr = stderr

    def last_line(self) -> str:
        lines = [ln.strip().strip("'\"") for ln in self.stderr.splitlines() if ln.strip().strip("'\"")]
        return (lines[-1] if lines else self.message)[:300]


@dataclass(frozen=True)
class Remote:
    url: str
    path: Path | None  # the repository's directory when it is on this machine
    in_place: bool  # a plain path: cloned --shared and read where it lies

    @property
    def local(self) -> bool:
        return self.path is not None


def remote(url: str) -> Remote:
    """What `url` names (see the module docstring)."""
    if url.startswith("file://"):
        return Remote(url, Path(unquote(urlsplit(url).path)), False)
    if "://" in url or _SCP_LIKE.match(url):
        return Remote(url, None, False)
    return Remote(url, Path(url).expanduser(), True)


def available() -> bool:
    return shutil.which("git") is not None


def run(args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = COMMAND_TIMEOUT,
        cwd: Path | None = None) -> bytes:
    """stdout of `git ARGS`; GitError (with git's stderr) when it fails or cannot run."""
    cmd = ["git", *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, env=dict(env) if env is not None else read_env(),
                              timeout=timeout, cwd=cwd)
    except FileNotFoundError:
        raise GitError("git: no git executable on PATH") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args[:2])} gave no result in {timeout:g} s",
                       f"timed out after {timeout:g} s") from None
    if proc.returncode:
        err = proc.stderr.decode("utf-8", "replace")
        first = next((a for a in args if not a.startswith("-")), args[0] if args else "")
        tail = (err.strip().splitlines() or ["?"])[-1]
        raise GitError(f"git {first} failed: {tail}", err)
    return proc.stdout


def read_env() -> dict[str, str]:
    """The environment of git commands that only read a local repository."""
    return child_env({"GIT_TERMINAL_PROMPT": "0"})


def find_git_dir(path: Path) -> Path | None:
    """The git directory of a work tree or a bare repository at `path`, else None."""
    path = Path(path).expanduser()
    if not path.is_dir():
        return None
    try:
        out = run(["-C", str(path), "rev-parse", "--absolute-git-dir"], timeout=READ_TIMEOUT)
    except GitError:
        return None
    text = out.decode("utf-8", "surrogateescape").strip()
    return Path(text) if text else None


class Repo:
    """One repository, driven through its git directory (and a work tree where one is checked out)."""

    def __init__(self, git_dir: Path, work_tree: Path | None = None, env: Mapping[str, str] | None = None):
        self.git_dir = Path(git_dir)
        self.work_tree = work_tree
        self.env = dict(env) if env is not None else read_env()

    @classmethod
    def init(cls, dest: Path, env: Mapping[str, str] | None = None) -> "Repo":
        run(["init", "--quiet", str(dest)], env=env, timeout=READ_TIMEOUT)
        return cls(Path(dest) / ".git", Path(dest), env)

    @classmethod
    def clone_shared(cls, src: Path, dest: Path, env: Mapping[str, str] | None = None) -> "Repo":
        """A clone of the local repository `src` that borrows its objects (nothing is copied)."""
        run(["clone", "--quiet", "--no-checkout", "--shared", str(src), str(dest)], env=env)
        return cls(Path(dest) / ".git", Path(dest), env)

    def git(self, *args: str, timeout: float = COMMAND_TIMEOUT, env: Mapping[str, str] | None = None) -> bytes:
        pre = [f"--git-dir={self.git_dir}"] + ([f"--work-tree={self.work_tree}"] if self.work_tree else [])
        return run([*pre, *args], env=env if env is not None else self.env, timeout=timeout)

    def text(self, *args: str) -> str | None:
        """stdout of a reading command as text, None when it fails."""
        try:
            return self.git(*args, timeout=READ_TIMEOUT).decode("utf-8", "replace")
        except GitError:
            return None

    # ---- reading ---------------------------------------------------------------------------
    def rev_parse(self, ref: str) -> str | None:
        out = self.text("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        return out.strip() or None if out is not None else None

    def has_commit(self, commit: str) -> bool:
        """Whether the commit is here (a partial clone is not asked to fetch it)."""
        try:
            self.git("cat-file", "-e", f"{commit}^{{commit}}", timeout=READ_TIMEOUT,
                     env={**self.env, "GIT_NO_LAZY_FETCH": "1"})
            return True
        except GitError:
            return False

    def ls_tree(self, commit: str, paths: Sequence[str], recursive: bool = True) -> list[tuple[str, str, str, str]]:
        """(mode, kind, object id, path) under `paths` at `commit`: trees only, no blob is read."""
        out = self.git("ls-tree", *(["-r"] if recursive else []), "-z", "--full-tree", commit, "--", *paths,
                       timeout=READ_TIMEOUT)
        rows = []
        for rec in out.split(b"\0"):
            if rec:
                meta, path = rec.split(b"\t", 1)
                mode, kind, oid = meta.decode().split()
                rows.append((mode, kind, oid, path.decode("utf-8", "surrogateescape")))
        return rows

    def show(self, ref: str, path: str) -> str | None:
        return self.text("show", f"{ref}:{path}")

    def revs_touching(self, ref: str, path: str, limit: int) -> list[str]:
        out = self.text("rev-list", f"--max-count={limit}", ref, "--", path)
        return out.split() if out else []

    def grep_files(self, ref: str, word: str, pathspecs: list[str]) -> list[str]:
        out = self.text("grep", "-l", "-F", "-e", word, ref, "--", *pathspecs)
        return [ln.split(":", 1)[1] for ln in (out or "").splitlines() if ":" in ln]

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

    def remove_git_dir(self) -> None:
        """Drop the repository itself, keeping the checked-out files (a checkout carries no .git)."""
        shutil.rmtree(self.git_dir)


"""The git route: only the pin's sparse paths, at exactly the pinned commit (git driven by annotate.git).

A local directory (a mirror snapshot, a clone) is cloned with --shared and --no-checkout:
nothing is copied, and only the sparse paths are ever read. Anything else (https, ssh, file://,
see annotate.git.remote) gets an empty repository and `git fetch --depth=1 --filter=blob:none
origin <commit>`, so only the pinned commit's trees come over and the checkout then pulls just
the blobs of the sparse paths. Servers that refuse a fetch by commit id get a blobless fetch of
all branches and tags.

A pin's `exclude` patterns are applied to the commit's tree by the same matcher the lock writer
and the archive route use; the sparse checkout gets each excluded file as a negated literal
pattern, so git never fetches those blobs, and the tree on disk is then compared with the
selection file by file.

The finished tree carries no .git: both routes leave the same files, verified against the same
lock, and the fetch record says which commit they came from.
"""

from __future__ import annotations

import os
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from annotate import git
from annotate.config import Config
from annotate.errors import AnnotateError
from annotate.fetch import lock as locks
from annotate.progress import Reporter
from annotate.upstreams import Submodule, Upstream, matches_exclude

class RouteUnavailable(AnnotateError):
    """The route cannot run here (no network, URL absent); `--via auto` moves on to the next."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message, hint or "check the network, point ANNOTATE_URL_<NAME> at a reachable "
                                          "mirror or clone, or use --via archive")


@dataclass(frozen=True)
class GitResult:
    url: str
    url_origin: str  # where the URL came from (pin file, environment, config file)
    files: int
    missing: tuple[str, ...]  # checkout-relative sparse paths that hold no file at the pin
    verified: str  # "full" | "partial" | "commit" (HEAD checked, no lock to compare with)
    submodules: tuple[dict, ...]


_PROBED: dict[tuple[str, int], str | None] = {}  # (host, port) -> why it is unreachable, None if fine


def _endpoint(url: str, config: Config) -> tuple[str, int] | None:
    """(host, port) the remote's first packet goes to, through a proxy when one is set."""
    if "://" not in url and "@" in url.split(":", 1)[0]:  # user@host:path
        return url.split("@", 1)[1].split(":", 1)[0], 22
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        proxy = config.proxy_for(parts.scheme)
        if proxy:
            p = urlsplit(proxy if "://" in proxy else "http://" + proxy)
            return p.hostname or "", p.port or 80
    default = {"http": 80, "https": 443, "ssh": 22, "git": 9418}.get(parts.scheme)
    if default is None or not parts.hostname:
        return None
    return parts.hostname, parts.port or default


def probe(url: str, config: Config) -> None:
    """Fail fast (RouteUnavailable) when the remote cannot be reached: DNS or connect in time."""
    where = git.remote(url)
    if where.local:
        if not where.path.exists():
            raise RouteUnavailable(f"git: {url} does not exist")
        return
    timeout = config.git_timeout()
    ep = _endpoint(url, config)
    if ep is None:
        return
    if ep in _PROBED:  # one answer per host and process: three pins on one host cost one timeout
        if _PROBED[ep]:
            raise RouteUnavailable(f"git: cannot reach {url} ({_PROBED[ep]}; offline?)")
        return
    outcome: list[BaseException | None] = []

    def attempt():
        try:
            socket.create_connection(ep, timeout=timeout).close()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome.append(exc)

    t = threading.Thread(target=attempt, daemon=True)  # getaddrinfo has no timeout of its own
    t.start()
    t.join(timeout)
    if not outcome:
        _PROBED[ep] = f"no answer from {ep[0]} in {timeout:g} s"
    elif outcome[0] is not None:
        _PROBED[ep] = f"{type(outcome[0]).__name__}: {outcome[0]}"
    else:
        _PROBED[ep] = None
    if _PROBED[ep]:
        raise RouteUnavailable(f"git: cannot reach {url} ({_PROBED[ep]}; offline?)")


def _require_git() -> None:
    if not git.available():
        raise RouteUnavailable("git: no git executable on PATH")


_NETWORK = ("could not resolve host", "unable to access", "connection refused", "could not read from remote",
            "timed out", "network is unreachable", "connection reset")


def _is_network(exc: git.GitError) -> bool:
    return any(s in exc.last_line().lower() for s in _NETWORK)


def _raise_git(what: str, url: str, exc: git.GitError) -> None:
    msg = exc.last_line()
    if "No space left on device" in msg:
        raise AnnotateError(f"disk full while {what} from {url}",
                            hint="free some space or point ANNOTATE_CACHE_DIR at a larger disk") from None
    if _is_network(exc):
        raise RouteUnavailable(f"git: cannot reach {url} ({msg}; offline?)") from None
    raise AnnotateError(f"git: {what} from {url} failed: {msg}") from None


def _literal(path: str) -> str:
    """A path as a sparse-checkout (gitignore) pattern that matches exactly that path."""
    path = re.sub(r"([\\*?\[])", r"\\\1", path)
    return path[:-1] + "\\ " if path.endswith(" ") else path


def _sparse_patterns(paths: tuple[str, ...], excluded: list[str] = ()) -> str:
    """The pin's folders, then every excluded file under them as a negated literal: git decides
    nothing by itself, the pin's own matcher chose the files."""
    return ("".join("/" + p.lstrip("/") + "\n" for p in paths)
            + "".join("!/" + _literal(p) + "\n" for p in excluded))


def obtain(config: Config, url: str, commit: str, dest: Path, reporter: Reporter, label: str) -> git.Repo:
    """A repository at `dest` that holds `commit` (its trees at least), nothing checked out."""
    _require_git()
    env = config.git_env()
    where = git.remote(url)
    with reporter.step(f"git: {label}: getting {commit[:12]} from {url}"):
        try:
            if where.in_place:
                repo = git.Repo.clone_shared(where.path, dest, env)
            else:
                repo = git.Repo.init(dest, env)
                repo.git("remote", "add", "origin", url)
                try:
                    repo.git("fetch", "--quiet", "--depth=1", "--filter=blob:none", "--no-tags", "origin", commit)
                except git.GitError as exc:
                    if _is_network(exc):
                        raise
                    # servers that refuse fetching an unadvertised commit: take every ref, blobless
                    repo.git("fetch", "--quiet", "--filter=blob:none", "origin",
                             "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
        except git.GitError as exc:
            msg = exc.last_line().lower()
            if any(s in msg for s in ("not our ref", "couldn't find remote ref", "no such remote ref",
                                      "unadvertised")):
                raise AnnotateError(f"commit {commit} not found in {url}", hint="is the mirror up to date?") from None
            _raise_git(f"fetching {label}", url, exc)
    if not repo.has_commit(commit):
        raise AnnotateError(f"commit {commit} not found in {url}", hint="is the mirror up to date?")
    return repo


def checkout_trees(config: Config, url: str, commit: str, dest: Path) -> git.Repo:
    """For `annotate lock` from a remote: the commit's trees only (a blobless fetch), quietly."""
    probe(url, config)
    return obtain(config, url, commit, dest, Reporter(False), "lock")


def lock_for(config: Config, name: str, pin: Upstream | Submodule, source: str | None = None) -> locks.Lock:
    """The lock of one pin, read from `source` (a git directory) or else from the pin's URL after
    overrides: a repository on this machine is read in place, a remote gets a blobless fetch of
    the one commit (only trees are needed)."""
    exclude = tuple(pin.exclude)
    if source:
        return locks.lock_from_git(locks.resolve_gitdir(Path(source)), name, pin.commit, pin.paths, exclude)
    url, _origin = config.url_for(name, pin.url)
    where = git.remote(url)
    if where.local:
        return locks.lock_from_git(locks.resolve_gitdir(where.path), name, pin.commit, pin.paths, exclude)
    import tempfile

    config.tmp_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=config.tmp_dir(), prefix=f"lock-{name}-") as tmp:
        repo = checkout_trees(config, url, pin.commit, Path(tmp) / "repo")
        return locks.lock_from_git(repo.git_dir, name, pin.commit, pin.paths, exclude)


def checkout(config: Config, url: str, commit: str, paths: tuple[str, ...], dest: Path,
             reporter: Reporter, label: str, exclude: tuple[str, ...] = ()) -> git.Repo:
    """Put `paths` of `commit` from `url`, less the files `exclude` matches, into the new directory
    `dest` (with a .git); returns the Repo."""
    repo = obtain(config, url, commit, dest, reporter, label)
    excluded = sorted(p for _m, _o, p in locks.tree_entries(repo.git_dir, commit, paths)
                      if matches_exclude(p, exclude)) if exclude else []
    repo.git("config", "core.sparseCheckout", "true")
    repo.git("config", "core.autocrlf", "false")  # files must stay byte-identical to the blobs
    (repo.git_dir / "info").mkdir(exist_ok=True)
    (repo.git_dir / "info" / "sparse-checkout").write_text(_sparse_patterns(paths, excluded), encoding="utf-8")
    with reporter.step(f"git: {label}: checking out {', '.join(paths)}"):
        try:
            repo.git("checkout", "--quiet", "--detach", commit)
        except git.GitError as exc:
            _raise_git(f"checking out {label} {commit[:12]}", url, exc)
    head = repo.rev_parse("HEAD")
    if head != commit:
        raise AnnotateError(f"git: {label}: HEAD is {head} after checkout, expected the pin {commit}")
    return repo


def _files_on_disk(workdir: Path) -> set[str]:
    """Every file (and symbolic link) under `workdir`, '/'-separated, its .git left out."""
    out = set()
    for dirpath, dirs, files in os.walk(workdir):
        if dirpath == str(workdir):
            dirs[:] = [d for d in dirs if d != ".git"]
        rel = os.path.relpath(dirpath, workdir).replace(os.sep, "/")
        rel = "" if rel == "." else rel + "/"
        out.update(rel + f for f in files)
        out.update(rel + d for d in dirs if os.path.islink(os.path.join(dirpath, d)))
    return out


def _verify_tree(config: Config, gitdir: Path, pin: Upstream | Submodule, workdir: Path,
                 prefix: str) -> tuple[int, list[str], bool]:
    """Compare the commit's tree under the pin's paths (less its exclusions) with the lock and with
    the files on disk. Returns (files, missing paths, locked)."""
    commit, paths, lock_rel, name = pin.commit, tuple(pin.paths), pin.lock, pin.name
    entries = locks.pin_entries(gitdir, commit, paths, tuple(pin.exclude))
    tree = {p: oid for _m, oid, p in entries}
    missing = [prefix + p for p in paths if not any(t.startswith(p) or t == p.rstrip("/") for t in tree)]
    for p in tree:
        if not os.path.lexists(workdir / p):
            missing.append(prefix + p)
    extra = sorted(_files_on_disk(workdir) - set(tree))
    if extra:
        raise AnnotateError(f"{name}: git checked out {prefix}{extra[0]}, which the pin does not select"
                            + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""),
                            hint="git's sparse checkout did not follow the pin's paths and exclude patterns; "
                                 "check `git --version`")
    locked = config.lock_file(lock_rel).is_file()
    if locked:
        lock = locks.pin_lock(config, pin)
        for p in sorted(set(tree) | set(lock.files)):
            if tree.get(p) != lock.files.get(p):
                why = ("not in the lock" if p not in lock.files else
                       "in the lock but not at the commit" if p not in tree else "blob differs from the lock")
                raise AnnotateError(f"{name}: {prefix}{p} at {commit[:12]}: {why}",
                                    hint=f"the lock {config.lock_file(lock_rel)} is stale: "
                                         f"annotate lock {name} --from GITDIR")
    return len(tree), missing, locked


def fetch_git(config: Config, up: Upstream, dest: Path, reporter: Reporter) -> GitResult:
    """Build the checkout of `up` (with its submodules) in `dest`, which must not exist yet."""
    url, origin = config.url_for(up.name, up.url)
    _require_git()
    probe(url, config)
    for sub in up.submodules:  # fail before any transfer when a submodule's remote is unreachable
        probe(config.url_for(sub.name, sub.url)[0], config)
    repo = checkout(config, url, up.commit, up.paths, dest, reporter, up.name, exclude=up.exclude)
    gitdir = repo.git_dir
    files, missing, locked = _verify_tree(config, gitdir, up, dest, "")
    subs = []
    for sub in up.submodules:
        recorded = locks.gitlink_at(gitdir, up.commit, sub.path)
        if recorded is None:
            raise AnnotateError(f"{up.name} {up.commit[:12]} has no submodule at {sub.path}",
                                hint="the submodule entry in upstreams.yaml does not match the upstream")
        if recorded != sub.commit:
            raise AnnotateError(
                f"{up.name} {up.commit[:12]} records {sub.name} at {recorded[:12]}, "
                f"but upstreams.yaml pins {sub.commit[:12]}",
                hint="make the submodule pin in vendor_kernels/upstreams.yaml equal the superproject's gitlink")
        sub_url, sub_origin = config.url_for(sub.name, sub.url)
        sub_dest = dest / sub.path
        if sub_dest.exists() and not any(sub_dest.iterdir()):
            sub_dest.rmdir()
        sub_dest.parent.mkdir(parents=True, exist_ok=True)
        srepo = checkout(config, sub_url, sub.commit, sub.paths, sub_dest, reporter, sub.name,
                         exclude=sub.exclude)
        s_files, s_missing, s_locked = _verify_tree(config, srepo.git_dir, sub, sub_dest, sub.path + "/")
        srepo.remove_git_dir()
        files += s_files
        missing += s_missing
        locked = locked and s_locked
        subs.append({"name": sub.name, "path": sub.path, "commit": sub.commit, "url": sub_url,
                     "url_origin": sub_origin, "files": s_files, "missing": s_missing})
    repo.remove_git_dir()
    verified = "commit" if not locked else ("partial" if missing else "full")
    return GitResult(url=url, url_origin=origin, files=files, missing=tuple(missing), verified=verified,
                     submodules=tuple(subs))

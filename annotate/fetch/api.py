"""The fetch stage: pinned upstream sources in the cache, verified, by git or by release archive.

    ensure_fetched(config, names=None, via="auto", progress=True) -> list[FetchRecord]
    fetch_status(config) -> list[PinStatus]
    fetched_root(config, name) -> Path | None

A checkout is built in config.tmp_dir() and renamed into config.checkout_dir(name, commit); its
record (JSON, config.fetch_record) is written last. A checkout counts as fetched only when the
record is there and names the pin's commits, so a crash at any point leaves either the previous
checkout or nothing, never half a tree. A per-pin file lock serialises processes; whoever waited
re-checks and finds the work done.

"verified" in a record:
  full    - every file under the pin's sparse paths is present and carries the git blob id the
            lock records at the pinned commit (git route: HEAD equals the pin and its tree equals
            the lock);
  partial - every file present matches the lock, and the files listed in `missing` are absent
            (the flash-attn sdist ships little of hopper/ and lacks 29 cutlass .inl files);
  commit  - git route without a lock file: HEAD equals the pin, nothing more was compared.
A file that differs from the lock is never accepted: the fetch fails naming it.

Each record also keeps `tree_stat`, a digest of the tree's file stats taken when it was verified
(fetch.verify.stat_digest); `fetch_status` reports a tree whose stats no longer match as
verified "changed", until `annotate fetch --verify` hashes it again.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from annotate.config import Config
from annotate.errors import AnnotateError, UsageError
from annotate.progress import Reporter
from annotate.upstreams import Upstream, load_upstreams
from annotate.atomic import write_atomic

ROUTES = ("auto", "git", "archive")
RECORD_VERSION = 1
LOCK_WAIT_SECONDS = 3600


@dataclass(frozen=True)
class SubmoduleRecord:
    name: str
    path: str  # inside the superproject's checkout
    commit: str
    source: str  # URL (git) or the archive file the files came from
    files: int
    missing: tuple[str, ...]  # checkout-relative paths


@dataclass(frozen=True)
class FetchRecord:
    name: str
    commit: str
    tag: str
    route: str  # "git" | "archive" | "existing" (a tree found in place and verified there)
    source: str  # the URL or archive file used
    reason: str  # why this route (what auto tried first)
    root: Path
    fetched_at: str  # ISO 8601, UTC
    seconds: float
    verified: str  # "full" | "partial" | "commit" (see the module docstring)
    files: int
    missing: tuple[str, ...] = ()  # checkout-relative paths the lock lists but the tree lacks
    submodules: tuple[SubmoduleRecord, ...] = ()
    tree_stat: str = ""  # fetch.verify.stat_digest of the tree when it was verified ("" in older records)
    selection: str = ""  # Upstream.selection() of the pin it was fetched for ("" in older records)

    def to_json(self) -> dict:
        d = asdict(self)
        d["root"] = str(self.root)
        d["missing"] = list(self.missing)
        d["submodules"] = [{**asdict(s), "missing": list(s.missing)} for s in self.submodules]
        d["version"] = RECORD_VERSION
        return d

    @classmethod
    def from_json(cls, d: dict) -> "FetchRecord":
        subs = tuple(SubmoduleRecord(name=s["name"], path=s["path"], commit=s["commit"], source=s.get("source", ""),
                                     files=int(s.get("files", 0)), missing=tuple(s.get("missing") or ()))
                     for s in d.get("submodules") or ())
        return cls(name=d["name"], commit=d["commit"], tag=d.get("tag", ""), route=d["route"],
                   source=d.get("source", ""), reason=d.get("reason", ""), root=Path(d["root"]),
                   fetched_at=d.get("fetched_at", ""), seconds=float(d.get("seconds", 0)),
                   verified=d.get("verified", ""), files=int(d.get("files", 0)),
                   missing=tuple(d.get("missing") or ()), submodules=subs, tree_stat=str(d.get("tree_stat") or ""),
                   selection=str(d.get("selection") or ""))


@dataclass(frozen=True)
class PinStatus:
    name: str
    kind: str  # "upstream" | "submodule"
    parent: str | None  # the upstream a submodule lives in
    commit: str
    tag: str
    fetched: bool
    route: str | None
    verified: str | None  # as recorded, or "changed" when the tree's stats moved since it was verified
    missing: tuple[str, ...]
    fetched_at: str | None
    root: Path | None
    path: str = ""  # a submodule's place inside its parent's checkout ("" for an upstream)
    files: int | None = None  # files in the checkout (a submodule: under its path)
    source: str | None = None  # URL or archive file
    reason: str | None = None  # why that route (what `--via auto` tried first)
    annotation_files: int | None = None  # annotation coverage (upstream rows only)
    annotated_functions: int | None = None
    broken_annotation_files: tuple[str, ...] = field(default=())

    def to_json(self) -> dict:
        d = asdict(self)
        d["root"] = str(self.root) if self.root else None
        d["missing"] = list(self.missing)
        d["missing_count"] = len(self.missing)
        d["broken_annotation_files"] = list(self.broken_annotation_files)
        return d


# ---- records ------------------------------------------------------------------------------------
def read_record(config: Config, up: Upstream) -> FetchRecord | None:
    """The record of `up` when it names the current pins (upstream and submodules) and its tree exists."""
    path = config.fetch_record(up.name, up.commit)
    try:
        rec = FetchRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (ValueError, KeyError, TypeError):
        return None  # a damaged record is no record: the next fetch rebuilds
    if rec.commit != up.commit or {s.name: s.commit for s in rec.submodules} != \
            {s.name: s.commit for s in up.submodules}:
        return None
    if rec.selection != up.selection():
        return None  # fetched for other paths or exclude patterns (or before records named them)
    root = config.checkout_dir(up.name, up.commit)
    if not root.is_dir():
        return None
    return rec if rec.root == root else replace(rec, root=root)


def _write_record(config: Config, rec: FetchRecord) -> FetchRecord:
    """Write `rec` with the stat digest of its tree as it is now (just verified)."""
    from annotate.fetch.verify import stat_digest

    rec = replace(rec, tree_stat=stat_digest(rec.root),
                  selection=load_upstreams(config)[rec.name].selection())
    path = config.fetch_record(rec.name, rec.commit)
    write_atomic(path, json.dumps(rec.to_json(), indent=1) + "\n")
    return rec


def fetched_root(config: Config, name: str) -> Path | None:
    """Root of the verified checkout of upstream `name`, or None when it is not fetched."""
    ups = load_upstreams(config)
    if name not in ups:
        raise UsageError(f"unknown upstream '{name}'", hint="known upstreams: " + ", ".join(ups))
    rec = read_record(config, ups[name])
    return rec.root if rec else None


def missing_paths(config: Config, name: str) -> frozenset[str]:
    """Checkout-relative paths that belong to the pin (its lock lists them) but that the route it
    was fetched by could not supply (e.g. most of hopper/ from the flash-attn sdist). Empty when
    not fetched or complete."""
    ups = load_upstreams(config)
    if name not in ups:
        return frozenset()
    rec = read_record(config, ups[name])
    if rec is None:
        return frozenset()
    return frozenset(rec.missing) | frozenset(m for s in rec.submodules for m in s.missing)


# ---- fetching -----------------------------------------------------------------------------------
def _select(config: Config, names) -> list[Upstream]:
    ups = load_upstreams(config)
    if not names:
        return list(ups.values())
    subs = {s.name: u.name for u in ups.values() for s in u.submodules}
    out = []
    for n in names:
        if n in ups:
            out.append(ups[n])
        elif n in subs:
            raise UsageError(f"{n} is a submodule of {subs[n]}; it is fetched with it",
                             hint=f"annotate fetch {subs[n]}")
        else:
            raise UsageError(f"unknown upstream '{n}'", hint="known upstreams: " + ", ".join(ups))
    return out


def _free_space_check(config: Config, need_mb: int) -> None:
    p = config.cache_dir
    while not p.exists() and p != p.parent:
        p = p.parent
    free = shutil.disk_usage(p).free // (1 << 20)
    if free < need_mb:
        raise AnnotateError(f"only {free} MB free in {p}; fetching needs about {need_mb} MB",
                            hint="free some space or point ANNOTATE_CACHE_DIR at a larger disk")


def _clean_stale_tmp(config: Config, up: Upstream) -> None:
    """Work dirs of this pin left by a killed process (we hold the pin's lock, so none is live)."""
    d = config.tmp_dir()
    if d.is_dir():
        for p in d.glob(f"fetch-{up.name}-{up.short}-*"):
            shutil.rmtree(p, ignore_errors=True)


def _install(config: Config, up: Upstream, work: Path, tmp: Path, rec: FetchRecord) -> FetchRecord:
    """Swap the finished tree into place; the record goes last, so it only ever names a whole tree."""
    final = config.checkout_dir(up.name, up.commit)
    record = config.fetch_record(up.name, up.commit)
    if record.exists():
        record.unlink()
    if final.exists() or final.is_symlink():
        os.rename(final, tmp / "previous")
    os.rename(work, final)
    return _write_record(config, rec)


def _adopt_existing(config: Config, up: Upstream, reporter: Reporter) -> FetchRecord | None:
    """A tree already in place with no record (a crash after the rename, or put there by hand):
    verify it where it lies and record it, rather than fetching it again."""
    from annotate.fetch.verify import verify_tree

    root = config.checkout_dir(up.name, up.commit)
    if not root.is_dir():
        return None
    t0 = time.monotonic()
    try:
        files, missing = verify_tree(config, up, root, reporter)
    except AnnotateError as exc:
        reporter.say(f"{up.name}: the tree at {root} does not verify ({exc.message}); fetching it again")
        return None
    rec = FetchRecord(
        name=up.name, commit=up.commit, tag=up.tag, route="existing", source=str(root),
        reason="a tree was already in place without a record; verified in place against the lock",
        root=root, fetched_at=_now(), seconds=round(time.monotonic() - t0, 3),
        verified="partial" if missing else "full", files=files, missing=tuple(missing),
        submodules=_sub_records(up, str(root), missing,
                                {s.name: sum(1 for _ in _walk(root / s.path)) for s in up.submodules}))
    return _write_record(config, rec)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _sub_records(up: Upstream, source: str, missing, files_by_sub: dict[str, int]):
    out = []
    for s in up.submodules:
        pre = s.path.strip("/") + "/"
        out.append(SubmoduleRecord(name=s.name, path=s.path, commit=s.commit, source=source,
                                   files=files_by_sub.get(s.name, 0),
                                   missing=tuple(m for m in missing if m.startswith(pre))))
    return tuple(out)


def _via_git(config, up, work, reporter):
    from annotate.fetch import gitroute

    res = gitroute.fetch_git(config, up, work, reporter)
    subs = tuple(SubmoduleRecord(name=s["name"], path=s["path"], commit=s["commit"], source=s["url"],
                                 files=s["files"], missing=tuple(s["missing"])) for s in res.submodules)
    return dict(route="git", source=res.url, verified=res.verified, files=res.files, missing=res.missing,
                submodules=subs, origin=res.url_origin)


def _via_archive(config, up, work, reporter):
    from annotate.fetch import archive

    res = archive.fetch_archive(config, up, work, reporter)
    files_by_sub = {}
    for s in up.submodules:
        files_by_sub[s.name] = sum(1 for _ in _walk(work / s.path))
    return dict(route="archive", source=str(res.archive), verified=res.verified, files=res.files,
                missing=res.missing, submodules=_sub_records(up, str(res.archive), res.missing, files_by_sub),
                origin=up.archive.requirement if up.archive else "")


def _walk(root: Path):
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            yield os.path.join(dirpath, f)


def _fetch_one(config: Config, up: Upstream, via: str, reporter: Reporter) -> FetchRecord:
    config.tmp_dir().mkdir(parents=True, exist_ok=True)
    config.checkouts_dir().mkdir(parents=True, exist_ok=True)
    _clean_stale_tmp(config, up)
    _free_space_check(config, config.min_free_mb())
    routes = ["git", "archive"] if via == "auto" else [via]
    why: list[str] = []
    t0 = time.monotonic()
    for i, route in enumerate(routes):
        tmp = Path(tempfile.mkdtemp(dir=config.tmp_dir(), prefix=f"fetch-{up.name}-{up.short}-"))
        try:
            work = tmp / "tree"
            try:
                res = (_via_git if route == "git" else _via_archive)(config, up, work, reporter)
            except AnnotateError as exc:
                if i + 1 < len(routes):
                    # auto: say what failed and move on
                    short = exc.message if exc.message.startswith("git:") else f"git: {exc.message}"
                    why.append(short)
                    reporter.say(f"{up.name}: {short}; trying {routes[i + 1]}")
                    continue
                if why:
                    raise AnnotateError(f"{up.name}: no route worked: {'; '.join(why)}; {route}: {exc.message}",
                                        hint=exc.hint) from None
                raise
            if route == "git":
                reason = f"git from {res['source']} ({res['origin']})"
            else:
                reason = (f"{'; '.join(why)}; using archive {res['origin']}" if why
                          else f"archive {res['origin']} (--via archive)")
            rec = FetchRecord(name=up.name, commit=up.commit, tag=up.tag, route=res["route"],
                              source=res["source"], reason=reason, root=config.checkout_dir(up.name, up.commit),
                              fetched_at=_now(), seconds=round(time.monotonic() - t0, 3),
                              verified=res["verified"], files=res["files"], missing=tuple(res["missing"]),
                              submodules=res["submodules"])
            return _install(config, up, work, tmp, rec)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise AnnotateError(f"disk full while fetching {up.name} into {config.cache_dir}",
                                    hint="free some space or point ANNOTATE_CACHE_DIR at a larger disk") from None
            raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    raise AssertionError("unreachable")


def ensure_fetched(config: Config, names=None, via: str = "auto", progress: bool | Reporter = True,
                   force: bool = False) -> list[FetchRecord]:
    """Every selected pin verified in the cache (fetching what is missing); idempotent and fast when done.

    `force` fetches again even when a verified checkout is present (it is replaced atomically).
    """
    if via not in ROUTES:
        raise UsageError(f"--via must be one of {', '.join(ROUTES)}, got {via!r}")
    selected = _select(config, names)
    out: list[FetchRecord] = []
    reporter: Reporter | None = None
    for up in selected:
        if not force:
            rec = read_record(config, up)
            if rec is not None:
                out.append(rec)
                continue
        from filelock import FileLock, Timeout

        reporter = reporter or Reporter.of(progress)
        lock_file = config.lock_path(f"fetch-{up.name}-{up.short}")
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        lk = FileLock(str(lock_file))
        try:
            lk.acquire(timeout=0.05)
        except Timeout:
            reporter.say(f"{up.name}: another annotate process is fetching it; waiting ({lock_file})")
            try:
                lk.acquire(timeout=LOCK_WAIT_SECONDS)
            except Timeout:
                raise AnnotateError(f"{up.name}: gave up waiting {LOCK_WAIT_SECONDS} s for {lock_file}",
                                    hint="is another annotate process stuck? stop it and fetch again") from None
        try:
            rec = None if force else read_record(config, up)  # the process we waited for may have done it
            if rec is None and not force and via == "auto":
                rec = _adopt_existing(config, up, reporter)
            if rec is None:
                rec = _fetch_one(config, up, via, reporter)
                reporter.say(f"{up.name}: fetched by {rec.route} from {rec.source} in {rec.seconds:.1f} s")
            out.append(rec)
        finally:
            lk.release()
    return out


def verify_fetched(config: Config, names=None, progress: bool | Reporter = True) -> list[FetchRecord]:
    """Hash every file of the fetched checkouts again and compare with the locks (AnnotateError on a mismatch)."""
    from annotate.fetch.verify import verify_tree

    reporter = Reporter.of(progress)
    out = []
    for up in _select(config, names):
        rec = read_record(config, up)
        if rec is None:
            raise AnnotateError(f"{up.name} is not fetched", hint=f"annotate fetch {up.name}")
        files, missing = verify_tree(config, up, rec.root, reporter)
        recorded = {m for m in rec.missing if not m.endswith("/")}  # whole sparse paths absent upstream
        if set(missing) != recorded:
            raise AnnotateError(f"{up.name}: {len(missing)} files missing now, the record says {len(recorded)}"
                                f" (e.g. {sorted(set(missing) ^ recorded)[0]})",
                                hint=f"annotate fetch --force {up.name}")
        out.append(_write_record(config, rec))  # verified again: the stats from now on are the verified ones
    return out


# ---- status ---------------------------------------------------------------------------------------
def _verified_now(rec: FetchRecord) -> str:
    """The record's `verified`, unless the tree's stats changed since then ("changed")."""
    from annotate.fetch.verify import stat_digest

    if rec.tree_stat and stat_digest(rec.root) != rec.tree_stat:
        return "changed"
    return rec.verified


def fetch_status(config: Config) -> list[PinStatus]:
    """One row per pin and per submodule, fetched or not (annotation coverage is the notes
    stage's: annotate.project.status adds it)."""
    out: list[PinStatus] = []
    for up in load_upstreams(config).values():
        rec = read_record(config, up)
        verified = _verified_now(rec) if rec else None
        out.append(PinStatus(
            name=up.name, kind="upstream", parent=None, commit=up.commit, tag=up.tag, fetched=rec is not None,
            route=rec.route if rec else None, verified=verified,
            missing=tuple(m for m in rec.missing if not any(m.startswith(s.path.strip('/') + '/')
                                                             for s in up.submodules)) if rec else (),
            fetched_at=rec.fetched_at if rec else None, root=rec.root if rec else None,
            files=rec.files if rec else None, source=rec.source if rec else None,
            reason=rec.reason if rec else None))
        for sub in up.submodules:
            srec = next((s for s in rec.submodules if s.name == sub.name), None) if rec else None
            sub_verified = None
            if srec:
                sub_verified = verified if verified in ("commit", "changed") else ("partial" if srec.missing else "full")
            out.append(PinStatus(
                name=sub.name, kind="submodule", parent=up.name, commit=sub.commit, tag="",
                fetched=srec is not None, route=rec.route if srec else None, verified=sub_verified,
                missing=srec.missing if srec else (), fetched_at=rec.fetched_at if srec else None,
                root=(rec.root / sub.path) if srec else None, path=sub.path, files=srec.files if srec else None,
                source=srec.source if srec else None, reason=rec.reason if srec else None))
    return out

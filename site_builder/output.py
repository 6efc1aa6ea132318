"""The one place that writes the site's files: the output directory, checked before any work, and
the manifest the build leaves in it.

Safety rules (nothing outside `--out` is ever touched):
- `prepare_out_dir` refuses an empty `--out`, the root of a file system, an existing file, and a
  non-empty directory that holds no manifest of ours (unless `force`) — before anything loads;
- every path written or removed is a plain relative path that stays inside the directory, and no
  directory on the way may be a symbolic link (`inside`): a link in the output is never followed;
- the manifest is data from disk, not trusted: read bounded, type-checked, and its paths obey the
  same rule; only regular files it names are ever removed.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from annotate.atomic import write_atomic
from annotate.errors import AnnotateError, UsageError
from site_builder import names

MANIFEST_VERSION = 1
MANIFEST_MAX_BYTES = 64 << 20  # the real site's manifest is ~0.2 MB


@dataclass(frozen=True)
class WriteStats:
    written: int
    unchanged: int
    removed: int
    bytes_written: int


@dataclass(frozen=True)
class NotesState:
    """What the last build read from the annotations (site_builder.build.notes_state): a digest of
    the facts every page may show, and per annotation file a digest of its content and the
    source pages it reaches."""

    global_digest: str = ""
    pages: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    # source page -> the harnesses whose committed records name its file (what such a build
    # reads of them); None when the manifest does not say (every record is read)
    compiled: dict[str, tuple[str, ...]] | None = None
    index: str = ""  # the index key (build.index_key) the pages were made with


@dataclass
class Manifest:
    """What the last build produced: the input stamp, every page's key, every output."""

    stamp: str = ""
    pages: dict[str, str] = field(default_factory=dict)  # page -> key of its inputs
    lines: dict[str, int] = field(default_factory=dict)  # source page -> line count
    outputs: list[str] = field(default_factory=list)
    base: str = ""  # the stamp's part that is not the annotation files
    notes: NotesState = field(default_factory=NotesState)

    def to_json(self) -> str:
        notes = {"global": self.notes.global_digest,
                 "files": {f: [d, list(p)] for f, (d, p) in self.notes.pages.items()}}
        if self.notes.compiled is not None:
            notes["compiled"] = {page: list(ks) for page, ks in self.notes.compiled.items()}
        if self.notes.index:
            notes["index"] = self.notes.index
        return json.dumps({"version": MANIFEST_VERSION, "stamp": self.stamp, "pages": self.pages,
                           "lines": self.lines, "outputs": sorted(self.outputs), "base": self.base,
                           "notes": notes}, indent=0, sort_keys=True)


# ---- paths inside the output directory -----------------------------------------------------------

def safe_relative(rel: object) -> bool:
    """Whether `rel` is a plain '/'-separated path that cannot leave the directory it is joined to:
    no empty, '.' or '..' part (checked on the text: a manifest holds thousands of paths)."""
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel or rel.startswith("/"):
        return False
    s = f"/{rel}/"
    return "//" not in s and "/./" not in s and "/../" not in s


def inside(out_dir: Path, rel: str) -> Path | None:
    """`out_dir / rel` when it is safe to write or remove: `rel` is safe_relative and no directory
    between `out_dir` and it is a symbolic link (or anything but a directory). None otherwise."""
    if not safe_relative(rel):
        return None
    here = out_dir
    for part in rel.split("/")[:-1]:
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return out_dir / rel  # the rest does not exist yet: made by _make_dirs, link-free
        if not stat.S_ISDIR(st.st_mode):
            return None
    return out_dir / rel


def _make_dirs(out_dir: Path, rel: str) -> None:
    here = out_dir
    for part in rel.split("/")[:-1]:
        here = here / part
        try:
            os.mkdir(here)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                raise AnnotateError(f"{here}: in the output directory but not a directory (a link?); "
                                    "refusing to write through it") from None


def prepare_out_dir(out: Path | str, force: bool = False) -> Path:
    """The output directory, checked before any work: UsageError (one line) for a place a build
    must not write to. Returns its absolute path (a link naming it, given by the user, resolved)."""
    if str(out).strip() == "":
        raise UsageError("--out is empty; name a directory for the site (default: _site)")
    path = Path(os.path.realpath(os.path.abspath(os.path.expanduser(str(out)))))
    if path == Path(path.anchor):
        raise UsageError(f"--out {out}: refusing to build into the root of a file system")
    if os.path.lexists(path) and not path.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    if path.is_dir() and not force and any(path.iterdir()) and not has_manifest(path):
        raise UsageError(f"--out {out}: not empty and not a site built by annotate (no {names.MANIFEST}); "
                         "refusing to overwrite its files",
                         hint="choose an empty or new directory, or pass --force to write into it anyway")
    return path


def has_manifest(out_dir: Path) -> bool:
    return _read_manifest_bytes(out_dir) is not None


# ---- the manifest ---------------------------------------------------------------------------------

def _read_manifest_bytes(out_dir: Path) -> bytes | None:
    path = out_dir / names.MANIFEST
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            raw = fh.read(MANIFEST_MAX_BYTES + 1)
    except OSError:
        return None
    return raw if len(raw) <= MANIFEST_MAX_BYTES else None


def read_manifest(out_dir: Path) -> Manifest:
    """The previous build's manifest, every entry checked; an empty one when there is none or it
    is not ours (entries of the wrong type or with unsafe paths are dropped)."""
    raw = _read_manifest_bytes(out_dir)
    try:
        data = json.loads(raw) if raw is not None else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
        return Manifest()

    def table(key: str, kind: type) -> dict:
        v = data.get(key)
        return {k: x for k, x in v.items() if safe_relative(k) and isinstance(x, kind) and not isinstance(x, bool)} \
            if isinstance(v, dict) else {}

    outputs = data.get("outputs")
    stamp, base = data.get("stamp"), data.get("base")
    return Manifest(stamp if isinstance(stamp, str) else "", table("pages", str), table("lines", int),
                    [o for o in outputs if safe_relative(o)] if isinstance(outputs, list) else [],
                    base if isinstance(base, str) else "", _notes_state(data.get("notes")))


def _notes_state(v: object) -> NotesState:
    """The manifest's notes record, every entry type-checked (a wrong one empties the record: the
    next build then renders the usual way)."""
    if not isinstance(v, dict) or not isinstance(v.get("global"), str) or not isinstance(v.get("files"), dict):
        return NotesState()
    pages = {}
    for f, entry in v["files"].items():
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and isinstance(entry[1], list) and all(safe_relative(p) for p in entry[1])):
            return NotesState()
        pages[f] = (entry[0], tuple(entry[1]))
    compiled = v.get("compiled")
    if compiled is not None:
        if not isinstance(compiled, dict) or not all(
                safe_relative(pg) and isinstance(ks, list) and all(isinstance(k, str) for k in ks)
                for pg, ks in compiled.items()):
            compiled = None  # read every record
        else:
            compiled = {pg: tuple(ks) for pg, ks in compiled.items()}
    index = v.get("index")
    return NotesState(v["global"], pages, compiled, index if isinstance(index, str) else "")


# ---- writing ----------------------------------------------------------------------------------------

def _unchanged(path: Path, data: bytes) -> bool:
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False


def _remove_stale(out_dir: Path, previous: Manifest, keep: set[str]) -> int:
    removed = 0
    for rel in previous.outputs:
        if rel in keep:
            continue
        path = inside(out_dir, rel)
        try:
            if path is not None and stat.S_ISREG(os.lstat(path).st_mode):
                path.unlink()
                removed += 1
        except OSError:
            pass
    return removed


def write_outputs(out_dir: Path, files: Mapping[str, str | bytes] | Iterable[tuple[str, str | bytes]],
                  manifest: Manifest | Callable[[], Manifest], previous: Manifest | None = None) -> WriteStats:
    """Write `files` (relative path -> content, or such pairs as they are made) under `out_dir`,
    touching only files whose content changed; remove outputs of the previous build that this one
    no longer makes; write the manifest last, so an interrupted build never looks complete
    (`manifest` may be a function, called once every file is written).
    """
    written = unchanged = nbytes = 0
    out_dir.mkdir(parents=True, exist_ok=True)
    if not has_manifest(out_dir):
        # claim the directory before the first page, so that a build interrupted half-way is
        # still recognised as ours (and completed) by the next one
        write_atomic(out_dir / names.MANIFEST, Manifest().to_json(), mkdir=False)
    made_dirs: set[str] = set()
    for rel, content in (files.items() if isinstance(files, Mapping) else files):
        data = content.encode("utf-8") if isinstance(content, str) else content
        path = inside(out_dir, rel)
        if path is None:
            raise AnnotateError(f"{out_dir / rel}: refusing to write outside {out_dir} or through a link in it")
        if _unchanged(path, data):
            unchanged += 1
            continue
        if path.is_dir() and not path.is_symlink():
            raise AnnotateError(f"{path}: a directory where the site writes a file; move it away")
        parent = rel.rpartition("/")[0]
        if parent not in made_dirs:
            _make_dirs(out_dir, rel)
            made_dirs.add(parent)
        write_atomic(path, data, mkdir=False)
        written += 1
        nbytes += len(data)
    if not isinstance(manifest, Manifest):
        manifest = manifest()
    removed = _remove_stale(out_dir, previous, set(manifest.outputs)) if previous is not None else 0
    text = manifest.to_json()
    if not _unchanged(out_dir / names.MANIFEST, text.encode("utf-8")):
        write_atomic(out_dir / names.MANIFEST, text, mkdir=False)
    return WriteStats(written, unchanged, removed, nbytes)

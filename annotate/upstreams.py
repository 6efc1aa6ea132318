"""The pins: `vendor_kernels/upstreams.yaml` loaded into typed, read-only objects."""

from __future__ import annotations

import hashlib

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from annotate.config import Config
from annotate.errors import AnnotateError, UsageError
from annotate.yamlpos import Loaded, YamlProblem, decode, load_yaml, read_bytes


def matches_exclude(path: str, patterns: tuple[str, ...]) -> bool:
    """Whether a repository-relative path is left out of a pin by its `exclude` patterns.

    The one matcher behind every writer of a pin's file set (`annotate lock`, the git route's
    sparse checkout, the archive route), so that all three agree file for file. Rules of
    fnmatch, case-sensitive, on the whole path: `*` and `?` also match '/'."""
    return any(fnmatchcase(path, p) for p in patterns)


@dataclass(frozen=True)
class ArchiveSpec:
    requirement: str  # a pip requirement, e.g. "flashinfer-python==0.6.17"
    kind: str  # "wheel" | "sdist"
    # archive member -> path in the checkout. A key ending in '/' names every member below it,
    # any other key one member; the longest key that names a member wins; None leaves it out.
    map: dict[str, str | None]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Submodule:
    name: str
    path: str  # where it lives inside the superproject
    url: str
    commit: str
    paths: tuple[str, ...]
    lock: str
    web: str = ""
    index: bool = True  # false for build-only dependencies the reader never needs (CCCL)
    # `index: included` in the pin file: only the files that the pin's other indexed files reach
    # through #include (transitively) are indexed (cutlass: what Flash-Attention really includes)
    included_only: bool = False
    exclude: tuple[str, ...] = ()  # patterns of files under `paths` that no route fetches

    def excludes(self, path: str) -> bool:
        """`path` relative to the submodule's root."""
        return matches_exclude(path, self.exclude)


@dataclass(frozen=True)
class Upstream:
    name: str
    title: str
    url: str
    web: str
    tag: str
    commit: str
    paths: tuple[str, ...]  # sparse paths fetched (relative to the repo root, '/'-terminated)
    render: tuple[str, ...]  # paths the site renders
    lock: str  # relative to vendor_kernels/
    archive: ArchiveSpec | None
    submodules: tuple[Submodule, ...] = ()
    exclude: tuple[str, ...] = ()  # patterns of files under `paths` that no route fetches

    @property
    def short(self) -> str:
        return self.commit[:12]

    def selection(self) -> str:
        """Digest of what a fetch takes from the pin (paths and exclude patterns, submodules'
        too). A fetch record names it: a checkout fetched for another selection is not this pin's."""
        parts = [self.commit, *self.paths, "\0", *self.exclude]
        for s in self.submodules:
            parts += ["\0", s.name, s.path, s.commit, *s.paths, "\0", *s.exclude]
        return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:16]

    def excludes(self, path: str) -> bool:
        """`path` relative to the checkout root; below a submodule's path its own patterns apply."""
        for s in self.submodules:
            if path.startswith(s.path + "/"):
                return s.excludes(path[len(s.path) + 1:])
        return matches_exclude(path, self.exclude)

    def index_paths(self) -> list[str]:
        """Paths (relative to the checkout root) the index reads: the pin's own sparse paths and
        those of every submodule that is not build-only."""
        own = [p.rstrip("/") for p in self.paths]
        subs = [f"{s.path}/{p.rstrip('/')}" for s in self.submodules if s.index for p in s.paths]
        return own + subs

    def included_only_paths(self) -> list[str]:
        """The index paths (a subset of `index_paths`) of which only the files the pin's other
        indexed files #include, directly or not, are indexed (`index: included`)."""
        return [f"{s.path}/{p.rstrip('/')}" for s in self.submodules if s.index and s.included_only for p in s.paths]

    def commit_url(self) -> str:
        return f"{self.web}/tree/{self.commit}" if self.web else ""

    def source_url(self, path: str, line: int | None = None) -> str:
        if not self.web:
            return ""
        anchor = f"#L{line}" if line else ""
        return f"{self.web}/blob/{self.commit}/{path}{anchor}"


class _PinReader:
    """Reads one mapping of the pin file, naming the file, line and key of anything wrong."""

    def __init__(self, path: Path, loaded: Loaded, at: tuple):
        self.path, self.loaded, self.at = path, loaded, at

    def where(self, key: str | None = None) -> str:
        pos = self.loaded.where(self.at + ((key,) if key else ()))
        dotted = ".".join(str(k) for k in self.at + ((key,) if key else ()))
        return f"{self.path}:{pos[0]}:{pos[1]}: {dotted}" if pos else f"{self.path}: {dotted}"

    def mapping(self, value, key: str | None = None) -> dict:
        if not isinstance(value, dict):
            raise AnnotateError(f"{self.where(key)}: expected a mapping")
        return value

    def text(self, d: dict, key: str, default: str | None = None) -> str:
        if key not in d or d[key] is None:
            if default is None:
                raise AnnotateError(f"{self.where()}: missing key '{key}'")
            return default
        if not isinstance(d[key], str):
            raise AnnotateError(f"{self.where(key)}: expected text, got {d[key]!r}")
        return d[key]

    def texts(self, d: dict, key: str, default: tuple[str, ...] | None = None) -> tuple[str, ...]:
        if key not in d or d[key] is None:
            if default is None:
                raise AnnotateError(f"{self.where()}: missing key '{key}'")
            return default
        v = d[key]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise AnnotateError(f"{self.where(key)}: expected a list of paths")
        return tuple(v)

    def table(self, d: dict, key: str) -> dict[str, str]:
        v = self.mapping(d.get(key) or {}, key)
        if not all(isinstance(x, str) for x in v.values()):
            raise AnnotateError(f"{self.where(key)}: expected text values")
        return dict(v)

    def child(self, *keys) -> "_PinReader":
        return _PinReader(self.path, self.loaded, self.at + keys)


def _read_pin_file(path: Path) -> Loaded:
    try:
        return load_yaml(decode(read_bytes(path)))
    except YamlProblem as p:
        if p.code == "io" and not path.exists():
            raise AnnotateError(f"{path}: pin file not found",
                                hint="run annotate inside a clone of its repository, or set ANNOTATE_ROOT to one") from None
        where = f"{path}:{p.line}:{p.column}" if p.line else str(path)
        raise AnnotateError(f"{where}: {p.message}") from None


def _submodule(r: _PinReader, d: dict) -> Submodule:
    index = d.get("index", True)
    if index not in (True, False, None, "included"):
        raise AnnotateError(f"{r.where('index')}: expected true, false or included, not {index!r}")
    return Submodule(name=r.text(d, "name"), path=r.text(d, "path").strip("/"), url=r.text(d, "url"),
                     commit=r.text(d, "commit"), paths=r.texts(d, "paths"), lock=r.text(d, "lock"),
                     web=r.text(d, "web", ""), index=index is not False, included_only=index == "included",
                     exclude=_exclude(d, r.where()))


def _upstream(r: _PinReader, name: str, d: dict) -> Upstream:
    arch = None
    if d.get("archive") is not None:
        ra = r.child("archive")
        a = ra.mapping(d["archive"])
        arch = ArchiveSpec(requirement=ra.text(a, "requirement"), kind=ra.text(a, "kind"),
                           map=_archive_map(a.get("map"), r.where()), env=ra.table(a, "env"))
    subs = d.get("submodules") or []
    if not isinstance(subs, list):
        raise AnnotateError(f"{r.where('submodules')}: expected a list")
    paths = r.texts(d, "paths")
    return Upstream(
        name=name, title=r.text(d, "title", name), url=r.text(d, "url"), web=r.text(d, "web", ""),
        tag=r.text(d, "tag", ""), commit=r.text(d, "commit"), paths=paths, render=r.texts(d, "render", paths),
        lock=r.text(d, "lock"), archive=arch,
        submodules=tuple(_submodule(r.child("submodules", i), r.child("submodules", i).mapping(s))
                         for i, s in enumerate(subs)),
        exclude=_exclude(d, r.where()),
    )


def _exclude(d: dict, where: str) -> tuple[str, ...]:
    raw = d.get("exclude") or []
    if not isinstance(raw, list) or not all(isinstance(p, str) and p.strip() for p in raw):
        raise AnnotateError(f"{where}.exclude: expected a list of glob patterns (strings)")
    for p in raw:
        if p.startswith("/"):
            raise AnnotateError(f"{where}.exclude: {p!r}: patterns are relative to the repository root, "
                                f"without a leading '/'")
    return tuple(raw)


def _archive_map(raw, where: str) -> dict[str, str | None]:
    if not isinstance(raw, dict) or not raw:
        raise AnnotateError(f"{where}.archive.map: expected a mapping of archive members to checkout paths")
    out: dict[str, str | None] = {}
    for key, target in raw.items():
        if not isinstance(key, str) or not key or key.startswith("/"):
            raise AnnotateError(f"{where}.archive.map: {key!r}: expected a relative member name or folder")
        if target is None:
            out[key] = None
            continue
        if not isinstance(target, str) or key.endswith("/") != target.endswith("/"):
            raise AnnotateError(
                f"{where}.archive.map: {key!r}: {target!r}: a folder ('/' at the end) maps onto a folder, "
                f"a file onto a file, or either onto null (left out)")
        out[key] = target
    return out


# The last pin file read, by path and content: a command asks for the pins several times (the
# project, the index, the fetch records, the notes), and parsing is most of the asking.
_LAST: dict[Path, tuple[bytes, dict[str, Upstream]]] = {}


def load_upstreams(config: Config) -> dict[str, Upstream]:
    """All pins, in file order. Raises AnnotateError naming the file, line and key on malformed input."""
    path = config.upstreams_file
    try:
        raw = read_bytes(path)
    except YamlProblem:
        raw = None  # _read_pin_file says why
    last = _LAST.get(path)
    if raw is not None and last is not None and last[0] == raw:
        return dict(last[1])
    loaded = _read_pin_file(path)
    top = _PinReader(path, loaded, ())
    ups = top.mapping(loaded.data).get("upstreams")
    top.child("upstreams").mapping(ups)
    got = {name: _upstream(top.child("upstreams", name), name, top.child("upstreams", name).mapping(d))
           for name, d in ups.items()}
    if raw is not None:
        _LAST.clear()
        _LAST[path] = (raw, got)
    return dict(got)


def get_upstream(config: Config, name: str) -> Upstream:
    ups = load_upstreams(config)
    if name not in ups:
        raise UsageError(f"unknown upstream '{name}'", hint="known upstreams: " + ", ".join(ups))
    return ups[name]


def checkout_root(config: Config, upstream: Upstream) -> Path:
    return config.checkout_dir(upstream.name, upstream.commit)

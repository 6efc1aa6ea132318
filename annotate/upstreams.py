"""The pins: `vendor_kernels/upstreams.yaml` loaded into typed, read-only objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

import yaml

from annotate.config import Config
from annotate.errors import AnnotateError, UsageError


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

    def commit_url(self) -> str:
        return f"{self.web}/tree/{self.commit}" if self.web else ""

    def source_url(self, path: str, line: int | None = None) -> str:
        if not self.web:
            return ""
        anchor = f"#L{line}" if line else ""
        return f"{self.web}/blob/{self.commit}/{path}{anchor}"


def _require(d: dict, key: str, where: str):
    if key not in d:
        raise AnnotateError(f"{where}: missing key '{key}'")
    return d[key]


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


def load_upstreams(config: Config) -> dict[str, Upstream]:
    """All pins, in file order. Raises AnnotateError naming the file on malformed input."""
    path = config.upstreams_file
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnnotateError(f"{path}: pin file not found",
                            hint="run annotate inside a clone of its repository, or set ANNOTATE_ROOT to one") from None
    except yaml.YAMLError as exc:
        raise AnnotateError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("upstreams"), dict):
        raise AnnotateError(f"{path}: expected a mapping 'upstreams:'")
    out: dict[str, Upstream] = {}
    for name, d in raw["upstreams"].items():
        where = f"{path}: upstreams.{name}"
        arch = d.get("archive")
        subs = tuple(
            Submodule(
                name=_require(s, "name", where), path=_require(s, "path", where).strip("/"),
                url=_require(s, "url", where), commit=_require(s, "commit", where),
                paths=tuple(_require(s, "paths", where)), lock=_require(s, "lock", where),
                web=s.get("web", ""), index=bool(s.get("index", True)),
                exclude=_exclude(s, f"{where}.submodules.{s.get('name')}"),
            )
            for s in d.get("submodules") or []
        )
        out[name] = Upstream(
            name=name,
            title=d.get("title", name),
            url=_require(d, "url", where),
            web=d.get("web", ""),
            tag=d.get("tag", ""),
            commit=_require(d, "commit", where),
            paths=tuple(_require(d, "paths", where)),
            render=tuple(d.get("render") or d["paths"]),
            lock=_require(d, "lock", where),
            archive=ArchiveSpec(
                requirement=_require(arch, "requirement", where), kind=_require(arch, "kind", where),
                map=_archive_map(_require(arch, "map", where), where), env=dict(arch.get("env") or {}),
            ) if arch else None,
            submodules=subs,
            exclude=_exclude(d, where),
        )
    return out


def get_upstream(config: Config, name: str) -> Upstream:
    ups = load_upstreams(config)
    if name not in ups:
        raise UsageError(f"unknown upstream '{name}'", hint="known upstreams: " + ", ".join(ups))
    return ups[name]


def checkout_root(config: Config, upstream: Upstream) -> Path:
    return config.checkout_dir(upstream.name, upstream.commit)

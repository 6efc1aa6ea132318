"""The pins: `vendor_kernels/upstreams.yaml` loaded into typed, read-only objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from annotate.config import Config
from annotate.errors import AnnotateError, UsageError


@dataclass(frozen=True)
class ArchiveSpec:
    requirement: str  # a pip requirement, e.g. "flashinfer-python==0.6.17"
    kind: str  # "wheel" | "sdist"
    map: dict[str, str]  # archive member prefix -> path in the checkout
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

    @property
    def short(self) -> str:
        return self.commit[:12]

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
                map=dict(_require(arch, "map", where)), env=dict(arch.get("env") or {}),
            ) if arch else None,
            submodules=subs,
        )
    return out


def get_upstream(config: Config, name: str) -> Upstream:
    ups = load_upstreams(config)
    if name not in ups:
        raise UsageError(f"unknown upstream '{name}'", hint="known upstreams: " + ", ".join(ups))
    return ups[name]


def checkout_root(config: Config, upstream: Upstream) -> Path:
    return config.checkout_dir(upstream.name, upstream.commit)

"""The pipeline, chained in one place: pins → checkouts → index → annotations.

    project = open_project(config, upstreams=None, fetch=False, progress=False)
    project.pins          every pin of vendor_kernels/upstreams.yaml
    project.selected      the pins this run works on (all, or the ones named)
    project.checkouts     name -> FetchRecord of each selected pin (fetched first when fetch=True)
    project.index         the Index of the selected checkouts (or of the --source trees)
    project.annotations   every annotation file and course map, resolved against the index

Every command that needs more than one stage (build, serve, show, check, new, status, symbols…)
takes a Project; nothing else chains the stages. Each part is loaded on first use and then kept,
so a command that needs no index never loads one, and `annotate serve` keeps one index across
rebuilds (`with_fresh_annotations`). A Project is frozen: what it holds never changes under a
reader; the parts are read-only mappings and frozen dataclasses.

Layers (an import only ever points down this list): the command adapters (annotate/cli.py,
annotate/commands/) → site_builder → this module → notes → index → fetch → the chores (config,
errors, atomic, git, yamlpos, progress, terminal, jsonout, upstreams).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from annotate.config import Config
from annotate.errors import AnnotateError, UsageError
from annotate.progress import Reporter
from annotate.upstreams import Upstream, load_upstreams

if TYPE_CHECKING:
    from annotate.fetch.api import FetchRecord, PinStatus
    from annotate.index.api import Index
    from annotate.index.crosslang import Links
    from annotate.index.trace import EntryTrace, Trace
    from annotate.notes.model import AnnotationSet


@dataclass(frozen=True)
class Project:
    config: Config
    only: tuple[str, ...] = ()  # upstream names this run works on; () = every pin
    fetch: bool = False  # fetch missing pins when the checkouts are first asked for
    reporter: Reporter = field(default_factory=lambda: Reporter(False), repr=False, compare=False)
    annotations_root: Path | None = None  # default: config.annotations_dir
    # upstream -> a directory indexed instead of the fetched pin (`check --source UP=DIR`)
    sources: tuple[tuple[str, Path], ...] = ()

    @property
    def annotations_dir(self) -> Path:
        return self.annotations_root or self.config.annotations_dir

    @cached_property
    def pins(self) -> Mapping[str, Upstream]:
        return MappingProxyType(load_upstreams(self.config))

    @cached_property
    def selected(self) -> Mapping[str, Upstream]:
        unknown = [n for n in self.only if n not in self.pins]
        if unknown:
            raise UsageError(f"unknown upstream '{unknown[0]}'", hint="known upstreams: " + ", ".join(self.pins))
        return MappingProxyType({k: v for k, v in self.pins.items() if not self.only or k in self.only})

    @cached_property
    def checkouts(self) -> Mapping[str, "FetchRecord"]:
        """The verified checkout of each selected pin that is fetched (all of them when fetch=True)."""
        from annotate.fetch.api import ensure_fetched, read_record

        if self.fetch:
            recs = ensure_fetched(self.config, names=list(self.selected), progress=self.reporter)
        else:
            recs = [r for r in (read_record(self.config, up) for up in self.selected.values()) if r is not None]
        return MappingProxyType({r.name: r for r in recs})

    @cached_property
    def index(self) -> "Index":
        if self.sources:
            return _index_of_sources(dict(self.sources))
        from annotate.index.api import load_index

        checkouts = self.checkouts  # fetches first when asked to
        index = load_index(self.config, list(self.only) or None, progress=self.reporter)
        check_against_locks(self.config, {n: self.pins[n] for n in checkouts}, index)
        return index

    @cached_property
    def links(self) -> "Links":
        """The cross-language tables of the index (exports, torch ops, dispatch macros), cached
        beside it by content."""
        from annotate.index.crosslang import load_links

        return load_links(self.index, None if self.sources else self.config)

    def trace(self, entry: str, when: Mapping[str, str] | None = None) -> "Trace":
        """The chains from the Python function `entry` to the kernels it reaches (`annotate trace`)."""
        from annotate.index.trace import find_entry, trace

        return trace(self.index, self.links, find_entry(self.index, entry), when)

    def traces(self) -> "tuple[EntryTrace, ...]":
        """The trace of every entry point the rules name for the site (crosslang.yaml `entries`:
        the example parameters and the course steps that ask for it); entries not in this index
        are left out."""
        from annotate.errors import UsageError
        from annotate.index.crosslang import rules
        from annotate.index.trace import EntryTrace

        def make():
            out = []
            for e in rules().entries:
                try:
                    out.append(EntryTrace(e, self.trace(e.entry, dict(e.when))))
                except UsageError:
                    continue
            return tuple(out)

        return self.index.memo(("project-traces",), make)

    @cached_property
    def annotations(self) -> "AnnotationSet":
        from annotate.notes.api import load_annotations

        return load_annotations(self.config, self.index, self.annotations_root)

    def loaded(self, part: str) -> bool:
        """Whether `part` ("index", "annotations", ...) is already loaded (or was given)."""
        return part in self.__dict__

    def with_fresh_annotations(self) -> "Project":
        """The same pins, checkouts and index, with the annotations read again on first use
        (`annotate serve` after a save)."""
        fresh = dataclasses.replace(self)
        for part in ("pins", "selected", "checkouts", "index", "links"):
            if part in self.__dict__:
                fresh.__dict__[part] = self.__dict__[part]
        return fresh


def open_project(config: Config, *, upstreams: list[str] | tuple[str, ...] | None = None, fetch: bool = False,
                 progress: bool | Reporter = False, annotations_root: Path | None = None,
                 sources: Mapping[str, Path] | None = None, pins: Mapping[str, Upstream] | None = None,
                 index: "Index | None" = None, annotations: "AnnotationSet | None" = None) -> Project:
    """The one way a Project is made. `pins`, `index` and `annotations` may be given ready-made
    (the tests' fixture trees, a benchmark holding an index); the rest is loaded on first use."""
    project = Project(config=config, only=tuple(upstreams or ()), fetch=fetch, reporter=Reporter.of(progress),
                      annotations_root=Path(annotations_root) if annotations_root else None,
                      sources=tuple(sorted((sources or {}).items())))
    given = {"pins": MappingProxyType(dict(pins)) if pins is not None else None, "index": index,
             "annotations": annotations}
    for part, value in given.items():
        if value is not None:
            project.__dict__[part] = value  # a cached_property reads its value from here
    return project


def _index_of_sources(sources: dict[str, Path]) -> "Index":
    from annotate.index.api import Index, index_directory

    # no config: caching another tree of the same upstream would prune the pin's resolved index
    parts = [index_directory(up, d, None) for up, d in sources.items()]
    return parts[0] if len(parts) == 1 else Index.merged(*parts)


def check_against_locks(config: Config, pins: Mapping[str, Upstream], index: "Index") -> None:
    """Every indexed file of a fetched pin (`pins`: those with a fetch record) must still carry
    the blob id its lock records: a checkout edited by hand is refused here, by name, instead of
    being shown as the pinned code.

    Free of extra reading: the index computes each file's blob id when it loads.
    """
    from annotate.fetch.lock import expected_files

    for name in index.upstreams():
        up = pins.get(name)
        if up is None or not config.lock_file(up.lock).is_file():
            continue  # a pin without a lock was verified by commit only
        expected = expected_files(config, up)
        for fi in index.files(name):
            want = expected.get(fi.path)
            if want == fi.blob or (index.root(name) / fi.path).is_symlink():
                continue
            why = "is not a file of the pin" if want is None else f"blob {fi.blob[:12]} differs from the lock's {want[:12]}"
            raise AnnotateError(f"{name}: {index.root(name) / fi.path}: {why}: the checkout was changed after "
                                "it was fetched", hint=f"annotate fetch --force {name} puts the pinned files back")


def status(project: Project) -> list["PinStatus"]:
    """`annotate status`: one row per pin and submodule (fetch stage), upstream rows with the
    annotation coverage that `annotate check`'s reader finds (notes stage)."""
    from annotate.fetch.api import fetch_status
    from annotate.notes.api import annotation_coverage

    rows = []
    for row in fetch_status(project.config):
        if row.kind == "upstream":
            cov = annotation_coverage(project.config, row.name, project.annotations_dir)
            row = dataclasses.replace(row, annotation_files=cov.files, annotated_functions=cov.functions,
                                      broken_annotation_files=cov.broken)
        rows.append(row)
    return rows

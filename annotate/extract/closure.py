"""The upstream include closure of a harness, flattened the way the preprocessor reads it.

Starting from the harness's own sources, every `#include` is resolved as nvcc resolves it
(the including file's folder for "..." includes, then the spec's include folders in order).
A header inside the upstream's own tree is *project code*: it is walked into, once (every
project header has `#pragma once` or a guard), and its pieces join the stream at the point of
first inclusion, under the conditions and namespaces of the `#include` that brought it in.
Anything else (a submodule such as cutlass or CCCL, the CUDA toolkit, the C++ library, torch)
is *library code*: its `#include` line stays in the stream, in place, so every library header
sees the same macros, in the same order, as in the pinned build.

The first-inclusion order is a dependency order by construction: the pinned build compiles in
exactly that order, and keeping any subset of the pieces in it keeps every kept declaration
after what it uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from annotate.errors import AnnotateError
from annotate.extract.cxx import INCLUDE, Piece, SplitFile, split


@dataclass(frozen=True)
class IncludeDir:
    path: Path
    library: bool  # inside a submodule (cutlass, CCCL): stays an #include
    label: str  # "flashinfer:include"


@dataclass(frozen=True)
class Header:
    """One upstream project header of the closure."""

    rel: str  # relative to the upstream's checkout root
    path: Path
    lines: int
    split: SplitFile


@dataclass(frozen=True)
class FlatPiece:
    """A piece in the flattened stream: where it came from and the context it needs."""

    index: int
    rel: str  # its header, relative to the upstream root
    piece: Piece
    namespaces: tuple[str, ...]
    conditions: tuple[str, ...]
    text: str

    @property
    def kind(self) -> str:
        return self.piece.kind

    @property
    def first_line(self) -> int:
        return self.piece.first_line

    @property
    def last_line(self) -> int:
        return self.piece.last_line


@dataclass(frozen=True)
class HarnessInclude:
    """An #include in a harness file that names upstream project code (the extraction
    replaces it with kernel.cu)."""

    file: str  # the harness file's name
    line: int
    text: str  # the directive as written


@dataclass(frozen=True)
class Closure:
    upstream: str
    root: Path
    headers: tuple[Header, ...]  # in the order they are first opened
    pieces: tuple[FlatPiece, ...]
    harness_includes: tuple[HarnessInclude, ...]
    warnings: tuple[str, ...] = ()

    @property
    def lines(self) -> int:
        return sum(h.lines for h in self.headers)

    def header(self, rel: str) -> Header:
        return next(h for h in self.headers if h.rel == rel)


_INCLUDE_ARG = re.compile(r'^\s*([<"])([^>"]+)[>"]')


def parse_include(argument: str) -> tuple[str, str] | None:
    """('"', 'utils.h') or ('<', 'cuda.h'); None for a computed include."""
    m = _INCLUDE_ARG.match(argument)
    return (m.group(1), m.group(2)) if m else None


class _Resolver:
    def __init__(self, root: Path, local: Path, dirs: list[IncludeDir]):
        self.root = root.resolve()
        self.local = local.resolve()
        self.dirs = [IncludeDir(d.path.resolve(), d.library, d.label) for d in dirs]

    def resolve(self, quote: str, name: str, includer: Path | None) -> tuple[Path | None, bool]:
        """(the file, is it project code) — (None, False) when no folder of ours has it (a
        toolkit or system header)."""
        cands: list[tuple[Path, bool]] = []
        if quote == '"' and includer is not None:
            cands.append((includer.parent, self._is_library(includer.parent)))
        cands.append((self.local, False))
        cands += [(d.path, d.library) for d in self.dirs]
        for base, library in cands:
            p = base / name
            if p.is_file():
                p = p.resolve()
                return p, not library and not self._is_library(p) and self._under_root(p)
        return None, False

    def _under_root(self, p: Path) -> bool:
        try:
            p.relative_to(self.root)
            return True
        except ValueError:
            return False

    def _is_library(self, p: Path) -> bool:
        return any(d.library and (p == d.path or d.path in p.parents) for d in self.dirs)


def build_closure(upstream: str, root: Path, harness_dir: Path, harness_files: list[str],
                  include_dirs: list[IncludeDir], split_cache: dict | None = None) -> Closure:
    """Walk the harness files' includes into the upstream tree; the flattened stream."""
    res = _Resolver(root, harness_dir, include_dirs)
    headers: list[Header] = []
    pieces: list[FlatPiece] = []
    seen: dict[Path, tuple[str, ...]] = {}
    harness_seen: set[Path] = set()
    h_includes: list[HarnessInclude] = []
    warnings: list[str] = []
    cache = split_cache if split_cache is not None else {}

    def load(path: Path) -> SplitFile:
        rel = path.relative_to(res.root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        key = (rel, text)
        if key not in cache:
            cache[key] = split(text, rel)
        return cache[key]

    def walk_header(path: Path, conds: tuple[str, ...], nss: tuple[str, ...]) -> None:
        sf = load(path)
        rel = sf.path
        headers.append(Header(rel, path, len(sf.scan.text.splitlines()), sf))
        for p in sf.pieces:
            pc, pn = conds + p.conditions, nss + p.namespaces
            if p.kind == INCLUDE:
                inc = parse_include(p.argument)
                target, project = res.resolve(*inc, path) if inc else (None, False)
                if project:
                    if target in seen:
                        if seen[target] and seen[target] != pc:
                            warnings.append(f"{rel}:{p.first_line}: {target.name} was first included "
                                            f"under other conditions ({' && '.join(seen[target])})")
                        continue
                    if pn:
                        raise AnnotateError(f"{rel}:{p.first_line}: an upstream header is included "
                                            "inside a namespace; the flattening cannot place it")
                    seen[target] = pc
                    walk_header(target, pc, pn)
                    continue
            pieces.append(FlatPiece(len(pieces), rel, p, pn, pc, sf.text_of(p)))

    def walk_harness(path: Path) -> None:
        if path in harness_seen:
            return
        harness_seen.add(path)
        sf = split(path.read_text(encoding="utf-8"), path.name)
        for p in sf.pieces:
            if p.kind != INCLUDE:
                continue
            inc = parse_include(p.argument)
            if inc is None:
                continue
            target, project = res.resolve(*inc, path)
            if target is None:
                continue
            if project:
                h_includes.append(HarnessInclude(path.name, p.first_line, sf.text_of(p).strip()))
                if target not in seen:
                    seen[target] = ()
                    walk_header(target, (), ())
            elif target.parent == res.local:
                walk_harness(target)

    for f in harness_files:
        walk_harness((harness_dir / f).resolve())
    return Closure(upstream, res.root, tuple(headers), tuple(pieces), tuple(h_includes), tuple(warnings))

"""The compiled view of one catalog kernel, as committed for the site: `load_compiled(config,
kernel)` reads every record of it under vendor_kernels/results/ into one frozen `CompiledView`.

What is read (each file through its own bounded, tolerant reader; the names come from the
functions that write them):
- `sass/<kernel>.sm<arch>.json`: `SassRecord` (annotate.harness.sass): per instantiation its
  resources and instruction mix, and for the featured ones, per upstream source line, the
  instruction classes, the SASS text and the classes inlined through the line's calls;
- `sass/<kernel>.sm<arch>.facts.json`: `FactReport` (annotate.harness.sassfacts): the index's
  memory facts of the functions that compiled in, each confirmed by the SASS or not;
- `identity/<kernel>.sm<arch>.json`: `IdentityCard` (annotate.harness.identity): upstream's own
  build of the same kernels compared with the harness's;
- `profiles/<kernel>.<shape>.json`: `ProfileRecord` (annotate.harness.profile): Nsight
  Compute's counters per source line, from a GPU run.

Source files are named as the records name them, `upstream:path` relative to the checkout
(`flashinfer:include/flashinfer/attention/decode.cuh`). A file that cannot be read is one line
in `problems`, never an exception: the site shows the rest. Torch-free and nvcc-free: only json
and PyYAML are imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from annotate.config import Config
from annotate.harness.identity import IdentityCard, card_path, load_card
from annotate.harness.profile import ProfileLine, ProfileRecord, committed_profile, load_profile
from annotate.harness.record import RecordError
from annotate.harness.sass import SassFunction, SassLine, SassRecord, committed_facts_path, committed_path, load_sass_record
from annotate.harness.sassfacts import FactCheck, FactReport, load_fact_report

_PART = "\x00"  # stands for the arch or shape in a path made by a writer's own name function


@dataclass(frozen=True)
class LineSass:
    """What one source line compiled to in one instantiation of one record."""

    arch: str
    function: SassFunction  # the instantiation (its name, resources, mix)
    line: SassLine  # counts, SASS text, classes inlined through the line's calls


@dataclass(frozen=True)
class LineProfile:
    """One profiled launch's counters for one source line."""

    shape: str
    kernel: str  # the launched kernel's demangled name
    line: ProfileLine


@dataclass(frozen=True)
class CompiledView:
    kernel: str
    sass: tuple[SassRecord, ...] = ()  # one per arch, newest arch first
    facts: tuple[FactReport, ...] = ()  # one per arch, same order (its `records` says which)
    identity: tuple[IdentityCard, ...] = ()  # one per arch
    profiles: tuple[ProfileRecord, ...] = ()  # one per profiled shape
    problems: tuple[str, ...] = ()  # "FILE: unreadable record (why)", one per file left out

    def record(self, arch: str) -> SassRecord | None:
        return next((r for r in self.sass if r.arch == arch), None)

    def fact_report(self, arch: str) -> FactReport | None:
        label = f"{self.kernel}.sm{arch}"
        return next((f for f in self.facts if label in f.records), None)

    def card(self, arch: str) -> IdentityCard | None:
        return next((c for c in self.identity if c.arch == arch), None)

    def profile_is_current(self, rec: ProfileRecord) -> bool:
        """Whether a profile was attributed with the SASS record of a build committed now (the
        same build key): otherwise it measured an older build of the harness, whose lines and
        kernels may differ from the records' (show it as such, or not at all)."""
        return rec.sass_record is not None and any(r.key == rec.sass_record for r in self.sass)

    def files(self) -> list[str]:
        """Every source file (`upstream:path`) with per-line SASS in any record."""
        return sorted({f for r in self.sass for f in r.files()})

    def lines(self, path: str, arch: str | None = None) -> dict[int, tuple[LineSass, ...]]:
        """line -> what it compiled to, in every featured instantiation (of one arch, or all)
        that has code there: a line reached from several kernels lists each."""
        out: dict[int, list[LineSass]] = {}
        for rec in self.sass:
            if arch is not None and rec.arch != arch:
                continue
            for fn in rec.functions:
                for sf in fn.files:
                    if sf.path == path:
                        for ln in sf.lines:
                            out.setdefault(ln.line, []).append(LineSass(rec.arch, fn, ln))
        return {n: tuple(v) for n, v in sorted(out.items())}

    def facts_at(self, path: str, arch: str | None = None) -> dict[int, tuple[FactCheck, ...]]:
        """line (where the index's rule fired) -> the checked facts there."""
        out: dict[int, list[FactCheck]] = {}
        for rep in self.facts:
            if arch is not None and f"{self.kernel}.sm{arch}" not in rep.records:
                continue
            for f in rep.facts:
                if f.file == path:
                    out.setdefault(f.line, []).append(f)
        return {n: tuple(v) for n, v in sorted(out.items())}

    def profile_lines(self, path: str) -> dict[int, tuple[LineProfile, ...]]:
        """line -> its counters in every profiled launch that sampled it."""
        out: dict[int, list[LineProfile]] = {}
        for rec in self.profiles:
            for k in rec.kernels:
                for pf in k.files:
                    if pf.path == path:
                        for ln in pf.lines:
                            out.setdefault(ln.line, []).append(LineProfile(rec.shape, k.name, ln))
        return {n: tuple(v) for n, v in sorted(out.items())}


def _listed(name_of: Callable[[Config, str, str], Path], config: Config, kernel: str,
            part: str) -> list[tuple[str, Path]]:
    """(part, path) of every committed file `name_of(config, kernel, part)` would name, for
    parts matching the regex `part`; the writer's own function gives the pattern, so the
    reader cannot drift from it."""
    template = name_of(config, kernel, _PART)
    head, _, tail = template.name.partition(_PART)
    pat = re.compile(re.escape(head) + f"({part})" + re.escape(tail) + "$")
    if not template.parent.is_dir():
        return []
    found = [(m.group(1), p) for p in template.parent.iterdir() if (m := pat.match(p.name)) and p.is_file()]
    return sorted(found, key=lambda t: t[0])


def _archs_newest_first(items: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    def key(t: tuple[str, Path]):
        m = re.match(r"(\d+)(.*)", t[0])
        return (-int(m.group(1)), m.group(2)) if m else (0, t[0])

    return sorted(items, key=key)


def compiled_paths(config: Config, kernel: str) -> list[Path]:
    """Every committed file of the compiled view of `kernel` (what `load_compiled` reads)."""
    arch, shape = r"[0-9]{2,3}[af]?", r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
    out = [p for _, p in _listed(committed_path, config, kernel, arch)]
    out += [p for _, p in _listed(committed_facts_path, config, kernel, arch)]
    out += [p for _, p in _listed(card_path, config, kernel, arch)]
    out += [p for _, p in _listed(committed_profile, config, kernel, shape)]
    return out


def load_compiled(config: Config, kernel: str) -> CompiledView:
    """Every committed record of `kernel`'s compiled view; unreadable files in `problems`."""
    arch, shape = r"[0-9]{2,3}[af]?", r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
    problems: list[str] = []

    def read(items, loader):
        got = []
        for _, path in items:
            try:
                got.append(loader(path))
            except RecordError as exc:
                problems.append(f"{path.name}: unreadable record ({exc.reason})")
        return tuple(got)

    sass = read(_archs_newest_first(_listed(committed_path, config, kernel, arch)), load_sass_record)
    facts = read(_archs_newest_first(_listed(committed_facts_path, config, kernel, arch)), load_fact_report)
    cards = read(_archs_newest_first(_listed(card_path, config, kernel, arch)), load_card)
    profiles = read(_listed(committed_profile, config, kernel, shape), load_profile)
    return CompiledView(kernel, sass, facts, cards, profiles, tuple(problems))

"""What the committed compiled view of the catalog kernels (annotate.harness.compiled) says about
the files the site shows, gathered once per build: per source line the SASS it compiled to in
each featured instantiation, the index's memory facts as the compiler confirmed them, and the
Nsight Compute counters of the profiled launches; per kernel definition its instantiations'
resources. Only files that some record names are in it.

Plus how SASS looks on a page: opcode families as a data table (a marker, a colour class, and
which modifiers a short label keeps), like `site_builder.facts` for the index's fact kinds.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

if TYPE_CHECKING:  # the records' modules are imported when a build reads them, not by a no-op build
    from annotate.harness.compiled import CompiledView, LineSass
    from annotate.harness.profile import ProfileLine
    from annotate.harness.sass import SassFunction
    from annotate.harness.sassfacts import FactCheck

FileKey = tuple[str, str]  # (upstream, path)

# ---- opcode families ------------------------------------------------------------------------------
# family -> (modifiers a short label keeps, colour class). The colours are the fact markers'
# (site_builder/facts.py), so `LDGSTS` on a line matches the `CA` fact beside it. A family not
# listed here is ordinary arithmetic or control flow: counted, not named on the marker.
OPCODE_FAMILIES: dict[str, tuple[frozenset[str], str]] = {
    "LDGSTS": (frozenset(), "fc2"),
    "LDG": (frozenset({"E", "64", "128"}), "fc6"),
    "STG": (frozenset({"E", "64", "128"}), "fc6"),
    "UTMALDG": (frozenset(), "fc2"),
    "UTMASTG": (frozenset(), "fc2"),
    "UBLKCP": (frozenset(), "fc2"),
    "LDSM": (frozenset(), "fc5"),
    "STSM": (frozenset(), "fc5"),
    "HMMA": (frozenset(), "fc5"),
    "HGMMA": (frozenset(), "fc5"),
    "IMMA": (frozenset(), "fc5"),
    "QGMMA": (frozenset(), "fc5"),
    "LDS": (frozenset({"64", "128"}), "fc1"),
    "STS": (frozenset({"64", "128"}), "fc1"),
    "LDL": (frozenset({"64", "128"}), "fc8"),
    "STL": (frozenset({"64", "128"}), "fc8"),
    "SHFL": (frozenset(), "fc4"),
    "BAR": (frozenset(), "fc3"),
    "SYNCS": (frozenset(), "fc3"),
    "LDGDEPBAR": (frozenset(), "fc2"),
    "DEPBAR": (frozenset(), "fc2"),
    "RED": (frozenset(), "fc7"),
    "REDG": (frozenset(), "fc7"),
    "ATOM": (frozenset(), "fc7"),
    "ATOMG": (frozenset(), "fc7"),
    "ATOMS": (frozenset(), "fc7"),
}
# Nsight Compute's warp-state reasons (smsp__pcsamp_warps_issue_stalled_<reason>); each has a
# `stall.<reason>` message, and a reason not listed shows as its name
STALL_REASONS = ("long_scoreboard", "short_scoreboard", "barrier", "membar", "wait", "mio_throttle", "lg_throttle",
                 "tex_throttle", "math_pipe_throttle", "not_selected", "selected", "dispatch_stall",
                 "no_instructions", "imc_miss", "branch_resolving", "drain", "sleeping", "misc")
PLAIN = "code"  # the family of a line with no named opcode: its marker shows a count only
PLAIN_CSS = "sg"
MAX_ON_MARK = 2  # named families on a marker (the expansion lists them all)


def family(opcode: str) -> str:
    return opcode.split(".", 1)[0]


def short_opcode(opcode: str) -> str:
    """The label of an opcode on a marker: its family and the modifiers a reader looks for
    (`LDG.E.128`, `LDS.128`), not the cache hints (`LDGSTS.E.BYPASS.LTC128B.128` -> `LDGSTS`)."""
    head, *mods = opcode.split(".")
    keep = OPCODE_FAMILIES.get(head, (frozenset(), ""))[0]
    return ".".join([head, *(m for m in mods if m in keep)])


def named_counts(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """(short opcode, count) of the named families in `counts`, in the table's order, then by count."""
    c: Counter = Counter()
    for op, n in counts.items():
        if family(op) in OPCODE_FAMILIES:
            c[short_opcode(op)] += int(n)
    order = list(OPCODE_FAMILIES)
    return sorted(c.items(), key=lambda kv: (order.index(family(kv[0])), -kv[1], kv[0]))


def counts_text(counts: Mapping[str, int], limit: int = 12) -> str:
    """Every opcode of a line with its count, most frequent first ("FFMA.FTZ×192 LDS.128×8")."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = " ".join(f"{op}×{n}" if n > 1 else op for op, n in items[:limit])
    return text + (f" +{len(items) - limit}" if len(items) > limit else "")


# ---- what one build knows ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LineEntry:
    """One featured instantiation's code on one line."""

    kernel: str  # the harness (catalog kernel) whose record it is
    sass: LineSass


@dataclass(frozen=True)
class ProfiledLine:
    """One profiled launch's counters on one line."""

    kernel: str  # the harness
    shape: str
    device: str
    function: str  # the launched kernel's demangled name
    kernel_samples: int  # all warp samples of that launch (a line's share is against these)
    current: bool  # attributed with a SASS record committed now (CompiledView.profile_is_current)
    line: ProfileLine


@dataclass(frozen=True)
class FileCompiled:
    """Everything the compiled view says about one rendered file."""

    sass: Mapping[int, tuple[LineEntry, ...]] = field(default_factory=dict)  # newest arch first
    facts: Mapping[tuple[int, str], tuple[tuple[str, FactCheck], ...]] = field(default_factory=dict)
    profiles: Mapping[int, tuple[ProfiledLine, ...]] = field(default_factory=dict)

    @cached_property
    def digest(self) -> str:
        """A short digest of all of it (part of the page's key). An entry's instantiation is
        named, not repeated: its repr would hold the whole kernel's lines."""
        h = hashlib.sha256()
        for line, entries in self.sass.items():
            for e in entries:
                fn = e.sass.function
                h.update(repr((line, e.kernel, e.sass.arch, fn.mangled, fn.name, e.sass.line)).encode())
        h.update(repr(sorted(self.facts.items())).encode("utf-8", "surrogatepass"))
        h.update(repr(sorted(self.profiles.items())).encode("utf-8", "surrogatepass"))
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class Instantiation:
    kernel: str  # the harness
    arch: str
    function: SassFunction


@dataclass(frozen=True)
class CompiledSite:
    views: Mapping[str, CompiledView] = field(default_factory=dict)  # harness -> its view
    files: Mapping[FileKey, FileCompiled] = field(default_factory=dict)
    instantiations: Mapping[str, tuple[Instantiation, ...]] = field(default_factory=dict)  # Symbol.key ->

    def file(self, upstream: str, path: str) -> FileCompiled | None:
        return self.files.get((upstream, path))

    def file_digest(self, upstream: str, path: str) -> str:
        fc = self.files.get((upstream, path))
        return fc.digest if fc is not None else ""


def kernels_by_file(site: CompiledSite) -> dict[FileKey, tuple[str, ...]]:
    """Per file, the harnesses whose records say something about it: its lines' SASS, facts and
    profiles, and the instantiations of the definitions in it. What a build after a note edit
    reads (`LazyCompiledSite`) instead of every record."""
    from annotate.index.model import split_key

    out: dict[FileKey, set[str]] = {}
    for fk, fc in site.files.items():
        got = out.setdefault(fk, set())
        got.update(e.kernel for entries in fc.sass.values() for e in entries)
        got.update(k for checks in fc.facts.values() for k, _ in checks)
        got.update(p.kernel for lines in fc.profiles.values() for p in lines)
    for key, insts in site.instantiations.items():
        up, _q, path, _line = split_key(key)
        out.setdefault((up, path), set()).update(i.kernel for i in insts)
    return {fk: tuple(sorted(ks)) for fk, ks in sorted(out.items()) if ks}


class LazyCompiledSite:
    """`compiled_site` read as far as the pages of a build ask: for a file, the views of only the
    harnesses `kernels_of` names for it (as the last full build found them, over the same
    records: the build's stamp says they are unchanged), joined as `compiled_site` joins them
    all. The views keep their order, so a file's entries come out in the same order as well."""

    def __init__(self, load: Callable[[str], "CompiledView"], kernels: Iterable[str],
                 kernels_of: Mapping[FileKey, tuple[str, ...]], shown: Iterable[FileKey],
                 spec_keys: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None):
        self._load, self._kernels, self._of = load, tuple(kernels), kernels_of
        self._shown, self._spec_keys = frozenset(shown), spec_keys
        self._views: dict[str, CompiledView] = {}
        self._sites: dict[tuple[str, ...], CompiledSite] = {}

    def _view(self, kernel: str) -> "CompiledView":
        if kernel not in self._views:
            self._views[kernel] = self._load(kernel)
        return self._views[kernel]

    def _site(self, fk: FileKey) -> CompiledSite:
        wanted = set(self._of.get(fk, ()))
        ks = tuple(k for k in self._kernels if k in wanted)
        if ks not in self._sites:
            self._sites[ks] = compiled_site([self._view(k) for k in ks], self._shown, self._spec_keys)
        return self._sites[ks]

    @property
    def views(self) -> Mapping[str, "CompiledView"]:
        return {k: self._view(k) for k in self._kernels}

    @property
    def instantiations(self) -> "_LazyInstantiations":
        return _LazyInstantiations(self)

    def file(self, upstream: str, path: str) -> FileCompiled | None:
        return self._site((upstream, path)).file(upstream, path)

    def file_digest(self, upstream: str, path: str) -> str:
        return self._site((upstream, path)).file_digest(upstream, path)


class _LazyInstantiations:
    """Symbol.key -> instantiations (`get` only: what the pages ask), from the views of the
    harnesses of the key's file."""

    def __init__(self, site: LazyCompiledSite):
        self._site = site

    def get(self, key: str, default=None):
        from annotate.index.model import split_key

        try:
            up, _q, path, _line = split_key(key)
        except ValueError:
            return default
        return self._site._site((up, path)).instantiations.get(key, default)


def compiled_site(views: Iterable[CompiledView], shown: Iterable[FileKey],
                  spec_keys: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None) -> CompiledSite:
    """Join the views with the files the site shows. `spec_keys`: harness -> the spec's
    qualified name -> the Symbol.keys it resolved to (SiteContext.run_symbols), for the
    per-definition instantiations."""
    from annotate.harness.compiled import LineSass

    views = {v.kernel: v for v in views}
    shown = set(shown)
    sass: dict[FileKey, dict[int, list[LineEntry]]] = {}
    facts: dict[FileKey, dict[tuple[int, str], list[tuple[str, FactCheck]]]] = {}
    profiles: dict[FileKey, dict[int, list[ProfiledLine]]] = {}
    inst: dict[str, list[Instantiation]] = {}

    def key_of(name: str) -> FileKey | None:
        up, _, path = name.partition(":")
        return (up, path) if (up, path) in shown else None

    for kernel, view in views.items():
        keys = (spec_keys or {}).get(kernel, {})
        for rec in view.sass:  # newest arch first
            for fn in rec.functions:
                for k in keys.get(fn.symbol, ()):
                    inst.setdefault(k, []).append(Instantiation(kernel, rec.arch, fn))
                for sf in fn.files:
                    fk = key_of(sf.path)
                    if fk is None:
                        continue
                    by_line = sass.setdefault(fk, {})
                    for ln in sf.lines:
                        by_line.setdefault(ln.line, []).append(LineEntry(kernel, LineSass(rec.arch, fn, ln)))
        for rep in view.facts:
            for f in rep.facts:
                fk = key_of(f.file)
                if fk is not None:
                    facts.setdefault(fk, {}).setdefault((f.line, f.rule), []).append((kernel, f))
        for prec in view.profiles:
            current = view.profile_is_current(prec)
            for pk in prec.kernels:
                for pf in pk.files:
                    fk = key_of(pf.path)
                    if fk is None:
                        continue
                    for ln in pf.lines:
                        profiles.setdefault(fk, {}).setdefault(ln.line, []).append(ProfiledLine(
                            kernel, prec.shape, prec.device or "", pk.name, pk.samples, current, ln))
    order = {k: i for i, k in enumerate(views)}

    def newest_first(e: LineEntry) -> tuple:
        digits = "".join(ch for ch in e.sass.arch if ch.isdigit())
        return (-int(digits or 0), order[e.kernel])

    files = {}
    for fk in sorted(set(sass) | set(facts) | set(profiles)):
        files[fk] = FileCompiled(
            {n: tuple(sorted(v, key=newest_first)) for n, v in sorted(sass.get(fk, {}).items())},
            {n: tuple(v) for n, v in sorted(facts.get(fk, {}).items())},
            {n: tuple(v) for n, v in sorted(profiles.get(fk, {}).items())})
    return CompiledSite(views, files, {k: tuple(v) for k, v in inst.items()})


# ---- a fact, as the compiler saw it over every record --------------------------------------------------
def status_order() -> tuple[str, ...]:
    """The order in which statuses win when one fact was checked in several records (two archs,
    two kernels sharing a helper): code that confirms it anywhere confirms it."""
    from annotate.harness.sassfacts import CONFIRMED, NEARBY, NO_CODE, NOT_CONFIRMED

    return (CONFIRMED, NEARBY, NOT_CONFIRMED, NO_CODE)


@dataclass(frozen=True)
class FactVerdict:
    status: str  # one of status_order()
    opcodes: dict  # confirming opcodes (confirmed, nearby) or what the span compiled to (not-confirmed)
    records: tuple[str, ...]  # "decode_kernel.sm90", the records that say so
    near_line: int | None = None


def fact_verdict(checks: Iterable[tuple[str, FactCheck]]) -> FactVerdict | None:
    """The best-supported status of one fact over the reports that checked it; None when none
    measured it (not compiled into a catalog kernel, or a kind with no SASS signature)."""
    from annotate.harness.sassfacts import NOT_CONFIRMED

    order = status_order()
    by_status: dict[str, list[FactCheck]] = {}
    for _kernel, f in checks:
        if f.status in order:
            by_status.setdefault(f.status, []).append(f)
    for status in order:
        fs = by_status.get(status)
        if not fs:
            continue
        ops: dict[str, int] = {}  # the most of each opcode one report counted (reports overlap: not summed)
        for f in fs:
            for k, v in (f.instead if status == NOT_CONFIRMED else f.found).items():
                if isinstance(v, (int, float)):
                    ops[k] = max(ops.get(k, 0), int(v))
        records = tuple(dict.fromkeys(r for f in fs for r in f.records))
        near = next((f.near_line for f in fs if f.near_line), None)
        return FactVerdict(status, ops, records, near)
    return None

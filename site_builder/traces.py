"""The cross-language traces the site shows (`annotate trace`, annotate.index.trace): every entry
point the rules name for the site, traced with its example parameters, as plain data.

Tracing walks the index and parses the files on the chains: seconds for the eight entries of the
pins. What the site needs of a trace (its hops, guards, dispatch macros, the functions on it) is
kept as JSON in the site cache, under a key of everything a trace reads: the index's content,
the code of annotate/index/ and its rules, the entries. A build whose index and rules did not
change reads it back in milliseconds; JSON, not a pickle, because loading a cache must never run
code from it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from annotate.index.crosslang import Entry
    from annotate.index.trace import Hop, Trace
    from annotate.project import Project

CACHE_VERSION = "1"
KEEP = 3  # cache files kept (the newest)


@dataclass(frozen=True)
class GuardData:
    text: str
    path: str
    line: int
    decided: bool | None  # True: holds for the example parameters; None: not decided statically
    note: str = ""  # its run-time meaning, from the rules


@dataclass(frozen=True)
class DispatchData:
    macro: str
    path: str
    line: int
    defined_at: str  # "path:line" of the #define (a .jinja template when generated at JIT time)
    branches: int  # branches still possible
    total: int  # branches the macro has
    generated: bool


@dataclass(frozen=True)
class HopData:
    kind: str
    upstream: str
    src: str | None  # Symbol.key (None: a compiled module)
    dst: str | None
    target: str  # what it reaches, as the trace names it
    path: str
    line: int
    written: str  # the code that makes the hop
    guards: tuple[GuardData, ...] = ()
    dispatch: tuple[DispatchData, ...] = ()
    detail: str = ""
    binds: tuple[tuple[str, str], ...] = ()  # template arguments it binds in the callee


@dataclass(frozen=True)
class ChainData:
    hops: tuple[HopData, ...]
    kernel: str  # Symbol.key of the kernel reached


@dataclass(frozen=True)
class DeadEndData:
    hops: tuple[HopData, ...]
    reason: str


@dataclass(frozen=True)
class TraceData:
    entry: str  # as the rules name it ("flash_attn.flash_attn_func")
    entry_key: str  # Symbol.key of the function
    when: tuple[tuple[str, str], ...]  # the example parameters
    steps: tuple[str, ...]  # course steps that ask for it
    chains: tuple[ChainData, ...]
    dead_ends: tuple[DeadEndData, ...]
    undecided: tuple[GuardData, ...]  # conditions the parameters could not decide
    truncated: bool
    through: tuple[str, ...]  # every function on a chain, the entry first


# ---- from a trace ----------------------------------------------------------------------------------

def _guard(g) -> GuardData:
    return GuardData(g.text, g.path, g.line, g.decided, g.note)


def _hop(h: "Hop") -> HopData:
    return HopData(h.kind, h.upstream, h.src, h.dst, h.target, h.path, h.line, h.written,
                   tuple(_guard(g) for g in h.guards),
                   tuple(DispatchData(d.macro, d.path, d.line, d.defined_at, len(d.branches), d.total, d.generated)
                         for d in h.dispatch),
                   h.detail, tuple(h.env))


def trace_data(entry: "Entry", t: "Trace") -> TraceData:
    return TraceData(
        entry=entry.entry, entry_key=t.entry.key, when=tuple(t.when), steps=tuple(entry.steps),
        chains=tuple(ChainData(tuple(_hop(h) for h in c.hops), c.kernel) for c in t.chains),
        dead_ends=tuple(DeadEndData(tuple(_hop(h) for h in d.hops), d.reason) for d in t.dead_ends),
        undecided=tuple(_guard(g) for g in t.undecided), truncated=t.truncated, through=t.through())


# ---- JSON, both ways ---------------------------------------------------------------------------------

def to_json(traces: Iterable[TraceData]) -> str:
    return json.dumps([asdict(t) for t in traces], ensure_ascii=False, separators=(",", ":"))


def from_json(text: str) -> tuple[TraceData, ...]:
    """The inverse of `to_json`; ValueError (or KeyError, TypeError) on anything else."""
    def pairs(x) -> tuple[tuple[str, str], ...]:
        return tuple((str(a), str(b)) for a, b in x)

    def guard(d: dict) -> GuardData:
        return GuardData(str(d["text"]), str(d["path"]), int(d["line"]),
                         None if d["decided"] is None else bool(d["decided"]), str(d["note"]))

    def hop(d: dict) -> HopData:
        return HopData(str(d["kind"]), str(d["upstream"]), d["src"], d["dst"], str(d["target"]), str(d["path"]),
                       int(d["line"]), str(d["written"]), tuple(guard(g) for g in d["guards"]),
                       tuple(DispatchData(str(x["macro"]), str(x["path"]), int(x["line"]), str(x["defined_at"]),
                                          int(x["branches"]), int(x["total"]), bool(x["generated"]))
                             for x in d["dispatch"]),
                       str(d["detail"]), pairs(d["binds"]))

    out = []
    for t in json.loads(text):
        out.append(TraceData(
            str(t["entry"]), str(t["entry_key"]), pairs(t["when"]), tuple(str(s) for s in t["steps"]),
            tuple(ChainData(tuple(hop(h) for h in c["hops"]), str(c["kernel"])) for c in t["chains"]),
            tuple(DeadEndData(tuple(hop(h) for h in d["hops"]), str(d["reason"])) for d in t["dead_ends"]),
            tuple(guard(g) for g in t["undecided"]), bool(t["truncated"]), tuple(str(k) for k in t["through"])))
    return tuple(out)


# ---- the cache ----------------------------------------------------------------------------------------

def traces_key(project: "Project") -> str:
    """Everything a build's traces depend on: the index's content, the trace code and rules
    (annotate/index/), the entries."""
    import annotate.index
    from annotate.index.crosslang import rules

    h = hashlib.sha256(f"{CACHE_VERSION}\0{project.index.content_key()}\0{rules().entries!r}\n".encode())
    base = Path(annotate.index.__file__).parent
    for p in sorted([*base.glob("*.py"), *base.glob("rules/*.yaml")]):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:24]


def load_traces(project: "Project") -> tuple[TraceData, ...]:
    """The site's traces: from the site cache when a build with the same inputs made them, else
    traced now (Project.traces) and kept."""
    from annotate.atomic import write_atomic

    key = traces_key(project)
    folder = project.config.site_cache_dir() / "traces"
    path = folder / f"traces-{key}.json"
    try:
        return from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent or damaged: traced again below
    found = tuple(trace_data(et.entry, et.trace) for et in project.traces())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(path, to_json(found))
        old = sorted(folder.glob("traces-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for p in old[KEEP:]:
            p.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only cache: the build goes on without keeping them
    return found

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
import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    from annotate.index.crosslang import Entry
    from annotate.index.trace import Hop, Trace
    from annotate.project import Project
    from site_builder.model import Label, Msg

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


def _cache_file(project: "Project", key: str | None = None) -> Path:
    return project.config.site_cache_dir() / "traces" / f"traces-{key or traces_key(project)}.json"


def start_traces(project: "Project") -> Callable[[], None]:
    """Trace in a forked process while this one goes on (a cold build loads the annotations and
    makes the context meanwhile: tracing is a second or two of one core), leaving the traces in
    the site cache for `load_traces`; returns what waits for that process. Nothing is started
    when they are cached already or fork is not available. (A build against an index it was
    given, `annotate serve`, does not call it: `Project.traces` keeps the traces in the index.)"""
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods() or _cache_file(project).is_file():
        return lambda: None
    proc = mp.get_context("fork").Process(target=_trace_in_child, args=(project,), daemon=True)
    try:
        proc.start()
    except OSError:
        return lambda: None  # no process to spare: load_traces traces in this one
    return proc.join


def _trace_in_child(project: "Project") -> None:
    try:
        load_traces(project)
    except BaseException:  # the parent traces again in load_traces and reports what fails there
        os._exit(1)


def load_traces(project: "Project") -> tuple[TraceData, ...]:
    """The site's traces: from the site cache when a build with the same inputs made them, else
    traced now (Project.traces) and kept."""
    from annotate.atomic import write_atomic

    key = traces_key(project)
    path = _cache_file(project, key)
    folder = path.parent
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


# ---- the trace's words in the reader's language ---------------------------------------------------
# trace.py writes its details, dead-end reasons and module labels in English; trace_words.yaml
# reads them back into catalogue messages, and the rules give their notes and build lines in
# Chinese (`note_zh`, `built_by_zh`). What nothing reads is shown as it is, marked as English.

WORDS_FILE = Path(__file__).parent / "trace_words.yaml"


def _load_words() -> dict[str, tuple[tuple[Any, str], ...]]:
    import re

    from annotate.yamlpos import decode, load_yaml, read_bytes
    from site_builder.i18n import CatalogueError, catalogue, placeholders

    data = load_yaml(decode(read_bytes(WORDS_FILE))).data
    out = {}
    for part in ("details", "targets"):
        rows = []
        for i, r in enumerate(data.get(part) or []):
            where = f"{WORDS_FILE.name}: {part}[{i}]"
            try:
                rx = re.compile(str(r["pattern"]) + r"(?=; |$)")
            except (KeyError, TypeError, re.error) as exc:
                raise CatalogueError(f"{where}: a pattern (a regex) and a message are needed ({exc})") from None
            mid = str(r.get("message", ""))
            entry = catalogue().get(mid)
            if entry is None:
                raise CatalogueError(f"{where}: no message {mid!r} in messages.yaml")
            if placeholders(entry["en"], plurals=False) != set(rx.groupindex):
                raise CatalogueError(f"{where}: the pattern's groups are not the placeholders of {mid}")
            rows.append((rx, mid))
        out[part] = tuple(rows)
    return out


@lru_cache(maxsize=1)
def words_rules() -> dict[str, tuple[tuple[Any, str], ...]]:
    return _load_words()


def _rule_zh() -> dict[str, str]:
    """The rules' English notes and build lines -> their Chinese, where the rules give one."""
    from annotate.index.crosslang import rules

    r = rules()
    out = {v.note: v.note_zh for v in r.variables if v.note and v.note_zh}
    out.update({e.built_by: e.built_by_zh for e in r.extensions if e.built_by and e.built_by_zh})
    return out


def read_words(text: str, part: str = "details") -> "list[Msg] | None":
    """The catalogue messages `text` reads as, one per "; "-separated part, or None when some
    part reads as nothing (trace_words.yaml's `part` patterns)."""
    from site_builder.model import Msg

    out, pos = [], 0
    while pos < len(text):
        for rx, mid in words_rules()[part]:
            m = rx.match(text, pos)
            if m:
                out.append(Msg(mid, tuple(sorted(m.groupdict().items()))))
                pos = m.end() + (2 if text.startswith("; ", m.end()) else 0)
                break
        else:
            return None
    return out


def trace_words(text: str, part: str = "details") -> "str | Label":
    """One of the trace's English texts in both languages: a Label whose Chinese is made of the
    catalogue messages its parts read as (their values as they are, but for a rules' build
    line, which the rules give in Chinese, and a module named as a target); zh None (the page marks the English) when some part
    reads as nothing."""
    from site_builder.i18n import text as say
    from site_builder.model import Label, Msg

    if not text:
        return text
    msgs = read_words(text, part)
    if msgs is None:
        return Label(text, None)
    zh_rules = _rule_zh()

    def zh_value(name: str, value: str) -> str:
        if name == "target" and part == "details":  # a dead end's module: "extension module X"
            got = trace_words(value, "targets")
            return got.zh if isinstance(got, Label) and got.zh else value
        return zh_rules.get(value, value)

    zh = [say(Msg(m.id, tuple((k, zh_value(k, v)) for k, v in m.args)), "zh") for m in msgs]
    return Label(text, "；".join(zh))


def note_words(note: str) -> "str | Label":
    """A condition's note (the rules' words, several joined by a space) in both languages."""
    from site_builder.model import Label

    if not note:
        return note
    zh = note
    for en, z in sorted(_rule_zh().items(), key=lambda kv: -len(kv[0])):
        zh = zh.replace(en, z)
    return Label(note, zh if zh != note else None)

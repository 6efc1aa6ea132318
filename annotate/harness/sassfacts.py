"""Memory facts confirmed by the compiler: the index's rule-detected facts matched against the
SASS their statements compiled to (annotate/harness/rules/sass_facts.yaml says which opcodes
confirm which kind of fact).

The harness reads no other stage: the facts arrive as `FactSite` values from the caller
(annotate/commands/sass.py makes them from the index, with each fact's statement span), and the
SASS as records (annotate.harness.sass) or instruction chains (`chains_of`).

Matching, and why over a span:
- nvcc attributes an inline asm statement to its last line and a call to its first, so a fact
  is matched over its statement's lines, `start`..`end`, not over the one line the rule fired on;
- an instruction matches a line when any of its upstream frames is on it (the line itself, or a
  call on it inlined there): `cp_async::pred_load(...)` is confirmed by the LDGSTS of the helper's
  asm, inlined at the call;
- the scheduler sometimes lists an instruction under a neighbouring line. That is not counted
  as a confirmation: a fact whose opcodes appear only within `NEAR` lines of its span (inside
  the same function) is `nearby`, reported apart, and precision is given both strictly
  (confirmed only) and leniently (confirmed + nearby).

Statuses: confirmed, nearby, not-confirmed (the span has code, none of the fact's opcodes),
no-code (the function compiled but its span did not: a branch compiled out for every kernel),
not-compiled (the function is in no catalog kernel: not measured), unchecked (a kind without
a SASS signature, e.g. inline-ptx).
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from annotate.errors import AnnotateError
from annotate.harness.record import _opt, _Part
from annotate.harness.sass import SassRecord

TABLE_FILE = Path(__file__).parent / "rules" / "sass_facts.yaml"
NEAR = 2  # lines either side of a statement searched for a `nearby` match

CONFIRMED, NEARBY, NOT_CONFIRMED = "confirmed", "nearby", "not-confirmed"
NO_CODE, NOT_COMPILED, UNCHECKED = "no-code", "not-compiled", "unchecked"
STATUSES = (CONFIRMED, NEARBY, NOT_CONFIRMED, NO_CODE, NOT_COMPILED, UNCHECKED)


# ---- the table ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Signature:
    opcodes: tuple[re.Pattern, ...]
    scope: str = "statement"  # or "function"

    def matches(self, opcode: str) -> bool:
        return any(p.match(opcode) for p in self.opcodes)


@dataclass(frozen=True)
class Override:
    rule: str | None
    detail: re.Pattern | None
    opcodes: tuple[re.Pattern, ...]


@dataclass(frozen=True)
class FactTable:
    kinds: dict  # kind -> Signature
    overrides: tuple[Override, ...]
    recall: dict  # kind -> tuple of patterns

    def signature(self, kind: str, rule: str = "", detail: str = "") -> Signature | None:
        base = self.kinds.get(kind)
        if base is None:
            return None
        for o in self.overrides:
            if (o.rule is None or o.rule == rule) and (o.detail is None or o.detail.search(detail)):
                return Signature(o.opcodes, base.scope)
        return base

    def recall_kinds(self, opcode: str) -> list[str]:
        return [k for k, pats in self.recall.items() if any(p.match(opcode) for p in pats)]


def _patterns(raw, where: str) -> tuple[re.Pattern, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(r, str) for r in raw):
        raise AnnotateError(f"{where}: expected a list of opcode regexes")
    try:
        return tuple(re.compile(r) for r in raw)
    except re.error as exc:
        raise AnnotateError(f"{where}: bad regex: {exc}") from None


def parse_table(raw, where: str = "sass_facts.yaml") -> FactTable:
    if not isinstance(raw, dict) or not isinstance(raw.get("kinds"), dict):
        raise AnnotateError(f"{where}: expected a mapping with `kinds:`")
    kinds = {}
    for kind, body in raw["kinds"].items():
        if not isinstance(body, dict) or "opcodes" not in body:
            raise AnnotateError(f"{where}: kinds.{kind}: needs `opcodes`")
        scope = str(body.get("scope", "statement"))
        if scope not in ("statement", "function"):
            raise AnnotateError(f"{where}: kinds.{kind}: scope must be statement or function")
        kinds[str(kind)] = Signature(_patterns(body["opcodes"], f"{where}: kinds.{kind}"), scope)
    overrides = []
    for i, o in enumerate(raw.get("overrides") or []):
        if not isinstance(o, dict) or "opcodes" not in o or not ({"rule", "detail"} & set(o)):
            raise AnnotateError(f"{where}: overrides[{i}]: needs `opcodes` and a `rule` or `detail`")
        try:
            detail = re.compile(o["detail"]) if "detail" in o else None
        except re.error as exc:
            raise AnnotateError(f"{where}: overrides[{i}]: bad detail regex: {exc}") from None
        overrides.append(Override(o.get("rule"), detail, _patterns(o["opcodes"], f"{where}: overrides[{i}]")))
    recall = {str(k): _patterns(v, f"{where}: recall.{k}") for k, v in (raw.get("recall") or {}).items()}
    return FactTable(kinds, tuple(overrides), recall)


@functools.cache
def load_table(path: Path = TABLE_FILE) -> FactTable:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise AnnotateError(f"{path}: cannot read the fact table: {exc}") from None
    return parse_table(raw, str(path))


# ---- what comes in -----------------------------------------------------------------------------
@dataclass(frozen=True)
class FactSite:
    """One rule-detected fact with the lines it covers (made by the caller from the index)."""

    file: str  # "flashinfer:include/flashinfer/attention/decode.cuh" (upstream:path, like records)
    line: int  # where the rule fired (the node's first line)
    start: int  # the statement's first line
    end: int  # the statement's last line
    kind: str
    rule: str
    detail: str
    function: str  # Symbol.key
    function_start: int
    function_end: int


# ---- what goes out (committed beside the SASS records) -------------------------------------------
@dataclass(frozen=True)
class FactCheck(_Part):
    file: str = _opt(default="")
    line: int = _opt(default=0)
    start: int = _opt(default=0)
    end: int = _opt(default=0)
    kind: str = _opt(default="")
    rule: str = _opt(default="")
    detail: str = _opt(default="", omit="empty")  # the index's detail; left out of committed reports
    function: str = _opt(default="")
    status: str = _opt(default=UNCHECKED)
    found: dict = _opt(factory=dict)  # confirming opcodes -> instructions (over every record)
    near_line: int | None = _opt(omit="none")  # nearby: the line they were listed under
    instead: dict = _opt(factory=dict, omit="empty")  # not-confirmed: what the span compiled to
    records: tuple[str, ...] = _opt(default=())  # "decode_kernel.sm90": records the function compiled into


@dataclass(frozen=True)
class FactReport(_Part):
    """Every checked fact of the functions that compiled into the records, and the records."""

    schema: int = _opt(default=1)
    records: tuple[str, ...] = _opt(default=())
    near: int = _opt(default=NEAR)
    facts: tuple[FactCheck, ...] = _opt(default=())


def write_fact_report(path: Path, report: FactReport) -> None:
    import json

    from annotate.atomic import write_atomic

    data = report.to_json()
    facts = data.pop("facts")
    head = json.dumps(data, indent=1)[:-2]
    body = ",\n".join("  " + json.dumps(f, separators=(", ", ": "), ensure_ascii=False) for f in facts)
    write_atomic(path, f'{head},\n "facts": [\n{body}\n ]\n}}\n')


def committed_form(report: FactReport) -> FactReport:
    """The report as committed: without the rules' `detail` texts, which can quote upstream code
    (`extern __shared__ char smem_[];`). A reader joins a check to the index's fact by
    (file, line, rule) for its detail."""
    import dataclasses

    return dataclasses.replace(report, facts=tuple(dataclasses.replace(f, detail="") for f in report.facts))


def load_fact_report(path: Path) -> FactReport:
    """A report file, bounded; RecordError (one line) when it cannot be read."""
    from annotate.harness.record import read_record_json

    return FactReport.from_json(read_record_json(Path(path)))


def record_label(rec: SassRecord) -> str:
    return f"{rec.kernel}.sm{rec.arch}"


# ---- precision: facts against the records --------------------------------------------------------
class LineIndex:
    """(file, line) -> instruction classes over every frame (own + via), per record."""

    def __init__(self, records: Sequence[SassRecord]):
        self.labels = [record_label(r) for r in records]
        self.lines: list[dict[tuple[str, int], Counter]] = []
        self.by_file: list[dict[str, list[int]]] = []
        for rec in records:
            lines: dict[tuple[str, int], Counter] = defaultdict(Counter)
            for fn in rec.functions:
                for sf in fn.files:
                    for ln in sf.lines:
                        c = lines[(sf.path, ln.line)]
                        c.update(ln.counts)
                        c.update(ln.via)
            self.lines.append(dict(lines))
            files: dict[str, list[int]] = defaultdict(list)
            for f, n in lines:
                files[f].append(n)
            self.by_file.append({f: sorted(v) for f, v in files.items()})

    def compiled_in(self, file: str, start: int, end: int) -> list[int]:
        """Records (indices) with code on any line of file[start..end]."""
        out = []
        for i, files in enumerate(self.by_file):
            lines = files.get(file, ())
            if any(start <= n <= end for n in lines):
                out.append(i)
        return out

    def counts(self, which: Iterable[int], file: str, start: int, end: int) -> Counter:
        total: Counter = Counter()
        for i in which:
            for n in self.by_file[i].get(file, ()):
                if start <= n <= end:
                    total.update(self.lines[i][(file, n)])
        return total


def _matching(counts: Counter, sig: Signature) -> dict:
    return {op: n for op, n in sorted(counts.items()) if sig.matches(op)}


def check_fact(site: FactSite, index: LineIndex, table: FactTable, near: int = NEAR,
               owned: frozenset[int] = frozenset()) -> FactCheck:
    """`owned`: lines of the file inside another fact's statement; never searched as a
    neighbour (the instructions there are that statement's, e.g. the other branch of an
    `if constexpr` with its own asm)."""
    base = dict(file=site.file, line=site.line, start=site.start, end=site.end, kind=site.kind,
                rule=site.rule, detail=site.detail, function=site.function)
    recs = index.compiled_in(site.file, site.function_start, site.function_end)
    labels = tuple(index.labels[i] for i in recs)
    sig = table.signature(site.kind, site.rule, site.detail)
    if not recs:
        return FactCheck(**base, status=NOT_COMPILED)
    if sig is None:
        return FactCheck(**base, status=UNCHECKED, records=labels)
    if sig.scope == "function":
        found = _matching(index.counts(recs, site.file, site.function_start, site.function_end), sig)
        return FactCheck(**base, status=CONFIRMED if found else NOT_CONFIRMED, found=found, records=labels)
    span = index.counts(recs, site.file, site.start, site.end)
    found = _matching(span, sig)
    if found:
        return FactCheck(**base, status=CONFIRMED, found=found, records=labels)
    # the scheduler's neighbouring line: nearest first, inside the function only
    for d in range(1, near + 1):
        for n in (site.start - d, site.end + d):
            if site.function_start <= n <= site.function_end and n not in owned:
                hit = _matching(index.counts(recs, site.file, n, n), sig)
                if hit:
                    return FactCheck(**base, status=NEARBY, found=hit, near_line=n, records=labels)
    if not span:
        return FactCheck(**base, status=NO_CODE, records=labels)
    return FactCheck(**base, status=NOT_CONFIRMED, instead=dict(sorted(span.items())), records=labels)


def check_facts(sites: Iterable[FactSite], records: Sequence[SassRecord], table: FactTable | None = None,
                near: int = NEAR) -> FactReport:
    table = table or load_table()
    index = LineIndex(records)
    sites = list(sites)
    spans: dict[str, dict[tuple[int, int], None]] = defaultdict(dict)
    for s in sites:
        spans[s.file][(s.start, s.end)] = None

    def owned(site: FactSite) -> frozenset[int]:
        return frozenset(n for a, b in spans[site.file] if (a, b) != (site.start, site.end)
                         for n in range(a, b + 1))

    checks = tuple(check_fact(s, index, table, near, owned(s)) for s in sites)
    return FactReport(records=tuple(index.labels), near=near,
                      facts=tuple(c for c in checks if c.status != NOT_COMPILED))


# ---- recall: instructions against the facts ------------------------------------------------------
@dataclass(frozen=True)
class Chain:
    """Instructions of one opcode sharing one chain of upstream frames, in one record."""

    record: str
    opcode: str
    frames: tuple[tuple[str, int], ...]  # innermost first
    count: int = 1


def chains_of(record_label_: str, functions) -> list[Chain]:
    """Chains from annotate.harness.sass.DisasmFunction values (their frames already mapped to
    upstream files: pass the output of `sass.upstream_chains`)."""
    counts: Counter = Counter()
    for opcode, frames in functions:
        counts[(opcode, frames)] += 1
    return [Chain(record_label_, op, fr, n) for (op, fr), n in counts.items()]


@dataclass(frozen=True)
class Miss:
    kind: str
    file: str
    line: int  # the innermost upstream line of the instructions
    opcodes: dict
    at: tuple[str, ...]  # "file:line" of the outer frames (the calls it was inlined through)
    records: tuple[str, ...]


@dataclass(frozen=True)
class Recall:
    per_kind: dict  # kind -> (explained instructions, total instructions)
    misses: tuple[Miss, ...]

    def ratio(self, kind: str | None = None) -> float | None:
        pairs = [self.per_kind[kind]] if kind else list(self.per_kind.values())
        got = sum(a for a, _ in pairs)
        total = sum(b for _, b in pairs)
        return got / total if total else None


def recall(sites: Iterable[FactSite], chains: Iterable[Chain], table: FactTable | None = None) -> Recall:
    """Of the instructions the table says a fact should explain, those that have a frame on the
    span of a fact of their kind; the others grouped by their innermost line (`misses`)."""
    table = table or load_table()
    spans: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for s in sites:
        sig = table.signature(s.kind, s.rule, s.detail)
        if sig is not None and sig.scope == "statement":
            spans[(s.kind, s.file)].append((s.start, s.end))
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed: dict[tuple, dict] = {}
    for ch in chains:
        if not ch.frames:
            continue
        for kind in table.recall_kinds(ch.opcode):
            per_kind[kind][1] += ch.count
            if any(a <= n <= b for f, n in ch.frames for a, b in spans.get((kind, f), ())):
                per_kind[kind][0] += ch.count
                continue
            f, n = ch.frames[0]
            key = (kind, f, n, tuple(f"{ff}:{nn}" for ff, nn in ch.frames[1:]))
            m = missed.setdefault(key, {"opcodes": Counter(), "records": set()})
            m["opcodes"][ch.opcode] += ch.count
            m["records"].add(ch.record)
    misses = tuple(Miss(kind, f, n, dict(sorted(v["opcodes"].items())), at, tuple(sorted(v["records"])))
                   for (kind, f, n, at), v in sorted(missed.items()))
    return Recall({k: (v[0], v[1]) for k, v in sorted(per_kind.items())}, misses)


# ---- summary ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Precision:
    counts: dict  # status -> facts
    per_kind: dict = field(default_factory=dict)  # kind -> status -> facts

    @property
    def strict(self) -> float | None:
        c = self.counts
        den = c.get(CONFIRMED, 0) + c.get(NEARBY, 0) + c.get(NOT_CONFIRMED, 0)
        return c.get(CONFIRMED, 0) / den if den else None

    @property
    def lenient(self) -> float | None:
        c = self.counts
        den = c.get(CONFIRMED, 0) + c.get(NEARBY, 0) + c.get(NOT_CONFIRMED, 0)
        return (c.get(CONFIRMED, 0) + c.get(NEARBY, 0)) / den if den else None


def precision(report: FactReport) -> Precision:
    counts: Counter = Counter(f.status for f in report.facts)
    per_kind: dict[str, Counter] = defaultdict(Counter)
    for f in report.facts:
        per_kind[f.kind][f.status] += 1
    return Precision(dict(counts), {k: dict(v) for k, v in sorted(per_kind.items())})


def kind_precision(p: Precision, kind: str) -> tuple[float | None, float | None]:
    c = p.per_kind.get(kind, {})
    den = c.get(CONFIRMED, 0) + c.get(NEARBY, 0) + c.get(NOT_CONFIRMED, 0)
    if not den:
        return None, None
    return c.get(CONFIRMED, 0) / den, (c.get(CONFIRMED, 0) + c.get(NEARBY, 0)) / den

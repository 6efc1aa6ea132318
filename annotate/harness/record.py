"""Run records: what one `annotate run KERNEL` measured, as frozen typed data.

One reader and one writer for every consumer (the runner writes, the CLI prints, the site
shows): `RunRecord.from_json` / `to_json`, `load_record` / `write_record`.

Records are data from elsewhere (a GPU machine, a commit, anyone with write access to the
cache), so reading is tolerant and bounded:
- unknown keys are ignored and a field that is missing or of the wrong type takes its default,
  so older records (no `fatal`, an absolute build directory) and hand-edited ones still read;
- a file larger than MAX_RECORD_BYTES, nested deeper than MAX_DEPTH, not JSON or not a JSON
  object raises `RecordError`: one line naming the file and the reason, never a RecursionError.

`to_json` writes the shape the runner has always written (same keys, same order), so a
committed record reads and writes back unchanged (tested on every committed record).
Floats that are not finite are written as the strings "nan" / "inf" / "-inf" (JSON has no
such numbers) and read back as floats.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from annotate.atomic import write_atomic
from annotate.errors import AnnotateError
from annotate.harness.spec import Tolerance

RECORD_SCHEMA = 1
MAX_RECORD_BYTES = 4 * 2**20  # the committed records are ~20 KB
MAX_DEPTH = 32  # the deepest real path is 6 levels (timings[].check.outputs[].tol.rel_l2)
MAX_NODES = 1_000_000


class RecordError(AnnotateError):
    """A run record that cannot be read at all (too large, too deep, not a JSON object)."""

    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: unreadable record ({reason})")
        self.where = where
        self.reason = reason


def _opt(*, key: str | None = None, omit: str | Callable[[Any], bool] | None = None,
         ndigits: int | None = None, default: Any = None, factory: Callable[[], Any] | None = None):
    """A record field: its JSON key (default: the field name), when `to_json` leaves it out
    ("none": when None, "empty": when empty, or a predicate on the owning object), and how many
    decimals floats keep when written."""
    meta = {"key": key, "omit": omit, "ndigits": ndigits}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


# ---- the parts -------------------------------------------------------------------------------
class _Part:
    """to_json / from_json for each part (the one reader and writer below)."""

    def to_json(self) -> dict:
        return _write(self)

    @classmethod
    def from_json(cls, data: object):
        """The part from a JSON object; every field defaulted when `data` is not one."""
        got = _read(cls, data) if isinstance(data, dict) else _MISSING
        return cls() if got is _MISSING else got


@dataclass(frozen=True)
class Device(_Part):
    name: str | None = _opt()
    capability: str | None = _opt()
    multiprocessors: int | None = _opt()
    memory_GiB: float | None = _opt()
    l2_MB: float | None = _opt()
    driver: str | None = _opt()
    torch: str | None = _opt()
    cuda: str | None = _opt()
    python: str | None = _opt()
    host: str | None = _opt()


@dataclass(frozen=True)
class BuildInfo(_Part):
    """One JIT build as a run used it (annotate.harness.jit.ensure_built makes it)."""

    name: str | None = _opt()  # the Python module name (TORCH_EXTENSION_NAME)
    key: str | None = _opt()
    directory: str | None = _opt()  # "$ANNOTATE_CACHE_DIR/builds/..." in a written record
    cached: bool | None = _opt()
    compile_s: float | None = _opt()  # the compile that made it (from the stamp on a hit)
    load_s: float | None = _opt()  # this process: from "have a key" to "module imported"
    arch: str | None = _opt()
    flags: tuple[str, ...] = _opt(default=())


@dataclass(frozen=True)
class Peaks(_Part):
    """The device's own ceilings, measured in the same run."""

    copy_gbps: float | None = _opt(key="copy_GBps", ndigits=1)  # device-to-device copy, read + write
    bf16_tflops: float | None = _opt(key="bf16_TFLOPs", ndigits=1)  # a large bf16 matmul
    copy_bytes: int | None = _opt()
    matmul_n: int | None = _opt()


@dataclass(frozen=True)
class Timing(_Part):
    """CUDA-event times of one launch, over `reps` launches."""

    median_us: float | None = _opt(ndigits=3)
    p10_us: float | None = _opt(ndigits=3)
    p90_us: float | None = _opt(ndigits=3)
    reps: int | None = _opt()


@dataclass(frozen=True)
class Comparison(_Part):
    """One output of one launch against the float64 reference (annotate.harness.verify)."""

    output: str | None = _opt()
    rel_l2: float | None = _opt()
    max_abs: float | None = _opt()
    worst_index: tuple[int, ...] = _opt(default=())
    worst_got: float | None = _opt()
    worst_want: float | None = _opt()
    nonfinite: int | None = _opt()  # elements of the kernel's output that are NaN/inf (never written?)
    numel: int | None = _opt()
    tol: Tolerance | None = _opt()
    passed: bool = _opt(default=False)

    def describe(self) -> str:
        idx = "[" + ", ".join(str(i) for i in self.worst_index) + "]"
        tol = self.tol or Tolerance(math.nan, math.nan)
        text = (f"{self.output}: rel_l2 {_g(self.rel_l2)} (tol {_g(tol.rel_l2)}), "
                f"max_abs {_g(self.max_abs)} (tol {_g(tol.max_abs)}); worst at {self.output}{idx}: "
                f"got {_g(self.worst_got, '.6g')}, want {_g(self.worst_want, '.6g')}")
        if self.nonfinite:
            text += f"; {self.nonfinite} of {self.numel} elements are NaN/inf (not written?)"
        return text


@dataclass(frozen=True)
class CheckResult(_Part):
    """One launch on fresh inputs, compared with the reference; or the error that stopped it."""

    shape: str | None = _opt()
    params: dict = _opt(factory=dict)  # the shape's sizes, dtype, variant (JSON values)
    seed: int | None = _opt()
    outputs: tuple[Comparison, ...] = _opt(default=(), omit="empty")
    passed: bool = _opt(default=False)
    error: str | None = _opt(omit="none")  # the launch raised (first line of the message)
    fatal: bool | None = _opt(omit="none")  # ... with a CUDA error: the context is unusable
    trial: int | None = _opt(omit="none")  # check shapes only


def _cut_short(t: "TimedShape") -> bool:
    return t.kernel is None


@dataclass(frozen=True)
class TimedShape(_Part):
    """One timed shape: its own verification, the kernel's and PyTorch's times, the rates.

    A shape cut short by a CUDA error keeps only shape, params, seed and check."""

    shape: str | None = _opt()
    params: dict = _opt(factory=dict)
    seed: int | None = _opt(omit="none")
    kernel: Timing | None = _opt(omit="none")
    bytes: int | None = _opt(omit=_cut_short)
    flops: int | None = _opt(omit=_cut_short)
    gbps: float | None = _opt(key="GBps", omit=_cut_short, ndigits=1)
    tflops: float | None = _opt(key="TFLOPs", omit=_cut_short, ndigits=2)
    pct_peak_bw: float | None = _opt(omit=_cut_short, ndigits=1)
    pct_peak_flops: float | None = _opt(omit=_cut_short, ndigits=1)
    pct_peak: float | None = _opt(omit=_cut_short, ndigits=1)  # of the peak `bound` names
    bound: str | None = _opt(omit=_cut_short)
    torch: Timing | None = _opt(omit=_cut_short)  # the PyTorch equivalent, None without one
    torch_us: float | None = _opt(omit=_cut_short, ndigits=2)
    torch_vs_kernel: float | None = _opt(omit=_cut_short, ndigits=2)
    check: CheckResult | None = _opt()


@dataclass(frozen=True)
class RunRecord(_Part):
    schema: int | None = _opt(default=RECORD_SCHEMA)
    kernel: str | None = _opt()
    title: str | None = _opt()
    symbols: tuple[str, ...] = _opt(default=())
    launchers: tuple[str, ...] = _opt(default=())
    upstream: str | None = _opt()
    pins: dict = _opt(factory=dict)  # upstream (or upstream/submodule) -> commit
    created: str | None = _opt()  # UTC, ISO 8601
    seed: int | None = _opt()  # the base seed: `annotate run KERNEL --seed N` replays the inputs
    command: str | None = _opt()
    device: Device | None = _opt()
    fatal: str | None = _opt()  # "<shape>: <CUDA error>" when one stopped the run
    build: BuildInfo | None = _opt()
    baseline: str | None = _opt()  # the PyTorch equivalent, in words
    bound: str | None = _opt()  # "memory" | "compute"
    peaks: Peaks | None = _opt()
    checks: tuple[CheckResult, ...] = _opt(default=())
    timings: tuple[TimedShape, ...] = _opt(default=())
    passed: bool = _opt(default=False)
    # which copy ran: absent for the catalog's own harness, the folder of a learner's copy
    # (`annotate run KERNEL --source DIR`) or "pinned" for the original run beside it
    source: str | None = _opt(omit="none")

    @classmethod
    def from_json(cls, data: object, where: str = "run record") -> "RunRecord":
        """Read a record from parsed JSON; RecordError when it is not a bounded JSON object."""
        _check_bounds(data, where)
        if not isinstance(data, dict):
            raise RecordError(where, f"not a JSON object but {type(data).__name__}")
        return _read(cls, data)

    def verifications(self) -> tuple[CheckResult, ...]:
        """Every verification of the run: the check shapes' trials, then each timed shape's."""
        return self.checks + tuple(t.check for t in self.timings if t.check is not None)

    def first_failure(self) -> str:
        """The first failed verification, worst element and all ("" when none failed)."""
        for c in self.verifications():
            if c.passed:
                continue
            if c.error:
                return f"{c.shape}: {c.error}"
            for o in c.outputs:
                if not o.passed:
                    idx = ", ".join(str(i) for i in o.worst_index)
                    return (f"{c.shape} (seed {c.seed}): {o.output}[{idx}] = {_json_float(o.worst_got)} "
                            f"vs {_json_float(o.worst_want)}; rel_l2 {_json_float(o.rel_l2)}, "
                            f"max_abs {_json_float(o.max_abs)}"
                            + (f", {o.nonfinite} NaN/inf" if o.nonfinite else ""))
        return ""


# ---- files -----------------------------------------------------------------------------------
def read_record_json(path: Path) -> dict:
    """The JSON object in a record file, bounded in size and depth (RecordError otherwise)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_RECORD_BYTES:
            raise RecordError(str(path), f"larger than {MAX_RECORD_BYTES // 2**20} MiB")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(str(path), exc.strerror or exc.__class__.__name__) from None
    except UnicodeDecodeError:
        raise RecordError(str(path), "not UTF-8 text") from None
    depth = _text_depth(text)
    if depth > MAX_DEPTH:
        raise RecordError(str(path), f"nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(text)
    except RecursionError:  # not reached for valid JSON (the depth was checked); kept as a guard
        raise RecordError(str(path), f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        why = f"invalid JSON at line {exc.lineno} column {exc.colno}" if hasattr(exc, "lineno") else "invalid JSON"
        raise RecordError(str(path), why) from None
    if not isinstance(data, dict):
        raise RecordError(str(path), "not a JSON object")
    return data


def load_record(path: Path) -> RunRecord:
    return RunRecord.from_json(read_record_json(path), where=str(path))


def record_text(record: RunRecord) -> str:
    return json.dumps(record.to_json(), indent=1) + "\n"


def write_record(path: Path, record: RunRecord) -> None:
    """Write a record atomically (a reader, e.g. `annotate serve`, never sees half of one)."""
    write_atomic(path, record_text(record))


# ---- bounds ----------------------------------------------------------------------------------
# One linear pass over the tokens that matter: escapes, quotes, brackets (a regex skipping whole
# strings can backtrack quadratically on hostile text).
_TOKEN = re.compile(r'\\.|["\[\]{}]', re.S)


def _text_depth(text: str) -> int:
    """The deepest bracket nesting of JSON text, strings skipped, without recursion (json.loads
    itself raises RecursionError on deep input). Exact for valid JSON, which is all that
    json.loads accepts afterwards."""
    depth = deepest = 0
    in_string = False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok == '"':
            in_string = not in_string
        elif in_string or len(tok) == 2:
            continue
        elif tok in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    break
        else:
            depth -= 1
    return deepest


def _check_bounds(data: object, where: str) -> None:
    """Parsed data handed to from_json directly is bounded the same way, iteratively."""
    stack = [(data, 1)]
    nodes = 0
    while stack:
        obj, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise RecordError(where, f"more than {MAX_NODES} values")
        children = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else None
        if children is None:
            continue
        if depth > MAX_DEPTH:
            raise RecordError(where, f"nested deeper than {MAX_DEPTH} levels")
        stack.extend((v, depth + 1) for v in children)


# ---- the one reader and the one writer -------------------------------------------------------
_MISSING = object()
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "Infinity": math.inf,
              "-Infinity": -math.inf, "NaN": math.nan}
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _read(cls: type, data: dict):
    """An instance of dataclass `cls` from a JSON object: known keys converted to the declared
    type, everything else defaulted; _MISSING when a field without a default cannot be had."""
    return _reader(cls)(data)


def _convert(tp, value):
    return _converter(tp)(value)


# The conversions are made once per type from its hints (a site build reads every committed
# record, megabytes of SASS among them, and working the hints out again per value was most of it).

@functools.lru_cache(maxsize=None)
def _reader(cls: type):
    hints = _hints(cls)
    fields = [((f.metadata.get("key") if f.metadata else None) or f.name, f.name, hints[f.name],
               f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
              for f in dataclasses.fields(cls)]
    made: list = []  # [(key, name, converter, required), ...], made on first use (a type may hold itself)

    def read(data: dict):
        if not made:  # built whole, then published in one step, so a reader never sees part of it
            made.append([(key, name, _converter(tp), required) for key, name, tp, required in fields])
        kwargs = {}
        for key, name, conv, required in made[0]:
            value = conv(data[key]) if key in data else _MISSING
            if value is _MISSING:
                if required:
                    return _MISSING
                continue
            kwargs[name] = value
        return cls(**kwargs)
    return read


@functools.lru_cache(maxsize=None)
def _converter(tp):
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        nullable = type(None) in args
        alternatives = [_converter(a) for a in args if a is not type(None)]

        def union(value):
            if value is None and nullable:
                return None
            for conv in alternatives:
                got = conv(value)
                if got is not _MISSING:
                    return got
            return _MISSING
        return union
    if origin is tuple:
        item = _converter(typing.get_args(tp)[0])

        def tuple_of(value):
            if not isinstance(value, list):
                return _MISSING
            items = (item(v) for v in value)
            return tuple(v for v in items if v is not _MISSING)
        return tuple_of
    if tp is dict:
        return lambda value: dict(value) if isinstance(value, dict) else _MISSING
    if dataclasses.is_dataclass(tp):
        def instance(value):
            return _reader(tp)(value) if isinstance(value, dict) else _MISSING
        return instance
    if tp is bool:
        return lambda value: value if isinstance(value, bool) else _MISSING
    if tp is int:
        return lambda value: value if isinstance(value, int) and not isinstance(value, bool) else _MISSING
    if tp is float:
        def real(value):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return value
            return _NONFINITE.get(value, _MISSING) if isinstance(value, str) else _MISSING
        return real
    if tp is str:
        return lambda value: value if isinstance(value, str) else _MISSING

    def unsupported(value):  # an error of ours, raised when such a value is met (as it always was)
        raise TypeError(f"record field of unsupported type {tp!r}")
    return unsupported


def _write(obj) -> dict:
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        meta = f.metadata or {}
        omit = meta.get("omit")
        if omit == "none" and value is None or omit == "empty" and not value \
                or callable(omit) and omit(obj):
            continue
        out[meta.get("key") or f.name] = _value(value, meta.get("ndigits"))
    return out


def _value(value, ndigits: int | None):
    if dataclasses.is_dataclass(value):
        return _write(value)
    if isinstance(value, tuple):
        return [_value(v, ndigits) for v in value]
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, float):
        return _json_float(round(value, ndigits) if ndigits is not None and math.isfinite(value) else value)
    return value


def _json_float(x):
    if not isinstance(x, float) or math.isfinite(x):
        return x
    if x != x:
        return "nan"
    return "inf" if x > 0 else "-inf"


def _g(x, spec: str = ".3g") -> str:
    return "—" if x is None else format(x, spec)

"""Run records: every committed record reads and writes back byte for byte; older and partial
shapes read with defaults; unknown keys and wrong types never fail; hostile files (deep,
large, not JSON, not an object) are one RecordError line, never a RecursionError."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.config import REPO_ROOT
from annotate.harness import record as rec
from annotate.harness.record import (
    BuildInfo, CheckResult, Comparison, RecordError, RunRecord, load_record, read_record_json,
    record_text, write_record,
)
from annotate.harness.spec import Tolerance

DATA = Path(__file__).parent / "data"
# run records only: results/sass, results/identity and results/profiles hold the compiled view's
# records (tests/test_sass_*.py, tests/test_profile_*.py read those)
COMMITTED = sorted(p for p in (REPO_ROOT / "vendor_kernels" / "results").rglob("*.json")
                   if p.parent.name not in ("sass", "identity", "profiles"))
FIRST_SHAPE = DATA / "harness" / "record-first-shape.json"


def test_there_are_committed_records():
    kernels = {p.parent.name for p in (REPO_ROOT / "vendor_kernels").glob("*/spec.yaml")}
    # one per catalog kernel (and device); a side-by-side run keeps its pinned side as <kernel>.pinned.json
    assert {p.name.split(".")[0] for p in COMMITTED} == kernels


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.relative_to(REPO_ROOT / "vendor_kernels").as_posix())
def test_committed_records_round_trip_byte_for_byte(path):
    r = load_record(path)
    assert r.passed and r.checks and r.timings and r.device.name and r.build.key
    assert record_text(r) == path.read_text(encoding="utf-8")
    assert RunRecord.from_json(r.to_json()) == r


def test_the_first_shape_reads_with_defaults():
    """As the first runner wrote records: no `fatal`, the build directory an absolute path, and
    a key this reader does not know."""
    raw = json.loads(FIRST_SHAPE.read_text())
    raw["written_by"] = "a future annotate"
    r = RunRecord.from_json(raw)
    assert r.fatal is None and r.passed and r.device.name == "NVIDIA H200"
    assert r.build.directory.startswith("/home/someone/") and r.build.flags[0] == "-O3"
    assert r.checks[0].outputs[0].tol == Tolerance(rel_l2=2e-3, max_abs=1e-2)
    out = r.to_json()
    assert "written_by" not in out and out["fatal"] is None
    assert {k: v for k, v in out.items() if k != "fatal"} == {k: v for k, v in raw.items() if k != "written_by"}


def test_partial_and_mistyped_fields_take_their_defaults():
    raw = json.loads(FIRST_SHAPE.read_text())
    raw.update(device="not a mapping", seed="1234", symbols=["a::k", 7, None], pins=[1, 2],
               checks=[raw["checks"][0], "junk", {"passed": "yes"}], peaks={"copy_GBps": True})
    del raw["timings"][0]["kernel"]
    raw["checks"][0]["outputs"][0].update(rel_l2="nan", max_abs="inf", worst_index=[0, "x", 3])
    r = RunRecord.from_json(raw)
    assert r.device is None and r.seed is None and r.symbols == ("a::k",) and r.pins == {}
    assert len(r.checks) == 2 and r.checks[1] == CheckResult()  # "junk" is no check; "yes" no bool
    o = r.checks[0].outputs[0]
    assert math.isnan(o.rel_l2) and o.max_abs == math.inf and o.worst_index == (0, 3)
    assert r.peaks.copy_gbps is None  # a bool is not a number
    assert r.timings[0].kernel is None  # cut short: rates omitted on the way out
    t = r.to_json()["timings"][0]
    assert set(t) == {"shape", "params", "seed", "check"}
    assert r.to_json()["checks"][0]["outputs"][0]["rel_l2"] == "nan"  # JSON has no NaN


def test_an_error_check_keeps_its_shape():
    c = CheckResult(shape="s", params={"d": 1}, seed=3, passed=False, error="CUDA error: x", fatal=True, trial=0)
    assert list(c.to_json()) == ["shape", "params", "seed", "passed", "error", "fatal", "trial"]
    ok = CheckResult(shape="s", params={}, seed=3, outputs=(Comparison(output="o", passed=True),), passed=True)
    assert list(ok.to_json()) == ["shape", "params", "seed", "outputs", "passed"]


def test_comparison_describes_the_worst_element():
    c = Comparison("out", 0.5, 2.0, (2, 7), 3.0, 1.0, 4, 100, Tolerance(2e-3, 1e-2), False)
    text = c.describe()
    assert "worst at out[2, 7]: got 3, want 1" in text and "4 of 100 elements are NaN/inf" in text
    assert Comparison().describe().startswith("None: rel_l2 —")


def test_write_is_atomic_and_reads_back(tmp_path):
    r = load_record(COMMITTED[0])
    path = tmp_path / "results" / "rmsnorm" / "20260101T000000Z.json"
    write_record(path, r)
    assert load_record(path) == r and os.listdir(path.parent) == [path.name]


# ---- hostile files ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, reason", [
    ("[" * 100_000 + "]" * 100_000, f"nested deeper than {rec.MAX_DEPTH} levels"),
    ('{"checks": ' + "[" * 50 + "]" * 50 + "}", f"nested deeper than {rec.MAX_DEPTH} levels"),
    ("{not json", "invalid JSON at line 1 column 2"),
    ("[1, 2]", "not a JSON object"),
    ('"' + "[" * 100 + '"', "not a JSON object"),  # brackets inside a string do not count
])
def test_hostile_record_files_are_one_line(tmp_path, text, reason):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(RecordError) as exc:
        load_record(path)
    assert exc.value.reason == reason
    assert str(exc.value) == f"{path}: unreadable record ({reason})" and "\n" not in str(exc.value)


def test_large_and_binary_files_are_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(rec, "MAX_RECORD_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_text('{"title": "' + "x" * 2000 + '"}')
    with pytest.raises(RecordError, match="larger than"):
        read_record_json(big)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(RecordError, match="not UTF-8"):
        read_record_json(binary)
    with pytest.raises(RecordError, match="No such file"):
        read_record_json(tmp_path / "missing.json")


def test_deep_python_data_is_bounded_too():
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(RecordError, match="nested deeper"):
        RunRecord.from_json({"checks": deep})
    with pytest.raises(RecordError, match="not a JSON object"):
        RunRecord.from_json([1])


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=30)
KEYS = st.sampled_from(["device", "build", "checks", "timings", "peaks", "pins", "seed", "passed",
                        "symbols", "outputs", "kernel", "check", "tol", "params", "worst_index"])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, JSON | st.dictionaries(KEYS, JSON, max_size=4), max_size=8))
def test_any_json_object_reads_and_round_trips(data):
    r = RunRecord.from_json(data)
    out = r.to_json()
    assert json.loads(json.dumps(out)) == out  # plain JSON (no NaN, no tuples)
    assert RunRecord.from_json(out).to_json() == out


def test_build_info_is_the_record_part():
    b = BuildInfo(name="m", key="k", directory="d", cached=False, compile_s=1.5, load_s=0.1, arch="90", flags=("-O3",))
    assert b.to_json() == {"name": "m", "key": "k", "directory": "d", "cached": False, "compile_s": 1.5,
                           "load_s": 0.1, "arch": "90", "flags": ["-O3"]}

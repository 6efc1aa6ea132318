"""Per-step course coverage (`annotate status --courses`): annotation files and a course map
written into a temporary annotations root, resolved against the real index of the site fixture
(tests/data/site: norm.cuh has one kernel, decode.cuh two), then counted; and the command on
the real pins."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import DECODE, NORM, UP, demo_index  # noqa: E402

from annotate.notes import api  # noqa: E402
from annotate.notes.coverage import MIN_TAGGED, Languages, course_coverage  # noqa: E402

NORM_NOTES = f"""upstream: {UP}
path: {NORM}
functions:
  demo::RMSNormKernel:
    summary: {{en: One block per row., zh: 每行一个线程块。}}
    notes:
      - at: "sum_sq += math::shfl_xor_sync"
        text: {{en: Five butterfly steps., zh: 五步蝶形交换。}}
      - at: "__syncthreads();"
        text: English only.
    course: [c-1, c-3]
  demo::math::shfl_xor_sync:
    summary: English only.
    course: [c-1, c-3]
  demo::RMSNorm:
    summary: {{en: The launcher., zh: 启动函数。}}
    memory:
      - {{what: {{en: a row, zh: 一行}}, path: global → registers, how: coalesced}}
    course: [c-1, c-nope]
"""

DECODE_NOTES = f"""upstream: {UP}
path: {DECODE}
functions:
  demo::DecodeKernel:
    summary: A toy dot product.
    course: [c-2]
  demo::warp_sum:
    summary: {{en: A butterfly sum., zh: 蝶形求和。}}
    course: [c-2]
  demo::no_such_function:
    summary: Resolves to nothing.
    course: [c-2]
types:
  demo::DecodeParams:
    summary: {{en: What one launch is told., zh: 一次启动的参数。}}
    fields:
      q: {{en: The input row., zh: 输入行。}}
      n: Elements in the row.
    course: [c-2]
"""

COURSE = f"""id: c
title: {{en: A course, zh: 一门课}}
steps:
  - id: c-1
    title: {{en: The norm, zh: 归一化}}
    refs: ["{UP}:{NORM}"]
    exercises:
      questions:
        - question: {{en: Where?, zh: 在哪里？}}
          answer: {{en: In the loop., zh: 在循环里。}}
          cites: ["{UP}:{NORM}:20-22"]
        - question: {{en: Why?, zh: 为什么？}}
          answer: Because.
          cites: ["{UP}:demo::RMSNormKernel"]
      homework:
        - Run it.
      checkpoints:
        - {{en: I found it, zh: 我找到了}}
  - id: c-2
    title: The decode
    refs: ["{UP}:demo::DecodeParams"]
  - id: c-3
    title: Two functions
    refs: ["{UP}:demo::RMSNormKernel"]
  - id: c-4
    title: Broken refs
    refs: ["{UP}:no::such_thing", "{UP}:include/demo/nope.cuh", "nope:x"]
"""


@pytest.fixture
def coverage(tmp_config, tmp_path):
    root = tmp_path / "annotations"
    for path, text in ((NORM, NORM_NOTES), (DECODE, DECODE_NOTES)):
        f = root / UP / f"{path}.yaml"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")
    (root / "courses").mkdir()
    (root / "courses" / "c.yaml").write_text(COURSE, encoding="utf-8")
    index = demo_index()
    aset = api.load(tmp_config, index, api.Options(root=root, check_schema_line=False)).set
    # the check's only errors: the entry that resolves to nothing and the refs that do not resolve
    assert sorted(d.code for d in aset.errors) == ["bad-ref"] * 3 + ["unresolved"]
    return course_coverage(aset, index, api.RefChecker(tmp_config, index, root))


def _steps(cov):
    (course,) = cov.courses
    return {s.step: s for s in course.steps}


def test_a_step_whose_kernels_are_annotated_with_three_tagged_functions_meets_the_bar(coverage):
    s = _steps(coverage)["c-1"]
    assert (s.number, s.title, s.functions, s.types, s.macros) == (1, "The norm", 3, 0, 0)
    assert s.files == ((UP, NORM),)
    assert [(k.name, k.annotated) for k in s.kernels] == [("demo::RMSNormKernel", True)]
    assert s.meets_bar and s.problems == ()


def test_both_languages_are_counted(coverage):
    s = _steps(coverage)["c-1"]
    # summaries: 3 in en, 2 in zh; the memory note's `what` (en, zh) and `how` (en)
    assert s.texts == Languages(en=5, zh=3)
    assert s.notes == Languages(en=2, zh=1)
    # two questions (the second answered in en only), one homework (en), one checkpoint (en, zh)
    assert s.exercises == Languages(en=4, zh=2)


def test_a_step_whose_file_has_an_unannotated_kernel_fails(coverage):
    s = _steps(coverage)["c-2"]
    # the ref names a type: its file is the step's, with both of its kernels
    assert s.files == ((UP, DECODE),)
    assert [(k.name, k.annotated) for k in s.kernels] == [("demo::DecodeKernel", True), ("demo::ParamsKernel", False)]
    assert (s.functions, s.types, s.tagged, s.kernels_annotated) == (2, 1, 3, 1)
    assert s.unresolved == ("demo::no_such_function",)
    assert s.texts == Languages(en=5, zh=3)  # DecodeParams: summary and two fields
    assert not s.meets_bar
    assert s.problems[0].startswith("1 of 2 kernels not annotated: demo::ParamsKernel (include/demo/decode.cuh:")
    assert "do not resolve: demo::no_such_function" in s.problems[1]


def test_a_step_with_two_tagged_functions_fails(coverage):
    s = _steps(coverage)["c-3"]
    assert s.kernels_annotated == len(s.kernels) == 1 and s.tagged == 2 < MIN_TAGGED
    assert s.problems == (f"annotated functions/types/macros tagged c-3: 2 (the bar is {MIN_TAGGED})",)


def test_refs_that_do_not_resolve_are_flagged_with_the_checks_message(coverage):
    s = _steps(coverage)["c-4"]
    assert s.files == () and s.kernels == ()
    assert s.bad_refs == ("ref 'demo:no::such_thing': no function, type or macro 'no::such_thing' in demo",
                          "ref 'demo:include/demo/nope.cuh': no such file in demo; did you mean 'demo:include/demo/norm.cuh'?",
                          "ref 'nope:x': unknown upstream 'nope'")
    assert not s.meets_bar and set(s.bad_refs) <= set(s.problems)


def test_tags_naming_no_step_are_flagged(coverage):
    assert [(u.tag, u.name, u.kind, u.line) for u in coverage.unknown_tags] == [("c-nope", "demo::RMSNorm", "function", 15)]
    assert coverage.unknown_tags[0].file.endswith(f"{UP}/{NORM}.yaml")


def test_json_has_the_same_rows(coverage):
    data = json.loads(json.dumps(coverage.to_json()))
    (course,) = data["courses"]
    assert course["id"] == "c" and course["steps_meeting_bar"] == 1
    rows = {r["step"]: r for r in course["steps"]}
    assert list(rows) == ["c-1", "c-2", "c-3", "c-4"]
    assert rows["c-2"]["kernels_present"] == 2 and rows["c-2"]["kernels_annotated"] == 1
    assert rows["c-1"]["texts"] == {"en": 5, "zh": 3} and rows["c-1"]["meets_bar"] is True
    assert rows["c-3"]["problems"] == list(_steps(coverage)["c-3"].problems)
    assert data["unknown_tags"][0]["tag"] == "c-nope"


@pytest.mark.slow
def test_status_courses_on_the_real_pins(real_config, pinned, capsys):
    from annotate import cli

    pinned("flashinfer")
    pinned("flash-attention")
    assert cli.main(["status", "--courses", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    ids = {c["id"] for c in data["courses"]}
    assert {"flashinfer-course", "flash-attention-plan"} <= ids
    from annotate.notes.api import load_annotations
    from annotate.project import open_project

    courses = load_annotations(real_config, open_project(real_config).index).courses
    for c in data["courses"]:
        want = next(x for x in courses if x.id == c["id"])
        assert [r["step"] for r in c["steps"]] == [s.id for s in want.steps]  # every step has a row, in order
    fi = {r["step"]: r for c in data["courses"] if c["id"] == "flashinfer-course" for r in c["steps"]}
    assert len(fi) == 14 and fi["flashinfer-day-06"]["kernels_present"] >= 1  # norm.cuh's kernels
    assert cli.main(["status", "--courses"]) == 0
    out = capsys.readouterr().out
    assert "flashinfer-day-14" in out and "fa-phase-5" in out


def test_a_name_two_definitions_share_counts_the_annotated_ones_files():
    """`SinglePrefillWithKVCacheDispatched` is defined for sm80 and for Hopper: a step whose notes
    are on one of them reads that file, not both (without notes, both)."""
    from types import SimpleNamespace as NS

    from annotate.notes.api import ref_files

    a, b = NS(key="a", path="include/prefill.cuh"), NS(key="b", path="include/hopper/prefill_sm90.cuh")
    index = NS(upstreams=lambda: ["up"], has_file=lambda up, p: False,
               find=lambda name, up: [a, b] if name == "ns::Dispatched" else [],
               find_type=lambda name, up: [], find_macro=lambda name, up: [])
    noted = NS(for_symbol=lambda s: s.key == "a" or None, for_type=lambda t: None, for_macro=lambda m: None)
    bare = NS(for_symbol=lambda s: None, for_type=lambda t: None, for_macro=lambda m: None)
    assert ref_files(index, "up:ns::Dispatched", noted) == ("include/prefill.cuh",)
    assert ref_files(index, "up:ns::Dispatched", bare) == ("include/prefill.cuh", "include/hopper/prefill_sm90.cuh")
    assert ref_files(index, "up:ns::Dispatched") == ("include/prefill.cuh", "include/hopper/prefill_sm90.cuh")

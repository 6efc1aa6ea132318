"""Course maps with the plans' own structure: goals, a reading list, the step's runnable kernel and
exercises (questions whose answers cite code, homework, checkpoints) — read into the model and
checked by `annotate check` against the real index of the site fixture (tests/data/site)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import NORM, UP, demo_index  # noqa: E402

from annotate.notes.api import parse_cite  # noqa: E402
from annotate.notes.check import run_check  # noqa: E402

SCHEMA_LINE = "# yaml-language-server: $schema=../../schema/annotation.schema.json\n"

COURSE = SCHEMA_LINE + f"""id: c
title: {{en: A course, zh: 一门课}}
steps:
  - id: c-1
    title: {{en: Step one, zh: 第一步}}
    goals:
      - {{en: Read the kernel, zh: 读这个 kernel}}
    refs: ["{UP}:{NORM}", "{UP}:demo::RMSNormKernel"]
    harness: rmsnorm
    exercises:
      questions:
        - question: {{en: Where is the reduction?, zh: 归约在哪里？}}
          answer: {{en: In the butterfly loop., zh: 在蝶形循环里。}}
          cites: ["{UP}:{NORM}:20-22", "{UP}:demo::math::shfl_xor_sync", "{UP}:{NORM}:7"]
      homework:
        - {{en: Run it, zh: 运行它}}
      checkpoints:
        - {{en: I can find it, zh: 我能找到它}}
        - {{en: I can explain it, zh: 我能解释它}}
"""


@pytest.fixture
def root(tmp_path) -> Path:
    (tmp_path / "annotations" / "courses").mkdir(parents=True)
    return tmp_path / "annotations"


def _check(config, root, text, harnesses=frozenset({"rmsnorm"})):
    (root / "courses" / "c.yaml").write_text(text)
    return run_check(config, demo_index(), root, known_harnesses=set(harnesses))


def _codes(report) -> list[tuple[str, int, str]]:
    return [(d.code, d.line, d.message) for d in report.diagnostics if d.severity in ("error", "warning")
            and d.code != "schema-line"]


def test_a_step_with_exercises_reads_into_the_model(tmp_config, root):
    report = _check(tmp_config, root, COURSE)
    assert _codes(report) == []
    (course,) = report.result.set.courses
    step = course.steps[0]
    assert [g.zh for g in step.goals] == ["读这个 kernel"] and step.harness == "rmsnorm"
    (q,) = step.exercises.questions
    assert q.answer.en == "In the butterfly loop." and q.cites[0] == f"{UP}:{NORM}:20-22"
    assert [c.en for c in step.exercises.checkpoints] == ["I can find it", "I can explain it"]
    assert step.refs == (f"{UP}:{NORM}", f"{UP}:demo::RMSNormKernel")  # the reading list, in order


@pytest.mark.parametrize("change, code, line, words", [
    (f'"{UP}:{NORM}:20-22"', "bad-cite", 15, "lines 20-99 are not in include/demo/norm.cuh (36 lines)"),
    (f'"{UP}:demo::math::shfl_xor_sync"', "bad-cite", 15, "no function, type or macro 'demo::nope'"),
    (f'"{UP}:{NORM}:7"', "bad-cite", 15, "no such file in demo"),
    ("harness: rmsnorm", "unknown-harness", 10, "no harness 'rmsnormx'"),
])
def test_cites_and_the_kernel_are_checked(tmp_config, root, change, code, line, words):
    replacement = {f'"{UP}:{NORM}:20-22"': f'"{UP}:{NORM}:20-99"',
                   f'"{UP}:demo::math::shfl_xor_sync"': f'"{UP}:demo::nope"',
                   f'"{UP}:{NORM}:7"': f'"{UP}:include/demo/nope.cuh:7"',
                   "harness: rmsnorm": "harness: rmsnormx"}[change]
    report = _check(tmp_config, root, COURSE.replace(change, replacement))
    (got,) = _codes(report)
    assert got[0] == code and got[1] == line and words in got[2], got


def test_a_question_without_a_cite_is_a_schema_error(tmp_config, root):
    text = COURSE.replace(f'          cites: ["{UP}:{NORM}:20-22", "{UP}:demo::math::shfl_xor_sync", "{UP}:{NORM}:7"]\n', "")
    report = _check(tmp_config, root, text)
    assert [c for c, _, _ in _codes(report)] == ["missing-key"]
    assert "'cites' in steps[0].exercises.questions[0]" in report.diagnostics[-1].message


def test_parse_cite():
    assert parse_cite("flashinfer:include/flashinfer/vec_dtypes.cuh:38-41") == (
        "flashinfer", "include/flashinfer/vec_dtypes.cuh", 38, 41)
    assert parse_cite("fa:csrc/x.h:7") == ("fa", "csrc/x.h", 7, 7)
    assert parse_cite("fa:flash::run_flash_fwd") == ("fa", "flash::run_flash_fwd", None, None)
    assert parse_cite("fi:flashinfer.jit.core.gen_jit_spec") == ("fi", "flashinfer.jit.core.gen_jit_spec", None, None)


def test_the_example_steps_are_complete():
    """The two steps written as examples of the format carry every part, in both languages."""
    from annotate.notes import schema as S
    from annotate.yamlpos import decode, load_yaml, read_bytes

    repo = Path(__file__).parent.parent / "annotations" / "courses"
    for file, step_id, kernel in (("flashinfer-course.yaml", "flashinfer-day-01", "silu_and_mul"),
                                  ("flash-attention-plan.yaml", "fa-phase-2-2", "flash_fwd")):
        doc = S.CourseDoc.model_validate(load_yaml(decode(read_bytes(repo / file))).data)
        step = next(s for s in doc.steps if s.id == step_id)
        ex = step.exercises
        assert step.goals and step.refs and step.harness == kernel
        assert len(ex.questions) >= 2 and ex.homework and ex.checkpoints
        for t in (*step.goals, *ex.homework, *ex.checkpoints, *(x for q in ex.questions for x in (q.question, q.answer))):
            assert isinstance(t, S.Bilingual) and t.en.strip() and t.zh and t.zh.strip()

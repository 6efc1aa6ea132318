"""The annotations' language policy (annotations/policy.toml, annotate.notes.policy): reading it,
and `annotate check` warning (failing under --strict) on text fields that lack a required
language. The notes are the site fixture's (tests/data/site), checked against the real index
of its sources."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import ANNOTATIONS, SRC, UP, demo_index  # noqa: E402

from annotate.errors import AnnotateError  # noqa: E402
from annotate.notes.check import run_check  # noqa: E402
from annotate.notes.policy import POLICY_FILE, Policy, load_policy, text_fields  # noqa: E402

BOTH = '[languages]\nrequired = ["en", "zh"]\n'


@pytest.fixture
def root(tmp_path) -> Path:
    """A copy of the fixture's annotations, free to edit."""
    dst = tmp_path / "annotations"
    shutil.copytree(ANNOTATIONS, dst)
    return dst


def _missing(report) -> list[str]:
    return [f"{Path(d.file).name}:{d.line}:{d.column} {d.message.split(' has ')[0]}"
            for d in report.diagnostics if d.code == "missing-language"]


def test_no_policy_file_requires_nothing(tmp_config, root):
    assert load_policy(root) == Policy()
    report = run_check(tmp_config, demo_index(), root)
    assert _missing(report) == []


def test_fields_without_chinese_are_warnings_at_the_field(tmp_config, root):
    (root / POLICY_FILE).write_text(BOTH)
    report = run_check(tmp_config, demo_index(), root)
    got = _missing(report)
    # norm.cuh.yaml: everything but the bilingual summary; the course map's step titles and texts
    assert "norm.cuh.yaml:4:11 overview" in got
    assert "norm.cuh.yaml:11:20 functions.demo::RMSNormKernel.decomposition" in got
    assert "norm.cuh.yaml:13:15 functions.demo::RMSNormKernel.memory[0].what" in got
    assert "norm.cuh.yaml:15:14 functions.demo::RMSNormKernel.memory[0].how" in got
    assert "norm.cuh.yaml:18:40 functions.demo::RMSNormKernel.calls.demo::math::shfl_xor_sync" in got
    assert "norm.cuh.yaml:21:15 functions.demo::RMSNormKernel.notes[0].text" in got
    assert not any("summary" in g and "norm.cuh" in g for g in got)
    assert "demo-course.yaml:4:7 text" in got and "demo-course.yaml:7:12 steps[0].title" in got
    assert not any(g.startswith("demo-course.yaml:3:") for g in got)  # its title has both
    d = next(d for d in report.diagnostics if d.code == "missing-language")
    assert d.severity == "warning" and "policy.toml requires en, zh" in d.message
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1


def test_a_field_with_both_languages_passes(tmp_config, root):
    (root / POLICY_FILE).write_text('[languages]\nrequired = ["zh"]\n')
    f = root / UP / "include/demo/decode.cuh.yaml"
    f.write_text(f.read_text().replace("text: The warp reduction, shared with the norm.",
                                       "text: {en: The warp reduction., zh: warp 归约，和 norm 共用。}"))
    report = run_check(tmp_config, demo_index(), root, only=[f])
    assert [g for g in _missing(report) if g.startswith("decode")] == []


def test_the_cli_fails_under_strict(root, tmp_path, capsys, monkeypatch):
    from annotate.cli import main

    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    (root / POLICY_FILE).write_text(BOTH)
    args = ["check", "--annotations", str(root), "--source", f"{UP}={SRC}"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "warning [missing-language]: overview has no zh text" in out
    assert main(args + ["--strict"]) == 1
    (root / POLICY_FILE).write_text("[languages\n")
    assert main(args) == 1
    assert f"annotate: error: {root / POLICY_FILE}: not TOML" in capsys.readouterr().err


@pytest.mark.parametrize("text, why", [
    ("[languages\n", "not TOML"),
    ('[languages]\nrequired = ["en", "fr"]\n', "distinct languages among"),
    ('[languages]\nrequired = "zh"\n', "distinct languages among"),
    ('[languages]\nrequire = ["zh"]\n', "unknown key 'require'"),
    ('[lang]\nrequired = ["zh"]\n', "unknown key 'lang'"),
])
def test_a_bad_policy_is_one_clear_error(root, text, why):
    (root / POLICY_FILE).write_text(text)
    with pytest.raises(AnnotateError, match=why) as err:
        load_policy(root)
    assert str(root / POLICY_FILE) in str(err.value)


def test_every_text_field_of_the_format_is_walked():
    """A text field anywhere in the schema is found by its type, without a list to keep."""
    from annotate.notes import schema as S

    doc = S.FunctionDoc.model_validate({
        "summary": "a", "decomposition": {"en": "b", "zh": "乙"}, "memory": [{"what": "c", "path": "x → y", "how": "d"}],
        "sync": "e", "first_look": "f", "calls": {"g": "h"}, "notes": [{"at": "x", "text": "i"}],
        "signature": "not text", "course": ["not-text"], "harness": "not_text"})
    paths = [p for p, _ in text_fields(doc)]
    assert paths == [("summary",), ("decomposition",), ("memory", 0, "what"), ("memory", 0, "how"), ("sync",),
                     ("first_look",), ("calls", "g"), ("notes", 0, "text")]


def test_the_repository_requires_both_languages():
    """CI runs `annotate check --strict` against this policy (scripts/test.sh)."""
    repo = Path(__file__).parent.parent
    assert load_policy(repo / "annotations").required == ("en", "zh")
    assert "annotate\" check --strict" in (repo / "scripts" / "test.sh").read_text()

"""Property-based tests: whatever bytes an annotation file holds, the loader and `check`
answer with Diagnostics, never an exception."""

from __future__ import annotations

import os
import string

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate.errors import Diagnostic
from annotate.notes.check import StaleExplainer, run_check
from annotate.yamlpos import YamlProblem, decode, load_yaml
from tests.notes_support import NORM_SRC, index_of

UP, PATH = "demo", "include/demo/norm.cuh"
INDEX = index_of({(UP, PATH): NORM_SRC})

VALID = f"""# yaml-language-server: $schema=../../../../schema/annotation.schema.json
upstream: {UP}
path: {PATH}
overview: {{en: a file, zh: 文件}}
functions:
  demo::norm::RMSNormKernel:
    signature: RMSNormKernel
    fingerprint: 0123456789abcdef
    summary: |
      Sums squares.
    memory:
      - what: input row
        path: global → registers
        how: 16-byte loads
    calls: {{warp_reduce: butterfly}}
    notes:
      - at: "sum_sq = warp_reduce(sum_sq)"
        text: reduce
    course: [day-1]
    harness: rmsnorm
"""

SETTINGS = settings(max_examples=int(os.environ.get("NOTES_HYPOTHESIS_EXAMPLES", "120")), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture
def setup(tmp_config, tmp_path):
    root = tmp_path / "annotations"
    target = root / UP / f"{PATH}.yaml"
    target.parent.mkdir(parents=True)
    return tmp_config, root, target


def assert_clean(report):
    for d in report.diagnostics:
        assert isinstance(d, Diagnostic)
        assert d.severity in ("error", "warning", "info")
        assert isinstance(d.message, str) and d.message
        assert d.code != "internal", d.format()
        d.format()
    report.summary_line()
    report.to_json()


def run(setup, data: bytes, refresh: bool = False):
    config, root, target = setup
    target.write_bytes(data)
    report = run_check(config, INDEX, root, explainer=StaleExplainer(config), refresh=refresh)
    assert_clean(report)
    return report


def load_only(data: bytes):
    try:
        load_yaml(decode(data))
    except YamlProblem as p:
        assert isinstance(p.message, str) and (p.line is None or p.line >= 1)


@SETTINGS
@given(st.binary(max_size=400))
def test_random_bytes(setup, data):
    load_only(data)
    run(setup, data)


YAMLISH = st.text(alphabet=string.ascii_letters[:8] + string.digits[:3] + " \t\n:-[]{},#&*!|>'\"?%@`\\.~\x00\x85\ufeff\u2028é中",
                  max_size=300)


@SETTINGS
@given(YAMLISH)
def test_random_yamlish_text(setup, text):
    run(setup, text.encode("utf-8", errors="surrogatepass"))


leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30),
                   st.sampled_from(["upstream", "path", "functions", "summary", "memory", "notes", "at", "en", "zh",
                                    "fingerprint", "0123456789abcdef", "demo::norm::RMSNormKernel", PATH, UP]))
keys = st.one_of(st.text(max_size=12), st.sampled_from(
    ["upstream", "path", "overview", "functions", "summary", "decomposition", "memory", "what", "how", "sync",
     "first_look", "calls", "notes", "at", "text", "course", "harness", "signature", "fingerprint", "en", "zh",
     "demo::norm::RMSNormKernel", "demo::norm::Launch", "warp_reduce", "id", "title", "steps", "refs"]))
trees = st.recursive(leaves, lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(keys, kids, max_size=5)),
                     max_leaves=30)


@SETTINGS
@given(st.dictionaries(keys, trees, max_size=6))
def test_random_nested_documents(setup, doc):
    doc = dict(doc)
    doc.setdefault("upstream", UP)
    doc.setdefault("path", PATH)
    text = yaml.safe_dump(doc, allow_unicode=True)
    run(setup, text.encode())


@SETTINGS
@given(trees)
def test_wrong_types_everywhere(setup, value):
    """Any value at any field of a valid document: a clean schema error, never a crash."""
    fields = ["overview", "summary", "memory", "calls", "notes", "course", "harness", "signature", "fingerprint"]
    for f in fields:
        doc = yaml.safe_load(VALID.split("\n", 1)[1])
        if f == "overview":
            doc[f] = value
        else:
            doc["functions"]["demo::norm::RMSNormKernel"][f] = value
        run(setup, yaml.safe_dump(doc, allow_unicode=True).encode())


@st.composite
def mutations(draw):
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "insert", "dup-line", "tab", "alias", "huge", "dup-key", "swap", "tag",
                                   "badutf8", "indent", "bom", "control"]))
        lines = text.split("\n")
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "delete" and text:
            j = draw(st.integers(0, len(text) - 1))
            text = text[:j] + text[j + 1:]
        elif op == "insert":
            j = draw(st.integers(0, len(text)))
            text = text[:j] + draw(st.sampled_from(list(":-[]{}#&*!|>'\"?\t\n @%"))) + text[j:]
        elif op == "dup-line":
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif op == "tab":
            text = text.replace("  ", "\t", draw(st.integers(1, 5)))
        elif op == "alias":
            text = text.replace("summary: |", "summary: &s |", 1) + "  demo::norm::warp_reduce:\n    summary: *s\n    sync: *s\n"
        elif op == "huge":
            text = text.replace("Sums squares.", "x" * draw(st.sampled_from([10_000, 300_000])), 1)
        elif op == "dup-key":
            text = text.replace("    summary: |", "    summary: a\n    summary: |", 1)
        elif op == "swap":
            lines[i] = lines[i].replace(":", "", 1)
            text = "\n".join(lines)
        elif op == "tag":
            text = text.replace("harness: rmsnorm", draw(st.sampled_from([
                "harness: !!python/object/apply:os.system ['true']", "harness: !custom x", "harness: !!binary aGk=",
                "harness: !!set {a, b}", "<<: {x: 1}"])), 1)
        elif op == "badutf8":
            raw = text.encode("utf-8", errors="surrogatepass")
            return raw[:50] + b"\xff\xfe\xc3" + raw[50:]
        elif op == "indent":
            lines[i] = " " * draw(st.integers(1, 7)) + lines[i]
            text = "\n".join(lines)
        elif op == "bom":
            text = "\ufeff" + text
        elif op == "control":
            j = draw(st.integers(0, len(text)))
            text = text[:j] + draw(st.sampled_from(["\x00", "\x07", "\x1b", "\ud800", "\u2028", "\x85"])) + text[j:]
    return text.encode("utf-8", errors="surrogatepass")


@SETTINGS
@given(mutations())
def test_mutated_valid_document(setup, data):
    load_only(data)
    run(setup, data)
    # --refresh on whatever survived: it edits or leaves the file, never corrupts it
    before = run(setup, data).counts()
    after = run(setup, data, refresh=True)
    if after.refreshed:
        assert after.counts()["functions"] == before["functions"]
        assert after.counts()["errors"] <= before["errors"]


def test_deep_nesting_and_alias_bomb(setup):
    run(setup, b"a: " + b"[" * 5000 + b"]" * 5000)
    run(setup, b"a: " + b"{x: " * 3000 + b"1" + b"}" * 3000)
    bomb = "a: &a [x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20))
    r = run(setup, bomb.encode())
    assert any(d.code == "yaml-alias" for d in r.diagnostics)


def test_python_tags_are_refused_not_executed(setup, tmp_path):
    marker = tmp_path / "pwned"
    r = run(setup, f"upstream: !!python/object/apply:os.system ['touch {marker}']\npath: x\n".encode())
    assert not marker.exists()
    assert [d.code for d in r.diagnostics if d.severity == "error"] == ["yaml-tag"]


@SETTINGS
@given(mutations())
def test_new_on_mutated_files(setup, data):
    """`annotate new` into whatever the file holds: a stub that reads back, or a clean refusal."""
    from annotate.errors import AnnotateError
    from annotate.notes.new import new_stub

    config, root, target = setup
    target.write_bytes(data)
    try:
        res = new_stub(config, INDEX, "demo::norm::warp_reduce", root)
    except AnnotateError as exc:
        assert exc.message
        assert target.read_bytes() == data  # refused: untouched
        return
    funcs = load_yaml(decode(res.file.read_bytes())).data["functions"]
    assert res.key in funcs

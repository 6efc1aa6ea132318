"""The committed JSON Schema is the one the model generates; the documented example validates."""

from __future__ import annotations

import json

from annotate.cli import main
from annotate.notes.schema import CourseDoc, FileDoc, json_schema, json_schema_text


def test_committed_schema_is_up_to_date(real_config):
    committed = real_config.schema_file.read_text(encoding="utf-8")
    assert committed == json_schema_text(), "schema/annotation.schema.json is stale: run `annotate schema`"


def test_schema_command_check(capsys):
    assert main(["schema", "--check"]) == 0


def test_schema_shape():
    s = json_schema()
    assert s["then"] == {"$ref": "#/$defs/FileDoc"} and s["else"] == {"$ref": "#/$defs/CourseDoc"}
    fn = s["$defs"]["FunctionDoc"]
    assert fn["additionalProperties"] is False
    assert {"summary", "decomposition", "memory", "sync", "first_look", "calls", "notes", "course", "harness",
            "fingerprint", "signature"} <= set(fn["properties"])
    assert fn["properties"]["fingerprint"]["anyOf"][0]["pattern"] == "^[0-9a-f]{16}$"
    json.dumps(s)


def test_brief_example_validates():
    from annotate.yamlpos import load_yaml

    doc = load_yaml("""
upstream: flashinfer
path: include/flashinfer/norm.cuh
overview: Markdown text about the file.
functions:
  flashinfer::norm::RMSNormKernel:
    signature: "..."
    fingerprint: 0123456789abcdef
    summary: what it computes
    decomposition: grid / block / warp / thread mapping
    memory:
      - what: input row
        path: global → registers
        how: 16-byte vector loads, coalesced across the block
    sync: where threads synchronise and why
    first_look: what a learner should look at first
    calls: {flashinfer::math::shfl_xor_sync: warp butterfly reduction}
    notes:
      - at: "sum_sq += math::shfl_xor_sync"
        text: note shown beside that line
    course: [flashinfer-day-06]
    harness: rmsnorm
""").data
    FileDoc.model_validate(doc)
    CourseDoc.model_validate({"id": "fi-14", "title": {"en": "FlashInfer in 14 days", "zh": "14 天"},
                              "steps": [{"id": "day-06", "title": "norm", "refs": ["flashinfer:include/flashinfer/norm.cuh"]}]})


def test_editor_validation_agrees_with_check(real_config):
    """A standard JSON Schema validator (what editors run) accepts every committed annotation
    file and the drift fixture, and rejects what `check` rejects at the schema level."""
    jsonschema = __import__("pytest").importorskip("jsonschema")
    from annotate.notes.api import annotation_paths
    from annotate.yamlpos import decode, load_yaml

    schema = json.loads(real_config.schema_file.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    files, courses = annotation_paths(real_config.annotations_dir)
    drift, _ = annotation_paths(real_config.repo_root / "tests" / "data" / "drift" / "annotations")
    for p in files + courses + drift:
        errors = list(validator.iter_errors(load_yaml(decode(p.read_bytes())).data))
        assert not errors, f"{p}: {errors[0].message}"
    bad = [
        {"upstream": "x", "path": "p", "functions": {"f": {"summery": "typo"}}},
        {"upstream": "x", "path": "p", "functions": {"f": {"summary": ["a list"]}}},
        {"upstream": "x", "path": "p", "functions": {"f": {"summary": {"en": "a", "fr": "b"}}}},
        {"upstream": "x", "path": "p", "functions": {"f": {"fingerprint": "xyz"}}},
        {"upstream": "x", "path": "p", "functions": {"f": {"memory": [{"what": "a"}]}}},
        {"upstream": "x"},
        {"id": "c", "title": "t", "steps": [{"id": "s"}]},
    ]
    for doc in bad:
        assert list(validator.iter_errors(doc)), doc
        model = FileDoc if "upstream" in doc else CourseDoc
        with __import__("pytest").raises(Exception):
            model.model_validate(doc)

"""The first real annotation set (annotations/): structural rules that hold without the index,
plus, at the real pins, that every anchor text occurs exactly once in its upstream file region.

The full resolution (names, anchors inside the indexed function, fingerprints) is
`annotate check`, covered by the notes stage's tests; these tests keep the content honest on
its own: files parse, name the schema correctly, point at real upstream files, use only
course ids that exist, and never quote long stretches of upstream code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from annotate.index.model import bare_name
from annotate.index.parse import macro_table

REPO = Path(__file__).resolve().parent.parent
ANN = REPO / "annotations"
COURSES = ANN / "courses"
SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")
MAX_ANCHOR = 140  # an anchor is a short piece of code, never an excerpt


def _annotation_files() -> list[Path]:
    return sorted(p for p in ANN.rglob("*.yaml") if COURSES not in p.parents)


def _course_files() -> list[Path]:
    return sorted(COURSES.glob("*.yaml"))


def _load(p: Path) -> dict:
    return yaml.safe_load(p.read_text(encoding="utf-8"))


def _texts(v) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    assert isinstance(v, dict) and set(v) <= {"en", "zh"} and "en" in v, v
    return [t for t in v.values() if t]


def test_there_is_a_real_set():
    files = _annotation_files()
    assert len(files) >= 5
    assert sum(len(_load(p).get("functions") or {}) for p in files) >= 40
    assert {p.stem for p in _course_files()} >= {"flashinfer-course", "flash-attention-plan"}


@pytest.mark.parametrize("path", _annotation_files() + _course_files(), ids=lambda p: str(p.relative_to(ANN)))
def test_schema_line_points_at_the_schema(path: Path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    m = SCHEMA_LINE.match(first)
    assert m, f"{path}: first line must name the schema"
    target = (path.parent / m.group(1)).resolve()
    assert target == (REPO / "schema" / "annotation.schema.json").resolve()


@pytest.mark.parametrize("path", _annotation_files(), ids=lambda p: str(p.relative_to(ANN)))
def test_annotation_file_shape(path: Path):
    doc = _load(path)
    rel = path.relative_to(ANN).as_posix()
    upstream, _, upath = rel.partition("/")
    assert doc["upstream"] == upstream
    assert doc["path"] + ".yaml" == upath, "file must mirror the upstream path"
    for t in _texts(doc.get("overview")):
        assert t.strip()
    steps = _step_ids()
    # a file of declarations and export lines (a binding) defines nothing an entry could name:
    # its overview is the note
    assert doc.get("functions") or doc.get("types") or doc.get("macros") or _texts(doc.get("overview")), \
        "no functions, types, macros or overview"
    for name, fn in (doc.get("functions") or {}).items():
        assert fn.get("summary"), f"{name}: summary missing"
        for key in ("summary", "decomposition", "sync", "first_look"):
            _texts(fn.get(key))
        for m in fn.get("memory", []):
            assert set(m) <= {"what", "path", "how"} and m.get("what") and m.get("path")
        for n in fn.get("notes", []):
            assert n["at"].strip() and n["text"]
            assert len(n["at"]) <= MAX_ANCHOR, f"{name}: anchor too long to be an anchor"
        assert fn.get("course"), f"{name}: no course tag"
        for tag in fn["course"]:
            assert tag in steps, f"{name}: unknown course step {tag}"
    for section, keys in (("types", ("summary", "layout")), ("macros", ("summary", "expands_to"))):
        for name, entry in (doc.get(section) or {}).items():
            assert entry.get("summary"), f"{name}: summary missing"
            for key in keys:
                _texts(entry.get(key))
            for text in (entry.get("fields") or {}).values():
                assert _texts(text), f"{name}: empty field note"
            for n in entry.get("notes", []):
                assert n["at"].strip() and n["text"]
                assert len(n["at"]) <= MAX_ANCHOR, f"{name}: anchor too long to be an anchor"
            assert entry.get("course"), f"{name}: no course tag"
            for tag in entry["course"]:
                assert tag in steps, f"{name}: unknown course step {tag}"


def _step_ids() -> set[str]:
    out = set()
    for p in _course_files():
        doc = _load(p)
        out |= {s["id"] for s in doc["steps"]}
    return out


def test_course_maps():
    fi = _load(COURSES / "flashinfer-course.yaml")
    assert [s["id"] for s in fi["steps"]] == [f"flashinfer-day-{i:02d}" for i in range(1, 15)]
    fa = _load(COURSES / "flash-attention-plan.yaml")
    # the source plan's own numbering: 1, 2.1-2.3, 3.1-3.3, 4.1-4.3, 5, 6
    phases = ["1", "2-1", "2-2", "2-3", "3-1", "3-2", "3-3", "4-1", "4-2", "4-3", "5", "6"]
    assert [s["id"] for s in fa["steps"]] == [f"fa-phase-{n}" for n in phases]
    for doc in (fi, fa):
        assert doc["id"] and _texts(doc["title"]) and _texts(doc.get("text"))
        for s in doc["steps"]:
            assert _texts(s["title"]) and _texts(s.get("text")) and s["refs"], s["id"]
            for ref in s["refs"]:
                up, _, rest = ref.partition(":")
                assert up in {"flashinfer", "flash-attention"} and rest, ref


def test_every_step_has_annotated_functions_or_files():
    """Each course step either tags annotated functions or points at files to read."""
    tagged: set[str] = set()
    for p in _annotation_files():
        doc = _load(p)
        for section in ("functions", "types", "macros"):
            for entry in (doc.get(section) or {}).values():
                tagged |= set(entry.get("course", []))
    steps = _step_ids()
    assert len(tagged & steps) >= len(steps) - 3


@pytest.mark.slow
@pytest.mark.parametrize("upstream", ["flashinfer", "flash-attention"])
def test_refs_and_anchors_exist_at_the_pins(pinned, real_config, upstream: str):
    from annotate.fetch.api import missing_paths

    root = pinned(upstream)
    # the pin's files that this checkout's route does not ship (the archive route lacks most of
    # hopper/); the lock still says they are part of the pin, which is checked instead
    absent = missing_paths(real_config, upstream)
    squash = lambda s: "".join(s.split())  # noqa: E731 - matched ignoring whitespace, like `annotate check`
    for p in _annotation_files():
        doc = _load(p)
        if doc["upstream"] != upstream:
            continue
        src = root / doc["path"]
        if doc["path"] in absent:
            continue
        assert src.is_file(), f"{p}: {doc['path']} not in the pin"
        text = squash(src.read_text(encoding="utf-8", errors="replace"))
        entries = [e for section in ("functions", "types", "macros") for e in (doc.get(section) or {}).items()]
        for name, fn in entries:
            # `name@label` keys tell overloads apart; the label is not part of the name
            bare = bare_name(name.split("@")[0])
            # a method written by a body-defining macro (`REGISTER_LOGITS_MASK(..., { body })` is
            # `LogitsMask`) is spelled in the source only as that macro
            spelled = {bare} | {m for m, d in macro_table().body_definers.items() if d["name"] == bare}
            assert any(s in text for s in spelled), f"{p}: {name} not in {doc['path']}"
            for n in fn.get("notes", []):
                assert squash(n["at"]) in text, f"{p}: {name}: anchor {n['at']!r} not in {doc['path']}"
    for c in _course_files():
        for s in _load(c)["steps"]:
            for ref in s["refs"]:
                up, _, rest = ref.partition(":")
                if up == upstream and "/" in rest:
                    assert rest in absent or (root / rest).is_file(), f"{c}: {ref}"

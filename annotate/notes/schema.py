"""The annotation file format as pydantic models: validation and the JSON Schema.

These models describe what a reviewer types (the YAML document); `annotate.notes.model`
holds what the rest of the tool reads. Every mapping forbids unknown keys so that a typo
(`summery:`) is an error with a "did you mean", not a silently ignored field.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag

SCHEMA_ID = "https://annotate.invalid/schema/annotation.schema.json"

FINGERPRINT_RE = r"^[0-9a-f]{16}$"
COURSE_ID_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Bilingual(_Strict):
    """A text field written in both languages."""

    en: str = Field(description="English Markdown.")
    zh: str | None = Field(None, description="Chinese Markdown (optional).")


def _text_kind(v: Any) -> str:
    return "bilingual" if isinstance(v, dict) else "text"


# A Markdown string, or {en: ..., zh: ...}. The callable discriminator makes validation try
# only the branch that fits the value's shape, so errors speak about that branch alone.
TextField = Annotated[
    Union[Annotated[str, Tag("text")], Annotated[Bilingual, Tag("bilingual")]],
    Discriminator(_text_kind),
]
TEXT_TAGS = ("text", "bilingual")


class MemoryDoc(_Strict):
    what: TextField = Field(description="The data that moves, e.g. 'input row', 'K tile'.")
    path: str = Field(description="From → to, e.g. 'global → shared'.")
    how: TextField | None = Field(
        None, description="Widths, coalescing, bank conflicts, swizzles, pipeline depth.")


class InlineNoteDoc(_Strict):
    at: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="A piece of code text inside the function, unique within it; matched "
                    "ignoring whitespace.")
    text: TextField = Field(description="The note shown beside that line.")


class FunctionDoc(_Strict):
    signature: str | None = Field(
        None, description="Disambiguates overloads/specialisations: a substring of the "
                          "index's signature for the definition meant.")
    fingerprint: Annotated[str, StringConstraints(pattern=FINGERPRINT_RE)] | None = Field(
        None, description="Body fingerprint the reviewer saw (16 hex digits); written by "
                          "`annotate new` and `annotate check --refresh`.")
    summary: TextField | None = Field(None, description="What the function computes.")
    decomposition: TextField | None = Field(
        None, description="How work maps to grid / block / warp / thread.")
    memory: list[MemoryDoc] = Field(default_factory=list, description="How data moves.")
    sync: TextField | None = Field(None, description="Where threads synchronise and why.")
    first_look: TextField | None = Field(None, description="What a learner should look at first.")
    calls: dict[str, TextField] = Field(
        default_factory=dict, description="Notes on callees, keyed by the callee's name.")
    notes: list[InlineNoteDoc] = Field(
        default_factory=list, description="Notes anchored to code text inside the body.")
    course: list[Annotated[str, StringConstraints(pattern=COURSE_ID_RE)]] = Field(
        default_factory=list, description="Ids of course steps/days this function belongs to.")
    harness: str | None = Field(None, description="Name of a runnable harness in vendor_kernels/.")


class TypeDoc(_Strict):
    """A note on a struct / class / union / enum (or a Python class) defined in this file."""

    signature: str | None = Field(
        None, description="Picks one of several definitions of the name (a template's "
                          "specialisations): a substring of the head the index reports, e.g. "
                          "'vec_t<half, vec_size>' or 'typename float_t, size_t vec_size'.")
    fingerprint: Annotated[str, StringConstraints(pattern=FINGERPRINT_RE)] | None = Field(
        None, description="Fingerprint of the definition the reviewer saw (16 hex digits); written "
                          "by `annotate new` and `annotate check --refresh`.")
    summary: TextField | None = Field(None, description="What the type is for.")
    layout: TextField | None = Field(
        None, description="How its members sit in memory: sizes, alignment, units, what one "
                          "instance costs in registers or shared memory.")
    fields: dict[str, TextField] = Field(
        default_factory=dict, description="Per member, keyed by its declared name (data member, "
                                          "static member, member type, enumerator, declared method): "
                                          "what it holds, its units, who writes it and who reads it.")
    notes: list[InlineNoteDoc] = Field(
        default_factory=list, description="Notes anchored to code text inside the definition.")
    course: list[Annotated[str, StringConstraints(pattern=COURSE_ID_RE)]] = Field(
        default_factory=list, description="Ids of course steps/days this type belongs to.")


class MacroDoc(_Strict):
    """A note on a `#define` in this file."""

    signature: str | None = Field(
        None, description="Picks one of several `#define`s of the name (under different `#if` "
                          "branches): a substring of the definition's text.")
    fingerprint: Annotated[str, StringConstraints(pattern=FINGERPRINT_RE)] | None = Field(
        None, description="Fingerprint of the replacement text the reviewer saw (16 hex digits); "
                          "written by `annotate new` and `annotate check --refresh`.")
    summary: TextField | None = Field(None, description="What the macro is for.")
    expands_to: TextField | None = Field(
        None, description="What an invocation becomes, with a worked example.")
    notes: list[InlineNoteDoc] = Field(
        default_factory=list, description="Notes anchored to code text inside the definition.")
    course: list[Annotated[str, StringConstraints(pattern=COURSE_ID_RE)]] = Field(
        default_factory=list, description="Ids of course steps/days this macro belongs to.")


class FileDoc(_Strict):
    """One annotation file: annotations/<upstream>/<path>.yaml."""

    model_config = ConfigDict(title="annotate annotation file")
    upstream: str = Field(description="Upstream name from vendor_kernels/upstreams.yaml.")
    path: str = Field(description="The annotated file, relative to the upstream root.")
    overview: TextField | None = Field(None, description="Markdown about the whole file.")
    functions: dict[str, FunctionDoc] = Field(
        default_factory=dict, description="Keyed by qualified name as the index reports it.")
    types: dict[str, TypeDoc] = Field(
        default_factory=dict, description="Types defined in this file, keyed by qualified name "
                                          "(`annotate symbols UPSTREAM:PATH --types`).")
    macros: dict[str, MacroDoc] = Field(
        default_factory=dict, description="Macros defined in this file, keyed by name "
                                          "(`annotate symbols UPSTREAM:PATH --macros`).")


CITE_HELP = ("'upstream:path:line', 'upstream:path:first-last' (lines of a file) or "
             "'upstream:qualified_name' (a function)")


class QuestionDoc(_Strict):
    question: TextField = Field(description="What the learner is asked.")
    answer: TextField = Field(description="The reference answer, shown folded; say where in the code it is.")
    cites: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        min_length=1, description=f"The code the answer rests on: {CITE_HELP}; checked by `annotate check`.")


class ExercisesDoc(_Strict):
    questions: list[QuestionDoc] = Field(
        default_factory=list, description="Questions with a reference answer that cites the code.")
    homework: list[TextField] = Field(
        default_factory=list, description="Things to do: run, change, measure, explain.")
    checkpoints: list[TextField] = Field(
        default_factory=list, description="What the learner should be able to do at the end of the step; "
                                          "ticked in the browser (kept there, by position in this list).")


class StepDoc(_Strict):
    id: Annotated[str, StringConstraints(pattern=COURSE_ID_RE)]
    title: TextField
    text: TextField | None = None
    goals: list[TextField] = Field(default_factory=list, description="What the step is for.")
    refs: list[str] = Field(
        default_factory=list,
        description="The reading list, in reading order: 'upstream:path' or 'upstream:qualified_name'.")
    harness: str | None = Field(
        None, description="The runnable kernel of the step: a folder of vendor_kernels/ with a spec.yaml.")
    exercises: ExercisesDoc | None = Field(None, description="Questions, homework and checkpoints.")


class CourseDoc(_Strict):
    """A course map: annotations/courses/<id>.yaml."""

    model_config = ConfigDict(title="annotate course map")
    id: Annotated[str, StringConstraints(pattern=COURSE_ID_RE)]
    title: TextField
    text: TextField | None = None
    steps: list[StepDoc] = Field(default_factory=list)


def json_schema() -> dict:
    """The JSON Schema for annotation files and course maps (one document, `anyOf` both)."""
    from pydantic.json_schema import models_json_schema

    _, defs = models_json_schema([(FileDoc, "validation"), (CourseDoc, "validation")],
                                 ref_template="#/$defs/{model}")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "annotate: annotation file or course map",
        "description": "Generated from annotate/notes/schema.py by `annotate schema`; do not edit.",
        # An annotation file names its upstream; a course map does not. if/then/else keeps
        # editor messages about the one shape the document is meant to have.
        "type": "object",
        "if": {"required": ["upstream"]},
        "then": {"$ref": "#/$defs/FileDoc"},
        "else": {"$ref": "#/$defs/CourseDoc"},
        "$defs": defs["$defs"],
    }
    return schema


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"

"""The annotation model that the site and other stages read: plain, typed, read-only values.

The YAML format (what reviewers type) is validated by `annotate.notes.schema` (pydantic);
`annotate.notes.api.load_annotations` turns a validated file into these objects, already
resolved against an index. Nothing here imports anything beyond the standard library and
the index's data contract, so every machine can read the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from annotate.errors import Diagnostic
from annotate.index.model import Symbol

# FunctionNote.status values. The first three mean the note is attached to real code.
OK = "ok"  # resolved, fingerprint equals the current body's
STALE = "stale"  # resolved, but the body changed since the reviewer fingerprinted it
UNFINGERPRINTED = "unfingerprinted"  # resolved, no fingerprint recorded yet
UNRESOLVED = "unresolved"  # no such function in that file (or the file is missing)
AMBIGUOUS = "ambiguous"  # several definitions match and `signature:` does not pick one
STATUSES = (OK, STALE, UNFINGERPRINTED, UNRESOLVED, AMBIGUOUS)
RESOLVED_STATUSES = (OK, STALE, UNFINGERPRINTED)


@dataclass(frozen=True)
class Text:
    """A Markdown text field: English always, Chinese when the reviewer gave one."""

    en: str
    zh: str | None = None

    def get(self, lang: str = "en") -> str:
        """The text in `lang`, falling back to English."""
        return self.zh if lang == "zh" and self.zh else self.en

    @property
    def languages(self) -> tuple[str, ...]:
        return ("en", "zh") if self.zh else ("en",)


@dataclass(frozen=True)
class SourceSpan:
    """Where something was written in an annotation file (for messages and edit links)."""

    file: str  # path of the YAML file, relative to the repository root when inside it
    line: int  # 1-based
    column: int = 1  # 1-based


@dataclass(frozen=True)
class MemoryNote:
    what: Text  # the data that moves: "input row", "K tile"
    path: str  # "global → shared", "shared → registers" (free text, usually arrows)
    how: Text | None = None  # widths, coalescing, bank conflicts, swizzles, pipeline depth


@dataclass(frozen=True)
class InlineNote:
    at: str  # a piece of the function's code text, matched whitespace-insensitively
    text: Text
    line: int | None = None  # 1-based line in the upstream file where `at` matched; None if it did not
    end_line: int | None = None  # last line covered by the match (multi-line anchors)


@dataclass(frozen=True)
class FunctionNote:
    qualified_name: str  # the key reviewers wrote under `functions:`
    upstream: str
    path: str  # upstream file the note belongs to
    symbol: Symbol | None  # the definition it resolved to; None when unresolved/ambiguous
    status: str  # one of STATUSES
    signature: str | None = None
    fingerprint: str | None = None  # what the reviewer saw
    current_fingerprint: str | None = None  # the resolved symbol's fingerprint now
    summary: Text | None = None
    decomposition: Text | None = None
    sync: Text | None = None
    first_look: Text | None = None
    memory: tuple[MemoryNote, ...] = ()
    calls: dict[str, Text] = field(default_factory=dict)
    notes: tuple[InlineNote, ...] = ()
    course: tuple[str, ...] = ()
    harness: str | None = None
    source: SourceSpan | None = None  # where the entry's key is in the YAML file

    @property
    def resolved(self) -> bool:
        return self.symbol is not None and self.status in RESOLVED_STATUSES


@dataclass(frozen=True)
class AnnotationFile:
    file: str  # the YAML file (relative to the repository root when inside it)
    upstream: str | None  # None when the file could not be read at all
    path: str | None  # the upstream source file it annotates
    overview: Text | None = None
    functions: tuple[FunctionNote, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


@dataclass(frozen=True)
class Question:
    question: Text
    answer: Text
    cites: tuple[str, ...] = ()  # "upstream:path:line", "upstream:path:first-last" or "upstream:qualified_name"


@dataclass(frozen=True)
class Exercises:
    questions: tuple[Question, ...] = ()
    homework: tuple[Text, ...] = ()
    checkpoints: tuple[Text, ...] = ()  # ticked in the browser, by position


@dataclass(frozen=True)
class CourseStep:
    id: str
    title: Text
    text: Text | None = None
    refs: tuple[str, ...] = ()  # the reading list, in order: "upstream:path" or "upstream:qualified_name"
    goals: tuple[Text, ...] = ()
    harness: str | None = None  # the runnable kernel of the step (vendor_kernels/<harness>/)
    exercises: Exercises = Exercises()


@dataclass(frozen=True)
class Course:
    id: str
    title: Text
    text: Text | None = None
    steps: tuple[CourseStep, ...] = ()
    file: str | None = None  # the YAML file it came from
    source: SourceSpan | None = None  # where its `id:` is written


@dataclass(frozen=True)
class AnnotationSet:
    """Everything under annotations/, resolved against one index. Read-only: made once by
    annotate.notes.api.load (lists given to the constructor are kept as tuples)."""

    files: tuple[AnnotationFile, ...] = ()
    courses: tuple[Course, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()  # all files' diagnostics, in order
    # Symbol.key -> the note attached to that definition (the first one, in file order)
    _by_key: dict[str, FunctionNote] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("files", "courses", "diagnostics"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        by_key: dict[str, FunctionNote] = {}
        for fn in self.functions():
            if fn.symbol is not None:
                by_key.setdefault(fn.symbol.key, fn)
        object.__setattr__(self, "_by_key", by_key)

    def functions(self) -> Iterator[FunctionNote]:
        for f in self.files:
            yield from f.functions

    def for_symbol(self, sym: Symbol) -> FunctionNote | None:
        """The note attached to this exact definition (matched by Symbol.key), if any."""
        return self._by_key.get(sym.key)

    def for_file(self, upstream: str, path: str) -> AnnotationFile | None:
        for f in self.files:
            if f.upstream == upstream and f.path == path:
                return f
        return None

    def course(self, course_id: str) -> Course | None:
        return next((c for c in self.courses if c.id == course_id), None)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

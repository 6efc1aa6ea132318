"""The annotation model that the site and other stages read: plain, typed, read-only values.

Notes are on functions (`FunctionNote`), types (`TypeNote`, with a `FieldNote` per member) and
macros (`MacroNote`); each has `.kind`, `.definition` (the index's Symbol / TypeDef / MacroDef)
and `.source`. `AnnotationSet.for_use` links a function's uses of types and macros (the index's
`Use`) to the notes on them.

The YAML format (what reviewers type) is validated by `annotate.notes.schema` (pydantic);
`annotate.notes.api.load_annotations` turns a validated file into these objects, already
resolved against an index. Nothing here imports anything beyond the standard library and
the index's data contract, so every machine can read the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from annotate.errors import Diagnostic
from annotate.index.model import TYPE_USE, MacroDef, Symbol, TypeDef, Use

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

    kind = "function"  # (a class attribute, as TypeNote.kind and MacroNote.kind)

    @property
    def resolved(self) -> bool:
        return self.symbol is not None and self.status in RESOLVED_STATUSES

    @property
    def definition(self) -> Symbol | None:
        return self.symbol


# ---- notes on types and macros (entries under `types:` and `macros:`) ----

@dataclass(frozen=True)
class FieldNote:
    """The note on one member of a type (an entry of `fields:`), with where the member is."""

    name: str  # the member's declared name, as keyed under `fields:`
    text: Text  # what it holds, its units, who writes it and who reads it
    kind: str | None = None  # annotate.index.model.FIELD_KINDS, "method" for a defined one; None unresolved
    lines: tuple[int, ...] = ()  # where it is declared (several under `#if` branches); () unresolved


@dataclass(frozen=True)
class TypeNote:
    """A note on a struct / class / union / enum (or Python class): the type as a whole and,
    under `fields`, each member by its declared name (in the order the reviewer wrote them)."""

    qualified_name: str  # the key reviewers wrote under `types:` (without an `@label`)
    upstream: str
    path: str
    typedef: TypeDef | None  # the definition it resolved to; None when unresolved/ambiguous
    status: str  # one of STATUSES
    signature: str | None = None
    fingerprint: str | None = None
    current_fingerprint: str | None = None
    summary: Text | None = None  # what the type is for
    layout: Text | None = None  # how its members sit in memory, sizes, units
    fields: tuple[FieldNote, ...] = ()
    notes: tuple[InlineNote, ...] = ()  # anchored inside the definition
    course: tuple[str, ...] = ()
    source: SourceSpan | None = None

    kind = "type"  # (a class attribute: which section of the file the entry is in)

    @property
    def resolved(self) -> bool:
        return self.typedef is not None and self.status in RESOLVED_STATUSES

    @property
    def definition(self) -> TypeDef | None:
        return self.typedef

    def field(self, name: str) -> FieldNote | None:
        return next((f for f in self.fields if f.name == name), None)


@dataclass(frozen=True)
class MacroNote:
    """A note on a `#define`: what it is for and what an invocation expands to."""

    name: str  # the key under `macros:` (without an `@label`)
    upstream: str
    path: str
    macro: MacroDef | None
    status: str  # one of STATUSES
    signature: str | None = None
    fingerprint: str | None = None
    current_fingerprint: str | None = None
    summary: Text | None = None
    expands_to: Text | None = None  # what an invocation becomes, with a worked example
    notes: tuple[InlineNote, ...] = ()  # anchored inside the definition
    course: tuple[str, ...] = ()
    source: SourceSpan | None = None

    kind = "macro"

    @property
    def qualified_name(self) -> str:  # a macro has no scope (as MacroDef.qualified_name)
        return self.name

    @property
    def resolved(self) -> bool:
        return self.macro is not None and self.status in RESOLVED_STATUSES

    @property
    def definition(self) -> MacroDef | None:
        return self.macro


@dataclass(frozen=True)
class AnnotationFile:
    file: str  # the YAML file (relative to the repository root when inside it)
    upstream: str | None  # None when the file could not be read at all
    path: str | None  # the upstream source file it annotates
    overview: Text | None = None
    functions: tuple[FunctionNote, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    types: tuple[TypeNote, ...] = ()
    macros: tuple[MacroNote, ...] = ()

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
    # TypeDef.key / MacroDef.key -> the note on that definition (the first one)
    _types_by_key: dict[str, TypeNote] = field(init=False, repr=False, compare=False)
    _macros_by_key: dict[str, MacroNote] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("files", "courses", "diagnostics"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        by_key: dict[str, FunctionNote] = {}
        for fn in self.functions():
            if fn.symbol is not None:
                by_key.setdefault(fn.symbol.key, fn)
        object.__setattr__(self, "_by_key", by_key)
        self._index_types_and_macros()

    def _index_types_and_macros(self) -> None:
        types: dict[str, TypeNote] = {}
        for t in self.types():
            if t.typedef is not None:
                types.setdefault(t.typedef.key, t)
        macros: dict[str, MacroNote] = {}
        for m in self.macros():
            if m.macro is not None:
                macros.setdefault(m.macro.key, m)
        object.__setattr__(self, "_types_by_key", types)
        object.__setattr__(self, "_macros_by_key", macros)

    def functions(self) -> Iterator[FunctionNote]:
        for f in self.files:
            yield from f.functions

    def types(self) -> Iterator[TypeNote]:
        for f in self.files:
            yield from f.types

    def macros(self) -> Iterator[MacroNote]:
        for f in self.files:
            yield from f.macros

    def for_type(self, t: TypeDef) -> TypeNote | None:
        """The note on this exact definition (matched by TypeDef.key), if any."""
        return self._types_by_key.get(t.key)

    def for_macro(self, m: MacroDef) -> MacroNote | None:
        """The note on this exact `#define` (matched by MacroDef.key), if any."""
        return self._macros_by_key.get(m.key)

    def for_use(self, use: Use) -> tuple[TypeNote | MacroNote, ...]:
        """The notes on the definitions a function's use of a type or macro resolved to (a
        template's specialisations, a macro's `#if` branches): the cross-reference from a
        function (`Index.uses_by`) to the notes on what it uses."""
        table = self._types_by_key if use.kind == TYPE_USE else self._macros_by_key
        return tuple(n for k in use.targets if (n := table.get(k)) is not None)

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

"""Per-step coverage of the course maps (`annotate status --courses`): for each step of each
course, what is annotated with the step's tag, which `__global__` kernels of the step's files
are annotated, how much of it is written in each language, and whether the step meets the bar
the courses set (every kernel of its files annotated, at least `MIN_TAGGED` annotated
functions, types or macros carrying its tag).

Read from the AnnotationSet that `annotate check` resolves (the same loader, the same index);
the step's files are the ones its refs name, resolved by the check's own rule
(`api.ref_files`), and a ref that does not resolve is reported with the check's message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator

from annotate.index.model import KERNEL
from annotate.notes import api
from annotate.notes import model as M

MIN_TAGGED = 3  # annotated functions, types and macros a step's tag must be on

_NoteT = M.FunctionNote | M.TypeNote | M.MacroNote


@dataclass(frozen=True)
class Languages:
    """How many of some texts are written in English and how many in Chinese."""

    en: int = 0
    zh: int = 0

    def __add__(self, other: "Languages") -> "Languages":
        return Languages(self.en + other.en, self.zh + other.zh)

    @classmethod
    def of(cls, texts) -> "Languages":
        texts = [t for t in texts if t is not None]
        return cls(sum(1 for t in texts if t.en), sum(1 for t in texts if t.zh))


@dataclass(frozen=True)
class Kernel:
    """A `__global__` function defined in one of a step's files."""

    name: str  # qualified name
    path: str
    line: int
    annotated: bool  # a note is attached to this definition (with any tag)


@dataclass(frozen=True)
class StepCoverage:
    course: str
    step: str  # the step's id, which is its course tag
    number: int  # 1-based position in the course
    title: str  # the English title
    functions: int  # resolved notes carrying the step's tag, by section
    types: int
    macros: int
    unresolved: tuple[str, ...]  # entries carrying the tag that resolve to no definition
    files: tuple[tuple[str, str], ...]  # (upstream, path) the refs name, in ref order
    kernels: tuple[Kernel, ...]  # defined in those files, in file and line order
    texts: Languages  # text fields of the tagged notes (summaries, memory, fields...)
    notes: Languages  # their in-body notes
    exercises: Languages  # the step's questions (question and answer), homework, checkpoints
    bad_refs: tuple[str, ...]  # the check's message for each ref that does not resolve

    @property
    def tagged(self) -> int:
        return self.functions + self.types + self.macros

    @property
    def kernels_annotated(self) -> int:
        return sum(1 for k in self.kernels if k.annotated)

    @property
    def problems(self) -> tuple[str, ...]:
        """Why the step falls short of the bar; () when it meets it."""
        out = []
        missing = [k for k in self.kernels if not k.annotated]
        if missing:
            out.append(f"{len(missing)} of {len(self.kernels)} kernels not annotated: "
                       + ", ".join(f"{k.name} ({k.path}:{k.line})" for k in missing))
        if self.tagged < MIN_TAGGED:
            out.append(f"annotated functions/types/macros tagged {self.step}: {self.tagged} "
                       f"(the bar is {MIN_TAGGED})")
        if self.unresolved:
            out.append(f"{len(self.unresolved)} entries with the tag do not resolve: " + ", ".join(self.unresolved))
        out.extend(self.bad_refs)
        return tuple(out)

    @property
    def meets_bar(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"course": self.course, "step": self.step, "number": self.number, "title": self.title,
                "functions": self.functions, "types": self.types, "macros": self.macros,
                "unresolved": list(self.unresolved),
                "files": [{"upstream": u, "file": p} for u, p in self.files],
                "kernels_present": len(self.kernels), "kernels_annotated": self.kernels_annotated,
                "kernels": [dataclasses.asdict(k) for k in self.kernels],
                "texts": dataclasses.asdict(self.texts), "notes": dataclasses.asdict(self.notes),
                "exercises": dataclasses.asdict(self.exercises), "bad_refs": list(self.bad_refs),
                "meets_bar": self.meets_bar, "problems": list(self.problems)}


@dataclass(frozen=True)
class CourseCoverage:
    id: str
    title: str
    file: str | None
    steps: tuple[StepCoverage, ...]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "file": self.file,
                "steps_meeting_bar": sum(1 for s in self.steps if s.meets_bar),
                "steps": [s.to_json() for s in self.steps]}


@dataclass(frozen=True)
class UnknownTag:
    """A course tag on an annotated function, type or macro that names no course or step."""

    tag: str
    name: str
    kind: str  # "function" | "type" | "macro"
    file: str | None  # the annotation file
    line: int | None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CoursesCoverage:
    courses: tuple[CourseCoverage, ...]
    unknown_tags: tuple[UnknownTag, ...]
    min_tagged: int = MIN_TAGGED

    def to_json(self) -> dict[str, Any]:
        return {"min_tagged": self.min_tagged, "courses": [c.to_json() for c in self.courses],
                "unknown_tags": [t.to_json() for t in self.unknown_tags]}


def course_coverage(aset: M.AnnotationSet, index, refs: api.RefChecker) -> CoursesCoverage:
    """The coverage of every course of `aset` (resolved against `index`; `refs` checks the step
    refs as `annotate check` does)."""
    by_tag: dict[str, list[_NoteT]] = {}
    for note in (*aset.functions(), *aset.types(), *aset.macros()):
        for tag in dict.fromkeys(note.course):
            by_tag.setdefault(tag, []).append(note)
    courses = tuple(
        CourseCoverage(c.id, c.title.en if c.title else c.id, c.file,
                       tuple(_step(aset, index, refs, c, i, st, by_tag.get(st.id, []))
                             for i, st in enumerate(c.steps)))
        for c in aset.courses)
    unknown = tuple(UnknownTag(tag, n.qualified_name, n.kind, n.source.file if n.source else None,
                               n.source.line if n.source else None)
                    for n, tag in api.unknown_course_tags(aset.files, aset.courses))
    return CoursesCoverage(courses, unknown)


def _step(aset: M.AnnotationSet, index, refs: api.RefChecker, course: M.Course, i: int, st: M.CourseStep,
          tagged: list[_NoteT]) -> StepCoverage:
    resolved = [n for n in tagged if n.resolved]
    files: dict[tuple[str, str], None] = {}
    bad: list[str] = []
    for ref in st.refs:
        problem = refs.problem(ref, course.file)
        if problem is not None:
            bad.append(problem.message)
            continue
        up = ref.partition(":")[0]
        files.update(((up, p), None) for p in api.ref_files(index, ref, aset))
    kernels = tuple(Kernel(s.qualified_name, s.path, s.start_line, aset.for_symbol(s) is not None)
                    for up, path in files for s in index.symbols_in(up, path) if s.kind == KERNEL)
    ex = st.exercises
    questions = Languages(sum(1 for q in ex.questions if q.question.en and q.answer.en),
                          sum(1 for q in ex.questions if q.question.zh and q.answer.zh))
    return StepCoverage(
        course=course.id, step=st.id, number=i + 1, title=st.title.en if st.title else st.id,
        functions=sum(1 for n in resolved if n.kind == "function"),
        types=sum(1 for n in resolved if n.kind == "type"),
        macros=sum(1 for n in resolved if n.kind == "macro"),
        unresolved=tuple(n.qualified_name for n in tagged if not n.resolved),
        files=tuple(files), kernels=kernels,
        texts=Languages.of(t for n in resolved for t in _texts(n)),
        notes=Languages.of(n.text for note in resolved for n in note.notes),
        exercises=questions + Languages.of((*ex.homework, *ex.checkpoints)),
        bad_refs=tuple(bad))


def _texts(value: Any, top: bool = True) -> Iterator[M.Text]:
    """Every text field of a note, in-body notes left out (they are counted apart): found by
    walking the model's own dataclasses, so a field added to the model is counted too."""
    if isinstance(value, M.Text):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _texts(v, False)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v, False)
    elif dataclasses.is_dataclass(value) and type(value).__module__ == M.__name__:
        for f in dataclasses.fields(value):
            if not (top and f.name == "notes"):
                yield from _texts(getattr(value, f.name), False)

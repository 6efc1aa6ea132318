"""The page model: typed, read-only objects the templates receive (never dicts).

Two layers, because the code of a file is tokenised in worker processes:
- a *plan* (`FilePlan`) holds everything the index and the annotations say about one page —
  functions, cross-reference links, fact markers, notes — and no source text; its `repr`
  is the page's cache key;
- the *page* (`FilePage`) adds the tokenised lines, sliced into sections and rows.

Markdown arrives here already rendered and sanitised (`markupsafe.Markup`, see
`site_builder.markdown`); every other string is plain text and is escaped by the templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from markupsafe import Markup

# A piece of a code line: (token class or "", text, href or None). Token classes are the
# one-letter codes of highlight.TOKEN_CLASSES; "" is plain text. Text and href are already
# HTML-escaped (code.escape_text / escape_attr): the template's code loop does not escape.
Piece = tuple[str, str, "str | None"]


@dataclass(frozen=True)
class Msg:
    """A string of the site's own, by its id in the message catalogue (site_builder/messages.yaml),
    with the values of its placeholders; the templates show it in every language the page
    switches between (site_builder.i18n)."""

    id: str
    args: tuple[tuple[str, str | int | float], ...] = ()


def msg(id: str, **args: str | int | float) -> Msg:
    return Msg(id, tuple(sorted(args.items())))


@dataclass(frozen=True)
class Label:
    """Plain text from the data in two languages (a course title): either may be missing, and
    the page then shows the other, marked."""

    en: str
    zh: str | None = None


# What the templates print as text: a plain string (data: names, paths, numbers), a catalogue
# message, or a bilingual label.
Words = "str | Msg | Label"


@dataclass(frozen=True)
class TextView:
    """One annotation text field, rendered: English and, where written, Chinese (either may be
    missing: the page shows the other, marked as such)."""

    en: Markup | None
    zh: Markup | None = None


@dataclass(frozen=True)
class Link:
    """Something that may link: `href` None means plain text (an unresolved name)."""

    label: str | Label
    href: str | None = None
    title: str | Msg = ""


@dataclass(frozen=True)
class XRef:
    """One entry in a function's caller/callee/launch list: the other function, once, with
    the lines where the calls are (the first few; `more_sites` counts the rest)."""

    target: Link  # the other function (its definition where resolved)
    kind: str  # "call" | "launch"
    sites: tuple[Link, ...]  # call sites, "L123" / "file.cuh:123", linking to the line
    more_sites: int = 0


@dataclass(frozen=True)
class MarkCheck:
    """What the compiler made of a detected fact: the sign beside its marker, and why."""

    state: str  # "ok" (confirmed) | "near" (only on a neighbouring line) | "no" (not confirmed) | "none" (no code)
    sign: str  # ✓ ≈ ✗ ∅
    title: Msg


class MarkBody:
    """What a marker expands into (a button on the line toggles it): `macro` names its macro in
    templates/panels.html.jinja2, as a panel's does."""

    macro: ClassVar[str] = ""


@dataclass(frozen=True)
class Mark:
    """A small marker at the end of a source line. Marks come from several sources, each a
    function in `site_builder.file_pages.MARK_SOURCES` (the index's memory facts, the SASS a
    line compiled to, its profile); a new source adds marks without touching the page model or
    the templates."""

    source: str  # the source that made it ("fact", "sass", "profile")
    kind: str  # the source's own category (a fact kind, an opcode family)
    line: int
    abbr: str  # the short label on the marker
    css: str  # its colour class
    detail: str | Msg  # what it stands for (the hover text): data, or words in both languages
    check: MarkCheck | None = None  # a fact the compiler confirmed (or not)
    body: MarkBody | None = None  # drawn as a button that shows this under the line
    bar: int = 0  # a small bar in the marker, 0-100 (a profile's share of samples)


@dataclass(frozen=True)
class LegendEntry:
    kind: str
    css: str
    abbr: str
    label: str | Msg
    count: int


@dataclass(frozen=True)
class Legend:
    """The key to one source's marks, at the top of the page."""

    source: str
    title: Msg
    entries: tuple[LegendEntry, ...]


# ---- what a compiled line expands into (site_builder.file_pages: the "sass" and "profile" marks)


@dataclass(frozen=True)
class CompiledRef:
    """An instantiation whose SASS, or a profiled launch whose counters, the page's line markers
    show; listed once at the top of the page and referred to by number from the markers."""

    ref: str  # "1" (SASS) or "P1" (a profile)
    kernel: Link  # the harness, linking to its runs page
    arch: str  # "90" ("" for a profile)
    function: str  # the instantiation's (launched kernel's) short name
    shape: str = ""  # a profile's shape
    device: str = ""
    current: bool = True  # a profile measured on the build whose SASS the page shows


@dataclass(frozen=True)
class SassBlock:
    """One featured instantiation's code on one line, at one arch."""

    ref: str  # CompiledRef.ref of the instantiation
    arch: str  # "90"
    counts: str  # "FFMA.FTZ×192 LDS.128×8"
    via: str  # what the calls on the line brought in, inlined ("" when nothing)
    sass: tuple[str, ...]  # "ADDR OPCODE OPERANDS", the first MAX_SASS_LINES
    more: int  # instructions not listed


@dataclass(frozen=True)
class SassBody(MarkBody):
    macro: ClassVar[str] = "sass_body"
    blocks: tuple[SassBlock, ...]
    command: str  # the command that prints every instruction of the line


@dataclass(frozen=True)
class StallView:
    reason: str | Msg
    samples: int
    percent: int  # of the line's samples


@dataclass(frozen=True)
class ProfileView:
    """One profiled launch's counters on one line."""

    ref: str  # CompiledRef.ref of the launch
    current: bool  # measured on the build whose SASS the page shows
    samples: int  # warp samples at the line
    share: str  # of the launch's samples, "37.2%"
    percent: int  # the same, rounded (the bar's width)
    stalls: tuple[StallView, ...]  # by samples, the largest first
    instructions: str  # warp instructions executed
    extras: tuple[Msg, ...]  # excess L2 sectors, bank conflicts, divergent branches, where non-zero


@dataclass(frozen=True)
class ProfileBody(MarkBody):
    macro: ClassVar[str] = "profile_body"
    entries: tuple[ProfileView, ...]


@dataclass(frozen=True)
class MemoryView:
    what: TextView | None
    path: str
    how: TextView | None


@dataclass(frozen=True)
class CallNote:
    callee: Link
    text: TextView | None


# ---- panels: what is drawn around a definition ------------------------------------------------
# A definition (today a function) carries two lists of small typed panels: `head`, under its
# heading, and `aside`, in the notes column. Each panel type names the macro that draws it in
# templates/panels.html.jinja2; sources (site_builder.file_pages.PANEL_SOURCES) make them. A new
# kind of panel is a dataclass here, a macro there and a source function: the page loop, the
# section layout and the other panels stay as they are.


class Panel:
    """Base of every panel: `macro` names its macro, `place` is "head" or "aside"; the
    dataclasses below add `order` (position among the panels of that place) and their data."""

    macro: ClassVar[str] = ""
    place: ClassVar[str] = "aside"


@dataclass(frozen=True)
class TextPanel(Panel):
    """A titled piece of the reviewer's text (summary, decomposition, ...)."""

    macro: ClassVar[str] = "text_panel"
    order: int
    title: Msg
    text: TextView


@dataclass(frozen=True)
class MemoryPanel(Panel):
    macro: ClassVar[str] = "memory_panel"
    order: int
    items: tuple[MemoryView, ...]


@dataclass(frozen=True)
class CallNotesPanel(Panel):
    macro: ClassVar[str] = "calls_panel"
    order: int
    calls: tuple[CallNote, ...]


@dataclass(frozen=True)
class MarkListPanel(Panel):
    """A definition's marks of one source, listed, each linking to its line."""

    macro: ClassVar[str] = "marks_panel"
    order: int
    title: Msg
    marks: tuple[Mark, ...]


@dataclass(frozen=True)
class NoteLinksPanel(Panel):
    """Where the note leads: course steps and the runnable harness."""

    macro: ClassVar[str] = "links_panel"
    order: int
    courses: tuple[Link, ...]
    harness: Link | None  # the runs page of the kernel named by `harness:` (plain text if none)


@dataclass(frozen=True)
class UsesPanel(Panel):
    """The annotated types and macros a function uses, each linking to its note."""

    macro: ClassVar[str] = "uses_panel"
    place: ClassVar[str] = "head"
    order: int
    uses: tuple[tuple[Link, Msg], ...]  # (the type or macro, its kind in words)


@dataclass(frozen=True)
class UsersPanel(Panel):
    """Who uses a type, or invokes a macro: functions, with the line of the first use."""

    macro: ClassVar[str] = "users_panel"
    order: int
    title: Msg
    users: tuple[XRef, ...]
    more: int  # users not listed


@dataclass(frozen=True)
class ResourceRow:
    """One instantiation of a kernel as ptxas compiled it (a SASS record's function)."""

    kernel: Link  # the harness, linking to its runs page
    arch: str
    function: str  # short name
    registers: str
    smem: str  # static shared memory, bytes
    stack: str
    spills: str  # "0 / 0" stores / loads, bytes
    instructions: str
    mix: str  # the named opcode families, with counts
    featured: bool  # its per-line SASS is on the source pages


@dataclass(frozen=True)
class ResourcesPanel(Panel):
    """What a kernel compiled to: registers, shared memory, spills, instruction mix, per arch."""

    macro: ClassVar[str] = "resources_panel"
    place: ClassVar[str] = "head"
    order: int
    summary: Msg
    rows: tuple[ResourceRow, ...]  # the featured instantiations (their lines carry the SASS)
    total: int  # every instantiation (the runs page lists them)


@dataclass(frozen=True)
class NoteView:
    """The state of a reviewer's annotation of one definition (its text is in the panels)."""

    status: str  # "ok" | "stale" | ...
    status_message: Msg | str  # why it is not ok ("" when ok)

    @property
    def stale(self) -> bool:
        return self.status == "stale"


@dataclass(frozen=True)
class MemberNoteView:
    """A type's note on one member, beside the member's line."""

    name: str
    text: TextView


@dataclass(frozen=True)
class InlineNoteView:
    line: int
    end_line: int  # last line the anchor text covers
    at: str
    text: TextView | None  # None: only member notes at this line
    stale: bool = False
    members: tuple[MemberNoteView, ...] = ()  # a type's members declared on this line


@dataclass(frozen=True)
class GraphNode:
    label: str
    title: str
    href: str | None
    role: str  # "self" | "caller" | "callee" | "more"
    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True)
class GraphEdge:
    d: str  # SVG path data
    kind: str  # "call" | "launch"


@dataclass(frozen=True)
class CallGraph:
    width: float
    height: float
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]


@dataclass(frozen=True)
class XRefPanel(Panel):
    """Callers, calls and launches of a function (folded unless it is annotated)."""

    macro: ClassVar[str] = "xrefs_panel"
    place: ClassVar[str] = "head"
    order: int
    callers: tuple[XRef, ...]
    callees: tuple[XRef, ...]
    launches: tuple[XRef, ...]
    more_callers: int  # callers not listed (a helper with hundreds of callers lists a few)
    open: bool

    @property
    def caller_count(self) -> int:
        return len(self.callers) + self.more_callers


@dataclass(frozen=True)
class GraphPanel(Panel):
    macro: ClassVar[str] = "graph_panel"
    place: ClassVar[str] = "head"
    order: int
    graph: CallGraph


@dataclass(frozen=True)
class DefinitionView:
    """One definition of the file with everything drawn around it: a function, or an annotated
    type or macro (`what`)."""

    key: str  # Symbol.key, TypeDef.key or MacroDef.key
    anchor: str  # names.symbol_anchor(key), names.type_anchor(key), names.macro_anchor(key)
    name: str
    qualified_name: str
    kind: str
    kind_label: Msg | str  # the kind in words
    signature: str
    start_line: int
    end_line: int
    source_url: str
    note: NoteView | None  # a reviewer annotated it
    harnesses: tuple[Link, ...]  # runs pages of the harness kernels whose spec names it
    head: tuple[Panel, ...]  # under the heading, by order
    aside: tuple[Panel, ...]  # in the notes column, by order
    marks: tuple[Mark, ...]  # its lines' marks, every source
    inline_notes: tuple[InlineNoteView, ...]
    what: str = "function"  # "function" | "type" | "macro"

    @property
    def annotated(self) -> bool:
        return self.note is not None

    @property
    def has_aside(self) -> bool:
        return self.note is not None or bool(self.aside)


@dataclass(frozen=True)
class CodeLink:
    """A call in the code that links to the callee's definition."""

    line: int
    column: int  # 0-based, in bytes (tree-sitter's column), of the callee's name
    name: str  # the identifier expected at that column
    href: str
    title: str


@dataclass(frozen=True)
class Crumb:
    label: str
    href: str | None


@dataclass(frozen=True)
class FilePlan:
    """Everything about one source page except its text (built in the main process)."""

    page: str
    root: str  # relative path back to the site root
    upstream: str
    upstream_title: str
    path: str
    language: str | None
    source_url: str
    commit: str
    crumbs: tuple[Crumb, ...]
    overview: TextView | None
    functions: tuple[DefinitionView, ...]  # by start line
    links: tuple[CodeLink, ...]
    marks: tuple[Mark, ...]  # every line mark of the file, by line
    legends: tuple[Legend, ...]  # one per mark source that has marks here
    diagnostics: tuple[str, ...]
    compiled_refs: tuple[CompiledRef, ...] = ()  # the instantiations and launches the markers refer to


@dataclass(frozen=True)
class CodeLine:
    no: int
    pieces: tuple[Piece, ...]
    marks: tuple[Mark, ...]
    noted: bool  # an inline note is anchored here


@dataclass(frozen=True)
class Row:
    """Consecutive code lines with at most one note beside them (the note's line first)."""

    note: InlineNoteView | None
    lines: tuple[CodeLine, ...]

    @property
    def first(self) -> int:
        return self.lines[0].no if self.lines else 0


@dataclass(frozen=True)
class Section:
    """A run of lines owned by one function (its innermost enclosing one) or by none.

    `head` is True on the section that starts the function: it carries the heading,
    the function-level notes and the call graph.
    """

    function: DefinitionView | None
    head: bool
    rows: tuple[Row, ...]
    extra_anchors: tuple[str, ...] = ()  # functions that start here but own no line of their own

    @property
    def lead_rows(self) -> int:
        """Rows before the first one that carries an in-body note."""
        for i, r in enumerate(self.rows):
            if r.note is not None:
                return i
        return len(self.rows)


@dataclass(frozen=True)
class FilePage:
    plan: FilePlan
    sections: tuple[Section, ...]
    line_count: int

    @property
    def root(self) -> str:
        return self.plan.root


@dataclass(frozen=True)
class FileRow:
    path: str
    href: str
    lines: int
    functions: int
    annotated: int
    stale: int


@dataclass(frozen=True)
class Coverage:
    functions: int
    annotated: int
    stale: int

    @property
    def percent(self) -> float:
        return 100.0 * self.annotated / self.functions if self.functions else 0.0


@dataclass(frozen=True)
class UpstreamView:
    name: str
    anchor: str
    title: str
    tag: str
    commit: str
    commit_url: str
    render: tuple[str, ...]
    coverage: Coverage
    files: tuple[FileRow, ...]


@dataclass(frozen=True)
class CourseStepView:
    number: int
    id: str
    anchor: str
    title: str | Label
    text: TextView | None
    refs: tuple[Link, ...]
    href: str  # its own page
    exercises: int  # questions + homework + checkpoints on that page


@dataclass(frozen=True)
class ReadingItem:
    link: Link  # the file's page or the function's heading
    annotated: bool  # a reviewer's note waits there


@dataclass(frozen=True)
class QuestionView:
    number: int
    anchor: str
    question: TextView | None
    answer: TextView | None
    cites: tuple[Link, ...]  # the code the answer rests on, linked to its lines or definition


@dataclass(frozen=True)
class CheckpointView:
    key: str  # names.tick_key: where the browser keeps the tick
    text: TextView | None


@dataclass(frozen=True)
class StepPage:
    """One step of a course: what it is for, what to read in order, what to run, what to do."""

    page: str
    root: str
    course: Link  # the course page, at this step
    number: int
    id: str
    title: str | Label
    text: TextView | None
    goals: tuple[TextView | None, ...]
    reading: tuple[ReadingItem, ...]
    harness: Link | None  # the runnable kernel's runs page
    traces: tuple[Link, ...]  # the traced entry points this step asks to follow
    questions: tuple[QuestionView, ...]
    homework: tuple[TextView | None, ...]
    checkpoints: tuple[CheckpointView, ...]
    prev: Link | None
    next: Link | None


@dataclass(frozen=True)
class CourseView:
    id: str
    page: str
    title: str | Label
    text: TextView | None
    steps: tuple[CourseStepView, ...]


@dataclass(frozen=True)
class CourseLink:
    title: str | Label
    href: str
    steps: int


@dataclass(frozen=True)
class RunnableRow:
    """One record on the home page's "Runnable kernels" table (its headline timing)."""

    kernel: Link
    device: str | Msg
    local: bool
    shape: str  # the headline (first) timing shape
    time_us: str
    pct_peak: str
    torch_us: str
    passed: bool


@dataclass(frozen=True)
class IndexPage:
    page: str
    root: str
    upstreams: tuple[UpstreamView, ...]
    courses: tuple[CourseLink, ...]
    diagnostics: tuple[str, ...]
    runs: tuple[RunnableRow, ...] = ()
    runs_anchor: str = ""  # names.runnable_anchor()
    traces: tuple[Link, ...] = ()  # the traced entry points' pages
    traces_anchor: str = ""  # names.traces_anchor()


@dataclass(frozen=True)
class ErrorPage:
    page: str
    root: str


@dataclass(frozen=True)
class CoursePage:
    page: str
    root: str
    course: CourseView


# ---- harness results (runs/<kernel>.html) ---------------------------------------------------
# Every value below comes from a run record (data): numbers are formatted to text in
# site_builder.run_views and the templates escape all of it.


@dataclass(frozen=True)
class CheckView:
    """One check shape of a record: its trials folded together (worst error over trials/outputs)."""

    shape: str
    params: str  # "dtype=float16 batch=1 d=128"
    trials: int
    rel_l2: str
    max_abs: str
    tolerance: str | Msg  # "rel L2 ≤ 2e-03, max abs ≤ 1e-02"
    passed: bool
    problem: str | Msg  # "" when passed; else the error or the worst element


@dataclass(frozen=True)
class TimingView:
    shape: str
    params: str
    median_us: str
    p10_us: str
    p90_us: str
    rate: str  # "2035 GB/s" or "512.3 TFLOP/s"
    pct_peak: str
    torch_us: str
    speedup: str  # PyTorch time / kernel time ("1.42×")
    passed: bool


@dataclass(frozen=True)
class RecordView:
    number: int
    anchor: str
    local: bool
    source: Msg  # "committed: vendor_kernels/results/nvidia-h200/rmsnorm.json" / "local: <cache path>"
    device: str | Msg
    capability: str
    driver: str
    torch: str
    cuda: str
    date: str
    seed: str
    command: str
    passed: bool
    fatal: str
    copy_peak: str  # measured device-to-device copy, GB/s
    matmul_peak: str  # measured bf16 matmul, TFLOP/s
    bound: Msg  # which peak the % uses, in words
    pins: tuple[tuple[str, str], ...]  # (upstream, commit)
    checks: tuple[CheckView, ...]
    timings: tuple[TimingView, ...]
    compile_s: str
    cache_hit: str | Msg  # yes | no | "—"
    load_s: str
    arch: str


@dataclass(frozen=True)
class RunsView:
    kernel: str
    title: str
    upstream: str
    symbols: tuple[Link, ...]
    launchers: tuple[Link, ...]
    command: str
    baseline: str
    notes: str
    bound: str
    dtypes: tuple[str, ...]
    spec_path: str  # relative to the repository
    records: tuple[RecordView, ...]
    problems: tuple[str, ...]
    identity: tuple["IdentityView", ...] = ()  # one card per arch
    compiled: tuple[ResourceRow, ...] = ()  # every instantiation in the SASS records, newest arch first
    compiled_files: tuple[Link, ...] = ()  # the source pages showing its per-line SASS
    profiles: tuple["ProfileRun", ...] = ()


# ---- the compiled view on a runs page (vendor_kernels/results/identity, sass, profiles)


@dataclass(frozen=True)
class IdentityKernelView:
    function: str  # short name
    status: str  # identical | different | missing (data: a card may say something else)
    status_label: str | Msg
    instructions: str
    upstream_instructions: str
    differing: str
    diff: tuple[str, ...]  # the first differing lines, "-harness" / "+upstream"
    closest: str  # missing: upstream's nearest instantiation


@dataclass(frozen=True)
class IdentityView:
    """The identity card of one arch: upstream's own build of the same kernels, compared."""

    arch: str
    upstream_arch: str
    nvcc: str
    verdict: str
    verdict_label: str | Msg
    summary: Msg  # how many of the kernels compared are identical
    route: str
    notes: str
    only_harness: tuple[str, ...]
    only_upstream: tuple[str, ...]
    upstream_sources: tuple[str, ...]
    upstream_kernels: int
    kernels: tuple[IdentityKernelView, ...]


@dataclass(frozen=True)
class ProfileRun:
    """A committed per-line profile of one shape."""

    shape: str
    device: str
    current: bool
    kernels: tuple[str, ...]  # the launched kernels' short names
    samples: str


@dataclass(frozen=True)
class RunsPage:
    page: str
    root: str
    home: str  # the home page's "Runnable kernels" section
    runs: RunsView


# ---- cross-language traces (traces/<entry>.html; site_builder.site_pages.trace_page) ---------------


@dataclass(frozen=True)
class TracePathPanel(Panel):
    """The traced entry points whose chains pass through a function, each linking to its trace."""

    macro: ClassVar[str] = "trace_path_panel"
    place: ClassVar[str] = "head"
    order: int
    entries: tuple[Link, ...]


@dataclass(frozen=True)
class GuardView:
    """A condition a hop is taken under, as written, and whether the example parameters decide it."""

    text: str
    where: Link  # file:line of the condition
    decided: bool  # False: the parameters leave it open, both ways are on the page
    note: str  # what it means at run time (the rules' words), "" when none


@dataclass(frozen=True)
class DispatchView:
    macro: str
    defined: Link  # where the #define is (a .jinja template when generated at JIT time)
    branches: int  # still possible
    total: int
    generated: bool


@dataclass(frozen=True)
class HopView:
    kind: str
    kind_label: str | Msg
    where: Link  # file:line of the code that makes the hop, linking to its line
    target: Link  # the function it reaches (plain text for a compiled module)
    written: str  # that code
    guards: tuple[GuardView, ...]
    dispatch: tuple[DispatchView, ...]
    detail: str  # the trace's own words (data)
    binds: str  # template arguments it binds, "T=cutlass::half_t, Is_causal=true"


@dataclass(frozen=True)
class TraceNode:
    """A hop on one or more chains: chains that share their first hops share the nodes (a tree)."""

    hop: HopView
    children: tuple["TraceNode", ...]
    kernel: Link | None = None  # a chain ends here, at this kernel
    runs: tuple[Link, ...] = ()  # the harnesses that run that kernel


@dataclass(frozen=True)
class DeadEndView:
    reason: str
    hops: tuple[HopView, ...]


@dataclass(frozen=True)
class TracePage:
    page: str
    root: str
    entry: str  # "flash_attn.flash_attn_func"
    entry_link: Link  # its definition
    when: tuple[tuple[str, str], ...]  # the example parameters (`annotate trace --when`)
    command: str  # the command that prints the same trace
    steps: tuple[Link, ...]  # course steps that ask for it
    roots: tuple[TraceNode, ...]
    chains: int
    kernels: tuple[Link, ...]
    undecided: tuple[GuardView, ...]
    dead_ends: tuple[DeadEndView, ...]
    truncated: bool

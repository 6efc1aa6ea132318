"""`build_site(project, out)`: a Project's index and annotations -> page model -> HTML.

The stages before the site (pins, fetch, index, notes) are chained by annotate.project; this
module only asks the Project for what it needs, as late as it can. Incremental by construction:
- a *stamp* made from file stats alone (pins, fetch records, the checkouts' files, annotation
  files, harness specs and records, the code of the stages) answers "nothing changed" without
  loading anything (the no-op rebuild). It has two parts, the annotation files and everything
  else (`InputStamp`);
- when only annotation files changed and the notes' *global* facts did not (which definitions
  are annotated and in what state, every problem, the course maps: `notes_global`), nor the
  index (its key, as the manifest has it: `annotate serve` holds one loaded), only the
  pages of the annotation files whose content changed can differ, and the search index. That
  build (`_notes_build`) asks the index about those files only, through a lazy context, and
  keeps every other page and key as the last build left them;
- otherwise every source page gets a key: the index's key (all blob ids + the index code)
  and a digest of the notes shown on that page; only pages whose key changed are planned,
  highlighted and rendered (in parallel across cores when there are many). A page the last
  build did not leave is rendered at once, its key computed in the worker that renders it;
- highlighted tokens are cached by file content in `config.site_cache_dir()`, and so is the
  part of the search index that follows from the index alone;
- `output.write_outputs` rewrites only files whose bytes changed, writing pages as the workers
  finish them.

Nothing heavy is imported at module level: the no-op rebuild imports little beyond this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import annotate
from site_builder import names
from site_builder.output import Manifest, NotesState, WriteStats, prepare_out_dir, read_manifest, write_outputs

if TYPE_CHECKING:
    from annotate.config import Config
    from annotate.notes.model import AnnotationSet
    from annotate.project import Project
    from site_builder.context import SiteContext

# Bump when the page model changes in a way the templates' hash cannot see.
SITE_VERSION = "1"
DEFAULT_OUT = "_site"  # relative to the current directory (documented in docs/site.md)
PARALLEL_THRESHOLD = 8  # fewer pages than this are rendered in-process
SEARCH_CACHE = "search"  # <site cache>/search/<key>.json: the index's part of the search index


@dataclass(frozen=True)
class BuildReport:
    out_dir: Path
    noop: bool  # the stamp matched: nothing was loaded or written
    pages_total: int
    pages_rendered: int
    source_bytes: int  # bytes of source text rendered in this build
    stats: WriteStats | None
    seconds: float
    timings: tuple[tuple[str, float], ...] = ()
    annotation_errors: int = 0  # errors in the annotation files (shown on the home page)
    notes_only: bool = False  # only annotation files had changed: their pages were rendered (_notes_build)


def default_out_dir() -> Path:
    return Path.cwd() / DEFAULT_OUT


def build_site(project: Project, out_dir: Path | str | None = None, *, jobs: int | None = None,
               force: bool = False) -> BuildReport:
    """Build (or bring up to date) the static site in `out_dir` and say what was done.

    The output directory is checked first (annotate.site_builder.output.prepare_out_dir), before
    anything is loaded. A Project that already holds an index (`annotate serve`, tests) is never
    answered from the stamp: its annotations may differ from the files on disk. What the site
    derives from the index alone is kept in the index (`Index.memo`) across builds with one
    index (`annotate serve`).
    """
    t0 = time.perf_counter()
    clock = _Clock()
    out = prepare_out_dir(out_dir if out_dir is not None else default_out_dir(), force)
    config, pins = project.config, dict(project.selected)
    previous = read_manifest(out)
    live = project.loaded("index")
    stamp = input_parts(config, pins, project.annotations_dir)
    if not live and previous.stamp == stamp.digest and _outputs_present(out, previous):
        n_src = sum(1 for p in previous.pages if names.is_source_page(p))
        return BuildReport(out, True, n_src, 0, 0, None, time.perf_counter() - t0)
    # only annotation files changed: a build that renders their pages (also for `annotate serve`,
    # whose index is loaded: _notes_build takes it only when it is the one the last build used)
    if previous.base == stamp.base and previous.notes.pages and _outputs_present(out, previous):
        report = _notes_build(project, out, previous, stamp, clock, t0)
        if report is not None:
            return report

    index = project.index  # fetches the pins first when the project says so
    traced = lambda: None  # noqa: E731
    if not live:
        # a fetch just now changed the records the stamp reads: take it again, or the next
        # build would not be recognised as a no-op
        stamp = input_parts(config, pins, project.annotations_dir)
        from site_builder.traces import start_traces

        traced = start_traces(project)  # in a second process, while this one reads the notes
    clock.lap("index")
    annotations = project.annotations
    clock.lap("annotations")
    from site_builder.context import site_context

    traced()
    ctx = site_context(project)
    clock.lap("context")
    keys, todo, unkeyed = _source_keys(ctx, previous, out)
    clock.lap("keys")
    if len(todo) >= PARALLEL_THRESHOLD:
        project.reporter.say(f"annotate: rendering {len(todo)} of {len(keys) + len(unkeyed)} source pages into {out}")
    job = _SourceJob(ctx, config.site_cache_dir() / "tokens", _tkey(), index_key(ctx), frozenset(unkeyed))
    line_counts = {(u, p): previous.lines.get(names.source_page(u, p), 0) for (u, p) in ctx.rendered}
    done = _Done()
    files = _outputs(job, todo, jobs, keys, line_counts, done,
                     lambda files: _other_pages(ctx, line_counts, previous, out, keys, files, config), clock)
    stats = write_outputs(out, files, lambda: Manifest(
        stamp=stamp.digest, pages=keys, lines={names.source_page(u, p): n for (u, p), n in line_counts.items()},
        outputs=sorted(set(keys) | {names.asset_path(n) for n in _assets()}), base=stamp.base,
        notes=notes_state(ctx, annotations, compiled_pages(ctx))), previous)
    clock.lap("write")
    return BuildReport(out, False, len(ctx.rendered), done.pages, done.bytes, stats, time.perf_counter() - t0,
                       tuple(clock.laps), len(annotations.errors))


# ---- what must be rendered ------------------------------------------------------------------

def _source_keys(ctx: SiteContext, previous: Manifest, out: Path) -> tuple[dict[str, str], list, list]:
    """(the key of every source page whose output the last build left, the (upstream, path) of
    the pages to render, those of them whose key the worker computes): a page the last build
    did not leave is rendered whatever its key, so its key is not computed here."""
    ikey, tkey = index_key(ctx), _tkey()
    keys: dict[str, str] = {}
    todo: list[tuple[str, str]] = []
    unkeyed: list[tuple[str, str]] = []
    for (up, path) in ctx.rendered:
        page = names.source_page(up, path)
        if page not in previous.pages or not (out / page).is_file():
            todo.append((up, path))
            unkeyed.append((up, path))
            continue
        keys[page] = source_page_key(ctx, tkey, ikey, up, path)
        if previous.pages[page] != keys[page]:
            todo.append((up, path))
    return keys, todo, unkeyed


def source_page_key(ctx: SiteContext, tkey: str, ikey: str, up: str, path: str, scope=None) -> str:
    from site_builder.file_pages import note_digest

    return _page_key(tkey, ikey, note_digest(ctx, up, path, scope))


def _tkey() -> str:
    from site_builder import render

    return render.templates_key(names.SOURCE_DIR) + code_key()


def _assets() -> dict[str, bytes]:
    from site_builder import render

    return render.asset_files()


def _other_pages(ctx: SiteContext, line_counts, previous: Manifest, out: Path, keys: dict, files: dict,
                 config: Config) -> None:
    """The course pages, runs pages, search index and assets into `files` (their keys into
    `keys`), then, when resumed once the source pages are rendered (a generator: `line_counts`
    is complete only then), the home page, which shows them. Models are cheap, rendering less
    so: each page is rendered only when the repr of its model (its key) changed."""
    from site_builder import render, run_views, site_pages

    def other(page: str, model_key: str, make) -> None:
        keys[page] = _page_key(render.templates_key(page) + code_key(), model_key, "")
        if previous.pages.get(page) != keys[page] or not (out / page).is_file():
            files[page] = make()

    for course in ctx.courses.values():
        cp = site_pages.course_page(ctx, course)
        other(cp.page, _digest(repr(cp)), lambda cp=cp: render.render_course(cp))
        for i in range(len(course.steps)):
            sp = site_pages.step_page(ctx, course, i)
            other(sp.page, _digest(repr(sp)), lambda sp=sp: render.render_step(sp))
    # Harness results: a page per catalog kernel; its model holds the records' content, so
    # a new or changed record renders exactly that runs page and the home page.
    for kr in ctx.runs:
        rp = run_views.runs_page(ctx, kr)
        other(rp.page, _digest(repr(rp)), lambda rp=rp: render.render_runs(rp))
    for td in ctx.traces:  # a page per traced entry point, keyed by its model like the runs pages
        tp = site_pages.trace_page(ctx, td)
        other(tp.page, _digest(repr(tp)), lambda tp=tp: render.render_trace(tp))
    error = site_pages.error_page()
    other(error.page, _digest(repr(error)), lambda: render.render_error(error))
    ikey = index_key(ctx)
    other(names.SEARCH_INDEX, ikey, lambda: render.render_search_index(_search_base(ctx, config, ikey)))
    notes_js = render.render_search_notes(site_pages.search_notes(_search_rows(ctx, config, ikey), ctx))
    other(names.SEARCH_NOTES, _digest(notes_js), lambda: notes_js)
    for name, data in render.asset_files().items():
        files[names.asset_path(name)] = data
    yield  # the source pages are rendered: their line counts are in
    home = site_pages.index_page(ctx, line_counts)
    other(names.INDEX_PAGE, _digest(repr(home)), lambda: render.render_index(home))


def _search_base(ctx: SiteContext, config: Config, ikey: str) -> dict:
    """The index's part of the search index (site_pages.search_base), from the site cache or made
    now and cached (its `keys` are cached in a file of their own by `_search_rows`)."""
    from annotate.atomic import write_atomic
    from site_builder import site_pages

    path = _search_cache(config, ikey)
    try:
        got = site_pages.checked_search_base(json.loads(path.read_bytes()))
    except (OSError, ValueError):
        got = None
    if got is not None:
        return got
    got = site_pages.search_base(ctx)
    try:
        write_atomic(path, json.dumps(got, ensure_ascii=False, separators=(",", ":")))
        for old in path.parent.iterdir():  # one index at a time: the others' go
            if old.stem != path.stem:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only cache only costs speed
    return got


def _cache_search_keys(config: Config, ikey: str, keys: list) -> None:
    from annotate.atomic import write_atomic

    try:
        write_atomic(_search_cache(config, ikey).with_suffix(".keys"),
                     json.dumps(keys, ensure_ascii=False, separators=(",", ":")))
    except OSError:
        pass  # a read-only cache only costs speed


def _search_rows(ctx: SiteContext, config: Config, ikey: str, make: bool = True) -> dict | None:
    """(kind, key) -> row of the index's part of the search index (site_pages.search_rows): from
    the cached keys alone (a note edit reads nothing else of it), else from `_search_base`; None
    when they are not cached and `make` is False."""
    from site_builder import site_pages

    try:
        keys = site_pages.checked_search_keys(json.loads(_search_cache(config, ikey).with_suffix(".keys").read_bytes()))
    except (OSError, ValueError):
        keys = None
    if keys is None:  # absent or damaged
        if not make:
            return None
        keys = _search_base(ctx, config, ikey)["keys"]
        _cache_search_keys(config, ikey, keys)
    return site_pages.search_rows(keys)


def _search_cache(config: Config, ikey: str) -> Path:
    # keyed by the index and by the code naming pages and anchors
    return config.site_cache_dir() / SEARCH_CACHE / f"{_digest(ikey + code_key())}.json"


# ---- a build after annotation files alone changed ----------------------------------------

def notes_global(ctx: SiteContext, annotations: AnnotationSet) -> str:
    """What pages beyond those of an annotation file read from the annotations: which rendered
    definitions carry a note and in what state (call graphs, coverage, reading lists, the search
    index's flags), which types and macros do (lists of uses on other pages), every problem
    (home page, per-file lists), the course maps (course and step pages, course links in notes).
    A page kind that shows more of the notes than this must add it here, or a note edit would
    leave it stale (tests/test_site_build.py compares such a build with a fresh one)."""
    others = sorted((n.kind, n.definition.key, n.status) for n in (*annotations.types(), *annotations.macros())
                    if n.definition is not None)
    parts = [repr(sorted((k, n.status) for k, n in ctx.notes.items())), repr(others), repr(ctx.diagnostics),
             repr(tuple(ctx.courses.values())), repr(list(ctx.rendered))]  # an annotation file may add a page
    return _digest("\n".join(parts))


def compiled_pages(ctx: SiteContext) -> dict[str, tuple[str, ...]]:
    """Source page -> the harnesses whose committed records name its file (what `_notes_build`
    reads of them)."""
    from site_builder.compiled import kernels_by_file

    return {names.source_page(*fk): ks for fk, ks in kernels_by_file(ctx.compiled).items() if fk in ctx.rendered}


def notes_state(ctx: SiteContext, annotations: AnnotationSet,
                compiled: dict[str, tuple[str, ...]] | None = None) -> NotesState:
    """The manifest's record of the notes: `notes_global`, and per annotation file a digest of
    its content and the source pages it reaches (its file's, its notes' definitions', its
    problems'); `compiled`, what the pages read of the committed records; the index's key."""
    from site_builder.context import diagnostic_target

    pages: dict[str, tuple[str, tuple[str, ...]]] = {}
    ups = list(ctx.upstreams)
    for af in annotations.files:
        reach = set()
        if af.upstream and af.path and (af.upstream, af.path) in ctx.rendered:
            reach.add(names.source_page(af.upstream, af.path))
        for note in (*af.functions, *af.types, *af.macros):
            s = note.definition
            if s is not None and (s.upstream, s.path) in ctx.rendered:
                reach.add(names.source_page(s.upstream, s.path))
        for d in af.diagnostics:
            where = diagnostic_target(d, ctx.rendered, ups)
            if where:
                reach.add(names.source_page(*where))
        pages[af.file] = (_digest(repr(af)), tuple(sorted(reach)))
    return NotesState(notes_global(ctx, annotations), pages, compiled, index_key(ctx))


def _notes_build(project: Project, out: Path, previous: Manifest, stamp: InputStamp, clock: _Clock,
                 t0: float) -> BuildReport | None:
    """Only annotation files changed (by the stamp): when the notes' global facts are as the last
    build left them, render the pages of the annotation files whose content changed (as they
    were and as they are) and the search index, with a context that asks the index about those
    files only. None when that does not hold (the caller builds the usual way)."""
    from site_builder import render, site_pages
    from site_builder.context import site_context

    config = project.config
    annotations = project.annotations  # opens the index (reading no file of it)
    clock.lap("annotations")
    # the records are as the last build read them (the stamp's other part is unchanged): a page
    # reads only the harnesses it read then
    ctx = site_context(project, lazy=True, kernels_of=previous.notes.compiled)
    state = notes_state(ctx, annotations, previous.notes.compiled)
    if state.global_digest != previous.notes.global_digest or state.index != previous.notes.index:
        return None
    clock.lap("context")
    changed: set[str] = set()  # the source pages of files whose content changed, then and now
    for f in set(state.pages) | set(previous.notes.pages):
        now, before = state.pages.get(f), previous.notes.pages.get(f)
        if now is None or before is None or now[0] != before[0]:
            for got in (now, before):
                changed.update(got[1] if got is not None else ())
    ikey, tkey = index_key(ctx), _tkey()
    keys = dict(previous.pages)
    pages_of = {names.source_page(u, p): (u, p) for (u, p) in ctx.rendered}
    todo = []
    for page in sorted(pg for pg in changed if pg in pages_of):
        keys[page] = source_page_key(ctx, tkey, ikey, *pages_of[page])
        if keys[page] != previous.pages.get(page):
            todo.append(pages_of[page])
    clock.lap("keys")
    files: dict[str, str | bytes] = {}
    src_bytes = 0
    job = _SourceJob(ctx, config.site_cache_dir() / "tokens", tkey, ikey, frozenset())
    for item in todo:
        page, html, _n, _key, nbytes = render_source_page(item, job)
        files[page] = html
        src_bytes += nbytes
    clock.lap("render sources")
    rows = _search_rows(ctx, config, ikey, make=False)
    if rows is None:
        return None
    notes_js = render.render_search_notes(site_pages.search_notes(rows, ctx))
    search_key = _page_key(render.templates_key(names.SEARCH_NOTES) + code_key(), _digest(notes_js), "")
    if search_key != previous.pages.get(names.SEARCH_NOTES):
        files[names.SEARCH_NOTES] = notes_js
        keys[names.SEARCH_NOTES] = search_key
    clock.lap("other pages")
    manifest = Manifest(stamp=stamp.digest, pages=keys, lines=previous.lines, outputs=previous.outputs,
                        base=stamp.base, notes=state)
    stats = write_outputs(out, files, lambda: manifest, previous)
    clock.lap("write")
    n_src = sum(1 for p in keys if names.is_source_page(p))
    return BuildReport(out, False, n_src, len(todo), src_bytes, stats, time.perf_counter() - t0, tuple(clock.laps),
                       len(annotations.errors), notes_only=True)


# ---- inputs ------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputStamp:
    """File stats that change whenever a build could produce other output: the annotation
    files (path under the annotations root -> size and time), and a digest of everything else."""

    base: str
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        h = hashlib.sha256(f"{self.base}\n".encode())
        for k in sorted(self.notes):
            h.update(f"{k}\0{self.notes[k]}\n".encode("utf-8", "surrogateescape"))
        return h.hexdigest()[:32]


def input_stamp(config: Config, pins: dict) -> str:
    """A digest of file *stats* that changes whenever a build could produce other output."""
    return input_parts(config, pins).digest


def input_parts(config: Config, pins: dict, annotations_dir: Path | None = None) -> InputStamp:
    from annotate.fetch.verify import stat_digest
    from site_builder.runs import stat_paths

    h = hashlib.sha256(f"{SITE_VERSION}\0".encode())

    def stat(p: Path) -> None:
        try:
            st = p.stat()
            h.update(f"{p}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
        except OSError:
            h.update(f"{p}\0-\n".encode())

    for code_dir in (Path(__file__).parent, Path(annotate.__file__).parent):
        for p in sorted(code_dir.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                stat(p)
    stat(config.upstreams_file)
    for name, up in sorted(pins.items()):
        h.update(f"{name}\0{up.commit}\0{up.render}\n".encode())
        stat(config.fetch_record(name, up.commit))
        root = config.checkout_dir(name, up.commit)
        h.update(f"{root}\0{stat_digest(root, up.index_paths()) if root.is_dir() else '-'}\n".encode())
    for p in stat_paths(config):  # harness specs, committed and local run records
        stat(p)
    ann = annotations_dir or config.annotations_dir
    h.update(f"{ann}\n".encode())
    notes = {}
    # the files the notes stage reads (annotate.notes.api.annotation_paths: YAML files, course
    # maps included); an editor's swap file or a directory's time is no input
    if ann.is_dir():
        for p in sorted(ann.rglob("*")):
            if p.suffix in (".yaml", ".yml"):
                try:
                    st = p.stat()
                except OSError:
                    continue
                if os.path.isfile(p):
                    notes[p.relative_to(ann).as_posix()] = f"{st.st_mtime_ns}\0{st.st_size}"
    return InputStamp(h.hexdigest()[:32], notes)


def code_key() -> str:
    """Changes when the site builder's own code, queries or messages change (they shape every page)."""
    h = hashlib.sha256(SITE_VERSION.encode())
    here = Path(__file__).parent
    for p in sorted([*here.glob("*.py"), *here.glob("queries/*.scm"), *here.glob("*.yaml")]):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def index_key(ctx: SiteContext) -> str:
    """Changes when any indexed content or the set of rendered files changes."""
    h = hashlib.sha256(ctx.index.content_key().encode())
    for up, path in sorted(ctx.rendered):
        h.update(f"{up}\0{path}\n".encode())
    for name, up in sorted(ctx.upstreams.items()):
        h.update(f"{name}\0{up.commit}\0{up.web}\0{up.title}\n".encode())
    return h.hexdigest()[:32]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _page_key(tkey: str, ikey: str, digest: str) -> str:
    return hashlib.sha256(f"{SITE_VERSION}\0{tkey}\0{ikey}\0{digest}".encode()).hexdigest()[:32]


def _outputs_present(out: Path, m: Manifest) -> bool:
    base = str(out)
    return bool(m.outputs) and all(os.path.isfile(os.path.join(base, rel)) for rel in m.outputs)


# ---- rendering source pages (in worker processes) ---------------------------------------

@dataclass(frozen=True)
class _SourceJob:
    """What rendering a source page needs besides the page's name."""

    ctx: SiteContext
    token_cache: Path
    tkey: str  # templates and code (source pages)
    ikey: str  # index_key
    unkeyed: frozenset  # (upstream, path) whose page key the renderer computes


@dataclass
class _Done:
    pages: int = 0
    bytes: int = 0


# The job of the build in progress, for the workers: they are forked, so they inherit it
# (copy-on-write) instead of receiving pickled plans and source text.
_JOB: list[_SourceJob] = []


def _outputs(job: _SourceJob, todo: list[tuple[str, str]], jobs: int | None, keys: dict, line_counts: dict,
             done: _Done, others, clock: _Clock) -> Iterator[tuple[str, str | bytes]]:
    """(path, content) of every page to write: the source pages as the workers finish them, the
    other pages made meanwhile by this process. Keys and line counts land in `keys` and
    `line_counts` on the way."""
    def take(result) -> tuple[str, str]:
        page, html, n, key, nbytes = result
        line_counts[_src[page]] = n
        if key is not None:
            keys[page] = key
        done.pages += 1
        done.bytes += nbytes
        return page, html

    _src = {names.source_page(u, p): (u, p) for (u, p) in todo}
    # Biggest first: better balance across workers.
    work = sorted(todo, key=lambda k: -len(job.ctx.rendered[k].symbols) - 1000 * (k[1].endswith(".cuh")))
    jobs = jobs or os.cpu_count() or 1
    other_files: dict[str, str | bytes] = {}
    rest = others(other_files)
    import multiprocessing as mp

    if jobs <= 1 or len(work) < PARALLEL_THRESHOLD or "fork" not in mp.get_all_start_methods():
        for w in work:
            yield take(render_source_page(w, job))
        clock.lap("render sources")
        next(rest)
    else:
        _JOB.append(job)
        try:
            with mp.get_context("fork").Pool(jobs) as pool:
                results = pool.imap_unordered(_render_in_worker, work, chunksize=4)
                next(rest)  # pages that need no line count, while the workers render
                yield from other_files.items()
                other_files.clear()
                for r in results:
                    yield take(r)
        finally:
            _JOB.clear()
        clock.lap("render sources")
    next(rest, None)
    yield from other_files.items()
    clock.lap("other pages")


def _render_in_worker(item: tuple[str, str]):
    return render_source_page(item, _JOB[0])


def render_source_page(item: tuple[str, str], job: _SourceJob) -> tuple[str, str, int, str | None, int]:
    """(upstream, path) -> (page path, HTML, line count, the page's key when the job leaves it to
    the renderer, bytes of source text)."""
    from site_builder import file_pages, render
    from site_builder.code import build_page
    from site_builder.highlight import cached_highlight

    ctx = job.ctx
    up, path = item
    scope = file_pages.file_scope(ctx, up, path)  # the key and the plan share what both ask for
    key = source_page_key(ctx, job.tkey, job.ikey, up, path, scope) if item in job.unkeyed else None
    plan = file_pages.plan_file(ctx, up, path, scope)
    text = ctx.index.source(up, path)
    tokens = cached_highlight(text, plan.language, job.token_cache)
    page = build_page(plan, text, tokens)
    return plan.page, render.render_file(page), page.line_count, key, len(text.encode("utf-8", "surrogatepass"))


class _Clock:
    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.laps: list[tuple[str, float]] = []

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps.append((name, round(now - self.t, 3)))
        self.t = now

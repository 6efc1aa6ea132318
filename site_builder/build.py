"""`build_site(project, out)`: a Project's index and annotations -> page model -> HTML.

The stages before the site (pins, fetch, index, notes) are chained by annotate.project; this
module only asks the Project for what it needs, as late as it can. Incremental by construction:
- a *stamp* made from file stats alone (pins, fetch records, the checkouts' files, annotation
  files, harness specs and records, the code of the stages) answers "nothing changed" without
  loading anything (the no-op rebuild);
- otherwise every source page gets a key: the index's key (all blob ids + the index code)
  and a digest of the notes shown on that page; only pages whose key changed are planned,
  highlighted and rendered (in parallel across cores when there are many);
- highlighted tokens are cached by file content in `config.site_cache_dir()`;
- `output.write_outputs` rewrites only files whose bytes changed.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import annotate
from annotate.config import Config
from annotate.project import Project
from site_builder import file_pages, names, render, run_views, site_pages
from site_builder.context import SiteContext, site_context
from site_builder.output import Manifest, WriteStats, prepare_out_dir, read_manifest, write_outputs

# Bump when the page model changes in a way the templates' hash cannot see.
SITE_VERSION = "1"
DEFAULT_OUT = "_site"  # relative to the current directory (documented in docs/site.md)
PARALLEL_THRESHOLD = 8  # fewer pages than this are rendered in-process


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
    stamp = input_stamp(config, pins)
    if not live and previous.stamp == stamp and _outputs_present(out, previous):
        n_src = sum(1 for p in previous.pages if names.is_source_page(p))
        return BuildReport(out, True, n_src, 0, 0, None, time.perf_counter() - t0)

    index = project.index  # fetches the pins first when the project says so
    if not live:
        # a fetch just now changed the records the stamp reads: take it again, or the next
        # build would not be recognised as a no-op
        stamp = input_stamp(config, pins)
    clock.lap("index")
    annotations = project.annotations
    clock.lap("annotations")
    ctx = site_context(project)
    clock.lap("context")
    keys, todo = _source_keys(ctx, previous, out)
    clock.lap("keys")
    if len(todo) >= PARALLEL_THRESHOLD:
        project.reporter.say(f"annotate: rendering {len(todo)} of {len(keys)} source pages into {out}")
    results = _render_sources(config, ctx, todo, jobs)
    clock.lap("render sources")
    line_counts = _line_counts(ctx, results, previous)
    files: dict[str, str | bytes] = {page: html for page, (html, _n) in results.items()}
    _other_pages(ctx, line_counts, previous, out, keys, files)
    clock.lap("other pages")

    outputs = sorted(set(files) | set(keys) | {names.asset_path(n) for n in render.asset_files()})
    manifest = Manifest(stamp=stamp, pages=keys,
                        lines={names.source_page(u, p): n for (u, p), n in line_counts.items()},
                        outputs=outputs)
    stats = write_outputs(out, files, manifest, previous)
    clock.lap("write")
    src_bytes = sum(len(ctx.index.source(u, p).encode("utf-8")) for u, p in todo)
    return BuildReport(out, False, len(ctx.rendered), len(results), src_bytes, stats, time.perf_counter() - t0,
                       tuple(clock.laps), len(annotations.errors))


# ---- what must be rendered ------------------------------------------------------------------

def _source_keys(ctx: SiteContext, previous: Manifest, out: Path) -> tuple[dict[str, str], list]:
    """Every source page's key, and the (upstream, path) of those whose key changed."""
    ikey = index_key(ctx)
    tkey = render.templates_key(names.SOURCE_DIR) + code_key()
    keys: dict[str, str] = {}
    todo: list[tuple[str, str]] = []
    for (up, path) in ctx.rendered:
        page = names.source_page(up, path)
        keys[page] = _page_key(tkey, ikey, file_pages.note_digest(ctx, up, path))
        if previous.pages.get(page) != keys[page] or not (out / page).is_file():
            todo.append((up, path))
    return keys, todo


def _line_counts(ctx: SiteContext, results: dict, previous: Manifest) -> dict[tuple[str, str], int]:
    out = {}
    for (up, path) in ctx.rendered:
        page = names.source_page(up, path)
        out[(up, path)] = results[page][1] if page in results else previous.lines.get(page, 0)
    return out


def _other_pages(ctx: SiteContext, line_counts, previous: Manifest, out: Path, keys: dict, files: dict) -> None:
    """The home page, course pages, runs pages, search index and assets into `files` (their keys
    into `keys`). Models are cheap, rendering less so: each page is rendered only when the repr
    of its model (its key) changed."""
    def other(page: str, model_key: str, make) -> None:
        keys[page] = _page_key(render.templates_key(page) + code_key(), model_key, "")
        if previous.pages.get(page) != keys[page] or not (out / page).is_file():
            files[page] = make()

    home = site_pages.index_page(ctx, line_counts)
    other(names.INDEX_PAGE, _digest(repr(home)), lambda: render.render_index(home))
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
    other(names.SEARCH_INDEX, index_key(ctx) + site_pages.search_digest(ctx),
          lambda: render.render_search_index(site_pages.search_data(ctx)))
    for name, data in render.asset_files().items():
        files[names.asset_path(name)] = data


# ---- inputs ------------------------------------------------------------------------------

def input_stamp(config: Config, pins: dict) -> str:
    """A digest of file *stats* that changes whenever a build could produce other output."""
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
    ann = config.annotations_dir
    if ann.is_dir():
        for p in sorted(ann.rglob("*")):
            stat(p)
    return h.hexdigest()[:32]


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
    return bool(m.outputs) and all((out / rel).is_file() for rel in m.outputs)


# ---- rendering source pages (in worker processes) ---------------------------------------

# The context of the build in progress, for render_source_page. Workers are forked, so
# they inherit it (copy-on-write) instead of receiving pickled plans and source text.
_CTX: dict = {}


def _render_sources(config: Config, ctx: SiteContext, todo: list[tuple[str, str]], jobs: int | None) -> dict[str, tuple[str, int]]:
    _CTX.update(ctx=ctx, cache=config.site_cache_dir() / "tokens")
    try:
        # Biggest first: better balance across workers.
        work = sorted(todo, key=lambda k: -len(ctx.rendered[k].symbols) - 1000 * (k[1].endswith(".cuh")))
        jobs = jobs or os.cpu_count() or 1
        results: dict[str, tuple[str, int]] = {}
        import multiprocessing as mp

        if jobs <= 1 or len(work) < PARALLEL_THRESHOLD or "fork" not in mp.get_all_start_methods():
            for w in work:
                page, html, n = render_source_page(w)
                results[page] = (html, n)
            return results
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("fork")) as pool:
            for page, html, n in pool.map(render_source_page, work, chunksize=8):
                results[page] = (html, n)
        return results
    finally:
        _CTX.clear()


def render_source_page(item: tuple[str, str]) -> tuple[str, str, int]:
    """(upstream, path) -> (page path, HTML, line count), using the build's context."""
    from site_builder.code import build_page
    from site_builder.highlight import cached_highlight

    ctx, cache = _CTX["ctx"], _CTX["cache"]
    up, path = item
    plan = file_pages.plan_file(ctx, up, path)
    text = ctx.index.source(up, path)
    tokens = cached_highlight(text, plan.language, cache)
    page = build_page(plan, text, tokens)
    return plan.page, render.render_file(page), page.line_count


class _Clock:
    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.laps: list[tuple[str, float]] = []

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps.append((name, round(now - self.t, 3)))
        self.t = now

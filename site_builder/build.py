"""`build_site`: pins -> fetched checkouts -> index -> annotations -> page model -> HTML.

Incremental by construction:
- a *stamp* made from file stats alone (pins, fetch records, annotation files, the code of
  the stages) answers "nothing changed" without loading anything (the no-op rebuild);
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
from typing import Any

from annotate.config import Config
from annotate.errors import AnnotateError
from site_builder import names, pages, render
from site_builder.output import Manifest, WriteStats, read_manifest, write_outputs

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


def default_out_dir() -> Path:
    return Path.cwd() / DEFAULT_OUT


def build_site(config: Config, out_dir: Path | str | None = None, *, upstreams: list[str] | None = None,
               jobs: int | None = None, progress: bool = False, fetch: bool = True,
               index: Any = None, annotations: Any = None, pins: dict | None = None) -> BuildReport:
    """Build (or bring up to date) the static site in `out_dir` and say what was done.

    `index`, `annotations` and `pins` may be given (tests, the fixture walkthrough);
    otherwise they are loaded from `config`.
    """
    t0 = time.perf_counter()
    clock = _Clock()
    out = Path(out_dir) if out_dir else default_out_dir()
    if pins is None:
        from annotate.upstreams import load_upstreams

        pins = load_upstreams(config)
    chosen = {k: v for k, v in pins.items() if not upstreams or k in upstreams}
    previous = read_manifest(out)
    stamp = input_stamp(config, chosen)
    if index is None and previous.stamp == stamp and _outputs_present(out, previous):
        n_src = sum(1 for p in previous.pages if names.is_source_page(p))
        return BuildReport(out, True, n_src, 0, 0, None, time.perf_counter() - t0)

    if index is None:
        if fetch:
            _ensure_fetched(config, list(chosen), progress)
            # a fetch just now changed the records the stamp reads: take it again, or the next
            # build would not be recognised as a no-op
            stamp = input_stamp(config, chosen)
        index = _load_index(config, list(chosen), progress)
        clock.lap("index")
    if annotations is None:
        annotations = _load_annotations(config, index)
        clock.lap("annotations")
    from site_builder.runs import load_runs

    ctx = pages.make_context(index, annotations, chosen, upstreams, runs=load_runs(config))
    clock.lap("context")

    # Which source pages must be rendered again.
    ikey = index_key(ctx)
    tkey = render.templates_key(names.SOURCE_DIR) + code_key()
    keys: dict[str, str] = {}
    todo: list[tuple[str, str]] = []
    for (up, path) in ctx.rendered:
        page = names.source_page(up, path)
        keys[page] = _page_key(tkey, ikey, pages.note_digest(ctx, up, path))
        if previous.pages.get(page) != keys[page] or not (out / page).is_file():
            todo.append((up, path))
    clock.lap("keys")

    if progress and len(todo) >= PARALLEL_THRESHOLD:
        import sys

        print(f"annotate: rendering {len(todo)} of {len(keys)} source pages into {out}", file=sys.stderr, flush=True)
    results = _render_sources(config, ctx, todo, jobs, progress)
    clock.lap("render sources")
    line_counts = {}
    for (up, path) in ctx.rendered:
        page = names.source_page(up, path)
        line_counts[(up, path)] = results[page][1] if page in results else previous.lines.get(page, 0)

    files: dict[str, str | bytes] = {page: html for page, (html, _n) in results.items()}

    # The home page, course pages and search index: models are cheap, rendering less so;
    # each is rendered only when the repr of its model (its key) changed.
    def other(page: str, model_key: str, make) -> None:
        keys[page] = _page_key(render.templates_key(page) + code_key(), model_key, "")
        if previous.pages.get(page) != keys[page] or not (out / page).is_file():
            files[page] = make()

    home = pages.index_page(ctx, line_counts)
    other(names.INDEX_PAGE, _digest(repr(home)), lambda: render.render_index(home))
    for course in ctx.courses.values():
        cp = pages.course_page(ctx, course)
        other(cp.page, _digest(repr(cp)), lambda cp=cp: render.render_course(cp))
    # Harness results: a page per catalog kernel; its model holds the records' content, so
    # a new or changed record renders exactly that runs page and the home page.
    for kr in ctx.runs:
        rp = pages.runs_page(ctx, kr)
        other(rp.page, _digest(repr(rp)), lambda rp=rp: render.render_runs(rp))
    other(names.SEARCH_INDEX, ikey + pages.search_digest(ctx),
          lambda: render.render_search_index(pages.search_data(ctx)))
    for name, data in render.asset_files().items():
        files[names.asset_path(name)] = data
    clock.lap("other pages")

    outputs = sorted(set(files) | set(keys) | {names.asset_path(n) for n in render.asset_files()})
    manifest = Manifest(stamp=stamp, pages=keys,
                        lines={names.source_page(u, p): n for (u, p), n in line_counts.items()},
                        outputs=outputs)
    stats = write_outputs(out, files, manifest, previous)
    clock.lap("write")
    src_bytes = sum(len(ctx.index.source(u, p).encode("utf-8")) for u, p in todo)
    return BuildReport(out, False, len(ctx.rendered), len(results), src_bytes, stats, time.perf_counter() - t0,
                       tuple(clock.laps))


# ---- inputs ------------------------------------------------------------------------------

def _ensure_fetched(config: Config, names_: list[str], progress: bool) -> None:
    try:
        from annotate.fetch.api import ensure_fetched
    except ImportError:  # the fetch stage is not merged yet: the checkouts must exist
        from annotate.upstreams import checkout_root, load_upstreams

        ups = load_upstreams(config)
        missing = [n for n in names_ if not checkout_root(config, ups[n]).is_dir()]
        if missing:
            raise AnnotateError(f"not fetched: {', '.join(missing)}", hint="run `annotate fetch` first") from None
        return
    ensure_fetched(config, names=names_, progress=progress)


def _load_index(config: Config, names_: list[str], progress: bool):
    from annotate.index.api import load_index

    return load_index(config, upstreams=names_, progress=progress)


def _load_annotations(config: Config, index):
    try:
        from annotate.notes.api import load_annotations
    except ImportError:  # the notes stage is not merged yet: a site without notes
        return None
    return load_annotations(config, index)


def input_stamp(config: Config, pins: dict) -> str:
    """A digest of file *stats* that changes whenever a build could produce other output."""
    h = hashlib.sha256(f"{SITE_VERSION}\0".encode())

    def stat(p: Path) -> None:
        try:
            st = p.stat()
            h.update(f"{p}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
        except OSError:
            h.update(f"{p}\0-\n".encode())

    here = Path(__file__).parent
    for p in sorted(here.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            stat(p)
    for p in sorted((config.repo_root / "annotate").rglob("*.py")):
        stat(p)
    stat(config.upstreams_file)
    for name, up in sorted(pins.items()):
        h.update(f"{name}\0{up.commit}\0{up.render}\n".encode())
        stat(config.fetch_record(name, up.commit))
        stat(config.checkout_dir(name, up.commit))
    from site_builder.runs import stat_paths

    for p in stat_paths(config):  # harness specs, committed and local run records
        stat(p)
    ann = config.annotations_dir
    if ann.is_dir():
        for p in sorted(ann.rglob("*")):
            stat(p)
    return h.hexdigest()[:32]


def code_key() -> str:
    """Changes when the site builder's own code or queries change (they shape every page)."""
    h = hashlib.sha256(SITE_VERSION.encode())
    here = Path(__file__).parent
    for p in sorted([*here.glob("*.py"), *here.glob("queries/*.scm")]):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def index_key(ctx: pages.SiteContext) -> str:
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


def _render_sources(config: Config, ctx, todo: list[tuple[str, str]], jobs: int | None,
                    progress: bool) -> dict[str, tuple[str, int]]:
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
    plan = pages.plan_file(ctx, up, path)
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

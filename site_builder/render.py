"""Templates -> strings. The one Jinja2 environment is configured here (autoescape on, every
filter registered together); renderers return strings and never write files.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from site_builder import names
from site_builder.model import CoursePage, FilePage, IndexPage, RunsPage

TEMPLATES_DIR = Path(__file__).parent / "templates"
ASSETS_SRC = Path(__file__).parent / "assets"

# In <head> order; split by concern (see the files' first lines).
STYLESHEETS = ("base.css", "code.css", "notes.css", "graph.css", "index.css", "runs.css")


def _num(n) -> str:
    return f"{int(n):,}"


FILTERS = {"num": _num, "line_anchor": names.line_anchor}


@lru_cache(maxsize=1)
def environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
    )
    env.filters.update(FILTERS)
    env.globals["STYLESHEETS"] = STYLESHEETS
    return env


def render_file(page: FilePage) -> str:
    return environment().get_template("file.html.jinja2").render(page=page)


def render_index(page: IndexPage) -> str:
    return environment().get_template("index.html.jinja2").render(page=page)


def render_course(page: CoursePage) -> str:
    return environment().get_template("course.html.jinja2").render(page=page)


def render_runs(page: RunsPage) -> str:
    return environment().get_template("runs.html.jinja2").render(page=page)


def render_search_index(data: dict) -> str:
    """The search index as a script assigning a global: loadable from file:// (no fetch())."""
    return "window.ANNOTATE_SEARCH=" + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + ";\n"


def asset_files() -> dict[str, bytes]:
    """Every asset the site ships (CSS, JS), by name; all of them live in site_builder/assets."""
    return {p.name: p.read_bytes() for p in sorted(ASSETS_SRC.iterdir()) if p.is_file()}


# The templates each kind of page is made from: a page's key changes only when one of them
# does (a CSS or JS edit renders no page again; a home-page edit renders only the home page).
COMMON_TEMPLATES = ("base.html.jinja2", "macros.html.jinja2")
PAGE_TEMPLATES = {names.SOURCE_DIR: ("file.html.jinja2", "panels.html.jinja2"),
                  names.COURSES_DIR: ("course.html.jinja2",), names.INDEX_PAGE: ("index.html.jinja2",),
                  names.RUNS_DIR: ("runs.html.jinja2",)}


def templates_key(page: str) -> str:
    """Part of the cache key of `page` (a path in the site)."""
    own = next((t for prefix, t in PAGE_TEMPLATES.items() if page.startswith(prefix)), ())
    h = hashlib.sha256(repr(STYLESHEETS).encode())
    for name in COMMON_TEMPLATES + own:
        h.update(name.encode() + b"\0" + _read(TEMPLATES_DIR / name))
    return h.hexdigest()[:16]


def _read(path: Path) -> bytes:
    st = path.stat()
    return _read_cached(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _read_cached(path: str, _mtime: int, _size: int) -> bytes:
    return Path(path).read_bytes()

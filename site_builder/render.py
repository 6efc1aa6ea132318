"""Templates -> strings. The one Jinja2 environment is configured here (autoescape on, every
filter registered together); renderers return strings and never write files.
"""

from __future__ import annotations

import hashlib
import json
import re
import types
from functools import lru_cache

from markupsafe import Markup, escape
from pathlib import Path

from site_builder import i18n, names
from site_builder.model import CoursePage, ErrorPage, FilePage, IndexPage, Label, Msg, RunsPage, StepPage, TracePage, msg

TEMPLATES_DIR = Path(__file__).parent / "templates"
ASSETS_SRC = Path(__file__).parent / "assets"

# In <head> order; split by concern (see the files' first lines).
STYLESHEETS = ("base.css", "code.css", "notes.css", "graph.css", "index.css", "runs.css")


def _num(n) -> str:
    return f"{int(n):,}"


FILTERS = {"num": _num, "line_anchor": names.line_anchor}


def _cat(*parts: str | Msg | Label) -> str | Label:
    """Words joined, per language (a page title: "<course title> · annotate")."""
    if all(isinstance(p, str) for p in parts):
        return "".join(parts)  # type: ignore[arg-type]
    pairs = [(p, p) if isinstance(p, str) else i18n.pair(p) for p in parts]
    en = "".join(e or z or "" for e, z in pairs)
    zh = "".join(z or e or "" for e, z in pairs)
    return Label(en, zh)


# Words in both languages are drawn by the `s` and `a` macros of macros.html.jinja2; a page
# prints the same few hundred messages thousands of times, so each distinct one is drawn once
# per process and kept (Msg and Label are frozen, hence usable as keys). Plain strings are data
# and are only escaped.


@lru_cache(maxsize=1 << 16)
def _words(x: Msg | Label) -> Markup:
    return environment().get_template("macros.html.jinja2").module.s(x)


def words(x: str | Msg | Label) -> Markup:
    """`{{ W(x) }}`: a string (escaped), or a message or label in both languages."""
    return escape(x) if isinstance(x, str) else _words(x)


def message(mid: str, **args: str | int | float) -> Markup:
    """`{{ T("id", name=value) }}`: catalogue message `id` in both languages."""
    return _words(msg(mid, **args))


class _Fixed(dict):
    """`{{ WORDS["id"] }}`: a message without placeholders, in both languages, drawn on first use.
    A lookup, not a call: the labels every function heading repeats cost a dict hit."""

    def __missing__(self, mid: str) -> Markup:
        self[mid] = value = _words(msg(mid))
        return value


@lru_cache(maxsize=1 << 14)
def _attribute(name: str, x: Msg | Label) -> Markup:
    return environment().get_template("macros.html.jinja2").module.a(name, x)


def attribute(name: str, x: str | Msg | Label) -> Markup:
    """`<a{{ A("title", x) }}>`: an attribute ('' for no text); a message or label in the
    default language, with both kept for site.js to swap."""
    if isinstance(x, str):
        return environment().get_template("macros.html.jinja2").module.a(name, x)
    return _attribute(name, x)


def stats(paths) -> tuple:
    """(path, mtime, size) of each path that exists: what `annotate serve` compares between polls."""
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append((str(p), st.st_mtime_ns, st.st_size))
        except OSError:
            pass
    return tuple(out)


def sources_stamp() -> tuple:
    """Stats of what `clear_caches` forgets the drawing of: the templates and the message
    catalogue (`annotate serve` clears them only when one of these changed)."""
    return stats([i18n.CATALOGUE, *sorted(TEMPLATES_DIR.rglob("*"))])


def clear_caches() -> None:
    """Templates or messages changed (`annotate serve`): forget the environment, the catalogue and
    what they drew."""
    i18n.catalogue.cache_clear()
    i18n.pair.cache_clear()
    environment.cache_clear()
    _words.cache_clear()
    _attribute.cache_clear()
    _FIXED.clear()
    _code_markup.cache_clear()


# ---- the code column ------------------------------------------------------------------------
# The macros of code.html.jinja2 are drawn once with placeholders, then filled in per line: a
# template loop over every piece of every line was over half of the time spent rendering a
# source page. Placeholders are control characters that the macros' own text never holds.

_HOLES = "\x00\x01\x02\x03"


def _holes(drawn: str, n: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Macro output with placeholders -> (the n+1 literal parts, which placeholder follows each)."""
    parts = re.split(f"([{_HOLES}])", str(drawn))
    lits, order = tuple(parts[0::2]), tuple(_HOLES.index(h) for h in parts[1::2])
    if sorted(order) != list(range(n)):
        raise ValueError(f"code.html.jinja2: a macro must print each of its {n} arguments once, got {drawn!r}")
    return lits, order


class _CodeMarkup:
    """The code column's macros, drawn (site_builder.code.Drawn)."""

    def __init__(self) -> None:
        from site_builder.highlight import TOKEN_CLASSES

        mod = environment().get_template("code.html.jinja2").module
        h0, h1, h2, h3 = _HOLES
        self.line = tuple(_holes(mod.line(h0, noted), 1)[0] for noted in (False, True))
        self.token = {c: _holes(mod.token(c, h0), 1)[0] for c in TOKEN_CLASSES.values()}
        self.link = _holes(mod.link(h0, h1), 2)
        fields = ("css", "kind", "detail", "abbr")
        plain = types.SimpleNamespace(**dict(zip(fields, _HOLES)), body=None, check=None, bar=0)
        self.mark = _holes(mod.mark(plain), 4)  # a plain marker: no panel, no check
        self.mark_fields = fields
        self.module = mod

    def draw_mark(self, x) -> str:
        if x.body or x.check or not isinstance(x.detail, str):
            # a button with its panel, a marker with the compiler's check or with words in both
            # languages: the macro itself
            return str(self.module.mark(x))
        lits, order = self.mark
        values = [str(escape(getattr(x, self.mark_fields[i]))) for i in order]
        return lits[0] + "".join(v + lit for v, lit in zip(values, lits[1:]))


@lru_cache(maxsize=1)
def _code_markup() -> _CodeMarkup:
    return _CodeMarkup()


def code_lines(lines) -> Markup:
    """`{{ code_lines(row.lines) }}`: the markup of a row's lines (model.CodeLine), drawn by
    site_builder.code.draw_lines with the macros of code.html.jinja2 (it escapes the text)."""
    from site_builder.code import draw_lines

    return Markup(draw_lines(lines, _code_markup()))


_FIXED = _Fixed()


def _globals() -> dict:
    fb = {lang: i18n.one("fallback.tag", lang) for lang in i18n.LANGS}
    return {"STYLESHEETS": STYLESHEETS, "L": i18n.pair, "M": msg, "cat": _cat, "FB": fb,
            "W": words, "T": message, "A": attribute, "WORDS": _FIXED, "code_lines": code_lines,
            "DEFAULT_LANG": i18n.DEFAULT_LANG, "HTML_LANG": {"en": "en", "zh": "zh-CN"}}


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
    env.globals.update(_globals())
    return env


def render_file(page: FilePage) -> str:
    return environment().get_template("file.html.jinja2").render(page=page)


def render_index(page: IndexPage) -> str:
    return environment().get_template("index.html.jinja2").render(page=page)


def render_course(page: CoursePage) -> str:
    return environment().get_template("course.html.jinja2").render(page=page)


def render_step(page: StepPage) -> str:
    return environment().get_template("step.html.jinja2").render(page=page)


def render_error(page: ErrorPage) -> str:
    return environment().get_template("error.html.jinja2").render(page=page)


def render_runs(page: RunsPage) -> str:
    return environment().get_template("runs.html.jinja2").render(page=page)


def render_trace(page: TracePage) -> str:
    return environment().get_template("trace.html.jinja2").render(page=page)


def render_search_index(base: dict) -> str:
    """The index's part of the search index (site_pages.search_base, without the `keys` that only
    the build reads) as a script assigning a global: loadable from file:// (no fetch())."""
    data = {"v": 3, "pages": base["pages"], "symbols": base["symbols"], "files": base["files"]}
    return "window.ANNOTATE_SEARCH=" + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + ";\n"


def render_search_notes(notes: dict) -> str:
    """What the notes add to the search index (site_pages.search_notes), a script like the index's
    part; search.js merges the two."""
    return "window.ANNOTATE_SEARCH_NOTES=" + json.dumps(notes, ensure_ascii=False, separators=(",", ":")) + ";\n"


def asset_files() -> dict[str, bytes]:
    """Every asset the site ships (CSS, JS), by name: the files of site_builder/assets, and the
    scripts' messages from the catalogue (messages.js)."""
    files = {p.name: p.read_bytes() for p in sorted(ASSETS_SRC.iterdir()) if p.is_file()}
    files["messages.js"] = i18n.script_messages().encode("utf-8")
    return files


# The templates each kind of page is made from: a page's key changes only when one of them
# does (a CSS or JS edit renders no page again; a home-page edit renders only the home page).
COMMON_TEMPLATES = ("base.html.jinja2", "macros.html.jinja2")
PAGE_TEMPLATES = {names.SOURCE_DIR: ("file.html.jinja2", "panels.html.jinja2", "code.html.jinja2"),
                  names.COURSES_DIR: ("course.html.jinja2", "step.html.jinja2"),
                  names.INDEX_PAGE: ("index.html.jinja2",),
                  names.RUNS_DIR: ("runs.html.jinja2",), names.ERROR_PAGE: ("error.html.jinja2",),
                  names.TRACES_DIR: ("trace.html.jinja2",)}


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

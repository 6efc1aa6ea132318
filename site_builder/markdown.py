"""Annotation Markdown -> safe HTML.

Two independent guards, because annotation files are contributed text:
1. markdown-it-py with raw HTML disabled: `<script>` in a note is shown as text, and its
   link validator already refuses `javascript:`/`vbscript:`/`data:` URLs;
2. nh3 (ammonia) on the result with an allow-list of tags, attributes and URL schemes, so
   that a parser bug or a future option cannot let an `on*` attribute or a script URL through.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markupsafe import Markup

ALLOWED_TAGS = frozenset({
    "p", "br", "hr", "em", "strong", "code", "pre", "a", "ul", "ol", "li", "blockquote",
    "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del", "sup", "sub",
})
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})


@lru_cache(maxsize=1)
def _parser():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").enable("strikethrough")
    # Headings inside a note would break the page outline: demote them to h4..h6.
    return md


_HEADING = re.compile(r"<(/?)h([1-6])>")


def render_markdown(text: str | None) -> Markup:
    """Sanitised HTML for one annotation text field ('' for None)."""
    if not text:
        return Markup("")
    return Markup(_render(str(text)))


@lru_cache(maxsize=4096)
def _render(text: str) -> str:
    import nh3

    html = _parser().render(text)
    html = _HEADING.sub(lambda m: f"<{m.group(1)}h{min(6, int(m.group(2)) + 3)}>", html)
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
        strip_comments=True,
    ).strip()


_MD_NOISE = re.compile(r"\]\([^)]*\)|[`*#>\[\]]|(?<!\w)_+|_+(?!\w)")


def plain_text(text: str | None, limit: int = 400) -> str:
    """Markdown reduced to searchable plain text (for the search index, never for HTML)."""
    if not text:
        return ""
    out = _MD_NOISE.sub("", str(text))
    out = " ".join(out.split())
    return out[:limit]

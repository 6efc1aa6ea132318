"""A file plan + its text + its tokens -> `model.FilePage`: lines with their tokens, call links
and marks, grouped into sections (by innermost enclosing function) and rows (split where an
in-body note is anchored); and the code column drawn from those lines with the markup the
templates give (`draw_lines`). Runs in the worker processes.

Cutting a line into pieces (token, call link or plain text) and drawing them is one pass per
line: a site has half a million lines, and building the pieces as objects first, then walking
them again, cost about twice as much. `pieces` gives the same cut as data.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Protocol

from site_builder import names
from site_builder.highlight import Line
from site_builder.model import CodeLine, CodeLink, DefinitionView, FilePage, FilePlan, Piece, Row, Section

LinkSpan = tuple[int, int, str]  # (start column, end column, href escaped)


def escape_text(s: str) -> str:
    """HTML-escape text content. Code text is escaped here, once per piece, with C-speed
    str.replace, and the code column is drawn without Jinja's autoescape: markupsafe's
    per-value escape() + Markup() was a third of the rendering time. Quotes need no escaping
    in text content; hrefs (attribute values) go through escape_attr."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attr(s: str) -> str:
    return escape_text(s).replace('"', "&quot;")


def link_spans(text: str, links: list[CodeLink], line_bytes: bytes | None) -> tuple[LinkSpan, ...]:
    """Where the call links of one line are: (start, end, escaped href), by start. The index's
    column counts bytes (`line_bytes` when the line is not ASCII); a name not found where the
    index says (within 80 columns after) gets no link: no link beats a wrong one."""
    found = []
    for ln in links:
        col = ln.column
        if line_bytes is not None:  # tree-sitter columns count bytes
            col = len(line_bytes[:col].decode("utf-8", "replace"))
        end = col + len(ln.name)
        if not ln.name or text[col:end] != ln.name:
            at = text.find(ln.name, col) if ln.name else -1
            if at < 0 or at - col > 80:
                continue
            col, end = at, at + len(ln.name)
        found.append((col, end, escape_attr(ln.href)))
    return tuple(sorted(found))


def _spans(tokens: Line, links: tuple[LinkSpan, ...]) -> list[tuple[int, int, str, str | None]]:
    """Tokens and links as (start, end, class, href), by start; a call link wins over a token it
    overlaps."""
    spans: list[tuple[int, int, str, str | None]] = [(a, b, c, None) for a, b, c in tokens]
    if links:
        kept = [sp for sp in spans if not any(sp[0] < f[1] and f[0] < sp[1] for f in links)]
        spans = sorted(kept + [(a, b, "", h) for a, b, h in links])
    return spans


def cut(text: str, tokens: Line, links: tuple[LinkSpan, ...]) -> tuple[Piece, ...]:
    """One line cut into (class, escaped text, href) pieces."""
    pieces: list[Piece] = []
    pos = 0
    for a, b, cls, href in _spans(tokens, links):
        if a < pos:
            continue
        if a > pos:
            pieces.append(("", escape_text(text[pos:a]), None))
        pieces.append((cls, escape_text(text[a:b]), href))
        pos = b
    if pos < len(text):
        pieces.append(("", escape_text(text[pos:]), None))
    return tuple(pieces)


def line_pieces(text: str, tokens: Line, links: list[CodeLink], line_bytes: bytes | None) -> tuple[Piece, ...]:
    """Cut one line into (class, text, href) pieces; a call link wins over a token it overlaps."""
    return cut(text, tokens, link_spans(text, links, line_bytes))


def pieces(line: CodeLine) -> tuple[Piece, ...]:
    """A page's line as pieces: what `draw_lines` draws."""
    return cut(line.text, line.tokens, line.links)


class Drawn(Protocol):
    """The code column's markup, from the templates (site_builder.render._CodeMarkup)."""

    line: tuple[tuple[str, str], tuple[str, str]]  # (before the anchor, after it): plain line, noted line
    token: Mapping[str, tuple[str, str]]  # token class -> (open, close)
    link: tuple[tuple[str, str, str], tuple[int, int]]  # three literal parts; where (href, text) go

    def draw_mark(self, mark) -> str: ...


def draw_lines(lines: tuple[CodeLine, ...], drawn: Drawn) -> str:
    """The markup of consecutive lines: each cut into pieces (as `pieces`) and drawn in one pass."""
    (a0, a1, a2), (i0, i1) = drawn.link
    token, line_markup = drawn.token, drawn.line
    anchor = names.line_anchor
    out: list[str] = []
    add = out.append
    for ln in lines:
        pre, post = line_markup[ln.noted]
        add(pre)
        add(anchor(ln.no))
        add(post)
        text = ln.text
        if ln.links:
            for c, t, h in pieces(ln):
                if h:
                    v = (h, t)
                    add(a0)
                    add(v[i0])
                    add(a1)
                    add(v[i1])
                    add(a2)
                elif c:
                    o, e = token[c]
                    add(o)
                    add(t)
                    add(e)
                else:
                    add(t)
        elif "&" in text or "<" in text or ">" in text:
            pos = 0
            for a, b, c in ln.tokens:
                if a < pos:
                    continue
                if a > pos:
                    add(escape_text(text[pos:a]))
                o, e = token[c]
                add(o)
                add(escape_text(text[a:b]))
                add(e)
                pos = b
            if pos < len(text):
                add(escape_text(text[pos:]))
        else:  # nothing to escape: slices as they are
            pos = 0
            for a, b, c in ln.tokens:
                if a < pos:
                    continue
                if a > pos:
                    add(text[pos:a])
                o, e = token[c]
                add(o)
                add(text[a:b])
                add(e)
                pos = b
            if pos < len(text):
                add(text[pos:])
        for x in ln.marks:
            add(drawn.draw_mark(x))
    return "".join(out)


def owners(functions: tuple[DefinitionView, ...], n_lines: int) -> list[DefinitionView | None]:
    """For each line (index 0 = line 1), the innermost function containing it."""
    own: list[DefinitionView | None] = [None] * (n_lines + 1)
    # Outer functions first, so inner ones overwrite their lines.
    for fv in sorted(functions, key=lambda f: (f.start_line, -f.end_line)):
        for ln in range(max(fv.start_line, 1), min(fv.end_line, n_lines) + 1):
            own[ln] = fv
    return own[1:]


def build_page(plan: FilePlan, text: str, tokens: tuple[Line, ...]) -> FilePage:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline does not start a line
    n = len(lines)
    links_by_line: dict[int, list[CodeLink]] = defaultdict(list)
    for ln in plan.links:
        links_by_line[ln.line].append(ln)
    marks_by_line = defaultdict(list)
    for m in plan.marks:
        marks_by_line[m.line].append(m)
    notes_by_line = {}
    noted = set()
    for fv in plan.functions:
        for note in fv.inline_notes:
            notes_by_line.setdefault(note.line, note)
            noted.update(range(note.line, note.end_line + 1))
    ascii_only = text.isascii()

    code_lines = []
    n_tokens = len(tokens)
    for i, line_text in enumerate(lines):
        no = i + 1
        lk = links_by_line.get(no)
        spans = link_spans(line_text, lk, None if ascii_only else line_text.encode("utf-8")) if lk else ()
        code_lines.append(CodeLine(no, line_text, tokens[i] if i < n_tokens else (), spans,
                                   tuple(marks_by_line[no]) if no in marks_by_line else (), no in noted))

    own = owners(plan.functions, n)
    heads = {}
    for fv in plan.functions:
        heads.setdefault(fv.start_line, fv)
    sections = []
    start = 0
    while start < n:
        owner = own[start]
        end = start + 1
        while end < n and own[end] is owner and (end + 1) not in heads:
            end += 1
        head = owner is not None and owner.start_line == start + 1
        sections.append(Section(owner, head, _rows(code_lines[start:end], notes_by_line)))
        start = end
    # A function whose first line belongs to another one (two definitions on one line, a
    # macro) still gets its anchor: on the section that shows that line.
    headed = {id(s.function) for s in sections if s.head}
    for fv in plan.functions:
        if id(fv) in headed or fv.start_line > n:
            continue
        for i, sec in enumerate(sections):
            if sec.rows and sec.rows[0].first <= fv.start_line <= sec.rows[-1].lines[-1].no:
                anchor_sec = next((j for j in range(i, -1, -1) if sections[j].head), None)
                if anchor_sec is not None:
                    s0 = sections[anchor_sec]
                    sections[anchor_sec] = Section(s0.function, True, s0.rows, s0.extra_anchors + (fv.anchor,))
                break
    return FilePage(plan, tuple(sections), n)


def _rows(lines: list[CodeLine], notes_by_line) -> tuple[Row, ...]:
    """Split a section where a note is anchored: the note's line opens a new row."""
    rows = []
    cur: list[CodeLine] = []
    note = None
    for cl in lines:
        if cl.no in notes_by_line:
            if cur:
                rows.append(Row(note, tuple(cur)))
            cur, note = [], notes_by_line[cl.no]
        cur.append(cl)
    if cur:
        rows.append(Row(note, tuple(cur)))
    return tuple(rows)

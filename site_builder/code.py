"""A file plan + its text + its tokens -> `model.FilePage`: lines cut into pieces (tokens,
call links, plain text) and grouped into sections (by innermost enclosing function) and
rows (split where an in-body note is anchored). Pure data; runs in the worker processes.
"""

from __future__ import annotations

from collections import defaultdict

from site_builder.highlight import Line
from site_builder.model import CodeLine, CodeLink, FilePage, FilePlan, DefinitionView, Row, Section


def escape_text(s: str) -> str:
    """HTML-escape text content. Code text is escaped here, once per piece, with C-speed
    str.replace, and the template's code loop runs with autoescape off: markupsafe's
    per-value escape() + Markup() was a third of the rendering time. Quotes need no escaping
    in text content; hrefs (attribute values) go through escape_attr."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attr(s: str) -> str:
    return escape_text(s).replace('"', "&quot;")


def line_pieces(text: str, tokens: Line, links: list[CodeLink], line_bytes: bytes | None):
    """Cut one line into (class, text, href) pieces; a call link wins over a token it overlaps."""
    spans: list[tuple[int, int, str, str | None]] = [(a, b, c, None) for a, b, c in tokens]
    if links:
        found = []
        for ln in links:
            col = ln.column
            if line_bytes is not None:  # tree-sitter columns count bytes
                col = len(line_bytes[:col].decode("utf-8", "replace"))
            end = col + len(ln.name)
            if not ln.name or text[col:end] != ln.name:
                at = text.find(ln.name, col) if ln.name else -1
                if at < 0 or at - col > 80:
                    continue  # the name is not where the index says: no link beats a wrong one
                col, end = at, at + len(ln.name)
            found.append((col, end, "", escape_attr(ln.href)))
        if found:
            kept = [sp for sp in spans if not any(sp[0] < f[1] and f[0] < sp[1] for f in found)]
            spans = sorted(kept + found)
    pieces = []
    pos = 0
    for a, b, cls, href in spans:
        if a < pos:
            continue
        if a > pos:
            pieces.append(("", escape_text(text[pos:a]), None))
        pieces.append((cls, escape_text(text[a:b]), href))
        pos = b
    if pos < len(text):
        pieces.append(("", escape_text(text[pos:]), None))
    return tuple(pieces)


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
    for i, line_text in enumerate(lines):
        no = i + 1
        toks = tokens[i] if i < len(tokens) else ()
        lk = links_by_line.get(no)
        lb = None if ascii_only or not lk else line_text.encode("utf-8")
        if not lk and not toks:
            pieces = (("", escape_text(line_text), None),) if line_text else ()
        else:
            pieces = line_pieces(line_text, toks, lk or [], lb)
        code_lines.append(CodeLine(no, pieces, tuple(marks_by_line.get(no, ())), no in noted))

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

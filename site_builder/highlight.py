"""Syntax highlighting from the tree-sitter parse, as data.

The captures live in `queries/<language>.scm` (data, one file per grammar); this module runs
them and slices the result into lines of `(start_col, end_col, token_class)` triples in
*character* columns. It produces no markup: the `code` macro in the templates turns a token
class into an element. Results are cached by content (see `cached_highlight`) as JSON, not
pickle: the cache may be carried between machines, and loading it must never run code from it.

Why not reuse the index's parse tree: the index keeps plain dataclasses (its cache holds no
trees, and trees cannot cross process boundaries), so the site parses each rendered file
once more inside its worker process. Parsing is the cheap part (about 0.4 s per MB on one
core); the cache makes it a one-off per file content.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from annotate.atomic import write_atomic

# Capture name in the .scm files -> the one-letter token class the templates know.
TOKEN_CLASSES = {
    "comment": "c",
    "string": "s",
    "number": "n",
    "preproc": "p",
    "cuda": "m",
    "keyword": "k",
    "constant": "b",
    "type": "t",
    "function": "f",
}

# Bump when the queries or the slicing change: it is part of every cache key.
HIGHLIGHT_VERSION = "2"

QUERIES_DIR = Path(__file__).parent / "queries"

Line = tuple[tuple[int, int, str], ...]




@lru_cache(maxsize=None)
def _grammar(language: str):
    import tree_sitter as ts

    if language == "cuda":
        import tree_sitter_cuda as mod
    elif language == "python":
        import tree_sitter_python as mod
    else:
        raise ValueError(f"no grammar for {language!r}")
    lang = ts.Language(mod.language())
    query = ts.Query(lang, (QUERIES_DIR / f"{language}.scm").read_text(encoding="utf-8"))
    return ts.Parser(lang), query


def highlight(text: str, language: str | None) -> tuple[Line, ...]:
    """Token spans per line (0-based list index = line - 1); plain text is left implicit."""
    lines = text.split("\n")
    if language is None:
        return tuple(() for _ in lines)
    import tree_sitter as ts

    parser, query = _grammar(language)
    data = text.encode("utf-8")
    tree = parser.parse(data)
    caps: list[tuple[int, int, int, int, int, str]] = []
    for name, nodes in ts.QueryCursor(query).captures(tree.root_node).items():
        cls = TOKEN_CLASSES[name]
        for node in nodes:
            sb = node.start_byte
            eb = node.end_byte
            if eb > sb:
                (r0, c0), (r1, c1) = node.start_point, node.end_point
                caps.append((sb, -eb, r0, c0, r1, c1, cls))  # type: ignore[arg-type]
    caps.sort()
    out: list[list[tuple[int, int, str]]] = [[] for _ in lines]
    ascii_text = len(data) == len(text)
    blines = None if ascii_text else data.split(b"\n")
    last_end = -1
    for sb, neb, r0, c0, r1, c1, cls in caps:  # type: ignore[misc]
        if sb < last_end:  # inside an earlier, wider capture (a string's escape, ...)
            continue
        last_end = -neb
        for row in range(r0, min(r1, len(lines) - 1) + 1):
            a = c0 if row == r0 else 0
            b = c1 if row == r1 else None
            if blines is not None:
                lb = blines[row]
                a = len(lb[:a].decode("utf-8", "replace"))
                b = None if b is None else len(lb[:b].decode("utf-8", "replace"))
            if b is None:
                b = len(lines[row])
            if b > a:
                out[row].append((a, b, cls))
    return tuple(tuple(x) for x in out)


def content_key(text: str, language: str | None) -> str:
    h = hashlib.sha256()
    h.update(f"{HIGHLIGHT_VERSION}\0{language}\0".encode())
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


_CLASSES = frozenset(TOKEN_CLASSES.values())


def _decode(raw: bytes) -> tuple[Line, ...] | None:
    """A cached result, or None when the file is not one we wrote (it is then recomputed)."""
    try:
        data = json.loads(raw)
        return tuple(
            tuple((a, b, c) for a, b, c in line if type(a) is int and type(b) is int and c in _CLASSES)
            for line in data
        )
    except (ValueError, TypeError, RecursionError):
        return None


def cached_highlight(text: str, language: str | None, cache_dir: Path | None) -> tuple[Line, ...]:
    """`highlight`, memoised on disk by content (a cache miss costs one parse)."""
    if cache_dir is None:
        return highlight(text, language)
    path = cache_dir / f"{content_key(text, language)}.json"
    try:
        cached = _decode(path.read_bytes())
    except OSError:
        cached = None
    if cached is not None and len(cached) == text.count("\n") + 1:
        return cached
    result = highlight(text, language)
    try:
        write_atomic(path, json.dumps(result, separators=(",", ":")).encode())
    except OSError:
        pass  # a read-only cache only costs speed
    return result

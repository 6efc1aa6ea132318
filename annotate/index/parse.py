"""Grammars, queries and macro tables: everything the extractor takes as data.

Imports tree-sitter, so only the index modules that really parse import this one.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
QUERIES_DIR = HERE / "queries"
RULES_FILE = HERE / "rules" / "memory.yaml"
MACROS_FILE = HERE / "macros.yaml"

# Bump when the extractor's output changes for the same input; cached entries then miss.
EXTRACTOR_VERSION = "1"

CUDA_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".cxx", ".hh", ".inl")
PYTHON_SUFFIXES = (".py",)


def language_of(path: str) -> str | None:
    p = path.lower()
    if p.endswith(CUDA_SUFFIXES):
        return "cuda"
    if p.endswith(PYTHON_SUFFIXES):
        return "python"
    return None


@functools.cache
def ts_language(language: str):
    from tree_sitter import Language

    if language == "cuda":
        import tree_sitter_cuda as mod
    elif language == "python":
        import tree_sitter_python as mod
    else:
        raise ValueError(f"no grammar for {language!r}")
    return Language(mod.language())


@functools.cache
def parser(language: str):
    from tree_sitter import Parser

    return Parser(ts_language(language))


def query_files() -> list[Path]:
    return sorted(QUERIES_DIR.glob("*.scm"))


@functools.cache
def query(name: str):
    """Query `queries/<name>.scm`, compiled against the grammar named by its prefix."""
    from tree_sitter import Query

    language = name.split("-", 1)[0]
    return Query(ts_language(language), (QUERIES_DIR / f"{name}.scm").read_text(encoding="utf-8"))


def captures(name: str, node) -> dict[str, list]:
    from tree_sitter import QueryCursor

    return QueryCursor(query(name)).captures(node)


def matches(name: str, node) -> list[dict[str, list]]:
    from tree_sitter import QueryCursor

    return [m for _, m in QueryCursor(query(name)).matches(node)]


# ---- macros -------------------------------------------------------------------------------

@dataclass(frozen=True)
class MacroTable:
    qualifiers: dict[str, tuple[str, ...]]  # macro -> qualifiers it stands for
    blank: dict[str, bool]  # macro -> also blank its (...) argument list
    namespaces: dict[str, str]  # macro -> namespace name
    pattern: re.Pattern | None  # matches any token to blank (bytes)
    launchers: dict[str, int]  # runtime launch call -> index of its kernel argument
    not_calls: frozenset[str]  # call-like names that are never edges (casts, sizeof, ...)
    definers: dict[str, dict]  # macro that defines a function -> {name, qualifiers, template}


@functools.cache
def macro_table() -> MacroTable:
    raw = yaml.safe_load(MACROS_FILE.read_text(encoding="utf-8")) or {}
    quals = {k: tuple(v or ()) for k, v in (raw.get("qualifiers") or {}).items()}
    blank = {k: bool((v or {}).get("args")) for k, v in (raw.get("blank") or {}).items()}
    ns = {k: str(v) for k, v in (raw.get("namespaces") or {}).items()}
    names = sorted(set(quals) | set(blank), key=len, reverse=True)
    pat = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b") if names else None
    launchers = {str(k): int(v) for k, v in (raw.get("launchers") or {}).items()}
    definers = {str(k): dict(v or {}) for k, v in (raw.get("definers") or {}).items()}
    return MacroTable(quals, blank, ns, pat, launchers, frozenset(raw.get("not_calls") or ()), definers)


_PREPROC_LINE = re.compile(rb"^[ \t]*#", re.M)


def blank_macros(src: bytes, table: MacroTable | None = None) -> tuple[bytes, int]:
    """Replace every listed macro token (outside preprocessor lines) with spaces of the same
    length, so the grammar sees plain C++ and every byte offset, line and column stays exact.
    Returns (text, number of tokens blanked)."""
    table = table or macro_table()
    if table.pattern is None:
        return src, 0
    buf = bytearray(src)
    count = 0
    for m in table.pattern.finditer(src):
        line_start = src.rfind(b"\n", 0, m.start()) + 1
        if _PREPROC_LINE.match(src, line_start) and src[line_start:m.start()].strip().startswith(b"#"):
            continue
        end = m.end()
        if table.blank.get(m.group(1).decode(), False):
            end = _balanced_args_end(src, end)
        for i in range(m.start(), end):
            if buf[i] not in (0x0A, 0x0D):
                buf[i] = 0x20
        count += 1
    return bytes(buf), count


def _balanced_args_end(src: bytes, pos: int) -> int:
    i = pos
    while i < len(src) and src[i] in b" \t":
        i += 1
    if i >= len(src) or src[i] != ord("("):
        return pos
    depth = 0
    for j in range(i, len(src)):
        c = src[j]
        if c == ord("("):
            depth += 1
        elif c == ord(")"):
            depth -= 1
            if depth == 0:
                return j + 1
    return pos


# ---- the version of everything that decides the output -------------------------------------

@functools.cache
def tool_version() -> str:
    """Hash of the extractor version, grammar versions, queries, macro table and rules: a
    cached per-file result is reused only when all of them are unchanged."""
    import importlib.metadata as md

    h = hashlib.sha256(EXTRACTOR_VERSION.encode())
    for dist in ("tree-sitter", "tree-sitter-cuda", "tree-sitter-python"):
        try:
            h.update(f"{dist}={md.version(dist)}".encode())
        except md.PackageNotFoundError:
            h.update(dist.encode())
    for p in [*query_files(), MACROS_FILE, RULES_FILE]:
        h.update(p.name.encode())
        h.update(p.read_bytes() if p.exists() else b"")
    for p in sorted(HERE.glob("extract*.py")) + [HERE / "facts.py", HERE / "fingerprint.py"]:
        h.update(p.read_bytes() if p.exists() else b"")
    return h.hexdigest()[:16]


@functools.cache
def resolve_version() -> str:
    """Version of the cross-file step: a resolved snapshot is reused only when it is unchanged."""
    h = hashlib.sha256(tool_version().encode())
    h.update((HERE / "resolve.py").read_bytes())
    return h.hexdigest()[:16]

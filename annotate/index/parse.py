"""Grammars, queries and macro tables: everything the extractor takes as data.

Imports tree-sitter, so only the index modules that really parse import this one.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
QUERIES_DIR = HERE / "queries"
RULES_FILE = HERE / "rules" / "memory.yaml"
MACROS_FILE = HERE / "macros.yaml"

# Bump when the extractor's output changes for the same input; cached entries then miss.
EXTRACTOR_VERSION = "1"

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


def in_document_order(nodes: list) -> list:
    """Captured nodes sorted by position (outer before inner at one start). tree-sitter's
    `captures()` lists them in an order that varies from call to call, which made the include
    list and the choice among same-line facts differ between two builds of the same tree."""
    return sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte, n.type))


@functools.cache
def combined_query(language: str, names: tuple[str, ...], extra: tuple[tuple[str, str], ...]):
    """One query made of several (`queries/<name>.scm` and (name, source) pairs), and the name
    each of its patterns came from."""
    from tree_sitter import Query

    sources = [(n, (QUERIES_DIR / f"{n}.scm").read_text(encoding="utf-8")) for n in names] + list(extra)
    owner: list[str] = []
    for n, text in sources:
        owner += [n] * Query(ts_language(language), text).pattern_count
    return Query(ts_language(language), "\n".join(text for _, text in sources)), tuple(owner)


def run_queries(language: str, node, names: tuple[str, ...], extra: tuple[tuple[str, str], ...] = ()
                ) -> dict[str, list[dict[str, list]]]:
    """The matches of several queries from one walk over the tree (each query separately walks
    it again): name -> its matches, in the order the query alone gives them."""
    from tree_sitter import QueryCursor

    q, owner = combined_query(language, names, extra)
    out: dict[str, list[dict[str, list]]] = {n: [] for n in owner}
    cursor = QueryCursor(q)
    for idx, m in cursor.matches(node):
        out[owner[idx]].append(m)
    if cursor.did_exceed_match_limit:  # never seen; matches would be missing, so say so
        raise RuntimeError("tree-sitter query match limit exceeded")
    return out


def captured(found: list[dict[str, list]], name: str) -> list:
    """The nodes captured as `name` over a query's matches, in document order."""
    return in_document_order([n for m in found for n in m.get(name, ())])


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
    # macro whose last argument is a function's body -> {name, qualifiers, template}
    body_definers: dict[str, dict] = field(default_factory=dict)
    body_pattern: re.Pattern | None = None  # matches any of them (bytes)


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
    bodies = body_definers(raw.get("body_definers") or {})
    body_pat = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in sorted(bodies, key=len, reverse=True))
                          + rb")\b") if bodies else None
    return MacroTable(quals, blank, ns, pat, launchers, frozenset(raw.get("not_calls") or ()), definers, bodies,
                      body_pat)


def body_definers(raw: dict) -> dict[str, dict]:
    """The `body_definers:` table, checked: the macro's name is written over with the function's,
    in place, so the function's name must be an identifier no longer than the macro's."""
    from annotate.errors import AnnotateError

    out = {str(k): dict(v or {}) for k, v in raw.items()}
    for k, v in out.items():
        name = str(v.get("name", ""))
        if not re.fullmatch(r"[A-Za-z_]\w*", name) or len(name) > len(k):
            raise AnnotateError(f"{MACROS_FILE.name}: body_definers.{k}: name must be an identifier no longer than {k}")
    return out


_PREPROC_LINE = re.compile(rb"^[ \t]*#", re.M)


def blank_macros(src: bytes, table: MacroTable | None = None) -> tuple[bytes, int]:
    """Replace every listed macro token (outside preprocessor lines) with spaces of the same
    length, so the grammar sees plain C++ and every byte offset, line and column stays exact;
    and write each body definer's call as the function it defines (`_define_bodies`).
    Returns (text, number of tokens blanked or rewritten)."""
    table = table or macro_table()
    buf = bytearray(src)
    count = 0
    for m in table.pattern.finditer(src) if table.pattern is not None else ():
        if _in_directive(src, m.start()):
            continue
        end = m.end()
        if table.blank.get(m.group(1).decode(), False):
            end = _balanced_args_end(src, end)
        buf[m.start():end] = _blank(src[m.start():end])
        count += 1
    count += _define_bodies(src, buf, table)
    return bytes(buf), count


def _in_directive(src: bytes, pos: int) -> bool:
    line_start = src.rfind(b"\n", 0, pos) + 1
    return bool(_PREPROC_LINE.match(src, line_start)) and src[line_start:pos].strip().startswith(b"#")


def _define_bodies(src: bytes, buf: bytearray, table: MacroTable) -> int:
    """FlashInfer's variants register their hooks with macros whose last argument is the body:
    `REGISTER_LOGITS_MASK(params, batch_idx, ..., { body })` defines `LogitsMask(...) { body }`.
    The grammar reads such a call as an expression, or as a broken definition of a function
    named after the macro. Written in place (same length) as `LogitsMask          (params,
    batch_idx, ...) { body };`, it parses as a definition of the function the macro defines;
    extract takes the rest (qualifiers, template parameters) from the table. Returns how many
    calls were written."""
    if table.body_pattern is None:
        return 0
    count = 0
    for m in table.body_pattern.finditer(src):
        if _in_directive(src, m.start()):
            continue
        end = _balanced_args_end(src, m.end())
        if end == m.end():
            continue  # not a call
        open_ = src.index(b"(", m.end())
        close = end - 1
        inner = _CODE_SKIP.sub(_blank_match, src[open_ + 1:close])
        depth, last = 0, -1
        for i, c in enumerate(inner):
            if c in b"([{":
                depth += 1
            elif c in b")]}":
                depth -= 1
            elif c == ord(",") and depth == 0:
                last = i
        body = inner[last + 1:].strip()
        if last < 0 or not (body.startswith(b"{") and body.endswith(b"}")):
            continue  # no body as the last argument
        name = table.body_definers[m.group(1).decode()]["name"].encode()
        buf[m.start():m.end()] = name.ljust(m.end() - m.start())
        buf[open_ + 1 + last] = ord(")")
        buf[close] = ord(";")  # an empty declaration: the next head does not start on this line
        count += 1
    return count


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

def _dist_version(dist: str) -> str | None:
    """An installed distribution's version, read from its dist-info directory's name beside the
    package (importing importlib.metadata alone costs a warm command ~80 ms), else from
    importlib.metadata; None when it is not installed."""
    import importlib.util

    mod = dist.replace("-", "_")
    spec = importlib.util.find_spec(mod)
    if spec is not None and spec.origin:
        hits = list(Path(spec.origin).parent.parent.glob(f"{mod}-*.dist-info"))
        if len(hits) == 1:
            return hits[0].name[len(mod) + 1: -len(".dist-info")]
    import importlib.metadata as md

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


@functools.cache
def tool_version() -> str:
    """Hash of the extractor version, grammar versions, queries, macro table and rules: a
    cached per-file result is reused only when all of them are unchanged."""
    h = hashlib.sha256(EXTRACTOR_VERSION.encode())
    for dist in ("tree-sitter", "tree-sitter-cuda", "tree-sitter-python"):
        v = _dist_version(dist)
        h.update(f"{dist}={v}".encode() if v else dist.encode())
    for p in [*query_files(), MACROS_FILE, RULES_FILE]:
        h.update(p.name.encode())
        h.update(p.read_bytes() if p.exists() else b"")
    for p in sorted(HERE.glob("extract*.py")) + [HERE / n for n in ("facts.py", "fingerprint.py", "cst.py", "model.py", "parse.py")]:
        h.update(p.read_bytes() if p.exists() else b"")
    return h.hexdigest()[:16]


@functools.cache
def resolve_version() -> str:
    """Version of the cross-file step: a resolved snapshot is reused only when it is unchanged."""
    h = hashlib.sha256(tool_version().encode())
    h.update((HERE / "resolve.py").read_bytes())
    h.update((HERE / "uses.py").read_bytes())
    return h.hexdigest()[:16]


# ---- preprocessor conditionals with unbalanced braces -------------------------------------

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")
# every byte but line breaks -> a space (bytes.translate: no regex, no callback per byte run)
_BLANK = bytes(b if b in b"\n\r" else 0x20 for b in range(256))


def _blank(data: bytes) -> bytes:
    return data.translate(_BLANK)


def _blank_match(m: re.Match) -> bytes:
    return m.group(0).translate(_BLANK)


_DIRECTIVE_LINE = re.compile(rb"^[ \t]*#[^\n]*", re.M)
_CODE_SKIP = re.compile(
    rb'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def _brace_balance_per_line(src: bytes) -> list[tuple[int, int]]:
    """({ minus }, ( minus )) per line, ignoring comments, strings, char literals and
    preprocessor lines (with their continuations): a `#define X {` is no code brace."""
    skip = _CODE_SKIP.sub(_blank_match, src)
    out = []
    in_directive = False
    for line in skip.split(b"\n"):
        if in_directive or line.lstrip().startswith(b"#"):
            in_directive = line.rstrip().endswith(b"\\")
            out.append((0, 0))
            continue
        out.append((line.count(b"{") - line.count(b"}"), line.count(b"(") - line.count(b")")))
    return out


def blank_unbalanced_conditionals(src: bytes) -> tuple[bytes, int]:
    """tree-sitter parses every branch of `#if`; a group whose braces or parentheses do not
    balance (FlashInfer's `#if (__CUDA_ARCH__ < 800) if constexpr (...) { ... } else { #endif` ...
    `#if } #endif`, or a function head split across `#if __launch_bounds__(...) f( #else f( #endif`)
    turns the rest of the file, or the function, into ERROR nodes. Such groups are blanked (same
    length, newlines kept): wholly when their branches disagree, all but the first branch when
    every branch opens or closes the same amount (the parser then sees one consistent variant).
    Returns (text, number of groups blanked)."""
    if not re.search(rb"^[ \t]*#[ \t]*if", src, re.M):
        return src, 0
    lines = src.split(b"\n")
    bal = _brace_balance_per_line(src)
    blank_ranges: list[tuple[int, int]] = []  # inclusive line ranges
    # stack of groups: {"start": line, "branches": [[start_line, (braces, parens)]]}
    stack: list[dict] = []
    zero = (0, 0)
    groups = 0
    for i, line in enumerate(lines):
        m = _DIRECTIVE.match(line)
        if m:
            d = m.group(1)
            if d.startswith(b"if"):
                stack.append({"start": i, "branches": [[i, zero]]})
                continue
            if not stack:
                continue
            g = stack[-1]
            if d in (b"elif", b"elifdef", b"elifndef", b"else"):
                g["branches"].append([i, zero])
                continue
            # endif
            stack.pop()
            balances = [b for _, b in g["branches"]]
            result = balances[0]
            if any(b != zero for b in balances):
                groups += 1
                if len(balances) > 1 and all(b == balances[0] for b in balances):
                    blank_ranges.append((g["start"], g["start"]))  # the #if line, or #endif is missing
                    blank_ranges.append((g["branches"][1][0], i))
                else:
                    blank_ranges.append((g["start"], i))
                    result = zero
            if stack:
                br = stack[-1]["branches"][-1]
                br[1] = (br[1][0] + result[0], br[1][1] + result[1])
            continue
        if stack:
            br = stack[-1]["branches"][-1]
            br[1] = (br[1][0] + bal[i][0], br[1][1] + bal[i][1])
    if not blank_ranges:
        return src, 0
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    buf = bytearray(src)
    for a, b in blank_ranges:
        lo, hi = offsets[a], min(offsets[b + 1] - 1, len(buf))
        buf[lo:hi] = _blank(bytes(buf[lo:hi]))
    return bytes(buf), groups


def prepare_cuda(src: bytes, table: MacroTable | None = None) -> bytes:
    """The text tree-sitter-cuda parses: `src` with listed macros and unbalanced conditional
    groups blanked. Same length and same line breaks, so every position maps 1:1."""
    text, _ = blank_macros(src, table)
    text, _ = blank_unbalanced_conditionals(text)
    return text


_NS_OR_BRACE = re.compile(rb"\bnamespace\b(?:[ \t\r\n]+([A-Za-z_][\w:]*))?[ \t\r\n]*\{|[{}]")


def namespace_ranges(text: bytes) -> list[tuple[int, int, str | None]]:
    """(open brace, close brace, name or None if anonymous) of every namespace block, found by
    brace matching over the text with comments and strings blanked. Independent of the parse
    tree, so a namespace stays right where tree-sitter closes it early after an ERROR."""
    clean = _CODE_SKIP.sub(_blank_match, text)
    clean = _DIRECTIVE_LINE.sub(_blank_match, clean)
    stack: list[tuple[int, str | None, bool]] = []
    out = []
    for m in _NS_OR_BRACE.finditer(clean):
        tok = m.group(0)
        if tok == b"}":
            if stack:
                pos, name, is_ns = stack.pop()
                if is_ns:
                    out.append((pos, m.end(), name))
        elif tok == b"{":
            stack.append((m.start(), None, False))
        else:
            name = m.group(1).decode() if m.group(1) else None
            stack.append((m.end() - 1, name, True))
    for pos, name, is_ns in stack:  # unclosed (truncated file): open to the end
        if is_ns:
            out.append((pos, len(text), name))
    return sorted(out)

"""C++/CUDA text at the level flattening needs: tokens, preprocessor directives and the
top-level pieces of one header (declarations, macro definitions, includes), each with the
namespaces and the preprocessor conditions it sits in.

Why a scanner and not the index's tree-sitter parse: a piece is cut out of its file and
compiled again, so its boundaries must be exactly the compiler's. tree-sitter-cuda recovers
from ~1,300 local parse errors in FlashInfer's include/ and does not model the preprocessor;
a brace/semicolon scanner over real tokens (comments, strings, raw strings and directives
skipped) is exact on any text the compiler accepts, and the compile checks the result anyway.
The index still decides what a function calls (annotate.extract.reach).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from annotate.errors import AnnotateError

# ---- tokens -----------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"""
  (?P<ws>[ \t\r\f\v]+|\\\n)
| (?P<nl>\n)
| (?P<lcom>//(?:[^\n\\]|\\.)*)
| (?P<bcom>/\*.*?\*/)
| (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)")
| (?P<str>(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")
| (?P<chr>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])+')
| (?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)
| (?P<ident>[A-Za-z_$][\w$]*)
| (?P<punct>::|->\*?|\.\.\.|<<=|>>=|<=>|&&|\|\||==|!=|<=|>=|\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=|<<|>>|\#\#|[^\s])
""", re.X | re.S)

_DIRECTIVE_START = re.compile(r"[ \t]*#")
OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}

# C++ keywords and CUDA qualifiers: never the name of something a header declares.
KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq final override defined
__global__ __device__ __host__ __forceinline__ __noinline__ __shared__ __constant__ __managed__
__restrict__ __launch_bounds__ __align__ __grid_constant__ __inline__ __attribute__ __declspec
__cluster_dims__ __maxnreg__
""".split())


@dataclass(frozen=True)
class Token:
    kind: str  # ident | num | str | chr | punct | directive
    text: str
    start: int  # character offsets into the file's text
    end: int
    line: int  # 1-based line of `start`


@dataclass(frozen=True)
class Scan:
    text: str
    tokens: tuple[Token, ...]
    comment_lines: frozenset[int]  # lines holding a comment and nothing else
    line_starts: tuple[int, ...]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def line_start(self, line: int) -> int:
        return self.line_starts[line - 1]

    def line_end(self, line: int) -> int:
        """Offset just past the line's newline (or the end of the text)."""
        return self.line_starts[line] if line < len(self.line_starts) else len(self.text)


def scan(text: str, where: str = "<text>") -> Scan:
    """Tokens of a C++ file; a directive (a `#` first on its line, with its continuation
    lines) is one token. Comments are dropped but the lines they fill alone are recorded."""
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def line_of(off: int) -> int:
        return bisect.bisect_right(line_starts, off)

    tokens: list[Token] = []
    code_lines: set[int] = set()
    comment_lines: set[int] = set()
    pos, n = 0, len(text)
    at_line_start = True
    while pos < n:
        if at_line_start:
            m = _DIRECTIVE_START.match(text, pos)
            if m:
                end = _directive_end(text, m.end())
                ln = line_of(m.end() - 1)
                tokens.append(Token("directive", text[m.end() - 1:end], m.end() - 1, end, ln))
                for k in range(ln, line_of(max(end - 1, m.end())) + 1):
                    code_lines.add(k)
                pos = end
                continue
        m = _TOKEN_RE.match(text, pos)
        if m is None:  # an unterminated comment or literal
            raise AnnotateError(f"{where}:{line_of(pos)}: cannot read this C++ text (unterminated "
                                "comment or literal)")
        kind = m.lastgroup if m.lastgroup != "delim" else "raw"
        if kind == "nl":
            at_line_start = True
        elif kind in ("lcom", "bcom"):
            for k in range(line_of(m.start()), line_of(m.end() - 1) + 1):
                comment_lines.add(k)
        elif kind != "ws":
            at_line_start = False
            kind = {"raw": "str"}.get(kind, kind)
            tokens.append(Token(kind, m.group(), m.start(), m.end(), line_of(m.start())))
            for k in range(line_of(m.start()), line_of(m.end() - 1) + 1):
                code_lines.add(k)
        pos = m.end()
    return Scan(text, tuple(tokens), frozenset(comment_lines - code_lines), tuple(line_starts))


def _directive_end(text: str, pos: int) -> int:
    """End of the directive starting before `pos`: its line, continuation lines, and any
    block comment that starts on it (the preprocessor reads through those)."""
    n = len(text)
    while pos < n:
        c = text[pos]
        if c == "\n":
            return pos
        if c == "\\" and text.startswith("\n", pos + 1):
            pos += 2
            continue
        if text.startswith("/*", pos):
            close = text.find("*/", pos + 2)
            pos = n if close < 0 else close + 2
            continue
        if text.startswith("//", pos):
            close = text.find("\n", pos)
            while close > 0 and text[close - 1] == "\\":
                close = text.find("\n", close + 1)
            return n if close < 0 else close
        if c in "\"'":
            m = _TOKEN_RE.match(text, pos)
            pos = m.end() if m else pos + 1
            continue
        pos += 1
    return n


# ---- directives ---------------------------------------------------------------------------------

_DIRECTIVE_RE = re.compile(r"#\s*(\w*)(.*)", re.S)
_COMMENTS_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def directive_parts(tok: Token) -> tuple[str, str]:
    """('include', '<cuda.h>') for `#  include <cuda.h>`: the name and the rest, comments
    removed and continuation lines joined."""
    body = tok.text.replace("\\\n", " ")
    m = _DIRECTIVE_RE.match(body)
    if not m:
        return "", ""
    rest = _COMMENTS_RE.sub(" ", m.group(2))
    return m.group(1), " ".join(rest.split())


def identifiers(text: str) -> list[str]:
    """Identifiers of a piece of C++ (comments and literals skipped)."""
    return [t.text for t in scan(text).tokens if t.kind == "ident"]


# ---- pieces -------------------------------------------------------------------------------------

DECL, DEFINE, UNDEF, INCLUDE, PRAGMA, DIRECTIVE = "decl", "define", "undef", "include", "pragma", "directive"


@dataclass(frozen=True)
class Piece:
    """One top-level piece of a header: emitted as its own text, in its namespaces, under its
    conditions."""

    kind: str  # DECL | DEFINE | UNDEF | INCLUDE | PRAGMA | DIRECTIVE
    first_line: int  # 1-based, inclusive: the lines the piece's text covers
    last_line: int
    start: int  # character offsets of the text to emit
    end: int
    namespaces: tuple[str, ...]  # openers in force, outermost first: "namespace flashinfer {"
    conditions: tuple[str, ...]  # #if expressions in force, outermost first
    tok_lo: int  # token index range of the piece in its Scan
    tok_hi: int
    directive: str = ""  # for directive pieces: the directive's name ("define", "include", ...)
    argument: str = ""  # the rest of the directive line


@dataclass(frozen=True)
class SplitFile:
    path: str
    scan: Scan
    pieces: tuple[Piece, ...]
    guard: str | None  # the include-guard macro, if the file has one (its condition is dropped)
    guard_tokens: tuple[int, ...] = ()  # token indices of the guard's #ifndef and #endif
    condition_idents: dict = field(default_factory=dict)  # condition text -> identifiers in it

    def text_of(self, piece: Piece) -> str:
        """The piece's text; a guard directive inside it (fp16.h's #endif before its last '}')
        becomes an empty line, so lines still match the header's."""
        text = self.scan.text[piece.start:piece.end]
        for k in self.guard_tokens:
            tok = self.scan.tokens[k]
            if piece.start <= tok.start and tok.end <= piece.end:
                a, b = tok.start - piece.start, tok.end - piece.start
                text = text[:a] + "\n" * tok.text.count("\n") + text[b:]
        return text


@dataclass
class _Cond:
    tested: list[str]  # the expressions of the branches before the current one
    current: str | None  # the current branch's expression (None: #else)
    line: int

    def render(self) -> str:
        parts = [f"!({c})" for c in self.tested]
        if self.current is not None:
            parts.append(self.current if not self.tested else f"({self.current})")
        return " && ".join(parts)


def _cond_expr(name: str, arg: str) -> str:
    if name == "ifdef":
        return f"defined({arg})"
    if name == "ifndef":
        return f"!defined({arg})"
    return arg


def _find_guard(toks: tuple[Token, ...]) -> tuple[str | None, int, int]:
    """(macro, index of its #ifndef, index of the closing #endif) of a classic include guard,
    or (None, -1, -1). `#pragma once` may come first."""
    i = 0
    while i < len(toks) and toks[i].kind == "directive" and directive_parts(toks[i])[0] == "pragma":
        i += 1
    if i + 1 >= len(toks) or toks[i].kind != "directive" or toks[i + 1].kind != "directive":
        return None, -1, -1
    n1, a1 = directive_parts(toks[i])
    n2, a2 = directive_parts(toks[i + 1])
    if n1 == "if" and a1.startswith("!defined"):
        n1, a1 = "ifndef", a1[len("!defined"):].strip("() ")
    if n1 != "ifndef" or n2 != "define" or a2.split()[:1] != [a1]:
        return None, -1, -1
    # Its #endif usually ends the file, but not always (FlashInfer's fp16.h closes it before
    # the last function's '}'): a guard only makes a second inclusion empty, and the flattening
    # includes every file once, so the pair is dropped wherever the #endif stands.
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].kind != "directive":
            continue
        name = directive_parts(toks[j])[0]
        if name in ("if", "ifdef", "ifndef"):
            depth += 1
        elif name == "endif":
            depth -= 1
            if depth == 0:
                return a1, i, j
    return None, -1, -1


def split(text: str, path: str = "<text>") -> SplitFile:
    """Cut one header into its top-level pieces."""
    sc = scan(text, path)
    toks = sc.tokens
    guard, guard_if, guard_endif = _find_guard(toks)
    pieces: list[Piece] = []
    ns: list[str] = []
    conds: list[_Cond] = []
    n = len(toks)
    i = 0

    def where(k: int) -> str:
        return f"{path}:{toks[min(k, n - 1)].line}" if n else path

    def add(kind: str, lo: int, hi: int, directive: str = "", argument: str = "") -> None:
        pieces.append(_make_piece(sc, kind, lo, hi, tuple(ns), tuple(c.render() for c in conds),
                                  directive, argument, pieces))

    while i < n:
        t = toks[i]
        if t.kind == "directive":
            name, arg = directive_parts(t)
            if i in (guard_if, guard_endif):
                i += 1
                continue
            if name in ("if", "ifdef", "ifndef"):
                conds.append(_Cond([], _cond_expr(name, arg), t.line))
            elif name in ("elif", "elifdef", "elifndef"):
                if not conds:
                    raise AnnotateError(f"{where(i)}: #{name} without #if")
                c = conds[-1]
                c.tested.append(c.current or "1")
                c.current = _cond_expr({"elifdef": "ifdef", "elifndef": "ifndef"}.get(name, "if"), arg)
            elif name == "else":
                if not conds:
                    raise AnnotateError(f"{where(i)}: #else without #if")
                c = conds[-1]
                c.tested.append(c.current or "1")
                c.current = None
            elif name == "endif":
                if not conds:
                    raise AnnotateError(f"{where(i)}: #endif without #if")
                conds.pop()
            elif name == "define":
                add(DEFINE, i, i + 1, name, arg)
            elif name == "undef":
                add(UNDEF, i, i + 1, name, arg)
            elif name in ("include", "include_next"):
                add(INCLUDE, i, i + 1, name, arg)
            elif name == "pragma":
                if arg.split()[:1] != ["once"]:
                    add(PRAGMA, i, i + 1, name, arg)
            elif name:
                add(DIRECTIVE, i, i + 1, name, arg)
            i += 1
            continue
        if t.text == "}":
            if not ns:
                raise AnnotateError(f"{where(i)}: unbalanced '}}' at file scope")
            ns.pop()
            i += 1
            continue
        if t.text == ";":
            i += 1
            continue
        opener = _namespace_opener(toks, i)
        if opener is not None:
            text_, j = opener
            ns.append(text_)
            i = j
            continue
        j = _decl_end(toks, i, where, (guard_if, guard_endif))
        add(DECL, i, j)
        i = j
    if conds:
        raise AnnotateError(f"{path}:{conds[-1].line}: #if without #endif")
    if ns:
        raise AnnotateError(f"{path}: a namespace is still open at the end of the file")
    cidents = {}
    for p in pieces:
        for c in p.conditions:
            if c not in cidents:
                cidents[c] = [x for x in identifiers(c) if x != "defined"]
    gtoks = tuple(k for k in (guard_if, guard_endif) if k >= 0)
    return SplitFile(path, sc, tuple(pieces), guard, gtoks, cidents)


def _namespace_opener(toks: tuple[Token, ...], i: int) -> tuple[str, int] | None:
    """`namespace a::b {`, `inline namespace x {`, `namespace {`, `extern "C" {`: (the opener's
    text, the index after its '{'); None for anything else (an alias is a declaration)."""
    j = i
    if toks[j].text == "inline" and j + 1 < len(toks) and toks[j + 1].text == "namespace":
        j += 1
    if toks[j].text == "namespace":
        k = j + 1
        while k < len(toks) and (toks[k].kind == "ident" or toks[k].text == "::"):
            k += 1
        if k < len(toks) and toks[k].text == "{":
            return " ".join(t.text for t in toks[i:k + 1]), k + 1
        return None
    if toks[j].text == "extern" and j + 2 < len(toks) and toks[j + 1].kind == "str" and toks[j + 2].text == "{":
        return " ".join(t.text for t in toks[i:j + 3]), j + 3
    return None


def template_head_ends(toks: tuple[Token, ...], lo: int, hi: int) -> dict[int, int]:
    """index of each `template` keyword followed by `<` -> index just past its matching `>`."""
    out = {}
    k = lo
    while k < hi:
        if toks[k].text == "template" and k + 1 < hi and toks[k + 1].text == "<":
            depth, paren, m = 0, 0, k + 1
            while m < hi:
                x = toks[m].text
                if x in ("(", "[", "{"):
                    paren += 1
                elif x in (")", "]", "}"):
                    paren -= 1
                elif paren == 0 and x == "<":
                    depth += 1
                elif paren == 0 and x in (">", ">>"):
                    depth -= len(x)
                    if depth <= 0:
                        break
                m += 1
            out[k] = m + 1
            k = m + 1
            continue
        k += 1
    return out


_CLASS_KEYS = ("class", "struct", "union", "enum")
_MACRO_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Macro-like names that qualify the declaration that follows them rather than stand alone.
_HEAD_ATTRIBUTES = frozenset({"__launch_bounds__", "__align__", "alignas", "__attribute__", "__declspec",
                              "__cluster_dims__", "__maxnreg__"})
# What may follow `NAME(...)` on the next line when it is a function head, not a macro call.
_HEAD_CONTINUES = frozenset({"{", ";", ":", ",", "=", "const", "noexcept", "->", "override", "final", "throw",
                             "&", "&&", "requires", "volatile", "__attribute__", "try"})


def _is_invocation_end(toks: tuple[Token, ...], i: int, k: int) -> bool:
    """toks[i:k+1] is `MACRO(...)` standing alone at file scope (no ';' follows: FlashInfer's
    `DEFINE_HAS_MEMBER(maybe_mask_indptr)`), with the next declaration on a later line."""
    if k + 1 >= len(toks) or toks[i].kind != "ident" or toks[i + 1].text != "(":
        return False
    name = toks[i].text
    nxt = toks[k + 1]
    return (bool(_MACRO_NAME.match(name)) and name not in _HEAD_ATTRIBUTES and nxt.line > toks[k].line
            and (nxt.kind == "directive" or nxt.text not in _HEAD_CONTINUES))


def _decl_end(toks: tuple[Token, ...], i: int, where, skip: tuple[int, ...] = ()) -> int:
    """Index just past the declaration starting at toks[i]: its ';' at depth 0, or the '}'
    closing a function body (and a ';' right after it, if any)."""
    n = len(toks)
    heads = template_head_ends(toks, i, n)
    depth = 0
    braced = False  # a top-level brace group has closed in this declaration
    class_like = False
    initialised = False
    inner_if = 0  # conditionals opened inside this declaration
    k = i
    while k < n:
        if k in heads and depth == 0:
            k = heads[k]
            continue
        t = toks[k]
        x = t.text
        if t.kind == "directive":
            name = directive_parts(t)[0]
            if k in skip:
                k += 1
                continue
            if name in ("if", "ifdef", "ifndef"):
                inner_if += 1
            elif name == "endif":
                inner_if -= 1
            if inner_if < 0:
                raise AnnotateError(f"{where(k)}: a preprocessor conditional closes inside a "
                                    "declaration it did not open; the flattening cannot cut it")
            k += 1
            continue
        if depth == 0 and not braced:
            if x in _CLASS_KEYS:
                class_like = True
            elif x == "=" and not (k > i and toks[k - 1].text == "operator"):
                initialised = True
        if x in OPEN:
            depth += 1
        elif x in CLOSE:
            depth -= 1
            if depth == 0 and x == ")" and inner_if == 0 and not braced and _matching_open(toks, k) == i + 1 \
                    and _is_invocation_end(toks, i, k):
                return k + 1
            if depth < 0 and x == "}" and inner_if == 0 and k > i:
                # The enclosing namespace closes: what came before is a run of macro
                # invocations without ';' (`EXTERN_TEMPLATES(A)` lines), one piece.
                return k
            if depth < 0:
                raise AnnotateError(f"{where(k)}: unbalanced '{x}'")
            if x == "}" and depth == 0:
                braced = True
                if not class_like and not initialised:
                    nxt = k + 1
                    while nxt < n and toks[nxt].kind == "directive" and inner_if > 0:
                        nxt += 1
                    if nxt < n and toks[nxt].text in (",", "{", ":"):
                        k += 1
                        continue  # a member-initializer like `a{1},` or `b{2} {`
                    if nxt < n and toks[nxt].text == ";":
                        nxt += 1
                    if inner_if == 0:
                        return nxt
        elif x == ";" and depth == 0:
            if inner_if == 0:
                return k + 1
        k += 1
    if depth == 0 and inner_if == 0:
        return n  # macro invocations without ';' at the end of the file
    raise AnnotateError(f"{where(i)}: declaration without an end (missing ';' or '}}')")


def _matching_open(toks: tuple[Token, ...], k: int) -> int:
    depth = 0
    for j in range(k, -1, -1):
        x = toks[j].text
        if x in CLOSE:
            depth += 1
        elif x in OPEN:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _make_piece(sc: Scan, kind: str, lo: int, hi: int, ns: tuple[str, ...], conds: tuple[str, ...],
                directive: str, argument: str, before: list[Piece]) -> Piece:
    toks = sc.tokens
    first, last = toks[lo], toks[hi - 1]
    first_line, last_line = first.line, sc.line_of(last.end - 1)
    # Start of the line when only blanks precede the piece there; the same at the end (a
    # trailing comment belongs to the piece).
    line_lo = sc.line_start(first_line)
    start = line_lo if not sc.text[line_lo:first.start].strip() else first.start
    line_hi = sc.line_end(last_line)
    after = sc.text[last.end:line_hi]
    follows = [t for t in toks[hi:hi + 1] if t.line == last_line]
    end = line_hi if not follows else last.end
    if not after.strip():
        end = line_hi
    # Comment lines right above a declaration are its documentation: they travel with it.
    if kind == DECL and start == line_lo:
        prev_end_line = before[-1].last_line if before else 0
        k = first_line - 1
        while k > prev_end_line and k in sc.comment_lines:
            k -= 1
        if k < first_line - 1:
            first_line = k + 1
            start = sc.line_start(first_line)
    return Piece(kind, first_line, last_line, start, end, ns, conds, lo, hi, directive, argument)

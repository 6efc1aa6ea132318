"""What the harness's instantiation reaches: which pieces of the flattened stream to keep.

Two closures over the same stream:
- **by name** (conservative): a piece is kept when a kept piece (or the harness) mentions a
  name it declares. Types, constants, macros, aliases and template specialisations are found
  this way, from the text: a mention of `vec_t` keeps every specialisation of `vec_t`.
- **by the index**: the same, except that a call site the index resolved (its call edges,
  matched to the token by line and column) keeps only the functions the index resolved it to.

Everything the name closure keeps and the index closure does not, and every piece that shares
its name with another kept piece (overloads, specialisations: which one a use picks is the
compiler's decision), is a *candidate*: annotate.extract.reduce lets the compiler decide
whether it can go. Host-only functions and pieces under conditions on __CUDA_ARCH__ are never
candidates: the compile oracle looks at device code only (see reduce.py).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from annotate.extract.closure import Closure, FlatPiece
from annotate.extract.cxx import (
    DECL, DEFINE, DIRECTIVE, INCLUDE, KEYWORDS, PRAGMA, UNDEF, Token, directive_parts, scan,
    template_head_ends,
)

# Piece kinds beyond the directive kinds of cxx.py.
FUNCTION, CLASS, VARIABLE, ALIAS, MACRO = "function", "class", "variable", "alias", "macro"
USING_NAMESPACE, STATIC_ASSERT, INSTANTIATION, OPERATOR, MEMBER, INVOCATION = (
    "using-namespace", "static-assert", "instantiation", "operator", "member", "invocation")
# Tokens that may precede '(' in a declaration head without being the declared name.
_ATTRIBUTE_CALLS = frozenset({"__launch_bounds__", "__align__", "alignas", "decltype", "__attribute__",
                              "__declspec", "noexcept", "throw", "requires", "sizeof", "alignof",
                              "__cluster_dims__", "__maxnreg__", "static_assert"})
# What may follow a function's parameter list.
_AFTER_PARAMS = frozenset({"{", ";", "const", "noexcept", "->", "override", "final", ":", "=", "&",
                           "&&", "throw", "requires", "volatile", "__attribute__", "try"})


@dataclass(frozen=True)
class PieceInfo:
    """What one piece declares and mentions."""

    kind: str
    declares: frozenset[str]  # names a mention of which keeps this piece
    anchors: frozenset[str]  # kept as soon as any of these is kept (out-of-class members ...)
    refs: frozenset[str]  # names it mentions (upstream or not: filtered when used)
    device: bool  # device code: __device__ / __global__ (directly or through a macro)
    host_only: bool  # a function with no device qualifier
    arch_conditioned: bool  # under a condition on __CUDA_ARCH__ (differs between host and device)
    specialises: str | None = None  # "vec_t<half,8>": an explicit or partial specialisation
    member_of: str | None = None  # "vec_t<half,8>": an out-of-class member definition's class


def _qualifier_macros(pieces: Iterable[FlatPiece]) -> set[str]:
    """Upstream macros that stand for __device__ / __global__ (FLASHINFER_INLINE ...)."""
    out = set()
    for p in pieces:
        if p.kind == DEFINE:
            words = set(p.piece.argument.replace("(", " ").replace(")", " ").split())
            if words & {"__device__", "__global__"} and p.piece.argument.split()[:1]:
                out.add(p.piece.argument.split()[0].split("(")[0])
    return out


def _namespace_names(opener: str) -> list[str]:
    words = opener.replace("{", " ").replace("::", " ").split()
    return [w for w in words if w not in ("namespace", "inline", "extern") and not w.startswith('"')]


def _macro_name_params(argument: str) -> tuple[str, set[str], str]:
    """('NAME', {params}, replacement) of a #define's argument."""
    i = 0
    while i < len(argument) and (argument[i].isalnum() or argument[i] == "_"):
        i += 1
    name = argument[:i]
    rest = argument[i:]
    params: set[str] = set()
    if rest.startswith("("):
        close = rest.find(")")
        params = {p.strip().rstrip(".") for p in rest[1:close].split(",")} | {"__VA_ARGS__"}
        rest = rest[close + 1:]
    return name, params, rest


class Describer:
    """Builds the PieceInfo of every piece of one closure."""

    def __init__(self, closure: Closure, definers: Mapping[str, Mapping] | None = None,
                 qualifier_macros: Iterable[str] = ()):
        self.closure = closure
        self.definers = dict(definers or {})
        self.device_macros = set(qualifier_macros) | _qualifier_macros(closure.pieces)
        ns: set[str] = set()
        for p in closure.pieces:
            for o in p.namespaces:
                ns.update(_namespace_names(o))
        # a namespace named through a macro (`namespace FLASH_NAMESPACE {`) is also its value
        for p in closure.pieces:
            if p.kind == DEFINE:
                name, params, repl = _macro_name_params(p.piece.argument)
                if name in ns and not params and repl.split()[:1]:
                    ns.add(repl.split()[0])
        self.namespaces = frozenset(ns)
        self.macros: dict[str, tuple[list[str], str]] = {}  # function-like macro -> (params, replacement)
        for p in closure.pieces:
            if p.kind == DEFINE:
                name, params, repl = _macro_name_params(p.piece.argument)
                if params:
                    ordered = p.piece.argument[len(name) + 1:].split(")", 1)[0]
                    self.macros[name] = ([x.strip().rstrip(".") or "__VA_ARGS__" for x in ordered.split(",")], repl)

    def pasted_names(self, macro: str, args: list[str]) -> set[str]:
        """Identifiers a top-level invocation of `macro` makes by pasting (`has_##member##_v`
        with member = x -> has_x_v): what the invocation declares, as far as text can tell."""
        if macro not in self.macros:
            return set()
        params, repl = self.macros[macro]
        sub = dict(zip(params, args))
        toks = re.findall(r"##|#|[A-Za-z_]\w*|\d\w*|\S", repl)
        out, i = set(), 0
        while i < len(toks):
            if i + 2 < len(toks) and toks[i + 1] == "##":
                parts, j = [sub.get(toks[i], toks[i])], i
                while j + 2 < len(toks) and toks[j + 1] == "##":
                    parts.append(sub.get(toks[j + 2], toks[j + 2]))
                    j += 2
                out.add("".join(parts))
                i = j + 1
            else:
                i += 1
        return {n for n in out if re.fullmatch(r"[A-Za-z_]\w*", n)}

    def tokens(self, p: FlatPiece) -> tuple[Token, ...]:
        sf = self.closure.header(p.rel).split
        return sf.scan.tokens[p.piece.tok_lo:p.piece.tok_hi]

    def refs_of(self, toks: Iterable[Token]) -> set[str]:
        """Identifiers that may name an upstream top-level entity: not a keyword, not a member
        (`.x`, `->x`), not qualified by anything but an upstream namespace (`cute::x` is cute's).
        A directive inside the piece (`#if defined(ARCH_SUPPORTS_FLASH)` in a kernel body)
        mentions the macros it tests."""
        toks = list(toks)
        out = set()
        for t in toks:
            if t.kind == "directive":
                arg = directive_parts(t)[1]
                out |= {x.text for x in scan(arg).tokens if x.kind == "ident" and x.text not in KEYWORDS}
        toks = [t for t in toks if t.kind != "directive"]
        for k, t in enumerate(toks):
            if t.kind != "ident" or t.text in KEYWORDS:
                continue
            prev = toks[k - 1].text if k else ""
            if prev == "template" and k > 1:
                prev = toks[k - 2].text
            if prev in (".", "->"):
                continue
            if prev == "::" and k > 1:
                q = toks[k - 2]
                if q.kind == "ident" and q.text not in self.namespaces:
                    continue
                if q.kind != "ident" and q.text == ">":
                    continue  # Foo<T>::member
            out.add(t.text)
        return out

    def directive_refs(self, text: str) -> set[str]:
        return self.refs_of(scan(text).tokens)

    def describe(self, p: FlatPiece) -> PieceInfo:
        arch = any("__CUDA_ARCH__" in c for c in p.conditions)
        ctx = set()
        for c in p.conditions:
            ctx |= {x for x in self.directive_refs(c) if x != "defined"}
        for o in p.namespaces:
            ctx |= {x for x in self.directive_refs(o)}
        if p.kind == DEFINE:
            name, params, repl = _macro_name_params(p.piece.argument)
            refs = self.directive_refs(repl) - params
            device = bool(set(repl.split()) & {"__device__", "__global__"})
            return PieceInfo(MACRO, frozenset({name}), frozenset(), frozenset(refs | ctx), device, False, arch)
        if p.kind == UNDEF:
            name = p.piece.argument.split()[0] if p.piece.argument else ""
            return PieceInfo(UNDEF, frozenset(), frozenset({name}), frozenset(ctx), False, False, arch)
        if p.kind in (INCLUDE, PRAGMA, DIRECTIVE):
            return PieceInfo(p.kind, frozenset(), frozenset(), frozenset(ctx | self.directive_refs(p.piece.argument)),
                             False, False, arch)
        return self._describe_decl(p, ctx, arch)

    def _describe_decl(self, p: FlatPiece, ctx: set[str], arch: bool) -> PieceInfo:
        refs = self.refs_of(self.tokens(p)) | ctx
        toks = [t for t in self.tokens(p) if t.kind != "directive"]
        words = {t.text for t in toks}
        device = bool(words & ({"__device__", "__global__"} | self.device_macros))
        heads = template_head_ends(tuple(toks), 0, len(toks))
        sig: list[Token] = []  # the head at depth 0, template heads left out
        k, depth = 0, 0
        while k < len(toks):
            if k in heads and depth == 0:
                k = heads[k]
                continue
            sig.append(toks[k])
            k += 1
        texts = [t.text for t in sig]

        def info(kind, declares=(), anchors=(), host_only=False, specialises=None, member_of=None) -> PieceInfo:
            return PieceInfo(kind, frozenset(declares), frozenset(anchors), frozenset(refs), device,
                             host_only, arch, specialises, member_of)

        if not texts:
            return info(DECL)
        first = texts[0]
        if (sig[0].kind == "ident" and texts[1:2] == ["("] and texts[-1] in (")", ";")
                and first not in self.definers and _macro_like(first)
                and _matching(sig, 1) >= len(sig) - (2 if texts[-1] == ";" else 1)):
            # `DEFINE_HAS_MEMBER(maybe_mask_indptr)`: declares what the expansion pastes
            args = _call_args(sig, 1)
            return info(INVOCATION, self.pasted_names(first, args) | {a for a in args if a.isidentifier()})
        if first == "using":
            if len(texts) > 1 and texts[1] == "namespace":
                return info(USING_NAMESPACE)
            if "=" in texts:
                return info(ALIAS, [texts[1]])
            idents = [t.text for t in sig if t.kind == "ident"]
            return info(ALIAS, idents[-1:])
        if first == "namespace":  # namespace alias
            return info(ALIAS, texts[1:2])
        if first == "typedef":
            return info(ALIAS, _typedef_name(sig))
        if first == "static_assert":
            return info(STATIC_ASSERT)
        if first == "template" or (first == "extern" and texts[1:2] == ["template"]):
            idents = [t.text for t in sig if t.kind == "ident" and t.text not in KEYWORDS]
            return info(INSTANTIATION, (), idents[:1] or ())
        # the head: tokens at depth 0 before the first top-level '{', '=' or ';'
        head, d = [], 0
        for t in sig:
            if d == 0 and t.text in ("{", ";") or (d == 0 and t.text == "=" and (not head or head[-1].text != "operator")):
                break
            if t.text in "([":
                d += 1
            elif t.text in ")]":
                d -= 1
            head.append(t)
        htexts = [t.text for t in head]
        if any(x in ("class", "struct", "union", "enum") for x in htexts) and "(" not in htexts[:1]:
            names, args = _class_name(head)
            if "enum" in htexts:
                names += _enumerators(sig)
            if names and "(" not in htexts:
                return info(CLASS, names, specialises=f"{names[0]}<{args}>" if args is not None else None)
        fn = _function_name(head)
        if fn is not None:
            idx, name = fn
            if name in self.definers:  # DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, ...)
                arg = _macro_argument(head, idx, int(self.definers[name].get("name", 0)))
                q = self.definers[name].get("qualifiers") or []
                return PieceInfo(FUNCTION, frozenset({arg} if arg else set()), frozenset(), frozenset(refs),
                                 device or bool(set(q) & {"__device__", "__global__"}), False, arch)
            quals, owner = _qualifiers(head, idx)
            if name.startswith("operator") and not quals:
                return info(OPERATOR, [name], [r for r in refs if r not in KEYWORDS])
            if quals and quals[-1] not in self.namespaces:
                return info(MEMBER, (), quals[:1], host_only=not device, member_of=owner)
            args = _explicit_args(head, idx)
            return info(FUNCTION, [name], host_only=not device,
                        specialises=f"{name}<{args}>" if args is not None else None)
        idents = [t.text for t in head if t.kind == "ident" and t.text not in KEYWORDS]
        return info(VARIABLE, idents[-1:])


def _macro_like(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Z][A-Z0-9_]*", name))


def _call_args(toks: list[Token], paren: int) -> list[str]:
    """The arguments' texts of the call whose '(' is toks[paren]."""
    out, cur, depth = [], [], 0
    for t in toks[paren + 1:]:
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            if depth == 0:
                break
            depth -= 1
        elif t.text == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(t.text)
    out.append("".join(cur))
    return out


def _typedef_name(sig: list[Token]) -> list[str]:
    texts = [t.text for t in sig]
    for k in range(len(texts) - 3):
        if texts[k] == "(" and texts[k + 1] == "*" and sig[k + 2].kind == "ident" and texts[k + 3] == ")":
            return [texts[k + 2]]
    idents = [t.text for t in sig if t.kind == "ident" and t.text not in KEYWORDS]
    return idents[-1:]


def _args_text(head: list[Token], lt: int) -> tuple[str, int]:
    """('half,8', index past the '>') for the template argument list opening at head[lt]."""
    depth, k = 0, lt
    while k < len(head):
        x = head[k].text
        if x == "<":
            depth += 1
        elif x in (">", ">>"):
            depth -= len(x)
            if depth <= 0:
                break
        elif x in ("(", "["):
            close = _matching(head, k)
            k = close
        k += 1
    return "".join(t.text for t in head[lt + 1:k]), k + 1


def _explicit_args(head: list[Token], paren: int) -> str | None:
    """'float2,__nv_bfloat162' for `cuda_cast<float2, __nv_bfloat162>(` (None: no arguments)."""
    if paren < 2 or head[paren - 1].text not in (">", ">>"):
        return None
    lt = _template_args_start(head, paren - 1)
    return _args_text(head, lt)[0] if lt > 0 else None


def _class_name(head: list[Token]) -> tuple[list[str], str | None]:
    """([name], its specialisation's arguments or None)."""
    texts = [t.text for t in head]
    k = next(i for i, x in enumerate(texts) if x in ("class", "struct", "union", "enum"))
    k += 1
    if k < len(texts) and texts[k] in ("class", "struct"):  # enum class
        k += 1
    name = None
    depth = 0
    while k < len(head):
        x = texts[k]
        if depth == 0 and x == "<" and name is not None:
            return [name], _args_text(head, k)[0]
        if depth == 0 and x in ("<", ":", "final", "{", ";"):
            break
        if x in "([":
            depth += 1
        elif x in ")]":
            depth -= 1
        elif depth == 0 and head[k].kind == "ident" and x not in KEYWORDS:
            if k + 1 < len(texts) and texts[k + 1] == "(":
                k += 1
                continue  # an attribute macro: __align__(16), alignas(16)
            name = x
        k += 1
    return ([name] if name else []), None


def _enumerators(sig: list[Token]) -> list[str]:
    out, depth, expect = [], 0, False
    for t in sig:
        if t.text == "{":
            depth += 1
            expect = depth == 1
            continue
        if t.text == "}":
            depth -= 1
            continue
        if depth == 1:
            if expect and t.kind == "ident":
                out.append(t.text)
            expect = t.text == ","
    return out


def _matching(head: list[Token], k: int) -> int:
    depth = 0
    for j in range(k, len(head)):
        if head[j].text in ("(", "["):
            depth += 1
        elif head[j].text in (")", "]"):
            depth -= 1
            if depth == 0:
                return j
    return len(head) - 1


def _function_name(head: list[Token]) -> tuple[int, str] | None:
    """(index of the '(' of the parameter list, the declared name) of a function head."""
    for k in range(1, len(head)):
        if head[k].text != "(":
            continue
        prev = head[k - 1]
        name = None
        if prev.text in (">", ">>") and not any(t.text == "operator" for t in head[max(0, k - 3):k]):
            j = _template_args_start(head, k - 1)  # name<args>( : an explicit specialisation
            if j > 0 and head[j - 1].kind == "ident":
                prev = head[j - 1]
        if prev.kind == "ident" and prev.text not in _ATTRIBUTE_CALLS and prev.text not in KEYWORDS:
            name = prev.text
        elif prev.kind == "ident" and prev.text == "operator":
            name = "operator()"
        else:
            j = k - 1
            while j > 0 and head[j].text != "operator" and head[j].kind == "punct" and k - j < 4:
                j -= 1
            if head[j].text == "operator":
                name = "operator" + "".join(t.text for t in head[j + 1:k])
            elif j >= 0 and head[j].kind == "ident" and k - j < 4 and j and head[j - 1].text == "operator":
                name = "operator " + head[j].text  # conversion operator
        if name is None:
            continue
        close = _matching(head, k)
        after = head[close + 1].text if close + 1 < len(head) else ";"
        if after in _AFTER_PARAMS or close + 1 >= len(head):
            return k, name
    return None


def _template_args_start(head: list[Token], k: int) -> int:
    """Index of the '<' matching the '>' (or '>>') at k."""
    depth = 0
    for j in range(k, -1, -1):
        x = head[j].text
        if x in (">", ">>"):
            depth += len(x)
        elif x == "<":
            depth -= 1
            if depth <= 0:
                return j
    return -1


def _qualifiers(head: list[Token], paren: int) -> tuple[list[str], str | None]:
    """`Foo<T>::Bar::name(` -> (['Foo', 'Bar'] outermost first, 'Foo<T>::Bar' as written
    without spaces: the class a member definition belongs to)."""
    out = []
    k = paren - 2
    if paren >= 2 and head[paren - 1].text in (">", ">>"):  # name<args>( : skip the arguments
        k = _template_args_start(head, paren - 1) - 2
    start, last_colon = None, k
    while k >= 1 and head[k].text == "::":
        j = k - 1
        if head[j].text in (">", ">>"):  # skip template arguments
            j = _template_args_start(head, j) - 1
        if j < 0 or head[j].kind != "ident":
            break
        out.append(head[j].text)
        start = j
        k = j - 1
    owner = "".join(t.text for t in head[start:last_colon]) if start is not None else None
    return out[::-1], owner


def _macro_argument(head: list[Token], paren: int, n: int) -> str | None:
    depth, arg, cur = 0, 0, []
    for t in head[paren + 1:]:
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif t.text == "," and depth == 0:
            arg += 1
            continue
        if arg == n and t.kind == "ident":
            cur.append(t.text)
    return cur[-1] if cur else None


# ---- the closures -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reach:
    infos: tuple[PieceInfo, ...]
    by_name: frozenset[int]  # piece indices kept by the name closure (always-kept ones included)
    by_index: frozenset[int]  # ... by the index closure
    candidates: tuple[tuple[int, ...], ...]  # units the compiler may drop, in stream order
    likely: frozenset[tuple[int, ...]]  # the units the index says are unreached (tried first, together)
    upstream_names: frozenset[str]
    namespaces: frozenset[str] = frozenset()  # upstream namespace names (macro values included)


def _always(info: PieceInfo) -> bool:
    return info.kind in (INCLUDE, PRAGMA, DIRECTIVE)


def closure_of(infos: tuple[PieceInfo, ...], roots: set[str], *,
               call_targets: Mapping[int, Mapping[str, set[int]]] | None = None,
               call_sites: Mapping[int, Mapping[str, int]] | None = None,
               piece_tokens: Mapping[int, Mapping[str, int]] | None = None) -> set[int]:
    """Indices of the pieces reached from `roots` (names the harness mentions).

    With `call_targets` (piece -> name -> pieces the index resolved that name's call sites
    in this piece to) and the counts of those call sites and of all mentions of the name in
    the piece, a name mentioned *only* at resolved call sites keeps only their targets."""
    declared: dict[str, list[int]] = defaultdict(list)
    anchored: dict[str, list[int]] = defaultdict(list)
    for i, inf in enumerate(infos):
        for n in inf.declares:
            declared[n].append(i)
        for n in inf.anchors:
            anchored[n].append(i)
    kept: set[int] = {i for i, inf in enumerate(infos) if _always(inf)}
    work: list[int] = list(kept)
    names_done: set[str] = set()

    def keep(i: int) -> None:
        if i not in kept:
            kept.add(i)
            work.append(i)

    def mention(name: str) -> None:
        if name in names_done:
            return
        names_done.add(name)
        for i in declared.get(name, ()):
            keep(i)
        for i in anchored.get(name, ()):
            keep(i)

    for r in roots:
        mention(r)
    while work:
        i = work.pop()
        inf = infos[i]
        for n in inf.declares:  # a kept piece keeps what is anchored to its names
            for j in anchored.get(n, ()):
                keep(j)
        targets = (call_targets or {}).get(i, {})
        for r in inf.refs:
            if r in targets and (call_sites or {}).get(i, {}).get(r, 0) == (piece_tokens or {}).get(i, {}).get(r, -1):
                for j in targets[r]:
                    keep(j)
                continue
            mention(r)
    return kept


def settle(kept: set[int], infos: tuple[PieceInfo, ...], pieces: tuple[FlatPiece, ...],
           upstream_namespaces: frozenset[str]) -> set[int]:
    """Add the declarations that declare nothing but must stand beside what they are about:
    a `using namespace X;` where something kept lives in its namespace (and X, if it is an
    upstream namespace, still has something kept), a static_assert whose upstream names are
    all kept, an #undef of a kept macro."""
    kept = set(kept)
    kept_ns = {n for i in kept for o in pieces[i].namespaces for n in _namespace_names(o)}
    contexts = {pieces[i].namespaces for i in kept if infos[i].kind not in (INCLUDE, PRAGMA, DIRECTIVE)}
    declared = {n for i in kept for n in infos[i].declares}
    all_declared = {n for inf in infos for n in inf.declares}
    for i, inf in enumerate(infos):
        if i in kept:
            continue
        if inf.kind == USING_NAMESPACE:
            target = {r for r in inf.refs if r in upstream_namespaces}
            ctx_ok = any(c[:len(pieces[i].namespaces)] == pieces[i].namespaces for c in contexts)
            if ctx_ok and (not target or target & kept_ns):
                kept.add(i)
        elif inf.kind == STATIC_ASSERT:
            ups = inf.refs & all_declared
            if ups and ups <= declared:
                kept.add(i)
        elif inf.kind == UNDEF and inf.anchors & declared:
            kept.add(i)
    return kept


def tidy(keep: Iterable[int], infos: tuple[PieceInfo, ...], pieces: tuple[FlatPiece, ...],
         upstream_namespaces: frozenset[str]) -> set[int]:
    """`keep` without the declarations that only stood beside something no longer kept: a
    `using namespace X;` whose upstream namespace X lost all its pieces, a static_assert
    about names no longer declared. The reduction drops pieces; this keeps what is left
    compilable (a using-directive naming an empty namespace is an error)."""
    keep = set(keep)
    live = [i for i in keep if infos[i].kind not in (USING_NAMESPACE, STATIC_ASSERT, INCLUDE, PRAGMA, DIRECTIVE)]
    kept_ns = {n for i in live for o in pieces[i].namespaces for n in _namespace_names(o)}
    declared = {n for i in live for n in infos[i].declares}
    all_declared = {n for inf in infos for n in inf.declares}
    for i in list(keep):
        inf = infos[i]
        if inf.kind == USING_NAMESPACE:
            target = [r for r in _using_target(pieces[i].text) if r in upstream_namespaces]
            if target and target[-1] not in kept_ns:
                keep.discard(i)
        elif inf.kind == STATIC_ASSERT and not (inf.refs & all_declared) <= declared:
            keep.discard(i)
    return keep


def _using_target(text: str) -> list[str]:
    """['tensorrt_llm', 'common'] for `using namespace tensorrt_llm::common;`."""
    words = [t.text for t in scan(text).tokens if t.kind == "ident"]
    return words[2:] if words[:2] == ["using", "namespace"] else []


def call_maps(closure: Closure, describer: "Describer", index, upstream: str):
    """From the index's call edges: (piece -> name -> pieces its resolved call sites name,
    piece -> name -> number of resolved call sites, piece -> name -> number of mentions)."""
    spans: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for p in closure.pieces:
        if p.kind == DECL:
            spans[p.rel].append((p.first_line, p.last_line, p.index))

    def piece_at(path: str, start: int, end: int) -> int | None:
        best = None
        for lo, hi, i in spans.get(path, ()):
            if lo <= start and end <= hi and (best is None or hi - lo < best[1] - best[0]):
                best = (lo, hi, i)
        return best[2] if best else None

    targets: dict[int, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    sites: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    mentions: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for h in closure.headers:
        try:
            fi = index.file(upstream, h.rel)
        except Exception:  # a header the index does not cover: names decide there
            continue
        sc = h.split.scan
        resolved: dict[tuple[int, int], set[int]] = {}
        for e in fi.edges:
            if not e.callees:
                continue
            tgt = set()
            for key in e.callees:
                try:
                    s = index.symbol(key)
                except Exception:
                    continue
                j = piece_at(s.path, s.start_line, s.end_line) if s.upstream == upstream else None
                if j is not None:
                    tgt.add(j)
            if tgt:
                resolved[(e.line, e.column)] = tgt
        for p in closure.pieces:
            if p.rel != h.rel or p.kind != DECL:
                continue
            for t in describer.tokens(p):
                if t.kind != "ident":
                    continue
                mentions[p.index][t.text] += 1
                hit = resolved.get((t.line, t.start - sc.line_start(t.line)))
                if hit:
                    sites[p.index][t.text] += 1
                    targets[p.index][t.text] |= hit
    return targets, sites, mentions


def compute_reach(closure: Closure, roots: set[str], *, index=None, upstream: str | None = None,
                  definers: Mapping[str, Mapping] | None = None,
                  qualifier_macros: Iterable[str] = ()) -> Reach:
    d = Describer(closure, definers, qualifier_macros)
    infos = tuple(d.describe(p) for p in closure.pieces)
    by_name = settle(closure_of(infos, roots), infos, closure.pieces, d.namespaces)
    if index is not None:
        targets, sites, mentions = call_maps(closure, d, index, upstream or closure.upstream)
        by_index = settle(closure_of(infos, roots, call_targets=targets, call_sites=sites,
                                     piece_tokens=mentions), infos, closure.pieces, d.namespaces)
    else:
        by_index = by_name
    by_index = by_index & by_name
    names = defaultdict(int)
    specialised = set()
    for i in by_name:
        for n in infos[i].declares:
            names[n] += 1
        if infos[i].specialises:
            specialised.add(infos[i].specialises.split("<", 1)[0])
    members: dict[str, list[int]] = defaultdict(list)
    for i in sorted(by_name):
        if infos[i].member_of:
            members[infos[i].member_of.replace(" ", "")].append(i)
    units = []
    for i in sorted(by_name):
        inf = infos[i]
        if _always(inf) or inf.host_only or inf.arch_conditioned or inf.kind in (USING_NAMESPACE, UNDEF, MEMBER):
            continue
        # a primary template stays while any specialisation of it does: they need it declared
        if inf.kind in (CLASS, FUNCTION) and not inf.specialises and inf.declares & specialised:
            continue
        if i not in by_index or any(names[n] > 1 for n in inf.declares):
            # a class specialisation goes together with its out-of-class member definitions
            unit = [i] + (members.get(inf.specialises, []) if inf.kind == CLASS and inf.specialises else [])
            units.append(tuple(unit))
    up_names = frozenset({n for inf in infos for n in inf.declares} | d.namespaces)
    likely = frozenset(u for u in units if all(i not in by_index for i in u))
    return Reach(infos, frozenset(by_name), frozenset(by_index), tuple(units), likely, up_names, d.namespaces)

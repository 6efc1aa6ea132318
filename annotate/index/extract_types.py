"""Per-file extraction of types and macros, and of the raw mentions that become `Use`s.

C++/CUDA: every struct / class / union / enum with a body (`queries/cuda-types.scm`), named by
namespaces (from the text, as functions are) + enclosing classes + its name, with its members
read from the body; every `#define` (read from the text, not the tree: the preprocessor is
line-based, and a definition inside a region tree-sitter could not parse is still one).
Python: every `class`, with its annotated and assigned class attributes and the `self.x`
attributes its `__init__` sets.

Mentions are what call resolution's sibling (`uses.py`) needs: per function, each distinct name
in a type position (tree-sitter's `type_identifier` and `X::` scopes, `queries/cuda-mentions.scm`)
and each upper-case token of its text (macro invocations are often ERROR nodes, and head macros
such as `FLASHINFER_INLINE` are blanked before parsing, so the text is asked). Which of them are
types or macros of the upstream is only known once every file is extracted; a mention is the
string "<t|m> <name> <line> <column> <how>".
"""

from __future__ import annotations

import bisect
import re

from annotate.index import cst
from annotate.index.fingerprint import fingerprint
from annotate.index.model import (ALIAS, CLASS, ENUM, ENUMERATOR, FIELD, METHOD_DECL, PYTHON_CLASS, STATIC,
                                  STRUCT, UNION, MacroDef, Symbol, TypeDef, TypeField)
from annotate.index.parse import captured

_SPECIFIERS = {"struct_specifier": STRUCT, "class_specifier": CLASS, "union_specifier": UNION,
               "enum_specifier": ENUM}
_DECL_WRAPPERS = ("pointer_declarator", "reference_declarator", "array_declarator", "parenthesized_declarator",
                  "attributed_declarator", "init_declarator")
_PREPROC = ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef")
_MAX_VALUE = 300  # characters of an initializer kept (a traits class's expressions can be long)
# `#define NAME` and `#define NAME(`: a '(' right after the name (no space) makes it function-like
_DEFINE = re.compile(rb"#[ \t]*define[ \t]+([A-Za-z_]\w*)(\()?")
_CAPS = re.compile(rb"\b[A-Z][A-Z0-9_]*[A-Z0-9]\b")


def mention(kind: str, name: str, line: int, column: int, how: str) -> str:
    return f"{kind} {name} {line} {column} {how}"


def parse_mention(text: str) -> tuple[str, str, int, int, str]:
    kind, name, line, col, how = text.split(" ")
    return kind, name, int(line), int(col), how


# ---- C++ / CUDA types ------------------------------------------------------------------------

def cuda_types(cx, found, fn_nodes: list = ()) -> list[TypeDef]:
    """The type definitions of one file (`cx` is extract._File), in document order; `fn_nodes`
    are the file's function definitions (their bodies are left out of a type's fingerprint:
    `definition_fingerprint`)."""
    from annotate.index.extract import _namespaces

    bodies = MethodBodies((b.start_byte, b.end_byte) for n in fn_nodes
                          if (b := n.child_by_field_name("body")) is not None)
    out: list[TypeDef] = []
    node_of: dict[int, int] = {}  # id of a specifier node -> index in out
    parents: list[int | None] = []
    for node in captured(found["cuda-types"], "type"):
        got = _cuda_type(cx, node, _namespaces, bodies)
        if got is None:
            continue
        td, parent = got
        node_of[node.id] = len(out)
        out.append(td)
        parents.append(parent.id if parent is not None else None)
    nested: dict[int, list[str]] = {}
    for i, pid in enumerate(parents):
        if pid is not None and pid in node_of:
            nested.setdefault(node_of[pid], []).append(out[i].qualified_name)
    if nested:
        from dataclasses import replace

        out = [replace(td, nested=tuple(dict.fromkeys(nested[i]))) if i in nested else td for i, td in enumerate(out)]
    return out


def _type_name(node):
    """(scope parts written before the name, name, specialization args or None) of a specifier,
    or None for an anonymous one that is not named by a `typedef`."""
    name = node.child_by_field_name("name")
    if name is None:
        p = node.parent
        if p is not None and p.type == "type_definition":
            d = p.child_by_field_name("declarator")
            if d is not None and d.type == "type_identifier":
                return [], cst.node_text(d), None
        return None
    scope: list[str] = []
    while name.type == "qualified_identifier":  # struct A::B { ... }
        s = name.child_by_field_name("scope")
        if s is not None:
            scope += [p for p in cst.text_without_template_args(s).split("::") if p]
        name = name.child_by_field_name("name")
        if name is None:
            return None
    if name.type == "template_type":
        args = name.child_by_field_name("arguments")
        base = name.child_by_field_name("name")
        if base is None:
            return None
        spec = cst.collapse(cst.node_text(args)[1:-1]) if args is not None else None
        return scope, cst.node_text(base), spec
    return scope, cst.collapse(cst.node_text(name)), None


def _cuda_type(cx, node, namespaces, bodies: "MethodBodies"):
    """(TypeDef, the enclosing class specifier node or None), or None for an anonymous type, a
    type local to a function body, or a specifier the grammar misplaced."""
    named = _type_name(node)
    if named is None:
        return None
    scope, name, spec = named
    body = node.child_by_field_name("body")
    templates: list = []
    p = node.parent
    while p is not None and p.type == "template_declaration":
        templates.append(p)
        p = p.parent
    classes: list[str] = []
    parent_class = None
    q = node.parent
    while q is not None:
        t = q.type
        if t in ("compound_statement", "function_definition", "lambda_expression"):
            return None  # a local type: no name a reader can look up
        if t in _SPECIFIERS and t != "enum_specifier":
            nm = _type_name(q)
            if nm is None:  # an anonymous struct/union member: transparent
                q = q.parent
                continue
            classes.insert(0, nm[1])
            if parent_class is None:
                parent_class = q
        q = q.parent
    ns_names, anonymous = namespaces(cx, node)
    first = templates[-1] if templates else (node.parent if node.parent is not None and
                                             node.parent.type == "type_definition" else node)
    src = cx.src
    lo = bisect.bisect_left(cx.error_starts, node.start_byte)
    hi = bisect.bisect_left(cx.error_starts, node.end_byte)
    tparams = []
    for tnode in reversed(templates):
        pl = tnode.child_by_field_name("parameters")
        if pl is not None:
            tparams.append(cst.collapse(src[pl.start_byte + 1:pl.end_byte - 1].decode("utf-8", "replace")))
    kind = _SPECIFIERS[node.type]
    td = TypeDef(
        upstream=cx.upstream, path=cx.path, name=name,
        qualified_name="::".join([*ns_names, *classes, *scope, name]), kind=kind,
        signature=cst.collapse(src[first.start_byte:body.start_byte].decode("utf-8", "replace")),
        template_params="; ".join(tparams) if templates else None, specialization=spec,
        start_line=first.start_point[0] + 1, end_line=node.end_point[0] + 1,
        body_start_line=body.start_point[0] + 1,
        fingerprint=definition_fingerprint(src, first.start_byte, node.end_byte, bodies, "cuda"),
        fields=tuple(_enumerators(body) if kind == ENUM else _members(cx, body)),
        bases=tuple(_bases(node)), anonymous_namespace=anonymous, parse_errors=hi - lo,
    )
    return td, parent_class


class MethodBodies:
    """The byte ranges of a file's function bodies, sorted, for `definition_fingerprint`."""

    def __init__(self, ranges):
        self.ranges = sorted(ranges)
        self.starts = [r[0] for r in self.ranges]


def definition_fingerprint(src: bytes, lo: int, hi: int, bodies: MethodBodies, language: str,
                           fields: tuple[TypeField, ...] = ()) -> str:
    """A type's fingerprint: its definition's text `src[lo:hi]` with the body of every member
    function defined in it left out (heads, members, bases and template arguments stay), plus
    `fields` (Python: the `self.x` attributes `__init__` sets, which sit inside a left-out body).

    A method is a function with a note and a fingerprint of its own; a note on the type (what
    its members hold, its layout) should not turn stale each time a method's code changes,
    while adding, removing or retyping a member, or changing a method's signature, does.
    Comments and layout are ignored as in every fingerprint."""
    parts, pos = [], lo
    i = bisect.bisect_left(bodies.starts, lo)
    stub = "..." if language == "python" else "{}"
    while i < len(bodies.ranges) and bodies.ranges[i][0] < hi:
        a, b = bodies.ranges[i]
        i += 1
        if a < pos or b > hi:
            continue  # inside a body already left out (a local class's method), or not inside
        parts.append(src[pos:a].decode("utf-8", "replace"))
        parts.append(stub)
        pos = b
    parts.append(src[pos:hi].decode("utf-8", "replace"))
    text = "".join(parts)
    if fields:
        sep = "#" if language == "python" else "//"  # (the comment stripper must not eat them)
        text += "\n" + "\n".join(f"{f.kind} {f.name}: {f.type} = {f.value}".replace(sep, " ") for f in fields)
    return fingerprint(text, language)


def _bases(node) -> list[str]:
    out = []
    for c in node.children:
        if c.type == "base_class_clause":
            for b in c.named_children:
                if b.type not in ("access_specifier", "comment", "virtual"):
                    out.append(cst.collapse(cst.node_text(b)))
    return out


def _enumerators(body) -> list[TypeField]:
    out = []
    for c in body.named_children:
        if c.type == "enumerator":
            nm, val = c.child_by_field_name("name"), c.child_by_field_name("value")
            if nm is not None:
                out.append(TypeField(cst.node_text(nm), ENUMERATOR, "", nm.start_point[0] + 1,
                                     _value(val)))
        elif c.type in _PREPROC:
            out.extend(_enumerators(c))
    return out


def _value(node) -> str | None:
    if node is None:
        return None
    v = cst.collapse(cst.node_text(node))
    return v if len(v) <= _MAX_VALUE else v[:_MAX_VALUE - 1] + "…"


def _members(cx, body) -> list[TypeField]:
    """The members declared in a class body, in order; preprocessor branches are all read (both
    `#if` and `#else` members are listed), anonymous unions and structs are transparent."""
    out: list[TypeField] = []
    for c in body.named_children:
        t = c.type
        if t == "field_declaration":
            out.extend(_field_declaration(cx, c))
        elif t in ("alias_declaration", "type_definition"):
            out.extend(_alias(c))
        elif t == "template_declaration":
            inner = [x for x in c.named_children if x.type in ("field_declaration", "alias_declaration",
                                                                 "declaration")]
            for x in inner:
                out.extend(_alias(x) if x.type == "alias_declaration" else _field_declaration(cx, x))
        elif t == "declaration":  # `static constexpr int x = 1;` read as a declaration in some heads
            out.extend(_field_declaration(cx, c))
        elif t in _PREPROC:
            out.extend(_members(cx, c))
    return out


def _alias(node) -> list[TypeField]:
    if node.type == "alias_declaration":
        nm, ty = node.child_by_field_name("name"), node.child_by_field_name("type")
        if nm is None:
            return []
        return [TypeField(cst.node_text(nm), ALIAS, cst.collapse(cst.node_text(ty)) if ty is not None else "",
                          nm.start_point[0] + 1)]
    ty = node.child_by_field_name("type")
    tt = cst.collapse(cst.node_text(ty)) if ty is not None else ""
    out = []
    for d in node.children_by_field_name("declarator"):
        nm = _declarator_name(d)
        if nm is not None:
            out.append(TypeField(cst.node_text(nm), ALIAS, tt, nm.start_point[0] + 1))
    return out


def _declarator_name(d):
    """The identifier a declarator declares (through pointers, references, arrays, parentheses)."""
    for _ in range(12):
        if d is None:
            return None
        if d.type in ("field_identifier", "identifier", "type_identifier", "operator_name", "destructor_name"):
            return d
        if d.type == "function_declarator":
            return _declarator_name(d.child_by_field_name("declarator"))
        if d.type == "qualified_identifier":
            d = d.child_by_field_name("name")
            continue
        if d.type in _DECL_WRAPPERS:
            d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
            continue
        return None
    return None


def _is_function(d) -> bool:
    for _ in range(12):
        if d is None:
            return False
        if d.type == "function_declarator":
            return True
        if d.type in _DECL_WRAPPERS:
            d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
            continue
        return False
    return False


def _field_declaration(cx, node) -> list[TypeField]:
    ty = node.child_by_field_name("type")
    is_static = any(c.type == "storage_class_specifier" and cst.node_text(c) == "static" for c in node.children)
    decls: list[tuple[object, object | None]] = []  # (declarator, its default value)
    bits: dict[int, str] = {}
    for i, c in enumerate(node.children):
        f = node.field_name_for_child(i)
        if f == "declarator":
            decls.append((c, None))
        elif f == "default_value" and decls:
            decls[-1] = (decls[-1][0], c)
        elif c.type == "bitfield_clause" and decls:
            bits[len(decls) - 1] = cst.collapse(cst.node_text(c))
        elif c.type == "initializer_list" and decls and decls[-1][1] is None:
            decls[-1] = (decls[-1][0], c)
    if not decls:
        # `union { int a; float b; };` inside a struct: its members are the struct's
        if ty is not None and ty.type in ("union_specifier", "struct_specifier") and ty.child_by_field_name("name") is None:
            body = ty.child_by_field_name("body")
            return _members(cx, body) if body is not None else []
        return []
    src = cx.src
    # the type as written before the declarators, without `static` (the kind says it)
    head_end = ty.end_byte if ty is not None else decls[0][0].start_byte
    head = cst.collapse(src[node.start_byte:head_end].decode("utf-8", "replace"))
    if ty is not None and ty.child_by_field_name("body") is not None:  # `struct Inner { ... } inner;`
        nm = ty.child_by_field_name("name")
        head = cst.collapse(src[node.start_byte:ty.start_byte].decode("utf-8", "replace") + " " +
                            ty.type.split("_")[0] + (" " + cst.node_text(nm) if nm is not None else ""))
    head = re.sub(r"^(?:static\s+)|(?<=\s)static\s+", "", head).strip()
    out = []
    for i, (d, default) in enumerate(decls):
        nm = _declarator_name(d)
        if nm is None:
            continue
        name = cst.collapse(cst.node_text(nm))
        if _is_function(d):
            text = cst.collapse(src[node.start_byte:node.end_byte].decode("utf-8", "replace")).rstrip(";").strip()
            out.append(TypeField(name, METHOD_DECL, text if len(decls) == 1 else head, nm.start_point[0] + 1))
            continue
        rest = cst.collapse(src[d.start_byte:nm.start_byte].decode("utf-8", "replace") + " " +
                            src[nm.end_byte:d.end_byte].decode("utf-8", "replace"))
        ftype = (head + (" " + rest if rest else "")).replace(" [", "[").replace(" *", "*").replace(" &", "&")
        if i in bits:
            ftype += " " + bits[i]
        out.append(TypeField(name, STATIC if is_static else FIELD, ftype, nm.start_point[0] + 1, _value(default)))
    return out


# ---- macros ---------------------------------------------------------------------------------

def cuda_macros(upstream: str, path: str, src: bytes, lines) -> list[MacroDef]:
    """Every `#define` of the file (text-based: a definition inside code tree-sitter could not
    parse is still found). `lines` is extract._Lines of `src`."""
    if b"define" not in src:
        return []
    out = []
    for m in _DEFINE.finditer(src):
        start = src.rfind(b"\n", 0, m.start()) + 1
        if src[start:m.start()].strip():  # `#` not first on its line: not a directive
            continue
        end = _logical_line_end(src, m.end())
        params = None
        pos = m.end()
        if m.group(2):
            close = src.find(b")", pos, end)
            if close < 0:
                continue
            params = tuple(p.strip() for p in src[pos:close].decode("utf-8", "replace").split(",") if p.strip())
            pos = close + 1
        raw = src[pos:end].decode("utf-8", "replace")
        body = "\n".join(ln[:-1].rstrip() if ln.endswith("\\") else ln.rstrip()
                         for ln in raw.replace("\r\n", "\n").split("\n")).strip("\n")
        body = "\n".join(_strip_common_indent(body.split("\n")))
        out.append(MacroDef(upstream=upstream, path=path, name=m.group(1).decode(), params=params, body=body,
                            start_line=lines.line_of(start), end_line=lines.line_of(max(end - 1, start)),
                            fingerprint=fingerprint(body, "cuda")))
    return out


def _logical_line_end(src: bytes, pos: int) -> int:
    """The end (exclusive, before the newline) of the directive's last continued line."""
    while True:
        nl = src.find(b"\n", pos)
        if nl < 0:
            return len(src)
        line = src[pos:nl].rstrip(b"\r")
        if not line.endswith(b"\\"):
            return nl
        pos = nl + 1


def _strip_common_indent(lines: list[str]) -> list[str]:
    """The first line as it follows the name; the continued lines without their common indent."""
    if len(lines) <= 1:
        return [ln.strip() for ln in lines]
    rest = [ln for ln in lines[1:] if ln.strip()]
    indent = min((len(ln) - len(ln.lstrip()) for ln in rest), default=0)
    return [lines[0].strip()] + [ln[indent:] for ln in lines[1:]]


# ---- mentions (C++ / CUDA) --------------------------------------------------------------------

class Containers:
    """The innermost of a set of nested-or-disjoint byte ranges holding a byte, in O(depth):
    walking back over the ranges that start before it would be quadratic for the many names
    outside any function (class members, namespace-scope declarations)."""

    def __init__(self, ranges: list[tuple[int, int]]):
        order = sorted(range(len(ranges)), key=lambda i: (ranges[i][0], -ranges[i][1]))
        self.idx = order
        self.starts = [ranges[i][0] for i in order]
        self.ends = [ranges[i][1] for i in order]
        self.parent: list[int] = []
        stack: list[int] = []
        for j in range(len(order)):
            while stack and self.ends[stack[-1]] <= self.starts[j]:
                stack.pop()
            self.parent.append(stack[-1] if stack else -1)
            stack.append(j)

    def innermost(self, byte: int) -> int | None:
        j = bisect.bisect_right(self.starts, byte) - 1
        while j >= 0 and self.ends[j] <= byte:
            j = self.parent[j]
        return self.idx[j] if j >= 0 else None


_HOW_STOP = ("compound_statement", "function_definition", "lambda_expression", "field_declaration_list",
             "translation_unit", "expression_statement", "return_statement")


def _type_how(node, in_head: bool) -> str:
    if node.type == "namespace_identifier":
        return "qualifier"
    p = node.parent
    for _ in range(8):
        if p is None:
            break
        t = p.type
        if t in ("parameter_declaration", "optional_parameter_declaration", "variadic_parameter_declaration"):
            return "parameter"
        if t == "template_argument_list":
            return "template-argument"
        if t == "base_class_clause":
            return "base"
        if t in ("declaration", "alias_declaration", "type_definition", "field_declaration"):
            return "signature" if in_head else "declaration"
        if t in _HOW_STOP:
            break
        p = p.parent
    return "signature" if in_head else "other"


def cuda_mentions(cx, found, symbols: list[Symbol], fn_nodes: list) -> dict[str, tuple[str, ...]]:
    """Symbol.key -> its raw mentions (see the module doc): the names in type positions inside
    each definition (head and body), and its upper-case tokens outside comments."""
    if not symbols:
        return {}
    inside = Containers([(n.start_byte, n.end_byte) for n in fn_nodes])
    first: dict[tuple[int, str], object] = {}
    for m in found["cuda-mentions"]:
        for node in m["tn"]:
            idx = inside.innermost(node.start_byte)
            if idx is None:
                continue
            key = (idx, cst.node_text(node))
            if key not in first or node.start_byte < first[key].start_byte:
                first[key] = node
    out: dict[int, list[str]] = {}
    skip = _never_types(cx)
    own: dict[int, set[str]] = {}  # the function's template parameters: never one of its uses
    for (idx, name), node in first.items():
        if name in skip:
            continue
        mine = own.get(idx)
        if mine is None:
            mine = own[idx] = template_param_names(symbols[idx].template_params)
        if name in mine:
            continue
        body_start = fn_nodes[idx].child_by_field_name("body")
        in_head = body_start is None or node.start_byte < body_start.start_byte
        out.setdefault(idx, []).append(mention("t", name, node.start_point[0] + 1, node.start_point[1],
                                               _type_how(node, in_head)))
    src = cx.src
    for i, sym in enumerate(symbols):
        fn = fn_nodes[i]
        head = _head_byte(cx, sym, fn)
        body = fn.child_by_field_name("body")
        body_start = body.start_byte if body is not None else fn.end_byte
        seen = set(own[i] if i in own else template_param_names(sym.template_params))
        for m in _CAPS.finditer(src, head, fn.end_byte):
            name = m.group(0).decode()
            if name in seen or _in_comment(src, head, m.start()):
                continue
            seen.add(name)
            pos = m.start()
            how = "head" if pos < body_start else ("call" if src[m.end():m.end() + 1] == b"(" else "body")
            line = cx.lines.line_of(pos)
            col = pos - (src.rfind(b"\n", 0, pos) + 1)
            out.setdefault(i, []).append(mention("m", name, line, col, how))
    return {symbols[i].key: tuple(v) for i, v in out.items()}


def _never_types(cx) -> frozenset[str]:
    """Scope names that are namespaces, never types: the namespaces this file declares and the
    external ones call resolution knows (`std::`, `cute::`, ...)."""
    from annotate.index.resolve import EXTERNAL_SCOPES

    names = {n for _, _, nm in cx.ns_ranges if nm for n in nm.split("::")}
    return frozenset(names | EXTERNAL_SCOPES | {"cute", "cutlass"})


def _head_byte(cx, sym: Symbol, fn) -> int:
    """Where the definition's text begins: its first line (template head or head macro)."""
    nl = cx.lines
    if nl.newlines is None:
        nl.line_of(0)
    return nl.newlines[sym.start_line - 2] + 1 if sym.start_line > 1 else 0


def _in_comment(src: bytes, lo: int, pos: int) -> bool:
    """Whether `pos` is inside a // or /* */ comment begun after `lo` (strings are not looked at)."""
    line = src.rfind(b"\n", lo, pos) + 1 or lo
    if src.find(b"//", line, pos) >= 0:
        return True
    open_ = src.rfind(b"/*", lo, pos)
    return open_ >= 0 and src.rfind(b"*/", open_, pos) < 0


# ---- Python ---------------------------------------------------------------------------------

def python_classes(upstream: str, path: str, src: bytes, found, module: str,
                   bodies: MethodBodies | None = None) -> list[TypeDef]:
    """Every class of one Python file; `bodies` are the file's function bodies (left out of a
    class's fingerprint, its `__init__`'s attributes put in: `definition_fingerprint`)."""
    bodies = bodies or MethodBodies(())
    out: list[TypeDef] = []
    for m in found["python-classes"]:
        cls, body, name_node = m["class"][0], m["body"][0], m["name"][0]
        names = [cst.node_text(name_node)]
        p = cls.parent
        while p is not None:
            if p.type in ("class_definition", "function_definition"):
                nm = p.child_by_field_name("name")
                if nm is not None:
                    names.insert(0, cst.node_text(nm))
            p = p.parent
        outer = cls.parent if cls.parent is not None and cls.parent.type == "decorated_definition" else cls
        decorators = tuple(cst.collapse(cst.node_text(d))[1:].strip() for d in outer.children if d.type == "decorator")
        supers = cls.child_by_field_name("superclasses")
        bases = tuple(cst.collapse(cst.node_text(b)) for b in (supers.named_children if supers is not None else [])
                      if b.type not in ("keyword_argument", "comment"))
        enum_like = any(b.rsplit(".", 1)[-1].endswith("Enum") for b in bases)
        fields = tuple(_python_fields(body, enum_like))
        out.append(TypeDef(
            upstream=upstream, path=path, name=names[-1],
            qualified_name=".".join([module, *names]) if module else ".".join(names), kind=PYTHON_CLASS,
            signature=cst.collapse(src[cls.start_byte:body.start_byte].decode("utf-8", "replace")).rstrip(":").strip(),
            template_params=None, specialization=None, start_line=outer.start_point[0] + 1,
            end_line=cls.end_point[0] + 1, body_start_line=body.start_point[0] + 1,
            fingerprint=definition_fingerprint(src, outer.start_byte, cls.end_byte, bodies, "python", fields),
            fields=fields, bases=bases, decorators=decorators,
            nested=tuple(".".join([*([module] if module else []), *names, cst.node_text(c.child_by_field_name("name"))])
                         for c in _class_children(body)),
        ))
    return out


def _class_children(body):
    for c in body.named_children:
        d = c.child_by_field_name("definition") if c.type == "decorated_definition" else c
        if d is not None and d.type == "class_definition" and d.child_by_field_name("name") is not None:
            yield d


def _python_fields(body, enum_like: bool) -> list[TypeField]:
    out: list[TypeField] = []
    names: set[str] = set()
    init = None
    for c in body.named_children:
        if c.type == "expression_statement" and c.named_children and c.named_children[0].type == "assignment":
            a = c.named_children[0]
            left, ty, right = a.child_by_field_name("left"), a.child_by_field_name("type"), a.child_by_field_name("right")
            if left is None or left.type != "identifier":
                continue
            name = cst.node_text(left)
            kind = ENUMERATOR if enum_like else (FIELD if ty is not None else STATIC)
            out.append(TypeField(name, kind, cst.collapse(cst.node_text(ty)) if ty is not None else "",
                                 left.start_point[0] + 1, _value(right)))
            names.add(name)
        else:
            d = c.child_by_field_name("definition") if c.type == "decorated_definition" else c
            if d is not None and d.type == "function_definition":
                nm = d.child_by_field_name("name")
                if nm is not None and cst.node_text(nm) == "__init__":
                    init = d.child_by_field_name("body")
    if init is not None:
        stack = [init]
        while stack:
            n = stack.pop()
            for c in reversed(n.named_children):
                if c.type == "assignment":
                    left, ty = c.child_by_field_name("left"), c.child_by_field_name("type")
                    obj = left.child_by_field_name("object") if left is not None and left.type == "attribute" else None
                    if obj is not None and cst.node_text(obj) == "self":
                        attr = left.child_by_field_name("attribute")
                        name = cst.node_text(attr)
                        if name not in names:
                            names.add(name)
                            out.append(TypeField(name, FIELD, cst.collapse(cst.node_text(ty)) if ty is not None else "",
                                                 attr.start_point[0] + 1, _value(c.child_by_field_name("right"))))
                elif c.type not in ("function_definition", "class_definition", "lambda"):
                    stack.append(c)
    return out


_PY_IDENT = re.compile(r"[A-Za-z_]\w*")


# typing's and the builtins' capitalised names: never a class of the upstream
_PY_NOT_CLASSES = frozenset({"Any", "Callable", "ClassVar", "Dict", "Final", "FrozenSet", "Generator", "Iterable",
                             "Iterator", "List", "Literal", "Mapping", "None", "Optional", "Sequence", "Set", "Tuple",
                             "Type", "TypeVar", "Union", "True", "False", "Path", "Enum", "IntEnum", "NamedTuple"})


def _py_class_name(name: str) -> bool:
    """Python classes are CapWords (PEP 8); exceptions and typing's names are not the upstream's."""
    return name[:1].isupper() and name not in _PY_NOT_CLASSES and not name.endswith(("Error", "Exception", "Warning"))


def python_mentions(found, symbols: list[Symbol], owner) -> dict[str, tuple[str, ...]]:
    """Capitalised names in annotations (parameters, return types, variables) and names called
    (`JitSpec(...)`) per function; `owner` is extract._Spans over the bodies and the heads."""
    first: dict[tuple[int, str], tuple[int, int, str]] = {}
    for node in captured(found["python-mentions"], "ann"):
        idx = owner.owner(node.start_byte)
        how = "declaration"
        if idx is None:
            idx = owner.owner_of_params(node.start_byte)
            how = "parameter" if node.parent is not None and node.parent.type in (
                "typed_parameter", "typed_default_parameter") else "signature"
        if idx is None:
            continue
        for name in _PY_IDENT.findall(cst.node_text(node)):  # `Optional[JitSpec]`, `"JitSpec"`
            if _py_class_name(name):
                first.setdefault((idx, name), (node.start_point[0] + 1, node.start_point[1], how))
    for node in captured(found["python-calls"], "callee"):
        idx = owner.owner(node.start_byte)
        if idx is None:
            continue
        nm = node if node.type == "identifier" else node.child_by_field_name("attribute") if node.type == "attribute" else None
        if nm is None:
            continue
        name = cst.node_text(nm)
        if _py_class_name(name) and (idx, name) not in first:
            first[(idx, name)] = (nm.start_point[0] + 1, nm.start_point[1], "call")
    out: dict[int, list[str]] = {}
    for (idx, name), (line, col, how) in first.items():
        out.setdefault(idx, []).append(mention("t", name, line, col, how))
    return {symbols[i].key: tuple(v) for i, v in out.items()}


def template_param_names(template_params: str | None) -> set[str]:
    """The names a template head declares (`typename T, uint32_t N = 4` -> {T, N})."""
    if not template_params:
        return set()
    out = set()
    for head in template_params.split("; "):
        depth, cur, parts = 0, [], []
        for ch in head:
            if ch in "<([{":
                depth += 1
            elif ch in ">)]}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
        parts.append("".join(cur))
        for p in parts:
            p = p.split("=", 1)[0].strip().rstrip(".").strip()
            words = re.findall(r"[A-Za-z_]\w*", p)
            if words:
                out.add(words[-1])
    return out

"""Per-file extraction: one source file in, one FileIndex out (edges not yet resolved).

The result depends only on (upstream, path, content, tool version), which is what the cache
keys it by. Cross-file work (include graph, call resolution) happens in resolve.py.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from annotate.index import cst
from annotate.index import extract_types as xt
from annotate.index.facts import apply_rules, fact_query_source
from annotate.index.fingerprint import fingerprint
from annotate.index.model import (CALL, DEVICE, HOST, HOST_DEVICE, KERNEL, LAUNCH, METHOD, PYTHON, CallEdge,
                                  FileIndex, MemoryFact, Symbol, language_of)
from annotate.index.parse import captured, combined_query, macro_table, namespace_ranges, parser, prepare_cuda, run_queries

_QUAL_RE = re.compile(r"\b(__global__|__device__|__host__|__forceinline__|__noinline__)\b")
_DEFINE_RE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([A-Za-z_]\w*)[ \t]*$", re.M)
_IDENT = re.compile(rb"[A-Za-z_]\w*")
_CLASS_TYPES = ("class_specifier", "struct_specifier", "union_specifier")
ANON = "(anonymous namespace)"
# Every query of a file runs in one walk of its tree (queries/*.scm, plus the fact rules).
_CUDA_QUERIES = ("cuda-functions", "cuda-assignments", "cuda-declarations", "cuda-calls", "cuda-classes",
                 "cuda-errors", "cuda-includes", "cuda-types", "cuda-mentions")
_PYTHON_QUERIES = ("python-functions", "python-calls", "python-imports", "python-errors", "python-classes",
                   "python-mentions")


@dataclass(frozen=True)
class Extracted:
    """A FileIndex plus what only call resolution needs (kept out of the stage contract):
    `arity` maps Symbol.key -> (fewest, most arguments; -1 = any number), `nargs` gives the
    argument count of each edge's call (None where unknown or not a plain call), `receivers`
    the declared class of the object of each member call (`vec_t<float, 4> v; v.load()` -> vec_t),
    `mentions` the names each function mentions that may be types or macros (extract_types)."""

    file: FileIndex
    arity: dict[str, tuple[int, int]] = field(default_factory=dict)
    nargs: tuple[int | None, ...] = ()
    receivers: tuple[str | None, ...] = ()  # per edge: class name of a member call's object, if declared
    mentions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # Symbol.key -> raw mentions


def warm_up() -> None:
    """Compile the grammars and queries now (a process pool forked afterwards inherits them
    instead of compiling them once per worker)."""
    for lang, names, extra in (("cuda", _CUDA_QUERIES, (("facts", fact_query_source()),)),
                               ("python", _PYTHON_QUERIES, ())):
        parser(lang)
        combined_query(lang, names, extra)
    macro_table()


def extract_full(upstream: str, path: str, src: bytes) -> Extracted:
    lang = language_of(path)
    if lang == "python":
        return extract_python(upstream, path, src)
    return extract_cuda(upstream, path, src)


# ---- C++ / CUDA -------------------------------------------------------------------------------

class _Spans:
    """Maps a byte offset to the innermost function body containing it."""

    def __init__(self, spans: list[tuple[int, int, int]], params: list[tuple[int, int, int]] | None = None):
        self.params = sorted(params or [])
        self.spans = sorted(spans)
        self.starts = [s for s, _, _ in self.spans]

    def owner_of_params(self, byte: int) -> int | None:
        """The function whose parameter list holds `byte` (a parameter's declaration)."""
        for lo, hi, idx in self.params:  # sorted by start: none after `byte` can hold it
            if lo > byte:
                break
            if byte < hi:
                return idx
        return None

    def owner(self, byte: int) -> int | None:
        i = bisect.bisect_right(self.starts, byte) - 1
        best = None
        while i >= 0:
            s, e, idx = self.spans[i]
            if s <= byte < e:
                best = idx  # the latest-starting container is the innermost
                break
            i -= 1
        return best


class _Lines:
    """1-based line of a byte offset, by bisection over the newline offsets (counting the
    newlines before each function head made extraction quadratic in the file's length)."""

    def __init__(self, src: bytes):
        self.src = src
        self.newlines: list[int] | None = None

    def line_of(self, byte: int) -> int:
        if self.newlines is None:
            self.newlines = [m.start() for m in re.finditer(rb"\n", self.src)]
        return bisect.bisect_left(self.newlines, byte) + 1


def _function_declarator(fn):
    d = fn.child_by_field_name("declarator")
    for _ in range(16):
        if d is None:
            return None
        if d.type == "function_declarator":
            return d
        d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_children else None)
    return None


def _scope_name(n) -> str | None:
    """Name of a namespace/class node as written, template arguments stripped."""
    name = n.child_by_field_name("name")
    if name is None:
        return None
    return cst.text_without_template_args(name)


def _split_scope(text: str) -> list[str]:
    return [p for p in text.split("::") if p]


class _File:
    """What the extraction of one C++/CUDA file shares between its steps."""

    def __init__(self, upstream: str, path: str, src: bytes):
        self.upstream, self.path, self.src = upstream, path, src
        self.table = macro_table()
        self.text = prepare_cuda(src, self.table)  # what tree-sitter parses: same offsets as src
        self.ns_macros = dict(self.table.namespaces)
        for m in _DEFINE_RE.finditer(src):
            self.ns_macros.setdefault(m.group(1).decode(), m.group(2).decode())
        self.ns_ranges = namespace_ranges(self.text)
        self.lines = _Lines(src)
        self.class_names: set[str] = set()
        self.error_starts: list[int] = []


def extract_cuda(upstream: str, path: str, src: bytes) -> Extracted:
    cx = _File(upstream, path, src)
    root = parser("cuda").parse(cx.text).root_node
    found = run_queries("cuda", root, _CUDA_QUERIES, (("facts", fact_query_source()),))
    cx.class_names = {cst.text_without_template_args(n).split("::")[-1] for n in captured(found["cuda-classes"], "name")}
    errors = captured(found["cuda-errors"], "error")
    cx.error_starts = sorted(e.start_byte for e in errors)
    symbols, arity, owner, fn_nodes = _cuda_symbols(cx, found)
    edges, nargs, receivers = _cuda_edges(cx, found, symbols, owner)
    facts = _cuda_facts(cx, found, symbols, owner)
    includes = tuple(cst.node_text(n) for n in captured(found["cuda-includes"], "path"))
    fi = FileIndex(upstream=upstream, path=path, blob="", language="cuda", symbols=tuple(symbols),
                   edges=tuple(edges), facts=tuple(facts), includes=includes, error_nodes=len(errors),
                   types=tuple(xt.cuda_types(cx, found, fn_nodes)),
                   macros=tuple(xt.cuda_macros(upstream, path, src, cx.lines)))
    return Extracted(fi, arity, nargs, receivers, xt.cuda_mentions(cx, found, symbols, fn_nodes))


def _cuda_symbols(cx: _File, found) -> tuple[list[Symbol], dict[str, tuple[int, int]], _Spans, list]:
    """The definitions of the file, their argument ranges, which body (or parameter list) holds a
    byte, and the function_definition node of each."""
    symbols: list[Symbol] = []
    fn_nodes: list = []
    spans: list[tuple[int, int, int]] = []
    arity: dict[str, tuple[int, int]] = {}
    param_spans: list[tuple[int, int, int]] = []
    for m in found["cuda-functions"]:
        fn, body = m["function"][0], m["body"][0]
        sym = _cuda_symbol(cx, fn, body)
        if sym is None:
            continue
        spans.append((body.start_byte, body.end_byte, len(symbols)))
        symbols.append(sym)
        fn_nodes.append(fn)
        ar = _arity(fn)
        if ar is not None:
            arity[sym.key] = ar
        decl = _function_declarator(fn)
        plist = decl.child_by_field_name("parameters") if decl is not None else None
        if plist is not None:
            param_spans.append((plist.start_byte, plist.end_byte, len(symbols) - 1))
    return symbols, arity, _Spans(spans, param_spans), fn_nodes


def _pointer_vars(found, owner: _Spans) -> dict[int, dict[str, list]]:
    """Function-pointer variables per function: var -> [(target name, node)]."""
    pointers: dict[int, dict[str, list]] = {}
    for m in found["cuda-assignments"]:
        var, value = m["var"][0], m["value"][0]
        idx = owner.owner(var.start_byte)
        if idx is None:
            continue
        targets = _function_refs(value)
        if targets:
            pointers.setdefault(idx, {}).setdefault(cst.node_text(var), []).extend(targets)
    return pointers


def _declared_types(found, owner: _Spans) -> dict[int, dict[str, str]]:
    """Declared types of locals and parameters per function: var -> class name (last component)."""
    var_types: dict[int, dict[str, str]] = {}
    for m in found["cuda-declarations"]:
        tnode, var = m["type"][0], m["var"][0]
        if tnode.type in ("primitive_type", "placeholder_type_specifier", "sized_type_specifier"):
            continue
        idx = owner.owner(var.start_byte)
        if idx is None:
            idx = owner.owner_of_params(var.start_byte)
        if idx is None:
            continue
        tname = cst.text_without_template_args(tnode).replace("typename ", "").split("::")[-1].strip()
        if tname:
            var_types.setdefault(idx, {})[cst.node_text(var)] = tname
    return var_types


def _calls(found, owner: _Spans) -> tuple[list, dict[tuple[int, str], list]]:
    """(function, call node, callee node) of every call inside a function, and the calls of each
    plain name per function (a lambda's callers: launches through its parameters)."""
    call_matches = []
    calls_by_name: dict[tuple[int, str], list] = {}
    for m in found["cuda-calls"]:
        call, callee = m["call"][0], m["callee"][0]
        idx = owner.owner(call.start_byte)
        if idx is None:
            continue
        call_matches.append((idx, call, callee))
        if callee.type == "identifier":
            calls_by_name.setdefault((idx, cst.node_text(callee)), []).append(call)
    return call_matches, calls_by_name


def _cuda_edges(cx: _File, found, symbols: list[Symbol], owner: _Spans):
    """(edges, argument count per edge, receiver class per edge) of every call and launch."""
    pointers, var_types = _pointer_vars(found, owner), _declared_types(found, owner)
    edges: list[CallEdge] = []
    nargs: dict[int, int] = {}  # edge index -> argument count of its call
    receivers: dict[int, str] = {}  # edge index -> declared class of a member call's object
    path, table = cx.path, cx.table
    call_matches, calls_by_name = _calls(found, owner)

    def launch_targets(node, idx):
        out = []
        for tname, tnode in _function_refs(node, pointers.get(idx, {})):
            if tnode.type == "identifier" and cst.node_text(tnode) == tname:
                via_lambda = _lambda_param_refs(tnode, tname, idx, calls_by_name, pointers.get(idx, {}))
                if via_lambda:
                    out.extend(via_lambda)
                    continue
            out.append((tname, tnode))
        return out

    for idx, call, callee in call_matches:
        key = symbols[idx].key
        name_node = cst.final_name_node(callee)
        if name_node is None:
            continue
        written = cst.text_without_template_args(callee)
        bare = cst.node_text(name_node)
        if bare in table.not_calls:
            continue
        line, col = name_node.start_point[0] + 1, name_node.start_point[1]
        if any(c.type == "kernel_call_syntax" for c in call.children):  # f<<<...>>>(...)
            targets = launch_targets(callee, idx) if callee.type == "identifier" else None
            if targets and [t for t, _ in targets] != [written]:
                edges.extend(CallEdge(key, tname, LAUNCH, path, line, col, (), "<<<>>> via " + written)
                             for tname, _ in targets)
            else:
                edges.append(CallEdge(key, written, LAUNCH, path, line, col, (), "<<<>>>"))
            continue
        via = None
        if callee.type == "field_expression":
            fld = callee.child_by_field_name("field")
            via = ".template" if fld is not None and fld.type in ("dependent_name", "template_method") else "member"
        edges.append(CallEdge(key, written, CALL, path, line, col, (), via))
        if via is not None:
            obj = callee.child_by_field_name("argument")
            if obj is not None and obj.type == "identifier":
                t = var_types.get(idx, {}).get(cst.node_text(obj))
                if t:
                    receivers[len(edges) - 1] = t
        args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
        nargs[len(edges) - 1] = len(args)
        k = table.launchers.get(bare)
        if k is not None and k < len(args):
            for tname, tnode in launch_targets(args[k], idx):
                # the column of the argument at the launch call (the site links it), even
                # when the name was found through a variable or a lambda parameter
                anode = tnode if tnode.start_byte >= call.start_byte and tnode.end_byte <= call.end_byte else args[k]
                edges.append(CallEdge(key, tname, LAUNCH, path, anode.start_point[0] + 1, anode.start_point[1],
                                      (), bare))
    n = len(edges)
    return edges, tuple(nargs.get(i) for i in range(n)), tuple(receivers.get(i) for i in range(n))


def _cuda_facts(cx: _File, found, symbols: list[Symbol], owner: _Spans) -> list[MemoryFact]:
    """Every rule match inside a function, once per rule and line."""
    facts: list[MemoryFact] = []
    seen: set[tuple[str, int, int]] = set()
    for node in captured(found["facts"], "n"):
        idx = owner.owner(node.start_byte)
        if idx is None:
            continue
        line = node.start_point[0] + 1
        for rule, detail in apply_rules(node):
            k = (rule.id, line, idx)
            if k in seen:
                continue
            seen.add(k)
            facts.append(MemoryFact(symbols[idx].key, rule.kind, detail, cx.path, line, rule.id))
    facts.sort(key=lambda f: (f.line, f.kind))
    return facts


def _arity(fn) -> tuple[int, int] | None:
    """(fewest, most) arguments a definition accepts; most = -1 for variadics."""
    decl = _function_declarator(fn)
    params = decl.child_by_field_name("parameters") if decl is not None else None
    if params is None:
        return None
    req = opt = 0
    variadic = any(c.type == "..." for c in params.children)
    for p in params.named_children:
        if p.type == "parameter_declaration":
            if cst.node_text(p).strip() != "void":
                req += 1
        elif p.type == "optional_parameter_declaration":
            opt += 1
        elif p.type in ("variadic_parameter_declaration", "variadic_parameter"):
            variadic = True
        elif p.type != "comment":
            return None  # something the grammar did not understand: no constraint
    return (req, -1 if variadic else req + opt)


def _function_refs(value, pointers: dict[str, list] | None = None) -> list[tuple[str, object]]:
    """Names of the functions an expression refers to: `Foo<T>`, `&Foo<T>`, `(void*)kernel`,
    `cond ? A<1> : B<2>`; through `pointers` a variable maps to what it was assigned."""
    n = value
    for _ in range(8):
        if n.type in ("pointer_expression", "parenthesized_expression", "cast_expression"):
            n = n.child_by_field_name("argument") or n.child_by_field_name("value") or (
                n.named_children[-1] if n.named_children else None)
        elif n.type == "call_expression" and cst.node_text(n.child_by_field_name("function")).startswith(
                ("reinterpret_cast", "static_cast", "const_cast")):
            args = n.child_by_field_name("arguments").named_children
            n = args[0] if args else None
        else:
            break
        if n is None:
            return []
    if n.type == "conditional_expression":
        out = []
        for f in ("consequence", "alternative"):
            c = n.child_by_field_name(f)
            if c is not None:
                out.extend(_function_refs(c, pointers))
        return out
    if n.type == "identifier":
        name = cst.node_text(n)
        if pointers and name in pointers:
            return [(t, n) for t, _ in pointers[name]]
        return [(name, n)]
    if n.type in ("template_function", "qualified_identifier"):
        nm = cst.final_name_node(n)
        return [(cst.text_without_template_args(n), nm if nm is not None else n)]
    return []


def _lambda_param_refs(ident, name, idx, calls_by_name, pointers) -> list:
    """`auto launch = [&](auto kernel, int n) { cudaLaunchKernel((void*)kernel, ...); };
    launch(Foo<1>, 128);` -- a launch through a lambda parameter names what the lambda's callers
    pass in that position (FlashInfer's topk.cuh)."""
    n = ident.parent
    while n is not None and n.type != "lambda_expression":
        if n.type == "function_definition":
            return []
        n = n.parent
    if n is None:
        return []
    decl = n.child_by_field_name("declarator")
    params = decl.child_by_field_name("parameters") if decl is not None else None
    if params is None:
        return []
    pos = None
    for i, p in enumerate(x for x in params.named_children if x.type != "comment"):
        d = p.child_by_field_name("declarator")
        while d is not None and d.type != "identifier":
            d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
        if d is not None and cst.node_text(d) == name:
            pos = i
            break
    init = n.parent
    if pos is None or init is None or init.type != "init_declarator":
        return []
    var = init.child_by_field_name("declarator")
    if var is None or var.type != "identifier":
        return []
    out = []
    for call in calls_by_name.get((idx, cst.node_text(var)), []):
        args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
        if pos < len(args):
            out.extend(_function_refs(args[pos], pointers))
    return out


def _cuda_symbol(cx: _File, fn, body) -> Symbol | None:
    decl = _function_declarator(fn)
    if decl is None:
        return None
    dname = decl.child_by_field_name("declarator")
    if dname is None:
        return None
    enclosing = _enclosing(fn)
    if enclosing is None:
        return None
    templates, class_scopes, in_class = enclosing
    ns_names, anonymous = _namespaces(cx, fn)
    named = _written_name(cx, decl, dname)
    if named is None:
        return None
    written, definer, definer_template = named
    parts = _split_scope(written) if "::" in written and dname.type == "qualified_identifier" else [written]
    name = parts[-1]
    if name.startswith("operator"):
        name = "operator" + name[len("operator"):].replace(" ", "")
    outer = parts[:-1]
    is_method = in_class and not fn.parent.type == "friend_declaration"
    if outer and not in_class:
        last = outer[-1]
        scope_node = dname.child_by_field_name("scope") if dname.type == "qualified_identifier" else None
        if (last in cx.class_names or (scope_node is not None and scope_node.type == "template_type")
                or name == last or name.startswith("~")):
            is_method = True
    head_start = _head_start(cx, fn)
    quals = _qualifiers(cx, cx.src[_qualifier_start(cx, fn, head_start):decl.start_byte].decode("utf-8", "replace"),
                        definer)
    src = cx.src
    body_text = src[body.start_byte:body.end_byte].decode("utf-8", "replace")
    lo = bisect.bisect_left(cx.error_starts, fn.start_byte)
    hi = bisect.bisect_left(cx.error_starts, fn.end_byte)
    return Symbol(
        upstream=cx.upstream, path=cx.path, name=name, qualified_name="::".join([*ns_names, *class_scopes, *outer, name]),
        kind=_kind(quals, is_method), signature=cst.collapse(src[head_start:body.start_byte].decode("utf-8", "replace")),
        template_params=_template_params(src, templates, definer_template),
        start_line=templates[-1].start_point[0] + 1 if templates else cx.lines.line_of(head_start),
        end_line=fn.end_point[0] + 1, body_start_line=body.start_point[0] + 1,
        fingerprint=fingerprint(body_text, "cuda"), anonymous_namespace=anonymous, is_cuda_qualified=tuple(quals),
        parse_errors=hi - lo,
    )


def _enclosing(fn) -> tuple[list, list[str], bool] | None:
    """(the template heads directly wrapping the definition, innermost first; the enclosing
    classes, outermost first; whether it is defined in a class), or None for a definition nested
    in a body outside a local class: the grammar misreading a macro call followed by a block
    (`DISPATCH(...) { ... }`), not a definition."""
    class_scopes: list[str] = []
    in_class = False
    templates: list = []
    p, child = fn.parent, fn
    seen_ns_or_class = False
    while p is not None:
        t = p.type
        if t == "template_declaration" and not seen_ns_or_class and (
                child is fn or child.type == "template_declaration"):
            templates.append(p)
        elif t == "namespace_definition":
            seen_ns_or_class = True  # namespaces themselves come from ns_ranges (text)
        elif t in _CLASS_TYPES:
            seen_ns_or_class = True
            nm = _scope_name(p)
            if nm is not None:
                class_scopes[:0] = _split_scope(nm)[-1:]
            in_class = True
        elif t == "compound_statement" and not seen_ns_or_class:
            return None
        child, p = p, p.parent
    return templates, class_scopes, in_class


def _namespaces(cx: _File, fn) -> tuple[list[str], bool]:
    """Namespaces by brace matching over the text (robust to ERROR nodes), outermost first, and
    whether one of them is anonymous."""
    names, anonymous = [], False
    for lo, hi, nm in cx.ns_ranges:
        if lo < fn.start_byte < hi:
            if nm is None:
                anonymous = True
            else:
                names.extend(cx.ns_macros.get(x, x) for x in _split_scope(nm))
    return names, anonymous


def _written_name(cx: _File, decl, dname) -> tuple[str, dict | None, str | None] | None:
    """(the name as written, without template arguments; the definer macro it came from, if
    any; that macro's template parameters), or None for a definer call short of arguments."""
    written = cst.text_without_template_args(dname) if dname.type != "operator_name" else cst.collapse(
        cst.node_text(dname))
    if dname.type == "destructor_name" or dname.type == "operator_name":
        written = cst.collapse(cst.node_text(dname)).replace(" ", "")
    definer = cx.table.definers.get(written) if dname.type == "identifier" else None
    if definer is None and dname.type == "identifier":
        # a body definer's call, written as the function it defines (parse._define_bodies): the
        # source still names the macro where the parsed text names the function
        m = _IDENT.match(cx.src, dname.start_byte)
        body = cx.table.body_definers.get(m.group(0).decode()) if m else None
        if body is not None and body.get("name") == written:
            return written, body, body.get("template")
    if definer is None:
        return written, None, None
    params = decl.child_by_field_name("parameters")
    args = [cst.collapse(cst.node_text(a)) for a in (params.named_children if params is not None else [])
            if a.type != "comment"]
    k = int(definer.get("name", 0))
    if k >= len(args):
        return None
    rest = ", ".join(a for i, a in enumerate(args) if i != k)
    template = str(definer.get("template", "{rest}")).format(rest=rest) if "template" in definer else None
    return args[k], definer, template


def _head_start(cx: _File, fn) -> int:
    """Blanked macros in front of the head (`FLASHINFER_INLINE void f()` parses as starting at
    `void`) belong to it: the original text back to the previous token of the parsed text."""
    head_start = fn.start_byte
    while head_start > 0 and cx.text[head_start - 1] in b" \t\r\n":
        head_start -= 1
    while head_start < fn.start_byte and cx.src[head_start] in b" \t\r\n":
        head_start += 1
    return head_start


def _qualifier_start(cx: _File, fn, head_start: int) -> int:
    """Where a head's qualifiers may start. Usually the head itself; in a template whose head is
    split by a conditional group the grammar cannot read (cutlass's `device_kernel`:
    `template <..> CUTLASS_GLOBAL` / `#ifdef __CUDACC__` / `__launch_bounds__(..)` / `#endif` /
    `void device_kernel(..)`), the function starts after the group, and the qualifier macro
    before it belongs to the head too: back to the end of the template parameter list, across
    comments and the unreadable group only."""
    parent = fn.parent
    if parent is None or parent.type != "template_declaration":
        return head_start
    start = head_start
    prev = fn.prev_sibling
    while prev is not None and (prev.type == "comment" or
                                (prev.type == "ERROR" and cx.text[prev.start_byte:prev.start_byte + 1] == b"#")):
        start = prev.start_byte
        prev = prev.prev_sibling
    if start == head_start or prev is None or prev.type != "template_parameter_list":
        return head_start
    return prev.end_byte


def _qualifiers(cx: _File, head: str, definer: dict | None) -> list[str]:
    """CUDA qualifiers of a head: written, hidden in a listed macro, or given by the definer."""
    quals: list[str] = []
    for q in _QUAL_RE.findall(head):
        if q not in quals:
            quals.append(q)
    for tok in re.findall(r"\b[A-Z][A-Z0-9_]+\b", head):
        for q in cx.table.qualifiers.get(tok, ()):
            if q not in quals:
                quals.append(q)
    for q in (definer or {}).get("qualifiers", ()):
        if q not in quals:
            quals.append(q)
    return quals


def _kind(quals: list[str], is_method: bool) -> str:
    if "__global__" in quals:
        return KERNEL
    if is_method:
        return METHOD
    if "__device__" in quals and "__host__" in quals:
        return HOST_DEVICE
    if "__device__" in quals:
        return DEVICE
    return HOST


def _template_params(src: bytes, templates: list, definer_template: str | None) -> str | None:
    """The parameters of the template heads, outermost first, joined by '; '."""
    tparams = None
    if templates:
        plist = []
        for tnode in reversed(templates):
            pl = tnode.child_by_field_name("parameters")
            if pl is not None:
                plist.append(cst.collapse(src[pl.start_byte + 1:pl.end_byte - 1].decode("utf-8", "replace")))
        tparams = "; ".join(plist)
    if definer_template:
        tparams = "; ".join([*(tparams.split("; ") if tparams else []), definer_template])
    return tparams


# ---- Python ----------------------------------------------------------------------------------

def python_module(path: str) -> str:
    mod = path[:-3] if path.endswith(".py") else path
    parts = [p for p in mod.split("/") if p]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def extract_python(upstream: str, path: str, src: bytes) -> Extracted:
    tree = parser("python").parse(src)
    root = tree.root_node
    module = python_module(path)
    symbols: list[Symbol] = []
    spans = []
    heads = []
    found = run_queries("python", root, _PYTHON_QUERIES)
    for m in found["python-functions"]:
        fn, body, name_node = m["function"][0], m["body"][0], m["name"][0]
        names = [cst.node_text(name_node)]
        p = fn.parent
        while p is not None:  # enclosing classes and functions name the scope
            if p.type in ("class_definition", "function_definition"):
                nm = p.child_by_field_name("name")
                if nm is not None:
                    names.insert(0, cst.node_text(nm))
            p = p.parent
        start = fn.parent if fn.parent is not None and fn.parent.type == "decorated_definition" else fn
        qualified = ".".join([module, *names]) if module else ".".join(names)
        sig = cst.collapse(src[fn.start_byte:body.start_byte].decode("utf-8", "replace")).rstrip(":").strip()
        sym = Symbol(
            upstream=upstream, path=path, name=names[-1], qualified_name=qualified, kind=PYTHON,
            signature=sig, template_params=None, start_line=start.start_point[0] + 1,
            end_line=fn.end_point[0] + 1, body_start_line=body.start_point[0] + 1,
            fingerprint=fingerprint(src[body.start_byte:body.end_byte].decode("utf-8", "replace"), "python"),
        )
        spans.append((body.start_byte, body.end_byte, len(symbols)))
        heads.append((fn.start_byte, body.start_byte, len(symbols)))
        symbols.append(sym)
    owner = _Spans(spans, heads)
    edges = []
    for m in found["python-calls"]:
        call, callee = m["call"][0], m["callee"][0]
        idx = owner.owner(call.start_byte)
        if idx is None:
            continue
        if callee.type == "identifier":
            nm, via = callee, None
        elif callee.type == "attribute":
            nm, via = callee.child_by_field_name("attribute"), "member"
        else:
            continue
        written = cst.collapse(cst.node_text(callee))[:200]
        edges.append(CallEdge(symbols[idx].key, written, CALL, path, nm.start_point[0] + 1, nm.start_point[1],
                              (), via))
    imports = tuple(cst.node_text(n) for n in captured(found["python-imports"], "module"))
    fi = FileIndex(upstream=upstream, path=path, blob="", language="python", symbols=tuple(symbols),
                   edges=tuple(edges), facts=(), includes=imports,
                   error_nodes=len(captured(found["python-errors"], "error")),
                   types=tuple(xt.python_classes(upstream, path, src, found, module,
                                                     xt.MethodBodies((a, b) for a, b, _ in spans))))
    return Extracted(fi, mentions=xt.python_mentions(found, symbols, owner))

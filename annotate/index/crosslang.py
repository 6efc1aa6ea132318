"""Cross-language links: the rules (rules/crosslang.yaml, data) and the tables that need the
whole tree to find, kept beside the index in their own SQLite snapshot (links_store.py):

- `Export`: a C++ function registered under a name (`TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, fn)`,
  `m.def("name", &fn)` in `PYBIND11_MODULE`, `m.impl("name", &fn)` in `TORCH_LIBRARY_IMPL`);
- `OpRegistration`: a Python function registered as a torch op (`@custom_op("ns::name")`);
- `DispatchMacro`: a dispatch macro's branches read from its #define (`BOOL_SWITCH`,
  `DISPATCH_DLPACK_DTYPE_TO_CTYPE_FP16`, ...): per branch, the condition and what it binds.

What needs only one function (which call reaches which module, the conditions around a call
site) is worked out when a trace asks for it (trace_python.py, trace_cpp.py).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.errors import AnnotateError
from annotate.index.model import CUDA_SUFFIXES

if TYPE_CHECKING:
    from annotate.config import Config
    from annotate.index.api import Index

HERE = Path(__file__).resolve().parent
RULES_FILE = HERE / "rules" / "crosslang.yaml"


# ---- the rules ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExportRule:
    id: str
    pattern: str  # may hold {var}, filled from the scope's capture
    scope: re.Pattern | None = None


@dataclass(frozen=True)
class Extension:
    upstream: str
    module: str  # the import name: `import flash_attn_2_cuda`
    sources: tuple[str, ...]  # globs relative to the upstream root
    built_by: str
    built_by_zh: str = ""  # the same in Chinese, for the site's trace pages


@dataclass(frozen=True)
class Variable:
    match: re.Pattern
    key: str
    true: str | None = None  # a boolean operand means "key == true"
    false: str | None = None  # shown for the false side (e.g. backend cute-dsl)
    true_match: re.Pattern | None = None  # ... or "key matches this" (`fp8_enabled`: dtype fp8_*)
    note: str = ""  # what the condition means at run time, for a reader (where it is not obvious)
    note_zh: str = ""  # the same in Chinese, for the site's trace pages
    # the value is the key's rounded up to the first of these (FA3's `params.d_rounded`:
    # round_up_headdim of head_dim); undecided above the last
    round_up: tuple[int, ...] = ()


@dataclass(frozen=True)
class Entry:
    entry: str
    when: tuple[tuple[str, str], ...] = ()
    steps: tuple[str, ...] = ()  # the course steps that ask the learner to follow this call


@dataclass(frozen=True)
class Rules:
    loaders: tuple[str, ...]
    spec_makers: re.Pattern
    spec_functions: tuple[str, ...]
    source_suffixes: tuple[str, ...]
    source_dirs: tuple[tuple[str, str], ...]
    default_source_dir: str
    namespaces: tuple[str, ...]
    op_registrars: re.Pattern
    autograd_bases: re.Pattern
    dsl_compilers: tuple[str, ...]
    dsl_kernels: tuple[str, ...]
    extensions: tuple[Extension, ...]
    exports: tuple[ExportRule, ...]
    dispatch_macros: re.Pattern
    library_paths: tuple[str, ...]
    max_wrapper_lines: int
    keys: tuple[tuple[str, str], ...]  # key -> what it means
    variables: tuple[Variable, ...]
    types: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # key -> ((C++ type, value), ...)
    entries: tuple[Entry, ...]

    def is_library(self, path: str) -> bool:
        return any(path.startswith(p) for p in self.library_paths)

    def key_names(self) -> list[str]:
        return [k for k, _ in self.keys]

    def type_value(self, key: str, ctype: str) -> str | None:
        table = dict(dict(self.types).get(key, ()))
        return table.get(" ".join(ctype.split()))

    def variable(self, text: str) -> Variable | None:
        t = " ".join(text.split())
        for v in self.variables:
            if v.match.search(t):
                return v
        return None


class RulesError(AnnotateError):
    pass


def _where(loaded, path: tuple) -> str:
    pos = loaded.where(path)
    return f"{RULES_FILE.name}:{pos[0]}" if pos else RULES_FILE.name


def parse_rules(text: str) -> Rules:
    """The rule table, checked: a problem is one line naming the file and line."""
    from annotate.yamlpos import YamlProblem, load_yaml

    try:
        loaded = load_yaml(text)
    except YamlProblem as exc:
        raise RulesError(f"{RULES_FILE.name}:{exc.line or '?'}: {exc.message}") from None
    raw = loaded.data
    if not isinstance(raw, dict):
        raise RulesError(f"{RULES_FILE.name}: expected a mapping")

    def need(path: tuple, kind: type, default=None):
        cur = raw
        for p in path:
            if not (isinstance(cur, dict) and p in cur) and not (isinstance(cur, list) and isinstance(p, int)
                                                                  and p < len(cur)):
                if default is not None:
                    return default
                raise RulesError(f"{_where(loaded, path[:-1])}: missing `{'.'.join(map(str, path))}`")
            cur = cur[p]
        if not isinstance(cur, kind):
            raise RulesError(f"{_where(loaded, path)}: `{'.'.join(map(str, path))}` must be a {kind.__name__}")
        return cur

    def rx(path: tuple, value=None) -> re.Pattern:
        text_ = need(path, str) if value is None else value
        try:
            return re.compile(text_)
        except re.error as exc:
            raise RulesError(f"{_where(loaded, path)}: bad regex: {exc}") from None

    def strs(path: tuple) -> tuple[str, ...]:
        got = need(path, list, [])
        if not all(isinstance(x, str) for x in got):
            raise RulesError(f"{_where(loaded, path)}: `{'.'.join(map(str, path))}` must list strings")
        return tuple(got)

    exts = []
    for i, e in enumerate(need(("extensions",), list, [])):
        if not isinstance(e, dict) or not {"upstream", "module", "sources"} <= set(e):
            raise RulesError(f"{_where(loaded, ('extensions', i))}: an extension needs upstream, module, sources")
        exts.append(Extension(str(e["upstream"]), str(e["module"]), tuple(map(str, e["sources"])),
                              str(e.get("built_by", "")), str(e.get("built_by_zh", ""))))
    exports = []
    for i, e in enumerate(need(("exports",), list, [])):
        if not isinstance(e, dict) or not {"id", "pattern"} <= set(e):
            raise RulesError(f"{_where(loaded, ('exports', i))}: an export rule needs id and pattern")
        scope = rx(("exports", i, "scope")) if "scope" in e else None
        probe = str(e["pattern"]).replace("{var}", "m")
        rx(("exports", i, "pattern"), probe)
        if not {"name", "function"} <= set(re.compile(probe).groupindex):
            raise RulesError(f"{_where(loaded, ('exports', i, 'pattern'))}: the pattern needs groups name and function")
        exports.append(ExportRule(str(e["id"]), str(e["pattern"]), scope))
    keys = need(("keys",), dict, {})
    variables = []
    for i, v in enumerate(need(("variables",), list, [])):
        if not isinstance(v, dict) or not {"match", "key"} <= set(v):
            raise RulesError(f"{_where(loaded, ('variables', i))}: a variable needs match and key")
        if v["key"] not in keys:
            raise RulesError(f"{_where(loaded, ('variables', i, 'key'))}: unknown key {v['key']!r}; "
                             f"keys: {', '.join(keys)}")
        steps = v.get("round_up", [])
        if not (isinstance(steps, list) and all(type(x) is int for x in steps) and steps == sorted(set(steps))):
            raise RulesError(f"{_where(loaded, ('variables', i, 'round_up'))}: round_up must be a list of increasing "
                             f"integers")
        variables.append(Variable(rx(("variables", i, "match")), str(v["key"]),
                                  None if v.get("true") is None else _yaml_value(v["true"]),
                                  None if v.get("false") is None else _yaml_value(v["false"]),
                                  rx(("variables", i, "true_match")) if "true_match" in v else None,
                                  str(v.get("note") or ""), str(v.get("note_zh") or ""), tuple(steps)))
    types = []
    for key, table in need(("types",), dict, {}).items():
        if key not in keys or not isinstance(table, dict):
            raise RulesError(f"{_where(loaded, ('types', key))}: `types.{key}` must map C++ types of a known key")
        types.append((str(key), tuple((" ".join(str(t).split()), str(val)) for t, val in table.items())))
    entries = []
    for i, e in enumerate(need(("entries",), list, [])):
        if not isinstance(e, dict) or "entry" not in e:
            raise RulesError(f"{_where(loaded, ('entries', i))}: an entry needs `entry`")
        when = e.get("when") or {}
        bad = [k for k in when if k not in keys]
        if bad:
            raise RulesError(f"{_where(loaded, ('entries', i, 'when'))}: unknown key {bad[0]!r}")
        steps = e.get("steps") or []
        if not isinstance(steps, list) or not all(isinstance(x, str) for x in steps):
            raise RulesError(f"{_where(loaded, ('entries', i, 'steps'))}: `steps` must list course step ids")
        entries.append(Entry(str(e["entry"]), tuple((str(k), _yaml_value(v)) for k, v in when.items()),
                             tuple(steps)))
    return Rules(
        loaders=strs(("python", "loaders")),
        spec_makers=rx(("python", "spec_makers")),
        spec_functions=strs(("python", "spec_functions")),
        source_suffixes=strs(("python", "source_suffixes")),
        source_dirs=tuple((str(k), str(v).strip("/")) for k, v in need(("python", "source_dirs"), dict, {}).items()),
        default_source_dir=str(need(("python", "default_source_dir"), str)).strip("/"),
        namespaces=strs(("python", "namespaces")),
        op_registrars=rx(("python", "op_registrars")),
        autograd_bases=rx(("python", "autograd_bases")),
        dsl_compilers=strs(("python", "dsl_compilers")),
        dsl_kernels=strs(("python", "dsl_kernels")),
        extensions=tuple(exts),
        exports=tuple(exports),
        dispatch_macros=rx(("dispatch", "macros")),
        library_paths=strs(("library_paths",)),
        max_wrapper_lines=int(need(("body", "max_wrapper_lines"), int)),
        keys=tuple((str(k), str(v)) for k, v in keys.items()),
        variables=tuple(variables),
        types=tuple(types),
        entries=tuple(entries),
    )


def _yaml_value(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


@functools.cache
def rules() -> Rules:
    return parse_rules(RULES_FILE.read_text(encoding="utf-8"))


@functools.cache
def links_version() -> str:
    """Changes when what the tables are made from changes (this module, its rules, the store)."""
    h = hashlib.sha256()
    for p in (Path(__file__), RULES_FILE, HERE / "links_store.py"):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


# ---- the tables ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Export:
    upstream: str
    path: str
    line: int
    rule: str  # ExportRule.id: tvm-ffi, pybind11, torch-library, ...
    module: str | None  # PYBIND11_MODULE / TORCH_LIBRARY name; None for TVM-FFI (the JIT module is the file's)
    name: str  # the name Python calls
    function: str  # the C++ function as written (`FLASH_NAMESPACE::mha_fwd`)


@dataclass(frozen=True)
class OpRegistration:
    upstream: str
    path: str
    line: int
    op: str  # "ns::name" as written in the decorator
    function: str  # Symbol.key of the decorated function


@dataclass(frozen=True)
class DispatchBranch:
    conditions: tuple[str, ...]  # C++ text, in the macro's parameter names; all must hold
    bindings: tuple[tuple[str, str], ...]  # (name, value): `using c_type = nv_half` -> ("c_type", "nv_half")


@dataclass(frozen=True)
class DispatchMacro:
    upstream: str
    path: str
    line: int
    name: str
    params: tuple[str, ...]  # the #define's parameters, `...` as __VA_ARGS__
    branches: tuple[DispatchBranch, ...]
    variants: int = 1  # definitions of this name found (under #if); the one with most branches is kept

    def at(self, args: list[str]) -> tuple[DispatchBranch, ...]:
        """The branches with the parameters replaced by a call's arguments."""
        subst = {p: a for p, a in zip(self.params, args) if p != "__VA_ARGS__"}
        return tuple(DispatchBranch(tuple(_substitute(c, subst) for c in b.conditions),
                                    tuple((_substitute(n, subst), _substitute(v, subst)) for n, v in b.bindings))
                     for b in self.branches)


@dataclass(frozen=True)
class Links:
    """The whole-tree tables of every upstream of one index."""

    exports: tuple[Export, ...] = ()
    ops: tuple[OpRegistration, ...] = ()
    macros: tuple[DispatchMacro, ...] = ()

    @functools.cached_property
    def _by_name(self) -> dict:
        ex: dict[tuple[str, str], list[Export]] = {}
        for e in self.exports:
            ex.setdefault((e.upstream, e.name), []).append(e)
        return {"exports": ex, "ops": {(o.upstream, o.op): o for o in self.ops},
                "macros": _group(((m.upstream, m.name), m) for m in self.macros)}

    def exports_named(self, upstream: str, name: str) -> list[Export]:
        return list(self._by_name["exports"].get((upstream, name), ()))

    def op(self, upstream: str, op: str) -> OpRegistration | None:
        return self._by_name["ops"].get((upstream, op))

    def macros_named(self, upstream: str, name: str) -> list[DispatchMacro]:
        """Every definition of a dispatch macro (one per file that defines it)."""
        return list(self._by_name["macros"].get((upstream, name), ()))


def _group(pairs) -> dict:
    out: dict = {}
    for k, v in pairs:
        out.setdefault(k, []).append(v)
    return out


def _substitute(text: str, subst: dict[str, str]) -> str:
    if not subst:
        return text
    pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(subst, key=len, reverse=True)) + r")\b")
    return pat.sub(lambda m: subst[m.group(1)], text)


# ---- reading #define ------------------------------------------------------------------------------

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\(([^)]*)\))?", re.M)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


class LineOf:
    """1-based line of an offset in a text (a bisection over its line starts, made once)."""

    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def __call__(self, offset: int) -> int:
        import bisect

        return bisect.bisect_right(self.starts, offset)


def read_defines(text: str) -> list[tuple[str, tuple[str, ...] | None, str, int]]:
    """Every #define of a C/C++ text: (name, params or None for an object-like macro, body with
    line continuations joined and comments removed, 1-based line)."""
    out = []
    line_of = None
    for m in _DEFINE.finditer(text):
        line_of = line_of or LineOf(text)
        end = m.end()
        body = []
        while True:
            nl = text.find("\n", end)
            chunk = text[end: len(text) if nl < 0 else nl]
            if chunk.rstrip().endswith("\\"):
                body.append(chunk.rstrip()[:-1])
                if nl < 0:
                    break
                end = nl + 1
                continue
            body.append(chunk)
            break
        params = None
        if m.group(2) is not None:
            params = tuple("__VA_ARGS__" if p.strip() == "..." else p.strip()
                           for p in m.group(3).split(",") if p.strip())
        out.append((m.group(1), params, _COMMENTS.sub(" ", " ".join(body)).strip(), line_of(m.start())))
    return out


def split_args(text: str) -> list[str]:
    """Top-level comma-separated pieces of an argument list's inside (brackets of all kinds nest)."""
    out, depth, cur = [], 0, []
    i = 0
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip() or out:
        out.append("".join(cur).strip())
    return out


def balanced(text: str, start: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket that closes the one at `start` (strings skipped); -1 if none."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def expand_body(body: str, defs: dict[str, tuple[tuple[str, ...] | None, str]], depth: int = 0) -> str:
    """`body` with calls of the function-like macros in `defs` replaced by their bodies (their
    parameters substituted), a few levels deep: `_DISPATCH_CASE_F16(c_type, __VA_ARGS__)`."""
    if depth > 4 or not defs:
        return body
    names = [n for n, (p, _) in defs.items() if p is not None and n in body]
    if not names:
        return body
    pat = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\s*\(")
    out, pos = [], 0
    for m in pat.finditer(body):
        if m.start() < pos:
            continue
        end = balanced(body, m.end() - 1)
        if end < 0:
            continue
        params, inner = defs[m.group(1)]
        args = split_args(body[m.end(): end - 1])
        subst = {}
        for i, p in enumerate(params or ()):
            if p == "__VA_ARGS__":
                subst[p] = ", ".join(args[i:])
                break
            subst[p] = args[i] if i < len(args) else ""
        out.append(body[pos:m.start()])
        out.append(" " + expand_body(_substitute(inner, subst), defs, depth + 1) + " ")
        pos = end
    out.append(body[pos:])
    return "".join(out)


_TOKEN = re.compile(r"""
    (?=[iesucd_{};])  # cheap first-character test before the alternatives
    (?:(?P<ifc>\bif\s*(?:constexpr\s*)?\()
  | (?P<else>\belse\b)
  | (?P<switch>\bswitch\s*\()
  | (?P<case>\bcase\b)
  | (?P<default>\bdefault\s*:)
  | (?P<using>\busing\s+(?P<uname>\w+)\s*=\s*(?P<uval>[^;]+);)
  | (?P<cexpr>\bconstexpr\s+(?:static\s+)?(?:const\s+)?[\w:<>]+(?:\s*[*&])?\s+(?P<cname>\w+)\s*=\s*(?P<cval>[^;]+);)
  | (?P<va>\b__VA_ARGS__\b)
  | (?P<lb>\{) | (?P<rb>\}) | (?P<semi>;))
""", re.X)


def macro_branches(body: str) -> tuple[DispatchBranch, ...]:
    """The branches of a dispatch macro's (expanded) body: each place the code argument
    (`__VA_ARGS__`) is run, with the conditions that lead there and the names bound on the way."""
    toks: list[tuple[str, str | tuple]] = []
    pos = 0
    while True:
        m = _TOKEN.search(body, pos)
        if not m:
            break
        kind = next(k for k in ("ifc", "else", "switch", "case", "default", "using", "cexpr", "va", "lb", "rb", "semi")
                    if m.group(k) is not None)
        if kind in ("ifc", "switch"):
            end = balanced(body, m.end() - 1)
            if end < 0:
                break
            toks.append(("if" if kind == "ifc" else "switch", " ".join(body[m.end():end - 1].split())))
            pos = end
            continue
        if kind == "case":
            colon = re.compile(r"(?<!:):(?!:)").search(body, m.end())
            if not colon:
                break
            toks.append(("case", " ".join(body[m.end():colon.start()].split())))
            pos = colon.end()
            continue
        if kind == "using":
            toks.append(("bind", (m.group("uname"), " ".join(m.group("uval").split()))))
        elif kind == "cexpr":
            toks.append(("bind", (m.group("cname"), " ".join(m.group("cval").split()))))
        else:
            toks.append((kind, ""))
        pos = m.end()

    out: list[DispatchBranch] = []

    def emit(conds: tuple[str, ...], binds: dict[str, str]) -> None:
        out.append(DispatchBranch(conds, tuple(binds.items())))

    def statement(i: int, conds: tuple[str, ...], binds: dict[str, str]) -> int:
        if i >= len(toks):
            return i
        kind, val = toks[i]
        if kind == "lb":
            return block(i + 1, conds, dict(binds))
        if kind == "if":
            return if_chain(i, conds, binds)
        if kind == "switch":
            return switch(i, conds, binds)
        while i < len(toks):  # a simple statement: up to its ';'
            kind, val = toks[i]
            if kind == "va":
                emit(conds, binds)
            elif kind == "bind":
                binds[val[0]] = val[1]
                return i + 1
            elif kind in ("semi",):
                return i + 1
            elif kind in ("rb", "lb", "case", "default", "if", "switch", "else"):
                return i
            i += 1
        return i

    def block(i: int, conds: tuple[str, ...], binds: dict[str, str]) -> int:
        while i < len(toks):
            if toks[i][0] == "rb":
                return i + 1
            if toks[i][0] in ("case", "default", "else"):
                i += 1
                continue
            i = statement(i, conds, binds)
        return i

    def if_chain(i: int, conds: tuple[str, ...], binds: dict[str, str]) -> int:
        negs: tuple[str, ...] = ()
        while i < len(toks) and toks[i][0] == "if":
            cond = toks[i][1]
            i = statement(i + 1, conds + negs + (cond,), dict(binds))
            negs = negs + (f"!({cond})",)
            if i < len(toks) and toks[i][0] == "else":
                i += 1
                if i < len(toks) and toks[i][0] == "if":
                    continue
                return statement(i, conds + negs, dict(binds))
            return i
        return i

    def switch(i: int, conds: tuple[str, ...], binds: dict[str, str]) -> int:
        expr = toks[i][1]
        i += 1
        if i >= len(toks) or toks[i][0] != "lb":
            return i
        i += 1
        labels: list[str] = []
        cur: str | None = None
        while i < len(toks) and toks[i][0] != "rb":
            kind, val = toks[i]
            if kind == "case":
                labels.append(val)
                cur = f"{expr} == {val}"
                i += 1
            elif kind == "default":
                cur = "!(" + " || ".join(f"{expr} == {v}" for v in labels) + ")" if labels else None
                i += 1
            else:
                i = statement(i, conds + ((cur,) if cur else ()), dict(binds))
        return i + 1

    block(0, (), {})
    return tuple(out)


def dispatch_tables(texts: dict[str, str], upstream: str, is_dispatch: re.Pattern) -> list[DispatchMacro]:
    """Dispatch macros defined in `texts` (path -> C++ text): those whose name matches
    `is_dispatch`, with the helper macros they call expanded."""
    defs: dict[str, list[tuple[tuple[str, ...] | None, str, str, int]]] = {}
    for path, text in texts.items():
        if "#" not in text or "define" not in text:
            continue
        for name, params, body, line in read_defines(text):
            if is_dispatch.search(name) or (params is not None and "__VA_ARGS__" in body):
                defs.setdefault(name, []).append((params, body, path, line))
    out = []
    helpers_of: dict[str, dict] = {}
    for name, variants in sorted(defs.items()):
        if not is_dispatch.search(name):
            continue
        by_path: dict[str, list] = {}
        for v in variants:
            by_path.setdefault(v[2], []).append(v)
        for path, here in sorted(by_path.items()):
            best = None
            for params, body, _, line in here:
                seen = {name}
                while params is None and re.fullmatch(r"\w+", body) and body in defs and body not in seen:
                    seen.add(body)  # `#define DROPOUT_SWITCH BOOL_SWITCH`: an alias
                    params, body = _nearest(defs[body], path)
                if params is None:
                    continue
                if path not in helpers_of:
                    helpers_of[path] = {n: _nearest(v, path) for n, v in defs.items()}
                helpers = {n: v for n, v in helpers_of[path].items() if n != name}
                branches = macro_branches(expand_body(body, helpers))
                if branches and (best is None or len(branches) > len(best[1])):
                    best = (params, branches, line)
            if best is not None:
                out.append(DispatchMacro(upstream, path, best[2], name, best[0], best[1], len(here)))
    return out


def _nearest(variants: list, path: str) -> tuple:
    """Of several definitions of one macro, (params, body) of the one in `path` (the one with the
    longest body when that file has several, under #if), else the longest anywhere."""
    here = [v for v in variants if v[2] == path] or variants
    params, body, _, _ = max(here, key=lambda v: len(v[1]))
    return params, body


# ---- scanning a tree ----------------------------------------------------------------------------

_DECORATOR = re.compile(r"^[ \t]*@[ \t]*([\w.]+)\(\s*f?[\"']([^\"'\n]+)[\"']", re.M)


def _literal(pattern: str) -> str:
    """The word a pattern starts with (`\\bTVM_FFI_DLL_EXPORT_TYPED_FUNC\\(` -> its name), to skip texts
    that cannot match without running the regex."""
    m = re.match(r"(?:\\b)?(\w{4,})", pattern)
    return m.group(1) if m else ""


def scan_exports(text: str, path: str, upstream: str, table: tuple[ExportRule, ...]) -> list[Export]:
    out = []
    line_of = LineOf(text)
    for rule in table:
        if _literal(rule.scope.pattern if rule.scope is not None else rule.pattern) not in text:
            continue
        if rule.scope is None:
            blocks = [(0, len(text), {})]
        else:
            blocks = []
            for m in rule.scope.finditer(text):
                brace = text.find("{", m.end())
                end = balanced(text, brace, "{", "}") if brace >= 0 else -1
                if end > 0:
                    blocks.append((brace, end, m.groupdict()))
        for start, end, groups in blocks:
            pat = re.compile(rule.pattern.replace("{var}", re.escape(groups.get("var") or "m")))
            for m in pat.finditer(text, start, end):
                gd = m.groupdict()
                out.append(Export(upstream, path, line_of(m.start()), rule.id,
                                  gd.get("module") or groups.get("module"), gd["name"], gd["function"]))
    return out


def scan_upstream(index: "Index", upstream: str, table: Rules) -> Links:
    """The exports, op registrations and dispatch macros of one upstream of `index`."""
    root = index.root(upstream)
    exports: list[Export] = []
    ops: list[OpRegistration] = []
    texts: dict[str, str] = {}
    markers = ("TVM_FFI_DLL_EXPORT", "PYBIND11_MODULE", "TORCH_LIBRARY")
    for path in index.paths(upstream):
        if table.is_library(path):
            continue
        try:
            text = (root / path).read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if path.endswith(CUDA_SUFFIXES):
            if "__VA_ARGS__" in text:  # a dispatch macro runs its code argument, `...`
                texts[path] = text
            if any(mk in text for mk in markers):
                exports.extend(scan_exports(text, path, upstream, table.exports))
        elif path.endswith(".py") and "::" in text:
            for m in _DECORATOR.finditer(text):
                if "::" not in m.group(2) or not table.op_registrars.search(m.group(1)):
                    continue
                line = text.count("\n", 0, m.start()) + 1
                sym = index.enclosing(upstream, path, line)
                if sym is not None:
                    ops.append(OpRegistration(upstream, path, line, m.group(2), sym.key))
    macros = dispatch_tables(texts, upstream, table.dispatch_macros)
    return Links(tuple(exports), tuple(ops), tuple(macros))


def build_links(index: "Index", table: Rules | None = None) -> Links:
    table = table or rules()
    parts = [scan_upstream(index, up, table) for up in index.upstreams()]
    return Links(tuple(e for p in parts for e in p.exports), tuple(o for p in parts for o in p.ops),
                 tuple(m for p in parts for m in p.macros))


def load_links(index: "Index", config: "Config | None" = None) -> Links:
    """The links of `index`, from the snapshot keyed by the index's content and the links
    version when the cache has it (nothing is read but that file), else scanned and, with a
    config whose cache is writable, saved. Kept on the index (`index.memo`)."""
    from annotate.index import links_store

    def make() -> Links:
        if config is None:
            return build_links(index)
        return links_store.open_or_build(config, index, build_links)

    return index.memo(("crosslang-links", links_version()), make)

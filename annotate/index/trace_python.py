"""What a trace needs to know about a Python function, worked out when asked with the standard
`ast` module (only the files on a chain are parsed): the calls it makes and the conditions
around each, and what a name or expression stands for as far as the rules say
(rules/crosslang.yaml): a compiled JIT module (`gen_norm_module().build_and_load()`), an
attribute of one (`module.run`), an extension module (`import flash_attn_2_cuda as gpu`), a
torch op (`torch.ops.flash_attn._flash_attn_forward`), a `SimpleNamespace(run=f)`, an autograd
class, a function. Values are followed through local, enclosing and module-level assignments
(a module-level one under `if` carries that condition) and through the `return`s of the
functions that make them.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from annotate.index.crosslang import Rules

if TYPE_CHECKING:
    from annotate.index.api import Index
    from annotate.index.model import Symbol


# ---- values ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PyGuard:
    text: str  # the condition as written (`not` added for an else branch)
    path: str
    line: int


@dataclass(frozen=True)
class Fn:
    key: str  # Symbol.key


@dataclass(frozen=True)
class JitModule:
    maker: str  # Symbol.key of the function that makes the JitSpec
    sources: tuple[str, ...]  # checkout paths of the C++ sources it compiles
    templates: tuple[str, ...]  # checkout paths of the Jinja templates it renders
    path: str  # where the module is loaded (`.build_and_load()`)
    line: int
    # sources and templates the spec maker names only under an `if` on its arguments, with those
    # conditions (`backend == "fa2"`)
    source_guards: tuple[tuple[str, tuple[PyGuard, ...]], ...] = ()


    def compatible(self, a: str, b: str) -> bool:
        """Whether files `a` and `b` of the module can be compiled together: no condition of one
        is the negation of a condition of the other (`fp8_enabled` / `not fp8_enabled`)."""
        from annotate.index.conditions import negate

        guards = dict(self.source_guards)
        ga = {g.text for g in guards.get(a, ())}
        gb = {g.text for g in guards.get(b, ())}
        return not any(negate(t, "python") in gb for t in ga) and not any(negate(t, "python") in ga for t in gb)

    def templates_for(self, source: str) -> tuple[str, ...]:
        """The templates rendered together with `source` (same branch of the spec maker), those
        whose name shares the longest stem with it first."""
        import os

        stem = os.path.basename(source).rsplit(".", 1)[0]
        ok = [t for t in self.templates if self.compatible(source, t)]
        return tuple(sorted(ok, key=lambda t: -len(os.path.commonprefix([stem, os.path.basename(t)]))))


@dataclass(frozen=True)
class Extension:
    name: str  # import name
    sources: tuple[str, ...]
    built_by: str
    path: str  # the import
    line: int


@dataclass(frozen=True)
class Attr:
    module: JitModule | Extension
    name: str
    path: str  # where the attribute is taken
    line: int


@dataclass(frozen=True)
class PyModule:
    name: str  # dotted


@dataclass(frozen=True)
class OpsNamespace:
    ns: str


@dataclass(frozen=True)
class Op:
    name: str  # "ns::op"
    path: str
    line: int


@dataclass(frozen=True)
class Namespace:
    attrs: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class ClassRef:
    qualified: str  # module.Class
    path: str
    autograd: bool


@dataclass(frozen=True)
class Instance:
    cls: ClassRef


@dataclass(frozen=True)
class Valued:
    value: object
    guards: tuple[PyGuard, ...] = ()


@dataclass(frozen=True)
class PyCall:
    node: ast.Call = field(compare=False, repr=False)
    line: int
    written: str
    guards: tuple[PyGuard, ...]


# ---- one file -------------------------------------------------------------------------------------

def module_name(path: str) -> str:
    m = path[:-3] if path.endswith(".py") else path
    return m.replace("/", ".").removesuffix(".__init__")


class PyFile:
    """One Python file, parsed: its functions by line, its module-level names, its classes."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.module = module_name(path)
        self.is_package = path.endswith("__init__.py")
        self.lines = text.splitlines()
        try:
            self.tree = ast.parse(text)
        except SyntaxError:
            self.tree = ast.Module(body=[], type_ignores=[])
        self.parents: dict[ast.AST, ast.AST] = {}
        self.functions: dict[int, ast.AST] = {}  # def line and first decorator line -> node
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.lineno] = node
                if node.decorator_list:
                    self.functions.setdefault(min(d.lineno for d in node.decorator_list), node)
        # module-level names: name -> [(node bound, guards)]
        self.top: dict[str, list[tuple[ast.AST, tuple[PyGuard, ...]]]] = {}
        self._collect(self.tree.body, ())

    def _collect(self, body: list, guards: tuple[PyGuard, ...]) -> None:
        for st in body:
            if isinstance(st, ast.If):
                g = PyGuard(ast.unparse(st.test), self.path, st.lineno)
                self._collect(st.body, guards + (g,))
                self._collect(st.orelse, guards + (PyGuard(_not(g.text), self.path, st.lineno),))
            elif isinstance(st, ast.Try):
                self._collect(st.body, guards)
                for h in st.handlers:
                    self._collect(h.body, guards)
                self._collect(st.orelse, guards)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for a in st.names:
                    name = a.asname or a.name.split(".")[0]
                    self.top.setdefault(name, []).append((st, guards))
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.top.setdefault(st.name, []).append((st, guards))
            elif isinstance(st, (ast.Assign, ast.AnnAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    if isinstance(t, ast.Name) and st.value is not None:
                        self.top.setdefault(t.id, []).append((st.value, guards))

    def line_text(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def function_at(self, sym: "Symbol") -> ast.AST | None:
        node = self.functions.get(sym.start_line)
        if node is None or node.name != sym.name:
            node = next((n for ln, n in self.functions.items()
                         if sym.start_line <= ln <= sym.end_line and n.name == sym.name), None)
        return node

    def enclosing_function(self, node: ast.AST) -> ast.AST | None:
        p = self.parents.get(node)
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            p = self.parents.get(p)
        return p

    def enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        p = self.parents.get(node)
        while p is not None and not isinstance(p, ast.ClassDef):
            p = self.parents.get(p)
        return p

    def qualified(self, fn: ast.AST) -> str:
        parts = [fn.name]
        p = self.parents.get(fn)
        while p is not None:
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parts.append(p.name)
            p = self.parents.get(p)
        return ".".join([self.module, *reversed(parts)])

    def calls(self, fn: ast.AST) -> list[PyCall]:
        """The calls in `fn`'s body (not in nested definitions), each with the conditions around it."""
        out: list[PyCall] = []

        def visit(node, guards):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and node is not fn:
                return
            if isinstance(node, ast.If):
                visit(node.test, guards)
                g = PyGuard(ast.unparse(node.test), self.path, node.lineno)
                for st in node.body:
                    visit(st, guards + (g,))
                ng = PyGuard(_not(g.text), self.path, node.lineno)
                for st in node.orelse:
                    visit(st, guards + (ng,))
                return
            if isinstance(node, ast.IfExp):
                visit(node.test, guards)
                g = PyGuard(ast.unparse(node.test), self.path, node.lineno)
                visit(node.body, guards + (g,))
                visit(node.orelse, guards + (PyGuard(_not(g.text), self.path, node.lineno),))
                return
            if isinstance(node, ast.Call):
                out.append(PyCall(node, node.lineno, ast.unparse(node.func), guards))
            for child in ast.iter_child_nodes(node):
                visit(child, guards)

        for st in fn.body:
            visit(st, ())
        return out

    def class_def(self, name: str) -> ast.ClassDef | None:
        for node, _ in self.top.get(name, ()):
            if isinstance(node, ast.ClassDef):
                return node
        return None


def _not(text: str) -> str:
    from annotate.index.conditions import negate

    return negate(text, "python")


# ---- evaluation -----------------------------------------------------------------------------------

class PyReader:
    """Answers "what does this expression stand for" over the Python files of one upstream."""

    def __init__(self, index: "Index", upstream: str, rules: Rules):
        self.index, self.upstream, self.rules = index, upstream, rules
        self._lookups: dict[tuple, list[Valued]] = {}
        self._bindings: dict[int, dict[str, list[ast.AST]]] = {}

    # files and symbols
    def file(self, path: str) -> PyFile | None:
        if not self.index.has_file(self.upstream, path):
            return None

        def make() -> PyFile:
            return PyFile(path, self.index.source(self.upstream, path))

        return self.index.memo(("trace-pyfile", self.upstream, path), make)

    def module_path(self, dotted: str) -> str | None:
        base = dotted.replace(".", "/")
        for cand in (base + ".py", base + "/__init__.py"):
            if self.index.has_file(self.upstream, cand):
                return cand
        return None

    def symbol(self, qualified: str) -> "Symbol | None":
        """The function a Python name means at run time: of several `def`s of one name in a file
        (`@overload` stubs, redefinitions), the last one."""
        got = [s for s in self.index.find(qualified, self.upstream) if s.qualified_name == qualified
               and s.path.endswith(".py")]
        return max(got, key=lambda s: (s.path, s.start_line)) if got else None

    def function_node(self, sym: "Symbol") -> tuple[PyFile, ast.AST] | None:
        f = self.file(sym.path)
        node = f.function_at(sym) if f is not None else None
        return (f, node) if node is not None else None

    def is_dsl_kernel(self, sym: "Symbol") -> bool:
        got = self.function_node(sym)
        if got is None:
            return False
        return any(_decorator_name(d) in self.rules.dsl_kernels for d in got[1].decorator_list)

    # names
    def lookup(self, name: str, f: PyFile, fn: ast.AST | None, depth: int = 0) -> list[Valued]:
        """What `name` may stand for inside `fn` of file `f` (locals, enclosing functions, module)."""
        key = (f.path, fn.lineno if fn is not None else 0, name)
        got = self._lookups.get(key)
        if got is not None:
            return got
        if depth > 12:
            return []
        self._lookups[key] = []  # a name defined through itself stands for nothing more
        got = self._lookup(name, f, fn, depth)
        self._lookups[key] = got
        return got

    def _lookup(self, name: str, f: PyFile, fn: ast.AST | None, depth: int) -> list[Valued]:
        scope = fn
        while scope is not None:
            local = self._local(name, f, scope, depth)
            if local is not None:
                return local
            scope = f.enclosing_function(scope)
        return self._module_level(name, f, depth)

    def _binders(self, fn: ast.AST) -> dict[str, list[ast.AST]]:
        """name -> the statements of `fn` (not of functions inside it) that bind it; parameters
        map to the function itself."""
        got = self._bindings.get(id(fn))
        if got is not None:
            return got
        out: dict[str, list[ast.AST]] = {}
        args = fn.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                out.setdefault(a.arg, []).append(fn)
        for node in _own_nodes(fn):
            names: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            elif isinstance(node, (ast.For, ast.With, ast.comprehension)):
                names = sorted(_target_names(node))
            for n in names:
                out.setdefault(n, []).append(node)
        self._bindings[id(fn)] = out
        return out

    def _local(self, name: str, f: PyFile, fn: ast.AST, depth: int) -> list[Valued] | None:
        binders = self._binders(fn).get(name)
        if binders is None:
            return None
        if any(b is fn for b in binders):
            return []  # a parameter: what the caller passes is not followed
        found: list[Valued] = []
        bound = False
        for node in binders:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                sym = self.symbol(f.qualified(node))
                if sym is not None:
                    found.append(Valued(Fn(sym.key)))
                bound = True
            elif isinstance(node, ast.Assign):
                if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    bound = True
                    found.extend(self.evaluate(node.value, f, fn, depth + 1))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name) \
                    and node.target.id == name:
                bound = True
                if node.value is not None and isinstance(node, ast.AnnAssign):
                    found.extend(self.evaluate(node.value, f, fn, depth + 1))
            elif isinstance(node, (ast.For, ast.With, ast.comprehension)) and name in _target_names(node):
                bound = True
        return found if bound else None

    def _module_level(self, name: str, f: PyFile, depth: int) -> list[Valued]:
        out: list[Valued] = []
        for node, guards in f.top.get(name, ()):
            for v in self._bound_at_top(name, node, f, depth):
                out.append(Valued(v.value, guards + v.guards))
        return out

    def _bound_at_top(self, name: str, node: ast.AST, f: PyFile, depth: int) -> list[Valued]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            sym = self.symbol(f"{f.module}.{node.name}")
            return [Valued(Fn(sym.key))] if sym is not None else []
        if isinstance(node, ast.ClassDef):
            return [Valued(self._class_ref(node, f))]
        if isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name.split(".")[0]) == name:
                    dotted = a.name if a.asname else a.name.split(".")[0]
                    return [Valued(self._module_value(dotted, f.path, node.lineno))]
            return []
        if isinstance(node, ast.ImportFrom):
            base = self._absolute(node.module or "", node.level, f)
            for a in node.names:
                if (a.asname or a.name) == name:
                    return self._from_module(base, a.name, f.path, node.lineno, depth)
            return []
        return self.evaluate(node, f, None, depth + 1)

    def _absolute(self, module: str, level: int, f: PyFile) -> str:
        if level == 0:
            return module
        parts = f.module.split(".")
        if not f.is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join([*parts, module] if module else parts)

    def _module_value(self, dotted: str, path: str, line: int):
        for ext in self.rules.extensions:
            if ext.upstream == self.upstream and (dotted == ext.module or dotted.startswith(ext.module + ".")):
                return Extension(ext.module, self._globbed(ext.sources), ext.built_by, path, line)
        return PyModule(dotted)

    def _globbed(self, patterns: tuple[str, ...]) -> tuple[str, ...]:
        import fnmatch

        paths = self.index.paths(self.upstream)
        return tuple(p for p in paths if any(fnmatch.fnmatchcase(p, pat) for pat in patterns))

    def _from_module(self, module: str, attr: str, path: str, line: int, depth: int) -> list[Valued]:
        """`from module import attr`: a function or class of that module, a submodule, or a name
        that module itself imports (a re-export)."""
        sym = self.symbol(f"{module}.{attr}")
        if sym is not None:
            return [Valued(Fn(sym.key))]
        if self.module_path(f"{module}.{attr}") is not None:
            return [Valued(PyModule(f"{module}.{attr}"))]
        mp = self.module_path(module)
        if mp is None:
            return [Valued(self._module_value(f"{module}.{attr}", path, line))]
        other = self.file(mp)
        if other is None or depth > 10:
            return []
        return self._module_level(attr, other, depth + 1)

    def _class_ref(self, node: ast.ClassDef, f: PyFile) -> ClassRef:
        autograd = any(self.rules.autograd_bases.search(ast.unparse(b)) for b in node.bases)
        return ClassRef(f"{f.module}.{node.name}", f.path, autograd)

    def attribute_of(self, value, attr: str, path: str, line: int, depth: int = 0) -> list[Valued]:
        """`value.attr` for a value this module knows."""
        if isinstance(value, (JitModule, Extension)):
            return [Valued(Attr(value, attr, path, line))]
        if isinstance(value, OpsNamespace):
            return [Valued(Op(f"{value.ns}::{attr}", path, line))]
        if isinstance(value, Namespace):
            return [Valued(v) for k, v in value.attrs if k == attr]
        if isinstance(value, PyModule):
            return self._from_module(value.name, attr, path, line, depth + 1)
        if isinstance(value, ClassRef):
            sym = self.symbol(f"{value.qualified}.{attr}")
            return [Valued(Fn(sym.key))] if sym is not None else []
        if isinstance(value, Instance):
            sym = self.symbol(f"{value.cls.qualified}.{attr}")
            return [Valued(Fn(sym.key))] if sym is not None else []
        return []

    # expressions
    def evaluate(self, expr: ast.AST, f: PyFile, fn: ast.AST | None, depth: int = 0) -> list[Valued]:
        if depth > 12 or expr is None:
            return []
        text = ast.unparse(expr)
        if isinstance(expr, ast.Attribute):
            m = re.fullmatch(r"torch\.ops\.(\w+)(?:\.(\w+))?", text)
            if m:
                return [Valued(Op(f"{m.group(1)}::{m.group(2)}", f.path, expr.lineno) if m.group(2)
                               else OpsNamespace(m.group(1)))]
            out = []
            for base in self.evaluate(expr.value, f, fn, depth + 1):
                for v in self.attribute_of(base.value, expr.attr, f.path, expr.lineno, depth):
                    out.append(Valued(v.value, base.guards + v.guards))
            return out
        if isinstance(expr, ast.Name):
            if expr.id in ("self", "cls") and fn is not None:
                cls = f.enclosing_class(fn)
                if cls is not None:
                    ref = self._class_ref(cls, f)
                    return [Valued(Instance(ref) if expr.id == "self" else ref)]
                return []
            return self.lookup(expr.id, f, fn, depth + 1)
        if isinstance(expr, ast.Call):
            return self._call_value(expr, f, fn, depth)
        if isinstance(expr, ast.IfExp):
            g = PyGuard(ast.unparse(expr.test), f.path, expr.lineno)
            return ([Valued(v.value, (g,) + v.guards) for v in self.evaluate(expr.body, f, fn, depth + 1)]
                    + [Valued(v.value, (PyGuard(_not(g.text), f.path, expr.lineno),) + v.guards)
                       for v in self.evaluate(expr.orelse, f, fn, depth + 1)])
        return []

    def _call_value(self, call: ast.Call, f: PyFile, fn: ast.AST | None, depth: int) -> list[Valued]:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in self.rules.loaders:
            return [Valued(m) for m in self.spec_module(func.value, f, fn, depth, call)]
        if isinstance(func, ast.Name) and func.id in self.rules.namespaces:
            attrs = []
            for kw in call.keywords:
                if kw.arg:
                    for v in self.evaluate(kw.value, f, fn, depth + 1):
                        attrs.append((kw.arg, v.value))
            return [Valued(Namespace(tuple(attrs)))]
        out: list[Valued] = []
        for callee in self.evaluate(func, f, fn, depth + 1):
            v = callee.value
            if isinstance(v, ClassRef):
                out.append(Valued(Instance(v), callee.guards))
            elif isinstance(v, Fn):
                for r in self.returns(v.key, depth + 1):
                    out.append(Valued(r.value, callee.guards + r.guards))
        return out

    def returns(self, key: str, depth: int) -> list[Valued]:
        """What a function may return, as far as these values go (modules, namespaces, ...)."""
        if depth > 12:
            return []
        sym = self._sym(key)
        got = self.function_node(sym) if sym is not None else None
        if got is None:
            return []
        f, node = got
        out = []
        for st in _own_nodes(node):
            if isinstance(st, ast.Return) and st.value is not None:
                out.extend(v for v in self.evaluate(st.value, f, node, depth + 1)
                           if isinstance(v.value, (JitModule, Extension, Namespace, Instance, Attr, Fn)))
        return out

    def _sym(self, key: str) -> "Symbol | None":
        try:
            return self.index.symbol(key)
        except Exception:  # noqa: BLE001 - a key of another index: no symbol
            return None

    # JIT specs
    def spec_module(self, spec_expr: ast.AST, f: PyFile, fn: ast.AST | None, depth: int,
                    load: ast.AST) -> list[JitModule]:
        """The compiled module of the JitSpec `spec_expr` evaluates to (`gen_x_module(...)`, a name
        bound to such a call)."""
        calls: list[ast.Call] = []
        if isinstance(spec_expr, ast.Call):
            calls.append(spec_expr)
        elif isinstance(spec_expr, ast.Name) and fn is not None:
            for node in _own_nodes(fn):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                        isinstance(t, ast.Name) and t.id == spec_expr.id for t in node.targets):
                    calls.append(node.value)
        out = []
        for call in calls:
            for callee in self.evaluate(call.func, f, fn, depth + 1):
                if not isinstance(callee.value, Fn):
                    continue
                sym = self._sym(callee.value.key)
                if sym is None:
                    continue
                named: list[tuple[str, str, tuple[PyGuard, ...]]] = []
                if sym.name in self.rules.spec_functions:
                    named = [(lit, d, ()) for lit, d in _literals(call)]
                else:
                    named = self._maker_files(sym, set())
                sources, templates, guards = self._files_named(named)
                out.append(JitModule(sym.key, sources, templates, f.path, load.lineno, guards))
        return out

    def _maker_files(self, sym: "Symbol", seen: set, depth: int = 0,
                     outer: tuple[PyGuard, ...] = ()) -> list[tuple[str, str, tuple[PyGuard, ...]]]:
        """(file name, folder constant, conditions) of every file a spec maker names, its own and
        those of the spec makers it calls, each under the `if`s that lead to it."""
        if sym.key in seen or depth > 3:
            return []
        seen.add(sym.key)
        got = self.function_node(sym)
        if got is None:
            return []
        f, fn = got
        out: list[tuple[str, str, tuple[PyGuard, ...]]] = []

        def visit(node, guards):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and node is not fn:
                return
            if isinstance(node, ast.If):
                g = PyGuard(ast.unparse(node.test), f.path, node.lineno)
                for st in node.body:
                    visit(st, guards + (g,))
                ng = PyGuard(_not(g.text), f.path, node.lineno)
                for st in node.orelse:
                    visit(st, guards + (ng,))
                return
            if isinstance(node, ast.Call):
                for callee in self.evaluate(node.func, f, fn):
                    c = self._sym(callee.value.key) if isinstance(callee.value, Fn) else None
                    if c is not None and self.rules.spec_makers.search(c.name):
                        out.extend(self._maker_files(c, seen, depth + 1, guards))
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                parent = f.parents.get(node)
                folder = ""
                if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div) and parent.right is node:
                    folder = ast.unparse(parent.left).rsplit(".", 1)[-1]
                out.append((node.value, folder, guards))
            for child in ast.iter_child_nodes(node):
                visit(child, guards)

        for st in fn.body:
            visit(st, outer)
        return out

    def _files_named(self, named: list[tuple[str, str, tuple[PyGuard, ...]]]):
        """Checkout paths of the C++ sources and the Jinja templates among the names, and the
        conditions of the sources named only under some `if` of a spec maker (its arguments
        choose the files: `backend == "fa2"`)."""
        dirs = dict(self.rules.source_dirs)
        root = self.index.root(self.upstream)
        sources: dict[str, list[tuple[PyGuard, ...]]] = {}
        templates: dict[str, list[tuple[PyGuard, ...]]] = {}
        for rel, folder, guards in named:
            if not rel.endswith(tuple(self.rules.source_suffixes)) or not re.fullmatch(r"[\w./-]+", rel):
                continue
            base = dirs.get(folder, self.rules.default_source_dir)
            cand = rel if rel.startswith(base + "/") else posixpath.normpath(posixpath.join(base, rel))
            if cand.endswith(".jinja"):
                if (root / cand).is_file():
                    templates.setdefault(cand, []).append(guards)
            elif self.index.has_file(self.upstream, cand):
                sources.setdefault(cand, []).append(guards)
        conditional = tuple((p, gs[0]) for p, gs in [*sources.items(), *templates.items()] if len(gs) == 1 and gs[0])
        return tuple(sources), tuple(templates), conditional


def _literals(call: ast.Call) -> list[tuple[str, str]]:
    out = []
    for node in ast.walk(call):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
                and isinstance(node.right.value, str):
            out.append((node.right.value, ast.unparse(node.left).rsplit(".", 1)[-1]))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.value, ""))
    return out


def _own_nodes(fn: ast.AST):
    """The nodes of a function's body, not those of functions or classes defined inside it
    (their definitions themselves are included)."""
    stack = list(reversed(fn.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _target_names(node) -> set[str]:
    targets = []
    if isinstance(node, ast.For):
        targets = [node.target]
    elif isinstance(node, ast.With):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    elif isinstance(node, ast.comprehension):
        targets = [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _decorator_name(d: ast.AST) -> str:
    return ast.unparse(d.func if isinstance(d, ast.Call) else d)

"""`trace`: the chains from a Python entry point to the kernels it reaches, across languages.

A chain is a list of hops. Each hop leaves a function (or a compiled module) and reaches the next
one, and says how (`kind`), where the evidence is written (file:line and the code there), under
which conditions it is taken (`guards`: `if`s around the call, decided or not by `--when`) and
through which dispatch macros (`dispatch`: the branches still possible and what they bind).

Hop kinds: call, jit-module (a Python call into a JIT-compiled module), extension (into a
compiled extension module), export (the module's name to its C++ function), torch-op (through
`torch.ops`), autograd (`Function.apply` to forward/backward), dsl-compile (`cute.compile` to the
traced `__call__`), dispatch (a call inside a dispatch macro), specialisation (to an explicit
specialisation or a JIT-instantiated template), launch (a kernel launch), body (from a kernel
into the function that does its work, through short wrappers).

The walk reads the index (symbols, call and launch edges), the cross-language tables kept
beside it (crosslang.py) and, for the functions on a chain only, their code (trace_python.py,
trace_cpp.py). Everything it returns is frozen data.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping

from annotate.errors import UsageError
from annotate.index.conditions import Decider
from annotate.index.crosslang import DispatchBranch, Entry, Links, Rules, dispatch_tables, rules as default_rules
from annotate.index.model import KERNEL, LAUNCH, METHOD, PYTHON, Symbol, bare_name
from annotate.index.trace_cpp import (CppFile, explicit_args, normal, param_defaults, template_param_names)
from annotate.index.trace_python import Attr, ClassRef, Fn, Instance, JitModule, Op, PyReader

if TYPE_CHECKING:
    from annotate.index.api import Index

KINDS = ("call", "jit-module", "extension", "export", "torch-op", "autograd", "dsl-compile", "dispatch",
         "specialisation", "launch", "body")
MAX_DEPTH = 40
_CROSSING = ("jit-module", "extension", "export", "torch-op")
MAX_CHAINS = 4000
MAX_COMBOS = 4096


@dataclass(frozen=True)
class Guard:
    """A condition a hop is taken under, as written (negated for an else branch)."""

    text: str
    language: str  # "cuda" | "python"
    path: str
    line: int
    decided: bool | None  # True: holds (for --when, or statically); None: could not be decided
    keys: tuple[str, ...] = ()  # the --when keys it reads
    note: str = ""  # what it means at run time, from the rules (`_use_cuda_norm(...)`: the env variable)


@dataclass(frozen=True)
class Dispatch:
    """A dispatch macro a hop passes through, with the branches still possible."""

    macro: str
    path: str  # where it is called
    line: int
    defined_at: str  # "path:line" of the #define (a .jinja template when generated at JIT time)
    branches: tuple[DispatchBranch, ...]
    total: int  # branches the macro has

    @property
    def generated(self) -> bool:
        return ".jinja:" in self.defined_at


@dataclass(frozen=True)
class Hop:
    kind: str  # one of KINDS
    upstream: str
    src: str | None  # Symbol.key the hop leaves (None: a compiled module)
    dst: str | None  # Symbol.key it reaches (None: a compiled module)
    target: str  # what it reaches, as shown: a qualified name or a module
    path: str  # the evidence: file and line of the code that makes the hop
    line: int
    written: str  # that code
    guards: tuple[Guard, ...] = ()
    dispatch: tuple[Dispatch, ...] = ()
    detail: str = ""
    env: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # template arguments it binds


@dataclass(frozen=True)
class Chain:
    hops: tuple[Hop, ...]
    kernel: str  # Symbol.key of the kernel reached

    @property
    def undecided(self) -> tuple[Guard, ...]:
        return tuple(g for h in self.hops for g in h.guards if g.decided is None)

    def keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k for h in self.hops for k in (h.src, h.dst) if k))


@dataclass(frozen=True)
class DeadEnd:
    hops: tuple[Hop, ...]  # the way there; the last hop is the one that leads nowhere known
    reason: str


@dataclass(frozen=True)
class Trace:
    entry: Symbol
    when: tuple[tuple[str, str], ...]
    chains: tuple[Chain, ...]
    dead_ends: tuple[DeadEnd, ...] = ()
    truncated: bool = False

    @property
    def kernels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.kernel for c in self.chains))

    @property
    def undecided(self) -> tuple[Guard, ...]:
        seen = {}
        for c in self.chains:
            for g in c.undecided:
                seen.setdefault((g.path, g.line, g.text), g)
        return tuple(seen.values())

    def through(self) -> tuple[str, ...]:
        """Every function on a chain (Symbol keys), entry first."""
        return tuple(dict.fromkeys([self.entry.key, *(k for c in self.chains for k in c.keys())]))


@dataclass(frozen=True)
class EntryTrace:
    """An entry point the rules name for the site, with its trace (for its example parameters)."""

    entry: Entry
    trace: Trace


# ---- entry points -------------------------------------------------------------------------------

def find_entry(index: "Index", spec: str) -> Symbol:
    """The function ENTRY names: a qualified name (`flashinfer.norm.rmsnorm`), optionally
    `UPSTREAM:`-prefixed, or a name a package re-exports (`flash_attn.flash_attn_func` is
    `flash_attn.flash_attn_interface.flash_attn_func`). UsageError with the nearest names."""
    upstream, name, path, line = index.parse_spec(spec)
    cands = [s for s in index.find(name, upstream) if s.qualified_name == name]
    if not cands and "." in name:
        cands = _reexported(index, name, upstream)
    if not cands:
        cands = [s for s in index.find(name, upstream) if s.kind == PYTHON]
    if path is not None:
        cands = [s for s in cands if s.path == path or s.path.endswith("/" + path)]
        if line is not None:
            cands = [s for s in cands if s.start_line <= line <= s.end_line] or cands
    # of several Python `def`s of one name in one file (`@overload` stubs), the last one runs
    last: dict = {}
    for s in cands:
        k = (s.upstream, s.path, s.qualified_name) if s.kind == PYTHON else s.key
        if k not in last or s.start_line > last[k].start_line:
            last[k] = s
    cands = list(last.values())
    if len(cands) == 1:
        return cands[0]
    if len(cands) > 1:
        listing = "\n".join(f"    {s.upstream}:{s.qualified_name}@{s.path}:{s.start_line}" for s in cands[:20])
        raise UsageError(f"ambiguous entry '{spec}': {len(cands)} functions", hint="name one of them exactly:\n" + listing)
    import difflib

    pool = sorted({s.qualified_name for s in _python_symbols(index, upstream)})
    near = difflib.get_close_matches(name, pool, n=6, cutoff=0.6)
    if not near:
        tails = {q.rsplit(".", 1)[-1]: q for q in pool}
        near = [tails[t] for t in difflib.get_close_matches(bare_name(name), list(tails), n=6, cutoff=0.7)]
    raise UsageError(f"unknown entry '{spec}'", hint=("nearest Python functions: " + ", ".join(near)) if near
                     else "name a Python function of a pin, e.g. flashinfer.norm.rmsnorm")


def _python_symbols(index: "Index", upstream: str | None) -> list[Symbol]:
    def make():
        return [s for s in index.all_symbols() if s.kind == PYTHON]

    syms = index.memo(("trace-python-symbols",), make)
    return [s for s in syms if upstream is None or s.upstream == upstream]


def _reexported(index: "Index", name: str, upstream: str | None) -> list[Symbol]:
    module, _, attr = name.rpartition(".")
    out = []
    for up in ([upstream] if upstream else index.upstreams()):
        reader = PyReader(index, up, default_rules())
        path = reader.module_path(module)
        f = reader.file(path) if path else None
        if f is None:
            continue
        for v in reader.lookup(attr, f, None):
            if isinstance(v.value, Fn):
                out.append(index.symbol(v.value.key))
    return list({s.key: s for s in out}.values())


# ---- the walk -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Ctx:
    key: str
    env: tuple[tuple[str, str], ...] = ()
    module: JitModule | None = None


@dataclass(frozen=True)
class _Step:
    hops: tuple[Hop, ...]
    ctx: _Ctx | None  # where the walk goes on; None when the hops end at a kernel or nowhere
    kernel: str | None = None
    dead: str | None = None


def trace(index: "Index", links: Links, entry: Symbol, when: Mapping[str, str] | None = None,
          rules: Rules | None = None) -> Trace:
    """The chains from `entry` to the kernels it reaches; with `when`, only the branches those
    parameters take (conditions that cannot be decided stay, marked undecided)."""
    rules = rules or default_rules()
    when = dict(when or {})
    unknown = [k for k in when if k not in rules.key_names()]
    if unknown:
        raise UsageError(f"unknown --when key '{unknown[0]}'", hint="keys: " + ", ".join(rules.key_names()))
    return _Walker(index, links, rules, when).run(entry)


class _Walker:
    def __init__(self, index: "Index", links: Links, rules: Rules, when: dict[str, str]):
        self.index, self.links, self.rules, self.when = index, links, rules, when
        self.readers: dict[str, PyReader] = {}
        self.syms: dict[str, Symbol | None] = {}
        self.memo: dict[_Ctx, tuple[list, list]] = {}
        self.truncated = False
        self.count = 0

    def run(self, entry: Symbol) -> Trace:
        chains, dead = self._walk(_Ctx(entry.key), frozenset(), 0)
        out = [Chain(tuple(hops), kernel) for hops, kernel in chains]
        return Trace(entry, tuple(sorted(self.when.items())), tuple(out),
                     tuple(DeadEnd(tuple(h), r) for h, r in dead), self.truncated)

    # -- helpers
    def sym(self, key: str) -> Symbol | None:
        if key not in self.syms:
            try:
                self.syms[key] = self.index.symbol(key)
            except UsageError:
                self.syms[key] = None
        return self.syms[key]

    def reader(self, upstream: str) -> PyReader:
        if upstream not in self.readers:
            self.readers[upstream] = PyReader(self.index, upstream, self.rules)
        return self.readers[upstream]

    def cpp(self, upstream: str, path: str) -> CppFile:
        def make():
            return CppFile((self.index.root(upstream) / path).read_bytes())

        return self.index.memo(("trace-cppfile", upstream, path), make)

    def is_kernel(self, s: Symbol) -> bool:
        return s.kind == KERNEL or (s.kind == PYTHON and self.reader(s.upstream).is_dsl_kernel(s))

    def decider(self, env) -> Decider:
        return Decider(self.rules, self.when, dict(env))

    # -- the search
    def _walk(self, ctx: _Ctx, visiting: frozenset, depth: int):
        """(chains, dead ends) from ctx: each chain a (hops, kernel key) pair."""
        if ctx in self.memo:
            return self.memo[ctx]
        if depth > MAX_DEPTH or ctx.key in visiting:
            return [], []
        sym = self.sym(ctx.key)
        if sym is None:
            return [], []
        chains: list = []
        dead: list = []
        for step in self._expand(sym, ctx):
            if self.count > MAX_CHAINS:
                self.truncated = True
                break
            if step.dead is not None:
                if step.dead:  # "" is device code: no way to a kernel, nothing to report
                    dead.append((list(step.hops), step.dead))
                continue
            if step.kernel is not None:
                chains.append((list(step.hops), step.kernel))
                self.count += 1
                continue
            sub, subdead = self._walk(step.ctx, visiting | {ctx.key}, depth + 1)
            chains.extend((list(step.hops) + h, k) for h, k in sub)
            dead.extend((list(step.hops) + h, r) for h, r in subdead)
            if not sub and not subdead and any(h.kind in _CROSSING for h in step.hops):
                # compiled code was reached, and no kernel below it: say so rather than drop it
                dead.append((list(step.hops), f"no kernel launch the index records below {step.hops[-1].target}"))
        self.memo[ctx] = (chains, dead)
        return chains, dead

    def _arrive(self, hops: tuple[Hop, ...], target: Symbol, ctx: _Ctx) -> _Step:
        """A step that reaches `target`: the end of a chain at a kernel (with the body hops), else
        a step the walk goes on from."""
        if self.is_kernel(target):
            return _Step(hops + self._body(target), None, kernel=target.key)
        if target.kind != PYTHON and not _host_like(target):
            return _Step(hops, None, dead="")  # device code launches nothing: not a way to a kernel
        return _Step(hops, ctx)

    def _expand(self, sym: Symbol, ctx: _Ctx) -> list[_Step]:
        if sym.kind == PYTHON:
            return self._expand_python(sym, ctx)
        if not _host_like(sym):
            return []
        return self._expand_cpp(sym, ctx)

    # -- Python
    def _expand_python(self, sym: Symbol, ctx: _Ctx) -> list[_Step]:
        reader = self.reader(sym.upstream)
        got = reader.function_node(sym)
        if got is None:
            return []
        f, node = got
        steps: list[_Step] = []
        for call in f.calls(node):
            guards = tuple(self._py_guard(g.text, g.path, g.line) for g in call.guards)
            if any(g.decided is False for g in guards):
                continue
            steps.extend(self._python_call(sym, f, node, call, guards, ctx))
        return steps

    def _py_guard(self, text: str, path: str, line: int) -> Guard:
        v = self.decider(()).decide(text, "python")
        return Guard(text, "python", path, line, v.value, v.keys, " ".join(v.notes))

    def _python_call(self, sym: Symbol, f, fn, call, guards: tuple[Guard, ...], ctx: _Ctx) -> list[_Step]:
        import ast

        reader = self.reader(sym.upstream)
        func = call.node.func
        up = sym.upstream
        written = f.line_text(call.line)
        out: list[_Step] = []
        if call.written in self.rules.dsl_compilers and call.node.args:
            for v in reader.evaluate(call.node.args[0], f, fn):
                if isinstance(v.value, Instance):
                    target = reader.symbol(f"{v.value.cls.qualified}.__call__")
                    if target is not None:
                        hop = Hop("dsl-compile", up, sym.key, target.key, target.qualified_name, f.path, call.line,
                                  written, guards, detail=f"{call.written} traces {v.value.cls.qualified}.__call__")
                        out.append(self._arrive((hop,), target, _Ctx(target.key)))
            return out
        if isinstance(func, ast.Attribute) and func.attr == "apply":
            for v in reader.evaluate(func.value, f, fn):
                if isinstance(v.value, ClassRef) and v.value.autograd:
                    for method, when_pass in (("forward", "forward"), ("backward", "backward")):
                        target = reader.symbol(f"{v.value.qualified}.{method}")
                        if target is None:
                            continue
                        g = self._pass_guard(when_pass, f.path, call.line)
                        if g.decided is False:
                            continue
                        hop = Hop("autograd", up, sym.key, target.key, target.qualified_name, f.path, call.line,
                                  written, guards + (g,),
                                  detail=f"torch.autograd.Function: apply runs {method}"
                                         + (" when the loss is differentiated" if method == "backward" else ""))
                        out.append(self._arrive((hop,), target, _Ctx(target.key)))
            if out:
                return out
        for v in reader.evaluate(func, f, fn):
            vg = guards + tuple(self._py_guard(g.text, g.path, g.line) for g in v.guards)
            if any(g.decided is False for g in vg):
                continue
            value = v.value
            if isinstance(value, Fn):
                target = self.sym(value.key)
                if target is None or target.key == sym.key:
                    continue
                kind = "launch" if self.is_kernel(target) else "call"
                hop = Hop(kind, up, sym.key, target.key, target.qualified_name, f.path, call.line, written, vg)
                out.append(self._arrive((hop,), target, _Ctx(target.key)))
            elif isinstance(value, Attr):
                out.extend(self._module_call(sym, value, f.path, call.line, written, vg))
            elif isinstance(value, Op):
                out.extend(self._op_call(sym, value, f.path, call.line, written, vg))
        return out

    def _pass_guard(self, which: str, path: str, line: int) -> Guard:
        got = self.when.get("pass")
        decided = None if got is None else str(got).lower() == which
        return Guard(f"{which} pass", "python", path, line, decided, ("pass",))

    def _module_call(self, sym: Symbol, attr: Attr, path: str, line: int, written: str,
                     guards: tuple[Guard, ...]) -> list[_Step]:
        up = sym.upstream
        module = attr.module
        if isinstance(module, JitModule):
            maker = self.sym(module.maker)
            maker_name = maker.qualified_name if maker is not None else module.maker
            kind, target = "jit-module", f"JIT module of {maker_name}"
            detail = (f"{maker_name} ({maker.path}:{maker.start_line}) compiles "
                      + (", ".join(module.sources) or "no source file it names")
                      + (f"; renders {', '.join(module.templates)}" if module.templates else "")
                      + f"; loaded at {module.path}:{module.line}") if maker is not None else ""
            exports = [e for e in self.links.exports_named(up, attr.name) if e.path in module.sources
                       and e.module is None]
        else:
            kind, target = "extension", f"extension module {module.name}"
            detail = f"built by {module.built_by}; imported at {module.path}:{module.line}"
            exports = [e for e in self.links.exports_named(up, attr.name) if e.path in module.sources]
        hop = Hop(kind, up, sym.key, None, target, path, line, written, guards, detail=detail)
        if not exports:
            return [_Step((hop,), None, dead=f"{target} exports no `{attr.name}` that the export rules find")]
        out = []
        conditional = dict(module.source_guards) if isinstance(module, JitModule) else {}
        for ex in exports:
            for fn in self._cpp_function(up, ex.function, ex.path, module.sources):
                # a source the spec maker names only for some of its arguments (`backend == "fa2"`)
                xg = tuple({(g.text, g.path, g.line): self._py_guard(g.text, g.path, g.line)
                            for p in dict.fromkeys((ex.path, fn.path)) for g in conditional.get(p, ())}.values())
                if any(g.decided is False for g in xg):
                    continue
                xhop = Hop("export", up, None, fn.key, fn.qualified_name, ex.path, ex.line,
                           self.cpp(up, ex.path).line_text(ex.line), xg,
                           detail=f"{ex.rule}: `{ex.name}` is {ex.function}")
                out.append(self._arrive((hop, xhop), fn, _Ctx(fn.key, module=module if isinstance(module, JitModule)
                                                                 else None)))
        if not out:
            return [_Step((hop,), None, dead=f"no definition of {exports[0].function} in the index")]
        return out

    def _op_call(self, sym: Symbol, op: Op, path: str, line: int, written: str, guards) -> list[_Step]:
        up = sym.upstream
        reg = self.links.op(up, op.name)
        if reg is not None:
            target = self.sym(reg.function)
            if target is not None:
                hop = Hop("torch-op", up, sym.key, target.key, target.qualified_name, path, line, written, guards,
                          detail=f"torch.ops {op.name}, registered at {reg.path}:{reg.line}")
                return [self._arrive((hop,), target, _Ctx(target.key))]
        ns, _, name = op.name.partition("::")
        out = []
        for ex in self.links.exports_named(up, name):
            if ex.module != ns:
                continue
            for fn in self._cpp_function(up, ex.function, ex.path, (ex.path,)):
                hop = Hop("torch-op", up, sym.key, fn.key, fn.qualified_name, path, line, written, guards,
                          detail=f"torch.ops {op.name}, {ex.rule} at {ex.path}:{ex.line}")
                out.append(self._arrive((hop,), fn, _Ctx(fn.key)))
        if not out:
            hop = Hop("torch-op", up, sym.key, None, f"torch.ops {op.name}", path, line, written, guards)
            return [_Step((hop,), None, dead=f"no registration of the torch op {op.name} found")]
        return out

    def _cpp_function(self, up: str, written: str, near: str, sources: tuple[str, ...],
                      scope: str = "") -> list[Symbol]:
        """The C++ definitions a name written in `near` means, looked up as C++ does from the
        namespace `scope` outwards (`run_mha_bwd` in `flash::mha_bwd` is `flash::run_mha_bwd`);
        of several, the ones in `sources` (the module's files), else in `near`'s file, else in its
        folder, else all."""
        import posixpath

        from annotate.index.parse import macro_table

        ns = macro_table().namespaces
        name = "::".join(ns.get(p, p) for p in written.lstrip(":").split("::"))
        parts = scope.split("::") if scope else []
        cands: list[Symbol] = []
        for i in range(len(parts), -1, -1):
            q = "::".join([*parts[:i], name])
            cands = [s for s in self.index.find(q, up) if s.kind != PYTHON and s.qualified_name == q]
            if cands:
                break
        folder = posixpath.dirname(near)
        best = ([s for s in cands if s.path in sources] or [s for s in cands if s.path == near]
                or [s for s in cands if posixpath.dirname(s.path) == folder] or cands)
        return best[:4]

    # -- C++
    def _expand_cpp(self, sym: Symbol, ctx: _Ctx) -> list[_Step]:
        up = sym.upstream
        try:
            cf = self.cpp(up, sym.path)
        except OSError:
            return []
        edges = self.index.callees(sym)
        env = dict(ctx.env)
        module = ctx.module
        if module is not None and sym.path in module.sources:
            for name, value in self._template_env(up, module, sym.path):
                env.setdefault(name, value)
        sites = []
        for e in edges:
            if self.rules.dispatch_macros.search(bare_name(e.callee_name)):
                got = cf.macro_call(e.line, e.column)
                macro = self._macro(up, bare_name(e.callee_name), sym.path, module,
                                    len(got[0]) if got is not None else None)
                if got is not None and macro is not None:
                    args, start, end = got
                    sites.append((start, end, e, macro, args))
        launched: dict[tuple[int, int], set[str]] = {}
        for e in edges:
            if e.kind == LAUNCH:
                launched.setdefault((e.line, e.column), set()).add(bare_name(e.callee_name))
        steps: list[_Step] = []
        pointers = None
        for e in edges:
            if any(s[2] is e for s in sites):
                continue
            keys = e.callees
            via = None
            if not keys and e.kind != LAUNCH and re.fullmatch(r"\w+", e.callee_name):
                # `auto launch = &run_mha_bwd; ... launch(params, stream);`: a local function pointer
                if pointers is None:
                    pointers = _pointer_aliases(self.index.text_of(sym), sym.start_line)
                got = pointers.get(e.callee_name)
                if got is not None:
                    fn, line = got
                    keys = tuple(s.key for s in self._cpp_function(up, fn, sym.path, (sym.path,),
                                                                   sym.qualified_name.rpartition("::")[0]))
                    via = f"through the function pointer {e.callee_name} = &{fn} (line {line})"
            if not keys and module is not None and e.kind != LAUNCH:
                # a call the module's own translation unit does not define: resolved at link time
                # to the instantiation another source of the module makes from a JIT template
                keys = tuple(t.key for t in self._jit_instantiated(up, module, bare_name(e.callee_name), sym.path))
            if not keys:
                continue
            targets = [t for t in (self.sym(k) for k in keys) if t is not None]
            if e.kind == LAUNCH:
                targets = [t for t in targets if t.kind == KERNEL]
                names = launched.get((e.line, e.column), set())
                if len(names) > 1:
                    # `auto kernel = A<...>;` in one branch, `= B<...>` in another: the index gives
                    # the launch both; it runs the one assigned in its own block
                    block = cf.block_text(e.line, e.column)
                    mine = {n for n in names if re.search(r"\b" + re.escape(n) + r"\b", block)}
                    if mine and bare_name(e.callee_name) not in mine:
                        continue
            else:
                targets = [t for t in targets if _host_like(t) or t.kind == KERNEL]
            if not targets:
                continue
            pos = cf.offset(e.line, e.column)
            uses = [s for s in sites if s[0] <= pos < s[1]]
            got = self._cpp_hops(sym, cf, e, targets, uses, env, module)
            if via is not None:
                got = [_Step(tuple(replace(h, detail=(h.detail + "; " if h.detail else "") + via) if i == 0 else h
                                   for i, h in enumerate(st.hops)), st.ctx, st.kernel, st.dead) for st in got]
            steps.extend(got)
        return steps

    def _template_env(self, up: str, module: JitModule, source: str) -> list[tuple[str, str]]:
        """Names the generated config header of `source` defines (`constexpr int HEAD_DIM_QK =
        {{ head_dim_qk }};`): the values are the template's parameters."""
        out = []
        pat = re.compile(r"^\s*(?:using\s+(\w+)\s*=\s*([^;]+);|constexpr\s+[\w:]+\s+(\w+)\s*=\s*([^;]+);)", re.M)
        for t in module.templates_for(source):
            try:
                text = (self.index.root(up) / t).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for m in pat.finditer(text):
                name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                out.append((name, " ".join(value.split())))
        return out

    def _macro(self, up: str, name: str, path: str, module: JitModule | None, nargs: int | None = None):
        """The definition a call in `path` sees: a template of its JIT module first, then the
        definitions in files `path` includes, then any."""
        if module is not None and module.templates:
            def make():
                texts = {}
                for t in module.templates:
                    try:
                        texts[t] = (self.index.root(up) / t).read_text(encoding="utf-8", errors="replace")
                    except OSError:
                        pass
                return dispatch_tables(texts, up, self.rules.dispatch_macros)

            found = {m.path: m for m in self.index.memo(("trace-template-macros", up, module.templates), make)
                     if m.name == name}
            for t in module.templates_for(path):  # the config rendered for this source
                if t in found and (nargs is None or _arity_fits(found[t].params, nargs)):
                    return found[t]
        defs = self.links.macros_named(up, name)
        if len(defs) <= 1:
            return defs[0] if defs else None
        # several files define it: the one nearest the caller (longest common folder), which is
        # the one its includes reach for the pins' switch headers (csrc/flash_attn/src vs hopper/)
        import posixpath

        return max(defs, key=lambda d: (len(posixpath.commonpath([posixpath.dirname(d.path) or ".",
                                                                  posixpath.dirname(path) or "."]))
                                        if posixpath.dirname(d.path) and posixpath.dirname(path) else 0,
                                        len(d.branches)))

    def _cpp_hops(self, sym: Symbol, cf: CppFile, e, targets: list[Symbol], uses, env: dict, module) -> list[_Step]:
        up = sym.upstream
        decide = self.decider(env)
        # the dispatch branches --when leaves, per macro use (outermost first)
        dispatches = []
        for start, _, site, macro, args in sorted(uses, key=lambda s: s[0]):
            branches = [b for b in macro.at(args) if self._branch_possible(b, decide)]
            if not branches:
                return []
            dispatches.append((site, macro, branches))
        raw_guards = cf.guards_at(e.line, e.column)
        targs = cf.template_args_at(e.line, e.column) if e.kind != LAUNCH else None
        bound = {n for _, _, bs in dispatches for b in bs for n, _ in b.bindings}
        fixed = dict(env)
        for _, _, bs in dispatches:  # a dispatch left with one branch binds its names for sure
            if len(bs) == 1:
                fixed.update(bs[0].bindings)
        words = set(re.findall(r"\w+", " ".join([*(g.text for g in raw_guards), *(targs or [])])))
        relevant = [i for i, (_, _, bs) in enumerate(dispatches) if len(bs) > 1 and words & {n for b in bs for n, _ in b.bindings}]
        choices = [dispatches[i][2] for i in relevant]
        combos = list(itertools.islice(itertools.product(*choices), MAX_COMBOS)) if choices else [()]
        specs = {t.key: explicit_args(t.signature, t.name) for t in targets}
        has_spec = any(a is not None and t.template_params == "" for t in targets for a in [specs[t.key]])
        steps = []
        for t in targets:
            sargs = specs[t.key] if t.template_params == "" else None
            if has_spec and sargs is None:
                continue  # a primary template where explicit specialisations are the candidates
            valid = []
            for combo in combos:
                cenv = dict(fixed)
                for b in combo:
                    cenv.update(b.bindings)
                d = self.decider(cenv)
                verdicts = [d.decide(g.text) for g in raw_guards]
                if any(v.value is False for v in verdicts):
                    continue
                if sargs is not None and targs is not None and not _args_match(targs, sargs, cenv, d):
                    continue
                valid.append((combo, verdicts))
            if not valid:
                continue
            guards = []
            for i, g in enumerate(raw_guards):
                vals = {v[1][i].value for v in valid}
                keys = tuple(dict.fromkeys(k for v in valid for k in v[1][i].keys))
                notes = " ".join(dict.fromkeys(n for v in valid for n in v[1][i].notes))
                guards.append(Guard(g.text, "cuda", sym.path, g.line, True if vals == {True} else None, keys, notes))
            disp = []
            for j, (site, macro, bs) in enumerate(dispatches):
                if j in relevant:
                    pos = relevant.index(j)
                    bs = list(dict.fromkeys(v[0][pos] for v in valid))
                disp.append(Dispatch(macro.name, sym.path, site.line, f"{macro.path}:{macro.line}", tuple(bs),
                                     len(macro.branches)))
            kind = "launch" if e.kind == LAUNCH else "specialisation" if sargs is not None else (
                "dispatch" if disp else "call")
            detail = ""
            if sargs is not None:
                detail = f"explicit specialisation {t.name}<{', '.join(sargs)}> ({t.path}:{t.start_line})"
            elif module is not None and e.kind != LAUNCH:
                inst = self._instantiation(up, module, t.name, sym.path)
                if inst is not None:
                    kind, detail = "specialisation", inst
            # what the callee's template parameters are bound to here
            callee_env = self._callee_env(t, targs, cf, e, fixed, valid, relevant, dispatches)
            hop = Hop(kind, up, sym.key, t.key, t.qualified_name, sym.path, e.line, cf.line_text(e.line),
                      tuple(guards), tuple(disp), detail, tuple(sorted(callee_env.items())))
            steps.append(self._arrive((hop,), t, _Ctx(t.key, tuple(sorted(callee_env.items())), module)))
        return steps

    def _branch_possible(self, b: DispatchBranch, decide: Decider) -> bool:
        verdicts = [decide.decide(c) for c in b.conditions]
        if any(v.value is False for v in verdicts):
            return False
        if verdicts and all(v.value is True for v in verdicts):
            return True
        # the conditions say nothing: what the branch binds may (c_type = nv_half -> dtype fp16)
        for name, value in b.bindings:
            var = self.rules.variable(name)
            if var is None or var.key not in self.when:
                continue
            got = self.rules.type_value(var.key, value) or value
            want = str(self.when[var.key])
            if got.lower() != want.lower():
                return False
        return True

    def _callee_env(self, t: Symbol, targs, cf: CppFile, e, fixed: dict, valid, relevant, dispatches) -> dict:
        out: dict[str, str] = {}
        names = template_param_names(t.template_params)
        if targs and names:
            single = dict(fixed)
            if len(valid) == 1:
                for b in valid[0][0]:
                    single.update(b.bindings)
            d = self.decider(single)
            for name, arg in zip(names, targs):
                val = _value(arg, single, d)
                if val is not None:
                    out[name] = val
        args = cf.call_args(e.line, e.column) if e.kind != LAUNCH else None
        if args is not None:
            for i, (pname, default) in enumerate(param_defaults(t.signature)):
                if i < len(args):
                    if _is_literal(args[i]):  # `MergeStates(..., 1, ...)`: seq_len is 1 there
                        out.setdefault(pname, args[i])
                elif default is not None:
                    out.setdefault(pname, default)
        return out

    def _jit_instantiated(self, up: str, module: JitModule, name: str, source: str) -> list[Symbol]:
        """The definitions of `name` that a template of the module instantiates explicitly: looked
        up in the namespaces the template opens, among the headers it includes (and theirs)."""
        pat = re.compile(r"^\s*template\s+[^;{]*?\b" + re.escape(name) + r"\s*<", re.M)
        out: list[Symbol] = []
        for tpath in module.templates_for(source):
            try:
                text = (self.index.root(up) / tpath).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if not pat.search(text):
                continue
            reach = self._template_reach(up, tpath, text)
            spaces = re.findall(r"\bnamespace\s+(\w+)\s*\{", text) + re.findall(r"\busing\s+namespace\s+(\w+)\s*;", text)
            for ns in [*dict.fromkeys(spaces), ""]:
                q = f"{ns}::{name}" if ns else name
                out.extend(s for s in self.index.find(q, up) if s.qualified_name == q and s.path in reach)
        return list({s.key: s for s in out}.values())

    def _template_reach(self, up: str, tpath: str, text: str) -> frozenset[str]:
        """Files of the index a template's `#include`s reach (a few levels of their includes)."""
        import posixpath

        paths = self.index.memo(("trace-paths", up), lambda: frozenset(self.index.paths(up)))
        seen: set[str] = set()
        todo = []
        for spec in re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', text, re.M):
            local = posixpath.normpath(posixpath.join(posixpath.dirname(tpath), spec))
            hits = [local] if local in paths else [p for p in paths if p == spec or p.endswith("/" + spec)]
            todo.extend(hits[:1])
        for _ in range(3):
            nxt = []
            for p in todo:
                if p in seen or not self.index.has_file(up, p):
                    continue
                seen.add(p)
                nxt.extend(self.index.file(up, p).includes)
            todo = nxt
        return frozenset(seen)

    def _instantiation(self, up: str, module: JitModule, name: str, source: str) -> str | None:
        pat = re.compile(r"^\s*template\s+[^;{]*?\b" + re.escape(name) + r"\s*<", re.M)
        for tpath in module.templates_for(source):
            try:
                text = (self.index.root(up) / tpath).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            m = pat.search(text)
            if m:
                line = text.count("\n", 0, m.start()) + 1
                end = text.find(";", m.end())
                head = " ".join(text[m.start(): end if end > 0 else m.end()].split())
                return f"instantiated by the JIT template {tpath}:{line}: {head}"
        return None

    # -- after the kernel
    def _body(self, kernel: Symbol) -> tuple[Hop, ...]:
        if kernel.kind == PYTHON:
            return ()
        hops = []
        cur = kernel
        seen = {kernel.key}
        for _ in range(6):
            if cur.end_line - cur.start_line + 1 > self.rules.max_wrapper_lines:
                break
            own = {}
            for e in self.index.callees(cur):
                for k in e.callees:
                    t = self.sym(k)
                    if t is not None and not self.rules.is_library(t.path) and t.kind != PYTHON:
                        own.setdefault(k, (e, t))
            if len(own) != 1:
                break
            e, t = next(iter(own.values()))
            if t.key in seen:
                break
            seen.add(t.key)
            hops.append(Hop("body", t.upstream, cur.key, t.key, t.qualified_name, cur.path, e.line,
                            self.cpp(t.upstream, cur.path).line_text(e.line),
                            detail=f"{cur.name} is a wrapper of {cur.end_line - cur.start_line + 1} lines"))
            cur = t
        return tuple(hops)


def _arity_fits(params: tuple[str, ...], nargs: int) -> bool:
    if params and params[-1] == "__VA_ARGS__":
        return nargs >= len(params) - 1
    return nargs == len(params)


def _host_like(s: Symbol) -> bool:
    """Host code: it can call on towards a launch (device code cannot launch a kernel here)."""
    if s.kind in ("host",):
        return True
    if s.kind == METHOD:
        return "__device__" not in s.is_cuda_qualified or "__host__" in s.is_cuda_qualified
    return False


def _value(arg: str, env: dict, d: Decider) -> str | None:
    """What a template argument written at a call stands for here: a name the walk bound, a
    literal, a type, a boolean expression it can decide; None when it cannot tell."""
    a = " ".join(arg.split())
    if a in env:
        return env[a]
    if _is_literal(a):
        return a
    if re.fullmatch(r"true|false|-?\d+|[\w:]+(?:<.*>)?", a) and not re.fullmatch(r"[A-Za-z_]\w*", a):
        return a
    if re.search(r"&&|\|\||!", a):
        v = d.decide(a)
        return None if v.value is None else ("true" if v.value else "false")
    return a if re.fullmatch(r"[\w:]+", a) and "::" in a else None


_POINTER = re.compile(r"\b(?:auto|[\w:]+\s*\(\s*\*\s*)\s*(\w+)\s*\)?(?:\([^)]*\))?\s*=\s*&?\s*([A-Za-z_][\w:]*)\s*;")


def _pointer_aliases(text: str, first_line: int) -> dict[str, tuple[str, int]]:
    """`auto name = &function;` (or a function-pointer declaration) in a function's text:
    name -> (function as written, line)."""
    out = {}
    for m in _POINTER.finditer(text):
        out.setdefault(m.group(1), (m.group(2), first_line + text.count("\n", 0, m.start())))
    return out


def _is_literal(text: str) -> bool:
    return bool(re.fullmatch(r"true|false|nullptr|-?\d+(?:\.\d*)?[uUlLfF]*", text.strip()))


def _args_match(targs: list[str], sargs: list[str], env: dict, d: Decider) -> bool:
    """Whether a call's template arguments (names bound by the walk or literals) can be the
    arguments of an explicit specialisation."""
    if len(targs) != len(sargs):
        return False
    for a, s in zip(targs, sargs):
        val = _value(a, env, d)
        if val is None:
            continue
        if normal(val) != normal(s):
            return False
    return True

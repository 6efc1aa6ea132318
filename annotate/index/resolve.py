"""Cross-file work over the FileIndex of one upstream: the include graph and the resolution
of call edges to definitions (preferring files the caller's #includes reach)."""

from __future__ import annotations

import posixpath
from dataclasses import replace

from annotate.index.model import KERNEL, LAUNCH, METHOD, CallEdge, FileIndex, Symbol, bare_name
from annotate.index.parse import macro_table

# Namespaces that never hold a definition of the upstream: a call qualified by one stays unresolved.
EXTERNAL_SCOPES = frozenset({"std", "cub", "thrust", "at", "torch", "c10", "cuda", "cooperative_groups", "cg",
                             "pybind11", "py", "nvrtc", "tvm", "ffi", "os", "sys", "re", "subprocess",
                             "functools", "pathlib", "shutil", "json", "logging"})


def _include_spec(raw: str) -> str:
    return raw.strip()[1:-1].strip() if len(raw.strip()) >= 2 else raw.strip()


class IncludeResolver:
    def __init__(self, paths: list[str]):
        self.paths = set(paths)
        self.by_suffix: dict[str, list[str]] = {}
        for p in paths:
            parts = p.split("/")
            for i in range(len(parts)):
                self.by_suffix.setdefault("/".join(parts[i:]), []).append(p)

    def resolve(self, from_path: str, raw: str) -> str | None:
        spec = _include_spec(raw)
        if not spec:
            return None
        local = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), spec))
        if local in self.paths:
            return local
        cands = self.by_suffix.get(posixpath.normpath(spec))
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0]
        # Several files end with the same path: take the one nearest the includer.
        return max(cands, key=lambda c: (len(posixpath.commonprefix([c, from_path])), -len(c)))


def python_imports(files: dict[str, FileIndex], fi: FileIndex) -> tuple[str, ...]:
    """Import names of a Python file -> paths of the modules within the upstream."""
    mods: dict[str, str] = {}
    for p in files:
        if p.endswith(".py"):
            m = p[:-3].replace("/", ".")
            mods[m.removesuffix(".__init__")] = p
    pkg = fi.path.rsplit("/", 1)[0].replace("/", ".") if "/" in fi.path else ""
    out = []
    for raw in fi.includes:
        name = raw.split(" as ")[0].strip()
        if name.startswith("."):
            dots = len(name) - len(name.lstrip("."))
            base = pkg.split(".") if pkg else []
            base = base[: len(base) - (dots - 1)] if dots > 1 else base
            name = ".".join([*base, name.lstrip(".")]) if name.lstrip(".") else ".".join(base)
        for cand in (name, name.rsplit(".", 1)[0]):
            if cand in mods and mods[cand] != fi.path:
                out.append(mods[cand])
                break
    return tuple(dict.fromkeys(out))


def include_closure(includes: dict[str, tuple[str, ...]]):
    """A function: path -> the files its #includes (Python: imports) reach, itself included
    (memoised; `includes` maps each path to the paths it includes directly)."""
    closure_memo: dict[str, frozenset[str]] = {}

    def closure(p: str) -> frozenset[str]:
        got = closure_memo.get(p)
        if got is not None:
            return got
        seen = {p}
        stack = [p]
        while stack:
            q = stack.pop()
            for r in includes.get(q, ()):
                if r not in seen:
                    cached = closure_memo.get(r)
                    if cached is not None:
                        seen |= cached
                    else:
                        seen.add(r)
                        stack.append(r)
        got = frozenset(seen)
        closure_memo[p] = got
        return got

    return closure


def _scope_of(qualified: str, python: bool) -> str:
    sep = "." if python else "::"
    return qualified.rsplit(sep, 1)[0] if sep in qualified else ""


def resolve_upstream(files: dict[str, FileIndex], arity: dict[str, tuple[int, int]] | None = None,
                     nargs: dict[str, tuple[int | None, ...]] | None = None,
                     receivers: dict[str, tuple[str | None, ...]] | None = None) -> dict[str, FileIndex]:
    """FileIndex per path with `includes` resolved to paths and every edge's `callees` filled.
    `arity` (Symbol.key -> (min, max)) and `nargs` (path -> argument count per edge) narrow
    overload sets to the definitions that accept the call's argument count, when any does."""
    arity = arity or {}
    nargs = nargs or {}
    receivers = receivers or {}
    resolver = IncludeResolver(list(files))
    includes: dict[str, tuple[str, ...]] = {}
    for p, fi in files.items():
        if fi.language == "python":
            includes[p] = python_imports(files, fi)
        else:
            res = (resolver.resolve(p, raw) for raw in fi.includes)
            includes[p] = tuple(dict.fromkeys(r for r in res if r and r != p))

    closure = include_closure(includes)

    by_name: dict[tuple[bool, str], list[Symbol]] = {}
    by_key: dict[str, Symbol] = {}
    scopes: set[str] = set()
    inits: dict[str, list[Symbol]] = {}  # Python class name -> its __init__ (a call `Cls(...)` runs it)
    for fi in files.values():
        py = fi.language == "python"
        for s in fi.symbols:
            by_name.setdefault((py, s.name), []).append(s)
            if py and s.name == "__init__" and s.qualified_name.count(".") >= 2:
                inits.setdefault(s.qualified_name.split(".")[-2], []).append(s)
            by_key[s.key] = s
            if not py:
                scopes.update(s.qualified_name.split("::")[:-1])
    ns_macros = macro_table().namespaces

    out: dict[str, FileIndex] = {}
    for p, fi in files.items():
        py = fi.language == "python"
        reach = closure(p)
        new_edges = []
        counts = nargs.get(p, ())
        recv = receivers.get(p, ())
        for i, e in enumerate(fi.edges):
            caller = by_key.get(e.caller)
            bare = bare_name(e.callee_name)
            cands = by_name.get((py, bare), ())
            if py and not cands and bare[:1].isupper():
                cands = inits.get(bare, ())
            keys = _candidates(e, caller, cands, py, reach, scopes, ns_macros,
                               recv[i] if i < len(recv) else None)
            n = counts[i] if i < len(counts) else None
            if n is not None and len(keys) > 1:
                # last tie-break: overloads that take this many arguments (defaults declared
                # only on a prototype make a definition look stricter, so never to zero)
                fits = tuple(k for k in keys if _accepts(arity.get(k), n))
                if fits:
                    keys = fits
            new_edges.append(replace(e, callees=keys) if keys else e)
        out[p] = replace(fi, edges=tuple(new_edges), includes=includes[p])
    return out


def _candidates(e: CallEdge, caller: Symbol | None, cands, py: bool, reach, scopes, ns_macros,
                receiver: str | None = None) -> tuple[str, ...]:
    if not cands:
        return ()
    cands = list(cands)
    name = e.callee_name
    member = e.via in ("member", ".template") or (py and "." in name)
    if not py and "::" in name and not member:
        parts = [ns_macros.get(x, x) for x in name.lstrip(":").split("::")]
        q = "::" + "::".join(parts)
        qual = [c for c in cands if ("::" + c.qualified_name).endswith(q)]
        if qual:
            cands = qual
        elif parts[0] in EXTERNAL_SCOPES or parts[0] in scopes:
            return ()
        # else: qualified by a template parameter or alias (`Traits::f`): any definition
    elif member:
        if py:
            obj = name.rsplit(".", 1)[0]
            if obj in ("self", "cls") and caller is not None:
                cls = _scope_of(_scope_of(caller.qualified_name, True), True)
                same = [c for c in cands if _scope_of(c.qualified_name, True) == cls]
                if same:
                    cands = same
        else:
            # `obj.f()`: the object's type is unknown, so only methods the caller's file can see
            # (its #include closure) are taken; a same-named method elsewhere is not evidence.
            meth = [c for c in cands if c.kind == METHOD and c.path in reach]
            if not meth:
                return ()
            if receiver:  # the object's declared class, when the function declares it
                typed = [c for c in meth if _scope_of(c.qualified_name, False).rsplit("::", 1)[-1] == receiver]
                if typed:
                    meth = typed
            cands = meth
    else:
        if caller is not None and caller.kind == METHOD:
            cls = _scope_of(caller.qualified_name, py)
            same = [c for c in cands if _scope_of(c.qualified_name, py) == cls]
            if same:
                cands = same
        if len(cands) > 1 and not py:
            free = [c for c in cands if c.kind != METHOD]
            if free:
                cands = free
    if e.kind == LAUNCH:
        kern = [c for c in cands if c.kind == KERNEL]
        if kern:
            cands = kern
    near = [c for c in cands if c.path in reach]
    if near:
        cands = near
    elif not py and caller is not None and "::" not in name and not member:
        # Nothing the caller's #includes reach defines it: an unqualified call can then only
        # mean a function of an enclosing namespace (ordinary lookup; ADL is not modelled).
        # `max(...)` in flashinfer:: does not mean some `mha::max` elsewhere in the tree.
        enclosing = _scope_of(caller.qualified_name, False)
        cands = [c for c in cands if _encloses(_scope_of(c.qualified_name, False), enclosing)]
        if not cands:
            return ()
    if len(cands) > 1 and caller is not None and not py:
        # C++ lookup: a definition in a scope enclosing the caller wins.
        enclosing = _scope_of(caller.qualified_name, False)
        inner = [c for c in cands if _encloses(_scope_of(c.qualified_name, False), enclosing)]
        if inner:
            cands = inner
    return tuple(c.key for c in cands)


def _encloses(scope: str, inner: str) -> bool:
    return not scope or scope == inner or inner.startswith(scope + "::")


def _accepts(ar: tuple[int, int] | None, n: int) -> bool:
    if ar is None:
        return True
    lo, hi = ar
    return n >= lo and (hi < 0 or n <= hi)

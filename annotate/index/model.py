"""Plain, read-only data produced by the index and consumed by the annotation, site and
harness stages, and the names derived from it. This module is the contract between stages:
change it with care.

Identity: a function is named by `Symbol.id` = "<upstream>:<qualified_name>" and, where the
same qualified name has several definitions (overloads, specialisations, the same helper in
two files), `Symbol.key` adds "@<path>:<start_line>" to make it unique within a pin.

Types (`TypeDef`: structs, classes, unions, enums, Python classes, with their `TypeField`s) and
macros (`MacroDef`: `#define`s) are keyed the same way (`TypeDef.key`, `MacroDef.key`, made by
`symbol_key`); `Use` says which function mentions which type or invokes which macro.

Every derived name has one maker and one parser here: `symbol_key`/`split_key` (the key),
`bare_name` (the unqualified name), `language_of`/`SOURCE_SUFFIXES` (which files are source),
`parse_symbol` (a SYMBOL as the user writes it: `[UPSTREAM:]qualified_name[@path[:line]]`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from annotate.errors import Diagnostic

T = TypeVar("T")

# Symbol.kind values
KERNEL = "kernel"  # __global__
DEVICE = "device"  # __device__ only
HOST_DEVICE = "host-device"  # __host__ __device__
HOST = "host"  # plain C++ function
METHOD = "method"  # member function (any of the above, defined in or out of its class)
PYTHON = "python"  # def in a .py file
SYMBOL_KINDS = (KERNEL, DEVICE, HOST_DEVICE, HOST, METHOD, PYTHON)

# CallEdge.kind values
CALL = "call"
LAUNCH = "launch"

# TypeDef.kind values
STRUCT, CLASS, UNION, ENUM = "struct", "class", "union", "enum"
PYTHON_CLASS = "python-class"
TYPE_KINDS = (STRUCT, CLASS, UNION, ENUM, PYTHON_CLASS)
# TypeField.kind values: a data member, a static (or constexpr) member, a member type alias
# (`using X = ...;`, `typedef`), an enumerator, a member function declared without a body (a
# definition is a function Symbol of kind METHOD instead)
FIELD, STATIC, ALIAS, ENUMERATOR, METHOD_DECL = "field", "static", "alias", "enumerator", "method"
FIELD_KINDS = (FIELD, STATIC, ALIAS, ENUMERATOR, METHOD_DECL)
# Use.kind values
TYPE_USE, MACRO_USE = "type", "macro"


@dataclass(frozen=True)
class Symbol:
    upstream: str
    path: str  # relative to the upstream checkout root, '/'-separated
    name: str  # unqualified: "RMSNormKernel", "operator()", "softmax_rescale_o"
    qualified_name: str  # "flashinfer::norm::RMSNormKernel", "flash::Softmax::softmax_rescale_o"
    kind: str  # one of SYMBOL_KINDS
    signature: str  # the declaration head without body, whitespace-normalised
    template_params: str | None  # "typename T, uint32_t VEC_SIZE" or None
    start_line: int  # 1-based, includes any template <...> head
    end_line: int  # 1-based, inclusive
    body_start_line: int  # line of the opening '{' of the body
    fingerprint: str  # hash of the normalised body (comments and whitespace removed)
    anonymous_namespace: bool = False
    is_cuda_qualified: tuple[str, ...] = ()  # e.g. ("__global__",), ("__device__", "__forceinline__")
    parse_errors: int = 0  # ERROR nodes inside the definition (recovered around)

    @property
    def id(self) -> str:
        return f"{self.upstream}:{self.qualified_name}"

    @property
    def key(self) -> str:
        return symbol_key(self.upstream, self.qualified_name, self.path, self.start_line)


@dataclass(frozen=True)
class CallEdge:
    caller: str  # Symbol.key of the calling function
    callee_name: str  # the name as written at the call site, qualified as far as written
    kind: str  # CALL | LAUNCH
    path: str  # file of the call site (the caller's file)
    line: int  # 1-based line of the call site
    column: int = 0  # 0-based column of the callee's name on that line (for linking)
    callees: tuple[str, ...] = ()  # Symbol.key of each resolved definition; () = unresolved
    via: str | None = None  # "<<<>>>", "cudaLaunchKernel", "cudaLaunchKernelEx", ".template", ...

    @property
    def resolved(self) -> bool:
        return bool(self.callees)


@dataclass(frozen=True)
class MemoryFact:
    symbol: str  # Symbol.key of the function it was found in
    kind: str  # rule category: "shared-static", "shared-dynamic", "cp-async", "barrier", ...
    detail: str  # human text: what was matched, e.g. "cp_async::pred_load<128, ...>"
    path: str
    line: int  # 1-based
    rule: str  # id of the rule (data) that produced it


@dataclass(frozen=True)
class TypeField:
    """One member of a type as declared in its body (`int4 data[vec_size / 8];` -> name "data",
    type "int4[vec_size / 8]"; `static constexpr int kN = 4;` -> kind STATIC, value "4")."""

    name: str
    kind: str  # one of FIELD_KINDS
    type: str  # the declared type as written, whitespace collapsed ("" for an enumerator)
    line: int  # 1-based line of the member's name
    value: str | None = None  # initializer / default / enumerator value / aliased type, collapsed


@dataclass(frozen=True)
class TypeDef:
    """A struct / class / union / enum definition (C++, CUDA) or a Python class. Each explicit
    or partial specialisation is a TypeDef of its own with the same qualified name
    (`vec_t<half, vec_size>` -> qualified_name "flashinfer::vec_t", specialization
    "half, vec_size"); the primary template has specialization None."""

    upstream: str
    path: str
    name: str  # "vec_t", "JitSpec"
    qualified_name: str  # "flashinfer::vec_t", "flashinfer.jit.core.JitSpec"
    kind: str  # one of TYPE_KINDS
    signature: str  # the head as written up to the body, whitespace collapsed
    template_params: str | None  # "typename float_t, size_t vec_size" (heads joined by "; ")
    specialization: str | None  # the template arguments after the name, or None
    start_line: int  # 1-based, includes any template <...> head (and Python decorators)
    end_line: int  # the closing '}' (Python: the last line of the body)
    body_start_line: int  # the line of '{' (Python: the first line of the body)
    fingerprint: str  # of the definition without its methods' bodies, comments and whitespace ignored
    fields: tuple[TypeField, ...] = ()
    bases: tuple[str, ...] = ()  # base classes as written ("public Qkv_params" -> "Qkv_params")
    nested: tuple[str, ...] = ()  # qualified names of the types defined inside it
    decorators: tuple[str, ...] = ()  # Python: "dataclass", "dataclass(frozen=True)"
    anonymous_namespace: bool = False
    parse_errors: int = 0

    @property
    def id(self) -> str:
        return f"{self.upstream}:{self.qualified_name}"

    @property
    def key(self) -> str:
        return symbol_key(self.upstream, self.qualified_name, self.path, self.start_line)

    def field_named(self, name: str) -> list[TypeField]:
        return [f for f in self.fields if f.name == name]


@dataclass(frozen=True)
class MacroDef:
    """A `#define`. `params` is None for an object-like macro (`#define N 4`) and the parameter
    names for a function-like one (`#define F(a, ...)` -> ("a", "...")); `body` is the
    replacement text with line continuations joined (each continued line on its own line)."""

    upstream: str
    path: str
    name: str
    params: tuple[str, ...] | None
    body: str
    start_line: int
    end_line: int  # the last continued line
    fingerprint: str  # of the replacement text, comments and whitespace ignored

    @property
    def qualified_name(self) -> str:  # macros have no scope; the name is the whole name
        return self.name

    @property
    def function_like(self) -> bool:
        return self.params is not None

    @property
    def id(self) -> str:
        return f"{self.upstream}:{self.name}"

    @property
    def key(self) -> str:
        return symbol_key(self.upstream, self.name, self.path, self.start_line)

    @property
    def signature(self) -> str:
        """`NAME` or `NAME(a, b)` as it would be written at a use."""
        return self.name if self.params is None else f"{self.name}({', '.join(self.params)})"


@dataclass(frozen=True)
class Use:
    """A function that mentions a type or invokes a macro: the first place per (function, name,
    how). `targets` are the TypeDef / MacroDef keys the name resolved to (all specialisations of
    a template, every reachable definition of a macro)."""

    user: str  # Symbol.key of the function
    kind: str  # TYPE_USE | MACRO_USE
    name: str  # as written (bare)
    how: str  # type: "parameter", "signature", "declaration", "template-argument", "qualifier",
    #           "base", "other"; macro: "head", "call", "body"
    path: str
    line: int  # 1-based
    column: int = 0  # 0-based
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileIndex:
    """Everything the index knows about one source file at one blob id."""

    upstream: str
    path: str
    blob: str  # git blob id of the content
    language: str  # "cuda" | "python"
    symbols: tuple[Symbol, ...] = ()
    edges: tuple[CallEdge, ...] = ()
    facts: tuple[MemoryFact, ...] = ()
    includes: tuple[str, ...] = ()  # resolved include paths within the upstream
    error_nodes: int = 0
    diagnostics: tuple[str, ...] = field(default_factory=tuple)
    types: tuple[TypeDef, ...] = ()
    macros: tuple[MacroDef, ...] = ()
    uses: tuple[Use, ...] = ()  # uses by the functions of this file, resolved


# ---- derived names ----------------------------------------------------------------------------

CUDA_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".cxx", ".hh", ".inl")
PYTHON_SUFFIXES = (".py",)
SOURCE_SUFFIXES = CUDA_SUFFIXES + PYTHON_SUFFIXES


def language_of(path: str) -> str | None:
    """"cuda" or "python" for a source file the index reads (by suffix, any case), else None."""
    p = path.lower()
    if p.endswith(CUDA_SUFFIXES):
        return "cuda"
    if p.endswith(PYTHON_SUFFIXES):
        return "python"
    return None


def symbol_key(upstream: str, qualified_name: str, path: str, start_line: int) -> str:
    """`Symbol.key`: "<upstream>:<qualified_name>@<path>:<start_line>"."""
    return f"{upstream}:{qualified_name}@{path}:{start_line}"


def split_key(key: str) -> tuple[str, str, str, int]:
    """`symbol_key`'s inverse: (upstream, qualified_name, path, start_line); ValueError if `key`
    is not one. Names never hold '@' (C++ and Python identifiers cannot), paths may."""
    upstream, sep, rest = key.partition(":")
    qname, at, where = rest.partition("@")
    path, colon, line = where.rpartition(":")
    if not (sep and at and colon and upstream and qname and path and line.isdigit()):
        raise ValueError(f"not a symbol key: {key!r}")
    return upstream, qname, path, int(line)


# `operator->`, `obj.operator()`: an operator name runs to the end (`operator.` is no C++ operator,
# so a Python module called `operator` stays a module).
_OPERATOR = re.compile(r"(?:^|\.|->)(operator(?![\w.]).*)$")


def bare_name(name: str) -> str:
    """The unqualified name of a qualified or written name: `a::b::f`, `mod.Cls.f`, `obj.f`,
    `p->f` all give `f`; an operator keeps its whole name (`A::operator->` gives `operator->`)."""
    last = name.rsplit("::", 1)[-1]
    op = _OPERATOR.search(last)
    if op:
        return op.group(1).strip()
    for sep in ("->", "."):
        last = last.rsplit(sep, 1)[-1]
    return last.strip()


@dataclass(frozen=True)
class SymbolSpec:
    """A SYMBOL as written on the command line or in a note: `[UPSTREAM:]name[@path[:line]]`."""

    upstream: str | None
    name: str  # qualified as far as written
    path: str | None = None
    line: int | None = None


def parse_symbol(spec: str, upstreams: Collection[str]) -> SymbolSpec:
    """Split a SYMBOL; `upstreams` are the names an `UPSTREAM:` prefix may take. A prefix that
    is none of them raises UsageError (`flashinfr:norm::f`), while `ns::f` is a name."""
    from annotate.errors import UsageError

    upstream = None
    rest = spec.strip()
    head, sep, tail = rest.partition(":")
    if sep and not tail.startswith(":"):
        if head in upstreams:
            upstream, rest = head, tail
        elif head and "::" not in head and "@" not in head:
            raise UsageError(f"unknown upstream '{head}' in '{spec}'",
                             hint="indexed upstreams: " + ", ".join(upstreams))
    path = line = None
    if "@" in rest:
        rest, _, loc = rest.partition("@")
        path, _, ln = loc.rpartition(":")
        if not path or not ln.isdigit():
            path, ln = loc, ""
        line = int(ln) if ln.isdigit() else None
    return SymbolSpec(upstream, rest.strip(), path, line)


# ---- the interface other stages use ------------------------------------------------------------

@runtime_checkable
class IndexView(Protocol):
    """What other stages may ask of an index (`annotate.index.api.Index` is the one
    implementation; tests build it with the real `index_directory` on tiny trees).

    Absent things follow one rule. A lookup of *one named thing* raises `UsageError` (a one-line
    message with a hint: nearest names or paths) when it is not there: `root`, `file`,
    `source`, `symbol`, `resolve`, `text_of`, `type_def`, `macro_def`, `resolve_type`,
    `resolve_macro`, and `parse_spec` for an unknown `UPSTREAM:`. A query for *a collection*
    returns an empty list: `files`, `paths`, `symbols_in`, `types_in`, `macros_in` (of a file not
    in the index), `find`, `find_type`, `find_macro`, `callees`, `callers`, `facts`, `callgraph`,
    `uses_by`, `type_users`, `macro_users`, `methods_of` (of a thing not in the index),
    `diagnostics`; `has_file` is False and `enclosing` is None. Nothing else raises, except an
    `AnnotateError` naming a damaged cache file (with the fix in its hint).
    """

    def upstreams(self) -> list[str]: ...
    def root(self, upstream: str) -> Path: ...
    def content_key(self) -> str: ...
    def paths(self, upstream: str) -> list[str]: ...
    def has_file(self, upstream: str, path: str) -> bool: ...
    def files(self, upstream: str | None = None) -> list[FileIndex]: ...
    def file(self, upstream: str, path: str) -> FileIndex: ...
    def source(self, upstream: str, path: str) -> str: ...
    def symbols_in(self, upstream: str, path: str) -> list[Symbol]: ...
    def all_symbols(self) -> list[Symbol]: ...
    def symbol(self, key: str) -> Symbol: ...
    def find(self, name: str, upstream: str | None = None) -> list[Symbol]: ...
    def resolve(self, spec: str) -> Symbol: ...
    def parse_spec(self, spec: str) -> tuple[str | None, str, str | None, int | None]: ...
    def diagnostics(self) -> list[Diagnostic]: ...
    def callees(self, sym: Symbol) -> list[CallEdge]: ...
    def callers(self, sym: Symbol) -> list[CallEdge]: ...
    def facts(self, sym: Symbol) -> list[MemoryFact]: ...
    def callgraph(self, sym: Symbol, reverse: bool = False, depth: int = 1) -> list[CallEdge]: ...
    def enclosing(self, upstream: str, path: str, line: int) -> Symbol | None: ...
    def text_of(self, sym: Symbol | TypeDef | MacroDef) -> str: ...
    # types and macros (TypeDef, MacroDef) and who uses them (Use)
    def types_in(self, upstream: str, path: str) -> list[TypeDef]: ...
    def macros_in(self, upstream: str, path: str) -> list[MacroDef]: ...
    def find_type(self, name: str, upstream: str | None = None) -> list[TypeDef]: ...
    def find_macro(self, name: str, upstream: str | None = None) -> list[MacroDef]: ...
    def resolve_type(self, spec: str) -> TypeDef: ...
    def resolve_macro(self, spec: str) -> MacroDef: ...
    def type_def(self, key: str) -> TypeDef: ...
    def macro_def(self, key: str) -> MacroDef: ...
    def uses_by(self, sym: Symbol) -> list[Use]: ...
    def type_users(self, t: TypeDef) -> list[Use]: ...
    def macro_users(self, m: MacroDef) -> list[Use]: ...
    def methods_of(self, t: TypeDef) -> list[Symbol]: ...
    def memo(self, key: Hashable, make: Callable[[], T]) -> T: ...

"""Plain, read-only data produced by the index and consumed by the annotation, site and
harness stages. This module is the contract between stages: change it with care.

Identity: a function is named by `Symbol.id` = "<upstream>:<qualified_name>" and, where the
same qualified name has several definitions (overloads, specialisations, the same helper in
two files), `Symbol.key` adds "@<path>:<start_line>" to make it unique within a pin.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
        return f"{self.upstream}:{self.qualified_name}@{self.path}:{self.start_line}"


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

"""A tiny in-memory stand-in for annotate.index's Index, for the notes tests.

It honours the Index API of the common brief on small C++-like sources: a function is a
line-level head `... name(args) {` (optionally preceded by a `template <...>` line) whose
body ends at the matching brace; `namespace x {` lines qualify names. The real index is
used by the integration tests (test_notes_real.py) instead.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from annotate.errors import UsageError
from annotate.index.model import CALL, CallEdge, FileIndex, MemoryFact, Symbol

_NS = re.compile(r"^\s*namespace\s+(\w+)\s*\{")
_HEAD = re.compile(r"^\s*(?:(?:__global__|__device__|__host__|__forceinline__|inline|static|void|int|float|auto|template\s*<[^>]*>)\s+)*"
                   r"[\w:<>,\*&\s]*?\b([A-Za-z_][\w:]*)\s*\(([^;{}]*)\)\s*(?:const\s*)?\{")
_CALL = re.compile(r"\b([A-Za-z_][\w:]*)\s*(?:<[^<>;]*>)?\s*\(")
_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "catch", "static_cast", "reinterpret_cast"}


def fake_fingerprint(body: str) -> str:
    no_comments = re.sub(r"//[^\n]*|/\*.*?\*/", "", body, flags=re.S)
    return hashlib.sha256("".join(no_comments.split()).encode()).hexdigest()[:16]


def parse(upstream: str, path: str, text: str) -> FileIndex:
    lines = text.split("\n")
    syms, edges, facts = [], [], []
    ns: list[tuple[str, int]] = []  # (name, depth at which it opened)
    depth = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        m_ns = _NS.match(line)
        m = _HEAD.match(line) if not m_ns else None
        if m and m.group(1) not in _KEYWORDS:
            start = i + 1
            if i > 0 and lines[i - 1].strip().startswith("template"):
                start = i
            # find the closing brace
            d, j, end = 0, i, None
            while j < len(lines):
                d += lines[j].count("{") - lines[j].count("}")
                if d <= 0:
                    end = j + 1
                    break
                j += 1
            end = end or len(lines)
            name = m.group(1)
            qual = "::".join([n for n, _ in ns] + [name])
            body = "\n".join(lines[i:end])
            key_sym = Symbol(upstream=upstream, path=path, name=name.split("::")[-1], qualified_name=qual,
                             kind="device" if "__device__" in line else ("kernel" if "__global__" in line else "host"),
                             signature=" ".join(line.split("{")[0].split()), template_params=None,
                             start_line=start, end_line=end, body_start_line=i + 1,
                             fingerprint=fake_fingerprint(body[body.index("{"):]))
            syms.append(key_sym)
            for k in range(i, end):
                for c in _CALL.finditer(lines[k] if k != i else lines[k][m.end():]):
                    if c.group(1) not in _KEYWORDS:
                        edges.append(CallEdge(caller=key_sym.key, callee_name=c.group(1), kind=CALL, path=path,
                                              line=k + 1))
                if "__syncthreads" in lines[k]:
                    facts.append(MemoryFact(key_sym.key, "barrier", "__syncthreads()", path, k + 1, "barrier"))
                if "__shared__" in lines[k]:
                    facts.append(MemoryFact(key_sym.key, "shared-static", lines[k].strip(), path, k + 1, "shared"))
            i = end
            continue
        if m_ns:
            ns.append((m_ns.group(1), depth))
        depth += line.count("{") - line.count("}")
        while ns and depth <= ns[-1][1]:
            ns.pop()
        i += 1
    blob = hashlib.sha1(text.encode()).hexdigest()
    return FileIndex(upstream, path, blob, "cuda", tuple(syms), tuple(edges), tuple(facts))


class FakeIndex:
    def __init__(self, files: dict[tuple[str, str], str]):
        self._src = dict(files)
        self._files = {k: parse(k[0], k[1], v) for k, v in files.items()}
        # resolve edges to keys by bare/qualified name
        by_name: dict[str, list[Symbol]] = {}
        for fi in self._files.values():
            for s in fi.symbols:
                by_name.setdefault(s.qualified_name, []).append(s)
                by_name.setdefault(s.name, []).append(s)
        for k, fi in list(self._files.items()):
            edges = tuple(CallEdge(e.caller, e.callee_name, e.kind, e.path, e.line,
                                   callees=tuple(s.key for s in by_name.get(e.callee_name, [])
                                                 or by_name.get(e.callee_name.split("::")[-1], [])))
                          for e in fi.edges)
            self._files[k] = FileIndex(fi.upstream, fi.path, fi.blob, fi.language, fi.symbols, edges, fi.facts)

    @classmethod
    def from_dir(cls, upstream: str, root: Path, paths: list[str] | None = None) -> "FakeIndex":
        root = Path(root)
        if paths is None:
            paths = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
        files = {}
        for p in paths:
            f = root / p
            if f.is_file():
                files[(upstream, p)] = f.read_text(encoding="utf-8", errors="replace")
        return cls(files)

    def upstreams(self):
        return sorted({u for u, _ in self._files})

    def files(self, upstream=None):
        return [f for (u, _), f in sorted(self._files.items()) if upstream in (None, u)]

    def file(self, upstream, path):
        return self._files.get((upstream, path))

    def source(self, upstream, path):
        return self._src[(upstream, path)]

    def symbols_in(self, upstream, path):
        f = self._files.get((upstream, path))
        return sorted(f.symbols, key=lambda s: s.start_line) if f else []

    def all_symbols(self):
        return [s for f in self.files() for s in f.symbols]

    def symbol(self, key):
        for s in self.all_symbols():
            if s.key == key:
                return s
        raise KeyError(key)

    def find(self, name, upstream=None):
        syms = [s for s in self.all_symbols() if upstream in (None, s.upstream)]
        for pred in (lambda s: s.qualified_name == name,
                     lambda s: s.qualified_name.endswith("::" + name),
                     lambda s: s.name == name):
            hit = [s for s in syms if pred(s)]
            if hit:
                return hit
        return []

    def resolve(self, spec):
        upstream = None
        i = spec.find(":")
        if i > 0 and not spec.startswith("::", i):
            upstream, spec = spec[:i], spec[i + 1:]
        at = None
        if "@" in spec:
            spec, at = spec.split("@", 1)
        hits = self.find(spec, upstream)
        if at:
            p, _, ln = at.rpartition(":")
            hits = [s for s in hits if s.path == p and str(s.start_line) == ln]
        if not hits:
            raise UsageError(f"unknown symbol '{spec}'")
        if len(hits) > 1:
            raise UsageError(f"'{spec}' is ambiguous", hint="candidates: " + ", ".join(s.key for s in hits))
        return hits[0]

    def callees(self, sym):
        f = self._files[(sym.upstream, sym.path)]
        return [e for e in f.edges if e.caller == sym.key]

    def callers(self, sym):
        return [e for f in self.files() for e in f.edges if sym.key in e.callees]

    def facts(self, sym):
        f = self._files[(sym.upstream, sym.path)]
        return [x for x in f.facts if x.symbol == sym.key]

    def callgraph(self, sym, reverse=False, depth=1):
        return self.callers(sym) if reverse else self.callees(sym)

    def enclosing(self, upstream, path, line):
        for s in self.symbols_in(upstream, path):
            if s.start_line <= line <= s.end_line:
                return s
        return None

    def text_of(self, sym):
        lines = self._src[(sym.upstream, sym.path)].split("\n")
        return "\n".join(lines[sym.start_line - 1: sym.end_line])


def fake_index_directory(upstream, root, paths=None):
    return FakeIndex.from_dir(upstream, root, paths)


NORM_SRC = """\
#include <cstdint>
namespace demo {
namespace norm {

template <typename T>
__global__ void RMSNormKernel(T* input, T* output, int d) {
  __shared__ float smem[32];
  float sum_sq = 0.f;
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    sum_sq += float(input[i]) * float(input[i]);
  }
  sum_sq = warp_reduce(sum_sq);
  __syncthreads();
  output[threadIdx.x] = input[threadIdx.x];
}

__device__ float warp_reduce(float x) {
  x += shfl_xor(x, 16);
  x += shfl_xor(x, 8);
  return x;
}

void Launch(int n) {
  helper(n);
}

void Launch(float x) {
  helper(x);
}

}  // namespace norm
}  // namespace demo
"""


def write_annotation(root: Path, upstream: str, path: str, body: str, schema_line: str | None = "auto",
                     config=None) -> Path:
    """Write annotations/<upstream>/<path>.yaml under `root`; `body` is the YAML after line 1."""
    import os

    f = root / upstream / f"{path}.yaml"
    f.parent.mkdir(parents=True, exist_ok=True)
    head = ""
    if schema_line == "auto" and config is not None:
        rel = Path(os.path.relpath(config.schema_file, f.parent)).as_posix()
        head = f"# yaml-language-server: $schema={rel}\n"
    elif schema_line not in (None, "auto"):
        head = schema_line + "\n"
    f.write_text(head + body, encoding="utf-8")
    return f

"""What each upstream source line compiled to: per-line SASS of a harness's kernels.

The route (nvcc and the binary tools only, no GPU):
1. `nvcc.compile_only(..., output="cubin", extra_flags=["-lineinfo"])`: the harness's own flags
   plus line tables (-lineinfo changes no instruction: `lineinfo_check` compares both builds);
2. `disasm.disassemble(cubin, line_info=True)`: `nvdisasm -g -gi`, where each instruction group
   follows its chain of source frames, innermost first (`//## File "...", line N inlined at ...`);
3. `parse_disassembly` reads that text; `upstream_frames` keeps, for each instruction, the frames
   that lie in an upstream checkout of the pin (`SourceMap`), as `upstream:path` relative to the
   checkout root (`attention/../page.cuh` normalised). Toolkit frames (cooperative_groups.h,
   cuda_fp16.hpp) and the harness's own launcher fall through to the nearest upstream frame;
4. `build_record` keeps the kernels the spec names (a cubin holds more, e.g. MergeStates) and
   folds them into a `SassRecord`: per kernel its resources (ptxas) and instruction mix, per
   source line the instruction classes and counts and the SASS text of the instructions whose
   innermost upstream frame is that line (`counts`, `sass`), plus the classes that reached the
   line through the calls it makes (`via`: a `cp_async::pred_load(...)` call line gets the
   LDGSTS of the helper's inline asm).

Records are cached beside the cubin (`<build dir>/sass.json`, keyed like every build) and
committed under vendor_kernels/results/sass/ (`committed_path`) so the site needs no nvcc.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from annotate.atomic import write_atomic
from annotate.config import Config
from annotate.errors import AnnotateError, UsageError
from annotate.harness.record import RecordError, _check_bounds, _opt, _Part, _read, _text_depth
from annotate.harness.spec import KernelSpec

SASS_SCHEMA = 1
LINEINFO = "-lineinfo"  # annotate.harness.staging.LINEINFO_FLAGS: the GPU build carries it too
RECORD_FILE = "sass.json"  # beside the cubins, in the keyed build folder
MAX_SASS_BYTES = 16 * 2**20  # a cached record of the largest catalog kernel is ~3 MiB
MAX_SASS_DEPTH = 12


# ---- reading nvdisasm -g -gi ------------------------------------------------------------------
_FUNC = re.compile(r"^//-+ \.text\.(\S+) -+\s*$")
_FRAME = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')
_INSN = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;?\s*(?:/\*.*\*/)?\s*$")
_PRED = re.compile(r"^@!?U?P[T\d]+\s+")


@dataclass(frozen=True)
class Instruction:
    address: int
    text: str  # "LDG.E.128 R4, desc[UR6][R2.64]" (predicate kept, no address, no ';')
    opcode: str  # "LDG.E.128" (predicate and operands removed)
    frames: tuple[tuple[str, int], ...]  # (file as nvdisasm printed it, line), innermost first


@dataclass(frozen=True)
class DisasmFunction:
    mangled: str
    instructions: tuple[Instruction, ...]


def opcode_of(text: str) -> str:
    """The mnemonic with its modifiers: `@!P0 LDG.E.128 R4, [R2]` -> `LDG.E.128`."""
    body = _PRED.sub("", text.strip())
    return body.split(None, 1)[0].rstrip(";") if body else ""


def parse_disassembly(text: str) -> list[DisasmFunction]:
    """Every function of `nvdisasm -g -gi -c` output with its instructions and their frames.

    A run of `//## File` lines is one instruction group's chain (innermost frame first, each
    line naming one frame); it holds for every instruction until the next run. Labels,
    directives and blank lines carry nothing."""
    funcs: list[DisasmFunction] = []
    mangled: str | None = None
    insns: list[Instruction] = []
    chain: list[tuple[str, int]] = []
    in_run = False

    def flush() -> None:
        if mangled is not None:
            funcs.append(DisasmFunction(mangled, tuple(insns)))

    for line in text.splitlines():
        if m := _FUNC.match(line):
            flush()
            mangled, insns, chain, in_run = m.group(1), [], [], False
            continue
        if mangled is None:
            continue
        if m := _FRAME.match(line):
            if not in_run:
                chain, in_run = [], True
            chain.append((m.group(1), int(m.group(2))))
            continue
        in_run = False
        if m := _INSN.match(line):
            body = re.sub(r"\s+", " ", m.group(2)).strip()
            insns.append(Instruction(int(m.group(1), 16), body, opcode_of(body), tuple(chain)))
    flush()
    return funcs


# ---- frames -> upstream files -----------------------------------------------------------------
@dataclass(frozen=True)
class SourceMap:
    """Absolute checkout roots -> upstream names; a frame's file becomes `upstream:relative`."""

    roots: tuple[tuple[str, str], ...]  # (upstream, absolute root), longest root first

    @classmethod
    def of(cls, roots: Mapping[str, Path]) -> "SourceMap":
        pairs = [(name, os.path.realpath(str(root))) for name, root in roots.items()]
        return cls(tuple(sorted(pairs, key=lambda p: -len(p[1]))))

    def locate(self, path: str) -> str | None:
        """`upstream:relative/path` for a file inside a checkout, None for any other file."""
        norm = os.path.normpath(path)
        for cand in (norm, os.path.realpath(norm)):
            for name, root in self.roots:
                if cand.startswith(root + os.sep):
                    return f"{name}:{cand[len(root) + 1:].replace(os.sep, '/')}"
        return None


def upstream_frames(insn: Instruction, source_map: SourceMap,
                    memo: dict[str, str | None]) -> tuple[tuple[str, int], ...]:
    """The instruction's frames that lie in an upstream checkout, innermost first (toolkit and
    launcher frames dropped, consecutive repeats of one line merged)."""
    out: list[tuple[str, int]] = []
    for path, line in insn.frames:
        if path not in memo:
            memo[path] = source_map.locate(path)
        loc = memo[path]
        if loc is not None and (not out or out[-1] != (loc, line)):
            out.append((loc, line))
    return tuple(out)


# ---- the record ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SassLine(_Part):
    line: int = _opt(default=0)
    counts: dict = _opt(factory=dict)  # class -> instructions whose innermost upstream frame is this line
    sass: tuple[str, ...] = _opt(default=())  # those instructions, "ADDR OPCODE OPERANDS", in address order
    via: dict = _opt(factory=dict, omit="empty")  # class -> instructions of callees inlined at this line


@dataclass(frozen=True)
class SassFile(_Part):
    path: str = _opt(default="")  # "flashinfer:include/flashinfer/attention/decode.cuh"
    lines: tuple[SassLine, ...] = _opt(default=())


@dataclass(frozen=True)
class SassFunction(_Part):
    """One __global__ instantiation in the cubin."""

    mangled: str = _opt(default="")
    name: str = _opt(default="")  # demangled
    symbol: str = _opt(default="")  # the spec's symbol it instantiates
    source: str = _opt(default="")  # the launcher source it was compiled from
    registers: int | None = _opt()
    barriers: int | None = _opt()
    smem_static: int | None = _opt()  # bytes; dynamic shared memory is set at launch
    cmem: int | None = _opt()
    stack: int | None = _opt()
    spill_stores: int | None = _opt()
    spill_loads: int | None = _opt()
    instructions: int = _opt(default=0)
    unattributed: int = _opt(default=0)  # instructions with no upstream frame (no line, or launcher only)
    mix: dict = _opt(factory=dict)  # class -> count over the whole kernel
    files: tuple[SassFile, ...] = _opt(default=())

    def short_name(self, width: int = 110) -> str:
        from annotate.harness.ptxas import short_kernel_name

        return short_kernel_name(self.name, width)

    def line(self, path: str, line: int) -> SassLine | None:
        for f in self.files:
            if f.path == path:
                return next((ln for ln in f.lines if ln.line == line), None)
        return None


@dataclass(frozen=True)
class SassRecord(_Part):
    schema: int = _opt(default=SASS_SCHEMA)
    kernel: str = _opt(default="")
    arch: str = _opt(default="")
    nvcc: str | None = _opt()
    key: str | None = _opt()  # the build key of the -lineinfo cubins
    flags: tuple[str, ...] = _opt(default=())
    pins: dict = _opt(factory=dict)
    symbols: tuple[str, ...] = _opt(default=())
    functions: tuple[SassFunction, ...] = _opt(default=())

    @classmethod
    def from_json(cls, data: object, where: str = "SASS record") -> "SassRecord":
        _check_bounds(data, where)
        if not isinstance(data, dict):
            raise RecordError(where, f"not a JSON object but {type(data).__name__}")
        return _read(cls, data)

    def totals(self) -> Counter:
        """Instruction class -> count over every kernel of the record."""
        out: Counter = Counter()
        for f in self.functions:
            out.update(f.mix)
        return out

    def files(self) -> list[str]:
        return sorted({sf.path for f in self.functions for sf in f.files})


def record_json_text(record: SassRecord) -> str:
    # one line per source line keeps the committed files diffable yet small
    data = record.to_json()
    head = {k: v for k, v in data.items() if k != "functions"}
    parts = [json.dumps(head, indent=1)[:-2] + ',\n "functions": [']
    for i, fn in enumerate(data["functions"]):
        files = fn.pop("files")
        fparts = []
        for sf in files:
            lines = ",\n".join("     " + json.dumps(ln, separators=(",", ":")) for ln in sf["lines"])
            fparts.append(f'   {{"path": {json.dumps(sf["path"])}, "lines": [\n{lines}\n   ]}}')
        body = json.dumps(fn, separators=(", ", ": "))[:-1]
        parts.append(("  " if i == 0 else ",\n  ") + body + ', "files": [\n' + ",\n".join(fparts) + "\n  ]}")
    parts.append("\n ]\n}\n")
    return "".join(parts)


def write_sass_record(path: Path, record: SassRecord) -> None:
    write_atomic(path, record_json_text(record))


def load_sass_record(path: Path) -> SassRecord:
    """A record file, bounded in size and depth; RecordError (one line) otherwise."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_SASS_BYTES:
            raise RecordError(str(path), f"larger than {MAX_SASS_BYTES // 2**20} MiB")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(str(path), exc.strerror or exc.__class__.__name__) from None
    except UnicodeDecodeError:
        raise RecordError(str(path), "not UTF-8 text") from None
    if _text_depth(text) > MAX_SASS_DEPTH:
        raise RecordError(str(path), f"nested deeper than {MAX_SASS_DEPTH} levels")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RecordError(str(path), f"invalid JSON at line {getattr(exc, 'lineno', '?')}") from None
    return SassRecord.from_json(data, where=str(path))


# ---- folding a disassembly into a record ------------------------------------------------------------
def base_name(demangled: str) -> str:
    """`void flash::flash_fwd_kernel<...>(Flash_fwd_params)` -> `flash::flash_fwd_kernel`."""
    n = demangled[5:] if demangled.startswith("void ") else demangled
    depth = 0
    for i, ch in enumerate(n):
        if ch == "<":
            if depth == 0 and i > 0:
                return n[:i].strip()
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return n[:i].strip()
    return n.strip()


def symbol_of(demangled: str, symbols: Sequence[str]) -> str | None:
    """The spec symbol this kernel instantiates, or None (a kernel the spec does not name)."""
    name = base_name(demangled)
    return next((s for s in symbols if name == s), None)


def fold_function(fn: DisasmFunction, source_map: SourceMap, memo: dict | None = None
                  ) -> tuple[dict, dict, Counter, int]:
    """(own, via, mix, unattributed): own[(file, line)] -> list of instructions whose innermost
    upstream frame is that line; via[(file, line)] -> Counter of classes of instructions that
    reach the line as an outer frame (the calls it makes); mix over the whole function."""
    memo = {} if memo is None else memo
    own: dict[tuple[str, int], list[Instruction]] = {}
    via: dict[tuple[str, int], Counter] = {}
    mix: Counter = Counter()
    unattributed = 0
    for insn in fn.instructions:
        mix[insn.opcode] += 1
        frames = upstream_frames(insn, source_map, memo)
        if not frames:
            unattributed += 1
            continue
        own.setdefault(frames[0], []).append(insn)
        for outer in dict.fromkeys(frames[1:]):
            if outer != frames[0]:
                via.setdefault(outer, Counter())[insn.opcode] += 1
    return own, via, mix, unattributed


def function_record(fn: DisasmFunction, source_map: SourceMap, *, name: str, symbol: str,
                    resources=None, source: str = "", memo: dict | None = None) -> SassFunction:
    own, via, mix, unattributed = fold_function(fn, source_map, memo)
    by_file: dict[str, dict[int, SassLine]] = {}
    for loc in sorted(set(own) | set(via)):
        insns = own.get(loc, [])
        by_file.setdefault(loc[0], {})[loc[1]] = SassLine(
            line=loc[1], counts=dict(sorted(Counter(i.opcode for i in insns).items())),
            sass=tuple(f"{i.address:04x} {i.text}" for i in insns),
            via=dict(sorted(via.get(loc, Counter()).items())))
    files = tuple(SassFile(path=p, lines=tuple(ls[k] for k in sorted(ls))) for p, ls in sorted(by_file.items()))
    r = resources
    return SassFunction(
        mangled=fn.mangled, name=name, symbol=symbol, source=source,
        registers=getattr(r, "registers", None), barriers=getattr(r, "barriers", None),
        smem_static=getattr(r, "smem_static", None), cmem=getattr(r, "cmem", None),
        stack=getattr(r, "stack", None), spill_stores=getattr(r, "spill_stores", None),
        spill_loads=getattr(r, "spill_loads", None), instructions=len(fn.instructions),
        unattributed=unattributed, mix=dict(sorted(mix.items())), files=files)


def build_record(spec: KernelSpec, arch: str, disassemblies: Mapping[str, str], resources: Iterable,
                 source_map: SourceMap, *, nvcc: str | None = None, key: str | None = None,
                 flags: Sequence[str] = (), pins: Mapping[str, str] | None = None,
                 symbols: Sequence[str] | None = None) -> SassRecord:
    """The record of one harness: `disassemblies` maps each launcher source to its nvdisasm text;
    only kernels instantiating one of `symbols` (default: the spec's) are kept, each once."""
    symbols = tuple(spec.symbols if symbols is None else symbols)
    res = {r.mangled: r for r in resources}
    memo: dict = {}
    kept: dict[str, SassFunction] = {}
    for source, text in disassemblies.items():
        for fn in parse_disassembly(text):
            if fn.mangled in kept:
                continue  # the same instantiation in two translation units: one copy
            r = res.get(fn.mangled)
            name = r.name if r is not None else fn.mangled
            sym = symbol_of(name, symbols)
            if sym is None:
                continue
            kept[fn.mangled] = function_record(fn, source_map, name=name, symbol=sym, resources=r,
                                               source=source, memo=memo)
    return SassRecord(kernel=spec.name, arch=arch, nvcc=nvcc, key=key, flags=tuple(flags),
                      pins=dict(pins or {}), symbols=symbols, functions=tuple(kept.values()))


# ---- the harness route ----------------------------------------------------------------------------
def committed_path(config: Config, kernel: str, arch: str) -> Path:
    """Where a kernel's record is committed for the site: vendor_kernels/results/sass/."""
    return config.committed_results_dir() / "sass" / f"{kernel}.sm{arch}.json"


def committed_facts_path(config: Config, kernel: str, arch: str) -> Path:
    """The facts of a kernel's functions checked against its SASS, beside its record."""
    return config.committed_results_dir() / "sass" / f"{kernel}.sm{arch}.facts.json"


def compact(record: SassRecord, featured: Sequence[str]) -> SassRecord:
    """The committed form: every kernel's resources and instruction mix, and the per-line
    classes and SASS of the featured ones only (the instantiations the timed shapes launch;
    all of them when `featured` is empty). A catalog kernel compiles up to 22 instantiations:
    every one's per-line SASS would be 1-2 MiB of JSON per kernel."""
    import dataclasses

    pats = [re.compile(p) for p in featured]
    for p in pats:
        if not any(p.search(f.name) for f in record.functions):
            raise AnnotateError(f"{record.kernel}: sass_featured pattern {p.pattern!r} names no kernel of "
                                f"the sm_{record.arch} build", hint="`annotate sass KERNEL` lists them")
    keep = [not pats or any(p.search(f.name) for p in pats) for f in record.functions]
    fns = tuple(f if k else dataclasses.replace(f, files=()) for f, k in zip(record.functions, keep))
    return dataclasses.replace(record, functions=fns)


def featured_names(record: SassRecord) -> list[str]:
    return [f.name for f in record.functions if f.files]


def source_map_for(config: Config, spec: KernelSpec) -> SourceMap:
    """Every upstream checkout the spec compiles against (the pins, submodules inside them)."""
    from annotate.upstreams import checkout_root, get_upstream

    names = dict.fromkeys([spec.upstream, *(i.upstream for i in spec.includes)])
    return SourceMap.of({n: checkout_root(config, get_upstream(config, n)) for n in names})


def sass_record(config: Config, spec: KernelSpec, arch: str = "90", *, jobs: int | None = None,
                refresh: bool = False) -> tuple[SassRecord, Path]:
    """(record, its cached file): from the cache when the -lineinfo cubins' key has one, else
    compiled, disassembled and folded now (nvcc, nvdisasm)."""
    from annotate.harness import staging
    from annotate.harness.disasm import disassemble
    from annotate.harness.nvcc import compile_only, compile_only_plan
    from annotate.harness.ptxas import parse_ptxas
    from annotate.harness.toolchain import find_binary_tools, find_toolchain

    plan = compile_only_plan(config, spec, arch, extra_flags=[LINEINFO], output="cubin")
    cached = plan.directory / RECORD_FILE
    if not refresh and cached.is_file():
        try:
            rec = load_sass_record(cached)
            if rec.key == plan.key and rec.schema == SASS_SCHEMA:
                return rec, cached
        except RecordError:
            pass  # rebuilt below
    tools = find_binary_tools(find_toolchain(config.environ), config.environ)
    cubins = {s: plan.directory / (Path(s).stem + ".cubin") for s in spec.sources}
    logs = {s: plan.directory / (Path(s).stem + ".ptxas.log") for s in spec.sources}
    if not refresh and all(p.is_file() for p in (*cubins.values(), *logs.values())):
        # compiled before (e.g. by `annotate run --compile-only` with these flags): read it back
        kernels = [k for s, log in logs.items()
                   for k in parse_ptxas(log.read_text(encoding="utf-8"), source=s, env=config.environ)]
    else:
        result = compile_only(config, spec, arch, extra_flags=[LINEINFO], output="cubin", jobs=jobs)
        cubins, kernels = {s: Path(p) for s, p in result.outputs.items()}, list(result.kernels)
    texts = {src: disassemble(out, tools, line_info=True) for src, out in cubins.items()}
    rec = build_record(spec, arch, texts, kernels, source_map_for(config, spec), nvcc=plan.nvcc,
                       key=plan.key, flags=plan.flags, pins=staging.spec_pins(config, spec))
    if not rec.functions:
        raise AnnotateError(f"{spec.name}: no kernel in the cubins instantiates {', '.join(spec.symbols)}",
                            hint=f"cubins: {plan.directory}")
    write_sass_record(cached, rec)
    return rec, cached


def cubins(config: Config, spec: KernelSpec, arch: str, extra_flags: Sequence[str] = (), *,
           jobs: int | None = None) -> dict[str, Path]:
    """source -> its cubin in the keyed build folder of these flags, compiled only when missing
    (the folder's key covers every input, so a cubin there is the one these inputs make)."""
    from annotate.harness.nvcc import compile_only, compile_only_plan

    plan = compile_only_plan(config, spec, arch, extra_flags=extra_flags, output="cubin")
    outs = {s: plan.directory / (Path(s).stem + ".cubin") for s in spec.sources}
    if not all(p.is_file() for p in outs.values()):
        result = compile_only(config, spec, arch, extra_flags=extra_flags, output="cubin", jobs=jobs)
        outs = {s: Path(p) for s, p in result.outputs.items()}
    return outs


def lineinfo_cubins(config: Config, spec: KernelSpec, arch: str, *, jobs: int | None = None) -> dict[str, Path]:
    """source -> its -lineinfo cubin (compiled when missing)."""
    return cubins(config, spec, arch, [LINEINFO], jobs=jobs)


def upstream_chains(config: Config, spec: KernelSpec, arch: str) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
    """(opcode, upstream frames innermost first) of every instruction of the spec's kernels:
    what a record folds away, for measures that follow an instruction up its inlining chain."""
    from annotate.harness.disasm import disassemble
    from annotate.harness.ptxas import demangle
    from annotate.harness.toolchain import find_binary_tools, find_toolchain

    tools = find_binary_tools(find_toolchain(config.environ), config.environ)
    smap, memo, seen = source_map_for(config, spec), {}, set()
    out: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    for cubin in lineinfo_cubins(config, spec, arch).values():
        funcs = [f for f in parse_disassembly(disassemble(cubin, tools, line_info=True)) if f.mangled not in seen]
        names = demangle([f.mangled for f in funcs], config.environ)
        for fn in funcs:
            if symbol_of(names.get(fn.mangled, fn.mangled), spec.symbols) is None:
                continue
            seen.add(fn.mangled)
            out.extend((i.opcode, upstream_frames(i, smap, memo)) for i in fn.instructions)
    return out


# ---- -lineinfo changes no instruction -----------------------------------------------------------------
def normalised_sass(text: str) -> dict[str, list[str]]:
    """mangled -> instruction texts of `cuobjdump -sass` or `nvdisasm` output, addresses and
    line comments dropped (what differs between two builds of the same code)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        m = _FUNC.match(line) or re.match(r"^\s*Function : (\S+)\s*$", line)
        if m:
            current = m.group(1)
            out[current] = []
            continue
        if current is None:
            continue
        im = re.match(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if im:
            out[current].append(re.sub(r"\s+", " ", im.group(2)).strip())
    return out


@dataclass(frozen=True)
class LineinfoCheck:
    kernel: str
    arch: str
    functions: int
    identical: int
    differing: tuple[str, ...] = field(default_factory=tuple)  # mangled names whose SASS differs

    @property
    def ok(self) -> bool:
        return not self.differing and self.functions > 0


def lineinfo_check(config: Config, spec: KernelSpec, arch: str = "90", *, jobs: int | None = None) -> LineinfoCheck:
    """Compile the harness's cubins with and without -lineinfo and compare every kernel's SASS
    (cuobjdump -sass on both, addresses dropped)."""
    from annotate.harness.disasm import disassemble
    from annotate.harness.toolchain import find_binary_tools, find_toolchain

    tools = find_binary_tools(find_toolchain(config.environ), config.environ)
    plain = cubins(config, spec, arch, jobs=jobs)
    lined = lineinfo_cubins(config, spec, arch, jobs=jobs)
    a: dict[str, list[str]] = {}
    b: dict[str, list[str]] = {}
    for src in plain:
        a.update(normalised_sass(disassemble(plain[src], tools)))
        b.update(normalised_sass(disassemble(lined[src], tools)))
    names = sorted(set(a) | set(b))
    differing = tuple(n for n in names if a.get(n) != b.get(n))
    return LineinfoCheck(spec.name, arch, len(names), len(names) - len(differing), differing)


# ---- lookups for the command line ----------------------------------------------------------------------
_ARCH = re.compile(r"^[0-9]{2,3}[af]?$")


def parse_arch(text: str) -> str:
    """`--arch`: a compute capability as nvcc spells it after `sm_` (80, 90, 90a); it names
    build folders and record files, so nothing else is accepted."""
    arch = text.strip().lower().removeprefix("sm_")
    if not _ARCH.match(arch):
        raise UsageError(f"--arch {text!r}: expected a compute capability such as 80, 90 or 90a")
    return arch


def parse_line_arg(text: str) -> tuple[str, int]:
    """`FILE:LINE` (FILE any suffix of an upstream path, optionally `upstream:`-prefixed)."""
    path, sep, num = text.rpartition(":")
    if not sep or not path or not num.isdigit() or int(num) < 1:
        raise UsageError(f"--line {text!r}: expected FILE:LINE, e.g. decode.cuh:425")
    return path, int(num)


def match_file(record: SassRecord, wanted: str) -> str:
    """The record's one file path that `wanted` names (exact, or a /-suffix); UsageError else."""
    files = record.files()
    if wanted in files:
        return wanted
    bare = wanted.split(":", 1)[1] if ":" in wanted else wanted
    hits = [f for f in files if f.split(":", 1)[1] == bare or f.endswith("/" + bare.lstrip("/"))]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        near = [f for f in files if os.path.basename(f) == os.path.basename(bare)]
        raise UsageError(f"{record.kernel} (sm_{record.arch}): no code from a file named {wanted!r}",
                         hint=("did you mean " + ", ".join(near)) if near else
                         f"{len(files)} files compiled into it; `annotate sass {record.kernel}` lists them")
    raise UsageError(f"{wanted!r} names {len(hits)} files of {record.kernel}: " + ", ".join(hits),
                     hint="give more of the path")


def lines_of(record: SassRecord, path: str, line: int) -> list[tuple[SassFunction, SassLine]]:
    out = []
    for fn in record.functions:
        ln = fn.line(path, line)
        if ln is not None:
            out.append((fn, ln))
    return out


def code_lines(record: SassRecord, path: str) -> list[int]:
    return sorted({ln.line for fn in record.functions for f in fn.files if f.path == path for ln in f.lines})

"""Comparing two builds' SASS (the text `cuobjdump -sass` prints): per kernel, instruction by
instruction, and as an instruction mix.

Normalised for what differs between two folders compiling the same code: instruction
addresses and encodings are dropped (branch targets stay: they are offsets inside the
function, equal when the code is), and the hash of the translation unit's path inside
internal-linkage names (`_INTERNAL_33a620dd_11_launcher_cu_3eb23359`) is replaced.
Pure text in, plain data out: no tool is run here (annotate.harness.disasm runs cuobjdump).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_FUNCTION_RE = re.compile(r"^\s*Function : (\S+)")
_ARCH_RE = re.compile(r"^\s*arch = (sm_\w+)")
_INSTR_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*/\*\s*0x[0-9a-f]+\s*\*/\s*$")
_INTERNAL_RE = re.compile(r"_[0-9a-f]{8}_\d+_\w+?_[0-9a-f]{8}")
_PREDICATE_RE = re.compile(r"^@!?U?P[T\d]+\s+")


@dataclass(frozen=True)
class Instruction:
    address: int
    text: str  # normalised: "@!P0 BRA 0x6280", "LDG.E.128 R4, desc[UR4][R2.64]"

    @property
    def opcode(self) -> str:
        """The mnemonic with its modifiers, predicate dropped: `LDGSTS.E.BYPASS.LTC128B.128`."""
        body = _PREDICATE_RE.sub("", self.text)
        return body.split(None, 1)[0] if body else ""


@dataclass(frozen=True)
class KernelSass:
    name: str  # mangled, normalised
    arch: str
    instructions: tuple[Instruction, ...]

    def mix(self) -> Counter:
        return Counter(i.opcode for i in self.instructions if i.opcode and i.opcode != "NOP")


_LENGTH_INTERNAL_RE = re.compile(r"(\d+)(_INTERNAL_)")
_INTERNAL_PARTS = re.compile(r"_INTERNAL_[0-9a-f]{8}_(\d+)_(\w+)")
_INTERNAL_TAIL = (re.compile(r"_[0-9a-f]{8}(?:_\d+)?"), re.compile(r"_\w*"))


def _internal_length(text: str, digits: str, start: int) -> int | None:
    """The length of the internal namespace name at `start`, whose length prefix is a suffix
    of `digits` (the digits before it may end the previous name): the shortest that parses."""
    for tail in _INTERNAL_TAIL:
        for k in range(1, len(digits) + 1):
            n = int(digits[-k:])
            m = _INTERNAL_PARTS.fullmatch(text, start, start + n)
            if m and len(m.group(2)) > int(m.group(1)):
                if tail.fullmatch(m.group(2)[int(m.group(1)):]):
                    return n
    return None


def normalise_internal(text: str) -> str:
    """Every internal-linkage namespace name (`60_INTERNAL_7824549a_23_single_decode_kernel_cu_
    301be8f6_24969`: a hash of the file's path, its name, and a number that changes with the
    unit's content) as `13_INTERNAL_TU_`, found by its length prefix so nothing of it is left;
    one without a length prefix by its hashes."""
    out, pos = [], 0
    for m in _LENGTH_INTERNAL_RE.finditer(text):
        start = m.start(2)
        if start < pos:
            continue
        n = _internal_length(text, m.group(1), start)
        if n is None:
            continue
        out.append(text[pos:start - len(str(n))])
        out.append("13_INTERNAL_TU_")
        pos = start + n
    out.append(text[pos:])
    return _INTERNAL_RE.sub("_TU_", "".join(out))


def normalise_name(name: str) -> str:
    return normalise_internal(name)


def parse_sass(text: str) -> dict[str, KernelSass]:
    """Mangled kernel name -> its SASS (the last arch seen wins; one arch per build here)."""
    out: dict[str, KernelSass] = {}
    name, arch, instrs = None, "", []

    def flush() -> None:
        if name is not None:
            out[name] = KernelSass(name, arch, tuple(instrs))

    for line in text.splitlines():
        m = _ARCH_RE.match(line)
        if m:
            arch = m.group(1)
            continue
        m = _FUNCTION_RE.match(line)
        if m:
            flush()
            name, instrs = normalise_name(m.group(1)), []
            continue
        m = _INSTR_RE.match(line)
        if m and name is not None:
            body = " ".join(m.group(2).split())
            instrs.append(Instruction(int(m.group(1), 16), normalise_internal(body)))
    flush()
    return out


@dataclass(frozen=True)
class KernelDiff:
    name: str
    identical: bool
    instructions: tuple[int, int]  # count in a, in b
    first_difference: tuple[str, ...] = ()  # a few lines: "0x0120: FADD R3, R6, R4 | FMUL ..."
    mix: tuple[tuple[str, int], ...] = ()  # opcode -> count in b minus count in a (non-zero only)
    other: str | None = None  # b's name, when b is another instantiation of the same template (paired)

    def mix_text(self, limit: int = 8) -> str:
        """`LDGSTS.E.BYPASS.LTC128B.128 −64, LDG.E.128 +64`."""
        parts = [f"{op} {'+' if d > 0 else '−'}{abs(d)}" for op, d in self.mix[:limit]]
        more = len(self.mix) - limit
        return ", ".join(parts) + (f", … {more} more" if more > 0 else "")

    def to_json(self) -> dict:
        return {"name": self.name, "identical": self.identical, "instructions": list(self.instructions),
                "first_difference": list(self.first_difference), "mix": {op: d for op, d in self.mix},
                "paired_with": self.other}


def mix_delta(a: KernelSass | None, b: KernelSass | None) -> tuple[tuple[str, int], ...]:
    ca = a.mix() if a else Counter()
    cb = b.mix() if b else Counter()
    delta = {op: cb[op] - ca[op] for op in set(ca) | set(cb) if cb[op] != ca[op]}
    return tuple(sorted(delta.items(), key=lambda kv: (-abs(kv[1]), kv[0])))


def diff_kernel(a: KernelSass | None, b: KernelSass | None, context: int = 2) -> KernelDiff:
    name = (a or b).name
    ia = a.instructions if a else ()
    ib = b.instructions if b else ()
    same = a is not None and b is not None and [i.text for i in ia] == [i.text for i in ib]
    first: tuple[str, ...] = ()
    if not same and a is not None and b is not None:
        k = next((k for k, (x, y) in enumerate(zip(ia, ib)) if x.text != y.text), min(len(ia), len(ib)))
        lines = []
        for j in range(k, min(k + context + 1, max(len(ia), len(ib)))):
            x = f"{ia[j].text}" if j < len(ia) else "(end)"
            y = f"{ib[j].text}" if j < len(ib) else "(end)"
            addr = ia[j].address if j < len(ia) else ib[j].address
            lines.append(f"{addr:#06x}: {x}  |  {y}")
        first = tuple(lines)
    elif a is None or b is None:
        first = ("only in the " + ("second" if a is None else "first") + " build",)
    other = b.name if a is not None and b is not None and b.name != a.name else None
    return KernelDiff(name, same, (len(ia), len(ib)), first, mix_delta(a, b), other)


_LENGTH_RE = re.compile(r"\d+")


def template_name(mangled: str) -> str | None:
    """The qualified name before the first template argument list, read off an Itanium
    mangled name (`_ZN10flashinfer17MergeStatesKernelILj8E…` -> `flashinfer::MergeStatesKernel`);
    None for anything else."""
    nested = mangled.startswith("_ZN")
    if not nested and not mangled.startswith("_Z"):
        return None
    pos, parts = 3 if nested else 2, []
    while True:
        m = _LENGTH_RE.match(mangled, pos)
        if not m:
            break
        n = int(m.group())
        start = m.end()
        if n == 0 or start + n > len(mangled):
            return None
        parts.append(mangled[start:start + n])
        pos = start + n
        if not nested:
            break
    return "::".join(parts) or None


def pair_kernels(a: list[str], b: list[str], base=template_name) -> list[tuple[str | None, str | None]]:
    """(a's kernel, b's kernel) for every kernel of either build, in a's order then b's extra
    ones. Kernels of the same name pair up; the rest pair up in order when both builds have
    the same number of them for one template (an edit that changes a template argument, such
    as a pipeline depth, renames every instantiation it reaches), else stay alone (None)."""
    sb = set(b)
    only_a = [n for n in a if n not in sb]
    sa = set(a)
    only_b = [n for n in b if n not in sa]
    groups_a: dict[str, list[str]] = {}
    groups_b: dict[str, list[str]] = {}
    for names, groups in ((only_a, groups_a), (only_b, groups_b)):
        for n in names:
            key = base(n)
            if key is not None:
                groups.setdefault(key, []).append(n)
    partner: dict[str, str] = {}
    for key, xs in groups_a.items():
        ys = groups_b.get(key, [])
        if len(xs) == len(ys):
            partner.update(zip(xs, ys))
    taken = set(partner.values())
    out: list[tuple[str | None, str | None]] = [(n, n if n in sb else partner.get(n)) for n in a]
    out += [(None, n) for n in only_b if n not in taken]
    return out


def diff_builds(a: dict[str, KernelSass], b: dict[str, KernelSass]) -> tuple[KernelDiff, ...]:
    """One KernelDiff per kernel of either build, in a's order then b's extra ones (pair_kernels)."""
    return tuple(diff_kernel(a.get(x) if x else None, b.get(y) if y else None)
                 for x, y in pair_kernels(list(a), list(b)))

"""ptxas's resource report (`nvcc -Xptxas -v`) read into one record per kernel: registers,
barriers, static shared memory, constant memory, stack and spills."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class KernelResources:
    source: str
    mangled: str
    name: str  # demangled (the mangled name when no demangler was found)
    arch: str
    registers: int | None
    barriers: int | None
    smem_static: int  # bytes of static shared memory (dynamic shared memory is set at launch)
    cmem: int | None
    stack: int | None
    spill_stores: int | None
    spill_loads: int | None

    def to_json(self) -> dict:
        return asdict(self)

    def short_name(self, width: int = 110) -> str:
        return short_kernel_name(self.name, width)


def short_kernel_name(name: str, width: int = 110) -> str:
    """The demangled name without `void` and the parameter list (the template arguments are
    what tell the instantiations apart)."""
    n = name
    if n.startswith("void "):
        n = n[5:]
    if n.endswith(")"):
        depth = 0
        for i in range(len(n) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(n[i], 0)
            if depth == 0:
                n = n[:i]
                break
    if len(n) <= width:
        return n
    # Keep both ends: the kernel's name and its last template arguments (often the flags
    # that tell instantiations apart, e.g. FA2's Is_even_MN / Is_even_K).
    head = width * 3 // 5
    return n[:head] + "…" + n[len(n) - (width - head - 1):]


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(.*)")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def _entries(log: str) -> dict[str, dict]:
    """mangled entry name -> its numbers, in the order ptxas compiled them. `Function
    properties` lines of non-entry functions (device helpers) are skipped."""
    entries: dict[str, dict] = {}
    current = props_for = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current, props_for = m.group(1), None
            entries.setdefault(current, {"arch": m.group(2)})
        elif m := _PROPS.search(line):
            props_for = m.group(1)
        elif (m := _STACK.search(line)) and props_for in entries:
            entries[props_for].update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                                      spill_loads=int(m.group(3)))
        elif (m := _USED.search(line)) and current is not None:
            rest = m.group(3) or ""
            sm, cm = _SMEM.search(rest), _CMEM.search(rest)
            entries[current].update(registers=int(m.group(1)),
                                    barriers=int(m.group(2)) if m.group(2) else 0,
                                    smem_static=int(sm.group(1)) if sm else 0,
                                    cmem=int(cm.group(1)) if cm else None)
    return entries


def parse_ptxas(log: str, source: str = "", env: Mapping[str, str] | None = None) -> list[KernelResources]:
    """Per entry (__global__) function of one translation unit; names demangled with the
    cu++filt / c++filt found on `env`'s PATH (left mangled without `env` or a demangler)."""
    entries = _entries(log)
    names = demangle(list(entries), env) if env is not None else {}
    return [KernelResources(
        source=source, mangled=mangled, name=names.get(mangled, mangled), arch=e.get("arch", ""),
        registers=e.get("registers"), barriers=e.get("barriers"), smem_static=e.get("smem_static", 0),
        cmem=e.get("cmem"), stack=e.get("stack"), spill_stores=e.get("spill_stores"),
        spill_loads=e.get("spill_loads")) for mangled, e in entries.items()]


def demangle(names: list[str], env: Mapping[str, str]) -> dict[str, str]:
    path = env.get("PATH", os.defpath)
    tool = shutil.which("cu++filt", path=path) or shutil.which("c++filt", path=path)
    if not names or not tool:
        return {n: n for n in names}
    try:
        res = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30)
        out = res.stdout.splitlines()
        if len(out) == len(names):
            return dict(zip(names, out))
    except (OSError, subprocess.SubprocessError):
        pass
    return {n: n for n in names}

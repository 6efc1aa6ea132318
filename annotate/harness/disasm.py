"""SASS from what nvcc produced: `cuobjdump -sass` for objects (and cubins), `nvdisasm` for
cubins when the source lines are wanted (`-g -gi`: each instruction group is preceded by its
file and line and the lines it was inlined at, innermost first).

The tools come from annotate.harness.toolchain.find_binary_tools (the toolkit's, or pip's
nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm wheels). cuobjdump runs nvdisasm itself; it is
told where that is through its own environment, never through ours.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from annotate.errors import AnnotateError
from annotate.harness.toolchain import BinaryTools


def disassemble(binary: Path, tools: BinaryTools, *, line_info: bool = False) -> str:
    """The SASS text of every kernel in an object (.o) or cubin (.cubin).

    `line_info` needs a cubin compiled with `-lineinfo` (annotate.harness.nvcc.compile_only
    with output="cubin", extra_flags=["-lineinfo"]); without it nvdisasm prints no lines."""
    binary = Path(binary)
    if not binary.is_file():
        raise AnnotateError(f"{binary}: no such object or cubin")
    if line_info:
        if binary.suffix != ".cubin":
            raise AnnotateError(f"{binary}: source lines come from a cubin (compile with -cubin -lineinfo)")
        cmd = [str(tools.nvdisasm), "-g", "-gi", "-c", str(binary)]
        env = None
    else:
        cmd = [str(tools.cuobjdump), "-sass", str(binary)]
        env = {"NVDISASM_PATH": str(tools.nvdisasm), "PATH": str(tools.nvdisasm.parent)}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        why = (res.stderr or res.stdout).strip().splitlines()
        raise AnnotateError(f"{binary}: {Path(cmd[0]).name} failed: {why[0] if why else f'exit {res.returncode}'}")
    return res.stdout

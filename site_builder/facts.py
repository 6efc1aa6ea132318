"""How auto-detected memory facts look: a label, a two-letter marker and a colour class.

A data table, like the index's rules: a new fact kind needs no code here (it gets initials
and a colour from a stable hash), but a row in this table gives it a better label.
"""

from __future__ import annotations

import hashlib
import re

# kind -> (marker, legend label, colour class)
FACT_STYLES: dict[str, tuple[str, str, str]] = {
    # the kinds of annotate/index/rules/memory.yaml
    "shared-static": ("S", "__shared__ array (static)", "fc1"),
    "shared-dynamic": ("S*", "extern __shared__ (dynamic shared memory)", "fc1"),
    "cp-async": ("CA", "cp.async global → shared copy", "fc2"),
    "cp-async-group": ("CG", "cp.async commit / wait (pipeline stage)", "fc2"),
    "tma": ("TM", "TMA bulk copy", "fc2"),
    "barrier": ("B", "barrier (__syncthreads, bar.sync, …)", "fc3"),
    "warp-shuffle": ("SH", "warp shuffle", "fc4"),
    "tensor-core": ("MM", "tensor cores (mma, ldmatrix, wgmma)", "fc5"),
    "vector-access": ("V", "vectorised load / store", "fc6"),
    "atomic": ("AT", "atomic operation", "fc7"),
    "inline-ptx": ("PTX", "inline PTX", "fc8"),
}
_PALETTE = ("fc1", "fc2", "fc3", "fc4", "fc5", "fc6", "fc7", "fc8")


def fact_style(kind: str) -> tuple[str, str, str]:
    """(marker, label, colour class) of a fact kind."""
    if kind in FACT_STYLES:
        return FACT_STYLES[kind]
    words = [w for w in re.split(r"[^A-Za-z0-9]+", kind) if w]
    abbr = "".join(w[0] for w in words[:2]).upper() or "?"
    colour = _PALETTE[int(hashlib.sha1(kind.encode()).hexdigest(), 16) % len(_PALETTE)]
    return abbr, kind.replace("-", " "), colour

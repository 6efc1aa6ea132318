"""How auto-detected memory facts look: a label, a two-letter marker and a colour class.

A data table, like the index's rules: a new fact kind needs no code here (it gets initials
and a colour from a stable hash), but a row in this table gives it a better label.
"""

from __future__ import annotations

import hashlib
import re

# kind -> (marker, legend label, colour class)
FACT_STYLES: dict[str, tuple[str, str, str]] = {
    "shared-static": ("S", "__shared__ array (static)", "fa"),
    "shared-dynamic": ("S*", "extern __shared__ (dynamic shared memory)", "fa"),
    "shared": ("S", "shared memory", "fa"),
    "cp-async": ("CA", "cp.async global → shared copy", "fb"),
    "tma": ("TM", "TMA bulk copy", "fb"),
    "barrier": ("B", "barrier / __syncthreads", "fc"),
    "sync": ("B", "barrier / __syncthreads", "fc"),
    "shuffle": ("SH", "warp shuffle", "fd"),
    "warp-shuffle": ("SH", "warp shuffle", "fd"),
    "mma": ("MM", "tensor-core mma", "fe"),
    "ldmatrix": ("LM", "ldmatrix shared → registers", "fe"),
    "vector-load": ("V", "vectorised global load/store", "ff"),
    "vector": ("V", "vectorised global load/store", "ff"),
    "atomic": ("AT", "atomic operation", "fg"),
    "global-load": ("G", "global memory access", "ff"),
    "register": ("R", "register array", "fh"),
}
_PALETTE = ("fa", "fb", "fc", "fd", "fe", "ff", "fg", "fh")


def fact_style(kind: str) -> tuple[str, str, str]:
    """(marker, label, colour class) of a fact kind."""
    if kind in FACT_STYLES:
        return FACT_STYLES[kind]
    words = [w for w in re.split(r"[^A-Za-z0-9]+", kind) if w]
    abbr = "".join(w[0] for w in words[:2]).upper() or "?"
    colour = _PALETTE[int(hashlib.sha1(kind.encode()).hexdigest(), 16) % len(_PALETTE)]
    return abbr, kind.replace("-", " "), colour

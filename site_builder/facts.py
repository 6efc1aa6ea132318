"""How auto-detected memory facts look: a short marker and a colour class, per fact kind.

A data table, like the index's rules: a new fact kind needs no code here (it gets initials and a
colour from a stable hash, and its kind as its label), but a row in this table gives it a
better marker, and an entry `fact.<kind>` in the message catalogue (messages.yaml) a label in
both languages.
"""

from __future__ import annotations

import hashlib
import re

from site_builder.model import Msg

# kind -> (marker, colour class); the kinds of annotate/index/rules/memory.yaml
FACT_STYLES: dict[str, tuple[str, str]] = {
    "shared-static": ("S", "fc1"),
    "shared-dynamic": ("S*", "fc1"),
    "cp-async": ("CA", "fc2"),
    "cp-async-group": ("CG", "fc2"),
    "tma": ("TM", "fc2"),
    "barrier": ("B", "fc3"),
    "warp-shuffle": ("SH", "fc4"),
    "tensor-core": ("MM", "fc5"),
    "vector-access": ("V", "fc6"),
    "atomic": ("AT", "fc7"),
    "inline-ptx": ("PTX", "fc8"),
}
_PALETTE = ("fc1", "fc2", "fc3", "fc4", "fc5", "fc6", "fc7", "fc8")


def fact_style(kind: str) -> tuple[str, str]:
    """(marker, colour class) of a fact kind."""
    if kind in FACT_STYLES:
        return FACT_STYLES[kind]
    words = [w for w in re.split(r"[^A-Za-z0-9]+", kind) if w]
    abbr = "".join(w[0] for w in words[:2]).upper() or "?"
    colour = _PALETTE[int(hashlib.sha1(kind.encode()).hexdigest(), 16) % len(_PALETTE)]
    return abbr, colour


def fact_label(kind: str) -> str | Msg:
    """The legend's words for a fact kind: its catalogue message, else the kind itself."""
    from site_builder.i18n import catalogue

    mid = "fact." + kind
    return Msg(mid) if mid in catalogue() else kind.replace("-", " ")

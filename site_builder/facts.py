"""How auto-detected memory facts look: a short marker and a colour class, per fact kind.

A data table, like the index's rules: a new fact kind needs no code here (it gets initials and a
colour from a stable hash, and its kind as its label), but a row in this table gives it a
better marker, and an entry `fact.<kind>` in the message catalogue (messages.yaml) a label in
both languages.
"""

from __future__ import annotations

import hashlib
import re
import string
from functools import lru_cache
from pathlib import Path

from site_builder.model import Label, Msg

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


# ---- a fact's words in Chinese ------------------------------------------------------------------
# The index's rules write a fact's detail from an English template; fact_words.yaml gives each
# rule's template in Chinese. A detail is read back through its rule's English template (its
# placeholders become groups) and the Chinese template filled with what they matched.

FACT_WORDS = Path(__file__).parent / "fact_words.yaml"


@lru_cache(maxsize=1)
def _fact_templates() -> dict[str, tuple[re.Pattern, str, str]]:
    from annotate.index.facts import rules
    from annotate.yamlpos import decode, load_yaml, read_bytes

    zh = load_yaml(decode(read_bytes(FACT_WORDS))).data or {}
    out = {}
    for r in rules():
        parts = list(string.Formatter().parse(r.detail))
        rx = "".join(re.escape(lit) + (f"(?P<{name}>.*)" if name else "") for lit, name, _, _ in parts)
        out[r.id] = (re.compile(rx + r"\Z", re.S), str(zh.get(r.id, "")), r.detail)
    return out


def has_words(template: str) -> bool:
    """Whether a detail template says something in words besides its placeholders and code
    (`inline PTX {m}` does, `cp_async::{m}` and `vec_t::{m}` do not)."""
    lits = " ".join(lit for lit, _, _, _ in string.Formatter().parse(template))
    words = [t for t in re.split(r"[\s()]+", lits) if t and not re.search(r"[_.]|::", t)]
    return any(re.search(r"[A-Za-z]{2,}", t) for t in words)


def fact_words(rule: str, detail: str) -> str | Label:
    """A fact's detail in both languages: a Label when its rule has a Chinese template and the
    detail reads back through the English one (a detail cut at its length limit may not);
    the detail itself, the same in both, when its template is only code; else the English, its
    Chinese missing (the page marks it)."""
    got = _fact_templates().get(rule)
    if got is None:
        return Label(detail, None)
    rx, zh, template = got
    m = rx.match(detail)
    if not zh:
        return detail if m is not None and not has_words(template) else Label(detail, None)
    if m is None:
        return Label(detail, None)
    return Label(detail, zh.format(**m.groupdict()))

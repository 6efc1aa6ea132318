"""Body fingerprints: 16 hex chars of sha256 over the body with comments removed and
whitespace normalised, so that reformatting or re-commenting a function does not make a
reviewer's note stale, while any change of code does."""

from __future__ import annotations

import hashlib
import re

# One pass over the text: string/char literals are kept whole (a '//' inside a string is not a
# comment); comments are dropped.
_C_TOKENS = re.compile(
    r'(?P<str>"(?:\\.|[^"\\\n])*")|(?P<chr>\'(?:\\.|[^\'\\\n])*\')'
    r"|(?P<line>//[^\n]*)|(?P<block>/\*.*?\*/)",
    re.S,
)
_PY_TOKENS = re.compile(
    r'(?P<str>"""(?:\\.|.)*?"""|\'\'\'(?:\\.|.)*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')'
    r"|(?P<line>#[^\n]*)",
    re.S,
)
_WS = re.compile(r"\s+")
# A space survives only between two word characters ("unsigned int"), never next to punctuation.
_SPACE_NEXT_TO_PUNCT = re.compile(r" (?=\W)|(?<=\W) ")


def strip_comments(text: str, language: str) -> str:
    if ("#" if language == "python" else "/") not in text:
        return text  # no comment can start here: strings and chars are kept as they are anyway
    pattern = _PY_TOKENS if language == "python" else _C_TOKENS

    def keep(m: re.Match) -> str:
        return m.group(0) if m.group("str") is not None or (m.lastgroup == "chr") else " "

    return pattern.sub(keep, text)


def normalise(body_text: str, language: str) -> str:
    text = strip_comments(body_text, language)
    text = _WS.sub(" ", text).strip()
    return _SPACE_NEXT_TO_PUNCT.sub("", text)


def fingerprint(body_text: str, language: str) -> str:
    """16 hex chars of sha256 of the normalised body (comments removed, whitespace collapsed)."""
    return hashlib.sha256(normalise(body_text, language).encode("utf-8")).hexdigest()[:16]

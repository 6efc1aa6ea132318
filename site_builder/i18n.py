"""The site's languages: one message catalogue (messages.yaml) for every string the site itself
shows, in English and Chinese.

A page carries both languages and shows one: every message is printed once per language (the
`t`/`s` macros of macros.html.jinja2), CSS hides the other (assets/base.css), and
assets/lang.js picks the language before the page is drawn (`?lang=`, then the remembered
choice, then `navigator.languages`). One page per file serves both languages, so the site is
rendered once.

A message is a string with `{name}` placeholders filled from `model.Msg.args`; English counts
pick a word with `{name:one|other}` ("{n} {n:caller|callers}": the word for 1, the word for any
other number). A message with no text in one language falls back to the other, marked
(tests/test_site_i18n.py keeps the catalogue complete).
"""

from __future__ import annotations

import json
import re
import string
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from site_builder.model import Label, Msg

LANGS = ("en", "zh")
DEFAULT_LANG = "zh"  # what a page shows before its script runs, or without scripts
CATALOGUE = Path(__file__).parent / "messages.yaml"
# Messages the scripts need (search results), written to assets/messages.js: ids with these prefixes.
SCRIPT_PREFIXES = ("js.", "kind.")

Entry = Mapping[str, str]
_PLURAL = re.compile(r"\{(\w+):([^{}|]*)\|([^{}]*)\}")


class CatalogueError(ValueError):
    pass


@lru_cache(maxsize=1)
def catalogue() -> Mapping[str, Entry]:
    """id -> {lang: text | {one, other}}, checked: known languages, well-formed placeholders."""
    from annotate.yamlpos import YamlProblem, decode, load_yaml, read_bytes

    try:
        data = load_yaml(decode(read_bytes(CATALOGUE))).data
    except YamlProblem as p:
        raise CatalogueError(f"{CATALOGUE}:{p.line}:{p.column}: {p.message}") from None
    if not isinstance(data, dict):
        raise CatalogueError(f"{CATALOGUE}: a mapping of message ids is expected")
    for mid, entry in data.items():
        if not isinstance(entry, dict) or not set(entry) <= set(LANGS) or not entry:
            raise CatalogueError(f"{CATALOGUE}: {mid}: a mapping with keys among {LANGS} is expected")
        for lang, form in entry.items():
            if not isinstance(form, str):
                raise CatalogueError(f"{CATALOGUE}: {mid}.{lang}: text expected")
            placeholders(form)  # raises on a malformed format string
    return data


def placeholders(text: str, plurals: bool = True) -> set[str]:
    """The argument names a message uses (with `plurals`, those it only counts by too)."""
    names = {m.group(1) for m in _PLURAL.finditer(text)} if plurals else set()
    try:
        return names | {f for _, f, _, _ in string.Formatter().parse(_PLURAL.sub("", text)) if f}
    except ValueError as exc:
        raise CatalogueError(f"{CATALOGUE}: bad placeholder in {text!r}: {exc}") from None


def text(m: Msg, lang: str) -> str | None:
    """The message in `lang`, placeholders filled; None when it has no text in that language."""
    entry = catalogue().get(m.id)
    if entry is None:
        raise CatalogueError(f"no message '{m.id}' in {CATALOGUE.name}")
    form = entry.get(lang)
    if form is None:
        return None
    args = dict(m.args)
    form = _PLURAL.sub(lambda p: (p.group(2) if args[p.group(1)] == 1 else p.group(3)).replace("{", "{{")
                       .replace("}", "}}"), form)
    return form.format(**args)


@lru_cache(maxsize=8192)
def pair(x: str | Msg | Label) -> tuple[str | None, str | None]:
    """(English, Chinese) of a message or a label, either None when it has no text in that
    language; a plain string (data) is the same in both."""
    if isinstance(x, str):
        return x, x
    if isinstance(x, Label):
        return x.en or None, x.zh or None
    return text(x, "en"), text(x, "zh")


def one(mid: str, lang: str) -> str:
    """A message with no placeholders in one language (falling back to the other)."""
    m = Msg(mid)
    return text(m, lang) or text(m, LANGS[1 - LANGS.index(lang)]) or ""


def script_messages() -> str:
    """The messages the scripts need (ids under SCRIPT_PREFIXES, by full id), as a script
    assigning a global: loadable from file://, where fetch() is refused."""
    data = {lang: {mid: entry.get(lang) or next(iter(entry.values())) for mid, entry in sorted(catalogue().items())
                   if mid.startswith(SCRIPT_PREFIXES)} for lang in LANGS}
    return "window.ANNOTATE_MESSAGES=" + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + ";\n"

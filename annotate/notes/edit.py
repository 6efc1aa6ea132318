"""Editing annotation files without disturbing what reviewers wrote.

Edits are made on the text at the positions the YAML reader reports (so comments, quoting,
blank lines and indentation stay byte-for-byte), and verified by reading the result back;
where the layout is unusual (flow style) ruamel.yaml's round-trip dumper does the edit.
The file itself is read and written by `EditableText`: a byte-order mark and CRLF line ends
are set aside before the edit and put back after it, and the write goes to the file a link
points to, keeping its permission bits (annotate.atomic.rewrite_atomic).
"""

from __future__ import annotations

import codecs
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.atomic import rewrite_atomic
from annotate.yamlpos import YamlProblem, decode, load_yaml, read_bytes

# A YAML document end marker on its own line (`...`, maybe with a comment).
DOCUMENT_END = re.compile(r"^\.\.\.(?:\s|#|$)")


@dataclass(frozen=True)
class EditableText:
    """An annotation file's text as the edits see it: "\n" line ends, no BOM; how the file had
    them is kept, and `encode` gives the edited text back in the file's own form."""

    text: str
    bom: bool = False
    crlf: bool = False  # every line ended in "\r\n"

    @classmethod
    def read(cls, path: Path) -> "EditableText":
        """Raises YamlProblem (not a regular file, too large, not UTF-8)."""
        raw = read_bytes(path)
        text = decode(raw)
        crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
        return cls(text.replace("\r\n", "\n") if crlf else text, raw.startswith(codecs.BOM_UTF8), crlf)

    def encode(self, text: str) -> bytes:
        if self.crlf:
            text = text.replace("\n", "\r\n")
        return (codecs.BOM_UTF8 if self.bom else b"") + text.encode("utf-8")

    def write(self, path: Path, text: str) -> Path:
        """Write `text` over `path` in the file's form (through a link, mode kept)."""
        return rewrite_atomic(path, self.encode(text))

_SCALAR = re.compile(r"""'(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^\s#,}\]]+""")


def _without(data: Any, name: str, key: str, section: str = "functions") -> Any:
    if not isinstance(data, dict):
        return data
    d = dict(data)
    f = dict(d.get(section) or {})
    if isinstance(f.get(name), dict):
        g = dict(f[name])
        g.pop(key, None)
        f[name] = g
    elif f.get(name) is None and name in f:
        f[name] = {}
    d[section] = f
    return d


def _verify(old: str, new: str, name: str, key: str, value: Any, section: str = "functions") -> bool:
    try:
        a, b = load_yaml(old).data, load_yaml(new).data
    except YamlProblem:
        return False
    try:
        if b[section][name][key] != value:
            return False
    except (KeyError, TypeError):
        return False
    return _without(a, name, key, section) == _without(b, name, key, section)


def fp_scalar(fp: str) -> str:
    """The fingerprint as a YAML scalar: plain, or quoted where YAML would read a number."""
    try:
        plain = load_yaml(f"x: {fp}\n").data["x"]
    except YamlProblem:
        plain = None
    return fp if plain == fp else f'"{fp}"'


def set_fingerprint(text: str, name: str, fp: str, section: str = "functions") -> str | None:
    """`text` with <section>.<name>.fingerprint set to `fp` (section: functions, types or
    macros); None if it could not be done."""
    try:
        loaded = load_yaml(text)
    except YamlProblem:
        return None
    lines = text.split("\n")
    fpath = (section, name)
    new = None
    if fpath + ("fingerprint",) in loaded.values:
        line, col = loaded.values[fpath + ("fingerprint",)]
        src = lines[line - 1]
        m = _SCALAR.match(src, col - 1)
        if m:
            lines[line - 1] = src[: m.start()] + fp_scalar(fp) + src[m.end():]
            new = "\n".join(lines)
    elif fpath in loaded.keys:
        kline, kcol = loaded.keys[fpath]
        value = loaded.data[section][name]
        if isinstance(value, dict) and value:
            first = next(iter(value))
            cline, ccol = loaded.keys[fpath + (first,)]
            if cline > kline:
                lines.insert(kline, " " * (ccol - 1) + f"fingerprint: {fp_scalar(fp)}")
                new = "\n".join(lines)
        elif value is None and lines[kline - 1].rstrip().endswith(":"):
            lines.insert(kline, " " * (kcol - 1 + 2) + f"fingerprint: {fp_scalar(fp)}")
            new = "\n".join(lines)
    if new is not None and _verify(text, new, name, "fingerprint", fp, section):
        return new
    return _ruamel_set(text, name, "fingerprint", fp, section)


def roundtrip_yaml():
    from ruamel.yaml import YAML

    y = YAML(typ="rt", pure=True)
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _ruamel_set(text: str, name: str, key: str, value: Any, section: str = "functions") -> str | None:
    y = roundtrip_yaml()
    try:
        doc = y.load(io.StringIO(text))
        fn = doc[section][name]
        if fn is None:
            from ruamel.yaml.comments import CommentedMap

            fn = doc[section][name] = CommentedMap()
        if hasattr(fn, "fa"):
            fn.fa.set_block_style()
        if key not in fn:
            fn.insert(0, key, value)
        else:
            fn[key] = value
        out = io.StringIO()
        y.dump(doc, out)
        new = out.getvalue()
    except Exception:
        return None
    return new if _verify(text, new, name, key, value, section) else None

"""Safe YAML reading that remembers where every key and value was written: the one YAML reader for
files people write (annotation files, course maps, the pin file).

PyYAML composes the document into nodes (which carry line/column marks; libyaml's C composer
where available: ruamel's pure-Python composer was most of `annotate check`'s time); we build plain
Python values from those nodes ourselves, so no tag can ever construct an object, and we
can refuse what an annotation file has no use for (tags, aliases, merge keys, complex keys,
duplicate keys) with a precise position. Positions are 1-based (line, column).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64

Path_ = tuple  # a key path: ("functions", "flashinfer::X", "memory", 0, "what")

_STD = "tag:yaml.org,2002:"


class YamlProblem(Exception):
    """The document cannot be read as an annotation YAML; carries a 1-based position."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 code: str = "yaml-syntax"):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.code = code


@dataclass
class Loaded:
    data: Any
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)  # where each value starts
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)  # where each mapping key is

    def where(self, path: Path_, key: bool = False) -> tuple[int, int] | None:
        """Position of the value at `path` (or of its key), else of the nearest enclosing one."""
        p = tuple(path)
        if key and p in self.keys:
            return self.keys[p]
        while True:
            if p in self.values:
                return self.values[p]
            if p in self.keys:
                return self.keys[p]
            if not p:
                return None
            p = p[:-1]


def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; YamlProblem otherwise.

    Never reads more than `limit` + 1 bytes and never opens what is not a regular file, so a
    directory, a FIFO or a link to /dev/zero named like a YAML file is one clear problem.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise YamlProblem(f"cannot read: {exc.strerror or exc}", code="io") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise YamlProblem(f"cannot read: {kind}", code="io")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise YamlProblem(f"cannot read: {exc.strerror or exc}", code="io") from None
    if len(raw) > limit:
        raise YamlProblem(f"file is larger than {limit} bytes, the limit for a YAML file here", 1, 1,
                          code="too-large")
    return raw


def decode(raw: bytes) -> str:
    """UTF-8 (with or without BOM); a bad byte raises YamlProblem at its line/column."""
    if len(raw) > MAX_BYTES:
        raise YamlProblem(f"file is {len(raw)} bytes; annotation files are limited to {MAX_BYTES}",
                          1, 1, code="too-large")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise YamlProblem(f"not UTF-8: byte 0x{raw[exc.start]:02x} cannot be decoded", line, col,
                          code="encoding") from None


def _tag(node) -> str:
    t = node.tag
    t = getattr(t, "value", t)
    return str(t) if t is not None else ""


def _pos(node) -> tuple[int, int]:
    m = node.start_mark
    return (m.line + 1, m.column + 1)


def _kind(tag: str) -> str:
    return tag[len(_STD):] if tag.startswith(_STD) else tag


def _scalar(node) -> Any:
    kind = _kind(_tag(node))
    v = node.value
    if kind == "str":
        return v
    if kind == "null":
        return None
    if kind == "bool":
        return v.strip().lower() in ("true", "yes", "on", "y")
    if kind == "int":
        s = v.replace("_", "").strip()
        try:
            if s.lower().startswith(("0o", "-0o", "+0o", "0x", "-0x", "+0x", "0b", "-0b", "+0b")):
                return int(s, 0)
            return int(s)
        except ValueError:
            return v
    if kind == "float":
        s = v.replace("_", "").strip().lower()
        try:
            if s.endswith((".inf",)):
                return float("-inf") if s.startswith("-") else float("inf")
            if s == ".nan":
                return float("nan")
            return float(s)
        except ValueError:
            return v
    # timestamps and anything else plain: keep the text the reviewer wrote
    return v


_LOADER = None


def _core_schema_loader():
    """A safe loader that resolves plain scalars by YAML 1.2's core schema, as editors do.

    PyYAML follows YAML 1.1, where `no`, `on`, `12:30` and `0777` are not text: a reviewer's
    `sync: no` would become a boolean. Only the implicit resolvers change; parsing is libyaml's.
    """
    global _LOADER
    if _LOADER is None:
        import re

        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        loader = type("CoreSchemaLoader", (base,), {})
        loader.yaml_implicit_resolvers = {}
        for tag, rx, first in (
            ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
            ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
            ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                      r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+.0123456789"),
            ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
            ("merge", r"^(?:<<)$", "<"),
        ):
            loader.add_implicit_resolver(_STD + tag, re.compile(rx), list(first))
        _LOADER = loader
    return _LOADER


def load_yaml(text: str) -> Loaded:
    """Parse one YAML document into plain values + positions. Raises YamlProblem."""
    root = _compose(text)
    out = Loaded(data=None)
    out.data = _Builder(out).build(root, (), 0)
    return out


def _compose(text: str):
    """The document's node tree (libyaml's composer, YAML 1.2 core schema); YamlProblem on syntax."""
    import yaml
    from yaml import MarkedYAMLError, YAMLError

    try:
        root = yaml.compose(text, Loader=_core_schema_loader())
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = " ".join(x for x in (exc.context, exc.problem) if x) or str(exc).splitlines()[0]
        if mark is not None:
            raise YamlProblem(f"YAML syntax error: {msg}", mark.line + 1, mark.column + 1) from None
        raise YamlProblem(f"YAML syntax error: {msg}") from None
    except YAMLError as exc:
        # ReaderError (non-printable characters) and friends carry a position in their text
        pos = getattr(exc, "position", None)
        line = col = None
        if isinstance(pos, int):
            before = text[:pos]
            line = before.count("\n") + 1
            col = pos - (before.rfind("\n") + 1) + 1
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise YamlProblem(f"YAML error: {first}", line, col) from None
    except RecursionError:
        raise YamlProblem("YAML nesting is too deep", 1, 1, code="yaml-too-deep") from None
    if root is None:
        raise YamlProblem("the file holds no YAML document", 1, 1, code="yaml-empty")
    return root


class _Builder:
    """Plain values from composed nodes, recording positions in `out`; refuses what an annotation
    file has no use for (tags, aliases, merge keys, complex or duplicate keys, deep nesting)."""

    def __init__(self, out: Loaded):
        self.out = out
        self.seen: set[int] = set()

    def build(self, node, path: Path_, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise YamlProblem(f"nesting deeper than {MAX_DEPTH} levels", *_pos(node), code="yaml-too-deep")
        if id(node) in self.seen:
            raise YamlProblem("the value anchored here (&name) is reused through an alias (*name); aliases are not allowed in annotation files, repeat the text",
                              *_pos(node), code="yaml-alias")
        self.seen.add(id(node))
        tag = _tag(node)
        kind = type(node).__name__
        self.out.values[path] = _pos(node)
        if tag and not tag.startswith(_STD):
            raise YamlProblem(f"YAML tag '{tag}' is not allowed in annotation files", *_pos(node),
                              code="yaml-tag")
        want = {"ScalarNode": ("str", "null", "bool", "int", "float", "timestamp"), "SequenceNode": ("seq",),
                "MappingNode": ("map",)}.get(kind)
        if want is None:
            raise YamlProblem(f"unexpected YAML node {kind}", *_pos(node))
        if _kind(tag) not in want:
            raise YamlProblem(f"YAML type '!!{_kind(tag)}' is not allowed here", *_pos(node), code="yaml-tag")
        if kind == "ScalarNode":
            return _scalar(node)
        if kind == "SequenceNode":
            return [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        return self.mapping(node, path, depth)

    def mapping(self, node, path: Path_, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for knode, vnode in node.value:
            ktag = _tag(knode)
            if type(knode).__name__ != "ScalarNode":
                raise YamlProblem("mapping keys must be plain text, not lists or mappings",
                                  *_pos(knode), code="yaml-complex-key")
            if _kind(ktag) == "merge":
                raise YamlProblem("merge keys (<<) are not allowed in annotation files",
                                  *_pos(knode), code="yaml-alias")
            if ktag and not ktag.startswith(_STD):
                raise YamlProblem(f"YAML tag '{ktag}' is not allowed in annotation files",
                                  *_pos(knode), code="yaml-tag")
            key = str(knode.value)
            if key in result:
                first = self.out.keys.get(path + (key,))
                where = f" (first at line {first[0]})" if first else ""
                raise YamlProblem(f"duplicate key '{key}'{where}", *_pos(knode), code="duplicate-key")
            self.out.keys[path + (key,)] = _pos(knode)
            result[key] = self.build(vnode, path + (key,), depth + 1)
        return result

"""Resolved annotation files and course maps, cached as JSON by everything resolving them reads.

`load_annotations` resolves every file under annotations/ against the index; most commands run
with none of them changed since the last one, and a note edit changes one. A file's entry is
keyed by its bytes, where it is (its name in messages, its place under the root), the index's
content key, the pin file and fetch records, and the code of the stages that read it: when
all are as they were, the entry *is* what resolving the file would give, so it is used instead.

Data only: an entry is JSON, decoded field by field against the model's type hints into the
model's own frozen dataclasses (nothing else is ever built, no code runs); an entry that does
not decode is a miss, recomputed and written again. Every part of the cache is safe to delete.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import types
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any

import annotate
from annotate.atomic import write_atomic
from annotate.config import Config
from annotate.errors import Diagnostic
from annotate.notes import model as M

CACHE_VERSION = "1"


class _Bad(ValueError):
    """An entry that is not what this code writes."""


def encode(v: Any) -> Any:
    """A model value as JSON data: dataclasses as objects of their init fields, tuples as lists."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v) if f.init}
    if isinstance(v, (tuple, list)):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return {k: encode(x) for k, x in v.items()}
    if v is None or type(v) in (str, int, bool, float):
        return v
    raise TypeError(f"cannot cache a {type(v).__name__}")


def decode(tp: Any, v: Any) -> Any:
    """JSON data as a value of type `tp` (a model dataclass, X | None, tuple[X, ...],
    dict[str, X], str, int, bool, float); _Bad when it is not one."""
    return _decoder(tp)(v)


@lru_cache(maxsize=None)
def _decoder(tp: Any):
    """A function decoding JSON data as `tp`, made once per type from its hints."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        rest = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(rest) != 1 or len(typing.get_args(tp)) != 2:
            raise _Bad(f"unsupported union {tp}")
        inner = _decoder(rest[0])
        return lambda v: None if v is None else inner(v)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise _Bad(f"unsupported tuple {tp}")
        item = _decoder(args[0])

        def tuple_of(v):
            if type(v) is not list:
                raise _Bad(f"expected a list for {tp}")
            return tuple([item(x) for x in v])
        return tuple_of
    if origin is dict:
        kt, vt = typing.get_args(tp)
        if kt is not str:
            raise _Bad(f"unsupported dict {tp}")
        value = _decoder(vt)

        def dict_of(v):
            if type(v) is not dict:
                raise _Bad(f"expected an object for {tp}")
            return {k: value(x) for k, x in v.items()}
        return dict_of
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, vars(sys.modules[tp.__module__]))
        fields = [(f.name, hints[f.name]) for f in dataclasses.fields(tp) if f.init]
        names = {n for n, _ in fields}
        made: list = []  # the fields' decoders, made on first use (a type may hold itself)

        def instance(v):
            if type(v) is not dict or v.keys() != names:
                raise _Bad(f"expected the fields of {tp.__name__}")
            if not made:
                made.extend((n, _decoder(h)) for n, h in fields)
            return tp(**{n: d(v[n]) for n, d in made})
        return instance
    if tp in (str, int, bool, float):
        def scalar(v):
            if type(v) is not tp:
                raise _Bad(f"expected {tp.__name__}")
            return v
        return scalar
    raise _Bad(f"unsupported type {tp}")


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """The code that reads annotation files (all of annotate/, to be safe: a few hundred kB)."""
    h = hashlib.sha256(CACHE_VERSION.encode())
    root = Path(annotate.__file__).parent
    for p in sorted(root.rglob("*.py")):
        if "__pycache__" not in p.parts:
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


class NotesCache:
    """The cache of one load: what every file's key shares is taken once."""

    def __init__(self, config: Config, index, root: Path):
        from annotate.index.cache import may_write

        self.dir = config.notes_files_dir()
        # a cache someone made read-only stays untouched (the index's rule, which root obeys too)
        here = next((d for d in (self.dir, *self.dir.parents) if d.exists()), None)
        self.writable = here is not None and may_write(here)
        h = hashlib.sha256(_code_digest().encode())
        for part in (index.content_key(), os.path.abspath(root), os.getcwd(), str(config.repo_root),
                     str(config.schema_file)):
            h.update(f"{part}\0".encode("utf-8", "surrogateescape"))
        for p in [config.upstreams_file, *sorted(config.checkouts_dir().glob("*.fetch.json"))]:
            try:
                h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
            except OSError:
                h.update(p.name.encode() + b"\0-\0")
        self.shared = h.hexdigest()

    def _path(self, kind: str, p: Path) -> Path | None:
        """<dir>/<the file's name>-<its key>.json: one name per file, so a new entry replaces the
        file's old ones instead of piling up with every edit."""
        try:
            data = p.read_bytes()
        except OSError:
            return None
        name = hashlib.sha256(f"{kind}\0{os.path.abspath(p)}".encode("utf-8", "surrogateescape")).hexdigest()[:16]
        h = hashlib.sha256(f"{self.shared}\0".encode())
        h.update(data)
        return self.dir / f"{name}-{h.hexdigest()[:24]}.json"

    def get(self, kind: str, p: Path, tp: Any) -> tuple[Path | None, Any]:
        """(where file `p`'s entry is kept, its value of type `tp` or None)."""
        path = self._path(kind, p)
        if path is None:
            return None, None
        try:
            return path, decode(tp, json.loads(path.read_bytes()))
        except (OSError, ValueError, TypeError, RecursionError):
            return path, None

    def put(self, where: Path | None, kind: str, p: Path, value: Any) -> None:
        """Keep `value` for `p`, unless the file changed since `get` said `where` (the value may
        then be of another content); the file's older entries go."""
        if where is None or not self.writable or self._path(kind, p) != where:
            return
        try:
            write_atomic(where, json.dumps(encode(value), separators=(",", ":")))
            for old in self.dir.glob(where.name.split("-", 1)[0] + "-*.json"):
                if old != where:
                    old.unlink(missing_ok=True)
        except (OSError, TypeError):
            pass  # a cache that cannot be written only costs speed


@dataclasses.dataclass(frozen=True)
class CourseEntry:
    """A course map as read: the course (None when it does not read) and its problems."""

    course: M.Course | None
    diagnostics: tuple[Diagnostic, ...]

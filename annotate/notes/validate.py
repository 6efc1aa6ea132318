"""pydantic validation errors → Diagnostics at file:line:col naming the offending key."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from annotate.errors import Diagnostic
from annotate.notes.schema import TEXT_TAGS, Bilingual
from annotate.yamlpos import Loaded

_NONE = type(None)


def _strip(tp):
    """Remove Annotated wrappers and Optional's None."""
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            tp = get_args(tp)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not _NONE]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _is_text(tp) -> bool:
    tp = _strip(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return any(_strip(a) is Bilingual for a in get_args(tp))
    return False


def _child(tp, comp):
    tp = _strip(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        f = tp.model_fields.get(comp) if isinstance(comp, str) else None
        return f.annotation if f is not None else None
    origin = get_origin(tp)
    if origin is list and isinstance(comp, int):
        return get_args(tp)[0]
    if origin is dict and isinstance(comp, str):
        return get_args(tp)[1]
    return None


def walk(root: type, loc: tuple) -> tuple[tuple, Any, bool]:
    """(the YAML key path without pydantic's union tags, the type there, is it a text field)."""
    tp: Any = root
    clean: list = []
    text = False
    for comp in loc:
        if tp is not None and _is_text(tp) and comp in TEXT_TAGS:
            tp, text = (str if comp == "text" else Bilingual), True
            continue
        text = False
        clean.append(comp)
        tp = _child(tp, comp) if tp is not None else None
    if tp is not None and _is_text(tp):
        text = True
    return tuple(clean), tp, text


def key_path(path: tuple) -> str:
    out = ""
    for comp in path:
        if isinstance(comp, int):
            out += f"[{comp}]"
        else:
            out += ("." if out else "") + str(comp)
    return out or "(top level)"


def describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    return type(value).__name__


def _fields_of(tp) -> list[str]:
    tp = _strip(tp)
    if _is_text(tp):
        return list(Bilingual.model_fields)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return list(tp.model_fields)
    return []


def did_you_mean(word: str, choices: list[str]) -> str | None:
    m = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not m:
        m = [c for c in choices if c.lower() == word.lower() or c.replace("_", "") == word.replace("_", "").replace("-", "")]
    return m[0] if m else None


def diagnostics(err: ValidationError, model: type[BaseModel], loaded: Loaded, file: str,
                prefix: tuple = (), symbol: str | None = None) -> list[Diagnostic]:
    """One Diagnostic per validation error; `prefix` is where `model` sits in the document."""
    out: list[Diagnostic] = []
    seen: set = set()
    for e in err.errors(include_url=False):
        path, tp, is_text = walk(model, tuple(e["loc"]))
        full = prefix + path
        etype = e["type"]
        value = e.get("input")
        code, key = "schema", False
        if etype == "extra_forbidden":
            parent_path, parent_tp, _ = walk(model, tuple(e["loc"])[:-1])
            allowed = _fields_of(parent_tp)
            name = str(full[-1]) if full else "?"
            where = key_path(prefix + parent_path)
            msg = f"unknown key '{name}' in {where}"
            guess = did_you_mean(name, allowed)
            msg += f"; did you mean '{guess}'?" if guess else (f" (allowed: {', '.join(allowed)})" if allowed else "")
            code, key = "unknown-key", True
        elif etype == "missing":
            name = str(full[-1]) if full else "?"
            msg = f"missing required key '{name}' in {key_path(full[:-1])}"
            full = full[:-1]
            code = "missing-key"
        elif is_text and etype in ("string_type", "model_type", "model_attributes_type", "dict_type"):
            msg = f"{key_path(full)}: expected Markdown text (a string) or {{en: ..., zh: ...}}, got {describe(value)}"
            code = "wrong-type"
        elif etype in ("string_type", "model_type", "model_attributes_type", "dict_type", "list_type",
                       "int_type", "bool_type", "float_type"):
            want = {"string_type": "text (a string)", "list_type": "a list", "int_type": "an integer",
                    "bool_type": "true or false", "float_type": "a number"}.get(etype, "a mapping")
            msg = f"{key_path(full)}: expected {want}, got {describe(value)}"
            if etype == "string_type" and isinstance(value, (bool, int, float)):
                msg += "; put the value in quotes"
            elif etype == "string_type" and value is None:
                msg += "; write the text after the colon or remove the key"
            code = "wrong-type"
        elif etype == "string_pattern_mismatch":
            last = full[-1] if full else ""
            if last == "fingerprint":
                msg = f"{key_path(full)}: a fingerprint is 16 lowercase hex digits, got {value!r}; run `annotate check --refresh` to write the current one"
            else:
                msg = f"{key_path(full)}: {value!r} is not a valid id (letters, digits, '-', '_', '.')"
            code = "bad-value"
        elif etype == "string_too_short":
            msg = f"{key_path(full)}: must not be empty"
            code = "bad-value"
        else:
            msg = f"{key_path(full)}: {e['msg']}"
        pos = loaded.where(full, key=key)
        sig = (msg, pos)
        if sig in seen:
            continue
        seen.add(sig)
        out.append(Diagnostic("error", msg, file=file, line=pos[0] if pos else None,
                              column=pos[1] if pos else None, code=code, symbol=symbol))
    return out

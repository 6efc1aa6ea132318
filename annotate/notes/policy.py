"""The annotations' language policy: which languages every text field must be written in.

Set in the repository, beside the notes it governs: `<annotations root>/policy.toml`

    [languages]
    required = ["en", "zh"]

`annotate check` reports a text field that lacks a required language as a warning
(`missing-language`, at the field), so `annotate check --strict` fails on it. With no policy
file, nothing is required beyond what the schema asks. The site never reports these: it shows
the language there is, marked (site_builder/i18n.py).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, get_args

from annotate.errors import AnnotateError, Diagnostic

POLICY_FILE = "policy.toml"
LANGUAGES = ("en", "zh")  # the languages a text field can hold (annotate.notes.schema.Bilingual)
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class Policy:
    required: tuple[str, ...] = ()
    file: str | None = None  # where it was read, for messages


def load_policy(root: Path) -> Policy:
    """The policy of the annotations under `root`; AnnotateError (file, line, what) when the file
    is not a policy."""
    path = Path(root) / POLICY_FILE
    if not path.is_file():
        return Policy()
    try:
        if path.stat().st_size > MAX_BYTES:
            raise AnnotateError(f"{path}: larger than {MAX_BYTES // 1024} KiB; a policy is a few lines")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AnnotateError(f"{path}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise AnnotateError(f"{path}: not TOML: {exc}") from None
    unknown = set(data) - {"languages"} or set(data.get("languages", {})) - {"required"}
    if unknown:
        raise AnnotateError(f"{path}: unknown key '{sorted(unknown)[0]}'",
                            hint="the policy has one table, [languages], with one key, required")
    required = data.get("languages", {}).get("required", [])
    if not isinstance(required, list) or any(x not in LANGUAGES for x in required) or len(set(required)) != len(required):
        raise AnnotateError(f"{path}: languages.required must be a list of distinct languages among {list(LANGUAGES)}, "
                            f"got {required!r}")
    return Policy(tuple(required), str(path))


def text_fields(doc: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(key path, value) of every text field of a validated document (annotate.notes.schema
    models): a plain string (English) or a Bilingual. Walks the models by their declared types,
    so a new text field anywhere in the format is covered without a change here."""
    from pydantic import BaseModel

    from annotate.notes.schema import Bilingual

    if not isinstance(doc, BaseModel):
        return
    for name, info in type(doc).model_fields.items():
        value = getattr(doc, name)
        if value is None:
            continue
        text = _holds(info.annotation, Bilingual)
        if isinstance(value, list):
            items = [((name, i), item) for i, item in enumerate(value)]
        elif isinstance(value, dict):
            items = [((name, key), item) for key, item in value.items()]
        else:
            items = [((name,), value)]
        for sub, item in items:
            if isinstance(item, Bilingual) or (text and isinstance(item, str)):
                yield path + sub, item
            else:
                yield from text_fields(item, path + sub)


def _holds(annotation: Any, cls: type) -> bool:
    """Whether a declared type is, or contains, `cls` (TextField, list[TextField], ...)."""
    if annotation is cls:
        return True
    return any(_holds(a, cls) for a in get_args(annotation))


def languages_of(value: Any) -> set[str]:
    if isinstance(value, str):
        return {"en"} if value.strip() else set()
    return {lang for lang in LANGUAGES if (getattr(value, lang, None) or "").strip()}


def missing_languages(doc: Any, policy: Policy, where, disp: str, prefix: tuple = ()) -> list[Diagnostic]:
    """A warning per text field of `doc` that lacks a language the policy requires. `where(path)`
    gives the (line, column) of a key path in the YAML file."""
    if not policy.required:
        return []
    out = []
    for path, value in text_fields(doc):
        lacking = [lang for lang in policy.required if lang not in languages_of(value)]
        if not lacking:
            continue
        full = prefix + path
        line, col = where(full)
        out.append(Diagnostic("warning", f"{_dotted(full)} has no {'/'.join(lacking)} text "
                              f"({Path(policy.file or POLICY_FILE).name} requires {', '.join(policy.required)})",
                              file=disp, line=line, column=col, code="missing-language"))
    return out


def _dotted(path: tuple) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out

"""The one way a command prints JSON (`--json`). The shape convention is in README.md:

- a command that answers with a collection of like things prints a JSON **list** of objects
  (`symbols`, `facts`); a command whose answer has parts prints one **object** whose keys name
  them (`status`: `cache_dir`, `pins`; `callgraph`: `root`, `edges`; `check`: `summary`,
  `diagnostics`, `functions`);
- keys are snake_case; a missing value is `null`, never a left-out key; paths are strings, relative
  to the upstream root (`file`) or absolute (`root`, `cache_dir`); lines are 1-based;
- UTF-8 as it is (`ensure_ascii` off), two-space indent, one trailing newline.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import PurePath
from typing import Any, TextIO

# json escapes C0 controls itself; DEL and the C1 range pass through with ensure_ascii off, and a
# terminal reads U+009B as CSI: escape them too, so --json on a terminal is as safe as the tables.
_C1 = {c: f"\\u{c:04x}" for c in range(0x7F, 0xA0)}


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_json"):
        return obj.to_json()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON data")


def dumps(obj: Any) -> str:
    """`obj` as the text `print_json` prints (without the trailing newline)."""
    return json.dumps(obj, indent=2, ensure_ascii=False, default=_default).translate(_C1)


def print_json(obj: Any, file: TextIO | None = None) -> None:
    out = file or sys.stdout
    out.write(dumps(obj) + "\n")

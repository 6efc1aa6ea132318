"""`annotate new SYMBOL`: a stub entry for one function (or type, or macro: new_types.py), in the
right annotation file."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from annotate.config import Config
from annotate.errors import AnnotateError, UsageError
from annotate.notes import api
from annotate.atomic import write_atomic
from annotate.notes.edit import DOCUMENT_END, EditableText
from annotate.notes.history import BodyStore
from annotate.yamlpos import YamlProblem, load_yaml

MAX_MEMORY = 8
MAX_CALLS = 12
# fact kinds (annotate/index/rules/memory.yaml) that belong beside `sync:` rather than `memory:`
SYNC_KINDS = {"barrier", "cp-async-group", "fence", "grid-sync", "mbarrier"}


@dataclass
class NewResult:
    file: Path
    key: str
    line: int
    created: bool


def _q(s: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(s, ensure_ascii=False)


def _plain_key(name: str) -> str:
    return name if all(c.isalnum() or c in "_:@.~" for c in name) and not name[0].isdigit() else _q(name)


def stub_lines(index, sym, key: str, need_signature: bool) -> list[str]:
    """The entry's lines, indented for a `functions:` mapping at column 0."""
    facts = index.facts(sym)
    edges = index.callees(sym)
    out = [f"  {_plain_key(key)}:"]
    if need_signature:
        out.append(f"    signature: {_q(sym.signature)}")
    from annotate.notes.edit import fp_scalar

    out.append(f"    fingerprint: {fp_scalar(sym.fingerprint)}")
    out.append(f"    # {sym.kind} at {sym.path}:{sym.start_line}-{sym.end_line}; `annotate check` warns while a TODO is left")
    out.append(f"    summary: {api.TODO} what it computes")
    out.append(f"    decomposition: {api.TODO} grid / block / warp / thread mapping")
    barriers = [f for f in facts if f.kind in SYNC_KINDS]
    movers = [f for f in facts if f not in barriers]
    if movers:
        out.append("    memory:  # one entry per auto-detected fact: merge, fill in, delete the rest")
        kinds: dict[str, list] = {}
        for f in movers:
            kinds.setdefault(f.kind, []).append(f)
        for kind, fs in list(kinds.items())[:MAX_MEMORY]:
            where = ", ".join(str(f.line) for f in fs[:6]) + (" …" if len(fs) > 6 else "")
            out.append(f"      - what: {api.TODO}  # {kind} at line {where}: {fs[0].detail[:80]}")
            out.append(f"        path: {_q(api.TODO + ' from → to')}")
            out.append(f"        how: {_q(kind + ': ' + fs[0].detail[:120])}")
    else:
        out.append("    memory: []  # the index found no memory-access facts here")
    if barriers:
        lines = ", ".join(f"{f.line} {f.detail[:40]}" for f in barriers[:6]) + (" …" if len(barriers) > 6 else "")
        out.append(f"    sync: {api.TODO} where threads synchronise and why  # waits at {lines}")
    else:
        out.append(f"    sync: {api.TODO} where threads synchronise and why  # the index found no barrier")
    out.append(f"    first_look: {api.TODO} what a learner should look at first")
    seen: list[str] = []
    for e in edges:
        n = e.callee_name
        if n not in seen:
            seen.append(n)
    if seen:
        out.append("    # calls seen by the index (add `calls: {NAME: note}` for the ones worth a word):")
        for n in seen[:MAX_CALLS]:
            out.append(f"    #   {n}")
    return out


def new_stub(config: Config, index, spec: str, root: Path | None = None, kind: str | None = None) -> NewResult:
    """Write a stub entry for the function `spec` names: a new annotation file, or one more entry
    at the end of `functions:` in the existing one (its layout, line ends and BOM kept). `kind`
    "type" or "macro" writes a type's or a macro's stub instead (new_types.py); None picks a
    type or macro when `spec` names no function but one of those."""
    root = Path(root) if root else config.annotations_dir
    if kind is None:
        from annotate.index.api import named_kind

        kind = named_kind(index, spec)
    if kind in ("type", "macro"):
        from annotate.notes.new_types import new_type_or_macro_stub

        return new_type_or_macro_stub(config, index, spec, root, kind)
    sym = index.resolve(spec)  # UsageError with candidates when ambiguous / unknown
    why = api.check_upstream_path(sym.upstream, sym.path)
    if why:
        raise UsageError(why)
    target = api.annotation_file_for(root, sym.upstream, sym.path)
    same_name = [s for s in index.symbols_in(sym.upstream, sym.path)
                 if s.qualified_name == sym.qualified_name]
    need_sig = len(same_name) > 1
    BodyStore(config).put(sym.fingerprint, index.text_of(sym))
    if not os.path.lexists(target):
        return _new_file(config, index, sym, target, need_sig)
    return _add_entry(config, index, sym, target, need_sig)


def _new_file(config: Config, index, sym, target: Path, need_sig: bool, section: str = "functions",
              lines: list[str] | None = None) -> NewResult:
    ref = api.expected_schema_ref(config, target)
    text = "\n".join([api.SCHEMA_LINE_PREFIX + ref,
                      f"upstream: {sym.upstream}",
                      f"path: {_q(sym.path) if ':' in sym.path or ' ' in sym.path else sym.path}",
                      f"overview: {api.TODO} what this file is for",
                      f"{section}:",
                      *(lines if lines is not None else stub_lines(index, sym, sym.qualified_name, need_sig))]) + "\n"
    write_atomic(target, text)
    return NewResult(target, sym.qualified_name, 6, True)


def _add_entry(config: Config, index, sym, target: Path, need_sig: bool, section: str = "functions",
               make_lines=None) -> NewResult:
    """One more entry at the end of `section` (`functions:`, or `types:` / `macros:` with their
    own `make_lines(key, need_signature)`)."""
    shown = api.display_path(config, target)
    try:
        original = EditableText.read(target)
        loaded = load_yaml(original.text)
    except YamlProblem as exc:
        raise AnnotateError(f"{shown}: cannot add to this file: {exc.message}",
                            hint="run `annotate check` and fix it first") from None
    data = loaded.data if isinstance(loaded.data, dict) else None
    if data is None:
        raise AnnotateError(f"{shown}: not a mapping", hint="run `annotate check`")
    funcs = data.get(section) or {}
    if not isinstance(funcs, dict):
        raise AnnotateError(f"{shown}: {section}: is not a mapping", hint="run `annotate check`")
    taken = _refuse_if_annotated(shown, loaded, funcs, sym, need_sig, section)
    key = sym.qualified_name
    if key in funcs:
        n = 2
        while f"{key}@{n}" in funcs:
            n += 1
        key = f"{key}@{n}"
    need = need_sig or bool(taken)
    lines = make_lines(key, need) if make_lines is not None else stub_lines(index, sym, key, need)
    new_text, line = _insert(original.text, loaded, lines, section)
    if not _kept(new_text, data, funcs, key, section):
        try:
            new_text, line = _insert_ruamel(original.text, lines, key, section)
            ok = _kept(new_text, None, {}, key, section)
        except Exception:  # ruamel is the last resort: whatever it cannot do, say so below
            ok = False
        if not ok:
            raise AnnotateError(f"{shown}: cannot add the stub to this file's layout automatically",
                                hint=f"paste it under `{section}:` yourself:\n" + "\n".join(lines))
    original.write(target, new_text)
    return NewResult(target, key, line, False)


def _refuse_if_annotated(shown: str, loaded, funcs: dict, sym, need_sig: bool, section: str = "functions") -> list[str]:
    """The entries already named like `sym`; UsageError when one of them is this very definition."""
    taken = [k for k in funcs if k.split("@", 1)[0].strip() == sym.qualified_name]
    for k in taken:
        entry = funcs[k] if isinstance(funcs[k], dict) else {}
        sig = entry.get("signature")
        if not need_sig or (isinstance(sig, str) and api._sig_matches(sig, sym)) or sig is None and len(taken) == 1 and not need_sig:
            line = loaded.keys.get((section, k), (None,))[0]
            raise UsageError(f"{shown}:{line}: '{k}' is already annotated there",
                             hint="edit it, or `annotate check --refresh` to record the current fingerprint")
    return taken


def _kept(new_text: str, data: dict | None, funcs: dict, key: str, section: str = "functions") -> bool:
    """Whether `new_text` reads back with the new entry `key` and (when `data` is given) everything
    else exactly as before."""
    try:
        check = load_yaml(new_text).data
        ok = isinstance(check.get(section), dict) and key in check[section]
        if ok and data is not None:
            ok = all(check[section].get(k) == v for k, v in funcs.items()) and \
                {k: v for k, v in check.items() if k != section} == {k: v for k, v in data.items() if k != section}
        return ok
    except (YamlProblem, AttributeError):
        return False


def _insert(text: str, loaded, stub: list[str], section: str = "functions") -> tuple[str, int]:
    """Append the stub at the end of the `functions:` (or `section:`) block (text-level, layout
    kept), before a `...` document end marker and whatever follows it."""
    lines = text.split("\n")
    tail: list[str] = []
    end_marker = next((i for i in range(len(lines) - 1, -1, -1) if DOCUMENT_END.match(lines[i])), None)
    if end_marker is not None:
        lines, tail = lines[:end_marker], lines[end_marker:]
        while lines and not lines[-1].strip():  # blank lines before the marker stay before it
            tail.insert(0, lines.pop())
    elif lines and lines[-1] == "":
        lines.pop()
        tail = [""]
    else:
        tail = [""]  # a file without a final newline gets one after the stub
    data = loaded.data
    if section not in data:
        at = len(lines)
        lines += [f"{section}:", *stub]
        return "\n".join(lines + tail), at + 2
    fline = loaded.keys[(section,)][0]
    funcs = data[section] or {}
    indent = 2
    if funcs:
        first = next(iter(funcs))
        indent = loaded.keys[(section, first)][1] - 1
    block = [" " * indent + ln[2:] for ln in stub]
    # the next top-level key after functions: insert before it (and before the comments and
    # blank lines that lead up to it)
    later = [pos[0] for kp, pos in loaded.keys.items() if len(kp) == 1 and pos[0] > fline]
    end = (min(later) - 1) if later else len(lines)
    # (an indented comment is the previous entry's own, and stays with it)
    while end > fline and (not lines[end - 1].strip() or lines[end - 1].startswith("#")) and later:
        end -= 1
    lines[end:end] = block
    return "\n".join(lines + tail), end + 1


def _insert_ruamel(text: str, stub: list[str], key: str, section: str = "functions") -> tuple[str, int]:
    import io

    from annotate.notes.edit import roundtrip_yaml

    y = roundtrip_yaml()
    doc = y.load(io.StringIO(text))
    entry = y.load(io.StringIO("\n".join(ln[2:] for ln in stub) + "\n"))
    funcs = doc.get(section)
    if funcs is None or not hasattr(funcs, "insert"):
        doc[section] = funcs = entry.__class__()
    if hasattr(funcs, "fa"):
        funcs.fa.set_block_style()
    funcs[key] = entry[key]
    out = io.StringIO()
    y.dump(doc, out)
    new = out.getvalue()
    line = next((i + 1 for i, ln in enumerate(new.split("\n")) if ln.strip().startswith(key)), 1)
    return new, line

"""`annotate new` for a type or a macro: a stub entry under `types:` (every member listed under
`fields:`) or `macros:` (with the replacement text as a comment), written the way function stubs
are (annotate/notes/new.py: a new file, or one more entry with the file's layout kept)."""

from __future__ import annotations

from pathlib import Path

from annotate.config import Config
from annotate.errors import UsageError
from annotate.notes import api
from annotate.notes.history import BodyStore
from annotate.notes.new import NewResult, _add_entry, _new_file, _plain_key, _q

MAX_USERS = 6
# what a stub asks about each kind of member (annotate.index.model.FIELD_KINDS)
_ASK = {"field": "what it holds, its units, who writes and who reads it",
        "static": "what it holds, its units, who reads it",
        "alias": "what type it names and why",
        "enumerator": "what it means and where it is tested",
        "method": "what it does"}


def new_type_or_macro_stub(config: Config, index, spec: str, root: Path, kind: str) -> NewResult:
    """Write a stub for the type (`kind` "type") or macro ("macro") `spec` names."""
    thing = index.resolve_type(spec) if kind == "type" else index.resolve_macro(spec)
    why = api.check_upstream_path(thing.upstream, thing.path)
    if why:
        raise UsageError(why)
    defs = index.types_in(thing.upstream, thing.path) if kind == "type" else index.macros_in(thing.upstream, thing.path)
    need_sig = len([d for d in defs if d.qualified_name == thing.qualified_name]) > 1
    text = index.text_of(thing)
    BodyStore(config).put(thing.fingerprint, text)
    section = "types" if kind == "type" else "macros"

    def make(key: str, need: bool) -> list[str]:
        return type_stub_lines(index, thing, key, need) if kind == "type" else macro_stub_lines(index, thing, key, need)

    target = api.annotation_file_for(root, thing.upstream, thing.path)
    if not target.exists() and not target.is_symlink():
        return _new_file(config, index, thing, target, need_sig, section, make(thing.qualified_name, need_sig))
    return _add_entry(config, index, thing, target, need_sig, section, make)


def type_stub_lines(index, t, key: str, need_signature: bool) -> list[str]:
    """The entry's lines, indented for a `types:` mapping at column 0: every member under `fields:`."""
    from annotate.notes.edit import fp_scalar

    out = [f"  {_plain_key(key)}:"]
    if need_signature:
        out.append(f"    signature: {_q(t.signature)}")
    out.append(f"    fingerprint: {fp_scalar(t.fingerprint)}")
    out.append(f"    # {t.kind} at {t.path}:{t.start_line}-{t.end_line}; `annotate check` warns while a TODO is left")
    methods = index.methods_of(t)
    if methods:
        names = ", ".join(dict.fromkeys(m.name for m in methods))
        out.append(f"    # methods (annotate them under functions:): {names[:200]}")
    _users_comment(out, index, index.type_users(t), "used by")
    out.append(f"    summary: {api.TODO} what the type is for")
    out.append(f"    layout: {api.TODO} how its members sit in memory (sizes, alignment, units)")
    members: dict[str, list] = {}
    for f in t.fields:
        members.setdefault(f.name, []).append(f)
    if members:
        out.append("    fields:  # every member the index sees; delete the ones not worth a word")
        for name, fs in members.items():
            f = fs[0]
            what = f"{f.kind} {f.type}".strip()[:70] + (f" = {f.value}"[:40] if f.value else "")
            out.append(f"      {_plain_key(name)}: {api.TODO} {_ASK.get(f.kind, _ASK['field'])}"
                       f"  # {what}, line {', '.join(str(x.line) for x in fs)}")
    else:
        out.append("    fields: {}  # the index sees no members")
    return out


def macro_stub_lines(index, m, key: str, need_signature: bool) -> list[str]:
    """The entry's lines, indented for a `macros:` mapping at column 0."""
    from annotate.notes.edit import fp_scalar

    body = m.body.split("\n")
    out = [f"  {_plain_key(key)}:"]
    if need_signature:
        out.append(f"    signature: {_q(index.text_of(m).splitlines()[0].strip())}")
    out.append(f"    fingerprint: {fp_scalar(m.fingerprint)}")
    kind = "function-like" if m.function_like else "object-like"
    out.append(f"    # {kind} macro at {m.path}:{m.start_line}-{m.end_line}; `annotate check` warns while a TODO is left")
    out.append(f"    # #define {m.signature} {body[0][:100]}" + (f"  ... ({len(body)} lines)" if len(body) > 1 else ""))
    _users_comment(out, index, index.macro_users(m), "invoked by")
    out.append(f"    summary: {api.TODO} what the macro is for")
    out.append(f"    expands_to: {api.TODO} what an invocation becomes, with a worked example")
    return out


def _users_comment(out: list[str], index, uses, verb: str) -> None:
    if not uses:
        out.append(f"    # {verb} no function the index sees")
        return
    names = list(dict.fromkeys(index.symbol(u.user).qualified_name for u in uses))
    more = f" … ({len(names)} functions)" if len(names) > MAX_USERS else ""
    out.append(f"    # {verb}: {', '.join(names[:MAX_USERS])}{more}")

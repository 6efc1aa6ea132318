"""Entries under `types:` and `macros:` of an annotation file.

Each entry is validated on its own (one bad entry does not hide the others), resolved against
the types (`Index.types_in`) or macros (`Index.macros_in`) of the file it annotates, its
`fields:` keys checked against the type's members, its anchors against the definition's text,
its fingerprint against the definition now. The checks have the shape of the function entries'
(annotate/notes/api.py) and reuse its reporter, anchors and diagnostics; the result is a
`TypeNote` / `MacroNote` (annotate/notes/model.py).
"""

from __future__ import annotations

import difflib
from typing import Any

from annotate.index.model import bare_name
from annotate.notes import api
from annotate.notes import model as M

# ---- one type entry --------------------------------------------------------------------------

def load_type(where: "api._Where", entry_key: str, raw: Any) -> "api._Entry":
    from pydantic import ValidationError

    from annotate.notes import schema as S
    from annotate.notes.validate import diagnostics as vdiags

    diag = api._Reporter(where, entry_key, "types")
    try:
        doc = S.TypeDoc.model_validate({} if raw is None else raw)
    except ValidationError as err:
        return api._Entry(None, vdiags(err, S.TypeDoc, where.loaded, where.disp, prefix=diag.fpath,
                                       symbol=entry_key), api.OUT_BROKEN)
    diag.diags.extend(api._languages(where.s, doc, where.loaded, where.disp, diag.fpath))
    diag.name = name = entry_key.split("@", 1)[0].strip()
    if not name:
        diag("error", "empty type name", "unresolved", key=True)
        return api._Entry(None, diag.diags, api.OUT_BROKEN)
    base = dict(qualified_name=name, upstream=where.upstream or "", path=where.path or "", signature=doc.signature,
                fingerprint=doc.fingerprint, summary=api._text(doc.summary), layout=api._text(doc.layout),
                course=tuple(doc.course),
                source=M.SourceSpan(where.disp, diag.kline or 1, diag.kcol or 1))
    td, status = _resolve(where, name, doc, diag, "type") if where.source_ok else (None, M.UNRESOLVED)
    if td is None:
        notes = tuple(M.InlineNote(at=n.at, text=api._text(n.text)) for n in doc.notes)
        fields = tuple(M.FieldNote(k, api._text(v)) for k, v in doc.fields.items())
        return api._Entry(M.TypeNote(typedef=None, status=status, notes=notes, fields=fields, **base), diag.diags,
                          api.OUT_BROKEN)
    text = where.s.index.text_of(td)
    inline, broken = api._anchor_notes(doc, td, text, name, diag)
    fields, bad_field = _fields(where, doc, td, name, diag)
    _check_todos(doc, ("summary", "layout"), diag)
    status, refresh = api._fingerprint_status(where, entry_key, name, doc, td, text, diag, "types", "type")
    note = M.TypeNote(typedef=td, status=status, current_fingerprint=td.fingerprint, notes=tuple(inline),
                      fields=fields, **base)
    broken = broken or bad_field
    return api._Entry(note, diag.diags, _outcome(broken, status), refresh)


def _fields(where: "api._Where", doc, td, name: str, diag: "api._Reporter") -> tuple[tuple[M.FieldNote, ...], bool]:
    """The `fields:` notes placed at their members; (notes, whether a key names no member). A
    member is what the type's body declares (data, static, alias, enumerator, declared method)
    or a method defined for it (`Index.methods_of`)."""
    from annotate.notes.validate import did_you_mean

    members: dict[str, tuple[str, list[int]]] = {}  # name -> (kind, lines)
    for f in td.fields:
        members.setdefault(f.name, (f.kind, []))[1].append(f.line)
    for m in where.s.index.methods_of(td):
        members.setdefault(m.name, ("method", []))[1].append(m.start_line)
    out, broken = [], False
    for fname, raw in doc.fields.items():
        text = api._text(raw)
        if fname in members:
            kind, lines = members[fname]
            out.append(M.FieldNote(fname, text, kind, tuple(sorted(set(lines)))))
            if text.en.strip().startswith(api.TODO):
                diag("warning", f"fields.{fname} still holds the placeholder from `annotate new`", "todo",
                     at=("fields", fname))
            continue
        out.append(M.FieldNote(fname, text))
        broken = True
        names = list(members)
        base = _inherited_from(where.s.index, td, fname)
        if base is not None:
            msg = (f"{name} has no member '{fname}' of its own: it is inherited from {base.qualified_name} "
                   f"({base.path}:{base.start_line}); annotate it in that type's entry")
        else:
            guess = did_you_mean(fname, names)
            msg = f"{name} has no member '{fname}'" + (f"; did you mean '{guess}'?" if guess else "")
        detail = ("members: " + ", ".join(names[:40]) + (" …" if len(names) > 40 else "")) if names else \
            f"the index sees no members in {name} (lines {td.start_line}-{td.end_line})"
        diag("error", msg, "unknown-field", at=("fields", fname), key=True, detail=detail)
    return tuple(out), broken


def _inherited_from(index, td, member: str, depth: int = 4):
    """The base type that declares `member`, searched through the bases' bases; None when none
    does or a base is not found."""
    if depth == 0:
        return None
    for written in td.bases:
        for b in _base_types(index, td, written):
            if any(f.name == member for f in b.fields):
                return b
            deeper = _inherited_from(index, b, member, depth - 1)
            if deeper is not None:
                return deeper
    return None


def _base_types(index, td, written: str) -> list:
    """The definitions a base class name written in `td`'s head names, looked up as C++ does,
    from the innermost enclosing scope outwards (`flash::Flash_fwd_params : Qkv_params` means
    `flash::Qkv_params` before a global `Qkv_params`); in the same file first."""
    words = written.split("<", 1)[0].split()
    if not words:
        return []
    name = words[-1].lstrip(":")
    sep = "." if td.kind == "python-class" else "::"
    scopes = td.qualified_name.split(sep)[:-1]
    for i in range(len(scopes), -1, -1):
        qn = sep.join([*scopes[:i], name])
        found = [t for t in index.find_type(qn, td.upstream) if t.qualified_name == qn]
        if found:
            return sorted(found, key=lambda t: t.path != td.path)[:4]
    return []


# ---- one macro entry -------------------------------------------------------------------------

def load_macro(where: "api._Where", entry_key: str, raw: Any) -> "api._Entry":
    from pydantic import ValidationError

    from annotate.notes import schema as S
    from annotate.notes.validate import diagnostics as vdiags

    diag = api._Reporter(where, entry_key, "macros")
    try:
        doc = S.MacroDoc.model_validate({} if raw is None else raw)
    except ValidationError as err:
        return api._Entry(None, vdiags(err, S.MacroDoc, where.loaded, where.disp, prefix=diag.fpath,
                                       symbol=entry_key), api.OUT_BROKEN)
    diag.diags.extend(api._languages(where.s, doc, where.loaded, where.disp, diag.fpath))
    diag.name = name = entry_key.split("@", 1)[0].strip()
    if not name:
        diag("error", "empty macro name", "unresolved", key=True)
        return api._Entry(None, diag.diags, api.OUT_BROKEN)
    base = dict(name=name, upstream=where.upstream or "", path=where.path or "", signature=doc.signature,
                fingerprint=doc.fingerprint, summary=api._text(doc.summary), expands_to=api._text(doc.expands_to),
                course=tuple(doc.course), source=M.SourceSpan(where.disp, diag.kline or 1, diag.kcol or 1))
    md, status = _resolve(where, name, doc, diag, "macro") if where.source_ok else (None, M.UNRESOLVED)
    if md is None:
        notes = tuple(M.InlineNote(at=n.at, text=api._text(n.text)) for n in doc.notes)
        return api._Entry(M.MacroNote(macro=None, status=status, notes=notes, **base), diag.diags, api.OUT_BROKEN)
    text = where.s.index.text_of(md)
    inline, broken = api._anchor_notes(doc, md, text, name, diag)
    _check_todos(doc, ("summary", "expands_to"), diag)
    status, refresh = api._fingerprint_status(where, entry_key, name, doc, md, text, diag, "macros", "macro")
    note = M.MacroNote(macro=md, status=status, current_fingerprint=md.fingerprint, notes=tuple(inline), **base)
    return api._Entry(note, diag.diags, _outcome(broken, status), refresh)


# ---- shared steps ------------------------------------------------------------------------------

def _outcome(broken: bool, status: str) -> str:
    return api.OUT_BROKEN if broken else (api.OUT_STALE if status == M.STALE else api.OUT_OK)


def _resolve(where: "api._Where", name: str, doc, diag: "api._Reporter", what: str):
    """(the one type / macro definition the entry names, None) or (None, UNRESOLVED | AMBIGUOUS)
    with a diagnostic. A type's `signature:` is matched in its head, a macro's in its text."""
    index, upstream, path = where.s.index, where.upstream, where.path
    defs = index.types_in(upstream, path) if what == "type" else index.macros_in(upstream, path)
    exact = [d for d in defs if d.qualified_name == name]
    if not exact and what == "type":
        suffix = [d for d in defs if d.qualified_name.endswith(("::" + name, "." + name))]
        if suffix and len({d.qualified_name for d in suffix}) == 1:
            diag("warning", f"'{name}' is not the qualified name; write '{suffix[0].qualified_name}'",
                 "not-qualified", key=True)
            exact = suffix
    if not exact:
        _unresolved(where, name, defs, diag, what)
        return None, M.UNRESOLVED
    chosen = exact
    if doc.signature:
        chosen = [d for d in exact if api.signature_matches(doc.signature, d, index)]
        if not chosen:
            diag("error", f"signature '{doc.signature}' matches none of the {len(exact)} definition(s) of '{name}'",
                 "signature-mismatch", at=("signature",), detail=_listing(exact, index, what))
            return None, M.UNRESOLVED
    if len(chosen) > 1:
        diag("error", f"'{name}' has {len(chosen)} definitions in {path}; add `signature:` with a piece of the one "
             "you mean", "ambiguous", key=True, detail=_listing(chosen, index, what))
        return None, M.AMBIGUOUS
    return chosen[0], None


def _listing(defs, index, what: str) -> str:
    """One line per definition: a type's head, a macro's first line (`#define NAME ...`)."""
    def head(d) -> str:
        return d.signature if what == "type" else " ".join(index.text_of(d).split("\n", 1)[0].split())

    return "\n".join(f"line {d.start_line}: {head(d)}" for d in defs[:30]) + (
        f"\n... and {len(defs) - 30} more" if len(defs) > 30 else "")


def _unresolved(where: "api._Where", name: str, defs: list, diag: "api._Reporter", what: str) -> None:
    """No type / macro of that name in the file: the nearest names, where else it is defined, and
    whether the name is a function (or the other kind) of this file."""
    index, upstream, path = where.s.index, where.upstream, where.path
    cands = sorted({d.qualified_name for d in defs})
    near = difflib.get_close_matches(name, cands, n=3, cutoff=0.6)
    if not near:
        bare = bare_name(name)
        near = [c for c in cands if bare_name(c) == bare][:3] or difflib.get_close_matches(bare, cands, n=3, cutoff=0.5)
    finder = index.find_type if what == "type" else index.find_macro
    elsewhere = [d for d in finder(name, upstream) if d.path != path]
    msg = f"no {what} '{name}' in {upstream}:{path}"
    details = []
    if near:
        msg += f"; did you mean '{near[0]}'?"
        if len(near) > 1:
            details.append("nearest names: " + ", ".join(near))
    if elsewhere:
        files = ", ".join(sorted({f"{d.path}:{d.start_line}" for d in elsewhere})[:4])
        details.append(f"defined in another file: {files} (annotate it in that file's YAML)")
    other = {"function": [s for s in index.symbols_in(upstream, path) if s.qualified_name == name],
             "macro" if what == "type" else "type": (index.macros_in(upstream, path) if what == "type"
                                                     else index.types_in(upstream, path))}
    for kind, found in other.items():
        if any(d.qualified_name == name for d in found):
            section = {"function": "functions", "type": "types", "macro": "macros"}[kind]
            details.append(f"'{name}' is a {kind} of this file: put its entry under `{section}:`")
    diag("error", msg, "unresolved", key=True, detail="\n".join(details) or None)


def _check_todos(doc, names: tuple[str, ...], diag: "api._Reporter") -> None:
    for fld in names:
        t = getattr(doc, fld)
        t = t if isinstance(t, str) or t is None else t.en
        if t is not None and t.strip().startswith(api.TODO):
            diag("warning", f"{fld} still holds the placeholder from `annotate new`", "todo", at=(fld,))

"""Which functions use which types and invoke which macros, over one upstream (after every file
is extracted and the includes are resolved, like call resolution in resolve.py).

Conservative, by name: a mention (extract_types) becomes a `Use` only when a type (or macro) of
that name is defined in a file the function's file reaches through its #includes (Python: its
imports), itself included; a name that is one of the function's own template parameters is never
a use. Every reachable definition of the name is a target (all specialisations of a template).
Function-like macros written in lower case are found where tree-sitter saw a call to them (an
unresolved call edge with the macro's name); upper-case names are read from the text.
"""

from __future__ import annotations

from annotate.index.extract_types import template_param_names
from annotate.index.model import MACRO_USE, TYPE_USE, FileIndex, Use
from annotate.index.resolve import include_closure


def resolve_uses(files: dict[str, FileIndex], mentions: dict[str, dict[str, tuple[str, ...]]]
                 ) -> dict[str, tuple[Use, ...]]:
    """path -> the uses by the functions of that file. `files` are resolved FileIndex (their
    `includes` are paths), `mentions` path -> Symbol.key -> raw mentions."""
    # (kind, python?, name) -> defining path -> keys of its definitions there
    defs: dict[tuple[str, bool, str], dict[str, list[str]]] = {}
    for fi in files.values():
        py = fi.language == "python"
        for t in fi.types:
            defs.setdefault((TYPE_USE, py, t.name), {}).setdefault(t.path, []).append(t.key)
        for m in fi.macros:
            defs.setdefault((MACRO_USE, False, m.name), {}).setdefault(m.path, []).append(m.key)
    macros = {name for kind, _, name in defs if kind == MACRO_USE}
    closure = include_closure({p: fi.includes for p, fi in files.items()})
    ranks: dict[int, dict[str, int]] = {}  # id of a defs value (they live as long as `defs`) -> rank

    def reachable(kind: str, py: bool, name: str, reach: frozenset[str], memo: dict) -> tuple[str, ...]:
        """Keys of the definitions of `name` in the files `reach` holds (cut-out: some names,
        cute's traits, have hundreds of specialisations; a file's closure, hundreds of files)."""
        got = memo.get((kind, name))
        if got is None:
            where = defs.get((kind, py and kind == TYPE_USE, name))
            if not where:
                got = ()
            elif len(where) <= len(reach):
                got = tuple(k for path, keys in where.items() if path in reach for k in keys)
            else:
                got = tuple(k for path in reach for k in where.get(path, ()))
                rank = ranks.get(id(where))
                if rank is None:  # the definitions' order in `where` (path order, then file order)
                    rank = ranks[id(where)] = {k: i for i, k in enumerate(k for keys in where.values() for k in keys)}
                got = tuple(sorted(got, key=rank.__getitem__))
            memo[(kind, name)] = got
        return got
    out: dict[str, tuple[Use, ...]] = {}
    for p, fi in files.items():
        raw_of = mentions.get(p) or {}
        if not raw_of and not (macros and fi.edges):
            continue
        py = fi.language == "python"
        reach = closure(p)
        memo: dict = {}
        unresolved: dict[str, list] = {}
        if macros:
            for e in fi.edges:
                if not e.callees and e.callee_name in macros:  # a plain name: `::`, `.` never match
                    unresolved.setdefault(e.caller, []).append(e)
        uses: list[Use] = []
        for s in fi.symbols:
            key = s.key
            raw = raw_of.get(key, ())
            calls = unresolved.get(key, ())
            if not raw and not calls:
                continue
            own = None  # the function's template parameter names, when first needed
            mine: dict[tuple[str, str], Use] = {}
            for text in raw:
                kind, name, rest = text.split(" ", 2)  # parse_mention, without parsing what is dropped
                ukind = TYPE_USE if kind == "t" else MACRO_USE
                if (ukind, py and ukind == TYPE_USE, name) not in defs or (ukind, name) in mine:
                    continue
                if ukind == TYPE_USE:
                    if own is None:
                        own = template_param_names(s.template_params)
                    if name in own:
                        continue
                keys = reachable(ukind, py, name, reach, memo)
                if keys:
                    line, col, how = rest.split(" ")
                    mine[(ukind, name)] = Use(key, ukind, name, how, p, int(line), int(col), keys)
            for e in calls:
                if (MACRO_USE, e.callee_name) not in mine:
                    keys = reachable(MACRO_USE, False, e.callee_name, reach, memo)
                    if keys:
                        mine[(MACRO_USE, e.callee_name)] = Use(key, MACRO_USE, e.callee_name, "call", p, e.line,
                                                               e.column, keys)
            uses.extend(sorted(mine.values(), key=lambda u: (u.line, u.column, u.kind, u.name)))
        if uses:
            out[p] = tuple(uses)
    return out


"""`annotate show SYMBOL`: one function in the terminal with its notes, facts, callers and callees;
or one type (its fields with their notes, methods, the functions that use it) or one macro (what
it expands to, the functions that invoke it) — `--type` / `--macro`, or when SYMBOL names no function.

It reads two stages (the index and the notes), so it lives here, above both, and takes a
Project. Everything it prints from a note, an upstream file or the index is plain text: never
Rich markup, control characters escaped (annotate.terminal).
"""

from __future__ import annotations

NOTE_FIELDS = ("summary", "decomposition", "sync", "first_look")
TYPE_NOTE_FIELDS = ("summary", "layout")
MACRO_NOTE_FIELDS = ("summary", "expands_to")
MAX_USERS = 40


def register(subparsers) -> None:
    p = subparsers.add_parser("show", help="a function with its notes, facts, callers and callees")
    p.add_argument("symbol", metavar="SYMBOL")
    p.add_argument("--no-color", action="store_true", help="plain text")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--type", action="store_true", help="SYMBOL names a struct / class / union / enum")
    which.add_argument("--macro", action="store_true", help="SYMBOL names a #define macro")
    p.set_defaults(func=cmd_show)


def cmd_show(args, config) -> int:
    from annotate.commands.index import project_for_spec
    from annotate.terminal import console

    project = project_for_spec(config, args.symbol)
    con = console(no_color=args.no_color)
    from annotate.index.api import named_kind

    kind = "type" if args.type else "macro" if args.macro else named_kind(project.index, args.symbol)
    if kind == "type":
        show_type(project, args.symbol, con)
    elif kind == "macro":
        show_macro(project, args.symbol, con)
    else:
        show(project, args.symbol, con)
    return 0


def show(project, spec: str, con) -> None:
    """Print the function `spec` names, from `project` (annotate.project.Project), on `con`."""
    from rich.panel import Panel
    from rich.syntax import Syntax

    from annotate.terminal import plain, printable

    index = project.index
    sym = index.resolve(spec)
    facts = index.facts(sym)
    quals = " ".join(sym.is_cuda_qualified)
    title = plain(sym.qualified_name, "bold")
    title.append(printable(f"  {sym.kind}  {quals}"))
    con.rule(title)
    con.print(f"{sym.upstream}:{sym.path}:{sym.start_line}-{sym.end_line}   fingerprint {sym.fingerprint}"
              + (f"   template <{sym.template_params}>" if sym.template_params else "")
              + ("   (anonymous namespace)" if sym.anonymous_namespace else ""))
    note = project.annotations.for_symbol(sym)
    if note is not None:
        for label in NOTE_FIELDS:
            text = getattr(note, label)
            if text is not None:
                con.print(Panel(plain(text.en), title=plain(label), expand=True))
    con.print(Syntax(printable(index.text_of(sym)), "python" if sym.kind == "python" else "cuda", line_numbers=True,
                     start_line=sym.start_line, highlight_lines={f.line for f in facts}, theme="ansi_dark",
                     word_wrap=False))
    if facts:
        _table(con, "memory-access facts", ("line", "kind", "detail"), [(str(f.line), f.kind, f.detail) for f in facts])
    _edges(con, index, "callees", index.callees(sym), "callee")
    _edges(con, index, "callers", index.callers(sym), "caller")
    _uses(con, project, index.uses_by(sym))


def _uses(con, project, uses) -> None:
    """The types and macros a function uses that resolve to a definition, with the summary of the
    note on it where there is one."""
    from annotate.terminal import plain

    rows = []
    for u in uses:
        if not u.targets:
            continue
        noted = project.annotations.for_use(u)
        summary = next((n.summary.en for n in noted if n.summary is not None), "")
        rows.append((str(u.line), u.kind, plain(u.name), u.how, plain(summary.split("\n", 1)[0][:100])))
    if rows:
        _table(con, "types and macros used", ("line", "kind", "name", "how", "note"), rows)


def show_type(project, spec: str, con) -> None:
    """Print the type `spec` names: its notes, definition, fields (with their notes), methods,
    nested types and the functions that use it."""
    from rich.panel import Panel
    from rich.syntax import Syntax

    from annotate.terminal import plain, printable

    index = project.index
    t = index.resolve_type(spec)
    title = plain(t.qualified_name, "bold")
    title.append(printable(f"  {t.kind}" + (f"<{t.specialization}>" if t.specialization is not None else "")))
    con.rule(title)
    con.print(printable(f"{t.upstream}:{t.path}:{t.start_line}-{t.end_line}   fingerprint {t.fingerprint}"
                        + (f"   template <{t.template_params}>" if t.template_params else "")
                        + (f"   bases: {', '.join(t.bases)}" if t.bases else "")))
    note = project.annotations.for_type(t)
    if note is not None:
        for label in TYPE_NOTE_FIELDS:
            text = getattr(note, label)
            if text is not None:
                con.print(Panel(plain(text.en), title=plain(label), expand=True))
    con.print(Syntax(printable(index.text_of(t)), "python" if t.kind == "python-class" else "cuda", line_numbers=True,
                     start_line=t.start_line, theme="ansi_dark", word_wrap=False))
    def field_note(name: str):
        fn = note.field(name) if note is not None else None
        return plain(fn.text.en if fn is not None else "")

    _table(con, "members", ("line", "kind", "name", "type", "note"),
           [(str(f.line), f.kind, plain(f.name), plain(f.type + (f" = {f.value}" if f.value else "")),
             field_note(f.name)) for f in t.fields])
    methods = index.methods_of(t)
    if methods:
        _table(con, "methods", ("lines", "kind", "method", "note"),
               [(f"{s.start_line}-{s.end_line}", s.kind, plain(s.qualified_name), field_note(s.name)) for s in methods])
    if t.nested:
        con.print(plain("nested types: " + ", ".join(t.nested)))
    _users(con, index, index.type_users(t))


def show_macro(project, spec: str, con) -> None:
    """Print the macro `spec` names: its notes, its definition and the functions that invoke it."""
    from rich.panel import Panel
    from rich.syntax import Syntax

    from annotate.terminal import plain, printable

    index = project.index
    m = index.resolve_macro(spec)
    title = plain(m.signature, "bold")
    title.append(printable("  macro, " + ("function-like" if m.function_like else "object-like")))
    con.rule(title)
    con.print(printable(f"{m.upstream}:{m.path}:{m.start_line}-{m.end_line}   fingerprint {m.fingerprint}"))
    note = project.annotations.for_macro(m)
    if note is not None:
        for label in MACRO_NOTE_FIELDS:
            text = getattr(note, label)
            if text is not None:
                con.print(Panel(plain(text.en), title=plain(label), expand=True))
    con.print(Syntax(printable(index.text_of(m)), "cuda", line_numbers=True, start_line=m.start_line,
                     theme="ansi_dark", word_wrap=False))
    _users(con, index, index.macro_users(m))


def _users(con, index, uses) -> None:
    from annotate.terminal import plain

    rows = []
    for u in uses[:MAX_USERS]:
        rows.append((f"{u.path}:{u.line}", u.how, plain(index.symbol(u.user).qualified_name)))
    title = "used by" + (f" (first {MAX_USERS} of {len(uses)})" if len(uses) > MAX_USERS else "")
    _table(con, title, ("at", "how", "function"), rows)


def _edges(con, index, title: str, edges, who: str) -> None:
    from annotate.commands.index import edge_json
    from annotate.terminal import plain

    rows = []
    for e in edges:
        j = edge_json(index, e)
        name = plain(j[who])
        if who == "callee" and not j["resolved"]:
            name.append("  unresolved", style="dim")
        rows.append((str(e.line) if who == "callee" else f"{e.path}:{e.line}", e.kind, name))
    _table(con, title, ("line" if who == "callee" else "at", "kind", who), rows)


def _table(con, title: str, columns, rows) -> None:
    from rich.table import Table

    t = Table(title=title)
    for col in columns:
        t.add_column(col)
    for row in rows:
        t.add_row(*row)
    con.print(t)

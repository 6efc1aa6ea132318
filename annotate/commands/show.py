"""`annotate show SYMBOL`: one function in the terminal with its notes, facts, callers and callees.

It reads two stages (the index and the notes), so it lives here, above both, and takes a
Project. Everything it prints from a note, an upstream file or the index is plain text: never
Rich markup, control characters escaped (annotate.terminal).
"""

from __future__ import annotations

NOTE_FIELDS = ("summary", "decomposition", "sync", "first_look")


def register(subparsers) -> None:
    p = subparsers.add_parser("show", help="a function with its notes, facts, callers and callees")
    p.add_argument("symbol", metavar="SYMBOL")
    p.add_argument("--no-color", action="store_true", help="plain text")
    p.set_defaults(func=cmd_show)


def cmd_show(args, config) -> int:
    from annotate.commands.index import project_for_spec
    from annotate.terminal import console

    show(project_for_spec(config, args.symbol), args.symbol, console(no_color=args.no_color))
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

"""`annotate symbols | callgraph | facts | show`: thin adapters over annotate.index.api.

Nothing heavy at import time: tree-sitter and rich are imported inside the handlers.
"""

from __future__ import annotations

import json
import sys

from annotate.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser("symbols", help="functions defined in one upstream file")
    p.add_argument("target", metavar="UPSTREAM:PATH")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_symbols)

    p = subparsers.add_parser("callgraph", help="calls and kernel launches from (or to) a function")
    p.add_argument("symbol", metavar="SYMBOL")
    p.add_argument("--reverse", action="store_true", help="callers instead of callees")
    p.add_argument("--depth", type=int, default=1, help="levels to follow (default 1)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_callgraph)

    p = subparsers.add_parser("facts", help="memory-access facts detected in a function")
    p.add_argument("symbol", metavar="SYMBOL")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_facts)

    p = subparsers.add_parser("show", help="a function with its facts, callers and callees")
    p.add_argument("symbol", metavar="SYMBOL")
    p.add_argument("--no-color", action="store_true", help="plain text")
    p.set_defaults(func=cmd_show)


# ---- helpers ------------------------------------------------------------------------------

def _index_for_spec(config, spec: str):
    from annotate.index.api import load_index
    from annotate.index.model import parse_symbol
    from annotate.upstreams import load_upstreams

    up = parse_symbol(spec, list(load_upstreams(config))).upstream
    return load_index(config, [up] if up else None)


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _console(no_color: bool = False):
    from rich.console import Console

    # Piped output (a pager, a file, a test) gets wide tables instead of 80-column truncation.
    width = None if sys.stdout.isatty() else 160
    return Console(no_color=no_color, highlight=False, soft_wrap=False, width=width)


def symbol_json(sym) -> dict:
    from dataclasses import asdict

    d = asdict(sym)
    d["is_cuda_qualified"] = list(sym.is_cuda_qualified)
    d["id"] = sym.id
    d["key"] = sym.key
    return d


def edge_json(index, e) -> dict:
    caller = index.symbol(e.caller)
    targets = [index.symbol(k) for k in e.callees]
    qnames = list(dict.fromkeys(t.qualified_name for t in targets))
    return {
        "caller": caller.qualified_name,
        "callee": qnames[0] if len(qnames) == 1 else e.callee_name,
        "kind": e.kind,
        "file": e.path,
        "line": e.line,
        "column": e.column,
        "written": e.callee_name,
        "via": e.via,
        "resolved": bool(targets),
        "ambiguous": len(qnames) > 1,
        "callees": [t.key for t in targets],
        "caller_key": caller.key,
    }


# ---- commands -----------------------------------------------------------------------------

def cmd_symbols(args, config) -> int:
    from annotate.index.api import load_index
    from annotate.upstreams import load_upstreams

    up, sep, path = args.target.partition(":")
    ups = load_upstreams(config)
    if not sep or not path:
        raise UsageError(f"expected UPSTREAM:PATH, got '{args.target}'",
                         hint="e.g. annotate symbols flashinfer:include/flashinfer/norm.cuh")
    if up not in ups:
        raise UsageError(f"unknown upstream '{up}'", hint="known upstreams: " + ", ".join(ups))
    index = load_index(config, [up])
    path = path.strip("/")
    if not index.has_file(up, path):
        index.file(up, path)  # raises, naming the nearest paths
    syms = index.symbols_in(up, path)
    if args.json:
        _print_json([symbol_json(s) for s in syms])
        return 0
    from rich.table import Table

    t = Table(title=f"{up}:{path}", show_lines=False)
    for col in ("lines", "kind", "qualified name", "template"):
        t.add_column(col)
    for s in syms:
        t.add_row(f"{s.start_line}-{s.end_line}", s.kind, s.qualified_name, (s.template_params or "")[:50])
    _console().print(t)
    return 0


def cmd_callgraph(args, config) -> int:
    index = _index_for_spec(config, args.symbol)
    sym = index.resolve(args.symbol)
    if args.depth < 1:
        raise UsageError("--depth must be at least 1")
    edges = index.callgraph(sym, reverse=args.reverse, depth=args.depth)
    if args.json:
        _print_json({"root": sym.qualified_name, "root_key": sym.key, "reverse": args.reverse,
                     "depth": args.depth, "edges": [edge_json(index, e) for e in edges]})
        return 0
    from rich.table import Table

    t = Table(title=f"{'callers of' if args.reverse else 'callees of'} {sym.qualified_name}  ({sym.path}:{sym.start_line})")
    for col in ("caller", "kind", "callee", "at"):
        t.add_column(col)
    for e in edges:
        j = edge_json(index, e)
        callee = j["callee"] + ("" if j["resolved"] else "  [unresolved]") + ("  [ambiguous]" if j["ambiguous"] else "")
        t.add_row(j["caller"], j["kind"], callee, f"{e.path}:{e.line}")
    _console().print(t)
    return 0


def cmd_facts(args, config) -> int:
    index = _index_for_spec(config, args.symbol)
    sym = index.resolve(args.symbol)
    facts = index.facts(sym)
    if args.json:
        _print_json([{"kind": f.kind, "detail": f.detail, "line": f.line, "rule": f.rule, "file": f.path}
                     for f in facts])
        return 0
    from rich.table import Table

    t = Table(title=f"memory-access facts of {sym.qualified_name}  ({sym.path}:{sym.start_line})")
    for col in ("line", "kind", "detail"):
        t.add_column(col)
    for f in facts:
        t.add_row(str(f.line), f.kind, f.detail)
    _console().print(t)
    return 0


def _note_for(config, index, sym):
    try:
        from annotate.notes.api import load_annotations  # type: ignore
    except ImportError:
        return None
    try:
        return load_annotations(config, index).for_symbol(sym)
    except Exception:  # notes are a garnish here; `annotate check` reports their problems
        return None


def cmd_show(args, config) -> int:
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.table import Table

    index = _index_for_spec(config, args.symbol)
    sym = index.resolve(args.symbol)
    con = _console(args.no_color)
    facts = index.facts(sym)
    lang = "python" if sym.kind == "python" else "cuda"
    quals = " ".join(sym.is_cuda_qualified)
    con.rule(f"[bold]{sym.qualified_name}[/]  {sym.kind}  {quals}")
    con.print(f"{sym.upstream}:{sym.path}:{sym.start_line}-{sym.end_line}   fingerprint {sym.fingerprint}"
              + (f"   template <{sym.template_params}>" if sym.template_params else "")
              + ("   (anonymous namespace)" if sym.anonymous_namespace else ""))
    note = _note_for(config, index, sym)
    if note is not None:
        for label in ("summary", "decomposition", "sync", "first_look"):
            text = getattr(note, label, None)
            if text is not None:
                con.print(Panel(getattr(text, "en", str(text)), title=label, expand=True))
    con.print(Syntax(index.text_of(sym), "cuda" if lang == "cuda" else "python", line_numbers=True,
                     start_line=sym.start_line, highlight_lines={f.line for f in facts},
                     theme="ansi_dark", word_wrap=False))
    if facts:
        t = Table(title="memory-access facts")
        for col in ("line", "kind", "detail"):
            t.add_column(col)
        for f in facts:
            t.add_row(str(f.line), f.kind, f.detail)
        con.print(t)
    for title, edges, who in (("callees", index.callees(sym), "callee"), ("callers", index.callers(sym), "caller")):
        t = Table(title=title)
        for col in ("line" if who == "callee" else "at", "kind", who):
            t.add_column(col)
        for e in edges:
            j = edge_json(index, e)
            name = j["callee"] if who == "callee" else j["caller"]
            flag = "" if j["resolved"] or who == "caller" else "  [dim]unresolved[/]"
            t.add_row(str(e.line) if who == "callee" else f"{e.path}:{e.line}", e.kind, name + flag)
        con.print(t)
    return 0

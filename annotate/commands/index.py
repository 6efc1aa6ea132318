"""`annotate symbols | callgraph | facts`: the index, asked one question at a time.

JSON shapes are part of the command-line contract (see annotate.jsonout): `symbols` and `facts`
print a list, `callgraph` an object with `edges`. `symbols --types` / `--macros` list a file's
types or macros instead of its functions (a list too).
"""

from __future__ import annotations

from annotate.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser("symbols", help="functions (or types, or macros) defined in one upstream file")
    p.add_argument("target", metavar="UPSTREAM:PATH")
    p.add_argument("--json", action="store_true", help="print JSON")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--types", action="store_true",
                       help="list the file's structs, classes, unions, enums (Python: classes) with their fields")
    which.add_argument("--macros", action="store_true", help="list the file's #define macros")
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


# ---- helpers ------------------------------------------------------------------------------

def project_for_spec(config, spec: str, **kw):
    """The Project a SYMBOL needs: only its upstream's index when it names one (`UP:name`)."""
    from annotate.index.model import parse_symbol
    from annotate.project import open_project
    from annotate.upstreams import load_upstreams

    up = parse_symbol(spec, list(load_upstreams(config))).upstream
    return open_project(config, upstreams=[up] if up else None, **kw)


def symbol_json(sym) -> dict:
    from dataclasses import asdict

    d = asdict(sym)
    d["is_cuda_qualified"] = list(sym.is_cuda_qualified)
    d["id"] = sym.id
    d["key"] = sym.key
    return d


def type_json(index, t) -> dict:
    """A TypeDef as JSON: its fields in declaration order, its methods and nested types by key/name."""
    from dataclasses import asdict

    d = asdict(t)
    for k in ("bases", "nested", "decorators"):
        d[k] = list(d[k])
    d["fields"] = [asdict(f) for f in t.fields]
    d["methods"] = [s.key for s in index.methods_of(t)]
    d["id"] = t.id
    d["key"] = t.key
    return d


def macro_json(m) -> dict:
    return {"name": m.name, "qualified_name": m.name, "kind": "macro", "function_like": m.function_like,
            "params": list(m.params) if m.params is not None else None, "signature": m.signature, "body": m.body,
            "start_line": m.start_line, "end_line": m.end_line, "fingerprint": m.fingerprint, "path": m.path,
            "upstream": m.upstream, "id": m.id, "key": m.key}


def use_json(index, u) -> dict:
    user = index.symbol(u.user)
    return {"user": user.qualified_name, "user_key": u.user, "kind": u.kind, "name": u.name, "how": u.how,
            "file": u.path, "line": u.line, "column": u.column, "targets": list(u.targets)}


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


def fact_json(f) -> dict:
    return {"kind": f.kind, "detail": f.detail, "line": f.line, "rule": f.rule, "file": f.path}


def _table(title: str, columns, rows) -> None:
    from rich.table import Table

    from annotate.terminal import console

    t = Table(title=title)
    for col in columns:
        t.add_column(col)
    for row in rows:
        t.add_row(*row)
    console().print(t)


# ---- commands -----------------------------------------------------------------------------

def cmd_symbols(args, config) -> int:
    from annotate.project import open_project

    up, sep, path = args.target.partition(":")
    if not sep or not path:
        raise UsageError(f"expected UPSTREAM:PATH, got '{args.target}'",
                         hint="e.g. annotate symbols flashinfer:include/flashinfer/norm.cuh")
    project = open_project(config, upstreams=[up])
    project.selected  # an unknown upstream is refused before the index loads
    index = project.index
    path = path.strip("/")
    if not index.has_file(up, path):
        index.file(up, path)  # raises, naming the nearest paths
    if args.types or args.macros:
        return _types_or_macros(index, up, path, args)
    syms = index.symbols_in(up, path)
    if args.json:
        from annotate.jsonout import print_json

        print_json([symbol_json(s) for s in syms])
        return 0
    _table(f"{up}:{path}", ("lines", "kind", "qualified name", "template"),
           [(f"{s.start_line}-{s.end_line}", s.kind, s.qualified_name, (s.template_params or "")[:50]) for s in syms])
    return 0


def _types_or_macros(index, up: str, path: str, args) -> int:
    from annotate.jsonout import print_json

    if args.types:
        types = index.types_in(up, path)
        if args.json:
            print_json([type_json(index, t) for t in types])
            return 0
        _table(f"{up}:{path} types", ("lines", "kind", "qualified name", "template / specialization", "members"),
               [(f"{t.start_line}-{t.end_line}", t.kind, t.qualified_name,
                 (f"<{t.specialization}>" if t.specialization is not None else (t.template_params or ""))[:50],
                 str(len(t.fields))) for t in types])
        return 0
    macros = index.macros_in(up, path)
    if args.json:
        print_json([macro_json(m) for m in macros])
        return 0
    _table(f"{up}:{path} macros", ("lines", "macro", "replacement (first line)"),
           [(f"{m.start_line}-{m.end_line}", m.signature, m.body.split("\n", 1)[0][:60]) for m in macros])
    return 0


def cmd_callgraph(args, config) -> int:
    if args.depth < 1:
        raise UsageError("--depth must be at least 1")
    index = project_for_spec(config, args.symbol).index
    sym = index.resolve(args.symbol)
    edges = index.callgraph(sym, reverse=args.reverse, depth=args.depth)
    if args.json:
        from annotate.jsonout import print_json

        print_json({"root": sym.qualified_name, "root_key": sym.key, "reverse": args.reverse,
                    "depth": args.depth, "edges": [edge_json(index, e) for e in edges]})
        return 0
    rows = []
    for e in edges:
        j = edge_json(index, e)
        callee = j["callee"] + ("" if j["resolved"] else "  [unresolved]") + ("  [ambiguous]" if j["ambiguous"] else "")
        rows.append((j["caller"], j["kind"], callee, f"{e.path}:{e.line}"))
    _table(f"{'callers of' if args.reverse else 'callees of'} {sym.qualified_name}  ({sym.path}:{sym.start_line})",
           ("caller", "kind", "callee", "at"), rows)
    return 0


def cmd_facts(args, config) -> int:
    index = project_for_spec(config, args.symbol).index
    sym = index.resolve(args.symbol)
    facts = index.facts(sym)
    if args.json:
        from annotate.jsonout import print_json

        print_json([fact_json(f) for f in facts])
        return 0
    _table(f"memory-access facts of {sym.qualified_name}  ({sym.path}:{sym.start_line})", ("line", "kind", "detail"),
           [(str(f.line), f.kind, f.detail) for f in facts])
    return 0

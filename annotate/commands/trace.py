"""`annotate trace ENTRY [--when K=V,...] [--json]`: the chains from a Python entry point to the
kernels it reaches, one hop per line (annotate.index.trace does the walk; this prints it).

Text: the chains as a tree (a shared beginning is printed once), each hop with its kind, what it
reaches, file:line and the conditions it is taken under; then the conditions `--when` did not
decide and the branches that reach no kernel. JSON: one object (README, "JSON output").
"""

from __future__ import annotations

from annotate.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser("trace", help="the chain from a Python API function to the kernel(s) it runs")
    p.add_argument("entry", metavar="ENTRY", help="a Python function, e.g. flashinfer.norm.rmsnorm")
    p.add_argument("--when", action="append", default=[], metavar="K=V[,K=V...]",
                   help="take only the branches these parameters take (e.g. head_dim=128,dtype=fp16,causal=true)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_trace)


def parse_when(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            k, eq, v = part.partition("=")
            if not eq or not k.strip() or not v.strip():
                raise UsageError(f"--when: expected KEY=VALUE, got '{part}'", hint="e.g. --when head_dim=128,dtype=fp16")
            out[k.strip()] = v.strip()
    return out


def cmd_trace(args, config) -> int:
    from annotate.index.crosslang import rules
    from annotate.index.model import parse_symbol
    from annotate.project import open_project
    from annotate.upstreams import load_upstreams

    when = parse_when(args.when)
    bad = [k for k in when if k not in rules().key_names()]
    if bad:
        raise UsageError(f"unknown --when key '{bad[0]}'", hint="keys: " + ", ".join(rules().key_names()))
    up = parse_symbol(args.entry, list(load_upstreams(config))).upstream
    project = open_project(config, upstreams=[up] if up else None)
    result = project.trace(args.entry, when)
    if args.json:
        from annotate.jsonout import print_json

        print_json(trace_json(project.index, result))
        return 0
    for line in trace_lines(project.index, result):
        from annotate.terminal import echo

        echo(line)
    return 0


# ---- JSON ----------------------------------------------------------------------------------------

def _name(index, key: str | None) -> str | None:
    if key is None:
        return None
    from annotate.index.model import split_key

    try:
        return split_key(key)[1]
    except ValueError:
        return key


def hop_json(index, h) -> dict:
    return {
        "kind": h.kind,
        "caller": _name(index, h.src),
        "callee": h.target,
        "caller_key": h.src,
        "callee_key": h.dst,
        "upstream": h.upstream,
        "file": h.path,
        "line": h.line,
        "written": h.written,
        "when": [{"condition": g.text, "file": g.path, "line": g.line, "decided": g.decided, "keys": list(g.keys),
                  "note": g.note or None} for g in h.guards],
        "dispatch": [{"macro": d.macro, "line": d.line, "defined_at": d.defined_at, "generated": d.generated,
                      "branches": [{"conditions": list(b.conditions), "bindings": dict(b.bindings)} for b in d.branches],
                      "of": d.total} for d in h.dispatch],
        "binds": dict(h.env),
        "detail": h.detail or None,
    }


def trace_json(index, t) -> dict:
    return {
        "entry": t.entry.qualified_name,
        "entry_key": t.entry.key,
        "upstream": t.entry.upstream,
        "file": t.entry.path,
        "line": t.entry.start_line,
        "when": dict(t.when),
        "kernels": list(t.kernels),
        "chains": [{"kernel": c.kernel, "hops": [hop_json(index, h) for h in c.hops]} for c in t.chains],
        "undecided": [{"condition": g.text, "file": g.path, "line": g.line, "keys": list(g.keys), "note": g.note or None}
                      for g in t.undecided],
        "dead_ends": [{"reason": d.reason, "hops": [hop_json(index, h) for h in d.hops]} for d in t.dead_ends],
        "truncated": t.truncated,
    }


# ---- text ----------------------------------------------------------------------------------------

def hop_label(h) -> str:
    parts = [f"{h.kind:<14} {h.target}   {h.path}:{h.line}"]
    conds = [g.text + ("" if g.decided else " (?)") for g in h.guards]
    if conds:
        parts.append("if " + " and ".join(conds))
    for d in h.dispatch:
        opts = []
        for b in d.branches:
            binds = ", ".join(f"{n}={v}" for n, v in b.bindings)
            opts.append(binds or "(no binding)")
        where = " generated" if d.generated else ""
        parts.append(f"via {d.macro}{where} [{' | '.join(opts)}]" + ("" if len(d.branches) == d.total
                                                                    else f" ({len(d.branches)} of {d.total})"))
    if h.detail:
        parts.append(h.detail)
    return "   ".join(parts)


def trace_lines(index, t) -> list[str]:
    """The chains as an indented tree: one hop per line, a shared beginning printed once."""
    head = f"{t.entry.qualified_name}   {t.entry.upstream}:{t.entry.path}:{t.entry.start_line}"
    if t.when:
        head += "   when " + ", ".join(f"{k}={v}" for k, v in t.when)
    lines = [head]
    if not t.chains:
        lines.append("  (no kernel reached)")
    kernels = set(t.kernels)
    tree: dict = {}
    for c in t.chains:
        node = tree
        for h in c.hops:
            node = node.setdefault(h, {})

    def walk(node: dict, depth: int) -> None:
        for h, sub in node.items():
            lines.append("  " * depth + "- " + hop_label(h) + ("   [kernel]" if h.dst in kernels else ""))
            walk(sub, depth + 1)

    walk(tree, 1)
    lines.append(f"kernels: {', '.join(_name(index, k) for k in t.kernels) or 'none'}")
    if t.undecided:
        lines.append("not decided statically (give --when, or they depend on run-time values):")
        seen = set()
        for g in t.undecided:
            if g.text in seen:
                continue
            seen.add(g.text)
            lines.append(f"  {g.text}   {g.path}:{g.line}" + (f"   (--when {', '.join(g.keys)})" if g.keys else "")
                         + (f"   {g.note}" if g.note else ""))
    for d in t.dead_ends:
        last = d.hops[-1] if d.hops else None
        lines.append(f"reaches no kernel: {last.target if last else ''} at {last.path}:{last.line}: {d.reason}"
                     if last else f"reaches no kernel: {d.reason}")
    if t.truncated:
        lines.append("(truncated: too many chains; narrow them with --when)")
    return lines


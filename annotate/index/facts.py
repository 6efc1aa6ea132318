"""The generic memory-fact walker. What it recognises lives in rules/memory.yaml (data);
this module only knows how to compute a node's fields and test the rules against them."""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass

import yaml

from annotate.index.cst import collapse, final_name_node, node_text, template_args_of, text_without_template_args
from annotate.index.parse import RULES_FILE, macro_table, ts_language

FIELDS = ("text", "callee", "name", "args", "targs", "ptx")
# Identifier-like node types are too many to visit one by one: the query keeps only those
# whose text matches one of the rules' regexes (tree-sitter's #match? predicate).
_LEAF_TYPES = {"identifier", "type_identifier", "field_identifier", "namespace_identifier"}
_PTX_MNEMONIC = re.compile(r"(?<![%\w.])([a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)+)")
_MAX_TEXT = 400


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str
    nodes: tuple[str, ...]
    match: tuple[tuple[str, re.Pattern], ...]
    detail: str


class RuleError(ValueError):
    pass


def parse_rules(raw) -> tuple[Rule, ...]:
    """Validate and compile the rule table (a YAML mapping with `rules:`)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("rules"), list):
        raise RuleError("rules file: expected a mapping with a list `rules:`")
    out, seen = [], set()
    for i, r in enumerate(raw["rules"]):
        where = f"rules[{i}]"
        if not isinstance(r, dict):
            raise RuleError(f"{where}: expected a mapping")
        for key in ("id", "kind", "node", "match", "detail"):
            if key not in r:
                raise RuleError(f"{where}: missing `{key}`")
        if r["id"] in seen:
            raise RuleError(f"{where}: duplicate id {r['id']!r}")
        seen.add(r["id"])
        nodes = tuple([r["node"]] if isinstance(r["node"], str) else r["node"])
        if not isinstance(r["match"], dict) or not r["match"]:
            raise RuleError(f"{where} ({r['id']}): `match` must map fields to regexes")
        match = []
        for fld, rx in r["match"].items():
            if fld not in FIELDS:
                raise RuleError(f"{where} ({r['id']}): unknown field {fld!r}; known: {', '.join(FIELDS)}")
            try:
                match.append((fld, re.compile(rx)))
            except re.error as exc:
                raise RuleError(f"{where} ({r['id']}): bad regex for {fld}: {exc}") from None
        names = {f for _, f, _, _ in string.Formatter().parse(r["detail"]) if f}
        unknown = names - set(FIELDS) - {"m"}
        if unknown:
            raise RuleError(f"{where} ({r['id']}): detail uses unknown fields {sorted(unknown)}")
        out.append(Rule(str(r["id"]), str(r["kind"]), nodes, tuple(match), str(r["detail"])))
    return tuple(out)


@functools.cache
def rules() -> tuple[Rule, ...]:
    return parse_rules(yaml.safe_load(RULES_FILE.read_text(encoding="utf-8")))


@functools.cache
def rules_by_type(table: tuple[Rule, ...] | None = None) -> dict[str, tuple[Rule, ...]]:
    out: dict[str, list[Rule]] = {}
    for r in table or rules():
        for t in r.nodes:
            out.setdefault(t, []).append(r)
    return {k: tuple(v) for k, v in out.items()}


def _ts_regex(rx: str) -> str:
    """A Python regex as a tree-sitter query string literal (Rust regex syntax, escaped)."""
    return rx.replace("(?P<m>", "(").replace("\\", "\\\\").replace('"', '\\"')


@functools.cache
def fact_query(table: tuple[Rule, ...] | None = None):
    from tree_sitter import Query

    return Query(ts_language("cuda"), fact_query_source(table))


@functools.cache
def fact_query_source(table: tuple[Rule, ...] | None = None) -> str:
    """One pattern per node type the rules name, capturing the node as @n."""
    by_type = rules_by_type(table)
    patterns = []
    for t, rs in sorted(by_type.items()):
        if t in _LEAF_TYPES:
            rx = "|".join(f"(?:{_ts_regex(p.pattern)})" for r in rs for f, p in r.match if f == "text")
            patterns.append(f'(({t}) @n (#match? @n "{rx}"))' if rx else f"({t}) @n")
        else:
            patterns.append(f"({t}) @n")
    return "\n".join(patterns)


def node_fields(node) -> dict[str, str]:
    f = {k: "" for k in FIELDS}
    f["text"] = collapse(node_text(node)[: _MAX_TEXT * 2])[:_MAX_TEXT]
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        if fn is not None:
            callee = text_without_template_args(fn)[:200]
            head, sep, rest = callee.partition("::")
            if sep and head in macro_table().namespaces:  # FLASH_NAMESPACE::copy -> flash::copy
                callee = macro_table().namespaces[head] + "::" + rest
            f["callee"] = callee
            nm = final_name_node(fn)
            f["name"] = node_text(nm) if nm is not None else ""
            ta = template_args_of(fn)
            f["targs"] = collapse(node_text(ta))[1:-1].strip() if ta is not None else ""
        args = node.child_by_field_name("arguments")
        f["args"] = collapse(node_text(args))[:_MAX_TEXT] if args is not None else ""
    elif node.type == "gnu_asm_expression":
        code = node.child_by_field_name("assembly_code")
        body = node_text(code) if code is not None else f["text"]
        seen: list[str] = []
        for m in _PTX_MNEMONIC.finditer(body.replace("\\n", "\n").replace("\\t", " ")):
            if m.group(1) not in seen:
                seen.append(m.group(1))
        f["ptx"] = "; ".join(seen)
    return f


class _Safe(dict):
    def __missing__(self, key):
        return ""


def apply_rules(node, table: tuple[Rule, ...] | None = None):
    """Yield (rule, detail) for every rule that matches this node."""
    rs = rules_by_type(table).get(node.type)
    if not rs:
        return
    fields = node_fields(node)
    for r in rs:
        first = named = None
        for fld, rx in r.match:
            m = rx.search(fields[fld])
            if not m:
                break
            first = first or m
            if named is None and "m" in rx.groupindex and m.group("m"):
                named = m
        else:
            m_text = named.group("m") if named is not None else (first.group(0) if first is not None else "")
            values = _Safe(fields)
            values["text"] = fields["text"][:100]
            values["m"] = m_text
            yield r, r.detail.format_map(values)[:200]


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


def _field(node, key: str, text: str | None) -> str:
    """One field of a node (`text` is the node's text field, passed when already known)."""
    if key == "text":
        return collapse(node_text(node)[: _MAX_TEXT * 2])[:_MAX_TEXT]
    if node.type == "call_expression":
        if key == "args":
            args = node.child_by_field_name("arguments")
            return collapse(node_text(args))[:_MAX_TEXT] if args is not None else ""
        fn = node.child_by_field_name("function")
        if fn is None or key == "ptx":
            return ""
        if key == "callee":
            callee = text_without_template_args(fn)[:200]
            head, sep, rest = callee.partition("::")
            if sep and head in macro_table().namespaces:  # FLASH_NAMESPACE::copy -> flash::copy
                callee = macro_table().namespaces[head] + "::" + rest
            return callee
        if key == "name":
            nm = final_name_node(fn)
            return node_text(nm) if nm is not None else ""
        ta = template_args_of(fn)  # targs
        return collapse(node_text(ta))[1:-1].strip() if ta is not None else ""
    if node.type == "gnu_asm_expression" and key == "ptx":
        code = node.child_by_field_name("assembly_code")
        body = node_text(code) if code is not None else text
        seen: list[str] = []
        for m in _PTX_MNEMONIC.finditer(body.replace("\\n", "\n").replace("\\t", " ")):
            if m.group(1) not in seen:
                seen.append(m.group(1))
        return "; ".join(seen)
    return ""


class _Fields(dict):
    """A node's fields (FIELDS), each computed when a rule first reads it: most candidate nodes
    fail their rules on the first field, so the costly ones (a callee without template
    arguments, a collapsed argument list) are rarely needed."""

    def __init__(self, node):
        super().__init__()
        self.node = node

    def __missing__(self, key: str) -> str:
        if key not in FIELDS:
            return ""
        value = self[key] = _field(self.node, key, self["text"] if key == "ptx" else None)
        return value


def node_fields(node) -> dict[str, str]:
    """Every field of a node (the rules' view of it)."""
    f = _Fields(node)
    return {k: f[k] for k in FIELDS}


class _Detail(dict):
    """The values a rule's detail template sees: the node's fields, `m`, and "" for the rest."""

    def __init__(self, fields: _Fields, m_text: str):
        super().__init__(text=fields["text"][:100], m=m_text)
        self.fields = fields

    def __missing__(self, key: str) -> str:
        return self.fields[key]


@functools.cache
def _prefilters(table: tuple[Rule, ...] | None = None) -> dict[str, dict[str, re.Pattern]]:
    """node type -> field -> one regex matching wherever any of the type's rules that test
    that field first would: a node whose field it misses fails all of them, so they are skipped
    without testing each (a call_expression meets 25 rules, and almost always fails them all)."""
    out: dict[str, dict[str, re.Pattern]] = {}
    for t, rs in rules_by_type(table).items():
        by_field: dict[str, list[str]] = {}
        for r in rs:
            by_field.setdefault(r.match[0][0], []).append(_NAMED_GROUP.sub("(?:", r.match[0][1].pattern))
        for fld, pats in by_field.items():
            try:
                out.setdefault(t, {})[fld] = re.compile("|".join(f"(?:{p})" for p in pats))
            except re.error:  # a pattern that does not combine is tested on its own
                pass
    return out


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def apply_rules(node, table: tuple[Rule, ...] | None = None):
    """Yield (rule, detail) for every rule that matches this node."""
    rs = rules_by_type(table).get(node.type)
    if not rs:
        return
    fields = _Fields(node)
    pre = _prefilters(table).get(node.type, {})
    passed: dict[str, bool] = {}
    for r in rs:
        fld0 = r.match[0][0]
        if fld0 in pre:
            ok = passed.get(fld0)
            if ok is None:
                ok = passed[fld0] = pre[fld0].search(fields[fld0]) is not None
            if not ok:
                continue
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
            yield r, r.detail.format_map(_Detail(fields, m_text))[:200]


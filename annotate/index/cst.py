"""Small helpers over tree-sitter nodes shared by the extractors and the fact walker."""

from __future__ import annotations

import re

_WS = re.compile(r"\s+")
_TEMPLATE_KW = re.compile(r"\btemplate\s+")
_SPACE_AROUND_SEP = re.compile(r"\s*(::|->|\.)\s*")
_ANY_SPACE = re.compile(r"\s")

NAME_TYPES = {"identifier", "field_identifier", "type_identifier", "namespace_identifier",
              "destructor_name", "operator_name", "operator_cast"}


def node_text(node) -> str:
    return node.text.decode("utf-8", "replace")


def collapse(text: str) -> str:
    return _WS.sub(" ", text).strip()


def text_without_template_args(node) -> str:
    """The node's text with every template_argument_list removed (outermost only)."""
    base = node.start_byte
    src = node.text
    if b"<" not in src:  # no template argument list without a '<' (most names): no walk
        return _normalise(src.decode("utf-8", "replace"))
    cuts: list[tuple[int, int]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        for c in n.children:
            if c.type == "template_argument_list":
                cuts.append((c.start_byte - base, c.end_byte - base))
            elif c.child_count:
                stack.append(c)
    if not cuts:
        out = src
    else:
        cuts.sort()
        parts, pos = [], 0
        for a, b in cuts:
            if a >= pos:
                parts.append(src[pos:a])
                pos = b
        parts.append(src[pos:])
        out = b"".join(parts)
    return _normalise(out.decode("utf-8", "replace"))


def _normalise(text: str) -> str:
    """Without `template` keywords, whitespace collapsed, none around `::`, `->`, `.`."""
    if "template" in text:
        text = _TEMPLATE_KW.sub("", text)
    if not _ANY_SPACE.search(text):  # nothing the two substitutions below would change
        return text
    return _SPACE_AROUND_SEP.sub(r"\1", collapse(text))


def final_name_node(node):
    """The node naming the function at the end of a callee/declarator expression:
    `a::b<T>::c` -> c, `obj.template f<N>` -> f, `f<T>` -> f."""
    n = node
    for _ in range(32):
        t = n.type
        if t in NAME_TYPES:
            return n
        nxt = None
        if t in ("qualified_identifier", "template_function", "template_method", "template_type"):
            nxt = n.child_by_field_name("name")
        elif t == "field_expression":
            nxt = n.child_by_field_name("field")
        elif t == "dependent_name":
            nxt = n.named_children[-1] if n.named_children else None
        elif t in ("parenthesized_expression", "pointer_expression", "cast_expression"):
            nxt = n.child_by_field_name("argument") or n.child_by_field_name("value") or (
                n.named_children[-1] if n.named_children else None)
        if nxt is None:
            return None
        n = nxt
    return None


def template_args_of(node):
    """The template_argument_list attached to the final name of a callee, or None."""
    n = node
    for _ in range(32):
        if n.type in ("template_function", "template_method", "template_type"):
            return n.child_by_field_name("arguments")
        if n.type == "qualified_identifier":
            n = n.child_by_field_name("name")
        elif n.type == "field_expression":
            n = n.child_by_field_name("field")
        elif n.type == "dependent_name" and n.named_children:
            n = n.named_children[-1]
        else:
            return None
        if n is None:
            return None
    return None


def line_of(node) -> int:
    return node.start_point[0] + 1

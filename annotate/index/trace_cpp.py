"""What a trace needs to know about one C++ call site, worked out when asked (only the functions
on a chain are read): the conditions around it (`if`, `else`, `switch`/`case`, `?:`), the
dispatch macros it sits in (their argument spans, read from the text), the template arguments
written at the call, and the explicit specialisation a definition is (`run_mha_fwd_<half_t, 128, true>`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from annotate.index.crosslang import balanced, split_args

_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)


@dataclass(frozen=True)
class CppGuard:
    text: str  # the condition as written; for an `else` branch, negated
    line: int  # where the condition is written


class CppFile:
    """One C++ file of a checkout, parsed once per index (kept by `Index.memo`)."""

    def __init__(self, data: bytes):
        self.data = data
        self.line_starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
        # comments blanked (same length), so brackets inside them do not count
        self.code = _COMMENT.sub(lambda m: re.sub(rb"[^\n]", b" ", m.group(0)), data).decode("utf-8", "replace")

    @cached_property
    def tree(self):
        from annotate.index.parse import parser, prepare_cuda

        return parser("cuda").parse(prepare_cuda(self.data))

    def offset(self, line: int, column: int) -> int:
        return self.line_starts[line - 1] + column if 0 < line <= len(self.line_starts) else len(self.data)

    def line_text(self, line: int) -> str:
        if not 0 < line <= len(self.line_starts):
            return ""
        end = self.line_starts[line] - 1 if line < len(self.line_starts) else len(self.data)
        return self.data[self.line_starts[line - 1]:end].decode("utf-8", "replace").strip()

    def guards_at(self, line: int, column: int) -> tuple[CppGuard, ...]:
        """The conditions the code at (line, column) runs under, outermost first, up to its function."""
        point = (line - 1, column)
        node = self.tree.root_node.descendant_for_point_range(point, point)
        pos = self.offset(line, column)
        out: list[CppGuard] = []
        while node is not None and node.type not in ("function_definition", "lambda_expression_outer"):
            parent = node.parent
            if parent is None:
                break
            if parent.type == "if_statement":
                cond = parent.child_by_field_name("condition")
                alt = parent.child_by_field_name("alternative")
                text = _clause(cond)
                if text and not _inside(cond, pos):
                    if alt is not None and _inside(alt, pos):
                        out.append(CppGuard(_neg(text), cond.start_point[0] + 1))
                    else:
                        out.append(CppGuard(text, cond.start_point[0] + 1))
            elif parent.type == "conditional_expression":
                cond = parent.child_by_field_name("condition")
                alt = parent.child_by_field_name("alternative")
                if cond is not None and not _inside(cond, pos):
                    text = " ".join(cond.text.decode("utf-8", "replace").split())
                    out.append(CppGuard(_neg(text) if alt is not None and _inside(alt, pos) else text,
                                        cond.start_point[0] + 1))
            elif parent.type in _BLOCKS:
                # an earlier `if (c) { ...; return ...; }` in the same block: the code after it
                # runs only where c is false (FA3's `if (params.d <= 64) {.. return ..}` chains)
                for cond in reversed(_early_exits(parent, node)):
                    out.append(CppGuard(_neg(_clause(cond)), cond.start_point[0] + 1))
            elif parent.type == "case_statement":
                sw = parent.parent
                while sw is not None and sw.type != "switch_statement":
                    sw = sw.parent
                value = parent.child_by_field_name("value")
                if sw is not None:
                    subject = _clause(sw.child_by_field_name("condition"))
                    if value is not None:
                        out.append(CppGuard(f"{subject} == {' '.join(value.text.decode().split())}",
                                            parent.start_point[0] + 1))
            node = parent
        return tuple(reversed(out))

    def macro_call(self, line: int, column: int) -> tuple[list[str], int, int] | None:
        """A function-like macro called at (line, column): its arguments and the offsets of its
        argument list (inside the parentheses)."""
        start = self.offset(line, column)
        paren = self.code.find("(", start)
        if paren < 0 or self.code[start:paren].strip(" \t\n\\").count(" ") > 0:
            return None
        end = balanced(self.code, paren)
        if end < 0:
            return None
        return split_args(self.code[paren + 1:end - 1]), paren + 1, end - 1

    def template_args_at(self, line: int, column: int) -> list[str] | None:
        """The template arguments written after the name at (line, column) (`f<A, B>(...)`), or None."""
        pos = self.offset(line, column)
        m = re.compile(r"[\w:]*\s*").match(self.code, pos)
        i = m.end() if m else pos
        if i >= len(self.code) or self.code[i] != "<":
            return None
        end = _angle_end(self.code, i)
        return None if end < 0 else [" ".join(a.split()) for a in split_args(self.code[i + 1:end - 1])]

    def block_text(self, line: int, column: int) -> str:
        """The text of the innermost `{...}` block holding (line, column)."""
        point = (line - 1, column)
        node = self.tree.root_node.descendant_for_point_range(point, point)
        while node is not None and node.type != "compound_statement":
            node = node.parent
        return node.text.decode("utf-8", "replace") if node is not None else ""

    def call_args(self, line: int, column: int) -> list[str] | None:
        """The arguments of the call whose name is at (line, column), as written."""
        pos = self.offset(line, column)
        m = re.compile(r"[\w:]*\s*").match(self.code, pos)
        i = m.end() if m else pos
        if i < len(self.code) and self.code[i] == "<":
            i = _angle_end(self.code, i)
            if i < 0:
                return None
            while i < len(self.code) and self.code[i] in " \t\n":
                i += 1
        if i >= len(self.code) or self.code[i] != "(":
            return None
        end = balanced(self.code, i)
        if end < 0:
            return None
        inner = self.code[i + 1:end - 1].strip()
        return [" ".join(a.split()) for a in split_args(inner)] if inner else []


# Statement lists whose earlier statements can end the function before a later one runs; a
# conditional-compilation group (`#ifndef FLASHATTENTION_DISABLE_HDIM64`) is read through.
_BLOCKS = frozenset({"compound_statement", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"})
_ALTERNATIVES = frozenset({"preproc_else", "preproc_elif"})


def _early_exits(block, child) -> list:
    """The conditions of the `if` statements before `child` in `block` (and in the conditional
    groups before it) that have no `else` and whose body always leaves the function. Of a group,
    only the branch the default build compiles (`#if`/`#ifdef`, not `#else`) is read, and none
    of it when `child` is in its `#else`: the branches exclude each other."""
    if child.type in _ALTERNATIVES:
        return []
    out = []
    for s in block.named_children:
        if s.start_byte >= child.start_byte:
            break
        if s.type in _ALTERNATIVES:
            continue
        if s.type in _BLOCKS and s.type != "compound_statement":
            out.extend(_early_exits(s, child))
        elif s.type == "if_statement" and s.child_by_field_name("alternative") is None \
                and _always_leaves(s.child_by_field_name("consequence")):
            cond = s.child_by_field_name("condition")
            if cond is not None and _clause(cond):
                out.append(cond)
    return out


def _always_leaves(stmt) -> bool:
    """The statement returns (or throws) on every path, as written."""
    if stmt is None:
        return False
    if stmt.type in ("return_statement", "throw_statement"):
        return True
    if stmt.type == "compound_statement":
        body = [c for c in stmt.named_children if c.type != "comment"]
        return bool(body) and _always_leaves(body[-1])
    if stmt.type == "if_statement":
        alt = stmt.child_by_field_name("alternative")
        if alt is not None and alt.type == "else_clause":
            alt = next((c for c in alt.named_children if c.type != "comment"), None)
        return alt is not None and _always_leaves(stmt.child_by_field_name("consequence")) and _always_leaves(alt)
    return False


def _clause(node) -> str:
    if node is None:
        return ""
    t = " ".join(node.text.decode("utf-8", "replace").split())
    while t.startswith("(") and t.endswith(")") and _wraps(t):
        t = t[1:-1].strip()
    return t


def _wraps(t: str) -> bool:
    depth = 0
    for i, c in enumerate(t):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(t) - 1:
            return False
    return True


def _neg(t: str) -> str:
    from annotate.index.conditions import negate

    return negate(t, "cuda")


def _inside(node, pos: int) -> bool:
    return node is not None and node.start_byte <= pos < node.end_byte


def _angle_end(text: str, start: int) -> int:
    """Index past the `>` closing the `<` at `start` (brackets nest; `>>` closes two)."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c in "([{":
            j = balanced(text, i, c, {"(": ")", "[": "]", "{": "}"}[c])
            if j < 0:
                return -1
            i = j
            continue
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c in ";{}":
            return -1
        i += 1
    return -1


def explicit_args(signature: str, name: str) -> list[str] | None:
    """The template arguments of an explicit specialisation's head (`void f<half_t, 128>(...)`)."""
    m = re.search(r"(?:^|[\s:*&])" + re.escape(name) + r"\s*<", signature)
    if not m:
        return None
    start = m.end() - 1
    end = _angle_end(signature, start)
    return None if end < 0 else [" ".join(a.split()) for a in split_args(signature[start + 1:end - 1])]


def template_param_names(template_params: str | None) -> list[str]:
    """`typename T, bool Is_causal=false, int N` -> [T, Is_causal, N] (the outermost head only)."""
    if not template_params:
        return []
    head = template_params.split(";")[-1]
    out = []
    for p in split_args(head):
        p = p.split("=")[0].strip()
        m = re.search(r"(\w+)\s*$", p.replace("...", " "))
        if m:
            out.append(m.group(1))
    return out


def param_defaults(signature: str) -> list[tuple[str, str | None]]:
    """(name, default or None) of a function head's parameters."""
    m = re.search(r"\(", signature)
    if not m:
        return []
    end = balanced(signature, m.start())
    if end < 0:
        return []
    out = []
    for p in split_args(signature[m.start() + 1:end - 1]):
        left, eq, default = p.partition("=")
        nm = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*$", left.strip())
        if nm:
            out.append((nm.group(1), default.strip() if eq else None))
    return out


def normal(text: str) -> str:
    """Template argument text compared loosely: whitespace and a leading `::` dropped."""
    return re.sub(r"\s+", "", text).lstrip(":")

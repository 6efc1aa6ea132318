"""Conditions met on a trace, read and decided: the test of an `if` around a call (C++ or
Python), a dispatch macro's branch condition, a template parameter's value.

A condition is kept as written; deciding it reads a tiny expression tree (and / or / not,
one comparison, operands) in which each operand is looked up first among the names the walk
has bound (template arguments, dispatch bindings: `Is_causal` = true), then among the rules'
variables (`params.d` is `head_dim`), whose values come from `--when`. What cannot be looked up
is unknown, and so is everything that depends on it (three-valued logic): `decide` answers
True, False or None.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Mapping

from annotate.index.crosslang import Rules

# tree: ("or", [t...]) | ("and", [t...]) | ("not", t) | ("cmp", op, left_text, right_text) | ("atom", text)

_CPP_TOKEN = re.compile(r"""
    \s*(?:
      (?P<op>&&|\|\||==|!=|<=|>=|(?<![<])<(?![<=])|(?<![>])>(?![>=])|!(?!=))
    | (?P<lp>\() | (?P<rp>\))
    | (?P<other>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^\s()&|=!<>]+|[<>=]+|[&|])
    )""", re.X)


# C++'s alternative tokens (cutlass writes `if (not launch_with_pdl)`)
_CPP_WORDS = {"not": "!", "and": "&&", "or": "||", "not_eq": "!="}


def parse_cpp(text: str):
    """The expression tree of a C++ condition (operands as normalised text)."""
    toks = []
    for m in _CPP_TOKEN.finditer(text):
        for kind in ("op", "lp", "rp", "other"):
            if m.group(kind) is not None:
                v = m.group(kind)
                toks.append(("op", _CPP_WORDS[v]) if kind == "other" and v in _CPP_WORDS else (kind, v))
                break
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else (None, None)

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def or_():
        parts = [and_()]
        while peek() == ("op", "||"):
            take()
            parts.append(and_())
        return parts[0] if len(parts) == 1 else ("or", parts)

    def and_():
        parts = [not_()]
        while peek() == ("op", "&&"):
            take()
            parts.append(not_())
        return parts[0] if len(parts) == 1 else ("and", parts)

    def not_():
        if peek() == ("op", "!"):
            take()
            return ("not", not_())
        return cmp()

    def cmp():
        left_start = pos
        left = operand()
        k, v = peek()
        if k == "op" and v in ("==", "!=", "<", "<=", ">", ">="):
            take()
            right_start = pos
            right = operand()
            return ("cmp", v, left, right, _join(toks[left_start:right_start - 1]), _join(toks[right_start:pos]))
        return left

    def operand():
        start = pos
        k, v = peek()
        if k == "lp":
            # a parenthesised sub-expression, unless it is a call's argument list (handled below)
            take()
            inner = or_()
            if peek()[0] == "rp":
                take()
            if peek()[0] not in ("other", "lp"):
                return inner
        depth = 0
        while pos < len(toks):
            k, v = peek()
            if k == "lp":
                depth += 1
            elif k == "rp":
                if depth == 0:
                    break
                depth -= 1
            elif k == "op" and depth == 0:
                break
            take()
        return ("atom", _join(toks[start:pos]))

    tree = or_()
    return tree if pos >= len(toks) else ("atom", " ".join(text.split()))


def _join(toks) -> str:
    out = ""
    for k, v in toks:
        if out and k == "other" and out[-1] not in "(.:>" and not out.endswith("->") and not v.startswith((".", "::", "->", "(")):
            out += " "
        out += v
    return out


def parse_python(text: str):
    """The expression tree of a Python condition."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return ("atom", " ".join(text.split()))
    return _from_ast(node)


def _from_ast(node):
    if isinstance(node, ast.BoolOp):
        return ("and" if isinstance(node.op, ast.And) else "or", [_from_ast(v) for v in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ("not", _from_ast(node.operand))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        ops = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
               ast.Is: "==", ast.IsNot: "!="}
        op = ops.get(type(node.ops[0]))
        if op:
            left, right = ast.unparse(node.left), ast.unparse(node.comparators[0])
            return ("cmp", op, _from_ast(node.left), _from_ast(node.comparators[0]), left, right)
    return ("atom", ast.unparse(node))


# ---- deciding -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    value: bool | None  # None: could not be decided
    keys: tuple[str, ...]  # --when keys the condition reads (decided or not)
    notes: tuple[str, ...] = ()  # the rules' notes on the variables it reads


def _literal(text: str):
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("nullptr", "none", "null"):
        return None
    if re.fullmatch(r"[-+]?\d+[uUlL]*", t):
        return int(re.sub(r"[uUlL]+$", "", t))
    if re.fullmatch(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[fF]?", t):
        return float(t.rstrip("fF"))
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    return _UNKNOWN


class _Unknown:
    def __repr__(self) -> str:
        return "unknown"


_UNKNOWN = _Unknown()


def when_value(raw: str):
    """A --when value as the evaluator compares it: bool, int, float or string."""
    v = _literal(raw)
    return raw if v is _UNKNOWN or v is None else v


class Decider:
    """Decides conditions with `when` (key -> value from --when) and `env` (name -> value bound
    by the walk: template arguments, dispatch bindings)."""

    def __init__(self, rules: Rules, when: Mapping[str, str], env: Mapping[str, str] | None = None):
        self.rules = rules
        self.when = {k: when_value(v) if isinstance(v, str) else v for k, v in when.items()}
        self.env = dict(env or {})
        self._notes: list[str] = []

    def decide(self, text: str, language: str = "cuda") -> Verdict:
        tree = parse_python(text) if language == "python" else parse_cpp(text)
        keys: list[str] = []
        self._notes: list[str] = []
        value = self._eval(tree, keys)
        notes = tuple(dict.fromkeys(self._notes))
        if value is _UNKNOWN or not isinstance(value, (bool, int, float, str)) and value is not None:
            return Verdict(None, tuple(dict.fromkeys(keys)), notes)
        return Verdict(bool(value), tuple(dict.fromkeys(keys)), notes)

    # the evaluator works on values, with _UNKNOWN for "cannot tell"
    def _eval(self, t, keys: list[str]):
        kind = t[0]
        if kind in ("and", "or"):
            vals = [self._truth(self._eval(x, keys)) for x in t[1]]
            if kind == "and":
                return False if False in vals else (_UNKNOWN if _UNKNOWN in vals else True)
            return True if True in vals else (_UNKNOWN if _UNKNOWN in vals else False)
        if kind == "not":
            v = self._truth(self._eval(t[1], keys))
            return _UNKNOWN if v is _UNKNOWN else not v
        if kind == "cmp":
            whole = self._variable(f"{t[4]} {t[1]} {t[5]}", keys)
            if whole is not _UNKNOWN:
                return whole
            a, b = self._eval(t[2], keys), self._eval(t[3], keys)
            return _compare(t[1], a, b)
        return self._atom(t[1], keys)

    @staticmethod
    def _truth(v):
        if v is _UNKNOWN:
            return _UNKNOWN
        if isinstance(v, str):
            return _UNKNOWN  # a string operand is no truth value we can judge
        return bool(v)

    def _atom(self, text: str, keys: list[str]):
        text = " ".join(text.split())
        if text.startswith("(") and text.endswith(")"):
            return self._eval(parse_cpp(text[1:-1]), keys)
        lit = _literal(text)
        if lit is not _UNKNOWN:
            return lit
        if text in self.env:
            return self._env_value(text, keys)
        return self._variable(text, keys)

    def _env_value(self, name: str, keys: list[str]):
        raw = self.env[name]
        lit = _literal(raw)
        if lit is not _UNKNOWN:
            return lit
        jinja = re.fullmatch(r"\{\{\s*(\w+)\s*\}\}", raw)
        if jinja:  # a JIT template's parameter (`{{ head_dim_qk }}`): what --when says of it
            return self._variable(jinja.group(1), keys)
        var = self.rules.variable(name)
        if var is not None:  # a bound type: `elem_type` = cutlass::half_t -> dtype fp16
            val = self.rules.type_value(var.key, raw)
            if val is not None:
                return val
        return _UNKNOWN

    def _variable(self, text: str, keys: list[str]):
        var = self.rules.variable(text)
        if var is None:
            return _UNKNOWN
        keys.append(var.key)
        if var.note:
            self._notes.append(var.note)
        if var.key not in self.when:
            return _UNKNOWN
        got = self.when[var.key]
        if var.true is not None:
            return str(got).lower() == var.true.lower()
        if var.true_match is not None:
            return bool(var.true_match.fullmatch(str(got).lower()))
        if var.round_up:
            n = _literal(str(got))
            if type(n) is not int:
                return _UNKNOWN
            return next((x for x in var.round_up if n <= x), _UNKNOWN)
        return got


def _compare(op: str, a, b):
    if a is _UNKNOWN or b is _UNKNOWN:
        return _UNKNOWN
    if (isinstance(a, str) or isinstance(b, str)) and all(
            isinstance(x, (int, float)) or isinstance(x, str) and _looks_version(x) for x in (a, b)):
        a, b = _version(str(a)), _version(str(b))  # "2.4.0" against a --when torch=2.5
    try:
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    except TypeError:
        if op in ("==", "!="):
            return (op == "!=") ^ (str(a).lower() == str(b).lower())
        return _UNKNOWN


def _looks_version(s: str) -> bool:
    return bool(re.fullmatch(r"\d+(?:\.\d+)*(?:[.+\w-]*)?", s))


def _version(s: str) -> tuple[int, ...]:
    got = [int(x) for x in re.findall(r"\d+", s)[:3]]
    return tuple(got + [0] * (3 - len(got)))


def negate(text: str, language: str) -> str:
    """The condition of the other branch, as a reader would write it."""
    t = " ".join(text.split())
    if language == "python":
        return t[4:] if t.startswith("not ") and " " not in t[4:].strip("()") else f"not ({t})" if " " in t else f"not {t}"
    if t.startswith("!(") and t.endswith(")") and _balanced_inner(t[1:]):
        return t[2:-1]
    if t.startswith("!") and not t.startswith("!=") and re.fullmatch(r"[\w.:>-]+(?:\(\))?", t[1:]):
        return t[1:]
    return f"!({t})" if re.search(r"[\s&|<>=!]", t) else f"!{t}"


def _balanced_inner(t: str) -> bool:
    depth = 0
    for i, c in enumerate(t):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(t) - 1:
            return False
    return True

"""The derived names of index/model.py: each made and parsed in one place."""

from __future__ import annotations

import pytest

from annotate.errors import UsageError
from annotate.index.model import (SOURCE_SUFFIXES, Symbol, SymbolSpec, bare_name, language_of, parse_symbol,
                                  split_key, symbol_key)


def test_key_round_trip_even_with_at_and_colon_in_path():
    for parts in [("flashinfer", "flashinfer::norm::RMSNormKernel", "include/flashinfer/norm.cuh", 42),
                  ("demo", "ns::operator()", "weird@dir/a:b.h", 3),
                  ("fa", "flash_attn.ops.f", "flash_attn/ops.py", 1)]:
        assert split_key(symbol_key(*parts)) == parts
    sym = Symbol("u", "p.h", "f", "ns::f", "host", "void f()", None, 5, 6, 5, "0" * 16)
    assert sym.key == symbol_key("u", "ns::f", "p.h", 5) == "u:ns::f@p.h:5"


@pytest.mark.parametrize("bad", ["", "noupstream", "u:name", "u:name@path", "u:name@path:x", ":n@p:1"])
def test_split_key_rejects_non_keys(bad):
    with pytest.raises(ValueError):
        split_key(bad)


@pytest.mark.parametrize("name,bare", [
    ("a::b::f", "f"), ("mod.Cls.f", "f"), ("obj.f", "f"), ("p->f", "f"), ("a->b.c", "c"), ("f", "f"),
    ("A::operator->", "operator->"), ("obj.operator()", "operator()"), ("ns::operator[]", "operator[]"),
    ("ns::operator new", "operator new"), ("operator_x", "operator_x"), ("operator.f", "f"),
])
def test_bare_name(name, bare):
    assert bare_name(name) == bare


def test_language_of_and_suffixes():
    assert language_of("a/b.CUH") == "cuda" and language_of("x.inl") == "cuda" and language_of("m.py") == "python"
    assert language_of("README.md") is None and language_of("cu") is None
    assert all(language_of("f" + s) for s in SOURCE_SUFFIXES)


def test_parse_symbol():
    ups = ["flashinfer", "flash-attention"]
    assert parse_symbol("flashinfer::norm::RMSNormKernel", ups) == SymbolSpec(None, "flashinfer::norm::RMSNormKernel")
    assert parse_symbol(" flashinfer:norm::f@include/a.cuh:12 ", ups) == SymbolSpec("flashinfer", "norm::f", "include/a.cuh", 12)
    assert parse_symbol("f@a.cuh", ups) == SymbolSpec(None, "f", "a.cuh", None)
    assert parse_symbol("flash-attention:flash::f@a:b.h:7", ups) == SymbolSpec("flash-attention", "flash::f", "a:b.h", 7)
    assert parse_symbol("::global_f", ups) == SymbolSpec(None, "::global_f")
    with pytest.raises(UsageError, match="unknown upstream 'flashinfr'"):
        parse_symbol("flashinfr:norm::f", ups)

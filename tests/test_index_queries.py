"""The data files of the index load against the pinned grammars: every query compiles, the
macro table and the rule table parse, and the generated fact query compiles too."""

from __future__ import annotations

import pytest

from annotate.index import parse
from annotate.index.facts import fact_query, rules


@pytest.mark.parametrize("path", parse.query_files(), ids=lambda p: p.name)
def test_query_compiles(path):
    q = parse.query(path.stem)
    assert q.pattern_count >= 1
    lang = path.stem.split("-", 1)[0]
    assert lang in ("cuda", "python")


def test_grammar_versions_are_the_pinned_ones():
    import importlib.metadata as md

    assert md.version("tree-sitter").startswith("0.2")
    assert md.version("tree-sitter-cuda") == "0.21.2"


def test_macro_table():
    t = parse.macro_table()
    assert t.qualifiers["FLASHINFER_INLINE"] == ("__device__", "__forceinline__")
    assert t.namespaces["FLASH_NAMESPACE"] == "flash"
    assert t.launchers["cudaLaunchKernelEx"] == 1


def test_blanking_keeps_positions():
    src = b"template <int N>\nFLASHINFER_INLINE void f() {\n#pragma unroll\n  CUTLASS_PRAGMA_UNROLL\n}\n"
    out, n = parse.blank_macros(src)
    assert len(out) == len(src) and out.count(b"\n") == src.count(b"\n") and n == 2
    assert b"FLASHINFER_INLINE" not in out and out.index(b"void") == src.index(b"void")


def test_blanking_skips_define_lines():
    src = b"#define FLASHINFER_INLINE inline __device__\n"
    assert parse.blank_macros(src)[0] == src


def test_unbalanced_conditionals_blanked_balanced_kept():
    src = (b"void f() {\n#if A\n  if (x) {\n#endif\n  g();\n#if A\n  }\n#endif\n#ifdef B\n  h();\n#endif\n}\n")
    out, n = parse.blank_unbalanced_conditionals(src)
    assert n == 2 and len(out) == len(src)
    assert b"if (x)" not in out and b"h();" in out and b"g();" in out


def test_conditionals_in_function_heads_keep_first_variant():
    src = b"void\n#if A\nf(\n#else\ng(\n#endif\n int x) {}\n#define OPEN {\n#if B\n#define X (\n#endif\n"
    out, n = parse.blank_unbalanced_conditionals(src)
    assert n == 1 and b"f(" in out and b"g(" not in out and b"#if A" not in out and b"#define X (" in out


def test_namespace_ranges():
    text = b"namespace a {\nnamespace {\n// namespace fake {\nvoid f() { }\n}\n}\nnamespace b::c { }\n"
    got = [(n) for _, _, n in parse.namespace_ranges(text)]
    assert got == ["a", None, "b::c"]


def test_fact_query_compiles_and_tool_version_is_stable():
    assert fact_query().pattern_count >= 1
    assert len(rules()) > 20
    assert parse.tool_version() == parse.tool_version() and len(parse.tool_version()) == 16


def test_one_walk_gives_each_query_its_own_matches():
    # extraction runs all queries (and the fact rules) in one walk; each must see exactly the
    # matches it gets alone, in the same order
    from pathlib import Path

    from tree_sitter import QueryCursor

    from annotate.index.extract import _CUDA_QUERIES
    from annotate.index.facts import fact_query_source

    src = b"".join(p.read_bytes() for p in sorted((Path(__file__).parent / "data").rglob("*.cuh")))
    src += b"struct S { __device__ void f(S& s) { auto g = &h; s.f(s); } };\n}}} ((( \n"  # a class, an ERROR
    root = parse.parser("cuda").parse(parse.prepare_cuda(src)).root_node
    got = parse.run_queries("cuda", root, _CUDA_QUERIES, (("facts", fact_query_source()),))
    for name in _CUDA_QUERIES:
        alone = [m for _, m in QueryCursor(parse.query(name)).matches(root)]
        assert got[name] == alone and alone, name
    alone = QueryCursor(fact_query()).captures(root)["n"]
    assert parse.captured(got["facts"], "n") == parse.in_document_order(alone)

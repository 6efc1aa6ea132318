"""Cutting a header into top-level pieces: boundaries exact, namespaces and conditions known."""

from __future__ import annotations

import textwrap

import pytest

from annotate.errors import AnnotateError
from annotate.extract.cxx import DECL, DEFINE, INCLUDE, scan, split


def _split(text: str):
    return split(textwrap.dedent(text).lstrip("\n"), "demo.cuh")


def _texts(sf):
    return [sf.text_of(p).strip() for p in sf.pieces]


def test_declarations_namespaces_and_conditions():
    sf = _split("""
        #pragma once
        #include <cuda.h>
        namespace fi {
        namespace math {
        // doubles x
        template <typename T>
        __device__ T twice(T x) { return x + x; }
        }  // namespace math
        #ifdef FI_FAST
        constexpr int kDepth = 4;
        #else
        struct Foo { int a; };
        #endif
        }  // namespace fi
        """)
    kinds = [p.kind for p in sf.pieces]
    assert kinds == [INCLUDE, DECL, DECL, DECL]
    twice, depth, foo = sf.pieces[1:]
    assert twice.namespaces == ("namespace fi {", "namespace math {") and twice.conditions == ()
    # the comment right above travels with the declaration; its lines are the piece's
    assert sf.text_of(twice).startswith("// doubles x\ntemplate <typename T>")
    assert (twice.first_line, twice.last_line) == (5, 7)
    assert depth.conditions == ("defined(FI_FAST)",) and depth.namespaces == ("namespace fi {",)
    assert foo.conditions == ("!(defined(FI_FAST))",)


def test_elif_chains_and_include_guards():
    sf = _split("""
        #ifndef DEMO_H_
        #define DEMO_H_
        #if A
        int a;
        #elif B
        int b;
        #else
        int c;
        #endif
        #endif  // DEMO_H_
        """)
    assert sf.guard == "DEMO_H_"
    defines = [p for p in sf.pieces if p.kind == DEFINE]
    assert [p.argument for p in defines] == ["DEMO_H_"] and defines[0].conditions == ()
    a, b, c = [p for p in sf.pieces if p.kind == DECL]
    assert a.conditions == ("A",) and b.conditions == ("!(A) && (B)",) and c.conditions == ("!(A) && !(B)",)


def test_a_guard_closing_inside_the_last_function():
    # FlashInfer's fp16.h closes its include guard before the last function's '}'
    sf = _split("""
        #pragma once
        #ifndef FP16_H
        #define FP16_H
        static int f() {
          return 1;
        #endif
        }
        """)
    (f,) = [p for p in sf.pieces if p.kind == DECL]
    assert "#endif" not in sf.text_of(f) and sf.text_of(f).count("\n") == 4  # lines kept


def test_function_bodies_classes_initialisers_and_member_init_lists():
    sf = _split("""
        struct S { int a; S(); } s0;
        S::S() : a{1} {}
        int table[] = {1, 2, 3};
        auto lam = [](int x) { return x; };
        template <class T> void f(T) {}
        void g() {};
        using U = S;
        DEFINE_THING(foo, int x) { return; }
        """)
    assert _texts(sf) == ["struct S { int a; S(); } s0;", "S::S() : a{1} {}", "int table[] = {1, 2, 3};",
                          "auto lam = [](int x) { return x; };", "template <class T> void f(T) {}",
                          "void g() {};", "using U = S;", "DEFINE_THING(foo, int x) { return; }"]


def test_directives_inside_a_declaration_stay_inside():
    sf = _split("""
        __device__ void k() {
        #if __CUDA_ARCH__ >= 900
          a();
        #else
          b();
        #endif
        }
        #define AFTER 1
        """)
    assert [p.kind for p in sf.pieces] == [DECL, DEFINE]
    assert "#else" in sf.text_of(sf.pieces[0]) and sf.pieces[0].conditions == ()


def test_comments_strings_and_continuations_are_not_code():
    sc = scan('x = "a } b"; // }\n/* { */ y = \'}\';\n#define M(a) \\\n  { a }\nR"(})"')
    kinds = [t.kind for t in sc.tokens]
    assert kinds.count("directive") == 1 and "str" in kinds and "chr" in kinds
    assert not any(t.text in "{}" for t in sc.tokens if t.kind == "punct")


@pytest.mark.parametrize("text, why", [
    ("}\n", "unbalanced"),
    ("#if A\nint a;\n", "without #endif"),
    ("namespace x {\nint a;\n", "still open"),
])
def test_broken_text_is_one_error_naming_the_file(text, why):
    with pytest.raises(AnnotateError, match=why) as e:
        split(text, "bad.cuh")
    assert "bad.cuh" in e.value.message


def test_a_macro_invocation_without_semicolon_is_its_own_piece():
    # FlashInfer: `DEFINE_HAS_MEMBER(v_scale)` on its own line, then a struct or a #define
    sf = _split("""
        DEFINE_HAS_MEMBER(v_scale)
        DEFINE_HAS_MEMBER(maybe_mask_indptr)
        #define AFTER 1
        template <typename T>
        struct S : Base {};
        __global__ void __launch_bounds__(128)
        k() {}
        DEFINE_KERNEL(k2, int x)
        {
        }
        """)
    assert _texts(sf) == ["DEFINE_HAS_MEMBER(v_scale)", "DEFINE_HAS_MEMBER(maybe_mask_indptr)", "#define AFTER 1",
                          "template <typename T>\nstruct S : Base {};",
                          "__global__ void __launch_bounds__(128)\nk() {}", "DEFINE_KERNEL(k2, int x)\n{\n}"]

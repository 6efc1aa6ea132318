"""Types, macros and their uses in the index: extraction on snippets written for each construct
(members, specialisations, nested and anonymous types, enums, `#if` members, Python dataclasses),
`#define`s, which functions use which type or invoke which macro, the store, the queries and
their rule for absent things, the CLI."""

from __future__ import annotations

import json

import pytest

from annotate.errors import UsageError
from annotate.index.api import index_directory
from annotate.index.extract import extract_full
from annotate.index.model import IndexView
from tests.index_support import index_snippets, line_of, write_tree

TYPES = """
#include <cstdint>
namespace fi {
template <typename float_t, size_t vec_size>
struct vec_t {
  FLASHINFER_INLINE float_t& operator[](size_t i);
  FLASHINFER_INLINE void load(const float_t* ptr);
};

template <size_t vec_size>
struct vec_t<half, vec_size> : public Base<int> {
  int4 data[vec_size / 8];
  FLASHINFER_INLINE void load(const half* ptr) { data[0] = ((int4*)ptr)[0]; }
};

struct Params {
  float *q, *k;
  static constexpr int kHeads = 8, kDim = 128;
  using index_t = int64_t;
  unsigned flags : 3;
  union {
    int as_int;
    float as_float;
  };
#if defined(WIDE)
  int64_t stride;
#else
  int32_t stride;
#endif
  struct Tile { int rows; } tile;
  enum class Mode : uint8_t { kPlain = 0, kScaled };
  int cols() const { return 4; }
};

typedef struct { int x; } CStyle;
struct Params::Outer { int y; };

__device__ void local_only() {
  struct Local { int z; } l;
}
}
"""

MACROS = """
#define OBJ 42
#  define SPACED  1 + 2
#define FN(a, b) ((a) + (b))
#define VARIADIC(...) f(__VA_ARGS__)
#define NOT_FN (x)
#define MULTI(COND, ...)   \\
  [&] {                    \\
    if (COND) {            \\
      return __VA_ARGS__();\\
    }                      \\
  }()
void f() { int x = 1; /* #define IN_COMMENT 1 */ }
"""

PY = '''
from dataclasses import dataclass, field
from typing import NamedTuple, List, Optional
import enum


@dataclass(frozen=True)
class JitSpec:
    """A spec."""
    name: str
    sources: List[str] = field(default_factory=list)
    VERSION = 3

    def __init__(self, name: str):
        self.name = name
        if name:
            self.extra: int = 1

    class Inner:
        pass


class Point(NamedTuple):
    x: int
    y: int = 0


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def gen(spec: "JitSpec", other: Optional[Point] = None) -> JitSpec:
    return JitSpec(name="a")
'''


def types_of(src: str, path: str = "a.cuh"):
    import textwrap

    return extract_full("demo", path, textwrap.dedent(src).lstrip("\n").encode()).file


def by_name(types, qname):
    return [t for t in types if t.qualified_name == qname]


# ---- extraction: types --------------------------------------------------------------------------

def test_primary_template_and_specialisation():
    fi = types_of(TYPES)
    prim, spec = by_name(fi.types, "fi::vec_t")
    assert (prim.specialization, prim.template_params, prim.kind) == (None, "typename float_t, size_t vec_size", "struct")
    assert prim.start_line == line_of(TYPES, "template <typename float_t") and prim.end_line == line_of(TYPES, "};")
    assert prim.body_start_line == line_of(TYPES, "struct vec_t {")
    # the primary template only declares members: they are members of kind "method", not fields
    assert [(f.name, f.kind) for f in prim.fields] == [("operator[]", "method"), ("load", "method")]
    assert spec.specialization == "half, vec_size" and spec.bases == ("Base<int>",)
    assert [(f.name, f.kind, f.type) for f in spec.fields] == [("data", "field", "int4[vec_size / 8]")]
    assert prim.fingerprint != spec.fingerprint and len(prim.fingerprint) == 16
    assert "struct vec_t<half, vec_size>" in spec.signature


def test_members_of_every_kind():
    fi = types_of(TYPES)
    (p,) = by_name(fi.types, "fi::Params")
    got = [(f.name, f.kind, f.type, f.value) for f in p.fields]
    assert got == [
        ("q", "field", "float*", None), ("k", "field", "float*", None),
        ("kHeads", "static", "constexpr int", "8"), ("kDim", "static", "constexpr int", "128"),
        ("index_t", "alias", "int64_t", None),
        ("flags", "field", "unsigned : 3", None),
        ("as_int", "field", "int", None), ("as_float", "field", "float", None),  # anonymous union: its members
        ("stride", "field", "int64_t", None), ("stride", "field", "int32_t", None),  # both #if branches
        ("tile", "field", "struct Tile", None),
    ]
    assert p.field_named("stride")[1].line == line_of(TYPES, "int32_t stride")
    assert p.nested == ("fi::Params::Tile", "fi::Params::Mode")


def test_nested_enum_typedef_and_out_of_class_types():
    fi = types_of(TYPES)
    names = [t.qualified_name for t in fi.types]
    assert names == ["fi::vec_t", "fi::vec_t", "fi::Params", "fi::Params::Tile", "fi::Params::Mode", "fi::CStyle",
                     "fi::Params::Outer"]
    (mode,) = by_name(fi.types, "fi::Params::Mode")
    assert mode.kind == "enum" and [(f.name, f.kind, f.value) for f in mode.fields] == [
        ("kPlain", "enumerator", "0"), ("kScaled", "enumerator", None)]
    (c,) = by_name(fi.types, "fi::CStyle")
    assert c.start_line == line_of(TYPES, "typedef struct") and [f.name for f in c.fields] == ["x"]
    assert "fi::local_only::Local" not in names and "Local" not in {t.name for t in fi.types}  # local: not listed


def test_python_classes():
    fi = types_of(PY, "pkg/core.py")
    names = [t.qualified_name for t in fi.types]
    assert names == ["pkg.core.JitSpec", "pkg.core.JitSpec.Inner", "pkg.core.Point", "pkg.core.Color"]
    js = fi.types[0]
    assert js.kind == "python-class" and js.decorators == ("dataclass(frozen=True)",)
    assert js.start_line == line_of(PY, "@dataclass") and js.nested == ("pkg.core.JitSpec.Inner",)
    assert [(f.name, f.kind, f.type) for f in js.fields] == [
        ("name", "field", "str"), ("sources", "field", "List[str]"), ("VERSION", "static", ""),
        ("extra", "field", "int")]  # `self.name` is already a field; `self.extra` is set in __init__
    assert js.field_named("sources")[0].value == "field(default_factory=list)"
    assert [(f.name, f.kind) for f in fi.types[2].fields] == [("x", "field"), ("y", "field")]
    assert fi.types[2].bases == ("NamedTuple",)
    assert [(f.name, f.kind) for f in fi.types[3].fields] == [("RED", "enumerator"), ("BLUE", "enumerator")]


def fingerprints(src: str, path: str = "a.cuh") -> dict[tuple[str, int], str]:
    fi = types_of(src, path)
    return {(t.qualified_name, i): t.fingerprint for i, t in enumerate(fi.types)}


def test_type_fingerprint_leaves_method_bodies_to_the_methods():
    """A note on a type goes stale when a member, a base or a method's head changes, not when a
    method body does (the method has a note and a fingerprint of its own) or a comment does."""
    base = fingerprints(TYPES)
    body = fingerprints(TYPES.replace("{ data[0] = ((int4*)ptr)[0]; }", "{ data[1] = ((int4*)ptr)[1]; }"))
    assert body == base
    assert fingerprints(TYPES.replace("  int cols() const { return 4; }", "  // cols\n  int cols() const {\n"
                                      "    return 5;  // five\n  }")) == base
    vec_spec, params, mode = ("fi::vec_t", 1), ("fi::Params", 2), ("fi::Params::Mode", 4)
    for changed, want in ((TYPES.replace("  int4 data[vec_size / 8];", "  int4 data[vec_size / 4];"), {vec_spec}),
                          (TYPES.replace("void load(const half* ptr) {", "void load(const half* __restrict__ ptr) {"),
                           {vec_spec}),
                          (TYPES.replace(": public Base<int> {", ": public Base<long> {"), {vec_spec}),
                          (TYPES.replace("kPlain = 0", "kPlain = 1"), {params, mode})):  # the enum is inside Params
        assert {k for k, v in fingerprints(changed).items() if base[k] != v} == want
    # Python: a method body is left out, but the attributes `__init__` sets are members
    py = fingerprints(PY, "pkg/core.py")
    assert fingerprints(PY.replace("self.extra: int = 1", "self.extra: int = 1\n            print(self.extra)"), "pkg/core.py") == py
    renamed = fingerprints(PY.replace("self.extra: int = 1", "self.other: int = 1"), "pkg/core.py")
    assert renamed[("pkg.core.JitSpec", 0)] != py[("pkg.core.JitSpec", 0)]
    frozen = fingerprints(PY.replace("@dataclass(frozen=True)", "@dataclass"), "pkg/core.py")
    assert frozen[("pkg.core.JitSpec", 0)] != py[("pkg.core.JitSpec", 0)]


# ---- extraction: macros -------------------------------------------------------------------------

def test_macros_object_and_function_like():
    fi = types_of(MACROS)
    got = {m.name: m for m in fi.macros}
    assert list(got) == ["OBJ", "SPACED", "FN", "VARIADIC", "NOT_FN", "MULTI"]  # none from the comment
    assert (got["OBJ"].params, got["OBJ"].body) == (None, "42")
    assert got["SPACED"].body == "1 + 2"
    assert got["FN"].params == ("a", "b") and got["FN"].body == "((a) + (b))" and got["FN"].signature == "FN(a, b)"
    assert got["VARIADIC"].params == ("...",)
    assert got["NOT_FN"].params is None and got["NOT_FN"].body == "(x)"  # a space before '(': object-like
    multi = got["MULTI"]
    assert multi.start_line == line_of(MACROS, "#define MULTI") and multi.end_line == line_of(MACROS, "}()")
    assert multi.body.split("\n") == ["[&] {", "  if (COND) {", "    return __VA_ARGS__();", "  }", "}()"]
    same = types_of(MACROS.replace("COND) {            \\", "COND)   {  /* why */ \\"))
    assert {m.name: m.fingerprint for m in same.macros}["MULTI"] == multi.fingerprint  # comments, spaces ignored


# ---- uses ---------------------------------------------------------------------------------------

USES = {
    "inc/types.cuh": """
        #define FLASHINFER_INLINE inline __device__
        #define lower_case(x) (x)
        #define KSIZE 4
        namespace fi {
        template <typename T, int N> struct vec_t { T data[N]; };
        struct Params { float* q; int n; };
        enum class Mode { kA, kB };
        template <typename KTraits> struct Holder { int x; };
        struct KTraits { int y; };
        }
        """,
    "inc/kernels.cuh": """
        #include "types.cuh"
        namespace fi {
        template <typename KTraits>
        __global__ void Kernel(const Params& params) {
          vec_t<float, KSIZE> v;  // FLASHINFER_INLINE in a comment is no use
          auto m = Mode::kA;
          KTraits t;
          lower_case(3);
        }
        template <typename T>
        FLASHINFER_INLINE void helper(T* x) { x[0] = 0; }
        void Launch(Params params) { Kernel<Holder<int>><<<1, 1>>>(params); }
        }
        """,
    "other/unrelated.cuh": """
        namespace zz {
        struct Params { int z; };
        void Elsewhere(Params p) {}
        }
        """,
}


@pytest.fixture
def uix(tmp_path):
    return index_snippets(tmp_path, USES)


def uses_of(ix, name):
    return [(u.kind, u.name, u.how) for u in ix.uses_by(ix.resolve(name))]


def test_uses_by_a_function(uix):
    assert uses_of(uix, "fi::Kernel") == [
        ("type", "Params", "parameter"), ("type", "vec_t", "declaration"), ("macro", "KSIZE", "body"),
        ("type", "Mode", "qualifier"), ("macro", "lower_case", "call")]  # KTraits: its own template parameter
    assert uses_of(uix, "fi::helper") == [("macro", "FLASHINFER_INLINE", "head")]
    assert uses_of(uix, "fi::Launch") == [("type", "Params", "parameter"), ("type", "Holder", "template-argument")]
    u = uix.uses_by(uix.resolve("fi::Kernel"))[1]
    assert (u.path, u.line, u.column) == ("inc/kernels.cuh", 5, 2)


def test_uses_only_through_includes(uix):
    (fi_params,) = [t for t in uix.find_type("Params") if t.qualified_name == "fi::Params"]
    assert [uix.symbol(u.user).qualified_name for u in uix.type_users(fi_params)] == ["fi::Kernel", "fi::Launch"]
    (zz,) = uix.find_type("zz::Params")
    assert [uix.symbol(u.user).qualified_name for u in uix.type_users(zz)] == ["zz::Elsewhere"]
    (inline,) = uix.find_macro("FLASHINFER_INLINE")
    assert [uix.symbol(u.user).qualified_name for u in uix.macro_users(inline)] == ["fi::helper"]


def test_stored_uses_equal_built_ones_and_incremental_rebuild(tmp_path, tmp_config):
    root = write_tree(tmp_path / "src", USES)
    mem = index_directory("demo", root)
    stored = index_directory("demo", root, config=tmp_config)
    assert isinstance(stored, IndexView)
    for fi_mem, fi_st in zip(mem.files(), stored.files()):
        assert (fi_mem.types, fi_mem.macros, fi_mem.uses) == (fi_st.types, fi_st.macros, fi_st.uses)
    # indexed queries (a fresh Index reads by SQL) agree with the loaded index
    fresh = index_directory("demo", root, config=tmp_config)
    for s in stored.all_symbols():
        assert fresh.uses_by(s) == stored.uses_by(s)
    for t in (t for fi in stored.files() for t in fi.types):
        assert fresh.type_users(t) == stored.type_users(t) and fresh.type_def(t.key) == t
    # a new file defining a type an unchanged file mentions: the unchanged file's mentions come
    # from the previous snapshot, and the use appears
    (root / "inc/kernels.cuh").write_text((root / "inc/kernels.cuh").read_text().replace(
        '#include "types.cuh"', '#include "types.cuh"\n#include "extra.cuh"'))
    (root / "inc/extra.cuh").write_text("#define KTRAITS_MACRO 1\nnamespace fi { struct Tile { int r; }; }\n")
    (root / "inc/types.cuh").write_text((root / "inc/types.cuh").read_text() + "\n")
    again = index_directory("demo", root, config=tmp_config)
    assert again.stats["demo"]["cached_files"] == 1  # other/unrelated.cuh
    assert [f.types for f in again.files()] == [f.types for f in index_directory("demo", root).files()]
    assert [f.uses for f in again.files()] == [f.uses for f in index_directory("demo", root).files()]


# ---- queries and their rule for absent things ---------------------------------------------------

def test_queries_and_absent_things(uix):
    assert [t.qualified_name for t in uix.types_in("demo", "inc/types.cuh")] == [
        "fi::vec_t", "fi::Params", "fi::Mode", "fi::Holder", "fi::KTraits"]
    assert [m.name for m in uix.macros_in("demo", "inc/types.cuh")] == ["FLASHINFER_INLINE", "lower_case", "KSIZE"]
    assert uix.types_in("demo", "no/such.cuh") == [] and uix.macros_in("nope", "x") == []
    assert uix.find_type("nope") == [] and uix.find_macro("NOPE") == []
    with pytest.raises(UsageError) as e:
        uix.resolve_type("Params")
    assert "ambiguous type" in e.value.message and "demo:zz::Params@other/unrelated.cuh:2" in e.value.hint
    assert uix.resolve_type("Params@other/unrelated.cuh").qualified_name == "zz::Params"
    with pytest.raises(UsageError) as e:
        uix.resolve_type("fi::Parms")
    assert "unknown type" in e.value.message and "fi::Params" in e.value.hint
    with pytest.raises(UsageError) as e:
        uix.resolve_macro("KSIZ")
    assert "KSIZE" in e.value.hint
    with pytest.raises(UsageError):
        uix.type_def("demo:fi::Nope@inc/types.cuh:1")
    with pytest.raises(UsageError):
        uix.macro_def("demo:NOPE@inc/types.cuh:1")
    t = uix.resolve_type("fi::Params")
    assert uix.text_of(t).startswith("struct Params") and uix.methods_of(t) == []


def test_methods_of_in_class_and_out_of_class(tmp_path):
    ix = index_snippets(tmp_path, {"a.cuh": """
        namespace ns {
        struct S {
          int f() const { return 1; }
          int g();
          struct In { int h() { return 2; } };
        };
        int S::g() { return 3; }
        }
        """})
    s = ix.resolve_type("ns::S")
    assert [m.qualified_name for m in ix.methods_of(s)] == ["ns::S::f", "ns::S::g"]
    assert [m.qualified_name for m in ix.methods_of(ix.resolve_type("ns::S::In"))] == ["ns::S::In::h"]


# ---- the command line ---------------------------------------------------------------------------

@pytest.fixture
def fake_pin(tmp_path, monkeypatch):
    from annotate.config import Config
    from annotate.upstreams import checkout_root, get_upstream

    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    cfg = Config.load()
    root = checkout_root(cfg, get_upstream(cfg, "flashinfer"))
    write_tree(root, {p: s for p, s in USES.items()})
    import annotate.fetch.api as fetch_api

    monkeypatch.setattr(fetch_api, "fetched_root", lambda config, name: root if name == "flashinfer" else None)
    return cfg


def run_cli(capsys, *argv):
    from annotate.cli import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_symbols_types_and_macros(fake_pin, capsys):
    rc, out, _ = run_cli(capsys, "symbols", "flashinfer:inc/types.cuh", "--json")
    assert rc == 0 and json.loads(out) == []  # functions only, as the contract says
    rc, out, _ = run_cli(capsys, "symbols", "flashinfer:inc/types.cuh", "--types", "--json")
    data = json.loads(out)
    assert [d["qualified_name"] for d in data][:2] == ["fi::vec_t", "fi::Params"]
    assert data[1]["fields"] == [{"name": "q", "kind": "field", "type": "float*", "line": 6, "value": None},
                                 {"name": "n", "kind": "field", "type": "int", "line": 6, "value": None}]
    assert {"kind", "start_line", "end_line", "template_params", "specialization", "key", "methods"} <= set(data[0])
    rc, out, _ = run_cli(capsys, "symbols", "flashinfer:inc/types.cuh", "--macros", "--json")
    assert [(d["name"], d["params"], d["function_like"]) for d in json.loads(out)] == [
        ("FLASHINFER_INLINE", None, False), ("lower_case", ["x"], True), ("KSIZE", None, False)]
    rc, out, _ = run_cli(capsys, "symbols", "flashinfer:inc/types.cuh", "--types")
    assert rc == 0 and "fi::Params" in out
    with pytest.raises(SystemExit) as e:  # argparse: one or the other
        run_cli(capsys, "symbols", "flashinfer:inc/types.cuh", "--types", "--macros")
    assert e.value.code == 2


def test_cli_show_type_and_macro(fake_pin, capsys):
    rc, out, _ = run_cli(capsys, "show", "fi::Params", "--no-color")
    assert rc == 0 and "members" in out and "fi::Kernel" in out and "fi::Launch" in out
    rc, out, _ = run_cli(capsys, "show", "flashinfer:KSIZE", "--no-color")
    assert rc == 0 and "object-like" in out and "fi::Kernel" in out
    rc, out, _ = run_cli(capsys, "show", "fi::Kernel", "--no-color")
    assert rc == 0 and "callers" in out  # a function is still shown as a function
    rc, _, err = run_cli(capsys, "show", "fi::Parms", "--type")
    assert rc == 2 and "unknown type" in err and "fi::Params" in err

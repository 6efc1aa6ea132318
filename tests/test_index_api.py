"""The Index API (find/resolve/callgraph/enclosing), the content cache, and the CLI adapters,
on small trees written by the tests."""

from __future__ import annotations

import json
import os
import time

import pytest

from annotate.errors import AnnotateError, UsageError
from annotate.index.api import index_directory, load_index
from annotate.index.build import build_upstream
from tests.index_support import index_snippets, write_tree

A = """
namespace ns {
__device__ int leaf(int x) { return x; }
__device__ int mid(int x) { return leaf(x) + leaf(x); }
__global__ void top_kernel(int* x) { x[0] = mid(x[0]); }
void host_launch(int* x) { top_kernel<<<1, 1>>>(x); }
namespace other { __device__ int leaf(float x) { return 0; } }
}
"""


@pytest.fixture
def ix(tmp_path):
    return index_snippets(tmp_path, {"a.cuh": A})


def test_find_exact_suffix_bare(ix):
    assert [s.qualified_name for s in ix.find("ns::mid")] == ["ns::mid"]
    assert [s.qualified_name for s in ix.find("mid")] == ["ns::mid"]
    assert [s.qualified_name for s in ix.find("other::leaf")] == ["ns::other::leaf"]
    assert {s.qualified_name for s in ix.find("leaf")} == {"ns::leaf", "ns::other::leaf"}
    assert ix.find("s::mid") == []  # suffix only on '::' boundaries


def test_resolve_ambiguous_lists_candidates(ix):
    with pytest.raises(UsageError) as e:
        ix.resolve("leaf")
    assert "ambiguous" in e.value.message
    assert "demo:ns::leaf@a.cuh:2" in e.value.hint and "demo:ns::other::leaf@a.cuh:6" in e.value.hint
    assert ix.resolve("demo:leaf@a.cuh:6").qualified_name == "ns::other::leaf"
    assert ix.resolve("ns::leaf").qualified_name == "ns::leaf"


def test_resolve_unknown_suggests_nearest(ix):
    with pytest.raises(UsageError) as e:
        ix.resolve("ns::mdi")
    assert "unknown symbol" in e.value.message and "ns::mid" in e.value.hint
    with pytest.raises(UsageError, match="unknown upstream"):
        ix.resolve("nope:ns::mid")


def test_callgraph_depth_and_reverse(ix):
    top = ix.resolve("ns::host_launch")
    one = ix.callgraph(top, depth=1)
    assert [(e.kind, e.callee_name) for e in one] == [("launch", "top_kernel")]
    three = ix.callgraph(top, depth=3)
    assert [e.callee_name for e in three] == ["top_kernel", "mid", "leaf", "leaf"]
    # the unqualified `leaf` in ns::mid resolves to ns::leaf, not ns::other::leaf (scope lookup)
    assert {k for e in three if e.callee_name == "leaf" for k in e.callees} == {ix.resolve("ns::leaf").key}
    rev = ix.callgraph(ix.resolve("ns::leaf"), reverse=True, depth=5)
    assert [ix.symbol(e.caller).name for e in rev] == ["mid", "mid", "top_kernel", "host_launch"]


def test_enclosing_and_text_of(ix):
    assert ix.enclosing("demo", "a.cuh", 3).qualified_name == "ns::mid"
    assert ix.enclosing("demo", "a.cuh", 1) is None
    assert ix.text_of(ix.resolve("ns::mid")).startswith("__device__ int mid(")
    assert [s.name for s in ix.symbols_in("demo", "a.cuh")] == ["leaf", "mid", "top_kernel", "host_launch", "leaf"]
    with pytest.raises(UsageError):
        ix.file("demo", "b.cuh")


def test_cache_reuses_and_reparses_only_changed_file(tmp_path, tmp_config):
    root = write_tree(tmp_path / "tree", {"a.cuh": A, "b.cuh": "__device__ int b() { return 1; }\n",
                                          "py/m.py": "def f():\n    return 1\n"})
    for p in root.rglob("*.*"):  # older than the stat cache's racy window
        os.utime(p, (time.time() - 60, time.time() - 60))
    store, st = build_upstream("demo", root, config=tmp_config)
    files = store.load()
    assert st["parsed"] == 3 and not st["resolved_cache"]
    store2, st2 = build_upstream("demo", root, config=tmp_config)
    assert st2["resolved_cache"] and st2["parsed"] == 0 and st2["hashed"] == 0 and store2.load() == files
    (root / "b.cuh").write_text("__device__ int b() { return 2; }\n")
    store3, st3 = build_upstream("demo", root, config=tmp_config)
    files3 = store3.load()
    assert st3["parsed"] == 1 and st3["cached_files"] == 2 and st3["hashed"] == 1
    assert files3["b.cuh"].symbols[0].fingerprint != files["b.cuh"].symbols[0].fingerprint
    assert files3["a.cuh"] == files["a.cuh"] and files3["py/m.py"] == files["py/m.py"]
    # the same content again is the same tree: the first snapshot, nothing parsed
    (root / "b.cuh").write_text("__device__ int b() { return 1; }\n")
    store4, st4 = build_upstream("demo", root, config=tmp_config)
    assert st4["resolved_cache"] and store4.tree_key == store.tree_key


def test_member_calls_narrowed_by_declared_type(tmp_path):
    ix = index_snippets(tmp_path, {"m.cuh": """
        namespace fi {
        template <typename T, int N> struct vec_t { __device__ void load(const T* p) {} };
        struct smem_t { __device__ void load(int off) {} };
        template <typename T>
        __device__ void use(const T* p, smem_t& smem) {
          vec_t<T, 4> a, b;
          auto c = make();
          a.load(p);
          smem.load(0);
          c.load(p);
        }
        }
        """})
    use = ix.resolve("fi::use")
    got = [(e.callee_name, sorted(ix.symbol(k).qualified_name for k in e.callees)) for e in ix.callees(use)
           if e.via == "member"]
    assert got == [("a.load", ["fi::vec_t::load"]), ("smem.load", ["fi::smem_t::load"]),
                   ("c.load", ["fi::smem_t::load", "fi::vec_t::load"])]


def test_overloads_narrowed_by_argument_count(tmp_path):
    ix = index_snippets(tmp_path, {"o.cuh": """
        namespace cute {
        template <class T> __device__ int size(T const& t) { return 1; }
        template <int I, class T> __device__ int size(T const& t, int mode) { return 2; }
        __device__ int pick(int a, int b = 0) { return a; }
        __device__ int pick(int a, int b, int c) { return c; }
        template <class... Ts> __device__ int many(Ts... ts) { return 0; }
        __device__ int use(int x) {
          return size(x) + size<0>(x, 1) + pick(1) + pick(1, 2) + pick(1, 2, 3) + many(1, 2, 3, 4);
        }
        }
        """})
    use = ix.resolve("cute::use")
    got = [(e.callee_name, [ix.symbol(k).start_line for k in e.callees]) for e in ix.callees(use)]
    assert got == [("size", [2]), ("size", [3]), ("pick", [4]), ("pick", [4]), ("pick", [5]), ("many", [6])]


def test_old_snapshots_are_pruned(tmp_path, tmp_config):
    from annotate.index import cache

    root = write_tree(tmp_path / "tree", {"a.cuh": A})
    for i in range(5):
        (root / "a.cuh").write_text(A + f"// edit {i}\n")
        build_upstream("demo", root, config=tmp_config)
    snaps = cache.snapshots(tmp_config, "demo")
    assert len(snaps) == 3
    _, st = build_upstream("demo", root, config=tmp_config)  # the newest survives
    assert st["resolved_cache"]


def test_unreadable_grammar_input_is_a_diagnostic_not_a_crash(tmp_path):
    ix = index_snippets(tmp_path, {"bad.cu": "}}}} template <<< ((( \x00 garbage", "ok.cu": "void f() {}\n"})
    assert [s.name for s in ix.symbols_in("demo", "ok.cu")] == ["f"]
    assert ix.file("demo", "bad.cu").symbols == () and ix.file("demo", "bad.cu").error_nodes > 0
    # a file the extractor itself fails on is a warning naming it: tests/test_index_store.py


def test_load_index_without_pins_says_to_fetch(tmp_config):
    with pytest.raises(AnnotateError) as e:
        load_index(tmp_config)
    assert "annotate fetch" in (e.value.hint or "")


def test_index_directory_missing_root(tmp_path):
    with pytest.raises(AnnotateError):
        index_directory("demo", tmp_path / "absent")


# ---- CLI, in-process against a fake fetched pin ----------------------------------------------

@pytest.fixture
def fake_pin(tmp_path, monkeypatch):
    from annotate.config import Config
    from annotate.upstreams import checkout_root, get_upstream

    cache = tmp_path / "cache"
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(cache))
    cfg = Config.load()
    root = checkout_root(cfg, get_upstream(cfg, "flashinfer"))
    write_tree(root, {"include/a.cuh": A})
    # Being fetched is the fetch stage's call (a verified record); here only the tree matters.
    import annotate.fetch.api as fetch_api

    monkeypatch.setattr(fetch_api, "fetched_root", lambda config, name: root if name == "flashinfer" else None)
    return cfg


def run_cli(capsys, *argv):
    from annotate.cli import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_symbols_json(fake_pin, capsys):
    rc, out, _ = run_cli(capsys, "symbols", "flashinfer:include/a.cuh", "--json")
    assert rc == 0
    data = json.loads(out)
    assert [d["qualified_name"] for d in data][:2] == ["ns::leaf", "ns::mid"]
    assert {"name", "qualified_name", "kind", "start_line", "end_line"} <= set(data[0])


def test_cli_callgraph_json(fake_pin, capsys):
    rc, out, _ = run_cli(capsys, "callgraph", "flashinfer:ns::host_launch", "--depth", "2", "--json")
    assert rc == 0
    data = json.loads(out)
    assert data["root"] == "ns::host_launch"
    assert data["edges"][0] == {**data["edges"][0], "caller": "ns::host_launch", "callee": "ns::top_kernel",
                                "kind": "launch", "file": "include/a.cuh", "line": 5}
    rc, out, _ = run_cli(capsys, "callgraph", "ns::mid", "--reverse", "--json")
    assert [e["caller"] for e in json.loads(out)["edges"]] == ["ns::top_kernel"]


def test_cli_facts_and_show(fake_pin, capsys):
    rc, out, _ = run_cli(capsys, "facts", "ns::mid", "--json")
    assert rc == 0 and json.loads(out) == []
    rc, out, _ = run_cli(capsys, "show", "ns::mid", "--no-color")
    assert rc == 0 and "ns::mid" in out and "leaf" in out and "callers" in out


def test_cli_ambiguous_and_unknown(fake_pin, capsys):
    rc, _, err = run_cli(capsys, "facts", "leaf", "--json")
    assert rc == 2 and "ambiguous" in err and "flashinfer:ns::other::leaf@include/a.cuh:6" in err
    rc, _, err = run_cli(capsys, "show", "ns::mdi")
    assert rc == 2 and "nearest names" in err and "ns::mid" in err
    rc, _, err = run_cli(capsys, "symbols", "include/a.cuh")
    assert rc == 2 and "UPSTREAM:PATH" in err


def test_cli_not_fetched(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "empty"))
    rc, _, err = run_cli(capsys, "callgraph", "foo", "--json")
    assert rc == 1 and "annotate fetch" in err


# ---- a submodule indexed as far as the pin's files include it (`index: included`) ----------

def test_included_only_indexes_what_the_other_files_reach_by_include(tmp_path):
    """Only the files under the included-only path that the pin's own files reach through
    #include, directly or through each other, are indexed; a directive in a comment counts
    (a superset of what the parse finds), Python files of the pin include nothing; the tree key
    differs from the plain one, and the next run opens the snapshot."""
    from annotate.config import Config
    from annotate.index.build import Tree, included_files, open_or_build

    root = write_tree(tmp_path / "src", {
        "own/k.cu": '#include "sub/inc/a.h"\n#include <b.h>\n__global__ void k() { a(); }\n',
        "own/tool.py": "import os\n",
        "sub/inc/a.h": '#pragma once\n#include "deep/c.h"\n__device__ void a() { c(); }\n',
        "sub/inc/b.h": "/*\n#include <never_indexed.h>\n*/\n__device__ void b() {}\n",
        "sub/inc/deep/c.h": "__device__ void c() {}\n",
        "sub/inc/never_indexed.h": "__device__ void n() {}\n",
        "sub/inc/alone.h": "__device__ void alone() {}\n",
        "sub/inc/also_alone.h": '#include "alone.h"\n',
    })
    paths = ["own/k.cu", "own/tool.py", "sub/inc/a.h", "sub/inc/alone.h", "sub/inc/also_alone.h", "sub/inc/b.h",
             "sub/inc/deep/c.h", "sub/inc/never_indexed.h"]
    assert included_files(root, paths, ["sub/inc"]) == {
        "sub/inc/a.h", "sub/inc/b.h", "sub/inc/deep/c.h", "sub/inc/never_indexed.h"}  # the comment counts
    config = Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=tmp_path)
    tree = Tree("demo", root, ["own", "sub/inc"], config, ["sub/inc"])
    store = open_or_build([tree], config, False)["demo"]
    assert sorted(store.paths()) == ["own/k.cu", "own/tool.py", "sub/inc/a.h", "sub/inc/b.h", "sub/inc/deep/c.h",
                                     "sub/inc/never_indexed.h"]
    assert tree.stats["files"] == 8 and tree.stats["indexed"] == 6
    plain = Tree("demo", root, ["own", "sub/inc"], config)
    assert plain.meta["tree_key"] != tree.meta["tree_key"]
    again = Tree("demo", root, ["own", "sub/inc"], config, ["sub/inc"])
    assert again.open_cached() is not None

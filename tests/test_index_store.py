"""The index's data-only store (SQLite): what goes in comes out, indexed queries agree with the
whole index, damaged or foreign cache files are rebuilt (or named in one line), and a complete
cache is read without writing anything."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from annotate.errors import AnnotateError
from annotate.index import cache
from annotate.index.api import Index, index_directory, load_index
from annotate.index.build import build_upstream
from annotate.index.model import IndexView
from annotate.index.store import StoreError, open_store
from tests.index_support import write_tree

A = """
#include "b.cuh"
namespace ns {
template <typename T> __device__ T leaf(T x) { return x; }
__device__ int leaf(int x, int y) { return x + y; }
__device__ int mid(int x) { __shared__ int s[4]; s[0] = leaf(x); __syncthreads(); return leaf(x, s[0]) + bee(); }
__global__ void top_kernel(int* x) { x[0] = mid(x[0]); }
void host_launch(int* x) { top_kernel<<<1, 1>>>(x); auto k = &top_kernel; cudaLaunchKernel((void*)k, 1, 1, 0, 0, 0); }
struct S { __device__ void m() { leaf(1); } __device__ void operator()() { m(); } };
}
"""
B = "namespace ns { __device__ int bee() { return 2; } __device__ int unused(int) { return 0; } }\n"
PY = "def f():\n    return g()\n\n\ndef g():\n    return 1\n\n\nclass C:\n    def h(self):\n        return self.k()\n\n    def k(self):\n        return f()\n"


def _old(root: Path) -> Path:
    for p in root.rglob("*.*"):  # older than the stat cache's racy window
        os.utime(p, (time.time() - 60, time.time() - 60))
    return root


@pytest.fixture
def tree(tmp_path, monkeypatch):
    import annotate.index.extract as extract

    real = extract.extract_full

    def failing(upstream, path, src):  # a file the extractor chokes on is a diagnostic, not a crash
        if path == "bad.cu":
            raise RecursionError("too deep")
        return real(upstream, path, src)

    monkeypatch.setattr(extract, "extract_full", failing)
    return _old(write_tree(tmp_path / "tree", {"inc/a.cuh": A, "inc/b.cuh": B, "py/m.py": PY,
                                               "bad.cu": "}}} template <<< ((( garbage"}))


def test_stored_equals_built_in_memory(tree, tmp_config):
    mem = index_directory("demo", tree)
    stored = index_directory("demo", tree, config=tmp_config)
    again = index_directory("demo", tree, config=tmp_config)
    assert again.stats["demo"]["resolved_cache"]
    assert mem.files() == stored.files() == again.files()
    assert mem.content_key() == stored.content_key() == again.content_key()
    assert isinstance(again, IndexView)
    assert [d.file for d in again.diagnostics()] == ["demo:bad.cu"]


def test_indexed_queries_agree_with_the_whole_index(tree, tmp_config):
    # `ix` answers by SQL queries; `loaded` from memory once files() has read everything
    ix = index_directory("demo", tree, config=tmp_config)
    loaded = index_directory("demo", tree, config=tmp_config)
    files = loaded.files()
    edges = [e for fi in files for e in fi.edges]
    facts = [f for fi in files for f in fi.facts]
    syms = [s for fi in files for s in fi.symbols]
    assert len(syms) > 8 and any(e.callees for e in edges) and facts
    for s in syms:
        assert ix.symbol(s.key) == s
        callees = sorted((e for e in edges if e.caller == s.key), key=lambda e: (e.line, e.column))
        callers = sorted((e for e in edges if s.key in e.callees), key=lambda e: (e.path, e.line, e.column))
        mine = sorted((f for f in facts if f.symbol == s.key), key=lambda f: (f.line, f.kind))
        assert ix.callees(s) == loaded.callees(s) == callees
        assert ix.callers(s) == loaded.callers(s) == callers
        assert ix.facts(s) == loaded.facts(s) == mine
        assert ix.callgraph(s, depth=3) == loaded.callgraph(s, depth=3)
        assert ix.callgraph(s, reverse=True, depth=3) == loaded.callgraph(s, reverse=True, depth=3)
        assert s in ix.find(s.qualified_name) and s in ix.find(s.name)
        assert ix.enclosing("demo", s.path, s.body_start_line) is not None
    for fi in files:
        assert ix.file("demo", fi.path) == fi
        assert ix.symbols_in("demo", fi.path) == sorted(fi.symbols, key=lambda s: (s.start_line, s.end_line))
    assert ix.all_symbols() == [s for fi in files for s in sorted(fi.symbols, key=lambda s: (s.start_line, s.end_line))]


def test_absent_things_follow_one_rule(tree):
    from annotate.errors import UsageError

    ix = index_directory("demo", tree)
    sym = ix.resolve("ns::mid")
    ghost = sym.__class__(**{**sym.__dict__, "qualified_name": "ns::ghost"})
    for call in (lambda: ix.root("nope"), lambda: ix.file("demo", "inc/zz.cuh"), lambda: ix.source("demo", "zz"),
                 lambda: ix.symbol("demo:ns::ghost@inc/a.cuh:1"), lambda: ix.symbol("not a key"),
                 lambda: ix.resolve("ns::ghost"), lambda: ix.text_of(ghost.__class__(**{**ghost.__dict__, "path": "zz"})),
                 lambda: ix.parse_spec("nope:ns::f")):
        with pytest.raises(UsageError):
            call()
    assert ix.symbols_in("demo", "inc/zz.cuh") == [] and ix.symbols_in("nope", "inc/a.cuh") == []
    assert ix.files("nope") == [] and ix.paths("nope") == [] and ix.find("ns::ghost") == []
    assert ix.callees(ghost) == ix.callers(ghost) == ix.facts(ghost) == ix.callgraph(ghost, depth=3) == []
    assert ix.enclosing("demo", "inc/a.cuh", 1) is None and ix.enclosing("nope", "x", 1) is None
    assert not ix.has_file("demo", "inc/zz.cuh") and ix.has_file("demo", "inc/a.cuh")


def test_merged_index_dispatches_by_upstream(tmp_path):
    a = index_directory("one", write_tree(tmp_path / "a", {"a.cuh": A}))
    b = index_directory("two", write_tree(tmp_path / "b", {"b.cuh": B}))
    m = Index.merged(a, b)
    assert m.upstreams() == ["one", "two"]
    assert [s.upstream for s in m.find("leaf")] == ["one", "one"] and m.find("bee")[0].upstream == "two"
    assert m.resolve("two:ns::bee").path == "b.cuh" and m.root("two") == b.root("two")
    assert m.files() == a.files() + b.files()
    with pytest.raises(ValueError):
        Index.merged(a, a)


def test_memo_is_owned_by_the_index(tree):
    ix, other = index_directory("demo", tree), index_directory("demo", tree)
    calls = []
    assert ix.memo("k", lambda: calls.append(1) or 41) == 41 and ix.memo("k", lambda: 0) == 41
    assert other.memo("k", lambda: 7) == 7 and calls == [1]


# ---- damaged and foreign cache files are rebuilt --------------------------------------------

def _snapshot(tmp_config) -> Path:
    snaps = cache.snapshots(tmp_config, "demo")
    assert len(snaps) == 1
    return snaps[0]


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _garbage(p: Path) -> None:
    p.write_bytes(b"\x80\x04\x95 not a database at all" * 100)


def _schema_version(p: Path) -> None:
    con = sqlite3.connect(p)
    con.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
    con.commit()
    con.close()


def _wrong_types(p: Path) -> None:
    # the same tables without STRICT, holding a string where a line number belongs
    con = sqlite3.connect(p)
    sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'symbols'").fetchone()[0]
    con.execute("ALTER TABLE symbols RENAME TO old")
    con.execute(sql.replace(") STRICT", ")"))
    con.execute("INSERT INTO symbols SELECT * FROM old")
    con.execute("DROP TABLE old")
    con.execute("UPDATE symbols SET start_line = 'one'")
    con.commit()
    con.close()


def _other_tree(p: Path) -> None:
    con = sqlite3.connect(p)
    con.execute("UPDATE meta SET value = 'ffff' WHERE key = 'tree_key'")
    con.commit()
    con.close()


@pytest.mark.parametrize("damage", [_truncate, _garbage, _schema_version, _wrong_types, _other_tree])
def test_unusable_snapshot_is_rebuilt(tree, tmp_config, damage):
    good = index_directory("demo", tree, config=tmp_config).files()
    p = _snapshot(tmp_config)
    damage(p)
    with pytest.raises(StoreError):
        open_store(p, {"upstream": "demo", "tree_key": p.stem.rsplit("-", 1)[1]})
    ix = index_directory("demo", tree, config=tmp_config)
    assert not ix.stats["demo"]["resolved_cache"] and ix.files() == good
    assert index_directory("demo", tree, config=tmp_config).stats["demo"]["resolved_cache"]


def test_damage_inside_a_page_is_one_line(tree, tmp_config):
    index_directory("demo", tree, config=tmp_config)
    p = _snapshot(tmp_config)
    data = bytearray(p.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for at in range(2 * page, len(data)):  # every page but the first two: header, schema, meta survive
        data[at] ^= 0x5A
    p.write_bytes(bytes(data))
    ix = index_directory("demo", tree, config=tmp_config)  # opens: the damage is not where it looks
    with pytest.raises(AnnotateError) as e:
        ix.files()
    assert str(p) in e.value.message and "\n" not in e.value.message and "delete" in e.value.hint


def test_stale_stat_cache_rehashes_only_changed_files(tree, tmp_config):
    _, st = build_upstream("demo", tree, config=tmp_config)
    assert st["hashed"] == 4
    _, st = build_upstream("demo", tree, config=tmp_config)
    assert st["hashed"] == 0 and st["resolved_cache"]
    os.utime(tree / "inc/b.cuh", (time.time() - 30, time.time() - 30))  # touched, same content
    _, st = build_upstream("demo", tree, config=tmp_config)
    assert st["hashed"] == 1 and st["resolved_cache"] and st["parsed"] == 0
    sf = cache.stat_path(tmp_config, "demo", tree)
    sf.write_text('{"format": 2, "root": "' + str(tree) + '", "files": {"inc/a.cuh": [1, "x", 3, 4]}}')
    _, st = build_upstream("demo", tree, config=tmp_config)
    assert st["hashed"] == 4 and st["resolved_cache"]


# ---- a complete cache is read without writing ----------------------------------------------

def _state(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else None
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def read_only_pin(tmp_path, monkeypatch):
    from annotate.config import Config
    from annotate.upstreams import checkout_root, get_upstream

    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(cache_dir))
    cfg = Config.load()
    root = checkout_root(cfg, get_upstream(cfg, "flashinfer"))
    _old(write_tree(root, {"include/a.cuh": A, "include/b.cuh": B}))
    import annotate.fetch.api as fetch_api

    monkeypatch.setattr(fetch_api, "fetched_root", lambda config, name: root if name == "flashinfer" else None)
    load_index(cfg)
    load_index(cfg)
    (cfg.cache_dir / "locks" / "index.lock").unlink()  # left by the build; a warm load takes no lock
    modes = {}
    for p in [cache_dir, *cache_dir.rglob("*")]:
        modes[p] = p.stat().st_mode
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    yield cfg
    for p, m in modes.items():
        p.chmod(m)


def test_read_only_cache_is_read_without_writing(read_only_pin, capsys):
    from annotate.cli import main

    cfg = read_only_pin
    before = _state(cfg.cache_dir)
    assert not (cfg.cache_dir / "locks" / "index.lock").exists()
    ix = load_index(cfg, ["flashinfer"], progress=True)  # as `annotate build` loads it
    assert ix.stats["flashinfer"]["resolved_cache"] and ix.stats["flashinfer"]["hashed"] == 0
    for argv in (["symbols", "flashinfer:include/a.cuh", "--json"], ["show", "ns::mid", "--no-color"],
                 ["callgraph", "ns::host_launch", "--json"], ["facts", "ns::mid", "--json"]):
        assert main(argv) == 0, argv
    main(["check"])  # the repository's notes do not fit this tiny pin: errors, but read-only ones
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert _state(cfg.cache_dir) == before


def test_read_only_cache_with_a_damaged_snapshot_indexes_in_memory(read_only_pin, capsys):
    cfg = read_only_pin
    snap = next((cfg.index_dir() / "trees").iterdir())
    mode = snap.stat().st_mode
    snap.chmod(mode | stat.S_IWUSR)
    _truncate(snap)
    snap.chmod(mode)
    before = _state(cfg.cache_dir)
    ix = load_index(cfg)
    err = capsys.readouterr().err
    assert ix.resolve("ns::mid").path == "include/a.cuh" and not ix.stats["flashinfer"]["resolved_cache"]
    assert err.count("\n") == 1 and "read-only" in err and str(snap) in err
    assert _state(cfg.cache_dir) == before


def test_worker_count_comes_from_the_config(tmp_path, monkeypatch):
    """$ANNOTATE_INDEX_JOBS reaches the pool through Config.index_jobs(), not os.environ."""
    import multiprocessing

    from annotate.config import Config
    from annotate.index import build

    root = write_tree(tmp_path / "src", {f"include/f{i}.cuh": f"__device__ int f{i}(int x) {{ return x + {i}; }}\n"
                                         for i in range(45)})  # enough files for a pool by default
    seen, workers = [], build._workers
    monkeypatch.setattr(build, "_workers", lambda n, jobs=None: seen.append(jobs) or workers(n, jobs))

    def no_pool(*_a, **_k):
        raise AssertionError("a process pool was started although the Config asks for one worker")

    monkeypatch.setattr(multiprocessing, "get_context", no_pool)
    monkeypatch.setenv("ANNOTATE_INDEX_JOBS", "4")  # not the Config's environment: ignored
    config = Config.load(environ={"ANNOTATE_INDEX_JOBS": "1"}, cache_dir=tmp_path / "cache")
    ix = index_directory("demo", root, config=config)
    assert seen == [1] and len(ix.paths("demo")) == 45
    assert workers(45, 3) == 3 and workers(10) == 1

"""Atomicity, idempotence, locking and resource errors of ensure_fetched."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import time
from collections import namedtuple
from pathlib import Path

import pytest

from annotate.errors import AnnotateError
from annotate.fetch import api, archive, gitroute
from annotate.fetch.api import ensure_fetched, fetched_root

from fetch_support import build_wheel, make_world, tree, wheel_members

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def world(tmp_path):
    return make_world(tmp_path)


def _snapshot(cfg, world):
    root = cfg.checkout_dir("demo", world.demo_commit)
    return tree(root), cfg.fetch_record("demo", world.demo_commit).read_text()


@pytest.mark.parametrize("exc_type", [RuntimeError, KeyboardInterrupt])
def test_interrupted_fetch_keeps_the_previous_cache(world, monkeypatch, exc_type):
    cfg = world.config()
    ensure_fetched(cfg, via="git", progress=False)
    before = _snapshot(cfg, world)

    # crash in the middle of the submodule step: the superproject is already checked out in tmp
    real = gitroute.checkout
    calls = []

    def crashing(config, url, commit, paths, dest, reporter, label, **kw):
        calls.append(label)
        repo = real(config, url, commit, paths, dest, reporter, label, **kw)
        if label == "sub":
            raise exc_type("simulated crash")
        return repo

    monkeypatch.setattr(gitroute, "checkout", crashing)
    with pytest.raises(exc_type):
        ensure_fetched(cfg, via="git", progress=False, force=True)
    assert calls == ["demo", "sub"]
    assert _snapshot(cfg, world) == before  # previous tree and record untouched
    assert fetched_root(cfg, "demo") == cfg.checkout_dir("demo", world.demo_commit)
    assert not any(cfg.tmp_dir().iterdir())  # the half-built tree is gone
    assert sorted(p.name for p in cfg.checkouts_dir().iterdir()) == sorted(
        [cfg.checkout_dir("demo", world.demo_commit).name, cfg.fetch_record("demo", world.demo_commit).name])


def test_interrupted_first_fetch_leaves_nothing(world, monkeypatch):
    build_wheel(world.index_dir, wheel_members())
    cfg = world.config()
    real = archive.extract_verified

    def half(archive_path, spec, expected, dest, reporter, **kw):
        real(archive_path, spec, expected, dest, reporter, **kw)  # every file written...
        raise RuntimeError("killed before the rename")

    monkeypatch.setattr(archive, "extract_verified", half)
    with pytest.raises(RuntimeError):
        ensure_fetched(cfg, via="archive", progress=False)
    assert fetched_root(cfg, "demo") is None
    assert not cfg.checkout_dir("demo", world.demo_commit).exists()
    assert not any(cfg.tmp_dir().iterdir())


def test_leftovers_of_a_killed_process_are_cleaned(world):
    cfg = world.config()
    stale = cfg.tmp_dir() / f"fetch-demo-{world.demo_commit[:12]}-dead"
    (stale / "tree").mkdir(parents=True)
    ensure_fetched(cfg, via="git", progress=False)
    assert not stale.exists()


def test_second_fetch_is_fast_and_touches_no_network(world, monkeypatch):
    cfg = world.config()
    ensure_fetched(cfg, via="git", progress=False)

    def forbidden(*a, **k):
        raise AssertionError("network, git or pip used on the fast path")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(subprocess, "run", forbidden)
    monkeypatch.setattr("socket.create_connection", forbidden)
    monkeypatch.setattr(gitroute, "fetch_git", forbidden)
    monkeypatch.setattr(archive, "fetch_archive", forbidden)
    t0 = time.perf_counter()
    for via in ("auto", "git", "archive"):
        [rec] = ensure_fetched(cfg, via=via, progress=False)
        assert rec.route == "git"
    assert time.perf_counter() - t0 < 0.5


def test_record_for_another_commit_is_not_trusted(world):
    cfg = world.config()
    ensure_fetched(cfg, via="git", progress=False)
    path = cfg.fetch_record("demo", world.demo_commit)
    data = json.loads(path.read_text())
    data["submodules"][0]["commit"] = "3" * 40
    path.write_text(json.dumps(data))
    assert fetched_root(cfg, "demo") is None
    path.write_text("{broken")
    assert fetched_root(cfg, "demo") is None


CHILD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {repo!r})
    from pathlib import Path
    from annotate.config import Config
    from annotate.fetch import gitroute
    from annotate.fetch.api import ensure_fetched
    real = gitroute.checkout
    def slow(*a, **k):  # hold the pin's lock long enough that the other process must wait
        import time
        time.sleep(1.0)
        return real(*a, **k)
    gitroute.checkout = slow
    cfg = Config.load(environ=json.loads(sys.argv[1]), cache_dir=Path(sys.argv[2]), repo_root=Path(sys.argv[3]))
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    print(json.dumps(rec.to_json()))
""")


def test_two_processes_fetch_at_once(world):
    script = CHILD.format(repo=str(REPO))
    args = [sys.executable, "-c", script, json.dumps(world.env), str(world.cache), str(world.root)]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    recs = [json.loads(out) for out, _ in outs]
    # one fetch happened; the process that waited found its record
    assert recs[0]["fetched_at"] == recs[1]["fetched_at"] and recs[0]["seconds"] == recs[1]["seconds"]
    cfg = world.config()
    assert sorted(p.name for p in cfg.checkouts_dir().iterdir()) == sorted(
        [cfg.checkout_dir("demo", world.demo_commit).name, cfg.fetch_record("demo", world.demo_commit).name])
    assert not any(cfg.tmp_dir().iterdir())


def test_short_disk_is_refused_before_any_work(world, monkeypatch):
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(api.shutil, "disk_usage", lambda p: Usage(10 << 30, 10 << 30, 5 << 20))
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(world.config(), via="git", progress=False)
    assert "only 5 MB free" in exc.value.message and "ANNOTATE_CACHE_DIR" in exc.value.hint


def test_disk_full_mid_fetch_is_one_clear_error(world, monkeypatch):
    build_wheel(world.index_dir, wheel_members())

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(archive, "extract_verified", full)
    cfg = world.config()
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(cfg, via="archive", progress=False)
    assert exc.value.message.startswith("disk full while fetching demo")
    assert not any(cfg.tmp_dir().iterdir())


def test_cli_fetch_and_status_run_in_process(world, monkeypatch, capsys):
    """The command line itself: `annotate fetch` then `annotate status --json` (env-driven Config)."""
    from annotate import cli
    from annotate.config import Config

    monkeypatch.setattr(Config, "load", classmethod(
        lambda cls, *a, **k: _orig_load(environ=world.env, cache_dir=world.cache, repo_root=world.root)))
    assert cli.main(["fetch", "--via", "git", "-q"]) == 0
    assert "verified full" in capsys.readouterr().out
    assert cli.main(["status", "--json"]) == 0
    pins = json.loads(capsys.readouterr().out)["pins"]
    assert [p["name"] for p in pins] == ["demo", "sub"] and all(p["fetched"] for p in pins)
    assert cli.main(["fetch", "nosuch"]) == 2
    assert "unknown upstream 'nosuch'" in capsys.readouterr().err


from annotate.config import Config as _Config  # noqa: E402

_orig_load = _Config.load

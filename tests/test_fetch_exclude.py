"""A pin that takes a whole Python package out of a wheel: archive.map's longest-key rule with null
targets, and `exclude` patterns applied alike by the lock writer, the git route and the archive
route (fake wheels through real `pip download --no-index`, tiny git repositories)."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess

import pytest

from annotate.errors import AnnotateError
from annotate.fetch import gitroute
from annotate.fetch import lock as locks
from annotate.fetch.api import ensure_fetched, fetched_root, verify_fetched
from annotate.fetch.archive import _map_member
from annotate.progress import Reporter
from annotate.upstreams import get_upstream, load_upstreams, matches_exclude

from fetch_support import (DEMO_V1, PKG_EXCLUDE, PKG_EXCLUDED, PKG_V1, SUB_V1, build_wheel, make_world,
                           package_wheel_members, package_world, tree)


def expected_tree(sub_excluded: tuple[str, ...] = ()) -> dict[str, str]:
    want = {k: v for k, v in DEMO_V1.items() if k.startswith(("src/", "include/", "demo_kernels/"))
            and k not in PKG_EXCLUDED}
    want.update({f"third/sub/{k}": v for k, v in SUB_V1.items() if k.startswith("inc/") and k not in sub_excluded})
    return want


def second_cache(world, tmp_path):
    from annotate.config import Config

    return Config.load(environ=world.env, cache_dir=tmp_path / "cache-archive", repo_root=world.root)


@pytest.fixture
def world(tmp_path):
    return package_world(tmp_path)


# ---- the two rules, on their own -----------------------------------------------------------------
def test_map_longest_key_wins_whatever_the_order_and_null_leaves_out():
    mapping = {"pkg/": "pkg/", "pkg/data/": None, "pkg/_build_meta.py": None,
               "pkg/data/include/": "include/", "pkg/data/cccl/cub/": "third/cccl/cub/"}
    want = {
        "pkg/core.py": "pkg/core.py",
        "pkg/jit/deep/x.py": "pkg/jit/deep/x.py",
        "pkg/data/include/a/b.h": "include/a/b.h",
        "pkg/data/cccl/cub/c.cuh": "third/cccl/cub/c.cuh",
        "pkg/data/cutlass/d.h": None,  # under the null folder, no longer key
        "pkg/data/build.py": None,
        "pkg/_build_meta.py": None,  # a key without '/' names that one member
        "pkg/_build_meta.pyc": "pkg/_build_meta.pyc",  # ... and no other
        "pkg_other/x.py": None,  # 'pkg/' is a folder: no prefix match on 'pkg_other'
        "pkg.dist-info/RECORD": None,  # no key names it
    }
    keys = list(mapping)
    for seed in range(6):
        random.Random(seed).shuffle(keys)
        shuffled = {k: mapping[k] for k in keys}
        assert {m: _map_member(m, shuffled) for m in want} == want, keys


def test_exclude_matcher_is_fnmatch_on_the_whole_path():
    pats = ("pkg/notes/*.md", "pkg/*/run_*.sh")
    assert matches_exclude("pkg/notes/A.md", pats)
    assert matches_exclude("pkg/notes/deeper/B.md", pats)  # '*' crosses '/'
    assert matches_exclude("pkg/a/b/run_x.sh", pats)
    assert not matches_exclude("pkg/notes/a.MD", pats)  # case-sensitive, also on case-blind systems
    assert not matches_exclude("other/pkg/notes/A.md", pats)  # anchored at the repository root
    assert not matches_exclude("pkg/notes/keep.py", pats)
    assert not matches_exclude("pkg/notes/A.md", ())


# ---- the lock writer -----------------------------------------------------------------------------
def test_lock_leaves_out_the_excluded_files_and_records_the_patterns(world):
    from annotate.commands.fetch import cmd_lock

    lock_path = world.root / "vendor_kernels/locks/demo.json"
    data = json.loads(lock_path.read_text())
    assert data["exclude"] == PKG_EXCLUDE
    assert list(data) == ["name", "commit", "paths", "exclude", "files"]
    assert set(data["files"]) == set(expected_tree()) - {k for k in expected_tree() if k.startswith("third/")}
    assert not set(PKG_EXCLUDED) & set(data["files"])
    # `annotate lock` itself (the CLI, from a git dir and from the pin's URL) writes the same bytes
    before = lock_path.read_text()
    lock_path.unlink()
    assert cmd_lock(argparse.Namespace(names=["demo"], source=str(world.demo_repo)), world.config()) == 0
    assert lock_path.read_text() == before
    lock_path.unlink()
    assert cmd_lock(argparse.Namespace(names=["demo"], source=None), world.config()) == 0
    assert lock_path.read_text() == before
    # a pin without patterns keeps the lock format it had: no "exclude" key at all
    assert "exclude" not in json.loads((world.root / "vendor_kernels/locks/sub.json").read_text())


def test_exclude_pattern_that_matches_nothing_is_an_error_naming_it(world):
    with pytest.raises(AnnotateError) as exc:
        locks.lock_from_git(world.demo_repo / ".git", "demo", world.demo_commit, ("src/", "demo_kernels/"),
                            ("demo_kernels/notes/*.md", "demo_kernels/nosuch/*"))
    assert "exclude pattern 'demo_kernels/nosuch/*' matches no file" in exc.value.message
    assert "upstreams.yaml" in exc.value.hint


@pytest.mark.parametrize("via", ["git", "archive"])
def test_lock_written_for_other_patterns_is_refused_by_both_routes(world, via):
    build_wheel(world.index_dir, package_wheel_members())
    pins = world.pins()
    pins["upstreams"]["demo"]["exclude"] = PKG_EXCLUDE[:1]  # the pin changed, the lock did not
    world.write_pins(pins)
    cfg = world.config()
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(cfg, via=via, progress=False)
    assert "demo.json: lock is for paths" in exc.value.message and "annotate lock demo" in exc.value.hint
    assert fetched_root(cfg, "demo") is None


# ---- both routes ---------------------------------------------------------------------------------
def test_both_routes_give_the_same_files_verified_full(world, tmp_path):
    build_wheel(world.index_dir, package_wheel_members())
    by_git = world.config()
    [g] = ensure_fetched(by_git, via="git", progress=False)
    by_archive = second_cache(world, tmp_path)
    [a] = ensure_fetched(by_archive, via="archive", progress=False)
    assert g.root != a.root
    assert (g.verified, g.missing, a.verified, a.missing) == ("full", (), "full", ())
    assert tree(g.root) == tree(a.root) == expected_tree()
    assert g.files == a.files == len(expected_tree())
    # neither the generated module nor the wheel's unmapped data came along
    assert not (a.root / "demo_kernels/_build_meta.py").exists()
    assert not (a.root / "demo_kernels/data").exists()
    verify_fetched(by_git, progress=False)
    verify_fetched(by_archive, progress=False)


def test_archive_leaves_out_excluded_files_even_when_the_wheel_ships_them(world):
    members = package_wheel_members(with_excluded=True)
    members["demo_kernels/notes/NOTES.md"] += b"changed after the tag\n"  # not even looked at
    build_wheel(world.index_dir, members)
    [rec] = ensure_fetched(world.config(), via="archive", progress=False)
    assert rec.verified == "full" and tree(rec.root) == expected_tree()


def test_a_data_member_the_map_does_not_null_out_is_checked_against_the_lock(world):
    # without the null folder, the wheel's data/ files land in the package and the lock refuses them
    pins = world.pins()
    del pins["upstreams"]["demo"]["archive"]["map"]["demo_kernels/data/"]
    world.write_pins(pins)
    build_wheel(world.index_dir, package_wheel_members())
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(world.config(), via="archive", progress=False)
    assert "demo_kernels/data/" in exc.value.message and "not in the lock" in exc.value.message


def test_git_sparse_checkout_never_fetches_the_excluded_blobs(world, tmp_path):
    # the demo remote serves blobless clones, like GitHub: the checkout pulls blobs on demand only
    cfg = world.config()
    up = get_upstream(cfg, "demo")
    dest = tmp_path / "co"
    repo = gitroute.checkout(cfg, world.demo_repo.as_uri(), up.commit, up.paths, dest, Reporter(False), "demo",
                             exclude=up.exclude)
    sparse = (dest / ".git/info/sparse-checkout").read_text().splitlines()
    assert "!/demo_kernels/notes/odd \\[1]\\*.md" in sparse  # a literal: git reads "[1]*" as a glob
    env = {**os.environ, "GIT_NO_LAZY_FETCH": "1"}
    blobs = {p: oid for _m, oid, p in locks.tree_entries(dest / ".git", up.commit, up.paths)}
    for rel in PKG_EXCLUDED:
        assert not (dest / rel).exists()
        assert subprocess.run(["git", "-C", str(dest), "cat-file", "-e", blobs[rel]], env=env).returncode != 0, rel
    assert subprocess.run(["git", "-C", str(dest), "cat-file", "-e", blobs["demo_kernels/core.py"]],
                          env=env).returncode == 0
    assert repo.git_dir == dest / ".git"


def test_git_route_refuses_a_checkout_holding_files_the_pin_excludes(world, monkeypatch):
    # a git that ignored the negated patterns: the tree on disk is compared with the pin's selection
    monkeypatch.setattr(gitroute, "_sparse_patterns", lambda paths, excluded=(): "".join(f"/{p}\n" for p in paths))
    cfg = world.config()
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(cfg, via="git", progress=False)
    assert "git checked out demo_kernels/" in exc.value.message and "(and 2 more)" in exc.value.message
    assert fetched_root(cfg, "demo") is None and not any(cfg.tmp_dir().iterdir())


def test_submodule_patterns_apply_below_the_submodule_path(tmp_path):
    world = package_world(tmp_path, sub_exclude=("inc/deep/*",))
    members = package_wheel_members()  # ships third/sub/inc/deep/x.inl: left out all the same
    build_wheel(world.index_dir, members)
    by_git = world.config()
    [g] = ensure_fetched(by_git, via="git", progress=False)
    by_archive = second_cache(world, tmp_path)
    [a] = ensure_fetched(by_archive, via="archive", progress=False)
    want = expected_tree(sub_excluded=("inc/deep/x.inl",))
    assert tree(g.root) == tree(a.root) == want
    assert g.verified == a.verified == "full"
    assert [s.files for s in g.submodules] == [s.files for s in a.submodules] == [1]
    # the superproject's patterns do not reach into the submodule, nor the other way round
    up = load_upstreams(by_git)["demo"]
    assert up.excludes("third/sub/inc/deep/x.inl") and not up.excludes("inc/deep/x.inl")
    assert up.excludes("demo_kernels/notes/NOTES.md") and not up.excludes("third/sub/demo_kernels/notes/NOTES.md")


# ---- the pin file --------------------------------------------------------------------------------
@pytest.mark.parametrize("edit, message", [
    (lambda d: d["archive"]["map"].update({"demo_kernels/": "demo_kernels"}),
     "'demo_kernels/': 'demo_kernels': a folder ('/' at the end) maps onto a folder"),
    (lambda d: d["archive"]["map"].update({"demo_kernels/_build_meta.py": "x/"}),
     "'demo_kernels/_build_meta.py': 'x/': a folder"),
    (lambda d: d["archive"]["map"].update({"/abs/": "src/"}), "'/abs/': expected a relative member name"),
    (lambda d: d.update(exclude="demo_kernels/*.md"), "upstreams.demo.exclude: expected a list of glob patterns"),
    (lambda d: d.update(exclude=["/demo_kernels/*.md"]), "'/demo_kernels/*.md': patterns are relative"),
    (lambda d: d["submodules"][0].update(exclude=[""]), "upstreams.demo.submodules.0.exclude: expected a list"),
    (lambda d: d["submodules"][0].update(index="some"),
     "upstreams.demo.submodules.0.index: expected true, false or included, not 'some'"),
])
def test_malformed_map_or_exclude_is_an_error_naming_the_file(world, edit, message):
    pins = world.pins()
    edit(pins["upstreams"]["demo"])
    world.write_pins(pins)
    with pytest.raises(AnnotateError) as exc:
        load_upstreams(world.config())
    assert exc.value.message.startswith(str(world.root / "vendor_kernels/upstreams.yaml"))
    assert message in exc.value.message


def test_package_fixture_holds_what_the_tests_assume(tmp_path):
    # the name with glob characters is committed as such, and every pattern leaves out something
    world = make_world(tmp_path)
    committed = {p for _m, _o, p in locks.tree_entries(world.demo_repo / ".git", world.demo_commit, ("demo_kernels/",))}
    assert committed == set(PKG_V1)
    assert all(any(matches_exclude(p, (pat,)) for p in PKG_EXCLUDED) for pat in PKG_EXCLUDE)
    assert {p for p in PKG_V1 if matches_exclude(p, tuple(PKG_EXCLUDE))} == set(PKG_EXCLUDED)


def test_a_checkout_fetched_for_other_patterns_is_not_this_pins(world):
    """The record names the selection (paths + exclude) it was fetched for; edit the pin and the
    checkout stops counting as fetched until a fetch verifies it against the new pin."""
    [rec] = ensure_fetched(world.config(), via="git", progress=False)
    assert rec.selection == get_upstream(world.config(), "demo").selection()
    original = world.pins()
    changed = json.loads(json.dumps(original))
    changed["upstreams"]["demo"]["exclude"] = PKG_EXCLUDE[:1]
    world.write_pins(changed)
    assert fetched_root(world.config(), "demo") is None
    world.write_pins(original)
    assert fetched_root(world.config(), "demo") == rec.root
    # a record written before records named their selection is not trusted either: the next
    # fetch verifies the tree in place against the lock and writes a record that names it
    path = world.config().fetch_record("demo", rec.commit)
    data = json.loads(path.read_text())
    del data["selection"]
    path.write_text(json.dumps(data))
    assert fetched_root(world.config(), "demo") is None
    [again] = ensure_fetched(world.config(), progress=False)
    assert again.route == "existing" and again.verified == "full" and again.selection == rec.selection

"""The git route on tiny repositories made by the test (one with a submodule), through file:// and
plain-path URL overrides, exactly the code path a user with a mirror takes."""

from __future__ import annotations

import json
import os

import pytest

from annotate.errors import AnnotateError
from annotate.fetch import api
from annotate.fetch.api import ensure_fetched, fetch_status, fetched_root, verify_fetched

from fetch_support import DEMO_V1, SUB_V1, make_world, tree


@pytest.fixture
def world(tmp_path):
    return make_world(tmp_path)


def expected_tree():
    want = {k: v for k, v in DEMO_V1.items() if k.startswith(("src/", "include/"))}
    want.update({f"third/sub/{k}": v for k, v in SUB_V1.items() if k.startswith("inc/")})
    return want


def test_git_route_file_url_checks_out_the_pin_with_its_submodule(world):
    cfg = world.config()
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    assert rec.route == "git" and rec.verified == "full" and rec.missing == ()
    assert rec.commit == world.demo_commit
    root = cfg.checkout_dir("demo", world.demo_commit)
    assert rec.root == root == fetched_root(cfg, "demo")
    # only the sparse paths, at the pinned commit (not the branch tip), and no .git anywhere
    assert tree(root) == expected_tree()
    assert not (root / ".git").exists() and not (root / "third/sub/.git").exists()
    assert [s.commit for s in rec.submodules] == [world.sub_commit]
    saved = json.loads(cfg.fetch_record("demo", world.demo_commit).read_text())
    assert saved["route"] == "git" and saved["submodules"][0]["name"] == "sub"
    assert not any(cfg.tmp_dir().iterdir())


def test_git_route_plain_path_url(world):
    cfg = world.config(ANNOTATE_URL_DEMO=str(world.demo_repo), ANNOTATE_URL_SUB=str(world.sub_repo))
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    assert rec.verified == "full" and tree(rec.root) == expected_tree()
    verify_fetched(cfg, progress=False)


def test_url_override_from_config_file(world, tmp_path):
    toml = tmp_path / "config.toml"
    toml.write_text(f'[urls]\ndemo = "{world.demo_repo.as_uri()}"\nsub = "{world.sub_repo}"\n')
    env = {k: v for k, v in world.env.items() if not k.startswith("ANNOTATE_URL_")}
    from annotate.config import Config

    cfg = Config.load(environ={**env, "ANNOTATE_CONFIG": str(toml)}, cache_dir=world.cache, repo_root=world.root)
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    assert "config file" in rec.reason and rec.verified == "full"


def test_wrong_pin_names_the_commit_and_the_url(world):
    pins = world.pins()
    pins["upstreams"]["demo"]["commit"] = "1" * 40
    world.write_pins(pins)
    cfg = world.config()
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(cfg, via="git", progress=False)
    assert "1111111111111111111111111111111111111111 not found in" in exc.value.message
    assert world.demo_repo.as_uri() in exc.value.message
    assert "mirror up to date" in exc.value.hint
    assert fetched_root(cfg, "demo") is None
    assert not any(cfg.tmp_dir().iterdir())


def test_submodule_pin_must_equal_the_gitlink(world):
    pins = world.pins()
    pins["upstreams"]["demo"]["submodules"][0]["commit"] = "2" * 40
    world.write_pins(pins)
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(world.config(), via="git", progress=False)
    assert "records sub at" in exc.value.message and "222222222222" in exc.value.message


def test_missing_sparse_path_is_reported(tmp_path):
    world = make_world(tmp_path, extra_paths=("nonexistent/",))
    cfg = world.config()
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    assert rec.verified == "partial"
    assert "nonexistent/" in rec.missing
    [row] = [r for r in fetch_status(cfg) if r.name == "demo"]
    assert "nonexistent/" in row.missing and row.to_json()["missing_count"] == 1


def test_unreachable_remote_fails_fast_and_auto_says_why(world, monkeypatch):
    # connection refused on localhost: no DNS, no network needed
    cfg = world.config(ANNOTATE_URL_DEMO="http://127.0.0.1:9/demo.git")
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(cfg, via="git", progress=False)
    assert "cannot reach http://127.0.0.1:9/demo.git" in exc.value.message


def test_hanging_dns_gives_up_after_the_git_timeout(world, monkeypatch):
    import time

    from annotate.fetch import gitroute

    monkeypatch.setattr(gitroute, "_PROBED", {})
    monkeypatch.setattr(gitroute.socket, "create_connection", lambda *a, **k: time.sleep(30))
    cfg = world.config(ANNOTATE_URL_DEMO="https://github.example/demo.git", ANNOTATE_GIT_TIMEOUT="0.3")
    t0 = time.monotonic()
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(cfg, via="git", progress=False)
    assert time.monotonic() - t0 < 3
    assert "no answer from github.example in 0.3 s; offline?" in exc.value.message


def test_stale_lock_is_an_error_naming_the_file(world):
    lock = world.root / "vendor_kernels/locks/demo.json"
    data = json.loads(lock.read_text())
    data["files"]["src/a.cu"] = "0" * 40
    lock.write_text(json.dumps(data))
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(world.config(), via="git", progress=False)
    assert "src/a.cu" in exc.value.message and "annotate lock" in exc.value.hint


def test_verify_detects_a_modified_checkout(world):
    cfg = world.config()
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    (rec.root / "src/a.cu").write_text("changed\n")
    with pytest.raises(AnnotateError) as exc:
        verify_fetched(cfg, progress=False)
    assert "src/a.cu" in exc.value.message


def test_force_refetch_replaces_the_tree(world):
    cfg = world.config()
    [first] = ensure_fetched(cfg, via="git", progress=False)
    (first.root / "src/a.cu").write_text("changed\n")
    [again] = ensure_fetched(cfg, via="git", progress=False, force=True)
    assert tree(again.root) == expected_tree()
    assert sorted(os.listdir(cfg.checkouts_dir())) == sorted(
        [cfg.checkout_dir("demo", world.demo_commit).name, cfg.fetch_record("demo", world.demo_commit).name])


def test_submodule_name_is_not_fetchable_alone(world):
    from annotate.errors import UsageError

    with pytest.raises(UsageError) as exc:
        ensure_fetched(world.config(), names=["sub"], progress=False)
    assert "submodule of demo" in exc.value.message


def test_existing_tree_without_record_is_verified_in_place(world):
    cfg = world.config()
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    cfg.fetch_record("demo", world.demo_commit).unlink()
    assert fetched_root(cfg, "demo") is None
    [adopted] = ensure_fetched(cfg, progress=False)
    assert adopted.route == "existing" and adopted.verified == "full"


def test_lock_command_from_a_git_dir(world):
    import argparse

    from annotate.commands.fetch import cmd_lock

    lock = world.root / "vendor_kernels/locks/demo.json"
    before = lock.read_text()
    lock.unlink()
    cfg = world.config()
    assert cmd_lock(argparse.Namespace(names=["demo"], source=str(world.demo_repo)), cfg) == 0
    assert lock.read_text() == before
    # without --from: the URL (a plain path here) is read directly
    lock.unlink()
    cfg = world.config(ANNOTATE_URL_DEMO=str(world.demo_repo))
    assert cmd_lock(argparse.Namespace(names=["demo"], source=None), cfg) == 0
    assert lock.read_text() == before
    # and through a remote URL (file://): a blobless fetch of the commit's trees
    lock.unlink()
    assert cmd_lock(argparse.Namespace(names=["sub", "demo"], source=None), world.config()) == 0
    assert lock.read_text() == before


def test_record_version_and_api_shapes(world):
    cfg = world.config()
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    d = rec.to_json()
    assert d["version"] == api.RECORD_VERSION
    assert api.FetchRecord.from_json(d) == rec


def test_server_refusing_fetch_by_commit_gets_a_full_blobless_fetch(world, monkeypatch):
    # protocol v0 and no allowAnySHA1InWant on the sub remote: `fetch origin <sha>` is refused there
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.version")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")
    cfg = world.config()
    [rec] = ensure_fetched(cfg, via="git", progress=False)
    assert rec.verified == "full" and tree(rec.root) == expected_tree()

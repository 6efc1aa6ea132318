"""The archive route through real `pip download`, against a --find-links directory the test fills
with a fake wheel or sdist (`--no-index`): the same code path a user behind a mirror takes."""

from __future__ import annotations

import argparse
import json

import pytest

from annotate.errors import AnnotateError
from annotate.fetch import archive
from annotate.fetch.api import ensure_fetched, fetch_status, fetched_root
from annotate.upstreams import get_upstream

from fetch_support import build_sdist, build_wheel, make_world, wheel_members


@pytest.fixture
def world(tmp_path):
    return make_world(tmp_path)


def test_wheel_maps_members_and_verifies_every_file(world):
    build_wheel(world.index_dir, wheel_members())
    cfg = world.config()
    [rec] = ensure_fetched(cfg, via="archive", progress=False)
    assert rec.route == "archive" and rec.verified == "full" and rec.missing == ()
    assert rec.files == 5
    assert (rec.root / "third/sub/inc/deep/x.inl").read_text() == "// x\n"
    assert not (rec.root / "__init__.py").exists()  # unmapped members stay out
    assert (cfg.downloads_dir() / "demo_kernels-1.0-py3-none-any.whl").is_file()


def test_files_the_archive_lacks_are_missing_not_skipped(world):
    build_wheel(world.index_dir, wheel_members(drop=("demo_kernels/data/sub/inc/deep/x.inl",
                                                     "demo_kernels/data/src/b.cuh")))
    cfg = world.config()
    [rec] = ensure_fetched(cfg, via="archive", progress=False)
    assert rec.verified == "partial"
    assert rec.missing == ("src/b.cuh", "third/sub/inc/deep/x.inl")
    rows = {r.name: r for r in fetch_status(cfg)}
    assert rows["demo"].missing == ("src/b.cuh",) and rows["demo"].verified == "partial"
    assert rows["sub"].missing == ("third/sub/inc/deep/x.inl",) and rows["sub"].verified == "partial"


def test_tampered_file_is_an_error_naming_it(world):
    build_wheel(world.index_dir, wheel_members(tamper="demo_kernels/data/include/demo/h.h"))
    cfg = world.config()
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(cfg, via="archive", progress=False)
    assert "include/demo/h.h" in exc.value.message and "differs from the lock" in exc.value.message
    assert "delete" in exc.value.hint
    assert fetched_root(cfg, "demo") is None
    assert not cfg.checkout_dir("demo", world.demo_commit).exists()
    assert not any(cfg.tmp_dir().iterdir())


def test_file_unknown_to_the_lock_is_an_error(world):
    members = wheel_members()
    members["demo_kernels/data/src/extra.cu"] = b"// not upstream\n"
    build_wheel(world.index_dir, members)
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(world.config(), via="archive", progress=False)
    assert "src/extra.cu" in exc.value.message and "not in the lock" in exc.value.message


def test_sdist_gets_the_pin_env_and_no_build_isolation(world):
    pins = world.pins()
    pins["upstreams"]["demo"]["archive"] = {
        "requirement": "demo-kernels==1.0", "kind": "sdist", "env": {"DEMO_SKIP_BUILD": "TRUE"},
        "map": {"demo_kernels-1.0/src/": "src/", "demo_kernels-1.0/include/": "include/",
                "demo_kernels-1.0/sub/inc/": "third/sub/inc/"}}
    world.write_pins(pins)
    members = {k.replace("demo_kernels/data/", ""): v for k, v in wheel_members().items()}
    build_sdist(world.index_dir, members, need_env="DEMO_SKIP_BUILD")
    cfg = world.config()
    cmd = archive.pip_command(cfg, get_upstream(cfg, "demo").archive, cfg.tmp_dir())
    assert "--no-build-isolation" in cmd and ":all:" in cmd and "--no-index" in cmd
    [rec] = ensure_fetched(cfg, via="archive", progress=False)
    assert rec.verified == "full" and rec.files == 5


def test_pip_failure_shows_pips_last_lines(world):
    cfg = world.config()  # nothing in the --find-links directory
    with pytest.raises(AnnotateError) as exc:
        ensure_fetched(cfg, via="archive", progress=False)
    msg = exc.value.message
    assert msg.startswith("pip download demo-kernels==1.0 failed")
    assert "No matching distribution" in msg or "Could not find a version" in msg


def test_auto_falls_back_to_the_archive_and_says_why(world, capsys):
    build_wheel(world.index_dir, wheel_members())
    cfg = world.config(ANNOTATE_URL_DEMO="http://127.0.0.1:9/demo.git")
    [rec] = ensure_fetched(cfg, via="auto", progress=True)
    assert rec.route == "archive"
    assert rec.reason.startswith("git: cannot reach http://127.0.0.1:9/demo.git")
    assert "using archive demo-kernels==1.0" in rec.reason
    assert "trying archive" in capsys.readouterr().err


def test_status_json_and_annotation_coverage(world, capsys):
    from annotate.commands.fetch import cmd_status

    notes = world.root / "annotations" / "demo" / "src"
    notes.mkdir(parents=True)
    (notes / "a.cu.yaml").write_text("upstream: demo\npath: src/a.cu\nfunctions:\n  a: {summary: x}\n  b: {}\n")
    (notes / "b.cuh.yaml").write_text("functions: [unclosed\n")
    cfg = world.config()
    assert cmd_status(argparse.Namespace(json=True), cfg) == 0
    before = json.loads(capsys.readouterr().out)
    demo = before["pins"][0]
    assert demo["fetched"] is False and demo["annotation_files"] == 2 and demo["annotated_functions"] == 2
    assert demo["broken_annotation_files"] == ["demo/src/b.cuh.yaml"]

    build_wheel(world.index_dir, wheel_members(drop=("demo_kernels/data/src/b.cuh",)))
    ensure_fetched(cfg, via="archive", progress=False)
    assert cmd_status(argparse.Namespace(json=True), cfg) == 0
    after = {p["name"]: p for p in json.loads(capsys.readouterr().out)["pins"]}
    assert after["demo"]["fetched"] and after["demo"]["route"] == "archive"
    assert after["demo"]["verified"] == "partial" and after["demo"]["missing"] == ["src/b.cuh"]
    assert after["demo"]["missing_count"] == 1 and after["demo"]["fetched_at"]
    assert after["sub"]["kind"] == "submodule" and after["sub"]["parent"] == "demo"
    assert after["sub"]["commit"] == world.sub_commit and after["sub"]["verified"] == "full"
    assert cmd_status(argparse.Namespace(json=False), cfg) == 0
    human = capsys.readouterr().out
    assert "demo" in human and "partial" in human


def test_pip_args_from_the_config_file(world, tmp_path):
    from annotate.config import Config

    build_wheel(world.index_dir, wheel_members())
    toml = tmp_path / "config.toml"
    toml.write_text(f'[fetch]\npip_args = ["--no-index", "--find-links", "{world.index_dir}"]\n')
    env = {k: v for k, v in world.env.items() if k != "ANNOTATE_PIP_ARGS"}
    cfg = Config.load(environ={**env, "ANNOTATE_CONFIG": str(toml)}, cache_dir=world.cache, repo_root=world.root)
    assert cfg.pip_args() == ["--no-index", "--find-links", str(world.index_dir)]
    [rec] = ensure_fetched(cfg, via="archive", progress=False)
    assert rec.verified == "full"

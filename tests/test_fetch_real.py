"""The real pins. The archive route needs the package index (CI reaches it); the git route needs
local snapshots of the upstream histories and skips without them (CI cannot reach GitHub)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotate.config import Config, url_env_var
from annotate.fetch.api import ensure_fetched, fetch_status, verify_fetched
from annotate.fetch.lock import expected_files
from annotate.upstreams import load_upstreams

pytestmark = pytest.mark.slow

# The git route runs against local mirrors named the way a user names them: ANNOTATE_URL_<NAME>
# pointing at local git directories (CI has none and cannot reach GitHub, so it skips there).
MIRRORS = {n: Path(os.environ.get(url_env_var(n), "/nonexistent"))
           for n in ("flashinfer", "flash-attention", "cutlass", "cccl")}


def _clean_env() -> dict[str, str]:
    # the user's URL overrides and cache must not leak into a test of the published pins
    return {k: v for k, v in os.environ.items() if not k.startswith("ANNOTATE_")}


def test_archive_route_fetches_both_pins_and_every_file_matches_the_lock(tmp_path):
    cfg = Config.load(environ=_clean_env(), cache_dir=tmp_path / "cache")
    recs = {r.name: r for r in ensure_fetched(cfg, via="archive", progress=False)}
    ups = load_upstreams(cfg)

    fi = recs["flashinfer"]
    assert fi.route == "archive" and fi.verified == "full" and fi.missing == ()
    # 1326 files of FlashInfer's own (include/, csrc/ and the Python package flashinfer/, less the
    # 7 non-code files the wheel lacks, which the pin excludes) + 1993 headers of its vendored CCCL
    assert fi.files == len(expected_files(cfg, ups["flashinfer"])) == 1326 + 1993
    for rel in ("flashinfer/norm/__init__.py", "flashinfer/decode.py", "flashinfer/jit/core.py"):
        assert (fi.root / rel).is_file(), rel
    assert not (fi.root / "flashinfer/_build_meta.py").exists()  # generated into the wheel, not in git

    fa = recs["flash-attention"]
    assert fa.route == "archive" and fa.verified == "partial"
    expected = expected_files(cfg, ups["flash-attention"])
    assert fa.files + len(fa.missing) == len(expected)
    # what the sdist lacks, as measured: most of hopper/, 29 cutlass .inl builders, 5 packaging files
    by_top = {}
    for m in fa.missing:
        top = "csrc/cutlass" if m.startswith("csrc/cutlass/") else m.split("/")[0]
        by_top[top] = by_top.get(top, 0) + 1
    assert set(by_top) <= {"hopper", "csrc/cutlass", "flash_attn"}, by_top
    assert all(m.endswith(".inl") for m in fa.missing if m.startswith("csrc/cutlass/"))
    assert not any(m.startswith("csrc/flash_attn/") for m in fa.missing)

    # every file on disk hashed again against the committed locks
    verify_fetched(cfg, progress=False)
    rows = {r.name: r for r in fetch_status(cfg)}
    assert rows["cutlass"].fetched and rows["cutlass"].verified == "partial"
    assert len(rows["cutlass"].missing) == 29


@pytest.mark.skipif(not all(p.is_dir() for p in MIRRORS.values()), reason="ANNOTATE_URL_{FLASHINFER,FLASH_ATTENTION,CUTLASS,CCCL} do not all name local git mirrors")
def test_git_route_through_url_overrides_to_local_snapshots(tmp_path):
    env = {**_clean_env(), **{url_env_var(n): str(p) for n, p in MIRRORS.items()}}
    cfg = Config.load(environ=env, cache_dir=tmp_path / "cache")
    recs = {r.name: r for r in ensure_fetched(cfg, via="git", progress=False)}
    for name, rec in recs.items():
        assert rec.route == "git" and rec.verified == "full" and rec.missing == (), name
    assert recs["flash-attention"].submodules[0].files == 771
    assert recs["flashinfer"].files == 1326 + 1993
    assert recs["flashinfer"].submodules[0].files == 1993
    verify_fetched(cfg, progress=False)


def _files(root: Path) -> dict[str, str]:
    from annotate.fetch.lock import file_blob_id

    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[p.relative_to(root).as_posix()] = file_blob_id(p)
    return out


@pytest.mark.skipif(not all(MIRRORS[n].is_dir() for n in ("flashinfer", "cccl")),
                    reason="ANNOTATE_URL_{FLASHINFER,CCCL} do not name local git mirrors")
def test_flashinfer_by_both_routes_is_the_same_tree(tmp_path):
    """The pin's exclude patterns and archive map make the wheel give exactly the git route's files."""
    env = {**_clean_env(), **{url_env_var(n): str(MIRRORS[n]) for n in ("flashinfer", "cccl")}}
    [g] = ensure_fetched(Config.load(environ=env, cache_dir=tmp_path / "git"), ["flashinfer"], via="git",
                         progress=False)
    [a] = ensure_fetched(Config.load(environ=_clean_env(), cache_dir=tmp_path / "archive"), ["flashinfer"],
                         via="archive", progress=False)
    assert g.verified == a.verified == "full"
    by_git, by_archive = _files(g.root), _files(a.root)
    assert by_git == by_archive and len(by_git) == 1326 + 1993
    assert not any("cutedsl_megamoe/" in p and p.endswith((".md", ".sh")) for p in by_git)

"""Where the workspace (pins, annotations, harness specs) is found."""

from __future__ import annotations

from pathlib import Path

import annotate.config as config_mod
from annotate.config import Config, find_repo_root, url_env_var


def test_env_root_wins(tmp_path):
    assert find_repo_root({"ANNOTATE_ROOT": str(tmp_path)}) == tmp_path


def test_installed_package_finds_the_workspace_from_the_current_directory(tmp_path, monkeypatch):
    # A non-editable install has no vendor_kernels/ beside the package: the clone the user is in counts.
    monkeypatch.setattr(config_mod, "REPO_ROOT", tmp_path / "site-packages")
    ws = tmp_path / "clone"
    (ws / "vendor_kernels").mkdir(parents=True)
    (ws / "vendor_kernels" / "upstreams.yaml").write_text("upstreams: {}\n")
    (ws / "annotations" / "flashinfer").mkdir(parents=True)
    assert find_repo_root({}, cwd=ws / "annotations" / "flashinfer") == ws.resolve()
    monkeypatch.chdir(ws / "annotations")
    cfg = Config.load(environ={}, cache_dir=tmp_path / "c")
    assert cfg.repo_root == ws.resolve()
    assert cfg.upstreams_file == ws.resolve() / "vendor_kernels" / "upstreams.yaml"


def test_checkout_keys_and_url_variables(tmp_path):
    cfg = Config.load(environ={"ANNOTATE_URL_FLASH_ATTENTION": "/m/fa.git"}, cache_dir=tmp_path)
    assert cfg.checkout_dir("flashinfer", "a" * 40).name == "flashinfer-aaaaaaaaaaaa"
    assert url_env_var("flash-attention") == "ANNOTATE_URL_FLASH_ATTENTION"
    assert cfg.url_for("flash-attention", "https://x")[0] == "/m/fa.git"
    assert cfg.url_for("flashinfer", "https://x") == ("https://x", "pin file")

"""Shared fixtures. Tests never touch the user's cache: each gets its own Config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotate.config import Config


@pytest.fixture
def tmp_config(tmp_path: Path) -> Config:
    """A Config whose cache is a fresh temporary directory and whose environment is empty."""
    return Config.load(environ={}, cache_dir=tmp_path / "cache")


@pytest.fixture(scope="session")
def real_config() -> Config:
    """The Config of the real pins (the cache named by ANNOTATE_CACHE_DIR or the default).

    Tests marked `slow` use it; they skip with a clear reason when the pins are not fetched,
    and .ci/run fetches them first so that in CI they always run.
    """
    return Config.load()


@pytest.fixture(scope="session")
def pinned(real_config: Config):
    """pinned("flashinfer") -> the verified checkout root of that pin.

    Skips when it is not fetched, except under CI (CI=true), where .ci/run must have
    fetched it and its absence is a failure, so a test cannot pass by running nothing.
    """

    def get(upstream: str) -> Path:
        from annotate.upstreams import checkout_root, get_upstream

        root = checkout_root(real_config, get_upstream(real_config, upstream))
        if not root.is_dir():
            if os.environ.get("CI"):
                pytest.fail(f"{upstream} is not fetched in {real_config.cache_dir}; .ci/run fetches it first")
            pytest.skip(f"{upstream} not fetched (run `annotate fetch`)")
        return root

    return get


def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true", default=False,
                     help="rewrite the snapshot files (tests/data/**/snapshots) from the current output")


@pytest.fixture
def snapshot(request):
    """snapshot(path, text): compare `text` with the committed snapshot file. A missing or
    different snapshot fails; `pytest --update-snapshots` writes them (review the diff)."""
    update = request.config.getoption("--update-snapshots")

    def check(path: Path, text: str) -> None:
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        if not path.is_file():
            pytest.fail(f"snapshot {path.name} is missing; run pytest --update-snapshots to write it, then review it")
        assert text == path.read_text(encoding="utf-8"), (
            f"{path.name} changed; if intended, run pytest --update-snapshots and review the diff")

    return check

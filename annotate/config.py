"""One configuration object, built once by the CLI (or a test) and passed down.

Nothing here touches the disk at import time. Every derived path has exactly one
function that makes it.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

# The repository root (the "workspace"): annotations/, vendor_kernels/, schema/ live there. In a
# checkout (or an editable install) it is the package's parent; a non-editable install finds it
# from the current directory, like git, or from $ANNOTATE_ROOT.
REPO_ROOT = Path(__file__).resolve().parent.parent
ENV_ROOT = "ANNOTATE_ROOT"
_MARKER = Path("vendor_kernels") / "upstreams.yaml"


def find_repo_root(env: dict[str, str], cwd: Path | None = None) -> Path:
    if env.get(ENV_ROOT):
        return Path(env[ENV_ROOT]).expanduser()
    if (REPO_ROOT / _MARKER).is_file():
        return REPO_ROOT
    here = (cwd or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / _MARKER).is_file():
            return d
    return REPO_ROOT  # whatever needs a file there says which one is missing

ENV_CACHE = "ANNOTATE_CACHE_DIR"
ENV_CONFIG = "ANNOTATE_CONFIG"
ENV_URL_PREFIX = "ANNOTATE_URL_"  # ANNOTATE_URL_FLASHINFER, ANNOTATE_URL_FLASH_ATTENTION, ANNOTATE_URL_CUTLASS
ENV_PIP_ARGS = "ANNOTATE_PIP_ARGS"  # extra `pip download` arguments (a mirror, --find-links, --no-index)
ENV_GIT_TIMEOUT = "ANNOTATE_GIT_TIMEOUT"  # seconds to wait for a git remote to answer before giving up on it
ENV_MAX_JOBS = "MAX_JOBS"  # parallel compiles of a harness build (torch's cpp_extension reads it too)


def _platform_dir(kind: str, env: dict[str, str]) -> Path:
    # platformdirs knows every OS; the GPU machines lack it, and there XDG's rule is right.
    try:
        import platformdirs
    except ImportError:
        xdg = {"cache": ("XDG_CACHE_HOME", "~/.cache"), "config": ("XDG_CONFIG_HOME", "~/.config")}[kind]
        return Path(env.get(xdg[0]) or xdg[1]).expanduser() / "annotate"
    fn = platformdirs.user_cache_dir if kind == "cache" else platformdirs.user_config_dir
    return Path(fn("annotate"))


def default_cache_dir(env: dict[str, str] | None = None) -> Path:
    return _platform_dir("cache", dict(os.environ if env is None else env))


def url_env_var(name: str) -> str:
    """The environment variable that overrides the clone URL of upstream/submodule `name`."""
    return ENV_URL_PREFIX + name.upper().replace("-", "_").replace(".", "_")


def default_config_file(env: dict[str, str] | None = None) -> Path:
    return _platform_dir("config", dict(os.environ if env is None else env)) / "config.toml"


@dataclass(frozen=True)
class Config:
    cache_dir: Path
    repo_root: Path = REPO_ROOT
    # name -> URL, from the config file's [urls] table; the environment wins over it.
    url_overrides: dict[str, str] = field(default_factory=dict)
    environ: dict[str, str] = field(default_factory=dict, repr=False)
    # the config file's [fetch] table (pip_args, git_timeout); the environment wins over it.
    fetch_settings: dict = field(default_factory=dict)

    @classmethod
    def load(cls, environ: dict[str, str] | None = None, cache_dir: Path | None = None,
             repo_root: Path | None = None) -> "Config":
        env = dict(os.environ if environ is None else environ)
        cache = cache_dir or (Path(env[ENV_CACHE]).expanduser() if env.get(ENV_CACHE) else default_cache_dir(env))
        cfg_file = Path(env[ENV_CONFIG]).expanduser() if env.get(ENV_CONFIG) else default_config_file(env)
        urls: dict[str, str] = {}
        fetch: dict = {}
        if cfg_file.is_file():
            from annotate.errors import AnnotateError

            try:
                data = tomllib.loads(cfg_file.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise AnnotateError(f"{cfg_file}: invalid TOML: {exc}") from None
            urls = {str(k): str(v) for k, v in (data.get("urls") or {}).items()}
            fetch = dict(data.get("fetch") or {})
        return cls(cache_dir=cache.resolve(), repo_root=(repo_root or find_repo_root(env)).resolve(),
                   url_overrides=urls, environ=env, fetch_settings=fetch)

    # ---- overrides -------------------------------------------------------------------
    def url_for(self, name: str, default: str) -> tuple[str, str]:
        """(url, where it came from) for an upstream or submodule called `name`."""
        var = url_env_var(name)
        if self.environ.get(var):
            return self.environ[var], f"environment ${var}"
        if name in self.url_overrides:
            return self.url_overrides[name], "config file [urls]"
        return default, "pin file"

    def pip_args(self) -> list[str]:
        """Extra arguments for `pip download` ($ANNOTATE_PIP_ARGS, else [fetch] pip_args)."""
        import shlex

        if self.environ.get(ENV_PIP_ARGS) is not None:
            return shlex.split(self.environ[ENV_PIP_ARGS])
        raw = self.fetch_settings.get("pip_args", [])
        return shlex.split(raw) if isinstance(raw, str) else [str(a) for a in raw]

    def git_timeout(self) -> float:
        """Seconds a git remote gets to answer (DNS + connect) before the git route gives up."""
        raw = self.environ.get(ENV_GIT_TIMEOUT) or self.fetch_settings.get("git_timeout") or 5
        try:
            return float(raw)
        except (TypeError, ValueError):
            from annotate.errors import AnnotateError

            raise AnnotateError(f"git timeout must be a number of seconds, got {raw!r}") from None

    def max_jobs(self) -> int | None:
        """$MAX_JOBS as a positive number of parallel compiles, or None (let the build choose)."""
        raw = self.environ.get(ENV_MAX_JOBS, "").strip()
        if not raw:
            return None
        try:
            jobs = int(raw)
        except ValueError:
            jobs = 0
        if jobs < 1:
            from annotate.errors import AnnotateError

            raise AnnotateError(f"${ENV_MAX_JOBS} must be a positive number of parallel compiles, got {raw!r}")
        return jobs

    # ---- repository paths ---------------------------------------------------------------
    @property
    def upstreams_file(self) -> Path:
        return self.repo_root / "vendor_kernels" / "upstreams.yaml"

    @property
    def locks_dir(self) -> Path:
        return self.repo_root / "vendor_kernels" / "locks"

    def lock_file(self, lock: str) -> Path:
        """A committed lock of git blob ids; `lock` as the pin file names it (relative to vendor_kernels/)."""
        return self.kernels_dir / lock

    @property
    def annotations_dir(self) -> Path:
        return self.repo_root / "annotations"

    @property
    def kernels_dir(self) -> Path:
        return self.repo_root / "vendor_kernels"

    @property
    def schema_file(self) -> Path:
        return self.repo_root / "schema" / "annotation.schema.json"

    # ---- cache paths ----------------------------------------------------------------------
    def checkouts_dir(self) -> Path:
        return self.cache_dir / "checkouts"

    def checkout_dir(self, upstream: str, commit: str) -> Path:
        """The verified tree of one pin. Submodules live inside it at their recorded path."""
        return self.checkouts_dir() / f"{upstream}-{commit[:12]}"

    def fetch_record(self, upstream: str, commit: str) -> Path:
        """JSON record written after a checkout is verified (route, time, missing paths)."""
        return self.checkouts_dir() / f"{upstream}-{commit[:12]}.fetch.json"

    def lock_path(self, name: str) -> Path:
        """Inter-process lock file guarding work on `name` (a checkout, an index, a build)."""
        return self.cache_dir / "locks" / f"{name}.lock"

    def downloads_dir(self) -> Path:
        return self.cache_dir / "downloads"

    def index_dir(self) -> Path:
        return self.cache_dir / "index"

    def builds_dir(self) -> Path:
        return self.cache_dir / "builds"

    def results_dir(self) -> Path:
        return self.cache_dir / "results"

    def site_cache_dir(self) -> Path:
        """The site builder's content-keyed cache (highlighted tokens per file content)."""
        return self.cache_dir / "site"

    def notes_bodies_dir(self) -> Path:
        """Function bodies by fingerprint, stored when a fingerprint is written (stale diffs)."""
        return self.cache_dir / "notes" / "bodies"

    def notes_fixtures_dir(self) -> Path:
        """Test fixtures the notes stage derives (e.g. an older release's headers for drift)."""
        return self.cache_dir / "notes" / "fixtures"

    def build_dir(self, kernel: str, key: str) -> Path:
        """One build of a harness kernel; `key` comes from annotate.harness.staging.build_key."""
        return self.builds_dir() / f"{kernel}-{key[:16]}"

    def result_record(self, kernel: str, stamp: str) -> Path:
        """The JSON record of one `annotate run KERNEL` (stamp: UTC time, sortable)."""
        return self.local_results(kernel) / f"{stamp}.json"

    def committed_results_dir(self) -> Path:
        """Records committed for the site: `<kernel>.json`, and `<device-dir>/<kernel>.json` for
        other devices (e.g. nvidia-h200/)."""
        return self.kernels_dir / "results"

    def committed_result(self, kernel: str, device_dir: str | None = None) -> Path:
        """The record committed to the repository for the site (vendor_kernels/results/)."""
        base = self.committed_results_dir()
        return (base / device_dir if device_dir else base) / f"{kernel}.json"

    def local_results(self, kernel: str) -> Path:
        """The folder of this machine's records of one kernel (`result_record`'s parent)."""
        return self.results_dir() / kernel

    def tmp_dir(self) -> Path:
        """Scratch space on the same file system as the cache, so renames are atomic."""
        return self.cache_dir / "tmp"

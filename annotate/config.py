"""One configuration object, built once by the CLI (or a test) and passed down.

Nothing here touches the disk at import time. Every derived path has exactly one
function that makes it.
"""

from __future__ import annotations

import os
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
ENV_INDEX_JOBS = "ANNOTATE_INDEX_JOBS"  # worker processes for indexing
ENV_MAX_JOBS = "MAX_JOBS"  # parallel compiles of a harness build (torch's cpp_extension reads it too)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a program we start (git, pip): this process's own, plus `extra`.

    Passed through whole, so PATH, HOME, proxies and certificates reach the tool as the user set
    them; settings of our own are read from Config, never from here.
    """
    return {**os.environ, **(extra or {})}


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


# The config file's tables and the type each key must have (validated when the Config is made, so
# a wrong value is one line naming the key before any work, not a traceback half-way through).
_FILE_KEYS: dict[str, dict[str, tuple[type, ...]]] = {
    "urls": {},  # any key: an upstream or submodule name -> a URL (str)
    "fetch": {"pip_args": (str, list), "git_timeout": (int, float), "min_free_mb": (int,)},
}
DEFAULT_GIT_TIMEOUT = 5.0
DEFAULT_MIN_FREE_MB = 300  # free space a fetch wants before it starts


def _setting_error(where: str, message: str):
    from annotate.errors import AnnotateError

    return AnnotateError(f"{where}: {message}")


def _read_config_file(path: Path) -> dict:
    import tomllib

    from annotate.errors import AnnotateError

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AnnotateError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise AnnotateError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
    for table, value in data.items():
        if table not in _FILE_KEYS:
            raise _setting_error(str(path), f"unknown table [{table}] (known: {', '.join(_FILE_KEYS)})")
        if not isinstance(value, dict):
            raise _setting_error(str(path), f"[{table}] must be a table")
        keys = _FILE_KEYS[table]
        for key, v in value.items():
            where = f"{path}: [{table}] {key}"
            if table == "urls":
                if not isinstance(v, str) or not v:
                    raise _setting_error(where, f"must be a URL or a path (a string), got {v!r}")
                continue
            if key not in keys:
                raise _setting_error(str(path), f"unknown key '{key}' in [{table}] (known: {', '.join(keys)})")
            if isinstance(v, bool) or not isinstance(v, keys[key]):
                want = " or ".join({str: "a string", list: "a list of strings", int: "an integer",
                                    float: "a number"}[t] for t in keys[key])
                raise _setting_error(where, f"must be {want}, got {v!r}")
            if isinstance(v, list) and not all(isinstance(a, str) for a in v):
                raise _setting_error(where, f"must be a list of strings, got {v!r}")
            if isinstance(v, (int, float)) and v < 0:
                raise _setting_error(where, f"must not be negative, got {v!r}")
    return data


def _positive_number(raw, where: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise _setting_error(where, f"must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise _setting_error(where, f"must be more than 0 seconds, got {raw!r}")
    return value


@dataclass(frozen=True)
class Config:
    cache_dir: Path
    repo_root: Path = REPO_ROOT
    # name -> URL, from the config file's [urls] table; the environment wins over it.
    url_overrides: dict[str, str] = field(default_factory=dict)
    environ: dict[str, str] = field(default_factory=dict, repr=False)
    # the config file's [fetch] table (pip_args, git_timeout, min_free_mb), validated; the
    # environment wins over it.
    fetch_settings: dict = field(default_factory=dict)

    @classmethod
    def load(cls, environ: dict[str, str] | None = None, cache_dir: Path | None = None,
             repo_root: Path | None = None) -> "Config":
        """The configuration from the environment and the config file, every value checked."""
        env = dict(os.environ if environ is None else environ)
        cache = cache_dir or (Path(env[ENV_CACHE]).expanduser() if env.get(ENV_CACHE) else default_cache_dir(env))
        cfg_file = Path(env[ENV_CONFIG]).expanduser() if env.get(ENV_CONFIG) else default_config_file(env)
        data = _read_config_file(cfg_file) if cfg_file.is_file() else {}
        config = cls(cache_dir=cache.resolve(), repo_root=(repo_root or find_repo_root(env)).resolve(),
                     url_overrides=dict(data.get("urls") or {}), environ=env,
                     fetch_settings=dict(data.get("fetch") or {}))
        config.git_timeout()  # a bad value fails here, before any work
        config.pip_args()
        config.index_jobs()
        return config

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

        raw = self.environ[ENV_PIP_ARGS] if self.environ.get(ENV_PIP_ARGS) is not None \
            else self.fetch_settings.get("pip_args", [])
        if not isinstance(raw, str):
            return [str(a) for a in raw]
        try:
            return shlex.split(raw)
        except ValueError as exc:
            raise _setting_error(ENV_PIP_ARGS if self.environ.get(ENV_PIP_ARGS) is not None
                                 else "[fetch] pip_args", f"cannot split {raw!r}: {exc}") from None

    def git_timeout(self) -> float:
        """Seconds a git remote gets to answer (DNS + connect) before the git route gives up."""
        if self.environ.get(ENV_GIT_TIMEOUT):
            return _positive_number(self.environ[ENV_GIT_TIMEOUT], f"${ENV_GIT_TIMEOUT}")
        return _positive_number(self.fetch_settings.get("git_timeout", DEFAULT_GIT_TIMEOUT), "[fetch] git_timeout")

    def min_free_mb(self) -> int:
        """Free space (MB) a fetch wants in the cache's file system before it starts."""
        return int(self.fetch_settings.get("min_free_mb", DEFAULT_MIN_FREE_MB))

    def index_jobs(self) -> int | None:
        """Worker processes for indexing ($ANNOTATE_INDEX_JOBS); None lets the index decide."""
        raw = self.environ.get(ENV_INDEX_JOBS)
        if not raw:
            return None
        if not raw.isdigit() or int(raw) < 1:
            raise _setting_error(f"${ENV_INDEX_JOBS}", f"must be a whole number of processes, 1 or more, got {raw!r}")
        return int(raw)

    def proxy_for(self, scheme: str) -> str | None:
        """The proxy the environment names for `scheme` (http/https), as git and curl read it."""
        e = self.environ
        return (e.get(f"{scheme}_proxy") or e.get(f"{scheme.upper()}_PROXY") or e.get("all_proxy")
                or e.get("ALL_PROXY") or None)

    def git_env(self) -> dict[str, str]:
        """The environment every git command runs with: never a prompt, a stalled remote abandoned."""
        ssh = self.environ.get("GIT_SSH_COMMAND") or \
            f"ssh -o BatchMode=yes -o ConnectTimeout={int(self.git_timeout())}"
        return child_env({"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
                          "GIT_HTTP_LOW_SPEED_TIME": "30", "GIT_SSH_COMMAND": ssh})

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
            raise _setting_error(f"${ENV_MAX_JOBS}", f"must be a positive number of parallel compiles, got {raw!r}")
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

    def notes_files_dir(self) -> Path:
        """Annotation files and course maps as resolved against an index, keyed by what resolving
        them reads (annotate.notes.cache)."""
        return self.cache_dir / "notes" / "files"

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

"""Finding the CUDA toolchain, without importing torch: nvcc and the toolkit root, the CUDA
library headers the pinned sources include, torch's headers, and the binary tools (cuobjdump,
nvdisasm) that read what nvcc produced.

Every function that looks at the environment takes it as an argument (`Config.environ`), so
nothing here reads or writes os.environ; PATH lookups use that environment's PATH too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from annotate.errors import AnnotateError

# The toolkit's usual home, when neither $CUDA_HOME nor PATH says otherwise.
DEFAULT_CUDA_HOME = Path("/usr/local/cuda")
# What the project's setup installs for the binary tools (pyproject extra `sass`): CUDA 13.0's
# toolkit on the development machines ships neither tool.
BINARY_TOOL_PACKAGES = "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm"


@dataclass(frozen=True)
class Toolchain:
    nvcc: Path
    home: Path | None  # the toolkit root (holding include/cuda_runtime.h), if found

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The environment for a build process: `base` with CUDA_HOME set to this toolkit
        (torch's cpp_extension reads it; a wrapper nvcc on PATH would mislead it otherwise)."""
        out = dict(base)
        if self.home is not None and not out.get("CUDA_HOME"):
            out["CUDA_HOME"] = str(self.home)
        return out


@dataclass(frozen=True)
class BinaryTools:
    cuobjdump: Path
    nvdisasm: Path


def _path(env: Mapping[str, str]) -> str:
    # shutil.which would fall back to os.environ's PATH: the given environment decides alone.
    return env.get("PATH", os.defpath)


def _env_homes(env: Mapping[str, str]) -> list[Path]:
    return [Path(env[v]) for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)]


def find_nvcc(env: Mapping[str, str]) -> Path | None:
    for home in _env_homes(env):
        if (home / "bin" / "nvcc").is_file():
            return home / "bin" / "nvcc"
    found = shutil.which("nvcc", path=_path(env))
    if found:
        return Path(found).resolve()
    cand = DEFAULT_CUDA_HOME / "bin" / "nvcc"
    return cand if cand.is_file() else None


def cuda_home(nvcc: Path | None, env: Mapping[str, str]) -> Path | None:
    """The toolkit root (holding include/cuda_runtime.h). nvcc on PATH may be a wrapper outside
    it (e.g. /usr/local/bin/nvcc), so look at $CUDA_HOME, nvcc's parent and /usr/local/cuda."""
    cands = _env_homes(env)
    if nvcc is not None:
        cands.append(nvcc.parent.parent)
    cands.append(DEFAULT_CUDA_HOME)
    return next((c for c in cands if (c / "include" / "cuda_runtime.h").is_file()), None)


def find_toolchain(env: Mapping[str, str]) -> Toolchain:
    nvcc = find_nvcc(env)
    if nvcc is None:
        raise AnnotateError("nvcc not found (looked at $CUDA_HOME/bin, PATH, /usr/local/cuda/bin)",
                            hint="install the CUDA toolkit or set CUDA_HOME")
    return Toolchain(nvcc=nvcc, home=cuda_home(nvcc, env))


def nvcc_version(nvcc: Path) -> str:
    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return m.group(2) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def _nvidia_pip_dirs(sub: str) -> list[Path]:
    """`sub` folders (include, bin) of pip's NVIDIA packages (nvidia-cublas, which torch
    installs; nvidia-cuda-cuobjdump ...): <site-packages>/nvidia/<package>/<sub>."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [d for root in spec.submodule_search_locations for d in sorted(Path(root).glob(f"*/{sub}"))]


def system_header_dirs(headers: tuple[str, ...], toolchain: Toolchain) -> list[Path]:
    """Directories to add so that each CUDA library header in `headers` is found.

    The toolkit's include/ is searched first (nvcc finds it by itself); otherwise pip's NVIDIA
    packages (nvidia-cublas ships cublasLt.h), which a CUDA build of torch pulls in.
    """
    toolkit = toolchain.home / "include" if toolchain.home else None
    extra: list[Path] = []
    for header in headers:
        if toolkit and (toolkit / header).is_file():
            continue
        hit = next((d for d in _nvidia_pip_dirs("include") if (d / header).is_file()), None)
        if hit is None:
            raise AnnotateError(
                f"the pinned sources include <{header}>, found neither in the CUDA toolkit "
                f"({toolkit}) nor in pip's nvidia packages",
                hint="install the CUDA library headers, e.g. `pip install nvidia-cublas` for cublasLt.h")
        if hit not in extra:
            extra.append(hit)
    return extra


def torch_include_dirs(require_cuda: bool) -> list[Path]:
    """torch's header folders, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise AnnotateError("this launcher includes torch's CUDA headers, and torch is not installed",
                            hint="pip install a CUDA build of torch (e.g. torch==2.14.1)")
    inc = Path(list(spec.submodule_search_locations)[0]) / "include"
    if require_cuda and not (inc / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").is_file():
        raise AnnotateError(
            f"torch at {inc.parent} has no CUDA headers (c10/cuda/impl/cuda_cmake_macros.h is missing: "
            "a CPU build)",
            hint="pip install a CUDA build of torch for its headers, e.g. torch==2.14.1")
    return [inc, inc / "torch" / "csrc" / "api" / "include"]


def torch_version_without_import() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def find_binary_tool(name: str, toolchain: Toolchain | None, env: Mapping[str, str]) -> Path | None:
    """cuobjdump / nvdisasm: the toolkit's bin/ when it ships them, else pip's wheels
    (<site-packages>/nvidia/cu13/bin), else PATH."""
    cands = [toolchain.home / "bin" / name] if toolchain and toolchain.home else []
    cands += [d / name for d in _nvidia_pip_dirs("bin")]
    found = next((c for c in cands if c.is_file()), None)
    if found is None:
        which = shutil.which(name, path=_path(env))
        found = Path(which) if which else None
    return found


def find_binary_tools(toolchain: Toolchain | None, env: Mapping[str, str]) -> BinaryTools:
    found = {n: find_binary_tool(n, toolchain, env) for n in ("cuobjdump", "nvdisasm")}
    missing = [n for n, p in found.items() if p is None]
    if missing:
        raise AnnotateError(
            f"{' and '.join(missing)} not found (looked in the CUDA toolkit's bin/, pip's nvidia "
            "packages and PATH)",
            hint=f"pip install {BINARY_TOOL_PACKAGES} (the project's `make test` installs them)")
    return BinaryTools(cuobjdump=found["cuobjdump"], nvdisasm=found["nvdisasm"])

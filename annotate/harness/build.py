"""Compiling a harness: JIT builds through torch.utils.cpp_extension, and nvcc-only compiles.

Two routes share the same flags and the same staged sources:
- `ensure_built` (GPU machines): torch.utils.cpp_extension.load with ninja, into
  config.build_dir(kernel, key). The key (`build_key`, the ONE function that makes it) hashes
  the pin commits, the harness sources, the flags, the target arch and the torch/CUDA versions,
  so a change of any of them builds afresh and nothing else does. A file lock plus a re-check
  lets concurrent runs share one build; a hit imports the built .so directly (no ninja run).
- `compile_only` (any machine with nvcc): nvcc -c on each launcher .cu with -Xptxas -v, parsed
  into registers / shared memory / stack / spills per kernel. No torch needed unless the
  launcher itself includes torch's CUDA headers (Flash-Attention 2's flash.h does).

torch is imported lazily, inside the functions that need it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from annotate.config import Config
from annotate.errors import AnnotateError
from annotate.harness.spec import KernelSpec
from annotate.atomic import write_atomic

# torch.utils.cpp_extension defines these; FlashInfer's vec_dtypes.cuh needs half<->float
# conversions and operators, so undo them (as FlashInfer's own JIT does).
UNDEF_HALF_FLAGS = (
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_HALF_CONVERSIONS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-U__CUDA_NO_HALF2_OPERATORS__",
)
BASE_NVCC_FLAGS = ("-O3", "--expt-relaxed-constexpr", "-DNDEBUG")
STAMP_FILE = "annotate-build.json"
INSTANTIATION_HEADER = "instantiation.h"
# Bump when the staging/flag logic here changes in a way the inputs below don't capture.
BUILD_LOGIC_VERSION = "1"


# ---------------------------------------------------------------------------------------------
# Toolchain discovery (no torch import)
# ---------------------------------------------------------------------------------------------
def find_nvcc() -> Path | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            cand = Path(os.environ[var]) / "bin" / "nvcc"
            if cand.is_file():
                return cand
    found = shutil.which("nvcc")
    if found:
        return Path(found).resolve()
    cand = Path("/usr/local/cuda/bin/nvcc")
    return cand if cand.is_file() else None


def require_nvcc() -> Path:
    nvcc = find_nvcc()
    if nvcc is None:
        raise AnnotateError("nvcc not found (looked at $CUDA_HOME/bin, PATH, /usr/local/cuda/bin)",
                            hint="install the CUDA toolkit or set CUDA_HOME")
    return nvcc


def cuda_home(nvcc: Path | None) -> Path | None:
    """The toolkit root (holding include/cuda_runtime.h). nvcc on PATH may be a wrapper outside
    it (e.g. /usr/local/bin/nvcc), so look at $CUDA_HOME, nvcc's parent and /usr/local/cuda."""
    cands = [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    if nvcc is not None:
        cands.append(nvcc.parent.parent)
    cands.append(Path("/usr/local/cuda"))
    return next((c for c in cands if (c / "include" / "cuda_runtime.h").is_file()), None)


def nvcc_version(nvcc: Path) -> str:
    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return m.group(2) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def _nvidia_pip_include_dirs() -> list[Path]:
    """include/ folders of pip's NVIDIA packages (nvidia-cublas etc.), which torch installs."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    dirs = []
    for root in spec.submodule_search_locations:
        for inc in sorted(Path(root).glob("*/include")):
            dirs.append(inc)
    return dirs


def system_header_dirs(headers: tuple[str, ...], nvcc: Path | None) -> list[Path]:
    """Directories to add so that each CUDA library header in `headers` is found.

    The toolkit's include/ is searched first (nvcc finds it by itself); otherwise pip's NVIDIA
    packages (nvidia-cublas ships cublasLt.h), which a CUDA build of torch pulls in.
    """
    home = cuda_home(nvcc)
    toolkit = home / "include" if home else None
    extra: list[Path] = []
    for header in headers:
        if toolkit and (toolkit / header).is_file():
            continue
        hit = next((d for d in _nvidia_pip_include_dirs() if (d / header).is_file()), None)
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
    import importlib.util

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
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------
# Flags, key, staging
# ---------------------------------------------------------------------------------------------
def gencode_flags(arch: str) -> list[str]:
    """arch like '90', '90a', '80'."""
    return [f"-gencode=arch=compute_{arch},code=sm_{arch}"]


def include_dirs(config: Config, spec: KernelSpec) -> list[Path]:
    """Upstream include folders for this spec, inside the fetched checkouts."""
    from annotate.upstreams import checkout_root, get_upstream

    dirs = []
    for inc in spec.includes:
        root = checkout_root(config, get_upstream(config, inc.upstream))
        path = root / inc.path
        if not path.is_dir():
            raise AnnotateError(
                f"{spec.name}: include folder {path} is missing",
                hint=f"run `annotate fetch {inc.upstream}` (the harness compiles the pinned sources "
                     "from the cache)")
        dirs.append(path)
    return dirs


def nvcc_flags(spec: KernelSpec, arch: str) -> list[str]:
    """Every flag that affects the generated code, in a stable order (include paths excluded:
    they are locations, and the key covers their content through the pin commits)."""
    flags = [*BASE_NVCC_FLAGS, f"-std={spec.std}", *UNDEF_HALF_FLAGS, *gencode_flags(arch)]
    for k, v in sorted(spec.defines.items()):
        flags.append(f"-D{k}" if v == "" else f"-D{k}={v}")
    flags.extend(spec.nvcc_flags)
    return flags


def instantiation_header(spec: KernelSpec) -> str:
    lines = [
        "// Generated by annotate.harness.build from spec.yaml `instantiate:`; do not edit.",
        f"// Kernel harness: {spec.name}",
        "#pragma once",
    ]
    for k, v in spec.instantiate.items():
        lines.append(f"#define ANNOTATE_{k} {v}")
    return "\n".join(lines) + "\n"


def staged_files(spec: KernelSpec) -> dict[str, str]:
    """name -> text of every file placed in a build's src/ folder (sources, headers, common
    headers, generated instantiation.h)."""
    files = {p.name: p.read_text(encoding="utf-8") for p in spec.source_files()}
    files[INSTANTIATION_HEADER] = instantiation_header(spec)
    return files


def build_key(*, pins: dict[str, str], files: dict[str, str], flags: list[str], arch: str,
              torch_version: str, cuda_version: str, route: str = "torch") -> str:
    """The ONE function that makes a build's cache key (hex sha256).

    Inputs: the pin commits of every upstream the build reads, the harness files (name and
    text), the compiler flags, the target arch, the torch and CUDA versions, and the route
    (torch extension vs nvcc-only object). Any change of any input changes the key.
    """
    h = hashlib.sha256()

    def put(tag: str, value: str) -> None:
        data = value.encode("utf-8")
        h.update(tag.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)

    put("logic", BUILD_LOGIC_VERSION)
    put("route", route)
    for name in sorted(pins):
        put("pin:" + name, pins[name])
    for name in sorted(files):
        put("file:" + name, files[name])
    for f in flags:
        put("flag", f)
    put("arch", arch)
    put("torch", torch_version)
    put("cuda", cuda_version)
    return h.hexdigest()


def spec_pins(config: Config, spec: KernelSpec) -> dict[str, str]:
    from annotate.upstreams import load_upstreams

    ups = load_upstreams(config)
    names = {spec.upstream, *(i.upstream for i in spec.includes)}
    pins = {}
    for n in sorted(names):
        if n not in ups:
            raise AnnotateError(f"{spec.spec_file}: unknown upstream '{n}'",
                                hint="upstreams: " + ", ".join(ups))
        up = ups[n]
        pins[n] = up.commit
        for sub in up.submodules:
            pins[f"{n}/{sub.name}"] = sub.commit
    return pins


def write_if_different(path: Path, text: str) -> bool:
    """Rewrite only on change, so ninja's timestamps stay meaningful."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    write_atomic(path, text)
    return True


def stage_sources(spec: KernelSpec, src_dir: Path) -> dict[str, Path]:
    out = {}
    for name, text in staged_files(spec).items():
        write_if_different(src_dir / name, text)
        out[name] = src_dir / name
    return out


# ---------------------------------------------------------------------------------------------
# Compile errors
# ---------------------------------------------------------------------------------------------
_ERROR_RE = re.compile(r"(error|Error|fatal)[: ]")
_SUMMARY_RE = re.compile(r"\d+ errors? detected in the compilation")


def first_errors(log: str, limit: int = 8) -> list[str]:
    """nvcc's / the host compiler's first error lines, each with the line after it (the code)."""
    lines = log.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if _ERROR_RE.search(line) and not line.startswith(("FAILED:", "ninja: build stopped")) \
                and "Error building extension" not in line and not _SUMMARY_RE.search(line):
            text = line.strip()
            if i + 1 < len(lines) and lines[i + 1].strip() and not _ERROR_RE.search(lines[i + 1]):
                text += "\n      " + lines[i + 1].strip()
            if text not in out:
                out.append(text)
            if len(out) >= limit:
                break
    return out


def compile_error(spec: KernelSpec, log: str, generated: Path, log_file: Path | None) -> AnnotateError:
    errs = first_errors(log) or [ln for ln in log.strip().splitlines()[-8:]]
    body = "\n    ".join(errs)
    hint = f"generated sources: {generated}"
    if log_file:
        hint += f"; full log: {log_file}"
    return AnnotateError(f"compiling {spec.name} failed:\n    {body}", hint=hint)


# ---------------------------------------------------------------------------------------------
# Route 1: JIT build through torch.utils.cpp_extension (GPU machines)
# ---------------------------------------------------------------------------------------------
@dataclass
class BuildInfo:
    name: str  # the Python module name (TORCH_EXTENSION_NAME)
    key: str
    directory: str
    cached: bool
    compile_s: float | None  # wall time of the compile that made it (from the stamp on a hit)
    load_s: float  # this process: from "have a key" to "module imported"
    arch: str
    flags: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def module_name(spec: KernelSpec, key: str) -> str:
    return f"annotate_{spec.name}_{key[:12]}"


def _load_so(name: str, so_path: Path):
    import importlib.machinery
    import importlib.util

    import torch  # noqa: F401  (the .so links against libtorch: load it first)

    loader = importlib.machinery.ExtensionFileLoader(name, str(so_path))
    mspec = importlib.util.spec_from_file_location(name, str(so_path), loader=loader)
    module = importlib.util.module_from_spec(mspec)
    loader.exec_module(module)
    return module


def ensure_built(config: Config, spec: KernelSpec, arch: str, verbose: bool = False):
    """(module, BuildInfo): build on a miss, import the existing .so on a hit."""
    import torch

    t0 = time.perf_counter()
    nvcc = require_nvcc()
    flags = nvcc_flags(spec, arch)
    files = staged_files(spec)
    key = build_key(pins=spec_pins(config, spec), files=files, flags=flags, arch=arch,
                    torch_version=torch.__version__, cuda_version=str(torch.version.cuda),
                    route="torch")
    name = module_name(spec, key)
    bdir = config.build_dir(spec.name, key)
    stamp = bdir / STAMP_FILE

    def hit():
        if not stamp.is_file():
            return None
        try:
            data = json.loads(stamp.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        so = bdir / data.get("so", "")
        if data.get("key") != key or not so.is_file():
            return None
        return data, so

    found = hit()
    if found is None:
        from filelock import FileLock

        lock = config.lock_path(f"build-{bdir.name}")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(lock)):
            found = hit()  # another process may have built it while we waited
            if found is None:
                compile_s = _build_with_torch(config, spec, arch, flags, name, bdir, nvcc, verbose)
                so = bdir / f"{name}.so"
                data = {"key": key, "so": so.name, "module": name, "kernel": spec.name,
                        "compile_s": round(compile_s, 2), "arch": arch, "flags": flags,
                        "torch": torch.__version__, "cuda": torch.version.cuda,
                        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                write_if_different(stamp, json.dumps(data, indent=2) + "\n")
                module = _load_so(name, so)
                return module, BuildInfo(name, key, str(bdir), False, compile_s,
                                         time.perf_counter() - t0, arch, flags)
    data, so = found
    module = _load_so(name, so)
    return module, BuildInfo(name, key, str(bdir), True, data.get("compile_s"),
                             time.perf_counter() - t0, arch, flags)


def _build_with_torch(config, spec, arch, flags, name, bdir, nvcc, verbose) -> float:
    import io
    import contextlib

    # cpp_extension reads CUDA_HOME when it is first imported: set it before that.
    home = cuda_home(nvcc)
    if home is not None:
        os.environ.setdefault("CUDA_HOME", str(home))
    from torch.utils import cpp_extension

    src_dir = bdir / "src"
    staged = stage_sources(spec, src_dir)
    sources = [str(staged[Path(s).name]) for s in spec.sources] + [str(staged[Path(spec.binding).name])]
    incs = [str(src_dir)] + [str(p) for p in include_dirs(config, spec)]
    incs += [str(p) for p in system_header_dirs(spec.system_headers, nvcc)]
    log_file = bdir / "build.log"
    t0 = time.perf_counter()
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            cpp_extension.load(
                name=name, sources=sources, extra_include_paths=incs,
                extra_cflags=["-O3", "-DNDEBUG"], extra_cuda_cflags=flags,
                build_directory=str(bdir), verbose=verbose, with_cuda=True,
                is_python_module=True)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        log = buf.getvalue() + "\n" + str(exc)
        write_if_different(log_file, log)
        raise compile_error(spec, log, src_dir, log_file) from None
    finally:
        if verbose:
            sys.stderr.write(buf.getvalue())
    write_if_different(log_file, buf.getvalue())
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------------------------
# Route 2: nvcc only (no GPU, no torch unless the launcher includes its CUDA headers)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelResources:
    source: str
    mangled: str
    name: str  # demangled
    arch: str
    registers: int | None
    barriers: int | None
    smem_static: int  # bytes of static shared memory (dynamic shared memory is set at launch)
    cmem: int | None
    stack: int | None
    spill_stores: int | None
    spill_loads: int | None

    def short_name(self, width: int = 110) -> str:
        """The demangled name without `void` and the parameter list (the template arguments
        are what tell the instantiations apart)."""
        n = self.name
        if n.startswith("void "):
            n = n[5:]
        if n.endswith(")"):
            depth = 0
            for i in range(len(n) - 1, -1, -1):
                depth += {")": 1, "(": -1}.get(n[i], 0)
                if depth == 0:
                    n = n[:i]
                    break
        if len(n) <= width:
            return n
        # Keep both ends: the kernel's name and its last template arguments (often the flags
        # that tell instantiations apart, e.g. FA2's Is_even_MN / Is_even_K).
        head = width * 3 // 5
        return n[:head] + "…" + n[len(n) - (width - head - 1):]


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(.*)")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def parse_ptxas(log: str, source: str = "") -> list[KernelResources]:
    """Per entry (__global__) function: registers, shared memory, stack, spills from `-Xptxas -v`."""
    entries: dict[str, dict] = {}
    order: list[str] = []
    current_entry = None
    props_for = None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            current_entry = m.group(1)
            if current_entry not in entries:
                entries[current_entry] = {"arch": m.group(2)}
                order.append(current_entry)
            props_for = None
            continue
        m = _PROPS.search(line)
        if m:
            props_for = m.group(1)
            continue
        m = _STACK.search(line)
        if m and props_for in entries:
            entries[props_for].update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                                      spill_loads=int(m.group(3)))
            continue
        m = _USED.search(line)
        if m and current_entry is not None:
            rest = m.group(3) or ""
            sm = _SMEM.search(rest)
            cm = _CMEM.search(rest)
            entries[current_entry].update(
                registers=int(m.group(1)),
                barriers=int(m.group(2)) if m.group(2) else 0,
                smem_static=int(sm.group(1)) if sm else 0,
                cmem=int(cm.group(1)) if cm else None)
    names = demangle(order)
    out = []
    for mangled in order:
        e = entries[mangled]
        out.append(KernelResources(
            source=source, mangled=mangled, name=names.get(mangled, mangled), arch=e.get("arch", ""),
            registers=e.get("registers"), barriers=e.get("barriers"), smem_static=e.get("smem_static", 0),
            cmem=e.get("cmem"), stack=e.get("stack"), spill_stores=e.get("spill_stores"),
            spill_loads=e.get("spill_loads")))
    return out


def demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not names or not tool:
        return {n: n for n in names}
    try:
        res = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30)
        out = res.stdout.splitlines()
        if len(out) == len(names):
            return dict(zip(names, out))
    except (OSError, subprocess.SubprocessError):
        pass
    return {n: n for n in names}


@dataclass
class CompileOnlyResult:
    kernel: str
    arch: str
    nvcc: str
    seconds: float
    sources: dict  # source name -> seconds
    kernels: list  # list[KernelResources]
    directory: str


def compile_only(config: Config, spec: KernelSpec, arch: str = "90", jobs: int | None = None,
                 keep: bool = True) -> CompileOnlyResult:
    """Compile each launcher .cu with nvcc -c -Xptxas -v; return the per-kernel resources."""
    nvcc = require_nvcc()
    flags = nvcc_flags(spec, arch)
    files = staged_files(spec)
    cuda = nvcc_version(nvcc)
    tv = torch_version_without_import() or "none"
    key = build_key(pins=spec_pins(config, spec), files=files, flags=flags, arch=arch,
                    torch_version=tv if spec.torch_headers else "n/a", cuda_version=cuda,
                    route="nvcc")
    bdir = config.build_dir(spec.name, key)
    src_dir = bdir / "src"
    staged = stage_sources(spec, src_dir)
    incs = [src_dir, *include_dirs(config, spec)]
    sys_incs = system_header_dirs(spec.system_headers, nvcc)
    if spec.torch_headers:
        sys_incs += torch_include_dirs(require_cuda=True)
    cmd_base = [str(nvcc), "-c", *flags, "-Xptxas", "-v"]
    cmd_base += [f"-I{p}" for p in incs] + [x for p in sys_incs for x in ("-isystem", str(p))]

    def one(src: str):
        path = staged[Path(src).name]
        obj = bdir / (Path(src).stem + ".o")
        t0 = time.perf_counter()
        res = subprocess.run([*cmd_base, str(path), "-o", str(obj)], capture_output=True, text=True)
        dt = time.perf_counter() - t0
        log = res.stdout + res.stderr
        write_if_different(bdir / (Path(src).stem + ".ptxas.log"), log)
        return src, res.returncode, log, dt, path

    t0 = time.perf_counter()
    jobs = jobs or int(os.environ.get("MAX_JOBS", 0) or 0) or min(len(spec.sources), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, spec.sources))
    kernels: list[KernelResources] = []
    times = {}
    for src, rc, log, dt, path in results:
        if rc != 0:
            raise compile_error(spec, log, path, bdir / (Path(src).stem + ".ptxas.log"))
        kernels.extend(parse_ptxas(log, source=src))
        times[src] = round(dt, 2)
    return CompileOnlyResult(kernel=spec.name, arch=arch, nvcc=cuda, seconds=time.perf_counter() - t0,
                             sources=times, kernels=kernels, directory=str(bdir))

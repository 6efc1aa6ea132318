"""The compiler as the judge of what the extraction may leave out.

Two questions, both asked of nvcc with the harness's own flags:
- **liveness** (`live_pieces`): which pieces survive preprocessing in any pass nvcc makes (the
  host pass and one device pass per target). kernel.cu is written with a `#pragma` marker
  before every piece and run through exactly the preprocessor commands nvcc would run
  (read from `nvcc --dryrun`); a piece no pass keeps (`#ifdef FLASHATTENTION_DISABLE_ALIBI`'s
  other branch, `#if defined(ENABLE_BF16)` when nothing defines it) goes without a compile.
- **sameness** (`PtxOracle`): does a candidate kernel.cu still compile, and to the same device
  code? The device pass alone, to PTX, with cicc at -O0 (about 3x faster than -O3: the front
  end, which picks every overload and specialisation, is the same; what differs is
  optimisation, which cannot tell two identical inputs apart). Same PTX (internal names
  normalised) implies same SASS: ptxas is deterministic. The final proof is still the SASS
  of the full build (annotate.extract.api.verify).

All harness sources go into one oracle translation unit (each `#include`d), so a test is one
front-end run per target rather than one per source. Sources that cannot share one (each
defines FlashInfer's JIT `Params` struct, or instantiates what another declares `extern`) are
compiled one by one: the pinned harness decides (`PtxOracle.choose_level`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from annotate.errors import AnnotateError

MARKER = "#pragma annotate_piece "
_MARKER_RE = re.compile(r"^\s*#\s*pragma\s+annotate_piece\s+(\d+)", re.M)
# Internal-linkage names embed a hash of the translation unit's path
# (_ZN42_INTERNAL_33a620dd_11_launcher_cu_3eb23359...): two folders must compare equal
# (annotate.harness.sassdiff.normalise_internal).
ORACLE_TU = "annotate_oracle.cu"
TIMEOUT = "timed out"
DIFFERENT = "different PTX"


def oracle_unit(sources: Sequence[str]) -> str:
    return "".join(f'#include "{s}"\n' for s in sources)


def normalise_ptx(text: str) -> str:
    from annotate.harness.sassdiff import normalise_internal

    lines = [ln for ln in text.splitlines() if not ln.startswith("//")]
    return normalise_internal("\n".join(lines))


# Labels and frames are numbered by the function's position in the module; a kernel left out
# before it renumbers them (`__local_depot1` -> `__local_depot0`, `$L__BB1_4` -> `$L__BB0_4`).
_FUNC_INDEX_RE = re.compile(r"(__local_depot|\$L__BB)\d+")
_PTX_FUNC = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
_PTX_NAME = re.compile(r"([\w$]+)\s*(?:\[[^\]]*\])*\s*(?:=|;)")


UNIT_MARK = "// annotate-unit "  # starts each unit's module when a target's PTX is several units'


def ptx_blocks(text: str) -> dict[str, str]:
    """A module's top-level statements by name: each function (`.entry k` / `.func f`, with its
    body), prototype and global variable. Two builds can then be compared function by function:
    a kernel the pinned build emits and the harness never reaches (a non-template `__global__`
    in a header) is left out of the extraction, not a difference in what runs. Several units'
    modules (each after a UNIT_MARK line) are one dictionary, names prefixed `unit/`."""
    blocks: dict[str, str] = {}
    cur: list[str] = []
    depth = 0
    unit = ""
    for line in text.splitlines():
        s = line.strip()
        if not cur and s.startswith(UNIT_MARK):
            unit = s[len(UNIT_MARK):].strip() + "/"
            continue
        if not cur and (not s or s.startswith(("//", ".version", ".target", ".address_size"))):
            continue
        cur.append(line)
        depth += line.count("{") - line.count("}")
        body = any("{" in c for c in cur)
        if depth == 0 and ((body and "}" in line) or (not body and s.endswith(";"))):
            stmt = "\n".join(cur)
            m = _PTX_FUNC.search(stmt) or _PTX_NAME.search(stmt)
            key = (m.group(2) if m and m.re is _PTX_FUNC else m.group(1)) if m else stmt
            kind = "entry:" if m is not None and m.re is _PTX_FUNC and m.group(1) == "entry" else ""
            if "{" not in stmt and m is not None and m.re is _PTX_FUNC:
                kind = "proto:"  # a declaration of a function defined elsewhere in the module
            blocks[kind + unit + key] = _FUNC_INDEX_RE.sub(r"\1", stmt)
            cur = []
    return blocks


def entries(blocks: dict[str, str]) -> set[str]:
    return {k for k in blocks if k.startswith("entry:")}


def ptx_flags(flags: Sequence[str], arch: str, level: str = "O0") -> list[str]:
    """The harness's flags for a device-only PTX compile of `arch` (cicc at -O0, or at the
    build's own level for "O3")."""
    out = [f for f in flags if not f.startswith(("-gencode", "--generate-code"))]
    return [*out, f"-arch=sm_{arch}", *(["-Xcicc", "-O0"] if level == "O0" else [])]


def _run(cmd: list[str], env: Mapping[str, str], timeout: float | None) -> tuple[int, str] | None:
    """(exit status, output) of a command, or None when it ran past `timeout` (then it and
    every process it started are ended: nvcc runs cicc and ptxas as children)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=dict(env), start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    return p.returncode, out


@dataclass
class OracleStats:
    tests: int = 0
    passed: int = 0
    seconds: float = 0.0
    log: list[str] = field(default_factory=list)


@dataclass
class PtxOracle:
    """Compiles a folder's oracle unit to PTX per target and compares with the reference."""

    nvcc: Path
    folder: Path  # holds kernel.cu, the rewritten harness files, instantiation.h, common headers
    flags: dict  # arch -> full flag list (ptx_flags)
    includes: tuple[Path, ...]
    system_includes: tuple[Path, ...]
    env: Mapping[str, str]
    reference: dict = field(default_factory=dict)  # arch -> normalised PTX
    stats: OracleStats = field(default_factory=OracleStats)
    kernels: dict = field(default_factory=dict)  # arch -> the kernels a candidate must emit (None: the reference's)
    units: tuple[str, ...] = (ORACLE_TU,)  # the files compiled per target
    separate: tuple[str, ...] = ()  # the sources, to compile one by one if they cannot share a unit

    def compile(self, kernel_text: str | None, flags: dict | None = None,
                timeout: float | None = None) -> tuple[dict[str, str], str | None]:
        """(arch -> normalised PTX, the first error or None) of kernel.cu = kernel_text (None:
        the folder as it is, e.g. the pinned harness); the error is TIMEOUT when a compile ran
        past `timeout`."""
        if kernel_text is not None:
            (self.folder / "kernel.cu").write_text(kernel_text, encoding="utf-8")
        flags = flags or self.flags
        jobs = [(arch, unit) for arch in flags for unit in self.units]

        def one(job: tuple[str, str]) -> tuple[str, str | None]:
            arch, unit = job
            out = self.folder / f"oracle_{arch}_{Path(unit).stem}.ptx"
            cmd = [str(self.nvcc), "-ptx", *flags[arch], *(f"-I{p}" for p in (self.folder, *self.includes)),
                   *(x for p in self.system_includes for x in ("-isystem", str(p))),
                   str(self.folder / unit), "-o", str(out)]
            res = _run(cmd, self.env, timeout)
            if res is None:
                return "", TIMEOUT
            if res[0] != 0:
                errs = [ln for ln in res[1].splitlines() if "error" in ln]
                return "", (errs[0] if errs else f"nvcc exit {res[0]}")
            return normalise_ptx(out.read_text(encoding="utf-8", errors="replace")), None

        with ThreadPoolExecutor(max_workers=min(len(jobs), max(2, os.cpu_count() or 2))) as pool:
            results = dict(zip(jobs, pool.map(one, jobs)))
        err = next((e for _, e in results.values() if e), None)
        if len(self.units) == 1:
            return {a: results[(a, self.units[0])][0] for a in flags}, err
        return {a: "\n".join(f"{UNIT_MARK}{u}\n{results[(a, u)][0]}" for u in self.units) for a in flags}, err

    def compare(self, ptx: dict[str, str]) -> str | None:
        """None when every function and variable the candidate emits that the reference emits
        too is the same, and it emits the kernels it must; else what differs.

        The candidate may emit more: each source includes the whole kernel.cu, so a library
        header another source pulled in is seen by all, and its objects (libcu++'s
        customisation-point objects, `cuda::std::__cpo::iter_swap`) appear in modules that did
        not have them. Something more that the code uses changes the code that uses it (a
        kernel calling a function it used to inline), and that code is compared."""
        for arch, text in ptx.items():
            ref, got = ptx_blocks(self.reference[arch]), ptx_blocks(text)
            for name, block in got.items():
                if name in ref and ref[name] != block:
                    return f"{DIFFERENT}: {name.split(':')[-1][:120]} (sm_{arch})"
            want = self.kernels.get(arch)
            if want is not None and entries(got) != want:
                missing = sorted(want - entries(got))
                return f"{DIFFERENT}: kernel {(missing or sorted(entries(got) - want))[0][6:][:120]} (sm_{arch})"
        return None

    def expect_kernels_of(self, ptx: dict[str, str]) -> None:
        """From now on a candidate must emit exactly the kernels these modules emit."""
        self.kernels = {a: entries(ptx_blocks(t)) for a, t in ptx.items()}

    def choose_level(self, build_flags: Mapping[str, Sequence[str]], kernel_text: str | None = None) -> str:
        """Compile the reference at the build's level (-O3), then at -O0 given no longer than
        that took; keep the faster for the tests ("O0" or "O3"). -O0 is ~3x faster on
        FlashInfer's kernels and ~2x slower on cute-heavy Flash-Attention (huge unoptimised PTX)."""
        self.flags = {a: ptx_flags(f, a, "O3") for a, f in build_flags.items()}
        t0 = time.perf_counter()
        ptx, err = self.compile(kernel_text)
        if err and self.separate and self.units != self.separate:
            self.stats.log.append(f"the sources cannot share one unit ({err}); compiling them one by one")
            self.units = self.separate
            t0 = time.perf_counter()
            ptx, err = self.compile(kernel_text)
        t3 = time.perf_counter() - t0
        if err:
            raise AnnotateError(f"the oracle's reference does not compile: {err}",
                                hint=f"scratch folder: {self.folder}")
        self.reference = ptx
        flags0 = {a: ptx_flags(f, a, "O0") for a, f in build_flags.items()}
        t0 = time.perf_counter()
        ptx0, err0 = self.compile(kernel_text, flags0, timeout=t3)
        self.stats.log.append(f"reference: -O3 {t3:.1f} s, -O0 " +
                              ("over that" if err0 else f"{time.perf_counter() - t0:.1f} s"))
        if err0:
            return "O3"
        self.flags, self.reference = flags0, ptx0
        return "O0"

    def differs(self, kernel_text: str, label: str = "") -> str | None:
        """None when kernel_text compiles to the reference PTX; else why not: the compiler's
        first error (scratch path left out) or DIFFERENT."""
        t0 = time.perf_counter()
        ptx, err = self.compile(kernel_text)
        why = err.replace(str(self.folder) + "/", "") if err else self.compare(ptx)
        self.stats.tests += 1
        self.stats.passed += why is None
        dt = time.perf_counter() - t0
        self.stats.seconds += dt
        self.stats.log.append(f"{label}: {why or 'same PTX'} ({dt:.1f} s)")
        return why


# ---- liveness ------------------------------------------------------------------------------------

def preprocess_commands(nvcc: Path, flags: Sequence[str], source: Path, includes: Sequence[Path],
                        system_includes: Sequence[Path], env: Mapping[str, str]) -> list[list[str]]:
    """The host compiler's preprocessing commands nvcc would run for `source` (the host pass
    and one per device target), from `nvcc --dryrun`, each writing to stdout."""
    cmd = [str(nvcc), "-c", *flags, *(f"-I{p}" for p in includes),
           *(x for p in system_includes for x in ("-isystem", str(p))), str(source), "-o",
           str(source.with_suffix(".o")), "--dryrun"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(env))
    out = []
    for line in (res.stdout + res.stderr).splitlines():
        if not line.startswith("#$ ") or " -E " not in line:
            continue
        argv = shlex.split(line[3:])
        if "-o" in argv:
            k = argv.index("-o")
            del argv[k:k + 2]
        out.append(argv)
    if not out:
        raise AnnotateError("nvcc --dryrun listed no preprocessing step",
                            hint=(res.stderr or res.stdout).strip().splitlines()[-1:] and
                            (res.stderr or res.stdout).strip().splitlines()[-1] or None)
    return out


def live_pieces(commands: Sequence[Sequence[str]], env: Mapping[str, str], cwd: Path) -> set[int]:
    """Markers left by at least one of the preprocessing commands."""
    def one(argv) -> set[int]:
        res = subprocess.run(list(argv), capture_output=True, text=True, env=dict(env), cwd=str(cwd))
        if res.returncode != 0:
            raise AnnotateError("preprocessing the extraction failed: " +
                                next((ln for ln in res.stderr.splitlines() if "error" in ln), res.stderr[:200]))
        return {int(m.group(1)) for m in _MARKER_RE.finditer(res.stdout)}

    with ThreadPoolExecutor(max_workers=2) as pool:
        sets = list(pool.map(one, commands))
    return set().union(*sets)


def content_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p.encode("utf-8")
        h.update(str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()

"""`annotate extract KERNEL`: the upstream code a harness instantiates, flattened into one file
(kernel.cu) in a standalone folder that runs as it stands, proven faithful by the compiler.

The steps, each a function a test can call:
- `make_plan`: the include closure of the harness (annotate.extract.closure), what it reaches
  by name and by the index's call edges (annotate.extract.reach), the harness files rewritten
  to include kernel.cu;
- `reduce_plan`: what the compiler lets go — pieces no preprocessing pass keeps, then the
  candidates delta debugging drops while the device code stays the same (oracle.py,
  reduce.py); cached by content in the cache's extract/ folder;
- `folder_files`: kernel.cu (provenance and reviewers' summaries above each piece), the
  launcher, binding, reference, spec, common headers and README of the folder;
- `verify`: the folder and the pinned harness compiled with the same flags per target, their
  SASS compared kernel by kernel (annotate.harness.sidebyside.compare_builds).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from annotate.atomic import write_atomic
from annotate.config import Config
from annotate.errors import AnnotateError
from annotate.extract import emit
from annotate.extract.closure import Closure, IncludeDir, build_closure
from annotate.extract.cxx import KEYWORDS, scan
from annotate.extract.oracle import (
    ORACLE_TU, PtxOracle, content_key, live_pieces, oracle_unit, preprocess_commands, ptx_flags,
)
from annotate.extract.reach import CLASS, FUNCTION, Reach, compute_reach, tidy
from annotate.extract.reduce import reduce
from annotate.harness import staging
from annotate.harness.spec import COMMON_DIR, REFERENCE_FILE, SPEC_FILE, KernelSpec, load_spec_dir

# Bump when what a reduction decides changes for the same inputs (cached results then miss).
EXTRACT_LOGIC_VERSION = "5"
DEFAULT_ARCHES = ("90", "80")
README = "README.md"

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# ---- plan ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Origin:
    """The pin the code comes from."""

    name: str  # "flashinfer"
    title: str  # "FlashInfer"
    tag: str  # "v0.6.17"
    commit: str


@dataclass(frozen=True)
class Plan:
    spec: KernelSpec
    upstream: Origin
    closure: Closure
    reach: Reach
    roots: frozenset[str]
    library_includes: tuple[str, ...]  # the spec's includes that stay ("flashinfer:3rdparty/cccl/cub")
    library_dirs: tuple[Path, ...]
    harness: dict  # harness file name -> text rewritten to include kernel.cu
    include_paths: tuple[Path, ...] = ()  # every include folder of the pinned harness, in order
    rendered: tuple[str, ...] = ()  # harness files the pinned build renders from the pin's templates

    @property
    def commit(self) -> str:
        return self.upstream.commit


def include_dirs(config: Config, spec: KernelSpec) -> list[IncludeDir]:
    """The spec's include folders, each marked library (inside a submodule of its upstream:
    cutlass, CCCL) or project (the upstream's own code)."""
    from annotate.upstreams import get_upstream

    out = []
    for inc, path in zip(spec.includes, staging.include_dirs(config, spec)):
        up = get_upstream(config, inc.upstream)
        library = inc.upstream != spec.upstream or any(
            inc.path == s.path or inc.path.startswith(s.path.rstrip("/") + "/") for s in up.submodules)
        out.append(IncludeDir(path, library, f"{inc.upstream}:{inc.path}"))
    return out


def harness_roots(spec: KernelSpec, texts: Iterable[str]) -> set[str]:
    """Every identifier the harness's own code mentions (what the extraction must provide)."""
    roots = set()
    for t in texts:
        roots |= {tok.text for tok in scan(t).tokens if tok.kind == "ident"}
    roots |= {tok.text for tok in scan(staging.instantiation_header(spec)).tokens if tok.kind == "ident"}
    return roots


def make_plan(config: Config, spec: KernelSpec, index=None) -> Plan:
    """The plan of a catalog kernel (or a copy of one), against the pinned checkout. Sources
    the harness's build renders from the pin's templates (the spec's `generate:`, as
    FlashInfer's JIT renders them) are harness files like the others: rendered into a scratch
    folder with the harness's own files, read there, and written into the extracted folder as
    plain files."""
    from annotate.upstreams import checkout_root, get_upstream

    up = get_upstream(config, spec.upstream)
    origin = Origin(up.name, up.title, up.tag, up.commit)
    rendered = staging.rendered_files(config, spec)
    if not rendered:
        return plan_from(spec, origin, checkout_root(config, up), include_dirs(config, spec), index)
    config.tmp_dir().mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"harness-{spec.name}-", dir=config.tmp_dir()))
    try:
        for f in own_files(spec):
            (scratch / Path(f).name).write_text((spec.folder / f).read_text(encoding="utf-8"), encoding="utf-8")
        for name, text in rendered.items():
            (scratch / name).write_text(text, encoding="utf-8")
        return plan_from(spec, origin, checkout_root(config, up), include_dirs(config, spec), index,
                         harness_dir=scratch, rendered=tuple(rendered))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def own_files(spec: KernelSpec) -> list[str]:
    """The harness files in its folder (sources, headers, binding), not those `generate:` renders."""
    generated = {g.output for g in spec.generated}
    return [f for f in (*spec.sources, *spec.headers, spec.binding) if f not in generated]


def plan_from(spec: KernelSpec, origin: Origin, root: Path, dirs: Sequence[IncludeDir], index=None, *,
              harness_dir: Path | None = None, rendered: Sequence[str] = ()) -> Plan:
    """The plan of `spec` whose upstream tree is `root` (a checkout, or a test's tiny tree);
    its harness files are read from `harness_dir` (default: the spec's folder), `rendered`
    naming those its build generates."""
    from annotate.index.parse import macro_table

    harness_dir = harness_dir or spec.folder
    harness_files = [*spec.sources, *spec.headers, *(r for r in rendered if r not in spec.sources)]
    closure = build_closure(spec.upstream, root, harness_dir, harness_files, list(dirs))
    if not closure.headers:
        raise AnnotateError(f"{spec.name}: the harness includes no {spec.upstream} header; nothing to extract")
    lines: dict[str, list[int]] = {}
    for h in closure.harness_includes:
        lines.setdefault(h.file, []).append(h.line)
    harness = {}
    for f in [*harness_files, spec.binding]:
        text = (harness_dir / Path(f).name).read_text(encoding="utf-8")
        harness[Path(f).name] = emit.rewrite_harness_file(text, lines.get(Path(f).name, ()))
    roots = harness_roots(spec, [harness[Path(f).name] for f in harness_files])
    table = macro_table()
    quals = [m for m, q in table.qualifiers.items() if set(q) & {"__device__", "__global__"}]
    reach = compute_reach(closure, roots, index=index, upstream=spec.upstream, definers=table.definers,
                          qualifier_macros=quals)
    return Plan(spec, origin, closure, reach, frozenset(roots),
                tuple(d.label for d in dirs if d.library), tuple(d.path for d in dirs if d.library), harness,
                tuple(d.path for d in dirs), tuple(rendered))


def kernel_text(plan: Plan, keep: Iterable[int], *, summaries=None, markers: bool = False,
                banner: str | None = None) -> str:
    keep = tidy(keep, plan.reach.infos, plan.closure.pieces, plan.reach.namespaces)
    pieces = [p for p in plan.closure.pieces if p.index in keep]
    return emit.render_kernel(pieces, commit=plan.commit, banner=banner or "// kernel.cu (scratch)",
                              summaries=summaries, markers=markers)


def extracted_lines(plan: Plan, keep: Iterable[int]) -> int:
    return sum(plan.closure.pieces[i].last_line - plan.closure.pieces[i].first_line + 1 for i in keep)


# ---- the scratch folder the compiler checks ------------------------------------------------------

class Workspace:
    """A scratch copy of the folder (rewritten harness files, instantiation.h, the common
    headers and the oracle unit) in the cache's tmp/, removed afterwards."""

    def __init__(self, config: Config, plan: Plan):
        self.config = config
        self.plan = plan
        config.tmp_dir().mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=f"extract-{plan.spec.name}-", dir=config.tmp_dir()))
        for name, text in support_files(plan).items():
            (self.dir / name).write_text(text, encoding="utf-8")
        (self.dir / ORACLE_TU).write_text(oracle_unit([Path(s).name for s in plan.spec.sources]), encoding="utf-8")

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class PinnedWorkspace(Workspace):
    """The pinned harness's own files (unmodified launchers), the oracle's reference."""

    def __init__(self, config: Config, plan: Plan):
        self.config, self.plan = config, plan
        config.tmp_dir().mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=f"pinned-{plan.spec.name}-", dir=config.tmp_dir()))
        for name, text in staging.staged_files(plan.spec, config).items():
            (self.dir / name).write_text(text, encoding="utf-8")
        (self.dir / ORACLE_TU).write_text(oracle_unit([Path(s).name for s in plan.spec.sources]), encoding="utf-8")
        self.includes = list(plan.include_paths)


def support_files(plan: Plan) -> dict[str, str]:
    """Every file of the folder except kernel.cu, spec.yaml and the README: the rewritten
    harness files, the generated instantiation.h (the oracle needs it; the folder's build
    generates its own) is left out by the caller that writes the folder."""
    spec = plan.spec
    out = dict(plan.harness)
    common = spec.folder.parent / COMMON_DIR
    if common.is_dir():
        for p in sorted(common.iterdir()):
            if p.is_file():
                out[p.name] = p.read_text(encoding="utf-8")
    out[staging.INSTANTIATION_HEADER] = staging.instantiation_header(spec)
    return out


def _system_includes(config: Config, spec: KernelSpec) -> list[Path]:
    from annotate.harness.toolchain import find_toolchain, system_header_dirs, torch_include_dirs

    tc = find_toolchain(config.environ)
    dirs = system_header_dirs(spec.system_headers, tc)
    if spec.torch_headers:
        dirs += torch_include_dirs(require_cuda=True)
    return dirs


# ---- reduction -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReductionResult:
    static: int  # pieces the name closure keeps
    dead: tuple[int, ...]  # ... that no preprocessing pass keeps
    candidates: int  # pieces the compiler was asked about
    dropped: tuple[int, ...]  # ... and let go
    tests: int
    seconds: float
    cached: bool
    level: str  # cicc's optimisation level the oracle compiled at ("O0" or "O3"); "" when none ran
    log: tuple[str, ...] = ()
    skipped: bool = False  # --no-reduce
    whole: bool = False  # static analysis missed something the pinned build needs: every piece is kept

    def to_json(self) -> dict:
        return {"static": self.static, "dead": len(self.dead), "candidates": self.candidates,
                "dropped": len(self.dropped), "tests": self.tests, "seconds": round(self.seconds, 1),
                "cached": self.cached, "level": self.level, "skipped": self.skipped, "whole": self.whole}


def reduction_cache(config: Config, kernel: str, key: str) -> Path:
    """Where the reduction of `kernel` with inputs `key` is kept (the one function naming it)."""
    return config.cache_dir / "extract" / f"{kernel}-{key[:20]}.json"


def _reduction_key(plan: Plan, full_text: str, arches: Sequence[str], nvcc: str) -> str:
    spec = plan.spec
    parts = [EXTRACT_LOGIC_VERSION, nvcc, ",".join(arches), full_text]
    parts += [f"{n}\0{t}" for n, t in sorted(support_files(plan).items())]
    parts += [" ".join(staging.nvcc_flags(spec, a)) for a in arches]
    parts += [repr(plan.reach.candidates), repr(sorted(plan.reach.likely))]
    return content_key(*parts)


def reduce_plan(config: Config, plan: Plan, arches: Sequence[str], log: Log = _quiet,
                enabled: bool = True) -> ReductionResult:
    from annotate.harness.toolchain import find_toolchain, nvcc_version

    static = set(plan.reach.by_name)
    if not enabled:
        return ReductionResult(len(static), (), 0, (), 0, 0.0, False, "", skipped=True)
    tc = find_toolchain(config.environ)
    nvcc = nvcc_version(tc.nvcc)
    full = kernel_text(plan, static, markers=True)
    key = _reduction_key(plan, full, arches, nvcc)
    path = reduction_cache(config, plan.spec.name, key)
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
        if got.get("key") == key:
            return ReductionResult(len(static), tuple(got["dead"]), int(got["candidates"]), tuple(got["dropped"]),
                                   int(got["tests"]), float(got["seconds"]), True, str(got["level"]),
                                   tuple(got.get("log", ())), whole=bool(got.get("whole")))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    t0 = time.perf_counter()
    sys_incs = _system_includes(config, plan.spec)
    with Workspace(config, plan) as ws:
        # 1. liveness: what no preprocessing pass keeps goes without a compile
        (ws.dir / "kernel.cu").write_text(full, encoding="utf-8")
        # every source on its own, as the build compiles it: a piece is live when any pass of
        # any source keeps it
        cmds = []
        for a in arches:
            for s in plan.spec.sources:
                cmds += preprocess_commands(tc.nvcc, staging.nvcc_flags(plan.spec, a), ws.dir / Path(s).name,
                                            [ws.dir, *plan.library_dirs], sys_incs, tc.env(config.environ))
        unique = list({tuple(c): c for c in cmds}.values())
        live = live_pieces(unique, tc.env(config.environ), ws.dir)
        dead = tuple(sorted(i for i in static if i not in live))
        keep = static - set(dead)
        log(f"{plan.spec.name}: {len(dead)} of {len(static)} pieces are preprocessed away in every pass "
            f"({len(unique)} passes)")
        cands = [u for u in plan.reach.candidates if u[0] in keep]
        # each name's overloads and specialisations side by side (reduce.py)
        first_of: dict[str, int] = {}
        for u in cands:
            for n in sorted(plan.reach.infos[u[0]].declares):
                first_of.setdefault(n, u[0])
        cands.sort(key=lambda u: (min((first_of[n] for n in plan.reach.infos[u[0]].declares), default=u[0]), u))
        if not cands:
            result = ReductionResult(len(static), dead, 0, (), 0, time.perf_counter() - t0, False, "")
            _save(path, key, result)
            return result
        # the reference is the pinned harness itself: what static analysis keeps must already
        # compile to it, or static analysis missed something and the whole closure is kept
        with PinnedWorkspace(config, plan) as pw:
            sources = tuple(Path(s).name for s in plan.spec.sources)
            pinned = PtxOracle(tc.nvcc, pw.dir, {}, tuple(pw.includes), tuple(sys_incs), tc.env(config.environ),
                               separate=sources if len(sources) > 1 else ())
            level = pinned.choose_level({a: staging.nvcc_flags(plan.spec, a) for a in arches})
        oracle = PtxOracle(tc.nvcc, ws.dir, dict(pinned.flags), tuple(plan.library_dirs), tuple(sys_incs),
                           tc.env(config.environ), dict(pinned.reference), pinned.stats, units=pinned.units)
        static_ptx, why = oracle.compile(kernel_text(plan, keep))
        why = why or oracle.compare(static_ptx)
        oracle.stats.log.append(f"what static analysis keeps: {why or 'the pinned build’s code'}")
        if why is None:
            oracle.expect_kernels_of(static_ptx)
        else:
            everything = set(range(len(plan.closure.pieces)))
            if oracle.differs(kernel_text(plan, everything), "the whole closure") is not None:
                raise AnnotateError(f"{plan.spec.name}: the flattened closure does not compile to the pinned "
                                    f"harness's device code ({why})", hint=f"scratch folder: {ws.dir}")
            log(f"{plan.spec.name}: what static analysis keeps differs from the pinned build ({why}); "
                "keeping the whole closure")
            result = ReductionResult(len(static), (), 0, (), oracle.stats.tests, time.perf_counter() - t0,
                                     False, level, tuple(oracle.stats.log), whole=True)
            _save(path, key, result)
            return result
        log(f"{plan.spec.name}: asking the compiler about {len(cands)} candidate pieces "
            f"(device PTX at cicc -{level}, {' and '.join('sm_' + a for a in arches)})")

        def differs(trial: set[int], label: str) -> str | None:
            why = oracle.differs(kernel_text(plan, trial), label)
            log(f"  test {oracle.stats.tests}: drop {label}: {'ok' if why is None else 'needed'}")
            return why

        red = reduce(cands, keep, differs, likely=[u for u in cands if u in plan.reach.likely],
                     blame=lambda why, chunk: blame(plan, why, chunk))
    result = ReductionResult(len(static), dead, sum(len(u) for u in cands), red.dropped, oracle.stats.tests,
                             time.perf_counter() - t0, False, level, tuple(oracle.stats.log))
    _save(path, key, result)
    return result


_QUOTED = re.compile(r'"([^"]*)"')
_LEADING = re.compile(r"error:\s*([A-Za-z_]\w*) is not")


def blame(plan: Plan, why: str, chunk: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The units of a failed chunk that declare a name the compiler's error names
    (`identifier "FLASHINFER_CUDA_CALL" is undefined`, `vec_cast is not a template`)."""
    words = set()
    for q in _QUOTED.findall(why):
        words |= {w for w in re.findall(r"[A-Za-z_]\w*", q) if w not in KEYWORDS}
    m = _LEADING.search(why)
    if m:
        words.add(m.group(1))
    if not words:
        return []
    return [u for u in chunk if plan.reach.infos[u[0]].declares & words]


def _save(path: Path, key: str, r: ReductionResult) -> None:
    data = {"key": key, "dead": list(r.dead), "candidates": r.candidates, "dropped": list(r.dropped),
            "tests": r.tests, "seconds": round(r.seconds, 2), "level": r.level, "log": list(r.log),
            "whole": r.whole}
    write_atomic(path, json.dumps(data, indent=1) + "\n")


# ---- the folder ----------------------------------------------------------------------------------

_CONTINUES = (",", ":", "，", "：")


def one_line(text: str, width: int = 150) -> str:
    """A summary's first paragraph on one line, with the displayed formula that completes it
    ("Computes, for each row `x`,\n\n`out_i = …`") when it is one."""
    paras = [" ".join(p.split()) for p in text.strip().split("\n\n") if p.strip()]
    line = paras[0] if paras else ""
    for p in paras[1:]:
        display = p.startswith(("`", "$")) and "\n" not in p
        if not (line.endswith(_CONTINUES) or display):
            break
        line += " " + p
        if display:
            break
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def summaries_for(plan: Plan, annotations, keep: Iterable[int]) -> dict[int, tuple[str, ...]]:
    """piece index -> the reviewers' one-line summary (English, then Chinese when written) of
    the function it is, or of the annotated members of the class it is."""
    if annotations is None:
        return {}
    keep = set(keep)
    spans = [(p.rel, p.first_line, p.last_line, p.index) for p in plan.closure.pieces if p.index in keep]
    out: dict[int, list[str]] = {}
    for fn in annotations.functions():
        if fn.upstream != plan.spec.upstream or fn.symbol is None or fn.summary is None:
            continue
        s = fn.symbol
        hit = [(hi - lo, i) for rel, lo, hi, i in spans if rel == s.path and lo <= s.start_line and s.end_line <= hi]
        if not hit:
            continue
        i = min(hit)[1]
        kind = plan.reach.infos[i].kind
        if kind == CLASS:
            lines = [f"{s.name}: {one_line(fn.summary.en)}"]
        elif kind == FUNCTION or i not in out:
            lines = [one_line(fn.summary.en)] + ([one_line(fn.summary.zh)] if fn.summary.zh else [])
        else:
            continue
        out.setdefault(i, []).extend(lines)
    return {i: tuple(v[:6]) for i, v in out.items()}


def banner(plan: Plan, keep: set[int], tag: str) -> str:
    spec, cl = plan.spec, plan.closure
    used = sorted({cl.pieces[i].rel for i in keep})
    title = plan.upstream.title
    body = (f"Extracted by `annotate extract {spec.name}` from {title} {tag} ({plan.commit}): "
            f"{extracted_lines(plan, keep):,} of the {cl.lines:,} lines of the {len(cl.headers)} {title} "
            f"headers its launcher includes ({len(used)} of them contribute), in the order the compiler "
            "reads them. Above each piece: the file and lines it was copied from, and the reviewers' "
            "summary where one exists. Library code (" + ", ".join(plan.library_includes or ("none",)) +
            ", the CUDA toolkit, the C++ library) stays an #include. Kernels: " + ", ".join(spec.symbols) + ".")
    lines = [f"// kernel.cu: the {title} code the `{spec.name}` harness instantiates, in one file.", "//"]
    lines += ["// " + ln for ln in textwrap.wrap(body, 96, break_on_hyphens=False)]
    return "\n".join(lines) + "\n"


def spec_text(plan: Plan, kernel_sha: str) -> str:
    import yaml

    spec = plan.spec
    src = (spec.folder / SPEC_FILE).read_text(encoding="utf-8")
    common = spec.folder.parent / COMMON_DIR
    commons = sorted(p.name for p in common.iterdir() if p.is_file()) if common.is_dir() else []
    headers = [*spec.headers, *(r for r in plan.rendered if r not in spec.sources), emit.KERNEL_FILE, *commons]
    top = (f"# Extracted by `annotate extract {spec.name}` from vendor_kernels/{spec.name}/spec.yaml:\n"
           f"# {spec.upstream}'s headers are replaced by {emit.KERNEL_FILE}; library code stays an include.\n"
           + (f"# The files `generate:` rendered from the pin's templates are plain files here: "
              f"{', '.join(plan.rendered)}.\n" if plan.rendered else "") +
           f"# Run it beside the pinned original: annotate run {spec.name} --source <this folder>\n")
    text = emit.rewrite_spec_text(src, includes=list(plan.library_includes), headers=headers, banner=top,
                                  drop=("generate",))
    text += ("extracted:\n"
             f"  from: vendor_kernels/{spec.name}\n"
             f"  upstream: {spec.upstream}\n"
             f"  commit: {plan.commit}\n"
             f"  kernel_sha256: {kernel_sha}\n")
    try:
        raw = yaml.safe_load(text)
        ok = isinstance(raw, dict) and raw.get("includes") == list(plan.library_includes) and \
            raw.get("headers") == headers and "generate" not in raw
    except yaml.YAMLError:
        ok = False
    if not ok:  # a spec laid out in a way the text edit does not know: written afresh
        raw = yaml.safe_load(src)
        raw.pop("generate", None)
        raw.update(includes=list(plan.library_includes), headers=headers,
                   extracted={"from": f"vendor_kernels/{spec.name}", "upstream": spec.upstream,
                              "commit": plan.commit, "kernel_sha256": kernel_sha})
        text = top + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)
    return text


def folder_files(plan: Plan, keep: set[int], annotations=None, readme_context: dict | None = None) -> dict[str, str]:
    import hashlib

    spec = plan.spec
    tag = plan.upstream.tag
    text = kernel_text(plan, keep, summaries=summaries_for(plan, annotations, keep), banner=banner(plan, keep, tag))
    files = {emit.KERNEL_FILE: text}
    sup = support_files(plan)
    sup.pop(staging.INSTANTIATION_HEADER)  # the build generates it from spec.yaml
    files.update(sup)
    files[REFERENCE_FILE] = spec.reference_file.read_text(encoding="utf-8")
    files[SPEC_FILE] = spec_text(plan, hashlib.sha256(text.encode()).hexdigest())
    files[README] = render_readme(plan, keep, **(readme_context or {}))
    return files


def render_readme(plan: Plan, keep: set[int], **extra) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(str(Path(__file__).parent / "templates")),
                      autoescape=False, undefined=StrictUndefined, keep_trailing_newline=True)
    cl = plan.closure
    per_file = []
    for h in cl.headers:
        kept = [plan.closure.pieces[i] for i in sorted(keep) if cl.pieces[i].rel == h.rel]
        per_file.append({"rel": h.rel, "lines": h.lines,
                         "kept": sum(p.last_line - p.first_line + 1 for p in kept)})
    ctx = {"spec": plan.spec, "upstream": plan.upstream, "commit": plan.commit,
           "library": plan.library_includes, "files": per_file, "closure_lines": cl.lines,
           "extracted_lines": extracted_lines(plan, keep), "pieces": len(keep),
           "report": None, **extra}
    return env.get_template("README.md.jinja2").render(**ctx)


# ---- the whole command ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ExtractReport:
    kernel: str
    upstream: str
    commit: str
    folder: str
    files: tuple[str, ...]
    headers: int
    closure_lines: int
    extracted_lines: int
    kernel_lines: int
    pieces: int  # kept
    total_pieces: int
    reduction: ReductionResult
    builds: tuple = ()  # annotate.harness.sidebyside.BuildComparison per target
    unsupported: tuple[tuple[str, str], ...] = ()  # (arch, why) the pinned build does not compile for
    fallback: str | None = None  # why the conservative closure was written instead of the reduced one
    seconds: float = 0.0
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def verified(self) -> bool:
        return bool(self.builds)

    @property
    def identical(self) -> bool | None:
        return all(b.identical for b in self.builds) if self.builds else None

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "upstream": self.upstream, "commit": self.commit, "folder": self.folder,
                "files": list(self.files), "identical": self.identical, "headers": self.headers,
                "closure_lines": self.closure_lines, "extracted_lines": self.extracted_lines,
                "kernel_lines": self.kernel_lines, "pieces": self.pieces, "total_pieces": self.total_pieces,
                "reduction": self.reduction.to_json(), "builds": [b.to_json() for b in self.builds],
                "unsupported": [{"arch": a, "why": w} for a, w in self.unsupported],
                "fallback": self.fallback, "seconds": round(self.seconds, 1), "warnings": list(self.warnings)}


def verify(config: Config, pinned: KernelSpec, folder: Path, arches: Sequence[str],
           log: Log = _quiet) -> tuple[list, list[tuple[str, str]]]:
    """(BuildComparison per supported target, [(target, why)] for the others): the pinned
    harness decides which targets the kernel supports (it compiles for them or not)."""
    from annotate.harness.nvcc import compile_only
    from annotate.harness.sidebyside import compare_builds

    copy = load_spec_dir(folder)
    builds, unsupported = [], []
    for a in arches:
        log(f"{pinned.name}: compiling the pinned harness and the extracted folder for sm_{a}")
        try:
            ref = compile_only(config, pinned, a)
        except AnnotateError as exc:
            if a == arches[0]:
                raise
            unsupported.append((a, exc.message.splitlines()[-1].strip()))
            log(f"{pinned.name}: the pinned harness does not compile for sm_{a}; not compared")
            continue
        builds.append(compare_builds(config, pinned, copy, a, pinned_build=ref))
    return builds, unsupported


def extract(config: Config, spec: KernelSpec, into: Path, *, index=None, annotations=None,
            force: bool = False, do_reduce: bool = True, do_verify: bool = True,
            arches: Sequence[str] = DEFAULT_ARCHES, log: Log = _quiet) -> ExtractReport:
    from annotate.extract.folder import prepare_folder, write_folder

    t0 = time.perf_counter()
    folder = prepare_folder(into, force=force)
    plan = make_plan(config, spec, index)
    log(f"{spec.name}: {len(plan.closure.headers)} {spec.upstream} headers, {plan.closure.lines:,} lines, "
        f"{len(plan.closure.pieces)} pieces; {len(plan.reach.by_name)} reached by name, "
        f"{len(plan.reach.candidates)} for the compiler to decide")
    red = reduce_plan(config, plan, arches, log, enabled=do_reduce)
    if red.cached:
        log(f"{spec.name}: reduction from the cache ({red.tests} tests when it ran, {red.seconds:.0f} s)")
    conservative = set(range(len(plan.closure.pieces))) if red.whole else set(plan.reach.by_name) - set(red.dead)
    keep = conservative - set(red.dropped)
    files = folder_files(plan, keep, annotations)
    written = write_folder(folder, files, {"kernel": spec.name, "upstream": spec.upstream, "commit": plan.commit})
    builds, unsupported, fallback = [], [], None
    if do_verify:
        builds, unsupported = verify(config, spec, folder, arches, log)
        if not all(b.identical for b in builds) and red.dropped:
            fallback = "the reduced copy's SASS differed; the conservative closure was written instead"
            log(f"{spec.name}: {fallback}")
            keep = conservative
            files = folder_files(plan, keep, annotations)
            written = write_folder(folder, files, {"kernel": spec.name, "upstream": spec.upstream,
                                                   "commit": plan.commit})
            builds, unsupported = verify(config, spec, folder, arches, log)
    report = ExtractReport(
        kernel=spec.name, upstream=spec.upstream, commit=plan.commit, folder=str(folder), files=tuple(written),
        headers=len(plan.closure.headers), closure_lines=plan.closure.lines,
        extracted_lines=extracted_lines(plan, keep), kernel_lines=files[emit.KERNEL_FILE].count("\n"),
        pieces=len(keep), total_pieces=len(plan.closure.pieces), reduction=red, builds=tuple(builds),
        unsupported=tuple(unsupported), fallback=fallback, seconds=time.perf_counter() - t0,
        warnings=plan.closure.warnings)
    # the README carries the proof: written again now that it is known
    readme = render_readme(plan, keep, report=report)
    write_folder(folder, {**files, README: readme}, {"kernel": spec.name, "upstream": spec.upstream,
                                                     "commit": plan.commit})
    return report

"""The identity card: does the harness run what upstream's own path runs?

For each catalog kernel, `vendor_kernels/<kernel>/identity.yaml` says how upstream builds the
same kernels: FlashInfer's JIT module (the csrc/*.cu or the files its Python renders from
templates, with the flags of flashinfer/jit/core.py and cpp_ext.py), Flash-Attention's own
instantiation files (csrc/flash_attn/src/flash_fwd_hdim128_fp16_sm80.cu ..., with the flags of
its setup.py). `identity_card` compiles that with nvcc alone, compiles the harness's cubins
(annotate.harness.nvcc.compile_only, the flags of the harness build), and compares every
kernel the spec names with upstream's kernel of the same mangled name, instruction by
instruction (`cuobjdump -sass`, addresses and symbol names normalised). The card is a small
committed record: identical, or which kernels differ and how (first differing instructions,
the flags only one side uses, the template arguments when no kernel of that name exists).
"""

from __future__ import annotations

import ast
import difflib
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import yaml

from annotate.config import Config
from annotate.errors import AnnotateError
from annotate.harness.record import _opt, _Part, read_record_json
from annotate.harness.spec import Generated, Include, KernelSpec, _generated

RECIPE_FILE = "identity.yaml"
CARD_FILE = "identity.json"  # in the upstream build's keyed folder
DIFF_LINES = 12  # differing instructions kept in a card per kernel


# ---- the recipe ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PythonTemplate:
    """A Jinja template kept as a string constant in upstream's Python (FlashInfer's
    flashinfer/jit/activation.py), rendered like a csrc/*.jinja one."""

    file: Include
    name: str  # the constant holding the template
    output: str
    values: dict
    constants: dict  # value name -> constant of the same file whose string is the value


@dataclass(frozen=True)
class Recipe:
    route: str  # in words: which upstream function builds it, with which flags
    sources: tuple[str, ...]  # generated outputs, or UPSTREAM:PATH of pinned files
    generated: tuple[Generated, ...]
    python_templates: tuple[PythonTemplate, ...]
    includes: tuple[Include, ...]  # -I
    system_includes: tuple[str, ...]  # -isystem: UPSTREAM:PATH, or `python`, `tvm_ffi`, `torch`
    flags: tuple[str, ...]  # `{arch}` stands for the upstream arch
    arch: dict  # harness arch -> the arch upstream compiles for on that device
    notes: str = ""


def _include(text: str, where: str) -> Include:
    up, sep, path = str(text).partition(":")
    if not sep or not path:
        raise AnnotateError(f"{where}: expected UPSTREAM:PATH, not {text!r}")
    return Include(up, path.strip("/"))


def parse_recipe(raw, spec: KernelSpec, where: str) -> Recipe:
    if not isinstance(raw, dict):
        raise AnnotateError(f"{where}: expected a mapping")
    for key in ("route", "sources", "flags"):
        if key not in raw:
            raise AnnotateError(f"{where}: missing key '{key}'")
    gen = raw.get("generate")
    generated = spec.generated if gen == "same" else _generated({"generate": gen}, where) if gen else ()
    pys = []
    for i, p in enumerate(raw.get("python_templates") or []):
        if not isinstance(p, dict) or not {"file", "name", "output"} <= set(p):
            raise AnnotateError(f"{where}: python_templates[{i}]: needs file, name and output")
        pys.append(PythonTemplate(_include(p["file"], where), str(p["name"]), str(p["output"]),
                                  {str(k): str(v) for k, v in (p.get("values") or {}).items()},
                                  {str(k): str(v) for k, v in (p.get("constants") or {}).items()}))
    lists = {}
    for key in ("sources", "flags", "includes", "system_includes"):
        val = raw.get(key) or []
        if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
            raise AnnotateError(f"{where}: '{key}' must be a list of strings")
        lists[key] = tuple(val)
    arch = raw.get("arch") or {}
    if not isinstance(arch, dict):
        raise AnnotateError(f"{where}: 'arch' must map the harness arch to upstream's")
    return Recipe(route=" ".join(str(raw["route"]).split()), sources=lists["sources"],
                  generated=generated, python_templates=tuple(pys),
                  includes=tuple(_include(i, where) for i in lists["includes"]),
                  system_includes=lists["system_includes"], flags=lists["flags"],
                  arch={str(k): str(v) for k, v in arch.items()}, notes=" ".join(str(raw.get("notes", "")).split()))


def load_recipe(spec: KernelSpec) -> Recipe:
    path = spec.folder / RECIPE_FILE
    if not path.is_file():
        raise AnnotateError(f"{spec.name}: no {RECIPE_FILE} (how upstream builds these kernels)",
                            hint=f"write {path}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise AnnotateError(f"{path}: invalid YAML: {exc}") from None
    return parse_recipe(raw, spec, str(path))


def python_string_constant(path: Path, name: str) -> str:
    """The string a module-level `NAME = "..."` assigns in a Python file, read without running it."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError) as exc:
        raise AnnotateError(f"{path}: cannot read: {exc}") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    raise AnnotateError(f"{path}: no string constant {name}")


# ---- building upstream's side --------------------------------------------------------------------------
def _root(config: Config, upstream: str) -> Path:
    from annotate.upstreams import checkout_root, get_upstream

    return checkout_root(config, get_upstream(config, upstream))


def _package_include(name: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        hint = {"tvm_ffi": "pip install apache-tvm-ffi (FlashInfer's csrc/*.cu include tvm_ffi_utils.h)"}
        raise AnnotateError(f"upstream's build includes the headers of the Python package {name}, "
                            "which is not installed", hint=hint.get(name, f"pip install {name}"))
    return Path(list(spec.submodule_search_locations)[0]) / "include"


def upstream_files(config: Config, spec: KernelSpec, recipe: Recipe) -> dict[str, str]:
    """name -> text of every file upstream's build generates (rendered as upstream renders them)."""
    import jinja2

    from annotate.harness.staging import rendered_files

    from dataclasses import replace

    files = rendered_files(config, replace(spec, generated=recipe.generated)) if recipe.generated else {}
    for p in recipe.python_templates:
        path = _root(config, p.file.upstream) / p.file.path
        values = dict(p.values)
        values.update({k: python_string_constant(path, c) for k, c in p.constants.items()})
        files[p.output] = jinja2.Template(python_string_constant(path, p.name)).render(**values)
    return files


@dataclass(frozen=True)
class UpstreamBuild:
    arch: str
    flags: tuple[str, ...]
    key: str
    directory: Path
    cubins: dict  # source -> cubin path


def upstream_plan(config: Config, spec: KernelSpec, recipe: Recipe, arch: str):
    from annotate.harness import staging
    from annotate.harness.toolchain import find_toolchain, nvcc_version

    up_arch = recipe.arch.get(arch, arch)
    flags = [f.replace("{arch}", up_arch) for f in recipe.flags]
    files = upstream_files(config, spec, recipe)
    texts = dict(files)
    for s in recipe.sources:
        if s not in files:
            inc = _include(s, f"{spec.folder / RECIPE_FILE}: sources")
            path = _root(config, inc.upstream) / inc.path
            if not path.is_file():
                raise AnnotateError(f"{spec.name}: upstream source {s} is missing",
                                    hint=f"run `annotate fetch {inc.upstream}`")
            texts[s] = path.read_text(encoding="utf-8")
    tc = find_toolchain(config.environ)
    key = staging.build_key(pins=staging.spec_pins(config, spec), files=texts, flags=flags, arch=up_arch,
                            torch_version="n/a", cuda_version=nvcc_version(tc.nvcc), route="upstream-cubin")
    return tc, up_arch, flags, files, key, config.build_dir(f"{spec.name}-upstream", key)


def build_upstream(config: Config, spec: KernelSpec, recipe: Recipe, arch: str, jobs: int | None = None) -> UpstreamBuild:
    from annotate.harness import staging
    from annotate.harness.nvcc import nvcc_compile

    tc, up_arch, flags, files, key, bdir = upstream_plan(config, spec, recipe, arch)
    gen_dir = bdir / "src"
    for name, text in files.items():
        staging.write_if_different(gen_dir / name, text)
    sources = [gen_dir / s if s in files else _root(config, _include(s, "").upstream) / _include(s, "").path
               for s in recipe.sources]
    outs = {s: bdir / (Path(src).stem + ".cubin") for s, src in zip(recipe.sources, sources)}
    if all(p.is_file() for p in outs.values()):
        return UpstreamBuild(up_arch, tuple(flags), key, bdir, outs)
    incs = [gen_dir] + [_root(config, i.upstream) / i.path for i in recipe.includes]
    sysincs = []
    for s in recipe.system_includes:
        if s == "python":
            sysincs.append(Path(sysconfig.get_path("include")))
        elif s == "torch":
            from annotate.harness.toolchain import torch_include_dirs

            sysincs += torch_include_dirs(require_cuda=True)
        elif ":" in s:
            inc = _include(s, "")
            sysincs.append(_root(config, inc.upstream) / inc.path)
        else:
            sysincs.append(_package_include(s))
    # FlashInfer's -isystem $cuda_home/include: where the toolkit lacks a CUDA library header the
    # harness also takes it from pip's nvidia packages (annotate.harness.toolchain)
    from annotate.harness.toolchain import system_header_dirs

    sysincs += [d for d in system_header_dirs(spec.system_headers, tc) if d not in sysincs]
    units = nvcc_compile(tc, sources, bdir, flags=flags, includes=incs, system_includes=sysincs,
                         output="cubin", jobs=jobs or config.max_jobs() or 1, env=config.environ)
    for s, unit in zip(recipe.sources, units):
        log = bdir / (Path(unit.source).stem + ".ptxas.log")
        staging.write_if_different(log, unit.log)
        if unit.returncode != 0:
            raise staging.compile_error(f"{spec.name} (upstream's build)", unit.log, unit.source, log)
    return UpstreamBuild(up_arch, tuple(flags), key, bdir, {s: u.output for s, u in zip(recipe.sources, units)})


# ---- comparing ------------------------------------------------------------------------------------------
_SYMBOL = re.compile(r"`\(([^)`]+)\)")
_ADDR = re.compile(r"\b0x[0-9a-f]+\b")


def normalise(insns: list[str]) -> list[str]:
    """Instruction texts with branch targets, labels and referenced symbols made neutral."""
    out = []
    for t in insns:
        t = _SYMBOL.sub("`(SYM)", t)
        if re.match(r"^(@!?U?P\w+\s+)?(BRA|BRX|CALL|JMP|JMX|BSSY|RET|SSY|PBK|CAL)\b", t):
            t = _ADDR.sub("ADDR", t)
        out.append(t)
    return out


@dataclass(frozen=True)
class KernelIdentity(_Part):
    name: str = _opt(default="")
    mangled: str = _opt(default="")
    status: str = _opt(default="")  # identical | different | missing
    instructions: int = _opt(default=0)
    upstream_instructions: int | None = _opt()
    differing: int | None = _opt()  # instructions (diff lines) that differ
    diff: tuple[str, ...] = _opt(default=(), omit="empty")  # the first differing lines, "-harness" / "+upstream"
    closest: str | None = _opt(omit="none")  # missing: upstream's kernel of that name nearest in template arguments


@dataclass(frozen=True)
class IdentityCard(_Part):
    schema: int = _opt(default=1)
    kernel: str = _opt(default="")
    arch: str = _opt(default="")
    upstream_arch: str = _opt(default="")
    nvcc: str | None = _opt()
    route: str = _opt(default="")
    notes: str = _opt(default="", omit="empty")
    verdict: str = _opt(default="")  # "identical" | "different"
    summary: str = _opt(default="")
    harness_flags: tuple[str, ...] = _opt(default=())
    upstream_flags: tuple[str, ...] = _opt(default=())
    only_harness: tuple[str, ...] = _opt(default=())
    only_upstream: tuple[str, ...] = _opt(default=())
    upstream_sources: tuple[str, ...] = _opt(default=())
    upstream_kernels: int = _opt(default=0)  # kernels in upstream's cubins (it builds more variants)
    kernels: tuple[KernelIdentity, ...] = _opt(default=())

    @property
    def identical(self) -> bool:
        return self.verdict == "identical"


def _template_distance(a: str, b: str) -> int:
    return sum(x != y for x, y in zip(_targs(a), _targs(b))) + abs(len(_targs(a)) - len(_targs(b)))


def _targs(name: str) -> list[str]:
    inner = name[name.find("<") + 1: name.rfind(">")] if "<" in name else ""
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(ch, 0)
        cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def compare(spec: KernelSpec, harness: dict[str, list[str]], upstream: dict[str, list[str]],
            names: dict[str, str]) -> tuple[KernelIdentity, ...]:
    """Every harness kernel the spec names against upstream's kernel of the same mangled name."""
    from annotate.harness.sass import base_name, symbol_of

    out = []
    for mangled, insns in harness.items():
        name = names.get(mangled, mangled)
        if symbol_of(name, spec.symbols) is None:
            continue
        if mangled not in upstream:
            same = [m for m in upstream if base_name(names.get(m, m)) == base_name(name)]
            near = min(same, key=lambda m: _template_distance(names.get(m, m), name), default=None)
            out.append(KernelIdentity(name=name, mangled=mangled, status="missing", instructions=len(insns),
                                      closest=names.get(near, near) if near else None))
            continue
        a, b = normalise(insns), normalise(upstream[mangled])
        if a == b:
            out.append(KernelIdentity(name=name, mangled=mangled, status="identical", instructions=len(a),
                                      upstream_instructions=len(b), differing=0))
            continue
        diff = [d for d in difflib.unified_diff(a, b, lineterm="", n=0)
                if d[:1] in "+-" and not d.startswith(("---", "+++"))]
        out.append(KernelIdentity(name=name, mangled=mangled, status="different", instructions=len(a),
                                  upstream_instructions=len(b), differing=len(diff),
                                  diff=tuple(diff[:DIFF_LINES])))
    return tuple(out)


def card_path(config: Config, kernel: str, arch: str) -> Path:
    """The committed card: vendor_kernels/results/identity/<kernel>.sm<arch>.json."""
    return config.committed_results_dir() / "identity" / f"{kernel}.sm{arch}.json"


def identity_card(config: Config, spec: KernelSpec, arch: str = "90", *, jobs: int | None = None) -> IdentityCard:
    """Build both sides (cached by key) and compare every kernel the spec names."""
    from annotate.harness.disasm import disassemble
    from annotate.harness.ptxas import demangle
    from annotate.harness.sass import cubins, normalised_sass
    from annotate.harness.toolchain import find_binary_tools, find_toolchain, nvcc_version

    recipe = load_recipe(spec)
    tc = find_toolchain(config.environ)
    tools = find_binary_tools(tc, config.environ)
    ours = cubins(config, spec, arch, jobs=jobs)
    theirs = build_upstream(config, spec, recipe, arch, jobs=jobs)
    harness: dict[str, list[str]] = {}
    upstream: dict[str, list[str]] = {}
    for cub in ours.values():
        harness.update(normalised_sass(disassemble(Path(cub), tools)))
    for cub in theirs.cubins.values():
        upstream.update(normalised_sass(disassemble(Path(cub), tools)))
    names = demangle(sorted(set(harness) | set(upstream)), config.environ)
    kernels = compare(spec, harness, upstream, names)
    from annotate.harness import staging

    ours_flags = staging.nvcc_flags(spec, arch)
    same = sum(k.status == "identical" for k in kernels)
    verdict = "identical" if kernels and same == len(kernels) else "different"
    summary = (f"{same} of {len(kernels)} kernels identical" if kernels else
               "no kernel of the spec's symbols in the harness build")
    return IdentityCard(
        kernel=spec.name, arch=arch, upstream_arch=theirs.arch, nvcc=nvcc_version(tc.nvcc), route=recipe.route,
        notes=recipe.notes, verdict=verdict, summary=summary, harness_flags=tuple(ours_flags),
        upstream_flags=theirs.flags,
        only_harness=tuple(f for f in ours_flags if f not in theirs.flags),
        only_upstream=tuple(f for f in theirs.flags if f not in ours_flags),
        upstream_sources=recipe.sources, upstream_kernels=len(upstream), kernels=kernels)


def write_card(path: Path, card: IdentityCard) -> None:
    import json

    from annotate.atomic import write_atomic

    write_atomic(path, json.dumps(card.to_json(), indent=1) + "\n")


def load_card(path: Path) -> IdentityCard:
    return IdentityCard.from_json(read_record_json(Path(path)))

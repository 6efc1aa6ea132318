"""Kernel specs: `vendor_kernels/<kernel>/spec.yaml` loaded into read-only objects.

A spec names the upstream symbols a harness runs, how the launcher instantiates them, the
shapes to check and to time, the tolerance per dtype and the PyTorch baseline. Only PyYAML is
needed here, so `annotate run --list` works on the GPU machines and without torch.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import yaml

from annotate.config import Config
from annotate.errors import AnnotateError, UsageError

SPEC_FILE = "spec.yaml"
REFERENCE_FILE = "reference.py"
COMMON_DIR = "common"  # vendor_kernels/common: headers shared by every launcher and binding
# Functions every reference.py defines (see docs/harness.md).
REFERENCE_API = ("make_inputs", "make_outputs", "launch", "reference", "baseline", "cost")


@dataclass(frozen=True)
class Tolerance:
    rel_l2: float  # ||got - want||_2 / ||want||_2
    max_abs: float  # max |got - want|


@dataclass(frozen=True)
class Shape:
    name: str
    params: dict  # everything but the name: variant, sizes, dtype ...

    def get(self, key: str, default=None):
        return self.params.get(key, default)

    def __getitem__(self, key: str):
        try:
            return self.params[key]
        except KeyError:
            raise AnnotateError(f"shape '{self.name}' has no '{key}'") from None


@dataclass(frozen=True)
class Include:
    """An include directory inside an upstream checkout (e.g. flashinfer:include)."""

    upstream: str
    path: str


@dataclass(frozen=True)
class Generated:
    """A source upstream's own build generates from a template of the pin (FlashInfer's JIT
    renders csrc/*.jinja into the config and instantiation files of each module), rendered the
    same way into the harness's staged sources (annotate.harness.staging)."""

    template: Include  # the template inside the pinned checkout
    output: str  # the staged file's name
    values: dict  # the template's parameters (strings)


@dataclass(frozen=True)
class KernelSpec:
    name: str
    title: str
    folder: Path
    upstream: str
    symbols: tuple[str, ...]  # the kernels the learner reads (qualified names)
    launchers: tuple[str, ...]  # the upstream host functions the launcher calls
    sources: tuple[str, ...]  # .cu files compiled by nvcc, relative to folder
    binding: str  # the torch binding (.cpp), relative to folder
    headers: tuple[str, ...]  # kernel-local headers (.h/.cuh) the sources include
    includes: tuple[Include, ...]
    system_headers: tuple[str, ...]  # CUDA library headers the upstream code includes
    torch_headers: bool  # the .cu needs torch's c10/ATen CUDA headers (FA2's flash.h)
    std: str
    defines: dict
    nvcc_flags: tuple[str, ...]
    instantiate: dict  # NAME -> C++ text, written to instantiation.h as ANNOTATE_<NAME>
    dtypes: tuple[str, ...]
    tolerance: dict  # dtype name -> Tolerance
    bound: str  # "memory" | "compute": which peak the headline % uses
    baseline: str  # the PyTorch equivalent, in words
    trials: int
    check: tuple[Shape, ...]
    time: tuple[Shape, ...]
    notes: str = ""
    # regexes (re.search) on the demangled names of the kernels whose per-line SASS is committed
    # (annotate.harness.sass.compact); empty: every kernel's
    sass_featured: tuple[str, ...] = ()
    generated: tuple[Generated, ...] = ()  # rendered into the staged sources; `sources` may name them

    @property
    def spec_file(self) -> Path:
        return self.folder / SPEC_FILE

    @property
    def reference_file(self) -> Path:
        return self.folder / REFERENCE_FILE

    def source_files(self) -> list[Path]:
        """Every file of this harness that goes into a build (the cache key hashes them): its
        own (not those `generate:` renders), then the shared headers of vendor_kernels/common
        beside it that it does not carry itself (an extracted copy carries its own, wherever it
        lives)."""
        generated = {g.output for g in self.generated}
        files = [self.folder / s for s in (*self.sources, self.binding, *self.headers) if s not in generated]
        own = {p.name for p in files}
        common = self.folder.parent / COMMON_DIR
        if common.is_dir():
            files += sorted(p for p in common.iterdir() if p.is_file() and p.name not in own)
        return files

    def tolerance_for(self, dtype: str) -> Tolerance:
        if dtype not in self.tolerance:
            raise AnnotateError(f"{self.spec_file}: no tolerance for dtype '{dtype}'")
        return self.tolerance[dtype]

    def select(self, names: list[str] | None) -> tuple[tuple[Shape, ...], tuple[Shape, ...]]:
        """The check and time shapes named in `names` (all when None); unknown names -> UsageError."""
        if not names:
            return self.check, self.time
        known = {s.name for s in (*self.check, *self.time)}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(f"{self.name}: unknown shape(s): {', '.join(unknown)}",
                             hint="known shapes: " + ", ".join(sorted(known)))
        wanted = set(names)
        return (tuple(s for s in self.check if s.name in wanted),
                tuple(s for s in self.time if s.name in wanted))


def _shape_list(raw, where: str, defaults: dict) -> tuple[Shape, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise AnnotateError(f"{where}: expected a list of shapes")
    out, seen = [], set()
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "name" not in item:
            raise AnnotateError(f"{where}[{i}]: each shape is a mapping with a 'name'")
        name = str(item["name"])
        if name in seen:
            raise AnnotateError(f"{where}: duplicate shape name '{name}'")
        seen.add(name)
        params = dict(defaults)
        params.update({k: v for k, v in item.items() if k != "name"})
        out.append(Shape(name=name, params=params))
    return tuple(out)


def _str_tuple(d: dict, key: str, where: str, required: bool = False) -> tuple[str, ...]:
    val = d.get(key)
    if val is None:
        if required:
            raise AnnotateError(f"{where}: missing key '{key}'")
        return ()
    if isinstance(val, str):
        return (val,)
    if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
        raise AnnotateError(f"{where}: '{key}' must be a string or a list of strings")
    return tuple(val)


def _regexes(raw: dict, key: str, where: str) -> tuple[str, ...]:
    import re

    out = _str_tuple(raw, key, where)
    for rx in out:
        try:
            re.compile(rx)
        except re.error as exc:
            raise AnnotateError(f"{where}: {key}: bad regex {rx!r}: {exc}") from None
    return out


def _generated(raw: dict, where: str) -> tuple[Generated, ...]:
    """`generate: {values: {...}, files: [{template: UPSTREAM:PATH, output: NAME, values: {...}}]}`:
    each file rendered with the shared values updated by its own."""
    gen = raw.get("generate")
    if gen is None:
        return ()
    if not isinstance(gen, dict) or not isinstance(gen.get("files"), list):
        raise AnnotateError(f"{where}: generate: expected a mapping with a list `files`")
    shared = gen.get("values") or {}
    if not isinstance(shared, dict):
        raise AnnotateError(f"{where}: generate.values: expected a mapping")
    out, names = [], set()
    for i, item in enumerate(gen["files"]):
        if not isinstance(item, dict) or "template" not in item or "output" not in item:
            raise AnnotateError(f"{where}: generate.files[{i}]: needs `template` (UPSTREAM:PATH) and `output`")
        up, sep, path = str(item["template"]).partition(":")
        output = str(item["output"])
        if not sep or not path:
            raise AnnotateError(f"{where}: generate.files[{i}]: template must be UPSTREAM:PATH")
        if "/" in output or output in names or output in (".", ".."):
            raise AnnotateError(f"{where}: generate.files[{i}]: output must be a new plain file name, not {output!r}")
        names.add(output)
        own = item.get("values") or {}
        if not isinstance(own, dict):
            raise AnnotateError(f"{where}: generate.files[{i}].values: expected a mapping")
        values = {str(k): "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
                  for k, v in {**shared, **own}.items()}
        out.append(Generated(Include(up, path.strip("/")), output, values))
    return tuple(out)


def _tolerances(raw: dict, where: str) -> tuple[tuple[str, ...], dict[str, Tolerance]]:
    tol: dict[str, Tolerance] = {}
    for dtype, t in (raw.get("tolerance") or {}).items():
        try:
            tol[str(dtype)] = Tolerance(rel_l2=float(t["rel_l2"]), max_abs=float(t["max_abs"]))
        except (TypeError, KeyError, ValueError):
            raise AnnotateError(f"{where}: tolerance.{dtype} needs numbers rel_l2 and max_abs") from None
    dtypes = _str_tuple(raw, "dtypes", where, required=True)
    missing = [d for d in dtypes if d not in tol]
    if missing:
        raise AnnotateError(f"{where}: no tolerance for dtype(s) {', '.join(missing)}")
    return dtypes, tol


def _includes(raw: dict, where: str) -> tuple[Include, ...]:
    includes = []
    for inc in _str_tuple(raw, "includes", where):
        up, sep, path = inc.partition(":")
        if not sep:
            raise AnnotateError(f"{where}: include '{inc}' must be UPSTREAM:PATH")
        includes.append(Include(upstream=up, path=path.strip("/")))
    return tuple(includes)


def _shapes(raw: dict, where: str, dtypes: tuple[str, ...]) -> tuple[tuple[Shape, ...], tuple[Shape, ...]]:
    """The check and time shapes; `dtype` defaults to the first dtype; a name listed in both
    must mean the same sizes."""
    defaults = {"dtype": dtypes[0]}
    check = _shape_list(raw.get("check"), f"{where}: check", defaults)
    time = _shape_list(raw.get("time"), f"{where}: time", defaults)
    for s in (*check, *time):
        if s.params["dtype"] not in dtypes:
            raise AnnotateError(f"{where}: shape '{s.name}' uses dtype '{s.params['dtype']}' "
                                f"not in dtypes {list(dtypes)}")
    timed = {s.name: s for s in time}
    for a in check:
        if a.name in timed and a.params != timed[a.name].params:
            raise AnnotateError(f"{where}: shape '{a.name}' is listed in check and time with different sizes")
    return check, time


def parse_spec(raw: object, folder: Path, *, catalog: bool = True) -> KernelSpec:
    """Validate one spec mapping. Errors name the file and the key. In the catalog
    (vendor_kernels/) a spec's name is its folder's; elsewhere (a copy being edited) it need not be."""
    where = str(folder / SPEC_FILE)
    if not isinstance(raw, dict):
        raise AnnotateError(f"{where}: expected a mapping")
    for key in ("name", "upstream", "sources", "binding", "dtypes", "tolerance", "check"):
        if key not in raw:
            raise AnnotateError(f"{where}: missing key '{key}'")
    name = str(raw["name"])
    if catalog and name != folder.name:
        raise AnnotateError(f"{where}: name '{name}' differs from its folder '{folder.name}'")
    dtypes, tol = _tolerances(raw, where)
    bound = str(raw.get("bound", "memory"))
    if bound not in ("memory", "compute"):
        raise AnnotateError(f"{where}: bound must be 'memory' or 'compute', not '{bound}'")
    check, time = _shapes(raw, where, dtypes)
    spec = KernelSpec(
        name=name,
        title=str(raw.get("title", name)),
        folder=folder,
        upstream=str(raw["upstream"]),
        symbols=_str_tuple(raw, "symbols", where),
        launchers=_str_tuple(raw, "launchers", where),
        sources=_str_tuple(raw, "sources", where, required=True),
        binding=str(raw["binding"]),
        headers=_str_tuple(raw, "headers", where),
        includes=_includes(raw, where),
        system_headers=_str_tuple(raw, "system_headers", where),
        torch_headers=bool(raw.get("torch_headers", False)),
        std=str(raw.get("std", "c++17")),
        defines={str(k): ("" if v is None else str(v)) for k, v in (raw.get("defines") or {}).items()},
        nvcc_flags=_str_tuple(raw, "nvcc_flags", where),
        instantiate={str(k): str(v) for k, v in (raw.get("instantiate") or {}).items()},
        dtypes=dtypes,
        tolerance=tol,
        bound=bound,
        baseline=str(raw.get("baseline", "")),
        trials=int(raw.get("trials", 2)),
        check=check,
        time=time,
        notes=str(raw.get("notes", "")),
        sass_featured=_regexes(raw, "sass_featured", where),
        generated=_generated(raw, where),
    )
    outputs = {g.output for g in spec.generated}
    for rel in (*spec.sources, spec.binding, *spec.headers):
        if rel in outputs:
            continue
        if not (folder / rel).is_file():
            raise AnnotateError(f"{where}: '{rel}' does not exist in {folder}")
    return spec


def kernel_names(config: Config) -> list[str]:
    """Every folder under vendor_kernels/ that holds a spec.yaml, sorted."""
    root = config.kernels_dir
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / SPEC_FILE).is_file())


def load_spec(config: Config, name: str) -> KernelSpec:
    """A catalog kernel: vendor_kernels/<name>/spec.yaml."""
    folder = config.kernels_dir / name
    if not (folder / SPEC_FILE).is_file():
        raise UsageError(f"unknown kernel '{name}'",
                         hint="known kernels: " + (", ".join(kernel_names(config)) or "(none)"))
    return load_spec_dir(folder, catalog=True)


def load_spec_dir(folder: Path, *, catalog: bool = False) -> KernelSpec:
    """The spec in any folder holding a spec.yaml and the files it names (a catalog folder, or
    a copy of one being edited elsewhere)."""
    path = folder / SPEC_FILE
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AnnotateError(f"{path}: cannot read ({exc.strerror or exc.__class__.__name__})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        what = " ".join(x for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x)
        raise AnnotateError(f"{where}: invalid YAML: {what or str(exc).splitlines()[0]}") from None
    return parse_spec(raw, folder, catalog=catalog)


def load_specs(config: Config) -> list[KernelSpec]:
    return [load_spec(config, n) for n in kernel_names(config)]


def load_reference(spec: KernelSpec, tag: str = "") -> ModuleType:
    """Import the kernel's reference.py (it imports torch: call this only when running).
    `tag` tells apart two copies of one kernel loaded in one process (`run --source`)."""
    path = spec.reference_file
    if not path.is_file():
        raise AnnotateError(f"{path}: missing (every harness has a reference.py)")
    mod_name = f"annotate_kernels_{spec.name}_reference" + (f"_{tag}" if tag else "")
    mspec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(mspec)
    sys.modules[mod_name] = module
    mspec.loader.exec_module(module)
    missing = [f for f in REFERENCE_API if not callable(getattr(module, f, None))]
    if missing:
        raise AnnotateError(f"{path}: missing function(s) {', '.join(missing)}")
    return module

"""Fixtures for the site builder's tests: a tiny upstream ("demo") with two CUDA files, indexed
by the real indexer (`index_directory`), annotation objects made with annotate.notes' model, and
text dumps of page models for the snapshot tests.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

from annotate.upstreams import Upstream

DATA = Path(__file__).parent / "data" / "site"
SRC = DATA / "src"
REPO = DATA / "repo"  # a repository root holding one harness spec and its records
SNAPSHOTS = DATA / "snapshots"
UP = "demo"
NORM = "include/demo/norm.cuh"
DECODE = "include/demo/decode.cuh"


def demo_upstream() -> Upstream:
    return Upstream(name=UP, title="Demo", url="https://example.invalid/demo.git",
                    web="https://example.invalid/demo", tag="v0.1", commit="0123456789abcdef" * 2 + "01234567",
                    paths=("include/",), render=("include/",), lock="locks/demo.json", archive=None)


def _line(text: str, needle: str) -> int:
    for i, ln in enumerate(text.split("\n"), 1):
        if needle in ln:
            return i
    raise AssertionError(f"{needle!r} not in fixture")


@lru_cache(maxsize=1)
def demo_index():
    """The demo tree through the real indexer (no cache: nothing is written)."""
    from annotate.index.api import index_directory

    return index_directory(UP, SRC)


def demo_context(config, **kw):
    """The SiteContext of a build of the demo tree with `demo_annotations(**kw)`; harness runs
    are those of `config`'s repository (REPO has one)."""
    from annotate.project import open_project
    from site_builder.context import site_context

    index = demo_index()
    project = open_project(config, index=index, annotations=demo_annotations(index, **kw),
                           pins={UP: demo_upstream()})
    return site_context(project)


# ---- annotations, as annotate.notes' model --------------------------------------------------

def demo_annotations(index, evil: bool = False, stale_decode: bool = False):
    from annotate.notes import model as M

    kern = index.resolve("demo::RMSNormKernel")
    dk = index.resolve("demo::DecodeKernel")
    norm_text = index.source(UP, NORM)
    summary = "One block per row: sum of squares, **warp reduction**, then scale by `rsqrt`."
    if evil:
        summary = EVIL_MARKDOWN
    at_line = _line(norm_text, "sum_sq += math::shfl_xor_sync")
    kn = M.FunctionNote(
        "demo::RMSNormKernel", UP, NORM, kern, M.OK, fingerprint=kern.fingerprint,
        current_fingerprint=kern.fingerprint,
        summary=M.Text(summary, "每行一个线程块。"),
        decomposition=M.Text("grid = rows, block = 256 threads, each thread strides over `d`."),
        memory=(M.MemoryNote(M.Text("input row"), "global → registers", M.Text("strided scalar loads")),),
        sync=M.Text("One `__syncthreads()` after the per-warp partial sums land in shared memory."),
        first_look=M.Text("The butterfly loop over `offset`."),
        calls={"demo::math::shfl_xor_sync": M.Text("warp butterfly reduction")},
        notes=(M.InlineNote("sum_sq += math::shfl_xor_sync", M.Text("Five butterfly steps reduce 32 lanes."),
                            at_line, at_line),),
        course=("demo-course", "day-1"), harness="rmsnorm",
    )
    dn = M.FunctionNote(
        "demo::DecodeKernel", UP, DECODE, dk, M.STALE if stale_decode else M.OK,
        fingerprint="ffffffffffffffff" if stale_decode else dk.fingerprint, current_fingerprint=dk.fingerprint,
        summary=M.Text("A toy dot product, one warp; the partial sums meet in `warp_sum`."),
    )
    params = index.resolve_type("demo::DecodeParams")
    switch = index.resolve_macro("DEMO_SWITCH")
    decode_text = index.source(UP, DECODE)
    tn = M.TypeNote(
        "demo::DecodeParams", UP, DECODE, params, M.OK, fingerprint=params.fingerprint,
        current_fingerprint=params.fingerprint,
        summary=M.Text("What one `ParamsKernel` launch is told.", "一次 `ParamsKernel` 启动所需的参数。"),
        layout=M.Text("Two pointers, then two `int`s: 24 bytes."),
        fields=(M.FieldNote("q", M.Text("The input row.", "输入行。"), "field", (_line(decode_text, "const float* q;"),)),
                M.FieldNote("n", M.Text("Elements in the row."), "field", (_line(decode_text, "int n, stride;"),)),
                M.FieldNote("stride", M.Text("1 is dense."), "field", (_line(decode_text, "int n, stride;"),))),
        notes=(M.InlineNote("int n, stride;", M.Text("Two members on one line."),
                            _line(decode_text, "int n, stride;"), _line(decode_text, "int n, stride;")),),
        course=("day-2",))
    mn = M.MacroNote(
        "DEMO_SWITCH", UP, DECODE, switch, M.OK, fingerprint=switch.fingerprint, current_fingerprint=switch.fingerprint,
        summary=M.Text("A run-time condition becomes a compile-time constant."),
        expands_to=M.Text("`if (c) { constexpr bool F = true; body(); } else { ... }`"))
    course = M.Course("demo-course", M.Text("Demo course"), M.Text("Read the norm, then the decode."), (
        M.CourseStep("day-1", M.Text("RMSNorm", "RMSNorm 归一化"), M.Text("Start with the kernel."),
                     (f"{UP}:demo::RMSNormKernel", f"{UP}:{NORM}"), goals=(M.Text("Find the reduction", "找到归约"),),
                     harness="rmsnorm", exercises=M.Exercises(
                         questions=(M.Question(M.Text("How many steps?", "几步？"), M.Text("Five.", "五步。"),
                                               (f"{UP}:{NORM}:20-22", f"{UP}:demo::math::shfl_xor_sync",
                                                f"{UP}:include/demo/gone.cuh:3")),),
                         homework=(M.Text("Run it."),), checkpoints=(M.Text("Found it", "找到了"),))),
        M.CourseStep("day-2", M.Text("Decode"), None, (f"{UP}:demo::Decode", f"{UP}:no::such_thing")),
    ))
    files = [
        M.AnnotationFile(f"annotations/{UP}/{NORM}.yaml", UP, NORM,
                         M.Text("Root-mean-square normalisation, one block per row."), (kn,)),
        M.AnnotationFile(f"annotations/{UP}/{DECODE}.yaml", UP, DECODE, None, (dn,), types=(tn,), macros=(mn,)),
    ]
    return M.AnnotationSet(files=files, courses=[course], diagnostics=[])


EVIL_MARKDOWN = (
    "Evil: <script>window.__pwned = 1</script> <img src=x onerror=\"window.__pwned=2\"> "
    "[click me](javascript:window.__pwned=3) <a href=\"javascript:window.__pwned=4\" onclick=\"window.__pwned=5\">raw</a> "
    "[data](data:text/html;base64,PHNjcmlwdD4=) ![img](javascript:window.__pwned=6)"
)


# ---- the real pipeline on the fixture -----------------------------------------------------

ANNOTATIONS = DATA / "annotations"

PINS_YAML = """upstreams:
  demo:
    title: Demo
    url: https://example.invalid/demo.git
    web: https://example.invalid/demo
    tag: v0.1
    commit: {commit}
    paths: [include/]
    render: [include/]
    lock: locks/demo.json
"""


def make_demo_repo(tmp_path: Path):
    """A repository root (tmp_path/repo) holding the demo pin, its lock and a copy of the fixture
    annotations, and a cache (tmp_path/cache) holding the demo sources as its checkout, not yet
    recorded as fetched. Returns the Config; what `annotate build` sees on a real clone."""
    import shutil

    from annotate.config import Config
    from annotate.fetch import lock as locks

    root = tmp_path / "repo"
    (root / "vendor_kernels" / "locks").mkdir(parents=True)
    up = demo_upstream()
    (root / "vendor_kernels" / "upstreams.yaml").write_text(PINS_YAML.format(commit=up.commit))
    files = {p.relative_to(SRC).as_posix(): locks.file_blob_id(p) for p in sorted(SRC.rglob("*")) if p.is_file()}
    locks.write_lock(root / "vendor_kernels" / "locks" / "demo.json", locks.Lock(UP, up.commit, up.paths, files))
    shutil.copytree(ANNOTATIONS, root / "annotations")
    (root / "schema").mkdir()
    config = Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=root)
    shutil.copytree(SRC, config.checkout_dir(UP, up.commit))
    return config


def fixture_pipeline(config):
    """(index, annotations) of the demo tree through the real index and notes stages."""
    from annotate.index.api import index_directory
    from annotate.notes.api import load_annotations

    index = index_directory(UP, SRC)
    return index, load_annotations(config, index, root=ANNOTATIONS)


def build_fixture_site(config, out, annotations=None, **kw):
    from annotate.project import open_project
    from site_builder.build import build_site

    index, notes = fixture_pipeline(config)
    project = open_project(config, index=index, annotations=notes if annotations is None else annotations(index),
                           pins={UP: demo_upstream()})
    return build_site(project, out, jobs=1, **kw)


# ---- text dumps of page models (the snapshots a model change shows up in) --------------------

def dump_model(obj, skip: frozenset[str] = frozenset()) -> str:
    """Any page model as indented text: one line per field, dataclasses and tuples opened up,
    fields named in `skip` left out."""
    out: list[str] = []

    def walk(x, indent: str, label: str) -> None:
        if dataclasses.is_dataclass(x):
            out.append(f"{indent}{label}{type(x).__name__}")
            for f in dataclasses.fields(x):
                if f.name not in skip:
                    walk(getattr(x, f.name), indent + "  ", f.name + ": ")
        elif isinstance(x, (tuple, list)) and x and not all(isinstance(v, (str, int, float)) for v in x):
            out.append(f"{indent}{label}[{len(x)}]")
            for i, v in enumerate(x):
                walk(v, indent + "  ", f"{i}: ")
        else:
            out.append(f"{indent}{label}{x!r}" if not isinstance(x, str) else f"{indent}{label}{str(x)!r}")

    walk(obj, "", "")
    return "\n".join(out) + "\n"


def dump_page(page) -> str:
    """A source page: its plan field by field, then how the lines are cut into sections and rows
    (the token pieces themselves are left to the HTML snapshot)."""
    out = [dump_model(page.plan).rstrip("\n"), f"lines {page.line_count}"]
    for s in page.sections:
        owner = s.function.qualified_name if s.function else "-"
        rows = " ".join(f"[{r.first}-{r.lines[-1].no}{' note' if r.note else ''}]" for r in s.rows)
        out.append(f"section {owner}{' head' if s.head else ''} lead={s.lead_rows} {rows}"
                   + (f" extra={s.extra_anchors}" if s.extra_anchors else ""))
    return "\n".join(out) + "\n"

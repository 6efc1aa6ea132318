"""Reachability and ordering on a tiny upstream indexed by the real indexer (tests/extract_support.py).

Without nvcc: what static analysis keeps, leaves out and leaves to the compiler. With nvcc
(marker `nvcc`): the compiler's decisions — the specialisation whose removal still compiles
but changes the code stays, the one nothing uses goes, the macro branch no pass keeps goes.
"""

from __future__ import annotations

import pytest

from annotate.extract.cxx import DEFINE
from tests.extract_support import demo_plan, piece_named


@pytest.fixture
def plan(tmp_path):
    return demo_plan(tmp_path)


def _names(plan, indices):
    return {n for i in indices for n in plan.reach.infos[i].declares}


def test_closure_is_in_first_inclusion_order(plan):
    cl = plan.closure
    # headers in the order they are opened; pieces in the order the preprocessor emits them:
    # vec.cuh's first line (<cuda_runtime.h>), then all of macros.cuh, then the rest of vec.cuh
    assert [h.rel for h in cl.headers] == ["include/demo/kernel.cuh", "include/demo/vec.cuh",
                                           "include/demo/macros.cuh"]
    runs = [p.rel.split("/")[-1] for k, p in enumerate(cl.pieces) if k == 0 or cl.pieces[k - 1].rel != p.rel]
    assert runs == ["vec.cuh", "macros.cuh", "vec.cuh", "kernel.cuh"]
    # every piece after what it uses: kScale before the kernel, the primary before its specialisations
    assert piece_named(plan, "kScale").index < piece_named(plan, "Kernel").index
    assert piece_named(plan, "vec").index < piece_named(plan, "vec<float,1>").index
    assert cl.lines == sum(h.lines for h in cl.headers)
    (inc,) = cl.harness_includes
    assert inc.file == "launcher.cu" and inc.text == "#include <demo/kernel.cuh>"


def test_what_static_analysis_keeps_and_leaves_out(plan):
    kept = _names(plan, plan.reach.by_name)
    assert {"Kernel", "Launch", "vec", "helper", "kScale", "DEMO_SCALE", "DEMO_INLINE", "DEMO_BIAS"} <= kept
    assert not {"OtherKernel", "unused_fn", "kUnused", "DEMO_UNUSED_MACRO"} & kept
    # the out-of-class member of vec<float, 1> is kept with its class
    member = next(p for p in plan.closure.pieces if plan.reach.infos[p.index].member_of == "vec<float,1>")
    assert member.index in plan.reach.by_name


def test_what_is_left_to_the_compiler(plan):
    infos = plan.reach.infos
    units = {infos[u[0]].specialises or "/".join(sorted(infos[u[0]].declares)): u for u in plan.reach.candidates}
    # overloads and specialisations: which one a use picks is the compiler's decision
    assert {"vec<float,N>", "vec<float,1>", "vec<double,1>", "helper"} <= set(units)
    # a class specialisation goes with its out-of-class member definitions
    assert len(units["vec<float,1>"]) == 2
    # the primary template never goes while a specialisation stays; the kernel is certain
    assert "vec" not in units and "Kernel" not in units and "Launch" not in units


def test_the_index_decides_calls_names_decide_the_rest(tmp_path):
    with_index = demo_plan(tmp_path / "a")
    without = demo_plan(tmp_path / "b", index=False)
    # the name closure is the same; the index only narrows (never widens) it
    assert with_index.reach.by_name == without.reach.by_name
    assert with_index.reach.by_index <= with_index.reach.by_name


def test_kernel_text_reopens_namespaces_and_conditions(plan):
    from annotate.extract.api import kernel_text

    keep = set(plan.reach.by_name)
    text = kernel_text(plan, keep)
    bias = [p for p in plan.closure.pieces if p.kind == DEFINE and "DEMO_BIAS" in p.piece.argument]
    assert len(bias) == 2 and all(p.index in keep for p in bias)
    assert "#if defined(DEMO_FAST)" in text and "#if !(defined(DEMO_FAST))" in text
    assert text.count("namespace demo {") >= 2 and "}  // namespace demo" in text
    k = piece_named(plan, "Kernel")
    assert f"// include/demo/kernel.cuh:{k.first_line}-{k.last_line} @ c0ffeec0" in text
    assert "OtherKernel" not in text and "DEMO_UNUSED_MACRO" not in text


def test_rewritten_launcher_includes_kernel_cu_and_keeps_its_lines(plan):
    text = plan.harness["launcher.cu"]
    lines = text.splitlines()
    assert lines[1].startswith('#include "kernel.cu"') and "demo/kernel.cuh" in lines[1]
    original = (plan.spec.folder / "launcher.cu").read_text().splitlines()
    assert len(lines) == len(original) and lines[4:] == original[4:]


@pytest.mark.nvcc
def test_the_compiler_decides_specialisations_and_macro_branches(tmp_path, tmp_config):
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    from annotate.config import Config
    from annotate.extract.api import kernel_text, reduce_plan

    plan = demo_plan(tmp_path)
    config = Config.load(environ={"PATH": __import__("os").environ["PATH"]}, cache_dir=tmp_config.cache_dir)
    lines = []
    red = reduce_plan(config, plan, ("90",), log=lines.append)
    keep = set(plan.reach.by_name) - set(red.dead) - set(red.dropped)
    names = {plan.reach.infos[i].specialises or "/".join(sorted(plan.reach.infos[i].declares)) for i in keep}
    # vec<float, 1>: dropping it still compiles (vec<float, N> takes over) but the code changes
    assert "vec<float,1>" in names and "vec<float,N>" in names
    assert "vec<double,1>" not in names  # nothing uses it
    helpers = [i for i in keep if "helper" in plan.reach.infos[i].declares]
    assert len(helpers) == 1 and "float helper" in plan.closure.pieces[helpers[0]].text
    # the macro: both branches are reached by name, only one survives preprocessing
    bias = [p.index for p in plan.closure.pieces if p.kind == DEFINE and "DEMO_BIAS" in p.piece.argument]
    assert [i in red.dead for i in bias] == [True, False]
    assert red.tests >= 2 and not red.cached
    text = kernel_text(plan, keep)
    assert "vec<double, 1>" not in text and "DEMO_BIAS 2.0f" in text
    # the same inputs again: the decision comes from the cache, no compile
    again = reduce_plan(config, plan, ("90",))
    assert again.cached and again.dropped == red.dropped and again.dead == red.dead


def test_a_macro_invocation_declares_what_it_pastes(tmp_path):
    from annotate.extract.api import Origin, plan_from
    from annotate.extract.closure import IncludeDir
    from annotate.extract.reach import INVOCATION
    from annotate.harness.spec import load_spec_dir
    from tests.extract_support import make_demo
    from tests.index_support import write_tree

    root, folder, idx = make_demo(tmp_path)
    write_tree(root, {"include/demo/traits.cuh": """
        #pragma once
        #define DEFINE_HAS(member) \\
          template <typename T> struct has_##member { static constexpr bool value = false; }; \\
          template <typename T> inline constexpr bool has_##member##_v = has_##member<T>::value;
        DEFINE_HAS(scale)
        DEFINE_HAS(unused)
        """})
    kernel = root / "include/demo/kernel.cuh"
    kernel.write_text(kernel.read_text().replace('#include "vec.cuh"', '#include "vec.cuh"\n#include "traits.cuh"')
                      .replace("out[0] = DEMO_SCALE", "if constexpr (has_scale_v<float>) out[1] = 0.f;\n  out[0] = DEMO_SCALE"))
    plan = plan_from(load_spec_dir(folder), Origin("demo", "Demo", "v1", "0" * 40), root,
                     [IncludeDir(root / "include", False, "demo:include")], None)
    inv = [p for p in plan.closure.pieces if plan.reach.infos[p.index].kind == INVOCATION]
    assert [sorted(plan.reach.infos[p.index].declares) for p in inv] == [
        ["has_scale", "has_scale_v", "scale"], ["has_unused", "has_unused_v", "unused"]]
    assert [p.index in plan.reach.by_name for p in inv] == [True, False]


def test_a_rendered_harness_file_is_read_rewritten_and_mentions_roots(tmp_path):
    """A config the build renders from the pin's templates (FlashInfer's JIT `*_config.inc`):
    the launcher includes it, it includes upstream code and names some: it is a harness file
    like the launcher, read from the scratch folder it was rendered into."""
    from annotate.extract.api import Origin, plan_from
    from annotate.extract.closure import IncludeDir
    from annotate.harness.spec import load_spec_dir
    from tests.extract_support import make_demo

    root, folder, idx = make_demo(tmp_path)
    spec = load_spec_dir(folder)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for f in ("launcher.cu", "launcher.h", "binding.cpp"):
        text = (folder / f).read_text()
        if f == "launcher.cu":
            text = text.replace('#include "launcher.h"', '#include "launcher.h"\n#include "config.inc"')
        (scratch / f).write_text(text)
    (scratch / "config.inc").write_text("#pragma once\n#include <demo/macros.cuh>\nconstexpr float kMine = kUnused;\n")
    plan = plan_from(spec, Origin("demo", "Demo", "v1", "c0ffee" * 6 + "beef"), root,
                     [IncludeDir(root / "include", False, "demo:include")], idx,
                     harness_dir=scratch, rendered=("config.inc",))
    assert plan.rendered == ("config.inc",)
    assert plan.harness["config.inc"].splitlines()[1].startswith('#include "kernel.cu"')
    # kUnused, which nothing else reaches (test_what_static_analysis_keeps_and_leaves_out), is a root now
    assert "kUnused" in plan.roots and piece_named(plan, "kUnused").index in plan.reach.by_name


def test_the_copys_spec_has_no_generate_block():
    import yaml

    from annotate.extract.emit import rewrite_spec_text

    src = ("name: k\nsources: [a.cu, gen.cu]\n# how the files are rendered\ngenerate:\n  values:\n    # a value\n"
           "    x: 1\n  files:\n    - {template: 'u:t.jinja', output: gen.cu}\n\n# the shapes\ncheck:\n  - {name: one}\n")
    text = rewrite_spec_text(src, includes=[], headers=["kernel.cu"], banner="# copy", drop=("generate",))
    raw = yaml.safe_load(text)
    assert "generate" not in raw and raw["check"] == [{"name": "one"}] and raw["sources"] == ["a.cu", "gen.cu"]
    assert "how the files are rendered" not in text and "# the shapes" in text


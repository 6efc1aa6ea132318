"""The identity card (annotate.harness.identity) and the spec's `generate:` (upstream templates
rendered into the staged sources): comparison and normalisation on small SASS, recipe errors,
template rendering from a fixture checkout, and (nvcc, CI tier) the real cards of rmsnorm and
decode_kernel against the committed ones."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from annotate.errors import AnnotateError
from annotate.harness import identity, staging
from annotate.harness.spec import load_spec, parse_spec

from harness_support import MINIMAL_SPEC, make_kernel


def test_normalise_neutralises_addresses_and_symbols_only_where_they_are_addresses():
    a = ["@P0 BRA 0x1a40", "CALL.REL.NOINC `(_Z3fooPf)", "IADD3 R1, R1, 0x10, RZ", "BSSY B0, 0x2000"]
    assert identity.normalise(a) == ["@P0 BRA ADDR", "CALL.REL.NOINC `(SYM)", "IADD3 R1, R1, 0x10, RZ",
                                     "BSSY B0, ADDR"]


def test_compare_reports_identical_different_and_missing(tmp_config):
    spec = dataclasses.replace(load_spec(tmp_config, "rmsnorm"), symbols=("ns::K",))
    names = {"_Za": "void ns::K<8u, float>(float*)", "_Zb": "void ns::K<4u, float>(float*)",
             "_Zc": "void ns::K<2u, float, 3>(float*)", "_Zu": "void ns::K<2u, float, 4>(float*)",
             "_Zo": "void ns::Other<1>()"}
    harness = {"_Za": ["LDG.E R1, [R2]", "BRA 0x10"], "_Zb": ["FADD R1, R1, R2"], "_Zc": ["EXIT"],
               "_Zo": ["EXIT"]}
    upstream = {"_Za": ["LDG.E R1, [R2]", "BRA 0x40"], "_Zb": ["FADD.FTZ R1, R1, R2"], "_Zu": ["EXIT"]}
    got = {k.mangled: k for k in identity.compare(spec, harness, upstream, names)}
    assert set(got) == {"_Za", "_Zb", "_Zc"}  # ns::Other is not a spec symbol
    assert got["_Za"].status == "identical"
    b = got["_Zb"]
    assert b.status == "different" and b.differing == 2 and b.diff == ("-FADD R1, R1, R2", "+FADD.FTZ R1, R1, R2")
    c = got["_Zc"]
    assert c.status == "missing" and c.closest == "void ns::K<2u, float, 4>(float*)"  # one argument apart


def test_recipe_errors_name_the_file(tmp_config):
    spec = load_spec(tmp_config, "decode_kernel")
    with pytest.raises(AnnotateError, match="missing key 'flags'"):
        identity.parse_recipe({"route": "x", "sources": []}, spec, "identity.yaml")
    with pytest.raises(AnnotateError, match="UPSTREAM:PATH"):
        identity.parse_recipe({"route": "x", "sources": [], "flags": [], "includes": ["nope"]}, spec, "identity.yaml")
    r = identity.parse_recipe({"route": "x", "sources": ["a.cu"], "flags": ["-O3"], "generate": "same"}, spec, "i")
    assert r.generated == spec.generated and r.arch == {}


def test_every_catalog_kernel_has_a_recipe(tmp_config):
    from annotate.harness.spec import kernel_names

    for name in kernel_names(tmp_config):
        r = identity.load_recipe(load_spec(tmp_config, name))
        assert r.sources and any("{arch}" in f for f in r.flags), name


def test_python_string_constant_reads_without_running(tmp_path):
    p = tmp_path / "m.py"
    p.write_text('import nonexistent_module\nT = r"""<{{ x }}>"""\nN = 3\n')
    assert identity.python_string_constant(p, "T") == "<{{ x }}>"
    with pytest.raises(AnnotateError, match="no string constant N"):
        identity.python_string_constant(p, "N")


# ---- generate: upstream templates rendered into the staged sources ---------------------------------
def _generated_spec(tmp_path, generate):
    from annotate.config import REPO_ROOT, Config
    from annotate.upstreams import checkout_root, get_upstream

    root = tmp_path / "vendor_kernels"
    spec = dict(MINIMAL_SPEC, sources=["launcher.cu", "kernel.cu"], generate=generate)
    make_kernel(root, spec)
    (root / "upstreams.yaml").write_text((REPO_ROOT / "vendor_kernels" / "upstreams.yaml").read_text())
    cfg = dataclasses.replace(Config.load(environ={}, cache_dir=tmp_path / "cache"), repo_root=root.parent)
    csrc = checkout_root(cfg, get_upstream(cfg, "flashinfer")) / "csrc"
    csrc.mkdir(parents=True)
    (csrc / "inst.jinja").write_text("template void run<{{ dim }}, {{ mode }}>({{ t }});\n")
    return cfg


def test_generate_renders_upstream_templates_into_the_build(tmp_path):
    gen = {"values": {"dim": 128, "t": "Params", "flag": True},
           "files": [{"template": "flashinfer:csrc/inst.jinja", "output": "kernel.cu", "values": {"mode": "kNone"}}]}
    cfg = _generated_spec(tmp_path, gen)
    spec = load_spec(cfg, "toy")
    assert spec.generated[0].values == {"dim": "128", "t": "Params", "flag": "true", "mode": "kNone"}
    files = staging.staged_files(spec, cfg)
    assert files["kernel.cu"] == "template void run<128, kNone>(Params);"  # jinja drops the last newline, as upstream's does
    assert "kernel.cu" not in {p.name for p in spec.source_files()}  # not a file of the folder
    with pytest.raises(ValueError, match="needs the Config"):
        staging.staged_files(spec)
    staged = staging.stage_sources(spec, tmp_path / "src", cfg)
    assert staged["kernel.cu"].read_text() == files["kernel.cu"]
    other = dataclasses.replace(spec, generated=(dataclasses.replace(spec.generated[0], values={
        **spec.generated[0].values, "dim": "64"}),))
    key = lambda s: staging.build_key(pins={}, files=staging.staged_files(s, cfg), flags=[], arch="90",
                                      torch_version="t", cuda_version="c")
    assert key(spec) != key(other)  # the rendered text is part of the key


@pytest.mark.parametrize("generate, message", [
    ({"files": [{"output": "kernel.cu"}]}, "needs `template`"),
    ({"files": [{"template": "csrc/inst.jinja", "output": "kernel.cu"}]}, "UPSTREAM:PATH"),
    ({"files": [{"template": "flashinfer:a", "output": "../kernel.cu"}]}, "plain file name"),
    ({"files": "x"}, "a list `files`"),
])
def test_generate_errors_name_the_spec(tmp_path, generate, message):
    raw = dict(MINIMAL_SPEC, sources=["launcher.cu"], generate=generate)
    folder = make_kernel(tmp_path / "vk", raw)
    with pytest.raises(AnnotateError, match=message):
        parse_spec(yaml.safe_load((folder / "spec.yaml").read_text()), folder)


def test_missing_template_says_fetch(tmp_path):
    gen = {"files": [{"template": "flashinfer:csrc/gone.jinja", "output": "kernel.cu"}]}
    cfg = _generated_spec(tmp_path, gen)
    with pytest.raises(AnnotateError, match="is missing") as exc:
        staging.staged_files(load_spec(cfg, "toy"), cfg)
    assert "annotate fetch flashinfer" in exc.value.hint


# ---- CI: the real cards -------------------------------------------------------------------------------
@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["rmsnorm", "decode_kernel"])
def test_identity_cards_say_identical(pinned, real_config, kernel):
    from test_sass_records import need_tools

    need_tools()
    pytest.importorskip("tvm_ffi")  # FlashInfer's csrc/*.cu include tvm_ffi_utils.h (pyproject extra `sass`)
    pinned("flashinfer")
    card = identity.identity_card(real_config, load_spec(real_config, kernel), "90")
    committed = identity.load_card(identity.card_path(real_config, kernel, "90"))
    assert card.identical, [(k.name, k.status, k.diff[:3]) for k in card.kernels if k.status != "identical"]
    assert [(k.mangled, k.status, k.instructions) for k in card.kernels] == \
        [(k.mangled, k.status, k.instructions) for k in committed.kernels]
    assert card.upstream_arch == "90a" and "-use_fast_math" in card.upstream_flags and "-use_fast_math" in card.harness_flags

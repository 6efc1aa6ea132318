"""Spec loading: the real catalog parses, malformed specs fail with the file and key named."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from annotate.config import REPO_ROOT, Config
from annotate.errors import AnnotateError, UsageError
from annotate.harness.spec import (
    REFERENCE_API, kernel_names, load_reference, load_spec, load_spec_dir, load_specs,
)

from harness_support import MINIMAL_SPEC, make_kernel

# The catalog is the folders: adding a kernel is adding vendor_kernels/<name>/spec.yaml.
CATALOG = sorted(p.parent.name for p in (REPO_ROOT / "vendor_kernels").glob("*/spec.yaml"))


def _config(tmp_path, kernels_root):
    cfg = Config.load(environ={}, cache_dir=tmp_path / "cache")
    return dataclasses.replace(cfg, repo_root=kernels_root.parent)


def test_catalog_is_the_folders_with_a_spec(tmp_path, tmp_config):
    assert "decode_kernel" in kernel_names(tmp_config)  # a name the command-line contract fixes
    root = tmp_path / "vendor_kernels"
    make_kernel(root, name="toy")
    make_kernel(root, dict(MINIMAL_SPEC, name="toy2"), name="toy2")
    (root / "results").mkdir()
    (root / "notes").mkdir()
    (root / "notes" / "spec.yml").write_text("")
    assert kernel_names(_config(tmp_path, root)) == ["toy", "toy2"]  # not common/, results/, notes/


@pytest.mark.parametrize("name", CATALOG)
def test_catalog_spec_loads(tmp_config, name):
    spec = load_spec(tmp_config, name)
    assert spec.name == name
    assert spec.symbols, "a harness names the upstream kernels it runs"
    assert spec.check and spec.time
    for shape in (*spec.check, *spec.time):
        assert shape["dtype"] in spec.dtypes
        spec.tolerance_for(shape["dtype"])
    for f in spec.source_files():
        assert f.is_file()
    text = "".join(f.read_text() for f in spec.source_files() if f.suffix == ".cu")
    assert "torch/extension.h" not in text, "launchers keep torch's headers out"


@pytest.mark.parametrize("name", CATALOG)
def test_catalog_reference_module_has_the_api(tmp_config, name):
    pytest.importorskip("torch")
    mod = load_reference(load_spec(tmp_config, name))
    for fn in REFERENCE_API:
        assert callable(getattr(mod, fn))


def test_catalog_covers_the_edges(tmp_config):
    dec = load_spec(tmp_config, "decode_kernel")
    lens = [s.get("kv_len") for s in dec.check if s.get("kv_len")]
    assert 1 in lens and any(n % 16 and n > 16 for n in lens)
    groups = {s["num_qo_heads"] // s["num_kv_heads"] for s in dec.check}
    assert {1, 2, 4, 8} <= groups
    assert {s["variant"] for s in dec.check} == {"single", "batch"}
    pre = load_spec(tmp_config, "prefill_kernel")
    assert {s["causal"] for s in pre.check} == {True, False}
    fa = load_spec(tmp_config, "flash_fwd")
    assert {s["causal"] for s in fa.time} == {True, False}


def test_minimal_spec_and_defaults(tmp_path):
    root = tmp_path / "vendor_kernels"
    make_kernel(root)
    cfg = _config(tmp_path, root)
    spec = load_spec(cfg, "toy")
    assert spec.std == "c++17" and spec.bound == "memory" and spec.trials == 2
    assert spec.check[0].params == {"dtype": "float16", "n": 3}
    assert [i.path for i in spec.includes] == ["include"]
    assert [p.name for p in spec.source_files()][-1] == "annotate_launcher.h"
    check, time = spec.select(["edge", "big"])
    assert [s.name for s in check] == ["edge"] and [s.name for s in time] == ["big"]
    with pytest.raises(UsageError, match="unknown shape"):
        spec.select(["nope"])


def test_unknown_kernel_is_a_usage_error(tmp_config):
    with pytest.raises(UsageError, match="unknown kernel 'nope'") as exc:
        load_spec(tmp_config, "nope")
    assert "decode_kernel" in exc.value.hint


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("sources"), "missing key 'sources'"),
    (lambda d: d.update(tolerance={}), "no tolerance for dtype"),
    (lambda d: d["tolerance"].update(float16={"rel_l2": 1e-3}), "needs numbers rel_l2 and max_abs"),
    (lambda d: d.update(check=[{"name": "a"}, {"name": "a"}]), "duplicate shape name"),
    (lambda d: d.update(check=[{"n": 1}]), "mapping with a 'name'"),
    (lambda d: d.update(name="other"), "differs from its folder"),
    (lambda d: d.update(sources=["missing.cu"]), "'missing.cu' does not exist"),
    (lambda d: d.update(includes=["no-colon"]), "UPSTREAM:PATH"),
    (lambda d: d.update(bound="fast"), "bound must be"),
    (lambda d: d.update(check=[{"name": "a", "dtype": "float64"}]), "not in dtypes"),
])
def test_malformed_specs_name_file_and_problem(tmp_path, mutate, message):
    data = yaml.safe_load(yaml.safe_dump(MINIMAL_SPEC))
    mutate(data)
    root = tmp_path / "vendor_kernels"
    folder = make_kernel(root, data)
    cfg = _config(tmp_path, root)
    with pytest.raises(AnnotateError, match=message) as exc:
        load_spec(cfg, "toy")
    assert str(folder / "spec.yaml") in exc.value.message


def test_invalid_yaml(tmp_path):
    root = tmp_path / "vendor_kernels"
    folder = make_kernel(root)
    (folder / "spec.yaml").write_text("name: [unclosed\n")
    with pytest.raises(AnnotateError, match="invalid YAML"):
        load_spec(_config(tmp_path, root), "toy")


def test_no_list_of_kernels_outside_the_folders():
    """device_run.sh takes the catalog from vendor_kernels/*/spec.yaml, and the launchers and
    bindings keep no copy of what the common headers provide."""
    script = (REPO_ROOT / "vendor_kernels" / "device_run.sh").read_text()
    assert [k for k in CATALOG if k in script] == []
    copied = ("ANNOTATE_DEFINE_ERROR_STRING", "switch (dtype_code)", "numel() ?", "cudaGetErrorString")
    for f in (REPO_ROOT / "vendor_kernels").glob("*/*"):
        if f.suffix in (".cu", ".cuh", ".cpp", ".h") and f.parent.name != "common":
            text = f.read_text()
            assert [c for c in copied if c in text] == [], f


def test_a_copy_outside_the_catalog_loads_under_any_folder_name(tmp_path):
    root = tmp_path / "vendor_kernels"
    folder = make_kernel(root)
    copy = tmp_path / "my-edited-toy"
    copy.mkdir()
    for f in folder.iterdir():
        (copy / f.name).write_text(f.read_text())
    spec = load_spec_dir(copy)
    assert spec.name == "toy" and spec.folder == copy
    with pytest.raises(AnnotateError, match="differs from its folder"):
        load_spec_dir(copy, catalog=True)
    with pytest.raises(AnnotateError, match="cannot read"):
        load_spec_dir(tmp_path / "nowhere")


def test_load_specs_lists_every_folder(tmp_path):
    root = tmp_path / "vendor_kernels"
    make_kernel(root, name="toy")
    data = dict(MINIMAL_SPEC, name="toy2")
    make_kernel(root, data, name="toy2")
    assert [s.name for s in load_specs(_config(tmp_path, root))] == ["toy", "toy2"]

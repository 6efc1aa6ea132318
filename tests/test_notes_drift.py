"""Drift: the annotations resolved at another version. Unit tests on a tiny tree for every
class (moved, changed, renamed, moved-file, removed), then the real fixture: annotations
written against FlashInfer v0.6.9 (tests/data/drift/) checked against v0.6.17."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from annotate.config import Config
from annotate.notes.check import StaleExplainer, run_check
from annotate.notes.drift import run_drift
from annotate.index.api import index_directory
from tests.notes_support import NORM_SRC, index_of, write_annotation

UP, PATH = "demo", "include/demo/norm.cuh"
DATA = Path(__file__).parent / "data" / "drift"
# a local FlashInfer git mirror, named as a user names it (ANNOTATE_URL_FLASHINFER); CI has none
MIRROR = Path(os.environ.get("ANNOTATE_URL_FLASHINFER", "/nonexistent"))


def _write_tree(root: Path, files: dict[str, str]) -> Path:
    for p, t in files.items():
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text(t)
    return root


def _fp(index, name):
    return next(s for s in index.all_symbols() if s.qualified_name == name).fingerprint


def test_drift_classes_on_a_tiny_tree(tmp_config, tmp_path):
    a = index_of({(UP, PATH): NORM_SRC})
    # version B: two lines inserted on top (everything moves), warp_reduce's body changes,
    # Launch(int) renamed to Start (same body), Launch(float) moved to another file,
    # RMSNormKernel renamed with a small edit (similar body), helper gone entirely.
    b_src = ("// new\n// lines\n" + NORM_SRC
             .replace("x += shfl_xor(x, 8);", "x += shfl_xor(x, 8);\n  x += shfl_xor(x, 4);")
             .replace("void Launch(int n) {", "void Start(int n) {")
             .replace("void Launch(float x) {\n  helper(x);\n}\n", "")
             .replace("RMSNormKernel(T* input", "RmsNormKernelV2(T* input")
             .replace("output[threadIdx.x] = input[threadIdx.x];", "output[threadIdx.x] = input[threadIdx.x] * 2;"))
    b_root = _write_tree(tmp_path / "b", {PATH: b_src, "include/demo/launch.cuh":
                                          "namespace demo {\nnamespace norm {\nvoid Launch(float x) {\n  helper(x);\n}\n}\n}\n"})
    root = tmp_path / "annotations"
    extra = "\nfloat gone(int z) {\n  float acc = z * 3.5f;\n  acc -= 1;\n  return acc;\n}\n"
    a = index_of({(UP, PATH): NORM_SRC.replace("}  // namespace norm", extra + "}  // namespace norm")})
    write_annotation(root, UP, PATH, f"""upstream: {UP}
path: {PATH}
functions:
  demo::norm::RMSNormKernel:
    fingerprint: {_fp(a, "demo::norm::RMSNormKernel")}
  demo::norm::warp_reduce:
    fingerprint: {_fp(a, "demo::norm::warp_reduce")}
    notes:
      - at: "x += shfl_xor(x, 16);"
        text: first butterfly step
  demo::norm::Launch:
    signature: int n
    fingerprint: {next(s for s in a.all_symbols() if s.signature.endswith("Launch(int n)")).fingerprint}
  demo::norm::Launch@float:
    signature: float x
    fingerprint: {next(s for s in a.all_symbols() if s.signature.endswith("Launch(float x)")).fingerprint}
  demo::norm::gone:
    fingerprint: {_fp(a, "demo::norm::gone")}
""", config=tmp_config)
    report = run_check(tmp_config, a, root)
    assert report.exit_code(strict=True) == 0, [d.format() for d in report.diagnostics]
    run_drift(tmp_config, report, a, ref=None, tree=str(b_root), git_dir=None, upstream=None,
              indexer=index_directory)
    kinds = {(e.name, e.kind) for e in report.drift}
    assert kinds == {("demo::norm::RMSNormKernel", "renamed"), ("demo::norm::warp_reduce", "changed"),
                     ("demo::norm::Launch", "renamed"), ("demo::norm::Launch", "moved-file"),
                     ("demo::norm::gone", "removed")}, kinds
    by = {(e.name, e.kind): e for e in report.drift}
    ren = by[("demo::norm::Launch", "renamed")]
    assert ren.candidates[0][0] == "demo::norm::Start" and ren.candidates[0][3] == 1.0  # same fingerprint
    sim = by[("demo::norm::RMSNormKernel", "renamed")]
    assert sim.candidates[0][0] == "demo::norm::RmsNormKernelV2" and 0.6 <= sim.candidates[0][3] < 1.0
    ch = by[("demo::norm::warp_reduce", "changed")]
    assert "+  x += shfl_xor(x, 4);" in ch.diff and ch.new_lines[0] == ch.old_lines[0] + 2
    assert ch.anchors == [("x += shfl_xor(x, 16);", 18, 20, 1)]  # the note follows its text
    assert by[("demo::norm::Launch", "moved-file")].new_path == "include/demo/launch.cuh"
    codes = {d.code for d in report.drift_diagnostics}
    assert codes == {"drift-renamed", "drift-changed", "drift-moved-file", "drift-removed"}
    assert report.exit_code() == 1  # a removed function is an error at that version
    assert all(e.to_json()["kind"] for e in report.drift)


def test_drift_moved_only(tmp_config, tmp_path):
    a = index_of({(UP, PATH): NORM_SRC})
    b_root = _write_tree(tmp_path / "b", {PATH: "// one more line\n" + NORM_SRC})
    root = tmp_path / "annotations"
    write_annotation(root, UP, PATH, f"upstream: {UP}\npath: {PATH}\nfunctions:\n  demo::norm::warp_reduce:\n"
                     f"    fingerprint: {_fp(a, 'demo::norm::warp_reduce')}\n", config=tmp_config)
    report = run_check(tmp_config, a, root)
    run_drift(tmp_config, report, a, ref=None, tree=str(b_root), git_dir=None, upstream=None,
              indexer=index_directory)
    (e,) = report.drift
    assert (e.kind, e.old_lines, e.new_lines) == ("moved", (17, 21), (18, 22))
    assert report.drift_diagnostics[0].severity == "info" and report.exit_code(strict=True) == 0


def test_drift_without_a_mirror_is_a_clear_error(tmp_config, tmp_path):
    a = index_of({(UP, PATH): NORM_SRC})
    root = tmp_path / "annotations"
    write_annotation(root, UP, PATH, f"upstream: {UP}\npath: {PATH}\nfunctions:\n  demo::norm::warp_reduce: {{}}\n",
                     config=tmp_config)
    report = run_check(tmp_config, a, root)
    run_drift(tmp_config, report, a, ref="v1", tree=None, git_dir=None, upstream=None, indexer=index_directory)
    (d,) = report.drift_diagnostics
    assert d.code == "drift" and "ANNOTATE_URL_DEMO" in d.message


# ---- the real fixture: FlashInfer v0.6.9 → v0.6.17 ---------------------------------------

EXPECTED = {
    "flashinfer::norm::RMSNormKernel": "unchanged",
    "flashinfer::norm::compute_layernorm": "moved",
    "flashinfer::norm::generalLayerNorm": "changed",
    "flashinfer::norm::dispatch_layernorm_type": "moved",
    "flashinfer::norm::LayerNorm": "moved",
    "flashinfer::cp_async::commit_group": "unchanged",
    "flashinfer::cp_async::wait_group": "unchanged",
    "flashinfer::cp_async::load_128b": "unchanged",
    "flashinfer::cp_async::pred_load_128b": "unchanged",
}
FIXTURE_PATHS = ["include/flashinfer/norm.cuh", "include/flashinfer/cp_async.cuh"]


@pytest.fixture(scope="session")
def flashinfer_069(real_config) -> Path:
    """v0.6.9's include/ from the PyPI wheel flashinfer-python==0.6.9 (byte-identical to the
    tag's include/: 194 of 194 files have the tag's git blob ids)."""
    base = real_config.notes_fixtures_dir() / "flashinfer-0.6.9"
    marker = base / "include" / "flashinfer" / "norm.cuh"
    if marker.is_file():
        return base
    wheels = real_config.notes_fixtures_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    whl = next(wheels.glob("flashinfer_python-0.6.9-*.whl"), None)
    if whl is None:
        out = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "flashinfer-python==0.6.9",
                              "-d", str(wheels)], capture_output=True, text=True)
        whl = next(wheels.glob("flashinfer_python-0.6.9-*.whl"), None)
        if whl is None:
            msg = f"cannot download flashinfer-python==0.6.9: {out.stderr[-500:]}"
            pytest.fail(msg) if os.environ.get("CI") else pytest.skip(msg)
    prefix = "flashinfer/data/include/"
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            if name.startswith(prefix) and not name.endswith("/"):
                t = base / "include" / name[len(prefix):]
                t.parent.mkdir(parents=True, exist_ok=True)
                t.write_bytes(z.read(name))
    return base


def _check_fixture(config, root_069):
    from annotate.index.api import index_directory

    a = index_directory("flashinfer", root_069, FIXTURE_PATHS)
    report = run_check(config, a, DATA / "annotations", explainer=StaleExplainer(config))
    assert report.counts()["ok"] == 9 and report.exit_code(strict=True) == 0, [d.format() for d in report.diagnostics]
    return a, report


def _assert_expected(report):
    got = {e.name: e.kind for e in report.drift}
    assert got == EXPECTED
    by = {e.name: e for e in report.drift}
    g = by["flashinfer::norm::generalLayerNorm"]
    assert "1.0f / (*scale_orig_quant_per_tensor)" in g.diff
    lost = [a for a in g.anchors if a[2] is None]
    assert len(lost) == 1 and "scale_orig_quant_per_tensor" in lost[0][0]
    assert by["flashinfer::norm::LayerNorm"].new_lines[0] - by["flashinfer::norm::LayerNorm"].old_lines[0] == 20
    assert report.exit_code() == 0  # moved and changed are warnings/info, nothing was removed


@pytest.mark.slow
def test_drift_069_to_pin_from_wheel(real_config, pinned, flashinfer_069):
    from annotate.index.api import index_directory

    config, against = real_config, pinned("flashinfer")  # the pin is v0.6.17
    a, report = _check_fixture(config, flashinfer_069)
    run_drift(config, report, a, ref=None, tree=str(against), git_dir=None, upstream=None, indexer=index_directory)
    _assert_expected(report)


@pytest.mark.slow
@pytest.mark.skipif(not (MIRROR / "HEAD").exists(), reason="ANNOTATE_URL_FLASHINFER does not name a local git mirror")
def test_drift_069_to_0617_from_git_history(tmp_path, flashinfer_069):
    """The same through real history: ANNOTATE_URL_FLASHINFER names a local mirror and
    `--against v0.6.17` is a tag in it."""
    from annotate.index.api import index_directory

    config = Config.load(environ={"ANNOTATE_URL_FLASHINFER": str(MIRROR)}, cache_dir=tmp_path / "cache")
    a, report = _check_fixture(config, flashinfer_069)
    run_drift(config, report, a, ref="v0.6.17", tree=None, git_dir=None, upstream=None, indexer=index_directory)
    _assert_expected(report)
    assert all(e.target.startswith("v0.6.17 (a0a6b019b9b2)") for e in report.drift)

"""On a GPU (the device machine; never in CI): the real upstream kernel through the harness,
and the must-fail cases with a real launch: a skipped launch and a wrong reference are caught."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from annotate.config import Config  # noqa: E402
from annotate.harness import runner  # noqa: E402
from annotate.harness.build import ensure_built  # noqa: E402
from annotate.harness.spec import load_reference, load_spec  # noqa: E402


@pytest.fixture(scope="module")
def rms():
    cfg = Config.load()
    spec = load_spec(cfg, "rmsnorm")
    ext, _ = ensure_built(cfg, spec, runner.gpu_arch())
    return spec, load_reference(spec), ext


def _shape(spec, name):
    return next(s for s in spec.check if s.name == name)


def test_real_launch_passes(rms):
    spec, ref, ext = rms
    entry = runner._check_once(spec, ref, ext, _shape(spec, "b7-d4096"), 123)
    assert entry["passed"], entry


def test_skipped_launch_is_caught(rms):
    spec, ref, ext = rms

    class Skip:
        def __getattr__(self, name):
            return lambda *a, **k: None  # the launch does nothing

    entry = runner._check_once(spec, ref, Skip(), _shape(spec, "b7-d4096"), 123)
    assert not entry["passed"]
    assert entry["outputs"][0]["nonfinite"] == 7 * 4096


def test_wrong_reference_is_caught(rms, monkeypatch):
    spec, ref, ext = rms
    good = ref.reference
    monkeypatch.setattr(ref, "reference", lambda shape, inputs: {"out": good(shape, inputs)["out"] * 1.01})
    entry = runner._check_once(spec, ref, ext, _shape(spec, "b7-d4096"), 123)
    assert not entry["passed"]
    assert entry["outputs"][0]["worst_index"]


def test_same_seed_same_inputs(rms):
    spec, ref, _ = rms
    shape = _shape(spec, "b7-d4096")
    a = ref.make_inputs(shape, runner._gen(99), "cuda")["x"]
    b = ref.make_inputs(shape, runner._gen(99), "cuda")["x"]
    c = ref.make_inputs(shape, runner._gen(100), "cuda")["x"]
    assert torch.equal(a, b) and not torch.equal(a, c)

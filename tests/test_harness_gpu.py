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
from annotate.harness.jit import ensure_built  # noqa: E402
from annotate.harness.spec import load_reference, load_spec  # noqa: E402


@pytest.fixture(scope="module")
def rms():
    cfg = Config.load()
    spec = load_spec(cfg, "rmsnorm")
    ext, _ = ensure_built(cfg, spec, runner.gpu_arch())
    return runner.Harness(spec, load_reference(spec), ext)


def _shape(h, name):
    return next(s for s in h.spec.check if s.name == name)


def test_real_launch_passes(rms):
    c = runner.verify_once(rms, _shape(rms, "b7-d4096"), 123)
    assert c.passed, c


def test_skipped_launch_is_caught(rms):
    class Skip:
        def __getattr__(self, name):
            return lambda *a, **k: None  # the launch does nothing

    c = runner.verify_once(runner.Harness(rms.spec, rms.ref, Skip()), _shape(rms, "b7-d4096"), 123)
    assert not c.passed
    assert c.outputs[0].nonfinite == 7 * 4096


def test_wrong_reference_is_caught(rms, monkeypatch):
    good = rms.ref.reference
    monkeypatch.setattr(rms.ref, "reference", lambda shape, inputs: {"out": good(shape, inputs)["out"] * 1.01})
    c = runner.verify_once(rms, _shape(rms, "b7-d4096"), 123)
    assert not c.passed
    assert c.outputs[0].worst_index


def test_same_seed_same_inputs(rms):
    shape = _shape(rms, "b7-d4096")
    a = rms.ref.make_inputs(shape, rms.generator(99), "cuda")["x"]
    b = rms.ref.make_inputs(shape, rms.generator(99), "cuda")["x"]
    c = rms.ref.make_inputs(shape, rms.generator(100), "cuda")["x"]
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_one_timed_shape_end_to_end(rms):
    """check + time + assemble on the device: rates against measured peaks, a passing record."""
    lines = []
    timings, peaks, fatal = runner.run_timings(rms, (rms.spec.time[-1],), base_seed=5, log=lines.append)
    assert fatal is None and peaks.copy_gbps > 100 and peaks.bf16_tflops > 10
    (t,) = timings
    assert t.check.passed and t.kernel.median_us > 0 and t.pct_peak > 0 and t.torch_us > 0

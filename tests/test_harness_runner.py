"""The run's steps without a GPU: check (real reference module, a stand-in extension on the
CPU), the rates of a timed shape, and the record assembled from them. The same steps run on
the GPU in tests/test_harness_gpu.py with the real kernel."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from annotate.harness import runner  # noqa: E402
from annotate.harness.record import BuildInfo, Device, Peaks, RunRecord, Timing  # noqa: E402
from annotate.harness.spec import load_reference, load_spec  # noqa: E402


class RightNorm:
    """Computes RMSNorm the way the kernel should, on the CPU."""

    def rmsnorm(self, x, w, out, eps, stream):
        x64 = x.double()
        out.copy_((x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w.double()).to(out.dtype))


class SkipsTheLastRow(RightNorm):
    def rmsnorm(self, x, w, out, eps, stream):
        super().rmsnorm(x[:-1], w, out[:-1], eps, stream)


class CudaError:
    def rmsnorm(self, *args):
        raise RuntimeError("CUDA error: misaligned address\nCUDA kernel errors might be asynchronously reported")


@pytest.fixture
def rms(tmp_config):
    spec = load_spec(tmp_config, "rmsnorm")
    return spec, load_reference(spec)


def _harness(rms, ext):
    spec, ref = rms
    return runner.Harness(spec, ref, ext, device="cpu")


def test_checks_pass_with_a_right_kernel(rms):
    h = _harness(rms, RightNorm())
    shapes = h.spec.check[:3]
    lines = []
    checks, fatal = runner.run_checks(h, shapes, base_seed=7, trials=2, log=lines.append)
    assert fatal is None and len(checks) == 6 and all(c.passed for c in checks)
    assert [c.trial for c in checks] == [0, 1] * 3
    assert len({c.seed for c in checks}) == 6  # fresh inputs every trial
    again, _ = runner.run_checks(h, shapes, base_seed=7, trials=2, log=lambda s: None)
    assert again == checks  # the base seed replays the same inputs (and the same errors)
    assert all("ok" in ln for ln in lines if ln.startswith("  check"))


def test_an_unwritten_row_fails_and_is_named(rms):
    h = _harness(rms, SkipsTheLastRow())
    shape = next(s for s in h.spec.check if s.name == "b7-d4096")
    c = runner.verify_once(h, shape, seed=1)
    assert not c.passed and c.error is None
    (o,) = c.outputs
    assert o.nonfinite == 4096 and o.worst_index[0] == 6  # the poisoned row
    assert math.isinf(o.rel_l2)


def test_a_cuda_error_stops_the_run_and_is_recorded(rms):
    h = _harness(rms, CudaError())
    lines = []
    checks, fatal = runner.run_checks(h, h.spec.check, base_seed=7, trials=3, log=lines.append)
    assert len(checks) == 1 and checks[0].fatal and not checks[0].passed
    assert checks[0].error == "CUDA error: misaligned address"
    assert fatal == f"{h.spec.check[0].name}: CUDA error: misaligned address"
    assert any("stopping after a CUDA error" in ln for ln in lines)


def test_timed_result_rates_and_headline_peak(rms):
    spec, _ = rms
    shape = spec.time[0]
    peaks = Peaks(copy_gbps=3000.0, bf16_tflops=800.0, copy_bytes=1 << 30, matmul_n=8192)
    kt = Timing(median_us=10.0, p10_us=9.0, p90_us=11.0, reps=100)
    bt = Timing(median_us=25.0, p10_us=24.0, p90_us=26.0, reps=100)
    check = runner.verify_once(_harness(rms, RightNorm()), spec.check[0], seed=3)
    t = runner.timed_result(shape, 5, kt, bt, {"bytes": 30_000_000, "flops": 8_000_000_000}, peaks, "memory", check)
    assert t.gbps == pytest.approx(3000.0) and t.pct_peak_bw == pytest.approx(100.0)
    assert t.tflops == pytest.approx(800.0) and t.pct_peak_flops == pytest.approx(100.0)
    assert t.pct_peak == t.pct_peak_bw and t.torch_us == 25.0 and t.torch_vs_kernel == 2.5
    compute = runner.timed_result(shape, 5, kt, None, {"bytes": 3_000_000, "flops": 8_000_000_000}, peaks,
                                  "compute", check)
    assert compute.pct_peak == pytest.approx(100.0) and compute.pct_peak_bw == pytest.approx(10.0)
    assert compute.torch is None and compute.torch_vs_kernel is None
    j = compute.to_json()
    assert j["torch"] is None and j["TFLOPs"] == 800.0 and j["kernel"]["median_us"] == 10.0


def test_assemble_passes_only_when_everything_passed(rms, tmp_config):
    spec, _ = rms
    good = runner.Harness(spec, rms[1], RightNorm(), device="cpu")
    checks, _ = runner.run_checks(good, spec.check[:1], 1, 1, log=lambda s: None)
    bad, _ = runner.run_checks(runner.Harness(spec, rms[1], SkipsTheLastRow(), device="cpu"),
                               spec.check[1:2], 1, 1, log=lambda s: None)
    build = BuildInfo(name="m", key="k" * 64, directory=str(tmp_config.builds_dir() / "rmsnorm-x"), cached=True)
    common = dict(pins={"flashinfer": "a" * 40}, created="2026-01-01T00:00:00Z", seed=1,
                  command="annotate run rmsnorm --seed 1", device=Device(name="cpu"), build=build,
                  timings=(), peaks=None, fatal=None)
    ok = runner.assemble(tmp_config, spec, checks=checks, **common)
    assert ok.passed and ok.kernel == "rmsnorm" and ok.symbols == spec.symbols
    assert ok.build.directory == "$ANNOTATE_CACHE_DIR/builds/rmsnorm-x"
    assert ok.command == "annotate run rmsnorm --seed 1"
    assert not runner.assemble(tmp_config, spec, checks=checks + bad, **common).passed
    assert not runner.assemble(tmp_config, spec, checks=checks, **{**common, "fatal": "x: CUDA error"}).passed
    # what is written reads back as the same record
    assert RunRecord.from_json(ok.to_json()).to_json() == ok.to_json()
    failed = runner.assemble(tmp_config, spec, checks=checks + bad, **common)
    assert failed.first_failure().startswith(f"{bad[0].shape} (seed {bad[0].seed}): out[")


def test_run_kernel_without_a_gpu_says_so_before_any_work(tmp_config, monkeypatch):
    from annotate.errors import NoGPUError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    spec = load_spec(tmp_config, "rmsnorm")
    with pytest.raises(NoGPUError, match="--compile-only"):
        runner.run_kernel(tmp_config, spec, runner.RunOptions())
    assert not tmp_config.results_dir().exists()

"""Timing on the GPU: CUDA events around each launch, after warm-up, L2 flushed before each
timed launch, median of many. Also the device's own ceilings, measured in the same run."""

from __future__ import annotations

import statistics

from annotate.harness.record import Peaks, Timing


class L2Flusher:
    """Writes a buffer twice the size of L2 so that the next launch finds its inputs in DRAM."""

    def __init__(self, device=None):
        import torch

        props = torch.cuda.get_device_properties(device or torch.cuda.current_device())
        l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
        self.buf = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")

    def __call__(self) -> None:
        self.buf.zero_()


def bench(fn, flush: L2Flusher | None, warmup: int = 5, min_reps: int = 20, max_reps: int = 200,
          budget_ms: float = 400.0) -> Timing:
    """Median time of fn() in µs, with CUDA events, after warm-up and with L2 flushed before each."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    # Estimate one launch to size the repetition count to the time budget.
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    est = max(s.elapsed_time(e), 1e-3)
    reps = int(min(max_reps, max(min_reps, budget_ms / est)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush is not None:
            flush()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends))
    q = lambda f: times[min(len(times) - 1, int(f * len(times)))]  # noqa: E731
    return Timing(median_us=statistics.median(times), p10_us=q(0.1), p90_us=q(0.9), reps=reps)


def measure_peaks(copy_bytes: int = 2**30, matmul_n: int = 8192) -> Peaks:
    """The two ceilings METHOD.md asks for, on random data: a device-to-device copy and a
    large bf16 matmul."""
    import torch

    src = torch.randint(0, 2**31 - 1, (copy_bytes // 4,), dtype=torch.int32, device="cuda")
    dst = torch.empty_like(src)
    t_copy = bench(lambda: dst.copy_(src), None, warmup=3, min_reps=10, max_reps=30, budget_ms=200)
    del src, dst
    a = torch.randn(matmul_n, matmul_n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(matmul_n, matmul_n, device="cuda", dtype=torch.bfloat16)
    t_mm = bench(lambda: a @ b, None, warmup=3, min_reps=10, max_reps=30, budget_ms=300)
    del a, b
    torch.cuda.empty_cache()
    return Peaks(copy_gbps=2 * copy_bytes / (t_copy.median_us * 1e-6) / 1e9,
                 bf16_tflops=2 * matmul_n**3 / (t_mm.median_us * 1e-6) / 1e12,
                 copy_bytes=copy_bytes, matmul_n=matmul_n)

"""The float64 references against naive loops (small shapes, CPU), and the catalog's
reference.py files against those references."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from annotate.config import REPO_ROOT  # noqa: E402
from annotate.harness import refs  # noqa: E402
from annotate.harness.spec import load_reference, load_spec  # noqa: E402

CATALOG = sorted(p.parent.name for p in (REPO_ROOT / "vendor_kernels").glob("*/spec.yaml"))


def _naive_attention(q, k, v, causal, scale):
    lq, hq, d = q.shape
    lk, hkv, _ = k.shape
    g = hq // hkv
    out = torch.zeros(lq, hq, d, dtype=torch.float64)
    lse = torch.zeros(hq, lq, dtype=torch.float64)
    for h in range(hq):
        kh = h // g
        for i in range(lq):
            scores = []
            for j in range(lk):
                if causal and j > i + lk - lq:
                    continue
                scores.append((j, float((q[i, h].double() * k[j, kh].double()).sum()) * scale))
            m = max(s for _, s in scores)
            z = sum(math.exp(s - m) for _, s in scores)
            for j, s in scores:
                out[i, h] += math.exp(s - m) / z * v[j, kh].double()
            lse[h, i] = m + math.log(z)
    return out, lse


@pytest.mark.parametrize("lq, lk, hq, hkv, causal", [
    (1, 1, 1, 1, False), (3, 5, 4, 2, True), (5, 5, 2, 2, True), (4, 7, 6, 3, False), (1, 9, 8, 1, True),
])
def test_attention_matches_naive(lq, lk, hq, hkv, causal):
    g = torch.Generator().manual_seed(lq * 100 + lk)
    q = torch.randn(lq, hq, 8, generator=g, dtype=torch.float64)
    k = torch.randn(lk, hkv, 8, generator=g, dtype=torch.float64)
    v = torch.randn(lk, hkv, 8, generator=g, dtype=torch.float64)
    out, lse = refs.attention(q, k, v, causal=causal, sm_scale=0.3, return_lse=True, max_chunk_elems=7)
    n_out, n_lse = _naive_attention(q, k, v, causal, 0.3)
    torch.testing.assert_close(out, n_out, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(lse, n_lse, rtol=1e-12, atol=1e-12)


def test_attention_rejects_bad_grouping():
    with pytest.raises(ValueError, match="multiple"):
        refs.attention(torch.zeros(1, 3, 4), torch.zeros(2, 2, 4), torch.zeros(2, 2, 4), causal=False, sm_scale=1)


def test_rmsnorm_matches_naive():
    x = torch.randn(3, 7, dtype=torch.float64)
    w = torch.randn(7, dtype=torch.float64)
    got = refs.rmsnorm(x, w, 1e-6)
    for r in range(3):
        rms = math.sqrt(sum(float(t) ** 2 for t in x[r]) / 7 + 1e-6)
        for c in range(7):
            assert abs(float(got[r, c]) - float(x[r, c]) / rms * float(w[c])) < 1e-12


def test_silu_and_mul_matches_naive():
    x = torch.randn(2, 10, dtype=torch.float64)
    got = refs.silu_and_mul(x)
    for r in range(2):
        for c in range(5):
            a, b = float(x[r, c]), float(x[r, c + 5])
            assert abs(float(got[r, c]) - a / (1 + math.exp(-a)) * b) < 1e-12


def test_merge_state_equals_attention_over_the_union():
    """Merging the states of attention over two key sets = attention over both (base-2 lse)."""
    g = torch.Generator().manual_seed(5)
    q = torch.randn(3, 4, 16, generator=g, dtype=torch.float64)
    k = torch.randn(20, 4, 16, generator=g, dtype=torch.float64)
    v = torch.randn(20, 4, 16, generator=g, dtype=torch.float64)
    oa, la = refs.attention(q, k[:7], v[:7], causal=False, sm_scale=0.25, return_lse=True)
    ob, lb = refs.attention(q, k[7:], v[7:], causal=False, sm_scale=0.25, return_lse=True)
    o, lse = refs.attention(q, k, v, causal=False, sm_scale=0.25, return_lse=True)
    log2e = 1 / math.log(2)
    vm, sm = refs.merge_state(oa, la.T * log2e, ob, lb.T * log2e)
    torch.testing.assert_close(vm, o, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(sm, lse.T * log2e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lq, lk", [(1, 1), (3, 3), (2, 7), (5, 9), (4, 4)])
def test_causal_pairs(lq, lk):
    brute = sum(1 for i in range(lq) for j in range(lk) if j <= i + lk - lq)
    assert refs.causal_pairs(lq, lk) == brute


def test_paged_decode_reference_reads_through_the_page_table(tmp_config):
    """The batch reference gathers pages via indices/indptr/last_page_len: check it against
    attention over K/V laid out contiguously in request order."""
    spec = load_spec(tmp_config, "decode_kernel")
    ref = load_reference(spec)
    shape = next(s for s in spec.check if s.name == "batch-ragged-page16")
    inputs = ref.make_inputs(shape, torch.Generator().manual_seed(11), "cpu")
    lens = inputs["kv_lens"]
    ptr = inputs["indptr"].tolist()
    assert ptr[-1] == inputs["k_pages"].shape[0]
    assert sorted(inputs["indices"].tolist()) == list(range(ptr[-1]))  # a permutation of pages
    want = ref.reference(shape, inputs)["o"]
    for r, n in enumerate(lens):
        pages = inputs["indices"][ptr[r]:ptr[r + 1]].tolist()
        ps = inputs["k_pages"].shape[1]
        assert inputs["last_page_len"][r] == n - (len(pages) - 1) * ps
        k = torch.cat([inputs["k_pages"][p] for p in pages])[:n]
        v = torch.cat([inputs["v_pages"][p] for p in pages])[:n]
        o = refs.attention(inputs["q"][r:r + 1], k, v, causal=False, sm_scale=1 / math.sqrt(128))[0]
        torch.testing.assert_close(want[r], o)


@pytest.mark.parametrize("kernel", CATALOG)
def test_reference_modules_on_small_shapes(tmp_config, kernel):
    """Every check shape small enough for the CPU: inputs, outputs and reference agree in shape,
    the cost is positive, and the PyTorch baseline (where there is one) agrees with the reference."""
    spec = load_spec(tmp_config, kernel)
    ref = load_reference(spec)
    for shape in spec.check[:4]:
        inputs = ref.make_inputs(shape, torch.Generator().manual_seed(0), "cpu")
        outputs = ref.make_outputs(shape, inputs)
        want = ref.reference(shape, inputs)
        assert set(want) <= set(outputs)
        for name, w in want.items():
            assert w.dtype == torch.float64 and tuple(w.shape) == tuple(outputs[name].shape)
            assert torch.isfinite(w).all()
        cost = ref.cost(shape)
        assert cost["bytes"] > 0 and cost["flops"] > 0
        fn = ref.baseline(shape, inputs)
        if fn is None or "q" in inputs and inputs["q"].dtype == torch.float16:
            continue  # CPU SDPA in fp16 is not the point; the GPU run times it
        got = fn()
        got = got[0] if isinstance(got, tuple) else got
        first = next(iter(want))
        tol = spec.tolerance_for(shape["dtype"])
        err = (got.double() - want[first]).norm() / want[first].norm().clamp_min(1e-30)
        assert float(err) < 10 * tol.rel_l2

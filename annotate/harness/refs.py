"""float64 reference math shared by the kernels' reference.py files (imports torch on use).

Each function is written for clarity and checked against a naive loop in
tests/test_harness_refs.py; they run on any device (the GPU in a run, the CPU in tests).
"""

from __future__ import annotations

import math

DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32"}


def torch_dtype(name: str):
    import torch

    try:
        return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"unsupported dtype '{name}'") from None


def randn(shape, dtype, gen, device, scale: float = 1.0):
    import torch

    return (torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * scale).to(dtype)


def attention(q, k, v, *, causal: bool, sm_scale: float, return_lse: bool = False,
              max_chunk_elems: int = 1 << 26):
    """Softmax attention in float64 with grouped KV heads.

    q [Lq, Hq, D], k/v [Lk, Hkv, D]; query head h reads KV head h // (Hq // Hkv). The causal
    mask aligns to the bottom right: query i sees keys j <= i + Lk - Lq (FlashInfer and FA2).
    Returns out [Lq, Hq, D] (and lse [Hq, Lq], natural log).
    """
    import torch

    q = q.to(torch.float64)
    k = k.to(torch.float64)
    v = v.to(torch.float64)
    lq, hq, d = q.shape
    lk, hkv, _ = k.shape
    if hq % hkv:
        raise ValueError(f"{hq} query heads are not a multiple of {hkv} KV heads")
    group = hq // hkv
    out = torch.empty((lq, hq, d), dtype=torch.float64, device=q.device)
    lse = torch.empty((hq, lq), dtype=torch.float64, device=q.device)
    mask = None
    if causal:
        qi = torch.arange(lq, device=q.device).unsqueeze(1)
        kj = torch.arange(lk, device=q.device).unsqueeze(0)
        mask = kj > qi + (lk - lq)  # True = masked
    heads_per_chunk = max(1, min(hq, max_chunk_elems // max(1, lq * lk)))
    for h0 in range(0, hq, heads_per_chunk):
        h1 = min(hq, h0 + heads_per_chunk)
        kv_idx = torch.arange(h0, h1, device=q.device) // group
        qh = q[:, h0:h1, :].permute(1, 0, 2)  # [h, Lq, D]
        kh = k[:, kv_idx, :].permute(1, 0, 2)  # [h, Lk, D]
        vh = v[:, kv_idx, :].permute(1, 0, 2)
        s = torch.matmul(qh, kh.transpose(1, 2)) * sm_scale  # [h, Lq, Lk]
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        p = torch.exp(s - m)
        denom = p.sum(dim=-1, keepdim=True)
        out[:, h0:h1, :] = torch.matmul(p / denom, vh).permute(1, 0, 2)
        lse[h0:h1, :] = (m + torch.log(denom)).squeeze(-1)
    return (out, lse) if return_lse else out


def rmsnorm(x, weight, eps: float):
    """x [B, d] * rsqrt(mean(x^2) + eps) * weight, in float64."""
    import torch

    x = x.to(torch.float64)
    w = weight.to(torch.float64)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w


def silu_and_mul(x):
    """x [N, 2d] -> silu(x[:, :d]) * x[:, d:], in float64."""
    import torch

    x = x.to(torch.float64)
    d = x.shape[-1] // 2
    a, b = x[..., :d], x[..., d:]
    return a / (1.0 + torch.exp(-a)) * b


def merge_state(v_a, s_a, v_b, s_b):
    """Merge two attention states whose log-sum-exps are base 2 (FlashInfer's convention).

    v [L, H, D], s [L, H]. Returns (v_merged, s_merged) in float64.
    """
    import torch

    v_a, v_b = v_a.to(torch.float64), v_b.to(torch.float64)
    s_a, s_b = s_a.to(torch.float64), s_b.to(torch.float64)
    s_max = torch.maximum(s_a, s_b)
    wa = torch.exp2(s_a - s_max)
    wb = torch.exp2(s_b - s_max)
    v = (wa.unsqueeze(-1) * v_a + wb.unsqueeze(-1) * v_b) / (wa + wb).unsqueeze(-1)
    return v, torch.log2(wa + wb) + s_max


def causal_pairs(lq: int, lk: int) -> int:
    """How many (query, key) pairs a bottom-right causal mask keeps."""
    total = 0
    off = lk - lq
    for i in range(lq):
        total += max(0, min(lk, i + off + 1))
    return total


def default_sm_scale(head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim)


def sdpa_layout(x):
    """[L, H, D] -> contiguous [1, H, L, D] for torch.nn.functional.scaled_dot_product_attention."""
    return x.permute(1, 0, 2).unsqueeze(0).contiguous()

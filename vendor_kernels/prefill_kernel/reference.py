"""prefill_kernel: inputs, launch, float64 reference, PyTorch baseline and cost per shape."""

import torch

from annotate.harness import refs

HEAD_DIM = 128
SCRATCH_BYTES = 32 << 20


def make_inputs(shape, gen, device):
    dt = refs.torch_dtype(shape["dtype"])
    hq, hkv = int(shape["num_qo_heads"]), int(shape["num_kv_heads"])
    lq, lk = int(shape["qo_len"]), int(shape["kv_len"])
    return {
        "q": refs.randn((lq, hq, HEAD_DIM), dt, gen, device),
        "k": refs.randn((lk, hkv, HEAD_DIM), dt, gen, device),
        "v": refs.randn((lk, hkv, HEAD_DIM), dt, gen, device),
        "tmp": torch.empty(SCRATCH_BYTES // 2, dtype=dt, device=device),
    }


def make_outputs(shape, inputs):
    return {"o": torch.empty_like(inputs["q"])}


def launch(ext, shape, inputs, outputs, stream):
    ext.single_prefill(inputs["q"], inputs["k"], inputs["v"], outputs["o"], inputs["tmp"],
                       bool(shape["causal"]), refs.default_sm_scale(HEAD_DIM), stream)


def reference(shape, inputs):
    return {"o": refs.attention(inputs["q"], inputs["k"], inputs["v"], causal=bool(shape["causal"]),
                                sm_scale=refs.default_sm_scale(HEAD_DIM))}


def baseline(shape, inputs):
    import torch.nn.functional as F

    causal = bool(shape["causal"])
    if causal and int(shape["qo_len"]) != int(shape["kv_len"]):
        return None  # SDPA's is_causal aligns to the top left; equal lengths only
    q, k, v = (refs.sdpa_layout(inputs[n]) for n in ("q", "k", "v"))
    scale = refs.default_sm_scale(HEAD_DIM)
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)


def cost(shape):
    hq, hkv = int(shape["num_qo_heads"]), int(shape["num_kv_heads"])
    lq, lk = int(shape["qo_len"]), int(shape["kv_len"])
    pairs = refs.causal_pairs(lq, lk) if shape["causal"] else lq * lk
    return {"bytes": 2 * (2 * lq * hq * HEAD_DIM + 2 * lk * hkv * HEAD_DIM),
            "flops": 4 * hq * HEAD_DIM * pairs}

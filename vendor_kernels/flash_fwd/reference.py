"""flash_fwd: inputs, launch, float64 reference, PyTorch baseline and cost per shape."""

import torch

from annotate.harness import refs

HEAD_DIM = 128


def _dims(shape):
    return (int(shape["batch"]), int(shape["seqlen_q"]), int(shape["seqlen_k"]),
            int(shape["num_heads"]), int(shape["num_heads_k"]))


def make_inputs(shape, gen, device):
    dt = refs.torch_dtype(shape["dtype"])
    b, lq, lk, h, hk = _dims(shape)
    return {
        "q": refs.randn((b, lq, h, HEAD_DIM), dt, gen, device),
        "k": refs.randn((b, lk, hk, HEAD_DIM), dt, gen, device),
        "v": refs.randn((b, lk, hk, HEAD_DIM), dt, gen, device),
    }


def make_outputs(shape, inputs):
    b, lq, _, h, _ = _dims(shape)
    return {"o": torch.empty_like(inputs["q"]),
            "lse": torch.empty((b, h, lq), dtype=torch.float32, device=inputs["q"].device)}


def launch(ext, shape, inputs, outputs, stream):
    ext.flash_fwd(inputs["q"], inputs["k"], inputs["v"], outputs["o"], outputs["lse"],
                  bool(shape["causal"]), refs.default_sm_scale(HEAD_DIM), stream)


def reference(shape, inputs):
    outs, lses = [], []
    for i in range(inputs["q"].shape[0]):
        o, lse = refs.attention(inputs["q"][i], inputs["k"][i], inputs["v"][i], causal=bool(shape["causal"]),
                                sm_scale=refs.default_sm_scale(HEAD_DIM), return_lse=True)
        outs.append(o)
        lses.append(lse)
    return {"o": torch.stack(outs), "lse": torch.stack(lses)}


def baseline(shape, inputs):
    import torch.nn.functional as F

    causal = bool(shape["causal"])
    _, lq, lk, _, _ = _dims(shape)
    if causal and lq != lk:
        return None  # SDPA's is_causal aligns to the top left; equal lengths only
    q, k, v = (inputs[n].transpose(1, 2).contiguous() for n in ("q", "k", "v"))
    scale = refs.default_sm_scale(HEAD_DIM)
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)


def cost(shape):
    b, lq, lk, h, hk = _dims(shape)
    pairs = refs.causal_pairs(lq, lk) if shape["causal"] else lq * lk
    return {"bytes": b * 2 * (2 * lq * h * HEAD_DIM + 2 * lk * hk * HEAD_DIM) + b * h * lq * 4,
            "flops": b * 4 * h * HEAD_DIM * pairs}

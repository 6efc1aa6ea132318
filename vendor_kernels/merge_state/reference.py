"""merge_state: inputs, launch, float64 reference, PyTorch baseline and cost per shape."""

import torch

from annotate.harness import refs


def make_inputs(shape, gen, device):
    dt = refs.torch_dtype(shape["dtype"])
    n, h, d = int(shape["seq_len"]), int(shape["num_heads"]), int(shape["head_dim"])
    return {
        "v_a": refs.randn((n, h, d), dt, gen, device),
        "s_a": refs.randn((n, h), torch.float32, gen, device, scale=4.0),
        "v_b": refs.randn((n, h, d), dt, gen, device),
        "s_b": refs.randn((n, h), torch.float32, gen, device, scale=4.0),
    }


def make_outputs(shape, inputs):
    return {"v": torch.empty_like(inputs["v_a"]), "s": torch.empty_like(inputs["s_a"])}


def launch(ext, shape, inputs, outputs, stream):
    i = inputs
    ext.merge_state(i["v_a"], i["s_a"], i["v_b"], i["s_b"], outputs["v"], outputs["s"], stream)


def reference(shape, inputs):
    v, s = refs.merge_state(inputs["v_a"], inputs["s_a"], inputs["v_b"], inputs["s_b"])
    return {"v": v, "s": s}


def baseline(shape, inputs):
    va, sa, vb, sb = inputs["v_a"], inputs["s_a"], inputs["v_b"], inputs["s_b"]

    def merged():
        m = torch.maximum(sa, sb)
        wa, wb = torch.exp2(sa - m), torch.exp2(sb - m)
        tot = wa + wb
        v = (va.float() * (wa / tot).unsqueeze(-1) + vb.float() * (wb / tot).unsqueeze(-1)).to(va.dtype)
        return v, torch.log2(tot) + m

    return merged


def cost(shape):
    n, h, d = int(shape["seq_len"]), int(shape["num_heads"]), int(shape["head_dim"])
    return {"bytes": 3 * n * h * d * 2 + 3 * n * h * 4, "flops": 3 * n * h * d}

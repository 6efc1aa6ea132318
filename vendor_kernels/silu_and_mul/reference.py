"""silu_and_mul: inputs, launch, float64 reference, PyTorch baseline and cost per shape."""

import torch

from annotate.harness import refs


def make_inputs(shape, gen, device):
    dt = refs.torch_dtype(shape["dtype"])
    n, d = int(shape["tokens"]), int(shape["d"])
    if (d * torch.tensor([], dtype=dt).element_size()) % 16:
        raise ValueError(f"{shape.name}: d = {d} is not a whole number of 16-byte vectors; "
                         "act_and_mul_kernel's vector loads would be misaligned")
    return {"x": refs.randn((n, 2 * d), dt, gen, device)}


def make_outputs(shape, inputs):
    x = inputs["x"]
    return {"out": torch.empty((x.shape[0], x.shape[1] // 2), dtype=x.dtype, device=x.device)}


def launch(ext, shape, inputs, outputs, stream):
    ext.silu_and_mul(outputs["out"], inputs["x"], stream)


def reference(shape, inputs):
    return {"out": refs.silu_and_mul(inputs["x"])}


def baseline(shape, inputs):
    import torch.nn.functional as F

    x = inputs["x"]
    d = x.shape[1] // 2
    return lambda: F.silu(x[:, :d]) * x[:, d:]


def cost(shape):
    n, d = int(shape["tokens"]), int(shape["d"])
    return {"bytes": 2 * 3 * n * d, "flops": 5 * n * d}

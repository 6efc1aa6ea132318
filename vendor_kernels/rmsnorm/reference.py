"""rmsnorm: inputs, launch, float64 reference, PyTorch baseline and cost per shape."""

import torch

from annotate.harness import refs

EPS = 1e-6


def make_inputs(shape, gen, device):
    dt = refs.torch_dtype(shape["dtype"])
    b, d = int(shape["batch"]), int(shape["d"])
    return {"x": refs.randn((b, d), dt, gen, device), "weight": refs.randn((d,), dt, gen, device)}


def make_outputs(shape, inputs):
    return {"out": torch.empty_like(inputs["x"])}


def launch(ext, shape, inputs, outputs, stream):
    ext.rmsnorm(inputs["x"], inputs["weight"], outputs["out"], EPS, stream)


def reference(shape, inputs):
    return {"out": refs.rmsnorm(inputs["x"], inputs["weight"], EPS)}


def baseline(shape, inputs):
    import torch.nn.functional as F

    x, w = inputs["x"], inputs["weight"]
    return lambda: F.rms_norm(x, (x.shape[-1],), w, EPS)


def cost(shape):
    b, d = int(shape["batch"]), int(shape["d"])
    return {"bytes": 2 * (2 * b * d + d), "flops": 4 * b * d}

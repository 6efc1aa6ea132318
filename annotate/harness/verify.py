"""Verification: poison outputs, compare against a float64 reference, find the worst element.

Pure functions over torch tensors; they run on the CPU too, which is how the tests check that
a wrong reference or a skipped launch (an output left NaN-poisoned) is caught.
"""

from __future__ import annotations

import hashlib

from annotate.harness.record import Comparison
from annotate.harness.spec import Tolerance


def poison(tensor) -> None:
    """Fill an output with NaN (floating) or an impossible value (integer) before a launch, so
    that an element the kernel never writes cannot pass."""
    import torch

    if tensor.is_floating_point():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).min)


def compare(name: str, got, want, tol: Tolerance) -> Comparison:
    """Relative L2 and max abs error of `got` (any dtype, any device) against `want` (float64)."""
    import torch

    if tuple(got.shape) != tuple(want.shape):
        raise ValueError(f"{name}: output shape {tuple(got.shape)} != reference shape {tuple(want.shape)}")
    g = got.detach().to(torch.float64)
    w = want.detach().to(device=g.device, dtype=torch.float64)
    finite = torch.isfinite(g)
    nonfinite = int((~finite).sum().item())
    diff = (g - w).abs()
    diff = torch.where(finite, diff, torch.full_like(diff, float("inf")))
    numel = g.numel()
    if numel == 0:
        return Comparison(name, 0.0, 0.0, (), 0.0, 0.0, 0, 0, tol, True)
    flat = int(torch.argmax(diff.reshape(-1)).item())
    worst = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), g.shape))
    max_abs = float(diff.reshape(-1)[flat].item())
    if nonfinite:
        rel = float("inf")
    else:
        denom = float(torch.linalg.vector_norm(w).item())
        num = float(torch.linalg.vector_norm(g - w).item())
        rel = num / denom if denom > 0 else (0.0 if num == 0 else float("inf"))
    passed = nonfinite == 0 and rel <= tol.rel_l2 and max_abs <= tol.max_abs
    return Comparison(name, rel, max_abs, worst, float(g.reshape(-1)[flat].item()),
                      float(w.reshape(-1)[flat].item()), nonfinite, numel, tol, passed)


def trial_seed(base_seed: int, kernel: str, shape: str, trial: int) -> int:
    """A distinct, reproducible seed for each (kernel, shape, trial) under one base seed."""
    h = hashlib.sha256(f"{base_seed}:{kernel}:{shape}:{trial}".encode()).digest()
    return int.from_bytes(h[:7], "little")


def new_base_seed() -> int:
    import secrets

    return secrets.randbelow(2**31)

"""The verification logic, including the cases that must fail: a check that cannot fail is a
defect. Runs on the CPU with the real reference modules of the catalog."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from annotate.harness.spec import Shape, Tolerance, load_reference, load_spec  # noqa: E402
from annotate.harness.verify import compare, poison, trial_seed  # noqa: E402

TOL = Tolerance(rel_l2=2e-3, max_abs=1e-2)


def test_close_output_passes():
    want = torch.randn(64, 128, dtype=torch.float64)
    got = want.to(torch.float16)
    c = compare("o", got, want, TOL)
    assert c.passed and c.nonfinite == 0 and c.rel_l2 < 1e-3


def test_wrong_values_fail_and_name_the_worst_element():
    want = torch.zeros(4, 5, 6, dtype=torch.float64) + 1.0
    got = want.clone().to(torch.float32)
    got[2, 3, 4] = 1.5
    c = compare("o", got, want, TOL)
    assert not c.passed
    assert c.worst_index == (2, 3, 4)
    assert c.worst_got == 1.5 and c.worst_want == 1.0
    assert "o[2, 3, 4]" in c.describe()


def test_skipped_launch_is_caught():
    want = torch.randn(8, 16, dtype=torch.float64)
    out = torch.empty(8, 16, dtype=torch.float16)
    poison(out)  # the harness does this before every launch; a kernel that never runs leaves it
    c = compare("o", out, want, TOL)
    assert not c.passed
    assert c.nonfinite == out.numel() and math.isinf(c.rel_l2)


def test_one_unwritten_element_is_caught():
    want = torch.randn(1000, dtype=torch.float64)
    out = torch.empty(1000, dtype=torch.float16)
    poison(out)
    out[:-1] = want[:-1].to(torch.float16)  # "kernel" forgets the last element
    c = compare("o", out, want, TOL)
    assert not c.passed and c.nonfinite == 1 and c.worst_index == (999,)


def test_poison_integer_and_bool():
    t = torch.zeros(3, dtype=torch.int32)
    poison(t)
    assert (t == torch.iinfo(torch.int32).min).all()
    b = torch.zeros(3, dtype=torch.bool)
    poison(b)
    assert b.all()


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="shape"):
        compare("o", torch.zeros(3), torch.zeros(4, dtype=torch.float64), TOL)


def test_tolerance_edges():
    want = torch.ones(100, dtype=torch.float64)
    got = want * (1 + 1.9e-3)
    assert compare("o", got, want, TOL).passed
    assert not compare("o", want * (1 + 2.1e-3), want, TOL).passed
    assert not compare("o", want + 0.011, want, Tolerance(rel_l2=1.0, max_abs=1e-2)).passed


def test_zero_reference():
    z = torch.zeros(5, dtype=torch.float64)
    assert compare("o", z.float(), z, TOL).passed
    assert not compare("o", z.float() + 1, z, TOL).passed


def test_trial_seeds_are_reproducible_and_distinct():
    a = trial_seed(7, "rmsnorm", "b1", 0)
    assert a == trial_seed(7, "rmsnorm", "b1", 0)
    others = {trial_seed(7, "rmsnorm", "b1", 1), trial_seed(8, "rmsnorm", "b1", 0),
              trial_seed(7, "rmsnorm", "b2", 0), trial_seed(7, "silu_and_mul", "b1", 0)}
    assert a not in others and len(others) == 4


# ---- the must-fail cases through the catalog's own reference modules (CPU) ------------------
def _rmsnorm_case(tmp_config, shape_name="b7-d4096", seed=1):
    spec = load_spec(tmp_config, "rmsnorm")
    ref = load_reference(spec)
    shape = next(s for s in spec.check if s.name == shape_name)
    gen = torch.Generator().manual_seed(seed)
    inputs = ref.make_inputs(shape, gen, "cpu")
    outputs = ref.make_outputs(shape, inputs)
    return spec, ref, shape, inputs, outputs


def _kernel_stand_in(inputs, eps):
    # What a correct kernel produces: float32 math, rounded to the output dtype.
    x, w = inputs["x"].float(), inputs["weight"].float()
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w).to(inputs["x"].dtype)


def test_correct_output_passes_through_reference_module(tmp_config):
    spec, ref, shape, inputs, outputs = _rmsnorm_case(tmp_config)
    for t in outputs.values():
        poison(t)
    outputs["out"].copy_(_kernel_stand_in(inputs, ref.EPS))
    want = ref.reference(shape, inputs)
    c = compare("out", outputs["out"], want["out"], spec.tolerance_for(shape["dtype"]))
    assert c.passed, c.describe()


def test_skipped_launch_fails_through_reference_module(tmp_config):
    spec, ref, shape, inputs, outputs = _rmsnorm_case(tmp_config)
    for t in outputs.values():
        poison(t)
    # launch skipped
    want = ref.reference(shape, inputs)
    c = compare("out", outputs["out"], want["out"], spec.tolerance_for(shape["dtype"]))
    assert not c.passed and c.nonfinite == outputs["out"].numel()


@pytest.mark.parametrize("wrong", ["no-weight", "mean-not-rms", "transposed-weight"])
def test_deliberately_wrong_reference_is_caught(tmp_config, wrong):
    spec, ref, shape, inputs, outputs = _rmsnorm_case(tmp_config, "b33-d12-vec4")
    outputs["out"].copy_(_kernel_stand_in(inputs, ref.EPS))
    x = inputs["x"].double()
    w = inputs["weight"].double()
    if wrong == "no-weight":
        bad = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + ref.EPS)
    elif wrong == "mean-not-rms":
        bad = x / x.abs().mean(-1, keepdim=True) * w
    else:
        bad = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + ref.EPS) * w.flip(0)
    c = compare("out", outputs["out"], bad, spec.tolerance_for(shape["dtype"]))
    assert not c.passed


def test_attention_reference_catches_a_wrong_mask(tmp_config):
    spec = load_spec(tmp_config, "prefill_kernel")
    ref = load_reference(spec)
    shape = next(s for s in spec.check if s.name == "q17-kv300-causal")
    inputs = ref.make_inputs(shape, torch.Generator().manual_seed(3), "cpu")
    want = ref.reference(shape, inputs)["o"]
    # A "kernel" that aligned the causal mask to the top left instead of the bottom right.
    from annotate.harness import refs

    lq, lk = inputs["q"].shape[0], inputs["k"].shape[0]
    top_left = refs.attention(torch.cat([inputs["q"], inputs["q"].new_zeros(lk - lq, *inputs["q"].shape[1:])]),
                              inputs["k"], inputs["v"], causal=True, sm_scale=1 / math.sqrt(128))[:lq]
    c = compare("o", top_left.to(torch.float16), want, spec.tolerance_for("float16"))
    assert not c.passed


def test_shape_object_errors_name_the_shape():
    s = Shape("x", {"dtype": "float16"})
    with pytest.raises(Exception, match="shape 'x' has no 'n'"):
        s["n"]

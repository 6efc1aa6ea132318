from . import env as jit_env
from .core import gen_jit_spec


def gen_norm_module():
    return gen_jit_spec(
        "norm",
        [jit_env.FLASHINFER_CSRC_DIR / "norm.cu", jit_env.FLASHINFER_CSRC_DIR / "norm_binding.cu"],
    )


def gen_decode_module(backend, head_dim):
    return gen_customize_decode_module(backend, f"decode_{head_dim}", head_dim)


def gen_customize_decode_module(backend, uri, head_dim):
    if backend == "fa2":
        templates = ["decode_config.jinja", "decode_inst.jinja"]
        files = ["decode.cu", "decode_binding.cu"]
    else:
        templates = []
        files = ["decode_sm90.cu", "decode_sm90_binding.cu"]
    return gen_jit_spec(uri, files + templates)

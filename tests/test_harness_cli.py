"""`annotate run` on the command line: --list, errors, the one-line no-GPU message, and
--compile-only for every catalog kernel (marked nvcc)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from annotate.cli import main
from annotate.config import REPO_ROOT

# The catalog is the folders: adding a kernel is adding vendor_kernels/<name>/spec.yaml.
CATALOG = sorted(p.parent.name for p in (REPO_ROOT / "vendor_kernels").glob("*/spec.yaml"))


def test_list(capsys):
    assert main(["run", "--list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in data] == CATALOG and "decode_kernel" in CATALOG
    dec = next(d for d in data if d["name"] == "decode_kernel")
    assert "flashinfer::SingleDecodeWithKVCacheKernel" in dec["symbols"]
    assert main(["run", "--list"]) == 0
    assert "decode_kernel" in capsys.readouterr().out


def test_unknown_kernel_and_shape(capsys):
    assert main(["run", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown kernel 'nope'" in err and "decode_kernel" in err
    assert main(["run", "rmsnorm", "--shapes", "b1-d128,zzz"]) == 2
    assert "unknown shape(s): zzz" in capsys.readouterr().err
    assert main(["run"]) == 2


def test_no_gpu_is_one_line_exit_2(monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["run", "decode_kernel"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("annotate: error: no CUDA GPU")
    assert "--compile-only" in err[0]


def test_no_gpu_from_a_fresh_process():
    """The real entry point, as a user runs it: no traceback, exit 2."""
    code = ("import torch, sys; torch.cuda.is_available = lambda: False; "
            "from annotate.cli import main; sys.exit(main(['run', 'rmsnorm']))")
    pytest.importorskip("torch")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert "no CUDA GPU" in res.stderr


def test_cli_module_imports_nothing_heavy():
    code = ("import sys; import annotate.cli, annotate.harness.cli; "
            "from annotate.cli import build_parser; build_parser(); "
            "heavy = [m for m in ('torch', 'tree_sitter', 'git', 'ruamel', 'platformdirs', 'rich') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def _torch_cuda_headers() -> str | None:
    """None when torch's CUDA headers are importable for a compile; else the reason."""
    from annotate.errors import AnnotateError
    from annotate.harness.toolchain import torch_include_dirs

    try:
        torch_include_dirs(require_cuda=True)
    except AnnotateError as exc:
        return exc.message
    return None


def test_run_command_is_recorded_as_given():
    from annotate.cli import build_parser
    from annotate.harness.cli import command_line

    args = build_parser().parse_args(["run", "rmsnorm", "--shapes", "b1-d128", "--seed", "5", "--no-time", "--json"])
    assert command_line(args) == "annotate run rmsnorm --shapes b1-d128 --seed 5 --no-time"


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("kernel", CATALOG)
def test_compile_only(kernel, pinned, real_config, capsys):
    """nvcc alone compiles each launcher against the pinned headers and reports resources."""
    from annotate.errors import AnnotateError
    from annotate.harness.spec import load_spec
    from annotate.harness.toolchain import find_toolchain, system_header_dirs

    try:
        tc = find_toolchain(real_config.environ)
    except AnnotateError:
        pytest.skip("nvcc not found")
    spec = load_spec(real_config, kernel)
    for upstream in sorted({spec.upstream, *(i.upstream for i in spec.includes)}):
        pinned(upstream)
    if spec.torch_headers:
        reason = _torch_cuda_headers()
        if reason:
            pytest.skip(f"{kernel}'s launcher includes torch's c10/cuda and ATen/cuda headers: " + reason)
    try:
        system_header_dirs(spec.system_headers, tc)
    except AnnotateError as exc:
        if os.environ.get("CI"):
            pytest.fail(exc.message)  # CI installs them (torch's nvidia-cublas / nvidia-curand)
        pytest.skip(exc.message)
    assert main(["run", kernel, "--compile-only", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kernel"] == kernel and data["kernels"]
    for k in data["kernels"]:
        assert k["registers"] and k["registers"] > 0
        assert k["stack"] is not None and k["spill_stores"] is not None
    for src in spec.sources:
        assert os.path.isfile(data["outputs"][src])
    # The kernel the harness is named for is among the compiled entry points (the other
    # symbols may be device functions it inlines, e.g. flash::compute_attn).
    names = " ".join(k["name"] for k in data["kernels"])
    assert spec.symbols[0].rsplit("::", 1)[-1] in names, (spec.symbols[0], names[:300])

"""`annotate run KERNEL --source DIR` without a GPU: SASS comparison on sample text, the two
copies checked side by side on the CPU with stand-in extensions, the comparison of their
records, and errors reported against the learner's files."""

from __future__ import annotations

import dataclasses
import shutil
import time

import pytest
import yaml

from annotate.errors import AnnotateError, UsageError
from annotate.harness.sassdiff import diff_builds, diff_kernel, parse_sass

SASS = """
Fatbin elf code:
================
arch = sm_90
code version = [1,8]

	code for sm_90
		Function : _ZN10flashinfer6KernelILj8EEEvPf
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
                                                                          /* 0x000fe20000000800 */
        /*0010*/                   LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64] ;   /* 0x0000000004037fae */
                                                                          /* 0x000fe2000b981a04 */
        /*0020*/              @!P0 BRA 0x60 ;                             /* 0x0000000000148947 */
                                                                          /* 0x000fe20003800000 */
        /*0030*/                   LDGSTS.E.BYPASS.LTC128B.128 [R3+0x10], desc[UR4][R4.64+0x10] ;  /* 0x0000000004037fae */
                                                                          /* 0x000fe2000b981a04 */
        /*0040*/                   EXIT ;                                  /* 0x000000000000794d */
		Function : _ZN42_INTERNAL_33a620dd_11_launcher_cu_3eb233594helpEv
        /*0000*/                   RET.REL.NODEC R20 0x0 ;                 /* 0x0000000014007950 */
"""


def _edited(text: str) -> str:
    return text.replace("LDGSTS.E.BYPASS.LTC128B.128 [R3+0x10], desc[UR4][R4.64+0x10]",
                        "LDG.E.128 R8, desc[UR4][R4.64+0x10]").replace("0x33a620dd", "0xffffffff")


def test_sass_is_parsed_per_kernel_and_normalised():
    k = parse_sass(SASS)
    assert list(k) == ["_ZN10flashinfer6KernelILj8EEEvPf", "_ZN13_INTERNAL_TU_4helpEv"]
    main = k["_ZN10flashinfer6KernelILj8EEEvPf"]
    assert main.arch == "sm_90" and [i.address for i in main.instructions] == [0, 16, 32, 48, 64]
    assert main.instructions[2].text == "@!P0 BRA 0x60" and main.instructions[2].opcode == "BRA"
    assert main.mix()["LDGSTS.E.BYPASS.LTC128B.128"] == 2


def test_identical_builds_compare_identical_whatever_the_folder():
    other = SASS.replace("33a620dd", "0badf00d")  # another folder: another hash in internal names
    assert all(d.identical for d in diff_builds(parse_sass(SASS), parse_sass(other)))


def test_a_difference_names_the_first_instructions_and_the_mix():
    a = parse_sass(SASS)["_ZN10flashinfer6KernelILj8EEEvPf"]
    b = parse_sass(SASS.replace("LDGSTS.E.BYPASS.LTC128B.128 [R3+0x10], desc[UR4][R4.64+0x10]",
                                "LDG.E.128 R8, desc[UR4][R4.64+0x10]"))["_ZN10flashinfer6KernelILj8EEEvPf"]
    d = diff_kernel(a, b)
    assert not d.identical and d.instructions == (5, 5)
    assert d.first_difference[0].startswith("0x0030: LDGSTS.E.BYPASS.LTC128B.128 [R3+0x10]")
    assert "|  LDG.E.128 R8" in d.first_difference[0]
    assert dict(d.mix) == {"LDGSTS.E.BYPASS.LTC128B.128": -1, "LDG.E.128": 1}
    assert d.mix_text() == "LDG.E.128 +1, LDGSTS.E.BYPASS.LTC128B.128 −1"
    only = diff_builds(parse_sass(SASS), {})
    assert not any(x.identical for x in only) and only[0].first_difference == ("only in the first build",)


def test_template_names_are_read_off_the_mangling():
    from annotate.harness.sassdiff import template_name

    assert template_name("_ZN10flashinfer17MergeStatesKernelILj8E6__halfS1_EEvPT0_") == "flashinfer::MergeStatesKernel"
    assert template_name("_Z6kernelILi4EEvPf") == "kernel"
    assert template_name("_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsEEvv") == "flash::flash_fwd_kernel"
    assert template_name("kernel") is None and template_name("_ZN99tooLong") is None


def test_a_changed_template_argument_pairs_the_renamed_instantiations():
    """A pipeline depth of 3 instead of 2 renames the kernel (`ILj2E` -> `ILj3E`): the two
    builds' instantiations are compared with each other, not shown as absent on each side."""
    from annotate.harness.sassdiff import pair_kernels

    deeper = _edited(SASS).replace("_ZN10flashinfer6KernelILj8EEEvPf", "_ZN10flashinfer6KernelILj9EEEvPf")
    (kernel, helper) = diff_builds(parse_sass(SASS), parse_sass(deeper))
    assert kernel.name == "_ZN10flashinfer6KernelILj8EEEvPf" and kernel.other == "_ZN10flashinfer6KernelILj9EEEvPf"
    assert not kernel.identical and dict(kernel.mix) == {"LDGSTS.E.BYPASS.LTC128B.128": -1, "LDG.E.128": 1}
    assert helper.identical and helper.other is None
    assert kernel.to_json()["paired_with"] == "_ZN10flashinfer6KernelILj9EEEvPf"
    # unequal counts for one template: nothing is guessed, each stays alone
    a = ["_ZN2ns1KILi1EEEvv", "_ZN2ns1KILi2EEEvv", "_ZN2ns1GEv"]
    b = ["_ZN2ns1KILi3EEEvv", "_ZN2ns1GEv"]
    assert pair_kernels(a, b) == [(a[0], None), (a[1], None), (a[2], a[2]), (None, b[0])]
    # equal counts pair in order of appearance
    assert pair_kernels(a[:2], ["_ZN2ns1KILi5EEEvv", "_ZN2ns1KILi6EEEvv"]) == [
        (a[0], "_ZN2ns1KILi5EEEvv"), (a[1], "_ZN2ns1KILi6EEEvv")]


def test_the_comparison_text_shows_resources_and_the_pairing(tmp_path):
    from annotate.harness.ptxas import KernelResources
    from annotate.harness.sidebyside import BuildComparison, build_comparison_lines

    def res(mangled, name, regs):
        return KernelResources("launcher.cu", mangled, f"void {name}(float*)", "sm_90", regs, 1, 0, 400, 0, 0, 0)

    deeper = _edited(SASS).replace("_ZN10flashinfer6KernelILj8EEEvPf", "_ZN10flashinfer6KernelILj9EEEvPf")
    diffs = [dataclasses.replace(d, name=f"launcher:{d.name}", other=d.other and f"launcher:{d.other}")
             for d in diff_builds(parse_sass(SASS), parse_sass(deeper))]
    cmp = BuildComparison("90", "13.0", tuple(diffs),
                          (res("_ZN10flashinfer6KernelILj8EEEvPf", "flashinfer::Kernel<8u>", 40),),
                          (res("_ZN10flashinfer6KernelILj9EEEvPf", "flashinfer::Kernel<9u>", 48),), 1.0, 1.0)
    text = "\n".join(build_comparison_lines("rmsnorm", tmp_path, cmp))
    assert "flashinfer::Kernel<8u>\n    paired with the copy's flashinfer::Kernel<9u>" in text
    assert "copy   48 regs" in text and "(registers +8)" in text
    assert "SASS differs: 5 -> 5 instructions; mix: LDG.E.128 +1, LDGSTS.E.BYPASS.LTC128B.128 −1" in text
    assert text.endswith("1 of 2 kernels have identical SASS")


# ---- the copy beside the pinned original, on the CPU --------------------------------------------

torch = pytest.importorskip("torch")


class RightNorm:
    def rmsnorm(self, x, w, out, eps, stream):
        x64 = x.double()
        out.copy_((x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w.double()).to(out.dtype))


class ForgetsTheWeight(RightNorm):
    def rmsnorm(self, x, w, out, eps, stream):
        super().rmsnorm(x, torch.ones_like(w), out, eps, stream)


@pytest.fixture
def copy_folder(tmp_path, tmp_config):
    """A copy of the rmsnorm harness, as `annotate extract` lays one out (common headers inside)."""
    src = tmp_config.kernels_dir / "rmsnorm"
    dst = tmp_path / "mine"
    shutil.copytree(src, dst)
    for p in (tmp_config.kernels_dir / "common").iterdir():
        shutil.copy(p, dst / p.name)
    return dst


def test_both_copies_run_on_the_same_inputs_and_are_compared(tmp_config, copy_folder):
    from annotate.harness import runner
    from annotate.harness.record import BuildInfo, Device
    from annotate.harness.sidebyside import PINNED, load_source_spec, run_comparison_lines, side_by_side
    from annotate.harness.spec import load_reference, load_spec

    pinned = load_spec(tmp_config, "rmsnorm")
    copy = load_source_spec("rmsnorm", copy_folder)
    ha = runner.Harness(pinned, load_reference(pinned), RightNorm(), device="cpu")
    hb = runner.Harness(copy, load_reference(copy, tag="source"), ForgetsTheWeight(), device="cpu")
    opts = runner.RunOptions(shapes=("b1-d128", "b7-d4096"), do_time=False, trials=2)
    build = BuildInfo(name="x", key="k" * 64, cached=True)
    a, b, cmp = side_by_side(tmp_config, ha, hb, opts, seed=11, device=Device(name="cpu"), builds=(build, build),
                             log=lambda s: None, now=time.gmtime(0))
    assert a.source == PINNED and b.source == str(copy_folder)
    assert [c.seed for c in a.checks] == [c.seed for c in b.checks]  # the same inputs
    assert a.passed and not b.passed
    assert [c.shape for c in cmp.checks] == ["b1-d128", "b7-d4096"]
    assert all(c.pinned_passed and not c.source_passed for c in cmp.checks)
    assert cmp.pinned_passed and not cmp.source_passed and cmp.timings == ()
    text = "\n".join(run_comparison_lines(cmp))
    assert "copy FAILED" in text and "seed 11" in text
    # the record says which copy ran, and reads back
    from annotate.harness.record import RunRecord

    assert RunRecord.from_json(b.to_json()).source == str(copy_folder)
    assert "source" not in RunRecord.from_json({"kernel": "x"}).to_json()  # old records unchanged


def test_timed_shapes_line_up_with_a_ratio():
    from annotate.harness.record import CheckResult, RunRecord, TimedShape, Timing
    from annotate.harness.sidebyside import compare_records

    ok = CheckResult(shape="big", passed=True)

    def rec(us, source):
        t = TimedShape(shape="big", kernel=Timing(median_us=us, p10_us=us, p90_us=us, reps=10), pct_peak=50.0 * 10 / us,
                       check=ok)
        return RunRecord(kernel="k", seed=1, timings=(t,), passed=True, source=source)

    cmp = compare_records(rec(10.0, "pinned"), rec(12.5, "/x"))
    (t,) = cmp.timings
    assert t.ratio == pytest.approx(1.25) and t.pinned_pct == pytest.approx(50.0) and t.source_pct == pytest.approx(40.0)
    assert cmp.to_json()["timings"][0]["ratio"] == pytest.approx(1.25)


def test_a_copy_must_be_a_copy_of_that_kernel(tmp_path, copy_folder):
    from annotate.harness.sidebyside import load_source_spec

    with pytest.raises(UsageError, match="no spec.yaml"):
        load_source_spec("rmsnorm", tmp_path / "nothing")
    with pytest.raises(UsageError, match="a copy of 'rmsnorm', not of 'decode_kernel'"):
        load_source_spec("decode_kernel", copy_folder)


def test_the_folders_own_common_headers_win(tmp_path, tmp_config, copy_folder):
    from annotate.harness.spec import load_spec_dir

    (tmp_path / "common").mkdir()  # an unrelated folder named common beside the copy
    (tmp_path / "common" / "annotate_launcher.h").write_text("// not ours\n")
    (tmp_path / "common" / "other.h").write_text("// extra\n")
    raw = yaml.safe_load((copy_folder / "spec.yaml").read_text())
    raw["headers"] = ["launcher.h", "annotate_launcher.h", "annotate_binding.h"]
    (copy_folder / "spec.yaml").write_text(yaml.safe_dump(raw))
    files = load_spec_dir(copy_folder).source_files()
    mine = [p for p in files if p.name == "annotate_launcher.h"]
    assert mine == [copy_folder / "annotate_launcher.h"]


def test_compile_errors_point_at_the_learners_files(tmp_config, copy_folder):
    from annotate.harness.sidebyside import in_their_files
    from annotate.harness.spec import load_spec_dir

    spec = load_spec_dir(copy_folder)
    staged = tmp_config.builds_dir() / "rmsnorm-0123456789abcdef" / "src"
    log = tmp_config.builds_dir() / "rmsnorm-0123456789abcdef" / "launcher.ptxas.log"
    err = AnnotateError(f"compiling rmsnorm failed:\n    {staged}/kernel.cu(214): error: expected a \";\"\n"
                        "      int x = 1\n"
                        f"    {staged}/launcher.cu(9): error: identifier \"y\" is undefined",
                        hint=f"generated sources: {staged}/launcher.cu; full log: {log}")
    mapped = in_their_files(tmp_config, err, spec)
    # one line, naming the learner's file and line
    assert "\n" not in mapped.message
    assert mapped.message.startswith(f"{copy_folder}/kernel.cu:214: expected a \";\"")
    assert str(copy_folder) in mapped.message
    # the code at that line, the next error (in their file too), where the log is
    assert "the line: int x = 1" in mapped.hint
    assert f"{copy_folder}/launcher.cu(9): error: identifier" in mapped.hint
    assert str(log) in mapped.hint
    assert str(staged) not in mapped.message and str(staged) not in mapped.hint


def test_a_host_compiler_error_is_located_too(tmp_config, copy_folder):
    from annotate.harness.sidebyside import in_their_files
    from annotate.harness.spec import load_spec_dir

    spec = load_spec_dir(copy_folder)
    staged = tmp_config.builds_dir() / "rmsnorm-0123456789abcdef" / "src"
    err = AnnotateError(f"compiling rmsnorm failed:\n    {staged}/binding.cpp:12:5: error: 'foo' was not declared")
    mapped = in_their_files(tmp_config, err, spec)
    assert mapped.message.startswith(f"{copy_folder}/binding.cpp:12: 'foo' was not declared")
    # without a located line, the message says which copy failed
    plain = in_their_files(tmp_config, AnnotateError("compiling rmsnorm failed:\n    nvcc fatal   : bad"), spec)
    assert plain.message.startswith(f"compiling the copy in {copy_folder} failed")


def test_run_source_with_a_bad_folder_is_one_line(tmp_path, capsys):
    from annotate.cli import main

    assert main(["run", "rmsnorm", "--source", str(tmp_path / "none"), "--compile-only"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("annotate: error: ") and "no spec.yaml" in err and "Traceback" not in err


def test_a_copy_with_a_broken_spec_is_one_line_naming_its_line(copy_folder, capsys):
    from annotate.cli import main

    spec = copy_folder / "spec.yaml"
    lines = spec.read_text().splitlines()
    lines.insert(2, "note: a: b")  # mapping values are not allowed here
    spec.write_text("\n".join(lines) + "\n")
    assert main(["run", "rmsnorm", "--source", str(copy_folder), "--compile-only"]) == 1
    err = capsys.readouterr().err
    first, *rest = err.splitlines()
    assert first.startswith(f"annotate: error: {spec}:3:") and "invalid YAML" in first
    assert rest == [] and "Traceback" not in err



def test_timing_is_interleaved_and_each_side_keeps_its_faster_run(monkeypatch):
    """Clock ramp-up over a run (each launch a little faster than the one before) must not land
    on one side: the order is pinned, copy, copy, pinned, and each side keeps its faster run."""
    from types import SimpleNamespace

    from annotate.harness import runner, sidebyside, timing
    from annotate.harness.record import Peaks, TimedShape, Timing

    calls = []
    medians = iter([30.0, 28.0, 27.4, 27.5, 9.0, None])

    def fake_time_one(h, shape, seed, flusher, peaks, log, label=""):
        calls.append((h.spec.name, shape.name))
        us = next(medians)
        if us is None:  # a CUDA error on the copy's run
            return TimedShape(shape=shape.name), "CUDA error: an illegal memory access"
        return TimedShape(shape=shape.name, kernel=Timing(median_us=us, p10_us=us, p90_us=us, reps=1)), None

    monkeypatch.setattr(runner, "time_one", fake_time_one)
    monkeypatch.setattr(runner, "measured_peaks", lambda h, p, log: Peaks(copy_gbps=1.0, bf16_tflops=1.0))
    monkeypatch.setattr(timing, "L2Flusher", lambda: None)
    a = SimpleNamespace(spec=SimpleNamespace(name="pinned"))
    b = SimpleNamespace(spec=SimpleNamespace(name="copy"))
    shapes = (SimpleNamespace(name="s1"), SimpleNamespace(name="s2"), SimpleNamespace(name="s3"))
    (ta, tb), _peaks, fatal = sidebyside.interleaved_timings(a, b, shapes, 1, None, lambda s: None)
    assert [c[0] for c in calls[:4]] == ["pinned", "copy", "copy", "pinned"]
    assert [t.kernel.median_us for t in ta] == [27.5, 9.0]  # the faster of its two runs
    assert tb[0].kernel.median_us == 27.4 and tb[1].kernel is None  # the run that failed is kept
    # the copy's CUDA error on s2 stops all timing: s3 is never timed and the error is the copy's
    assert fatal == [None, "CUDA error: an illegal memory access"] and all(c[1] != "s3" for c in calls)

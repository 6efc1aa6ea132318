"""`annotate extract` on the real pins: the copied text is upstream's, line for line, for every
catalog kernel (those whose build renders sources from the pin's JIT templates too); rmsnorm and
decode_kernel extract to folders whose SASS is identical to the pinned build's on sm_90 (one
extraction per kernel, shared by the module); the decode copy with its cp.async pipeline one
stage deeper shows its SASS difference, and a broken rmsnorm copy its error in the learner's
file (`annotate run --source --compile-only`)."""

from __future__ import annotations

import re
import shutil

import pytest

from annotate.harness.spec import kernel_names, load_spec

PROVENANCE = re.compile(r"^// (\S+):(\d+)(?:-(\d+)) @ ([0-9a-f]{8})$")


def _index(real_config, upstream):
    from annotate.index.api import load_index

    return load_index(real_config, [upstream])


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["decode_kernel", "prefill_kernel", "flash_fwd", "rmsnorm", "silu_and_mul",
                                    "merge_state"])
def test_every_piece_is_upstreams_text_at_the_lines_it_names(real_config, pinned, kernel):
    from annotate.extract.api import kernel_text, make_plan

    spec = load_spec(real_config, kernel)
    root = pinned(spec.upstream)
    assert kernel in kernel_names(real_config)
    plan = make_plan(real_config, spec, _index(real_config, spec.upstream))
    text = kernel_text(plan, plan.reach.by_name)
    lines = text.splitlines()
    checked = 0
    for k, line in enumerate(lines):
        m = PROVENANCE.match(line)
        if not m:
            continue
        rel, lo, hi = m.group(1), int(m.group(2)), int(m.group(3) or m.group(2))
        assert plan.commit.startswith(m.group(4))
        upstream = (root / rel).read_text(encoding="utf-8").splitlines()[lo - 1:hi]
        j = k + 1
        while not lines[j].strip() == upstream[0].strip():  # a summary line may sit in between
            j += 1
            assert j < k + 8, f"{rel}:{lo}: the piece does not follow its provenance line"
        copied = lines[j:j + len(upstream)]
        # the same text, except a guard's #endif inside a piece (an empty line in the copy)
        assert [a for a, b in zip(copied, upstream) if a != b and b.strip() != "#endif"] == [], f"{rel}:{lo}-{hi}"
        checked += 1
    assert checked > 20
    assert plan.closure.lines > sum(p.last_line - p.first_line + 1 for p in plan.closure.pieces
                                    if p.index in plan.reach.by_name)


def _extract(real_config, tmp_path_factory, kernel):
    import shutil as sh

    if sh.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    from annotate.extract.api import extract
    from annotate.project import open_project

    spec = load_spec(real_config, kernel)
    project = open_project(real_config, upstreams=[spec.upstream])
    into = tmp_path_factory.mktemp(kernel) / "copy"
    report = extract(real_config, spec, into, index=project.index, annotations=project.annotations,
                     arches=("90",))
    return spec, report


@pytest.mark.slow
@pytest.mark.nvcc
def test_merge_state_through_the_command_line_quickly(real_config, pinned, tmp_path, capsys):
    """The quick end-to-end check (well under a minute from a cold build cache): the closure
    static analysis keeps (no reduction) written by `annotate extract`, its SASS identical to the
    pinned build's, then the folder compared again by `annotate run --source --compile-only`."""
    import json

    from annotate.cli import main

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    pinned("flashinfer")
    into = tmp_path / "copy"
    assert main(["extract", "merge_state", "--into", str(into), "--arch", "90", "--no-reduce", "--json", "-q"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["identical"] is True and report["reduction"]["skipped"] and report["fallback"] is None
    (b,) = report["builds"]
    assert b["arch"] == "90" and len(b["kernels"]) == 2 and all(k["identical"] for k in b["kernels"])
    assert 0 < report["extracted_lines"] < report["closure_lines"]
    text = (into / "kernel.cu").read_text()
    assert "MergeStateKernel" in text and "#include <flashinfer/" not in text
    assert main(["run", "merge_state", "--source", str(into), "--compile-only"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 kernels have identical SASS" in out and "SASS differs" not in out


@pytest.fixture(scope="module")
def rmsnorm_copy(real_config, pinned, tmp_path_factory):
    pinned("flashinfer")
    return _extract(real_config, tmp_path_factory, "rmsnorm")


@pytest.fixture(scope="module")
def decode_copy(real_config, pinned, tmp_path_factory):
    pinned("flashinfer")
    return _extract(real_config, tmp_path_factory, "decode_kernel")


@pytest.mark.slow
@pytest.mark.nvcc
def test_rmsnorm_extracts_to_identical_sass(rmsnorm_copy):
    spec, report = rmsnorm_copy
    _check_report(spec, report)
    text = (_folder(report) / "kernel.cu").read_text()
    assert "RMSNormKernel" in text and "#include <flashinfer/" not in text


@pytest.mark.slow
@pytest.mark.nvcc
def test_decode_extracts_to_identical_sass(decode_copy):
    """The decode harness compiles FlashInfer's JIT instantiation files and configs, rendered
    from the pin's templates: in the folder they are plain files including kernel.cu, and the
    copy's spec renders nothing."""
    import yaml

    spec, report = decode_copy
    _check_report(spec, report)
    folder = _folder(report)
    text = (folder / "kernel.cu").read_text()
    assert "SingleDecodeWithKVCacheKernel" in text and "BatchDecodeWithPagedKVCacheKernelMLA" not in text
    assert "#include <flashinfer/" not in text
    rendered = [g.output for g in spec.generated]
    assert rendered and all((folder / name).is_file() for name in rendered)
    upstream_include = re.compile(r"^\s*#\s*include\s*[<\"]flashinfer/", re.M)
    for name in rendered:
        own = (folder / name).read_text()
        assert not upstream_include.search(own) and "{{" not in own, name
    assert any('#include "kernel.cu"' in (folder / name).read_text() for name in rendered)
    raw = yaml.safe_load((folder / "spec.yaml").read_text())
    assert "generate" not in raw and raw["sources"] == list(spec.sources)
    assert {n for n in rendered if n not in spec.sources} <= set(raw["headers"])
    readme = (folder / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in rendered) and "JIT" in readme


def _folder(report):
    from pathlib import Path

    return Path(report.folder)


def _check_report(spec, report):
    (b,) = report.builds
    assert b.arch == "90" and b.identical and report.identical
    assert len(b.kernels) >= 2 and all(k.identical for k in b.kernels)
    assert {r.mangled for r in b.pinned} == {r.mangled for r in b.source}
    assert [(r.registers, r.smem_static, r.spill_stores) for r in b.pinned] == \
        [(r.registers, r.smem_static, r.spill_stores) for r in b.source]
    assert 0 < report.extracted_lines < report.closure_lines
    assert report.fallback is None
    folder = _folder(report)
    names = {p.name for p in folder.iterdir()}
    assert {"kernel.cu", "spec.yaml", "reference.py", "README.md", spec.binding, *spec.sources,
            "annotate_launcher.h", "annotate_binding.h", ".annotate-extract.json"} <= names
    readme = (folder / "README.md").read_text()
    assert report.commit in readme and "sm_90: identical" in readme and "完全一致" in readme
    from annotate.harness.spec import load_spec_dir

    copy = load_spec_dir(folder)
    assert copy.name == spec.name and all(not i.path.startswith("include") for i in copy.includes)


@pytest.mark.slow
@pytest.mark.nvcc
def test_a_deeper_pipeline_in_the_decode_copy_shows_its_sass_difference(decode_copy, tmp_path, capsys):
    """NUM_STAGES_SMEM (the cp.async pipeline depth the dispatch macro picks on sm_80 and later)
    from 2 to 3: every two-stage instantiation becomes a three-stage one, paired with its
    pinned counterpart and differing; the one-stage (pre-sm_80 branch) ones stay identical."""
    import json

    from annotate.cli import main

    spec, report = decode_copy
    edited = tmp_path / "edited"
    shutil.copytree(_folder(report), edited)
    kernel = edited / "kernel.cu"
    text = kernel.read_text()
    old = "constexpr uint32_t NUM_STAGES_SMEM = 2;"
    assert text.count(old) == 1
    kernel.write_text(text.replace(old, "constexpr uint32_t NUM_STAGES_SMEM = 3;"))
    assert main(["run", spec.name, "--source", str(edited), "--compile-only", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    # kernels are keyed `source:mangled name`; ptxas's records of both builds demangle them
    demangled = {r["mangled"]: r["name"] for r in [*got["pinned"], *got["source"]]}

    def name(key):
        return demangled[key.partition(":")[2]]

    kernels = got["kernels"]
    changed = [k for k in kernels if not k["identical"]]
    assert changed and len(changed) < len(kernels)
    # the pinned two-stage instantiations, each paired with the copy's three-stage one
    assert all("Kernel<(flashinfer::PosEncodingMode)0, 2u," in name(k["name"]) for k in changed)
    assert all(k["paired_with"] and "Kernel<(flashinfer::PosEncodingMode)0, 3u," in name(k["paired_with"])
               for k in changed)
    assert all(k["mix"] for k in changed)
    assert {"Single", "Batch"} <= {("Single" if "Single" in name(k["name"]) else "Batch") for k in changed}
    one_stage = [k for k in kernels if "Kernel<(flashinfer::PosEncodingMode)0, 1u," in name(k["name"])]
    assert one_stage and all(k["identical"] for k in one_stage)


@pytest.mark.slow
@pytest.mark.nvcc
def test_a_broken_copy_shows_nvccs_error_in_the_learners_file(real_config, rmsnorm_copy, tmp_path):
    from annotate.errors import AnnotateError
    from annotate.harness.sidebyside import compare_builds, load_source_spec

    spec, report = rmsnorm_copy
    broken = tmp_path / "broken"
    shutil.copytree(_folder(report), broken)
    kernel = broken / "kernel.cu"
    lines = kernel.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if "RMSNormKernel(" in ln and "__global__" in ln)
    lines.insert(at + 1, "  this is not C++;")
    kernel.write_text("\n".join(lines) + "\n")
    with pytest.raises(AnnotateError) as e:
        compare_builds(real_config, spec, load_source_spec(spec.name, broken), "90")
    assert e.value.message.startswith(f"{broken}/kernel.cu:{at + 2}: ") and "\n" not in e.value.message
    assert str(real_config.builds_dir()) not in e.value.message

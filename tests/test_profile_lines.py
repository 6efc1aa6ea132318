"""The profile's `lines` step (annotate.harness.profile.fold) on a small synthetic dump: addresses
folded per source line (ncu's own lines, or the build's SASS record), ids that are not addresses
ignored, stalls and memory counters summed, the details page read, machine paths never kept;
the bounded dump reader; the committed records read and write back unchanged."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from annotate.cli import main
from annotate.config import REPO_ROOT
from annotate.harness import profile
from annotate.harness.record import RecordError
from annotate.harness.sass import SassFile, SassFunction, SassLine, SassRecord

BASE = 1_000_000
CO = "/gpu-machine/cache/checkouts/flashinfer-a0a6b019b9b2/include/flashinfer"


def _dump() -> dict:
    pcs = {
        # ids below the function's first address correlate occupancy steps, not instructions
        "0": {"m": {"launch__function_pcs": BASE, "launch__occupancy_per_block_size": 3}},
        "1": {"m": {"launch__occupancy_per_block_size": 4}},
        str(BASE): {"m": {"smsp__pcsamp_sample_count": 10, "smsp__pcsamp_warps_issue_stalled_long_scoreboard": 7,
                          "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued": 6,
                          "smsp__pcsamp_warps_issue_stalled_selected": 3, "inst_executed": 64,
                          "memory_l2_theoretical_sectors_global": 128,
                          "memory_l2_theoretical_sectors_global_ideal": 64,
                          "derived__memory_l2_theoretical_sectors_global_excessive": 64},
                    "sass": "LDG.E R2, [R4]", "file": f"{CO}/attention/decode.cuh", "line": 268},
        str(BASE + 16): {"m": {"smsp__pcsamp_sample_count": 5, "smsp__pcsamp_warps_issue_stalled_wait": 5,
                               "inst_executed": 64, "memory_l1_wavefronts_shared": 96,
                               "memory_l1_wavefronts_shared_ideal": 32,
                               "derived__memory_l1_wavefronts_shared_excessive": 64},
                         "sass": "LDS.128 R8, [R9]", "file": f"{CO}/attention/decode.cuh", "line": 268},
        str(BASE + 32): {"m": {"smsp__pcsamp_sample_count": 4, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle": 4,
                               "inst_executed": 32},
                         "sass": "HADD2.F32 R1, -RZ, R2.H0_H0", "file": "/usr/local/cuda/targets/x86_64-linux/include/cuda_fp16.hpp",
                         "line": 980},
        str(BASE + 48): {"m": {"smsp__pcsamp_sample_count": 2, "smsp__pcsamp_warps_issue_stalled_barrier": 2}},
    }
    summary = {"gpu__time_duration.sum": 2500.0, "launch__grid_dim_x": 4, "launch__grid_dim_y": 2,
               "launch__grid_dim_z": 1, "launch__block_dim_x": 128, "launch__block_dim_y": 1,
               "launch__block_dim_z": 1, "launch__registers_per_thread": 64,
               "launch__shared_mem_per_block_static": 0, "launch__shared_mem_per_block_dynamic": 4096,
               "launch__waves_per_multiprocessor": 0.5, "smsp__inst_executed.sum": 160.0,
               "sm__throughput.avg.pct_of_peak_sustained_elapsed": 12.5}
    return {"report": "r.ncu-rep", "actions": [{"name": "void flashinfer::K<8u>(Params)", "mangled": "_ZK",
                                                 "summary": summary, "instanced": [], "pcs": pcs}]}


DETAILS = ('"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
           '"0","K","GPU Speed Of Light Throughput","Duration","us","2.50"\n'
           '"0","K","GPU Speed Of Light Throughput","DRAM Throughput","%","38.87"\n'
           '"0","K","GPU Speed Of Light Throughput","SM Frequency","Ghz","1.94"\n'
           '"0","K","Occupancy","Achieved Occupancy","%","43.14"\n'
           '"0","K","Launch Statistics","Grid Size","","1,024"\n')


def test_fold_with_ncus_own_lines():
    rec = profile.fold(_dump(), kernel="decode_kernel", shape="s", details=profile.read_details(DETAILS),
                       upstreams=("flashinfer",))
    (k,) = rec.kernels
    assert k.attribution == "ncu" and k.grid == (4, 2, 1) and k.block == (128, 1, 1) and k.registers == 64
    assert k.samples == 21 and k.unattributed_samples == 2  # the last address has no source line
    assert k.stalls == {"long_scoreboard": 7, "wait": 5, "math_pipe_throttle": 4, "selected": 3, "barrier": 2}
    assert k.throughput["dram_pct"] == 38.87 and k.throughput["sm_mhz"] == 1940.0
    assert k.throughput["occupancy_achieved_pct"] == 43.14 and "sm__throughput.avg.pct_of_peak_sustained_elapsed" in k.throughput
    paths = [f.path for f in k.files]
    assert paths == ["cuda:cuda_fp16.hpp", "flashinfer:include/flashinfer/attention/decode.cuh"]  # no machine path
    line = k.files[1].lines[0]
    assert (line.line, line.sass, line.samples, line.instructions) == (268, 2, 15, 128)
    assert line.stalls == {"long_scoreboard": 7, "wait": 5, "selected": 3} and line.not_issued == 6
    assert (line.l2_sectors, line.l2_sectors_ideal, line.l2_excessive) == (128, 64, 64)
    assert (line.smem_wavefronts, line.smem_wavefronts_ideal, line.smem_excessive) == (96, 32, 64)


def test_fold_with_the_builds_sass_record_sends_toolkit_frames_upstream():
    fn = SassFunction(mangled="_ZK", name="K", files=(
        SassFile(path="flashinfer:include/flashinfer/attention/decode.cuh",
                 lines=(SassLine(line=268, sass=("0000 LDG.E R2, [R4]", "0010 LDS.128 R8, [R9]")),)),
        SassFile(path="flashinfer:include/flashinfer/vec_dtypes.cuh",
                 lines=(SassLine(line=163, sass=("0020 HADD2.F32 R1, -RZ, R2.H0_H0", "0030 BAR.SYNC 0x0")),))))
    sass = SassRecord(kernel="decode_kernel", arch="90", key="abc", functions=(fn,))
    rec = profile.fold(_dump(), kernel="decode_kernel", shape="s", sass=sass)
    (k,) = rec.kernels
    assert k.attribution == "sass-record" and rec.sass_record == "abc" and k.unattributed_samples == 0
    vec = next(f for f in k.files if f.path.endswith("vec_dtypes.cuh")).lines[0]
    assert (vec.line, vec.samples, vec.sass) == (163, 6, 2)  # cuda_fp16.hpp's conversion + the barrier
    assert not any(f.path.startswith("cuda:") for f in k.files)


@pytest.mark.parametrize("path, want", [
    ("/x/.annotate-cache/checkouts/flash-attention-060c9188beec/csrc/cutlass/include/cute/atom/../arch/mma_sm80.hpp",
     "flash-attention:csrc/cutlass/include/cute/arch/mma_sm80.hpp"),
    ("/usr/local/cuda-13.0/include/crt/math_functions.hpp", "cuda:crt/math_functions.hpp"),
    ("/home/someone/build/launcher.cu", "other:launcher.cu"),
])
def test_paths_are_normalised(path, want):
    assert profile.normalise_path(path) == want


def test_record_round_trips(tmp_path):
    rec = profile.fold(_dump(), kernel="decode_kernel", shape="s", details=profile.read_details(DETAILS))
    p = tmp_path / "p.json"
    profile.write_profile(p, rec)
    assert profile.load_profile(p) == rec
    data = json.loads(p.read_text())
    data["kernels"][0]["registers"] = "x"
    data["extra"] = {}
    assert profile.ProfileRecord.from_json(data).kernels[0].registers is None


def test_dump_reader_is_bounded(tmp_path, monkeypatch):
    good = tmp_path / "d.json.gz"
    good.write_bytes(gzip.compress(json.dumps(_dump()).encode()))
    assert profile.read_dump(good)["report"] == "r.ncu-rep"
    for name, data, why in [("plain.json.gz", b"{}", "not a gzip"), ("list.json.gz", gzip.compress(b"[1]"), "not a profile dump"),
                            ("bad.json.gz", gzip.compress(b"{"), "not JSON")]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(RecordError, match=why):
            profile.read_dump(tmp_path / name)
    monkeypatch.setattr(profile, "MAX_DUMP_BYTES", 100)
    with pytest.raises(RecordError, match="larger than"):
        profile.read_dump(good)


def test_committed_profiles_read_and_write_back_unchanged():
    files = sorted((REPO_ROOT / "vendor_kernels" / "results" / "profiles").glob("*.json"))
    assert {f.name for f in files} >= {"decode_kernel.single-131072-h64-gqa8.json",
                                       "decode_kernel.batch64-4096-page16-gqa4.json",
                                       "flash_fwd.b1-4096-causal-h32-gqa4.json"}
    for f in files:
        rec = profile.load_profile(f)
        assert profile.profile_json_text(rec) == f.read_text(), f.name
        assert rec.kernels and rec.kernels[0].attribution == "sass-record" and rec.kernels[0].samples > 0
        assert "/" not in "".join(fl.path.split(":", 1)[0] for k in rec.kernels for fl in k.files)


def test_cli_folds_a_dump_without_a_gpu(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "d.json.gz"
    d.write_bytes(gzip.compress(json.dumps(_dump()).encode()))
    csv = tmp_path / "details.csv"
    csv.write_text(DETAILS)
    assert main(["profile", "decode_kernel", "--shape", "single-131072-h64-gqa8", "--from-dump", str(d),
                 "--details", str(csv), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kernel"] == "decode_kernel" and data["kernels"][0]["throughput"]["dram_pct"] == 38.87
    assert (tmp_path / "cache" / "results" / "profiles" / "decode_kernel.single-131072-h64-gqa8.json").is_file()
    assert main(["profile", "decode_kernel", "--shape", "nope", "--from-dump", str(d)]) == 2
    assert "unknown shape" in capsys.readouterr().err
    assert main(["profile", "decode_kernel", "--shape", "single-131072-h64-gqa8", "--details", str(csv)]) == 2
    assert "--details goes with --from-dump" in capsys.readouterr().err


@pytest.mark.parametrize("content, why", [
    (None, "No such file"), (b"{}", "not a gzip file"), (gzip.compress(b"{"), "not JSON"),
    (gzip.compress(b'{"actions": 3}'), "not a profile dump"), (gzip.compress(b"[" * 20 + b"]" * 20), "nested deeper"),
    (gzip.compress(b'{"actions": []}'), "holds no profiled kernel"),
])
def test_cli_a_bad_dump_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, content, why):
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "d.json.gz"
    if content is not None:
        d.write_bytes(content)
    assert main(["profile", "decode_kernel", "--shape", "single-131072-h64-gqa8", "--from-dump", str(d)]) == 1
    err = capsys.readouterr().err
    assert why in err and str(d) in err and len(err.strip().splitlines()) <= 2 and "Traceback" not in err
    assert not (tmp_path / "cache" / "results").exists()


def test_cli_bad_side_files_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "d.json.gz"
    d.write_bytes(gzip.compress(json.dumps(_dump()).encode()))
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"\xff\xfe")
    for extra, why in [(["--sass", str(bad)], "invalid JSON"), (["--sass", str(tmp_path / "none.json")], "No such file"),
                       (["--details", str(latin)], "not UTF-8"), (["--details", str(tmp_path / "none.csv")], "cannot read")]:
        assert main(["profile", "decode_kernel", "--shape", "single-131072-h64-gqa8", "--from-dump", str(d), *extra]) == 1
        err = capsys.readouterr().err
        assert why in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, extra


def test_cli_without_ncu_says_so_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("NCU", raising=False)
    assert main(["profile", "decode_kernel", "--shape", "single-131072-h64-gqa8"]) == 1
    err = capsys.readouterr().err
    assert "ncu was not found" in err and "--from-dump" in err and "Traceback" not in err
    assert not (tmp_path / "cache" / "results").exists()

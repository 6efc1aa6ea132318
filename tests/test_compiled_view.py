"""The compiled view as the site reads it (annotate.harness.compiled.load_compiled): every
committed record of a kernel found by the writers' own names, typed, joined per source line;
an unreadable file is one problem line, never an exception; the committed records themselves
are complete for the catalog, small, and hold no machine path or upstream text."""

from __future__ import annotations

import dataclasses
import json

import pytest

from annotate.config import REPO_ROOT, Config
from annotate.harness import compiled, identity, profile, sass, sassfacts
from annotate.harness.sass import SassFile, SassFunction, SassLine, SassRecord
from annotate.harness.spec import kernel_names

DECODE = "flashinfer:include/flashinfer/attention/decode.cuh"


def _record(kernel: str, arch: str) -> SassRecord:
    a = SassFunction(mangled="_ZA", name="void flashinfer::K<1u>(P)", registers=40, instructions=3,
                     mix={"LDG.E.128": 1, "SHFL.BFLY": 2},
                     files=(SassFile(path=DECODE, lines=(
                         SassLine(line=12, counts={"SHFL.BFLY": 2}, sass=("0010 SHFL.BFLY PT, R3, R2, 0x10, 0x1f",
                                                                         "0020 SHFL.BFLY PT, R4, R3, 0x8, 0x1f")),
                         SassLine(line=14, counts={"LDG.E.128": 1}, sass=("0030 LDG.E.128 R4, desc[UR6][R2.64]",)))),))
    b = SassFunction(mangled="_ZB", name="void flashinfer::K<2u>(P)", instructions=1, mix={"SHFL.BFLY": 1},
                     files=(SassFile(path=DECODE, lines=(SassLine(line=12, counts={"SHFL.BFLY": 1},
                                                                  sass=("0010 SHFL.BFLY PT, R3, R2, 0x10, 0x1f",)),)),))
    return SassRecord(kernel=kernel, arch=arch, key=f"{kernel}-{arch}-key", functions=(a, b))


@pytest.fixture
def repo(tmp_path):
    cfg = Config.load(environ={}, cache_dir=tmp_path / "cache", repo_root=tmp_path / "repo")
    for arch in ("80", "90"):
        sass.write_sass_record(sass.committed_path(cfg, "k", arch), _record("k", arch))
    # a kernel whose name starts like this one's: none of its files belong to `k`
    sass.write_sass_record(sass.committed_path(cfg, "k_other", "90"), _record("k_other", "90"))
    fact = sassfacts.FactCheck(file=DECODE, line=12, start=12, end=12, kind="warp-shuffle", rule="shfl-wrapper",
                               function="flashinfer:flashinfer::K@x:1", status="confirmed",
                               found={"SHFL.BFLY": 3}, records=("k.sm90",))
    sassfacts.write_fact_report(sass.committed_facts_path(cfg, "k", "90"),
                                sassfacts.FactReport(records=("k.sm90",), facts=(fact,)))
    identity.write_card(identity.card_path(cfg, "k", "90"),
                        identity.IdentityCard(kernel="k", arch="90", verdict="identical", summary="2 of 2"))
    prof = profile.ProfileRecord(kernel="k", shape="s1", kernels=(profile.ProfileKernel(
        name="void flashinfer::K<1u>(P)", files=(profile.ProfileFile(path=DECODE, lines=(
            profile.ProfileLine(line=14, sass=1, samples=9, stalls={"long_scoreboard": 9}),)),)),))
    profile.write_profile(profile.committed_profile(cfg, "k", "s1"), prof)
    return cfg


def test_everything_of_one_kernel_is_read_typed(repo):
    view = compiled.load_compiled(repo, "k")
    assert view.problems == ()
    assert [r.arch for r in view.sass] == ["90", "80"]  # newest first; k_other's record is not k's
    assert view.record("90").kernel == "k" and view.record("75") is None
    assert view.fact_report("90").facts[0].status == "confirmed" and view.fact_report("80") is None
    assert view.card("90").identical and [p.shape for p in view.profiles] == ["s1"]
    assert not view.profile_is_current(view.profiles[0])  # attributed with no SASS record
    assert view.profile_is_current(dataclasses.replace(view.profiles[0], sass_record="k-80-key"))
    assert not view.profile_is_current(dataclasses.replace(view.profiles[0], sass_record="k_other-90-key"))
    assert view.files() == [DECODE]
    assert len(compiled.compiled_paths(repo, "k")) == 5


def test_a_line_lists_every_kernel_it_compiled_into(repo):
    view = compiled.load_compiled(repo, "k")
    lines = view.lines(DECODE, arch="90")
    assert sorted(lines) == [12, 14]
    assert [(x.function.mangled, x.line.counts) for x in lines[12]] == [("_ZA", {"SHFL.BFLY": 2}), ("_ZB", {"SHFL.BFLY": 1})]
    assert [x.arch for x in view.lines(DECODE)[14]] == ["90", "80"]
    assert view.lines("flashinfer:include/flashinfer/norm.cuh") == {}
    assert [f.rule for f in view.facts_at(DECODE)[12]] == ["shfl-wrapper"] and view.facts_at(DECODE, arch="80") == {}
    (p,) = view.profile_lines(DECODE)[14]
    assert (p.shape, p.line.samples, p.line.stalls) == ("s1", 9, {"long_scoreboard": 9})


@pytest.mark.parametrize("content, why", [
    ("{", "invalid JSON"), ("[]", "not a JSON object"), (b"\xff\xfe", "not UTF-8"), ("[" * 40 + "]" * 40, "nested deeper"),
])
def test_an_unreadable_file_is_one_problem_and_the_rest_is_read(repo, content, why):
    path = sass.committed_path(repo, "k", "80")
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    card = identity.card_path(repo, "k", "90")
    card.write_text("nope")
    view = compiled.load_compiled(repo, "k")
    assert [r.arch for r in view.sass] == ["90"] and view.identity == ()
    assert len(view.problems) == 2 and all("\n" not in p for p in view.problems)
    assert view.problems[0].startswith("k.sm80.json: unreadable record (") and why in view.problems[0]
    assert view.problems[1].startswith("k.sm90.json: unreadable record (invalid JSON")


def test_a_kernel_with_nothing_committed_has_an_empty_view(tmp_path):
    cfg = Config.load(environ={}, cache_dir=tmp_path / "c", repo_root=tmp_path / "empty")
    view = compiled.load_compiled(cfg, "k")
    assert (view.sass, view.facts, view.identity, view.profiles, view.problems) == ((), (), (), (), ())


# ---- the committed records ---------------------------------------------------------------------------
def _strings(x):
    if isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)
    elif isinstance(x, str):
        yield x


def test_every_catalog_kernel_has_its_compiled_view_committed():
    cfg = Config.load(environ={}, repo_root=REPO_ROOT)
    for name in kernel_names(cfg):
        view = compiled.load_compiled(cfg, name)
        assert view.problems == (), name
        assert view.record("90") is not None and view.fact_report("90") is not None, name
        assert view.card("90") is not None and view.card("90").identical, name
        assert any(f.files for f in view.record("90").functions), name  # featured kernels keep their lines
        for p in view.profiles:  # a current profile's kernels are the record's
            if view.profile_is_current(p):
                names = {f.mangled for r in view.sass for f in r.functions}
                assert any(k.mangled in names for k in p.kernels), (name, p.shape)


def test_committed_records_are_small_and_hold_no_machine_path_or_quoted_source():
    base = REPO_ROOT / "vendor_kernels" / "results"
    files = [p for d in ("sass", "identity", "profiles") for p in sorted((base / d).glob("*.json"))]
    assert files
    assert sum(p.stat().st_size for p in files) < 3 * 2**20
    assert max(p.stat().st_size for p in files) < 512 * 1024
    for p in files:
        data = json.loads(p.read_text(encoding="utf-8"))
        for s in _strings(data):
            assert not any(m in s for m in ("/home/", "/root/", "/tmp/", "/work/", "/usr/", "site-packages")), (p.name, s)
        if p.name.endswith(".facts.json"):
            assert all("detail" not in f for f in data["facts"]), p.name  # the index's detail can quote code

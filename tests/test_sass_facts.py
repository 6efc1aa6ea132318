"""Memory facts confirmed by the compiler (annotate.harness.sassfacts): the fact <-> SASS table,
span and neighbour matching on small records, recall over chains, and (nvcc) the index's real
rules on a tiny fixture kernel, including a fact that must not be confirmed."""

from __future__ import annotations

import pytest
import yaml

from annotate.errors import AnnotateError
from annotate.harness import sassfacts as sf
from annotate.harness.sass import SassFile, SassFunction, SassLine, SassRecord
from annotate.index.parse import RULES_FILE

F = "flashinfer:include/x.cuh"


def _site(line, kind, rule="r", detail="", start=None, end=None, fs=1, fe=100, file=F):
    return sf.FactSite(file=file, line=line, start=start or line, end=end or line, kind=kind, rule=rule,
                       detail=detail, function="flashinfer:f@include/x.cuh:1", function_start=fs,
                       function_end=fe)


def _record(lines: dict[int, tuple[dict, dict]], kernel="k") -> SassRecord:
    """line -> (own counts, via counts) in one function of one file."""
    ls = tuple(SassLine(line=n, counts=c, via=v) for n, (c, v) in sorted(lines.items()))
    fn = SassFunction(mangled="_Zk", name="void k()", symbol="k", files=(SassFile(path=F, lines=ls),))
    return SassRecord(kernel=kernel, arch="90", functions=(fn,))


# ---- the table --------------------------------------------------------------------------------------
def test_every_memory_rule_kind_has_a_signature_or_is_declared_unchecked():
    table = sf.load_table()
    rule_kinds = {r["kind"] for r in yaml.safe_load(RULES_FILE.read_text())["rules"]}
    assert rule_kinds - set(table.kinds) == {"inline-ptx"}  # any instruction at all: nothing to check


@pytest.mark.parametrize("kind, rule, detail, yes, no", [
    ("cp-async", "flashinfer-cp-async", "cp_async::pred_load", "LDGSTS.E.BYPASS.LTC128B.128", "LDG.E.128"),
    ("cp-async-group", "flashinfer-cp-async-group", "cp_async::wait_group", "DEPBAR.LE", "BAR.SYNC"),
    ("barrier", "syncthreads", "__syncthreads", "BAR.SYNC.DEFER_BLOCKING", "MEMBAR.GPU"),
    ("warp-shuffle", "shfl-wrapper", "math::shfl_xor_sync", "SHFL.BFLY", "SHF.L.U32"),
    ("tensor-core", "flashinfer-mma", "mma::mma_sync_m16n16k16_row_col_f16f16f32", "HMMA.16816.F32", "LDSM.16.M88.4"),
    ("tensor-core", "smem-ldmatrix", "k_smem->ldmatrix_m8n8x4 (ldmatrix/stmatrix)", "LDSM.16.M88.4", "HMMA.16816.F32"),
    ("tensor-core", "smem-ldmatrix", "o_smem->stmatrix_m8n8x4 (ldmatrix/stmatrix)", "STSM.16.M88.4", "LDSM.16.M88.4"),
    ("tensor-core", "cute-tiled-copy-smem", "CuTe tiled copy via smem_tiled_copy_Q", "LDSM.16.M88.4", "HMMA.16816.F32"),
    ("vector-access", "vec-t-load-store", "vec_t .load()", "LDG.E.128.CONSTANT", "LDG.E"),
    ("vector-access", "vec-t-load-store", "vec_t .store()", "STS.64", "STS"),
    ("atomic", "atomic", "atomicAdd", "RED.E.ADD.F32.FTZ.RN.STRONG.GPU", "LDG.E"),
    ("atomic", "atomic", "atomicAdd", "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU", "REDUX.SUM"),  # sm_90's name
])
def test_the_table_maps_facts_to_opcodes(kind, rule, detail, yes, no):
    sig = sf.load_table().signature(kind, rule, detail)
    assert sig.matches(yes) and not sig.matches(no)


def test_table_errors_name_the_key():
    with pytest.raises(AnnotateError, match="kinds.x: needs `opcodes`"):
        sf.parse_table({"kinds": {"x": {}}})
    with pytest.raises(AnnotateError, match="bad regex"):
        sf.parse_table({"kinds": {"x": {"opcodes": ["("]}}})
    with pytest.raises(AnnotateError, match="scope"):
        sf.parse_table({"kinds": {"x": {"opcodes": ["A"], "scope": "file"}}})
    with pytest.raises(AnnotateError, match="overrides\\[0\\]"):
        sf.parse_table({"kinds": {}, "overrides": [{"opcodes": ["A"]}]})


# ---- matching ---------------------------------------------------------------------------------------
def test_inline_asm_is_matched_over_its_statement_span():
    # the asm statement spans 20-22 and nvcc lists its LDGSTS under the last line
    rec = _record({22: ({"LDGSTS.E.BYPASS.LTC128B.128": 2}, {})})
    rep = sf.check_facts([_site(20, "cp-async", start=20, end=22)], [rec])
    (c,) = rep.facts
    assert c.status == "confirmed" and c.found == {"LDGSTS.E.BYPASS.LTC128B.128": 2} and c.records == ("k.sm90",)


def test_a_call_is_confirmed_by_what_it_inlined():
    rec = _record({30: ({"LEA": 1}, {"SHFL.BFLY": 5})})
    (c,) = sf.check_facts([_site(30, "warp-shuffle", "shfl-wrapper", "math::shfl_xor_sync")], [rec]).facts
    assert c.status == "confirmed" and c.found == {"SHFL.BFLY": 5}


def test_a_fact_that_must_not_be_confirmed():
    # a vec_t load the compiler made of 32-bit loads: the claim is wrong, and says what it got
    rec = _record({40: ({"LDG.E": 4, "IMAD": 2}, {})})
    (c,) = sf.check_facts([_site(40, "vector-access", "vec-t-load-store", "vec_t .load()")], [rec]).facts
    assert c.status == "not-confirmed" and c.found == {} and c.instead == {"IMAD": 2, "LDG.E": 4}


def test_neighbouring_lines_count_only_as_nearby_and_never_inside_another_statement():
    rec = _record({50: ({"BAR.SYNC.DEFER_BLOCKING": 1}, {}), 60: ({"SHFL.BFLY": 1}, {}),
                   58: ({"IADD3": 1}, {})})
    sites = [_site(49, "barrier", "syncthreads", "__syncthreads"),  # BAR listed one line below
             _site(61, "warp-shuffle", "shfl-intrinsic"),  # the SHFL at 60 is another fact's
             _site(60, "warp-shuffle", "shfl-intrinsic"),
             _site(57, "barrier", "syncthreads")]  # 58 has code, none a barrier; 50 is too far
    got = {(c.line, c.kind): c for c in sf.check_facts(sites, [rec]).facts}
    assert got[(49, "barrier")].status == "nearby" and got[(49, "barrier")].near_line == 50
    assert got[(61, "warp-shuffle")].status == "no-code"  # not credited with line 60's shuffle
    assert got[(60, "warp-shuffle")].status == "confirmed"
    assert got[(57, "barrier")].status == "no-code"
    p = sf.precision(sf.FactReport(facts=tuple(got.values())))
    assert p.strict == 1 / 2 and p.lenient == 1.0


def test_statuses_outside_the_measurement():
    rec = _record({10: ({"FFMA": 1}, {})})
    sites = [_site(5, "barrier", fs=200, fe=300),  # the function is in no record
             _site(10, "inline-ptx", "inline-ptx", "asm: fma"),  # no SASS signature
             _site(3, "shared-static", "shared-static", fs=1, fe=20)]  # declaration: whole function
    got = {c.kind: c for c in sf.check_facts(sites, [rec]).facts}
    assert "barrier" not in got  # not compiled: left out of the report
    assert got["inline-ptx"].status == "unchecked"
    assert got["shared-static"].status == "not-confirmed"  # no shared access anywhere in it
    rec2 = _record({10: ({"FFMA": 1}, {}), 15: ({}, {"LDS.128": 2})})
    (c,) = sf.check_facts([sites[2]], [rec2]).facts
    assert c.status == "confirmed" and c.found == {"LDS.128": 2}


def test_recall_follows_the_chain_and_lists_misses():
    sites = [_site(30, "warp-shuffle", "shfl-wrapper", start=30, end=31)]
    chains = [sf.Chain("k.sm90", "SHFL.BFLY", ((F, 5), (F, 31)), 5),  # inlined at a fact's line
              sf.Chain("k.sm90", "SHFL.IDX", ((F, 7), (F, 90)), 2),  # no fact anywhere up its chain
              sf.Chain("k.sm90", "FFMA", ((F, 9),), 100)]  # not a tracked class
    r = sf.recall(sites, chains)
    assert r.per_kind == {"warp-shuffle": (5, 7)} and r.ratio() == 5 / 7
    (m,) = r.misses
    assert (m.kind, m.file, m.line, m.opcodes, m.at) == ("warp-shuffle", F, 7, {"SHFL.IDX": 2}, (f"{F}:90",))


def test_fact_report_round_trips(tmp_path):
    rec = _record({22: ({"LDGSTS.E.128": 1}, {})})
    rep = sf.check_facts([_site(20, "cp-async", start=20, end=22)], [rec])
    path = tmp_path / "f.json"
    sf.write_fact_report(path, rep)
    assert sf.load_fact_report(path) == rep


# ---- nvcc: the index's own rules on a tiny fixture kernel ---------------------------------------------
@pytest.mark.nvcc
def test_fixture_kernel_facts_against_its_sass(tmp_path):
    from annotate.commands.sass import fact_sites
    from annotate.harness.sass import sass_record
    from annotate.index.api import index_directory

    from test_sass_records import HELPER, line_of, need_tools, toy_upstream

    need_tools()
    cfg, spec, checkout = toy_upstream(tmp_path, None)
    rec, _ = sass_record(cfg, spec, "90")
    index = index_directory("flashinfer", checkout, ["include/toy/helper.cuh"])
    sites = fact_sites(index, ["flashinfer:include/toy/helper.cuh"])
    asm = next(s for s in sites if s.rule == "ptx-cp-async")
    assert (asm.start, asm.end) == (line_of(HELPER, "asm volatile(\"cp.async.cg"), line_of(HELPER, '::"r"(s)'))
    report = sf.check_facts(sites, [rec])
    by = {(c.rule, c.line): c for c in report.facts}
    assert by[("ptx-cp-async", asm.line)].status == "confirmed"
    assert by[("shfl-intrinsic", line_of(HELPER, "__shfl_xor_sync"))].status == "confirmed"
    assert by[("syncthreads", line_of(HELPER, "__syncthreads"))].status == "confirmed"
    assert by[("shared-static", line_of(HELPER, "__shared__"))].status == "confirmed"
    groups = [c for c in report.facts if c.kind == "cp-async-group"]
    assert groups and all(c.status == "confirmed" for c in groups)
    # the name says cp.async, the compiler made a plain 128-bit load and shared store of it
    wrong = by[("flashinfer-smem-async", line_of(HELPER, "load_128b_async(tile"))]
    assert wrong.status == "not-confirmed" and not wrong.found
    assert any(op.startswith("LDG") for op in wrong.instead) and any(op.startswith("STS") for op in wrong.instead)

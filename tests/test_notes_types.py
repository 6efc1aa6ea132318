"""Notes on types and macros (`types:` and `macros:` of an annotation file): `check` on each error
class, --refresh, --json, `new` stubs, and the model other stages read; against the real index of
tests/data/notes/src/include/demo/types.cuh (a header written for these tests)."""

from __future__ import annotations

import json

import pytest

from annotate.notes.check import StaleExplainer, format_report, run_check
from annotate.notes.history import BodyStore
from annotate.yamlpos import load_yaml
from tests.notes_support import DATA, index_of, write_annotation

UP, PATH = "demo", "include/demo/types.cuh"
TYPES_SRC = (DATA / "src" / "include" / "demo" / "types.cuh").read_text(encoding="utf-8")
HEAD = f"upstream: {UP}\npath: {PATH}\n"


@pytest.fixture(scope="module")
def index():
    return index_of({(UP, PATH): TYPES_SRC,
                     (UP, "include/demo/other.cuh"): "namespace demo {\nstruct Other { int a; };\n}\n#define ELSEWHERE 1\n"})


@pytest.fixture
def root(tmp_path):
    return tmp_path / "annotations"


def check(tmp_config, index, root, body, **kw):
    write_annotation(root, UP, PATH, body, config=tmp_config)
    return run_check(tmp_config, index, root, explainer=StaleExplainer(tmp_config), **kw)


def only(report, code):
    ds = [d for d in report.diagnostics if d.code == code]
    assert len(ds) == 1, [d.format() for d in report.diagnostics]
    return ds[0]


def fp_type(index, name, line=None):
    return next(t for t in index.types_in(UP, PATH) if t.qualified_name == name and line in (None, t.start_line)).fingerprint


def fp_macro(index, name):
    return next(m for m in index.macros_in(UP, PATH) if m.name == name).fingerprint


def test_clean_type_and_macro(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + f"""types:
  demo::Params:
    fingerprint: {fp_type(index, "demo::Params")}
    summary: {{en: what a launch gets, zh: 一次启动的参数}}
    layout: {{en: two pointers then two ints, zh: 两个指针和两个 int}}
    fields:
      input: {{en: "rows × cols floats, row-major", zh: 行优先}}
      rows: written by the host, read by every block
      extra: the nested struct
    notes:
      - at: "Mode mode;"
        text: chosen per launch
    course: [day-1]
macros:
  DEMO_SWITCH:
    fingerprint: {fp_macro(index, "DEMO_SWITCH")}
    summary: a run-time bool becomes a compile-time one
    expands_to: |
      `DEMO_SWITCH(s, k, f)` becomes a lambda that calls `f` with `k` constexpr true or false.
    notes:
      - at: "constexpr bool NAME = false;"
        text: the other branch
""")
    assert [d.format() for d in r.diagnostics] == []
    c = r.counts()
    assert (c["functions"], c["types"], c["macros"], c["ok"], c["errors"]) == (0, 1, 1, 2, 0)
    assert "1 type, 1 macro: 2 ok" in r.summary_line()
    f = r.result.set.files[0]
    (t,), (m,) = f.types, f.macros
    assert t.resolved and t.typedef.qualified_name == "demo::Params" and t.field("input").text.zh == "行优先"
    assert t.notes[0].line == TYPES_SRC.splitlines().index("  Mode mode;") + 1
    assert m.resolved and m.macro.params == ("COND", "NAME", "...") and m.expands_to.en.startswith("`DEMO_SWITCH")
    assert m.notes[0].line == 10
    assert r.result.set.for_type(t.typedef) is t and r.result.set.for_macro(m.macro) is m
    j = r.to_json()
    assert [e["name"] for e in j["types"]] == ["demo::Params"] and j["functions"] == []
    assert j["macros"][0] == {**j["macros"][0], "name": "DEMO_SWITCH", "outcome": "ok", "line": 4, "end_line": 13}


def test_unknown_field_with_did_you_mean(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::Params:\n    fields:\n      rows: ok\n      colz: typo\n")
    d = only(r, "unknown-field")
    assert (d.severity, d.line, d.column) == ("error", 8, 7)
    assert "no member 'colz'; did you mean 'cols'?" in d.message and "input, output, rows, cols" in d.detail
    assert r.counts()["broken"] == 1


def test_ambiguous_specialisations_and_signature(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::pack_t:\n    summary: x\n")
    d = only(r, "ambiguous")
    assert "2 definitions" in d.message and "line 35: template <int N> struct pack_t<float, N>" in d.detail
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::pack_t:\n    signature: pack_t<double\n")
    assert "matches none of the 2" in only(r, "signature-mismatch").message
    r = check(tmp_config, index, root, HEAD + f"""types:
  demo::pack_t:
    signature: "typename T, int N"
    fingerprint: {fp_type(index, "demo::pack_t", 22)}
    fields: {{data: N values, kSize: bytes, value_type: T, fill: sets all}}
  demo::pack_t@float:
    signature: "pack_t<float, N>"
    fingerprint: {fp_type(index, "demo::pack_t", 35)}
    fields: {{data: N/4 float4}}
""")
    assert [d.format() for d in r.diagnostics] == []
    assert [t.typedef.start_line for t in r.result.set.files[0].types] == [22, 35]


def test_unresolved_names_the_other_file_and_the_other_section(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::Other:\n    summary: x\n  demo::Launch:\n    summary: y\n"
                                              "macros:\n  ELSEWHERE:\n    summary: z\n  DEMO_INLIN:\n    summary: w\n")
    msgs = [(d.line, d.message, d.detail) for d in r.diagnostics if d.code == "unresolved"]
    assert "defined in another file: include/demo/other.cuh:2" in msgs[0][2]
    assert "'demo::Launch' is a function of this file: put its entry under `functions:`" in msgs[1][2]
    assert "defined in another file: include/demo/other.cuh:4" in msgs[2][2]
    assert "no macro 'DEMO_INLIN'" in msgs[3][1] and "did you mean 'DEMO_INLINE'?" in msgs[3][1]


def test_ambiguous_macro_and_not_qualified_type(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "macros:\n  DEMO_WIDTH:\n    summary: x\ntypes:\n  Extra:\n    summary: y\n")
    d = only(r, "ambiguous")
    assert "line 15: #define DEMO_WIDTH 8" in d.detail and "line 17: #define DEMO_WIDTH 4" in d.detail
    assert "write 'demo::Params::Extra'" in only(r, "not-qualified").message
    r = check(tmp_config, index, root, HEAD + "macros:\n  DEMO_WIDTH:\n    signature: DEMO_WIDTH 4\n    summary: x\n")
    assert r.result.set.files[0].macros[0].macro.start_line == 17


def test_anchors_inside_the_definition(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + """types:
  demo::Params:
    notes:
      - {at: "float* output", text: once}
      - {at: "int", text: many}
      - {at: "pack_t<float", text: outside the type}
""")
    assert "matches 2 places" in only(r, "anchor-ambiguous").message  # rows, cols: nothing outside counts
    assert "matches nothing in demo::Params (lines 42-51)" in only(r, "anchor-missing").message


def test_stale_with_diff_then_refresh(tmp_config, index, root):
    changed = TYPES_SRC.replace("  int cols;\n", "  int cols;\n  int pad;\n")
    old_ix = index_of({(UP, PATH): TYPES_SRC})
    new_ix = index_of({(UP, PATH): changed})
    old = next(t for t in old_ix.types_in(UP, PATH) if t.qualified_name == "demo::Params")
    BodyStore(tmp_config).put(old.fingerprint, old_ix.text_of(old))
    r = check(tmp_config, new_ix, root, HEAD + f"types:\n  demo::Params:\n    fingerprint: {old.fingerprint}\n"
                                                f"    fields: {{cols: columns}}\nmacros:\n  DEMO_INLINE:\n    summary: x\n")
    d = only(r, "stale")
    assert "+  int pad;" in d.detail and "@@" in d.detail
    assert r.counts()["stale"] == 1
    r = check(tmp_config, new_ix, root, (root / UP / f"{PATH}.yaml").read_text().split("\n", 1)[1], refresh=True)
    assert r.refreshed == 2 and r.counts()["stale"] == 0
    data = load_yaml((root / UP / f"{PATH}.yaml").read_text()).data
    assert data["types"]["demo::Params"]["fingerprint"] != old.fingerprint
    assert data["macros"]["DEMO_INLINE"]["fingerprint"] == fp_macro(new_ix, "DEMO_INLINE")
    assert data["types"]["demo::Params"]["fields"] == {"cols": "columns"}  # nothing else touched


def test_wrong_shapes_and_unknown_keys(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "types: [a, b]\nmacros:\n  DEMO_INLINE:\n    expand_to: x\n"
                                              "    fingerprint: XYZ\n")
    ds = {d.code: d for d in r.diagnostics}
    assert "types: expected a mapping of qualified names to entries, got a list" in ds["wrong-type"].message
    assert "unknown key 'expand_to'" in ds["unknown-key"].message and "did you mean 'expands_to'?" in ds["unknown-key"].message
    assert "a fingerprint is 16 lowercase hex digits" in ds["bad-value"].message
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::Params:\n    fields:\n      rows: [not, text]\n")
    d = only(r, "wrong-type")
    assert d.message.startswith("types.demo::Params.fields.rows: expected Markdown text")


def test_course_tags_and_todos(tmp_config, index, root):
    (root / "courses").mkdir(parents=True)
    (root / "courses" / "c.yaml").write_text("id: c\ntitle: C\nsteps:\n  - {id: day-1, title: one}\n")
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::Mode:\n    course: [day-9]\n    summary: TODO x\n"
                                              "    fields: {kPlain: TODO y}\nmacros:\n  DEMO_INLINE:\n    course: [day-1]\n")
    assert "demo::Mode: course 'day-9' is not a course or step id" in only(r, "unknown-course").message
    assert sorted(d.message.split(" ")[0] for d in r.diagnostics if d.code == "todo") == ["fields.kPlain", "summary"]


def test_duplicate_entries(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::Mode:\n    summary: a\n  demo::Mode@again:\n    summary: b\n")
    assert only(r, "duplicate-entry").line == 7


# ---- annotate new ----------------------------------------------------------------------------

def test_new_type_and_macro_stubs(tmp_config, index, root):
    from annotate.notes.new import new_stub

    res = new_stub(tmp_config, index, "demo::Params", root)
    assert res.created and res.key == "demo::Params"
    res = new_stub(tmp_config, index, "DEMO_SWITCH", root)
    res = new_stub(tmp_config, index, "demo::pack_t@include/demo/types.cuh:22", root)
    res2 = new_stub(tmp_config, index, "demo::pack_t@include/demo/types.cuh:35", root)
    assert res2.key == "demo::pack_t@2"
    text = res.file.read_text()
    data = load_yaml(text).data
    assert list(data["types"]["demo::Params"]["fields"]) == ["input", "output", "rows", "cols", "mode", "extra"]
    assert data["types"]["demo::pack_t"]["signature"] == "template <typename T, int N> struct pack_t"
    assert "# used by: demo::ScaleKernel, demo::Launch" in text and "# invoked by: demo::Launch" in text
    assert "# methods (annotate them under functions:): sum" in text
    r = run_check(tmp_config, index, root)
    assert r.counts()["errors"] == 0 and r.counts()["ok"] == 4 and r.counts()["types"] == 3
    with pytest.raises(Exception) as e:
        new_stub(tmp_config, index, "demo::Params", root)
    assert "already annotated" in str(e.value)
    res = new_stub(tmp_config, index, "demo::Launch", root)  # a function goes under functions:
    assert "demo::Launch" in load_yaml(res.file.read_text()).data["functions"]


def test_check_json_has_types_and_macros(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "macros:\n  NOPE:\n    summary: x\n")
    j = json.loads(json.dumps(r.to_json()))
    assert j["types"] == [] and j["macros"][0]["outcome"] == "broken" and j["macros"][0]["line"] is None
    assert j["summary"]["macros"] == 1 and j["summary"]["functions"] == 0
    assert "no macro 'NOPE'" in format_report(r)


# ---- members, cross-references, course refs, `show` ------------------------------------------

def test_fields_are_placed_at_their_members_and_methods_count(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + f"""types:
  demo::pack_t:
    signature: "typename T, int N"
    fingerprint: {fp_type(index, "demo::pack_t", 22)}
    fields:
      sum: adds the lanes
      data: the lanes
      fill: declared only
      kSize: bytes
""")
    assert [d.format() for d in r.diagnostics] == []
    (t,) = r.result.set.files[0].types
    lines = TYPES_SRC.splitlines()
    at = {f.name: (f.kind, f.lines) for f in t.fields}
    assert list(at) == ["sum", "data", "fill", "kSize"]  # the reviewer's order
    assert at["data"] == ("field", (lines.index("  T data[N];") + 1,))
    assert at["fill"] == ("method", (lines.index("  DEMO_INLINE void fill(T v);") + 1,))
    assert at["sum"] == ("method", (lines.index("  DEMO_INLINE T sum() const {") + 1,))  # defined in the body
    assert at["kSize"][0] == "static" and t.field("sum").text.en == "adds the lanes" and t.field("nope") is None


def test_a_function_reaches_the_notes_on_what_it_uses(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::Params:\n    summary: launch arguments\n"
                                              "macros:\n  DEMO_SWITCH:\n    summary: bool to constexpr\n")
    aset = r.result.set
    launch = index.resolve("demo::Launch")
    got = {(u.name, u.kind): aset.for_use(u) for u in index.uses_by(launch)}
    (p,) = got[("Params", "type")]
    (m,) = got[("DEMO_SWITCH", "macro")]
    assert p.summary.en == "launch arguments" and m.summary.en == "bool to constexpr"
    kernel = index.resolve("demo::ScaleKernel")
    noted = [u.name for u in index.uses_by(kernel) if aset.for_use(u)]
    assert noted == ["Params"]  # pack_t and DEMO_WIDTH are used but not annotated
    # ... and from the type back to the functions that use it (the index's side)
    users = {index.symbol(u.user).qualified_name for u in index.type_users(p.typedef)}
    assert users == {"demo::ScaleKernel", "demo::Launch"}


def test_course_refs_may_name_types_and_macros(tmp_config, index, root):
    (root / "courses").mkdir(parents=True)
    (root / "courses" / "c.yaml").write_text(
        "id: c\ntitle: C\nsteps:\n  - id: s1\n    title: one\n"
        "    refs: [demo:demo::Params, demo:DEMO_SWITCH, demo:demo::pack_t, demo:demo::Nope]\n")
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::Mode:\n    course: [s1]\n")
    (d,) = [d for d in r.diagnostics if d.code == "bad-ref"]
    assert d.message == "ref 'demo:demo::Nope': no function, type or macro 'demo::Nope' in demo" and d.line == 6
    assert not [d for d in r.diagnostics if d.code == "unknown-course"]


def test_show_prints_the_notes_on_a_type_its_members_and_a_functions_uses(tmp_config, index, root):
    import io

    from rich.console import Console

    from annotate.commands.show import show, show_macro, show_type
    from annotate.project import open_project

    r = check(tmp_config, index, root, HEAD + """types:
  demo::Params:
    summary: what a launch gets
    fields: {rows: written by the host}
macros:
  DEMO_SWITCH:
    expands_to: a lambda called at once
""")
    project = open_project(tmp_config, index=index, annotations=r.result.set)

    def printed(fn, spec):
        buf = io.StringIO()
        fn(project, spec, Console(file=buf, width=200, no_color=True, highlight=False, markup=False))
        return buf.getvalue()

    out = printed(show_type, "demo::Params")
    assert "what a launch gets" in out and "written by the host" in out
    assert "a lambda called at once" in printed(show_macro, "DEMO_SWITCH")
    out = printed(show, "demo::Launch")
    assert "types and macros used" in out and "what a launch gets" in out


# ---- drift -----------------------------------------------------------------------------------

def test_drift_of_types_and_macros(tmp_config, index, root, tmp_path):
    from annotate.index.api import index_directory
    from annotate.notes.drift import format_drift, run_drift

    b_src = ("// two new\n// lines\n" + TYPES_SRC
             .replace("  int cols;\n", "  int ncols;\n")  # Params changes; its note on `cols` is lost
             .replace("#define DEMO_INLINE inline __device__", "#define DEMO_DEVICE_INLINE inline __device__")
             .replace("enum class Mode : uint8_t { kPlain = 0, kScaled = 1 };\n", ""))
    b_root = tmp_path / "b"
    (b_root / PATH).parent.mkdir(parents=True)
    (b_root / PATH).write_text(b_src)
    r = check(tmp_config, index, root, HEAD + f"""types:
  demo::Params:
    fingerprint: {fp_type(index, "demo::Params")}
    fields: {{rows: rows, cols: columns}}
    notes: [{{at: "int rows;", text: one per block}}]
  demo::Mode:
    fingerprint: {fp_type(index, "demo::Mode")}
  demo::pack_t@float:
    signature: "pack_t<float, N>"
    fingerprint: {fp_type(index, "demo::pack_t", 35)}
macros:
  DEMO_INLINE:
    fingerprint: {fp_macro(index, "DEMO_INLINE")}
  DEMO_SWITCH:
    fingerprint: {fp_macro(index, "DEMO_SWITCH")}
""")
    assert r.exit_code(strict=True) == 0, [d.format() for d in r.diagnostics]
    run_drift(tmp_config, r, index, ref=None, tree=str(b_root), git_dir=None, upstream=None, indexer=index_directory)
    by = {e.name: e for e in r.drift}
    assert {n: (e.what, e.kind) for n, e in by.items()} == {
        "demo::Params": ("type", "changed"), "demo::Mode": ("type", "removed"),
        "demo::pack_t": ("type", "moved"), "DEMO_INLINE": ("macro", "renamed"), "DEMO_SWITCH": ("macro", "moved")}
    ch = by["demo::Params"]
    assert ch.lost_fields == ["cols"] and "+  int ncols;" in ch.diff
    assert ch.anchors == [("int rows;", TYPES_SRC.splitlines().index("  int rows;") + 1,
                           b_src.splitlines().index("  int rows;") + 1, 1)]
    assert by["DEMO_INLINE"].candidates[0][:2] == ("DEMO_DEVICE_INLINE", PATH)
    assert by["demo::pack_t"].new_lines[0] == by["demo::pack_t"].old_lines[0] + 2
    msgs = {d.symbol: d for d in r.drift_diagnostics}
    assert "fields.cols: no such member at the target" in msgs["demo::Params"].detail
    assert "same definition; notes follow it" in msgs["DEMO_SWITCH"].message
    assert msgs["demo::Mode"].severity == "error"
    assert format_drift(r.drift).endswith(": 3 types, 2 macros: 2 moved, 1 changed, 1 renamed, 1 removed")
    j = r.to_json()
    assert {e["name"]: e["what"] for e in j["drift"]}["DEMO_SWITCH"] == "macro"


def test_an_inherited_member_is_named_with_its_base(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "types:\n  demo::ScaledParams:\n    fields: {bias: added, rows: from the base}\n")
    d = only(r, "unknown-field")
    assert d.message == ("demo::ScaledParams has no member 'rows' of its own: it is inherited from demo::Params "
                         f"({PATH}:42); annotate it in that type's entry")
    assert (d.line, d.detail) == (6, "members: bias")  # the key inside the flow mapping


# ---- the real pins -----------------------------------------------------------------------------

@pytest.mark.slow
def test_real_pins_types_and_macros_resolve(real_config, pinned, tmp_path):
    """`annotate new` scaffolds the types and macros the study plans ask about (FlashInfer's
    `vec_t` and `FLASHINFER_INLINE`, Flash-Attention's `Flash_fwd_params` and `BOOL_SWITCH`),
    `check` resolves them at the pins, and the model links them to the functions using them.
    The notes are written into a temporary tree: only the stubs, never real notes."""
    from annotate.index.api import load_index
    from annotate.notes.new import new_stub

    pinned("flashinfer")
    pinned("flash-attention")
    ix = load_index(real_config)
    root = tmp_path / "annotations"
    (vec,) = [t for t in ix.find_type("flashinfer::vec_t", "flashinfer") if t.specialization is None]
    specs = [f"flashinfer:flashinfer::vec_t@{vec.path}:{vec.start_line}", "flashinfer:FLASHINFER_INLINE",
             "flash-attention:flash::Flash_fwd_params", "flash-attention:BOOL_SWITCH@csrc/flash_attn/src/static_switch.h"]
    made = [new_stub(real_config, ix, s, root) for s in specs]
    assert [m.key for m in made] == ["flashinfer::vec_t", "FLASHINFER_INLINE", "flash::Flash_fwd_params", "BOOL_SWITCH"]
    r = run_check(real_config, ix, root)
    assert not [d.format() for d in r.diagnostics if d.code != "todo"]
    c = r.counts()
    assert (c["types"], c["macros"], c["ok"], c["errors"]) == (2, 2, 4, 0)
    aset = r.result.set
    v = aset.for_type(vec)
    assert v is not None and v.signature == "template <typename float_t, size_t vec_size> struct vec_t"
    assert {"fill", "load", "cast_from"} <= {f.name for f in v.fields}
    assert all(vec.start_line < ln < vec.end_line for f in v.fields for ln in f.lines)
    (params,) = [t for t in aset.types() if t.qualified_name == "flash::Flash_fwd_params"]
    assert params.path == "csrc/flash_attn/src/flash.h" and params.field("is_causal").kind == "field"
    (switch,) = [m for m in aset.macros() if m.name == "BOOL_SWITCH"]
    assert "CONST_NAME = true" in ix.text_of(switch.macro) and switch.macro.params == ("COND", "CONST_NAME", "...")
    run_fwd = ix.resolve("flash-attention:flash::run_flash_fwd")
    noted = {n.qualified_name for u in ix.uses_by(run_fwd) for n in aset.for_use(u)}
    assert {"BOOL_SWITCH", "flash::Flash_fwd_params"} <= noted
    inline = next(m for m in aset.macros() if m.name == "FLASHINFER_INLINE")
    assert len(ix.macro_users(inline.macro)) > 100  # a head macro: most device functions carry it

    # a member of the base, and a fingerprint from another version: one line each, file and line
    f = root / "flash-attention" / "csrc/flash_attn/src/flash.h.yaml"
    text = f.read_text().replace(f"fingerprint: {params.fingerprint}", "fingerprint: 0123456789abcdef", 1)
    f.write_text(text.replace("    fields:", "    fields:\n      q_ptr: the query", 1))
    r = run_check(real_config, ix, root)
    (bad,) = [d for d in r.diagnostics if d.code == "unknown-field"]
    fields_line = next(i for i, ln in enumerate(text.split("\n"), 1) if ln.startswith("    fields:"))
    assert bad.file.endswith("flash.h.yaml") and bad.line == fields_line + 1
    assert "inherited from flash::Qkv_params" in bad.message and "\n" not in bad.format().split("\n")[0]
    (stale,) = [d for d in r.diagnostics if d.code == "stale"]
    assert "flash::Flash_fwd_params changed since it was annotated" in stale.message and stale.line is not None


def test_cli_new_check_stale_refresh(tmp_path, capsys, monkeypatch):
    """The commands end to end on a tree: `new --type` / `--macro`, `check` (the stub's TODOs),
    an upstream edit (stale, with the diff from the copy `new` stored), `--refresh`."""
    from annotate.cli import main

    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    (src / PATH).parent.mkdir(parents=True)
    (src / PATH).write_text(TYPES_SRC)
    root = tmp_path / "annotations"
    args = ["--annotations", str(root), "--source", f"demo={src}"]
    assert main(["new", "--type", "demo::Params", *args]) == 0
    assert main(["new", "--macro", "DEMO_SWITCH", *args]) == 0
    out = capsys.readouterr().out
    assert "created: stub for demo::Params" in out and "added to: stub for DEMO_SWITCH" in out
    assert main(["new", "--macro", "demo::Params", *args]) == 2  # not a macro: a usage error, nothing written
    assert "unknown macro 'demo::Params'" in capsys.readouterr().err
    assert main(["check", *args]) == 0
    assert "1 files, 0 functions, 1 type, 1 macro: 2 ok" in capsys.readouterr().out
    (src / PATH).write_text(TYPES_SRC.replace("  int rows;\n", "  long rows;\n"))
    assert main(["check", "--json", *args]) == 0
    j = json.loads(capsys.readouterr().out)
    (stale,) = [d for d in j["diagnostics"] if d["code"] == "stale"]
    assert "-  int rows;" in stale["detail"] and "+  long rows;" in stale["detail"]
    assert [t["outcome"] for t in j["types"]] == ["stale"] and [m["outcome"] for m in j["macros"]] == ["ok"]
    assert main(["check", "--refresh", *args]) == 0
    assert "refreshed 1 fingerprint(s)" in capsys.readouterr().out


def test_the_language_policy_covers_types_and_macros(tmp_config, index, root):
    from annotate.notes.policy import POLICY_FILE

    root.mkdir(parents=True, exist_ok=True)
    (root / POLICY_FILE).write_text('[languages]\nrequired = ["en", "zh"]\n')
    r = check(tmp_config, index, root, HEAD + f"""types:
  demo::Params:
    fingerprint: {fp_type(index, "demo::Params")}
    summary: {{en: what a launch gets, zh: 一次启动的参数}}
    fields:
      rows: written by the host, read by every block
macros:
  DEMO_INLINE:
    fingerprint: {fp_macro(index, "DEMO_INLINE")}
    expands_to: an if around the call
""")
    got = sorted(d.message.split(" has no ")[0] for d in r.diagnostics if d.code == "missing-language")
    assert got == ["macros.DEMO_INLINE.expands_to", "types.demo::Params.fields.rows"], got

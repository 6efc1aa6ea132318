"""`annotate new`: stubs in the right file, comments and order of an existing file kept; and
the CLI end to end (`annotate new`, `annotate check`, `--refresh`, `--json`) on a tiny tree
indexed by the real index."""

from __future__ import annotations

import json

import pytest

from annotate.errors import UsageError
from annotate.notes.check import run_check
from annotate.notes.new import new_stub
from annotate.yamlpos import load_yaml
from tests.notes_support import NORM_SRC, index_of

UP, PATH = "demo", "include/demo/norm.cuh"


@pytest.fixture
def index():
    return index_of({(UP, PATH): NORM_SRC})


def test_new_creates_file_with_schema_line(tmp_config, index, tmp_path):
    root = tmp_path / "annotations"
    res = new_stub(tmp_config, index, "demo::norm::RMSNormKernel", root)
    assert res.created and res.file == root / UP / f"{PATH}.yaml"
    text = res.file.read_text()
    first = text.splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=") and first.endswith("schema/annotation.schema.json")
    assert (res.file.parent / first.split("=", 1)[1]).resolve() == tmp_config.schema_file.resolve()
    data = load_yaml(text).data
    entry = data["functions"]["demo::norm::RMSNormKernel"]
    sym = index.find("demo::norm::RMSNormKernel")[0]
    assert data["upstream"] == UP and data["path"] == PATH and entry["fingerprint"] == sym.fingerprint
    assert "shared-static" in entry["memory"][0]["how"]  # the auto facts as a starting list
    assert "# waits at 13" in text and "#   warp_reduce" in text
    report = run_check(tmp_config, index, root)
    assert report.exit_code() == 0 and {d.code for d in report.diagnostics} == {"todo"}


def test_new_appends_and_preserves_existing_file(tmp_config, index, tmp_path):
    root = tmp_path / "annotations"
    f = root / UP / f"{PATH}.yaml"
    f.parent.mkdir(parents=True)
    original = ("# yaml-language-server: $schema=whatever.json\n"
                "upstream: demo   # the upstream\n"
                "path: include/demo/norm.cuh\n"
                "\n"
                "functions:\n"
                "    # reviewers' own comment\n"
                "    demo::norm::warp_reduce:\n"
                "        summary: 'quoted'   # why\n"
                "\n"
                "# trailing comment about the overview\n"
                "overview: last key on purpose\n")
    f.write_text(original)
    res = new_stub(tmp_config, index, "demo::norm::RMSNormKernel", root)
    text = f.read_text()
    assert not res.created
    # every original line survives, in order
    it = iter(text.splitlines())
    assert all(any(line == got for got in it) for line in original.splitlines())
    data = load_yaml(text).data
    assert list(data["functions"]) == ["demo::norm::warp_reduce", "demo::norm::RMSNormKernel"]
    assert data["overview"] == "last key on purpose"
    assert text.index("demo::norm::RMSNormKernel:") < text.index("# trailing comment")
    assert "    demo::norm::RMSNormKernel:" in text  # the file's own indentation
    with pytest.raises(UsageError, match="already annotated"):
        new_stub(tmp_config, index, "demo::norm::warp_reduce", root)


def test_new_overloads_get_signature_and_distinct_keys(tmp_config, index, tmp_path):
    root = tmp_path / "annotations"
    with pytest.raises(UsageError, match="ambiguous"):
        new_stub(tmp_config, index, "demo::norm::Launch", root)
    new_stub(tmp_config, index, "demo:demo::norm::Launch@include/demo/norm.cuh:23", root)
    res = new_stub(tmp_config, index, "demo:demo::norm::Launch@include/demo/norm.cuh:27", root)
    assert res.key == "demo::norm::Launch@2"
    report = run_check(tmp_config, index, root)
    assert sorted(fn.symbol.start_line for fn in report.result.set.functions()) == [23, 27]
    with pytest.raises(UsageError, match="already annotated"):
        new_stub(tmp_config, index, "demo:demo::norm::Launch@include/demo/norm.cuh:27", root)


def test_new_flow_style_functions_falls_back_to_roundtrip(tmp_config, index, tmp_path):
    root = tmp_path / "annotations"
    f = root / UP / f"{PATH}.yaml"
    f.parent.mkdir(parents=True)
    f.write_text("upstream: demo\npath: include/demo/norm.cuh\nfunctions: {demo::norm::warp_reduce: {summary: x}}  # c\n")
    new_stub(tmp_config, index, "demo::norm::RMSNormKernel", root)
    data = load_yaml(f.read_text()).data
    assert set(data["functions"]) == {"demo::norm::warp_reduce", "demo::norm::RMSNormKernel"}


# ---- CLI, real index on a tiny tree ----------------------------------------------------------

@pytest.fixture
def tiny_tree(tmp_path):
    src = tmp_path / "src" / PATH
    src.parent.mkdir(parents=True)
    src.write_text(NORM_SRC)
    return tmp_path / "src"


def test_cli_new_check_refresh_json(tiny_tree, tmp_path, capsys, monkeypatch):
    from annotate.cli import main

    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "annotations"
    args = ["--annotations", str(root), "--source", f"demo={tiny_tree}"]
    assert main(["new", "demo::norm::warp_reduce", *args]) == 0
    assert "created: stub for demo::norm::warp_reduce" in capsys.readouterr().out
    assert main(["check", *args]) == 0
    out = capsys.readouterr().out
    assert "warning [todo]" in out and "1 files, 1 functions: 1 ok, 0 stale, 0 broken" in out
    assert main(["check", "--strict", *args]) == 1
    capsys.readouterr()
    # the body changes: stale, with a diff from the stored copy that `new` kept
    (tiny_tree / PATH).write_text(NORM_SRC.replace("x += shfl_xor(x, 8);", "x += shfl_xor(x, 2);"))
    assert main(["check", "--json", *args]) == 0
    j = json.loads(capsys.readouterr().out)
    stale = [d for d in j["diagnostics"] if d["code"] == "stale"]
    assert j["summary"]["stale"] == 1 and "+  x += shfl_xor(x, 2);" in stale[0]["detail"]
    assert main(["check", "--refresh", *args]) == 0
    assert "refreshed 1 fingerprint(s)" in capsys.readouterr().out
    assert main(["check", "--json", *args]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["ok"] == 1


def test_cli_never_tracebacks_on_bad_arguments(tmp_path, capsys, monkeypatch):
    from annotate.cli import main

    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["check", "--source", "nonsense"]) == 2
    assert main(["check", "--source", f"demo={tmp_path / 'nope'}"]) == 2
    assert "error" in capsys.readouterr().err


def test_cli_check_selected_files(tiny_tree, tmp_path, capsys, monkeypatch):
    from annotate.cli import main

    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "annotations"
    other = root / "demo" / "include" / "demo" / "other.cuh.yaml"
    other.parent.mkdir(parents=True)
    other.write_text("upstream: demo\npath: include/demo/other.cuh\nfunctions: {x: {}}\n")
    args = ["--annotations", str(root), "--source", f"demo={tiny_tree}"]
    assert main(["new", "demo::norm::warp_reduce", *args]) == 0
    capsys.readouterr()
    assert main(["check", *args]) == 1  # other.cuh.yaml is broken
    assert main(["check", str(root / "demo" / "include" / "demo" / "norm.cuh.yaml"), *args]) == 0
    assert "1 files, 1 functions" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "elsewhere.yaml"), *args]) == 2

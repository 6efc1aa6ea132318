"""`annotate check` on small annotation files against the real index of a tiny tree: one test
per error class, plus --refresh, --json and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.notes.check import StaleExplainer, format_report, run_check
from annotate.notes.history import BodyStore
from tests.notes_support import NORM_SRC, index_of, write_annotation

UP, PATH = "demo", "include/demo/norm.cuh"


@pytest.fixture
def index():
    return index_of({(UP, PATH): NORM_SRC, (UP, "include/demo/other.cuh"): "namespace demo {\nvoid helper(int n) {\n  n++;\n}\n}\n"})


@pytest.fixture
def root(tmp_path):
    return tmp_path / "annotations"


def fp_of(index, name):
    return next(s for s in index.all_symbols() if s.qualified_name == name).fingerprint


def check(tmp_config, index, root, body, name=None, **kw):
    name = name or PATH
    write_annotation(root, UP, name, body, config=tmp_config)
    return run_check(tmp_config, index, root, explainer=StaleExplainer(tmp_config), **kw)


def codes(report, severity=None):
    return [d.code for d in report.diagnostics if severity in (None, d.severity)]


def only(report, code):
    ds = [d for d in report.diagnostics if d.code == code]
    assert len(ds) == 1, [d.format() for d in report.diagnostics]
    return ds[0]


HEAD = f"upstream: {UP}\npath: {PATH}\n"


def test_clean_file_is_ok(tmp_config, index, root):
    fp = fp_of(index, "demo::norm::RMSNormKernel")
    r = check(tmp_config, index, root, HEAD + f"""functions:
  demo::norm::RMSNormKernel:
    fingerprint: {fp}
    summary: {{en: sums squares, zh: 平方和}}
    calls: {{warp_reduce: butterfly}}
    notes:
      - at: "sum_sq = warp_reduce( sum_sq )"
        text: the reduction
""")
    assert r.diagnostics == [], format_report(r)
    assert r.exit_code() == 0 and r.counts()["ok"] == 1
    fn = r.result.set.files[0].functions[0]
    assert fn.status == "ok" and fn.summary.zh == "平方和"
    assert fn.notes[0].line == 12  # whitespace-insensitive anchor found on its line
    assert r.result.set.for_symbol(fn.symbol) is fn


def test_yaml_syntax_error_has_position(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  a: [1, 2\n  b: 3\n")
    d = only(r, "yaml-syntax")
    assert d.line is not None and d.column is not None and d.file.endswith("norm.cuh.yaml")
    assert r.exit_code() == 1


def test_schema_error_names_key_and_position(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce:\n    summary: [a, b]\n")
    d = only(r, "wrong-type")
    assert "functions.demo::norm::warp_reduce.summary" in d.message and (d.line, d.column) == (6, 14)


def test_unknown_key_did_you_mean(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce:\n    summery: x\n    memory:\n      - what: a\n        path: b\n        hwo: c\n")
    msgs = [d.message for d in r.diagnostics if d.code == "unknown-key"]
    assert any("did you mean 'summary'" in m for m in msgs)
    assert any("did you mean 'how'" in m for m in msgs)
    top = check(tmp_config, index, root, HEAD + "overveiw: x\n")
    assert "did you mean 'overview'" in only(top, "unknown-key").message


def test_missing_required_key(tmp_config, index, root):
    r = check(tmp_config, index, root, f"path: {PATH}\n")
    assert "missing required key 'upstream'" in only(r, "missing-key").message


def test_location_mismatch(tmp_config, index, root):
    r = check(tmp_config, index, root, f"upstream: {UP}\npath: include/demo/other.cuh\n")
    d = only(r, "location-mismatch")
    assert "other.cuh.yaml" in d.message and d.line == 3


@pytest.mark.parametrize("bad", ["../etc/passwd", "/etc/passwd", "include/../../x.cuh", "include\\\\demo.cuh", "./include/demo/norm.cuh"])
def test_paths_outside_upstream_refused(tmp_config, index, root, bad):
    r = check(tmp_config, index, root, f"upstream: {UP}\npath: \"{bad}\"\n")
    assert "path-outside" in codes(r), format_report(r)
    assert r.exit_code() == 1


def test_missing_file_suggests_nearest(tmp_config, index, root):
    r = check(tmp_config, index, root, f"upstream: {UP}\npath: include/demo/nrom.cuh\n", name="include/demo/nrom.cuh")
    assert "did you mean include/demo/norm.cuh" in only(r, "missing-file").message


def test_unknown_upstream(tmp_config, index, root):
    write_annotation(root, "dmeo", PATH, f"upstream: dmeo\npath: {PATH}\n", config=tmp_config)
    r = run_check(tmp_config, index, root)
    assert "did you mean 'demo'" in only(r, "unknown-upstream").message


def test_unresolved_symbol_nearest_names(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_redcue: {summary: x}\n  demo::helper: {summary: y}\n")
    ds = [d for d in r.diagnostics if d.code == "unresolved"]
    assert "did you mean 'demo::norm::warp_reduce'" in ds[0].message
    assert "include/demo/other.cuh" in ds[1].detail  # defined in another file
    assert r.counts()["broken"] == 2


def test_unqualified_name_resolves_with_warning(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  warp_reduce: {summary: x}\n")
    assert "demo::norm::warp_reduce" in only(r, "not-qualified").message
    assert r.result.set.files[0].functions[0].symbol is not None


def test_ambiguous_symbol_and_signature(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::Launch: {summary: x}\n")
    d = only(r, "ambiguous")
    assert "Launch(int n)" in d.detail and "Launch(float x)" in d.detail
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::Launch: {signature: float x, summary: x}\n"
              "  demo::norm::Launch@int: {signature: 'Launch(int', summary: y}\n")
    assert "ambiguous" not in codes(r)
    lines = sorted(f.symbol.start_line for f in r.result.set.files[0].functions)
    assert lines == [23, 27]
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::Launch: {signature: double, summary: x}\n")
    assert "signature-mismatch" in codes(r)


def test_anchor_missing_and_ambiguous(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + """functions:
  demo::norm::RMSNormKernel:
    notes:
      - at: "input[i]"
        text: twice on one line
      - at: "sum_sq += float(input[j])"
        text: nowhere
      - at: "x += shfl_xor(x, 16)"
        text: in another function
""")
    amb = only(r, "anchor-ambiguous")
    assert "2 places" in amb.message and amb.line == 7
    miss = [d for d in r.diagnostics if d.code == "anchor-missing"]
    assert len(miss) == 2 and "closest line 10" in miss[0].detail
    assert r.counts()["broken"] == 1 and r.exit_code() == 1


def test_call_not_found_is_warning(tmp_config, index, root):
    fp = fp_of(index, "demo::norm::warp_reduce")
    r = check(tmp_config, index, root, HEAD + f"functions:\n  demo::norm::warp_reduce:\n    fingerprint: {fp}\n    calls: {{shfl_xor: ok, nope: no}}\n")
    assert codes(r) == ["call-not-found"] and r.exit_code() == 0 and r.exit_code(strict=True) == 1


def test_missing_fingerprint_warns_and_refresh_writes_it(tmp_config, index, root):
    body = HEAD + "# a comment that must survive\nfunctions:\n  demo::norm::warp_reduce:   # trailing\n    summary: x  # why\n"
    r = check(tmp_config, index, root, body)
    d = only(r, "no-fingerprint")
    assert "annotate check --refresh" in d.message and r.exit_code() == 0
    r = run_check(tmp_config, index, root, refresh=True)
    assert r.refreshed == 1 and r.diagnostics == []
    text = (root / UP / f"{PATH}.yaml").read_text()
    fp = fp_of(index, "demo::norm::warp_reduce")
    assert f"    fingerprint: {fp}\n" in text
    assert "# a comment that must survive" in text and "# trailing" in text and "summary: x  # why" in text
    assert BodyStore(tmp_config).get(fp) is not None


def test_stale_with_diff_from_stored_body(tmp_config, index, root):
    old_src = NORM_SRC.replace("x += shfl_xor(x, 8);", "x += shfl_xor(x, 4);")
    old = index_of({(UP, PATH): old_src})
    sym = next(s for s in old.all_symbols() if s.name == "warp_reduce")
    BodyStore(tmp_config).put(sym.fingerprint, old.text_of(sym))
    r = check(tmp_config, index, root, HEAD + f"functions:\n  demo::norm::warp_reduce:\n    fingerprint: {sym.fingerprint}\n")
    d = only(r, "stale")
    assert d.severity == "warning" and r.exit_code() == 0 and r.exit_code(strict=True) == 1
    assert "-  x += shfl_xor(x, 4);" in d.detail and "+  x += shfl_xor(x, 8);" in d.detail
    assert "@@ -2,3 +18,3 @@" in d.detail  # the new side is numbered in file lines
    assert r.counts()["stale"] == 1


def test_stale_without_history_shows_current_lines(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce:\n    fingerprint: 00000000000000ff\n")
    d = only(r, "stale")
    assert "cannot be recovered" in d.detail and "x += shfl_xor(x, 16);" in d.detail


def test_bad_fingerprint_format(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce:\n    fingerprint: 1234\n")
    assert only(r, "wrong-type").line == 6
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce:\n    fingerprint: xyz\n")
    assert "16 lowercase hex" in only(r, "bad-value").message


def test_schema_line_missing_or_wrong(tmp_config, index, root):
    write_annotation(root, UP, PATH, HEAD, schema_line=None)
    r = run_check(tmp_config, index, root)
    d = only(r, "schema-line")
    assert d.severity == "warning" and "yaml-language-server: $schema=" in d.detail
    write_annotation(root, UP, PATH, HEAD, schema_line="# yaml-language-server: $schema=../schema.json")
    assert "schema/annotation.schema.json" in only(run_check(tmp_config, index, root), "schema-line").message


def test_one_bad_function_does_not_hide_others(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce: {summary: [1]}\n  demo::norm::RMSNormKernel: {summary: fine}\n")
    names = [f.qualified_name for f in r.result.set.files[0].functions]
    assert names == ["demo::norm::RMSNormKernel"]
    assert r.counts() | {} == r.counts() and r.counts()["broken"] == 1


def test_courses(tmp_config, index, root):
    c = root / "courses" / "demo-course.yaml"
    c.parent.mkdir(parents=True)
    c.write_text("id: demo-course\ntitle: {en: Demo, zh: 演示}\nsteps:\n  - id: day-1\n    title: norm\n"
                 "    refs: [demo:include/demo/norm.cuh, demo:demo::norm::RMSNormKernel, demo:nope::x, demo:include/x.cuh]\n")
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce: {course: [day-1, day-9]}\n")
    bad = [d for d in r.diagnostics if d.code == "bad-ref"]
    assert len(bad) == 2 and bad[0].line == 6
    assert "day-9" in only(r, "unknown-course").message
    course = r.result.set.courses[0]
    assert course.title.get("zh") == "演示" and course.steps[0].refs[0] == "demo:include/demo/norm.cuh"


def test_json_output_and_summary(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce: {summary: x}\n  demo::norm::nope: {}\n")
    j = json.loads(json.dumps(r.to_json()))
    assert j["summary"]["functions"] == 2 and j["summary"]["broken"] == 1 and j["summary"]["errors"] == 1
    assert {f["name"] for f in j["functions"]} == {"demo::norm::warp_reduce", "demo::norm::nope"}
    assert "1 files, 2 functions: 1 ok, 0 stale, 1 broken" in r.summary_line()


def test_internal_error_becomes_diagnostic(tmp_config, index, root):
    from annotate.index.api import Index

    class Exploding(Index):
        def symbols_in(self, upstream, path):
            raise RuntimeError("boom")

        def text_of(self, sym):
            raise RuntimeError("boom")

    bad = Exploding.merged(index_of({(UP, PATH): NORM_SRC}))
    bad.symbols_in = None  # not even callable: the loader must still cope
    r = check(tmp_config, bad, root, HEAD + "functions:\n  demo::norm::warp_reduce: {}\n")
    assert r.exit_code() == 1
    assert all(isinstance(d.message, str) for d in r.diagnostics)


def _git(repo: Path, *args: str) -> str:
    import subprocess

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.fixture
def demo_repo(tmp_path):
    """A local git repository of the 'demo' upstream with three versions of norm.cuh."""
    repo = tmp_path / "mirror"
    (repo / "include/demo").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for i, (a, b) in enumerate([("8", "4"), ("4", "2"), ("2", "8")]):
        (repo / PATH).write_text(NORM_SRC.replace("x += shfl_xor(x, 8);", f"x += shfl_xor(x, {b});"))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"v{i}")
        _git(repo, "tag", f"v{i}")
    return repo


def test_stale_diff_from_git_history(tmp_config, index, root, demo_repo):
    from annotate.config import Config
    from annotate.index.api import index_directory

    old = index_of({(UP, PATH): NORM_SRC.replace("x += shfl_xor(x, 8);", "x += shfl_xor(x, 4);")})
    fp = next(s for s in old.all_symbols() if s.name == "warp_reduce").fingerprint
    config = Config.load(environ={"ANNOTATE_URL_DEMO": f"file://{demo_repo}"}, cache_dir=tmp_config.cache_dir)
    write_annotation(root, UP, PATH, HEAD + f"functions:\n  demo::norm::warp_reduce:\n    fingerprint: {fp}\n",
                     config=config)
    r = run_check(config, index, root, explainer=StaleExplainer(config, indexer=index_directory))
    d = only(r, "stale")
    assert "from git " in d.detail and "-  x += shfl_xor(x, 4);" in d.detail and "@@ -18,3 +18,3 @@" in d.detail
    assert BodyStore(config).get(fp) is not None  # found once, kept for next time


def test_stale_diff_from_against_tree(tmp_config, index, root, tmp_path):
    from annotate.index.api import index_directory

    tree = tmp_path / "other"
    (tree / "include/demo").mkdir(parents=True)
    (tree / PATH).write_text(NORM_SRC.replace("x += shfl_xor(x, 16);", "x += shfl_xor(x, 32);"))
    fp = next(s for s in index_of({(UP, PATH): (tree / PATH).read_text()}).all_symbols()
              if s.name == "warp_reduce").fingerprint
    write_annotation(root, UP, PATH, HEAD + f"functions:\n  demo::norm::warp_reduce:\n    fingerprint: {fp}\n",
                     config=tmp_config)
    ex = StaleExplainer(tmp_config, indexer=index_directory, against_tree=str(tree))
    d = only(run_check(tmp_config, index, root, explainer=ex), "stale")
    assert f"--against-dir {tree}" in d.detail and "-  x += shfl_xor(x, 32);" in d.detail


def test_drift_against_git_ref(tmp_config, index, root, demo_repo, tmp_path, monkeypatch):
    import tempfile

    from annotate.config import Config
    from annotate.notes.drift import run_drift
    from annotate.index.api import index_directory

    config = Config.load(environ={"ANNOTATE_URL_DEMO": str(demo_repo)}, cache_dir=tmp_config.cache_dir)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    fp = fp_of(index, "demo::norm::warp_reduce")
    write_annotation(root, UP, PATH, HEAD + f"functions:\n  demo::norm::warp_reduce:\n    fingerprint: {fp}\n"
                     f"  demo::norm::RMSNormKernel:\n    fingerprint: {fp_of(index, 'demo::norm::RMSNormKernel')}\n",
                     config=config)
    for ref, kind in (("v2", "unchanged"), ("v0", "changed")):
        report = run_check(config, index, root)
        run_drift(config, report, index, ref=ref, tree=None, git_dir=None, upstream=None,
                  indexer=index_directory)
        got = {e.name: e.kind for e in report.drift}
        assert got == {"demo::norm::warp_reduce": kind, "demo::norm::RMSNormKernel": "unchanged"}
        assert report.drift[0].target.startswith(f"{ref} (")
        assert not any(scratch.iterdir())  # the exported files are removed once the drift is known
    report = run_check(config, index, root)
    run_drift(config, report, index, ref="nope", tree=None, git_dir=None, upstream=None, indexer=index_directory)
    assert "is not a commit" in report.drift_diagnostics[0].message


@pytest.mark.parametrize("body, code, line, col", [
    (HEAD + "functions:\n  demo::norm::warp_reduce: {}\n  demo::norm::warp_reduce: {}\n", "duplicate-key", 6, 3),
    (HEAD + "functions:\n\tdemo::norm::warp_reduce: {}\n", "yaml-syntax", 5, 1),
    (HEAD + "overview: &o text\nfunctions:\n  demo::norm::warp_reduce: {summary: *o}\n", "yaml-alias", 4, 11),
    (HEAD + "overview: !!python/object/apply:os.system [ls]\n", "yaml-tag", 4, 11),
    (HEAD + "overview: " + "[" * 100 + "]" * 100 + "\n", "yaml-too-deep", 4, None),
    ("", "yaml-empty", 1, 1),
])
def test_refused_yaml_features_have_positions(tmp_config, index, root, body, code, line, col):
    r = check(tmp_config, index, root, body)
    d = only(r, code)
    assert d.line == line and (col is None or d.column == col), d.format()
    assert r.exit_code() == 1


def test_bad_utf8_position(tmp_config, index, root):
    f = write_annotation(root, UP, PATH, HEAD, config=tmp_config)
    f.write_bytes(f.read_bytes() + b"overview: caf\xe9\n")
    d = only(run_check(tmp_config, index, root), "encoding")
    assert (d.line, d.column) == (4, 14) and "0xe9" in d.message


def test_bug_in_one_file_is_contained(tmp_config, index, root, monkeypatch):
    from annotate.notes import api

    def boom(body, at):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(api, "find_anchor", boom)
    write_annotation(root, UP, "include/demo/other.cuh", f"upstream: {UP}\npath: include/demo/other.cuh\n"
                     "functions:\n  demo::helper: {summary: fine}\n", config=tmp_config)
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce:\n    notes: [{at: x, text: y}]\n")
    d = only(r, "internal")
    assert d.file.endswith("norm.cuh.yaml") and d.line == 5 and "ZeroDivisionError" in d.message
    assert r.counts()["functions"] == 2 and r.counts()["broken"] == 1


def test_two_entries_for_one_definition(tmp_config, index, root):
    r = check(tmp_config, index, root, HEAD + "functions:\n  demo::norm::warp_reduce: {}\n  demo::norm::warp_reduce@again: {}\n")
    d = only(r, "duplicate-entry")
    assert d.line == 6 and "line 5" in d.message


def test_file_of_the_pin_absent_from_a_partial_checkout_is_unchecked_not_broken(tmp_config, index, root, monkeypatch):
    # The archive route ships no hopper/ headers: notes on them cannot be checked there, which
    # is said (info: a limit of the checkout, not a fault of the notes, so `--strict` passes on an
    # archive-fetched cache), while a path that is not in the pin at all stays an error.
    import annotate.fetch.api as fetch_api

    absent = "include/demo/hopper.cuh"
    monkeypatch.setattr(fetch_api, "missing_paths", lambda config, name: frozenset({absent}) if name == UP else frozenset())
    write_annotation(root, UP, absent, f"upstream: {UP}\npath: {absent}\nfunctions:\n  demo::f: {{summary: x}}\n",
                     config=tmp_config)
    r = check(tmp_config, index, root, f"upstream: {UP}\npath: include/demo/nrom.cuh\n", name="include/demo/nrom.cuh")
    assert only(r, "not-in-checkout").severity == "info"
    assert only(r, "missing-file").severity == "error"
    assert r.counts()["unchecked"] == 1 and r.counts()["broken"] == 0
    assert r.exit_code(strict=True) == 1  # the missing file; the unchecked one alone would pass


def test_file_of_an_included_only_submodule_that_nothing_includes_is_unchecked(tmp_config, index, root, monkeypatch):
    # cutlass is indexed only as far as Flash-Attention's files include it; the archive route lacks
    # hopper/, the only includer of cutlass/device_kernel.h, so that file is in the checkout but not
    # in the index: its notes are unchecked there (info), not a missing file (error)
    import types

    import annotate.upstreams as upstreams

    pin = types.SimpleNamespace(name=UP, commit="c0ffee", included_only_paths=lambda: ["third_party/lib/include"])
    monkeypatch.setattr(upstreams, "load_upstreams", lambda config: {UP: pin})
    path = "third_party/lib/include/kernel.h"
    src = tmp_config.checkout_dir(UP, "c0ffee") / path
    src.parent.mkdir(parents=True)
    src.write_text("__global__ void k() {}\n")
    r = check(tmp_config, index, root, f"upstream: {UP}\npath: {path}\nfunctions:\n  k: {{summary: x}}\n", name=path)
    d = only(r, "not-included")
    assert d.severity == "info" and "third_party/lib/include is indexed only as far as" in d.message
    assert r.counts()["unchecked"] == 1 and r.exit_code(strict=True) == 0
    src.unlink()  # not in the checkout at all: a file the pin does not have
    r = check(tmp_config, index, root, f"upstream: {UP}\npath: {path}\n", name=path)
    assert only(r, "missing-file").severity == "error"


def test_harness_must_name_a_runnable_kernel(tmp_config, index, root):
    # vendor_kernels/common/ and results/ are folders, not harnesses: only folders with a spec count
    from annotate.commands.notes import known_harnesses

    fp = fp_of(index, "demo::norm::warp_reduce")
    kernels = known_harnesses(tmp_config)
    good = check(tmp_config, index, root, HEAD + f"functions:\n  demo::norm::warp_reduce:\n    fingerprint: {fp}\n    harness: rmsnorm\n",
                 known_harnesses=kernels)
    assert "unknown-harness" not in codes(good)
    for bad in ("common", "results", "rmsnrom"):
        r = check(tmp_config, index, root, HEAD + f"functions:\n  demo::norm::warp_reduce:\n    fingerprint: {fp}\n    harness: {bad}\n",
                  known_harnesses=kernels)
        assert only(r, "unknown-harness").severity == "warning", bad

"""The whole site build on the demo fixture through the real index and notes stages:
outputs, incremental rebuilds, the CLI, `annotate serve`; and (slow) the real pins."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import (ANNOTATIONS, DECODE, NORM, SRC, UP, build_fixture_site, demo_upstream,  # noqa: E402
                          make_demo_repo)

from annotate.config import Config  # noqa: E402
from site_builder import build as site_build, names, site_pages  # noqa: E402
from site_builder.build import build_site, input_stamp  # noqa: E402


@pytest.fixture
def demo_repo(tmp_path: Path) -> Config:
    """The demo pin "fetched" into the cache of a repository root (site_support.make_demo_repo)."""
    config = make_demo_repo(tmp_path)
    _write_fetch_record(config, demo_upstream())
    return config


def _write_fetch_record(config: Config, up) -> None:
    """Mark the demo checkout as fetched, the way the fetch stage records it."""
    import json

    from annotate.fetch.api import FetchRecord

    rec = FetchRecord(name=up.name, commit=up.commit, tag=up.tag, route="existing", source="tests", reason="fixture",
                      root=config.checkout_dir(up.name, up.commit), fetched_at="2026-01-01T00:00:00Z", seconds=0.0,
                      verified="commit", files=2, selection=up.selection())
    config.fetch_record(up.name, up.commit).write_text(json.dumps(rec.to_json()))


def test_fixture_site_outputs(tmp_config, tmp_path):
    out = tmp_path / "site"
    rep = build_fixture_site(tmp_config, out)
    assert rep.pages_total == 2 and rep.pages_rendered == 2
    for rel in (names.INDEX_PAGE, names.SEARCH_INDEX, names.SEARCH_NOTES, names.source_page(UP, NORM), names.source_page(UP, DECODE),
                names.course_page("demo-course"), "assets/base.css", "assets/search.js", "assets/site.js"):
        assert (out / rel).is_file(), rel
    # offline: nothing is loaded from elsewhere
    for p in out.rglob("*.html"):
        html = p.read_text()
        assert 'src="http' not in html and '<link rel="stylesheet" href="http' not in html
    norm = (out / names.source_page(UP, NORM)).read_text()
    assert '<aside class="note fn"' in norm and "warp reduction" in norm  # real notes resolved by the notes stage
    assert '<aside class="note in"' in norm and "Five butterfly steps" in norm
    decode = (out / names.source_page(UP, DECODE)).read_text()
    assert '<a href="norm.cuh.html#f-shfl_xor_sync-7">shfl_xor_sync</a>' in decode  # real index's call edges
    assert '<div class="fg an stale"' in decode


def test_incremental_rebuilds_only_what_changed(tmp_config, tmp_path):
    out = tmp_path / "site"
    build_fixture_site(tmp_config, out)
    page = out / names.source_page(UP, DECODE)
    before = page.stat().st_mtime_ns
    rep = build_fixture_site(tmp_config, out)
    assert rep.pages_rendered == 0 and rep.stats.written == 0
    # Change the notes of norm.cuh only: one source page is rendered again.
    from annotate.notes import model as M

    def edited(index):
        from annotate.notes.api import load_annotations

        notes = load_annotations(tmp_config, index, root=ANNOTATIONS)
        f0 = next(f for f in notes.files if f.path == NORM)
        fn = f0.functions[0]
        import dataclasses

        new_fn = dataclasses.replace(fn, summary=M.Text("Edited summary."))
        files = tuple(dataclasses.replace(f0, functions=(new_fn,)) if f is f0 else f for f in notes.files)
        return dataclasses.replace(notes, files=files)

    rep = build_fixture_site(tmp_config, out, annotations=edited)
    assert rep.pages_rendered == 1
    assert "Edited summary." in (out / names.source_page(UP, NORM)).read_text()
    assert page.stat().st_mtime_ns == before  # untouched file, untouched bytes


def _build(config, out, **kw):
    from annotate.project import open_project

    return build_site(open_project(config, fetch=True), out, **kw)


def test_noop_rebuild_from_stats_alone(demo_repo, tmp_path):
    out = tmp_path / "site"
    rep = _build(demo_repo, out)
    assert not rep.noop and rep.pages_rendered == 2
    rep = _build(demo_repo, out)
    assert rep.noop
    stamp = input_stamp(demo_repo, {UP: demo_upstream()})
    yaml_file = demo_repo.annotations_dir / UP / f"{NORM}.yaml"
    yaml_file.write_text(yaml_file.read_text().replace("Five butterfly steps", "Five steps"))
    assert input_stamp(demo_repo, {UP: demo_upstream()}) != stamp
    rep = _build(demo_repo, out)
    assert not rep.noop and rep.pages_rendered == 1
    assert "Five steps reduce" in (out / names.source_page(UP, NORM)).read_text()
    # a deleted output is noticed and written again
    (out / names.source_page(UP, DECODE)).unlink()
    rep = _build(demo_repo, out)
    assert rep.pages_rendered == 1 and (out / names.source_page(UP, DECODE)).is_file()


def test_traces_are_made_in_a_second_process_and_one_that_fails_costs_nothing(demo_repo, tmp_path, monkeypatch):
    """A build that is not answered from the stamp traces in a forked process while it reads the
    notes (site_builder.traces.start_traces), which leaves them in the site cache; should that
    process fail, the build traces itself and makes the same site."""
    import os

    from site_builder import traces

    waited = []
    real = traces.start_traces

    def spy(project):
        wait = real(project)
        waited.append(wait)
        return wait

    monkeypatch.setattr(traces, "start_traces", spy)
    one = tmp_path / "one"
    _build(demo_repo, one)
    from multiprocessing.process import BaseProcess

    child = getattr(waited[0], "__self__", None)  # the process's join, not a no-op
    assert isinstance(child, BaseProcess) and child.exitcode == 0
    cached = list((demo_repo.site_cache_dir() / "traces").glob("traces-*.json"))
    assert len(cached) == 1
    cached[0].unlink()
    monkeypatch.setattr(traces, "_trace_in_child", lambda project: os._exit(1))
    two = tmp_path / "two"
    _build(demo_repo, two)
    assert len(waited) == 2 and waited[1].__self__.exitcode == 1
    assert len(list((demo_repo.site_cache_dir() / "traces").glob("traces-*.json"))) == 1  # made by the build
    def files(d):
        return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()
                and p.name != names.MANIFEST}
    assert files(one) == files(two)


NORM_YAML = f"{UP}/{NORM}.yaml"
COURSE_YAML = "courses/demo-course.yaml"
DECODE_YAML = f"{UP}/{DECODE}.yaml"
NEW_ENTRY = """  demo::RMSNorm:
    summary: The launcher.
"""
# (annotation file, text, replacement, whether only that file's pages and the search index can change)
NOTE_EDITS = {
    "summary": (NORM_YAML, "sum of squares, **warp reduction**", "sum of squares, then a **warp reduction**", True),
    "inline note": (NORM_YAML, "Five butterfly steps", "Five steps", True),
    "overview": (NORM_YAML, "one block per row (a fixture", "one block per row, edited (a fixture", True),
    "a line more": (NORM_YAML, "    decomposition: grid", "    # a comment line\n    decomposition: grid", True),
    "a new note": (NORM_YAML, "functions:\n", "functions:\n" + NEW_ENTRY, False),
    "a broken anchor": (NORM_YAML, '"sum_sq += math::shfl_xor_sync"', '"no such code"', False),
    "a course title": (COURSE_YAML, "title: {en: Demo course", "title: {en: Demo course, edited", False),
    "a type's summary": (DECODE_YAML, "What one `ParamsKernel` launch", "What each `ParamsKernel` launch", True),
    "a macro's expansion": (DECODE_YAML, "the body is compiled twice.", "the body is compiled two times.", True),
    "a type made stale": (DECODE_YAML, "fingerprint: 093e37447081204b", "fingerprint: 0000000000000000", False),
    "a macro note renamed": (DECODE_YAML, "  DEMO_SWITCH:\n", "  DEMO_NO_SUCH_MACRO:\n", False),
}


@pytest.mark.parametrize("edit", sorted(NOTE_EDITS))
def test_a_note_edit_builds_what_a_fresh_build_builds(demo_repo, tmp_path, monkeypatch, edit):
    """After an annotation file changes, the build renders only that file's pages and the notes'
    part of the search index when the notes' global facts stayed (reading none of the index but
    those files, nor the index's part of the search index), else
    the usual way; either way the site equals a fresh build's, byte for byte."""
    from annotate.index.api import Index

    out, fresh = tmp_path / "site", tmp_path / "fresh"
    _build(demo_repo, out)
    name, old, new, notes_only = NOTE_EDITS[edit]
    f = demo_repo.annotations_dir / name
    assert old in f.read_text()
    f.write_text(f.read_text().replace(old, new, 1))
    if notes_only:
        def everything(*a, **k):
            raise AssertionError("a note edit read the whole index")
        monkeypatch.setattr(Index, "files", everything)

        def search_base(*a, **k):
            raise AssertionError("a note edit read the index's part of the search index")
        monkeypatch.setattr(site_build, "_search_base", search_base)
    rep = _build(demo_repo, out)
    monkeypatch.undo()
    assert rep.notes_only == notes_only and not rep.noop
    if notes_only:
        assert rep.pages_rendered <= 1
    _build(demo_repo, fresh)
    made = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file())
    assert made == sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    for rel in made:
        if rel != names.MANIFEST:
            assert (out / rel).read_bytes() == (fresh / rel).read_bytes(), rel
    assert _build(demo_repo, out).noop


def test_a_note_edit_with_the_search_keys_damaged_builds_the_usual_way(demo_repo, tmp_path):
    """The notes' part of the search index numbers rows by the cached keys alone; a damaged keys
    file is no input: the build takes the usual path, makes the keys again, and the site is right."""
    out = tmp_path / "site"
    _build(demo_repo, out)
    (keys,) = (demo_repo.site_cache_dir() / "search").glob("*.keys")
    keys.write_text('[["function", 3]]')
    name, old, new, _ = NOTE_EDITS["summary"]
    f = demo_repo.annotations_dir / name
    f.write_text(f.read_text().replace(old, new, 1))
    rep = _build(demo_repo, out)
    assert not rep.notes_only
    assert site_pages.checked_search_keys(json.loads(keys.read_text())) is not None
    fresh = tmp_path / "fresh"
    _build(demo_repo, fresh)
    for rel in (names.SEARCH_INDEX, names.SEARCH_NOTES):
        assert (out / rel).read_bytes() == (fresh / rel).read_bytes(), rel


# warp_decode's SASS has lines in norm.cuh (it inlines shfl_xor_sync); rmsnorm's none in decode.cuh
@pytest.mark.parametrize("edit, harnesses", [("summary", ["rmsnorm", "warp_decode"]),
                                             ("a type's summary", ["warp_decode"])])
def test_a_note_edit_reads_only_the_records_of_its_pages(demo_repo, tmp_path, monkeypatch, edit, harnesses):
    """With the harnesses' committed records in the repository, a build after a note edit reads
    the compiled view of only the harnesses whose records name its pages (the manifest says which,
    from the last build over the same records), and still makes what a fresh build makes."""
    import shutil

    import annotate.harness.compiled as hc
    from site_support import REPO

    for part in ("rmsnorm", "warp_decode", "results"):
        shutil.copytree(REPO / "vendor_kernels" / part, demo_repo.repo_root / "vendor_kernels" / part)
    out, fresh = tmp_path / "site", tmp_path / "fresh"
    _build(demo_repo, out)
    assert '<button type=button class="fm sm' in (out / names.source_page(UP, NORM)).read_text()
    name, old, new, notes_only = NOTE_EDITS[edit]
    f = demo_repo.annotations_dir / name
    f.write_text(f.read_text().replace(old, new, 1))
    read, real = [], hc.load_compiled
    monkeypatch.setattr(hc, "load_compiled", lambda config, kernel: read.append(kernel) or real(config, kernel))
    rep = _build(demo_repo, out)
    monkeypatch.undo()
    assert rep.notes_only and rep.pages_rendered == 1 and sorted(set(read)) == harnesses
    _build(demo_repo, fresh)
    for p in fresh.rglob("*"):
        if p.is_file() and p.name != names.MANIFEST:
            rel = p.relative_to(fresh).as_posix()
            assert (out / rel).read_bytes() == p.read_bytes(), rel


def test_a_note_edit_under_serve_renders_its_pages_only_and_only_with_the_same_index(demo_repo, tmp_path):
    """`annotate serve` holds a loaded index and reads the notes again after a save: that build
    takes the notes-only path too (its page, the search index), and makes what a fresh build
    makes; a project holding another index than the last build's builds the usual way."""
    import shutil

    from annotate.index.api import index_directory
    from annotate.project import open_project

    out, fresh = tmp_path / "site", tmp_path / "fresh"
    pins = {UP: demo_upstream()}
    project = open_project(demo_repo, index=index_directory(UP, SRC), pins=pins)
    assert not build_site(project, out).notes_only
    f = demo_repo.annotations_dir / NORM_YAML
    f.write_text(f.read_text().replace("Five butterfly steps", "Five steps", 1))
    rep = build_site(project.with_fresh_annotations(), out)
    assert rep.notes_only and rep.pages_rendered == 1
    _build(demo_repo, fresh)
    for q in fresh.rglob("*"):
        if q.is_file() and q.name != names.MANIFEST:
            rel = q.relative_to(fresh).as_posix()
            assert (out / rel).read_bytes() == q.read_bytes(), rel
    # another tree indexed, the notes' global facts the same (a line more at the end of
    # decode.cuh moves no definition): decode.cuh's page must show it, so the usual build runs
    other = tmp_path / "other"
    shutil.copytree(SRC, other)
    dec = other / DECODE
    dec.write_text(dec.read_text() + "// one more line\n")
    other_index = index_directory(UP, other)
    build_site(open_project(demo_repo, index=other_index, pins=pins), tmp_path / "other-site")  # its search part cached
    f.write_text(f.read_text().replace("Five steps", "Five butterfly steps", 1))
    rep = build_site(open_project(demo_repo, index=other_index, pins=pins), out)
    assert not rep.notes_only and rep.pages_rendered == 2
    assert "one more line" in (out / names.source_page(UP, DECODE)).read_text()


def test_serve_draws_the_templates_again_only_when_they_changed(demo_repo, tmp_path, monkeypatch):
    """After a save, serve keeps what it drew of the templates and messages; when a template
    changed (here a copy of them, edited), it draws them again and the page shows the change."""
    import shutil

    from annotate.index.api import index_directory
    from annotate.project import open_project
    from site_builder import render
    from site_builder.serve import _rebuild, _State

    templates = tmp_path / "templates"
    shutil.copytree(render.TEMPLATES_DIR, templates)
    monkeypatch.setattr(render, "TEMPLATES_DIR", templates)
    render.clear_caches()
    out = tmp_path / "site"
    project = open_project(demo_repo, index=index_directory(UP, SRC), pins={UP: demo_upstream()})
    build_site(project, out)
    state, cleared = _State(), []
    real = render.clear_caches
    monkeypatch.setattr(render, "clear_caches", lambda: cleared.append(1) or real())
    f = demo_repo.annotations_dir / NORM_YAML
    f.write_text(f.read_text().replace("Five butterfly steps", "Five steps", 1))
    _rebuild(project.with_fresh_annotations(), out, 1, state)
    assert not cleared and "Five steps" in (out / names.source_page(UP, NORM)).read_text()
    base = templates / "base.html.jinja2"
    base.write_text(base.read_text().replace("</body>", "<!-- edited template --></body>", 1))
    f.write_text(f.read_text().replace("Five steps", "Five butterfly steps", 1))  # the page is drawn again
    _rebuild(project.with_fresh_annotations(), out, 1, state)
    assert cleared == [1] and "<!-- edited template -->" in (out / names.source_page(UP, NORM)).read_text()
    monkeypatch.undo()
    render.clear_caches()


def test_the_notes_global_facts_hold_which_types_and_macros_are_annotated(demo_repo, tmp_path):
    """Pages beyond an annotation file's link to its type and macro notes (the uses panels), so
    the global facts change when such a note comes, goes or changes state, and not when its text
    does (that shows on its own page alone)."""
    from annotate.notes.api import load_annotations
    from annotate.project import open_project
    from site_builder.build import notes_global
    from site_builder.context import site_context
    from site_support import demo_index

    def digest(old: str = "", new: str = "") -> str:
        f = demo_repo.annotations_dir / DECODE_YAML
        f.write_text((ANNOTATIONS / DECODE_YAML).read_text().replace(old, new, 1))
        index = demo_index()
        aset = load_annotations(demo_repo, index)
        project = open_project(demo_repo, index=index, annotations=aset, pins={UP: demo_upstream()})
        return notes_global(site_context(project), aset)

    base = digest()
    text = (ANNOTATIONS / DECODE_YAML).read_text()
    types, macros = text.index("\ntypes:\n"), text.index("\nmacros:\n")
    assert digest("What one `ParamsKernel` launch", "What each `ParamsKernel` launch") == base
    assert digest("the body is compiled twice.", "the body is compiled two times.") == base
    assert digest(text[types:macros], "\n") != base  # the type note gone
    assert digest(text[macros:], "\n") != base  # the macro note gone
    assert digest("fingerprint: 093e37447081204b", "fingerprint: 0000000000000000") != base  # the type stale


def test_an_editors_files_beside_the_notes_are_no_input(demo_repo, tmp_path):
    out = tmp_path / "site"
    _build(demo_repo, out)
    (demo_repo.annotations_dir / UP / "include" / ".norm.cuh.yaml.swp").write_bytes(b"vim")
    (demo_repo.annotations_dir / UP / "include" / "new-dir").mkdir()
    assert _build(demo_repo, out).noop


def test_a_build_that_fetched_is_followed_by_a_noop(demo_repo, tmp_path, monkeypatch):
    # the first `annotate build` on a fresh machine fetches, which writes the fetch records the
    # stamp reads; the build after it must still be recognised as a no-op
    import annotate.fetch.api as fetch_api

    up = demo_upstream()
    record = demo_repo.fetch_record(up.name, up.commit)
    record.unlink()

    def fake_fetch(config, names=None, progress=False, **kw):
        _write_fetch_record(config, up)
        return [fetch_api.read_record(config, up)]

    monkeypatch.setattr(fetch_api, "ensure_fetched", fake_fetch)
    out = tmp_path / "site"
    assert not _build(demo_repo, out).noop
    assert _build(demo_repo, out).noop


def test_cli_commands_registered():
    from annotate.cli import build_parser

    p = build_parser()
    args = p.parse_args(["build", "--out", "x"])
    assert args.func.__name__ == "cmd_build" and args.out == Path("x")
    assert p.parse_args(["build"]).out is None  # -> ./_site (site_builder.build.DEFAULT_OUT)
    args = p.parse_args(["serve", "--port", "0"])
    assert args.func.__name__ == "cmd_serve" and args.port == 0


def test_cli_build_runs_in_process(demo_repo, tmp_path, capsys):
    from annotate.commands.site import cmd_build
    import argparse

    out = tmp_path / "cli-site"
    args = argparse.Namespace(out=out, jobs=1, upstream=None, quiet=False, force=False)
    assert cmd_build(args, demo_repo) == 0
    assert "2 of 2 source pages rendered" in capsys.readouterr().out
    assert cmd_build(args, demo_repo) == 0
    assert "up to date" in capsys.readouterr().out


def test_serve_rebuilds_and_bumps_the_stamp(demo_repo, tmp_path):
    from annotate.index.api import index_directory
    from site_builder.serve import STAMP_PATH, serve

    out = tmp_path / "served"
    ready, stop = threading.Event(), threading.Event()
    index = index_directory(UP, SRC)
    from annotate.project import open_project

    project = open_project(demo_repo, index=index, pins={UP: demo_upstream()})
    th = threading.Thread(target=serve, kwargs=dict(project=project, out_dir=out, port=0, jobs=1, ready=ready,
                                                    stop=stop), daemon=True)
    th.start()
    assert ready.wait(60)
    base = f"http://127.0.0.1:{ready.port}"
    try:
        assert b"Reading FlashInfer" in urllib.request.urlopen(base + "/index.html", timeout=10).read()
        stamp = urllib.request.urlopen(base + STAMP_PATH, timeout=10).read()
        yaml_file = demo_repo.annotations_dir / UP / f"{NORM}.yaml"
        yaml_file.write_text(yaml_file.read_text().replace("Five butterfly steps", "Served edit,"))
        deadline = time.time() + 20
        while time.time() < deadline:
            if urllib.request.urlopen(base + STAMP_PATH, timeout=10).read() != stamp:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the build stamp did not change after an annotation was saved")
        page = urllib.request.urlopen(base + "/" + names.source_page(UP, NORM), timeout=10).read().decode()
        assert "Served edit," in page
        # an unknown address gets the site's own page, in both languages, linking back from there
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "/src/demo/no/such.html", timeout=10)
        body = err.value.read().decode()
        assert err.value.code == 404 and "Page not found" in body and "页面不存在" in body
        assert 'href="../../../index.html"' in body and 'src="../../../assets/lang.js"' in body
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.2:{ready.port}/index.html", timeout=2)  # 127.0.0.1 only
    finally:
        stop.set()
        th.join(10)


@pytest.mark.slow
def test_real_pins_site(real_config, pinned, tmp_path):
    pinned("flashinfer")
    pinned("flash-attention")
    out = tmp_path / "real"
    rep = _build(real_config, out)
    # every source file under each pin's render paths that this checkout has gets its page (the
    # archive route lacks most of hopper/, the git route has all of it)
    from annotate.index.api import source_files
    from annotate.upstreams import checkout_root, load_upstreams

    expected = 0
    for up in load_upstreams(real_config).values():
        root = checkout_root(real_config, up)
        rels = source_files(root, [p.rstrip("/") for p in up.render if (root / p).exists()])
        expected += len(rels)
        missing = [r for r in rels if not (out / names.source_page(up.name, r)).is_file()]
        assert not missing, missing[:10]
    assert expected > 900 and rep.pages_total >= expected
    decode = (out / names.source_page("flashinfer", "include/flashinfer/attention/decode.cuh")).read_text()
    assert '<aside class="note fn"' in decode  # the first real annotation set is visible
    assert (out / names.source_page("flashinfer", "flashinfer/jit/core.py")).is_file()
    # the committed compiled view: SASS markers with their instructions, the compiler's verdicts,
    # the decode profiles, the identity card
    assert decode.count('<button type=button class="fm sm') > 50 and "SHFL.BFLY" in decode
    assert '<sup class="fx ok"' in decode and '<button type=button class="fm pm' in decode
    assert 'id="identity-sm90"' in (out / names.runs_page("decode_kernel")).read_text()
    # the traces: a page per entry, and "on the path of" on the kernel they reach
    trace = (out / names.trace_page("flash_attn.flash_attn_func")).read_text()
    assert "flash::flash_fwd_kernel" in trace and "HEADDIM_SWITCH" in trace
    fwd = (out / names.source_page("flash-attention", "csrc/flash_attn/src/flash_fwd_kernel.h")).read_text()
    assert 'href="../../../../../traces/flash_attn.flash_attn_func.html"' in fwd
    # the CuTe headers are indexed, not under a render path, yet annotated and on phase 4.2's
    # reading list: their pages exist, and whatever a course page leaves unlinked is absent from
    # the index (the archive route lacks most of hopper/), never merely not rendered
    import html as html_mod
    import re

    from annotate.notes.api import ref_files
    from annotate.project import open_project

    swz = out / names.source_page("flash-attention", "csrc/cutlass/include/cute/swizzle.hpp")
    assert swz.is_file() and '<aside class="note' in swz.read_text()
    index = open_project(real_config).index
    wrong = []
    for page in (out / "courses").rglob("*.html"):
        for title, text in re.findall(r'<span class="unres"[^>]*data-en-title="([^"]*)"[^>]*>([^<]*)<', page.read_text()):
            title, text = html_mod.unescape(title), html_mod.unescape(text)
            if title.endswith(" (not rendered)"):  # an exercise's cite: PATH:LINE
                path = title.removesuffix(" (not rendered)").rsplit(":", 1)[0]
                if any(index.has_file(up, path) for up in index.upstreams()):
                    wrong.append((page.name, title))
            elif ref_files(index, text):  # a reading-list ref
                wrong.append((page.name, text))
    assert not wrong, wrong[:10]

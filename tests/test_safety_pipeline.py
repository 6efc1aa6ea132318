"""Hostile and careless input, replayed through the real command line (`annotate.cli.main`) on the
demo repository: one test (at least) per class of the problems a hostile read of the tool found.
Each must end in the right result or one clear line and a non-zero exit, never a traceback, and
nothing outside what the command owns may change.

(The index cache's own classes — a damaged or foreign snapshot, a read-only cache — and the run
records are the index's and the harness's tests.)
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import NORM, UP, demo_upstream, make_demo_repo  # noqa: E402

from annotate.cli import main  # noqa: E402
from site_builder import names  # noqa: E402

NORM_YAML = Path("annotations") / UP / f"{NORM}.yaml"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """The demo repository with its pin fetched (adopted and verified by the fetch stage), and the
    environment the CLI reads pointing at it. Returns the Config."""
    from annotate.fetch.api import ensure_fetched

    config = make_demo_repo(tmp_path)
    ensure_fetched(config, progress=False)
    for k in [k for k in os.environ if k.startswith("ANNOTATE_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("ANNOTATE_ROOT", str(config.repo_root))
    monkeypatch.setenv("ANNOTATE_CACHE_DIR", str(config.cache_dir))
    monkeypatch.setenv("ANNOTATE_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.chdir(tmp_path)
    return config


@pytest.fixture
def no_work(monkeypatch):
    """Refusals must come before any work: loading the index or fetching fails the test."""
    import annotate.fetch.api as fetch_api
    import annotate.index.api as index_api

    def forbidden(*a, **k):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(index_api, "load_index", forbidden)
    monkeypatch.setattr(fetch_api, "ensure_fetched", forbidden)


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("  hint:")]
    assert len(lines) == 1 and lines[0].startswith("annotate: error: "), err
    assert "Traceback" not in err
    return lines[0]


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---- build --out: nothing outside DIR is ever touched ---------------------------------------------

def test_manifest_paths_cannot_reach_outside_the_output(repo, tmp_path, capsys):
    out, outside = tmp_path / "site", tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me")
    (tmp_path / "sibling.txt").write_text("keep me too")
    assert cli(capsys, "build", "--out", str(out), "-q")[0] == 0
    # a forged manifest: it names a file behind a link out of DIR, a path with '..', an absolute one
    (out / "lnk").symlink_to(outside)
    m = json.loads((out / names.MANIFEST).read_text())
    m["outputs"] += ["lnk/victim.txt", "../sibling.txt", str(tmp_path / "sibling.txt"), "assets/../../sibling.txt"]
    m["stamp"] = "forged"
    (out / names.MANIFEST).write_text(json.dumps(m))
    assert cli(capsys, "build", "--out", str(out), "-q")[0] == 0
    assert (outside / "victim.txt").read_text() == "keep me"
    assert (tmp_path / "sibling.txt").read_text() == "keep me too"
    assert (out / "lnk").is_symlink()  # not ours to remove either
    # a directory of the site replaced by a link out of DIR: nothing is written through it
    (out / "assets" / "base.css").write_text("changed")  # makes the build want to write it again
    os.rename(out / "assets", tmp_path / "assets-moved")
    (out / "assets").symlink_to(outside)
    rc, _, err = cli(capsys, "build", "--out", str(out), "-q")
    assert rc == 1 and "link" in one_error_line(err)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


def test_a_foreign_non_empty_directory_is_refused_unless_forced(repo, tmp_path, capsys, no_work):
    mine = tmp_path / "mine"
    (mine / "assets").mkdir(parents=True)
    (mine / "index.html").write_text("my own page")
    (mine / "assets" / "base.css").write_text("my own css")
    before = tree(mine)
    rc, _, err = cli(capsys, "build", "--out", str(mine))
    assert rc == 2 and "--force" in err and "not empty" in one_error_line(err)
    assert tree(mine) == before


def test_force_writes_into_a_foreign_directory(repo, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert cli(capsys, "build", "--out", str(mine), "--force", "-q")[0] == 0
    assert (mine / "notes.txt").read_text() == "mine" and (mine / names.MANIFEST).is_file()
    assert cli(capsys, "build", "--out", str(mine), "-q")[0] == 0  # ours now: no --force needed


@pytest.mark.parametrize("out", ["", "/", "file"])
def test_out_that_cannot_be_a_site_is_refused_first(repo, tmp_path, capsys, no_work, out):
    (tmp_path / "file").write_text("not a directory")
    before = tree(tmp_path)
    rc, _, err = cli(capsys, "build", "--out", out)
    assert rc == 2
    one_error_line(err)
    assert tree(tmp_path) == before  # nothing written in the current directory either


# ---- edits of annotation files keep what the reviewer has ----------------------------------------

def _unfingerprint(path: Path) -> None:
    text = path.read_text()
    path.write_text("\n".join(ln for ln in text.split("\n") if "fingerprint:" not in ln))


def test_refresh_edits_a_linked_read_only_file_in_place(repo, tmp_path, capsys):
    link = repo.repo_root / NORM_YAML
    target = tmp_path / "elsewhere" / "norm.cuh.yaml"
    target.parent.mkdir()
    target.write_bytes(link.read_bytes())
    _unfingerprint(target)
    link.unlink()
    link.symlink_to(target)
    target.chmod(0o444)
    rc, out, _ = cli(capsys, "check", "--refresh")
    assert "refreshed" in out
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "fingerprint:" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o444


def test_refresh_and_new_keep_crlf_bom_and_the_end_marker(repo, capsys):
    path = repo.repo_root / NORM_YAML
    _unfingerprint(path)
    path.write_text(path.read_text().rstrip("\n") + "\n...\n")
    lf = path.read_bytes()
    # the same edits on the plain file give the expected text
    assert cli(capsys, "check", "--refresh")[0] == 0
    assert cli(capsys, "new", f"{UP}:demo::RMSNorm")[0] == 0
    expected = path.read_bytes()
    assert expected.endswith(b"\n...\n") and b"demo::RMSNorm:" in expected
    path.write_bytes(b"\xef\xbb\xbf" + lf.replace(b"\n", b"\r\n"))
    assert cli(capsys, "check", "--refresh")[0] == 0
    assert cli(capsys, "new", f"{UP}:demo::RMSNorm")[0] == 0
    got = path.read_bytes()
    assert got == b"\xef\xbb\xbf" + expected.replace(b"\n", b"\r\n")


# ---- the terminal shows user text as text ----------------------------------------------------------

HOSTILE = r"see indices[page_iter], [link=file:///etc/passwd]click[/link] and [bold red]loud[/] \e]0;pwned\a\e[2J"


def test_show_prints_note_text_as_plain_text(repo, capsys):
    path = repo.repo_root / NORM_YAML
    text = path.read_text()
    start = text.index("    summary:")
    end = text.index("    decomposition:")
    path.write_text(text[:start] + f'    summary: "{HOSTILE}"\n' + text[end:])
    rc, out, _ = cli(capsys, "show", f"{UP}:demo::RMSNormKernel", "--no-color")
    assert rc == 0
    flat = " ".join(out.split())  # the panel may wrap the line
    for piece in ("indices[page_iter]", "[link=file:///etc/passwd]click[/link]", "[bold red]loud[/]"):
        assert piece in flat
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in flat


def test_control_characters_are_escaped_in_diagnostics(repo, capsys):
    path = repo.repo_root / NORM_YAML
    path.write_text(path.read_text() + '  "\\e]52;c;cHduZWQ=\\a\\e[2Jdemo::nope":\n    summary: "x\\e[31m"\n')
    rc, out, err = cli(capsys, "check")
    assert rc == 1
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "\\x1b]52;c;cHduZWQ=\\x07\\x1b[2Jdemo::nope" in out
    # and in the one-line errors of the CLI itself
    rc, _, err = cli(capsys, "show", "demo::\x1b[2Jx")
    assert rc == 2 and "\x1b" not in err and "\\x1b[2Jx" in err


# ---- two course maps with one id ------------------------------------------------------------------

def test_duplicate_course_ids_are_an_error_naming_both_files(repo, capsys):
    courses = repo.repo_root / "annotations" / "courses"
    (courses / "copy.yaml").write_text((courses / "demo-course.yaml").read_text())
    rc, out, _ = cli(capsys, "check", "--json")
    assert rc == 1
    errors = [d for d in json.loads(out)["diagnostics"] if d["code"] == "duplicate-course"]
    assert len(errors) == 1
    both = errors[0]["message"] + errors[0]["detail"]
    assert "demo-course.yaml" in both and "copy.yaml" in both and errors[0]["severity"] == "error"


# ---- a checkout edited by hand ----------------------------------------------------------------------

def test_a_hand_edited_checkout_is_neither_verified_nor_used(repo, tmp_path, capsys):
    out = tmp_path / "site"
    assert cli(capsys, "build", "--out", str(out), "-q")[0] == 0
    page = out / names.source_page(UP, NORM)
    original = page.read_text()
    src = repo.checkout_dir(UP, demo_upstream().commit) / NORM
    good = src.read_bytes()
    src.write_bytes(good.replace(b"float", b"floaT", 1))
    _, js, _ = cli(capsys, "status", "--json")
    assert json.loads(js)["pins"][0]["verified"] == "changed"
    for argv in (("build", "--out", str(out), "-q"), ("check",), ("show", "demo::RMSNormKernel")):
        rc, _, err = cli(capsys, *argv)
        assert rc == 1 and NORM in one_error_line(err) and "changed" in err, argv
    assert page.read_text() == original  # the edited line was never rendered
    src.write_bytes(good)  # restored by hand: the build notices (stats changed), status stays honest
    rc, msg, _ = cli(capsys, "build", "--out", str(out))
    assert rc == 0 and "up to date" not in msg and page.read_text() == original
    assert json.loads(cli(capsys, "status", "--json")[1])["pins"][0]["verified"] == "changed"
    assert cli(capsys, "fetch", "--verify", "-q")[0] == 0  # hashes it again
    assert json.loads(cli(capsys, "status", "--json")[1])["pins"][0]["verified"] == "full"


# ---- status reads annotation files the way check does -----------------------------------------------

def test_status_and_check_agree_on_strange_annotation_paths(repo, capsys):
    base = repo.repo_root / "annotations" / UP
    (base / "a-directory.yaml").mkdir()
    (base / "zero.yaml").symlink_to("/dev/zero")
    (base / "deep.yaml").write_text("functions: " + "[" * 10000 + "]" * 10000 + "\n")
    (base / "dup.yaml").write_text(f"upstream: {UP}\npath: include/demo/dup.cuh\nfunctions: {{}}\nfunctions: {{}}\n")
    (base / "yes.yaml").write_text(f"upstream: {UP}\npath: include/demo/yes.cuh\nfunctions:\n  x: {{sync: no}}\n")
    rc, js, err = cli(capsys, "status", "--json")
    assert rc == 0 and not err
    demo = json.loads(js)["pins"][0]
    broken = set(demo["broken_annotation_files"])
    assert broken == {"demo/deep.yaml", "demo/dup.yaml"}
    rc, out, _ = cli(capsys, "check", "--json")
    syntax = {d["file"].rsplit("annotations/", 1)[-1] for d in json.loads(out)["diagnostics"]
              if d["code"] in ("yaml-too-deep", "duplicate-key", "yaml-syntax", "io", "too-large")}
    assert syntax == broken
    rc, _, err = cli(capsys, "status")
    assert rc == 0 and "Traceback" not in err


# ---- arguments and settings checked before any work --------------------------------------------------

@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_serve_refuses_a_port_out_of_range(repo, capsys, no_work, port):
    rc, _, err = cli(capsys, "serve", "--port", port)
    assert rc == 2 and "--port" in one_error_line(err)


def test_build_refuses_a_file_as_out_and_bad_jobs(repo, tmp_path, capsys, no_work):
    (tmp_path / "f").write_text("x")
    rc, _, err = cli(capsys, "build", "--out", str(tmp_path / "f"))
    assert rc == 2 and "not a directory" in one_error_line(err)
    rc, _, err = cli(capsys, "build", "--out", str(tmp_path / "new"), "-j", "0")
    assert rc == 2 and "--jobs" in one_error_line(err)


@pytest.mark.parametrize("toml, words", [
    ('[fetch]\nmin_free_mb = "x"\n', "min_free_mb"),
    ("[fetch]\ngit_timeout = -3\n", "git_timeout"),
    ('[fetch]\npip_args = [1, 2]\n', "pip_args"),
    ("[urls]\nflashinfer = 3\n", "flashinfer"),
    ("[fetch]\nmin_fre_mb = 3\n", "unknown key"),
    ("[fetch\n", "invalid TOML"),
])
def test_a_config_value_of_the_wrong_type_is_one_line(repo, tmp_path, capsys, no_work, monkeypatch, toml, words):
    cfg = tmp_path / "config.toml"
    cfg.write_text(toml)
    monkeypatch.setenv("ANNOTATE_CONFIG", str(cfg))
    rc, _, err = cli(capsys, "fetch")
    assert rc == 1 and words in one_error_line(err) and str(cfg) in err


def test_an_environment_value_of_the_wrong_type_is_one_line(repo, capsys, no_work, monkeypatch):
    monkeypatch.setenv("ANNOTATE_GIT_TIMEOUT", "soon")
    rc, _, err = cli(capsys, "status")
    assert rc == 1 and "ANNOTATE_GIT_TIMEOUT" in one_error_line(err)


# --- a carried site cache is data, never code ------------------------------------------------


def test_highlight_cache_is_json_and_a_hostile_entry_is_recomputed(tmp_path):
    import pickle

    from site_builder.highlight import cached_highlight, content_key, highlight

    text = "int main() { return 0; }\n"
    fresh = highlight(text, "cuda")
    assert cached_highlight(text, "cuda", tmp_path) == fresh
    (entry,) = tmp_path.iterdir()
    assert entry.suffix == ".json" and entry.read_bytes().startswith(b"[")

    class Boom:
        def __reduce__(self):
            return (print, ("pickle ran",))

    for hostile in (pickle.dumps(Boom()), b"[[[0, 3, \"k\"]]]", b"{\"a\": 1}", b"[" * 100000):
        entry.write_bytes(hostile)
        assert cached_highlight(text, "cuda", tmp_path) == fresh
    assert content_key(text, "cuda") in entry.name

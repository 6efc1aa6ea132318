"""The extracted folder: refused when it is not ours, edits never overwritten silently,
nothing written outside it; the spec and launcher rewritten so the folder runs as it stands."""

from __future__ import annotations

import os

import pytest
import yaml

from annotate.errors import AnnotateError, UsageError
from annotate.extract.folder import MANIFEST, prepare_folder, write_folder


def test_a_new_or_empty_folder_is_fine(tmp_path):
    assert prepare_folder(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "empty").mkdir()
    assert prepare_folder(tmp_path / "empty") == tmp_path / "empty"


def test_a_folder_annotate_did_not_write_is_refused_in_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError) as e:
        prepare_folder(tmp_path)
    assert "annotate did not extract into it" in e.value.message and "\n" not in e.value.message
    assert prepare_folder(tmp_path, force=True) == tmp_path  # --force
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("make", ["file", "link", "root"])
def test_what_is_not_a_folder_is_refused(tmp_path, make):
    target = tmp_path / "x"
    if make == "file":
        target.write_text("x")
    elif make == "link":
        (tmp_path / "real").mkdir()
        os.symlink(tmp_path / "real", target)
    else:
        target = tmp_path.anchor
    with pytest.raises(UsageError):
        prepare_folder(target, force=True)


def test_our_folder_is_rewritten_but_not_over_a_learners_edit(tmp_path):
    write_folder(tmp_path, {"kernel.cu": "a\n", "spec.yaml": "b\n"}, {"kernel": "k"})
    assert prepare_folder(tmp_path) == tmp_path  # ours, unchanged: fine
    (tmp_path / "kernel.cu").write_text("a\n// my change\n")
    with pytest.raises(UsageError, match="kernel.cu was edited since annotate wrote it"):
        prepare_folder(tmp_path)
    prepare_folder(tmp_path, force=True)
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(UsageError, match="did not extract"):
        prepare_folder(tmp_path)


def test_nothing_is_written_outside_the_folder(tmp_path):
    with pytest.raises(AnnotateError, match="not a plain file name"):
        write_folder(tmp_path / "out", {"../escape.cu": "x"}, {})
    assert not (tmp_path / "escape.cu").exists()
    (tmp_path / "out").mkdir(exist_ok=True)
    os.symlink(tmp_path / "elsewhere.cu", tmp_path / "out" / "kernel.cu")
    with pytest.raises(AnnotateError, match="not a plain file"):
        write_folder(tmp_path / "out", {"kernel.cu": "x"}, {})
    assert not (tmp_path / "elsewhere.cu").exists()


def test_the_spec_is_rewritten_to_the_library_includes(tmp_config):
    from annotate.extract.emit import rewrite_spec_text

    src = (tmp_config.kernels_dir / "rmsnorm" / "spec.yaml").read_text()
    text = rewrite_spec_text(src, includes=["flashinfer:3rdparty/cccl/cub"],
                             headers=["launcher.h", "kernel.cu"], banner="# copy\n")
    raw = yaml.safe_load(text)
    assert raw["includes"] == ["flashinfer:3rdparty/cccl/cub"] and raw["headers"] == ["launcher.h", "kernel.cu"]
    assert raw["name"] == "rmsnorm" and raw["check"] == yaml.safe_load(src)["check"]
    assert text.startswith("# copy\n") and "# cuBLAS and cuRAND headers" in text  # comments kept


def test_the_cli_refuses_before_any_work(tmp_path, capsys):
    from annotate.cli import main

    (tmp_path / "keep.me").write_text("x")
    assert main(["extract", "rmsnorm", "--into", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "annotate did not extract into it" in err
    assert main(["extract", "no_such_kernel", "--into", str(tmp_path / "y")]) == 2
    assert "unknown kernel" in capsys.readouterr().err
    assert main(["extract", "rmsnorm", "--arch", "sm90", "--into", str(tmp_path / "z")]) == 2


def test_a_summary_line_keeps_the_formula_its_sentence_leads_to():
    from annotate.extract.api import one_line

    en = "Computes, for each row `x`,\n\n`out_i = x_i · rsqrt(mean + eps)`\n\nPass 1 accumulates."
    assert one_line(en) == "Computes, for each row `x`, `out_i = x_i · rsqrt(mean + eps)`"
    zh = "对每一行 `x` 计算\n\n`out_i = x_i · w_i`\n\n第一遍累加。"
    assert one_line(zh) == "对每一行 `x` 计算 `out_i = x_i · w_i`"
    assert one_line("One block per row.\n\nThen more.") == "One block per row."
    assert one_line("word " * 60, width=20).endswith("…") and len(one_line("word " * 60, width=20)) == 20


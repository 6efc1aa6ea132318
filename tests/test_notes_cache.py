"""The cache of resolved annotation files (annotate/notes/cache.py): a load from it equals a load
without it, an edited file or another index is read again, a damaged entry is a miss, and
entries decode into the model's own types only."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_support import ANNOTATIONS, NORM, SRC, UP  # noqa: E402

from annotate.index.api import index_directory  # noqa: E402
from annotate.notes import model as M  # noqa: E402
from annotate.notes.api import load, load_annotations  # noqa: E402
from annotate.notes.cache import decode, encode  # noqa: E402


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(ANNOTATIONS, tmp_path / "annotations")
    return tmp_path / "annotations"


def _same(a: M.AnnotationSet, b: M.AnnotationSet) -> None:
    assert a.files == b.files and a.courses == b.courses and a.diagnostics == b.diagnostics


def _entries(config) -> list[Path]:
    return sorted(config.notes_files_dir().glob("*.json"))


def test_a_cached_load_equals_a_fresh_one(tmp_config, root):
    index = index_directory(UP, SRC)
    first = load_annotations(tmp_config, index, root)
    entries = _entries(tmp_config)
    assert len(entries) == 3  # two annotation files and a course map
    again = load_annotations(tmp_config, index, root)
    assert _entries(tmp_config) == entries
    _same(again, first)
    _same(again, load(tmp_config, index, _opts(root)).set)
    assert again.for_symbol(index.resolve("demo::RMSNormKernel")).summary.en.startswith("One block per row")


def _opts(root: Path):
    from annotate.notes.api import Options

    return Options(root=root)


def test_an_edited_file_is_read_again_and_its_old_entry_goes(tmp_config, root):
    index = index_directory(UP, SRC)
    load_annotations(tmp_config, index, root)
    f = root / UP / f"{NORM}.yaml"
    f.write_text(f.read_text().replace("Five butterfly steps", "Five steps"))
    got = load_annotations(tmp_config, index, root)
    note = got.for_symbol(index.resolve("demo::RMSNormKernel"))
    assert note.notes[0].text.en == "Five steps reduce 32 lanes."
    _same(got, load(tmp_config, index, _opts(root)).set)
    assert len(_entries(tmp_config)) == 3


def test_another_index_is_another_entry(tmp_config, root, tmp_path):
    index = index_directory(UP, SRC)
    assert load_annotations(tmp_config, index, root).for_symbol(index.resolve("demo::RMSNormKernel")).status == M.OK
    changed = tmp_path / "src"
    shutil.copytree(SRC, changed)
    src = changed / NORM
    src.write_text(src.read_text().replace("sum_sq += math::shfl_xor_sync", "sum_sq = sum_sq + math::shfl_xor_sync"))
    other = index_directory(UP, changed)
    got = load_annotations(tmp_config, other, root)
    assert got.for_symbol(other.resolve("demo::RMSNormKernel")).status == M.STALE
    _same(got, load(tmp_config, other, _opts(root)).set)


@pytest.mark.parametrize("damage", [b"", b"{", b"[]", b'{"file": 1}', b'{"file": "x", "upstream": null}'])
def test_a_damaged_entry_is_a_miss(tmp_config, root, damage):
    index = index_directory(UP, SRC)
    first = load_annotations(tmp_config, index, root)
    for p in _entries(tmp_config):
        p.write_bytes(damage)
    _same(load_annotations(tmp_config, index, root), first)
    assert all(p.read_bytes() != damage for p in _entries(tmp_config))  # written again


def test_entries_decode_into_the_models_types_only():
    sym = index_directory(UP, SRC).resolve("demo::RMSNormKernel")
    note = M.FunctionNote("demo::RMSNormKernel", UP, NORM, sym, M.OK, summary=M.Text("s", "z"),
                          calls={"f": M.Text("c")}, notes=(M.InlineNote("at", M.Text("t"), 3, 4),), course=("x",))
    assert decode(M.FunctionNote, encode(note)) == note
    data = encode(note)
    for bad in ({**data, "status": 1}, {**data, "extra": 1}, {k: v for k, v in data.items() if k != "symbol"},
                {**data, "course": "x"}, {**data, "symbol": {**data["symbol"], "start_line": "1"}},
                {**data, "calls": {"f": "c"}}):
        with pytest.raises(ValueError):
            decode(M.FunctionNote, bad)


def test_type_and_macro_notes_round_trip(tmp_path):
    src = tmp_path / "src" / "include"
    src.mkdir(parents=True)
    (src / "t.cuh").write_text("#define TILE(x) ((x) * 4)\n"
                               "template <typename T, int N>\nstruct vec_t {\n  T data[N];\n  int n;\n};\n")
    index = index_directory(UP, tmp_path / "src")
    t = index.types_in(UP, "include/t.cuh")[0]
    m = index.macros_in(UP, "include/t.cuh")[0]
    tn = M.TypeNote("vec_t", UP, "include/t.cuh", t, M.OK, summary=M.Text("a vector"),
                    fields=(M.FieldNote("data", M.Text("the lanes"), "array", (4,)),))
    mn = M.MacroNote("TILE", UP, "include/t.cuh", m, M.OK, expands_to=M.Text("x times four"))
    f = M.AnnotationFile("a.yaml", UP, "include/t.cuh", types=(tn,), macros=(mn,))
    assert decode(M.AnnotationFile, encode(f)) == f

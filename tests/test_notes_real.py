"""The real annotation set (annotations/) against the real pins: no errors, and the model
the site reads is resolved."""

from __future__ import annotations

import pytest

from annotate.notes.api import annotation_paths, load_annotations
from annotate.notes.check import run_check


@pytest.fixture(scope="module")
def real_index(real_config, pinned):
    from annotate.index.api import load_index

    pinned("flashinfer")
    pinned("flash-attention")
    return load_index(real_config)


@pytest.mark.slow
def test_real_set_has_no_errors(real_config, real_index):
    files, _ = annotation_paths(real_config.annotations_dir)
    if not files:
        pytest.skip("no annotation files on this branch yet")
    from annotate.commands.notes import known_harnesses

    report = run_check(real_config, real_index, known_harnesses=known_harnesses(real_config))
    errors = [d.format() for d in report.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(errors)
    c = report.counts()
    assert c["broken"] == 0 and c["functions"] >= 1
    print(report.summary_line())


@pytest.mark.slow
def test_real_set_model_is_resolved(real_config, real_index):
    aset = load_annotations(real_config, real_index)
    if not aset.files:
        pytest.skip("no annotation files on this branch yet")
    from annotate.fetch.api import missing_paths
    from annotate.upstreams import load_upstreams

    included_only = {name: up.included_only_paths() for name, up in load_upstreams(real_config).items()}
    for fn in aset.functions():
        if fn.path in missing_paths(real_config, fn.upstream):
            continue  # part of the pin, absent from a partial (archive) checkout: checked as "unchecked"
        if not real_index.has_file(fn.upstream, fn.path) and any(
                fn.path.startswith(p + "/") for p in included_only.get(fn.upstream, ())):
            continue  # a cutlass header only hopper/ includes, on the archive route: "unchecked" too
        assert fn.symbol is not None and fn.resolved, fn.qualified_name
        assert aset.for_symbol(fn.symbol) is not None
        for n in fn.notes:
            assert n.line is not None and fn.symbol.start_line <= n.line <= fn.symbol.end_line
    norm = aset.for_file("flashinfer", "include/flashinfer/norm.cuh")
    if norm is not None:
        sym = real_index.find("flashinfer::norm::RMSNormKernel", "flashinfer")[0]
        assert aset.for_symbol(sym) is not None

"""Harness results as pages: a runs page per catalog kernel and the home page's "Runnable
kernels" rows, from the typed run records (`annotate.harness.record.RunRecord`, read by
`site_builder.runs`). Records are data from elsewhere: every value becomes text here, a
missing one a dash, and the templates escape all of it.
"""

from __future__ import annotations

import math
from pathlib import Path

from annotate.harness.record import CheckResult, Comparison, RunRecord, TimedShape
from site_builder import names
from site_builder.context import SiteContext, symbol_link
from site_builder.model import (CheckView, IdentityKernelView, IdentityView, Link, Msg, ProfileRun, RecordView,
                                RunnableRow, RunsPage, RunsView, TimingView, msg)
from site_builder.runs import KernelRuns, RecordFile

DASH = "—"


def runs_page(ctx: SiteContext, kr: KernelRuns) -> RunsPage:
    spec = kr.spec
    page = names.runs_page(spec.name)
    found = dict(ctx.run_symbols.get(spec.name, ()))
    compiled = ctx.compiled.views.get(spec.name)

    def links(qnames) -> tuple[Link, ...]:
        out = []
        for q in qnames:
            keys = found.get(q, ())
            out.append(symbol_link(ctx, page, keys[0], label=q) if keys else Link(q, None, msg("link.not_on_site")))
        return tuple(out)

    view = RunsView(
        kernel=spec.name, title=spec.title, upstream=spec.upstream,
        symbols=links(spec.symbols), launchers=links(spec.launchers),
        command=f"annotate run {spec.name}", baseline=spec.baseline, notes=spec.notes.strip(),
        bound=spec.bound, dtypes=tuple(spec.dtypes), spec_path=shown_path(spec.spec_file, ctx.repo_root),
        records=tuple(record_view(i + 1, rf, ctx.repo_root) for i, rf in enumerate(kr.records)),
        problems=tuple(kr.problems) + compiled.problems if compiled else tuple(kr.problems),
        **compiled_parts(ctx, page, spec.name),
    )
    return RunsPage(page, names.root_prefix(page),
                    names.rel_href(page, names.INDEX_PAGE, names.runnable_anchor()), view)


def compiled_parts(ctx: SiteContext, page: str, kernel: str) -> dict:
    """The runs page's share of the compiled view: the identity card per arch, every
    instantiation's resources, the source pages showing its per-line SASS, its profiles."""
    from annotate.harness.ptxas import short_kernel_name
    from site_builder.file_pages import resource_row

    view = ctx.compiled.views.get(kernel)
    if view is None:
        return {}
    rows = tuple(resource_row(ctx, page, kernel, rec.arch, fn) for rec in view.sass for fn in rec.functions)
    files = []
    for f in view.files():
        up, _, path = f.partition(":")
        if (up, path) in ctx.rendered:
            files.append(Link(path, names.rel_href(page, names.source_page(up, path)), f))
    profiles = tuple(ProfileRun(p.shape, p.device or DASH, view.profile_is_current(p),
                                tuple(short_kernel_name(k.name, 200) for k in p.kernels),
                                f"{sum(k.samples for k in p.kernels):,}") for p in view.profiles)
    return {"identity": tuple(identity_view(c) for c in view.identity), "compiled": rows,
            "compiled_files": tuple(files), "profiles": profiles}


def identity_view(card) -> IdentityView:
    """An identity card (annotate.harness.identity.IdentityCard) as text; its words are data."""
    from annotate.harness.ptxas import short_kernel_name

    def label(status: str) -> str | Msg:
        return {"identical": msg("identity.identical"), "different": msg("identity.different"),
                "missing": msg("identity.missing")}.get(status, status or DASH)

    kernels = tuple(IdentityKernelView(
        short_kernel_name(k.name or k.mangled, 400), k.status, label(k.status), str(k.instructions),
        _str(k.upstream_instructions), _str(k.differing), tuple(k.diff), k.closest or "") for k in card.kernels)
    return IdentityView(
        arch=card.arch, upstream_arch=card.upstream_arch or DASH, nvcc=card.nvcc or DASH, verdict=card.verdict,
        verdict_label=label(card.verdict),
        summary=msg("identity.counted", same=sum(1 for k in card.kernels if k.status == "identical"),
                    n=len(card.kernels)),
        route=card.route, notes=card.notes,
        only_harness=tuple(card.only_harness), only_upstream=tuple(card.only_upstream),
        upstream_sources=tuple(card.upstream_sources), upstream_kernels=card.upstream_kernels, kernels=kernels)


def runnable_rows(ctx: SiteContext, page: str) -> tuple[RunnableRow, ...]:
    """One row per record (or one "no record yet" row per kernel): its headline timing."""
    rows = []
    for kr in ctx.runs:
        name = kr.spec.name
        if not kr.records:
            link = Link(name, names.rel_href(page, names.runs_page(name)), kr.spec.title)
            rows.append(RunnableRow(link, msg("runs.no_record"), False, "", DASH, DASH, DASH, False))
            continue
        for i, rf in enumerate(kr.records):
            link = Link(name, names.rel_href(page, names.runs_page(name), names.record_anchor(i + 1)), kr.spec.title)
            r = rf.run
            t = headline(r)
            rows.append(RunnableRow(
                kernel=link, device=_device_name(r), local=rf.source == "local",
                shape=(t.shape or "") if t else "",
                time_us=_num(t.kernel.median_us if t and t.kernel else None, ".1f"),
                pct_peak=_pct(t.pct_peak if t else None),
                torch_us=_num(t.torch_us if t else None, ".1f"), passed=r.passed))
    return tuple(rows)


def headline(r: RunRecord) -> TimedShape | None:
    """The first timed shape that ran (a CUDA error may have cut the later ones short)."""
    return next((t for t in r.timings if t.kernel is not None), None)


def record_view(number: int, rf: RecordFile, repo_root: Path | None) -> RecordView:
    r = rf.run
    dev = r.device
    build = r.build
    peaks = r.peaks
    where = shown_path(rf.path, repo_root) if rf.source == "committed" else str(rf.path)
    cached = build.cached if build else None
    hit = msg("runs.yes") if cached is True else (msg("runs.no") if cached is False else DASH)
    return RecordView(
        number=number, anchor=names.record_anchor(number), local=rf.source == "local",
        source=msg("runs.source_local" if rf.source == "local" else "runs.source_committed", path=where),
        device=_device_name(r), capability=_str(dev and dev.capability), driver=_str(dev and dev.driver),
        torch=_str(dev and dev.torch), cuda=_str(dev and dev.cuda),
        date=_str(r.created), seed=_str(r.seed), command=r.command or "",
        passed=r.passed, fatal=r.fatal or "",
        copy_peak=_num(peaks and peaks.copy_gbps, ".0f"), matmul_peak=_num(peaks and peaks.bf16_tflops, ".0f"),
        bound=msg("runs.bound_compute" if r.bound == "compute" else "runs.bound_memory"),
        pins=tuple((str(k), str(v)) for k, v in r.pins.items()),
        checks=check_views(r.checks), timings=timing_views(r.timings),
        compile_s=_num(build and build.compile_s, ".1f"),
        cache_hit=hit,
        load_s=_num(build and build.load_s, ".2f"), arch=_str(build and build.arch),
    )


def check_views(checks: tuple[CheckResult, ...]) -> tuple[CheckView, ...]:
    """One row per check shape, its trials folded together (the worst error over them)."""
    by_shape: dict[str, list[CheckResult]] = {}
    for c in checks:
        by_shape.setdefault(c.shape or "?", []).append(c)
    out = []
    for shape, cs in by_shape.items():
        outs = [o for c in cs for o in c.outputs]
        tol = outs[0].tol if outs else None
        passed = all(c.passed for c in cs)
        out.append(CheckView(
            shape=shape, params=_params(cs[0].params), trials=len(cs),
            rel_l2=_num(_worst([o.rel_l2 for o in outs]), ".2e"),
            max_abs=_num(_worst([o.max_abs for o in outs]), ".2e"),
            tolerance=(msg("runs.tolerance", rel_l2=_num(tol.rel_l2, '.0e'), max_abs=_num(tol.max_abs, '.0e'))
                       if tol else DASH),
            passed=passed, problem="" if passed else _problem(next(c for c in cs if not c.passed))))
    return tuple(out)


def _problem(failed: CheckResult) -> str | Msg:
    """Why a check failed: its error, else its first failed output's worst element."""
    if failed.error:
        return failed.error
    o = next((o for o in failed.outputs if not o.passed), None) or Comparison()
    return msg("runs.worst", output=o.output or "?", index=str(list(o.worst_index)), got=str(o.worst_got),
               want=str(o.worst_want), nonfinite=o.nonfinite or 0)


def timing_views(timings: tuple[TimedShape, ...]) -> tuple[TimingView, ...]:
    out = []
    for t in timings:
        k = t.kernel
        if k is None:  # cut short by a CUDA error
            continue
        rate = (f"{_num(t.tflops, '.1f')} TFLOP/s" if t.bound == "compute" else f"{_num(t.gbps, '.0f')} GB/s")
        out.append(TimingView(
            shape=t.shape or "?", params=_params(t.params),
            median_us=_num(k.median_us, ".1f"), p10_us=_num(k.p10_us, ".1f"), p90_us=_num(k.p90_us, ".1f"),
            rate=rate, pct_peak=_pct(t.pct_peak), torch_us=_num(t.torch_us, ".1f"),
            speedup=f"{_num(t.torch_vs_kernel, '.2f')}×" if t.torch_vs_kernel is not None else DASH,
            passed=t.check is not None and t.check.passed))
    return tuple(out)


def shown_path(path: Path, repo_root: Path | None) -> str:
    """A repository file as the site names it: relative to the repository when inside it."""
    try:
        return path.relative_to(repo_root).as_posix() if repo_root else str(path)
    except ValueError:
        return str(path)


def _device_name(r: RunRecord) -> str | Msg:
    return r.device.name if r.device and r.device.name is not None else msg("runs.unknown_device")


def _worst(values: list[float | None]) -> float | str | None:
    """The largest error; "inf/nan" when one is missing or not a finite number."""
    if any(v is None or not math.isfinite(v) for v in values):
        return "inf/nan"
    return max(values) if values else None  # type: ignore[type-var]


def _num(x: float | int | str | None, spec: str) -> str:
    if x is None:
        return DASH
    return x if isinstance(x, str) else format(x, spec)


def _pct(x: float | None) -> str:
    return f"{_num(x, '.0f')}%" if x is not None else DASH


def _str(x: object) -> str:
    return DASH if x is None else str(x)


def _params(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in p.items())

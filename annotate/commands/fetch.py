"""`annotate fetch`, `annotate status`, `annotate lock`."""

from __future__ import annotations

import argparse

from annotate.terminal import echo


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fetch", help="put the pinned upstream sources into the cache (idempotent)",
                       description="Fetch the pinned upstream sources (vendor_kernels/upstreams.yaml) into the "
                                   "cache, verified against the locks. --via auto tries git, then the release "
                                   "archive from the package index.")
    p.add_argument("upstreams", nargs="*", metavar="UPSTREAM", help="upstream names (default: all)")
    p.add_argument("--via", choices=["auto", "git", "archive"], default="auto",
                   help="route: git (URL overrides: ANNOTATE_URL_<NAME>), archive (pip), or auto (default)")
    p.add_argument("--verify", action="store_true",
                   help="after fetching, hash every file again and compare it with the lock")
    p.add_argument("--force", action="store_true", help="fetch again even when a verified checkout is present")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    p.set_defaults(func=cmd_fetch)

    s = sub.add_parser("status", help="pins, what is fetched, by which route, verified or not, annotation coverage")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--courses", action="store_true",
                   help="instead: each course step's coverage (annotated functions, types, macros and kernels, "
                        "texts in each language, exercises) against the courses' bar")
    s.set_defaults(func=cmd_status)

    lk = sub.add_parser("lock", help="write vendor_kernels/locks/<name>.json from a git repository",
                        description="Record the git blob id of every file under a pin's sparse paths at the pinned "
                                    "commit. The source is --from GITDIR, else the pin's URL (after overrides).")
    lk.add_argument("names", nargs="*", metavar="UPSTREAM", help="upstreams or submodules (default: all)")
    lk.add_argument("--from", dest="source", metavar="GITDIR", help="a git repository holding the pinned commit")
    lk.set_defaults(func=cmd_lock)


def _summary(rec) -> str:
    miss = f", {len(rec.missing)} missing" if rec.missing else ""
    tag = f" {rec.tag}" if rec.tag else ""
    return (f"{rec.name}{tag} {rec.commit[:12]}: {rec.route}, {rec.files} files, verified {rec.verified}{miss}"
            f" -> {rec.root}")


def cmd_fetch(args, config) -> int:
    import time

    from annotate.fetch.api import ensure_fetched, verify_fetched
    from annotate.progress import Reporter

    t0 = time.monotonic()
    reporter = Reporter(not args.quiet)
    recs = ensure_fetched(config, args.upstreams or None, via=args.via, progress=reporter, force=args.force)
    if args.verify:
        recs = verify_fetched(config, args.upstreams or None, progress=reporter)
    for rec in recs:
        echo(_summary(rec))
    if not args.quiet:
        echo(f"done in {time.monotonic() - t0:.2f} s{' (every file re-verified)' if args.verify else ''}", err=True)
    return 0


def _group(paths, row) -> str:
    """'hopper/ 487, flash_attn/ 5': missing paths counted by their top directory (below a submodule's path)."""
    counts: dict[str, int] = {}
    strip = row.path.strip("/") + "/" if row.path else ""
    for p in paths:
        rest = p[len(strip):] if strip and p.startswith(strip) else p
        parts = rest.split("/")
        key = "/".join(parts[:2]) + "/" if len(parts) > 2 else parts[0] + ("/" if len(parts) > 1 else "")
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def cmd_status(args, config) -> int:
    from annotate.project import open_project, status

    if getattr(args, "courses", False):  # callers made before the flag pass no such attribute
        return _courses_status(args, config)
    rows = status(open_project(config))
    if args.json:
        from annotate.jsonout import print_json

        print_json({"cache_dir": str(config.cache_dir), "pins": [r.to_json() for r in rows]})
        return 0
    from rich.table import Table

    from annotate.terminal import console

    t = Table(title=f"pins (cache: {config.cache_dir})", title_justify="left")
    for col in ("pin", "commit", "route", "verified", "missing", "fetched (UTC)", "annotations"):
        t.add_column(col, no_wrap=True)
    for r in rows:
        name = f"{r.name} {r.tag}".strip() if r.kind == "upstream" else f" └ {r.name}"
        notes = ""
        if r.annotation_files is not None:
            notes = f"{r.annotation_files} files / {r.annotated_functions} fns"
            if r.broken_annotation_files:
                notes += f", {len(r.broken_annotation_files)} broken"
        when = (r.fetched_at or "")[:16].replace("T", " ")
        t.add_row(name, r.commit[:12], r.route or "not fetched", r.verified or "",
                  str(len(r.missing)) if r.fetched else "", when, notes)
    console().print(t)
    for r in rows:
        if r.missing:
            echo(f"{r.name}: {len(r.missing)} missing ({_group(r.missing, r)}); `annotate status --json` lists them")
        if r.verified == "changed":
            echo(f"{r.name}: the checkout changed on disk since it was verified; "
                 f"`annotate fetch --verify {r.parent or r.name}` checks it again")
    if not all(r.fetched for r in rows):
        echo("fetch the missing pins with: annotate fetch")
    return 0


def _courses_status(args, config) -> int:
    from annotate.project import courses_coverage, open_project

    cov = courses_coverage(open_project(config))
    if args.json:
        from annotate.jsonout import print_json

        print_json(cov.to_json())
        return 0
    from rich.table import Table

    from annotate.terminal import console

    out = console()
    for c in cov.courses:
        met = sum(1 for s in c.steps if s.meets_bar)
        t = Table(title=f"{c.id}: {met} of {len(c.steps)} steps meet the bar", title_justify="left")
        for col in ("#", "step", "fns", "types", "macros", "kernels", "texts en/zh", "notes en/zh",
                    "exercises en/zh", "bar"):
            t.add_column(col, no_wrap=True, justify="right" if col not in ("step", "bar") else "left")
        for s in c.steps:
            t.add_row(str(s.number), s.step, str(s.functions), str(s.types), str(s.macros),
                      f"{s.kernels_annotated}/{len(s.kernels)}", f"{s.texts.en}/{s.texts.zh}",
                      f"{s.notes.en}/{s.notes.zh}", f"{s.exercises.en}/{s.exercises.zh}",
                      "ok" if s.meets_bar else "FAILS")
        out.print(t)
        for s in c.steps:
            for why in s.problems:
                echo(f"{s.step}: {why}")
        echo()
    echo(f"bar: every __global__ kernel of the files a step's refs name is annotated, and at least "
         f"{cov.min_tagged} annotated functions, types or macros carry the step's tag")
    for u in cov.unknown_tags:
        where = f"{u.file}:{u.line}: " if u.file else ""
        echo(f"{where}{u.kind} {u.name}: course tag '{u.tag}' names no course or step")
    return 0


def cmd_lock(args, config) -> int:
    from annotate.errors import UsageError
    from annotate.fetch import lock as locks
    from annotate.fetch.gitroute import lock_for
    from annotate.upstreams import load_upstreams

    targets = locks.lock_targets(config, load_upstreams(config))
    names = args.names or list(targets)
    for n in names:
        if n not in targets:
            raise UsageError(f"unknown upstream or submodule '{n}'", hint="known: " + ", ".join(targets))
    if args.source and len(names) != 1:
        raise UsageError("--from names one repository: give exactly one UPSTREAM with it")
    for n in names:
        pin, _owner = targets[n]
        lock = lock_for(config, n, pin, args.source)
        out = config.lock_file(pin.lock)
        locks.write_lock(out, lock)
        echo(f"{n} {pin.commit[:12]}: {len(lock.files)} files -> {out}")
    return 0

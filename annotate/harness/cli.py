"""`annotate run`: the kernel harnesses on the command line.

Imports nothing heavy at module level: torch, rich and the build machinery load inside the
handler, so `annotate --help` and `annotate run --list` work anywhere.
"""

from __future__ import annotations

import argparse
import json
import sys

from annotate.config import Config
from annotate.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="JIT-compile an upstream kernel unmodified, verify it and time it",
        description="Build a harness from vendor_kernels/KERNEL (the pinned upstream headers, "
                    "unmodified), check it against a float64 reference on fresh random inputs "
                    "and time it against the device's measured peaks and PyTorch.")
    p.add_argument("kernel", nargs="?", help="harness name (see --list)")
    p.add_argument("--list", action="store_true", help="list the harnesses")
    p.add_argument("--json", action="store_true", help="print the result record as JSON")
    p.add_argument("--shapes", help="comma-separated shape names from the spec (default: all)")
    p.add_argument("--seed", type=int, help="base seed (printed by every run) to replay inputs")
    p.add_argument("--trials", type=int, help="random trials per check shape (default: the spec's)")
    p.add_argument("--no-time", action="store_true", help="verify only")
    p.add_argument("--compile-only", action="store_true",
                   help="compile with nvcc alone (no GPU needed) and print registers, shared "
                        "memory, stack and spills per kernel")
    p.add_argument("--build-only", action="store_true",
                   help="JIT-build the torch extension (GPU machine) and stop")
    p.add_argument("--arch", default=None,
                   help="target for --compile-only, e.g. 90, 90a, 80 (default 90; a GPU run uses the device's)")
    p.add_argument("--verbose", action="store_true", help="show the build's compiler output")
    p.add_argument("--source", metavar="DIR",
                   help="a copy of the harness (`annotate extract KERNEL --into DIR`, perhaps edited): "
                        "build it and run it beside the pinned original on the same inputs; with "
                        "--compile-only, compare registers, shared memory, spills and SASS only")
    p.set_defaults(func=handle)

    q = subparsers.add_parser(
        "profile", help="Nsight Compute's per-source-line counters of one harness shape (GPU)",
        description="On a GPU machine with Nsight Compute: profile one shape of a harness (ncu "
                    "source counters, warp state, occupancy, throughputs), dump the counters per "
                    "SASS address and fold them per upstream source line into a record. "
                    "--from-dump folds an existing dump anywhere (no GPU).")
    q.add_argument("kernel", help="harness name (annotate run --list)")
    q.add_argument("--shape", required=True, help="a shape name of the spec (check or time)")
    q.add_argument("--from-dump", metavar="DUMP", help="fold this dump (.json.gz from the dump step) only")
    q.add_argument("--details", metavar="CSV", help="with --from-dump: ncu's details page (ncu --csv --page details)")
    q.add_argument("--sass", metavar="RECORD",
                   help="the SASS record (annotate sass) of the build that was profiled; default: "
                        "the current build's, when nvcc and nvdisasm are here")
    q.add_argument("--device", help="with --from-dump: the GPU it was taken on, for the record")
    q.add_argument("--save", action="store_true",
                   help="also write vendor_kernels/results/profiles/KERNEL.SHAPE.json (committed for the site)")
    q.add_argument("--json", action="store_true", help="print the record as JSON")
    q.set_defaults(func=handle_profile)


def handle_profile(args: argparse.Namespace, config: Config) -> int:
    from annotate.harness import profile
    from annotate.harness.spec import load_spec

    spec = load_spec(config, args.kernel)
    spec.select([args.shape])  # an unknown shape -> UsageError before any work
    if args.details and not args.from_dump:
        raise UsageError("--details goes with --from-dump (a GPU run writes its own)")
    record = profile.run_profile(config, spec, args.shape, dump_file=args.from_dump, details=args.details,
                                 sass_file=args.sass, device=args.device)
    path = profile.local_profile(config, spec.name, args.shape)
    profile.write_profile(path, record)
    if args.save:
        out = profile.committed_profile(config, spec.name, args.shape)
        profile.write_profile(out, record)
        print(f"wrote {out}", file=sys.stderr)
    if args.json:
        print(profile.profile_json_text(record), end="")
    else:
        profile.print_profile(record, path)
    return 0


def handle(args: argparse.Namespace, config: Config) -> int:
    from annotate.harness.spec import load_spec

    if args.list:
        return _list(config, args.json)
    if not args.kernel:
        raise UsageError("name a kernel (or --list)", hint="annotate run --list")
    spec = load_spec(config, args.kernel)
    shapes = tuple(s.strip() for s in args.shapes.split(",") if s.strip()) if args.shapes else None
    if shapes:
        spec.select(list(shapes))  # unknown names -> UsageError before any work
    if args.source:
        return _source(config, spec, shapes, args)
    if args.compile_only:
        return _compile_only(config, spec, args)
    if args.build_only:
        return _build_only(config, spec, args)
    return _run(config, spec, shapes, args)


def command_line(args: argparse.Namespace) -> str:
    """The `annotate run` command that replays this run's inputs (recorded in the record)."""
    parts = ["annotate", "run", args.kernel]
    if args.shapes:
        parts += ["--shapes", args.shapes]
    if args.seed is not None:
        parts += ["--seed", str(args.seed)]
    if args.trials is not None:
        parts += ["--trials", str(args.trials)]
    if args.no_time:
        parts.append("--no-time")
    if getattr(args, "source", None):
        parts += ["--source", str(args.source)]
    return " ".join(parts)


def _source(config: Config, spec, shapes: tuple[str, ...] | None, args: argparse.Namespace) -> int:
    """`run KERNEL --source DIR`: the copy beside the pinned original."""
    from annotate.harness.sidebyside import compare_builds, load_source_spec, print_build_comparison

    copy = load_source_spec(spec.name, args.source)
    if args.build_only:
        raise UsageError("--build-only does not take --source", hint="use --compile-only to build both with nvcc")
    if args.compile_only:
        cmp = compare_builds(config, spec, copy, args.arch or "90")
        if args.json:
            print(json.dumps({"kernel": spec.name, "source": str(copy.folder), **cmp.to_json()}, indent=1))
        else:
            print_build_comparison(spec.name, copy.folder, cmp)
        return 0
    from annotate.harness.runner import RunOptions
    from annotate.harness.sidebyside import print_run_comparison, run_side_by_side

    a, b, cmp, paths = run_side_by_side(config, spec, copy, RunOptions(
        shapes=shapes, seed=args.seed, do_time=not args.no_time, trials=args.trials,
        verbose=args.verbose, command=command_line(args)))
    if args.json:
        print(json.dumps({**cmp.to_json(), "records": [str(p) for p in paths]}, indent=1))
    else:
        print_run_comparison(cmp, paths)
    return 0 if cmp.source_passed and cmp.pinned_passed else 1


def _compile_only(config: Config, spec, args: argparse.Namespace) -> int:
    from annotate.harness.nvcc import compile_only
    from annotate.harness.results import print_compile_only

    result = compile_only(config, spec, arch=args.arch or "90")
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        print_compile_only(result)
    return 0


def _build_only(config: Config, spec, args: argparse.Namespace) -> int:
    from annotate.harness.runner import build_only

    build, wall = build_only(config, spec, verbose=args.verbose)
    if args.json:
        print(json.dumps({"kernel": spec.name, "wall_s": round(wall, 2), **build.to_json()}))
    else:
        print(f"{spec.name}: {'cache hit' if build.cached else 'built'} in {wall:.2f} s -> {build.directory}")
    return 0


def _run(config: Config, spec, shapes: tuple[str, ...] | None, args: argparse.Namespace) -> int:
    from annotate.harness.record import record_text
    from annotate.harness.runner import RunOptions, run_kernel

    record, path = run_kernel(config, spec, RunOptions(
        shapes=shapes, seed=args.seed, do_time=not args.no_time, trials=args.trials,
        verbose=args.verbose, command=command_line(args)))
    if args.json:
        print(record_text(record), end="")
    else:
        from annotate.harness.results import print_record

        print_record(record, path)
    if not record.passed:
        worst = record.first_failure()
        print(f"annotate: {spec.name}: verification FAILED{': ' + worst if worst else ''} "
              f"(replay with --seed {record.seed}); record: {path}", file=sys.stderr)
        return 1
    return 0


def _list(config: Config, as_json: bool) -> int:
    from annotate.harness.spec import load_specs

    specs = load_specs(config)
    if as_json:
        print(json.dumps([{"name": s.name, "title": s.title, "upstream": s.upstream,
                           "symbols": list(s.symbols), "dtypes": list(s.dtypes),
                           "check": [c.name for c in s.check], "time": [t.name for t in s.time]}
                          for s in specs], indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="kernel harnesses (vendor_kernels/)")
    for col in ("name", "upstream", "runs", "dtypes", "shapes (check/time)"):
        t.add_column(col, overflow="fold")
    for s in specs:
        t.add_row(s.name, s.upstream, "\n".join(s.symbols), ", ".join(s.dtypes), f"{len(s.check)}/{len(s.time)}")
    Console().print(t)
    return 0

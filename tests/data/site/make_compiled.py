"""Regenerate the site fixture's compiled view (tests/data/site/repo/vendor_kernels/results/{sass,
identity,profiles}/): what the site shows beside the demo sources' lines. Needs nvcc and the
CUDA binary tools; the tests only read the files it writes.

    PYTHONPATH=. python tests/data/site/make_compiled.py

The SASS records and fact reports are real: `warp_decode/launcher.cu` (the demo kernels) compiled
for sm_90 and sm_80 with -lineinfo, folded by annotate.harness.sass and checked by
annotate.harness.sassfacts against the demo index, as `annotate sass --save` does for the
catalog. The identity card and the two profiles are made up (a card needs an upstream build
route, a profile a GPU): they are shaped like real ones and say so in their `route` / `report`;
one profile names the current SASS record's build key, the other an older one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for site_support
sys.path.insert(0, str(HERE.parents[2]))  # the repository

from site_support import REPO, SRC, UP, demo_index  # noqa: E402

from annotate.config import Config  # noqa: E402
from annotate.harness import sass  # noqa: E402
from annotate.harness.disasm import disassemble  # noqa: E402
from annotate.harness.identity import IdentityCard, KernelIdentity, card_path  # noqa: E402
from annotate.harness.profile import (ProfileFile, ProfileKernel, ProfileLine, ProfileRecord,  # noqa: E402
                                      committed_profile, write_profile)
from annotate.harness.ptxas import parse_ptxas  # noqa: E402
from annotate.harness.sassfacts import check_facts, committed_form, write_fact_report  # noqa: E402
from annotate.harness.spec import load_spec  # noqa: E402
from annotate.harness.toolchain import find_binary_tools, find_toolchain, nvcc_version  # noqa: E402

FLAGS = ["-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v"]
LAUNCHER = REPO / "vendor_kernels" / "warp_decode" / "launcher.cu"  # every demo kernel, for both specs


def build(config: Config, kernel: str, arch: str, work: Path):
    spec = load_spec(config, kernel)
    tc = find_toolchain(dict(os.environ))
    cubin = work / f"{kernel}.sm{arch}.cubin"
    cmd = [str(tc.nvcc), *FLAGS, f"-gencode=arch=compute_{arch},code=sm_{arch}", "-cubin",
           "-I", str(SRC / "include"), str(LAUNCHER), "-o", str(cubin)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    env = dict(os.environ)
    resources = parse_ptxas(done.stdout + done.stderr, source="launcher.cu", env=env)
    text = disassemble(cubin, find_binary_tools(tc, env), line_info=True)
    record = sass.build_record(spec, arch, {"launcher.cu": text}, resources, sass.SourceMap.of({UP: SRC}),
                               nvcc=nvcc_version(tc.nvcc), key=f"demo-{kernel}-sm{arch}",
                               flags=[*FLAGS[:3], f"-gencode=arch=compute_{arch},code=sm_{arch}"])
    return record


def facts(records):
    from annotate.commands.sass import fact_sites

    files = sorted({f for r in records for f in r.files()})
    return check_facts(fact_sites(demo_index(), files), records)


def main() -> None:
    config = Config.load(environ={}, cache_dir=Path(tempfile.mkdtemp()), repo_root=REPO)
    with tempfile.TemporaryDirectory() as tmp:
        for kernel in ("rmsnorm", "warp_decode"):
            records = [build(config, kernel, arch, Path(tmp)) for arch in ("90", "80")]
            for rec in records:
                sass.write_sass_record(sass.committed_path(config, kernel, rec.arch), rec)
                write_fact_report(sass.committed_facts_path(config, kernel, rec.arch),
                                  committed_form(facts([rec])))
            if kernel == "warp_decode":
                write_identity(config, records[0])
                write_profiles(config, records[0])


def write_identity(config: Config, rec) -> None:
    from annotate.harness.identity import write_card

    kernels = tuple(KernelIdentity(name=f.name, mangled=f.mangled, status="identical", instructions=f.instructions,
                                   upstream_instructions=f.instructions, differing=0) for f in rec.functions)
    card = IdentityCard(kernel=rec.kernel, arch=rec.arch, upstream_arch=rec.arch + "a", nvcc=rec.nvcc,
                        route="made up for the site's tests: no upstream build route for the demo",
                        verdict="identical", summary=f"{len(kernels)} of {len(kernels)} kernels identical",
                        harness_flags=rec.flags, upstream_flags=(*rec.flags, "-DDEMO"), only_upstream=("-DDEMO",),
                        upstream_sources=("launcher.cu",), upstream_kernels=len(kernels) + 1, kernels=kernels)
    write_card(card_path(config, rec.kernel, rec.arch), card)


def write_profiles(config: Config, rec) -> None:
    """Two made-up profiles of DecodeKernel, on the lines its SASS record has: one attributed with
    the committed record's build, one with an older build (the site flags it)."""
    fn = next(f for f in rec.functions if f.symbol == "demo::DecodeKernel")
    lines = [ln for sf in fn.files if sf.path == f"{UP}:include/demo/decode.cuh" for ln in sf.lines if ln.counts]
    weights = [3, 1, 5, 1, 2, 1][:len(lines)]
    total = 1000
    plines = tuple(ProfileLine(line=ln.line, sass=len(ln.sass), samples=100 * w,
                               stalls={"long_scoreboard": 60 * w, "wait": 30 * w, "selected": 10 * w},
                               instructions=32 * len(ln.sass), thread_instructions=1024 * len(ln.sass),
                               smem_excessive=4 if i == 0 else 0)
                   for i, (ln, w) in enumerate(zip(lines, weights)))
    for shape, key in (("n4096", rec.key), ("n4096-old", "an-older-build")):
        kern = ProfileKernel(name=fn.name, mangled=fn.mangled, attribution="sass-record", grid=(1, 1, 1),
                             block=(32, 1, 1), registers=fn.registers, samples=total,
                             stalls={"long_scoreboard": 600, "wait": 300, "selected": 100},
                             files=(ProfileFile(path=f"{UP}:include/demo/decode.cuh", lines=plines),))
        prof = ProfileRecord(kernel=rec.kernel, shape=shape, device="Demo GPU", report="made up for the site's tests",
                             sass_record=key, kernels=(kern,))
        write_profile(committed_profile(config, rec.kernel, shape), prof)


if __name__ == "__main__":
    main()

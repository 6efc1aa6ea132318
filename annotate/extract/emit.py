"""kernel.cu's text: the kept pieces in stream order, each reopened in its namespaces and
under its conditions, each preceded by where it came from (and the reviewers' one-line
summary of it, where one exists).

Pure text in, text out: nothing here reads files or runs a compiler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from annotate.extract.closure import FlatPiece
from annotate.extract.cxx import DECL
from annotate.extract.oracle import MARKER


def provenance(rel: str, first: int, last: int, commit: str) -> str:
    """`include/flashinfer/norm.cuh:214-368 @ a0a6b019` (one line: `:214`)."""
    span = f"{first}" if first == last else f"{first}-{last}"
    return f"{rel}:{span} @ {commit[:8]}"


def _close_ns(opener: str) -> str:
    return "}  // " + opener[:-1].strip()


def render_kernel(pieces: Iterable[FlatPiece], *, commit: str, banner: str,
                  summaries: Mapping[int, tuple[str, ...]] | None = None,
                  comment: Callable[[FlatPiece], bool] | None = None, markers: bool = False) -> str:
    """The flattened file. `summaries`: piece index -> lines to print under its provenance;
    `comment(piece)` decides which pieces get a provenance line (default: declarations; the
    directives between them are labelled by the file banner and their own text). `markers`
    puts `#pragma annotate_piece N` before every piece (annotate.extract.oracle's liveness)."""
    summaries = summaries or {}
    want_comment = comment or (lambda p: p.kind == DECL)
    # every upstream header has `#pragma once` or a guard, and so does their flattening: a
    # launcher and a header it includes may both have included upstream code
    out: list[str] = [banner.rstrip("\n"), "#pragma once", ""]
    conds: list[str] = []
    nss: list[str] = []
    current_file: str | None = None

    def close_ns(to: int) -> None:
        while len(nss) > to:
            out.append(_close_ns(nss.pop()))

    def close_conds(to: int) -> None:
        while len(conds) > to:
            out.append(f"#endif  // {conds.pop()}")

    for p in pieces:
        if p.rel != current_file:
            close_ns(0)
            close_conds(0)
            out.append("")
            out.append(f"// ==== {p.rel} " + "=" * max(4, 88 - len(p.rel)))
            current_file = p.rel
        want_c, want_n = list(p.conditions), list(p.namespaces)
        if want_c != conds:
            close_ns(0)
            common = 0
            while common < min(len(conds), len(want_c)) and conds[common] == want_c[common]:
                common += 1
            close_conds(common)
            for c in want_c[common:]:
                out.append(f"#if {c}")
                conds.append(c)
        if want_n != nss:
            common = 0
            while common < min(len(nss), len(want_n)) and nss[common] == want_n[common]:
                common += 1
            close_ns(common)
            for n in want_n[common:]:
                out.append(n)
                nss.append(n)
        if want_comment(p):
            out.append("")
            out.append("// " + provenance(p.rel, p.first_line, p.last_line, commit))
            for line in summaries.get(p.index, ()):
                out.append("// " + line)
        if markers:
            out.append(f"{MARKER}{p.index}")
        out.append(p.text.rstrip("\n"))
    close_ns(0)
    close_conds(0)
    return "\n".join(out) + "\n"


KERNEL_FILE = "kernel.cu"


def rewrite_harness_file(text: str, upstream_lines: Iterable[int]) -> str:
    """A launcher (or header) of the harness with its #includes of upstream project headers
    replaced: the first by `#include "kernel.cu"`, the others by a comment, so every other
    line keeps its number."""
    lines = text.splitlines(keepends=True)
    wanted = sorted(set(upstream_lines))
    for n, ln in enumerate(wanted):
        old = lines[ln - 1].rstrip("\n").strip()
        if n == 0:
            new = f'#include "{KERNEL_FILE}"  // the upstream code this file needs (was: {old})'
        else:
            new = f"// {old}: in {KERNEL_FILE}"
        lines[ln - 1] = new + "\n"
    return "".join(lines)


def rewrite_spec_text(text: str, *, includes: list[str], headers: list[str], banner: str,
                      drop: Iterable[str] = ()) -> str:
    """spec.yaml with `includes:` and `headers:` replaced and the top-level keys `drop` removed
    with their blocks (comments elsewhere kept), `banner` (comment lines) on top. The caller
    parses the result: a spec written in a shape this does not handle fails there and is
    written afresh instead."""
    lines = text.splitlines()
    for key in drop:
        for i, ln in enumerate(lines):
            if ln.startswith(f"{key}:"):
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "-", "#"))):
                    j += 1
                # comment lines right above the next key belong to it, those right above this one to it
                while j > i + 1 and lines[j - 1].startswith("#"):
                    j -= 1
                while i > 0 and lines[i - 1].startswith("#"):
                    i -= 1
                lines = lines[:i] + lines[j:]
                break

    def replace_key(key: str, values: list[str]) -> None:
        nonlocal lines
        for i, ln in enumerate(lines):
            if ln.startswith(f"{key}:"):
                j = i + 1
                while j < len(lines) and (lines[j].startswith((" ", "-")) and lines[j].strip()):
                    j += 1
                lines = lines[:i] + [f"{key}:"] + [f"  - {v}" for v in values] + lines[j:]
                if not values:
                    lines[i] = f"{key}: []"
                return
        lines.append(f"{key}:")
        lines.extend(f"  - {v}" for v in values)

    replace_key("includes", includes)
    replace_key("headers", headers)
    return banner.rstrip("\n") + "\n" + "\n".join(lines) + "\n"

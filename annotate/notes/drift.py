"""`annotate check --against REF`: what happens to the annotations at another version.

The annotations are resolved at the indexed version (A, normally the pin) and at the other
version (B: a git ref of a local mirror, or a directory tree). Per annotated function, type or
macro (a "body" below is a type's or macro's definition):
  unchanged  same body, same lines
  moved      same body (fingerprint), other lines: nothing to do, notes follow (anchors are text)
  changed    the body differs: stale at B, with a diff A → B
  renamed    not found by name; a function with the same fingerprint (or a very similar body)
             exists under another name: candidates listed
  moved-file the same qualified name lives in another file at B
  removed    nothing like it at B
"""

from __future__ import annotations

import difflib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from annotate.config import Config
from annotate.errors import Diagnostic
from annotate.index.model import SOURCE_SUFFIXES, bare_name
from annotate.notes import api
from annotate.notes.anchors import find_anchor
from annotate.notes.history import GitRepo, all_definitions, definitions_in, git_dir_for, short_diff

SIMILAR = 0.6
MIN_SIMILAR_LINES = 4  # shorter bodies look alike too easily to suggest a rename
MAX_GREP_FILES = 24


@dataclass
class DriftEntry:
    file: str
    name: str
    upstream: str
    path: str
    kind: str
    old_lines: tuple[int, int] | None = None
    new_lines: tuple[int, int] | None = None
    new_path: str | None = None
    candidates: list[tuple[str, str, int, float]] = field(default_factory=list)  # name, path, line, similarity
    diff: str | None = None
    anchors: list[tuple[str, int | None, int | None, int]] = field(default_factory=list)  # at, old, new, matches
    target: str = ""  # "v0.6.17 (a0a6b019b9b2)" or a directory
    what: str = "function"  # what the note is on: "function" | "type" | "macro"
    lost_fields: list[str] = field(default_factory=list)  # a type note's `fields:` with no member at the target

    def to_json(self) -> dict:
        return {"file": self.file, "name": self.name, "what": self.what, "upstream": self.upstream,
                "path": self.path, "kind": self.kind, "target": self.target, "lost_fields": list(self.lost_fields),
                "old_lines": list(self.old_lines) if self.old_lines else None,
                "new_lines": list(self.new_lines) if self.new_lines else None,
                "new_path": self.new_path,
                "candidates": [{"name": n, "path": p, "line": ln, "similarity": round(s, 3)}
                               for n, p, ln, s in self.candidates],
                "anchors": [{"at": a, "old_line": o, "new_line": n, "matches": c} for a, o, n, c in self.anchors],
                "diff": self.diff}


def _search_roots(config: Config, upstream: str) -> list[str]:
    try:
        from annotate.upstreams import get_upstream

        return list(get_upstream(config, upstream).paths)
    except Exception:
        return []


def _missing(idx, upstream, notes) -> list[str]:
    """Bare names of the notes whose function (type, macro) is not in its own file in `idx`."""
    out = set()
    for n in notes:
        names = {s.qualified_name for s in definitions_in(idx, upstream, n.path, n.kind)}
        if n.qualified_name not in names:
            out.add(bare_name(n.qualified_name))
    return sorted(out)


def _other_index(config, upstream, notes, ref, tree, git_dir, indexer, scratch: Path):
    """(Index of B, description of B) or raises ValueError with the reason. A git ref's files are
    written under `scratch`, which the caller removes when it is done with the index.

    Only the annotated files are indexed, plus, for functions missing from their file, the
    files that mention their names (to find a function that moved to another file)."""
    paths = sorted({n.path for n in notes})
    if tree:
        root = Path(tree)
        if not root.is_dir():
            raise ValueError(f"--against-dir {tree}: no such directory")
        present = [p for p in paths if (root / p).is_file()]
        idx = indexer(upstream, root, present)
        missing = _missing(idx, upstream, notes)
        if not missing:
            return idx, f"{root}"
        extra: list[str] = []
        for sub in _search_roots(config, upstream) or [""]:
            base = root / sub
            if not base.is_dir():
                continue
            for f in sorted(base.rglob("*")):
                if len(extra) >= MAX_GREP_FILES or not f.is_file() or not f.name.endswith(SOURCE_SUFFIXES):
                    continue
                rel = f.relative_to(root).as_posix()
                if rel in present:
                    continue
                try:
                    txt = f.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                if any(b in txt for b in missing):
                    extra.append(rel)
        return (indexer(upstream, root, sorted(set(present) | set(extra))) if extra else idx), f"{root}"
    d = git_dir_for(config, upstream, git_dir)
    if d is None:
        raise ValueError(f"no local git mirror of {upstream}: set ANNOTATE_URL_{upstream.upper().replace('-', '_')} "
                         f"to a local clone/mirror or pass --git-dir")
    repo = GitRepo(d)
    commit = repo.rev_parse(ref)
    if commit is None:
        raise ValueError(f"{ref!r} is not a commit in {d}")
    tmp = Path(tempfile.mkdtemp(prefix=f"{upstream}-", dir=scratch))
    got = set(repo.export(commit, paths, tmp))
    idx = indexer(upstream, tmp, sorted(got))
    missing = _missing(idx, upstream, notes)
    if missing:
        roots = _search_roots(config, upstream)
        extra: list[str] = []
        for b in missing:
            for p in repo.grep_files(commit, b, roots or ["."]):
                if p not in got and p not in extra and p.endswith(SOURCE_SUFFIXES):
                    extra.append(p)
        more = set(repo.export(commit, extra[:MAX_GREP_FILES], tmp))
        if more:
            idx = indexer(upstream, tmp, sorted(got | more))
    return idx, f"{ref} ({commit[:12]})"


def run_drift(config: Config, report, index, *, ref: str | None, tree: str | None, git_dir: str | None,
              upstream: str | None, indexer) -> None:
    notes = [o.note for o in report.result.outcomes if o.note is not None]
    ups = sorted({n.upstream for n in notes if n.upstream})
    if upstream:
        ups = [u for u in ups if u == upstream]
    if tree and len(ups) > 1:
        report.drift_diagnostics.append(Diagnostic(
            "error", f"--against-dir is one version of one upstream, but the annotations span {', '.join(ups)}",
            code="drift", detail="add --upstream NAME"))
        return
    with tempfile.TemporaryDirectory(prefix="annotate-drift-") as scratch:
        for up in ups:
            _drift_upstream(config, report, index, [n for n in notes if n.upstream == up], up, ref, tree, git_dir,
                            indexer, Path(scratch))


def _drift_upstream(config, report, index, mine, up, ref, tree, git_dir, indexer, scratch: Path) -> None:
    try:
        other, target = _other_index(config, up, mine, ref, tree, git_dir, indexer, scratch)
    except Exception as exc:
        report.drift_diagnostics.append(Diagnostic("error", f"drift for {up}: {exc}", code="drift"))
        return
    for n in mine:
        try:
            e = drift_one(index, other, n)
        except Exception as exc:
            src = n.source
            report.drift_diagnostics.append(Diagnostic(
                "error", f"internal error computing drift of {n.qualified_name}: {type(exc).__name__}: {exc}",
                file=src.file if src else None, line=src.line if src else None, code="internal"))
            continue
        e.target = target
        report.drift.append(e)
        d = drift_diagnostic(e, n)
        if d is not None:
            report.drift_diagnostics.append(d)


def drift_one(index, other, n) -> DriftEntry:
    """Where note `n` (a FunctionNote, TypeNote or MacroNote) lands in `other`."""
    src = n.source
    kind = n.kind
    e = DriftEntry(file=src.file if src else "", name=n.qualified_name, upstream=n.upstream, path=n.path, kind="",
                   what=kind)
    a = n.definition
    a_body = index.text_of(a) if a is not None else None
    if a is not None:
        e.old_lines = (a.start_line, a.end_line)
    want_fp = n.fingerprint or (a.fingerprint if a is not None else None)
    same = [s for s in definitions_in(other, n.upstream, n.path, kind) if s.qualified_name == n.qualified_name]
    if n.signature and len(same) > 1:
        same = [s for s in same if api.signature_matches(n.signature, s, other)] or same
    if len(same) > 1 and a is not None:
        # pick the one most like A's (same signature first, then body similarity)
        by_sig = [s for s in same if s.signature == a.signature]
        same = by_sig if len(by_sig) == 1 else same
    if len(same) > 1:
        e.kind = "ambiguous"
        e.candidates = [(s.qualified_name, s.path, s.start_line, 0.0) for s in same]
        return e
    if len(same) == 1:
        b = same[0]
        b_body = other.text_of(b)
        e.new_lines = (b.start_line, b.end_line)
        if want_fp is not None and b.fingerprint == want_fp:
            e.kind = "moved" if (e.old_lines and e.old_lines[0] != b.start_line) else "unchanged"
        else:
            e.kind = "changed"
            if a_body is not None:
                e.diff = short_diff(a_body, b_body, f"{n.path} (annotated)", f"{n.path} (at target)",
                                    a.start_line, b.start_line)
        for note in n.notes:
            hits = find_anchor(b_body, note.at)
            e.anchors.append((note.at, note.line, b.start_line + hits[0][0] if len(hits) == 1 else None, len(hits)))
        if kind == "type":
            e.lost_fields = _lost_fields(n, b)
        return e
    # not in its file under that name: the same body anywhere (renamed, or moved to another
    # file), then the same name in another file, then a similar body
    pool = all_definitions(other, n.upstream, kind)
    exact = [s for s in pool if want_fp and s.fingerprint == want_fp]
    if exact:
        moved = [s for s in exact if s.qualified_name == n.qualified_name]
        if moved:
            e.kind, e.new_path = "moved-file", moved[0].path
            e.new_lines = (moved[0].start_line, moved[0].end_line)
            e.candidates = [(s.qualified_name, s.path, s.start_line, 1.0) for s in moved]
        else:
            e.kind = "renamed"
            e.candidates = [(s.qualified_name, s.path, s.start_line, 1.0) for s in exact]
        return e
    elsewhere = [s for s in pool if s.qualified_name == n.qualified_name and s.path != n.path]
    if n.signature:
        elsewhere = [s for s in elsewhere if api.signature_matches(n.signature, s, other)]
    if elsewhere:
        e.kind = "moved-file"
        e.new_path = elsewhere[0].path
        e.new_lines = (elsewhere[0].start_line, elsewhere[0].end_line)
        e.candidates = [(s.qualified_name, s.path, s.start_line, 0.0) for s in elsewhere]
        return e
    if a_body and len([ln for ln in a_body.splitlines() if ln.strip()]) >= MIN_SIMILAR_LINES:
        scored = []
        a_norm = _norm_body(a_body, a.name if a else "")
        for s in pool:
            if a is not None and getattr(s, "kind", None) != getattr(a, "kind", None):
                continue  # (a kernel is not renamed into a host function, a struct into an enum)
            t = other.text_of(s)
            sm = difflib.SequenceMatcher(None, a_norm, _norm_body(t, s.name), autojunk=False)
            if sm.real_quick_ratio() < SIMILAR or sm.quick_ratio() < SIMILAR:
                continue
            r = sm.ratio()
            if r >= SIMILAR:
                scored.append((r, s))
        scored.sort(key=lambda x: -x[0])
        if scored:
            e.kind = "renamed"
            e.candidates = [(s.qualified_name, s.path, s.start_line, r) for r, s in scored[:3]]
            return e
    e.kind = "removed"
    return e


def _lost_fields(n, b) -> list[str]:
    """The `fields:` keys of a type note that name no member of the type at the target (notes on
    methods are not looked for: a method is a function, with drift of its own)."""
    members = {f.name for f in b.fields}
    return [f.name for f in n.fields if f.name not in members and f.kind != "method"]


def _norm_body(text: str, name: str) -> str:
    # compare bodies without the function's own name, so a renamed twin scores as equal
    return " ".join(text.replace(name, "_").split()) if name else " ".join(text.split())


def drift_diagnostic(e: DriftEntry, n) -> Diagnostic | None:
    src = n.source
    loc = dict(file=src.file if src else None, line=src.line if src else None,
               column=src.column if src else None, symbol=e.name)
    span = lambda t: f"{t[0]}-{t[1]}" if t else "?"  # noqa: E731
    lost = [a for a in e.anchors if a[2] is None]
    anchor_txt = ""
    if e.anchors:
        anchor_txt = "\n".join(f"anchor {a!r}: line {o} → " + (f"line {nl}" if nl else f"{c} matches (re-anchor it)")
                               for a, o, nl, c in e.anchors)
    if e.kind == "unchanged":
        return None if not lost else Diagnostic("warning", f"at {e.target}: {len(lost)} anchor(s) of {e.name} no longer match",
                                                code="drift-anchor", detail=anchor_txt, **loc)
    if e.kind == "moved":
        sev = "warning" if lost else "info"
        lost_txt = "\n".join(f"anchor {a!r}: {c} matches at the target (re-anchor it)" for a, _o, _n, c in lost)
        same = "same body" if e.what == "function" else "same definition"
        return Diagnostic(sev, f"at {e.target}: {e.name} moved, lines {span(e.old_lines)} → {span(e.new_lines)} "
                          f"({same}; notes follow it)", code="drift-moved", detail=lost_txt or None, **loc)
    if e.kind == "changed":
        fields_txt = "\n".join(f"fields.{f}: no such member at the target" for f in e.lost_fields)
        detail = "\n".join(x for x in (e.diff, anchor_txt, fields_txt) if x) or None
        return Diagnostic("warning", f"at {e.target}: {e.name} changed (lines {span(e.old_lines)} → "
                          f"{span(e.new_lines)}); its notes would be stale", code="drift-changed", detail=detail, **loc)
    if e.kind == "moved-file":
        return Diagnostic("warning", f"at {e.target}: {e.name} is in {e.new_path} (lines {span(e.new_lines)}), "
                          f"no longer in {e.path}", code="drift-moved-file", **loc)
    if e.kind == "renamed":
        cands = "\n".join(f"{c} ({p}:{ln}, similarity {s:.2f})" for c, p, ln, s in e.candidates)
        return Diagnostic("warning", f"at {e.target}: no {e.name}; renamed? {e.candidates[0][0]}",
                          code="drift-renamed", detail="candidates:\n" + cands, **loc)
    if e.kind == "ambiguous":
        cands = "\n".join(f"{c} ({p}:{ln})" for c, p, ln, _ in e.candidates)
        return Diagnostic("warning", f"at {e.target}: {e.name} has {len(e.candidates)} definitions; add `signature:`",
                          code="drift-ambiguous", detail=cands, **loc)
    return Diagnostic("error", f"at {e.target}: {e.name} was removed (nothing with its name or body in the files searched)",
                      code="drift-removed", **loc)


def format_drift(entries: list[DriftEntry]) -> str:
    counts: dict[str, int] = {}
    whats: dict[str, int] = {}
    for e in entries:
        counts[e.kind] = counts.get(e.kind, 0) + 1
        whats[e.what] = whats.get(e.what, 0) + 1
    targets = sorted({e.target for e in entries})
    order = ["unchanged", "moved", "changed", "renamed", "moved-file", "ambiguous", "removed"]
    parts = [f"{counts[k]} {k}" for k in order if counts.get(k)]
    noted = ", ".join(f"{whats[w]} {w}{'s' if whats[w] != 1 else ''}" for w in ("function", "type", "macro")
                      if whats.get(w) or (w == "function" and not whats))
    return f"drift to {', '.join(targets)}: {noted}: " + ", ".join(parts)

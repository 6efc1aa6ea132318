"""Loading annotation files and resolving them against an index.

`load_annotations(config, index)` is what the site and `annotate show` call. `check` (in
annotate.notes.check) runs the same resolution and adds the reviewer-facing report. Every
per-file step is wrapped: whatever a file holds, the result is Diagnostics, never a
traceback.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from annotate.config import Config
from annotate.errors import Diagnostic
from annotate.index.model import SOURCE_SUFFIXES, bare_name, split_key
from annotate.notes import model as M
from annotate.notes.anchors import compact, find_anchor, nearest_line

SCHEMA_LINE_PREFIX = "# yaml-language-server: $schema="
COURSES_DIR = "courses"
TODO = "TODO"  # placeholder text written by `annotate new`

# Per-function outcome in a check: what the summary line counts.
OUT_OK, OUT_STALE, OUT_BROKEN = "ok", "stale", "broken"
# The file is part of the pin but the checkout lacks it (the archive route ships no hopper/
# headers): its notes cannot be checked here, which is not the reviewer's error.
OUT_UNCHECKED = "unchecked"


# ---- locating files ----------------------------------------------------------------------

def annotation_paths(root: Path) -> tuple[list[Path], list[Path]]:
    """(annotation files, course maps) under `root`, sorted."""
    if not root.is_dir():
        return [], []
    files, courses = [], []
    for p in sorted(root.rglob("*")):
        if p.suffix not in (".yaml", ".yml") or not p.is_file():
            continue
        rel = p.relative_to(root).parts
        (courses if rel[0] == COURSES_DIR else files).append(p)
    return files, courses


def display_path(config: Config, p: Path) -> str:
    """How a file is named in messages: relative to the repository (or cwd) when inside it."""
    p = Path(os.path.abspath(p))
    for base in (Path.cwd(), config.repo_root):
        try:
            return p.relative_to(base).as_posix()
        except ValueError:
            continue
    return p.as_posix()


def expected_schema_ref(config: Config, yaml_file: Path) -> str:
    return Path(os.path.relpath(config.schema_file, Path(os.path.abspath(yaml_file)).parent)).as_posix()


def annotation_file_for(root: Path, upstream: str, path: str) -> Path:
    """Where the annotations of upstream file `path` live."""
    return root / upstream / f"{path}.yaml"


def _sig_matches(wanted: str, sym) -> bool:
    return compact(wanted) in compact(sym.signature or "")


def check_upstream_path(upstream: str, path: str) -> str | None:
    """Why `path` may not be used as a path inside an upstream, or None if fine."""
    if not path:
        return "path is empty"
    if "\\" in path:
        return f"path '{path}' uses '\\'; write '/'-separated paths relative to the upstream root"
    if path.startswith("/") or (len(path) > 1 and path[1] == ":") or path.startswith("~"):
        return f"path '{path}' is absolute; annotations may only name files inside the upstream (relative to its root)"
    parts = path.split("/")
    if ".." in parts:
        return f"path '{path}' leaves the upstream ('..'); annotations may only name files inside it"
    if "." in parts or "" in parts:
        return f"path '{path}' is not normalised; write '{posixpath.normpath(path).lstrip('/')}'"
    return None


# ---- results ---------------------------------------------------------------------------

@dataclass
class Outcome:
    """What the check counts for one function entry."""

    file: str
    name: str
    outcome: str  # OUT_OK | OUT_STALE | OUT_BROKEN | OUT_UNCHECKED
    note: M.FunctionNote | None = None


@dataclass
class LoadResult:
    set: M.AnnotationSet
    outcomes: list[Outcome] = field(default_factory=list)
    # (yaml file, key path to the function, current fingerprint, body text) for --refresh
    refreshable: list[tuple[Path, str, str, str]] = field(default_factory=list)


@dataclass
class Options:
    root: Path | None = None  # annotations root; default config.annotations_dir
    stale_detail: Callable | None = None  # (note_fields..., sym) -> str | None (diff text)
    check_schema_line: bool = True
    known_harnesses: set[str] | None = None
    only: list[Path] | None = None  # check just these files (course maps are always read)


def _text(v: Any) -> M.Text | None:
    if v is None:
        return None
    if isinstance(v, str):
        return M.Text(en=v)
    return M.Text(en=v.en, zh=v.zh)


# ---- the loader ----------------------------------------------------------------------

def load_annotations(config: Config, index, root: Path | None = None) -> M.AnnotationSet:
    """Every annotation file and course map under `root` (default: annotations/), resolved
    against `index`. Problems are in `.diagnostics`; nothing raises for bad input."""
    return load(config, index, Options(root=root)).set


def load(config: Config, index, options: Options | None = None) -> LoadResult:
    opts = options or Options()
    root = Path(opts.root) if opts.root else config.annotations_dir
    files, course_files = annotation_paths(root)
    picked = None
    if opts.only:
        picked = {Path(os.path.abspath(p)) for p in opts.only}
        files = [p for p in files if Path(os.path.abspath(p)) in picked]
    result = LoadResult(set=M.AnnotationSet())
    for p in files:
        disp = display_path(config, p)
        try:
            af = _load_file(config, index, root, p, disp, opts, result)
        except Exception as exc:  # a bug of ours must still not end the run
            af = M.AnnotationFile(file=disp, upstream=None, path=None, diagnostics=(
                _internal(disp, exc),))
        result.set.files.append(af)
        result.set.diagnostics.extend(af.diagnostics)
    for p in course_files:
        disp = display_path(config, p)
        try:
            course, diags = _load_course(config, index, p, disp, opts)
        except Exception as exc:
            course, diags = None, [_internal(disp, exc)]
        if course is not None:
            result.set.courses.append(course)
        if picked is None or Path(os.path.abspath(p)) in picked:
            result.set.diagnostics.extend(diags)
    result.set.diagnostics.extend(_cross_checks(result.set))
    return result


def _internal(disp: str, exc: BaseException) -> Diagnostic:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return Diagnostic("error", f"internal error while checking this file: {type(exc).__name__}: {exc}{where}",
                      file=disp, code="internal",
                      detail="please report this; the other files were checked normally")


def read_document(config: Config, path: Path, disp: str, opts: Options):
    """(Loaded | None, text | None, diagnostics) for one YAML file, syntax level only."""
    from annotate.notes.yamlpos import YamlProblem, decode, load_yaml

    diags: list[Diagnostic] = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, None, [Diagnostic("error", f"cannot read: {exc.strerror or exc}", file=disp, code="io")]
    try:
        text = decode(raw)
        if opts.check_schema_line:
            diags.extend(_schema_line(config, path, disp, text))
        loaded = load_yaml(text)
    except YamlProblem as p:
        return None, None, diags + [Diagnostic("error", p.message, file=disp, line=p.line, column=p.column,
                                               code=p.code)]
    return loaded, text, diags


def _schema_line(config: Config, path: Path, disp: str, text: str) -> list[Diagnostic]:
    first = text.split("\n", 1)[0].rstrip("\r")
    want = expected_schema_ref(config, path)
    line = SCHEMA_LINE_PREFIX + want
    if first.startswith(SCHEMA_LINE_PREFIX):
        got = first[len(SCHEMA_LINE_PREFIX):].strip()
        if got != want:
            return [Diagnostic("warning", f"schema line names '{got}', but the schema is at '{want}' from here",
                               file=disp, line=1, column=len(SCHEMA_LINE_PREFIX) + 1, code="schema-line",
                               detail=f"first line should be: {line}")]
        return []
    return [Diagnostic("warning", "first line does not name the schema, so editors cannot validate this file",
                       file=disp, line=1, column=1, code="schema-line", detail=f"first line should be: {line}")]


def _pos(loaded, path, key=False):
    p = loaded.where(path, key=key) if loaded is not None else None
    return (p[0], p[1]) if p else (None, None)


def _load_file(config: Config, index, root: Path, p: Path, disp: str, opts: Options,
               result: LoadResult) -> M.AnnotationFile:
    from pydantic import ValidationError

    from annotate.notes import schema as S
    from annotate.notes.validate import diagnostics as vdiags
    from annotate.notes.validate import did_you_mean

    loaded, text, diags = read_document(config, p, disp, opts)
    if loaded is None:
        result.outcomes.append(Outcome(disp, "(file)", OUT_BROKEN))
        return M.AnnotationFile(file=disp, upstream=None, path=None, diagnostics=tuple(diags))
    data = loaded.data
    if not isinstance(data, dict):
        from annotate.notes.validate import describe

        diags.append(Diagnostic("error", f"an annotation file is a mapping (upstream:, path:, functions:), got {describe(data)}",
                                file=disp, line=1, column=1, code="wrong-type"))
        result.outcomes.append(Outcome(disp, "(file)", OUT_BROKEN))
        return M.AnnotationFile(file=disp, upstream=None, path=None, diagnostics=tuple(diags))

    # The file's head first (functions validated one by one below, so one bad entry does not
    # hide the others).
    head = {k: v for k, v in data.items() if k != "functions"}
    funcs_raw = data.get("functions", {})
    head_doc = None
    try:
        head_doc = S.FileDoc.model_validate(head)
    except ValidationError as err:
        diags.extend(vdiags(err, S.FileDoc, loaded, disp))
    if funcs_raw is None:
        funcs_raw = {}
    if not isinstance(funcs_raw, dict):
        from annotate.notes.validate import describe

        line, col = _pos(loaded, ("functions",))
        diags.append(Diagnostic("error", f"functions: expected a mapping of qualified names to entries, got {describe(funcs_raw)}",
                                file=disp, line=line, column=col, code="wrong-type"))
        funcs_raw = {}

    upstream = head_doc.upstream if head_doc else (data.get("upstream") if isinstance(data.get("upstream"), str) else None)
    path = head_doc.path if head_doc else (data.get("path") if isinstance(data.get("path"), str) else None)
    file_ok = head_doc is not None

    # Where the file is vs what it says (a path that leaves the upstream is reported below).
    if file_ok and check_upstream_path(upstream, path) is None:
        try:
            rel = Path(os.path.abspath(p)).relative_to(Path(os.path.abspath(root))).as_posix()
        except ValueError:
            rel = None
        want = f"{upstream}/{path}.yaml"
        if rel is not None and rel != want:
            line, col = _pos(loaded, ("path",))
            diags.append(Diagnostic("error", f"this file annotates {upstream}:{path}, so it must be at "
                                    f"{display_path(config, annotation_file_for(root, upstream, path))}",
                                    file=disp, line=line, column=col, code="location-mismatch",
                                    detail=f"move the file, or correct upstream:/path: (found at {rel})"))
    # The upstream and the file.
    source_ok = False
    unchecked = False
    if file_ok:
        known = index.upstreams()
        why = check_upstream_path(upstream, path)
        if upstream not in known:
            line, col = _pos(loaded, ("upstream",))
            pins = []
            try:
                from annotate.upstreams import load_upstreams

                pins = list(load_upstreams(config))
            except Exception:
                pass
            if upstream in pins:
                diags.append(Diagnostic("error", f"upstream '{upstream}' is not in the index (not fetched?)",
                                        file=disp, line=line, column=col, code="not-indexed",
                                        detail="run `annotate fetch`"))
            else:
                guess = did_you_mean(upstream, known + pins)
                msg = f"unknown upstream '{upstream}'" + (f"; did you mean '{guess}'?" if guess else "")
                diags.append(Diagnostic("error", msg, file=disp, line=line, column=col, code="unknown-upstream",
                                        detail="known: " + ", ".join(sorted(set(known + pins)))))
        elif why:
            line, col = _pos(loaded, ("path",))
            diags.append(Diagnostic("error", why, file=disp, line=line, column=col, code="path-outside"))
        elif not index.has_file(upstream, path) and path in _absent_from_checkout(config, upstream):
            line, col = _pos(loaded, ("path",))
            diags.append(Diagnostic("warning", f"{path} is part of the {upstream} pin but this checkout lacks it "
                                    "(the route it was fetched by does not ship it); its notes are not checked",
                                    file=disp, line=line, column=col, code="not-in-checkout",
                                    detail="`annotate fetch --via git --force` fetches the whole pin"))
            unchecked = True
        elif not index.has_file(upstream, path):
            line, col = _pos(loaded, ("path",))
            paths = index.paths(upstream)
            near = difflib.get_close_matches(path, paths, n=3, cutoff=0.6)
            if not near:
                base = posixpath.basename(path)
                near = [q for q in paths if posixpath.basename(q) == base][:3]
            msg = f"{path} is not a file of {upstream} at the indexed version"
            if near:
                msg += f"; did you mean {near[0]}?"
            diags.append(Diagnostic("error", msg, file=disp, line=line, column=col, code="missing-file",
                                    detail=("nearest: " + ", ".join(near)) if len(near) > 1 else None))
        else:
            source_ok = True

    notes: list[M.FunctionNote] = []
    for name, raw in funcs_raw.items():
        fpath = ("functions", name)
        try:
            fn, fdiags, outcome, refresh = _load_function(config, index, loaded, disp, p, upstream, path,
                                                          name, raw, source_ok, opts)
        except Exception as exc:
            fn, fdiags, outcome, refresh = None, [_internal(disp, exc)], OUT_BROKEN, None
            line, col = _pos(loaded, fpath, key=True)
            fdiags = [Diagnostic(d.severity, d.message, d.file, line, col, d.code, name, d.detail) for d in fdiags]
        if unchecked and outcome == OUT_BROKEN and not any(d.severity == "error" for d in fdiags):
            outcome = OUT_UNCHECKED
        diags.extend(fdiags)
        if fn is not None:
            notes.append(fn)
        if refresh is not None:
            result.refreshable.append(refresh)
        result.outcomes.append(Outcome(disp, name, outcome, fn))

    seen: dict[str, M.FunctionNote] = {}
    for fn in notes:
        if fn.symbol is None:
            continue
        first = seen.setdefault(fn.symbol.key, fn)
        if first is not fn:
            src = fn.source
            diags.append(Diagnostic("error", f"this entry annotates the same definition as the one at line "
                                    f"{first.source.line if first.source else '?'} ({fn.symbol.path}:{fn.symbol.start_line})",
                                    file=disp, line=src.line if src else None, column=src.column if src else None,
                                    code="duplicate-entry", symbol=fn.qualified_name,
                                    detail="merge the two entries, or give each a `signature:` that picks a different definition"))
    overview = _text(head_doc.overview) if head_doc else None
    diags.sort(key=lambda d: (d.line or 0, d.column or 0))
    return M.AnnotationFile(file=disp, upstream=upstream, path=path, overview=overview,
                            functions=tuple(notes), diagnostics=tuple(diags))


def _absent_from_checkout(config, upstream: str) -> frozenset[str]:
    try:
        from annotate.fetch.api import missing_paths
    except ImportError:
        return frozenset()
    return missing_paths(config, upstream)


def _load_function(config, index, loaded, disp, p, upstream, path, name, raw, source_ok, opts):
    from pydantic import ValidationError

    from annotate.notes import schema as S
    from annotate.notes.validate import diagnostics as vdiags

    fpath = ("functions", name)
    kline, kcol = _pos(loaded, fpath, key=True)
    diags: list[Diagnostic] = []

    def diag(sev, msg, code, at=None, key=False, detail=None):
        line, col = _pos(loaded, at, key=key) if at is not None else (kline, kcol)
        diags.append(Diagnostic(sev, msg, file=disp, line=line, column=col, code=code, symbol=name,
                                detail=detail))

    if raw is None:
        raw = {}
    try:
        doc = S.FunctionDoc.model_validate(raw)
    except ValidationError as err:
        diags.extend(vdiags(err, S.FunctionDoc, loaded, disp, prefix=fpath, symbol=name))
        return None, diags, OUT_BROKEN, None
    entry_key = name
    name = name.split("@", 1)[0].strip()  # "qualified::name@label": a second overload's entry
    if not name:
        diag("error", "empty function name", "unresolved", key=True)
        return None, diags, OUT_BROKEN, None

    base = dict(qualified_name=name, upstream=upstream or "", path=path or "", signature=doc.signature,
                fingerprint=doc.fingerprint, summary=_text(doc.summary),
                decomposition=_text(doc.decomposition), sync=_text(doc.sync),
                first_look=_text(doc.first_look),
                memory=tuple(M.MemoryNote(what=_text(m.what), path=m.path, how=_text(m.how)) for m in doc.memory),
                calls={k: _text(v) for k, v in doc.calls.items()},
                course=tuple(doc.course), harness=doc.harness,
                source=M.SourceSpan(disp, kline or 1, kcol or 1))
    unresolved_notes = tuple(M.InlineNote(at=n.at, text=_text(n.text)) for n in doc.notes)
    if not source_ok:
        return (M.FunctionNote(symbol=None, status=M.UNRESOLVED, notes=unresolved_notes, **base),
                diags, OUT_BROKEN, None)

    # ---- resolve the name in this file
    syms = index.symbols_in(upstream, path)
    exact = [s for s in syms if s.qualified_name == name]
    if not exact:
        suffix = [s for s in syms if s.qualified_name.endswith("::" + name)]
        if suffix and len({s.qualified_name for s in suffix}) == 1:
            diag("warning", f"'{name}' is not the qualified name; write '{suffix[0].qualified_name}'",
                 "not-qualified", key=True)
            exact = suffix
    if not exact:
        cands = sorted({s.qualified_name for s in syms})
        near = difflib.get_close_matches(name, cands, n=3, cutoff=0.6)
        if not near:
            bare = bare_name(name)
            near = [c for c in cands if bare_name(c) == bare][:3] or difflib.get_close_matches(
                bare, cands, n=3, cutoff=0.5)
        elsewhere = [s for s in index.find(name, upstream) if s.path != path]
        msg = f"no function '{name}' in {upstream}:{path}"
        detail = None
        if near:
            msg += f"; did you mean '{near[0]}'?"
            if len(near) > 1:
                detail = "nearest names: " + ", ".join(near)
        if elsewhere:
            where = ", ".join(sorted({f"{s.path}:{s.start_line}" for s in elsewhere})[:4])
            detail = (detail + "\n" if detail else "") + f"defined in another file: {where} (annotate it in that file's YAML)"
        diag("error", msg, "unresolved", key=True, detail=detail)
        return (M.FunctionNote(symbol=None, status=M.UNRESOLVED, notes=unresolved_notes, **base),
                diags, OUT_BROKEN, None)
    chosen = exact
    if doc.signature:
        chosen = [s for s in exact if _sig_matches(doc.signature, s)]
        if not chosen:
            listing = "\n".join(f"line {s.start_line}: {s.signature}" for s in exact)
            diag("error", f"signature '{doc.signature}' matches none of the {len(exact)} definition(s) of '{name}'",
                 "signature-mismatch", at=fpath + ("signature",), detail=listing)
            return (M.FunctionNote(symbol=None, status=M.UNRESOLVED, notes=unresolved_notes, **base),
                    diags, OUT_BROKEN, None)
    if len(chosen) > 1:
        listing = "\n".join(f"line {s.start_line}: {s.signature}" for s in chosen)
        diag("error", f"'{name}' has {len(chosen)} definitions in {path}; add `signature:` with a piece of the one you mean",
             "ambiguous", key=True, detail=listing)
        return (M.FunctionNote(symbol=None, status=M.AMBIGUOUS, notes=unresolved_notes, **base),
                diags, OUT_BROKEN, None)
    sym = chosen[0]
    body = index.text_of(sym)

    # ---- anchors
    inline: list[M.InlineNote] = []
    broken = False
    for i, n in enumerate(doc.notes):
        hits = find_anchor(body, n.at)
        at_path = fpath + ("notes", i, "at")
        if len(hits) == 1:
            a, b = hits[0]
            inline.append(M.InlineNote(at=n.at, text=_text(n.text), line=sym.start_line + a,
                                       end_line=sym.start_line + b))
            continue
        inline.append(M.InlineNote(at=n.at, text=_text(n.text)))
        broken = True
        if not hits:
            near = nearest_line(body, n.at)
            detail = f"closest line {sym.start_line + near[0]}: {near[1]}" if near else None
            diag("error", f"anchor {n.at!r} matches nothing in {name} (lines {sym.start_line}-{sym.end_line})",
                 "anchor-missing", at=at_path, detail=detail)
        else:
            per: dict[int, int] = {}
            for a, _ in hits:
                per[sym.start_line + a] = per.get(sym.start_line + a, 0) + 1
            lines = ", ".join(f"{ln} ({c}x)" if c > 1 else str(ln) for ln, c in list(per.items())[:8])
            diag("error", f"anchor {n.at!r} matches {len(hits)} places in {name} (lines {lines}); lengthen it until it is unique",
                 "anchor-ambiguous", at=at_path)

    # ---- callees named under calls:
    if doc.calls:
        edges = index.callees(sym)
        names: set[str] = set()
        for e in edges:
            names.add(e.callee_name)
            for k in e.callees:
                names.add(split_key(k)[1])
        norm = {n.split("<", 1)[0].replace(" ", "") for n in names}
        for callee in doc.calls:
            c = callee.split("<", 1)[0].replace(" ", "")
            ok = any(c == n or n.endswith("::" + c) or c.endswith("::" + n) for n in norm)
            if not ok:
                hint = ", ".join(sorted(norm)[:12])
                diag("warning", f"{name} has no call to '{callee}' that the index sees", "call-not-found",
                     at=fpath + ("calls", callee), key=True,
                     detail=f"calls seen: {hint}" if hint else "the index sees no calls in this function")

    if doc.harness and opts.known_harnesses is not None and doc.harness not in opts.known_harnesses:
        diag("warning", f"no harness '{doc.harness}' in vendor_kernels/", "unknown-harness",
             at=fpath + ("harness",))

    # ---- placeholders left by `annotate new`
    for fld in ("summary", "decomposition", "sync", "first_look"):
        t = getattr(doc, fld)
        t = t if isinstance(t, str) or t is None else t.en
        if t is not None and t.strip().startswith(TODO):
            diag("warning", f"{fld} still holds the placeholder from `annotate new`", "todo",
                 at=fpath + (fld,))

    # ---- fingerprint
    current = sym.fingerprint
    refresh = None
    if not doc.fingerprint:
        status = M.UNFINGERPRINTED
        diag("warning", f"{name} has no fingerprint; run `annotate check --refresh` to record the body you annotated",
             "no-fingerprint", key=True)
        refresh = (p, entry_key, current, body)
    elif doc.fingerprint != current:
        status = M.STALE
        detail = None
        if opts.stale_detail is not None:
            try:
                detail = opts.stale_detail(upstream, path, name, doc.fingerprint, sym, body)
            except Exception as exc:
                detail = f"(could not compute the diff: {type(exc).__name__}: {exc})"
        diag("warning", f"{name} changed since it was annotated (fingerprint {doc.fingerprint}, now {current}); "
             "re-read the notes, then `annotate check --refresh`", "stale", at=fpath + ("fingerprint",),
             detail=detail)
        refresh = (p, entry_key, current, body)
    else:
        status = M.OK

    note = M.FunctionNote(symbol=sym, status=status, current_fingerprint=current, notes=tuple(inline), **base)
    outcome = OUT_BROKEN if broken else (OUT_STALE if status == M.STALE else OUT_OK)
    return note, diags, outcome, refresh


def _load_course(config: Config, index, p: Path, disp: str, opts: Options):
    from pydantic import ValidationError

    from annotate.notes import schema as S
    from annotate.notes.validate import diagnostics as vdiags

    loaded, text, diags = read_document(config, p, disp, opts)
    if loaded is None:
        return None, diags
    try:
        doc = S.CourseDoc.model_validate(loaded.data)
    except ValidationError as err:
        return None, diags + vdiags(err, S.CourseDoc, loaded, disp)
    stem = p.name.rsplit(".", 1)[0]
    if stem != doc.id:
        line, col = _pos(loaded, ("id",))
        diags.append(Diagnostic("warning", f"course id '{doc.id}' differs from the file name '{p.name}'",
                                file=disp, line=line, column=col, code="location-mismatch"))
    steps = []
    for i, st in enumerate(doc.steps):
        for j, ref in enumerate(st.refs):
            why = _ref_problem(index, ref)
            if why:
                line, col = _pos(loaded, ("steps", i, "refs", j))
                up, _, rest = ref.partition(":")
                absent = _absent_from_checkout(config, up) if up else frozenset()
                if rest in absent:
                    diags.append(Diagnostic("warning", f"ref '{ref}': part of the pin but not in this checkout "
                                            "(the route it was fetched by does not ship it); not checked",
                                            file=disp, line=line, column=col, code="not-in-checkout"))
                elif absent and "/" not in rest and not rest.endswith(SOURCE_SUFFIXES):
                    diags.append(Diagnostic("warning", f"{why}; this checkout lacks {len(absent)} files of the "
                                            "pin, which may define it: not checked",
                                            file=disp, line=line, column=col, code="not-in-checkout",
                                            detail="`annotate fetch --via git --force` fetches the whole pin"))
                else:
                    diags.append(Diagnostic("error", why, file=disp, line=line, column=col, code="bad-ref"))
        steps.append(M.CourseStep(id=st.id, title=_text(st.title), text=_text(st.text), refs=tuple(st.refs)))
    course = M.Course(id=doc.id, title=_text(doc.title), text=_text(doc.text), steps=tuple(steps), file=disp)
    return course, diags


def _ref_problem(index, ref: str) -> str | None:
    """Why a course ref ("upstream:path" or "upstream:qualified_name") does not resolve."""
    if ":" not in ref or ref.startswith(":"):
        return f"ref '{ref}' must be 'upstream:path' or 'upstream:qualified_name'"
    up, rest = ref.split(":", 1)
    if up not in index.upstreams():
        return f"ref '{ref}': unknown upstream '{up}'"
    if "/" in rest or rest.endswith(SOURCE_SUFFIXES):
        why = check_upstream_path(up, rest)
        if why:
            return f"ref '{ref}': {why}"
    if index.has_file(up, rest) or index.find(rest, up):
        return None
    if "/" in rest or rest.endswith(SOURCE_SUFFIXES):
        near = difflib.get_close_matches(rest, index.paths(up), n=1, cutoff=0.6)
        return f"ref '{ref}': no such file in {up}" + (f"; did you mean '{up}:{near[0]}'?" if near else "")
    return f"ref '{ref}': no function '{rest}' in {up}"


def _cross_checks(aset: M.AnnotationSet) -> list[Diagnostic]:
    """Course tags on functions that name no known course or step (only once courses exist)."""
    if not aset.courses:
        return []
    known = {c.id for c in aset.courses} | {s.id for c in aset.courses for s in c.steps}
    out = []
    for fn in aset.functions():
        for tag in fn.course:
            if tag not in known:
                src = fn.source
                out.append(Diagnostic("warning", f"{fn.qualified_name}: course '{tag}' is not a course or step id",
                                      file=src.file if src else None, line=src.line if src else None,
                                      column=src.column if src else None, code="unknown-course",
                                      symbol=fn.qualified_name))
    return out

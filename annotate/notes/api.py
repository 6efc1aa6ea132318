"""Loading annotation files and resolving them against an index.

`load_annotations(config, index)` is what the site and `annotate show` read (through the
Project). `check` (in annotate.notes.check) runs the same resolution and adds the
reviewer-facing report; `annotation_coverage` is `annotate status`'s count, read the same way.
Every per-file step is wrapped: whatever a file holds, the result is Diagnostics, never a
traceback.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import posixpath
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple

from annotate.config import Config
from annotate.errors import AnnotateError, Diagnostic
from annotate.index.model import SOURCE_SUFFIXES, MacroDef, bare_name, split_key
from annotate.notes import model as M
from annotate.notes.anchors import compact, find_anchor, nearest_line
from annotate.notes.policy import Policy, missing_languages
from annotate.yamlpos import Loaded, YamlProblem, decode, load_yaml, read_bytes

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


def signature_matches(wanted: str, d, index) -> bool:
    """Whether an entry's `signature:` picks definition `d`: a piece of a function's or a type's
    head, or of a macro's whole `#define` (its name and parameters are the same in every `#if`
    branch; the replacement text tells them apart). Whitespace is ignored."""
    head = index.text_of(d) if isinstance(d, MacroDef) else d.signature
    return compact(wanted) in compact(head or "")


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

# The sections of an annotation file that hold entries: (key, the kind of its entries, what its
# keys are), in the order they are read.
SECTIONS = (("functions", "function", "qualified names"), ("types", "type", "qualified names"),
            ("macros", "macro", "macro names"))
SECTION_NAMES = tuple(s for s, _, _ in SECTIONS)


@dataclass(frozen=True)
class Outcome:
    """What the check counts for one entry (a function's, a type's or a macro's)."""

    file: str
    name: str
    outcome: str  # OUT_OK | OUT_STALE | OUT_BROKEN | OUT_UNCHECKED
    note: M.FunctionNote | M.TypeNote | M.MacroNote | None = None
    kind: str = "function"  # "function" | "type" | "macro": the section of the entry


class Refreshable(NamedTuple):
    """A fingerprint `--refresh` may write: into which file, at which entry, and the text it
    stands for (kept in the body store, so a later stale warning can show the diff)."""

    yaml_file: Path
    key: str  # the entry's key as written (with any `@label`)
    fingerprint: str  # the definition's fingerprint now
    text: str  # the definition's text now
    section: str = "functions"  # or "types", "macros"


@dataclass(frozen=True)
class LoadResult:
    set: M.AnnotationSet
    outcomes: tuple[Outcome, ...] = ()
    refreshable: tuple[Refreshable, ...] = ()


@dataclass
class Options:
    root: Path | None = None  # annotations root; default config.annotations_dir
    # (upstream, path, name, old fingerprint, definition, its text now, kind=) -> diff text or None
    stale_detail: Callable | None = None
    check_schema_line: bool = True
    known_harnesses: set[str] | None = None
    only: list[Path] | None = None  # check just these files (course maps are always read)
    policy: Policy | None = None  # the language policy to report on (annotate check); None: no report


@dataclass(frozen=True)
class Coverage:
    """What `annotate status` shows of one upstream's annotations."""

    files: int
    functions: int  # entries under `functions:` of the files that read
    broken: tuple[str, ...]  # files that do not read as an annotation mapping (paths under the root)


def _text(v: Any) -> M.Text | None:
    if v is None:
        return None
    if isinstance(v, str):
        return M.Text(en=v)
    return M.Text(en=v.en, zh=v.zh)


class _Session:
    """One load: the inputs, and what is worth asking the pin file or the fetch stage only once.
    The index is asked directly, under its rule for absent things (annotate.index.model.IndexView)."""

    def __init__(self, config: Config, index, root: Path, opts: Options):
        self.config, self.index, self.root, self.opts = config, index, root, opts
        self._absent: dict[str, frozenset[str]] = {}
        self._pins: dict | None = None
        # a file's entries each ask for its definitions and text: asked of the index once
        self._symbols: dict[tuple[str, str], list] = {}
        self._lines: dict[tuple[str, str], list[str]] = {}

    def symbols_in(self, upstream: str, path: str) -> list:
        key = (upstream, path)
        if key not in self._symbols:
            self._symbols[key] = self.index.symbols_in(upstream, path)
        return self._symbols[key]

    def text_of(self, sym) -> str:
        """`index.text_of(sym)`, the file split into lines once."""
        key = (sym.upstream, sym.path)
        lines = self._lines.get(key)
        if lines is None:
            lines = self._lines[key] = self.index.source(*key).splitlines(keepends=True)
        return "".join(lines[sym.start_line - 1:sym.end_line])

    def pins(self) -> dict:
        """The pin file's upstreams by name ({} without a pin file: a tree indexed with --source)."""
        if self._pins is None:
            from annotate.upstreams import load_upstreams

            try:
                self._pins = dict(load_upstreams(self.config))
            except AnnotateError:
                self._pins = {}
        return self._pins

    def not_included(self, upstream: str, path: str) -> str | None:
        """The `index: included` path `path` lies under, when the checkout has the file but the index
        leaves it out (no indexed file of this checkout includes it), else None."""
        from annotate.upstreams import checkout_root

        up = self.pins().get(upstream)
        if up is None:
            return None
        under = next((p for p in up.included_only_paths() if path.startswith(p + "/")), None)
        return under if under is not None and (checkout_root(self.config, up) / path).is_file() else None

    def absent(self, upstream: str) -> frozenset[str]:
        """Files of the pin that the checkout lacks (the route it was fetched by does not ship them)."""
        if upstream not in self._absent:
            from annotate.fetch.api import missing_paths

            self._absent[upstream] = missing_paths(self.config, upstream)
        return self._absent[upstream]


@dataclass
class _Collected:
    """What the files of one load add up to, in file order."""

    files: list[M.AnnotationFile] = field(default_factory=list)
    courses: list[M.Course] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    refreshable: list[Refreshable] = field(default_factory=list)


# ---- the loader ----------------------------------------------------------------------

def load_annotations(config: Config, index, root: Path | None = None) -> M.AnnotationSet:
    """Every annotation file and course map under `root` (default: annotations/), resolved
    against `index`. Problems are in `.diagnostics`; nothing raises for bad input. Files read
    before with everything else equal come from the cache (annotate.notes.cache)."""
    return load(config, index, Options(root=root), cached=True).set


def load(config: Config, index, options: Options | None = None, cached: bool = False) -> LoadResult:
    """`cached`: take files from the cache and keep them there (only with the default Options:
    what the cache holds is the AnnotationSet, not `check`'s outcomes)."""
    opts = options or Options()
    root = Path(opts.root) if opts.root else config.annotations_dir
    session = _Session(config, index, root, opts)
    cache = None
    if cached:
        from annotate.notes.cache import NotesCache

        cache = NotesCache(config, index, root)
    files, course_files = annotation_paths(root)
    picked = None
    if opts.only:
        picked = {Path(os.path.abspath(p)) for p in opts.only}
        files = [p for p in files if Path(os.path.abspath(p)) in picked]
    got = _Collected()
    for p in files:
        disp = display_path(config, p)
        where, af = cache.get("file", p, M.AnnotationFile) if cache else (None, None)
        if af is None:
            try:
                af = _load_file(session, p, disp, got)
                if cache:
                    cache.put(where, "file", p, af)
            except Exception as exc:  # a bug of ours must still not end the run
                af = M.AnnotationFile(file=disp, upstream=None, path=None, diagnostics=(_internal(disp, exc),))
        got.files.append(af)
        got.diagnostics.extend(af.diagnostics)
    for p in course_files:
        disp = display_path(config, p)
        from annotate.notes.cache import CourseEntry

        where, entry = cache.get("course", p, CourseEntry) if cache else (None, None)
        if entry is not None:
            course, diags = entry.course, list(entry.diagnostics)
        else:
            try:
                course, diags = _load_course(session, p, disp)
                if cache:
                    cache.put(where, "course", p, CourseEntry(course, tuple(diags)))
            except Exception as exc:
                course, diags = None, [_internal(disp, exc)]
        if course is not None:
            got.courses.append(course)
        if picked is None or Path(os.path.abspath(p)) in picked:
            got.diagnostics.extend(diags)
    got.diagnostics.extend(_duplicate_courses(got.courses))
    courses = _first_of_each_id(got.courses)
    got.diagnostics.extend(_cross_checks(got.files, courses))
    aset = M.AnnotationSet(files=tuple(got.files), courses=tuple(courses), diagnostics=tuple(got.diagnostics))
    return LoadResult(aset, tuple(got.outcomes), tuple(got.refreshable))


def annotation_coverage(config: Config, upstream: str, root: Path | None = None) -> Coverage:
    """Files and annotated functions under <root>/<upstream>/, read the way `annotate check`
    reads them (its file filter, its size limit, its YAML reader)."""
    root = Path(root) if root else config.annotations_dir
    files = [p for p in annotation_paths(root)[0] if p.relative_to(root).parts[0] == upstream]
    n_funcs = 0
    broken: list[str] = []
    opts = Options(root=root, check_schema_line=False)
    for p in files:
        loaded, _text_, _diags = read_document(config, p, display_path(config, p), opts)
        data = loaded.data if loaded is not None else None
        funcs = data.get("functions") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(funcs or {}, dict):
            broken.append(p.relative_to(root).as_posix())
            continue
        n_funcs += len(funcs or {})
    return Coverage(len(files), n_funcs, tuple(broken))


def _internal(disp: str, exc: BaseException) -> Diagnostic:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return Diagnostic("error", f"internal error while checking this file: {type(exc).__name__}: {exc}{where}",
                      file=disp, code="internal",
                      detail="please report this; the other files were checked normally")


def read_document(config: Config, path: Path, disp: str, opts: Options):
    """(Loaded | None, text | None, diagnostics) for one YAML file, syntax level only: the one
    reader of annotation files and course maps (bounded, regular files only)."""
    diags: list[Diagnostic] = []
    try:
        text = decode(read_bytes(path))
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


def _languages(s: "_Session", doc, loaded, disp: str, prefix: tuple = ()) -> list[Diagnostic]:
    """The language policy's warnings for one validated document (or entry), when checking."""
    if s.opts.policy is None:
        return []
    return missing_languages(doc, s.opts.policy, lambda path: _pos(loaded, path), disp, prefix)


# ---- one annotation file -----------------------------------------------------------------

def _load_file(s: _Session, p: Path, disp: str, got: _Collected) -> M.AnnotationFile:
    """One annotation file: its head, where it is, its source file, then each function entry."""
    from annotate.notes.validate import describe

    loaded, _text_, diags = read_document(s.config, p, disp, s.opts)
    if loaded is not None and not isinstance(loaded.data, dict):
        diags.append(Diagnostic("error", "an annotation file is a mapping (upstream:, path:, functions:), got "
                                f"{describe(loaded.data)}", file=disp, line=1, column=1, code="wrong-type"))
        loaded = None
    if loaded is None:
        got.outcomes.append(Outcome(disp, "(file)", OUT_BROKEN))
        return M.AnnotationFile(file=disp, upstream=None, path=None, diagnostics=tuple(diags))
    head_doc, raw_sections = _file_head(loaded, disp, diags)
    data = loaded.data
    upstream = head_doc.upstream if head_doc else (data.get("upstream") if isinstance(data.get("upstream"), str) else None)
    path = head_doc.path if head_doc else (data.get("path") if isinstance(data.get("path"), str) else None)
    source_ok = unchecked = False
    if head_doc is not None:
        diags.extend(_location_check(s, p, loaded, disp, upstream, path))
        source_ok, unchecked, more = _source_check(s, loaded, disp, upstream, path)
        diags.extend(more)
    where = _Where(s, loaded, disp, p, upstream, path, source_ok)
    if head_doc is not None:
        diags.extend(_languages(s, head_doc, loaded, disp))
    from annotate.notes.typenotes import load_macro, load_type

    loaders = {"functions": _load_function, "types": load_type, "macros": load_macro}
    entries: dict[str, tuple] = {}
    for section, kind, _what in SECTIONS:
        notes = _load_entries(where, raw_sections[section], unchecked, diags, got, section, kind, loaders[section])
        diags.extend(_duplicate_entries(notes, disp))
        entries[section] = tuple(notes)
    diags.sort(key=lambda d: (d.line or 0, d.column or 0))
    return M.AnnotationFile(file=disp, upstream=upstream, path=path,
                            overview=_text(head_doc.overview) if head_doc else None,
                            diagnostics=tuple(diags), **entries)


def _file_head(loaded: Loaded, disp: str, diags: list[Diagnostic]):
    """(the validated head or None, section name -> its raw mapping of entries). The head is
    validated apart from the entries, which are validated one by one, so one bad entry does not
    hide the others."""
    from pydantic import ValidationError

    from annotate.notes import schema as S
    from annotate.notes.validate import describe
    from annotate.notes.validate import diagnostics as vdiags

    data = loaded.data
    head = {k: v for k, v in data.items() if k not in SECTION_NAMES}
    head_doc = None
    try:
        head_doc = S.FileDoc.model_validate(head)
    except ValidationError as err:
        diags.extend(vdiags(err, S.FileDoc, loaded, disp))
    sections: dict[str, dict] = {}
    for section, _kind, what in SECTIONS:
        raw = data.get(section)
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            line, col = _pos(loaded, (section,))
            diags.append(Diagnostic("error", f"{section}: expected a mapping of {what} to entries, got "
                                    f"{describe(raw)}", file=disp, line=line, column=col, code="wrong-type"))
            raw = {}
        sections[section] = raw
    return head_doc, sections


def _location_check(s: _Session, p: Path, loaded: Loaded, disp: str, upstream: str, path: str) -> list[Diagnostic]:
    """Where the file is vs what it says (a path that leaves the upstream is reported by _source_check)."""
    if check_upstream_path(upstream, path) is not None:
        return []
    try:
        rel = Path(os.path.abspath(p)).relative_to(Path(os.path.abspath(s.root))).as_posix()
    except ValueError:
        return []
    if rel == f"{upstream}/{path}.yaml":
        return []
    line, col = _pos(loaded, ("path",))
    return [Diagnostic("error", f"this file annotates {upstream}:{path}, so it must be at "
                       f"{display_path(s.config, annotation_file_for(s.root, upstream, path))}",
                       file=disp, line=line, column=col, code="location-mismatch",
                       detail=f"move the file, or correct upstream:/path: (found at {rel})")]


def _source_check(s: _Session, loaded: Loaded, disp: str, upstream: str, path: str):
    """(source ok, unchecked, diagnostics): is `upstream:path` a file the index holds?"""
    def at_key(key: str, severity: str, message: str, code: str, detail: str | None = None) -> Diagnostic:
        line, col = _pos(loaded, (key,))
        return Diagnostic(severity, message, file=disp, line=line, column=col, code=code, detail=detail)

    known = s.index.upstreams()
    why = check_upstream_path(upstream, path)
    if upstream not in known:
        from annotate.notes.validate import did_you_mean

        pins = list(s.pins())
        if upstream in pins:
            return False, False, [at_key("upstream", "error", f"upstream '{upstream}' is not in the index (not fetched?)",
                                         "not-indexed", "run `annotate fetch`")]
        guess = did_you_mean(upstream, known + pins)
        msg = f"unknown upstream '{upstream}'" + (f"; did you mean '{guess}'?" if guess else "")
        return False, False, [at_key("upstream", "error", msg, "unknown-upstream",
                                     "known: " + ", ".join(sorted(set(known + pins))))]
    if why:
        return False, False, [at_key("path", "error", why, "path-outside")]
    if s.index.has_file(upstream, path):
        return True, False, []
    if path in s.absent(upstream):
        return False, True, [at_key("path", "info", f"{path} is part of the {upstream} pin but this checkout "
                                    "lacks it (the route it was fetched by does not ship it); its notes are not checked",
                                    "not-in-checkout", "`annotate fetch --via git --force` fetches the whole pin")]
    under = s.not_included(upstream, path)
    if under is not None:
        return False, True, [at_key("path", "info", f"{path} is in this checkout but not indexed: {under} is indexed only "
                                    "as far as the other files include it, and no file of this checkout does; its notes "
                                    "are not checked", "not-included",
                                    "the files that include it are missing from this checkout: "
                                    "`annotate fetch --via git --force` fetches the whole pin")]
    paths = s.index.paths(upstream)
    near = difflib.get_close_matches(path, paths, n=3, cutoff=0.6)
    if not near:
        base = posixpath.basename(path)
        near = [q for q in paths if posixpath.basename(q) == base][:3]
    msg = f"{path} is not a file of {upstream} at the indexed version"
    if near:
        msg += f"; did you mean {near[0]}?"
    return False, False, [at_key("path", "error", msg, "missing-file",
                                 ("nearest: " + ", ".join(near)) if len(near) > 1 else None)]


def _load_entries(where: "_Where", raw: dict, unchecked: bool, diags: list[Diagnostic], got: _Collected,
                  section: str = "functions", kind: str = "function", loader=None) -> list:
    """Every entry of one section of one file (`loader` reads one: `_load_function`, or
    typenotes' `load_type` / `load_macro`), each on its own: an internal error in one is
    reported at its key and the others are still read."""
    loader = loader or _load_function
    notes: list = []
    for name, entry in raw.items():
        try:
            res = loader(where, name, entry)
        except Exception as exc:
            line, col = _pos(where.loaded, (section, name), key=True)
            d = _internal(where.disp, exc)
            res = _Entry(None, [Diagnostic(d.severity, d.message, d.file, line, col, d.code, name, d.detail)],
                         OUT_BROKEN)
        outcome = res.outcome
        if unchecked and outcome == OUT_BROKEN and not any(d.severity == "error" for d in res.diagnostics):
            outcome = OUT_UNCHECKED
        diags.extend(res.diagnostics)
        if res.note is not None:
            notes.append(res.note)
        if res.refresh is not None:
            got.refreshable.append(res.refresh)
        got.outcomes.append(Outcome(where.disp, name, outcome, res.note, kind))
    return notes


def _duplicate_entries(notes: list, disp: str) -> list[Diagnostic]:
    """Two entries of one section of a file that resolved to the same definition."""
    out = []
    seen: dict[str, Any] = {}
    for n in notes:
        d = n.definition
        if d is None:
            continue
        first = seen.setdefault(d.key, n)
        if first is not n:
            src = n.source
            out.append(Diagnostic("error", f"this entry annotates the same definition as the one at line "
                                  f"{first.source.line if first.source else '?'} ({d.path}:{d.start_line})",
                                  file=disp, line=src.line if src else None, column=src.column if src else None,
                                  code="duplicate-entry", symbol=n.qualified_name,
                                  detail="merge the two entries, or give each a `signature:` that picks a different definition"))
    return out


# ---- one function entry ------------------------------------------------------------------

@dataclass(frozen=True)
class _Where:
    """The file a function entry is in, as its entries need it."""

    s: _Session
    loaded: Loaded
    disp: str
    yaml_file: Path
    upstream: str | None
    path: str | None
    source_ok: bool  # the upstream file resolved: names in it can be looked up


@dataclass(frozen=True)
class _Entry:
    """What one function entry gives: its note, its problems, how the check counts it, and what
    --refresh may write."""

    note: M.FunctionNote | None
    diagnostics: list[Diagnostic]
    outcome: str
    refresh: Refreshable | None = None


class _Reporter:
    """Diagnostics of one entry, located at its key unless a sub-path is given."""

    def __init__(self, where: _Where, name: str, section: str = "functions"):
        self.where, self.name = where, name
        self.fpath = (section, name)
        self.kline, self.kcol = _pos(where.loaded, self.fpath, key=True)
        self.diags: list[Diagnostic] = []

    def __call__(self, sev, msg, code, at=None, key=False, detail=None) -> None:
        line, col = _pos(self.where.loaded, self.fpath + at, key=key) if at is not None else (self.kline, self.kcol)
        self.diags.append(Diagnostic(sev, msg, file=self.where.disp, line=line, column=col, code=code,
                                     symbol=self.name, detail=detail))


def _load_function(where: _Where, entry_key: str, raw) -> _Entry:
    """One entry under `functions:`: validated, resolved to one definition, its anchors, calls
    and placeholders checked, its fingerprint compared with the body now."""
    from pydantic import ValidationError

    from annotate.notes import schema as S
    from annotate.notes.validate import diagnostics as vdiags

    diag = _Reporter(where, entry_key)
    try:
        doc = S.FunctionDoc.model_validate({} if raw is None else raw)
    except ValidationError as err:
        return _Entry(None, vdiags(err, S.FunctionDoc, where.loaded, where.disp, prefix=diag.fpath, symbol=entry_key),
                      OUT_BROKEN)
    diag.diags.extend(_languages(where.s, doc, where.loaded, where.disp, diag.fpath))
    diag.name = name = entry_key.split("@", 1)[0].strip()  # "qualified::name@label": a second overload's entry
    if not name:
        diag("error", "empty function name", "unresolved", key=True)
        return _Entry(None, diag.diags, OUT_BROKEN)
    base = _note_fields(where, name, doc, diag)
    unresolved_notes = tuple(M.InlineNote(at=n.at, text=_text(n.text)) for n in doc.notes)
    sym, status = _resolve(where, name, doc, diag) if where.source_ok else (None, M.UNRESOLVED)
    if sym is None:
        return _Entry(M.FunctionNote(symbol=None, status=status, notes=unresolved_notes, **base), diag.diags,
                      OUT_BROKEN)
    body = where.s.text_of(sym)
    inline, broken = _anchor_notes(doc, sym, body, name, diag)
    _check_calls(where, doc, sym, name, diag)
    _check_harness_and_todos(where, doc, diag)
    status, refresh = _fingerprint_status(where, entry_key, name, doc, sym, body, diag)
    note = M.FunctionNote(symbol=sym, status=status, current_fingerprint=sym.fingerprint, notes=tuple(inline), **base)
    outcome = OUT_BROKEN if broken else (OUT_STALE if status == M.STALE else OUT_OK)
    return _Entry(note, diag.diags, outcome, refresh)


def _note_fields(where: _Where, name: str, doc, diag: _Reporter) -> dict:
    """The FunctionNote fields that come from the entry itself, resolved or not."""
    return dict(qualified_name=name, upstream=where.upstream or "", path=where.path or "", signature=doc.signature,
                fingerprint=doc.fingerprint, summary=_text(doc.summary),
                decomposition=_text(doc.decomposition), sync=_text(doc.sync),
                first_look=_text(doc.first_look),
                memory=tuple(M.MemoryNote(what=_text(m.what), path=m.path, how=_text(m.how)) for m in doc.memory),
                calls={k: _text(v) for k, v in doc.calls.items()},
                course=tuple(doc.course), harness=doc.harness,
                source=M.SourceSpan(where.disp, diag.kline or 1, diag.kcol or 1))


def _resolve(where: _Where, name: str, doc, diag: _Reporter):
    """(the one definition the entry names, None) or (None, UNRESOLVED | AMBIGUOUS) with a diagnostic."""
    upstream, path = where.upstream, where.path
    syms = where.s.symbols_in(upstream, path)
    exact = [s for s in syms if s.qualified_name == name]
    if not exact:
        suffix = [s for s in syms if s.qualified_name.endswith("::" + name)]
        if suffix and len({s.qualified_name for s in suffix}) == 1:
            diag("warning", f"'{name}' is not the qualified name; write '{suffix[0].qualified_name}'",
                 "not-qualified", key=True)
            exact = suffix
    if not exact:
        _unresolved(where, name, syms, diag)
        return None, M.UNRESOLVED
    chosen = exact
    if doc.signature:
        chosen = [s for s in exact if _sig_matches(doc.signature, s)]
        if not chosen:
            listing = "\n".join(f"line {s.start_line}: {s.signature}" for s in exact)
            diag("error", f"signature '{doc.signature}' matches none of the {len(exact)} definition(s) of '{name}'",
                 "signature-mismatch", at=("signature",), detail=listing)
            return None, M.UNRESOLVED
    if len(chosen) > 1:
        listing = "\n".join(f"line {s.start_line}: {s.signature}" for s in chosen)
        diag("error", f"'{name}' has {len(chosen)} definitions in {path}; add `signature:` with a piece of the one you mean",
             "ambiguous", key=True, detail=listing)
        return None, M.AMBIGUOUS
    return chosen[0], None


def _unresolved(where: _Where, name: str, syms: list, diag: _Reporter) -> None:
    """No function of that name in the file: the nearest names, and the files that do define it."""
    upstream, path = where.upstream, where.path
    cands = sorted({s.qualified_name for s in syms})
    near = difflib.get_close_matches(name, cands, n=3, cutoff=0.6)
    if not near:
        bare = bare_name(name)
        near = [c for c in cands if bare_name(c) == bare][:3] or difflib.get_close_matches(bare, cands, n=3, cutoff=0.5)
    elsewhere = [s for s in where.s.index.find(name, upstream) if s.path != path]
    msg = f"no function '{name}' in {upstream}:{path}"
    detail = None
    if near:
        msg += f"; did you mean '{near[0]}'?"
        if len(near) > 1:
            detail = "nearest names: " + ", ".join(near)
    if elsewhere:
        files = ", ".join(sorted({f"{s.path}:{s.start_line}" for s in elsewhere})[:4])
        detail = (detail + "\n" if detail else "") + f"defined in another file: {files} (annotate it in that file's YAML)"
    diag("error", msg, "unresolved", key=True, detail=detail)


def _anchor_notes(doc, sym, body: str, name: str, diag: _Reporter) -> tuple[list[M.InlineNote], bool]:
    """The in-body notes placed at the line their `at:` text matches; (notes, any anchor broken)."""
    inline: list[M.InlineNote] = []
    broken = False
    for i, n in enumerate(doc.notes):
        hits = find_anchor(body, n.at)
        at_path = ("notes", i, "at")
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
    return inline, broken


def _check_calls(where: _Where, doc, sym, name: str, diag: _Reporter) -> None:
    """Every callee named under `calls:` is one the index sees this function call."""
    if not doc.calls:
        return
    names: set[str] = set()
    for e in where.s.index.callees(sym):
        names.add(e.callee_name)
        for k in e.callees:
            names.add(split_key(k)[1])
    norm = {n.split("<", 1)[0].replace(" ", "") for n in names}
    for callee in doc.calls:
        c = callee.split("<", 1)[0].replace(" ", "")
        if not any(c == n or n.endswith("::" + c) or c.endswith("::" + n) for n in norm):
            hint = ", ".join(sorted(norm)[:12])
            diag("warning", f"{name} has no call to '{callee}' that the index sees", "call-not-found",
                 at=("calls", callee), key=True,
                 detail=f"calls seen: {hint}" if hint else "the index sees no calls in this function")


def _check_harness_and_todos(where: _Where, doc, diag: _Reporter) -> None:
    """`harness:` names a kernel `annotate run` knows; no placeholder of `annotate new` is left."""
    known = where.s.opts.known_harnesses
    if doc.harness and known is not None and doc.harness not in known:
        diag("warning", f"no harness '{doc.harness}' in vendor_kernels/", "unknown-harness", at=("harness",))
    for fld in ("summary", "decomposition", "sync", "first_look"):
        t = getattr(doc, fld)
        t = t if isinstance(t, str) or t is None else t.en
        if t is not None and t.strip().startswith(TODO):
            diag("warning", f"{fld} still holds the placeholder from `annotate new`", "todo", at=(fld,))


def _fingerprint_status(where: _Where, entry_key: str, name: str, doc, sym, body: str, diag: _Reporter,
                        section: str = "functions", kind: str = "function"):
    """(status, what --refresh would write or None): the fingerprint against the body (a type's
    or a macro's definition) now."""
    current = sym.fingerprint
    refresh = Refreshable(where.yaml_file, entry_key, current, body, section)
    what = "body" if kind == "function" else "definition"
    if not doc.fingerprint:
        diag("warning", f"{name} has no fingerprint; run `annotate check --refresh` to record the {what} you annotated",
             "no-fingerprint", key=True)
        return M.UNFINGERPRINTED, refresh
    if doc.fingerprint == current:
        return M.OK, None
    detail = None
    explain = where.s.opts.stale_detail
    if explain is not None:
        try:
            detail = explain(where.upstream, where.path, name, doc.fingerprint, sym, body, kind=kind)
        except Exception as exc:  # the diff is a help; its failure must not hide the warning
            detail = f"(could not compute the diff: {type(exc).__name__}: {exc})"
    diag("warning", f"{name} changed since it was annotated (fingerprint {doc.fingerprint}, now {current}); "
         "re-read the notes, then `annotate check --refresh`", "stale", at=("fingerprint",), detail=detail)
    return M.STALE, refresh


# ---- course maps ---------------------------------------------------------------------------

def _load_course(s: _Session, p: Path, disp: str):
    from pydantic import ValidationError

    from annotate.notes import schema as S
    from annotate.notes.validate import diagnostics as vdiags

    loaded, _text_, diags = read_document(s.config, p, disp, s.opts)
    if loaded is None:
        return None, diags
    try:
        doc = S.CourseDoc.model_validate(loaded.data)
    except ValidationError as err:
        return None, diags + vdiags(err, S.CourseDoc, loaded, disp)
    diags.extend(_languages(s, doc, loaded, disp))
    stem = p.name.rsplit(".", 1)[0]
    if stem != doc.id:
        line, col = _pos(loaded, ("id",))
        diags.append(Diagnostic("warning", f"course id '{doc.id}' differs from the file name '{p.name}'",
                                file=disp, line=line, column=col, code="location-mismatch"))
    steps = []
    for i, st in enumerate(doc.steps):
        diags.extend(_step_checks(s, st, ("steps", i), loaded, disp))
        steps.append(_step(st))
    line, col = _pos(loaded, ("id",))
    course = M.Course(id=doc.id, title=_text(doc.title), text=_text(doc.text), steps=tuple(steps), file=disp,
                      source=M.SourceSpan(disp, line or 1, col or 1))
    return course, diags


def _step(st) -> M.CourseStep:
    ex = st.exercises
    exercises = M.Exercises(
        questions=tuple(M.Question(_text(q.question), _text(q.answer), tuple(q.cites)) for q in ex.questions),
        homework=tuple(_text(h) for h in ex.homework),
        checkpoints=tuple(_text(c) for c in ex.checkpoints)) if ex else M.Exercises()
    return M.CourseStep(id=st.id, title=_text(st.title), text=_text(st.text), refs=tuple(st.refs),
                        goals=tuple(_text(g) for g in st.goals), harness=st.harness, exercises=exercises)


def _step_checks(s: _Session, st, at: tuple, loaded, disp: str) -> list[Diagnostic]:
    """A step's reading list and cited code resolve; its runnable kernel is one `annotate run` knows."""
    out = []
    for j, ref in enumerate(st.refs):
        d = _ref_diagnostic(s, ref, disp, *_pos(loaded, at + ("refs", j)))
        if d is not None:
            out.append(d)
    for j, q in enumerate(st.exercises.questions if st.exercises else ()):
        for k, cite in enumerate(q.cites):
            d = _cite_diagnostic(s, cite, disp, *_pos(loaded, at + ("exercises", "questions", j, "cites", k)))
            if d is not None:
                out.append(d)
    known = s.opts.known_harnesses
    if st.harness and known is not None and st.harness not in known:
        line, col = _pos(loaded, at + ("harness",))
        out.append(Diagnostic("warning", f"no harness '{st.harness}' in vendor_kernels/", file=disp, line=line,
                              column=col, code="unknown-harness", detail="known: " + ", ".join(sorted(known))))
    return out


_LINE_CITE = re.compile(r"^(?P<path>.+):(?P<first>\d+)(?:-(?P<last>\d+))?$")


def parse_cite(cite: str) -> tuple[str, str, int | None, int | None]:
    """(upstream, path or qualified name, first line, last line): the lines are None for a name."""
    up, _, rest = cite.partition(":")
    m = _LINE_CITE.match(rest)
    if m and ("/" in m["path"] or m["path"].endswith(SOURCE_SUFFIXES)):
        first = int(m["first"])
        return up, m["path"], first, int(m["last"]) if m["last"] else first
    return up, rest, None, None


def _cite_diagnostic(s: _Session, cite: str, disp: str, line, col) -> Diagnostic | None:
    """A cited function is checked like a ref; a cited line range must lie inside its file."""
    up, path, first, last = parse_cite(cite)
    d = _ref_diagnostic(s, f"{up}:{path}" if first is not None else cite, disp, line, col)
    if d is not None:
        return dataclasses.replace(d, code="bad-cite", message=d.message.replace("ref ", "cite ", 1)) \
            if d.code == "bad-ref" else d
    if first is None:
        return None
    text = s.index.source(up, path) if s.index.has_file(up, path) else None
    n = len(text.splitlines()) if text is not None else None
    if first < 1 or last < first or (n is not None and last > n):
        return Diagnostic("error", f"cite '{cite}': lines {first}-{last} are not in {path}"
                          + (f" ({n} lines)" if n is not None else ""), file=disp, line=line, column=col,
                          code="bad-cite")
    return None


def _ref_diagnostic(s: _Session, ref: str, disp: str, line, col) -> Diagnostic | None:
    why = _ref_problem(s, ref)
    if not why:
        return None
    up, _, rest = ref.partition(":")
    absent = s.absent(up) if up else frozenset()
    if rest in absent:
        return Diagnostic("info", f"ref '{ref}': part of the pin but not in this checkout "
                          "(the route it was fetched by does not ship it); not checked",
                          file=disp, line=line, column=col, code="not-in-checkout")
    if absent and "/" not in rest and not rest.endswith(SOURCE_SUFFIXES):
        return Diagnostic("info", f"{why}; this checkout lacks {len(absent)} files of the "
                          "pin, which may define it: not checked", file=disp, line=line, column=col,
                          code="not-in-checkout", detail="`annotate fetch --via git --force` fetches the whole pin")
    return Diagnostic("error", why, file=disp, line=line, column=col, code="bad-ref")


def _duplicate_courses(courses: list[M.Course]) -> list[Diagnostic]:
    """Two course maps with one id: an error naming both files (the site keeps the first)."""
    out = []
    first: dict[str, M.Course] = {}
    for c in courses:
        if c.id not in first:
            first[c.id] = c
            continue
        f, src = first[c.id], c.source
        out.append(Diagnostic("error", f"course id '{c.id}' is already used by {f.file}; each course needs its own id",
                              file=c.file, line=src.line if src else None, column=src.column if src else None,
                              code="duplicate-course", detail=f"{f.file} and {c.file} both say id: {c.id}; "
                              f"the site shows only {f.file}"))
    return out


def _first_of_each_id(courses: list[M.Course]) -> list[M.Course]:
    seen: set[str] = set()
    return [c for c in courses if not (c.id in seen or seen.add(c.id))]


def _ref_problem(s: _Session, ref: str) -> str | None:
    """Why a course ref ("upstream:path", or "upstream:qualified_name" of a function, a type or
    a macro) does not resolve."""
    if ":" not in ref or ref.startswith(":"):
        return f"ref '{ref}' must be 'upstream:path' or 'upstream:qualified_name'"
    up, rest = ref.split(":", 1)
    if up not in s.index.upstreams():
        return f"ref '{ref}': unknown upstream '{up}'"
    if "/" in rest or rest.endswith(SOURCE_SUFFIXES):
        why = check_upstream_path(up, rest)
        if why:
            return f"ref '{ref}': {why}"
    if ref_files(s.index, ref):
        return None
    if "/" in rest or rest.endswith(SOURCE_SUFFIXES):
        near = difflib.get_close_matches(rest, s.index.paths(up), n=1, cutoff=0.6)
        return f"ref '{ref}': no such file in {up}" + (f"; did you mean '{up}:{near[0]}'?" if near else "")
    return f"ref '{ref}': no function, type or macro '{rest}' in {up}"


def ref_files(index, ref: str, aset: M.AnnotationSet | None = None) -> tuple[str, ...]:
    """The files of its upstream that a course ref names: the file itself ("upstream:path"), or
    every file defining the function, type or macro it names (as the index finds the name);
    () when it names nothing the index holds. With `aset`, a name several definitions share
    names the files of the annotated ones when there are any — the definitions the site links
    the ref to (`SinglePrefillWithKVCacheDispatched` is defined for sm80 and for Hopper; a step
    whose notes are on the sm80 one reads that one)."""
    up, sep, rest = ref.partition(":")
    if not sep or not up or up not in index.upstreams():
        return ()
    if index.has_file(up, rest):
        return (rest,)
    funcs, types, macros = index.find(rest, up), index.find_type(rest, up), index.find_macro(rest, up)
    defs = [*funcs, *types, *macros]
    if aset is not None and len(defs) > 1:
        noted = [*(d for d in funcs if aset.for_symbol(d)), *(d for d in types if aset.for_type(d)),
                 *(d for d in macros if aset.for_macro(d))]
        defs = noted or defs
    return tuple(dict.fromkeys(d.path for d in defs))


class RefChecker:
    """Course refs checked as `annotate check` checks them (its messages, its rule for files the
    checkout lacks), for the other readers of the course maps (annotate.notes.coverage)."""

    def __init__(self, config: Config, index, root: Path | None = None):
        self._session = _Session(config, index, Path(root) if root else config.annotations_dir, Options(root=root))

    def problem(self, ref: str, file: str | None = None) -> Diagnostic | None:
        """None when `ref` resolves; else the check's diagnostic (an error, or an info when the
        file is part of the pin but not of this checkout)."""
        return _ref_diagnostic(self._session, ref, file or "", None, None)


def unknown_course_tags(files, courses) -> list[tuple[M.FunctionNote | M.TypeNote | M.MacroNote, str]]:
    """(entry, tag) for every course tag on a function, type or macro that names no known course
    or step; none while there are no courses."""
    if not courses:
        return []
    known = {c.id for c in courses} | {s.id for c in courses for s in c.steps}
    return [(fn, tag) for f in files for fn in (*f.functions, *f.types, *f.macros) for tag in fn.course
            if tag not in known]


def _cross_checks(files: list[M.AnnotationFile], courses: list[M.Course]) -> list[Diagnostic]:
    """Course tags on functions, types and macros that name no known course or step (only once
    courses exist)."""
    out = []
    for fn, tag in unknown_course_tags(files, courses):
        src = fn.source
        out.append(Diagnostic("warning", f"{fn.qualified_name}: course '{tag}' is not a course or step id",
                              file=src.file if src else None, line=src.line if src else None,
                              column=src.column if src else None, code="unknown-course",
                              symbol=fn.qualified_name))
    return out

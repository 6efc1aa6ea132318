"""`annotate check`: the reviewer's report, --refresh, and the stale-body diffs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from annotate.config import Config
from annotate.errors import Diagnostic
from annotate.notes import api
from annotate.notes.history import (BodyStore, GitRepo, Indexer, definitions_in, find_in_history, git_dir_for,
                                    short_diff)


@dataclass
class CheckReport:
    result: api.LoadResult
    elapsed: float
    files: int
    drift: list = field(default_factory=list)  # DriftEntry, when --against was given
    drift_diagnostics: list[Diagnostic] = field(default_factory=list)
    refreshed: int = 0
    index_seconds: float | None = None  # loading/building the index, when the CLI measured it

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [*self.result.set.diagnostics, *self.drift_diagnostics]

    def counts(self) -> dict[str, int]:
        """Entries by outcome (ok / stale / broken / ... count functions, types and macros alike)."""
        c = {"files": self.files, "functions": 0, "types": 0, "macros": 0, "ok": 0, "stale": 0, "broken": 0,
             "unchecked": 0, "unfingerprinted": 0, "errors": 0, "warnings": 0}
        for o in self.result.outcomes:
            if o.name == "(file)":
                continue
            c[o.kind + "s"] += 1
            c[o.outcome] += 1
            if o.outcome == "ok" and o.note is not None and o.note.status == "unfingerprinted":
                c["unfingerprinted"] += 1
        for d in self.diagnostics:
            if d.severity == "error":
                c["errors"] += 1
            elif d.severity == "warning":
                c["warnings"] += 1
        return c

    def exit_code(self, strict: bool = False) -> int:
        c = self.counts()
        return 1 if c["errors"] or (strict and c["warnings"]) else 0

    def summary_line(self) -> str:
        c = self.counts()
        new = f", {c['unfingerprinted']} without fingerprint" if c["unfingerprinted"] else ""
        if c["unchecked"]:
            new += f", {c['unchecked']} unchecked (file not in this checkout, or not indexed in it)"
        idx = f" + index {self.index_seconds:.2f} s" if self.index_seconds is not None else ""
        more = "".join(f", {c[k]} {k if c[k] != 1 else k[:-1]}" for k in ("types", "macros") if c[k])
        return (f"{c['files']} files, {c['functions']} functions{more}: {c['ok']} ok, {c['stale']} stale, "
                f"{c['broken']} broken{new}; {c['errors']} errors, {c['warnings']} warnings "
                f"(check {self.elapsed:.2f} s{idx})")

    def to_json(self) -> dict:
        def d2j(d: Diagnostic) -> dict:
            return {k: getattr(d, k) for k in ("severity", "code", "message", "file", "line", "column",
                                                "symbol", "detail")}

        entries: dict[str, list] = {"function": [], "type": [], "macro": []}
        for o in self.result.outcomes:
            if o.name == "(file)":
                continue
            n = o.note
            sym = n.definition if n is not None else None
            entries[o.kind].append({"file": o.file, "name": o.name, "outcome": o.outcome,
                                    "status": n.status if n else "invalid",
                                    "upstream": n.upstream if n else None, "path": n.path if n else None,
                                    "line": sym.start_line if sym else None, "end_line": sym.end_line if sym else None,
                                    "fingerprint": n.fingerprint if n else None,
                                    "current_fingerprint": n.current_fingerprint if n else None})
        out = {"summary": self.counts() | {"seconds": round(self.elapsed, 3),
                                           "index_seconds": None if self.index_seconds is None
                                           else round(self.index_seconds, 3)},
               "diagnostics": [d2j(d) for d in self.diagnostics],
               "functions": entries["function"], "types": entries["type"], "macros": entries["macro"]}
        if self.drift:
            out["drift"] = [e.to_json() for e in self.drift]
        if self.refreshed:
            out["refreshed"] = self.refreshed
        return out


class StaleExplainer:
    """Builds the `detail` of a stale warning: a diff from the fingerprinted body to now."""

    def __init__(self, config: Config, indexer: Indexer | None = None, git_dir: str | None = None,
                 against_index=None, against_tree: str | None = None, against_ref: str | None = None):
        self.config = config
        self.store = BodyStore(config)
        self.indexer = indexer
        self.git_dir = git_dir
        self.against_index = against_index
        self.against_tree = against_tree
        self.against_ref = against_ref
        self._repos: dict[str, GitRepo | None] = {}

    def _from_against(self, upstream, path, name, fp, kind="function"):
        """The body from the --against tree or ref, if the function there has fingerprint fp."""
        if self.indexer is None or not (self.against_tree or self.against_ref):
            return None
        import tempfile

        with tempfile.TemporaryDirectory(prefix="annotate-against-") as tmp:
            if self.against_tree:
                root, label = Path(self.against_tree), f"--against-dir {self.against_tree}"
                if not (root / path).is_file():
                    return None
            else:
                repo = self.repo(upstream)
                if repo is None or not repo.export(self.against_ref, [path], Path(tmp)):
                    return None
                root, label = Path(tmp), f"--against {self.against_ref}"
            idx = self.indexer(upstream, root, [path])
            for s in definitions_in(idx, upstream, path, kind):
                if s.qualified_name == name and s.fingerprint == fp:
                    return label, idx.text_of(s), s.start_line
        return None

    def repo(self, upstream: str) -> GitRepo | None:
        if upstream not in self._repos:
            d = git_dir_for(self.config, upstream, self.git_dir)
            self._repos[upstream] = GitRepo(d) if d else None
        return self._repos[upstream]

    def old_body(self, upstream, path, name, fp, kind: str = "function") -> tuple[str, str, int] | None:
        """(where it came from, text, first line or 1) of the body (or type or macro definition,
        by `kind`) that had fingerprint `fp`."""
        text = self.store.get(fp)
        if text is not None:
            return "stored copy", text, 1
        if self.against_index is not None:
            for s in definitions_in(self.against_index, upstream, path, kind):
                if s.qualified_name == name and s.fingerprint == fp:
                    return "--against tree", self.against_index.text_of(s), s.start_line
        got = self._from_against(upstream, path, name, fp, kind)
        if got is not None:
            self.store.put(fp, got[1])
            return got
        repo = self.repo(upstream)
        if repo is not None and self.indexer is not None:
            try:
                from annotate.upstreams import get_upstream

                ref = get_upstream(self.config, upstream).commit
            except Exception:
                ref = "HEAD"
            if repo.rev_parse(ref) is None:
                ref = "HEAD"
            found = find_in_history(repo, ref, upstream, path, name, fp, self.indexer, kind)
            if found:
                rev, text, start = found
                self.store.put(fp, text)
                return f"git {rev[:12]}", text, start
        return None

    def __call__(self, upstream, path, name, fp, sym, body, kind: str = "function") -> str:
        old = self.old_body(upstream, path, name, fp, kind)
        if old is None:
            lines = body.splitlines()
            shown = "\n".join(f"{sym.start_line + i:5d}  {ln}" for i, ln in enumerate(lines[:12]))
            more = f"\n      ... ({len(lines) - 12} more lines)" if len(lines) > 12 else ""
            up_var = "ANNOTATE_URL_" + upstream.upper().replace("-", "_")
            return (f"the fingerprinted {'body' if kind == 'function' else 'definition'} cannot be recovered (no stored copy; no local git mirror in "
                    f"${up_var} or --git-dir), so here is the {'function' if kind == 'function' else kind} now, lines {sym.start_line}-{sym.end_line}:\n"
                    f"{shown}{more}")
        src, text, start = old
        return short_diff(text, body, f"{path} ({name} as annotated, from {src})", f"{path} (now)",
                          start, sym.start_line)


def run_check(config: Config, index, root: Path | None = None, *, refresh: bool = False,
              explainer=None, known_harnesses: set[str] | None = None,
              only: list[Path] | None = None) -> CheckReport:
    """`known_harnesses`: the kernel names a note's `harness:` may name (None: not checked); the
    caller asks the harness stage, which comes after this one. The language policy is the
    annotations root's (annotate.notes.policy)."""
    from annotate.notes.policy import load_policy

    t0 = time.perf_counter()
    policy = load_policy(Path(root) if root else config.annotations_dir)
    opts = api.Options(root=root, stale_detail=explainer, known_harnesses=known_harnesses, only=only, policy=policy)
    result = api.load(config, index, opts)
    refreshed = 0
    if refresh and result.refreshable:
        refreshed = write_fingerprints(config, result.refreshable)
        result = api.load(config, index, opts)
    files = len(result.set.files)
    return CheckReport(result=result, elapsed=time.perf_counter() - t0, files=files, refreshed=refreshed)


def write_fingerprints(config: Config, items) -> int:
    """Write current fingerprints into the YAML files (comments, layout, line ends, BOM, mode and
    links kept)."""
    from annotate.notes.edit import EditableText, set_fingerprint
    from annotate.yamlpos import YamlProblem

    store = BodyStore(config)
    by_file: dict[Path, list] = {}
    for r in items:
        by_file.setdefault(r.yaml_file, []).append((r.key, r.fingerprint, r.section))
        store.put(r.fingerprint, r.text)
    n = 0
    for p, entries in by_file.items():
        try:
            original = EditableText.read(p)
        except YamlProblem:
            continue  # changed since it was checked; the next check reports it
        text = original.text
        for name, fp, section in entries:
            new = set_fingerprint(text, name, fp, section)
            if new is not None and new != text:
                text = new
                n += 1
        if text != original.text:
            original.write(p, text)
    return n


def format_report(report: CheckReport, verbose: bool = False) -> str:
    lines = [d.format() for d in report.diagnostics]
    if report.drift:
        from annotate.notes.drift import format_drift

        lines.append(format_drift(report.drift))
    if report.refreshed:
        lines.append(f"refreshed {report.refreshed} fingerprint(s)")
    lines.append(report.summary_line())
    return "\n".join(lines)


def report_json(report: CheckReport) -> str:
    from annotate.jsonout import dumps

    return dumps(report.to_json())

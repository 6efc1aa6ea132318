"""The harness results the site shows: each catalog kernel's spec and its run records.

Torch-free on purpose: specs come from `annotate.harness.spec` (PyYAML only) and records from
`annotate.harness.record` (json only); nothing here imports the runner, the builder or torch.
Records are data written by a run (or by anyone with commit access): each is read through the
one bounded, tolerant reader (`read_record_json` + `RunRecord.from_json`), so a record that is
too large, too deep or not JSON is one problem line on its kernel's page, never a failed build;
every field is still treated as untrusted text by the page model and the templates.

Which records (paths from `annotate.config`):
- committed: `vendor_kernels/results/<kernel>.json` (the default device) and
  `vendor_kernels/results/<device-dir>/<kernel>.json` (other devices, e.g. `nvidia-h200/`);
- local: the newest `<cache>/results/<kernel>/<stamp>.json` (a run on this machine), if any.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.config import Config

if TYPE_CHECKING:  # imported where used: a no-op build reads only `stat_paths` from here
    from annotate.harness.record import RunRecord
    from annotate.harness.spec import KernelSpec


@dataclass(frozen=True)
class RecordFile:
    source: str  # "committed" | "local"
    device_dir: str  # "" for the default committed record and for local ones
    path: Path
    run: RunRecord  # the record, typed (unknown keys dropped, bad fields defaulted)


@dataclass(frozen=True)
class KernelRuns:
    spec: KernelSpec
    records: tuple[RecordFile, ...]
    problems: tuple[str, ...] = ()  # records that could not be read
    includes: tuple[str, ...] = ()  # `#include <...>` paths of the harness's own sources and headers


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def harness_includes(spec: KernelSpec) -> tuple[str, ...]:
    """The headers the harness's own files include: they tell which upstream definition of an
    overloaded name (e.g. the sm90 and the generic `SinglePrefillWithKVCacheDispatched`) it runs."""
    found: list[str] = []
    for rel in (*spec.sources, *spec.headers):
        try:
            text = (spec.folder / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found += [m for m in _INCLUDE.findall(text) if m not in found]
    return tuple(found)


def _device_dirs(config: Config) -> list[str]:
    base = config.committed_results_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if p.is_dir())


def newest_local(config: Config, kernel: str) -> Path | None:
    """The newest local record of `kernel` (stamps are UTC times: the names sort by time)."""
    folder = config.local_results(kernel)
    if not folder.is_dir():
        return None
    files = sorted(p for p in folder.glob("*.json") if p.is_file())
    return files[-1] if files else None


def record_paths(config: Config, kernel: str) -> list[tuple[str, str, Path]]:
    """(source, device dir, path) of every record the site shows for `kernel`, in page order."""
    out = []
    p = config.committed_result(kernel)
    if p.is_file():
        out.append(("committed", "", p))
    for d in _device_dirs(config):
        p = config.committed_result(kernel, d)
        if p.is_file():
            out.append(("committed", d, p))
    local = newest_local(config, kernel)
    if local is not None:
        out.append(("local", "", local))
    return out


def load_runs(config: Config, records: bool = True) -> tuple[list[KernelRuns], list[str]]:
    """Every catalog kernel with its records; (runs, problems with specs that do not load).
    `records=False`: the specs alone, for a build whose pages show no record (a note edit's
    source pages link a kernel's runs page by its spec)."""
    from annotate.errors import AnnotateError
    from annotate.harness.record import RecordError
    from annotate.harness.spec import kernel_names, load_spec

    runs, problems = [], []
    for name in kernel_names(config):
        try:
            spec = load_spec(config, name)
        except AnnotateError as exc:
            problems.append(f"harness {name}: {exc}")
            continue
        recs, bad = [], []
        for source, ddir, path in record_paths(config, name) if records else ():
            try:
                recs.append(read_record_file(source, ddir, path))
            except RecordError as exc:
                bad.append(f"{path.name}: unreadable record ({exc.reason})")
        runs.append(KernelRuns(spec, tuple(recs), tuple(bad), harness_includes(spec)))
    return runs, problems


def read_record_file(source: str, device_dir: str, path: Path) -> RecordFile:
    """One record file; RecordError (one line) when it cannot be read at all."""
    from annotate.harness.record import load_record

    return RecordFile(source, device_dir, path, load_record(path))


def stat_paths(config: Config) -> list[Path]:
    """Every file whose change may change what the runs pages show (for the build's stamp)."""
    kd = config.kernels_dir
    out: list[Path] = []
    if kd.is_dir():
        out += sorted(kd.glob("*/spec.yaml")) + sorted(kd.glob("*/identity.yaml"))  # titles, routes
    base = config.committed_results_dir()
    if base.is_dir():
        out += sorted(p for p in base.rglob("*.json"))
    local = config.results_dir()
    if local.is_dir():
        out += sorted(local.glob("*/*.json"))
    return out


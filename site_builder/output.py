"""The one function that writes the site's files, and the manifest it leaves behind."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from site_builder import names
from annotate.atomic import write_atomic


@dataclass(frozen=True)
class WriteStats:
    written: int
    unchanged: int
    removed: int
    bytes_written: int


@dataclass
class Manifest:
    """What the last build produced: the input stamp, every page's key, every output."""

    stamp: str = ""
    pages: dict[str, str] = field(default_factory=dict)  # page -> key of its inputs
    lines: dict[str, int] = field(default_factory=dict)  # source page -> line count
    outputs: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"version": 1, "stamp": self.stamp, "pages": self.pages, "lines": self.lines,
                           "outputs": sorted(self.outputs)}, indent=0, sort_keys=True)


def read_manifest(out_dir: Path) -> Manifest:
    try:
        raw = json.loads((out_dir / names.MANIFEST).read_text(encoding="utf-8"))
        if raw.get("version") != 1:
            return Manifest()
        return Manifest(raw.get("stamp", ""), dict(raw.get("pages", {})), dict(raw.get("lines", {})),
                        list(raw.get("outputs", [])))
    except (OSError, ValueError, AttributeError):
        return Manifest()


def write_outputs(out_dir: Path, files: dict[str, str | bytes], manifest: Manifest,
                  previous: Manifest | None = None) -> WriteStats:
    """Write `files` (relative path -> content) under `out_dir`, touching only files whose
    content changed; remove outputs of the previous build that this one no longer makes;
    write the manifest last, so an interrupted build never looks complete.
    """
    written = unchanged = removed = nbytes = 0
    out_dir.mkdir(parents=True, exist_ok=True)
    made_dirs: set[Path] = set()
    for rel, content in files.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        path = out_dir / rel
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                unchanged += 1
                continue
        except OSError:
            pass
        if path.parent not in made_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            made_dirs.add(path.parent)
        write_atomic(path, data, mkdir=False)
        written += 1
        nbytes += len(data)
    if previous is not None:
        keep = set(manifest.outputs)
        for rel in previous.outputs:
            if rel not in keep and not rel.startswith(("/", "..")) and ".." not in rel.split("/"):
                try:
                    (out_dir / rel).unlink()
                    removed += 1
                except OSError:
                    pass
    mpath = out_dir / names.MANIFEST
    text = manifest.to_json()
    try:
        if mpath.read_text(encoding="utf-8") == text:
            return WriteStats(written, unchanged, removed, nbytes)
    except OSError:
        pass
    write_atomic(mpath, text)
    return WriteStats(written, unchanged, removed, nbytes)

"""The archive route: the pinned release from the package index, mapped onto the pin's paths.

pip does the download (`sys.executable -m pip download --no-deps`), so a user's pip
configuration (index-url, a mirror, certificates) applies, and extra arguments come from
$ANNOTATE_PIP_ARGS or the config file's [fetch] pip_args. Every file taken from the archive must
carry the git blob id the lock records at the pinned commit; a file that differs, or that the
lock does not know, is an error naming it. Files of the lock that the archive lacks are listed as
missing (the release of flash-attn, for one, ships little of hopper/).

The pin's `archive.map` says where members go: the longest key naming a member wins (a key ending
in '/' names everything below it), and a null target leaves the member out, so that
`flashinfer/: flashinfer/` can take a package while `flashinfer/data/: null` keeps its bundled
data out. Members that land on a file the pin's `exclude` patterns match are left out too, by the
matcher the lock writer and the git route use.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from annotate.config import Config, child_env
from annotate.errors import AnnotateError
from annotate.fetch import lock as locks
from annotate.progress import Reporter
from annotate.upstreams import ArchiveSpec, Upstream

PIP_TIMEOUT = 1800


@dataclass(frozen=True)
class ArchiveResult:
    archive: Path
    files: int
    missing: tuple[str, ...]
    verified: str  # "full" | "partial"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _split_requirement(req: str) -> tuple[str, str | None]:
    m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:===?\s*([^\s;,]+))?\s*", req)
    if not m:
        return req, None
    return m.group(1), m.group(2)


def _archive_identity(filename: str) -> tuple[str, str] | None:
    """(normalised project name, version) of a wheel or sdist file name."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return (_norm(parts[0]), parts[1]) if len(parts) >= 5 else None
    for ext in (".tar.gz", ".zip", ".tar.bz2", ".tgz"):
        if filename.endswith(ext):
            stem = filename[: -len(ext)]
            if "-" in stem:
                name, version = stem.rsplit("-", 1)
                return _norm(name), version
    return None


def find_download(config: Config, spec: ArchiveSpec) -> Path | None:
    """An archive of exactly this release already in the downloads directory (verified later anyway)."""
    name, version = _split_requirement(spec.requirement)
    d = config.downloads_dir()
    if version is None or not d.is_dir():
        return None
    for f in sorted(d.iterdir()):
        ident = _archive_identity(f.name)
        if ident == (_norm(name), version) and (f.name.endswith(".whl") == (spec.kind == "wheel")):
            return f
    return None


def pip_command(config: Config, spec: ArchiveSpec, dest: Path) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "--no-input", "--progress-bar", "off", "--dest", str(dest)]
    if spec.kind == "sdist":
        # pip prepares an sdist's metadata by running its setup.py; build isolation would make it
        # install torch into a throw-away environment, so it runs here instead (spec.env helps it).
        cmd += ["--no-binary", ":all:", "--no-build-isolation"]
    elif spec.kind == "wheel":
        cmd += ["--only-binary", ":all:"]
    else:
        raise AnnotateError(f"archive kind must be 'wheel' or 'sdist', got {spec.kind!r}")
    return cmd + config.pip_args() + [spec.requirement]


def download(config: Config, spec: ArchiveSpec, reporter: Reporter) -> Path:
    """The archive file for `spec`, downloaded by pip into config.downloads_dir() unless already there."""
    have = find_download(config, spec)
    if have is not None:
        return have
    config.downloads_dir().mkdir(parents=True, exist_ok=True)
    config.tmp_dir().mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=config.tmp_dir(), prefix="pip-"))
    try:
        rc, tail = _run_pip(pip_command(config, spec, tmp), child_env({**spec.env, "PIP_NO_INPUT": "1"}),
                            reporter, spec.requirement)
        if rc != 0:
            raise _pip_failure(spec, rc, tail)
        got = [f for f in tmp.iterdir() if f.is_file()]
        if len(got) != 1:
            raise AnnotateError(f"pip download {spec.requirement} left {len(got)} files, expected one: "
                                + ", ".join(f.name for f in got))
        final = config.downloads_dir() / got[0].name
        os.replace(got[0], final)
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_pip(cmd: list[str], env: dict[str, str], reporter: Reporter, what: str) -> tuple[int, list[str]]:
    """(exit status, pip's last lines), its latest line shown on the spinner while it runs."""
    tail: deque[str] = deque(maxlen=12)
    with reporter.step(f"pip download {what}") as update:
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
                                    errors="replace")
        except OSError as exc:
            raise AnnotateError(f"cannot run pip ({sys.executable} -m pip): {exc}") from None

        def pump():
            for line in proc.stdout:
                line = line.rstrip()
                if line:
                    tail.append(line)
                    update(line.strip())

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        try:
            rc = proc.wait(timeout=PIP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        t.join(5)
    return rc, list(tail)


def _pip_failure(spec: ArchiveSpec, rc: int, lines: list[str]) -> AnnotateError:
    """pip's failure as one error with its last lines and the likeliest fix."""
    joined = "\n".join(lines)
    if "No space left on device" in joined:
        return AnnotateError(f"disk full while downloading {spec.requirement}",
                             hint="free some space or point ANNOTATE_CACHE_DIR at a larger disk")
    hint = "pip's configuration (index-url, proxy) applies; extra pip arguments: $ANNOTATE_PIP_ARGS"
    if spec.kind == "sdist" and re.search(r"No module named|ModuleNotFoundError|CUDA_HOME", joined):
        hint = ("pip runs the sdist's setup.py to read its metadata: install torch (a CPU build is "
                "enough), packaging, setuptools and wheel into this Python")
    elif re.search(r"Could not find a version|No matching distribution|resolve|connection|Network", joined, re.I):
        hint = ("is the package index reachable? behind a mirror set ANNOTATE_PIP_ARGS "
                "(e.g. '--index-url URL') or pip's own configuration")
    return AnnotateError(f"pip download {spec.requirement} failed (exit {rc}):\n    " + "\n    ".join(lines[-8:]),
                         hint=hint)


# ---- reading archives ---------------------------------------------------------------------------
def _members(archive: Path):
    """(name, kind, mode, read()) for each member; kind is 'file', 'link' or 'dir'/'other'."""
    if archive.name.endswith(".whl") or archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                kind = "dir" if info.is_dir() else "file"
                mode = (info.external_attr >> 16) & 0o777
                yield info.filename, kind, mode, (lambda info=info: z.read(info))
        return
    with tarfile.open(archive) as t:
        for m in t:
            if m.isfile():
                yield m.name, "file", m.mode, (lambda m=m: t.extractfile(m).read())
            elif m.issym():
                yield m.name, "link", m.mode, (lambda m=m: m.linkname.encode())
            else:
                yield m.name, "dir" if m.isdir() else "other", m.mode, (lambda: b"")


def _map_member(name: str, mapping: dict[str, str | None]) -> str | None:
    """Where member `name` goes in the checkout; None when no key names it or the winning key's
    target is null."""
    best = None
    for key in mapping:
        names_it = name.startswith(key) if key.endswith("/") else name == key
        if names_it and (best is None or len(key) > len(best)):
            best = key
    if best is None or mapping[best] is None:
        return None
    rel = mapping[best] + name[len(best):]
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts:
        raise AnnotateError(f"archive member {name!r} maps outside the checkout")
    return str(p)


def _count_members(archive: Path) -> int:
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z:
            return len(z.infolist())
    return 0  # tar.gz: counting means decompressing twice; the bar then just counts


def extract_verified(archive: Path, spec: ArchiveSpec, expected: dict[str, str], dest: Path,
                     reporter: Reporter, excludes: Callable[[str], bool] = lambda rel: False) -> ArchiveResult:
    """Write every mapped member under `dest` that `excludes` (checkout-relative path -> bool) keeps,
    each checked against `expected` (path -> blob id)."""
    bad: list[tuple[str, str]] = []
    written: set[str] = set()
    total = _count_members(archive) or None  # a tar.gz is read once: its bar counts without a total
    with reporter.bar(f"archive: {archive.name}", total) as advance:
        try:
            for name, kind, mode, read in _members(archive):
                advance(1)
                if kind == "dir":
                    continue
                rel = _map_member(name, spec.map)
                if rel is None or excludes(rel):
                    continue
                if kind == "other":
                    bad.append((rel, "not a regular file"))
                    continue
                data = read()
                blob = locks.git_blob_id(data)
                want = expected.get(rel)
                if want is None:
                    bad.append((rel, "not in the lock (no such file at the pinned commit)"))
                    continue
                if want != blob:
                    bad.append((rel, f"blob {blob[:12]} differs from the lock's {want[:12]}"))
                    continue
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                if kind == "link":
                    os.symlink(data.decode(), target)
                else:
                    target.write_bytes(data)
                    if mode & 0o111:
                        target.chmod(0o755)
                written.add(rel)
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
            import errno

            if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
                raise
            raise AnnotateError(f"{archive}: cannot read the archive ({exc})",
                                hint=f"the download is damaged: delete {archive} and fetch again") from None
    if bad:
        first, why = bad[0]
        more = f" (and {len(bad) - 1} more: {', '.join(p for p, _ in bad[1:4])}{'…' if len(bad) > 4 else ''})" \
            if len(bad) > 1 else ""
        raise AnnotateError(f"{archive.name}: {first}: {why}{more}",
                            hint=f"the archive does not match the pinned commit; if the download is damaged or "
                                 f"tampered with, delete {archive} and fetch again")
    missing = tuple(sorted(set(expected) - written))
    return ArchiveResult(archive=archive, files=len(written), missing=missing,
                         verified="partial" if missing else "full")


def fetch_archive(config: Config, up: Upstream, dest: Path, reporter: Reporter) -> ArchiveResult:
    if up.archive is None:
        raise AnnotateError(f"{up.name} has no archive in vendor_kernels/upstreams.yaml",
                            hint="use --via git (with ANNOTATE_URL_* pointing at a reachable mirror)")
    expected = locks.expected_files(config, up)
    archive = download(config, up.archive, reporter)
    dest.mkdir(parents=True, exist_ok=True)
    return extract_verified(archive, up.archive, expected, dest, reporter, excludes=up.excludes)

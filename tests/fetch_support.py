"""Hermetic fixtures for the fetch tests: tiny git repositories (one with a submodule), a project
root with its own pin file and locks, and a package index made of a --find-links directory.

Everything goes through the real code path; only the URLs (file://), the pins and the pip
arguments (--no-index --find-links DIR) differ from a user's run.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from annotate.config import Config
from annotate.fetch import lock as locks

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
}


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {out.stderr}")
    return out.stdout.strip()


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def commit_all(repo: Path, msg: str, files) -> str:
    git(repo, "add", "--", *files)  # named files only: `add -A` would drop an unpopulated gitlink
    git(repo, "commit", "-qm", msg)
    return git(repo, "rev-parse", "HEAD")


SUB_V1 = {"inc/sub.h": "// sub v1\n", "inc/deep/x.inl": "// x\n", "other/big.bin": "not fetched\n"}
SUB_V2 = {"inc/sub.h": "// sub v2 (after the pin)\n"}
# The Python package (outside the default sparse paths; package_world pins it): code the wheel
# ships, two kinds of non-code file it does not (excluded), and a name full of glob characters.
PKG_V1 = {"demo_kernels/__init__.py": "from .core import run\n", "demo_kernels/core.py": "def run():\n    pass\n",
          "demo_kernels/jit/build.py": "def build():\n    pass\n", "demo_kernels/notes/keep.py": "KEEP = 1\n",
          "demo_kernels/notes/NOTES.md": "not shipped\n", "demo_kernels/notes/odd [1]*.md": "not shipped\n",
          "demo_kernels/jit/run_tests.sh": "#!/bin/sh\n"}
PKG_EXCLUDE = ["demo_kernels/notes/*.md", "demo_kernels/*/run_*.sh"]
PKG_EXCLUDED = ("demo_kernels/notes/NOTES.md", "demo_kernels/notes/odd [1]*.md", "demo_kernels/jit/run_tests.sh")
DEMO_V1 = {"src/a.cu": "__global__ void a() {}\n", "src/b.cuh": "// b v1\n",
           "include/demo/h.h": "#pragma once\n", "docs/readme.md": "outside the sparse paths\n", **PKG_V1}
DEMO_V2 = {"src/b.cuh": "// b v2 (after the pin)\n"}


@dataclass
class World:
    root: Path  # project root (vendor_kernels/, annotations/)
    cache: Path
    sub_repo: Path
    demo_repo: Path
    sub_commit: str
    demo_commit: str  # the pin: NOT the tip of the branch
    index_dir: Path  # --find-links directory
    env: dict[str, str]

    def config(self, **env) -> Config:
        return Config.load(environ={**self.env, **env}, cache_dir=self.cache, repo_root=self.root)

    def pins(self) -> dict:
        return yaml.safe_load((self.root / "vendor_kernels" / "upstreams.yaml").read_text())

    def write_pins(self, data: dict) -> None:
        (self.root / "vendor_kernels" / "upstreams.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def make_world(tmp: Path, *, extra_paths: tuple[str, ...] = ()) -> World:
    sub = tmp / "repos" / "sub"
    demo = tmp / "repos" / "demo"
    for r in (sub, demo):
        r.mkdir(parents=True)
        git(r, "init", "-q", "-b", "main")
    write_files(sub, SUB_V1)
    sub_commit = commit_all(sub, "sub v1", SUB_V1)
    write_files(sub, SUB_V2)
    commit_all(sub, "sub v2", SUB_V2)

    # like GitHub: the demo remote serves blobless partial clones and fetches by commit id, so the
    # checkout pulls the sparse paths' blobs lazily; the sub remote does neither (plain fetch)
    git(demo, "config", "uploadpack.allowFilter", "true")
    git(demo, "config", "uploadpack.allowAnySHA1InWant", "true")
    write_files(demo, DEMO_V1)
    # the submodule gitlink, recorded at the pinned sub commit (no network: add the entry directly)
    git(demo, "update-index", "--add", "--cacheinfo", f"160000,{sub_commit},third/sub")
    (demo / ".gitmodules").write_text(f'[submodule "sub"]\n\tpath = third/sub\n\turl = {sub.as_uri()}\n')
    demo_commit = commit_all(demo, "demo v1", [*DEMO_V1, ".gitmodules"])
    write_files(demo, DEMO_V2)
    commit_all(demo, "demo v2", DEMO_V2)

    root = tmp / "project"
    (root / "vendor_kernels" / "locks").mkdir(parents=True)
    (root / "annotations").mkdir()
    pins = {"upstreams": {"demo": {
        "title": "Demo", "url": "https://example.invalid/demo.git", "tag": "v1", "commit": demo_commit,
        "paths": ["src/", "include/", *extra_paths], "lock": "locks/demo.json",
        "submodules": [{"name": "sub", "path": "third/sub", "url": "https://example.invalid/sub.git",
                        "commit": sub_commit, "paths": ["inc/"], "lock": "locks/sub.json"}],
        "archive": {"requirement": "demo-kernels==1.0", "kind": "wheel", "map": {
            "demo_kernels/data/src/": "src/", "demo_kernels/data/include/": "include/",
            "demo_kernels/data/sub/inc/": "third/sub/inc/"}},
    }}}
    (root / "vendor_kernels" / "upstreams.yaml").write_text(yaml.safe_dump(pins, sort_keys=False))
    # the locks, written by the same code `annotate lock` uses
    locks.write_lock(root / "vendor_kernels/locks/demo.json",
                     locks.lock_from_git(demo / ".git", "demo", demo_commit, ("src/", "include/", *extra_paths)))
    locks.write_lock(root / "vendor_kernels/locks/sub.json",
                     locks.lock_from_git(sub / ".git", "sub", sub_commit, ("inc/",)))
    index = tmp / "index"
    index.mkdir()
    env = {"ANNOTATE_URL_DEMO": demo.as_uri(), "ANNOTATE_URL_SUB": sub.as_uri(),
           "ANNOTATE_PIP_ARGS": f"--no-index --find-links {index}", "ANNOTATE_GIT_TIMEOUT": "2"}
    return World(root=root, cache=tmp / "cache", sub_repo=sub, demo_repo=demo, sub_commit=sub_commit,
                 demo_commit=demo_commit, index_dir=index, env=env)


def package_world(tmp: Path, *, sub_exclude: tuple[str, ...] = ()) -> World:
    """make_world with the Python package pinned too, as FlashInfer's pin takes flashinfer/: the
    wheel's package maps onto itself, its data/ folder and generated _build_meta.py are left out
    but for the folders mapped onto git's places, and PKG_EXCLUDE leaves out what the wheel lacks."""
    world = make_world(tmp)
    pins = world.pins()
    demo = pins["upstreams"]["demo"]
    demo["paths"] = ["src/", "include/", "demo_kernels/"]
    demo["exclude"] = list(PKG_EXCLUDE)
    demo["archive"]["map"] = {
        "demo_kernels/": "demo_kernels/", "demo_kernels/data/": None, "demo_kernels/_build_meta.py": None,
        "demo_kernels/data/src/": "src/", "demo_kernels/data/include/": "include/",
        "demo_kernels/data/sub/inc/": "third/sub/inc/"}
    if sub_exclude:
        demo["submodules"][0]["exclude"] = list(sub_exclude)
    world.write_pins(pins)
    locks.write_lock(world.root / "vendor_kernels/locks/demo.json",
                     locks.lock_from_git(world.demo_repo / ".git", "demo", world.demo_commit,
                                         tuple(demo["paths"]), tuple(PKG_EXCLUDE)))
    locks.write_lock(world.root / "vendor_kernels/locks/sub.json",
                     locks.lock_from_git(world.sub_repo / ".git", "sub", world.sub_commit, ("inc/",), sub_exclude))
    return world


def package_wheel_members(with_excluded: bool = False) -> dict[str, bytes]:
    """wheel_members plus the package as a wheel ships it: no excluded file (unless asked for),
    a generated _build_meta.py and data/ files that belong to no pinned path."""
    members = wheel_members()
    members.pop("demo_kernels/__init__.py")
    for rel, text in PKG_V1.items():
        if with_excluded or rel not in PKG_EXCLUDED:
            members[rel] = text.encode()
    members["demo_kernels/_build_meta.py"] = b"__version__ = '1.0'\n"
    members["demo_kernels/data/vendored/other.h"] = b"// a third party's header\n"
    members["demo_kernels/data/build_backend.py"] = b"# packaging\n"
    return members


def wheel_members(tamper: str | None = None, drop: tuple[str, ...] = ()) -> dict[str, bytes]:
    members = {}
    for rel, text in DEMO_V1.items():
        if rel.startswith(("src/", "include/")):
            members[f"demo_kernels/data/{rel}"] = text.encode()
    members["demo_kernels/data/sub/inc/sub.h"] = SUB_V1["inc/sub.h"].encode()
    members["demo_kernels/data/sub/inc/deep/x.inl"] = SUB_V1["inc/deep/x.inl"].encode()
    members["demo_kernels/__init__.py"] = b""
    for rel in drop:
        members.pop(rel, None)
    if tamper:
        members[tamper] = members[tamper] + b"// tampered\n"
    return members


def build_wheel(index: Path, members: dict[str, bytes], name: str = "demo_kernels", version: str = "1.0") -> Path:
    path = index / f"{name}-{version}-py3-none-any.whl"
    dist = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
        z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")
    return path


def build_sdist(index: Path, members: dict[str, bytes], name: str = "demo_kernels", version: str = "1.0",
                need_env: str | None = None) -> Path:
    """An sdist whose setup.py (run by pip to read metadata) fails unless `need_env` is set."""
    top = f"{name}-{version}"
    check = f"import os\nassert os.environ.get({need_env!r}) == 'TRUE', 'set {need_env}'\n" if need_env else ""
    setup = check + textwrap.dedent(f"""
        from setuptools import setup
        setup(name={name.replace('_', '-')!r}, version={version!r}, py_modules=[])
    """)
    files = {f"{top}/setup.py": setup.encode(),
             f"{top}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()}
    for n, data in members.items():
        files[f"{top}/{n}"] = data
    path = index / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        for n, data in files.items():
            info = tarfile.TarInfo(n)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return path


def tree(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, _d, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = p.read_text()
    return out

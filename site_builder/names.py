"""Every name the site derives — page paths, anchor ids, relative links — made in one place.

Page paths are '/'-separated and relative to the output directory; links between pages are
always relative (`rel_href`) so the site works from file:// and from any sub-path of a server.
"""

from __future__ import annotations

import re
from functools import lru_cache

from annotate.index.model import bare_name, split_key  # noqa: F401  (the key's one parser; pages use it from here)

INDEX_PAGE = "index.html"
ERROR_PAGE = "404.html"  # `annotate serve` answers an unknown address with it
SEARCH_INDEX = "search-index.js"
SEARCH_NOTES = "search-notes.js"
ASSETS_DIR = "assets"
MANIFEST = ".annotate-site.json"  # what the last build wrote, with the inputs' keys

_UNSAFE = re.compile(r"[^A-Za-z0-9_.~-]+")


SOURCE_DIR = "src/"
COURSES_DIR = "courses/"
RUNS_DIR = "runs/"
TRACES_DIR = "traces/"


def source_page(upstream: str, path: str) -> str:
    """The page showing one upstream source file."""
    return f"{SOURCE_DIR}{upstream}/{path}.html"


def is_source_page(page: str) -> bool:
    return page.startswith(SOURCE_DIR)


def course_page(course_id: str) -> str:
    return f"{COURSES_DIR}{_UNSAFE.sub('_', course_id)}.html"


def step_page(course_id: str, step_id: str) -> str:
    """The page of one course step: goals, reading list, kernel, exercises."""
    return f"{COURSES_DIR}{_UNSAFE.sub('_', course_id)}/{_UNSAFE.sub('_', step_id)}.html"


def tick_key(course_id: str, step_id: str, number: int) -> str:
    """The browser-storage key of a step's checkpoint (1-based, in the order the step lists them)."""
    return f"annotate-tick:{course_id}/{step_id}/{number}"


def question_anchor(number: int) -> str:
    return f"q{number}"


def runs_page(kernel: str) -> str:
    """The page of one harness kernel: what it runs, how to run it, its recorded results."""
    return f"{RUNS_DIR}{_UNSAFE.sub('_', kernel)}.html"


def trace_page(entry: str) -> str:
    """The page of one traced entry point (`annotate trace ENTRY`): its chains, hop by hop."""
    return f"{TRACES_DIR}{_UNSAFE.sub('_', entry)}.html"


def traces_anchor() -> str:
    """The id of the "Traces" section on the home page."""
    return "traces"


def runnable_anchor() -> str:
    """The id of the "Runnable kernels" section on the home page."""
    return "runnable"


def record_anchor(number: int) -> str:
    """The id of one record's section on a runs page (1-based, in page order)."""
    return f"rec-{number}"


def step_anchor(step_id: str) -> str:
    """The id of a course step on its course page."""
    return "step-" + _UNSAFE.sub("_", step_id)


def asset_path(name: str) -> str:
    return f"{ASSETS_DIR}/{name}"


def upstream_anchor(upstream: str) -> str:
    """The id of an upstream's section on the home page."""
    return "up-" + _UNSAFE.sub("_", upstream)


def line_anchor(line: int) -> str:
    """The id of a source line: GitHub's `#L123` convention."""
    return f"L{line}"


@lru_cache(maxsize=1 << 16)
def symbol_anchor(key: str) -> str:
    """The id of a function's heading on its file's page, from Symbol.key.

    Readable and unique within the page: the unqualified name plus the start line
    (two definitions of one name cannot start on the same line of one file, except
    through macros, where the qualified name tells them apart).
    """
    _, qname, _, line = split_key(key)
    name = bare_name(qname)
    return f"f-{_UNSAFE.sub('_', name)}-{line}"


def type_anchor(key: str) -> str:
    """The id of an annotated type's heading, from TypeDef.key (a type and a function of one
    name may start on one line: a constructor-like macro; the prefix keeps them apart)."""
    _, qname, _, line = split_key(key)
    return f"t-{_UNSAFE.sub('_', bare_name(qname))}-{line}"


def macro_anchor(key: str) -> str:
    """The id of an annotated macro's heading, from MacroDef.key."""
    _, name, _, line = split_key(key)
    return f"m-{_UNSAFE.sub('_', name)}-{line}"


def definition_href_target(key: str, what: str) -> tuple[str, str]:
    """(page, anchor) where a function, type or macro ("function" | "type" | "macro") is shown."""
    upstream, _, path, _ = split_key(key)
    anchor = {"type": type_anchor, "macro": macro_anchor}.get(what, symbol_anchor)(key)
    return source_page(upstream, path), anchor


@lru_cache(maxsize=1 << 16)  # asked again for every link to a definition
def symbol_href_target(key: str) -> tuple[str, str]:
    """(page, anchor) where a function is shown."""
    upstream, _, path, _ = split_key(key)
    return source_page(upstream, path), symbol_anchor(key)


def rel_href(from_page: str, to_page: str, anchor: str | None = None) -> str:
    """A link from one page of the site to another (or to an anchor on the same page)."""
    rel = "" if to_page == from_page else _relpath(from_page.rpartition("/")[0], to_page)
    return f"{rel}#{anchor}" if anchor else (rel or "#")


@lru_cache(maxsize=65536)
def _relpath(from_dir: str, to_page: str) -> str:
    # Both are '/'-separated paths relative to the site root (posixpath.relpath would
    # consult the process's cwd on every call, which dominated planning time).
    a = from_dir.split("/") if from_dir else []
    b = to_page.split("/")
    n = 0
    while n < len(a) and n < len(b) - 1 and a[n] == b[n]:
        n += 1
    return "../" * (len(a) - n) + "/".join(b[n:])


def root_prefix(page: str) -> str:
    """The relative path from a page back to the output root ('' or '../../')."""
    depth = page.count("/")
    return "../" * depth

"""Delta debugging at declaration granularity: drop what the compiler says is not needed.

`reduce(candidates, keep, same)` removes candidates from `keep` for as long as `same(keep)`
(kernel.cu built from `keep` compiles to the reference device code) holds. It tries the
pieces the index calls unreached all at once, then every candidate at once, then halves
(hierarchical delta debugging: a chunk that cannot go is split in two, down to single
pieces). Candidates are ordered so that a chunk holds one name's overloads or
specialisations together: the needed ones cluster, and the rest of a group tends to go in one
test. A needed piece costs about 2·log2(n) tests; a run of unneeded ones, one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Reduction:
    kept: frozenset[int]
    dropped: tuple[int, ...]  # in the order the compiler let them go
    tests: int


Unit = tuple[int, ...]  # pieces that go together (a class specialisation and its members)
TRY, FIRST, FAILS = "try", "first", "fails"


def reduce(candidates: Sequence[Unit], keep: set[int], same: Callable[[set[int], str], str | None], *,
           likely: Sequence[Unit] = (), blame: Callable[[str, Sequence[Unit]], list[Unit]] | None = None
           ) -> Reduction:
    """`same(trial, label)` returns None when `trial` compiles to the reference device code,
    else why not (the compiler's first error, or "different"). `blame(why, chunk)` may name
    the units of a failed chunk the error points at (they are set aside and tried again at the
    end); the rest of the chunk is then tried at once instead of being halved."""
    keep = set(keep)
    dropped: list[int] = []
    tests = 0

    def live(chunk: Sequence[Unit]) -> list[Unit]:
        return [u for u in chunk if any(i in keep for i in u)]

    def attempt(chunk: list[Unit], label: str) -> str | None:
        nonlocal tests
        tests += 1
        pieces = {i for u in chunk for i in u}
        why = same(keep - pieces, label)
        if why is None:
            keep.difference_update(pieces)
            dropped.extend(i for u in chunk for i in u)
        return why

    def label(chunk: list[Unit]) -> str:
        n = sum(len(u) for u in chunk)
        return f"{len(chunk)} unit(s) ({n} pieces) from #{chunk[0][0]}"

    likely = live(likely)
    if likely:
        attempt(likely, f"{len(likely)} unit(s) the index calls unreached")
    # Each pending chunk carries a state: TRY, FIRST (the first half of a failed chunk) or
    # FAILS. When a FIRST half goes, its sibling (next on the stack) holds what the parent
    # needed: it is split without being tried whole (only saves a test: every drop is tried).
    pending: list[tuple[list[Unit], str]] = [(live(candidates), TRY)]
    blamed: list[Unit] = []
    second = False
    while pending or (blamed and not second):
        if not pending:  # what the errors pointed at: asked again, without hints
            pending, blamed, second = [(blamed, TRY)], [], True
        chunk, state = pending.pop()
        chunk = live(chunk)
        if not chunk:
            continue
        if state == FAILS and len(chunk) == 1:
            continue  # needed
        if state != FAILS:
            why = attempt(chunk, label(chunk))
            if why is None:
                if state == FIRST and pending:
                    sib, _ = pending.pop()
                    pending.append((sib, FAILS))
                continue
            hit = blame(why, chunk) if (blame and not second and len(chunk) > 1) else []
            if hit and len(hit) < len(chunk):
                blamed.extend(hit)
                pending.append(([u for u in chunk if u not in hit], TRY))
                continue
        if len(chunk) > 1:
            mid = len(chunk) // 2
            pending.append((chunk[mid:], TRY))
            pending.append((chunk[:mid], FIRST))  # popped first: stream order
    return Reduction(frozenset(keep), tuple(dropped), tests)


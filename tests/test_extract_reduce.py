"""Delta debugging against a stand-in compiler: what goes, what stays, how many compiles."""

from __future__ import annotations

import math
import random

import pytest

from annotate.extract.reduce import reduce


def _oracle(needed: set[int], log: list | None = None, error_names: dict | None = None):
    """A compiler that accepts a trial iff it still holds every needed piece; its error
    names the first missing one when `error_names` says how."""
    def same(trial: set[int], label: str):
        if log is not None:
            log.append(label)
        missing = sorted(needed - trial)
        if not missing:
            return None
        if error_names and missing[0] in error_names:
            return f'kernel.cu(12): error: identifier "{error_names[missing[0]]}" is undefined'
        return "different PTX"
    return same


def test_keeps_exactly_what_is_needed():
    units = [(i,) for i in range(40)]
    needed = {3, 17, 18, 39}
    red = reduce(units, set(range(40)) | {100}, _oracle(needed))
    assert red.kept == frozenset(needed | {100})  # non-candidates are never touched
    assert sorted(red.dropped) == sorted(set(range(40)) - needed)


def test_units_go_together():
    units = [(0, 1), (2, 3, 4), (5,)]
    red = reduce(units, set(range(6)), _oracle({3}))
    assert red.kept == frozenset({2, 3, 4})


def test_nothing_needed_is_one_compile_and_everything_needed_is_bounded():
    units = [(i,) for i in range(64)]
    assert reduce(units, set(range(64)), _oracle(set())).tests == 1
    full = reduce(units, set(range(64)), _oracle(set(range(64))))
    assert full.kept == frozenset(range(64)) and full.tests < 2 * 64


@pytest.mark.parametrize("seed", range(5))
def test_cost_grows_with_what_is_needed_not_with_the_candidates(seed):
    rng = random.Random(seed)
    n, k = 200, 5
    needed = set(rng.sample(range(n), k))
    red = reduce([(i,) for i in range(n)], set(range(n)), _oracle(needed))
    assert red.kept == frozenset(needed)
    assert red.tests <= 2 * k * math.ceil(math.log2(n)) + 1


def test_a_dropped_first_half_proves_its_sibling_without_a_compile():
    log = []
    reduce([(0,), (1,)], {0, 1}, _oracle({1}, log))
    # both, then {0} alone goes: {1} is known to be needed without being tried alone
    assert log == ["2 unit(s) (2 pieces) from #0", "1 unit(s) (1 pieces) from #0"]


def test_the_index_guess_is_tried_first_and_together():
    log = []
    units = [(i,) for i in range(10)]
    red = reduce(units, set(range(10)), _oracle({0, 1}, log), likely=[(5,), (6,), (7,)])
    assert log[0].startswith("3 unit(s) the index calls unreached")
    assert red.kept == frozenset({0, 1})


def test_errors_that_name_a_declaration_skip_the_halving():
    needed = {7, 30}
    names = {7: "seven", 30: "thirty"}
    blame = lambda why, chunk: [u for u in chunk if names.get(u[0], "") in why]  # noqa: E731
    log = []
    red = reduce([(i,) for i in range(32)], set(range(32)), _oracle(needed, log, names), blame=blame)
    assert red.kept == frozenset(needed)
    plain = reduce([(i,) for i in range(32)], set(range(32)), _oracle(needed))
    assert red.tests < plain.tests


def test_a_wrong_blame_costs_compiles_never_a_wrong_drop():
    needed = {4}
    blame = lambda why, chunk: [chunk[0]]  # always blames the first unit  # noqa: E731
    red = reduce([(i,) for i in range(8)], set(range(8)), _oracle(needed), blame=blame)
    assert red.kept == frozenset(needed)

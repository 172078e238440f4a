"""The rowid -> matrix position table of large local tenants (episodic.adapters.vectors.rowid_slots):
it answers exactly as the binary search it replaces, grows with appends, and steps aside for
small or scattered tenants."""

from __future__ import annotations

import numpy as np
import pytest

from episodic.adapters.vectors.exact import present
from episodic.adapters.vectors.rowid_slots import MAX_SPREAD, MIN_ROWS, RowidSlots


def _tenant_rowids(rng: np.random.Generator, count: int, share: float, start: int = 1) -> np.ndarray:
    """``count`` ascending rowids from ``start`` where this tenant holds about ``share`` of the rows."""
    gaps = rng.geometric(share, count)
    return start + np.cumsum(gaps) - gaps[0]


def _wanted(rng: np.random.Generator, rowids: np.ndarray, size: int) -> np.ndarray:
    """A sorted scope: some of the tenant's rowids, and rowids it does not have (before, between, after)."""
    mine = rng.choice(rowids, size, replace=False)
    strangers = rng.integers(0, int(rowids[-1]) + 1000, size)
    return np.unique(np.concatenate([mine, strangers]))


@pytest.mark.parametrize("share", [1.0, 0.5, 0.2])
def test_given_a_dense_tenant_when_looked_up_then_the_positions_are_the_binary_searchs(share):
    rng = np.random.default_rng(7)
    rowids = _tenant_rowids(rng, MIN_ROWS + 500, share, start=10_000)
    slots = RowidSlots()
    slots.extend(rowids, 0)
    assert slots.active
    for _ in range(20):
        wanted = _wanted(rng, rowids, 300)
        found = slots.find(wanted)
        assert found is not None
        np.testing.assert_array_equal(found, present(rowids, wanted))


def test_given_rows_appended_in_many_writes_when_looked_up_then_every_row_is_found_where_it_sits():
    rng = np.random.default_rng(3)
    rowids = _tenant_rowids(rng, 4 * MIN_ROWS, 0.5)
    slots = RowidSlots()
    written = 0
    for size in [MIN_ROWS - 1, 1, 7, 2 * MIN_ROWS, *[1] * 50]:  # below the threshold, crossing it, growing
        end = min(written + size, len(rowids))
        slots.extend(rowids[:end], written)
        written = end
        if written >= MIN_ROWS:
            wanted = _wanted(rng, rowids[:written], 200)
            np.testing.assert_array_equal(slots.find(wanted), present(rowids[:written], wanted))
    slots.extend(rowids, written)
    np.testing.assert_array_equal(slots.find(rowids), np.arange(len(rowids)))


def test_given_a_small_tenant_when_looked_up_then_there_is_no_table_and_the_binary_search_answers():
    slots = RowidSlots()
    slots.extend(np.arange(1, MIN_ROWS), 0)
    assert not slots.active
    assert slots.find(np.array([1, 2, 3])) is None


def test_given_a_tenant_whose_rows_become_scattered_when_extended_then_the_table_is_dropped():
    rowids = np.arange(1, MIN_ROWS + 1)
    slots = RowidSlots()
    slots.extend(rowids, 0)
    assert slots.active
    far = np.concatenate([rowids, [MAX_SPREAD * (MIN_ROWS + 1) + 10]])  # other tenants wrote a lot meanwhile
    slots.extend(far, len(rowids))
    assert not slots.active
    assert slots.find(far) is None

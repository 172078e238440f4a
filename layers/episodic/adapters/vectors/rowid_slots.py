"""Where each rowid's vector sits in a large tenant's matrix, found by one array lookup.

Why: a scoped search maps the rowids its scope admits to rows of the tenant's matrix. A binary
search over a large tenant's rowids misses the cache on every probe, a sizeable part of the whole
vector path for a small scope in a large tenant (``benchmarks/recall_at_scale.py``); a table
indexed by rowid answers with one lookup per rowid. The table costs 4 bytes for every rowid of the
tenant's span (and as much again of room to grow, as the matrix has), so it is kept only for
tenants of :data:`MIN_ROWS` or more whose rows are at least one in :data:`MAX_SPREAD` of the
database's rowids over that span: at most 64 bytes per vector, beside the vector's 1,536. Small
or scattered tenants keep the binary search.
"""

from __future__ import annotations

import numpy as np

MIN_ROWS = 10_000
MAX_SPREAD = 8
_ABSENT = -1


class RowidSlots:
    """rowid -> position in the matrix, for rowids from the tenant's first on (or nothing)."""

    def __init__(self) -> None:
        self._slots: np.ndarray | None = None
        self._base = 0

    @property
    def active(self) -> bool:
        return self._slots is not None

    def extend(self, rowids: np.ndarray, start: int) -> None:
        """Rows ``[start, len(rowids))`` were just appended; ``rowids`` is every rowid, ascending."""
        count = len(rowids)
        if count < MIN_ROWS:
            return
        base, span = int(rowids[0]), int(rowids[-1]) - int(rowids[0]) + 1
        if span > MAX_SPREAD * count:  # other tenants' rows between this one's: not worth a table
            self._slots = None
            return
        if self._slots is None:
            self._slots, self._base, start = np.full(2 * span, _ABSENT, dtype=np.int32), base, 0
        elif span > len(self._slots):  # grown by doubling, like the matrix
            more = np.full(max(span, 2 * len(self._slots)) - len(self._slots), _ABSENT, dtype=np.int32)
            self._slots = np.concatenate([self._slots, more])
        self._slots[rowids[start:] - self._base] = np.arange(start, count, dtype=np.int32)

    def find(self, wanted: np.ndarray) -> np.ndarray | None:
        """Positions of those of ``wanted`` (sorted) that have a row, ascending; None without a table."""
        if self._slots is None:
            return None
        offsets = wanted - self._base
        offsets = offsets[(offsets >= 0) & (offsets < len(self._slots))]
        found = self._slots[offsets]
        return found[found != _ABSENT].astype(np.int64)

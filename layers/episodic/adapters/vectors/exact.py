"""Exact search over a scope's rows of a tenant's vectors (:mod:`.index` keeps the vectors).

Why a query may be a :class:`Mix`: a recall's second round asks for the question's vector leaning
toward the names it adds (their sum, made unit length). Its cosine with a stored unit vector is the
question's cosine plus the weight times the names' cosine, over the sum's length, so once the
question's cosines are measured the second round needs no product of its own, and the names'
cosines can be measured ahead, while the model still embeds the question (:attr:`Placed.toward_cosines`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from episodic.adapters.vectors.index import TenantVectors


@dataclass(frozen=True)
class Placed:
    """Where a scope's rows sit in its tenant's matrix when it held ``count`` rows
    (:meth:`~episodic.adapters.vectors.index.VectorSearch.place`), and the cosines of those rows with
    ``toward`` when one was given."""

    vectors: TenantVectors
    count: int
    positions: np.ndarray
    toward: object = None
    """The vector :attr:`toward_cosines` were measured with, as the caller gave it (told apart by identity)."""
    toward_cosines: np.ndarray | None = None


@dataclass(frozen=True)
class Mix:
    """A query given as the search's query at ``base`` plus ``weight`` times ``toward``, made unit
    length (both are unit vectors); ``cosines``: those of the scope's rows with ``toward``, when
    they were measured ahead (:attr:`Placed.toward_cosines`)."""

    base: int
    """The place of a plain query before this one in the same list."""
    toward: np.ndarray
    weight: float
    cosines: np.ndarray | None = None

    def length(self, queries: list[np.ndarray]) -> np.float32:
        """The length of ``base + weight * toward`` (1 for a sum of nothing), which makes it unit."""
        return np.float32(np.linalg.norm(queries[self.base] + np.float32(self.weight) * self.toward)) or np.float32(1)

    def vector(self, queries: list[np.ndarray]) -> np.ndarray:
        """The query itself (for a search that cannot score it from cosines)."""
        return (queries[self.base] + np.float32(self.weight) * self.toward) / self.length(queries)


def present(sorted_ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions in ``sorted_ids`` of those of ``wanted`` (sorted) it holds."""
    if len(sorted_ids) == 0 or len(wanted) == 0:
        return np.empty(0, dtype=np.int64)
    pos = np.clip(np.searchsorted(sorted_ids, wanted), 0, len(sorted_ids) - 1)
    return pos[sorted_ids[pos] == wanted]


def cosines(vectors: TenantVectors, positions: np.ndarray, queries: list[np.ndarray]) -> list[np.ndarray]:
    """Each of ``queries`` against the rows at ``positions`` (the caller holds ``vectors.lock``): a
    product per query, as BLAS multiplies a matrix by one vector faster than by a block of two."""
    whole = len(positions) * 8 > vectors.count  # one contiguous BLAS pass beats a large gather
    rows = vectors.matrix if whole else vectors.matrix[positions]
    return [(rows @ query)[positions] if whole else rows @ query for query in queries]


def exact(
    vectors: TenantVectors,
    scope_rowids: np.ndarray,
    queries: list[np.ndarray | Mix],
    k: int,
    positions: np.ndarray | None = None,
) -> list[tuple[np.ndarray, np.ndarray, str]]:
    """The best ``k`` (rowids, cosines, ``"exact"``) of the scope for each query, at ``positions`` in
    the matrix when they are known (the caller holds ``vectors.lock``); a :class:`Mix` from the cosines
    of its base and its own (measured ahead, or here)."""
    if not queries:
        return []
    positions = vectors.positions(np.sort(scope_rowids)) if positions is None else positions
    if len(positions) == 0:
        return [(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32), "exact") for _ in queries]
    measured = iter(cosines(vectors, positions, [query for query in queries if not isinstance(query, Mix)]))
    scored: list[np.ndarray] = []
    for query in queries:
        if not isinstance(query, Mix):
            scored.append(next(measured))
            continue
        own = query.cosines if query.cosines is not None else cosines(vectors, positions, [query.toward])[0]
        length = query.length(cast(list[np.ndarray], queries))  # its base is a plain query
        scored.append((scored[query.base] + np.float32(query.weight) * own) / length)
    tops = []
    for sims in scored:
        top = np.argpartition(-sims, k - 1)[:k] if len(sims) > k else np.arange(len(sims))
        top = top[np.argsort(-sims[top])]
        tops.append((vectors.rowids[positions[top]], sims[top], "exact"))
    return tops

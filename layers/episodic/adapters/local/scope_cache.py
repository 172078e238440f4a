"""The rowids a large scope admits, kept between recalls while the tenant does not change.

Why: admitting a scope is SQL over a covering index, ~0.3 us per admitted row -- 30 ms for a
scope of 100,000 episodes, most of a vector search that then takes ~5 ms. A tenant's scope
generation (``scope_generations``, moved by triggers on every change to a column a scope filters
on, whichever process or code path makes it) says when a kept answer is stale; each recall
reads it first, in its own statement, and a kept answer is used only under the same generation.
Reading the generation *before* the scope means an answer is never older than its label.

Expiry needs no generation: the answer is kept without the ``expires_at > now`` condition and
with each row's expiry, which is applied (vectorised) at every use, so an episode leaves recall
the moment it expires even though nothing was written.

Only scopes of at least ``min_rows`` are kept (a small one costs less to admit than to keep:
it is admitted with the expiry condition in the SQL, one column, which is half the work), at
most ``capacity`` of them, least recently used first out; a kept scope that went stale is
admitted again directly with its expiries. Nothing of an episode's content is
kept: rowids and expiry times.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

import numpy as np

from episodic.adapters.local.sqlite_database import micros
from episodic.adapters.local.sqlite_scope import scope_sql
from episodic.ports import Scope

NEVER = np.iinfo(np.int64).max
_DAWN = datetime(1970, 1, 1, tzinfo=UTC)


class ScopeCache:
    """Large scopes' rowids and expiries, each under the tenant generation it was read at."""

    def __init__(self, capacity: int = 32, min_rows: int = 5_000) -> None:
        self.capacity = capacity
        self.min_rows = min_rows
        self._kept: OrderedDict[Scope, tuple[int, np.ndarray, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def rowids(self, conn: sqlite3.Connection, scope: Scope) -> np.ndarray:
        """The rowids ``scope`` admits now (in index order, not sorted)."""
        row = conn.execute("SELECT generation FROM scope_generations WHERE tenant_id = ?", (scope.tenant_id,))
        generation = (row.fetchone() or (0,))[0]
        timeless = dataclasses.replace(scope, now=_DAWN)  # the key: every filter but the clock
        with self._lock:
            kept = self._kept.get(timeless)
            if kept is not None:
                self._kept.move_to_end(timeless)
        if kept is None:  # not known to be large: admit it as it is now, and keep it if it is large
            ids = admitted_now(conn, scope)
            if len(ids) < self.min_rows:
                return ids
        if kept is None or kept[0] != generation:
            kept = (generation, *admitted(conn, timeless))
            with self._lock:
                self._kept[timeless] = kept
                self._kept.move_to_end(timeless)
                while len(self._kept) > self.capacity:
                    self._kept.popitem(last=False)
        _, ids, expiries = kept
        return ids[expiries > micros(scope.now)]


def admitted_now(conn: sqlite3.Connection, scope: Scope) -> np.ndarray:
    """The rowids ``scope`` admits at its ``now``: one column joined, half the work of
    :func:`admitted` for a scope that will not be kept."""
    where, params = scope_sql(scope)
    return _parsed(conn.execute(f"SELECT group_concat(e.rowid) FROM episodes e WHERE {where}", params).fetchone()[0])


def admitted(conn: sqlite3.Connection, scope: Scope) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, expiry in microseconds or :data:`NEVER`) of every row ``scope`` admits at the dawn
    of time, i.e. regardless of expiry. Joined into strings inside SQLite and parsed by numpy:
    a Python tuple per row would cost ~0.75 us, this ~0.3 us."""
    where, params = scope_sql(scope)
    ids, expiries = conn.execute(
        f"SELECT group_concat(e.rowid), group_concat(ifnull(e.expires_at, {NEVER})) FROM episodes e WHERE {where}",
        params,
    ).fetchone()
    return _parsed(ids), _parsed(expiries)


def _parsed(joined: Any) -> np.ndarray:
    return np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.empty(0, dtype=np.int64)

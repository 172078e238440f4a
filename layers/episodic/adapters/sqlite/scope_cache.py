"""The rowids a large scope admits, kept between recalls while the tenant does not change.

Why: admitting a scope is SQL over a covering index, linear in the rows it admits -- for a
scope of a hundred thousand episodes, more than the vector search that follows. A tenant's scope
generation (``scope_generations``, moved on every change to a column a scope filters on, whichever
process makes it: by the insert itself, by triggers on updates and deletes) says when a kept
answer is stale; each recall reads it first, in its own statement, and a kept answer is used only
under the same generation.
Reading the generation *before* the scope means an answer is never older than its label.

Expiry needs no generation: the answer is kept without the ``expires_at > now`` condition and
with each row's expiry, which is applied (vectorised) at every use, so an episode leaves recall
the moment it expires even though nothing was written.

Scopes of at least ``min_rows`` are kept from their first recall, at most ``capacity`` of them,
least recently used first out; a kept one that went stale is admitted again with its expiries.
A smaller scope is kept only when it is asked for again under the same generation (a burst of
recalls with no write between them, as an agent's session often starts): admitting it for
keeping reads two columns, twice the work of admitting it for one recall with the expiry
condition in the SQL, which is what a small scope costs whenever writes come between its
recalls. Kept small scopes have an LRU of their own (``small_capacity``, at most ~10 MB of rowids
and expiries), so many of them never push out a large one. Nothing of an episode's content is
kept: rowids and expiry times.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np

from episodic.adapters.sqlite.database import micros
from episodic.adapters.sqlite.scope import scope_sql
from episodic.application.ports import Scope

NEVER = np.iinfo(np.int64).max
_DAWN = datetime(1970, 1, 1, tzinfo=UTC)


class ScopeCache:
    """Scopes' rowids and expiries, each under the tenant generation it was read at."""

    def __init__(self, capacity: int = 32, min_rows: int = 5_000, small_capacity: int = 128) -> None:
        self.min_rows = min_rows
        self._large = _Kept(capacity)
        self._small = _Kept(small_capacity)
        self._seen = _Kept(small_capacity)
        """Small scopes admitted once, with the generation they were admitted under."""
        self._lock = threading.Lock()

    def rowids(self, conn: sqlite3.Connection, scope: Scope) -> np.ndarray:
        """The rowids ``scope`` admits now (in index order, not sorted)."""
        return self.admitted(conn, scope)[1]

    def admitted(self, conn: sqlite3.Connection, scope: Scope) -> tuple[int, np.ndarray]:
        """The tenant's scope generation, and the rowids ``scope`` admitted under it (:meth:`rowids`):
        while the generation stays the same, so do they, at the same ``scope.now``."""
        generation = generation_of(conn, scope.tenant_id)
        timeless = dataclasses.replace(scope, now=_DAWN)  # the key: every filter but the clock
        with self._lock:
            kept = self._large.get(timeless) or self._small.get(timeless)
            again = self._seen.get(timeless) == generation  # a small scope asked for again, no write between
        if kept is None or kept[0] != generation:
            if not again and (kept is None or len(kept[1]) < self.min_rows):  # not known to be large or asked for
                ids = admitted_now(conn, scope)  # as it is now: one column
                if len(ids) < self.min_rows:
                    with self._lock:
                        self._seen.put(timeless, generation)
                    return generation, ids
            kept = (generation, *admitted(conn, timeless))
            large = len(kept[1]) >= self.min_rows
            with self._lock:
                (self._large if large else self._small).put(timeless, kept)
                (self._small if large else self._large).discard(timeless)
        _, ids, expiries = kept
        return generation, ids[expiries > micros(scope.now)]


def generation_of(conn: sqlite3.Connection, tenant_id: str) -> int:
    """``tenant_id``'s scope generation: it moves with every change to what a scope filters on."""
    row = conn.execute("SELECT generation FROM scope_generations WHERE tenant_id = ?", (tenant_id,)).fetchone()
    return int(row[0]) if row else 0


class _Kept:
    """A small LRU map (the caller holds the cache's lock)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Scope, Any] = OrderedDict()

    def get(self, key: Scope) -> Any:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: Scope, value: Any) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def discard(self, key: Scope) -> None:
        self._items.pop(key, None)

    def __iter__(self) -> Iterator[Scope]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)


def admitted_now(conn: sqlite3.Connection, scope: Scope) -> np.ndarray:
    """The rowids ``scope`` admits at its ``now``: one column joined, half the work of
    :func:`admitted` for a scope that will not be kept."""
    where, params = scope_sql(scope)
    return _parsed(conn.execute(f"SELECT group_concat(e.rowid) FROM episodes e WHERE {where}", params).fetchone()[0])


def admitted(conn: sqlite3.Connection, scope: Scope) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, expiry in microseconds or :data:`NEVER`) of every row ``scope`` admits at the dawn
    of time, i.e. regardless of expiry. Joined into strings inside SQLite and parsed by numpy:
    cheaper than a Python tuple per row."""
    where, params = scope_sql(scope)
    ids, expiries = conn.execute(
        f"SELECT group_concat(e.rowid), group_concat(ifnull(e.expires_at, {NEVER})) FROM episodes e WHERE {where}",
        params,
    ).fetchone()
    return _parsed(ids), _parsed(expiries)


def _parsed(joined: Any) -> np.ndarray:
    return np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.empty(0, dtype=np.int64)

"""Group commit: change sets that arrive together share one transaction and one fsync.

Why: with ``synchronous=FULL`` every commit waits for the disk. When several request threads
write at once, or a batch route writes a hundred items, committing each on its own makes them
queue behind one fsync each. Here the first writer to find the writer connection free becomes
the *leader*: it takes every change set waiting at that moment (its own included), applies
them one after another, and commits them all at once; the others wait for that
commit and go home with their own outcome. Nothing waits on a timer: a lone writer commits
at once, and sets batch up only while a commit is already in flight.

What each caller is still promised:

* **atomic per change set** -- a set that fails (a create-once or expected-status condition)
  leaves nothing of itself; the sets beside it commit without it;
* **acknowledged means on disk** -- a caller hears back only after the shared ``COMMIT``
  returned; when that commit fails, every set in it fails with it;
* **a crash never leaves half a set** -- one transaction, so all of it or none of it.

How a failed set leaves nothing: the sets are first applied with no savepoint between them, and
committed when none fails (nearly always). A savepoint costs more than its two statements: inside
one, SQLite copies every page a set is about to change (a row, its indexes, its texts, its audit
record) to the savepoint's journal first, so that the set could be rolled back alone -- work a
batch paid for every episode, for a rollback it almost never needed. When a set does fail, the
whole transaction is rolled back and the group applied again, each set in its own ``SAVEPOINT``:
one that fails again is rolled back to it alone. So a set's statements may run twice, and what a
set's work records outside the database it must record afresh on each run.

A set marked not *durable* (the read audit, access counts) commits with ``synchronous=NORMAL``
when nothing durable shares its transaction: the commit does not wait for fsync. It survives
a crash of the process (the WAL frames are in the operating system's cache); only a power cut
or kernel crash before the next fsynced commit or checkpoint can lose it. Because the WAL is
one file written in order, the next durable commit's fsync makes every earlier set durable too.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from episodic.domain.errors import StorageError

Work = Callable[[sqlite3.Connection], None]
"""One change set: the statements that write it, run on the writer connection (perhaps twice: a
run rolled back because another set failed, then one that counts; see the module)."""


@dataclass(eq=False)
class _Ticket:
    work: Work
    durable: bool
    error: BaseException | None = None
    done: bool = False


class GroupCommit:
    """Runs change sets on the one writer connection, many per transaction (see the module)."""

    def __init__(self, writer: sqlite3.Connection, write_lock: threading.Lock) -> None:
        self._writer = writer
        self._write_lock = write_lock
        self._cond = threading.Condition()
        self._waiting: list[_Ticket] = []
        self._leading = False

    def run(self, works: Sequence[Work], *, durable: bool = True) -> list[BaseException | None]:
        """Apply every work, each atomically; the error each one failed with, or ``None``.

        A failure of the shared commit itself is every work's error (nothing of them was written)."""
        tickets = [_Ticket(work, durable) for work in works]
        if not tickets:
            return []
        with self._cond:
            self._waiting.extend(tickets)
            while self._leading and not tickets[-1].done:
                self._cond.wait()
            if tickets[-1].done:  # a leader committed ours (all of them: it took them together)
                return [t.error for t in tickets]
            self._leading = True
            batch, self._waiting = self._waiting, []
        try:
            self._commit(batch)
        finally:
            with self._cond:
                for ticket in batch:
                    ticket.done = True
                self._leading = False
                self._cond.notify_all()
        return [t.error for t in tickets]

    def _commit(self, batch: list[_Ticket]) -> None:
        relaxed = not any(t.durable for t in batch)
        with self._write_lock:
            conn = self._writer
            if relaxed:
                conn.execute("PRAGMA synchronous=NORMAL")
            try:
                self._in_transaction(conn, batch)
            finally:
                if relaxed:
                    conn.execute("PRAGMA synchronous=FULL")

    @staticmethod
    def _in_transaction(conn: sqlite3.Connection, batch: list[_Ticket]) -> None:
        """Apply ``batch`` and commit: at once when no set fails, else again set by set (see the module)."""
        if not _attempt(conn, batch, careful=False):
            _attempt(conn, batch, careful=True)


def _attempt(conn: sqlite3.Connection, batch: list[_Ticket], *, careful: bool) -> bool:
    """One transaction over ``batch``: each set in a savepoint of its own when ``careful`` (a set that
    fails is rolled back alone and keeps its error), else none (a set that fails rolls the whole
    transaction back and the attempt returns False, leaving no error on any ticket). True when the
    transaction ended: committed, or failed as a whole (every set then holds the failure)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        _fail_all(batch, StorageError(f"database is busy: {exc}"))
        return True
    try:
        for ticket in batch:
            ticket.error = None
            if not careful:
                try:
                    ticket.work(conn)
                except Exception:
                    if conn.in_transaction:  # some failures (a full disk) end the transaction themselves
                        conn.execute("ROLLBACK")
                    return False
                continue
            conn.execute("SAVEPOINT change_set")
            try:
                ticket.work(conn)
            except Exception as exc:  # this set only: roll it back, keep the others
                conn.execute("ROLLBACK TO change_set")
                ticket.error = exc
            conn.execute("RELEASE change_set")
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        _fail_all(batch, exc if isinstance(exc, StorageError) else StorageError(f"commit failed: {exc}"))
        if not isinstance(exc, Exception):
            raise  # KeyboardInterrupt and the like still stop the leader
    return True


def _fail_all(batch: list[_Ticket], error: BaseException) -> None:
    for ticket in batch:
        ticket.error = error

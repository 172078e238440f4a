"""The event outbox on SQLite: the audit table itself, read past a delivery cursor.

Audit records are appended in the transaction of the change they record, and ``seq`` follows
commit order (one writer at a time, across processes too), so reading ``seq`` past the last
one delivered yields every committed change exactly once, in order. The cursor lives in
``meta`` and moves only after the receiver took the events: a crash between the two sends them
again, with the same ids.
"""

from __future__ import annotations

from episodic.adapters.sqlite.database import Database
from episodic.application.ports import OutboxEntry
from episodic.domain.model import AuditRecord
from episodic.domain.model.events import EVENT_OF

CURSOR = "events_delivered_seq"
_ACTIONS = tuple(action.value for action in EVENT_OF)


class Outbox:
    def __init__(self, db: Database) -> None:
        self.db = db

    def pending(self, limit: int) -> list[OutboxEntry]:
        marks = ",".join("?" * len(_ACTIONS))
        rows = self.db.query(
            f"SELECT seq, doc FROM audit WHERE seq > ? AND action IN ({marks}) ORDER BY seq LIMIT ?",
            (self._cursor(), *_ACTIONS, limit),
        )
        return [OutboxEntry(int(seq), AuditRecord.model_validate_json(doc)) for seq, doc in rows]

    def delivered(self, position: int) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
                "SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                (CURSOR, str(position)),
            )

    def start_from_now(self) -> None:
        """Begin the cursor at the newest record, if it has none: a data dir that turns events
        on does not tell its whole history first."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) SELECT ?, coalesce(max(seq), 0) FROM audit", (CURSOR,)
            )

    def _cursor(self) -> int:
        row = self.db.one("SELECT value FROM meta WHERE key = ?", (CURSOR,))
        return int(row[0]) if row else 0

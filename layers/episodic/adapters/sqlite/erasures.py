"""How a process learns that another one deleted episodes of a tenant, so that what it keeps of them
in memory (words, vectors) goes too.

Every delete from ``episodes`` moves the tenant's count in ``tenant_erasures`` (a trigger, whoever
deletes: erasure, expiry, rejection). A process compares the count with the one its copy agrees
with; when it moved, it reads the tenant's rowids and drops what is no longer among them.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def erasures_of(conn: Any, tenant_id: str) -> int:
    """How many of the tenant's episodes were ever deleted."""
    row = conn.execute("SELECT erased FROM tenant_erasures WHERE tenant_id = ?", (tenant_id,)).fetchone()
    return int(row[0]) if row else 0


def live_rowids(conn: Any, tenant_id: str) -> np.ndarray:
    """The rowids of the tenant's episodes now (in no particular order: callers take set differences)."""
    (joined,) = conn.execute("SELECT group_concat(rowid) FROM episodes WHERE tenant_id = ?", (tenant_id,)).fetchone()
    return np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.empty(0, dtype=np.int64)

"""The embedders' memory of recent questions' vectors, kept per tenant.

Agents repeat their questions, and a tenant's names recur from one widened recall to the next, so
an embedder keeps the vectors it made for them. It keeps them by tenant and text: a vector kept for
one tenant never answers another tenant's question, whose faster answer would tell it what the
first asked or which names its memories hold. A question asked for no tenant is not kept at all.

When a tenant's episodes are erased, what is kept for it goes too (:meth:`QuestionCache.forget_tenant`):
names a recall widened with are words of its memories, and a vector kept for a name only erased
episodes held would still answer faster than one never seen.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class QuestionCache:
    """Vectors by (tenant, text), the least recently used dropped past ``capacity``; thread-safe."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, tenant: str | None, text: str) -> Any | None:
        """The vector kept for ``tenant``'s ``text``, or ``None``."""
        if tenant is None:
            return None
        with self._lock:
            vector = self._kept.get((tenant, text))
            if vector is not None:
                self._kept.move_to_end((tenant, text))
            return vector

    def put(self, tenant: str | None, text: str, vector: Any) -> None:
        """Keep ``vector`` for ``tenant``'s ``text`` (nothing for no tenant)."""
        if tenant is None:
            return
        with self._lock:
            self._kept[tenant, text] = vector
            self._kept.move_to_end((tenant, text))
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

    def forget_tenant(self, tenant: str) -> None:
        """Drop everything kept for ``tenant``."""
        with self._lock:
            for key in [key for key in self._kept if key[0] == tenant]:
                del self._kept[key]

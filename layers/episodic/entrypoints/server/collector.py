"""How often Python's cyclic garbage collector runs in an ``episodic serve`` process.

Why: CPython collects its youngest generation whenever the containers allocated and not yet
freed outnumber a threshold, 700 by default. A recall holds a few thousand short-lived ones at
its peak (the candidates of both searches, the episodes read, the items ranked), and a batch of
writes more, so at the default a collection ran inside nearly every request, found those
temporaries alive and moved them to the older generations. They died soon after, but they made
the older collections run, and the oldest walks every object of a process that holds its
tenants' words, parsed episodes and caches: a pause of tens of milliseconds for every thread.
With the youngest threshold at :data:`YOUNG_THRESHOLD`, a request's temporaries are freed by
their reference counts before any collection sees them; what still triggers one is what the
caches keep, which grows slowly. What was measured is in ``docs/decisions.md``.

What the process made before its first request (modules, the model's session, the policy's
tables) lives as long as it does, so it is frozen (:func:`gc.freeze`): no collection walks it
again. Only ``episodic serve`` is tuned: a process that imports the service as a library keeps
its own collector settings.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
"""Containers allocated and not yet freed before the youngest generation is collected: above a
request's peak of live temporaries, so a collection no longer runs in the middle of nearly every
one; the older generations keep their default multiples of it."""


def tune_collector() -> None:
    """Freeze what exists now and collect the youngest generation at :data:`YOUNG_THRESHOLD`
    (called once the process has warmed up, before it serves)."""
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, oldest)

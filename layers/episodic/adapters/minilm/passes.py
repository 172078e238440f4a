"""What waits for the model's workers, and in what order: questions before stored batches.

A worker's pass cannot be interrupted, and a pass of long stored texts is slow (a 256-token text
costs about a tenth of a second on one core). Taken first come, first served, one client's batch of
a hundred long texts held every question that came after it -- another tenant's recall, a single
write -- for the whole batch, seconds at a time. So a batch is queued as *bulk*, cut into passes
of about :data:`CHUNK_TOKENS` tokens each (:func:`chunks`), and a worker takes every question
waiting before the next chunk of any batch (:class:`PassQueue`): a question waits at most for the
pass already running. A batch loses little: a pass's fixed cost is about ten token slots.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

CHUNK_TOKENS = 512
"""About how many tokens (padded slots) one pass of a batch holds: a few tenths of a second on one
core, the longest a question waits behind a batch."""
MAX_TOKENS = 256
"""The most tokens the model reads of one text."""
CHARACTERS_PER_TOKEN = 4
"""About how many characters of English text one token covers (an estimate, before tokenising)."""


@dataclass
class Pending:
    """Texts waiting for a worker, and where their vectors (or the failure) go."""

    texts: list[str]
    light: bool = False
    """Whether the runtime's lighter graph will do (names; see :mod:`.light`)."""
    one_core: bool = False
    """Whether its pass runs on one core (a share of a batch split in two)."""
    bulk: bool = False
    """Part of a batch of stored texts: taken after every question waiting (:class:`PassQueue`)."""
    vectors: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


def chunks(texts: Sequence[str]) -> list[list[str]]:
    """``texts`` in order, cut into runs of about :data:`CHUNK_TOKENS` estimated tokens (at least one
    text each)."""
    runs: list[list[str]] = []
    size = 0
    for text in texts:
        cost = min(len(text) // CHARACTERS_PER_TOKEN + 2, MAX_TOKENS)
        if not runs or size + cost > CHUNK_TOKENS:
            runs.append([])
            size = 0
        runs[-1].append(text)
        size += cost
    return runs


class PassQueue:
    """Pending passes: every question waiting is taken before the next chunk of a batch."""

    def __init__(self) -> None:
        self._questions: deque[Pending] = deque()
        self._bulk: deque[Pending] = deque()
        self._ready = threading.Condition()

    def put(self, pending: Pending) -> None:
        with self._ready:
            (self._bulk if pending.bulk else self._questions).append(pending)
            self._ready.notify()

    def take(self) -> list[Pending]:
        """What the next pass runs (waiting until there is something): every question waiting, or
        else the oldest chunk of a batch."""
        with self._ready:
            self._ready.wait_for(lambda: bool(self._questions or self._bulk))
            if self._questions:
                taken = list(self._questions)
                self._questions.clear()
                return taken
            return [self._bulk.popleft()]

    def empty(self) -> bool:
        with self._ready:
            return not (self._questions or self._bulk)

"""The names a tenant's episodes mention, embedded before a recall asks for them, while the model is idle.

Why: a widened recall leans its second round toward names its first round's best items mention
(:mod:`.rounds`), and a name not seen before is one more pass of the model beside the question's;
on tickets whose names rarely recur, that is most recalls' (measured in docs/decisions.md, "The
names of written episodes are embedded ahead").

How: the store tells :meth:`NamesAhead.offer` the summaries of the episodes written (the local
store: the writing process at once, every other one when its next search reads the new rows), and
one background thread reads the names they mention as a recall would
(:func:`~episodic.domain.recall.query.widening_names`) and hands the new ones, a few at a time, to
the embedder's ``start_names``, which keeps each for the tenant. It starts a pass only while the
embedder says it is ``idle()`` (no pass of its own running, a core free), so a recall rarely meets
one; under steady load it waits, and what is offered past :data:`QUEUED_AT_MOST` is dropped: a
recall embeds the names it needs itself, as it always could. Nothing here is durable: each process
keeps its own, and forgets a tenant's when its episodes are erased.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence

from episodic.application.ports import Embedder
from episodic.domain.recall.query import widening_names

log = logging.getLogger(__name__)

NAMES_AT_ONCE = 2
"""Names a request to the embedder holds: each runs alone through the lighter graph, so a question
that arrives meanwhile meets at most two short runs of it."""
NAMES_AT_MOST = 512
"""The most names one offer embeds (the first its texts mention): the embedder keeps a few thousand
names in all, and a tenant read for the first time may offer all its texts."""
SEEN_AT_MOST = 100_000
"""Names remembered as offered, all tenants together, before they are forgotten and may be offered again."""
QUEUED_AT_MOST = 64
"""Offers that may wait for the thread; more are dropped."""
REST_SECONDS = 0.1
"""How long the thread rests after the offers it took, before it takes more."""
IDLE_POLL_SECONDS = 0.005
"""How often the thread looks again whether the embedder is idle."""
CLOSE_WAIT_SECONDS = 5.0
"""How long :meth:`NamesAhead.close` waits for the thread's current pass to end."""


class NamesAhead:
    """Embeds the names of offered texts in the background, only while ``embedder`` is idle."""

    def __init__(self, embedder: Embedder) -> None:
        self._start: Callable[..., list[Callable[[], object]]] | None = getattr(embedder, "start_names", None)
        self._idle: Callable[[], bool] = getattr(embedder, "idle", lambda: True)
        self._forget_kept: Callable[[str], None] = getattr(embedder, "forget_tenant", lambda tenant: None)
        self._offers: queue.Queue[tuple[str, int, Sequence[str]]] = queue.Queue(QUEUED_AT_MOST)
        self._seen: dict[str, set[str]] = {}
        """The names each tenant's offers held, embedded or on their way (a name offered again costs nothing)."""
        self._forgotten: dict[str, int] = {}
        """Each tenant's count of :meth:`forget` calls: an offer made before the latest is dropped."""
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def useful(self) -> bool:
        """Whether the embedder keeps names (``start_names``): else offers are not worth making."""
        return self._start is not None

    def offer(self, tenant: str, texts: Sequence[str]) -> None:
        """``tenant``'s new ``texts``: their names will be embedded when the model is idle. Returns at once."""
        if self._start is None or not texts:
            return
        with self._lock:
            if self._closed:
                return
            mark = self._forgotten.get(tenant, 0)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="episodic-names-ahead", daemon=True)
                self._thread.start()
        with contextlib.suppress(queue.Full):  # under steady load: a recall embeds the names it needs itself
            self._offers.put_nowait((tenant, mark, texts))

    def forget(self, tenant: str) -> None:
        """``tenant``'s episodes were erased: what was offered for it before now is dropped, and so
        is what the embedder keeps for it (its questions and names)."""
        with self._lock:
            self._forgotten[tenant] = self._forgotten.get(tenant, 0) + 1
            self._seen.pop(tenant, None)
        self._forget_kept(tenant)

    def close(self) -> None:
        """Stop: what is offered from now on, or waits, is dropped, and the thread ends -- waited
        for, up to :data:`CLOSE_WAIT_SECONDS`, so that a process about to exit does not leave
        a pass of the model's native runtime running under it."""
        with self._lock:
            self._closed = True
            self._forgotten.clear()
            self._seen.clear()
            thread = self._thread
        with contextlib.suppress(queue.Full):  # full: the thread is busy, and sees ``_closed`` before its next pass
            self._offers.put_nowait(("", -1, ()))  # wakes a thread waiting for an offer
        if thread is not None and thread is not threading.current_thread():
            thread.join(CLOSE_WAIT_SECONDS)

    def _work(self) -> None:
        """Forever: take the offers waiting, embed their new names, then rest :data:`REST_SECONDS`
        (under a stream of writes the thread wakes a few times a second, not once a write)."""
        while True:
            offers = [self._offers.get()]
            while True:
                try:
                    offers.append(self._offers.get_nowait())
                except queue.Empty:
                    break
            for tenant, mark, texts in offers:
                if self._closed:
                    return
                try:
                    names = self._new(tenant, mark, widening_names("", texts, (), limit=NAMES_AT_MOST))
                    self._embed(tenant, mark, names)
                except Exception:  # a recall embeds its names itself; say why once an offer
                    log.warning("could not embed a tenant's names ahead", exc_info=True)
            time.sleep(REST_SECONDS)

    def _embed(self, tenant: str, mark: int, names: list[str]) -> None:
        """``names`` into the embedder's keeping for ``tenant``, :data:`NAMES_AT_ONCE` a pass, each
        pass once the embedder is idle; none once the tenant was forgotten after the offer (and
        what a pass kept as it was forgotten is dropped again)."""
        assert self._start is not None
        for start in range(0, len(names), NAMES_AT_ONCE):
            while not self._idle() and not self._closed:
                time.sleep(IDLE_POLL_SECONDS)
            if not self._current(tenant, mark):
                return
            for wait in self._start(names[start : start + NAMES_AT_ONCE], tenant=tenant):
                wait()
            if not self._current(tenant, mark):
                self._forget_kept(tenant)
                return

    def _new(self, tenant: str, mark: int, names: list[str]) -> list[str]:
        """Of ``names``, those not offered for ``tenant`` before (since it was last forgotten), now
        noted; none when the offer, made at ``mark``, no longer stands."""
        with self._lock:
            if self._closed or self._forgotten.get(tenant, 0) != mark:
                return []
            if sum(len(seen) for seen in self._seen.values()) > SEEN_AT_MOST:
                self._seen.clear()
            seen = self._seen.setdefault(tenant, set())
            new = [name for name in names if name not in seen]
            seen.update(new)
            return new

    def _current(self, tenant: str, mark: int) -> bool:
        """Whether an offer for ``tenant`` made at ``mark`` still stands (not forgotten since, not closed)."""
        with self._lock:
            return not self._closed and self._forgotten.get(tenant, 0) == mark

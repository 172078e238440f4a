"""The local server's event delivery: a daemon thread that tells the webhook what changed.

It takes what waits in the outbox, sends it, and waits for more (polling every
:data:`IDLE_SECONDS`); while the receiver fails, it waits longer between tries (from
:data:`FIRST_BACKOFF` doubling to :data:`MAX_BACKOFF`), so a receiver that is down for a while
gets everything, in order, once it is back. Only the first of ``episodic serve --workers``
processes runs it.
"""

from __future__ import annotations

import threading

from episodic.application.ports import DeliveryError
from episodic.application.usecases.notifications import Notifications
from episodic.logs import service_logger

logger = service_logger("episodic-events")

IDLE_SECONDS = 0.5
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 60.0


class Deliverer:
    def __init__(self, notifications: Notifications) -> None:
        self._notifications = notifications
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="episodic-events", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        backoff = FIRST_BACKOFF
        while not self._stop.is_set():
            try:
                sent = self._notifications.deliver_pending()
            except DeliveryError as failure:
                logger.warning("memory events not delivered; will retry", reason=str(failure), retry_in_s=backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
                continue
            except Exception:
                logger.exception("memory event delivery failed; will retry")
                self._stop.wait(backoff)
                continue
            backoff = FIRST_BACKOFF
            if not sent:
                self._stop.wait(IDLE_SECONDS)

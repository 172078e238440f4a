"""The local server's periodic jobs (the sweep, the summarisation, the decay sweep), each in a
daemon thread of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from episodic.logs import service_logger

logger = service_logger("episodic-server")


class Scheduler:
    """Runs periodic jobs (the sweep, the summarisation, the decay sweep) in daemon threads.

    A job that fails is logged and tried again at its next tick; one job never blocks another.
    """

    def __init__(self, jobs: list[tuple[str, float, Callable[[], Any]]]) -> None:
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=job, name=f"episodic-{job[0]}", daemon=True) for job in jobs
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _run(self, name: str, interval: float, job: Callable[[], Any]) -> None:
        while not self._stop.wait(interval):
            try:
                outcome = job()
                if outcome:
                    logger.info("scheduled job", job=name, outcome=str(outcome)[:500])
            except Exception:
                logger.exception("scheduled job failed; will retry", job=name)

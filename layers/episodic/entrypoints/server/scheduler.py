"""The local server's periodic jobs (the sweep, the summarisation, the decay sweep), each in a
daemon thread of its own.

When each job last started is kept in a small file of the data dir (``schedule.json``), so the clock of
a daily job survives a restart: counted from each start instead, a server restarted more often than
once a day (a deploy, a crash, a replaced worker) would never summarise or forget. A job never run
before has its clock started at the first start, and first runs one interval later.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from episodic.logs import service_logger

logger = service_logger("episodic-server")

STATE_FILE = "schedule.json"


class Scheduler:
    """Runs periodic jobs (the sweep, the summarisation, the decay sweep) in daemon threads.

    A job that fails is logged and tried again at its next tick; one job never blocks another.
    ``state``: the file that keeps when each job last ran (none: each start starts every clock).
    """

    def __init__(self, jobs: list[tuple[str, float, Callable[[], Any]]], state: Path | None = None) -> None:
        self._stop = threading.Event()
        self._state = state
        self._lock = threading.Lock()
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
        last = self._last_run(name)
        # never longer than an interval: a clock set back must not hold a job for longer
        while not self._stop.wait(min(interval, max(0.0, last + interval - time.time()))):
            # kept before it runs: a run that ends its process is not run again by the next one at once
            last = time.time()
            self._record(name, last)
            try:
                outcome = job()
                if outcome:
                    logger.info("scheduled job", job=name, outcome=str(outcome)[:500])
            except Exception:
                logger.exception("scheduled job failed; will retry", job=name)

    def _last_run(self, name: str) -> float:
        """When ``name`` last ran, from the state file; never: now (recorded, so a restart keeps it)."""
        last = self._read().get(name)
        if isinstance(last, int | float):
            return float(last)
        now = time.time()
        self._record(name, now)
        return now

    def _read(self) -> dict[str, Any]:
        if self._state is None:
            return {}
        try:
            kept = json.loads(self._state.read_text())
        except (OSError, ValueError):  # none yet, or unreadable: every clock starts now
            return {}
        return kept if isinstance(kept, dict) else {}

    def _record(self, name: str, at: float) -> None:
        if self._state is None:
            return
        with self._lock:
            kept = {**self._read(), name: at}
            partial = self._state.with_name(f"{self._state.name}.{os.getpid()}.partial")
            try:
                partial.write_text(json.dumps(kept))
                partial.replace(self._state)  # whole or not at all
            except OSError:
                logger.warning("could not keep when a scheduled job ran", job=name, exc_info=True)

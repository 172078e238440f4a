"""The local server's schedules: when each job last ran is kept across restarts, so a daily job
runs once a day even on a server restarted more often than that."""

from __future__ import annotations

import json
import threading
import time

from episodic.entrypoints.server.scheduler import Scheduler


def _job(ran: threading.Event):
    def job() -> str:
        ran.set()
        return "done"

    return job


def test_given_a_job_due_since_before_a_restart_when_started_then_it_runs_at_once(tmp_path):
    state = tmp_path / "schedule.json"
    state.write_text(json.dumps({"summarise": time.time() - 90_000}))  # last ran 25 hours ago
    ran = threading.Event()
    scheduler = Scheduler([("summarise", 86_400.0, _job(ran))], state)
    scheduler.start()
    try:
        assert ran.wait(10), "a day's job overdue at the start waited for another day"
    finally:
        scheduler.stop()
    assert json.loads(state.read_text())["summarise"] > time.time() - 60  # its run is kept


def test_given_a_job_never_run_when_started_then_its_clock_starts_and_survives_a_restart(tmp_path):
    state = tmp_path / "schedule.json"
    ran = threading.Event()
    first = Scheduler([("forget", 86_400.0, _job(ran))], state)
    first.start()
    first.stop()
    started = json.loads(state.read_text())["forget"]
    second = Scheduler([("forget", 86_400.0, _job(ran))], state)
    second.start()
    second.stop()
    assert not ran.is_set()
    assert json.loads(state.read_text())["forget"] == started  # the second start kept the first one's clock


def test_given_a_failing_job_when_it_fails_then_it_is_tried_again_at_its_next_tick(tmp_path):
    calls: list[int] = []
    again = threading.Event()

    def job() -> None:
        calls.append(1)
        if len(calls) >= 2:
            again.set()
        raise RuntimeError("store unavailable")

    scheduler = Scheduler([("sweep", 0.05, job)], tmp_path / "schedule.json")
    scheduler.start()
    try:
        assert again.wait(10)
    finally:
        scheduler.stop()


def test_given_an_unreadable_state_file_when_started_then_every_clock_starts_anew(tmp_path):
    state = tmp_path / "schedule.json"
    state.write_text("{not json")
    scheduler = Scheduler([("sweep", 60.0, lambda: None)], state)
    scheduler.start()
    scheduler.stop()
    assert set(json.loads(state.read_text())) == {"sweep"}

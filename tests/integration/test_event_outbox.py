"""The local outbox (the audit table read past a cursor), with the real SQLite store: a data dir
that turns events on does not tell its history, a failed delivery leaves the events to be sent
again with the same ids, and only committed changes are ever told."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import DeliveryError
from episodic.application.settings import Settings
from episodic.application.usecases.notifications import Notifications
from episodic.bootstrap.local import build_local_service
from episodic.domain.errors import NotFoundError
from episodic.domain.model import MemoryEvent
from tests.support.factories import AGENT, proposal


class RecordingSenderDouble:
    """TEST DOUBLE for the webhook: records what it is given; fails while ``failing``."""

    def __init__(self) -> None:
        self.sent: list[MemoryEvent] = []
        self.failing = False

    def send(self, events: Sequence[MemoryEvent]) -> None:
        if self.failing:
            raise DeliveryError("injected: the receiver is down")
        self.sent.extend(events)


def test_given_events_turned_on_when_delivered_then_history_stays_and_failures_are_sent_again(tmp_path, minilm, clock):
    settings = Settings(data_dir=tmp_path / "data")
    with build_local_service(settings, embedder=minilm, clock=clock) as before:
        before.writes.remember(AGENT, proposal(summary="Release 4.1 shipped before events were on"))
    store = SqliteStore(tmp_path / "data" / "episodic.db", embedder=minilm.name)
    store.outbox.start_from_now()
    store.close()
    with build_local_service(settings, embedder=minilm, clock=clock) as service:
        sender = RecordingSenderDouble()
        notifications = Notifications(service.deps, _outbox_of(service), sender)
        written = service.writes.remember(AGENT, proposal(summary="Release 4.2 shipped"))
        service.writes.remember(AGENT, proposal(summary="thanks!", eventType="conversation_turn"))  # denied
        with pytest.raises(NotFoundError):  # a change that failed is never told
            service.writes.correct(AGENT, "01NOSUCHEPISODE0000000000", proposal(summary="x"))
        sender.failing = True
        with pytest.raises(DeliveryError):
            notifications.deliver_pending()
        sender.failing = False
        assert notifications.deliver_pending() == 1 and notifications.deliver_pending() == 0
    assert [(e.type, e.episode_id) for e in sender.sent] == [("episode.written", written.event_id)]


def _outbox_of(service):
    """The outbox part of the store behind ``service`` (its episodes part shares the database)."""
    from episodic.adapters.sqlite.outbox import Outbox

    return Outbox(service.deps.episodes.db)

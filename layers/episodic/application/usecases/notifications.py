"""Telling business systems what changed: memory events from the outbox to the sender.

Delivery is at least once and in commit order: events are taken from the outbox (the audit
log, :class:`~episodic.application.ports.EventOutbox`), sent, and only then marked delivered; a
failure leaves them to be sent again, with the same ids. The AWS deployment tells the same
events from the audit table's stream instead (the stream is its outbox).
"""

from __future__ import annotations

from episodic.application.ports import EventOutbox, EventSender
from episodic.application.usecases.deps import Deps
from episodic.domain.model import AuditRecord, MemoryEvent, event_of
from episodic.domain.model.events import ActorShown


class Notifications:
    def __init__(self, deps: Deps, outbox: EventOutbox, sender: EventSender, shown: ActorShown = "pseudonym") -> None:
        self.deps, self.outbox, self.sender, self.shown = deps, outbox, sender, shown

    def deliver_pending(self, limit: int = 100) -> int:
        """Send what waits, up to ``limit`` events; how many were delivered. Raises the sender's
        :class:`~episodic.application.ports.DeliveryError` when the receiver did not take them."""
        entries = self.outbox.pending(limit)
        events = [e for e in (self.event(entry.record) for entry in entries) if e is not None]
        if events:
            self.sender.send(events)
        if entries:
            self.outbox.delivered(entries[-1].position)
        return len(events)

    def event(self, record: AuditRecord) -> MemoryEvent | None:
        actor_id = None
        if self.shown == "id" and record.event_id:
            episode = self.deps.episodes.get(record.tenant_id, record.event_id)
            actor_id = episode.actor_id if episode is not None else None
        return event_of(record, actor_id, self.shown)

"""The ports of memory events going out: where changes wait to be told, and who tells them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from episodic.domain.model import AuditRecord, MemoryEvent


@dataclass(frozen=True)
class OutboxEntry:
    """A change waiting to be told: its audit record, at its place in commit order."""

    position: int
    record: AuditRecord


class EventOutbox(Protocol):
    """The audit records of changes not yet told, in the order they committed. The audit log is
    the outbox: a record commits with its change, so nothing is told of a change that did not
    commit, and nothing committed is lost before it is told."""

    def pending(self, limit: int) -> list[OutboxEntry]:
        """The next records past the last one delivered (event actions only), oldest first."""
        ...

    def delivered(self, position: int) -> None:
        """Everything up to ``position`` has been told."""
        ...


class DeliveryError(Exception):
    """The receiver did not take the events (unreachable, or it answered other than 2xx): they
    are sent again later, with the same ids."""


class EventSender(Protocol):
    """Tells business systems (a webhook locally, EventBridge in AWS)."""

    def send(self, events: Sequence[MemoryEvent]) -> None:
        """Deliver ``events`` in order, or raise :class:`DeliveryError` (none of them counts as told)."""
        ...

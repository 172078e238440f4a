"""Memory events to an EventBridge bus (``PutEvents``), ten to a call.

Every entry has ``Source`` :data:`~episodic.domain.model.EVENT_SOURCE` (``episodic.memory``),
``DetailType`` the event type (``episode.written``...) and ``Detail`` the event's JSON (its ``id``
the change's audit id, the same on a redelivery), so a rule matches on either. An entry
EventBridge did not take fails the whole call: the stream delivers the record again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from episodic.application.ports import DeliveryError
from episodic.domain.model import EVENT_SOURCE, MemoryEvent

ENTRIES_PER_CALL = 10


class EventBridgeSender:
    def __init__(self, client: Any, bus: str) -> None:
        self.client, self.bus = client, bus

    def send(self, events: Sequence[MemoryEvent]) -> None:
        for start in range(0, len(events), ENTRIES_PER_CALL):
            entries = [
                {"Source": EVENT_SOURCE, "DetailType": e.type.value, "Detail": e.model_dump_json(by_alias=True),
                 "EventBusName": self.bus, "Time": e.at}
                for e in events[start : start + ENTRIES_PER_CALL]
            ]  # fmt: skip
            try:
                answer = self.client.put_events(Entries=entries)
            except (ClientError, BotoCoreError) as exc:
                raise DeliveryError(f"EventBridge PutEvents failed ({type(exc).__name__})") from exc
            if answer.get("FailedEntryCount"):
                raise DeliveryError(f"EventBridge refused {answer['FailedEntryCount']} of {len(entries)} events")

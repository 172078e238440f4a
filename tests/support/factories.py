"""Builders for proposals and callers, so tests state only what matters to them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.model import Caller, EpisodeProposal, Role

AGENT = Caller(tenant_id="acme", role=Role.AGENT, principal_id="agent:acme")
OPERATOR = Caller(tenant_id="acme", role=Role.OPERATOR, principal_id="operator:acme")
OTHER_TENANT_AGENT = Caller(tenant_id="globex", role=Role.AGENT, principal_id="agent:globex")
PSEUDONYMS = Pseudonyms(bytes(range(32)))
"""A fixed key's pseudonyms, for archives and use cases built without a store's own key."""


def proposal_dict(**overrides: Any) -> dict[str, Any]:
    """A memorable, well-formed proposal in wire (camelCase) form."""
    body: dict[str, Any] = {
        "eventType": "user_preference_stated",
        "actorId": "user-1",
        "occurredAt": "2026-11-28T09:30:00Z",
        "summary": "User prefers invoices as PDF attachments sent to the finance mailbox",
        "sourceRefs": ["conversation:c-1/turn:3"],
        "sourceTrust": "user_provided",
        "confidence": "high",
        "importance": 0.7,
        "tags": ["billing"],
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not None}


def proposal(**overrides: Any) -> EpisodeProposal:
    return EpisodeProposal.model_validate(proposal_dict(**overrides))


def at(day: int, hour: int = 12) -> str:
    return datetime(2026, 11, day, hour, tzinfo=UTC).isoformat()


TURNS_START = datetime(2026, 11, 28, 9, tzinfo=UTC)
"""When the turns :func:`remember_turn` writes begin."""


def remember_turn(writes: Any, summary: str, minute: int = 0, session: str | None = "s-1", **extra: Any) -> str:
    """Write one ``conversation_turn`` as the agent, ``minute`` minutes after :data:`TURNS_START`,
    and return its event id (the policy must allow it)."""
    result = writes.remember(
        AGENT,
        proposal(
            eventType="conversation_turn",
            sessionId=session,
            summary=summary,
            occurredAt=(TURNS_START + timedelta(minutes=minute)).isoformat(),
            **extra,
        ),
    )
    assert result.decision == "allow", result.reasons
    return str(result.event_id)

"""The conversation path: a session's turns in, episodes and a handoff summary out.

Agents mostly have conversations, not tidy events. ``POST /v1/sessions/{sessionId}/turns``
takes turns as they happened (speaker, text, time, turn id) and the service turns them into
``conversation_turn`` episodes: what is worth remembering is kept with its provenance (the
turn id in ``sourceRefs``, the session in ``sessionId``), pleasantries are left out by the
write policy, and at the end of a session a handoff summary -- what the next session starts
from -- cites the turns it came from.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, field_validator

from episodic.domain.model.episode import CamelModel, Decision, Id, PrivacyClass, UtcDatetime
from episodic.domain.model.messages import SentenceJudgement

MAX_TURNS = 100


class Turn(CamelModel):
    """One message of a conversation, as the agent saw it."""

    turn_id: Id = Field(description="The caller's id of the turn; kept as the episode's sourceRefs")
    speaker: Id = Field(description="Who said it: the episode's actorId")
    text: Annotated[str, Field(min_length=1, max_length=4000)]
    occurred_at: UtcDatetime
    role: Literal["user", "assistant", "other"] = Field(
        default="user", description="The speaker's part: the agent's own turns are `assistant`"
    )
    privacy_class: PrivacyClass = PrivacyClass.INTERNAL

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        """A turn of whitespace says nothing and cannot become an episode: refused with the
        request (422), as a blank episode summary is, not half-way through the session."""
        if not text.strip():
            raise ValueError("text must not be blank")
        return text


class TurnsRequest(CamelModel):
    turns: Annotated[list[Turn], Field(min_length=1, max_length=MAX_TURNS)]
    end_session: StrictBool = Field(default=False, description="Write the session's handoff summary after these turns")
    project_id: Id | None = None


class TurnResult(CamelModel):
    """What the write policy did with one turn (``deny`` with ``not_memorable`` for small talk)."""

    turn_id: str
    decision: Decision
    reasons: list[str]
    event_id: str | None = None
    review_id: str | None = None
    sentences: list[SentenceJudgement] = []
    suggested_privacy_class: PrivacyClass | None = None


class SessionHandoff(CamelModel):
    """The session's summary for the next session: a ``session_summary`` episode citing its turns."""

    decision: Decision
    reasons: list[str]
    event_id: str | None = None
    summary: str | None = None
    cited_turn_ids: list[str] = []


class TurnsResult(CamelModel):
    session_id: str
    turns: list[TurnResult]
    kept: int = Field(description="Turns stored (allowed or held for review)")
    handoff: SessionHandoff | None = None

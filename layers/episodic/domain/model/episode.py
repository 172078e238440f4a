"""The episode: the vocabulary it is written in, what a caller proposes and what is stored.

An *episode* is one remembered event. Two shapes matter:

* :class:`EpisodeProposal` is what a caller (agent, workflow, business system) proposes.
  Fields whose absence makes the proposal "not an episode" (actor, occurrence time,
  source) are optional *here* on purpose: the write policy, not the schema, rejects
  them, so the refusal is audited with a reason code like every other decision.
* :class:`Episode` is what the store holds once the policy allowed (or sent to review)
  a proposal: every governance field is filled in.

JSON is camelCase; Python attributes are snake_case. Datetimes must carry a timezone
(naive ones are rejected with a clear message) and are normalised to UTC.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    Strict,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel


def _to_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is before the first representable instant
        raise ValueError("the datetime is outside the representable range once converted to UTC") from None


def iso_text(value: Any) -> Any:
    """``value``, unless it is a number or a numeral: pydantic would read one as seconds or as
    milliseconds since 1970, by its size (``-62135596800``, the year 1 in seconds, became 1968). A
    time is written in ISO 8601, with its timezone."""
    numeral = isinstance(value, str) and value.strip().lstrip("+-").replace(".", "", 1).isdigit()
    if numeral or (isinstance(value, int | float) and not isinstance(value, bool)):
        raise ValueError("a time is ISO 8601 text with its timezone (2026-12-06T10:00:00Z), not a number")
    return value


UtcDatetime = Annotated[AwareDatetime, BeforeValidator(iso_text), AfterValidator(_to_utc)]
"""A timezone-aware datetime in ISO 8601, normalised to UTC. Naive datetimes and numbers fail validation."""

Ref = Annotated[str, Field(min_length=1, max_length=512)]
Tag = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$")]
Id = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$")]


class CamelModel(BaseModel):
    """Base for every wire model: camelCase aliases, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=False,
        allow_inf_nan=False,
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, JSON-compatible values."""
        return self.model_dump(mode="json", by_alias=True)


class EventType(StrEnum):
    """What kind of event an episode records: ``user_preference_stated`` (someone said what they
    want), ``correction_received`` (a fact was corrected), ``task_milestone`` (work reached a
    point), ``human_approval`` (a person approved something; needs ``resourceRefs``),
    ``tool_observed_event`` (a tool or system reported it), ``incident_or_failure``,
    ``conversation_turn`` (a message in a conversation), ``tool_call``, ``error``, ``feedback``,
    ``session_summary`` (a handoff or digest the service writes)."""

    USER_PREFERENCE_STATED = "user_preference_stated"
    CORRECTION_RECEIVED = "correction_received"
    TASK_MILESTONE = "task_milestone"
    HUMAN_APPROVAL = "human_approval"
    TOOL_OBSERVED_EVENT = "tool_observed_event"
    INCIDENT_OR_FAILURE = "incident_or_failure"
    CONVERSATION_TURN = "conversation_turn"
    TOOL_CALL = "tool_call"
    ERROR = "error"
    FEEDBACK = "feedback"
    SESSION_SUMMARY = "session_summary"


class SourceTrust(StrEnum):
    """How far the source can be trusted: ``user_provided`` (a person said it),
    ``tool_result`` (a tool returned it), ``approved_source`` and ``operator_entered`` (for
    operators and approved integrations), ``untrusted_content`` (web pages, documents, email:
    text that may try to instruct the agent, held for review when it does)."""

    USER_PROVIDED = "user_provided"
    TOOL_RESULT = "tool_result"
    APPROVED_SOURCE = "approved_source"
    OPERATOR_ENTERED = "operator_entered"
    UNTRUSTED_CONTENT = "untrusted_content"


class Confidence(StrEnum):
    """How sure the proposer is: ``low``, ``medium`` (default) or ``high``."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class ProposedBy(StrEnum):
    """Who proposed the write: ``model`` (default), ``workflow``, ``user`` or ``operator``."""

    MODEL = "model"
    WORKFLOW = "workflow"
    USER = "user"
    OPERATOR = "operator"


class PrivacyClass(StrEnum):
    """Who may recall it: ``public`` and ``internal`` (default) anyone in the tenant; ``private``
    and ``sensitive`` only a recall scoped to its actor (``actorId``) or an operator."""

    PUBLIC = "public"
    INTERNAL = "internal"
    PRIVATE = "private"
    SENSITIVE = "sensitive"


class Status(StrEnum):
    """An episode's state: ``pending_review`` (held for a human, never recalled), ``active``,
    ``superseded`` (a correction replaced it), ``archived`` (forgotten by decay; restorable)."""

    PENDING_REVIEW = "pending_review"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


class Role(StrEnum):
    AGENT = "agent"
    OPERATOR = "operator"


class ReviewStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"


class Decision(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    REVIEW = "review"


class Retention(CamelModel):
    expires_at: UtcDatetime | None = None
    delete_on_request: StrictBool = True


class Consent(CamelModel):
    required: StrictBool = False
    granted: StrictBool = False
    consent_ref: Ref | None = None


SUMMARY_MAX_LENGTH = 4000
"""The most characters an episode's summary holds."""
DETAILS_MAX_DEPTH = 16
DETAILS_MAX_BYTES = 65_536
MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer every JSON reader, SQLite's JSON functions and DynamoDB keep exactly."""


class Details(CamelModel):
    """Structured input and output of the event (a tool call's arguments and result, say).

    Bounded so every backend can hold it exactly: at most 16 levels deep, 64 KiB as JSON,
    integers within +-(2**53 - 1) and finite floats only."""

    input: dict[str, JsonValue] | None = None
    output: dict[str, JsonValue] | None = None

    @model_validator(mode="after")
    def _bounded(self) -> Details:
        for part in (self.input, self.output):
            _check_json_value(part, depth=1)
        size = len(json.dumps([self.input, self.output], ensure_ascii=False).encode())
        if size > DETAILS_MAX_BYTES:
            raise ValueError(f"details must be at most {DETAILS_MAX_BYTES} bytes as JSON (got {size})")
        return self


def _check_json_value(value: Any, depth: int) -> None:
    """Iterative, so a hostile nesting depth cannot exhaust the stack while being measured."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if level > DETAILS_MAX_DEPTH:
                raise ValueError(f"details may nest at most {DETAILS_MAX_DEPTH} levels deep")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        elif isinstance(item, int) and abs(item) > MAX_SAFE_INTEGER:
            raise ValueError(f"integers in details must be within +-{MAX_SAFE_INTEGER}")
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError("numbers in details must be finite")


class DecisionNote(CamelModel):
    """A decision the agent or a human took, with how sure they were."""

    action: Annotated[str, Field(min_length=1, max_length=500)]
    confidence: Annotated[float, Strict(), Field(ge=0.0, le=1.0)]
    rationale: Annotated[str, Field(max_length=2000)] | None = None


class _EpisodeContent(CamelModel):
    """Fields shared by proposals and stored episodes."""

    event_type: EventType = Field(examples=["user_preference_stated"])
    project_id: Id | None = Field(default=None, description="The project it belongs to (a recall filter)")
    agent_id: Id | None = Field(default=None, description="The agent that observed it")
    session_id: Id | None = Field(default=None, description="The conversation or session it happened in")
    resource_refs: Annotated[list[Ref], Field(max_length=50)] = Field(
        default=[], description="What it is about: tickets, files, records (required for human_approval)"
    )
    summary: Annotated[str, Field(min_length=1, max_length=SUMMARY_MAX_LENGTH)] = Field(
        description="What happened, in plain words: the text that is judged, indexed and recalled",
        examples=["Customer wants invoices as PDF, in Portuguese"],
    )
    details: Details | None = None
    tags: Annotated[list[Tag], Field(max_length=32)] = Field(
        default=[], description="Labels to filter by (case-insensitive)", examples=[["billing"]]
    )
    decisions: Annotated[list[DecisionNote], Field(max_length=20)] = []
    outcome: Annotated[str, Field(max_length=2000)] | None = None
    success: StrictBool | None = None
    duration_ms: Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INTEGER)] | None = None
    confidence: Confidence = Confidence.MEDIUM
    importance: Annotated[float, Strict(), Field(ge=0.0, le=1.0)] = Field(
        default=0.5, description="0 to 1: weighs in ranking and in how long it is kept"
    )
    proposed_by: ProposedBy = ProposedBy.MODEL
    privacy_class: PrivacyClass = PrivacyClass.INTERNAL
    retention: Retention = Retention()
    consent: Consent = Consent()
    supersedes_event_ids: Annotated[list[Id], Field(max_length=20)] = []
    correction_path: Annotated[str, Field(max_length=1000)] | None = None

    @field_validator("tags")
    @classmethod
    def _normalise_tags(cls, tags: list[str]) -> list[str]:
        """Tags are case-insensitive labels: store them lower-cased and de-duplicated, in order."""
        seen: dict[str, None] = {}
        for tag in tags:
            seen.setdefault(tag.lower(), None)
        return list(seen)

    @field_validator("summary")
    @classmethod
    def _strip_summary(cls, summary: str) -> str:
        stripped = summary.strip()
        if not stripped:
            raise ValueError("summary must not be blank")
        return stripped


class EpisodeProposal(_EpisodeContent):
    """What a caller proposes to remember. The runtime decides whether it is written."""

    actor_id: Id | None = Field(
        default=None, description="Whom it is about (a person, a customer, a bot); required", examples=["customer-42"]
    )
    tenant_id: Id | None = Field(
        default=None,
        description="Optional. The tenant always comes from the caller's credentials; "
        "a proposal naming another tenant is refused with 403.",
    )
    occurred_at: UtcDatetime | None = Field(
        default=None, description="When it happened, with a timezone; required", examples=["2026-11-28T09:30:00Z"]
    )
    source_refs: Annotated[list[Ref], Field(max_length=50)] = Field(
        default=[],
        description="Where it was seen (a chat turn, a ticket, a URL); required with sourceTrust",
        examples=[["chat:session-9/turn-4"]],
    )
    source_trust: SourceTrust | None = Field(default=None, description="Required", examples=["user_provided"])


class Episode(_EpisodeContent):
    """A stored episode: a proposal the policy accepted, with its governance state."""

    event_id: Id
    tenant_id: Id
    actor_id: Id
    occurred_at: UtcDatetime
    recorded_at: UtcDatetime
    source_refs: Annotated[list[Ref], Field(min_length=1)]
    source_trust: SourceTrust
    policy_version: str
    status: Status = Status.ACTIVE
    access_count: Annotated[int, Field(ge=0)] = 0
    last_accessed_at: UtcDatetime | None = None
    feedback_score: Annotated[float, Field(ge=-1.0, le=1.0)] = 0.0
    feedback_count: Annotated[int, Field(ge=0)] = 0
    retention_score: Annotated[float, Field(ge=0.0, le=10.0)] = 5.0

    SEARCH_TEXT_VERSION: ClassVar[int] = 2
    """Bumped whenever :meth:`search_text` changes shape (2: who and when lead), so a store can
    re-index text written by an earlier version."""

    def search_text(self) -> str:
        """The text the lexical index and the embedder see: who and when, then summary, outcome,
        tags, details.

        The actor and the month lead because people ask about someone at some time ("what did
        Dana plan for September?") while a turn rarely names its own speaker or date: on the
        conversation benchmark's dev split this context raised evidence recall@10 by about 0.08
        (see the README). Nothing is copied in from another episode."""
        when = f"{_MONTHS[self.occurred_at.month - 1]} {self.occurred_at.year}"  # not %B: locale-free
        parts = [f"{self.actor_id} ({when}): {self.summary}"]
        if self.outcome:
            parts.append(self.outcome)
        if self.tags:
            parts.append(" ".join(self.tags))
        if self.details is not None:
            parts.extend(_flatten_strings(self.details.model_dump(mode="json")))
        return "\n".join(parts)

    def is_expired(self, now: datetime) -> bool:
        expires = self.retention.expires_at
        return expires is not None and expires <= now


_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def _flatten_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _flatten_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _flatten_strings(v)]
    return []

"""The calls around episodes: who calls (:class:`Caller`), what the policy decided, what a
write, a recall, a review, an audit query and a timeline page give back (pydantic v2, camelCase JSON)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Literal, Protocol

from pydantic import Field, StrictBool, StrictInt, field_validator

from episodic.domain.model.episode import (
    CamelModel,
    Decision,
    Episode,
    EventType,
    Id,
    PrivacyClass,
    ProposedBy,
    ReviewStatus,
    Role,
    Status,
    Tag,
    UtcDatetime,
)

MAX_BOUND_ACTORS = 50
"""The most actors one credential may be bound to."""


class Caller(CamelModel):
    """Who is calling, as established by the authorizer. Never taken from a request body.

    ``actors`` is whom the credential may act for. ``None`` is a tenant-wide credential (a
    trusted backend that serves many people of the tenant and says per request whom it serves);
    a list binds it: it writes, corrects, erases and votes only for those actors, and reads the
    private and sensitive episodes of nobody else."""

    tenant_id: Id
    role: Role
    principal_id: Annotated[str, Field(min_length=1, max_length=256)]
    actors: Annotated[tuple[Id, ...], Field(min_length=1, max_length=MAX_BOUND_ACTORS)] | None = Field(
        default=None,
        description="The actors this credential may act for; absent: every actor of the tenant.",
    )
    provenance: ProposedBy | None = Field(
        default=None,
        description="Where this caller's proposals come from, as its credentials vouch: set only by trusted "
        "entry points (the summarisation workflow, EventBridge ingestion). Without it an agent's proposals "
        "are the model's, whatever they claim; an operator's are taken as claimed.",
    )

    @property
    def is_operator(self) -> bool:
        return self.role is Role.OPERATOR

    @property
    def is_bound(self) -> bool:
        """Whether the credential acts for named actors only."""
        return self.actors is not None

    def covers(self, actor_id: str | None) -> bool:
        """Whether this caller may act for ``actor_id`` (an unbound credential acts for anyone)."""
        return self.actors is None or actor_id in self.actors

    @field_validator("actors")
    @classmethod
    def _distinct(cls, actors: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if actors is None else tuple(dict.fromkeys(actors))


class Redaction(CamelModel):
    field: str
    kind: str


class SentenceJudgement(CamelModel):
    """How the policy judged one sentence of a summary (by position: the text stays out of the
    audit log): ``memorable`` or ``chatter``, and the sign it went by."""

    index: int
    verdict: Literal["memorable", "chatter"]
    why: str


class PolicyDecision(CamelModel):
    """The policy's verdict on one proposal, with every reason code that led to it."""

    decision: Decision
    reasons: list[str]
    policy_version: str
    redactions: list[Redaction] = []
    sentences: list[SentenceJudgement] = Field(
        default=[], description="Each sentence of the summary as judged for memorability (free-text proposals)."
    )
    suggested_privacy_class: PrivacyClass | None = Field(
        default=None,
        description="A stricter privacy class the content calls for (a sensitive disclosure): the episode is "
        "stored at least private; propose it as sensitive, with consent and an expiry, for the sensitive rules.",
    )


class RememberResult(CamelModel):
    """Outcome of one write: the stored episode (allow), the review (review) or the reason (deny)."""

    decision: Decision
    reasons: list[str]
    policy_version: str
    redactions: list[Redaction] = []
    sentences: list[SentenceJudgement] = []
    suggested_privacy_class: PrivacyClass | None = None
    event_id: str | None = None
    review_id: str | None = None
    status: Status | None = None
    episode: Episode | None = None

    @property
    def reason(self) -> str:
        return ",".join(self.reasons)


class ScopeFilters(Protocol):
    """The filters a read is scoped by, as every read request carries them (a recall's body, a
    timeline's query): the one shape :func:`~episodic.application.usecases.reads.scope_for` reads."""

    @property
    def actor_id(self) -> str | None: ...
    @property
    def project_id(self) -> str | None: ...
    @property
    def event_types(self) -> Sequence[EventType]: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def occurred_after(self) -> datetime | None: ...
    @property
    def occurred_before(self) -> datetime | None: ...
    @property
    def statuses(self) -> Sequence[Status]: ...


class TimelineRequest(CamelModel):
    """A page of the timeline: the scope's filters (:class:`ScopeFilters`), then the page.

    Values arrive validated by the route (``GET /v1/timeline``'s query) or come from the use
    cases themselves, so the filters are as lenient as a scope: an actor id that names nobody
    admits nothing."""

    actor_id: str | None = None
    project_id: str | None = None
    event_types: list[EventType] = []
    tags: list[str] = []
    occurred_after: UtcDatetime | None = None
    occurred_before: UtcDatetime | None = None
    statuses: list[Status] = [Status.ACTIVE]
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    cursor: str | None = None
    newest_first: bool = True


class RecallRequest(CamelModel):
    """Scope first (every filter applies before ranking), then an optional query to rank by."""

    query: Annotated[str, Field(max_length=2000)] | None = Field(
        default=None,
        description="What to look for, in plain words; time phrases ('last week') become a window. "
        "Without one, the scope's episodes come back newest first",
        examples=["how should we send the invoice?"],
    )
    actor_id: Id | None = Field(
        default=None,
        description="Only this actor's episodes (and then their private ones too)",
        examples=["customer-42"],
    )
    project_id: Id | None = Field(default=None, description="Only this project's episodes")
    event_types: list[EventType] = Field(default=[], description="Only these kinds (any, when empty)")
    tags: Annotated[list[Tag], Field(max_length=16)] = Field(default=[], description="Only episodes with every tag")
    occurred_after: UtcDatetime | None = Field(default=None, description="occurredAt >= this (timezone required)")
    occurred_before: UtcDatetime | None = Field(default=None, description="occurredAt < this (timezone required)")
    statuses: list[Status] = Field(
        default=[Status.ACTIVE], description="Which states to search (superseded and archived on request)"
    )
    limit: Annotated[StrictInt, Field(ge=1, le=100)] = Field(default=10, description="At most this many items")
    neighbours: Annotated[StrictInt, Field(ge=0, le=3)] = Field(
        default=1,
        description="For a recalled conversation turn, how many turns before and after it in the same "
        "session to attach as context (0 to turn off).",
    )
    interpret: StrictBool = Field(
        default=True,
        description="Read time phrases ('last week', 'in October') in the query as a time window when no "
        "occurredAfter/occurredBefore is given.",
    )
    widen: StrictBool = Field(
        default=True,
        description="A second round for questions whose answer needs more than one fact: the names the "
        "three best items mention (people, places, things the query does not name) are added to the query "
        "and each item's relevance is the mean of both rounds (shown as components.widened).",
    )
    count_access: StrictBool = Field(
        default=True,
        description="Whether serving these items counts as their use (accessCount, lastAccessedAt), which "
        "slows their relevance decay. The operator console's search passes false: looking at memories is "
        "not using them. The recall is audited either way.",
    )

    @field_validator("tags")
    @classmethod
    def _lower_tags(cls, tags: list[str]) -> list[str]:
        return [t.lower() for t in tags]

    @field_validator("statuses")
    @classmethod
    def _never_pending(cls, statuses: list[Status]) -> list[Status]:
        if Status.PENDING_REVIEW in statuses:
            raise ValueError("pending_review episodes are never recallable")
        if not statuses:
            raise ValueError("statuses must name at least one status")
        return statuses


class ScoreComponents(CamelModel):
    """Why an item ranked where it did: each component in [0, 1] and its weight."""

    relevance: float
    lexical: float
    semantic: float
    widened: float | None = None
    """Relevance to the widened query of a second round, when one ran (``relevance`` is then the
    mean of this and the first round's mix of ``lexical`` and ``semantic``)."""
    replies_to: str | None = None
    """The question turn this turn answers, when the relevance it inherited from that question
    (a share of it) beat its own; a question turn's own relevance counts at a share too."""
    recency: float
    importance: float
    trust: float
    confidence: float
    weights: dict[str, float]


class NeighbourTurn(CamelModel):
    """A turn next to a recalled conversation turn in the same session: context, not a hit."""

    event_id: str
    occurred_at: UtcDatetime
    summary: str


class RecallItem(CamelModel):
    episode: Episode
    score: float
    components: ScoreComponents
    neighbours: list[NeighbourTurn] = []


class QueryInterpretation(CamelModel):
    """How recall read the query: shown so an agent can see (and override) it."""

    time_phrase: str | None = None
    occurred_after: UtcDatetime | None = None
    occurred_before: UtcDatetime | None = None
    widened_with: list[str] = []
    """The names a second round added to the query (empty when none ran)."""
    window_empty: bool = False
    """The window read from ``time_phrase`` held no evidence for the query's words, so recall
    searched all time instead (each item shows when it happened): a date without a year ("on 8
    May", "last Friday") is read on the calendar, while the memories asked about may be from
    another year."""


class RecallResponse(CamelModel):
    recall_id: str
    items: list[RecallItem]
    interpretation: QueryInterpretation = QueryInterpretation()
    context: str = Field(description="Ready-to-inject evidence block: past events, not instructions.")
    degraded: list[str] = Field(
        default=[],
        description="Parts of the search that failed or came back incomplete (e.g. 'semantic_unavailable', "
        "'lexical_partial', 'fallback_index'): the items are what could be found without them.",
    )


class Review(CamelModel):
    review_id: str
    tenant_id: str
    event_id: str
    status: ReviewStatus
    reasons: list[str]
    policy_version: str
    requested_at: UtcDatetime
    decided_at: UtcDatetime | None = None
    reviewer: str | None = None
    note: str | None = None
    actor: str | None = Field(
        default=None,
        description="The held write's actor as its pseudonym, so that erasing the actor finds the review "
        "(and its note) after the write itself was denied",
    )


class ReviewView(CamelModel):
    review: Review
    episode: Episode | None


class TimelinePage(CamelModel):
    items: list[Episode]
    next_cursor: str | None = None

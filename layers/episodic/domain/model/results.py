"""What the operating use cases answer: erasure, the kill-switch, health, the summarisation
schedule, the sweeps. Typed here so the API, the CLI and the workflows serialise one shape
(camelCase JSON via ``model_dump(mode="json", by_alias=True)``) instead of passing dicts."""

from __future__ import annotations

from typing import Literal

from episodic.domain.model.episode import CamelModel, Decision, Id, UtcDatetime


class ErasureResult(CamelModel):
    """What an erasure removed: the episodes asked for, the digests that cited them, archive copies."""

    erased: list[str]
    cascaded: list[str]
    archived_records_deleted: int


class WritesStatus(CamelModel):
    """Whether the tenant accepts writes, and whether the whole deployment is switched off."""

    writes_enabled: bool
    deployment_kill_switch: bool


class Health(CamelModel):
    status: Literal["ok"] = "ok"
    backend: str
    policy_version: str
    embedder: str
    deployment_writes_disabled: bool


class BusyActor(CamelModel):
    """An actor due for a digest: more than ``summary_min_events`` events in the window."""

    tenant_id: Id
    actor_id: Id
    events: int
    window_start: UtcDatetime
    window_end: UtcDatetime


class DigestOutcome(BusyActor):
    """One actor's digest: the write's decision, or the failure (one actor failing does not
    stop the others)."""

    decision: Decision | None = None
    event_id: str | None = None
    reasons: list[str] | None = None
    failed: bool | None = None
    error: str | None = None


class ForgetReport(CamelModel):
    """One relevance-decay pass: what was (or, on a dry run, would be) archived, and where the
    next page starts (``None`` when the pass is complete)."""

    examined: int
    archived: list[str]
    dry_run: bool
    next_cursor: str | None


class SweepReport(CamelModel):
    """One in-process sweep: episodes forgotten on expiry, reviews timed out."""

    expired: int
    reviews_timed_out: int

    def __bool__(self) -> bool:
        """True when the sweep did something (so quiet ticks are not logged)."""
        return bool(self.expired or self.reviews_timed_out)


class DayCount(CamelModel):
    """How many of something happened on one UTC day (``label`` says what)."""

    day: str
    label: str
    count: int


class ScoreBucket(CamelModel):
    """Episodes whose retention score lies in ``[low, high)`` (the last bucket includes 10)."""

    low: float
    high: float
    count: int


class DueEpisode(CamelModel):
    """An episode that will leave recall unless something changes: its retention ends
    (``expires``, at ``due_at``) or its score has decayed below the threshold (``decays``, at the
    next decay sweep)."""

    event_id: str
    actor_id: str
    event_type: str
    why: Literal["expires", "decays"]
    due_at: UtcDatetime | None
    retention_score: float


class OperatorOverview(CamelModel):
    """One tenant at a glance, for the operator console: write decisions by reason and recalls
    per day, the retention score distribution of active episodes, and what is due to go.
    ``truncated`` says a scan stopped at its cap (the figures then cover the newest part)."""

    since: UtcDatetime
    until: UtcDatetime
    decisions: list[DayCount]
    recalls: list[DayCount]
    retention: list[ScoreBucket]
    due: list[DueEpisode]
    active_episodes: int
    pending_reviews: int
    truncated: bool

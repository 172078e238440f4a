"""The operator's view of one tenant at a glance (the console's pictures).

Everything is derived from what the service already keeps: write decisions and recalls from
the audit trail (which holds codes and hashes, never text), the retention score
distribution and what is due to go from the active timeline, scored with the same function
the decay sweep uses. Scans stop at a cap so a very large tenant still answers quickly; the
answer then says ``truncated``.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from episodic.application.ports import AuditQuery, TimelineQuery
from episodic.application.usecases.deps import Deps, require_operator
from episodic.application.usecases.reads import scope_for
from episodic.domain.forgetting.retention import retention_score
from episodic.domain.model import (
    AuditAction,
    AuditRecord,
    Caller,
    DayCount,
    DueEpisode,
    Episode,
    OperatorOverview,
    ReviewStatus,
    ScoreBucket,
)

AUDIT_CAP = 20_000
"""Audit records read at most for the decision and recall series."""

EPISODE_CAP = 10_000
"""Active episodes scored at most for the distribution and the due list."""

REVIEW_CAP = 1_000
"""Pending reviews counted at most."""

DUE_SHOWN = 50
"""The due list is the first this many, soonest first."""

DUE_WITHIN_DAYS = 7
"""An expiry this close counts as due."""

PAGE = 500

WRITE_ACTIONS = {AuditAction.EPISODE_WRITTEN: "allowed", AuditAction.EPISODE_REVIEW_REQUESTED: "review"}


class Overview:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def overview(self, caller: Caller, days: int = 14) -> OperatorOverview:
        require_operator(caller)
        now = self.deps.clock.now()
        since = now - timedelta(days=days)
        decisions, recalls, audit_truncated = self._activity(caller.tenant_id, since)
        episodes, episodes_truncated = self._active(caller, now)
        scores = [(e, retention_score(e, now, self.deps.settings.tag_weights)) for e in episodes]
        pending = self.deps.reviews.list_reviews(caller.tenant_id, ReviewStatus.PENDING, REVIEW_CAP)
        return OperatorOverview(
            since=since,
            until=now,
            decisions=_series(decisions),
            recalls=_series(recalls),
            retention=_histogram([s for _, s in scores]),
            due=self._due(scores, now),
            active_episodes=len(episodes),
            pending_reviews=len(pending),
            truncated=audit_truncated or episodes_truncated or len(pending) >= REVIEW_CAP,
        )

    def _activity(
        self, tenant_id: str, since: datetime
    ) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]], bool]:
        """Write decisions per (day, reason) -- a denial counts once per reason -- and recalls per day."""
        decisions: Counter[tuple[str, str]] = Counter()
        recalls: Counter[tuple[str, str]] = Counter()
        cursor, read = None, 0
        while read < AUDIT_CAP:
            records, cursor = self.deps.audit_log.audit(
                AuditQuery(tenant_id=tenant_id, since=since, limit=min(PAGE, AUDIT_CAP - read), cursor=cursor)
            )
            read += len(records)
            for record in records:
                _count(record, decisions, recalls)
            if cursor is None:
                return decisions, recalls, False
        return decisions, recalls, True

    def _active(self, caller: Caller, now: datetime) -> tuple[list[Episode], bool]:
        scope = scope_for(caller, now)
        episodes: list[Episode] = []
        cursor = None
        while len(episodes) < EPISODE_CAP:
            limit = min(PAGE, EPISODE_CAP - len(episodes))
            page, cursor = self.deps.episodes.timeline(TimelineQuery(scope=scope, limit=limit, cursor=cursor))
            episodes.extend(page)
            if cursor is None:
                return episodes, False
        return episodes, True

    def _due(self, scores: list[tuple[Episode, float]], now: datetime) -> list[DueEpisode]:
        """Expiring within :data:`DUE_WITHIN_DAYS`, or decayed and idle (the decay sweep's own test)."""
        settings = self.deps.settings
        idle_cutoff = now - timedelta(days=settings.decay_idle_days)
        soon = now + timedelta(days=DUE_WITHIN_DAYS)
        due: list[DueEpisode] = []
        for episode, score in scores:
            expires = episode.retention.expires_at
            if expires is not None and expires <= soon:
                due.append(_due_entry(episode, "expires", expires, score))
            elif score < settings.decay_threshold and (episode.last_accessed_at or episode.recorded_at) <= idle_cutoff:
                due.append(_due_entry(episode, "decays", None, score))
        due.sort(key=lambda d: (d.due_at is None, d.due_at or now, d.retention_score))
        return due[:DUE_SHOWN]


def _count(record: AuditRecord, decisions: Counter[tuple[str, str]], recalls: Counter[tuple[str, str]]) -> None:
    day = record.at.date().isoformat()
    if record.action is AuditAction.RECALL_SERVED:
        recalls[(day, "recalls")] += 1
    elif record.action is AuditAction.EPISODE_DENIED:
        for reason in record.reasons or ["denied"]:
            decisions[(day, f"denied: {reason}")] += 1
    elif record.action in WRITE_ACTIONS:
        decisions[(day, WRITE_ACTIONS[record.action])] += 1


def _series(counts: Counter[tuple[str, str]]) -> list[DayCount]:
    return [DayCount(day=day, label=label, count=n) for (day, label), n in sorted(counts.items())]


def _histogram(scores: list[float], buckets: int = 10, top: float = 10.0) -> list[ScoreBucket]:
    width = top / buckets
    counts = Counter(min(int(score / width), buckets - 1) for score in scores)
    return [ScoreBucket(low=i * width, high=(i + 1) * width, count=counts[i]) for i in range(buckets)]


def _due_entry(episode: Episode, why: str, at: datetime | None, score: float) -> DueEpisode:
    return DueEpisode.model_validate(
        {
            "eventId": episode.event_id,
            "actorId": episode.actor_id,
            "eventType": episode.event_type.value,
            "why": why,
            "dueAt": at,
            "retentionScore": round(score, 3),
        }
    )

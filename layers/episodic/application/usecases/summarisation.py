"""The 24-hour summarisation: a digest of at most three lines for every actor with more than
``summary_min_events`` events in a day, written as a ``session_summary`` that cites its sources
and passes the write policy like any write (see :mod:`episodic.domain.digests.rules` for what it may repeat)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from episodic.application.ports import Summariser
from episodic.application.usecases.deps import Deps, hash_text
from episodic.application.usecases.erasure import Erasure
from episodic.application.usecases.reads import Reads
from episodic.application.usecases.writes import Writes
from episodic.domain.digests.citations import cite
from episodic.domain.digests.rules import digest_privacy, digest_trust, digestible, fitted
from episodic.domain.errors import ConflictError, EpisodicError, IdempotencyConflictError, InvalidRequestError
from episodic.domain.model import (
    SUMMARY_MAX_LENGTH,
    BusyActor,
    Caller,
    Confidence,
    Decision,
    DigestOutcome,
    Episode,
    EpisodeProposal,
    EventType,
    ProposedBy,
    RememberResult,
    Retention,
    Role,
    Status,
    SystemActor,
    TimelineRequest,
)

DIGEST_TAG = "digest"
"""The tag of a daily digest (a session's handoff summary is tagged ``handoff``)."""
SUMMARY_MAX_SOURCES = 50
"""A digest cites at most this many events (the sourceRefs limit); the newest are kept."""


class Summarisation:
    def __init__(self, deps: Deps, reads: Reads, writes: Writes, erasure: Erasure) -> None:
        self.deps = deps
        self.reads = reads
        self.writes = writes
        self.erasure = erasure

    def busy_actors(self, now: datetime) -> list[BusyActor]:
        """Actors with more than ``summary_min_events`` events in the trailing 24 hours."""
        since = now - timedelta(hours=24)
        busy = self.deps.scans.busy_actors(since, now, self.deps.settings.summary_min_events + 1)
        return [BusyActor(tenant_id=t, actor_id=a, events=n, window_start=since, window_end=now) for t, a, n in busy]

    def summarise_actor(
        self, tenant_id: str, actor_id: str, window_start: datetime, window_end: datetime
    ) -> RememberResult:
        """Write a digest of one actor's window whose sourceRefs cite every event it summarises.

        An event is digested at most once: only events written after the actor's newest digest
        of the window count (one held for review included; an event written late but dated
        earlier counts too), and when too few are left that digest is the answer (reason
        ``already_digested``), so running the summarisation again writes no copy. The
        idempotency key names the events, so runs at once over the same events (two processes, a
        retried task) write one digest between them, and a digest of them that was erased or
        denied is not written again (``digest_gone``)."""
        caller = Caller(
            tenant_id=tenant_id, role=Role.AGENT, principal_id=SystemActor.SUMMARISER, provenance=ProposedBy.WORKFLOW
        )
        newest = self._newest_digest(caller, actor_id, window_start, window_end)
        sources = self._sources(caller, actor_id, window_start, window_end, newest.recorded_at if newest else None)
        if len(sources) <= self.deps.settings.summary_min_events:
            if newest is not None:
                return self._kept(newest)
            raise InvalidRequestError("too few events in the window to summarise", events=len(sources))
        proposal = self.summary_proposal(actor_id, sources, DIGEST_TAG)
        if proposal is None:
            raise InvalidRequestError("the summariser found nothing to say about the window", events=len(sources))
        events = hash_text("\n".join(sorted(e.event_id for e in sources)))
        key = f"digest:{actor_id}:{events}"  # these very events; stored hashed, like every key
        try:
            result = self.writes.remember(caller, proposal, idempotency_key=key)
        except IdempotencyConflictError:  # a concurrent run digested the same events in other words
            newest = self._newest_digest(caller, actor_id, window_start, window_end)
            if newest is None:
                raise
            return self._kept(newest)
        except ConflictError:  # their digest was erased, or denied at review: not written again
            return RememberResult(
                decision=Decision.DENY, reasons=["digest_gone"], policy_version=self.deps.policy.version
            )
        return self.unless_sources_erased(tenant_id, result, sources)

    def unless_sources_erased(self, tenant_id: str, result: RememberResult, sources: list[Episode]) -> RememberResult:
        """``result``, the write of a summary of ``sources`` -- unless a source was erased while it
        was made (read before, gone now): then the summary, which repeats it, is erased too and
        the answer is a denial (``sources_erased``). With the erasure's own second look for
        summaries written meanwhile, one of the two always sees the other."""
        if result.event_id is None or result.decision is Decision.DENY:
            return result
        present = self.deps.episodes.get_many(tenant_id, [e.event_id for e in sources])
        if len(present) == len(sources):
            return result
        self.erasure.erase_orphaned_summary(tenant_id, result.event_id)
        return RememberResult(decision=Decision.DENY, reasons=["sources_erased"], policy_version=result.policy_version)

    @staticmethod
    def _kept(digest: Episode) -> RememberResult:
        """The answer of a run that finds its events digested already."""
        return RememberResult(
            decision=Decision.ALLOW, reasons=["already_digested"], policy_version=digest.policy_version,
            event_id=digest.event_id, status=digest.status,
        )  # fmt: skip

    def _newest_digest(self, caller: Caller, actor_id: str, start: datetime, end: datetime) -> Episode | None:
        """The actor's most recently written daily digest of the window, held for review or not;
        only the summarisation's own count (an agent cannot write one)."""
        reviewer = caller.model_copy(update={"role": Role.OPERATOR})  # reads what is held for review
        cursor, newest = None, None
        while True:
            request = TimelineRequest(
                actor_id=actor_id, event_types=[EventType.SESSION_SUMMARY], tags=[DIGEST_TAG],
                statuses=[Status.ACTIVE, Status.PENDING_REVIEW], occurred_after=start, occurred_before=end,
                limit=20, cursor=cursor,
            )  # fmt: skip
            page = self.reads.timeline(reviewer, request)
            for digest in page.items:  # by time occurred, which a digest of late events may not follow
                if digest.proposed_by is ProposedBy.WORKFLOW and (
                    newest is None or digest.recorded_at > newest.recorded_at
                ):
                    newest = digest
            cursor = page.next_cursor
            if cursor is None:
                return newest

    def summary_proposal(
        self,
        actor_id: str,
        sources: list[Episode],
        tag: str,
        *,
        session_id: str | None = None,
        project_id: str | None = None,
    ) -> EpisodeProposal | None:
        """A ``session_summary`` of ``sources`` (at most three lines, cut to fit a summary) citing
        each of them, or None when the summariser has nothing to say. It repeats its sources, so it
        is as private as the most private of them, as trusted as the least trusted, and lives no
        longer than the first of them to expire."""
        lines = fitted(self.summariser().summarise(sources, max_lines=3)[:3], SUMMARY_MAX_LENGTH)
        if not lines:
            return None
        expiries = [e.retention.expires_at for e in sources if e.retention.expires_at is not None]
        return EpisodeProposal(
            event_type=EventType.SESSION_SUMMARY,
            actor_id=actor_id,
            session_id=session_id,
            project_id=project_id,
            occurred_at=max(e.occurred_at for e in sources),
            summary="\n".join(lines),
            source_refs=[cite(e.event_id) for e in sources],
            source_trust=digest_trust(sources),
            proposed_by=ProposedBy.WORKFLOW,
            confidence=Confidence.MEDIUM,
            importance=max(e.importance for e in sources),
            tags=[tag],
            privacy_class=digest_privacy(sources),
            retention=Retention(expires_at=min(expiries) if expiries else None),
        )

    def _sources(
        self, caller: Caller, actor_id: str, start: datetime, end: datetime, written_after: datetime | None = None
    ) -> list[Episode]:
        """The newest episodes of the window a digest may repeat (those written after
        ``written_after``, when given), up to its cap: pages are read until the cap is reached,
        so earlier digests, digested and sensitive episodes in the window take no source's place."""
        sources: list[Episode] = []
        cursor = None
        while len(sources) < SUMMARY_MAX_SOURCES:
            window = TimelineRequest(
                actor_id=actor_id, occurred_after=start, occurred_before=end,
                limit=SUMMARY_MAX_SOURCES + 1, cursor=cursor,
            )  # fmt: skip
            page = self.reads.timeline(caller, window)
            sources.extend(
                e for e in page.items if digestible(e) and (written_after is None or e.recorded_at > written_after)
            )
            cursor = page.next_cursor
            if cursor is None:
                break
        return sources[:SUMMARY_MAX_SOURCES]

    def summarise(self) -> list[DigestOutcome]:
        """The 24-hour summarisation, in-process: one digest per busy actor; one failure does
        not stop the others (each outcome is reported)."""
        outcomes = []
        for busy in self.busy_actors(self.deps.clock.now()):
            try:
                result = self.summarise_actor(busy.tenant_id, busy.actor_id, busy.window_start, busy.window_end)
                outcome: dict[str, Any] = {
                    "decision": result.decision,
                    "event_id": result.event_id,
                    "reasons": result.reasons,
                }
            except Exception as exc:  # reported per actor, like the Map state's Catch
                outcome = {"failed": True, "error": type(exc).__name__}
            outcomes.append(DigestOutcome(**busy.model_dump(), **outcome))
        return outcomes

    def summariser(self) -> Summariser:
        """The injected summariser (a composition without one cannot summarise)."""
        if self.deps.summariser is None:
            raise EpisodicError("no summariser is configured for this service (a composition error)")
        return self.deps.summariser

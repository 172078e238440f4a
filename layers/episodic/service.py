"""The use cases of the memory service: remember, recall, correct, erase, review, audit.

:class:`MemoryService` is the single place where the rules of the product live. Entry
points (the REST API, the CLI, later stream and workflow handlers) authenticate a
:class:`~episodic.model.Caller` and call one method; adapters behind the ports do I/O.

Invariants every method keeps:
* the tenant comes from the caller, never from a body, and every read and write is
  scoped to it; another tenant's id answers "not found";
* every policy decision and every forgetting is audited in the same atomic commit as
  the change it describes, and audit records never hold episode text (only ids, reason
  codes and content hashes);
* recall filters first (tenant, scope, status, retention, privacy) and ranks second.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ulid import ULID

from episodic.digests import digest_privacy, digestible
from episodic.errors import (
    ConflictError,
    ForbiddenError,
    IdempotencyConflictError,
    InvalidRequestError,
    NotFoundError,
    StorageError,
    WritesDisabledError,
)
from episodic.evidence import render_context
from episodic.expiry import archived_on_expiry, content_hash, expiry_detail
from episodic.model import (
    AuditRecord,
    Caller,
    Confidence,
    Decision,
    Episode,
    EpisodeProposal,
    EventType,
    NeighbourTurn,
    PolicyDecision,
    PrivacyClass,
    ProposedBy,
    QueryInterpretation,
    RecallItem,
    RecallRequest,
    RecallResponse,
    RememberResult,
    Retention,
    Review,
    ReviewView,
    Role,
    SourceTrust,
    Status,
    TimelinePage,
)
from episodic.policy import WritePolicy
from episodic.ports import (
    AuditQuery,
    Changes,
    Clock,
    ColdArchive,
    Embedder,
    IdempotencyRecord,
    NewEpisode,
    RecallIndex,
    ReviewChange,
    ReviewNotifier,
    Scope,
    StatsChange,
    StatusChange,
    Summariser,
    TimelineQuery,
    TimelineStore,
    Vector,
)
from episodic.query import hinted_actors, interpret
from episodic.ranking import Ranker
from episodic.retention import retention_score
from episodic.settings import Settings

SUMMARY_REF_PREFIX = "episode:"
"""How a summary's sourceRefs cite the episodes it was made from (``episode:<eventId>``)."""

ACTOR_SCOPED_PRIVACY = (PrivacyClass.PRIVATE, PrivacyClass.SENSITIVE)
"""Privacy classes listed or recalled only when the read is scoped to that one actor."""


def _visible_privacy(actor_id: str | None, operator: bool) -> tuple[PrivacyClass, ...]:
    if actor_id or operator:
        return tuple(PrivacyClass)
    return tuple(p for p in PrivacyClass if p not in ACTOR_SCOPED_PRIVACY)


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def _hash_text(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()


def stored_idempotency_key(key: str) -> str:
    """How an Idempotency-Key is kept: its hash (lookups need only equality)."""
    return _hash_text(key)


class _MonotonicUlid:
    """ULIDs that sort in creation order within a process, even within one millisecond.

    The audit log and the timelines order by id; plain ULIDs made in the same millisecond
    sort randomly, so an id that would not sort after the previous one is the previous + 1.
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def __call__(self, now: datetime) -> str:
        candidate = int(ULID.from_datetime(now))
        with self._lock:
            self._last = max(candidate, self._last + 1)
            return str(ULID.from_int(self._last))


_new_id = _MonotonicUlid()


@dataclass(frozen=True)
class SweepReport:
    expired: int
    reviews_timed_out: int

    def __bool__(self) -> bool:
        """True when the sweep did something (so quiet ticks are not logged)."""
        return bool(self.expired or self.reviews_timed_out)


@dataclass(frozen=True)
class ForgetReport:
    examined: int
    archived: list[str]
    dry_run: bool
    next_cursor: str | None


SUMMARY_MAX_SOURCES = 50
"""A digest cites at most this many events (the sourceRefs limit); the newest are kept."""


class MemoryService:
    def __init__(
        self,
        *,
        store: TimelineStore,
        index: RecallIndex,
        archive: ColdArchive,
        embedder: Embedder,
        notifier: ReviewNotifier,
        settings: Settings | None = None,
        policy: WritePolicy | None = None,
        clock: Clock | None = None,
        backend: str = "custom",
    ) -> None:
        self.store = store
        self.index = index
        self.archive = archive
        self.embedder = embedder
        self.notifier = notifier
        self.settings = settings or Settings()
        self.policy = policy or WritePolicy()
        self.clock = clock or SystemClock()
        self.ranker = Ranker(self.settings.ranking_weights())
        self.backend = backend
        self._erasure_lock = threading.Lock()

    # ------------------------------------------------------------------ writes

    def remember(self, caller: Caller, proposal: EpisodeProposal, idempotency_key: str | None = None) -> RememberResult:
        """Decide on one proposal and store it as the decision says."""
        return self._idempotent(caller, "remember", [proposal], idempotency_key)[0]

    def remember_batch(
        self, caller: Caller, proposals: Sequence[EpisodeProposal], idempotency_key: str | None = None
    ) -> list[RememberResult]:
        """Decide and store each proposal independently; embeddings are computed in one batch."""
        if not 1 <= len(proposals) <= 100:
            raise InvalidRequestError("a batch holds between 1 and 100 episodes", count=len(proposals))
        return self._idempotent(caller, "batch", list(proposals), idempotency_key)

    def correct(
        self,
        caller: Caller,
        event_id: str,
        proposal: EpisodeProposal,
        idempotency_key: str | None = None,
    ) -> RememberResult:
        """Write a superseding episode; the old one becomes ``superseded`` in the same commit."""
        old = self._get_visible(caller, event_id)
        if old.status is not Status.ACTIVE:
            raise ConflictError(f"episode {event_id} is {old.status.value}, only active episodes can be corrected")
        supersedes = list(dict.fromkeys([event_id, *proposal.supersedes_event_ids]))
        proposal = proposal.model_copy(
            update={
                "supersedes_event_ids": supersedes,
                "actor_id": proposal.actor_id or old.actor_id,
                "correction_path": proposal.correction_path or f"corrects {event_id}",
            }
        )
        return self.remember(caller, proposal, idempotency_key)

    def _idempotent(
        self,
        caller: Caller,
        kind: str,
        proposals: list[EpisodeProposal],
        key: str | None,
    ) -> list[RememberResult]:
        """Same key and body: the first result again, nothing new stored. Same key, other body: 409.

        Every item carries its own idempotency record, committed atomically with that item's
        writes (a batch item's key is the request key plus its position). A retry after a
        crash mid-batch therefore replays what was done and writes only what was not, on
        any backend, without needing one transaction for the whole batch. Keys are stored
        hashed: a caller may put anything in one, an actor's name included, and the record
        outlives an erasure of that actor.
        """
        self._check_writes(caller)
        for proposal in proposals:
            if proposal.tenant_id is not None and proposal.tenant_id != caller.tenant_id:
                raise ForbiddenError("the episode names a tenant other than the caller's")
        if key is None:
            return self._write(caller, proposals, [None] * len(proposals))
        if not 1 <= len(key) <= 255:
            raise InvalidRequestError("Idempotency-Key must be 1 to 255 characters")
        body = json.dumps([p.to_json_dict() for p in proposals], sort_keys=True, separators=(",", ":"))
        request_hash = _hash_text(f"{kind}\n{body}")
        item_keys = [key] if kind == "remember" else [f"{key}\x1f{i}" for i in range(len(proposals))]
        item_keys = [stored_idempotency_key(k) for k in item_keys]
        results: list[RememberResult | None] = []
        for item_key in item_keys:
            previous = self.store.find_idempotency(caller.tenant_id, item_key)
            results.append(None if previous is None else self._replayed(caller, previous, request_hash, kind))
        pending = [i for i, r in enumerate(results) if r is None]
        if pending:
            written = self._write(
                caller,
                [proposals[i] for i in pending],
                [(item_keys[i], request_hash, kind) for i in pending],
            )
            for i, result in zip(pending, written, strict=True):
                results[i] = result
        return [r for r in results if r is not None]

    def _replayed(self, caller: Caller, previous: IdempotencyRecord, request_hash: str, kind: str) -> RememberResult:
        """The earlier result. A single write shows its episode as it is now; one erased since
        cannot be replayed (batch results never carry the episode, so they replay as stored)."""
        if previous.request_hash != request_hash:
            raise IdempotencyConflictError("this Idempotency-Key was already used with a different request body")
        result = RememberResult.model_validate(previous.result)
        if kind != "remember" or result.decision is not Decision.ALLOW or result.event_id is None:
            return result
        episode = self.store.get(caller.tenant_id, result.event_id)
        if episode is None:
            raise ConflictError(
                "the episode written with this Idempotency-Key has since been erased; use a new key to write again",
                eventId=result.event_id,
            )
        return result.model_copy(update={"episode": episode, "status": episode.status})

    def _check_writes(self, caller: Caller) -> None:
        if self.settings.writes_disabled or not self.store.writes_enabled(caller.tenant_id):
            raise WritesDisabledError("writes are disabled by an operator; recall still works")

    def _write(
        self,
        caller: Caller,
        proposals: list[EpisodeProposal],
        keys: Sequence[tuple[str, str, str] | None],
    ) -> list[RememberResult]:
        """Decide every proposal, embed the storable ones in one batch, commit each item atomically."""
        now = self.clock.now()
        judged = [self.policy.decide(p, caller, now, self._superseded(caller, p)) for p in proposals]
        storable = [
            (i, self._build_episode(caller, p, d, now))
            for i, (d, p) in enumerate(judged)
            if d.decision is not Decision.DENY
        ]
        vectors = self.embedder.embed([ep.search_text() for _, ep in storable]) if storable else []
        by_index = {i: (ep, vec) for (i, ep), vec in zip(storable, vectors, strict=True)}

        results: list[RememberResult] = []
        requested: list[tuple[Review, Episode]] = []
        for i, (decision, _) in enumerate(judged):
            changes = Changes(tenant_id=caller.tenant_id)
            if i in by_index:
                episode, vector = by_index[i]
                try:
                    result = self._stage_store(caller, decision, episode, vector, changes, now)
                except InvalidRequestError as exc:
                    if len(proposals) == 1:
                        raise
                    changes = Changes(tenant_id=caller.tenant_id)
                    result = RememberResult(
                        decision=Decision.DENY,
                        reasons=["invalid_reference", *exc.details.get("eventIds", [])],
                        policy_version=decision.policy_version,
                    )
            else:
                changes.audit.append(self._audit(caller, "episode.denied", now, None, decision))
                result = RememberResult(
                    decision=decision.decision,
                    reasons=decision.reasons,
                    policy_version=decision.policy_version,
                    redactions=decision.redactions,
                )
            key = keys[i]
            if key is not None:
                changes.idempotency = IdempotencyRecord(
                    tenant_id=caller.tenant_id,
                    key=key[0],
                    request_hash=key[1],
                    # Decision and ids only, never the episode's text: erasure must leave no copy here.
                    result=result.model_copy(update={"episode": None}).to_json_dict(),
                    created_at=now,
                )
            committed = self._commit_item(caller, changes, result, key, single=len(proposals) == 1)
            results.append(committed)
            if committed is result and changes.reviews_put and result.episode is not None:
                requested.append((changes.reviews_put[0], result.episode))  # a replay was notified before
        for review, episode in requested:
            self.notifier.review_requested(review, episode)
        return results

    def _superseded(self, caller: Caller, proposal: EpisodeProposal) -> list[Episode]:
        """The stored episodes a proposal would supersede (the policy judges whether it may)."""
        if not proposal.supersedes_event_ids:
            return []
        return list(self.store.get_many(caller.tenant_id, proposal.supersedes_event_ids).values())

    def _commit_item(
        self,
        caller: Caller,
        changes: Changes,
        result: RememberResult,
        key: tuple[str, str, str] | None,
        single: bool,
    ) -> RememberResult:
        try:
            self.store.apply(changes)
            return result
        except ConflictError:
            if key is not None:
                # A concurrent request with the same key committed first: answer with its result.
                previous = self.store.find_idempotency(caller.tenant_id, key[0])
                if previous is not None:
                    return self._replayed(caller, previous, key[1], key[2])
            if single:
                raise
            # Items are independent: a stale supersede fails this item only.
            return RememberResult(
                decision=Decision.DENY,
                reasons=["conflict", *result.reasons],
                policy_version=self.policy.version,
            )

    def _build_episode(self, caller: Caller, p: EpisodeProposal, decision: PolicyDecision, now: datetime) -> Episode:
        assert p.actor_id and p.occurred_at and p.source_trust  # guaranteed by the policy
        data = p.model_dump(exclude={"tenant_id"})
        data.update(
            event_id=_new_id(now),
            tenant_id=caller.tenant_id,
            recorded_at=now,
            policy_version=decision.policy_version,
            status=Status.ACTIVE if decision.decision is Decision.ALLOW else Status.PENDING_REVIEW,
        )
        episode = Episode.model_validate(data)
        return episode.model_copy(update={"retention_score": retention_score(episode, now, self.settings.tag_weights)})

    def _stage_store(
        self,
        caller: Caller,
        decision: PolicyDecision,
        episode: Episode,
        vector: Any,
        changes: Changes,
        now: datetime,
    ) -> RememberResult:
        changes.put.append(NewEpisode(episode=episode, vector=vector, embedder=self.embedder.name))
        review_id = None
        if decision.decision is Decision.REVIEW:
            review_id = _new_id(now)
            changes.reviews_put.append(
                Review(
                    review_id=review_id,
                    tenant_id=caller.tenant_id,
                    event_id=episode.event_id,
                    status="pending",
                    reasons=decision.reasons,
                    policy_version=decision.policy_version,
                    requested_at=now,
                )
            )
            changes.audit.append(
                self._audit(caller, "episode.review_requested", now, episode.event_id, decision, reviewId=review_id)
            )
        else:
            self._stage_supersede(caller, episode, changes, now)
            changes.audit.append(self._audit(caller, "episode.written", now, episode.event_id, decision))
        return RememberResult(
            decision=decision.decision,
            reasons=decision.reasons,
            policy_version=decision.policy_version,
            redactions=decision.redactions,
            event_id=episode.event_id,
            review_id=review_id,
            status=episode.status,
            episode=episode,
        )

    def _stage_supersede(self, caller: Caller, episode: Episode, changes: Changes, now: datetime) -> None:
        if not episode.supersedes_event_ids:
            return
        found = self.store.get_many(caller.tenant_id, episode.supersedes_event_ids)
        missing = [i for i in episode.supersedes_event_ids if i not in found]
        if missing:
            raise InvalidRequestError("supersedesEventIds names unknown episodes", eventIds=missing)
        for old_id in episode.supersedes_event_ids:
            changes.status.append(StatusChange(old_id, Status.ACTIVE, Status.SUPERSEDED))
            changes.audit.append(
                self._audit(caller, "episode.superseded", now, old_id, None, supersededBy=episode.event_id)
            )

    # ------------------------------------------------------------------ reads

    def get(self, caller: Caller, event_id: str) -> Episode:
        return self._get_visible(caller, event_id)

    def _get_visible(self, caller: Caller, event_id: str) -> Episode:
        episode = self.store.get(caller.tenant_id, event_id)
        if episode is None or episode.is_expired(self.clock.now()):
            raise NotFoundError(f"no episode {event_id}")
        return episode

    def timeline(
        self,
        caller: Caller,
        *,
        actor_id: str | None = None,
        project_id: str | None = None,
        event_types: Sequence[EventType] = (),
        tags: Sequence[str] = (),
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
        statuses: Sequence[Status] = (Status.ACTIVE,),
        limit: int = 50,
        cursor: str | None = None,
        newest_first: bool = True,
    ) -> TimelinePage:
        if Status.PENDING_REVIEW in statuses and not caller.is_operator:
            raise ForbiddenError("only operators can list episodes pending review")
        scope = Scope(
            tenant_id=caller.tenant_id,
            now=self.clock.now(),
            actor_id=actor_id,
            project_id=project_id,
            event_types=tuple(event_types),
            tags=tuple(t.lower() for t in tags),
            occurred_after=occurred_after,
            occurred_before=occurred_before,
            statuses=tuple(statuses),
            privacy_classes=_visible_privacy(actor_id, operator=caller.is_operator),
        )
        items, next_cursor = self.store.timeline(
            TimelineQuery(scope=scope, limit=limit, cursor=cursor, newest_first=newest_first)
        )
        return TimelinePage(items=items, next_cursor=next_cursor)

    def recall(self, caller: Caller, request: RecallRequest) -> RecallResponse:
        """Scope first, then rank; audit what was returned to whom and count the access."""
        now = self.clock.now()
        query = (request.query or "").strip() or None
        reading = interpret(query, now) if query and request.interpret else None
        after, before = request.occurred_after, request.occurred_before
        explained = QueryInterpretation()
        if reading is not None and reading.time_phrase and after is None and before is None:
            after, before, query = reading.occurred_after, reading.occurred_before, reading.text
            explained = QueryInterpretation(
                time_phrase=reading.time_phrase, occurred_after=after, occurred_before=before
            )
        privacy = _visible_privacy(request.actor_id, operator=False)  # recall feeds prompts: no exception
        scope = Scope(
            tenant_id=caller.tenant_id,
            now=now,
            actor_id=request.actor_id,
            project_id=request.project_id,
            event_types=tuple(request.event_types),
            tags=tuple(request.tags),
            occurred_after=after,
            occurred_before=before,
            statuses=tuple(request.statuses),
            privacy_classes=privacy,
        )
        vector, degraded = self._query_vector(query)
        pool = max(self.settings.recall_pool_size, request.limit)
        found = self.index.candidates(scope, query, vector, pool, embedder=self.embedder.name)
        candidates = found.items
        episodes = self.store.get_many(caller.tenant_id, [c.event_id for c in candidates])
        # The index is a projection: re-check the scope against the source of truth.
        episodes = {k: e for k, e in episodes.items() if scope.admits(e)}
        ranked = self.ranker.rank(candidates, episodes, now, has_query=query is not None, limit=len(episodes))
        if reading is not None and request.actor_id is None:
            hinted = hinted_actors(reading.name_tokens, {e.actor_id for e in episodes.values()})
            if hinted:
                # A scope hint, not a filter: the named actors' episodes first, then the rest.
                ranked.sort(key=lambda item: item.episode.actor_id not in hinted)
                explained = explained.model_copy(update={"actor_hints": sorted(hinted)})
        items = [self._with_neighbours(scope, item, request.neighbours) for item in ranked[: request.limit]]
        recall_id = _new_id(now)
        returned = [item.episode.event_id for item in items]
        audit = AuditRecord(
            audit_id=recall_id,
            tenant_id=caller.tenant_id,
            at=now,
            action="recall.served",
            principal_id=caller.principal_id,
            detail={
                "eventIds": list(returned),
                "queryHash": _hash_text(query) if query else None,
                "actorScoped": request.actor_id is not None,
            },
        )
        self.store.apply(Changes(tenant_id=caller.tenant_id, audit=[audit]))
        if returned:
            try:
                self.store.record_access(caller.tenant_id, returned, now)
            except StorageError:
                # Access counts feed relevance decay; they are not worth failing a recall that was
                # served and audited. The next recall of these episodes counts again.
                degraded = (*degraded, "access_stats_not_updated")
        return RecallResponse(
            recall_id=recall_id,
            items=items,
            interpretation=explained,
            context=render_context(items),
            degraded=[*degraded, *found.degraded],
        )

    def _query_vector(self, query: str | None) -> tuple[Vector | None, tuple[str, ...]]:
        """The query's embedding; when the embedder is unavailable, recall goes on by text alone
        and says so (``semantic_unavailable``) rather than failing."""
        if query is None:
            return None, ()
        try:
            return self.embedder.embed([query])[0], ()
        except StorageError:
            return None, ("semantic_unavailable",)

    def _with_neighbours(self, scope: Scope, item: RecallItem, count: int) -> RecallItem:
        """A conversation turn alone is often unreadable ("yes, do that"): attach the turns just
        before and after it in the same session (same actor, within an hour), as context.

        The neighbours are read under the recall's own scope -- its statuses, project and, above
        all, its privacy rule -- narrowed to the turn's actor and hour: naming the actor here
        must not admit the private turns an unscoped recall may not show."""
        ep = item.episode
        if count == 0 or ep.event_type is not EventType.CONVERSATION_TURN or not ep.session_id:
            return item
        window = timedelta(hours=1)
        around = replace(
            scope,
            actor_id=ep.actor_id,
            event_types=(EventType.CONVERSATION_TURN,),
            tags=(),
            occurred_after=ep.occurred_at - window,
            occurred_before=ep.occurred_at + window,
        )
        nearby, _ = self.store.timeline(TimelineQuery(scope=around, limit=200, newest_first=False))
        same = [e for e in nearby if e.session_id == ep.session_id]
        at = next((i for i, e in enumerate(same) if e.event_id == ep.event_id), None)
        if at is None:
            return item
        chosen = same[max(at - count, 0) : at] + same[at + 1 : at + 1 + count]
        turns = [NeighbourTurn(event_id=e.event_id, occurred_at=e.occurred_at, summary=e.summary) for e in chosen]
        return item.model_copy(update={"neighbours": turns})

    # ------------------------------------------------------------------ feedback

    def feedback(self, caller: Caller, event_id: str, helpful: bool, note: str | None = None) -> Episode:
        """Agent feedback moves the episode's feedback score (a running mean in [-1, 1])."""
        episode = self._get_visible(caller, event_id)
        now = self.clock.now()
        count = episode.feedback_count + 1
        score = (episode.feedback_score * episode.feedback_count + (1.0 if helpful else -1.0)) / count
        updated = episode.model_copy(update={"feedback_score": round(score, 6), "feedback_count": count})
        updated = updated.model_copy(
            update={"retention_score": retention_score(updated, now, self.settings.tag_weights)}
        )
        audit = self._audit(
            caller,
            "feedback.recorded",
            now,
            event_id,
            None,
            helpful=helpful,
            noteHash=_hash_text(note) if note else None,
        )
        self.store.apply(
            Changes(
                tenant_id=caller.tenant_id,
                stats=[StatsChange(event_id, updated.feedback_score, count, updated.retention_score)],
                audit=[audit],
            )
        )
        return updated

    # ------------------------------------------------------------------ erasure

    def erase(self, caller: Caller, event_id: str, reason: str | None = None) -> dict[str, Any]:
        """Erase one episode everywhere, and the summaries that cite it; leave tombstones."""
        episode = self.store.get(caller.tenant_id, event_id)
        archived = episode is None and self.archive.contains(caller.tenant_id, event_id)
        if episode is None and not archived:
            raise NotFoundError(f"no episode {event_id}")
        if episode is not None and not episode.retention.delete_on_request and not caller.is_operator:
            raise ForbiddenError("this episode is retained (deleteOnRequest=false); an operator must erase it")
        return self._erase_ids(caller, [event_id], reason or "erasure_requested", scope="episode")

    def restore(self, caller: Caller, event_id: str, expires_at: datetime | None = None) -> Episode:
        """Bring an archived episode back to the timeline, on an operator's explicit request.

        The episode returns ``active`` and is re-embedded (vectors are not archived); one whose
        retention has passed needs a new ``expiresAt``, or it would be forgotten again at once.
        The archive copy is removed once the episode is back, so no second copy lingers; if that
        removal failed, asking again finishes it (the episode is back already: only the copy goes).
        """
        self._require_operator(caller)
        now = self.clock.now()
        held = self.store.get(caller.tenant_id, event_id)
        if held is not None and held.status is Status.ARCHIVED:
            return self._unarchive(caller, held, now)
        if held is not None and self.archive.contains(caller.tenant_id, event_id):
            self.archive.delete_events(caller.tenant_id, [event_id])
            return held
        record = self.archive.get(caller.tenant_id, event_id)
        if record is None:
            raise NotFoundError(f"no archived episode {event_id}")
        episode = Episode.model_validate(record["episode"])
        retention = episode.retention
        if expires_at is not None:
            if expires_at <= now:
                raise InvalidRequestError("expiresAt must be in the future")
            retention = retention.model_copy(update={"expires_at": expires_at})
        elif episode.is_expired(now):
            raise ConflictError("this episode's retention has passed; restore it with a new expiresAt")
        episode = episode.model_copy(update={"status": Status.ACTIVE, "retention": retention})
        vector = self.embedder.embed([episode.search_text()])[0]
        audit = self._audit(
            caller,
            "episode.restored",
            now,
            event_id,
            None,
            archivedReason=record.get("reason"),
            expiresAt=retention.expires_at.isoformat() if retention.expires_at else None,
        )
        self.store.apply(
            Changes(
                tenant_id=caller.tenant_id,
                put=[NewEpisode(episode=episode, vector=vector, embedder=self.embedder.name)],
                audit=[audit],
            )
        )
        self.archive.delete_events(caller.tenant_id, [event_id])
        return episode

    def _unarchive(self, caller: Caller, episode: Episode, now: datetime) -> Episode:
        """An episode archived by relevance decay goes back to ``active`` where it stands."""
        self.store.apply(
            Changes(
                tenant_id=caller.tenant_id,
                status=[StatusChange(episode.event_id, Status.ARCHIVED, Status.ACTIVE)],
                audit=[
                    self._audit(
                        caller, "episode.restored", now, episode.event_id, None, archivedReason="relevance_decay"
                    )
                ],
            )
        )
        self.archive.delete_events(caller.tenant_id, [episode.event_id])
        return episode.model_copy(update={"status": Status.ACTIVE})

    # ------------------------------------------------------------------ forgetting by relevance decay

    def forget(self, *, dry_run: bool = False, cursor: str | None = None, page_size: int = 500) -> ForgetReport:
        """Archive episodes whose retention score fell below the threshold and that nobody
        recalled for ``decay_idle_days``: a copy goes to cold storage with an audit record
        (when, why, what -- a hash, never the text), the episode leaves default recall as
        ``archived`` and can be listed (timeline ``status=archived``) and restored.

        Works a page at a time; ``ForgetReport.next_cursor`` resumes. ``dry_run`` only lists.
        """
        now = self.clock.now()
        idle_cutoff = now - timedelta(days=self.settings.decay_idle_days)
        episodes, next_cursor = self.store.active_page(cursor, page_size)
        chosen: list[tuple[Episode, float]] = []
        for episode in episodes:
            score = retention_score(episode, now, self.settings.tag_weights)
            last_seen = episode.last_accessed_at or episode.recorded_at
            if score < self.settings.decay_threshold and last_seen <= idle_cutoff:
                chosen.append((episode, score))
        if dry_run:
            return ForgetReport(examined=len(episodes), archived=[e.event_id for e, _ in chosen], dry_run=True,
                                next_cursor=next_cursor)  # fmt: skip
        archived = []
        for episode, score in chosen:
            key = self.archive.put(episode, "relevance_decay", now)
            system = Caller(tenant_id=episode.tenant_id, role=Role.OPERATOR, principal_id="system:decay-sweep")
            audit = self._audit(
                system, "episode.archived", now, episode.event_id, None, reason="relevance_decay",
                retentionScore=score, archiveKey=key, contentHash=content_hash(episode),
                lastAccessedAt=(episode.last_accessed_at or episode.recorded_at).isoformat(),
            )  # fmt: skip
            try:
                self.store.apply(
                    Changes(
                        tenant_id=episode.tenant_id,
                        status=[StatusChange(episode.event_id, Status.ACTIVE, Status.ARCHIVED)],
                        stats=[StatsChange(episode.event_id, episode.feedback_score, episode.feedback_count, score)],
                        audit=[audit],
                    )
                )
                archived.append(episode.event_id)
            except ConflictError:
                self.archive.delete_events(episode.tenant_id, [episode.event_id])  # changed meanwhile: keep it
        return ForgetReport(examined=len(episodes), archived=archived, dry_run=False, next_cursor=next_cursor)

    # ------------------------------------------------------------------ summarisation

    def busy_actors(self, now: datetime) -> list[dict[str, Any]]:
        """Actors with more than ``summary_min_events`` events in the trailing 24 hours."""
        since = now - timedelta(hours=24)
        busy = self.store.busy_actors(since, now, self.settings.summary_min_events + 1)
        return [
            {"tenantId": t, "actorId": a, "events": n, "windowStart": since.isoformat(), "windowEnd": now.isoformat()}
            for t, a, n in busy
        ]

    def summarise_actor(
        self, summariser: Summariser, tenant_id: str, actor_id: str, window_start: datetime, window_end: datetime
    ) -> RememberResult:
        """Write a digest (at most three lines) of one actor's window as a ``session_summary``
        whose sourceRefs cite every event it summarises. It passes the write policy like any
        write; the idempotency key makes a re-run of the same window a replay, not a copy."""
        caller = Caller(
            tenant_id=tenant_id, role=Role.AGENT, principal_id="system:summariser", provenance=ProposedBy.WORKFLOW
        )
        page = self.timeline(
            caller,
            actor_id=actor_id,
            occurred_after=window_start,
            occurred_before=window_end,
            limit=SUMMARY_MAX_SOURCES + 1,
        )
        sources = [e for e in page.items if digestible(e)][:SUMMARY_MAX_SOURCES]
        if len(sources) <= self.settings.summary_min_events:
            raise InvalidRequestError("too few events in the window to summarise", events=len(sources))
        lines = summariser.summarise(sources, max_lines=3)[:3]
        expiries = [e.retention.expires_at for e in sources if e.retention.expires_at is not None]
        proposal = EpisodeProposal(
            event_type=EventType.SESSION_SUMMARY,
            actor_id=actor_id,
            occurred_at=max(e.occurred_at for e in sources),
            summary="\n".join(lines),
            source_refs=[f"{SUMMARY_REF_PREFIX}{e.event_id}" for e in sources],
            source_trust=SourceTrust.TOOL_RESULT,
            proposed_by=ProposedBy.WORKFLOW,
            confidence=Confidence.MEDIUM,
            importance=max(e.importance for e in sources),
            tags=["digest"],
            # A digest repeats its sources: it is as private as the most private of them and
            # lives no longer than the first of them to expire.
            privacy_class=digest_privacy(sources),
            retention=Retention(expires_at=min(expiries) if expiries else None),
        )
        key = f"digest:{actor_id}:{window_end.isoformat()}"  # stored hashed, like every key
        return self.remember(caller, proposal, idempotency_key=key)

    def summarise(self, summariser: Summariser) -> list[dict[str, Any]]:
        """The 24-hour summarisation, in-process: one digest per busy actor; one failure does
        not stop the others (each outcome is reported)."""
        outcomes = []
        for item in self.busy_actors(self.clock.now()):
            try:
                result = self.summarise_actor(
                    summariser, item["tenantId"], item["actorId"],
                    datetime.fromisoformat(item["windowStart"]), datetime.fromisoformat(item["windowEnd"]),
                )  # fmt: skip
                outcomes.append({**item, "decision": result.decision.value, "eventId": result.event_id,
                                 "reasons": result.reasons})  # fmt: skip
            except Exception as exc:  # reported per actor, like the Map state's Catch
                outcomes.append({**item, "failed": True, "error": type(exc).__name__})
        return outcomes

    def erase_actor(self, caller: Caller, actor_id: str, reason: str | None = None) -> dict[str, Any]:
        """Erase everything about an actor: timeline, index, archive, derived summaries."""
        self._require_operator(caller)
        ids = self.store.event_ids_of_actor(caller.tenant_id, actor_id)
        archived = self.archive.delete_actor(caller.tenant_id, actor_id)  # copies first: see _erase_ids
        result = self._erase_ids(caller, ids, reason or "actor_erasure_requested", scope="actor")
        now = self.clock.now()
        self.store.apply(
            Changes(
                tenant_id=caller.tenant_id,
                audit=[
                    self._audit(
                        caller,
                        "actor.erased",
                        now,
                        None,
                        None,
                        actorHash=_hash_text(f"{caller.tenant_id}/{actor_id}"),
                        erasedEpisodes=len(result["erased"]),
                        archivedRecordsDeleted=archived,
                    )
                ],
            )
        )
        result["archivedRecordsDeleted"] = result["archivedRecordsDeleted"] + archived
        return result

    def _erase_ids(self, caller: Caller, ids: list[str], reason: str, scope: str) -> dict[str, Any]:
        """Archive copies go first, then the timeline with its tombstones in one commit: if either
        step fails the caller gets an error and a retry finishes the job, and no failure leaves a
        copy of erased text behind a tombstone that says it is gone."""
        with self._erasure_lock:
            now = self.clock.now()
            cascade = self.store.summaries_citing(caller.tenant_id, ids) if ids else []
            all_ids = list(dict.fromkeys([*ids, *cascade]))
            found = self.store.get_many(caller.tenant_id, all_ids)
            changes = Changes(tenant_id=caller.tenant_id, delete=list(found))
            for event_id in all_ids:
                episode = found.get(event_id)
                changes.audit.append(
                    self._audit(
                        caller,
                        "episode.erased",
                        now,
                        event_id,
                        None,
                        reason=reason,
                        scope=scope,
                        cascade=event_id in cascade and event_id not in ids,
                        contentHash=content_hash(episode) if episode else None,
                    )
                )
            archived = self.archive.delete_events(caller.tenant_id, all_ids)
            self.store.apply(changes)
            self.store.compact_after_erasure()
        return {"erased": all_ids, "cascaded": [i for i in cascade if i not in ids], "archivedRecordsDeleted": archived}

    # ------------------------------------------------------------------ reviews

    def list_reviews(self, caller: Caller, status: str | None = "pending", limit: int = 100) -> list[ReviewView]:
        self._require_operator(caller)
        reviews = self.store.list_reviews(caller.tenant_id, status, limit)
        episodes = self.store.get_many(caller.tenant_id, [r.event_id for r in reviews])
        return [ReviewView(review=r, episode=episodes.get(r.event_id)) for r in reviews]

    def decide_review(self, caller: Caller, review_id: str, approve: bool, note: str | None = None) -> ReviewView:
        """An operator approves (activate) or denies (remove) a pending write."""
        self._require_operator(caller)
        review = self.store.get_review(caller.tenant_id, review_id)
        if review is None:
            raise NotFoundError(f"no review {review_id}")
        if review.status != "pending":
            raise ConflictError(f"review {review_id} is already {review.status}")
        return self._close_review(caller, review, "approved" if approve else "denied", caller.principal_id, note)

    def _close_review(
        self, caller: Caller, review: Review, outcome: str, reviewer: str, note: str | None
    ) -> ReviewView:
        now = self.clock.now()
        episode = self.store.get(review.tenant_id, review.event_id)
        changes = Changes(tenant_id=review.tenant_id)
        changes.reviews_close.append(ReviewChange(review.review_id, outcome, now, reviewer, note))
        if episode is not None:
            if outcome == "approved":
                changes.status.append(StatusChange(episode.event_id, Status.PENDING_REVIEW, Status.ACTIVE))
                self._stage_supersede(caller, episode, changes, now)
                episode = episode.model_copy(update={"status": Status.ACTIVE})
            else:
                changes.delete.append(episode.event_id)
                episode = None
        changes.audit.append(
            self._audit(
                caller,
                f"review.{outcome}",
                now,
                review.event_id,
                None,
                reviewId=review.review_id,
                reviewer=reviewer,
                noteHash=_hash_text(note) if note else None,
            )
        )
        self.store.apply(changes)
        closed = review.model_copy(update={"status": outcome, "decided_at": now, "reviewer": reviewer, "note": note})
        self.notifier.review_decided(closed)
        return ReviewView(review=closed, episode=episode)

    def expire_review(self, tenant_id: str, review_id: str) -> str:
        """The review workflow timed out: deny by default. Idempotent (a closed review stays closed)."""
        review = self.store.get_review(tenant_id, review_id)
        if review is None:
            return "unknown"
        if review.status != "pending":
            return review.status
        system = Caller(tenant_id=tenant_id, role=Role.OPERATOR, principal_id="system:review-timeout")
        try:
            self._close_review(system, review, "expired", "system:review-timeout", "review timed out: denied")
        except ConflictError:
            return "closed-concurrently"
        return "expired"

    # ------------------------------------------------------------------ operations

    def audit(
        self,
        caller: Caller,
        *,
        event_id: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> tuple[list[AuditRecord], str | None]:
        self._require_operator(caller)
        return self.store.audit(
            AuditQuery(
                tenant_id=caller.tenant_id, event_id=event_id, action=action, since=since, limit=limit, cursor=cursor
            )
        )

    def set_writes(self, caller: Caller, enabled: bool, reason: str | None = None) -> dict[str, Any]:
        """The operator kill-switch: disables writes for the tenant; recall keeps working."""
        self._require_operator(caller)
        now = self.clock.now()
        audit = self._audit(caller, "writes.enabled" if enabled else "writes.disabled", now, None, None, reason=reason)
        self.store.set_writes_enabled(caller.tenant_id, enabled, audit)
        return self.writes_status(caller.tenant_id)

    def writes_status(self, tenant_id: str) -> dict[str, Any]:
        return {
            "writesEnabled": not self.settings.writes_disabled and self.store.writes_enabled(tenant_id),
            "deploymentKillSwitch": self.settings.writes_disabled,
        }

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "backend": self.backend,
            "policyVersion": self.policy.version,
            "embedder": self.embedder.name,
            "deploymentWritesDisabled": self.settings.writes_disabled,
        }

    def reembed(self, batch_size: int = 256, progress: Any = None) -> int:
        """Give every episode a vector from the current embedder (after a model change).

        Until then such episodes take part in recall by BM25 only: vectors of two models
        are never compared. ``progress(done)`` is called after each batch.
        """
        done = 0
        while batch := self.store.stale_vectors(self.embedder.name, batch_size):
            vectors = self.embedder.embed([e.search_text() for e in batch])
            self.store.set_vectors(list(zip(batch, vectors, strict=True)), self.embedder.name)
            done += len(batch)
            if progress is not None:
                progress(done)
        return done

    def sweep(self, limit: int = 500) -> SweepReport:
        """Forget what retention says must go, and time out stale reviews (default: deny).

        Runs in-process on a schedule locally; in AWS, TTL and the review workflow's
        timeout do the same work.
        """
        now = self.clock.now()
        expired = 0
        for episode in self.store.expired_episodes(now, limit):
            key = self.archive.put(episode, "retention_expired", now) if archived_on_expiry(episode) else None
            audit = self._audit(
                Caller(tenant_id=episode.tenant_id, role=Role.OPERATOR, principal_id="system:sweep"),
                "episode.expired",
                now,
                episode.event_id,
                None,
                **expiry_detail(episode, key),
            )
            try:
                self.store.apply(Changes(tenant_id=episode.tenant_id, delete=[episode.event_id], audit=[audit]))
                expired += 1
            except ConflictError:
                continue
        cutoff = now - timedelta(days=self.settings.review_timeout_days)
        stale = self.store.reviews_requested_before(cutoff, limit)
        timed_out = sum(self.expire_review(r.tenant_id, r.review_id) == "expired" for r in stale)
        return SweepReport(expired=expired, reviews_timed_out=timed_out)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _require_operator(caller: Caller) -> None:
        if not caller.is_operator:
            raise ForbiddenError("this operation needs the operator role")

    def _audit(
        self,
        caller: Caller,
        action: str,
        now: datetime,
        event_id: str | None,
        decision: PolicyDecision | None,
        **detail: Any,
    ) -> AuditRecord:
        return AuditRecord(
            audit_id=_new_id(now),
            tenant_id=caller.tenant_id,
            at=now,
            action=action,
            principal_id=caller.principal_id,
            event_id=event_id,
            reasons=decision.reasons if decision else [],
            policy_version=decision.policy_version if decision else self.policy.version,
            detail={k: v for k, v in detail.items() if v is not None}
            | (
                {"redactions": [r.to_json_dict() for r in decision.redactions]}
                if decision and decision.redactions
                else {}
            ),
        )

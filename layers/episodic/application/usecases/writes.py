"""Writing memories: remember one, a batch, or a correction.

Every proposal is judged by the write policy; what it allows or sends to review is embedded
(one batch for all items) and committed item by item, each atomically with its audit record,
its review and its idempotency record. A denial stores nothing but its audit record.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from episodic.application.ports import Changes, IdempotencyRecord, NewEpisode, StatusChange, TimelineQuery
from episodic.application.usecases.deps import Deps
from episodic.application.usecases.idempotency import Idempotency, ItemKey
from episodic.application.usecases.reads import scope_for
from episodic.application.usecases.replies import REPLY_WINDOW, SESSION_TURNS, shifted
from episodic.domain.access import may_read, require_changeable, require_covered
from episodic.domain.errors import ConflictError, ForbiddenError, InvalidRequestError
from episodic.domain.forgetting.retention import retention_score
from episodic.domain.model import (
    AuditAction,
    Caller,
    Decision,
    Episode,
    EpisodeProposal,
    EventType,
    PolicyDecision,
    RememberResult,
    Review,
    ReviewStatus,
    Status,
    TimelineRequest,
)
from episodic.domain.policy import may_reply, replied_turn

BATCH_LIMIT = 100


class Writes:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.idempotency = Idempotency(deps)

    def remember(self, caller: Caller, proposal: EpisodeProposal, idempotency_key: str | None = None) -> RememberResult:
        """Decide on one proposal and store it as the decision says."""
        return self._checked(caller, "remember", [proposal], idempotency_key)[0]

    def remember_batch(
        self, caller: Caller, proposals: Sequence[EpisodeProposal], idempotency_key: str | None = None
    ) -> list[RememberResult]:
        """Decide and store each proposal independently; embeddings are computed in one batch."""
        if not 1 <= len(proposals) <= BATCH_LIMIT:
            raise InvalidRequestError("a batch holds between 1 and 100 episodes", count=len(proposals))
        return self._checked(caller, "batch", list(proposals), idempotency_key)

    def correct(
        self, caller: Caller, event_id: str, proposal: EpisodeProposal, idempotency_key: str | None = None
    ) -> RememberResult:
        """Write a superseding episode; the old one becomes ``superseded`` in the same commit.

        A retry of a correction that went through (same Idempotency-Key and body) finds the old
        episode superseded already: it replays the first result instead of a conflict."""
        old = self.deps.visible(caller, event_id)
        require_changeable(caller, old, "correct an episode")
        supersedes = list(dict.fromkeys([event_id, *proposal.supersedes_event_ids]))
        proposal = proposal.model_copy(
            update={
                "supersedes_event_ids": supersedes,
                "actor_id": proposal.actor_id or old.actor_id,
                "correction_path": proposal.correction_path or f"corrects {event_id}",
            }
        )
        if old.status is not Status.ACTIVE:
            replayed = (
                self.idempotency.replay(caller, "remember", [proposal], idempotency_key) if idempotency_key else None
            )
            if replayed is None:
                raise ConflictError(f"episode {event_id} is {old.status.value}, only active episodes can be corrected")
            return replayed[0]
        return self.remember(caller, proposal, idempotency_key)

    def stage_supersede(self, caller: Caller, episode: Episode, changes: Changes, now: datetime) -> None:
        """Mark what ``episode`` supersedes ``superseded``, audited, in the same ``changes``. An
        episode the caller may not read is as unknown as one that does not exist (422 either way)."""
        if not episode.supersedes_event_ids:
            return
        found = self._readable(caller, episode.supersedes_event_ids)
        missing = [i for i in episode.supersedes_event_ids if i not in found]
        if missing:
            raise InvalidRequestError("supersedesEventIds names unknown episodes", eventIds=missing)
        for old_id in episode.supersedes_event_ids:
            changes.status.append(StatusChange(old_id, Status.ACTIVE, Status.SUPERSEDED))
            changes.audit.append(
                self.deps.audit(
                    caller,
                    AuditAction.EPISODE_SUPERSEDED,
                    now,
                    old_id,
                    None,
                    found[old_id].actor_id,
                    supersededBy=episode.event_id,
                )
            )

    def _checked(
        self, caller: Caller, kind: str, proposals: list[EpisodeProposal], key: str | None
    ) -> list[RememberResult]:
        self.deps.require_writes(caller.tenant_id)
        for proposal in proposals:
            if proposal.tenant_id is not None and proposal.tenant_id != caller.tenant_id:
                raise ForbiddenError("the episode names a tenant other than the caller's")
        proposals = [self._for_bound_actor(caller, p) for p in proposals]
        # What each turn answers is read before anything is written, so a retry that writes only
        # what a failed attempt left judges each item as the first attempt did.
        answering = self._answering(caller, proposals)

        def write(
            caller: Caller, items: list[EpisodeProposal], keys: Sequence[ItemKey | None], at: Sequence[int]
        ) -> list[RememberResult]:
            return self._write(caller, items, keys, [answering[i] for i in at])

        return self.idempotency.run(caller, kind, proposals, key, write)

    def _answering(self, caller: Caller, proposals: list[EpisodeProposal]) -> list[str | None]:
        """The turn each proposal replies to (:func:`~episodic.domain.policy.replied_turn`): the item
        before it in the request, or for a session's first turn in the request, the session's newest
        stored turn before it. A session posted turn by turn is then judged as one posted whole
        (but for a turn just before that was not kept: only the request holds its text)."""
        answering = [replied_turn(before, p) for before, p in zip([None, *proposals[:-1]], proposals, strict=True)]
        opened: set[str] = set()  # sessions with a turn earlier in the request
        own = {ref for p in proposals for ref in p.source_refs}  # a retry's turns stored by its first attempt
        for i, p in enumerate(proposals):
            if p.session_id is not None and p.session_id not in opened and may_reply(p):
                answering[i] = replied_turn(self._stored_before(caller, p, own), p)
            if p.session_id is not None:
                opened.add(p.session_id)
        return answering

    def _stored_before(self, caller: Caller, turn: EpisodeProposal, own: set[str]) -> Episode | None:
        """The newest turn of ``turn``'s session stored at or before its time, up to :data:`REPLY_WINDOW`
        earlier, among what the caller could recall (another actor's private turns are not read) and
        not one of the request's own turns (``own``: their sources), which a retry whose first
        attempt stored some of them would otherwise find."""
        assert turn.occurred_at is not None  # may_reply
        window = TimelineRequest(
            event_types=[EventType.CONVERSATION_TURN],
            occurred_after=shifted(turn.occurred_at, -REPLY_WINDOW),
            occurred_before=shifted(turn.occurred_at, timedelta(microseconds=1)),
        )
        scope = scope_for(caller, self.deps.clock.now(), window, all_privacy_for_operators=False)
        page, _ = self.deps.episodes.timeline(TimelineQuery(scope=scope, limit=SESSION_TURNS, newest_first=True))
        return next((e for e in page if e.session_id == turn.session_id and own.isdisjoint(e.source_refs)), None)

    def _for_bound_actor(self, caller: Caller, proposal: EpisodeProposal) -> EpisodeProposal:
        """A bound credential writes for its actors only: a proposal without an actor is its one
        actor's; one for another actor, or superseding another actor's episode, is refused."""
        if not caller.is_bound:
            return proposal
        if proposal.actor_id is None and caller.actors and len(caller.actors) == 1:
            proposal = proposal.model_copy(update={"actor_id": caller.actors[0]})
        require_covered(caller, [proposal.actor_id], "write an episode")
        if proposal.supersedes_event_ids:  # what it may not read is left to be refused as unknown
            for old in self._readable(caller, proposal.supersedes_event_ids).values():
                require_covered(caller, [old.actor_id], "supersede an episode")
        return proposal

    def _write(
        self,
        caller: Caller,
        proposals: list[EpisodeProposal],
        keys: Sequence[ItemKey | None],
        answering: Sequence[str | None],
    ) -> list[RememberResult]:
        """Decide every proposal, embed the storable ones in one batch, commit each item atomically
        (all of them in one group commit: one fsync per request, not per item)."""
        deps = self.deps
        now = deps.clock.now()
        judged = [
            deps.policy.decide(p, caller, now, self._superseded(caller, p), answer_to)
            for p, answer_to in zip(proposals, answering, strict=True)
        ]
        storable = [
            (i, self._build_episode(caller, p, d, now))
            for i, (d, p) in enumerate(judged)
            if d.decision is not Decision.DENY
        ]
        vectors = deps.embedder.embed([ep.search_text() for _, ep in storable]) if storable else []
        by_index = {i: (ep, vec) for (i, ep), vec in zip(storable, vectors, strict=True)}

        single = len(proposals) == 1
        staged = [self._stage_item(caller, d, by_index.get(i), keys[i], now, single) for i, (d, _) in enumerate(judged)]
        conflicts = deps.episodes.apply_many([changes for changes, _ in staged])  # one group commit
        results: list[RememberResult] = []
        requested: list[tuple[Review, Episode]] = []
        for i, ((changes, result), conflict) in enumerate(zip(staged, conflicts, strict=True)):
            committed = result if conflict is None else self._after_conflict(caller, conflict, result, keys[i], single)
            results.append(committed)
            if committed is result and changes.reviews_put and result.episode is not None:
                requested.append((changes.reviews_put[0], result.episode))  # a replay was notified before
        for review, episode in requested:
            deps.notifier.review_requested(review, episode)
        return results

    def _stage_item(
        self,
        caller: Caller,
        decision: PolicyDecision,
        stored: tuple[Episode, Any] | None,
        key: ItemKey | None,
        now: datetime,
        single: bool,
    ) -> tuple[Changes, RememberResult]:
        """One item's change set (the episode or its denial, its audit, its idempotency key) and
        the result it answers with once committed."""
        changes = Changes(tenant_id=caller.tenant_id)
        if stored is not None:
            try:
                result = self._stage_store(caller, decision, stored[0], stored[1], changes, now)
            except InvalidRequestError as exc:
                if single:
                    raise
                changes = Changes(tenant_id=caller.tenant_id)
                result = RememberResult(
                    decision=Decision.DENY,
                    reasons=["invalid_reference", *exc.details.get("eventIds", [])],
                    policy_version=decision.policy_version,
                )
        else:
            changes.audit.append(self.deps.audit(caller, AuditAction.EPISODE_DENIED, now, None, decision))
            result = RememberResult(
                decision=decision.decision,
                reasons=decision.reasons,
                policy_version=decision.policy_version,
                redactions=decision.redactions,
                sentences=decision.sentences,
            )
        if key is not None:
            changes.idempotency = IdempotencyRecord(
                tenant_id=caller.tenant_id,
                key=key[0],
                request_hash=key[1],
                # Decision and ids only, never the episode's text: erasure must leave no copy here.
                result=result.model_copy(update={"episode": None}).to_json_dict(),
                created_at=now,
            )
        return changes, result

    def _superseded(self, caller: Caller, proposal: EpisodeProposal) -> list[Episode]:
        """The stored episodes a proposal would supersede (the policy judges whether it may)."""
        if not proposal.supersedes_event_ids:
            return []
        return list(self._readable(caller, proposal.supersedes_event_ids).values())

    def _readable(self, caller: Caller, event_ids: Sequence[str]) -> dict[str, Episode]:
        """Those of ``event_ids`` that exist for ``caller`` (:func:`~episodic.domain.access.may_read`):
        naming one it may not read must answer as naming one that does not exist."""
        found = self.deps.episodes.get_many(caller.tenant_id, event_ids)
        return {event_id: episode for event_id, episode in found.items() if may_read(caller, episode)}

    def _after_conflict(
        self, caller: Caller, conflict: ConflictError, result: RememberResult, key: ItemKey | None, single: bool
    ) -> RememberResult:
        """What an item whose change set hit a condition answers: the result of the concurrent
        request that committed the same key first, or (in a batch) a denial of this item alone."""
        if key is not None:
            previous = self.deps.episodes.find_idempotency(caller.tenant_id, key[0])
            if previous is not None:
                return self.idempotency.replayed(caller, previous, key[1], key[2])
        if single:
            raise conflict
        # Items are independent: a stale supersede fails this item only.
        return RememberResult(
            decision=Decision.DENY, reasons=["conflict", *result.reasons], policy_version=self.deps.policy.version
        )

    def _build_episode(self, caller: Caller, p: EpisodeProposal, decision: PolicyDecision, now: datetime) -> Episode:
        assert p.actor_id and p.occurred_at and p.source_trust  # guaranteed by the policy
        data = p.model_dump(exclude={"tenant_id"})
        data.update(
            event_id=self.deps.ids(now),
            tenant_id=caller.tenant_id,
            recorded_at=now,
            policy_version=decision.policy_version,
            status=Status.ACTIVE if decision.decision is Decision.ALLOW else Status.PENDING_REVIEW,
        )
        episode = Episode.model_validate(data)
        score = retention_score(episode, now, self.deps.settings.tag_weights)
        return episode.model_copy(update={"retention_score": score})

    def _stage_store(
        self,
        caller: Caller,
        decision: PolicyDecision,
        episode: Episode,
        vector: Any,
        changes: Changes,
        now: datetime,
    ) -> RememberResult:
        deps = self.deps
        changes.put.append(NewEpisode(episode=episode, vector=vector, embedder=deps.embedder.name))
        review_id = None
        if decision.decision is Decision.REVIEW:
            review_id = deps.ids(now)
            changes.reviews_put.append(
                Review(
                    review_id=review_id,
                    tenant_id=caller.tenant_id,
                    event_id=episode.event_id,
                    status=ReviewStatus.PENDING,
                    reasons=decision.reasons,
                    policy_version=decision.policy_version,
                    requested_at=now,
                    actor=deps.pseudonyms.actor(caller.tenant_id, episode.actor_id),
                )
            )
            changes.audit.append(
                deps.audit(
                    caller,
                    AuditAction.EPISODE_REVIEW_REQUESTED,
                    now,
                    episode.event_id,
                    decision,
                    episode.actor_id,
                    reviewId=review_id,
                )
            )
        else:
            self.stage_supersede(caller, episode, changes, now)
            written = deps.audit(caller, AuditAction.EPISODE_WRITTEN, now, episode.event_id, decision, episode.actor_id)
            changes.audit.append(written)
        return RememberResult(
            decision=decision.decision,
            reasons=decision.reasons,
            policy_version=decision.policy_version,
            redactions=decision.redactions,
            sentences=decision.sentences,
            suggested_privacy_class=decision.suggested_privacy_class,
            event_id=episode.event_id,
            review_id=review_id,
            status=episode.status,
            episode=episode,
        )

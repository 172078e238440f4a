"""Reading memories: one episode, a timeline page, or a recall ranked for a query.

Everything read is scoped first -- the caller's tenant always, then the filters asked for,
status, retention and privacy -- by one :func:`scope_for`. Private and sensitive episodes are
listed or recalled only when the read names their actor and the caller may act for it
(:mod:`episodic.domain.access`; operators may list them in timelines; recall feeds prompts, so it
makes no exception). Everything a recall adds to its answer (neighbouring turns, the evidence
block) is read under the recall's own scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from episodic.application.ports import (
    PendingVector,
    Scope,
    TimelineQuery,
)
from episodic.application.usecases.deps import Deps
from episodic.application.usecases.replies import (
    TurnsRead,
    neighbour_windows,
    read_ahead,
    replies_to,
    session_turns,
    sessions_around,
    shifted,
)
from episodic.application.usecases.rounds import Found, ReadAhead, SearchRounds, searches_apart, start_embedding
from episodic.domain.access import ACTOR_SCOPED_PRIVACY, sees_private_of
from episodic.domain.errors import ForbiddenError
from episodic.domain.model import (
    AuditAction,
    AuditRecord,
    Caller,
    Episode,
    NeighbourTurn,
    PrivacyClass,
    QueryInterpretation,
    RecallItem,
    RecallRequest,
    RecallResponse,
    ScopeFilters,
    Status,
    TimelinePage,
    TimelineRequest,
)
from episodic.domain.recall.calendar import CALENDAR_SLACK
from episodic.domain.recall.candidates import Candidate
from episodic.domain.recall.evidence import render_context
from episodic.domain.recall.query import has_content, interpret
from episodic.domain.recall.ranking import Ranker

QUESTIONS_FOLLOWED = 3
"""How many of a recall's most relevant question turns have their replies looked up."""

READ_AHEAD = 20
"""Of the best items by words, how many have their neighbouring turns read ahead (:meth:`Reads._ahead`)."""


NO_FILTERS = TimelineRequest()
"""A scope with no filter of its own: the caller's tenant, active episodes, the privacy rule."""


def scope_for(
    caller: Caller, now: datetime, filters: ScopeFilters = NO_FILTERS, *, all_privacy_for_operators: bool = True
) -> Scope:
    """The one scope every read uses: the caller's tenant, the filters, and the privacy rule."""
    sees_all = sees_private_of(caller, filters.actor_id) or (all_privacy_for_operators and caller.is_operator)
    return Scope(
        tenant_id=caller.tenant_id,
        now=now,
        actor_id=filters.actor_id,
        project_id=filters.project_id,
        event_types=tuple(filters.event_types),
        tags=tuple(t.lower() for t in filters.tags),
        occurred_after=filters.occurred_after,
        occurred_before=filters.occurred_before,
        statuses=tuple(filters.statuses),
        privacy_classes=tuple(p for p in PrivacyClass if sees_all or p not in ACTOR_SCOPED_PRIVACY),
    )


class Reads:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def get(self, caller: Caller, event_id: str) -> Episode:
        return self.deps.visible(caller, event_id)

    def timeline(self, caller: Caller, request: TimelineRequest = NO_FILTERS) -> TimelinePage:
        if Status.PENDING_REVIEW in request.statuses and not caller.is_operator:
            raise ForbiddenError("only operators can list episodes pending review")
        scope = scope_for(caller, self.deps.clock.now(), request)
        query = TimelineQuery(
            scope=scope, limit=request.limit, cursor=request.cursor, newest_first=request.newest_first
        )
        items, next_cursor = self.deps.episodes.timeline(query)
        return TimelinePage(items=items, next_cursor=next_cursor)

    def recall(self, caller: Caller, request: RecallRequest) -> RecallResponse:
        """Scope first, then rank; audit what was returned to whom and count the access."""
        deps = self.deps
        now = deps.clock.now()
        query, scope, explained = self._understand(caller, request, now)
        if query is not None and explained.time_phrase is not None and not self._holds_any(scope):
            scope, explained = everywhen(scope), explained.model_copy(update={"window_empty": True})
        here = searches_apart(deps.index)  # the words can go to a helper while the model runs on this thread
        pending = None if query is None else start_embedding(deps.embedder, query, caller.tenant_id, here=here)
        turns: TurnsRead = {}
        ranked, explained, degraded = self._search(caller, request, query, pending, scope, explained, turns)
        if not ranked and query is not None and explained.time_phrase is not None and not explained.window_empty:
            # The window came from the words, not from the caller, and nothing in it ranked: search
            # all time (with the same query vector) rather than answer with nothing, and say so.
            ranked, explained, degraded = self._search(
                caller, request, query, pending, everywhen(scope), explained.model_copy(update={"window_empty": True}),
                turns,
            )  # fmt: skip
        items = self._with_neighbours(scope, ranked, request.neighbours, turns)
        recall_id = deps.ids(now)
        embedding = ("semantic_unavailable",) if pending is not None and pending.failed else ()
        degraded = (*embedding, *degraded, *self._account(caller, request, items, recall_id, now))
        return RecallResponse(
            recall_id=recall_id,
            items=items,
            interpretation=explained,
            context=render_context(items),
            degraded=list(dict.fromkeys(degraded)),
        )

    def _holds_any(self, scope: Scope) -> bool:
        """Whether ``scope`` admits any episode at all. A window read from the words that holds
        nothing is known before the model is asked, so the recall searches all time at once: found
        empty only by a first search, the search over all time would follow the model's pass
        and cost the recall nearly as much again."""
        found, _ = self.deps.episodes.timeline(TimelineQuery(scope=scope, limit=1))
        return bool(found)

    def _search(
        self,
        caller: Caller,
        request: RecallRequest,
        query: str | None,
        pending: PendingVector | None,
        scope: Scope,
        explained: QueryInterpretation,
        turns: TurnsRead,
    ) -> tuple[list[RecallItem], QueryInterpretation, tuple[str, ...]]:
        """The ranked items for ``query`` (embedded as ``pending``, which the model may still
        be computing while the index searches by words) in ``scope``, with a second round when
        it adds names (:mod:`.rounds`); what recall tells the caller it understood; and what
        could not be done. ``turns`` keeps the turns read around the items (see :meth:`_ahead`)."""
        deps = self.deps
        ranker = deps.ranker.for_question(query)
        pool = max(deps.settings.recall_pool_size, request.limit)
        rounds = SearchRounds(deps, caller, scope, pool, ranker, request.limit)
        if query is None or pending is None:
            first = rounds.search(None, None)
            found = Found(first, rounds.admitted([c.event_id for c in first.items]), None)
        else:
            found = rounds.run(query, pending, request, self._ahead(ranker, scope, request, turns))
        semantic = found.vector is not None
        replies = self._replies(ranker, scope, found.first.items, found.episodes, semantic, turns) if query else {}
        degraded: tuple[str, ...] = found.first.degraded
        if found.widened is not None:
            names, widened = found.widened
            explained = explained.model_copy(update={"widened_with": names})
            degraded = (*widened.degraded, *degraded)
        ranked = ranker.rank(
            found.first.items, found.episodes, scope.now, has_query=query is not None, limit=request.limit,
            semantic=semantic, widened=None if found.widened is None else found.widened[1].items, replies=replies,
            settled=found.settled,
        )  # fmt: skip
        return ranked, explained, degraded

    def _ahead(self, ranker: Ranker, scope: Scope, request: RecallRequest, turns: TurnsRead) -> ReadAhead:
        """What a recall with a core to spare reads while the model embeds its question, once its
        words are searched (:meth:`SearchRounds.run`): the turns around the best items by words and
        the replies to their best question turns, into ``turns``. Most of a conversation recall's
        items and question turns are among them, and are not read again after the vector."""

        def ahead(best: Sequence[Candidate], episodes: dict[str, Episode]) -> None:
            leading = [episodes[c.event_id] for c in best[:READ_AHEAD] if c.event_id in episodes]
            asking = ranker.questions(best, episodes, False, QUESTIONS_FOLLOWED)
            read_ahead(self.deps.episodes, scope, leading if request.neighbours else [], asking, turns)

        return ahead

    def _replies(
        self,
        ranker: Ranker,
        scope: Scope,
        found: Sequence[Candidate],
        episodes: dict[str, Episode],
        semantic: bool,
        turns: TurnsRead,
    ) -> dict[str, str]:
        """``{reply id: question id}`` for the most relevant question turns whose next turn is
        another speaker's (:mod:`episodic.application.usecases.replies`); ``episodes`` gains the replies.

        Measured on the conversation benchmark's dev split (see the README), for one timeline
        read per question followed."""
        questions = ranker.questions(found, episodes, semantic, QUESTIONS_FOLLOWED)
        if not questions:
            return {}
        answers = replies_to(self.deps.episodes, scope, questions, turns)
        episodes.update({reply.event_id: reply for reply in answers.values() if scope.admits(reply)})
        return {reply.event_id: asked for asked, reply in answers.items() if reply.event_id in episodes}

    def _understand(
        self, caller: Caller, request: RecallRequest, now: datetime
    ) -> tuple[str | None, Scope, QueryInterpretation]:
        """The query text (a time phrase becomes the window when none is given, and leaves the
        text), the scope, and what recall tells the caller it understood."""
        query = (request.query or "").strip() or None
        reading = interpret(query, now) if query and request.interpret else None
        after, before = request.occurred_after, request.occurred_before
        explained = QueryInterpretation()
        if reading is not None and reading.time_phrase and after is None and before is None:
            after, before, query = reading.occurred_after, reading.occurred_before, reading.text
            if not has_content(query):
                query = None  # "what happened yesterday": the window is the question, newest first
            elif reading.calendar:  # a turn about an event is often said before or after it
                after = None if after is None else shifted(after, -CALENDAR_SLACK)
                before = None if before is None else shifted(before, CALENDAR_SLACK)
            explained = QueryInterpretation(
                time_phrase=reading.time_phrase, occurred_after=after, occurred_before=before
            )
        scope = scope_for(caller, now, request, all_privacy_for_operators=False)  # recall feeds prompts: no exception
        scope = replace(scope, occurred_after=after, occurred_before=before)  # the window as interpreted
        return query, scope, explained

    def _account(
        self,
        caller: Caller,
        request: RecallRequest,
        items: list[RecallItem],
        recall_id: str,
        now: datetime,
    ) -> tuple[str, ...]:
        """Audit what was served to whom (ids and a hash of the question as asked -- a time
        phrase included, never text), then count the access for relevance decay unless the request
        says not to (``countAccess``); returns what could not be done. Neither waits for the disk
        (``durable=False``): a recall acknowledges no write, and a crash of the process loses
        neither (see ``adapters/sqlite/group_commit.py``)."""
        returned = [item.episode.event_id for item in items]
        asked = (request.query or "").strip()
        audit = AuditRecord(
            audit_id=recall_id,
            tenant_id=caller.tenant_id,
            at=now,
            action=AuditAction.RECALL_SERVED,
            principal_id=caller.principal_id,
            detail={
                "eventIds": list(returned),
                "queryHash": self.deps.pseudonyms.text(asked) if asked else None,
                "actorScoped": request.actor_id is not None,
            },
        )
        # Access counts feed relevance decay; they are not worth failing a recall that was served
        # and audited. The next recall of these episodes counts again.
        counted = self.deps.episodes.record_recall(audit, returned if request.count_access else [], now)
        return () if counted else ("access_stats_not_updated",)

    def _with_neighbours(self, scope: Scope, items: list[RecallItem], count: int, turns: TurnsRead) -> list[RecallItem]:
        """A conversation turn alone is often unreadable ("yes, do that"): attach the turns just
        before and after it in the same session (same actor, within an hour), as context; read for
        all the items at once (but those in ``turns``, read ahead), under the recall's own scope
        (:func:`~episodic.application.usecases.replies.neighbour_windows`)."""
        if count == 0:
            return items
        chosen = session_turns(item.episode for item in items)
        found = sessions_around(self.deps.episodes, neighbour_windows(scope, chosen), chosen, turns)
        around = dict(zip((ep.event_id for ep in chosen), found, strict=True))
        return [_beside(item, *around.get(item.episode.event_id, ([], None)), count) for item in items]


def _beside(item: RecallItem, same: list[Episode], at: int | None, count: int) -> RecallItem:
    """``item`` with the ``count`` turns before and after it among ``same``, its session's turns
    (it is at ``at``; ``None``: not among them, nothing attached)."""
    if at is None:
        return item
    chosen = same[max(at - count, 0) : at] + same[at + 1 : at + 1 + count]
    turns = [NeighbourTurn(event_id=e.event_id, occurred_at=e.occurred_at, summary=e.summary) for e in chosen]
    return item.model_copy(update={"neighbours": turns})


def everywhen(scope: Scope) -> Scope:
    """``scope`` without its time window."""
    return replace(scope, occurred_after=None, occurred_before=None)

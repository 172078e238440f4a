"""Reading memories: one episode, a timeline page, or a recall ranked for a query.

Everything read is scoped first -- the caller's tenant always, then the filters asked for,
status, retention and privacy -- by one :func:`scope_for`. Private and sensitive episodes are
listed or recalled only when the read names their actor and the caller may act for it
(:mod:`episodic.domain.access`; operators may list them in timelines; recall feeds prompts, so it
makes no exception). Everything a recall adds to its answer (neighbouring turns, the evidence
block) is read under the recall's own scope.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from episodic.application.ports import (
    Changes,
    Embedder,
    PendingVector,
    RecallCandidates,
    Scope,
    TimelineQuery,
    Vector,
    resolved,
)
from episodic.application.usecases.deps import Deps, hash_text
from episodic.application.usecases.replies import replies_to, session_turns, shifted
from episodic.domain.access import ACTOR_SCOPED_PRIVACY, sees_private_of
from episodic.domain.errors import ForbiddenError, StorageError
from episodic.domain.model import (
    AuditAction,
    AuditRecord,
    Caller,
    Episode,
    EventType,
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
from episodic.domain.recall.evidence import render_context
from episodic.domain.recall.query import WIDENING_SOURCES, has_content, interpret, widening_names
from episodic.domain.recall.ranking import Candidate


def query_vector(embedder: Embedder, text: str) -> Vector:
    """``text`` embedded as a question: through ``embed_query`` where the embedder has one
    (see :class:`~episodic.application.ports.Embedder`), else like a stored text."""
    as_query = getattr(embedder, "embed_query", None)
    return as_query(text) if as_query is not None else embedder.embed([text])[0]


NAMES_WEIGHT = 0.5
"""How far a second round's vector leans toward the names it adds: the query's vector plus this
share of the names' own vector. Embedding the names alone is a pass over a few tokens where the
whole wider question was a second full one; on the conversation benchmark the mix kept that
question's recall at 0.5 (dev 0.823 against 0.824, test 0.806 against 0.805) and lost at 0.3
(dev 0.820) and 1.0 (dev 0.813)."""


def _leaning_toward(vector: Vector, names: PendingVector) -> list[float] | None:
    """The second round's vector: ``vector`` leaning toward the names' (None without one)."""
    toward = names.value()
    return None if toward is None else leaning(vector, toward, NAMES_WEIGHT)


def leaning(vector: Vector, toward: Vector, weight: float) -> list[float]:
    """``vector + weight * toward``, made unit length again (both are unit vectors)."""
    mixed = [float(a) + weight * float(b) for a, b in zip(vector, toward, strict=True)]
    norm = math.sqrt(sum(x * x for x in mixed)) or 1.0
    return [x / norm for x in mixed]


QUESTIONS_FOLLOWED = 3
"""How many of a recall's most relevant question turns have their replies looked up."""


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
        pending = None if query is None else self._start_embedding(query)
        ranked, explained, degraded = self._search(caller, request, query, pending, scope, explained)
        if not ranked and query is not None and explained.time_phrase is not None:
            # The window came from the words, not from the caller, and held nothing: search all
            # time (with the same query vector) rather than answer with nothing, and say so.
            everywhen = replace(scope, occurred_after=None, occurred_before=None)
            ranked, explained, degraded = self._search(
                caller, request, query, pending, everywhen, explained.model_copy(update={"window_empty": True})
            )
        items = [self._with_neighbours(scope, item, request.neighbours) for item in ranked]
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

    def _search(
        self,
        caller: Caller,
        request: RecallRequest,
        query: str | None,
        pending: PendingVector | None,
        scope: Scope,
        explained: QueryInterpretation,
    ) -> tuple[list[RecallItem], QueryInterpretation, tuple[str, ...]]:
        """The ranked items for ``query`` (embedded as ``pending``, which the model may still
        be computing while the index searches by words) in ``scope``, with a second round when
        it adds names; what recall tells the caller it understood; and what could not be done."""
        deps = self.deps
        now = scope.now
        degraded: tuple[str, ...] = ()
        pool = max(deps.settings.recall_pool_size, request.limit)
        found = deps.index.candidates(scope, query, pending, pool, embedder=deps.embedder.name)
        vector = resolved(pending)
        episodes = self._admitted(caller, scope, [c.event_id for c in found.items])
        replies = self._replies(scope, found.items, episodes, vector is not None) if query else {}
        second = self._widen(caller, scope, (query, vector), request, found, episodes) if query is not None else None
        if second is not None:
            names, widened = second
            explained = explained.model_copy(update={"widened_with": names})
            degraded = (*degraded, *widened.degraded)
        ranked = deps.ranker.rank(
            found.items, episodes, now, has_query=query is not None, limit=request.limit, semantic=vector is not None,
            widened=None if second is None else second[1].items, replies=replies,
        )  # fmt: skip
        return ranked, explained, (*degraded, *found.degraded)

    def _admitted(self, caller: Caller, scope: Scope, event_ids: Sequence[str]) -> dict[str, Episode]:
        """The episodes behind index hits, re-checked against the scope: the index is a
        projection, the timeline the source of truth."""
        episodes = self.deps.episodes.get_many(caller.tenant_id, list(event_ids))
        return {k: e for k, e in episodes.items() if scope.admits(e)}

    def _replies(
        self, scope: Scope, found: Sequence[Candidate], episodes: dict[str, Episode], semantic: bool
    ) -> dict[str, str]:
        """``{reply id: question id}`` for the most relevant question turns whose next turn is
        another speaker's (:mod:`episodic.application.usecases.replies`); ``episodes`` gains the replies.

        Measured on the conversation benchmark's dev split (see the README), for one timeline
        read per question followed."""
        questions = self.deps.ranker.questions(found, episodes, semantic, QUESTIONS_FOLLOWED)
        if not questions:
            return {}
        answers = replies_to(self.deps.episodes, scope, questions)
        episodes.update({reply.event_id: reply for reply in answers.values() if scope.admits(reply)})
        return {reply.event_id: asked for asked, reply in answers.items() if reply.event_id in episodes}

    def _widen(
        self,
        caller: Caller,
        scope: Scope,
        asked: tuple[str, Vector | None],
        request: RecallRequest,
        first: RecallCandidates,
        episodes: dict[str, Episode],
    ) -> tuple[list[str], RecallCandidates] | None:
        """The second round: the query (text and vector, as ``asked``) plus the names its best
        items mention, searched in the same scope; ``episodes`` gains what it found. None when
        there is nothing to add.

        Measured on the conversation benchmark's dev split (see the README): it finds the
        second fact of a multi-part question ("how does Dana know the friend who talked her
        into the half marathon?" -> "Kirsty" -> "bouldering with Kirsty from the garden
        centre"), for one short embedding (the names alone, :data:`NAMES_WEIGHT`) and one more
        index search per recall."""
        query, vector = asked
        if not request.widen:
            return None
        best = self.deps.ranker.leading(first.items, episodes, vector is not None, WIDENING_SOURCES)
        if not best:
            return None
        names = widening_names(query, [e.summary for e in best], {e.actor_id for e in episodes.values()})
        if not names:
            return None
        wider = f"{query} {' '.join(names)}"
        toward = pending = None
        if vector is not None:
            asked_vector, toward = vector, self._start_embedding(" ".join(names))
            pending = PendingVector(lambda: _leaning_toward(asked_vector, toward))
        pool = max(self.deps.settings.recall_pool_size, request.limit)
        found = self.deps.index.candidates(scope, wider, pending, pool, embedder=self.deps.embedder.name)
        resolved(pending)  # the index may not have needed it; a failure is reported all the same
        degraded = ("semantic_unavailable",) if toward is not None and toward.failed else ()
        missing = [c.event_id for c in found.items if c.event_id not in episodes]
        episodes.update(self._admitted(caller, scope, missing))
        return names, RecallCandidates(found.items, (*found.degraded, *degraded))

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
        phrase included, never text), then count the access for relevance decay; returns what
        could not be done. Neither waits for the disk (``durable=False``): a recall acknowledges
        no write, and a crash of the process loses neither (see ``adapters/sqlite/group_commit.py``)."""
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
                "queryHash": hash_text(asked) if asked else None,
                "actorScoped": request.actor_id is not None,
            },
        )
        self.deps.episodes.apply(Changes(tenant_id=caller.tenant_id, audit=[audit], durable=False))
        if returned:
            try:
                self.deps.episodes.record_access(caller.tenant_id, returned, now)
            except StorageError:
                # Access counts feed relevance decay; they are not worth failing a recall that was
                # served and audited. The next recall of these episodes counts again.
                return ("access_stats_not_updated",)
        return ()

    def _start_embedding(self, text: str) -> PendingVector:
        """``text``'s embedding as a question, started now: an embedder that can run it in the
        background (``start_query``) does so while recall searches by words; any other runs when
        the vector is first read. When the embedder is unavailable the vector is ``None`` and
        recall goes on by text alone and says so (``semantic_unavailable``) rather than failing."""
        embedder = self.deps.embedder
        start = getattr(embedder, "start_query", None)
        return PendingVector(lambda: query_vector(embedder, text)) if start is None else PendingVector(start(text))

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
            occurred_after=shifted(ep.occurred_at, -window),
            occurred_before=shifted(ep.occurred_at, window),
        )
        same, at = session_turns(self.deps.episodes, around, ep)
        if at is None:
            return item
        chosen = same[max(at - count, 0) : at] + same[at + 1 : at + 1 + count]
        turns = [NeighbourTurn(event_id=e.event_id, occurred_at=e.occurred_at, summary=e.summary) for e in chosen]
        return item.model_copy(update={"neighbours": turns})

"""Conversation memory: a session's turns become episodes, and a session ends with a handoff.

Each turn is proposed as a ``conversation_turn`` through the same write policy as any write
(so small talk is left out with ``not_memorable``, and every decision is audited), with the
turn id as its source and the session as its ``sessionId``. Turns of one session are each
other's neighbours in recall. ``end_session`` writes the handoff summary:
a ``session_summary`` of what the session's kept turns said, citing them.
"""

from __future__ import annotations

from datetime import timedelta

from episodic.application.usecases.deps import Deps
from episodic.application.usecases.reads import Reads
from episodic.application.usecases.replies import shifted
from episodic.application.usecases.summarisation import Summarisation
from episodic.application.usecases.writes import Writes
from episodic.domain.access import ACTOR_SCOPED_PRIVACY
from episodic.domain.digests.rules import digestible
from episodic.domain.errors import ActorNotCoveredError, IdempotencyConflictError
from episodic.domain.model import (
    Caller,
    Decision,
    Episode,
    EpisodeProposal,
    EventType,
    ProposedBy,
    RememberResult,
    Role,
    SourceTrust,
    SystemActor,
    TimelineRequest,
)
from episodic.domain.model.conversations import SessionHandoff, Turn, TurnResult, TurnsRequest, TurnsResult

HANDOFF_LOOKBACK = timedelta(hours=12)
"""How far before the first turn of the closing request the handoff looks for the session's turns."""

HANDOFF_MAX_TURNS = 50


class Conversations:
    def __init__(self, deps: Deps, reads: Reads, writes: Writes, summarisation: Summarisation) -> None:
        self.deps = deps
        self.reads = reads
        self.writes = writes
        self.summarisation = summarisation

    def add_turns(
        self, caller: Caller, session_id: str, request: TurnsRequest, idempotency_key: str | None = None
    ) -> TurnsResult:
        """Propose every turn (decided independently, like a batch); then, at the end of the
        session, write its handoff summary.

        A credential bound to actors records only their turns: a turn by any other speaker --
        the assistant's included, unless the credential is bound to the assistant's actor id too
        -- refuses the whole request (403), so nobody's words are stored under another's name."""
        outside = [t.turn_id for t in request.turns if not caller.covers(t.speaker)]
        if outside:
            raise ActorNotCoveredError(
                f"this credential acts for {', '.join(caller.actors or ())} only; turns by other speakers "
                "cannot be recorded with it",
                turnIds=outside,
            )
        proposals = [self._proposal(session_id, turn, request.project_id) for turn in request.turns]
        results = self.writes.remember_batch(caller, proposals, idempotency_key)
        turns = [_turn_result(turn, result) for turn, result in zip(request.turns, results, strict=True)]
        handoff = self._handoff(caller, session_id, request) if request.end_session else None
        kept = sum(1 for r in results if r.decision is not Decision.DENY)
        return TurnsResult(session_id=session_id, turns=turns, kept=kept, handoff=handoff)

    @staticmethod
    def _proposal(session_id: str, turn: Turn, project_id: str | None) -> EpisodeProposal:
        """The turn as a proposal. ``proposedBy`` stays the model's: the agent relays what was
        said, it cannot prove who said it."""
        by_agent = turn.role == "assistant"
        return EpisodeProposal(
            event_type=EventType.CONVERSATION_TURN,
            actor_id=turn.speaker,
            session_id=session_id,
            project_id=project_id,
            occurred_at=turn.occurred_at,
            summary=turn.text,
            source_refs=[turn.turn_id],
            source_trust=SourceTrust.TOOL_RESULT if by_agent else SourceTrust.USER_PROVIDED,
            privacy_class=turn.privacy_class,
        )

    def _handoff(self, caller: Caller, session_id: str, request: TurnsRequest) -> SessionHandoff:
        """The session's handoff summary, stored under its first user's actor id (else its first
        speaker's): of that actor's kept turns and of the others' that every reader of the tenant
        may read. Another speaker's private turn stays out: the summary is read by whoever may
        read that actor's private episodes, who may not read the other speaker's."""
        users = [t.speaker for t in request.turns if t.role == "user"]
        actor = users[0] if users else request.turns[0].speaker
        sources = [
            turn
            for turn in self._session_turns(caller, session_id, request)
            if turn.actor_id == actor or turn.privacy_class not in ACTOR_SCOPED_PRIVACY
        ]
        if not sources:
            return SessionHandoff(decision=Decision.DENY, reasons=["nothing_to_hand_off"])
        proposal = self.summarisation.summary_proposal(
            actor, sources, "handoff", session_id=session_id, project_id=request.project_id
        )
        if proposal is None:
            return SessionHandoff(decision=Decision.DENY, reasons=["nothing_to_hand_off"])
        system = Caller(
            tenant_id=caller.tenant_id,
            role=Role.AGENT,
            principal_id=SystemActor.SESSION_HANDOFF,
            provenance=ProposedBy.WORKFLOW,
        )
        key = f"handoff:{session_id}:{actor}:{request.turns[-1].turn_id}"  # a retried close is a replay
        try:
            result = self.writes.remember(system, proposal, idempotency_key=key)
        except IdempotencyConflictError:
            # The turns are stored by now: the request answers for them, and says why no handoff.
            return SessionHandoff(decision=Decision.DENY, reasons=["handoff_conflict"])
        result = self.summarisation.unless_sources_erased(caller.tenant_id, result, sources)
        return SessionHandoff(
            decision=result.decision,
            reasons=result.reasons,
            event_id=result.event_id,
            summary=proposal.summary if result.decision is Decision.ALLOW else None,  # held text is for reviewers
            cited_turn_ids=[ref for e in sources for ref in e.source_refs],
        )

    def _session_turns(self, caller: Caller, session_id: str, request: TurnsRequest) -> list[Episode]:
        """The session's kept turns (each speaker's, so private ones count too; never a
        sensitive one, which a summary may not repeat), oldest first."""
        start = shifted(min(t.occurred_at for t in request.turns), -HANDOFF_LOOKBACK)  # held at year 1
        end = shifted(max(t.occurred_at for t in request.turns), timedelta(microseconds=1))
        found: dict[str, Episode] = {}
        for speaker in dict.fromkeys(t.speaker for t in request.turns):
            turns = TimelineRequest(
                actor_id=speaker, event_types=[EventType.CONVERSATION_TURN], occurred_after=start,
                occurred_before=end, limit=HANDOFF_MAX_TURNS, newest_first=True,
            )  # fmt: skip
            page = self.reads.timeline(caller, turns)
            found.update({e.event_id: e for e in page.items if e.session_id == session_id and digestible(e)})
        return sorted(found.values(), key=lambda e: e.occurred_at)[-HANDOFF_MAX_TURNS:]


def _turn_result(turn: Turn, result: RememberResult) -> TurnResult:
    return TurnResult(
        turn_id=turn.turn_id,
        decision=result.decision,
        reasons=result.reasons,
        event_id=result.event_id,
        review_id=result.review_id,
        sentences=result.sentences,
        suggested_privacy_class=result.suggested_privacy_class,
    )

"""The reply to a question turn: where a conversation's answer usually sits.

People ask "so you're leaving the garden centre for good?" and the other answers "yep,
handing my notice in tomorrow. Four years ...". A later question about the garden centre
matches the question turn best, while the fact is in the reply, which may share none of its
words. Recall therefore looks up, for its most relevant question turns, the next turn of the
same session when another speaker says it, and the ranker lets that reply inherit part of the
question's relevance (:class:`~episodic.domain.recall.ranking.RankingWeights`, ``reply_share``).

The reply is read under the recall's own scope -- its statuses, privacy rule, actor, tags and
time window -- so a turn the recall could not return is never found this way. Recall's
neighbouring turns are read through the same :func:`sessions_around`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from episodic.application.ports import EpisodeStore, Scope, TimelineQuery
from episodic.domain.model import Episode, EventType

REPLY_WINDOW = timedelta(hours=1)
"""How long after a question its reply may come (turns of one session often share one time)."""

SESSION_TURNS = 200
"""Turns read around a turn: a session is rarely longer within one window."""


NEIGHBOUR_WINDOW = timedelta(hours=1)
"""How far before and after a recalled turn its neighbouring turns may be."""

TurnsRead = dict[tuple[Scope, str], tuple[list[Episode], int | None]]
"""What :func:`sessions_around` read for one recall, by window and turn: a window asked for again
(read ahead by :func:`read_ahead`) is not read twice."""


def replies_to(
    store: EpisodeStore, scope: Scope, questions: Iterable[Episode], known: TurnsRead | None = None
) -> dict[str, Episode]:
    """``{question id: its reply}`` for each question turn whose next turn in its session, in
    ``scope``, is another speaker's (all questions' turns read at once; those in ``known`` not again)."""
    if not follows_replies(scope):
        return {}
    asked = list(questions)
    found = {}
    around = sessions_around(store, [_after(scope, q) for q in asked], asked, known)
    for question, (same, at) in zip(asked, around, strict=True):
        reply = same[at + 1] if at is not None and at + 1 < len(same) else None
        if reply is not None and reply.actor_id != question.actor_id:
            found[question.event_id] = reply
    return found


def follows_replies(scope: Scope) -> bool:
    """Whether ``scope`` holds conversation turns, whose replies a recall looks up."""
    return not scope.event_types or EventType.CONVERSATION_TURN in scope.event_types


def neighbour_windows(scope: Scope, turns: Sequence[Episode]) -> list[Scope]:
    """Where each turn's neighbouring turns may be: ``scope`` (its statuses, project and, above all,
    its privacy rule) narrowed to the turn's actor and :data:`NEIGHBOUR_WINDOW` around it. Naming the
    actor here must not admit the private turns an unscoped recall may not show."""
    return [
        replace(scope, actor_id=turn.actor_id, event_types=(EventType.CONVERSATION_TURN,), tags=(),
                occurred_after=shifted(turn.occurred_at, -NEIGHBOUR_WINDOW),
                occurred_before=shifted(turn.occurred_at, NEIGHBOUR_WINDOW))
        for turn in turns
    ]  # fmt: skip


def session_turns(episodes: Iterable[Episode]) -> list[Episode]:
    """The conversation turns among ``episodes`` that belong to a session (only they have neighbours)."""
    return [e for e in episodes if e.event_type is EventType.CONVERSATION_TURN and e.session_id]


def read_ahead(
    store: EpisodeStore, scope: Scope, turns: Sequence[Episode], questions: Sequence[Episode], known: TurnsRead
) -> None:
    """Read into ``known`` what a recall in ``scope`` would read if ``turns`` were among its items
    (their neighbours) and ``questions`` among its question turns (their replies), all at once:
    for a recall that has a core to spare while the model embeds its question."""
    turns = session_turns(turns)
    asked = list(questions) if follows_replies(scope) else []
    windows = [*neighbour_windows(scope, turns), *(_after(scope, q) for q in asked)]
    sessions_around(store, windows, [*turns, *asked], known)


def _after(scope: Scope, question: Episode) -> Scope:
    """Where ``question``'s reply may be: its session's turns from it to :data:`REPLY_WINDOW` after,
    within ``scope``."""
    after = question.occurred_at
    if scope.occurred_after is not None:
        after = max(after, scope.occurred_after)
    before = shifted(question.occurred_at, REPLY_WINDOW)
    if scope.occurred_before is not None:
        before = min(before, scope.occurred_before)
    return replace(scope, event_types=(EventType.CONVERSATION_TURN,), occurred_after=after, occurred_before=before)


def sessions_around(
    store: EpisodeStore, windows: Sequence[Scope], turns: Sequence[Episode], known: TurnsRead | None = None
) -> list[tuple[list[Episode], int | None]]:
    """For each turn, the turns of its session inside its window (a scope its caller has narrowed
    to a time near the turn), in timeline order, and the turn's place among them (None when the
    window does not hold it); every window not in ``known`` read at once (``EpisodeStore.timelines``),
    and kept there. Shared by the reply lookup and recall's neighbouring turns."""
    keys = [(window, turn.event_id) for window, turn in zip(windows, turns, strict=True)]
    kept = {} if known is None else known
    missing = list(dict.fromkeys(key for key in keys if key not in kept))
    queries = [TimelineQuery(scope=window, limit=SESSION_TURNS, newest_first=False) for window, _ in missing]
    sessions = {turn.event_id: turn.session_id for turn in turns}
    for (window, turn_id), page in zip(missing, store.timelines(queries) if queries else [], strict=True):
        same = [other for other in page if other.session_id == sessions[turn_id]]
        kept[window, turn_id] = same, next((i for i, other in enumerate(same) if other.event_id == turn_id), None)
    return [kept[key] for key in keys]


def shifted(moment: datetime, delta: timedelta) -> datetime:
    """``moment + delta``, held at the calendar's ends: a turn dated 9999-12-31 23:30 still has
    turns around it to look for, not an ``OverflowError``."""
    try:
        return moment + delta
    except OverflowError:
        edge = datetime.max if delta > timedelta(0) else datetime.min
        return edge.replace(tzinfo=moment.tzinfo)

"""The search behind a recall: the question, then (widening) the question with the names its best
items mention, each round by words and by meaning.

Why the names come from the search by words: the model is still embedding the question while the
index searches its words, so names taken from the best items by words are known before the
question's vector is. Their embedding (:func:`names_vector`, a few tokens, often kept from an
earlier recall) is started while the question's pass runs (beside it when a core is idle: the local
embedder's spare worker), and the second round's words are searched meanwhile, so a widened recall
no longer waits for the first round's search by meaning before it asks the model again. On the
conversation benchmark the names from the best items by words read dev 0.821 / test 0.808 against
0.826 / 0.803 from the best items by words and meaning together (docs/decisions.md, "Names for a
second round come from the words").

An index that searches words and meaning apart (:class:`~episodic.application.ports.SearchesApart`, the
local store) is asked for each on its own, so the words overlap the model, and for both rounds' meaning
in one request once the vectors are there (the scope placed once); one whose hybrid search is a single
request (OpenSearch) is asked once per round. Both ways find the same candidates and the same names.
Of what the search by meaning adds, only the episodes that could still be served are read
(:meth:`~episodic.domain.recall.ranking.Ranker.worth_reading`): most score far below the words' best.

When the embedder runs the question on the recall's own thread (it is idle: a core is free), the
words are searched on a helper thread meanwhile, and the helper then reads ahead what the recall
will likely read after the vector (``ahead``: the turns around the best items by words).
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import math
import operator
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

from episodic.application.ports import (
    Embedder,
    Leaning,
    PendingVector,
    RecallCandidates,
    Scope,
    SearchesApart,
    Vector,
    resolved,
)
from episodic.application.usecases.deps import Deps
from episodic.domain.errors import StorageError
from episodic.domain.model import Caller, Episode, RecallRequest
from episodic.domain.recall.candidates import Candidate
from episodic.domain.recall.query import WIDENING_SOURCES, widening_names
from episodic.domain.recall.ranking import Ranker, Reading, Settled

NAMES_WEIGHT = 0.5
"""How far a second round's vector leans toward the names it adds: the query's vector plus this
share of the names' own vector. Embedding the names alone is a pass over a few tokens where the
whole wider question was a second full one; on the conversation benchmark the mix kept that
question's recall at 0.5 (dev 0.823 against 0.824, test 0.806 against 0.805) and lost at 0.3
(dev 0.820) and 1.0 (dev 0.813)."""


def query_vector(embedder: Embedder, text: str, tenant: str) -> Vector:
    """``text`` embedded as ``tenant``'s question: through ``embed_query`` where the embedder has
    one (see :class:`~episodic.application.ports.Embedder`), else like a stored text."""
    as_query = getattr(embedder, "embed_query", None)
    return as_query(text, tenant=tenant) if as_query is not None else embedder.embed([text])[0]


def searches_apart(index: object) -> bool:
    """Whether ``index`` searches words and meaning apart (:class:`~episodic.application.ports.SearchesApart`):
    then a recall searches the words while the model runs, on a helper when the model runs on its thread."""
    return bool(getattr(index, "searches_apart", False))


def start_embedding(embedder: Embedder, text: str, tenant: str, *, here: bool = False) -> PendingVector:
    """``text``'s embedding as ``tenant``'s question, started now: an embedder that can run it in
    the background (``start_query``) does so while recall searches by words; any other runs when the
    vector is first read. With ``here`` (the recall can hand its words to a helper: an index that
    searches them apart), an embedder that offers to run it on the recall's own thread
    (``query_here``: it is idle) does so, and the words are searched on a helper thread meanwhile
    (:data:`WORDS_ALONGSIDE`). When the embedder is unavailable the vector is ``None`` and recall
    goes on by text alone and says so (``semantic_unavailable``) rather than failing."""
    offer = getattr(embedder, "query_here", None) if here else None
    run_here = offer(text, tenant=tenant) if offer is not None else None
    if run_here is not None:
        return PendingVector(run_here, here=True)
    start = getattr(embedder, "start_query", None)
    if start is None:
        return PendingVector(lambda: query_vector(embedder, text, tenant))
    wait = start(text, tenant=tenant)
    return PendingVector(wait, getattr(wait, "ready", None))


WORDS_POOL_SHARE = 0.25
"""Of the pool a recall searches by meaning, the share its search by words keeps (an index that
searches them apart; one hybrid request keeps the whole pool). The best items by words are the top
of their list: on the conversation benchmark a quarter of the pool (50) reads as half of it does on
every split, while every candidate kept is one more episode read while the model embeds the
question, and that read is what a recall waits for when the model is quicker (see
``docs/decisions.md``, "The search by words keeps a quarter of the pool")."""

NAMES_EMBEDDED = 2
"""How many of the added names (the first, from the best items) the second round's vector leans
toward; all of them are searched by words. A pass of the model costs ~2 ms however short its text
(two cores), and a name not seen before is one more text of the pass: eight made-up names took
~10 ms where the question took ~4. On the conversation benchmark the first two read as well as all
of them (dev 0.819 against 0.818; test 0.809 against 0.808); one lost (dev 0.815), three and four
read 0.817."""


def names_vector(embedder: Embedder, names: Sequence[str], tenant: str) -> PendingVector:
    """The names' vector: the mean direction of each of the first :data:`NAMES_EMBEDDED` names
    embedded alone, all started now (in one request where the embedder takes several,
    ``start_names`` or ``start_queries``: one pass of the model for all; ``start_names`` may take
    a lighter pass, as the names only tilt the question's vector).

    One name at a time, because names recur (the customers, products and people of a tenant) and
    the embedder keeps what it embedded for the tenant: a recall whose names were all seen before
    waits for no model pass at all. The mean read the same as the names embedded together on the
    conversation benchmark (dev 0.821 against 0.820, test 0.808 against 0.808)."""
    wanted = list(names[:NAMES_EMBEDDED])
    start_all = getattr(embedder, "start_names", None) or getattr(embedder, "start_queries", None)
    if start_all is not None:
        each = [PendingVector(wait, getattr(wait, "ready", None)) for wait in start_all(wanted, tenant=tenant)]
    else:
        each = [start_embedding(embedder, name, tenant) for name in wanted]

    def mean() -> Vector | None:
        vectors = [floats(v) for v in (pending.value() for pending in each) if v is not None]
        if any(pending.failed for pending in each):
            raise StorageError("the embedder could not embed the names")  # said as semantic_unavailable
        if not vectors:
            return None
        total = functools.reduce(lambda a, b: list(map(operator.add, a, b)), vectors)
        return unit(total)

    return PendingVector(mean, lambda: all(pending.ready() for pending in each))


def floats(vector: Vector) -> list[float]:
    """``vector`` as a list of floats: through its own ``tolist`` where it has one (an array from
    the model, whose elements are slow to read one by one), else element by element."""
    as_list = getattr(vector, "tolist", None)
    return as_list() if as_list is not None else [float(x) for x in vector]


def leaning(vector: Vector, toward: Vector, weight: float) -> list[float]:
    """``vector + weight * toward``, made unit length again (both are unit vectors)."""
    return unit(list(map(operator.add, floats(vector), map(operator.mul, itertools.repeat(weight), floats(toward)))))


def unit(vector: list[float]) -> list[float]:
    """``vector`` scaled to unit length (a zero vector as it is). Element-wise through ``map`` and
    ``math.hypot``: a vector has hundreds of elements, and a Python loop over them costs a recall a
    noticeable part of a millisecond."""
    norm = math.hypot(*vector) or 1.0
    return list(map(operator.truediv, vector, itertools.repeat(norm)))


def merged(words: RecallCandidates, meaning: RecallCandidates) -> RecallCandidates:
    """One round's candidates from its two searches: each episode once, with both signals (the
    ones found by meaning first, as an index that searches both at once lists them)."""
    lexical = {c.event_id: c for c in words.items}
    # A candidate found by one search alone is that search's own (its other signal is 0): only those
    # found by both are built anew.
    items = [
        c if (w := lexical.pop(c.event_id, None)) is None else Candidate(c.event_id, w.lexical, c.semantic)
        for c in meaning.items
    ]
    items.extend(lexical.values())
    return RecallCandidates(items, (*words.degraded, *meaning.degraded))


WORDS_ALONGSIDE = ThreadPoolExecutor(max_workers=2, thread_name_prefix="episodic-recall-words")
"""Where a recall's searches by words run when the model embeds its question on the recall's own
thread (``PendingVector.here``). Handing the question to the embedder's worker and its vector
back costs two thread wake-ups on the way to the vector; handing the words to a helper costs one,
off that way, as they take less time than the model's pass. An embedder offers that only when it is
idle, so few recalls at a time use these threads; they start on first use and end with the process."""

ReadAhead = Callable[[Sequence[Candidate], dict[str, Episode]], None]
"""What a recall reads ahead from its best items by words (in order) and the episodes read for them."""

ByWords = tuple[RecallCandidates, dict[str, Episode], list[str], PendingVector | None, RecallCandidates, Any]
"""What :meth:`SearchRounds._by_words` finds: first round's words, the episodes read, the names,
their pending vector, the second round's words, and the scope placed for the search by meaning."""


@dataclass
class Found:
    """What a recall's search found: the first round, the episodes behind every candidate
    (re-checked against the scope), the query's vector (None without one), and the names the
    second round added with what it found (None when it did not run)."""

    first: RecallCandidates
    episodes: dict[str, Episode]
    vector: Vector | None
    widened: tuple[list[str], RecallCandidates] | None = None
    settled: Settled | None = None
    """What was read, ranked, when nothing more was worth reading (:class:`~episodic.domain.recall.ranking.Reading`)."""


class SearchRounds:
    """Runs a recall's rounds against the index (see the module docstring)."""

    def __init__(self, deps: Deps, caller: Caller, scope: Scope, pool: int, ranker: Ranker, limit: int) -> None:
        """``ranker``: the one that ranks the recall (:meth:`~episodic.domain.recall.ranking.Ranker.for_question`),
        so that what is left unread is what it would not serve; ``limit``: how many items it serves
        (the search by words keeps at least as many)."""
        self.deps, self.caller, self.scope, self.pool, self.ranker = deps, caller, scope, pool, ranker
        self.words_pool = max(limit, int(pool * WORDS_POOL_SHARE))

    def admitted(self, event_ids: Sequence[str]) -> dict[str, Episode]:
        """The episodes behind index hits, re-checked against the scope: the index is a
        projection, the timeline the source of truth."""
        episodes = self.deps.episodes.get_many(self.caller.tenant_id, list(event_ids))
        return {k: e for k, e in episodes.items() if self.scope.admits(e)}

    def search(self, query: str | None, vector: Vector | PendingVector | None) -> RecallCandidates:
        """One search of the scope (by words, meaning or both; the newest without either); by words
        alone, :data:`WORDS_POOL_SHARE` of the pool."""
        deps = self.deps
        pool = self.pool if query is None or vector is not None else self.words_pool
        return deps.index.candidates(self.scope, query, vector, pool, embedder=deps.embedder.name)

    def run(self, query: str, pending: PendingVector, request: RecallRequest, ahead: ReadAhead | None = None) -> Found:
        """Both rounds for ``query`` (embedded as ``pending``), the second only when ``request``
        widens and the first round's best items by words name something the query does not.
        When the model runs on this thread, ``ahead`` is given the first round's best items by words
        and the episodes read once they are searched, on the helper, while the model still runs."""
        index = self.deps.index
        if not searches_apart(index):
            return self._together(query, pending, request)
        if pending.here:  # the model runs on this thread: the words on a helper meanwhile
            # in the recall's context, so what the helper logs carries the request's id
            helped = WORDS_ALONGSIDE.submit(contextvars.copy_context().run, self._by_words, query, request, ahead)
            pending.value()
            words, episodes, names, toward, second_words, placement = helped.result()
        else:
            words, episodes, names, toward, second_words, placement = self._by_words(query, request)
        vector = resolved(pending)
        meaning = cast(SearchesApart, index)
        together = toward is None or toward.ready()  # else the question's meaning is searched while the names' embed
        direction = resolved(toward) if together else None  # the names' vector
        lean = None if vector is None or direction is None else Leaning(0, direction, NAMES_WEIGHT)
        by_meaning = self._by_meaning(meaning, [vector, lean], placement)
        first = merged(words, by_meaning[0])
        if not together:
            by_meaning[1] = self._by_meaning(meaning, [None, self._lean(vector, toward)], placement)[1]
        second = merged(second_words, by_meaning[1]) if names else None
        reading = self._worth_reading(first, second, episodes, vector is not None, request)
        episodes.update(self.admitted(reading.ids))
        result = Found(first, episodes, vector, settled=reading.settled)
        if second is not None:
            result.widened = names, RecallCandidates(second.items, (*second.degraded, *self._failed(toward)))
        return result

    def _by_words(self, query: str, request: RecallRequest, ahead: ReadAhead | None = None) -> ByWords:
        """What both rounds need before the question's vector: the first round's search by words and
        its episodes, the names it widens with (their embedding started), the second round's search
        by words and its episodes (read before the vector is waited for, as the first round's are),
        and what the search by meaning reads before it needs a vector (``SearchesApart.place``)."""
        words = self.search(query, None)
        episodes = self.admitted([c.event_id for c in words.items])
        names = self._names(query, words.items, episodes) if request.widen else []
        toward = names_vector(self.deps.embedder, names, self.caller.tenant_id) if names else None
        second_words = self.search(f"{query} {' '.join(names)}", None) if names else RecallCandidates()
        episodes.update(self.admitted([c.event_id for c in second_words.items if c.event_id not in episodes]))
        if ahead is not None:
            ahead(words.items, episodes)
        # The names' cosines are measured now when their vector is here: the second round then costs
        # no product after the question's vector (:class:`~episodic.application.ports.Leaning`).
        ready = resolved(toward) if toward is not None and toward.ready() else None
        placement = cast(SearchesApart, self.deps.index).place(self.scope, self.deps.embedder.name, ready)
        return words, episodes, names, toward, second_words, placement

    def _together(self, query: str, pending: PendingVector, request: RecallRequest) -> Found:
        """:meth:`run` against an index that searches words and meaning in one request a round."""
        first = self.search(query, pending)
        episodes = self.admitted([c.event_id for c in first.items])
        names = self._names(query, first.items, episodes) if request.widen else []
        toward = names_vector(self.deps.embedder, names, self.caller.tenant_id) if names else None
        vector = resolved(pending)
        found = Found(first, episodes, vector)
        if names:
            second = self.search(f"{query} {' '.join(names)}", self._lean(vector, toward))
            episodes.update(
                self.admitted(self._worth_reading(first, second, episodes, vector is not None, request).ids)
            )
            found.widened = names, RecallCandidates(second.items, (*second.degraded, *self._failed(toward)))
        return found

    def _names(self, query: str, first: Sequence[Candidate], episodes: dict[str, Episode]) -> list[str]:
        """The names the first round's best items by words mention that the query does not."""
        by_words = [c._replace(semantic=0.0) for c in first if c.lexical > 0 and c.event_id in episodes]
        best = self.ranker.leading(by_words, episodes, False, WIDENING_SOURCES)
        actors = {episodes[c.event_id].actor_id for c in by_words}
        return widening_names(query, [e.summary for e in best], actors) if best else []

    def _worth_reading(
        self,
        first: RecallCandidates,
        second: RecallCandidates | None,
        episodes: dict[str, Episode],
        semantic: bool,
        request: RecallRequest,
    ) -> Reading:
        """The candidates not read yet that could still be served (``Ranker.worth_reading``): what the
        search by meaning adds is mostly far below the words' best, and is not read."""
        widened = None if second is None else second.items
        return self.ranker.worth_reading(first.items, episodes, self.scope.now, request.limit, semantic, widened)

    def _by_meaning(
        self, index: SearchesApart, vectors: Sequence[Vector | Leaning | None], placement: Any
    ) -> list[RecallCandidates]:
        """What ``index`` finds by the meaning of each of ``vectors`` in one request (nothing for ``None``),
        with the scope as ``placement`` placed it."""
        wanted = [v for v in vectors if v is not None]
        embedder = self.deps.embedder.name
        found = iter(index.by_meaning(self.scope, wanted, self.pool, embedder, placement) if wanted else [])
        return [RecallCandidates() if v is None else next(found) for v in vectors]

    @staticmethod
    def _lean(vector: Vector | None, toward: PendingVector | None) -> list[float] | None:
        """The second round's vector: the query's ``vector`` leaning toward the names' (:data:`NAMES_WEIGHT`),
        when both could be made."""
        names = resolved(toward)
        return None if vector is None or names is None else leaning(vector, names, NAMES_WEIGHT)

    @staticmethod
    def _failed(toward: PendingVector | None) -> tuple[str, ...]:
        return ("semantic_unavailable",) if toward is not None and toward.failed else ()

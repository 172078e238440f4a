"""A recall's search rounds (episodic.application.usecases.rounds): the names for a second round
come from the best items by words, so their embedding is started before the question's vector is
waited for; an index that searches words and meaning apart finds what one that searches both at
once finds; each name is embedded alone, and a failure of the names' embedding is said."""

from __future__ import annotations

import contextvars
import threading
from dataclasses import replace

import pytest

from episodic.application.ports import Leaning, RecallCandidates
from episodic.application.usecases.reads import Reads
from episodic.application.usecases.rounds import merged, names_vector
from episodic.domain.errors import StorageError
from episodic.domain.model import RecallRequest
from episodic.domain.recall.candidates import Candidate
from tests.support.factories import AGENT, proposal, remember_turn

QUESTION = "how does dana know the friend who talked her into the half marathon?"


class RecordingEmbedderDouble:
    """TEST DOUBLE: the hashing embedder with ``start_query``, recording when each text's
    embedding was started and waited for; texts in ``failing`` fail when waited for."""

    def __init__(self, real, failing: frozenset[str] = frozenset()) -> None:
        self.real, self.failing, self.events = real, failing, []
        self.name, self.dimension = real.name, real.dimension

    def embed(self, texts):
        return self.real.embed(texts)

    def start_query(self, text, tenant=None):
        self.events.append(("start", text))

        def wait():
            self.events.append(("wait", text))
            if text in self.failing:
                raise StorageError("the model stopped")
            return self.real.embed([text])[0]

        return wait


class OneRequestIndexDouble:
    """TEST DOUBLE: the real local index, seen as one whose hybrid search is one request (it does
    not say ``searches_apart``), counting the searches asked of it."""

    def __init__(self, real) -> None:
        self.real, self.searches = real, 0

    def candidates(self, *args, **kwargs):
        self.searches += 1
        return self.real.candidates(*args, **kwargs)


class CountingApartIndexDouble:
    """TEST DOUBLE: the real local index, counting what it is asked by meaning alone."""

    searches_apart = True

    def __init__(self, real) -> None:
        self.real, self.by_meaning_calls, self.pools = real, [], []
        self.placed, self.placements_used, self.towards, self.asked = [], [], [], []

    def candidates(self, scope, query, vector, pool_size, embedder=None):
        self.pools.append((query is not None and vector is None, pool_size))
        return self.real.candidates(scope, query, vector, pool_size, embedder)

    def place(self, scope, embedder=None, toward=None):
        self.placed.append(self.real.place(scope, embedder, toward))
        self.towards.append(toward)
        return self.placed[-1]

    def by_meaning(self, scope, vectors, pool_size, embedder=None, placement=None):
        self.by_meaning_calls.append(len(vectors))
        self.asked.append(list(vectors))
        self.placements_used.append(placement)
        return self.real.by_meaning(scope, vectors, pool_size, embedder, placement)


@pytest.fixture
def dana(writes):
    for summary in (
        "Signed up for the half marathon, Kirsty talked me into it",
        "Went bouldering twice with Kirsty from the garden centre",
        "Repainted the whole kitchen sage green at the weekend",
    ):
        assert writes.remember(AGENT, proposal(actorId="dana", summary=summary)).decision == "allow"


def test_given_a_widened_recall_when_searching_then_the_names_embedding_starts_before_the_question_is_waited_for(
    deps, dana
):
    embedder = RecordingEmbedderDouble(deps.embedder)
    answer = Reads(replace(deps, embedder=embedder)).recall(AGENT, RecallRequest(query=QUESTION))
    assert answer.interpretation.widened_with == ["Kirsty"] and answer.degraded == []
    assert embedder.events.index(("start", "Kirsty")) < embedder.events.index(("wait", QUESTION))


def test_given_an_index_searching_both_at_once_when_recalling_then_it_finds_what_the_local_index_finds_apart(
    deps, dana
):
    assert deps.index.searches_apart
    one_request = OneRequestIndexDouble(deps.index)
    apart = Reads(deps).recall(AGENT, RecallRequest(query=QUESTION))
    together = Reads(replace(deps, index=one_request)).recall(AGENT, RecallRequest(query=QUESTION))

    assert one_request.searches == 2  # one per round
    assert together.interpretation.widened_with == apart.interpretation.widened_with == ["Kirsty"]
    assert [i.episode.event_id for i in together.items] == [i.episode.event_id for i in apart.items]
    for mine, theirs in zip(apart.items, together.items, strict=True):
        assert mine.components.relevance == pytest.approx(theirs.components.relevance, abs=1e-9)


class ReadyEmbedderDouble:
    """TEST DOUBLE: the hashing embedder with ``start_query`` whose waits say they are ready (as
    the model's do for a text it embedded before)."""

    def __init__(self, real) -> None:
        self.real, self.name, self.dimension = real, real.name, real.dimension

    def embed(self, texts):
        return self.real.embed(texts)

    def start_query(self, text, tenant=None):
        vector = self.real.embed([text])[0]

        class Done:
            def __call__(self):
                return vector

            def ready(self):
                return True

        return Done()


def test_given_the_names_embedded_when_the_question_is_then_both_rounds_meaning_is_searched_in_one_pass(deps, dana):
    counting = CountingApartIndexDouble(deps.index)
    ready = Reads(replace(deps, index=counting, embedder=ReadyEmbedderDouble(deps.embedder)))
    answer = ready.recall(AGENT, RecallRequest(query=QUESTION))
    assert answer.interpretation.widened_with == ["Kirsty"]
    assert counting.by_meaning_calls == [2]  # the question's vector and the second round's, together
    assert answer.items[0].components.semantic > 0 and answer.items[0].components.widened is not None
    # The second round leans on the question's vector toward the names', whose cosines were measured
    # when the scope was placed (the names were ready then): it costs no product of its own.
    # (A tenant's first search loads its vectors; from the next on, the scope is placed among them.)
    ready.recall(AGENT, RecallRequest(query=QUESTION))
    toward, (_, second), placement = counting.towards[-1], counting.asked[-1], counting.placements_used[-1]
    assert isinstance(second, Leaning) and second.base == 0 and second.toward is toward
    assert placement.placed.toward is toward and placement.placed.toward_cosines is not None


def test_given_the_names_still_embedding_when_the_question_is_ready_then_its_meaning_is_searched_meanwhile(deps, dana):
    counting = CountingApartIndexDouble(deps.index)
    waiting = Reads(replace(deps, index=counting, embedder=RecordingEmbedderDouble(deps.embedder)))
    answer = waiting.recall(AGENT, RecallRequest(query=QUESTION))
    assert counting.by_meaning_calls == [1, 1]  # the question's first, then the names' when they are there
    together = Reads(replace(deps, embedder=ReadyEmbedderDouble(deps.embedder))).recall(
        AGENT, RecallRequest(query=QUESTION)
    )
    assert [i.episode.event_id for i in answer.items] == [i.episode.event_id for i in together.items]


def test_given_a_recall_then_its_search_by_meaning_uses_the_scope_placed_while_the_question_embedded(deps, dana):
    counting = CountingApartIndexDouble(deps.index)
    answer = Reads(replace(deps, index=counting)).recall(AGENT, RecallRequest(query=QUESTION))
    assert answer.items and len(counting.placed) == 1 and counting.placed[0] is not None
    assert counting.placements_used and all(used is counting.placed[0] for used in counting.placements_used)


def test_given_both_searches_of_a_round_then_each_episode_is_listed_once_with_both_signals():
    words = RecallCandidates([Candidate("a", 2.0), Candidate("b", 1.0)], ("lexical_partial",))
    meaning = RecallCandidates([Candidate("b", 0.0, 0.5), Candidate("c", 0.0, 0.4)])
    both = merged(words, meaning)
    assert both.items == [Candidate("b", 1.0, 0.5), Candidate("c", 0.0, 0.4), Candidate("a", 2.0, 0.0)]
    assert both.degraded == ("lexical_partial",)


def test_given_a_recall_then_its_search_by_words_keeps_a_quarter_of_the_pool_and_at_least_the_limit(deps, dana):
    counting = CountingApartIndexDouble(deps.index)
    reads = Reads(replace(deps, index=counting))
    reads.recall(AGENT, RecallRequest(query=QUESTION))
    pool = deps.settings.recall_pool_size
    assert counting.pools and set(counting.pools) == {(True, pool // 4)}  # both rounds' words
    counting.pools.clear()
    small = Reads(replace(deps, index=counting, settings=deps.settings.model_copy(update={"recall_pool_size": 60})))
    small.recall(AGENT, RecallRequest(query=QUESTION, limit=40))
    assert set(counting.pools) == {(True, 40)}  # a quarter of 60 is fewer than the 40 asked for


def test_given_several_names_when_embedded_then_each_alone_and_the_vector_is_their_mean_direction(embedder):
    recording = RecordingEmbedderDouble(embedder)
    vector = names_vector(recording, ["Kirsty", "Porto"], "acme").value()
    assert [text for kind, text in recording.events if kind == "start"] == ["Kirsty", "Porto"]
    kirsty, porto = embedder.embed(["Kirsty", "Porto"])
    total = [float(a) + float(b) for a, b in zip(kirsty, porto, strict=True)]
    norm = sum(x * x for x in total) ** 0.5
    assert vector == pytest.approx([x / norm for x in total], abs=1e-9)


def test_given_many_names_when_embedded_then_only_the_first_two_are_passed_to_the_model(embedder):
    """Each name the model has not seen is one more text of a pass; the rest are searched by words."""
    recording = RecordingEmbedderDouble(embedder)
    names = ["Kirsty", "Porto", "Velorasa", "Kalomiten"]
    assert names_vector(recording, names, "acme").value() == pytest.approx(
        names_vector(embedder, names[:2], "acme").value(), abs=1e-6
    )
    assert [text for kind, text in recording.events if kind == "start"] == ["Kirsty", "Porto"]


def test_given_the_names_embedding_failing_when_recalling_then_the_second_round_goes_by_words_and_says_so(deps, dana):
    embedder = RecordingEmbedderDouble(deps.embedder, failing=frozenset({"Kirsty"}))
    answer = Reads(replace(deps, embedder=embedder)).recall(AGENT, RecallRequest(query=QUESTION))
    assert answer.interpretation.widened_with == ["Kirsty"]
    assert answer.degraded == ["semantic_unavailable"]
    assert answer.items[0].components.semantic > 0  # the question's own vector still served the first round


def test_given_an_episode_erased_by_another_process_when_recalled_then_it_is_not_served(deps, writes, store, tmp_path):
    from episodic.adapters.sqlite.store import SqliteStore
    from episodic.application.ports import Changes

    doomed = writes.remember(AGENT, proposal(summary="Customer wants invoices as PDF from now on"))
    reads = Reads(deps)
    assert [i.episode.event_id for i in reads.recall(AGENT, RecallRequest(query="invoices as PDF")).items] == [
        doomed.event_id
    ]
    other = SqliteStore(tmp_path / "episodic.db", embedder=deps.embedder.name)  # another --workers process
    other.episodes.apply(Changes(tenant_id="acme", delete=[doomed.event_id]))
    other.close()
    assert reads.recall(AGENT, RecallRequest(query="invoices as PDF")).items == []


class NamesEmbedderDouble(RecordingEmbedderDouble):
    """TEST DOUBLE: the recording embedder that also offers ``start_names`` (a lighter pass for names)."""

    def start_names(self, texts, tenant=None):
        self.events.append(("names", tuple(texts)))
        return [lambda text=text: self.real.embed([text])[0] for text in texts]


def test_given_an_embedder_with_a_lighter_pass_for_names_then_the_names_take_it_in_one_request(embedder):
    names = NamesEmbedderDouble(embedder)
    vector = names_vector(names, ["Kirsty", "Porto", "Velorasa"], "acme").value()
    assert names.events == [("names", ("Kirsty", "Porto"))]  # one request, not a question each
    assert vector == pytest.approx(names_vector(embedder, ["Kirsty", "Porto"], "acme").value(), abs=1e-9)


class HereEmbedderDouble:
    """TEST DOUBLE: the hashing embedder offering ``query_here`` (as the model does when idle),
    recording on which thread the question is embedded and the index searched by words."""

    def __init__(self, real) -> None:
        self.real, self.name, self.dimension = real, real.name, real.dimension
        self.question_thread: int | None = None
        self.offered = False

    def embed(self, texts):
        return self.real.embed(texts)

    def query_here(self, text, tenant=None):
        self.offered = True

        def run():
            self.question_thread = threading.get_ident()
            return self.real.embed([text])[0]

        return run


REQUEST = contextvars.ContextVar("request", default=None)


class WordsThreadIndexDouble(CountingApartIndexDouble):
    """TEST DOUBLE: the real local index, recording the threads it is searched by words on and the
    request each search saw in its context (as a logger's per-request keys would)."""

    def __init__(self, real) -> None:
        super().__init__(real)
        self.words_threads: set[int] = set()
        self.requests: set[str | None] = set()

    def candidates(self, scope, query, vector, pool_size, embedder=None):
        self.words_threads.add(threading.get_ident())
        self.requests.add(REQUEST.get())
        return super().candidates(scope, query, vector, pool_size, embedder)


def test_given_an_embedder_running_the_question_on_the_recalls_thread_then_the_words_are_searched_meanwhile_on_a_helper(
    deps, dana
):
    embedder, index = HereEmbedderDouble(deps.embedder), WordsThreadIndexDouble(deps.index)
    asked = REQUEST.set("request-7")
    try:
        here = Reads(replace(deps, embedder=embedder, index=index)).recall(AGENT, RecallRequest(query=QUESTION))
    finally:
        REQUEST.reset(asked)
    assert embedder.question_thread == threading.get_ident()
    assert index.words_threads and threading.get_ident() not in index.words_threads
    assert index.requests == {"request-7"}  # the helper ran in the recall's context
    usual = Reads(deps).recall(AGENT, RecallRequest(query=QUESTION))
    assert here.interpretation.widened_with == usual.interpretation.widened_with == ["Kirsty"]
    assert [i.episode.event_id for i in here.items] == [i.episode.event_id for i in usual.items]
    assert here.degraded == usual.degraded == []


class TimelinesRecordingDouble:
    """TEST DOUBLE: the real episode store, recording on which thread each read of pages around
    turns (``timelines``) ran and how many windows it read."""

    def __init__(self, real) -> None:
        self.real, self.reads = real, []

    def timelines(self, queries):
        self.reads.append((threading.get_ident(), len(queries)))
        return self.real.timelines(queries)

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def lisbon(writes):
    for minute, actor, summary in (
        (0, "aga", "Are you still moving to Lisbon on 22 April?"),
        (1, "rafael", "Yes, the relocation company found us a flat in Alfama"),
        (2, "aga", "Lovely, I will visit you in Lisbon in May"),
        (3, "rafael", "Bring the good coffee, the Lisbon roasters are closed on Mondays"),
    ):
        remember_turn(writes, summary, minute, "s-lisbon", actorId=actor)
    for minute, actor, summary in (
        (90, "aga", "Did the Porto roaster ship our beans for the cafe opening?"),
        (91, "rafael", "Yes, the roaster ships the beans on Friday"),
    ):
        remember_turn(writes, summary, minute, "s-beans", actorId=actor)


def test_given_a_recall_with_a_core_to_spare_then_the_turns_around_its_best_items_by_words_are_read_ahead(deps, lisbon):
    question = "when is rafael moving to Lisbon?"
    alone = TimelinesRecordingDouble(deps.episodes)
    usual = Reads(replace(deps, episodes=alone)).recall(AGENT, RecallRequest(query=question))
    recording = TimelinesRecordingDouble(deps.episodes)
    here = Reads(replace(deps, embedder=HereEmbedderDouble(deps.embedder), episodes=recording)).recall(
        AGENT, RecallRequest(query=question)
    )
    assert [i.episode.event_id for i in here.items] == [i.episode.event_id for i in usual.items]
    assert [[n.event_id for n in i.neighbours] for i in here.items] == [
        [n.event_id for n in i.neighbours] for i in usual.items
    ]
    assert any(i.neighbours for i in here.items) and any(i.components.replies_to for i in here.items)
    ahead = sum(windows for thread, windows in recording.reads if thread != threading.get_ident())
    after = sum(windows for thread, windows in recording.reads if thread == threading.get_ident())
    by_words = sum(1 for i in here.items if i.components.lexical > 0)
    assert ahead >= by_words > 0  # the turns of every item found by words, read on the helper
    assert after == sum(windows for _, windows in alone.reads) - by_words - 1  # and the reply to their question


def test_given_an_index_searching_both_at_once_then_the_question_is_never_run_on_the_recalls_thread(deps, dana):
    """Such an index reads the words before it waits for the vector: the model must run meanwhile."""
    embedder = HereEmbedderDouble(deps.embedder)
    answer = Reads(replace(deps, embedder=embedder, index=OneRequestIndexDouble(deps.index))).recall(
        AGENT, RecallRequest(query=QUESTION)
    )
    assert not embedder.offered and embedder.question_thread is None
    assert answer.interpretation.widened_with == ["Kirsty"]

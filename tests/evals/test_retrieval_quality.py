"""Retrieval quality on the labelled set in tests/evals/retrieval/ (real model, real SQLite).

Prints recall@10 and nDCG@10 per query kind for BM25 only, vectors only and the service's
hybrid ranking (run with -s to see the table), and fails if the hybrid does not beat both
baselines overall, or falls below the floors recorded here.
"""

from pathlib import Path

import pytest

from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.evals.governance import evaluate_retrieval, format_table, load_episodes, load_set
from tests.support.doubles import FixedClock
from tests.support.factories import AGENT

SET = Path(__file__).parent / "retrieval"
FLOORS = {"recall": 0.80, "ndcg": 0.70}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, minilm):
    episodes, queries = load_set(SET)
    service = build_local_service(
        Settings(data_dir=tmp_path_factory.mktemp("retrieval")), embedder=minilm, clock=FixedClock()
    )
    keys = load_episodes(service, AGENT, episodes)
    results = evaluate_retrieval(service, AGENT, queries, keys, k=10)
    service.close()
    print("\n" + format_table(results))
    return episodes, queries, results


def test_given_the_labelled_set_when_loaded_then_it_is_large_enough(evaluated):
    episodes, queries, _ = evaluated
    assert len(episodes) >= 500 and len(queries) >= 150
    assert sum(q["kind"] == "temporal" for q in queries) >= 30


def test_given_the_labelled_set_when_recalled_then_the_hybrid_beats_bm25_and_vectors(evaluated):
    _, _, results = evaluated
    hybrid, bm25, vector = results["hybrid"], results["bm25"], results["vector"]
    assert hybrid.recall > max(bm25.recall, vector.recall)
    assert hybrid.ndcg > max(bm25.ndcg, vector.ndcg)


def test_given_the_labelled_set_when_recalled_then_the_hybrid_clears_the_recorded_floors(evaluated):
    hybrid = evaluated[2]["hybrid"]
    assert hybrid.recall >= FLOORS["recall"], hybrid.misses[:5]
    assert hybrid.ndcg >= FLOORS["ndcg"], hybrid.misses[:5]

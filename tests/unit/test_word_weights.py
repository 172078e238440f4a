"""BM25's weights of a query's words (episodic.domain.recall.candidates.word_weights), which both
indexes use with counts over what the caller may read."""

from __future__ import annotations

import math

import pytest

from episodic.domain.recall.candidates import NO_WEIGHT, word_weights


def test_given_counts_then_each_word_held_weighs_its_idf_and_a_word_held_by_none_is_left_out():
    weights = word_weights(40, {"invoice": 3, "format": 12, "vorpal": 0})
    assert weights == pytest.approx({"invoice": math.log(37.5 / 3.5), "format": math.log(28.5 / 12.5)})


def test_given_only_common_words_then_each_held_one_weighs_the_floor():
    assert word_weights(4, {"invoice": 3, "paid": 2, "vorpal": 0}) == {"invoice": NO_WEIGHT, "paid": NO_WEIGHT}


def test_given_a_count_above_the_texts_counted_then_it_is_taken_as_every_text_not_an_error():
    """Counted apart (the OpenSearch index counts the scope and each word in separate searches), a
    word's count may pass the scope's after a write between them."""
    assert word_weights(5, {"invoice": 6, "rare": 1}) == pytest.approx({"rare": math.log(4.5 / 1.5)})
    assert word_weights(5, {"invoice": 6}) == {"invoice": NO_WEIGHT}

"""How the ONNX embedder groups texts into forward passes: every text in exactly one pass, no pass
over the batch size, and a short question never padded to a paragraph's width. Pure grouping over
token counts; the vectors themselves are checked against PyTorch in the integration tier."""

from __future__ import annotations

import random

from episodic.adapters.minilm.runtime import PADDING_ALLOWANCE, padded_runs


def _slots_per_token(run: list[int], lengths: list[int]) -> float:
    return len(run) * max(lengths[i] for i in run) / sum(lengths[i] for i in run)


def test_given_a_question_and_a_paragraph_when_grouped_then_they_run_apart():
    lengths = [12, 240]
    assert padded_runs(lengths, batch_size=64) == [[0], [1]]


def test_given_texts_of_one_length_when_grouped_then_passes_fill_up_to_the_batch_size():
    runs = padded_runs([20] * 10, batch_size=4)
    assert [len(run) for run in runs] == [4, 4, 2]


def test_given_mixed_lengths_when_grouped_then_each_text_is_in_one_pass_and_padding_is_bounded():
    rng = random.Random(7)
    lengths = [rng.randint(3, 256) for _ in range(500)]
    runs = padded_runs(lengths, batch_size=32)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    assert all(1 <= len(run) <= 32 for run in runs)
    assert all(_slots_per_token(run, lengths) <= PADDING_ALLOWANCE for run in runs)


def test_given_similar_lengths_when_grouped_then_they_share_a_pass_despite_small_differences():
    lengths = [30, 31, 32, 33, 34, 35]
    assert padded_runs(lengths, batch_size=64) == [[0, 1, 2, 3, 4, 5]]


def test_given_nothing_when_grouped_then_there_are_no_passes():
    assert padded_runs([], batch_size=8) == []

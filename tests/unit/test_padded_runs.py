"""How the ONNX embedder groups texts into forward passes: every text in exactly one pass, no pass
over the batch size, and a short question never padded to a paragraph's width. Pure grouping over
token counts; the vectors themselves are checked against PyTorch in the integration tier."""

from __future__ import annotations

import random

from episodic.adapters.minilm.runtime import RUN_COST_IN_SLOTS, padded_runs


def _cost(runs: list[list[int]], lengths: list[int], threads: int = 1) -> int:
    return sum(RUN_COST_IN_SLOTS[threads] + len(run) * max(lengths[i] for i in run) for run in runs)


def _every_grouping(items: list[int]) -> list[list[list[int]]]:
    """Every way to split ``items`` into non-empty groups (set partitions), for small inputs."""
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    out: list[list[list[int]]] = []
    for partition in _every_grouping(rest):
        out.append([[first], *partition])
        for k in range(len(partition)):
            out.append([*partition[:k], [first, *partition[k]], *partition[k + 1 :]])
    return out


def test_given_a_question_and_a_paragraph_when_grouped_then_they_run_apart():
    lengths = [12, 240]
    assert padded_runs(lengths, batch_size=64) == [[0], [1]]


def test_given_texts_of_one_length_when_grouped_then_passes_fill_up_to_the_batch_size():
    runs = padded_runs([20] * 10, batch_size=4)
    assert len(runs) == 3
    assert sorted(len(run) for run in runs) in ([2, 4, 4], [3, 3, 4])


def test_given_mixed_lengths_when_grouped_then_each_text_is_in_one_pass_of_at_most_the_batch_size():
    rng = random.Random(7)
    lengths = [rng.randint(3, 256) for _ in range(500)]
    runs = padded_runs(lengths, batch_size=32)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    assert all(1 <= len(run) <= 32 for run in runs)


def test_given_few_texts_when_grouped_then_no_grouping_costs_less():
    rng = random.Random(11)
    for _ in range(40):
        lengths = [rng.choice([3, 4, 7, 12, 16, 30, 90]) for _ in range(rng.randint(1, 6))]
        batch_size = rng.randint(1, 4)
        for threads in (1, 2):
            runs = padded_runs(lengths, batch_size=batch_size, threads=threads)
            allowed = [g for g in _every_grouping(list(range(len(lengths)))) if all(len(r) <= batch_size for r in g)]
            assert _cost(runs, lengths, threads) == min(_cost(g, lengths, threads) for g in allowed)


def test_given_two_short_names_when_grouped_then_they_share_one_pass():
    assert padded_runs([7, 3], batch_size=64) == [[1, 0]]


def test_given_similar_lengths_when_grouped_then_they_share_a_pass_despite_small_differences():
    lengths = [30, 31, 32, 33, 34, 35]
    assert padded_runs(lengths, batch_size=64) == [[0, 1, 2, 3, 4, 5]]


def test_given_nothing_when_grouped_then_there_are_no_passes():
    assert padded_runs([], batch_size=8) == []

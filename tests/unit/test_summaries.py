"""Composing summarisers (episodic.adapters.summarisers.grounded): the generative digest when it is grounded and
complete, else the extractive one, which cannot invent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from episodic.adapters.bedrock.summariser import IncompleteSummaryError, SummariserError, UngroundedSummaryError
from episodic.adapters.summarisers.grounded import GroundedFallbackSummariser
from episodic.domain.errors import InvalidRequestError, StorageError
from episodic.domain.model import Episode

SECRET_IN_ERROR = "Alice Example paid invoice INV-5521"
"""Text of the kind an error about a digest could carry: it must never reach the log."""


@dataclass
class ScriptedSummariser:
    """TEST DOUBLE: answers with ``lines`` or raises ``error``, recording every call."""

    name: str
    lines: list[str] = field(default_factory=list)
    error: Exception | None = None
    calls: list[tuple[Sequence[Episode], int]] = field(default_factory=list)

    def summarise(self, episodes: Sequence[Episode], max_lines: int = 3) -> list[str]:
        self.calls.append((episodes, max_lines))
        if self.error is not None:
            raise self.error
        return list(self.lines)


def _episodes() -> list[Episode]:
    return [
        Episode.model_validate(
            {
                "event_id": f"01KAZ3Q7J9X2B8M4T6V0W1Y3C{i}",
                "tenant_id": "acme",
                "actor_id": "user-1",
                "event_type": "task_milestone",
                "occurred_at": datetime(2026, 11, 28, 9, i, tzinfo=UTC),
                "recorded_at": datetime(2026, 11, 28, 9, i, tzinfo=UTC),
                "summary": f"Step {i} of the migration finished",
                "source_refs": [f"ci:run-{i}"],
                "source_trust": "tool_result",
                "policy_version": "test",
            }
        )
        for i in range(6)
    ]


GENERATIVE = ["The migration finished in six steps."]
EXTRACTIVE = ["Step 5 of the migration finished", "Step 0 of the migration finished"]


def _pair(**primary: object) -> tuple[GroundedFallbackSummariser, ScriptedSummariser, ScriptedSummariser]:
    generative = ScriptedSummariser("bedrock/converse", **primary)  # type: ignore[arg-type]
    extractive = ScriptedSummariser("extractive/minilm", lines=EXTRACTIVE)
    return GroundedFallbackSummariser(generative, extractive), generative, extractive


def test_given_a_grounded_generative_digest_when_summarised_then_it_is_returned_and_the_fallback_never_runs():
    summariser, generative, extractive = _pair(lines=GENERATIVE)
    episodes = _episodes()

    assert summariser.summarise(episodes, max_lines=2) == GENERATIVE
    assert generative.calls == [(episodes, 2)]
    assert extractive.calls == []


def test_given_no_max_lines_when_summarised_then_three_lines_are_asked_for():
    summariser, generative, _ = _pair(lines=GENERATIVE)
    summariser.summarise(_episodes())
    assert generative.calls[0][1] == 3


def test_given_an_empty_generative_digest_when_summarised_then_the_extractive_one_is_written_for_the_same_request():
    summariser, generative, extractive = _pair(lines=[])
    episodes = _episodes()

    assert summariser.summarise(episodes, max_lines=2) == EXTRACTIVE
    assert extractive.calls == [(episodes, 2)]
    assert extractive.calls[0][0] is generative.calls[0][0]


@pytest.mark.parametrize(
    "error",
    [
        UngroundedSummaryError("every line stated something its events do not"),
        IncompleteSummaryError("content_filtered"),
        SummariserError("ThrottlingException"),
        StorageError("storage unavailable"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_given_a_generative_summariser_that_fails_as_unavailable_when_summarised_then_the_extractive_digest_is_written(
    error,
):
    summariser, _, extractive = _pair(error=error)
    episodes = _episodes()

    assert summariser.summarise(episodes, max_lines=3) == EXTRACTIVE
    assert extractive.calls == [(episodes, 3)]


def test_given_a_fallback_when_it_is_taken_then_the_log_names_the_error_kind_and_never_its_text(caplog):
    summariser, _, _ = _pair(error=UngroundedSummaryError(f"no grounded line: {SECRET_IN_ERROR}"))

    with caplog.at_level("WARNING"):
        summariser.summarise(_episodes())

    (record,) = [r for r in caplog.records if r.name == "episodic-summaries"]
    assert record.levelname == "WARNING"
    assert record.error == "UngroundedSummaryError"
    assert record.exc_info is None
    assert SECRET_IN_ERROR not in repr(vars(record)) and SECRET_IN_ERROR not in caplog.text


@pytest.mark.parametrize("error", [ValueError("max_lines must be at least 1"), InvalidRequestError("bad request")])
def test_given_a_failure_that_is_not_unavailability_when_summarised_then_it_is_raised_not_hidden_by_the_fallback(error):
    summariser, _, extractive = _pair(error=error)

    with pytest.raises(type(error)):
        summariser.summarise(_episodes())
    assert extractive.calls == []


def test_given_both_summarisers_failing_when_summarised_then_the_fallbacks_error_reaches_the_caller():
    generative = ScriptedSummariser("bedrock/converse", error=SummariserError("ThrottlingException"))
    extractive = ScriptedSummariser("extractive/minilm", error=StorageError("embedder down"))
    summariser = GroundedFallbackSummariser(generative, extractive)

    with pytest.raises(StorageError, match="embedder down"):
        summariser.summarise(_episodes())


def test_given_two_summarisers_when_composed_then_the_name_records_both_in_order():
    summariser, _, _ = _pair()
    assert summariser.name == "bedrock/converse|extractive/minilm"

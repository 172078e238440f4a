"""What a digest may repeat and how far it is trusted (episodic.domain.digests.rules)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from episodic.domain.digests.rules import digest_trust, digestible, fitted
from episodic.domain.model import Episode, SourceTrust
from tests.support.factories import proposal_dict


def episode(trust: str, **extra: object) -> Episode:
    now = datetime(2026, 12, 8, tzinfo=UTC).isoformat()
    return Episode.model_validate(
        {**proposal_dict(sourceTrust=trust, **extra), "eventId": f"01J{trust[:6].upper()}", "tenantId": "acme",
         "status": "active", "recordedAt": now, "policyVersion": "test"}
    )  # fmt: skip


def test_given_untrusted_content_when_a_digest_is_made_then_it_is_not_repeated():
    assert digestible(episode("user_provided")) and digestible(episode("tool_result"))
    assert not digestible(episode("untrusted_content"))


@pytest.mark.parametrize(
    ("trusts", "expected"),
    [
        (["tool_result", "user_provided", "operator_entered"], SourceTrust.USER_PROVIDED),
        (["tool_result", "approved_source"], SourceTrust.TOOL_RESULT),
        (["operator_entered"], SourceTrust.OPERATOR_ENTERED),
    ],
)
def test_given_sources_of_several_trusts_when_a_digest_is_made_then_it_is_trusted_as_the_least(trusts, expected):
    assert digest_trust([episode(t) for t in trusts]) is expected


def test_given_lines_too_long_together_when_fitted_then_short_ones_stay_whole_and_long_ones_are_cut_at_a_word():
    lines = ["Short line.", "word " * 900, "another " * 700]
    kept = fitted(lines, 4000)
    assert len("\n".join(kept)) <= 4000
    assert kept[0] == "Short line."
    assert all(line.endswith("...") and not line[:-3].endswith(" ") for line in kept[1:])
    assert kept[1].startswith("word word") and kept[2].startswith("another another")
    assert fitted(["a", "b"], 4000) == ["a", "b"]

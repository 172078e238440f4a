"""Bank account numbers (IBAN) and US Social Security numbers are redacted before storage, and
numbers of the same shape that are neither stay as written."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from episodic.domain.model import Caller, EpisodeProposal, Role
from episodic.domain.policy import WritePolicy
from episodic.domain.policy.secrets import redact

NOW = datetime(2026, 12, 8, tzinfo=UTC)
AGENT = Caller(tenant_id="acme", role=Role.AGENT, principal_id="agent-1")
ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def with_check_digits(country: str, bban: str) -> str:
    """An IBAN built as ISO 13616 says, by long division one character at a time (not as the
    service checks one): 98 minus the remainder of ``bban + country + "00"``, letters as 10-35."""
    remainder = 0
    for char in bban + country + "00":
        for digit in str(ALPHANUMERIC.index(char)):
            remainder = (remainder * 10 + int(digit)) % 97
    return f"{country}{98 - remainder:02d}{bban}"


def grouped(iban: str) -> str:
    return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))


@pytest.mark.parametrize(
    "iban",
    ["DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "NO9386011117947", "gb82 west 1234 5698 7654 32"],
)
def test_given_an_iban_when_redacted_then_it_is_gone_and_the_text_around_it_stays(iban: str) -> None:
    found = redact(f"Refund to {iban} and close the ticket.")
    assert found.text == "Refund to [REDACTED:iban] and close the ticket."
    assert found.kinds == ("iban",)


@given(
    st.sampled_from(["DE", "FR", "GB", "ES", "NL", "IT", "PL", "BR"]),
    st.text(alphabet=ALPHANUMERIC, min_size=11, max_size=30),
    st.booleans(),
)
def test_given_any_iban_with_its_check_digits_when_redacted_then_it_is_found(
    country: str, bban: str, spaced: bool
) -> None:
    iban = with_check_digits(country, bban)
    written = grouped(iban) if spaced else iban
    assert redact(f"pay into {written} today").text == "pay into [REDACTED:iban] today"


@given(st.text(alphabet="0123456789", min_size=16, max_size=20), st.integers(min_value=4, max_value=15))
def test_given_an_iban_with_one_digit_wrong_when_redacted_then_it_is_no_iban(bban: str, position: int) -> None:
    """Mod 97 catches every single wrong digit: such a number is no IBAN (its digits may still
    be a card number's, which is redacted as one)."""
    iban = with_check_digits("DE", bban)
    digit = iban[position]
    wrong = iban[:position] + str((int(digit) + 1) % 10) + iban[position + 1 :]
    assert "iban" not in redact(f"account {wrong}").kinds


@pytest.mark.parametrize(
    "text",
    [
        "Customer SSN 123-45-6789 on file",
        "her social security number is 123 45 6789",
        "ssn: 078051120",
        "Verified 219-09-9999 against the form",
    ],
)
def test_given_an_ssn_when_redacted_then_it_is_gone(text: str) -> None:
    found = redact(text)
    assert found.kinds == ("us_ssn",)
    assert "[REDACTED:us_ssn]" in found.text
    assert not any(run in found.text for run in ("6789", "9999", "51120"))


@pytest.mark.parametrize(
    "text",
    [
        "Part 123-45-6789-01 shipped",  # part of a longer number
        "Order 000-12-3456 and 666-12-3456 and 912-34-5678",  # never issued
        "Call 555-123-4567",
        "Meeting AB12 CDEF GHIJ room",
        "Version 2026-12-08 released",
        "Model XY12ABCDEFGH is in stock",
        "SSN 123456789012",  # twelve digits: no SSN
        "Batch 123456789 arrived",  # nine digits with no name for them
    ],
)
def test_given_a_number_of_the_same_shape_when_redacted_then_it_stays(text: str) -> None:
    assert redact(text).text == text


def test_given_an_iban_in_a_proposal_when_decided_then_it_is_stored_redacted_and_reported() -> None:
    proposal = EpisodeProposal.model_validate(
        {"eventType": "tool_observed_event", "actorId": "sam", "occurredAt": NOW.isoformat(),
         "summary": "Refund of 40 EUR sent to DE89 3704 0044 0532 0130 00 for order 7781",
         "sourceRefs": ["tool:refunds"], "sourceTrust": "tool_result"}
    )  # fmt: skip
    decision, stored = WritePolicy().decide(proposal, AGENT, NOW)
    assert decision.decision == "allow"
    assert "secrets_redacted" in decision.reasons
    assert stored.summary == "Refund of 40 EUR sent to [REDACTED:iban] for order 7781"

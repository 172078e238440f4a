"""Secrets in every stored field: redacted where the field can be
rewritten, refused where it cannot (identifiers).

Credentials are made up here and assembled from pieces, as in ``test_secrets.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from episodic.domain.model import Decision
from episodic.domain.policy import WritePolicy
from tests.support.factories import AGENT, proposal

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
POLICY = WritePolicy()
FAKE_AWS_KEY_ID = "AKIA" + "FAKEEXAMPLE12345"
FAKE_GITHUB = "ghp_" + "FakeTokenForUnitTests0123456789abcd"
FAKE_PASSWORD = "Tr0ub4dor&3-" + "horse"


def _fullwidth(text: str) -> str:
    """The same characters in their full-width forms (U+FF01..U+FF5E)."""
    return "".join(chr(ord(c) + 0xFEE0) for c in text)


def decide(**overrides):
    return POLICY.decide(proposal(**overrides), AGENT, NOW)


def stored_json(**overrides) -> str:
    decision, stored = decide(**overrides)
    assert decision.decision is Decision.ALLOW, decision.reasons
    assert "secrets_redacted" in decision.reasons
    return stored.model_dump_json(by_alias=True)


@pytest.mark.parametrize(
    ("overrides", "secret"),
    [
        pytest.param({"details": {"input": {"password": FAKE_PASSWORD}}}, FAKE_PASSWORD, id="password-key"),
        pytest.param({"details": {"input": {"db": {"apiKey": "plainlooking"}}}}, "plainlooking", id="nested-api-key"),
        pytest.param({"details": {"output": {"client_secret": "s3cr3t-value"}}}, "s3cr3t-value", id="client-secret"),
        pytest.param({"details": {"input": {"pin": 4921}}}, "4921", id="numeric-pin"),
        pytest.param({"details": {"input": {FAKE_AWS_KEY_ID: "x"}}}, FAKE_AWS_KEY_ID, id="secret-as-key-name"),
        pytest.param({"tags": [FAKE_AWS_KEY_ID.lower()]}, FAKE_AWS_KEY_ID.lower(), id="aws-key-in-tag"),
        pytest.param({"tags": ["card-4111111111111111"]}, "4111111111111111", id="card-in-tag"),
        pytest.param({"tags": [FAKE_GITHUB]}, FAKE_GITHUB.lower(), id="github-token-in-tag"),
        pytest.param(
            {"consent": {"required": True, "granted": True, "consentRef": "https://bob:hunter2pw@consent.example/7"}},
            "hunter2pw",
            id="url-password-in-consent-ref",
        ),
        pytest.param({"summary": "Paid with card 4111.1111.1111.1111 today"}, "4111.1111.1111.1111", id="dotted-card"),
        pytest.param({"summary": "Card 4111/1111/1111/1111 declined"}, "4111/1111/1111/1111", id="slashed-card"),
        pytest.param(
            {"summary": "Card " + _fullwidth("4111111111111111") + " on file"}, "1111111111", id="full-width-digits"
        ),
        pytest.param({"outcome": "Reset done, the new pw: Kx9-rr7q"}, "Kx9-rr7q", id="pw-label"),
        pytest.param({"correctionPath": f"rotated {FAKE_GITHUB}"}, FAKE_GITHUB, id="correction-path"),
        pytest.param({"resourceRefs": [f"s3://bucket/key?token={FAKE_GITHUB}"]}, FAKE_GITHUB, id="resource-ref"),
        pytest.param(
            {"decisions": [{"action": "rotate", "confidence": 0.9, "rationale": f"leaked {FAKE_AWS_KEY_ID}"}]},
            FAKE_AWS_KEY_ID,
            id="decision-rationale",
        ),
        pytest.param(
            {"summary": "Glpat token glpat-" + "AbCdEfGhIjKlMnOpQrSt12 leaked"}, "AbCdEfGhIjKlMnOpQrSt12", id="gitlab"
        ),
        pytest.param(
            {"summary": "key sk-ant-" + "api03-FakeAnthropicKey000000"}, "FakeAnthropicKey000000", id="anthropic"
        ),
    ],
)
def test_given_a_secret_in_any_stored_field_when_decided_then_no_copy_of_it_is_stored(overrides, secret):
    assert secret not in stored_json(**overrides)


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"sessionId": FAKE_GITHUB}, id="session-id"),
        pytest.param({"projectId": FAKE_AWS_KEY_ID}, id="project-id"),
        pytest.param({"agentId": "sk_" + "live_" + "FakeStripeKey0000000000000"}, id="agent-id"),
        pytest.param({"actorId": "card-4111111111111111"}, id="actor-id"),
    ],
)
def test_given_a_secret_in_an_identifier_when_decided_then_it_is_refused_not_rewritten(overrides):
    decision, _ = decide(**overrides)
    assert decision.decision is Decision.DENY and decision.reasons == ["secret_in_identifier"]
    assert decision.redactions[0].field == next(iter(overrides))


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"details": {"input": {"password_policy": "12 characters, one digit"}}}, id="password-policy"),
        pytest.param({"details": {"input": {"max_tokens": 512, "token_count": 88}}}, id="token-counts"),
        pytest.param({"details": {"input": {"is_secret": True}}}, id="boolean-flag"),
        pytest.param({"summary": "Order 4111111111111112 shipped (not a card: fails Luhn)"}, id="non-luhn"),
        pytest.param({"summary": "Version 4.1.1.1 released with the 2026.11.28 build"}, id="version-numbers"),
        pytest.param({"tags": ["policy-renewal", "token-bucket"]}, id="ordinary-tags"),
        pytest.param({"sessionId": "01KAZ3Q7J9X2B8M4T6V0W1Y3C5"}, id="ulid-session"),
    ],
)
def test_given_look_alikes_when_decided_then_they_are_stored_as_they_are(overrides):
    decision, stored = decide(**overrides)
    assert decision.decision is Decision.ALLOW and decision.redactions == [], decision
    assert stored == proposal(**overrides)


def test_given_invisible_characters_when_decided_then_the_stored_text_is_normalised():
    decision, stored = decide(summary="Customer\u200b wants " + _fullwidth("invoices") + " as P\u00adDF\u202e")
    assert decision.decision is Decision.ALLOW
    assert stored.summary == "Customer wants invoices as PDF"

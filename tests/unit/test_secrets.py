"""Secret and payment-card redaction (episodic.domain.policy.secrets).

Every credential below is made up here, assembled from pieces so no scanner mistakes the
source for a leak: right shape, obviously fake content. Card numbers are public test
numbers, or are built with a check digit computed by the independent ``_luhn_check_digit``.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from episodic.domain.policy.cards import luhn_valid
from episodic.domain.policy.secrets import _ANY_TOKEN, _PATTERNS, _READ_AS_ENGLISH, Redacted, redact


def _luhn_check_digit(payload: str) -> str:
    """The digit that makes ``payload + digit`` Luhn-valid (written apart from the module's check)."""
    digits = [int(c) for c in payload]
    total = 0
    for position, value in enumerate(reversed(digits)):
        if position % 2 == 0:  # these get doubled once the check digit is on the end
            value = value * 2
            value = value - 9 if value > 9 else value
        total += value
    return str((10 - total % 10) % 10)


def _b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


# Made-up, format-correct credentials.
FAKE_AWS_KEY_ID = "AKIA" + "FAKEEXAMPLE12345"  # 4 + 16 upper-case/digits
FAKE_AWS_SESSION_ID = "ASIA" + "TESTONLY00000000"
FAKE_GITHUB_CLASSIC = "ghp_" + "FakeTokenForUnitTests0123456789abcd"  # 36 after the prefix
FAKE_GITHUB_FINE_GRAINED = "github_pat_" + "11FAKE0000_" + "NotARealTokenJustATestValue" * 3
FAKE_SLACK_BOT = "xoxb-" + "000000000000-000000000000-FakeSlackTokenValue"
FAKE_STRIPE_LIVE = "sk_" + "live_" + "FakeStripeKey0000000000000"
FAKE_STRIPE_RESTRICTED = "rk_" + "live_" + "FakeRestrictedKey000000000"
FAKE_OPENAI = "sk-" + "FakeOpenAIKeyForTests0000000000000000"
FAKE_OPENAI_PROJECT = "sk-" + "proj-" + "FakeProjectKey_for-tests_000000000000"
FAKE_GOOGLE = "AIza" + "SyFAKE_google-api-key-for-tests0000"  # 4 + 35
FAKE_JWT = ".".join(
    [
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "fake-user-1234", "name": "Test Only"}),
        "FakeSignatureNotValid_0000000000",
    ]
)
FAKE_BEARER = "FakeOpaqueBearerToken.0000-test~value"
FAKE_PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIFAKEKEYFORUNITTESTSONLYdGhpcyBpcyBub3QgYSByZWFsIGtleQ==\n"
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MTIzNDU2Nzg5MGZha2U=\n"
    "-----END RSA PRIVATE KEY-----"
)
FAKE_OPENSSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAAFAKEFAKEFAKEFAKEFAKEFAKE\n"
    "-----END OPENSSH PRIVATE KEY-----"
)

BUILT_VISA_19 = "4" + "000123456789012345"[:17]  # 18 digits, check digit added below
BUILT_VISA_19 += _luhn_check_digit(BUILT_VISA_19)
BUILT_MASTERCARD = "520000123456789"
BUILT_MASTERCARD += _luhn_check_digit(BUILT_MASTERCARD)


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def test_given_the_independent_check_digit_helper_when_used_then_the_built_cards_are_genuinely_luhn_valid():
    # Sanity check of the helper itself, against the well-known public test numbers.
    assert _luhn_check_digit("411111111111111") == "1"
    assert _luhn_check_digit("555555555555444") == "4"
    assert _luhn_check_digit("37828224631000") == "5"
    assert len(BUILT_VISA_19) == 19
    assert len(BUILT_MASTERCARD) == 16


# --------------------------------------------------------------------------- payment cards

CARDS = [
    pytest.param("4111 1111 1111 1111", id="visa-test-spaces"),
    pytest.param("5555-5555-5555-4444", id="mastercard-test-dashes"),
    pytest.param("4111111111111111", id="visa-test-no-separators"),
    pytest.param("3782 822463 10005", id="amex-15-digits-4-6-5"),
    pytest.param("6011 1111 1111 1117", id="discover-test"),
    pytest.param("4222222222222", id="visa-13-digits"),
    pytest.param(BUILT_VISA_19, id="built-19-digits"),
    pytest.param(" ".join(BUILT_MASTERCARD[i : i + 4] for i in range(0, 16, 4)), id="built-mastercard-spaces"),
    pytest.param("4111\u20131111\u20131111\u20131111", id="visa-test-en-dashes"),
    pytest.param("4111,1111,1111,1111", id="visa-test-commas"),
    # the same numbers in other scripts' digits, which NFKC leaves as they are
    pytest.param(
        "4111 1111 1111 1111".translate(
            str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")
        ),
        id="visa-arabic-indic",
    ),
    pytest.param(
        "4111 1111 1111 1111".translate(
            str.maketrans("0123456789", "\u0966\u0967\u0968\u0969\u096a\u096b\u096c\u096d\u096e\u096f")
        ),
        id="visa-devanagari",
    ),
    pytest.param(
        "5500 0000 0000 0004".translate(
            str.maketrans("0123456789", "\u06f0\u06f1\u06f2\u06f3\u06f4\u06f5\u06f6\u06f7\u06f8\u06f9")
        ),
        id="mastercard-persian",
    ),
]


@pytest.mark.parametrize("card", CARDS)
def test_given_a_luhn_valid_card_number_when_redacted_then_the_number_is_gone_and_reported(card):
    result = redact(f"Customer paid with card {card} yesterday")

    assert _digits(card) not in _digits(result.text)
    assert card not in result.text
    assert "[REDACTED:payment_card]" in result.text
    assert result.kinds == ("payment_card",)


def test_given_a_luhn_valid_card_with_spaces_when_redacted_then_the_surrounding_text_is_preserved():
    result = redact("Paid with 4111 1111 1111 1111 at the airport kiosk.")
    assert result.text == "Paid with [REDACTED:payment_card] at the airport kiosk."


def test_given_a_card_at_the_very_start_and_end_of_the_text_when_redacted_then_both_are_replaced():
    result = redact("5555-5555-5555-4444 then 4111111111111111")
    assert result.text == "[REDACTED:payment_card] then [REDACTED:payment_card]"
    assert result.kinds == ("payment_card",)


def test_given_a_card_followed_by_punctuation_when_redacted_then_the_punctuation_stays():
    result = redact("Card on file: 4111-1111-1111-1111, expiring 12/27.")
    assert result.text == "Card on file: [REDACTED:payment_card], expiring 12/27."


# --------------------------------------------------------------------------- tokens and keys

TOKENS = [
    pytest.param(FAKE_AWS_KEY_ID, "aws_access_key", id="aws-akia"),
    pytest.param(FAKE_AWS_SESSION_ID, "aws_access_key", id="aws-asia"),
    pytest.param(FAKE_GITHUB_CLASSIC, "github_token", id="github-ghp"),
    pytest.param(FAKE_GITHUB_FINE_GRAINED, "github_token", id="github-pat"),
    pytest.param(FAKE_SLACK_BOT, "slack_token", id="slack-xoxb"),
    pytest.param("xoxp-" + "111111111111-FakeUserToken0000", "slack_token", id="slack-xoxp"),
    pytest.param(FAKE_STRIPE_LIVE, "stripe_key", id="stripe-sk-live"),
    pytest.param(FAKE_STRIPE_RESTRICTED, "stripe_key", id="stripe-rk-live"),
    pytest.param(FAKE_OPENAI, "openai_key", id="openai-sk"),
    pytest.param(FAKE_OPENAI_PROJECT, "openai_key", id="openai-sk-proj"),
    pytest.param(FAKE_GOOGLE, "google_api_key", id="google-aiza"),
    pytest.param(FAKE_JWT, "jwt", id="jwt"),
    pytest.param(FAKE_PRIVATE_KEY, "private_key", id="rsa-private-key-block"),
    pytest.param(FAKE_OPENSSH_KEY, "private_key", id="openssh-private-key-block"),
]


@pytest.mark.parametrize(("secret", "kind"), TOKENS)
def test_given_a_token_in_a_sentence_when_redacted_then_it_is_gone_and_its_kind_is_reported(secret, kind):
    result = redact(f"The deploy script leaked {secret} into the build log.")

    assert secret not in result.text
    # No long fragment of the secret survives either.
    for line in secret.splitlines():
        for start in range(0, max(1, len(line) - 11)):
            assert line[start : start + 12] not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert kind in result.kinds
    assert result.text.startswith("The deploy script leaked ")
    assert result.text.endswith(" into the build log.")


@pytest.mark.parametrize(
    "header",
    [
        pytest.param(f"Authorization: Bearer {FAKE_BEARER}", id="auth-header"),
        pytest.param(f"curl -H 'authorization: bearer {FAKE_BEARER}'", id="lower-case-in-curl"),
    ],
)
def test_given_a_bearer_token_when_redacted_then_the_token_is_gone(header):
    result = redact(header)
    assert FAKE_BEARER not in result.text
    assert "[REDACTED:bearer_token]" in result.text
    assert "bearer_token" in result.kinds


def test_given_a_jwt_sent_as_a_bearer_token_when_redacted_then_no_part_of_it_remains():
    result = redact(f"Authorization: Bearer {FAKE_JWT}")
    for part in FAKE_JWT.split("."):
        assert part not in result.text
    assert result.kinds  # reported as jwt and/or bearer_token
    assert set(result.kinds) <= {"jwt", "bearer_token"}


def test_given_an_unterminated_private_key_block_when_redacted_then_everything_after_the_header_is_gone():
    truncated = FAKE_PRIVATE_KEY.rsplit("\n", 1)[0]  # END line lost, e.g. a pasted fragment
    result = redact(f"Pasted key:\n{truncated}")
    assert "MIIFAKEKEY" not in result.text
    assert result.text == "Pasted key:\n[REDACTED:private_key]"


def test_given_two_different_secrets_when_redacted_then_both_kinds_are_reported_once_each():
    result = redact(f"{FAKE_AWS_KEY_ID} and {FAKE_GITHUB_CLASSIC} and {FAKE_AWS_SESSION_ID}")
    assert result.text == "[REDACTED:aws_access_key] and [REDACTED:github_token] and [REDACTED:aws_access_key]"
    assert result.kinds == ("aws_access_key", "github_token")


# --------------------------------------------------------------------------- credential pairs

CREDENTIAL_PAIRS = [
    pytest.param("password: hunter2", "password: ", "hunter2", id="password-colon"),
    pytest.param("Password:hunter2", "Password:", "hunter2", id="password-no-space"),
    pytest.param("my password is hunter2", "my password is ", "hunter2", id="my-password-is"),
    pytest.param("the old password was Spring2024!", "the old password was ", "Spring2024!", id="password-was"),
    pytest.param("passwd=s3cr3t-fake", "passwd=", "s3cr3t-fake", id="passwd-equals"),
    pytest.param("pwd := letmein99", "pwd := ", "letmein99", id="pwd-walrus"),
    pytest.param("passphrase -> correcthorse", "passphrase -> ", "correcthorse", id="passphrase-arrow"),
    pytest.param("secret: fake-shared-secret", "secret: ", "fake-shared-secret", id="secret-colon"),
    pytest.param("api_key=fake0123456789", "api_key=", "fake0123456789", id="api-underscore-key"),
    pytest.param("API key: FAKE-KEY-0000", "API key: ", "FAKE-KEY-0000", id="api-space-key"),
    pytest.param("apikey = abcFAKE123", "apikey = ", "abcFAKE123", id="apikey"),
    pytest.param("access_token: fakeAccess000", "access_token: ", "fakeAccess000", id="access-token"),
    pytest.param("auth-token=fakeAuth000", "auth-token=", "fakeAuth000", id="auth-token"),
    pytest.param("client_secret: fakeClientSecret", "client_secret: ", "fakeClientSecret", id="client-secret"),
    pytest.param(
        "aws_secret_access_key = FAKE/secret+AccessKey0000EXAMPLEONLY",
        "aws_secret_access_key = ",
        "FAKE/secret+AccessKey0000EXAMPLEONLY",
        id="aws-secret-access-key",
    ),
    pytest.param('password = "correct horse battery staple"', "password = ", "horse battery", id="quoted-double"),
    pytest.param("password: 'two words'", "password: ", "two words", id="quoted-single"),
]


@pytest.mark.parametrize(("text", "kept_label", "value"), CREDENTIAL_PAIRS)
def test_given_a_credential_pair_when_redacted_then_the_label_is_kept_and_the_value_is_gone(text, kept_label, value):
    result = redact(f"User said {text}, then logged in")

    assert value not in result.text
    assert f"User said {kept_label}[REDACTED:credential], then logged in" == result.text
    assert result.kinds == ("credential_pair",)


LEAKY_PAIRS = [
    pytest.param("The wifi password for the guest network is Tr0ub4dor&3", "Tr0ub4dor&3", id="password-for-x-is"),
    pytest.param("Password is: hunter2", "hunter2", id="is-then-colon"),
    pytest.param("The old password was: Spring2024!", "Spring2024!", id="was-then-colon"),
    pytest.param("My password is now hunter2", "hunter2", id="is-now"),
    pytest.param("Her password is set to hunter2", "hunter2", id="is-set-to"),
    pytest.param("password (temporary): hunter2", "hunter2", id="parenthesised-qualifier"),
]


@pytest.mark.parametrize(("text", "value"), LEAKY_PAIRS)
def test_given_a_credential_pair_with_words_between_label_and_value_when_redacted_then_the_value_is_gone(text, value):
    result = redact(text)
    assert value not in result.text
    assert "credential_pair" in result.kinds


# --------------------------------------------------------------------------- must NOT be redacted

NOT_SECRETS = [
    pytest.param("Order 1182 was refunded", id="short-order-number"),
    pytest.param("Amazon order 112-4567890-1234567 arrived damaged", id="amazon-order-luhn-invalid"),
    pytest.param("Order #A-10293-77 shipped to Berlin", id="alnum-order-id"),
    pytest.param("Call me on +1 415-555-0199 after 5pm", id="us-phone"),
    pytest.param("UK office: +44 20 7946 0958", id="uk-phone"),
    pytest.param("Mobile 0151 234 56789 or (555) 010-9999", id="phones-with-groups"),
    pytest.param("Reference 4111 1111 1111 1112 does not check out", id="16-digits-failing-luhn"),
    pytest.param("Tracking number 1234567890123456", id="16-digits-failing-luhn-unseparated"),
    pytest.param("Deadline moved from 2024-03-15 to 2024-04-01", id="iso-dates"),
    pytest.param("Meeting at 2024-03-15T10:30:00Z", id="iso-timestamp"),
    pytest.param("Upgraded to version 2.14.3, then v10.0.1-rc2", id="version-strings"),
    pytest.param("Trace 123e4567-e89b-12d3-a456-426614174000 in the logs", id="uuid"),
    pytest.param("Job 12345678-1234-1234-1234-123456789012 failed", id="all-digit-uuid"),
    pytest.param("Opened INC-20391 and linked JIRA-4411", id="ticket-ids"),
    pytest.param("user reset their password", id="password-word-alone"),
    pytest.param("Alice forgot her password.", id="password-at-sentence-end"),
    pytest.param("The task-management-and-scheduling-service was deployed", id="sk-inside-task"),
    pytest.param("We ran a risk-assessment-for-the-datacenter-migration-project", id="sk-inside-risk"),
    pytest.param("Flask-SQLAlchemy-migrations-helper-package updated", id="sk-inside-flask"),
    pytest.param("The bearer of the message was late", id="bearer-word"),
    pytest.param("AKIA is a prefix we should watch for", id="aws-prefix-alone"),
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_given_ordinary_text_when_redacted_then_it_is_unchanged_and_nothing_is_reported(text):
    assert redact(text) == Redacted(text=text, kinds=())


LOOKS_LIKE_A_PAIR_BUT_IS_NOT = [
    pytest.param("The user reset their password after the lockout", id="password-followed-by-a-word"),
    pytest.param("Password reset email never arrived for order 1182", id="password-reset"),
    pytest.param("Secret Santa gift exchange is on Friday", id="secret-santa"),
    pytest.param("Discussed the API key rotation schedule at standup", id="api-key-rotation"),
    pytest.param("Client secret rotation was postponed to Q3", id="client-secret-rotation"),
]


@pytest.mark.parametrize("text", LOOKS_LIKE_A_PAIR_BUT_IS_NOT)
def test_given_a_sentence_mentioning_a_credential_word_when_redacted_then_it_is_unchanged(text):
    assert redact(text) == Redacted(text=text, kinds=())


def test_given_a_luhn_valid_amazon_style_order_number_when_redacted_then_it_is_unchanged():
    payload = "1124567890123456"
    order_digits = payload + _luhn_check_digit(payload)
    order = f"{order_digits[:3]}-{order_digits[3:10]}-{order_digits[10:]}"
    assert luhn_valid(order_digits)  # precondition: this id happens to pass Luhn
    text = f"Amazon order {order} arrived damaged"
    assert redact(text) == Redacted(text=text, kinds=())


# --------------------------------------------------------------------------- luhn_valid


@pytest.mark.parametrize(
    "digits",
    [
        "4111111111111111",
        "5555555555554444",
        "378282246310005",
        "6011111111111117",
        "4222222222222",
        "0",
        "18",
        "79927398713",
    ],
)
def test_given_a_luhn_valid_digit_string_when_checked_then_it_passes(digits):
    assert luhn_valid(digits)


@pytest.mark.parametrize(
    "digits",
    ["4111111111111112", "5555555555554445", "1234567890123456", "79927398710", "1", "19"],
)
def test_given_a_digit_string_with_a_wrong_check_digit_when_checked_then_it_fails(digits):
    assert not luhn_valid(digits)


def test_given_any_single_digit_change_to_a_valid_number_when_checked_then_it_fails():
    valid = "4111111111111111"
    for position in range(len(valid)):
        for replacement in "0123456789":
            if replacement == valid[position]:
                continue
            mutated = valid[:position] + replacement + valid[position + 1 :]
            assert not luhn_valid(mutated), mutated


def test_given_every_check_digit_for_a_payload_when_checked_then_exactly_one_passes():
    payload = "411111111111111"
    passing = [d for d in "0123456789" if luhn_valid(payload + d)]
    assert passing == [_luhn_check_digit(payload)] == ["1"]


# --------------------------------------------------------------------------- surroundings


def test_given_text_without_secrets_when_redacted_then_it_is_returned_verbatim():
    text = "Met Dana at 10:00 to plan the Q3 launch; she prefers Slack over email."
    assert redact(text) == Redacted(text=text, kinds=())


def test_given_a_secret_inside_a_multiline_note_when_redacted_then_the_other_lines_are_untouched():
    note = f"Line one stays.\nKey: {FAKE_STRIPE_LIVE}\nLine three stays."
    result = redact(note)
    assert result.text == "Line one stays.\nKey: [REDACTED:stripe_key]\nLine three stays."


def test_given_a_card_and_a_password_in_one_text_when_redacted_then_both_are_gone_and_both_kinds_reported():
    result = redact("Booked with 4111 1111 1111 1111; password: hunter2 for the portal")
    assert result.text == "Booked with [REDACTED:payment_card]; password: [REDACTED:credential] for the portal"
    assert result.kinds == ("payment_card", "credential_pair")


_FRAGMENTS = [
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "AKIA", "ASIA", "ghp_", "github_pat_",
    "glpat-", "xoxb-", "https://hooks.slack.com/services/", "sk_live_", "rk_test_", "sk-ant-", "sk-proj-", "AIza",
    "hf_", "npm_", "pypi-", "SG.", "eyJ", ".eyJ", "Bearer ", "A1b2C3d4E5f6G7h8", "0123456789ABCDEF", "_-", " ",
    "\n", "key_", "x", "é", ".",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=12), st.integers(min_value=1, max_value=4))
def test_given_any_text_when_a_token_pattern_matches_then_the_prefilter_matches_too(pieces, repeat):
    """The prefilter lets redaction skip the token patterns only where none of them can match."""
    text = "".join(piece * repeat if piece.isalnum() else piece for piece in pieces)
    found = [kind for kind, pattern in _PATTERNS if kind not in _READ_AS_ENGLISH and pattern.search(text)]
    assert not found or _ANY_TOKEN.search(text) is not None, found


def test_given_a_token_with_no_other_secret_when_redacted_then_the_prefilter_let_it_through():
    assert redact("deploy key ghp_" + "a" * 36 + " rotated").kinds == ("github_token",)
    assert _ANY_TOKEN.search("nothing secret in this ticket about the export") is None

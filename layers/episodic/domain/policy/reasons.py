"""What each reason code of a denial means, in words, for the ``message`` a person reads beside
the codes a program acts on."""

from __future__ import annotations

from collections.abc import Sequence

DENIAL_TEXT = {
    "not_an_episode": "it is not an episode",
    "missing_actor": "it names no actor",
    "missing_occurred_at": "it has no occurrence time",
    "missing_source": "it has no source (sourceRefs and sourceTrust)",
    "secret_in_identifier": "an identifier holds a secret, which cannot be redacted without moving the episode",
    "unstorable_content": "its text cannot be stored once normalised (empty, or over its length limit)",
    "unverified_operator_claim": "it claims operator provenance the credentials do not back",
    "sensitive_without_expiry": "a sensitive episode needs retention.expiresAt",
    "sensitive_without_consent": "a sensitive episode needs granted consent",
    "consent_not_granted": "consent is required and not granted",
    "already_expired": "its expiry has already passed",
    "approval_without_resource": "a human approval needs resourceRefs",
    "not_memorable": "no sentence carries anything worth remembering (see sentences)",
}
"""Reason codes that deny, by code; any other code is shown as itself."""


def denial_message(reasons: Sequence[str]) -> str:
    """``"the write policy denied this proposal: it names no actor; ..."``."""
    told = [DENIAL_TEXT[r] for r in reasons if r in DENIAL_TEXT] or list(reasons)
    return "the write policy denied this proposal: " + "; ".join(dict.fromkeys(told))

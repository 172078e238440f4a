"""Find and redact secrets and payment data before anything is stored.

Credentials and card numbers must never reach the timeline, the index, the archive or
the audit log in clear. Detection is deliberately conservative on card numbers (a digit
run must pass the Luhn check, as every issuer's PAN does) and broad on credentials
(well-known token prefixes, private-key blocks, and ``password: ...``-style pairs).
Token formats follow the issuers' public documentation (AWS access key ids start with
AKIA/ASIA; GitHub tokens with ghp_/gho_/ghu_/ghs_/ghr_/github_pat_; Slack tokens with
xox?-; Stripe secret keys with sk_live_/rk_live_).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CARD_CANDIDATE = re.compile(r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])")
_CARD_GROUPINGS = {(4, 6, 5), (4, 6, 4)}
"""Besides plain digit runs and groups of four, the Amex/Diners layouts."""

_LABEL = (
    r"(?i:\b(?:password|passwd|pwd|passphrase|secret|api[_ -]?key|access[_ -]?token|auth[_ -]?token|"
    r"client[_ -]?secret|aws_secret_access_key)\b)"
    r"(?:\s*\([^)\n]{0,30}\)|\s+(?:for|on|of)\s+[^.:=\n]{1,40}?)?"
)
_VERB = r"\s+(?i:is|was|to)(?:\s+(?i:now|still|set\s+to|changed\s+to))?"
_QUOTED = r"\"[^\"]{3,}\"|'[^']{3,}'"
_STRONG_PAIR = re.compile(_LABEL + r"(\s*(?::=|->|[:=])\s*|" + _VERB + r"\s*:\s*)(" + _QUOTED + r"|[^\s,;]{3,})")
"""``password: x``, ``api_key=x``, ``password is: x`` -- an explicit separator: any value is secret."""
_WEAK_PAIR = re.compile(_LABEL + r"(" + _VERB + r"\s+)(" + _QUOTED + r"|(?=\S*[\d!@#$%^&*+=?~])[^\s,;]{4,})")
"""``password is x`` -- only a value that looks like a password (digits or symbols) counts,
so "the password is changed monthly" stays as it is."""

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("openai_key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")),
]

_URL_CREDENTIAL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]{3,})(@)")
"""``scheme://user:password@host`` (database URLs, brokers): the password part is a secret."""


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check that every payment card number passes."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


@dataclass(frozen=True)
class Redacted:
    text: str
    kinds: tuple[str, ...]


def redact(text: str) -> Redacted:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]`` and say which kinds were found."""
    kinds: list[str] = []

    def _card(match: re.Match[str]) -> str:
        if not _card_like(match.group(0)):
            return match.group(0)
        digits = re.sub(r"[ -]", "", match.group(0))
        if luhn_valid(digits):
            kinds.append("payment_card")
            return "[REDACTED:payment_card]"
        return match.group(0)

    text = _CARD_CANDIDATE.sub(_card, text)
    for kind, pattern in _PATTERNS:

        def _replace(match: re.Match[str], kind: str = kind) -> str:
            kinds.append(kind)
            return f"[REDACTED:{kind}]"

        text = pattern.sub(_replace, text)

    def _pair(match: re.Match[str]) -> str:
        # Keep the label so the memory still says *that* a credential was given.
        kinds.append("credential_pair")
        return match.group(0)[: match.start(2) - match.start(0)] + "[REDACTED:credential]"

    for pattern in (_STRONG_PAIR, _WEAK_PAIR):
        text = pattern.sub(_pair, text)

    def _url(match: re.Match[str]) -> str:
        kinds.append("connection_string")
        return match.group(1) + "[REDACTED:credential]" + match.group(3)

    text = _URL_CREDENTIAL.sub(_url, text)
    return Redacted(text=text, kinds=tuple(dict.fromkeys(kinds)))


def _card_like(candidate: str) -> bool:
    """A card number: 13-19 digits from a card network's range (2-6), as one run or grouped like a card."""
    digits = re.sub(r"[ -]", "", candidate)
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        return False
    groups = tuple(len(g) for g in re.split(r"[ -]", candidate))
    if len(groups) == 1:
        return True
    return (all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4) or groups in _CARD_GROUPINGS

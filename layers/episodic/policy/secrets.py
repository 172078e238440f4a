# ruff: noqa: RUF001 -- credential words in other languages and scripts
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

from episodic.policy.prefilter import Needs, fold, needs, scanner

_EDGE_BEFORE = r"(?<![A-Za-z0-9])"
_EDGE_AFTER = r"(?![A-Za-z0-9])"
"""Token boundaries that, unlike ``\b``, treat ``_`` as a separator: a key inside a tag or an id
(``key_AKIA...``, ``card_4111...``) is found too."""

_CARD_CANDIDATE = re.compile(r"(?<!\d)(?:\d[ ._/-]?){12,18}\d(?!\d)")
_CARD_SEPARATORS = re.compile(r"[ ._/-]")
_CARD_GROUPINGS = {(4, 6, 5), (4, 6, 4)}
"""Besides plain digit runs and groups of four, the Amex/Diners layouts."""

_LABEL_WORDS = (
    r"password|passwd|pwd|pw|passphrase|passcode|secret|api[_ -]?key|api[_ -]?secret|access[_ -]?token|"
    r"auth[_ -]?token|refresh[_ -]?token|session[_ -]?token|client[_ -]?secret|(?:aws[_ ]?)?secret[_ ]?access[_ ]?key|"
    r"secret[_ -]?key|private[_ -]?key|token|pin|cvv|cvc|otp|security\s+code|"
    r"(?:wifi|wi-fi|wlan|db|database|admin|root|login|user|vpn|ssh|sftp|ftp|e?mail|smtp|router)[_ -]?pass(?:word)?"
)
_LABEL = (
    r"(?i:\b(?:" + _LABEL_WORDS + r")\b)"
    r"(?:\s*\([^)\n]{0,30}\)|\s+(?:for|on|of)\s+[^.:=\n]{1,40}?)?"
)
_VERB = r"\s+(?i:is|was|to)(?:\s+(?i:now|still|set\s+to|changed\s+to))?"
_QUOTED = r"\"[^\"]{3,}\"|'[^']{3,}'"
_STRONG_PAIR = re.compile(_LABEL + r"([\"']?\s*(?::=|->|[:=])\s*|" + _VERB + r"\s*:\s*)(" + _QUOTED + r"|[^\s,;]{3,})")
"""``password: x``, ``api_key=x``, ``password is: x`` -- an explicit separator: any value is secret."""
_WEAK_PAIR = re.compile(_LABEL + r"(" + _VERB + r"\s+)(" + _QUOTED + r"|(?=\S*[\d!@#$%^&*+=?~])[^\s,;]{4,})")
"""``password is x`` -- only a value that looks like a password (digits or symbols) counts,
so "the password is changed monthly" stays as it is."""

_CREDENTIAL_WORDS = (
    r"password|passcode|passphrase|pin|pwd|pw|secret|key|token|credentials?|"
    # the same in the other languages the service meets
    r"passwort|kennwort|mot\s+de\s+passe|contraseña|contrasena|clave|senha|parola\s+d['’]ordine|пароль|wachtwoord"
    r"|hasło|haslo|lösenord|losenord|şifre|sifre|parola"
)
_LABELLED_TOKEN = re.compile(
    r"(?i:(?:\b(?:" + _CREDENTIAL_WORDS + r")\b|密码|密碼|パスワード|비밀번호|كلمة\s+المرور))[^.\n]{0,60}?"
    r"(?<![\w/+=~!@#$%^&*.-])((?=\S*\d)(?=\S*[A-Za-z])[A-Za-z0-9/+=_.~!@#$%^&*-]{6,})(?![\w/+=~!@#$%^&*-])"
)
"""A credential word, then (in the same sentence) a token that mixes letters and digits: "the night
lead confirmed passcode 77Delta-Fox91", "secret access key handed over on the call: XI8q6k...".
Only tokens that look generated count (see :func:`_looks_generated`)."""

_AWS_SECRET_SHAPE = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
"""An AWS secret access key: 40 characters of base64's alphabet (git's 40-hex SHAs are excluded
by requiring both cases)."""

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)),
    ("aws_access_key", re.compile(_EDGE_BEFORE + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + _EDGE_AFTER)),
    ("github_token", re.compile(_EDGE_BEFORE + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})")),
    ("gitlab_token", re.compile(_EDGE_BEFORE + r"gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}")),
    ("slack_token", re.compile(_EDGE_BEFORE + r"xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}")),
    ("stripe_key", re.compile(_EDGE_BEFORE + r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("anthropic_key", re.compile(_EDGE_BEFORE + r"sk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai_key", re.compile(_EDGE_BEFORE + r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}")),
    ("google_api_key", re.compile(_EDGE_BEFORE + r"AIza[0-9A-Za-z_-]{35}")),
    ("huggingface_token", re.compile(_EDGE_BEFORE + r"hf_[A-Za-z0-9]{30,}")),
    ("npm_token", re.compile(_EDGE_BEFORE + r"npm_[A-Za-z0-9]{36}")),
    ("pypi_token", re.compile(_EDGE_BEFORE + r"pypi-[A-Za-z0-9_-]{50,}")),
    ("sendgrid_key", re.compile(_EDGE_BEFORE + r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    ("jwt", re.compile(_EDGE_BEFORE + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")),
]

_URL_CREDENTIAL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]*:)([^\s@/]{3,})(@)")
"""``scheme://user:password@host`` (database URLs, brokers): the password part is a secret."""

# Gates: a pattern runs only when the text holds what every match of it holds (derived from the
# pattern itself by the instruction prefilter's analysis, so an edited pattern keeps a sound
# gate). Most texts hold no secret, and the credential-pair patterns, which open with a
# case-insensitive word, cost ~15 us each over a sentence; one Aho-Corasick pass over the
# folded text finds the literals of every gate. The card and AWS-secret shapes need no literal.
_PATTERN_NEEDS = [needs(pattern) for _, pattern in _PATTERNS]
_PAIR_NEEDS = [needs(_STRONG_PAIR), needs(_WEAK_PAIR)]
_URL_NEEDS = needs(_URL_CREDENTIAL)
_LABELLED_NEEDS = needs(_LABELLED_TOKEN)
_GATES = [*_PATTERN_NEEDS, *_PAIR_NEEDS, _URL_NEEDS, _LABELLED_NEEDS]
_GATE_SCANNER = scanner({literal for need in _GATES if need for literal in need.literals})
_MARK = "[REDACTED:"
"""How every replacement starts. Once the text holds one, the gates (read from the text as it came)
no longer describe it -- a marker's own words may open a later pattern -- so every pattern runs,
exactly as without gates."""

_SECRET_KEY_WORDS = frozenset(
    {
        "password", "passwd", "pwd", "pw", "passphrase", "passcode", "secret", "token", "pin", "cvv", "cvc",
        "otp", "credential", "credentials", "authorization", "apikey", "privatekey", "secretkey", "cardnumber",
        "clientsecret", "accesstoken", "refreshtoken", "sessiontoken", "authtoken", "idtoken", "apisecret",
        "secretaccesskey", "passwort", "kennwort", "motdepasse", "contrasena", "contraseña", "senha", "wachtwoord",
        "haslo", "hasło", "losenord", "lösenord", "sifre", "şifre", "parola", "пароль",
    }
)  # fmt: skip
"""Key names that make their value a secret, whatever it looks like (``{"password": "hunter2"}``)."""
_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


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
    text = _redact_cards(text, kinds)
    present = {literal for _, literal in _GATE_SCANNER.iter(fold(text))}  # the text as it came, see _MARK

    def runs(need: Needs | None) -> bool:
        return need is None or _MARK in text or need.may_hold(present)

    for (kind, pattern), need in zip(_PATTERNS, _PATTERN_NEEDS, strict=True):
        if not runs(need):
            continue

        def _replace(match: re.Match[str], kind: str = kind) -> str:
            kinds.append(kind)
            return f"[REDACTED:{kind}]"

        text = pattern.sub(_replace, text)

    def _pair(match: re.Match[str]) -> str:
        if is_masked(match.group(2)):
            return match.group(0)
        # Keep the label so the memory still says *that* a credential was given.
        kinds.append("credential_pair")
        return match.group(0)[: match.start(2) - match.start(0)] + "[REDACTED:credential]"

    for pattern, need in zip((_STRONG_PAIR, _WEAK_PAIR), _PAIR_NEEDS, strict=True):
        if runs(need):
            text = pattern.sub(_pair, text)

    def _url(match: re.Match[str]) -> str:
        kinds.append("connection_string")
        return match.group(1) + "[REDACTED:credential]" + match.group(3)

    if runs(_URL_NEEDS):
        text = _URL_CREDENTIAL.sub(_url, text)

    def _labelled(match: re.Match[str]) -> str:
        token = match.group(1)
        if "REDACTED" in token or is_masked(token) or not _looks_generated(token):
            return match.group(0)
        kinds.append("credential_pair")
        return match.group(0)[: match.start(1) - match.start(0)] + "[REDACTED:credential]"

    if runs(_LABELLED_NEEDS):
        text = _LABELLED_TOKEN.sub(_labelled, text)

    def _aws_secret(match: re.Match[str]) -> str:
        token = match.group(0)
        if not (re.search(r"[a-z]", token) and re.search(r"[A-Z]", token) and re.search(r"\d", token)):
            return token
        kinds.append("aws_secret_key")
        return "[REDACTED:aws_secret_key]"

    text = _AWS_SECRET_SHAPE.sub(_aws_secret, text)
    return Redacted(text=text, kinds=tuple(dict.fromkeys(kinds)))


def _redact_cards(text: str, kinds: list[str]) -> str:
    def _card(match: re.Match[str]) -> str:
        if not _card_like(match.group(0)):
            return match.group(0)
        digits = _CARD_SEPARATORS.sub("", match.group(0))
        if luhn_valid(digits):
            kinds.append("payment_card")
            return "[REDACTED:payment_card]"
        return match.group(0)

    return _CARD_CANDIDATE.sub(_card, text)


_MASK = re.compile(r"^[\"']?[*•xX#]{3,}[\"']?$|\*{3,}|•{3,}|\.\.\.|…|(?i:redacted|masked|hidden)")


def is_masked(value: str) -> bool:
    """Already hidden (``********``, ``sk_live_...4f2a``, ``****4242``, ``<redacted>``): nothing to redact."""
    return bool(_MASK.search(value))


def _looks_generated(token: str) -> bool:
    """Letters and digits mixed the way people and generators make passwords (``77Delta-Fox91``,
    ``azul-mar-7731``), not the way ids and versions look (``v2``, ``INV-2026``, ``ft-0921``):
    at least three character classes, or twelve characters or more with letters and digits."""
    classes = sum(bool(re.search(pattern, token)) for pattern in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    letters = sum(c.isalpha() for c in token)
    return (classes >= 3 and letters >= 2 and len(token) >= 8) or (len(token) >= 12 and classes >= 2)


def _card_like(candidate: str) -> bool:
    """A card number: 13-19 digits from a card network's range (2-6), as one run or grouped like a card."""
    digits = _CARD_SEPARATORS.sub("", candidate)
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        return False
    if len(set(_CARD_SEPARATORS.findall(candidate))) > 1:
        return False  # one card is written with one kind of separator
    groups = tuple(len(g) for g in _CARD_SEPARATORS.split(candidate))
    if len(groups) == 1:
        return True
    return (all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4) or groups in _CARD_GROUPINGS


def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a credential (``password``, ``apiKey``, ``client_secret``, ``db-pin``):
    its last word, or its last two words run together, is a credential word."""
    if "".join(c for c in key.lower() if c.isalnum()) in _SECRET_KEY_WORDS:  # also keys in other scripts
        return True
    words = [w.lower() for w in _KEY_WORD.findall(key)]
    if not words:
        return False
    return (
        words[-1] in _SECRET_KEY_WORDS
        or "".join(words[-2:]) in _SECRET_KEY_WORDS
        or ("".join(words[-3:]) in _SECRET_KEY_WORDS)
    )

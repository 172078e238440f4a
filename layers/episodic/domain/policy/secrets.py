# ruff: noqa: RUF001 -- credential words in other languages and scripts
"""Find and redact secrets and payment data before anything is stored.

Credentials and card numbers must never reach the timeline, the index, the archive or
the audit log in clear, nor bank account and Social Security numbers (:mod:`.accounts`).
Detection is deliberately conservative on card numbers (a digit run must pass the Luhn
check, as every issuer's PAN does) and broad on credentials
(well-known token prefixes, private-key blocks, and ``password: ...``-style pairs).
Token formats follow the issuers' public documentation (AWS access key ids start with
AKIA/ASIA; GitHub tokens with ghp_/gho_/ghu_/ghs_/ghr_/github_pat_; Slack tokens with
xox?-; Stripe secret keys with sk_live_/rk_live_).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from episodic.domain import linear
from episodic.domain.linear import Match
from episodic.domain.policy.accounts import SCREENS as ACCOUNT_SCREENS
from episodic.domain.policy.accounts import redact_accounts
from episodic.domain.policy.cards import DIGIT_RUN, redact_cards

_EDGE_BEFORE = r"(?:^|[^A-Za-z0-9])"
"""A token starts after a character that is not an ASCII letter or digit (``_`` separates, unlike
``\b``): a key inside a tag or an id (``key_AKIA...``) is found too. Consumed: every token
pattern keeps the token itself in its group ``token``, and only that group is replaced."""

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
_STRONG_PAIR = linear.compile(
    _LABEL + r"(?P<sep>[\"']?\s*(?::=|->|[:=])\s*|" + _VERB + r"\s*:\s*)(?P<value>" + _QUOTED + r"|[^\s,;]{3,})"
)
"""``password: x``, ``api_key=x``, ``password is: x`` -- an explicit separator: any value is secret."""
_WEAK_PAIR = linear.compile(_LABEL + r"(?P<sep>" + _VERB + r"\s+)(?P<value>" + _QUOTED + r"|[^\s,;]{4,})")
"""``password is x`` -- only a value that looks like a password (a digit or a symbol in it, see
:func:`_weak_value`) counts, so "the password is changed monthly" stays as it is."""
_PASSWORD_SYMBOLS = frozenset("!@#$%^&*+=?~")

_CREDENTIAL_WORDS = linear.compile(
    linear.START + r"(?P<word>(?i:password|passcode|passphrase|pin|pwd|pw|secret|key|token|credentials?"
    # the same in the other languages the service meets
    r"|passwort|kennwort|mot\s+de\s+passe|contraseña|contrasena|clave|senha|parola\s+d['’]ordine|пароль|wachtwoord"
    r"|hasło|haslo|lösenord|losenord|şifre|sifre|parola))"
    + linear.END
    + r"|(?P<glued>密码|密碼|パスワード|비밀번호|كلمة\s+المرور)"
)
"""A credential word; in the same sentence after it (:data:`LABELLED_REACH` characters, no full
stop or line break between), a token that mixes letters and digits is a credential: "the night
lead confirmed passcode 77Delta-Fox91", "secret access key handed over on the call: XI8q6k..."
(only tokens that look generated count, see :func:`_looks_generated`). Word edges are read in
every script (:data:`episodic.domain.linear.START`)."""
LABELLED_REACH = 60
_TOKEN_RUN = linear.compile(r"[A-Za-z0-9/+=_.~!@#$%^&*-]{6,}")
"""The characters a generated token is made of; a token is one whole run of them, six or more."""
_SENTENCE_STOP = linear.compile(r"[.\n]")

_AWS_SECRET = linear.compile(r"(?:^|[^A-Za-z0-9/+=])(?P<token>[A-Za-z0-9/+]{40})(?P<veto>[A-Za-z0-9/+=])?")
"""An AWS secret access key is one whole run of base64's alphabet, 40 characters long, with no
``=`` (and both cases and a digit, which git's 40-hex SHAs have not): a longer run is vetoed."""

_TOKEN_SOURCES: list[tuple[str, str, bool]] = [
    (
        "private_key",
        r"(?P<token>-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$))",
        True,
    ),
    ("aws_access_key", _EDGE_BEFORE + r"(?P<token>(?:AKIA|ASIA)[0-9A-Z]{16})(?P<veto>[A-Za-z0-9])?", False),
    (
        "github_token",
        _EDGE_BEFORE + r"(?P<token>gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})",
        False,
    ),
    ("gitlab_token", _EDGE_BEFORE + r"(?P<token>gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,})", False),
    ("slack_token", _EDGE_BEFORE + r"(?P<token>xox[abposr]-[A-Za-z0-9-]{10,})", False),
    ("slack_webhook", r"(?P<token>https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,})", False),
    ("stripe_key", _EDGE_BEFORE + r"(?P<token>[rs]k_(?:live|test)_[A-Za-z0-9]{16,})", False),
    ("anthropic_key", _EDGE_BEFORE + r"(?P<token>sk-ant-[A-Za-z0-9_-]{20,})", False),
    ("openai_key", _EDGE_BEFORE + r"(?P<token>sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,})", False),
    ("google_api_key", _EDGE_BEFORE + r"(?P<token>AIza[0-9A-Za-z_-]{35})", False),
    ("huggingface_token", _EDGE_BEFORE + r"(?P<token>hf_[A-Za-z0-9]{30,})", False),
    ("npm_token", _EDGE_BEFORE + r"(?P<token>npm_[A-Za-z0-9]{36})", False),
    ("pypi_token", _EDGE_BEFORE + r"(?P<token>pypi-[A-Za-z0-9_-]{50,})", False),
    ("sendgrid_key", _EDGE_BEFORE + r"(?P<token>SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,})", False),
    (
        "jwt",
        _EDGE_BEFORE + r"(?P<token>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        False,
    ),
    ("bearer_token", r"(?P<token>(?i:\bbearer)\s+[A-Za-z0-9._~+/=-]{16,})", False),
]
"""Every token kind as ``(kind, pattern, dot_all)``: the token is group ``token``; a match whose
``veto`` took part is no token."""
_PATTERNS = [(kind, linear.compile(source, dot_all=dot_all)) for kind, source, dot_all in _TOKEN_SOURCES]
_READ_AS_ENGLISH = frozenset({"bearer_token"})
"""Token kinds whose pattern reads :func:`english` of the text; the others read the text itself."""


_ANY_TOKEN = linear.any_of([pattern for kind, pattern in _PATTERNS if kind not in _READ_AS_ENGLISH])
"""Every token pattern that reads the text itself, as one: where it finds nothing, none of them
can, and one search replaces one pass a kind (most texts hold no token)."""

_URL_CREDENTIAL = linear.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@]*:(?P<token>[^\s@/]{3,})@")
"""``scheme://user:password@host`` (database URLs, brokers): the password part is a secret."""

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
_KEY_WORD = linear.compile(r"[A-Z]+[a-z]*|[a-z]+|\d+")
"""A key's words: camelCase humps, lower-case runs, numbers (``APIKey`` is split by :func:`_key_words`)."""


_SCREEN = linear.any_of(
    [
        DIGIT_RUN,
        *ACCOUNT_SCREENS,
        *(pattern for _, pattern in _PATTERNS),
        _STRONG_PAIR,
        _WEAK_PAIR,
        _URL_CREDENTIAL,
        _CREDENTIAL_WORDS,
        _AWS_SECRET,
    ]
)
"""Every pattern :func:`redact` runs, as one: where it finds nothing in the text, its :func:`probe`
and its :func:`english` reading (one per line), no step can find anything, and the text is kept."""


@dataclass(frozen=True)
class Redacted:
    text: str
    kinds: tuple[str, ...]


def redact(text: str) -> Redacted:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]`` and say which kinds were found.

    Each step reads the text once (RE2, and Python over the runs it finds), so the whole is linear
    in the text's length; a step sees the text as the steps before it left it."""
    if _SCREEN.search(_screened(text)) is None:
        return Redacted(text=text, kinds=())
    return _redacted(text)


def _screened(text: str) -> str:
    """The text, its :func:`probe` and its :func:`english` reading, one per line: what :data:`_SCREEN` reads."""
    probed = probe(text)
    return "\n".join(dict.fromkeys((text, probed, linear.ascii_words(probed))))


def _redacted(text: str) -> Redacted:
    """What :func:`redact` answers, every step run."""
    kinds: list[str] = []
    text = redact_cards(redact_accounts(text, kinds), kinds)  # an IBAN's digits can pass for a card's
    any_token = _ANY_TOKEN.search(text) is not None
    for kind, pattern in _PATTERNS:
        if not any_token and kind not in _READ_AS_ENGLISH:
            continue
        veto = linear.group_numbers(pattern).get("veto", -1)

        def _token(match: Match, kind: str = kind, veto: int = veto) -> str | None:
            if veto >= 0 and match.start(veto) >= 0:  # the exception took part: no secret here
                return None
            kinds.append(kind)
            return f"[REDACTED:{kind}]"

        text = linear.replace_group(pattern, text, _token, "token", english(text) if kind in _READ_AS_ENGLISH else None)

    for pair, weak in ((_STRONG_PAIR, False), (_WEAK_PAIR, True)):
        text = _redact_pairs(pair, text, weak, kinds)

    def _url(match: Match) -> str:
        kinds.append("connection_string")
        return "[REDACTED:credential]"

    text = linear.replace_group(_URL_CREDENTIAL, text, _url, "token", english(text))
    text = _redact_labelled_tokens(text, kinds)
    text = _redact_aws_secrets(text, kinds)
    return Redacted(text=text, kinds=tuple(dict.fromkeys(kinds)))


_TURKISH_I = str.maketrans({"\u0130": "i", "\u0131": "i"})


def probe(text: str) -> str:
    """``text`` with the Turkish dotted capital and dotless i as ``i``, one character for one, so a
    match's spans are the text's: Turkish writes "PİN" and "şifre" in capitals as "ŞİFRE", and
    RE2's case folding (unlike Python's) leaves both letters apart from ``i``."""
    return text.translate(_TURKISH_I)


def english(text: str) -> str:
    """What the patterns of English labels read: :func:`probe`, then every other letter outside
    ASCII as ``_`` (:func:`episodic.domain.linear.ascii_words`), so ``\\b`` bounds the labels as Python's
    Unicode ``\\b`` would."""
    return linear.ascii_words(probe(text))


def _redact_pairs(pattern: linear.Pattern, text: str, weak: bool, kinds: list[str]) -> str:
    """``password: x`` and the like: the value is replaced, the label stays (the memory still says
    *that* a credential was given). A weak pair's value must look like a password."""
    value = linear.group_numbers(pattern)["value"]

    def _pair(match: Match) -> str | None:
        found = text[match.start(value) : match.end(value)]
        if is_masked(found) or (weak and not _weak_value(found)):
            return None
        kinds.append("credential_pair")
        return "[REDACTED:credential]"

    return linear.replace_group(pattern, text, _pair, value, english(text))


def _weak_value(value: str) -> bool:
    """A value after "is" that looks like a password: quoted, or holding a digit or a symbol."""
    return value[:1] in "\"'" or any(c.isdigit() or c in _PASSWORD_SYMBOLS for c in value)


def _redact_labelled_tokens(text: str, kinds: list[str]) -> str:
    """A generated-looking token within :data:`LABELLED_REACH` characters after a credential word,
    in the same sentence. The token runs and sentence stops are found once, and each credential
    word looks only at the runs within its reach."""
    index = _CREDENTIAL_WORDS.groupindex
    words = [
        (m.start(), max(m.end(index["word"]), m.end(index["glued"]))) for m in _CREDENTIAL_WORDS.finditer(probe(text))
    ]
    if not words:
        return text
    runs = [(m.start(), m.end()) for m in _TOKEN_RUN.finditer(text)]
    starts = [start for start, _ in runs]
    stops = [m.start() for m in _SENTENCE_STOP.finditer(text)]
    replaced: list[tuple[int, int]] = []
    consumed = 0
    for word_start, word_end in words:
        if word_start < consumed:
            continue
        reach = word_end + LABELLED_REACH
        stop = bisect.bisect_left(stops, word_end)
        if stop < len(stops):
            reach = min(reach, stops[stop])
        for run in range(bisect.bisect_left(starts, word_end), len(runs)):
            start, end = runs[run]
            if start > reach:
                break
            if _token_at(text, start, end):
                consumed = end
                token = text[start:end]
                if "REDACTED" not in token and not is_masked(token) and _looks_generated(token):
                    replaced.append((start, end))
                break
    if not replaced:
        return text
    kinds.append("credential_pair")
    pieces, kept = [], 0
    for start, end in replaced:
        pieces += [text[kept:start], "[REDACTED:credential]"]
        kept = end
    return "".join([*pieces, text[kept:]])


def _token_at(text: str, start: int, end: int) -> bool:
    """Whether the run ``text[start:end]`` is a whole token: six characters or more, letters and
    digits both, and no word character of any script glued to either end."""
    if end - start < 6 or (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
        return False
    token = text[start:end]
    return any(c.isdigit() for c in token) and any(c.isascii() and c.isalpha() for c in token)


def _redact_aws_secrets(text: str, kinds: list[str]) -> str:
    def _secret(match: Match) -> str | None:
        if match.group("veto") is not None or not _mixed(match.group("token")):
            return None
        kinds.append("aws_secret_key")
        return "[REDACTED:aws_secret_key]"

    return linear.replace_group(_AWS_SECRET, text, _secret, "token")


def _mixed(token: str) -> bool:
    return any(c.islower() for c in token) and any(c.isupper() for c in token) and any(c.isdigit() for c in token)


_MASK = linear.compile(r"^[\"']?[*•xX#]{3,}[\"']?$|\*{3,}|•{3,}|\.\.\.|…|(?i:redacted|masked|hidden)")


def is_masked(value: str) -> bool:
    """Already hidden (``********``, ``sk_live_...4f2a``, ``****4242``, ``<redacted>``): nothing to redact."""
    return bool(_MASK.search(value))


def _looks_generated(token: str) -> bool:
    """Letters and digits mixed the way people and generators make passwords (``77Delta-Fox91``,
    ``azul-mar-7731``), not the way ids and versions look (``v2``, ``INV-2026``, ``ft-0921``):
    at least three character classes, or twelve characters or more with letters and digits."""
    classes = sum(
        (
            any("a" <= c <= "z" for c in token),
            any("A" <= c <= "Z" for c in token),
            any(c.isdigit() for c in token),
            any(not (c.isascii() and c.isalnum()) for c in token),
        )
    )
    letters = sum(c.isalpha() for c in token)
    return (classes >= 3 and letters >= 2 and len(token) >= 8) or (len(token) >= 12 and classes >= 2)


def _key_words(key: str) -> list[str]:
    """``"dbAPIKey"`` -> ``["db", "api", "key"]``: an upper-case run before a capitalised word
    gives its last capital to that word."""
    words: list[str] = []
    for part in _KEY_WORD.findall(key):
        capitals = len(part) - len(part.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        if capitals > 1 and capitals < len(part):
            words += [part[: capitals - 1], part[capitals - 1 :]]
        else:
            words.append(part)
    return [w.lower() for w in words]


def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a credential (``password``, ``apiKey``, ``client_secret``, ``db-pin``):
    its last word, or its last two words run together, is a credential word."""
    if "".join(c for c in key.lower() if c.isalnum()) in _SECRET_KEY_WORDS:  # also keys in other scripts
        return True
    words = _key_words(key)
    if not words:
        return False
    return (
        words[-1] in _SECRET_KEY_WORDS
        or "".join(words[-2:]) in _SECRET_KEY_WORDS
        or ("".join(words[-3:]) in _SECRET_KEY_WORDS)
    )

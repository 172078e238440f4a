"""Bank account numbers (IBAN) and US Social Security numbers in free text.

Neither is a credential, but either, beside a name, is what it takes to move someone's money or
borrow in their name, and a memory has no use for the number itself: it is redacted as a card
number is (``[REDACTED:iban]``, ``[REDACTED:us_ssn]``), and the memory keeps that one was given.

*IBAN* (ISO 13616): two letters for the country, two check digits, then 11 to 30 letters and
digits, written as one run or in groups of four. A candidate counts only when its check digits
hold: the number with its first four characters moved to the end, each letter read as 10 to 35,
is 1 modulo 97 -- which a string laid out alike passes by chance once in 97 times.

*SSN*: three, two and four digits joined by hyphens, as the Social Security Administration
prints one, or nine digits (hyphens or spaces optional) after "SSN" or "social security number";
never one the SSA does not issue (area 000, 666 or 900-999, group 00, serial 0000), so most
other numbers of that shape are left alone.
"""

from __future__ import annotations

from episodic.domain import linear

_IBAN = linear.compile(
    r"(?:^|[^A-Za-z0-9])(?P<token>[A-Za-z]{2}[0-9]{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,3})?)"
)
"""Where an IBAN can be: a country's two letters and two digits, then groups of four (the last
shorter), spaced or not. The match may take the start of the next word for a last group, and
may end inside a longer run: :func:`_valid_prefix` and :func:`_redact_ibans` tell."""
IBAN_LENGTH = (15, 34)
"""The shortest and longest IBAN of any country (Norway's and Saint Lucia's, ISO 13616 registry)."""

_SSN_DASHED = r"(?:^|[^A-Za-z0-9-])(?P<token>[0-9]{3}-[0-9]{2}-[0-9]{4})(?P<veto>[A-Za-z0-9]|-[0-9])?"
_SSN_LABELLED = (
    r"(?i:\bssn\b|\bsocial\s+security(?:\s+(?:number|no\.?|#))?)[^0-9\n]{0,20}"
    r"(?P<labelled>[0-9]{3}[ -]?[0-9]{2}[ -]?[0-9]{4})(?P<after>[0-9])?"
)
_SSN = linear.compile(f"{_SSN_DASHED}|{_SSN_LABELLED}")
"""Where an SSN can be: the dashed form anywhere, nine digits after its name."""

_IBAN_GROUPS = linear.group_numbers(_IBAN)
_SSN_GROUPS = linear.group_numbers(_SSN)

SCREENS = [_IBAN, _SSN]
"""The patterns a text must match somewhere for :func:`redact_accounts` to find anything."""


def redact_accounts(text: str, kinds: list[str]) -> str:
    """``text`` with every IBAN whose check digits hold and every SSN the SSA could have issued
    replaced; each kind found is added to ``kinds``."""
    return _redact_ssns(_redact_ibans(text, kinds), kinds)


def _redact_ibans(text: str, kinds: list[str]) -> str:
    pieces: list[str] = []
    kept = 0
    token = _IBAN_GROUPS["token"]
    for found in _IBAN.finditer(text):
        start = found.start(token)
        length = _valid_prefix(found.group(token))
        if length and not text[start + length : start + length + 1].isalnum():  # not part of a longer run
            kinds.append("iban")
            pieces += [text[kept:start], "[REDACTED:iban]"]
            kept = start + length
    return "".join([*pieces, text[kept:]]) if pieces else text


def _valid_prefix(candidate: str) -> int:
    """The length of the longest run of ``candidate``'s groups, from its start, that is an IBAN (the
    start of a word after the number can pass for its last group); 0 when none is."""
    ends = [i for i, c in enumerate(candidate) if c == " "] + [len(candidate)]
    for end in reversed(ends):
        compact = candidate[:end].replace(" ", "").upper()
        if IBAN_LENGTH[0] <= len(compact) <= IBAN_LENGTH[1] and iban_valid(compact):
            return end
    return 0


def iban_valid(compact: str) -> bool:
    """ISO 13616's check: the first four characters moved to the end, letters as 10-35, mod 97 is 1."""
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _redact_ssns(text: str, kinds: list[str]) -> str:
    pieces: list[str] = []
    kept = 0
    numbers = _SSN_GROUPS  # name -> group number (RE2's matches take numbers only)
    for found in _SSN.finditer(text):
        if found.start(numbers["veto"]) >= 0 or found.start(numbers["after"]) >= 0:
            continue
        group = numbers["token"] if found.start(numbers["token"]) >= 0 else numbers["labelled"]
        if not issued(found.group(group)):
            continue
        kinds.append("us_ssn")
        pieces += [text[kept : found.start(group)], "[REDACTED:us_ssn]"]
        kept = found.end(group)
    return "".join([*pieces, text[kept:]]) if pieces else text


def issued(number: str) -> bool:
    """Whether the SSA could have issued ``number`` (its digits, separators aside)."""
    digits = "".join(c for c in number if c.isdigit())
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"

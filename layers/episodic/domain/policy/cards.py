"""Payment card numbers in free text: where one can be, and which digit runs are one.

Detection is deliberately conservative: a candidate must be laid out like a card (one run of
13-19 digits, or groups of four, or the Amex/Diners groupings), start with a card network's digit
(2-6) and pass the Luhn check, as every issuer's PAN does.
"""

from __future__ import annotations

from episodic.domain import linear

DIGIT_RUN = linear.compile(r"\d(?:[ ._/,\x{2013}\x{2014}-]?\d){12,}")
"""Digits (of any script: ``\\d`` here is Unicode's) in groups joined by single separators, 13 digits
or more: where a card number can be."""
_CARD_SEPARATORS = " ._/,\u2013\u2014-"
_NO_SEPARATORS = str.maketrans("", "", _CARD_SEPARATORS)
_SEPARATORS_AS_SPACE = str.maketrans(_CARD_SEPARATORS, " " * len(_CARD_SEPARATORS))
_CARD_GROUPINGS = {(4, 6, 5), (4, 6, 4)}
"""Besides plain digit runs and groups of four, the Amex/Diners layouts."""
CARD_DIGITS = (13, 19)


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


def redact_cards(text: str, kinds: list[str]) -> str:
    r"""Every card number: in each run of digit groups, from each group on, the longest stretch of
    whole groups holding 13 to 19 digits is a candidate (as a pattern with ``(?<!\d)`` and
    ``(?!\d)`` around 13-19 digits reads it); a candidate laid out like a card that passes the
    Luhn check is replaced. At most 19 groups are looked at from each group: linear."""
    pieces: list[str] = []
    kept = 0
    for run in DIGIT_RUN.finditer(text):
        lengths = [len(group) for group in run.group(0).translate(_SEPARATORS_AS_SPACE).split(" ")]
        starts = [run.start()]
        for length in lengths[:-1]:
            starts.append(starts[-1] + length + 1)  # one separator between groups
        i = 0
        while i < len(lengths):
            j, digits, best = i, 0, None
            while j < len(lengths) and digits + lengths[j] <= CARD_DIGITS[1]:
                digits += lengths[j]
                if digits >= CARD_DIGITS[0]:
                    best = j
                j += 1
            if best is None:
                i += 1
                continue
            start, end = starts[i], starts[best] + lengths[best]
            candidate = _western(text[start:end])
            if _card_like(candidate) and luhn_valid(candidate.translate(_NO_SEPARATORS)):
                kinds.append("payment_card")
                pieces += [text[kept:start], "[REDACTED:payment_card]"]
                kept = end
            i = best + 1
    return "".join([*pieces, text[kept:]]) if pieces else text


def _card_like(candidate: str) -> bool:
    """A card number: 13-19 digits from a card network's range (2-6), as one run or grouped like a card."""
    digits = candidate.translate(_NO_SEPARATORS)
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        return False
    used = {c for c in candidate if c in _CARD_SEPARATORS}
    if len(used) > 1:
        return False  # one card is written with one kind of separator
    if not used:
        return True
    groups = tuple(len(g) for g in candidate.split(used.pop()))
    return (all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4) or groups in _CARD_GROUPINGS


def _western(candidate: str) -> str:
    """``candidate`` with its digits of any script (Arabic-Indic, Devanagari, ...) written 0-9: a card
    number is the same number in any of them, and NFKC leaves them as they are."""
    return candidate if candidate.isascii() else "".join(str(int(c)) if c.isdecimal() else c for c in candidate)

"""Grounding: does a summary line state only facts its source events state?

Why this exists: session summaries are written back into memory as ``session_summary``
episodes, and recall later hands them to agents as evidence. A summary that invents a fact
(a wrong amount, a ticket that never existed, a person nobody mentioned) would become a
false memory with the provenance of a real one, and every later recall would repeat it. A
language model asked to summarise does that now and then however it is prompted, so the
guarantee "a summary never invents facts" cannot rest on the prompt. It rests on this
check, which every summariser's output passes before it is stored: the Bedrock summariser
drops the lines it flags, and the tests hold the local (extractive) summariser to the same
rule.

The check is lexical and deliberately conservative. It does not understand sentences; it
extracts the tokens of a line that carry checkable facts and requires each to occur in the
sources:

* **numbers** -- integers, decimals, versions, amounts (``42``, ``3.5``, ``2.4.1``,
  ``1,200``; thousands separators are ignored, nothing else is): matched exactly against
  every number in the sources, including numbers inside identifiers and timestamps, so
  ``2026-11-28`` is grounded by ``2026-11-28T09:30:00Z``;
* **identifiers** -- tokens mixing letters and digits (``INC-2291``, ``v2.4.1``,
  ``customer-42``) or with an internal capital (``OpenSearch``, ``iPhone``): matched
  exactly (case-sensitively) against the sources' tokens and their ``/ : @ #``-separated
  parts, so ``session-9`` is grounded by ``chat:session-9/turn-4`` but ``INC-229`` is not
  grounded by ``INC-2291``;
* **capitalised words that are not sentence-initial** -- names of people, places,
  products, months (``Alice``, ``Lisbon``, ``PDF``): matched case-insensitively against the
  sources' words.

Lower-case words are not checked: paraphrase is allowed, so "the customer asked for" may
summarise "user requested". What passes is therefore "no *named* or *numeric* fact that the
sources lack", not "logically entailed": a line can still misstate a relation between
grounded facts, or carry an invented name as its first word (sentence-initial capitals are
indistinguishable from ordinary words without a dictionary, so only identifiers and numbers
are checked there). In the other direction the check is strict: a number rewritten
(``3.50`` for ``3.5``, ``three`` for ``3``), a time zone added (``UTC`` for ``Z``), or a
capitalised word after a colon that the sources lack makes a line fail. Failing drops a
true line, which costs a little recall; passing an invented one would cost trust.

Pure functions over strings, no I/O: core code, used by every backend and by tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from episodic.domain import linear

_ALNUM = r"[\pL\pN]"
_TOKEN = linear.compile(rf"{_ALNUM}+(?:[._\-/:@#]{_ALNUM}+)*")
"""A compound token: letters and digits joined by internal ``. _ - / : @ #`` (no trailing punctuation).
An apostrophe ends a token, so ``Alice's`` is ``Alice`` followed by ``s``."""

_NUMBER = linear.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS = linear.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_STRUCTURAL = linear.compile(r"[/:@#]")
_ANY_SEPARATOR = linear.compile(r"[._\-/:@#]")
_OPENING = "\"'([{\u201c\u2018\u00ab"  # also the typographic opening quotes and guillemet
_CLOSING = "\"')]"
_SENTENCE_MARKS = ".!?"

_EXEMPT_WORDS = frozenset({"I"})
"""Capitalised in any position for grammatical reasons, not because they name something."""


def _numbers(text: str) -> set[str]:
    """Every number in ``text``: thousands separators removed, other comma-joined runs split."""
    found: set[str] = set()
    for match in _NUMBER.finditer(text):
        raw = match.group()
        if _THOUSANDS.fullmatch(raw):
            found.add(raw.replace(",", ""))
        else:
            found.update(part for part in raw.split(",") if part)
    return found


def _is_identifier(token: str) -> bool:
    has_digit = any(char.isdigit() for char in token)
    has_letter = any(char.isalpha() for char in token)
    internal_capital = any(a.islower() and b.isupper() for a, b in itertools.pairwise(token))
    return (has_digit and has_letter) or internal_capital


def _is_sentence_initial(line: str, start: int) -> bool:
    """Whether the token at ``start`` opens a sentence: only spaces and opening quotes before it,
    then the line's start or a full stop, question or exclamation mark (and any closing quotes).
    Read backwards over just those characters, so the tokens of a line cost what the line does."""
    at = _back_over(line, start, str.isspace)
    at = _back_over(line, at, _OPENING.__contains__)
    at = _back_over(line, at, str.isspace)
    if at == 0:
        return True
    at = _back_over(line, at, _CLOSING.__contains__)
    return at > 0 and line[at - 1] in _SENTENCE_MARKS


def _back_over(line: str, at: int, skipped: Callable[[str], bool]) -> int:
    while at > 0 and skipped(line[at - 1]):
        at -= 1
    return at


@dataclass(frozen=True)
class SourceFacts:
    """What the sources state, indexed once so that many lines can be checked against them."""

    numbers: frozenset[str]
    identifiers: frozenset[str]
    words: frozenset[str]

    @classmethod
    def of(cls, sources: Iterable[str]) -> SourceFacts:
        numbers: set[str] = set()
        identifiers: set[str] = set()
        words: set[str] = set()
        for text in sources:
            numbers |= _numbers(text)
            for match in _TOKEN.finditer(text):
                token = match.group()
                parts = [part for part in _STRUCTURAL.split(token) if part]
                identifiers.add(token)
                identifiers.update(parts)
                words.add(token.casefold())
                words.update(part.casefold() for part in parts)
                words.update(piece.casefold() for piece in _ANY_SEPARATOR.split(token) if piece)
        return cls(frozenset(numbers), frozenset(identifiers), frozenset(words))

    def ungrounded(self, line: str) -> set[str]:
        """The fact tokens of ``line`` that these sources do not state (empty: grounded)."""
        missing = {number for number in _numbers(line) if number not in self.numbers}
        for match in _TOKEN.finditer(line):
            token = match.group()
            initial = _is_sentence_initial(line, match.start())
            if _is_identifier(token):
                # A sentence may start with an identifier written lower-case in the sources.
                variants = {token, token[0].swapcase() + token[1:]} if initial else {token}
                if not variants & self.identifiers:
                    missing.add(token)
                continue
            named = token[0].isupper() and not initial and token not in _EXEMPT_WORDS
            if named and token.casefold() not in self.words:
                missing.add(token)
        return missing


def ungrounded_tokens(line: str, sources: Iterable[str]) -> set[str]:
    """The fact tokens of ``line`` (numbers, identifiers, non-initial capitalised words) that
    occur in none of ``sources``. An empty set means the line is grounded.

    To check several lines against the same sources, build :class:`SourceFacts` once.
    """
    return SourceFacts.of(sources).ungrounded(line)

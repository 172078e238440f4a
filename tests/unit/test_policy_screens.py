"""The write policy's screens answer as the checks they stand in front of.

Instruction detection, secret redaction and sensitive disclosures each search a text first with
one pattern made of all their patterns (:func:`episodic.domain.linear.any_of`), and run the
patterns one by one only where it finds something. That is exact only if the screen finds
something wherever any pattern would: checked here on every text of the labelled sets, and on
texts spliced from them with noise (other scripts, digits, line breaks, upper case), against
the checks run without the screen. The sentence judge's word splitter is checked against the
pattern it replaces the same way, and so are the cheaper checks in front of single patterns: the
encodings searched only where their first character is, the ordinary kinds of rules only where
an ASCII text names one, and the separators read by visiting them alone.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from episodic.domain import linear
from episodic.domain.policy import instruction_patterns_en, instructions, memorability, secrets, sensitivity
from episodic.domain.policy import text as views_of
from episodic.domain.policy.text import views
from tests.support.fuzzing import FUZZ_SELECTED

EVALS = Path(__file__).resolve().parents[1] / "evals"
SETS = ["poisoning/corpus.jsonl", "poisoning/holdout.jsonl", "secrets/corpus.jsonl", "chatter_eval.jsonl"]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *_strings(item)]]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


@cache
def labelled_texts() -> list[str]:
    """Every string of the labelled sets the policy is measured on (proposals' fields, notes, labels)."""
    found: list[str] = []
    for name in SETS:
        for line in (EVALS / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                found += _strings(json.loads(line))
    return list(dict.fromkeys([*found, *OWN_EXAMPLES]))


OWN_EXAMPLES = [
    "I've been seeing a counsellor since the move",  # a disclosure only an exception pattern finds
    "She works as a counselor at the school",  # and its veto
    "the night lead confirmed passcode 77Delta-Fox91 on the call",  # a token only its credential word marks
]


NOISE = st.text(st.sampled_from([*"aZ7\u0663\u00e9\u00d7\u0130\u0131\u6771\n -:='_"]))


@st.composite
def spliced(draw: st.DrawFn) -> str:
    """Pieces of two labelled texts, noise between them, sometimes upper- or lower-cased."""
    texts = labelled_texts()
    first, second = draw(st.sampled_from(texts)), draw(st.sampled_from(texts))
    start = draw(st.integers(0, len(first)))
    end = draw(st.integers(0, len(second)))
    text = first[start:] + draw(NOISE) + second[:end]
    return draw(st.sampled_from([text, text.upper(), text.lower()]))


def _instruction_kinds_unscreened(text: str) -> frozenset[str]:
    seen = views(text)
    return instructions._families({"words": seen.words, "latin": seen.latin, "squashed": seen.squashed})


def _english_disclosures_unscreened(text: str) -> set[str]:
    english = linear.ascii_words(text)
    return {
        kind
        for kind, pattern in sensitivity._patterns().items()
        if pattern.search(english) or sensitivity._excepted(kind, english)
    }


def _decoded_unscreened(plain: str) -> list[str]:
    found = [d for run in views_of._BASE64_RUN.findall(plain) if (d := views_of._readable_base64(run))]
    if views_of._PERCENT.search(plain):
        found.append(views_of.unquote(plain))
    if views_of._ENTITY.search(plain):
        found.append(views_of.html.unescape(plain))
    if views_of._BACKSLASH.search(plain):
        found.append(views_of.well_formed(views_of._BACKSLASH.sub(lambda m: views_of._unescape(m.group(0)), plain)))
    return found


def _separated_by_each_character(plain: str) -> str:
    out, run_start = [], -1
    for index, char in enumerate(plain):
        if char in "_-./:":
            run_start = index if run_start < 0 else run_start
            continue
        if run_start >= 0:
            between = run_start > 0 and views_of._word(plain[run_start - 1]) and views_of._word(char)
            out.append(" " if between else plain[run_start:index])
            run_start = -1
        out.append(char)
    if run_start >= 0:
        out.append(plain[run_start:])
    return "".join(out)


def _rules_joined_unscreened(plain: str) -> str:
    return linear.replace_group(instruction_patterns_en._ORDINARY_RULE, plain, lambda _: "_", "gap")


def _single_patterns_agree(plain: str) -> None:
    assert views_of.decoded_payloads(plain) == _decoded_unscreened(plain)
    assert views_of.separated(plain) == _separated_by_each_character(plain)
    for reading in (plain, linear.ascii_words(plain)):
        assert instruction_patterns_en.ordinary_rules_joined(reading) == _rules_joined_unscreened(reading)


def _agree(text: str) -> None:
    _single_patterns_agree(text)
    assert instructions.kinds(text) == _instruction_kinds_unscreened(text)
    assert secrets.redact(text) == secrets._redacted(text)
    english = _english_disclosures_unscreened(text)
    assert english <= set(sensitivity.disclosures(text))
    if english:
        assert sensitivity._screen().search(linear.ascii_words(text)) is not None
    assert memorability._words_of(text) == memorability._WORD.findall(text)


def test_given_the_labelled_sets_when_screened_then_each_text_is_judged_as_without_the_screens():
    texts = labelled_texts()
    assert len(texts) > 1000
    flagged = sum(bool(_instruction_kinds_unscreened(t)) for t in texts)
    redacted = sum(secrets._redacted(t).kinds != () for t in texts)
    assert flagged > 100 and redacted > 50  # the sets do hold what the screens must let through
    for text in texts:
        _agree(text)


@given(spliced())
def test_given_pieces_of_labelled_texts_with_noise_when_screened_then_they_are_judged_as_without(text):
    _agree(text)


@pytest.mark.fuzz
@pytest.mark.skipif(not FUZZ_SELECTED, reason="fuzz tier: run with HYPOTHESIS_PROFILE=fuzz (make test-fuzz)")
@settings(max_examples=3000)
@given(spliced())
def test_given_many_more_spliced_texts_when_screened_then_they_are_judged_as_without(text):
    _agree(text)


def test_given_patterns_with_their_own_flags_and_names_when_joined_then_each_keeps_its_reading():
    shouted = linear.compile(r"(?P<token>secret)", ignore_case=True)
    block = linear.compile(r"(?P<token>BEGIN.*END)", dot_all=True)
    exact = linear.compile(r"^Exact$")
    screen = linear.any_of([shouted, block, exact])
    assert screen.search("a SECRET here") is not None  # the case-blind pattern stays case-blind
    assert screen.search("BEGIN\nbody\nEND") is not None  # and the dot-all one spans lines
    assert screen.search("first reading\nExact\nthird") is not None  # ^ and $ hold at each reading's edges
    assert screen.search("exact\nbegin body") is None  # the case-sensitive one stays so


@given(st.text(st.sampled_from(["a", "B", "é", "\u00d7", "\u00f7", "'", "1", "٣", "²", " ", "-", "ß", "Ω", "\n"])))
def test_given_any_text_when_split_into_words_then_the_splitter_finds_what_the_pattern_finds(text):
    assert memorability._words_of(text) == memorability._WORD.findall(text)


PIECES = [
    *"aZ7+/=_-.:%&#;\\ux4F \n\u017f\u212a\u00e9",
    *("delivery", "\u017fafety", "par\u212aing", " instructions", "&amp;", "%4", "\\u00"),
]
"""What the cheap checks look for, and what folds into it outside ASCII (long s, Kelvin sign)."""


@example("aGVsbG8gd29ybGQh")  # base64 of "hello world!": a run of exactly the shortest length
@example("par\u212aing rules")  # the Kelvin sign folds to k
@given(st.lists(st.sampled_from(PIECES)).map("".join))
def test_given_any_text_when_checked_cheaply_first_then_each_single_pattern_finds_what_it_finds_alone(plain):
    _single_patterns_agree(plain)

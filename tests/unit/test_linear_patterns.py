"""Every pattern applied to a caller's text runs in linear time (episodic.domain.linear), by structure.

* No module of the core imports a backtracking engine (``re``, ``regex``): every pattern is
  compiled by RE2, which refuses what it cannot run in linear time.
* The helpers that stand in for look-around (veto groups, group replacement) and for Python's
  Unicode classes (``\\w``, ``\\s``, ``\\d``, ``\\b`` through :func:`ascii_words`) answer as the
  backtracking patterns they replaced did, checked against ``re`` itself here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from episodic.domain import linear
from tests.support.rings import imports_of

CORE = Path(__file__).resolve().parents[2] / "layers" / "episodic"
BACKTRACKING = {"re", "regex", "sre_compile", "sre_parse"}


def _engines(path: Path) -> set[str]:
    return {imported.name.split(".")[0] for imported in imports_of(path)} & BACKTRACKING


def test_given_every_module_of_the_core_when_read_then_none_imports_a_backtracking_engine():
    offenders = [
        f"{path.relative_to(CORE)} imports {sorted(_engines(path))}"
        for path in sorted(CORE.rglob("*.py"))
        if _engines(path)
    ]
    assert not offenders, "compile patterns with episodic.domain.linear (RE2):\n  " + "\n  ".join(offenders)


@pytest.mark.parametrize(
    "pattern",
    [r"(?<!a)b", r"a(?=b)", r"a(?!b)", r"(?<=a)b", r"(a)\1", r"(?>a+)b", r"a++", r"[\W]", r"[^\S]"],
)
def test_given_a_pattern_that_needs_backtracking_when_compiled_then_it_is_refused_by_name(pattern):
    with pytest.raises(ValueError, match=r"not a linear-time pattern|has no RE2 spelling"):
        linear.compile(pattern)


def test_given_the_policy_loaded_when_its_patterns_are_listed_then_there_are_many_and_all_compiled():
    import episodic.domain.policy.instructions
    import episodic.domain.policy.secrets
    import episodic.domain.recall.query  # noqa: F401

    assert len(linear.sources()) > 40


# ---------------------------------------------------------------------------- Python's classes, in RE2

TEXTS = st.text(
    st.sampled_from(
        ["a", "Z", "é", "ß", "東", "1", "٣", "_", " ", "\t", "\n", "\u2028", "\xa0", "\x85", "-", ".", "'"]
    ),
    max_size=24,
)


@given(TEXTS)
def test_given_any_text_when_matched_with_unicode_classes_then_they_find_what_re_finds(text):
    for source in (r"\w+", r"\W+", r"\s+", r"\S+", r"\d+", r"\D+", r"[\w.]+", r"[^\s,]+", r"[\d_]+"):
        assert linear.compile(source).findall(text) == re.findall(source, text), (source, text)


@given(TEXTS)
def test_given_any_text_when_read_as_ascii_words_then_the_ascii_boundary_falls_where_pythons_does(text):
    """RE2's ``\\b`` on :func:`ascii_words` text is Python's Unicode ``\\b`` on the text."""
    pattern = r"\b\w+?\b|\b"
    ours = [m.span() for m in linear.compile(pattern).finditer(linear.ascii_words(text))]
    assert ours == [m.span() for m in re.finditer(pattern, text)]
    assert len(linear.ascii_words(text)) == len(text)


@given(TEXTS)
def test_given_any_text_when_split_into_words_or_one_line_then_it_is_what_the_patterns_gave(text):
    assert linear.words(text) == re.findall(r"\w+", text)
    assert linear.one_line(text) == re.sub(r"\s+", " ", text)


def test_given_python_escapes_when_translated_then_re2_reads_the_same_characters():
    assert linear.compile(r"i\u2019m").search("I said i\u2019m here")
    assert linear.unicode_classes(r"[\w-]\\w") == r"[\pL\pN_-]\\w"  # an escaped backslash stays one


# ---------------------------------------------------------------------------- look-around, without it


def test_given_a_veto_group_when_searched_then_a_match_that_took_it_does_not_count():
    pattern = linear.compile(r"you\s+are\s+now\s+a\b(?P<veto>\s+registered)?")
    assert linear.search_unvetoed(pattern, "you are now a registered member") is None
    found = linear.search_unvetoed(pattern, "you are now a registered member; you are now a pirate")
    assert found is not None and found.start() == 33


def test_given_a_group_to_replace_when_its_pattern_reads_the_edges_then_only_the_group_changes():
    token = linear.compile(r"(?:^|[^A-Za-z0-9])(?P<token>KEY[0-9]{2})")
    text = "KEY11,KEY22 xKEY33"
    assert linear.replace_group(token, text, lambda m: "*", "token") == "*,* xKEY33"
    assert linear.replace_group(token, text, lambda m: None, "token") == text
    with pytest.raises(ValueError):
        linear.replace_group(token, text, lambda m: "*", "token", read=text + "x")


def test_given_text_with_pattern_characters_when_escaped_then_it_matches_only_itself() -> None:
    pattern = linear.compile(linear.escape("O'Neil (Jr.) a+b"))
    assert pattern.search("met O'Neil (Jr.) a+b today") is not None
    assert pattern.search("met O'Neil Jr. aab today") is None

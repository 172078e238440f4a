"""The words a text is searched by, in the languages recall knows beyond English (Spanish).

The word index stems with Porter's English rules, which leave a Spanish word's endings
alone: "trabajo", "trabajando" and "trabajé" are three unrelated words to it, and a question's
"qué" or "cuándo" weighs as much as a name. So a text with Spanish function words (and no more
English ones) is indexed with one more line: the Snowball stems of its words, read without their
accents, that differ from the words (:func:`indexed`). The text itself stays in the index. A
question in Spanish is searched by the stems of the words that name something, its filler left
out, and by its names as written (:func:`searched`): a capitalised word is a name ("Zamora",
"Lucía"), and a name is found in any text, whatever its language.

Texts and questions no other language claims are indexed and searched as written, with the
index's English rules: only a language's own function words, outnumbering English ones, make a
text that language.

Why function words: they are most of any sentence, short texts included, and each language's are
its own; a handful of them tells Spanish from English more reliably than letters do (names and
loanwords carry accents into English text). Words both languages write alike ("no", "me", "a",
"son", "es") count for neither. Why without accents: people type questions without them
("panaderia"), and the index reads "panadería" as "panaderia" too.
"""

from __future__ import annotations

import threading
import unicodedata
from dataclasses import dataclass

import Stemmer

from episodic.domain import linear


@dataclass(frozen=True)
class Language:
    """A language recall stems: its name (Snowball's, which names its stemmer), the function words
    that identify a text as written in it, and the words a question in it asks with but that name
    nothing."""

    name: str
    marks: frozenset[str]
    filler: frozenset[str]
    letters: str = ""
    """Characters only this language writes: each counts as one of its function words."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ENGLISH = _words(
    """
    the and of to is was it i you he she we they that this with for on my your at be have has had
    did do does what when where who how not but are were will would been there their our his her
    its an or if from about which just can could should
    """
)

ENGLISH = "english"
"""The name of the language of every text no other language claims."""

SPANISH = Language(
    name="spanish",
    marks=_words(
        """
        el la los las un una unos unas de del al y que qué en con por para se su sus está están
        estaba estaban fue fueron muy pero como cómo más ya yo mi mis tu tus te le les lo nos este
        esta esto eso esa ese estos esas esos hay porque también cuando cuándo donde dónde quién
        quiénes cuál cuáles cuánto cuánta cuántos cuántas tiene tengo tenía todo toda todos nada algo
        pues bueno vale sí él ella ellos ellas nosotros ni hasta desde sobre entre sin pero aunque
        """
    ),
    filler=_words(
        """
        a al algo alguien algún alguna alguno algunas algunos ante antes así aun aún cada como cómo
        con contra cual cuál cuales cuáles cuando cuándo cuanto cuánto cuanta cuánta cuantos cuántos
        cuantas cuántas de del desde donde dónde adonde adónde durante el él ella ellas ellos en entre era eran es
        esa ese eso esas esos esta está estaba estaban están estar este esto estas estos fue fueron
        ha había habían han hasta hay la las le les lo los más me mi mis mucho muy nada ni no nos
        nosotros o os otra otro para pero poco por porque qué que quien quién quienes quiénes se sea
        según ser si sí sido siempre sin sobre su sus también tan te tenía tiene tienen todo todos tu
        tú tus un una uno unos unas usted y ya yo dijo contó cuenta cuéntame hizo hace pasó pasa
        """
    ),
    letters="¿¡ñ",
)

LANGUAGES = (SPANISH,)
"""The languages recall stems, tried in this order; a tie with English is English."""

INDEXED_VERSION = f"1/{Stemmer.version()}"
"""Changed whenever :func:`indexed` would index a text otherwise (a new Snowball release included),
so a store re-indexes its texts."""

_ENOUGH = 2
"""A question is a language's only when at least this many of its words (or letters) are that
language's own; a text needs one, if English claims fewer: its stems cost a line, a question
asked in the wrong language loses its words' other forms."""


def language_name(text: str) -> str:
    """The name of the language ``text`` is written in: one of :data:`LANGUAGES`, else :data:`ENGLISH`."""
    language = language_of(text)
    return ENGLISH if language is None else language.name


def language_of(text: str, enough: int = _ENOUGH) -> Language | None:
    """The language ``text`` is written in, when it is one of :data:`LANGUAGES` by at least
    ``enough`` of its own words; None for English and for a text too short or too mixed to tell."""
    words = linear.words(text.lower())
    english = sum(map(_ENGLISH.__contains__, words))
    best, best_count = None, max(english, enough - 1)
    for language in LANGUAGES:
        count = sum(map(language.marks.__contains__, words)) + sum(text.count(c) for c in language.letters)
        if count > best_count:
            best, best_count = language, count
    return best


_STEMMERS = threading.local()


def stems(algorithm: str, words: list[str]) -> list[str]:
    """Each word's stem by the Snowball ``algorithm`` ("spanish", "porter", ...): one stemmer per
    thread and algorithm, since a stemmer keeps state."""
    stemmers = _STEMMERS.__dict__
    stemmer = stemmers.get(algorithm)
    if stemmer is None:
        stemmer = stemmers[algorithm] = Stemmer.Stemmer(algorithm)
    found: list[str] = stemmer.stemWords(words)
    return found


def unaccented(word: str) -> str:
    """``word`` without its accents ("mudó" -> "mudo"), as the index reads it."""
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def indexed(text: str) -> str:
    """What the word index reads for ``text``: the text, and for a text in one of
    :data:`LANGUAGES` a last line of the stems that differ from their words, once each."""
    language = language_of(text, enough=1)
    if language is None:
        return text
    words = list(dict.fromkeys(unaccented(w) for w in linear.words(text.lower())))
    other = dict.fromkeys(stem for word, stem in zip(words, stems(language.name, words), strict=True) if stem != word)
    return f"{text}\n{' '.join(other)}" if other else text


def searched(query: str) -> str:
    """What the search by words looks for when asked ``query``: the query itself, or for a query
    in one of :data:`LANGUAGES` its names as written and the stems of its other words that name
    something, in order."""
    language = language_of(query)
    if language is None:
        return query
    found = []
    for word in dict.fromkeys(linear.words(query)):
        lowered = word.lower()
        if lowered in language.filler:
            continue
        as_written = word[:1].isupper()  # a name
        found.append(lowered if as_written else stems(language.name, [unaccented(lowered)])[0])
    return " ".join(dict.fromkeys(found))

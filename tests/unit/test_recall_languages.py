"""Which language a text is in, what the full-text index holds for it, and what a question
searches for: English untouched, Spanish by its Snowball stems beside its words."""

from __future__ import annotations

from episodic.domain.recall.languages import ENGLISH, SPANISH, indexed, language_name, language_of, searched
from episodic.domain.recall.ranking import Ranker, RankingWeights

SPANISH_TURN = "Empecé a trabajar en la panadería de mi tío, y los sábados trabajo hasta las tres"
ENGLISH_TURN = "We had dinner at Plaza de la Villa with Ana and her brother on Friday"


def test_given_spanish_function_words_then_the_text_is_spanish_and_an_english_one_naming_spanish_places_is_not():
    assert language_of(SPANISH_TURN) is SPANISH and language_name(SPANISH_TURN) == "spanish"
    assert language_of("¿Dónde trabaja Irene ahora?") is SPANISH  # a short question: its ¿ and words tell
    assert language_of(ENGLISH_TURN) is None and language_name(ENGLISH_TURN) == ENGLISH
    assert language_of("Ich habe es dir doch erzählt, die Wohnung in Kassel ist weg") is None  # German is not Spanish
    assert language_of("Zamora") is None and language_of("") is None  # nothing to tell by: English's rules
    assert language_of("Lucía se mudó a Sevilla") is None  # one Spanish word is too few for a question
    assert language_of("Lucía se mudó a Sevilla", enough=1) is SPANISH  # and enough for a text's stems


def test_given_an_english_text_then_the_index_holds_it_as_it_is_and_a_question_searches_as_asked():
    assert indexed(ENGLISH_TURN) == ENGLISH_TURN
    assert searched("Where did Ana have dinner on Friday?") == "Where did Ana have dinner on Friday?"


def test_given_a_spanish_text_then_the_index_holds_the_text_and_a_line_of_its_words_other_stems():
    held = indexed(SPANISH_TURN)
    text, stems = held.split("\n")
    assert text == SPANISH_TURN  # every word as written stays searchable ("Zamora" alone still finds it)
    assert {"trabaj", "panaderi", "sab"} <= set(stems.split())  # read without accents
    assert not {"trabajar", "trabajo", "hasta"} & set(stems.split())  # only stems that differ from words
    assert stems.split().count("trabaj") == 1  # once, for trabajar and trabajo


def test_given_a_spanish_question_then_it_searches_the_stems_of_what_it_names_without_its_filler():
    words = searched("¿Dónde trabaja ahora y qué días trabajó la semana pasada?").split()
    assert "trabaj" in words and "seman" in words and "pas" in words
    assert not {"dónde", "donde", "qué", "la", "y"} & set(words)


def test_given_a_spanish_question_then_its_names_are_searched_as_written_and_its_words_without_accents():
    assert searched("¿Qué dijo Zamora?") == "zamora"  # a name alone still finds "Zamora" in any text
    assert searched("¿Adónde se mudó Lucía?") == "mud lucía"
    assert searched("Plaza de la Villa") == "plaza villa"  # its "de la" make it Spanish; its names stay
    typed, accented = searched("¿Dónde está la panaderia?"), searched("¿Dónde está la panadería?")
    assert typed == accented == "panaderi" and "panaderi" in indexed(SPANISH_TURN).split("\n")[1]


def test_given_an_english_only_embedder_then_a_spanish_question_is_ranked_leaning_on_its_words():
    ranker = Ranker(RankingWeights(embedder_languages=frozenset({ENGLISH})))
    spanish = ranker.for_question("¿Dónde trabaja Irene ahora?")
    assert spanish.weights.semantic_share == RankingWeights().unfamiliar_semantic_share
    assert spanish.weights.semantic_share < ranker.weights.semantic_share
    assert ranker.for_question("Where does Irene work now?") is ranker
    assert ranker.for_question(None) is ranker
    multilingual = Ranker(RankingWeights())  # an embedder that names no languages reads them all
    assert multilingual.for_question("¿Dónde trabaja Irene ahora?") is multilingual

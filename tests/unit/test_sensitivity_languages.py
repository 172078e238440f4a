"""Sensitive disclosures in Spanish and German: named by kind with or without their accents, and
ordinary sentences with look-alike words left alone."""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from episodic.domain.model import Caller, EpisodeProposal, PrivacyClass, Role
from episodic.domain.policy import WritePolicy
from episodic.domain.policy.sensitivity import disclosures
from episodic.domain.policy.sensitivity_i18n import folded


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Me han diagnosticado diabetes tipo 2", "health"),
        ("Es cáncer de mama, la operan el 26 y después quimio", "health"),
        ("Estoy embarazada de ocho semanas", "health"),
        ("Llevo meses con ansiedad y he empezado terapia con una psicóloga", "mental_health"),
        ("Tuve un ataque de pánico en el metro", "mental_health"),
        ("Tenemos deudas con el banco y no nos alcanza para el alquiler", "finances"),
        ("Soy musulmana, así que nada de jamón", "beliefs"),
        ("Le conté a mi padre que soy gay", "sexuality_identity"),
        ("Raquel me pidió el divorcio el jueves", "family_trouble"),
        ("Mañana tengo el juicio en el juzgado de lo penal", "legal"),
        ("Oma liegt nach dem Oberschenkelhalsbruch im Krankenhaus", "health"),
        ("Wir versuchen es jetzt mit künstlicher Befruchtung", "health"),
        ("Der Psychiater sagt, ich habe ADHS", "mental_health"),
        ("Ich bin in Therapie wegen meiner Depression", "mental_health"),
        ("Wir haben 20.000 Euro Schulden und der Dispo ist ausgereizt", "finances"),
        ("Mir wurde gekündigt, zum Monatsende", "finances"),
        ("Ich bin Muslim und faste im Ramadan", "beliefs"),
        ("Mein Bruder ist schwul und hat es Papa gesagt", "sexuality_identity"),
        ("Wir haben uns kurz vor Weihnachten getrennt", "family_trouble"),
        ("Nächste Woche muss ich vor Gericht aussagen", "legal"),
    ],
)
def test_given_a_disclosure_in_spanish_or_german_when_checked_then_its_kind_is_named(text: str, kind: str) -> None:
    assert kind in disclosures(text)


@pytest.mark.parametrize(
    "text",
    [
        "Sin embargo, el concierto estuvo genial",
        "A mi juicio, la paella de ayer fue la mejor",
        "Lo escuché en la radio esta mañana",
        "Te pago a fin de mes, tranquilo",
        "Die Rechnung haben wir getrennt bezahlt",
        "Das Gericht mit Spargel war super",
        "Ich habe die rote Farbe gewählt",
        "Ich hab meinen Job gekündigt und mache mich selbstständig",
        "Der Aufbruch ins neue Jahr war laut",
    ],
)
def test_given_ordinary_spanish_or_german_with_look_alike_words_then_nothing_is_named(text: str) -> None:
    assert disclosures(text) == []


def test_given_a_disclosure_typed_without_accents_then_it_is_named_as_with_them() -> None:
    assert disclosures("tengo depresion y ansiedad") == disclosures("tengo depresión y ansiedad") == ["mental_health"]
    assert disclosures("die Arztin hat mich krankgeschrieben") == disclosures("die Ärztin hat mich krankgeschrieben")


def test_given_accented_letters_when_folded_then_only_the_marks_go() -> None:
    assert folded("Ärztin, Straße, depresión, niño") == "Arztin, Strasse, depresion, nino"


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_given_ascii_text_when_folded_then_it_is_what_the_full_folding_gives(text: str) -> None:
    """An ASCII text is returned as it is, without the pass over its characters: the full folding
    (decomposed, combining marks dropped) leaves it unchanged too."""
    full = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    assert folded(text) == full == text


def test_given_private_disclosures_configured_when_a_spanish_one_is_written_internal_then_it_is_stored_private() -> (
    None
):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    proposal = EpisodeProposal.model_validate(
        {"eventType": "conversation_turn", "actorId": "noe", "occurredAt": now.isoformat(),
         "summary": "Fui a la médica y me ha recomendado terapia para la ansiedad", "sourceRefs": ["t1"],
         "sourceTrust": "user_provided", "privacyClass": "internal"}
    )  # fmt: skip
    caller = Caller(tenant_id="acme", role=Role.AGENT, principal_id="agent-1")
    decision, stored = WritePolicy(private_disclosures=True).decide(proposal, caller, now, [])
    assert "sensitive:mental_health" in decision.reasons
    assert stored.privacy_class is PrivacyClass.PRIVATE


EVALS = Path(__file__).parents[1] / "evals"


@pytest.mark.parametrize(
    ("folder", "found_at_least", "flagged_at_most"),
    [
        ("conversations/test", 0.50, 0.04),
        ("conversations_es/test", 0.60, 0.03),
        ("conversations_de/test", 0.45, 0.04),
    ],
)
def test_given_a_labelled_test_split_when_every_turn_is_checked_then_disclosures_are_found_in_each_language(
    folder: str, found_at_least: float, flagged_at_most: float
) -> None:
    """The share of turns labelled ``sensitive`` whose kind is named, and of the other turns named
    wrongly, on splits the patterns were not written from (dev splits were)."""
    turns = [
        turn
        for path in sorted((EVALS / folder).glob("*.json"))
        for session in json.loads(path.read_text())["sessions"]
        for turn in session["turns"]
    ]
    sensitive = [t["text"] for t in turns if t["label"] == "sensitive"]
    others = [t["text"] for t in turns if t["label"] != "sensitive"]
    found = sum(1 for text in sensitive if disclosures(text)) / len(sensitive)
    flagged = sum(1 for text in others if disclosures(text)) / len(others)
    print(f"\n{folder}: {found:.2f} of sensitive turns named, {flagged:.3f} of the others")
    assert len(sensitive) >= 30
    assert found >= found_at_least
    assert flagged <= flagged_at_most

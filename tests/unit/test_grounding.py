"""``ungrounded_tokens``: a summary line may paraphrase its sources, never add named or numeric facts."""

from __future__ import annotations

import pytest

from episodic.domain.digests.grounding import SourceFacts, ungrounded_tokens

SOURCES = [
    "2026-11-28T09:30:00Z user_preference_stated Customer Alice Moreno wants invoices as PDF, in Portuguese",
    "2026-11-28T11:05:00Z incident_or_failure Deploy of checkout v2.4.1 failed; ticket INC-2291 opened",
    "2026-11-28T14:40:00Z task_milestone Refund of 120.50 EUR issued for order ord_7781 resolved",
    "2026-11-28T16:00:00Z tool_observed_event OpenSearch reindex processed 1,200 documents in chat:session-9/turn-4",
]


@pytest.mark.parametrize(
    "line",
    [
        "The customer asked to receive invoices in PDF format and in Portuguese.",
        "Alice Moreno prefers PDF invoices.",
        "A deploy of checkout v2.4.1 failed and INC-2291 was opened.",
        "A refund of 120.50 EUR was issued for ord_7781.",
        "About 1200 documents were reindexed in OpenSearch.",
        "Ticket 2291 tracks the failed deploy.",
        "On 2026-11-28 the checkout deploy failed.",
        "The reindex happened in session-9.",
        "Alice's invoices go out as PDF.",
    ],
)
def test_given_a_grounded_paraphrase_when_checked_then_nothing_is_flagged(line):
    assert ungrounded_tokens(line, SOURCES) == set()


@pytest.mark.parametrize(
    ("line", "invented"),
    [
        ("A refund of 130.50 EUR was issued.", "130.50"),
        ("A refund of 120.5 EUR was issued.", "120.5"),
        ("Checkout v2.4.2 failed to deploy.", "2.4.2"),
        ("The customer spent 3 hours waiting.", "3"),
    ],
)
def test_given_an_invented_number_when_checked_then_it_is_flagged(line, invented):
    assert invented in ungrounded_tokens(line, SOURCES)


@pytest.mark.parametrize(
    ("line", "invented"),
    [
        ("The deploy failure is tracked as INC-2292.", "INC-2292"),
        ("The deploy failure is tracked as INC-229.", "INC-229"),
        ("A follow-up ticket OPS-17 was opened.", "OPS-17"),
        ("Checkout v2.4.1 was rolled back with hotfix-3.", "hotfix-3"),
        ("The search cluster is DynamoDB.", "DynamoDB"),
    ],
)
def test_given_an_invented_identifier_when_checked_then_it_is_flagged(line, invented):
    assert invented in ungrounded_tokens(line, SOURCES)


def test_given_an_invented_ticket_id_when_checked_then_the_id_and_its_number_are_flagged():
    assert ungrounded_tokens("The failure is tracked as INC-3310.", SOURCES) == {"INC-3310", "3310"}


@pytest.mark.parametrize(
    ("line", "invented"),
    [
        ("The refund was approved by Bob.", "Bob"),
        ("Alice Moreno and Carla Souza want PDF invoices.", "Carla"),
        ("The customer wants invoices in Spanish.", "Spanish"),
        ("The refund was issued in Lisbon.", "Lisbon"),
    ],
)
def test_given_an_invented_name_when_checked_then_it_is_flagged(line, invented):
    assert invented in ungrounded_tokens(line, SOURCES)


@pytest.mark.parametrize(
    "line",
    [
        "Refunds were issued today.",
        "Customers want invoices as PDF.",
        "Yesterday a deploy failed. Afterwards a ticket was opened.",
        '"Invoices" must be PDF files.',
        "(Later) the reindex finished!  Nothing else happened?  Everything was fine.",
    ],
)
def test_given_sentence_initial_capitals_when_checked_then_they_are_not_flagged(line):
    assert ungrounded_tokens(line, SOURCES) == set()


def test_given_a_sentence_initial_identifier_when_checked_then_it_is_still_checked_and_its_first_letter_may_differ():
    assert ungrounded_tokens("Ord_7781 was refunded.", SOURCES) == set()
    assert ungrounded_tokens("INC-9999 was opened.", SOURCES) == {"INC-9999", "9999"}
    assert ungrounded_tokens("42 documents were lost.", SOURCES) == {"42"}


@pytest.mark.parametrize(
    "line",
    [
        "The customer ALICE wants invoices in PORTUGUESE.",
        "The reindex ran on opensearch and the customer alice moreno was told.",
        "The invoices are Pdf files for Customer Alice.",
    ],
)
def test_given_words_differing_only_in_case_when_checked_then_they_are_grounded(line):
    assert ungrounded_tokens(line, SOURCES) == set()


def test_given_an_identifier_differing_in_case_when_checked_then_it_is_flagged_because_ids_match_exactly():
    assert ungrounded_tokens("The deploy of checkout V2.4.1 failed.", SOURCES) == {"V2.4.1"}


def test_given_a_capitalised_word_that_is_only_part_of_a_source_word_when_checked_then_it_is_flagged():
    # Whole words match, not substrings: "Alic" is not grounded by "Alice".
    assert ungrounded_tokens("The refund went to Alic.", SOURCES) == {"Alic"}


def test_given_no_sources_when_a_line_states_facts_then_every_fact_is_flagged():
    assert ungrounded_tokens("The refund of 120.50 EUR went to Alice.", []) == {"120.50", "EUR", "Alice"}


def test_given_a_line_without_fact_tokens_when_checked_then_it_is_grounded_whatever_the_sources():
    assert ungrounded_tokens("a deploy failed and a refund was issued.", []) == set()


def test_given_the_pronoun_i_when_checked_then_it_is_not_a_name():
    assert ungrounded_tokens("Later I saw the refund.", SOURCES) == set()


def test_given_source_facts_built_once_when_checking_lines_then_it_agrees_with_the_function():
    facts = SourceFacts.of(SOURCES)
    for line in ("Bob approved INC-2291.", "Alice wants PDF.", "It cost 99 EUR."):
        assert facts.ungrounded(line) == ungrounded_tokens(line, SOURCES)

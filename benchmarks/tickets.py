"""A corpus of short support-ticket episodes for the latency benchmarks: varied wording, named
customers, products and people (so a recall's second round has names to widen with), spread over
many actors; and distinct questions about them.

Generated from a seed, so every run of a benchmark asks the same questions of the same tickets.
"""

from __future__ import annotations

import random
from typing import Any

CUSTOMERS = [
    "Acme Logistics", "Borealis Health", "Cobalt Foods", "Dunmore Legal", "Everly Schools", "Fjord Shipping",
    "Granite Bank", "Harbor Clinics", "Ionic Labs", "Juniper Retail", "Kestrel Air", "Lumen Energy",
    "Marlow Hotels", "Northwind Traders", "Orchid Pharma", "Pioneer Insurance", "Quarry Media", "Redwood Council",
    "Saffron Kitchens", "Tidewater Ports",
]  # fmt: skip
PRODUCTS = [
    "Salesforce sync", "Okta single sign-on", "Stripe billing", "the CSV export", "the mobile app", "Slack alerts",
    "the reporting dashboard", "the public API", "Zendesk import", "SAML login", "the invoice PDF", "webhooks",
    "the audit trail", "two-factor codes", "the search page", "bulk upload",
]  # fmt: skip
PROBLEMS = [
    "times out after {n} seconds", "returns a 502 since the {day} release", "drops every {n}th record",
    "shows last month's totals", "sends duplicate emails", "rejects valid passwords", "is stuck at {n}%",
    "lost the custom fields", "charges the card twice", "fails for users with accents in their names",
    "stopped after the certificate rotated", "is slow for accounts over {n} thousand rows",
]  # fmt: skip
PEOPLE = ["Priya", "Marco", "Aisha", "Tomasz", "Lena", "Kwame", "Sofia", "Hiroshi", "Nadia", "Owen", "Ines", "Ravi"]
ACTIONS = [
    "{person} escalated it to engineering", "{person} shipped a hotfix in build {build}", "{person} asked for logs",
    "{person} rolled back build {build}", "{person} promised a credit of {n} dollars",
    "{person} closed it as a duplicate",
    "workaround from {person}: retry with a smaller batch", "{person} is waiting on the customer",
]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_SYLLABLES = ["ka", "lo", "mi", "ra", "ten", "vor", "bel", "dun", "sa", "qui", "zor", "fen", "mar", "tal", "ore", "ith"]
_TRADES = ["Logistics", "Health", "Foods", "Legal", "Bank", "Labs", "Retail", "Energy"]


def _made_up(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(2)).capitalize()


def _names(many: bool) -> tuple[list[str], list[str]]:
    """The customers and people tickets name: the few lists above, or (``many``) 300 made-up
    customers and 150 made-up people, so that few names recur from one recall to the next."""
    if not many:
        return CUSTOMERS, PEOPLE
    rng = random.Random(3)
    customers: dict[str, None] = {}
    while len(customers) < 300:
        customers[f"{_made_up(rng)} {rng.choice(_TRADES)}"] = None
    people: dict[str, None] = {}
    while len(people) < 150:
        people[_made_up(rng)] = None
    return list(customers), list(people)


def tickets(count: int, actors: int = 50, seed: int = 7, many_names: bool = False) -> list[dict[str, Any]]:
    """``count`` ticket episodes (API bodies) over ``actors`` actors (``many_names``: see :func:`_names`)."""
    customers, people = _names(many_names)
    rng = random.Random(seed)
    bodies = []
    for n in range(count):
        problem = rng.choice(PROBLEMS).format(n=rng.randint(2, 90), day=rng.choice(DAYS))
        person, build, credit = rng.choice(people), rng.randint(100, 999), rng.randint(20, 500)
        action = rng.choice(ACTIONS).format(person=person, build=build, n=credit)
        summary = f"Ticket {4000 + n}: {rng.choice(customers)} reports {rng.choice(PRODUCTS)} {problem}; {action}."
        bodies.append({
            "eventType": "tool_observed_event",
            "actorId": f"support-agent-{n % actors}",
            "occurredAt": f"2026-11-{1 + n % 28:02d}T{8 + n % 10:02d}:00:00Z",
            "summary": summary,
            "sourceRefs": [f"ticket:{4000 + n}"],
            "sourceTrust": "tool_result",
        })  # fmt: skip
    return bodies


QUESTION_SHAPES = [
    "Which customer said {product} {problem}?", "What did we do about {customer}'s {product} problem?",
    "Has {customer} had trouble with {product} before?", "Who handled the {product} issue for {customer}?",
    "Why is {product} failing for {customer}?", "Did anyone promise {customer} a credit?",
    "What was the workaround for {product}?", "Which tickets did {person} escalate about {product}?",
]  # fmt: skip


def questions(count: int, seed: int = 11, many_names: bool = False) -> list[str]:
    """``count`` distinct questions about the tickets (of the same ``many_names``)."""
    customers, people = _names(many_names)
    rng = random.Random(seed)
    asked: dict[str, None] = {}
    while len(asked) < count:
        shape = rng.choice(QUESTION_SHAPES)
        problem = rng.choice(PROBLEMS).format(n=rng.randint(2, 90), day=rng.choice(DAYS))
        text = shape.format(
            customer=rng.choice(customers), product=rng.choice(PRODUCTS), problem=problem, person=rng.choice(people)
        )
        asked[text] = None
    return list(asked)


TIME_PHRASES = [
    "last week", "in November 2026", "yesterday", "on 12 November 2026", "in March 2025",
    "between November 3 and 9, 2026",
]  # fmt: skip
"""What :func:`dated_questions` ends questions with: the tickets are from November 2026, so every
other window holds some of them and the rest none (then recall searches all time and says so),
whenever the benchmark runs."""


def dated_questions(count: int, seed: int = 17) -> list[str]:
    """``count`` distinct questions of :func:`questions`' shapes, each ending with one of
    :data:`TIME_PHRASES` in turn ("... for Orchid Pharma last week?")."""
    return [
        f"{question.rstrip('?')} {TIME_PHRASES[n % len(TIME_PHRASES)]}?"
        for n, question in enumerate(questions(count, seed))
    ]


def short_queries(count: int, seed: int = 13) -> list[str]:
    """``count`` distinct searches typed as an agent often types them: a customer and a product, or
    a product and a person, with no question around them ("Granite Bank Stripe billing"). The
    model's pass over so few tokens is its shortest, so the recall's own work weighs most."""
    rng = random.Random(seed)
    asked: dict[str, None] = {}
    while len(asked) < count:
        product = rng.choice(PRODUCTS).removeprefix("the ")
        pair = (rng.choice(CUSTOMERS), product) if rng.random() < 0.5 else (product, rng.choice(PEOPLE))
        asked[" ".join(pair)] = None
    return list(asked)

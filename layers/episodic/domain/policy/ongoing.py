"""Chat that leaves the speaker out: a sentence that opens with what someone is doing and what for,
to or with ("Still saving up for a new car.", "Training for a marathon.", "Learning to play
guitar.") is the speaker's own news, as "I'm still saving up for a new car" would be."""

from __future__ import annotations

from episodic.domain import linear

ONGOING = linear.compile(
    r"^\W*(?:(?:still|just|finally|currently|also|now|slowly|busy)\s+)*([a-z]{3,}ing)\s+"
    r"(?:(?:up|out|back|down|off|away)\s+)?(?:for|to|on|at|in|with|my|our|a|an|the|some|through|towards?|into|from|about"
    r"|myself|ourselves|two|three|four|five|six|seven|eight|nine|ten|several|\d+)\b",
    ignore_case=True,
)
"""An opening in -ing, after a few adverbs, followed by what the doing is for, to, on or with, or by
how many or whom ("fostering two kittens", "teaching myself guitar")."""
NOT_ONGOING = frozenset(
    """
    getting looking hoping wishing thinking sending counting missing loving praying rooting feeling
    trying having kidding joking chilling relaxing resting hanging waiting talking chatting catching
    checking dying laughing crying wondering guessing coming doing going being heading
    nothing something anything everything morning evening thing king
    amazing interesting exciting boring annoying confusing surprising disappointing frustrating
    terrifying stunning charming tempting inspiring refreshing satisfying embarrassing fascinating
    worrying tiring exhausting depressing touching heartwarming according
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""Openings in -ing that are how chat greets, wishes and waits ("Looking forward to it", "Counting
down the days"), that say how something feels ("Amazing to see"), or that are no verb at all."""


def doing(sentence: str) -> str | None:
    """The verb in -ing ``sentence`` opens with (:data:`ONGOING`, lower-cased), unless it is one of
    :data:`NOT_ONGOING`; ``None`` when it opens otherwise."""
    opening = ONGOING.search(sentence)
    if opening is None:
        return None
    verb = opening.group(1).lower()
    return None if verb in NOT_ONGOING else verb

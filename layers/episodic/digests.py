"""What a 24-hour digest may repeat, and how private it is.

A digest (``session_summary``) repeats the text of an actor's recent episodes, so it takes on
their rules: it is as private as the most private of them, lives no longer than the first of
them to expire (see the summarisation use case), and never copies a *sensitive* episode,
whose consent and expiry were given for that one record, not for copies of it. The stores'
"busy actors" counts use the same rule, so an actor is only called busy for what can be
summarised.
"""

from __future__ import annotations

from collections.abc import Iterable

from episodic.model import Episode, EventType, PrivacyClass

DIGEST_PRIVACY_ORDER = (PrivacyClass.PUBLIC, PrivacyClass.INTERNAL, PrivacyClass.PRIVATE)
"""Privacy classes a digest may summarise, least private first."""


def digestible(episode: Episode) -> bool:
    """An ordinary episode a digest may summarise: not a digest itself, not sensitive."""
    return episode.event_type is not EventType.SESSION_SUMMARY and episode.privacy_class in DIGEST_PRIVACY_ORDER


def digest_privacy(sources: Iterable[Episode]) -> PrivacyClass:
    return max((e.privacy_class for e in sources), key=DIGEST_PRIVACY_ORDER.index)

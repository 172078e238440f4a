"""What a 24-hour digest may repeat, and how private it is.

A digest (``session_summary``) repeats the text of an actor's recent episodes, so it takes on
their rules: it is as private as the most private of them, lives no longer than the first of
them to expire (see the summarisation use case), and never copies a *sensitive* episode,
whose consent and expiry were given for that one record, not for copies of it -- nor one
whose text the write policy would name a sensitive disclosure (a diagnosis, a debt, a
divorce, ...), whatever class its caller kept: a summary is read more widely than its turns. The stores'
"busy actors" counts use the class rule, so an actor is only called busy for what may be
summarised; the disclosure rule needs the text and is applied when the digest is made, which
then goes ahead only if enough sources are left.
"""

from __future__ import annotations

from collections.abc import Iterable

from episodic.domain.model import Episode, EventType, PrivacyClass
from episodic.domain.policy import sensitivity

DIGEST_PRIVACY_ORDER = (PrivacyClass.PUBLIC, PrivacyClass.INTERNAL, PrivacyClass.PRIVATE)
"""Privacy classes a digest may summarise, least private first."""


def digestible(episode: Episode) -> bool:
    """An ordinary episode a digest may summarise: not a digest itself, not sensitive in class
    or in what it discloses."""
    if episode.event_type is EventType.SESSION_SUMMARY or episode.privacy_class not in DIGEST_PRIVACY_ORDER:
        return False
    return not sensitivity.disclosures("\n".join(filter(None, [episode.summary, episode.outcome])))


def digest_privacy(sources: Iterable[Episode]) -> PrivacyClass:
    return max((e.privacy_class for e in sources), key=DIGEST_PRIVACY_ORDER.index)

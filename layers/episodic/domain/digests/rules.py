"""What a 24-hour digest may repeat, and how private it is.

A digest (``session_summary``) repeats the text of an actor's recent episodes, so it takes on
their rules: it is as private as the most private of them, lives no longer than the first of
them to expire (see the summarisation use case), and never copies a *sensitive* episode,
whose consent and expiry were given for that one record, not for copies of it -- nor one
whose text the write policy would name a sensitive disclosure (a diagnosis, a debt, a
divorce, ...), whatever class its caller kept: a summary is read more widely than its turns; nor
untrusted content. The stores' "busy actors" counts use the class rule, so an actor is only called
busy for what may be summarised; the disclosure and trust rules are applied when the digest is
made, which then goes ahead only if enough sources are left.
"""

from __future__ import annotations

from collections.abc import Iterable

from episodic.domain.model import Episode, EventType, PrivacyClass, SourceTrust
from episodic.domain.policy import sensitivity
from episodic.domain.recall.ranking import TRUST_SCORES

DIGEST_PRIVACY_ORDER = (PrivacyClass.PUBLIC, PrivacyClass.INTERNAL, PrivacyClass.PRIVATE)
"""Privacy classes a digest may summarise, least private first."""


def digestible(episode: Episode) -> bool:
    """An ordinary episode a digest may summarise: not a digest itself, not untrusted content (a
    web page, an email: held for review as itself, its words would lose that label in a digest,
    which is as trusted as its least trusted source), not sensitive in class or in what it discloses."""
    if episode.event_type is EventType.SESSION_SUMMARY or episode.privacy_class not in DIGEST_PRIVACY_ORDER:
        return False
    if episode.source_trust is SourceTrust.UNTRUSTED_CONTENT:
        return False
    return not sensitivity.disclosures("\n".join(filter(None, [episode.summary, episode.outcome])))


def digest_privacy(sources: Iterable[Episode]) -> PrivacyClass:
    return max((e.privacy_class for e in sources), key=DIGEST_PRIVACY_ORDER.index)


def digest_trust(sources: Iterable[Episode]) -> SourceTrust:
    """A digest repeats its sources' words, so it is trusted as the least trusted of them (by the
    trust recall scores them with): a person's words summarised by the workflow are still a
    person's words, not a tool's result."""
    return min((e.source_trust for e in sources), key=TRUST_SCORES.__getitem__)


def fitted(lines: list[str], limit: int) -> list[str]:
    """``lines`` cut so that, joined by line breaks, they hold at most ``limit`` characters: the
    shorter ones whole, each longer one cut at a word to an equal share of what the others leave,
    ending in "..." (what is kept is still the source's own words, in order; not "…", which the write
    policy's NFKC would make three characters)."""
    kept = list(lines)
    left = limit - max(len(lines) - 1, 0)
    for done, i in enumerate(sorted(range(len(lines)), key=lambda i: len(lines[i]))):
        share = left // (len(lines) - done)
        if len(kept[i]) > share:
            kept[i] = _cut(kept[i], share)
        left -= len(kept[i])
    return kept


def _cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut at the last space in its second half if any."""
    head = text[: max(width - 3, 0)]
    space = head.rfind(" ")
    if space > len(head) // 2:
        head = head[:space]
    return head.rstrip() + "..."

"""Who may do what with an episode: the rules a caller's credential sets, for every use case.

Tenant isolation comes first and from the stores: every read and write is keyed by the
caller's tenant, so another tenant's episode is never even found. On top of it:

* Text held for review (``pending_review``) is for reviewers: operators read it, nobody else
  finds it, by id or otherwise.
* Private and sensitive episodes are read by operators, by a tenant-wide credential (a trusted
  backend that serves many people and names the one it serves), and by a credential bound to
  their actor -- never by a credential bound to other actors.
* A bound credential acts only for its actors: it writes, corrects, erases and votes for them,
  and for nobody else.

What cannot be read answers 404 like an unknown id (it does not exist for this caller); what can
be read but not changed by this caller answers 403 (:class:`ActorNotCoveredError`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from episodic.domain.errors import ActorNotCoveredError, NotFoundError
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.model import Caller, Episode, PrivacyClass, Role, Status

ACTOR_SCOPED_PRIVACY = (PrivacyClass.PRIVATE, PrivacyClass.SENSITIVE)
"""Privacy classes read only by a caller that may act for their actor, or by an operator."""


def may_read(caller: Caller, episode: Episode) -> bool:
    """Whether ``episode`` (of the caller's tenant) exists for ``caller`` when asked for by id."""
    if caller.is_operator:
        return True
    if episode.status is Status.PENDING_REVIEW:
        return False
    return episode.privacy_class not in ACTOR_SCOPED_PRIVACY or caller.covers(episode.actor_id)


def sees_private_of(caller: Caller, actor_id: str | None) -> bool:
    """Whether a read scoped to ``actor_id`` may list that actor's private and sensitive episodes."""
    return bool(actor_id) and caller.covers(actor_id)


def require_covered(caller: Caller, actor_ids: Iterable[str | None], doing: str) -> None:
    """Refuse (403) a request that would act for an actor the credential is not bound to."""
    outside = sorted({a or "" for a in actor_ids if not caller.covers(a)})
    if outside:
        raise ActorNotCoveredError(
            f"this credential acts for {', '.join(caller.actors or ())} only; it cannot {doing} for another actor",
            actorIds=outside,
        )


def require_changeable(caller: Caller, episode: Episode, doing: str, *, pending: bool = False) -> None:
    """Refuse a change to ``episode``: 404 when the caller cannot read it (``pending`` lets the
    actor's own held-back write count as readable: erasing it reveals nothing), 403 when it can
    but the episode is another actor's."""
    readable = may_read(caller, episode) or (
        pending and episode.status is Status.PENDING_REVIEW and caller.covers(episode.actor_id)
    )
    if not readable:
        raise NotFoundError("no such episode")
    require_covered(caller, [episode.actor_id], doing)


def acting_for(caller: Caller, actors: tuple[str, ...], pseudonyms: Pseudonyms) -> Caller:
    """``caller`` narrowed to ``actors`` for one request (a tenant-wide backend saying whom it
    serves, or a bound credential choosing among its actors). Narrowing never widens: every
    actor must be covered already; and it makes an agent of any role, so a model handed an
    operator's credential through a narrowing client still cannot read what reviewers read.
    The audit names the narrowed principal by a pseudonym of the actors (keyed, like an actor's:
    :mod:`~episodic.domain.forgetting.pseudonyms`), never by their ids. The ids are read before
    they are compared (an id that is no id is a bad request, not one another credential covers),
    and each once: "sam,sam" narrows as "sam" does, to the same principal."""
    actors = tuple(dict.fromkeys(actors))
    digest = pseudonyms.actor(caller.tenant_id, "\n".join(sorted(actors)))[:12]
    narrowed_caller = Caller(  # pydantic reads the ids here: ValidationError for one that is none
        tenant_id=caller.tenant_id, role=Role.AGENT, principal_id=narrowed(caller.principal_id, digest), actors=actors
    )
    require_covered(caller, actors, "act")
    return narrowed_caller


def narrowed(principal: str, digest: str) -> str:
    """The principal of ``principal`` narrowed to the actors ``digest`` names, within a principal's
    256 characters: a long one keeps its start (what the credential check read) and stands for the
    rest by its hash, so two long principals never narrow to the same one."""
    whole = f"{principal}/for:{digest}"
    if len(whole) <= 256:
        return whole
    return f"{principal[:200]}#{hashlib.sha256(principal.encode()).hexdigest()[:32]}/for:{digest}"

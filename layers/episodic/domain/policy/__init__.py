"""The write policy: the runtime, not the model, decides what is remembered.

Every proposal gets one of three verdicts -- ``allow``, ``deny`` or ``review`` -- with
every reason code that contributed, and the policy version that produced it. The
verdict is audited by the service whatever it is.

Order of evaluation:
1. *Not an episode*: without an actor, an occurrence time or a source (refs and trust)
   there is nothing to remember; denied at once.
2. *Normalisation*: every free-text field is stored in NFKC with invisible formatting
   characters removed (:mod:`episodic.domain.policy.text`), so the rules judge what is kept.
3. *Redaction*: secrets and payment data are replaced in every stored field -- free text,
   mapping keys and the values of credential-named keys, tags -- before anything else sees
   the text (the decision lists what was redacted and where). A secret in an identifier
   cannot be redacted without moving the episode to another scope: it is refused.
4. *Provenance*: claims the caller's credentials cannot back (a model proposal passed off
   as the user's or a workflow's, a self-declared approved source) are replaced by what can
   be backed (:mod:`episodic.domain.policy.provenance`).
5. *Deny rules*: governance violations and routine chatter.
6. *Review rules*: untrusted sources, instruction-like text or markup in *any* stored field
   (or across fields), model-proposed policies, corrections of another actor's episodes.
Any deny reason wins over review; any review reason wins over allow.

Changing a rule means bumping :data:`POLICY_VERSION`: stored episodes and audit
records carry the version that judged them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from episodic.domain.model import (
    Caller,
    Decision,
    Episode,
    EpisodeProposal,
    EventType,
    PolicyDecision,
    PrivacyClass,
    ProposedBy,
    Redaction,
    SentenceJudgement,
    SourceTrust,
)
from episodic.domain.policy import fields, sensitivity
from episodic.domain.policy.provenance import backed_claims

if TYPE_CHECKING:
    from episodic.domain.policy.chatter import ChatterClassifier

# The content checks (redaction and its secret patterns, the learned instruction model, the
# chatter classifier, text normalisation) are imported on first use, like the instruction
# patterns and the sentence judge: a Lambda cold start that only recalls does not compile them
# (a sizeable part of the API's import). ``WritePolicy.warm_up`` pays for all of them early.

POLICY_VERSION = "2026-12-08.1"
"""The policy's version, recorded with every decision and audit record: it changes whenever a
rule changes what the policy decides. What each version changed is in docs/policy.md."""

POLICY_TAGS = frozenset({"policy", "rule", "guideline", "standing-order"})
"""Tags that mark a memory as policy-type: it would steer future behaviour when recalled."""


class WritePolicy:
    """Decides allow / deny / review for one proposal. Pure: no I/O, no clock of its own."""

    version = POLICY_VERSION

    def __init__(self, chatter: ChatterClassifier | None = None, *, private_disclosures: bool = False) -> None:
        """``private_disclosures``: store a sensitive disclosure marked public or internal as
        ``private`` (``EPISODIC_SENSITIVE_DISCLOSURES=private``); by default the policy names the
        kind and suggests ``sensitive``, and the caller's class stands."""
        self._chatter = chatter
        self.private_disclosures = private_disclosures

    @property
    def chatter(self) -> ChatterClassifier:
        if self._chatter is None:
            from episodic.domain.policy.chatter import default_classifier

            self._chatter = default_classifier()
        return self._chatter

    def warm_up(self) -> None:
        """Train the chatter classifier and load the detectors now, not on the first write."""
        from episodic.domain.policy import instructions, memorability, redaction
        from episodic.domain.policy.instruction_model import default_model

        self.chatter  # noqa: B018
        redaction.redact_proposal(EpisodeProposal(event_type=EventType.CONVERSATION_TURN, summary="warm up"))
        instructions.kinds("warm up")
        memorability.judge("warm up", self.chatter)
        sensitivity.disclosures("warm up")
        default_model()

    def decide(
        self,
        proposal: EpisodeProposal,
        caller: Caller,
        now: datetime,
        superseded: Sequence[Episode] = (),
        answering: str | None = None,
    ) -> tuple[PolicyDecision, EpisodeProposal]:
        """Judge a proposal. Returns the decision and the proposal as it may be stored
        (normalised, redacted, with only the claims the caller can back).

        ``superseded`` are the stored episodes the proposal names in ``supersedesEventIds``
        (the caller looks them up; the policy stays free of I/O). ``answering`` is the turn a
        conversation turn replies to, when the caller knows it (:func:`replied_turn`): a short
        answer to a question is judged in its light."""
        missing = _missing_essentials(proposal)
        if missing:
            return self._verdict(Decision.DENY, ["not_an_episode", *missing]), proposal

        from episodic.domain.policy.redaction import redact_proposal

        try:
            cleaned = redact_proposal(*normalise_proposal(proposal))
        except ValidationError:
            # e.g. a summary of nothing but invisible characters, or text pushed past its length limit
            return self._verdict(Decision.DENY, ["unstorable_content"]), proposal
        if cleaned.secret_identifiers:
            redactions = [Redaction(field=path, kind="secret_in_identifier") for path in cleaned.secret_identifiers]
            return self._verdict(Decision.DENY, ["secret_in_identifier"], redactions), proposal
        stored, provenance_notes = backed_claims(cleaned.proposal, caller)
        stored, privacy_notes, suggested = _privacy_for_disclosures(stored, self.private_disclosures)
        notes = [*provenance_notes, *privacy_notes, *(["secrets_redacted"] if cleaned.redactions else [])]
        # The wire form was read once; claims and privacy class change no text, so it stands.
        instruction_kinds = {kind for _, kind in _instruction_findings(stored, cleaned.wire)}
        sentences = self._judge_sentences(stored, answering)
        deny = self._deny_reasons(stored, caller, now, instruction_kinds, sentences)
        review = self._review_reasons(stored, caller, superseded, instruction_kinds)
        if deny:
            decision = Decision.DENY
        elif review:
            decision = Decision.REVIEW
        else:
            decision = Decision.ALLOW
        verdict = self._verdict(decision, [*deny, *review, *notes], cleaned.redactions)
        return verdict.model_copy(update={"sentences": sentences, "suggested_privacy_class": suggested}), stored

    def _verdict(
        self, decision: Decision, reasons: list[str], redactions: list[Redaction] | None = None
    ) -> PolicyDecision:
        return PolicyDecision(
            decision=decision, reasons=reasons, policy_version=self.version, redactions=redactions or []
        )

    def _deny_reasons(
        self, p: EpisodeProposal, caller: Caller, now: datetime, found: set[str], sentences: list[SentenceJudgement]
    ) -> list[str]:
        reasons = []
        # Operator claims survive backed_claims untouched, so that they can be refused here.
        claims_operator = p.proposed_by is ProposedBy.OPERATOR or p.source_trust is SourceTrust.OPERATOR_ENTERED
        if claims_operator and not caller.is_operator:
            reasons.append("unverified_operator_claim")
        if p.privacy_class is PrivacyClass.SENSITIVE:
            if p.retention.expires_at is None:
                reasons.append("sensitive_without_expiry")
            if not p.consent.granted:
                reasons.append("sensitive_without_consent")
        elif p.consent.required and not p.consent.granted:
            reasons.append("consent_not_granted")
        if p.retention.expires_at is not None and p.retention.expires_at <= now:
            reasons.append("already_expired")
        if p.event_type is EventType.HUMAN_APPROVAL and not p.resource_refs:
            reasons.append("approval_without_resource")
        # Instruction-like text is a security event a human should see, even when it is short
        # enough to look like chatter: it goes to review, not to the chatter denial.
        if not found and sentences and not any(s.verdict == "memorable" for s in sentences):
            reasons.append("not_memorable")
        return reasons

    def _review_reasons(
        self, p: EpisodeProposal, caller: Caller, superseded: Sequence[Episode], found: set[str]
    ) -> list[str]:
        reasons = []
        if p.source_trust is SourceTrust.UNTRUSTED_CONTENT:
            reasons.append("untrusted_source")
        from_operator = caller.is_operator and p.proposed_by is ProposedBy.OPERATOR
        if not from_operator and found:
            reasons.append("instruction_like_content")
        is_policy_memory = bool(POLICY_TAGS.intersection(p.tags)) or "standing_order" in found
        if is_policy_memory and p.proposed_by is ProposedBy.MODEL:
            reasons.append("model_proposed_policy")
        if not caller.is_operator and any(old.actor_id != p.actor_id for old in superseded):
            # A correction may only hide what its writer could read in the new episode's scope.
            reasons.append("supersedes_other_actor")
        return reasons

    def _judge_sentences(self, p: EpisodeProposal, answering: str | None) -> list[SentenceJudgement]:
        """The summary judged sentence by sentence (in the light of the turn it answers, if any);
        ``[]`` for structured content (details, decisions, an outcome), which is never chatter. The
        proposal is chatter only when every sentence is."""
        if p.details is not None or p.decisions or p.outcome or p.success is not None:
            return []
        return [
            SentenceJudgement(index=v.index, verdict=v.verdict, why=v.why)
            for v in _memorability().judge(p.summary, self.chatter, answering)
        ]


def replied_turn(previous: EpisodeProposal | Episode | None, turn: EpisodeProposal) -> str | None:
    """The text ``turn`` replies to: ``previous`` (the turn just before it: the item before it in
    the same request, or the session's newest stored turn) when both are conversation turns of the
    same named session by different speakers, the earlier no later than the reply, and the reply
    is a person's own words (:func:`may_reply`); else None (a turn written alone is judged alone)."""
    if previous is None or previous.event_type is not EventType.CONVERSATION_TURN or not may_reply(turn):
        return None
    if previous.session_id != turn.session_id or previous.actor_id == turn.actor_id:
        return None
    if previous.occurred_at is None or turn.occurred_at is None or previous.occurred_at > turn.occurred_at:
        return None
    return previous.summary


def may_reply(turn: EpisodeProposal) -> bool:
    """Whether ``turn`` is judged in the light of the turn before it: a conversation turn of a named
    session, dated, in a person's own words (``user_provided``: an agent's "let me check that for
    you" answers nothing about anyone)."""
    return (
        turn.event_type is EventType.CONVERSATION_TURN
        and turn.session_id is not None
        and turn.occurred_at is not None
        and turn.source_trust is SourceTrust.USER_PROVIDED
    )


def _memorability() -> ModuleType:
    """The sentence judge, imported on first use: a recall-only cold start does not compile it."""
    from episodic.domain.policy import memorability

    return memorability


def _instruction_findings(p: EpisodeProposal, wire: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """Instruction-like text or markup in any field that is stored or reaches the evidence block:
    what the patterns find in each field or across them, and what the learned model finds in
    all of them read together. ``wire``: ``p``'s text fields in wire form, when already read."""
    texts = list(fields.texts(p.model_dump(mode="json", by_alias=True) if wire is None else wire))
    # Imported on first use: compiling the patterns of every language is costly, and a
    # Lambda cold start that only recalls should not pay (``WritePolicy.warm_up`` pays it early).
    from episodic.domain.policy import instructions
    from episodic.domain.policy.instruction_model import default_model

    found = instructions.findings(texts)
    if not found and default_model().is_instruction(" ".join(text for _, text in texts)):
        found.append(("*", "instruction_model"))
    return found


def _privacy_for_disclosures(
    p: EpisodeProposal, raise_to_private: bool
) -> tuple[EpisodeProposal, list[str], PrivacyClass | None]:
    """A sensitive personal disclosure (health, beliefs, finances, ...) in a proposal marked
    ``public`` or ``internal`` is named and ``sensitive`` is suggested; with ``raise_to_private``
    it is also stored ``private`` -- shown only to recall scoped to its actor. It is never stored
    ``sensitive`` on the policy's own word: that class needs consent and an expiry that only the
    caller can give. (No digest repeats it either way: see :mod:`episodic.domain.digests.rules`.)"""
    if p.privacy_class is PrivacyClass.SENSITIVE:
        return p, [], None
    kinds = sensitivity.disclosures("\n".join(filter(None, [p.summary, p.outcome])))
    if not kinds:
        return p, [], None
    notes = [f"sensitive:{kind}" for kind in kinds]
    if raise_to_private and p.privacy_class is not PrivacyClass.PRIVATE:
        p = p.model_copy(update={"privacy_class": PrivacyClass.PRIVATE})
        notes.append("privacy_raised_to_private")
    return p, notes, PrivacyClass.SENSITIVE


def _missing_essentials(p: EpisodeProposal) -> list[str]:
    missing = []
    if not p.actor_id:
        missing.append("missing_actor")
    if p.occurred_at is None:
        missing.append("missing_occurred_at")
    if not p.source_refs or p.source_trust is None:
        missing.append("missing_source")
    return missing


def normalise_proposal(p: EpisodeProposal) -> tuple[EpisodeProposal, dict[str, Any] | None]:
    """Every free-text field in NFKC, invisible formatting characters removed; and the wire form
    of the result when it is ``p`` itself (read here already: the next steps need not read it again)."""
    from episodic.domain.policy.text import normalise

    data = p.model_dump(mode="json", by_alias=True)
    normalised = fields.map_free_text(data, lambda _path, text, _keys: normalise(text))
    return (p, data) if normalised == data else (EpisodeProposal.model_validate(normalised), None)

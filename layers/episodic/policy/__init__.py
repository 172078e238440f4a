"""The write policy: the runtime, not the model, decides what is remembered.

Every proposal gets one of three verdicts -- ``allow``, ``deny`` or ``review`` -- with
every reason code that contributed, and the policy version that produced it. The
verdict is audited by the service whatever it is.

Order of evaluation:
1. *Not an episode*: without an actor, an occurrence time or a source (refs and trust)
   there is nothing to remember; denied at once.
2. *Redaction*: secrets and payment data are replaced before anything else sees the text
   (the decision lists what was redacted and where). Redaction never blocks a write.
3. *Deny rules*: governance violations and routine chatter.
4. *Review rules*: untrusted sources, instruction-like text, model-proposed policies.
Any deny reason wins over review; any review reason wins over allow.

Changing a rule means bumping :data:`POLICY_VERSION`: stored episodes and audit
records carry the version that judged them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from episodic.model import (
    Caller,
    Decision,
    EpisodeProposal,
    EventType,
    PolicyDecision,
    PrivacyClass,
    ProposedBy,
    Redaction,
    SourceTrust,
)
from episodic.policy.chatter import ChatterClassifier, default_classifier
from episodic.policy.instructions import looks_like_injection, looks_like_standing_order
from episodic.policy.secrets import redact

POLICY_VERSION = "2026-11-29.2"

POLICY_TAGS = frozenset({"policy", "rule", "guideline", "standing-order"})
"""Tags that mark a memory as policy-type: it would steer future behaviour when recalled."""


class WritePolicy:
    """Decides allow / deny / review for one proposal. Pure: no I/O, no clock of its own."""

    version = POLICY_VERSION

    def __init__(self, chatter: ChatterClassifier | None = None) -> None:
        self._chatter = chatter

    @property
    def chatter(self) -> ChatterClassifier:
        if self._chatter is None:
            self._chatter = default_classifier()
        return self._chatter

    def decide(
        self, proposal: EpisodeProposal, caller: Caller, now: datetime
    ) -> tuple[PolicyDecision, EpisodeProposal]:
        """Judge a proposal. Returns the decision and the proposal as it may be stored (redacted)."""
        missing = _missing_essentials(proposal)
        if missing:
            return self._verdict(Decision.DENY, ["not_an_episode", *missing]), proposal

        redacted, redactions = redact_proposal(proposal)
        notes = ["secrets_redacted"] if redactions else []
        deny = self._deny_reasons(redacted, caller, now)
        review = self._review_reasons(redacted, caller)
        if deny:
            decision = Decision.DENY
        elif review:
            decision = Decision.REVIEW
        else:
            decision = Decision.ALLOW
        return self._verdict(decision, [*deny, *review, *notes], redactions), redacted

    def _verdict(
        self, decision: Decision, reasons: list[str], redactions: list[Redaction] | None = None
    ) -> PolicyDecision:
        return PolicyDecision(
            decision=decision, reasons=reasons, policy_version=self.version, redactions=redactions or []
        )

    def _deny_reasons(self, p: EpisodeProposal, caller: Caller, now: datetime) -> list[str]:
        reasons = []
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
        if not _instruction_like(p) and self._is_chatter(p):
            reasons.append("not_memorable")
        return reasons

    def _review_reasons(self, p: EpisodeProposal, caller: Caller) -> list[str]:
        reasons = []
        if p.source_trust is SourceTrust.UNTRUSTED_CONTENT:
            reasons.append("untrusted_source")
        text = proposal_text(p)
        from_operator = caller.is_operator and p.proposed_by is ProposedBy.OPERATOR
        if not from_operator and _instruction_like(p):
            reasons.append("instruction_like_content")
        is_policy_memory = bool(POLICY_TAGS.intersection(p.tags)) or looks_like_standing_order(text)
        if is_policy_memory and p.proposed_by is ProposedBy.MODEL:
            reasons.append("model_proposed_policy")
        return reasons

    def _is_chatter(self, p: EpisodeProposal) -> bool:
        """Structured content (details, decisions, an outcome) is never chatter; text is classified."""
        if p.details is not None or p.decisions or p.outcome or p.success is not None:
            return False
        return self.chatter.is_chatter(p.summary, p.event_type.value)


def _instruction_like(p: EpisodeProposal) -> bool:
    text = proposal_text(p)
    return looks_like_injection(text) or looks_like_standing_order(text)


def _missing_essentials(p: EpisodeProposal) -> list[str]:
    missing = []
    if not p.actor_id:
        missing.append("missing_actor")
    if p.occurred_at is None:
        missing.append("missing_occurred_at")
    if not p.source_refs or p.source_trust is None:
        missing.append("missing_source")
    return missing


def proposal_text(p: EpisodeProposal) -> str:
    """All free text of a proposal, as the content rules see it."""
    parts = [p.summary, p.outcome or "", p.correction_path or ""]
    parts.extend(d.action + " " + (d.rationale or "") for d in p.decisions)
    if p.details is not None:
        parts.append(str(p.details.model_dump(mode="json")))
    return "\n".join(parts)


def redact_proposal(p: EpisodeProposal) -> tuple[EpisodeProposal, list[Redaction]]:
    """Redact every free-text field; return the cleaned proposal and what was removed where."""
    redactions: list[Redaction] = []

    def clean(value: Any, path: str) -> Any:
        if isinstance(value, str):
            result = redact(value)
            redactions.extend(Redaction(field=path, kind=k) for k in result.kinds)
            return result.text
        if isinstance(value, dict):
            return {k: clean(v, f"{path}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    data = p.model_dump(mode="json", by_alias=True)
    for field in ("summary", "outcome", "details", "decisions", "correctionPath", "resourceRefs", "sourceRefs"):
        if data.get(field) is not None:
            data[field] = clean(data[field], field)
    if not redactions:
        return p, []
    return EpisodeProposal.model_validate(data), redactions

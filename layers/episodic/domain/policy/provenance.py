"""Trust and provenance claims are worth what the caller's credentials can back.

A proposal says who proposed it (``proposedBy``) and how trustworthy its source is
(``sourceTrust``). Those claims lower the bar elsewhere in the policy (a policy-type memory
proposed by a user or a workflow skips review; an approved source ranks higher and reads as
vetted in the evidence block), so an agent must not be able to simply assert them. What the
credentials vouch for (:attr:`episodic.domain.model.Caller.provenance`) decides:

* an operator's claims stand as made;
* a trusted workflow (summarisation, EventBridge ingestion) may relay user and workflow
  proposals and approved sources;
* anything else is the model's: ``user``/``workflow`` become ``model`` and
  ``approved_source`` becomes ``tool_result`` (the agent read it somewhere), with a reason
  code saying so. Operator claims are refused outright by the deny rules.
"""

from __future__ import annotations

from episodic.domain.model import Caller, EpisodeProposal, ProposedBy, SourceTrust

RELAYED = (ProposedBy.USER, ProposedBy.WORKFLOW)


def backed_claims(p: EpisodeProposal, caller: Caller) -> tuple[EpisodeProposal, list[str]]:
    """The proposal with the claims its caller cannot back replaced, and the reason codes."""
    if caller.is_operator or caller.provenance in RELAYED:
        return p, []
    update: dict[str, object] = {}
    notes = []
    if p.proposed_by in RELAYED:
        update["proposed_by"] = ProposedBy.MODEL
        notes.append("unverified_provenance_claim")
    if p.source_trust is SourceTrust.APPROVED_SOURCE:
        update["source_trust"] = SourceTrust.TOOL_RESULT
        notes.append("unverified_trust_claim")
    return (p.model_copy(update=update) if update else p), notes

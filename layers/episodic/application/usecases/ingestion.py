"""EventBridge ingestion: business-system events become episode proposals.

A ticket closed in the helpdesk or an order shipped by the shop is worth remembering, but
the system that emits it knows nothing about episodes. A declarative mapping (a JSON file,
see ``events/ingest/mapping.json``) says, per registered EventBridge ``source`` and
``detail-type``, how to build an :class:`~episodic.domain.model.EpisodeProposal` from the event.
The proposal then goes through :meth:`MemoryService.remember` like any API write, so the
same write policy (chatter, secrets, instruction-like text, expiry) judges it and every
decision is audited.

Trust boundaries:

* The tenant is bound to the *registered source* in the mapping, which is trusted
  configuration. It is never read from the event: an event whose detail names another
  tenant is rejected (``tenant_override``) rather than silently re-homed, so a producer
  that believes it writes elsewhere is noticed.
* Templates are ``{detail.ticketId}``-style placeholders resolved by dictionary lookups
  only -- no ``eval``, no attribute or index access, no conversions or format specs -- so
  a mapping cannot be made to execute or reach anything but the event's own fields.
* The idempotency key comes from the EventBridge event ``id``, which EventBridge keeps
  across redeliveries: a redelivered event replays the first result instead of writing
  twice.

Permanent problems (unknown source, malformed event) are reported as a ``rejected``
outcome with a machine-readable reason, because retrying them cannot help; transient
errors (:class:`~episodic.domain.errors.StorageError`, :class:`~episodic.domain.errors.WritesDisabledError`)
propagate so the caller retries that event.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from episodic.application.service import MemoryService
from episodic.domain import linear
from episodic.domain.errors import ConflictError
from episodic.domain.model import (
    Caller,
    CamelModel,
    Confidence,
    Decision,
    EpisodeProposal,
    EventType,
    Id,
    PrivacyClass,
    ProposedBy,
    RememberResult,
    Role,
    SourceTrust,
    Tag,
)

ENVELOPE_FIELDS = frozenset({"id", "time", "source", "account", "region"})
"""Top-level envelope fields a template may name; everything else comes from ``detail.*``."""

TENANT_KEYS = ("tenantId", "tenant_id")
"""Detail keys through which a producer might try to choose a tenant; see ``tenant_override``."""

_KEY = r"[A-Za-z0-9_-]+"
_PLACEHOLDER = linear.compile(rf"^(?:detail(?:\.{_KEY})+|{'|'.join(sorted(ENVELOPE_FIELDS))})$")
_DETAIL_PATH = rf"^{_KEY}(?:\.{_KEY})*$"
_FORMATTER = string.Formatter()

Template = Annotated[str, Field(min_length=1, max_length=4000)]


# ---------------------------------------------------------------------------- templates


def check_template(template: str) -> None:
    """Refuse a template with anything beyond plain dictionary paths as placeholders.

    Checked when the mapping loads, so a bad template fails the deployment rather than
    every event. Raises ``ValueError`` (which pydantic reports with the template's
    location) for positional ``{}``, conversions (``!r``), format specs (``:>10``), index
    syntax and names outside ``detail.*`` and the envelope fields.
    """
    for _, name, spec, conversion in _FORMATTER.parse(template):
        if name is None:
            continue
        if conversion or spec:
            raise ValueError(f"placeholder {{{name}}} must not have a conversion or format spec")
        if not _PLACEHOLDER.match(name):
            raise ValueError(
                f"placeholder {{{name}}} must be detail.<field>[.<field>...] or one of {sorted(ENVELOPE_FIELDS)}"
            )


def lookup(event: dict[str, Any], path: str) -> Any:
    """The value at a dotted path of dictionary keys, or ``None`` when any step is missing."""
    value: Any = event
    for key in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def render(template: str, event: dict[str, Any]) -> str:
    """Fill a template from the event; a missing, empty or non-scalar value rejects the event.

    Only strings and numbers are rendered: a dict or list would put a whole payload
    structure into a summary, which is never what a mapping meant.
    """
    parts = []
    for literal, name, _, _ in _FORMATTER.parse(template):
        parts.append(literal)
        if name is None:
            continue
        value = lookup(event, name)
        if value is None or value == "" or not isinstance(value, str | int | float):
            raise EventRejected(f"malformed:{name}")
        parts.append(str(value))
    return "".join(parts)


# ---------------------------------------------------------------------------- the mapping


class Rule(CamelModel):
    """How one ``detail-type`` of a source becomes an episode proposal."""

    detail_type: Annotated[str, Field(min_length=1, max_length=128)]
    event_type: EventType
    actor_id: Template
    summary: Template
    project_id: Template | None = None
    tags: Annotated[list[Tag], Field(max_length=32)] = []
    source_refs: Annotated[list[Template], Field(min_length=1, max_length=50)]
    source_trust: SourceTrust = SourceTrust.APPROVED_SOURCE
    privacy_class: PrivacyClass = PrivacyClass.INTERNAL
    retention_days: Annotated[int, Field(ge=1, le=36500)] | None = None
    importance: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    confidence: Confidence = Confidence.MEDIUM
    required: list[Annotated[str, Field(pattern=_DETAIL_PATH)]] = []

    @field_validator("actor_id", "summary", "project_id")
    @classmethod
    def _check_template(cls, template: str | None) -> str | None:
        if template is not None:
            check_template(template)
        return template

    @field_validator("source_refs")
    @classmethod
    def _check_templates(cls, templates: list[str]) -> list[str]:
        for template in templates:
            check_template(template)
        return templates

    @field_validator("source_trust")
    @classmethod
    def _no_operator_claim(cls, trust: SourceTrust) -> SourceTrust:
        """An event source is not an operator: the policy would deny every such event."""
        if trust is SourceTrust.OPERATOR_ENTERED:
            raise ValueError("operator_entered cannot be claimed by an event source (the policy denies it)")
        return trust

    @field_validator("privacy_class")
    @classmethod
    def _no_sensitive(cls, privacy: PrivacyClass) -> PrivacyClass:
        """Sensitive episodes need per-person consent, which a static mapping cannot grant."""
        if privacy is PrivacyClass.SENSITIVE:
            raise ValueError("sensitive needs per-event consent, which a mapping cannot grant (the policy denies it)")
        return privacy


class SourceMapping(CamelModel):
    """One registered EventBridge source, the tenant it writes to, and its rules."""

    # 200 so that the principal id "eventbridge:<source>" stays within its 256 characters.
    source: Annotated[str, Field(min_length=1, max_length=200)]
    tenant_id: Id
    rules: Annotated[list[Rule], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique_detail_types(self) -> SourceMapping:
        _refuse_duplicates([r.detail_type for r in self.rules], "detailType", self.source)
        return self

    def rule_for(self, detail_type: str) -> Rule | None:
        return next((r for r in self.rules if r.detail_type == detail_type), None)


@dataclass(frozen=True)
class Translation:
    """What one accepted event turns into: who writes, what, under which idempotency key."""

    caller: Caller
    proposal: EpisodeProposal
    idempotency_key: str


class IngestMapping(CamelModel):
    """The whole mapping file: every source allowed to write, each bound to one tenant."""

    sources: Annotated[list[SourceMapping], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique_sources(self) -> IngestMapping:
        """One source, one tenant: a source listed twice would make the tenant ambiguous."""
        _refuse_duplicates([s.source for s in self.sources], "source", "the mapping")
        return self

    def source_for(self, source: str) -> SourceMapping | None:
        return next((s for s in self.sources if s.source == source), None)

    def translate(self, event: Any) -> Translation:
        """Turn an EventBridge event into a proposal, or raise :class:`EventRejected` with why."""
        if not isinstance(event, dict):
            raise EventRejected("malformed:envelope")
        for name in ("id", "source", "detail-type", "time"):
            if not isinstance(event.get(name), str) or not event[name]:
                raise EventRejected(f"malformed:{name}")
        if len(event["id"]) > 128:
            raise EventRejected("malformed:id")
        detail = event.get("detail")
        if not isinstance(detail, dict):
            raise EventRejected("malformed:detail")

        registered = self.source_for(event["source"])
        if registered is None:
            raise EventRejected("unknown_source")
        for key in TENANT_KEYS:
            if detail.get(key) not in (None, registered.tenant_id):
                raise EventRejected("tenant_override")
        rule = registered.rule_for(event["detail-type"])
        if rule is None:
            raise EventRejected("unknown_detail_type")

        occurred_at = _parse_time(event["time"])
        for path in rule.required:
            if lookup(detail, path) in (None, ""):
                raise EventRejected(f"malformed:detail.{path}")

        retention: dict[str, str] = {}
        if rule.retention_days is not None:
            retention["expiresAt"] = (occurred_at + timedelta(days=rule.retention_days)).isoformat()
        body: dict[str, Any] = {
            "eventType": rule.event_type,
            "actorId": render(rule.actor_id, event),
            "occurredAt": occurred_at.isoformat(),
            "summary": render(rule.summary, event),
            "tags": rule.tags,
            "sourceRefs": [render(t, event) for t in rule.source_refs],
            "sourceTrust": rule.source_trust,
            "privacyClass": rule.privacy_class,
            "retention": retention,
            "importance": rule.importance,
            "confidence": rule.confidence,
            "proposedBy": ProposedBy.WORKFLOW,
        }
        if rule.project_id is not None:
            body["projectId"] = render(rule.project_id, event)
        try:
            proposal = EpisodeProposal.model_validate(body)
        except ValidationError as exc:
            # Only the location, never the input: a rendered value may hold payload data.
            raise EventRejected("malformed:" + ".".join(str(p) for p in exc.errors()[0]["loc"])) from None
        caller = Caller(
            tenant_id=registered.tenant_id,
            role=Role.AGENT,
            principal_id=f"eventbridge:{registered.source}",
            provenance=ProposedBy.WORKFLOW,  # a registered business system, through the operator's mapping
        )
        return Translation(caller=caller, proposal=proposal, idempotency_key=f"eventbridge:{event['id']}")


def _parse_time(value: str) -> datetime:
    """EventBridge's ``time`` (``2026-11-28T10:00:00Z``); naive times are as malformed as garbage."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise EventRejected("malformed:time") from None
    if parsed.tzinfo is None:
        raise EventRejected("malformed:time")
    return parsed


def _refuse_duplicates(names: list[str], what: str, where: str) -> None:
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{what} listed more than once in {where}: {', '.join(duplicates)}")


class MappingError(ValueError):
    """The mapping file cannot be used; the message names the file and every problem in it."""


def load_mapping(path: str | Path) -> IngestMapping:
    """Read and validate the mapping file, failing with every problem and where it is."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MappingError(f"{path}: cannot read the mapping file ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise MappingError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    try:
        return IngestMapping.model_validate(raw)
    except ValidationError as exc:
        problems = "\n".join(f"  {'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise MappingError(f"{path}: invalid ingestion mapping\n{problems}") from exc


# ---------------------------------------------------------------------------- ingestion


class EventRejected(Exception):
    """The event can never become an episode as sent; ``reason`` is machine-readable."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


OutcomeStatus = Literal["written", "review", "denied", "rejected"]
_STATUS: dict[Decision, OutcomeStatus] = {Decision.ALLOW: "written", Decision.REVIEW: "review", Decision.DENY: "denied"}


@dataclass(frozen=True)
class IngestOutcome:
    """What happened to one event: the policy's verdict (with its result) or why it was rejected."""

    status: OutcomeStatus
    result: RememberResult | None = None
    reason: str | None = None

    @classmethod
    def rejected(cls, reason: str) -> IngestOutcome:
        return cls(status="rejected", reason=reason)


class EventIngestor:
    """Feeds mapped events to :meth:`MemoryService.remember`, the one write path for everyone."""

    def __init__(self, mapping: IngestMapping, service: MemoryService) -> None:
        self.mapping = mapping
        self.service = service

    def ingest(self, event: dict[str, Any]) -> IngestOutcome:
        """Write one event as the policy decides. Transient errors propagate so it is retried.

        A :class:`ConflictError` means the event id was already ingested and its result
        cannot be replayed: either the same id came back with other content (a changed
        mapping or a producer reusing ids) or the episode written for it has been erased
        since. Writing it again would duplicate or resurrect it, and retrying cannot
        change the answer, so it is a permanent ``already_ingested`` rejection.
        """
        try:
            translation = self.mapping.translate(event)
        except EventRejected as exc:
            return IngestOutcome.rejected(exc.reason)
        try:
            result = self.service.writes.remember(
                translation.caller, translation.proposal, idempotency_key=translation.idempotency_key
            )
        except ConflictError:
            return IngestOutcome.rejected("already_ingested")
        return IngestOutcome(status=_STATUS[result.decision], result=result)

"""Redaction of a whole proposal: every field that is stored, by what can be done with it.

Free text is rewritten in place (``[REDACTED:<kind>]``), including the whole value of any
mapping key that names a credential (``{"password": "hunter2"}``: the key is the label).
Tags are rewritten to a ``redacted:<kind>`` label. Identifiers cannot be rewritten without
moving the episode to another scope, so a secret in one is reported for refusal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from episodic.domain.model import EpisodeProposal, Redaction
from episodic.domain.policy.fields import TAGS, identifiers, map_free_text
from episodic.domain.policy.secrets import is_masked, is_secret_key, redact

SECRET_VALUE = "[REDACTED:credential]"


@dataclass(frozen=True)
class RedactedProposal:
    proposal: EpisodeProposal
    redactions: list[Redaction]
    secret_identifiers: list[str]
    """Paths of identifiers that hold a secret: the proposal must be refused."""
    wire: dict[str, Any] | None = None
    """The proposal's wire form when nothing was redacted (the proposal is the one given)."""


def redact_proposal(p: EpisodeProposal, wire: dict[str, Any] | None = None) -> RedactedProposal:
    """``wire``: ``p.model_dump(mode="json", by_alias=True)``, when the caller has it (not changed here)."""
    redactions: list[Redaction] = []

    def key(path: str, value: str, _keys: tuple[str, ...]) -> str:
        result = redact(value)
        redactions.extend(Redaction(field=path, kind=k) for k in result.kinds)
        return result.text

    def text(path: str, value: str, keys: tuple[str, ...]) -> str:
        if any(is_secret_key(k) for k in keys) and not is_masked(value):  # {"password": ...}, {"credentials": {...}}
            redactions.append(Redaction(field=path, kind="credential"))
            return SECRET_VALUE
        return key(path, value, keys)

    wire = p.model_dump(mode="json", by_alias=True) if wire is None else wire
    data = dict(wire)
    if data.get("details"):
        data["details"] = _stringify_secret_scalars(data["details"])
    data = map_free_text(data, text, key)
    tags = []
    for i, tag in enumerate(data.get(TAGS) or []):
        kinds = _kinds(tag)
        if kinds:
            redactions.extend(Redaction(field=f"{TAGS}[{i}]", kind=k) for k in kinds)
            tag = f"redacted:{kinds[0]}"
        tags.append(tag)
    data[TAGS] = list(dict.fromkeys(tags))
    secret_ids = [path for path, value in identifiers(data) if _kinds(value)]
    if not redactions:
        return RedactedProposal(p, [], secret_ids, wire)
    return RedactedProposal(EpisodeProposal.model_validate(data), redactions, secret_ids)


def _kinds(value: str) -> tuple[str, ...]:
    """Secret kinds in a label or id, whatever its case (tags are stored lower-cased, which hides
    upper-case key formats such as AWS key ids)."""
    return tuple(dict.fromkeys([*redact(value).kinds, *redact(value.upper()).kinds]))


def _stringify_secret_scalars(value: Any, secret: bool = False) -> Any:
    """Numbers under a credential key (``{"pin": 4921}``) become strings, so redaction reaches them."""
    if isinstance(value, dict):
        return {k: _stringify_secret_scalars(v, secret or is_secret_key(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify_secret_scalars(v, secret) for v in value]
    if secret and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value

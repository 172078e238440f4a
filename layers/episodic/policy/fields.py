"""Every part of a proposal that reaches storage or the evidence block, by kind.

The content rules must see *all* of it: a secret in a tag or an instruction in a
``sourceRef`` is stored, indexed and (for refs) printed to the model just like the summary.
Fields fall into three kinds, because what can be done about a finding differs:

* free text (summary, outcome, correction path, decisions, details keys and values, refs,
  the consent reference): can be rewritten, so secrets in it are redacted in place;
* tags: labels with a strict pattern, rewritten to a ``redacted:<kind>`` label;
* identifiers (actor, session, project, agent, superseded ids): they place the episode in
  its scope, so rewriting one would silently merge or split scopes -- a secret in one is
  refused instead.

Paths use the wire names (``details.input.password``, ``tags[0]``, ``decisions[1].rationale``);
a mapping key is reported as ``<path>{key}``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

FREE_TEXT = ("summary", "outcome", "correctionPath", "sourceRefs", "resourceRefs", "decisions", "details")
TAGS = "tags"
IDENTIFIERS = ("actorId", "sessionId", "projectId", "agentId", "supersedesEventIds")
CONSENT_REF = ("consent", "consentRef")

TextFn = Callable[[str, str], str]
"""``fn(path, text) -> new text``."""


def map_free_text(data: dict[str, Any], fn: TextFn, key_fn: TextFn | None = None) -> dict[str, Any]:
    """A copy of a proposal's wire dict with ``fn`` applied to every free-text string (and
    ``key_fn``, or ``fn``, to every mapping key inside ``details``)."""
    out = dict(data)
    for name in FREE_TEXT:
        if out.get(name) is not None:
            out[name] = _map(out[name], name, fn, key_fn or fn)
    consent = out.get(CONSENT_REF[0])
    if isinstance(consent, dict) and isinstance(consent.get(CONSENT_REF[1]), str):
        path = ".".join(CONSENT_REF)
        out[CONSENT_REF[0]] = {**consent, CONSENT_REF[1]: fn(path, consent[CONSENT_REF[1]])}
    return out


def _map(value: Any, path: str, fn: TextFn, key_fn: TextFn) -> Any:
    if isinstance(value, str):
        return fn(path, value)
    if isinstance(value, list):
        return [_map(v, f"{path}[{i}]", fn, key_fn) for i, v in enumerate(value)]
    if isinstance(value, dict):
        mapped: dict[str, Any] = {}
        for key, item in value.items():
            new_key = key_fn(f"{path}{{key}}", key)
            while new_key in mapped:  # two keys redacted alike: keep both values
                new_key += "_"
            mapped[new_key] = _map(item, f"{path}.{key}", fn, key_fn)
        return mapped
    return value


def texts(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(path, text)`` of every string of every kind: free text, mapping keys, tags, identifiers."""
    found: list[tuple[str, str]] = []

    def collect(path: str, text: str) -> str:
        found.append((path, text))
        return text

    map_free_text(data, collect)
    yield from found
    for i, tag in enumerate(data.get(TAGS) or []):
        yield f"{TAGS}[{i}]", tag
    yield from identifiers(data)


def identifiers(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for name in IDENTIFIERS:
        value = data.get(name)
        if isinstance(value, str):
            yield name, value
        elif isinstance(value, list):
            yield from ((f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, str))

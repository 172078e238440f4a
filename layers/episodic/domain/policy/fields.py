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

Paths use the wire names (``tags[0]``, ``decisions[1].rationale``), except inside mappings:
there a key is named by its position (``details.input{2}`` is the value of the third key,
``details.input{2}#key`` the key itself). Paths end up in audit records, which outlive any
erasure, so they must not carry what a caller wrote; the key names themselves are passed to
the callback separately.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

FREE_TEXT = ("summary", "outcome", "correctionPath", "sourceRefs", "resourceRefs", "decisions", "details")
DETAILS = "details"
DECISIONS = "decisions"
DECISION_TEXT = ("action", "rationale")
TAGS = "tags"
IDENTIFIERS = ("actorId", "sessionId", "projectId", "agentId", "supersedesEventIds")
CONSENT_REF = ("consent", "consentRef")

TextFn = Callable[[str, str, tuple[str, ...]], str]
"""``fn(path, text, keys) -> new text``; ``keys`` are the mapping keys on the way to the text."""


def map_free_text(data: dict[str, Any], fn: TextFn, key_fn: TextFn | None = None) -> dict[str, Any]:
    """A copy of a proposal's wire dict with ``fn`` applied to every free-text string (and
    ``key_fn``, or ``fn``, to every mapping key inside ``details``)."""
    out = dict(data)
    for name in FREE_TEXT:
        value = out.get(name)
        if value is None:
            continue
        if name == DETAILS:  # its own fields (input, output) are the schema's, named as such
            out[name] = {part: _map(v, f"{name}.{part}", (), fn, key_fn or fn) for part, v in value.items()}
        elif name == DECISIONS:  # schema objects: only their text fields are free text
            out[name] = [
                {
                    **note,
                    **{f: fn(f"{name}[{i}].{f}", note[f], ()) for f in DECISION_TEXT if isinstance(note.get(f), str)},
                }
                for i, note in enumerate(value)
            ]
        else:
            out[name] = _map(value, name, (), fn, key_fn or fn)
    consent = out.get(CONSENT_REF[0])
    if isinstance(consent, dict) and isinstance(consent.get(CONSENT_REF[1]), str):
        path = ".".join(CONSENT_REF)
        out[CONSENT_REF[0]] = {**consent, CONSENT_REF[1]: fn(path, consent[CONSENT_REF[1]], ())}
    return out


def _map(value: Any, path: str, keys: tuple[str, ...], fn: TextFn, key_fn: TextFn) -> Any:
    if isinstance(value, str):
        return fn(path, value, keys)
    if isinstance(value, list):
        return [_map(v, f"{path}[{i}]", keys, fn, key_fn) for i, v in enumerate(value)]
    if isinstance(value, dict):
        mapped: dict[str, Any] = {}
        for position, (key, item) in enumerate(value.items()):
            new_key = key_fn(f"{path}{{{position}}}#key", key, keys)
            while new_key in mapped:  # two keys redacted alike: keep both values
                new_key += "_"
            mapped[new_key] = _map(item, f"{path}{{{position}}}", (*keys, key), fn, key_fn)
        return mapped
    return value


def texts(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(path, text)`` of every string of every kind: free text, mapping keys, tags, identifiers."""
    found: list[tuple[str, str]] = []

    def collect(path: str, text: str, _keys: tuple[str, ...]) -> str:
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

"""Page cursors: opaque to callers, checked like any other input when they come back.

A cursor is the position after the last item of a page, as a JSON list in URL-safe base64.
Callers can send anything in its place, so decoding checks the *shape* each store expects
(``[int, str]`` for the SQLite timeline, ``[str]`` for the DynamoDB one, ...) and answers
a clear 422 for anything else -- a well-formed base64 list of the wrong shape included.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

from episodic.errors import InvalidRequestError

_INT64 = 2**63
_MAX_TEXT = 1024


def encode_cursor(parts: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(parts), separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, shape: Sequence[type]) -> list[Any]:
    """The cursor's parts, each of the type ``shape`` names (``int``, ``str`` or ``dict`` of
    strings), or :class:`InvalidRequestError`."""
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, RecursionError):
        parts = None
    if not isinstance(parts, list) or len(parts) != len(shape) or not all(map(_fits, parts, shape)):
        raise InvalidRequestError("cursor is not valid: pass back the nextCursor of the previous page unchanged")
    return parts


def _fits(value: Any, kind: type) -> bool:
    if kind is int:
        return type(value) is int and -_INT64 <= value < _INT64
    if kind is str:
        return isinstance(value, str) and 0 < len(value) <= _MAX_TEXT
    if kind is dict:
        return (
            isinstance(value, dict)
            and 0 < len(value) <= 8
            and all(isinstance(k, str) and isinstance(v, str) and len(v) <= _MAX_TEXT for k, v in value.items())
        )
    return False

"""What the adapters encode the same way: page cursors, stored vectors, stored numbers.

*Cursors* are opaque to callers and checked like any other input when they come back. A
cursor is the position after the last item of a page, as a JSON list in URL-safe base64.
Callers can send anything in its place, so decoding checks the *shape* each store expects
(``[int, str]`` for the SQLite timeline, ``[str]`` for the DynamoDB one, ...) and answers
a clear 422 for anything else -- a well-formed base64 list of the wrong shape included.

*Vectors* are stored as little-endian float32 bytes (SQLite blobs, DynamoDB binary
attributes): half the size of float64, and what both embedders produce.

*Numbers* come back from DynamoDB (and its stream images) as ``Decimal``; they are turned
back into the ``int`` or ``float`` they were, and floats go in as ``Decimal``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

from episodic.application.ports import Vector
from episodic.domain.errors import InvalidRequestError

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
        return _text(value) and 0 < len(value) <= _MAX_TEXT
    if kind is dict:
        return (
            isinstance(value, dict)
            and 0 < len(value) <= 8
            and all(_text(k) and _text(v) and len(v) <= _MAX_TEXT for k, v in value.items())
        )
    return False


def _text(value: Any) -> bool:
    """A string a store can hold: no lone surrogate (JSON's ``\\ud800`` decodes to one, and
    neither SQLite nor DynamoDB takes it)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def pack_vector(vector: Vector) -> bytes:
    """A vector (a list of floats or an array) as the float32 bytes the stores keep."""
    import numpy as np  # on first use: the API's cold start need not pay for it

    array = vector if isinstance(vector, np.ndarray) else list(vector)
    return np.asarray(array, dtype="<f4").tobytes()


def unpack_vector(raw: bytes | memoryview) -> npt.NDArray[np.float32]:
    """The stored bytes as a read-only float32 vector (no copy)."""
    import numpy as np

    return np.frombuffer(raw, dtype="<f4")


def unpack_vectors(raws: Sequence[bytes], dimension: int) -> npt.NDArray[np.float32]:
    """Many stored vectors of one dimension as one ``(n, dimension)`` matrix."""
    import numpy as np

    return np.frombuffer(b"".join(raws), dtype="<f4").reshape(len(raws), dimension)


def plain_numbers(value: Any) -> Any:
    """``value`` with every ``Decimal`` turned back into the ``int`` or ``float`` it was, in
    nested dicts, lists and sets (sets become lists, as in JSON)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: plain_numbers(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [plain_numbers(v) for v in value]
    return value


def decimal_numbers(value: Any) -> Any:
    """JSON-compatible ``value`` with floats as ``Decimal`` (what DynamoDB accepts)."""
    return json.loads(json.dumps(value), parse_float=Decimal)

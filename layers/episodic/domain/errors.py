"""Domain errors.

Every error the use cases raise derives from :class:`EpisodicError` and carries the
HTTP status it maps to, so the mapping lives in one place (here) and the API layer
only has to render it. Adapters translate client errors (sqlite3, botocore) into these.
"""

from __future__ import annotations

from typing import Any


class EpisodicError(Exception):
    """Base class: ``status`` is the HTTP status, ``code`` a stable machine-readable code."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class InvalidRequestError(EpisodicError):
    """The request is well-formed JSON but asks for something that cannot be done."""

    status = 422
    code = "invalid_request"


class UnauthorizedError(EpisodicError):
    """No or unknown credentials."""

    status = 401
    code = "unauthorized"


class ForbiddenError(EpisodicError):
    """Authenticated, but the role or tenant does not allow this."""

    status = 403
    code = "forbidden"


class ActorNotCoveredError(ForbiddenError):
    """The credential is bound to other actors than the one this request would act for."""

    code = "actor_not_covered"


class NotFoundError(EpisodicError):
    """Unknown id, or an id of another tenant (deliberately indistinguishable)."""

    status = 404
    code = "not_found"


class ConflictError(EpisodicError):
    """A create-once or optimistic-concurrency condition failed."""

    status = 409
    code = "conflict"


class IdempotencyConflictError(ConflictError):
    """The idempotency key was used before with a different request body."""

    code = "idempotency_key_reused"


class WritesDisabledError(EpisodicError):
    """The operator kill-switch is on: writes are refused, recall still works."""

    status = 503
    code = "writes_disabled"


class StorageError(EpisodicError):
    """The backing store failed in a way the caller may retry."""

    status = 503
    code = "storage_unavailable"

"""What the SDK raises: the service's answer, kept whole enough to act on."""

from __future__ import annotations

from typing import Any

PERSISTENT = frozenset({"writes_disabled"})
"""Error codes of 5xx answers that stay until somebody acts."""


class ApiError(Exception):
    """The service answered with an error status (never a policy denial: that is a result).

    ``status`` is the HTTP status, ``code`` the machine-readable error (``not_found``,
    ``idempotency_conflict``, ``writes_disabled``, ``validation_error``, ...), ``details`` what
    the service added (reason codes, the policy version, the fields at fault)."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}

    @property
    def reasons(self) -> list[str]:
        value = self.details.get("reasons", [])
        return list(value) if isinstance(value, list) else []

    @property
    def policy_version(self) -> str | None:
        value = self.details.get("policyVersion")
        return value if isinstance(value, str) else None

    @property
    def retryable(self) -> bool:
        """Worth sending again shortly: throttled, or the service failed (never a 4xx of ours,
        nor writes an operator switched off, which no retry will switch back on)."""
        return (self.status == 429 or self.status >= 500) and self.code not in PERSISTENT

    @classmethod
    def from_answer(cls, status: int, body: Any) -> ApiError:
        if not isinstance(body, dict):
            return cls(status, "http_error", str(body)[:500] if body else f"HTTP {status}")
        code = str(body.get("error") or body.get("code") or "http_error")
        message = str(body.get("message") or f"HTTP {status}")
        details = {k: v for k, v in body.items() if k not in ("error", "message")}
        nested = details.pop("details", None)
        if isinstance(nested, dict):
            details.update(nested)
        return cls(status, code, message, details)


class ServiceUnavailableError(ApiError):
    """No answer at all (connection refused, timed out) after every retry."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "unreachable", message)

    @property
    def retryable(self) -> bool:
        return True

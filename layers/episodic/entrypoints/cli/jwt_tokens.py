"""Test JWTs for the deployed API (``episodic tokens jwt``): what a developer needs to try a
stack whose authorizer verifies HS256 tokens before a real identity provider issues them.

The token carries exactly the claims ``functions.authorizer`` requires (``sub``, ``iss``,
``aud``, ``iat``, ``exp``, the tenant and role claims, and the actors claim of a bound agent)
and is signed with the stack's shared secret, read from Secrets Manager (the ``JwtSecretArn``
stack output) or given directly. It is short-lived by default: a test token should not outlive
the test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.domain.model import SERVICE_PRINCIPAL_PREFIXES, reserved_principal

MAX_HOURS = 24.0


@dataclass(frozen=True)
class TokenClaims:
    tenant_id: str
    role: str
    subject: str
    issuer: str
    audience: str
    hours: float = 1.0
    tenant_claim: str = "tenantId"
    role_claim: str = "role"
    actors: tuple[str, ...] = ()
    """Bind the token to these actors (an agent that acts for them only); empty: tenant-wide."""
    actors_claim: str = "actors"


def mint(claims: TokenClaims, secret: str, now: datetime | None = None) -> str:
    """An HS256 JWT the deployed authorizer accepts for ``claims``."""
    import jwt

    if not 1 <= len(claims.subject) <= 256 or reserved_principal(claims.subject):
        raise ValueError(
            "the subject is 1 to 256 characters and begins with none of "
            f"{', '.join(SERVICE_PRINCIPAL_PREFIXES)} (the service's own principals): give --subject"
        )
    if not 0 < claims.hours <= MAX_HOURS:
        raise ValueError(f"a test token lives between a moment and {MAX_HOURS:.0f} hours, not {claims.hours}")
    if len(secret) < 32:
        raise ValueError("the signing secret is shorter than 32 characters: is it the stack's JwtSecret?")
    issued = now or datetime.now(UTC)
    payload: dict[str, Any] = {
        "sub": claims.subject,
        "iss": claims.issuer,
        "aud": claims.audience,
        "iat": int(issued.timestamp()),
        "exp": int((issued + timedelta(hours=claims.hours)).timestamp()),
        claims.tenant_claim: claims.tenant_id,
        claims.role_claim: claims.role,
    }
    if claims.actors:
        if claims.role != "agent":
            raise ValueError("only agent tokens are bound to actors; operators act for the whole tenant")
        payload[claims.actors_claim] = list(claims.actors)
    return str(jwt.encode(payload, secret, algorithm="HS256"))


def secret_from_aws(secret_id: str) -> str:
    """The shared secret from Secrets Manager, with the default boto3 credentials and region."""
    import boto3

    value = boto3.client("secretsmanager").get_secret_value(SecretId=secret_id)
    return str(value["SecretString"])


def stage_auth(cdk_json: Path) -> dict[str, Any]:
    """The ``auth`` settings of the CDK app's context (issuer, audience, claim names), or {}."""
    if not cdk_json.is_file():
        return {}
    context = json.loads(cdk_json.read_text(encoding="utf-8")).get("context", {})
    auth = context.get("episodic", {}).get("auth", {})
    return auth if isinstance(auth, dict) else {}

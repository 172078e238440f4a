"""API Gateway TOKEN authorizer: a bearer JWT in; an allow policy and the caller out.

The context it returns -- ``{tenantId, role, principalId}``, and ``actors`` for a bound agent --
is exactly what ``functions.api.current_caller`` reads from ``requestContext.authorizer``; the
tenant, role and actors come from the token's claims and nowhere else (a TOKEN authorizer never
sees the request body). The actors claim (``actors`` by default) is a list of actor ids, or one
id: an agent token with it acts for those actors only; without it, for the whole tenant.
Authorizer context values must be strings, so the actors travel comma-separated.

Kept deliberately small: PyJWT and, for HS256, Powertools' cached secret fetch; it does not
import the ``episodic`` core, so a cold start costs little. The tenant id pattern and the
roles are copies of ``episodic.domain.model``'s; a unit test keeps them equal.

* One algorithm is configured and only that one is accepted (no ``none``, no HS/RS confusion).
* ``exp``, ``iat``, ``sub``, ``iss`` and ``aud`` are required, with 30 s of clock leeway.
* A ``sub`` beginning ``system:`` or ``eventbridge:`` is refused: those are the principals of the
  service's own work (the session handoff, the summariser, the sweeps, what business systems
  send), whose idempotency keys and audit entries no caller may share.
* The allow policy covers every method of the stage: API Gateway caches the result per token
  and reuses it for the caller's other requests; what a role may do is decided by the API.
* Anything wrong raises ``Exception("Unauthorized")``, the one message API Gateway turns into
  a 401. The reason is logged; the token never is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger(service="episodic-authorizer")

ID = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$"
)  # episodic.domain.model.Id (and at most 128 characters): tenants, actors
ROLES = frozenset({"agent", "operator"})  # episodic.domain.model.Role
MAX_ACTORS = 50  # episodic.domain.model.messages.MAX_BOUND_ACTORS
RESERVED_PREFIXES = ("system:", "eventbridge:")  # episodic.domain.model.SERVICE_PRINCIPAL_PREFIXES
BEARER = re.compile(r"^Bearer ([A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]*)$")
SECRET_MAX_AGE_SECONDS = 300  # a rotated HS256 secret is picked up within five minutes


class UnauthorizedError(Exception):
    """Why a token was refused (logged); the caller only ever sees API Gateway's 401."""


@dataclass(frozen=True)
class TokenRules:
    algorithm: str
    issuer: str
    audience: str
    tenant_claim: str = "tenantId"
    role_claim: str = "role"
    actors_claim: str = "actors"


KeyFor = Callable[[str], Any]
"""Returns the key that verifies a given (still unverified) token."""


class Verifier:
    def __init__(self, rules: TokenRules, key_for: KeyFor) -> None:
        if rules.algorithm not in ("HS256", "RS256"):
            raise ValueError(f"unsupported algorithm {rules.algorithm!r}")
        self.rules = rules
        self.key_for = key_for

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Verifier:
        """``EPISODIC_JWT_*``, set by the CDK stack: the algorithm, issuer and audience, the
        claim names, and a JWKS URL (RS256) or a Secrets Manager secret ARN (HS256)."""
        rules = TokenRules(
            algorithm=env["EPISODIC_JWT_ALGORITHM"],
            issuer=env["EPISODIC_JWT_ISSUER"],
            audience=env["EPISODIC_JWT_AUDIENCE"],
            tenant_claim=env.get("EPISODIC_JWT_TENANT_CLAIM", "tenantId"),
            role_claim=env.get("EPISODIC_JWT_ROLE_CLAIM", "role"),
            actors_claim=env.get("EPISODIC_JWT_ACTORS_CLAIM", "actors"),
        )
        if rules.algorithm == "RS256":
            jwks = jwt.PyJWKClient(env["EPISODIC_JWT_JWKS_URL"], cache_keys=True, lifespan=3600, timeout=5)
            return cls(rules, lambda token: jwks.get_signing_key_from_jwt(token).key)

        from aws_lambda_powertools.utilities.parameters import SecretsProvider

        secrets, secret_arn = SecretsProvider(), env["EPISODIC_JWT_SECRET_ARN"]

        def shared_secret(_: str) -> str:
            value = secrets.get(secret_arn, max_age=SECRET_MAX_AGE_SECONDS)
            if not isinstance(value, str) or len(value) < 32:
                raise RuntimeError("the HS256 secret must be a string of at least 32 characters")
            return value

        return cls(rules, shared_secret)

    def caller(self, authorization: str) -> dict[str, str]:
        """The verified ``{tenantId, role, principalId[, actors]}`` of an ``Authorization`` header value."""
        match = BEARER.match(authorization or "")
        if not match:
            raise UnauthorizedError("not a bearer JWT")
        token = match.group(1)
        try:
            claims = jwt.decode(
                token,
                self.key_for(token),
                algorithms=[self.rules.algorithm],
                audience=self.rules.audience,
                issuer=self.rules.issuer,
                leeway=30,
                options={"require": ["exp", "iat", "sub", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise UnauthorizedError(f"invalid token: {type(exc).__name__}") from exc
        tenant, role, subject = claims.get(self.rules.tenant_claim), claims.get(self.rules.role_claim), claims["sub"]
        if not isinstance(tenant, str) or len(tenant) > 128 or not ID.match(tenant):
            raise UnauthorizedError("no valid tenant claim")
        if not isinstance(role, str) or role not in ROLES:
            raise UnauthorizedError("no valid role claim")
        if not isinstance(subject, str) or not 1 <= len(subject) <= 256:
            raise UnauthorizedError("no valid subject")
        if subject.lower().startswith(RESERVED_PREFIXES):
            raise UnauthorizedError("a subject named like one of the service's own principals")
        caller = {"tenantId": tenant, "role": role, "principalId": subject}
        actors = _actors(claims.get(self.rules.actors_claim))
        if actors:
            if role != "agent":
                raise UnauthorizedError("only agent tokens may be bound to actors")
            caller["actors"] = ",".join(actors)
        return caller


def _actors(claim: Any) -> list[str]:
    """The actors a token is bound to: a list of ids or one id; [] when the claim is absent."""
    if claim is None:
        return []
    actors = [claim] if isinstance(claim, str) else claim
    if (
        not isinstance(actors, list)
        or not 1 <= len(actors) <= MAX_ACTORS
        or not all(isinstance(a, str) and len(a) <= 128 and ID.match(a) for a in actors)
    ):
        raise UnauthorizedError("no valid actors claim")
    return list(dict.fromkeys(actors))


def stage_resource(method_arn: str) -> str:
    """``arn:...:apiId/stage/VERB/path`` -> ``arn:...:apiId/stage/*/*`` (every method of the stage)."""
    prefix, _, path = method_arn.partition(":execute-api:")
    parts = path.split("/")
    if not prefix.startswith("arn:") or len(parts) < 3:
        raise UnauthorizedError("unexpected methodArn")
    return f"{prefix}:execute-api:{parts[0]}/{parts[1]}/*/*"


_verifier: Verifier | None = None


def get_verifier() -> Verifier:
    """Built on first use from the environment (overridable with :func:`set_verifier`)."""
    global _verifier
    if _verifier is None:
        _verifier = Verifier.from_env(os.environ)
    return _verifier


def set_verifier(verifier: Verifier | None) -> None:
    global _verifier
    _verifier = verifier


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        caller = get_verifier().caller(event.get("authorizationToken", ""))
        resource = stage_resource(event.get("methodArn", ""))
    except UnauthorizedError as exc:
        logger.warning("token refused", reason=str(exc))
        raise Exception("Unauthorized") from exc  # the exact message API Gateway maps to 401
    logger.info("token accepted", tenant_id=caller["tenantId"], role=caller["role"], bound="actors" in caller)
    return {
        "principalId": caller["principalId"],
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": resource}],
        },
        "context": caller,
    }

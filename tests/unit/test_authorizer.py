"""The API Gateway JWT authorizer (functions/authorizer.py).

Tokens are real JWTs signed with PyJWT: HS256 with a shared secret (fetched from Secrets
Manager under moto in the end-to-end case) and RS256 with a generated key published through a
real ``PyJWKClient`` whose HTTP fetch returns the JWKS document.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import typing
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from episodic.domain.model import SERVICE_PRINCIPAL_PREFIXES, Caller, Id, Role, SystemActor
from episodic.domain.model.messages import MAX_BOUND_ACTORS
from episodic.entrypoints.server.proxy_event import LocalLambdaContext
from functions import authorizer
from functions.authorizer import TokenRules, UnauthorizedError, Verifier

SECRET = "s" * 64
ISSUER, AUDIENCE = "https://idp.example.com/", "episodic-api"
METHOD_ARN = "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/episodes"
HS256 = TokenRules(algorithm="HS256", issuer=ISSUER, audience=AUDIENCE)


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "sub": "agent:support-bot",
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now,
        "exp": now + 300,
        "tenantId": "acme",
        "role": "agent",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def hs256(**overrides: Any) -> str:
    return jwt.encode(claims(**overrides), SECRET, algorithm="HS256")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@pytest.fixture
def verifier() -> Verifier:
    return Verifier(HS256, lambda _token: SECRET)


@pytest.fixture
def lambda_context() -> LocalLambdaContext:
    return LocalLambdaContext(aws_request_id="test-request")


@pytest.fixture
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def rs256_verifier(key: rsa.RSAPrivateKey, monkeypatch: pytest.MonkeyPatch) -> Verifier:
    """Built from the environment exactly as in Lambda; only the JWKS download is replaced."""
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwks = {"keys": [{**jwk, "kid": "key-1", "use": "sig", "alg": "RS256"}]}
    monkeypatch.setattr(jwt.PyJWKClient, "fetch_data", lambda self: jwks)
    return Verifier.from_env(
        {
            "EPISODIC_JWT_ALGORITHM": "RS256",
            "EPISODIC_JWT_ISSUER": ISSUER,
            "EPISODIC_JWT_AUDIENCE": AUDIENCE,
            "EPISODIC_JWT_JWKS_URL": "https://idp.example.com/.well-known/jwks.json",
        }
    )


def test_given_a_valid_token_when_authorized_then_the_caller_comes_from_its_claims(verifier):
    assert verifier.caller(f"Bearer {hs256()}") == {
        "tenantId": "acme",
        "role": "agent",
        "principalId": "agent:support-bot",
    }


def test_given_a_valid_token_when_the_handler_runs_then_it_allows_the_whole_stage_with_the_caller_as_context(
    verifier, lambda_context
):
    authorizer.set_verifier(verifier)
    try:
        response = authorizer.handler(
            {"type": "TOKEN", "authorizationToken": f"Bearer {hs256(role='operator')}", "methodArn": METHOD_ARN},
            lambda_context,
        )
    finally:
        authorizer.set_verifier(None)
    assert response["principalId"] == "agent:support-bot"
    assert response["policyDocument"]["Statement"] == [
        {
            "Action": "execute-api:Invoke",
            "Effect": "Allow",
            "Resource": "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*",
        }
    ]
    # Exactly what functions/api.py reads from requestContext.authorizer, and a valid Caller.
    assert response["context"] == {"tenantId": "acme", "role": "operator", "principalId": "agent:support-bot"}
    assert Caller.model_validate(response["context"]).is_operator


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(lambda: hs256(exp=int(time.time()) - 120), id="expired"),
        pytest.param(lambda: hs256(aud="another-api"), id="wrong-audience"),
        pytest.param(lambda: hs256(iss="https://evil.example.com/"), id="wrong-issuer"),
        pytest.param(lambda: jwt.encode(claims(), "x" * 64, algorithm="HS256"), id="other-secret"),
        pytest.param(lambda: jwt.encode(claims(), SECRET, algorithm="HS512"), id="other-algorithm"),
        pytest.param(lambda: jwt.encode(claims(), None, algorithm="none"), id="alg-none"),
        pytest.param(lambda: hs256(exp=None), id="no-expiry"),
        pytest.param(lambda: hs256(sub=None), id="no-subject"),
        pytest.param(lambda: hs256(tenantId=None), id="no-tenant"),
        pytest.param(lambda: hs256(tenantId="acme#EP#x"), id="tenant-with-key-separator"),
        pytest.param(lambda: hs256(tenantId="a" * 129), id="tenant-too-long"),
        pytest.param(lambda: hs256(tenantId=["acme"]), id="tenant-not-a-string"),
        pytest.param(lambda: hs256(role="admin"), id="unknown-role"),
        pytest.param(lambda: hs256(role=None), id="no-role"),
        pytest.param(lambda: hs256(role=["operator"]), id="role-a-list"),
        pytest.param(lambda: hs256(role={"a": 1}), id="role-a-mapping"),
        pytest.param(lambda: hs256(sub="system:session-handoff"), id="subject-a-system-principal"),
        pytest.param(lambda: hs256(sub="SYSTEM:summariser"), id="subject-a-system-principal-in-capitals"),
        pytest.param(lambda: hs256(sub="eventbridge:crm"), id="subject-a-business-systems-principal"),
        pytest.param(lambda: hs256(actors=[]), id="actors-empty"),
        pytest.param(lambda: hs256(actors=[7]), id="actor-not-a-string"),
        pytest.param(lambda: hs256(actors=["sam", "a b"]), id="actor-not-an-id"),
        pytest.param(lambda: hs256(actors=[f"a{i}" for i in range(51)]), id="too-many-actors"),
        pytest.param(lambda: hs256(actors={"sam": True}), id="actors-not-a-list"),
        pytest.param(lambda: hs256(role="operator", actors=["sam"]), id="operator-bound-to-actors"),
    ],
)
def test_given_a_bad_token_when_authorized_then_it_is_refused(verifier, token):
    with pytest.raises(UnauthorizedError):
        verifier.caller(f"Bearer {token()}")


@pytest.mark.parametrize("header", ["", "Basic dXNlcjpwYXNz", "Bearer", "bearer a.b.c", "Bearer not-a-jwt"])
def test_given_no_bearer_jwt_when_authorized_then_it_is_refused(verifier, header):
    with pytest.raises(UnauthorizedError, match="not a bearer JWT"):
        verifier.caller(header)


def test_given_a_refused_token_when_the_handler_runs_then_api_gateway_gets_its_401_message(verifier, lambda_context):
    authorizer.set_verifier(verifier)
    try:
        with pytest.raises(Exception, match=r"^Unauthorized$"):
            event = {"authorizationToken": f"Bearer {hs256(role='root')}", "methodArn": METHOD_ARN}
            authorizer.handler(event, lambda_context)
    finally:
        authorizer.set_verifier(None)


def test_given_rs256_when_the_token_is_signed_by_the_jwks_key_then_it_is_accepted(rsa_key, monkeypatch):
    verifier = rs256_verifier(rsa_key, monkeypatch)
    token = jwt.encode(claims(tenantId="globex"), rsa_key, algorithm="RS256", headers={"kid": "key-1"})
    assert verifier.caller(f"Bearer {token}")["tenantId"] == "globex"


def test_given_rs256_when_a_token_is_hs256_signed_with_the_public_key_then_it_is_refused(rsa_key, monkeypatch):
    """The classic algorithm-confusion attack: the public key used as an HMAC secret."""
    verifier = rs256_verifier(rsa_key, monkeypatch)
    public_pem = rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    # PyJWT itself refuses to HMAC with a PEM key, so the forgery is signed by hand.
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "key-1"}).encode())
    payload = _b64(json.dumps(claims()).encode())
    signature = _b64(hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    token = f"{header}.{payload}.{signature}"
    with pytest.raises(UnauthorizedError):
        verifier.caller(f"Bearer {token}")


def test_given_rs256_when_the_key_id_is_unknown_then_it_is_refused(rsa_key, monkeypatch):
    verifier = rs256_verifier(rsa_key, monkeypatch)
    token = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "rotated-away"})
    with pytest.raises(UnauthorizedError):
        verifier.caller(f"Bearer {token}")


def test_given_hs256_from_the_environment_when_authorized_then_the_secret_comes_from_secrets_manager(
    aws_env, lambda_context
):
    import boto3
    from moto import mock_aws

    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(Name="episodic-jwt", SecretString=SECRET)["ARN"]
        env = {
            "EPISODIC_JWT_ALGORITHM": "HS256",
            "EPISODIC_JWT_ISSUER": ISSUER,
            "EPISODIC_JWT_AUDIENCE": AUDIENCE,
            "EPISODIC_JWT_SECRET_ARN": arn,
        }
        assert Verifier.from_env(env).caller(f"Bearer {hs256()}")["tenantId"] == "acme"


def test_given_the_method_arn_when_scoped_then_only_the_stage_is_covered():
    assert authorizer.stage_resource(METHOD_ARN).endswith(":abc123/prod/*/*")
    with pytest.raises(UnauthorizedError):
        authorizer.stage_resource("not-an-arn")


@pytest.mark.parametrize(("claim", "context"), [(["sam", "bot-1", "sam"], "sam,bot-1"), ("sam", "sam")])
def test_given_an_agent_token_bound_to_actors_when_authorized_then_the_context_names_them(verifier, claim, context):
    caller = verifier.caller(f"Bearer {hs256(actors=claim)}")
    assert caller["actors"] == context
    assert app_caller(caller).actors == tuple(context.split(","))


def app_caller(context: dict[str, str]) -> Caller:
    """What the API makes of an authorizer context (the caller ``GET /v1/whoami`` reports)."""
    from episodic.entrypoints import rest

    event = {"httpMethod": "GET", "path": "/v1/whoami", "resource": "/v1/whoami", "headers": {},
             "requestContext": {"requestId": "r-1", "authorizer": context}}  # fmt: skip
    response = rest.handler(event, LocalLambdaContext(aws_request_id="test-request"))
    assert response["statusCode"] == 200, response["body"]
    return Caller.model_validate_json(response["body"])


def test_the_tenant_pattern_and_roles_match_the_model():
    """The authorizer keeps copies so it need not import the core; they must not drift."""
    field = typing.get_args(Id)[1]
    pattern = next(c.pattern for c in field.metadata if getattr(c, "pattern", None))
    assert authorizer.ID.pattern == pattern
    assert frozenset(r.value for r in Role) == authorizer.ROLES
    assert authorizer.MAX_ACTORS == MAX_BOUND_ACTORS
    assert authorizer.RESERVED_PREFIXES == SERVICE_PRINCIPAL_PREFIXES
    assert all(actor.value.startswith(SERVICE_PRINCIPAL_PREFIXES) for actor in SystemActor)


def test_given_a_context_naming_a_system_principal_when_the_api_reads_it_then_it_answers_401():
    """Whatever put it there, a request never acts as the service's own work."""
    from episodic.entrypoints import rest

    context = {"tenantId": "acme", "role": "agent", "principalId": "system:session-handoff"}
    event = {"httpMethod": "GET", "path": "/v1/whoami", "resource": "/v1/whoami", "headers": {},
             "requestContext": {"requestId": "r-1", "authorizer": context}}  # fmt: skip
    response = rest.handler(event, LocalLambdaContext(aws_request_id="test-request"))
    assert response["statusCode"] == 401, response["body"]

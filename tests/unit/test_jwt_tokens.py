"""``episodic tokens jwt``: a test JWT that the deployed authorizer's own verifier
accepts, signed with the stack's secret from Secrets Manager (moto) or from the environment."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from episodic.entrypoints.cli.jwt_tokens import TokenClaims, mint, stage_auth
from episodic.entrypoints.cli.main import main
from functions.authorizer import TokenRules, UnauthorizedError, Verifier

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s" * 64


def verifier(secret: str = SECRET) -> Verifier:
    auth = stage_auth(ROOT / "cdk.json")
    return Verifier(TokenRules("HS256", auth["issuer"], auth["audience"]), lambda _token: secret)


def test_given_the_cdk_context_when_minted_then_the_authorizer_accepts_the_tenant_and_role(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("EPISODIC_JWT_SECRET", SECRET)
    assert main(["tokens", "jwt", "--tenant", "acme", "--role", "operator", "--subject", "ana"]) == 0
    token = capsys.readouterr().out.strip()
    assert verifier().caller(f"Bearer {token}") == {"tenantId": "acme", "role": "operator", "principalId": "ana"}


def test_given_actors_when_minted_then_the_authorizer_binds_the_agent_to_them(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("EPISODIC_JWT_SECRET", SECRET)
    assert main(["tokens", "jwt", "--tenant", "acme", "--actor", "sam", "--actor", "bot-1", "--subject", "ana"]) == 0
    token = capsys.readouterr().out.strip()
    assert verifier().caller(f"Bearer {token}")["actors"] == "sam,bot-1"
    assert main(["tokens", "jwt", "--role", "operator", "--actor", "sam"]) == 2
    assert "only agent tokens are bound to actors" in capsys.readouterr().err


def test_given_the_secret_in_secrets_manager_when_minted_then_it_is_read_from_there(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("EPISODIC_JWT_SECRET", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(Name="jwt", SecretString=SECRET)["ARN"]
        assert main(["tokens", "jwt", "--tenant", "acme", "--secret-id", arn]) == 0
    token = capsys.readouterr().out.strip()
    assert verifier().caller(f"Bearer {token}")["role"] == "agent"


def test_given_no_subject_when_minted_then_the_principal_names_tenant_role_and_actors(monkeypatch, capsys):
    """Tokens minted for different callers are different principals: none shares another's
    idempotency keys or its name in the audit."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("EPISODIC_JWT_SECRET", SECRET)
    principals = []
    for extra in (["--role", "operator"], [], ["--actor", "sam", "--actor", "bot-1"]):
        assert main(["tokens", "jwt", "--tenant", "acme", *extra]) == 0
        principals.append(verifier().caller(f"Bearer {capsys.readouterr().out.strip()}")["principalId"])
    assert principals == ["cli:acme:operator", "cli:acme:agent", "cli:acme:agent:sam,bot-1"]


def test_given_another_secret_when_verified_then_the_authorizer_refuses_the_token():
    auth = stage_auth(ROOT / "cdk.json")
    token = mint(TokenClaims("acme", "agent", "ana", auth["issuer"], auth["audience"]), "x" * 64)
    with pytest.raises(UnauthorizedError, match="InvalidSignatureError"):
        verifier().caller(f"Bearer {token}")


def test_given_no_secret_or_a_long_life_when_asked_then_the_cli_says_what_to_give(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("EPISODIC_JWT_SECRET", raising=False)
    assert main(["tokens", "jwt", "--tenant", "acme"]) == 2
    assert "--secret-id" in capsys.readouterr().err
    monkeypatch.setenv("EPISODIC_JWT_SECRET", SECRET)
    assert main(["tokens", "jwt", "--tenant", "acme", "--hours", "720"]) == 2
    assert "24 hours" in capsys.readouterr().err


def test_given_a_subject_the_authorizer_would_refuse_when_minted_then_it_is_refused_at_once(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("EPISODIC_JWT_SECRET", SECRET)
    for extra in (["--subject", "system:summariser"], [arg for n in range(3) for arg in ("--actor", f"{n}" * 100)]):
        assert main(["tokens", "jwt", "--tenant", "acme", *extra]) == 2
        assert "give --subject" in capsys.readouterr().err

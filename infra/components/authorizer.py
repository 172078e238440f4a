"""The authorizer concern: the ``Authorizer`` function API Gateway calls with each bearer token,
and for HS256 the signing secret it verifies with.

``Authorizer`` -- ``functions.authorizer.handler``, 256 MB, 10 s:

* environment: the ``EPISODIC_JWT_*`` settings only (algorithm, issuer, audience, tenant, role
  and actors claims, and the secret's ARN or the JWKS URL) -- none of the service environment;
* grants: ``secretsmanager:GetSecretValue`` on the HS256 secret and decrypting with the data
  key, nothing else: no table, bucket, model or index (RS256 needs no grant at all).

The function carries no errors alarm (``monitoring.py`` says why).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.components.data import DataStores
from infra.components.functions import FunctionFactory
from infra.components.ids import StackLevelScope
from infra.components.nag import acknowledge
from infra.config import AuthConfig


class Authorizer(StackLevelScope):
    """The ``Authorizer`` function and the ``JwtSecret``. A ``StackLevelScope``: both were
    top-level constructs of the flat stack, and the secret must keep its logical ID."""

    def __init__(
        self, scope: Construct, id: str, *, config: AuthConfig, data: DataStores, functions: FunctionFactory
    ) -> None:
        super().__init__(scope, id)
        environment = {
            "EPISODIC_JWT_ALGORITHM": config.algorithm,
            "EPISODIC_JWT_ISSUER": config.issuer,
            "EPISODIC_JWT_AUDIENCE": config.audience,
            "EPISODIC_JWT_TENANT_CLAIM": config.tenant_claim,
            "EPISODIC_JWT_ROLE_CLAIM": config.role_claim,
            "EPISODIC_JWT_ACTORS_CLAIM": config.actors_claim,
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }
        self.secret: secretsmanager.ISecret | None = None
        if config.algorithm == "RS256":
            environment["EPISODIC_JWT_JWKS_URL"] = config.jwks_url or ""
        else:
            self.secret = self._jwt_secret(config.secret_name, data)
            environment["EPISODIC_JWT_SECRET_ARN"] = self.secret.secret_arn
        self.function = functions.function(
            self,
            "Authorizer",
            "functions.authorizer.handler",
            "API Gateway authorizer: bearer JWT -> tenant, role, principal, actors",
            environment=environment,
            layer=functions.code.auth_layer,  # PyJWT and Powertools only: it imports nothing of the core
            memory_mb=256,
            timeout=cdk.Duration.seconds(10),
        )
        self.functions = {"Authorizer": self.function}
        if self.secret is not None:
            # Not Secret.grant_read: with the data key that would also add the role to the key's
            # policy, and the key would then depend on a role that depends on the key's tables.
            self.function.role.add_to_principal_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self.secret.secret_arn])
            )
            data.grant_key(self.function.role, encrypt=False)

    def _jwt_secret(self, name: str | None, data: DataStores) -> secretsmanager.ISecret:
        """An existing secret by name, or a new random 64-character one under the data key."""
        if name:
            return secretsmanager.Secret.from_secret_name_v2(self, "JwtSecret", name)
        secret = secretsmanager.Secret(
            self,
            "JwtSecret",
            description="HS256 signing secret shared with the token issuer",
            encryption_key=data.key,
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        acknowledge(
            secret,
            (
                "AwsSolutions-SMG4",
                "Rotating an HS256 signing secret invalidates every issued token, so it is rotated "
                "together with the token issuer (infra/README.md); RS256 with a JWKS needs no secret.",
            ),
        )
        return secret

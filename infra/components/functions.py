"""One Lambda function the way every function of the service is deployed.

Python 3.13 on arm64 (Graviton: cheaper per GB-second), the core layer, X-Ray active tracing,
JSON logs into a log group of its own with a retention and the data key, and a role of its
own that starts empty: no managed policies (``AWSLambdaBasicExecutionRole`` would allow
writing to every log group), only what the construct that owns the function grants it.

``FunctionFactory`` carries what every function shares (code, key, retention, the audit deny
and the service environment), so each concern construct states only what is its own: handler,
sizes, extra environment and grants.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.components.code import LambdaCode
from infra.components.nag import acknowledge

RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
}


def retention(days: int) -> logs.RetentionDays:
    """CloudWatch accepts only certain retention periods; refuse others at synth time."""
    if days not in RETENTION:
        raise ValueError(f"logRetentionDays must be one of {sorted(RETENTION)}, not {days}")
    return RETENTION[days]


class ServiceFunction(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        code: LambdaCode,
        handler: str,
        description: str,
        environment: dict[str, str],
        layer: lambda_.ILayerVersion,
        key: kms.IKey,
        log_retention: logs.RetentionDays,
        memory_mb: int = 512,
        timeout: cdk.Duration = cdk.Duration.seconds(30),
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.log_group = logs.LogGroup(
            self, "Logs", retention=log_retention, encryption_key=key, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        self.role = iam.Role(
            self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=f"{id}: {description}"
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.ARM_64,
            code=code.handlers,
            handler=handler,
            description=description,
            layers=[layer],
            environment=environment,
            role=self.role,
            memory_size=memory_mb,
            timeout=timeout,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            reserved_concurrent_executions=reserved_concurrency,
        )
        self.log_group.grant_write(self.role)
        acknowledge(
            self.function,
            (
                "AwsSolutions-L1",
                "Python 3.13 is the runtime chosen for this deployment: `make layer` builds the "
                "layer's binary wheels for cp313, so moving to a newer runtime is a deliberate upgrade of both.",
            ),
        )
        acknowledge(
            self.role,
            (
                "AwsSolutions-IAM5[Resource::*]",
                "X-Ray PutTraceSegments/PutTelemetryRecords and DynamoDB "
                "ListStreams support no resource-level permissions; tests/infra allow '*' for those actions only.",
            ),
        )


@dataclass(frozen=True)
class FunctionFactory:
    """What every function of the stack shares. ``service_environment`` is what the service's
    handlers read through ``Settings.from_env`` (tables, bucket, key, models, the review machine,
    the recall index); the authorizer gets none of it."""

    code: LambdaCode
    key: kms.IKey
    log_retention: logs.RetentionDays
    audit_append_only: iam.IManagedPolicy
    pseudonym_key_access: iam.IManagedPolicy
    service_environment: Mapping[str, str]

    def service_function(
        self,
        scope: Construct,
        id: str,
        handler: str,
        description: str,
        *,
        environment: Mapping[str, str] | None = None,
        **props: Any,
    ) -> ServiceFunction:
        """A function of the service: the service environment plus ``environment``, and the key
        of actor pseudonyms, which building the service loads."""
        made = self.function(
            scope,
            id,
            handler,
            description,
            environment={**self.service_environment, **(environment or {})},
            layer=self.code.layer,
            **props,
        )
        made.role.add_managed_policy(self.pseudonym_key_access)
        return made

    def function(
        self,
        scope: Construct,
        id: str,
        handler: str,
        description: str,
        *,
        environment: Mapping[str, str],
        layer: lambda_.ILayerVersion,
        **props: Any,
    ) -> ServiceFunction:
        """A function with ``environment`` only and the given layer (the core's for the service,
        its own for the authorizer). Its role, like every role of the stack, carries the audit
        table's append-only deny."""
        made = ServiceFunction(
            scope,
            id,
            code=self.code,
            handler=handler,
            description=description,
            environment=dict(environment),
            layer=layer,
            key=self.key,
            log_retention=self.log_retention,
            **props,
        )
        made.role.add_managed_policy(self.audit_append_only)
        return made

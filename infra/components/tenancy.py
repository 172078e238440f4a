"""Tenant isolation in IAM, for principals that act for one tenant.

The service's own functions serve every tenant (the *pool* model): their code scopes each call
by the caller's tenant, and the tests prove it. For anything that should be confined by IAM
itself -- a per-tenant worker, an integration, a support tool -- this managed policy allows
DynamoDB access only to items whose partition key starts with the principal's ``tenantId``
tag (a role tag, or a session tag given when the role is assumed), and the archive only under
that tenant's prefix. ``infra/README.md`` explains the pool and silo options.

The condition is the one AWS documents, with the guard it omits: ``ForAllValues`` is also true
when the request has *no* ``dynamodb:LeadingKeys`` at all -- which is what a Scan looks like --
so the ``Null`` condition requires the key to be present. Scan is not granted either; the
guard keeps it that way if someone adds it. ``pending_reviews``, ``by_expiry`` and ``by_day``
(the service's cross-tenant sweep indexes, whose keys do not start with a tenant) are not granted.

The tag cannot widen the pattern: IAM tag values may not contain ``*``, ``?`` or ``#``, so a
session tagged ``tenantId=acme`` matches ``acme#...`` and nothing else.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from episodic.adapters.dynamodb import tables
from infra.components.data import (
    ARCHIVE_PREFIX,
    AUDIT_APPEND,
    AUDIT_READ,
    TENANT_INDEXES,
    TIMELINE_READ,
    TIMELINE_WRITE,
    DataStores,
)
from infra.components.nag import acknowledge

TENANT_TAG = "${aws:PrincipalTag/tenantId}"


def leading_keys(*patterns: str) -> dict[str, dict[str, object]]:
    return {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(patterns)},
        "Null": {"dynamodb:LeadingKeys": "false", "aws:PrincipalTag/tenantId": "false"},
        # An empty tag would make the pattern ``#*``, the service's own items (the pseudonym key).
        "StringLike": {"aws:PrincipalTag/tenantId": "?*"},
    }


class TenantIsolation(Construct):
    """``TenantScopedAccess`` (the managed policy) and ``TenantDataAccess`` (a role carrying it,
    and the audit deny, for principals that act for one tenant)."""

    def __init__(self, scope: Construct, id: str, *, data: DataStores) -> None:
        super().__init__(scope, id)
        self.policy = self._tenant_scoped_access(data)
        # Assumed with a tenantId session tag (and only that tag); no principal is allowed to
        # assume it until an administrator grants sts:AssumeRole + sts:TagSession on it.
        self.role = iam.Role(
            self,
            "TenantDataAccess",
            description="Acts for exactly one tenant: the tenantId session tag given at AssumeRole",
            assumed_by=iam.AccountRootPrincipal().with_conditions({"StringLike": {"aws:RequestTag/tenantId": "?*"}}),
            managed_policies=[self.policy, data.audit_append_only],
            max_session_duration=cdk.Duration.hours(1),
        )
        self.role.assume_role_policy.add_statements(  # type: ignore[union-attr]
            iam.PolicyStatement(
                actions=["sts:TagSession"],
                principals=[iam.AccountRootPrincipal()],
                conditions={
                    "StringLike": {"aws:RequestTag/tenantId": "?*"},
                    "ForAllValues:StringEquals": {"aws:TagKeys": ["tenantId"]},
                },
            )
        )

    def _tenant_scoped_access(self, data: DataStores) -> iam.ManagedPolicy:
        policy = iam.ManagedPolicy(
            self,
            "TenantScopedAccess",
            description="DynamoDB and archive access confined to the principal's tenantId tag",
            statements=_tenant_statements(data),
        )
        archive = data.archive_logical_id
        acknowledge(
            policy,
            *(
                (
                    f"AwsSolutions-IAM5[Resource::<{archive}.Arn>/{ARCHIVE_PREFIX}{prefix}<aws:PrincipalTag/tenantId>/*]",
                    "Objects under the principal's own tenant prefix: the wildcard is the record name within it.",
                )
                for prefix in ("", "_by_id/")
            ),
        )
        return policy


def _tenant_statements(data: DataStores) -> list[iam.PolicyStatement]:
    """Timeline and audit items under the tag's keys, archive objects under its prefixes, the
    data key only through DynamoDB and S3."""
    timeline, audit = data.timeline.table_arn, data.audit.table_arn
    return [
        iam.PolicyStatement(
            sid="TimelineOwnTenantOnly",
            actions=[*TIMELINE_READ, *TIMELINE_WRITE],
            resources=[timeline, *(f"{timeline}/index/{name}" for name in TENANT_INDEXES)],
            conditions=leading_keys(f"{TENANT_TAG}#*"),
        ),
        iam.PolicyStatement(
            sid="AuditOwnTenantOnly",
            # The audit table's partition key is the bare tenant id; its by_event index's is "<tenant>#E#id".
            actions=[*AUDIT_APPEND, *AUDIT_READ],
            resources=[audit, f"{audit}/index/{tables.AUDIT_EVENT_INDEX}"],
            conditions=leading_keys(TENANT_TAG, f"{TENANT_TAG}#*"),
        ),
        iam.PolicyStatement(
            sid="ArchiveOwnTenantOnly",
            actions=["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"],
            resources=[
                data.archive.arn_for_objects(f"{ARCHIVE_PREFIX}{TENANT_TAG}/*"),
                data.archive.arn_for_objects(f"{ARCHIVE_PREFIX}_by_id/{TENANT_TAG}/*"),
            ],
            conditions={"Null": {"aws:PrincipalTag/tenantId": "false"}},
        ),
        iam.PolicyStatement(
            sid="DataKeyThroughTheServicesOnly",
            actions=["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
            resources=[data.key.key_arn],
            conditions={
                "StringEquals": {
                    "kms:ViaService": [
                        f"dynamodb.{cdk.Aws.REGION}.amazonaws.com",
                        f"s3.{cdk.Aws.REGION}.amazonaws.com",
                    ]
                }
            },
        ),
    ]

"""The stateful part: the data key, the DynamoDB tables, the S3 cold archive and its access logs.

The tables are built from ``episodic.adapters.dynamodb.tables`` -- the same definitions the store,
the stream processor and the moto tests use -- so keys and indexes cannot drift from the code.
Everything stateful is retained on stack deletion and the tables are deletion-protected:
memories and their audit trail outlive a mistaken ``cdk destroy``.

The grant methods are the only way roles get data access, one narrow action list each, so
least privilege is decided here, in one place, and tested.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from episodic.adapters.dynamodb import tables
from infra.components.nag import acknowledge
from infra.config import StageConfig

TIMELINE_READ = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")
TIMELINE_WRITE = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem")
AUDIT_APPEND = ("dynamodb:PutItem",)
AUDIT_READ = ("dynamodb:GetItem", "dynamodb:Query")
# What no role may do to the audit table: change or remove a record, or let TTL remove them.
# BatchWriteItem is here because it cannot carry the create-once condition, so it could overwrite.
AUDIT_FORBIDDEN = (
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:PartiQLUpdate",
    "dynamodb:PartiQLDelete",
    "dynamodb:UpdateTimeToLive",
)
TENANT_INDEXES = tables.TENANT_INDEXES  # by_actor, by_type, ...: partition keys start with "<tenant>#"
ARCHIVE_PREFIX = "archive/"  # S3ColdArchive's default prefix: every record and pointer lives under it


def _key_attribute(definition: dict[str, Any], name: str) -> dynamodb.Attribute:
    types = {a["AttributeName"]: a["AttributeType"] for a in definition["AttributeDefinitions"]}
    kinds = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER, "B": dynamodb.AttributeType.BINARY}
    return dynamodb.Attribute(name=name, type=kinds[types[name]])


def _keys(definition: dict[str, Any], schema: list[dict[str, str]]) -> dict[str, Any]:
    roles = {"HASH": "partition_key", "RANGE": "sort_key"}
    return {roles[k["KeyType"]]: _key_attribute(definition, k["AttributeName"]) for k in schema}


def _table(scope: Construct, id: str, definition: dict[str, Any], **props: Any) -> dynamodb.Table:
    """A CDK table from a ``create_table`` definition: same keys, same indexes, same projections."""
    if definition["BillingMode"] != "PAY_PER_REQUEST":
        raise ValueError("the service's tables are on-demand")
    table = dynamodb.Table(
        scope,
        id,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        **_keys(definition, definition["KeySchema"]),
        **props,
    )
    for index in definition.get("GlobalSecondaryIndexes", []):
        projection = index["Projection"]
        table.add_global_secondary_index(
            index_name=index["IndexName"],
            projection_type=dynamodb.ProjectionType(projection["ProjectionType"]),
            non_key_attributes=projection.get("NonKeyAttributes"),
            **_keys(definition, index["KeySchema"]),
        )
    return table


class DataStores(Construct):
    """The customer-managed data key, the timeline and audit tables, the archive bucket and its
    access-log bucket -- all retained -- and the only grant methods that reach them."""

    def __init__(self, scope: Construct, id: str, *, config: StageConfig) -> None:
        super().__init__(scope, id)
        self.key = self._data_key(config.stage)
        self.timeline = self._timeline(config.pitr_recovery_days)
        self.audit = self._audit(config.pitr_recovery_days)
        # The same deny as a policy every service role carries, so the rule is visible on the
        # roles themselves and survives someone editing the table policy.
        self.audit_append_only = iam.ManagedPolicy(
            self,
            "AuditAppendOnly",
            description="The audit table is append-only: no update, delete, batch write or TTL",
            statements=[
                iam.PolicyStatement(
                    sid="AuditIsAppendOnly",
                    effect=iam.Effect.DENY,
                    actions=list(AUDIT_FORBIDDEN),
                    resources=[self.audit.table_arn, f"{self.audit.table_arn}/index/*"],
                )
            ],
        )
        self.pseudonym_key_access = self._pseudonym_key_access()
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # S3 server access logging cannot write SSE-KMS
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-logs", expiration=cdk.Duration.days(365))],
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.access_logs, ("AwsSolutions-S1", "This is the server-access-log bucket; logging it to itself loops.")
        )
        self.archive = self._archive()

    def _data_key(self, stage: str) -> kms.Key:
        """One rotating key for tables, archive, queues and logs."""
        stack = cdk.Stack.of(self)
        key = kms.Key(
            self,
            "DataKey",
            description=f"episodic {stage}: tables, archive, queues, logs",
            enable_key_rotation=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        # CloudWatch Logs encrypts the service's log groups with this key (they carry tenant and
        # actor ids); the condition confines the grant to log groups of this account and region.
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                actions=[
                    "kms:Encrypt",
                    "kms:Decrypt",
                    "kms:ReEncryptFrom",
                    "kms:ReEncryptTo",
                    "kms:GenerateDataKey",
                    "kms:DescribeKey",
                ],
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": stack.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name="*",
                            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                        )
                    }
                },
            )
        )
        return key

    def _protected(self, pitr_recovery_days: int) -> dict[str, Any]:
        """What both tables share: the data key, PITR, deletion protection, retained."""
        return {
            "encryption": dynamodb.TableEncryption.CUSTOMER_MANAGED,
            "encryption_key": self.key,
            "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True, recovery_period_in_days=pitr_recovery_days
            ),
            "deletion_protection": True,
            "removal_policy": cdk.RemovalPolicy.RETAIN,
        }

    def _timeline(self, pitr_recovery_days: int) -> dynamodb.Table:
        """Items expire by TTL on ``ttl``; the stream (new and old images) feeds ``Stream``."""
        timeline = tables.timeline_table_definition("unused")
        return _table(
            self,
            "Timeline",
            timeline,
            **self._protected(pitr_recovery_days),
            time_to_live_attribute="ttl",
            stream=dynamodb.StreamViewType(timeline["StreamSpecification"]["StreamViewType"]),
        )

    def _audit(self, pitr_recovery_days: int) -> dynamodb.Table:
        """Append-only for every principal, administrators included: an explicit deny in the
        table's own policy beats any allow in an identity policy. Its stream (new images) feeds
        ``Stream``, which tells each change as a memory event."""
        audit = tables.audit_table_definition("unused")
        return _table(
            self,
            "Audit",
            audit,
            **self._protected(pitr_recovery_days),
            stream=dynamodb.StreamViewType(audit["StreamSpecification"]["StreamViewType"]),
            resource_policy=iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        sid="AuditIsAppendOnly",
                        effect=iam.Effect.DENY,
                        principals=[iam.AnyPrincipal()],
                        actions=list(AUDIT_FORBIDDEN),
                        resources=["*"],
                    )
                ]
            ),
        )

    def _archive(self) -> s3.Bucket:
        """Private, versioned, SSE-KMS with the data key, access-logged, colder with age."""
        return s3.Bucket(
            self,
            "Archive",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,  # one data key per bucket-hour instead of a KMS call per object
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="archive/",
            lifecycle_rules=[
                # Only instant-retrieval classes: POST /v1/episodes/{id}/restore reads the record
                # synchronously, which Glacier Flexible Retrieval or Deep Archive cannot serve.
                # S3 skips objects under 128 KiB by default, so tiny records stay in Standard.
                s3.LifecycleRule(
                    id="colder-with-age",
                    prefix=ARCHIVE_PREFIX,
                    transitions=[
                        s3.Transition(
                            storage_class=s3.StorageClass.INFREQUENT_ACCESS, transition_after=cdk.Duration.days(30)
                        ),
                        s3.Transition(
                            storage_class=s3.StorageClass.GLACIER_INSTANT_RETRIEVAL,
                            transition_after=cdk.Duration.days(90),
                        ),
                    ],
                    # Re-archiving overwrites; erasure deletes every version itself.
                    noncurrent_version_expiration=cdk.Duration.days(30),
                    expired_object_delete_marker=True,
                ),
                s3.LifecycleRule(id="abort-uploads", abort_incomplete_multipart_upload_after=cdk.Duration.days(7)),
            ],
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )

    @property
    def archive_logical_id(self) -> str:
        """How cdk-nag names the bucket in a finding (``<LogicalId.Arn>``)."""
        return cdk.Stack.of(self).get_logical_id(self.archive.node.default_child)  # type: ignore[arg-type]

    def _pseudonym_key_access(self) -> iam.ManagedPolicy:
        """Reading (and, by the first function that asks, creating) the one item holding the key
        of actor pseudonyms (``tables.SERVICE_PK``), for every service function: each builds the
        service, which loads the key, whatever else its role may touch."""
        return iam.ManagedPolicy(
            self,
            "PseudonymKeyAccess",
            description="The key of actor pseudonyms: one item of the timeline, read or created once",
            statements=[
                iam.PolicyStatement(
                    sid="PseudonymKeyItem",
                    actions=["dynamodb:GetItem", "dynamodb:PutItem"],
                    resources=[self.timeline.table_arn],
                    conditions={
                        "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [tables.SERVICE_PK]},
                        "Null": {"dynamodb:LeadingKeys": "false"},
                    },
                ),
                iam.PolicyStatement(
                    sid="PseudonymKeyEncryption",
                    actions=["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"],
                    resources=[self.key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{cdk.Aws.REGION}.amazonaws.com"}},
                ),
            ],
        )

    # ----------------------------------------------------------------------------- grants

    def _index_arns(self, table: dynamodb.Table, names: Sequence[str]) -> list[str]:
        return [f"{table.table_arn}/index/{name}" for name in names]

    def grant_timeline(
        self, role: iam.IRole, *, write: bool = False, scan: bool = False, indexes: Sequence[str] = ()
    ) -> None:
        """Item reads (and writes) on the timeline; Query on the named indexes only; Scan only
        for the maintenance sweeps that need it."""
        actions = [*TIMELINE_READ, *(TIMELINE_WRITE if write else ()), *(("dynamodb:Scan",) if scan else ())]
        role.add_to_principal_policy(iam.PolicyStatement(actions=actions, resources=[self.timeline.table_arn]))
        if indexes:
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["dynamodb:Query"], resources=self._index_arns(self.timeline, indexes))
            )
        self.grant_key(role, encrypt=write)

    def grant_review_token(self, role: iam.IRole) -> None:
        """Reading a review and keeping its task token on it (``UpdateItem``), nothing more."""
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem", "dynamodb:UpdateItem"], resources=[self.timeline.table_arn]
            )
        )
        self.grant_key(role, encrypt=True)

    def grant_audit(self, role: iam.IRole, *, read: bool = False) -> None:
        """Append (create-once puts, in the same transaction as the change they record); reading
        is for the operators' ``GET /v1/audit`` only."""
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(AUDIT_APPEND), resources=[self.audit.table_arn]))
        if read:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=list(AUDIT_READ),
                    resources=[self.audit.table_arn, *self._index_arns(self.audit, [tables.AUDIT_EVENT_INDEX])],
                )
            )
        self.grant_key(role, encrypt=True)

    def grant_archive(self, role: iam.IRole, *, read: bool = False, delete: bool = False) -> None:
        """Writing records; reading and listing versions to restore; deleting every version for
        erasure. ``ListBucket`` lets a missing record answer 404 instead of 403."""
        objects = self.archive.arn_for_objects(f"{ARCHIVE_PREFIX}*")
        actions = ["s3:PutObject"]
        if read:
            actions += ["s3:GetObject", "s3:GetObjectVersion"]
        if delete:
            actions += ["s3:DeleteObject", "s3:DeleteObjectVersion"]
        role.add_to_principal_policy(iam.PolicyStatement(actions=actions, resources=[objects]))
        acknowledge(
            role,
            (
                f"AwsSolutions-IAM5[Resource::<{self.archive_logical_id}.Arn>/{ARCHIVE_PREFIX}*]",
                "Archive records are named by tenant, actor, date and episode id: access is to the archive/ "
                "prefix, the only prefix the service writes.",
            ),
        )
        if read or delete:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["s3:ListBucket", "s3:ListBucketVersions"], resources=[self.archive.bucket_arn]
                )
            )
        self.grant_key(role, encrypt=True)

    def grant_key(self, role: iam.IRole, *, encrypt: bool) -> None:
        actions = ["kms:Decrypt", "kms:DescribeKey", *(("kms:Encrypt", "kms:GenerateDataKey") if encrypt else ())]
        role.add_to_principal_policy(iam.PolicyStatement(actions=actions, resources=[self.key.key_arn]))

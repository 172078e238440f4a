"""The audit proof concern: audit chain checkpoints in an S3 bucket under Object Lock.

``AuditCheckpoint`` -- ``functions.workflows.audit_checkpoint_handler``, run on
``auditCheckpointSchedule`` (hourly) by EventBridge Scheduler: it reads every tenant's audit chain
heads (timeline items, a Scan) and writes them as one object to the ``AuditHeads`` bucket.

The bucket keeps every object version unchangeable for ``auditHeadsRetentionDays``: Object Lock
in governance mode by default, and a bucket policy that denies every principal, administrators
included, the permissions that would bypass, shorten or lift it. So neither the service's roles
nor a tenant's can rewrite a checkpoint, and ``episodic audit verify --backend aws`` checks the
tables against the newest one. The function may only put objects (no read, no delete).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.components.data import DataStores
from infra.components.functions import FunctionFactory, ServiceFunction
from infra.components.ids import StackLevelScope
from infra.components.nag import acknowledge
from infra.config import StageConfig

LOCK_BREAKERS = (
    "s3:BypassGovernanceRetention",
    "s3:PutObjectRetention",
    "s3:PutObjectLegalHold",
    "s3:PutBucketObjectLockConfiguration",
)
"""What would let anyone shorten or lift a checkpoint's retention: denied to every principal."""


class AuditProof(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        data: DataStores,
        functions: FunctionFactory,
        delivery_failures: sqs.IQueue,
    ) -> None:
        super().__init__(scope, id)
        self.bucket = self._bucket(config, data)
        self.function = self._checkpoint(functions, data)
        invoker = iam.Role(self, "ScheduleRole", assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"))
        scheduler.Schedule(
            self,
            "CheckpointSchedule",
            description=f"episodic {config.stage}: audit chain heads to the Object Lock bucket",
            schedule=scheduler.ScheduleExpression.expression(config.audit_checkpoint_schedule),
            target=targets.LambdaInvoke(
                self.function.function, role=invoker, dead_letter_queue=delivery_failures, retry_attempts=3,
                max_event_age=cdk.Duration.hours(1),
            ),
        )  # fmt: skip
        acknowledge(
            invoker,
            (f"AwsSolutions-IAM5[Resource::<{self._logical_id(self.function.function)}.Arn>:*]",
             "lambda:InvokeFunction on the checkpoint function and its versions, as CDK grants it; nothing else."),
        )  # fmt: skip
        self.functions = {"AuditCheckpoint": self.function}

    def _bucket(self, config: StageConfig, data: DataStores) -> s3.Bucket:
        bucket = s3.Bucket(
            self,
            "AuditHeads",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=data.key,
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_lock_enabled=True,
            object_lock_default_retention=s3.ObjectLockRetention.governance(
                cdk.Duration.days(config.audit_heads_retention_days)
            ),
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=data.access_logs,
            server_access_logs_prefix="audit-heads/",
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CheckpointsStayLocked",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(LOCK_BREAKERS),
                resources=[bucket.bucket_arn, bucket.arn_for_objects("*")],
            )
        )
        return bucket

    @staticmethod
    def _logical_id(construct: Construct) -> str:
        """How cdk-nag names a resource in a finding."""
        return cdk.Stack.of(construct).get_logical_id(construct.node.default_child)  # type: ignore[arg-type]

    def _checkpoint(self, functions: FunctionFactory, data: DataStores) -> ServiceFunction:
        checkpoint = functions.service_function(
            StackLevelScope(self, "Functions"),
            "AuditCheckpoint",
            "functions.workflows.audit_checkpoint_handler",
            "Audit chain heads to the Object Lock bucket",
            environment={"EPISODIC_AUDIT_HEADS_BUCKET": self.bucket.bucket_name},
            timeout=cdk.Duration.minutes(5),
        )
        data.grant_timeline(checkpoint.role, scan=True)
        checkpoint.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:PutObject"], resources=[self.bucket.arn_for_objects("audit-heads/*")])
        )
        acknowledge(
            checkpoint.role,
            (f"AwsSolutions-IAM5[Resource::<{self._logical_id(self.bucket)}.Arn>/audit-heads/*]",
             "Checkpoints are named by date and time under audit-heads/, the only prefix the function writes; "
             "it may put objects there and nothing else (the bucket's lock keeps each version)."),
        )  # fmt: skip
        data.grant_key(checkpoint.role, encrypt=True)
        return checkpoint

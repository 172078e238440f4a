"""The Step Functions workflows from ``statemachines/`` and what starts and feeds them.

The ASL files are deployed as written (``DefinitionBody.from_file``); the stack fills in their
``${...}`` placeholders through ``definition_substitutions`` (see statemachines/README.md), and
a test checks every placeholder of every file has a value. Each machine logs every event
(without execution data: review inputs carry the episode's summary) and is traced with X-Ray;
its role may invoke exactly the functions its definition names, since CDK cannot read that
from a file.

The review machine has a fixed name, so the functions that start executions or answer task
tokens get its ARN without a reference to the machine -- which would otherwise form a cycle
(machine -> ExpireReview function -> its role -> machine).
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.components.nag import acknowledge
from infra.components.queues import work_queue
from infra.config import ROOT, StageConfig

STATEMACHINES = ROOT / "statemachines"


def review_state_machine_arn(scope: Construct, config: StageConfig) -> str:
    return cdk.Stack.of(scope).format_arn(
        service="states",
        resource="stateMachine",
        resource_name=config.name("review"),
        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
    )


class Workflows(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        key: kms.IKey,
        log_retention: logs.RetentionDays,
        expire_review: lambda_.IFunction,
        find_busy_actors: lambda_.IFunction,
        summarise_actor: lambda_.IFunction,
        forget: lambda_.IFunction,
        delivery_failures: sqs.IQueue,
    ) -> None:
        super().__init__(scope, id)
        self._key, self._log_retention = key, log_retention
        # The review requests (with their task tokens) wait here for the consumer function.
        self.review_queue, self.review_dead_letters = work_queue(
            self, "ReviewRequests", key=key, visibility_timeout=cdk.Duration.minutes(3)
        )
        self.review = self._machine(
            "Review",
            STATEMACHINES / "review.asl.json",
            name=config.name("review"),
            substitutions={
                "ReviewQueueUrl": self.review_queue.queue_url,
                "ReviewTimeoutSeconds": str(int(config.review_timeout_days * 86400)),
                "ExpireReviewFunctionArn": expire_review.function_arn,
            },
            invokes=[expire_review],
        )
        self.review.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.review_queue.queue_arn])
        )
        self.review.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[key.key_arn])
        )
        # A reserved concurrency below the Map's would throttle iterations into ActorFailed.
        map_concurrency = json.loads((STATEMACHINES / "summarise.asl.json").read_text())["States"]["SummariseEach"][
            "MaxConcurrency"
        ]
        if config.summarise_concurrency < map_concurrency:
            raise ValueError(
                f"summariseConcurrency {config.summarise_concurrency} is below the summarise Map's "
                f"MaxConcurrency {map_concurrency}: iterations would be throttled into ActorFailed"
            )
        self.summarise = self._machine(
            "Summarise",
            STATEMACHINES / "summarise.asl.json",
            name=config.name("summarise"),
            substitutions={
                "FindBusyActorsFunctionArn": find_busy_actors.function_arn,
                "SummariseActorFunctionArn": summarise_actor.function_arn,
            },
            invokes=[find_busy_actors, summarise_actor],
        )
        self.forget = self._machine(
            "Forget",
            STATEMACHINES / "forget.asl.json",
            name=config.name("forget"),
            substitutions={"ForgetFunctionArn": forget.function_arn},
            invokes=[forget],
        )
        self.machines = {"review": self.review, "summarise": self.summarise, "forget": self.forget}

        for id_, machine, expression, what in (
            ("SummariseSchedule", self.summarise, config.summarise_schedule, "24-hour summarisation"),
            ("ForgetSchedule", self.forget, config.forget_schedule, "relevance-decay sweep"),
        ):
            scheduler.Schedule(
                self,
                id_,
                description=f"episodic {config.stage}: {what}",
                schedule=scheduler.ScheduleExpression.expression(expression),
                target=targets.StepFunctionsStartExecution(
                    machine,
                    input=scheduler.ScheduleTargetInput.from_object({}),
                    dead_letter_queue=delivery_failures,
                    retry_attempts=3,
                    max_event_age=cdk.Duration.hours(1),
                ),
            )

    def _machine(
        self, id: str, definition: Path, *, name: str, substitutions: dict[str, str], invokes: list[lambda_.IFunction]
    ) -> sfn.StateMachine:
        log_group = logs.LogGroup(
            self,
            f"{id}Logs",
            # The /aws/vendedlogs/ prefix keeps CloudWatch Logs' resource policy from growing per machine.
            log_group_name=f"/aws/vendedlogs/states/{name}",
            retention=self._log_retention,
            encryption_key=self._key,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        machine = sfn.StateMachine(
            self,
            id,
            state_machine_name=name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_file(str(definition)),
            definition_substitutions=substitutions,
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            tracing_enabled=True,
        )
        for function in invokes:
            machine.role.add_to_principal_policy(
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[function.function_arn])
            )
        acknowledge(
            machine.role,
            (
                "AwsSolutions-IAM5[Resource::*]",
                "CloudWatch Logs delivery (logs:*LogDelivery, resource policies, "
                "DescribeLogGroups) and X-Ray support no resource-level permissions.",
            ),
        )
        return machine

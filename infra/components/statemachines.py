"""The Step Functions state machines from ``statemachines/`` and what starts and feeds them.

The ASL files are deployed as written (``DefinitionBody.from_file``); ``definition_substitutions``
fill in their ``${...}`` placeholders (see statemachines/README.md), and a test checks every
placeholder of every file has a value. Each machine logs every event (without execution data:
review inputs carry the episode's summary) and is traced with X-Ray; its role may invoke exactly
the functions its definition names, since CDK cannot read that from a file.

The review machine has a fixed name, so the functions that start executions or answer task
tokens get its ARN without a reference to the machine (``grant_review_access``) -- a reference
would form a cycle (machine -> ExpireReview function -> its role -> machine).

The functions themselves belong to the ``Workflows`` concern (``workflows.py``), which holds
this construct as its ``Default`` child.
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
from constructs import Construct, IConstruct

from infra.components.nag import acknowledge
from infra.components.queues import work_queue
from infra.config import ROOT, StageConfig

STATEMACHINES = ROOT / "statemachines"


def review_state_machine_arn(scope: IConstruct, config: StageConfig) -> str:
    """The review machine's ARN from its fixed name, in the stack of ``scope``."""
    return cdk.Stack.of(scope).format_arn(
        service="states",
        resource="stateMachine",
        resource_name=config.name("review"),
        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
    )


def grant_review_access(role: iam.IRole, config: StageConfig, *, start: bool = False, answer: bool = True) -> None:
    """With ``answer``, answering review task tokens (any function that may close a review);
    with ``start``, starting review executions (any function that may write). A function that
    only writes (ingestion, summaries) starts reviews and never answers one."""
    actions = ["states:SendTaskSuccess", "states:SendTaskFailure"] if answer else []
    if start:
        actions.append("states:StartExecution")
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=actions, resources=[review_state_machine_arn(role, config)])
    )


def summarise_map_concurrency() -> int:
    """The summarise Map's ``MaxConcurrency``, as written in its definition."""
    definition = json.loads((STATEMACHINES / "summarise.asl.json").read_text())
    return int(definition["States"]["SummariseEach"]["MaxConcurrency"])


class StateMachines(Construct):
    """The review, summarise and forget machines, the review queue (+ dead letters) that the
    review machine sends requests to, and the Scheduler schedules that start summarise and
    forget (undeliverable starts go to ``delivery_failures``)."""

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
        self._config, self._key, self._log_retention = config, key, log_retention
        # The review requests (with their task tokens) wait here for the consumer function.
        self.review_queue, self.review_dead_letters = work_queue(
            self, "ReviewRequests", key=key, visibility_timeout=cdk.Duration.minutes(3)
        )
        self.review = self._review_machine(expire_review)
        _check_summarise_concurrency(config.summarise_concurrency)
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
        for schedule_id, machine, expression, what in (
            ("SummariseSchedule", self.summarise, config.summarise_schedule, "24-hour summarisation"),
            ("ForgetSchedule", self.forget, config.forget_schedule, "relevance-decay sweep"),
        ):
            self._schedule(schedule_id, machine, expression, what, delivery_failures)

    def _review_machine(self, expire_review: lambda_.IFunction) -> sfn.StateMachine:
        """Sends each review request to the queue (encrypted with the data key) and waits for
        its task token to be answered, or calls ``ExpireReview`` when the timeout passes."""
        config = self._config
        machine = self._machine(
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
        machine.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.review_queue.queue_arn])
        )
        machine.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[self._key.key_arn])
        )
        return machine

    def _schedule(
        self, id: str, machine: sfn.IStateMachine, expression: str, what: str, delivery_failures: sqs.IQueue
    ) -> None:
        scheduler.Schedule(
            self,
            id,
            description=f"episodic {self._config.stage}: {what}",
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
        """``definition`` with its substitutions, a log group of its own and the right to invoke
        ``invokes`` and nothing else."""
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


def _check_summarise_concurrency(reserved: int) -> None:
    """A reserved concurrency below the Map's would throttle iterations into ActorFailed."""
    map_concurrency = summarise_map_concurrency()
    if reserved < map_concurrency:
        raise ValueError(
            f"summariseConcurrency {reserved} is below the summarise Map's "
            f"MaxConcurrency {map_concurrency}: iterations would be throttled into ActorFailed"
        )

"""Alarms (to an SNS topic, optionally e-mailed) and one dashboard for the whole service.

What pages someone, and why each threshold:

* API 5xx (>= 5 in 5 min) and p99 latency (> 5 s for 15 min): callers are failing or waiting.
* Stream iterator age (> 5 min): TTL archiving and the recall projection are falling behind.
* Any message in a dead-letter or on-failure queue: something was given up on and needs a human.
* Any failed, timed-out or aborted workflow execution.
* Review backlog: the review queue's oldest message (> 15 min: the consumer is not attaching
  task tokens) and reviews that expired unanswered (the operators are not keeping up -- each
  one was denied by default).
* Errors of each function (unhandled; domain errors are answers, not errors). The stack leaves
  the authorizer out: refusing a token *is* an error to Lambda (``Exception("Unauthorized")``
  is how a TOKEN authorizer answers 401), so anyone could trip it; an authorizer that truly
  fails makes API Gateway answer 500, which the API 5xx alarm sees.
* OpenSearch cluster red, or less than a quarter of its storage free.
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.components.search import SearchDomain

FIVE_MINUTES = cdk.Duration.minutes(5)


class Monitoring(Construct):
    """The alarm topic (encrypted with the data key, which CloudWatch may therefore use), an
    alarm per signal above, and the ``episodic-<stage>`` dashboard."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        stage: str,
        key: kms.IKey,
        alarm_email: str | None,
        api: apigw.RestApi,
        functions: Mapping[str, lambda_.IFunction],
        stream_function: lambda_.IFunction,
        dead_letter_queues: Mapping[str, sqs.IQueue],
        machines: Mapping[str, sfn.IStateMachine],
        review_queue: sqs.IQueue,
        expire_review: lambda_.IFunction,
        search: SearchDomain | None,
    ) -> None:
        super().__init__(scope, id)
        self.topic = self._topic(stage, key, alarm_email)
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self._api_alarms(api)
        self._alarm(
            "StreamIteratorAge",
            stream_function.metric("IteratorAge", period=FIVE_MINUTES, statistic="Maximum"),
            300_000,
            "Timeline stream iterator age (ms)",
        )
        for name, queue in dead_letter_queues.items():
            self._alarm(
                f"DeadLetters{name}",
                queue.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES, statistic="Maximum"),
                1,
                f"messages parked in the {name} dead letters",
            )
        for name, machine in machines.items():
            self._workflow_alarm(name, machine)
        self._review_backlog_alarms(review_queue, expire_review)
        for name, function in functions.items():
            self._alarm(
                f"{name}Errors",
                function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                1,
                f"{name} function errors",
            )
        if search is not None:
            self._search_alarms(search)
        self.dashboard = self._dashboard(
            stage, api, functions, dead_letter_queues, machines, review_queue=review_queue, expire_review=expire_review
        )

    def _topic(self, stage: str, key: kms.IKey, alarm_email: str | None) -> sns.Topic:
        topic = sns.Topic(self, "Alarms", display_name=f"episodic {stage} alarms", master_key=key, enforce_ssl=True)
        # CloudWatch publishes to the encrypted topic, so it needs the data key.
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID}},
            )
        )
        if alarm_email:
            topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        return topic

    def _api_alarms(self, api: apigw.RestApi) -> None:
        self._alarm("Api5xx", api.metric_server_error(period=FIVE_MINUTES, statistic="Sum"), 5, "API 5xx responses")
        self._alarm(
            "ApiLatencyP99",
            api.metric_latency(period=FIVE_MINUTES, statistic="p99"),
            5000,
            "API p99 latency (ms), three periods running",
            periods=3,
        )

    def _workflow_alarm(self, name: str, machine: sfn.IStateMachine) -> None:
        failures = cloudwatch.MathExpression(
            expression="failed + timedout + aborted",
            using_metrics={
                "failed": machine.metric_failed(period=FIVE_MINUTES),
                "timedout": machine.metric_timed_out(period=FIVE_MINUTES),
                "aborted": machine.metric_aborted(period=FIVE_MINUTES),
            },
            period=FIVE_MINUTES,
            label=f"{name} executions failed/timed out/aborted",
        )
        self._alarm(f"Workflow{name.title()}Failures", failures, 1, f"{name} workflow executions that failed")

    def _review_backlog_alarms(self, review_queue: sqs.IQueue, expire_review: lambda_.IFunction) -> None:
        self._alarm(
            "ReviewQueueAge",
            review_queue.metric_approximate_age_of_oldest_message(period=FIVE_MINUTES, statistic="Maximum"),
            900,
            "oldest review request not yet picked up (s)",
        )
        self._alarm(
            "ReviewsExpiredUnanswered",
            expire_review.metric_invocations(period=cdk.Duration.hours(24), statistic="Sum"),
            1,
            "reviews denied by timeout in the last day",
        )

    def _search_alarms(self, search: SearchDomain) -> None:
        dimensions = {"DomainName": search.domain_name, "ClientId": cdk.Aws.ACCOUNT_ID}
        self._alarm(
            "SearchClusterRed",
            cloudwatch.Metric(
                namespace="AWS/ES",
                metric_name="ClusterStatus.red",
                dimensions_map=dimensions,
                period=cdk.Duration.minutes(1),
                statistic="Maximum",
            ),
            1,
            "OpenSearch cluster red",
        )
        self._alarm(
            "SearchStorageLow",
            cloudwatch.Metric(
                namespace="AWS/ES",
                metric_name="FreeStorageSpace",
                dimensions_map=dimensions,
                period=FIVE_MINUTES,
                statistic="Minimum",
            ),
            search.volume_mib // 4,
            "OpenSearch free storage (MiB)",
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        )

    def _dashboard(
        self,
        stage: str,
        api: apigw.RestApi,
        functions: Mapping[str, lambda_.IFunction],
        dead_letter_queues: Mapping[str, sqs.IQueue],
        machines: Mapping[str, sfn.IStateMachine],
        *,
        review_queue: sqs.IQueue,
        expire_review: lambda_.IFunction,
    ) -> cloudwatch.Dashboard:
        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"episodic-{stage}")
        dashboard.add_widgets(
            *_api_widgets(api),
            *_function_widgets(functions),
            cloudwatch.GraphWidget(
                title="Stream iterator age (ms)", left=[self.alarms["StreamIteratorAge"].metric], width=8
            ),
            cloudwatch.GraphWidget(
                title="Dead letters",
                left=[
                    q.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES)
                    for q in dead_letter_queues.values()
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Review backlog",
                left=[review_queue.metric_approximate_age_of_oldest_message(period=FIVE_MINUTES)],
                right=[expire_review.metric_invocations(period=cdk.Duration.hours(1))],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Workflow executions",
                left=[m.metric_succeeded(period=FIVE_MINUTES) for m in machines.values()],
                right=[m.metric_failed(period=FIVE_MINUTES) for m in machines.values()],
                width=24,
            ),
        )
        return dashboard

    def _alarm(
        self,
        id: str,
        metric: cloudwatch.IMetric,
        threshold: float,
        description: str,
        *,
        periods: int = 1,
        comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=periods,
            comparison_operator=comparison,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms[id] = alarm


def _api_widgets(api: apigw.RestApi) -> list[cloudwatch.IWidget]:
    return [
        cloudwatch.GraphWidget(
            title="API requests and errors",
            left=[
                api.metric_count(period=FIVE_MINUTES),
                api.metric_client_error(period=FIVE_MINUTES),
                api.metric_server_error(period=FIVE_MINUTES),
            ],
            width=12,
        ),
        cloudwatch.GraphWidget(
            title="API latency (ms)",
            left=[api.metric_latency(statistic=s, period=FIVE_MINUTES) for s in ("p50", "p90", "p99")],
            width=12,
        ),
    ]


def _function_widgets(functions: Mapping[str, lambda_.IFunction]) -> list[cloudwatch.IWidget]:
    return [
        cloudwatch.GraphWidget(
            title="Function errors",
            left=[f.metric_errors(period=FIVE_MINUTES) for f in functions.values()],
            width=12,
        ),
        cloudwatch.GraphWidget(
            title="Function duration p99 (ms)",
            left=[f.metric_duration(statistic="p99", period=FIVE_MINUTES) for f in functions.values()],
            width=12,
        ),
    ]

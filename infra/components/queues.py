"""SQS queues, always encrypted and TLS-only, and never without somewhere for failures to go."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.components.nag import acknowledge


def failure_queue(scope: Construct, id: str, *, key: kms.IKey | None = None) -> sqs.Queue:
    """Where undeliverable messages or failed records end, kept 14 days for an operator.

    A queue an AWS service delivers to (an EventBridge target's, a schedule's or an event
    source mapping's failures) uses SQS-managed encryption, so the service needs no grant on
    the data key; queues that receive message *content* from a redrive pass the data key."""
    queue = sqs.Queue(
        scope,
        id,
        encryption=sqs.QueueEncryption.KMS if key else sqs.QueueEncryption.SQS_MANAGED,
        encryption_master_key=key,
        enforce_ssl=True,
        retention_period=cdk.Duration.days(14),
    )
    acknowledge(queue, ("AwsSolutions-SQS3", "This queue is itself a dead-letter or on-failure destination."))
    return queue


def work_queue(
    scope: Construct, id: str, *, key: kms.IKey, visibility_timeout: cdk.Duration, max_receive_count: int = 5
) -> tuple[sqs.Queue, sqs.Queue]:
    """A KMS-encrypted queue and its dead-letter queue (after ``max_receive_count`` failures)."""
    dead_letters = failure_queue(scope, f"{id}DeadLetters", key=key)
    queue = sqs.Queue(
        scope,
        id,
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=key,
        enforce_ssl=True,
        visibility_timeout=visibility_timeout,
        dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=max_receive_count),
    )
    return queue, dead_letters

"""The review workflow end to end under moto: the real service (DynamoDB + S3), the real
review state machine executing in moto, the real SQS queue, and the handlers in between.

Real here: DynamoDB, S3, SQS, the Step Functions execution of review.asl.json with its
direct SQS integration and task token, and our code on both sides (service, queue consumer,
workflow adapter). Canned: nothing on the approve and deny paths -- no Lambda runs in them.
"""

import json
import time
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from episodic.adapters.dynamodb.store import DynamoTimelineStore
from episodic.adapters.dynamodb.tables import create_tables
from episodic.application.settings import Settings
from episodic.bootstrap.aws import build_aws_service
from episodic.domain.model import Decision, Status
from functions import workflows
from tests.support.factories import AGENT, OPERATOR, proposal

STATEMACHINES = Path(__file__).parents[2] / "statemachines"
ROLE = "arn:aws:iam::123456789012:role/episodic-review"


class _Context:
    function_name, memory_limit_in_mb, aws_request_id = "workflows-test", 256, "req-1"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:workflows-test"


@pytest.fixture
def stack(aws_env, minilm, clock):
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}):
        dynamodb, s3, sfn, sqs = (boto3.client(n) for n in ("dynamodb", "s3", "stepfunctions", "sqs"))
        queue = sqs.create_queue(QueueName="episodic-reviews")["QueueUrl"]
        definition = (STATEMACHINES / "review.asl.json").read_text()
        for name, value in {
            "ReviewQueueUrl": queue,
            "ReviewTimeoutSeconds": 600,
            "ExpireReviewFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:expire",
        }.items():
            definition = definition.replace(f"${{{name}}}", str(value))
        machine = sfn.create_state_machine(name="review", definition=definition, roleArn=ROLE)["stateMachineArn"]
        settings = Settings(
            timeline_table="tl", audit_table="au", archive_bucket="archive-test", review_state_machine_arn=machine
        )
        create_tables(dynamodb, "tl", "au")
        s3.create_bucket(Bucket="archive-test")
        service = build_aws_service(settings, dynamodb=dynamodb, s3=s3, embedder=minilm, stepfunctions=sfn, clock=clock)
        workflows.set_root(
            workflows.WorkflowRoot(service, DynamoTimelineStore(dynamodb, "tl", "au").review_tokens, sfn)
        )
        yield service, sfn, sqs, queue
        workflows.set_root(None)


def deliver_review_messages(sqs, queue):
    """What the SQS event source mapping does: hand the queued messages to the consumer."""
    deadline, records = time.monotonic() + 10, []
    while not records and time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", []):
            records.append(
                {
                    "messageId": message["MessageId"],
                    "body": message["Body"],
                    "eventSource": "aws:sqs",
                    "receiptHandle": message["ReceiptHandle"],
                    "attributes": {},
                    "messageAttributes": {},
                }
            )
    assert records, "the review machine sent nothing to the queue"
    assert workflows.review_requests_handler({"Records": records}, _Context()) == {"batchItemFailures": []}
    return [json.loads(r["body"]) for r in records]


def wait_for(sfn, execution_arn):
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        execution = sfn.describe_execution(executionArn=execution_arn)
        if execution["status"] != "RUNNING":
            return execution
        time.sleep(0.1)
    raise AssertionError("execution still running")


def execution_of(sfn, review_id):
    machines = sfn.list_state_machines()["stateMachines"]
    executions = sfn.list_executions(stateMachineArn=machines[0]["stateMachineArn"])["executions"]
    return next(e["executionArn"] for e in executions if e["name"] == review_id)


@pytest.mark.parametrize(("approve", "final_state"), [(True, "Approved"), (False, "Denied")])
def test_given_an_untrusted_write_when_an_operator_decides_then_the_execution_ends_accordingly(
    stack, approve, final_state
):
    service, sfn, sqs, queue = stack
    held = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    assert held.decision is Decision.REVIEW
    [message] = deliver_review_messages(sqs, queue)
    assert message["reviewId"] == held.review_id and message["episode"]["summary"].startswith("User prefers")
    assert service.deps.reviews.review_token("acme", held.review_id) == message["taskToken"]
    service.reviews.decide_review(OPERATOR, held.review_id, approve=approve, note="checked")
    execution = wait_for(sfn, execution_of(sfn, held.review_id))
    assert execution["status"] == "SUCCEEDED"
    history = sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
    assert entered[-1] == final_state
    stored = service.deps.episodes.get("acme", held.event_id)
    assert (stored.status is Status.ACTIVE) if approve else stored is None


def test_given_a_decision_before_the_token_arrives_when_the_message_is_consumed_then_the_task_completes(stack):
    service, sfn, sqs, queue = stack
    held = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    service.reviews.decide_review(OPERATOR, held.review_id, approve=True)  # no token yet: nothing to complete
    deliver_review_messages(sqs, queue)  # the consumer sees a closed review and completes the task
    assert wait_for(sfn, execution_of(sfn, held.review_id))["status"] == "SUCCEEDED"

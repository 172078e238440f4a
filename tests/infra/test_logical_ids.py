"""Logical IDs of the resources that hold state, pinned.

CloudFormation replaces a resource whose logical ID changes, and CDK derives the ID from the
construct path: moving a construct under a new parent is enough to create an empty table, key
or log group and delete (or orphan) the old one. The lists below are the IDs as deployed; a
refactoring that renames any of them fails here instead of in a deploy. Adding a stateful
resource means adding it here, deliberately.

Besides tables, buckets, the key, the domain, the secret and the log groups: the queues (dead
letters hold what an operator has yet to look at) and the state machines (a pending review
waits in its execution for up to ``reviewTimeoutDays``).
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from infra.components.ids import StackLevelScope, make_unique_id

STATEFUL_TYPES = {
    "AWS::DynamoDB::Table",
    "AWS::S3::Bucket",
    "AWS::KMS::Key",
    "AWS::OpenSearchService::Domain",
    "AWS::SecretsManager::Secret",
    "AWS::Logs::LogGroup",
    "AWS::SQS::Queue",
    "AWS::StepFunctions::StateMachine",
}

PINNED = {
    "DataDataKeyCDD1A924": "AWS::KMS::Key",
    "DataTimeline486BF6F4": "AWS::DynamoDB::Table",
    "DataAuditE4D9F575": "AWS::DynamoDB::Table",
    "DataArchive774FA568": "AWS::S3::Bucket",
    "DataAccessLogsC0C25EE4": "AWS::S3::Bucket",
    "ProofAuditHeads371F1613": "AWS::S3::Bucket",
    "SearchDomainAB6007CD": "AWS::OpenSearchService::Domain",
    "SearchApplicationLogsBEFD87C3": "AWS::Logs::LogGroup",
    "SearchSearchSlowLogsBB1667C5": "AWS::Logs::LogGroup",
    "SearchIndexSlowLogs5D1D98AC": "AWS::Logs::LogGroup",
    # one log group per function
    "ApiLogsCD139AD4": "AWS::Logs::LogGroup",
    "StreamLogsFC2092DE": "AWS::Logs::LogGroup",
    "IngestLogs41B5EF21": "AWS::Logs::LogGroup",
    "ReviewRequestsLogs330ADCB1": "AWS::Logs::LogGroup",
    "ExpireReviewLogs257CB15E": "AWS::Logs::LogGroup",
    "FindBusyActorsLogs5EF34758": "AWS::Logs::LogGroup",
    "SummariseActorLogs4FF34DB9": "AWS::Logs::LogGroup",
    "ForgetLogs180543C2": "AWS::Logs::LogGroup",
    "AuthorizerLogsF64AA3CA": "AWS::Logs::LogGroup",
    "AuditCheckpointLogsAB861E88": "AWS::Logs::LogGroup",
    # the API's access logs, the state machines' execution logs
    "RestAccessLogs3CF9040E": "AWS::Logs::LogGroup",
    "WorkflowsReviewLogs2773612A": "AWS::Logs::LogGroup",
    "WorkflowsSummariseLogs6B211DC4": "AWS::Logs::LogGroup",
    "WorkflowsForgetLogsC0B99F33": "AWS::Logs::LogGroup",
    # queues
    "IngestionEvents81C56334": "AWS::SQS::Queue",
    "IngestionEventsDeadLetters57560094": "AWS::SQS::Queue",
    "WorkflowsReviewRequests322EB4B4": "AWS::SQS::Queue",
    "WorkflowsReviewRequestsDeadLettersB902A28E": "AWS::SQS::Queue",
    "StreamFailuresE6D4F770": "AWS::SQS::Queue",
    "DeliveryFailuresD1F94B75": "AWS::SQS::Queue",
    # state machines
    "WorkflowsReview85877D8B": "AWS::StepFunctions::StateMachine",
    "WorkflowsSummarise35E814A1": "AWS::StepFunctions::StateMachine",
    "WorkflowsForget6C38BEDD": "AWS::StepFunctions::StateMachine",
}
# Only where the stack creates the HS256 secret (prod uses RS256 with a JWKS).
HS256_SECRET = {"JwtSecretB8834B39": "AWS::SecretsManager::Secret"}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_stateful_resources_keep_their_logical_ids(stage, request):
    synth = request.getfixturevalue(stage)
    expected = PINNED | (HS256_SECRET if synth.stack.authorizer.secret is not None else {})
    found = {name: r["Type"] for name, r in synth.template["Resources"].items() if r["Type"] in STATEFUL_TYPES}
    assert sorted(set(expected) - set(found)) == [], "renamed or removed: CloudFormation would replace these"
    assert sorted(set(found) - set(expected)) == [], "new stateful resources: pin their ids here"
    assert found == expected


def test_dev_creates_the_hs256_secret_and_prod_does_not(dev, prod):
    assert set(HS256_SECRET) <= set(dev.template["Resources"])
    assert not set(HS256_SECRET) & set(prod.template["Resources"])


def test_the_port_of_cdks_id_algorithm_agrees_with_cdk_for_every_construct(dev):
    """``make_unique_id`` names what sits below a ``StackLevelScope``; it must be CDK's own."""
    constructs = [c for c in dev.stack.node.find_all() if c is not dev.stack]
    for construct in constructs:
        components = [scope.node.id for scope in construct.node.scopes[1:]]  # from the stack down
        assert make_unique_id(components) == cdk.Names.node_unique_id(construct.node), construct.node.path


def test_every_function_keeps_the_ids_it_had_at_the_top_of_the_stack(dev):
    for name, function in dev.stack.functions.items():
        assert any(isinstance(scope, StackLevelScope) for scope in function.node.scopes), name
        for part in (function.function, function.role, function.log_group):
            assert dev.logical_id(part).startswith(name + part.node.id), (name, part.node.id)

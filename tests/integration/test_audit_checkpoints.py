"""Audit chain checkpoints in AWS, under moto: the schedule's checkpoint keeps every tenant's chain
heads in an S3 bucket under Object Lock (retained: a version cannot be deleted before its date),
and verification checks the tables against the newest one -- so removing the newest records
*and* rewinding their head items, which the chains alone cannot show, is found."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from episodic.bootstrap.aws import build_aws_service
from tests.support.factories import AGENT, proposal

BUCKET = "audit-heads-test"


@pytest.fixture
def service(aws_resources, minilm, clock):
    s3 = aws_resources["s3"]
    s3.create_bucket(Bucket=BUCKET, ObjectLockEnabledForBucket=True)
    s3.put_object_lock_configuration(Bucket=BUCKET, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 30}}})  # fmt: skip
    settings = aws_resources["settings"].model_copy(update={"audit_heads_bucket": BUCKET})
    return build_aws_service(settings, dynamodb=aws_resources["dynamodb"], s3=s3, embedder=minilm, clock=clock)


def test_given_a_checkpoint_when_kept_then_it_holds_every_chain_head_and_is_retained(service, aws_resources):
    for n in range(6):
        service.writes.remember(AGENT, proposal(summary=f"Deployed build {n} to staging"))
    key = service.proof.checkpoint()

    s3 = aws_resources["s3"]
    kept = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    heads = service.deps.audit_log.chain_heads("acme")
    assert kept["heads"]["acme"] == {str(s): {"seq": h.seq, "digest": h.digest} for s, h in heads.items()}
    head = s3.head_object(Bucket=BUCKET, Key=key)
    version = head["VersionId"]
    assert head["ObjectLockMode"] == "GOVERNANCE" and head["ObjectLockRetainUntilDate"]  # the bucket's default
    with pytest.raises(ClientError):
        s3.delete_object(Bucket=BUCKET, Key=key, VersionId=version)  # retained: not before its date
    assert service.proof.verify_tenant("acme").verified


def test_given_the_newest_records_removed_with_their_heads_when_verified_then_the_checkpoint_finds_it(
    service, aws_resources
):
    for n in range(12):
        service.writes.remember(AGENT, proposal(summary=f"Deployed build {n} to staging"))
    service.proof.checkpoint()
    dynamodb, settings = aws_resources["dynamodb"], aws_resources["settings"]
    heads = service.deps.audit_log.chain_heads("acme")
    shard, head = max(heads.items(), key=lambda item: item[1].seq)
    items = dynamodb.query(TableName=settings.audit_table, KeyConditionExpression="pk = :pk",
                           ExpressionAttributeValues={":pk": {"S": "acme"}})["Items"]  # fmt: skip
    chain = [i for i in items if int(i["chain"]["N"]) == shard]
    newest, before = chain[-1], json.loads(chain[-2]["rec"]["S"])["link"]
    dynamodb.delete_item(TableName=settings.audit_table, Key={"pk": newest["pk"], "sk": newest["sk"]})
    dynamodb.put_item(TableName=settings.timeline_table, Item={
        "pk": {"S": "acme#SETTINGS"}, "sk": {"S": f"AUDITCHAIN#{shard}"},
        "seq": {"N": str(before["seq"])}, "digest": {"S": before["digest"]}})  # fmt: skip

    found = service.proof.verify_tenant("acme")
    assert not found.verified and found.first_break.kind == "truncated" and found.first_break.shard == shard
    assert found.first_break.position == head.seq


def test_given_a_deployment_when_verified_from_the_command_line_then_it_reads_its_tables_and_checkpoint(
    service, aws_resources, monkeypatch, capsys
):
    from episodic.entrypoints.cli.main import main

    service.writes.remember(AGENT, proposal(summary="Deployed build 7 to staging"))
    service.proof.checkpoint()
    settings = aws_resources["settings"]
    environment = {
        "EPISODIC_TIMELINE_TABLE": settings.timeline_table,
        "EPISODIC_AUDIT_TABLE": settings.audit_table,
        "EPISODIC_ARCHIVE_BUCKET": settings.archive_bucket,
        "EPISODIC_AUDIT_HEADS_BUCKET": BUCKET,
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert main(["audit", "verify", "--backend", "aws", "--tenant", "acme"]) == 0
    assert "verified" in capsys.readouterr().out

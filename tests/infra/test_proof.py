"""The audit proof and memory events in the CDK app: the checkpoint bucket keeps every version
under Object Lock and nobody may bypass, shorten or lift it; the checkpoint function may only add
objects; the stream function reads the audit table's stream and may put events on the stack's bus."""

from __future__ import annotations

import json

from infra.components.proof import LOCK_BREAKERS


def _list(value):
    return value if isinstance(value, list) else [value]


def test_the_checkpoint_bucket_locks_every_version_for_the_configured_retention(dev, prod):
    for synth in (dev, prod):
        bucket = synth.template["Resources"][synth.logical_id(synth.stack.proof.bucket)]["Properties"]
        assert bucket["ObjectLockEnabled"] is True
        rule = bucket["ObjectLockConfiguration"]["Rule"]["DefaultRetention"]
        assert rule == {"Mode": "GOVERNANCE", "Days": synth.stack.config.audit_heads_retention_days}
        assert bucket["VersioningConfiguration"]["Status"] == "Enabled"
        assert bucket["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True


def test_nobody_may_bypass_shorten_or_lift_a_checkpoints_retention(dev):
    [policy] = [p["Properties"]["PolicyDocument"] for p in dev.resources("AWS::S3::BucketPolicy").values()
                if p["Properties"]["Bucket"] == dev.ref(dev.stack.proof.bucket)]  # fmt: skip
    denied = [s for s in policy["Statement"] if s["Effect"] == "Deny" and s.get("Sid") == "CheckpointsStayLocked"]
    assert denied and set(_list(denied[0]["Action"])) == set(LOCK_BREAKERS) and denied[0]["Principal"] == {"AWS": "*"}
    for name, statement in dev.policy_statements():
        if statement["Effect"] == "Allow":
            assert not set(_list(statement["Action"])) & set(LOCK_BREAKERS), name


def test_the_checkpoint_function_may_only_add_objects_to_the_bucket(dev):
    bucket = dev.logical_id(dev.stack.proof.bucket)
    for name, function in dev.stack.functions.items():
        touching = {a for s in dev.statements_of(function.role) if s["Effect"] == "Allow"
                    for r in _list(s["Resource"]) if bucket in json.dumps(r)
                    for a in _list(s["Action"])}  # fmt: skip
        assert touching == ({"s3:PutObject"} if name == "AuditCheckpoint" else set()), name
    environment = dev.template["Resources"][dev.logical_id(dev.stack.proof.function.function)]["Properties"]
    assert environment["Environment"]["Variables"]["EPISODIC_AUDIT_HEADS_BUCKET"] == dev.ref(dev.stack.proof.bucket)


def test_the_stream_function_reads_both_streams_and_tells_the_stacks_bus(dev):
    stream = dev.stack.stream.function.function
    mappings = [m["Properties"] for m in dev.resources("AWS::Lambda::EventSourceMapping").values()
                if m["Properties"]["FunctionName"] == dev.ref(stream)]  # fmt: skip
    sources = {m["EventSourceArn"]["Fn::GetAtt"][0] for m in mappings}
    assert sources == {dev.logical_id(dev.stack.data.timeline), dev.logical_id(dev.stack.data.audit)}
    assert all(m["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in mappings)
    statements = dev.statements_of(dev.stack.stream.function.role)
    bus = dev.arn(dev.stack.ingestion.bus)
    assert any("events:PutEvents" in _list(s["Action"]) and bus in _list(s["Resource"]) for s in statements)
    variables = dev.template["Resources"][dev.logical_id(stream)]["Properties"]["Environment"]["Variables"]
    assert variables["EPISODIC_EVENT_BUS"] == dev.ref(dev.stack.ingestion.bus)
    audit = dev.template["Resources"][dev.logical_id(dev.stack.data.audit)]["Properties"]
    assert audit["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}

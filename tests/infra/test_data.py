"""The stateful resources: tables exactly as tables.py defines them, encrypted, recoverable,
retained; an append-only audit table; a private, versioned, KMS-encrypted archive."""

from __future__ import annotations

import json

from episodic.adapters.dynamodb import tables
from episodic.adapters.opensearch.schema import MIN_VERSION
from infra.components.data import AUDIT_FORBIDDEN


def _table(dev, construct):
    return dev.template["Resources"][dev.logical_id(construct)]


def _comparable(definition):
    """The parts of a create_table definition CloudFormation keeps, order-insensitive."""
    return {
        "attributes": sorted((a["AttributeName"], a["AttributeType"]) for a in definition["AttributeDefinitions"]),
        "keys": definition["KeySchema"],
        "indexes": sorted(
            (i["IndexName"], json.dumps(i["KeySchema"]), json.dumps(i["Projection"], sort_keys=True))
            for i in definition["GlobalSecondaryIndexes"]
        ),
    }


def test_the_tables_have_exactly_the_keys_and_indexes_of_tables_py(dev):
    timeline = _table(dev, dev.stack.data.timeline)["Properties"]
    audit = _table(dev, dev.stack.data.audit)["Properties"]
    assert _comparable(timeline) == _comparable(tables.timeline_table_definition("x"))
    assert _comparable(audit) == _comparable(tables.audit_table_definition("x"))


def test_both_tables_are_on_demand_recoverable_encrypted_with_the_data_key_and_protected(dev):
    key = dev.arn(dev.stack.data.key)
    for construct in (dev.stack.data.timeline, dev.stack.data.audit):
        table = _table(dev, construct)
        props = table["Properties"]
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
        assert props["SSESpecification"] == {"KMSMasterKeyId": key, "SSEEnabled": True, "SSEType": "KMS"}
        assert props["DeletionProtectionEnabled"] is True
        assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"


def test_the_timeline_expires_items_by_ttl_and_streams_new_and_old_images(dev):
    props = _table(dev, dev.stack.data.timeline)["Properties"]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert props["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}


def test_the_audit_table_denies_every_change_and_delete_to_everyone_in_its_own_policy(dev):
    props = _table(dev, dev.stack.data.audit)["Properties"]
    assert "TimeToLiveSpecification" not in props
    [statement] = props["ResourcePolicy"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Principal"] == {"AWS": "*"}
    assert {"dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"} <= set(statement["Action"])


def test_every_service_role_carries_the_append_only_deny_and_none_is_allowed_to_change_the_audit(dev):
    policy_id = dev.logical_id(dev.stack.data.audit_append_only)
    [statement] = dev.template["Resources"][policy_id]["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny"
    assert set(statement["Action"]) == set(AUDIT_FORBIDDEN)
    roles = [f.role for f in dev.stack.functions.values()] + [dev.stack.tenancy.role]
    for role in roles:
        attached = dev.template["Resources"][dev.logical_id(role)]["Properties"]["ManagedPolicyArns"]
        assert {"Ref": policy_id} in attached, role.node.path
    audit = dev.arn(dev.stack.data.audit)
    for name, statement in dev.policy_statements():
        if statement["Effect"] != "Allow":
            continue
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if audit in resources:
            assert not set(actions) & set(AUDIT_FORBIDDEN), name


def test_the_data_key_rotates_and_is_retained(dev):
    key = dev.template["Resources"][dev.logical_id(dev.stack.data.key)]
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"


def test_the_archive_is_private_versioned_kms_encrypted_tls_only_and_logged(dev):
    data = dev.stack.data
    bucket = dev.template["Resources"][dev.logical_id(data.archive)]
    props = bucket["Properties"]
    [rule] = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"KMSMasterKeyID": dev.arn(data.key), "SSEAlgorithm": "aws:kms"}
    assert rule["BucketKeyEnabled"] is True
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["LoggingConfiguration"]["DestinationBucketName"] == dev.ref(data.access_logs)
    assert bucket["DeletionPolicy"] == "Retain"
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in dev.resources("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == dev.ref(data.archive)
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for statements in policies
        for s in statements
    )


def test_the_archive_moves_to_colder_classes_that_restore_can_still_read_synchronously(dev):
    props = dev.template["Resources"][dev.logical_id(dev.stack.data.archive)]["Properties"]
    transitions = [t for rule in props["LifecycleConfiguration"]["Rules"] for t in rule.get("Transitions", [])]
    assert [t["StorageClass"] for t in transitions] == ["STANDARD_IA", "GLACIER_IR"]


def test_every_stage_deploys_an_opensearch_version_the_recall_adapter_accepts(dev, prod):
    for synthesised in (dev, prod):
        domain = synthesised.template["Resources"][synthesised.logical_id(synthesised.stack.search.cfn)]
        engine, _, version = domain["Properties"]["EngineVersion"].partition("_")
        assert engine == "OpenSearch"
        assert tuple(int(part) for part in version.split(".")[:2]) >= MIN_VERSION

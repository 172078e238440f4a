"""The Lambda functions: runtime, tracing, logs, handlers that exist, environments that
``Settings.from_env`` accepts, event sources that isolate failures, queues with a way out."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from episodic.application.settings import Settings

# Variables the handlers read themselves, beyond Settings' fields.
HANDLER_VARIABLES = {"EPISODIC_BACKEND", "EPISODIC_INGEST_MAPPING", "EPISODIC_SUMMARY_MODEL_ID"}
AUTHORIZER_VARIABLES = {
    "EPISODIC_JWT_ALGORITHM",
    "EPISODIC_JWT_ISSUER",
    "EPISODIC_JWT_AUDIENCE",
    "EPISODIC_JWT_TENANT_CLAIM",
    "EPISODIC_JWT_ROLE_CLAIM",
    "EPISODIC_JWT_ACTORS_CLAIM",
    "EPISODIC_JWT_SECRET_ARN",
    "EPISODIC_JWT_JWKS_URL",
}


def _functions(synth):
    return {
        name: synth.template["Resources"][synth.logical_id(f.function)] for name, f in synth.stack.functions.items()
    }


def _plain_environment(variables):
    """Tokens (table names, ARNs) become placeholder strings, as they would be real strings in Lambda."""
    return {k: v if isinstance(v, str) else "resolved-at-deploy" for k, v in variables.items()}


def test_every_function_is_python_313_on_arm64_traced_with_json_logs_in_its_own_group(dev):
    for name, function in _functions(dev).items():
        props = function["Properties"]
        assert props["Runtime"] == "python3.13", name
        assert props["Architectures"] == ["arm64"], name
        assert props["TracingConfig"] == {"Mode": "Active"}, name
        assert props["LoggingConfig"]["LogFormat"] == "JSON", name
        group = dev.template["Resources"][props["LoggingConfig"]["LogGroup"]["Ref"]]["Properties"]
        assert group["RetentionInDays"] == dev.stack.config.log_retention_days, name
        assert "KmsKeyId" in group, name
        layer = dev.stack.code.auth_layer if name == "Authorizer" else dev.stack.code.layer
        assert props["Layers"] == [dev.ref(layer)], name  # the authorizer imports nothing of the core


def test_every_function_has_a_role_of_its_own_without_aws_managed_policies(dev):
    roles = [dev.logical_id(f.role) for f in dev.stack.functions.values()]
    assert len(set(roles)) == len(roles)
    for role in roles:
        for arn in dev.template["Resources"][role]["Properties"].get("ManagedPolicyArns", []):
            assert "Ref" in arn, f"{role} has an AWS-managed policy {arn}"


def test_every_handler_names_a_function_of_the_functions_package(dev):
    for name, function in _functions(dev).items():
        module, attribute = function["Properties"]["Handler"].rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), attribute)), name


def test_every_service_environment_is_what_the_settings_and_handlers_read(dev):
    known = {f"EPISODIC_{field.upper()}" for field in Settings.model_fields} | HANDLER_VARIABLES
    for name, function in _functions(dev).items():
        variables = function["Properties"]["Environment"]["Variables"]
        episodic = {k for k in variables if k.startswith("EPISODIC_")}
        if name == "Authorizer":
            assert episodic <= AUTHORIZER_VARIABLES
            continue
        assert episodic <= known, f"{name}: {episodic - known} is read by nobody"
        assert variables["EPISODIC_BACKEND"] == "aws"
        assert variables["EPISODIC_EMBEDDER"] == "titan"
        settings = Settings.from_env(_plain_environment(variables))
        assert settings.titan_dimensions == dev.stack.config.titan_dimensions
        assert settings.opensearch_service == "es"
        for required in (
            "EPISODIC_TIMELINE_TABLE",
            "EPISODIC_AUDIT_TABLE",
            "EPISODIC_ARCHIVE_BUCKET",
            "EPISODIC_ARCHIVE_KMS_KEY_ID",
            "EPISODIC_REVIEW_STATE_MACHINE_ARN",
            "EPISODIC_OPENSEARCH_ENDPOINT",
        ):
            assert required in variables, f"{name} lacks {required}"


def test_only_the_summariser_names_a_summary_model_and_only_ingestion_the_mapping(dev):
    for name, function in _functions(dev).items():
        variables = function["Properties"]["Environment"]["Variables"]
        assert ("EPISODIC_SUMMARY_MODEL_ID" in variables) == (name == "SummariseActor"), name
        assert ("EPISODIC_INGEST_MAPPING" in variables) == (name == "Ingest"), name


def test_the_handlers_asset_ships_the_functions_package_and_the_ingestion_mapping_it_points_to(dev):
    [asset] = [d for d in dev.outdir.glob("asset.*") if (d / "functions" / "api.py").exists()]
    mapping = _functions(dev)["Ingest"]["Properties"]["Environment"]["Variables"]["EPISODIC_INGEST_MAPPING"]
    shipped = asset / Path(mapping).relative_to("/var/task")
    assert json.loads(shipped.read_text()) == json.loads(dev.stack.config.ingest_mapping_path.read_text())
    assert (asset / "functions" / "authorizer.py").exists()
    assert not list(asset.rglob("__pycache__"))


def test_the_layer_ships_the_core_under_python_for_lambdas_import_path(dev):
    [asset] = [d for d in dev.outdir.glob("asset.*") if (d / "python" / "episodic").is_dir()]
    assert (asset / "python" / "episodic" / "adapters" / "dynamodb" / "tables.py").exists()
    data = asset / "python" / "episodic" / "domain" / "policy" / "data"
    assert (data / "chatter_model.json").exists() and not (data / "chatter_train.jsonl").exists()
    assert not (asset / "python" / "episodic" / "entrypoints" / "cli").exists()  # local-only: not shipped
    for built in (dev.stack.code.layer, dev.stack.code.auth_layer):
        layer = dev.template["Resources"][dev.logical_id(built)]["Properties"]
        assert layer["CompatibleRuntimes"] == ["python3.13"]
        assert layer["CompatibleArchitectures"] == ["arm64"]


def test_the_stream_mapping_bisects_reports_item_failures_retries_a_bounded_number_of_times_and_parks_failures(dev):
    [mapping] = [
        m["Properties"]
        for m in dev.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == dev.arn(dev.stack.data.timeline, "StreamArn")
    ]
    assert mapping["FunctionName"] == dev.ref(dev.stack.functions["Stream"].function)
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert 0 < mapping["MaximumRetryAttempts"] <= 10
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == dev.arn(dev.stack.stream.failures)


def test_the_queue_consumers_report_item_failures_and_ingestion_concurrency_is_capped(dev):
    queues = {
        "Ingest": dev.stack.ingestion.queue,
        "ReviewRequests": dev.stack.workflows.review_queue,
    }
    for name, queue in queues.items():
        [mapping] = [
            m["Properties"]
            for m in dev.resources("AWS::Lambda::EventSourceMapping").values()
            if m["Properties"]["EventSourceArn"] == dev.arn(queue)
        ]
        assert mapping["FunctionName"] == dev.ref(dev.stack.functions[name].function)
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert mapping["ScalingConfig"]["MaximumConcurrency"] >= 2
    ingest_visibility = dev.template["Resources"][dev.logical_id(dev.stack.ingestion.queue)]["Properties"]
    timeout = _functions(dev)["Ingest"]["Properties"]["Timeout"]
    assert ingest_visibility["VisibilityTimeout"] >= 6 * timeout


def test_reserved_concurrency_guards_bedrock_and_the_sweep(dev):
    functions = _functions(dev)
    assert functions["SummariseActor"]["Properties"]["ReservedConcurrentExecutions"] >= 10  # the Map's concurrency
    assert functions["Forget"]["Properties"]["ReservedConcurrentExecutions"] == 1


def test_every_queue_is_encrypted_tls_only_and_every_work_queue_has_a_dead_letter_queue(dev):
    failure_queues = {
        dev.logical_id(q)
        for q in (
            dev.stack.stream.failures,
            dev.stack.delivery_failures,
            dev.stack.ingestion.dead_letters,
            dev.stack.workflows.review_dead_letters,
        )
    }
    tls_only = {
        ref["Ref"]
        for policy in dev.resources("AWS::SQS::QueuePolicy").values()
        for ref in policy["Properties"]["Queues"]
        if any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
        )
    }
    for name, queue in dev.resources("AWS::SQS::Queue").items():
        props = queue["Properties"]
        assert "KmsMasterKeyId" in props or props.get("SqsManagedSseEnabled") is True, name
        assert name in tls_only, name
        if name not in failure_queues:
            assert props["RedrivePolicy"]["maxReceiveCount"] <= 10, name
            assert props["KmsMasterKeyId"] == dev.arn(dev.stack.data.key), name

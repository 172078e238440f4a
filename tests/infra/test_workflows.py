"""The state machines as written in statemachines/, their substitutions, logging and tracing;
the schedules that start them; the EventBridge rules generated from the ingestion mapping."""

from __future__ import annotations

import json
import re

import pytest

from infra.components.ingestion import mapped_sources
from infra.components.statemachines import STATEMACHINES

PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


@pytest.fixture(scope="module")
def machines(dev):
    return {
        name: (machine, dev.template["Resources"][dev.logical_id(machine)]["Properties"])
        for name, machine in dev.stack.workflows.machines.items()
    }


def test_each_machine_is_deployed_from_its_file_unchanged(dev, machines):
    for name, (_, props) in machines.items():
        key = props["DefinitionS3Location"]["Key"]
        [asset] = list(dev.outdir.glob(f"asset.{key}"))
        assert asset.read_text() == (STATEMACHINES / f"{name}.asl.json").read_text(), name


def test_every_placeholder_has_a_substitution_and_no_substitution_is_unused(machines):
    for name, (_, props) in machines.items():
        placeholders = set(PLACEHOLDER.findall((STATEMACHINES / f"{name}.asl.json").read_text()))
        assert placeholders == set(props["DefinitionSubstitutions"]), name


def test_the_review_timeout_comes_from_the_configuration_and_makes_valid_json(dev, machines):
    _, props = machines["review"]
    seconds = props["DefinitionSubstitutions"]["ReviewTimeoutSeconds"]
    assert int(seconds) == int(dev.stack.config.review_timeout_days * 86400)
    text = (STATEMACHINES / "review.asl.json").read_text().replace("${ReviewTimeoutSeconds}", seconds)
    assert json.loads(PLACEHOLDER.sub("x", text))["States"]["RequestReview"]["TimeoutSeconds"] == int(seconds)


def test_every_machine_logs_all_events_without_execution_data_and_is_traced(machines):
    for name, (_, props) in machines.items():
        logging = props["LoggingConfiguration"]
        assert logging["Level"] == "ALL", name
        assert logging["IncludeExecutionData"] is False, name
        assert logging["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"], name
        assert props["TracingConfiguration"] == {"Enabled": True}, name
        assert props["StateMachineType"] == "STANDARD", name


def test_each_machine_may_invoke_exactly_the_functions_it_names(dev, machines):
    expected = {
        "review": ["ExpireReview"],
        "summarise": ["FindBusyActors", "SummariseActor"],
        "forget": ["Forget"],
    }
    for name, (machine, _) in machines.items():
        invoked = [
            resource
            for statement in dev.statements_of(machine.role)
            if "lambda:InvokeFunction" in statement["Action"]
            for resource in (
                statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            )
        ]
        assert invoked == [dev.arn(dev.stack.functions[f].function) for f in expected[name]], name
    review_role = dev.statements_of(machines["review"][0].role)
    assert any(
        s["Action"] == "sqs:SendMessage" and s["Resource"] == dev.arn(dev.stack.workflows.review_queue)
        for s in review_role
    )


def test_the_review_machine_arn_the_functions_use_is_the_machines_own(dev, machines):
    _, props = machines["review"]
    env = dev.template["Resources"][dev.logical_id(dev.stack.functions["Api"].function)]["Properties"]["Environment"]
    arn = json.dumps(env["Variables"]["EPISODIC_REVIEW_STATE_MACHINE_ARN"])
    assert f':stateMachine:{props["StateMachineName"]}"' in arn


def test_schedules_start_summarisation_every_24_hours_and_the_decay_sweep_daily(dev):
    schedules = {
        s["Properties"]["Target"]["Arn"].get("Ref") or s["Properties"]["Target"]["Arn"]["Fn::GetAtt"][0]: s[
            "Properties"
        ]
        for s in dev.resources("AWS::Scheduler::Schedule").values()
    }
    summarise = schedules[dev.logical_id(dev.stack.workflows.machines["summarise"])]
    forget = schedules[dev.logical_id(dev.stack.workflows.machines["forget"])]
    assert summarise["ScheduleExpression"] == "rate(24 hours)"
    assert re.fullmatch(r"cron\(\d+ \d+ \* \* \? \*\)", forget["ScheduleExpression"])
    for schedule in (summarise, forget):
        assert schedule["Target"]["Input"] == "{}"
        assert schedule["Target"]["DeadLetterConfig"]["Arn"] == dev.arn(dev.stack.delivery_failures)
    checkpoint = schedules[dev.logical_id(dev.stack.proof.function.function)]
    assert checkpoint["ScheduleExpression"] == "rate(1 hour)"
    assert checkpoint["Target"]["DeadLetterConfig"]["Arn"] == dev.arn(dev.stack.delivery_failures)


def test_one_rule_per_mapped_source_matches_only_its_detail_types_into_the_ingest_queue(dev):
    expected = mapped_sources(dev.stack.config.ingest_mapping_path)
    rules = {}
    for rule in dev.resources("AWS::Events::Rule").values():
        props = rule["Properties"]
        assert props["EventBusName"] == dev.ref(dev.stack.ingestion.bus)
        [target] = props["Targets"]
        assert target["Arn"] == dev.arn(dev.stack.ingestion.queue)
        assert target["DeadLetterConfig"]["Arn"] == dev.arn(dev.stack.delivery_failures)
        [source] = props["EventPattern"]["source"]
        rules[source] = sorted(props["EventPattern"]["detail-type"])
    assert rules == expected
    assert set(expected) >= {"acme.helpdesk", "globex.shop"}

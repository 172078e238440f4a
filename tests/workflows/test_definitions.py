"""Static checks of every Amazon States Language definition in ``statemachines/``.

A small validator written here (no ASL linter is a dependency): JSON after definition
substitution, only documented ``${...}`` placeholders, transitions that name existing states,
every state reachable, Next/End where required, HeartbeatSeconds below TimeoutSeconds, and
every path-ish field a JSONPath that jsonpath-ng parses (``$``, ``$$`` context paths and
``States.*(...)`` intrinsic functions allowed). Nested machines (Map ``ItemProcessor`` /
``Iterator``, Parallel ``Branches``) are checked recursively with their own state scope.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from jsonpath_ng.ext import parse as parse_jsonpath

STATEMACHINES = Path(__file__).resolve().parents[2] / "statemachines"
DEFINITIONS = sorted(STATEMACHINES.glob("*.asl.json"))

# The definition substitutions each machine may use (documented in statemachines/README.md),
# with the sample value the validator puts in their place.
DOCUMENTED_PLACEHOLDERS: dict[str, dict[str, str]] = {
    "review.asl.json": {
        "ReviewQueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/review",
        "ReviewTimeoutSeconds": "604800",
        "ExpireReviewFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:expire-review",
    },
    "summarise.asl.json": {
        "FindBusyActorsFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:find-busy-actors",
        "SummariseActorFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:summarise-actor",
    },
    "forget.asl.json": {
        "ForgetFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:forget",
    },
}

PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
TERMINAL_TYPES = {"Succeed", "Fail"}
KNOWN_TYPES = {"Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map"}
# AWS documents these for Distributed Map only; in INLINE mode any failed iteration fails the Map.
DISTRIBUTED_ONLY = {
    "ItemReader",
    "ItemBatcher",
    "ResultWriter",
    "Label",
    "ToleratedFailurePercentage",
    "ToleratedFailurePercentagePath",
    "ToleratedFailureCount",
    "ToleratedFailureCountPath",
}
PATH_FIELDS = ("InputPath", "OutputPath", "ResultPath", "ItemsPath")
TEMPLATE_FIELDS = ("Parameters", "ResultSelector", "ItemSelector")
LAMBDA_SERVICE_ERRORS = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
)
INTRINSIC = re.compile(r"^States\.[A-Za-z0-9]+\((?P<args>.*)\)$", re.DOTALL)


# --- the validator ------------------------------------------------------------------------


def jsonpath_problem(expression: object) -> str | None:
    """None if ``expression`` is a JSONPath, a ``$$`` context path or an intrinsic function."""
    if not isinstance(expression, str):
        return f"{expression!r} is not a string"
    intrinsic = INTRINSIC.match(expression)
    if intrinsic:
        for argument in _split_arguments(intrinsic["args"]):
            if argument.startswith(("$", "States.")) and (problem := jsonpath_problem(argument)):
                return f"{expression!r}: {problem}"
        return None
    path = expression[1:] if expression.startswith("$$") else expression
    if not path.startswith("$"):
        return f"{expression!r} does not start with '$'"
    try:
        parse_jsonpath(path)
    except Exception as error:  # jsonpath-ng raises plain Exception for some lexer errors
        return f"{expression!r} is not JSONPath ({error})"
    return None


def _split_arguments(arguments: str) -> list[str]:
    """Top-level comma split of an intrinsic's arguments (quotes and nested calls respected)."""
    parts, depth, quoted, current = [], 0, False, ""
    for index, char in enumerate(arguments):
        escaped = index > 0 and arguments[index - 1] == "\\"
        if char == "'" and not escaped:
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            parts.append(current.strip())
            current = ""
            continue
        current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def _template_paths(template: object, where: str) -> Iterator[tuple[str, object]]:
    """Every ``key.$`` value in a payload template (Payload, MessageBody, ... at any depth)."""
    if isinstance(template, dict):
        for key, value in template.items():
            if key.endswith(".$"):
                yield f"{where}.{key}", value
            else:
                yield from _template_paths(value, f"{where}.{key}")
    elif isinstance(template, list):
        for index, value in enumerate(template):
            yield from _template_paths(value, f"{where}[{index}]")


def _transitions(state: dict) -> Iterator[tuple[str, str]]:
    """(field, target) for every transition out of a state."""
    if "Next" in state:
        yield "Next", state["Next"]
    if "Default" in state:
        yield "Default", state["Default"]
    for index, rule in enumerate(state.get("Choices", [])):
        if "Next" in rule:
            yield f"Choices[{index}].Next", rule["Next"]
    for index, catcher in enumerate(state.get("Catch", [])):
        yield f"Catch[{index}].Next", catcher.get("Next")


def _choice_paths(rule: dict, where: str) -> Iterator[tuple[str, object]]:
    if "Variable" in rule:
        yield f"{where}.Variable", rule["Variable"]
    for key, value in rule.items():
        if key.endswith("Path") and key != "Variable":
            yield f"{where}.{key}", value
    for combinator in ("And", "Or"):
        for index, nested in enumerate(rule.get(combinator, [])):
            yield from _choice_paths(nested, f"{where}.{combinator}[{index}]")
    if isinstance(rule.get("Not"), dict):
        yield from _choice_paths(rule["Not"], f"{where}.Not")


def validate_machine(machine: dict, scope: str = "") -> list[str]:
    """Problems of one (possibly nested) machine: ``{"StartAt", "States"}``."""
    problems: list[str] = []
    states: dict = machine.get("States") or {}
    start = machine.get("StartAt")
    if not states:
        return [f"{scope or '<root>'}: no States"]
    if start not in states:
        problems.append(f"{scope or '<root>'}: StartAt {start!r} is not a state")

    for name, state in states.items():
        where = f"{scope}{name}"
        kind = state.get("Type")
        if kind not in KNOWN_TYPES:
            problems.append(f"{where}: unknown Type {kind!r}")
        for field, target in _transitions(state):
            if target not in states:
                problems.append(f"{where}: {field} {target!r} names no state")
        if kind == "Choice":
            if "Next" in state or "End" in state:
                problems.append(f"{where}: a Choice state takes neither Next nor End")
            if not state.get("Choices"):
                problems.append(f"{where}: a Choice state needs Choices")
        elif kind not in TERMINAL_TYPES and ("Next" in state) == bool(state.get("End")):
            problems.append(f"{where}: needs exactly one of Next or End")

        timeout, heartbeat = state.get("TimeoutSeconds"), state.get("HeartbeatSeconds")
        if isinstance(timeout, int) and isinstance(heartbeat, int) and heartbeat >= timeout:
            problems.append(f"{where}: HeartbeatSeconds must be smaller than TimeoutSeconds")

        paths = [(f"{where}.{field}", state[field]) for field in PATH_FIELDS if state.get(field) is not None]
        for field in TEMPLATE_FIELDS:
            paths.extend(_template_paths(state.get(field), f"{where}.{field}"))
        for index, rule in enumerate(state.get("Choices", [])):
            paths.extend(_choice_paths(rule, f"{where}.Choices[{index}]"))
        for index, catcher in enumerate(state.get("Catch", [])):
            if catcher.get("ResultPath") is not None:
                paths.append((f"{where}.Catch[{index}].ResultPath", catcher["ResultPath"]))
        for location, expression in paths:
            if problem := jsonpath_problem(expression):
                problems.append(f"{location}: {problem}")

        processor = state.get("ItemProcessor") or state.get("Iterator") or {}
        if kind == "Map" and processor.get("ProcessorConfig", {}).get("Mode", "INLINE") == "INLINE":
            for field in sorted(DISTRIBUTED_ONLY & set(state)):
                problems.append(f"{where}: {field} is a Distributed Map field, not for INLINE mode")

        for key in ("ItemProcessor", "Iterator"):
            if key in state:
                problems.extend(validate_machine(state[key], f"{where}/{key}/"))
        for index, branch in enumerate(state.get("Branches", [])):
            problems.extend(validate_machine(branch, f"{where}/Branches[{index}]/"))

    reachable, frontier = set(), [start] if start in states else []
    while frontier:
        name = frontier.pop()
        if name in reachable or name not in states:
            continue
        reachable.add(name)
        frontier.extend(target for _, target in _transitions(states[name]))
    for name in states:
        if name not in reachable:
            problems.append(f"{scope}{name}: unreachable from StartAt {start!r}")
    return problems


def validate_definition(text: str, placeholders: dict[str, str]) -> list[str]:
    """Problems of a definition file's text, given its documented placeholders and sample values."""
    problems = [
        f"placeholder ${{{name}}} is not documented for this machine"
        for name in sorted(set(PLACEHOLDER.findall(text)) - set(placeholders))
    ]
    substituted = PLACEHOLDER.sub(lambda match: placeholders.get(match[1], "0"), text)
    try:
        machine = json.loads(substituted)
    except json.JSONDecodeError as error:
        return [*problems, f"not JSON after substitution: {error}"]
    if machine.get("QueryLanguage", "JSONPath") != "JSONPath":
        problems.append("QueryLanguage must be JSONPath (the default)")
    return problems + validate_machine(machine)


# --- the suite ----------------------------------------------------------------------------


def test_given_the_statemachines_folder_when_listed_then_every_machine_has_documented_placeholders():
    assert {path.name for path in DEFINITIONS} == set(DOCUMENTED_PLACEHOLDERS)
    readme = (STATEMACHINES / "README.md").read_text()
    for placeholders in DOCUMENTED_PLACEHOLDERS.values():
        for name in placeholders:
            assert f"${{{name}}}" in readme, f"${{{name}}} is not in statemachines/README.md"


@pytest.mark.parametrize("path", DEFINITIONS, ids=lambda path: path.name)
def test_given_a_definition_when_validated_then_it_has_no_problems(path: Path):
    assert validate_definition(path.read_text(), DOCUMENTED_PLACEHOLDERS.get(path.name, {})) == []


@pytest.mark.parametrize("path", DEFINITIONS, ids=lambda path: path.name)
def test_given_a_definition_when_its_lambda_tasks_are_read_then_they_use_the_optimised_integration(path: Path):
    text = PLACEHOLDER.sub(lambda match: DOCUMENTED_PLACEHOLDERS[path.name].get(match[1], "0"), path.read_text())

    def tasks(machine: dict) -> Iterator[dict]:
        for state in machine["States"].values():
            if state["Type"] == "Task":
                yield state
            for key in ("ItemProcessor", "Iterator"):
                if key in state:
                    yield from tasks(state[key])
            for branch in state.get("Branches", []):
                yield from tasks(branch)

    for task in tasks(json.loads(text)):
        if "lambda" in task["Resource"]:
            assert task["Resource"] == "arn:aws:states:::lambda:invoke"
            assert task["Parameters"]["FunctionName"].startswith("arn:aws:lambda:")
            assert any(value.startswith("$.Payload") for value in task["ResultSelector"].values())
            retried = {error for retrier in task.get("Retry", []) for error in retrier["ErrorEquals"]}
            assert set(LAMBDA_SERVICE_ERRORS) <= retried, f"{task} does not retry Lambda service errors"


def test_given_a_broken_definition_when_validated_then_every_problem_is_reported():
    broken = json.dumps(
        {
            "StartAt": "First",
            "States": {
                "First": {"Type": "Pass", "Next": "Nowhere"},
                "Orphan": {"Type": "Succeed"},
                "Fan": {
                    "Type": "Map",
                    "ItemsPath": "$.items[",
                    "ToleratedFailurePercentage": 100,
                    "ItemProcessor": {
                        "StartAt": "Inner",
                        "States": {"Inner": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke"}},
                    },
                    "End": True,
                },
            },
        }
    )

    problems = validate_definition(broken, {})

    assert "First: Next 'Nowhere' names no state" in problems
    assert "Orphan: unreachable from StartAt 'First'" in problems
    assert "Fan: unreachable from StartAt 'First'" in problems
    assert "Fan/ItemProcessor/Inner: needs exactly one of Next or End" in problems
    assert any(problem.startswith("Fan.ItemsPath: '$.items[' is not JSONPath") for problem in problems)
    assert "Fan: ToleratedFailurePercentage is a Distributed Map field, not for INLINE mode" in problems


def test_given_undocumented_placeholders_and_bad_paths_when_validated_then_they_are_reported():
    text = """{
      "StartAt": "Call",
      "States": {
        "Call": {
          "Type": "Task",
          "Resource": "arn:aws:states:::lambda:invoke",
          "Parameters": {"FunctionName": "${Unknown}", "Payload": {"a.$": "a.b", "b.$": "States.Format('{}', $.x y)"}},
          "TimeoutSeconds": ${Timeout},
          "HeartbeatSeconds": ${Timeout},
          "End": true
        }
      }
    }"""

    problems = validate_definition(text, {"Timeout": "60"})

    assert "placeholder ${Unknown} is not documented for this machine" in problems
    assert "Call.Parameters.Payload.a.$: 'a.b' does not start with '$'" in problems
    assert any(problem.startswith('Call.Parameters.Payload.b.$: "States.Format(') for problem in problems)
    assert "Call: HeartbeatSeconds must be smaller than TimeoutSeconds" in problems


@pytest.mark.parametrize(
    "expression",
    ["$", "$.a.b[0]", "$$.Task.Token", "$$.Map.Item.Value", "States.Format('{} {}', $.a, States.UUID())"],
)
def test_given_valid_path_expressions_when_checked_then_they_pass(expression: str):
    assert jsonpath_problem(expression) is None

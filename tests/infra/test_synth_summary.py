"""`make synth` ends with a one-line summary per stack."""

from infra.app import synth_summary


def test_given_the_synthesised_stack_when_summarised_then_resources_and_the_nag_verdict_are_told(dev):
    line = synth_summary(dev.stack.stack_name, dev.template)
    assert line.startswith(f"{dev.stack.stack_name}: {len(dev.template['Resources'])} resources (")
    assert "CloudWatch::Alarm" in line and "cdk-nag AwsSolutions: no unacknowledged finding" in line
    acknowledged = int(line.rsplit(", ", 1)[1].split()[0])
    assert acknowledged > 0

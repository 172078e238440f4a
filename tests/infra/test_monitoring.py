"""Alarms for every named signal, each notifying the alarm topic, and a dashboard."""

from __future__ import annotations


def _alarms(synth):
    return list(synth.resources("AWS::CloudWatch::Alarm").values())


def _metric_names(alarm):
    props = alarm["Properties"]
    if "MetricName" in props:
        return {props["MetricName"]}
    return {m["MetricStat"]["Metric"]["MetricName"] for m in props.get("Metrics", []) if "MetricStat" in m}


def _dimension_refs(alarm):
    props = alarm["Properties"]
    dimensions = list(props.get("Dimensions", []))
    for metric in props.get("Metrics", []):
        dimensions += metric.get("MetricStat", {}).get("Metric", {}).get("Dimensions", [])
    return [d["Value"] for d in dimensions]


def test_every_alarm_notifies_the_alarm_topic(dev):
    topic = dev.ref(dev.stack.monitoring.topic)
    for alarm in _alarms(dev):
        assert alarm["Properties"]["AlarmActions"] == [topic]


def test_the_named_signals_are_alarmed(dev):
    names = [_metric_names(a) for a in _alarms(dev)]
    flat = set().union(*names)
    assert {
        "5XXError",
        "Latency",
        "IteratorAge",
        "ApproximateNumberOfMessagesVisible",
        "ExecutionsFailed",
        "ApproximateAgeOfOldestMessage",
        "Errors",
        "ClusterStatus.red",
        "FreeStorageSpace",
    } <= flat


def test_every_dead_letter_queue_and_workflow_and_function_has_its_alarm(dev):
    stack = dev.stack
    queues = [
        stack.stream.failures,
        stack.delivery_failures,
        stack.ingestion.dead_letters,
        stack.workflows.review_dead_letters,
    ]
    depth = [a for a in _alarms(dev) if _metric_names(a) == {"ApproximateNumberOfMessagesVisible"}]
    for queue in queues:
        assert any(dev.arn(queue, "QueueName") in _dimension_refs(a) for a in depth), queue.node.path
    failed = [a for a in _alarms(dev) if "ExecutionsFailed" in _metric_names(a)]
    for machine in stack.workflows.machines.values():
        assert any(dev.ref(machine) in _dimension_refs(a) for a in failed), machine.node.path
    errors = [a for a in _alarms(dev) if _metric_names(a) == {"Errors"}]
    for name, function in stack.functions.items():
        # A refused token is a Lambda error by design; authorizer failures show as API 5xx instead.
        alarmed = any(dev.ref(function.function) in _dimension_refs(a) for a in errors)
        assert alarmed == (name != "Authorizer"), name


def test_review_backlog_is_alarmed_on_queue_age_and_on_reviews_expiring_unanswered(dev):
    age = [a for a in _alarms(dev) if _metric_names(a) == {"ApproximateAgeOfOldestMessage"}]
    assert any(dev.arn(dev.stack.workflows.review_queue, "QueueName") in _dimension_refs(a) for a in age)
    expiring = [a for a in _alarms(dev) if _metric_names(a) == {"Invocations"}]
    assert any(dev.ref(dev.stack.functions["ExpireReview"].function) in _dimension_refs(a) for a in expiring)


def test_the_stream_iterator_age_is_alarmed_for_the_stream_function(dev):
    [alarm] = [a for a in _alarms(dev) if _metric_names(a) == {"IteratorAge"}]
    assert dev.ref(dev.stack.functions["Stream"].function) in _dimension_refs(alarm)


def test_the_alarm_topic_is_encrypted_and_a_dashboard_exists(dev):
    topic = dev.template["Resources"][dev.logical_id(dev.stack.monitoring.topic)]["Properties"]
    assert topic["KmsMasterKeyId"]
    [dashboard] = dev.resources("AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == "episodic-dev"

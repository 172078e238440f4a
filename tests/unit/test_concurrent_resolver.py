"""The API's resolver keeps each request's state to its own thread (the local server
resolves requests at once). Both requests below are held inside their route at the same
moment by a barrier: with state shared between threads (Powertools' class attributes), the first
would read the second's event and route arguments after the barrier."""

import threading
from typing import Any

from aws_lambda_powertools.event_handler import Response

from episodic.entrypoints.rest.resolver import ConcurrentRestResolver


def rest_event(path: str, caller: str) -> dict[str, Any]:
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": "GET",
        "headers": {"x-caller": caller},
        "multiValueHeaders": {"x-caller": [caller]},
        "queryStringParameters": None,
        "requestContext": {"requestId": caller, "stage": "$default", "path": path},
        "body": None,
        "isBase64Encoded": False,
    }


def test_given_two_requests_inside_their_routes_at_once_when_each_reads_its_request_then_it_sees_its_own():
    app = ConcurrentRestResolver(enable_validation=True)
    both_inside = threading.Barrier(2, timeout=10)

    @app.get("/echo/<name>")
    def echo(name: str):  # no return annotation: Powertools would try to validate a Response
        before = app.current_event.headers["x-caller"]
        both_inside.wait()  # the other request has now been resolved up to here as well
        after = app.current_event.headers["x-caller"]
        args = app.context["_route_args"]["name"]
        return Response(200, "text/plain", f"{name}|{before}|{after}|{args}")

    bodies: dict[str, str] = {}

    def call(caller: str) -> None:
        bodies[caller] = app.resolve(rest_event(f"/echo/{caller}", caller), None)["body"]

    threads = [threading.Thread(target=call, args=(caller,)) for caller in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)

    assert bodies == {"alice": "alice|alice|alice|alice", "bob": "bob|bob|bob|bob"}


def test_given_no_request_on_this_thread_when_the_event_is_read_then_it_is_refused_not_borrowed():
    app = ConcurrentRestResolver()

    @app.get("/ping")
    def ping():
        return Response(200, "text/plain", "pong")

    app.resolve(rest_event("/ping", "someone"), None)
    try:
        app.current_event  # noqa: B018 - reading it is the test
    except RuntimeError as exc:
        assert "no request" in str(exc)
    else:
        raise AssertionError("an event outside any request must not be readable")


def test_given_a_deferred_route_when_requests_for_it_come_at_once_then_it_is_registered_once_and_serves_both():
    app = ConcurrentRestResolver(enable_validation=True)
    registrations = []

    def register() -> None:
        registrations.append(threading.current_thread().name)

        @app.get("/docs")
        def docs():
            return Response(200, "text/plain", "the docs")

    app.defer("/docs", register)
    assert registrations == []  # nothing is set up until it is asked for

    start = threading.Barrier(4, timeout=10)
    answers: list[tuple[int, str]] = []

    def call() -> None:
        start.wait()
        response = app.resolve(rest_event("/docs", "reader"), None)
        answers.append((response["statusCode"], response["body"]))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)

    assert len(registrations) == 1
    assert answers == [(200, "the docs")] * 4


def test_given_a_deferred_route_when_another_path_is_asked_then_it_stays_unregistered():
    app = ConcurrentRestResolver()
    registrations = []
    app.defer("/docs", lambda: registrations.append(1))

    @app.get("/ping")
    def ping():
        return Response(200, "text/plain", "pong")

    assert app.resolve(rest_event("/ping", "reader"), None)["body"] == "pong"
    assert registrations == []


def test_given_static_and_pattern_rules_when_asked_for_a_paths_methods_then_the_static_rule_wins():
    app = ConcurrentRestResolver()
    app.get("/items/<itemId>")(lambda itemId: None)
    app.delete("/items/<itemId>")(lambda itemId: None)
    app.post("/items/batch")(lambda: None)
    app.route("/items/<itemId>/notes", ["GET", "post"])(lambda itemId: None)

    assert app.methods_for("/items/batch") == ["POST"]  # named as it is: not the pattern's methods
    assert app.methods_for("/items/42") == ["DELETE", "GET"]
    assert app.methods_for("/items/42/notes") == ["GET", "POST"]
    assert app.methods_for("/items/") == [] and app.methods_for("/items/42/other") == [] and app.methods_for("/") == []

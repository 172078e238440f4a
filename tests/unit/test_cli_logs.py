"""CLI output hygiene: log lines go to stderr at WARNING unless ``-v`` asks for more,
so stdout carries only what a command says; ``episodic serve`` keeps a one-line request log."""

from __future__ import annotations

import io
import threading

import httpx
import pytest

from episodic import logs
from episodic.entrypoints.cli.main import main
from episodic.entrypoints.server.http import create_server
from episodic.entrypoints.server.tokens import TokenBook, parse_tokens


@pytest.fixture(autouse=True)
def restore_log_stream(monkeypatch):
    monkeypatch.delenv("POWERTOOLS_LOG_LEVEL", raising=False)
    yield
    logs.LOG_STREAM.target = "stdout"


@pytest.mark.parametrize(("flags", "info_shown"), [([], False), (["-v"], True)])
def test_given_a_cli_command_when_it_logs_then_lines_go_to_stderr_at_the_chosen_level(
    flags, info_shown, tmp_path, capsys
):
    assert main([*flags, "tokens", "list", "--data-dir", str(tmp_path)]) == 0
    logger = logs.service_logger(f"episodic-test-{len(flags)}")  # created after the CLI chose, as its modules are
    logger.info("an info line")
    logger.warning("a warning line")
    out, err = capsys.readouterr()
    assert "an info line" not in out and "a warning line" not in out  # stdout stays the command's own
    assert "a warning line" in err
    assert ("an info line" in err) is info_shown


def test_given_the_levels_when_chosen_then_an_explicit_environment_level_is_kept_without_v():
    assert logs.cli_level(0, {}) == "WARNING"
    assert logs.cli_level(0, {"POWERTOOLS_LOG_LEVEL": "ERROR"}) == "ERROR"
    assert logs.cli_level(1, {"POWERTOOLS_LOG_LEVEL": "ERROR"}) == "INFO"
    assert logs.cli_level(2, {}) == "DEBUG"


class _Log(io.StringIO):
    """A request log a test can wait on: the server writes a request's line after its response,
    so the client may read the answer before the line is there."""

    def __init__(self) -> None:
        super().__init__()
        self._written = threading.Condition()

    def write(self, text: str) -> int:
        with self._written:
            count = super().write(text)
            self._written.notify_all()
        return count

    def wait_for_lines(self, count: int, timeout: float = 10.0) -> list[str]:
        with self._written:
            self._written.wait_for(lambda: len(self.getvalue().splitlines()) >= count, timeout)
            return self.getvalue().splitlines()


def test_given_a_request_log_when_requests_are_served_then_each_is_one_line_without_query_or_token():
    log = _Log()

    def handler(event, context):
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    token = "request-log-token-0001"
    server = create_server("127.0.0.1", 0, TokenBook(parse_tokens(f"{token}=acme:agent"), "test"), handler, log)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        httpx.get(f"{base}/v1/timeline?actorId=sam", headers={"Authorization": f"Bearer {token}"})
        httpx.get(f"{base}/v1/timeline")
        lines = log.wait_for_lines(2)
    finally:
        server.shutdown()
        server.server_close()
    assert [line.split()[1:4] for line in lines] == [["GET", "/v1/timeline", "200"], ["GET", "/v1/timeline", "401"]]
    assert all(line.endswith("ms") for line in lines)
    assert "actorId" not in log.getvalue() and token not in log.getvalue()

"""Where the core's structured logs go: stdout in Lambda (Powertools' default, which CloudWatch
reads), stderr when a person runs a command, so what the command prints for them (results,
tables, tokens) is never mixed with JSON log lines.

The choice is made when a line is written, not when a module is imported (loggers are module
globals, created on import); :func:`to_stderr` is what the CLI calls first.
"""

from __future__ import annotations

import sys

from aws_lambda_powertools import Logger


class _LogStream:
    """A stream that writes to ``sys.stdout`` or ``sys.stderr``, whichever is chosen now."""

    def __init__(self) -> None:
        self.target = "stdout"

    def write(self, text: str) -> int:
        return int(getattr(sys, self.target).write(text))

    def flush(self) -> None:
        getattr(sys, self.target).flush()


LOG_STREAM = _LogStream()


def to_stderr() -> None:
    """Send every core log line to stderr from now on (the CLI does, before anything logs)."""
    LOG_STREAM.target = "stderr"


def cli_level(verbosity: int, environment: dict[str, str]) -> str:
    """The log level of a CLI command: WARNING, INFO with ``-v``, DEBUG with ``-vv``; without
    ``-v`` an explicit ``POWERTOOLS_LOG_LEVEL`` is kept."""
    if verbosity >= 2:
        return "DEBUG"
    if verbosity == 1:
        return "INFO"
    return environment.get("POWERTOOLS_LOG_LEVEL") or "WARNING"


def service_logger(service: str, level: str | None = None) -> Logger:
    """The Powertools logger of one part of the core (``episodic-api``, ``episodic-server``, ...);
    its level is ``POWERTOOLS_LOG_LEVEL`` (INFO when unset) unless ``level`` says otherwise."""
    return Logger(service=service, stream=LOG_STREAM, level=level)  # type: ignore[arg-type]

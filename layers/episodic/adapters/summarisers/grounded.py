"""Composing summarisers: a generative one when its digest is grounded, else an extractive one.

A model may phrase a digest better than sentence extraction, but it may also invent. The
generative summariser drops lines whose facts are not in the sources and raises
``UngroundedSummaryError`` when nothing survives; then the extractive summariser, which
cannot invent, writes the digest instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from episodic.application.ports import Summariser
from episodic.domain.errors import StorageError
from episodic.domain.model import Episode
from episodic.logs import service_logger

logger = service_logger("episodic-summaries")


class GroundedFallbackSummariser:
    def __init__(self, primary: Summariser, fallback: Summariser) -> None:
        self.primary = primary
        self.fallback = fallback

    @property
    def name(self) -> str:
        return f"{self.primary.name}|{self.fallback.name}"

    def summarise(self, episodes: Sequence[Episode], max_lines: int = 3) -> list[str]:
        try:
            lines = self.primary.summarise(episodes, max_lines)
            if lines:
                return lines
        except StorageError as exc:  # ungrounded, throttled past retries, or refused
            logger.warning("generative summary unavailable; using extractive", error=type(exc).__name__)
        return self.fallback.summarise(episodes, max_lines)

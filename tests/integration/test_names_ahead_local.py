"""Names embedded ahead on the real local backend (SQLite, MiniLM): once a search has read a
tenant's new episodes, the names they mention are kept for it, so a recall widened toward them
runs the model once (its question) rather than twice; they go with an erasure; the setting turns
it off."""

from __future__ import annotations

import time

from episodic.adapters.minilm import embedder as embedder_module
from episodic.adapters.minilm.embedder import MiniLMEmbedder
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.domain.model import Caller, RecallRequest, Role
from tests.support.factories import proposal

WAIT = 60.0
"""Seconds the names may take to be kept before the test fails (a liveness bound, not a timing)."""

SUMMARIES = [
    "Agreed with Kalomiten on the new invoice dates for the Porto warehouse",
    "The invoice for Kalomiten was sent from the Porto office on Friday",
    "Billing dispute about the invoice settled; refund approved",
]


def _embedder(minilm: MiniLMEmbedder) -> MiniLMEmbedder:
    """An embedder of its own (its own kept names and pass count) over the loaded model."""
    embedder = MiniLMEmbedder()
    embedder._model = minilm._load()
    return embedder


def _written(service, tenant: str) -> Caller:
    caller = Caller(tenant_id=tenant, role=Role.AGENT, principal_id=f"agent:{tenant}")
    proposals = [proposal(summary=text, eventType="tool_observed_event", tags=[]) for text in SUMMARIES]
    results = service.writes.remember_batch(caller, proposals)
    assert [result.decision.value for result in results] == ["allow"] * len(SUMMARIES)
    return caller


def _kept(embedder: MiniLMEmbedder, tenant: str, names: list[str]) -> bool:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if all(embedder._names.get(tenant, name) is not None for name in names):
            return True
        time.sleep(0.02)
    return False


def _settled(embedder: MiniLMEmbedder) -> int:
    """The embedder's pass count once no pass runs or waits and none has started for a while: the
    names embedded ahead (every name the texts mention, not only those a test waits for) and any
    names a recall started without waiting for them have all had their passes."""
    deadline, seen, quiet_since = time.monotonic() + WAIT, -1, time.monotonic()
    while time.monotonic() < deadline:
        busy = embedder._in_flight or not embedder._pending.empty()
        if busy or embedder.passes != seen:
            seen, quiet_since = embedder.passes, time.monotonic()
        elif time.monotonic() - quiet_since > 0.3:
            return seen
        time.sleep(0.02)
    raise AssertionError("the embedder never settled")


def test_given_new_episodes_when_a_search_reads_them_then_a_widened_recall_finds_their_names_kept(
    tmp_path, minilm, monkeypatch
):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)  # other tests may keep the cores busy
    embedder = _embedder(minilm)
    with build_local_service(Settings(data_dir=tmp_path / "data"), embedder=embedder) as service:
        caller = _written(service, "acme")
        service.reads.recall(caller, RecallRequest(query="refund"))  # reads the tenant's new episodes
        assert _kept(embedder, "acme", ["Kalomiten", "Porto"])
        assert embedder._names.get("globex", "Kalomiten") is None  # kept for the tenant that wrote it
        passes = _settled(embedder)
        response = service.reads.recall(caller, RecallRequest(query="when are the invoice dates?"))
        assert "Kalomiten" in (response.interpretation.widened_with or [])
        assert embedder.passes == passes + 1  # the question's pass alone
        operator = caller.model_copy(update={"role": Role.OPERATOR, "principal_id": "operator:acme"})
        service.erasure.erase_actor(operator, "user-1")
        service.reads.recall(caller, RecallRequest(query="invoice"))  # the erasure is seen: names go
        assert embedder._names.get("acme", "Kalomiten") is None


def test_given_the_setting_off_then_no_names_are_embedded_ahead(tmp_path, minilm, monkeypatch):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)
    embedder = _embedder(minilm)
    settings = Settings(data_dir=tmp_path / "data", names_ahead=False)
    with build_local_service(settings, embedder=embedder) as service:
        caller = _written(service, "acme")
        passes = embedder.passes
        service.reads.recall(caller, RecallRequest(query="refund", widen=False))
        time.sleep(0.5)  # room for a background pass that must not come
        assert embedder.passes == passes + 1 and embedder._names.get("acme", "Kalomiten") is None

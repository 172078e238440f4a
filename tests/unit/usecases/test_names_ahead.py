"""Names embedded ahead (episodic.application.usecases.names_ahead): the names that offered texts
mention reach the embedder's ``start_names`` a few at a time, only while it says it is idle; a
tenant forgotten meanwhile gets none; an offer never blocks, whatever the embedder does."""

from __future__ import annotations

import threading

import pytest

from episodic.application.usecases import names_ahead
from episodic.application.usecases.names_ahead import NAMES_AT_ONCE, QUEUED_AT_MOST, NamesAhead

WAIT = 10.0
"""Seconds a test waits for the background thread before it fails (a liveness bound, not a timing)."""


class KeepingEmbedderDouble:
    """TEST DOUBLE: an embedder that keeps the names it is asked for, per tenant, with an ``idle``
    switch the test holds and a record of every pass (one ``start_names`` call)."""

    name, dimension = "double", 3

    def __init__(self, idle: bool = True, failing: int = 0) -> None:
        self.kept: dict[str, list[str]] = {}
        self.passes: list[list[str]] = []
        self.forgotten: list[str] = []
        self.is_idle = threading.Event()
        if idle:
            self.is_idle.set()
        self.failing = failing
        self.asked_idle = threading.Event()
        self.done = threading.Condition()

    def embed(self, texts):
        return [[1.0, 0.0, 0.0] for _ in texts]

    def idle(self) -> bool:
        self.asked_idle.set()
        return self.is_idle.is_set()

    def start_names(self, texts, tenant=None):
        if self.failing:
            self.failing -= 1
            raise RuntimeError("the model stopped")
        with self.done:
            self.passes.append(list(texts))
            self.kept.setdefault(tenant, []).extend(texts)
            self.done.notify_all()
        return [lambda: [1.0, 0.0, 0.0] for _ in texts]

    def forget_tenant(self, tenant):
        self.forgotten.append(tenant)

    def wait_for(self, count: int) -> list[str]:
        """Every name kept, once ``count`` are (or the liveness bound passed)."""
        with self.done:
            self.done.wait_for(lambda: sum(len(p) for p in self.passes) >= count, timeout=WAIT)
            return [name for names in self.passes for name in names]


TEXTS = [
    "Kirsty talked me into the half marathon in Leeds.",
    "Did you see Kirsty there? We met Priya and Tomas at Harbor Clinics.",
]


def test_given_texts_when_offered_then_the_names_they_mention_are_kept_for_the_tenant_once_each():
    embedder = KeepingEmbedderDouble()
    ahead = NamesAhead(embedder)
    ahead.offer("acme", TEXTS)
    kept = embedder.wait_for(5)
    assert kept == ["Leeds", "Kirsty", "Priya", "Tomas", "Harbor Clinics"]  # as a recall reads them
    assert set(embedder.kept) == {"acme"}
    assert all(0 < len(names) <= NAMES_AT_ONCE for names in embedder.passes)


def test_given_many_names_when_offered_then_each_pass_takes_a_few():
    embedder = KeepingEmbedderDouble()
    texts = [f"We called Kal{chr(97 + n // 26)}{chr(97 + n % 26)} today." for n in range(30)]
    NamesAhead(embedder).offer("acme", texts)
    kept = embedder.wait_for(30)
    assert len(kept) == 30
    assert [len(names) for names in embedder.passes] == [NAMES_AT_ONCE] * (30 // NAMES_AT_ONCE) + [
        30 % NAMES_AT_ONCE
    ] * (30 % NAMES_AT_ONCE > 0)


def test_given_a_busy_embedder_when_offered_then_nothing_is_embedded_until_it_is_idle():
    embedder = KeepingEmbedderDouble(idle=False)
    NamesAhead(embedder).offer("acme", TEXTS)
    assert embedder.asked_idle.wait(WAIT)
    assert embedder.passes == []  # asked, and waited
    embedder.is_idle.set()
    assert "Kirsty" in embedder.wait_for(5)


def test_given_a_tenant_forgotten_before_its_names_are_embedded_then_none_are_kept(monkeypatch):
    monkeypatch.setattr(names_ahead, "IDLE_POLL_SECONDS", 0.001)
    embedder = KeepingEmbedderDouble(idle=False)
    ahead = NamesAhead(embedder)
    ahead.offer("acme", TEXTS)
    assert embedder.asked_idle.wait(WAIT)
    ahead.forget("acme")
    ahead.offer("globex", ["We paged Ingrid about the outage."])
    embedder.is_idle.set()
    assert embedder.wait_for(1) == ["Ingrid"]
    assert "acme" not in embedder.kept and embedder.forgotten == ["acme"]  # and what the embedder kept goes


def test_given_a_busy_embedder_when_offers_pile_up_then_offering_never_blocks():
    embedder = KeepingEmbedderDouble(idle=False)
    ahead = NamesAhead(embedder)
    for n in range(QUEUED_AT_MOST + 10):  # past the queue's bound: the rest are dropped, not waited for
        ahead.offer("acme", [f"We called Person{n}."])
    embedder.is_idle.set()
    assert embedder.wait_for(1) == ["Person"]
    assert embedder.passes == [["Person"]]  # offered again and again, embedded once


def test_given_a_failing_embedder_when_offered_then_it_says_why_and_takes_the_next_offer(caplog):
    embedder = KeepingEmbedderDouble(failing=1)
    ahead = NamesAhead(embedder)
    with caplog.at_level("WARNING", logger=names_ahead.__name__):
        ahead.offer("acme", TEXTS)
        ahead.offer("acme", ["We paged Ingrid."])
        kept = embedder.wait_for(1)
    assert kept == ["Ingrid"]
    assert any("could not embed a tenant's names ahead" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("offered", [[], ["all lower case, no names here"]])
def test_given_nothing_named_when_offered_then_the_embedder_is_not_asked(offered):
    embedder = KeepingEmbedderDouble()
    ahead = NamesAhead(embedder)
    ahead.offer("acme", offered)
    ahead.offer("acme", ["We paged Ingrid."])
    assert embedder.wait_for(1) == ["Ingrid"]


def test_given_an_embedder_that_keeps_no_names_then_offers_are_not_wanted():
    class PlainEmbedderDouble:
        """TEST DOUBLE: an embedder with neither ``start_names`` nor ``idle``."""

        name, dimension = "plain", 3

        def embed(self, texts):
            return [[1.0, 0.0, 0.0] for _ in texts]

    ahead = NamesAhead(PlainEmbedderDouble())
    assert not ahead.useful
    ahead.offer("acme", TEXTS)  # nothing to do, and no thread started
    assert ahead._thread is None


def test_given_a_closed_one_then_its_thread_ends_and_offers_are_dropped():
    embedder = KeepingEmbedderDouble(idle=False)
    ahead = NamesAhead(embedder)
    ahead.offer("acme", TEXTS)
    assert embedder.asked_idle.wait(WAIT)
    ahead.close()  # waits for the thread: no pass of a native runtime is left running at exit
    assert not ahead._thread.is_alive()
    ahead.offer("acme", TEXTS)
    embedder.is_idle.set()
    assert embedder.passes == [] and not ahead._thread.is_alive()

"""The MiniLM embedder's worker: concurrent callers share forward passes, and each
still gets the vectors of its own texts, in order; a failure reaches every caller waiting on
that pass. With the real model, but for the failing model, which is a named test double."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from episodic.adapters.minilm import embedder as embedder_module
from episodic.adapters.minilm.embedder import MiniLMEmbedder

TEXTS = [f"Ticket {n}: the customer in {city} asked about invoice {n * 7}" for n, city in
         enumerate(["Lisbon", "Porto", "Braga", "Faro", "Leeds", "York", "Bath", "Derby"] * 3)]  # fmt: skip


def test_given_concurrent_callers_when_they_embed_then_each_gets_its_own_vectors_in_order(minilm):
    alone = MiniLMEmbedder(cache_size=0)
    alone._model = minilm._load()  # the same weights, loaded once
    expected = {text: alone.embed([text])[0] for text in TEXTS}
    shared = MiniLMEmbedder(cache_size=0)
    shared._model = minilm._load()
    results: dict[int, list] = {}

    def caller(index: int) -> None:
        texts = TEXTS[index * 3 : index * 3 + 3]
        results[index] = list(zip(texts, shared.embed(texts), strict=True))

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 8 and shared.texts_encoded == len(TEXTS)
    for pairs in results.values():
        for text, vector in pairs:
            assert np.allclose(vector, expected[text], atol=1e-5), text


class FailingModelDouble:
    """A model double whose forward pass fails, as a model that ran out of memory would."""

    def encode(self, *args, **kwargs):
        raise RuntimeError("forward pass failed")


def test_given_a_failing_pass_when_callers_wait_then_each_gets_the_failure_and_the_worker_lives_on(minilm):
    embedder = MiniLMEmbedder(cache_size=0)
    embedder._model = FailingModelDouble()
    with pytest.raises(RuntimeError, match="forward pass failed"):
        embedder.embed(["one"])
    embedder._model = minilm._load()
    assert len(embedder.embed(["two"])[0]) == 384  # the same worker serves the next pass


class SlowRuntimeDouble:
    """A runtime double whose pass takes 0.2 s and records how many passes run at once."""

    name = "slow-double"
    parallel_passes = True

    def __init__(self) -> None:
        self.running = 0
        self.most_at_once = 0
        self.ran_on: dict[str, str] = {}
        """Each text's pass: the name of the worker thread that ran it."""
        self._lock = threading.Lock()

    def encode(self, texts, *, threads, batch_size=64, light=False):
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.ran_on.update(dict.fromkeys(texts, threading.current_thread().name))
        time.sleep(0.2)
        with self._lock:
            self.running -= 1
        return np.zeros((len(texts), 384), dtype=np.float32)


def _slow(passes_at_once: int | None = None) -> MiniLMEmbedder:
    """An embedder whose model is the slow runtime double."""
    embedder = MiniLMEmbedder(cache_size=0, passes_at_once=passes_at_once)
    embedder._model = SlowRuntimeDouble()
    return embedder


def _two_callers(embedder: MiniLMEmbedder, texts: int = 1) -> None:
    """Two callers, the second arriving while the first one's pass runs."""
    batches = [[f"text {n}.{i}" for i in range(texts)] for n in range(2)]
    callers = [threading.Thread(target=embedder.embed, args=(batch,)) for batch in batches]
    for caller in callers:
        caller.start()
        time.sleep(0.05)
    for caller in callers:
        caller.join(timeout=10)


def test_given_two_workers_when_callers_arrive_during_a_pass_then_a_second_pass_runs_beside_it(monkeypatch):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: False)
    embedder = _slow(passes_at_once=2)
    _two_callers(embedder)
    assert embedder._model.most_at_once == 2 and embedder.passes == 2
    one = _slow(passes_at_once=1)
    _two_callers(one)
    assert one._model.most_at_once == 1  # one worker, no idle core: the second waits for the next pass


def test_given_one_worker_in_a_pass_and_an_idle_core_then_a_small_request_runs_beside_it(monkeypatch):
    """The spare worker: a recall's names need not wait for its question's pass when a core is idle."""
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)
    one = _slow(passes_at_once=1)
    _two_callers(one)
    assert one._model.most_at_once == 2 and one.passes == 2
    batch = _slow(passes_at_once=1)
    _two_callers(batch, texts=embedder_module.SMALL_PASS + 1)
    ran_on = set(batch._model.ran_on.values())
    assert "minilm-spare" not in ran_on and "minilm-worker-0" in ran_on  # a batch is no small request


def test_given_a_batch_and_two_cores_then_half_runs_on_the_callers_thread_and_half_on_a_worker(monkeypatch, minilm):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: False)
    monkeypatch.setattr(embedder_module, "_cores", lambda: 2)
    embedder = _slow()
    texts = [f"text {i} " + "word " * i for i in range(embedder_module.SMALL_PASS + 2)]
    embedder.embed(texts)
    ran_on = embedder._model.ran_on
    workers = set(ran_on.values()) - {"MainThread"}
    assert len(workers) == 1 and workers < {"minilm-worker-0", "minilm-worker-1"} and embedder.passes == 2
    assert sum(name == "MainThread" for name in ran_on.values()) == len(texts) // 2
    assert embedder._model.most_at_once == 2
    # The real model: every vector is the text's own, in the caller's order, as one pass gives it.
    real = MiniLMEmbedder(cache_size=0)
    real._model = minilm._load()
    split = real.embed([*TEXTS, TEXTS[0]])
    whole = real._model.encode(TEXTS, threads=2)
    assert len(split) == len(TEXTS) + 1 and np.allclose(split[-1], split[0])
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(split, whole, strict=False))


@pytest.mark.parametrize(("idle", "passes"), [(False, 1), (True, 2)])
def test_given_one_core_for_this_process_then_a_batch_splits_only_when_another_is_idle(monkeypatch, idle, passes):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: idle)
    monkeypatch.setattr(embedder_module, "_cores", lambda: 1)  # serve --workers: a core each
    embedder = _slow()
    embedder.embed([f"text {i}" for i in range(embedder_module.SMALL_PASS + 2)])
    assert embedder.passes == passes and embedder._model.most_at_once == passes
    assert "minilm-worker-0" in set(embedder._model.ran_on.values())


def test_given_the_spare_worker_busy_and_the_worker_idle_then_a_request_runs_on_the_worker(monkeypatch):
    """The spare worker's pass does not make the worker look busy: what comes next is not queued
    behind the spare pass while the worker has nothing to do."""
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)
    one = _slow(passes_at_once=1)
    first = threading.Thread(target=one.embed, args=(["first"],))
    beside = threading.Thread(target=one.embed, args=(["beside"],))
    first.start()
    time.sleep(0.1)
    beside.start()  # the worker is in a pass: this goes to the spare worker, ending ~0.1 s after it
    first.join(timeout=10)
    one.embed(["next"])  # the worker is idle again, the spare one still in its pass
    beside.join(timeout=10)
    assert one._model.ran_on == {"first": "minilm-worker-0", "beside": "minilm-spare", "next": "minilm-worker-0"}


def test_given_a_runtime_that_cannot_run_passes_side_by_side_then_nothing_goes_to_the_spare_worker(monkeypatch):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)
    embedder = _slow()
    embedder._model.parallel_passes = False  # PyTorch: its thread count is global to the process
    _two_callers(embedder)
    assert embedder._model.most_at_once == 1


@pytest.mark.parametrize(
    ("content", "spare"),
    [("0.50 0.40 0.30 1/84 2424\n", True), ("3.10 2.00 1.50 {cores}/90 2424\n", True),
     ("3.10 2.00 1.50 {over}/90 2424\n", False), ("garbled\n", False)],
)  # fmt: skip
def test_spare_core_reads_the_runnable_tasks_against_the_cores_this_process_may_use(tmp_path, content, spare):
    cores = embedder_module._allowed_cores()
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(content.format(cores=cores, over=cores + 1))
    assert embedder_module.spare_core(str(loadavg)) is spare
    assert embedder_module.spare_core(str(tmp_path / "missing")) is False


def test_spare_core_reads_the_load_anew_each_time_it_is_asked(tmp_path):
    cores = embedder_module._allowed_cores()
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(f"0.50 0.40 0.30 {cores + 1}/84 2424\n")
    assert embedder_module.spare_core(str(loadavg)) is False
    with loadavg.open("r+") as same_file:  # rewritten in place: the descriptor kept sees the new load
        same_file.write("0.50 0.40 0.30 1/84 2424\n   ")
    assert embedder_module.spare_core(str(loadavg)) is True


def test_given_a_started_query_when_waited_for_then_it_is_the_embedding_and_is_kept_for_next_time(minilm):
    embedder = MiniLMEmbedder()
    embedder._model = minilm._load()
    wait = embedder.start_query("which customer reported the invoice problem?", tenant="acme")
    embedder.embed(["something else the caller does meanwhile"])  # the worker serves both
    vector = wait()
    assert np.allclose(vector, minilm.embed(["which customer reported the invoice problem?"])[0], atol=1e-5)
    passes = embedder.passes
    kept = embedder.start_query("which customer reported the invoice problem?", tenant="acme")
    assert wait.ready() and kept.ready()  # waited for, and kept: neither call would wait
    again = kept()
    assert embedder.passes == passes and np.allclose(again, vector, atol=1e-6)  # from the cache, no pass


def test_given_a_question_kept_for_one_tenant_then_another_tenants_same_question_runs_the_model(minilm):
    """A vector kept for one tenant never answers another's: a faster answer would tell the second
    tenant what the first asked (or which names its memories hold)."""
    embedder = MiniLMEmbedder()
    embedder._model = minilm._load()
    embedder.start_query("did Kalomiten Foods pay late?", tenant="acme")()
    passes = embedder.passes
    other = embedder.start_query("did Kalomiten Foods pay late?", tenant="globex")
    assert not other.ready() or embedder.passes == passes + 1
    other()
    assert embedder.passes == passes + 1
    embedder.start_queries(["did Kalomiten Foods pay late?"], tenant="globex")[0]()
    assert embedder.passes == passes + 1  # kept for globex now
    embedder.start_query("did Kalomiten Foods pay late?")()
    assert embedder.passes == passes + 2  # no tenant: nothing kept, nothing found


def test_given_a_stored_text_embedded_twice_then_the_model_runs_twice(minilm):
    """Stored texts are not kept: a faster write would say that someone wrote the same text."""
    embedder = MiniLMEmbedder()
    embedder._model = minilm._load()
    first = embedder.embed(["Invoice 88 was paid late", "Invoice 88 was paid late"])  # one text, once
    passes = embedder.passes
    again = embedder.embed(["Invoice 88 was paid late"])
    assert embedder.passes == passes + 1 and embedder.texts_encoded >= 2
    assert np.allclose(first[0], first[1]) and np.allclose(first[0], again[0], atol=1e-6)


class GraphRecordingRuntimeDouble:
    """A runtime double that records each pass's texts and whether it took the lighter graph; the
    first pass says it has begun (:attr:`entered`) and waits until the test opens :attr:`gate`."""

    name = "graph-recording-double"
    parallel_passes = True

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.passes: list[tuple[tuple[str, ...], bool]] = []

    def encode(self, texts, *, threads, batch_size=64, light=False):
        if not self.passes:
            self.entered.set()
            self.gate.wait(timeout=30)
        self.passes.append((tuple(texts), light))
        return np.zeros((len(texts), 384), dtype=np.float32)


def test_given_names_then_they_take_the_lighter_graph_and_are_kept_apart_from_questions(monkeypatch):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: False)
    embedder = MiniLMEmbedder(passes_at_once=1)
    embedder._model = runtime = GraphRecordingRuntimeDouble()
    first = embedder.start_query("what did Kalomiten order?", tenant="acme")  # holds the worker at the gate
    assert runtime.entered.wait(timeout=30)
    question = embedder.start_query("Kalomiten", tenant="acme")
    names = embedder.start_names(["Kalomiten", "Porto"], tenant="acme")
    runtime.gate.set()
    for wait in (first, question, *names):
        wait()
    # gathered together behind the first pass, yet one pass per graph
    assert runtime.passes == [
        (("what did Kalomiten order?",), False), (("Kalomiten",), False), (("Kalomiten", "Porto"), True)
    ]  # fmt: skip
    embedder.start_names(["Porto"], tenant="acme")[0]()
    assert len(runtime.passes) == 3  # kept for the tenant's next recall
    embedder.start_names(["Porto"], tenant="globex")[0]()
    embedder.forget_tenant("acme")  # its episodes were erased: the names it kept go too
    embedder.start_names(["Porto"], tenant="acme")[0]()
    embedder.start_query("Kalomiten", tenant="acme")()
    assert runtime.passes[3:] == [(("Porto",), True), (("Porto",), True), (("Kalomiten",), False)]


def test_idle_says_whether_a_pass_started_now_would_run_alone(monkeypatch):
    """What names embedded ahead ask before each pass: a pass in flight, or no core to spare, is not idle."""
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)
    embedder = MiniLMEmbedder(passes_at_once=1)
    embedder._model = runtime = GraphRecordingRuntimeDouble()
    assert embedder.idle()
    question = embedder.start_query("what did Kalomiten order?", tenant="acme")  # held at the gate
    assert runtime.entered.wait(timeout=30)
    assert not embedder.idle()
    runtime.gate.set()
    question()
    assert embedder.idle()
    monkeypatch.setattr(embedder_module, "spare_core", lambda: False)  # another process uses the cores
    assert not embedder.idle()


def test_given_an_idle_embedder_then_a_question_runs_on_the_callers_thread_and_is_kept(minilm, monkeypatch):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)
    embedder = MiniLMEmbedder()
    embedder._model = minilm._load()
    run = embedder.query_here("which customer reported the invoice problem?", tenant="acme")
    assert run is not None
    vector = run()
    assert np.allclose(vector, minilm.embed(["which customer reported the invoice problem?"])[0], atol=1e-5)
    assert embedder.query_here("which customer reported the invoice problem?", tenant="acme") is None  # kept
    passes = embedder.passes
    assert np.allclose(embedder.start_query("which customer reported the invoice problem?", tenant="acme")(), vector)
    assert embedder.passes == passes
    monkeypatch.setattr(embedder_module, "spare_core", lambda: False)  # another process uses the cores
    assert embedder.query_here("a question not asked before", tenant="acme") is None


def test_given_a_question_running_on_its_callers_thread_then_the_embedder_is_busy_meanwhile(monkeypatch):
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)
    embedder = MiniLMEmbedder(passes_at_once=1)
    embedder._model = runtime = GraphRecordingRuntimeDouble()
    run = embedder.query_here("what did Kalomiten order?", tenant="acme")
    assert run is not None
    caller = threading.Thread(target=run)
    caller.start()
    assert runtime.entered.wait(timeout=30)
    assert not embedder.idle() and embedder.query_here("and Porto?", tenant="acme") is None
    runtime.gate.set()
    caller.join(timeout=30)
    assert embedder.idle() and runtime.passes == [(("what did Kalomiten order?",), False)]


def test_given_a_runtime_running_one_pass_at_a_time_then_no_question_runs_on_its_callers_thread(monkeypatch):
    """PyTorch's thread count is global to the process: its passes all go through the one worker."""
    monkeypatch.setattr(embedder_module, "spare_core", lambda: True)
    embedder = MiniLMEmbedder()
    assert embedder.query_here("what did Kalomiten order?", tenant="acme") is None  # not loaded yet
    embedder._model = FailingModelDouble()  # says nothing of parallel passes, as the PyTorch runtime says False
    assert embedder.query_here("what did Kalomiten order?", tenant="acme") is None


class GatedRuntimeDouble:
    """A runtime double that records each pass's texts, and holds its first pass until released."""

    name = "gated-double"
    parallel_passes = True

    def __init__(self) -> None:
        self.passes: list[list[str]] = []
        self.first_started = threading.Event()
        self.release = threading.Event()

    def encode(self, texts, *, threads, batch_size=64, light=False):
        self.passes.append(list(texts))
        if len(self.passes) == 1:
            self.first_started.set()
            assert self.release.wait(timeout=30)
        return np.zeros((len(texts), 384), dtype=np.float32)


def test_given_a_batch_of_long_texts_when_a_question_comes_then_it_runs_before_the_batchs_next_chunk(monkeypatch):
    """No question waits for someone else's whole batch: the batch is cut into passes of about
    CHUNK_TOKENS tokens, and a question waiting is taken before the next of them."""
    monkeypatch.setattr(embedder_module, "spare_core", lambda: False)
    monkeypatch.setattr(embedder_module, "_cores", lambda: 1)  # the batch is not split with the caller's thread
    embedder = MiniLMEmbedder(cache_size=0, passes_at_once=1)
    embedder._model = runtime = GatedRuntimeDouble()
    batch = [f"stored text {n}: " + "the parcel went to the depot again " * 30 for n in range(10)]
    stored: list = []
    writer = threading.Thread(target=lambda: stored.extend(embedder.embed(batch)))
    writer.start()
    assert runtime.first_started.wait(timeout=30)
    question = embedder.start_query("where is my parcel?")
    runtime.release.set()
    assert len(question()) == 384
    writer.join(timeout=30)
    assert len(stored) == len(batch)
    passes = runtime.passes
    assert passes[1] == ["where is my parcel?"]  # right after the pass that was running
    assert [text for texts in passes if texts != ["where is my parcel?"] for text in texts] == batch
    assert len(passes) > 3 and all(len(texts) < len(batch) for texts in passes)  # cut into chunks

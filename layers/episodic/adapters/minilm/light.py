"""A lighter graph of all-MiniLM-L6-v2, for the names a widened recall leans toward.

A second round embeds up to two names beside its question (:mod:`episodic.application.usecases.rounds`).
On one core a forward pass costs ~1.3 ms plus ~0.2 ms a token slot, so two names of six tokens cost
nearly what a one-line question does: on tickets whose names rarely recur, the names' pass ended
~4 ms after the question's even on an idle core, and the recall waited for it. The names only tilt
the second round's vector (``NAMES_WEIGHT``), so they need the model's direction, not every digit
of it. This graph is the exported one with most of its matrix weights in 8-bit integers, one scale per
output channel (ONNX Runtime's dynamic quantization; activations are quantized per pass). On one
core it embeds a short text in 2.2 ms against 4.3, and its vectors are within a cosine of 0.99 of
the full graph's (median over 85 names and turn openings; lowest 0.98).

Questions and stored texts always go through the full graph: only names take this one. It is
made from the exported graph the first time it is needed (~3 s), checked on the probe sentences,
and kept beside it in the model cache; one that fails its check is not used (the names then take
the full graph, and the log says why).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import numpy as np

LIGHT_FORMAT = 2
"""Bumped when the way the lighter graph is made changes, so caches of the old one are not reused."""
EXACT_LAYERS = 3
"""How many of the first layers keep their feed-forward output in floating point (:func:`_kept_exact`)."""
LIGHT_AGREEMENT = 0.95
"""The least cosine between the lighter graph's vector of a probe sentence and the full graph's."""


def light_model(full: Path) -> Path:
    """The lighter graph of the exported graph ``full``, made and checked first if not cached."""
    target = full.with_name(f"{full.stem}-int8-{LIGHT_FORMAT}.onnx")
    if target.exists():
        return target
    partial = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.partial")
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quiet = _Unadvised()
        logging.getLogger().addFilter(quiet)  # the quantizer advises on the root logger
        try:
            quantize_dynamic(
                full, partial, weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=_kept_exact(full)
            )
        finally:
            logging.getLogger().removeFilter(quiet)
        check_light(full, partial)
        os.replace(partial, target)  # atomic: another process making it at once just replaces it
    finally:
        partial.unlink(missing_ok=True)
    for stale in full.parent.glob(f"{full.stem}-int8-*.onnx"):
        if stale != target:  # one made the way an earlier version made it
            stale.unlink(missing_ok=True)
    return target


def _kept_exact(full: Path) -> list[str]:
    """The matrix products left in floating point: the feed-forward outputs of the first
    :data:`EXACT_LAYERS` layers (``layer.N/output/dense``), where an error in 8 bits travels
    through every layer after. Measured on 85 names and turn openings, one core, cosine to the full
    graph's vectors: every product quantized 1.7 ms, median 0.987 (lowest 0.963); these three
    kept, 2.2 ms, 0.990 (0.981); every layer's feed-forward output kept, 2.7 ms, 0.992 (0.982);
    the last layer's alone kept gained nothing (0.987)."""
    import onnx

    exact = tuple(f"layer.{n}/output/dense/MatMul" for n in range(EXACT_LAYERS))
    graph = onnx.load(str(full), load_external_data=False).graph
    return [n.name for n in graph.node if n.op_type == "MatMul" and n.name.endswith(exact)]


def check_light(full: Path, light: Path) -> None:
    """Refuse a lighter graph whose vector of any probe sentence strays from the full graph's by
    more than :data:`LIGHT_AGREEMENT` (both give unit vectors: their dot product is the cosine)."""
    from episodic.adapters.minilm.runtime import PROBES, OnnxMiniLM

    expected = OnnxMiniLM(full).encode(PROBES, threads=1)
    got = OnnxMiniLM(light).encode(PROBES, threads=1)
    worst = float(np.min(np.sum(expected * got, axis=1)))
    if worst < LIGHT_AGREEMENT:
        raise RuntimeError(f"the lighter graph agrees with the full one only to a cosine of {worst:.3f}")


class _Unadvised(logging.Filter):
    """Drops the quantizer's advice to pre-process the graph first: shape inference and graph
    fusions it suggests change nothing that :func:`check_light` would not catch."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing" not in record.getMessage()

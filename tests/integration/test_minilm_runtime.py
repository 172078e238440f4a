"""all-MiniLM-L6-v2 on ONNX Runtime: the exported graph gives PyTorch's vectors, is
exported once into the model cache and reused, and a graph that fails its check is never used
(the service falls back to PyTorch and says so). Real model, real export, real ONNX Runtime."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest
from pydantic import ValidationError

from episodic.adapters.minilm import light as light_module
from episodic.adapters.minilm import runtime as minilm_runtime
from episodic.adapters.minilm.embedder import MiniLMEmbedder
from episodic.adapters.minilm.light import LIGHT_AGREEMENT, light_model
from episodic.adapters.minilm.runtime import DEFAULT_CACHE, OnnxMiniLM, TorchMiniLM, load_runtime, onnx_model
from episodic.application.settings import Settings

TEXTS = [
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "Hey Mel! Long time no talk... I took a pottery class last week and made a bowl!",
    "ok",
    "",
    "Der Kunde in München hat die Rechnung 4711 bezahlt — très bien, 谢谢 🎉",
    "The nightly export wrote 12,000 rows to the warehouse and raised no alert. " * 40,  # truncated at 256 tokens
]


@pytest.fixture(scope="module")
def onnx_runtime() -> OnnxMiniLM:
    runtime = load_runtime()
    assert runtime.name == "onnx", "ONNX Runtime is part of the local extra and must load here"
    return runtime  # type: ignore[return-value]


def test_given_the_onnx_graph_when_it_encodes_then_its_vectors_are_pytorchs(onnx_runtime):
    expected = TorchMiniLM().encode(TEXTS, threads=1)
    batched = onnx_runtime.encode(TEXTS, threads=2, batch_size=4)  # two batches, reordered by length
    one_by_one = np.vstack([onnx_runtime.encode([text], threads=1) for text in TEXTS])
    for got in (batched, one_by_one):
        assert got.shape == (len(TEXTS), 384)
        assert np.abs(got - expected).max() < 1e-5
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_given_an_empty_cache_when_the_model_is_needed_then_it_is_exported_once_and_reused(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = cache / "all-minilm-l6-v2-f1-90868376-1796233606446882530.onnx"  # an older install's graph
    stale.write_bytes(b"an old graph")
    first = onnx_model(cache)
    assert TorchMiniLM._shared is None  # the exporter's copy of PyTorch's model is not kept
    assert not stale.exists()  # the cache holds one graph, not one per install
    written = first.stat().st_mtime_ns
    again = onnx_model(cache)
    assert again == first and again.stat().st_mtime_ns == written  # not exported a second time
    assert [p.name for p in cache.iterdir()] == [first.name]  # no partial file left beside it

    # The same weights installed again (a new venv): a new mtime, the same content, the same graph.
    reinstalled = tmp_path / "venv2"
    reinstalled.mkdir()
    copy = reinstalled / "model.safetensors"
    copy.write_bytes((minilm_runtime._weights() / "model.safetensors").read_bytes())
    monkeypatch.setattr(minilm_runtime, "_weights", lambda: reinstalled)
    assert onnx_model(cache) == first and first.stat().st_mtime_ns == written
    copy.write_bytes(copy.read_bytes()[:-1] + b"\x00")  # other weights: another graph would be exported
    assert minilm_runtime._weights_digest(copy) not in first.name


def test_given_a_graph_that_fails_its_check_when_loading_then_pytorch_serves_and_says_why(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(minilm_runtime, "TOLERANCE", -1.0)  # no graph can pass: as if the export went wrong
    with caplog.at_level(logging.WARNING, logger=minilm_runtime.__name__):
        runtime = load_runtime("onnx", tmp_path)
    assert runtime.name == "torch"
    assert "differs from PyTorch" in caplog.text
    assert list(tmp_path.iterdir()) == []  # the rejected graph is not kept for the next start


def test_given_the_runtime_setting_when_the_service_starts_then_it_is_obeyed_and_a_bad_value_is_refused(tmp_path):
    settings = Settings.from_env({"EPISODIC_EMBEDDER_RUNTIME": "torch", "EPISODIC_MODEL_CACHE": str(tmp_path)})
    embedder = MiniLMEmbedder(runtime=settings.embedder_runtime, model_cache=settings.model_cache)
    assert embedder._load().name == "torch" and list(tmp_path.iterdir()) == []  # nothing exported
    with pytest.raises(ValidationError, match="embedder_runtime"):
        Settings.from_env({"EPISODIC_EMBEDDER_RUNTIME": "tensorflow"})
    with pytest.raises(ValueError, match="'onnx' or 'torch'"):
        load_runtime("tensorflow")


def test_given_the_onnx_runtime_then_names_take_a_lighter_graph_that_points_the_same_way(onnx_runtime):
    """The names a recall leans toward go through an 8-bit graph: not the full graph's vectors, but
    within :data:`LIGHT_AGREEMENT` of them. Everything else still gets the full graph's."""
    assert onnx_runtime.has_light
    full = onnx_runtime.encode(TEXTS, threads=1)
    light = onnx_runtime.encode(TEXTS, threads=1, light=True)
    assert np.abs(light - full).max() > 1e-3  # another graph indeed
    assert float(np.min(np.sum(light * full, axis=1))) >= LIGHT_AGREEMENT
    assert np.allclose(np.linalg.norm(light, axis=1), 1.0, atol=1e-5)
    assert np.abs(onnx_runtime.encode(TEXTS, threads=1) - full).max() < 1e-6


def test_given_the_lighter_graph_then_a_names_vector_does_not_depend_on_what_it_was_embedded_with(onnx_runtime):
    """That graph quantizes activations on the scale of a whole run: each name runs alone, so a name
    embedded ahead among others is the vector a recall embedding it alone would get."""
    names = ["Kirsty", "Harbor Clinics", "the Porto warehouse of Lumen Energy", "Ines"]
    together = onnx_runtime.encode(names, threads=1, light=True)
    for n, name in enumerate(names):
        assert np.abs(onnx_runtime.encode([name], threads=1, light=True)[0] - together[n]).max() < 1e-6


def test_given_a_model_cache_then_the_lighter_graph_is_made_once_beside_the_full_one(tmp_path):
    full = tmp_path / onnx_model(DEFAULT_CACHE).name
    shutil.copyfile(onnx_model(DEFAULT_CACHE), full)  # the exported graph, without exporting again
    older = tmp_path / f"{full.stem}-int8-0.onnx"
    older.write_bytes(b"a lighter graph made the way an earlier version made it")
    made = light_model(full)
    assert not older.exists()
    written = made.stat().st_mtime_ns
    assert light_model(full) == made and made.stat().st_mtime_ns == written  # not made a second time
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([full.name, made.name])  # no partial file


def test_given_a_lighter_graph_that_fails_its_check_then_names_take_the_full_graph_and_the_log_says_why(
    tmp_path, monkeypatch, caplog
):
    shutil.copyfile(onnx_model(DEFAULT_CACHE), tmp_path / onnx_model(DEFAULT_CACHE).name)
    monkeypatch.setattr(light_module, "LIGHT_AGREEMENT", 1.5)  # no graph can pass: as if it went wrong
    with caplog.at_level(logging.WARNING, logger=minilm_runtime.__name__):
        runtime = load_runtime("onnx", tmp_path)
    assert runtime.name == "onnx" and not runtime.has_light
    assert "no lighter graph for names" in caplog.text and "agrees with the full one" in caplog.text
    assert np.abs(runtime.encode(TEXTS[:2], threads=1, light=True) - runtime.encode(TEXTS[:2], threads=1)).max() < 1e-6
    assert [p.name for p in tmp_path.iterdir()] == [onnx_model(DEFAULT_CACHE).name]  # the rejected one not kept

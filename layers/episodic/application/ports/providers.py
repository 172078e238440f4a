"""What the core is handed to do its work: the time, the embedding model and the digest writer."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Protocol

from episodic.domain.model import Episode


class Vector(Protocol):
    """A unit-length embedding: a list of floats, or the float32 array an embedder or store
    made (the core only passes vectors on; adapters read them as arrays)."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


class Clock(Protocol):
    def now(self) -> datetime: ...


class Embedder(Protocol):
    """Turns text into unit-length vectors. Identity and dimension are stored with each vector.

    An embedder may also declare ``evidence_floor``, the cosine on its own scale below which a
    recall candidate is not evidence, and ``similarity_floor``, the cosine of unrelated texts on
    its scale (see ``Settings.ranking_weights``); without them, no floor and a scale from 0. One
    trained on some languages only declares ``languages``, their names (``"english"``): recall
    then leans on words for questions in another language it recognises (Spanish,
    :mod:`episodic.domain.recall.languages`); without it, every language is its own. A
    model trained to embed questions and documents differently offers ``embed_query(text, tenant=)``
    for what recall is asked; without it, a question is embedded like a stored text. An embedder that
    can compute in the background offers ``start_query(text, tenant=)``, which starts embedding a
    question (as ``embed_query`` would, where there is one) and returns a call that waits for the
    vector (raising what the model raised): recall then searches by words while the model runs. That
    call may also offer ``ready()``, true once calling it would not wait. One may also offer
    ``query_here(text, tenant=)``: a call that runs the question's pass on the thread that makes it,
    or ``None`` when the embedder would rather run it in the background (it is busy, or keeps the
    vector); recall then searches by words on a helper thread while its own runs the model. ``tenant`` is whose
    question it is: an embedder that keeps questions' vectors keeps each tenant's apart, so a vector
    kept for one never answers another tenant faster (which would tell it what the first asked or
    holds); ``embed`` keeps nothing across calls for the same reason. One that keeps them also offers
    ``forget_tenant(tenant)``, which drops what it keeps for ``tenant``: called when the tenant's
    episodes are erased, as the names a recall widened with are words of them. One may also offer
    ``start_names(texts, tenant=)``, ``start_query`` for several names at once: those a second round
    leans toward, which only tilt the question's vector, so a lighter pass of the model will do."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[Vector]: ...


class Summariser(Protocol):
    """Writes a digest of at most ``max_lines`` lines, using only facts in ``episodes``."""

    @property
    def name(self) -> str: ...

    def summarise(self, episodes: Sequence[Episode], max_lines: int = 3) -> list[str]: ...

"""The recall index's shape and the cluster it needs, checked before anything is written.

**OpenSearch 2.13 or newer** (:data:`MIN_VERSION`). Before 2.10, a faiss k-NN query with an
efficient filter could return fewer than ``k`` hits although the scope held more; before
2.13, exact search (which the engine picks for small filtered sets) scored inner product
differently from the HNSW path, so :func:`~episodic.adapters.opensearch.index.cosine_from_score`
would read wrong cosines. :func:`check_cluster` refuses anything older, and anything that
is not OpenSearch, with :class:`RecallIndexSetupError`.

**Writes never create the index.** OpenSearch creates a missing index on the first document
written to it, with a *dynamic* mapping: the vector becomes a list of floats, not a
``knn_vector``, and every k-NN search fails from then on. So the index has a fixed name,
``<alias>-v1``, and is only ever reached through an alias, ``<alias>`` (the configured index
name): every write passes ``require_alias=true``, which OpenSearch answers with 404
``index_not_found_exception`` instead of creating anything when the alias is missing.
The alias only exists together with its index (:func:`ensure_index` creates both in one
request; deleting the index deletes the alias), so a write that gets that 404 knows the
index is gone and can re-create it, with its mapping, before writing again. (The other
guard, a ``HEAD`` before every write, would cost a round trip per write and still race
with a delete.) The ``-v1`` name is deterministic so that concurrent writers re-creating it
cannot end up with two indices behind one alias.

A re-created index is empty: it holds what is written after it, so it must be rebuilt from
the timeline (``bulk_upsert`` over the episodes) before recall through it is complete.
"""

from __future__ import annotations

import logging
from typing import Any

from opensearchpy.exceptions import TransportError

from episodic.adapters.opensearch.client import error_type, storage_errors
from episodic.domain import linear
from episodic.domain.errors import EpisodicError

logger = logging.getLogger(__name__)

MIN_VERSION = (2, 13)
"""The oldest OpenSearch this adapter runs against (see the module docstring for why)."""

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
_VERSION = linear.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:-[A-Za-z0-9.]+)?$")


class RecallIndexSetupError(EpisodicError):
    """The cluster or the index cannot serve recall as this adapter needs: an operator has to
    act (upgrade the domain, remove a stray index); retrying will not help."""

    status = 500
    code = "recall_index_misconfigured"


def concrete_index(alias: str) -> str:
    """The index behind ``alias`` (bump the suffix for a new mapping: new index, rebuild, move the alias)."""
    return f"{alias}-v1"


def index_body(dimension: int) -> dict[str, Any]:
    """Settings and mapping of the recall index (``dynamic: strict``: nothing else gets stored)."""
    keyword = {"type": "keyword"}
    date = {"type": "date", "format": "strict_date_optional_time||epoch_millis"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "eventId": keyword,
                "tenantId": keyword,
                "actorId": keyword,
                "projectId": keyword,
                "eventType": keyword,
                "status": keyword,
                "privacyClass": keyword,
                "tags": keyword,
                "embedder": keyword,
                "occurredAt": date,
                "expiresAt": date,
                "text": {"type": "text", "analyzer": "english"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "method": {
                        "name": "hnsw",
                        "engine": "faiss",
                        "space_type": "innerproduct",
                        "parameters": {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
                    },
                },
            },
        },
    }


def check_cluster(info: dict[str, Any]) -> str:
    """The cluster's version (``GET /``), if it is OpenSearch at least :data:`MIN_VERSION`."""
    version = info.get("version")
    version = version if isinstance(version, dict) else {}
    number = str(version.get("number", ""))
    match = _VERSION.match(number)
    shown = number if match else "an unreadable version"
    needed = f"OpenSearch {MIN_VERSION[0]}.{MIN_VERSION[1]} or newer"
    if version.get("distribution") != "opensearch":
        raise RecallIndexSetupError(f"the recall index needs {needed}; the endpoint is not OpenSearch ({shown})")
    if number.startswith("7.10."):
        # Compatibility mode answers as Elasticsearch 7.10.2 would: the real version is hidden.
        raise RecallIndexSetupError(
            f"the recall index needs {needed}; this cluster runs OpenSearch {shown} as far as it says "
            "(compatibility mode hides the real version: turn override_main_response_version off)"
        )
    if not match or (int(match[1]), int(match[2])) < MIN_VERSION:
        raise RecallIndexSetupError(f"the recall index needs {needed}; this cluster runs OpenSearch {shown}")
    return number


def ensure_index(client: Any, alias: str, dimension: int) -> bool:
    """Create the index with its mapping, behind ``alias``, unless the alias exists; True when created."""
    index = concrete_index(alias)
    with storage_errors("ensure_index"):
        if client.indices.exists_alias(name=alias):
            return False
        try:
            client.indices.create(index=index, body={**index_body(dimension), "aliases": {alias: {}}})
        except TransportError as exc:
            kind = error_type(exc.error)
            if kind == "resource_already_exists_exception":
                if client.indices.exists_alias(name=alias):
                    return False  # another writer created both between the check and the create
                raise RecallIndexSetupError(
                    f"index {index} exists without its alias {alias}: check its mapping, then add the alias"
                ) from None
            if kind == "invalid_alias_name_exception":
                raise RecallIndexSetupError(
                    f"an index named {alias} is in the way of the alias (made before writes went through the "
                    "alias, or auto-created by a write without the mapping): delete it, then rebuild the index"
                ) from None
            raise
    logger.warning("recall index %s created behind alias %s (empty until rebuilt from the timeline)", index, alias)
    return True

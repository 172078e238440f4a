"""What the timeline store writes: the attributes of each kind of item, built from the model.

Pure functions, no client: the keys come from :mod:`~episodic.adapters.dynamodb.tables`, the
attributes here decide which indexes an item is in. ``st`` mirrors the status of an episode
or review (the write conditions and the day index read it without the whole item); ``ep``
and ``rv`` hold the episode and review as JSON; ``vec`` is the packed float32 vector and
``embedder`` the model that made it; ``ttl`` is ``retention.expiresAt`` in epoch seconds.
"""

from __future__ import annotations

import json
from typing import Any

from boto3.dynamodb.types import Binary

from episodic.adapters.codec import pack_vector
from episodic.adapters.dynamodb import tables as t
from episodic.application.ports import Changes, IdempotencyRecord, NewEpisode, ReviewChange
from episodic.domain.digests.citations import cited_event_id
from episodic.domain.digests.rules import digestible
from episodic.domain.model import Episode, Review, ReviewStatus


def episode_index_keys(episode: Episode) -> dict[str, str]:
    """The index keys of an episode item: the actor, type and tenant timelines always; the
    project timeline when it has a project; the day index when a digest may summarise it
    (the summarisation finds busy actors there); the expiry index when it expires."""
    tenant, occ = episode.tenant_id, t.occ_key(episode.occurred_at, episode.event_id)
    keys = {
        t.BY_ACTOR.pk: t.actor_pk(tenant, episode.actor_id),
        t.BY_ACTOR.sk: occ,
        t.BY_TYPE.pk: t.type_pk(tenant, episode.event_type.value),
        t.BY_TYPE.sk: occ,
        t.BY_TENANT.pk: t.tenant_timeline_pk(tenant),
        t.BY_TENANT.sk: occ,
    }
    if episode.project_id:
        keys |= {t.BY_PROJECT.pk: t.project_pk(tenant, episode.project_id), t.BY_PROJECT.sk: occ}
    if digestible(episode):
        keys |= {
            t.BY_DAY.pk: t.day_key(episode.occurred_at, tenant, episode.actor_id),
            t.BY_DAY.sk: t.day_sk(tenant, episode.actor_id, episode.occurred_at, episode.event_id),
        }
    expires = episode.retention.expires_at
    if expires is not None:
        keys |= {
            t.BY_EXPIRY.pk: t.expiry_shard(episode.event_id),
            t.BY_EXPIRY.sk: t.expiry_sk(expires, tenant, episode.event_id),
        }
    return keys


def episode_item(new: NewEpisode) -> dict[str, Any]:
    ep = new.episode
    attributes: dict[str, Any] = {
        **t.episode_key(ep.tenant_id, ep.event_id),
        "st": ep.status.value,
        "ep": ep.to_json_dict(),
        **episode_index_keys(ep),
    }
    if new.vector is not None:
        attributes["vec"] = Binary(pack_vector(new.vector))
        attributes["embedder"] = new.embedder
    if ep.retention.expires_at is not None:
        attributes["ttl"] = t.epoch_seconds(ep.retention.expires_at)
    return attributes


def adjacency_items(ep: Episode) -> list[dict[str, Any]]:
    """Tag items (timeline by tag) and citation items (summaries that cite an episode)."""
    occ = t.occ_key(ep.occurred_at, ep.event_id)
    ttl = {"ttl": t.epoch_seconds(ep.retention.expires_at)} if ep.retention.expires_at else {}
    items = [{"pk": t.tag_pk(ep.tenant_id, tag), "sk": occ, "eid": ep.event_id, **ttl} for tag in ep.tags]
    items += [
        {"pk": t.ref_pk(ep.tenant_id, ref), "sk": ep.event_id, "etype": ep.event_type.value, **ttl}
        for ref in ep.source_refs
        if cited_event_id(ref) is not None
    ]
    return items


def adjacency_keys(ep: Episode) -> list[dict[str, Any]]:
    """The keys of :func:`adjacency_items` (what deleting an episode deletes with it)."""
    return [{"pk": a["pk"], "sk": a["sk"]} for a in adjacency_items(ep)]


def episode_updates(changes: Changes) -> list[dict[str, Any]]:
    """``UpdateItem`` arguments (no table), one per episode the status and stats changes touch:
    DynamoDB refuses two operations on one item in a transaction, so both kinds merge. A status
    change holds only while the episode still has the expected status; stats need the episode."""
    updates: dict[str, tuple[list[str], dict[str, Any], str]] = {}
    for change in changes.status:
        sets, values, _ = updates.setdefault(change.event_id, ([], {}, "attribute_exists(pk)"))
        sets += ["st = :new", "ep.#status = :new"]
        values.update({":new": change.new.value, ":expected": change.expected.value})
        updates[change.event_id] = (sets, values, "st = :expected")
    for stats in changes.stats:
        sets, values, _ = updates.setdefault(stats.event_id, ([], {}, "attribute_exists(pk)"))
        sets += ["ep.feedbackScore = :f", "ep.feedbackCount = :c", "ep.retentionScore = :r"]
        values.update({":f": stats.feedback_score, ":c": stats.feedback_count, ":r": stats.retention_score})
    made = []
    for event_id, (sets, values, condition) in updates.items():
        update: dict[str, Any] = {
            "Key": t.episode_key(changes.tenant_id, event_id),
            "UpdateExpression": "SET " + ", ".join(sets),
            "ConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }
        if "#status" in update["UpdateExpression"]:
            update["ExpressionAttributeNames"] = {"#status": "status"}
        made.append(update)
    return made


def review_item(review: Review) -> dict[str, Any]:
    """A review, in the status index; while pending also in the timeout sweep's index."""
    attributes: dict[str, Any] = {
        **t.review_key(review.tenant_id, review.review_id),
        "st": review.status,
        "rv": review.to_json_dict(),
        t.BY_REVIEW_STATUS.pk: t.review_status_pk(review.tenant_id, review.status),
        t.BY_REVIEW_STATUS.sk: t.review_status_sk(review.requested_at, review.review_id),
    }
    if review.status is ReviewStatus.PENDING:
        attributes[t.PENDING_REVIEWS.pk] = t.PENDING_REVIEWS_PK
        attributes[t.PENDING_REVIEWS.sk] = t.pending_review_sk(review.requested_at, review.tenant_id, review.review_id)
    return attributes


def review_close(tenant: str, close: ReviewChange) -> dict[str, Any]:
    """``UpdateItem`` arguments (no table) closing a pending review: its new status moves it
    to another ``by_review_status`` partition and takes it out of ``pending_reviews``."""
    return {
        "Key": t.review_key(tenant, close.review_id),
        "UpdateExpression": f"SET st = :new, {t.BY_REVIEW_STATUS.pk} = :g, rv.#status = :new, rv.decidedAt = :d, "
        f"rv.reviewer = :r, rv.note = :n REMOVE {t.PENDING_REVIEWS.pk}, {t.PENDING_REVIEWS.sk}",
        "ConditionExpression": "st = :pending",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {
            ":new": close.status,
            ":g": t.review_status_pk(tenant, close.status),
            ":d": close.decided_at.isoformat(),
            ":r": close.reviewer,
            ":n": close.note,
            ":pending": ReviewStatus.PENDING,
        },
    }


def review_scrub(tenant: str, review_id: str) -> dict[str, Any]:
    """``UpdateItem`` arguments (no table) dropping a review's note."""
    return {
        "Key": t.review_key(tenant, review_id),
        "UpdateExpression": "SET rv.note = :n",
        "ConditionExpression": "attribute_exists(pk)",
        "ExpressionAttributeValues": {":n": None},
    }


def idempotency_item(tenant: str, rec: IdempotencyRecord) -> dict[str, Any]:
    return {
        **t.idempotency_key(tenant, rec.key),
        "requestHash": rec.request_hash,
        "result": json.dumps(rec.result),
        "createdAt": t.iso(rec.created_at),
    }

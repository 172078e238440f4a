"""Property-based isolation over the HTTP API: tenants, actors and privacy classes never leak.

Hypothesis generates a *world* -- at least three tenants, each with an agent and an operator
token, actors and sessions drawn from small pools shared by every tenant (so ids collide
across tenants on purpose), episodes of every privacy class and many event types, among
them ``conversation_turn`` episodes a few seconds apart in shared sessions that mix privacy
classes -- and writes it through ``POST /v1/episodes`` and ``POST /v1/episodes/batch`` of
the real local server (SQLite, the real MiniLM model). Every episode's summary carries a
unique canary word. A busy actor of each tenant gets more than five events in the last 24
hours and the 24-hour summarisation writes its digest.

Then thousands of reads are generated (recall with and without ``actorId``, ``query``,
``neighbours``; timeline pages with and without ``actorId``, also with another tenant's
cursor; GET by id, other tenants' ids included) and every response is checked against the
model of what the caller may see:

* nothing of another tenant ever comes back: no id, no canary, in items, neighbours, the
  ``context`` evidence block, digests or timeline pages; another tenant's id answers 404;
* a ``private`` or ``sensitive`` episode -- its id or its text -- comes back from recall only
  when the recall is scoped to that episode's own actor (never without ``actorId``), and an
  agent's timeline lists it only when scoped to its actor; a digest is text too, so an
  unscoped recall never returns a digest holding a private or sensitive episode's text.

The reads are drawn from a ``random.Random`` seeded by Hypothesis (so a failing world and its
reads replay exactly); a violation names the request that produced it.

Tiers: the default run is derandomized and bounded (a few worlds, about 1,500 reads);
``HYPOTHESIS_PROFILE=fuzz`` selects the ``fuzz`` profile and enables the ``fuzz``-marked test,
which runs many more, larger worlds.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functions.api
from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.domain.model import DigestOutcome
from tests.e2e.conftest import serving
from tests.support.fuzzing import FUZZ_SELECTED

pytestmark = pytest.mark.slow

# ---------------------------------------------------------------------------- tiers (tests/support/fuzzing.py)

DEFAULT_WORLDS, DEFAULT_READS = 3, 600
FUZZ_WORLDS, FUZZ_READS = 40, 1_500

# ---------------------------------------------------------------------------- the server

TENANTS = ["amber", "basalt", "cobalt", "dune"]
TOKENS = {
    tenant: {"agent": f"iso-agent-{tenant}-0000001", "operator": f"iso-oper-{tenant}-00000001"} for tenant in TENANTS
}
TOKEN_SPEC = ",".join(f"{tok}={tenant}:{role}" for tenant, roles in TOKENS.items() for role, tok in roles.items())
ACTOR_SCOPED = ("private", "sensitive")


@dataclass
class Server:
    """The real HTTP server in front of the real handler; each world gets a fresh service."""

    http: httpx.Client
    root: Path
    minilm: Any
    service: MemoryService | None = None
    worlds: int = 0

    def fresh_service(self) -> MemoryService:
        self.close_service()
        self.worlds += 1
        self.service = build_local_service(Settings(data_dir=self.root / f"world-{self.worlds}"), embedder=self.minilm)
        functions.api.set_service(self.service)
        return self.service

    def close_service(self) -> None:
        if self.service is not None:
            functions.api.set_service(None)
            self.service.close()
            self.service = None

    def call(self, tenant: str, role: str, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {TOKENS[tenant][role]}"}
        return self.http.request(method, path, headers=headers, **kw)


@pytest.fixture(scope="module")
def server(tmp_path_factory, minilm) -> Iterator[Server]:
    with serving(None, TOKEN_SPEC) as base_url, httpx.Client(base_url=base_url, timeout=60.0) as client:
        state = Server(http=client, root=tmp_path_factory.mktemp("isolation"), minilm=minilm)
        try:
            yield state
        finally:
            state.close_service()


# ---------------------------------------------------------------------------- the world

ACTOR_POOL = ["user-1", "user-2", "cust-ravi-menon", "dev-priya-nair", "ops-bot"]
SESSION_POOL = ["s-1", "s-2", "s-3"]
TAG_POOL = ["billing", "deploy", "support", "travel", "checkout"]
TRUSTS = ["user_provided", "tool_result", "approved_source"]
OTHER_TYPES = [
    "user_preference_stated",
    "task_milestone",
    "tool_observed_event",
    "incident_or_failure",
    "tool_call",
    "error",
    "feedback",
]
TEMPLATES = [
    "Customer asked for the {c} invoices to be sent as PDF attachments to the finance mailbox",
    "Deployed release 4.{n} of the {c} checkout service to production after the smoke tests passed",
    "Payment gateway {c} returned timeouts for twenty minutes during the nightly settlement batch",
    "User prefers that meetings about the {c} migration project are booked on Tuesday mornings",
    "Support ticket about the {c} shipment was resolved by sending a replacement order",
    "The {c} nightly backup copied {n} GB to the offsite vault and verified the checksums",
    "Travel request for the {c} conference in Lisbon was approved with a budget of {n}00 euros",
]
TURNS = [
    "User asked whether the {c} subscription can move to annual billing from next month",
    "Agent confirmed the {c} subscription will switch to annual billing with a {n} percent discount",
    "User said the {c} invoices must go to the accounts payable team in Porto, not to her",
    "Agent noted that the {c} refund of {n}0 euros will reach the card within five working days",
]
QUERY_WORDS = ["invoices", "billing", "deploy release", "backup vault", "shipment", "annual subscription",
               "payment gateway timeouts", "meeting Tuesday", "conference travel budget", "refund card"]  # fmt: skip
CANARY = re.compile(r"qz\d{5}v")
ULID_LIKE = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def canary(tenant_index: int, serial: int) -> str:
    """Fixed width, so no canary is a substring of another; one per episode, unique in a world."""
    return f"qz{tenant_index}{serial:04d}v"


@dataclass
class Planned:
    tenant: str
    actor: str
    privacy: str
    event_type: str
    canary: str
    body: dict[str, Any]
    via_batch: bool


@dataclass
class Stored:
    event_id: str
    tenant: str
    actor: str
    privacy: str
    event_type: str
    canaries: frozenset[str]
    digest: bool = False


@dataclass
class World:
    planned: list[Planned]
    stored: dict[str, Stored] = field(default_factory=dict)
    canary_owner: dict[str, Stored] = field(default_factory=dict)
    cursors: dict[str, list[str]] = field(default_factory=dict)

    def of(self, tenant: str) -> list[Stored]:
        return [s for s in self.stored.values() if s.tenant == tenant]


PRIVACY = st.sampled_from(["public", "internal", "private", "sensitive"])
DIGESTIBLE = st.sampled_from(["public", "internal", "private"])  # sensitive episodes are never digested


@dataclass
class EpisodeMaker:
    """Builds one tenant's proposals, each with the next canary of that tenant."""

    draw: st.DrawFn
    tenant: str
    now: datetime
    serial: int = 0

    def __call__(self, actor: str, event_type: str, text: str, occurred: datetime, klass: str, **extra: Any) -> Planned:
        draw = self.draw
        word = canary(TENANTS.index(self.tenant), self.serial)
        self.serial += 1
        body: dict[str, Any] = {
            "eventType": event_type,
            "actorId": actor,
            "occurredAt": occurred.isoformat(),
            "summary": text.format(c=word, n=draw(st.integers(1, 9))),
            "sourceRefs": [f"test:{self.tenant}/{word}"],
            "sourceTrust": draw(st.sampled_from(TRUSTS)),
            "confidence": draw(st.sampled_from(["low", "medium", "high"])),
            "importance": draw(st.sampled_from([0.3, 0.5, 0.8])),
            "tags": draw(st.lists(st.sampled_from(TAG_POOL), max_size=2, unique=True)),
            "privacyClass": klass,
            **extra,
        }
        if klass == "sensitive":
            body["retention"] = {"expiresAt": (self.now + timedelta(days=30)).isoformat()}
            body["consent"] = {"required": True, "granted": True}
        return Planned(self.tenant, actor, klass, event_type, word, body, via_batch=draw(st.booleans()))


@st.composite
def worlds(draw: st.DrawFn, max_others: int = 6) -> list[Planned]:
    """Proposals for 3 or 4 tenants, timed relative to now (the digest window is the last 24 hours)."""
    now = datetime.now(UTC).replace(microsecond=0)
    planned: list[Planned] = []
    for tenant in draw(st.lists(st.sampled_from(TENANTS), min_size=3, max_size=4, unique=True)):
        make = EpisodeMaker(draw, tenant, now)
        actors = draw(st.lists(st.sampled_from(ACTOR_POOL), min_size=1, max_size=3, unique=True))
        # the busy actor: more than five digestible events in the last 24 hours (a digest is
        # written), and maybe sensitive ones on top
        classes = draw(st.lists(DIGESTIBLE, min_size=6, max_size=8)) + draw(st.lists(st.just("sensitive"), max_size=2))
        for klass in classes:
            occurred = now - timedelta(minutes=draw(st.integers(30, 22 * 60)))
            event_type, text = draw(st.sampled_from(OTHER_TYPES)), draw(st.sampled_from(TEMPLATES))
            planned.append(make(actors[0], event_type, text, occurred, klass))
        # conversation turns in shared sessions, a few seconds apart, privacy classes mixed
        for session in draw(st.lists(st.sampled_from(SESSION_POOL), min_size=1, max_size=2, unique=True)):
            actor = draw(st.sampled_from(actors))
            occurred = now - timedelta(days=draw(st.integers(0, 20)), hours=draw(st.integers(1, 23)))
            for _ in range(draw(st.integers(2, 5))):
                occurred += timedelta(seconds=draw(st.integers(2, 20)))
                text = draw(st.sampled_from(TURNS))
                planned.append(make(actor, "conversation_turn", text, occurred, draw(PRIVACY), sessionId=session))
        # everything else: any of the tenant's actors, older events
        for _ in range(draw(st.integers(0, max_others))):
            occurred = now - timedelta(days=draw(st.integers(1, 60)), minutes=draw(st.integers(0, 600)))
            actor, event_type = draw(st.sampled_from(actors)), draw(st.sampled_from(OTHER_TYPES))
            planned.append(make(actor, event_type, draw(st.sampled_from(TEMPLATES)), occurred, draw(PRIVACY)))
    return planned


# ---------------------------------------------------------------------------- writing it


def write_world(server: Server, planned: list[Planned]) -> World:
    world = World(planned=planned)

    def keep(plan: Planned, result: dict[str, Any], status: int) -> None:
        assert result.get("decision") == "allow", (
            f"the world's write was not allowed ({status}): {result.get('reasons')} for {plan.body}"
        )
        stored = Stored(
            result["eventId"], plan.tenant, plan.actor, plan.privacy, plan.event_type, frozenset([plan.canary])
        )
        world.stored[stored.event_id] = stored
        world.canary_owner[plan.canary] = stored

    for tenant in dict.fromkeys(p.tenant for p in planned):
        mine = [p for p in planned if p.tenant == tenant]
        batched = [p for p in mine if p.via_batch]
        for plan in (p for p in mine if not p.via_batch):
            response = server.call(tenant, "agent", "POST", "/v1/episodes", json=plan.body)
            keep(plan, response.json(), response.status_code)
        if batched:
            response = server.call(tenant, "agent", "POST", "/v1/episodes/batch",
                                   json={"episodes": [p.body for p in batched]})  # fmt: skip
            assert response.status_code == 200, response.text
            for plan, result in zip(batched, response.json()["results"], strict=True):
                keep(plan, result, response.status_code)
    return world


def summarise_world(server: Server, world: World) -> list[DigestOutcome]:
    """The 24-hour summarisation; each digest joins the world with the canaries it quotes."""
    assert server.service is not None
    outcomes = server.service.summarisation.summarise()
    failures = []
    for outcome in (o for o in outcomes if o.failed):
        try:  # the outcome names only the exception type: run that actor again for the message
            server.service.summarisation.summarise_actor(
                outcome.tenant_id, outcome.actor_id, outcome.window_start, outcome.window_end
            )
            failures.append(f"{outcome}")
        except Exception as exc:
            if "too few events" not in str(exc):  # busy by count, but mostly sensitive: no digest
                failures.append(f"{outcome.tenant_id}/{outcome.actor_id}: {type(exc).__name__}: {exc}")
    assert not failures, "the 24-hour summarisation failed:\n  " + "\n  ".join(failures)
    assert {(o.tenant_id, o.actor_id) for o in outcomes} <= {(p.tenant, p.actor) for p in world.planned}
    digested = {o.tenant_id for o in outcomes if o.decision == "allow"}
    assert digested == {p.tenant for p in world.planned}, f"no digest for every tenant's busy actor: {outcomes}"
    for outcome in outcomes:
        if outcome.decision != "allow":
            continue
        digest = server.service.reads.get(_operator_caller(outcome.tenant_id), outcome.event_id)
        quoted = frozenset(CANARY.findall(digest.summary))
        assert quoted, f"a digest quotes no source sentence: {digest.summary!r}"
        world.stored[digest.event_id] = Stored(
            digest.event_id, digest.tenant_id, digest.actor_id, digest.privacy_class.value,
            "session_summary", quoted, digest=True,
        )  # fmt: skip
    return outcomes


def _operator_caller(tenant: str) -> Any:
    from episodic.domain.model import Caller, Role

    return Caller(tenant_id=tenant, role=Role.OPERATOR, principal_id="test:isolation")


# ---------------------------------------------------------------------------- the checks


@dataclass
class Read:
    tenant: str
    role: str
    method: str
    path: str
    params: dict[str, Any] | None = None
    body: dict[str, Any] | None = None

    def describe(self) -> str:
        parts = [f"{self.method} {self.path} as {self.tenant}:{self.role}"]
        if self.params:
            parts.append(f"params={json.dumps(self.params)}")
        if self.body is not None:
            parts.append(f"body={json.dumps(self.body)}")
        return " ".join(parts)


def may_see(world: World, read: Read, stored: Stored, actor_scope: str | None) -> str | None:
    """Why ``stored`` must not show up in the answer to ``read``; None when it may."""
    if stored.tenant != read.tenant:
        return f"belongs to tenant {stored.tenant}"
    privacy_applies = read.role == "agent" or read.path == "/v1/recall"  # recall feeds prompts: no exception
    if stored.privacy in ACTOR_SCOPED and privacy_applies and actor_scope != stored.actor:
        scope = f"actorId={actor_scope}" if actor_scope else "no actorId"
        return f"is {stored.privacy} to actor {stored.actor}, read with {scope}"
    return None


def leaks(world: World, read: Read, text: str, actor_scope: str | None) -> list[str]:
    """Every canary and every known id in ``text`` that the caller must not see (what the
    request itself carried -- an id in the path, a canary in the query -- may be echoed)."""
    sent = read.describe()
    found = []
    for word in sorted(set(CANARY.findall(text)) - set(CANARY.findall(sent))):
        owner = world.canary_owner.get(word)
        if owner is None:
            found.append(f"unknown canary {word}")
            continue
        why = may_see(world, read, owner, actor_scope)
        if why:
            found.append(f"text of {owner.event_id} ({word}), which {why}")
    for event_id in sorted(set(ULID_LIKE.findall(text)) - set(ULID_LIKE.findall(sent))):
        stored = world.stored.get(event_id)
        if stored is not None and (why := may_see(world, read, stored, actor_scope)):
            found.append(f"id {event_id} ({'digest' if stored.digest else stored.event_type}), which {why}")
    return found


def check(world: World, read: Read, response: httpx.Response, actor_scope: str | None) -> None:
    assert response.status_code < 500, f"{read.describe()} -> {response.status_code} {response.text[:500]}"
    found = leaks(world, read, response.text, actor_scope)
    assert not found, f"{read.describe()} leaked:\n  " + "\n  ".join(found)
    if response.status_code != 200:
        return
    payload = response.json()
    items = payload.get("items") if isinstance(payload, dict) else None
    for item in items or []:
        episode = item.get("episode", item)
        assert episode.get("tenantId") == read.tenant, f"{read.describe()} returned {episode.get('tenantId')}'s episode"
        if read.path == "/v1/recall" or read.role == "agent":
            privacy = episode.get("privacyClass")
            assert privacy not in ACTOR_SCOPED or episode.get("actorId") == actor_scope, (
                f"{read.describe()} returned {privacy} episode {episode.get('eventId')} of {episode.get('actorId')}"
            )
        for turn in item.get("neighbours") or []:
            neighbour = world.stored.get(turn["eventId"])
            assert neighbour is not None and neighbour.tenant == read.tenant, (
                f"{read.describe()} attached a neighbour of another tenant: {turn['eventId']}"
            )
            why = may_see(world, read, neighbour, actor_scope)
            assert why is None, f"{read.describe()} attached neighbour {turn['eventId']}, which {why}"


# ---------------------------------------------------------------------------- the reads


def random_query(rng: random.Random, world: World, tenant: str) -> str:
    words = [rng.choice(QUERY_WORDS)]
    if rng.random() < 0.6:  # name a canary: own, private, or another tenant's
        words.append(rng.choice(sorted(world.canary_owner)))
    if rng.random() < 0.2:
        words.append(rng.choice(["last week", "in the last 3 days", "yesterday", "today"]))
    if rng.random() < 0.2:
        words.append(rng.choice(ACTOR_POOL).split("-")[-1])
    rng.shuffle(words)
    return " ".join(words)


def random_recall(rng: random.Random, world: World, tenant: str) -> tuple[Read, str | None]:
    body: dict[str, Any] = {"limit": rng.choice([1, 5, 10, 50, 100])}
    actor = None
    if rng.random() < 0.5:
        actor = rng.choice(ACTOR_POOL)
        body["actorId"] = actor
    if rng.random() < 0.75:
        body["query"] = random_query(rng, world, tenant)
    if rng.random() < 0.7:
        body["neighbours"] = rng.choice([0, 1, 2, 3])
    if rng.random() < 0.25:
        body["eventTypes"] = rng.sample(["conversation_turn", "session_summary", *OTHER_TYPES], rng.randint(1, 3))
    if rng.random() < 0.1:
        body["statuses"] = ["active", "archived", "superseded"]
    if rng.random() < 0.1:
        body["interpret"] = False
    return Read(tenant, rng.choice(["agent", "operator"]), "POST", "/v1/recall", body=body), actor


def random_timeline(rng: random.Random, world: World, tenant: str) -> tuple[Read, str | None]:
    params: dict[str, Any] = {"limit": rng.choice([1, 3, 10, 200])}
    actor = None
    if rng.random() < 0.4:
        actor = rng.choice(ACTOR_POOL)
        params["actorId"] = actor
    if rng.random() < 0.2:
        params["eventType"] = rng.choice(["conversation_turn", "session_summary", *OTHER_TYPES])
    if rng.random() < 0.2:
        params["tag"] = rng.choice(TAG_POOL)
    if rng.random() < 0.3:
        params["order"] = rng.choice(["asc", "desc"])
    if rng.random() < 0.15:
        params["status"] = ["active", "archived", "superseded"]
    pool = [c for cursors in world.cursors.values() for c in cursors]
    if pool and rng.random() < 0.3:  # a cursor from any tenant's earlier page, this one's or not
        params["cursor"] = rng.choice(pool)
    return Read(tenant, rng.choice(["agent", "agent", "operator"]), "GET", "/v1/timeline", params=params), actor


def plan_read(rng: random.Random, world: World, tenants: list[str], ids: list[str]) -> tuple[str, Read, str | None]:
    tenant = rng.choice(tenants)
    kind = rng.choices(["recall", "timeline", "get"], weights=[5, 3, 2])[0]
    if kind == "get":
        event_id = rng.choice(ids)
        owner = world.stored[event_id]
        read = Read(tenant, rng.choice(["agent", "operator"]), "GET", f"/v1/episodes/{event_id}")
        # by id is explicit: an own private episode may be read, nothing of another tenant
        return kind, read, owner.actor if owner.tenant == tenant else None
    if kind == "recall":
        return (kind, *random_recall(rng, world, tenant))
    return (kind, *random_timeline(rng, world, tenant))


def execute(server: Server, world: World, kind: str, read: Read, actor: str | None) -> tuple[int, int, list[str]]:
    """One planned read (a timeline follows up to four pages): (requests, unscoped recall items, cursors)."""
    if kind == "get":
        response = server.call(read.tenant, read.role, read.method, read.path)
        owner = world.stored[read.path.rsplit("/", 1)[1]]
        expected = 200 if owner.tenant == read.tenant else 404
        assert response.status_code == expected, f"{read.describe()} -> {response.status_code} {response.text[:300]}"
        if expected == 404:
            assert response.json().get("error") == "not_found", response.text
        check(world, read, response, actor)
        return 1, 0, []
    if kind == "recall":
        response = server.call(read.tenant, read.role, read.method, read.path, json=read.body)
        assert response.status_code == 200, f"{read.describe()} -> {response.status_code} {response.text[:300]}"
        check(world, read, response, actor)
        return 1, 0 if actor else len(response.json()["items"]), []
    cursors: list[str] = []
    for _ in range(4):
        response = server.call(read.tenant, read.role, read.method, read.path, params=read.params)
        # a cursor of another tenant's or another query's page may be refused, never served
        assert response.status_code in (200, 400, 422), (
            f"{read.describe()} -> {response.status_code} {response.text[:300]}"
        )
        check(world, read, response, actor)
        cursor = response.json().get("nextCursor") if response.status_code == 200 else None
        if cursor is None:
            break
        cursors.append(cursor)
        read = Read(read.tenant, read.role, read.method, read.path, params={**(read.params or {}), "cursor": cursor})
    return len(cursors) + 1, 0, cursors


READ_WORKERS = 8
"""Reads run concurrently: the server is threaded, and the service must stay isolated under load."""


def run_reads(server: Server, world: World, rng: random.Random, count: int) -> dict[str, int]:
    """``count`` planned reads, planned in order from ``rng`` and run eight at a time."""
    tenants = sorted({p.tenant for p in world.planned})
    ids = sorted(world.stored)
    done = {"recall": 0, "timeline": 0, "get": 0, "requests": 0, "unscoped_recall_items": 0}
    with ThreadPoolExecutor(max_workers=READ_WORKERS) as pool:
        while (planned := sum(done[k] for k in ("recall", "timeline", "get"))) < count:
            batch = [plan_read(rng, world, tenants, ids) for _ in range(min(64, count - planned))]
            for (kind, read, _), (requests, unscoped, cursors) in zip(
                batch, pool.map(lambda planned_read: execute(server, world, *planned_read), batch), strict=True
            ):
                done[kind] += 1
                done["requests"] += requests
                done["unscoped_recall_items"] += unscoped
                world.cursors.setdefault(read.tenant, []).extend(cursors)
    return done


def check_digests_never_leak_unscoped(server: Server, world: World) -> int:
    """Recall of digests without an actor: never one holding a private or sensitive episode's text."""
    returned = 0
    for tenant in sorted({p.tenant for p in world.planned}):
        for query in (None, "summary of the day", *QUERY_WORDS[:4]):
            body: dict[str, Any] = {"eventTypes": ["session_summary"], "limit": 100}
            if query:
                body["query"] = query
            read = Read(tenant, "agent", "POST", "/v1/recall", body=body)
            response = server.call(tenant, "agent", "POST", "/v1/recall", json=body)
            assert response.status_code == 200, response.text
            check(world, read, response, None)
            returned += len(response.json()["items"])
    return returned


# ---------------------------------------------------------------------------- the properties


def exercise(server: Server, minilm: Any, planned: list[Planned], rng: random.Random, reads: int) -> dict[str, int]:
    server.fresh_service()
    world = write_world(server, planned)
    assert len(world.stored) == len(planned)
    summarise_world(server, world)
    digests = check_digests_never_leak_unscoped(server, world)
    done = run_reads(server, world, rng, reads)
    done["digests_recalled_unscoped"] = digests
    return done


@settings(max_examples=DEFAULT_WORLDS)
@given(planned=worlds(), seed=st.integers(0, 2**32 - 1))
def test_given_random_tenants_and_privacy_classes_when_reading_over_http_then_nothing_leaks(
    server: Server, minilm: Any, planned: list[Planned], seed: int
) -> None:
    done = exercise(server, minilm, planned, random.Random(seed), DEFAULT_READS)

    assert done["recall"] and done["timeline"] and done["get"], done


@pytest.mark.fuzz
@pytest.mark.skipif(not FUZZ_SELECTED, reason="fuzz tier: run with HYPOTHESIS_PROFILE=fuzz (make test-fuzz)")
@settings(max_examples=FUZZ_WORLDS)
@given(planned=worlds(max_others=24), seed=st.integers(0, 2**32 - 1))
def test_given_many_random_worlds_when_fuzzing_reads_then_nothing_leaks(
    server: Server, minilm: Any, planned: list[Planned], seed: int
) -> None:
    done = exercise(server, minilm, planned, random.Random(seed), FUZZ_READS)

    assert done["recall"] and done["timeline"] and done["get"], done


# ---------------------------------------------------------------------------- the checks can fail


def test_given_a_private_canary_in_an_unscoped_answer_when_checked_then_it_is_reported() -> None:
    """The checker itself: a response quoting another tenant's or a private episode's canary fails."""
    secret = Stored("01J000000000000000000000AA", "amber", "user-1", "private", "tool_call", frozenset(["qz00001v"]))
    foreign = Stored("01J000000000000000000000BB", "basalt", "user-1", "public", "tool_call", frozenset(["qz10001v"]))
    world = World(planned=[], stored={s.event_id: s for s in (secret, foreign)},
                  canary_owner={"qz00001v": secret, "qz10001v": foreign})  # fmt: skip
    read = Read("amber", "agent", "POST", "/v1/recall", body={"query": "x"})

    unscoped = leaks(world, read, 'summary: "paid with qz00001v" and 01J000000000000000000000BB', None)
    scoped = leaks(world, read, 'summary: "paid with qz00001v"', "user-1")

    assert len(unscoped) == 2
    assert "private to actor user-1" in unscoped[0]
    assert "belongs to tenant basalt" in unscoped[1]
    assert scoped == []

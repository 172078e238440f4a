"""Property-based: whoever asks -- a credential bound to actors, a tenant-wide one narrowed by the
actor header, a model behind the MCP server -- acts only for its actors and reads nobody else's
private or sensitive episodes, over HTTP and through the MCP SDK's own client.

Hypothesis draws a world: the tenant-wide backend writes episodes for four actors of tenant
``acme`` (every privacy class, some held for review), each with a unique canary word. Then a
seeded stream of actions by random principals -- writes, batches, conversation turns with random
speakers, corrections, erasures, feedback, recalls, timelines, reads by id, with random actor ids
in the arguments -- goes to the real server, and every answer is checked:

* a principal never writes, corrects, erases or votes for an actor it does not act for: such a
  request is refused (403/404), and what it asked for is not there afterwards;
* no answer to a principal holds the id or the canary of another actor's private or sensitive
  episode, nor of an episode held for review;
* the actor ``victim`` belongs to no principal: after all of it, its episodes are exactly what
  the backend wrote.

The default tier runs a few worlds (HTTP and MCP); the fuzz tier many more.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client as McpClient

import functions.api
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.entrypoints.mcp.credentials import StdioSessions
from episodic.entrypoints.mcp.server import build_server
from tests.e2e.conftest import serving
from tests.support.fuzzing import FUZZ_SELECTED

pytestmark = pytest.mark.slow

BACKEND, OPERATOR = "prop-backend-token-00001", "prop-operator-token-0001"
SAM, PAIR = "prop-sam-token-000000001", "prop-pair-token-00000001"
TOKEN_SPEC = f"{BACKEND}=acme:agent,{OPERATOR}=acme:operator,{SAM}=acme:agent:sam,{PAIR}=acme:agent:ana+bot"
ACTORS = ["sam", "ana", "bot", "victim"]
PRINCIPALS: dict[str, tuple[str, str | None, frozenset[str]]] = {
    # name: (token, actor header, the actors it acts for)
    "sam-token": (SAM, None, frozenset({"sam"})),
    "pair-token": (PAIR, None, frozenset({"ana", "bot"})),
    "backend-as-ana": (BACKEND, "ana", frozenset({"ana"})),
    "backend-as-bot": (BACKEND, "bot", frozenset({"bot"})),
    "pair-as-bot": (PAIR, "bot", frozenset({"bot"})),
}
CANARY = re.compile(r"zq\d{4}k")
ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
TEXTS = [
    "{c} asked for the invoices of the Lisbon office as PDF",
    "{c} booked the offsite in Porto for the second week of March",
    "{c} reported that the payment gateway timed out during checkout",
    "{c} moved the weekly report to Thursdays after the data delay",
]


@dataclass
class Seeded:
    event_id: str
    actor: str
    privacy: str
    held: bool
    canary: str


@dataclass
class World:
    seeded: dict[str, Seeded] = field(default_factory=dict)
    by_canary: dict[str, Seeded] = field(default_factory=dict)

    def hidden_from(self, actors: frozenset[str]) -> tuple[set[str], set[str]]:
        """Ids and canaries an agent acting for ``actors`` must never be shown."""
        hidden = [
            s
            for s in self.seeded.values()
            if s.held or (s.privacy in ("private", "sensitive") and s.actor not in actors)
        ]
        return {s.event_id for s in hidden}, {s.canary for s in hidden}


def body(actor: str, text: str, privacy: str = "internal", held: bool = False) -> dict[str, Any]:
    proposal: dict[str, Any] = {
        "eventType": "user_preference_stated", "actorId": actor, "occurredAt": "2026-11-20T10:00:00Z",
        "summary": text, "sourceRefs": ["prop:seed"], "privacyClass": privacy,
        "sourceTrust": "untrusted_content" if held else "user_provided",
    }  # fmt: skip
    if privacy == "sensitive":
        proposal |= {"retention": {"expiresAt": "2027-06-01T00:00:00Z"}, "consent": {"required": True, "granted": True}}
    return proposal


@st.composite
def worlds(draw: st.DrawFn) -> list[tuple[str, str, bool]]:
    """(actor, privacy class, held for review) of each episode the backend writes."""
    return draw(
        st.lists(
            st.tuples(st.sampled_from(ACTORS), st.sampled_from(["internal", "private", "sensitive"]), st.booleans()),
            min_size=6,
            max_size=14,
        )
    )


# ---------------------------------------------------------------------------- the server and the world


@dataclass
class Server:
    base_url: str
    http: httpx.Client
    root: Any
    minilm: Any
    worlds: int = 0
    service: Any = None

    def call(self, token: str, header: str | None, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} | ({"X-Episodic-Actor": header} if header else {})
        return self.http.request(method, path, headers=headers, **kw)

    def fresh(self, planned: list[tuple[str, str, bool]]) -> World:
        if self.service is not None:
            functions.api.set_service(None)
            self.service.close()
        self.worlds += 1
        self.service = build_local_service(Settings(data_dir=self.root / f"w{self.worlds}"), embedder=self.minilm)
        functions.api.set_service(self.service)
        world = World()
        for n, (actor, privacy, held) in enumerate(planned):
            canary = f"zq{n:04d}k"
            response = self.call(BACKEND, None, "POST", "/v1/episodes",
                                 json=body(actor, TEXTS[n % len(TEXTS)].format(c=canary), privacy, held))  # fmt: skip
            assert response.status_code == (202 if held else 201), response.text
            seeded = Seeded(response.json()["eventId"], actor, privacy, held, canary)
            world.seeded[seeded.event_id] = seeded
            world.by_canary[canary] = seeded
        return world

    def victims_view(self) -> list[tuple[str, str, int, str]]:
        statuses = [("status", s) for s in ("active", "pending_review", "superseded", "archived")]
        page = self.call(OPERATOR, None, "GET", "/v1/timeline", params=[("actorId", "victim"), ("limit", "200"),
                                                                         *statuses]).json()  # fmt: skip
        return sorted((e["eventId"], e["status"], e["feedbackCount"], e["summary"]) for e in page["items"])


@pytest.fixture(scope="module")
def server(tmp_path_factory, minilm) -> Iterator[Server]:
    with serving(None, TOKEN_SPEC) as base_url, httpx.Client(base_url=base_url, timeout=60.0) as http:
        state = Server(base_url, http, tmp_path_factory.mktemp("principals"), minilm)
        yield state
        if state.service is not None:
            functions.api.set_service(None)
            state.service.close()


# ---------------------------------------------------------------------------- the checks


def assert_nothing_hidden(world: World, who: str, actors: frozenset[str], what: str, text: str) -> None:
    hidden_ids, hidden_canaries = world.hidden_from(actors)
    shown_ids = set(ULID.findall(text)) & hidden_ids
    shown_canaries = set(CANARY.findall(text)) & hidden_canaries
    assert not shown_ids and not shown_canaries, f"{who} was shown {shown_ids | shown_canaries} by {what}"


def assert_refused_or_own(who: str, actors: frozenset[str], target_actor: str, status: int, what: str) -> None:
    if target_actor not in actors:
        assert status in (403, 404), f"{who} {what} for {target_actor}: {status}"


# ---------------------------------------------------------------------------- HTTP


def http_actions(server: Server, world: World, rng: random.Random, count: int) -> None:
    ids = sorted(world.seeded)
    for _ in range(count):
        who = rng.choice(sorted(PRINCIPALS))
        token, header, actors = PRINCIPALS[who]
        actor = rng.choice(ACTORS)
        kind = rng.choice(["write", "batch", "turns", "correct", "erase", "feedback", "recall", "get", "timeline"])
        target = world.seeded[rng.choice(ids)]
        if kind == "write":
            response = server.call(token, header, "POST", "/v1/episodes", json=body(actor, f"{who} noted a new plan"))
            assert_refused_or_own(who, actors, actor, response.status_code, "wrote")
            if response.status_code in (201, 202):
                assert response.json().get("episode", {}).get("actorId", actor) in actors
        elif kind == "batch":
            chosen = [rng.choice(ACTORS) for _ in range(3)]
            items = [body(a, f"{who} batch item for {a}") for a in chosen]
            response = server.call(token, header, "POST", "/v1/episodes/batch", json={"episodes": items})
            if not set(chosen) <= actors:
                assert response.status_code == 403, f"{who} batch for {chosen}: {response.status_code}"
        elif kind == "turns":
            speakers = [rng.choice(ACTORS) for _ in range(2)]
            turns = [{"turnId": f"t{n}", "speaker": s, "text": f"{s} signed up for the pottery class on Thursdays",
                      "occurredAt": "2026-11-21T10:00:00Z"} for n, s in enumerate(speakers)]  # fmt: skip
            response = server.call(token, header, "POST", f"/v1/sessions/s{rng.randint(0, 9)}/turns",
                                   json={"turns": turns})  # fmt: skip
            if not set(speakers) <= actors:
                assert response.status_code == 403, f"{who} turns by {speakers}: {response.status_code}"
        elif kind in ("correct", "erase", "feedback"):
            path = f"/v1/episodes/{target.event_id}"
            if kind == "correct":
                response = server.call(
                    token,
                    header,
                    "POST",
                    f"{path}/corrections",
                    json={k: v for k, v in body(actor, "corrected").items() if k != "actorId"},
                )
            elif kind == "erase":
                response = server.call(token, header, "DELETE", path)
            else:
                response = server.call(token, header, "POST", f"{path}/feedback", json={"helpful": rng.random() < 0.5})
            assert_refused_or_own(who, actors, target.actor, response.status_code, kind)
            assert_nothing_hidden(world, who, actors, kind, response.text.replace(target.event_id, ""))
        else:
            if kind == "recall":
                query = {"query": rng.choice(["invoices", "offsite Porto", "payment gateway", "weekly report"]),
                         "neighbours": 2} | ({"actorId": actor} if rng.random() < 0.7 else {})  # fmt: skip
                response = server.call(token, header, "POST", "/v1/recall", json=query)
            elif kind == "get":
                response = server.call(token, header, "GET", f"/v1/episodes/{target.event_id}")
            else:
                response = server.call(token, header, "GET", "/v1/timeline",
                                       params={"actorId": actor} if rng.random() < 0.7 else {})  # fmt: skip
            assert response.status_code < 500, response.text
            text = response.text.replace(target.event_id, "") if kind == "get" else response.text
            assert_nothing_hidden(world, who, actors, kind, text)


def run_world(server: Server, planned: list[tuple[str, str, bool]], seed: int, actions: int) -> None:
    world = server.fresh(planned)
    victims = server.victims_view()
    http_actions(server, world, random.Random(seed), actions)
    asyncio.run(mcp_actions(server, world, random.Random(seed + 1), actions // 3))
    assert server.victims_view() == victims, "an episode of an actor nobody acts for changed"


# ---------------------------------------------------------------------------- MCP


async def mcp_actions(server: Server, world: World, rng: random.Random, count: int) -> None:
    """The same kinds of actions through the MCP tools of a server bound to one actor, driven by
    the MCP SDK's client in process (the server talks to the real HTTP service)."""
    ids = sorted(world.seeded)
    for bound in ("sam", "ana"):
        actors = frozenset({bound})
        tools = build_server(StdioSessions(server.base_url, bound, token=BACKEND))  # narrowed to ``bound``
        async with McpClient(tools) as client:
            for _ in range(count // 2):
                actor, target = rng.choice(ACTORS), world.seeded[rng.choice(ids)]
                tool, arguments = rng.choice(
                    [
                        ("recall_episodes", {"query": "invoices offsite payment", "actor_id": actor}),
                        ("list_timeline", {"actor_id": actor}),
                        ("get_episode", {"event_id": target.event_id}),
                        ("give_feedback", {"event_id": target.event_id, "helpful": False}),
                        ("forget_episode", {"event_id": target.event_id}),
                        ("correct_episode", {"event_id": target.event_id, "summary": "changed", "source_refs": ["x"]}),
                        ("remember_conversation", {"session_id": "m1", "turns": [
                            {"turnId": "m1-1", "speaker": actor, "text": f"{actor} is moving to Braga in May",
                             "occurredAt": "2026-11-22T10:00:00Z"}]}),
                    ]
                )  # fmt: skip
                result = await client.call_tool(tool, arguments)
                text = " ".join(getattr(c, "text", "") for c in result.content) + str(result.structured_content)
                text = text.replace(target.event_id, "")  # the id asked about may be echoed
                assert_nothing_hidden(world, f"mcp:{bound}", actors, tool, text)
                changed_for = actor if tool == "remember_conversation" else target.actor
                if tool in CHANGING_TOOLS and changed_for not in actors:
                    assert result.is_error, f"mcp:{bound} {tool} for {changed_for} was not refused: {text[:300]}"


CHANGING_TOOLS = frozenset({"give_feedback", "forget_episode", "correct_episode", "remember_conversation"})


# ---------------------------------------------------------------------------- the properties


@settings(max_examples=3)
@given(planned=worlds(), seed=st.integers(0, 2**32 - 1))
def test_given_random_principals_and_actions_when_served_over_http_and_mcp_then_no_actor_is_overstepped(
    server: Server, planned: list[tuple[str, str, bool]], seed: int
) -> None:
    run_world(server, planned, seed, actions=120)


@pytest.mark.fuzz
@pytest.mark.skipif(not FUZZ_SELECTED, reason="fuzz tier: run with HYPOTHESIS_PROFILE=fuzz (make test-fuzz)")
@settings(max_examples=25)
@given(planned=worlds(), seed=st.integers(0, 2**32 - 1))
def test_given_many_worlds_of_principals_when_fuzzed_then_no_actor_is_overstepped(
    server: Server, planned: list[tuple[str, str, bool]], seed: int
) -> None:
    run_world(server, planned, seed, actions=400)


def test_given_a_hidden_canary_in_an_answer_when_checked_then_it_is_reported() -> None:
    """The checker itself: another actor's private canary, or a held one, fails the check."""
    world = World()
    for seeded in (Seeded("01J000000000000000000000AA", "victim", "private", False, "zq0001k"),
                   Seeded("01J000000000000000000000BB", "sam", "internal", True, "zq0002k")):  # fmt: skip
        world.seeded[seeded.event_id] = seeded
    with pytest.raises(AssertionError, match="zq0001k"):
        assert_nothing_hidden(world, "sam-token", frozenset({"sam"}), "recall", "... zq0001k ...")
    with pytest.raises(AssertionError, match="01J000000000000000000000BB"):
        assert_nothing_hidden(world, "sam-token", frozenset({"sam"}), "get", "01J000000000000000000000BB")
    assert_nothing_hidden(world, "victim-bound", frozenset({"victim"}), "recall", "zq0001k")

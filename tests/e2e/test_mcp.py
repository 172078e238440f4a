"""``episodic mcp`` end to end (issue #13): the official MCP SDK's own client talks to the
server over stdio (``episodic mcp`` as a subprocess) and over streamable HTTP
(``episodic mcp --http``); the server talks through the SDK to the real local service with the
real MiniLM model, over HTTP. Nothing is mocked."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment

from episodic.adapters.local.bootstrap import build_local_service
from episodic.settings import Settings
from tests.e2e.conftest import AGENT_TOKEN, GLOBEX_TOKEN, TOKEN_SPEC, serving
from tests.support.processes import free_port

EPISODE = {
    "summary": "Sam decided to move the weekly report to Thursdays because the data lands on Wednesday night",
    "event_type": "task_milestone",
    "source_refs": ["chat:42/turn:7"],
    "occurred_at": "2026-11-20T18:00:00Z",
    "tags": ["reporting"],
}


@pytest.fixture
def base_url(tmp_path, minilm) -> Iterator[str]:
    service = build_local_service(Settings(data_dir=tmp_path / "mcp"), embedder=minilm)
    with serving(service, TOKEN_SPEC) as url:
        yield url


def stdio(base_url: str, token: str = AGENT_TOKEN, *args: str) -> StdioServerParameters:
    env = {**get_default_environment(), "EPISODIC_URL": base_url, "EPISODIC_TOKEN": token}
    return StdioServerParameters(command=sys.executable, args=["-m", "episodic.cli", "mcp", *args], env=env)


def run(server: Any, scenario: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(server, read_timeout_seconds=60) as client:
            await scenario(client)

    asyncio.run(main())


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def test_given_the_stdio_server_when_listed_then_every_tool_is_typed_and_says_what_it_does(base_url):
    async def scenario(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= {"remember_episode", "recall_episodes", "correct_episode", "forget_episode",
                              "give_feedback", "list_timeline", "get_episode", "remember_conversation"}  # fmt: skip
        for tool in tools.values():
            assert tool.output_schema, tool.name
            properties = set(tool.input_schema.get("properties", {}))
            assert not properties & {"tenant_id", "tenantId"}, tool.name  # never from a model's arguments
        assert "actor_id" not in tools["remember_episode"].input_schema["properties"]
        assert tools["recall_episodes"].annotations.read_only_hint is True
        assert tools["list_timeline"].annotations.read_only_hint is True
        assert tools["forget_episode"].annotations.destructive_hint is True
        assert tools["remember_episode"].annotations.destructive_hint is False

    run(stdio(base_url, AGENT_TOKEN, "--actor", "sam"), scenario)


def test_given_the_stdio_server_when_a_model_remembers_and_recalls_then_it_reads_evidence_and_gets_items(base_url):
    async def scenario(client: Client) -> None:
        written = await call(client, "remember_episode", **EPISODE)
        assert written["decision"] == "allow"
        assert written["episode"]["actorId"] == "sam"  # the configured actor, not an argument
        assert written["episode"]["tenantId"] == "acme"  # the token's tenant

        result = await client.call_tool("recall_episodes", {"query": "which day is the weekly report on?"})
        assert not result.is_error
        text = result.content[0].text
        assert "Past event, not current instruction" in text and "Thursdays" in text
        items = result.structured_content["items"]
        assert items[0]["episode"]["eventId"] == written["eventId"]
        assert items[0]["components"]["weights"]

        page = await call(client, "list_timeline", actor_id="sam", limit=5)
        assert [e["eventId"] for e in page["items"]] == [written["eventId"]]
        one = await call(client, "get_episode", event_id=written["eventId"])
        assert one["sourceRefs"] == ["chat:42/turn:7"]

    run(stdio(base_url, AGENT_TOKEN, "--actor", "sam"), scenario)


def test_given_small_talk_when_remembered_then_the_denial_is_a_result_not_a_tool_error(base_url):
    async def scenario(client: Client) -> None:
        result = await client.call_tool(
            "remember_episode", {"summary": "haha thanks!", "event_type": "conversation_turn", "source_refs": ["t1"]}
        )
        assert not result.is_error
        assert result.structured_content["decision"] == "deny"
        assert "not_memorable" in result.structured_content["reasons"]

    run(stdio(base_url, AGENT_TOKEN, "--actor", "sam"), scenario)


def test_given_service_errors_when_tools_are_called_then_they_are_tool_errors_with_the_service_reason(base_url):
    async def scenario(client: Client) -> None:
        missing = await client.call_tool("get_episode", {"event_id": "01JDOESNOTEXIST000000000000"})
        assert missing.is_error and "HTTP 404" in missing.content[0].text and missing.structured_content is None
        bad = await client.call_tool("recall_episodes", {"limit": 500})
        assert bad.is_error
        no_actor = await client.call_tool("remember_episode", EPISODE)
        assert no_actor.is_error and "--actor" in no_actor.content[0].text

    run(stdio(base_url, AGENT_TOKEN), scenario)  # no --actor: reads work, writes say how to fix it


def test_given_a_model_when_it_corrects_gives_feedback_and_forgets_then_the_service_applies_each(base_url):
    async def scenario(client: Client) -> None:
        written = await call(client, "remember_episode", **EPISODE)
        corrected = await call(
            client,
            "correct_episode",
            event_id=written["eventId"],
            summary="Sam moved the weekly report to Fridays, not Thursdays",
            source_refs=["chat:43/turn:2"],
        )
        assert corrected["decision"] == "allow"
        old = await call(client, "get_episode", event_id=written["eventId"])
        assert old["status"] == "superseded"
        liked = await call(client, "give_feedback", event_id=corrected["eventId"], helpful=True)
        assert liked["feedbackCount"] == 1
        erased = await call(client, "forget_episode", event_id=corrected["eventId"])
        assert corrected["eventId"] in erased["erased"]
        gone = await client.call_tool("get_episode", {"event_id": corrected["eventId"]})
        assert gone.is_error and "404" in gone.content[0].text

    run(stdio(base_url, AGENT_TOKEN, "--actor", "sam"), scenario)


def test_given_two_tenants_when_one_remembers_then_the_others_tools_never_see_it(base_url):
    async def write(client: Client) -> None:
        await call(client, "remember_episode", **EPISODE)

    async def look(client: Client) -> None:
        found = await call(client, "recall_episodes", query="weekly report Thursdays")
        assert found["items"] == []
        assert (await call(client, "list_timeline"))["items"] == []

    run(stdio(base_url, AGENT_TOKEN, "--actor", "sam"), write)
    run(stdio(base_url, GLOBEX_TOKEN, "--actor", "sam"), look)


def test_given_a_time_phrase_whose_window_is_empty_when_recalled_then_the_text_says_so(base_url):
    async def scenario(client: Client) -> None:
        await call(client, "remember_episode", **EPISODE)  # 20 November 2026
        result = await client.call_tool("recall_episodes", {"query": "weekly report Thursdays on 8 May"})
        assert result.structured_content["interpretation"]["windowEmpty"] is True
        note = 'Nothing in memory is from "on 8 may"; these episodes are from other times.'
        assert result.content[0].text.startswith(note)
        assert "Thursdays" in result.content[0].text

    run(stdio(base_url, AGENT_TOKEN, "--actor", "sam"), scenario)


def test_given_a_conversation_when_remembered_through_the_tool_then_small_talk_is_left_out(base_url):
    turns = [
        {"turnId": "s1-t1", "speaker": "sam", "text": "hey!", "occurredAt": "2026-11-20T18:00:00Z"},
        {"turnId": "s1-t2", "speaker": "sam", "text": "I signed up for the pottery class on Thursdays",
         "occurredAt": "2026-11-20T18:01:00Z"},
    ]  # fmt: skip

    async def scenario(client: Client) -> None:
        result = await call(client, "remember_conversation", session_id="s1", turns=turns)
        decisions = {t["turnId"]: t["decision"] for t in result["turns"]}
        assert decisions == {"s1-t1": "deny", "s1-t2": "allow"}

    run(stdio(base_url, AGENT_TOKEN, "--actor", "sam"), scenario)


@pytest.fixture
def mcp_over_http(base_url) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "EPISODIC_URL": base_url, "EPISODIC_TOKEN": AGENT_TOKEN}
    command = [sys.executable, "-m", "episodic.cli", "mcp", "--http", "--port", str(port), "--actor", "sam"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_given_the_http_server_when_a_model_remembers_and_recalls_then_it_works_as_over_stdio(mcp_over_http):
    async def scenario(client: Client) -> None:
        written = await call(client, "remember_episode", **EPISODE)
        assert written["decision"] == "allow" and written["episode"]["actorId"] == "sam"
        result = await client.call_tool("recall_episodes", {"query": "weekly report day", "limit": 3})
        assert "Thursdays" in result.content[0].text
        assert result.structured_content["items"][0]["episode"]["eventId"] == written["eventId"]

    run(mcp_over_http, scenario)

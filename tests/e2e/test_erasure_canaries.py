"""Erasure leaves no byte behind: canaries in every field, through every path, then gone.

``episodic serve`` runs as its own process -- EPISODIC_TOKENS, ``--data-dir``, the sweep every
second -- with its stdout and stderr going to a log file. Unique canary strings are planted
in every field of several episodes of two actors (summary, outcome, tags, details input and
output keys and values, decisions action and rationale, sourceRefs, resourceRefs, sessionId,
projectId, agentId, actorId, correctionPath, consent.consentRef; a feedback note too), one
of them through the review queue and one as a correction. Then the episodes live a life:
recalled (with and without the actor), archived by relevance decay (an in-process forget
with a threshold and idle time that pick exactly the episodes written first), summarised
(``episodic summarize`` against the same data dir), archived by retention expiry (a short
``expiresAt``, swept by the server). Then one actor's episodes are erased one by one
(``DELETE /v1/episodes/{id}``) and the other actor's all at once (``POST /v1/erasure``).

After the server has stopped, no canary -- as UTF-8 bytes, in its JSON-escaped form, or as the
last seven characters of its ASCII core (what a prefix-compressing index would keep) -- may appear
in any file or file name under the data dir (gzip archive files decompressed), in any page of ``GET /v1/audit``,
or in the server's log. The actor ids are canaries too, so erasure by actor leaves no trace
of the actor id either. A control actor that is never erased keeps its canaries: the scan
finds them (and found the erased ones before erasure), so a clean scan means something.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
AGENT_TOKEN = "erasure-agent-token-000001"
OPERATOR_TOKEN = "erasure-oper-token-0000001"
TENANT = "erasco"
DECAY_IDLE_SECONDS = 3.0
DECAY_TYPE = "tool_observed_event"
RECALLED_TYPES = ["task_milestone", "correction_received"]


# ---------------------------------------------------------------------------- canaries


@dataclass(frozen=True)
class Canary:
    value: str
    where: str  # e.g. "by-actor/ep2/details.input key"

    @property
    def core(self) -> str:
        return self.value.rstrip("ñ")

    def needles(self) -> dict[str, bytes]:
        """The forms to look for: UTF-8, JSON-escaped, and the tail of the ASCII core (what an index
        that stores a key as the suffix it does not share with the one before would hold)."""
        return {
            "utf-8": self.value.encode(),
            "json-escaped": json.dumps(self.value)[1:-1].encode(),
            "tail": self.core[-7:].encode(),
        }


SYLLABLES = ["ka", "ze", "ri", "vo", "mu", "pa", "lo", "ne", "ti", "qu", "su", "ba", "fi", "do", "gu", "ja", "xe"]


@dataclass
class Canaries:
    """Pronounceable, letters only (no secret detector mistakes them for a key), unique, with no
    long common prefixes; free-text ones end in ``ñ`` so that their JSON-escaped form differs."""

    rng: random.Random = field(default_factory=lambda: random.Random(20261130))
    made: list[Canary] = field(default_factory=list)

    def word(self, where: str, free_text: bool = True) -> str:
        syllables = SYLLABLES
        while True:
            core = "".join(self.rng.choice(syllables) for _ in range(6))
            if all(core[-7:] not in c.core and c.core[-7:] not in core for c in self.made):
                break
        value = core + ("ñ" if free_text else "")
        self.made.append(Canary(value, where))
        return value

    def of(self, prefix: str) -> list[Canary]:
        return [c for c in self.made if c.where.startswith(prefix)]


def episode_body(canaries: Canaries, label: str, actor: str, occurred: datetime, **overrides: Any) -> dict[str, Any]:
    """A memorable episode with a fresh canary in every field."""

    def c(name: str, free_text: bool = True) -> str:
        return canaries.word(f"{label}/{name}", free_text)

    body: dict[str, Any] = {
        "eventType": "task_milestone",
        "actorId": actor,
        "occurredAt": occurred.isoformat(),
        "summary": f"Renewed the {c('summary')} maintenance contract for the Lisbon warehouse for twelve months",
        "outcome": f"Contract {c('outcome')} signed and filed with procurement",
        "tags": [c("tags", free_text=False)],
        "details": {
            "input": {c("details.input key"): f"quote {c('details.input value')}"},
            "output": {c("details.output key"): f"order {c('details.output value')}"},
        },
        "decisions": [
            {
                "action": f"Approve renewal {c('decisions.action')}",
                "confidence": 0.9,
                "rationale": f"Usage of {c('decisions.rationale')} stayed high all year",
            }
        ],
        "sourceRefs": [f"crm:ticket/{c('sourceRefs')}"],
        "sourceTrust": "tool_result",
        "resourceRefs": [f"contract:{c('resourceRefs')}"],
        "sessionId": c("sessionId", free_text=False),
        "projectId": c("projectId", free_text=False),
        "agentId": c("agentId", free_text=False),
        "correctionPath": f"supersedes nothing yet {c('correctionPath')}",
        "consent": {"required": True, "granted": True, "consentRef": f"consent:{c('consent.consentRef')}"},
        "confidence": "high",
        "importance": 0.6,
    }
    body.update(overrides)
    return body


# ---------------------------------------------------------------------------- the server process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    return env


@dataclass
class Served:
    http: httpx.Client
    data: Path
    log: Path
    process: subprocess.Popen[bytes]

    def as_(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {AGENT_TOKEN if role == 'agent' else OPERATOR_TOKEN}"}

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return int(self.process.returncode)


@pytest.fixture
def served(tmp_path) -> Iterator[Served]:
    data, log, port = tmp_path / "data", tmp_path / "server.log", free_port()
    env = base_env()
    env.update(
        EPISODIC_TOKENS=f"{AGENT_TOKEN}={TENANT}:agent,{OPERATOR_TOKEN}={TENANT}:operator",
        EPISODIC_SWEEP_INTERVAL_SECONDS="1",
    )
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "episodic",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(data),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=env,
        )
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120.0)
    state = Served(http=http, data=data, log=log, process=process)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            try:
                if http.get("/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "episodic serve did not come up:\n" + log.read_text(errors="replace")
            time.sleep(0.5)
        yield state
    finally:
        state.stop()
        http.close()


# ---------------------------------------------------------------------------- scanning


def files_under(root: Path) -> Iterator[tuple[str, bytes]]:
    """(relative name, content) of every file; gzip files also decompressed."""
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        yield f"path name {name}", name.encode()
        if not path.is_file():
            continue
        raw = path.read_bytes()
        yield name, raw
        if raw[:2] == b"\x1f\x8b":
            yield f"{name} (decompressed)", gzip.decompress(raw)


def find(canaries: list[Canary], places: list[tuple[str, bytes]]) -> list[str]:
    found = []
    for canary in canaries:
        for form, needle in canary.needles().items():
            for where, content in places:
                if needle in content:
                    found.append(f"{canary.where} {canary.value!r} ({form}) in {where}")
    return found


def audit_pages(served: Served) -> list[tuple[str, bytes]]:
    pages, cursor = [], None
    for n in range(1000):
        params: dict[str, Any] = {"limit": 1000}
        if cursor:
            params["cursor"] = cursor
        response = served.http.get("/v1/audit", params=params, headers=served.as_("operator"))
        assert response.status_code == 200, response.text
        pages.append((f"GET /v1/audit page {n + 1}", response.content))
        cursor = response.json().get("nextCursor")
        if not cursor:
            return pages
    raise AssertionError("the audit log did not end after 1,000 pages")


# ---------------------------------------------------------------------------- the life of the episodes


def write(served: Served, body: dict[str, Any], expected: int = 201) -> dict[str, Any]:
    response = served.http.post("/v1/episodes", json=body, headers=served.as_("agent"))
    assert response.status_code == expected, response.text
    result = response.json()
    assert not result.get("redactions"), f"a canary was redacted, so it was never stored: {result['redactions']}"
    return result


def recall(served: Served, body: dict[str, Any]) -> dict[str, Any]:
    response = served.http.post("/v1/recall", json=body, headers=served.as_("agent"))
    assert response.status_code == 200, response.text
    return response.json()


def wait_for_audit(served: Served, action: str, event_ids: set[str], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        response = served.http.get(
            "/v1/audit", params={"action": action, "limit": 1000}, headers=served.as_("operator")
        )
        seen = {r["eventId"] for r in response.json()["items"]}
        if event_ids <= seen:
            return
        assert time.monotonic() < deadline, f"no {action} audit record for {sorted(event_ids - seen)}"
        time.sleep(0.5)


def decay_now(data: Path, minilm: Any) -> list[str]:
    """Relevance decay, in-process on the served data dir: every active episode not written or
    recalled in the last DECAY_IDLE_SECONDS goes to the cold archive (threshold: any score)."""
    settings = Settings(data_dir=data, decay_threshold=10.0, decay_idle_days=DECAY_IDLE_SECONDS / 86_400)
    service = build_local_service(settings, embedder=minilm)
    archived, cursor = [], None
    try:
        while True:
            report = service.archival.forget(cursor=cursor)
            archived += report.archived
            cursor = report.next_cursor
            if cursor is None:
                return archived
    finally:
        service.close()


def summarize(data: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "episodic", "summarize", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=base_env(),
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_given_canaries_in_every_field_when_erased_by_id_and_by_actor_then_no_byte_remains(
    served: Served, minilm: Any
) -> None:
    canaries = Canaries()
    now = datetime.now(UTC).replace(microsecond=0)
    by_id_actor = canaries.word("by-id/actorId", free_text=False)
    by_actor = canaries.word("by-actor/actorId", free_text=False)
    control_actor = canaries.word("control/actorId", free_text=False)
    ids: dict[str, str] = {}

    def plant(label: str, actor: str, hours_ago: float, expected: int = 201, **overrides: Any) -> dict[str, Any]:
        body = episode_body(canaries, label, actor, now - timedelta(hours=hours_ago), **overrides)
        result = write(served, body, expected)
        ids[label] = result["eventId"]
        return result

    # written first and never recalled (every recall below leaves their type out): relevance
    # decay will archive these two
    plant("by-id/decayed", by_id_actor, 30, eventType=DECAY_TYPE)
    plant("by-actor/decayed", by_actor, 30, eventType=DECAY_TYPE)
    time.sleep(DECAY_IDLE_SECONDS + 1.5)

    # six or more active events in the last 24 hours per erased actor: a digest each
    for n in range(6):
        plant(f"by-id/ep{n}", by_id_actor, 1 + n)
        plant(f"by-actor/ep{n}", by_actor, 1 + n)
    plant("control/ep0", control_actor, 2)
    # through the review queue, approved by the operator
    held = plant("by-actor/reviewed", by_actor, 3, expected=202, sourceTrust="untrusted_content")
    approved = served.http.post(
        f"/v1/reviews/{held['reviewId']}/decision", json={"decision": "approve"}, headers=served.as_("operator")
    )
    assert approved.status_code == 200, approved.text
    # a correction: ep0 becomes superseded
    correction = episode_body(canaries, "by-actor/correction", by_actor, now - timedelta(minutes=30),
                              eventType="correction_received")  # fmt: skip
    corrected = served.http.post(f"/v1/episodes/{ids['by-actor/ep0']}/corrections", json=correction,
                                 headers=served.as_("agent"))  # fmt: skip
    assert corrected.status_code == 201, corrected.text
    ids["by-actor/correction"] = corrected.json()["eventId"]
    # feedback with a note
    note = canaries.word("by-id/feedback note")
    feedback = served.http.post(f"/v1/episodes/{ids['by-id/ep1']}/feedback", json={"helpful": True, "note": note},
                                headers=served.as_("agent"))  # fmt: skip
    assert feedback.status_code == 200, feedback.text
    # short retention: the server's sweep will move these to the cold archive. The first is in
    # the digest window, so its actor's digest (which lives no longer than its sources) expires
    # with it -- and, being derived text, is not archived; the second is older, and its actor's
    # digest stays active.
    expires = (datetime.now(UTC) + timedelta(seconds=40)).isoformat()  # outlives the digest run below, under load too
    plant("by-id/expiring", by_id_actor, 4, retention={"expiresAt": expires})
    plant("by-actor/expiring", by_actor, 30, retention={"expiresAt": expires})

    # recalled, scoped and unscoped, by canary and by meaning: everything but the decay targets
    for actor in (by_id_actor, by_actor, control_actor):
        body = recall(served, {"actorId": actor, "eventTypes": RECALLED_TYPES, "limit": 100, "neighbours": 3})
        assert body["items"], body
        query = "maintenance contract renewal Lisbon warehouse"
        found = recall(served, {"actorId": actor, "eventTypes": RECALLED_TYPES, "query": query})
        assert found["items"], found
    query = f"contract {canaries.of('by-id/ep2/summary')[0].value}"
    recall(served, {"query": query, "eventTypes": RECALLED_TYPES, "limit": 100})
    archived_by_decay = decay_now(served.data, minilm)
    assert sorted(archived_by_decay) == sorted([ids["by-id/decayed"], ids["by-actor/decayed"]]), archived_by_decay

    # the 24-hour digests, by the maintenance command against the same data dir
    out = summarize(served.data)
    assert sum(1 for line in out.splitlines() if "│ allow " in line) == 2, out  # one digest per actor
    digests = {}
    for actor in (by_id_actor, by_actor):
        found = recall(served, {"actorId": actor, "eventTypes": ["session_summary"], "limit": 10})
        assert len(found["items"]) == 1, found
        digests[actor] = found["items"][0]["episode"]["eventId"]
        assert any(c.core in found["context"] for c in canaries.made), "the digest quotes no source"

    # retention expiry: swept into the cold archive, with the digest of the first (audited, not archived)
    expiring = {ids["by-id/expiring"], ids["by-actor/expiring"], digests[by_id_actor]}
    wait_for_audit(served, "episode.expired", expiring)
    expired = served.http.get(
        "/v1/audit",
        params={"eventId": digests[by_id_actor], "action": "episode.expired"},
        headers=served.as_("operator"),
    ).json()["items"]
    assert expired and expired[0]["detail"]["archived"] is False, expired

    # before erasure the scan sees the canaries: in the database, the archive, and the audit (by id)
    before = list(files_under(served.data))
    for label in ("by-id/ep3", "by-actor/ep3", "by-id/expiring", "by-id/decayed", "by-actor/expiring"):
        summary = next(c for c in canaries.of(f"{label}/summary"))
        assert find([summary], before), f"the scan does not see {summary} before erasure"

    # erasure by id: every episode of one actor, whatever its state (active, decay-archived,
    # expired into the archive); the digest that cited them expired unarchived, so no copy of
    # it is left for the cascade to find (the byte scan below checks that)
    problems: list[str] = []
    erased: set[str] = set()
    for label, event_id in ids.items():
        if label.startswith("by-id/"):
            response = served.http.delete(f"/v1/episodes/{event_id}", headers=served.as_("agent"))
            assert response.status_code == 200, f"DELETE {label} {event_id}: {response.status_code} {response.text}"
            erased |= set(response.json()["erased"])
    if served.http.get(f"/v1/episodes/{digests[by_id_actor]}", headers=served.as_("operator")).status_code != 404:
        problems.append(f"the expired digest {digests[by_id_actor]} citing the erased episodes is still readable")
    # erasure by actor: everything else of the other actor in one request
    response = served.http.post("/v1/erasure", json={"actorId": by_actor, "reason": "subject access request"},
                                headers=served.as_("operator"))  # fmt: skip
    assert response.status_code == 200, response.text
    by_actor_erased = set(response.json()["erased"])
    by_actor_ids = {v for k, v in ids.items() if k.startswith("by-actor/")}
    assert by_actor_ids - {ids["by-actor/expiring"]} <= by_actor_erased | erased, response.json()
    assert response.json()["archivedRecordsDeleted"] >= 1, response.json()
    for event_id in [*ids.values(), *digests.values()]:
        if event_id != ids["control/ep0"]:
            assert served.http.get(f"/v1/episodes/{event_id}", headers=served.as_("agent")).status_code == 404

    audit = audit_pages(served)
    assert served.stop() == 0, served.log.read_text(errors="replace")[-3000:]

    places = [*files_under(served.data), *audit, ("the server log", served.log.read_bytes())]
    erased_canaries = [c for c in canaries.made if not c.where.startswith("control/")]
    leftovers = find(erased_canaries, places)
    if leftovers:
        problems.append(f"{len(leftovers)} trace(s) of erased data remain:\n    " + "\n    ".join(leftovers[:80]))
    assert not problems, "\n".join(problems)
    # the control actor was never erased: the same scan still finds its canaries
    control = [c for c in canaries.of("control/") if c.where.endswith("/summary")]
    assert find(control, places), "the scan finds nothing even where it must: it proves nothing"
    erasures = [r for page in audit for r in json.loads(page[1])["items"] if r["action"] == "actor.erased"]
    assert erasures and all(len(r["detail"]["actorHash"]) == 32 for r in erasures)  # a keyed pseudonym

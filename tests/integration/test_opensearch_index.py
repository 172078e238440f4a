"""The OpenSearch recall index at its HTTP boundary.

No OpenSearch server can run here, so each test starts a small HTTPS server (a self-signed
certificate the client is told to trust) that records every request and answers with the
responses in ``events/opensearch/``. Those are hand-written in the shape OpenSearch 2.x
documents, not captured from a cluster: the adapter has NOT been exercised against a live
OpenSearch domain or Serverless collection. What is real: the production client from
``client_for`` (requests, TLS with certificate checks, SigV4 signing with botocore) and the
exact bytes it puts on the wire, which every test asserts -- method, path and JSON body.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import json
import math
import re
import ssl
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from episodic.adapters.opensearch.client import client_for
from episodic.adapters.opensearch.index import OpenSearchRecallIndex
from episodic.adapters.opensearch.schema import RecallIndexSetupError, index_body
from episodic.application.ports import Scope
from episodic.domain.errors import InvalidRequestError, StorageError
from episodic.domain.model import Episode, EventType, PrivacyClass
from episodic.domain.recall.candidates import Candidate

RECORDED = Path(__file__).parents[2] / "events" / "opensearch"
INDEX = "episodes"
EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
A, B, C = "01KAZ3Q7J9X2B8M4T6V0W1Y3C5", "01KAZ3R2M5N8P1Q4S7T0V3W6X9", "01KAZ3S4A7B0C3D6E9F2G5H8J1"
SUMMARY_A = "Customer wants invoices as PDF, in Portuguese"
ACCESS_KEY, SECRET_KEY, SESSION_TOKEN = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "FAKE-SESSION-TOKEN"


# ---------------------------------------------------------------------------- the HTTP boundary


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        text = self.body.decode()
        assert text.endswith("\n"), "NDJSON bodies end with a newline"
        return [json.loads(line) for line in text.splitlines()]


class FakeOpenSearch:
    """Records each request; answers with the queued (status, body) replies, in order."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.requests: list[Recorded] = []
        self.replies: deque[tuple[int, bytes, float]] = deque()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorder.requests.append(
                    Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                status, payload, delay = recorder.replies.popleft() if recorder.replies else (599, b"", 0.0)
                if delay:  # a slow cluster (tests may patch time.sleep itself, so only when asked)
                    time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.endpoint = f"https://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def reply(self, status: int, recorded: str | None = None, *, delay: float = 0.0) -> None:
        self.replies.append((status, (RECORDED / recorded).read_bytes() if recorded else b"", delay))

    def reply_msearch(self, *answers: dict[str, Any]) -> None:
        """An ``_msearch`` answering with ``answers``, one per search, in order."""
        self.replies.append((200, json.dumps({"took": 5, "responses": list(answers)}).encode(), 0.0))

    def reply_counts(self, total: int, *holding: int, before: tuple[dict[str, Any], ...] = ()) -> None:
        """The first ``_msearch`` of a recall with words: ``before`` (the k-NN search's answer), then
        the counts of :func:`word_counts`: the readable scope's texts, and those holding each word."""
        self.reply_msearch(*before, *(counted(n) for n in (total, *holding)))

    def reply_cluster(self, recorded: str = "info_2_13.json") -> None:
        """``GET /``: the version check before the first recall or index creation."""
        self.reply(200, recorded)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made once per session."""
    folder = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-opensearch")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture
def fake_aws(monkeypatch, tls_files, tmp_path):
    """Fake credentials for the default boto3 chain; trust the test certificate only."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_SESSION_TOKEN": SESSION_TOKEN,
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "SSL_CERT_FILE": str(tls_files[0]),
        "REQUESTS_CA_BUNDLE": str(tls_files[0]),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def opensearch(tls_files, fake_aws) -> Iterator[FakeOpenSearch]:
    fake = FakeOpenSearch(*tls_files)
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def index(opensearch) -> OpenSearchRecallIndex:
    """The adapter on the production client (managed domain: SigV4 service ``es``)."""
    return OpenSearchRecallIndex(client_for(opensearch.endpoint, "eu-west-1", "es"), INDEX, 4, EMBEDDER)


# ---------------------------------------------------------------------------- episodes and expectations


def episode(event_id: str, **overrides: Any) -> Episode:
    data: dict[str, Any] = {
        "eventId": event_id,
        "tenantId": "acme",
        "actorId": "customer-42",
        "projectId": "billing-revamp",
        "eventType": "user_preference_stated",
        "occurredAt": "2026-11-28T09:30:00Z",
        "recordedAt": "2026-11-28T09:30:02Z",
        "summary": SUMMARY_A,
        "outcome": "Template switched to PDF",
        "tags": ["billing", "invoices"],
        "sourceRefs": ["chat:session-9/turn-4"],
        "sourceTrust": "user_provided",
        "privacyClass": "private",
        "retention": {"expiresAt": "2027-05-28T00:00:00Z"},
        "policyVersion": "2026-11-29.1",
    }
    data.update(overrides)
    return Episode.model_validate(data)


def doc_a() -> dict[str, Any]:
    """What episode A must look like in the index: scope fields, search text, vector. Nothing else."""
    return {
        "eventId": A,
        "tenantId": "acme",
        "actorId": "customer-42",
        "projectId": "billing-revamp",
        "eventType": "user_preference_stated",
        "status": "active",
        "privacyClass": "private",
        "tags": ["billing", "invoices"],
        "occurredAt": "2026-11-28T09:30:00Z",
        "expiresAt": "2027-05-28T00:00:00Z",
        "text": f"customer-42 (November 2026): {SUMMARY_A}\nTemplate switched to PDF\nbilling invoices",
        "embedder": EMBEDDER,
        "vector": [0.5, 0.5, 0.5, 0.5],
    }


RETENTION = {
    "bool": {
        "should": [
            {"bool": {"must_not": [{"exists": {"field": "expiresAt"}}]}},
            {"range": {"expiresAt": {"gt": "2026-11-29T12:00:00.000Z"}}},
        ],
        "minimum_should_match": 1,
    }
}

FULL_SCOPE = Scope(
    tenant_id="acme",
    now=NOW,
    actor_id="customer-42",
    project_id="billing-revamp",
    event_types=(EventType.USER_PREFERENCE_STATED, EventType.CORRECTION_RECEIVED),
    tags=("billing", "invoices"),
    occurred_after=datetime(2026, 11, 1, tzinfo=UTC),
    occurred_before=datetime(2026, 11, 29, 10, 15, 30, 123456, tzinfo=UTC),
)

FULL_FILTER = [
    {"term": {"tenantId": "acme"}},
    {"terms": {"status": ["active"]}},
    {"terms": {"privacyClass": ["public", "internal", "private", "sensitive"]}},
    {"term": {"actorId": "customer-42"}},
    {"term": {"projectId": "billing-revamp"}},
    {"terms": {"eventType": ["user_preference_stated", "correction_received"]}},
    {"term": {"tags": "billing"}},
    {"term": {"tags": "invoices"}},
    # milliseconds, the precision OpenSearch dates keep; the upper bound rounds up so nothing
    # inside the window is cut off (the service re-checks every candidate against the timeline)
    {"range": {"occurredAt": {"gte": "2026-11-01T00:00:00.000Z", "lt": "2026-11-29T10:15:30.124Z"}}},
    RETENTION,
]
READABLE_FILTER = [*FULL_FILTER[:4], RETENTION]
"""The full scope without the request's own filters: what the caller may read, the words counted over."""


def knn_search(vector: list[float], k: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "size": k,
        "_source": ["tenantId", "eventId"],
        "query": {
            "knn": {
                "vector": {
                    "vector": vector,
                    "k": k,
                    "filter": {"bool": {"filter": [*filters, {"term": {"embedder": EMBEDDER}}]}},
                }
            }
        },
    }


def bm25_search(weights: dict[str, float], size: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    held = [{"constant_score": {"filter": {"match": {"text": {"query": w}}}, "boost": v}} for w, v in weights.items()]
    return {
        "size": size,
        "_source": ["tenantId", "eventId"],
        "query": {"bool": {"should": held, "minimum_should_match": 1, "filter": filters}},
    }


def count_searches(filters: list[dict[str, Any]], words: list[str]) -> list[dict[str, Any]]:
    """The bodies of :func:`word_counts`, written out: the scope's texts, then those holding each word."""
    bodies = []
    for clauses in [filters, *([*filters, {"match": {"text": {"query": w}}}] for w in words)]:
        bodies.extend([{}, {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": clauses}}}])
    return bodies


def counted(value: int) -> dict[str, Any]:
    """A count's answer in the shape OpenSearch documents for ``size: 0`` with ``track_total_hits``."""
    shards = {"total": 1, "successful": 1, "skipped": 0, "failed": 0}
    hits = {"total": {"value": value, "relation": "eq"}, "max_score": None, "hits": []}
    return {"took": 1, "timed_out": False, "_shards": shards, "hits": hits, "status": 200}


def answer(recorded: str, n: int) -> dict[str, Any]:
    """The ``n``-th answer of a recorded ``_msearch``."""
    return json.loads((RECORDED / recorded).read_text())["responses"][n]


def idf(texts: int, holding: int) -> float:
    """BM25's weight of a word ``holding`` of ``texts`` hold, written out."""
    return math.log((texts - holding + 0.5) / (holding + 0.5))


# ---------------------------------------------------------------------------- cluster version and ensure_index


def doc_id(event_id: str, tenant: str = "acme") -> str:
    """The document id the adapter must use: SHA-256 of ``tenant/eventId``, hex (no escaping needed)."""
    return hashlib.sha256(f"{tenant}/{event_id}".encode()).hexdigest()


def test_given_no_index_when_ensured_then_the_cluster_is_checked_and_the_index_created_behind_its_alias(
    opensearch, index
):
    opensearch.reply_cluster()
    opensearch.reply(404)
    opensearch.reply(200, "create_index.json")

    assert index.ensure_index() is True

    info, head, put = opensearch.requests
    assert (info.method, info.path) == ("GET", "/")
    assert (head.method, head.path, head.body) == ("HEAD", "/_alias/episodes", b"")
    assert (put.method, put.path) == ("PUT", "/episodes-v1")
    assert put.json() == {**index_body(4), "aliases": {"episodes": {}}}
    mapping = put.json()["mappings"]
    assert put.json()["settings"] == {"index": {"knn": True}}
    assert mapping["dynamic"] == "strict"
    assert mapping["properties"]["vector"] == {
        "type": "knn_vector",
        "dimension": 4,
        "method": {
            "name": "hnsw",
            "engine": "faiss",
            "space_type": "innerproduct",
            "parameters": {"m": 16, "ef_construction": 128},
        },
    }
    keywords = {name for name, field in mapping["properties"].items() if field["type"] == "keyword"}
    assert keywords == {
        "eventId",
        "tenantId",
        "actorId",
        "projectId",
        "eventType",
        "status",
        "privacyClass",
        "tags",
        "embedder",
    }
    assert mapping["properties"]["occurredAt"]["type"] == mapping["properties"]["expiresAt"]["type"] == "date"
    assert mapping["properties"]["text"] == {"type": "text", "analyzer": "english"}
    assert set(mapping["properties"]) == keywords | {"occurredAt", "expiresAt", "text", "vector"}


def test_given_an_existing_alias_when_ensured_then_only_the_cluster_and_the_alias_are_checked(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply(200)

    assert index.ensure_index() is False

    assert [(r.method, r.path) for r in opensearch.requests] == [("GET", "/"), ("HEAD", "/_alias/episodes")]


def test_given_another_writer_creates_the_index_first_when_ensured_then_that_is_fine(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply(404)
    opensearch.reply(400, "create_index_already_exists.json")
    opensearch.reply(200)

    assert index.ensure_index() is False

    assert [(r.method, r.path) for r in opensearch.requests] == [
        ("GET", "/"),
        ("HEAD", "/_alias/episodes"),
        ("PUT", "/episodes-v1"),
        ("HEAD", "/_alias/episodes"),
    ]


def test_given_the_index_without_its_alias_when_ensured_then_an_operator_is_asked_to_act(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply(404)
    opensearch.reply(400, "create_index_already_exists.json")
    opensearch.reply(404)

    with pytest.raises(RecallIndexSetupError, match="episodes-v1 exists without its alias episodes"):
        index.ensure_index()


def test_given_an_index_named_like_the_alias_when_ensured_then_it_is_refused_with_what_to_do(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply(404)
    opensearch.reply(400, "create_index_alias_name_taken.json")

    with pytest.raises(RecallIndexSetupError, match="an index named episodes is in the way") as raised:
        index.ensure_index()

    assert raised.value.status == 500


@pytest.mark.parametrize(
    ("recorded", "message"),
    [
        ("info_2_11.json", r"needs OpenSearch 2\.13 or newer; this cluster runs OpenSearch 2\.11\.0$"),
        ("info_compatibility_mode.json", r"runs OpenSearch 7\.10\.2 .*override_main_response_version off"),
        ("info_elasticsearch.json", r"needs OpenSearch 2\.13 or newer; the endpoint is not OpenSearch \(7\.10\.2\)"),
    ],
    ids=["opensearch-2.11", "compatibility-mode", "elasticsearch"],
)
def test_given_an_unsupported_cluster_when_ensured_or_recalled_then_it_is_refused_before_anything_else(
    opensearch, index, recorded, message
):
    opensearch.reply_cluster(recorded)
    opensearch.reply_cluster(recorded)

    with pytest.raises(RecallIndexSetupError, match=message):
        index.ensure_index()
    with pytest.raises(RecallIndexSetupError, match=message):
        index.candidates(FULL_SCOPE, "invoice", [1.0, 0.0, 0.0, 0.0], 10, embedder=EMBEDDER)

    assert [(r.method, r.path) for r in opensearch.requests] == [("GET", "/"), ("GET", "/")]


def test_given_a_supported_cluster_when_recalling_twice_then_its_version_is_asked_once(opensearch, index):
    opensearch.reply(200, "info_2_13.json")
    for _ in range(2):
        opensearch.reply_counts(40, 3)
        opensearch.reply(200, "msearch_bm25_only.json")

    for _ in range(2):
        index.candidates(FULL_SCOPE, "invoice", None, 10)

    assert [(r.method, r.path) for r in opensearch.requests] == [("GET", "/")] + [("POST", "/episodes/_msearch")] * 4
    assert index.verify_cluster() == "2.13.0"


# ---------------------------------------------------------------------------- candidates


def test_given_a_query_and_a_vector_when_recalling_then_filtered_knn_and_the_word_counts_go_first_then_the_words(
    opensearch, index
):
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 3, 12, before=(answer("msearch_knn_and_bm25.json", 0),))
    opensearch.reply_msearch(answer("msearch_knn_and_bm25.json", 1))

    found = index.candidates(FULL_SCOPE, "  invoice format  ", [1.0, 0.0, 0.0, 0.0], 25, embedder=EMBEDDER)

    _, request, words = opensearch.requests
    assert (request.method, request.path) == (words.method, words.path) == ("POST", "/episodes/_msearch")
    assert request.ndjson() == [
        {},
        knn_search([1.0, 0.0, 0.0, 0.0], 25, FULL_FILTER),
        *count_searches(READABLE_FILTER, ["invoice", "format"]),
    ]
    knn = request.ndjson()[1]["query"]["knn"]["vector"]
    assert knn["filter"]["bool"]["filter"][0] == {"term": {"tenantId": "acme"}}, "efficient filter, tenant first"
    assert {"term": {"embedder": EMBEDDER}} in knn["filter"]["bool"]["filter"]
    assert "post_filter" not in request.ndjson()[1]
    sent = words.ndjson()
    assert sent[:1] == [{}] and len(sent) == 2
    assert sent[1]["query"]["bool"]["filter"] == FULL_FILTER
    expected = bm25_search({"invoice": idf(40, 3), "format": idf(40, 12)}, 25, FULL_FILTER)["query"]["bool"]["should"]
    held = sent[1]["query"]["bool"]["should"]
    assert [c["constant_score"]["filter"] for c in held] == [c["constant_score"]["filter"] for c in expected]
    boosts = [c["constant_score"]["boost"] for c in expected]
    assert [c["constant_score"]["boost"] for c in held] == pytest.approx(boosts)

    assert found.degraded == ()
    by_id = {c.event_id: c for c in found.items}
    assert set(by_id) == {A, B, C}, "the union of both hit lists, as event ids"
    assert by_id[A].lexical == pytest.approx(7.1042585)
    assert by_id[A].semantic == pytest.approx(0.8)  # score 1.8 = 1 + ip
    assert by_id[B] == Candidate(event_id=B, lexical=0.0, semantic=pytest.approx(-0.25))  # score 0.8 = 1/(1 - ip)
    assert by_id[C] == Candidate(event_id=C, lexical=pytest.approx(3.2187934), semantic=0.0)


def test_given_only_a_query_text_when_recalling_then_the_words_are_counted_then_searched(opensearch, index):
    scope = Scope(tenant_id="acme", now=NOW, privacy_classes=(PrivacyClass.PUBLIC, PrivacyClass.INTERNAL))
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 3)
    opensearch.reply(200, "msearch_bm25_only.json")

    found = index.candidates(scope, "invoice", None, 10).items

    _, request, words = opensearch.requests
    base = [
        {"term": {"tenantId": "acme"}},
        {"terms": {"status": ["active"]}},
        {"terms": {"privacyClass": ["public", "internal"]}},
        RETENTION,
    ]
    assert (request.method, request.path) == ("POST", "/episodes/_msearch")
    assert request.ndjson() == count_searches(base, ["invoice"])
    assert words.ndjson() == [{}, bm25_search({"invoice": idf(40, 3)}, 10, base)]
    assert found == [Candidate(event_id=C, lexical=pytest.approx(2.4519653), semantic=0.0)]


def test_given_a_spanish_question_and_episode_then_the_bm25_search_and_the_document_carry_their_stems(
    opensearch, index
):
    """The same words the local index searches (:mod:`episodic.domain.recall.languages`): the
    question's stems without its filler, the text and a line of its stems."""
    scope = Scope(tenant_id="acme", now=NOW, privacy_classes=(PrivacyClass.PUBLIC, PrivacyClass.INTERNAL))
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 2, 3, 1)
    opensearch.reply(200, "msearch_bm25_only.json")
    opensearch.reply(201, "index_doc_created.json")

    index.candidates(scope, "¿Cuándo empezó a trabajar en la panadería?", None, 10)
    spanish = "Los sábados trabajo en la panadería de mi tío"
    index.upsert(episode(A, summary=spanish, outcome=None, tags=[]), None)

    _, counts, search, put = opensearch.requests
    assert [body["query"]["bool"]["filter"][-1] for body in counts.ndjson()[3::2]] == [
        {"match": {"text": {"query": stem}}} for stem in ("empez", "trabaj", "panaderi")
    ]
    held = search.ndjson()[1]["query"]["bool"]["should"]
    assert [c["constant_score"]["filter"]["match"]["text"]["query"] for c in held] == ["empez", "trabaj", "panaderi"]
    assert put.json()["text"] == f"customer-42 (November 2026): {spanish}\ncustom novemb sab trabaj panaderi"


def test_given_a_query_vector_of_another_model_when_recalling_then_no_knn_search_is_sent(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 3)
    opensearch.reply(200, "msearch_bm25_only.json")

    found = index.candidates(FULL_SCOPE, "invoice", [0.2] * 1024, 10, embedder="amazon.titan-embed-text-v2:0").items

    _, request, words = opensearch.requests
    assert request.ndjson() == count_searches(READABLE_FILTER, ["invoice"])
    assert words.ndjson() == [{}, bm25_search({"invoice": idf(40, 3)}, 10, FULL_FILTER)]
    assert found == [Candidate(event_id=C, lexical=pytest.approx(2.4519653), semantic=0.0)]


def test_given_no_query_when_recalling_then_a_filtered_search_returns_the_newest(opensearch, index):
    scope = Scope(
        tenant_id="acme",
        now=NOW,
        actor_id="customer-42",
        tags=("billing",),
        occurred_after=datetime(2026, 10, 30, 8, 0, 0, 999, tzinfo=UTC),
    )
    opensearch.reply_cluster()
    opensearch.reply(200, "search_newest.json")

    found = index.candidates(scope, None, None, 50)

    _, request = opensearch.requests
    assert (request.method, request.path) == ("POST", "/episodes/_search")
    assert request.json() == {
        "size": 50,
        "_source": ["tenantId", "eventId"],
        "query": {
            "bool": {
                "filter": [
                    {"term": {"tenantId": "acme"}},
                    {"terms": {"status": ["active"]}},
                    {"terms": {"privacyClass": ["public", "internal", "private", "sensitive"]}},
                    {"term": {"actorId": "customer-42"}},
                    {"term": {"tags": "billing"}},
                    {"range": {"occurredAt": {"gte": "2026-10-30T08:00:00.000Z"}}},
                    RETENTION,
                ]
            }
        },
        "sort": [{"occurredAt": {"order": "desc"}}, {"eventId": {"order": "desc"}}],
    }
    assert found.items == [Candidate(event_id=C), Candidate(event_id=A)]
    assert found.degraded == ()


def test_given_a_scope_without_tenant_when_recalling_then_it_is_refused_before_any_request(opensearch, index):
    for text, vector in ((None, None), ("invoices", [1.0, 0.0, 0.0, 0.0])):
        with pytest.raises(InvalidRequestError):
            index.candidates(Scope(tenant_id="", now=NOW), text, vector, 10)

    assert opensearch.requests == []


def test_given_a_hit_of_another_tenant_when_recalling_then_it_is_dropped_by_its_stored_tenant(
    opensearch, index, caplog
):
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 3)
    opensearch.reply(200, "msearch_foreign_tenant_hit.json")

    found = index.candidates(FULL_SCOPE, "invoice", None, 10)

    assert found.items == [Candidate(event_id=C, lexical=pytest.approx(2.4519653), semantic=0.0)]
    assert "outside the tenant scope" in caplog.text


# ---------------------------------------------------------------------------- partial answers


def test_given_a_failing_knn_search_when_recalling_then_the_bm25_hits_are_kept_and_semantic_is_unavailable(
    opensearch, index
):
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 3, before=(answer("msearch_knn_item_error.json", 0),))
    opensearch.reply_msearch(answer("msearch_knn_item_error.json", 1))

    found = index.candidates(FULL_SCOPE, "invoice", [1.0, 0.0, 0.0, 0.0], 10)

    assert found.items == []  # the BM25 search answered, with no hits
    assert found.degraded == ("semantic_unavailable",)


def test_given_a_failing_bm25_search_when_recalling_then_the_knn_hits_are_kept_and_lexical_is_unavailable(
    opensearch, index
):
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 3, before=(answer("msearch_bm25_item_error.json", 0),))
    opensearch.reply_msearch(answer("msearch_bm25_item_error.json", 1))

    found = index.candidates(FULL_SCOPE, "invoice", [1.0, 0.0, 0.0, 0.0], 10)

    assert {c.event_id: c.semantic for c in found.items} == {A: pytest.approx(0.8), B: pytest.approx(-0.25)}
    assert all(c.lexical == pytest.approx(0.0) for c in found.items)
    assert found.degraded == ("lexical_unavailable",)


def test_given_a_failing_word_count_when_recalling_then_no_search_by_words_is_sent_and_lexical_is_unavailable(
    opensearch, index
):
    opensearch.reply_cluster()
    knn, failed = answer("msearch_bm25_item_error.json", 0), answer("msearch_bm25_item_error.json", 1)
    opensearch.reply_msearch(knn, counted(40), failed)

    found = index.candidates(FULL_SCOPE, "invoice", [1.0, 0.0, 0.0, 0.0], 10)

    assert {c.event_id: c.semantic for c in found.items} == {A: pytest.approx(0.8), B: pytest.approx(-0.25)}
    assert found.degraded == ("lexical_unavailable",)
    assert len(opensearch.requests) == 2  # the version, then one _msearch: the words were never searched


def test_given_the_search_by_words_failing_after_the_counts_then_the_knn_hits_are_kept_and_lexical_is_unavailable(
    opensearch, index
):
    """The search by words is a second request: its failure must not lose what the first found."""
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 3, before=(answer("msearch_knn_and_bm25.json", 0),))
    for _ in range(4):  # the client's own retries included
        opensearch.reply(500, "error_500.json")

    found = index.candidates(FULL_SCOPE, "invoice", [1.0, 0.0, 0.0, 0.0], 10)

    assert {c.event_id: c.semantic for c in found.items} == {A: pytest.approx(0.8), B: pytest.approx(-0.25)}
    assert found.degraded == ("lexical_unavailable",)


def test_given_words_the_scope_does_not_hold_when_recalling_then_no_search_by_words_is_sent(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 0, 0)

    found = index.candidates(FULL_SCOPE, "vorpal jabberwock", None, 10)

    assert found.items == [] and found.degraded == ()
    assert len(opensearch.requests) == 2


def test_given_an_incomplete_word_count_when_recalling_then_the_search_by_words_is_flagged_partial(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply_msearch(counted(40), {**counted(3), "timed_out": True})
    opensearch.reply(200, "msearch_bm25_only.json")

    found = index.candidates(FULL_SCOPE, "invoice", None, 10)

    assert found.items == [Candidate(event_id=C, lexical=pytest.approx(2.4519653), semantic=0.0)]
    assert found.degraded == ("lexical_partial",)


def test_given_a_timed_out_knn_and_a_shard_failure_in_bm25_when_recalling_then_both_are_kept_and_flagged_partial(
    opensearch, index
):
    opensearch.reply_cluster()
    opensearch.reply_counts(40, 3, before=(answer("msearch_knn_timed_out_bm25_shard_failed.json", 0),))
    opensearch.reply_msearch(answer("msearch_knn_timed_out_bm25_shard_failed.json", 1))

    found = index.candidates(FULL_SCOPE, "invoice", [1.0, 0.0, 0.0, 0.0], 10)

    assert found.items == [
        Candidate(event_id=A, lexical=0.0, semantic=pytest.approx(0.8)),
        Candidate(event_id=C, lexical=pytest.approx(3.2187934), semantic=0.0),
    ]
    assert found.degraded == ("semantic_partial", "lexical_partial")


def test_given_every_search_failing_when_recalling_then_storage_error(opensearch, index):
    opensearch.reply_cluster()
    missing = answer("msearch_index_missing.json", 0)
    opensearch.reply_msearch(missing, missing, missing)  # the k-NN search and both counts

    with pytest.raises(StorageError) as raised:
        index.candidates(FULL_SCOPE, "invoice", [1.0, 0.0, 0.0, 0.0], 10)

    assert raised.value.details == {"operation": "recall", "status": 404, "type": "index_not_found_exception"}


def test_given_a_timed_out_listing_when_recalling_without_a_query_then_its_hits_are_kept_and_flagged(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply(200, "search_newest_timed_out.json")

    found = index.candidates(Scope(tenant_id="acme", now=NOW), None, None, 50)

    assert found.items == [Candidate(event_id=C)]
    assert found.degraded == ("listing_partial",)


# ---------------------------------------------------------------------------- projection


def test_given_an_episode_when_upserted_then_it_is_indexed_through_the_alias_under_a_hashed_id(opensearch, index):
    opensearch.reply(201, "index_doc_created.json")
    opensearch.reply(200, "index_doc_created.json")

    index.upsert(episode(A), [0.5, 0.5, 0.5, 0.5])
    index.upsert(episode(A, projectId=None, retention={}), None)  # no vector, no project, no expiry

    first, second = opensearch.requests
    assert doc_id(A) == "95f577e8f77349fd6df882369069090d34e48f30aba24b2083a256af3400766c"
    assert (first.method, first.path) == ("PUT", f"/episodes/_doc/{doc_id(A)}?require_alias=true")
    assert first.json() == doc_a()
    assert (second.method, second.path) == (first.method, first.path), "the same id: an idempotent overwrite"
    without = {k: v for k, v in doc_a().items() if k not in ("projectId", "expiresAt", "embedder", "vector")}
    assert second.json() == without


def test_given_ids_with_reserved_characters_when_upserted_then_the_path_needs_no_escaping(opensearch, index):
    opensearch.reply(201, "index_doc_created.json")
    opensearch.reply(201, "index_doc_created.json")

    index.upsert(episode("evt:1@x.y", tenantId="t:1@a.b"), None)
    index.upsert(episode("evt:1@x.y", tenantId="t:1@a"), None)  # a similar pair gets another id

    first, second = opensearch.requests
    assert re.fullmatch(r"/episodes/_doc/[0-9a-f]{64}\?require_alias=true", first.path)
    assert first.path == f"/episodes/_doc/{doc_id('evt:1@x.y', 't:1@a.b')}?require_alias=true"
    assert second.path != first.path
    assert (first.json()["tenantId"], first.json()["eventId"]) == ("t:1@a.b", "evt:1@x.y")


def test_given_the_index_was_deleted_when_upserting_then_it_is_recreated_with_its_mapping_before_the_write(
    opensearch, index
):
    opensearch.reply(404, "index_doc_no_alias.json")  # require_alias: nothing auto-created
    opensearch.reply_cluster()
    opensearch.reply(404)  # HEAD /_alias/episodes
    opensearch.reply(200, "create_index.json")
    opensearch.reply(201, "index_doc_created.json")

    index.upsert(episode(A), [0.5, 0.5, 0.5, 0.5])

    refused, info, head, create, written = opensearch.requests
    assert (refused.method, refused.path) == ("PUT", f"/episodes/_doc/{doc_id(A)}?require_alias=true")
    assert [(r.method, r.path) for r in (info, head, create)] == [
        ("GET", "/"),
        ("HEAD", "/_alias/episodes"),
        ("PUT", "/episodes-v1"),
    ]
    assert create.json()["mappings"]["properties"]["vector"]["type"] == "knn_vector"
    assert create.json()["aliases"] == {"episodes": {}}
    assert (written.method, written.path, written.json()) == (refused.method, refused.path, doc_a())


def test_given_a_stray_index_named_like_the_alias_when_upserting_then_nothing_is_written_and_it_is_refused(
    opensearch, index
):
    opensearch.reply(404, "index_doc_no_alias.json")  # an index, not an alias: require_alias refuses it too
    opensearch.reply_cluster()
    opensearch.reply(404)
    opensearch.reply(400, "create_index_alias_name_taken.json")

    with pytest.raises(RecallIndexSetupError):
        index.upsert(episode(A), [0.5, 0.5, 0.5, 0.5])

    assert [(r.method, r.path.split("?")[0]) for r in opensearch.requests] == [
        ("PUT", f"/episodes/_doc/{doc_id(A)}"),
        ("GET", "/"),
        ("HEAD", "/_alias/episodes"),
        ("PUT", "/episodes-v1"),
    ]


def test_given_a_vector_of_another_model_when_upserted_then_only_its_text_and_scope_are_indexed(opensearch, index):
    opensearch.reply(200, "index_doc_created.json")
    opensearch.reply(200, "index_doc_created.json")

    index.upsert(episode(A), [0.1] * 384 + [0.0])  # wrong dimension
    index.upsert(episode(A), [0.5, 0.5, 0.5, 0.5], embedder="amazon.titan-embed-text-v2:0")

    expected = {k: v for k, v in doc_a().items() if k not in ("embedder", "vector")}
    assert [r.json() for r in opensearch.requests] == [expected, expected]


def test_given_present_and_missing_docs_when_removed_then_both_deletes_succeed(opensearch, index):
    opensearch.reply(200, "delete_doc_deleted.json")
    opensearch.reply(404, "delete_doc_not_found.json")

    index.remove("acme", A)
    index.remove("acme", B)  # already gone: removal is idempotent

    assert [(r.method, r.path, r.body) for r in opensearch.requests] == [
        ("DELETE", f"/episodes/_doc/{doc_id(A)}", b""),
        ("DELETE", f"/episodes/_doc/{doc_id(B)}", b""),
    ]


def test_given_a_429_for_one_item_when_bulk_upserting_then_only_it_is_retried_after_backoff(
    opensearch, index, monkeypatch
):
    slept: list[float] = []
    monkeypatch.setattr("opensearchpy.helpers.actions.time.sleep", slept.append)
    opensearch.reply(200, "bulk_one_rejected_429.json")
    opensearch.reply(200, "bulk_retry_ok.json")
    episode_b = episode(B, summary="Invoices go to finance@customer.example", outcome=None, retention={})
    doc_b = {
        **{k: v for k, v in doc_a().items() if k != "expiresAt"},
        "eventId": B,
        "text": "customer-42 (November 2026): Invoices go to finance@customer.example\nbilling invoices",
        "vector": [1.0, 0.0, 0.0, 0.0],
    }

    indexed = index.bulk_upsert(iter([(episode(A), [0.5, 0.5, 0.5, 0.5]), (episode_b, [1.0, 0.0, 0.0, 0.0])]))

    assert indexed == 2
    assert slept == [2], "waited initial_backoff seconds before the retry"
    first, retry = opensearch.requests
    assert (first.method, first.path) == ("POST", "/episodes/_bulk?require_alias=true")
    assert first.ndjson() == [
        {"index": {"_id": doc_id(A)}},
        doc_a(),
        {"index": {"_id": doc_id(B)}},
        doc_b,
    ]
    assert (retry.method, retry.path) == ("POST", "/episodes/_bulk?require_alias=true")
    assert retry.ndjson() == [{"index": {"_id": doc_id(B)}}, doc_b]


def test_given_nothing_to_index_when_bulk_upserting_then_no_request_is_sent(opensearch, index):
    assert index.bulk_upsert([]) == 0
    assert opensearch.requests == []


# ---------------------------------------------------------------------------- errors


def test_given_a_500_when_recalling_then_storage_error(opensearch, index):
    opensearch.reply_cluster()
    opensearch.reply(500, "error_500.json")

    with pytest.raises(StorageError) as raised:
        index.candidates(FULL_SCOPE, "invoice", [1.0, 0.0, 0.0, 0.0], 10)

    assert raised.value.status == 503
    assert raised.value.details == {"operation": "recall", "status": 500, "type": "search_phase_execution_exception"}
    assert len(opensearch.requests) == 2, "a 500 is not retried by the transport"


def test_given_a_rejected_document_when_upserted_then_the_error_carries_no_episode_text(opensearch, index):
    opensearch.reply(400, "index_doc_mapper_parsing_error.json")

    with pytest.raises(StorageError) as raised:
        index.upsert(episode(A), [0.5, 0.5, 0.5, 0.5])

    error = raised.value
    assert error.details == {"operation": "upsert", "status": 400, "type": "mapper_parsing_exception"}
    assert "Portuguese" not in f"{error} {error.message} {error.to_body()!r}"
    assert error.__cause__ is None and error.__suppress_context__, "the client error is not chained"


def test_given_an_unreachable_endpoint_when_called_then_storage_error(opensearch, fake_aws):
    endpoint = opensearch.endpoint
    opensearch.server.shutdown()
    opensearch.server.server_close()  # nothing listens on that port any more
    index = OpenSearchRecallIndex(client_for(endpoint, "eu-west-1", "es"), INDEX, 4, EMBEDDER)

    with pytest.raises(StorageError) as raised:
        index.remove("acme", A)

    assert raised.value.details == {"operation": "remove", "status": None, "type": "connection_error"}


def test_given_a_slow_cluster_and_no_retry_on_timeout_when_recalling_then_one_attempt_and_a_timeout_error(
    opensearch, fake_aws
):
    index = OpenSearchRecallIndex(
        client_for(opensearch.endpoint, "eu-west-1", "es", timeout=0.3, retry_on_timeout=False), INDEX, 4, EMBEDDER
    )
    opensearch.reply_cluster()
    opensearch.reply(200, "msearch_bm25_only.json", delay=1.0)

    with pytest.raises(StorageError) as raised:
        index.candidates(FULL_SCOPE, "invoice", None, 10)

    assert raised.value.details == {"operation": "recall", "status": None, "type": "timeout"}
    assert [(r.method, r.path) for r in opensearch.requests] == [("GET", "/"), ("POST", "/episodes/_msearch")]


# ---------------------------------------------------------------------------- SigV4


def test_given_a_serverless_collection_when_calling_then_requests_are_sigv4_signed_for_aoss(opensearch):
    index = OpenSearchRecallIndex(client_for(opensearch.endpoint, "eu-west-1", "aoss"), INDEX, 4, EMBEDDER)
    opensearch.reply(200, "index_doc_created.json")

    index.upsert(episode(A), [0.5, 0.5, 0.5, 0.5])

    (request,) = opensearch.requests
    headers = request.headers
    stamp = headers["x-amz-date"]
    assert re.fullmatch(r"\d{8}T\d{6}Z", stamp)
    assert headers["x-amz-content-sha256"] == hashlib.sha256(request.body).hexdigest()
    assert headers["x-amz-security-token"] == SESSION_TOKEN
    auth = re.fullmatch(
        r"AWS4-HMAC-SHA256 Credential=([^,]+), SignedHeaders=([^,]+), Signature=([0-9a-f]{64})",
        headers["authorization"],
    )
    assert auth, headers["authorization"]
    credential, signed, signature = auth.groups()
    assert credential == f"{ACCESS_KEY}/{stamp[:8]}/eu-west-1/aoss/aws4_request"
    assert {"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"} <= set(signed.split(";"))

    # Verify the signature the way the service would: recompute it over the signed headers as received.
    host = headers["host"]
    replay = AWSRequest(
        method=request.method,
        url=f"https://{host}{request.path}",
        data=request.body,
        headers={name: headers[name] for name in signed.split(";")},
    )
    replay.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "aoss", "eu-west-1")
    assert signer.signature(signer.string_to_sign(replay, signer.canonical_request(replay)), replay) == signature


def test_given_a_managed_domain_when_building_a_client_then_https_with_certificate_checks(fake_aws):
    client = client_for("search-memory.eu-west-1.es.amazonaws.com", "eu-west-1", "es")

    (connection,) = client.transport.connection_pool.connections
    assert connection.host == "https://search-memory.eu-west-1.es.amazonaws.com:443"
    assert connection.use_ssl and connection.session.verify
    assert connection.session.auth.service == "es"
    with pytest.raises(ValueError):
        client_for("http://search-memory.eu-west-1.es.amazonaws.com", "eu-west-1", "es")
    with pytest.raises(ValueError):
        client_for("search-memory.eu-west-1.es.amazonaws.com", "eu-west-1", "s3")

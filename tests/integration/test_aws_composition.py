"""The AWS composition root picks its parts from settings (no model loaded, no AWS call made)."""

import pytest

from episodic.adapters.opensearch.index import OpenSearchRecallIndex
from episodic.application.settings import Settings
from episodic.bootstrap.aws import opensearch_index
from episodic.bootstrap.embedders import identity


def test_given_no_opensearch_endpoint_when_composed_then_recall_stays_on_dynamodb():
    assert opensearch_index(Settings()) is None


def test_given_an_endpoint_and_titan_when_composed_then_the_index_knows_the_model_and_dimension(aws_env):
    settings = Settings(
        embedder="titan", titan_dimensions=512, opensearch_endpoint="https://search-x.us-east-1.es.amazonaws.com"
    )
    index = opensearch_index(settings)
    assert isinstance(index, OpenSearchRecallIndex)
    assert (index.embedder, index.dimension) == ("amazon.titan-embed-text-v2:0/512", 512)
    assert identity(Settings(embedder="minilm")) == ("sentence-transformers/all-MiniLM-L6-v2", 384)


def test_given_an_endpoint_when_the_lambda_service_is_built_then_recall_falls_back_and_waits_briefly(aws_env):
    from episodic.adapters.opensearch.fallback import FallbackRecallIndex
    from episodic.adapters.opensearch.scoped import DynamoScopedIndex
    from episodic.bootstrap.aws import RECALL_TIMEOUT_SECONDS, service_from_settings

    settings = Settings(embedder="titan", opensearch_endpoint="https://search-x.us-east-1.es.amazonaws.com")
    service = service_from_settings(settings)  # builds clients only: no model, no request

    assert isinstance(service.deps.index, FallbackRecallIndex)
    assert isinstance(service.deps.index.primary, OpenSearchRecallIndex)
    assert isinstance(service.deps.index.fallback, DynamoScopedIndex)
    transport = service.deps.index.primary.client.transport
    assert transport.retry_on_timeout is False and pytest.approx(2.0) == RECALL_TIMEOUT_SECONDS
    (connection,) = transport.connection_pool.connections
    assert connection.timeout == RECALL_TIMEOUT_SECONDS, "well inside the API's 29 s, so the fallback can answer"


def test_given_no_endpoint_when_the_lambda_service_is_built_then_recall_uses_the_scoped_index_alone(aws_env):
    from episodic.adapters.opensearch.scoped import DynamoScopedIndex
    from episodic.bootstrap.aws import service_from_settings

    assert isinstance(service_from_settings(Settings(embedder="titan")).deps.index, DynamoScopedIndex)

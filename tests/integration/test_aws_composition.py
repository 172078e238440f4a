"""The AWS composition root picks its parts from settings (no model loaded, no AWS call made)."""

from episodic.adapters.aws.bootstrap import embedder_identity, opensearch_index
from episodic.adapters.aws.opensearch_index import OpenSearchRecallIndex
from episodic.settings import Settings


def test_given_no_opensearch_endpoint_when_composed_then_recall_stays_on_dynamodb():
    assert opensearch_index(Settings()) is None


def test_given_an_endpoint_and_titan_when_composed_then_the_index_knows_the_model_and_dimension(aws_env):
    settings = Settings(
        embedder="titan", titan_dimensions=512, opensearch_endpoint="https://search-x.us-east-1.es.amazonaws.com"
    )
    index = opensearch_index(settings)
    assert isinstance(index, OpenSearchRecallIndex)
    assert (index.embedder, index.dimension) == ("amazon.titan-embed-text-v2:0/512", 512)
    assert embedder_identity(Settings()) == ("sentence-transformers/all-MiniLM-L6-v2", 384)

"""Search policies through the Python SDK: vector embedding and vector index policies, full-text
policies and indexes, checked and echoed as the service does (the SDK's own policy tests
expect these messages); which of them a replace may change."""

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import unique_id

EMBEDDINGS = {"vectorEmbeddings": [
    {"path": "/vector1", "dataType": "float32", "dimensions": 256, "distanceFunction": "euclidean"},
    {"path": "/vector2", "dataType": "int8", "dimensions": 200, "distanceFunction": "dotproduct"},
    {"path": "/vector3", "dataType": "uint8", "dimensions": 400, "distanceFunction": "cosine"},
]}
VECTOR_INDEXES = [
    {"path": "/vector1", "type": "flat"},
    {"path": "/vector2", "type": "quantizedFlat", "quantizerType": "product", "quantizationByteSize": 8},
    {"path": "/vector3", "type": "diskANN", "quantizerType": "product", "quantizationByteSize": 8,
     "vectorIndexShardKey": ["/city"], "indexingSearchListSize": 50},
]
FULL_TEXT = {"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/abstract", "language": "en-US"}]}


def refusal(create):
    with pytest.raises(CosmosHttpResponseError) as error:
        create()
    assert error.value.status_code == 400
    return error.value.http_error_message


def test_vector_policies_are_kept_as_sent(database):
    container = database.create_container(unique_id("v"), partition_key=PartitionKey(path="/id"),
                                          vector_embedding_policy=EMBEDDINGS,
                                          indexing_policy={"vectorIndexes": VECTOR_INDEXES})
    properties = container.read()
    assert properties["vectorEmbeddingPolicy"] == EMBEDDINGS
    assert properties["indexingPolicy"]["vectorIndexes"] == VECTOR_INDEXES


@pytest.mark.parametrize("indexes, embeddings, expected", [
    ([{"path": "/vector1", "type": "flat"}], None, "vector1 not matching in Embedding's path"),
    ([{"path": "/vector1", "type": "notFlat"}], EMBEDDINGS, "Index Type::notFlat is invalid"),
    ([{"path": "/vector1", "type": "quantizedFlat", "quantizationByteSize": 0}], EMBEDDINGS,
     "The Vector Indexing Policy parameter QuantizationByteSize value :: 0 is out of range. "
     "The allowed range is between 1 and 256."),
    ([{"path": "/vector1", "type": "diskANN", "indexingSearchListSize": 5}], EMBEDDINGS,
     "IndexingSearchListSize value :: 5 is out of range. The allowed range is between 25 and 500."),
    ([{"path": "/vector2", "type": "diskANN", "vectorIndexShardKey": ["country"]}], EMBEDDINGS,
     "The Vector Indexing Policy has an invalid Shard Path: country."),
    ([{"path": "/vector2", "type": "diskANN", "vectorIndexShardKey": ["/a", "/b", "/c"]}], EMBEDDINGS,
     "The number of shard paths defined in the Vector Indexing Policy: 3 exceeds the maximum: 1."),
    ([], {"vectorEmbeddings": [{"path": "/v", "dataType": "float33", "dimensions": 3, "distanceFunction": "cosine"}]},
     "Vector Embedding Policy has an invalid DataType"),
    ([], {"vectorEmbeddings": [{"path": "/v", "dataType": "float32", "dimensions": 8000, "distanceFunction": "cosine"}]},
     "Vector Embedding Policy has Dimensions:8000 which is more than the maximum supported value"),
])
def test_vector_policies_are_refused_with_the_services_words(database, indexes, embeddings, expected):
    message = refusal(lambda: database.create_container(
        unique_id("v"), partition_key=PartitionKey(path="/id"), vector_embedding_policy=embeddings,
        indexing_policy={"vectorIndexes": indexes}))
    assert expected in message


def test_a_replace_keeps_vector_policies_and_changes_full_text_ones(database):
    embeddings = {"vectorEmbeddings": [EMBEDDINGS["vectorEmbeddings"][0]]}
    indexing = {"vectorIndexes": [{"path": "/vector1", "type": "flat"}]}
    container = database.create_container(unique_id("v"), partition_key=PartitionKey(path="/id"),
                                          vector_embedding_policy=embeddings, indexing_policy=indexing)
    message = refusal(lambda: database.replace_container(container, PartitionKey(path="/id"),
                                                         indexing_policy=indexing))
    assert "The Vector Indexing Policy's path::/vector1 not matching in Embedding's path." in message
    message = refusal(lambda: database.replace_container(
        container, PartitionKey(path="/id"), vector_embedding_policy=embeddings,
        indexing_policy={"vectorIndexes": [{"path": "/vector1", "type": "quantizedFlat"}]}))
    assert "Paths in existing vector indexing policy cannot be modified in Collection Replace" in message
    wider = {"vectorEmbeddings": [dict(embeddings["vectorEmbeddings"][0], dimensions=384)]}
    message = refusal(lambda: database.replace_container(container, PartitionKey(path="/id"),
                                                         vector_embedding_policy=wider, indexing_policy=indexing))
    assert "Paths in existing embedding policy cannot be modified in Collection Replace" in message
    replaced = database.replace_container(container, PartitionKey(path="/id"), vector_embedding_policy=embeddings,
                                          indexing_policy=dict(indexing, fullTextIndexes=[{"path": "/abstract"}]),
                                          full_text_policy=FULL_TEXT)
    properties = replaced.read()
    assert properties["fullTextPolicy"] == FULL_TEXT
    assert properties["indexingPolicy"]["vectorIndexes"] == indexing["vectorIndexes"]


@pytest.mark.parametrize("policy, indexes", [
    ({"defaultLanguage": "en-US", "fullTextPaths": [{"path": "abstract", "language": "en-US"}]}, []),
    ({"defaultLanguage": "spa-SPA", "fullTextPaths": [{"path": "/abstract", "language": "en-US"}]}, []),
    ({"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/abstract", "language": "spa-SPA"}]}, []),
    (FULL_TEXT, [{"path": "/path"}]),
    (FULL_TEXT, [{"not_path": "abstract"}]),
])
def test_full_text_policies_are_refused(database, policy, indexes):
    refusal(lambda: database.create_container(unique_id("f"), partition_key=PartitionKey(path="/id"),
                                              full_text_policy=policy,
                                              indexing_policy={"fullTextIndexes": indexes}))

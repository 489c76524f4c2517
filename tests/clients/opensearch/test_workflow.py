"""The reference workflow with opensearch-py (plain `application/json`, no product header
needed): create an index with a mapping, bulk-load with helpers.bulk, search with
aggregations, scroll with helpers.scan, update, delete, and the client's errors. Expected
answers come from workflow.py's oracle."""

import opensearchpy
import pytest
from opensearchpy import NotFoundError, RequestError, helpers

import workflow

INDEX = "clients-opensearch"
SEED = 11


@pytest.fixture
def docs(client):
    """Creates INDEX with the workflow mapping and bulk-loads the generated documents."""
    assert opensearchpy.__versionstr__.startswith("3.")
    docs = workflow.generate(SEED)
    client.indices.delete(index=INDEX, ignore_unavailable=True)
    resp = client.indices.create(
        index=INDEX,
        body={"settings": {"number_of_shards": 2}, "mappings": workflow.MAPPING},
    )
    assert resp == {"acknowledged": True, "shards_acknowledged": True, "index": INDEX}
    ok, errors = helpers.bulk(
        client,
        ({"_index": INDEX, "_id": i, "_source": d} for i, d in docs),
        chunk_size=128,
        refresh="true",
    )
    assert (ok, errors) == (len(docs), [])
    yield docs
    client.indices.delete(index=INDEX, ignore_unavailable=True)


def test_mapping_and_count(client, docs):
    assert client.indices.get_mapping(index=INDEX) == {INDEX: {"mappings": workflow.MAPPING}}
    assert client.count(index=INDEX)["count"] == len(docs)


def test_search_with_aggregations(client, docs):
    workflow.check_aggs(client.search(index=INDEX, body=workflow.aggs_request()), docs)


def test_search_hits(client, docs):
    resp = client.search(index=INDEX, body={"query": {"term": {"tag": "gamma"}},
                                            "sort": [{"qty": "desc"}, {"price": "asc"}],
                                            "size": 15})
    exp = sorted(((d["qty"], d["price"]) for _, d in docs if d["tag"] == "gamma"),
                 key=lambda t: (-t[0], t[1]))
    assert resp["hits"]["total"] == {"value": len(exp), "relation": "eq"}
    assert [h["sort"] for h in resp["hits"]["hits"]] == [[q, p] for q, p in exp[:15]]
    src = dict(docs)
    for h in resp["hits"]["hits"]:
        assert h["_source"] == src[h["_id"]]


def test_scroll_helper(client, docs):
    seen = {}
    for hit in helpers.scan(client, index=INDEX, query={"query": {"match_all": {}}},
                            size=53, scroll="1m"):
        assert hit["_id"] not in seen
        seen[hit["_id"]] = hit["_source"]
    assert seen == dict(docs)


def test_point_in_time_is_refused(client, docs):
    # Lode does not implement point in time: ES's 400 error, not a silent no-op
    with pytest.raises(RequestError) as e:
        client.transport.perform_request("POST", "/%s/_pit" % INDEX, params={"keep_alive": "1m"})
    assert e.value.status_code == 400
    assert e.value.error == "illegal_argument_exception"
    with pytest.raises(RequestError) as e:
        client.search(body={"pit": {"id": "anything", "keep_alive": "1m"}, "size": 1})
    assert e.value.error == "parsing_exception"


def test_update_document(client, docs):
    doc_id, before = docs[3]
    resp = client.update(index=INDEX, id=doc_id,
                         body={"doc": {"qty": before["qty"] + 500, "tag": "updated"}},
                         refresh=True)
    assert resp["result"] == "updated"
    assert resp["_version"] == 2
    got = client.get(index=INDEX, id=doc_id)
    assert got["_source"] == dict(before, qty=before["qty"] + 500, tag="updated")
    changed = [(i, got["_source"] if i == doc_id else d) for i, d in docs]
    workflow.check_aggs(client.search(index=INDEX, body=workflow.aggs_request()), changed)
    with pytest.raises(NotFoundError) as e:
        client.update(index=INDEX, id="missing", body={"doc": {"qty": 1}})
    assert e.value.error == "document_missing_exception"


def test_delete_document(client, docs):
    doc_id = docs[4][0]
    resp = client.delete(index=INDEX, id=doc_id, refresh=True)
    assert resp["result"] == "deleted"
    with pytest.raises(NotFoundError) as e:
        client.get(index=INDEX, id=doc_id)
    assert e.value.status_code == 404
    assert e.value.info == {"_index": INDEX, "_id": doc_id, "found": False}
    assert client.count(index=INDEX)["count"] == len(docs) - 1
    rest = [(i, d) for i, d in docs if i != doc_id]
    workflow.check_aggs(client.search(index=INDEX, body=workflow.aggs_request()), rest)


def test_index_not_found(client):
    with pytest.raises(NotFoundError) as e:
        client.search(index="clients-opensearch-missing", body={"query": {"match_all": {}}})
    assert e.value.status_code == 404
    assert e.value.error == "index_not_found_exception"
    assert e.value.info["error"]["index"] == "clients-opensearch-missing"
    assert client.indices.exists(index="clients-opensearch-missing") is False


def test_bad_query(client, docs):
    with pytest.raises(RequestError) as e:
        client.search(index=INDEX, body={"query": {"no_such_query": {"tag": "beta"}}})
    assert e.value.status_code == 400
    assert e.value.error == "parsing_exception"
    assert e.value.info["error"]["reason"] == "unknown query [no_such_query]"


def test_info(client):
    info = client.info()
    assert info["tagline"] == "You Know, for Search"
    assert info["version"]["number"].startswith("8.")

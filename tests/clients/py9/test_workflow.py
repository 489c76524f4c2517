"""The reference workflow with elasticsearch-py 9 (it sends
`Accept: application/vnd.elasticsearch+json; compatible-with=9`): create an index with a
mapping, bulk-load with helpers.bulk, search with aggregations, scroll with helpers.scan,
update, delete, and the client's errors. Expected answers come from workflow.py's oracle."""

import elasticsearch
import pytest
from elasticsearch import BadRequestError, NotFoundError, helpers

import workflow

INDEX = "clients-py9"
SEED = 9


@pytest.fixture
def docs(es):
    """Creates INDEX with the workflow mapping and bulk-loads the generated documents."""
    assert elasticsearch.__versionstr__.startswith("9.")
    docs = workflow.generate(SEED)
    es.options(ignore_status=404).indices.delete(index=INDEX)
    resp = es.indices.create(
        index=INDEX, settings={"number_of_shards": 2}, mappings=workflow.MAPPING
    )
    assert resp.body == {"acknowledged": True, "shards_acknowledged": True, "index": INDEX}
    ok, errors = helpers.bulk(
        es,
        ({"_index": INDEX, "_id": i, "_source": d} for i, d in docs),
        chunk_size=128,
        refresh="true",
    )
    assert (ok, errors) == (len(docs), [])
    yield docs
    es.options(ignore_status=404).indices.delete(index=INDEX)


def test_mapping_and_count(es, docs):
    got = es.indices.get_mapping(index=INDEX)
    assert got.body == {INDEX: {"mappings": workflow.MAPPING}}
    assert es.count(index=INDEX)["count"] == len(docs)


def test_search_with_aggregations(es, docs):
    resp = es.search(index=INDEX, **workflow.aggs_request())
    workflow.check_aggs(resp.body, docs)


def test_search_hits(es, docs):
    # the 10 largest prices, ties broken by _id as the oracle does
    resp = es.search(index=INDEX, query={"term": {"tag": "beta"}},
                     sort=[{"price": "desc"}, {"qty": "asc"}], size=10)
    exp = sorted(((d["price"], d["qty"], i) for i, d in docs if d["tag"] == "beta"),
                 key=lambda t: (-t[0], t[1]))
    assert resp["hits"]["total"] == {"value": len(exp), "relation": "eq"}
    assert [h["sort"] for h in resp["hits"]["hits"]] == [[p, q] for p, q, _ in exp[:10]]
    src = dict(docs)
    for h in resp["hits"]["hits"]:
        assert h["_source"] == src[h["_id"]]


def test_scroll_helper(es, docs):
    seen = {}
    for hit in helpers.scan(es, index=INDEX, query={"query": {"match_all": {}}},
                            size=47, scroll="1m"):
        assert hit["_id"] not in seen
        seen[hit["_id"]] = hit["_source"]
    assert seen == dict(docs)


def test_scroll_helper_preserves_order(es, docs):
    # preserve_order scrolls in the query's sort; documents with equal qty have no defined
    # order among themselves, so the sequence of qty values is what is compared
    hits = list(helpers.scan(es, index=INDEX, query={"query": {"range": {"qty": {"lt": 10}}},
                                                     "sort": [{"qty": "asc"}]},
                             size=25, scroll="1m", preserve_order=True))
    exp = sorted(d["qty"] for _, d in docs if d["qty"] < 10)
    assert [h["_source"]["qty"] for h in hits] == exp


def test_point_in_time_is_refused(es, docs):
    # Lode does not implement point in time: opening one is ES's 400 error, not a silent no-op
    with pytest.raises(BadRequestError) as e:
        es.open_point_in_time(index=INDEX, keep_alive="1m")
    assert e.value.meta.status == 400
    assert e.value.error == "illegal_argument_exception"
    with pytest.raises(BadRequestError) as e:
        es.search(pit={"id": "anything", "keep_alive": "1m"}, size=1)
    assert e.value.error == "parsing_exception"
    with pytest.raises(BadRequestError) as e:
        es.close_point_in_time(id="anything")
    assert e.value.error == "illegal_argument_exception"


def test_update_document(es, docs):
    doc_id, before = docs[1]
    resp = es.update(index=INDEX, id=doc_id, doc={"qty": before["qty"] + 1000, "tag": "updated"},
                     refresh=True)
    assert resp["result"] == "updated"
    assert resp["_version"] == 2
    got = es.get(index=INDEX, id=doc_id)
    assert got["_source"] == dict(before, qty=before["qty"] + 1000, tag="updated")
    assert got["_version"] == 2
    # the aggregations see the update
    changed = [(i, got["_source"] if i == doc_id else d) for i, d in docs]
    workflow.check_aggs(es.search(index=INDEX, **workflow.aggs_request()).body, changed)
    # an update of a missing document is the client's NotFoundError
    with pytest.raises(NotFoundError) as e:
        es.update(index=INDEX, id="missing", doc={"qty": 1})
    assert e.value.error == "document_missing_exception"


def test_delete_document(es, docs):
    doc_id = docs[2][0]
    resp = es.delete(index=INDEX, id=doc_id, refresh=True)
    assert resp["result"] == "deleted"
    with pytest.raises(NotFoundError) as e:
        es.get(index=INDEX, id=doc_id)
    assert e.value.meta.status == 404
    assert e.value.body == {"_index": INDEX, "_id": doc_id, "found": False}
    assert es.count(index=INDEX)["count"] == len(docs) - 1
    rest = [(i, d) for i, d in docs if i != doc_id]
    workflow.check_aggs(es.search(index=INDEX, **workflow.aggs_request()).body, rest)
    # deleting it again: a 404 with result not_found
    with pytest.raises(NotFoundError) as e:
        es.delete(index=INDEX, id=doc_id)
    assert e.value.body["result"] == "not_found"


def test_index_not_found(es):
    with pytest.raises(NotFoundError) as e:
        es.search(index="clients-py9-missing", query={"match_all": {}})
    assert e.value.meta.status == 404
    assert e.value.error == "index_not_found_exception"
    assert e.value.body["error"]["index"] == "clients-py9-missing"
    assert es.indices.exists(index="clients-py9-missing").body is False


def test_bad_query(es, docs):
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, query={"no_such_query": {"tag": "beta"}})
    assert e.value.meta.status == 400
    assert e.value.error == "parsing_exception"
    assert e.value.body["error"]["reason"] == "unknown query [no_such_query]"


def test_info_and_product_header(es):
    info = es.info()
    assert info.meta.headers["x-elastic-product"] == "Elasticsearch"
    assert info["tagline"] == "You Know, for Search"


def test_compatible_with_9_is_answered_in_kind(es):
    # the 9.x client asks for compatible-with=9 on every request; ES answers in that media type
    resp = es.info()
    assert resp.meta.headers["content-type"] == (
        "application/vnd.elasticsearch+json;compatible-with=9")


def test_unsupported_compatible_version_is_refused(es):
    with pytest.raises(BadRequestError) as e:
        es.perform_request("GET", "/", headers={
            "accept": "application/vnd.elasticsearch+json; compatible-with=10"})
    assert e.value.meta.status == 400
    assert e.value.error == "media_type_header_exception"
    cause = e.value.body["error"]["caused_by"]
    assert cause["type"] == "status_exception"
    assert cause["reason"].startswith("Accept version must be either version 9, 8 or 7, but found 10.")
    # a body whose Content-Type asks for another version than Accept
    with pytest.raises(BadRequestError) as e:
        es.perform_request("POST", "/_search", body={"size": 0}, headers={
            "accept": "application/vnd.elasticsearch+json; compatible-with=9",
            "content-type": "application/vnd.elasticsearch+json; compatible-with=8"})
    assert e.value.error == "media_type_header_exception"

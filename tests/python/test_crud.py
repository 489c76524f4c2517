"""Write APIs on a small index: index/create/delete, update (doc,
doc_as_upsert, upsert, detect_noop), optimistic concurrency (409),
missing documents (404), _bulk with failing items."""

import pytest
from elasticsearch import BadRequestError, ConflictError, NotFoundError

INDEX = "crud-test"
MAPPING = {"properties": {"title": {"type": "text"}, "n": {"type": "integer"}, "tag": {"type": "keyword"}}}


@pytest.fixture(scope="module")
def idx(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 1, "number_of_replicas": 0}, mappings=MAPPING)
    yield INDEX
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def test_index_create_then_update_versions(es, idx):
    r = es.index(index=idx, id="a", document={"title": "first", "n": 1}).body
    assert r["result"] == "created" and r["_version"] == 1 and r["_id"] == "a" and r["_index"] == idx
    assert r["_shards"] == {"total": 1, "successful": 1, "failed": 0}
    seq1 = r["_seq_no"]
    r = es.index(index=idx, id="a", document={"title": "second", "n": 2}).body
    assert r["result"] == "updated" and r["_version"] == 2 and r["_seq_no"] > seq1
    g = es.get(index=idx, id="a").body
    assert g["_source"] == {"title": "second", "n": 2} and g["_version"] == 2


def test_index_auto_id(es, idx):
    r = es.index(index=idx, document={"title": "auto"}, refresh=True).body
    assert r["result"] == "created" and len(r["_id"]) >= 20
    assert es.get(index=idx, id=r["_id"]).body["_source"] == {"title": "auto"}


def test_create_conflict(es, idx):
    es.create(index=idx, id="c1", document={"n": 1})
    with pytest.raises(ConflictError) as ei:
        es.create(index=idx, id="c1", document={"n": 2})
    err = ei.value.body["error"]
    assert ei.value.meta.status == 409
    assert err["type"] == "version_conflict_engine_exception"
    assert "document already exists" in err["reason"]
    with pytest.raises(ConflictError):
        es.index(index=idx, id="c1", document={"n": 3}, op_type="create")
    assert es.get(index=idx, id="c1").body["_source"] == {"n": 1}


def test_if_seq_no_conflict(es, idx):
    r = es.index(index=idx, id="occ", document={"n": 1}).body
    seq, term = r["_seq_no"], r["_primary_term"]
    r2 = es.index(index=idx, id="occ", document={"n": 2}, if_seq_no=seq, if_primary_term=term).body
    assert r2["result"] == "updated"
    with pytest.raises(ConflictError) as ei:
        es.index(index=idx, id="occ", document={"n": 3}, if_seq_no=seq, if_primary_term=term)
    assert ei.value.body["error"]["type"] == "version_conflict_engine_exception"
    with pytest.raises(ConflictError):
        es.delete(index=idx, id="occ", if_seq_no=seq, if_primary_term=term)
    assert es.get(index=idx, id="occ").body["_source"] == {"n": 2}


def test_external_version(es, idx):
    r = es.index(index=idx, id="ext", document={"n": 1}, version=10, version_type="external").body
    assert r["_version"] == 10
    with pytest.raises(ConflictError):
        es.index(index=idx, id="ext", document={"n": 2}, version=10, version_type="external")
    r = es.index(index=idx, id="ext", document={"n": 3}, version=11, version_type="external").body
    assert r["_version"] == 11


def test_update_partial_doc(es, idx):
    es.index(index=idx, id="u1", document={"title": "hello", "n": 1, "tag": "x"})
    r = es.update(index=idx, id="u1", doc={"n": 5}).body
    assert r["result"] == "updated" and r["_version"] == 2
    assert es.get(index=idx, id="u1").body["_source"] == {"title": "hello", "n": 5, "tag": "x"}


def test_update_detect_noop(es, idx):
    es.index(index=idx, id="u2", document={"n": 1, "tag": "same"})
    r = es.update(index=idx, id="u2", doc={"tag": "same"}).body
    assert r["result"] == "noop" and r["_version"] == 1
    r = es.update(index=idx, id="u2", doc={"tag": "same"}, detect_noop=False).body
    assert r["result"] == "updated" and r["_version"] == 2


def test_scripted_update_that_changes_nothing_still_updates(es, idx):
    # ES compares only a partial `doc` with the stored source; a script whose `ctx.op` stays
    # `index` is an update even when the source comes out the same, and `none` is the noop.
    es.index(index=idx, id="u5", document={"n": 1})
    r = es.update(index=idx, id="u5", script={"source": "ctx._source.n = 1"}).body
    assert r["result"] == "updated" and r["_version"] == 2
    r = es.update(index=idx, id="u5", script={"source": "ctx.op = 'none'"}).body
    assert r["result"] == "noop" and r["_version"] == 2
    ops = [{"update": {"_index": idx, "_id": "u5"}}, {"script": {"source": "ctx._source.n = 1"}}]
    item = es.bulk(operations=ops).body["items"][0]["update"]
    assert item["result"] == "updated" and item["_version"] == 3
    assert es.get(index=idx, id="u5").body["_source"] == {"n": 1}


def test_update_doc_as_upsert(es, idx):
    r = es.update(index=idx, id="u3", doc={"n": 7}, doc_as_upsert=True).body
    assert r["result"] == "created" and r["_version"] == 1
    r = es.update(index=idx, id="u3", doc={"tag": "t"}, doc_as_upsert=True).body
    assert r["result"] == "updated"
    assert es.get(index=idx, id="u3").body["_source"] == {"n": 7, "tag": "t"}


def test_update_upsert(es, idx):
    r = es.update(index=idx, id="u4", doc={"n": 2}, upsert={"n": 1, "tag": "new"}).body
    assert r["result"] == "created"
    assert es.get(index=idx, id="u4").body["_source"] == {"n": 1, "tag": "new"}
    r = es.update(index=idx, id="u4", doc={"n": 2}, upsert={"n": 1, "tag": "new"}).body
    assert r["result"] == "updated"
    assert es.get(index=idx, id="u4").body["_source"] == {"n": 2, "tag": "new"}


def test_update_missing_document(es, idx):
    with pytest.raises(NotFoundError) as ei:
        es.update(index=idx, id="nope", doc={"n": 1})
    err = ei.value.body["error"]
    assert err["type"] == "document_missing_exception"
    assert "document missing" in err["reason"]


def test_update_source_in_response(es, idx):
    es.index(index=idx, id="u5", document={"n": 1})
    r = es.update(index=idx, id="u5", doc={"tag": "z"}, source=True).body
    assert r["get"]["_source"] == {"n": 1, "tag": "z"} and r["get"]["found"] is True


def test_delete(es, idx):
    es.index(index=idx, id="d1", document={"n": 1}, refresh=True)
    r = es.delete(index=idx, id="d1", refresh=True).body
    assert r["result"] == "deleted" and r["_version"] == 2
    assert es.exists(index=idx, id="d1").body is False
    with pytest.raises(NotFoundError) as ei:
        es.delete(index=idx, id="d1")
    assert ei.value.body["result"] == "not_found"
    with pytest.raises(NotFoundError) as ei:
        es.get(index=idx, id="d1")
    assert ei.value.body["found"] is False


def test_mapping_type_error_on_index(es, idx):
    with pytest.raises(BadRequestError) as ei:
        es.index(index=idx, id="bad", document={"n": "not a number"})
    err = ei.value.body["error"]
    assert err["type"] == "document_parsing_exception"
    assert "failed to parse field [n] of type [integer]" in err["reason"]


def test_bulk_with_bad_items(es, idx):
    es.index(index=idx, id="b-exists", document={"n": 0})
    ops = [
        {"index": {"_index": idx, "_id": "b1"}}, {"n": 1, "tag": "bulk"},
        {"index": {"_index": idx, "_id": "b2"}}, {"n": "oops", "tag": "bulk"},      # mapping error
        {"create": {"_index": idx, "_id": "b-exists"}}, {"n": 9},                     # conflict
        {"create": {"_index": idx, "_id": "b3"}}, {"n": 3, "tag": "bulk"},
        {"update": {"_index": idx, "_id": "b-missing"}}, {"doc": {"n": 1}},           # missing doc
        {"update": {"_index": idx, "_id": "b1"}}, {"doc": {"n": 11}},
        {"delete": {"_index": idx, "_id": "b-never"}},                                 # not_found, not an error
        {"delete": {"_index": idx, "_id": "b3"}},
        {"index": {"_index": idx, "_id": "b4"}}, {"n": 4, "tag": "bulk"},
    ]
    r = es.bulk(operations=ops, refresh=True).body
    assert r["errors"] is True
    items = r["items"]
    assert [next(iter(i)) for i in items] == ["index", "index", "create", "create", "update", "update",
                                              "delete", "delete", "index"]
    res = [next(iter(i.values())) for i in items]
    assert [x["status"] for x in res] == [201, 400, 409, 201, 404, 200, 404, 200, 201]
    assert res[0]["result"] == "created"
    assert res[1]["error"]["type"] == "document_parsing_exception"
    assert res[2]["error"]["type"] == "version_conflict_engine_exception"
    assert res[4]["error"]["type"] == "document_missing_exception"
    assert res[5]["result"] == "updated"
    assert res[6]["result"] == "not_found" and "error" not in res[6]
    assert res[7]["result"] == "deleted"
    for k in (0, 3, 5, 7, 8):
        assert "error" not in res[k]
        assert res[k]["_index"] == idx
    assert res[1]["_id"] == "b2"
    got = es.search(index=idx, body={"query": {"term": {"tag": "bulk"}}, "sort": [{"n": "asc"}]}).body
    assert [(h["_id"], h["_source"]["n"]) for h in got["hits"]["hits"]] == [("b4", 4), ("b1", 11)]


def test_bulk_index_in_url_and_ndjson_string(es, idx):
    body = '{"index":{"_id":"s1"}}\n{"n":21}\n{"index":{"_id":"s2"}}\n{"n":22}\n'
    r = es.bulk(index=idx, operations=body, refresh="true").body
    assert r["errors"] is False and len(r["items"]) == 2
    assert es.count(index=idx, query={"range": {"n": {"gte": 21, "lte": 22}}}).body["count"] == 2


def test_refresh_makes_docs_visible(es, idx):
    es.index(index=idx, id="vis", document={"tag": "visible-after-refresh"})
    es.indices.refresh(index=idx)
    assert es.count(index=idx, query={"term": {"tag": "visible-after-refresh"}}).body["count"] == 1


def test_delete_index_and_missing_index(es):
    es.indices.create(index="crud-tmp")
    assert es.indices.delete(index="crud-tmp").body == {"acknowledged": True}
    with pytest.raises(NotFoundError) as ei:
        es.indices.delete(index="crud-tmp")
    assert ei.value.body["error"]["type"] == "index_not_found_exception"

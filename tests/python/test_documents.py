"""Read APIs on the loaded corpus: get, exists, get_source, _mget, _count,
_source filtering."""

import pytest
from elasticsearch import BadRequestError, NotFoundError

import oracle


def test_get(es, accounts, corpus):
    resp = es.get(index="accounts", id="12345").body
    assert resp["_index"] == "accounts"
    assert resp["_id"] == "12345"
    assert resp["found"] is True
    assert resp["_version"] == 1
    assert isinstance(resp["_seq_no"], int) and resp["_primary_term"] == 1
    assert resp["_source"] == corpus.by_id["12345"]


def test_get_source_filtering(es, accounts, corpus):
    d = corpus.by_id["777"]
    resp = es.get(index="accounts", id="777", source_includes=["acctId", "bal*"]).body
    assert resp["_source"] == {"acctId": d["acctId"], "balance": d["balance"], "balanceTypeName": d["balanceTypeName"]}
    resp = es.get(index="accounts", id="777", source_excludes=["remark", "user*"]).body
    assert resp["_source"] == {k: v for k, v in d.items() if k != "remark" and not k.startswith("user")}
    resp = es.get(index="accounts", id="777", source=False).body
    assert "_source" not in resp and resp["found"] is True


def test_get_missing(es, accounts):
    with pytest.raises(NotFoundError) as ei:
        es.get(index="accounts", id="no-such-id")
    assert ei.value.body == {"_index": "accounts", "_id": "no-such-id", "found": False}


def test_get_missing_index(es):
    with pytest.raises(NotFoundError) as ei:
        es.get(index="no-such-index", id="1")
    err = ei.value.body["error"]
    assert err["type"] == "index_not_found_exception"
    assert err["index"] == "no-such-index"
    assert err["reason"] == "no such index [no-such-index]"


def test_exists(es, accounts):
    assert es.exists(index="accounts", id="1").body is True
    assert es.exists(index="accounts", id="0").body is False
    assert es.exists(index="accounts", id="1", source_includes="acctId").body is True
    assert es.indices.exists(index="accounts").body is True
    assert es.indices.exists(index="no-such-index").body is False


def test_get_source(es, accounts, corpus):
    assert es.get_source(index="accounts", id="20000").body == corpus.by_id["20000"]
    with pytest.raises(NotFoundError):
        es.get_source(index="accounts", id="20001x")


def test_mget(es, accounts, corpus):
    ids = ["3", "9999", "missing", "20000"]
    resp = es.mget(index="accounts", ids=ids).body
    assert [d["_id"] for d in resp["docs"]] == ids
    for d in resp["docs"]:
        assert d["_index"] == "accounts"
        if d["_id"] in corpus.by_id:
            assert d["found"] is True and d["_source"] == corpus.by_id[d["_id"]]
            assert d["_version"] == 1
        else:
            assert d == {"_index": "accounts", "_id": "missing", "found": False}


def test_mget_docs_form_with_source_filter(es, accounts, corpus):
    resp = es.mget(docs=[{"_index": "accounts", "_id": "5", "_source": ["status"]},
                         {"_index": "accounts", "_id": "6"},
                         {"_index": "no-such-index", "_id": "1"}]).body
    a, b, c = resp["docs"]
    assert a["_source"] == {"status": corpus.by_id["5"]["status"]}
    assert b["_source"] == corpus.by_id["6"]
    assert c["_index"] == "no-such-index" and c["error"]["type"] == "index_not_found_exception"


def test_count(es, accounts, corpus):
    assert es.count(index="accounts").body["count"] == corpus.n
    resp = es.count(index="accounts", query={"range": {"balance": {"gte": 1000}}}).body
    assert resp["count"] == corpus.count(lambda d: d["balance"] >= 1000)
    assert resp["_shards"]["total"] == 1 and resp["_shards"]["successful"] == 1 and resp["_shards"]["failed"] == 0
    assert es.count(index="accounts", q="acctType:BASIC").body["count"] == \
        corpus.count(lambda d: d["acctType"] == "BASIC")


def test_count_missing_index(es):
    with pytest.raises(NotFoundError) as ei:
        es.count(index="no-such-index")
    assert ei.value.body["error"]["type"] == "index_not_found_exception"


def test_search_source_filtering(es, accounts, corpus):
    resp = es.search(index="accounts", body={"size": 3, "sort": ["createdTime"],
                                             "_source": {"includes": ["acct*"], "excludes": ["acctType"]}}).body
    for h in resp["hits"]["hits"]:
        assert h["_source"] == {"acctId": corpus.by_id[h["_id"]]["acctId"]}
    resp = es.search(index="accounts", body={"size": 3, "_source": False}).body
    assert all("_source" not in h for h in resp["hits"]["hits"])
    resp = es.search(index="accounts", body={"size": 2, "_source": "balance"}).body
    assert all(set(h["_source"]) == {"balance"} for h in resp["hits"]["hits"])


def test_search_response_shape(es, accounts):
    resp = es.search(index="accounts", body={"size": 1}).body
    assert isinstance(resp["took"], int)
    assert resp["timed_out"] is False
    assert resp["_shards"] == {"total": 1, "successful": 1, "skipped": 0, "failed": 0}
    assert set(resp["hits"]) == {"total", "max_score", "hits"}
    h = resp["hits"]["hits"][0]
    assert h["_index"] == "accounts" and h["_score"] == 1.0


def test_search_missing_index(es):
    with pytest.raises(NotFoundError) as ei:
        es.search(index="no-such-index", body={"query": {"match_all": {}}})
    assert ei.value.body["error"]["type"] == "index_not_found_exception"
    # a wildcard that matches nothing is not an error
    resp = es.search(index="no-such-index*", body={"query": {"match_all": {}}}).body
    assert resp["hits"]["total"] == {"value": 0, "relation": "eq"}


def test_mget_routing_as_number_or_url_default(es):
    name = "mget_routing"
    es.indices.create(index=name, settings={"number_of_shards": 5})
    try:
        es.index(index=name, id="1", routing="5", document={"foo": "bar"}, refresh=True)
        r = es.mget(index=name, docs=[{"_id": "1"}, {"_id": "1", "routing": 4},
                                      {"_id": "1", "routing": 5}])
        # Without the document's routing, the id routes to another shard.
        assert [d["found"] for d in r["docs"]][2] is True
        assert r["docs"][2]["_routing"] == "5"
        r = es.mget(index=name, ids=["1"], routing="5")
        assert r["docs"][0]["found"] is True
    finally:
        es.indices.delete(index=name)


def test_flush_force_needs_wait_if_ongoing(es):
    name = "flush_params"
    es.indices.create(index=name)
    try:
        es.indices.flush(index=name, force=True)
        with pytest.raises(BadRequestError) as ei:
            es.indices.flush(index=name, force=True, wait_if_ongoing=False)
        assert ei.value.error == "action_request_validation_exception"
    finally:
        es.indices.delete(index=name)


def test_create_refuses_external_versions(es):
    name = "create_versions"
    es.indices.create(index=name)
    try:
        for version in (0, 5):
            with pytest.raises(BadRequestError) as ei:
                es.create(index=name, id="1", document={"a": 1}, version=version,
                          version_type="external")
            assert ei.value.error == "action_request_validation_exception"
        r = es.bulk(operations=[{"create": {"_index": name, "_id": "2", "version": 3,
                                            "version_type": "external"}}, {"a": 1}])
        assert r["items"][0]["create"]["status"] == 400
        assert es.count(index=name)["count"] == 0
    finally:
        es.indices.delete(index=name)


def test_an_empty_field_name_is_refused(es):
    with pytest.raises(BadRequestError) as ei:
        es.indices.create(index="empty_field_name", mappings={"properties": {"": {"type": "keyword"}}})
    assert ei.value.error == "mapper_parsing_exception"
    assert ei.value.info["error"]["caused_by"]["type"] == "illegal_argument_exception"
    assert not es.indices.exists(index="empty_field_name")


def test_bulk_metadata_keys_are_checked(es):
    name = "bulk_meta"
    try:
        for meta, word in [({"bogus": 1}, "unknown parameter [bogus]"),
                           ({"pipeline": "p"}, "[pipeline] is not supported"),
                           ({"retry_on_conflict": 2}, "[retry_on_conflict] is not supported")]:
            with pytest.raises(BadRequestError) as ei:
                es.bulk(operations=[{"index": dict({"_index": name, "_id": "1"}, **meta)}, {"a": 1}])
            assert word in ei.value.info["error"]["reason"]
        assert not es.indices.exists(index=name)
        r = es.bulk(operations=[{"update": {"_index": name, "_id": "1", "retry_on_conflict": 2}},
                                {"doc": {"a": 1}, "doc_as_upsert": True}], refresh=True)
        assert r["errors"] is False
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)


def test_bulk_update_returns_source_as_asked(es):
    """`_source` on a bulk update: in the body, on the action line or in the URL (in that
    order of precedence) it puts the updated document, filtered, in the item's `get`; index
    actions accept it and ignore it, as ES's bulk parser does."""
    name = "bulk_source"
    try:
        doc = {"a": 1, "b": {"c": 2, "d": 3}, "e": "x"}
        es.index(index=name, id="1", document=doc, refresh=True)
        new = dict(doc, a=5)

        r = es.bulk(operations=[
            {"update": {"_index": name, "_id": "1", "_source": True}}, {"doc": {"a": 5}},
            {"update": {"_index": name, "_id": "1", "_source": ["b.c"]}}, {"doc": {"a": 5}},
            {"update": {"_index": name, "_id": "1", "_source": ["b.c"]}},
            {"doc": {"a": 5}, "_source": {"excludes": ["b"]}},
            {"update": {"_index": name, "_id": "1"}}, {"doc": {"a": 5}},
            {"index": {"_index": name, "_id": "2", "_source": True}}, {"z": 1},
        ])
        items = [next(iter(i.values())) for i in r["items"]]
        assert r["errors"] is False
        assert items[0]["get"]["_source"] == new and items[0]["get"]["found"] is True
        assert items[1]["get"]["_source"] == {"b": {"c": new["b"]["c"]}}
        assert items[2]["get"]["_source"] == {k: v for k, v in new.items() if k != "b"}
        assert "get" not in items[3]
        assert "get" not in items[4]
        r = es.bulk(operations=[{"update": {"_index": name, "_id": "1"}}, {"doc": {"e": "y"}}],
                    source_includes=["e"])
        assert r["items"][0]["update"]["get"]["_source"] == {"e": "y"}
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)

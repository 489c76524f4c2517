"""Index management and mappings: explicit mapping round-trip, settings,
dynamic mapping (string -> text + keyword), put_mapping, mapping conflicts,
index-exists errors."""

import json

import pytest
from elasticsearch import BadRequestError, NotFoundError

import oracle

DYN = "dyn-test"


@pytest.fixture(scope="module")
def dyn(es):
    es.indices.delete(index=DYN, ignore_unavailable=True)
    yield DYN
    es.indices.delete(index=DYN, ignore_unavailable=True)


def test_get_mapping_round_trips(es, accounts):
    body = json.loads(oracle.MAPPING.read_text())
    resp = es.indices.get_mapping(index="accounts").body
    assert resp == {"accounts": {"mappings": body["mappings"]}}


def test_get_settings(es, accounts):
    s = es.indices.get_settings(index="accounts").body["accounts"]["settings"]["index"]
    assert s["number_of_shards"] == "1"
    assert s["number_of_replicas"] == "0"
    assert s["provided_name"] == "accounts"
    assert isinstance(s["uuid"], str) and s["uuid"]
    assert s["creation_date"].isdigit()


def test_get_index(es, accounts):
    r = es.indices.get(index="accounts").body["accounts"]
    assert set(r) >= {"aliases", "mappings", "settings"}
    assert r["mappings"]["properties"]["acctId"] == {"type": "keyword"}


def test_create_existing_index_fails(es, accounts):
    with pytest.raises(BadRequestError) as ei:
        es.indices.create(index="accounts")
    err = ei.value.body["error"]
    assert err["type"] == "resource_already_exists_exception"
    assert err["index"] == "accounts"
    assert err["reason"].startswith("index [accounts/") and err["reason"].endswith("] already exists")


def test_create_index_response(es):
    r = es.indices.create(index="create-test", settings={"number_of_replicas": 0}).body
    try:
        assert r == {"acknowledged": True, "shards_acknowledged": True, "index": "create-test"}
    finally:
        es.indices.delete(index="create-test")


@pytest.mark.parametrize("name", ["UPPER", "_leading", "bad,comma", "with space", "a*b"])
def test_invalid_index_names(es, name):
    with pytest.raises(BadRequestError) as ei:
        es.indices.create(index=name)
    assert ei.value.body["error"]["type"] == "invalid_index_name_exception"


def test_dynamic_mapping(es, dyn):
    es.index(index=dyn, id="1", refresh=True, document={
        "title": "Hello Dynamic World", "count": 5, "price": 1.5, "flag": True,
        "when": "2021-03-04T05:06:07Z", "obj": {"inner": "x"}, "list": ["a", "b"]})
    props = es.indices.get_mapping(index=dyn).body[dyn]["mappings"]["properties"]
    text_kw = {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}
    assert props["title"] == text_kw
    assert props["list"] == text_kw
    assert props["count"] == {"type": "long"}
    assert props["price"] == {"type": "float"}
    assert props["flag"] == {"type": "boolean"}
    assert props["when"] == {"type": "date"}
    assert props["obj"] == {"properties": {"inner": text_kw}}
    # the text field is analyzed, the keyword sub-field is exact
    assert es.count(index=dyn, query={"match": {"title": "dynamic"}}).body["count"] == 1
    assert es.count(index=dyn, query={"term": {"title.keyword": "Hello Dynamic World"}}).body["count"] == 1
    assert es.count(index=dyn, query={"term": {"title.keyword": "hello"}}).body["count"] == 0
    assert es.count(index=dyn, query={"term": {"obj.inner.keyword": "x"}}).body["count"] == 1
    assert es.count(index=dyn, query={"range": {"when": {"gte": "2021-03-04"}}}).body["count"] == 1
    agg = es.search(index=dyn, body={"size": 0, "aggs": {"t": {"terms": {"field": "list.keyword"}}}}).body
    assert [b["key"] for b in agg["aggregations"]["t"]["buckets"]] == ["a", "b"]


def test_dynamic_index_default_settings(es, dyn):
    es.index(index=dyn, id="2", document={"title": "x"}, refresh=True)
    s = es.indices.get_settings(index=dyn).body[dyn]["settings"]["index"]
    assert s["number_of_shards"] == "1"
    assert s["number_of_replicas"] == "1"


def test_put_mapping_adds_field(es, dyn):
    es.index(index=dyn, id="3", document={"title": "before"}, refresh=True)
    r = es.indices.put_mapping(index=dyn, properties={"code": {"type": "keyword"}, "qty": {"type": "integer"}}).body
    assert r == {"acknowledged": True}
    props = es.indices.get_mapping(index=dyn).body[dyn]["mappings"]["properties"]
    assert props["code"] == {"type": "keyword"} and props["qty"] == {"type": "integer"}
    es.index(index=dyn, id="4", document={"code": "Abc-1", "qty": 7}, refresh=True)
    assert es.count(index=dyn, query={"term": {"code": "Abc-1"}}).body["count"] == 1
    assert es.count(index=dyn, query={"range": {"qty": {"gt": 6}}}).body["count"] == 1
    got = es.search(index=dyn, body={"query": {"term": {"qty": 7}}}).body["hits"]["hits"]
    assert [h["_id"] for h in got] == ["4"]


def test_put_mapping_conflict(es, dyn):
    es.indices.put_mapping(index=dyn, properties={"kw": {"type": "keyword"}})
    with pytest.raises(BadRequestError) as ei:
        es.indices.put_mapping(index=dyn, properties={"kw": {"type": "long"}})
    err = ei.value.body["error"]
    assert err["type"] == "illegal_argument_exception"
    assert err["reason"] == "mapper [kw] cannot be changed from type [keyword] to [long]"


def test_put_mapping_missing_index(es):
    with pytest.raises(NotFoundError) as ei:
        es.indices.put_mapping(index="no-such-index", properties={"a": {"type": "keyword"}})
    assert ei.value.body["error"]["type"] == "index_not_found_exception"


def test_dynamic_strict(es):
    name = "strict-test"
    es.indices.delete(index=name, ignore_unavailable=True)
    es.indices.create(index=name, mappings={"dynamic": "strict", "properties": {"a": {"type": "keyword"}}})
    try:
        es.index(index=name, id="1", document={"a": "ok"})
        with pytest.raises(BadRequestError) as ei:
            es.index(index=name, id="2", document={"a": "ok", "b": 1})
        err = ei.value.body["error"]
        assert err["type"] == "strict_dynamic_mapping_exception"
        assert "[b]" in err["reason"]
    finally:
        es.indices.delete(index=name)


def test_dotted_field_names_are_objects(es):
    name = "dotted_mapping"
    es.indices.create(index=name, mappings={"properties": {"a.b.c": {"type": "keyword"}}})
    try:
        es.indices.put_mapping(index=name, properties={"a.d": {"type": "long"}, "x.y": {"type": "text"}})
        m = es.indices.get_mapping(index=name)[name]["mappings"]["properties"]
        assert m["a"]["properties"]["b"]["properties"]["c"]["type"] == "keyword"
        assert m["a"]["properties"]["d"]["type"] == "long"
        assert m["x"]["properties"]["y"]["type"] == "text"
        es.index(index=name, id="1", document={"a": {"b": {"c": "v"}, "d": 3}}, refresh=True)
        assert es.count(index=name, query={"term": {"a.b.c": "v"}})["count"] == 1
        assert es.count(index=name, query={"range": {"a.d": {"gte": 3}}})["count"] == 1
    finally:
        es.indices.delete(index=name)


def test_put_mapping_refuses_a_type_name(es):
    name = "typed_put_mapping"
    es.indices.create(index=name)
    try:
        with pytest.raises(BadRequestError) as ei:
            es.perform_request("PUT", f"/{name}/_mapping",
                               body={"_doc": {"properties": {"f": {"type": "keyword"}}}},
                               headers={"content-type": "application/json", "accept": "application/json"})
        assert ei.value.error == "illegal_argument_exception"
        assert es.indices.get_mapping(index=name)[name]["mappings"] == {}
    finally:
        es.indices.delete(index=name)


def test_put_settings_preserve_existing(es):
    name = "preserve_settings"
    es.indices.create(index=name, settings={"number_of_replicas": 0})
    try:
        es.indices.put_settings(index=name, settings={"index.number_of_replicas": 1,
                                                      "index.max_result_window": 500},
                                preserve_existing=True)
        s = es.indices.get_settings(index=name)[name]["settings"]["index"]
        assert s["number_of_replicas"] == "0" and s["max_result_window"] == "500"
    finally:
        es.indices.delete(index=name)


def test_index_query_string_lenient_setting(es):
    name = "qs_lenient"
    es.indices.create(index=name, mappings={"properties": {"n": {"type": "long"}}})
    try:
        es.index(index=name, id="1", document={"n": 5}, refresh=True)
        with pytest.raises(BadRequestError):
            es.search(index=name, query={"query_string": {"query": "abc", "default_field": "n"}})
        es.indices.put_settings(index=name, settings={"index.query_string.lenient": True})
        q = {"query_string": {"query": "abc", "default_field": "n"}}
        assert es.search(index=name, query=q)["hits"]["total"]["value"] == 0
        q = {"query_string": {"query": "5", "default_field": "n"}}
        assert es.search(index=name, query=q)["hits"]["total"]["value"] == 1
        # The query's own lenient wins over the index default.
        with pytest.raises(BadRequestError):
            es.search(index=name, query={"query_string": {"query": "abc", "default_field": "n",
                                                          "lenient": False}})
    finally:
        es.indices.delete(index=name)


@pytest.mark.parametrize("setting", ["index.search.bogus", "index.max_bogus", "index.query.bogus",
                                     "index.merge.scheduler.bogus", "index.mapping.bogus"])
def test_unknown_settings_are_refused(es, setting):
    name = "unknown_settings"
    with pytest.raises(BadRequestError) as ei:
        es.indices.create(index=name, settings={setting: 1})
    assert "unknown setting" in ei.value.info["error"]["reason"]
    es.indices.create(index=name)
    try:
        with pytest.raises(BadRequestError):
            es.indices.put_settings(index=name, settings={setting: 1})
        # Known groups stay open: analysis components, slow log thresholds.
        es.indices.put_settings(index=name, settings={"index.search.slowlog.threshold.query.warn": "1s"})
    finally:
        es.indices.delete(index=name)

"""URL parameters: each API accepts the parameters Elasticsearch defines for it and Lode
implements, refuses unknown ones with ES's "unrecognized parameter" error (with its "did you
mean"), and refuses ES parameters Lode does not implement by name. The request is refused
before it acts: nothing is written by a refused write. Also the parameters every API takes
(`human`, `source`), and the document-level ones this check brought in (mget's strict
entries, read versions, `wait_for_active_shards`, bulk `require_alias`).
"""

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest
from elasticsearch import ApiError

INDEX = "urlparams"
DOCS = {str(i): {"n": i, "tag": "even" if i % 2 == 0 else "odd"} for i in range(20)}


@pytest.fixture(scope="module")
def index(es):
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {
        "n": {"type": "integer"}, "tag": {"type": "keyword", "store": True}}})
    for i, d in DOCS.items():
        es.index(index=INDEX, id=i, document=d)
    es.indices.refresh(index=INDEX)
    yield INDEX
    es.options(ignore_status=404).indices.delete(index=INDEX)


def raw(url, method, path, params=None, body=None):
    q = ("?" + urllib.parse.urlencode(params)) if params else ""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path + q, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def error(status, body):
    assert body is not None and "error" in body, body
    assert body["status"] == status
    return body["error"]


def test_unknown_parameter_is_refused_with_suggestion(lode_url, index):
    status, body = raw(lode_url, "GET", f"/{index}/_search", {"sise": "1"})
    assert status == 400
    err = error(400, body)
    assert err["type"] == "illegal_argument_exception"
    assert err["reason"] == (f"request [/{index}/_search] contains unrecognized parameter: "
                             "[sise] -> did you mean [size]?")
    assert err["root_cause"][0]["type"] == "illegal_argument_exception"


def test_several_unknown_parameters_are_listed(lode_url, index):
    status, body = raw(lode_url, "GET", f"/{index}/_count", {"zzz": "1", "qqq": "2"})
    assert status == 400
    assert error(400, body)["reason"] == (
        f"request [/{index}/_count] contains unrecognized parameters: [qqq], [zzz]")


@pytest.mark.parametrize("method,path,params", [
    ("GET", "/{i}/_search", {"from": "1", "size": "2", "sort": "n:asc", "pretty": "true"}),
    ("GET", "/{i}/_count", {"q": "tag:even", "df": "tag", "lenient": "true"}),
    ("GET", "/{i}/_doc/1", {"_source_includes": "n", "realtime": "false"}),
    ("GET", "/_cluster/health", {"wait_for_status": "yellow", "timeout": "1s"}),
    ("GET", "/{i}/_stats", {"level": "shards", "human": "true"}),
    ("GET", "/_cat/indices", {"format": "json", "h": "index", "v": "true"}),
    ("POST", "/{i}/_refresh", {"ignore_unavailable": "true"}),
])
def test_declared_parameters_pass(lode_url, index, method, path, params):
    status, body = raw(lode_url, method, path.format(i=index), params)
    assert status == 200, body


def test_refused_write_writes_nothing(es, lode_url, index):
    status, body = raw(lode_url, "PUT", f"/{index}/_doc/new1", {"refresh": "true", "bogus": "x"},
                       {"n": 100})
    assert status == 400
    assert error(400, body)["type"] == "illegal_argument_exception"
    assert not es.exists(index=index, id="new1")
    status, body = raw(lode_url, "PUT", "/urlparams_never", {"wait_for_active_shard": "1"}, {})
    assert status == 400
    assert "did you mean [wait_for_active_shards]?" in error(400, body)["reason"]
    assert not es.indices.exists(index="urlparams_never")


def test_unsupported_parameter_is_refused_by_name(lode_url, index):
    status, body = raw(lode_url, "PUT", f"/{index}/_doc/p1", {"pipeline": "x"}, {"n": 1})
    assert status == 400
    err = error(400, body)
    assert err["type"] == "illegal_argument_exception"
    assert "[pipeline]" in err["reason"] and "not support" in err["reason"]


def test_human_adds_readable_twins(lode_url, index):
    status, plain = raw(lode_url, "GET", f"/{index}/_stats/store")
    assert status == 200
    size = plain["_all"]["primaries"]["store"]["size_in_bytes"]
    assert "size" not in plain["_all"]["primaries"]["store"]
    status, human = raw(lode_url, "GET", f"/{index}/_stats/store", {"human": "true"})
    store = human["_all"]["primaries"]["store"]
    assert store["size_in_bytes"] == size
    # ES's ByteSizeValue: the largest unit reached, one decimal, truncated.
    units = [("pb", 1 << 50), ("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)]
    expected = f"{size}b"
    for suffix, unit in units:
        if size >= unit:
            whole, tenth = divmod(size * 10 // unit, 10)
            expected = f"{whole}{suffix}" if tenth == 0 else f"{whole}.{tenth}{suffix}"
            break
    assert store["size"] == expected


def test_source_parameter_is_the_body(lode_url, index):
    q = json.dumps({"query": {"term": {"tag": "odd"}}, "size": 0})
    status, body = raw(lode_url, "GET", f"/{index}/_search",
                       {"source": q, "source_content_type": "application/json"})
    assert status == 200
    assert body["hits"]["total"]["value"] == sum(1 for d in DOCS.values() if d["tag"] == "odd")
    status, body = raw(lode_url, "GET", f"/{index}/_search", {"source": q})
    assert status == 400
    assert error(400, body)["type"] == "illegal_state_exception"


def test_get_version_with_version_type(es, index):
    doc = es.get(index=index, id="3", version=1, version_type="external")
    assert doc["_source"] == DOCS["3"]
    with pytest.raises(ApiError) as e:
        es.get(index=index, id="3", version=7, version_type="external_gte")
    assert e.value.meta.status == 409
    assert e.value.body["error"]["type"] == "version_conflict_engine_exception"
    with pytest.raises(ApiError) as e:
        es.get(index=index, id="3", version=1, version_type="bogus")
    assert e.value.meta.status == 400
    with pytest.raises(ApiError) as e:
        es.get_source(index=index, id="3", version=2)
    assert e.value.meta.status == 409


def test_mget_stored_fields_and_versions(es, index):
    r = es.mget(index=index, stored_fields=["tag"], docs=[
        {"_id": "1"}, {"_id": "2", "stored_fields": ["_source"]}, {"_id": "4", "version": 9}])
    first, second, third = r["docs"]
    assert first["fields"] == {"tag": [DOCS["1"]["tag"]]} and "_source" not in first
    assert second["_source"] == DOCS["2"] and "fields" not in second
    assert third["error"]["type"] == "version_conflict_engine_exception"


@pytest.mark.parametrize("entry", [
    {"_id": "1", "_routing": "x"}, {"_id": "1", "_version": 1}, {"_id": "1", "bogus": 1}])
def test_mget_entry_keys_are_strict(es, index, entry):
    with pytest.raises(ApiError) as e:
        es.mget(index=index, docs=[entry])
    assert e.value.meta.status == 400
    key = next(k for k in entry if k != "_id")
    assert e.value.body["error"]["reason"] == (
        f"failed to parse multi get request. unknown field [{key}]")


def test_wait_for_active_shards(es, index):
    r = es.indices.create(index="urlparams_w", wait_for_active_shards="all",
                          settings={"number_of_replicas": 0})
    assert r["shards_acknowledged"] is True
    es.indices.delete(index="urlparams_w")
    # One node never starts a replica: two copies are never active.
    r = es.indices.create(index="urlparams_w", wait_for_active_shards="2",
                          settings={"number_of_replicas": 1})
    assert r["acknowledged"] is True and r["shards_acknowledged"] is False
    with pytest.raises(ApiError) as e:
        es.index(index="urlparams_w", id="1", document={"n": 1}, wait_for_active_shards="2",
                 timeout="1s")
    assert e.value.meta.status == 503
    assert e.value.body["error"]["type"] == "unavailable_shards_exception"
    assert es.count(index="urlparams_w")["count"] == 0
    r = es.bulk(operations=[{"index": {"_index": "urlparams_w", "_id": "2"}}, {"n": 2}],
                wait_for_active_shards="2")
    assert r["errors"] and r["items"][0]["index"]["status"] == 503
    es.index(index="urlparams_w", id="3", document={"n": 3}, wait_for_active_shards="1",
             refresh=True)
    assert es.count(index="urlparams_w")["count"] == 1
    es.indices.delete(index="urlparams_w")


def test_bulk_require_alias(es, index):
    es.options(ignore_status=404).indices.delete(index="urlparams_ra")
    es.indices.create(index="urlparams_ra", aliases={"urlparams_alias": {}})
    r = es.bulk(require_alias=True, refresh=True, operations=[
        {"index": {"_index": "urlparams_alias", "_id": "1"}}, {"n": 1},
        {"index": {"_index": "urlparams_noalias", "_id": "2"}}, {"n": 2},
        {"index": {"_index": "urlparams_noalias2", "_id": "3", "require_alias": False}}, {"n": 3},
    ])
    a, b, c = (item["index"] for item in r["items"])
    assert a["status"] == 201 and a["_index"] == "urlparams_ra"
    assert b["status"] == 404 and b["error"]["type"] == "index_not_found_exception"
    assert "[require_alias] request flag is [true]" in b["error"]["reason"]
    assert c["status"] == 201
    assert not es.indices.exists(index="urlparams_noalias")
    r = es.bulk(operations=[{"index": {"_index": "urlparams_noalias", "_id": "4",
                                       "require_alias": True}}, {"n": 4}])
    assert r["items"][0]["index"]["status"] == 404
    assert not es.indices.exists(index="urlparams_noalias")
    for name in ["urlparams_ra", "urlparams_noalias2"]:
        es.indices.delete(index=name)

"""Memory circuit breakers: a node started with a small `indices.breaker.request.limit` and
`network.breaker.inflight_requests.limit` answers an aggregation that would create too many
buckets, and a request body too large to hold, with ES's 429 circuit_breaking_exception;
keeps answering normal searches; reports the trips and the (released) estimates in
`_nodes/stats/breaker`; and applies a limit changed with `PUT _cluster/settings`.

This module starts its own `lode serve`.
"""

import collections
import json
import re
import urllib.error
import urllib.request

import pytest
from elasticsearch import ApiError, Elasticsearch

from conftest import LodeServer, lode_binary

REQUEST_LIMIT = 1 << 20          # indices.breaker.request.limit=1mb
IN_FLIGHT_LIMIT = 2 << 20        # network.breaker.inflight_requests.limit=2mb (overhead 2.0)
N_DOCS = 20000
KEYS = 7
START = 1672531200000            # 2023-01-01T00:00:00Z
YEAR_MS = 365 * 86400 * 1000


def doc(i):
    return {"u": "u%05d" % i, "k": "k%d" % (i % KEYS), "n": i % KEYS,
            "t": START + i * (YEAR_MS // N_DOCS)}


def es_byte_size(n):
    """ES's ByteSizeValue#toString: the largest unit reached, one decimal truncated."""
    for suffix, size in (("pb", 1 << 50), ("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20),
                         ("kb", 1 << 10)):
        if n >= size:
            v = int(n * 10 // size) / 10
            s = ("%.1f" % v)
            return (s[:-2] if s.endswith(".0") else s) + suffix
    return "%db" % n


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = LodeServer(lode_binary(), str(tmp_path_factory.mktemp("breakers")), settings=[
        "indices.breaker.request.limit=1mb",
        "network.breaker.inflight_requests.limit=2mb",
        # the parent checks the children's sum, not the process's memory, so the test does
        # not depend on the machine
        "indices.breaker.total.use_real_memory=false",
    ])
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def client(server):
    return Elasticsearch(server.url, request_timeout=120, max_retries=0, retry_on_status=())


@pytest.fixture(scope="module")
def loaded(client):
    client.indices.create(index="br", mappings={"properties": {
        "u": {"type": "keyword"}, "k": {"type": "keyword"}, "n": {"type": "integer"},
        "t": {"type": "date"}}})
    for lo in range(0, N_DOCS, 2000):
        ops = []
        for i in range(lo, min(lo + 2000, N_DOCS)):
            ops.append({"index": {"_index": "br", "_id": str(i)}})
            ops.append(doc(i))
        r = client.bulk(operations=ops)
        assert not r["errors"]
    client.indices.refresh(index="br")
    return [doc(i) for i in range(N_DOCS)]


def breakers(client):
    nodes = client.nodes.stats(metric="breaker")["nodes"]
    assert len(nodes) == 1
    return next(iter(nodes.values()))["breakers"]


def assert_request_trip(err, agg, limit):
    assert err.meta.status == 429
    body = err.body
    assert body["status"] == 429
    root = body["error"]["root_cause"][0]
    assert root["type"] == "circuit_breaking_exception"
    m = re.fullmatch(r"\[request\] Data too large, data for \[<agg \[(.+)\]>\] would be "
                     r"\[(\d+)/(\S+)\], which is larger than the limit of \[(\d+)/(\S+)\]",
                     root["reason"])
    assert m, root["reason"]
    assert m.group(1) == agg
    wanted = int(m.group(2))
    assert m.group(3) == es_byte_size(wanted)
    assert (int(m.group(4)), m.group(5)) == (limit, es_byte_size(limit))
    assert root["bytes_wanted"] == wanted and wanted > limit
    assert root["bytes_limit"] == limit
    assert root["durability"] == "TRANSIENT"
    # a shard's query phase failed: ES wraps the shard failure, with the breaker's status
    assert body["error"]["type"] == "search_phase_execution_exception"
    assert body["error"]["caused_by"] == root


def terms_answer(docs, field):
    return collections.Counter(d[field] for d in docs)


def test_breakers(client, loaded, server):
    trips = 0
    stats = breakers(client)
    assert set(stats) >= {"request", "fielddata", "in_flight_requests", "parent"}
    assert stats["request"]["limit_size_in_bytes"] == REQUEST_LIMIT
    assert stats["request"]["limit_size"] == "1mb"
    assert stats["request"]["overhead"] == 1.0
    assert stats["fielddata"]["overhead"] == 1.03
    assert stats["in_flight_requests"]["limit_size_in_bytes"] == IN_FLIGHT_LIMIT
    assert stats["in_flight_requests"]["overhead"] == 2.0
    for b in stats.values():
        assert set(b) == {"limit_size_in_bytes", "limit_size", "estimated_size_in_bytes",
                          "estimated_size", "overhead", "tripped"}
    base_request_trips = stats["request"]["tripped"]

    # a terms aggregation with a bucket per document
    with pytest.raises(ApiError) as e:
        client.search(index="br", size=0, aggs={"uniq": {"terms": {"field": "u", "size": N_DOCS}}})
    assert_request_trip(e.value, "uniq", REQUEST_LIMIT)
    trips += 1

    # a one-second date_histogram over a year
    with pytest.raises(ApiError) as e:
        client.search(index="br", size=0, aggs={
            "per_second": {"date_histogram": {"field": "t", "fixed_interval": "1s"}}})
    assert_request_trip(e.value, "per_second", REQUEST_LIMIT)
    trips += 1

    # ... also as a sub-aggregation: the estimate multiplies by the parent's buckets
    with pytest.raises(ApiError) as e:
        client.search(index="br", size=0, aggs={"by_k": {"terms": {"field": "k"}, "aggs": {
            "per_minute": {"date_histogram": {"field": "t", "fixed_interval": "1m"}}}}})
    assert e.value.meta.status == 429
    trips += 1

    # a result window is charged too: every shard and the merge keep from + size hits
    with pytest.raises(ApiError) as e:
        client.search(index="br", size=10000, query={"match_all": {}})
    assert e.value.meta.status == 429
    cause = e.value.body["error"]["root_cause"][0]
    assert cause["type"] == "circuit_breaking_exception"
    assert cause["reason"].startswith("[request] Data too large, data for [<search_hits>]")
    trips += 1
    r = client.search(index="br", size=100, sort=["u"], query={"match_all": {}})
    assert [h["_source"]["u"] for h in r["hits"]["hits"]] == sorted(d["u"] for d in loaded)[:100]

    # in a msearch, the search that trips is an item error, the others answer
    r = client.msearch(searches=[
        {"index": "br"}, {"size": 0, "aggs": {"uniq": {"terms": {"field": "u", "size": N_DOCS}}}},
        {"index": "br"}, {"size": 0, "query": {"term": {"k": "k1"}}},
    ])
    first, second = r["responses"]
    assert first["status"] == 429
    assert first["error"]["root_cause"][0]["type"] == "circuit_breaking_exception"
    assert second["status"] == 200
    assert second["hits"]["total"]["value"] == sum(1 for d in loaded if d["k"] == "k1")
    trips += 1

    # a normal search still answers, correctly
    r = client.search(index="br", size=0, aggs={"by_k": {"terms": {"field": "k", "size": KEYS}}})
    got = {b["key"]: b["doc_count"] for b in r["aggregations"]["by_k"]["buckets"]}
    assert got == dict(terms_answer(loaded, "k"))
    # a numeric terms over every document with few distinct values is estimated by its range
    r = client.search(index="br", size=0, aggs={"by_n": {"terms": {"field": "n", "size": KEYS}}})
    got = {b["key"]: b["doc_count"] for b in r["aggregations"]["by_n"]["buckets"]}
    assert got == dict(terms_answer(loaded, "n"))
    r = client.search(index="br", size=0, aggs={
        "per_month": {"date_histogram": {"field": "t", "calendar_interval": "month"}}})
    assert sum(b["doc_count"] for b in r["aggregations"]["per_month"]["buckets"]) == N_DOCS

    stats = breakers(client)
    assert stats["request"]["tripped"] - base_request_trips == trips
    assert stats["request"]["estimated_size_in_bytes"] == 0
    assert stats["request"]["estimated_size"] == "0b"
    assert stats["in_flight_requests"]["estimated_size_in_bytes"] == 0

    # a dynamic limit takes effect: 10mb lets the terms aggregation through
    client.cluster.put_settings(transient={"indices.breaker.request.limit": "10mb"})
    try:
        assert breakers(client)["request"]["limit_size_in_bytes"] == 10 << 20
        r = client.search(index="br", size=0,
                          aggs={"uniq": {"terms": {"field": "u", "size": N_DOCS}}})
        buckets = r["aggregations"]["uniq"]["buckets"]
        assert len(buckets) == N_DOCS
        assert all(b["doc_count"] == 1 for b in buckets)
        # a percentage is of the node's memory budget; 0% refuses every aggregation
        client.cluster.put_settings(transient={"indices.breaker.request.limit": "0%"})
        assert breakers(client)["request"]["limit_size_in_bytes"] == 0
    finally:
        client.cluster.put_settings(transient={"indices.breaker.request.limit": None})
    assert breakers(client)["request"]["limit_size_in_bytes"] == REQUEST_LIMIT
    # (the answer above is in the request cache, which answers without aggregating, as in ES)
    with pytest.raises(ApiError) as e:
        client.search(index="br", size=0, request_cache=False,
                      aggs={"uniq": {"terms": {"field": "u", "size": N_DOCS}}})
    assert_request_trip(e.value, "uniq", REQUEST_LIMIT)
    trips += 1

    # bad values are refused as ES refuses them
    with pytest.raises(ApiError) as e:
        client.cluster.put_settings(transient={"indices.breaker.request.limit": "lots"})
    assert e.value.meta.status == 400
    with pytest.raises(ApiError) as e:
        client.cluster.put_settings(transient={"indices.breaker.total.use_real_memory": False})
    assert e.value.meta.status == 400

    # a request body over the in-flight limit (1.5mb, twice that with the overhead)
    body = json.dumps({"query": {"match_all": {}},
                       "_source": False, "size": 0, "stored_fields": ["x" * (3 << 19)]}).encode()
    req = urllib.request.Request(server.url + "/br/_search", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as h:
        urllib.request.urlopen(req, timeout=60)
    assert h.value.code == 429
    err = json.loads(h.value.read())
    assert err["status"] == 429
    cause = err["error"]["root_cause"][0]
    assert cause["type"] == err["error"]["type"] == "circuit_breaking_exception"
    wanted = 2 * len(body)
    assert cause["reason"] == (
        "[in_flight_requests] Data too large, data for [<http_request>] would be [%d/%s], "
        "which is larger than the limit of [%d/%s]"
        % (wanted, es_byte_size(wanted), IN_FLIGHT_LIMIT, es_byte_size(IN_FLIGHT_LIMIT)))
    assert (cause["bytes_wanted"], cause["bytes_limit"]) == (wanted, IN_FLIGHT_LIMIT)

    stats = breakers(client)
    assert stats["request"]["tripped"] - base_request_trips == trips
    assert stats["in_flight_requests"]["tripped"] == 1
    assert stats["request"]["estimated_size_in_bytes"] == 0
    assert stats["in_flight_requests"]["estimated_size_in_bytes"] == 0
    # the full node stats carry the section too
    full = next(iter(client.nodes.stats()["nodes"].values()))
    assert full["breakers"]["request"]["tripped"] == stats["request"]["tripped"]

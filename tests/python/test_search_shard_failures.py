"""A script that throws fails the shards it ran on, as in Elasticsearch 8.

ES plans and runs a search on each shard: a shard whose script throws is a
`ShardSearchFailure` naming its index, shard and node, with the `script_exception` (and its
`caused_by`) as `reason`. The other shards answer: a 200 with the failures in
`_shards.failures` (grouped by index, type and reason), unless every shard failed ("all shards
failed": 400 `search_phase_execution_exception` with `failed_shards`, one root cause per group
and the first one's cause as `caused_by`) or `allow_partial_search_results` is false ("Partial
shards failure", no `caused_by`) (`AbstractSearchAsyncAction#executeNextPhase`,
`SearchPhaseExecutionException`, `ShardSearchFailure#toXContent`).

The oracle: `doc['v'].value` throws on a document without `v` (an index with no `v` in its
mapping, or a document routed to one shard without a value); which shard a document is on is
computed here with ES's routing (murmur3 of the routing key, see test_shard_partial_failure).
"""

import pytest
from elasticsearch import ApiError

from test_shard_partial_failure import murmur3_32

HAS_V = "sf_has_v"
NO_V = "sf_no_v"
NO_V2 = "sf_no_v2"
SHARDED = "sf_sharded"
SHARDS = 3
ROUTING_NUM_SHARDS = 768  # ES's for 3 shards (MetadataCreateIndexService)
BAD_ROUTING = "bad"
T = 10
SCRIPT = {"script": {"script": {"source": "doc['v'].value > params.t", "params": {"t": T}}}}
VALUES = {str(i): i for i in range(30)}


def shard_of(routing):
    h = murmur3_32(routing.encode("utf-16-le"))
    return (h % ROUTING_NUM_SHARDS) // (ROUTING_NUM_SHARDS // SHARDS)


def bulk(es, index, docs, routing=None):
    ops = []
    for i, d in docs.items():
        meta = {"_index": index, "_id": i}
        if routing:
            meta["routing"] = routing
        ops += [{"index": meta}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False


@pytest.fixture(scope="module")
def indices(es):
    names = [HAS_V, NO_V, NO_V2, SHARDED]
    for n in names:
        es.indices.delete(index=n, ignore_unavailable=True)
    es.indices.create(index=HAS_V, mappings={"properties": {"v": {"type": "long"}}})
    bulk(es, HAS_V, {i: {"v": v} for i, v in VALUES.items()})
    for n in (NO_V, NO_V2):
        es.indices.create(index=n, mappings={"properties": {"w": {"type": "long"}}})
        bulk(es, n, {i: {"w": v} for i, v in VALUES.items()})
    es.indices.create(index=SHARDED, settings={"number_of_shards": SHARDS},
                      mappings={"properties": {"v": {"type": "long"}}})
    bulk(es, SHARDED, {i: {"v": v} for i, v in VALUES.items()})
    bulk(es, SHARDED, {"nv1": {}, "nv2": {}}, routing=BAD_ROUTING)
    yield
    for n in names:
        es.indices.delete(index=n, ignore_unavailable=True)


@pytest.fixture(scope="module")
def node_id(es):
    return next(iter(es.nodes.info()["nodes"]))


def search(es, index, body, **params):
    return es.perform_request("POST", f"/{index}/_search", body=body, params=params,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


def failed(es, index, body, **params):
    with pytest.raises(ApiError) as ei:
        search(es, index, body, **params)
    assert ei.value.meta.status == 400
    return ei.value.body["error"]


def check_script_reason(reason, cause="illegal_argument_exception"):
    """A failure's reason: the script_exception with its cause (`doc['v']` on an index without
    `v` is an illegal argument; on a document without a value, an illegal state)."""
    assert reason["type"] == "script_exception"
    assert reason["lang"] == "painless"
    assert reason["caused_by"]["type"] == cause


def test_one_index_failing_beside_another_answers_with_its_failure(es, indices, node_id):
    r = search(es, f"{HAS_V},{NO_V}", {"size": 100, "query": SCRIPT})
    want = {i for i, v in VALUES.items() if v > T}
    assert {h["_id"] for h in r["hits"]["hits"]} == want
    assert {h["_index"] for h in r["hits"]["hits"]} == {HAS_V}
    assert r["hits"]["total"] == {"value": len(want), "relation": "eq"}
    sh = r["_shards"]
    assert (sh["total"], sh["successful"], sh["skipped"], sh["failed"]) == (2, 1, 0, 1)
    assert len(sh["failures"]) == 1
    f = sh["failures"][0]
    assert (f["shard"], f["index"], f["node"]) == (0, NO_V, node_id)
    check_script_reason(f["reason"])


def test_every_shard_failing_is_all_shards_failed(es, indices, node_id):
    err = failed(es, NO_V, {"query": SCRIPT})
    assert err["type"] == "search_phase_execution_exception"
    assert err["reason"] == "all shards failed"
    assert (err["phase"], err["grouped"]) == ("query", True)
    assert len(err["failed_shards"]) == 1
    f = err["failed_shards"][0]
    assert (f["shard"], f["index"], f["node"]) == (0, NO_V, node_id)
    check_script_reason(f["reason"])
    check_script_reason(err["caused_by"])
    assert len(err["root_cause"]) == 1
    root = err["root_cause"][0]
    assert root["type"] == "script_exception" and "caused_by" not in root


def test_two_failing_indices_are_two_groups(es, indices):
    err = failed(es, f"{NO_V},{NO_V2}", {"query": SCRIPT})
    assert err["reason"] == "all shards failed"
    assert sorted(f["index"] for f in err["failed_shards"]) == [NO_V, NO_V2]
    assert [r["type"] for r in err["root_cause"]] == ["script_exception"] * 2
    for f in err["failed_shards"]:
        check_script_reason(f["reason"])


def test_partial_results_refused(es, indices, node_id):
    err = failed(es, f"{HAS_V},{NO_V}", {"query": SCRIPT},
                 allow_partial_search_results="false")
    assert err["type"] == "search_phase_execution_exception"
    assert err["reason"] == "Partial shards failure"
    assert "caused_by" not in err
    assert [(f["shard"], f["index"], f["node"]) for f in err["failed_shards"]] == \
        [(0, NO_V, node_id)]
    assert [r["type"] for r in err["root_cause"]] == ["script_exception"]


def test_a_script_failing_on_one_shard_fails_that_shard_only(es, indices, node_id):
    bad = shard_of(BAD_ROUTING)
    body = {"size": 100, "query": SCRIPT, "aggs": {"n": {"value_count": {"field": "v"}}}}
    r = search(es, SHARDED, body)
    want = {i for i, v in VALUES.items() if v > T and shard_of(i) != bad}
    assert want and want != {i for i, v in VALUES.items() if v > T}
    assert {h["_id"] for h in r["hits"]["hits"]} == want
    assert r["hits"]["total"]["value"] == len(want)
    # the failed shard's documents are not aggregated either
    assert r["aggregations"]["n"]["value"] == len(want)
    sh = r["_shards"]
    assert (sh["total"], sh["successful"], sh["failed"]) == (SHARDS, SHARDS - 1, 1)
    f = sh["failures"][0]
    assert (f["shard"], f["index"], f["node"]) == (bad, SHARDED, node_id)
    check_script_reason(f["reason"], "illegal_state_exception")
    c = es.perform_request("POST", f"/{SHARDED}/_count", body={"query": SCRIPT},
                           headers={"content-type": "application/json",
                                    "accept": "application/json"}).body
    assert c["count"] == len(want)
    assert (c["_shards"]["successful"], c["_shards"]["failed"]) == (SHARDS - 1, 1)
    assert c["_shards"]["failures"][0]["shard"] == bad


def test_a_failed_search_is_not_cached(es, indices):
    body = {"size": 0, "query": SCRIPT}
    first = search(es, f"{HAS_V},{NO_V}", body, request_cache="true")
    again = search(es, f"{HAS_V},{NO_V}", body, request_cache="true")
    assert first["_shards"]["failed"] == again["_shards"]["failed"] == 1
    stats = es.indices.stats(index=HAS_V, metric="request_cache")
    assert stats["_all"]["total"]["request_cache"]["hit_count"] == 0

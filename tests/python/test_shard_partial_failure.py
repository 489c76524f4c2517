"""One shard of an index fails to open, the others serve (issue 11).

The test stops its own `lode serve`, deletes the commit point of shard 1 of a 3-shard index
and restarts the node on the same data. Elasticsearch fails per shard: the index is red, the
other two primaries are started, searches answer from them with the failed shard in
`_shards.failures` (`allow_partial_search_results` defaults to true), gets and writes routed to
the healthy shards work and those routed to the broken one fail with ES's errors.

Which shard a document is on is computed here as Elasticsearch routes it: murmur3 (x86, 32
bits, seed 0) of the id's UTF-16LE bytes, `floorMod(hash, routing_num_shards) / factor`, with
`routing_num_shards` 768 for 3 shards (`MetadataCreateIndexService#calculateNumRoutingShards`).

This module starts its own `lode serve` (the session server is not restarted).
"""

import os

import pytest
from elasticsearch import Elasticsearch

from conftest import LodeServer, client, error_of, lode_binary, wait_until

INDEX = "three"
SHARDS = 3
ROUTING_NUM_SHARDS = 768
BROKEN = 1
N = 60


def murmur3_32(data, seed=0):
    c1, c2 = 0xCC9E2D51, 0x1B873593
    mask = 0xFFFFFFFF
    h = seed
    n = len(data) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[n:]
    k = 0
    if len(tail) >= 3:
        k ^= tail[2] << 16
    if len(tail) >= 2:
        k ^= tail[1] << 8
    if len(tail) >= 1:
        k ^= tail[0]
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def shard_of(doc_id):
    h = murmur3_32(doc_id.encode("utf-16-le"))
    return (h % ROUTING_NUM_SHARDS) // (ROUTING_NUM_SHARDS // SHARDS)


def test_routing_matches_known_values():
    # murmur3_x86_32 reference vectors (seed 0)
    assert murmur3_32(b"") == 0
    assert murmur3_32(b"hello") & 0xFFFFFFFF == 0x248BFA47
    assert murmur3_32(b"The quick brown fox jumps over the lazy dog") & 0xFFFFFFFF == 0x2E4FF723


IDS = [str(i) for i in range(N)]
ON_BROKEN = [i for i in IDS if shard_of(i) == BROKEN]
HEALTHY = [i for i in IDS if shard_of(i) != BROKEN]


@pytest.fixture(scope="module")
def partial_node(tmp_path_factory):
    assert ON_BROKEN and HEALTHY
    base = str(tmp_path_factory.mktemp("partial"))
    server = LodeServer(lode_binary(), base)
    server.start()
    es = client(server.url)
    es.indices.create(index=INDEX, settings={"number_of_shards": SHARDS, "number_of_replicas": 0,
                                             "index.allocation.max_retries": 1})
    ops = []
    for i in IDS:
        ops += [{"index": {"_index": INDEX, "_id": i}}, {"n": int(i)}]
    es.bulk(operations=ops, refresh=True)
    uuid = es.indices.get_settings(index=INDEX).body[INDEX]["settings"]["index"]["uuid"]
    es.indices.flush(index=INDEX)
    data_dir = server.data_dir
    server.stop()
    meta = os.path.join(data_dir, "indices", uuid, str(BROKEN), "index", "meta.json")
    with open(meta, "rb") as f:
        saved = f.read()
    os.remove(meta)
    os.symlink(data_dir, os.path.join(base, "data-%d" % (server.generation + 1)))
    server.start()
    try:
        yield client(server.url), meta, saved
    finally:
        server.stop()


def test_the_other_shards_serve(partial_node):
    es, _, _ = partial_node

    h = es.cluster.health(level="shards").body
    assert h["status"] == "red"
    assert (h["active_primary_shards"], h["unassigned_primary_shards"]) == (SHARDS - 1, 1)
    idx = h["indices"][INDEX]
    assert idx["status"] == "red" and idx["active_primary_shards"] == SHARDS - 1
    for s in range(SHARDS):
        assert idx["shards"][str(s)]["status"] == ("red" if s == BROKEN else "green")
        assert idx["shards"][str(s)]["primary_active"] is (s != BROKEN)

    rows = es.cat.shards(index=INDEX, format="json", h="shard,state,docs,unassigned.reason").body
    by_shard = {int(r["shard"]): r for r in rows}
    for s in range(SHARDS):
        if s == BROKEN:
            assert (by_shard[s]["state"], by_shard[s]["unassigned.reason"]) == \
                ("UNASSIGNED", "ALLOCATION_FAILED")
        else:
            assert by_shard[s]["state"] == "STARTED"
            assert by_shard[s]["docs"] == str(sum(1 for i in IDS if shard_of(i) == s))

    [row] = es.cat.indices(index=INDEX, format="json", h="health,docs.count").body
    assert row == {"health": "red", "docs.count": str(len(HEALTHY))}

    # searches: partial results from the started shards
    r = es.search(index=INDEX, size=N, track_total_hits=True).body
    assert sorted(h["_id"] for h in r["hits"]["hits"]) == sorted(HEALTHY)
    assert r["hits"]["total"]["value"] == len(HEALTHY)
    sh = r["_shards"]
    assert (sh["total"], sh["successful"], sh["failed"]) == (SHARDS, SHARDS - 1, 1)
    assert sh["failures"][0]["index"] == INDEX and sh["failures"][0]["shard"] == BROKEN
    assert sh["failures"][0]["reason"]["type"] == "no_shard_available_action_exception"
    r = es.count(index=INDEX).body
    assert r["count"] == len(HEALTHY) and r["_shards"]["failed"] == 1
    status, body = error_of(lambda: es.search(index=INDEX, allow_partial_search_results=False))
    assert status == 503
    assert body["error"]["type"] == "search_phase_execution_exception"
    assert body["error"]["reason"].startswith(
        "Search rejected due to missing shards [[%s][%d]]" % (INDEX, BROKEN))
    # msearch items are searches
    items = es.msearch(searches=[{"index": INDEX}, {"size": N},
                                 {"index": INDEX, "allow_partial_search_results": False},
                                 {}]).body["responses"]
    assert sorted(h["_id"] for h in items[0]["hits"]["hits"]) == sorted(HEALTHY)
    assert items[0]["_shards"]["failed"] == 1 and items[0]["status"] == 200
    assert items[1]["status"] == 503
    assert items[1]["error"]["reason"].startswith("Search rejected due to missing shards")

    # routed to the broken shard only: nothing to search
    status, body = error_of(lambda: es.search(index=INDEX, routing=ON_BROKEN[0]))
    assert status == 503 and body["error"]["reason"] == "all shards failed"

    # gets
    doc = HEALTHY[0]
    assert es.get(index=INDEX, id=doc).body["_source"] == {"n": int(doc)}
    status, body = error_of(lambda: es.get(index=INDEX, id=ON_BROKEN[0]))
    assert status == 503
    assert body["error"]["type"] == "no_shard_available_action_exception"
    docs = es.mget(index=INDEX, ids=[HEALTHY[0], ON_BROKEN[0]]).body["docs"]
    assert docs[0]["found"] is True
    assert docs[1]["error"]["type"] == "no_shard_available_action_exception"

    # writes: per item
    new_healthy = next(str(i) for i in range(1000, 2000) if shard_of(str(i)) != BROKEN)
    r = es.bulk(operations=[{"index": {"_index": INDEX, "_id": ON_BROKEN[0]}}, {"n": -1},
                            {"index": {"_index": INDEX, "_id": new_healthy}}, {"n": -2}],
                timeout="200ms").body
    assert r["errors"] is True
    first = r["items"][0]["index"]
    assert first["status"] == 503
    assert first["error"]["type"] == "unavailable_shards_exception"
    assert first["error"]["reason"].startswith(
        "[%s][%d] primary shard is not active Timeout: [200ms]" % (INDEX, BROKEN))
    assert r["items"][1]["index"]["status"] == 201
    status, body = error_of(lambda: es.delete(index=INDEX, id=ON_BROKEN[1 % len(ON_BROKEN)],
                                              timeout="200ms"))
    assert status == 503 and body["error"]["type"] == "unavailable_shards_exception"

    # broadcasts count the unassigned shard in total only
    r = es.indices.refresh(index=INDEX).body
    assert (r["_shards"]["total"], r["_shards"]["successful"]) == (SHARDS, SHARDS - 1)
    assert es.count(index=INDEX).body["count"] == len(HEALTHY) + 1

    # the explanation names the broken shard
    r = es.cluster.allocation_explain().body
    assert (r["index"], r["shard"], r["current_state"]) == (INDEX, BROKEN, "unassigned")
    healthy_shard = next(s for s in range(SHARDS) if s != BROKEN)
    r = es.cluster.allocation_explain(index=INDEX, shard=healthy_shard, primary=True).body
    assert r["current_state"] == "started"


def test_the_shard_comes_back(partial_node):
    es, meta, saved = partial_node
    with open(meta, "wb") as f:
        f.write(saved)
    es.cluster.reroute(retry_failed=True)
    assert wait_until(lambda: es.cluster.health(index=INDEX).body["status"] == "green", 30)
    es.indices.refresh(index=INDEX)
    r = es.search(index=INDEX, size=N + 10, track_total_hits=True).body
    assert r["_shards"]["failed"] == 0
    ids = sorted(h["_id"] for h in r["hits"]["hits"])
    assert len(ids) == N + 1 and set(IDS) <= set(ids)
    assert es.get(index=INDEX, id=ON_BROKEN[0]).body["_source"] == {"n": int(ON_BROKEN[0])}
    es.index(index=INDEX, id=ON_BROKEN[0], document={"n": 0}, refresh=True)
    assert es.get(index=INDEX, id=ON_BROKEN[0]).body["_source"] == {"n": 0}

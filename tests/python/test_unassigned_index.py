"""An index whose shards cannot open is red, not gone (issue 11).

The test makes a real fault: it stops its own `lode serve`, overwrites the commit point
(`meta.json`) of one shard of some indices with bytes that do not parse, and restarts the node
on the same data. Elasticsearch keeps such an index in the cluster state with its primaries
unassigned (`ALLOCATION_FAILED`), and so must Lode: health red, `_cat` shows it, searches,
gets and writes answer ES's 503 errors, deleting it works, and once the file is put back the
index comes back without a restart, by the automatic retries or by
`POST _cluster/reroute?retry_failed=true` once `index.allocation.max_retries` is exhausted.

This module starts its own `lode serve` (the session server is not restarted).
"""

import os
import time

import pytest

from conftest import LodeServer, client, error_of, lode_binary, wait_until

# name -> (shards, docs, max_retries)
INDICES = {
    "red-auto": (2, 30, None),
    "red-stuck": (1, 12, 1),
    "red-doomed": (1, 5, None),
    "healthy": (3, 21, None),
}
BROKEN = ["red-auto", "red-stuck", "red-doomed"]


def health(es, **params):
    return es.cluster.health(**params).body


@pytest.fixture(scope="module")
def red_node(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("unassigned"))
    server = LodeServer(lode_binary(), base)
    server.start()
    es = client(server.url)
    uuids = {}
    for name, (shards, docs, retries) in INDICES.items():
        settings = {"number_of_shards": shards, "number_of_replicas": 0}
        if retries is not None:
            settings["index.allocation.max_retries"] = retries
        es.indices.create(index=name, settings=settings)
        ops = []
        for i in range(docs):
            ops.append({"index": {"_index": name, "_id": str(i)}})
            ops.append({"n": i, "name": name})
        es.bulk(operations=ops, refresh=True)
        uuids[name] = es.indices.get_settings(index=name).body[name]["settings"]["index"]["uuid"]
    es.indices.flush(index="_all")
    data_dir = server.data_dir
    server.stop()  # SIGKILL: the flush above made every document part of the commit

    saved = {}
    for name in BROKEN:
        # every shard of the index (one broken shard among healthy ones:
        # test_shard_store_failures.py)
        saved[name] = []
        for shard in range(INDICES[name][0]):
            meta = os.path.join(data_dir, "indices", uuids[name], str(shard), "index",
                                "meta.json")
            with open(meta, "rb") as f:
                saved[name].append((meta, f.read()))
            with open(meta, "wb") as f:
                f.write(b"{this is not a commit point")

    # The next generation's data directory is this one.
    os.symlink(data_dir, os.path.join(base, "data-%d" % (server.generation + 1)))
    server.start()
    try:
        yield server, client(server.url), saved
    finally:
        server.stop()


def test_red_then_back(red_node):
    server, es, saved = red_node
    broken_shards = sum(INDICES[n][0] for n in BROKEN)
    healthy_shards = INDICES["healthy"][0]

    # --- the indices are there, red
    h = health(es)
    assert h["status"] == "red"
    assert h["active_primary_shards"] == healthy_shards
    assert h["active_shards"] == healthy_shards
    assert h["unassigned_shards"] == broken_shards
    assert h["unassigned_primary_shards"] == broken_shards
    h = health(es, level="indices")
    for name in BROKEN:
        assert h["indices"][name]["status"] == "red"
        assert h["indices"][name]["active_primary_shards"] == 0
        assert h["indices"][name]["unassigned_primary_shards"] == INDICES[name][0]
    assert h["indices"]["healthy"]["status"] == "green"
    assert health(es, index="healthy")["status"] == "green"
    # wait_for_status=green on a red index times out with 408, status red
    status, body = error_of(lambda: es.cluster.health(index="red-auto",
                                                      wait_for_status="green", timeout="200ms"))
    assert status == 408 and body["status"] == "red" and body["timed_out"] is True

    rows = {r["index"]: r for r in es.cat.indices(format="json").body}
    for name in BROKEN:
        assert rows[name]["health"] == "red" and rows[name]["status"] == "open"
        assert rows[name]["docs.count"] is None
    assert rows["healthy"]["health"] == "green"
    assert rows["healthy"]["docs.count"] == str(INDICES["healthy"][1])

    shards = es.cat.shards(index="red-auto", format="json",
                           h="index,shard,prirep,state,unassigned.reason,unassigned.details").body
    assert sorted(r["shard"] for r in shards) == [str(i) for i in range(INDICES["red-auto"][0])]
    for r in shards:
        assert (r["prirep"], r["state"], r["unassigned.reason"]) == ("p", "UNASSIGNED",
                                                                     "ALLOCATION_FAILED")
        assert "red-auto" in r["unassigned.details"]

    # --- broadcast and stats APIs answer, the red shards counted in total only
    all_shards = sum(n for n, _, _ in INDICES.values())
    r = es.indices.refresh().body
    assert r["_shards"]["total"] == all_shards and r["_shards"]["successful"] == healthy_shards
    r = es.indices.stats().body
    assert r["_shards"]["successful"] == healthy_shards
    assert r["indices"]["red-auto"]["health"] == "red"
    assert r["indices"]["healthy"]["primaries"]["docs"]["count"] == INDICES["healthy"][1]
    assert es.indices.segments().body["_shards"]["successful"] == healthy_shards
    assert {r["index"] for r in es.cat.segments(format="json").body} == {"healthy"}
    assert es.indices.get_mapping(index="red-auto").body["red-auto"]["mappings"]["properties"]
    assert es.cat.count(format="json").body[0]["count"] == str(INDICES["healthy"][1])
    status, body = error_of(lambda: es.cat.count(index="red-stuck"))
    assert status == 503 and body["error"]["type"] == "search_phase_execution_exception"

    # --- searches
    status, body = error_of(lambda: es.search(index="red-stuck", query={"match_all": {}}))
    assert status == 503
    err = body["error"]
    assert (err["type"], err["reason"]) == ("search_phase_execution_exception", "all shards failed")
    assert err["root_cause"] == [{"type": "no_shard_available_action_exception", "reason": None}]
    assert err["failed_shards"][0]["index"] == "red-stuck"
    assert err["failed_shards"][0]["reason"]["type"] == "no_shard_available_action_exception"
    status, body = error_of(lambda: es.count(index="red-stuck"))
    assert status == 503

    # with a healthy index alongside: partial results, the red shards counted as failed
    r = es.search(index="red-stuck,healthy", size=100, track_total_hits=True).body
    assert r["hits"]["total"]["value"] == INDICES["healthy"][1]
    assert {h["_index"] for h in r["hits"]["hits"]} == {"healthy"}
    red_stuck_shards = INDICES["red-stuck"][0]
    assert r["_shards"]["total"] == healthy_shards + red_stuck_shards
    assert r["_shards"]["successful"] == healthy_shards
    assert r["_shards"]["failed"] == red_stuck_shards
    assert r["_shards"]["failures"][0]["index"] == "red-stuck"
    status, body = error_of(lambda: es.search(index="red-stuck,healthy",
                                              allow_partial_search_results=False))
    assert status == 503
    assert body["error"]["reason"].startswith("Search rejected due to missing shards [[red-stuck][0]]")

    # --- get and writes
    status, body = error_of(lambda: es.get(index="red-stuck", id="1"))
    assert status == 503
    assert body["error"]["type"] == "no_shard_available_action_exception"
    assert body["error"]["reason"] == "No shard available for [get [red-stuck][1]: routing [null]]"
    status, body = error_of(lambda: es.index(index="red-stuck", id="new", document={"n": -1},
                                             timeout="300ms"))
    assert status == 503
    assert body["error"]["type"] == "unavailable_shards_exception"
    assert body["error"]["reason"].startswith("[red-stuck][0] primary shard is not active Timeout: [300ms]")
    r = es.bulk(operations=[{"index": {"_index": "red-stuck", "_id": "b1"}}, {"n": 1},
                            {"index": {"_index": "healthy", "_id": "b2"}}, {"n": 2}],
                timeout="300ms").body
    assert r["errors"] is True
    assert r["items"][0]["index"]["status"] == 503
    assert r["items"][0]["index"]["error"]["type"] == "unavailable_shards_exception"
    assert r["items"][1]["index"]["status"] == 201

    # --- delete works on a red index
    assert es.indices.delete(index="red-doomed").body == {"acknowledged": True}
    assert not es.indices.exists(index="red-doomed")

    # --- the fault goes away: the automatic retries bring red-auto back
    for name in ("red-auto", "red-stuck"):
        for meta, content in saved[name]:
            with open(meta, "wb") as f:
                f.write(content)
    assert wait_until(lambda: health(es, index="red-auto")["status"] == "green", 30), \
        "red-auto did not come back by the automatic retries"
    assert es.count(index="red-auto").body["count"] == INDICES["red-auto"][1]
    assert es.get(index="red-auto", id="3").body["_source"] == {"n": 3, "name": "red-auto"}

    # red-stuck has index.allocation.max_retries 1: no automatic retry, reroute brings it back
    time.sleep(1)
    assert health(es, index="red-stuck")["status"] == "red"
    r = es.cluster.reroute(retry_failed=True, metric="none").body
    assert r == {"acknowledged": True}
    assert health(es, index="red-stuck")["status"] == "green"
    assert es.count(index="red-stuck").body["count"] == INDICES["red-stuck"][1]
    es.index(index="red-stuck", id="new", document={"n": -1}, refresh=True)
    assert es.count(index="red-stuck").body["count"] == INDICES["red-stuck"][1] + 1
    assert health(es)["status"] == "green"


def test_reroute_refuses_commands(red_node):
    _, es, _ = red_node
    status, body = error_of(lambda: es.cluster.reroute(
        commands=[{"cancel": {"index": "healthy", "shard": 0, "node": "lode"}}]))
    assert status == 400
    assert body["error"]["type"] == "illegal_argument_exception"

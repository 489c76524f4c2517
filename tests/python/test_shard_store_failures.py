"""A shard whose commit point is gone or corrupt loses nothing (issue 11).

The test stops its own `lode serve`, deletes the commit point (`meta.json`) of one index's shard
and corrupts another's, while their segment files and translog stay, and restarts the node on
the same data. Elasticsearch never makes such a store a new, empty index: the shard fails to
recover (`StoreRecovery`: "shard allocated for local recovery (post api), should exist, but
doesn't", caused by Lucene's "no segments* file found"; a corrupt commit is a
`CorruptIndexException`), stays unassigned and its files are left as they are. Once the commit
point is put back, `POST _cluster/reroute?retry_failed=true` brings every document back, those
only in the translog included.

This module starts its own `lode serve` (the session server is not restarted).
"""

import hashlib
import os

import pytest
from elasticsearch import Elasticsearch

from conftest import LodeServer, client, error_of, lode_binary, wait_until

FLUSHED = 25  # documents in the commit
TRANSLOG = 7  # documents indexed after the flush: in the translog only
BROKEN = ["no-commit", "bad-commit"]
# A fault that is not the store's: the translog directory is a file. "io-stuck" has no retry
# left after the first failure, "io-retrying" the default 5.
IO_FAULT = ["io-stuck", "io-retrying"]
INDICES = BROKEN + IO_FAULT + ["healthy"]


def digest_tree(root):
    """Every file under root (relative path -> sha256 of its bytes)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def source(name, i):
    return {"n": i, "name": name, "text": "document %d of %s" % (i, name)}


@pytest.fixture(scope="module")
def broken_node(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("store_failures"))
    server = LodeServer(lode_binary(), base)
    server.start()
    es = client(server.url)
    uuids = {}
    for name in INDICES:
        # max_retries 1: no automatic retry, so the test decides when the shard opens again
        settings = {"number_of_shards": 1, "number_of_replicas": 0}
        if name != "io-retrying":
            settings["index.allocation.max_retries"] = 1
        es.indices.create(index=name, settings=settings)
        ops = []
        for i in range(FLUSHED):
            ops += [{"index": {"_index": name, "_id": str(i)}}, source(name, i)]
        es.bulk(operations=ops, refresh=True)
        uuids[name] = es.indices.get_settings(index=name).body[name]["settings"]["index"]["uuid"]
    es.indices.flush(index="_all")
    for name in INDICES:
        ops = []
        for i in range(FLUSHED, FLUSHED + TRANSLOG):
            ops += [{"index": {"_index": name, "_id": str(i)}}, source(name, i)]
        es.bulk(operations=ops)  # request durability: in the fsynced translog, not committed
    data_dir = server.data_dir
    server.stop()  # SIGKILL

    shard_dirs = {n: os.path.join(data_dir, "indices", uuids[n], "0") for n in INDICES}
    metas = {n: os.path.join(shard_dirs[n], "index", "meta.json") for n in BROKEN}
    saved = {}
    for name in BROKEN:
        with open(metas[name], "rb") as f:
            saved[name] = f.read()
    os.remove(metas["no-commit"])
    with open(metas["bad-commit"], "wb") as f:
        f.write(b"{this is not a commit point")
    for name in IO_FAULT:
        translog = os.path.join(shard_dirs[name], "translog")
        os.rename(translog, translog + ".moved")
        with open(translog, "wb") as f:
            f.write(b"not a directory")
    before = {n: digest_tree(shard_dirs[n]) for n in BROKEN}
    assert any(p.startswith("translog") for p in before["no-commit"])
    assert len([p for p in before["no-commit"] if p.startswith("index")]) > 1

    os.symlink(data_dir, os.path.join(base, "data-%d" % (server.generation + 1)))
    server.start()
    try:
        yield {"server": server, "es": client(server.url), "saved": saved, "metas": metas,
               "before": before, "shard_dirs": shard_dirs}
    finally:
        server.stop()


def test_store_without_commit_stays_unassigned_and_untouched(broken_node):
    es = broken_node["es"]

    h = es.cluster.health(level="indices").body
    assert h["status"] == "red"
    for name in BROKEN:
        assert h["indices"][name]["status"] == "red"
        assert h["indices"][name]["unassigned_primary_shards"] == 1
    assert h["indices"]["healthy"]["status"] == "green"

    rows = es.cat.shards(index=",".join(BROKEN), format="json",
                         h="index,shard,prirep,state,unassigned.reason,unassigned.details").body
    by_index = {r["index"]: r for r in rows}
    for name in BROKEN:
        assert (by_index[name]["state"], by_index[name]["unassigned.reason"]) == \
            ("UNASSIGNED", "ALLOCATION_FAILED")
    details = by_index["no-commit"]["unassigned.details"]
    assert "index_shard_recovery_exception" in details
    assert "should exist, but doesn't" in details
    assert "corrupt_index_exception" in by_index["bad-commit"]["unassigned.details"]

    # reads and writes answer ES's errors
    for name in BROKEN:
        status, body = error_of(lambda: es.search(index=name))
        assert status == 503 and body["error"]["type"] == "search_phase_execution_exception"
        status, body = error_of(lambda: es.get(index=name, id="1"))
        assert status == 503
        assert body["error"]["type"] == "no_shard_available_action_exception"
        status, body = error_of(lambda: es.index(index=name, id="x", document={"n": 0},
                                                 timeout="200ms"))
        assert status == 503 and body["error"]["type"] == "unavailable_shards_exception"

    # the rest of the node works
    assert es.count(index="healthy").body["count"] == FLUSHED + TRANSLOG
    es.index(index="healthy", id="more", document={"n": -1}, refresh=True)
    assert es.count(index="healthy").body["count"] == FLUSHED + TRANSLOG + 1

    # a retry fails the same way and still touches nothing
    es.cluster.reroute(retry_failed=True)
    assert es.cluster.health(index=",".join(BROKEN)).body["status"] == "red"
    for name in BROKEN:
        assert digest_tree(broken_node["shard_dirs"][name]) == broken_node["before"][name], name


def explain(es, **body):
    return es.perform_request("POST", "/_cluster/allocation/explain",
                              headers={"content-type": "application/json",
                                       "accept": "application/json"},
                              body=body or None).body


def explain_error(es, path="/_cluster/allocation/explain", body=None):
    return error_of(lambda: es.perform_request(
        "POST", path, headers={"content-type": "application/json", "accept": "application/json"},
        body=body))


def test_allocation_explain_of_the_broken_shards(broken_node):
    es = broken_node["es"]
    node_id = next(iter(es.nodes.info().body["nodes"]))

    # no shard named: the first unassigned primary, with ES's note
    r = es.cluster.allocation_explain().body
    assert r["note"].startswith("No shard was specified in the explain API request")
    assert r["index"] in BROKEN and (r["shard"], r["primary"]) == (0, True)
    assert r["current_state"] == "unassigned"

    for name, cause in (("no-commit", "index_shard_recovery_exception"),
                        ("bad-commit", "corrupt_index_exception")):
        r = es.cluster.allocation_explain(index=name, shard=0, primary=True).body
        assert "note" not in r
        assert (r["index"], r["shard"], r["primary"], r["current_state"]) == \
            (name, 0, True, "unassigned")
        info = r["unassigned_info"]
        assert info["reason"] == "ALLOCATION_FAILED"
        assert info["failed_allocation_attempts"] >= 1
        assert info["last_allocation_status"] == "no_valid_shard_copy"
        assert cause in info["details"]
        assert info["at"].endswith("Z")
        assert r["can_allocate"] == "no_valid_shard_copy"
        assert r["allocate_explanation"].startswith(
            "Elasticsearch can't allocate this shard because all the copies of its data")
        [d] = r["node_allocation_decisions"]
        assert d["node_id"] == node_id and d["node_decision"] == "no"
        assert d["store"]["in_sync"] is True
        assert d["store"]["store_exception"]["type"] == cause

    # a started primary
    r = explain(es, index="healthy", shard=0, primary=True)
    assert r["current_state"] == "started"
    assert "unassigned_info" not in r
    assert r["current_node"]["id"] == node_id
    assert r["can_remain_on_current_node"] == "yes"
    assert r["can_rebalance_to_other_node"] == "no"
    assert "cluster_info" not in r

    # include_disk_info: the node's disk and the started shards' sizes
    r = es.cluster.allocation_explain(index="healthy", shard=0, primary=True,
                                      include_disk_info=True).body
    disk = r["cluster_info"]["nodes"][node_id]["least_available"]
    assert disk["total_bytes"] >= disk["free_bytes"] > 0
    assert disk["used_bytes"] == disk["total_bytes"] - disk["free_bytes"]
    sizes = r["cluster_info"]["shard_sizes"]
    assert set(sizes) == {"[healthy][0][p]_bytes"}  # the broken shards have no size
    assert sizes["[healthy][0][p]_bytes"] > 0

    # errors
    status, body = explain_error(es, body={"index": "healthy"})
    assert status == 400
    assert body["error"]["type"] == "action_request_validation_exception"
    assert body["error"]["reason"] == \
        "Validation Failed: 1: shard must be specified;2: primary must be specified;"
    status, body = explain_error(es, body={"index": "nope", "shard": 0, "primary": True})
    assert status == 404 and body["error"]["type"] == "index_not_found_exception"
    status, body = explain_error(es, body={"index": "healthy", "shard": 3, "primary": True})
    assert status == 404 and body["error"]["type"] == "shard_not_found_exception"
    status, body = explain_error(es, body={"index": "healthy", "shard": 0, "primary": True,
                                           "bogus": 1})
    assert status == 400 and body["error"]["type"] == "x_content_parse_exception"
    status, body = explain_error(es, body={"index": "healthy", "shard": 0, "primary": False})
    assert status == 400 and body["error"]["type"] == "illegal_argument_exception"
    assert body["error"]["reason"].startswith("unable to find any shards to explain [")


def test_allocation_explain_of_failures_that_are_not_the_store(broken_node):
    es = broken_node["es"]
    node_id = next(iter(es.nodes.info().body["nodes"]))

    # no retry left: the max_retry decider says no
    r = es.cluster.allocation_explain(index="io-stuck", shard=0, primary=True).body
    assert r["current_state"] == "unassigned"
    assert r["unassigned_info"]["reason"] == "ALLOCATION_FAILED"
    assert r["unassigned_info"]["failed_allocation_attempts"] == 1
    assert r["unassigned_info"]["last_allocation_status"] == "no"
    assert r["can_allocate"] == "no"
    assert r["allocate_explanation"].startswith(
        "Elasticsearch isn't allowed to allocate this shard to any of the nodes in the cluster "
        "that hold an in-sync copy of its data.")
    [d] = r["node_allocation_decisions"]
    assert d["node_decision"] == "no" and d["store"] == {"in_sync": True}
    [dec] = d["deciders"]
    assert (dec["decider"], dec["decision"]) == ("max_retry", "NO")
    assert dec["explanation"].startswith(
        "shard has exceeded the maximum number of retries [1] on failed allocation attempts - "
        "manually call [POST /_cluster/reroute?retry_failed] to retry, "
        "[unassigned_info[[reason=ALLOCATION_FAILED], at[")

    # a retry is due: the shard can be allocated, here
    r = es.cluster.allocation_explain(index="io-retrying", shard=0, primary=True).body
    assert r["unassigned_info"]["last_allocation_status"] == "no_attempt"
    assert r["can_allocate"] == "yes"
    assert r["allocate_explanation"] == "Elasticsearch can allocate the shard."
    assert r["target_node"]["id"] == node_id
    [d] = r["node_allocation_decisions"]
    assert d["node_decision"] == "yes" and "deciders" not in d
    r = es.cluster.allocation_explain(index="io-retrying", shard=0, primary=True,
                                      include_yes_decisions=True).body
    [dec] = r["node_allocation_decisions"][0]["deciders"]
    attempts = r["unassigned_info"]["failed_allocation_attempts"]
    assert (dec["decider"], dec["decision"]) == ("max_retry", "YES")
    assert dec["explanation"] == \
        "shard has failed allocating [%d] times but [5] retries are allowed" % attempts


def test_commit_restored_brings_every_document_back(broken_node):
    es = broken_node["es"]
    for name in BROKEN:
        with open(broken_node["metas"][name], "wb") as f:
            f.write(broken_node["saved"][name])
    for name in IO_FAULT:
        translog = os.path.join(broken_node["shard_dirs"][name], "translog")
        os.remove(translog)
        os.rename(translog + ".moved", translog)
    assert es.cluster.reroute(retry_failed=True, metric="none").body == {"acknowledged": True}
    assert wait_until(lambda: es.cluster.health().body["status"] == "green", 30)
    for name in BROKEN + IO_FAULT:
        es.indices.refresh(index=name)
        assert es.count(index=name).body["count"] == FLUSHED + TRANSLOG
        hits = es.search(index=name, size=100).body["hits"]["hits"]
        assert sorted((h["_id"], h["_source"]["n"]) for h in hits) == \
            sorted((str(i), i) for i in range(FLUSHED + TRANSLOG))
        last = FLUSHED + TRANSLOG - 1
        assert es.get(index=name, id=str(last)).body["_source"] == source(name, last)


def test_allocation_explain_when_every_shard_is_assigned(broken_node):
    es = broken_node["es"]
    assert es.cluster.health().body["status"] == "green"
    status, body = explain_error(es)
    assert status == 400
    assert body["error"]["type"] == "illegal_argument_exception"
    assert body["error"]["reason"] == (
        "No shard was specified in the request which means the response should explain a "
        "randomly-chosen unassigned shard, but there are no unassigned shards in this cluster. "
        "To explain the allocation of an assigned shard you must specify the target shard in "
        "the request.")
    assert error_of(lambda: es.perform_request("GET", "/_cluster/allocation/explain",
                                               headers={"accept": "application/json"}))[0] == 400

    # a replica can never be allocated beside its primary on one node
    es.indices.create(index="with-replica", settings={"number_of_shards": 2,
                                                      "number_of_replicas": 1})
    r = es.cluster.allocation_explain().body
    assert (r["index"], r["primary"], r["current_state"]) == ("with-replica", False, "unassigned")
    assert r["unassigned_info"]["reason"] == "INDEX_CREATED"
    assert r["can_allocate"] == "no"
    [d] = r["node_allocation_decisions"]
    assert d["node_decision"] == "no"
    assert [x["decider"] for x in d["deciders"]] == ["same_shard"]
    assert d["deciders"][0]["decision"] == "NO"
    r = es.cluster.allocation_explain(index="with-replica", shard=1, primary=True).body
    assert r["current_state"] == "started"

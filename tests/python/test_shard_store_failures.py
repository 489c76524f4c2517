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
import time

import pytest
from elasticsearch import ApiError, Elasticsearch

from conftest import LodeServer, lode_binary

FLUSHED = 25  # documents in the commit
TRANSLOG = 7  # documents indexed after the flush: in the translog only
BROKEN = ["no-commit", "bad-commit"]
INDICES = BROKEN + ["healthy"]


def client(url):
    return Elasticsearch(url, request_timeout=60, max_retries=0, retry_on_status=())


def error_of(fn):
    with pytest.raises(ApiError) as e:
        fn()
    return e.value.meta.status, e.value.body


def wait_until(check, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


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
        es.indices.create(index=name, settings={"number_of_shards": 1, "number_of_replicas": 0,
                                                "index.allocation.max_retries": 1})
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


def test_commit_restored_brings_every_document_back(broken_node):
    es = broken_node["es"]
    for name in BROKEN:
        with open(broken_node["metas"][name], "wb") as f:
            f.write(broken_node["saved"][name])
    assert es.cluster.reroute(retry_failed=True, metric="none").body == {"acknowledged": True}
    assert wait_until(lambda: es.cluster.health().body["status"] == "green", 30)
    for name in BROKEN:
        es.indices.refresh(index=name)
        assert es.count(index=name).body["count"] == FLUSHED + TRANSLOG
        hits = es.search(index=name, size=100).body["hits"]["hits"]
        assert sorted((h["_id"], h["_source"]["n"]) for h in hits) == \
            sorted((str(i), i) for i in range(FLUSHED + TRANSLOG))
        last = FLUSHED + TRANSLOG - 1
        assert es.get(index=name, id=str(last)).body["_source"] == source(name, last)

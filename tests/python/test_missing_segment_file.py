"""A commit point naming a segment file that is gone loses nothing (issue 11).

The test stops its own `lode serve`, deletes one file of a committed segment (its term
dictionary's postings, `.idx`) while `meta.json` still names the segment, and restarts the node on
the same data. As Elasticsearch does when Lucene cannot open a committed segment, the shard
fails to recover and stays unassigned, the index is red, reads and writes answer 503, and the
store is left as it is (never recreated empty, never partly opened); with the file put back,
`POST _cluster/reroute?retry_failed=true` brings every document back.

This module starts its own `lode serve` (the session server is not restarted).
"""

import os

from conftest import LodeServer, client, error_of, lode_binary, wait_until
from test_shard_store_failures import digest_tree

DOCS = 30


def test_missing_segment_file_keeps_the_shard_unassigned_and_the_store_untouched(tmp_path):
    base = str(tmp_path)
    server = LodeServer(lode_binary(), base)
    server.start()
    try:
        es = client(server.url)
        es.indices.create(index="seg", settings={"number_of_shards": 1, "number_of_replicas": 0,
                                                 "index.allocation.max_retries": 1})
        for batch in range(3):  # three refreshes: three committed segments
            ops = []
            for i in range(batch * 10, batch * 10 + 10):
                ops += [{"index": {"_index": "seg", "_id": str(i)}}, {"n": i}]
            es.bulk(operations=ops, refresh=True)
        es.indices.flush(index="seg")
        uuid = es.indices.get_settings(index="seg").body["seg"]["settings"]["index"]["uuid"]
        es.indices.create(index="other", settings={"number_of_shards": 1, "number_of_replicas": 0})
        es.index(index="other", id="1", document={"n": 1}, refresh=True)
        es.indices.flush(index="other")
        data_dir = server.data_dir
        server.stop()

        shard = os.path.join(data_dir, "indices", uuid, "0")
        index_dir = os.path.join(shard, "index")
        victim = sorted(f for f in os.listdir(index_dir) if f.endswith(".idx"))[0]
        with open(os.path.join(index_dir, victim), "rb") as f:
            saved = f.read()
        os.remove(os.path.join(index_dir, victim))
        before = digest_tree(shard)

        os.symlink(data_dir, os.path.join(base, "data-%d" % (server.generation + 1)))
        server.start()
        es = client(server.url)
        h = es.cluster.health(level="indices").body
        assert h["indices"]["seg"]["status"] == "red"
        assert h["indices"]["seg"]["unassigned_primary_shards"] == 1
        assert h["indices"]["other"]["status"] == "green"
        status, body = error_of(lambda: es.search(index="seg"))
        assert status == 503 and body["error"]["type"] == "search_phase_execution_exception"
        status, body = error_of(lambda: es.get(index="seg", id="1"))
        assert status == 503 and body["error"]["type"] == "no_shard_available_action_exception"
        assert es.count(index="other").body["count"] == 1
        es.cluster.reroute(retry_failed=True)
        assert es.cluster.health(index="seg").body["status"] == "red"
        assert digest_tree(shard) == before

        with open(os.path.join(index_dir, victim), "wb") as f:
            f.write(saved)
        es.cluster.reroute(retry_failed=True, metric="none")
        assert wait_until(lambda: es.cluster.health(index="seg").body["status"] == "green", 30)
        es.indices.refresh(index="seg")
        hits = es.search(index="seg", size=100).body["hits"]["hits"]
        assert sorted(int(h["_id"]) for h in hits) == list(range(DOCS))
    finally:
        server.stop()

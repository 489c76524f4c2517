"""Thread pools and back-pressure: a node started with a one-slot, one-queue search pool
refuses a flood of concurrent slow searches with ES's 429 es_rejected_execution_exception,
answers every other one correctly, keeps accepting writes, and reports the rejections in
`_nodes/stats/thread_pool` and `_cat/thread_pool`.

This module starts its own `lode serve` (the session server keeps the default pools).
"""

import collections
import subprocess
import threading

import pytest
from elasticsearch import ApiError, Elasticsearch

from conftest import LodeServer, lode_binary

NODE = "pools-node"
N_DOCS = 4000
KEYS = 37
THREADS = 12
MAX_ROUNDS = 30


def doc(i):
    return {"k": "k%02d" % (i % KEYS), "n": i}


@pytest.fixture(scope="module")
def pools_server(tmp_path_factory):
    server = LodeServer(lode_binary(), str(tmp_path_factory.mktemp("pools")), settings=[
        "node.name=" + NODE,
        "thread_pool.search.size=1",
        "thread_pool.search.queue_size=1",
    ])
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def client(pools_server):
    return Elasticsearch(pools_server.url, request_timeout=120, max_retries=0,
                         retry_on_status=(), connections_per_node=THREADS + 8)


@pytest.fixture(scope="module")
def loaded(client):
    client.indices.create(index="tp", mappings={"properties": {
        "k": {"type": "keyword"}, "n": {"type": "long"}}})
    ops = []
    for i in range(N_DOCS):
        ops.append({"index": {"_index": "tp", "_id": str(i)}})
        ops.append(doc(i))
    r = client.bulk(operations=ops, refresh=True)
    assert not r["errors"]
    return [doc(i) for i in range(N_DOCS)]


# A slow search: a script score over every document and a terms aggregation with a sub
# aggregation, whose answers the test computes from the documents it indexed.
SLOW = {
    "size": 3,
    "query": {"script_score": {"query": {"match_all": {}},
                               "script": {"source": "doc['n'].value * 2.0 + 1.0"}}},
    "aggs": {"keys": {"terms": {"field": "k", "size": KEYS, "order": {"_key": "asc"}},
                      "aggs": {"top": {"max": {"field": "n"}}}}},
}


def expected(docs):
    counts = collections.Counter(d["k"] for d in docs)
    maxes = {}
    for d in docs:
        maxes[d["k"]] = max(maxes.get(d["k"], -1), d["n"])
    buckets = [(k, counts[k], maxes[k]) for k in sorted(counts)]
    top = sorted(docs, key=lambda d: -(d["n"] * 2.0 + 1.0))[:3]
    return buckets, [str(d["n"]) for d in top], [d["n"] * 2.0 + 1.0 for d in top]


def search_stats(client):
    nodes = client.nodes.stats(metric="thread_pool")["nodes"]
    assert len(nodes) == 1
    return next(iter(nodes.values()))["thread_pool"]


def test_a_full_search_queue_rejects_with_429_and_writes_go_on(client, loaded):
    want_buckets, want_ids, want_scores = expected(loaded)
    before = search_stats(client)["search"]["rejected"]
    ok, rejected, bad = [], [], []
    writes = []

    def one_search(barrier):
        barrier.wait()
        try:
            r = client.search(index="tp", **SLOW)
            ok.append(r.body)
        except ApiError as e:
            if e.meta.status == 429:
                rejected.append(e.body)
            else:
                bad.append((e.meta.status, e.body))
        except Exception as e:  # noqa: BLE001 - a hang or a dropped connection fails below
            bad.append(("exception", repr(e)))

    def one_write(barrier, i):
        barrier.wait()
        r = client.index(index="tp-writes", id=str(i), document={"i": i})
        writes.append(r.meta.status)

    rounds = 0
    next_write = 0
    while not rejected and rounds < MAX_ROUNDS:
        rounds += 1
        barrier = threading.Barrier(THREADS + 2)
        threads = [threading.Thread(target=one_search, args=(barrier,)) for _ in range(THREADS)]
        threads += [threading.Thread(target=one_write, args=(barrier, next_write + j)) for j in range(2)]
        next_write += 2
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    assert bad == []
    assert rejected, "no search was rejected in %d rounds of %d" % (rounds, THREADS)
    assert len(ok) + len(rejected) == rounds * THREADS
    assert writes == [201] * next_write

    for body in rejected:
        assert body["status"] == 429
        err = body["error"]
        assert err["type"] == "es_rejected_execution_exception"
        assert err["root_cause"][0]["type"] == "es_rejected_execution_exception"
        reason = err["reason"]
        assert reason.startswith("rejected execution of ")
        assert ("on EsThreadPoolExecutor[name = %s/search, queue capacity = 1, " % NODE) in reason

    for r in ok:
        got = [(b["key"], b["doc_count"], b["top"]["value"])
               for b in r["aggregations"]["keys"]["buckets"]]
        assert got == [(k, c, float(m)) for k, c, m in want_buckets]
        assert [h["_id"] for h in r["hits"]["hits"]] == want_ids
        assert [h["_score"] for h in r["hits"]["hits"]] == pytest.approx(want_scores)

    stats = search_stats(client)
    search = stats["search"]
    assert search["rejected"] - before == len(rejected)
    assert search["queue"] == 0 and search["active"] == 0
    assert search["threads"] == 1 and search["largest"] == 1
    assert stats["write"]["rejected"] == 0
    assert stats["write"]["completed"] >= next_write

    # every write landed
    client.indices.refresh(index="tp-writes")
    assert client.count(index="tp-writes")["count"] == next_write

    rows = client.cat.thread_pool(format="json").body
    by_name = {r["name"]: r for r in rows}
    for name in ("search", "write", "get", "management", "refresh", "flush", "force_merge"):
        assert name in by_name
        assert set(by_name[name]) == {"node_name", "name", "active", "queue", "rejected"}
        assert by_name[name]["node_name"] == NODE
    assert [r["name"] for r in rows] == sorted(by_name)
    assert int(by_name["search"]["rejected"]) == search["rejected"]

    rows = client.cat.thread_pool(thread_pool_patterns="search,wr*", format="json",
                                  h="name,type,size,queue_size").body
    assert rows == [
        {"name": "search", "type": "fixed", "size": "1", "queue_size": "1"},
        {"name": "write", "type": "fixed", "size": rows[1]["size"], "queue_size": "10000"},
    ]


def test_pool_info_reports_the_configured_sizes(client):
    nodes = client.nodes.info(metric="thread_pool")["nodes"]
    info = next(iter(nodes.values()))["thread_pool"]
    assert info["search"] == {"type": "fixed", "size": 1, "queue_size": 1}
    assert info["management"]["type"] == "scaling"
    assert info["management"]["queue_size"] == -1
    assert info["write"]["queue_size"] == 10000


def test_pool_sizes_are_not_dynamic_cluster_settings(client):
    for scope in ("persistent", "transient"):
        with pytest.raises(ApiError) as ei:
            client.cluster.put_settings(**{scope: {"thread_pool.search.size": 4}})
        assert ei.value.meta.status == 400
        err = ei.value.body["error"]
        assert err["type"] == "illegal_argument_exception"
        assert err["reason"] == (
            "%s setting [thread_pool.search.size], not dynamically updateable" % scope)


def test_bad_pool_settings_stop_the_node(tmp_path):
    for setting, message in [
        ("thread_pool.search.size=0",
         "Failed to parse value [0] for setting [thread_pool.search.size] must be >= 1"),
        ("thread_pool.search.sise=1", "unknown setting [thread_pool.search.sise]"),
        ("thread_pool.management.queue_size=5",
         "unknown setting [thread_pool.management.queue_size]"),
    ]:
        p = subprocess.run([lode_binary(), "serve", "-E", "http.port=0",
                            "-E", "path.data=%s" % tmp_path, "-E", setting],
                           capture_output=True, timeout=60)
        assert p.returncode != 0
        assert message in p.stderr.decode()

"""Root info, cluster health and the _cat APIs (format=json)."""

import re

import pytest


def test_info(es):
    r = es.info().body
    assert r["version"]["number"].startswith("8.")
    assert r["version"]["build_flavor"] == "default"
    assert r["tagline"] == "You Know, for Search"
    assert {"name", "cluster_name", "cluster_uuid"} <= set(r)


def test_ping(es):
    assert es.ping() is True


def test_cluster_health(es, accounts):
    r = es.cluster.health().body
    assert r["status"] in ("green", "yellow")
    assert r["timed_out"] is False
    assert r["number_of_nodes"] == 1 and r["number_of_data_nodes"] == 1
    assert r["active_primary_shards"] >= 1
    assert r["unassigned_shards"] >= 0
    for k in ("cluster_name", "active_shards", "relocating_shards", "initializing_shards",
              "delayed_unassigned_shards", "number_of_pending_tasks", "active_shards_percent_as_number"):
        assert k in r


def test_index_health_green_without_replicas(es, accounts):
    r = es.cluster.health(index="accounts", wait_for_status="green", timeout="5s").body
    assert r["status"] == "green"
    assert r["timed_out"] is False
    assert r["active_primary_shards"] == 1 and r["active_shards"] == 1
    assert r["unassigned_shards"] == 0


def test_index_health_level_indices(es, accounts):
    r = es.cluster.health(index="accounts", level="indices").body
    i = r["indices"]["accounts"]
    assert i["status"] == "green"
    assert i["number_of_shards"] == 1 and i["number_of_replicas"] == 0


def test_cat_indices(es, accounts, corpus):
    rows = es.cat.indices(index="accounts", format="json").body
    assert len(rows) == 1
    row = rows[0]
    assert row["index"] == "accounts"
    assert row["health"] == "green" and row["status"] == "open"
    assert row["pri"] == "1" and row["rep"] == "0"
    assert row["docs.count"] == str(corpus.n)
    assert row["docs.deleted"] == "0"
    assert isinstance(row["uuid"], str) and row["uuid"]
    assert re.fullmatch(r"[0-9.]+[kmgtp]?b", row["store.size"])
    assert re.fullmatch(r"[0-9.]+[kmgtp]?b", row["pri.store.size"])


def test_cat_indices_bytes_and_columns(es, accounts, corpus):
    rows = es.cat.indices(index="accounts", format="json", bytes="b", h="index,docs.count,store.size").body
    assert set(rows[0]) == {"index", "docs.count", "store.size"}
    assert rows[0]["store.size"].isdigit() and int(rows[0]["store.size"]) > 0


def test_cat_indices_text(es, accounts):
    txt = es.cat.indices(index="accounts", v=True, h="index,docs.count").body
    lines = txt.strip().splitlines()
    assert lines[0].split() == ["index", "docs.count"]
    assert lines[1].split()[0] == "accounts"


def test_cat_count(es, accounts, corpus):
    rows = es.cat.count(index="accounts", format="json").body
    assert len(rows) == 1
    assert rows[0]["count"] == str(corpus.n)
    assert rows[0]["epoch"].isdigit()
    assert re.fullmatch(r"\d\d:\d\d:\d\d", rows[0]["timestamp"])


def test_cat_health(es, accounts):
    rows = es.cat.health(format="json").body
    assert len(rows) == 1
    assert rows[0]["status"] in ("green", "yellow")
    assert rows[0]["node.total"] == "1"
    assert rows[0]["epoch"].isdigit()


def test_cat_shards(es, accounts, corpus):
    rows = es.cat.shards(index="accounts", format="json").body
    assert len(rows) == 1
    r = rows[0]
    assert r["index"] == "accounts" and r["shard"] == "0" and r["prirep"] == "p"
    assert r["state"] == "STARTED"
    assert r["docs"] == str(corpus.n)


def test_cat_missing_index(es):
    from elasticsearch import NotFoundError
    with pytest.raises(NotFoundError) as ei:
        es.cat.indices(index="no-such-index", format="json")
    assert ei.value.body["error"]["type"] == "index_not_found_exception"


def test_nodes_stats_jvm_section_tells_the_truth(es):
    r = es.nodes.stats(metric="jvm,process,os")
    (node,) = r["nodes"].values()
    jvm, proc = node["jvm"], node["process"]
    # No JVM: the "heap" is the process's resident memory, and no collector ever ran.
    assert jvm["mem"]["heap_used_in_bytes"] > 0
    assert jvm["mem"]["heap_used_in_bytes"] <= jvm["mem"]["heap_max_in_bytes"]
    assert jvm["mem"]["heap_max_in_bytes"] >= node["os"]["mem"]["total_in_bytes"] > 0
    assert abs(jvm["mem"]["heap_used_in_bytes"] - proc["mem"]["resident_in_bytes"]) < 64 << 20
    for c in ("young", "old"):
        assert jvm["gc"]["collectors"][c] == {"collection_count": 0, "collection_time_in_millis": 0}
    assert jvm["threads"]["count"] >= 1

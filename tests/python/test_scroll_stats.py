"""`search.scroll_current` and `search.open_contexts` in `_stats`, `_nodes/stats` and `_cat`:
the scroll contexts open now (one per shard a scroll searched), down when a scroll is cleared
or its keep-alive runs out."""

import time


def index_search(es, index):
    return es.indices.stats(index=index, metric="search")["indices"][index]["primaries"]["search"]


def test_open_scrolls_are_counted_per_shard(es):
    index = "scroll-stats"
    shards = 2
    es.indices.create(index=index, settings={"number_of_shards": shards})
    for i in range(20):
        es.index(index=index, id=str(i), document={"n": i})
    es.indices.refresh(index=index)
    try:
        assert index_search(es, index)["scroll_current"] == 0
        a = es.search(index=index, scroll="5m", size=3, query={"match_all": {}})
        b = es.search(index=index, scroll="5m", size=3, query={"match_all": {}})
        s = index_search(es, index)
        assert s["scroll_current"] == 2 * shards
        assert s["open_contexts"] == 2 * shards
        (node,) = es.nodes.stats(metric="indices", index_metric="search")["nodes"].values()
        assert node["indices"]["search"]["scroll_current"] >= 2 * shards
        cat = es.cat.indices(index=index, h="search.scroll_current", format="json")
        assert int(cat[0]["search.scroll_current"]) == 2 * shards

        es.clear_scroll(scroll_id=a["_scroll_id"])
        assert index_search(es, index)["scroll_current"] == shards

        # A short keep-alive: the context expires on its own (the reaper runs every second).
        es.clear_scroll(scroll_id=b["_scroll_id"])
        es.search(index=index, scroll="1s", size=3, query={"match_all": {}})
        assert index_search(es, index)["scroll_current"] == shards
        deadline = time.monotonic() + 30
        while index_search(es, index)["scroll_current"] != 0:
            assert time.monotonic() < deadline, "an expired scroll context stayed open"
            time.sleep(0.2)
    finally:
        es.indices.delete(index=index)

"""The shard request cache: repeated `size: 0` searches are answered from it, a refresh that
changes the data invalidates it, and `_stats.request_cache` counts hits and misses."""
from conftest import make_index


def cache_stats(es, index):
    return es.indices.stats(index=index, metric="request_cache")["_all"]["total"]["request_cache"]


def test_request_cache_hits_and_invalidation(es):
    name = make_index(es, "rc", {}, [(str(i), {"n": i, "k": "a" if i % 2 else "b"}) for i in range(50)])
    body = {"size": 0, "aggs": {"k": {"terms": {"field": "k.keyword"}}}}
    first = es.search(index=name, **body).body
    s1 = cache_stats(es, name)
    assert s1["miss_count"] == 1 and s1["hit_count"] == 0
    second = es.search(index=name, **body).body
    assert second["aggregations"] == first["aggregations"]
    s2 = cache_stats(es, name)
    assert s2["hit_count"] == 1 and s2["memory_size_in_bytes"] > 0
    # request_cache=false bypasses it; size > 0 is never cached.
    es.search(index=name, request_cache=False, **body)
    es.search(index=name, size=1, aggs=body["aggs"])
    assert cache_stats(es, name)["hit_count"] == 1
    # New data after a refresh: the cached answer must not come back.
    es.index(index=name, id="new", document={"n": 99, "k": "a"}, refresh=True)
    third = es.search(index=name, **body).body
    counts = {b["key"]: b["doc_count"] for b in third["aggregations"]["k"]["buckets"]}
    assert counts == {"a": 26, "b": 25}
    # Requests using `now` are never cached.
    before = cache_stats(es, name)
    es.search(index=name, size=0, query={"range": {"n": {"lte": 10}}}, aggs={"d": {"date_histogram": {"field": "n", "fixed_interval": "1d", "extended_bounds": {"min": "now-1d", "max": "now"}}}}, request_cache=True)
    after = cache_stats(es, name)
    assert (after["hit_count"], after["miss_count"]) == (before["hit_count"], before["miss_count"])
    es.indices.clear_cache(index=name, request=True)
    assert cache_stats(es, name)["memory_size_in_bytes"] == 0
    es.indices.delete(index=name)


def test_answers_survive_neither_a_reopened_reader_nor_a_refresh(es):
    """A new field grows the schema and reopens the shard's reader, whose searcher generations
    count from zero again: a cached answer from the old reader must never come back for the
    new one, whatever generation numbers they share."""
    name = make_index(es, "rc-reopen", {}, [("0", {"n": 1})])
    body = {"size": 0, "aggs": {"s": {"sum": {"field": "n"}}}}
    expected = 1
    for round_ in range(1, 6):
        assert es.search(index=name, request_cache=True, **body)["aggregations"]["s"]["value"] == expected
        # A document with a field never seen before (schema grows), then plain ones.
        es.index(index=name, id=f"new-{round_}", document={"n": round_ * 10, f"f{round_}": "x"}, refresh=True)
        expected += round_ * 10
        assert es.search(index=name, request_cache=True, **body)["aggregations"]["s"]["value"] == expected
        es.index(index=name, id=f"plain-{round_}", document={"n": 1}, refresh=True)
        expected += 1
    assert es.search(index=name, request_cache=True, **body)["aggregations"]["s"]["value"] == expected
    es.indices.delete(index=name)


def test_entries_of_refreshed_shards_leave_the_cache(es):
    """Answers computed on a shard's older reader can never be asked for again: they leave
    the cache (counted as evictions) when the shard is refreshed and searched, instead of
    filling it until the size bound pushes them out."""
    name = make_index(es, "rc-stale", {}, [(str(i), {"n": i}) for i in range(20)])
    for i in range(10):
        es.search(index=name, size=0, request_cache=True, aggs={"m": {"max": {"field": "n", "missing": i}}})
    full = cache_stats(es, name)
    assert full["memory_size_in_bytes"] > 0 and full["evictions"] == 0
    es.index(index=name, id="x", document={"n": 100}, refresh=True)
    es.search(index=name, size=0, request_cache=True, aggs={"m": {"max": {"field": "n"}}})
    after = cache_stats(es, name)
    assert after["evictions"] == 10
    assert after["memory_size_in_bytes"] < full["memory_size_in_bytes"] / 5
    es.indices.delete(index=name)


def test_msearch_items_use_the_cache(es):
    """Each `_msearch` item is a search of its own: a `size: 0` item is cached (the header's
    `request_cache` as the search's parameter), a sized one beside it is not."""
    name = make_index(es, "rc_ms", {}, [(str(i), {"n": i, "k": "a" if i % 3 else "b"})
                                        for i in range(30)])
    aggs = {"k": {"terms": {"field": "k.keyword"}}}
    want = {"a": 20, "b": 10}
    searches = [{"index": name}, {"size": 0, "aggs": aggs},
                {"index": name}, {"size": 5, "sort": ["n"], "aggs": aggs},
                {"index": name, "request_cache": False}, {"size": 0, "query": {"term": {"n": 3}}}]
    for round_ in range(3):
        r = es.msearch(searches=searches).body["responses"]
        for item in r[:2]:
            assert {b["key"]: b["doc_count"] for b in item["aggregations"]["k"]["buckets"]} == want
        assert [h["_source"]["n"] for h in r[1]["hits"]["hits"]] == [0, 1, 2, 3, 4]
        assert r[2]["hits"]["total"]["value"] == 1
        s = cache_stats(es, name)
        assert (s["miss_count"], s["hit_count"]) == (1, round_)
    assert es.search(index=name, size=0, aggs=aggs).body["aggregations"] == r[0]["aggregations"]
    es.indices.delete(index=name)

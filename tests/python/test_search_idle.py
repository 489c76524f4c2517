"""Search-idle shards (ES's `index.search.idle.after`): a shard not searched for that long skips
its scheduled refreshes while `index.refresh_interval` is left at its default, and the next
search refreshes it before searching, so searches never see less than they would without
idleness. The oracle is the documents each test wrote."""
import time

from conftest import error_of, wait_until


def shard_stats(es, name):
    return es.indices.stats(index=name, level="shards")["indices"][name]["shards"]["0"][0]


def refreshed_docs(es, name):
    # `_stats` reads the searched reader without counting as a search (as in ES).
    return es.indices.stats(index=name, metric="docs")["_all"]["primaries"]["docs"]["count"]


def create(es, name, settings):
    es.options(ignore_status=404).indices.delete(index=name)
    es.indices.create(index=name, settings={"number_of_shards": 1, **settings})


def write(es, name, ids, refresh=None):
    ops = []
    for i in ids:
        ops += [{"index": {"_index": name, "_id": str(i)}}, {"n": i}]
    kw = {} if refresh is None else {"refresh": refresh}
    assert es.bulk(operations=ops, **kw)["errors"] is False


def test_idle_shard_skips_scheduled_refreshes_and_the_next_search_sees_every_write(es):
    name = "search-idle-a"
    create(es, name, {"index.search.idle.after": "2s"})
    write(es, name, range(10), refresh=True)
    assert wait_until(lambda: shard_stats(es, name)["search_idle"], 10)
    write(es, name, range(10, 50))
    # Several scheduled refreshes (every second) pass while the shard is idle: none of them
    # makes the writes searchable.
    time.sleep(2.5)
    assert refreshed_docs(es, name) == 10
    st = shard_stats(es, name)
    assert st["search_idle"] is True and st["search_idle_time"] >= 2000
    # The search refreshes first: every write is seen.
    hits = es.search(index=name, size=100, query={"match_all": {}})["hits"]
    assert sorted(int(h["_id"]) for h in hits["hits"]) == list(range(50))
    assert shard_stats(es, name)["search_idle"] is False
    assert refreshed_docs(es, name) == 50
    es.indices.delete(index=name)


def test_count_and_by_query_refresh_an_idle_shard_first(es):
    name = "search-idle-b"
    create(es, name, {"index.search.idle.after": "1s"})
    write(es, name, range(5), refresh=True)
    assert wait_until(lambda: shard_stats(es, name)["search_idle"], 10)
    write(es, name, range(5, 30))
    time.sleep(1.5)
    assert es.count(index=name)["count"] == 30
    assert wait_until(lambda: shard_stats(es, name)["search_idle"], 10)
    write(es, name, range(30, 40))
    time.sleep(1.5)
    r = es.delete_by_query(index=name, query={"range": {"n": {"gte": 20}}}, refresh=True)
    assert r["deleted"] == 20
    assert es.count(index=name)["count"] == 20
    es.indices.delete(index=name)


def test_wait_for_refresh_on_an_idle_shard_still_returns(es):
    name = "search-idle-c"
    create(es, name, {"index.search.idle.after": "1s"})
    write(es, name, range(3), refresh=True)
    assert wait_until(lambda: shard_stats(es, name)["search_idle"], 10)
    # `refresh=wait_for` waits for a scheduled refresh: an idle shard must still run it (the
    # client gives up after 20 s; Lode's own fallback is 30 s).
    write(es.options(request_timeout=20), name, range(3, 6), refresh="wait_for")
    assert refreshed_docs(es, name) == 6
    es.indices.delete(index=name)


def test_an_explicit_refresh_interval_is_never_idle(es):
    name = "search-idle-d"
    create(es, name, {"index.search.idle.after": "1s", "index.refresh_interval": "1s"})
    write(es, name, range(4), refresh=True)
    time.sleep(1.5)
    write(es, name, range(4, 12))
    assert wait_until(lambda: refreshed_docs(es, name) == 12, 10)
    es.indices.delete(index=name)


def test_the_setting_is_dynamic_and_validated(es):
    name = "search-idle-e"
    create(es, name, {})
    s = es.indices.get_settings(index=name, include_defaults=True)[name]
    assert "search" not in s["settings"]["index"]
    status, body = error_of(
        lambda: es.indices.put_settings(index=name, settings={"index.search.idle.after": "-5s"})
    )
    assert status == 400 and body["error"]["type"] == "illegal_argument_exception"
    assert "index.search.idle.after" in body["error"]["reason"]
    status, body = error_of(
        lambda: es.indices.put_settings(index=name, settings={"index.search.idle.after": "soon"})
    )
    assert status == 400 and body["error"]["type"] == "illegal_argument_exception"
    # Made idle by a dynamic update: writes wait for the next search.
    es.indices.put_settings(index=name, settings={"index.search.idle.after": "0s"})
    write(es, name, range(7))
    time.sleep(1.5)
    assert refreshed_docs(es, name) == 0
    assert es.search(index=name, size=0, track_total_hits=True)["hits"]["total"]["value"] == 7
    # Back to a long idle time: the shard refreshes on schedule again.
    es.indices.put_settings(index=name, settings={"index.search.idle.after": "1h"})
    write(es, name, range(7, 9))
    assert wait_until(lambda: refreshed_docs(es, name) == 9, 10)
    es.indices.delete(index=name)


def test_a_get_counts_as_a_search_and_a_non_realtime_get_refreshes_an_idle_shard(es):
    name = "search-idle-f"
    create(es, name, {"index.search.idle.after": "2s"})
    write(es, name, range(2), refresh=True)
    assert wait_until(lambda: shard_stats(es, name)["search_idle"], 10)
    write(es, name, [7])
    time.sleep(1.5)
    # Read from the searcher: the idle shard's skipped refresh is made first, as a search would.
    got = es.get(index=name, id="7", realtime=False)
    assert got["found"] is True and got["_source"] == {"n": 7}
    assert shard_stats(es, name)["search_idle"] is False
    # A realtime GET marks the shard searched as well (ES's markSearcherAccessed).
    assert wait_until(lambda: shard_stats(es, name)["search_idle"], 10)
    assert es.get(index=name, id="1")["found"] is True
    assert shard_stats(es, name)["search_idle"] is False
    es.indices.delete(index=name)

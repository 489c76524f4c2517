"""Pagination: from/size, the max_result_window error, track_total_hits,
search_after over the whole index, scroll."""

import pytest
from elasticsearch import ApiError, BadRequestError, NotFoundError

import oracle


def search(es, body, **params):
    return es.search(index="accounts", body=body, **params).body


def ordered_ids(corpus, pred=None, desc=False):
    rows = sorted((d["createdTime"], i) for i, d in corpus.docs if pred is None or pred(d))
    if desc:
        rows.reverse()
    return [i for _, i in rows]


@pytest.mark.parametrize("frm,size", [(0, 0), (0, 1), (0, 25), (25, 25), (137, 50), (9950, 50), (9990, 10)])
def test_from_size_slices(es, accounts, corpus, frm, size):
    resp = search(es, {"from": frm, "size": size, "sort": [{"createdTime": "asc"}], "_source": False})
    assert [h["_id"] for h in resp["hits"]["hits"]] == ordered_ids(corpus)[frm:frm + size]


def test_default_size_is_10(es, accounts, corpus):
    resp = search(es, {"sort": [{"createdTime": "desc"}]})
    assert [h["_id"] for h in resp["hits"]["hits"]] == ordered_ids(corpus, desc=True)[:10]


def test_from_past_the_end(es, accounts, corpus):
    resp = search(es, {"from": 500, "size": 10, "query": {"term": {"acctId": "A00000000000"}}})
    assert resp["hits"]["hits"] == []
    n = corpus.count(lambda d: d["acctId"] == "A00000000000")
    assert resp["hits"]["total"] == {"value": n, "relation": "eq"}


def test_from_size_as_url_params(es, accounts, corpus):
    resp = es.search(index="accounts", from_=10, size=5, sort="createdTime:desc", source=False).body
    assert [h["_id"] for h in resp["hits"]["hits"]] == ordered_ids(corpus, desc=True)[10:15]


def test_window_edge_is_allowed(es, accounts, corpus):
    resp = search(es, {"from": 9999, "size": 1, "sort": [{"createdTime": "asc"}], "_source": False})
    assert [h["_id"] for h in resp["hits"]["hits"]] == ordered_ids(corpus)[9999:10000]


@pytest.mark.parametrize("frm,size", [(9995, 15), (0, 10001), (10000, 1)])
def test_result_window_too_large(es, accounts, frm, size):
    with pytest.raises(BadRequestError) as ei:
        search(es, {"from": frm, "size": size, "query": {"match_all": {}}})
    e = ei.value
    assert e.meta.status == 400
    err = e.body["error"]
    assert err["type"] == "search_phase_execution_exception"
    root = err["root_cause"][0]
    assert root["type"] == "illegal_argument_exception"
    assert root["reason"].startswith(
        "Result window is too large, from + size must be less than or equal to: [10000] but was [%d]." % (frm + size))
    assert "index.max_result_window" in root["reason"]
    assert e.body["status"] == 400


# ---------------------------------------------------------------------------
# track_total_hits
# ---------------------------------------------------------------------------

def test_track_total_hits_variants(es, accounts, corpus):
    n = corpus.n
    assert search(es, {"size": 0})["hits"]["total"] == {"value": 10000, "relation": "gte"}
    assert search(es, {"size": 0, "track_total_hits": True})["hits"]["total"] == {"value": n, "relation": "eq"}
    assert search(es, {"size": 0, "track_total_hits": 100})["hits"]["total"] == {"value": 100, "relation": "gte"}
    assert search(es, {"size": 0, "track_total_hits": 50000})["hits"]["total"] == {"value": n, "relation": "eq"}
    resp = search(es, {"size": 0, "track_total_hits": False})
    assert "total" not in resp["hits"]
    m = corpus.count(lambda d: d["status"] == 3)
    assert m < 10000
    assert search(es, {"size": 0, "query": {"term": {"status": 3}}})["hits"]["total"] == {"value": m, "relation": "eq"}


def test_rest_total_hits_as_int(es, accounts, corpus):
    resp = es.search(index="accounts", size=0, track_total_hits=True, rest_total_hits_as_int=True).body
    assert resp["hits"]["total"] == corpus.n


# ---------------------------------------------------------------------------
# search_after
# ---------------------------------------------------------------------------

def test_search_after_walks_everything(es, accounts, corpus):
    body = {"size": 2500, "_source": False, "track_total_hits": False,
            "sort": [{"createdTime": "asc"}, {"acctId": "asc"}]}
    got, after, pages = [], None, 0
    while True:
        if after is not None:
            body["search_after"] = after
        hits = search(es, body)["hits"]["hits"]
        if not hits:
            break
        got.extend(h["_id"] for h in hits)
        after = hits[-1]["sort"]
        pages += 1
        assert pages < 20
    exp = [i for _, _, i in sorted((d["createdTime"], d["acctId"], i) for i, d in corpus.docs)]
    assert got == exp


def test_search_after_desc_with_query_and_sort_values(es, accounts, corpus):
    pred = lambda d: d["balanceTypeName"] in ("消费", "充值")
    rows = sorted((-d["balance"], d["createdTime"], i) for i, d in corpus.docs if pred(d))
    q = {"terms": {"balanceTypeName": ["消费", "充值"]}}
    body = {"size": 777, "query": q, "sort": [{"balance": "desc"}, {"createdTime": "asc"}]}
    got, after = [], None
    while True:
        if after is not None:
            body["search_after"] = after
        resp = search(es, body)
        hits = resp["hits"]["hits"]
        if not hits:
            break
        for h in hits:
            assert h["_source"] == corpus.by_id[h["_id"]]
        got.extend((h["sort"][0], h["sort"][1], h["_id"]) for h in hits)
        after = hits[-1]["sort"]
    assert got == [(-b, t, i) for b, t, i in rows]


def test_search_after_with_from_is_rejected(es, accounts):
    # ES rejects it (the status differs between versions: 400 or 500 search_exception)
    with pytest.raises(ApiError) as ei:
        search(es, {"from": 10, "size": 10, "sort": [{"createdTime": "asc"}], "search_after": [0]})
    assert ei.value.meta.status in (400, 500)
    assert "search_after" in str(ei.value.body)


def test_search_after_beyond_result_window(es, accounts, corpus):
    """search_after is not limited by max_result_window."""
    rows = sorted((d["createdTime"], i) for i, d in corpus.docs)
    after = rows[15000][0]
    resp = search(es, {"size": 5, "sort": [{"createdTime": "asc"}], "search_after": [after]})
    assert [h["_id"] for h in resp["hits"]["hits"]] == [i for _, i in rows[15001:15006]]


# ---------------------------------------------------------------------------
# scroll
# ---------------------------------------------------------------------------

def test_scroll_collects_all(es, accounts, corpus):
    pred = lambda d: d["status"] in (1, 2)
    resp = es.search(index="accounts", scroll="1m", size=1000,
                     query={"terms": {"status": [1, 2]}}, source=False).body
    n = corpus.count(pred)
    assert resp["hits"]["total"] == {"value": n, "relation": "eq"}
    sid = resp["_scroll_id"]
    got = [h["_id"] for h in resp["hits"]["hits"]]
    while True:
        resp = es.scroll(scroll_id=sid, scroll="1m").body
        assert resp["hits"]["total"] == {"value": n, "relation": "eq"}
        if not resp["hits"]["hits"]:
            break
        got.extend(h["_id"] for h in resp["hits"]["hits"])
        sid = resp["_scroll_id"]
    assert len(got) == len(set(got)) == n
    assert set(got) == set(corpus.ids(pred))
    cleared = es.clear_scroll(scroll_id=sid).body
    assert cleared["succeeded"] is True
    assert cleared["num_freed"] >= 1
    with pytest.raises(NotFoundError):
        es.scroll(scroll_id=sid, scroll="1m")


def test_scroll_sorted(es, accounts, corpus):
    resp = es.search(index="accounts", scroll="30s", size=3000, sort=["createdTime:desc"], source=False,
                     query={"range": {"balance": {"gte": 5000}}}).body
    got = [h["_id"] for h in resp["hits"]["hits"]]
    sid = resp["_scroll_id"]
    while True:
        r = es.scroll(scroll_id=sid, scroll="30s").body
        if not r["hits"]["hits"]:
            break
        got.extend(h["_id"] for h in r["hits"]["hits"])
        sid = r["_scroll_id"]
    es.clear_scroll(scroll_id=sid)
    assert got == ordered_ids(corpus, lambda d: d["balance"] >= 5000, desc=True)


def test_scroll_is_not_limited_by_result_window(es, accounts, corpus):
    resp = es.search(index="accounts", scroll="30s", size=10000, source=False, sort=["_doc"]).body
    got = len(resp["hits"]["hits"])
    sid = resp["_scroll_id"]
    while True:
        r = es.scroll(scroll_id=sid, scroll="30s").body
        if not r["hits"]["hits"]:
            break
        got += len(r["hits"]["hits"])
        sid = r["_scroll_id"]
    es.clear_scroll(scroll_id=sid)
    assert got == corpus.n


@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize("max_slices", [2, 3, 7])
def test_sliced_scrolls_partition_the_documents(es, shards, max_slices):
    name = f"sliced_{shards}"
    if not es.indices.exists(index=name):
        es.indices.create(index=name, settings={"number_of_shards": shards})
        ops = []
        for i in range(500):
            ops += [{"index": {"_index": name, "_id": f"d{i}"}}, {"n": i}]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    seen = []
    for sid in range(max_slices):
        r = es.search(index=name, scroll="1m", size=100, slice={"id": sid, "max": max_slices},
                      track_total_hits=True)
        total = r["hits"]["total"]["value"]
        ids = []
        while r["hits"]["hits"]:
            ids += [h["_id"] for h in r["hits"]["hits"]]
            r = es.scroll(scroll_id=r["_scroll_id"], scroll="1m")
        es.clear_scroll(scroll_id=r["_scroll_id"])
        assert len(ids) == total
        seen += ids
    assert sorted(seen) == sorted(f"d{i}" for i in range(500))


def test_slice_errors(es):
    name = "sliced_1"
    if not es.indices.exists(index=name):
        es.indices.create(index=name)
    for body, kw in [({"id": 0, "max": 2}, {}),                 # no scroll
                     ({"id": 2, "max": 2}, {"scroll": "1m"}),
                     ({"id": 0, "max": 1}, {"scroll": "1m"}),
                     ({"id": 0, "max": 1025}, {"scroll": "1m"})]:
        with pytest.raises(BadRequestError):
            es.search(index=name, slice=body, **kw)
    # what Lode does not build is refused, never ignored: slicing on a field other than
    # `_id`, and slices with aggregations
    for body, extra in [({"id": 0, "max": 2, "field": "n"}, {}),
                        ({"id": 0, "max": 2}, {"aggs": {"a": {"value_count": {"field": "_id"}}}})]:
        with pytest.raises(BadRequestError) as ei:
            es.search(index=name, slice=body, scroll="1m", **extra)
        assert ei.value.meta.status == 400
        assert ei.value.body["error"]["type"] == "parsing_exception"
        assert ei.value.body["error"]["reason"].endswith("is not supported by Lode")

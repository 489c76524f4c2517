"""`top_hits` under a `terms` bucket, sorted on one or two fields, over segments large enough
for the sorted-page machinery's points walk (6,000 documents each), with deleted documents and
missing values. The oracle sorts each bucket's live documents in Python; ties may be broken by
any document, so a page is checked by its sort values and each hit by its own source.
"""

import collections
import random

import pytest

from conftest import make_index

INDEX = "top_hits_sorted_buckets"
T0 = 1_600_000_000_000
CATS = ["a"] * 7 + ["b"] * 2 + ["c"]


def _doc(rng):
    doc = {"cat": rng.choice(CATS), "ts": T0 + rng.randrange(0, 10**9), "v": rng.randrange(50)}
    if rng.random() < 0.05:
        del doc["ts"]
    return doc


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(77)
    make_index(es, INDEX, {
        "settings": {"number_of_shards": 1, "refresh_interval": -1},
        "mappings": {"properties": {"cat": {"type": "keyword"},
                                    "ts": {"type": "date", "format": "epoch_millis"},
                                    "v": {"type": "integer"}}},
    }, [])
    live = {}
    n = 0
    for _ in range(3):
        ops = []
        for _ in range(6000):
            d = _doc(rng)
            live[str(n)] = d
            ops += [{"index": {"_index": INDEX, "_id": str(n)}}, d]
            n += 1
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    doomed = rng.sample(sorted(live), 900)
    ops = []
    for i in doomed:
        ops.append({"delete": {"_index": INDEX, "_id": i}})
        del live[i]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield live
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def _rows(docs, cat, sort):
    rows = [tuple(d.get(f) for f, _ in sort) for d in docs.values() if d["cat"] == cat]
    for i in reversed(range(len(sort))):
        desc = sort[i][1]
        present = sorted((r for r in rows if r[i] is not None), key=lambda r: r[i], reverse=desc)
        rows = present + [r for r in rows if r[i] is None]
    return rows


SORTS = [[("ts", True)], [("ts", False)], [("v", False), ("ts", True)], [("v", True), ("ts", False)]]


@pytest.mark.parametrize("sort", SORTS, ids=lambda s: ",".join(f + (":desc" if d else ":asc") for f, d in s))
@pytest.mark.parametrize("size,frm", [(3, 0), (5, 2)])
def test_bucket_top_hits_match_the_oracle(es, docs, sort, size, frm):
    body_sort = [{f: {"order": "desc" if d else "asc"}} for f, d in sort]
    aggs = {"c": {"terms": {"field": "cat"},
                  "aggs": {"h": {"top_hits": {"size": size, "from": frm, "sort": body_sort}}}}}
    res = es.search(index=INDEX, size=0, aggs=aggs, request_cache=False)
    counts = collections.Counter(d["cat"] for d in docs.values())
    buckets = res["aggregations"]["c"]["buckets"]
    assert {b["key"]: b["doc_count"] for b in buckets} == dict(counts)
    for b in buckets:
        hits = b["h"]["hits"]
        assert hits["total"] == {"value": counts[b["key"]], "relation": "eq"}
        want = [list(r) for r in _rows(docs, b["key"], sort)[frm:frm + size]]
        got = []
        for h in hits["hits"]:
            own = [docs[h["_id"]].get(f) for f, _ in sort]
            assert docs[h["_id"]]["cat"] == b["key"]
            assert [v for v in own] == [v for v in want[len(got)]], h["_id"]
            got.append(own)
        assert len(got) == len(want)


def _check_bucket(docs, bucket, hits, sort, size, keep):
    """`hits` of one `cat` bucket against the oracle: the live documents `keep` selects, sorted."""
    selected = {i: d for i, d in docs.items() if keep(d)}
    assert hits["total"] == {"value": len(selected), "relation": "eq"}
    assert bucket["doc_count"] == len(selected)
    want = [list(r) for r in _rows(selected, bucket["key"], sort)[:size]]
    assert [[docs[h["_id"]].get(f) for f, _ in sort] for h in hits["hits"]] == want
    assert all(keep(docs[h["_id"]]) for h in hits["hits"])


def test_bucket_top_hits_under_a_query(es, docs):
    # A selective search query: every bucket's hits come from its matches only.
    sort = [("ts", True)]
    aggs = {"c": {"terms": {"field": "cat"},
                  "aggs": {"h": {"top_hits": {"size": 4, "sort": [{"ts": "desc"}]}}}}}
    res = es.search(index=INDEX, size=0, query={"range": {"v": {"gte": 10, "lt": 20}}},
                    aggs=aggs, request_cache=False)
    for b in res["aggregations"]["c"]["buckets"]:
        _check_bucket(docs, b, b["h"]["hits"], sort, 4,
                      lambda d, k=b["key"]: d["cat"] == k and 10 <= d["v"] < 20)


def test_nested_buckets_top_hits(es, docs):
    # Two bucket levels under match_all: each inner bucket is both terms together.
    sort = [("ts", False)]
    aggs = {"c": {"terms": {"field": "cat"}, "aggs": {"v": {
        "terms": {"field": "v", "size": 3, "order": {"_key": "asc"}},
        "aggs": {"h": {"top_hits": {"size": 2, "sort": [{"ts": "asc"}]}}}}}}}
    res = es.search(index=INDEX, size=0, aggs=aggs, request_cache=False)
    for b in res["aggregations"]["c"]["buckets"]:
        inner = b["v"]["buckets"]
        assert [x["key"] for x in inner] == [0, 1, 2]
        for x in inner:
            keep = lambda d, c=b["key"], v=x["key"]: d["cat"] == c and d["v"] == v
            _check_bucket(docs, {**x, "key": b["key"]}, x["h"]["hits"], sort, 2, keep)


@pytest.mark.parametrize("query,score", [(None, 1.0), ({"match_all": {"boost": 2.5}}, 2.5),
                                         ({"constant_score": {"filter": {"range": {"v": {"lt": 25}}},
                                                              "boost": 3.0}}, 3.0)])
def test_bucket_top_hits_scored(es, docs, query, score):
    # Sorted by score (the default), a bucket's hits carry the search query's score.
    aggs = {"c": {"terms": {"field": "cat"}, "aggs": {"h": {"top_hits": {"size": 3}}}}}
    kw = {"query": query} if query else {}
    res = es.search(index=INDEX, size=0, aggs=aggs, request_cache=False, **kw)
    keep = (lambda d: d["v"] < 25) if query and "constant_score" in query else (lambda d: True)
    for b in res["aggregations"]["c"]["buckets"]:
        selected = [d for d in docs.values() if d["cat"] == b["key"] and keep(d)]
        hits = b["h"]["hits"]
        assert hits["total"] == {"value": len(selected), "relation": "eq"}
        assert hits["max_score"] == score
        assert len(hits["hits"]) == 3
        for h in hits["hits"]:
            assert h["_score"] == score
            assert docs[h["_id"]]["cat"] == b["key"] and keep(docs[h["_id"]])


def test_bucket_top_metrics_sorted(es, docs):
    # top_metrics shares the bucket's sorted top: the newest `v` of each bucket.
    aggs = {"c": {"terms": {"field": "cat"}, "aggs": {"m": {"top_metrics": {
        "metrics": {"field": "v"}, "sort": {"ts": "desc"}, "size": 2}}}}}
    res = es.search(index=INDEX, size=0, aggs=aggs, request_cache=False)
    for b in res["aggregations"]["c"]["buckets"]:
        rows = sorted((d for d in docs.values() if d["cat"] == b["key"] and "ts" in d),
                      key=lambda d: -d["ts"])
        top = b["m"]["top"]
        assert [t["sort"][0] for t in top] == [d["ts"] for d in rows[:2]]
        by_ts = collections.defaultdict(set)
        for d in rows:
            by_ts[d["ts"]].add(d["v"])
        for t in top:
            assert t["metrics"]["v"] in by_ts[t["sort"][0]]

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

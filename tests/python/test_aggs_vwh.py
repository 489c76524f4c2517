"""`variable_width_histogram`, against buckets computed here in Python from the documents
this file indexes, following Elasticsearch's algorithm (`VariableWidthHistogramAggregator`
per shard, `InternalVariableWidthHistogram#reduce` over the shards):

- per shard, each document's distinct values (ascending) in collection order fill a buffer
  of `initial_buffer` values; the sorted buffer is cut into runs of
  ceil(len / (shard_size * 3 // 4)) values, each run a cluster (min, max, centroid, count);
- later values join the cluster with the nearest centroid (ES's binary search ties), or
  start a new one when farther than twice the average centroid gap and fewer than
  `shard_size` clusters exist;
- the reduce groups equal centroids, merges the two closest adjacent centroids (first
  smallest gap) until `buckets` remain, then equal mins, and moves the bounds of
  overlapping neighbours to their midpoint.

With one shard indexed by one bulk request, collection order is indexing order. The
multi-shard test stays within the buffer with one value per initial cluster, where the
result does not depend on which shard holds which document. Sub-aggregations see the
documents whose values lie in [min, next bucket's min) (the last bucket: up to its max)."""

import math
import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index


# --- Elasticsearch's algorithm, written from its description ---------------------------

def _nearest(arr, val):
    def dist(i):
        return abs(arr[i] - val)

    def closest(a, b):
        return a if dist(a) < dist(b) else b

    lo, hi = 0, len(arr) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if arr[mid] == val:
            return mid
        if arr[mid] < val:
            if mid < hi:
                if arr[mid + 1] > val:
                    return closest(mid, mid + 1)
            elif mid == hi:
                return mid
            lo = mid + 1
        else:
            if mid > lo:
                if arr[mid - 1] < val:
                    return closest(mid, mid - 1)
            elif mid == 0:
                return mid
            hi = mid - 1
    return lo


def shard_clusters(values, shard_size, initial_buffer):
    """values: the shard's values in collection order -> [(min, max, centroid, count)]."""
    buf = values[:initial_buffer]
    rest = values[initial_buffer:]
    cl = []  # [min, max, centroid, size], sorted by centroid
    n_init = shard_size * 3 // 4
    per = math.ceil(len(buf) / n_init) if buf else 1
    for i, v in enumerate(sorted(buf)):
        ordinal = i // per
        if ordinal == len(cl):
            cl.append([v, v, v, 1])
        else:
            c = cl[ordinal]
            c[0], c[1] = min(c[0], v), max(c[1], v)
            c[2] = (c[2] * c[3] + v) / (c[3] + 1)
            c[3] += 1

    def avg():
        if len(cl) == 1:
            return math.nan
        return (cl[-1][2] - cl[0][2]) / (len(cl) - 1)

    a = avg() if len(buf) > 1 else 0.0
    for v in rest:
        k = _nearest([c[2] for c in cl], v)
        if abs(cl[k][2] - v) > 2 * a and len(cl) < shard_size:
            pos = k + 1 if v > cl[k][2] else k
            cl.insert(pos, [v, v, v, 1])
            a = avg()
        else:
            c = cl[k]
            c[0], c[1] = min(c[0], v), max(c[1], v)
            c[2] = (c[2] * c[3] + v) / (c[3] + 1)
            c[3] += 1
            if k == 0 or k == len(cl) - 1:
                a = avg()
    return sorted([tuple(c) for c in cl], key=lambda c: c[2])


def _merge(bs):
    count = sum(b[3] for b in bs)
    s = 0.0
    for b in bs:
        s += b[3] * b[2]
    return (min(b[0] for b in bs), max(b[1] for b in bs), s / count, count)


def _apply(buckets, plan):
    out = list(buckets)
    for start, end in reversed(plan):
        if start != end:
            group = [out[i] for i in range(end, start, -1)] + [out[start]]
            out[start:end + 1] = [_merge(group)]
    return out


def reduce(shards, target):
    flat = sorted((b for s in shards for b in s), key=lambda b: b[2])
    buckets = []
    for b in flat:
        if buckets and buckets[-1][0][2] == b[2]:
            buckets[-1].append(b)
        else:
            buckets.append([b])
    buckets = [_merge(g) for g in buckets]
    ranges = [[i, i, b[2], b[3]] for i, b in enumerate(buckets)]
    while len(ranges) > target:
        gaps = [ranges[i + 1][2] - ranges[i][2] for i in range(len(ranges) - 1)]
        i = gaps.index(min(gaps))
        r, o = ranges[i], ranges.pop(i + 1)
        r[2] = (r[2] * r[3] + o[2] * o[3]) / (r[3] + o[3])
        r[3] += o[3]
        r[0], r[1] = min(r[0], o[0]), max(r[1], o[1])
    buckets = _apply(buckets, [(r[0], r[1]) for r in ranges])
    plan = []
    for i, b in enumerate(buckets):
        if plan and buckets[plan[-1][0]][0] == b[0]:
            plan[-1][1] = i
        else:
            plan.append([i, i])
    buckets = [list(b) for b in _apply(buckets, plan)]
    for i in range(1, len(buckets)):
        if buckets[i][0] < buckets[i - 1][1]:
            mid = (buckets[i - 1][1] + buckets[i][0]) / 2
            buckets[i][0] = buckets[i - 1][1] = mid
    return buckets


def doc_values(doc_value):
    vals = doc_value if isinstance(doc_value, list) else [doc_value]
    return sorted(set(float(v) for v in vals))


def expected(docs, buckets=10, shard_size=None, initial_buffer=None):
    shard_size = shard_size or buckets * 50
    initial_buffer = initial_buffer or min(10 * shard_size, 50000)
    values = [v for d in docs if "v" in d for v in doc_values(d["v"])]
    return reduce([shard_clusters(values, shard_size, initial_buffer)], buckets)


def check(got, want):
    assert len(got) == len(want), (got, want)
    for g, (lo, hi, c, n) in zip(got, want):
        assert g["min"] == lo
        assert g["max"] == hi
        assert g["key"] == pytest.approx(c, rel=1e-12)
        assert g["doc_count"] == n


# --- documents ------------------------------------------------------------------------

def _docs():
    rnd = random.Random(7)
    docs = []
    for i in range(120):
        centre = rnd.choice([10, 200, 1000, 5000])
        docs.append({"v": centre + rnd.randrange(-30, 30), "g": rnd.randrange(0, 5)})
    return docs


DOCS = _docs()


@pytest.fixture(scope="module")
def vwh(es):
    body = {"settings": {"number_of_shards": 1}, "mappings": {"properties": {
        "v": {"type": "long"}, "g": {"type": "integer"}, "t": {"type": "text"},
        "d": {"type": "double"}}}}
    return make_index(es, "vwh", body, list(enumerate(DOCS)))


def search(es, index, agg, query=None, **kw):
    r = es.search(index=index, size=0, query=query or {"match_all": {}},
                  aggs={"h": {"variable_width_histogram": agg, **kw}})
    return r["aggregations"]["h"]["buckets"]


def test_default_buckets(es, vwh):
    check(search(es, "vwh", {"field": "v"}), expected(DOCS))


@pytest.mark.parametrize("buckets,shard_size", [(3, 6), (4, 40), (2, 8), (7, 10)])
def test_buckets_and_shard_size(es, vwh, buckets, shard_size):
    got = search(es, "vwh", {"field": "v", "buckets": buckets, "shard_size": shard_size})
    check(got, expected(DOCS, buckets, shard_size))


@pytest.mark.parametrize("initial_buffer,shard_size", [(10, 8), (20, 12), (5, 40)])
def test_merge_phase_after_the_buffer(es, vwh, initial_buffer, shard_size):
    got = search(es, "vwh", {"field": "v", "buckets": 4, "shard_size": shard_size,
                             "initial_buffer": initial_buffer})
    check(got, expected(DOCS, 4, shard_size, initial_buffer))


def test_query_and_sub_aggregations(es, vwh):
    query = {"range": {"g": {"gte": 2}}}
    docs = [d for d in DOCS if d["g"] >= 2]
    got = search(es, "vwh", {"field": "v", "buckets": 5}, query=query,
                 aggs={"s": {"sum": {"field": "g"}}, "top": {"max": {"field": "v"}}})
    want = expected(docs, 5)
    check(got, want)
    for i, (b, w) in enumerate(zip(got, want)):
        if i + 1 < len(want):
            inside = [d for d in docs if w[0] <= d["v"] < want[i + 1][0]]
        else:
            inside = [d for d in docs if w[0] <= d["v"] <= w[1]]
        assert b["s"]["value"] == sum(d["g"] for d in inside)
        assert b["top"]["value"] == max(d["v"] for d in inside)


def inside(docs, want, i):
    if i + 1 < len(want):
        return [d for d in docs if want[i][0] <= d["v"] < want[i + 1][0]]
    return [d for d in docs if want[i][0] <= d["v"] <= want[i][1]]


def test_under_a_terms_bucket(es, vwh):
    r = es.search(index="vwh", size=0, typed_keys=True, aggs={"g": {
        "terms": {"field": "g"}, "aggs": {"h": {
            "variable_width_histogram": {"field": "v", "buckets": 3},
            "aggs": {"c": {"value_count": {"field": "v"}}, "s": {"sum": {"field": "v"}}}}}}})
    buckets = r["aggregations"]["lterms#g"]["buckets"]
    assert {b["key"] for b in buckets} == {d["g"] for d in DOCS}
    for b in buckets:
        docs = [d for d in DOCS if d["g"] == b["key"]]
        want = expected(docs, 3)
        got = b["variable_width_histogram#h"]["buckets"]
        check(got, want)
        for i, gb in enumerate(got):
            assert gb["value_count#c"]["value"] == len(inside(docs, want, i))
            assert gb["sum#s"]["value"] == sum(d["v"] for d in inside(docs, want, i))


def test_under_global(es, vwh):
    r = es.search(index="vwh", size=0, query={"term": {"g": 1}}, aggs={"all": {
        "global": {}, "aggs": {"h": {"variable_width_histogram": {"field": "v", "buckets": 4}}}}})
    check(r["aggregations"]["all"]["h"]["buckets"], expected(DOCS, 4))


def test_typed_keys_and_empty(es, vwh):
    r = es.search(index="vwh", size=0, typed_keys=True, query={"term": {"g": 99}},
                  aggs={"h": {"variable_width_histogram": {"field": "v"}}})
    assert r["aggregations"] == {"variable_width_histogram#h": {"buckets": []}}


def test_multi_valued_documents(es):
    docs = [{"v": [1, 1, 5]}, {"v": [2, 40]}, {"v": 41}, {"v": [3, 3]}, {}, {"v": 100}]
    make_index(es, "vwh_multi", {"settings": {"number_of_shards": 1},
                                 "mappings": {"properties": {"v": {"type": "long"}}}},
               list(enumerate(docs)))
    got = search(es, "vwh_multi", {"field": "v", "buckets": 3})
    check(got, expected(docs, 3))


def test_several_shards(es):
    rnd = random.Random(3)
    docs = [{"v": round(rnd.uniform(-50, 50) + rnd.choice([0, 300, 310, 900]), 3)}
            for _ in range(150)]
    make_index(es, "vwh_shards", {"settings": {"number_of_shards": 3},
                                  "mappings": {"properties": {"v": {"type": "double"}}}},
               list(enumerate(docs)))
    # Within the buffer, one value per initial cluster: the shards' split does not matter.
    got = search(es, "vwh_shards", {"field": "v", "buckets": 6})
    check(got, expected(docs, 6))


def test_missing(es):
    """Documents without a value cluster with the `missing` value, at the top level and
    under a bucket; their bucket's sub-aggregations (re-reading ones too) see them."""
    rnd = random.Random(11)
    docs = [({"v": rnd.choice([10, 200, 1000]) + rnd.randrange(-20, 20)} if rnd.random() < 0.7 else {})
            | {"g": i % 2} for i in range(80)]
    make_index(es, "vwh_missing", {"settings": {"number_of_shards": 1},
                                   "mappings": {"properties": {"v": {"type": "long"}, "g": {"type": "integer"}}}},
               list(enumerate(docs)))
    assert any("v" not in d for d in docs)
    filled = [{"v": d.get("v", 600), "g": d["g"]} for d in docs]
    got = search(es, "vwh_missing", {"field": "v", "buckets": 4, "missing": 600},
                 aggs={"c": {"value_count": {"field": "g"}}, "top": {"top_hits": {"size": 100, "_source": False}}})
    want = expected(filled, 4)
    check(got, want)
    for i, b in enumerate(got):
        assert b["c"]["value"] == len(inside(filled, want, i))
        assert b["top"]["hits"]["total"]["value"] == len(inside(filled, want, i))
    r = es.search(index="vwh_missing", size=0, aggs={"g": {"terms": {"field": "g"}, "aggs": {"h": {
        "variable_width_histogram": {"field": "v", "buckets": 3, "missing": "600"},
        "aggs": {"c": {"value_count": {"field": "g"}}}}}}})
    for gb in r["aggregations"]["g"]["buckets"]:
        part = [d for d in filled if d["g"] == gb["key"]]
        want = expected(part, 3)
        check(gb["h"]["buckets"], want)
        for i, b in enumerate(gb["h"]["buckets"]):
            assert b["c"]["value"] == len(inside(part, want, i))
    with pytest.raises(BadRequestError):
        search(es, "vwh_missing", {"field": "v", "missing": "abc"})


def test_errors(es, vwh):
    def refused(agg, status=400):
        with pytest.raises(BadRequestError) as e:
            es.search(index="vwh", size=0, aggs={"h": agg})
        assert e.value.status_code == status
        return e.value.body["error"]

    err = refused({"variable_width_histogram": {"field": "v", "buckets": 0}})
    assert "buckets must be greater than [0] for [h]" in str(err)
    err = refused({"variable_width_histogram": {"field": "v", "shard_size": 1}})
    assert "shard_size must be greater than [1] for [h]" in str(err)
    err = refused({"variable_width_histogram": {"field": "v", "buckets": 20,
                                                "initial_buffer": 10}})
    assert "initial_buffer must be at least buckets but was [10<20] for [h]" in str(err)
    err = refused({"variable_width_histogram": {"field": "v", "buckets": 10,
                                                "shard_size": 12}})
    assert "3/4 of shard_size must be at least buckets but was [9<10] for [h]" in str(err)
    refused({"variable_width_histogram": {"field": "v", "bogus": 1}})
    refused({"variable_width_histogram": {"field": "t"}})
    refused({"terms": {"field": "g"},
             "aggs": {"x": {"variable_width_histogram": {"field": "v", "buckets": 0}}}})


def test_date_field_as_strings(es):
    import datetime as dt
    base = dt.datetime(2021, 3, 1, tzinfo=dt.timezone.utc)
    rnd = random.Random(2)
    docs = [{"d": int((base + dt.timedelta(days=rnd.choice([0, 1, 40, 41, 90]),
                                            minutes=rnd.randrange(0, 600))).timestamp() * 1000)}
            for _ in range(30)]
    make_index(es, "vwh_dates", {"settings": {"number_of_shards": 1},
                                 "mappings": {"properties": {"d": {"type": "date"}}}},
               [(i, {"d": d["d"]}) for i, d in enumerate(docs)])
    got = search(es, "vwh_dates", {"field": "d", "buckets": 3})
    want = expected([{"v": d["d"]} for d in docs], 3)
    check(got, want)

    def fmt(ms):
        t = dt.datetime.fromtimestamp(int(ms) // 1000, dt.timezone.utc)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"

    for g, (lo, hi, c, _) in zip(got, want):
        assert g["min_as_string"] == fmt(lo)
        assert g["key_as_string"] == fmt(c)
        assert g["max_as_string"] == fmt(hi)
    got = search(es, "vwh_dates", {"field": "d", "buckets": 3, "format": "yyyy-MM-dd"})
    assert [g["min_as_string"] for g in got] == [fmt(w[0])[:10] for w in want]


def test_script_and_runtime_field(es, vwh):
    """A script or a runtime field is clustered like a field (top level): the expected
    buckets are those of the values the script computes, here in Python."""
    docs = [{"v": d["v"] * 2 + 1, "g": d["g"]} for d in DOCS]
    want = expected(docs, 4, 40)
    got = search(es, "vwh", {"script": {"source": "doc['v'].value * 2 + 1"}, "buckets": 4,
                             "shard_size": 40}, aggs={"s": {"sum": {"field": "g"}}})
    check(got, want)
    for i, (b, w) in enumerate(zip(got, want)):
        hi = want[i + 1][0] if i + 1 < len(want) else w[1] + 1e-9
        assert b["s"]["value"] == sum(d["g"] for d in docs if w[0] <= d["v"] < hi)
    r = es.search(index="vwh", size=0, runtime_mappings={"v2": {
        "type": "long", "script": {"source": "emit(doc['v'].value * 2 + 1)"}}},
        aggs={"h": {"variable_width_histogram": {"field": "v2", "buckets": 4, "shard_size": 40}}})
    check(r["aggregations"]["h"]["buckets"], want)


def test_runtime_field_under_a_terms_bucket(es, vwh):
    r = es.search(index="vwh", size=0, runtime_mappings={"v2": {
        "type": "long", "script": {"source": "emit(doc['v'].value * 2 + 1)"}}},
        aggs={"t": {"terms": {"field": "g"}, "aggs": {"h": {"variable_width_histogram": {
            "field": "v2", "buckets": 3, "shard_size": 40}, "aggs": {
                "hits": {"top_hits": {"size": 100, "_source": False}},
                "s": {"sum": {"field": "v"}}}}}}})
    for b in r["aggregations"]["t"]["buckets"]:
        docs = [{"v": d["v"] * 2 + 1, "orig": d["v"]} for d in DOCS if d["g"] == b["key"]]
        want = expected(docs, 3, 40)
        got = b["h"]["buckets"]
        check(got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            hi = want[i + 1][0] if i + 1 < len(want) else w[1] + 1e-9
            inside = [d for d in docs if w[0] <= d["v"] < hi]
            assert g["hits"]["hits"]["total"]["value"] == len(inside)
            assert g["s"]["value"] == sum(d["orig"] for d in inside)


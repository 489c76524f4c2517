"""`terms` ordered by a metric sub-aggregation, cut on metrics counted by global ordinal.

A shard counts each bucket's documents and its metric (sum, avg, min, max, value_count, or a
`stats`/`extended_stats` path) in arrays over the keyword's global ordinals, cuts to its
`shard_size` in Elasticsearch's order (the metric, an empty metric last in either direction,
then the key ascending) and collects the sub-aggregations of the kept buckets only. The oracle
computes every bucket's metrics from the live documents in Python and applies the same cut: on
one shard the buckets, their sub-aggregations and `sum_other_doc_count` must be exactly
Elasticsearch's, for windows from a handful of documents to all of them, across segments, after
deletes and updates, with documents missing the keyword or the metric field and metric fields
with several values. With continuous values (no ties) the answer must also be the general
collector's (an `include` regex that keeps every term sends the request there), on one and two
shards. A multi-valued keyword is collected by the general path and must stay right.
"""

import collections
import math
import random

import pytest

from conftest import make_index

INDEX = "terms_metric_order"
N_DOCS_PER_SEGMENT = [1200, 1700, 2100, 30]


def _term(rng):
    return "u%04d" % min(int(rng.paretovariate(0.7)), 3000)


def _doc(rng, i):
    src = {"n": i, "f": round(rng.uniform(-1000, 1000), 6)}
    r = rng.random()
    if r < 0.80:
        src["v"] = rng.randint(-50, 50)
    elif r < 0.90:
        src["v"] = [rng.randint(-50, 50), rng.randint(-50, 50)]
    # else: no `v` (empty avg/min/max buckets, sums of nothing)
    if rng.random() < 0.93:
        src["name"] = _term(rng)
    tags = [_term(rng) for _ in range(rng.randint(0, 3))]
    if tags:
        src["tags"] = tags
    return src


@pytest.fixture(scope="module", params=[1, 2], ids=["one-shard", "two-shards"])
def loaded(es, request):
    shards = request.param
    index = f"{INDEX}_{shards}"
    rng = random.Random(250 + shards)
    make_index(es, index, {
        "settings": {"number_of_shards": shards, "refresh_interval": -1},
        "mappings": {"properties": {"name": {"type": "keyword"}, "tags": {"type": "keyword"},
                                    "n": {"type": "integer"}, "v": {"type": "long"},
                                    "f": {"type": "double"}}},
    }, [])
    live = {}
    doc_id = 0
    for count in N_DOCS_PER_SEGMENT:
        ops = []
        for _ in range(count):
            src = _doc(rng, doc_id)
            ops += [{"index": {"_index": index, "_id": str(doc_id)}}, src]
            live[str(doc_id)] = src
            doc_id += 1
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    ids = sorted(live, key=int)
    doomed = set(rng.sample(ids, 400))
    updated = set(rng.sample(sorted(set(ids) - doomed, key=int), 250))
    ops = []
    for i in sorted(doomed, key=int):
        ops.append({"delete": {"_index": index, "_id": i}})
        del live[i]
    for i in sorted(updated, key=int):
        src = _doc(rng, int(i))
        ops += [{"index": {"_index": index, "_id": i}}, src]
        live[i] = src
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield index, live
    es.indices.delete(index=index, ignore_unavailable=True)


def _values(src, field):
    v = src.get(field)
    return v if isinstance(v, list) else ([] if v is None else [v])


def _stats(values):
    n = len(values)
    return {"count": n, "sum": float(sum(values)),
            "min": min(values) if n else None, "max": max(values) if n else None,
            "avg": sum(values) / n if n else None}


def _buckets(live, lo, hi, terms_field, metric_field):
    """Per term of the matching live documents: its documents' metric values."""
    per_term = collections.defaultdict(list)
    for src in live.values():
        if lo <= src["n"] < hi:
            for t in set(_values(src, terms_field)):
                per_term[t].append(_values(src, metric_field))
    return per_term


def _order_value(values, path):
    s = _stats(values)
    return s["count"] if path == "value_count" else s[path]


def _expected(per_term, path, direction, size, min_doc_count=1):
    """ES's order (empty metric last, then key ascending) and one shard's cut."""
    rows = []
    for term, docs in per_term.items():
        values = [v for vs in docs for v in vs]
        rows.append((term, len(docs), _order_value(values, path), values))
    rows.sort(key=lambda r: r[0])
    with_value = [r for r in rows if r[2] is not None]
    with_value.sort(key=lambda r: r[2], reverse=direction == "desc")
    rows = with_value + [r for r in rows if r[2] is None]
    shard_size = int(size * 1.5 + 10)
    candidates = rows[:shard_size]
    passing = [r for r in candidates if r[1] >= min_doc_count]
    kept = passing[:size]
    # The shard's cut and the reduce's `size` count as others; `min_doc_count` does not.
    other = sum(r[1] for r in rows) - sum(r[1] for r in candidates) + \
        sum(r[1] for r in passing[size:])
    return kept, other


def _window(width):
    total = sum(N_DOCS_PER_SEGMENT)
    lo = (width * 7919) % max(1, total - width)
    return lo, lo + width


# (sub-aggregation, order path, what the oracle reads)
METRICS = [
    ({"sum": {"field": "v"}}, "m", "sum"),
    ({"avg": {"field": "v"}}, "m", "avg"),
    ({"min": {"field": "v"}}, "m", "min"),
    ({"max": {"field": "v"}}, "m", "max"),
    ({"value_count": {"field": "v"}}, "m", "value_count"),
    ({"stats": {"field": "v"}}, "m.avg", "avg"),
    ({"stats": {"field": "v"}}, "m.count", "value_count"),
    ({"extended_stats": {"field": "v"}}, "m.min", "min"),
    ({"extended_stats": {"field": "v"}}, "m.sum", "sum"),
]
WIDTHS = [20, 400, 4000, None]


def _query(width):
    if width is None:
        return -1, 1 << 30, {"match_all": {}}
    lo, hi = _window(width)
    return lo, hi, {"range": {"n": {"gte": lo, "lt": hi}}}


def _check_bucket(b, values, ndocs):
    assert b["doc_count"] == ndocs
    s = _stats(values)
    if "count" in b["m"]:  # stats / extended_stats
        assert (b["m"]["count"], b["m"]["min"], b["m"]["max"]) == (s["count"], s["min"], s["max"])
        assert b["m"]["sum"] == s["sum"]
    assert b["cnt"]["value"] == s["count"]
    assert b["total"]["value"] == s["sum"]


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m[1] + "-" + next(iter(m[0])))
@pytest.mark.parametrize("direction", ["desc", "asc"])
@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_metric_order_equals_the_oracle(es, loaded, metric, direction, width):
    index, live = loaded
    if not index.endswith("_1"):
        pytest.skip("the shard's cut is exact on one shard")
    body, path, reads = metric
    lo, hi, query = _query(width)
    size = 7
    aggs = {"a": {"terms": {"field": "name", "size": size, "order": {path: direction}},
                  "aggs": {"m": body, "cnt": {"value_count": {"field": "v"}},
                           "total": {"sum": {"field": "v"}}}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query=query)["aggregations"]["a"]
    per_term = _buckets(live, lo, hi, "name", "v")
    if width is None or width >= 400:
        assert len(per_term) > int(size * 1.5 + 10), "the shard must cut"
    kept, other = _expected(per_term, reads, direction, size)
    assert [(b["key"], b["doc_count"]) for b in got["buckets"]] == [(k, n) for k, n, _, _ in kept]
    assert got["sum_other_doc_count"] == other
    assert got["doc_count_error_upper_bound"] == (-1 if len(per_term) >= 20 else 0)
    for b, (_, n, value, values) in zip(got["buckets"], kept):
        _check_bucket(b, values, n)
        shown = b["m"]["value"] if "value" in b["m"] else b["m"][path.split(".")[1]]
        if value is None:
            assert shown is None
        else:
            assert math.isclose(shown, value, rel_tol=1e-12, abs_tol=1e-9)


def test_min_doc_count_applies_after_the_shard_cut(es, loaded):
    index, live = loaded
    if not index.endswith("_1"):
        pytest.skip("the shard's cut is exact on one shard")
    lo, hi, query = _query(4000)
    per_term = _buckets(live, lo, hi, "name", "v")
    aggs = {"a": {"terms": {"field": "name", "size": 5, "order": {"m": "desc"},
                            "min_doc_count": 3},
                  "aggs": {"m": {"sum": {"field": "v"}}}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query=query)["aggregations"]["a"]
    kept, other = _expected(per_term, "sum", "desc", 5, min_doc_count=3)
    assert [(b["key"], b["doc_count"], b["m"]["value"]) for b in got["buckets"]] == \
        [(k, n, v) for k, n, v, _ in kept]
    assert got["sum_other_doc_count"] == other


@pytest.mark.parametrize("metric", [("sum", "m"), ("avg", "m"), ("min", "m"), ("max", "m"),
                                    ("stats", "m.avg"), ("extended_stats", "m.max")],
                         ids=lambda m: m[1] + "-" + m[0])
@pytest.mark.parametrize("direction", ["desc", "asc"])
@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_metric_order_equals_the_general_collector(es, loaded, metric, direction, width):
    """Continuous values (no ties): both paths keep the same buckets on every shard."""
    index, _ = loaded
    kind, path = metric
    _, _, query = _query(width)

    def run(terms_extra):
        terms = {"field": "name", "size": 6, "order": {path: direction}, **terms_extra}
        aggs = {"a": {"terms": terms, "aggs": {"m": {kind: {"field": "f"}},
                                               "v": {"avg": {"field": "v"}}}}}
        return es.search(index=index, size=0, aggs=aggs, request_cache=False,
                         query=query)["aggregations"]["a"]

    dense = run({})
    general = run({"include": ".*"})
    assert dense["buckets"], "the query must match documents"
    _assert_same(dense, general)


def _assert_same(a, b, path="a"):
    """Equal, floats up to the last bits (sums compensated in another association)."""
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9), path
    elif isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def test_multi_valued_keyword_stays_right(es, loaded):
    index, live = loaded
    if not index.endswith("_1"):
        pytest.skip("the shard's cut is exact on one shard")
    lo, hi, query = _query(4000)
    aggs = {"a": {"terms": {"field": "tags", "size": 5, "order": {"m": "desc"}},
                  "aggs": {"m": {"sum": {"field": "f"}}}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query=query)["aggregations"]["a"]
    per_term = _buckets(live, lo, hi, "tags", "f")
    kept, other = _expected(per_term, "sum", "desc", 5)
    assert [b["key"] for b in got["buckets"]] == [k for k, _, _, _ in kept]
    assert [b["doc_count"] for b in got["buckets"]] == [n for _, n, _, _ in kept]
    for b, (_, _, value, _) in zip(got["buckets"], kept):
        assert math.isclose(b["m"]["value"], value, rel_tol=1e-9)
    assert got["sum_other_doc_count"] == other


def test_two_shards_add_up(es, loaded):
    """On two shards every bucket's count is at most its documents, and the documents in
    buckets and in `sum_other_doc_count` are all the matching documents with the keyword."""
    index, live = loaded
    lo, hi, query = _query(4000)
    per_term = _buckets(live, lo, hi, "name", "v")
    aggs = {"a": {"terms": {"field": "name", "size": 6, "order": {"m": "desc"}},
                  "aggs": {"m": {"sum": {"field": "f"}}}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query=query)["aggregations"]["a"]
    total = sum(len(d) for d in per_term.values())
    assert sum(b["doc_count"] for b in got["buckets"]) + got["sum_other_doc_count"] == total
    for b in got["buckets"]:
        assert b["doc_count"] <= len(per_term[b["key"]])

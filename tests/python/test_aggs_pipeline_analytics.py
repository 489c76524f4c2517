"""The analytics module's pipelines: `normalize` (every method) and `cumulative_cardinality`,
checked against values computed in Python from the documents this file indexes (a
histogram of `day` with an empty bucket in the middle, sums and distinct users per day)."""

import math
import random

import pytest
from elasticsearch import ApiError, BadRequestError

INDEX = "pipelines_analytics"


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(23)
    docs = [{"day": rng.randrange(0, 12), "v": rng.randrange(-20, 60),
             "user": f"u{rng.randrange(0, 40)}", "n": rng.randrange(0, 30), "tag": rng.choice("abc")}
            for _ in range(300)]
    docs = [d for d in docs if d["day"] != 5]  # an empty bucket in the middle
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 2}, mappings={"properties": {
        "day": {"type": "integer"}, "v": {"type": "long"}, "user": {"type": "keyword"},
        "n": {"type": "long"}, "tag": {"type": "keyword"}}})
    ops = []
    for i, d in enumerate(docs):
        ops += [{"index": {"_index": INDEX, "_id": str(i)}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


HIST = {"histogram": {"field": "day", "interval": 1, "min_doc_count": 0}}


def days(docs):
    return range(min(d["day"] for d in docs), max(d["day"] for d in docs) + 1)


def normalized(method, values):
    """ES's NormalizePipelineMethods over a series where None is a gap (NaN)."""
    xs = [v for v in values if v is not None]
    mn, mx = min(xs + [1.7976931348623157e308]), max(xs + [5e-324])
    s, n = sum(xs), len(xs)
    mean = s / n
    if method == "rescale_0_1":
        f = lambda v: (v - mn) / (mx - mn)
    elif method == "rescale_0_100":
        f = lambda v: 100 * (v - mn) / (mx - mn)
    elif method == "mean":
        f = lambda v: (v - mean) / (mx - mn)
    elif method == "percent_of_sum":
        f = lambda v: v / s
    elif method == "z-score":
        sd = math.sqrt(sum((v - mean) ** 2 for v in xs) / n)
        f = lambda v: (v - mean) / sd
    else:
        se = sum(jexp(v) for v in xs)
        f = lambda v: jexp(v) / se

    def finite(x):
        return x if x is not None and math.isfinite(x) else None
    return [None if v is None else finite(f(v)) for v in values]


def jexp(v):
    """Java's Math.exp: Infinity past the double range (softmax of large sums is NaN)."""
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


METHODS = ["rescale_0_1", "rescale_0_100", "percent_of_sum", "mean", "z-score", "softmax"]


@pytest.mark.parametrize("method", METHODS)
def test_normalize(es, docs, method):
    r = es.search(index=INDEX, size=0, aggs={"h": {**HIST, "aggs": {
        "s": {"sum": {"field": "v"}},
        "norm": {"normalize": {"buckets_path": "s", "method": method}},
        "cnorm": {"normalize": {"buckets_path": "_count", "method": method, "format": "0.00"}},
    }}}).body["aggregations"]
    buckets = r["h"]["buckets"]
    assert [b["key"] for b in buckets] == list(days(docs))
    # An empty bucket's sum is a gap (skip): its normalized value is null.
    sums = [None if b["doc_count"] == 0 else sum(d["v"] for d in docs if d["day"] == b["key"])
            for b in buckets]
    counts = [sum(1 for d in docs if d["day"] == b["key"]) for b in buckets]
    for b, want in zip(buckets, normalized(method, sums)):
        if want is None:
            assert b["norm"]["value"] is None
        else:
            assert b["norm"]["value"] == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert "value_as_string" not in b["norm"]
    for b, want in zip(buckets, normalized(method, counts)):
        assert want is not None
        assert b["cnorm"]["value"] == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert b["cnorm"]["value_as_string"] == f"{want:.2f}"


def test_normalize_under_terms_and_typed_keys(es, docs):
    r = es.search(index=INDEX, size=0, typed_keys=True, aggs={"t": {"terms": {"field": "tag"}, "aggs": {
        "norm": {"normalize": {"buckets_path": "_count", "method": "percent_of_sum"}}}}}).body
    buckets = r["aggregations"]["sterms#t"]["buckets"]
    total = sum(b["doc_count"] for b in buckets)
    for b in buckets:
        assert b["simple_value#norm"]["value"] == pytest.approx(b["doc_count"] / total)


def test_normalize_errors(es, docs):
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, size=0, aggs={"h": {**HIST, "aggs": {
            "n": {"normalize": {"buckets_path": "_count", "method": "bogus"}}}}})
    assert "invalid method [bogus]" in str(e.value)
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, size=0, aggs={"h": {**HIST, "aggs": {
            "n": {"normalize": {"buckets_path": "_count"}}}}})
    assert "Required [method]" in str(e.value)
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, size=0, aggs={"h": HIST, "n": {"normalize": {
            "buckets_path": "h>_count", "method": "mean"}}})
    assert "must be declared inside of another aggregation" in str(e.value)


def test_cumulative_cardinality(es, docs):
    r = es.search(index=INDEX, size=0, typed_keys=True, aggs={"h": {**HIST, "aggs": {
        "users": {"cardinality": {"field": "user"}},
        "cc": {"cumulative_cardinality": {"buckets_path": "users"}},
        "ns": {"cardinality": {"field": "n"}},
        "ncc": {"cumulative_cardinality": {"buckets_path": "ns", "format": "0.0"}},
    }}}).body["aggregations"]
    seen, seen_n = set(), set()
    buckets = r["histogram#h"]["buckets"]
    assert [b["key"] for b in buckets] == list(days(docs))
    for b in buckets:
        seen |= {d["user"] for d in docs if d["day"] == b["key"]}
        seen_n |= {d["n"] for d in docs if d["day"] == b["key"]}
        assert b["simple_long_value#cc"] == {"value": len(seen)}
        assert b["simple_long_value#ncc"] == {"value": len(seen_n),
                                              "value_as_string": f"{len(seen_n)}.0"}
        assert b["cardinality#users"]["value"] == len({d["user"] for d in docs if d["day"] == b["key"]})
        assert set(b["cardinality#users"]) == {"value"}


def test_cumulative_cardinality_errors(es, docs):
    with pytest.raises(ApiError) as e:
        es.search(index=INDEX, size=0, aggs={"t": {"terms": {"field": "tag"}, "aggs": {
            "u": {"cardinality": {"field": "user"}},
            "cc": {"cumulative_cardinality": {"buckets_path": "u"}}}}})
    assert e.value.status_code == 400
    assert "must have a histogram, date_histogram or auto_date_histogram as parent" in str(e.value)
    with pytest.raises(ApiError) as e:
        es.search(index=INDEX, size=0, aggs={"h": {**HIST, "aggs": {
            "s": {"sum": {"field": "v"}},
            "cc": {"cumulative_cardinality": {"buckets_path": "s.value"}}}}})
    assert e.value.status_code == 400
    assert "buckets_path must reference a cardinality aggregation" in str(e.value)


def test_still_refused(es, docs):
    for kind, body in [("inference", {"model_id": "m", "buckets_path": {"x": "_count"}}),
                       ("moving_avg", {"buckets_path": "_count"})]:
        with pytest.raises(BadRequestError):
            es.search(index=INDEX, size=0, aggs={"h": {**HIST, "aggs": {"p": {kind: body}}}})


def interpolated(values, p):
    """ES 8's TDigest below 20 x compression values: linear interpolation at p/100 * (n - 1)."""
    xs = sorted(values)
    if not xs:
        return None
    i = p / 100 * (len(xs) - 1)
    lo = math.floor(i)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


@pytest.mark.parametrize("window,shift", [(1, 0), (3, 0), (2, 1), (4, 2), (2, -1)])
def test_moving_percentiles(es, docs, window, shift):
    percents = [10.0, 50.0, 99.0]
    r = es.search(index=INDEX, size=0, typed_keys=True, aggs={"h": {**HIST, "aggs": {
        "p": {"percentiles": {"field": "v", "percents": percents}},
        "mp": {"moving_percentiles": {"buckets_path": "p", "window": window, "shift": shift}},
    }}}).body["aggregations"]
    buckets = r["histogram#h"]["buckets"]
    per = [[d["v"] for d in docs if d["day"] == b["key"]] for b in buckets]
    for k, b in enumerate(buckets):
        lo, hi = max(0, min(k - window + shift, len(buckets))), max(0, min(k + shift, len(buckets)))
        if lo >= hi:
            assert "tdigest_percentiles#mp" not in b
            continue
        vals = [v for bucket in per[lo:hi] for v in bucket]
        got = b["tdigest_percentiles#mp"]["values"]
        for p in percents:
            want = interpolated(vals, p)
            key = str(p)
            if want is None:
                assert got[key] is None
            else:
                assert got[key] == pytest.approx(want, rel=1e-9, abs=1e-9), (k, p)


def test_moving_percentiles_keyed_false_and_errors(es, docs):
    r = es.search(index=INDEX, size=0, aggs={"h": {**HIST, "aggs": {
        "p": {"percentiles": {"field": "v", "percents": [50], "keyed": False}},
        "mp": {"moving_percentiles": {"buckets_path": "p", "window": 2}},
    }}}).body["aggregations"]
    buckets = r["h"]["buckets"]
    per = [[d["v"] for d in docs if d["day"] == b["key"]] for b in buckets]
    for k, b in enumerate(buckets[1:], start=1):
        vals = [v for bucket in per[max(0, k - 2):k] for v in bucket]
        [entry] = b["mp"]["values"]
        assert entry["key"] == 50.0
        assert entry["value"] == pytest.approx(interpolated(vals, 50))
    for body in ({"buckets_path": "p"}, {"buckets_path": "p", "window": 0},
                 {"buckets_path": "s", "window": 2}):
        with pytest.raises(BadRequestError):
            es.search(index=INDEX, size=0, aggs={"h": {**HIST, "aggs": {
                "p": {"percentiles": {"field": "v"}}, "s": {"sum": {"field": "v"}},
                "mp": {"moving_percentiles": body}}}})

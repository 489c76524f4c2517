"""`percentiles` with TDigest (the default) and HDR, against oracles computed here in Python
from the documents this file indexes.

TDigest: Elasticsearch 8 keeps every value until 20 * compression values (2000 at the
default 100) and answers with linear interpolation at index p/100 * (n - 1) of the sorted
values, so small sets are checked exactly (to float rounding). Larger sets are merged into
centroids: checked by rank, the answer's rank interval [#(x < v), #(x <= v)] / n within one
percentage point of p (t-digest's documented error at compression 100 is well under that,
smallest at the tails).

HDR: Elasticsearch's DoubleHistogram records `value * 2^k` as an integer, k placing the
smallest positive value in the top half of HdrHistogram's first bucket (2^ceil(log2(2 *
10^digits)) sub-buckets); the answer for p is the highest value equivalent to (in the same
bucket as) the value of rank max(1, round(p/100 * n)), divided back by 2^k.
"""

import math
import random

import pytest
from elasticsearch import ApiError, BadRequestError

from conftest import make_index

INDEX = "pcts"
BIG = "pcts_big"
GROUPS = ["a", "b", "c"]


def _docs():
    rnd = random.Random(7319)
    docs = []
    for i in range(600):
        d = {"group": GROUPS[rnd.randrange(3)], "ts": 1_700_000_000_000 + rnd.randrange(0, 10**9)}
        if rnd.random() < 0.85:
            d["price"] = round(rnd.uniform(0.5, 5000), 3)
        d["qty"] = [rnd.randrange(1, 400) for _ in range(rnd.randrange(0, 3))]
        docs.append((str(i), d))
    return docs


DOCS = _docs()


def _big_docs():
    rnd = random.Random(99)
    return [(str(i), {"lat": rnd.lognormvariate(3, 1)}) for i in range(6000)]


BIG_DOCS = _big_docs()


@pytest.fixture(scope="module")
def pcts(es):
    body = {"settings": {"number_of_shards": 3}, "mappings": {"properties": {
        "group": {"type": "keyword"}, "price": {"type": "double"},
        "qty": {"type": "integer"}, "ts": {"type": "date"}}}}
    return make_index(es, INDEX, body, DOCS)


@pytest.fixture(scope="module")
def big(es):
    body = {"settings": {"number_of_shards": 2},
            "mappings": {"properties": {"lat": {"type": "double"}}}}
    return make_index(es, BIG, body, BIG_DOCS)


def search(es, index, aggs, query=None, typed_keys=False):
    body = {"size": 0, "aggs": aggs}
    if query is not None:
        body["query"] = query
    return es.search(index=index, body=body, typed_keys=typed_keys).body["aggregations"]


def interpolated(values, p):
    xs = sorted(values)
    idx = p / 100.0 * (len(xs) - 1)
    lo = math.floor(idx)
    if lo + 1 >= len(xs):
        return xs[-1]
    return xs[lo] + (idx - lo) * (xs[lo + 1] - xs[lo])


def close(a, b):
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def hdr_percentile(values, p, digits=3):
    sub_buckets = 2 ** math.ceil(math.log2(2 * 10 ** digits))
    half = sub_buckets // 2
    smallest = min(v for v in values if v > 0)
    ratio = 2.0 ** (int(math.log2(half)) - math.floor(math.log2(smallest)))
    ints = sorted(int(v * ratio) for v in values)
    rank = max(1, int(p / 100.0 * len(ints) + 0.5))
    x = ints[rank - 1]
    unit = 1 if x < sub_buckets else 2 ** (math.floor(math.log2(x)) - int(math.log2(half)))
    return (x - x % unit + unit - 1) / ratio


def prices(docs, pred=lambda d: True, missing=None):
    out = []
    for _, d in docs:
        if not pred(d):
            continue
        if "price" in d:
            out.append(d["price"])
        elif missing is not None:
            out.append(missing)
    return out


def test_tdigest_exact_below_two_thousand_values(es, pcts):
    got = search(es, INDEX, {"p": {"percentiles": {"field": "price"}}})["p"]["values"]
    vals = prices(DOCS)
    assert len(vals) < 2000
    assert list(got) == ["1.0", "5.0", "25.0", "50.0", "75.0", "95.0", "99.0"]
    for k, v in got.items():
        assert close(v, interpolated(vals, float(k))), k


def test_tdigest_options_missing_multi_valued_and_query(es, pcts):
    got = search(es, INDEX, {
        "m": {"percentiles": {"field": "price", "percents": [0, 10, 100], "missing": 10000,
                              "keyed": False, "tdigest": {"compression": 200}}},
        "q": {"percentiles": {"field": "qty", "percents": [33.3, 50],
                              "tdigest": {"execution_hint": "high_accuracy"}}},
    }, query={"term": {"group": "a"}})
    in_a = lambda d: d["group"] == "a"
    vals = prices(DOCS, in_a, missing=10000.0)
    assert [e["key"] for e in got["m"]["values"]] == [0.0, 10.0, 100.0]
    for e in got["m"]["values"]:
        assert close(e["value"], interpolated(vals, e["key"]))
    qty = [q for _, d in DOCS if in_a(d) for q in d["qty"]]
    # high_accuracy builds centroids from the first value: within t-digest's error.
    for k, v in got["q"]["values"].items():
        check_rank(v, qty, float(k), tol=0.02)


def check_rank(v, values, p, tol=0.01):
    xs = sorted(values)
    n = len(xs)
    lo = sum(1 for x in xs if x < v) / n
    hi = sum(1 for x in xs if x <= v) / n
    assert lo - tol <= p / 100.0 <= hi + tol, (p, v, lo, hi)


def test_tdigest_large_set_within_error(es, big):
    got = search(es, BIG, {"p": {"percentiles": {"field": "lat", "percents": [1, 10, 50, 90, 99, 99.9]}}})
    vals = [d["lat"] for _, d in BIG_DOCS]
    for k, v in got["p"]["values"].items():
        # Each shard feeds one digest and the reduce re-adds the shards' centroids into a new
        # one (ES's TDigestState reduce). With ES's K_2 scale (normalizer 4 ln(n/100) + 24) a
        # centroid near the median may hold about q(1-q) * 0.38 of a 3000-value shard, ~9%, so
        # the answer interpolated inside it may miss the median's rank by a couple of points
        # (2 shards give 0.4825 here); the tails' centroids are small and stay within 1%.
        q = float(k) / 100.0
        check_rank(v, vals, float(k), tol=0.025 if 0.25 <= q <= 0.75 else 0.01)
    ranks = search(es, BIG, {"r": {"percentile_ranks": {"field": "lat", "values": [5, 20, 100]}}})
    for k, v in ranks["r"]["values"].items():
        x = float(k)
        lo = 100.0 * sum(1 for y in vals if y < x) / len(vals)
        assert abs(v - lo) <= 1.0, (k, v, lo)


def test_under_buckets_typed_and_dates(es, pcts):
    got = search(es, INDEX, {
        "t": {"terms": {"field": "group"}, "aggs": {
            "p": {"percentiles": {"field": "price", "percents": [50, 90]}},
            "h": {"percentiles": {"field": "price", "percents": [50], "hdr": {}}},
        }},
        "d": {"percentiles": {"field": "ts", "percents": [50], "format": "yyyy-MM-dd"}},
    }, typed_keys=True)
    for b in got["sterms#t"]["buckets"]:
        vals = prices(DOCS, lambda d: d["group"] == b["key"])
        for k, v in b["tdigest_percentiles#p"]["values"].items():
            assert close(v, interpolated(vals, float(k)))
        assert close(b["hdr_percentiles#h"]["values"]["50.0"], hdr_percentile(vals, 50.0))
    ts = [d["ts"] for _, d in DOCS]
    d = got["tdigest_percentiles#d"]["values"]
    assert close(d["50.0"], interpolated(ts, 50.0))
    import datetime
    want = datetime.datetime.fromtimestamp(d["50.0"] / 1000, datetime.timezone.utc)
    assert d["50.0_as_string"] == want.strftime("%Y-%m-%d")


def test_hdr_values(es, pcts):
    got = search(es, INDEX, {
        "h3": {"percentiles": {"field": "price", "hdr": {}}},
        "h1": {"percentiles": {"field": "qty", "percents": [0.5, 50, 99.9],
                               "hdr": {"number_of_significant_value_digits": 1}}},
        "empty": {"percentiles": {"field": "nope", "hdr": {}}},
    }, typed_keys=True)
    vals = prices(DOCS)
    for k, v in got["hdr_percentiles#h3"]["values"].items():
        assert close(v, hdr_percentile(vals, float(k))), k
    qty = [q for _, d in DOCS for q in d["qty"]]
    for k, v in got["hdr_percentiles#h1"]["values"].items():
        assert close(v, hdr_percentile(qty, float(k), digits=1)), k
    assert all(v is None for v in got["hdr_percentiles#empty"]["values"].values())


def test_hdr_refuses_negative_values(es, pcts):
    make_index(es, "pcts_neg", {"mappings": {"properties": {"n": {"type": "long"}}}},
               [("1", {"n": -10}), ("2", {"n": 5})])
    with pytest.raises(ApiError) as ei:
        es.search(index="pcts_neg", size=0, aggs={"p": {"percentiles": {"field": "n", "hdr": {}}}})
    assert "array_index_out_of_bounds_exception" in str(ei.value.body)


@pytest.mark.parametrize("agg, fragment", [
    ({"hdr": {"number_of_significant_value_digits": 6}},
     "[numberOfSignificantValueDigits] must be between 0 and 5"),
    ({"hdr": {"number_of_significant_value_digits": -1}},
     "[numberOfSignificantValueDigits] must be between 0 and 5"),
    ({"tdigest": {"compression": -1}}, "[compression] must be greater than or equal to 0"),
    ({"tdigest": {"execution_hint": "fastest"}}, "Invalid execution_hint [fastest]"),
    ({"hdr": {}, "tdigest": {}}, "cannot use both"),
    ({"hdr": {"nope": 1}}, "unknown field [nope]"),
])
def test_parameter_errors(es, pcts, agg, fragment):
    with pytest.raises(BadRequestError) as ei:
        es.search(index=INDEX, size=0, aggs={"p": {"percentiles": {"field": "price", **agg}}})
    assert fragment in str(ei.value.body)


def test_median_absolute_deviation(es, pcts):
    # ES keeps every value below 20 * 1000 (MAD's default compression): exact.
    got = search(es, INDEX, {
        "m": {"median_absolute_deviation": {"field": "price", "format": "0.00"}},
        "t": {"terms": {"field": "group"}, "aggs": {
            "m": {"median_absolute_deviation": {"field": "price", "missing": 1}}}},
        "none": {"median_absolute_deviation": {"field": "nope"}},
    }, typed_keys=True)

    def mad(vals):
        med = interpolated(vals, 50)
        return interpolated([abs(v - med) for v in vals], 50)

    m = got["median_absolute_deviation#m"]
    assert close(m["value"], mad(prices(DOCS)))
    assert m["value_as_string"] == f"{m['value']:.2f}"
    for b in got["sterms#t"]["buckets"]:
        vals = prices(DOCS, lambda d: d["group"] == b["key"], missing=1.0)
        assert close(b["median_absolute_deviation#m"]["value"], mad(vals))
    assert got["median_absolute_deviation#none"] == {"value": None}


def test_boxplot(es, pcts):
    got = search(es, INDEX, {"b": {"boxplot": {"field": "price"}},
                             "q": {"boxplot": {"field": "qty", "compression": 200}}},
                 query={"term": {"group": "b"}}, typed_keys=True)
    for name, vals in (("b", prices(DOCS, lambda d: d["group"] == "b")),
                       ("q", [q for _, d in DOCS if d["group"] == "b" for q in d["qty"]])):
        box = got["boxplot#" + name]
        q1, q2, q3 = (interpolated(vals, p) for p in (25, 50, 75))
        iqr = q3 - q1
        want = {"min": min(vals), "max": max(vals), "q1": q1, "q2": q2, "q3": q3,
                "lower": min(v for v in vals if v >= q1 - 1.5 * iqr),
                "upper": max(v for v in vals if v <= q3 + 1.5 * iqr)}
        assert set(box) == set(want)
        for k, v in want.items():
            assert close(box[k], v), (name, k)


def test_digest_metric_errors(es, pcts):
    for agg in ({"median_absolute_deviation": {"field": "price", "compression": -1}},
                {"boxplot": {"field": "group"}},
                {"boxplot": {"field": "price", "execution_hint": "nope"}},
                {"median_absolute_deviation": {"field": "price", "bogus": 1}}):
        with pytest.raises(BadRequestError):
            es.search(index=INDEX, size=0, aggs={"x": agg})

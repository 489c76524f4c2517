"""`percentile_ranks`: the percentage of a field's values at or below each requested value.

Expected ranks are computed here, in Python, from the documents this file indexes, each value
of a multi-valued field counting once. Elasticsearch answers with its TDigest's cdf: below
20 * compression (2000) values the digest keeps every value and the rank is ES's `Dist.cdf`
(`es_rank` below: values below v, half of those equal to v, between two values a linear share
of the gap, the smallest value counting half once v is above it), checked to float rounding.
Above that the digest merges values into centroids and the rank is checked against the exact
interval [#(x < v), #(x <= v)] / n widened by one percentage point (t-digest's rank error at
compression 100 is well under that).
"""

import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "pranks"
GROUPS = ["a", "b", "c", "d"]
VALUES = [-50.0, 0.0, 12.5, 250.0, 999.0, 5000.0]


def _docs():
    rnd = random.Random(20240611)
    docs = []
    for i in range(3000):
        d = {"group": GROUPS[rnd.randrange(len(GROUPS))]}
        if rnd.random() < 0.9:
            # Mixed scales, negatives and many exact ties on the requested values.
            d["price"] = rnd.choice(
                [round(rnd.uniform(-100, 1000), 2), float(rnd.randrange(-2, 3) * 125), 12.5]
            )
        d["sizes"] = [rnd.randrange(0, 20) for _ in range(rnd.randrange(0, 4))]
        docs.append((str(i), d))
    return docs


DOCS = _docs()


@pytest.fixture(scope="module")
def pranks(es):
    body = {
        "settings": {"number_of_shards": 3},
        "mappings": {"properties": {
            "group": {"type": "keyword"},
            "price": {"type": "double"},
            "sizes": {"type": "integer"},
        }},
    }
    return make_index(es, INDEX, body, DOCS)


def es_rank(values, v):
    """ES's exact-phase TDigest cdf, in percent."""
    xs = sorted(values)
    n = len(xs)
    if v < xs[0]:
        return 0.0
    below = sum(1 for x in xs if x < v)
    equal = sum(1 for x in xs if x == v)
    first = 0.5 if xs[0] < v else 0.0
    if equal:
        r = n - 0.5 * equal if xs[-1] == v else below - first + 0.5 * equal
    else:
        above = [i for i, x in enumerate(xs) if x > v]
        if not above:
            r = n
        else:
            i = above[0]
            r = below - first + (v - xs[i - 1]) / (xs[i] - xs[i - 1])
    return 100.0 * r / n


def exact_rank(values, v):
    """The rank ES's answer approximates: exact below 2000 values, within the interval above."""
    if len(values) < 2000:
        return es_rank(values, v)
    return None


def check_rank(got, values, v):
    want = exact_rank(values, v)
    if want is not None:
        assert close(got, want), (v, got, want)
        return
    n = len(values)
    lo = 100.0 * sum(1 for x in values if x < v) / n
    hi = 100.0 * sum(1 for x in values if x <= v) / n
    assert lo - 1.0 <= got <= hi + 1.0, (v, got, lo, hi)


def close(a, b):
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def search(es, aggs, query=None):
    body = {"size": 0, "aggs": aggs}
    if query is not None:
        body["query"] = query
    return es.search(index=INDEX, body=body).body["aggregations"]


def key(v):
    # Java's String.valueOf(double) for the values used here.
    return f"{v:.1f}" if v != 12.5 else "12.5"


def prices(docs, missing=None):
    out = []
    for _, d in docs:
        if "price" in d:
            out.append(d["price"])
        elif missing is not None:
            out.append(missing)
    return out


def test_top_level_keyed(es, pranks):
    got = search(es, {"r": {"percentile_ranks": {"field": "price", "values": VALUES[::-1]}}})
    values = got["r"]["values"]
    # Keyed by the value, in ascending order of the values.
    assert list(values) == [key(v) for v in VALUES]
    all_prices = prices(DOCS)
    assert len(all_prices) >= 2000
    for v in VALUES:
        check_rank(values[key(v)], all_prices, v)


def test_not_keyed_and_clamped(es, pranks):
    got = search(es, {"r": {"percentile_ranks": {
        "field": "price", "values": [-1000, 12.5, 1e6], "keyed": False}}})
    all_prices = prices(DOCS)
    assert [e["key"] for e in got["r"]["values"]] == [-1000.0, 12.5, 1e6]
    assert got["r"]["values"][0]["value"] == 0.0
    check_rank(got["r"]["values"][1]["value"], all_prices, 12.5)
    assert got["r"]["values"][2]["value"] == 100.0
    assert all(set(e) == {"key", "value"} for e in got["r"]["values"])


def test_missing(es, pranks):
    got = search(es, {"r": {"percentile_ranks": {
        "field": "price", "values": VALUES, "missing": 100}}})
    with_missing = prices(DOCS, missing=100.0)
    assert len(with_missing) == len(DOCS)
    for v in VALUES:
        check_rank(got["r"]["values"][key(v)], with_missing, v)


def test_multi_valued_counts_every_value(es, pranks):
    got = search(es, {"r": {"percentile_ranks": {"field": "sizes", "values": [0, 7, 19]}}})
    sizes = [s for _, d in DOCS for s in d["sizes"]]
    for v in (0, 7, 19):
        check_rank(got["r"]["values"][f"{v}.0"], sizes, v)


def test_under_terms_with_format_and_query(es, pranks):
    query = {"range": {"price": {"gte": 0}}}
    got = search(es, {"t": {"terms": {"field": "group"}, "aggs": {
        "r": {"percentile_ranks": {"field": "price", "values": [12.5, 250], "format": "0.00"}},
        "l": {"percentile_ranks": {"field": "price", "values": [250], "keyed": False}},
    }}}, query=query)
    buckets = got["t"]["buckets"]
    assert sorted(b["key"] for b in buckets) == GROUPS
    for b in buckets:
        vals = [d["price"] for _, d in DOCS
                if d["group"] == b["key"] and "price" in d and d["price"] >= 0]
        assert b["doc_count"] == len(vals)
        for v in (12.5, 250.0):
            assert len(vals) < 2000
            r = exact_rank(vals, v)
            assert close(b["r"]["values"][key(v)], r)
            assert b["r"]["values"][key(v) + "_as_string"] == f"{b['r']['values'][key(v)]:.2f}"
        assert close(b["l"]["values"][0]["value"], exact_rank(vals, 250.0))


def test_empty_bucket_renders_null(es, pranks):
    got = search(es, {"f": {"filter": {"term": {"group": "nope"}}, "aggs": {
        "r": {"percentile_ranks": {"field": "price", "values": [1, 2], "format": "0.0"}},
        "l": {"percentile_ranks": {"field": "price", "values": [1], "keyed": False}},
    }}})
    assert got["f"]["doc_count"] == 0
    assert got["f"]["r"] == {"values": {"1.0": None, "2.0": None}}
    assert got["f"]["l"] == {"values": [{"key": 1.0, "value": None}]}


def test_typed_keys_and_pipeline(es, pranks):
    body = {"size": 0, "aggs": {
        "t": {"terms": {"field": "group"},
              "aggs": {"r": {"percentile_ranks": {"field": "price", "values": [250]}}}},
        "best": {"max_bucket": {"buckets_path": "t>r[250.0]"}},
        "mean": {"avg_bucket": {"buckets_path": "t>r.250"}},
    }}
    got = es.search(index=INDEX, body=body, typed_keys=True).body["aggregations"]
    ranks = {}
    for b in got["sterms#t"]["buckets"]:
        assert set(b) >= {"tdigest_percentile_ranks#r"}
        vals = [d["price"] for _, d in DOCS if d["group"] == b["key"] and "price" in d]
        ranks[b["key"]] = exact_rank(vals, 250.0)
    best = max(ranks.values())
    assert close(got["bucket_metric_value#best"]["value"], best)
    assert got["bucket_metric_value#best"]["keys"] == [k for k, r in ranks.items() if r == best]
    assert close(got["simple_value#mean"]["value"], sum(ranks.values()) / len(ranks))


def _error(es, agg):
    with pytest.raises(BadRequestError) as ei:
        es.search(index=INDEX, size=0, aggs={"r": {"percentile_ranks": agg}})
    return ei.value.body["error"]


def test_values_required(es, pranks):
    err = _error(es, {"field": "price"})
    assert err["type"] == "x_content_parse_exception"
    assert err["reason"] == "Failed to build [percentile_ranks] after last required field arrived"
    assert err["caused_by"] == {"type": "illegal_argument_exception",
                                "reason": "[values] must not be null: [r]"}
    err = _error(es, {"field": "price", "values": []})
    assert err["caused_by"]["reason"] == "[values] must not be an empty array: [r]"


def test_hdr_ranks(es, pranks):
    # HDR counts every value in the histogram buckets up to the one holding v: at least the
    # values <= v, at most those within the bucket's width (a relative 10^-digits) above it.
    query = {"range": {"price": {"gte": 0}}}
    got = search(es, {"r": {"percentile_ranks": {
        "field": "price", "values": [12.5, 250, 999], "hdr": {"number_of_significant_value_digits": 2}}}},
        query=query)
    vals = [d["price"] for _, d in DOCS if "price" in d and d["price"] >= 0]
    n = len(vals)
    for v in (12.5, 250.0, 999.0):
        lo = 100.0 * sum(1 for x in vals if x <= v) / n
        hi = 100.0 * sum(1 for x in vals if x <= v * 1.02) / n
        assert lo - 1e-9 <= got["r"]["values"][key(v)] <= hi + 1e-9, v
    typed = es.search(index=INDEX, size=0, typed_keys=True, query=query,
                      aggs={"r": {"percentile_ranks": {"field": "price", "values": [1], "hdr": {}}}})
    assert "hdr_percentile_ranks#r" in typed.body["aggregations"]


def test_refused_options(es, pranks):
    # Not built: refused, never ignored (scripts are built: test_agg_value_sources.py).
    assert _error(es, {"field": "price", "values": [1],
                       "hdr": {"number_of_significant_value_digits": 6}})["type"] \
        == "illegal_argument_exception"
    assert _error(es, {"field": "price", "values": [1], "percents": [1]})["type"] \
        in ("parsing_exception", "x_content_parse_exception")
    assert _error(es, {"field": "group", "values": [1]})["root_cause"][0]["type"] \
        == "illegal_argument_exception"
    # `tdigest.compression` is validated as `percentiles` validates it.
    assert _error(es, {"field": "price", "values": [1], "tdigest": {"compression": -1}})["type"] \
        == "illegal_argument_exception"
    ok = search(es, {"r": {"percentile_ranks": {
        "field": "price", "values": [0], "tdigest": {"compression": 200}}}})
    check_rank(ok["r"]["values"]["0.0"], prices(DOCS), 0.0)

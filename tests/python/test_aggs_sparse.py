"""Aggregations over missing and multi-valued fields (the small `sparse`
index): `missing` parameter, value_count of arrays, histogram/terms on
partially present fields."""

import oracle


def aggs(es, name, aggs, query=None):
    body = {"size": 0, "aggs": aggs}
    if query is not None:
        body["query"] = query
    return es.search(index=name, body=body).body["aggregations"]


def test_metrics_ignore_missing(es, sparse):
    name, docs = sparse
    a = aggs(es, name, {"avg": {"avg": {"field": "score"}}, "sum": {"sum": {"field": "price"}},
                        "vc": {"value_count": {"field": "score"}}, "st": {"stats": {"field": "price"}}})
    scores = [d["score"] for _, d in docs if "score" in d]
    prices = [d["price"] for _, d in docs if "price" in d]
    oracle.assert_float(a["avg"]["value"], sum(scores) / len(scores), "avg")
    oracle.assert_float(a["sum"]["value"], oracle.fsum(prices), "sum", scale=oracle.fsum(abs(p) for p in prices))
    assert a["vc"]["value"] == len(scores)
    assert a["st"]["count"] == len(prices) and a["st"]["min"] == min(prices) and a["st"]["max"] == max(prices)


def test_metrics_missing_parameter(es, sparse):
    name, docs = sparse
    a = aggs(es, name, {"avg": {"avg": {"field": "score", "missing": 100}},
                        "min": {"min": {"field": "price", "missing": -1000}},
                        "vc": {"value_count": {"field": "score", "missing": 0}}})
    scores = [d.get("score", 100) for _, d in docs]
    oracle.assert_float(a["avg"]["value"], sum(scores) / len(scores), "avg")
    assert a["min"]["value"] == -1000
    assert a["vc"]["value"] == len(docs)


def test_value_count_counts_values_of_arrays(es, sparse):
    name, docs = sparse
    a = aggs(es, name, {"vc": {"value_count": {"field": "tags"}}, "card": {"cardinality": {"field": "tags"}}})
    assert a["vc"]["value"] == sum(len(d.get("tags", [])) for _, d in docs)
    assert a["card"]["value"] == len({t for _, d in docs for t in d.get("tags", [])})


def test_histogram_missing_parameter(es, sparse):
    name, docs = sparse
    a = aggs(es, name, {"h": {"histogram": {"field": "score", "interval": 5, "missing": -5}}})
    vals = [d.get("score", -5) for _, d in docs]
    counts = oracle.counts_by((v // 5) * 5 for v in vals)
    keys = range(min(counts), max(counts) + 5, 5)
    assert [(b["key"], b["doc_count"]) for b in a["h"]["buckets"]] == [(float(k), counts.get(k, 0)) for k in keys]


def test_date_histogram_on_sparse_dates(es, sparse):
    name, docs = sparse
    a = aggs(es, name, {"h": {"date_histogram": {"field": "day", "calendar_interval": "month"}}})
    months = oracle.counts_by(d["day"][:7] for _, d in docs if "day" in d)
    got = [(b["key_as_string"][:7], b["doc_count"]) for b in a["h"]["buckets"]]
    assert got == sorted(months.items())
    # the field's format (yyyy-MM-dd) renders the keys
    assert all(len(b["key_as_string"]) == 10 for b in a["h"]["buckets"])


def test_terms_sub_agg_on_missing_bucket(es, sparse):
    name, docs = sparse
    a = aggs(es, name, {"t": {"terms": {"field": "score", "missing": -1, "size": 100, "order": {"_key": "asc"}},
                              "aggs": {"p": {"sum": {"field": "price"}}}}})
    b0 = a["t"]["buckets"][0]
    assert b0["key"] == -1
    miss = [d for _, d in docs if "score" not in d]
    assert b0["doc_count"] == len(miss)
    oracle.assert_float(b0["p"]["value"], oracle.fsum(d.get("price", 0.0) for d in miss), "sum")

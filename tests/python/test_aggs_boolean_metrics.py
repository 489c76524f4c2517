"""`min`, `max`, `avg`, `sum`, `stats` and `extended_stats` on a boolean field: ES 8 reads
booleans as numbers 0/1 (the BOOLEAN values source) and prints them with
`DocValueFormat.BOOLEAN` ("true" for any value but 0). Expected values are computed here
from the documents this file indexes."""

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "bool_metrics"
DOCS = [{"g": "a", "b": True}, {"g": "a", "b": False}, {"g": "a", "b": [True, True]},
        {"g": "b", "b": False}, {"g": "b"}, {"g": "c"}, {"g": "a", "b": True}]


@pytest.fixture(scope="module")
def bools(es):
    body = {"settings": {"number_of_shards": 2}, "mappings": {"properties": {
        "g": {"type": "keyword"}, "b": {"type": "boolean"}}}}
    return make_index(es, INDEX, body, [(str(i), d) for i, d in enumerate(DOCS)])


def values(docs, missing=None):
    out = []
    for d in docs:
        v = d.get("b", missing)
        if v is None:
            continue
        out.extend(int(x) for x in (v if isinstance(v, list) else [v]))
    return out


def s(x):
    return "true" if x != 0 else "false"


def check(r, vals):
    assert r["mn"] == {"value": float(min(vals)), "value_as_string": s(min(vals))}
    assert r["mx"] == {"value": float(max(vals)), "value_as_string": s(max(vals))}
    avg = sum(vals) / len(vals)
    assert r["a"]["value"] == pytest.approx(avg) and r["a"]["value_as_string"] == s(avg)
    assert r["s"] == {"value": float(sum(vals)), "value_as_string": s(sum(vals))}
    st = r["st"]
    assert (st["count"], st["min"], st["max"], st["sum"]) == (len(vals), min(vals), max(vals), sum(vals))
    assert st["min_as_string"] == s(min(vals)) and st["max_as_string"] == s(max(vals))
    assert st["avg_as_string"] == s(avg) and st["sum_as_string"] == s(sum(vals))


AGGS = {"mn": {"min": {"field": "b"}}, "mx": {"max": {"field": "b"}}, "a": {"avg": {"field": "b"}},
        "s": {"sum": {"field": "b"}}, "st": {"stats": {"field": "b"}}}


def test_metrics_on_a_boolean_field(es, bools):
    r = es.search(index=INDEX, size=0, aggs=AGGS).body["aggregations"]
    check(r, values(DOCS))


def test_missing_and_under_buckets(es, bools):
    aggs = {k: {t: {**b, "missing": True}} for k, v in AGGS.items() for t, b in v.items()}
    r = es.search(index=INDEX, size=0, aggs=aggs).body["aggregations"]
    check(r, values(DOCS, missing=True))
    r = es.search(index=INDEX, size=0, aggs={"g": {"terms": {"field": "g", "order": {"a": "desc"}},
                                                   "aggs": AGGS}}).body["aggregations"]
    for b in r["g"]["buckets"]:
        vals = values([d for d in DOCS if d["g"] == b["key"]])
        if vals:
            check(b, vals)
        else:
            assert b["mn"] == {"value": None} and b["a"] == {"value": None}
            assert b["s"] == {"value": 0.0, "value_as_string": "false"}
    avgs = [b["a"]["value"] for b in r["g"]["buckets"] if b["a"]["value"] is not None]
    assert avgs == sorted(avgs, reverse=True)


def test_errors(es, bools):
    for agg in ({"max": {"field": "b", "format": "0.0"}}, {"avg": {"field": "b", "missing": 1}}):
        with pytest.raises(BadRequestError):
            es.search(index=INDEX, size=0, aggs={"x": agg})

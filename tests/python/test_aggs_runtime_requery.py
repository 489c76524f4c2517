"""Sub-aggregations that re-read their bucket (`top_hits`, `percentiles`, `cardinality`)
under `range` and `terms` buckets of a runtime field: each bucket's documents are those
whose runtime values fall in it. Expected values are computed here from the documents."""

import pytest

from conftest import make_index

INDEX = "runtime_requery"
DOCS = [{"v": v, "k": f"k{v % 3}"} for v in [1, 4, 9, 2, 7, 3, 8, 5, 6, 10]]
RUNTIME = {"r": {"type": "long", "script": {"source": "emit(doc['v'].value * 10)"}},
           "rk": {"type": "keyword", "script": {"source": "emit(doc['k'].value)"}}}
SUBS = {"h": {"top_hits": {"size": 100, "_source": False}},
        "p": {"percentiles": {"field": "v", "percents": [50]}},
        "c": {"cardinality": {"field": "v"}}}


@pytest.fixture(scope="module")
def ix(es):
    body = {"settings": {"number_of_shards": 2}, "mappings": {"properties": {
        "v": {"type": "long"}, "k": {"type": "keyword"}}}}
    return make_index(es, INDEX, body, [(str(i), d) for i, d in enumerate(DOCS)])


def median(xs):
    xs = sorted(xs)
    i = 0.5 * (len(xs) - 1)
    lo = int(i)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def check(b, members):
    assert b["doc_count"] == len(members)
    assert sorted(h["_id"] for h in b["h"]["hits"]["hits"]) == sorted(str(i) for i, _ in members)
    assert b["p"]["values"]["50.0"] == pytest.approx(median([d["v"] for _, d in members]))
    assert b["c"]["value"] == len({d["v"] for _, d in members})


def test_range_and_terms_on_runtime_fields(es, ix):
    r = es.search(index=INDEX, size=0, runtime_mappings=RUNTIME, aggs={
        "rg": {"range": {"field": "r", "ranges": [{"to": 35}, {"from": 35, "to": 75}, {"from": 75}]},
               "aggs": SUBS},
        "t": {"terms": {"field": "rk"}, "aggs": SUBS}}).body["aggregations"]
    docs = list(enumerate(DOCS))
    bounds = [(None, 35), (35, 75), (75, None)]
    for b, (lo, hi) in zip(r["rg"]["buckets"], bounds):
        check(b, [(i, d) for i, d in docs
                  if (lo is None or d["v"] * 10 >= lo) and (hi is None or d["v"] * 10 < hi)])
    for b in r["t"]["buckets"]:
        check(b, [(i, d) for i, d in docs if d["k"] == b["key"]])

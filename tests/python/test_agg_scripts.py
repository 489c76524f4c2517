"""Scripts in aggregations: `script` instead of `field` (the script's values) and beside it
(a value script: `_value` is each of the field's values), with `params` and `doc[...]`, in
terms, histogram and metric aggregations at any depth; answers computed here from the
indexed documents."""

import random
from collections import Counter, defaultdict

import pytest
from elasticsearch import ApiError

import conftest

INDEX = "agg_scripts"
MAPPING = {"properties": {"a": {"type": "long"}, "x": {"type": "double"},
                          "tag": {"type": "keyword"}}}


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(5)
    docs = {str(i): {"a": rng.randrange(0, 20), "x": rng.randrange(0, 40) / 4,
                     "tag": rng.choice(["p", "q", "r"])} for i in range(70)}
    conftest.make_index(es, INDEX, {"settings": {"number_of_shards": 2}, "mappings": MAPPING},
                        list(docs.items()))
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body):
    return es.search(index=INDEX, body=dict(body, size=0)).body["aggregations"]


def ranked(counter, size=10):
    return [(k, c) for k, c in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:size]]


def test_metric_scripts_and_value_scripts(es, docs):
    a = search(es, {"query": {"range": {"a": {"gte": 4}}}, "aggs": {
        "avg": {"avg": {"script": {"source": "doc['a'].value * params.k", "params": {"k": 3}}}},
        "sum": {"sum": {"field": "x", "script": "_value * 2"}},
        "min": {"min": {"script": "doc['a'].value - doc['x'].value"}},
        "max": {"max": {"field": "a", "script": {"source": "_value + params.d",
                                                  "params": {"d": 0.5}}}},
        "stats": {"stats": {"script": "doc['a'].value % 7"}},
        "count": {"value_count": {"script": "doc['tag'].value"}},
        "card": {"cardinality": {"script": "doc['tag'].value + doc['a'].value"}}}})
    sel = [d for d in docs.values() if d["a"] >= 4]
    assert a["avg"]["value"] == pytest.approx(sum(3 * d["a"] for d in sel) / len(sel))
    assert a["sum"]["value"] == pytest.approx(sum(2 * d["x"] for d in sel))
    assert a["min"]["value"] == pytest.approx(min(d["a"] - d["x"] for d in sel))
    assert a["max"]["value"] == pytest.approx(max(d["a"] + 0.5 for d in sel))
    mods = [d["a"] % 7 for d in sel]
    assert a["stats"]["count"] == len(mods) and a["stats"]["sum"] == sum(mods)
    assert a["stats"]["min"] == min(mods) and a["stats"]["max"] == max(mods)
    assert a["count"]["value"] == len(sel)
    assert a["card"]["value"] == len({d["tag"] + str(d["a"]) for d in sel})


def test_terms_and_histogram_scripts_with_sub_aggregations(es, docs):
    a = search(es, {"aggs": {
        "tens": {"terms": {"field": "a", "script": "_value * 10", "size": 50},
                 "aggs": {"s": {"sum": {"script": "doc['x'].value * 4"}}}},
        "labels": {"terms": {"script": "doc['tag'].value + '-' + (doc['a'].value % 3)",
                             "size": 5}},
        "h": {"histogram": {"script": "doc['a'].value + doc['x'].value", "interval": 5},
              "aggs": {"t": {"terms": {"script": "doc['tag'].value"}}}}}})
    tens = defaultdict(list)
    for d in docs.values():
        tens[d["a"] * 10].append(d)
    want = ranked(Counter({k: len(v) for k, v in tens.items()}), 50)
    assert [(b["key"], b["doc_count"]) for b in a["tens"]["buckets"]] == want
    for b in a["tens"]["buckets"]:
        assert b["s"]["value"] == pytest.approx(sum(4 * d["x"] for d in tens[b["key"]]))
    labels = Counter(f"{d['tag']}-{d['a'] % 3}" for d in docs.values())
    assert [(b["key"], b["doc_count"]) for b in a["labels"]["buckets"]] == ranked(labels, 5)
    hist = defaultdict(list)
    for d in docs.values():
        hist[(d["a"] + d["x"]) // 5 * 5].append(d)
    keys = [b["key"] for b in a["h"]["buckets"]]
    assert keys == [float(k) for k in range(int(min(hist)), int(max(hist)) + 5, 5)]
    for b in a["h"]["buckets"]:
        g = hist.get(b["key"], [])
        assert b["doc_count"] == len(g)
        assert [(t["key"], t["doc_count"]) for t in b["t"]["buckets"]] == \
            ranked(Counter(d["tag"] for d in g))


def test_range_scripts(es, docs):
    a = search(es, {"aggs": {
        "r": {"range": {"script": "doc['a'].value + doc['x'].value",
                        "ranges": [{"to": 10}, {"from": 5, "to": 20}, {"from": 20}]}},
        "v": {"range": {"field": "a", "script": "_value * 2",
                        "ranges": [{"key": "low", "to": 10}, {"key": "high", "from": 10}]}}}})
    def count(lo, hi, f):
        return sum(1 for d in docs.values()
                   if (lo is None or f(d) >= lo) and (hi is None or f(d) < hi))
    s = lambda d: d["a"] + d["x"]
    assert [b["doc_count"] for b in a["r"]["buckets"]] == \
        [count(None, 10, s), count(5, 20, s), count(20, None, s)]
    t = lambda d: 2 * d["a"]
    assert [(b["key"], b["doc_count"]) for b in a["v"]["buckets"]] == \
        [("low", count(None, 10, t)), ("high", count(10, None, t))]


def test_value_type_types_script_keys(es, docs):
    a = search(es, {"aggs": {"t": {"terms": {"script": "doc['a'].value % 4",
                                             "value_type": "long"}}}})
    assert [(b["key"], b["doc_count"]) for b in a["t"]["buckets"]] == \
        ranked(Counter(d["a"] % 4 for d in docs.values()))


def test_script_errors(es, docs):
    with pytest.raises(ApiError) as ei:
        search(es, {"aggs": {"t": {"avg": {"script": "doc['a'].value +"}}}})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["root_cause"][0]["type"] == "script_exception"
    with pytest.raises(ApiError) as ei:
        search(es, {"aggs": {"t": {"terms": {"script": "1", "value_type": "nope"}}}})
    assert ei.value.meta.status == 400
    # `_value` exists only in aggregation scripts
    with pytest.raises(ApiError) as ei:
        es.search(index=INDEX, body={"query": {"script": {"script": "_value > 1"}}})
    assert ei.value.body["error"]["root_cause"][0]["type"] == "script_exception"

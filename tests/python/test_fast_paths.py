"""Answers of the engine's shortcuts, checked against a Python oracle on an index built to
exercise them: several segments, deleted and updated documents, multi-valued and missing
values.

- terms buckets counted from document frequencies (query matching every document of a
  segment: match_all, or a range covering the segment),
- ranges answered from the sorted points index (sparse ranges, their counts, ranges inside
  conjunctions, date histograms over them).
"""

import collections
import random

import pytest

import oracle

INDEX = "fastpaths"
DAY = 86_400_000
T0 = 1_600_000_000_000


def _doc(i, rng):
    doc = {
        "tag": rng.choice(["red", "green", "blue", "cyan", "magenta"] + ["t%02d" % k for k in range(20)]),
        "ts": T0 + rng.randrange(0, 400 * DAY),
        "n": rng.randrange(-1000, 1000),
    }
    if i % 11 == 0:
        doc["tag"] = [doc["tag"], "multi", "multi"]
    if i % 13 == 0:
        del doc["tag"]
    if i % 17 == 0:
        doc["n"] = [doc["n"], rng.randrange(-1000, 1000)]
    if i % 19 == 0:
        del doc["ts"]
    return doc


@pytest.fixture(scope="module")
def corpus(es):
    """Builds the index in five segments, then deletes and updates documents across them;
    returns {id: source} of the live documents."""
    rng = random.Random(20261123)
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, body={
        "settings": {"number_of_shards": 1, "refresh_interval": -1},
        "mappings": {"properties": {
            "tag": {"type": "keyword"},
            "ts": {"type": "date", "format": "epoch_millis"},
            "n": {"type": "long"},
        }},
    })
    docs = {}
    next_id = 0
    for _segment in range(5):
        ops = []
        for _ in range(1500):
            doc = _doc(next_id, rng)
            docs[str(next_id)] = doc
            ops.append({"index": {"_index": INDEX, "_id": str(next_id)}})
            ops.append(doc)
            next_id += 1
        assert not es.bulk(operations=ops)["errors"]
        es.indices.refresh(index=INDEX)
    oracle.delete_and_update(es, INDEX, docs, rng, 700, 300,
                             lambda i: _doc(int(i) + 7, rng))
    yield docs
    es.indices.delete(index=INDEX)


def _terms_oracle(docs):
    counts = collections.Counter()
    for d in docs:
        for t in set(oracle.values(d, "tag")):
            counts[t] += 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _search(es, body):
    return es.search(index=INDEX, body=body, request_cache=False).body


@pytest.mark.parametrize("query", [
    None,
    {"match_all": {}},
    {"bool": {"filter": [{"range": {"n": {"gte": -5000, "lte": 5000}}}]}},
])
def test_terms_on_every_document(es, corpus, query):
    body = {"size": 0, "aggs": {"t": {"terms": {"field": "tag", "size": 100}}}}
    if query is not None:
        body["query"] = query
    res = _search(es, body)
    live = list(corpus.values())
    if query is not None and "bool" in query:
        live = [d for d in live if oracle.values(d, "n")]
    got = [(b["key"], b["doc_count"]) for b in res["aggregations"]["t"]["buckets"]]
    assert got == _terms_oracle(live)
    assert res["aggregations"]["t"]["sum_other_doc_count"] == 0


def test_terms_size_cut_on_every_document(es, corpus):
    res = _search(es, {"size": 0, "aggs": {"t": {"terms": {"field": "tag", "size": 3}}}})
    order = _terms_oracle(corpus.values())
    agg = res["aggregations"]["t"]
    assert [(b["key"], b["doc_count"]) for b in agg["buckets"]] == order[:3]
    assert agg["sum_other_doc_count"] == sum(c for _, c in order[3:])


def test_terms_beside_other_aggregations(es, corpus):
    res = _search(es, {"size": 0, "aggs": {
        "t": {"terms": {"field": "tag", "size": 100}},
        "s": {"sum": {"field": "n"}},
    }})
    assert [(b["key"], b["doc_count"]) for b in res["aggregations"]["t"]["buckets"]] == \
        _terms_oracle(corpus.values())
    assert res["aggregations"]["s"]["value"] == sum(
        v for d in corpus.values() for v in oracle.values(d, "n"))


RANGES = [
    (T0, T0 + DAY),                  # sparse: a day of 400
    (T0 + 100 * DAY, T0 + 130 * DAY),  # a month
    (T0 + 10 * DAY, T0 + 300 * DAY),   # dense
    (T0 - 10 * DAY, T0 + 500 * DAY),   # covers everything
    (T0 + 900 * DAY, T0 + 901 * DAY),  # misses everything
]


@pytest.mark.parametrize("lo,hi", RANGES)
def test_range_counts(es, corpus, lo, hi):
    expected = [i for i, d in corpus.items() if any(lo <= v < hi for v in oracle.values(d, "ts"))]
    res = _search(es, {"size": 0, "track_total_hits": True,
                       "query": {"range": {"ts": {"gte": lo, "lt": hi}}}})
    assert res["hits"]["total"] == {"value": len(expected), "relation": "eq"}
    assert es.count(index=INDEX, body={"query": {"range": {"ts": {"gte": lo, "lt": hi}}}})["count"] \
        == len(expected)


@pytest.mark.parametrize("lo,hi", RANGES)
def test_range_hits_in_a_conjunction(es, corpus, lo, hi):
    """ids (a selective leader) AND a range: the hits are exactly the intersection."""
    ids = sorted(corpus, key=int)[::37]
    res = _search(es, {"size": 1000, "_source": False, "query": {"bool": {"filter": [
        {"terms": {"_id": ids}},
        {"range": {"ts": {"gte": lo, "lt": hi}}},
    ]}}})
    expected = {i for i in ids if any(lo <= v < hi for v in oracle.values(corpus[i], "ts"))}
    assert {h["_id"] for h in res["hits"]["hits"]} == expected


@pytest.mark.parametrize("lo,hi", [(-3, 3), (-1000, -990), (-2000, 2000), (100, 500)])
def test_long_range_with_multi_values(es, corpus, lo, hi):
    expected = sum(1 for d in corpus.values() if any(lo <= v <= hi for v in oracle.values(d, "n")))
    res = _search(es, {"size": 0, "track_total_hits": True,
                       "query": {"range": {"n": {"gte": lo, "lte": hi}}}})
    assert res["hits"]["total"]["value"] == expected


def test_date_histogram_over_a_sparse_range(es, corpus):
    lo, hi = T0 + 50 * DAY, T0 + 55 * DAY
    res = _search(es, {"size": 0,
                       "query": {"bool": {"filter": [{"range": {"ts": {"gte": lo, "lt": hi}}}]}},
                       "aggs": {"d": {"date_histogram": {"field": "ts", "calendar_interval": "1d",
                                                          "time_zone": "+08:00"}}}})
    tz = 8 * 3_600_000
    counts = collections.Counter()
    for d in corpus.values():
        vs = [v for v in oracle.values(d, "ts") if lo <= v < hi]
        for day in {(v + tz) // DAY * DAY - tz for v in vs}:
            counts[day] += 1
    got = [(b["key"], b["doc_count"]) for b in res["aggregations"]["d"]["buckets"]]
    first, last = min(counts), max(counts)
    expected = [(k, counts.get(k, 0)) for k in range(first, last + DAY, DAY)]
    assert got == expected

"""`hits.total` with `track_total_hits` thresholds when the total is known to pass them
without counting (a term's document frequency, a disjunction's largest clause), when it is
not, with deleted documents (one shard, several segments: a bound that forgot them would
claim 10,000 `alpha` matches where 9,250 are live), and for filters ANDed as
bitsets (dense `bool` filters) against the same filters in other shapes. Every expected
total is counted here from the documents indexed."""

import random

import pytest

import conftest

INDEX = "total_bounds"
N = 12_500
WORDS = ["alpha", "beta", "gamma", "delta", "omega"]


def make_doc(i, rng):
    words = [w for w in WORDS if rng.random() < {"alpha": 0.9, "beta": 0.5, "gamma": 0.2,
                                                  "delta": 0.05, "omega": 0.001}[w]]
    return {"text": " ".join(words) or "none", "n": i % 100, "k": f"k{i % 7}",
            "t": 1_600_000_000_000 + (i * 7919 % N) * 1000}


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(5)
    docs = {str(i): make_doc(i, rng) for i in range(N)}
    body = {"settings": {"number_of_shards": 1},
            "mappings": {"properties": {"text": {"type": "text"}, "n": {"type": "integer"},
                                        "k": {"type": "keyword"}, "t": {"type": "date"}}}}
    conftest.make_index(es, INDEX, body, [])
    items = list(docs.items())
    # Several segments per shard: one refresh per part.
    for part in range(3):
        ops = []
        for i, d in items[part::3]:
            ops += [{"index": {"_index": INDEX, "_id": i}}, d]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    # Deleted documents, not merged away: among the `alpha` ones, so that the term's
    # document frequency overstates its live matches.
    gone = [i for i, d in docs.items() if "alpha" in d["text"].split()][:2_000]
    ops = [{"delete": {"_index": INDEX, "_id": i}} for i in gone]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    for i in gone:
        del docs[i]
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def total(es, body):
    return es.search(index=INDEX, body=body).body["hits"]["total"]


def expect(count, track):
    if track is True:
        return {"value": count, "relation": "eq"}
    if count > track:
        return {"value": track, "relation": "gte"}
    return {"value": count, "relation": "eq"}


def has(d, *words):
    return any(w in d["text"].split() for w in words)


@pytest.mark.parametrize("size", [0, 10])
@pytest.mark.parametrize("track", [True, 10_000, 9_000, 500, 1])
@pytest.mark.parametrize("words", [["alpha"], ["beta", "gamma"], ["gamma", "delta"],
                                   ["omega"], ["delta", "omega"], ["nothing"]])
def test_match_totals(es, docs, size, track, words):
    want = sum(1 for d in docs.values() if has(d, *words))
    r = total(es, {"size": size, "track_total_hits": track,
                   "query": {"match": {"text": " ".join(words)}}})
    assert r == expect(want, track)


@pytest.mark.parametrize("track", [True, 10_000, 100])
def test_match_with_msm_and_and(es, docs, track):
    want = sum(1 for d in docs.values() if has(d, "alpha") and has(d, "beta"))
    for q in [{"match": {"text": {"query": "alpha beta", "operator": "and"}}},
              {"match": {"text": {"query": "alpha beta", "minimum_should_match": 2}}}]:
        assert total(es, {"size": 10, "track_total_hits": track, "query": q}) == \
            expect(want, track)


def test_scored_hits_are_the_best(es, docs):
    """Top hits by score do not change when the total is taken on its own."""
    body = {"query": {"match": {"text": "omega delta gamma"}}, "size": 20}
    counted = es.search(index=INDEX, body={**body, "track_total_hits": True}).body
    bounded = es.search(index=INDEX, body=body).body
    assert [h["_id"] for h in bounded["hits"]["hits"]] == \
        [h["_id"] for h in counted["hits"]["hits"]]
    assert [h["_score"] for h in bounded["hits"]["hits"]] == \
        [h["_score"] for h in counted["hits"]["hits"]]


@pytest.mark.parametrize("track", [True, 10_000, 50])
@pytest.mark.parametrize("shape", ["filters", "must_no_score", "nested_bool"])
def test_dense_filters(es, docs, track, shape):
    """Dense filter clauses (ANDed as bitsets) count as the same clauses do otherwise."""
    lo, hi = 20, 79
    t0 = 1_600_000_000_000 + 1_000 * 1_000
    clauses = [{"range": {"n": {"gte": lo, "lte": hi}}},
               {"terms": {"k": ["k1", "k2", "k3", "k4", "k5"]}},
               {"range": {"t": {"gte": t0}}},
               {"match": {"text": "alpha"}}]
    want = sum(1 for d in docs.values()
               if lo <= d["n"] <= hi and d["k"] in {"k1", "k2", "k3", "k4", "k5"}
               and d["t"] >= t0 and has(d, "alpha"))
    if shape == "filters":
        q = {"bool": {"filter": clauses}}
    elif shape == "must_no_score":
        q = {"constant_score": {"filter": {"bool": {"must": clauses}}}}
    else:
        q = {"bool": {"filter": [{"bool": {"filter": clauses[:2]}},
                                 {"bool": {"must": clauses[2:]}}]}}
    assert total(es, {"size": 0, "track_total_hits": track, "query": q}) == expect(want, track)
    assert es.count(index=INDEX, body={"query": q})["count"] == want
    # Sorted pages over the same filters return the matches with the best values.
    r = es.search(index=INDEX, body={"size": 15, "query": q,
                                     "sort": [{"t": "desc"}, {"n": "asc"}]}).body
    best = sorted(((d["t"], d["n"]) for d in docs.values()
                   if lo <= d["n"] <= hi and d["k"] in {"k1", "k2", "k3", "k4", "k5"}
                   and d["t"] >= t0 and has(d, "alpha")), key=lambda x: (-x[0], x[1]))[:15]
    assert [tuple(h["sort"]) for h in r["hits"]["hits"]] == best


@pytest.mark.parametrize("track", [True, 10_000, 5_000, 1])
@pytest.mark.parametrize("lo,hi", [(0, 99), (0, 89), (10, 50), (95, 99)])
def test_range_totals(es, docs, track, lo, hi):
    """A range's points less the deleted documents bound its matches: (0, 89) holds 11,250
    points of which fewer than 10,000 are live."""
    want = sum(1 for d in docs.values() if lo <= d["n"] <= hi)
    for q in [{"range": {"n": {"gte": lo, "lte": hi}}},
              {"bool": {"filter": [{"range": {"n": {"gte": lo, "lte": hi}}}]}}]:
        assert total(es, {"size": 0, "track_total_hits": track, "query": q}) == \
            expect(want, track)

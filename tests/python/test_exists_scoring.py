"""`exists` where it scores: a constant score of its `boost`, as ES's (a `ConstantScoreQuery`
around `FieldExistsQuery`), in a segment where every document has the field (the fast path
answers it with an all-documents scorer) as in one where some do not.

The first segment's documents all have every field; the second's have each field at random.
The oracle sums, per document, the boosts of the scoring clauses it matches.
"""

import random

import pytest

INDEX = "exists_scoring"
FIELDS = {
    "n": {"type": "long"},                         # from the column
    "t": {"type": "text"},                         # from norms
    "k": {"type": "keyword"},                      # from the column
    "s": {"type": "keyword", "doc_values": False},  # from _field_names
}
VALUE = {"n": 7, "t": "some words", "k": "kw", "s": "stored"}


def _docs():
    rng = random.Random(5)
    first = {f"a{i}": dict(VALUE) for i in range(40)}
    second = {}
    for i in range(60):
        second[f"b{i}"] = {f: v for f, v in VALUE.items() if rng.random() < 0.5}
    return first, second


@pytest.fixture(scope="module")
def docs(es):
    es.indices.delete(index=INDEX, ignore_unavailable=True)
    es.indices.create(index=INDEX, settings={"number_of_shards": 1},
                      mappings={"properties": FIELDS})
    first, second = _docs()
    for batch in (first, second):  # one segment each
        ops = []
        for i, d in batch.items():
            ops += [{"index": {"_index": INDEX, "_id": i}}, d]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield {**first, **second}
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def scores(es, query):
    r = es.search(index=INDEX, query=query, size=1000, track_total_hits=True)
    assert r["hits"]["total"]["value"] == len(r["hits"]["hits"])
    return {h["_id"]: h["_score"] for h in r["hits"]["hits"]}


def exists(field, boost=None):
    body = {"field": field}
    if boost is not None:
        body["boost"] = boost
    return {"exists": body}


def check(got, want):
    assert set(got) == set(want)
    for i, s in want.items():
        assert got[i] == pytest.approx(s, rel=1e-6), i


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_alone_scores_its_boost(es, docs, field):
    for boost in (None, 2.5):
        want = {i: boost or 1.0 for i, d in docs.items() if field in d}
        check(scores(es, exists(field, boost)), want)


def test_must_clauses_add_up(es, docs):
    q = {"bool": {"must": [exists("n", 2), exists("t")]}}
    check(scores(es, q), {i: 3.0 for i, d in docs.items() if "n" in d and "t" in d})


def test_should_clauses_add_up(es, docs):
    q = {"bool": {"should": [exists("n"), exists("k", 0.5), exists("s", 4)]}}
    weights = {"n": 1.0, "k": 0.5, "s": 4.0}
    want = {}
    for i, d in docs.items():
        matched = [w for f, w in weights.items() if f in d]
        if matched:
            want[i] = sum(matched)
    check(scores(es, q), want)


def test_must_with_optional_should_and_filter(es, docs):
    q = {"bool": {"must": [exists("k", 0.5)], "should": [exists("t")],
                  "filter": [exists("n")], "must_not": [exists("s")]}}
    want = {i: 0.5 + (1.0 if "t" in d else 0.0)
            for i, d in docs.items() if "k" in d and "n" in d and "s" not in d}
    check(scores(es, q), want)


def test_filter_only_scores_zero_and_aggregates_the_same(es, docs):
    with_n = [i for i, d in docs.items() if "n" in d]
    check(scores(es, {"bool": {"filter": [exists("n")]}}), {i: 0.0 for i in with_n})
    for q in (exists("n"), {"bool": {"must": [exists("n")]}}, {"bool": {"filter": [exists("n")]}}):
        r = es.search(index=INDEX, query=q, size=0,
                      aggs={"c": {"value_count": {"field": "n"}}, "k": {"terms": {"field": "k"}}})
        assert r["aggregations"]["c"]["value"] == len(with_n)
        assert r["aggregations"]["k"]["buckets"] == [
            {"key": "kw", "doc_count": sum(1 for i in with_n if "k" in docs[i])}]

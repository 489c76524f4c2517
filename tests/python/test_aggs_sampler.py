"""`sampler`: sub-aggregations over each shard's `shard_size` best-scoring matches.

The query scores documents by their tag with constant scores (a: 3, b: 2, c: 1), so the
best documents of a shard are known without looking at Lode's scores: with one shard and
`shard_size` = #a + #b, the sample is exactly the documents tagged a or b; the expected
counts and sums are computed here from the indexed documents."""

import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "sampled"


def _docs():
    rnd = random.Random(11)
    return [(str(i), {"tag": rnd.choice("aabbbccccc"), "v": rnd.randrange(0, 100)})
            for i in range(200)]


DOCS = _docs()
QUERY = {"bool": {"should": [
    {"constant_score": {"filter": {"term": {"tag": t}}, "boost": b}}
    for t, b in (("a", 3), ("b", 2), ("c", 1))]}}


@pytest.fixture(scope="module")
def sampled(es):
    body = {"settings": {"number_of_shards": 1}, "mappings": {"properties": {
        "tag": {"type": "keyword"}, "v": {"type": "long"}}}}
    return make_index(es, INDEX, body, DOCS)


def test_sample_is_the_best_documents(es, sampled):
    best = [d for _, d in DOCS if d["tag"] in "ab"]
    r = es.search(index=INDEX, size=0, query=QUERY, typed_keys=True, aggs={
        "s": {"sampler": {"shard_size": len(best)}, "aggs": {
            "sum": {"sum": {"field": "v"}},
            "tags": {"terms": {"field": "tag"}}}},
        "all": {"sampler": {"shard_size": 1000}}}).body["aggregations"]
    s = r["sampler#s"]
    assert s["doc_count"] == len(best)
    assert s["sum#sum"]["value"] == sum(d["v"] for d in best)
    counts = {b["key"]: b["doc_count"] for b in s["sterms#tags"]["buckets"]}
    assert counts == {t: sum(1 for d in best if d["tag"] == t) for t in "ab"}
    assert r["sampler#all"]["doc_count"] == len(DOCS)


def test_default_shard_size_and_errors(es, sampled):
    r = es.search(index=INDEX, size=0, query=QUERY,
                  aggs={"s": {"sampler": {}}}).body["aggregations"]
    assert r["s"]["doc_count"] == 100
    for aggs in ({"s": {"sampler": {"shard_size": 0}}},
                 {"s": {"sampler": {"bogus": 1}}}):
        with pytest.raises(BadRequestError):
            es.search(index=INDEX, size=0, aggs=aggs)


@pytest.mark.parametrize("shard_size", [5, 30, 1000])
def test_sampler_under_a_bucket_aggregation_samples_each_bucket(es, sampled, shard_size):
    """ES keeps a best-documents queue per owning bucket: each parent bucket (here a
    histogram on v) is sampled on its own; the sample takes the a, then b, then c
    documents of the bucket (constant scores by tag)."""
    r = es.search(index=INDEX, size=0, query=QUERY, aggs={
        "p": {"histogram": {"field": "v", "interval": 50}, "aggs": {
            "s": {"sampler": {"shard_size": shard_size}, "aggs": {
                "tags": {"terms": {"field": "tag"}},
                "hits": {"top_hits": {"size": 100, "_source": ["v", "tag"]}},
                "lo": {"min": {"field": "v"}}}}}}}).body["aggregations"]
    parents = r["p"]["buckets"]
    assert [p["key"] for p in parents] == [0.0, 50.0]
    for p in parents:
        members = [d for _, d in DOCS if p["key"] <= d["v"] < p["key"] + 50]
        left, want = shard_size, {}
        for t in "abc":
            n = min(left, sum(1 for d in members if d["tag"] == t))
            if n:
                want[t] = n
            left -= n
        s = p["s"]
        assert s["doc_count"] == min(shard_size, len(members))
        assert {b["key"]: b["doc_count"] for b in s["tags"]["buckets"]} == want
        hits = s["hits"]["hits"]["hits"]
        assert len(hits) == min(100, s["doc_count"])
        assert all(p["key"] <= h["_source"]["v"] < p["key"] + 50 for h in hits)
        assert s["lo"]["value"] >= p["key"]


DIVERSE = "diversified"


def _diverse_docs():
    docs = [{"tag": "a", "g": f"a{i}"} for i in range(10)]
    docs += [{"tag": "b", "g": "xy"[i % 2]} for i in range(20)]
    docs += [{"tag": "c", "g": f"c{i % 7}"} for i in range(50)]
    rnd = random.Random(5)
    rnd.shuffle(docs)
    return [(str(i), d) for i, d in enumerate(docs)]


@pytest.fixture(scope="module")
def diverse(es):
    body = {"settings": {"number_of_shards": 1}, "mappings": {"properties": {
        "tag": {"type": "keyword"}, "g": {"type": "keyword"}}}}
    return make_index(es, DIVERSE, body, _diverse_docs())


def test_diversified_sampler(es, diverse):
    # In score order: the ten `a` documents (distinct `g`), then one `b` per `g` value.
    r = es.search(index=DIVERSE, size=0, query=QUERY, typed_keys=True, aggs={
        "s": {"diversified_sampler": {"field": "g", "shard_size": 12},
              "aggs": {"t": {"terms": {"field": "tag"}}}},
        "two": {"diversified_sampler": {"field": "g", "shard_size": 14, "max_docs_per_value": 2},
                "aggs": {"t": {"terms": {"field": "tag"}}}},
    }).body["aggregations"]
    s = r["diversified_sampler#s"]
    assert s["doc_count"] == 12
    assert {b["key"]: b["doc_count"] for b in s["sterms#t"]["buckets"]} == {"a": 10, "b": 2}
    two = r["diversified_sampler#two"]
    assert two["doc_count"] == 14
    assert {b["key"]: b["doc_count"] for b in two["sterms#t"]["buckets"]} == {"a": 10, "b": 4}
    for agg in ({"shard_size": 5}, {"field": "g", "max_docs_per_value": 0},
                {"field": "g", "execution_hint": "nope"}):
        with pytest.raises(BadRequestError):
            es.search(index=DIVERSE, size=0, aggs={"s": {"diversified_sampler": agg}})


def test_diversified_sampler_missing(es):
    """Documents without a value share the `missing` value's key (with those that have it)."""
    name = "diversified_missing"
    docs = [{"tag": "a"} for _ in range(6)] + [{"tag": "a", "g": "m"}]
    docs += [{"tag": "b", "g": f"b{i}"} for i in range(10)]
    body = {"settings": {"number_of_shards": 1}, "mappings": {"properties": {
        "tag": {"type": "keyword"}, "g": {"type": "keyword"}, "n": {"type": "long"}}}}
    make_index(es, name, body, [(str(i), d) for i, d in enumerate(docs)])
    n_a = sum(1 for d in docs if d["tag"] == "a")

    def sample(agg, size):
        r = es.search(index=name, size=0, query=QUERY, aggs={
            "s": {"diversified_sampler": {"shard_size": size, **agg}, "aggs": {"t": {"terms": {"field": "tag"}}}}})
        s = r.body["aggregations"]["s"]
        return s["doc_count"], {b["key"]: b["doc_count"] for b in s["t"]["buckets"]}

    # Without `missing` the six documents without `g` share one key, `m` has its own.
    assert sample({"field": "g", "max_docs_per_value": 2}, 8) == (8, {"a": 3, "b": 5})
    # With `missing: m` the seven `a` documents share one key: two of them are kept.
    assert sample({"field": "g", "max_docs_per_value": 2, "missing": "m"}, 8) == (8, {"a": 2, "b": 6})
    # A distinct missing value: the six form their own key, `m` another.
    assert sample({"field": "g", "max_docs_per_value": 1, "missing": "other"}, 20) == (12, {"a": 2, "b": 10})
    # Numbers: a missing value parsed as the field's.
    assert sample({"field": "n", "max_docs_per_value": 3, "missing": 5}, 20) == (3, {"a": 3})
    assert n_a == 7
    es.indices.delete(index=name)


def test_diversified_sampler_under_a_bucket_aggregation(es, diverse):
    """Each parent bucket keeps at most `max_docs_per_value` documents per value of its own."""
    docs = [d for _, d in _diverse_docs()]
    r = es.search(index=DIVERSE, size=0, query=QUERY, aggs={
        "t": {"terms": {"field": "tag"}, "aggs": {
            "s": {"diversified_sampler": {"field": "g", "shard_size": 100},
                  "aggs": {"g": {"cardinality": {"field": "g"}}}}}}}).body["aggregations"]
    got = {b["key"]: (b["s"]["doc_count"], b["s"]["g"]["value"]) for b in r["t"]["buckets"]}
    want = {}
    for t in "abc":
        n = len({d["g"] for d in docs if d["tag"] == t})
        want[t] = (n, n)
    assert got == want

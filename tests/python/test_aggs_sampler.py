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
                 {"s": {"sampler": {"bogus": 1}}},
                 {"t": {"terms": {"field": "tag"}, "aggs": {"s": {"sampler": {}}}}}):
        with pytest.raises(BadRequestError):
            es.search(index=INDEX, size=0, aggs=aggs)

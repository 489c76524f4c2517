"""`terms` buckets over every document of segments that hold deleted documents.

A query matching every document lets Lode count keyword buckets from the term dictionary's
document frequencies and take the deleted documents' terms off (they count until a merge).
The oracle counts the live documents' distinct values in Python; the same buckets are asked
through a query that cannot take that path (a `bool` with a `must_not` that matches nothing),
for single-valued and multi-valued fields, with deletes spread over segments and words of the
deletion bitset (first, last and 64th documents of a segment included).
"""

import collections
import random

import pytest

from conftest import make_index

INDEX = "terms_with_deletes"
TAGS = ["red", "green", "blue", "amber", "teal", "plum", "sand"]


@pytest.fixture(scope="module")
def loaded(es):
    rng = random.Random(31)
    make_index(es, INDEX, {
        "settings": {"number_of_shards": 1},
        "mappings": {"properties": {"one": {"type": "keyword"}, "many": {"type": "keyword"},
                                    "n": {"type": "integer"}}},
    }, [])
    live = {}
    doc_id = 0
    for seg in range(3):
        ops = []
        for _ in range(200 + 70 * seg):
            src = {"n": doc_id}
            if rng.random() < 0.9:
                src["one"] = rng.choice(TAGS)
            if rng.random() < 0.8:
                src["many"] = [rng.choice(TAGS) for _ in range(rng.randint(1, 4))]
            ops += [{"index": {"_index": INDEX, "_id": str(doc_id)}}, src]
            live[str(doc_id)] = src
            doc_id += 1
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    ids = sorted(live, key=int)
    doomed = {"0", "63", "64", "199", str(len(ids) - 1)} | set(rng.sample(ids, 60))
    ops = [{"delete": {"_index": INDEX, "_id": i}} for i in sorted(doomed, key=int)]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    for i in doomed:
        del live[i]
    yield live
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def expected(live, field):
    counts = collections.Counter()
    for src in live.values():
        v = src.get(field)
        for tag in set(v if isinstance(v, list) else ([] if v is None else [v])):
            counts[tag] += 1
    return dict(counts)


@pytest.mark.parametrize("field", ["one", "many"])
@pytest.mark.parametrize("query", [
    {"match_all": {}},
    {"range": {"n": {"gte": -1}}},
    {"bool": {"must_not": {"term": {"one": "no-such-tag"}}}},
])
def test_terms_counts_leave_deleted_documents_out(es, loaded, field, query):
    segments = es.indices.segments(index=INDEX)["indices"][INDEX]["shards"]["0"][0]["segments"]
    assert sum(s["deleted_docs"] for s in segments.values()) > 0
    body = {"size": 0, "query": query,
            "aggs": {"t": {"terms": {"field": field, "size": 20}}}}
    got = es.search(index=INDEX, body=body, request_cache=False)["aggregations"]["t"]["buckets"]
    assert {b["key"]: b["doc_count"] for b in got} == expected(loaded, field)


def test_counts_follow_deletes_made_after_a_count(es):
    """A segment counted once, then given more deleted documents (and then some updated), is
    counted again with them: the counts of a segment are kept only as long as its deletes."""
    index = "terms_with_deletes_later"
    docs = [(str(i), {"one": TAGS[i % len(TAGS)]}) for i in range(700)]
    make_index(es, index, {"settings": {"number_of_shards": 1},
                           "mappings": {"properties": {"one": {"type": "keyword"}}}}, docs)
    live = dict(docs)
    rng = random.Random(5)
    aggs = {"a": {"terms": {"field": "one", "size": 20}}}
    for _ in range(4):
        got = es.search(index=index, size=0, aggs=aggs, request_cache=False)["aggregations"]["a"]
        expected = collections.Counter(src["one"] for src in live.values())
        assert {b["key"]: b["doc_count"] for b in got["buckets"]} == dict(expected)
        ops = []
        for i in rng.sample(sorted(live), 40):
            ops.append({"delete": {"_index": index, "_id": i}})
            del live[i]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    es.indices.delete(index=index)

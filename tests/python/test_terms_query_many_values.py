"""`terms` queries with hundreds of values, sorted, scored and under a `bool` filter.

A term set gathers each segment's matches once per request and every scorer of the request
(the hit count, the sorted walk) reuses them, so the answers are checked where that sharing
could go wrong: several segments, deleted and updated documents (an update leaves a deleted
copy in an older segment), keyword and numeric fields, multi-valued keywords, absent and
repeated values. The oracle is computed in Python from the live documents: the total with its
relation, and the ids and sort values of the top hits (sort values are unique, so the top-k is
one list).
"""

import random

import pytest

from conftest import make_index

INDEX = "terms_many_values"
KEYS = 1500


def key(i):
    return "K%05d" % i


@pytest.fixture(scope="module")
def live(es):
    rng = random.Random(26)
    make_index(es, INDEX, {
        "settings": {"number_of_shards": 1},
        "mappings": {"properties": {"k": {"type": "keyword"}, "n": {"type": "integer"},
                                    "t": {"type": "date", "format": "epoch_millis"}}},
    }, [])
    docs = {}
    stamps = rng.sample(range(10**6, 10**9), 9000)
    doc_id = 0
    # Four segments of unequal sizes, each refresh one segment (single shard, no merge of
    # so few documents).
    for size in (1700, 900, 1300, 400):
        ops = []
        for _ in range(size):
            src = {"n": rng.randint(0, 799), "t": stamps.pop()}
            r = rng.random()
            if r < 0.8:
                src["k"] = key(rng.randrange(KEYS))
            elif r < 0.95:
                src["k"] = [key(rng.randrange(KEYS)) for _ in range(rng.randint(2, 3))]
            ops += [{"index": {"_index": INDEX, "_id": str(doc_id)}}, src]
            docs[str(doc_id)] = src
            doc_id += 1
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    ids = sorted(docs, key=int)
    # Deletes in every segment, then updates of older documents into a last segment.
    doomed = set(rng.sample(ids, 300)) | {"0", "63", "64", ids[-1]}
    ops = [{"delete": {"_index": INDEX, "_id": i}} for i in sorted(doomed, key=int)]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    for i in doomed:
        del docs[i]
    ops = []
    for i in rng.sample(sorted(docs, key=int), 200):
        src = {"n": rng.randint(0, 799), "t": stamps.pop(), "k": key(rng.randrange(KEYS))}
        ops += [{"index": {"_index": INDEX, "_id": i}}, src]
        docs[i] = src
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    segments = es.indices.segments(index=INDEX)["indices"][INDEX]["shards"]["0"][0]["segments"]
    assert len(segments) >= 4
    assert sum(s["deleted_docs"] for s in segments.values()) > 0
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def values_of(src, field):
    v = src.get(field)
    return v if isinstance(v, list) else ([] if v is None else [v])


def value_sets(rng, field, count):
    """`count` values of `field`: mostly present, some absent, some repeated."""
    if field == "k":
        vals = [key(rng.randrange(KEYS + 300)) for _ in range(count)]
    else:
        vals = [rng.randrange(1000) for _ in range(count)]
    return vals + rng.sample(vals, count // 10)


def matching(live, field, vals, extra=lambda src: True):
    wanted = set(vals)
    return {i: src for i, src in live.items()
            if extra(src) and wanted & set(values_of(src, field))}


def check_total(resp, expected, track):
    total = resp["hits"]["total"]
    if track is True or expected <= track:
        assert total == {"value": expected, "relation": "eq"}
    else:
        assert total == {"value": track, "relation": "gte"}


@pytest.mark.parametrize("field", ["k", "n"])
@pytest.mark.parametrize("count", [20, 150, 600])
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_terms_sorted_by_date_match_the_oracle(es, live, field, count, order):
    rng = random.Random(f"{field}{count}{order}")
    for track in (True, 10000, 7):
        vals = value_sets(rng, field, count)
        body = {"size": 10, "query": {"terms": {field: vals}},
                "sort": [{"t": order}], "track_total_hits": track}
        resp = es.search(index=INDEX, body=body, request_cache=False)
        hits = matching(live, field, vals)
        check_total(resp, len(hits), track)
        top = sorted(hits, key=lambda i: hits[i]["t"], reverse=order == "desc")[:10]
        assert [(h["_id"], h["sort"]) for h in resp["hits"]["hits"]] == \
            [(i, [hits[i]["t"]]) for i in top]


@pytest.mark.parametrize("field", ["k", "n"])
def test_terms_under_a_bool_filter_with_two_sort_keys(es, live, field):
    rng = random.Random(f"bool{field}")
    for _ in range(4):
        vals = value_sets(rng, field, 300)
        lo = rng.randrange(600)
        body = {"size": 15, "sort": [{"n": "desc"}, {"t": "asc"}],
                "query": {"bool": {"filter": [{"terms": {field: vals}},
                                              {"range": {"n": {"gte": lo}}}]}}}
        resp = es.search(index=INDEX, body=body, request_cache=False)
        hits = matching(live, field, vals, lambda src: src["n"] >= lo)
        check_total(resp, len(hits), 10000)
        top = sorted(hits, key=lambda i: (-hits[i]["n"], hits[i]["t"]))[:15]
        assert [(h["_id"], h["sort"]) for h in resp["hits"]["hits"]] == \
            [(i, [hits[i]["n"], hits[i]["t"]]) for i in top]


@pytest.mark.parametrize("field", ["k", "n"])
def test_terms_scores_its_boost_on_every_match(es, live, field):
    rng = random.Random(f"score{field}")
    for boost in (1.0, 2.5):
        vals = value_sets(rng, field, 400)
        body = {"size": 10000, "query": {"terms": {field: vals, "boost": boost}}}
        resp = es.search(index=INDEX, body=body, request_cache=False)
        hits = matching(live, field, vals)
        check_total(resp, len(hits), 10000)
        assert sorted(h["_id"] for h in resp["hits"]["hits"]) == sorted(hits)
        assert {h["_score"] for h in resp["hits"]["hits"]} == {boost}
        assert resp["hits"]["max_score"] == boost


def test_two_term_sets_in_one_request(es, live):
    """Two `terms` clauses on one field in a `should`: each keeps its own matches."""
    rng = random.Random("two")
    a, b = value_sets(rng, "k", 200), value_sets(rng, "k", 200)
    body = {"size": 10, "sort": [{"t": "desc"}],
            "query": {"bool": {"should": [{"terms": {"k": a}}, {"terms": {"k": b}}],
                               "filter": [{"terms": {"k": a}}]}}}
    resp = es.search(index=INDEX, body=body, request_cache=False)
    hits = matching(live, "k", a)
    check_total(resp, len(hits), 10000)
    top = sorted(hits, key=lambda i: -hits[i]["t"])[:10]
    assert [h["_id"] for h in resp["hits"]["hits"]] == top

"""Named queries (`_name`) and each hit's `matched_queries`, as ES's `MatchedQueriesPhase`.

The expected names are computed here from the indexed documents: a named query's predicate
is evaluated per document in Python. With `include_named_queries_score` the scores of
constant-score queries (range, terms, prefix, exists, constant_score) are their boost, and a
`term` on a keyword field that every document has scores BM25 alone (ES's
`LegacyBM25Similarity`, see docs/compatibility.md): idf * (k1 + 1) * tf / (tf + k1) with
tf = 1 and every document one term long, i.e. the idf. The scores are checked on an index
without nested documents (Lode's per-shard BM25 statistics count them; see the report of
this change).
"""

import math
import random

import pytest

from conftest import make_index

TAGS = ["red", "green", "blue"]
KINDS = ["a", "b", "c", "d"]

MAPPING = {"properties": {
    "tag": {"type": "keyword"},
    "n": {"type": "integer"},
    "title": {"type": "keyword"},
    "items": {"type": "nested", "properties": {"k": {"type": "keyword"}, "v": {"type": "integer"}}},
}}


def gen_docs(seed=11, n=60):
    rnd = random.Random(seed)
    docs = []
    for i in range(n):
        d = {"tag": rnd.choice(TAGS), "n": i}
        if rnd.random() < 0.5:
            d["title"] = "t%d" % (i % 4)
        d["items"] = [{"k": rnd.choice(KINDS), "v": rnd.randrange(0, 10)}
                      for _ in range(rnd.randrange(0, 4))]
        docs.append((str(i), d))
    return docs


@pytest.fixture(scope="module")
def flat(es):
    docs = [(i, {k: v for k, v in d.items() if k != "items"}) for i, d in gen_docs()]
    make_index(es, "matched_q_flat", {"settings": {"number_of_shards": 1}, "mappings": MAPPING},
               docs)
    return "matched_q_flat", dict(docs)


@pytest.fixture(scope="module")
def mq(es):
    docs = gen_docs()
    make_index(es, "matched_q", {"settings": {"number_of_shards": 1}, "mappings": MAPPING}, docs)
    return "matched_q", dict(docs)


def search(es, index, body, **params):
    return es.search(index=index, body={"size": 1000, **body}, **params).body


def names_of(hit):
    m = hit.get("matched_queries")
    assert m != [], "an empty matched_queries is omitted"
    return sorted(m or [])


def bm25_keyword(docs, field, value):
    """A lone `term` on a keyword field every document has once: the term's idf (the
    (k1 + 1) factor cancels tf / (tf + k1) for tf = 1 and average length)."""
    assert all(field in d for d in docs.values())
    df = sum(1 for d in docs.values() if d[field] == value)
    k1 = 1.2
    idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
    return idf * (k1 + 1) * 1 / (1 + k1)


def test_bool_clauses_and_filters_report_their_names(es, mq):
    index, docs = mq
    q = {"bool": {
        "should": [
            {"term": {"tag": {"value": "red", "_name": "is_red"}}},
            {"term": {"tag": {"value": "blue", "_name": "is_blue"}}},
            {"match_all": {}},
        ],
        "filter": [{"range": {"n": {"gte": 20, "_name": "big"}}}],
        "must_not": [{"exists": {"field": "title", "_name": "titled"}}],
    }}
    resp = search(es, index, {"query": q})
    expected_ids = {i for i, d in docs.items() if d["n"] >= 20 and "title" not in d}
    assert {h["_id"] for h in resp["hits"]["hits"]} == expected_ids
    for h in resp["hits"]["hits"]:
        d = docs[h["_id"]]
        want = ["big"]
        if d["tag"] == "red":
            want.append("is_red")
        if d["tag"] == "blue":
            want.append("is_blue")
        # a must_not clause's name is reported only where it matches, never for a hit
        assert names_of(h) == sorted(want), h["_id"]


def test_no_match_omits_the_key_and_compounds_are_walked(es, mq):
    index, docs = mq
    q = {"bool": {"must": [{"match_all": {}}], "should": [
        {"constant_score": {"filter": {"term": {"tag": {"value": "green", "_name": "inner_green"}}},
                            "_name": "cs"}},
        {"dis_max": {"queries": [{"prefix": {"title": {"value": "t1", "_name": "t1"}}}]}},
        {"function_score": {"query": {"range": {"n": {"lt": 5, "_name": "small"}}},
                            "functions": [{"filter": {"term": {"tag": {"value": "red", "_name": "fs_red"}}},
                                           "weight": 2}]}},
    ]}}
    resp = search(es, index, {"query": q})
    assert len(resp["hits"]["hits"]) == len(docs)
    for h in resp["hits"]["hits"]:
        d = docs[h["_id"]]
        want = []
        if d["tag"] == "green":
            want += ["cs", "inner_green"]
        if d.get("title") == "t1":
            want.append("t1")
        if d["n"] < 5:
            want.append("small")
        if d["tag"] == "red":
            want.append("fs_red")
        if not want:
            assert "matched_queries" not in h
        assert names_of(h) == sorted(want), h["_id"]


def test_scores_with_include_named_queries_score(es, flat):
    index, docs = flat
    q = {"bool": {
        "should": [{"term": {"tag": {"value": "red", "_name": "red"}}}],
        "filter": [
            {"range": {"n": {"gte": 10, "lt": 40, "_name": "mid", "boost": 2.5}}},
            {"terms": {"tag": ["red", "green"], "_name": "rg"}},
        ],
    }}
    resp = search(es, index, {"query": q}, include_named_queries_score=True)
    red = bm25_keyword(docs, "tag", "red")
    hits = resp["hits"]["hits"]
    assert {h["_id"] for h in hits} == {
        i for i, d in docs.items() if 10 <= d["n"] < 40 and d["tag"] in ("red", "green")}
    for h in hits:
        d = docs[h["_id"]]
        m = h["matched_queries"]
        assert isinstance(m, dict)
        want = {"mid": 2.5, "rg": 1.0}
        if d["tag"] == "red":
            want["red"] = red
        assert sorted(m) == sorted(want), h["_id"]
        for k, v in want.items():
            assert m[k] == pytest.approx(v, rel=1e-5), (h["_id"], k)
    # false (and absent) render the names
    resp = search(es, index, {"query": q}, include_named_queries_score=False)
    assert all(isinstance(h["matched_queries"], list) for h in resp["hits"]["hits"])


def test_post_filter_names(es, mq):
    index, docs = mq
    resp = search(es, index, {
        "query": {"term": {"tag": {"value": "blue", "_name": "blue"}}},
        "post_filter": {"bool": {"should": [
            {"range": {"n": {"lt": 30, "_name": "low"}}},
            {"exists": {"field": "title", "_name": "has_title"}},
        ]}},
    })
    expected = {i for i, d in docs.items() if d["tag"] == "blue" and (d["n"] < 30 or "title" in d)}
    assert {h["_id"] for h in resp["hits"]["hits"]} == expected
    for h in resp["hits"]["hits"]:
        d = docs[h["_id"]]
        want = ["blue"] + (["low"] if d["n"] < 30 else []) + (["has_title"] if "title" in d else [])
        assert names_of(h) == sorted(want)


def test_nested_names_in_hits_and_inner_hits(es, mq):
    index, docs = mq
    q = {"nested": {
        "path": "items",
        "_name": "has_items",
        "query": {"bool": {"should": [
            {"term": {"items.k": {"value": "a", "_name": "ka"}}},
            {"range": {"items.v": {"gte": 5, "_name": "v5"}}},
        ]}},
        "inner_hits": {"size": 10},
    }}
    resp = search(es, index, {"query": q})
    expected = {i for i, d in docs.items() if any(it["k"] == "a" or it["v"] >= 5 for it in d["items"])}
    assert {h["_id"] for h in resp["hits"]["hits"]} == expected
    for h in resp["hits"]["hits"]:
        d = docs[h["_id"]]
        # the inner queries run on the nested documents, never on the root hit
        assert names_of(h) == ["has_items"]
        inner = h["inner_hits"]["items"]["hits"]["hits"]
        assert len(inner) == sum(1 for it in d["items"] if it["k"] == "a" or it["v"] >= 5)
        for ih in inner:
            item = d["items"][ih["_nested"]["offset"]]
            want = (["ka"] if item["k"] == "a" else []) + (["v5"] if item["v"] >= 5 else [])
            assert names_of(ih) == sorted(want), (h["_id"], item)


def test_msearch_with_scores(es, mq):
    index, docs = mq
    body = [
        {"index": index},
        {"size": 100, "query": {"range": {"n": {"lt": 3, "_name": "first3"}}}},
        {"index": index},
        {"size": 100, "query": {"bool": {"filter": {"prefix": {"title": {"value": "t2", "_name": "t2"}}}}}},
    ]
    resp = es.msearch(searches=body, include_named_queries_score=True).body
    r1, r2 = resp["responses"]
    assert sorted(h["_id"] for h in r1["hits"]["hits"]) == sorted(i for i, d in docs.items() if d["n"] < 3)
    assert all(h["matched_queries"] == {"first3": 1.0} for h in r1["hits"]["hits"])
    assert {h["_id"] for h in r2["hits"]["hits"]} == {i for i, d in docs.items() if d.get("title") == "t2"}
    assert all(h["matched_queries"] == {"t2": 1.0} for h in r2["hits"]["hits"])


def test_duplicate_names_the_last_wins_and_pages_are_fetched_only(es, mq):
    index, docs = mq
    q = {"bool": {"should": [
        {"term": {"tag": {"value": "red", "_name": "same"}}},
        {"term": {"tag": {"value": "blue", "_name": "same"}}},
    ]}}
    resp = search(es, index, {"query": q, "sort": [{"n": "asc"}], "size": 5, "from": 2})
    expected = sorted((d["n"], i) for i, d in docs.items() if d["tag"] in ("red", "blue"))[2:7]
    assert [h["_id"] for h in resp["hits"]["hits"]] == [i for _, i in expected]
    for h in resp["hits"]["hits"]:
        if docs[h["_id"]]["tag"] == "blue":
            assert h["matched_queries"] == ["same"]
        else:
            assert "matched_queries" not in h


def test_top_hits_report_the_search_names(es, flat):
    index, docs = flat
    resp = search(es, index, {
        "size": 0,
        "query": {"bool": {"should": [
            {"range": {"n": {"lt": 15, "_name": "early"}}},
            {"term": {"tag": {"value": "green", "_name": "green"}}},
        ]}},
        "aggs": {"by_tag": {"terms": {"field": "tag"}, "aggs": {
            "top": {"top_hits": {"size": 3, "sort": [{"n": "asc"}]}}}}},
    }, include_named_queries_score=True)
    for b in resp["aggregations"]["by_tag"]["buckets"]:
        ranked = sorted((d["n"], i) for i, d in docs.items()
                        if d["tag"] == b["key"] and (d["n"] < 15 or d["tag"] == "green"))[:3]
        hits = b["top"]["hits"]["hits"]
        assert [h["_id"] for h in hits] == [i for _, i in ranked]
        green = bm25_keyword(docs, "tag", "green")
        for h in hits:
            d = docs[h["_id"]]
            want = {}
            if d["n"] < 15:
                want["early"] = 1.0
            if d["tag"] == "green":
                want["green"] = green
            assert sorted(h["matched_queries"]) == sorted(want)
            for k, v in want.items():
                assert h["matched_queries"][k] == pytest.approx(v, rel=1e-5)


def test_collapse_inner_hits_carry_the_query_names(es, flat):
    index, docs = flat
    resp = search(es, index, {
        "query": {"bool": {"should": [
            {"range": {"n": {"lt": 20, "_name": "low"}}},
            {"exists": {"field": "title", "_name": "titled"}},
        ]}},
        "collapse": {"field": "tag", "inner_hits": {"name": "g", "size": 50}},
    }, include_named_queries_score=True)
    for h in resp["hits"]["hits"]:
        inner = h["inner_hits"]["g"]["hits"]["hits"]
        want_ids = {i for i, d in docs.items()
                    if d["tag"] == h["fields"]["tag"][0] and (d["n"] < 20 or "title" in d)}
        assert {ih["_id"] for ih in inner} == want_ids
        for ih in inner:
            d = docs[ih["_id"]]
            want = {k: 1.0 for k, ok in (("low", d["n"] < 20), ("titled", "title" in d)) if ok}
            assert ih["matched_queries"] == want

"""`script` queries and runtime-field queries on an index with nested documents: a query at
the root runs its script on root documents only (a root field read on a nested object's
document would be missing), and one inside a `nested` query on that path's objects only, as
Elasticsearch builds them. Oracle: the documents as written, filtered in Python.
"""

import random

import pytest

from conftest import make_index

INDEX = "script_query_nested"


def _docs():
    rng = random.Random(31)
    docs = {}
    for i in range(120):
        d = {"n": rng.randrange(100),
             "items": [{"k": rng.choice("abcd"), "w": rng.randrange(10)}
                       for _ in range(rng.randrange(0, 4))]}
        docs[str(i)] = d
    return docs


@pytest.fixture(scope="module")
def docs(es):
    docs = _docs()
    make_index(es, INDEX, {
        "settings": {"number_of_shards": 2},
        "mappings": {
            "runtime": {"n2": {"type": "long", "script": "emit(doc['n'].value * 2)"}},
            "properties": {
                "n": {"type": "long"},
                "items": {"type": "nested",
                          "properties": {"k": {"type": "keyword"}, "w": {"type": "integer"}}},
            }},
    }, sorted(docs.items()))
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def _ids(es, query):
    res = es.search(index=INDEX, query=query, size=200, request_cache=False)
    assert res["hits"]["total"] == {"value": len(res["hits"]["hits"]), "relation": "eq"}
    return {h["_id"] for h in res["hits"]["hits"]}


@pytest.mark.parametrize("limit", [0, 30, 75])
def test_root_script_reads_root_fields(es, docs, limit):
    q = {"script": {"script": {"source": "doc['n'].value > params.x", "params": {"x": limit}}}}
    assert _ids(es, q) == {i for i, d in docs.items() if d["n"] > limit}


@pytest.mark.parametrize("limit", [0, 60, 150])
def test_root_runtime_field_query(es, docs, limit):
    q = {"range": {"n2": {"gte": limit}}}
    assert _ids(es, q) == {i for i, d in docs.items() if d["n"] * 2 >= limit}


@pytest.mark.parametrize("key,w", [("a", 0), ("b", 5), ("d", 9)])
def test_nested_script_reads_object_fields(es, docs, key, w):
    q = {"nested": {"path": "items", "query": {"script": {"script": {
        "source": "doc['items.k'].value == params.k && doc['items.w'].value >= params.w",
        "params": {"k": key, "w": w}}}}}}
    want = {i for i, d in docs.items() if any(o["k"] == key and o["w"] >= w for o in d["items"])}
    assert _ids(es, q) == want


def test_root_script_beside_a_nested_query(es, docs):
    q = {"bool": {
        "filter": [{"script": {"script": "doc['n'].value % 2 == 0"}}],
        "must": [{"nested": {"path": "items", "query": {"term": {"items.k": "c"}}}}]}}
    want = {i for i, d in docs.items()
            if d["n"] % 2 == 0 and any(o["k"] == "c" for o in d["items"])}
    assert _ids(es, q) == want


@pytest.mark.parametrize("min_score", [None, 100.0])
def test_root_script_score(es, docs, min_score):
    ss = {"query": {"match_all": {}}, "script": {"source": "doc['n'].value * 2 + 1"}}
    if min_score is not None:
        ss["min_score"] = min_score
    res = es.search(index=INDEX, query={"script_score": ss}, size=200, request_cache=False)
    want = {i: d["n"] * 2 + 1.0 for i, d in docs.items()
            if min_score is None or d["n"] * 2 + 1 >= min_score}
    assert {h["_id"]: h["_score"] for h in res["hits"]["hits"]} == want


def test_nested_script_score(es, docs):
    q = {"nested": {"path": "items", "score_mode": "max", "query": {"script_score": {
        "query": {"match_all": {}}, "script": {"source": "doc['items.w'].value + 1"}}}}}
    res = es.search(index=INDEX, query=q, size=200, request_cache=False)
    want = {i: max(o["w"] for o in d["items"]) + 1.0 for i, d in docs.items() if d["items"]}
    assert {h["_id"]: h["_score"] for h in res["hits"]["hits"]} == want

"""Runtime fields in `runtime_mappings`: a script's `emit(...)` values queried, sorted and
returned in `fields`, checked against answers computed here from the indexed documents."""

import random

import pytest
from elasticsearch import ApiError

INDEX = "runtime_fields"
MAPPING = {"properties": {"first": {"type": "keyword"}, "last": {"type": "keyword"},
                          "a": {"type": "long"}}}
RT = {"full": {"type": "keyword",
               "script": {"source": "emit(doc['first'].value + ' ' + doc['last'].value)"}},
      "twice": {"type": "long", "script": {"source": "emit(doc['a'].value * params.k)",
                                            "params": {"k": 2}}},
      "multi": {"type": "long", "script": "emit(doc['a'].value); emit(doc['a'].value + 100)"},
      "last": {"type": "keyword", "script": "emit(doc['first'].value)"}}


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(3)
    docs = {str(i): {"first": rng.choice(["ann", "bob", "cy"]),
                     "last": rng.choice(["xu", "yi"]), "a": rng.randrange(0, 30)}
            for i in range(60)}
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 2}, mappings=MAPPING)
    ops = []
    for i, d in docs.items():
        ops += [{"index": {"_index": INDEX, "_id": i}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body):
    body = dict(body, runtime_mappings=RT)
    return es.perform_request("POST", f"/{INDEX}/_search", body=body,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


def ids(r):
    return {h["_id"] for h in r["hits"]["hits"]}


def test_term_on_runtime_keyword_and_sort(es, docs):
    r = search(es, {"query": {"term": {"full": "bob xu"}}, "size": 100,
                    "sort": [{"full": "desc"}, "_doc"], "fields": ["full"]})
    assert ids(r) == {i for i, d in docs.items() if d["first"] == "bob" and d["last"] == "xu"}
    for h in r["hits"]["hits"]:
        assert h["fields"]["full"] == ["bob xu"]
        assert h["sort"][0] == "bob xu"
    r = search(es, {"size": 100, "sort": [{"full": "asc"}, {"a": "asc"}]})
    want = sorted((d["first"] + " " + d["last"], d["a"]) for d in docs.values())
    assert [tuple(h["sort"]) for h in r["hits"]["hits"]] == want


def test_terms_range_exists_match(es, docs):
    r = search(es, {"query": {"terms": {"full": ["ann yi", "cy xu"]}}, "size": 100})
    assert ids(r) == {i for i, d in docs.items()
                      if d["first"] + " " + d["last"] in ("ann yi", "cy xu")}
    r = search(es, {"query": {"range": {"twice": {"gte": 10, "lt": 30}}}, "size": 100})
    assert ids(r) == {i for i, d in docs.items() if 10 <= d["a"] * 2 < 30}
    r = search(es, {"query": {"exists": {"field": "twice"}}, "size": 0,
                    "track_total_hits": True})
    assert r["hits"]["total"]["value"] == len(docs)
    r = search(es, {"query": {"match": {"full": "ann xu"}}, "size": 100})
    assert ids(r) == {i for i, d in docs.items() if (d["first"], d["last"]) == ("ann", "xu")}


def test_multi_valued_and_shadowing(es, docs):
    r = search(es, {"query": {"term": {"multi": 105}}, "size": 100, "fields": ["multi"]})
    assert ids(r) == {i for i, d in docs.items() if d["a"] == 5}
    for h in r["hits"]["hits"]:
        assert h["fields"]["multi"] == [5, 105]
    # `last` is shadowed by a runtime field emitting `first`.
    r = search(es, {"query": {"term": {"last": "ann"}}, "size": 100})
    assert ids(r) == {i for i, d in docs.items() if d["first"] == "ann"}


@pytest.mark.parametrize("body,etype", [
    ({"aggs": {"x": {"terms": {"field": "full"}}}}, "illegal_argument_exception"),
])
def test_refused(es, docs, body, etype):
    with pytest.raises(ApiError) as ei:
        search(es, body)
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["type"] == etype


@pytest.mark.parametrize("rt,etype", [
    ({"x": {"type": "nope", "script": "emit(1)"}}, "mapper_parsing_exception"),
    ({"x": {"type": "long"}}, "mapper_parsing_exception"),
    ({"x": {"type": "long", "script": "emit(1)", "bogus": 1}}, "mapper_parsing_exception"),
])
def test_refused_definitions(es, docs, rt, etype):
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", f"/{INDEX}/_search", body={"runtime_mappings": rt},
                           headers={"content-type": "application/json",
                                    "accept": "application/json"})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["type"] == etype

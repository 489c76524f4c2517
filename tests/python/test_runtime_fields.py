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
    ({"x": {"type": "long", "script": "emit(1)", "bogus": 1}}, "mapper_parsing_exception"),
])
def test_refused_definitions(es, docs, rt, etype):
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", f"/{INDEX}/_search", body={"runtime_mappings": rt},
                           headers={"content-type": "application/json",
                                    "accept": "application/json"})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["type"] == etype


def req(es, method, path, body=None):
    return es.perform_request(method, path, body=body,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


MINDEX = "runtime_in_mapping"


@pytest.fixture(scope="module")
def mdocs(es):
    rng = random.Random(5)
    docs = {str(i): {"first": rng.choice(["ann", "bob", "cy"]),
                     "last": rng.choice(["xu", "yi"]), "a": rng.randrange(0, 30),
                     "price": rng.choice([1.5, 2.25, "3.5", None]),
                     "tags": rng.sample(["p", "q", "r"], rng.randrange(0, 3))}
            for i in range(50)}
    es.indices.delete(index=MINDEX, ignore_unavailable=True)
    req(es, "PUT", f"/{MINDEX}", {
        "settings": {"number_of_shards": 2},
        "mappings": {
            "properties": {"first": {"type": "keyword"}, "last": {"type": "keyword"},
                           "a": {"type": "long"}},
            "runtime": {
                "full": {"type": "keyword",
                         "script": {"source": "emit(doc['first'].value + ' ' + doc['last'].value)"}},
                # no script: read from `_source` (the `price` and `tags` are not indexed)
                "price": {"type": "double"},
                "tags": {"type": "keyword"},
                "gone": {"type": "long", "script": "emit(1)"}}}})
    req(es, "PUT", f"/{MINDEX}/_mapping", {"runtime": {
        "gone": None,
        "twice": {"type": "long", "script": "emit(doc['a'].value * 2)"}}})
    ops = []
    for i, d in docs.items():
        ops += [{"index": {"_index": MINDEX, "_id": i}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield docs
    es.indices.delete(index=MINDEX, ignore_unavailable=True)


def test_mapping_runtime_section_returned(es, mdocs):
    m = req(es, "GET", f"/{MINDEX}/_mapping")[MINDEX]["mappings"]
    assert set(m["runtime"]) == {"full", "price", "tags", "twice"}
    assert m["runtime"]["price"] == {"type": "double"}
    assert m["runtime"]["twice"]["type"] == "long"
    g = req(es, "GET", f"/{MINDEX}")[MINDEX]["mappings"]
    assert g["runtime"] == m["runtime"]


def msearch(es, body):
    return req(es, "POST", f"/{MINDEX}/_search", body)


def test_mapping_runtime_fields_in_search(es, mdocs):
    r = msearch(es, {"query": {"term": {"full": "cy yi"}}, "size": 100, "fields": ["full"],
                     "sort": [{"twice": "desc"}, "_doc"]})
    want = [i for i, d in mdocs.items() if (d["first"], d["last"]) == ("cy", "yi")]
    assert ids(r) == set(want)
    assert [h["sort"][0] for h in r["hits"]["hits"]] == \
        sorted((mdocs[i]["a"] * 2 for i in want), reverse=True)
    assert all(h["fields"]["full"] == ["cy yi"] for h in r["hits"]["hits"])
    # the request's runtime_mappings shadow the mapping's
    r = msearch(es, {"query": {"term": {"full": "ann"}}, "size": 100,
                     "runtime_mappings": {"full": {"type": "keyword",
                                                   "script": "emit(doc['first'].value)"}}})
    assert ids(r) == {i for i, d in mdocs.items() if d["first"] == "ann"}


def _num(v):
    return None if v is None else float(v)


def test_runtime_field_without_script_reads_source(es, mdocs):
    r = msearch(es, {"query": {"range": {"price": {"gte": 2}}}, "size": 100,
                     "fields": ["price", "tags"]})
    want = {i for i, d in mdocs.items() if _num(d["price"]) is not None and _num(d["price"]) >= 2}
    assert ids(r) == want
    for h in r["hits"]["hits"]:
        d = mdocs[h["_id"]]
        assert h["fields"]["price"] == [_num(d["price"])]
        if d["tags"]:
            assert sorted(h["fields"]["tags"]) == sorted(d["tags"])
        else:
            assert "tags" not in h["fields"]
    r = msearch(es, {"query": {"term": {"tags": "q"}}, "size": 100})
    assert ids(r) == {i for i, d in mdocs.items() if "q" in d["tags"]}
    r = msearch(es, {"query": {"exists": {"field": "price"}}, "size": 0,
                     "track_total_hits": True})
    assert r["hits"]["total"]["value"] == sum(d["price"] is not None for d in mdocs.values())


@pytest.mark.parametrize("body,path,etype", [
    ({"runtime": {"x": {"type": "nope"}}}, "_mapping", "mapper_parsing_exception"),
    ({"runtime": {"x": {"type": "long", "script": "emit("}}}, "_mapping",
     "mapper_parsing_exception"),
    ({"runtime": {"x": {"type": "long", "bogus": 1}}}, "_mapping", "mapper_parsing_exception"),
    ({"runtime": {"x": {"type": "ip"}}}, "_mapping", "mapper_parsing_exception"),
    ({"runtime": 3}, "_mapping", "mapper_parsing_exception"),
    ({"dynamic": "runtime"}, "_mapping", "mapper_parsing_exception"),
    ({"mappings": {"runtime": {"x": {"type": "nope"}}}}, "", "mapper_parsing_exception"),
    ({"mappings": {"dynamic": "runtime"}}, "", "mapper_parsing_exception"),
])
def test_refused_mapping_runtime(es, mdocs, body, path, etype):
    target = f"/{MINDEX}/{path}" if path else "/runtime_refused_create"
    with pytest.raises(ApiError) as ei:
        req(es, "PUT", target, body)
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["type"] == etype
    assert not es.indices.exists(index="runtime_refused_create")
    # nothing of the refused update was applied
    assert "x" not in req(es, "GET", f"/{MINDEX}/_mapping")[MINDEX]["mappings"]["runtime"]


def test_mapping_runtime_fields_survive_restart(tmp_path_factory):
    from elasticsearch import Elasticsearch
    from conftest import LodeServer, lode_binary
    s = LodeServer(lode_binary(), str(tmp_path_factory.mktemp("runtime_restart")))
    s.start()
    try:
        es = Elasticsearch(s.url)
        req(es, "PUT", "/rt", {"mappings": {
            "properties": {"a": {"type": "long"}},
            "runtime": {"a3": {"type": "long", "script": "emit(doc['a'].value * 3)"},
                        "b": {"type": "keyword"}}}})
        for i in range(5):
            es.index(index="rt", id=str(i), document={"a": i, "b": "v%d" % (i % 2)},
                     refresh=True)
        s.stop()
        s.generation = 0  # the same data directory
        s.start()
        es = Elasticsearch(s.url)
        m = req(es, "GET", "/rt/_mapping")["rt"]["mappings"]
        assert set(m["runtime"]) == {"a3", "b"}
        r = req(es, "POST", "/rt/_search", {"query": {"term": {"b": "v1"}},
                                            "sort": [{"a3": "asc"}]})
        assert [x["sort"][0] for x in r["hits"]["hits"]] == [3, 9]
    finally:
        s.stop()


def test_aggs_on_mapping_runtime_field_not_silent(es, mdocs):
    with pytest.raises(ApiError) as ei:
        msearch(es, {"size": 0, "aggs": {"x": {"histogram": {"field": "twice", "interval": 5}}}})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["root_cause"][0]["type"] == "illegal_argument_exception"

"""`_script` sort: a Painless script run per matching document, checked against an order
computed here from the documents the test indexes.

Sort values render as ES renders them: doubles for `type: number`, strings for
`type: string`; `search_after` pages on them; a runtime error is ES's `script_exception`.
"""

import random

import pytest
from elasticsearch import ApiError

import conftest

INDEX = "script_sort"
N = 120
MAPPING = {"properties": {
    "a": {"type": "long"},
    "b": {"type": "double"},
    "first": {"type": "keyword"},
    "last": {"type": "keyword"},
    "grp": {"type": "keyword"},
}}
FIRSTS = ["ann", "bob", "cid", "dee", "eve"]
LASTS = ["xu", "yang", "zed", "young"]


def _docs():
    rng = random.Random(7)
    out = {}
    for i in range(N):
        out[str(i)] = {"a": rng.randrange(-50, 50), "b": rng.randrange(0, 400) / 8,
                       "first": rng.choice(FIRSTS), "last": rng.choice(LASTS),
                       "grp": rng.choice(["g1", "g2", "g3"])}
    # No `a`: a script reading doc['a'].value on it fails.
    out["noa"] = {"first": "zz", "last": "zz", "grp": "none"}
    return out


@pytest.fixture(scope="module")
def docs(es):
    docs = _docs()
    conftest.make_index(es, INDEX, {"settings": {"number_of_shards": 2}, "mappings": MAPPING},
                        list(docs.items()))
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body):
    return es.perform_request("POST", f"/{INDEX}/_search", body=body,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


def failure(es, body):
    with pytest.raises(ApiError) as ei:
        search(es, body)
    return ei.value.meta.status, ei.value.body["error"]


WITH_A = {"bool": {"filter": [{"exists": {"field": "a"}}]}}


def num_sort(k, order="asc"):
    return {"_script": {"type": "number", "order": order,
                        "script": {"source": "doc['a'].value * params.k", "params": {"k": k}}}}


@pytest.mark.parametrize("k,order", [(3, "asc"), (-2, "asc"), (2.5, "desc")])
def test_number_sort_matches_oracle(es, docs, k, order):
    r = search(es, {"query": WITH_A, "size": 200, "sort": [num_sort(k, order), "_doc"]})
    hits = r["hits"]["hits"]
    assert len(hits) == N
    vals = [h["sort"][0] for h in hits]
    want = sorted((d["a"] * k for d in docs.values() if "a" in d), reverse=(order == "desc"))
    assert vals == [float(v) for v in want]
    # Numbers render as doubles, as ES's number script sort does.
    assert all(isinstance(v, float) for v in vals)
    for h in hits:
        assert h["sort"][0] == float(docs[h["_id"]]["a"] * k)
        assert h["_score"] is None


def test_string_sort_mixed_with_other_keys(es, docs):
    script = {"source": "doc['first'].value + ' ' + doc['last'].value"}
    sort = [{"grp": "desc"}, {"_script": {"type": "string", "script": script, "order": "asc"}},
            {"a": "asc"}]
    r = search(es, {"query": WITH_A, "size": 200, "sort": sort})
    rows = [h["sort"] for h in r["hits"]["hits"]]
    want = sorted(([d["grp"], d["first"] + " " + d["last"], d["a"]]
                   for d in docs.values() if "a" in d),
                  key=lambda x: (x[0], x[1], x[2]))
    # grp desc, then full name asc, then a asc
    want = sorted(want, key=lambda x: (x[1], x[2]))
    want = sorted(want, key=lambda x: x[0], reverse=True)
    assert rows == want


def test_search_after_pages_through_script_sort(es, docs):
    sort = [num_sort(1, "desc"), {"first": "asc"}, {"last": "asc"}, {"b": "asc"}, "_doc"]
    seen, after = [], None
    while True:
        body = {"query": WITH_A, "size": 17, "sort": sort}
        if after:
            body["search_after"] = after
        hits = search(es, body)["hits"]["hits"]
        if not hits:
            break
        seen += [h["_id"] for h in hits]
        after = hits[-1]["sort"]
    assert sorted(seen) == sorted(i for i, d in docs.items() if "a" in d)
    assert len(seen) == len(set(seen))
    vals = [docs[i]["a"] for i in seen]
    assert vals == sorted(vals, reverse=True)


def test_script_sort_reads_score(es, docs):
    q = {"bool": {"should": [{"term": {"grp": {"value": "g1", "boost": 3}}}],
                  "filter": WITH_A["bool"]["filter"]}}
    sort = [{"_script": {"type": "number", "order": "desc",
                         "script": "_score * 10 + doc['a'].value"}}]
    hits = search(es, {"query": q, "size": 200, "sort": sort})["hits"]["hits"]
    vals = [h["sort"][0] for h in hits]
    assert vals == sorted(vals, reverse=True)
    g1 = [h for h in hits if docs[h["_id"]]["grp"] == "g1"]
    other = [h for h in hits if docs[h["_id"]]["grp"] != "g1"]
    for h in other:
        assert h["sort"][0] == float(docs[h["_id"]]["a"])
    for h in g1:
        assert h["sort"][0] > docs[h["_id"]]["a"]


def test_script_sort_evaluated_per_matching_document(es, docs):
    # `noa` has no `a`: it only fails the search when it matches the query.
    r = search(es, {"query": {"term": {"grp": "g2"}}, "size": 5, "sort": [num_sort(1)]})
    assert all(docs[h["_id"]]["grp"] == "g2" for h in r["hits"]["hits"])
    # `noa` is on shard 0 of the 2 (ES's routing, murmur3 of the id): that shard fails, and
    # shard 1 answers (`allow_partial_search_results` defaults to true)
    r = search(es, {"query": {"match_all": {}}, "sort": [num_sort(1)], "size": 1000})
    assert (r["_shards"]["successful"], r["_shards"]["failed"]) == (1, 1)
    [f] = r["_shards"]["failures"]
    assert (f["index"], f["shard"], f["reason"]["type"]) == (INDEX, 0, "script_exception")
    shard1 = {i for i in docs if shard_of(i) == 1}
    assert {h["_id"] for h in r["hits"]["hits"]} == shard1
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", f"/{INDEX}/_search", params={"allow_partial_search_results": "false"},
                           body={"query": {"match_all": {}}, "sort": [num_sort(1)]},
                           headers={"content-type": "application/json", "accept": "application/json"})
    assert ei.value.meta.status == 400
    err = ei.value.body["error"]
    assert err["reason"] == "Partial shards failure"
    assert err["root_cause"][0]["type"] == "script_exception"
    assert [(f["index"], f["shard"]) for f in err["failed_shards"]] == [(INDEX, 0)]


def shard_of(doc_id):
    """The shard of 2 ES routes `doc_id` to (routing_num_shards 1024)."""
    from test_shard_partial_failure import murmur3_32
    return (murmur3_32(doc_id.encode("utf-16-le")) % 1024) // 512


def test_string_script_must_return_string(es, docs):
    status, err = failure(es, {"query": WITH_A, "sort": [
        {"_script": {"type": "string", "script": "doc['a'].value"}}]})
    assert status == 400
    types = {err["type"]} | {c["type"] for c in err.get("root_cause", [])}
    assert "script_exception" in types


@pytest.mark.parametrize("spec,etype", [
    ({"type": "number"}, "x_content_parse_exception"),
    ({"script": "1"}, "x_content_parse_exception"),
    ({"type": "nope", "script": "1"}, "illegal_argument_exception"),
    ({"type": "number", "script": "1", "bogus": 1}, "x_content_parse_exception"),
    ({"type": "number", "script": "1", "order": "sideways"}, "illegal_argument_exception"),
    ({"type": "number", "script": "1", "mode": "max"}, "parsing_exception"),
    ({"type": "version", "script": "'1.0'"}, "parsing_exception"),
    ({"type": "number", "script": "doc['a'].value +"}, "script_exception"),
])
def test_refused_script_sorts(es, docs, spec, etype):
    status, err = failure(es, {"sort": [{"_script": spec}]})
    assert status == 400
    types = {err["type"]} | {c["type"] for c in err.get("root_cause", [])}
    assert etype in types

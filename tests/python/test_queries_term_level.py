"""Term-level queries: term, terms, range (numbers, keywords), ids, exists,
prefix, wildcard, regexp, constant_score."""

import fnmatch
import re

import pytest
from elasticsearch import NotFoundError

import oracle


def total(es, query, index="accounts"):
    resp = es.search(index=index, body={"size": 0, "track_total_hits": True, "query": query}).body
    assert resp["hits"]["total"]["relation"] == "eq"
    return resp["hits"]["total"]["value"]


def ids(es, query, index="accounts", size=10000):
    resp = es.search(index=index, body={"size": size, "_source": False, "query": query}).body
    return sorted(h["_id"] for h in resp["hits"]["hits"])


CASES = [
    ("term keyword", {"term": {"acctType": "ESCROW"}}, lambda d: d["acctType"] == "ESCROW"),
    ("term keyword object form", {"term": {"acctType": {"value": "VIRTUAL", "boost": 2.0}}},
     lambda d: d["acctType"] == "VIRTUAL"),
    ("term keyword is case-sensitive", {"term": {"acctType": "escrow"}}, lambda d: False),
    ("term cjk keyword", {"term": {"balanceTypeName": "红包"}}, lambda d: d["balanceTypeName"] == "红包"),
    ("term integer", {"term": {"status": 2}}, lambda d: d["status"] == 2),
    ("term integer given as string", {"term": {"status": "3"}}, lambda d: d["status"] == 3),
    ("term double", {"term": {"balance": 0}}, lambda d: d["balance"] == 0),
    ("term on text matches one token", {"term": {"remark": "refund"}},
     lambda d: "refund" in oracle.analyze(d["remark"])),
    ("term on text is not analyzed", {"term": {"remark": "Refund"}}, lambda d: False),
    ("term on cjk text sub-field", {"term": {"userName.analyzed": "江"}},
     lambda d: "江" in d["userName"]),
    ("terms keyword", {"terms": {"balanceTypeName": ["消费", "罚款", "nope"]}},
     lambda d: d["balanceTypeName"] in ("消费", "罚款")),
    ("terms integer", {"terms": {"status": [1, 3]}}, lambda d: d["status"] in (1, 3)),
    ("range double", {"range": {"balance": {"gt": -100.5, "lte": 100.25}}},
     lambda d: -100.5 < d["balance"] <= 100.25),
    ("range double open", {"range": {"balance": {"gte": 100000}}}, lambda d: d["balance"] >= 100000),
    ("range integer with fractional bounds", {"range": {"status": {"gt": 0.5, "lt": 2.5}}},
     lambda d: 0.5 < d["status"] < 2.5),
    ("range keyword", {"range": {"acctId": {"gte": "A00000100000", "lt": "A00000100500"}}},
     lambda d: "A00000100000" <= d["acctId"] < "A00000100500"),
    ("exists on every doc", {"exists": {"field": "balance"}}, lambda d: True),
    ("exists unmapped", {"exists": {"field": "nope"}}, lambda d: False),
    ("prefix keyword", {"prefix": {"acctId": "A000001999"}}, lambda d: d["acctId"].startswith("A000001999")),
    ("prefix on text tokens", {"prefix": {"remark": "ref"}},
     lambda d: any(t.startswith("ref") for t in oracle.analyze(d["remark"]))),
    ("wildcard", {"wildcard": {"acctId": {"value": "A0000000*7"}}},
     lambda d: fnmatch.fnmatchcase(d["acctId"], "A0000000*7")),
    ("wildcard question mark", {"wildcard": {"acctId": "A0000012?00?"}},
     lambda d: fnmatch.fnmatchcase(d["acctId"], "A0000012?00?")),
    ("wildcard cjk", {"wildcard": {"userName": "*千米*"}}, lambda d: "千米" in d["userName"]),
    # A leading wildcard tests every term (the keyword column's dictionary).
    ("wildcard leading", {"wildcard": {"acctId": "*123"}},
     lambda d: fnmatch.fnmatchcase(d["acctId"], "*123")),
    ("wildcard leading question mark", {"wildcard": {"acctId": "?*1?3"}},
     lambda d: fnmatch.fnmatchcase(d["acctId"], "?*1?3")),
    ("wildcard leading case_insensitive", {"wildcard": {"acctId": {"value": "a*99", "case_insensitive": True}}},
     lambda d: fnmatch.fnmatchcase(d["acctId"].lower(), "a*99")),
    ("regexp leading", {"regexp": {"acctId": ".*1[23]3"}},
     lambda d: re.fullmatch(".*1[23]3", d["acctId"]) is not None),
    ("regexp", {"regexp": {"acctId": "A000001[0-4][0-9]{2}00"}},
     lambda d: re.fullmatch("A000001[0-4][0-9]{2}00", d["acctId"]) is not None),
    ("regexp alternation", {"regexp": {"acctType": {"value": "CRED.*|ESC.+"}}},
     lambda d: d["acctType"] in ("CREDIT", "ESCROW")),
    ("match_all", {"match_all": {}}, lambda d: True),
    ("match_none", {"match_none": {}}, lambda d: False),
]


@pytest.mark.parametrize("name,query,pred", CASES, ids=[c[0] for c in CASES])
def test_term_level_counts(es, accounts, corpus, name, query, pred):
    assert total(es, query) == corpus.count(pred)


ID_CASES = [c for c in CASES if c[0] in (
    "wildcard", "regexp", "prefix keyword", "range keyword", "wildcard question mark",
    "wildcard leading", "wildcard leading question mark", "wildcard leading case_insensitive",
    "regexp leading")]


@pytest.mark.parametrize("name,query,pred", ID_CASES, ids=[c[0] for c in ID_CASES])
def test_term_level_ids(es, accounts, corpus, name, query, pred):
    exp = sorted(corpus.ids(pred))
    assert 0 < len(exp) < 10000
    assert ids(es, query) == exp


def test_ids_query(es, accounts, corpus):
    want = ["1", "17", "19999", "20000", "999999", "abc"]
    assert ids(es, {"ids": {"values": want}}) == sorted(i for i in want if i in corpus.by_id)


def test_exists_and_missing_on_sparse(es, sparse):
    name, docs = sparse
    for field in ("score", "price", "tags", "day", "note"):
        exp = sorted(i for i, d in docs if field in d)
        assert ids(es, {"exists": {"field": field}}, index=name) == exp
        not_exp = sorted(i for i, d in docs if field not in d)
        assert ids(es, {"bool": {"must_not": [{"exists": {"field": field}}]}}, index=name) == not_exp


def test_terms_on_multi_valued(es, sparse):
    name, docs = sparse
    exp = sorted(i for i, d in docs if {"red", "black"} & set(d.get("tags", [])))
    assert ids(es, {"terms": {"tags": ["red", "black"]}}, index=name) == exp


def test_constant_score(es, accounts, corpus):
    resp = es.search(index="accounts", body={"size": 20, "query": {
        "constant_score": {"filter": {"term": {"balanceTypeName": "罚款"}}, "boost": 2.5}}}).body
    n = corpus.count(lambda d: d["balanceTypeName"] == "罚款")
    assert resp["hits"]["total"] == {"value": n, "relation": "eq"}
    assert resp["hits"]["max_score"] == 2.5
    assert all(h["_score"] == 2.5 for h in resp["hits"]["hits"])


def test_filter_context_scores_zero(es, accounts):
    resp = es.search(index="accounts", body={"size": 3, "query": {"bool": {"filter": {"term": {"status": 1}}}}}).body
    assert resp["hits"]["max_score"] == 0.0
    assert all(h["_score"] == 0.0 for h in resp["hits"]["hits"])


def test_term_query_score_is_positive_and_equal(es, accounts):
    resp = es.search(index="accounts", body={"size": 10, "query": {"term": {"acctType": "ESCROW"}}}).body
    scores = {h["_score"] for h in resp["hits"]["hits"]}
    assert len(scores) == 1 and scores.pop() > 0


def test_terms_lookup_fetches_the_terms_from_a_document(es):
    es.indices.create(index="lookup_src")
    es.indices.create(index="lookup_dst", mappings={"properties": {"u": {"type": "keyword"}}})
    try:
        for i, u in enumerate(["ann", "bob", "cid", "dee", "eve"]):
            es.index(index="lookup_dst", id=str(i), document={"u": u})
        es.index(index="lookup_src", id="1", document={"follows": ["bob", "eve"], "nested": {"x": ["cid"]}})
        es.index(index="lookup_src", id="2", routing="r", document={"follows": "ann"})
        es.indices.refresh(index="lookup_dst")

        def hits(terms, **kw):
            r = es.search(index="lookup_dst", query={"terms": {"u": terms}}, size=10, **kw)
            return sorted(h["_source"]["u"] for h in r["hits"]["hits"])

        # Real time: the source document need not be refreshed.
        assert hits({"index": "lookup_src", "id": "1", "path": "follows"}) == ["bob", "eve"]
        assert hits({"index": "lookup_src", "id": "1", "path": "nested.x"}) == ["cid"]
        assert hits({"index": "lookup_src", "id": "2", "path": "follows", "routing": "r"}) == ["ann"]
        assert hits({"index": "lookup_src", "id": "nope", "path": "follows"}) == []
        # In an aggregation filter and with size 0 (cached) the lookup follows the document.
        body = {"size": 0, "aggs": {"f": {"filter": {"terms": {"u": {"index": "lookup_src", "id": "1", "path": "follows"}}}}}}
        r = es.search(index="lookup_dst", **body)
        assert r["aggregations"]["f"]["doc_count"] == 2
        es.index(index="lookup_src", id="1", document={"follows": ["bob"]})
        r = es.search(index="lookup_dst", **body)
        assert r["aggregations"]["f"]["doc_count"] == 1
        with pytest.raises(NotFoundError):
            hits({"index": "no_such_index", "id": "1", "path": "follows"})
        # By-query APIs take lookups too.
        es.update_by_query(index="lookup_dst", refresh=True,
                           query={"terms": {"u": {"index": "lookup_src", "id": "1", "path": "follows"}}},
                           script={"source": "ctx._source.hit = true"})
        r = es.search(index="lookup_dst", query={"term": {"hit": True}})
        assert [h["_source"]["u"] for h in r["hits"]["hits"]] == ["bob"]
        es.delete_by_query(index="lookup_dst", refresh=True,
                           query={"terms": {"u": {"index": "lookup_src", "id": "2", "path": "follows", "routing": "r"}}})
        assert es.count(index="lookup_dst")["count"] == 4
    finally:
        es.indices.delete(index="lookup_src,lookup_dst")


def test_leading_patterns_repeated_over_segments_updates_and_deletes(es):
    """A segment's second leading-pattern query walks its reversed terms: the same answers as
    the first, on several segments, multi-byte terms, updated and deleted documents."""
    import random
    rnd = random.Random(11)
    alphabet = "ab01é語ßZ."
    values = {}
    es.indices.create(index="revpat", settings={"number_of_shards": 1},
                      mappings={"properties": {"k": {"type": "keyword"}}})
    try:
        for batch in range(4):
            ops = []
            for i in range(batch * 300, batch * 300 + 300):
                v = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 7)))
                     for _ in range(rnd.choice([1, 1, 2]))]
                values[str(i)] = v
                ops += [{"index": {"_index": "revpat", "_id": str(i)}}, {"k": v}]
            es.bulk(operations=ops, refresh=True)
        for i in rnd.sample(sorted(values), 150):
            es.delete(index="revpat", id=i)
            del values[i]
        for i in rnd.sample(sorted(values), 150):
            values[i] = ["x" + values[i][0] + "b0"]
            es.index(index="revpat", id=i, document={"k": values[i]})
        es.indices.refresh(index="revpat")

        def want(match):
            return sorted(i for i, vs in values.items() if any(match(v) for v in vs))

        cases = [
            ({"wildcard": {"k": "*b0"}}, lambda v: fnmatch.fnmatchcase(v, "*b0")),
            ({"wildcard": {"k": "*語?"}}, lambda v: re.fullmatch(".*語.", v, re.S) is not None),
            ({"wildcard": {"k": "*é"}}, lambda v: v.endswith("é")),
            ({"wildcard": {"k": "x*b0"}}, lambda v: fnmatch.fnmatchcase(v, "x*b0")),
            ({"wildcard": {"k": {"value": "X*B0", "case_insensitive": True}}},
             lambda v: fnmatch.fnmatchcase(v.lower(), "x*b0")),
            ({"wildcard": {"k": {"value": "*Zb", "case_insensitive": True}}},
             lambda v: v.lower().endswith("zb")),
            ({"regexp": {"k": ".*(1|ß)[a.]"}}, lambda v: re.fullmatch(".*(1|ß)[a.]", v, re.S) is not None),
            ({"wildcard": {"k": "*"}}, lambda v: True),
            ({"wildcard": {"k": "*a*"}}, lambda v: "a" in v),
            ({"wildcard": {"k": "*b0*"}}, lambda v: "b0" in v),
            ({"wildcard": {"k": "*語*?"}}, lambda v: re.fullmatch(".*語.*.", v, re.S) is not None),
            ({"regexp": {"k": ".*(é1|Z).*"}}, lambda v: "é1" in v or "Z" in v),
        ]
        for _ in range(3):
            for query, match in cases:
                assert ids(es, query, index="revpat") == want(match), query
    finally:
        es.indices.delete(index="revpat")


@pytest.mark.parametrize("kind,spec", [
    ("wildcard", {"value": "A00000000*"}), ("prefix", {"value": "A00000000"}),
    ("regexp", {"value": "A00000000[0-9]+"})])
def test_pattern_rewrite_constant_methods_score_the_boost_others_are_refused(es, accounts,
                                                                              corpus, kind, spec):
    from elasticsearch import BadRequestError
    want = corpus.count(lambda d: d["acctId"].startswith("A00000000"))
    for method in ["constant_score", "constant_score_blended", "constant_score_boolean"]:
        q = {kind: {"acctId": dict(spec, rewrite=method, boost=3.0)}}
        resp = es.search(index="accounts", size=5, query=q, track_total_hits=True).body
        assert resp["hits"]["total"]["value"] == want
        assert all(h["_score"] == 3.0 for h in resp["hits"]["hits"])
    for method, reason in [("scoring_boolean", "not supported"), ("top_terms_5", "not supported"),
                           ("bogus", "Failed to parse rewrite_method [bogus]")]:
        q = {kind: {"acctId": dict(spec, rewrite=method)}}
        with pytest.raises(BadRequestError) as e:
            es.search(index="accounts", size=5, query=q)
        err = e.value.body["error"]
        assert err["root_cause"][0]["type"] == "query_shard_exception"
        assert reason in err["root_cause"][0]["reason"]


def test_query_string_rewrite_is_constant_or_refused(es, accounts, corpus):
    from elasticsearch import BadRequestError
    want = corpus.count(lambda d: d["acctId"].startswith("A00000000"))
    q = {"query_string": {"query": "acctId:A00000000*", "rewrite": "constant_score"}}
    assert es.search(index="accounts", size=0, query=q,
                     track_total_hits=True)["hits"]["total"]["value"] == want
    with pytest.raises(BadRequestError) as e:
        es.search(index="accounts", size=0,
                  query={"query_string": {"query": "acctId:A00000000*", "rewrite": "top_terms_3"}})
    assert "not supported" in e.value.body["error"]["root_cause"][0]["reason"]

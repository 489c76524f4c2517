"""Painless in search: the `script` query over `doc` values, checked against an oracle
computed here from the same documents.

The user's report runs `terms` on `_id` plus the filter
`doc['sell_time'].value > params.now`; a document whose `sell_time` equals `now` is not a hit,
and one without `sell_time` fails the search with ES's `script_exception`.
"""

import random

import pytest
from elasticsearch import ApiError

INDEX = "scripts"
N = 400
NOW = 1700000000000
MAPPING = {"properties": {
    "sell_time": {"type": "long"},
    "sold": {"type": "date"},
    "price": {"type": "double"},
    "tag": {"type": "keyword"},
    "flag": {"type": "boolean"},
    "n": {"type": "integer"},
    "title": {"type": "text"},
}}


def _docs():
    rng = random.Random(11)
    out = []
    for i in range(N):
        d = {"sell_time": NOW + rng.choice([-2000, -1, 0, 0, 1, 5000]),
             "sold": NOW + rng.randrange(-10, 10) * 1000,
             "price": rng.randrange(0, 1000) / 4,
             "tag": rng.choice(["a", "b", "c"]),
             "flag": rng.random() < 0.5,
             "n": [rng.randrange(0, 10) for _ in range(rng.randrange(0, 4))],
             "title": "hello world"}
        out.append((str(i), d))
    # Documents without sell_time: any script reading its value fails.
    out.append(("missing1", {"tag": "a", "n": []}))
    out.append(("missing2", {"tag": "b", "price": 1.0}))
    return out


@pytest.fixture(scope="module")
def docs(es):
    docs = _docs()
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 2}, mappings=MAPPING)
    for k in range(0, len(docs), 150):
        ops = []
        for i, d in docs[k:k + 150]:
            ops += [{"index": {"_index": INDEX, "_id": i}}, d]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield dict(docs)
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body):
    return es.perform_request("POST", f"/{INDEX}/_search", body=body,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


def ids(r):
    return {h["_id"] for h in r["hits"]["hits"]}


def script_error(es, body):
    with pytest.raises(ApiError) as ei:
        search(es, body)
    assert ei.value.meta.status == 400
    err = ei.value.body["error"]
    # ES reports a shard failure: search_phase_execution_exception around script_exception.
    cause = err if err["type"] == "script_exception" else err["root_cause"][0]
    if err["type"] != "script_exception":
        assert err["type"] == "search_phase_execution_exception"
    assert cause["type"] == "script_exception"
    return err, cause


def shard_0_failure(es, body):
    """The failure of a search whose script throws on `missing1` or `missing2` only: both are
    on shard 0 of the 2 (ES's routing: murmur3 of the id), so ES fails that shard and answers
    with shard 1's results (`allow_partial_search_results` is true by default)."""
    r = search(es, body)
    sh = r["_shards"]
    assert (sh["total"], sh["successful"], sh["failed"]) == (2, 1, 1)
    assert [(f["index"], f["shard"]) for f in sh["failures"]] == [(INDEX, 0)]
    reason = sh["failures"][0]["reason"]
    assert reason["type"] == "script_exception"
    return r, reason


def with_cause(err):
    """The script_exception carrying caused_by (in failed_shards when wrapped)."""
    if err["type"] == "script_exception":
        return err
    return err["failed_shards"][0]["reason"] if "failed_shards" in err else err["caused_by"]


def test_users_filter(es, docs):
    rng = random.Random(3)
    chosen = rng.sample([i for i in docs if not i.startswith("missing")], 120)
    body = {"size": 1000, "query": {"bool": {"filter": [
        {"terms": {"_id": chosen}},
        {"script": {"script": {"source": "doc['sell_time'].value > params.now",
                               "params": {"now": NOW}}}},
    ]}}}
    r = search(es, body)
    want = {i for i in chosen if docs[i]["sell_time"] > NOW}
    assert ids(r) == want
    assert r["hits"]["total"]["value"] == len(want)
    # The equal case exists in the sample and is excluded.
    assert any(docs[i]["sell_time"] == NOW for i in chosen)


def test_users_filter_missing_field_fails(es, docs):
    body = {"query": {"bool": {"filter": [
        {"terms": {"_id": ["1", "missing1"]}},
        {"script": {"script": {"source": "doc['sell_time'].value > params.now",
                               "params": {"now": NOW}}}},
    ]}}}
    r, inner = shard_0_failure(es, body)
    # "1" is on shard 0 too: shard 1 has no hit
    assert r["hits"]["hits"] == []
    assert inner["reason"] == "runtime error"
    assert inner["caused_by"]["type"] == "illegal_state_exception"
    assert inner["caused_by"]["reason"].startswith("A document doesn't have a value for a field!")
    assert inner["lang"] == "painless"
    assert "position" in inner


@pytest.mark.parametrize("source,params,oracle", [
    ("doc['sell_time'].size() == 0 || doc['sell_time'].value >= params.now", {"now": NOW},
     lambda d: "sell_time" not in d or d["sell_time"] >= NOW),
    ("doc['sold'].size() > 0 && doc['sold'].value.millis < params.t", {"t": NOW},
     lambda d: "sold" in d and d["sold"] < NOW),
    ("!doc['sold'].empty && doc['sold'].value.toInstant().toEpochMilli() == params.t", {"t": NOW},
     lambda d: d.get("sold") == NOW),
    ("doc['price'].size() > 0 && doc['price'].value * 2 > params.p", {"p": 300},
     lambda d: "price" in d and d["price"] * 2 > 300),
    ("doc['tag'].value == params.tag", {"tag": "b"}, lambda d: d["tag"] == "b"),
    ("doc.containsKey('flag') && doc['flag'].size() == 1 && doc['flag'].value", {},
     lambda d: d.get("flag") is True),
    ("long s = 0; for (def v : doc['n']) { s += v; } return s >= params.m", {"m": 10},
     lambda d: sum(d.get("n", [])) >= 10),
    ("doc['n'].size() >= 2 && doc['n'][1] >= doc['n'].get(0)", {},
     lambda d: len(d.get("n", [])) >= 2),
])
def test_script_filters_match_oracle(es, docs, source, params, oracle):
    r = search(es, {"size": 1000, "query": {"bool": {"filter": {"script": {"script": {
        "source": source, "params": params}}}}}})
    want = {i for i, d in docs.items() if oracle(d)}
    assert ids(r) == want
    # The same filter after a selective clause: the intersection of both.
    r = search(es, {"size": 1000, "query": {"bool": {
        "must": {"term": {"tag": "a"}},
        "filter": {"script": {"script": {"source": source, "params": params}}}}}})
    assert ids(r) == {i for i in want if docs[i]["tag"] == "a"}


def test_script_query_as_string_and_boost(es, docs):
    r = search(es, {"size": 1000, "query": {"script": {"script": "doc['tag'].value == 'c'",
                                                       "boost": 2.5}}})
    want = {i for i, d in docs.items() if d["tag"] == "c"}
    assert ids(r) == want
    assert all(h["_score"] == 2.5 for h in r["hits"]["hits"])


def test_script_in_must_not_and_count(es, docs):
    q = {"bool": {"must_not": {"script": {"script": "doc['tag'].value == 'a'"}}}}
    r = es.perform_request("POST", f"/{INDEX}/_count", body={"query": q},
                           headers={"content-type": "application/json",
                                    "accept": "application/json"}).body
    assert r["count"] == sum(1 for d in docs.values() if d["tag"] != "a")


@pytest.mark.parametrize("source,cause_type,reason", [
    ("doc['nope'].value > 1", "illegal_argument_exception", "No field found for [nope] in mapping"),
    ("doc['title'].value == 'x'", "illegal_argument_exception", None),
    ("doc['sold'].value > params.now", "class_cast_exception", None),
    ("doc['tag'].value", "class_cast_exception", None),
])
def test_script_runtime_errors(es, docs, source, cause_type, reason):
    err, _ = script_error(es, {"query": {"script": {"script": {"source": source,
                                                              "params": {"now": NOW}}}}})
    inner = with_cause(err)
    assert inner["reason"] == "runtime error"
    assert inner["caused_by"]["type"] == cause_type
    if reason:
        assert inner["caused_by"]["reason"] == reason


def test_script_compile_error(es, docs):
    with pytest.raises(ApiError) as ei:
        search(es, {"query": {"script": {"script": "doc['tag'].value ==="}}})
    assert ei.value.meta.status == 400
    err = ei.value.body["error"]
    assert "script_exception" in (err["type"], err.get("root_cause", [{}])[0].get("type"))


def test_script_query_requires_script(es, docs):
    with pytest.raises(ApiError) as ei:
        search(es, {"query": {"script": {"boost": 1}}})
    assert ei.value.meta.status == 400


def test_script_runs_only_on_documents_the_other_clauses_match(es, docs):
    # `missing1` has no sell_time: were the script run on it, the search would fail. After a
    # selective clause it is only asked about the documents that clause matched.
    q = {"bool": {"filter": [
        {"script": {"script": {"source": "doc['sell_time'].value > params.now",
                               "params": {"now": NOW}}}},
        {"ids": {"values": ["1", "2", "3"]}},
    ]}}
    r = search(es, {"query": q})
    assert ids(r) == {i for i in ("1", "2", "3") if docs[i]["sell_time"] > NOW}
    q = {"bool": {"must": {"terms": {"_id": ["4", "5"]}}, "filter": q}}
    r = search(es, {"query": q})
    assert ids(r) == set()  # the ids of the outer and the inner filter do not overlap


# ---------------------------------------------------------------------------------------------
# script_score

SCORED = {"bool": {"filter": {"exists": {"field": "price"}}, "should": [
    {"constant_score": {"filter": {"term": {"tag": "a"}}, "boost": 2.0}},
]}}


def _inner(d):
    return 2.0 if d["tag"] == "a" else 0.0


@pytest.mark.parametrize("min_score,boost", [(None, 1.0), (100.0, 1.0), (None, 2.0)])
def test_script_score_matches_oracle(es, docs, min_score, boost):
    body = {"query": {"script_score": {
        "query": SCORED, "boost": boost,
        "script": {"source": "_score * params.f + doc['price'].value", "params": {"f": 10}}}},
        "size": 1000}
    if min_score is not None:
        body["query"]["script_score"]["min_score"] = min_score
    r = search(es, body)
    want = {}
    for i, d in docs.items():
        if "price" not in d:
            continue
        s = (_inner(d) * 10 + d["price"]) * boost
        if min_score is None or s >= min_score:
            want[i] = s
    got = {h["_id"]: h["_score"] for h in r["hits"]["hits"]}
    assert set(got) == set(want)
    assert r["hits"]["total"]["value"] == len(want)
    for i, s in want.items():
        assert got[i] == pytest.approx(s, rel=1e-6)
    # Hits come best first.
    scores = [h["_score"] for h in r["hits"]["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_script_score_errors(es, docs):
    _, inner = shard_0_failure(es, {"query": {"script_score": {
        "query": {"match_all": {}}, "script": "doc['sell_time'].value"}}})
    assert inner["caused_by"]["type"] == "illegal_state_exception"
    with pytest.raises(ApiError) as ei:
        search(es, {"query": {"script_score": {"query": {"match_all": {}}, "script": "-1"}}})
    assert ei.value.meta.status == 400
    assert "Must be a non-negative score!" in str(ei.value.body)
    for body in ({"script": "1"}, {"query": {"match_all": {}}}):
        with pytest.raises(ApiError) as ei:
            search(es, {"query": {"script_score": body}})
        assert ei.value.meta.status == 400


@pytest.mark.parametrize("boost_mode", ["replace", "multiply", "sum"])
def test_function_score_script_score(es, docs, boost_mode):
    fs = {"query": SCORED, "boost_mode": boost_mode, "functions": [
        {"script_score": {"script": {"source": "_score + doc['price'].value * params.f",
                                     "params": {"f": 2}}}},
        {"filter": {"term": {"tag": "b"}}, "weight": 3},
    ], "score_mode": "sum"}
    r = search(es, {"query": {"function_score": fs}, "size": 1000})
    want = {}
    for i, d in docs.items():
        if "price" not in d:
            continue
        q = _inner(d)
        f = q + d["price"] * 2 + (3 if d["tag"] == "b" else 0)
        want[i] = {"replace": f, "multiply": q * f, "sum": q + f}[boost_mode]
    got = {h["_id"]: h["_score"] for h in r["hits"]["hits"]}
    assert set(got) == set(want)
    for i, s in want.items():
        assert got[i] == pytest.approx(s, rel=1e-5, abs=1e-6)


def test_function_score_script_errors(es, docs):
    _, inner = shard_0_failure(es, {"query": {"function_score": {
        "query": {"match_all": {}}, "script_score": {"script": "doc['sell_time'].value"}}}})
    assert inner["caused_by"]["type"] == "illegal_state_exception"


def test_function_score_script_reads_runtime_fields(es, docs):
    # `doc['double_price']` is a runtime field of the search (shadowing nothing): the
    # function's script reads it as the other search scripts do.
    body = {"size": 1000, "_source": False,
            "runtime_mappings": {"double_price": {
                "type": "double", "script": "if (doc['price'].size() > 0) emit(doc['price'].value * 2)"}},
            "query": {"function_score": {
                "query": {"exists": {"field": "price"}}, "boost_mode": "replace",
                "functions": [{"script_score": {"script": {
                    "source": "doc['double_price'].value + params.k", "params": {"k": 1}}}}]}},
            # ... and so do aggregation scripts.
            "aggs": {"s": {"sum": {"script": "doc['double_price'].value"}}}}
    r = search(es, body)
    assert r["aggregations"]["s"]["value"] == pytest.approx(
        sum(d["price"] * 2 for d in docs.values() if "price" in d))
    want = {i: d["price"] * 2 + 1 for i, d in docs.items() if "price" in d}
    got = {h["_id"]: h["_score"] for h in r["hits"]["hits"]}
    assert set(got) == set(want)
    for i, s in want.items():
        assert got[i] == pytest.approx(s, rel=1e-6)


# ---------------------------------------------------------------------------------------------
# script_fields


def test_script_fields(es, docs):
    body = {"size": 1000, "query": {"exists": {"field": "price"}}, "script_fields": {
        "double_price": {"script": {"source": "doc['price'].value * params.f",
                                    "params": {"f": 2}}},
        "tags": {"script": "def l = []; for (def v : doc['n']) { l.add(v + 1) } return l"},
        "late": {"script": "doc['sell_time'].size() > 0 && doc['sell_time'].value > 1700000000000L"},
    }}
    r = search(es, body)
    got = {h["_id"]: h for h in r["hits"]["hits"]}
    assert set(got) == {i for i, d in docs.items() if "price" in d}
    for i, h in got.items():
        d = docs[i]
        f = h["fields"]
        assert f["double_price"] == [pytest.approx(d["price"] * 2)]
        assert f["tags"] == sorted(v + 1 for v in d.get("n", []))
        assert f["late"] == ["sell_time" in d and d["sell_time"] > NOW]
        assert "_source" in h


def test_script_fields_failure_and_ignore_failure(es, docs):
    body = {"query": {"ids": {"values": ["missing2"]}},
            "script_fields": {"t": {"script": "doc['sell_time'].value"}}}
    err, _ = script_error(es, body)
    body["script_fields"]["t"]["ignore_failure"] = True
    body["script_fields"]["ok"] = {"script": "doc['tag'].value"}
    r = search(es, body)
    assert r["hits"]["hits"][0]["fields"] == {"ok": ["b"]}


def test_script_fields_over_scroll_pages(es, docs):
    r = es.search(index=INDEX, scroll="1m", size=50, sort=["_doc"],
                  script_fields={"t": {"script": "doc['tag'].value + '!'"}})
    seen = 0
    while r["hits"]["hits"]:
        for h in r["hits"]["hits"]:
            assert h["fields"] == {"t": [docs[h["_id"]]["tag"] + "!"]}
            seen += 1
        r = es.scroll(scroll_id=r["_scroll_id"], scroll="1m")
    assert seen == len(docs)


def test_stored_scripts_in_search(es, docs):
    """`{"id": ...}` names a stored script wherever a search takes a script."""
    es.put_script(id="price_over", script={"lang": "painless",
                                           "source": "doc['price'].value > params.min"})
    es.put_script(id="double_price", script={"lang": "painless",
                                             "source": "doc['price'].value * 2"})
    try:
        priced = {i: d for i, d in docs.items() if "price" in d}
        want = sorted(i for i, d in priced.items() if d["price"] > 100)
        query = {"bool": {"filter": [
            {"exists": {"field": "price"}},
            {"script": {"script": {"id": "price_over", "params": {"min": 100}}}}]}}
        r = es.search(index=INDEX, query=query, size=1000,
                      script_fields={"p2": {"script": {"id": "double_price"}}})
        assert sorted(h["_id"] for h in r["hits"]["hits"]) == want
        for h in r["hits"]["hits"]:
            assert h["fields"]["p2"] == [docs[h["_id"]]["price"] * 2]
        assert es.count(index=INDEX, query=query)["count"] == len(want)
        ms = es.msearch(searches=[{"index": INDEX}, {"query": query, "size": 0},
                                  {"index": INDEX},
                                  {"query": {"script": {"script": {"id": "nope"}}}}])
        first, second = ms["responses"]
        assert first["hits"]["total"]["value"] == len(want)
        assert second["status"] == 404
        assert second["error"]["type"] == "resource_not_found_exception"
        with pytest.raises(ApiError) as e:
            es.search(index=INDEX, query={"script": {"script": {"id": "nope"}}})
        assert e.value.meta.status == 404
        assert e.value.body["error"]["reason"] == "unable to find script [nope] in cluster state"
    finally:
        es.delete_script(id="price_over")
        es.delete_script(id="double_price")


@pytest.mark.parametrize("script_first", [False, True])
def test_script_in_conjunction_skips_documents_the_filter_excludes(es, script_first):
    """A document without the field that another clause excludes is never given to the
    script, in search and in count, whatever the order of the clauses."""
    name = "scripts_conj"
    es.options(ignore_status=404).indices.delete(index=name)
    es.indices.create(index=name, mappings={"properties": {
        "price": {"type": "double"}, "tag": {"type": "keyword"}}})
    ops = [{"index": {"_index": name, "_id": "nofield"}}, {"tag": "x"}]
    for i in range(50):
        ops += [{"index": {"_index": name, "_id": str(i)}}, {"tag": "y", "price": i}]
    es.bulk(operations=ops, refresh=True)
    clauses = [{"term": {"tag": "y"}},
               {"script": {"script": "doc['price'].value >= 10"}}]
    if script_first:
        clauses.reverse()
    q = {"bool": {"filter": clauses}}
    try:
        assert es.count(index=name, query=q)["count"] == 40
        assert es.search(index=name, query=q, size=0, track_total_hits=True)[
            "hits"]["total"]["value"] == 40
    finally:
        es.indices.delete(index=name)


def _script_stats(es):
    nodes = es.nodes.stats(metric="script,script_cache")["nodes"]
    (node,) = nodes.values()
    return node["script"], node["script_cache"]["sum"]


def test_node_stats_count_script_compilations(es, docs):
    before, cache_before = _script_stats(es)
    assert before["cache_evictions"] == 0 and before["compilation_limit_triggered"] == 0
    assert cache_before == before
    n = 3
    for i in range(n):
        es.search(index=INDEX, query={"script": {"script": {"source": "doc['sell_time'].size() > %d" % i}}})
    after, _ = _script_stats(es)
    # Lode keeps no compiled-script cache: every search compiles its script, once for the
    # request whatever the number of shards (the index has two).
    assert after["compilations"] - before["compilations"] == n
    # ... and so do the script_score query and function_score's script functions.
    before, _ = _script_stats(es)
    es.search(index=INDEX, query={"script_score": {"query": {"match_all": {}}, "script": "1"}})
    es.search(index=INDEX, query={"function_score": {"functions": [
        {"script_score": {"script": "2"}}, {"script_score": {"script": "3"}}]}})
    after, _ = _script_stats(es)
    assert after["compilations"] - before["compilations"] == 3


def test_keyword_doc_values_are_sorted_and_distinct(es):
    """`doc['k']` of a multi-valued keyword is ES's `SortedSetDocValues`: sorted, each term
    once, whatever the order and repeats in `_source`; read the same way from hit to hit and
    from a runtime field, and a script that changes `params` sees them afresh each hit."""
    index = "scripts_kw_sorted"
    rng = random.Random(5)
    words = ["pear", "apple", "fig", "kiwi", "banana", "Zed", "éclair"]
    docs = {str(i): {"k": [rng.choice(words) for _ in range(rng.randrange(0, 5))]}
            for i in range(60)}
    es.indices.create(index=index, mappings={"properties": {"k": {"type": "keyword"}}})
    try:
        items = list(docs.items())
        for part in (items[:20], items[20:45], items[45:]):
            ops = []
            for i, d in part:
                ops += [{"index": {"_index": index, "_id": i}}, d]
            assert es.bulk(operations=ops, refresh=True)["errors"] is False
        r = es.search(index=index, size=100, runtime_mappings={
            "firsts": {"type": "keyword",
                       "script": "for (String v : doc['k']) { emit(v.substring(0, 1)) }"}},
            fields=["firsts"], script_fields={
                "all": {"script": "def l = []; for (def v : doc['k']) { l.add(v) } return l"},
                "seen": {"script": {"source": "params.seen.add(1); params.seen.size()",
                                    "params": {"seen": []}}}})
        assert r["hits"]["total"]["value"] == len(docs)
        for h in r["hits"]["hits"]:
            # Java's String order is by UTF-16 unit; these words compare the same by bytes
            want = sorted(set(docs[h["_id"]]["k"]))
            assert h["fields"]["all"] == want, h["_id"]
            assert h["fields"]["seen"] == [1]
            firsts = sorted(set(w[0] for w in want))
            if firsts:
                assert sorted(h["fields"]["firsts"]) == firsts
            else:
                assert "firsts" not in h["fields"]
    finally:
        es.indices.delete(index=index, ignore_unavailable=True)

"""`nested` documents with Elasticsearch's block-join semantics.

Every expected answer is computed here from the documents the test indexes: a nested query
is evaluated per object in Python, counts come from the roots, nested aggregation doc counts
from the number of objects.
"""

import math
import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

FIRST = ["john", "alice", "bob", "eve", "mallory"]
LAST = ["smith", "white", "jones", "brown"]
KINDS = ["cat", "dog", "fish"]

MAPPING = {"properties": {
    "group": {"type": "keyword"},
    "n": {"type": "integer"},
    "users": {"type": "nested", "properties": {
        "first": {"type": "keyword"},
        "last": {"type": "keyword"},
        "age": {"type": "integer"},
        "pets": {"type": "nested", "properties": {"kind": {"type": "keyword"}}},
    }},
}}


def gen_docs(seed=7, n=120):
    rnd = random.Random(seed)
    docs = []
    for i in range(n):
        d = {"group": rnd.choice(["g1", "g2", "g3"]), "n": i}
        k = rnd.randrange(0, 5)
        if k or rnd.random() < 0.5:
            users = []
            for _ in range(k):
                u = {"first": rnd.choice(FIRST), "last": rnd.choice(LAST), "age": rnd.randrange(10, 80)}
                if rnd.random() < 0.5:
                    u["pets"] = [{"kind": rnd.choice(KINDS)} for _ in range(rnd.randrange(1, 3))]
                users.append(u)
            d["users"] = users
        docs.append((str(i), d))
    return docs


def users_of(d):
    return d.get("users") or []


def ids(resp):
    return sorted(h["_id"] for h in resp["hits"]["hits"])


@pytest.fixture(scope="module")
def nested_index(es):
    docs = gen_docs()
    make_index(es, "nested_users", {"mappings": MAPPING}, docs)
    return "nested_users", dict(docs)


def search(es, index, body):
    return es.search(index=index, body={"size": 1000, **body}).body


def test_nested_bool_matches_within_one_object(es, nested_index):
    index, docs = nested_index
    for first in FIRST:
        for last in LAST:
            q = {"nested": {"path": "users", "query": {"bool": {"must": [
                {"term": {"users.first": first}}, {"term": {"users.last": last}}]}}}}
            expected = sorted(i for i, d in docs.items()
                              if any(u["first"] == first and u["last"] == last for u in users_of(d)))
            resp = search(es, index, {"query": q})
            assert ids(resp) == expected, (first, last)
            assert resp["hits"]["total"]["value"] == len(expected)
            assert es.count(index=index, query=q)["count"] == len(expected)


def test_nested_fields_are_not_on_the_root(es, nested_index):
    index, docs = nested_index
    assert search(es, index, {"query": {"term": {"users.first": "john"}}})["hits"]["total"]["value"] == 0
    assert search(es, index, {"query": {"exists": {"field": "users.first"}}})["hits"]["total"]["value"] == 0


def test_counts_see_roots_only(es, nested_index):
    index, docs = nested_index
    resp = search(es, index, {"query": {"match_all": {}}})
    assert resp["hits"]["total"]["value"] == len(docs)
    assert ids(resp) == sorted(docs)
    assert es.count(index=index)["count"] == len(docs)
    cat = es.cat.count(index=index, format="json")
    assert int(cat[0]["count"]) == len(docs)
    g1 = sorted(i for i, d in docs.items() if d["group"] == "g1")
    assert ids(search(es, index, {"query": {"term": {"group": "g1"}}})) == g1
    # Sorting and paging over roots only.
    resp = search(es, index, {"sort": [{"n": "desc"}], "size": 5})
    assert [h["_id"] for h in resp["hits"]["hits"]] == [str(i) for i in range(len(docs) - 1, len(docs) - 6, -1)]


def test_score_modes(es, nested_index):
    index, docs = nested_index
    for mode in ["avg", "sum", "max", "min", "none"]:
        q = {"nested": {"path": "users", "score_mode": mode, "query": {"function_score": {
            "query": {"range": {"users.age": {"gte": 30}}},
            "functions": [{"field_value_factor": {"field": "users.age"}}], "boost_mode": "replace"}}}}
        resp = search(es, index, {"query": q})
        got = {h["_id"]: h["_score"] for h in resp["hits"]["hits"]}
        expected = {}
        for i, d in docs.items():
            ages = [u["age"] for u in users_of(d) if u["age"] >= 30]
            if not ages:
                continue
            expected[i] = {"avg": sum(ages) / len(ages), "sum": sum(ages), "max": max(ages),
                           "min": min(ages), "none": 0.0}[mode]
        assert sorted(got) == sorted(expected), mode
        for i, s in expected.items():
            assert got[i] == pytest.approx(s, rel=1e-5), (mode, i)


def test_nested_in_nested(es, nested_index):
    index, docs = nested_index
    for first in FIRST[:3]:
        for kind in KINDS:
            q = {"nested": {"path": "users", "query": {"bool": {"must": [
                {"term": {"users.first": first}},
                {"nested": {"path": "users.pets", "query": {"term": {"users.pets.kind": kind}}}}]}}}}
            expected = sorted(i for i, d in docs.items() if any(
                u["first"] == first and any(p["kind"] == kind for p in u.get("pets", []))
                for u in users_of(d)))
            assert ids(search(es, index, {"query": q})) == expected, (first, kind)


def test_nested_query_errors_and_ignore_unmapped(es, nested_index):
    index, _ = nested_index
    with pytest.raises(BadRequestError) as e:
        search(es, index, {"query": {"nested": {"path": "group", "query": {"match_all": {}}}}})
    assert "failed to find nested object under path [group]" in str(e.value)
    resp = search(es, index, {"query": {"nested": {"path": "nope", "ignore_unmapped": True,
                                                    "query": {"match_all": {}}}}})
    assert resp["hits"]["total"]["value"] == 0


def test_nested_aggregation(es, nested_index):
    index, docs = nested_index
    resp = search(es, index, {"size": 0, "query": {"term": {"group": "g2"}}, "aggs": {
        "u": {"nested": {"path": "users"}, "aggs": {
            "first": {"terms": {"field": "users.first", "size": 10}},
            "age": {"stats": {"field": "users.age"}}}}}})
    users = [u for d in docs.values() if d["group"] == "g2" for u in users_of(d)]
    agg = resp["aggregations"]["u"]
    assert agg["doc_count"] == len(users)
    counts = {}
    for u in users:
        counts[u["first"]] = counts.get(u["first"], 0) + 1
    assert {b["key"]: b["doc_count"] for b in agg["first"]["buckets"]} == counts
    ages = [u["age"] for u in users]
    assert agg["age"]["count"] == len(ages)
    assert agg["age"]["sum"] == sum(ages)
    assert agg["age"]["min"] == min(ages) and agg["age"]["max"] == max(ages)


def test_reverse_nested(es, nested_index):
    index, docs = nested_index
    resp = search(es, index, {"size": 0, "query": {"terms": {"group": ["g1", "g3"]}}, "aggs": {
        "u": {"nested": {"path": "users"}, "aggs": {
            "back": {"reverse_nested": {}},
            "first": {"terms": {"field": "users.first", "size": 10}, "aggs": {
                "roots": {"reverse_nested": {}},
                "old": {"range": {"field": "users.age", "ranges": [{"from": 50}]}, "aggs": {
                    "roots": {"reverse_nested": {}}}}}}}}}})
    picked = {i: d for i, d in docs.items() if d["group"] in ("g1", "g3")}
    agg = resp["aggregations"]["u"]
    assert agg["back"]["doc_count"] == sum(1 for d in picked.values() if users_of(d))
    for b in agg["first"]["buckets"]:
        with_first = [d for d in picked.values() if any(u["first"] == b["key"] for u in users_of(d))]
        assert b["roots"]["doc_count"] == len(with_first), b["key"]
        old = [d for d in picked.values()
               if any(u["first"] == b["key"] and u["age"] >= 50 for u in users_of(d))]
        assert b["old"]["buckets"][0]["roots"]["doc_count"] == len(old), b["key"]


def test_reverse_nested_refusals(es, nested_index):
    index, _ = nested_index
    with pytest.raises(BadRequestError) as e:
        search(es, index, {"size": 0, "aggs": {"g": {"terms": {"field": "group"}, "aggs": {
            "back": {"reverse_nested": {}}}}}})
    assert "can only be used inside a [nested] aggregation" in str(e.value)
    with pytest.raises(BadRequestError):
        search(es, index, {"size": 0, "query": {"nested": {
            "path": "users", "query": {"match_all": {}}, "inner_hits": {"rescore": {}}}}})


def test_inner_hits(es, nested_index):
    index, docs = nested_index
    q = {"nested": {"path": "users", "query": {"term": {"users.first": "john"}},
                    "inner_hits": {"name": "johns", "size": 2, "_source": ["users.last"]}}}
    resp = search(es, index, {"query": q})
    hits = resp["hits"]["hits"]
    assert hits
    for h in hits:
        users = users_of(docs[h["_id"]])
        offsets = [k for k, u in enumerate(users) if u["first"] == "john"]
        inner = h["inner_hits"]["johns"]["hits"]
        assert inner["total"] == {"value": len(offsets), "relation": "eq"}
        # Equal constant scores: ties in document (offset) order.
        got = [x["_nested"] for x in inner["hits"]]
        assert got == [{"field": "users", "offset": k} for k in offsets[:2]]
        for x, k in zip(inner["hits"], offsets):
            assert x["_id"] == h["_id"] and x["_index"] == index
            assert x["_source"] == {"last": users[k]["last"]}
    with pytest.raises(BadRequestError) as e:
        search(es, index, {"query": {"nested": {"path": "users", "query": {"match_all": {}},
                                                 "inner_hits": {"size": 101}}}})
    assert "Inner result window is too large" in str(e.value)


@pytest.mark.parametrize("sort", [
    [{"users.age": "desc"}],
    [{"users.last": "asc"}, {"users.age": {"order": "desc"}}],
    ["users.first", {"_score": "desc"}],
])
def test_inner_hits_sort(es, nested_index, sort):
    index, docs = nested_index
    q = {"nested": {"path": "users", "query": {"range": {"users.age": {"gte": 30}}},
                    "inner_hits": {"size": 3, "sort": sort, "_source": False}}}
    resp = search(es, index, {"query": q})
    hits = resp["hits"]["hits"]
    assert hits

    def keys(u):
        out = []
        for s in sort:
            name, order = (s, "asc") if isinstance(s, str) else next(iter(s.items()))
            order = order if isinstance(order, str) else order["order"]
            out.append((name, order, None if name == "_score" else u[name.split(".")[1]]))
        return out

    for h in hits:
        users = users_of(docs[h["_id"]])
        matched = [(k, u) for k, u in enumerate(users) if u["age"] >= 30]
        # Stable sorts from the last key to the first; ties stay in offset order.
        ranked = list(matched)
        for i in reversed(range(len(sort))):
            name, order, _ = keys(ranked[0][1])[i] if ranked else (None, None, None)
            if name == "_score":
                continue  # a constant-score range: every score is equal
            ranked.sort(key=lambda ku: ku[1][name.split(".")[1]], reverse=order == "desc")
        inner = h["inner_hits"]["users"]["hits"]
        assert inner["total"]["value"] == len(matched)
        assert [x["_nested"]["offset"] for x in inner["hits"]] == [k for k, _ in ranked[:3]]
        for x, (k, u) in zip(inner["hits"], ranked):
            want = [v for (_, _, v) in keys(u)]
            got = x["sort"]
            for i, (name, _, v) in enumerate(keys(u)):
                if name != "_score":
                    assert got[i] == v
            assert "_source" not in x
        scored = any((isinstance(s, dict) and "_score" in s) for s in sort)
        assert (inner["max_score"] is None) == (not scored)


def test_inner_hits_version_and_seq_no_are_the_roots(es):
    index = "nested_versions"
    if es.indices.exists(index=index):
        es.indices.delete(index=index)
    es.indices.create(index=index, mappings=MAPPING)
    writes = 0
    for n in range(3):  # three writes of doc 1: version 3, seq_no 2 (doc 2 written once)
        es.index(index=index, id="1", document={"users": [{"first": "john", "age": n}]})
        writes += 1
    es.index(index=index, id="2", document={"users": [{"first": "john", "age": 9}]})
    es.indices.refresh(index=index)
    q = {"nested": {"path": "users", "query": {"match_all": {}},
                    "inner_hits": {"version": True, "seq_no_primary_term": True}}}
    resp = search(es, index, {"query": q, "version": True, "seq_no_primary_term": True})
    by_id = {h["_id"]: h for h in resp["hits"]["hits"]}
    want = {"1": (writes, writes - 1), "2": (1, writes)}
    for i, (version, seq_no) in want.items():
        h = by_id[i]
        assert (h["_version"], h["_seq_no"]) == (version, seq_no)
        for x in h["inner_hits"]["users"]["hits"]["hits"]:
            assert (x["_version"], x["_seq_no"], x["_primary_term"]) == \
                (version, seq_no, h["_primary_term"])
    es.indices.delete(index=index)


def test_inner_hits_docvalue_fields_and_fields(es, nested_index):
    index, docs = nested_index
    q = {"nested": {"path": "users", "query": {"term": {"users.last": "smith"}},
                    "inner_hits": {"size": 10, "_source": False,
                                   "docvalue_fields": ["users.age", {"field": "users.f*"}],
                                   "fields": ["users.last"]}}}
    resp = search(es, index, {"query": q})
    assert resp["hits"]["hits"]
    for h in resp["hits"]["hits"]:
        users = users_of(docs[h["_id"]])
        inner = h["inner_hits"]["users"]["hits"]["hits"]
        assert [x["_nested"]["offset"] for x in inner] == \
            [k for k, u in enumerate(users) if u["last"] == "smith"][:10]
        for x in inner:
            u = users[x["_nested"]["offset"]]
            assert x["fields"] == {"users.age": [u["age"]], "users.first": [u["first"]],
                                   "users.last": [u["last"]]}


def test_update_and_delete_remove_the_block(es):
    index = "nested_rw"
    make_index(es, index, {"mappings": MAPPING}, [
        ("a", {"group": "g1", "users": [{"first": "john", "last": "smith", "age": 1}]}),
        ("b", {"group": "g1", "users": [{"first": "john", "last": "white", "age": 2}]}),
    ])
    john = {"nested": {"path": "users", "query": {"term": {"users.first": "john"}}}}
    assert ids(search(es, index, {"query": john})) == ["a", "b"]
    es.index(index=index, id="a", document={"group": "g1", "users": [{"first": "eve", "last": "x", "age": 3}]},
             refresh=True)
    assert ids(search(es, index, {"query": john})) == ["b"]
    es.update(index=index, id="b", doc={"users": [{"first": "bob", "last": "y", "age": 4}]}, refresh=True)
    assert ids(search(es, index, {"query": john})) == []
    resp = search(es, index, {"size": 0, "aggs": {"u": {"nested": {"path": "users"}}}})
    assert resp["aggregations"]["u"]["doc_count"] == 2
    es.delete(index=index, id="a", refresh=True)
    resp = search(es, index, {"size": 0, "aggs": {"u": {"nested": {"path": "users"}}}})
    assert resp["aggregations"]["u"]["doc_count"] == 1
    assert es.count(index=index)["count"] == 1
    es.delete_by_query(index=index, query={"match_all": {}}, refresh=True)
    resp = search(es, index, {"size": 0, "aggs": {"u": {"nested": {"path": "users"}}}})
    assert resp["aggregations"]["u"]["doc_count"] == 0
    assert es.count(index=index)["count"] == 0
    es.indices.delete(index=index)


def test_include_in_parent_and_root(es):
    index = "nested_incl"
    mapping = {"properties": {"a": {"type": "nested", "include_in_parent": True, "properties": {
        "x": {"type": "keyword"},
        "b": {"type": "nested", "include_in_root": True, "properties": {"y": {"type": "keyword"}}}}}}}
    make_index(es, index, {"mappings": mapping}, [
        ("1", {"a": [{"x": "p", "b": [{"y": "q"}]}, {"x": "r", "b": [{"y": "s"}]}]}),
    ])
    # Flattened copies on the root: cross-object matches there, not in the nested query.
    cross = {"bool": {"must": [{"term": {"a.x": "p"}}, {"term": {"a.b.y": "s"}}]}}
    assert ids(search(es, index, {"query": cross})) == ["1"]
    nested = {"nested": {"path": "a", "query": {"bool": {"must": [
        {"term": {"a.x": "p"}}, {"nested": {"path": "a.b", "query": {"term": {"a.b.y": "s"}}}}]}}}}
    assert ids(search(es, index, {"query": nested})) == []
    m = es.indices.get_mapping(index=index)[index]["mappings"]["properties"]["a"]
    assert m["type"] == "nested" and m["include_in_parent"] is True
    assert m["properties"]["b"]["include_in_root"] is True
    es.indices.delete(index=index)


def test_limits(es):
    index = "nested_limits"
    if es.indices.exists(index=index):
        es.indices.delete(index=index)
    es.indices.create(index=index, settings={"index.mapping.nested_objects.limit": 2},
                      mappings={"properties": {"u": {"type": "nested"}}})
    es.index(index=index, id="1", document={"u": [{"a": 1}, {"a": 2}]})
    with pytest.raises(BadRequestError) as e:
        es.index(index=index, id="2", document={"u": [{"a": 1}, {"a": 2}, {"a": 3}]})
    assert ("The number of nested documents has exceeded the allowed limit of [2]. This limit can be set "
            "by changing the [index.mapping.nested_objects.limit] index level setting.") in str(e.value)
    es.indices.delete(index=index)
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index=index, settings={"index.mapping.nested_fields.limit": 1},
                          mappings={"properties": {"u": {"type": "nested"}, "v": {"type": "nested"}}})
    assert "Limit of nested fields [1] has been exceeded" in str(e.value)


@pytest.mark.parametrize("mode,order", [("max", "desc"), ("min", "asc"), ("avg", "desc"), ("sum", "asc")])
def test_nested_sort(es, nested_index, mode, order):
    index, docs = nested_index
    sort = [{"users.age": {"order": order, "mode": mode, "nested": {
        "path": "users", "filter": {"terms": {"users.first": ["john", "alice"]}}}}}, {"n": "asc"}]
    resp = search(es, index, {"sort": sort, "size": 40})
    # ES rounds the average of longs with Java's Math.round.
    reduce = {"max": max, "min": min, "avg": lambda v: math.floor(sum(v) / len(v) + 0.5), "sum": sum}[mode]
    rows = []
    for i, d in docs.items():
        ages = [u["age"] for u in users_of(d) if u["first"] in ("john", "alice")]
        rows.append((reduce(ages) if ages else None, d["n"], i))
    present = sorted((r for r in rows if r[0] is not None),
                     key=lambda r: ((-r[0] if order == "desc" else r[0]), r[1]))
    missing = sorted((r for r in rows if r[0] is None), key=lambda r: r[1])
    expected = (present + missing)[:40]
    assert [h["_id"] for h in resp["hits"]["hits"]] == [r[2] for r in expected]
    for h, r in zip(resp["hits"]["hits"], expected):
        if r[0] is not None:
            assert h["sort"][0] == r[0]


def test_global_and_significant_terms_see_roots(es, nested_index):
    index, docs = nested_index
    resp = search(es, index, {"size": 0, "query": {"term": {"group": "g1"}}, "aggs": {
        "all": {"global": {}, "aggs": {"top": {"top_hits": {"size": 100, "_source": False, "sort": [{"n": "asc"}]}}}},
        "sig": {"significant_terms": {"field": "group", "min_doc_count": 1}}}})
    g = resp["aggregations"]["all"]
    assert g["doc_count"] == len(docs)
    first = sorted(docs.values(), key=lambda d: d["n"])[:100]
    assert [h["_id"] for h in g["top"]["hits"]["hits"]] == [str(d["n"]) for d in first]
    assert g["top"]["hits"]["total"]["value"] == len(docs)
    sig = resp["aggregations"]["sig"]
    g1 = sum(1 for d in docs.values() if d["group"] == "g1")
    assert sig["doc_count"] == g1
    assert [(b["key"], b["doc_count"], b["bg_count"]) for b in sig["buckets"]] == [("g1", g1, g1)]


def test_inner_hits_highlight(es):
    index = "nested_highlight"
    if es.indices.exists(index=index):
        es.indices.delete(index=index)
    es.indices.create(index=index, mappings={"properties": {"c": {"type": "nested", "properties": {
        "body": {"type": "text"}}}}})
    docs = {"1": ["the quick brown fox", "lazy dog sleeps", "quick dog"],
            "2": ["nothing here"], "3": ["Quick quick"]}
    for i, bodies in docs.items():
        es.index(index=index, id=i, document={"c": [{"body": b} for b in bodies]})
    es.indices.refresh(index=index)
    q = {"nested": {"path": "c", "query": {"match": {"c.body": "quick"}},
                    "inner_hits": {"size": 10, "highlight": {"fields": {"c.body": {}}}}}}
    resp = search(es, index, {"query": q})
    assert sorted(h["_id"] for h in resp["hits"]["hits"]) == \
        sorted(i for i, bs in docs.items() if any("quick" in b.lower().split() for b in bs))
    for h in resp["hits"]["hits"]:
        for x in h["inner_hits"]["c"]["hits"]["hits"]:
            body = docs[h["_id"]][x["_nested"]["offset"]]
            want = " ".join(f"<em>{w}</em>" if w.lower() == "quick" else w for w in body.split())
            assert x["highlight"] == {"c.body": [want]}
    es.indices.delete(index=index)


def test_inner_hits_explain(es, nested_index):
    index, docs = nested_index
    q = {"nested": {"path": "users", "query": {"bool": {"should": [
        {"term": {"users.first": "john"}}, {"term": {"users.last": "smith"}}]}},
        "inner_hits": {"size": 5, "explain": True}}}
    resp = search(es, index, {"query": q})
    assert resp["hits"]["hits"]
    for h in resp["hits"]["hits"]:
        users = users_of(docs[h["_id"]])
        for x in h["inner_hits"]["users"]["hits"]["hits"]:
            u = users[x["_nested"]["offset"]]
            assert u["first"] == "john" or u["last"] == "smith"
            e = x["_explanation"]
            assert e["value"] == pytest.approx(x["_score"], rel=1e-5)
            assert isinstance(e["description"], str) and isinstance(e["details"], list)


def test_inner_hits_script_fields(es, nested_index):
    index, docs = nested_index
    q = {"nested": {"path": "users", "query": {"range": {"users.age": {"lt": 40}}},
                    "inner_hits": {"size": 10, "_source": False, "script_fields": {
                        "twice": {"script": {"source": "doc['users.age'].value * params.k",
                                             "params": {"k": 2}}},
                        "name": {"script": "doc['users.first'].value + '_' + doc['users.last'].value"}}}}}
    resp = search(es, index, {"query": q})
    assert resp["hits"]["hits"]
    for h in resp["hits"]["hits"]:
        users = users_of(docs[h["_id"]])
        for x in h["inner_hits"]["users"]["hits"]["hits"]:
            u = users[x["_nested"]["offset"]]
            assert u["age"] < 40
            assert x["fields"] == {"twice": [u["age"] * 2], "name": [f"{u['first']}_{u['last']}"]}


def test_inner_hits_stored_fields(es):
    index = "nested_stored"
    if es.indices.exists(index=index):
        es.indices.delete(index=index)
    es.indices.create(index=index, mappings={"properties": {"c": {"type": "nested", "properties": {
        "a": {"type": "keyword", "store": True}, "b": {"type": "long"}}}}})
    objs = [{"a": "x", "b": 1}, {"a": "y", "b": 2}, {"b": 3}]
    es.index(index=index, id="1", document={"c": objs}, refresh=True)

    def inner(ih):
        q = {"nested": {"path": "c", "query": {"match_all": {}}, "inner_hits": ih}}
        return search(es, index, {"query": q})["hits"]["hits"][0]["inner_hits"]["c"]["hits"]["hits"]

    hits = inner({"stored_fields": ["c.*"]})
    # only the `store: true` field, and no `_source` unless asked for
    assert [x.get("fields") for x in hits] == \
        [{"c.a": [o["a"]]} if "a" in o else None for o in objs]
    assert all("_source" not in x for x in hits)
    hits = inner({"stored_fields": ["c.a", "_source"]})
    assert [x["_source"] for x in hits] == objs
    with pytest.raises(BadRequestError):
        inner({"stored_fields": "_none_", "_source": True})
    es.indices.delete(index=index)

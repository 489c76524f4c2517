"""`nested` and `reverse_nested` aggregations at any depth, and the per-bucket aggregations
(`top_hits`, `top_metrics`, `percentiles`, ...) under them.

Every expected answer is computed here by walking the nested objects of the documents the
test indexes: a root's `users`, each user's `pets`.
"""

import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

FIRST = ["john", "alice", "bob", "eve"]
KINDS = ["cat", "dog", "fish"]

MAPPING = {"properties": {
    "group": {"type": "keyword"},
    "n": {"type": "integer"},
    "users": {"type": "nested", "properties": {
        "first": {"type": "keyword"},
        "age": {"type": "integer"},
        "pets": {"type": "nested", "properties": {
            "kind": {"type": "keyword"},
            "weight": {"type": "double"},
        }},
    }},
    "other": {"type": "nested", "properties": {"tag": {"type": "keyword"}}},
}}


def gen_docs(seed=11, n=90):
    rnd = random.Random(seed)
    docs = []
    for i in range(n):
        d = {"group": rnd.choice(["g1", "g2", "g3"]), "n": i}
        users = []
        for _ in range(rnd.randrange(0, 4)):
            u = {"first": rnd.choice(FIRST), "age": rnd.randrange(10, 80)}
            if rnd.random() < 0.7:
                u["pets"] = [{"kind": rnd.choice(KINDS), "weight": rnd.randrange(1, 400) / 10}
                             for _ in range(rnd.randrange(1, 4))]
            users.append(u)
        if users or rnd.random() < 0.5:
            d["users"] = users
        if rnd.random() < 0.6:
            d["other"] = [{"tag": rnd.choice(["x", "y"])} for _ in range(rnd.randrange(1, 3))]
        docs.append((str(i), d))
    return docs


def users_of(d):
    return d.get("users") or []


def pets_of(u):
    return u.get("pets") or []


def counts(items):
    out = {}
    for k in items:
        out[k] = out.get(k, 0) + 1
    return out


@pytest.fixture(scope="module")
def ix(es):
    docs = gen_docs()
    # Two shards: buckets and hits merge across them.
    make_index(es, "nested_depth", {"settings": {"number_of_shards": 2}, "mappings": MAPPING}, docs)
    return "nested_depth", dict(docs)


def search(es, index, body):
    return es.search(index=index, body={"size": 0, **body}).body


def test_nested_under_terms(es, ix):
    index, docs = ix
    resp = search(es, index, {"aggs": {"g": {"terms": {"field": "group"}, "aggs": {
        "u": {"nested": {"path": "users"}, "aggs": {
            "first": {"terms": {"field": "users.first"}},
            "age": {"sum": {"field": "users.age"}}}}}}}})
    buckets = resp["aggregations"]["g"]["buckets"]
    assert {b["key"] for b in buckets} == {d["group"] for d in docs.values()}
    for b in buckets:
        users = [u for d in docs.values() if d["group"] == b["key"] for u in users_of(d)]
        assert b["u"]["doc_count"] == len(users), b["key"]
        got = {x["key"]: x["doc_count"] for x in b["u"]["first"]["buckets"]}
        assert got == counts(u["first"] for u in users)
        assert b["u"]["age"]["value"] == sum(u["age"] for u in users)


def test_nested_under_composite(es, ix):
    """A composite bucket's documents are its key's: nested and reverse_nested run there."""
    index, docs = ix
    resp = search(es, index, {"aggs": {"c": {
        "composite": {"size": 2, "sources": [{"g": {"terms": {"field": "group"}}}]},
        "aggs": {"u": {"nested": {"path": "users"}, "aggs": {
            "age": {"sum": {"field": "users.age"}},
            "back": {"reverse_nested": {}}}}}}}})
    c = resp["aggregations"]["c"]
    groups = sorted({d["group"] for d in docs.values()})[:2]
    assert [b["key"]["g"] for b in c["buckets"]] == groups
    for b in c["buckets"]:
        roots = [d for d in docs.values() if d["group"] == b["key"]["g"]]
        users = [u for d in roots for u in users_of(d)]
        assert b["doc_count"] == len(roots)
        assert b["u"]["doc_count"] == len(users)
        assert b["u"]["age"]["value"] == sum(u["age"] for u in users)
        assert b["u"]["back"]["doc_count"] == sum(1 for d in roots if users_of(d))


def test_composite_under_nested_under_terms_with_percentiles(es, ix):
    """One composite page per enclosing bucket; each bucket's percentiles see its own users."""
    index, docs = ix
    resp = search(es, index, {"aggs": {"g": {"terms": {"field": "group"}, "aggs": {
        "u": {"nested": {"path": "users"}, "aggs": {
            "c": {"composite": {"size": 3, "sources": [{"f": {"terms": {"field": "users.first"}}}]},
                  "aggs": {"p": {"percentiles": {"field": "users.age", "percents": [0, 100]}}}}}}}}}})
    for g in resp["aggregations"]["g"]["buckets"]:
        users = [u for d in docs.values() if d["group"] == g["key"] for u in users_of(d)]
        firsts = sorted({u["first"] for u in users})[:3]
        got = g["u"]["c"]["buckets"]
        assert [b["key"]["f"] for b in got] == firsts
        for b in got:
            ages = [u["age"] for u in users if u["first"] == b["key"]["f"]]
            assert b["doc_count"] == len(ages)
            assert b["p"]["values"]["0.0"] == min(ages)
            assert b["p"]["values"]["100.0"] == max(ages)


def test_nested_under_histogram_range_and_filters(es, ix):
    index, docs = ix
    resp = search(es, index, {"query": {"range": {"n": {"gte": 10}}}, "aggs": {
        "h": {"histogram": {"field": "n", "interval": 25}, "aggs": {
            "u": {"nested": {"path": "users"}}}},
        "r": {"range": {"field": "n", "ranges": [{"to": 40}, {"from": 40}]}, "aggs": {
            "u": {"nested": {"path": "users"}, "aggs": {"a": {"max": {"field": "users.age"}}}}}},
        "f": {"filters": {"filters": {"g1": {"term": {"group": "g1"}}, "g2": {"term": {"group": "g2"}}}},
              "aggs": {"o": {"nested": {"path": "other"}}}}}})
    picked = [d for d in docs.values() if d["n"] >= 10]
    aggs = resp["aggregations"]
    for b in aggs["h"]["buckets"]:
        lo = b["key"]
        users = [u for d in picked if lo <= d["n"] < lo + 25 for u in users_of(d)]
        assert b["u"]["doc_count"] == len(users), lo
    for b, (lo, hi) in zip(aggs["r"]["buckets"], [(None, 40), (40, None)]):
        users = [u for d in picked if (lo is None or d["n"] >= lo) and (hi is None or d["n"] < hi)
                 for u in users_of(d)]
        assert b["u"]["doc_count"] == len(users)
        assert b["u"]["a"]["value"] == (max(u["age"] for u in users) if users else None)
    for g in ("g1", "g2"):
        others = [o for d in picked if d["group"] == g for o in d.get("other", [])]
        assert aggs["f"]["buckets"][g]["o"]["doc_count"] == len(others)


def test_nested_inside_nested(es, ix):
    index, docs = ix
    resp = search(es, index, {"aggs": {"u": {"nested": {"path": "users"}, "aggs": {
        "first": {"terms": {"field": "users.first"}, "aggs": {
            "p": {"nested": {"path": "users.pets"}, "aggs": {
                "kind": {"terms": {"field": "users.pets.kind"}},
                "w": {"sum": {"field": "users.pets.weight"}}}}}},
        "all_pets": {"nested": {"path": "users.pets"}}}}}})
    users = [u for d in docs.values() for u in users_of(d)]
    u = resp["aggregations"]["u"]
    assert u["doc_count"] == len(users)
    assert u["all_pets"]["doc_count"] == sum(len(pets_of(x)) for x in users)
    for b in u["first"]["buckets"]:
        pets = [p for x in users if x["first"] == b["key"] for p in pets_of(x)]
        assert b["p"]["doc_count"] == len(pets), b["key"]
        assert {k["key"]: k["doc_count"] for k in b["p"]["kind"]["buckets"]} == counts(
            p["kind"] for p in pets)
        assert b["p"]["w"]["value"] == pytest.approx(sum(p["weight"] for p in pets))
    # A nested path directly from the root level: every pet of the matching roots.
    resp = search(es, index, {"query": {"term": {"group": "g1"}},
                              "aggs": {"p": {"nested": {"path": "users.pets"}}}})
    assert resp["aggregations"]["p"]["doc_count"] == sum(
        len(pets_of(x)) for d in docs.values() if d["group"] == "g1" for x in users_of(d))


def test_reverse_nested_with_path_and_sub_aggregations(es, ix):
    index, docs = ix
    resp = search(es, index, {"aggs": {"u": {"nested": {"path": "users"}, "aggs": {
        "p": {"nested": {"path": "users.pets"}, "aggs": {
            "kind": {"terms": {"field": "users.pets.kind"}, "aggs": {
                "owners": {"reverse_nested": {"path": "users"}, "aggs": {
                    "first": {"terms": {"field": "users.first"}},
                    "roots": {"reverse_nested": {}, "aggs": {
                        "g": {"terms": {"field": "group"}}}}}},
                "docs": {"reverse_nested": {}, "aggs": {"n": {"sum": {"field": "n"}}}}}}}}}}}})
    p = resp["aggregations"]["u"]["p"]
    for b in p["kind"]["buckets"]:
        k = b["key"]
        owners = [x for d in docs.values() for x in users_of(d) if any(q["kind"] == k for q in pets_of(x))]
        roots = [d for d in docs.values() if any(any(q["kind"] == k for q in pets_of(x)) for x in users_of(d))]
        assert b["owners"]["doc_count"] == len(owners), k
        assert {x["key"]: x["doc_count"] for x in b["owners"]["first"]["buckets"]} == counts(
            x["first"] for x in owners)
        assert b["owners"]["roots"]["doc_count"] == len(roots)
        assert {x["key"]: x["doc_count"] for x in b["owners"]["roots"]["g"]["buckets"]} == counts(
            d["group"] for d in roots)
        assert b["docs"]["doc_count"] == len(roots)
        assert b["docs"]["n"]["value"] == sum(d["n"] for d in roots)


def test_reverse_nested_then_nested_again(es, ix):
    # From the users, back to the roots, then down into a sibling nested path.
    index, docs = ix
    resp = search(es, index, {"aggs": {"u": {"nested": {"path": "users"}, "aggs": {
        "first": {"terms": {"field": "users.first"}, "aggs": {
            "back": {"reverse_nested": {}, "aggs": {
                "o": {"nested": {"path": "other"}, "aggs": {"tag": {"terms": {"field": "other.tag"}}}}}}}}}}}})
    for b in resp["aggregations"]["u"]["first"]["buckets"]:
        roots = [d for d in docs.values() if any(x["first"] == b["key"] for x in users_of(d))]
        others = [o for d in roots for o in d.get("other", [])]
        assert b["back"]["doc_count"] == len(roots)
        assert b["back"]["o"]["doc_count"] == len(others)
        assert {t["key"]: t["doc_count"] for t in b["back"]["o"]["tag"]["buckets"]} == counts(
            o["tag"] for o in others)


def test_top_hits_under_nested(es, ix):
    index, docs = ix
    resp = search(es, index, {"query": {"term": {"group": "g2"}}, "aggs": {
        "u": {"nested": {"path": "users"}, "aggs": {
            "first": {"terms": {"field": "users.first"}, "aggs": {
                "oldest": {"top_hits": {"size": 2, "sort": [{"users.age": "desc"}]}}}}}}}})
    entries = [(i, k, x) for i, d in docs.items() if d["group"] == "g2"
               for k, x in enumerate(users_of(d))]
    for b in resp["aggregations"]["u"]["first"]["buckets"]:
        mine = [e for e in entries if e[2]["first"] == b["key"]]
        hits = b["oldest"]["hits"]
        assert hits["total"] == {"value": len(mine), "relation": "eq"}
        ages = sorted((x["age"] for _, _, x in mine), reverse=True)[:2]
        got = hits["hits"]
        assert [h["sort"] for h in got] == [[a] for a in ages]
        for h in got:
            assert h["_index"] == index
            i, off = h["_id"], h["_nested"]["offset"]
            assert h["_nested"] == {"field": "users", "offset": off}
            assert h["_source"] == users_of(docs[i])[off]
            assert h["_source"]["first"] == b["key"]


def test_top_hits_nested_in_nested_identity(es, ix):
    index, docs = ix
    resp = search(es, index, {"aggs": {"u": {"nested": {"path": "users"}, "aggs": {
        "p": {"nested": {"path": "users.pets"}, "aggs": {
            "kind": {"terms": {"field": "users.pets.kind"}, "aggs": {
                "heavy": {"top_hits": {"size": 3, "sort": [{"users.pets.weight": "desc"}],
                                       "_source": ["users.pets.weight"]}}}}}}}}}})
    for b in resp["aggregations"]["u"]["p"]["kind"]["buckets"]:
        pets = [(p["weight"]) for d in docs.values() for x in users_of(d) for p in pets_of(x)
                if p["kind"] == b["key"]]
        got = b["heavy"]["hits"]["hits"]
        assert [h["sort"][0] for h in got] == sorted(pets, reverse=True)[:3]
        for h in got:
            ident = h["_nested"]
            assert ident["field"] == "users"
            assert ident["_nested"]["field"] == "pets"
            pet = pets_of(users_of(docs[h["_id"]])[ident["offset"]])[ident["_nested"]["offset"]]
            assert pet["kind"] == b["key"]
            assert h["_source"] == {"weight": pet["weight"]}


def test_top_metrics_and_percentiles_under_nested(es, ix):
    index, docs = ix
    resp = search(es, index, {"aggs": {"u": {"nested": {"path": "users"}, "aggs": {
        "first": {"terms": {"field": "users.first"}, "aggs": {
            "youngest": {"top_metrics": {"metrics": {"field": "users.age"},
                                         "sort": {"users.age": "asc"}}},
            "pct": {"percentiles": {"field": "users.age", "percents": [0, 100]}}}}}}}})
    for b in resp["aggregations"]["u"]["first"]["buckets"]:
        ages = [x["age"] for d in docs.values() for x in users_of(d) if x["first"] == b["key"]]
        assert b["youngest"]["top"][0]["metrics"]["users.age"] == min(ages)
        assert b["pct"]["values"]["0.0"] == min(ages)
        assert b["pct"]["values"]["100.0"] == max(ages)


def test_significant_terms_under_nested(es, ix):
    index, docs = ix
    resp = search(es, index, {"query": {"term": {"group": "g1"}}, "aggs": {
        "u": {"nested": {"path": "users"}, "aggs": {
            "sig": {"significant_terms": {"field": "users.first", "min_doc_count": 1}}}}}})
    sig = resp["aggregations"]["u"]["sig"]
    users = [x for d in docs.values() if d["group"] == "g1" for x in users_of(d)]
    # The foreground is the bucket's nested objects.
    assert sig["doc_count"] == len(users)
    fg = counts(x["first"] for x in users)
    for b in sig["buckets"]:
        assert b["doc_count"] == fg[b["key"]]


def test_nested_typed_keys_and_unmapped(es, ix):
    index, docs = ix
    resp = es.search(index=index, typed_keys=True, body={"size": 0, "aggs": {
        "g": {"terms": {"field": "group"}, "aggs": {
            "u": {"nested": {"path": "users"}, "aggs": {
                "r": {"reverse_nested": {}},
                "none": {"reverse_nested": {"path": "nope"}}}},
            "missing": {"nested": {"path": "nope"}}}}}}).body
    for b in resp["aggregations"]["sterms#g"]["buckets"]:
        roots = [d for d in docs.values() if d["group"] == b["key"]]
        u = b["nested#u"]
        assert u["doc_count"] == sum(len(users_of(d)) for d in roots)
        assert u["reverse_nested#r"]["doc_count"] == sum(1 for d in roots if users_of(d))
        assert u["reverse_nested#none"]["doc_count"] == 0
        assert b["nested#missing"]["doc_count"] == 0


def test_refusals(es, ix):
    index, _ = ix
    with pytest.raises(BadRequestError) as e:
        search(es, index, {"aggs": {"g": {"terms": {"field": "group"}, "aggs": {
            "back": {"reverse_nested": {}}}}}})
    assert "can only be used inside a [nested] aggregation" in str(e.value)
    # A path that is not a nested object mapping (here a keyword field) is unmapped as one.
    resp = search(es, index, {"aggs": {"u": {"nested": {"path": "users"}, "aggs": {
        "back": {"reverse_nested": {"path": "group"}}}}}})
    assert resp["aggregations"]["u"]["back"]["doc_count"] == 0
    with pytest.raises(BadRequestError) as e:
        search(es, index, {"aggs": {"u": {"nested": {"path": "users"}, "aggs": {
            "a": {"sampler": {}}}}}})
    assert "not supported by Lode" in str(e.value)

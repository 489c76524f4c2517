"""`flattened` fields: every leaf value is a keyword of the root field, and of the key (its
dotted path under the field) that `field.key` queries, aggregates and sorts on; keyed
values compare as strings. Expected answers are computed here from the documents this file
indexes."""

from collections import Counter

import pytest
from elasticsearch import BadRequestError

INDEX = "flattened_test"

DOCS = {
    "1": {"f": {"color": "red", "size": {"w": 10, "h": "tall"}, "tags": ["a", "b"]}},
    "2": {"f": {"color": "blue", "size": {"w": 3}, "tags": "b"}},
    "3": {"f": {"color": ["green", "red"], "owner": {"name": "ann"}}},
    "4": {"f": {"size": {"w": 25, "h": "short"}}, "other": "x"},
    "5": {"other": "y"},
    "6": {"f": [{"color": "blue"}, {"tags": ["c"]}]},
}


def keyed(doc):
    """{key: set of string values} of a document's `f`, the oracle of the keyed field."""
    out = {}

    def walk(v, key):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{key}.{k}" if key else k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif v is not None:
            out.setdefault(key, set()).add(str(v))

    walk(doc.get("f"), "")
    return out


def root_values(doc):
    return set().union(*keyed(doc).values()) if keyed(doc) else set()


@pytest.fixture(scope="module")
def index(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {
        "f": {"type": "flattened"}, "other": {"type": "keyword"}}})
    for i, d in DOCS.items():
        es.index(index=INDEX, id=i, document=d)
    es.indices.refresh(index=INDEX)
    yield INDEX
    es.indices.delete(index=INDEX)


def ids(es, query):
    r = es.search(index=INDEX, query=query, size=100)
    return sorted(h["_id"] for h in r["hits"]["hits"])


def where(pred):
    return sorted(i for i, d in DOCS.items() if pred(d))


@pytest.mark.parametrize("value", ["red", "b", "10", "ann", "nope"])
def test_term_on_root(es, index, value):
    assert ids(es, {"term": {"f": value}}) == where(lambda d: value in root_values(d))


@pytest.mark.parametrize("key,value", [("color", "red"), ("color", "blue"), ("size.w", "10"),
                                       ("size.h", "tall"), ("tags", "b"), ("owner.name", "ann"),
                                       ("color", "ann"), ("size", "10")])
def test_term_and_match_on_key(es, index, key, value):
    want = where(lambda d: value in keyed(d).get(key, set()))
    assert ids(es, {"term": {f"f.{key}": value}}) == want
    assert ids(es, {"match": {f"f.{key}": value}}) == want


def test_terms_on_key(es, index):
    vals = ["blue", "green"]
    assert ids(es, {"terms": {"f.color": vals}}) == \
        where(lambda d: keyed(d).get("color", set()) & set(vals))


@pytest.mark.parametrize("bounds", [{"gte": "3"}, {"lt": "25"}, {"gt": "10", "lte": "3"},
                                    {"gte": "10", "lt": "3"}])
def test_range_on_key_compares_strings(es, index, bounds):
    def ok(v):
        return all({"gte": v >= b, "gt": v > b, "lte": v <= b, "lt": v < b}[op]
                   for op, b in bounds.items())
    want = where(lambda d: any(ok(v) for v in keyed(d).get("size.w", set())))
    assert ids(es, {"range": {"f.size.w": bounds}}) == want


@pytest.mark.parametrize("key", ["color", "size.w", "size", "owner.name", "tags", "missing"])
def test_exists_on_key(es, index, key):
    assert ids(es, {"exists": {"field": f"f.{key}"}}) == where(lambda d: key in keyed(d))


def test_prefix_on_key(es, index):
    assert ids(es, {"prefix": {"f.size.h": "ta"}}) == \
        where(lambda d: any(v.startswith("ta") for v in keyed(d).get("size.h", set())))


def test_terms_aggregation_on_key_and_root(es, index):
    r = es.search(index=INDEX, size=0, aggs={
        "k": {"terms": {"field": "f.color", "size": 100}},
        "w": {"terms": {"field": "f.size.w", "size": 100}},
        "root": {"terms": {"field": "f", "size": 100}}})
    for agg, values_of in [("k", lambda d: keyed(d).get("color", set())),
                           ("w", lambda d: keyed(d).get("size.w", set())),
                           ("root", root_values)]:
        want = Counter()
        for d in DOCS.values():
            want.update(values_of(d))
        got = {b["key"]: b["doc_count"] for b in r["aggregations"][agg]["buckets"]}
        assert got == dict(want), agg


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_sort_on_key(es, index, order):
    r = es.search(index=INDEX, size=100, sort=[{"f.size.w": order}])
    got = [(h["_id"], h["sort"][0]) for h in r["hits"]["hits"]]
    with_value = []
    for i, d in DOCS.items():
        vals = keyed(d).get("size.w")
        if vals:
            with_value.append((i, min(vals) if order == "asc" else max(vals)))
    with_value.sort(key=lambda x: x[1], reverse=order == "desc")
    assert got[:len(with_value)] == with_value
    assert sorted(i for i, _ in got[len(with_value):]) == \
        sorted(i for i in DOCS if i not in dict(with_value))


def test_depth_limit(es):
    name = "flattened_depth"
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, mappings={"properties": {
        "f": {"type": "flattened", "depth_limit": 2}}})
    es.index(index=name, id="1", document={"f": {"a": {"b": "c"}}})
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, id="2", document={"f": {"a": [{"b": {"c": "d"}}]}})
    err = e.value.body["error"]
    assert err["type"] == "document_parsing_exception"
    assert err["caused_by"]["reason"] == \
        "The provided [flattened] field [f] exceeds the maximum depth limit of [2]."
    es.indices.delete(index=name)


@pytest.mark.parametrize("q", [{"wildcard": {"f.color": "r*"}}, {"regexp": {"f.color": "r.*"}},
                               {"fuzzy": {"f.color": "rad"}}])
def test_unsupported_keyed_queries_are_refused(es, index, q):
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, query=q)
    kind = next(iter(q))
    assert f"[{kind}] queries are not currently supported on keyed [flattened] fields." in \
        str(e.value.body)


def test_null_value_and_ignore_above_apply_to_leaves(es):
    name = "flattened_null"
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, mappings={"properties": {
        "f": {"type": "flattened", "null_value": "NA", "ignore_above": 5}}})
    es.index(index=name, id="1", document={"f": {"a": None, "b": "short", "c": "toolong"}},
             refresh=True)

    def hits(q):
        return [h["_id"] for h in es.search(index=name, query=q)["hits"]["hits"]]

    assert hits({"term": {"f.a": "NA"}}) == ["1"]
    assert hits({"term": {"f.b": "short"}}) == ["1"]
    assert hits({"term": {"f.c": "toolong"}}) == []
    assert hits({"term": {"f": "toolong"}}) == []
    es.indices.delete(index=name)


@pytest.mark.parametrize("key,value", [("color", "red"), ("size.h", "tall"), ("owner.name", "ann")])
def test_query_string_and_multi_match_on_key(es, index, key, value):
    want = where(lambda d: value in keyed(d).get(key, set()))
    assert ids(es, {"query_string": {"query": f"f.{key}:{value}"}}) == want
    assert ids(es, {"multi_match": {"query": value, "fields": [f"f.{key}"]}}) == want
    assert ids(es, {"query_string": {"query": f"_exists_:f.{key}"}}) == \
        where(lambda d: key in keyed(d))

"""`copy_to`: each value of a field is also indexed in the target fields (one or several, from
a leaf inside an object too, arrays value by value), `_source` unchanged; an unmapped target
is mapped dynamically (`dynamic: strict` refuses it). Expected answers are computed here
from the documents this file indexes."""

from collections import Counter

import pytest
from elasticsearch import BadRequestError

INDEX = "copy_to_test"

DOCS = {
    "1": {"first": "John", "last": "Smith", "tag": ["a", "b"], "n": 5, "o": {"x": "c"},
          "dyn": "zz"},
    "2": {"first": "Alice", "last": "Smith", "tag": "a", "n": [5, 7]},
    "3": {"first": "John", "last": "Brown", "o": {"x": ["a", "d"]}, "dyn": "yy"},
    "4": {"last": "Green", "n": 12},
}
MAPPING = {"properties": {
    "first": {"type": "text", "copy_to": "full"},
    "last": {"type": "text", "copy_to": "full"},
    "full": {"type": "text"},
    "tag": {"type": "keyword", "copy_to": ["tags", "full"]},
    "tags": {"type": "keyword"},
    "n": {"type": "long", "copy_to": "nk"},
    "nk": {"type": "keyword"},
    "o": {"properties": {"x": {"type": "keyword", "copy_to": "tags"}}},
    "dyn": {"type": "keyword", "copy_to": "newfield"},
}}


def as_list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def target_values(doc, target):
    """The values copied into `target` (the oracle of copy_to)."""
    out = []
    for field, spec in MAPPING["properties"].items():
        if "properties" in spec:
            for sub, sub_spec in spec["properties"].items():
                if target in as_list(sub_spec.get("copy_to")):
                    out += as_list((doc.get(field) or {}).get(sub))
        elif target in as_list(spec.get("copy_to")):
            out += as_list(doc.get(field))
    return out


@pytest.fixture(scope="module")
def index(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings=MAPPING)
    for i, d in DOCS.items():
        es.index(index=INDEX, id=i, document=d)
    es.indices.refresh(index=INDEX)
    yield INDEX
    es.indices.delete(index=INDEX)


def ids(es, query):
    r = es.search(index=INDEX, query=query, size=100)
    return sorted(h["_id"] for h in r["hits"]["hits"])


@pytest.mark.parametrize("words", [["john", "smith"], ["smith"], ["b"], ["john", "brown"]])
def test_match_on_text_target(es, index, words):
    want = sorted(i for i, d in DOCS.items()
                  if all(w in [str(v).lower() for v in target_values(d, "full")] for w in words))
    assert ids(es, {"match": {"full": {"query": " ".join(words), "operator": "and"}}}) == want


def test_keyword_targets_aggregate_copied_values(es, index):
    r = es.search(index=INDEX, size=0, aggs={
        "tags": {"terms": {"field": "tags", "size": 100}},
        "nk": {"terms": {"field": "nk", "size": 100}}})
    for target, agg in [("tags", "tags"), ("nk", "nk")]:
        want = Counter()
        for d in DOCS.values():
            for v in set(str(x) for x in target_values(d, target)):
                want[v] += 1
        got = {b["key"]: b["doc_count"] for b in r["aggregations"][agg]["buckets"]}
        assert got == dict(want)


def test_source_is_unchanged(es, index):
    for i, d in DOCS.items():
        assert es.get(index=INDEX, id=i)["_source"] == d


def test_unmapped_target_is_mapped_dynamically(es, index):
    m = es.indices.get_mapping(index=INDEX)[INDEX]["mappings"]["properties"]
    assert m["newfield"]["type"] == "text"
    for v in {d["dyn"] for d in DOCS.values() if "dyn" in d}:
        want = sorted(i for i, d in DOCS.items() if d.get("dyn") == v)
        assert ids(es, {"term": {"newfield.keyword": v}}) == want
        assert ids(es, {"match": {"newfield": v}}) == want


def test_strict_refuses_an_unmapped_target(es):
    name = "copy_to_strict"
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, mappings={"dynamic": "strict", "properties": {
        "a": {"type": "keyword", "copy_to": "zz"}}})
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, id="1", document={"a": "x"})
    assert e.value.body["error"]["type"] == "strict_dynamic_mapping_exception"
    assert "dynamic introduction of [zz] within [_doc] is not allowed" in \
        e.value.body["error"]["reason"]
    es.indices.delete(index=name)

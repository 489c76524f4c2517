"""Elasticsearch's limits: mapping limits (`index.mapping.*.limit`), term length, numeric
ranges and query limits. Each violating request is checked for its status, error type and
message, and for leaving data and mapping unchanged; a request just under the limit
succeeds. Expected numbers are computed here from the documents and mappings the tests send."""

import pytest
from elasticsearch import BadRequestError

IDX = "limits-test"


@pytest.fixture()
def idx(es):
    es.indices.delete(index=IDX, ignore_unavailable=True)
    yield IDX
    es.indices.delete(index=IDX, ignore_unavailable=True)


def count_mapping_fields(props):
    """Fields ES counts against the total fields limit: every field, multi-field and object."""
    n = 0
    for d in props.values():
        n += 1
        n += len(d.get("fields", {}))
        n += count_mapping_fields(d.get("properties", {}))
    return n


def dynamic_sizes(doc):
    """(path, size) of the fields dynamic mapping adds for `doc`, in document order: a string
    is text + keyword (2), a number or boolean 1, an object 1 and then its children."""
    out = []

    def walk(prefix, obj):
        for k, v in obj.items():
            path = prefix + k
            if isinstance(v, dict):
                out.append((path, 1))
                walk(path + ".", v)
            elif isinstance(v, str):
                out.append((path, 2))
            else:
                out.append((path, 1))

    walk("", doc)
    return out


def mapping_props(es, index):
    return es.indices.get_mapping(index=index).body[index]["mappings"].get("properties", {})


def doc_count(es, index):
    es.indices.refresh(index=index)
    return es.count(index=index)["count"]


# --- index.mapping.total_fields.limit ---------------------------------------------------------


def test_total_fields_limit_on_index_creation(es, idx):
    props = {"a": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
             "o": {"properties": {"x": {"type": "long"}, "y": {"type": "long"}}}}
    total = count_mapping_fields(props)
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": total - 1},
                          mappings={"properties": props})
    assert e.value.meta.status == 400
    err = e.value.body["error"]
    assert err["type"] == "illegal_argument_exception"
    assert err["reason"] == "Limit of total fields [%d] has been exceeded" % (total - 1)
    assert not es.indices.exists(index=idx)
    es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": total},
                      mappings={"properties": props})
    assert count_mapping_fields(mapping_props(es, idx)) == total


def test_total_fields_limit_on_put_mapping(es, idx):
    limit = 6
    props = {"a": {"type": "text", "fields": {"raw": {"type": "keyword"}}}, "b": {"type": "long"}}
    es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": limit},
                      mappings={"properties": props})
    before = mapping_props(es, idx)
    used = count_mapping_fields(before)
    too_many = {"c%d" % i: {"type": "keyword"} for i in range(limit - used + 1)}
    with pytest.raises(BadRequestError) as e:
        es.indices.put_mapping(index=idx, properties=too_many)
    assert e.value.meta.status == 400
    assert e.value.body["error"]["type"] == "illegal_argument_exception"
    assert e.value.body["error"]["reason"] == "Limit of total fields [%d] has been exceeded" % limit
    assert mapping_props(es, idx) == before
    just_enough = {"c%d" % i: {"type": "keyword"} for i in range(limit - used)}
    es.indices.put_mapping(index=idx, properties=just_enough)
    assert count_mapping_fields(mapping_props(es, idx)) == limit


def test_total_fields_limit_on_dynamic_mapping(es, idx):
    limit = 7
    es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": limit},
                      mappings={"properties": {"a": {"type": "long"}}})
    before = mapping_props(es, idx)
    existing = count_mapping_fields(before)
    doc = {"a": 1, "s": "text", "o": {"n": 5, "t": "more", "u": "over"}}
    # The first field that takes the total over the limit names how many were being added.
    added, expected_new = 0, None
    for path, size in dynamic_sizes(doc):
        if path in before:
            continue
        added += size
        if existing + added > limit:
            expected_new = added
            break
    assert expected_new is not None
    inner = "Limit of total fields [%d] has been exceeded while adding new fields [%d]" % (
        limit, expected_new)
    with pytest.raises(BadRequestError) as e:
        es.index(index=idx, id="1", document=doc)
    assert e.value.meta.status == 400
    err = e.value.body["error"]
    assert err["type"] == "document_parsing_exception"
    assert err["reason"].endswith("failed to parse: " + inner)
    assert err["caused_by"] == {"type": "illegal_argument_exception", "reason": inner}
    assert mapping_props(es, idx) == before
    assert doc_count(es, idx) == 0

    # The same in a bulk item; the other item goes in.
    ok_doc = {"a": 2, "s": "fits"}
    r = es.bulk(operations=[{"index": {"_index": idx, "_id": "1"}}, doc,
                            {"index": {"_index": idx, "_id": "2"}}, ok_doc])
    assert r["errors"] is True
    item = r["items"][0]["index"]
    assert item["status"] == 400
    assert item["error"]["type"] == "document_parsing_exception"
    assert item["error"]["reason"].endswith("failed to parse: " + inner)
    assert r["items"][1]["index"]["status"] == 201
    assert doc_count(es, idx) == 1
    assert count_mapping_fields(mapping_props(es, idx)) == existing + sum(
        size for _p, size in dynamic_sizes({"s": "fits"}))

    # Raising the limit (a dynamic setting) lets the document in.
    es.indices.put_settings(index=idx, settings={"index.mapping.total_fields.limit": 100})
    es.index(index=idx, id="1", document=doc)
    assert doc_count(es, idx) == 2


def test_total_fields_limit_counts_arrays_of_objects_in_one_update(es, idx):
    es.indices.create(index=idx, settings={"index.mapping.total_fields.limit": 3})
    doc = {"list": [{"x": 1}, {"y": 2}, {"z": 3}]}
    # list, list.x, list.y -> 3 fits; list.z is the 4th.
    with pytest.raises(BadRequestError) as e:
        es.index(index=idx, id="1", document=doc)
    assert e.value.body["error"]["caused_by"]["reason"] == (
        "Limit of total fields [3] has been exceeded while adding new fields [4]")
    assert mapping_props(es, idx) == {}
    es.index(index=idx, id="1", document={"list": [{"x": 1}, {"y": 2}]})
    assert set(mapping_props(es, idx)["list"]["properties"]) == {"x", "y"}

"""Document parsing errors carry ES's `[line:column] ` prefix: the location of the value the
parser failed on (Jackson's token location: 1-based line, and one past the value's 1-based
byte column, as ES answers `[1:7]` for `{"c":"metrics"}`).

The oracle finds the bad value's text in the body sent (each is written once) and counts
lines and bytes itself.
"""
import json

import pytest
from elasticsearch import ApiError

INDEX = "doc_parse_location"
H = {"content-type": "application/json", "accept": "application/json"}
ND = {"content-type": "application/x-ndjson", "accept": "application/json"}


def location(body, needle):
    raw = body.encode("utf-8")
    at = raw.index(needle.encode("utf-8"))
    assert raw.count(needle.encode("utf-8")) == 1
    line_start = raw.rfind(b"\n", 0, at) + 1
    return "[%d:%d] " % (raw.count(b"\n", 0, at) + 1, at - line_start + 2)


@pytest.fixture(scope="module")
def idx(es):
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {
        "age": {"type": "long"}, "o": {"properties": {"d": {"type": "date"}}},
        "ip": {"type": "ip"}}})
    yield INDEX
    es.indices.delete(index=INDEX)


CASES = [
    # (body, the bad value's text, the reason after the location)
    ('{"age":"abc"}', '"abc"',
     "failed to parse field [age] of type [long] in document with id '1'. Preview of field's value: 'abc'"),
    ('{\n  "name": "é日本",\n  "age": [1, 2,\n    "x1"]\n}', '"x1"',
     "failed to parse field [age] of type [long] in document with id '1'. Preview of field's value: 'x1'"),
    ('{"o": {"d": "not a date"}}', '"not a date"',
     "failed to parse field [o.d] of type [date] in document with id '1'. Preview of field's value: 'not a date'"),
    ('{"o": 5}', "5",
     "object mapping for [o] tried to parse field [o] as object, but found a concrete value"),
    ('{"age": {"x": 1}}', '{"x": 1}', None),
]


@pytest.mark.parametrize("body,needle,reason", CASES)
def test_index_errors_are_located(es, idx, body, needle, reason):
    with pytest.raises(ApiError) as ei:
        es.perform_request("PUT", f"/{idx}/_doc/1", body=body, headers=H)
    err = ei.value.body["error"]
    assert ei.value.meta.status == 400
    assert err["type"] == "document_parsing_exception"
    assert err["reason"].startswith(location(body, needle)), (err["reason"], location(body, needle))
    if reason is not None:
        assert err["reason"] == location(body, needle) + reason


def test_bulk_item_errors_are_located_in_their_own_line(es, idx):
    docs = ['{"ip": "1.2.3.4"}', '{"ip":  "nope"}', '{"age": 1, "o": {"d": true}}']
    body = "".join('{"index":{"_id":"%d"}}\n%s\n' % (i, d) for i, d in enumerate(docs))
    r = es.perform_request("POST", f"/{idx}/_bulk", body=body, headers=ND)
    items = [i["index"] for i in r.body["items"]]
    assert "error" not in items[0]
    assert items[1]["error"]["reason"].startswith(location(docs[1], '"nope"'))
    assert items[2]["error"]["reason"].startswith(location(docs[2], "true"))
    assert items[1]["error"]["reason"] == location(docs[1], '"nope"') + (
        "failed to parse field [ip] of type [ip] in document with id '1'. Preview of field's value: 'nope'")


def test_a_dotted_field_under_a_leaf_is_located(es, idx):
    body = '{"age.x": 12}'
    with pytest.raises(ApiError) as ei:
        es.perform_request("PUT", f"/{idx}/_doc/1", body=body, headers=H)
    assert ei.value.body["error"]["reason"] == location(body, "12") + (
        "Could not dynamically add mapping for field [age.x]. Existing mapping for [age] must "
        "be of type object but found [long].")

"""Where a sort's errors come from, as in Elasticsearch: what `SortBuilder#fromXContent`
refuses while the body is read is the request's own error (400, its type at the top level);
what needs the mapping (`FieldSortBuilder#build` on each shard) fails the shards and is
reported as `search_phase_execution_exception` around the shard's cause."""

import pytest
from elasticsearch import ApiError

INDEX = "sort_errors"
H = {"content-type": "application/json", "accept": "application/json"}


@pytest.fixture(scope="module")
def idx(es):
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {
        "n": {"type": "long"}, "t": {"type": "text"}, "k": {"type": "keyword"}}})
    es.index(index=INDEX, id="1", document={"n": 1, "t": "a b", "k": "x"}, refresh=True)
    yield INDEX
    es.indices.delete(index=INDEX)


def error(es, body, path=None):
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", path or f"/{INDEX}/_search", body=body, headers=H)
    assert ei.value.meta.status == 400
    return ei.value.body["error"]


@pytest.mark.parametrize("sort,kind,reason", [
    ([{"n": {"order": "up"}}], "illegal_argument_exception", "Unknown SortOrder [up]"),
    ([{"n": "sideways"}], "illegal_argument_exception", "Unknown SortOrder [sideways]"),
    ([{"n": {"mode": "most"}}], "illegal_argument_exception", "Unknown SortMode [most]"),
    ([{"_script": {"script": "1", "type": "shape"}}], "illegal_argument_exception",
     "Unknown ScriptSortType [shape]"),
    ([{"_script": {"script": "1"}}], "x_content_parse_exception", "Required [type]"),
    ([{"n": ["asc"]}], "parsing_exception", "[sort] unexpected value for [n]"),
    ([{"_geo_distance": {"loc": [0, 0], "unit": "parsec"}}], "illegal_argument_exception",
     "No distance unit match [parsec]"),
])
def test_parse_errors_are_the_requests_own(es, idx, sort, kind, reason):
    e = error(es, {"sort": sort})
    assert (e["type"], e["reason"]) == (kind, reason)
    assert e["root_cause"][0]["type"] == kind
    # the same on an index pattern that matches nothing: no shard is involved
    e = error(es, {"sort": sort}, path="/sort_errors_none*/_search")
    assert e["type"] == kind


def test_unknown_option_is_refused_when_read(es, idx):
    e = error(es, {"sort": [{"n": {"ordr": "asc"}}]})
    assert e["type"] == "x_content_parse_exception"
    assert "[field_sort] unknown field [ordr]" in e["reason"]


@pytest.mark.parametrize("sort,kind,reason", [
    ([{"missing_field": "asc"}], "query_shard_exception",
     "No mapping found for [missing_field] in order to sort on"),
    ([{"k": {"mode": "sum"}}], "illegal_argument_exception",
     "only [min] and [max] sort modes are supported on string fields"),
])
def test_mapping_errors_fail_the_shards(es, idx, sort, kind, reason):
    e = error(es, {"sort": sort})
    assert e["type"] == "search_phase_execution_exception"
    assert (e["root_cause"][0]["type"], e["root_cause"][0]["reason"]) == (kind, reason)
    assert e["failed_shards"][0]["reason"]["type"] == kind


def test_text_field_sort_fails_the_shards(es, idx):
    e = error(es, {"sort": ["t"]})
    assert e["type"] == "search_phase_execution_exception"
    assert e["root_cause"][0]["type"] == "illegal_argument_exception"
    assert e["root_cause"][0]["reason"].startswith("Text fields are not optimised")

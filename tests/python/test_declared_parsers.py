"""The request objects declared on the ObjectParser (issue 9, 2f): where their refusals
follow Elasticsearch 8's wording rather than what Lode said before."""
import pytest
from elasticsearch import ApiError

INDEX = "declared_parsers"
H = {"content-type": "application/json", "accept": "application/json"}


@pytest.fixture(scope="module")
def idx(es):
    es.options(ignore_status=404).indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {"n": {"type": "long"}}})
    es.index(index=INDEX, id="1", document={"n": 1}, refresh=True)
    yield INDEX
    es.indices.delete(index=INDEX)


def refused(es, method, path, body):
    with pytest.raises(ApiError) as ei:
        es.perform_request(method, path, body=body, headers=H)
    assert ei.value.meta.status == 400
    return ei.value.body["error"]


@pytest.mark.parametrize("value,token", [("x", "VALUE_STRING"), (1, "VALUE_NUMBER"),
                                         ([1], "START_ARRAY"), ({}, "START_OBJECT")])
def test_unknown_keys_of_by_query_and_script_fields_name_their_token(es, idx, value, token):
    e = refused(es, "POST", f"/{idx}/_delete_by_query",
                {"query": {"match_all": {}}, "qurey": value})
    assert (e["type"], e["reason"]) == ("parsing_exception", f"Unknown key for a {token} in [qurey].")
    e = refused(es, "POST", f"/{idx}/_search",
                {"script_fields": {"s": {"script": "1", "scrpt": value}}})
    assert (e["type"], e["reason"]) == ("parsing_exception", f"Unknown key for a {token} in [scrpt].")


def test_update_by_query_takes_a_script_and_delete_by_query_does_not(es, idx):
    r = es.perform_request("POST", f"/{idx}/_update_by_query?refresh=true",
                           body={"script": {"source": "ctx._source.n += 1"}}, headers=H).body
    assert r["updated"] == 1
    e = refused(es, "POST", f"/{idx}/_delete_by_query",
                {"query": {"match_all": {}}, "script": {"source": "1"}})
    assert e["reason"] == "Unknown key for a START_OBJECT in [script]."


def test_reroute_and_allocation_explain_suggest_what_was_meant(es, idx):
    e = refused(es, "POST", "/_cluster/reroute", {"comands": []})
    assert e["type"] == "x_content_parse_exception"
    assert e["reason"].endswith("[cluster_reroute] unknown field [comands] did you mean [commands]?")
    e = refused(es, "POST", "/_cluster/allocation/explain", {"indx": idx, "shard": 0, "primary": True})
    assert e["type"] == "x_content_parse_exception"
    assert e["reason"].endswith("[cluster/allocation/explain] unknown field [indx] did you mean [index]?")


def test_sort_values_are_checked_in_body_order(es, idx):
    def cause(body):
        c = refused(es, "POST", f"/{idx}/_search", body)["root_cause"][0]
        return c["type"], c["reason"]
    assert cause({"sort": [{"n": {"mode": "nope", "order": "up"}}]}) == (
        "illegal_argument_exception", "Unknown SortMode [nope]")
    assert cause({"sort": [{"n": {"order": "up", "mode": "nope"}}]}) == (
        "illegal_argument_exception", "Unknown SortOrder [up]")
    assert cause({"sort": [{"n": {"order": 1}}]})[0] == "illegal_argument_exception"

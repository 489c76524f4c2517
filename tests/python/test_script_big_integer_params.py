"""Integers beyond 64 bits in script `params` stay exact, as in Elasticsearch.

ES reads a request's script params with Jackson: an integer beyond `long` is a
`java.math.BigInteger`, so a script sees its exact digits (`'' + params.big`), its low 64 bits
(`longValue()`), and a BigInteger it hands back is written as its digits (a script field, a
document's source through an update). The oracle is Python's own integers.
"""

import json

import pytest

INDEX = "big_params"
BIG = 123456789012345678901234567890
LOW = (BIG & (2**64 - 1)) - (2**64 if BIG & (1 << 63) else 0)  # BigInteger#longValue
IDS = ["1", "2", "3"]
HEADERS = {"content-type": "application/json", "accept": "application/json"}


@pytest.fixture(scope="module")
def index(es):
    es.indices.delete(index=INDEX, ignore_unavailable=True)
    es.indices.create(index=INDEX, mappings={"properties": {"n": {"type": "long"}}})
    ops = []
    for i in IDS:
        ops += [{"index": {"_index": INDEX, "_id": i}}, {"n": int(i)}]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield INDEX
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def post(es, path, body):
    return es.perform_request("POST", path, body=body, headers=HEADERS).body


def script(source, **params):
    return {"source": source, "params": {"big": BIG, **params}}


def test_script_fields_see_the_exact_integer(es, index):
    r = post(es, f"/{index}/_search", {"script_fields": {
        "s": {"script": script("'' + params.big")},
        "low": {"script": script("params.big.longValue()")},
        "v": {"script": script("params.big")}}})
    assert len(r["hits"]["hits"]) == len(IDS)
    for h in r["hits"]["hits"]:
        assert h["fields"] == {"s": [str(BIG)], "low": [LOW], "v": [BIG]}


def test_script_query_and_score_and_count(es, index):
    q = {"script": {"script": script("('' + params.big) == params.s", s=str(BIG))}}
    r = post(es, f"/{index}/_search", {"query": q})
    assert sorted(h["_id"] for h in r["hits"]["hits"]) == IDS
    assert post(es, f"/{index}/_count", {"query": q})["count"] == len(IDS)
    r = post(es, f"/{index}/_search", {"query": {"script_score": {
        "query": {"match_all": {}},
        "script": script("params.big.longValue() == params.low ? 2 : 1", low=LOW)}}})
    assert [h["_score"] for h in r["hits"]["hits"]] == [2.0] * len(IDS)


def test_msearch_items(es, index):
    body = "\n".join(json.dumps(x) for x in [
        {"index": index},
        {"script_fields": {"s": {"script": script("'' + params.big")},
                           "v": {"script": script("params.big")}}, "size": 1}]) + "\n"
    r = es.perform_request("POST", "/_msearch", body=body,
                           headers={"content-type": "application/x-ndjson",
                                    "accept": "application/json"}).body
    assert r["responses"][0]["hits"]["hits"][0]["fields"] == {"s": [str(BIG)], "v": [BIG]}


def test_scroll_pages(es, index):
    r = es.perform_request("POST", f"/{index}/_search?scroll=1m", headers=HEADERS, body={
        "size": 1, "sort": ["n"], "script_fields": {"v": {"script": script("params.big")}}}).body
    pages = [r["hits"]["hits"]]
    while True:
        r = es.perform_request("POST", "/_search/scroll", headers=HEADERS,
                               body={"scroll": "1m", "scroll_id": r["_scroll_id"]}).body
        if not r["hits"]["hits"]:
            break
        pages.append(r["hits"]["hits"])
    assert [[h["_id"] for h in p] for p in pages] == [[i] for i in IDS]
    assert all(h["fields"] == {"v": [BIG]} for p in pages for h in p)


def test_updates_store_the_exact_integer(es, index):
    post(es, f"/{index}/_update/1?refresh=true",
         {"script": script("ctx._source.b = params.big")})
    bulk = "\n".join(json.dumps(x) for x in [
        {"update": {"_index": index, "_id": "2"}},
        {"script": script("ctx._source.b = params.big")}]) + "\n"
    r = es.perform_request("POST", "/_bulk?refresh=true", body=bulk,
                           headers={"content-type": "application/x-ndjson",
                                    "accept": "application/json"}).body
    assert r["errors"] is False
    post(es, f"/{index}/_update_by_query?refresh=true",
         {"query": {"ids": {"values": ["3"]}}, "script": script("ctx._source.b = params.big")})
    for i in IDS:
        # both the stored bytes (`_source`) and the document's GET keep the digits
        raw = es.perform_request("GET", f"/{index}/_source/{i}", headers=HEADERS).body
        assert raw == {"n": int(i), "b": BIG}, i
        got = es.perform_request("GET", f"/{index}/_doc/{i}", headers=HEADERS).body
        assert got["_source"] == {"n": int(i), "b": BIG}, i

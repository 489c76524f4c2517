"""Runtime field parameters besides `type` and `script`: `on_script_error`, `meta`, and a
`date` field's `locale` (ES's `AbstractScriptFieldType.Builder`), in `runtime_mappings` and
in the mapping's `runtime` section. Expected answers are computed here from the documents."""

import random

import pytest
from elasticsearch import ApiError

import conftest

INDEX = "runtime_field_params"
H = {"content-type": "application/json", "accept": "application/json"}
# `doc['v'].value` fails on documents without `v`: a script error on those
HALF = {"type": "long", "script": "emit(100 / doc['v'].value)"}


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(5)
    docs = {}
    for i in range(40):
        d = {"k": rng.choice(["x", "y"])}
        if rng.random() < 0.6:
            d["v"] = rng.randrange(1, 9)
        docs[str(i)] = d
    conftest.make_index(es, INDEX, {"settings": {"number_of_shards": 2},
                                    "mappings": {"properties": {"k": {"type": "keyword"},
                                                                "v": {"type": "long"}}}},
                        list(docs.items()))
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body, index=INDEX):
    return es.perform_request("POST", f"/{index}/_search", body=body, headers=H).body


def refused(es, body, index=INDEX):
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", f"/{index}/_search", body=body, headers=H)
    return ei.value.meta.status, ei.value.body["error"]


def test_on_script_error_continue_leaves_the_document_without_values(es, docs):
    rt = {"q": dict(HALF, on_script_error="continue")}
    r = search(es, {"runtime_mappings": rt, "size": 100, "fields": ["q"],
                    "query": {"exists": {"field": "q"}}})
    with_v = {i for i, d in docs.items() if "v" in d}
    assert {h["_id"] for h in r["hits"]["hits"]} == with_v
    for h in r["hits"]["hits"]:
        assert h["fields"]["q"] == [100 // docs[h["_id"]]["v"]]
    # every document is returned; those whose script failed have no `fields.q`
    r = search(es, {"runtime_mappings": rt, "size": 100, "fields": ["q"]})
    assert len(r["hits"]["hits"]) == len(docs)
    for h in r["hits"]["hits"]:
        assert ("fields" in h) == ("v" in docs[h["_id"]])
    # sort: the failed documents sort as missing (last, ascending)
    r = search(es, {"runtime_mappings": rt, "size": 100, "sort": [{"q": "asc"}, {"_doc": "asc"}]})
    got = [h["_id"] for h in r["hits"]["hits"]]
    assert set(got[:len(with_v)]) == with_v
    a = search(es, {"runtime_mappings": rt, "size": 0,
                    "aggs": {"s": {"sum": {"field": "q"}}}})
    assert a["aggregations"]["s"]["value"] == sum(100 // d["v"] for d in docs.values() if "v" in d)


def test_on_script_error_fail_is_the_default(es, docs):
    for rt in ({"q": HALF}, {"q": dict(HALF, on_script_error="fail")}):
        status, e = refused(es, {"runtime_mappings": rt, "query": {"exists": {"field": "q"}}})
        assert status == 400


def test_on_script_error_values_and_requirements(es, docs):
    status, e = refused(es, {"runtime_mappings": {"q": dict(HALF, on_script_error="ignore")}})
    assert (status, e["type"]) == (400, "mapper_parsing_exception")
    assert e["reason"] == ("Unknown value [ignore] for field [on_script_error] - accepted values"
                           " are [fail, continue]")
    status, e = refused(es, {"runtime_mappings": {"k2": {"type": "keyword",
                                                         "on_script_error": "continue"}}})
    assert e["reason"] == "Field [on_script_error] requires field [script] to be configured"


def test_meta_is_checked_and_kept_in_the_mapping(es, docs):
    r = search(es, {"runtime_mappings": {"q": dict(HALF, on_script_error="continue",
                                                   meta={"unit": "ms"})},
                    "size": 1})
    assert r["hits"]["total"]["value"] == len(docs)
    status, e = refused(es, {"runtime_mappings": {"q": dict(HALF, meta={"unit": 3})}})
    assert (status, e["type"]) == (400, "mapper_parsing_exception")
    assert e["reason"] == "[meta] values can only be strings, but got Integer[3] for field [q]"
    status, e = refused(es, {"runtime_mappings": {"q": dict(HALF, meta={str(i): "v" for i in range(6)})}})
    assert e["reason"] == "[meta] can't have more than 5 entries, but got 6 on field [q]"

    name = INDEX + "_mapped"
    es.options(ignore_status=404).indices.delete(index=name)
    runtime = {"q": dict(HALF, on_script_error="continue", meta={"unit": "ms", "owner": "ops"}),
               "d": {"type": "date", "locale": "en_US", "format": "MMM dd yyyy",
                     "script": "emit(doc['v'].value * 86400000L)", "on_script_error": "continue"}}
    es.indices.create(index=name, mappings={"properties": {"v": {"type": "long"}},
                                            "runtime": runtime})
    got = es.indices.get_mapping(index=name)[name]["mappings"]["runtime"]
    assert got["q"]["meta"] == {"unit": "ms", "owner": "ops"}
    assert got["q"]["on_script_error"] == "continue"
    assert got["d"]["locale"] == "en_US"
    es.index(index=name, id="1", document={"v": 2}, refresh=True)
    es.index(index=name, id="2", document={}, refresh=True)
    r = search(es, {"fields": ["d", "q"], "sort": ["_doc"]}, index=name)
    by_id = {h["_id"]: h.get("fields", {}) for h in r["hits"]["hits"]}
    assert by_id["1"] == {"d": ["Jan 03 1970"], "q": [50]}
    assert by_id["2"] == {}
    with pytest.raises(ApiError) as ei:
        es.indices.put_mapping(index=name, runtime={"m": dict(HALF, meta={"unit": None})})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["reason"].endswith("[meta] values can't be null (field [m])")
    es.indices.delete(index=name)


def test_date_locale(es, docs):
    rt = {"d": {"type": "date", "locale": "ROOT", "script": "emit(0L)"}}
    r = search(es, {"runtime_mappings": rt, "size": 1, "fields": ["d"]})
    assert r["hits"]["hits"][0]["fields"]["d"] == ["1970-01-01T00:00:00.000Z"]
    status, e = refused(es, {"runtime_mappings": {"d": {"type": "date", "locale": "fr_FR",
                                                        "script": "emit(0L)"}}})
    assert (status, e["type"]) == (400, "mapper_parsing_exception")
    assert "not supported by Lode" in e["reason"]
    status, e = refused(es, {"runtime_mappings": {"k2": {"type": "keyword", "locale": "en",
                                                         "script": "emit('a')"}}})
    assert e["reason"] == "unknown parameter [locale] on runtime field [k2] of type [keyword]"

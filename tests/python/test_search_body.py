"""The search body's top level: every key is implemented or refused with ES's error, values
of the wrong type are refused, and `min_score`, `terminate_after` and `indices_boost` change
hits, totals and aggregations as Elasticsearch defines them.

Scores come from `constant_score` clauses (a document scores the sum of the boosts of the
clauses it matches), so the oracle knows every score without BM25.
"""

import collections
import random

import pytest
from elasticsearch import ApiError

INDEX = "searchbody"
OTHER = "searchbody_b"
N = 300
COLORS = ["red", "green", "blue"]


def _docs():
    rng = random.Random(7)
    return [(str(i), {"tag": rng.choice(["a", "b", "c"]), "color": rng.choice(COLORS),
                      "n": rng.randrange(0, 1000)}) for i in range(N)]


def _score(d):
    # Must match SCORED below.
    return (1.0 if d["tag"] == "a" else 0.0) + (2.0 if d["color"] == "red" else 0.0)


SCORED = {"bool": {"should": [
    {"constant_score": {"filter": {"term": {"tag": "a"}}, "boost": 1.0}},
    {"constant_score": {"filter": {"term": {"color": "red"}}, "boost": 2.0}},
    {"constant_score": {"filter": {"match_all": {}}, "boost": 0.0}},
]}}

MAPPING = {"properties": {"tag": {"type": "keyword"}, "color": {"type": "keyword"},
                          "n": {"type": "integer"}}}


@pytest.fixture(scope="module")
def docs(es):
    docs = _docs()
    for name in (INDEX, OTHER):
        if es.indices.exists(index=name):
            es.indices.delete(index=name)
        es.indices.create(index=name, settings={"number_of_shards": 1}, mappings=MAPPING)
        # Several segments, so terminate_after crosses segment boundaries.
        for k in range(0, N, 100):
            ops = []
            for i, d in docs[k:k + 100]:
                ops += [{"index": {"_index": name, "_id": i}}, d]
            assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield dict(docs)
    for name in (INDEX, OTHER):
        es.indices.delete(index=name, ignore_unavailable=True)


def search(es, body, index=INDEX):
    return es.perform_request("POST", f"/{index}/_search", body=body,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


def refused(es, body, status=400):
    with pytest.raises(ApiError) as ei:
        search(es, body)
    assert ei.value.meta.status == status
    return ei.value.body["error"]


# ---------------------------------------------------------------------------------------------
# min_score


@pytest.mark.parametrize("minimum", [0.5, 1.0, 2.0, 2.5, 3.0, 3.5])
def test_min_score_filters_total_hits_and_aggs(es, docs, minimum):
    want = {i for i, d in docs.items() if _score(d) >= minimum}
    r = search(es, {"query": SCORED, "min_score": minimum, "size": N, "track_total_hits": True,
                    "aggs": {"colors": {"terms": {"field": "color"}}}})
    assert r["hits"]["total"] == {"value": len(want), "relation": "eq"}
    assert {h["_id"] for h in r["hits"]["hits"]} == want
    assert all(h["_score"] >= minimum for h in r["hits"]["hits"])
    counts = collections.Counter(docs[i]["color"] for i in want)
    assert {b["key"]: b["doc_count"] for b in r["aggregations"]["colors"]["buckets"]} == counts


def test_min_score_with_a_field_sort_counts_only_passing_documents(es, docs):
    # Sorted by a field, the best-sorted documents may all be below min_score.
    want = sorted((d["n"], i) for i, d in docs.items() if _score(d) >= 3.0)
    r = search(es, {"query": SCORED, "min_score": 3.0, "size": 5,
                    "sort": [{"n": "asc"}]})
    assert r["hits"]["total"]["value"] == len(want)
    assert [h["sort"][0] for h in r["hits"]["hits"]] == [n for n, _ in want[:5]]


def test_min_score_as_a_string_number(es, docs):
    r = search(es, {"query": SCORED, "min_score": "3", "size": 0, "track_total_hits": True})
    assert r["hits"]["total"]["value"] == sum(1 for d in docs.values() if _score(d) >= 3)


# ---------------------------------------------------------------------------------------------
# terminate_after


@pytest.mark.parametrize("limit", [1, 7, 150, 299])
def test_terminate_after_stops_a_shard_after_n_matches(es, docs, limit):
    r = search(es, {"terminate_after": limit, "size": 0, "track_total_hits": True,
                    "aggs": {"colors": {"terms": {"field": "color"}}}})
    assert r["terminated_early"] is True
    assert r["hits"]["total"] == {"value": limit, "relation": "eq"}
    assert sum(b["doc_count"] for b in r["aggregations"]["colors"]["buckets"]) == limit


def test_terminate_after_not_reached(es, docs):
    r = search(es, {"query": {"term": {"tag": "a"}}, "terminate_after": N, "size": N})
    want = {i for i, d in docs.items() if d["tag"] == "a"}
    assert r["terminated_early"] is False
    assert {h["_id"] for h in r["hits"]["hits"]} == want


def test_terminate_after_hits_are_among_the_first_matches(es, docs):
    r = search(es, {"query": {"term": {"color": "red"}}, "terminate_after": 10, "size": 20,
                    "sort": [{"n": "desc"}]})
    assert r["hits"]["total"]["value"] == 10
    assert len(r["hits"]["hits"]) == 10
    assert all(docs[h["_id"]]["color"] == "red" for h in r["hits"]["hits"])
    ns = [h["sort"][0] for h in r["hits"]["hits"]]
    assert ns == sorted(ns, reverse=True)


def test_no_terminated_early_key_without_terminate_after(es, docs):
    assert "terminated_early" not in search(es, {"size": 0})


# ---------------------------------------------------------------------------------------------
# indices_boost


def test_indices_boost_multiplies_the_scores_of_an_index(es, docs):
    body = {"query": SCORED, "size": 2 * N, "indices_boost": [{OTHER: 3.0}, {"searchbody*": 0.5}]}
    r = search(es, body, index=f"{INDEX},{OTHER}")
    by = {(h["_index"], h["_id"]): h["_score"] for h in r["hits"]["hits"]}
    assert len(by) == 2 * N
    for i, d in docs.items():
        assert by[(OTHER, i)] == pytest.approx(3.0 * _score(d))
        assert by[(INDEX, i)] == pytest.approx(0.5 * _score(d))
    scores = [h["_score"] for h in r["hits"]["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_indices_boost_must_be_an_array_of_objects(es, docs):
    assert refused(es, {"indices_boost": [5]})["type"] == "parsing_exception"
    assert refused(es, {"indices_boost": {OTHER: 2}})["type"] == "parsing_exception"
    assert refused(es, {"indices_boost": [{OTHER: "x"}]})["type"] == "parsing_exception"


# ---------------------------------------------------------------------------------------------
# collapse


@pytest.mark.parametrize("field", ["color", "tag", "n"])
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_collapse_keeps_the_best_document_of_each_group(es, docs, field, order):
    best = {}
    for i, d in docs.items():
        g = d[field]
        if g not in best or (d["n"] < best[g] if order == "asc" else d["n"] > best[g]):
            best[g] = d["n"]
    want = sorted(best.items(), key=lambda kv: kv[1], reverse=order == "desc")
    for frm, size in [(0, 10), (0, 50), (1, 2), (5, 20)]:
        r = search(es, {"collapse": {"field": field}, "sort": [{"n": order}], "from": frm,
                        "size": size, "track_total_hits": True})
        assert r["hits"]["total"]["value"] == N
        got = [(h["fields"][field][0], h["sort"][0]) for h in r["hits"]["hits"]]
        page = want[frm:frm + size]
        assert [n for _, n in got] == [n for _, n in page]
        assert len({g for g, _ in got}) == len(got)
        for g, n in got:
            assert best[g] == n


def test_collapse_by_score_with_a_query(es, docs):
    r = search(es, {"query": SCORED, "collapse": {"field": "color"}, "size": 10})
    best = {}
    for d in docs.values():
        best[d["color"]] = max(best.get(d["color"], 0.0), _score(d))
    assert sorted((h["fields"]["color"][0], h["_score"]) for h in r["hits"]["hits"]) == \
        sorted(best.items())


def test_collapse_errors(es, docs):
    # Checked on the shard, as ES does: a search phase failure caused by the field.
    e = refused(es, {"collapse": {"field": "nope"}})
    assert e["root_cause"][0]["type"] == "illegal_argument_exception"
    assert "collapse" in e["root_cause"][0]["reason"]
    assert refused(es, {"collapse": {"field": "tag"}, "search_after": ["a"],
                        "sort": [{"tag": "asc"}]})["type"] == "illegal_argument_exception"
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", f"/{INDEX}/_search?scroll=1m", body={"collapse": {"field": "tag"}},
                           headers={"content-type": "application/json", "accept": "application/json"})
    assert ei.value.meta.status == 400


# ---------------------------------------------------------------------------------------------
# strictness


def test_unknown_keys_are_refused_with_their_token(es, docs):
    e = refused(es, {"qurey": {"match_all": {}}})
    assert (e["type"], e["reason"]) == ("parsing_exception", "Unknown key for a START_OBJECT in [qurey].")
    e = refused(es, {"size": [1]})
    assert e["reason"] == "Unknown key for a START_ARRAY in [size]."
    e = refused(es, {"query": "x"})
    assert e["reason"] == "Unknown key for a VALUE_STRING in [query]."
    assert refused(es, {"_source_includes": ["a"]})["type"] == "parsing_exception"


@pytest.mark.parametrize("body,kind", [
    ({"_source": 5}, "parsing_exception"),
    ({"_source": {"includes": 5}}, "parsing_exception"),
    ({"_source": {"bogus": ["a"]}}, "parsing_exception"),
    ({"timeout": "abc"}, "parse_exception"),
    ({"timeout": 5}, "parse_exception"),
    ({"min_score": "x"}, "number_format_exception"),
    ({"size": "abc"}, "number_format_exception"),
    ({"from": "1x"}, "number_format_exception"),
    ({"terminate_after": "many"}, "number_format_exception"),
    ({"version": "yes"}, "x_content_parse_exception"),
    ({"track_scores": 3}, "x_content_parse_exception"),
    ({"stats": [1]}, "parsing_exception"),
    ({"stored_fields": [1]}, "parsing_exception"),
    ({"docvalue_fields": [{"field": "n", "bogus": 1}]}, "x_content_parse_exception"),
    ({"fields": [7]}, "x_content_parse_exception"),
    ({"ext": {"collapse_plugin": {}}}, "parsing_exception"),
])
def test_values_of_the_wrong_type_are_refused(es, docs, body, kind):
    assert refused(es, body)["type"] == kind


@pytest.mark.parametrize("key,value", [
    ("highlight", {"fields": {"tag": {}}}),
    ("collapse", {"field": "tag", "inner_hits": {"name": "x"}}),
    ("suggest", {"s": {"text": "x", "term": {"field": "tag"}}}),
    ("runtime_mappings", {"x": {"type": "long"}}),
    ("rescore", {"query": {"rescore_query": {"match_all": {}}}}),
    ("pit", {"id": "x"}),
    ("slice", {"id": 0, "max": 2}),
    ("explain", True),
    ("profile", True),
])
def test_features_lode_lacks_are_refused_not_ignored(es, docs, key, value):
    e = refused(es, {key: value})
    assert key in e["reason"]


def test_accepted_values(es, docs):
    for body in ({"timeout": "1s"}, {"timeout": "-1"}, {"explain": False}, {"profile": "false"},
                 {"ext": {}}, {"stats": ["g1"]}, {"version": "true"}, {"size": "3"},
                 {"_source": {"include": "tag", "exclude": ["n"]}},
                 {"docvalue_fields": [{"field": "n"}, "tag"]}):
        r = search(es, dict(body, query={"term": {"tag": "a"}}))
        assert r["hits"]["total"]["value"] == sum(1 for d in docs.values() if d["tag"] == "a"), body


def test_every_scroll_page_fetches_what_the_first_did(es, docs):
    r = es.search(index=INDEX, scroll="1m", size=40, docvalue_fields=["n"], fields=["tag"],
                  sort=["_doc"])
    seen = 0
    while r["hits"]["hits"]:
        for h in r["hits"]["hits"]:
            d = docs[h["_id"]]
            assert h["fields"] == {"n": [d["n"]], "tag": [d["tag"]]}
            seen += 1
        r = es.scroll(scroll_id=r["_scroll_id"], scroll="1m")
    es.clear_scroll(scroll_id=r["_scroll_id"])
    assert seen == N

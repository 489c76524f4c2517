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


def _similarity(a, b):
    # Lucene's LevenshteinDistance: 1 - edits / max(length)
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a):
        cur = [i + 1] + [0] * len(b)
        for j, cb in enumerate(b):
            cur[j + 1] = min(prev[j] + (ca != cb), prev[j + 1] + 1, cur[j] + 1)
        prev = cur
    return 1 - prev[len(b)] / max(len(a), len(b))


def _did_you_mean(unknown, declared):
    # ES's SuggestingErrorOnUnknown: similarity above 0.5, most similar first, then by name
    close = sorted((-_similarity(unknown, c), c) for c in set(declared) if _similarity(unknown, c) > 0.5)
    if not close:
        return ""
    if len(close) == 1:
        return " did you mean [%s]?" % close[0][1]
    return " did you mean any of [%s]?" % ", ".join(c for _, c in close)


# The keys each of ES 8's ObjectParsers declares (their source), the candidates of its
# "did you mean".
_HL_COMMON = ["pre_tags", "post_tags", "order", "highlight_filter", "fragment_size",
              "number_of_fragments", "require_field_match", "boundary_scanner",
              "boundary_max_scan", "boundary_chars", "boundary_scanner_locale", "type",
              "fragmenter", "no_match_size", "force_source", "phrase_limit",
              "max_analyzed_offset", "options", "highlight_query"]
_DECLARED = {
    "highlight": _HL_COMMON + ["encoder", "tags_schema", "fields"],
    "highlight_field": _HL_COMMON + ["fragment_offset", "matched_fields"],
    "collapse": ["field", "inner_hits", "max_concurrent_group_searches"],
    "inner_hits": ["name", "ignore_unmapped", "from", "size", "explain", "version",
                   "seq_no_primary_term", "track_scores", "stored_fields", "docvalue_fields",
                   "fields", "script_fields", "sort", "_source", "highlight", "collapse"],
    "query": ["rescore_query", "query_weight", "rescore_query_weight", "score_mode"],
    "field_and_format": ["field", "format", "include_unmapped"],
    "script": ["source", "id", "lang", "params", "options"],
    "field_sort": ["missing", "order", "unmapped_type", "numeric_type", "format", "nested",
                   "mode"],
    "slice": ["field", "id", "max"],
}


@pytest.mark.parametrize("parser,key,body", [
    ("highlight", "feilds", {"highlight": {"feilds": {"tag": {}}}}),
    ("highlight", "pre_tag", {"highlight": {"pre_tag": ["<b>"], "fields": {"tag": {}}}}),
    ("highlight_field", "fragment_sise", {"highlight": {"fields": {"tag": {"fragment_sise": 5}}}}),
    ("highlight", "zzz", {"highlight": {"zzz": 1, "fields": {"tag": {}}}}),
    ("collapse", "feild", {"collapse": {"feild": "tag"}}),
    ("collapse", "inner_hit", {"collapse": {"field": "tag", "inner_hit": {}}}),
    ("inner_hits", "szie", {"collapse": {"field": "tag", "inner_hits": {"name": "x", "szie": 1}}}),
    ("query", "rescore_qurey", {"rescore": {"query": {"rescore_qurey": {"match_all": {}}}}}),
    ("field_and_format", "fromat", {"docvalue_fields": [{"field": "n", "fromat": "0.0"}]}),
    ("script", "sorce", {"query": {"script": {"script": {"sorce": "true"}}}}),
    ("field_sort", "oder", {"sort": [{"n": {"oder": "asc"}}]}),
    ("slice", "mx", {"slice": {"id": 0, "mx": 2}}),
])
def test_unknown_object_keys_suggest_what_was_meant(es, docs, parser, key, body):
    e = refused(es, body)
    want = "[%s] unknown field [%s]%s" % (parser, key, _did_you_mean(key, _DECLARED[parser]))
    e = e.get("caused_by", e) if e["type"] != "x_content_parse_exception" else e
    assert e["type"] == "x_content_parse_exception"
    assert e["reason"].endswith(want), (e["reason"], want)


def test_unknown_update_and_aggregation_keys_suggest_what_was_meant(es, docs):
    with pytest.raises(ApiError) as ei:
        es.perform_request("POST", f"/{INDEX}/_update/1", body={"docs": {"n": 1}},
                           headers={"content-type": "application/json",
                                    "accept": "application/json"})
    assert ei.value.meta.status == 400
    declared = ["script", "scripted_upsert", "upsert", "doc", "doc_as_upsert", "detect_noop",
                "_source", "if_seq_no", "if_primary_term"]
    assert ei.value.body["error"]["reason"].endswith(
        "[UpdateRequest] unknown field [docs]" + _did_you_mean("docs", declared))
    assert "did you mean [doc]?" in ei.value.body["error"]["reason"]
    e = refused(es, {"aggs": {"t": {"terms": {"feild": "tag"}}}})
    assert e["type"] == "x_content_parse_exception"
    assert e["reason"].endswith("[terms] unknown field [feild] did you mean [field]?")
    e = refused(es, {"aggs": {"v": {"variable_width_histogram": {"field": "n", "bukets": 3}}}})
    assert e["type"] == "x_content_parse_exception"
    assert e["reason"].endswith(
        "[variable_width_histogram] unknown field [bukets] did you mean [buckets]?")
    e = refused(es, {"aggs": {"s": {"significant_terms": {"field": "tag", "min_doc_cont": 1}}}})
    assert e["type"] == "x_content_parse_exception"
    declared = ["field", "size", "shard_size", "min_doc_count", "shard_min_doc_count",
                "execution_hint", "include", "exclude", "background_filter", "jlh",
                "mutual_information", "chi_square", "gnd", "percentage", "script_heuristic",
                "missing", "script", "value_type", "format"]
    assert e["reason"].endswith("[significant_terms] unknown field [min_doc_cont]"
                                + _did_you_mean("min_doc_cont", declared))
    assert "any of [min_doc_count, shard_min_doc_count]" in e["reason"]


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
    ("suggest", {"s": {"text": "x", "phrase": {"field": "tag", "collate": {"query": {}}}}}),
    ("pit", {"id": "x"}),
    ("slice", {"id": 0, "max": 2}),
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


# ---------------------------------------------------------------------------------------------
# timeout


def test_a_search_past_its_deadline_returns_partial_results(es, docs):
    # A zero timeout is a deadline that has passed before the first document.
    r = search(es, {"timeout": "0ms", "size": 10, "track_total_hits": True,
                    "aggs": {"colors": {"terms": {"field": "color"}}}})
    assert r["timed_out"] is True
    assert r["hits"]["total"]["value"] < N
    assert len(r["hits"]["hits"]) <= r["hits"]["total"]["value"]
    # Timed-out answers are not cached for the next request.
    r = search(es, {"timeout": "0ms", "size": 0})
    assert r["timed_out"] is True


def test_a_search_within_its_deadline_is_complete(es, docs):
    r = search(es, {"timeout": "1m", "size": 0, "track_total_hits": True})
    assert r["timed_out"] is False
    assert r["hits"]["total"]["value"] == N


def test_explain_gives_each_hit_its_score_breakdown(es, docs):
    r = search(es, {"explain": True, "query": SCORED, "min_score": 1.0, "size": 20})
    assert r["hits"]["hits"]
    for h in r["hits"]["hits"]:
        e = h["_explanation"]
        assert e["value"] == pytest.approx(h["_score"]) == pytest.approx(_score(docs[h["_id"]]))
        assert isinstance(e["description"], str) and isinstance(e["details"], list)
        assert h["_shard"] == f"[{INDEX}][0]"
    assert "_explanation" not in search(es, {"size": 1})["hits"]["hits"][0]


def test_fields_and_docvalue_fields_formats(es, docs):
    name = "searchbody_dates"
    es.indices.create(index=name, mappings={"properties": {
        "d": {"type": "date"}, "k": {"type": "keyword"}, "n": {"type": "long"}}})
    try:
        es.index(index=name, id="1", document={"d": "2021-03-04T05:06:07Z", "k": "x", "n": 1},
                 refresh=True)
        ms = "1614834367000"
        for key in ("fields", "docvalue_fields"):
            for fmt, want in [("epoch_millis", ms), ("yyyy/MM/dd", "2021/03/04"),
                              (None, "2021-03-04T05:06:07.000Z")]:
                entry = {"field": "d"} if fmt is None else {"field": "d", "format": fmt}
                r = es.perform_request("POST", f"/{name}/_search", body={key: [entry]},
                                       headers={"content-type": "application/json",
                                                "accept": "application/json"}).body
                assert r["hits"]["hits"][0]["fields"]["d"] == [want], (key, fmt)
            for field, kind in [("k", "illegal_argument_exception"), ("d", None)]:
                body = {key: [{"field": field, "format": "yyyy/MM/dd" if kind else "nope%%"}]}
                with pytest.raises(ApiError) as ei:
                    es.perform_request("POST", f"/{name}/_search", body=body,
                                       headers={"content-type": "application/json",
                                                "accept": "application/json"})
                assert ei.value.meta.status == 400
    finally:
        es.indices.delete(index=name)


# ---------------------------------------------------------------------------------------------
# rescore

RED = {"constant_score": {"filter": {"term": {"color": "red"}}, "boost": 10.0}}


@pytest.mark.parametrize("mode,combine", [
    ("total", lambda a, b: a + b), ("multiply", lambda a, b: a * b),
    ("avg", lambda a, b: (a + b) / 2), ("max", max), ("min", min)])
def test_rescore_combines_scores_in_the_window(es, docs, mode, combine):
    qw, rw = 0.5, 2.0
    r = search(es, {"query": SCORED, "size": N, "rescore": {"window_size": N, "query": {
        "rescore_query": RED, "query_weight": qw, "rescore_query_weight": rw,
        "score_mode": mode}}})
    assert len(r["hits"]["hits"]) == N
    for h in r["hits"]["hits"]:
        d = docs[h["_id"]]
        first = qw * _score(d)
        want = combine(first, rw * 10.0) if d["color"] == "red" else first
        assert h["_score"] == pytest.approx(want), (mode, d)
    scores = [h["_score"] for h in r["hits"]["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert r["hits"]["total"]["value"] == N


def test_rescorers_apply_in_order(es, docs):
    blue = {"constant_score": {"filter": {"term": {"color": "blue"}}, "boost": 100.0}}
    r = search(es, {"query": SCORED, "size": N, "rescore": [
        {"window_size": N, "query": {"rescore_query": RED}},
        {"window_size": N, "query": {"rescore_query": blue, "query_weight": 2.0}}]})
    for h in r["hits"]["hits"]:
        d = docs[h["_id"]]
        s = _score(d) + (10.0 if d["color"] == "red" else 0.0)
        s = 2.0 * s + (100.0 if d["color"] == "blue" else 0.0)
        assert h["_score"] == pytest.approx(s)


def test_rescore_refuses_a_field_sort_and_bad_bodies(es, docs):
    e = refused(es, {"sort": [{"n": "asc"}], "rescore": {"query": {"rescore_query": RED}}})
    assert e["type"] == "action_request_validation_exception"
    assert refused(es, {"rescore": {"query": {"rescore_query": RED, "bogus": 1}}})
    assert refused(es, {"rescore": {"query": {"rescore_query": RED, "score_mode": "x"}}})
    assert refused(es, {"rescore": {"window_size": 5}})
    assert refused(es, {"rescore": {"query": {"query_weight": 1}}})
    r = search(es, {"sort": ["_score"], "rescore": {"query": {"rescore_query": RED}}})
    assert r["hits"]["hits"]


# ---------------------------------------------------------------------------------------------
# dfs_query_then_fetch


def test_dfs_scores_every_shard_with_index_wide_statistics(es):
    rng = random.Random(3)
    words = "amber basil cedar dune ember fern grove heath iris jade".split()
    docs = {str(i): {"text": " ".join(rng.choice(words[: 3 + i % 7]) for _ in range(rng.randrange(1, 9)))}
            for i in range(120)}
    for name, shards in (("dfs_one", 1), ("dfs_three", 3)):
        es.indices.create(index=name, settings={"number_of_shards": shards},
                          mappings={"properties": {"text": {"type": "text"}}})
        ops = []
        for i, d in docs.items():
            ops += [{"index": {"_index": name, "_id": i}}, d]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    try:
        body = {"query": {"match": {"text": "amber fern jade"}}, "size": 200}
        one = {h["_id"]: h["_score"] for h in search(es, body, index="dfs_one")["hits"]["hits"]}
        plain = {h["_id"]: h["_score"] for h in search(es, body, index="dfs_three")["hits"]["hits"]}
        dfs = es.perform_request(
            "POST", "/dfs_three/_search?search_type=dfs_query_then_fetch", body=body,
            headers={"content-type": "application/json", "accept": "application/json"}).body
        dfs = {h["_id"]: h["_score"] for h in dfs["hits"]["hits"]}
        assert set(dfs) == set(one) == set(plain)
        for i in one:
            assert dfs[i] == pytest.approx(one[i], rel=1e-5)
        # Per-shard statistics give other scores: the check above is not vacuous.
        assert any(plain[i] != pytest.approx(one[i], rel=1e-5) for i in one)
    finally:
        es.indices.delete(index="dfs_one,dfs_three")


def test_stored_fields_return_the_stored_ones(es):
    name = "searchbody_stored"
    es.indices.create(index=name, mappings={"properties": {
        "a": {"type": "keyword", "store": True}, "b": {"type": "long", "store": True},
        "c": {"type": "keyword"}, "d": {"type": "date", "store": True}}})
    try:
        es.index(index=name, id="1", refresh=True,
                 document={"a": ["x", "y"], "b": 5, "c": "z", "d": "2020-01-02"})
        def run(body, params=""):
            return es.perform_request("POST", f"/{name}/_search{params}", body=body,
                                      headers={"content-type": "application/json",
                                               "accept": "application/json"}).body["hits"]["hits"][0]
        h = run({"stored_fields": ["*"]})
        assert "_source" not in h
        assert h["fields"] == {"a": ["x", "y"], "b": [5], "d": ["2020-01-02T00:00:00.000Z"]}
        h = run({"stored_fields": ["a", "c"], "_source": ["c"]})
        assert h["fields"] == {"a": ["x", "y"]} and h["_source"] == {"c": "z"}
        h = run({}, "?stored_fields=b,_source")
        assert h["fields"] == {"b": [5]} and h["_source"]["c"] == "z"
        g = es.get(index=name, id="1", stored_fields="a,b")
        assert g["fields"] == {"a": ["x", "y"], "b": [5]} and "_source" not in g
        g = es.get(index=name, id="1", stored_fields="c,_source")
        assert "fields" not in g and g["_source"]["c"] == "z"
        h = run({"stored_fields": "_none_"})
        assert "_id" not in h and "_source" not in h
        with pytest.raises(ApiError) as ei:
            run({"stored_fields": "_none_", "_source": True})
        assert ei.value.meta.status == 400
    finally:
        es.indices.delete(index=name)


def test_search_after_takes_a_date_in_the_field_format(es):
    name = "searchbody_after"
    es.indices.create(index=name, mappings={"properties": {
        "t": {"type": "date", "format": "yyyy-MM-dd HH:mm:ss.SSS"}}})
    try:
        times = ["2019-10-21 08:30:04.828", "2019-10-21 00:30:04.828", "2019-10-20 10:00:00.000"]
        for i, t in enumerate(times):
            es.index(index=name, id=str(i), document={"t": t})
        es.indices.refresh(index=name)
        r = es.search(index=name, sort=[{"t": "desc"}], search_after=[times[0]], size=5)
        assert [h["_source"]["t"] for h in r["hits"]["hits"]] == times[1:]
        r2 = es.search(index=name, sort=[{"t": "desc"}],
                       search_after=[r["hits"]["hits"][0]["sort"][0]], size=5)
        assert [h["_source"]["t"] for h in r2["hits"]["hits"]] == times[2:]
    finally:
        es.indices.delete(index=name)

"""`search.allow_expensive_queries: false` refuses what ES refuses while a shard builds the query.

ES's messages (`StringFieldType`, `MappedFieldType#failIfNotIndexedNorDocValuesFallback`,
`ScriptQueryBuilder`, `ScriptScoreQueryBuilder`, `NestedQueryBuilder`,
`AbstractScriptFieldType`) are `ElasticsearchException`s (type `exception`), wrapped by
`SearchExecutionContext#toQuery` as a 400 `query_shard_exception` "failed to create query: ...",
reported as `search_phase_execution_exception` "all shards failed" whose root cause is the
`exception` (`ElasticsearchException#guessRootCauses`). The index is the one of ES's
`search/320_disallow_queries.yml` plus the field types with exceptions (doc-values-only fields,
`index_prefixes`, `search_as_you_type`, `wildcard`, flattened keys, runtime fields).

Every refused query is run again once the setting is reset (`null`) and its hits checked against
an oracle computed here from the documents; cheap queries keep working, with their answers
checked, while the setting is false.
"""

import fnmatch
import re

import pytest
from elasticsearch import BadRequestError

from oracle import analyze, osa_distance

INDEX = "expensive_queries"
KEY = "search.allow_expensive_queries"

TEXTS = [
    "Some like it hot, some like it cold",
    "Its cold outside, theres no kind of atmosphere",
    "Baby its cold there outside",
    "Outside it is cold and wet",
]
KWS = ["alpha", "beta", "gamma", "delta"]


def source(i):
    return {
        "text": TEXTS[i],
        "kw": KWS[i],
        "kw_dv": KWS[i],
        "n": i + 1,
        "n_dv": i + 1,
        "d": "2024-01-0%dT00:00:00Z" % (i + 1),
        "tp": TEXTS[i],
        "sayt": TEXTS[i],
        "wc": KWS[i],
        "flat": {"a": KWS[i]},
        "nested1": [{"foo": "bar%d" % (i + 1)}],
    }


DOCS = {str(i + 1): source(i) for i in range(len(TEXTS))}

MAPPING = {"properties": {
    "text": {"type": "text", "analyzer": "standard", "fields": {"raw": {"type": "keyword"}}},
    "kw": {"type": "keyword"},
    "kw_dv": {"type": "keyword", "index": False},
    "n": {"type": "long"},
    "n_dv": {"type": "long", "index": False},
    "d": {"type": "date"},
    "tp": {"type": "text", "index_prefixes": {}},
    "sayt": {"type": "search_as_you_type"},
    "wc": {"type": "wildcard"},
    "flat": {"type": "flattened"},
    "nested1": {"type": "nested", "properties": {"foo": {"type": "keyword"}}},
}}

# Scripts guard against documents without `n`: Lode runs them over the nested documents too.
RUNTIME = {"rt": {"type": "long", "script": {
    "source": "if (doc['n'].size() > 0) { emit(doc['n'].value * 2) }"}}}

TAIL = "cannot be executed when 'search.allow_expensive_queries' is set to false."
PREFIX = ("[prefix] queries " + TAIL + " For optimised prefix queries on text fields please "
          "enable [index_prefixes].")
FUZZY = "[fuzzy] queries " + TAIL
REGEXP = "[regexp] queries " + TAIL
WILDCARD = "[wildcard] queries " + TAIL
RANGE = "[range] queries on [text] or [keyword] fields " + TAIL
JOINING = "[joining] queries " + TAIL
SCRIPT = "[script] queries " + TAIL
SCRIPT_SCORE = "[script score] queries " + TAIL
RUNTIME_FIELD = ("queries cannot be executed against runtime fields while "
                 "[search.allow_expensive_queries] is set to [false].")


def doc_values_only(field):
    return ("Cannot search on field [%s] since it is not indexed and "
            "'search.allow_expensive_queries' is set to false." % field)


def tokens(doc_id, field="text"):
    return analyze(DOCS[doc_id][field])


def ids_where(pred):
    return {i for i in DOCS if pred(i)}


def any_token(pred, field="text"):
    return lambda i: any(pred(t) for t in tokens(i, field))


# name -> (query, ES's reason while false, the documents it matches once allowed)
REFUSED = {
    "prefix_text": ({"prefix": {"text": {"value": "out"}}}, PREFIX,
                    any_token(lambda t: t.startswith("out"))),
    "fuzzy_text": ({"fuzzy": {"text": {"value": "outwide"}}}, FUZZY,
                   any_token(lambda t: osa_distance(t, "outwide") <= 2)),
    "regexp_text": ({"regexp": {"text": {"value": ".*ou.*id.*"}}}, REGEXP,
                    any_token(lambda t: re.fullmatch(".*ou.*id.*", t))),
    "wildcard_text": ({"wildcard": {"text": {"value": "out?ide"}}}, WILDCARD,
                      any_token(lambda t: fnmatch.fnmatchcase(t, "out?ide"))),
    "range_text": ({"range": {"text": {"gte": "theres"}}}, RANGE,
                   any_token(lambda t: t >= "theres")),
    "range_keyword": ({"range": {"text.raw": {"gte": "Outside it is cold and wet"}}}, RANGE,
                      lambda i: DOCS[i]["text"] >= "Outside it is cold and wet"),
    "prefix_keyword": ({"prefix": {"kw": "al"}}, PREFIX, lambda i: DOCS[i]["kw"].startswith("al")),
    "prefix_keyword_case_insensitive": (
        {"prefix": {"kw": {"value": "AL", "case_insensitive": True}}}, PREFIX,
        lambda i: DOCS[i]["kw"].startswith("al")),
    "nested": ({"nested": {"path": "nested1", "query": {"bool": {
        "must": [{"match": {"nested1.foo": "bar2"}}]}}}}, JOINING, lambda i: i == "2"),
    "script": ({"script": {"script": {"source": "doc['n'].size() > 0 && doc['n'].value > 2"}}},
               SCRIPT,
               lambda i: DOCS[i]["n"] > 2),
    "script_score": ({"script_score": {"query": {"match_all": {}},
                                       "script": {"source": "doc['n'].size() > 0 ? doc['n'].value : 0"}}},
                     SCRIPT_SCORE, lambda i: True),
    # doc-values-only fields: every query but `exists`
    "term_doc_values_only": ({"term": {"kw_dv": "beta"}}, doc_values_only("kw_dv"),
                             lambda i: DOCS[i]["kw_dv"] == "beta"),
    "range_doc_values_only": ({"range": {"n_dv": {"gte": 3}}}, doc_values_only("n_dv"),
                              lambda i: DOCS[i]["n_dv"] >= 3),
    "wildcard_doc_values_only": ({"wildcard": {"kw_dv": "*ta"}}, doc_values_only("kw_dv"),
                                 lambda i: DOCS[i]["kw_dv"].endswith("ta")),
    "match_doc_values_only": ({"match": {"n_dv": 2}}, doc_values_only("n_dv"),
                              lambda i: DOCS[i]["n_dv"] == 2),
    # the same checks where other queries build these
    "match_fuzziness": ({"match": {"text": {"query": "outwide", "fuzziness": 1}}}, FUZZY,
                        any_token(lambda t: osa_distance(t, "outwide") <= 1)),
    "match_keyword_fuzziness": ({"match": {"kw": {"query": "betta", "fuzziness": "AUTO"}}},
                                FUZZY, lambda i: osa_distance(DOCS[i]["kw"], "betta") <= 1),
    "match_bool_prefix": ({"match_bool_prefix": {"text": "wet out"}}, PREFIX,
                          lambda i: "wet" in tokens(i)
                          or any(t.startswith("out") for t in tokens(i))),
    "multi_match_bool_prefix": ({"multi_match": {"query": "hot", "type": "bool_prefix",
                                                 "fields": ["text", "kw"]}}, PREFIX,
                                any_token(lambda t: t.startswith("hot"))),
    "query_string_keyword_prefix": ({"query_string": {"query": "al*", "fields": ["kw"]}},
                                    PREFIX, lambda i: DOCS[i]["kw"].startswith("al")),
    "query_string_text_prefix": ({"query_string": {"query": "out*", "default_field": "text"}},
                                 PREFIX, any_token(lambda t: t.startswith("out"))),
    "query_string_wildcard": ({"query_string": {"query": "o?tside", "fields": ["text"]}},
                              WILDCARD, any_token(lambda t: fnmatch.fnmatchcase(t, "o?tside"))),
    "query_string_fuzzy": ({"query_string": {"query": "outwide~1", "fields": ["text"]}}, FUZZY,
                           any_token(lambda t: osa_distance(t, "outwide") <= 1)),
    "query_string_regexp": ({"query_string": {"query": "/ou.*e/", "fields": ["text"]}}, REGEXP,
                            any_token(lambda t: re.fullmatch("ou.*e", t))),
    "query_string_range": ({"query_string": {"query": "kw:[c TO e]", "default_field": "text"}},
                           RANGE,
                           lambda i: "c" <= DOCS[i]["kw"] <= "e"),
    "simple_query_string_prefix": ({"simple_query_string": {"query": "cold out*",
                                                            "fields": ["text"]}}, PREFIX,
                                   lambda i: "cold" in tokens(i)
                                   or any(t.startswith("out") for t in tokens(i))),
    "simple_query_string_fuzzy": ({"simple_query_string": {"query": "betta~1",
                                                           "fields": ["kw"]}}, FUZZY,
                                  lambda i: osa_distance(DOCS[i]["kw"], "betta") <= 1),
    # prefixes longer than `index_prefixes` holds (max_chars 5) are refused
    "prefix_beyond_index_prefixes": ({"prefix": {"tp": "outsid"}}, PREFIX,
                                     any_token(lambda t: t.startswith("outsid"), "tp")),
    "flattened_key_prefix": ({"prefix": {"flat.a": "be"}}, PREFIX,
                             lambda i: DOCS[i]["kw"].startswith("be")),
    "flattened_key_range": ({"range": {"flat.a": {"gte": "b", "lte": "d"}}}, RANGE,
                            lambda i: "b" <= DOCS[i]["kw"] <= "d"),
    # inside compound queries
    "bool_filter": ({"bool": {"must": [{"match": {"text": "cold"}}],
                              "filter": [{"prefix": {"kw": "ga"}}]}}, PREFIX,
                    lambda i: "cold" in tokens(i) and DOCS[i]["kw"].startswith("ga")),
    "constant_score": ({"constant_score": {"filter": {"wildcard": {"kw": "*a"}}}}, WILDCARD,
                       lambda i: DOCS[i]["kw"].endswith("a")),
    "dis_max": ({"dis_max": {"queries": [{"term": {"kw": "alpha"}},
                                         {"fuzzy": {"kw": "gamm"}}]}}, FUZZY,
                lambda i: DOCS[i]["kw"] == "alpha" or osa_distance(DOCS[i]["kw"], "gamm") <= 1),
    "function_score": ({"function_score": {"query": {"regexp": {"kw": "[ab].*"}}}}, REGEXP,
                       lambda i: DOCS[i]["kw"][0] in "ab"),
    "bool_nested": ({"bool": {"should": [{"term": {"kw": "alpha"}}, {"nested": {
        "path": "nested1", "query": {"term": {"nested1.foo": "bar3"}}}}]}}, JOINING,
        lambda i: i in ("1", "3")),
}

# runtime fields: any query on one
RUNTIME_REFUSED = {
    "runtime_term": ({"term": {"rt": 4}}, lambda i: DOCS[i]["n"] * 2 == 4),
    "runtime_exists": ({"exists": {"field": "rt"}}, lambda i: True),
    "runtime_range": ({"range": {"rt": {"gte": 5}}}, lambda i: DOCS[i]["n"] * 2 >= 5),
}

# name -> (query, the documents it matches), searched while the setting is false
ALLOWED = {
    "term": ({"term": {"kw": "beta"}}, lambda i: DOCS[i]["kw"] == "beta"),
    "terms": ({"terms": {"kw": ["beta", "delta"]}}, lambda i: DOCS[i]["kw"] in ("beta", "delta")),
    "match": ({"match": {"text": "cold wet"}},
              lambda i: "cold" in tokens(i) or "wet" in tokens(i)),
    "match_phrase": ({"match_phrase": {"text": "cold outside"}},
                     lambda i: "cold outside" in " ".join(tokens(i))),
    "bool_of_terms": ({"bool": {"should": [{"term": {"kw": "alpha"}}, {"term": {"kw": "gamma"}}],
                                "must_not": [{"term": {"n": 3}}]}},
                      lambda i: DOCS[i]["kw"] == "alpha"),
    "range_numeric": ({"range": {"n": {"gte": 2, "lt": 4}}}, lambda i: 2 <= DOCS[i]["n"] < 4),
    "range_date": ({"range": {"d": {"gte": "2024-01-03"}}}, lambda i: DOCS[i]["n"] >= 3),
    "exists_doc_values_only": ({"exists": {"field": "kw_dv"}}, lambda i: True),
    "term_case_insensitive": ({"term": {"kw": {"value": "BETA", "case_insensitive": True}}},
                              lambda i: DOCS[i]["kw"] == "beta"),
    "ids": ({"ids": {"values": ["1", "4"]}}, lambda i: i in ("1", "4")),
    # a prefix the field's prefix index holds (1 to 5 characters by default)
    "prefix_index_prefixes": ({"prefix": {"tp": "outs"}},
                              any_token(lambda t: t.startswith("outs"), "tp")),
    "prefix_search_as_you_type": ({"prefix": {"sayt": "atmo"}},
                                  any_token(lambda t: t.startswith("atmo"), "sayt")),
    "match_bool_prefix_search_as_you_type": (
        {"match_bool_prefix": {"sayt": "cold the"}},
        lambda i: "cold" in tokens(i, "sayt") or any(t.startswith("the")
                                                     for t in tokens(i, "sayt"))),
    # `wildcard` fields are not string fields in ES
    "wildcard_on_wildcard_field": ({"wildcard": {"wc": "*ta"}},
                                   lambda i: DOCS[i]["wc"].endswith("ta")),
    # lenient parsers catch the refusal: the field matches nothing (a query string over every
    # field is lenient)
    "query_string_all_fields": ({"query_string": {"query": "kw:[c TO e] OR kw:alpha"}},
                                lambda i: DOCS[i]["kw"] == "alpha"),
    "lenient_match_fuzziness": ({"match": {"text": {"query": "outwide", "fuzziness": 1,
                                                    "lenient": True}}}, lambda i: False),
    "lenient_query_string": ({"query_string": {"query": "al* OR beta", "fields": ["kw"],
                                               "lenient": True}},
                             lambda i: DOCS[i]["kw"] == "beta"),
}


@pytest.fixture(scope="module")
def idx(es):
    body = {"mappings": MAPPING, "settings": {"number_of_shards": 2}}
    es.indices.delete(index=INDEX, ignore_unavailable=True)
    es.indices.create(index=INDEX, **body)
    ops = []
    for i, d in DOCS.items():
        ops += [{"index": {"_index": INDEX, "_id": i}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield INDEX
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def reset(es):
    es.cluster.put_settings(persistent={KEY: None}, transient={KEY: None})


@pytest.fixture
def disallowed(es, idx):
    es.cluster.put_settings(persistent={KEY: False})
    try:
        yield idx
    finally:
        reset(es)


def hits(es, query, **kw):
    r = es.search(index=INDEX, query=query, size=10, **kw)
    return {h["_id"] for h in r["hits"]["hits"]}


def assert_refused(es, query, reason, **kw):
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, query=query, **kw)
    assert e.value.meta.status == 400
    err = e.value.body["error"]
    assert err["type"] == "search_phase_execution_exception"
    assert err["reason"] == "all shards failed"
    # ES's root cause is the innermost ElasticsearchException, rendered without a cause
    assert err["root_cause"] == [{"type": "exception", "reason": reason}]
    failure = err["failed_shards"][0]["reason"]
    assert (failure["type"], failure["reason"]) == ("query_shard_exception",
                                                    "failed to create query: " + reason)
    assert failure["caused_by"] == {"type": "exception", "reason": reason}


def test_setting_is_shown_and_validated(es, idx):
    assert KEY not in es.cluster.get_settings(flat_settings=True)["persistent"]
    defaults = es.cluster.get_settings(flat_settings=True, include_defaults=True)["defaults"]
    assert defaults[KEY] == "true"
    try:
        r = es.cluster.put_settings(persistent={KEY: "false"}, flat_settings=True)
        assert r["persistent"] == {KEY: "false"}
        with pytest.raises(BadRequestError) as e:
            es.cluster.put_settings(transient={KEY: "nope"})
        assert e.value.body["error"]["reason"] == \
            "failed to parse value [nope] for setting [%s]" % KEY
    finally:
        reset(es)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_while_false_and_answered_once_reset(es, idx, name):
    query, reason, matches = REFUSED[name]
    es.cluster.put_settings(persistent={KEY: False})
    try:
        assert_refused(es, query, reason)
    finally:
        reset(es)
    assert hits(es, query) == ids_where(matches)


@pytest.mark.parametrize("name", sorted(RUNTIME_REFUSED))
def test_runtime_fields_refused_while_false(es, idx, name):
    query, matches = RUNTIME_REFUSED[name]
    es.cluster.put_settings(persistent={KEY: False})
    try:
        assert_refused(es, query, RUNTIME_FIELD, runtime_mappings=RUNTIME)
    finally:
        reset(es)
    assert hits(es, query, runtime_mappings=RUNTIME) == ids_where(matches)


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_cheap_queries_keep_working(es, disallowed, name):
    query, matches = ALLOWED[name]
    assert hits(es, query) == ids_where(matches)


def test_script_score_scores_once_reset(es, idx):
    query = REFUSED["script_score"][0]
    r = es.search(index=INDEX, query=query, size=10)
    assert {h["_id"]: h["_score"] for h in r["hits"]["hits"]} == \
        {i: float(d["n"]) for i, d in DOCS.items()}


def test_post_filter_and_aggregation_filters_are_refused(es, disallowed):
    assert_refused(es, {"match_all": {}}, PREFIX, post_filter={"prefix": {"kw": "al"}})
    with pytest.raises(BadRequestError):
        es.search(index=INDEX, size=0, aggs={"f": {"filter": {"prefix": {"kw": "al"}}}})


def test_count_is_refused(es, disallowed):
    with pytest.raises(BadRequestError) as e:
        es.count(index=INDEX, query={"wildcard": {"kw": "a*"}})
    assert WILDCARD in str(e.value.body)


def test_transient_overrides_persistent_and_null_resets(es, idx):
    query, reason, matches = REFUSED["prefix_keyword"]
    try:
        es.cluster.put_settings(persistent={KEY: False})
        assert_refused(es, query, reason)
        es.cluster.put_settings(transient={KEY: True})
        assert hits(es, query) == ids_where(matches)
        es.cluster.put_settings(transient={KEY: None})
        assert_refused(es, query, reason)
    finally:
        reset(es)
    assert hits(es, query) == ids_where(matches)


def test_cached_answers_are_not_given_while_false(es, idx):
    # size 0 searches go through the request cache: an answer cached while allowed must not
    # stand in for the refusal
    aggs = {"n": {"sum": {"field": "n"}}}
    query = {"prefix": {"kw": "al"}}
    r = es.search(index=INDEX, query=query, size=0, aggs=aggs, request_cache=True)
    assert r["aggregations"]["n"]["value"] == 1.0
    try:
        es.cluster.put_settings(persistent={KEY: False})
        assert_refused(es, query, PREFIX, size=0, aggs=aggs, request_cache=True)
    finally:
        reset(es)

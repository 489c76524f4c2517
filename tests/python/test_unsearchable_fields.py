"""Queries on fields that are not indexed, as Elasticsearch 8 answers them.

- A keyword, numeric, date, boolean or ip field with `index: false` and doc values is searched
  through its doc values (`failIfNotIndexedNorDocValuesFallback`): the hits must equal an
  oracle computed here over the documents.
- The same field without doc values, a text field or a range field with `index: false`
  cannot be searched: ES's 400 `query_shard_exception` "failed to create query: Cannot search
  on field [f] since it is not indexed[ nor has doc values]." caused by the
  `illegal_argument_exception`; a `lenient` match-type query matches nothing instead.
- Field patterns (`*`, `kw_*`) in `multi_match` and `query_string` expand to indexed fields
  only (`QueryParserHelper#resolveMappingField`), so they neither fail on nor search the
  fields above.
"""

import ipaddress
import random
import re

import pytest

from oracle import osa_distance

from conftest import error_of, make_index

INDEX = "unsearchable_fields"
SCALAR_TYPES = {
    "kw": {"type": "keyword"},
    "long": {"type": "long"},
    "int": {"type": "integer"},
    "dbl": {"type": "double"},
    "sf": {"type": "scaled_float", "scaling_factor": 100},
    "date": {"type": "date"},
    "bool": {"type": "boolean"},
    "ip": {"type": "ip"},
}
WORDS = ["apple", "apply", "maple", "Apple", "aple", "banana", "bandana", "cherry", "ap", "ppl"]
DOUBLES = [0.5, 1.25, 2.0, -3.5, 10.0, 7.75]


def mapping():
    props = {}
    for name, m in SCALAR_TYPES.items():
        props[name + "_idx"] = dict(m)
        props[name + "_dv"] = dict(m, index=False)
        props[name + "_none"] = dict(m, index=False, doc_values=False)
    props["text_none"] = {"type": "text", "index": False}
    props["text_idx"] = {"type": "text"}
    props["range_none"] = {"type": "integer_range", "index": False}
    props["fl_none"] = {"type": "flattened", "index": False}
    props["geo_none"] = {"type": "geo_point", "index": False, "doc_values": False}
    return {"settings": {"number_of_shards": 1}, "mappings": {"properties": props}}


def value_of(kind, rng):
    if kind == "kw":
        return rng.choice(WORDS)
    if kind in ("long", "int"):
        return rng.randint(-5, 20)
    if kind in ("dbl", "sf"):
        return rng.choice(DOUBLES)
    if kind == "date":
        return "2024-01-%02d" % rng.randint(1, 28)
    if kind == "bool":
        return rng.random() < 0.5
    return "10.0.0.%d" % rng.randint(0, 20)


def make_docs():
    rng = random.Random(22)
    docs = []
    for i in range(80):
        d = {}
        for kind in SCALAR_TYPES:
            for suffix in ("_idx", "_dv", "_none"):
                r = rng.random()
                if r < 0.1:
                    continue
                if r < 0.3 and kind != "bool":
                    d[kind + suffix] = [value_of(kind, rng) for _ in range(rng.randint(1, 3))]
                else:
                    d[kind + suffix] = value_of(kind, rng)
        d["text_none"] = "quick brown fox"
        d["text_idx"] = "lazy dog"
        d["range_none"] = {"gte": i, "lte": i + 5}
        d["fl_none"] = {"a": "x%d" % (i % 3)}
        d["geo_none"] = {"lat": 1.0, "lon": 2.0}
        docs.append((str(i), d))
    return docs


@pytest.fixture(scope="module")
def corpus(es):
    docs = make_docs()
    make_index(es, INDEX, mapping(), docs)
    yield dict(docs)
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def values(source, field):
    v = source.get(field)
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def oracle(corpus, field, pred):
    return {i for i, s in corpus.items() if any(pred(v) for v in values(s, field))}


def hits(es, query):
    resp = es.search(index=INDEX, query=query, size=1000)
    assert resp["hits"]["total"]["value"] == len(resp["hits"]["hits"])
    return {h["_id"] for h in resp["hits"]["hits"]}


def ip(s):
    return ipaddress.ip_address(s)


# Per type: (query on field F, predicate over one value) pairs the oracle answers.
def cases(kind):
    if kind == "kw":
        return [
            ({"term": {"F": "apple"}}, lambda v: v == "apple"),
            ({"term": {"F": {"value": "APPLE", "case_insensitive": True}}},
             lambda v: v.lower() == "apple"),
            ({"terms": {"F": ["apple", "cherry", "nope"]}}, lambda v: v in ("apple", "cherry")),
            ({"range": {"F": {"gte": "apple", "lt": "b"}}}, lambda v: "apple" <= v < "b"),
            ({"prefix": {"F": "app"}}, lambda v: v.startswith("app")),
            ({"prefix": {"F": {"value": "APP", "case_insensitive": True}}},
             lambda v: v.lower().startswith("app")),
            ({"wildcard": {"F": "*ppl?"}}, lambda v: re.fullmatch(r".*ppl.", v) is not None),
            ({"wildcard": {"F": {"value": "A*E", "case_insensitive": True}}},
             lambda v: re.fullmatch(r"a.*e", v.lower()) is not None),
            ({"regexp": {"F": "ap+l."}}, lambda v: re.fullmatch(r"ap+l.", v) is not None),
            ({"fuzzy": {"F": "aple"}}, lambda v: osa_distance("aple", v) <= 1),
            ({"fuzzy": {"F": {"value": "bandanna", "fuzziness": 2, "prefix_length": 2}}},
             lambda v: v[:2] == "ba" and osa_distance("bandanna", v) <= 2),
            ({"match": {"F": "apple"}}, lambda v: v == "apple"),
            ({"match": {"F": {"query": "aple", "fuzziness": 1}}},
             lambda v: osa_distance("aple", v) <= 1),
            ({"match_bool_prefix": {"F": "app"}}, lambda v: v.startswith("app")),
            ({"match_phrase": {"F": "maple"}}, lambda v: v == "maple"),
            ({"match_phrase_prefix": {"F": "ban"}}, lambda v: v.startswith("ban")),
        ]
    if kind in ("long", "int"):
        return [
            ({"term": {"F": 5}}, lambda v: v == 5),
            ({"terms": {"F": [1, 7, 19]}}, lambda v: v in (1, 7, 19)),
            ({"range": {"F": {"gte": 3, "lt": 10}}}, lambda v: 3 <= v < 10),
            ({"range": {"F": {"gt": -2}}}, lambda v: v > -2),
            ({"match": {"F": "12"}}, lambda v: v == 12),
        ]
    if kind in ("dbl", "sf"):
        return [
            ({"term": {"F": 1.25}}, lambda v: v == 1.25),
            ({"terms": {"F": [0.5, 10]}}, lambda v: v in (0.5, 10.0)),
            ({"range": {"F": {"gt": 0.5, "lte": 7.75}}}, lambda v: 0.5 < v <= 7.75),
        ]
    if kind == "date":
        return [
            ({"term": {"F": "2024-01-07"}}, lambda v: v == "2024-01-07"),
            ({"terms": {"F": ["2024-01-01", "2024-01-28"]}},
             lambda v: v in ("2024-01-01", "2024-01-28")),
            ({"range": {"F": {"gte": "2024-01-10", "lt": "2024-01-20"}}},
             lambda v: "2024-01-10" <= v < "2024-01-20"),
        ]
    if kind == "bool":
        return [
            ({"term": {"F": True}}, lambda v: v is True),
            ({"terms": {"F": [False]}}, lambda v: v is False),
            ({"range": {"F": {"gte": True}}}, lambda v: v is True),
            ({"range": {"F": {"lte": False}}}, lambda v: v is False),
            ({"range": {"F": {"gt": False}}}, lambda v: v is True),
        ]
    return [
        ({"term": {"F": "10.0.0.3"}}, lambda v: v == "10.0.0.3"),
        ({"term": {"F": "10.0.0.0/30"}}, lambda v: ip(v) in ipaddress.ip_network("10.0.0.0/30")),
        ({"terms": {"F": ["10.0.0.1", "10.0.0.20"]}}, lambda v: v in ("10.0.0.1", "10.0.0.20")),
        ({"range": {"F": {"gte": "10.0.0.5", "lte": "10.0.0.10"}}},
         lambda v: ip("10.0.0.5") <= ip(v) <= ip("10.0.0.10")),
    ]


def on_field(query, field):
    return json_replace(query, "F", field)


def json_replace(q, old, new):
    if isinstance(q, dict):
        return {(new if k == old else k): json_replace(v, old, new) for k, v in q.items()}
    return q


DOC_VALUES_CASES = [(kind, i) for kind in SCALAR_TYPES for i in range(len(cases(kind)))]


@pytest.mark.parametrize("kind,case", DOC_VALUES_CASES)
def test_doc_values_only_fields_are_searched_from_their_column(es, corpus, kind, case):
    query, pred = cases(kind)[case]
    field = kind + "_dv"
    want = oracle(corpus, field, pred)
    assert hits(es, on_field(query, field)) == want
    # The indexed twin answers the same question over its own values.
    assert hits(es, on_field(query, kind + "_idx")) == oracle(corpus, kind + "_idx", pred)


def test_the_doc_values_cases_are_not_trivial(corpus):
    for kind in SCALAR_TYPES:
        for query, pred in cases(kind):
            n = len(oracle(corpus, kind + "_dv", pred))
            assert 0 < n < len(corpus), (kind, query, n)


def assert_refused(es, query, why):
    status, body = error_of(lambda: es.search(index=INDEX, query=query))
    assert status == 400, body
    error = body["error"]
    assert error["root_cause"][0]["type"] == "query_shard_exception"
    assert error["root_cause"][0]["reason"] == "failed to create query: " + why
    assert error["type"] == "search_phase_execution_exception"
    reason = error["failed_shards"][0]["reason"]
    assert reason["type"] == "query_shard_exception"
    assert reason["reason"] == "failed to create query: " + why
    assert reason["caused_by"] == {"type": "illegal_argument_exception", "reason": why}


def not_indexed_nor_dv(field):
    return "Cannot search on field [%s] since it is not indexed nor has doc values." % field


def not_indexed(field):
    return "Cannot search on field [%s] since it is not indexed." % field


REFUSED_CASES = [(kind, i) for kind in SCALAR_TYPES for i in range(len(cases(kind)))]


@pytest.mark.parametrize("kind,case", REFUSED_CASES)
def test_fields_without_index_nor_doc_values_are_refused(es, corpus, kind, case):
    query, _ = cases(kind)[case]
    field = kind + "_none"
    assert_refused(es, on_field(query, field), not_indexed_nor_dv(field))


@pytest.mark.parametrize("query", [
    {"multi_match": {"query": "apple", "fields": ["kw_none", "kw_idx"]}},
    {"multi_match": {"query": "apple", "fields": ["kw_none"], "type": "cross_fields"}},
    {"query_string": {"query": "apple", "fields": ["kw_none"]}},
    {"query_string": {"query": "kw_none:app*", "default_field": "kw_idx"}},
    {"query_string": {"query": "apple", "default_field": "kw_none"}},
    {"simple_query_string": {"query": "apple", "fields": ["kw_none"]}},
    {"bool": {"filter": [{"term": {"kw_none": "apple"}}]}},
    {"constant_score": {"filter": {"range": {"kw_none": {"gte": "a"}}}}},
])
def test_named_fields_are_refused_inside_other_queries(es, corpus, query):
    assert_refused(es, query, not_indexed_nor_dv("kw_none"))


@pytest.mark.parametrize("query", [
    {"term": {"text_none": "fox"}},
    {"terms": {"text_none": ["fox"]}},
    {"match": {"text_none": "quick fox"}},
    {"match_phrase": {"text_none": "fox"}},
    {"prefix": {"text_none": "qu"}},
    {"wildcard": {"text_none": "qu*k"}},
    {"regexp": {"text_none": "qu.*"}},
    {"fuzzy": {"text_none": "fix"}},
    {"range": {"text_none": {"gte": "a"}}},
    {"multi_match": {"query": "fox", "fields": ["text_none"]}},
    {"query_string": {"query": "fox", "fields": ["text_none"]}},
])
def test_text_fields_not_indexed_are_refused(es, corpus, query):
    assert_refused(es, query, not_indexed("text_none"))


def test_a_phrase_on_text_not_indexed_asks_for_positions_first(es, corpus):
    # ES's `TextFieldType#phraseQuery` checks positions before the index.
    why = "field:[text_none] was indexed without position data; cannot run PhraseQuery"
    status, body = error_of(lambda: es.search(
        index=INDEX, query={"match_phrase": {"text_none": "quick brown"}}))
    assert status == 400
    reason = body["error"]["failed_shards"][0]["reason"]
    assert reason["reason"] == "failed to create query: " + why
    assert reason["caused_by"] == {"type": "illegal_state_exception", "reason": why}


@pytest.mark.parametrize("query", [
    {"term": {"range_none": 3}},
    {"range": {"range_none": {"gte": 3, "lte": 4}}},
])
def test_range_fields_not_indexed_are_refused_despite_doc_values(es, corpus, query):
    # ES's `RangeFieldType#rangeQuery` calls `failIfNotIndexed`: no doc-values fallback.
    assert_refused(es, query, not_indexed("range_none"))


def test_geo_points_without_index_nor_doc_values_are_refused(es, corpus):
    # ES's `GeoPointFieldType` queries: `failIfNotIndexedNorDocValuesFallback`.
    query = {"geo_distance": {"distance": "10km", "geo_none": {"lat": 1.0, "lon": 2.0}}}
    assert_refused(es, query, not_indexed_nor_dv("geo_none"))


@pytest.mark.parametrize("query,field", [
    ({"term": {"fl_none": "x1"}}, "fl_none"),
    ({"term": {"fl_none.a": "x1"}}, "fl_none._keyed"),
    ({"terms": {"fl_none.a": ["x1"]}}, "fl_none._keyed"),
    ({"match": {"fl_none.a": "x1"}}, "fl_none._keyed"),
    ({"prefix": {"fl_none.a": "x"}}, "fl_none._keyed"),
    ({"range": {"fl_none.a": {"gte": "x0", "lte": "x2"}}}, "fl_none._keyed"),
])
def test_flattened_fields_not_indexed_are_refused(es, corpus, query, field):
    # ES's `RootFlattenedFieldType` and `KeyedFlattenedFieldType` (on `{root}._keyed`) are
    # `StringFieldType`s: `failIfNotIndexed`.
    assert_refused(es, query, not_indexed(field))


@pytest.mark.parametrize("query,why", [
    ({"wildcard": {"fl_none.a": "x*"}},
     "[wildcard] queries are not currently supported on keyed [flattened] fields."),
    ({"prefix": {"long_none": "1"}},
     "Can only use prefix queries on keyword, text and wildcard fields - not on [long_none] "
     "which is of type [long]"),
    ({"regexp": {"bool_none": "t.*"}},
     "Can only use regexp queries on keyword and text fields - not on [bool_none] "
     "which is of type [boolean]"),
])
def test_a_query_the_type_does_not_support_is_refused_for_that_first(es, corpus, query, why):
    status, body = error_of(lambda: es.search(index=INDEX, query=query))
    assert status == 400
    assert body["error"]["root_cause"][0]["reason"] == "failed to create query: " + why


@pytest.mark.parametrize("query", [
    {"match": {"kw_none": {"query": "apple", "lenient": True}}},
    {"match": {"text_none": {"query": "fox", "lenient": True}}},
    {"multi_match": {"query": "fox", "fields": ["text_none"], "lenient": True}},
    {"multi_match": {"query": "5", "fields": ["long_none", "kw_none"], "lenient": True}},
    {"query_string": {"query": "apple", "fields": ["kw_none"], "lenient": True}},
    {"simple_query_string": {"query": "apple", "fields": ["kw_none"], "lenient": True}},
    # Without fields the query string searches every field, which makes it lenient (ES's
    # `QueryStringQueryBuilder`), named fields included.
    {"query_string": {"query": "kw_none:app*"}},
])
def test_lenient_queries_match_nothing_on_fields_that_cannot_be_searched(es, corpus, query):
    assert hits(es, query) == set()


@pytest.mark.parametrize("query", [
    {"multi_match": {"query": "apple", "fields": ["kw_*"]}},
    {"multi_match": {"query": "apple", "fields": ["kw_*"], "type": "cross_fields"}},
    {"multi_match": {"query": "apple", "fields": ["kw_*"], "type": "phrase"}},
    {"query_string": {"query": "apple", "fields": ["kw_*"]}},
    {"query_string": {"query": "apple", "default_field": "kw_*"}},
    {"query_string": {"query": "kw_\\*:apple"}},
    {"simple_query_string": {"query": "apple", "fields": ["kw*"]}},
])
def test_field_patterns_skip_fields_that_are_not_indexed(es, corpus, query):
    # Only `kw_idx` is expanded: `kw_dv` (doc values only) and `kw_none` are skipped.
    assert hits(es, query) == oracle(corpus, "kw_idx", lambda v: v == "apple")


@pytest.mark.parametrize("query", [
    {"multi_match": {"query": "apple", "fields": ["*"]}},
    {"query_string": {"query": "apple"}},
    {"simple_query_string": {"query": "apple"}},
])
def test_all_fields_skip_fields_that_are_not_indexed(es, corpus, query):
    # `*` reaches every indexed field; only keywords can hold `apple` here.
    assert hits(es, query) == oracle(corpus, "kw_idx", lambda v: v == "apple")


def test_exists_works_on_every_field(es, corpus):
    # ES's `existsQuery` reads doc values, norms or `_field_names`: no index needed.
    for kind in SCALAR_TYPES:
        for suffix in ("_dv", "_none"):
            field = kind + suffix
            want = {i for i, s in corpus.items() if values(s, field)}
            assert hits(es, {"exists": {"field": field}}) == want, field


# --- index.query.default_field ---------------------------------------------------------------

def default_field_index(es, name, default_field):
    body = mapping()
    body["settings"]["index.query.default_field"] = default_field
    docs = make_docs()
    make_index(es, name, body, docs)
    return dict(docs)


@pytest.mark.parametrize("default_field", [["kw_*"], "kw_*", ["kw_dv", "kw_idx^2"]])
def test_default_field_patterns_skip_fields_that_are_not_indexed(es, default_field):
    name = "unsearchable_default_field"
    corpus = default_field_index(es, name, default_field)
    try:
        want = oracle(corpus, "kw_idx", lambda v: v == "apple")
        for query in (
            {"query_string": {"query": "apple"}},
            {"simple_query_string": {"query": "apple"}},
            {"multi_match": {"query": "apple"}},
        ):
            resp = es.search(index=name, query=query, size=1000)
            got = {h["_id"] for h in resp["hits"]["hits"]}
            if isinstance(default_field, list) and "kw_dv" in default_field:
                # Named without a pattern, the doc-values-only field is searched too.
                want_all = want | oracle(corpus, "kw_dv", lambda v: v == "apple")
                assert got == want_all, query
            else:
                assert got == want, query
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)


def test_a_default_field_that_cannot_be_searched_is_refused(es):
    name = "unsearchable_default_field"
    default_field_index(es, name, "kw_idx,kw_none")
    try:
        for query in (
            {"query_string": {"query": "apple"}},
            {"multi_match": {"query": "apple"}},
        ):
            status, body = error_of(lambda: es.search(index=name, query=query))
            assert status == 400, query
            why = not_indexed_nor_dv("kw_none")
            assert body["error"]["root_cause"][0]["reason"] == "failed to create query: " + why
        # `lenient` (or `index.query_string.lenient`) makes it match nothing there.
        resp = es.search(index=name, query={"query_string": {"query": "apple", "lenient": True}})
        assert resp["hits"]["total"]["value"] > 0
    finally:
        es.indices.delete(index=name, ignore_unavailable=True)

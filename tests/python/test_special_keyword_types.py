"""`match_only_text`, `wildcard` and `constant_keyword` as Elasticsearch 8 defines them.

Oracles are computed here from the documents each test indexes:

- match_only_text (`MatchOnlyTextFieldMapper`): every term query is a `ConstantScoreQuery`, so
  a `match` scores the number of distinct query terms a document holds (times the boost); a
  phrase is confirmed from `_source` (`SourceConfirmedTextQuery`) and scores its boost. Terms
  are the standard analyzer's (lowercased runs of letters and digits, for this corpus).
  Positions for the phrase oracle: the i-th token is at position i; a phrase with slop s
  matches when the terms, each moved back by its place in the phrase, fit in s positions.
- wildcard (`WildcardFieldMapper`): the raw value, case-sensitive; every query scores its boost.
- constant_keyword (`ConstantKeywordFieldMapper`, `ConstantFieldType`): a query is decided on the
  mapping's value and matches every document or none (`term`, `terms`, `prefix` and `wildcard`
  compare with `Regex#simpleMatch`, where only `*` is special).

Error types and reasons are ES's, from the mappers' source.
"""

import fnmatch
import itertools
import random
import re

import pytest

from conftest import error_of, make_index

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def tokens(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def root_cause(body):
    return body["error"]["root_cause"][0]


def mapping_error(es, index, props):
    es.indices.delete(index=index, ignore_unavailable=True)
    status, body = error_of(
        lambda: es.indices.create(index=index, mappings={"properties": props})
    )
    assert status == 400
    assert body["error"]["type"] == "mapper_parsing_exception"
    return body["error"]["reason"]


# --- mapping parameters -------------------------------------------------------------------

@pytest.mark.parametrize(
    "ty,param,value",
    [
        ("match_only_text", "analyzer", "standard"),
        ("match_only_text", "index_options", "docs"),
        ("match_only_text", "norms", False),
        ("match_only_text", "store", True),
        ("match_only_text", "index", True),
        ("wildcard", "index_options", "docs"),
        ("wildcard", "normalizer", "lowercase"),
        ("wildcard", "index", False),
        ("wildcard", "doc_values", False),
        ("wildcard", "store", True),
        ("constant_keyword", "index", True),
        ("constant_keyword", "doc_values", True),
        ("constant_keyword", "ignore_above", 3),
        ("constant_keyword", "null_value", "x"),
    ],
)
def test_parameters_the_mapper_does_not_declare_are_refused(es, ty, param, value):
    reason = mapping_error(es, "special_params", {"f": {"type": ty, param: value}})
    assert reason == (
        "Failed to parse mapping: unknown parameter [%s] on mapper [f] of type [%s]" % (param, ty)
    )


def test_constant_keyword_value_must_be_a_string_or_a_number(es):
    reason = mapping_error(es, "special_params", {"c": {"type": "constant_keyword", "value": True}})
    assert reason == (
        "Failed to parse mapping: Property [value] on field [c] must be a number or a string, "
        "but got [true]"
    )
    reason = mapping_error(es, "special_params", {"c": {"type": "constant_keyword", "value": None}})
    assert reason == (
        "Failed to parse mapping: [value] on mapper [c] of type [constant_keyword] must not "
        "have a [null] value"
    )


def test_declared_parameters_round_trip_through_get_mapping(es):
    props = {
        "c": {"type": "constant_keyword", "value": "logs", "meta": {"unit": "none"}},
        "m": {"type": "match_only_text", "meta": {"a": "b"},
              "fields": {"raw": {"type": "keyword"}}, "copy_to": ["w2"]},
        "w": {"type": "wildcard", "ignore_above": 20, "null_value": "none"},
        "w2": {"type": "wildcard"},
    }
    es.indices.delete(index="special_get", ignore_unavailable=True)
    es.indices.create(index="special_get", mappings={"properties": props})
    got = es.indices.get_mapping(index="special_get")["special_get"]["mappings"]["properties"]
    assert got == props
    es.indices.delete(index="special_get")


def test_constant_keyword_value_is_set_once(es):
    index = "special_ck_update"
    es.indices.delete(index=index, ignore_unavailable=True)
    es.indices.create(index=index, mappings={"properties": {"c": {"type": "constant_keyword"}}})
    es.indices.put_mapping(index=index, properties={"c": {"type": "constant_keyword", "value": "a"}})
    # the same value again is no change
    es.indices.put_mapping(index=index, properties={"c": {"type": "constant_keyword", "value": "a"}})
    status, body = error_of(lambda: es.indices.put_mapping(
        index=index, properties={"c": {"type": "constant_keyword", "value": "b"}}))
    assert status == 400
    assert body["error"]["type"] == "illegal_argument_exception"
    assert body["error"]["reason"] == (
        "Mapper for [c] conflicts with existing mapper:\n\tCannot update parameter [value] from [a] to [b]"
    )
    es.indices.delete(index=index)


# --- constant_keyword ---------------------------------------------------------------------

def test_constant_keyword_takes_its_value_from_the_first_document(es):
    index = "special_ck_dynamic"
    es.indices.delete(index=index, ignore_unavailable=True)
    es.indices.create(index=index, settings={"number_of_shards": 1},
                      mappings={"properties": {"c": {"type": "constant_keyword"}, "n": {"type": "long"}}})
    es.index(index=index, id="1", document={"n": 1}, refresh=True)
    # no value yet: every query matches nothing, exists included
    assert es.search(index=index, query={"exists": {"field": "c"}})["hits"]["total"]["value"] == 0
    es.index(index=index, id="2", document={"n": 2, "c": "logs"}, refresh=True)
    props = es.indices.get_mapping(index=index)[index]["mappings"]["properties"]
    assert props["c"] == {"type": "constant_keyword", "value": "logs"}
    status, body = error_of(lambda: es.index(index=index, id="3", document={"c": "metrics"}))
    assert status == 400
    assert body["error"]["type"] == "document_parsing_exception"
    # the client sends {"c":"metrics"}: ES locates the value at [1:7]
    assert body["error"]["reason"] == (
        "[1:7] failed to parse field [c] of type [constant_keyword] in document with id '3'. "
        "Preview of field's value: 'metrics'"
    )
    assert body["error"]["caused_by"] == {
        "type": "illegal_argument_exception",
        "reason": "[constant_keyword] field [c] only accepts values that are equal to the value "
                  "defined in the mappings [logs], but got [metrics]",
    }
    status, body = error_of(lambda: es.index(index=index, id="4", document={"c": None}))
    assert status == 400
    assert body["error"]["caused_by"]["reason"] == (
        "[constant_keyword] field [c] doesn't accept [null] values"
    )
    # both documents match, the one that did not send the field too
    hits = es.search(index=index, query={"term": {"c": "logs"}})["hits"]["hits"]
    assert sorted(h["_id"] for h in hits) == ["1", "2"]
    es.indices.delete(index=index)


CK_VALUE = "logs-web"


def ck_oracle(query):
    """Whether `query` (one leaf on field c) matches the value, as ES decides it."""
    kind, body = next(iter(query.items()))
    spec = body["c"]
    v = CK_VALUE

    def simple(p, ci=False):
        if ci:
            p, val = p.lower(), v.lower()
        else:
            val = v
        return re.fullmatch(".*".join(re.escape(x) for x in p.split("*")), val, re.S) is not None

    if kind == "term":
        return simple(spec["value"], spec.get("case_insensitive", False))
    if kind == "terms":
        return any(simple(x) for x in spec)
    if kind == "prefix":
        return simple(spec["value"] + "*", spec.get("case_insensitive", False))
    if kind == "wildcard":
        return simple(spec["value"], spec.get("case_insensitive", False))
    if kind == "regexp":
        return re.fullmatch(spec["value"], v) is not None
    if kind == "range":
        ok = True
        if "gte" in spec:
            ok &= spec["gte"] <= v
        if "gt" in spec:
            ok &= spec["gt"] < v
        if "lte" in spec:
            ok &= v <= spec["lte"]
        if "lt" in spec:
            ok &= v < spec["lt"]
        return ok
    if kind == "match":
        return spec == v
    raise AssertionError(kind)


CK_QUERIES = [
    {"term": {"c": {"value": "logs-web"}}},
    {"term": {"c": {"value": "logs-app"}}},
    {"term": {"c": {"value": "LOGS-WEB", "case_insensitive": True}}},
    {"term": {"c": {"value": "logs*"}}},
    {"terms": {"c": ["a", "logs-web"]}},
    {"terms": {"c": ["a", "b"]}},
    {"prefix": {"c": {"value": "logs"}}},
    {"prefix": {"c": {"value": "web"}}},
    {"wildcard": {"c": {"value": "*-w*"}}},
    {"wildcard": {"c": {"value": "logs?web"}}},
    {"regexp": {"c": {"value": "logs-[a-z]+"}}},
    {"regexp": {"c": {"value": "metrics.*"}}},
    {"range": {"c": {"gte": "logs", "lt": "logs-z"}}},
    {"range": {"c": {"gt": "logs-web"}}},
    {"range": {"c": {"lte": "logs-web"}}},
    {"match": {"c": "logs-web"}},
    {"match": {"c": "logs"}},
]


@pytest.fixture(scope="module")
def ck_index(es):
    index = "special_ck"
    docs = [(str(i), {"n": i, **({"c": CK_VALUE} if i % 3 == 0 else {})}) for i in range(12)]
    make_index(es, index, {
        "settings": {"number_of_shards": 2},
        "mappings": {"properties": {"c": {"type": "constant_keyword", "value": CK_VALUE},
                                    "n": {"type": "long"}}},
    }, docs)
    yield index, docs
    es.indices.delete(index=index, ignore_unavailable=True)


@pytest.mark.parametrize("query", CK_QUERIES, ids=lambda q: str(q))
def test_constant_keyword_queries_match_all_or_none(es, ck_index, query):
    index, docs = ck_index
    resp = es.search(index=index, query=query, size=50)
    got = sorted(h["_id"] for h in resp["hits"]["hits"])
    expected = sorted(i for i, _ in docs) if ck_oracle(query) else []
    assert got == expected
    assert all(h["_score"] == 1.0 for h in resp["hits"]["hits"])


def test_constant_keyword_fuzzy_exists_and_boost(es, ck_index):
    index, docs = ck_index
    everyone = sorted(i for i, _ in docs)
    hits = es.search(index=index, query={"fuzzy": {"c": {"value": "logs-wbe"}}}, size=50)["hits"]["hits"]
    assert sorted(h["_id"] for h in hits) == everyone
    hits = es.search(index=index, query={"fuzzy": {"c": {"value": "lgs-wbe", "fuzziness": 1}}})["hits"]["hits"]
    assert hits == []
    hits = es.search(index=index, query={"exists": {"field": "c"}}, size=50)["hits"]["hits"]
    assert sorted(h["_id"] for h in hits) == everyone
    hits = es.search(index=index, query={"term": {"c": {"value": CK_VALUE, "boost": 2.5}}}, size=50)["hits"]["hits"]
    assert {h["_score"] for h in hits} == {2.5}


def test_constant_keyword_aggregations_sort_and_fields_see_every_document(es, ck_index):
    index, docs = ck_index
    resp = es.search(index=index, size=50, aggs={"c": {"terms": {"field": "c"}}},
                     sort=[{"c": "asc"}, {"n": "asc"}], fields=["c"], docvalue_fields=["c"])
    assert resp["aggregations"]["c"]["buckets"] == [{"key": CK_VALUE, "doc_count": len(docs)}]
    hits = resp["hits"]["hits"]
    assert [h["_id"] for h in hits] == [i for i, _ in sorted(docs, key=lambda d: d[1]["n"])]
    for h in hits:
        assert h["sort"][0] == CK_VALUE
        assert h["fields"]["c"] == [CK_VALUE]


# --- wildcard -----------------------------------------------------------------------------

W_VALUES = ["Error: disk full", "error: disk", "warn-42", "WARN-7", "info", "disk quota exceeded",
            "a very long value beyond the limit"]


@pytest.fixture(scope="module")
def w_index(es):
    index = "special_w"
    rng = random.Random(11)
    docs = []
    for i in range(30):
        src = {"w": rng.choice(W_VALUES)} if rng.random() < 0.85 else ({"w": None} if i % 2 else {})
        docs.append((str(i), src))
    make_index(es, index, {
        "settings": {"number_of_shards": 2},
        "mappings": {"properties": {"w": {"type": "wildcard", "ignore_above": 25,
                                          "null_value": "nothing"}}},
    }, docs)
    yield index, docs
    es.indices.delete(index=index, ignore_unavailable=True)


def w_value(src):
    """The indexed value of a document, as the mapping makes it (null_value, ignore_above)."""
    if "w" not in src:
        return None
    v = "nothing" if src["w"] is None else src["w"]
    return None if len(v) > 25 else v


def lev(a, b):
    d = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, cb in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (ca != cb))
    return d[len(b)]


W_QUERIES = [
    ({"term": {"w": "info"}}, lambda v: v == "info"),
    ({"term": {"w": "INFO"}}, lambda v: v == "INFO"),
    ({"term": {"w": {"value": "warn-7", "case_insensitive": True}}}, lambda v: v.lower() == "warn-7"),
    ({"match": {"w": "error: disk"}}, lambda v: v == "error: disk"),
    ({"terms": {"w": ["info", "warn-42"]}}, lambda v: v in ("info", "warn-42")),
    ({"prefix": {"w": "disk"}}, lambda v: v.startswith("disk")),
    ({"wildcard": {"w": "*disk*"}}, lambda v: fnmatch.fnmatchcase(v, "*disk*")),
    ({"wildcard": {"w": "warn-?"}}, lambda v: fnmatch.fnmatchcase(v, "warn-?")),
    ({"wildcard": {"w": {"value": "*DISK*", "case_insensitive": True}}},
     lambda v: "disk" in v.lower()),
    ({"regexp": {"w": "[a-z]+-[0-9]+"}}, lambda v: re.fullmatch("[a-z]+-[0-9]+", v) is not None),
    ({"range": {"w": {"gte": "a", "lt": "f"}}}, lambda v: "a" <= v < "f"),
    ({"fuzzy": {"w": {"value": "infp", "fuzziness": 1}}}, lambda v: lev("infp", v) <= 1),
    ({"term": {"w": "nothing"}}, lambda v: v == "nothing"),
]


@pytest.mark.parametrize("query,pred", W_QUERIES, ids=lambda q: str(q))
def test_wildcard_queries_match_the_raw_value_with_constant_scores(es, w_index, query, pred):
    index, docs = w_index
    resp = es.search(index=index, query=query, size=50)
    got = sorted(h["_id"] for h in resp["hits"]["hits"])
    expected = sorted(i for i, s in docs if w_value(s) is not None and pred(w_value(s)))
    assert got == expected
    assert all(h["_score"] == 1.0 for h in resp["hits"]["hits"])


def test_wildcard_aggregations_and_sort_read_its_values(es, w_index):
    index, docs = w_index
    resp = es.search(index=index, size=50, aggs={"w": {"terms": {"field": "w", "size": 20}}},
                     sort=[{"w": "asc"}])
    counts = {}
    for _, s in docs:
        v = w_value(s)
        if v is not None:
            counts[v] = counts.get(v, 0) + 1
    got = {b["key"]: b["doc_count"] for b in resp["aggregations"]["w"]["buckets"]}
    assert got == counts
    keys = [h["sort"][0] for h in resp["hits"]["hits"] if h["sort"][0] is not None]
    assert keys == sorted(w_value(s) for _, s in docs if w_value(s) is not None)


# --- match_only_text ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def m_index(es):
    index = "special_m"
    rng = random.Random(5)
    docs = []
    for i in range(40):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 7))]
        text = " ".join(w.upper() if rng.random() < 0.2 else w for w in words)
        docs.append((str(i), {"m": text} if i % 9 else {}))
    make_index(es, index, {
        "settings": {"number_of_shards": 2},
        "mappings": {"properties": {"m": {"type": "match_only_text"}}},
    }, docs)
    yield index, docs
    es.indices.delete(index=index, ignore_unavailable=True)


def phrase_hits(docs, words, slop=0, prefix=False):
    out = set()
    for i, s in docs:
        toks = tokens(s.get("m", ""))
        per_term = []
        for k, w in enumerate(words):
            last = prefix and k == len(words) - 1
            per_term.append([p - k for p, t in enumerate(toks) if (t.startswith(w) if last else t == w)])
        if all(per_term) and any(max(c) - min(c) <= slop for c in itertools.product(*per_term)):
            out.add(i)
    return out


@pytest.mark.parametrize("text,operator", [("alpha", "or"), ("alpha bravo", "or"),
                                           ("charlie DELTA echo", "or"), ("alpha bravo", "and")])
def test_match_only_text_match_scores_one_per_term(es, m_index, text, operator):
    index, docs = m_index
    resp = es.search(index=index, size=50,
                     query={"match": {"m": {"query": text, "operator": operator, "boost": 2}}})
    q = set(tokens(text))
    expected = {}
    for i, s in docs:
        held = q & set(tokens(s.get("m", "")))
        if held and (operator == "or" or held == q):
            expected[i] = 2.0 * len(held)
    got = {h["_id"]: h["_score"] for h in resp["hits"]["hits"]}
    assert got == pytest.approx(expected)


@pytest.mark.parametrize("words,slop,prefix", [(["alpha", "bravo"], 0, False),
                                               (["bravo", "alpha"], 0, False),
                                               (["alpha", "charlie"], 1, False),
                                               (["delta", "alpha"], 2, False),
                                               (["alpha", "bravo", "charlie"], 0, False),
                                               (["echo", "fox"], 0, True)])
def test_match_only_text_phrases_are_confirmed_from_source(es, m_index, words, slop, prefix):
    index, docs = m_index
    kind = "match_phrase_prefix" if prefix else "match_phrase"
    resp = es.search(index=index, size=50,
                     query={kind: {"m": {"query": " ".join(words), "slop": slop}}})
    got = {h["_id"]: h["_score"] for h in resp["hits"]["hits"]}
    expected = phrase_hits(docs, words, slop, prefix)
    assert set(got) == expected
    assert all(s == 1.0 for s in got.values())


def test_match_only_text_term_exists_highlight_and_no_aggregations(es, m_index):
    index, docs = m_index
    hits = es.search(index=index, size=50, query={"term": {"m": "alpha"}})["hits"]["hits"]
    assert sorted(h["_id"] for h in hits) == sorted(i for i, s in docs if "alpha" in tokens(s.get("m", "")))
    assert {h["_score"] for h in hits} <= {1.0}
    hits = es.search(index=index, size=50, query={"exists": {"field": "m"}})["hits"]["hits"]
    assert sorted(h["_id"] for h in hits) == sorted(i for i, s in docs if "m" in s)
    resp = es.search(index=index, size=50, query={"match": {"m": "bravo"}},
                     highlight={"fields": {"m": {}}})
    assert resp["hits"]["hits"]
    for h in resp["hits"]["hits"]:
        assert "<em>bravo</em>" in h["highlight"]["m"][0].lower()
    for call in (lambda: es.search(index=index, aggs={"m": {"terms": {"field": "m"}}}),
                 lambda: es.search(index=index, sort=[{"m": "asc"}])):
        status, body = error_of(call)
        assert status == 400
        assert root_cause(body) == {
            "type": "illegal_argument_exception",
            "reason": "match_only_text fields do not support sorting and aggregations",
        }


def test_match_only_text_values_reach_scripts_from_source(es, m_index):
    """ES lets scripts read a match_only_text field (its values fetched from `_source`)."""
    index, docs = m_index
    resp = es.search(index=index, size=50, query={"match_all": {}}, script_fields={
        "s": {"script": "doc['m'].size() == 0 ? '' : doc['m'].value"}})
    got = {h["_id"]: h["fields"]["s"] for h in resp["hits"]["hits"]}
    assert got == {i: [s.get("m", "")] for i, s in docs}


def test_constant_keyword_in_multi_match_and_query_string(es, ck_index):
    index, docs = ck_index
    everyone = sorted(i for i, _ in docs)
    for query, matches in (
        ({"multi_match": {"query": CK_VALUE, "fields": ["c", "n"], "lenient": True}}, True),
        ({"multi_match": {"query": "other", "fields": ["c"]}}, False),
        ({"query_string": {"query": "c:\"%s\"" % CK_VALUE}}, True),
        ({"query_string": {"query": "c:other"}}, False),
    ):
        hits = es.search(index=index, query=query, size=50)["hits"]["hits"]
        assert sorted(h["_id"] for h in hits) == (everyone if matches else []), query
        assert {h["_score"] for h in hits} <= {1.0}


def test_constant_keyword_terms_lookup(es, ck_index):
    index, docs = ck_index
    make_index(es, "special_ck_lookup", {}, [("a", {"vals": ["x", CK_VALUE]}), ("b", {"vals": ["x"]})])
    for doc_id, matches in (("a", True), ("b", False)):
        hits = es.search(index=index, size=50, query={"terms": {"c": {
            "index": "special_ck_lookup", "id": doc_id, "path": "vals"}}})["hits"]["hits"]
        assert sorted(h["_id"] for h in hits) == (sorted(i for i, _ in docs) if matches else [])
    es.indices.delete(index="special_ck_lookup")

"""`search_as_you_type` fields and the `shingle` token filter.

Every expected hit set is computed here from the documents the test indexes: the standard
analyzer on these ASCII texts is "lowercase, split on non-alphanumerics", and each query's
semantics (as Elasticsearch 8 defines it for the root field and its `._2gram`, `._3gram` and
`._index_prefix` subfields) is evaluated over those token lists.
"""

import random
import re

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "sayt"
WORDS = ["quick", "brown", "fox", "jumps", "over", "lazy", "dog", "quill", "brine", "foxglove", "jumper", "lava"]


def tokens(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def make_docs():
    rng = random.Random(11)
    docs = [
        "The quick brown fox jumps over the lazy dog",
        "Quick brown foxes",
        "brown quick fox",
        "lazy dog, quick fox",
        "internationalizations matter",
        "Fox",
    ]
    for _ in range(34):
        docs.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))))
    return [(str(i), {"title": t}) for i, t in enumerate(docs)]


DOCS = make_docs()
TOKS = {i: tokens(d["title"]) for i, d in DOCS}


@pytest.fixture(scope="module")
def sayt(es):
    body = {"mappings": {"properties": {"title": {"type": "search_as_you_type"}}}}
    make_index(es, INDEX, body, DOCS)
    yield INDEX
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def ids(resp):
    return {h["_id"] for h in resp["hits"]["hits"]}


def search(es, query, **kw):
    return es.search(index=INDEX, query=query, size=100, **kw).body


def shingles(toks, n):
    return [" ".join(toks[i:i + n]) for i in range(len(toks) - n + 1)]


def bool_prefix_match(doc_terms, query_terms, operator):
    """A bool of term clauses, the last one a prefix (ES's match_bool_prefix on one field)."""
    if not query_terms:
        return False
    *full, last = query_terms
    checks = [t in doc_terms for t in full] + [any(d.startswith(last) for d in doc_terms)]
    return all(checks) if operator == "and" else any(checks)


def expected_bool_prefix(q, operator="or"):
    """multi_match bool_prefix over [title, title._2gram, title._3gram]: any field matches."""
    qt = tokens(q)
    out = set()
    for i, dt in TOKS.items():
        if any(bool_prefix_match(shingles(dt, n) if n > 1 else dt, shingles(qt, n) if n > 1 else qt, operator)
               for n in (1, 2, 3)):
            out.add(i)
    return out


def expected_phrase_prefix(q):
    qt = tokens(q)
    out = set()
    for i, dt in TOKS.items():
        for s in range(len(dt) - len(qt) + 1):
            if dt[s:s + len(qt) - 1] == qt[:-1] and dt[s + len(qt) - 1].startswith(qt[-1]):
                out.add(i)
    return out


TYPED = ["quick brown fox", "lazy dog", "brown f", "fox ju", "internationalizations"]


def prefixes_of(text):
    return [text[:k] for k in range(1, len(text) + 1) if text[:k].strip()]


@pytest.mark.parametrize("text", TYPED)
def test_bool_prefix_multi_match_as_you_type(es, sayt, text):
    fields = ["title", "title._2gram", "title._3gram"]
    for q in prefixes_of(text):
        for op in ("or", "and"):
            resp = search(es, {"multi_match": {"query": q, "type": "bool_prefix", "fields": fields, "operator": op}})
            assert ids(resp) == expected_bool_prefix(q, op), (q, op)


@pytest.mark.parametrize("text", TYPED)
def test_match_phrase_prefix_as_you_type(es, sayt, text):
    for q in prefixes_of(text):
        resp = search(es, {"match_phrase_prefix": {"title": q}})
        assert ids(resp) == expected_phrase_prefix(q), q


@pytest.mark.parametrize("text", TYPED)
def test_match_bool_prefix_on_root(es, sayt, text):
    for q in prefixes_of(text):
        resp = search(es, {"match_bool_prefix": {"title": q}})
        want = {i for i, dt in TOKS.items() if bool_prefix_match(dt, tokens(q), "or")}
        assert ids(resp) == want, q


@pytest.mark.parametrize("value", ["q", "qu", "fox", "foxg", "internationalization", "internationalizations"])
def test_prefix_on_root(es, sayt, value):
    # Up to 20 characters this is one term of ._index_prefix; longer falls back to the root.
    resp = search(es, {"prefix": {"title": value}})
    assert ids(resp) == {i for i, dt in TOKS.items() if any(t.startswith(value) for t in dt)}
    assert all(h["_score"] == 1.0 for h in resp["hits"]["hits"])


def test_match_and_term_on_root_and_shingle_subfields(es, sayt):
    resp = search(es, {"term": {"title": "fox"}})
    assert ids(resp) == {i for i, dt in TOKS.items() if "fox" in dt}
    resp = search(es, {"match": {"title": {"query": "lazy dog", "operator": "and"}}})
    assert ids(resp) == {i for i, dt in TOKS.items() if "lazy" in dt and "dog" in dt}
    resp = search(es, {"match": {"title._2gram": "brown fox"}})
    assert ids(resp) == {i for i, dt in TOKS.items() if "brown fox" in shingles(dt, 2)}
    resp = search(es, {"match": {"title._3gram": "quick brown fox"}})
    assert ids(resp) == {i for i, dt in TOKS.items() if "quick brown fox" in shingles(dt, 3)}
    # One word makes no shingle: nothing to match on the 2-gram field.
    assert ids(search(es, {"match": {"title._2gram": "fox"}})) == set()


def test_highlight_on_root(es, sayt):
    resp = search(es, {"match": {"title": "fox"}}, highlight={"fields": {"title": {}}})
    assert ids(resp) == {i for i, dt in TOKS.items() if "fox" in dt}
    for h in resp["hits"]["hits"]:
        frag = h["highlight"]["title"][0]
        assert "<em>" in frag
        assert {w.lower() for w in re.findall(r"<em>(.*?)</em>", frag)} == {"fox"}


def test_mapping_shows_only_the_root(es, sayt):
    m = es.indices.get_mapping(index=INDEX).body
    assert m[INDEX]["mappings"]["properties"] == {"title": {"type": "search_as_you_type"}}


def test_mapping_options_and_validation(es):
    body = {"mappings": {"properties": {"t": {
        "type": "search_as_you_type", "max_shingle_size": 4, "analyzer": "simple",
        "search_analyzer": "standard", "index_options": "offsets", "norms": False,
        "store": True, "similarity": "BM25", "term_vector": "with_positions_offsets"}}}}
    docs = [("1", {"t": "Alpha beta-gamma delta"}), ("2", {"t": "beta delta alpha gamma"})]
    make_index(es, "sayt4", body, docs)
    try:
        resp = es.search(index="sayt4", query={"match": {"t._4gram": "alpha beta gamma delta"}}).body
        assert ids(resp) == {"1"}
        resp = es.search(index="sayt4", query={"match_phrase_prefix": {"t": "beta gam"}}).body
        assert ids(resp) == {"1"}
        resp = es.search(index="sayt4", query={"match_phrase_prefix": {"t": "alpha beta gamma del"}}).body
        assert ids(resp) == {"1"}
    finally:
        es.indices.delete(index="sayt4")
    for bad in (1, 5):
        with pytest.raises(BadRequestError) as e:
            es.indices.create(index="sayt_bad", mappings={"properties": {"t": {"type": "search_as_you_type", "max_shingle_size": bad}}})
        assert e.value.error == "mapper_parsing_exception"
        assert f"[max_shingle_size] must be at least [2] and at most [4], got [{bad}]" in e.value.info["error"]["reason"]


def test_analyze_shingle_filter(es):
    text = "please divide this sentence"
    resp = es.indices.analyze(tokenizer="whitespace", filter=["shingle"], text=text).body
    words = text.split()
    starts = [text.index(w) for w in words]
    want = []
    for p, w in enumerate(words):
        want.append({"token": w, "start_offset": starts[p], "end_offset": starts[p] + len(w), "type": "word", "position": p})
        if p + 1 < len(words):
            want.append({"token": w + " " + words[p + 1], "start_offset": starts[p],
                         "end_offset": starts[p + 1] + len(words[p + 1]), "type": "shingle",
                         "position": p, "positionLength": 2})
    assert resp["tokens"] == want

    f = {"type": "shingle", "min_shingle_size": 2, "max_shingle_size": 3, "output_unigrams": False}
    resp = es.indices.analyze(tokenizer="whitespace", filter=[f], text="quick brown fox jumps").body
    assert [t["token"] for t in resp["tokens"]] == ["quick brown", "quick brown fox", "brown fox", "brown fox jumps", "fox jumps"]

    with pytest.raises(BadRequestError) as e:
        es.indices.analyze(tokenizer="whitespace", filter=[{"type": "shingle", "max_shingle_size": 5}], text="a b")
    assert e.value.error == "illegal_argument_exception"
    assert "must be less than or equal to: [3] but was [4]" in e.value.info["error"]["reason"]


def test_shingle_in_custom_analyzer_and_max_shingle_diff(es):
    settings = {"index": {"max_shingle_diff": 5}, "analysis": {
        "filter": {"sh": {"type": "shingle", "min_shingle_size": 2, "max_shingle_size": 5}},
        "analyzer": {"shingled": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", "sh"]}}}}
    body = {"settings": settings, "mappings": {"properties": {"t": {"type": "text", "analyzer": "shingled"}}}}
    docs = [("1", {"t": "One two three four five"}), ("2", {"t": "two one"})]
    make_index(es, "shingled", body, docs)
    try:
        resp = es.indices.analyze(index="shingled", analyzer="shingled", text="a b c").body
        assert [t["token"] for t in resp["tokens"]] == ["a", "a b", "a b c", "b", "b c", "c"]
        resp = es.search(index="shingled", query={"term": {"t": "two three four"}}).body
        assert ids(resp) == {"1"}
    finally:
        es.indices.delete(index="shingled")
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index="shingled_bad", settings={"analysis": {
            "filter": {"sh": {"type": "shingle", "max_shingle_size": 5}}}})
    assert e.value.error == "illegal_argument_exception"


def padded_shingles(toks, size=3):
    """What ._index_prefix holds before cutting: the `size`-token shingle at each token,
    padded with empty tokens after the last one."""
    return [" ".join((toks[i:i + size] + [""] * size)[:size]) for i in range(len(toks))]


@pytest.mark.parametrize("field,value", [
    ("title._2gram", "quick b"), ("title._2gram", "qu"), ("title", "lazy d"), ("title._3gram", "brown fox j"),
])
def test_prefix_read_from_index_prefix(es, sayt, field, value):
    # ES delegates a prefix (<= 20 chars) on the root or a shingle field to ._index_prefix.
    resp = search(es, {"prefix": {field: value}})
    assert ids(resp) == {i for i, dt in TOKS.items() if any(s.startswith(value) for s in padded_shingles(dt))}


def test_field_patterns_skip_subfields(es, sayt):
    for q in ({"query_string": {"query": "qu"}}, {"multi_match": {"query": "qu", "fields": ["title*"]}}):
        assert ids(search(es, q)) == {i for i, dt in TOKS.items() if "qu" in dt}


def test_no_fielddata_for_sorts_and_aggregations(es, sayt):
    want = "Fielddata is not supported on field [title] of type [search_as_you_type]"
    for kw in ({"sort": [{"title": "asc"}]}, {"aggs": {"a": {"terms": {"field": "title"}}}}):
        with pytest.raises(BadRequestError) as e:
            es.search(index=INDEX, **kw)
        assert want in str(e.value.info)

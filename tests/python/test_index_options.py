"""`index_options` on text, search_as_you_type and keyword fields, as Elasticsearch 8 honours it.

The oracle is Lucene's BM25 (ES 8's default `LegacyBM25Similarity`) written from its formulas,
independently of Lode:

    score = (k1 + 1) * idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    idf   = ln(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5))

- `docs`: no frequencies, so tf = 1, and Lucene's `sumTotalTermFreq` of such a field is its
  `sumDocFreq` (each document counts each of its distinct terms once): avgdl is the average
  number of distinct terms. A text field still has norms, so dl is its token count.
- `freqs`, `positions`, `offsets`: tf is the term's count, avgdl the average token count.
- keywords have no norms (dl = 1); `freqs` counts a value repeated in one document's array.

Phrases need positions: ES's `TextFieldType#checkForPositions` fails the shard with
`query_shard_exception` "failed to create query: field:[f] was indexed without position data;
cannot run PhraseQuery" (an `illegal_state_exception` inside), a 400 grouped as
`search_phase_execution_exception`. A one-term phrase is a term query and needs none.
"""

import math
import os
import random
import re

import pytest

from conftest import LodeServer, client, error_of, lode_binary, make_index
from oracle import norm_length

K1, B = 1.2, 0.75
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
TAGS = ["red", "green", "blue", "amber"]
TEXT_OPTIONS = {"t_docs": "docs", "t_freqs": "freqs", "t_pos": "positions", "t_offs": "offsets"}
KEYWORD_OPTIONS = {"k_docs": "docs", "k_freqs": "freqs"}


# --- the oracle ---------------------------------------------------------------------------

def analyze(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def field_values(source, field):
    """Tokens of a text field, the values (repeats kept) of a keyword field."""
    if field in TEXT_OPTIONS:
        return analyze(source[field]) if field in source else []
    return list(source.get(field, []))


def option_of(field):
    return {**TEXT_OPTIONS, **KEYWORD_OPTIONS}[field]


def bm25(sources, field, term):
    """{id: score} of one term on one field over the given sources."""
    with_field = {i: field_values(s, field) for i, s in sources.items()}
    with_field = {i: v for i, v in with_field.items() if v}
    doc_count = len(with_field)
    freqs = option_of(field) != "docs"
    if freqs:
        sum_ttf = sum(len(v) for v in with_field.values())
    else:
        sum_ttf = sum(len(set(v)) for v in with_field.values())
    avgdl = sum_ttf / doc_count
    df = sum(1 for v in with_field.values() if term in v)
    idf = math.log(1 + (doc_count - df + 0.5) / (df + 0.5))
    out = {}
    for i, v in with_field.items():
        if term not in v:
            continue
        tf = v.count(term) if freqs else 1
        dl = norm_length(len(v)) if field in TEXT_OPTIONS else 1
        out[i] = (K1 + 1) * idf * tf / (tf + K1 * (1 - B + B * dl / avgdl))
    return out


def phrase_matches(sources, field, words):
    hits = set()
    for i, s in sources.items():
        v = field_values(s, field)
        if any(v[j:j + len(words)] == words for j in range(len(v) - len(words) + 1)):
            hits.add(i)
    return hits


# --- the corpus ---------------------------------------------------------------------------

MAPPING = {
    "settings": {"number_of_shards": 1},
    "mappings": {"properties": {
        **{f: {"type": "text", "index_options": o} for f, o in TEXT_OPTIONS.items()},
        **{f: {"type": "keyword", "index_options": o} for f, o in KEYWORD_OPTIONS.items()},
        "s_docs": {"type": "search_as_you_type", "index_options": "docs"},
    }},
}


def make_source(rng):
    s = {}
    if rng.random() < 0.9:
        # Repeated words, so that tf = 1 and real frequencies give different scores and orders.
        words = []
        for _ in range(rng.randint(1, 5)):
            words += [rng.choice(WORDS)] * rng.randint(1, 4)
        rng.shuffle(words)
        for field in list(TEXT_OPTIONS) + ["s_docs"]:
            s[field] = " ".join(words)
    if rng.random() < 0.8:
        tags = [rng.choice(TAGS) for _ in range(rng.randint(1, 4))]
        for field in KEYWORD_OPTIONS:
            s[field] = tags
    return s


def load(es, index, seed=7, batches=3):
    rng = random.Random(seed)
    make_index(es, index, MAPPING, [])
    sources = {}
    for batch in range(batches):
        ops = []
        for j in range(25):
            i = str(batch * 25 + j)
            sources[i] = make_source(rng)
            ops += [{"index": {"_index": index, "_id": i}}, sources[i]]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    return sources


@pytest.fixture(scope="module")
def corpus(es):
    index = "index_options"
    sources = load(es, index)
    yield index, sources
    es.indices.delete(index=index, ignore_unavailable=True)


def scores_of(es, index, query, size=200):
    resp = es.search(index=index, query=query, size=size)
    return {h["_id"]: h["_score"] for h in resp["hits"]["hits"]}


def check_scores(es, index, sources):
    for field in list(TEXT_OPTIONS) + list(KEYWORD_OPTIONS):
        terms = WORDS if field in TEXT_OPTIONS else TAGS
        for term in terms:
            expected = bm25(sources, field, term)
            got = scores_of(es, index, {"match": {field: term}})
            assert set(got) == set(expected), (field, term)
            for i, s in got.items():
                assert s == pytest.approx(expected[i], rel=1e-5), (field, term, i)


def phrase_error(es, index, query):
    status, body = error_of(lambda: es.search(index=index, query=query))
    return status, body["error"]


def assert_no_positions(status, error, field):
    why = "field:[%s] was indexed without position data; cannot run PhraseQuery" % field
    assert status == 400
    assert error["type"] == "search_phase_execution_exception"
    assert error["reason"] == "all shards failed"
    assert error["root_cause"][0]["type"] == "query_shard_exception"
    assert error["root_cause"][0]["reason"] == "failed to create query: " + why
    reason = error["failed_shards"][0]["reason"]
    assert reason["type"] == "query_shard_exception"
    assert reason["reason"] == "failed to create query: " + why
    assert reason["caused_by"] == {"type": "illegal_state_exception", "reason": why}


# --- scoring ------------------------------------------------------------------------------

def test_scores_follow_each_fields_index_options(es, corpus):
    index, sources = corpus
    check_scores(es, index, sources)


def test_docs_and_freqs_order_hits_differently(es, corpus):
    """The corpus is built so that tf = 1 changes the ranking: the oracle says so too."""
    index, sources = corpus
    differs = False
    for term in WORDS:
        by_docs = sorted(bm25(sources, "t_docs", term).items(), key=lambda kv: (-kv[1], kv[0]))
        by_freqs = sorted(bm25(sources, "t_freqs", term).items(), key=lambda kv: (-kv[1], kv[0]))
        differs |= [i for i, _ in by_docs] != [i for i, _ in by_freqs]
    assert differs
    # All docs-field scores of one term with equal lengths are equal whatever the repeats.
    got = scores_of(es, index, {"match": {"t_docs": "alpha"}})
    expected = bm25(sources, "t_docs", "alpha")
    assert got == pytest.approx(expected, rel=1e-5)


# --- phrases ------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["t_docs", "t_freqs"])
def test_phrases_need_positions(es, corpus, field):
    index, _ = corpus
    for query in (
        {"match_phrase": {field: "alpha bravo"}},
        {"match_phrase": {field: {"query": "alpha bravo", "slop": 3}}},
        {"match_phrase_prefix": {field: "alpha br"}},
        {"multi_match": {"query": "alpha bravo", "fields": [field], "type": "phrase"}},
        {"multi_match": {"query": "alpha br", "fields": [field], "type": "phrase_prefix"}},
        {"query_string": {"query": "\"alpha bravo\"", "default_field": field}},
        {"simple_query_string": {"query": "\"alpha bravo\"", "fields": [field]}},
        {"bool": {"should": [{"match": {field: "alpha"}},
                             {"match_phrase": {field: "alpha bravo"}}]}},
    ):
        status, error = phrase_error(es, index, query)
        assert_no_positions(status, error, field)


@pytest.mark.parametrize("field", ["t_docs", "t_freqs"])
def test_one_term_phrases_and_lenient_phrases_do_not_fail(es, corpus, field):
    index, sources = corpus
    # One term is a term query: scored as `match`.
    for query in ({"match_phrase": {field: "alpha"}}, {"match_phrase_prefix": {field: "alp"}}):
        got = scores_of(es, index, query)
        assert set(got) == {i for i, s in sources.items()
                            if any(t.startswith("alp") for t in field_values(s, field))}
    assert scores_of(es, index, {"match_phrase": {field: "alpha"}}) == pytest.approx(
        bm25(sources, field, "alpha"), rel=1e-5)
    # A lenient query matches nothing where it would fail (ES's MatchQueryParser).
    lenient = {"multi_match": {"query": "alpha bravo", "fields": [field], "type": "phrase",
                               "lenient": True}}
    assert scores_of(es, index, lenient) == {}
    # The all-fields default is lenient: the fields with positions still answer.
    expected = phrase_matches(sources, "t_pos", ["alpha", "bravo"])
    got = es.search(index=index, query={"query_string": {"query": "\"alpha bravo\""}}, size=200)
    assert {h["_id"] for h in got["hits"]["hits"]} == expected


@pytest.mark.parametrize("field", ["t_pos", "t_offs"])
def test_phrases_on_fields_with_positions(es, corpus, field):
    index, sources = corpus
    for a in WORDS[:4]:
        for b in WORDS[:4]:
            got = scores_of(es, index, {"match_phrase": {field: "%s %s" % (a, b)}})
            assert set(got) == phrase_matches(sources, field, [a, b]), (a, b)


def test_search_as_you_type_without_positions(es, corpus):
    index, sources = corpus
    status, error = phrase_error(es, index, {"match_phrase": {"s_docs": "alpha bravo"}})
    assert_no_positions(status, error, "s_docs")
    status, error = phrase_error(es, index, {"match_phrase_prefix": {"s_docs": "alpha br"}})
    assert_no_positions(status, error, "s_docs")
    # One position: answered (from the prefix subfield).
    got = es.search(index=index, query={"match_phrase_prefix": {"s_docs": "alp"}}, size=200)
    assert {h["_id"] for h in got["hits"]["hits"]} == {
        i for i, s in sources.items() if "alpha" in analyze(s.get("s_docs", ""))}


# --- mappings -----------------------------------------------------------------------------

def test_keyword_positions_and_other_refusals(es):
    cases = [
        ({"type": "keyword", "index_options": "positions"},
         "Failed to parse mapping: Unknown value [positions] for field [index_options] - "
         "accepted values are [docs, freqs]"),
        ({"type": "keyword", "index_options": "offsets"},
         "Failed to parse mapping: Unknown value [offsets] for field [index_options] - "
         "accepted values are [docs, freqs]"),
        ({"type": "text", "index_options": "all"},
         "Failed to parse mapping: Unknown value [all] for field [index_options] - "
         "accepted values are [positions, docs, freqs, offsets]"),
        ({"type": "text", "index_options": "freqs", "index_phrases": True},
         "Failed to parse mapping: Cannot set index_phrases on field [f] if positions are not enabled"),
        ({"type": "text", "index_options": "docs", "position_increment_gap": 10},
         "Failed to parse mapping: Cannot set position_increment_gap on field [f] without "
         "positions enabled"),
    ]
    for field, reason in cases:
        status, body = error_of(lambda: es.indices.create(
            index="index_options_refused", mappings={"properties": {"f": field}}))
        assert status == 400, field
        assert body["error"]["type"] == "mapper_parsing_exception", field
        assert body["error"]["reason"] == reason, field
    assert not es.indices.exists(index="index_options_refused")


def test_get_mapping_round_trip_and_updates(es):
    index = "index_options_updates"
    props = {"t": {"type": "text"}, "d": {"type": "text", "index_options": "docs"},
             "k": {"type": "keyword", "index_options": "freqs"}, "k2": {"type": "keyword"}}
    make_index(es, index, {"mappings": {"properties": props}}, [])
    try:
        got = es.indices.get_mapping(index=index)[index]["mappings"]["properties"]
        assert got == props
        conflicts = [
            ("t", {"type": "text", "index_options": "docs"}, "positions", "docs"),
            ("d", {"type": "text", "index_options": "positions"}, "docs", "positions"),
            ("k", {"type": "keyword", "index_options": "docs"}, "freqs", "docs"),
            ("k2", {"type": "keyword", "index_options": "freqs"}, "docs", "freqs"),
        ]
        for name, field, old, new in conflicts:
            status, body = error_of(lambda: es.indices.put_mapping(
                index=index, properties={name: field}))
            assert status == 400
            assert body["error"]["type"] == "illegal_argument_exception"
            assert body["error"]["reason"] == (
                "Mapper for [%s] conflicts with existing mapper:\n\t"
                "Cannot update parameter [index_options] from [%s] to [%s]" % (name, old, new))
        # The same value, or the type's default stated, is no change.
        for name, field in (("d", {"type": "text", "index_options": "docs"}),
                            ("t", {"type": "text", "index_options": "positions"}),
                            ("k2", {"type": "keyword", "index_options": "docs"})):
            assert es.indices.put_mapping(index=index, properties={name: field})["acknowledged"]
        got = es.indices.get_mapping(index=index)[index]["mappings"]["properties"]
        assert got["d"] == {"type": "text", "index_options": "docs"}
        assert got["k"] == {"type": "keyword", "index_options": "freqs"}
    finally:
        es.indices.delete(index=index, ignore_unavailable=True)


# --- after a force merge and a restart ----------------------------------------------------

def test_scores_and_errors_after_force_merge(es):
    index = "index_options_merged"
    sources = load(es, index, seed=11, batches=4)
    try:
        es.indices.forcemerge(index=index, max_num_segments=1)
        es.indices.refresh(index=index)
        check_scores(es, index, sources)
        status, error = phrase_error(es, index, {"match_phrase": {"t_docs": "alpha bravo"}})
        assert_no_positions(status, error, "t_docs")
    finally:
        es.indices.delete(index=index, ignore_unavailable=True)


def test_scores_and_errors_after_a_restart(tmp_path):
    base = str(tmp_path)
    server = LodeServer(lode_binary(), base)
    server.start()
    try:
        es = client(server.url)
        index = "index_options_restart"
        sources = load(es, index, seed=13, batches=2)
        es.indices.flush(index=index)
        data_dir = server.data_dir
        server.stop()
        os.symlink(data_dir, os.path.join(base, "data-%d" % (server.generation + 1)))
        server.start()
        es = client(server.url)
        es.cluster.health(index=index, wait_for_status="yellow", timeout="30s")
        check_scores(es, index, sources)
        status, error = phrase_error(es, index, {"match_phrase": {"t_freqs": "alpha bravo"}})
        assert_no_positions(status, error, "t_freqs")
        got = scores_of(es, index, {"match_phrase": {"t_pos": "alpha bravo"}})
        assert set(got) == phrase_matches(sources, "t_pos", ["alpha", "bravo"])
    finally:
        server.stop()

"""Highlighting (unified and plain) checked against an oracle that tokenizes the generated
sentences as the `standard` analyzer does for plain ASCII words: every occurrence of a
queried word is tagged, nothing else; a phrase occurrence is one tagged span (unified);
fragments are pieces of the field's text, within `fragment_size` (plus the word it may
finish), at most `number_of_fragments`, in text order unless `order: score`.
"""

import random
import re

import pytest
from elasticsearch import ApiError

INDEX = "highlights"
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango").split()
N = 60


def _sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randrange(4, 12))]
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice([".", "!", "?"])


def _docs():
    rng = random.Random(11)
    docs = {}
    for i in range(N):
        docs[str(i)] = {
            "title": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 6))),
            "body": " ".join(_sentence(rng) for _ in range(rng.randrange(1, 8))),
            "tags": [rng.choice(WORDS) for _ in range(rng.randrange(1, 3))],
            "notes": [_sentence(rng) for _ in range(rng.randrange(1, 3))],
        }
    return docs


@pytest.fixture(scope="module")
def docs(es):
    docs = _docs()
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {
        "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
        "body": {"type": "text"}, "tags": {"type": "keyword"}, "notes": {"type": "text"}}})
    ops = []
    for i, d in docs.items():
        ops += [{"index": {"_index": INDEX, "_id": i}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, body):
    return es.perform_request("POST", f"/{INDEX}/_search", body=body,
                              headers={"content-type": "application/json",
                                       "accept": "application/json"}).body


def tag_words(text, words, pre="<em>", post="</em>"):
    return re.sub(r"[A-Za-z]+", lambda m: pre + m.group(0) + post
                  if m.group(0).lower() in words else m.group(0), text)


def tag_phrase(text, phrase):
    # Whole-word, case-insensitive occurrences of the phrase; punctuation between the words
    # is no position gap for the standard tokenizer ("quebec! Papa" is "quebec papa").
    return re.sub(r"\b" + r"[^A-Za-z]+".join(phrase) + r"\b", lambda m: "<em>" + m.group(0) + "</em>",
                  text, flags=re.I)


def has_word(text, words):
    return any(w.lower() in words for w in re.findall(r"[A-Za-z]+", text))


def untag(s, pre="<em>", post="</em>"):
    return s.replace(pre, "").replace(post, "")


@pytest.mark.parametrize("words", [{"alpha"}, {"bravo", "kilo"}, {"tango", "papa", "lima"}])
def test_whole_values_tag_every_queried_word(es, docs, words):
    r = search(es, {"query": {"match": {"body": " ".join(words)}}, "size": N,
                    "highlight": {"fields": {"body": {"number_of_fragments": 0},
                                             "notes": {"number_of_fragments": 0}}}})
    want = {i for i, d in docs.items() if has_word(d["body"], words)}
    assert {h["_id"] for h in r["hits"]["hits"]} == want
    for h in r["hits"]["hits"]:
        d = docs[h["_id"]]
        assert h["highlight"]["body"] == [tag_words(d["body"], words)]
        # require_field_match (default true): notes are not searched, so not highlighted.
        assert "notes" not in h["highlight"]


def test_require_field_match_false_highlights_other_fields(es, docs):
    words = {"echo"}
    r = search(es, {"query": {"match": {"body": "echo"}}, "size": N,
                    "highlight": {"require_field_match": False, "number_of_fragments": 0,
                                  "fields": {"notes": {}, "title": {}}}})
    for h in r["hits"]["hits"]:
        d = docs[h["_id"]]
        want_notes = [tag_words(v, words) for v in d["notes"] if has_word(v, words)]
        assert h.get("highlight", {}).get("notes", []) == want_notes
        if has_word(d["title"], words):
            assert h["highlight"]["title"] == [tag_words(d["title"], words)]


def test_phrases_are_one_span_and_only_where_the_phrase_is(es, docs):
    # Pick a word pair that occurs in the corpus.
    pair = None
    for d in docs.values():
        w = d["body"].lower().replace(".", "").replace("!", "").replace("?", "").split()
        for a, b in zip(w, w[1:]):
            pair = (a, b)
            break
        if pair:
            break
    r = search(es, {"query": {"match_phrase": {"body": " ".join(pair)}}, "size": N,
                    "highlight": {"fields": {"body": {"number_of_fragments": 0}}}})
    assert r["hits"]["hits"]
    for h in r["hits"]["hits"]:
        assert h["highlight"]["body"] == [tag_phrase(docs[h["_id"]]["body"], pair)]


def test_keyword_values_are_highlighted_whole(es, docs):
    r = search(es, {"query": {"term": {"tags": "golf"}}, "size": N,
                    "highlight": {"fields": {"tags": {}}}})
    want = {i for i, d in docs.items() if "golf" in d["tags"]}
    assert {h["_id"] for h in r["hits"]["hits"]} == want
    for h in r["hits"]["hits"]:
        assert h["highlight"]["tags"] == ["<em>golf</em>"]


@pytest.mark.parametrize("kind", ["unified", "plain"])
@pytest.mark.parametrize("size,count", [(20, 2), (40, 3), (100, 5)])
def test_fragments(es, docs, kind, size, count):
    words = {"charlie", "mike"}
    r = search(es, {"query": {"match": {"body": "charlie mike"}}, "size": N,
                    "highlight": {"type": kind, "fields": {"body": {
                        "fragment_size": size, "number_of_fragments": count}}}})
    assert r["hits"]["hits"]
    longest = max(len(w) for w in WORDS) + 2
    for h in r["hits"]["hits"]:
        body = docs[h["_id"]]["body"]
        frags = h["highlight"]["body"]
        assert 1 <= len(frags) <= count
        positions = []
        for f in frags:
            plain = untag(f)
            assert plain in body and plain == plain.strip()
            assert "<em>" in f
            # Tags sit exactly around queried words.
            assert tag_words(plain, words) == f
            assert len(plain) <= size + 2 * longest + 2
            positions.append(body.index(plain))
        if kind == "unified":
            assert positions == sorted(positions)


def test_order_by_score_puts_the_densest_fragment_first(es, docs):
    r = search(es, {"query": {"match": {"body": "alpha"}}, "size": N,
                    "highlight": {"order": "score", "fields": {"body": {
                        "fragment_size": 30, "number_of_fragments": 10}}}})
    for h in r["hits"]["hits"]:
        counts = [f.count("<em>") for f in h["highlight"]["body"]]
        assert counts[0] == max(counts)


def test_tags_encoder_and_no_match_size(es, docs):
    r = search(es, {"query": {"match": {"title": "india"}}, "size": N,
                    "highlight": {"pre_tags": ["<b>"], "post_tags": ["</b>"],
                                  "fields": {"title": {"number_of_fragments": 0},
                                             "body": {"no_match_size": 15}}}})
    for h in r["hits"]["hits"]:
        d = docs[h["_id"]]
        assert h["highlight"]["title"] == [tag_words(d["title"], {"india"}, "<b>", "</b>")]
        # body is not searched: no_match_size gives its start, cut at a word boundary.
        start = h["highlight"]["body"][0]
        assert d["body"].startswith(start) and 0 < len(start) <= 15
    r = search(es, {"query": {"match": {"title": "india"}}, "size": 1,
                    "highlight": {"tags_schema": "styled", "fields": {"title": {}}}})
    assert '<em class="hlt1">' in r["hits"]["hits"][0]["highlight"]["title"][0]


def test_highlight_query_replaces_the_search_query(es, docs):
    r = search(es, {"query": {"match": {"title": "hotel"}}, "size": N,
                    "highlight": {"fields": {"title": {
                        "number_of_fragments": 0,
                        "highlight_query": {"match": {"title": "juliet"}}}}}})
    for h in r["hits"]["hits"]:
        d = docs[h["_id"]]
        got = h.get("highlight", {}).get("title")
        if has_word(d["title"], {"juliet"}):
            assert got == [tag_words(d["title"], {"juliet"})]
        else:
            assert got is None


def test_wildcard_field_patterns_and_multi_term_queries(es, docs):
    r = search(es, {"query": {"prefix": {"body": "sier"}}, "size": N,
                    "highlight": {"fields": [{"bo*": {"number_of_fragments": 0}}]}})
    assert r["hits"]["hits"]
    for h in r["hits"]["hits"]:
        assert h["highlight"]["body"] == [tag_words(docs[h["_id"]]["body"], {"sierra"})]


@pytest.mark.parametrize("hl,kind", [
    ({"fields": {"body": {}}, "bogus": 1}, "x_content_parse_exception"),
    ({"fields": {"body": {"bogus": 1}}}, "x_content_parse_exception"),
    ({"fields": {"body": {}}, "type": "nope"}, "illegal_argument_exception"),
    ({"fields": {"body": {}}, "type": "fvh"}, "illegal_argument_exception"),
    ({"fields": {"body": {}}, "pre_tags": ["<x>"]}, "action_request_validation_exception"),
    ({"fields": {"body": {"fragment_size": "big"}}}, "x_content_parse_exception"),
    ({"fields": {"body": {}}, "order": "random"}, "illegal_argument_exception"),
    ({"fields": 5}, "x_content_parse_exception"),
    # ES's options for custom highlighters: refused, never ignored
    ({"fields": {"body": {}}, "options": {"a": 1}}, "illegal_argument_exception"),
    ({"fields": {"body": {"options": {"a": 1}}}}, "illegal_argument_exception"),
])
def test_bad_highlight_requests_are_refused(es, docs, hl, kind):
    with pytest.raises(ApiError) as ei:
        search(es, {"query": {"match": {"body": "alpha"}}, "highlight": hl})
    assert ei.value.meta.status == 400
    assert ei.value.body["error"]["type"] == kind

"""`exists` and BM25's per-field document count on keyword and text fields.

Lode answers them as Elasticsearch 7+ does: a keyword with doc values from its column, a text
field from its norms (plus the values that yielded no token, which `exists` must still find),
other fields from `_field_names`. The oracle is Elasticsearch's definition, computed here from
the documents: a field exists in a document when it has a non-null value (`""` included, a
keyword value over `ignore_above` excluded, `[]` and `[null]` excluded); Lucene's `docCount`
of a text field is the number of documents with at least one token in it, deleted ones
included until a merge drops them.
"""

import math
import random

import pytest

from conftest import make_index
from oracle import analyze, norm_length

INDEX = "exists_columns_norms"
STOP = {"the", "a", "an", "and", "of", "to", "in", "is", "it"}

MAPPING = {
    "settings": {
        "number_of_shards": 1,
        "analysis": {
            "analyzer": {
                "stopped": {"type": "stop"},
                "stripped": {"type": "custom", "tokenizer": "standard",
                             "char_filter": ["html_strip"], "filter": ["lowercase"]},
            }
        },
    },
    "mappings": {
        "properties": {
            "t": {"type": "text"},
            "ts": {"type": "text", "analyzer": "stopped"},
            "th": {"type": "text", "analyzer": "stripped"},
            "tw": {"type": "text", "analyzer": "whitespace"},
            "k": {"type": "keyword"},
            "kn": {"type": "keyword", "doc_values": False},
            "ki": {"type": "keyword", "ignore_above": 4},
            "kl": {"type": "keyword", "normalizer": "lowercase"},
        }
    },
}
FIELDS = list(MAPPING["mappings"]["properties"])
VALUES = ["", " ", "!!!", "-", "the", "the of", "fox", "The Fox", "élan", "ß", "123", "x1",
          "<b></b>", "<i>fox</i>", "quick brown fox", "longer value", "a-b", "中文"]


def random_value(rng):
    r = rng.random()
    if r < 0.08:
        return None
    if r < 0.12:
        return []
    if r < 0.15:
        return [None]
    if r < 0.3:
        return [rng.choice(VALUES) for _ in range(rng.randint(1, 3))]
    return rng.choice(VALUES)


def present_values(v):
    vals = v if isinstance(v, list) else [v]
    return [x for x in vals if x is not None]


def exists(field, source):
    if field not in source:
        return False
    vals = present_values(source[field])
    if field == "ki":
        vals = [x for x in vals if len(x) <= 4]
    return bool(vals)


def tokens(field, source):
    """The tokens a text field indexes (the oracle's analyzers; `t` only is scored)."""
    if field not in source:
        return []
    out = []
    for v in present_values(source[field]):
        out.extend(analyze(v))
    return out


def make_docs(rng, n, start=0):
    docs = []
    for i in range(start, start + n):
        src = {}
        for f in FIELDS:
            if rng.random() < 0.75:
                src[f] = random_value(rng)
        docs.append((str(i), src))
    return docs


def count(es, query):
    return es.count(index=INDEX, query=query)["count"]


def check_exists(es, live):
    for f in FIELDS:
        want = sorted(i for i, s in live.items() if exists(f, s))
        got = es.search(index=INDEX, query={"exists": {"field": f}}, size=len(live) + 10,
                        _source=False, sort=["_doc"])["hits"]["hits"]
        assert sorted(h["_id"] for h in got) == want, f
        missing = count(es, {"bool": {"must_not": {"exists": {"field": f}}}})
        assert missing == len(live) - len(want), f


@pytest.fixture(scope="module")
def loaded(es):
    rng = random.Random(20261127)
    docs = make_docs(rng, 300)
    make_index(es, INDEX, MAPPING, [])
    live = {}
    # several segments: three refreshes
    for part in range(3):
        chunk = docs[part * 100:(part + 1) * 100]
        ops = []
        for i, src in chunk:
            ops += [{"index": {"_index": INDEX, "_id": i}}, src]
            live[i] = src
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield live, rng
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def test_exists_matches_elasticsearch_definition(es, loaded):
    live, _ = loaded
    check_exists(es, live)
    # the object-free wildcard form covers every field at once
    want = sum(1 for s in live.values() if any(exists(f, s) for f in FIELDS))
    assert count(es, {"exists": {"field": "*"}}) == want


def test_exists_after_deletes_updates_and_merge(es, loaded):
    live, rng = loaded
    ids = sorted(live, key=int)
    for i in rng.sample(ids, 40):
        es.delete(index=INDEX, id=i)
        del live[i]
    for i in rng.sample(sorted(live, key=int), 30):
        src = make_docs(rng, 1)[0][1]
        es.index(index=INDEX, id=i, document=src)
        live[i] = src
    es.indices.refresh(index=INDEX)
    check_exists(es, live)
    es.indices.forcemerge(index=INDEX, max_num_segments=1)
    es.indices.refresh(index=INDEX)
    check_exists(es, live)


def test_text_doc_count_counts_documents_with_tokens(es):
    """Lucene's BM25 `docCount` of a text field counts the documents with a token in it: a
    value of only punctuation has no term, so it is not in N (and `exists` still finds it)."""
    index = INDEX + "_bm25"
    rng = random.Random(7)
    words = ["fox", "dog", "cat", "owl", "elk"]
    docs = []
    for i in range(120):
        r = rng.random()
        if r < 0.25:
            src = {"t": rng.choice(["", "!!!", "- -", "..."])}
        elif r < 0.35:
            src = {}
        else:
            src = {"t": " ".join(rng.choice(words) for _ in range(rng.randint(1, 5)))}
        docs.append((str(i), src))
    make_index(es, index, {"settings": {"number_of_shards": 1},
                           "mappings": {"properties": {"t": {"type": "text"}}}}, docs)
    try:
        toks = {i: tokens("t", s) for i, s in docs}
        with_field = [t for t in toks.values() if t]
        n = len(with_field)
        avgdl = sum(len(t) for t in with_field) / n
        df = sum(1 for t in with_field if "owl" in t)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        k1, b = 1.2, 0.75
        want = {}
        for i, t in toks.items():
            tf = t.count("owl")
            if tf:
                dl = norm_length(len(t))
                want[i] = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        hits = es.search(index=index, query={"match": {"t": "owl"}}, size=200)["hits"]["hits"]
        assert {h["_id"] for h in hits} == set(want)
        for h in hits:
            assert h["_score"] == pytest.approx(want[h["_id"]], rel=1e-5), h["_id"]
        present = sum(1 for _, s in docs if "t" in s)
        assert count_in(es, index, {"exists": {"field": "t"}}) == present
    finally:
        es.indices.delete(index=index, ignore_unavailable=True)


def test_keyword_doc_count_counts_documents_with_a_value(es):
    """A keyword's `docCount` is the documents with a value (none over `ignore_above`)."""
    index = INDEX + "_kw"
    rng = random.Random(11)
    tags = ["red", "green", "blue", "toolongvalue"]
    docs = []
    for i in range(150):
        r = rng.random()
        if r < 0.2:
            src = {}
        elif r < 0.3:
            src = {"k": ""}
        else:
            src = {"k": rng.sample(tags, rng.randint(1, 2))}
        docs.append((str(i), src))
    mapping = {"settings": {"number_of_shards": 1},
               "mappings": {"properties": {"k": {"type": "keyword", "ignore_above": 5}}}}
    make_index(es, index, mapping, docs)
    try:
        vals = {}
        for i, s in docs:
            v = s.get("k")
            v = v if isinstance(v, list) else ([] if v is None else [v])
            vals[i] = {x for x in v if len(x) <= 5}
        with_value = [v for v in vals.values() if v]
        n = len(with_value)
        df = sum(1 for v in with_value if "red" in v)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        hits = es.search(index=index, query={"term": {"k": "red"}}, size=200)["hits"]["hits"]
        assert {h["_id"] for h in hits} == {i for i, v in vals.items() if "red" in v}
        # keywords index docs only: tf 1, and their norms are 1 with avgdl = sumDocFreq / N
        avgdl = sum(len(v) for v in with_value) / n
        k1, b = 1.2, 0.75
        want = idf * (k1 + 1) / (1 + k1 * (1 - b + b * 1 / avgdl))
        for h in hits:
            assert h["_score"] == pytest.approx(want, rel=1e-5)
        assert count_in(es, index, {"exists": {"field": "k"}}) == n
    finally:
        es.indices.delete(index=index, ignore_unavailable=True)


def count_in(es, index, query):
    return es.count(index=index, query=query)["count"]

"""BM25 scores with Lucene's per-field statistics (ES 8's default `LegacyBM25Similarity`).

The oracle is written from Lucene's formulas, independently of Lode: per field, `docCount`
is the number of Lucene documents with a term in the field (nested objects are documents of
their own, so they never count for a root field), `avgdl = sumTotalTermFreq / docCount`
(keyword fields index docs only, so their `sumTotalTermFreq` is their `sumDocFreq`), field
lengths go through `SmallFloat.intToByte4` (fields without norms, keywords, have length 1),
and deleted documents count in every statistic until a merge drops them.

    score = boost * (k1 + 1) * idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    idf   = ln(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5))
"""

import math
import random
import re

import pytest

from conftest import make_index
from oracle import norm_length

K1, B = 1.2, 0.75
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima"]
TAGS = ["red", "green", "blue", "amber", "teal"]


# --- the oracle ---------------------------------------------------------------------------

def analyze(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def lucene_docs(doc_id, source, live):
    """A source's Lucene documents (nested objects first, then the root), each a dict of
    field -> tokens (text) or set of values (keyword), with its id and liveness."""
    out = []
    for c in source.get("comments", []):
        f = {}
        if "text" in c:
            f["comments.text"] = analyze(c["text"])
        if "tag" in c:
            f["comments.tag"] = {c["tag"]}
        out.append({"id": doc_id, "root": False, "live": live, "fields": f})
    f = {}
    for name in ("title", "body"):
        if name in source:
            vals = source[name] if isinstance(source[name], list) else [source[name]]
            f[name] = [t for v in vals for t in analyze(v)]
    if "tag" in source:
        vals = source["tag"] if isinstance(source["tag"], list) else [source["tag"]]
        f["tag"] = set(vals)
    out.append({"id": doc_id, "root": True, "live": live, "fields": f})
    return out


KEYWORDS = {"tag", "comments.tag"}


class Stats:
    """Lucene's statistics over a set of Lucene documents (deleted ones included)."""

    def __init__(self, docs):
        self.docs = docs

    def with_field(self, field):
        return [d for d in self.docs if d["fields"].get(field)]

    def doc_count(self, field):
        return len(self.with_field(field))

    def avgdl(self, field):
        total = sum(len(d["fields"][field]) for d in self.with_field(field))
        return total / self.doc_count(field)

    def idf(self, field, term):
        df = sum(1 for d in self.with_field(field) if term in d["fields"][field])
        n = self.doc_count(field)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def term_score(self, field, term, ldoc, boost=1.0):
        """One term's score in one Lucene document, None when it does not match."""
        values = ldoc["fields"].get(field)
        if not values or term not in values:
            return None
        if field in KEYWORDS:
            tf, dl = 1, 1
        else:
            tf, dl = values.count(term), norm_length(len(values))
        norm = K1 * (1 - B + B * dl / self.avgdl(field))
        return boost * (K1 + 1) * self.idf(field, term) * tf / (tf + norm)

    def match_or(self, field, text, ldoc):
        """`match` (operator or): the sum of the matching terms' scores."""
        terms = [text] if field in KEYWORDS else analyze(text)
        scores = [s for s in (self.term_score(field, t, ldoc) for t in terms) if s is not None]
        return sum(scores) if scores else None

    def phrase(self, field, text, ldoc):
        """`match_phrase`: the phrase's frequency, the summed IDF of its terms."""
        terms = analyze(text)
        values = ldoc["fields"].get(field) or []
        freq = sum(1 for i in range(len(values) - len(terms) + 1)
                   if values[i:i + len(terms)] == terms)
        if not freq:
            return None
        idf = sum(self.idf(field, t) for t in terms)
        norm = K1 * (1 - B + B * norm_length(len(values)) / self.avgdl(field))
        return (K1 + 1) * idf * freq / (freq + norm)


def roots(docs):
    return {d["id"]: d for d in docs if d["root"] and d["live"]}


def children(docs, doc_id):
    return [d for d in docs if not d["root"] and d["live"] and d["id"] == doc_id]


# --- the corpus ---------------------------------------------------------------------------

MAPPING = {"mappings": {"properties": {
    "title": {"type": "text"},
    "body": {"type": "text"},
    "tag": {"type": "keyword"},
    "comments": {"type": "nested", "properties": {
        "text": {"type": "text"},
        "tag": {"type": "keyword"},
    }},
}}}


def sentence(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def make_source(rng):
    s = {}
    if rng.random() < 0.7:
        s["title"] = sentence(rng, 1, 6)
    if rng.random() < 0.35:
        # long enough for lossy norms (lengths above 40 are rounded down)
        s["body"] = [sentence(rng, 20, 60) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.5:
        s["tag"] = rng.sample(TAGS, rng.randint(1, 2))
    if rng.random() < 0.6:
        s["comments"] = [{k: v for k, v in (("text", sentence(rng, 1, 8)),
                                            ("tag", rng.choice(TAGS))) if rng.random() < 0.8}
                         for _ in range(rng.randint(1, 3))]
    return s


def bulk(es, index, pairs):
    ops = []
    for i, src in pairs:
        ops.append({"index": {"_index": index, "_id": i}})
        ops.append(src)
    assert es.bulk(operations=ops, refresh=True)["errors"] is False


@pytest.fixture(scope="module")
def scored(es):
    """One shard, several segments, updated and deleted documents (not yet merged away)."""
    rng = random.Random(16)
    index = "bm25_stats"
    make_index(es, index, {**MAPPING, "settings": {"number_of_shards": 1}}, [])
    docs = []
    sources = {}
    for batch in range(4):
        pairs = [(str(batch * 40 + j), make_source(rng)) for j in range(40)]
        bulk(es, index, pairs)
        for i, src in pairs:
            sources[i] = src
            docs.extend(lucene_docs(i, src, True))
    # updates: the old versions stay in the statistics
    updated = [(str(i), make_source(rng)) for i in range(0, 160, 9)]
    for i, _ in updated:
        for d in docs:
            if d["id"] == i:
                d["live"] = False
    bulk(es, index, updated)
    for i, src in updated:
        docs.extend(lucene_docs(i, src, True))
    # deletes
    for i in [str(i) for i in range(5, 160, 13)]:
        es.delete(index=index, id=i)
        for d in docs:
            if d["id"] == i:
                d["live"] = False
    es.indices.refresh(index=index)
    segments = es.indices.segments(index=index)["indices"][index]["shards"]["0"][0]["segments"]
    assert len(segments) > 1
    assert sum(s["deleted_docs"] for s in segments.values()) > 0
    yield index, Stats(docs), docs
    es.indices.delete(index=index, ignore_unavailable=True)


def check(es, index, query, expected, **params):
    """Every match of `query`, with `_score` equal to the oracle's to 1e-5 relative."""
    expected = {i: s for i, s in expected.items() if s is not None}
    resp = es.search(index=index, query=query, size=1000, **params).body
    got = {h["_id"]: h["_score"] for h in resp["hits"]["hits"]}
    assert set(got) == set(expected)
    for i, s in got.items():
        assert s == pytest.approx(expected[i], rel=1e-5), (i, query)
    # the pruned top-k path (block-max WAND) scores alike
    top = es.search(index=index, query=query, size=3, **params).body["hits"]["hits"]
    assert [h["_score"] for h in top] == pytest.approx(
        sorted(expected.values(), reverse=True)[:3], rel=1e-5)
    return resp


def per_root(stats, docs, score):
    return {i: score(d) for i, d in roots(docs).items()}


@pytest.mark.parametrize("value", ["red", "teal"])
def test_term_on_keyword_counts_only_root_documents_with_the_field(es, scored, value):
    index, stats, docs = scored
    check(es, index, {"term": {"tag": value}},
          per_root(stats, docs, lambda d: stats.term_score("tag", value, d)))


@pytest.mark.parametrize("field,text", [("title", "alpha"), ("title", "bravo kilo"),
                                        ("body", "golf"), ("body", "lima india echo")])
def test_match_on_sparse_text_fields(es, scored, field, text):
    index, stats, docs = scored
    check(es, index, {"match": {field: text}},
          per_root(stats, docs, lambda d: stats.match_or(field, text, d)))


def test_match_and_operator(es, scored):
    index, stats, docs = scored

    def score(d):
        terms = analyze("charlie delta")
        s = [stats.term_score("title", t, d) for t in terms]
        return None if None in s else sum(s)

    check(es, index, {"match": {"title": {"query": "charlie delta", "operator": "and"}}},
          per_root(stats, docs, score))


def test_match_phrase(es, scored):
    index, stats, docs = scored
    check(es, index, {"match_phrase": {"body": "alpha bravo"}},
          per_root(stats, docs, lambda d: stats.phrase("body", "alpha bravo", d)))


def test_multi_match_best_and_most_fields(es, scored):
    index, stats, docs = scored
    text = "hotel juliet"

    def per_field(d):
        return [s for s in (stats.match_or(f, text, d) for f in ("title", "body"))
                if s is not None]

    check(es, index, {"multi_match": {"query": text, "fields": ["title", "body"]}},
          per_root(stats, docs, lambda d: max(per_field(d)) if per_field(d) else None))
    check(es, index, {"multi_match": {"query": text, "fields": ["title", "body"],
                                      "type": "most_fields"}},
          per_root(stats, docs, lambda d: sum(per_field(d)) if per_field(d) else None))


def test_bool_sums_its_scoring_clauses(es, scored):
    index, stats, docs = scored

    def score(d):
        must = stats.match_or("title", "echo", d)
        if must is None:
            return None
        should = stats.term_score("tag", "green", d, boost=2.0)
        return must + (should or 0.0)

    check(es, index, {"bool": {
        "must": [{"match": {"title": "echo"}}],
        "should": [{"term": {"tag": {"value": "green", "boost": 2.0}}}],
        "filter": [{"exists": {"field": "title"}}],
    }}, per_root(stats, docs, score))


def test_nested_children_are_scored_with_their_own_statistics(es, scored):
    index, stats, docs = scored

    def avg(d):
        s = [x for x in (stats.match_or("comments.text", "foxtrot golf", c)
                         for c in children(docs, d["id"])) if x is not None]
        return sum(s) / len(s) if s else None

    def best(d):
        s = [x for x in (stats.term_score("comments.tag", "blue", c)
                         for c in children(docs, d["id"])) if x is not None]
        return max(s) if s else None

    check(es, index, {"nested": {"path": "comments", "score_mode": "avg",
                                 "query": {"match": {"comments.text": "foxtrot golf"}}}},
          per_root(stats, docs, avg))
    check(es, index, {"nested": {"path": "comments", "score_mode": "max",
                                 "query": {"term": {"comments.tag": "blue"}}}},
          per_root(stats, docs, best))


def test_explain_shows_the_field_statistics(es, scored):
    index, stats, docs = scored
    resp = es.search(index=index, query={"term": {"tag": "amber"}}, size=1, explain=True).body
    hit = resp["hits"]["hits"][0]
    assert hit["_explanation"]["value"] == pytest.approx(hit["_score"], rel=1e-6)

    def consts(e):
        yield e["description"], e["value"]
        for x in e.get("details", []):
            yield from consts(x)

    values = dict(consts(hit["_explanation"]))
    n = [v for k, v in values.items() if k.startswith("N,")]
    assert n == [stats.doc_count("tag")]


def test_dfs_and_per_shard_statistics(es):
    """Two shards: each scores with its own documents' statistics, and with
    `dfs_query_then_fetch` with the index's."""
    rng = random.Random(61)
    index = "bm25_shards"
    pairs = [(str(i), make_source(rng)) for i in range(120)]
    make_index(es, index, {**MAPPING, "settings": {"number_of_shards": 2}}, pairs)
    try:
        placed = es.search(index=index, query={"match_all": {}}, size=1000, explain=True).body
        shard_of = {h["_id"]: h["_shard"] for h in placed["hits"]["hits"]}
        assert len(set(shard_of.values())) == 2
        all_docs = [d for i, s in pairs for d in lucene_docs(i, s, True)]
        query = {"match": {"title": "alpha delta"}}
        expected = {}
        for shard in set(shard_of.values()):
            docs = [d for d in all_docs if shard_of[d["id"]] == shard]
            stats = Stats(docs)
            expected.update(per_root(stats, docs, lambda d: stats.match_or("title", "alpha delta", d)))
        check(es, index, query, expected)
        stats = Stats(all_docs)
        check(es, index, query,
              per_root(stats, all_docs, lambda d: stats.match_or("title", "alpha delta", d)),
              search_type="dfs_query_then_fetch")
        check(es, index, {"term": {"tag": "blue"}},
              per_root(stats, all_docs, lambda d: stats.term_score("tag", "blue", d)),
              search_type="dfs_query_then_fetch")
    finally:
        es.indices.delete(index=index, ignore_unavailable=True)


def test_statistics_after_a_merge_drops_deleted_documents(es):
    """Once a merge drops deleted documents, Lucene's statistics are the live documents'
    (tantivy's own token count of the merged segment is an estimate, from the share of live
    documents, nested ones included: a keyword's values are counted in its column instead)."""
    rng = random.Random(7)
    index = "bm25_merged"
    pairs = [(str(i), make_source(rng)) for i in range(120)]
    make_index(es, index, {**MAPPING, "settings": {"number_of_shards": 1}}, pairs)
    try:
        gone = [i for i, s in pairs if "tag" not in s][:30]
        for i in gone:
            es.delete(index=index, id=i)
        es.indices.forcemerge(index=index, max_num_segments=1)
        es.indices.refresh(index=index)
        live = [(i, s) for i, s in pairs if i not in gone]
        docs = [d for i, s in live for d in lucene_docs(i, s, True)]
        stats = Stats(docs)
        check(es, index, {"term": {"tag": "green"}},
              per_root(stats, docs, lambda d: stats.term_score("tag", "green", d)))
    finally:
        es.indices.delete(index=index, ignore_unavailable=True)

"""Fuzzy queries scored as Elasticsearch scores them (Lucene's `FuzzyQuery` rewrites).

The oracle is written from Lucene's source, independently of Lode. The terms of the field
within the edit distance (`FuzzyTermsEnum`, the first `prefix_length` characters kept) each
get the boost `1 - edits / min(len(term), len(query))` (1 for the query's own term); the
default rewrite, `top_terms_blended_freqs_{max_expansions}`, keeps the `max_expansions`
terms of highest boost (ties: the smaller term) and scores each as a BM25 term query boosted
by its fuzzy boost, with the largest document frequency among the kept terms
(`BlendedTermQuery`), summed over the terms a document holds. `top_terms_N` keeps each
term's own frequency, `top_terms_boost_N` sums the boosts, `scoring_boolean` keeps every
term, `constant_score` scores the query's boost.

    bm25 = (k1 + 1) * idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    idf  = ln(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5))
"""

import math
import random

import pytest

from conftest import error_of, make_index
from oracle import norm_length, osa_distance

K1, B = 1.2, 0.75
INDEX = "fuzzy_scores"
# Near neighbours of several lengths and frequencies, some non-ASCII (code-point lengths).
VOCAB = ["settlement", "setlement", "settlements", "settlment", "sentiment", "statement",
         "settle", "refund", "refunds", "refound", "rebund", "fund", "found", "funds",
         "refunded", "café", "cafe", "cafés", "safe", "care", "cave", "account", "acount"]
KEYS = ["alpha", "alpah", "alphas", "aleph", "delta", "delts", "beta"]


def levenshtein(a, b):
    d = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(b) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(b)]


def auto_distance(term):
    n = len(term)
    return 0 if n < 3 else 1 if n < 6 else 2


class Field:
    """One field's Lucene statistics: every document holds it (docCount = all documents)."""

    def __init__(self, token_lists, norms):
        self.docs = token_lists
        self.norms = norms
        self.doc_count = len(token_lists)
        self.sum_ttf = sum(len(t) for t in token_lists) if norms else self.doc_count
        self.df = {}
        for toks in token_lists:
            for t in set(toks):
                self.df[t] = self.df.get(t, 0) + 1

    def idf(self, df):
        return math.log(1 + (self.doc_count - df + 0.5) / (df + 0.5))

    def bm25(self, doc, term, df):
        toks = self.docs[doc]
        tf = toks.count(term)
        if tf == 0:
            return 0.0
        dl = norm_length(len(toks)) if self.norms else 1
        avgdl = self.sum_ttf / self.doc_count
        return (K1 + 1) * self.idf(df) * tf / (tf + K1 * (1 - B + B * dl / avgdl))

    def expansions(self, q, edits, prefix=0, transpositions=True):
        """Lucene's FuzzyTermsEnum: {term: boost}."""
        if edits == 0 or prefix >= len(q):
            return {q: 1.0} if q in self.df else {}
        dist = osa_distance if transpositions else levenshtein
        out = {}
        for t in self.df:
            if t[:prefix] != q[:prefix]:
                continue
            e = dist(t[prefix:], q[prefix:])
            if e <= edits:
                out[t] = 1.0 if e == 0 else 1.0 - e / min(len(t), len(q))
        return out

    def scores(self, q, edits, prefix=0, transpositions=True, rewrite=None, max_exp=50,
               boost=1.0):
        terms = self.expansions(q, edits, prefix, transpositions)
        kind, n = rewrite or ("blended", max_exp)
        if kind != "scoring_boolean" and kind != "constant":
            terms = dict(sorted(terms.items(), key=lambda kv: (-kv[1], kv[0]))[:n])
        blended = max((self.df[t] for t in terms), default=0)
        out = {}
        for doc, toks in enumerate(self.docs):
            held = [t for t in terms if t in toks]
            if not held:
                continue
            if kind == "constant":
                s = 1.0
            elif kind == "boost":
                s = sum(terms[t] for t in held)
            elif kind == "blended":
                s = sum(terms[t] * self.bm25(doc, t, blended) for t in held)
            else:
                s = sum(terms[t] * self.bm25(doc, t, self.df[t]) for t in held)
            out[str(doc)] = boost * s
        return out


@pytest.fixture(scope="module")
def fields(es):
    rng = random.Random(25)
    weights = [1 + (i * 7) % 11 for i in range(len(VOCAB))]
    sources = [{"t": " ".join(rng.choices(VOCAB, weights, k=rng.randint(1, 9))),
                "k": rng.choice(KEYS)} for _ in range(300)]
    make_index(es, INDEX, {"settings": {"number_of_shards": 1},
                           "mappings": {"properties": {"t": {"type": "text"},
                                                       "k": {"type": "keyword"}}}}, [])
    for start in range(0, 300, 100):  # three segments
        ops = []
        for i in range(start, start + 100):
            ops += [{"index": {"_index": INDEX, "_id": str(i)}}, sources[i]]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield {"t": Field([s["t"].split() for s in sources], True),
           "k": Field([[s["k"]] for s in sources], False)}
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def check(es, query, expected):
    """Every match with the oracle's score (1e-5 relative), and the pruned top 3 alike."""
    assert expected, "the oracle expects matches"
    resp = es.search(index=INDEX, query=query, size=1000).body
    got = {h["_id"]: h["_score"] for h in resp["hits"]["hits"]}
    assert set(got) == set(expected), query
    for i, s in got.items():
        assert s == pytest.approx(expected[i], rel=1e-5), (i, query)
    top = es.search(index=INDEX, query=query, size=3).body["hits"]["hits"]
    assert [h["_score"] for h in top] == pytest.approx(
        sorted(expected.values(), reverse=True)[:3], rel=1e-5)


def test_match_with_auto_fuzziness_blends_the_expansions(es, fields):
    # the reference benchmark's shape: a misspelling whose neighbours differ in frequency
    t = fields["t"]
    check(es, {"match": {"t": {"query": "setlement", "fuzziness": "AUTO"}}},
          t.scores("setlement", 2))
    check(es, {"match": {"t": {"query": "refund acount", "fuzziness": 1, "boost": 2}}},
          {d: t.scores("refund", 1).get(d, 0) * 2 + t.scores("acount", 1).get(d, 0) * 2
           for d in set(t.scores("refund", 1)) | set(t.scores("acount", 1))})


@pytest.mark.parametrize("value,fuzziness,prefix,max_exp,transpositions", [
    ("refund", 2, 0, 3, True),      # more neighbours than expansions: the top 3 by boost
    ("refund", 2, 2, 50, True),     # the prefix is kept
    ("setlment", 2, 0, 2, False),   # a swap costs two without transpositions
    ("cafe", 1, 0, 50, True),       # "café": lengths in code points
    ("fund", 0, 0, 50, True),       # no edits: the term itself
])
def test_fuzzy_query_options(es, fields, value, fuzziness, prefix, max_exp, transpositions):
    q = {"fuzzy": {"t": {"value": value, "fuzziness": fuzziness, "prefix_length": prefix,
                         "max_expansions": max_exp, "transpositions": transpositions}}}
    check(es, q, fields["t"].scores(value, fuzziness, prefix, transpositions, max_exp=max_exp))


@pytest.mark.parametrize("rewrite,oracle", [
    ("top_terms_blended_freqs_2", ("blended", 2)),
    ("top_terms_3", ("own", 3)),
    ("top_terms_boost_4", ("boost", 4)),
    ("scoring_boolean", ("scoring_boolean", 0)),
    ("constant_score", ("constant", 0)),
    ("constant_score_blended", ("constant", 0)),
])
def test_fuzzy_rewrite_methods(es, fields, rewrite, oracle):
    q = {"fuzzy": {"t": {"value": "refund", "fuzziness": 2, "rewrite": rewrite, "boost": 1.5}}}
    check(es, q, fields["t"].scores("refund", 2, rewrite=oracle, boost=1.5))


def test_fuzzy_rewrite_of_match_and_query_string(es, fields):
    t = fields["t"]
    check(es, {"match": {"t": {"query": "refund", "fuzziness": 2, "max_expansions": 3,
                               "fuzzy_rewrite": "top_terms_boost_2"}}},
          t.scores("refund", 2, rewrite=("boost", 2)))
    check(es, {"multi_match": {"query": "refund", "fields": ["t"], "fuzziness": 2,
                               "max_expansions": 4}},
          t.scores("refund", 2, max_exp=4))
    check(es, {"query_string": {"query": "refund~2", "default_field": "t",
                                "fuzzy_prefix_length": 1, "fuzzy_max_expansions": 3}},
          t.scores("refund", 2, prefix=1, max_exp=3))
    check(es, {"query_string": {"query": "refund~1", "default_field": "t",
                                "fuzzy_rewrite": "constant_score"}},
          t.scores("refund", 1, rewrite=("constant", 0)))


def test_keyword_fuzzy_scores_with_bm25(es, fields):
    check(es, {"fuzzy": {"k": {"value": "alpha", "fuzziness": 2}}},
          fields["k"].scores("alpha", 2))
    check(es, {"match": {"k": {"query": "delta", "fuzziness": "AUTO"}}},
          fields["k"].scores("delta", auto_distance("delta")))


def test_filter_matches_only_the_kept_expansions(es, fields):
    expected = fields["t"].scores("refund", 2, max_exp=2)
    q = {"bool": {"filter": {"fuzzy": {"t": {"value": "refund", "fuzziness": 2,
                                             "max_expansions": 2}}}}}
    assert es.count(index=INDEX, query=q)["count"] == len(expected)
    # more terms within reach than kept: the limit is what narrows the matches
    assert len(fields["t"].scores("refund", 2)) > len(expected)


def test_explain_agrees_with_the_score(es, fields):
    q = {"match": {"t": {"query": "setlement", "fuzziness": "AUTO"}}}
    hits = es.search(index=INDEX, query=q, size=5, explain=True)["hits"]["hits"]
    assert hits
    for h in hits:
        assert h["_explanation"]["value"] == pytest.approx(h["_score"], rel=1e-6)


@pytest.mark.parametrize("rewrite,reason", [
    ("nope", "Failed to parse rewrite_method [nope]"),
    ("top_terms_x", "Failed to parse rewrite_method [top_terms_x]"),
    (None, "maxExpansions must be positive."),
])
def test_bad_rewrite_or_expansions_are_refused(es, fields, rewrite, reason):
    opts = {"rewrite": rewrite} if rewrite else {"max_expansions": 0}
    match_opts = {"fuzzy_rewrite": rewrite} if rewrite else {"max_expansions": 0}
    for q in [{"fuzzy": {"t": {"value": "refund", **opts}}},
              {"match": {"t": {"query": "refund", "fuzziness": 1, **match_opts}}}]:
        status, body = error_of(lambda: es.search(index=INDEX, query=q))
        assert status == 400
        assert reason in str(body)

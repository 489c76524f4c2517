"""Scored top hits over a shard of several segments, each segment starting at the k-th best
score of the ones before it: the hits, their scores and their order must be those of an
oracle that scores every document here (BM25 from the documents, Lucene's statistics count
deleted documents) and breaks equal scores by index order (`sort: _doc`), as ES does.

One shard, six segments (a refresh after each batch), deleted documents, and many equal
scores across segments: one document in four repeats a text from a small set, and
`constant_score` gives every match the same score.
"""

import math
import random

import pytest

from oracle import norm_length

INDEX = "top_hits_segments"
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
REPEATED = ["alpha beta", "gamma alpha delta", "beta beta eps zeta", "zeta"]
K1, B = 1.2, 0.75


def make_text(rng):
    if rng.random() < 0.25:
        return rng.choice(REPEATED)
    # Skewed word frequencies: postings differ in length, blocks in maxima.
    return " ".join(WORDS[min(int(rng.expovariate(0.8)), len(WORDS) - 1)]
                    for _ in range(rng.randint(1, 60)))


@pytest.fixture(scope="module")
def corpus(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 1},
                      mappings={"properties": {"body": {"type": "text"}}})
    rng = random.Random(29)
    every = {}
    for _batch in range(6):
        ops = []
        for _ in range(rng.randint(300, 700)):
            i = str(len(every))
            every[i] = make_text(rng).split()
            ops += [{"index": {"_index": INDEX, "_id": i}}, {"body": " ".join(every[i])}]
        es.bulk(operations=ops, refresh=True)
    gone = set(rng.sample(sorted(every), len(every) // 10))
    es.bulk(operations=[{"delete": {"_index": INDEX, "_id": i}} for i in sorted(gone)],
            refresh=True)
    live = {i: t for i, t in every.items() if i not in gone}
    order = es.search(index=INDEX, size=len(live), sort=["_doc"], source=False)
    position = {h["_id"]: n for n, h in enumerate(order["hits"]["hits"])}
    assert set(position) == set(live)
    segments = es.indices.segments(index=INDEX)["indices"][INDEX]["shards"]["0"][0]["segments"]
    assert len(segments) >= 4
    yield every, live, position
    es.indices.delete(index=INDEX)


class Bm25:
    """Lucene's BM25 over every indexed document (deleted ones still count)."""

    def __init__(self, every):
        self.n = len(every)
        self.avgdl = sum(len(t) for t in every.values()) / self.n
        self.df = {w: sum(1 for t in every.values() if w in t) for w in WORDS}

    def term(self, word, text, boost=1.0):
        if word not in text:
            return None
        idf = math.log(1 + (self.n - self.df[word] + 0.5) / (self.df[word] + 0.5))
        tf = text.count(word)
        norm = K1 * (1 - B + B * norm_length(len(text)) / self.avgdl)
        return boost * (K1 + 1) * idf * tf / (tf + norm)

    def match(self, words, text, boost=1.0):
        scores = [s for s in (self.term(w, text, boost) for w in words) if s is not None]
        return sum(scores) if scores else None


def random_query(rng, bm):
    """An ES query and the function scoring one document's text (None: no match)."""
    words = rng.sample(WORDS, rng.randint(2, 3))
    shape = rng.choice(["term", "match", "should", "msm", "dis_max", "boosted", "constant",
                        "function_score", "must_not"])
    if shape == "term":
        return {"match": {"body": words[0]}}, lambda t: bm.term(words[0], t)
    if shape == "match":
        return {"match": {"body": " ".join(words)}}, lambda t: bm.match(words, t)
    if shape == "should":
        q = {"bool": {"should": [{"match": {"body": w}} for w in words[:2]]}}
        return q, lambda t: bm.match(words[:2], t)
    if shape == "msm":
        q = {"bool": {"should": [{"match": {"body": w}} for w in words] + [
            {"match": {"body": rng.choice(WORDS)}}], "minimum_should_match": 2}}
        clauses = words + [q["bool"]["should"][-1]["match"]["body"]]

        def msm(t):
            scores = [s for s in (bm.term(w, t) for w in clauses) if s is not None]
            return sum(scores) if len(scores) >= 2 else None
        return q, msm
    if shape == "dis_max":
        q = {"dis_max": {"queries": [{"match": {"body": w}} for w in words],
                         "tie_breaker": 0.3}}

        def dis_max(t):
            scores = [s for s in (bm.term(w, t) for w in words) if s is not None]
            return max(scores) + 0.3 * (sum(scores) - max(scores)) if scores else None
        return q, dis_max
    if shape == "boosted":
        q = {"match": {"body": {"query": " ".join(words), "boost": 2.5}}}
        return q, lambda t: bm.match(words, t, boost=2.5)
    if shape == "constant":
        q = {"constant_score": {"filter": {"match": {"body": words[0]}}, "boost": 1.5}}
        return q, lambda t: 1.5 if words[0] in t else None
    if shape == "function_score":
        q = {"function_score": {"query": {"match": {"body": " ".join(words)}},
                                "functions": [{"weight": 3}]}}
        return q, lambda t: None if bm.match(words, t) is None else 3 * bm.match(words, t)
    q = {"bool": {"should": [{"match": {"body": w}} for w in words[:2]],
                  "must_not": [{"match": {"body": words[2 % len(words)]}}]}}
    return q, lambda t: None if words[2 % len(words)] in t else bm.match(words[:2], t)


def near(a, b):
    return abs(a - b) <= 1e-6 * abs(b)


def check_hits(hits, expected, oracle, position, context):
    """The hits are the oracle's, rank by rank. Pruning (block-max WAND) sums a document's
    clause scores in the order its cursors stand in, so scores equal here may differ in
    their last bits there: within a run of near-equal oracle scores the documents may come
    in any order, elsewhere they must be the oracle's. Equal scores as returned must come in
    index order (an earlier segment's document wins the tie)."""
    ids = [h["_id"] for h in hits]
    assert len(ids) == len(expected) and len(set(ids)) == len(ids), context
    for n, (h, (s, i)) in enumerate(zip(hits, expected)):
        assert h["_id"] in oracle, (context, n, h)
        assert near(oracle[h["_id"]], s), (context, n, h["_id"], i)
        alone = all(not near(o, s) for o, j in expected[max(0, n - 1):n + 2] if j != i)
        if alone:
            assert h["_id"] == i, (context, n)
        assert h["_score"] == pytest.approx(oracle[h["_id"]], rel=1e-5), (context, n)
    for a, b in zip(hits, hits[1:]):
        if a["_score"] == b["_score"]:
            assert position[a["_id"]] < position[b["_id"]], (context, a, b)


@pytest.mark.parametrize("track_total_hits", [None, True, False, 100])
def test_scored_top_hits_equal_the_oracle(es, corpus, track_total_hits):
    every, live, position = corpus
    bm = Bm25(every)
    rng = random.Random({None: 41, True: 43, False: 47, 100: 53}[track_total_hits])
    for _ in range(60):
        q, score = random_query(rng, bm)
        size = rng.choice([1, 3, 10, 50, 100])
        scored = [(s, i) for i, s in ((i, score(t)) for i, t in live.items()) if s is not None]
        # Best first; an equal score goes to the document earlier in the index.
        expected = sorted(scored, key=lambda si: (-si[0], position[si[1]]))[:size]
        params = {} if track_total_hits is None else {"track_total_hits": track_total_hits}
        resp = es.search(index=INDEX, query=q, size=size, **params)
        hits = resp["hits"]["hits"]
        check_hits(hits, expected, {i: s for s, i in scored}, position, (q, size))
        total = resp["hits"].get("total")
        if track_total_hits is False:
            assert total is None
        elif track_total_hits == 100 and len(scored) > 100:
            assert total == {"value": 100, "relation": "gte"}, q
        else:
            assert total == {"value": len(scored), "relation": "eq"}, q

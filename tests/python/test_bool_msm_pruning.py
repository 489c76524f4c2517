"""`bool` with `minimum_should_match` >= 2, scored top hits: the pruned path (default
`track_total_hits`, block-max bounds) must return exactly the hits of the exhaustive path
(`track_total_hits: true` scores every match), and the totals must equal the number of
documents matching at least `msm` of the clauses, counted here from the documents.

The index has several segments (a refresh after each batch) and deleted documents; the
clauses are text terms (block maxima), keyword terms and numeric terms (constant scores),
with optional filter, must and must_not clauses.
"""

import random

import pytest

INDEX = "msm_pruning"
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
KINDS = ["basic", "gold", "plat"]


def make_doc(rng, i):
    length = rng.randint(1, 25)
    # Skewed word frequencies, so that postings differ in length and blocks in maxima.
    words = [WORDS[min(int(rng.expovariate(0.8)), len(WORDS) - 1)] for _ in range(length)]
    return {"body": " ".join(words), "kind": rng.choice(KINDS), "status": rng.randint(0, 3), "n": i}


@pytest.fixture(scope="module")
def docs(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {
        "body": {"type": "text"}, "kind": {"type": "keyword"},
        "status": {"type": "integer"}, "n": {"type": "integer"}}})
    rng = random.Random(7)
    live = {}
    n = 0
    for _batch in range(4):
        ops = []
        for _ in range(1500):
            d = make_doc(rng, n)
            ops += [{"index": {"_index": INDEX, "_id": str(n)}}, d]
            live[str(n)] = d
            n += 1
        es.bulk(operations=ops, refresh=True)
    gone = rng.sample(sorted(live), 400)
    es.bulk(operations=[{"delete": {"_index": INDEX, "_id": i}} for i in gone], refresh=True)
    for i in gone:
        del live[i]
    yield live
    es.indices.delete(index=INDEX)


def clause(rng):
    r = rng.random()
    if r < 0.5:
        return {"match": {"body": rng.choice(WORDS)}}
    if r < 0.7:
        return {"term": {"kind": rng.choice(KINDS)}}
    if r < 0.85:
        return {"term": {"status": rng.randint(0, 3)}}
    return {"match": {"body": {"query": rng.choice(WORDS), "boost": 1.5}}}


def matches(c, d):
    """Whether document `d` matches clause `c` (the analyzer lowercases and splits on spaces)."""
    if "match" in c:
        q = c["match"]["body"]
        word = q["query"] if isinstance(q, dict) else q
        return word in d["body"].split()
    field, value = next(iter(c["term"].items()))
    return d[field] == value


def check(es, docs, q, msm, size):
    pruned = es.search(index=INDEX, query=q, size=size)
    full = es.search(index=INDEX, query=q, size=size, track_total_hits=True)
    got = [(h["_id"], h["_score"]) for h in pruned["hits"]["hits"]]
    want = [(h["_id"], h["_score"]) for h in full["hits"]["hits"]]
    assert got == want, (q, size)
    b = q["bool"]
    expected = sum(
        1 for d in docs.values()
        if sum(matches(c, d) for c in b["should"]) >= msm
        and all(matches(c, d) for c in b.get("filter", []) + b.get("must", []))
        and not any(matches(c, d) for c in b.get("must_not", [])))
    assert full["hits"]["total"] == {"value": expected, "relation": "eq"}, q
    assert pruned["hits"]["total"] == {"value": expected, "relation": "eq"}, q
    assert len(got) == min(size, expected)


def test_msm_top_hits_pruned_equal_exhaustive(es, docs):
    rng = random.Random(11)
    for _ in range(60):
        n = rng.randint(3, 6)
        should = [clause(rng) for _ in range(n)]
        msm = rng.randint(2, n - 1)
        spec = rng.choice([msm, str(msm), f"{-(n - msm)}"])
        q = {"bool": {"should": should, "minimum_should_match": spec}}
        check(es, docs, q, msm, rng.choice([1, 3, 10, 40]))


def test_msm_top_hits_with_filter_must_and_must_not(es, docs):
    rng = random.Random(13)
    for _ in range(45):
        n = rng.randint(3, 5)
        should = [clause(rng) for _ in range(n)]
        msm = rng.randint(2, n - 1)
        q = {"bool": {"should": should, "minimum_should_match": msm}}
        occur = rng.choice(["filter", "must", "must_not"])
        q["bool"][occur] = [clause(rng)]
        check(es, docs, q, msm, rng.choice([1, 5, 10, 25]))

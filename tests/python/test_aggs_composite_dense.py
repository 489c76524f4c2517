"""`composite` over keyword and integer `terms` sources, which Lode counts per tuple of segment
ordinals (integers: offsets from the segment's smallest value).

The index has several segments per shard (a refresh between batches), deleted and updated
documents, documents without some fields, multi-valued fields and terms outside ASCII. Every
page is computed here, in Python, from the live documents: each document contributes every
combination of its distinct values (a missing value is the `null` key under `missing_bucket`,
otherwise the document is left out), keys ordered per source (`order`, `missing_order`),
the page being the first `size` keys after `after`. Paging with `after_key` must walk the
whole ordered list. Three high-cardinality sources (far more key combinations than documents)
are asked too: those segments keep tantivy's collector.
"""

import collections
import functools
import itertools
import random

import pytest

from conftest import make_index

INDEX = "composite-dense"
TYPES = ["gold", "basic", "silver", "\u00e9lite", "Zinc"]
STATUS = ["0", "1", "2", "10", "\u4e2d"]
TAGS = ["red", "green", "blue", "amber", "teal", "plum"]


def random_doc(rng, i):
    src = {"n": i, "id": "id%05d" % i, "id2": "x%05d" % ((i * 7919) % 100003),
           "id3": "y%d" % (i % 997)}
    if rng.random() < 0.9:
        src["t"] = rng.choice(TYPES)
    if rng.random() < 0.85:
        src["s"] = rng.choice(STATUS)
    if rng.random() < 0.8:
        src["k"] = rng.choice([-3, 0, 2, 7, 11])
    if rng.random() < 0.7:
        src["ks"] = rng.sample([-20, -10, 0, 10, 20, 30], rng.randint(1, 3))
    r = rng.random()
    if r < 0.2:
        pass
    elif r < 0.6:
        src["m"] = rng.choice(TAGS)
    else:
        # Repeats within a document are one value (keyword doc values are a set).
        src["m"] = [rng.choice(TAGS) for _ in range(rng.randint(1, 4))]
    return src


@pytest.fixture(scope="module")
def live(es):
    rng = random.Random(2207)
    make_index(es, INDEX, {
        "settings": {"number_of_shards": 2},
        "mappings": {"properties": {
            "t": {"type": "keyword"}, "s": {"type": "keyword"}, "m": {"type": "keyword"},
            "id": {"type": "keyword"}, "id2": {"type": "keyword"},
            "id3": {"type": "keyword"}, "n": {"type": "integer"},
            "k": {"type": "integer"}, "ks": {"type": "long"},
        }},
    }, [])
    docs = {}
    n = 0
    for batch in range(4):
        ops = []
        for _ in range(150 + 60 * batch):
            src = random_doc(rng, n)
            ops += [{"index": {"_index": INDEX, "_id": str(n)}}, src]
            docs[str(n)] = src
            n += 1
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    ids = sorted(docs, key=int)
    doomed = set(rng.sample(ids, 70)) | {"0", ids[-1]}
    updated = set(rng.sample([i for i in ids if i not in doomed], 60))
    ops = [{"delete": {"_index": INDEX, "_id": i}} for i in sorted(doomed, key=int)]
    for i in sorted(updated, key=int):
        src = random_doc(rng, int(i))
        ops += [{"index": {"_index": INDEX, "_id": i}}, src]
        docs[i] = src
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    for i in doomed:
        del docs[i]
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def values(src, field):
    v = src.get(field)
    return sorted(set(v if isinstance(v, list) else ([] if v is None else [v])))


def missing_first(source):
    order = source.get("missing_order", "default")
    if order == "default":
        return source.get("order", "asc") == "asc"
    return order == "first"


def compare(sources, a, b):
    """The composite order of two keys (tuples, `None` for a missing value)."""
    for source, x, y in zip(sources, a, b):
        if x == y:
            continue
        if x is None or y is None:
            first = missing_first(source)
            return -1 if (x is None) == first else 1
        c = -1 if x < y else 1
        return c if source.get("order", "asc") == "asc" else -c
    return 0


def oracle(docs, sources, keep=lambda src: True):
    """Every key with its documents, in the composite order."""
    counts = collections.Counter()
    for src in docs.values():
        if not keep(src):
            continue
        per_source = []
        for source in sources:
            vals = values(src, source["field"])
            if not vals:
                if not source.get("missing_bucket"):
                    break
                vals = [None]
            per_source.append(vals)
        else:
            for key in itertools.product(*per_source):
                counts[key] += 1
    keys = sorted(counts, key=functools.cmp_to_key(lambda a, b: compare(sources, a, b)))
    return [(k, counts[k]) for k in keys]


def body_sources(names, sources):
    return [{name: {"terms": source}} for name, source in zip(names, sources)]


def search(es, query, names, sources, size, after=None):
    comp = {"size": size, "sources": body_sources(names, sources)}
    if after is not None:
        comp["after"] = after
    body = {"size": 0, "query": query, "aggs": {"c": {"composite": comp}}}
    return es.search(index=INDEX, body=body, request_cache=False)["aggregations"]["c"]


SHAPES = {
    "two_asc": [{"field": "t"}, {"field": "s"}],
    "desc_first": [{"field": "t", "order": "desc"}, {"field": "s"}],
    "missing_buckets": [
        {"field": "t", "missing_bucket": True},
        {"field": "s", "missing_bucket": True, "missing_order": "last"},
    ],
    "missing_desc": [
        {"field": "s", "order": "desc", "missing_bucket": True},
        {"field": "t", "missing_bucket": True, "missing_order": "first", "order": "desc"},
    ],
    "multi_valued": [{"field": "m"}, {"field": "t"}],
    "multi_missing": [
        {"field": "m", "missing_bucket": True, "order": "desc"},
        {"field": "s", "missing_bucket": True},
        {"field": "t"},
    ],
    "one_source": [{"field": "m", "missing_bucket": True}],
    "integers": [
        {"field": "k", "order": "desc", "missing_bucket": True},
        {"field": "t"},
    ],
    "integers_multi": [
        {"field": "ks", "missing_bucket": True, "missing_order": "last"},
        {"field": "k"},
        {"field": "s", "order": "desc"},
    ],
    "high_cardinality": [{"field": "id"}, {"field": "id2", "order": "desc"}, {"field": "id3"}],
}

QUERIES = {
    "all": ({"match_all": {}}, lambda src: True),
    "filtered": ({"range": {"n": {"gte": 100, "lt": 600}}}, lambda src: 100 <= src["n"] < 600),
    "term": ({"term": {"m": "red"}}, lambda src: "red" in values(src, "m")),
}


def as_key(names, key):
    return {name: v for name, v in zip(names, key)}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("query", sorted(QUERIES))
@pytest.mark.parametrize("size", [1, 7, 1000])
def test_pages_walk_the_oracle(es, live, shape, query, size):
    sources = SHAPES[shape]
    names = ["k%d" % i for i in range(len(sources))]
    q, keep = QUERIES[query]
    want = oracle(live, sources, keep)
    assert want, "the oracle has keys"
    got = []
    after = None
    for _ in range(len(want) + 2):
        res = search(es, q, names, sources, size, after)
        page = [(tuple(b["key"][n] for n in names), b["doc_count"]) for b in res["buckets"]]
        assert len(page) <= size
        if not page:
            break
        assert res["after_key"] == as_key(names, page[-1][0])
        got += page
        after = res["after_key"]
    assert got == want


@pytest.mark.parametrize("shape", ["two_asc", "missing_desc", "multi_missing"])
def test_after_key_not_in_the_index(es, live, shape):
    """An `after` between two terms (and after a missing value) starts at the next key."""
    sources = SHAPES[shape]
    names = ["k%d" % i for i in range(len(sources))]
    want = oracle(live, sources)
    for after in [("c",) * len(sources), ("zzz",) * len(sources), ("",) * len(sources),
                  tuple("gold" if i == 0 else "b" for i in range(len(sources)))]:
        rest = [(k, n) for k, n in want if compare(sources, k, after) > 0]
        res = search(es, {"match_all": {}}, names, sources, 5, as_key(names, after))
        page = [(tuple(b["key"][n] for n in names), b["doc_count"]) for b in res["buckets"]]
        assert page == rest[:5], after
    if any(s.get("missing_bucket") for s in sources):
        for k, _ in want:
            if None in k:
                rest = [(x, n) for x, n in want if compare(sources, x, k) > 0]
                res = search(es, {"match_all": {}}, names, sources, 4, as_key(names, k))
                page = [(tuple(b["key"][n] for n in names), b["doc_count"])
                        for b in res["buckets"]]
                assert page == rest[:4], k


@pytest.mark.parametrize("shape", ["integers", "integers_multi"])
def test_integer_after_between_values(es, live, shape):
    """An integer `after` below, between or above the values starts at the next key."""
    sources = SHAPES[shape]
    names = ["k%d" % i for i in range(len(sources))]
    want = oracle(live, sources)
    for first in [-100, -3, 1, 7, 100]:
        after = tuple([first, 1, "1"][:len(sources)])
        if sources[1]["field"] == "t":
            after = (first, "m")
        rest = [(k, n) for k, n in want if compare(sources, k, after) > 0]
        res = search(es, {"match_all": {}}, names, sources, 6, as_key(names, after))
        page = [(tuple(b["key"][n] for n in names), b["doc_count"]) for b in res["buckets"]]
        assert page == rest[:6], after

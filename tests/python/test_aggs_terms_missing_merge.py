"""`missing` equal to a value some documents have: the documents without a value and the
documents with that value are ONE bucket (ES's `MissingValues` makes the missing documents
have the value), for keyword, numeric, date, boolean `terms`, `multi_terms`, `rare_terms`,
with sub-aggregations seeing both sets of documents. Expected answers are computed here
from the documents this file indexes (one shard, several segments: some segments hold the
`missing` term, some do not, some have no document without a value)."""

from collections import Counter, defaultdict

import pytest

INDEX = "terms_missing_merge"

# Indexed in batches, each batch refreshed into a segment of its own.
BATCHES = [
    # the term "z" and documents without k
    [{"k": "a", "n": 1, "b": True, "v": 10}, {"n": 5, "v": 3}, {"k": "z", "v": 7},
     {"k": ["z", "a"], "n": 5, "v": 1}, {"v": 2, "b": False}],
    # no "z", documents without k
    [{"k": "a", "n": 2, "v": 4}, {"v": 8, "n": 5}, {"k": "c", "v": 6, "b": True}],
    # "z", every document has k
    [{"k": "z", "n": 5, "v": 9}, {"k": "c", "v": 11}],
    # "z" only in a multi-valued document, one document without k
    [{"k": ["q", "z"], "v": 12}, {"v": 13, "b": True}],
]
DOCS = [d for batch in BATCHES for d in batch]


@pytest.fixture(scope="module")
def index(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 1, "refresh_interval": -1},
                      mappings={"properties": {"k": {"type": "keyword"}, "n": {"type": "long"},
                                               "b": {"type": "boolean"}, "v": {"type": "long"}}})
    i = 0
    for batch in BATCHES:
        ops = []
        for d in batch:
            ops += [{"index": {"_index": INDEX, "_id": str(i)}}, d]
            i += 1
        es.bulk(operations=ops, refresh=True)
    yield INDEX
    es.indices.delete(index=INDEX)


def values(d, f, missing):
    v = d.get(f)
    if v is None:
        return [missing]
    return sorted(set(v)) if isinstance(v, list) else [v]


def groups(f, missing):
    out = defaultdict(list)
    for d in DOCS:
        for v in values(d, f, missing):
            out[v].append(d)
    return out


def check_terms(buckets, g, key=lambda k: k):
    got = {key(b["key"]): b for b in buckets}
    assert set(got) == set(g)
    for k, docs in g.items():
        b = got[k]
        assert b["doc_count"] == len(docs), k
        assert b["s"]["value"] == sum(d["v"] for d in docs), k
        assert b["top"]["hits"]["total"]["value"] == len(docs), k


SUBS = {"s": {"sum": {"field": "v"}}, "top": {"top_hits": {"size": 0}}}


def test_keyword_missing_equal_to_an_indexed_term(es, index):
    r = es.search(index=index, size=0, aggs={
        "t": {"terms": {"field": "k", "missing": "z", "size": 20}, "aggs": SUBS}})
    check_terms(r["aggregations"]["t"]["buckets"], groups("k", "z"))


def test_keyword_missing_not_indexed_is_its_own_bucket(es, index):
    r = es.search(index=index, size=0, aggs={
        "t": {"terms": {"field": "k", "missing": "none", "size": 20}, "aggs": SUBS}})
    check_terms(r["aggregations"]["t"]["buckets"], groups("k", "none"))


def test_keyword_missing_with_order_by_key_include_and_min_doc_count_0(es, index):
    g = groups("k", "z")
    r = es.search(index=index, size=0, aggs={
        "t": {"terms": {"field": "k", "missing": "z", "order": {"_key": "desc"},
                        "include": ["z", "a", "q"], "min_doc_count": 0}}})
    got = [(b["key"], b["doc_count"]) for b in r["aggregations"]["t"]["buckets"]]
    assert got == [(k, len(g[k])) for k in sorted(["z", "a", "q"], reverse=True)]


def test_keyword_missing_ordered_by_count_and_cut(es, index):
    g = groups("k", "z")
    r = es.search(index=index, size=0, aggs={
        "t": {"terms": {"field": "k", "missing": "z", "size": 1}}})
    best = max(g, key=lambda k: (len(g[k]), [-ord(c) for c in k]))
    b = r["aggregations"]["t"]["buckets"]
    assert [(x["key"], x["doc_count"]) for x in b] == [(best, len(g[best]))]
    assert r["aggregations"]["t"]["sum_other_doc_count"] == sum(
        len(v) for k, v in g.items() if k != best)


def test_numeric_missing_equal_to_an_indexed_value(es, index):
    r = es.search(index=index, size=0, aggs={
        "t": {"terms": {"field": "n", "missing": 5, "size": 20}, "aggs": SUBS}})
    check_terms(r["aggregations"]["t"]["buckets"], groups("n", 5))


def test_boolean_missing_equal_to_an_indexed_value(es, index):
    r = es.search(index=index, size=0, aggs={
        "t": {"terms": {"field": "b", "missing": True, "size": 20}, "aggs": SUBS}})
    g = groups("b", True)
    check_terms(r["aggregations"]["t"]["buckets"], {int(k): v for k, v in g.items()})


def test_multi_terms_missing_equal_to_an_indexed_term(es, index):
    r = es.search(index=index, size=0, aggs={
        "t": {"multi_terms": {"terms": [{"field": "k", "missing": "z"},
                                        {"field": "n", "missing": 5}], "size": 50},
              "aggs": SUBS}})
    g = defaultdict(list)
    for d in DOCS:
        for k in values(d, "k", "z"):
            for n in values(d, "n", 5):
                g[(k, n)].append(d)
    check_terms(r["aggregations"]["t"]["buckets"], g, key=tuple)


def test_rare_terms_missing_equal_to_an_indexed_term(es, index):
    r = es.search(index=index, size=0, aggs={
        "t": {"rare_terms": {"field": "k", "missing": "z", "max_doc_count": 100}}})
    g = groups("k", "z")
    got = {b["key"]: b["doc_count"] for b in r["aggregations"]["t"]["buckets"]}
    assert got == {k: len(v) for k, v in g.items()}


def test_counts_match_a_count_of_the_documents(es, index):
    """The merged bucket is the documents with the term or without any value."""
    r = es.search(index=index, size=0, aggs={"t": {"terms": {"field": "k", "missing": "z"}}})
    z = next(b for b in r["aggregations"]["t"]["buckets"] if b["key"] == "z")
    want = Counter("z" in values(d, "k", "z") for d in DOCS)[True]
    assert z["doc_count"] == want
    c = es.count(index=index, query={"bool": {"should": [
        {"term": {"k": "z"}}, {"bool": {"must_not": {"exists": {"field": "k"}}}}]}})
    assert c["count"] == want


@pytest.mark.parametrize("flt,keep", [
    ({"include": "z|a"}, lambda k: k in ("z", "a")),
    ({"include": "[ac]"}, lambda k: k in ("a", "c")),
    ({"exclude": ["z"]}, lambda k: k != "z"),
    ({"exclude": "q|c"}, lambda k: k not in ("q", "c")),
    ({"include": ["z", "q", "c"], "exclude": ["c"]}, lambda k: k in ("z", "q")),
])
def test_missing_goes_through_include_and_exclude_as_a_term(es, index, flt, keep):
    g = groups("k", "z")
    t = {"field": "k", "missing": "z", "size": 20}
    t.update(flt)
    r = es.search(index=index, size=0, aggs={"t": {"terms": t, "aggs": SUBS}})
    check_terms(r["aggregations"]["t"]["buckets"], {k: v for k, v in g.items() if keep(k)})


def test_missing_not_indexed_filtered_by_exclude(es, index):
    g = groups("k", "none")
    r = es.search(index=index, size=0, aggs={
        "t": {"terms": {"field": "k", "missing": "none", "exclude": "no.*"}, "aggs": SUBS}})
    check_terms(r["aggregations"]["t"]["buckets"], {k: v for k, v in g.items() if k != "none"})


def test_ip_missing_equal_to_an_indexed_address(es):
    """On an ip field the documents without an address and those with the `missing` address
    are one bucket too (with their sub-aggregations), across segments."""
    name = "terms_missing_ip"
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, settings={"number_of_shards": 1, "refresh_interval": -1},
                      mappings={"properties": {"ip": {"type": "ip"}, "v": {"type": "long"}}})
    batches = [[{"ip": "10.0.0.1", "v": 1}, {"v": 2}, {"ip": "10.0.0.2", "v": 4}],
               [{"v": 8}, {"ip": "10.0.0.2", "v": 16}],
               [{"ip": "10.0.0.1", "v": 32}]]
    i = 0
    for batch in batches:
        ops = []
        for d in batch:
            ops += [{"index": {"_index": name, "_id": str(i)}}, d]
            i += 1
        es.bulk(operations=ops, refresh=True)
    docs = [d for b in batches for d in b]
    r = es.search(index=name, size=0, aggs={"t": {"terms": {"field": "ip", "missing": "10.0.0.1"},
                                                  "aggs": {"s": {"sum": {"field": "v"}}}}})
    es.indices.delete(index=name)
    want = {}
    for d in docs:
        k = d.get("ip", "10.0.0.1")
        n, s = want.get(k, (0, 0))
        want[k] = (n + 1, s + d["v"])
    got = {b["key"]: (b["doc_count"], b["s"]["value"]) for b in r["aggregations"]["t"]["buckets"]}
    assert got == want

"""`terms` buckets of a high-cardinality keyword under a query that matches part of each segment.

The query's documents are counted per segment by column ordinal (into an array over the
dictionary when the query matches enough of them, else as a sorted list of ordinals), the
segments add up by global ordinal and only the buckets the shard's cut keeps are read back as
terms. The oracle counts the matching live documents' distinct values in Python; with one shard
the buckets, `sum_other_doc_count` and `doc_count_error_upper_bound` must be exactly
Elasticsearch's, for windows from a handful of documents to most of the index, after deletes and
updates, for every order. Metric sub-aggregations of a single-valued keyword's buckets are
collected afterwards over the kept buckets' documents only; their values are checked against the
oracle too. Also Elasticsearch's shard sizes: under a key order a shard returns
`size` candidates (not `size * 1.5 + 10`) before `min_doc_count` filters them, and an order by a
sub-aggregation makes the error unbounded (-1) even on one shard.
"""

import collections
import re
import random

import pytest

from conftest import make_index

INDEX = "terms_query_ords"
N_DOCS_PER_SEGMENT = [1500, 1900, 2300, 40]


def _term(rng):
    return "u%04d" % min(int(rng.paretovariate(0.7)), 4000)


def _doc(rng, i):
    src = {"n": i, "v": rng.randint(-50, 50)}
    if rng.random() < 0.95:
        src["owner"] = "o%04d" % min(int(rng.paretovariate(0.8)), 3000)
    if rng.random() < 0.93:
        src["name"] = _term(rng)
        if rng.random() < 0.15:
            src["name"] = [src["name"], _term(rng), _term(rng)]
    return src


@pytest.fixture(scope="module", params=[1, 2], ids=["one-shard", "two-shards"])
def loaded(es, request):
    shards = request.param
    index = f"{INDEX}_{shards}"
    rng = random.Random(240 + shards)
    make_index(es, index, {
        "settings": {"number_of_shards": shards, "refresh_interval": -1},
        "mappings": {"properties": {"name": {"type": "keyword"}, "n": {"type": "integer"},
                                    "v": {"type": "integer"}, "owner": {"type": "keyword"}}},
    }, [])
    live = {}
    doc_id = 0
    for count in N_DOCS_PER_SEGMENT:
        ops = []
        for _ in range(count):
            src = _doc(rng, doc_id)
            ops += [{"index": {"_index": index, "_id": str(doc_id)}}, src]
            live[str(doc_id)] = src
            doc_id += 1
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    ids = sorted(live, key=int)
    doomed = set(rng.sample(ids, 500))
    updated = set(rng.sample(sorted(set(ids) - doomed, key=int), 300))
    ops = []
    for i in sorted(doomed, key=int):
        ops.append({"delete": {"_index": index, "_id": i}})
        del live[i]
    for i in sorted(updated, key=int):
        src = _doc(rng, int(i))
        ops += [{"index": {"_index": index, "_id": i}}, src]
        live[i] = src
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield index, live
    es.indices.delete(index=index, ignore_unavailable=True)


def _counts(live, lo, hi):
    counts = collections.Counter()
    for src in live.values():
        if not lo <= src["n"] < hi:
            continue
        v = src.get("name")
        for t in set(v if isinstance(v, list) else ([] if v is None else [v])):
            counts[t] += 1
    return counts


def _ordered(counts, order):
    (key, direction), = order.items()
    rows = sorted(counts.items())  # key ascending breaks equal counts
    if key == "_count":
        rows.sort(key=lambda kv: kv[1], reverse=direction == "desc")
    elif direction == "desc":
        rows.reverse()
    return rows


def _window(width):
    total = sum(N_DOCS_PER_SEGMENT)
    lo = (width * 7919) % max(1, total - width)
    return lo, lo + width


ORDERS = [{"_count": "desc"}, {"_count": "asc"}, {"_key": "asc"}, {"_key": "desc"}]
# A handful of documents (ordinals listed), a few hundred, most of the index (counted densely).
WIDTHS = [6, 300, 5000]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "".join(f"{k}-{v}" for k, v in o.items()))
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("size", [1, 10, 40])
def test_buckets_under_a_query_equal_the_oracle(es, loaded, order, width, size):
    index, live = loaded
    lo, hi = _window(width)
    aggs = {"a": {"terms": {"field": "name", "size": size, "order": order}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query={"range": {"n": {"gte": lo, "lt": hi}}})["aggregations"]["a"]
    counts = _counts(live, lo, hi)
    assert counts, "the window must match documents"
    pairs = [(b["key"], b["doc_count"]) for b in got["buckets"]]
    assert got["sum_other_doc_count"] == sum(counts.values()) - sum(n for _, n in pairs)
    if index.endswith("_1"):
        assert pairs == _ordered(counts, order)[:size]
        # ES: unbounded (-1) when a shard filled its list under an order other than by key
        # or by count descending; otherwise none on a single shard.
        shard_size = size if "_key" in order else int(size * 1.5 + 10)
        unbounded = order == {"_count": "asc"} and len(counts) >= shard_size
        assert got["doc_count_error_upper_bound"] == (-1 if unbounded else 0)
    else:
        assert len(pairs) == min(size, len(counts))
        for key, n in pairs:
            assert n <= counts[key]


def test_key_order_cuts_each_shard_to_size_before_min_doc_count(es, loaded):
    index, live = loaded
    if not index.endswith("_1"):
        pytest.skip("the shard's cut is exact on one shard")
    lo, hi = _window(5000)
    counts = _counts(live, lo, hi)
    # Key descending: the rare terms (high numbers) come first, so the cut holds some.
    by_key = sorted(counts.items(), reverse=True)
    size = 30
    min_doc_count = max(2, sorted(counts.values())[len(counts) // 2])
    aggs = {"a": {"terms": {"field": "name", "size": size, "order": {"_key": "desc"},
                            "min_doc_count": min_doc_count}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query={"range": {"n": {"gte": lo, "lt": hi}}})["aggregations"]["a"]
    # ES: the shard returns its first `size` terms by key (also those under min_doc_count); the
    # reduce drops those under min_doc_count without counting them as others.
    expected = [(k, n) for k, n in by_key[:size] if n >= min_doc_count]
    assert len(expected) < size <= len([1 for _, n in by_key if n >= min_doc_count])
    assert [(b["key"], b["doc_count"]) for b in got["buckets"]] == expected
    assert got["sum_other_doc_count"] == sum(n for _, n in by_key[size:])


def test_an_order_by_a_sub_aggregation_has_an_unbounded_error(es, loaded):
    index, live = loaded
    lo, hi = _window(5000)
    counts = _counts(live, lo, hi)
    assert len(counts) > 3 * 1.5 + 10  # the shard fills its shard_size
    aggs = {"a": {"terms": {"field": "name", "size": 3, "order": {"m": "desc"},
                            "show_term_doc_count_error": True},
                  "aggs": {"m": {"max": {"field": "v"}}}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query={"range": {"n": {"gte": lo, "lt": hi}}})["aggregations"]["a"]
    assert got["doc_count_error_upper_bound"] == -1
    assert [b["doc_count_error_upper_bound"] for b in got["buckets"]] == [-1, -1, -1]
    # All the terms fit in the shard's list: the error is known (0 on one shard).
    aggs["a"]["terms"]["size"] = len(counts) + 1
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query={"range": {"n": {"gte": lo, "lt": hi}}})["aggregations"]["a"]
    if index.endswith("_1"):
        assert got["doc_count_error_upper_bound"] == 0


@pytest.mark.parametrize("order", [{"_count": "desc"}, {"_count": "asc"}, {"_key": "desc"}],
                         ids=lambda o: "".join(f"{k}-{v}" for k, v in o.items()))
@pytest.mark.parametrize("width", WIDTHS + [None])
def test_metric_sub_aggregations_of_the_kept_buckets(es, loaded, order, width):
    index, live = loaded
    if width is None:
        lo, hi, query = -1, 1 << 30, {"match_all": {}}
    else:
        lo, hi = _window(width)
        query = {"range": {"n": {"gte": lo, "lt": hi}}}
    size = 8
    aggs = {"a": {"terms": {"field": "owner", "size": size, "order": order},
                  "aggs": {"s": {"sum": {"field": "v"}}, "m": {"max": {"field": "v"}},
                           "c": {"value_count": {"field": "v"}},
                           "st": {"stats": {"field": "n"}}}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query=query)["aggregations"]["a"]
    docs = collections.defaultdict(list)
    for src in live.values():
        if lo <= src["n"] < hi and "owner" in src:
            docs[src["owner"]].append(src)
    counts = collections.Counter({k: len(v) for k, v in docs.items()})
    pairs = [(b["key"], b["doc_count"]) for b in got["buckets"]]
    assert got["sum_other_doc_count"] == sum(counts.values()) - sum(n for _, n in pairs)
    if index.endswith("_1"):
        assert pairs == _ordered(counts, order)[:size]
    for b in got["buckets"]:
        mine = docs[b["key"]]
        if index.endswith("_1"):
            assert b["doc_count"] == len(mine)
        else:
            assert b["doc_count"] <= len(mine)
            continue
        assert b["s"]["value"] == sum(d["v"] for d in mine)
        assert b["m"]["value"] == max(d["v"] for d in mine)
        assert b["c"]["value"] == len(mine)
        ns = [d["n"] for d in mine]
        assert (b["st"]["count"], b["st"]["min"], b["st"]["max"], b["st"]["sum"]) == \
            (len(ns), min(ns), max(ns), sum(ns))


FILTERS = [
    ({"include": "u00[0-4].*"}, lambda t: re.fullmatch("u00[0-4].*", t)),
    ({"exclude": "u000[0-9]|u01.*"}, lambda t: not re.fullmatch("u000[0-9]|u01.*", t)),
    ({"include": "u0.*", "exclude": ".*[13579]"},
     lambda t: re.fullmatch("u0.*", t) and not re.fullmatch(".*[13579]", t)),
    ({"include": ["u0001", "u0002", "u0007", "u0100", "nope"]},
     lambda t: t in {"u0001", "u0002", "u0007", "u0100"}),
    ({"exclude": ["u0001", "u0002", "u0003"]}, lambda t: t not in {"u0001", "u0002", "u0003"}),
]


@pytest.mark.parametrize("flt", range(len(FILTERS)))
@pytest.mark.parametrize("order", ORDERS[:3], ids=lambda o: "".join(f"{k}-{v}" for k, v in o.items()))
@pytest.mark.parametrize("width", WIDTHS + [None])
def test_include_and_exclude_drop_buckets_before_the_cut(es, loaded, flt, order, width):
    """A keyword include/exclude (regex or terms) keeps the buckets of the terms it accepts,
    counted as without it, and the others count nowhere (not in sum_other_doc_count)."""
    index, live = loaded
    spec, accepts = FILTERS[flt]
    if width is None:
        lo, hi, query = -1, 1 << 30, {"match_all": {}}
    else:
        lo, hi = _window(width)
        query = {"range": {"n": {"gte": lo, "lt": hi}}}
    size = 7
    aggs = {"a": {"terms": {"field": "name", "size": size, "order": order, **spec}}}
    got = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                    query=query)["aggregations"]["a"]
    counts = collections.Counter({k: n for k, n in _counts(live, lo, hi).items() if accepts(k)})
    pairs = [(b["key"], b["doc_count"]) for b in got["buckets"]]
    assert got["sum_other_doc_count"] == sum(counts.values()) - sum(n for _, n in pairs)
    if index.endswith("_1"):
        assert pairs == _ordered(counts, order)[:size]
    else:
        assert len(pairs) == min(size, len(counts))
        for key, n in pairs:
            assert n <= counts[key]

"""`terms` buckets of a high-cardinality keyword over every document of several segments.

Counted per segment from the column's ordinals, the counts add up by global ordinal and only the
buckets the shard's `shard_size` cut can keep are read back as terms. The oracle counts the live
documents' distinct values in Python (ES's order: the count, then the key ascending); the whole
aggregation (buckets, `sum_other_doc_count`, `doc_count_error_upper_bound`) must equal the one a
query that cannot take the counting path gives (a `match` every document matches), with one and
with two shards, after deletes and updates, for every order and several sizes.
"""

import collections
import random

import pytest

from conftest import make_index

INDEX = "terms_global_ords"


def _term(rng):
    # A long tail with heavy heads: many equal counts at any cut.
    return "u%04d" % min(int(rng.paretovariate(0.7)), 4000)


def _doc(rng, i):
    src = {"n": i, "filler": "x"}
    if rng.random() < 0.93:
        src["name"] = _term(rng)
        if rng.random() < 0.15:
            src["name"] = [src["name"], _term(rng), _term(rng)]
    return src


@pytest.fixture(scope="module", params=[1, 2], ids=["one-shard", "two-shards"])
def loaded(es, request):
    shards = request.param
    index = f"{INDEX}_{shards}"
    rng = random.Random(90 + shards)
    make_index(es, index, {
        "settings": {"number_of_shards": shards, "refresh_interval": -1},
        "mappings": {"properties": {"name": {"type": "keyword"}, "n": {"type": "integer"},
                                    "filler": {"type": "text"}}},
    }, [])
    live = {}
    doc_id = 0
    for seg in range(4):
        ops = []
        for _ in range(1500 + 400 * seg):
            src = _doc(rng, doc_id)
            ops += [{"index": {"_index": index, "_id": str(doc_id)}}, src]
            live[str(doc_id)] = src
            doc_id += 1
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    ids = sorted(live, key=int)
    doomed = set(rng.sample(ids, 400))
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


def _counts(live):
    counts = collections.Counter()
    for src in live.values():
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


ORDERS = [{"_count": "desc"}, {"_count": "asc"}, {"_key": "asc"}, {"_key": "desc"}]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "".join(f"{k}-{v}" for k, v in o.items()))
@pytest.mark.parametrize("size,shard_size", [(1, None), (10, None), (25, 25), (7, 200)])
def test_buckets_equal_the_collected_ones_and_the_oracle(es, loaded, order, size, shard_size):
    index, live = loaded
    terms = {"field": "name", "size": size, "order": order}
    if shard_size is not None:
        terms["shard_size"] = shard_size
    aggs = {"a": {"terms": terms}}
    counted = es.search(index=index, size=0, aggs=aggs, request_cache=False)["aggregations"]["a"]
    collected = es.search(index=index, size=0, aggs=aggs, request_cache=False,
                          query={"match": {"filler": "x"}})["aggregations"]["a"]
    assert counted == collected
    counts = _counts(live)
    got = [(b["key"], b["doc_count"]) for b in counted["buckets"]]
    total = sum(counts.values())
    assert counted["sum_other_doc_count"] == total - sum(n for _, n in got)
    if index.endswith("_1"):
        # One shard counts every term exactly.
        assert got == _ordered(counts, order)[:size]
    else:
        assert len(got) == min(size, len(counts))
        for key, n in got:
            assert n <= counts[key]


def test_repeated_requests_agree_after_a_refresh_adds_a_segment(es, loaded):
    index, live = loaded
    aggs = {"a": {"terms": {"field": "name", "size": 5}}}
    before = es.search(index=index, size=0, aggs=aggs, request_cache=False)["aggregations"]["a"]
    assert before == es.search(index=index, size=0, aggs=aggs,
                               request_cache=False)["aggregations"]["a"]
    top = before["buckets"][0]["key"]
    ops = []
    for i in range(300):
        ops += [{"index": {"_index": index, "_id": f"extra{i}"}}, {"name": top, "filler": "x"}]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    after = es.search(index=index, size=0, aggs=aggs, request_cache=False)["aggregations"]["a"]
    assert after["buckets"][0] == {"key": top, "doc_count": before["buckets"][0]["doc_count"] + 300}
    ops = [{"delete": {"_index": index, "_id": f"extra{i}"}} for i in range(300)]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    again = es.search(index=index, size=0, aggs=aggs, request_cache=False)["aggregations"]["a"]
    assert again == before

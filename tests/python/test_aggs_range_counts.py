"""`range` and `date_range` bucket counts where the query matches whole segments (counted from
the points index, deleted documents taken off) against an oracle over the live documents:
several segments, deletes and updates, documents without the field, `missing`, overlapping and
open ranges, a multi-valued segment, and the same ranges under a filter (collected per
document) for comparison."""
import random

import pytest

INDEX = "range_counts"
DAY = 86_400_000
T0 = 1_600_000_000_000


def doc(i, rng):
    d = {"n": i, "grp": i % 3}
    if i % 11:
        d["price"] = round(rng.uniform(-50, 1500), 2)
    if i % 13:
        d["qty"] = rng.randint(-20, 400)
    d["at"] = T0 + rng.randint(0, 400) * DAY + rng.randint(0, DAY - 1)
    return d


@pytest.fixture(scope="module")
def live(es):
    rng = random.Random(7)
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 1, "refresh_interval": -1},
                      mappings={"properties": {"price": {"type": "double"},
                                               "qty": {"type": "long"},
                                               "at": {"type": "date"},
                                               "grp": {"type": "integer"}}})
    docs = {}
    # Four segments of 600 documents.
    for seg in range(4):
        ops = []
        for i in range(seg * 600, seg * 600 + 600):
            docs[str(i)] = doc(i, rng)
            ops += [{"index": {"_index": INDEX, "_id": str(i)}}, docs[str(i)]]
        assert es.bulk(operations=ops)["errors"] is False
        es.indices.refresh(index=INDEX)
    # Deletes and updates spread over the segments (updates land in a new segment).
    ops = []
    for i in rng.sample(range(2400), 300):
        if i % 2:
            ops.append({"delete": {"_index": INDEX, "_id": str(i)}})
            docs.pop(str(i))
        else:
            docs[str(i)] = doc(i + 10_000, rng)
            ops += [{"index": {"_index": INDEX, "_id": str(i)}}, docs[str(i)]]
    assert es.bulk(operations=ops)["errors"] is False
    es.indices.refresh(index=INDEX)
    # A segment where some documents hold several values.
    ops = []
    for i in range(3000, 3100):
        d = doc(i, rng)
        if i % 4 == 0:
            d["qty"] = [rng.randint(-20, 400), rng.randint(-20, 400), 7]
            d["price"] = [5.5, round(rng.uniform(-50, 1500), 2)]
        docs[str(i)] = d
        ops += [{"index": {"_index": INDEX, "_id": str(i)}}, d]
    assert es.bulk(operations=ops)["errors"] is False
    es.indices.refresh(index=INDEX)
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def values(d, field):
    v = d.get(field)
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def oracle(docs, field, ranges, missing=None, where=lambda d: True):
    out = []
    for lo, hi in ranges:
        n = 0
        for d in docs.values():
            if not where(d):
                continue
            vs = values(d, field) or ([] if missing is None else [missing])
            if any((lo is None or v >= lo) and (hi is None or v < hi) for v in vs):
                n += 1
        out.append(n)
    return out


def spec(ranges):
    out = []
    for lo, hi in ranges:
        r = {}
        if lo is not None:
            r["from"] = lo
        if hi is not None:
            r["to"] = hi
        out.append(r)
    return out


def bucket_counts(resp, ranges):
    buckets = resp["aggregations"]["r"]["buckets"]
    assert len(buckets) == len(ranges)
    by = {(b.get("from"), b.get("to")): b["doc_count"] for b in buckets}
    return [by[(None if lo is None else float(lo), None if hi is None else float(hi))]
            for lo, hi in ranges]


NUMERIC_RANGES = [
    ("price", [(None, 100), (100, 1000), (1000, None)]),
    ("price", [(-10.5, 0), (0, 5.5), (5.5, 5.51), (200.25, 700), (650, 900), (None, None)]),
    ("qty", [(None, 0), (0, 7), (7, 8), (8, 200), (150, 250), (399, None)]),
    ("qty", [(1000, 2000), (-100, -50)]),
]


@pytest.mark.parametrize("field,ranges", NUMERIC_RANGES)
def test_range_counts_over_whole_segments(es, live, field, ranges):
    resp = es.search(index=INDEX, size=0, request_cache=False,
                     aggs={"r": {"range": {"field": field, "ranges": spec(ranges)}}})
    assert bucket_counts(resp, ranges) == oracle(live, field, ranges)


@pytest.mark.parametrize("field,ranges", NUMERIC_RANGES)
def test_range_counts_under_a_filter(es, live, field, ranges):
    resp = es.search(index=INDEX, size=0, request_cache=False,
                     query={"term": {"grp": 1}},
                     aggs={"r": {"range": {"field": field, "ranges": spec(ranges)}}})
    assert bucket_counts(resp, ranges) == oracle(live, field, ranges,
                                                 where=lambda d: d["grp"] == 1)


def test_missing_counts_documents_without_the_field(es, live):
    ranges = [(None, 0), (0, 100), (99, None)]
    for missing in (50, -1, 5000):
        resp = es.search(index=INDEX, size=0, request_cache=False,
                         aggs={"r": {"range": {"field": "price", "missing": missing,
                                               "ranges": spec(ranges)}}})
        assert bucket_counts(resp, ranges) == oracle(live, "price", ranges, missing=missing)


def test_keyed_ranges_and_a_sibling_metric(es, live):
    ranges = [(None, 100), (100, None)]
    resp = es.search(index=INDEX, size=0, request_cache=False, aggs={
        "r": {"range": {"field": "qty", "keyed": True,
                        "ranges": [{"key": "low", "to": 100}, {"key": "high", "from": 100}]}},
        "m": {"max": {"field": "qty"}}})
    got = resp["aggregations"]["r"]["buckets"]
    assert [got["low"]["doc_count"], got["high"]["doc_count"]] == oracle(live, "qty", ranges)
    assert resp["aggregations"]["m"]["value"] == max(v for d in live.values()
                                                     for v in values(d, "qty"))


def test_date_range_counts(es, live):
    cuts = [T0 + k * 50 * DAY for k in range(0, 9)]
    ranges = [(None, cuts[1])] + list(zip(cuts[1:-1], cuts[2:])) + [(cuts[-1], None)]
    resp = es.search(index=INDEX, size=0, request_cache=False, aggs={
        "r": {"date_range": {"field": "at", "ranges": spec(ranges)}}})
    assert bucket_counts(resp, ranges) == oracle(live, "at", ranges)


def test_range_with_a_sub_aggregation_still_counts(es, live):
    ranges = [(None, 100), (100, 1000), (1000, None)]
    resp = es.search(index=INDEX, size=0, request_cache=False, aggs={
        "r": {"range": {"field": "price", "ranges": spec(ranges)},
              "aggs": {"c": {"value_count": {"field": "qty"}}}}})
    assert bucket_counts(resp, ranges) == oracle(live, "price", ranges)

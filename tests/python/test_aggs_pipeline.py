"""Pipeline aggregations checked against an oracle computed in Python from the documents:
a histogram of `day` with a sum of `v` per bucket, and the pipelines over it."""

import math
import random
import statistics

import pytest
from elasticsearch import BadRequestError

INDEX = "pipelines"


@pytest.fixture(scope="module")
def docs(es):
    rng = random.Random(5)
    docs = [{"day": rng.randrange(0, 20), "v": rng.randrange(-50, 100), "tag": rng.choice("abc")}
            for _ in range(400)]
    docs = [d for d in docs if d["day"] != 7]  # an empty bucket in the middle
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, mappings={"properties": {
        "day": {"type": "integer"}, "v": {"type": "long"}, "tag": {"type": "keyword"}}})
    ops = []
    for i, d in enumerate(docs):
        ops += [{"index": {"_index": INDEX, "_id": str(i)}}, d]
    assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def per_day(docs):
    """{day: (count, sum)} for every day from the first to the last (min_doc_count 0)."""
    days = range(min(d["day"] for d in docs), max(d["day"] for d in docs) + 1)
    return {day: (sum(1 for d in docs if d["day"] == day),
                  sum(d["v"] for d in docs if d["day"] == day)) for day in days}


HIST = {"histogram": {"field": "day", "interval": 1, "min_doc_count": 0}}


def run(es, aggs, **kw):
    return es.search(index=INDEX, size=0, aggs=aggs, **kw)["aggregations"]


def test_parent_pipelines(es, docs):
    aggs = {"h": dict(HIST, aggs={
        "s": {"sum": {"field": "v"}},
        "d": {"derivative": {"buckets_path": "s"}},
        "dc": {"derivative": {"buckets_path": "_count"}},
        "c": {"cumulative_sum": {"buckets_path": "s"}},
        "sd": {"serial_diff": {"buckets_path": "s", "lag": 3}},
    })}
    buckets = run(es, aggs)["h"]["buckets"]
    want = per_day(docs)
    assert [b["key"] for b in buckets] == list(want)
    sums = [want[b["key"]][1] for b in buckets]
    counts = [want[b["key"]][0] for b in buckets]
    # ES (BucketHelpers.resolveBucketValue): an empty bucket is a gap (skipped) for derivative
    # and serial_diff, zero for the sum; its `_count` is never a gap.
    vals = [s if c else None for s, c in zip(sums, counts)]
    cvals = counts
    assert None in vals

    def diff(a, b):
        return None if a is None or b is None else a - b

    running = 0
    for i, b in enumerate(buckets):
        assert b["s"]["value"] == sums[i]
        running += sums[i]
        assert b["c"]["value"] == running
        if i == 0:
            assert "d" not in b and "dc" not in b
        else:
            assert b["d"]["value"] == diff(vals[i], vals[i - 1])
            assert b["dc"]["value"] == diff(cvals[i], cvals[i - 1])
        if i >= 3 and diff(vals[i], vals[i - 3]) is not None:
            assert b["sd"]["value"] == vals[i] - vals[i - 3]
        else:
            assert "sd" not in b


def test_sibling_pipelines(es, docs):
    aggs = {"h": dict(HIST, aggs={"s": {"sum": {"field": "v"}}}),
            "avg": {"avg_bucket": {"buckets_path": "h>s"}},
            "sum": {"sum_bucket": {"buckets_path": "h>s"}},
            "min": {"min_bucket": {"buckets_path": "h>s"}},
            "max": {"max_bucket": {"buckets_path": "h>s"}},
            "maxc": {"max_bucket": {"buckets_path": "h>_count"}},
            "st": {"stats_bucket": {"buckets_path": "h>s"}},
            "ex": {"extended_stats_bucket": {"buckets_path": "h>s"}},
            "pc": {"percentiles_bucket": {"buckets_path": "h>s", "percents": [10, 50, 99]}}}
    r = run(es, aggs)
    want = per_day(docs)
    # Empty buckets are gaps: skipped by every sibling pipeline (gap_policy skip).
    want = {d: cs for d, cs in want.items() if cs[0]}
    sums = [s for _, s in want.values()]
    assert r["avg"]["value"] == pytest.approx(statistics.mean(sums))
    assert r["sum"]["value"] == sum(sums)
    assert r["min"]["value"] == min(sums)
    # Histogram keys are doubles in ES: the bucket key 3 is "3.0".
    assert r["min"]["keys"] == [f"{float(d)}" for d, (_, s) in want.items() if s == min(sums)]
    assert r["max"]["keys"] == [f"{float(d)}" for d, (_, s) in want.items() if s == max(sums)]
    assert r["max"]["value"] == max(sums)
    assert r["maxc"]["value"] == max(c for c, _ in want.values())
    st = r["st"]
    assert (st["count"], st["min"], st["max"], st["sum"]) == (len(sums), min(sums), max(sums), sum(sums))
    assert st["avg"] == pytest.approx(statistics.mean(sums))
    assert r["ex"]["std_deviation"] == pytest.approx(statistics.pstdev(sums))
    assert r["ex"]["variance"] == pytest.approx(statistics.pvariance(sums))
    ordered = sorted(sums)
    for p in (10, 50, 99):
        i = int(math.floor(p / 100 * (len(ordered) - 1) + 0.5))
        assert r["pc"]["values"][f"{float(p)}"] == ordered[i]


def test_sibling_pipeline_inside_buckets_and_gap_policy(es, docs):
    aggs = {"t": {"terms": {"field": "tag"}, "aggs": {
        "h": dict(HIST, aggs={"s": {"sum": {"field": "v"}}}),
        "best": {"max_bucket": {"buckets_path": "h>s"}},
        "avg0": {"avg_bucket": {"buckets_path": "h>s", "gap_policy": "insert_zeros"}},
        "avgc": {"avg_bucket": {"buckets_path": "h>_count"}}}}}
    for b in run(es, aggs)["t"]["buckets"]:
        mine = [d for d in docs if d["tag"] == b["key"]]
        want = per_day(mine)
        present = [cs for cs in want.values() if cs[0]]
        assert b["best"]["value"] == max(s for _, s in present)
        # `_count` is never a gap (ES's resolveBucketValue): empty buckets count as 0.
        assert b["avgc"]["value"] == pytest.approx(statistics.mean(c for c, _ in want.values()))
        # insert_zeros counts the empty buckets as zeros.
        assert b["avg0"]["value"] == pytest.approx(statistics.mean(s for _, s in want.values()))


def test_bucket_sort(es, docs):
    aggs = {"h": dict(HIST, aggs={"s": {"sum": {"field": "v"}},
                                   "top": {"bucket_sort": {"sort": [{"s": {"order": "desc"}}], "from": 1, "size": 3}}})}
    buckets = run(es, aggs)["h"]["buckets"]
    want = sorted(per_day(docs).items(), key=lambda kv: -kv[1][1])[1:4]
    assert [b["s"]["value"] for b in buckets] == [s for _, (_, s) in want]


def test_typed_keys_and_errors(es, docs):
    aggs = {"h": dict(HIST, aggs={"s": {"sum": {"field": "v"}}, "d": {"derivative": {"buckets_path": "s"}}}),
            "m": {"max_bucket": {"buckets_path": "h>s"}}}
    r = es.search(index=INDEX, size=0, aggs=aggs, typed_keys=True)["aggregations"]
    assert "bucket_metric_value#m" in r and "derivative#d" in r["histogram#h"]["buckets"][1]
    for bad in ({"d": {"derivative": {"buckets_path": "x"}}},
                {"h": dict(HIST), "m": {"max_bucket": {"buckets_path": "h>nope"}}},
                {"t": {"terms": {"field": "tag"}, "aggs": {"d": {"derivative": {"buckets_path": "_count"}}}}},
                {"h": dict(HIST), "m": {"max_bucket": {"buckets_path": "h>_count", "bogus": 1}}},
                {"h": dict(HIST), "m": {"max_bucket": {}}},
                {"h": dict(HIST), "m": {"bucket_script": {"buckets_path": {"a": "_count"}, "script": "params.a"}}}):
        with pytest.raises(BadRequestError):
            run(es, bad)

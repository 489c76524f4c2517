"""`auto_date_histogram` and `variable_width_histogram` inside `nested`: each enclosing
bucket's nested objects are read for the interval (or the clusters), and each bucket's
sub-aggregations see the objects in it. Expected buckets are computed here in Python from
the documents this file indexes, with the algorithms of test_aggs_auto_date and
test_aggs_vwh."""

import datetime as dt
import random

import pytest

from conftest import make_index
from test_aggs_auto_date import expected as auto_expected
from test_aggs_vwh import reduce, shard_clusters

INDEX = "nested_per_bucket"
UTC = dt.timezone.utc
BASE = dt.datetime(2022, 5, 1, tzinfo=UTC)


def _docs():
    rnd = random.Random(31)
    docs = []
    for i in range(40):
        k = rnd.choice("ab")
        spread = {"a": 3, "b": 400}[k]
        objs = [{"d": int((BASE + dt.timedelta(days=rnd.randrange(0, spread),
                                               hours=rnd.randrange(0, 24))).timestamp() * 1000),
                 "n": rnd.choice([5, 50, 500]) + rnd.randrange(0, 5)}
                for _ in range(rnd.randrange(1, 4))]
        docs.append({"k": k, "c": objs})
    return docs


DOCS = _docs()


@pytest.fixture(scope="module")
def nested(es):
    body = {"settings": {"number_of_shards": 1}, "mappings": {"properties": {
        "k": {"type": "keyword"},
        "c": {"type": "nested", "properties": {"d": {"type": "date"}, "n": {"type": "long"}}}}}}
    return make_index(es, INDEX, body, [(str(i), d) for i, d in enumerate(DOCS)])


def objects(k):
    return [o for d in DOCS if d["k"] == k for o in d["c"]]


def test_auto_date_histogram_inside_nested(es, nested):
    r = es.search(index=INDEX, size=0, aggs={"t": {"terms": {"field": "k"}, "aggs": {
        "c": {"nested": {"path": "c"}, "aggs": {
            "h": {"auto_date_histogram": {"field": "c.d", "buckets": 5},
                  "aggs": {"s": {"sum": {"field": "c.n"}}}}}}}}}).body["aggregations"]
    assert {b["key"] for b in r["t"]["buckets"]} == {"a", "b"}
    for b in r["t"]["buckets"]:
        objs = objects(b["key"])
        h = b["c"]["h"]
        interval, buckets = auto_expected([o["d"] for o in objs], 5)
        assert h["interval"] == interval
        assert [(x["key"], x["doc_count"]) for x in h["buckets"]] == buckets
        starts = [k for k, _ in buckets] + [float("inf")]
        for i, x in enumerate(h["buckets"]):
            assert x["s"]["value"] == sum(o["n"] for o in objs if starts[i] <= o["d"] < starts[i + 1])


def test_variable_width_histogram_inside_nested(es, nested):
    r = es.search(index=INDEX, size=0, aggs={"t": {"terms": {"field": "k"}, "aggs": {
        "c": {"nested": {"path": "c"}, "aggs": {
            "v": {"variable_width_histogram": {"field": "c.n", "buckets": 3},
                  "aggs": {"s": {"sum": {"field": "c.n"}}}}}}}}}).body["aggregations"]
    for b in r["t"]["buckets"]:
        objs = objects(b["key"])
        # One shard: the objects in document order, each object's value once.
        want = reduce([shard_clusters([float(o["n"]) for o in objs], 150, 1500)], 3)
        got = b["c"]["v"]["buckets"]
        assert [(g["min"], g["max"], g["doc_count"]) for g in got] == [(lo, hi, n) for lo, hi, _, n in want]
        for i, g in enumerate(got):
            hi = got[i + 1]["min"] if i + 1 < len(got) else g["max"] + 0.5
            assert g["s"]["value"] == sum(o["n"] for o in objs if g["min"] <= o["n"] < hi)

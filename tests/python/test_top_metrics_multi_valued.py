"""`top_metrics` on documents with several values, as ES 8's `TopMetricsAggregator`.

Oracle (from ES's source): a numeric metric is `MultiValueMode.AVG` of the document's values
(longs: the sum divided and rounded with Java's `Math.round`, i.e. halves towards +inf;
doubles: the sum over the values in ascending order, divided); a keyword metric is the
document's smallest value (the first segment ordinal); a date metric is the rounded average
of its epoch milliseconds, formatted. The sort field's value per document is chosen by the
sort's mode, default `min` ascending and `max` descending (`FieldSortBuilder`); documents
without a sort value are skipped.
"""

import datetime
import math
import random

import pytest

from conftest import make_index

INDEX = "top_metrics_multi"


def java_round(x):
    return math.floor(x + 0.5) if x - math.floor(x) != 0.5 else math.floor(x) + 1


def avg_long(vals):
    if len(vals) == 1:
        return vals[0]
    return java_round(sum(vals) / len(vals))


def avg_double(vals):
    total = 0.0
    for v in sorted(vals):
        total += v
    return total / len(vals)


def as_list(v):
    return v if isinstance(v, list) else [v]


def fmt_millis(ms):
    dt = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(
        milliseconds=ms)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def make_docs(seed):
    rng = random.Random(seed)
    docs = []
    sort_values = rng.sample(range(-500, 500), 80)  # distinct: no ties
    for i in range(40):
        doc = {"g": "a" if i % 2 else "b"}
        k = rng.randint(0, 3)
        if k:
            doc["s"] = [sort_values.pop() for _ in range(k)]
        k = rng.randint(0, 4)
        if k:
            doc["l"] = [rng.randint(-9, 9) for _ in range(k)] if k > 1 else rng.randint(-9, 9)
        k = rng.randint(0, 3)
        if k:
            doc["d"] = [rng.choice([0.1, 0.2, 0.3, 1.5, -2.25, 7.0]) for _ in range(k)]
        k = rng.randint(0, 3)
        if k:
            doc["k"] = [rng.choice(["pear", "apple", "fig", "kiwi"]) for _ in range(k)]
        k = rng.randint(0, 2)
        if k:
            doc["t"] = [rng.randint(0, 10**12) for _ in range(k)]
        docs.append((str(i), doc))
    return docs


@pytest.fixture(scope="module")
def index(es):
    docs = make_docs(7)
    make_index(es, INDEX, {
        "settings": {"number_of_shards": 2},
        "mappings": {"properties": {
            "g": {"type": "keyword"}, "s": {"type": "long"}, "l": {"type": "long"},
            "d": {"type": "double"}, "k": {"type": "keyword"}, "t": {"type": "date"},
        }},
    }, docs)
    yield docs
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def oracle(docs, order, size, group=None):
    rows = []
    for _, d in docs:
        if group is not None and d["g"] != group:
            continue
        if "s" not in d:
            continue
        s = min(d["s"]) if order == "asc" else max(d["s"])
        metrics = {
            "l": avg_long(as_list(d["l"])) if "l" in d else None,
            "d": avg_double(as_list(d["d"])) if "d" in d else None,
            "k": min(d["k"]) if "k" in d else None,
            "t": fmt_millis(avg_long(d["t"])) if "t" in d else None,
        }
        rows.append((s, metrics))
    rows.sort(key=lambda r: r[0], reverse=(order == "desc"))
    return [{"sort": [s], "metrics": m} for s, m in rows[:size]]


@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("size", [1, 5])
def test_multi_valued_metrics_and_sort(es, index, order, size):
    resp = es.search(index=INDEX, size=0, aggs={
        "tm": {"top_metrics": {"metrics": [{"field": f} for f in ["l", "d", "k", "t"]],
                               "sort": {"s": order}, "size": size}},
        "by_g": {"terms": {"field": "g"}, "aggs": {
            "tm": {"top_metrics": {"metrics": [{"field": "l"}, {"field": "d"}],
                                   "sort": {"s": {"order": order}}, "size": size}}}},
    })["aggregations"]
    got = resp["tm"]["top"]
    want = oracle(index, order, size)
    assert [g["sort"] for g in got] == [w["sort"] for w in want]
    for g, w in zip(got, want):
        assert g["metrics"]["l"] == w["metrics"]["l"]
        assert g["metrics"]["k"] == w["metrics"]["k"]
        assert g["metrics"]["t"] == w["metrics"]["t"]
        assert g["metrics"]["d"] == w["metrics"]["d"]
    for b in resp["by_g"]["buckets"]:
        want = oracle(index, order, size, group=b["key"])
        got = b["tm"]["top"]
        assert [g["sort"] for g in got] == [w["sort"] for w in want]
        assert [g["metrics"]["l"] for g in got] == [w["metrics"]["l"] for w in want]
        assert [g["metrics"]["d"] for g in got] == [w["metrics"]["d"] for w in want]


def test_sort_mode_is_honoured(es, index):
    for mode, pick in [("max", max), ("min", min)]:
        got = es.search(index=INDEX, size=0, aggs={"tm": {"top_metrics": {
            "metrics": {"field": "l"}, "sort": {"s": {"order": "asc", "mode": mode}},
            "size": 3}}})["aggregations"]["tm"]["top"]
        rows = sorted(pick(d["s"]) for _, d in index if "s" in d)
        assert [g["sort"] for g in got] == [[s] for s in rows[:3]]

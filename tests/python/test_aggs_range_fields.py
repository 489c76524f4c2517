"""histogram and date_histogram on range fields: a document counts once in every bucket one of
its ranges overlaps (ES's RangeHistogramAggregator and DateRangeHistogramAggregator). Expected
buckets are computed here from the documents the test indexes."""

import datetime as dt
import math
import random
from zoneinfo import ZoneInfo

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "range_aggs"
UTC = dt.timezone.utc

MAPPING = {
    "settings": {"number_of_shards": 3},
    "mappings": {
        "properties": {
            "l": {"type": "long_range"},
            "dr": {"type": "double_range"},
            "t": {"type": "date_range"},
            "ip": {"type": "ip_range"},
            "n": {"type": "long"},
        }
    },
}


def ms(d):
    return int(d.timestamp() * 1000)


def make_docs():
    rng = random.Random(11)
    docs = []
    base = dt.datetime(2021, 1, 1, tzinfo=UTC)
    for i in range(60):
        src = {"n": i}
        # One to three long ranges, inclusive bounds [a, b]; some written with `lt`.
        ls = []
        for _ in range(rng.randint(1, 3)):
            a = rng.randint(-40, 80)
            b = a + rng.randint(0, 25)
            ls.append((a, b))
        src["l"] = [
            {"gte": a, "lte": b} if j % 2 == 0 else {"gte": a, "lt": b + 1}
            for j, (a, b) in enumerate(ls)
        ]
        a = rng.uniform(-5, 5)
        src["dr"] = {"gte": a, "lte": a + rng.uniform(0, 3)}
        start = base + dt.timedelta(hours=rng.randint(0, 24 * 200))
        end = start + dt.timedelta(hours=rng.randint(0, 24 * 70))
        src["t"] = {"gte": ms(start), "lte": ms(end)}
        docs.append((str(i), src, ls, (src["dr"]["gte"], src["dr"]["lte"]), (ms(start), ms(end))))
    return docs


DOCS = make_docs()


@pytest.fixture(scope="module")
def index(es):
    make_index(es, INDEX, MAPPING, [(i, s) for i, s, *_ in DOCS])
    yield INDEX
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def search(es, aggs):
    return es.search(index=INDEX, body={"size": 0, "aggs": aggs}).body["aggregations"]


def numeric_keys(ranges, interval, offset, hard=(None, None)):
    """The bucket numbers a document's ranges overlap (ES clips each range to hard bounds)."""
    keys = set()
    for a, b in ranges:
        if hard[0] is not None:
            a = max(a, hard[0])
        if hard[1] is not None:
            b = min(b, hard[1])
        for k in range(math.floor((a - offset) / interval), math.floor((b - offset) / interval) + 1):
            keys.add(k)
    return keys


def expected_numeric(ranges_per_doc, interval, offset, hard=(None, None), min_doc_count=0):
    counts = {}
    members = {}
    for doc, ranges in ranges_per_doc:
        for k in numeric_keys(ranges, interval, offset, hard):
            counts[k] = counts.get(k, 0) + 1
            members.setdefault(k, []).append(doc)
    lo, hi = min(counts), max(counts)
    out = []
    for k in range(lo, hi + 1):
        c = counts.get(k, 0)
        if c >= min_doc_count:
            out.append((k * interval + offset, c, members.get(k, [])))
    return out


def test_histogram_on_long_range_with_offset_and_sub_aggs(es, index):
    got = search(es, {"h": {"histogram": {"field": "l", "interval": 7, "offset": 3},
                            "aggs": {"s": {"sum": {"field": "n"}}}}})["h"]["buckets"]
    want = expected_numeric([(i, ls) for i, _, ls, _, _ in DOCS], 7, 3)
    assert [(b["key"], b["doc_count"]) for b in got] == [(k, c) for k, c, _ in want]
    sums = {k: sum(int(d) for d in m) for k, _, m in want}
    assert [b["s"]["value"] for b in got] == [float(sums[k]) for k, _, _ in want]


def test_histogram_on_long_range_keyed_min_doc_count(es, index):
    got = search(es, {"h": {"histogram": {"field": "l", "interval": 10, "keyed": True,
                                          "min_doc_count": 5}}})["h"]["buckets"]
    want = expected_numeric([(i, ls) for i, _, ls, _, _ in DOCS], 10, 0, min_doc_count=5)
    assert {k: b["doc_count"] for k, b in got.items()} == {
        str(float(k)): c for k, c, _ in want}


def test_histogram_hard_and_extended_bounds(es, index):
    got = search(es, {"h": {"histogram": {"field": "l", "interval": 5,
                                          "hard_bounds": {"min": 0, "max": 30},
                                          "extended_bounds": {"min": -50, "max": 100}}}})
    want = expected_numeric([(i, ls) for i, _, ls, _, _ in DOCS], 5, 0, hard=(0, 30))
    counts = {k: c for k, c, _ in want}
    # Extended bounds are clipped to the hard bounds: buckets 0 to 30.
    assert [(b["key"], b["doc_count"]) for b in got["h"]["buckets"]] == [
        (float(k), counts.get(k, 0)) for k in range(0, 31, 5)]


def test_histogram_on_double_range_with_top_hits(es, index):
    got = search(es, {"h": {"histogram": {"field": "dr", "interval": 1.5},
                            "aggs": {"top": {"top_hits": {"size": 100, "_source": False}}}}})
    want = expected_numeric([(i, [r]) for i, _, _, r, _ in DOCS], 1.5, 0)
    assert [(b["key"], b["doc_count"]) for b in got["h"]["buckets"]] == [
        (k, c) for k, c, _ in want]
    for b, (_, _, members) in zip(got["h"]["buckets"], want):
        assert sorted(h["_id"] for h in b["top"]["hits"]["hits"]) == sorted(members)


def month_start(t, tz):
    d = dt.datetime.fromtimestamp(t / 1000, tz)
    return dt.datetime(d.year, d.month, 1, tzinfo=tz)


def next_month(d):
    return d.replace(year=d.year + (d.month == 12), month=d.month % 12 + 1)


def test_date_histogram_calendar_month_in_time_zone(es, index):
    tz = ZoneInfo("America/New_York")
    counts = {}
    for _, _, _, _, (a, b) in DOCS:
        m, end = month_start(a, tz), month_start(b, tz)
        while m <= end:
            counts[ms(m)] = counts.get(ms(m), 0) + 1
            m = next_month(m)
    got = search(es, {"h": {"date_histogram": {"field": "t", "calendar_interval": "month",
                                               "time_zone": "America/New_York"}}})
    keys = sorted(counts)
    assert [(b["key"], b["doc_count"]) for b in got["h"]["buckets"]] == [
        (k, counts[k]) for k in keys]
    first = dt.datetime.fromtimestamp(keys[0] / 1000, tz).isoformat(timespec="milliseconds")
    assert got["h"]["buckets"][0]["key_as_string"] == first


def test_date_histogram_fixed_interval_offset_hard_bounds(es, index):
    interval, offset = 12 * 3600_000, 5 * 3600_000
    lo = ms(dt.datetime(2021, 3, 1, tzinfo=UTC))
    hi = ms(dt.datetime(2021, 4, 15, tzinfo=UTC))
    counts = {}
    for _, _, _, _, (a, b) in DOCS:
        a, b = max(a, lo), min(b, hi)
        for k in range((a - offset) // interval, (b - offset) // interval + 1):
            counts[k] = counts.get(k, 0) + 1
    got = search(es, {"h": {"date_histogram": {
        "field": "t", "fixed_interval": "12h", "offset": "+5h", "min_doc_count": 1,
        "hard_bounds": {"min": lo, "max": hi}}}})
    assert [(b["key"], b["doc_count"]) for b in got["h"]["buckets"]] == [
        (k * interval + offset, c) for k, c in sorted(counts.items())]


def test_unsupported_range_types_are_refused(es, index):
    with pytest.raises(BadRequestError) as e:
        search(es, {"h": {"histogram": {"field": "ip", "interval": 1}}})
    assert "Expected numeric range type but found non-numeric range [ip_range]" in str(e.value)
    with pytest.raises(BadRequestError) as e:
        search(es, {"h": {"date_histogram": {"field": "l", "fixed_interval": "1d"}}})
    assert "Expected date range type but found range type [long_range]" in str(e.value)
    with pytest.raises(BadRequestError):
        search(es, {"h": {"terms": {"field": "l"}}})
    with pytest.raises(BadRequestError) as e:
        search(es, {"h": {"auto_date_histogram": {"field": "t"}}})
    assert "Field [t] of type [date_range] is not supported for aggregation [auto_date_histogram]" in str(e.value)

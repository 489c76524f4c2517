"""`histogram` and `date_histogram` buckets where the query matches whole segments (counted from
the points index, deleted documents taken off) against an oracle over the live documents:
several segments, deletes and updates, documents without the field, a multi-valued segment,
fixed and calendar intervals, offsets, time zones across DST changes, and the same buckets under
a filter (collected per document)."""
import datetime as dt
import math
import random
from zoneinfo import ZoneInfo

import pytest

INDEX = "histogram_counts"
DAY = 86_400_000
T0 = 1_577_836_800_000  # 2020-01-01T00:00:00Z


def doc(i, rng):
    d = {"n": i, "grp": i % 3}
    if i % 11:
        d["price"] = round(rng.uniform(-50, 1500), 2)
    if i % 13:
        d["qty"] = rng.randint(-20, 400)
    if i % 17:
        d["at"] = T0 + rng.randint(0, 900) * DAY + rng.randint(0, DAY - 1)
    return d


@pytest.fixture(scope="module")
def live(es):
    rng = random.Random(11)
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, settings={"number_of_shards": 1, "refresh_interval": -1},
                      mappings={"properties": {"price": {"type": "double"},
                                               "qty": {"type": "long"},
                                               "at": {"type": "date"},
                                               "grp": {"type": "integer"}}})
    docs = {}
    for seg in range(4):
        ops = []
        for i in range(seg * 700, seg * 700 + 700):
            docs[str(i)] = doc(i, rng)
            ops += [{"index": {"_index": INDEX, "_id": str(i)}}, docs[str(i)]]
        assert es.bulk(operations=ops)["errors"] is False
        es.indices.refresh(index=INDEX)
    ops = []
    for i in rng.sample(range(2800), 350):
        if i % 2:
            ops.append({"delete": {"_index": INDEX, "_id": str(i)}})
            docs.pop(str(i))
        else:
            docs[str(i)] = doc(i + 10_000, rng)
            ops += [{"index": {"_index": INDEX, "_id": str(i)}}, docs[str(i)]]
    assert es.bulk(operations=ops)["errors"] is False
    es.indices.refresh(index=INDEX)
    ops = []
    for i in range(5000, 5120):
        d = doc(i, rng)
        if i % 4 == 0:
            d["qty"] = [rng.randint(-20, 400), 7, 7]
            d["price"] = [5.5, round(rng.uniform(-50, 1500), 2)]
            d["at"] = [T0, T0 + rng.randint(0, 900) * DAY]
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


def oracle(docs, field, key_of, where=lambda d: True):
    out = {}
    for d in docs.values():
        if not where(d):
            continue
        for k in {key_of(v) for v in values(d, field)}:
            out[k] = out.get(k, 0) + 1
    return out


def got(resp):
    return {b["key"]: b["doc_count"] for b in resp["aggregations"]["h"]["buckets"]
            if b["doc_count"] > 0}


def search(es, agg, query=None):
    body = {"size": 0, "aggs": {"h": agg}}
    if query:
        body["query"] = query
    return es.search(index=INDEX, request_cache=False, **body)


@pytest.mark.parametrize("field,interval,offset", [
    ("qty", 10, 0), ("qty", 7, 3), ("qty", 1, 0), ("price", 100, 0), ("price", 2.5, 0.5),
    ("price", 1000, -25),
])
@pytest.mark.parametrize("filtered", [False, True])
def test_histogram(es, live, field, interval, offset, filtered):
    where = (lambda d: d["grp"] == 2) if filtered else (lambda d: True)
    query = {"term": {"grp": 2}} if filtered else None
    resp = search(es, {"histogram": {"field": field, "interval": interval, "offset": offset}},
                  query)
    want = oracle(live, field, lambda v: math.floor((v - offset) / interval) * interval + offset,
                  where)
    assert got(resp) == {float(k): n for k, n in want.items()}


def test_histogram_with_empty_buckets_and_extended_bounds(es, live):
    resp = search(es, {"histogram": {"field": "qty", "interval": 50, "min_doc_count": 0,
                                     "extended_bounds": {"min": -200, "max": 600}}})
    buckets = resp["aggregations"]["h"]["buckets"]
    assert [b["key"] for b in buckets] == [float(k) for k in range(-200, 601, 50)]
    want = oracle(live, "qty", lambda v: math.floor(v / 50) * 50)
    assert {b["key"]: b["doc_count"] for b in buckets} == {
        float(k): want.get(k, 0) for k in range(-200, 601, 50)}


@pytest.mark.parametrize("interval,offset", [("1d", None), ("7d", None), ("30d", "+6h"),
                                             ("90m", None)])
@pytest.mark.parametrize("filtered", [False, True])
def test_date_histogram_fixed(es, live, interval, offset, filtered):
    ms = {"1d": DAY, "7d": 7 * DAY, "30d": 30 * DAY, "90m": 90 * 60_000}[interval]
    off = 6 * 3_600_000 if offset == "+6h" else 0
    agg = {"date_histogram": {"field": "at", "fixed_interval": interval}}
    if offset:
        agg["date_histogram"]["offset"] = offset
    where = (lambda d: d["grp"] == 0) if filtered else (lambda d: True)
    resp = search(es, agg, {"term": {"grp": 0}} if filtered else None)
    want = oracle(live, "at", lambda v: (v - off) // ms * ms + off, where)
    assert got(resp) == want


def calendar_start(ms, unit, tz):
    t = dt.datetime.fromtimestamp(ms / 1000, tz)
    if unit == "month":
        s = t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "quarter":
        s = t.replace(month=(t.month - 1) // 3 * 3 + 1, day=1, hour=0, minute=0, second=0,
                      microsecond=0)
    elif unit == "year":
        s = t.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "week":
        s = (t - dt.timedelta(days=t.weekday())).replace(hour=0, minute=0, second=0,
                                                          microsecond=0)
    else:
        s = t.replace(hour=0, minute=0, second=0, microsecond=0)
    # Local midnight re-resolved in the zone (the offset of that day, not of `t`).
    s = dt.datetime(s.year, s.month, s.day, tzinfo=tz)
    return int(s.timestamp() * 1000)


@pytest.mark.parametrize("unit", ["month", "quarter", "year", "week", "day"])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York"])
def test_date_histogram_calendar(es, live, unit, zone):
    tz = ZoneInfo(zone)
    agg = {"date_histogram": {"field": "at", "calendar_interval": unit, "time_zone": zone}}
    want = oracle(live, "at", lambda v: calendar_start(v, unit, tz))
    assert got(search(es, agg)) == want
    filtered = oracle(live, "at", lambda v: calendar_start(v, unit, tz),
                      lambda d: d["grp"] != 1)
    assert got(search(es, agg, {"bool": {"must_not": {"term": {"grp": 1}}}})) == filtered


def test_date_histogram_with_a_sibling_and_a_sub_aggregation(es, live):
    resp = es.search(index=INDEX, size=0, request_cache=False, aggs={
        "h": {"date_histogram": {"field": "at", "calendar_interval": "month"}},
        "s": {"date_histogram": {"field": "at", "calendar_interval": "year"},
              "aggs": {"c": {"value_count": {"field": "qty"}}}}})
    tz = ZoneInfo("UTC")
    assert got(resp) == oracle(live, "at", lambda v: calendar_start(v, "month", tz))
    years = {b["key"]: b["doc_count"] for b in resp["aggregations"]["s"]["buckets"]}
    assert years == oracle(live, "at", lambda v: calendar_start(v, "year", tz))


def test_profile_counts_the_documents_counted_from_the_points(es, live):
    """ES's `collect_count` is the documents an aggregator saw; those counted from the points
    over whole segments count too (the match_all total is every live document)."""
    resp = es.search(index=INDEX, size=0, request_cache=False, profile=True, aggs={
        "h": {"histogram": {"field": "qty", "interval": 50}}})
    aggs = resp["profile"]["shards"][0]["aggregations"]
    assert aggs[0]["description"] == "h"
    assert aggs[0]["breakdown"]["collect_count"] == len(live)


def in_range(d, field, gte=None, gt=None, lte=None, lt=None):
    """ES's range on a field: some value of the document lies inside."""
    def ok(v):
        return ((gte is None or v >= gte) and (gt is None or v > gt)
                and (lte is None or v <= lte) and (lt is None or v < lt))
    return any(ok(v) for v in values(d, field))


RANGES = [dict(gte=-5, lt=120), dict(gt=7, lte=7.5), dict(gte=300), dict(lt=0),
          dict(gt=1e9), dict(gte=133.3, lte=1001.7)]


@pytest.mark.parametrize("bounds", RANGES)
@pytest.mark.parametrize("field,interval,offset", [("qty", 10, 0), ("qty", 1, 0),
                                                   ("price", 100, 0), ("price", 2.5, 0.5)])
@pytest.mark.parametrize("wrapped", [False, True])
def test_histogram_under_a_range_on_its_own_field(es, live, field, interval, offset, bounds,
                                                   wrapped):
    """A range on the histogram's field: each single-valued segment is counted from the slice
    of its sorted values inside the bounds (a document's one value is both what matches and
    what is bucketed); the multi-valued segment is collected, where a document inside the
    range brings every value it has."""
    rng = {"range": {field: bounds}}
    query = {"bool": {"filter": [rng]}} if wrapped else rng
    resp = search(es, {"histogram": {"field": field, "interval": interval, "offset": offset}},
                  query)
    want = oracle(live, field, lambda v: math.floor((v - offset) / interval) * interval + offset,
                  lambda d: in_range(d, field, **bounds))
    assert got(resp) == {float(k): n for k, n in want.items()}


@pytest.mark.parametrize("unit", ["month", "quarter", "year", "week"])
@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "+05:30"])
@pytest.mark.parametrize("days", [(0, 900), (17.25, 400.5), (300, 301), (-50, 30)])
def test_date_histogram_under_a_range_on_its_own_field(es, live, unit, zone, days):
    tz = ZoneInfo(zone) if "/" in zone or zone == "UTC" else dt.timezone(dt.timedelta(hours=5,
                                                                                     minutes=30))
    lo, hi = T0 + int(days[0] * DAY), T0 + int(days[1] * DAY)
    agg = {"date_histogram": {"field": "at", "calendar_interval": unit, "time_zone": zone}}
    resp = search(es, agg, {"bool": {"filter": [{"range": {"at": {"gte": lo, "lt": hi}}}]}})
    want = oracle(live, "at", lambda v: calendar_start(v, unit, tz),
                  lambda d: in_range(d, "at", gte=lo, lt=hi))
    assert got(resp) == want
    fixed = {"date_histogram": {"field": "at", "fixed_interval": "12h", "offset": "+1h"}}
    resp = search(es, fixed, {"range": {"at": {"gt": lo, "lte": hi}}})
    h = 12 * 3_600_000
    want = oracle(live, "at", lambda v: (v - 3_600_000) // h * h + 3_600_000,
                  lambda d: in_range(d, "at", gt=lo, lte=hi))
    assert got(resp) == want


def test_a_range_on_another_field_or_with_more_clauses_is_collected(es, live):
    agg = {"histogram": {"field": "qty", "interval": 25}}
    resp = search(es, agg, {"range": {"price": {"gte": 100, "lt": 900}}})
    want = oracle(live, "qty", lambda v: math.floor(v / 25) * 25,
                  lambda d: in_range(d, "price", gte=100, lt=900))
    assert got(resp) == {float(k): n for k, n in want.items()}
    resp = search(es, agg, {"bool": {"filter": [{"range": {"qty": {"gte": 50}}},
                                                {"term": {"grp": 1}}]}})
    want = oracle(live, "qty", lambda v: math.floor(v / 25) * 25,
                  lambda d: in_range(d, "qty", gte=50) and d["grp"] == 1)
    assert got(resp) == {float(k): n for k, n in want.items()}

"""`auto_date_histogram` (top level), against buckets computed here in Python from the
documents this file indexes, with Elasticsearch's choice of interval: the first rung of
its ladder (seconds, minutes, hours, days, months, years; a rough estimate first, as
`getAppropriateRounding`) whose buckets from the first to the last value fit `buckets` x
the rung's largest inner interval, then the smallest inner interval that brings the
count to at most `buckets`, consecutive buckets merged from the first."""

import datetime as dt

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

INDEX = "autodate"
UTC = dt.timezone.utc

LADDER = [("s", 1000, [1, 5, 10, 30]), ("m", 60_000, [1, 5, 10, 30]),
          ("h", 3_600_000, [1, 3, 12]), ("d", 86_400_000, [1, 7]),
          ("M", 30 * 86_400_000, [1, 3]), ("y", 365 * 86_400_000, [1, 5, 10, 20, 50, 100])]


def floor(ms, unit):
    t = dt.datetime.fromtimestamp(ms / 1000, UTC)
    if unit == "s":
        t = t.replace(microsecond=0)
    elif unit == "m":
        t = t.replace(second=0, microsecond=0)
    elif unit == "h":
        t = t.replace(minute=0, second=0, microsecond=0)
    elif unit == "d":
        t = t.replace(hour=0, minute=0, second=0, microsecond=0)
    elif unit == "M":
        t = t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    else:
        t = t.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    return t


def step(t, unit, n=1):
    if unit in "smhd":
        secs = {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
        return t + dt.timedelta(seconds=secs * n)
    months = n if unit == "M" else 12 * n
    y, m = divmod(t.month - 1 + months, 12)
    return t.replace(year=t.year + y, month=m + 1)


def keys(lo, hi, unit):
    out, t = [], floor(lo, unit)
    end = floor(hi, unit)
    while t <= end:
        out.append(t)
        t = step(t, unit)
    return out


def expected(values, target):
    lo, hi = min(values), max(values)
    idx = 0
    for i in range(1, len(LADDER)):
        if (hi - lo) // LADDER[i][1] < target * LADDER[i][2][-1]:
            idx = i - 1
            break
    while idx + 1 < len(LADDER) and len(keys(lo, hi, LADDER[idx][0])) > target * LADDER[idx][2][-1]:
        idx += 1
    unit, _, inner = LADDER[idx]
    ks = keys(lo, hi, unit)
    n = 1
    if len(ks) > target:
        n = next((i for i in inner if -(-len(ks) // i) <= target), 1)
    starts = ks[::n]
    buckets = []
    for i, s in enumerate(starts):
        e = step(s, unit, n)
        in_b = [v for v in values if s.timestamp() * 1000 <= v < e.timestamp() * 1000]
        buckets.append((int(s.timestamp() * 1000), len(in_b)))
    return f"{n}{unit}", buckets


def ms(s):
    return int(dt.datetime.fromisoformat(s).replace(tzinfo=UTC).timestamp() * 1000)


DATES = ["2020-03-01T00:00:00", "2020-03-02T05:00:00", "2020-03-08T23:59:59",
         "2020-03-09T12:00:00", "2020-04-17T08:30:00", "2020-07-01T00:00:00",
         "2021-01-15T00:00:00", "2022-11-30T10:00:00"]
DOCS = [(str(i), {"date": d, "v": i}) for i, d in enumerate(DATES)]


@pytest.fixture(scope="module")
def autodate(es):
    body = {"settings": {"number_of_shards": 2},
            "mappings": {"properties": {"date": {"type": "date"}, "v": {"type": "long"}}}}
    return make_index(es, INDEX, body, DOCS)


@pytest.mark.parametrize("upto, target", [(4, 2), (4, 10), (5, 3), (6, 10), (8, 3), (8, 10), (2, 100)])
def test_buckets_and_interval(es, autodate, upto, target):
    values = [ms(d) for d in DATES[:upto]]
    r = es.search(index=INDEX, size=0, typed_keys=True,
                  query={"range": {"date": {"lte": DATES[upto - 1]}}},
                  aggs={"h": {"auto_date_histogram": {"field": "date", "buckets": target},
                              "aggs": {"s": {"sum": {"field": "v"}}}}}).body["aggregations"]
    h = r["auto_date_histogram#h"]
    interval, buckets = expected(values, target)
    assert h["interval"] == interval
    assert [(b["key"], b["doc_count"]) for b in h["buckets"]] == buckets
    for b in h["buckets"]:
        s = dt.datetime.fromtimestamp(b["key"] / 1000, UTC)
        assert b["key_as_string"] == s.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    # Sub-aggregations see each merged bucket's documents.
    starts = [b[0] for b in buckets] + [float("inf")]
    for i, b in enumerate(h["buckets"]):
        want = sum(v for v, d in enumerate(DATES[:upto]) if starts[i] <= ms(d) < starts[i + 1])
        assert b["sum#s"]["value"] == want


def test_minimum_interval_format_and_errors(es, autodate):
    r = es.search(index=INDEX, size=0, query={"range": {"date": {"lte": "2020-03-02T05:00:00"}}},
                  aggs={"h": {"auto_date_histogram": {"field": "date", "minimum_interval": "day",
                                                      "format": "yyyy-MM-dd"}}}).body["aggregations"]
    assert r["h"]["interval"] == "1d"
    assert [b["key_as_string"] for b in r["h"]["buckets"]] == ["2020-03-01", "2020-03-02"]
    for agg in ({"field": "date", "minimum_interval": "week"}, {"field": "date", "buckets": 0},
                {"field": "date", "interval": "1d"}):
        with pytest.raises(BadRequestError):
            es.search(index=INDEX, size=0, aggs={"h": {"auto_date_histogram": agg}})


@pytest.mark.parametrize("target", [2, 3, 10])
def test_under_a_bucket_aggregation_each_bucket_chooses_its_interval(es, autodate, target):
    """ES rounds per owning bucket: each parent bucket's interval comes from its own
    documents (here `histogram` on v, interval 3, and `filters`)."""
    subs = {"h": {"auto_date_histogram": {"field": "date", "buckets": target},
                  "aggs": {"s": {"sum": {"field": "v"}}}}}
    r = es.search(index=INDEX, size=0, aggs={
        "p": {"histogram": {"field": "v", "interval": 3}, "aggs": subs},
        "f": {"filters": {"filters": {"early": {"range": {"date": {"lt": "2020-03-10"}}},
                                      "all": {"match_all": {}}}}, "aggs": subs},
    }).body["aggregations"]

    def check(h, members):
        values = [ms(DATES[v]) for v in members]
        interval, buckets = expected(values, target)
        assert h["interval"] == interval
        assert [(b["key"], b["doc_count"]) for b in h["buckets"]] == buckets
        starts = [b[0] for b in buckets] + [float("inf")]
        for i, b in enumerate(h["buckets"]):
            want = sum(v for v in members if starts[i] <= ms(DATES[v]) < starts[i + 1])
            assert b["s"]["value"] == want

    parents = r["p"]["buckets"]
    assert [p["key"] for p in parents] == [0.0, 3.0, 6.0]
    for p in parents:
        check(p["h"], [v for v in range(len(DATES)) if int(p["key"]) <= v < int(p["key"]) + 3])
    check(r["f"]["buckets"]["early"]["h"], [v for v, d in enumerate(DATES) if d < "2020-03-10"])
    check(r["f"]["buckets"]["all"]["h"], list(range(len(DATES))))


def test_under_a_bucket_aggregation_an_empty_bucket_has_no_buckets(es, autodate):
    r = es.search(index=INDEX, size=0, aggs={
        "p": {"histogram": {"field": "v", "interval": 3, "extended_bounds": {"min": 0, "max": 20}},
              "aggs": {"h": {"auto_date_histogram": {"field": "date"}}}}}).body["aggregations"]
    last = r["p"]["buckets"][-1]
    assert last["doc_count"] == 0 and last["h"]["buckets"] == []

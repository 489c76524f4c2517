"""date_histogram (calendar_interval, fixed_interval, time_zone, format,
extended_bounds, min_doc_count) and date_range."""

import datetime as dt
import time

import pytest

import oracle
from oracle import CST, UTC, DAY_MS, HOUR_MS


def aggs(es, aggs, query=None):
    body = {"size": 0, "aggs": aggs}
    if query is not None:
        body["query"] = query
    return es.search(index="accounts", body=body).body["aggregations"]


def between(lo, hi):
    return {"range": {"createdTime": {"gte": lo, "lt": hi}}}


def times(corpus, lo=None, hi=None):
    return [t for t in corpus.values("createdTime")
            if (lo is None or t >= lo) and (hi is None or t < hi)]


def filled(counts, step_fn):
    """Buckets from the first to the last non-empty key, empty ones included."""
    keys = sorted(counts)
    out, k = [], keys[0]
    while k <= keys[-1]:
        out.append((k, counts.get(k, 0)))
        k = step_fn(k)
    return out


def kc(agg):
    return [(b["key"], b["doc_count"]) for b in agg["buckets"]]


@pytest.mark.parametrize("interval,unit", [("month", "month"), ("1M", "month"), ("quarter", "quarter"),
                                           ("year", "year"), ("1y", "year")])
def test_calendar_interval_whole_corpus(es, accounts, corpus, interval, unit):
    agg = aggs(es, {"h": {"date_histogram": {"field": "createdTimeStr", "calendar_interval": interval,
                                             "time_zone": "+08:00", "format": "yyyy-MM-dd"}}})["h"]
    ts = times(corpus)
    counts = oracle.counts_by(oracle.calendar_floor(t, unit, CST) for t in ts)
    exp = filled(counts, lambda k: oracle.calendar_next(k, unit, CST))
    assert kc(agg) == exp
    assert [b["key_as_string"] for b in agg["buckets"]] == [
        oracle.from_ms(k, CST).strftime("%Y-%m-%d") for k, _ in exp]


def test_calendar_interval_week_utc(es, accounts, corpus):
    lo, hi = oracle.ms(dt.datetime(2020, 2, 1, tzinfo=UTC)), oracle.ms(dt.datetime(2020, 5, 1, tzinfo=UTC))
    agg = aggs(es, {"h": {"date_histogram": {"field": "createdTime", "calendar_interval": "week",
                                             "format": "yyyy-MM-dd"}}}, between(lo, hi))["h"]
    counts = oracle.counts_by(oracle.calendar_floor(t, "week", UTC) for t in times(corpus, lo, hi))
    exp = filled(counts, lambda k: k + 7 * DAY_MS)
    assert kc(agg) == exp
    # weeks start on Monday
    assert all(oracle.from_ms(k).weekday() == 0 for k, _ in exp)
    assert [b["key_as_string"] for b in agg["buckets"]] == [oracle.from_ms(k).strftime("%Y-%m-%d") for k, _ in exp]


def test_calendar_day_across_dst(es, accounts, corpus):
    """America/New_York days around the 2021 DST changes are 23 h and 25 h long."""
    tz = oracle.tz_of("America/New_York")
    for lo_d, hi_d in ((dt.date(2021, 3, 12), dt.date(2021, 3, 17)), (dt.date(2021, 11, 5), dt.date(2021, 11, 10))):
        lo = oracle.ms(dt.datetime(lo_d.year, lo_d.month, lo_d.day, tzinfo=tz))
        hi = oracle.ms(dt.datetime(hi_d.year, hi_d.month, hi_d.day, tzinfo=tz))
        agg = aggs(es, {"h": {"date_histogram": {
            "field": "createdTime", "calendar_interval": "day", "time_zone": "America/New_York",
            "format": "yyyy-MM-dd HH:mm Z"}}}, between(lo, hi))["h"]
        counts = oracle.counts_by(oracle.local_midnight(t, tz) for t in times(corpus, lo, hi))
        exp = filled(counts, lambda k: oracle.calendar_next(k, "day", tz))
        assert kc(agg) == exp
        assert [b["key_as_string"] for b in agg["buckets"]] == [
            oracle.from_ms(k, tz).strftime("%Y-%m-%d %H:%M %z") for k, _ in exp]
        lengths = {exp[i + 1][0] - exp[i][0] for i in range(len(exp) - 1)}
        assert lengths & {23 * HOUR_MS, 25 * HOUR_MS}


@pytest.mark.parametrize("tz", ["+08:00", "Asia/Shanghai", "UTC", "-05:30"])
@pytest.mark.parametrize("interval_h", [6, 12, 24])
def test_fixed_interval_time_zone(es, accounts, corpus, tz, interval_h):
    lo, hi = 1640534400000, 1640966400000
    agg = aggs(es, {"h": {"date_histogram": {
        "field": "createdTime", "fixed_interval": "%dh" % interval_h, "time_zone": tz,
        "format": "yyyy-MM-dd'T'HH:mm"}}}, between(lo, hi))["h"]
    z = oracle.tz_of(tz)
    off = int(dt.datetime(2021, 12, 28, tzinfo=z).utcoffset().total_seconds() * 1000)
    iv = interval_h * HOUR_MS
    counts = oracle.counts_by(oracle.fixed_floor(t, iv, off) for t in times(corpus, lo, hi))
    exp = filled(counts, lambda k: k + iv)
    assert kc(agg) == exp
    assert [b["key_as_string"] for b in agg["buckets"]] == [
        oracle.from_ms(k, z).strftime("%Y-%m-%dT%H:%M") for k, _ in exp]


def test_fixed_interval_minutes_default_format(es, accounts, corpus):
    """Without `format`, key_as_string uses the field's format (createdTimeStr), in UTC."""
    lo = oracle.ms(dt.datetime(2021, 6, 1, tzinfo=UTC))
    hi = lo + 30 * DAY_MS
    agg = aggs(es, {"h": {"date_histogram": {"field": "createdTimeStr", "fixed_interval": "90m",
                                             "min_doc_count": 1}}}, between(lo, hi))["h"]
    iv = 90 * 60 * 1000
    counts = oracle.counts_by(oracle.fixed_floor(t, iv) for t in times(corpus, lo, hi))
    exp = sorted(counts.items())
    assert kc(agg) == exp
    assert [b["key_as_string"] for b in agg["buckets"]] == [oracle.fmt_java_Z(oracle.from_ms(k)) for k, _ in exp]


def test_epoch_millis_field_default_key_as_string(es, accounts, corpus):
    lo, hi = 1640534400000, 1640966400000
    agg = aggs(es, {"h": {"date_histogram": {"field": "createdTime", "calendar_interval": "1d"}}},
               between(lo, hi))["h"]
    counts = oracle.counts_by(oracle.local_midnight(t, UTC) for t in times(corpus, lo, hi))
    exp = filled(counts, lambda k: k + DAY_MS)
    assert kc(agg) == exp
    assert [b["key_as_string"] for b in agg["buckets"]] == [str(k) for k, _ in exp]


def test_extended_bounds_and_min_doc_count(es, accounts, corpus):
    lo, hi = 1640534400000, 1640966400000  # 2021-12-27 .. 2022-01-01 (+08:00)
    agg = aggs(es, {"h": {"date_histogram": {
        "field": "createdTime", "calendar_interval": "1d", "time_zone": "+08:00", "format": "yyyy-MM-dd",
        "min_doc_count": 0, "extended_bounds": {"min": "2021-12-20", "max": "2022-01-03"}}}},
        between(lo, hi))["h"]
    counts = oracle.counts_by(oracle.local_midnight(t, CST) for t in times(corpus, lo, hi))
    start = oracle.ms(dt.datetime(2021, 12, 20, tzinfo=CST))
    exp = [(start + i * DAY_MS, counts.get(start + i * DAY_MS, 0)) for i in range(15)]
    assert kc(agg) == exp
    assert agg["buckets"][0]["key_as_string"] == "2021-12-20"
    assert agg["buckets"][-1]["key_as_string"] == "2022-01-03"


def test_min_doc_count_one_skips_empty(es, accounts, corpus):
    lo = oracle.ms(dt.datetime(2019, 3, 1, tzinfo=CST))
    hi = lo + 2 * DAY_MS
    agg = aggs(es, {"h": {"date_histogram": {"field": "createdTime", "fixed_interval": "10m",
                                             "min_doc_count": 1, "time_zone": "+08:00"}}}, between(lo, hi))["h"]
    iv = 600000
    counts = oracle.counts_by(oracle.fixed_floor(t, iv, 8 * HOUR_MS) for t in times(corpus, lo, hi))
    assert kc(agg) == sorted(counts.items())
    assert all(c > 0 for _, c in kc(agg))


def test_date_histogram_sub_aggs(es, accounts, corpus):
    agg = aggs(es, {"h": {"date_histogram": {"field": "createdTimeStr", "calendar_interval": "year",
                                             "time_zone": "+08:00", "format": "yyyy"},
                          "aggs": {"bal": {"sum": {"field": "balance"}},
                                   "types": {"terms": {"field": "acctType", "size": 2}}}}})["h"]
    assert [b["key_as_string"] for b in agg["buckets"]] == ["2018", "2019", "2020", "2021"]
    for b in agg["buckets"]:
        p = lambda d: d["createdTimeStr"][:4] == b["key_as_string"]
        vals = corpus.values("balance", p)
        assert b["doc_count"] == len(vals)
        oracle.assert_float(b["bal"]["value"], oracle.fsum(vals), "sum", scale=oracle.fsum(abs(v) for v in vals))
        exp = oracle.terms_order_default(oracle.counts_by(corpus.values("acctType", p)))[:2]
        assert [(x["key"], x["doc_count"]) for x in b["types"]["buckets"]] == exp


# ---------------------------------------------------------------------------
# date_range
# ---------------------------------------------------------------------------

def test_date_range_format_time_zone_and_keys(es, accounts, corpus):
    agg = aggs(es, {"r": {"date_range": {
        "field": "createdTime", "format": "yyyy-MM-dd", "time_zone": "+08:00",
        "ranges": [{"to": "2019-01-01"}, {"from": "2019-01-01", "to": "2020-01-01"},
                   {"from": "2021-01-01||+6M"}]}}})["r"]
    b = agg["buckets"]
    t2019 = oracle.ms(dt.datetime(2019, 1, 1, tzinfo=CST))
    t2020 = oracle.ms(dt.datetime(2020, 1, 1, tzinfo=CST))
    t2021h = oracle.ms(dt.datetime(2021, 7, 1, tzinfo=CST))
    ts = times(corpus)
    assert b == [
        {"key": "*-2019-01-01", "to": float(t2019), "to_as_string": "2019-01-01",
         "doc_count": sum(1 for t in ts if t < t2019)},
        {"key": "2019-01-01-2020-01-01", "from": float(t2019), "from_as_string": "2019-01-01",
         "to": float(t2020), "to_as_string": "2020-01-01",
         "doc_count": sum(1 for t in ts if t2019 <= t < t2020)},
        {"key": "2021-07-01-*", "from": float(t2021h), "from_as_string": "2021-07-01",
         "doc_count": sum(1 for t in ts if t >= t2021h)},
    ]


def test_date_range_on_formatted_field_keyed(es, accounts, corpus):
    """Bounds in the field's own format; explicit keys; keyed response."""
    agg = aggs(es, {"r": {"date_range": {
        "field": "createdTimeStr", "keyed": True,
        "ranges": [{"key": "h1-2020", "from": "2020-01-01T00:00:00.000+0800", "to": "2020-07-01T00:00:00.000+0800"},
                   {"key": "h2-2020", "from": "2020-07-01T00:00:00.000+0800", "to": "2021-01-01T00:00:00.000+0800"}]},
        "aggs": {"avg": {"avg": {"field": "balance"}}}}})["r"]
    assert set(agg["buckets"]) == {"h1-2020", "h2-2020"}
    bounds = {"h1-2020": ("2020-01-01", "2020-07-01"), "h2-2020": ("2020-07-01", "2021-01-01")}
    for k, (a, z) in bounds.items():
        b = agg["buckets"][k]
        vals = corpus.values("balance", lambda d: a <= d["createdTimeStr"][:10] < z)
        assert b["doc_count"] == len(vals)
        oracle.assert_float(b["avg"]["value"], oracle.fsum(vals) / len(vals), k,
                            scale=oracle.fsum(abs(v) for v in vals) / len(vals))
        lo = oracle.ms(dt.datetime.fromisoformat(a + "T00:00:00+08:00"))
        assert b["from"] == lo
        # rendered with the field's format in UTC
        assert b["from_as_string"] == oracle.fmt_java_Z(oracle.from_ms(lo))


def test_date_range_now_math(es, accounts, corpus):
    now_year = dt.datetime.now(UTC).year
    agg = aggs(es, {"r": {"date_range": {"field": "createdTime", "format": "yyyy", "ranges": [
        {"key": "old", "to": "now-10y/y"}, {"key": "recent", "from": "now-10y/y", "to": "now"}]}}})["r"]
    b = {x["key"]: x for x in agg["buckets"]}
    start = oracle.ms(dt.datetime(now_year - 10, 1, 1, tzinfo=UTC))
    ts = times(corpus)
    assert b["old"]["doc_count"] == sum(1 for t in ts if t < start)
    assert b["recent"]["doc_count"] == sum(1 for t in ts if t >= start)
    assert b["recent"]["from_as_string"] == str(now_year - 10)
    assert b["recent"]["from"] == start

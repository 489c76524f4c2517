"""Range queries on date fields: the field's format, `format` overrides,
`time_zone`, date math (`now-5d/d`, `||` anchors, rounding per bound)."""

import datetime as dt

import pytest
from elasticsearch import BadRequestError

import oracle
from oracle import CST, UTC, DAY_MS


def total(es, query):
    resp = es.search(index="accounts", body={"size": 0, "track_total_hits": True, "query": query}).body
    assert resp["hits"]["total"]["relation"] == "eq"
    return resp["hits"]["total"]["value"]


def count_t(corpus, lo=None, hi=None, lo_incl=True, hi_incl=False):
    def p(d):
        t = d["createdTime"]
        if lo is not None and (t < lo if lo_incl else t <= lo):
            return False
        if hi is not None and (t > hi if hi_incl else t >= hi):
            return False
        return True
    return corpus.count(p)


def t(y, m, d, hh=0, mm=0, ss=0, msec=0, tz=UTC):
    return oracle.ms(dt.datetime(y, m, d, hh, mm, ss, msec * 1000, tzinfo=tz))


LAST = t(2021, 12, 31, tz=CST)          # 2021-12-31T00:00:00+08:00


def test_field_format_string_bounds(es, accounts, corpus):
    q = {"range": {"createdTimeStr": {"gte": "2019-03-01T12:00:00.000+0800", "lt": "2019-03-04T08:30:00.500+0000"}}}
    assert total(es, q) == count_t(corpus, t(2019, 3, 1, 12, tz=CST), t(2019, 3, 4, 8, 30, 0, 500))


def test_epoch_millis_bounds(es, accounts, corpus):
    lo, hi = 1600000000000, 1600000000000 + 20 * DAY_MS
    assert total(es, {"range": {"createdTime": {"gt": lo, "lte": hi}}}) == \
        count_t(corpus, lo, hi, lo_incl=False, hi_incl=True)
    # epoch_millis also accepts the number as a string
    assert total(es, {"range": {"createdTime": {"gt": str(lo), "lte": str(hi)}}}) == \
        count_t(corpus, lo, hi, lo_incl=False, hi_incl=True)


def test_format_override_and_time_zone(es, accounts, corpus):
    q = {"range": {"createdTime": {"gte": "2020-02-01", "lt": "2020-03-01", "format": "yyyy-MM-dd",
                                   "time_zone": "+08:00"}}}
    assert total(es, q) == count_t(corpus, t(2020, 2, 1, tz=CST), t(2020, 3, 1, tz=CST))


def test_time_zone_named(es, accounts, corpus):
    ny = oracle.tz_of("America/New_York")
    q = {"range": {"createdTimeStr": {"gte": "2021-03-13 00:00:00", "lt": "2021-03-15 00:00:00",
                                      "format": "yyyy-MM-dd HH:mm:ss", "time_zone": "America/New_York"}}}
    assert total(es, q) == count_t(corpus, t(2021, 3, 13, tz=ny), t(2021, 3, 15, tz=ny))


def test_time_zone_does_not_override_explicit_offset(es, accounts, corpus):
    q = {"range": {"createdTimeStr": {"gte": "2020-05-01T00:00:00.000+0800", "time_zone": "-05:00"}}}
    assert total(es, q) == count_t(corpus, t(2020, 5, 1, tz=CST))


def test_date_only_lte_includes_whole_day(es, accounts, corpus):
    """A date-only upper bound with lte is rounded up to the end of the day."""
    q = {"range": {"createdTime": {"gte": "2021-12-28", "lte": "2021-12-30", "format": "yyyy-MM-dd",
                                   "time_zone": "+08:00"}}}
    assert total(es, q) == count_t(corpus, t(2021, 12, 28, tz=CST), t(2021, 12, 31, tz=CST))


def test_date_only_gt_excludes_whole_day(es, accounts, corpus):
    q = {"range": {"createdTime": {"gt": "2021-12-28", "format": "yyyy-MM-dd", "time_zone": "+08:00"}}}
    assert total(es, q) == count_t(corpus, t(2021, 12, 29, tz=CST))


def test_strict_date_optional_time_override(es, accounts, corpus):
    q = {"range": {"createdTime": {"gte": "2021-06-01T10:00:00Z", "lt": "2021-06-03",
                                   "format": "strict_date_optional_time"}}}
    assert total(es, q) == count_t(corpus, t(2021, 6, 1, 10), t(2021, 6, 3))


def test_multiple_formats(es, accounts, corpus):
    q = {"range": {"createdTime": {"gte": "2021/06/01", "lt": "2021-06-05T00:00:00Z",
                                   "format": "yyyy/MM/dd||strict_date_optional_time"}}}
    assert total(es, q) == count_t(corpus, t(2021, 6, 1), t(2021, 6, 5))


# --- date math ------------------------------------------------------------

def test_anchor_math_rounding_in_time_zone(es, accounts, corpus):
    """`||-5d/d` rounds in the query's time_zone (+08:00 here)."""
    q = {"range": {"createdTimeStr": {"gte": "2021-12-31T12:34:56.789+0800||-5d/d", "time_zone": "+08:00"}}}
    assert total(es, q) == count_t(corpus, t(2021, 12, 26, tz=CST))


def test_anchor_math_rounding_defaults_to_utc(es, accounts, corpus):
    """Without time_zone, rounding is done in UTC even if the anchor has an offset."""
    q = {"range": {"createdTimeStr": {"gte": "2021-12-31T00:00:00.000+0800||-5d/d"}}}
    # 2021-12-26T00:00+08:00 = 2021-12-25T16:00Z -> /d (UTC) -> 2021-12-25T00:00Z
    assert total(es, q) == count_t(corpus, t(2021, 12, 25))


@pytest.mark.parametrize("op,lo,hi,lo_incl,hi_incl", [
    # gt rounds up: > the last ms of the month  (excludes the whole month)
    ("gt", t(2021, 12, 1, tz=CST), None, True, False),
    # gte rounds down: >= the first ms of the month
    ("gte", t(2021, 11, 1, tz=CST), None, True, False),
    # lt rounds down: < the first ms of the month
    ("lt", None, t(2021, 11, 1, tz=CST), True, False),
    # lte rounds up: <= the last ms of the month (includes the whole month)
    ("lte", None, t(2021, 12, 1, tz=CST), True, False),
])
def test_rounding_per_bound(es, accounts, corpus, op, lo, hi, lo_incl, hi_incl):
    q = {"range": {"createdTime": {op: "1636770000000||/M", "time_zone": "+08:00"}}}  # 2021-11-13T10:20+08:00
    assert total(es, q) == count_t(corpus, lo, hi, lo_incl, hi_incl)


def test_math_units(es, accounts, corpus):
    # 2020-02-29T00:00+08:00 + 1M = 2020-03-29, -2w = 2020-03-15, +36h = 2020-03-16T12:00, /h
    q = {"range": {"createdTime": {"gte": "2020-02-29||+1M-2w+36h/h", "lt": "2020-02-29||+1M-2w+36h+90m",
                                   "format": "yyyy-MM-dd", "time_zone": "+08:00"}}}
    lo = t(2020, 3, 16, 12, tz=CST)
    assert total(es, q) == count_t(corpus, lo, lo + 90 * 60000)


def test_week_and_year_rounding(es, accounts, corpus):
    q = {"range": {"createdTime": {"gte": "2021-07-15||/w", "lt": "2021-07-15||+1y/y", "format": "yyyy-MM-dd"}}}
    # 2021-07-15 is a Thursday -> Monday 2021-07-12 (UTC); +1y = 2022-07-15 -> /y 2022-01-01
    assert total(es, q) == count_t(corpus, t(2021, 7, 12), t(2022, 1, 1))


def test_now_math(es, accounts, corpus):
    assert total(es, {"range": {"createdTime": {"gte": "now-5d/d"}}}) == 0
    assert total(es, {"range": {"createdTime": {"lt": "now"}}}) == corpus.n
    assert total(es, {"range": {"createdTimeStr": {"lte": "now/d", "gt": "now-100y"}}}) == corpus.n
    year = dt.datetime.now(UTC).year
    # now-Ny/y where N puts the bound inside the data (2018..2021)
    n = year - 2020
    assert total(es, {"range": {"createdTime": {"gte": "now-%dy/y" % n}}}) == count_t(corpus, t(2020, 1, 1))


def test_unparseable_date_is_rejected(es, accounts):
    with pytest.raises(BadRequestError) as ei:
        total(es, {"range": {"createdTimeStr": {"gte": "not a date"}}})
    assert ei.value.body["error"]["root_cause"][0]["type"] in ("parse_exception", "illegal_argument_exception")

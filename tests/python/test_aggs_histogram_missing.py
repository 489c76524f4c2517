"""`missing` on `histogram`, `date_histogram` and `auto_date_histogram`: documents without a
value count as having the `missing` value (they land in its bucket, which extends the bucket
range as a real value would). Expected buckets are computed here in Python from the documents
this file indexes (two shards, several segments)."""

import datetime as dt
import math
import random
from collections import Counter
from zoneinfo import ZoneInfo

import pytest
from elasticsearch import BadRequestError

from test_aggs_auto_date import expected as auto_expected

INDEX = "histmissing"
UTC = dt.timezone.utc
DAY = 86_400_000

MAPPING = {
    "settings": {"number_of_shards": 2},
    "mappings": {"properties": {
        "n": {"type": "long"},
        "x": {"type": "double"},
        "ts": {"type": "date", "format": "yyyy-MM-dd HH:mm||epoch_millis"},
        "r": {"type": "integer_range"},
        "k": {"type": "keyword"},
    }},
}


def make_docs():
    rnd = random.Random(1013)
    base = int(dt.datetime(2021, 3, 20, tzinfo=UTC).timestamp() * 1000)
    docs = []
    for i in range(60):
        d = {"k": f"k{i % 3}"}
        if rnd.random() < 0.7:
            d["n"] = rnd.randint(10, 60)
        if rnd.random() < 0.6:
            d["x"] = round(rnd.uniform(-3.0, 3.0), 2)
        if rnd.random() < 0.65:
            t = base + rnd.randint(0, 120) * DAY + rnd.randint(0, 23) * 3_600_000
            d["ts"] = dt.datetime.fromtimestamp(t / 1000, UTC).strftime("%Y-%m-%d %H:%M")
        if i % 5 == 0:
            d["r"] = {"gte": i, "lte": i + 3}
        docs.append((str(i), d))
    return docs


DOCS = make_docs()


@pytest.fixture(scope="module")
def index(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(index=INDEX, **MAPPING)
    # Several segments per shard: one bulk (and refresh) per slice.
    for start in range(0, len(DOCS), 15):
        ops = []
        for i, d in DOCS[start:start + 15]:
            ops += [{"index": {"_index": INDEX, "_id": i}}, d]
        assert es.bulk(operations=ops, refresh=True)["errors"] is False
    yield INDEX
    es.indices.delete(index=INDEX, ignore_unavailable=True)


def ts_ms(s):
    return int(dt.datetime.strptime(s, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp() * 1000)


def search(es, aggs, **kw):
    return es.search(index=INDEX, size=0, aggs=aggs, **kw).body["aggregations"]


def numeric_buckets(values, interval, offset=0.0, min_doc_count=0, bounds=None):
    """ES's histogram: key = floor((v - offset) / interval) * interval + offset; with
    min_doc_count 0 every key from the first to the last (and `extended_bounds`)."""
    def key(v):
        return math.floor((v - offset) / interval) * interval + offset
    counts = Counter(key(v) for v in values)
    if min_doc_count > 0:
        return sorted((k, c) for k, c in counts.items() if c >= min_doc_count)
    ks = list(counts)
    if bounds:
        ks += [key(b) for b in bounds]
    lo, hi = min(ks), max(ks)
    out, k, i = [], lo, 0
    while k <= hi + 1e-9:
        out.append((k, counts.get(k, 0)))
        i += 1
        k = lo + i * interval
    return out


def got(agg):
    return [(b["key"], b["doc_count"]) for b in agg["buckets"]]


@pytest.mark.parametrize("missing, interval, offset", [(-5, 5, 0), (100, 10, 3), (35, 7, 0), ("0", 20, 0)])
def test_histogram_long_missing_extends_range(es, index, missing, interval, offset):
    a = search(es, {"h": {"histogram": {"field": "n", "interval": interval, "offset": offset,
                                        "missing": missing}}})
    vals = [d.get("n", float(missing)) for _, d in DOCS]
    assert got(a["h"]) == numeric_buckets(vals, interval, offset)


def test_histogram_double_missing_min_doc_count_and_bounds(es, index):
    a = search(es, {"h": {"histogram": {"field": "x", "interval": 0.5, "missing": 7.25,
                                        "min_doc_count": 0,
                                        "extended_bounds": {"min": -6, "max": 9}}},
                    "m": {"histogram": {"field": "x", "interval": 1, "missing": -9.5,
                                        "min_doc_count": 2}}})
    vals = [d.get("x", 7.25) for _, d in DOCS]
    assert got(a["h"]) == numeric_buckets(vals, 0.5, bounds=(-6, 9))
    vals = [d.get("x", -9.5) for _, d in DOCS]
    assert got(a["m"]) == numeric_buckets(vals, 1, min_doc_count=2)


def test_histogram_missing_bucket_sub_aggregations(es, index):
    a = search(es, {"h": {"histogram": {"field": "n", "interval": 10, "missing": 0},
                          "aggs": {"mx": {"max": {"field": "x"}},
                                   "top": {"top_hits": {"size": 100, "_source": False}}}}})
    first = a["h"]["buckets"][0]
    miss = [(i, d) for i, d in DOCS if "n" not in d]
    assert first["key"] == 0 and first["doc_count"] == len(miss)
    xs = [d["x"] for _, d in miss if "x" in d]
    assert first["mx"]["value"] == (max(xs) if xs else None)
    assert sorted(h["_id"] for h in first["top"]["hits"]["hits"]) == sorted(i for i, _ in miss)


def test_histogram_missing_with_query_and_runtime_field(es, index):
    # Only the documents the query matches count, the missing ones included.
    a = search(es, {"h": {"histogram": {"field": "n", "interval": 25, "missing": 1}}},
               query={"term": {"k": "k1"}})
    vals = [d.get("n", 1) for _, d in DOCS if d["k"] == "k1"]
    assert got(a["h"]) == numeric_buckets(vals, 25)
    # A runtime field that emits only for some documents.
    rt = {"n2": {"type": "long",
                 "script": "if (doc['n'].size() > 0 && doc['n'].value % 2 == 0) emit(doc['n'].value * 2)"}}
    a = search(es, {"h": {"histogram": {"field": "n2", "interval": 30, "missing": -1}}},
               runtime_mappings=rt)
    vals = [d["n"] * 2 if d.get("n", 1) % 2 == 0 else -1 for _, d in DOCS]
    assert got(a["h"]) == numeric_buckets(vals, 30)
    # A script (no field).
    a = search(es, {"h": {"histogram": {"interval": 10, "missing": 5, "script": {
        "source": "if (doc['n'].size() > 0) { return doc['n'].value; } return null;"}}}})
    vals = [d.get("n", 5) for _, d in DOCS]
    # ES treats a script returning null as no value: the missing value applies.
    assert got(a["h"]) == numeric_buckets(vals, 10)


def test_histogram_missing_on_unmapped_field(es, index):
    a = search(es, {"h": {"histogram": {"field": "nope", "interval": 10, "missing": 42}}})
    assert got(a["h"]) == [(40.0, len(DOCS))]


def local_key_fixed(t, interval, offset, tz):
    off = int(tz.utcoffset(dt.datetime.fromtimestamp(t / 1000, UTC)).total_seconds() * 1000)
    return (t + off - offset) // interval * interval + offset - off


@pytest.mark.parametrize("tz_name, offset", [("UTC", 0), ("+05:30", 0), ("-03:00", 6 * 3_600_000)])
def test_date_histogram_fixed_missing(es, index, tz_name, offset):
    tz = UTC if tz_name == "UTC" else dt.datetime.strptime(tz_name.replace(":", ""), "%z").tzinfo
    missing = "2021-01-02 10:00"
    body = {"field": "ts", "fixed_interval": "7d", "missing": missing, "time_zone": tz_name,
            "min_doc_count": 0, "extended_bounds": {"min": "2021-01-01 00:00", "max": "2021-08-30 00:00"}}
    if offset:
        body["offset"] = "+6h"
    a = search(es, {"h": {"date_histogram": body}})
    vals = [ts_ms(d.get("ts", missing)) for _, d in DOCS]
    counts = Counter(local_key_fixed(v, 7 * DAY, offset, tz) for v in vals)
    ks = list(counts) + [local_key_fixed(ts_ms(b), 7 * DAY, offset, tz)
                         for b in ("2021-01-01 00:00", "2021-08-30 00:00")]
    want = [(k, counts.get(k, 0)) for k in range(min(ks), max(ks) + 1, 7 * DAY)]
    assert got(a["h"]) == want
    # The missing document's bucket renders in the field's format.
    first = a["h"]["buckets"][0]
    assert first["key_as_string"] == dt.datetime.fromtimestamp(first["key"] / 1000, tz).strftime("%Y-%m-%d %H:%M")


def month_start(t, tz):
    local = dt.datetime.fromtimestamp(t / 1000, tz)
    return int(local.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000)


def test_date_histogram_calendar_missing_agg_format_and_zone(es, index):
    tz = ZoneInfo("America/New_York")
    # The aggregation's format parses `missing`, in the aggregation's time zone.
    a = search(es, {"h": {"date_histogram": {"field": "ts", "calendar_interval": "month",
                                             "time_zone": "America/New_York", "format": "dd/MM/yyyy",
                                             "missing": "15/12/2021"}}})
    missing = int(dt.datetime(2021, 12, 15, tzinfo=tz).timestamp() * 1000)
    vals = [ts_ms(d["ts"]) if "ts" in d else missing for _, d in DOCS]
    counts = Counter(month_start(v, tz) for v in vals)
    lo = dt.datetime.fromtimestamp(min(counts) / 1000, tz)
    want, t = [], lo
    while int(t.timestamp() * 1000) <= max(counts):
        k = int(t.timestamp() * 1000)
        want.append((k, counts.get(k, 0)))
        t = t.replace(year=t.year + (t.month == 12), month=t.month % 12 + 1)
    assert got(a["h"]) == want
    assert a["h"]["buckets"][-1]["key_as_string"] == "01/12/2021"
    # epoch millis in the field's format; a number parses through it too.
    a = search(es, {"h": {"date_histogram": {"field": "ts", "calendar_interval": "year",
                                             "missing": 0}}})
    vals = [ts_ms(d["ts"]) if "ts" in d else 0 for _, d in DOCS]
    years = Counter(dt.datetime.fromtimestamp(v / 1000, UTC).year for v in vals)
    assert [(b["key_as_string"][:4], b["doc_count"]) for b in a["h"]["buckets"]] == \
        [(str(y), years.get(y, 0)) for y in range(min(years), max(years) + 1)]


@pytest.mark.parametrize("missing, target", [("2021-03-01 00:00", 10), ("2023-06-01 12:00", 5), ("2021-05-01 00:00", 30)])
def test_auto_date_histogram_missing(es, index, missing, target):
    a = search(es, {"h": {"auto_date_histogram": {"field": "ts", "buckets": target, "missing": missing}}})
    vals = [ts_ms(d.get("ts", missing)) for _, d in DOCS]
    interval, buckets = auto_expected(vals, target)
    assert a["h"]["interval"] == interval
    assert got(a["h"]) == buckets


def test_missing_refusals(es, index):
    # ES's range values source cannot apply `missing`.
    for agg in ({"histogram": {"field": "r", "interval": 5, "missing": 3}},
                {"date_histogram": {"field": "r", "fixed_interval": "1d", "missing": 3}}):
        with pytest.raises(BadRequestError) as e:
            search(es, {"h": agg})
        assert e.value.info["error"]["root_cause"][0]["type"] == "illegal_argument_exception"
    with pytest.raises(BadRequestError) as e:
        search(es, {"h": {"histogram": {"field": "n", "interval": 5, "missing": "abc"}}})
    assert "For input string" in str(e.value.info)
    with pytest.raises(BadRequestError) as e:
        search(es, {"h": {"date_histogram": {"field": "ts", "fixed_interval": "1d", "missing": "not a date"}}})
    assert e.value.info["error"]["root_cause"][0]["type"] == "parse_exception"
    with pytest.raises(BadRequestError):
        search(es, {"h": {"histogram": {"field": "n", "interval": 5, "missing": {"a": 1}}}})


def test_missing_bucket_documents_for_re_reading_sub_aggregations(es, index):
    """Sub-aggregations that read their bucket's documents again (`top_hits`, `cardinality`,
    `percentiles`) see the documents without a value in the `missing` value's bucket."""
    missing = "2021-02-10 00:00"
    a = search(es, {
        "d": {"date_histogram": {"field": "ts", "calendar_interval": "month", "missing": missing},
              "aggs": {"c": {"cardinality": {"field": "k"}},
                       "p": {"percentiles": {"field": "n", "percents": [50]}},
                       "top": {"top_hits": {"size": 100, "_source": False}}}},
        "r": {"range": {"field": "x", "missing": 0.5, "ranges": [{"to": 0}, {"from": 0, "to": 1}, {"from": 1}]},
              "aggs": {"top": {"top_hits": {"size": 100, "_source": False}}}}})
    feb = [(i, d) for i, d in DOCS if d.get("ts", missing).startswith("2021-02")]
    b = a["d"]["buckets"][0]
    assert b["key_as_string"].startswith("2021-02") and b["doc_count"] == len(feb)
    assert sorted(h["_id"] for h in b["top"]["hits"]["hits"]) == sorted(i for i, _ in feb)
    assert b["c"]["value"] == len({d["k"] for _, d in feb})
    ns = sorted(d["n"] for _, d in feb if "n" in d)
    if ns:
        assert ns[0] <= b["p"]["values"]["50.0"] <= ns[-1]
    for bucket, (lo, hi) in zip(a["r"]["buckets"], [(-math.inf, 0), (0, 1), (1, math.inf)]):
        ids = sorted(i for i, d in DOCS if lo <= d.get("x", 0.5) < hi)
        assert bucket["doc_count"] == len(ids)
        assert sorted(h["_id"] for h in bucket["top"]["hits"]["hits"]) == ids


def test_ip_range_missing(es):
    import ipaddress
    name = "ip_missing"
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, settings={"number_of_shards": 2},
                      mappings={"properties": {"ip": {"type": "ip"}, "k": {"type": "keyword"}}})
    ips = ["10.0.0.1", None, "10.0.1.5", "192.168.0.1", None, "::1", "2001:db8::5", None, "10.0.0.77"]
    docs = [(str(i), {"k": "x", **({"ip": ip} if ip else {})}) for i, ip in enumerate(ips)]
    for part in (docs[:4], docs[4:]):
        ops = []
        for i, d in part:
            ops += [{"index": {"_index": name, "_id": i}}, d]
        es.bulk(operations=ops, refresh=True)

    def v6(s):
        a = ipaddress.ip_address(s)
        return int(ipaddress.IPv6Address(f"::ffff:{a}") if isinstance(a, ipaddress.IPv4Address) else a)

    ranges = [{"to": "10.0.0.128"}, {"from": "10.0.0.128", "to": "192.168.0.0"}, {"from": "192.168.0.0"},
              {"mask": "10.0.0.0/24"}]
    bounds = [(None, v6("10.0.0.128")), (v6("10.0.0.128"), v6("192.168.0.0")), (v6("192.168.0.0"), None),
              (v6("10.0.0.0"), v6("10.0.1.0"))]
    for missing in ("10.0.0.50", "172.16.0.1"):
        r = es.search(index=name, size=0, aggs={"r": {"ip_range": {"field": "ip", "ranges": ranges, "missing": missing},
                                                      "aggs": {"top": {"top_hits": {"size": 20, "_source": False}}}}})
        buckets = r["aggregations"]["r"]["buckets"]
        vals = [(i, v6(d.get("ip", missing))) for i, d in docs]
        # ES orders ip ranges by from, then to.
        order = sorted(range(len(bounds)), key=lambda j: (bounds[j][0] or 0, bounds[j][1] or 2 ** 128))
        for b, j in zip(buckets, order):
            lo, hi = bounds[j]
            ids = sorted(i for i, v in vals if (lo is None or v >= lo) and (hi is None or v < hi))
            assert b["doc_count"] == len(ids), (missing, b)
            assert sorted(h["_id"] for h in b["top"]["hits"]["hits"]) == ids
    # An unmapped field: every document has the missing address.
    r = es.search(index=name, size=0, aggs={"r": {"ip_range": {"field": "nope", "ranges": ranges, "missing": "10.0.0.1"}}})
    assert [b["doc_count"] for b in r["aggregations"]["r"]["buckets"]] == [len(docs), len(docs), 0, 0]
    with pytest.raises(BadRequestError) as e:
        es.search(index=name, size=0, aggs={"r": {"ip_range": {"field": "ip", "ranges": ranges, "missing": "nope"}}})
    assert "is not an IP string literal" in str(e.value.info)
    es.indices.delete(index=name)


def haversine_km(lat1, lon1, lat2, lon2):
    r = 6371.0087714
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(h))


def test_geo_distance_missing(es):
    name = "geo_missing"
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, settings={"number_of_shards": 2},
                      mappings={"properties": {"loc": {"type": "geo_point"}}})
    # Points 0.1 to 9 degrees of latitude north of the origin (about 11 to 1000 km).
    pts = [0.1, None, 1.5, 3.2, None, 5.5, 8.9, None, 0.6]
    docs = [(str(i), {"loc": {"lat": p, "lon": 0.0}} if p is not None else {}) for i, p in enumerate(pts)]
    for part in (docs[:5], docs[5:]):
        ops = []
        for i, d in part:
            ops += [{"index": {"_index": name, "_id": i}}, d]
        es.bulk(operations=ops, refresh=True)
    ranges = [{"to": 100}, {"from": 100, "to": 400}, {"from": 400}]
    bounds = [(-math.inf, 100), (100, 400), (400, math.inf)]
    for missing in ("2.0,0.0", "s00000000"):  # about 222 km; a geohash at the origin (0 km)
        mlat = 2.0 if missing.startswith("2") else 0.0
        r = es.search(index=name, size=0, aggs={"d": {
            "geo_distance": {"field": "loc", "origin": "0,0", "unit": "km", "ranges": ranges, "missing": missing},
            "aggs": {"top": {"top_hits": {"size": 20, "_source": False}}}}})
        dist = [(i, haversine_km(0, 0, p if p is not None else mlat, 0)) for i, p in enumerate(pts)]
        for b, (lo, hi) in zip(r["aggregations"]["d"]["buckets"], bounds):
            ids = sorted(i for i, d in dist if lo <= d < hi)
            assert b["doc_count"] == len(ids), (missing, b)
            assert sorted(h["_id"] for h in b["top"]["hits"]["hits"]) == sorted(str(i) for i in ids)
    with pytest.raises(BadRequestError):
        es.search(index=name, size=0, aggs={"d": {"geo_distance": {
            "field": "loc", "origin": "0,0", "ranges": ranges, "missing": "nowhere"}}})
    es.indices.delete(index=name)



def test_terms_missing_equal_to_an_indexed_term(es):
    """A keyword `missing` equal to a term some documents have: one bucket holding both
    (within one segment, tantivy's terms keeps only one of the two)."""
    name = "terms_missing_collide"
    docs = [("1", {"k": "a"}), ("2", {}), ("3", {"k": "z"}), ("4", {}), ("5", {"k": "z"})]
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, settings={"number_of_shards": 1},
                      mappings={"properties": {"k": {"type": "keyword"}}})
    ops = []
    for i, d in docs:
        ops += [{"index": {"_index": name, "_id": i}}, d]
    es.bulk(operations=ops, refresh=True)
    r = es.search(index=name, size=0, aggs={"t": {"terms": {"field": "k", "missing": "z"}}})
    want = Counter(d.get("k", "z") for _, d in docs)
    got_ = {b["key"]: b["doc_count"] for b in r.body["aggregations"]["t"]["buckets"]}
    es.indices.delete(index=name)
    assert got_ == dict(want)


def test_terms_missing_bucket_documents_for_re_reading_sub_aggregations(es, index):
    subs = {"top": {"top_hits": {"size": 100, "_source": False}}, "c": {"cardinality": {"field": "k"}}}
    a = search(es, {
        "t": {"terms": {"field": "n", "missing": -1, "size": 100}, "aggs": subs},
        "s": {"terms": {"field": "ts", "missing": "2000-01-01 00:00", "size": 500}, "aggs": subs},
        "m": {"multi_terms": {"terms": [{"field": "k"}, {"field": "x", "missing": 99}], "size": 500}, "aggs": subs},
        "r": {"rare_terms": {"field": "n", "missing": -1, "max_doc_count": 100}, "aggs": subs}})

    def check(buckets, key_of, what):
        groups = {}
        for i, d in DOCS:
            groups.setdefault(key_of(d), []).append((i, d))
        assert len(buckets) == len(groups), what
        for b in buckets:
            k = tuple(b["key"]) if isinstance(b["key"], list) else b["key"]
            members = groups[k]
            assert b["doc_count"] == len(members), (what, k)
            assert sorted(h["_id"] for h in b["top"]["hits"]["hits"]) == sorted(i for i, _ in members), (what, k)
            assert b["c"]["value"] == len({d["k"] for _, d in members}), (what, k)

    check(a["t"]["buckets"], lambda d: d.get("n", -1), "terms")
    check(a["r"]["buckets"], lambda d: d.get("n", -1), "rare_terms")
    check(a["s"]["buckets"], lambda d: ts_ms(d.get("ts", "2000-01-01 00:00")), "dates")
    check(a["m"]["buckets"], lambda d: (d["k"], d.get("x", 99)), "multi_terms")


def test_terms_missing_on_a_boolean_field(es):
    name = "bool_missing"
    docs = [("1", {"b": True, "k": "x"}), ("2", {"k": "x"}), ("3", {"b": False, "k": "y"}),
            ("4", {"b": [True, True], "k": "y"}), ("5", {}), ("6", {"b": [True, False], "k": "x"})]
    if es.indices.exists(index=name):
        es.indices.delete(index=name)
    es.indices.create(index=name, settings={"number_of_shards": 2},
                      mappings={"properties": {"b": {"type": "boolean"}, "k": {"type": "keyword"}}})
    for part in (docs[:3], docs[3:]):
        ops = []
        for i, d in part:
            ops += [{"index": {"_index": name, "_id": i}}, d]
        es.bulk(operations=ops, refresh=True)

    def values(d, missing):
        v = d.get("b", missing)
        return set(v if isinstance(v, list) else [v])

    for missing in (False, "true"):
        m = missing if isinstance(missing, bool) else missing == "true"
        r = es.search(index=name, size=0, aggs={
            "t": {"terms": {"field": "b", "missing": missing},
                  "aggs": {"top": {"top_hits": {"size": 10, "_source": False}}}},
            "m": {"multi_terms": {"terms": [{"field": "k", "missing": "none"}, {"field": "b", "missing": missing}]}}})
        a = r.body["aggregations"]
        want = Counter(v for _, d in docs for v in values(d, m))
        assert {(b["key"], b["key_as_string"]): b["doc_count"] for b in a["t"]["buckets"]} == \
            {(int(v), str(v).lower()): n for v, n in want.items()}
        for b in a["t"]["buckets"]:
            ids = sorted(i for i, d in docs if bool(b["key"]) in values(d, m))
            assert sorted(h["_id"] for h in b["top"]["hits"]["hits"]) == ids
        want = Counter((d.get("k", "none"), str(v).lower()) for _, d in docs for v in values(d, m))
        assert {tuple(b["key_as_string"].split("|")): b["doc_count"] for b in a["m"]["buckets"]} == dict(want)
    with pytest.raises(BadRequestError) as e:
        es.search(index=name, size=0, aggs={"t": {"terms": {"field": "b", "missing": "yes"}}})
    assert "Cannot parse boolean [yes]" in str(e.value.info)
    es.indices.delete(index=name)

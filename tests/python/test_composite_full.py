"""The composite aggregation with computed keys: date_histogram sources in time zones (with
DST), with offsets and every calendar interval, script and runtime-field sources, geotile_grid
sources, missing buckets on every source kind, multi-valued fields, sub-aggregations and
pagination through `after_key`. Every expected page is computed here, in Python, from the
documents this module indexes (dates rounded with zoneinfo)."""

import datetime as dt
import functools
import ipaddress
import itertools
import math
import random
from zoneinfo import ZoneInfo

import pytest
from elasticsearch import BadRequestError

INDEX = "composite-full"
UTC = dt.timezone.utc
MERCATOR_LIMIT = 85.05112878

KWS = ["alpha", "beta", "gamma", "delta", "a\u00e9", "Zed"]


def make_docs():
    rng = random.Random(1313)
    start = dt.datetime(2020, 10, 1, tzinfo=UTC).timestamp() * 1000
    end = dt.datetime(2022, 4, 1, tzinfo=UTC).timestamp() * 1000
    # Around the 2021 DST changes of Europe/Paris and America/New_York.
    dst = [
        dt.datetime(2021, 3, 27, 20, tzinfo=UTC).timestamp() * 1000,
        dt.datetime(2021, 10, 30, 20, tzinfo=UTC).timestamp() * 1000,
        dt.datetime(2021, 3, 14, 3, tzinfo=UTC).timestamp() * 1000,
    ]
    docs = {}
    for i in range(260):
        d = {"m": i % 50, "flag": i % 3 == 0, "d": round(rng.uniform(-20, 20), 3)}
        if i % 4 == 0:
            base = rng.choice(dst)
            d["ts"] = int(base + rng.uniform(0, 2 * 86400000))
        else:
            d["ts"] = int(rng.uniform(start, end))
        r = rng.random()
        if r < 0.15:
            pass  # no kw
        elif r < 0.35:
            d["kw"] = rng.sample(KWS, rng.choice([2, 3]))
        else:
            d["kw"] = rng.choice(KWS)
        r = rng.random()
        if r < 0.2:
            pass
        elif r < 0.4:
            d["n"] = [rng.randrange(-3, 6) for _ in range(rng.choice([2, 3]))]
        else:
            d["n"] = rng.randrange(-3, 6)
        if i % 5 == 1:
            d["ip"] = ["10.0.%d.%d" % (i % 4, i % 7), "2001:db8::%x" % (i % 5)]
        elif i % 5 != 0:
            d["ip"] = "10.0.%d.%d" % (i % 4, i % 7) if i % 3 else "2001:db8::%x" % (i % 5)
        if i % 9 != 0:
            d["loc"] = {"lat": round(rng.uniform(-60, 70), 5), "lon": round(rng.uniform(-170, 170), 5)}
        docs[str(i)] = d
    return docs


DOCS = make_docs()


@pytest.fixture(scope="module")
def comp(es):
    if es.indices.exists(index=INDEX):
        es.indices.delete(index=INDEX)
    es.indices.create(
        index=INDEX,
        settings={"number_of_shards": 3, "number_of_replicas": 0},
        mappings={"properties": {
            "kw": {"type": "keyword"}, "n": {"type": "long"}, "m": {"type": "long"},
            "d": {"type": "double"}, "flag": {"type": "boolean"}, "ts": {"type": "date"},
            "loc": {"type": "geo_point"}, "ip": {"type": "ip"},
        }},
    )
    ids = list(DOCS)
    # Several refreshes: several segments per shard.
    for part in range(4):
        ops = []
        for i in ids[part::4]:
            ops.append({"index": {"_index": INDEX, "_id": i}})
            ops.append(DOCS[i])
        r = es.bulk(operations=ops)
        assert not r["errors"]
        es.indices.refresh(index=INDEX)
    yield DOCS
    es.indices.delete(index=INDEX)


def as_list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


# ---------------------------------------------------------------------------------------------
# The oracle

class Src:
    """One composite source: its request body and how it keys a document."""

    def __init__(self, name, body, keys, asc=True, missing_bucket=False, missing_order="default"):
        self.name, self.keys = name, keys
        self.asc, self.missing_bucket = asc, missing_bucket
        self.missing_first = {"first": True, "last": False}.get(missing_order, asc)
        kind, inner = next(iter(body.items()))
        inner = dict(inner)
        if not asc:
            inner["order"] = "desc"
        if missing_bucket:
            inner["missing_bucket"] = True
        if missing_order != "default":
            inner["missing_order"] = missing_order
        self.body = {name: {kind: inner}}

    def cmp(self, a, b):
        if a == b:
            return 0
        if a is None:
            return -1 if self.missing_first else 1
        if b is None:
            return 1 if self.missing_first else -1
        c = -1 if a < b else 1
        return c if self.asc else -c


def expected(docs, sources, after=None):
    counts = {}
    for d in docs.values():
        per = []
        for s in sources:
            vals = sorted(set(s.keys(d)), key=repr)
            if not vals:
                if not s.missing_bucket:
                    break
                vals = [None]
            per.append(vals)
        else:
            for combo in itertools.product(*per):
                counts[combo] = counts.get(combo, 0) + 1

    def cmp(x, y):
        for s, a, b in zip(sources, x, y):
            c = s.cmp(a, b)
            if c:
                return c
        return 0

    keys = sorted(counts, key=functools.cmp_to_key(cmp))
    return [(dict(zip([s.name for s in sources], k)), counts[k]) for k in keys]


def paginate(es, sources, size, extra=None):
    """Every page of the composite aggregation, following `after_key` until exhausted."""
    out, after, pages = [], None, 0
    while True:
        agg = {"sources": [s.body for s in sources], "size": size}
        if after is not None:
            agg["after"] = after
        body = {"c": {"composite": agg}}
        if extra:
            body["c"]["aggs"] = extra
        r = es.search(index=INDEX, size=0, aggs=body)["aggregations"]["c"]
        assert len(r["buckets"]) <= size
        pages += 1
        assert pages < 10_000
        if not r["buckets"]:
            assert "after_key" not in r
            return out
        assert r["after_key"] == r["buckets"][-1]["key"]
        out.extend(r["buckets"])
        after = r["after_key"]


def check(es, sources, size=7, docs=DOCS):
    want = expected(docs, sources)
    got = paginate(es, sources, size)
    assert [(b["key"], b["doc_count"]) for b in got] == want
    # Every combination exactly once.
    assert len({tuple(sorted(b["key"].items(), key=lambda kv: kv[0])) for b in got}) == len(got)
    return got


# ---------------------------------------------------------------------------------------------
# Date rounding, as Elasticsearch defines it, in zoneinfo

def local_floor(ms, tz, unit):
    t = dt.datetime.fromtimestamp(ms / 1000, tz=UTC).astimezone(tz)
    if unit == "minute":
        t = t.replace(second=0, microsecond=0)
    elif unit == "hour":
        t = t.replace(minute=0, second=0, microsecond=0)
    else:
        t = t.replace(hour=0, minute=0, second=0, microsecond=0)
        if unit == "week":
            t = t - dt.timedelta(days=t.weekday())
        elif unit == "month":
            t = t.replace(day=1)
        elif unit == "quarter":
            t = t.replace(day=1, month=(t.month - 1) // 3 * 3 + 1)
        elif unit == "year":
            t = t.replace(day=1, month=1)
    # The local midnight (or hour) back to an instant: zoneinfo picks the first of an
    # ambiguous pair and shifts a missing one forward, as java.time does.
    naive = t.replace(tzinfo=None)
    return int(naive.replace(tzinfo=tz).timestamp() * 1000)


def date_keys(field, unit, tz, offset_ms=0):
    def f(d):
        return [local_floor(v - offset_ms, tz, unit) + offset_ms for v in as_list(d.get(field))]
    return f


@pytest.mark.parametrize("zone", ["Europe/Paris", "America/New_York", "Asia/Kolkata"])
@pytest.mark.parametrize("unit", ["hour", "day", "week", "month", "quarter", "year"])
def test_calendar_intervals_in_time_zones(es, comp, zone, unit):
    tz = ZoneInfo(zone)
    s = Src("t", {"date_histogram": {"field": "ts", "calendar_interval": unit, "time_zone": zone}},
            date_keys("ts", unit, tz))
    check(es, [s], size=11)


@pytest.mark.parametrize("offset,offset_ms", [("+6h", 6 * 3600000), ("-90m", -90 * 60000), ("1d", 86400000)])
@pytest.mark.parametrize("unit", ["day", "month"])
def test_calendar_intervals_with_offsets(es, comp, offset, offset_ms, unit):
    tz = ZoneInfo("Europe/Paris")
    s = Src("t", {"date_histogram": {"field": "ts", "calendar_interval": unit,
                                      "time_zone": "Europe/Paris", "offset": offset}},
            date_keys("ts", unit, tz, offset_ms), asc=False)
    check(es, [s], size=9)


def test_fixed_interval_with_fixed_zone_and_offset(es, comp):
    interval, zone_ms, off = 5 * 3600000, 5 * 3600000 + 30 * 60000, -3600000
    o = off - zone_ms

    def keys(d):
        return [(v - o) // interval * interval + o for v in as_list(d.get("ts"))]

    s = Src("t", {"date_histogram": {"field": "ts", "fixed_interval": "5h", "time_zone": "+05:30",
                                      "offset": "-1h"}}, keys)
    check(es, [s], size=13)


def test_date_histogram_format_and_after_in_the_format(es, comp):
    tz = ZoneInfo("America/New_York")
    body = {"date_histogram": {"field": "ts", "calendar_interval": "month",
                               "time_zone": "America/New_York", "format": "yyyy-MM"}}
    want = expected(comp, [Src("t", body, date_keys("ts", "month", tz))])
    r = es.search(index=INDEX, size=0, aggs={"c": {"composite": {"sources": [{"t": body}], "size": 4}}})
    first = r["aggregations"]["c"]

    def fmt(ms):
        return dt.datetime.fromtimestamp(ms / 1000, tz=UTC).astimezone(tz).strftime("%Y-%m")

    assert [(b["key"]["t"], b["doc_count"]) for b in first["buckets"]] == \
        [(fmt(k["t"]), c) for k, c in want[:4]]
    assert first["after_key"] == {"t": fmt(want[3][0]["t"])}
    r = es.search(index=INDEX, size=0, aggs={"c": {"composite": {
        "sources": [{"t": body}], "size": 4, "after": first["after_key"]}}})
    assert [(b["key"]["t"], b["doc_count"]) for b in r["aggregations"]["c"]["buckets"]] == \
        [(fmt(k["t"]), c) for k, c in want[4:8]]


def test_multi_valued_terms_with_missing_buckets_and_a_zoned_date(es, comp):
    tz = ZoneInfo("Europe/Paris")
    sources = [
        Src("k", {"terms": {"field": "kw"}}, lambda d: as_list(d.get("kw")),
            missing_bucket=True, missing_order="last"),
        Src("n", {"terms": {"field": "n"}}, lambda d: as_list(d.get("n")),
            asc=False, missing_bucket=True),
        Src("t", {"date_histogram": {"field": "ts", "calendar_interval": "quarter",
                                      "time_zone": "Europe/Paris"}},
            date_keys("ts", "quarter", tz)),
    ]
    check(es, sources, size=5)


def test_histogram_with_missing_bucket(es, comp):
    sources = [
        Src("h", {"histogram": {"field": "n", "interval": 2}},
            lambda d: [math.floor(v / 2) * 2.0 for v in as_list(d.get("n"))],
            missing_bucket=True, missing_order="first", asc=False),
        Src("f", {"terms": {"field": "flag"}}, lambda d: [d["flag"]]),
    ]
    got = check(es, sources, size=4)
    assert all(isinstance(b["key"]["h"], (float, type(None))) for b in got)


def test_script_sources(es, comp):
    sources = [
        Src("s", {"terms": {"script": {"source": "doc['m'].value % 4 == 0 ? 'four' : 'other'"}}},
            lambda d: ["four" if d["m"] % 4 == 0 else "other"]),
        Src("v", {"terms": {"script": {"source": "doc['m'].value * params.k", "params": {"k": 3}},
                            "value_type": "long"}},
            lambda d: [d["m"] * 3], asc=False),
    ]
    got = check(es, sources, size=6)
    assert all(isinstance(b["key"]["v"], int) for b in got)


def test_runtime_field_sources(es, comp):
    runtime = {
        "m3": {"type": "long", "script": {"source": "emit(doc['m'].value % 3)"}},
        "half": {"type": "double", "script": {"source": "emit(doc['d'].value / 2)"}},
    }
    sources = [
        Src("r", {"terms": {"field": "m3"}}, lambda d: [d["m"] % 3]),
        Src("h", {"histogram": {"field": "half", "interval": 2.5}},
            lambda d: [math.floor(d["d"] / 2 / 2.5) * 2.5]),
    ]
    want = expected(comp, sources)
    out, after = [], None
    while True:
        agg = {"sources": [s.body for s in sources], "size": 3}
        if after:
            agg["after"] = after
        r = es.search(index=INDEX, size=0, runtime_mappings=runtime,
                      aggs={"c": {"composite": agg}})["aggregations"]["c"]
        if not r["buckets"]:
            break
        out += [(b["key"], b["doc_count"]) for b in r["buckets"]]
        after = r["after_key"]
    assert out == want


def tile(lat, lon, zoom):
    n = 2**zoom
    lat = max(-MERCATOR_LIMIT, min(MERCATOR_LIMIT, lat))
    x = int(math.floor((lon + 180.0) / 360.0 * n))
    phi = math.radians(lat)
    y = int(math.floor((1.0 - math.log(math.tan(math.pi / 4 + phi / 2)) / math.pi) / 2.0 * n))
    return min(max(x, 0), n - 1), min(max(y, 0), n - 1)


def test_geotile_grid_source(es, comp):
    z = 3

    def keys(d):
        if "loc" not in d:
            return []
        x, y = tile(d["loc"]["lat"], d["loc"]["lon"], z)
        return [(z << 58) | (x << 29) | y]

    sources = [
        Src("g", {"geotile_grid": {"field": "loc", "precision": z}}, keys, missing_bucket=True),
        Src("f", {"terms": {"field": "flag"}}, lambda d: [d["flag"]]),
    ]
    want = expected(comp, sources)

    def name(t):
        return None if t is None else "%d/%d/%d" % (t >> 58, (t >> 29) & ((1 << 29) - 1), t & ((1 << 29) - 1))

    got = paginate(es, sources, 6)
    assert [(b["key"], b["doc_count"]) for b in got] == \
        [({"g": name(k["g"]), "f": k["f"]}, c) for k, c in want]


def test_sub_aggregations_per_computed_bucket(es, comp):
    tz = ZoneInfo("America/New_York")
    s = Src("t", {"date_histogram": {"field": "ts", "calendar_interval": "month",
                                      "time_zone": "America/New_York"}},
            date_keys("ts", "month", tz))
    got = paginate(es, [s], 5, extra={"total": {"sum": {"field": "m"}}, "top": {"max": {"field": "d"}}})
    sums, maxes = {}, {}
    for d in comp.values():
        for k in set(s.keys(d)):
            sums[k] = sums.get(k, 0) + d["m"]
            maxes[k] = max(maxes.get(k, -math.inf), d["d"])
    assert [b["key"]["t"] for b in got] == sorted(sums)
    for b in got:
        assert b["total"]["value"] == sums[b["key"]["t"]]
        assert b["top"]["value"] == pytest.approx(maxes[b["key"]["t"]])


def test_aggregations_that_requery_their_bucket(es, comp):
    """percentiles, cardinality and top_hits see exactly their composite bucket's documents."""
    tz = ZoneInfo("Europe/Paris")
    sources = [
        Src("k", {"terms": {"field": "kw"}}, lambda d: as_list(d.get("kw")), missing_bucket=True),
        Src("t", {"date_histogram": {"field": "ts", "calendar_interval": "year",
                                      "time_zone": "Europe/Paris"}}, date_keys("ts", "year", tz)),
    ]
    for plain in (False, True):
        # A plain keyword source too: the re-reading sub-aggregations make its keys computed.
        srcs = sources[:1] if plain else sources
        want = expected(comp, srcs)
        extra = {} if plain else {"card": {"cardinality": {"field": "m"}}}
        got = paginate(es, srcs, 4, extra={**extra,
            "p": {"percentiles": {"field": "d", "percents": [0, 100]}},
            "top": {"top_hits": {"size": 1, "sort": [{"m": "desc"}, {"d": "asc"}], "_source": False}},
        })
        assert [(b["key"], b["doc_count"]) for b in got] == want
        for b in got:
            members = [(i, d) for i, d in comp.items()
                       if all(b["key"][s.name] in (s.keys(d) or [None]) for s in srcs)]
            assert len(members) == b["doc_count"]
            ds = [d["d"] for _, d in members]
            assert b["p"]["values"]["0.0"] == pytest.approx(min(ds))
            assert b["p"]["values"]["100.0"] == pytest.approx(max(ds))
            if not plain:
                assert b["card"]["value"] == len({d["m"] for _, d in members})
            best = sorted(members, key=lambda m: (-m[1]["m"], m[1]["d"]))[0]
            assert b["top"]["hits"]["hits"][0]["_id"] == best[0]


def test_query_filters_the_keys(es, comp):
    tz = ZoneInfo("Europe/Paris")
    s = Src("t", {"date_histogram": {"field": "ts", "calendar_interval": "week",
                                      "time_zone": "Europe/Paris"}}, date_keys("ts", "week", tz))
    sub = {i: d for i, d in comp.items() if d["m"] < 20}
    want = expected(sub, [s])
    r = es.search(index=INDEX, size=0, query={"range": {"m": {"lt": 20}}},
                  aggs={"c": {"composite": {"sources": [s.body], "size": 1000}}})
    assert [(b["key"], b["doc_count"]) for b in r["aggregations"]["c"]["buckets"]] == want


@pytest.mark.parametrize("after,message", [
    ({"t": 1, "k": "x"}, "[after] has 2 value(s) but [sources] has 1"),
    ({"x": 1}, "Missing value for [after.t]"),
    ({"t": None}, "Invalid value for [after.t], expected comparable, got [null]"),
    ({"t": {"a": 1}}, "Invalid value for [after.t], expected comparable, got [LinkedHashMap]"),
])
def test_after_is_validated(es, comp, after, message):
    body = {"t": {"date_histogram": {"field": "ts", "calendar_interval": "month",
                                     "time_zone": "Europe/Paris"}}}
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, size=0, aggs={"c": {"composite": {"sources": [body], "after": after}}})
    assert e.value.meta.status == 400
    err = e.value.body["error"]
    reasons = [err.get("reason", "")] + [c.get("reason", "") for c in err.get("root_cause", [])]
    assert message in reasons, err


def test_formats_on_terms_and_histogram_sources(es, comp):
    sources = [
        Src("h", {"histogram": {"field": "d", "interval": 5, "format": "0.00"}},
            lambda d: [math.floor(d["d"] / 5) * 5.0]),
        # A format that keeps every millisecond: the formatted after key parses back exactly.
        Src("day", {"terms": {"field": "ts", "format": "yyyy-MM-dd'T'HH:mm:ss.SSS"}},
            lambda d: [d["ts"]]),
    ]
    want = expected(comp, sources)

    def fmt_day(ms):
        t = dt.datetime.fromtimestamp(ms // 1000, tz=UTC)
        return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%03d" % (ms % 1000)

    got = paginate(es, sources, 50)
    assert [(b["key"], b["doc_count"]) for b in got] == \
        [({"h": "%.2f" % k["h"], "day": fmt_day(k["day"])}, c) for k, c in want]


def test_format_on_a_keyword_source_is_refused(es, comp):
    with pytest.raises(BadRequestError) as e:
        es.search(index=INDEX, size=0, aggs={"c": {"composite": {
            "sources": [{"k": {"terms": {"field": "kw", "format": "0.0"}}}]}}})
    assert "Field [kw] of type [keyword] does not support custom formats" in str(e.value.body)


def ip_bytes(text):
    """ES orders addresses by their 16-byte encoding (IPv4 mapped into IPv6)."""
    a = ipaddress.ip_address(text)
    if a.version == 4:
        return b"\0" * 10 + b"\xff\xff" + a.packed
    return a.packed


def ip_text(b):
    a = ipaddress.IPv6Address(b)
    return str(a.ipv4_mapped) if a.ipv4_mapped else str(a)


def test_ip_sources_with_computed_keys_and_rereading_sub_aggregations(es, comp):
    tz = ZoneInfo("Europe/Paris")
    sources = [
        Src("ip", {"terms": {"field": "ip"}}, lambda d: [ip_bytes(x) for x in as_list(d.get("ip"))],
            missing_bucket=True, asc=False),
        Src("t", {"date_histogram": {"field": "ts", "calendar_interval": "year",
                                      "time_zone": "Europe/Paris"}}, date_keys("ts", "year", tz)),
    ]
    want = expected(comp, sources)
    got = paginate(es, sources, 6, extra={"c": {"cardinality": {"field": "m"}}})
    assert [(b["key"], b["doc_count"]) for b in got] == \
        [({"ip": None if k["ip"] is None else ip_text(k["ip"]), "t": k["t"]}, c) for k, c in want]
    for b, (k, _) in zip(got, want):
        ms = {d["m"] for d in comp.values()
              if (ip_bytes_list(d) if k["ip"] is not None else [None]) and
              (k["ip"] in ip_bytes_list(d) if k["ip"] is not None else not ip_bytes_list(d))
              and k["t"] in sources[1].keys(d)}
        assert b["c"]["value"] == len(ms)


def ip_bytes_list(d):
    return [ip_bytes(x) for x in as_list(d.get("ip"))]


def test_missing_bucket_on_a_utc_date_histogram(es, comp):
    """UTC fixed-interval date histograms with `missing_bucket` (here also on the optional
    long `n`, which a date histogram reads as epoch milliseconds)."""
    sources = [
        Src("t", {"date_histogram": {"field": "ts", "fixed_interval": "30d"}},
            lambda d: [d["ts"] // (30 * 86400000) * 30 * 86400000], missing_bucket=True,
            missing_order="last"),
        Src("n", {"date_histogram": {"field": "n", "fixed_interval": "2ms"}},
            lambda d: [v // 2 * 2 for v in as_list(d.get("n"))], missing_bucket=True),
    ]
    check(es, sources, size=9)

"""geo_point fields: input formats, geo_distance / geo_bounding_box queries, the
_geo_distance sort and fields rendering. Expected answers are computed here, in Python,
from the documents the tests index (haversine on ES's earth radius, box membership)."""

import math
import random

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

R = 6371008.7714
LAT_DECODE = 180.0 / 2**32
LON_DECODE = 360.0 / 2**32


def quantize(lat, lon):
    """Lucene's GeoEncodingUtils encode/decode (what ES's doc values hold)."""
    if lat == 90.0:
        lat = math.nextafter(90.0, 0)
    if lon == 180.0:
        lon = math.nextafter(180.0, 0)
    return math.floor(lat / LAT_DECODE) * LAT_DECODE, math.floor(lon / LON_DECODE) * LON_DECODE


def haversine(lat1, lon1, lat2, lon2):
    x1, x2 = math.radians(lat1), math.radians(lat2)
    h1 = 1 - math.cos(x1 - x2)
    h2 = 1 - math.cos(math.radians(lon1 - lon2))
    h = h1 + math.cos(x1) * math.cos(x2) * h2
    return R * 2 * math.asin(min(1.0, math.sqrt(h * 0.5)))


def ids(r):
    return sorted(h["_id"] for h in r["hits"]["hits"])


MAPPING = {"mappings": {"properties": {"loc": {"type": "geo_point"}, "tag": {"type": "keyword"}}}}


@pytest.fixture(scope="module")
def points(es):
    rng = random.Random(11)
    pts = {}
    docs = []
    for i in range(60):
        lat = round(rng.uniform(-60, 60), 6)
        lon = round(rng.uniform(-179.9, 179.9), 6)
        pts[str(i)] = [(lat, lon)]
        fmt = i % 6
        loc = [
            {"lat": lat, "lon": lon},
            f"{lat},{lon}",
            [lon, lat],
            f"POINT ({lon} {lat})",
            {"type": "Point", "coordinates": [lon, lat]},
            [[lon, lat]],
        ][fmt]
        docs.append((str(i), {"loc": loc, "tag": "a"}))
    # A document with two points, and one without a point.
    pts["multi"] = [(10.0, 170.0), (-10.0, -170.0)]
    docs.append(("multi", {"loc": [{"lat": 10.0, "lon": 170.0}, "-10.0,-170.0"]}))
    docs.append(("none", {"tag": "b"}))
    make_index(es, "geo-points", MAPPING, docs)
    return pts


def test_geo_distance_matches_haversine(es, points):
    rng = random.Random(5)
    for _ in range(15):
        clat, clon = rng.uniform(-50, 50), rng.uniform(-170, 170)
        km = rng.choice([500, 1500, 3000])
        r = es.search(
            index="geo-points",
            query={"geo_distance": {"distance": f"{km}km", "loc": {"lat": clat, "lon": clon}}},
            size=100,
        )
        want = sorted(
            d
            for d, ps in points.items()
            if any(haversine(clat, clon, *quantize(la, lo)) <= km * 1000 for la, lo in ps)
        )
        assert ids(r) == want


def test_geo_distance_units_and_formats(es, points):
    la, lo = points["0"][0]
    for center in ([lo, la], f"{la},{lo}", {"lat": la, "lon": lo}, f"POINT ({lo} {la})"):
        for dist in ("1km", "1000m", 0.6, "0.5mi"):
            r = es.search(index="geo-points", query={"geo_distance": {"distance": dist, "loc": center}})
            assert "0" in ids(r)


def in_box(lat, lon, top, left, bottom, right):
    if not bottom <= lat <= top:
        return False
    if left <= right:
        return left <= lon <= right
    return lon >= left or lon <= right


def test_geo_bounding_box(es, points):
    rng = random.Random(9)
    boxes = [(10.5, 160.0, -10.5, -160.0)]  # crossing the dateline
    for _ in range(10):
        b, t = sorted(rng.uniform(-60, 60) for _ in range(2))
        l, r = sorted(rng.uniform(-180, 180) for _ in range(2))
        boxes.append((t, l, b, r))
    for top, left, bottom, right in boxes:
        want = sorted(
            d
            for d, ps in points.items()
            if any(in_box(*quantize(la, lo), top, left, bottom, right) for la, lo in ps)
        )
        for spec in (
            {"top_left": {"lat": top, "lon": left}, "bottom_right": {"lat": bottom, "lon": right}},
            {"top": top, "left": left, "bottom": bottom, "right": right},
            {"wkt": f"BBOX ({left}, {right}, {top}, {bottom})"},
        ):
            r = es.search(index="geo-points", query={"geo_bounding_box": {"loc": spec}}, size=100)
            assert ids(r) == want, spec
    assert "multi" in ids(
        es.search(index="geo-points", query={"geo_bounding_box": {"loc": {"top": 11, "left": 169, "bottom": 9, "right": 171}}})
    )


def test_geo_distance_sort(es, points):
    clat, clon = 20.0, -30.0
    for order, mode in (("asc", None), ("desc", None), ("asc", "max"), ("desc", "avg")):
        spec = {"loc": [clon, clat], "order": order, "unit": "km"}
        if mode:
            spec["mode"] = mode
        r = es.search(index="geo-points", sort=[{"_geo_distance": spec}], size=100)
        hits = r["hits"]["hits"]
        assert hits[-1]["_id"] == "none"
        got = [(h["_id"], h["sort"][0]) for h in hits[:-1]]

        def dist(ps):
            ds = [haversine(clat, clon, *quantize(la, lo)) / 1000 for la, lo in ps]
            m = mode or ("max" if order == "desc" else "min")
            return {"min": min, "max": max, "avg": lambda x: sum(x) / len(x)}[m](ds)

        want = {d: dist(ps) for d, ps in points.items()}
        for d, v in got:
            assert v == pytest.approx(want[d], rel=1e-9)
        vals = [v for _, v in got]
        assert vals == sorted(vals, reverse=order == "desc")
    with pytest.raises(BadRequestError):
        es.search(index="geo-points", sort=[{"loc": "asc"}])
    with pytest.raises(BadRequestError):
        es.search(index="geo-points", sort=[{"_geo_distance": {"loc": [0, 0], "mode": "sum"}}])


def test_fields_and_docvalue_fields(es, points):
    la, lo = points["2"][0]
    r = es.search(index="geo-points", query={"ids": {"values": ["2"]}}, fields=["loc"])
    assert r["hits"]["hits"][0]["fields"]["loc"] == [{"type": "Point", "coordinates": [lo, la]}]
    r = es.search(index="geo-points", query={"ids": {"values": ["2"]}}, fields=[{"field": "loc", "format": "wkt"}])
    assert r["hits"]["hits"][0]["fields"]["loc"] == [f"POINT ({lo!r} {la!r})"]
    r = es.search(index="geo-points", query={"ids": {"values": ["2"]}}, docvalue_fields=["loc"])
    qla, qlo = quantize(la, lo)
    assert r["hits"]["hits"][0]["fields"]["loc"] == [f"{qla!r}, {qlo!r}"]


def test_exists_and_refusals(es, points):
    r = es.search(index="geo-points", query={"exists": {"field": "loc"}}, size=100)
    assert ids(r) == sorted(d for d in points)
    for q in ({"term": {"loc": "1,2"}}, {"range": {"loc": {"gte": 1}}}, {"geo_polygon": {"loc": {"points": []}}}):
        with pytest.raises(BadRequestError):
            es.search(index="geo-points", query=q)
    with pytest.raises(BadRequestError) as e:
        es.search(index="geo-points", query={"geo_distance": {"distance": "1km", "nope": [0, 0]}})
    assert "failed to find geo field [nope]" in str(e.value.body)
    r = es.search(index="geo-points", query={"geo_distance": {"distance": "1km", "nope": [0, 0], "ignore_unmapped": True}})
    assert r["hits"]["total"]["value"] == 0
    with pytest.raises(BadRequestError) as e:
        es.search(index="geo-points", query={"geo_bounding_box": {"loc": {"top": 1, "left": 0, "bottom": 2, "right": 1}}})
    assert "top is below bottom corner" in str(e.value.body)


def test_indexing_errors_and_options(es):
    name = make_index(
        es,
        "geo-opts",
        {"mappings": {"properties": {
            "p": {"type": "geo_point"},
            "m": {"type": "geo_point", "ignore_malformed": True},
            "z": {"type": "geo_point", "ignore_z_value": False},
            "n": {"type": "geo_point", "null_value": "1.5,2.5"},
        }}},
        [],
    )
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, document={"p": {"lat": 91, "lon": 0}})
    err = e.value.body["error"]
    assert err["type"] == "document_parsing_exception"
    assert err["caused_by"]["reason"] == "illegal latitude value [91.0] for p"
    with pytest.raises(BadRequestError) as e:
        es.index(index=name, document={"p": "0,181"})
    assert e.value.body["error"]["caused_by"]["reason"] == "illegal longitude value [181.0] for p"
    with pytest.raises(BadRequestError):
        es.index(index=name, document={"z": [1.0, 2.0, 3.0]})
    with pytest.raises(BadRequestError):
        es.index(index=name, document={"p": "not a point!"})
    es.index(index=name, id="1", document={"m": {"lat": 100, "lon": 0}, "p": [1.0, 2.0, 5.0]})
    es.index(index=name, id="2", document={"m": "garbage!"})
    es.index(index=name, id="3", document={"n": None}, refresh=True)
    # ignore_malformed wraps the point onto the globe: lat 100 -> 80, lon 0 -> 180.
    r = es.search(index=name, query={"geo_distance": {"distance": "1m", "m": [180, 80]}})
    assert ids(r) == ["1"]
    r = es.search(index=name, query={"exists": {"field": "m"}})
    assert ids(r) == ["1"]
    r = es.search(index=name, query={"term": {"_ignored": "m"}})
    assert ids(r) == ["2"]
    r = es.search(index=name, query={"geo_distance": {"distance": "1m", "n": "1.5,2.5"}})
    assert ids(r) == ["3"]


def test_geo_bounds_and_centroid(es, points):
    def expect(docs):
        qs = [quantize(la, lo) for d in docs for la, lo in points[d]]
        lats = [a for a, _ in qs]
        pos = [o for _, o in qs if o >= 0]
        neg = [o for _, o in qs if o < 0]
        top, bottom = max(lats), min(lats)
        if not pos:
            left, right = min(neg), max(neg)
        elif not neg:
            left, right = min(pos), max(pos)
        elif max(pos) - min(neg) <= (180 - min(pos)) - (-180 - max(neg)):
            left, right = min(neg), max(pos)
        else:
            left, right = min(pos), max(neg)
        centroid = (sum(lats) / len(qs), sum(o for _, o in qs) / len(qs))
        return (top, left, bottom, right), centroid, len(qs)

    r = es.search(
        index="geo-points",
        size=0,
        aggs={
            "b": {"geo_bounds": {"field": "loc"}},
            "c": {"geo_centroid": {"field": "loc"}},
            "per": {"terms": {"field": "tag"}, "aggs": {"b": {"geo_bounds": {"field": "loc"}}, "c": {"geo_centroid": {"field": "loc"}}}},
        },
    )
    aggs = r["aggregations"]
    (top, left, bottom, right), (clat, clon), n = expect(list(points))
    b = aggs["b"]["bounds"]
    assert b["top_left"] == {"lat": pytest.approx(top), "lon": pytest.approx(left)}
    assert b["bottom_right"] == {"lat": pytest.approx(bottom), "lon": pytest.approx(right)}
    assert aggs["c"]["count"] == n
    assert aggs["c"]["location"] == {"lat": pytest.approx(clat), "lon": pytest.approx(clon)}
    buckets = {bk["key"]: bk for bk in aggs["per"]["buckets"]}
    assert "bounds" not in buckets["b"]["b"]
    assert buckets["b"]["c"] == {"count": 0}
    # The dateline-crossing pair alone: the narrow box across the dateline.
    r = es.search(index="geo-points", size=0, query={"ids": {"values": ["multi"]}}, aggs={"b": {"geo_bounds": {"field": "loc"}}})
    (top, left, bottom, right), _, _ = expect(["multi"])
    got = r["aggregations"]["b"]["bounds"]
    assert got["top_left"]["lon"] == pytest.approx(left) and left > 0
    assert got["bottom_right"]["lon"] == pytest.approx(right) and right < 0
    with pytest.raises(BadRequestError):
        es.search(index="geo-points", size=0, aggs={"b": {"geo_bounds": {"field": "tag"}}})


def point_in_ring(ring, lon, lat):
    inside = False
    j = len(ring) - 1
    for i in range(len(ring)):
        (xi, yi), (xj, yj) = ring[i], ring[j]
        if (yi > lat) != (yj > lat) and lon < (xj - xi) * (lat - yi) / (yj - yi) + xi:
            inside = not inside
        j = i
    return inside


def test_geo_shape_on_geo_point(es, points):
    r = es.search(
        index="geo-points",
        size=100,
        query={"geo_shape": {"loc": {"shape": {"type": "envelope", "coordinates": [[-100, 40], [20, -30]]}}}},
    )
    want = sorted(d for d, ps in points.items() if any(in_box(*quantize(a, o), 40, -100, -30, 20) for a, o in ps))
    assert ids(r) == want
    outer = [[-120, -50], [60, -50], [60, 50], [-120, 50], [-120, -50]]
    hole = [[-20, -10], [10, -10], [10, 10], [-20, 10], [-20, -10]]
    r = es.search(
        index="geo-points",
        size=100,
        query={"geo_shape": {"loc": {"shape": {"type": "polygon", "coordinates": [outer, hole]}, "relation": "intersects"}}},
    )
    want = sorted(
        d
        for d, ps in points.items()
        if any(
            point_in_ring(outer, q[1], q[0]) and not point_in_ring(hole, q[1], q[0])
            for q in (quantize(a, o) for a, o in ps)
        )
    )
    assert ids(r) == want
    la, lo = points["3"][0]
    r = es.search(index="geo-points", query={"geo_shape": {"loc": {"shape": {"type": "point", "coordinates": [lo, la]}}}})
    assert "3" in ids(r)
    with pytest.raises(BadRequestError):
        es.search(index="geo-points", query={"geo_shape": {"loc": {"shape": {"type": "point", "coordinates": [0, 0]}, "relation": "contains"}}})


def test_geo_distance_aggregation(es, points):
    olat, olon = 10.0, 20.0
    r = es.search(
        index="geo-points",
        size=0,
        aggs={"rings": {
            "geo_distance": {
                "field": "loc",
                "origin": f"{olat},{olon}",
                "unit": "km",
                "ranges": [{"from": 3000, "to": 8000}, {"to": 3000}, {"from": 8000}],
            },
            "aggs": {"c": {"value_count": {"field": "tag"}}},
        }},
    )
    buckets = r["aggregations"]["rings"]["buckets"]
    assert [b["key"] for b in buckets] == ["*-3000.0", "3000.0-8000.0", "8000.0-*"]
    assert [(b.get("from"), b.get("to")) for b in buckets] == [(0.0, 3000.0), (3000.0, 8000.0), (8000.0, None)]
    for b, (lo, hi) in zip(buckets, [(-1, 3000), (3000, 8000), (8000, math.inf)]):
        want = sorted(
            d
            for d, ps in points.items()
            if any(lo <= haversine(olat, olon, *quantize(a, o)) / 1000 < hi for a, o in ps)
        )
        assert b["doc_count"] == len(want)
        assert b["c"]["value"] == sum(1 for d in want if d not in ("multi", "none"))

"""geohash_grid and geotile_grid aggregations on geo_point fields. Expected buckets are
computed here from the indexed points: each point quantized as Lucene's doc values hold it,
its geohash by the published bisection definition, its tile by the slippy-map (web mercator)
formula, a document counted once per distinct cell, buckets ordered as Elasticsearch's
BucketPriorityQueue orders them (doc_count desc, then the cell's hash long desc)."""

import math
import random
from collections import defaultdict

import pytest
from elasticsearch import BadRequestError

from conftest import make_index

LAT_DECODE = 180.0 / 2**32
LON_DECODE = 360.0 / 2**32
BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz"
MERCATOR_LIMIT = 85.0511287798066


def quantize(lat, lon):
    """Lucene's GeoEncodingUtils encode/decode (what ES's doc values hold)."""
    if lat == 90.0:
        lat = math.nextafter(90.0, 0)
    if lon == 180.0:
        lon = math.nextafter(180.0, 0)
    return math.floor(lat / LAT_DECODE) * LAT_DECODE, math.floor(lon / LON_DECODE) * LON_DECODE


def geohash(lat, lon, precision):
    """The geohash of a point: alternate bisections of longitude and latitude, 5 bits a char."""
    lat_lo, lat_hi, lon_lo, lon_hi = -90.0, 90.0, -180.0, 180.0
    bits, even, out = 0, True, []
    for i in range(precision * 5):
        if even:
            mid = (lon_lo + lon_hi) / 2
            bit = lon >= mid
            lon_lo, lon_hi = (mid, lon_hi) if bit else (lon_lo, mid)
        else:
            mid = (lat_lo + lat_hi) / 2
            bit = lat >= mid
            lat_lo, lat_hi = (mid, lat_hi) if bit else (lat_lo, mid)
        bits = bits * 2 + bit
        even = not even
        if i % 5 == 4:
            out.append(BASE32[bits])
            bits = 0
    return "".join(out)


def geohash_cell(h):
    """(min_lat, max_lat, min_lon, max_lon) of a geohash."""
    lat_lo, lat_hi, lon_lo, lon_hi = -90.0, 90.0, -180.0, 180.0
    even = True
    for c in h:
        d = BASE32.index(c)
        for b in range(4, -1, -1):
            bit = (d >> b) & 1
            if even:
                mid = (lon_lo + lon_hi) / 2
                lon_lo, lon_hi = (mid, lon_hi) if bit else (lon_lo, mid)
            else:
                mid = (lat_lo + lat_hi) / 2
                lat_lo, lat_hi = (mid, lat_hi) if bit else (lat_lo, mid)
            even = not even
    return lat_lo, lat_hi, lon_lo, lon_hi


def geohash_long(h):
    """ES's hash long of a geohash: its bits then 4 bits of length, as a signed long."""
    v = 0
    for c in h:
        v = v * 32 + BASE32.index(c)
    v = (v << 4) | len(h)
    return v - (1 << 64) if v >= 1 << 63 else v


def tile(lat, lon, zoom):
    """Slippy-map tile (x, y) of a point; latitudes clipped to the mercator limit."""
    n = 2**zoom
    lat = max(-MERCATOR_LIMIT, min(MERCATOR_LIMIT, lat))
    x = int(math.floor((lon + 180.0) / 360.0 * n))
    phi = math.radians(lat)
    y = int(math.floor((1.0 - math.log(math.tan(math.pi / 4 + phi / 2)) / math.pi) / 2.0 * n))
    return min(max(x, 0), n - 1), min(max(y, 0), n - 1)


def tile_cell(x, y, zoom):
    """(min_lat, max_lat, min_lon, max_lon) of a tile."""
    n = 2**zoom

    def lat_of(row):
        return math.degrees(math.atan(math.sinh(math.pi * (1 - 2 * row / n))))

    return lat_of(y + 1), lat_of(y), x / n * 360.0 - 180.0, (x + 1) / n * 360.0 - 180.0


def tile_long(x, y, zoom):
    return (zoom << 58) | (x << 29) | y


def intersects(cell, box):
    """The cell shares an interior point with the box (touching cells excluded)."""
    min_lat, max_lat, min_lon, max_lon = cell
    top, bottom, left, right = box
    return top > min_lat and bottom < max_lat and left < max_lon and right > min_lon


def expected(docs, cell_of, size=10000, doc_ids=None):
    """[(key, doc_count, [ids])] from {id: [(lat, lon)]}, cell_of(lat, lon) -> (key, hash)
    or None."""
    counts = defaultdict(set)
    hashes = {}
    for i, pts in docs.items():
        if doc_ids is not None and i not in doc_ids:
            continue
        for lat, lon in pts:
            c = cell_of(*quantize(lat, lon))
            if c is None:
                continue
            key, h = c
            hashes[key] = h
            counts[key].add(i)
    out = sorted(counts.items(), key=lambda kv: (-len(kv[1]), -hashes[kv[0]]))
    return [(k, len(v), v) for k, v in out[:size]]


def buckets(agg):
    return [(b["key"], b["doc_count"]) for b in agg["buckets"]]


MAPPING = {
    "mappings": {
        "properties": {
            "loc": {"type": "geo_point"},
            "tag": {"type": "keyword"},
            "n": {"type": "long"},
        }
    }
}


@pytest.fixture(scope="module")
def grid(es):
    rng = random.Random(20)
    centers = [(48.85, 2.35), (40.71, -74.0), (-33.87, 151.21), (35.68, 139.69), (-23.5, -46.6)]
    docs, pts = [], {}
    for i in range(150):
        k = rng.randrange(4) if i % 5 else rng.randrange(len(centers))
        clat, clon = centers[k]
        spread = [0.01, 0.3, 3.0][i % 3]
        p = [(round(clat + rng.uniform(-spread, spread), 6), round(clon + rng.uniform(-spread, spread), 6))]
        if i % 7 == 0:
            # Multi-valued: a point near the first, and one far away.
            p.append((round(p[0][0] + 0.0001, 6), round(p[0][1] + 0.0001, 6)))
            p.append((round(rng.uniform(-70, 70), 6), round(rng.uniform(-179, 179), 6)))
        pts[str(i)] = p
        loc = [{"lat": a, "lon": b} for a, b in p] if len(p) > 1 else f"{p[0][0]},{p[0][1]}"
        docs.append((str(i), {"loc": loc, "tag": "t%d" % (i % 3), "n": i}))
    # Far north and south: beyond the mercator limit, clipped into the first and last rows.
    for j, (lat, lon) in enumerate([(89.5, 10.0), (-88.0, -100.0), (86.0, 10.5)]):
        pts["polar%d" % j] = [(lat, lon)]
        docs.append(("polar%d" % j, {"loc": [lon, lat], "tag": "p", "n": 1000 + j}))
    docs.append(("none", {"tag": "t0", "n": -1}))
    make_index(es, "geo-grid", MAPPING, docs)
    return pts


def hash_cell(p):
    def f(lat, lon):
        h = geohash(lat, lon, p)
        return h, geohash_long(h)

    return f


def tile_of(z, box=None):
    def f(lat, lon):
        x, y = tile(lat, lon, z)
        if box is not None and not intersects(tile_cell(x, y, z), box):
            return None
        return "%d/%d/%d" % (z, x, y), tile_long(x, y, z)

    return f


@pytest.mark.parametrize("precision", [1, 2, 3, 5, 7, 12])
def test_geohash_grid_buckets(es, grid, precision):
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "loc", "precision": precision}}})
    want = expected(grid, hash_cell(precision))
    assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in want]
    assert set(r["aggregations"]["g"]) == {"buckets"}


def test_geohash_grid_default_precision_and_size(es, grid):
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "loc"}}})
    assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in expected(grid, hash_cell(5))]
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "loc", "precision": 2, "size": 3}}})
    assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in expected(grid, hash_cell(2), size=3)]


def geohash_levels(meters):
    """ES's GeoUtils.geoHashLevelsForPrecision: the geohash length whose cells are at most
    that wide (earth equator and polar distance of WGS84's axes)."""
    equator = 2 * math.pi * 6378137.0
    polar = math.pi * 6356752.314245
    ratio = 1 + polar / equator
    width = math.sqrt(meters * meters / (ratio * ratio))
    part = math.ceil(equator / width)
    if part == 1:
        return 1
    bits = int(round(math.ceil(math.log(part) / math.log(2))))
    full, left = bits // 5, bits % 5
    return (full + (left > 0)) + (full + (left > 3))


@pytest.mark.parametrize("distance,meters", [("10km", 10000.0), ("500m", 500.0), ("2000km", 2e6)])
def test_geohash_grid_precision_as_distance(es, grid, distance, meters):
    level = geohash_levels(meters)
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "loc", "precision": distance}}})
    assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in expected(grid, hash_cell(level))]
    # A precision given as a string of digits is a level.
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "loc", "precision": "3"}}})
    assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in expected(grid, hash_cell(3))]


@pytest.mark.parametrize("zoom", [0, 1, 4, 9, 17, 29])
def test_geotile_grid_buckets(es, grid, zoom):
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geotile_grid": {"field": "loc", "precision": zoom}}})
    assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in expected(grid, tile_of(zoom))]


def test_geotile_grid_default_precision(es, grid):
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geotile_grid": {"field": "loc", "size": 4}}})
    assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in expected(grid, tile_of(7), size=4)]


BOX = (49.1234, 35.4321, -80.3456, 140.5678)  # top, bottom, left, right
CROSSING = (55.25, -40.75, 139.123, -46.987)  # crosses the dateline


@pytest.mark.parametrize("box", [BOX, CROSSING])
def test_geo_grid_bounds(es, grid, box):
    top, bottom, left, right = box
    bounds = {"top_left": {"lat": top, "lon": left}, "bottom_right": {"lat": bottom, "lon": right}}

    def in_box(cell):
        min_lat, max_lat, min_lon, max_lon = cell
        if left <= right:
            return intersects(cell, box)
        return intersects(cell, (top, bottom, left, 180.0)) or intersects(cell, (top, bottom, -180.0, right))

    for p in [2, 4]:

        def hcell(lat, lon, p=p):
            h = geohash(lat, lon, p)
            return (h, geohash_long(h)) if in_box(geohash_cell(h)) else None

        r = es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "loc", "precision": p, "bounds": bounds}}})
        assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in expected(grid, hcell)]
    for z in [3, 8]:

        def tcell(lat, lon, z=z):
            x, y = tile(lat, lon, z)
            return ("%d/%d/%d" % (z, x, y), tile_long(x, y, z)) if in_box(tile_cell(x, y, z)) else None

        r = es.search(index="geo-grid", size=0, aggs={"g": {"geotile_grid": {"field": "loc", "precision": z, "bounds": bounds}}})
        assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in expected(grid, tcell)]
    # The WKT form of the same box.
    r = es.search(
        index="geo-grid",
        size=0,
        aggs={"g": {"geotile_grid": {"field": "loc", "precision": 3, "bounds": {"wkt": f"BBOX ({left}, {right}, {top}, {bottom})"}}}},
    )
    want = expected(grid, lambda lat, lon: (lambda x, y: ("3/%d/%d" % (x, y), tile_long(x, y, 3)) if in_box(tile_cell(x, y, 3)) else None)(*tile(lat, lon, 3)))
    assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in want]


def test_geo_grid_sub_aggregations(es, grid):
    r = es.search(
        index="geo-grid",
        size=0,
        aggs={
            "g": {
                "geohash_grid": {"field": "loc", "precision": 3},
                "aggs": {
                    "total": {"sum": {"field": "n"}},
                    "tags": {"terms": {"field": "tag"}},
                    "top": {"top_hits": {"size": 1, "sort": [{"n": "desc"}], "_source": False}},
                    "med": {"percentiles": {"field": "n", "percents": [100]}},
                },
            }
        },
    )
    n_of = {i: (1000 + int(i[5:]) if i.startswith("polar") else int(i)) for i in grid}
    tag_of = {i: ("p" if i.startswith("polar") else "t%d" % (int(i) % 3)) for i in grid}
    want = expected(grid, hash_cell(3))
    got = r["aggregations"]["g"]["buckets"]
    assert [(b["key"], b["doc_count"]) for b in got] == [(k, c) for k, c, _ in want]
    for b, (_, _, ids) in zip(got, want):
        assert b["total"]["value"] == sum(n_of[i] for i in ids)
        tag_counts = defaultdict(int)
        for i in ids:
            tag_counts[tag_of[i]] += 1
        assert {t["key"]: t["doc_count"] for t in b["tags"]["buckets"]} == tag_counts
        best = max(ids, key=lambda i: n_of[i])
        assert [h["_id"] for h in b["top"]["hits"]["hits"]] == [best]
        assert b["top"]["hits"]["total"]["value"] == len(ids)
        assert b["med"]["values"]["100.0"] == max(n_of[i] for i in ids)


def test_geo_grid_under_a_bucket_and_typed_keys(es, grid):
    r = es.search(
        index="geo-grid",
        size=0,
        typed_keys=True,
        query={"range": {"n": {"gte": 0, "lt": 100}}},
        aggs={"tags": {"terms": {"field": "tag"}, "aggs": {"t": {"geotile_grid": {"field": "loc", "precision": 5}}, "h": {"geohash_grid": {"field": "loc", "precision": 1}}}}},
    )
    for b in r["aggregations"]["sterms#tags"]["buckets"]:
        ids = {i for i in grid if not i.startswith("polar") and int(i) < 100 and "t%d" % (int(i) % 3) == b["key"]}
        assert buckets(b["geotile_grid#t"]) == [(k, c) for k, c, _ in expected(grid, tile_of(5), doc_ids=ids)]
        assert buckets(b["geohash_grid#h"]) == [(k, c) for k, c, _ in expected(grid, hash_cell(1), doc_ids=ids)]


def test_geo_grid_unmapped_field(es, grid):
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "nope"}}, "t": {"geotile_grid": {"field": "nope"}}})
    assert r["aggregations"]["g"] == {"buckets": []}
    assert r["aggregations"]["t"] == {"buckets": []}


@pytest.mark.parametrize(
    "body,etype,reason",
    [
        ({"geohash_grid": {"field": "loc", "precision": 13}}, "x_content_parse_exception", "[geohash_grid] failed to parse field [precision]"),
        ({"geohash_grid": {"field": "loc", "precision": 0}}, "x_content_parse_exception", "[geohash_grid] failed to parse field [precision]"),
        ({"geotile_grid": {"field": "loc", "precision": 30}}, "x_content_parse_exception", "[geotile_grid] failed to parse field [precision]"),
        ({"geotile_grid": {"field": "loc", "precision": -1}}, "x_content_parse_exception", "[geotile_grid] failed to parse field [precision]"),
        ({"geohash_grid": {"field": "loc", "precision": "1mm"}}, "x_content_parse_exception", "[geohash_grid] failed to parse field [precision]"),
        ({"geohash_grid": {"field": "loc", "size": 0}}, "x_content_parse_exception", "[geohash_grid] failed to parse field [size]"),
        ({"geotile_grid": {"field": "loc", "shard_size": -2}}, "x_content_parse_exception", "[geotile_grid] failed to parse field [shard_size]"),
        ({"geohash_grid": {"field": "tag"}}, "illegal_argument_exception", "Field [tag] of type [keyword] is not supported for aggregation [geohash_grid]"),
        ({"geotile_grid": {"field": "n"}}, "illegal_argument_exception", "Field [n] of type [long] is not supported for aggregation [geotile_grid]"),
        ({"geotile_grid": {"precision": 3}}, "illegal_argument_exception", "Required one of fields [field], but none were specified. "),
        ({"geohash_grid": {"field": "loc", "foo": 1}}, "x_content_parse_exception", "[geohash_grid] unknown field [foo]"),
    ],
)
def test_geo_grid_errors(es, grid, body, etype, reason):
    with pytest.raises(BadRequestError) as e:
        es.search(index="geo-grid", size=0, aggs={"g": body})
    err = e.value.body["error"]
    assert e.value.meta.status == 400
    causes = [err] + err.get("root_cause", [])
    assert any(c["type"] == etype and c["reason"] == reason for c in causes), err


def test_geo_grid_precision_error_causes(es, grid):
    with pytest.raises(BadRequestError) as e:
        es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "loc", "precision": 13}}})
    cause = e.value.body["error"]["caused_by"]
    assert cause["type"] == "illegal_argument_exception"
    assert cause["reason"] == "Invalid geohash aggregation precision of 13. Must be between 1 and 12."
    with pytest.raises(BadRequestError) as e:
        es.search(index="geo-grid", size=0, aggs={"g": {"geotile_grid": {"field": "loc", "precision": 30}}})
    cause = e.value.body["error"]["caused_by"]
    assert cause["reason"] == "Invalid geotile_grid precision of 30. Must be between 0 and 29."
    with pytest.raises(BadRequestError) as e:
        es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "loc", "precision": "1mm"}}})
    cause = e.value.body["error"]["caused_by"]
    assert cause["reason"] == "precision too high [1mm]"


def test_geo_grid_across_shards_and_pipeline(es, grid):
    """Three shards (documents routed by id) merge into the same buckets; a bucket pipeline
    reads the grid's buckets."""
    docs = []
    for i, pts in grid.items():
        docs.append((i, {"loc": [{"lat": a, "lon": b} for a, b in pts]}))
    body = {"settings": {"number_of_shards": 3}, "mappings": {"properties": {"loc": {"type": "geo_point"}}}}
    make_index(es, "geo-grid-3", body, docs)
    r = es.search(
        index="geo-grid-3",
        size=0,
        aggs={
            "h": {"geohash_grid": {"field": "loc", "precision": 4}},
            "t": {"geotile_grid": {"field": "loc", "precision": 6, "size": 5}},
            "most": {"max_bucket": {"buckets_path": "h>_count"}},
        },
    )
    want = expected(grid, hash_cell(4))
    assert buckets(r["aggregations"]["h"]) == [(k, c) for k, c, _ in want]
    assert buckets(r["aggregations"]["t"]) == [(k, c) for k, c, _ in expected(grid, tile_of(6), size=5)]
    top = want[0][1]
    assert r["aggregations"]["most"]["value"] == top
    assert r["aggregations"]["most"]["keys"] == [k for k, c, _ in want if c == top]


def test_geo_grid_refusals(es, grid):
    """What Lode does not implement is refused with a 400, never ignored."""
    for aggs in [
        {"g": {"geohash_grid": {"field": "loc", "value_type": "geo_point"}}},
    ]:
        with pytest.raises(BadRequestError):
            es.search(index="geo-grid", size=0, aggs=aggs)


def test_geo_grid_missing(es, grid):
    """`missing`: documents without a point count in the missing point's cell."""
    with_none = dict(grid)
    with_none["none"] = [(48.8566, 2.3522)]
    for agg, cell_of in [
        ({"geohash_grid": {"field": "loc", "precision": 4, "missing": "48.8566,2.3522"}}, hash_cell(4)),
        ({"geotile_grid": {"field": "loc", "precision": 9, "missing": "POINT (2.3522 48.8566)"}}, tile_of(9)),
    ]:
        r = es.search(index="geo-grid", size=0, aggs={"g": agg, "g2": {**agg, "aggs": {"top": {"top_hits": {"size": 100, "_source": False}}}}})
        want = expected(with_none, cell_of)
        assert buckets(r["aggregations"]["g"]) == [(k, c) for k, c, _ in want]
        for b, (_, _, ids) in zip(r["aggregations"]["g2"]["buckets"], want):
            assert sorted(h["_id"] for h in b["top"]["hits"]["hits"]) == sorted(ids)
    # On an unmapped field every document has the missing point.
    r = es.search(index="geo-grid", size=0, aggs={"g": {"geohash_grid": {"field": "nope", "precision": 2, "missing": "u0"}}})
    assert buckets(r["aggregations"]["g"]) == [("u0", len(grid) + 1)]

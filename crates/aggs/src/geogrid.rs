//! `geohash_grid` and `geotile_grid` on `geo_point` fields: the cell math of Elasticsearch's
//! `Geohash` and `GeoTileUtils`, the bounds filters of `GeoHashBoundedPredicate` and
//! `GeoTileBoundedPredicate`, and a computed column ([`CellProvider`]) that maps each document
//! to the distinct cells of its points, as ES's `CellIdSource`, so tantivy's `terms` runs over
//! the cells with the sub-aggregations. A cell is its ES `hashAsLong` (the geohash long format
//! `bits << 4 | level`, or `zoom << 58 | x << 29 | y`), kept as the bucket key: buckets are
//! ordered as ES's `BucketPriorityQueue` orders them (count desc, then hash desc).

use lode_engine::geo;
use std::sync::Arc;
use tantivy::aggregation::{ValueSource, ValueSourceProvider};
use tantivy::columnar::{Cardinality, Column, ColumnType, RowId};
use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::{DocId, Score, SegmentReader};

/// ES's `Geohash.PRECISION`.
pub(crate) const GEOHASH_MAX: u32 = 12;
/// ES's `GeoTileUtils.MAX_ZOOM`.
pub(crate) const TILE_MAX_ZOOM: u32 = 29;
const ZOOM_SHIFT: u32 = TILE_MAX_ZOOM * 2;
const XY_MASK: u64 = (1 << TILE_MAX_ZOOM) - 1;

/// A `bounds` box as ES's `GeoBoundingBox` holds it (no validation, as ES).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BBox {
    pub top: f64,
    pub bottom: f64,
    pub left: f64,
    pub right: f64,
}

/// Which grid, at which precision, with which bounds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grid {
    pub tile: bool,
    pub precision: u32,
    pub bounds: Option<BBox>,
    /// The point of documents without one (`missing`).
    pub missing: Option<(f64, f64)>,
}

impl Grid {
    /// A cell test ready for many points.
    pub fn cells(&self) -> Cells {
        let tile_bounds = match (self.tile, self.bounds) {
            (true, Some(b)) => Some(TileBounds::new(self.precision, b)),
            _ => None,
        };
        Cells {
            grid: self.clone(),
            tile_bounds,
        }
    }

    /// The bucket key of a cell (`"u09tv"`, `"7/64/42"`).
    pub fn key(&self, hash: u64) -> String {
        if self.tile {
            tile_string(hash)
        } else {
            geohash_string(hash)
        }
    }
}

/// [`Grid`] with the tile bounds precomputed.
#[derive(Debug, Clone)]
pub(crate) struct Cells {
    grid: Grid,
    tile_bounds: Option<TileBounds>,
}

impl Cells {
    /// The cell of a column value (a quantized point), or `None` outside the bounds.
    pub fn of(&self, v: u64) -> Option<u64> {
        let lat_enc = (v >> 32) as u32 as i32;
        let lon_enc = v as u32 as i32;
        self.of_point(geo::decode_lat(lat_enc), geo::decode_lon(lon_enc))
    }

    /// The cell of a point (ES computes tiles from the point it reads, geohashes from its
    /// encoding).
    pub fn of_point(&self, lat: f64, lon: f64) -> Option<u64> {
        let p = self.grid.precision;
        if self.grid.tile {
            let tiles = 1u64 << p;
            let x = tile_x(lon, tiles);
            let y = tile_y(lat, tiles);
            if let Some(b) = &self.tile_bounds {
                if !b.valid(x, y) {
                    return None;
                }
            }
            Some(tile_long(p, x, y))
        } else {
            let hash = geohash_long(geo::encode_lat(lat), geo::encode_lon(lon), p);
            match &self.grid.bounds {
                Some(b) if !geohash_in_bounds(hash, b) => None,
                _ => Some(hash),
            }
        }
    }

    /// The cell of the `missing` point, if any.
    fn missing(&self) -> Option<u64> {
        let (lat, lon) = self.grid.missing?;
        self.of_point(lat, lon)
    }
}

// ---------------------------------------------------------------------------------------------
// Geohash (ES's `org.elasticsearch.geometry.utils.Geohash`)

const BASE32: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
const LAT_SCALE: f64 = (1u64 << 31) as f64 / 180.0;
const LON_SCALE: f64 = (1u64 << 31) as f64 / 360.0;

/// Spreads the 32 bits of `v` over the even bits of a `u64`.
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    x = (x | (x << 1)) & 0x5555_5555_5555_5555;
    x
}

/// `Geohash.longEncode(lon, lat, level)` of a quantized point (Lucene's encoded latitude and
/// longitude): the top `5 * level` bits of the longitude/latitude interleave (sign bits
/// flipped), then 4 bits of level.
pub(crate) fn geohash_long(lat_enc: i32, lon_enc: i32, level: u32) -> u64 {
    let lat = (lat_enc as u32) ^ 0x8000_0000;
    let lon = (lon_enc as u32) ^ 0x8000_0000;
    let interleaved = (spread(lon) << 1) | spread(lat);
    ((interleaved >> (64 - 5 * level)) << 4) | level as u64
}

/// `Geohash.stringEncode(long)`.
pub(crate) fn geohash_string(hash: u64) -> String {
    let level = (hash & 15) as usize;
    let mut bits = hash >> 4;
    let mut out = vec![0u8; level];
    for c in out.iter_mut().rev() {
        *c = BASE32[(bits & 31) as usize];
        bits >>= 5;
    }
    String::from_utf8(out).expect("ascii")
}

/// `Geohash.toBoundingBox` of a geohash long: `(min_lon, max_lon, max_lat, min_lat)`.
pub(crate) fn geohash_bbox(hash: u64) -> (f64, f64, f64, f64) {
    let level = (hash & 15) as u32;
    let bits = hash >> 4;
    let n = 5 * level;
    // The longitude has the bits at odd positions counted from the top (the first bit).
    let (mut lon, mut lat, mut nlon, mut nlat) = (0u64, 0u64, 0u32, 0u32);
    for i in 0..n {
        let b = (bits >> (n - 1 - i)) & 1;
        if i % 2 == 0 {
            lon = (lon << 1) | b;
            nlon += 1;
        } else {
            lat = (lat << 1) | b;
            nlat += 1;
        }
    }
    let lon_at = |idx: u64| ((idx << (31 - nlon)) as f64 / LON_SCALE) - 180.0;
    let lat_at = |idx: u64| ((idx << (31 - nlat)) as f64 / LAT_SCALE) - 90.0;
    let max_lat = if nlat == 30 && lat == (1 << 30) - 1 {
        90.0
    } else {
        lat_at(lat + 1)
    };
    (lon_at(lon), lon_at(lon + 1), max_lat, lat_at(lat))
}

/// `GeoHashBoundedPredicate#validHash`: the cell shares an interior point with the box
/// (touching cells are excluded).
fn geohash_in_bounds(hash: u64, b: &BBox) -> bool {
    let (min_x, max_x, max_y, min_y) = geohash_bbox(hash);
    let crosses = b.right < b.left;
    let intersects = |min_x: f64, max_x: f64| {
        if b.top > min_y && b.bottom < max_y {
            if crosses {
                b.left < max_x || b.right > min_x
            } else {
                b.left < max_x && b.right > min_x
            }
        } else {
            false
        }
    };
    if max_x < min_x {
        intersects(-180.0, max_x) || intersects(min_x, 180.0)
    } else {
        intersects(min_x, max_x)
    }
}

/// ES's `GeoUtils.geoHashLevelsForPrecision(meters)` (24 for 0, Lucene's
/// `GeohashPrefixTree.getMaxLevelsPossible()`).
pub(crate) fn geohash_levels_for_precision(meters: f64) -> i64 {
    const SEMI_MAJOR: f64 = 6378137.0;
    const SEMI_MINOR: f64 = 6356752.314245;
    let equator = 2.0 * std::f64::consts::PI * SEMI_MAJOR;
    let polar = std::f64::consts::PI * SEMI_MINOR;
    if meters == 0.0 {
        return 24;
    }
    let ratio = 1.0 + polar / equator;
    let width = ((meters * meters) / (ratio * ratio)).sqrt();
    let part = (equator / width).ceil();
    if part == 1.0 {
        return 1;
    }
    let bits = (part.ln() / 2f64.ln()).ceil().round() as i64;
    let full = bits / 5;
    let left = bits - full * 5;
    let even = full + (left > 0) as i64;
    let odd = full + (left > 3) as i64;
    even + odd
}

// ---------------------------------------------------------------------------------------------
// Geotiles (ES's `GeoTileUtils`)

/// ES's `GeoTileUtils.LATITUDE_MASK`.
pub(crate) const LATITUDE_MASK: f64 = 85.0511287798066;

fn centered_modulus(dividend: f64, divisor: f64) -> f64 {
    let mut rem = dividend % divisor;
    if rem < 0.0 {
        rem += divisor;
    }
    if rem > divisor / 2.0 {
        rem -= divisor;
    }
    rem
}

/// ES's `GeoUtils.normalizeLon`.
fn normalize_lon(lon: f64) -> f64 {
    if lon > 180.0 || lon <= -180.0 {
        centered_modulus(lon, 360.0)
    } else {
        lon
    }
}

/// ES's `GeoUtils.normalizeLat`.
fn normalize_lat(lat: f64) -> f64 {
    if !(-90.0..=90.0).contains(&lat) {
        let l = centered_modulus(lat, 360.0);
        if l < -90.0 {
            -180.0 - l
        } else if l > 90.0 {
            180.0 - l
        } else {
            l
        }
    } else {
        lat
    }
}

/// Java's `(int) Math.floor(x)` clipped to `[0, tiles)`.
fn clip_tile(x: f64, tiles: u64) -> u64 {
    let t = x.floor();
    if t.is_nan() || t < 0.0 {
        0
    } else if t >= tiles as f64 {
        tiles - 1
    } else {
        t as u64
    }
}

/// `GeoTileUtils.getXTile`.
pub(crate) fn tile_x(lon: f64, tiles: u64) -> u64 {
    if lon == -180.0 {
        return 0;
    }
    clip_tile((normalize_lon(lon) + 180.0) / 360.0 * tiles as f64, tiles)
}

/// `GeoTileUtils.getYTile` (web mercator; latitudes beyond [`LATITUDE_MASK`] clip to the
/// first or last row).
pub(crate) fn tile_y(lat: f64, tiles: u64) -> u64 {
    let lat_sin = (std::f64::consts::FRAC_PI_2 - normalize_lat(lat).to_radians()).cos();
    let y = (0.5 - ((1.0 + lat_sin) / (1.0 - lat_sin)).ln() / (4.0 * std::f64::consts::PI))
        * tiles as f64;
    // Java's `(int)` of an infinite value saturates, then the clip applies.
    clip_tile(y, tiles)
}

/// `GeoTileUtils.longEncodeTiles`.
pub(crate) fn tile_long(precision: u32, x: u64, y: u64) -> u64 {
    ((precision as u64) << ZOOM_SHIFT) | (x << TILE_MAX_ZOOM) | y
}

/// `GeoTileUtils.longEncode(lon, lat, precision)`.
#[cfg(test)]
pub(crate) fn tile_long_of(lon: f64, lat: f64, precision: u32) -> u64 {
    let tiles = 1u64 << precision;
    tile_long(precision, tile_x(lon, tiles), tile_y(lat, tiles))
}

/// `GeoTileUtils.stringEncode`: `"zoom/x/y"`.
pub(crate) fn tile_string(hash: u64) -> String {
    let zoom = hash >> ZOOM_SHIFT;
    let x = (hash >> TILE_MAX_ZOOM) & XY_MASK;
    let y = hash & XY_MASK;
    format!("{zoom}/{x}/{y}")
}

/// `GeoTileUtils.toBoundingBox(x, y, precision)`: `(min_x, max_x, max_y, min_y)`.
pub(crate) fn tile_bbox(x: u64, y: u64, precision: u32) -> (f64, f64, f64, f64) {
    let tiles = (1u64 << precision) as f64;
    let pi = std::f64::consts::PI;
    let min_n = pi - (2.0 * pi * (y as f64 + 1.0)) / tiles;
    let max_n = pi - (2.0 * pi * y as f64) / tiles;
    let min_y = min_n.sinh().atan().to_degrees();
    let max_y = max_n.sinh().atan().to_degrees();
    let min_x = (x as f64 / tiles * 360.0) - 180.0;
    let max_x = ((x as f64 + 1.0) / tiles * 360.0) - 180.0;
    (min_x, max_x, max_y, min_y)
}

/// Lucene's `encodeLatitude`/`encodeLongitude` of a value clamped into range (Lucene refuses
/// values out of range; a box edge beyond them compares as the range's end).
fn enc_lat(lat: f64) -> i32 {
    geo::encode_lat(lat.clamp(-90.0, 90.0))
}

fn enc_lon(lon: f64) -> i32 {
    geo::encode_lon(lon.clamp(-180.0, 180.0))
}

/// `GeoTileBoundedPredicate`: the tiles sharing an interior point with the box.
#[derive(Debug, Clone)]
struct TileBounds {
    crosses: bool,
    left_x: i64,
    right_x: i64,
    min_y: i64,
    max_y: i64,
}

impl TileBounds {
    fn new(precision: u32, b: BBox) -> TileBounds {
        let crosses = b.right < b.left;
        let mask = geo::decode_lat(geo::encode_lat(LATITUDE_MASK));
        let neg_mask = geo::decode_lat(geo::encode_lat(-LATITUDE_MASK));
        if b.bottom > mask || b.top < neg_mask {
            return TileBounds {
                crosses,
                left_x: -1,
                right_x: -1,
                min_y: -1,
                max_y: -1,
            };
        }
        let tiles = 1u64 << precision;
        let min_x = tile_x(b.left, tiles);
        let min_y = tile_y(b.top, tiles);
        let (_, min_tile_max_x, _, min_tile_min_y) = tile_bbox(min_x, min_y, precision);
        let left_x = min_x as i64 + (enc_lon(min_tile_max_x) == enc_lon(b.left)) as i64;
        let min_y_out = min_y as i64 + (enc_lat(min_tile_min_y) == enc_lat(b.top)) as i64;
        let max_x = tile_x(b.right, tiles);
        let max_y = tile_y(b.bottom, tiles);
        let (max_tile_min_x, _, max_tile_max_y, _) = tile_bbox(max_x, max_y, precision);
        let right_x = max_x as i64 + (enc_lon(max_tile_min_x) != enc_lon(b.right)) as i64;
        let max_y_out = max_y as i64 + (enc_lat(max_tile_max_y) != enc_lat(b.bottom)) as i64;
        TileBounds {
            crosses,
            left_x,
            right_x,
            min_y: min_y_out,
            max_y: max_y_out,
        }
    }

    /// `validTile(x, y, precision)` at the predicate's own precision.
    fn valid(&self, x: u64, y: u64) -> bool {
        let (x, y) = (x as i64, y as i64);
        if self.max_y > y && self.min_y < y + 1 {
            if self.crosses {
                self.right_x > x || self.left_x < x + 1
            } else {
                self.right_x > x && self.left_x < x + 1
            }
        } else {
            false
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The computed column and the cell query

/// Each document's distinct cells (of the points inside the bounds), ascending.
pub(crate) struct CellProvider {
    pub field: String,
    pub grid: Grid,
}

impl ValueSourceProvider for CellProvider {
    fn for_segment(
        &self,
        reader: &SegmentReader,
        _allowed: Option<&[ColumnType]>,
    ) -> tantivy::Result<Option<Box<dyn ValueSource>>> {
        let column = reader.fast_fields().column_opt::<u64>(&self.field)?;
        if column.is_none() && self.grid.missing.is_none() {
            return Ok(None);
        }
        Ok(Some(Box::new(CellSource {
            column,
            cells: Arc::new(self.grid.cells()),
            buf: Vec::new(),
        })))
    }
}

struct CellSource {
    column: Option<Column<u64>>,
    cells: Arc<Cells>,
    buf: Vec<u64>,
}

impl std::fmt::Debug for CellSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CellSource")
            .field("grid", &self.cells.grid)
            .finish()
    }
}

/// The distinct cells of one document's points into `buf` (cleared first), ascending; a
/// document without points has the `missing` point's.
fn doc_cells(column: Option<&Column<u64>>, cells: &Cells, doc: DocId, buf: &mut Vec<u64>) {
    buf.clear();
    let mut any = false;
    if let Some(column) = column {
        buf.extend(column.values_for_doc(doc).filter_map(|v| {
            any = true;
            cells.of(v)
        }));
    }
    if !any {
        buf.extend(cells.missing());
    }
    if buf.len() > 1 {
        buf.sort_unstable();
        buf.dedup();
    }
}

impl ValueSource for CellSource {
    fn column_type(&self) -> ColumnType {
        ColumnType::U64
    }

    fn load_block(
        &mut self,
        docs: &[DocId],
        values: &mut Vec<u64>,
        docids: &mut Vec<DocId>,
        _row_ids: &mut Vec<RowId>,
    ) -> Cardinality {
        values.clear();
        docids.clear();
        for &doc in docs {
            doc_cells(self.column.as_ref(), &self.cells, doc, &mut self.buf);
            for &c in &self.buf {
                values.push(c);
                docids.push(doc);
            }
        }
        Cardinality::Multivalued
    }

    fn to_f64(self: Box<Self>) -> Box<dyn ValueSource> {
        self
    }
}

/// The documents with a point in one cell (a grid bucket, for aggregations that re-query
/// their bucket: `top_hits`, `top_metrics`, the sketch metrics).
#[derive(Clone, Debug)]
pub(crate) struct CellQuery {
    pub field: String,
    pub grid: Grid,
    pub cell: u64,
}

impl CellQuery {
    fn doc_set(&self, reader: &SegmentReader) -> tantivy::Result<tantivy::BitSet> {
        let max_doc = reader.max_doc();
        let mut set = tantivy::BitSet::with_max_value(max_doc.max(1));
        let col = reader.fast_fields().column_opt::<u64>(&self.field)?;
        let cells = self.grid.cells();
        let mut buf = Vec::new();
        for doc in 0..max_doc {
            doc_cells(col.as_ref(), &cells, doc, &mut buf);
            if buf.contains(&self.cell) {
                set.insert(doc);
            }
        }
        Ok(set)
    }
}

impl Query for CellQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for CellQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let set = self.doc_set(reader)?;
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(set), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.doc_set(reader)?.contains(doc) {
            Ok(Explanation::new("GeoCellQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(lat: f64, lon: f64, level: u32) -> String {
        geohash_string(geohash_long(
            geo::encode_lat(lat),
            geo::encode_lon(lon),
            level,
        ))
    }

    fn tile(lat: f64, lon: f64, zoom: u32) -> String {
        tile_string(tile_long_of(lon, lat, zoom))
    }

    #[test]
    fn geohash_as_es() {
        // ES's GeohashTests#testGeohashExtremes.
        assert_eq!(hash(-90.0, -180.0, 12), "000000000000");
        assert_eq!(hash(0.0, -180.0, 12), "800000000000");
        assert_eq!(hash(90.0, -180.0, 12), "bpbpbpbpbpbp");
        assert_eq!(hash(-90.0, 0.0, 12), "h00000000000");
        assert_eq!(hash(0.0, 0.0, 12), "s00000000000");
        assert_eq!(hash(90.0, 0.0, 12), "upbpbpbpbpbp");
        assert_eq!(hash(-90.0, 180.0, 12), "pbpbpbpbpbpb");
        assert_eq!(hash(0.0, 180.0, 12), "xbpbpbpbpbpb");
        assert_eq!(hash(90.0, 180.0, 12), "zzzzzzzzzzzz");
        // The same cell as the floating-point geohash away from cell edges.
        for (lat, lon) in [(52.374, 4.912), (-12.5, 130.3), (0.0001, -0.0001)] {
            for level in 1..=12 {
                assert_eq!(
                    hash(lat, lon, level),
                    geo::geohash(lat, lon, level as usize)
                );
            }
        }
        // ES's GeohashTests#testNorthPoleBoundingBox.
        let north = geohash_long(geo::encode_lat(90.0), geo::encode_lon(179.99999), 12);
        assert_eq!(geohash_bbox(north).2, 90.0);
        // Level 1 "u": lon [0, 45], lat [45, 90].
        let u = geohash_long(geo::encode_lat(50.0), geo::encode_lon(10.0), 1);
        assert_eq!(geohash_string(u), "u");
        assert_eq!(geohash_bbox(u), (0.0, 45.0, 90.0, 45.0));
        // ES's GeohashTests#testBboxFromHash: cell widths at each level.
        for level in 1..=12u32 {
            let h = geohash_long(geo::encode_lat(42.3), geo::encode_lon(-71.1), level);
            let (min_x, max_x, max_y, min_y) = geohash_bbox(h);
            let l = level as i32;
            let lat_diff = 180.0 / (4f64.powi((l + 1) / 2) * 8f64.powi(l / 2));
            let lon_diff = 360.0 / (8f64.powi((l + 1) / 2) * 4f64.powi(l / 2));
            assert!((max_x - min_x - lon_diff).abs() < 1e-5, "{level}");
            assert!((max_y - min_y - lat_diff).abs() < 1e-5, "{level}");
            assert!(min_x <= -71.1 && -71.1 < max_x && min_y <= 42.3 && 42.3 < max_y);
        }
        // The east hemisphere at level 12 has the top bit set (a negative long in Java).
        assert!(geohash_long(geo::encode_lat(1.0), geo::encode_lon(1.0), 12) > i64::MAX as u64);
    }

    #[test]
    fn geohash_levels_as_es() {
        assert_eq!(geohash_levels_for_precision(0.0), 24);
        // ES's default `precision` of geo_shape's geohash tree: 50m is 9 levels.
        assert_eq!(geohash_levels_for_precision(50.0), 9);
        assert_eq!(geohash_levels_for_precision(1000.0), 7);
        assert_eq!(geohash_levels_for_precision(10000.0), 5);
        assert_eq!(geohash_levels_for_precision(1e9), 1);
    }

    #[test]
    fn tiles_as_es() {
        // ES's GeoTileUtilsTests#testLongEncode (longEncode(lon, lat, zoom)).
        let cases: &[(f64, f64, u32, u64)] = &[
            (0.0, 0.0, 0, 0x0000000000000000),
            (30.0, 70.0, 15, 0x3C00095540001CA5),
            (179.999, 89.999, 29, 0x77FFFF4580000000),
            (-179.999, -89.999, 29, 0x740000BA7FFFFFFF),
            (1.0, 1.0, 2, 0x0800000040000001),
            (-20.0, 100.0, 3, 0x0C00000060000000),
            (13.0, -15.0, 28, 0x71127D27C8ACA67A),
            (-12.0, 15.0, 19, 0x4C0077776003A9AC),
            (-328.231870, 16.064082, 5, 0x140000024000000E),
            (-590.769588, 89.549167, 25, 0x6436F96B60000000),
            (999.787079, 51.830093, 25, 0x6411BD6BA0A98359),
            (999.787079, 51.830093, 29, 0x751BD6BBCA983596),
            (-557.039740, -632.103969, 29, 0x77CF880A20000000),
            (13.0, 88.0, 29, 0x7624FA4FA0000000),
            (13.0, -88.0, 29, 0x7624FA4FBFFFFFFF),
            (13.0, 89.0, 1, 0x0400000020000000),
            (13.0, -89.0, 1, 0x0400000020000001),
            (13.0, 95.0, 1, 0x0400000020000000),
            (13.0, -95.0, 1, 0x0400000020000001),
        ];
        for &(lon, lat, zoom, expected) in cases {
            assert_eq!(tile_long_of(lon, lat, zoom), expected, "{lon} {lat} {zoom}");
        }
        // ES's GeoTileUtilsTests#testStringEncode.
        assert_eq!(tile_string(0x3C00095540001CA5), "15/19114/7333");
        assert_eq!(tile_string(0x77FFFF4580000000), "29/536869420/0");
        assert_eq!(tile_string(0x740000BA7FFFFFFF), "29/1491/536870911");
        assert_eq!(tile_string(0x0800000040000001), "2/2/1");
        assert_eq!(tile_string(0x71127D27C8ACA67A), "28/143911230/145532538");
        assert_eq!(tile_string(0x0400000020000001), "1/1/1");
        assert_eq!(tile(0.0, 0.0, 0), "0/0/0");
        // ES's GeoTileUtilsTests#testSingularityAtPoles: clipped to the first and last rows.
        assert_eq!(tile(89.0, 10.0, 3), tile(LATITUDE_MASK, 10.0, 3));
        assert_eq!(tile(-89.0, 10.0, 3), tile(-LATITUDE_MASK, 10.0, 3));
        // ES's GeoTileUtilsTests#testHashToGeoPoint corners: tile 1/0/0 spans lat 0..85.05.
        let (min_x, max_x, max_y, min_y) = tile_bbox(0, 0, 1);
        assert_eq!((min_x, max_x), (-180.0, 0.0));
        assert!((max_y - LATITUDE_MASK).abs() < 1e-9 && min_y.abs() < 1e-9);
    }

    #[test]
    fn bounds_filter_cells() {
        let b = BBox {
            top: 10.0,
            bottom: -10.0,
            left: -10.0,
            right: 10.0,
        };
        let hash = Grid {
            tile: false,
            precision: 1,
            bounds: Some(b),
            missing: None,
        }
        .cells();
        // Level 1 cells are 45 x 45: the box touches four of them.
        let p = |lat: f64, lon: f64| geo::encode(lat, lon);
        assert!(hash.of(p(5.0, 5.0)).is_some());
        assert!(hash.of(p(40.0, 40.0)).is_some());
        assert!(hash.of(p(50.0, 5.0)).is_none());
        assert!(hash.of(p(5.0, 50.0)).is_none());
        let tile = Grid {
            tile: true,
            precision: 2,
            bounds: Some(b),
            missing: None,
        }
        .cells();
        // Zoom 2: x tiles of 90 degrees, the box is inside tiles x 1..2, y 1..2.
        assert_eq!(
            tile.of(p(5.0, 5.0)).map(tile_string).as_deref(),
            Some("2/2/1")
        );
        assert_eq!(
            tile.of(p(-5.0, -5.0)).map(tile_string).as_deref(),
            Some("2/1/2")
        );
        assert!(tile.of(p(5.0, 100.0)).is_none());
        assert!(tile.of(p(70.0, 5.0)).is_none());
        // Crossing the dateline.
        let cross = Grid {
            tile: true,
            precision: 2,
            bounds: Some(BBox {
                top: 10.0,
                bottom: -10.0,
                left: 170.0,
                right: -170.0,
            }),
            missing: None,
        }
        .cells();
        assert!(cross.of(p(5.0, 175.0)).is_some());
        assert!(cross.of(p(5.0, -175.0)).is_some());
        assert!(cross.of(p(5.0, 0.0)).is_none());
    }

    fn parse(body: serde_json::Value) -> lode_engine::EsResult<crate::request::GeoGridReq> {
        let req = crate::request::parse_aggs(&serde_json::json!({ "g": body }))?;
        match &req.aggs[0].kind {
            crate::request::AggKind::GeoGrid(g) => Ok(g.clone()),
            _ => panic!("not a grid"),
        }
    }

    #[test]
    fn parses_as_es() {
        use serde_json::json;
        let g = parse(json!({"geohash_grid": {"field": "loc"}})).unwrap();
        assert_eq!(
            (g.grid.tile, g.grid.precision, g.size, g.shard_size),
            (false, 5, 10_000, 15_010)
        );
        let g = parse(json!({"geotile_grid": {"field": "loc", "size": 3}})).unwrap();
        assert_eq!(
            (g.grid.tile, g.grid.precision, g.size, g.shard_size),
            (true, 7, 3, 14)
        );
        // `shard_size` below `size` is raised to it.
        let g =
            parse(json!({"geotile_grid": {"field": "loc", "size": 30, "shard_size": 5}})).unwrap();
        assert_eq!(g.shard_size, 30);
        let g = parse(json!({"geohash_grid": {"field": "loc", "precision": "10km"}})).unwrap();
        assert_eq!(g.grid.precision, 5);
        let g = parse(json!({"geohash_grid": {"field": "loc", "precision": "8"}})).unwrap();
        assert_eq!(g.grid.precision, 8);
        let g = parse(json!({"geotile_grid": {"field": "loc", "precision": 0,
            "bounds": {"top": 10, "left": -5, "bottom": -10, "right": 5}}}))
        .unwrap();
        assert_eq!(
            g.grid.bounds,
            Some(BBox {
                top: 10.0,
                bottom: -10.0,
                left: -5.0,
                right: 5.0
            })
        );
        let e = parse(json!({"geohash_grid": {"field": "loc", "precision": 13}})).unwrap_err();
        assert_eq!(e.reason, "[geohash_grid] failed to parse field [precision]");
        let e = parse(json!({"geotile_grid": {"field": "loc", "precision": "x"}})).unwrap_err();
        assert_eq!(e.reason, "[geotile_grid] failed to parse field [precision]");
        let e = parse(json!({"geotile_grid": {"field": "loc", "precision": true}})).unwrap_err();
        assert_eq!(
            e.reason,
            "[geotile_grid] precision doesn't support values of type: VALUE_BOOLEAN"
        );
        let e = parse(json!({"geohash_grid": {"field": "loc", "bounds": "x"}})).unwrap_err();
        assert_eq!(
            e.reason,
            "[geohash_grid] bounds doesn't support values of type: VALUE_STRING"
        );
        let e = parse(json!({"geotile_grid": {"field": "loc", "script": "x"}})).unwrap_err();
        assert_eq!(e.reason, "[geotile_grid] unknown field [script]");
        let g = parse(json!({"geotile_grid": {"field": "loc", "missing": "1.5,2.5"}})).unwrap();
        assert_eq!(g.grid.missing, Some((1.5, 2.5)));
        assert!(parse(json!({"geotile_grid": {"field": "loc", "value_type": "long"}})).is_err());
    }
}

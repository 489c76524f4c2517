//! `geo_distance` and `geo_bounding_box` queries on `geo_point` fields
//! (`lode_engine::geo`): each segment's packed-point column is read once into a bitset, as
//! Lucene's doc-values geo queries compare every quantized point of a document.

use crate::parse::{common, Boosted};
use lode_engine::geo;
use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use serde_json::{Map, Value};
use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::{DocId, Score, SegmentReader};

/// ES's `GeoValidationMethod`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    Strict,
    Coerce,
    IgnoreMalformed,
}

#[derive(Debug, Clone, PartialEq)]
pub enum GeoShape {
    /// Points within `meters` (haversine) of the center.
    Distance { lat: f64, lon: f64, meters: f64 },
    /// Points in the box; `left > right` crosses the dateline.
    Box {
        top: f64,
        bottom: f64,
        left: f64,
        right: f64,
    },
    /// Points whose distance to the center, in units of `unit` meters, is in `[from, to)`
    /// (a `geo_distance` aggregation's bucket).
    Ring {
        lat: f64,
        lon: f64,
        from: f64,
        to: f64,
        unit: f64,
        plane: bool,
    },
    /// Points inside a polygon's outer ring and outside its holes (rings of `(lon, lat)`).
    Polygon(Vec<Vec<(f64, f64)>>),
}

/// Whether `(lon, lat)` is inside a ring (even-odd ray casting).
fn in_ring(ring: &[(f64, f64)], lon: f64, lat: f64) -> bool {
    let mut inside = false;
    let n = ring.len();
    if n < 3 {
        return false;
    }
    let mut j = n - 1;
    for i in 0..n {
        let (xi, yi) = ring[i];
        let (xj, yj) = ring[j];
        if (yi > lat) != (yj > lat) && lon < (xj - xi) * (lat - yi) / (yj - yi) + xi {
            inside = !inside;
        }
        j = i;
    }
    inside
}

fn polygon_contains(rings: &[Vec<(f64, f64)>], lon: f64, lat: f64) -> bool {
    match rings.split_first() {
        Some((outer, holes)) => {
            in_ring(outer, lon, lat) && !holes.iter().any(|h| in_ring(h, lon, lat))
        }
        None => false,
    }
}

fn coord(v: &Value) -> EsResult<(f64, f64)> {
    match v {
        Value::Array(c) if c.len() >= 2 => match (c[0].as_f64(), c[1].as_f64()) {
            (Some(lon), Some(lat)) => Ok((lon, lat)),
            _ => Err(EsError::parsing("geo coordinates must be numbers")),
        },
        _ => Err(EsError::parsing(
            "geo coordinates must be an array of [lon, lat]",
        )),
    }
}

/// A geo query under construction: its one field (any key not declared) and the options.
struct GeoBuilder<S> {
    field: Option<(String, S)>,
    /// `geo_distance`'s distance.
    distance: Option<Value>,
    validation: Validation,
    ignore_unmapped: bool,
    boost: f32,
}

impl<S> GeoBuilder<S> {
    fn new() -> Self {
        GeoBuilder {
            field: None,
            distance: None,
            validation: Validation::Strict,
            ignore_unmapped: false,
            boost: 1.0,
        }
    }
}

impl<S> Boosted for GeoBuilder<S> {
    fn boost_mut(&mut self) -> &mut f32 {
        &mut self.boost
    }
}

fn set_ignore_unmapped<S>(q: &mut GeoBuilder<S>, at: &At<'_>, v: &Value) -> EsResult<()> {
    q.ignore_unmapped = crate::parse::as_bool(at.parser, at.key, v)?;
    Ok(())
}

fn set_validation<S>(q: &mut GeoBuilder<S>, _: &At<'_>, v: &Value) -> EsResult<()> {
    q.validation = parse_validation(v)?;
    Ok(())
}

/// ES's `GeoShapeQueryBuilder` on a `geo_point` field, for an inline GeoJSON `shape` of
/// type `envelope`, `point` or `polygon` and the `intersects` (or, the same for points,
/// `within`) relation.
pub fn parse_geo_shape(body: &Map<String, Value>) -> EsResult<GeoQuery> {
    const Q: &str = "geo_shape";
    type F = Field<GeoBuilder<GeoShape>>;
    type S = Field<Option<GeoShape>>;
    static SHAPE: ObjectParser<Option<GeoShape>> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[&[
            S::new("shape", "*", |s, _, v| {
                *s = Some(parse_shape(v)?);
                Ok(())
            }),
            S::new("relation", "*", |_, _, v| {
                match v.as_str().map(str::to_ascii_lowercase).as_deref() {
                    Some("intersects" | "within") => Ok(()),
                    Some("disjoint" | "contains") => Err(EsError::parsing(format!(
                        "[{Q}] relation [{}] on a geo_point field is not supported by Lode",
                        v.as_str().unwrap_or_default()
                    ))),
                    _ => Err(EsError::illegal_argument(format!(
                        "Unknown ShapeRelation type [{}]",
                        v.as_str().unwrap_or_default()
                    ))),
                }
            }),
            S::new("indexed_shape", "*", |_, _, _| {
                Err(EsError::parsing(format!(
                    "[{Q}] [indexed_shape] is not supported by Lode"
                )))
            }),
        ]],
    };
    static P: ObjectParser<GeoBuilder<GeoShape>> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[F::new("ignore_unmapped", "*", set_ignore_unmapped)],
            &common(),
            &[F::other("*", |q, at, v| {
                if let Some((first, _)) = &q.field {
                    return Err(EsError::parsing(format!(
                        "[{Q}] point specified twice. [{first}] and [{}]",
                        at.key
                    )));
                }
                let o = v.as_object().ok_or_else(|| {
                    EsError::parsing(format!(
                        "[{Q}] query malformed, no start_object after query name"
                    ))
                })?;
                let shape = SHAPE.parse(o)?.ok_or_else(|| {
                    EsError::illegal_argument("either shape or indexedShapeId is required")
                })?;
                q.field = Some((at.key.to_string(), shape));
                Ok(())
            })],
        ],
    };
    let mut q = GeoBuilder::new();
    P.parse_into(&mut q, body)?;
    let (field, shape) = q
        .field
        .ok_or_else(|| EsError::illegal_argument("fieldName is required"))?;
    Ok(GeoQuery {
        name: Q,
        field,
        shape,
        validation: Validation::Strict,
        ignore_unmapped: q.ignore_unmapped,
        boost: q.boost,
    })
}

fn parse_shape(v: &Value) -> EsResult<GeoShape> {
    let o = v.as_object().ok_or_else(|| {
        EsError::parsing("[geo_shape] shape as WKT text is not supported by Lode")
    })?;
    let ty = o
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| EsError::parsing("type of geometry is required"))?
        .to_ascii_lowercase();
    let coords = o
        .get("coordinates")
        .ok_or_else(|| EsError::parsing("coordinates not included"))?;
    let arr = |v: &Value| -> EsResult<Vec<Value>> {
        v.as_array()
            .cloned()
            .ok_or_else(|| EsError::parsing("coordinates must be an array"))
    };
    match ty.as_str() {
        "envelope" => {
            let c = arr(coords)?;
            if c.len() != 2 {
                return Err(EsError::parsing(
                    "failed to parse envelope: expected 2 coordinates",
                ));
            }
            let (left, top) = coord(&c[0])?;
            let (right, bottom) = coord(&c[1])?;
            Ok(GeoShape::Box {
                top,
                bottom,
                left,
                right,
            })
        }
        "point" => {
            // A point matches the documents holding its quantized value.
            let (lon, lat) = coord(coords)?;
            let lat = geo::decode_lat(geo::encode_lat(lat));
            let lon = geo::decode_lon(geo::encode_lon(lon));
            Ok(GeoShape::Box {
                top: lat,
                bottom: lat,
                left: lon,
                right: lon,
            })
        }
        "polygon" => {
            let rings = arr(coords)?
                .iter()
                .map(|r| arr(r)?.iter().map(coord).collect::<EsResult<Vec<_>>>())
                .collect::<EsResult<Vec<_>>>()?;
            if rings.is_empty() || rings[0].len() < 4 {
                return Err(EsError::parsing(
                    "invalid number of points in LinearRing (found [0] - must be >= 4)",
                ));
            }
            Ok(GeoShape::Polygon(rings))
        }
        other => Err(EsError::parsing(format!(
            "[geo_shape] shape type [{other}] is not supported by Lode"
        ))),
    }
}

/// A parsed `geo_distance` or `geo_bounding_box` query.
#[derive(Debug, Clone, PartialEq)]
pub struct GeoQuery {
    pub name: &'static str,
    pub field: String,
    pub shape: GeoShape,
    pub validation: Validation,
    pub ignore_unmapped: bool,
    pub boost: f32,
}

fn parse_validation(v: &Value) -> EsResult<Validation> {
    match v.as_str().map(|s| s.to_ascii_uppercase()) {
        Some(s) if s == "STRICT" => Ok(Validation::Strict),
        Some(s) if s == "COERCE" => Ok(Validation::Coerce),
        Some(s) if s == "IGNORE_MALFORMED" => Ok(Validation::IgnoreMalformed),
        _ => Err(EsError::illegal_argument(format!(
            "No enum constant org.elasticsearch.index.query.GeoValidationMethod.{}",
            v.as_str().unwrap_or_default().to_ascii_uppercase()
        ))),
    }
}

fn point(q: &str, v: &Value) -> EsResult<(f64, f64)> {
    geo::parse_point(v, true).map_err(|e| EsError::parsing(format!("[{q}] {e}")))
}

/// ES's `GeoDistanceQueryBuilder#fromXContent`.
pub fn parse_geo_distance(body: &Map<String, Value>) -> EsResult<GeoQuery> {
    const Q: &str = "geo_distance";
    type B = GeoBuilder<(f64, f64)>;
    type F = Field<B>;
    fn removed(_: &mut B, at: &At<'_>, _: &Value) -> EsResult<()> {
        Err(EsError::parsing(format!(
            "failed to parse [{Q}] query. unexpected field [{}]",
            at.key
        )))
    }
    static P: ObjectParser<B> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("distance", "*", |q, _, v| {
                    q.distance = Some(v.clone());
                    Ok(())
                }),
                F::new("distance_type", "*", |_, _, v| {
                    v.as_str()
                        .and_then(geo::DistanceType::parse)
                        .ok_or_else(|| {
                            EsError::illegal_argument(format!(
                                "No geo distance for [{}]",
                                v.as_str().unwrap_or_default()
                            ))
                        })?;
                    Ok(())
                }),
                F::new("validation_method", "*", set_validation),
                F::new("ignore_unmapped", "*", set_ignore_unmapped),
                // Removed from ES 8: refused by name.
                F::new("unit", "*", removed),
                F::new("optimize_bbox", "*", removed),
                F::new("coerce", "*", removed),
                F::new("ignore_malformed", "*", removed),
            ],
            &common(),
            &[F::other("*", |q, at, v| {
                if let Some((first, _)) = &q.field {
                    return Err(EsError::parsing(format!(
                        "[{Q}] query doesn't support multiple fields, found [{first}] and [{}]",
                        at.key
                    )));
                }
                q.field = Some((at.key.to_string(), point(Q, v)?));
                Ok(())
            })],
        ],
    };
    let mut q: B = GeoBuilder::new();
    P.parse_into(&mut q, body)?;
    let (validation, ignore_unmapped, boost) = (q.validation, q.ignore_unmapped, q.boost);
    let (field, (mut lat, mut lon)) = q
        .field
        .ok_or_else(|| EsError::illegal_argument("fieldName must not be null"))?;
    let distance = q
        .distance
        .ok_or_else(|| EsError::parsing("geo_distance requires 'distance' to be specified"))?;
    let meters = geo::parse_distance(&distance, 1.0).map_err(EsError::illegal_argument)?;
    if meters <= 0.0 || meters.is_nan() {
        return Err(EsError::illegal_argument(
            "distance must be greater than zero",
        ));
    }
    match validation {
        Validation::Strict => {
            if !(-90.0..=90.0).contains(&lat) {
                return Err(shard(format!("illegal latitude value [{lat:?}] for [{Q}]")));
            }
            if !(-180.0..=180.0).contains(&lon) {
                return Err(shard(format!(
                    "illegal longitude value [{lon:?}] for [{Q}]"
                )));
            }
        }
        Validation::Coerce | Validation::IgnoreMalformed => {
            (lat, lon) = geo::normalize(lat, lon);
        }
    }
    Ok(GeoQuery {
        name: Q,
        field,
        shape: GeoShape::Distance { lat, lon, meters },
        validation,
        ignore_unmapped,
        boost,
    })
}

fn shard(reason: String) -> EsError {
    EsError::bad_request("query_shard_exception", reason)
}

/// A bounding box under construction.
struct BoxB {
    top: f64,
    bottom: f64,
    left: f64,
    right: f64,
    wkt: Option<String>,
}

/// ES's `GeoBoundingBox#parseBoundingBox` for one field's value.
pub fn parse_box(q: &str, v: &Value) -> EsResult<(f64, f64, f64, f64)> {
    type F = Field<BoxB>;
    fn num(at: &At<'_>, v: &Value) -> EsResult<f64> {
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .ok_or_else(|| EsError::parsing(format!("[{}] failed to parse [{}]", at.parser, at.key)))
    }
    fn unexpected(at: &At<'_>) -> EsError {
        EsError::parsing(format!(
            "failed to parse bounding box. unexpected field [{}]",
            at.key
        ))
    }
    // Read under the query's name (`at.parser`), which the errors name.
    static P: ObjectParser<BoxB> = ObjectParser {
        name: "bounding_box",
        style: Style::Custom {
            unknown: |at, _, _| unexpected(at),
            wrong_token: |at, _| unexpected(at),
        },
        fields: &[&[
            F::new("top", "*", |b, at, v| {
                b.top = num(at, v)?;
                Ok(())
            }),
            F::new("bottom", "*", |b, at, v| {
                b.bottom = num(at, v)?;
                Ok(())
            }),
            F::new("left", "*", |b, at, v| {
                b.left = num(at, v)?;
                Ok(())
            }),
            F::new("right", "*", |b, at, v| {
                b.right = num(at, v)?;
                Ok(())
            }),
            F::new("top_left", "*", |b, at, v| {
                (b.top, b.left) = point(at.parser, v)?;
                Ok(())
            })
            .aliases(&["topLeft"]),
            F::new("bottom_right", "*", |b, at, v| {
                (b.bottom, b.right) = point(at.parser, v)?;
                Ok(())
            })
            .aliases(&["bottomRight"]),
            F::new("top_right", "*", |b, at, v| {
                (b.top, b.right) = point(at.parser, v)?;
                Ok(())
            })
            .aliases(&["topRight"]),
            F::new("bottom_left", "*", |b, at, v| {
                (b.bottom, b.left) = point(at.parser, v)?;
                Ok(())
            })
            .aliases(&["bottomLeft"]),
            F::new("wkt", "*", |b, _, v| {
                b.wkt = Some(v.as_str().unwrap_or_default().to_string());
                Ok(())
            }),
        ]],
    };
    let Value::Object(o) = v else {
        return Err(EsError::parsing(format!(
            "failed to parse bounding box. Expected start object but found [{}]",
            if v.is_array() {
                "START_ARRAY"
            } else {
                "VALUE_STRING"
            }
        )));
    };
    let mut b = BoxB {
        top: f64::NAN,
        bottom: f64::NAN,
        left: f64::NAN,
        right: f64::NAN,
        wkt: None,
    };
    P.parse_named(q, &mut b, o)?;
    let BoxB {
        mut top,
        mut bottom,
        mut left,
        mut right,
        wkt,
    } = b;
    if let Some(w) = wkt {
        if !top.is_nan() || !bottom.is_nan() || !left.is_nan() || !right.is_nan() {
            return Err(EsError::parsing(
                "failed to parse bounding box. Conflicting definition found using well-known text and explicit corners.",
            ));
        }
        // `BBOX (minLon, maxLon, maxLat, minLat)`.
        let t = w.trim();
        let inner = (t.len() > 4 && t[..4].eq_ignore_ascii_case("bbox"))
            .then(|| t[4..].trim())
            .and_then(|r| r.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| {
                EsError::parsing("failed to parse bounding box. [wkt] must be a BBOX")
            })?;
        let nums: Vec<f64> = inner
            .split(',')
            .map(|p| p.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| EsError::parsing(format!("failed to parse WKT bounding box [{w}]")))?;
        if nums.len() != 4 {
            return Err(EsError::parsing(format!(
                "failed to parse WKT bounding box [{w}]"
            )));
        }
        (left, right, top, bottom) = (nums[0], nums[1], nums[2], nums[3]);
    }
    if top.is_nan() {
        return Err(EsError::parsing(
            "failed to parse bounding box. Missing top latitude",
        ));
    }
    if bottom.is_nan() {
        return Err(EsError::parsing(
            "failed to parse bounding box. Missing bottom latitude",
        ));
    }
    if left.is_nan() {
        return Err(EsError::parsing(
            "failed to parse bounding box. Missing left longitude",
        ));
    }
    if right.is_nan() {
        return Err(EsError::parsing(
            "failed to parse bounding box. Missing right longitude",
        ));
    }
    Ok((top, bottom, left, right))
}

/// ES's `GeoBoundingBoxQueryBuilder#fromXContent`.
pub fn parse_geo_bounding_box(body: &Map<String, Value>) -> EsResult<GeoQuery> {
    const Q: &str = "geo_bounding_box";
    type B = GeoBuilder<(f64, f64, f64, f64)>;
    type F = Field<B>;
    static P: ObjectParser<B> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("validation_method", "*", set_validation),
                F::new("ignore_unmapped", "*", set_ignore_unmapped),
                // Deprecated and ignored by ES 8 (`memory` or `indexed`).
                F::new("type", "*", ignore),
            ],
            &common(),
            &[F::other("*", |q, at, v| {
                if let Some((first, _)) = &q.field {
                    return Err(EsError::parsing(format!(
                        "[{Q}] query doesn't support multiple fields, found [{first}] and [{}]",
                        at.key
                    )));
                }
                q.field = Some((at.key.to_string(), parse_box(Q, v)?));
                Ok(())
            })],
        ],
    };
    let mut q: B = GeoBuilder::new();
    P.parse_into(&mut q, body)?;
    let (validation, ignore_unmapped, boost) = (q.validation, q.ignore_unmapped, q.boost);
    let (field, (mut top, mut bottom, mut left, mut right)) = q
        .field
        .ok_or_else(|| EsError::illegal_argument("Field name must not be empty."))?;
    match validation {
        Validation::Strict => {
            let bad = if !(-90.0..=90.0).contains(&top) {
                Some(format!("top latitude is invalid: {top:?}"))
            } else if !(-180.0..=180.0).contains(&left) {
                Some(format!("left longitude is invalid: {left:?}"))
            } else if !(-90.0..=90.0).contains(&bottom) {
                Some(format!("bottom latitude is invalid: {bottom:?}"))
            } else if !(-180.0..=180.0).contains(&right) {
                Some(format!("right longitude is invalid: {right:?}"))
            } else if top < bottom {
                Some(format!(
                    "top is below bottom corner: {top:?} vs. {bottom:?}"
                ))
            } else {
                None
            };
            if let Some(b) = bad {
                return Err(shard(b));
            }
        }
        Validation::Coerce => {
            // ES's `GeoBoundingBoxQueryBuilder#doToQuery` with coerce: a box spanning the
            // globe in longitude keeps it whole, else both corners are normalized.
            if right - left >= 360.0 {
                left = -180.0;
                right = 180.0;
            } else {
                (top, left) = geo::normalize(top, left);
                (bottom, right) = geo::normalize(bottom, right);
            }
        }
        Validation::IgnoreMalformed => {}
    }
    Ok(GeoQuery {
        name: Q,
        field,
        shape: GeoShape::Box {
            top,
            bottom,
            left,
            right,
        },
        validation,
        ignore_unmapped,
        boost,
    })
}

fn encode_lat_ceil(lat: f64) -> i64 {
    let e = geo::encode_lat(lat) as i64;
    if geo::decode_lat(e as i32) < lat {
        e + 1
    } else {
        e
    }
}

fn encode_lon_ceil(lon: f64) -> i64 {
    let e = geo::encode_lon(lon) as i64;
    if geo::decode_lon(e as i32) < lon {
        e + 1
    } else {
        e
    }
}

/// The tantivy query: the documents one of whose points is in the shape.
#[derive(Debug, Clone)]
pub(crate) struct GeoPointQuery {
    pub field: String,
    pub shape: GeoShape,
}

impl GeoPointQuery {
    fn matcher(&self) -> Box<dyn Fn(u64) -> bool + Send + Sync> {
        match self.shape {
            GeoShape::Distance { lat, lon, meters } => Box::new(move |v| {
                let (plat, plon) = geo::decode(v);
                geo::arc_distance(lat, lon, plat, plon) <= meters
            }),
            GeoShape::Ring {
                lat,
                lon,
                from,
                to,
                unit,
                plane,
            } => {
                let ty = if plane {
                    geo::DistanceType::Plane
                } else {
                    geo::DistanceType::Arc
                };
                Box::new(move |v| {
                    let (plat, plon) = geo::decode(v);
                    let d = ty.meters(lat, lon, plat, plon) / unit;
                    from <= d && d < to
                })
            }
            GeoShape::Polygon(ref rings) => {
                let rings = rings.clone();
                Box::new(move |v| {
                    let (lat, lon) = geo::decode(v);
                    polygon_contains(&rings, lon, lat)
                })
            }
            GeoShape::Box {
                top,
                bottom,
                left,
                right,
            } => {
                // Lucene's `LatLonPoint#newBoxQuery`: bounds encoded, the low ones rounded
                // up, compared with the encoded points.
                let top = top.clamp(-90.0, 90.0);
                let bottom = bottom.clamp(-90.0, 90.0);
                let lat_lo = encode_lat_ceil(bottom);
                let lat_hi = geo::encode_lat(top) as i64;
                let lon_lo = encode_lon_ceil(left.clamp(-180.0, 180.0));
                let lon_hi = geo::encode_lon(right.clamp(-180.0, 180.0)) as i64;
                let crosses = left > right;
                Box::new(move |v| {
                    let plat = (v >> 32) as u32 as i32 as i64;
                    let plon = v as u32 as i32 as i64;
                    if plat < lat_lo || plat > lat_hi {
                        return false;
                    }
                    if crosses {
                        plon >= lon_lo || plon <= lon_hi
                    } else {
                        plon >= lon_lo && plon <= lon_hi
                    }
                })
            }
        }
    }

    fn doc_set(&self, reader: &SegmentReader) -> tantivy::Result<tantivy::BitSet> {
        let max_doc = reader.max_doc();
        let mut set = tantivy::BitSet::with_max_value(max_doc);
        if let Some(col) = reader.fast_fields().column_opt::<u64>(&self.field)? {
            let m = self.matcher();
            for doc in 0..max_doc {
                if col.values_for_doc(doc).any(&m) {
                    set.insert(doc);
                }
            }
        }
        Ok(set)
    }
}

impl Query for GeoPointQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for GeoPointQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let set = self.doc_set(reader)?;
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(set), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.doc_set(reader)?.contains(doc) {
            Ok(Explanation::new("GeoPointQuery", 1.0))
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
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn parses_distance() {
        let q = parse_geo_distance(&obj(json!({"distance": "12km", "loc": "40,-70"}))).unwrap();
        assert_eq!(
            q.shape,
            GeoShape::Distance {
                lat: 40.0,
                lon: -70.0,
                meters: 12000.0
            }
        );
        assert!(parse_geo_distance(&obj(json!({"loc": "40,-70"}))).is_err());
        let e = parse_geo_distance(&obj(json!({"distance": "1km", "loc": [0, 95]}))).unwrap_err();
        assert!(e.reason.contains("illegal latitude value [95.0]"));
        let q = parse_geo_distance(&obj(
            json!({"distance": 10, "loc": [190, 0], "validation_method": "coerce"}),
        ))
        .unwrap();
        assert_eq!(
            q.shape,
            GeoShape::Distance {
                lat: 0.0,
                lon: -170.0,
                meters: 10.0
            }
        );
    }

    #[test]
    fn parses_boxes_and_matches() {
        let want = GeoShape::Box {
            top: 40.0,
            bottom: 30.0,
            left: -80.0,
            right: -70.0,
        };
        for v in [
            json!({"loc": {"top_left": {"lat": 40, "lon": -80}, "bottom_right": [-70, 30]}}),
            json!({"loc": {"top": 40, "left": -80, "bottom": 30, "right": -70}}),
            json!({"loc": {"top_right": "40,-70", "bottom_left": "POINT (-80 30)"}}),
            json!({"loc": {"wkt": "BBOX (-80, -70, 40, 30)"}}),
        ] {
            assert_eq!(
                parse_geo_bounding_box(&obj(v.clone())).unwrap().shape,
                want,
                "{v}"
            );
        }
        let e = parse_geo_bounding_box(&obj(
            json!({"loc": {"top": 10, "left": 0, "bottom": 20, "right": 1}}),
        ))
        .unwrap_err();
        assert!(e.reason.contains("top is below bottom corner"));
        let q = GeoPointQuery {
            field: "loc".into(),
            shape: want,
        };
        let m = q.matcher();
        assert!(m(geo::encode(35.0, -75.0)));
        assert!(m(geo::encode(40.0, -70.0)));
        assert!(!m(geo::encode(35.0, -69.0)));
        let dateline = GeoPointQuery {
            field: "loc".into(),
            shape: GeoShape::Box {
                top: 10.0,
                bottom: -10.0,
                left: 170.0,
                right: -170.0,
            },
        };
        let m = dateline.matcher();
        assert!(m(geo::encode(0.0, 175.0)) && m(geo::encode(0.0, -175.0)));
        assert!(!m(geo::encode(0.0, 0.0)));
    }
}

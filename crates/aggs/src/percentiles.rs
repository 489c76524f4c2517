//! `percentiles` and `percentile_ranks` (and the other TDigest-based metrics, `string_stats`,
//! `geo_bounds` and `geo_centroid`): tantivy's percentiles are a DDSketch it keeps private, so
//! each bucket's values are added into its own TDigest or HDR histogram (`digest.rs`), for
//! every bucket in one pass (`sketch.rs`); this module renders the buckets' sketches.

use super::digest::{Hdr, TDigest};
use super::plan::MetricOp;
use super::render::{double, with_string};
use super::request::{DigestKind, DigestMetricReq, PercentilesMethod, PercentilesReq};
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// A bucket's sketch.
#[derive(Clone)]
pub(crate) enum State {
    TDigest(TDigest),
    Hdr(Hdr),
}

impl State {
    pub fn new(method: PercentilesMethod) -> State {
        match method {
            PercentilesMethod::TDigest {
                compression,
                high_accuracy,
            } => State::TDigest(TDigest::new(compression, high_accuracy)),
            PercentilesMethod::Hdr { digits } => State::Hdr(Hdr::new(digits)),
        }
    }

    pub(crate) fn add(&mut self, x: f64) {
        match self {
            State::TDigest(t) => t.add(x),
            State::Hdr(h) => h.add(x),
        }
    }

    pub(crate) fn merge(&mut self, other: State) {
        match (self, other) {
            (State::TDigest(a), State::TDigest(b)) => a.merge(b),
            (State::Hdr(a), State::Hdr(b)) => a.merge(b),
            _ => {}
        }
    }
}

/// A bucket's digest, as ES fails a shard that fed negative values to HDR.
pub(crate) fn checked(state: State) -> EsResult<State> {
    if let State::Hdr(h) = &state {
        if let Some(x) = h.negative {
            // ES's DoubleHistogram cannot record negative values; the shard fails.
            return Err(EsError::new(
                500,
                "array_index_out_of_bounds_exception",
                format!("Negative values are not supported by HDR percentiles: [{x:?}]"),
            ));
        }
    }
    Ok(state)
}

/// The `(key, value)` pairs of a `percentiles` or `percentile_ranks` body (`None`: no values).
pub(crate) fn values(req: &PercentilesReq, state: State) -> EsResult<Vec<(f64, Option<f64>)>> {
    let mut state = checked(state)?;
    let finite = |v: f64| Some(v).filter(|v| !v.is_nan());
    Ok(req
        .percents
        .iter()
        .map(|&k| {
            let v = match (&mut state, req.ranks) {
                (State::TDigest(t), false) => t.quantile(k / 100.0),
                (State::Hdr(h), false) => h.quantile(k),
                (State::TDigest(t), true) => {
                    if t.size() == 0 {
                        f64::NAN
                    } else {
                        t.cdf(k).clamp(0.0, 1.0) * 100.0
                    }
                }
                (State::Hdr(h), true) => h.rank(k).clamp(0.0, 100.0),
            };
            (k, finite(v))
        })
        .collect())
}

/// `median_absolute_deviation` (`value`) and `boxplot` (`min`, `max`, `q1`, `q2`, `q3`,
/// `lower`, `upper`) as ES's `InternalMedianAbsoluteDeviation` and `InternalBoxplot` compute
/// them from the bucket's TDigest.
pub(crate) fn render_digest_metric(
    req: &DigestMetricReq,
    op: &MetricOp,
    state: State,
    obj: &mut Map<String, Value>,
) -> EsResult<()> {
    let State::TDigest(mut t) = state else {
        return Err(EsError::internal("a TDigest metric without a TDigest"));
    };
    match req.kind {
        DigestKind::Mad => {
            let value = (t.size() > 0).then(|| median_absolute_deviation(&mut t, req.method));
            with_string(obj, "value", value, &op.format);
        }
        DigestKind::Boxplot => {
            let (min, max) = (t.min(), t.max());
            let (q1, q2, q3) = (t.quantile(0.25), t.quantile(0.5), t.quantile(0.75));
            let (lower, upper) = whiskers(&mut t, q1, q3);
            let fields = [
                ("min", min),
                ("max", max),
                ("q1", q1),
                ("q2", q2),
                ("q3", q3),
                ("lower", lower),
                ("upper", upper),
            ];
            for (name, v) in fields {
                obj.insert(name.into(), double(v));
            }
            for (name, v) in fields {
                if let Some(s) = Some(v)
                    .filter(|v| v.is_finite())
                    .and_then(|v| op.format.format(v))
                {
                    obj.insert(format!("{name}_as_string"), json!(s));
                }
            }
        }
    }
    Ok(())
}

/// The median of |centroid - median| over the digest's centroids, weighted by their counts,
/// in a second digest of the same kind.
fn median_absolute_deviation(t: &mut TDigest, method: PercentilesMethod) -> f64 {
    let median = t.quantile(0.5);
    let State::TDigest(mut deviations) = State::new(method) else {
        return f64::NAN;
    };
    for (mean, count) in t.centroids() {
        deviations.add_weighted((median - mean).abs(), count as u64);
    }
    deviations.quantile(0.5)
}

/// Tukey's whiskers: the most extreme centroids within 1.5 IQR of the quartiles.
fn whiskers(t: &mut TDigest, q1: f64, q3: f64) -> (f64, f64) {
    let iqr = q3 - q1;
    let (hi, lo) = (q3 + 1.5 * iqr, q1 - 1.5 * iqr);
    let mut upper = f64::NEG_INFINITY;
    let mut lower = f64::INFINITY;
    for (mean, _) in t.centroids() {
        if mean <= hi {
            upper = upper.max(mean);
        }
        if mean >= lo {
            lower = lower.min(mean);
        }
    }
    (lower, upper)
}

/// `string_stats` as ES's `InternalStringStats`: `count` (values), `min_length`,
/// `max_length`, `avg_length` (lengths in UTF-16 units, as Java's `String.length`), and the
/// Shannon `entropy` (base 2) of the characters of all values, with their `distribution`
/// (probabilities, most frequent first) under `show_distribution`.
pub(crate) fn render_string_stats(
    mut values: HashMap<String, u64>,
    missing: Option<(&str, u64)>,
    show_distribution: bool,
    obj: &mut Map<String, Value>,
) -> EsResult<()> {
    if let Some((m, n)) = missing.filter(|(_, n)| *n > 0) {
        *values.entry(m.to_string()).or_insert(0) += n;
    }
    let mut count = 0u64;
    let (mut min_len, mut max_len, mut total_len) = (u64::MAX, 0u64, 0u64);
    let mut chars: std::collections::HashMap<char, u64> = Default::default();
    for (s, n) in &values {
        let len = s.encode_utf16().count() as u64;
        count += n;
        min_len = min_len.min(len);
        max_len = max_len.max(len);
        total_len += len * n;
        for c in s.chars() {
            *chars.entry(c).or_insert(0) += n;
        }
    }
    obj.insert("count".into(), json!(count));
    if count == 0 {
        for k in ["min_length", "max_length", "avg_length"] {
            obj.insert(k.into(), Value::Null);
        }
        obj.insert("entropy".into(), json!(0.0));
        if show_distribution {
            obj.insert("distribution".into(), Value::Null);
        }
        return Ok(());
    }
    let total_chars: u64 = chars.values().sum();
    let mut dist: Vec<(char, f64)> = chars
        .into_iter()
        .map(|(c, n)| (c, n as f64 / total_chars as f64))
        .collect();
    dist.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let entropy = -dist
        .iter()
        .filter(|(_, p)| *p > 0.0)
        .map(|(_, p)| p * p.log2())
        .sum::<f64>();
    obj.insert("min_length".into(), json!(min_len));
    obj.insert("max_length".into(), json!(max_len));
    obj.insert("avg_length".into(), json!(total_len as f64 / count as f64));
    obj.insert("entropy".into(), double(entropy));
    if show_distribution {
        let mut m = Map::new();
        for (c, p) in dist {
            m.insert(c.to_string(), json!(p));
        }
        obj.insert("distribution".into(), Value::Object(m));
    }
    Ok(())
}

/// What `geo_bounds` and `geo_centroid` keep of a bucket's points (ES's
/// `GeoBoundsAggregator` and `GeoCentroidAggregator`): the quantized points' latitude
/// range, the longitude ranges east and west of Greenwich, and the coordinate sums.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GeoStats {
    count: u64,
    sum_lat: f64,
    sum_lon: f64,
    top: f64,
    bottom: f64,
    pos_left: f64,
    pos_right: f64,
    neg_left: f64,
    neg_right: f64,
}

impl Default for GeoStats {
    fn default() -> Self {
        GeoStats {
            count: 0,
            sum_lat: 0.0,
            sum_lon: 0.0,
            top: f64::NEG_INFINITY,
            bottom: f64::INFINITY,
            pos_left: f64::INFINITY,
            pos_right: f64::NEG_INFINITY,
            neg_left: f64::INFINITY,
            neg_right: f64::NEG_INFINITY,
        }
    }
}

impl GeoStats {
    pub(crate) fn add(&mut self, lat: f64, lon: f64) {
        self.count += 1;
        self.sum_lat += lat;
        self.sum_lon += lon;
        self.top = self.top.max(lat);
        self.bottom = self.bottom.min(lat);
        if lon >= 0.0 {
            self.pos_left = self.pos_left.min(lon);
            self.pos_right = self.pos_right.max(lon);
        } else {
            self.neg_left = self.neg_left.min(lon);
            self.neg_right = self.neg_right.max(lon);
        }
    }

    pub(crate) fn merge(&mut self, o: &GeoStats) {
        self.count += o.count;
        self.sum_lat += o.sum_lat;
        self.sum_lon += o.sum_lon;
        self.top = self.top.max(o.top);
        self.bottom = self.bottom.min(o.bottom);
        self.pos_left = self.pos_left.min(o.pos_left);
        self.pos_right = self.pos_right.max(o.pos_right);
        self.neg_left = self.neg_left.min(o.neg_left);
        self.neg_right = self.neg_right.max(o.neg_right);
    }

    /// ES's `InternalGeoBounds#boundingBox`: `(top, left, bottom, right)`; with
    /// `wrap_longitude`, the narrower of the boxes with and without crossing the dateline.
    pub(crate) fn bounds(&self, wrap_longitude: bool) -> Option<(f64, f64, f64, f64)> {
        if self.top.is_infinite() {
            return None;
        }
        Some(if self.pos_left.is_infinite() {
            (self.top, self.neg_left, self.bottom, self.neg_right)
        } else if self.neg_left.is_infinite() {
            (self.top, self.pos_left, self.bottom, self.pos_right)
        } else if wrap_longitude {
            let unwrapped = self.pos_right - self.neg_left;
            let wrapped = (180.0 - self.pos_left) - (-180.0 - self.neg_right);
            if unwrapped <= wrapped {
                (self.top, self.neg_left, self.bottom, self.pos_right)
            } else {
                (self.top, self.pos_left, self.bottom, self.neg_right)
            }
        } else {
            (self.top, self.neg_left, self.bottom, self.pos_right)
        })
    }
}

/// `geo_bounds` (`{"bounds": {"top_left", "bottom_right"}}`, absent without points) or
/// `geo_centroid` (`{"location", "count"}`, the mean of the points' coordinates) of the
/// bucket's documents' quantized points.
pub(crate) fn render_geo(
    stats: GeoStats,
    centroid: bool,
    wrap_longitude: bool,
    obj: &mut Map<String, Value>,
) -> EsResult<()> {
    if centroid {
        if stats.count > 0 {
            let n = stats.count as f64;
            obj.insert(
                "location".into(),
                json!({"lat": stats.sum_lat / n, "lon": stats.sum_lon / n}),
            );
        }
        obj.insert("count".into(), json!(stats.count));
    } else if let Some((top, left, bottom, right)) = stats.bounds(wrap_longitude) {
        obj.insert(
            "bounds".into(),
            json!({
                "top_left": {"lat": top, "lon": left},
                "bottom_right": {"lat": bottom, "lon": right},
            }),
        );
    }
    Ok(())
}

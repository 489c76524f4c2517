//! `percentiles` and `percentile_ranks` (and the other TDigest-based metrics, and
//! `string_stats`): tantivy's
//! percentiles are a DDSketch it keeps private, so the values of each bucket are read by
//! re-running the search restricted to the bucket (as `top_hits` does, see
//! `top_hits::bucket_query`), each matching document's values (or `missing`) added into the
//! bucket's TDigest or HDR histogram (`digest.rs`). Per document that is one column read and
//! one add.

use super::digest::{Hdr, TDigest};
use super::exec::{runtime_provider_in, Exec};
use super::plan::{metric_missing, FieldRef, MetricOp};
use super::render::Scope;
use super::render::{double, with_string};
use super::request::{DigestKind, DigestMetricReq, PercentilesMethod, PercentilesReq};
use super::sources::{open_numeric, AnyColumn, NumericColumn, RuntimeProvider};
use super::top_hits::bucket_query;
use lode_engine::mapping::Storage;
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

/// A bucket's sketch.
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

    fn add(&mut self, x: f64) {
        match self {
            State::TDigest(t) => t.add(x),
            State::Hdr(h) => h.add(x),
        }
    }

    fn merge(&mut self, other: State) {
        match (self, other) {
            (State::TDigest(a), State::TDigest(b)) => a.merge(b),
            (State::Hdr(a), State::Hdr(b)) => a.merge(b),
            _ => {}
        }
    }
}

enum NumColumn {
    I64(Column<i64>),
    F64(Column<f64>),
    /// A runtime field or an aggregation script (see `sources::AnyColumn`).
    Computed(Box<AnyColumn>, Vec<f64>),
}

/// Adds the values of a numeric field (or `missing`) of every collected document.
struct ValuesCollector<'a> {
    field: &'a FieldRef,
    missing: Option<f64>,
    method: PercentilesMethod,
    runtime: Option<Arc<RuntimeProvider>>,
}

struct SegmentValues {
    column: Option<NumColumn>,
    missing: Option<f64>,
    state: State,
}

impl Collector for ValuesCollector<'_> {
    type Fruit = State;
    type Child = SegmentValues;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentValues> {
        let fast = reader.fast_fields();
        let column = match self.field.storage() {
            _ if self.runtime.is_some() => open_numeric(
                reader,
                &self.field.name,
                NumericColumn::F64,
                self.runtime.as_deref(),
            )?
            .map(|c| NumColumn::Computed(Box::new(c), Vec::new())),
            Some(Storage::F64) => fast
                .column_opt::<f64>(&self.field.name)?
                .map(NumColumn::F64),
            Some(Storage::I64) => fast
                .column_opt::<i64>(&self.field.name)?
                .map(NumColumn::I64),
            _ => None,
        };
        Ok(SegmentValues {
            column,
            missing: self.missing,
            state: State::new(self.method),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<State>) -> tantivy::Result<State> {
        let mut out = State::new(self.method);
        for f in fruits {
            out.merge(f);
        }
        Ok(out)
    }
}

impl SegmentCollector for SegmentValues {
    type Fruit = State;

    fn collect(&mut self, doc: DocId, _score: Score) {
        let mut any = false;
        match &mut self.column {
            Some(NumColumn::Computed(c, scratch)) => {
                c.values_into(doc, scratch);
                for &v in scratch.iter() {
                    any = true;
                    self.state.add(v);
                }
            }
            Some(NumColumn::I64(c)) => {
                for v in c.values_for_doc(doc) {
                    any = true;
                    self.state.add(v as f64);
                }
            }
            Some(NumColumn::F64(c)) => {
                for v in c.values_for_doc(doc) {
                    any = true;
                    self.state.add(v);
                }
            }
            None => {}
        }
        if !any {
            if let Some(m) = self.missing {
                self.state.add(m);
            }
        }
    }

    fn harvest(self) -> State {
        self.state
    }
}

/// The sketch of `field` (with `missing`) over the documents of the bucket `scope`, on every
/// index and shard of the search.
pub(crate) fn collect(
    exec: &Exec,
    field: &FieldRef,
    missing: Option<&serde_json::Value>,
    method: PercentilesMethod,
    scope: &Scope,
) -> EsResult<State> {
    if scope.unconstrained {
        return Err(EsError::illegal_argument(
            "percentiles, percentile_ranks, median_absolute_deviation and boxplot under a [composite] aggregation are not supported by Lode",
        ));
    }
    let missing = metric_missing(missing, field).and_then(|m| m.as_f64());
    let mut state = State::new(method);
    for pt in &exec.targets {
        // Each index resolves the field against its own mapping (a runtime field or script
        // against its own runtime fields).
        let runtime = runtime_provider_in(pt.target.ctx, &field.name);
        let local = FieldRef {
            name: field.name.clone(),
            def: match &runtime {
                Some(_) => field.def.clone(),
                None => pt.target.ctx.mapping.field(&field.name).cloned(),
            },
        };
        let query = bucket_query(pt, scope)?;
        let collector = ValuesCollector {
            field: &local,
            missing,
            method,
            runtime,
        };
        for shard in pt.target.shards {
            let s = shard
                .searcher
                .search(&*query, &collector)
                .map_err(|e| EsError::internal(format!("percentiles failure: {e}")))?;
            state.merge(s);
        }
    }
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
pub(crate) fn values(
    exec: &Exec,
    req: &PercentilesReq,
    op: &MetricOp,
    scope: &Scope,
) -> EsResult<Vec<(f64, Option<f64>)>> {
    let mut state = collect(exec, &op.field, req.missing.as_ref(), req.method, scope)?;
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
    exec: &Exec,
    req: &DigestMetricReq,
    op: &MetricOp,
    scope: &Scope,
    obj: &mut Map<String, Value>,
) -> EsResult<()> {
    let State::TDigest(mut t) = collect(exec, &op.field, req.missing.as_ref(), req.method, scope)?
    else {
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

/// Counts each distinct keyword of the bucket (a segment's ordinals, resolved once).
struct StringsCollector<'a> {
    field: &'a str,
    missing: Option<&'a str>,
}

struct SegmentStrings {
    column: Option<tantivy::columnar::StrColumn>,
    ords: std::collections::HashMap<u64, u64>,
    missing: u64,
    with_missing: bool,
    scratch: Vec<u64>,
}

impl Collector for StringsCollector<'_> {
    type Fruit = std::collections::HashMap<String, u64>;
    type Child = SegmentStrings;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentStrings> {
        Ok(SegmentStrings {
            column: reader.fast_fields().str(self.field)?,
            ords: Default::default(),
            missing: 0,
            with_missing: self.missing.is_some(),
            scratch: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(
        &self,
        fruits: Vec<std::collections::HashMap<String, u64>>,
    ) -> tantivy::Result<std::collections::HashMap<String, u64>> {
        let mut out = std::collections::HashMap::new();
        for f in fruits {
            for (k, n) in f {
                *out.entry(k).or_insert(0) += n;
            }
        }
        if let Some(m) = self.missing {
            // Documents without a value were counted under the empty key marker.
            if let Some(n) = out.remove(MISSING_MARKER) {
                *out.entry(m.to_string()).or_insert(0) += n;
            }
        }
        Ok(out)
    }
}

/// Stands for "no value" between a segment and the merge (not a valid UTF-8 keyword).
const MISSING_MARKER: &str = "\u{0}\u{0}missing";

impl SegmentCollector for SegmentStrings {
    type Fruit = std::collections::HashMap<String, u64>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        let mut any = false;
        if let Some(c) = &self.column {
            // Each distinct value of a document counts once, as ES's sorted-set doc values.
            self.scratch.clear();
            self.scratch.extend(c.term_ords(doc));
            self.scratch.sort_unstable();
            self.scratch.dedup();
            any = !self.scratch.is_empty();
            for &ord in &self.scratch {
                *self.ords.entry(ord).or_insert(0) += 1;
            }
        }
        if !any && self.with_missing {
            self.missing += 1;
        }
    }

    fn harvest(self) -> std::collections::HashMap<String, u64> {
        let mut out = std::collections::HashMap::new();
        if let Some(c) = &self.column {
            let mut s = String::new();
            for (ord, n) in self.ords {
                s.clear();
                if c.ord_to_str(ord, &mut s).is_ok() {
                    *out.entry(s.clone()).or_insert(0) += n;
                }
            }
        }
        if self.missing > 0 {
            out.insert(MISSING_MARKER.to_string(), self.missing);
        }
        out
    }
}

/// `string_stats` as ES's `InternalStringStats`: `count` (values), `min_length`,
/// `max_length`, `avg_length` (lengths in UTF-16 units, as Java's `String.length`), and the
/// Shannon `entropy` (base 2) of the characters of all values, with their `distribution`
/// (probabilities, most frequent first) under `show_distribution`.
pub(crate) fn render_string_stats(
    exec: &Exec,
    field: &FieldRef,
    missing: Option<&str>,
    show_distribution: bool,
    scope: &Scope,
    obj: &mut Map<String, Value>,
) -> EsResult<()> {
    if scope.unconstrained {
        return Err(EsError::illegal_argument(
            "[string_stats] under a [composite] aggregation is not supported by Lode",
        ));
    }
    let mut values: std::collections::HashMap<String, u64> = Default::default();
    for pt in &exec.targets {
        let query = bucket_query(pt, scope)?;
        let collector = StringsCollector {
            field: &field.name,
            missing,
        };
        for shard in pt.target.shards {
            let found = shard
                .searcher
                .search(&*query, &collector)
                .map_err(|e| EsError::internal(format!("string_stats failure: {e}")))?;
            for (k, n) in found {
                *values.entry(k).or_insert(0) += n;
            }
        }
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
    fn add(&mut self, lat: f64, lon: f64) {
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

    fn merge(&mut self, o: &GeoStats) {
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

struct GeoCollector<'a> {
    field: &'a str,
}

struct SegmentGeo {
    column: Option<Column<u64>>,
    stats: GeoStats,
}

impl Collector for GeoCollector<'_> {
    type Fruit = GeoStats;
    type Child = SegmentGeo;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentGeo> {
        Ok(SegmentGeo {
            column: reader.fast_fields().column_opt::<u64>(self.field)?,
            stats: GeoStats::default(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<GeoStats>) -> tantivy::Result<GeoStats> {
        let mut out = GeoStats::default();
        for f in &fruits {
            out.merge(f);
        }
        Ok(out)
    }
}

impl SegmentCollector for SegmentGeo {
    type Fruit = GeoStats;

    fn collect(&mut self, doc: DocId, _score: Score) {
        if let Some(col) = &self.column {
            for v in col.values_for_doc(doc) {
                let (lat, lon) = lode_engine::geo::decode(v);
                self.stats.add(lat, lon);
            }
        }
    }

    fn harvest(self) -> GeoStats {
        self.stats
    }
}

/// `geo_bounds` (`{"bounds": {"top_left", "bottom_right"}}`, absent without points) or
/// `geo_centroid` (`{"location", "count"}`, the mean of the points' coordinates) of the
/// bucket's documents' quantized points.
pub(crate) fn render_geo(
    exec: &Exec,
    field: &FieldRef,
    centroid: bool,
    wrap_longitude: bool,
    scope: &Scope,
    obj: &mut Map<String, Value>,
) -> EsResult<()> {
    let name = if centroid {
        "geo_centroid"
    } else {
        "geo_bounds"
    };
    if scope.unconstrained {
        return Err(EsError::illegal_argument(format!(
            "[{name}] under a [composite] aggregation is not supported by Lode"
        )));
    }
    let mut stats = GeoStats::default();
    if field.def.is_some() {
        for pt in &exec.targets {
            let query = bucket_query(pt, scope)?;
            let collector = GeoCollector { field: &field.name };
            for shard in pt.target.shards {
                let found = shard
                    .searcher
                    .search(&*query, &collector)
                    .map_err(|e| EsError::internal(format!("{name} failure: {e}")))?;
                stats.merge(&found);
            }
        }
    }
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

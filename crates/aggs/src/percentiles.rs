//! `percentiles` and `percentile_ranks` (and the other TDigest-based metrics): tantivy's
//! percentiles are a DDSketch it keeps private, so the values of each bucket are read by
//! re-running the search restricted to the bucket (as `top_hits` does, see
//! `top_hits::bucket_query`), each matching document's values (or `missing`) added into the
//! bucket's TDigest or HDR histogram (`digest.rs`). Per document that is one column read and
//! one add.

use super::digest::{Hdr, TDigest};
use super::exec::Exec;
use super::plan::{metric_missing, FieldRef, MetricOp};
use super::render::Scope;
use super::render::{double, with_string};
use super::request::{DigestKind, DigestMetricReq, PercentilesMethod, PercentilesReq};
use super::top_hits::bucket_query;
use lode_engine::mapping::Storage;
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};
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

#[derive(Clone)]
enum NumColumn {
    I64(Column<i64>),
    F64(Column<f64>),
}

/// Adds the values of a numeric field (or `missing`) of every collected document.
struct ValuesCollector<'a> {
    field: &'a FieldRef,
    missing: Option<f64>,
    method: PercentilesMethod,
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
        match &self.column {
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
        // Each index resolves the field against its own mapping.
        let local = FieldRef {
            name: field.name.clone(),
            def: pt.target.ctx.mapping.field(&field.name).cloned(),
        };
        let query = bucket_query(pt, scope)?;
        let collector = ValuesCollector {
            field: &local,
            missing,
            method,
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

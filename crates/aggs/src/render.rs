//! Rendering: tantivy's final results, walked together with the plan, become Elasticsearch's
//! response objects. This is also where Elasticsearch's final reduce happens for the parts
//! tantivy does differently: bucket orders (compound, with NaN last), the `size` cut and
//! `sum_other_doc_count`, terms error bounds across shards, `key_as_string`, keyed buckets, and
//! the `search.max_buckets` check.

use super::exec::{Exec, TermsShardInfo};
use super::format::ValueFormat;
use super::plan::{
    docs_count_name, java_double, metric_missing, weight_sum_name, FieldRef, FiltersOp,
    FiltersStyle, Op, PlanNode, TermsKind, TermsOp, MULTI_TERMS_LEVEL,
};
use super::request::{
    AggKind, BucketOrder, CompositeSourceKind, MetricKind, OrderKey, PercentilesMethod, TermsReq,
};
use super::rounding::DateRounding;
use super::sketch::{Pending, Sketch, SketchSpec};
use super::top_hits;
use lode_engine::mapping::Storage;
use lode_engine::{EsError, EsResult};
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::collections::HashMap;
use tantivy::aggregation::agg_result::{
    AggregationResult, AggregationResults, BucketEntries, BucketEntry, BucketResult, CompositeKey,
    MetricResult,
};
use tantivy::aggregation::Key;

/// The bucket a sub-aggregation runs in, for `top_hits` (which re-queries its bucket) and the
/// per-bucket sketches (`sketch.rs`).
#[derive(Clone)]
pub(crate) enum Constraint {
    /// A `terms` bucket; with `missing` (its key is the aggregation's `missing` value), the
    /// documents without a value too.
    Term {
        field: FieldRef,
        key: Key,
        missing: bool,
    },
    /// `[from, to)` on a numeric or date field (histogram buckets, ranges); with `missing`
    /// (the aggregation's `missing` value, set only when it falls in the range), the
    /// documents without a value too.
    Range {
        field: FieldRef,
        from: Option<f64>,
        to: Option<f64>,
        missing: Option<f64>,
    },
    /// Bucket `bucket` of the filters source `source` (`bucket == n` is the other bucket).
    Filter { source: usize, bucket: usize },
    /// The cell `cell` (ES's hash long) of the geo grid source `source`.
    GeoCell { source: usize, cell: u64 },
    /// The key (encoded, see `composite.rs`) of the computed composite source `source`.
    CompositeKey {
        source: usize,
        key: std::sync::Arc<Vec<u8>>,
    },
    /// A sample of documents (a `sampler` below a bucket aggregation), by segment.
    Sample(std::sync::Arc<crate::sources::SampleQuery>),
}

#[derive(Clone, Default)]
pub(crate) struct Scope {
    pub constraints: Vec<Constraint>,
    /// Inside a `global` aggregation: the search query does not apply.
    pub global: bool,
    /// Inside a bucket the constraints cannot describe (`composite`): aggregations that
    /// re-query their bucket refuse to run there.
    pub unconstrained: bool,
    /// Below a `nested` or `reverse_nested` aggregation: the documents of the level it
    /// entered (`None`: the search's root documents).
    pub level: Option<std::sync::Arc<Level>>,
}

impl Constraint {
    /// `[from, to)` on `field`, holding the documents without a value when the aggregation's
    /// `missing` value falls in it.
    pub(crate) fn range(
        field: FieldRef,
        from: Option<f64>,
        to: Option<f64>,
        missing: Option<f64>,
    ) -> Constraint {
        let missing = missing.filter(|&m| from.is_none_or(|f| m >= f) && to.is_none_or(|t| m < t));
        Constraint::Range {
            field,
            from,
            to,
            missing,
        }
    }
}

/// A change of nesting level by a `nested` or `reverse_nested` aggregation: the documents
/// of its bucket are the documents of `outer` (the enclosing bucket, as a scope) mapped over
/// the block-join layout (see `top_hits::bucket_query`).
pub(crate) struct Level {
    pub outer: Scope,
    pub kind: LevelKind,
}

pub(crate) enum LevelKind {
    /// `nested`: the objects of the path (`None`: not mapped, no documents) under the outer
    /// bucket's documents.
    Nested(Option<String>),
    /// `reverse_nested`: the documents of the enclosing level `path` (`None`: the roots)
    /// holding the outer bucket's documents.
    Reverse(Option<String>),
    /// `reverse_nested` on an unmapped path: no documents.
    Unmapped,
}

impl Scope {
    fn with(&self, c: Constraint) -> Scope {
        let mut s = self.clone();
        s.constraints.push(c);
        s
    }

    /// The nested path whose objects this scope's documents are (`None`: root documents).
    pub fn path(&self) -> Option<&str> {
        match self.level.as_deref().map(|l| &l.kind) {
            Some(LevelKind::Nested(p)) | Some(LevelKind::Reverse(p)) => p.as_deref(),
            Some(LevelKind::Unmapped) | None => None,
        }
    }

    /// The scope of a `nested` or `reverse_nested` aggregation's bucket inside this one.
    fn enter(&self, kind: LevelKind, name: &str) -> EsResult<Scope> {
        if self.unconstrained {
            return Err(EsError::illegal_argument(format!(
                "[nested] and [reverse_nested] aggregations under a [composite] aggregation are not supported by Lode (aggregation [{name}])"
            )));
        }
        Ok(Scope {
            constraints: Vec::new(),
            global: false,
            unconstrained: false,
            level: Some(std::sync::Arc::new(Level {
                outer: self.clone(),
                kind,
            })),
        })
    }
}

pub(crate) struct Renderer<'a> {
    pub exec: &'a Exec<'a>,
    /// The sketch metrics rendering met, collected at the end in one pass.
    pub pending: Vec<Pending>,
    pub typed_keys: bool,
    pub max_buckets: usize,
    pub buckets: usize,
    /// Keep the exact distinct values of `cardinality` results and the digests of
    /// `percentiles` for the pipelines (`cumulative_cardinality` and `moving_percentiles`
    /// read them), in `kept`.
    pub keep_sketches: bool,
    pub kept: crate::pipeline::Kept,
}

fn no_results() -> AggregationResults {
    AggregationResults::default()
}

const DIGEST_UNCONSTRAINED: &str = "percentiles, percentile_ranks, median_absolute_deviation and boxplot under a [composite] aggregation are not supported by Lode";

/// The key marking, in a rendered metric, the sketch it waits for (not a valid field name).
const SKETCH_MARK: &str = "\u{0}sketch";

impl Renderer<'_> {
    /// Records a bucket's sketch metric, collected later with all the others in one pass
    /// ([`Renderer::fill_sketches`]), and marks its place in the response.
    fn defer(
        &mut self,
        node: &PlanNode,
        field: &str,
        spec: SketchSpec,
        scope: &Scope,
        obj: &mut Map<String, Value>,
        unconstrained: &str,
    ) -> EsResult<()> {
        if scope.unconstrained {
            return Err(EsError::illegal_argument(unconstrained));
        }
        obj.insert(SKETCH_MARK.into(), json!(self.pending.len()));
        self.pending.push(Pending {
            node: node as *const PlanNode as usize,
            field: field.to_string(),
            spec,
            scope: scope.clone(),
        });
        Ok(())
    }

    /// A `cardinality` counted exactly (below its threshold) when its field is a mapped
    /// keyword, numeric, date or boolean column of every index (scripts, runtime fields and
    /// other types keep tantivy's HyperLogLog estimate).
    fn distinct_spec(
        &self,
        req: &super::request::MetricReq,
        op: &super::plan::MetricOp,
    ) -> Option<SketchSpec> {
        let name = &op.field.name;
        let mut storage = None;
        for pt in &self.exec.targets {
            let ctx = pt.target.ctx;
            if ctx.runtime.contains_key(name) {
                return None;
            }
            let s = ctx.mapping.field(name).map(|d| d.storage());
            match s {
                Some(Storage::Keyword | Storage::I64 | Storage::F64 | Storage::Bool) => {}
                _ => return None,
            }
            if storage.is_some_and(|t| Some(t) != s) {
                return None;
            }
            storage = s;
        }
        let missing = match (&req.missing, storage?) {
            (None, _) => None,
            (Some(Value::String(m)), Storage::Keyword) => {
                Some(super::sketch::str_identity(m.as_bytes()))
            }
            (Some(_), Storage::Keyword) => return None,
            (Some(m), Storage::I64 | Storage::Bool) => {
                let x = metric_missing(Some(m), &op.field)?.as_f64()?;
                if x.fract() != 0.0 {
                    return None;
                }
                Some(x as i64 as u64)
            }
            (Some(m), _) => Some(metric_missing(Some(m), &op.field)?.as_f64()?.to_bits()),
        };
        Some(SketchSpec::Distinct {
            limit: super::sketch::exact_limit(req.precision_threshold),
            missing,
        })
    }

    /// Collects every recorded sketch in one pass and renders each in its place.
    pub fn fill_sketches(&mut self, out: &mut Map<String, Value>) -> EsResult<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let mut sketches: Vec<Option<Sketch>> = super::sketch::collect_all(self.exec, &pending)?
            .into_iter()
            .map(Some)
            .collect();
        let mut nodes: HashMap<usize, &PlanNode> = HashMap::new();
        fn index<'p, 'r>(list: &'p [PlanNode<'r>], out: &mut HashMap<usize, &'p PlanNode<'r>>) {
            for n in list {
                out.insert(n as *const PlanNode as usize, n);
                index(&n.subs, out);
            }
        }
        index(&self.exec.plan().roots, &mut nodes);
        let kept = self.keep_sketches.then_some(&mut self.kept);
        fill(out, &pending, &mut sketches, &nodes, kept)
    }

    fn count_buckets(&mut self, n: usize) -> EsResult<()> {
        self.buckets += n;
        if self.buckets > self.max_buckets {
            return Err(too_many_buckets(self.max_buckets));
        }
        Ok(())
    }

    pub fn render_level(
        &mut self,
        nodes: &[PlanNode],
        results: &AggregationResults,
        scope: &Scope,
        top: bool,
    ) -> EsResult<Map<String, Value>> {
        let mut out = Map::new();
        for node in nodes {
            let key = if self.typed_keys {
                format!("{}#{}", typed_name(node), node.req.name)
            } else {
                node.req.name.clone()
            };
            let mut obj = Map::new();
            if let Some(meta) = &node.req.meta {
                obj.insert("meta".into(), meta.clone());
            }
            // tantivy leaves out what an absent bucket would have held: render it empty.
            let empty;
            if let Op::SignificantTerms { terms, .. } = &node.op {
                self.render_significant_terms(node, terms, results, scope, &mut obj)?;
                out.insert(key, Value::Object(obj));
                continue;
            }
            if let (Op::VariableWidthPerBucket { .. }, AggKind::VariableWidthHistogram(req)) =
                (&node.op, &node.req.kind)
            {
                self.render_vwh_per_bucket(node, req, scope, &mut obj)?;
                out.insert(key, Value::Object(obj));
                continue;
            }
            if let Op::SamplerPerBucket {
                shard_size,
                diversify,
            } = &node.op
            {
                self.render_sampler_per_bucket(
                    node,
                    *shard_size,
                    diversify.as_ref(),
                    scope,
                    &mut obj,
                )?;
                out.insert(key, Value::Object(obj));
                continue;
            }
            if let (Op::AutoDatePerBucket(op), AggKind::AutoDateHistogram(req)) =
                (&node.op, &node.req.kind)
            {
                self.render_auto_date_per_bucket(node, req, op, scope, &mut obj)?;
                out.insert(key, Value::Object(obj));
                continue;
            }
            if let (Op::SignificantText, AggKind::SignificantText(req)) = (&node.op, &node.req.kind)
            {
                let r = super::significant_text::run(self.exec, req, scope)?;
                self.count_buckets(r.buckets.len())?;
                let field = super::plan::FieldRef {
                    name: req.terms.field.clone(),
                    def: self.exec.targets[0]
                        .target
                        .ctx
                        .mapping
                        .field(&req.terms.field)
                        .cloned(),
                };
                let mut list = Vec::with_capacity(r.buckets.len());
                for b in r.buckets {
                    let mut o = Map::new();
                    o.insert("key".into(), json!(b.key));
                    o.insert("doc_count".into(), json!(b.doc_count));
                    o.insert("score".into(), json!(b.score));
                    o.insert("bg_count".into(), json!(b.bg_count));
                    if !node.subs.is_empty() {
                        // The bucket's documents: the enclosing bucket's holding the term.
                        let scope = scope.with(Constraint::Term {
                            field: field.clone(),
                            missing: false,
                            key: Key::Str(b.key),
                        });
                        let (results, _) = self.exec.collect_level(node, &scope)?;
                        o.extend(self.render_level(&node.subs, &results, &scope, false)?);
                    }
                    list.push(Value::Object(o));
                }
                obj.insert("doc_count".into(), json!(r.subset_size));
                obj.insert("bg_count".into(), json!(r.superset_size));
                obj.insert("buckets".into(), Value::Array(list));
                out.insert(key, Value::Object(obj));
                continue;
            }
            if let Op::WeightedAvg { format, .. } = &node.op {
                with_string(
                    &mut obj,
                    "value",
                    weighted_avg(results, &node.req.name),
                    format,
                );
                out.insert(key, Value::Object(obj));
                continue;
            }
            let result = match results.0.get(&node.req.name) {
                Some(r) => Some(r),
                None if matches!(
                    node.op,
                    Op::Global
                        | Op::Nested { .. }
                        | Op::ReverseNested { .. }
                        | Op::TopHits
                        | Op::TopMetrics
                        | Op::Percentiles(_)
                        | Op::DigestMetric(_)
                        | Op::StringStats(_)
                        | Op::GeoMetric(_)
                ) =>
                {
                    None
                }
                None => {
                    empty = self
                        .exec
                        .empty_results(std::slice::from_ref(node))?
                        .0
                        .remove(&node.req.name);
                    empty.as_ref()
                }
            };
            self.render_node(node, result, scope, top, &mut obj)?;
            out.insert(key, Value::Object(obj));
        }
        Ok(out)
    }

    fn render_node(
        &mut self,
        node: &PlanNode,
        result: Option<&AggregationResult>,
        scope: &Scope,
        top: bool,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let missing =
            || EsError::internal(format!("no result for aggregation [{}]", node.req.name));
        match &node.op {
            Op::Global => {
                let (results, doc_count) = self.exec.collect_global(node)?;
                obj.insert("doc_count".into(), json!(doc_count));
                let scope = Scope {
                    constraints: Vec::new(),
                    global: true,
                    unconstrained: false,
                    level: None,
                };
                let subs = self.render_level(&node.subs, &results, &scope, false)?;
                obj.extend(subs);
            }
            Op::Nested { path } => {
                let scope = scope.enter(LevelKind::Nested(path.clone()), &node.req.name)?;
                let (results, doc_count) = self.exec.collect_level(node, &scope)?;
                obj.insert("doc_count".into(), json!(doc_count));
                let subs = self.render_level(&node.subs, &results, &scope, false)?;
                obj.extend(subs);
            }
            Op::ReverseNested { path, unmapped } => {
                let kind = if *unmapped {
                    LevelKind::Unmapped
                } else {
                    LevelKind::Reverse(path.clone())
                };
                let scope = scope.enter(kind, &node.req.name)?;
                let (results, doc_count) = self.exec.collect_level(node, &scope)?;
                obj.insert("doc_count".into(), json!(doc_count));
                let subs = self.render_level(&node.subs, &results, &scope, false)?;
                obj.extend(subs);
            }
            Op::TopHits => {
                let AggKind::TopHits(req) = &node.req.kind else {
                    unreachable!()
                };
                let hits = top_hits::render(self.exec, req, scope)?;
                obj.insert("hits".into(), hits);
            }
            Op::TopMetrics => {
                let AggKind::TopMetrics(req) = &node.req.kind else {
                    unreachable!()
                };
                obj.insert(
                    "top".into(),
                    top_hits::render_top_metrics(self.exec, req, scope)?,
                );
            }
            Op::Metric(op) => {
                let Some(AggregationResult::MetricResult(m)) = result else {
                    return Err(missing());
                };
                let AggKind::Metric(req) = &node.req.kind else {
                    unreachable!()
                };
                render_metric(req.kind, req.sigma, m, &op.format, obj);
                if req.kind == MetricKind::Cardinality && !scope.unconstrained {
                    if let Some(spec) = self.distinct_spec(req, op) {
                        // Exact below the threshold: the value is replaced once collected.
                        self.defer(node, &op.field.name, spec, scope, obj, "")?;
                    }
                }
            }
            Op::Percentiles(op) => {
                let AggKind::Percentiles(req) = &node.req.kind else {
                    unreachable!()
                };
                let spec = SketchSpec::Digest {
                    method: req.method,
                    missing: metric_missing(req.missing.as_ref(), &op.field)
                        .and_then(|m| m.as_f64()),
                };
                self.defer(node, &op.field.name, spec, scope, obj, DIGEST_UNCONSTRAINED)?;
            }
            Op::StringStats(field) => {
                let AggKind::StringStats { missing, .. } = &node.req.kind else {
                    unreachable!()
                };
                let spec = SketchSpec::Strings {
                    missing: missing.is_some(),
                };
                self.defer(
                    node,
                    &field.name,
                    spec,
                    scope,
                    obj,
                    "[string_stats] under a [composite] aggregation is not supported by Lode",
                )?;
            }
            Op::GeoMetric(field) => {
                let AggKind::GeoMetric { centroid, .. } = &node.req.kind else {
                    unreachable!()
                };
                let name = if *centroid {
                    "geo_centroid"
                } else {
                    "geo_bounds"
                };
                let spec = SketchSpec::Geo {
                    mapped: field.def.is_some(),
                };
                self.defer(
                    node,
                    &field.name,
                    spec,
                    scope,
                    obj,
                    &format!("[{name}] under a [composite] aggregation is not supported by Lode"),
                )?;
            }
            Op::DigestMetric(op) => {
                let AggKind::DigestMetric(req) = &node.req.kind else {
                    unreachable!()
                };
                let spec = SketchSpec::Digest {
                    method: req.method,
                    missing: metric_missing(req.missing.as_ref(), &op.field)
                        .and_then(|m| m.as_f64()),
                };
                self.defer(node, &op.field.name, spec, scope, obj, DIGEST_UNCONSTRAINED)?;
            }
            _ => {
                let Some(AggregationResult::BucketResult(b)) = result else {
                    return Err(missing());
                };
                self.render_buckets(node, b, scope, top, obj)?;
            }
        }
        Ok(())
    }

    fn render_buckets(
        &mut self,
        node: &PlanNode,
        result: &BucketResult,
        scope: &Scope,
        top: bool,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        match (&node.req.kind, &node.op, result) {
            (
                AggKind::RareTerms { max_doc_count, .. },
                Op::RareTerms(op),
                BucketResult::Terms { buckets, .. },
            ) => self.render_rare_terms(node, op, *max_doc_count, buckets, scope, obj),
            (
                AggKind::MultiTerms(req),
                Op::MultiTerms(ops),
                BucketResult::Terms { buckets, .. },
            ) => self.render_multi_terms(node, &req.base, ops, buckets, scope, obj),
            (
                AggKind::Terms(req),
                Op::Terms(op),
                BucketResult::Terms {
                    buckets,
                    sum_other_doc_count,
                    doc_count_error_upper_bound,
                },
            ) => {
                let info = if top {
                    self.exec.terms_info.get(&node.req.name)
                } else {
                    None
                };
                self.render_terms(
                    node,
                    req,
                    op,
                    buckets,
                    *sum_other_doc_count,
                    *doc_count_error_upper_bound,
                    info,
                    scope,
                    obj,
                )
            }
            (
                AggKind::GeoGrid(g),
                Op::GeoGrid { source, .. },
                BucketResult::Terms { buckets, .. },
            ) => self.render_geo_grid(node, g, *source, buckets, scope, obj),
            (
                AggKind::Histogram(h),
                Op::Histogram {
                    format, missing, ..
                },
                BucketResult::Histogram { buckets },
            ) => {
                let entries = entries_vec(buckets);
                let mut out = Vec::with_capacity(entries.len());
                for b in entries {
                    let x = key_f64(&b.key);
                    let key_as_string = format.format(x);
                    let scope = scope.with(Constraint::range(
                        FieldRef {
                            name: h.field.clone(),
                            def: self.exec.targets[0]
                                .target
                                .ctx
                                .mapping
                                .field(&h.field)
                                .cloned(),
                        },
                        Some(x),
                        Some(x + h.interval),
                        *missing,
                    ));
                    out.push(self.histogram_bucket(
                        node,
                        &h.order,
                        b,
                        json!(x),
                        key_as_string,
                        &scope,
                    )?);
                }
                self.finish_histogram(&h.order, out, h.keyed, obj)
            }
            (kind, Op::DateHistogram(op), BucketResult::Histogram { buckets }) => {
                let d = kind
                    .as_date_histogram()
                    .expect("date histogram ops come from date histograms");
                let entries = entries_vec(buckets);
                let mut out: Vec<RenderedBucket> = Vec::with_capacity(entries.len());
                for b in entries {
                    let x = key_f64(&b.key);
                    let (key, next) = match &op.rounding {
                        DateRounding::Native { interval, .. } => (x as i64, x as i64 + interval),
                        DateRounding::Indexed(ix) => (ix.key_of(x as i64), ix.key_of(x as i64 + 1)),
                    };
                    // A wall-clock bucket that DST skipped has the next bucket's key.
                    if b.doc_count == 0 && out.last().is_some_and(|p| p.key == json!(key)) {
                        continue;
                    }
                    let scope = scope.with(Constraint::range(
                        op.field.clone(),
                        Some(key as f64),
                        Some(next as f64),
                        op.missing.map(|m| m as f64),
                    ));
                    let rendered = self.histogram_bucket(
                        node,
                        &d.order,
                        b,
                        json!(key),
                        op.format.format(key as f64),
                        &scope,
                    )?;
                    if b.doc_count == 0 && out.last().is_some_and(|p| p.key == rendered.key) {
                        continue;
                    }
                    out.push(rendered);
                }
                out.dedup_by(|later, earlier| later.key == earlier.key && later.doc_count == 0);
                self.finish_histogram(&d.order, out, d.keyed, obj)?;
                if let AggKind::AutoDateHistogram(a) = kind {
                    let chosen = a.chosen.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(c) = chosen.as_ref() {
                        obj.insert("interval".into(), json!(c.interval));
                    }
                }
                Ok(())
            }
            (
                AggKind::VariableWidthHistogram(v),
                Op::Range(op),
                BucketResult::Range { buckets },
            ) => {
                let entries: Vec<_> = buckets.iter().collect();
                let chosen = v.chosen.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let clusters = chosen.unwrap_or_default();
                self.count_buckets(clusters.len())?;
                let mut list = Vec::with_capacity(clusters.len());
                for (i, (c, def)) in clusters.iter().zip(&op.ranges).enumerate() {
                    let entry = entries.iter().find(|e| e.from == Some((i + 1) as f64));
                    let mut b = Map::new();
                    for (name, x) in [("min", c.min), ("key", c.centroid), ("max", c.max)] {
                        b.insert(name.into(), json!(x));
                        if let Some(s) = op.format.format(x) {
                            b.insert(format!("{name}_as_string"), json!(s));
                        }
                    }
                    b.insert("doc_count".into(), json!(c.doc_count));
                    let scope = scope.with(Constraint::range(
                        op.field.clone(),
                        def.from,
                        def.to,
                        op.missing,
                    ));
                    let empty = no_results();
                    let subs = entry.map(|e| &e.sub_aggregation).unwrap_or(&empty);
                    b.extend(self.render_level(&node.subs, subs, &scope, false)?);
                    list.push(Value::Object(b));
                }
                obj.insert("buckets".into(), Value::Array(list));
                Ok(())
            }
            (AggKind::Range(r), Op::Range(op), BucketResult::Range { buckets }) => {
                let entries: Vec<_> = buckets.iter().collect();
                let mut list = Vec::new();
                let mut keyed = Map::new();
                self.count_buckets(op.ranges.len())?;
                for (i, def) in op.ranges.iter().enumerate() {
                    let entry = entries.iter().find(|e| e.from == Some((i + 1) as f64));
                    let doc_count = entry.map(|e| e.doc_count).unwrap_or(0);
                    let mut b = Map::new();
                    if !r.keyed {
                        b.insert("key".into(), json!(def.key));
                    }
                    for (name, bound) in [("from", def.from), ("to", def.to)] {
                        if let Some(x) = bound {
                            b.insert(name.into(), json!(x));
                            if let Some(s) = op.format.format(x) {
                                b.insert(format!("{name}_as_string"), json!(s));
                            }
                        }
                    }
                    b.insert("doc_count".into(), json!(doc_count));
                    let scope = scope.with(Constraint::range(
                        op.field.clone(),
                        def.from,
                        def.to,
                        op.missing,
                    ));
                    let empty = no_results();
                    let subs = entry.map(|e| &e.sub_aggregation).unwrap_or(&empty);
                    b.extend(self.render_level(&node.subs, subs, &scope, false)?);
                    if r.keyed {
                        keyed.insert(def.key.clone(), Value::Object(b));
                    } else {
                        list.push(Value::Object(b));
                    }
                }
                obj.insert(
                    "buckets".into(),
                    if r.keyed {
                        Value::Object(keyed)
                    } else {
                        Value::Array(list)
                    },
                );
                Ok(())
            }
            (_, Op::Filters(op), BucketResult::Range { buckets }) => {
                self.render_filters(node, op, buckets, scope, obj)
            }
            (AggKind::Composite(c), Op::Composite(op), BucketResult::Terms { buckets, .. })
                if op.computed.is_some() =>
            {
                // `terms` over the computed keys: in key order, the first `size` are the page.
                let mut buckets: Vec<&BucketEntry> = buckets.iter().collect();
                buckets.sort_by(|a, b| match (&a.key, &b.key) {
                    (Key::Str(x), Key::Str(y)) => x.cmp(y),
                    _ => Ordering::Equal,
                });
                buckets.truncate(c.size);
                self.count_buckets(buckets.len())?;
                let mut list = Vec::with_capacity(buckets.len());
                let mut last_key = None;
                let source = op.computed.unwrap_or_default();
                let page: std::collections::HashSet<Vec<u8>> = buckets
                    .iter()
                    .filter_map(|b| match &b.key {
                        Key::Str(t) => crate::composite::decode_term(t).map(|(k, _)| k),
                        _ => None,
                    })
                    .collect();
                for t in &self.exec.targets {
                    if let Some(super::plan::SourceSpec::CompositeKeys(spec)) =
                        t.plan.sources.get(source)
                    {
                        spec.want(page.clone());
                    }
                }
                for b in buckets {
                    let (encoded, values) = match &b.key {
                        Key::Str(t) => crate::composite::decode_term(t),
                        _ => None,
                    }
                    .ok_or_else(|| EsError::internal("composite: undecodable key"))?;
                    // The bucket's documents are those with this key: aggregations that
                    // re-query their bucket (nested, percentiles, top_hits, ...) can run.
                    let scope = &scope.with(Constraint::CompositeKey {
                        source,
                        key: std::sync::Arc::new(encoded),
                    });
                    let mut key = Map::new();
                    for ((s, format), v) in c.sources.iter().zip(&op.formats).zip(values) {
                        let (v, integral) = computed_key(v, format.is_some());
                        key.insert(
                            s.name.clone(),
                            composite_value(&v, format.as_ref(), integral),
                        );
                    }
                    let mut o = Map::new();
                    o.insert("key".into(), Value::Object(key.clone()));
                    o.insert("doc_count".into(), json!(b.doc_count));
                    o.extend(self.render_level(&node.subs, &b.sub_aggregation, scope, false)?);
                    list.push(Value::Object(o));
                    last_key = Some(key);
                }
                if let Some(k) = last_key {
                    obj.insert("after_key".into(), Value::Object(k));
                }
                obj.insert("buckets".into(), Value::Array(list));
                Ok(())
            }
            (AggKind::Composite(c), Op::Composite(op), BucketResult::Composite { buckets, .. }) => {
                self.count_buckets(buckets.len())?;
                let mut list = Vec::with_capacity(buckets.len());
                let mut last_key = None;
                let scope = &Scope {
                    unconstrained: true,
                    ..scope.clone()
                };
                for b in buckets {
                    let mut key = Map::new();
                    for ((s, format), field) in c.sources.iter().zip(&op.formats).zip(&op.fields) {
                        let v = b.key.get(&s.name).unwrap_or(&CompositeKey::Null);
                        let integral = field.storage() == Some(Storage::I64)
                            && !matches!(s.kind, CompositeSourceKind::Histogram { .. });
                        key.insert(
                            s.name.clone(),
                            composite_value(v, format.as_ref(), integral),
                        );
                    }
                    let mut o = Map::new();
                    o.insert("key".into(), Value::Object(key.clone()));
                    o.insert("doc_count".into(), json!(b.doc_count));
                    o.extend(self.render_level(&node.subs, &b.sub_aggregation, scope, false)?);
                    list.push(Value::Object(o));
                    last_key = Some(key);
                }
                if let Some(k) = last_key {
                    obj.insert("after_key".into(), Value::Object(k));
                }
                obj.insert("buckets".into(), Value::Array(list));
                Ok(())
            }
            _ => Err(EsError::internal(format!(
                "unexpected result shape for aggregation [{}]",
                node.req.name
            ))),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn render_terms(
        &mut self,
        node: &PlanNode,
        req: &TermsReq,
        op: &TermsOp,
        buckets: &[BucketEntry],
        sum_other: u64,
        tantivy_error: Option<u64>,
        info: Option<&Vec<TermsShardInfo>>,
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let shards = self.exec.shard_count();
        let merged;
        let buckets = match self.merge_missing_duplicates(node, op, buckets, scope)? {
            Some(m) => {
                merged = m;
                &merged[..]
            }
            None => buckets,
        };
        let kept: Vec<&BucketEntry> = buckets.iter().filter(|b| op.keeps(&b.key)).collect();
        let mut keyed: Vec<(SortKey, &BucketEntry)> = kept
            .into_iter()
            .map(|b| {
                let k = SortKey::new(
                    &req.order,
                    b.doc_count,
                    order_key(op, &b.key),
                    &b.sub_aggregation,
                );
                (k, b)
            })
            .collect();
        keyed.sort_by(|a, b| compare(&req.order, &a.0, &b.0));
        let mut kept: Vec<&BucketEntry> = keyed.into_iter().map(|(_, b)| b).collect();
        let mut other = sum_other + info.map_or(0, |v| v.iter().map(|s| s.dropped).sum());
        if kept.len() > req.size {
            other += kept[req.size..].iter().map(|b| b.doc_count).sum::<u64>();
            kept.truncate(req.size);
        }
        // Elasticsearch's reduce (`AbstractInternalTerms`): a shard whose error is unbounded (-1:
        // it returned `shard_size` buckets under an order other than by key or by count
        // descending) makes the whole error and every bucket's unbounded, even with one shard;
        // otherwise no error with a single shard, and the sum of each shard's error.
        let shard_errors: Option<Vec<i64>> = info.map(|v| v.iter().map(|s| s.error).collect());
        let unbounded = shard_errors.as_ref().is_some_and(|e| e.contains(&-1));
        let total_error: i64 = if unbounded {
            -1
        } else if shards <= 1 {
            0
        } else if let Some(errs) = &shard_errors {
            errs.iter().sum()
        } else {
            tantivy_error.map(|e| e as i64).unwrap_or(0)
        };
        self.count_buckets(kept.len())?;
        let mut list = Vec::with_capacity(kept.len());
        for b in kept {
            let mut o = Map::new();
            let (key, key_as_string) = terms_key(op, &b.key);
            o.insert("key".into(), key);
            if let Some(s) = key_as_string {
                o.insert("key_as_string".into(), json!(s));
            }
            o.insert("doc_count".into(), json!(b.doc_count));
            if req.show_term_doc_count_error {
                let e = match (&shard_errors, info) {
                    _ if unbounded => -1,
                    _ if shards <= 1 => 0,
                    (Some(errs), Some(info)) => {
                        let id = key_id(&b.key);
                        info.iter()
                            .zip(errs)
                            .filter(|(s, _)| !s.keys.contains(&id))
                            .map(|(_, e)| *e)
                            .sum()
                    }
                    _ => total_error,
                };
                o.insert("doc_count_error_upper_bound".into(), json!(e));
            }
            let scope = scope.with(Constraint::Term {
                field: op.field.clone(),
                key: b.key.clone(),
                missing: op.holds_missing(&b.key),
            });
            o.extend(self.render_level(&node.subs, &b.sub_aggregation, &scope, false)?);
            list.push(Value::Object(o));
        }
        obj.insert("doc_count_error_upper_bound".into(), json!(total_error));
        obj.insert("sum_other_doc_count".into(), json!(other));
        obj.insert("buckets".into(), Value::Array(list));
        Ok(())
    }

    /// Buckets with the same key, which tantivy leaves apart when the `missing` value's
    /// bucket (keyed by the text given) equals a value's bucket of another key type (an `ip`
    /// field's addresses): one bucket, its documents and sub-aggregations collected again
    /// (the value's documents and those without one). `None` when every key is distinct.
    fn merge_missing_duplicates(
        &mut self,
        node: &PlanNode,
        op: &TermsOp,
        buckets: &[BucketEntry],
        scope: &Scope,
    ) -> EsResult<Option<Vec<BucketEntry>>> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut dup = false;
        for b in buckets {
            let n = seen.entry(key_id(&b.key)).or_default();
            *n += 1;
            dup |= *n > 1;
        }
        if !dup {
            return Ok(None);
        }
        let mut out: Vec<BucketEntry> = Vec::with_capacity(buckets.len());
        let mut done: HashMap<String, ()> = HashMap::new();
        for b in buckets {
            let id = key_id(&b.key);
            if seen.get(&id).copied().unwrap_or(0) <= 1 {
                out.push(b.clone());
                continue;
            }
            if done.insert(id, ()).is_some() {
                continue;
            }
            let scope = scope.with(Constraint::Term {
                field: op.field.clone(),
                key: b.key.clone(),
                missing: op.holds_missing(&b.key),
            });
            let (results, doc_count) = self.exec.collect_level(node, &scope)?;
            out.push(BucketEntry {
                key_as_string: b.key_as_string.clone(),
                key: b.key.clone(),
                doc_count,
                sub_aggregation: results,
            });
        }
        Ok(Some(out))
    }

    /// `geohash_grid`/`geotile_grid`: ES's reduce, a `BucketPriorityQueue` of `size`: by
    /// count, then by hash long (descending both, the hash compared as Java's signed long),
    /// each bucket keyed by its cell's string.
    fn render_geo_grid(
        &mut self,
        node: &PlanNode,
        req: &crate::request::GeoGridReq,
        source: usize,
        buckets: &[BucketEntry],
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let cell = |k: &Key| match k {
            Key::I64(v) => *v as u64,
            Key::U64(v) => *v,
            other => key_f64(other) as u64,
        };
        let mut kept: Vec<(u64, &BucketEntry)> =
            buckets.iter().map(|b| (cell(&b.key), b)).collect();
        kept.sort_by(|a, b| {
            b.1.doc_count
                .cmp(&a.1.doc_count)
                .then((b.0 as i64).cmp(&(a.0 as i64)))
        });
        kept.truncate(req.size);
        self.count_buckets(kept.len())?;
        let mut list = Vec::with_capacity(kept.len());
        for (hash, b) in kept {
            let mut o = Map::new();
            o.insert("key".into(), json!(req.grid.key(hash)));
            o.insert("doc_count".into(), json!(b.doc_count));
            let scope = scope.with(Constraint::GeoCell { source, cell: hash });
            o.extend(self.render_level(&node.subs, &b.sub_aggregation, &scope, false)?);
            list.push(Value::Object(o));
        }
        obj.insert("buckets".into(), Value::Array(list));
        Ok(())
    }

    /// A `variable_width_histogram` below a bucket aggregation: the bucket's documents
    /// clustered here, each of its buckets collecting its sub-aggregations over the
    /// enclosing bucket's documents in its interval.
    fn render_vwh_per_bucket(
        &mut self,
        node: &PlanNode,
        req: &crate::vwh::VwhReq,
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let Op::VariableWidthPerBucket {
            field,
            format,
            missing,
        } = &node.op
        else {
            return Err(EsError::internal(
                "variable_width_histogram: not planned per bucket",
            ));
        };
        let missing = *missing;
        let queries = self
            .exec
            .targets
            .iter()
            .map(|pt| top_hits::bucket_query(pt, scope))
            .collect::<EsResult<Vec<_>>>()?;
        let parts: Vec<(&crate::exec::AggTarget, &dyn tantivy::query::Query)> = self
            .exec
            .targets
            .iter()
            .zip(&queries)
            .map(|(pt, q)| (pt.target, &**q))
            .collect();
        let clusters = crate::vwh::clusters(req, &parts)?;
        self.count_buckets(clusters.len())?;
        let ranges = crate::vwh::bucket_ranges(&clusters);
        let mut list = Vec::with_capacity(clusters.len());
        for (c, (from, to)) in clusters.iter().zip(ranges) {
            let mut b = Map::new();
            for (name, x) in [("min", c.min), ("key", c.centroid), ("max", c.max)] {
                b.insert(name.into(), json!(x));
                if let Some(s) = format.format(x) {
                    b.insert(format!("{name}_as_string"), json!(s));
                }
            }
            b.insert("doc_count".into(), json!(c.doc_count));
            if !node.subs.is_empty() {
                let scope = scope.with(Constraint::range(
                    field.clone(),
                    Some(from),
                    Some(to),
                    missing,
                ));
                let (results, _) = self.exec.collect_level(node, &scope)?;
                b.extend(self.render_level(&node.subs, &results, &scope, false)?);
            }
            list.push(Value::Object(b));
        }
        obj.insert("buckets".into(), Value::Array(list));
        Ok(())
    }

    /// `sampler`/`diversified_sampler` below a bucket aggregation: on each shard the
    /// enclosing bucket's `shard_size` best-scoring matches (diversified as at the top
    /// level), their count and the sub-aggregations over them.
    fn render_sampler_per_bucket(
        &mut self,
        node: &PlanNode,
        shard_size: usize,
        diversify: Option<&(super::plan::FieldRef, usize, Option<String>)>,
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let mut sets: std::collections::HashMap<tantivy::index::SegmentId, tantivy::BitSet> =
            std::collections::HashMap::new();
        for pt in &self.exec.targets {
            let q = top_hits::bucket_query(pt, scope)?;
            for shard in pt.target.shards {
                let top = crate::sources::sample(shard, &*q, shard_size, diversify)
                    .map_err(|e| EsError::internal(format!("sampler: {e}")))?;
                for addr in top {
                    let reader = shard.searcher.segment_reader(addr.segment_ord);
                    sets.entry(reader.segment_id())
                        .or_insert_with(|| tantivy::BitSet::with_max_value(reader.max_doc().max(1)))
                        .insert(addr.doc_id);
                }
            }
        }
        let sample = Constraint::Sample(std::sync::Arc::new(crate::sources::SampleQuery {
            sets: std::sync::Arc::new(sets),
        }));
        let scope = scope.with(sample);
        let (results, doc_count) = self.exec.collect_level(node, &scope)?;
        obj.insert("doc_count".into(), json!(doc_count));
        obj.extend(self.render_level(&node.subs, &results, &scope, false)?);
        Ok(())
    }

    /// `auto_date_histogram` below a bucket aggregation: the rounding chosen from the
    /// bucket's own documents (as ES rounds per owning bucket), then each bucket from the
    /// first to the last counted and its sub-aggregations collected over the enclosing
    /// bucket's documents in its interval.
    fn render_auto_date_per_bucket(
        &mut self,
        node: &PlanNode,
        req: &crate::request::AutoDateHistogramReq,
        op: &super::plan::DateHistogramOp,
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let queries = self
            .exec
            .targets
            .iter()
            .map(|pt| top_hits::bucket_query(pt, scope))
            .collect::<EsResult<Vec<_>>>()?;
        let parts: Vec<(&crate::exec::AggTarget, &dyn tantivy::query::Query)> = self
            .exec
            .targets
            .iter()
            .zip(&queries)
            .map(|(pt, q)| (pt.target, &**q))
            .collect();
        let bounds = crate::auto_date::bounds(req, &parts)?;
        let choice = crate::auto_date::choose(req, bounds);
        let mut out: Vec<RenderedBucket> = Vec::new();
        if let Some((min, max)) = bounds {
            let r = &choice.rounding;
            let (first, last) = (r.bucket_of(min).0, r.bucket_of(max).0);
            for i in first..=last {
                let (key, next) = (r.key_of(i), r.key_of(i + 1));
                // A wall-clock bucket that DST skipped has the next bucket's key.
                if out.last().is_some_and(|p| p.key == json!(key)) {
                    continue;
                }
                let scope = scope.with(Constraint::range(
                    op.field.clone(),
                    Some(key as f64),
                    Some(next as f64),
                    op.missing.map(|m| m as f64),
                ));
                let (results, doc_count) = self.exec.collect_level(node, &scope)?;
                let b = BucketEntry {
                    key_as_string: None,
                    key: Key::F64(key as f64),
                    doc_count,
                    sub_aggregation: results,
                };
                out.push(self.histogram_bucket(
                    node,
                    &req.hist.order,
                    &b,
                    json!(key),
                    op.format.format(key as f64),
                    &scope,
                )?);
            }
        }
        self.finish_histogram(&req.hist.order, out, req.hist.keyed, obj)?;
        obj.insert("interval".into(), json!(choice.interval));
        Ok(())
    }

    /// `significant_terms`: the foreground counts from tantivy, the background counted here,
    /// scored with JLH; buckets with a positive score and at least `min_doc_count` documents,
    /// by score (then key), cut to `size`.
    fn render_significant_terms(
        &mut self,
        node: &PlanNode,
        op: &TermsOp,
        results: &AggregationResults,
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let AggKind::SignificantTerms {
            terms: req,
            background_filter,
            heuristic,
        } = &node.req.kind
        else {
            unreachable!()
        };
        let subset_size = match results.0.get(&docs_count_name(&node.req.name)) {
            Some(AggregationResult::BucketResult(BucketResult::Range { buckets })) => buckets
                .iter()
                .find(|e| e.from == Some(1.0))
                .map_or(0, |e| e.doc_count),
            _ => 0,
        };
        let empty = Vec::new();
        let buckets: Vec<&BucketEntry> = match results.0.get(&node.req.name) {
            Some(AggregationResult::BucketResult(BucketResult::Terms { buckets, .. })) => {
                buckets.iter().collect()
            }
            _ => empty.iter().collect(),
        };
        let bg = super::significant::background(
            self.exec,
            &op.field.name,
            background_filter.as_deref(),
        )?;
        let mut scored: Vec<(f64, u64, &BucketEntry)> = Vec::new();
        for b in buckets {
            if b.doc_count < req.min_doc_count || !op.keeps(&b.key) {
                continue;
            }
            let term = match (&b.key, op.kind) {
                (Key::Str(s), _) => s.clone(),
                // Numbers, dates and booleans: the background counts them by value.
                (other, TermsKind::Long | TermsKind::Bool) => {
                    super::significant::numeric_term(key_f64(other) as i64)
                }
                (other, _) => key_id(other),
            };
            let bg_count = bg.counts.get(&term).copied().unwrap_or(0);
            let score = heuristic.score(b.doc_count, subset_size, bg_count, bg.size)?;
            // ES's reduce keeps the terms scored above 0 (a negative or -Infinity score
            // drops the term).
            if score > 0.0 {
                scored.push((score, bg_count, b));
            }
        }
        scored.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| cmp_key(&a.2.key, &b.2.key))
        });
        scored.truncate(req.size);
        self.count_buckets(scored.len())?;
        let mut list = Vec::with_capacity(scored.len());
        for (score, bg_count, b) in scored {
            let mut o = Map::new();
            let (key, key_as_string) = terms_key(op, &b.key);
            o.insert("key".into(), key);
            if let Some(s) = key_as_string {
                o.insert("key_as_string".into(), json!(s));
            }
            o.insert("doc_count".into(), json!(b.doc_count));
            o.insert("score".into(), json!(score));
            o.insert("bg_count".into(), json!(bg_count));
            let scope = scope.with(Constraint::Term {
                field: op.field.clone(),
                key: b.key.clone(),
                missing: op.holds_missing(&b.key),
            });
            o.extend(self.render_level(&node.subs, &b.sub_aggregation, &scope, false)?);
            list.push(Value::Object(o));
        }
        obj.insert("doc_count".into(), json!(subset_size));
        obj.insert("bg_count".into(), json!(bg.size));
        obj.insert("buckets".into(), Value::Array(list));
        Ok(())
    }

    /// `rare_terms`: the terms with at most `max_doc_count` documents, by count then key
    /// (ascending), as Elasticsearch's reduce sorts them; counted exactly.
    fn render_rare_terms(
        &mut self,
        node: &PlanNode,
        op: &TermsOp,
        max_doc_count: u64,
        buckets: &[BucketEntry],
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let mut kept: Vec<&BucketEntry> = buckets
            .iter()
            .filter(|b| b.doc_count <= max_doc_count)
            .filter(|b| op.keeps(&b.key))
            .collect();
        kept.sort_by(|a, b| {
            a.doc_count
                .cmp(&b.doc_count)
                .then_with(|| cmp_key(&order_key(op, &a.key), &order_key(op, &b.key)))
        });
        self.count_buckets(kept.len())?;
        let mut list = Vec::with_capacity(kept.len());
        for b in kept {
            let mut o = Map::new();
            let (key, key_as_string) = terms_key(op, &b.key);
            o.insert("key".into(), key);
            if let Some(s) = key_as_string {
                o.insert("key_as_string".into(), json!(s));
            }
            o.insert("doc_count".into(), json!(b.doc_count));
            let scope = scope.with(Constraint::Term {
                field: op.field.clone(),
                key: b.key.clone(),
                missing: op.holds_missing(&b.key),
            });
            o.extend(self.render_level(&node.subs, &b.sub_aggregation, &scope, false)?);
            list.push(Value::Object(o));
        }
        obj.insert("buckets".into(), Value::Array(list));
        Ok(())
    }

    /// `multi_terms`: the leaves of the nested `terms` as combined keys, ordered and cut as
    /// Elasticsearch orders and cuts them (every combination is collected, so counts are exact
    /// and the error bounds are 0).
    fn render_multi_terms(
        &mut self,
        node: &PlanNode,
        req: &TermsReq,
        ops: &[TermsOp],
        buckets: &[BucketEntry],
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let mut leaves: Vec<(Vec<Key>, &BucketEntry)> = Vec::new();
        flatten_multi_terms(buckets, &mut Vec::new(), &mut leaves);
        let mut keyed: Vec<(SortKey, Vec<Key>, &BucketEntry)> = leaves
            .into_iter()
            .filter(|(_, b)| b.doc_count >= req.min_doc_count.max(1))
            .map(|(keys, b)| {
                let k = SortKey::new(&req.order, b.doc_count, Key::F64(0.0), &b.sub_aggregation);
                (k, keys, b)
            })
            .collect();
        keyed.sort_by(|a, b| {
            compare_with(&req.order, &a.0, &b.0, || {
                a.1.iter()
                    .zip(&b.1)
                    .map(|(x, y)| cmp_key(x, y))
                    .find(|c| *c != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            })
        });
        let mut other = 0;
        if keyed.len() > req.size {
            other = keyed[req.size..].iter().map(|b| b.2.doc_count).sum::<u64>();
            keyed.truncate(req.size);
        }
        self.count_buckets(keyed.len())?;
        let mut list = Vec::with_capacity(keyed.len());
        for (_, keys, b) in keyed {
            let mut o = Map::new();
            let mut key = Vec::with_capacity(keys.len());
            let mut strings = Vec::with_capacity(keys.len());
            let mut scope = scope.with(Constraint::Term {
                field: ops[0].field.clone(),
                key: keys[0].clone(),
                missing: ops[0].holds_missing(&keys[0]),
            });
            for (i, (op, k)) in ops.iter().zip(&keys).enumerate() {
                let (v, s) = terms_key(op, k);
                strings.push(match (s, &v) {
                    (Some(s), _) => s,
                    (None, Value::String(s)) => s.clone(),
                    (None, Value::Number(n)) if n.is_f64() => {
                        java_double(n.as_f64().unwrap_or(0.0))
                    }
                    (None, other) => other.to_string(),
                });
                key.push(v);
                if i > 0 {
                    scope = scope.with(Constraint::Term {
                        field: op.field.clone(),
                        key: k.clone(),
                        missing: op.holds_missing(k),
                    });
                }
            }
            o.insert("key".into(), Value::Array(key));
            o.insert("key_as_string".into(), json!(strings.join("|")));
            o.insert("doc_count".into(), json!(b.doc_count));
            if req.show_term_doc_count_error {
                o.insert("doc_count_error_upper_bound".into(), json!(0));
            }
            o.extend(self.render_level(&node.subs, &b.sub_aggregation, &scope, false)?);
            list.push(Value::Object(o));
        }
        obj.insert("doc_count_error_upper_bound".into(), json!(0));
        obj.insert("sum_other_doc_count".into(), json!(other));
        obj.insert("buckets".into(), Value::Array(list));
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn histogram_bucket(
        &mut self,
        node: &PlanNode,
        order: &[BucketOrder],
        b: &BucketEntry,
        key: Value,
        key_as_string: Option<String>,
        scope: &Scope,
    ) -> EsResult<RenderedBucket> {
        let subs = self.render_level(&node.subs, &b.sub_aggregation, scope, false)?;
        let sort_key = Key::F64(key.as_f64().unwrap_or(0.0));
        Ok(RenderedBucket {
            key,
            key_as_string,
            doc_count: b.doc_count,
            subs,
            sort: SortKey::new(order, b.doc_count, sort_key, &b.sub_aggregation),
        })
    }

    fn finish_histogram(
        &mut self,
        order: &[BucketOrder],
        mut buckets: Vec<RenderedBucket>,
        keyed: bool,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        self.count_buckets(buckets.len())?;
        let default_order = order.len() == 1 && order[0].key == OrderKey::Key && order[0].asc;
        if !default_order {
            let mut order = order.to_vec();
            if !order.iter().any(|o| o.key == OrderKey::Key) {
                order.push(BucketOrder {
                    key: OrderKey::Key,
                    asc: true,
                });
            }
            buckets.sort_by(|a, b| compare(&order, &a.sort, &b.sort));
        }
        if keyed {
            let mut m = Map::new();
            for b in buckets {
                let name = b.key_as_string.clone().unwrap_or_else(|| match &b.key {
                    Value::Number(n) if n.is_f64() => java_double(n.as_f64().unwrap_or(0.0)),
                    other => other.to_string(),
                });
                m.insert(name, Value::Object(b.into_json()));
            }
            obj.insert("buckets".into(), Value::Object(m));
        } else {
            obj.insert(
                "buckets".into(),
                Value::Array(
                    buckets
                        .into_iter()
                        .map(|b| Value::Object(b.into_json()))
                        .collect(),
                ),
            );
        }
        Ok(())
    }

    fn render_filters(
        &mut self,
        node: &PlanNode,
        op: &FiltersOp,
        buckets: &BucketEntries<tantivy::aggregation::agg_result::RangeBucketEntry>,
        scope: &Scope,
        obj: &mut Map<String, Value>,
    ) -> EsResult<()> {
        let entries: Vec<_> = buckets.iter().collect();
        let n = op.names.len() + op.other.is_some() as usize;
        let empty = no_results();
        let mut rendered = Vec::with_capacity(n);
        for i in 0..n {
            let entry = entries.iter().find(|e| e.from == Some((i + 1) as f64));
            let doc_count = entry.map(|e| e.doc_count).unwrap_or(0);
            let scope = scope.with(Constraint::Filter {
                source: op.source,
                bucket: i,
            });
            let subs = self.render_level(
                &node.subs,
                entry.map(|e| &e.sub_aggregation).unwrap_or(&empty),
                &scope,
                false,
            )?;
            let name = if i < op.names.len() {
                op.names[i].clone()
            } else {
                op.other.clone().unwrap_or_default()
            };
            rendered.push((name, doc_count, subs));
        }
        if op.style == FiltersStyle::Single {
            let (_, doc_count, subs) = rendered.pop().expect("one bucket");
            obj.insert("doc_count".into(), json!(doc_count));
            obj.extend(subs);
            return Ok(());
        }
        self.count_buckets(n)?;
        if op.style == FiltersStyle::Keyed {
            let mut m = Map::new();
            for (i, (name, doc_count, subs)) in rendered.into_iter().enumerate() {
                let mut b = Map::new();
                if let Some((from, to)) = op.ip_bounds.as_ref().and_then(|v| v.get(i)) {
                    if let Some(f) = from {
                        b.insert("from".into(), json!(f));
                    }
                    if let Some(t) = to {
                        b.insert("to".into(), json!(t));
                    }
                }
                b.insert("doc_count".into(), json!(doc_count));
                b.extend(subs);
                m.insert(name, Value::Object(b));
            }
            obj.insert("buckets".into(), Value::Object(m));
        } else {
            let named = op.style == FiltersStyle::NamedList || op.ip_bounds.is_some();
            let list = rendered
                .into_iter()
                .enumerate()
                .map(|(i, (name, doc_count, subs))| {
                    let mut b = Map::new();
                    if named {
                        b.insert("key".into(), json!(name));
                    }
                    if let Some((from, to)) = op.ip_bounds.as_ref().and_then(|v| v.get(i)) {
                        if let Some(f) = from {
                            b.insert("from".into(), json!(f));
                        }
                        if let Some(t) = to {
                            b.insert("to".into(), json!(t));
                        }
                    }
                    b.insert("doc_count".into(), json!(doc_count));
                    b.extend(subs);
                    Value::Object(b)
                })
                .collect();
            obj.insert("buckets".into(), Value::Array(list));
        }
        Ok(())
    }
}

struct RenderedBucket {
    key: Value,
    key_as_string: Option<String>,
    doc_count: u64,
    subs: Map<String, Value>,
    sort: SortKey,
}

impl RenderedBucket {
    fn into_json(self) -> Map<String, Value> {
        let mut o = Map::new();
        if let Some(s) = self.key_as_string {
            o.insert("key_as_string".into(), json!(s));
        }
        o.insert("key".into(), self.key);
        o.insert("doc_count".into(), json!(self.doc_count));
        o.extend(self.subs);
        o
    }
}

/// Replaces each sketch marker in `out` by its metric's body.
fn fill(
    out: &mut Map<String, Value>,
    pending: &[Pending],
    sketches: &mut [Option<Sketch>],
    nodes: &HashMap<usize, &PlanNode>,
    mut kept: Option<&mut crate::pipeline::Kept>,
) -> EsResult<()> {
    if let Some(mark) = out.get(SKETCH_MARK).and_then(Value::as_u64) {
        out.remove(SKETCH_MARK);
        let i = mark as usize;
        let (Some(p), Some(node)) = (
            pending.get(i),
            pending.get(i).and_then(|p| nodes.get(&p.node)),
        ) else {
            return Err(EsError::internal("a sketch without its aggregation"));
        };
        let sketch = sketches
            .get_mut(i)
            .and_then(Option::take)
            .ok_or_else(|| EsError::internal("a sketch rendered twice"))?;
        if let Some(kept) = kept {
            match (&sketch, &node.op, &node.req.kind) {
                (Sketch::Distinct(set), _, _) => {
                    out.insert(
                        crate::pipeline::KEPT_MARK.into(),
                        json!(kept.distinct.len()),
                    );
                    kept.distinct.push(set.clone());
                }
                (Sketch::Digest(state), Op::Percentiles(op), AggKind::Percentiles(req))
                    if !req.ranks =>
                {
                    out.insert(
                        crate::pipeline::KEPT_DIGEST_MARK.into(),
                        json!(kept.digests.len()),
                    );
                    kept.digests.push(crate::pipeline::KeptDigest {
                        state: state.clone(),
                        percents: req.percents.clone(),
                        keyed: req.keyed,
                        method: req.method,
                        format: op.format.clone(),
                    });
                }
                _ => {}
            }
        }
        return render_sketch(node, p, sketch, out);
    }
    for v in out.values_mut() {
        fill_value(v, pending, sketches, nodes, kept.as_deref_mut())?;
    }
    Ok(())
}

fn fill_value(
    v: &mut Value,
    pending: &[Pending],
    sketches: &mut [Option<Sketch>],
    nodes: &HashMap<usize, &PlanNode>,
    mut kept: Option<&mut crate::pipeline::Kept>,
) -> EsResult<()> {
    match v {
        Value::Object(o) => fill(o, pending, sketches, nodes, kept),
        Value::Array(a) => {
            for x in a {
                fill_value(x, pending, sketches, nodes, kept.as_deref_mut())?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn render_sketch(
    node: &PlanNode,
    p: &Pending,
    sketch: Sketch,
    obj: &mut Map<String, Value>,
) -> EsResult<()> {
    use super::percentiles;
    match (&node.op, &node.req.kind, sketch) {
        (Op::Percentiles(op), AggKind::Percentiles(req), Sketch::Digest(state)) => {
            let values = percentiles::values(req, state)?;
            render_percentiles(req.keyed, &values, &op.format, obj);
        }
        (Op::DigestMetric(op), AggKind::DigestMetric(req), Sketch::Digest(state)) => {
            percentiles::render_digest_metric(req, op, percentiles::checked(state)?, obj)?;
        }
        (
            Op::StringStats(_),
            AggKind::StringStats {
                missing,
                show_distribution,
                ..
            },
            Sketch::Strings { counts, missing: n },
        ) => {
            percentiles::render_string_stats(
                counts,
                missing.as_deref().map(|m| (m, n)),
                *show_distribution,
                obj,
            )?;
        }
        (
            Op::GeoMetric(_),
            AggKind::GeoMetric {
                centroid,
                wrap_longitude,
                ..
            },
            Sketch::Geo(stats),
        ) => percentiles::render_geo(stats, *centroid, *wrap_longitude, obj)?,
        (Op::Metric(_), _, Sketch::Distinct(set)) => {
            // Past the exact limit, tantivy's estimate stays.
            if let Some(set) = set {
                obj.insert("value".into(), json!(set.len()));
            }
        }
        _ => {
            return Err(EsError::internal(format!(
                "a sketch of the wrong kind for [{}] on [{}]",
                node.req.name, p.field
            )))
        }
    }
    Ok(())
}

pub(crate) fn too_many_buckets(max: usize) -> EsError {
    EsError::bad_request(
        "too_many_buckets_exception",
        format!(
            "Trying to create too many buckets. Must be less than or equal to: [{max}] but this number of buckets was exceeded. This limit can be set by changing the [search.max_buckets] cluster level setting."
        ),
    )
    .with("max_buckets", max)
}

fn entries_vec(b: &BucketEntries<BucketEntry>) -> Vec<&BucketEntry> {
    b.iter().collect()
}

fn typed_name(node: &PlanNode) -> &'static str {
    match &node.op {
        Op::Terms(op) => match op.kind {
            TermsKind::String => "sterms",
            TermsKind::Long | TermsKind::Bool => "lterms",
            TermsKind::Double => "dterms",
        },
        Op::SignificantTerms { terms, .. } if terms.kind != TermsKind::String => "siglterms",
        Op::SignificantTerms { .. } | Op::SignificantText => "sigsterms",
        Op::RareTerms(op) => match op.kind {
            TermsKind::String => "srare_terms",
            _ => "lrare_terms",
        },
        Op::StringStats(_) => "string_stats",
        Op::GeoMetric(_) => match &node.req.kind {
            AggKind::GeoMetric { centroid: true, .. } => "geo_centroid",
            _ => "geo_bounds",
        },
        Op::DigestMetric(_) => match &node.req.kind {
            AggKind::DigestMetric(d) => d.kind.name(),
            _ => "boxplot",
        },
        Op::Percentiles(_) => match &node.req.kind {
            AggKind::Percentiles(p) => match (p.ranks, p.method) {
                (false, PercentilesMethod::TDigest { .. }) => "tdigest_percentiles",
                (false, PercentilesMethod::Hdr { .. }) => "hdr_percentiles",
                (true, PercentilesMethod::TDigest { .. }) => "tdigest_percentile_ranks",
                (true, PercentilesMethod::Hdr { .. }) => "hdr_percentile_ranks",
            },
            _ => "tdigest_percentiles",
        },
        _ => node.req.kind.type_name(),
    }
}

pub(crate) fn key_f64(k: &Key) -> f64 {
    match k {
        Key::F64(x) => *x,
        Key::I64(x) => *x as f64,
        Key::U64(x) => *x as f64,
        Key::Str(s) => s.parse().unwrap_or(f64::NAN),
    }
}

/// A stable identity for a bucket key across shards.
pub(crate) fn key_id(k: &Key) -> String {
    match k {
        Key::Str(s) => format!("s{s}"),
        other => format!("n{}", key_f64(other)),
    }
}

fn terms_key(op: &TermsOp, k: &Key) -> (Value, Option<String>) {
    match op.kind {
        TermsKind::String => (
            match k {
                Key::Str(s) => json!(s),
                other => json!(key_f64(other).to_string()),
            },
            None,
        ),
        TermsKind::Bool => {
            let x = key_f64(k);
            (
                json!(x as i64),
                Some(if x != 0.0 { "true" } else { "false" }.to_string()),
            )
        }
        TermsKind::Long => {
            let v = match k {
                Key::I64(x) => json!(*x),
                Key::U64(x) => json!(*x),
                Key::F64(x) if x.fract() == 0.0 => json!(*x as i64),
                Key::F64(x) => json!(*x),
                Key::Str(s) => json!(s),
            };
            (v, op.format.format(key_f64(k)))
        }
        TermsKind::Double => {
            let x = key_f64(k);
            (json!(x), op.format.format(x))
        }
    }
}

/// A computed composite key value as a tantivy key, and whether it is an integer.
fn computed_key(v: crate::composite::KeyVal, formatted: bool) -> (CompositeKey, bool) {
    use crate::composite::KeyVal;
    match v {
        KeyVal::Missing => (CompositeKey::Null, false),
        KeyVal::Str(s) => (CompositeKey::Str(s), false),
        // A format reads a double; exact otherwise.
        KeyVal::I64(x) if formatted => (CompositeKey::F64(x as f64), true),
        KeyVal::I64(x) => (CompositeKey::I64(x), true),
        KeyVal::F64(x) => (CompositeKey::F64(x), false),
        KeyVal::Bool(b) => (CompositeKey::Bool(b), false),
        KeyVal::Tile(t) => (CompositeKey::Str(crate::geogrid::tile_string(t)), false),
        KeyVal::Ip(ip) => (
            CompositeKey::Str(match ip.to_ipv4_mapped() {
                Some(v4) => v4.to_string(),
                None => ip.to_string(),
            }),
            false,
        ),
    }
}

/// A composite key value: formatted when the source has a `format`, an integer for integer
/// and date fields (tantivy's histogram sources key by `f64`).
fn composite_value(v: &CompositeKey, format: Option<&ValueFormat>, integral: bool) -> Value {
    let num = match v {
        CompositeKey::Null => return Value::Null,
        CompositeKey::Str(s) => return json!(s),
        CompositeKey::Bool(b) => return json!(b),
        CompositeKey::I64(x) if format.is_none() => return json!(x),
        CompositeKey::U64(x) if format.is_none() => return json!(x),
        CompositeKey::I64(x) => *x as f64,
        CompositeKey::U64(x) => *x as f64,
        CompositeKey::F64(x) => *x,
    };
    if let Some(s) = format.and_then(|f| f.format(num)) {
        return json!(s);
    }
    if integral {
        json!(num as i64)
    } else {
        json!(num)
    }
}

// ---------------------------------------------------------------------------------------------
// Ordering

/// What a bucket order looks at: the count, the key, and the value of each sub-aggregation
/// path of the order (in order of appearance).
#[derive(Clone)]
struct SortKey {
    doc_count: u64,
    key: Key,
    metrics: Vec<Option<f64>>,
}

impl SortKey {
    fn new(order: &[BucketOrder], doc_count: u64, key: Key, subs: &AggregationResults) -> SortKey {
        let metrics = order
            .iter()
            .filter_map(|o| match &o.key {
                OrderKey::Path { agg, metric } => Some(metric_value(subs, agg, metric.as_deref())),
                _ => None,
            })
            .collect();
        SortKey {
            doc_count,
            key,
            metrics,
        }
    }
}

/// The key a bucket is ordered by: an `ip` by its 16-byte encoding (IPv4 mapped to IPv6,
/// hex so that text order is byte order), as ES orders its ip terms; other keys as they are.
fn order_key(op: &TermsOp, k: &Key) -> Key {
    match k {
        Key::Str(s) if op.field.storage() == Some(Storage::Ip) => {
            match s.parse::<std::net::IpAddr>() {
                Ok(ip) => {
                    let bytes = match ip {
                        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
                        std::net::IpAddr::V6(v6) => v6.octets(),
                    };
                    Key::Str(bytes.iter().map(|b| format!("{b:02x}")).collect())
                }
                Err(_) => k.clone(),
            }
        }
        other => other.clone(),
    }
}

fn cmp_key(a: &Key, b: &Key) -> Ordering {
    match (a, b) {
        (Key::Str(x), Key::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Key::Str(_), _) => Ordering::Greater,
        (_, Key::Str(_)) => Ordering::Less,
        (x, y) => key_f64(x).total_cmp(&key_f64(y)),
    }
}

/// The leaves of a `multi_terms`' nested `terms` with their keys, level by level.
fn flatten_multi_terms<'b>(
    buckets: &'b [BucketEntry],
    prefix: &mut Vec<Key>,
    out: &mut Vec<(Vec<Key>, &'b BucketEntry)>,
) {
    for b in buckets {
        prefix.push(b.key.clone());
        match b.sub_aggregation.0.get(MULTI_TERMS_LEVEL) {
            Some(AggregationResult::BucketResult(BucketResult::Terms { buckets, .. })) => {
                flatten_multi_terms(buckets, prefix, out)
            }
            _ => out.push((prefix.clone(), b)),
        }
        prefix.pop();
    }
}

/// Elasticsearch's compound bucket order; `order` ends with a key tie-breaker.
fn compare(order: &[BucketOrder], a: &SortKey, b: &SortKey) -> Ordering {
    compare_with(order, a, b, || cmp_key(&a.key, &b.key))
}

/// [`compare`] with the key order given by `key_cmp`.
fn compare_with(
    order: &[BucketOrder],
    a: &SortKey,
    b: &SortKey,
    key_cmp: impl Fn() -> Ordering,
) -> Ordering {
    let mut path = 0;
    for o in order {
        let dir = |c: Ordering| if o.asc { c } else { c.reverse() };
        let c = match &o.key {
            OrderKey::Count => dir(a.doc_count.cmp(&b.doc_count)),
            OrderKey::Key => dir(key_cmp()),
            OrderKey::Path { .. } => {
                let (va, vb) = (a.metrics[path], b.metrics[path]);
                path += 1;
                // NaN (an empty avg, min...) sorts last in either direction.
                match (va.filter(|v| !v.is_nan()), vb.filter(|v| !v.is_nan())) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Greater,
                    (Some(_), None) => Ordering::Less,
                    (Some(x), Some(y)) => dir(x.total_cmp(&y)),
                }
            }
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

/// A `weighted_avg`'s value from its two sums: none without weight (or without documents).
fn weighted_avg(results: &AggregationResults, name: &str) -> Option<f64> {
    let sum = |name: &str| match results.0.get(name) {
        Some(AggregationResult::MetricResult(MetricResult::Sum(v))) => v.value.unwrap_or(0.0),
        _ => 0.0,
    };
    let weight = sum(&weight_sum_name(name));
    (weight != 0.0).then(|| sum(name) / weight)
}

/// The value of a metric sub-aggregation, as an order path addresses it.
fn metric_value(subs: &AggregationResults, agg: &str, metric: Option<&str>) -> Option<f64> {
    if subs.0.contains_key(&weight_sum_name(agg)) {
        return weighted_avg(subs, agg);
    }
    let m = match subs.0.get(agg)? {
        AggregationResult::MetricResult(m) => m,
        // A single-bucket aggregation (`filter`, `missing`): its document count.
        AggregationResult::BucketResult(BucketResult::Range { buckets }) => {
            return Some(
                buckets
                    .iter()
                    .find(|e| e.from == Some(1.0))
                    .map(|e| e.doc_count as f64)
                    .unwrap_or(0.0),
            )
        }
        AggregationResult::BucketResult(_) => return None,
    };
    match m {
        MetricResult::Average(v)
        | MetricResult::Max(v)
        | MetricResult::Min(v)
        | MetricResult::Cardinality(v) => v.value,
        MetricResult::Sum(v) | MetricResult::Count(v) => Some(v.value.unwrap_or(0.0)),
        MetricResult::Stats(s) => match metric? {
            "count" => Some(s.count as f64),
            "min" => s.min,
            "max" => s.max,
            "avg" => s.avg,
            "sum" => Some(s.sum),
            _ => None,
        },
        MetricResult::ExtendedStats(s) => {
            let x = ExtStats::of(s.count, s.sum, s.sum_of_squares);
            match metric? {
                "count" => Some(s.count as f64),
                "min" => s.min,
                "max" => s.max,
                "avg" => s.avg,
                "sum" => Some(s.sum),
                "sum_of_squares" => s.sum_of_squares,
                "variance" => x.map(|x| x.variance),
                "std_deviation" => x.map(|x| x.variance.sqrt()),
                _ => None,
            }
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics

fn num_or_null(v: Option<f64>) -> Value {
    match v {
        Some(x) if x.is_finite() => json!(x),
        _ => Value::Null,
    }
}

/// A double as Elasticsearch writes it: non-finite values as strings.
pub(crate) fn double(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else if v.is_nan() {
        json!("NaN")
    } else if v > 0.0 {
        json!("Infinity")
    } else {
        json!("-Infinity")
    }
}

pub(crate) fn with_string(
    obj: &mut Map<String, Value>,
    name: &str,
    value: Option<f64>,
    format: &ValueFormat,
) {
    obj.insert(name.to_string(), num_or_null(value));
    if let Some(s) = value
        .filter(|v| v.is_finite())
        .and_then(|v| format.format(v))
    {
        obj.insert(format!("{name}_as_string"), json!(s));
    }
}

struct ExtStats {
    variance: f64,
    variance_sampling: f64,
}

impl ExtStats {
    /// Elasticsearch's formulas (`InternalExtendedStats`), from count, sum and sum of squares.
    fn of(count: u64, sum: f64, sum_of_squares: Option<f64>) -> Option<ExtStats> {
        if count == 0 {
            return None;
        }
        let n = count as f64;
        let sq = sum_of_squares?;
        let population = ((sq - sum * sum / n) / n).max(0.0);
        // One value: 0/0, which Elasticsearch reports as "NaN".
        let sampling = (sq - sum * sum / n) / (n - 1.0);
        let sampling = if sampling < 0.0 { 0.0 } else { sampling };
        Some(ExtStats {
            variance: population,
            variance_sampling: sampling,
        })
    }
}

fn render_metric(
    kind: MetricKind,
    sigma: f64,
    m: &MetricResult,
    format: &ValueFormat,
    obj: &mut Map<String, Value>,
) {
    match (kind, m) {
        (
            MetricKind::ValueCount | MetricKind::Cardinality,
            MetricResult::Count(v) | MetricResult::Cardinality(v),
        ) => {
            obj.insert("value".into(), json!(v.value.unwrap_or(0.0) as u64));
        }
        (MetricKind::Sum, MetricResult::Sum(v)) => {
            with_string(obj, "value", Some(v.value.unwrap_or(0.0)), format);
        }
        (_, MetricResult::Average(v) | MetricResult::Min(v) | MetricResult::Max(v)) => {
            with_string(obj, "value", v.value, format);
        }
        (_, MetricResult::Stats(s)) => {
            render_stats(s.count, s.min, s.max, s.avg, s.sum, format, obj);
        }
        (_, MetricResult::ExtendedStats(s)) => {
            render_stats(s.count, s.min, s.max, s.avg, s.sum, format, obj);
            let names = [
                "sum_of_squares",
                "variance",
                "variance_population",
                "variance_sampling",
                "std_deviation",
                "std_deviation_population",
                "std_deviation_sampling",
            ];
            let bounds = [
                "upper",
                "lower",
                "upper_population",
                "lower_population",
                "upper_sampling",
                "lower_sampling",
            ];
            match ExtStats::of(s.count, s.sum, s.sum_of_squares) {
                None => {
                    for n in names {
                        obj.insert(n.into(), Value::Null);
                    }
                    obj.insert(
                        "std_deviation_bounds".into(),
                        Value::Object(
                            bounds
                                .iter()
                                .map(|b| (b.to_string(), Value::Null))
                                .collect(),
                        ),
                    );
                }
                Some(x) => {
                    let avg = s.sum / s.count as f64;
                    let sd = x.variance.sqrt();
                    let sd_s = x.variance_sampling.sqrt();
                    let values = [
                        s.sum_of_squares.unwrap_or(0.0),
                        x.variance,
                        x.variance,
                        x.variance_sampling,
                        sd,
                        sd,
                        sd_s,
                    ];
                    for (n, v) in names.iter().zip(values) {
                        obj.insert(n.to_string(), double(v));
                    }
                    let bound_values = [
                        avg + sigma * sd,
                        avg - sigma * sd,
                        avg + sigma * sd,
                        avg - sigma * sd,
                        avg + sigma * sd_s,
                        avg - sigma * sd_s,
                    ];
                    let b: Map<String, Value> = bounds
                        .iter()
                        .zip(bound_values)
                        .map(|(k, v)| (k.to_string(), double(v)))
                        .collect();
                    obj.insert("std_deviation_bounds".into(), Value::Object(b));
                    if !format.is_raw() {
                        for (n, v) in names.iter().zip(values) {
                            if let Some(s) = format.format(v) {
                                obj.insert(format!("{n}_as_string"), json!(s));
                            }
                        }
                        let b: Map<String, Value> = bounds
                            .iter()
                            .zip(bound_values)
                            .filter_map(|(k, v)| {
                                format.format(v).map(|s| (k.to_string(), json!(s)))
                            })
                            .collect();
                        obj.insert("std_deviation_bounds_as_string".into(), Value::Object(b));
                    }
                }
            }
        }
        (_, other) => {
            let v = match other {
                MetricResult::Count(v) | MetricResult::Cardinality(v) | MetricResult::Sum(v) => {
                    v.value
                }
                _ => None,
            };
            with_string(obj, "value", v, format);
        }
    }
}

fn render_stats(
    count: u64,
    min: Option<f64>,
    max: Option<f64>,
    avg: Option<f64>,
    sum: f64,
    format: &ValueFormat,
    obj: &mut Map<String, Value>,
) {
    obj.insert("count".into(), json!(count));
    let has = count > 0;
    obj.insert("min".into(), num_or_null(min.filter(|_| has)));
    obj.insert("max".into(), num_or_null(max.filter(|_| has)));
    obj.insert("avg".into(), num_or_null(avg.filter(|_| has)));
    obj.insert("sum".into(), json!(sum));
    if has && !format.is_raw() {
        for (n, v) in [("min", min), ("max", max), ("avg", avg), ("sum", Some(sum))] {
            if let Some(s) = v.and_then(|v| format.format(v)) {
                obj.insert(format!("{n}_as_string"), json!(s));
            }
        }
    }
}

/// `percentiles` and `percentile_ranks` bodies: `values` keyed by `String.valueOf(key)` (with
/// `_as_string` under a format), or a list of `{key, value}` with `keyed: false`.
pub(crate) fn render_percentiles(
    keyed: bool,
    values: &[(f64, Option<f64>)],
    format: &ValueFormat,
    obj: &mut Map<String, Value>,
) {
    if keyed {
        let mut m = Map::new();
        for &(k, v) in values {
            let name = java_double(k);
            m.insert(name.clone(), num_or_null(v));
            if let Some(s) = v.and_then(|v| format.format(v)) {
                m.insert(format!("{name}_as_string"), json!(s));
            }
        }
        obj.insert("values".into(), Value::Object(m));
    } else {
        let list = values
            .iter()
            .map(|&(k, v)| {
                let mut e = Map::new();
                e.insert("key".into(), json!(k));
                e.insert("value".into(), num_or_null(v));
                if let Some(s) = v.and_then(|v| format.format(v)) {
                    e.insert("value_as_string".into(), json!(s));
                }
                Value::Object(e)
            })
            .collect();
        obj.insert("values".into(), Value::Array(list));
    }
}

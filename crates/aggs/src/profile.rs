//! The aggregation profiler (`"profile": true`), as Elasticsearch's `AggregationProfiler`:
//! a profiled search collects each top-level aggregation on its own, its tantivy collector
//! wrapped in [`Timed`], so that each one's phases are measured with `Instant`:
//!
//! - `initialize`: building the aggregation's collection (its tantivy request, computed
//!   columns and collector);
//! - `build_leaf_collector`: a segment's collector (`for_segment`), once per segment;
//! - `collect`: the documents handed to it (`collect_count` = documents), or counted for it
//!   from an index structure over a whole segment (`exec::collect_shard`'s shortcuts);
//! - `post_collection`: harvesting a segment's results;
//! - `build_aggregation`: the shard's result from the segments' (merge and `shard_size` cut);
//! - `reduce`: 0 on a shard, as in Elasticsearch.
//!
//! Sub-aggregations collect inside their parent's tantivy collector: their time is in the
//! parent's, and they are listed with a zero breakdown.

use super::plan::{Op, PlanNode, TermsKind};
use lode_engine::shard::ShardSearcher;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tantivy::aggregation::intermediate_agg_result::{
    IntermediateAggregationResult, IntermediateAggregationResults, IntermediateBucketResult,
};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::ColumnType;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

/// Elasticsearch's `AggregationTimingType`s.
pub const KEYS: [&str; 6] = [
    "initialize",
    "build_leaf_collector",
    "collect",
    "post_collection",
    "build_aggregation",
    "reduce",
];
pub const INITIALIZE: usize = 0;
const BUILD_LEAF: usize = 1;
const COLLECT: usize = 2;
const POST_COLLECTION: usize = 3;
pub const BUILD_AGGREGATION: usize = 4;

/// The timings of one aggregator on one shard.
#[derive(Default)]
pub struct AggTimer {
    nanos: [AtomicU64; 6],
    counts: [AtomicU64; 6],
}

impl AggTimer {
    /// Adds the time since `started` to `slot`, counting `n` calls.
    pub fn add(&self, slot: usize, started: Instant, n: u64) {
        self.nanos[slot].fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.counts[slot].fetch_add(n, Ordering::Relaxed);
    }

    /// Documents an aggregator accounted for without having them handed to it (counted from
    /// an index structure over a whole segment): `collect`, as if collected, so that
    /// `collect_count` stays the documents the aggregator saw, whichever way it read them.
    pub fn counted(&self, started: Instant, docs: u64) {
        self.add(COLLECT, started, docs);
    }

    fn breakdown(&self) -> (u64, Value) {
        let mut out = Map::new();
        let mut total = 0;
        for (i, key) in KEYS.iter().enumerate() {
            let n = self.nanos[i].load(Ordering::Relaxed);
            total += n;
            out.insert((*key).to_string(), n.into());
            out.insert(
                format!("{key}_count"),
                self.counts[i].load(Ordering::Relaxed).into(),
            );
        }
        (total, Value::Object(out))
    }
}

/// A collector whose calls are timed into an [`AggTimer`].
pub struct Timed<'a, C> {
    pub inner: &'a C,
    pub timer: Arc<AggTimer>,
}

impl<C: Collector> Collector for Timed<'_, C> {
    type Fruit = C::Fruit;
    type Child = TimedSegment<C::Child>;

    fn for_segment(
        &self,
        segment_local_id: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<Self::Child> {
        let started = Instant::now();
        let inner = self.inner.for_segment(segment_local_id, segment);
        self.timer.add(BUILD_LEAF, started, 1);
        Ok(TimedSegment {
            inner: inner?,
            timer: self.timer.clone(),
        })
    }

    fn requires_scoring(&self) -> bool {
        self.inner.requires_scoring()
    }

    fn merge_fruits(
        &self,
        segment_fruits: Vec<<Self::Child as SegmentCollector>::Fruit>,
    ) -> tantivy::Result<Self::Fruit> {
        let started = Instant::now();
        let out = self.inner.merge_fruits(segment_fruits);
        self.timer.add(BUILD_AGGREGATION, started, 1);
        out
    }
}

pub struct TimedSegment<S> {
    inner: S,
    timer: Arc<AggTimer>,
}

impl<S: SegmentCollector> SegmentCollector for TimedSegment<S> {
    type Fruit = S::Fruit;

    fn collect(&mut self, doc: DocId, score: Score) {
        let started = Instant::now();
        self.inner.collect(doc, score);
        self.timer.add(COLLECT, started, 1);
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        let started = Instant::now();
        self.inner.collect_block(docs);
        self.timer.add(COLLECT, started, docs.len() as u64);
    }

    fn harvest(self) -> Self::Fruit {
        let started = Instant::now();
        let timer = self.timer;
        let out = self.inner.harvest();
        timer.add(POST_COLLECTION, started, 1);
        out
    }
}

/// Elasticsearch's class name of the aggregator that runs `n`.
fn type_name(n: &PlanNode) -> String {
    let numeric_terms = |k: &TermsKind| !matches!(k, TermsKind::String);
    match &n.op {
        Op::Terms(t) if numeric_terms(&t.kind) => return "NumericTermsAggregator".into(),
        Op::Terms(_) => return "GlobalOrdinalsStringTermsAggregator".into(),
        Op::Histogram { range: true, .. } => return "RangeHistogramAggregator".into(),
        Op::Histogram { .. } => return "NumericHistogramAggregator".into(),
        Op::DateHistogram(d) if d.is_range() => return "DateRangeHistogramAggregator".into(),
        Op::DateHistogram(_) => return "DateHistogramAggregator".into(),
        Op::GeoGrid { .. } if n.req.kind.type_name() == "geotile_grid" => {
            return "GeoTileGridAggregator".into()
        }
        Op::GeoGrid { .. } => return "GeoHashGridAggregator".into(),
        Op::Percentiles(_) => {
            if let crate::request::AggKind::Percentiles(p) = &n.req.kind {
                let method = match p.method {
                    crate::request::PercentilesMethod::Hdr { .. } => "HDR",
                    crate::request::PercentilesMethod::TDigest { .. } => "TDigest",
                };
                let what = if p.ranks {
                    "PercentileRanks"
                } else {
                    "Percentiles"
                };
                return format!("{method}{what}Aggregator");
            }
        }
        _ => {}
    }
    let name = match n.req.kind.type_name() {
        "date_range" => "range",
        "ip_range" => "binary_range",
        other => other,
    };
    let mut out = String::new();
    for part in name.split('_') {
        let mut chars = part.chars();
        if let Some(c) = chars.next() {
            out.extend(c.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out + "Aggregator"
}

/// The buckets a shard result holds (Elasticsearch's `total_buckets`: the buckets the
/// aggregator built, i.e. those documents were collected into).
fn total_buckets(r: Option<&IntermediateAggregationResult>) -> usize {
    match r {
        Some(IntermediateAggregationResult::Bucket(b)) => match b {
            IntermediateBucketResult::Histogram { buckets, .. } => {
                buckets.iter().filter(|b| b.doc_count > 0).count()
            }
            IntermediateBucketResult::Terms { buckets } => buckets.entries().len(),
            IntermediateBucketResult::Range(_) => 0,
            IntermediateBucketResult::Filter { .. } => 1,
            IntermediateBucketResult::Composite { .. }
            | IntermediateBucketResult::MultiTerms { .. } => 0,
        },
        _ => 0,
    }
}

/// Elasticsearch's `debug` section of the aggregators that have one.
fn debug(
    n: &PlanNode,
    res: &IntermediateAggregationResults,
    shard: &ShardSearcher,
) -> Option<Value> {
    let name = n.req.name.as_str();
    match &n.op {
        Op::Histogram { .. } | Op::DateHistogram(_) => {
            Some(json!({"total_buckets": total_buckets(res.get(name))}))
        }
        Op::Terms(t) => Some(json!({
            "total_buckets": total_buckets(res.get(name)),
            "result_strategy": match t.kind {
                TermsKind::String => "terms",
                TermsKind::Double => "double_terms",
                _ => "long_terms",
            },
            "has_filter": false,
        })),
        Op::Metric(m) if n.req.kind.type_name() == "cardinality" => {
            // Per segment, as ES's CardinalityAggregator picks a collector per leaf: none for
            // a segment without values, ordinals for strings, hashed numbers otherwise.
            let (mut empty, mut numeric, mut ordinals) = (0, 0, 0);
            for segment in shard.searcher.segment_readers() {
                let handles = segment
                    .fast_fields()
                    .dynamic_column_handles(&m.field.name)
                    .unwrap_or_default();
                if handles.is_empty() {
                    empty += 1;
                } else if handles
                    .iter()
                    .any(|h| matches!(h.column_type(), ColumnType::Str | ColumnType::Bytes))
                {
                    ordinals += 1;
                } else {
                    numeric += 1;
                }
            }
            Some(json!({
                "empty_collectors_used": empty,
                "numeric_collectors_used": numeric,
                "ordinals_collectors_used": ordinals,
                "ordinals_collectors_overhead_too_high": 0,
                "string_hashing_collectors_used": 0,
            }))
        }
        _ => None,
    }
}

/// A sub-aggregation's entry: collected within its parent (zero breakdown).
fn child_entry(n: &PlanNode) -> Value {
    let timer = AggTimer::default();
    let (_, breakdown) = timer.breakdown();
    let mut out = json!({
        "type": type_name(n),
        "description": n.req.name,
        "time_in_nanos": 0,
        "breakdown": breakdown,
    });
    if !n.subs.is_empty() {
        out["children"] = n.subs.iter().map(child_entry).collect();
    }
    out
}

/// Elasticsearch's profile entry of a top-level aggregation on one shard.
pub fn entry(
    n: &PlanNode,
    res: &IntermediateAggregationResults,
    timer: &AggTimer,
    shard: &ShardSearcher,
) -> Value {
    let (total, breakdown) = timer.breakdown();
    let mut out = json!({
        "type": type_name(n),
        "description": n.req.name,
        "time_in_nanos": total,
        "breakdown": breakdown,
    });
    if let Some(d) = debug(n, res, shard) {
        out["debug"] = d;
    }
    if !n.subs.is_empty() {
        out["children"] = n.subs.iter().map(child_entry).collect();
    }
    out
}

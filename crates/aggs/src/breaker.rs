//! What aggregations charge the `request` circuit breaker (`lode_engine::breaker`).
//!
//! Before a shard is collected, each aggregation's memory is estimated from the request's
//! shape and the shard's data: the buckets a `terms` creates are at most its field's distinct
//! values (the terms dictionaries), a `histogram`/`date_histogram` fills every interval
//! between the field's smallest and largest values (and its `extended_bounds`), and a
//! sub-aggregation exists once per parent bucket. Estimated buckets × [`BUCKET_BYTES`], and
//! sketches (`cardinality`, `percentiles`) per instance, are reserved under ES's label
//! `<agg [name]>`: a request that would create millions of buckets trips before it allocates
//! them. During collection tantivy's own memory accounting is bounded by the room left under
//! the breaker's limit, so what the estimate missed trips as buckets are created.

use crate::plan::{Op, PlanNode};
use crate::request::{AggKind, DateInterval, MetricKind};
use lode_engine::breaker::{service, Kind, Reservation};
use lode_engine::shard::ShardSearcher;
use lode_engine::EsResult;

/// Estimated bytes of one bucket while aggregations run (key, count, sub-results' map).
pub const BUCKET_BYTES: f64 = 128.0;
/// An HLL sketch with `LG_K = 11` (tantivy's cardinality).
pub const CARDINALITY_BYTES: f64 = 2048.0 + 64.0;
/// A percentiles sketch (a merging TDigest at compression 100 holds about 2 x 230
/// centroids of two doubles; an HDR histogram at 3 digits a few KiB). The exact phase keeps
/// up to 20 x compression values, which the re-query reads one bucket at a time.
pub const PERCENTILES_BYTES: f64 = 4096.0;

/// The shard's smallest and largest value of a numeric or date column, and how many values.
fn numeric_range(shard: &ShardSearcher, field: &str) -> Option<(f64, f64, f64)> {
    numeric_column_range(shard, field).map(|(lo, hi, n, _)| (lo, hi, n))
}

/// [`numeric_range`], and whether the column holds integers (integers, dates).
fn numeric_column_range(shard: &ShardSearcher, field: &str) -> Option<(f64, f64, f64, bool)> {
    let mut integer = false;
    let mut out: Option<(f64, f64, f64)> = None;
    for seg in shard.searcher.segment_readers() {
        let fast = seg.fast_fields();
        let r = if let Ok(Some(c)) = fast.column_opt::<i64>(field) {
            integer = true;
            (c.num_docs() > 0 && c.values.num_vals() > 0).then(|| {
                (
                    c.min_value() as f64,
                    c.max_value() as f64,
                    c.values.num_vals() as f64,
                )
            })
        } else if let Ok(Some(c)) = fast.column_opt::<f64>(field) {
            (c.values.num_vals() > 0)
                .then(|| (c.min_value(), c.max_value(), c.values.num_vals() as f64))
        } else {
            None
        };
        if let Some((lo, hi, n)) = r {
            out = Some(match out {
                None => (lo, hi, n),
                Some((a, b, m)) => (a.min(lo), b.max(hi), m + n),
            });
        }
    }
    out.map(|(lo, hi, n)| (lo, hi, n, integer))
}

/// Distinct values of a keyword field on the shard (summed over segments: an upper bound).
fn string_cardinality(shard: &ShardSearcher, field: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut any = false;
    for seg in shard.searcher.segment_readers() {
        if let Ok(Some(c)) = seg.fast_fields().str(field) {
            total += c.num_terms() as f64;
            any = true;
        }
    }
    any.then_some(total)
}

fn calendar_millis(unit: lode_dates::CalendarUnit) -> f64 {
    use lode_dates::CalendarUnit::*;
    // The shortest length of each unit, so the estimate is an upper bound.
    match unit {
        Minute => 60_000.0,
        Hour => 3_600_000.0,
        Day => 82_800_000.0,
        Week => 7.0 * 82_800_000.0,
        Month => 28.0 * 86_400_000.0,
        Quarter => 89.0 * 86_400_000.0,
        Year => 365.0 * 86_400_000.0,
    }
}

/// Intervals of width `interval` between `lo` and `hi`.
fn intervals(lo: f64, hi: f64, interval: f64) -> f64 {
    if interval.is_nan() || interval <= 0.0 || hi.is_nan() || lo.is_nan() || hi < lo {
        return 1.0;
    }
    ((hi - lo) / interval).floor() + 2.0
}

/// The buckets one node creates on the shard per parent bucket (`None`: not estimated).
fn node_buckets(n: &PlanNode, shard: &ShardSearcher) -> Option<f64> {
    match (&n.req.kind, &n.op) {
        (AggKind::Terms(_), Op::Terms(op)) => string_cardinality(shard, &op.field.name)
            .or_else(|| {
                // Distinct numbers: at most the values, and for integers (and dates) at most
                // the integers between the smallest and the largest.
                numeric_column_range(shard, &op.field.name).map(|(lo, hi, n, integer)| {
                    if integer {
                        n.min(hi - lo + 1.0)
                    } else {
                        n
                    }
                })
            })
            .map(|c| c + 1.0),
        (AggKind::Histogram(h), _) => {
            let (mut lo, mut hi, n) = numeric_range(shard, &h.field)?;
            if h.min_doc_count == 0 {
                if let Some((a, b)) = h.extended_bounds {
                    lo = a.map_or(lo, |a| lo.min(a));
                    hi = b.map_or(hi, |b| hi.max(b));
                }
                if let Some((a, b)) = h.hard_bounds {
                    lo = a.map_or(lo, |a| lo.max(a));
                    hi = b.map_or(hi, |b| hi.min(b));
                }
                Some(intervals(lo, hi, h.interval))
            } else {
                Some(intervals(lo, hi, h.interval).min(n))
            }
        }
        (AggKind::DateHistogram(d), _) => {
            let (lo, hi, n) = numeric_range(shard, &d.field)?;
            let width = match d.interval {
                DateInterval::Fixed(ms) => ms as f64,
                DateInterval::Calendar(u) => calendar_millis(u),
            };
            let b = intervals(lo, hi, width);
            Some(if d.min_doc_count == 0 { b } else { b.min(n) })
        }
        (AggKind::Composite(c), _) => Some(c.size as f64),
        // At most `buckets` times the largest inner interval (100 years) before merging.
        (AggKind::AutoDateHistogram(a), _) => Some(a.buckets as f64 * 100.0),
        _ => None,
    }
}

/// Bytes of one instance of a metric node.
fn metric_bytes(n: &PlanNode) -> f64 {
    match &n.req.kind {
        AggKind::Metric(m) if m.kind == MetricKind::Cardinality => CARDINALITY_BYTES,
        AggKind::Percentiles(_) | AggKind::DigestMetric(_) => PERCENTILES_BYTES,
        AggKind::StringStats { .. } => PERCENTILES_BYTES,
        _ => 0.0,
    }
}

/// Reserves the estimated memory of `nodes` on `shard` (each node under its own label),
/// growing `held`.
pub(crate) fn reserve_estimate(
    nodes: &[PlanNode],
    shard: &ShardSearcher,
    held: &mut Reservation<'static>,
) -> EsResult<()> {
    fn walk(
        nodes: &[PlanNode],
        shard: &ShardSearcher,
        parents: f64,
        held: &mut Reservation<'static>,
    ) -> EsResult<()> {
        for n in nodes {
            let buckets = node_buckets(n, shard);
            let bytes = parents * (buckets.unwrap_or(0.0) * BUCKET_BYTES + metric_bytes(n));
            if bytes >= 1.0 {
                let bytes = if bytes > i64::MAX as f64 / 4.0 {
                    i64::MAX / 4
                } else {
                    bytes as i64
                };
                held.grow(bytes, &format!("<agg [{}]>", n.req.name))?;
            }
            walk(
                &n.subs,
                shard,
                parents * buckets.unwrap_or(1.0).max(1.0),
                held,
            )?;
        }
        Ok(())
    }
    walk(nodes, shard, 1.0, held)
}

/// The memory tantivy may account during a collection: the room left under the `request`
/// breaker's limit (`None`: no limit).
pub(crate) fn collection_room() -> Option<u64> {
    let b = &service().request;
    let limit = b.limit();
    if limit < 0 {
        return None;
    }
    let overhead = b.overhead().max(f64::MIN_POSITIVE);
    let room = (limit as f64 / overhead) as i64 - b.used();
    Some(room.max(1) as u64)
}

/// Trips the `request` breaker for `bytes` that tantivy found over the room it was given.
pub(crate) fn trip(bytes: u64, label: &str) -> Option<lode_engine::EsError> {
    service()
        .add_estimate(Kind::Request, bytes.max(1) as i64, label)
        .err()
        .or_else(|| {
            // Usage fell meanwhile: the bytes fit after all; give them back.
            service()
                .add_estimate(Kind::Request, -(bytes.max(1) as i64), label)
                .ok();
            None
        })
}

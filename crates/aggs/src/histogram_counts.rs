//! `histogram` and `date_histogram` bucket counts from the points index instead of the values.
//!
//! Where the query matches a whole segment, or is a range on the histogram's own field (the
//! documents with a value inside its bounds: a slice of the sorted values), a top-level histogram
//! without sub-aggregations needs only how many documents each bucket holds. A bucket is a
//! contiguous run of the segment's values sorted ([`SortedPoints`]): each run is found by a
//! galloping search from the previous one, so a bucket costs a few comparisons instead of a read
//! per document (Lucene's `DateHistogramAggregator` counts a match-all histogram from the points
//! the same way, as one range count per bucket; OpenSearch's filter rewrite also under a range on
//! the histogram's field). Each point is one document on a single-valued field; a deleted
//! document's value, which stays in the points until a merge, is read from the column and taken off
//! its bucket. A multi-valued segment is collected as before.
//!
//! The buckets are the intermediate entries tantivy's histogram collector makes (its key
//! formula for fixed intervals, the calendar index for calendar ones), so merging with
//! collected segments and rendering stay the collector's.

use super::plan::{Op, PlanNode};
use super::request::AggKind;
use super::rounding::{DateRounding, IndexedRounding};
use super::sources::NumericColumn;
use lode_query::points::{sorted_points, SortedPoints};
use std::collections::BTreeMap;
use tantivy::aggregation::intermediate_agg_result::{
    IntermediateAggregationResult, IntermediateAggregationResults, IntermediateBucketResult,
    IntermediateHistogramBucketEntry,
};
use tantivy::columnar::MonotonicallyMappableToU64;
use tantivy::schema::{Field, FieldType, Schema};
use tantivy::SegmentReader;

/// How a value finds its bucket.
enum Keying<'n> {
    /// tantivy's histogram: `pos = floor((v - offset) / interval)`, `key = pos * interval +
    /// offset`.
    Fixed { interval: f64, offset: f64 },
    /// Calendar (or time-zone) buckets by their index, the key tantivy sees from the
    /// `date_histogram` source.
    Calendar(&'n IndexedRounding),
}

/// A histogram node whose buckets can be counted from points.
pub(crate) struct CountedHistogram<'n> {
    pub name: &'n str,
    field: Field,
    field_name: &'n str,
    float: bool,
    keying: Keying<'n>,
}

/// The node's bucketing, if its shape allows counting it: a `histogram` or `date_histogram`
/// without sub-aggregations, `missing` or `hard_bounds`, over a mapped numeric or date
/// column (not a runtime field, a script or a range field).
pub(crate) fn counted_histogram<'n>(
    node: &'n PlanNode,
    schema: &Schema,
) -> Option<CountedHistogram<'n>> {
    if !node.subs.is_empty() {
        return None;
    }
    let (field_name, keying) = match (&node.req.kind, &node.op) {
        (
            AggKind::Histogram(h),
            Op::Histogram {
                field,
                range: false,
                missing: None,
                ..
            },
        ) if h.hard_bounds.is_none() && h.interval > 0.0 => (
            field.as_str(),
            Keying::Fixed {
                interval: h.interval,
                offset: h.offset,
            },
        ),
        (_, Op::DateHistogram(op))
            if !op.is_range() && op.missing.is_none() && op.hard_bounds().is_none() =>
        {
            match (&op.rounding, op.source) {
                (DateRounding::Native { interval, offset }, None) if *interval > 0 => (
                    op.field.name.as_str(),
                    Keying::Fixed {
                        interval: *interval as f64,
                        offset: *offset as f64,
                    },
                ),
                // The source reads the mapped field's column unless it is a runtime field.
                (DateRounding::Indexed(ix), Some(_)) if op.field.def.is_some() => {
                    (op.field.name.as_str(), Keying::Calendar(ix))
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    let field = schema.get_field(field_name).ok()?;
    let entry = schema.get_field_entry(field);
    let float = match entry.field_type() {
        FieldType::I64(_) => false,
        FieldType::F64(_) => true,
        _ => return None,
    };
    if !entry.is_fast() || (matches!(keying, Keying::Calendar(_)) && float) {
        return None;
    }
    Some(CountedHistogram {
        name: node.req.name.as_str(),
        field,
        field_name,
        float,
        keying,
    })
}

/// The most buckets a segment is counted into here (ES's default `search.max_buckets`).
const MAX_RUNS: usize = 65_536;

/// Per bucket position: its key and live document count.
pub(crate) type BucketCounts = BTreeMap<i64, (f64, u64)>;

impl CountedHistogram<'_> {
    fn decode(&self, raw: u64) -> f64 {
        if self.float {
            f64::from_u64(raw)
        } else {
            i64::from_u64(raw) as f64
        }
    }

    /// The bucket of a value: its position, its key, and (for calendar buckets) the first
    /// value past it.
    fn bucket(&self, v: f64) -> (i64, f64, Option<f64>) {
        match &self.keying {
            Keying::Fixed { interval, offset } => {
                let pos = ((v - offset) / interval).floor() as i64;
                (pos, pos as f64 * interval + offset, None)
            }
            Keying::Calendar(ix) => {
                let (index, _, end) = ix.bucket_of(v as i64);
                (index, index as f64, Some(end as f64))
            }
        }
    }

    /// The field the histogram buckets.
    pub(crate) fn field(&self) -> Field {
        self.field
    }

    /// Adds the live documents of `segment` per bucket to `counts`, the query matching every
    /// document of it, or with `within` every document whose value lies in those inclusive
    /// bounds (the column's `u64` mapping): the live documents counted, or `None` (nothing
    /// added) when the segment must be collected instead.
    pub(crate) fn add_segment(
        &self,
        segment: &SegmentReader,
        counts: &mut BucketCounts,
        within: Option<(u64, u64)>,
    ) -> tantivy::Result<Option<u64>> {
        let points = sorted_points(segment, self.field)?;
        if points.multi_valued() {
            return Ok(None);
        }
        let (lo, hi) = within.unwrap_or((u64::MIN, u64::MAX));
        let span = points.span(lo, hi);
        let mut runs: Vec<(i64, f64, u64)> = Vec::new();
        let mut at = span.start;
        while at < span.end {
            if runs.len() >= MAX_RUNS {
                // More buckets than a request may build: the collector says so (or counts
                // them, when `search.max_buckets` was raised).
                return Ok(None);
            }
            let (pos, key, end) = self.bucket(self.decode(points.value(at)));
            let past = match end {
                Some(end) => gallop(&points, at, |raw| raw <= hi && self.decode(raw) < end),
                None => gallop(&points, at, |raw| {
                    raw <= hi && self.bucket(self.decode(raw)).0 <= pos
                }),
            };
            runs.push((pos, key, (past - at) as u64));
            at = past;
        }
        for (pos, key, n) in runs {
            counts.entry(pos).or_insert((key, 0)).1 += n;
        }
        let column = if self.float {
            NumericColumn::F64
        } else {
            NumericColumn::I64
        };
        let mut live = span.len() as u64;
        let (first, last) = (self.decode(lo), self.decode(hi));
        for v in super::range_counts::deleted_values(segment, self.field_name, column)? {
            if v < first || v > last {
                continue;
            }
            let pos = self.bucket(v).0;
            if let Some(entry) = counts.get_mut(&pos) {
                live -= 1;
                entry.1 -= 1;
                if entry.1 == 0 {
                    counts.remove(&pos);
                }
            }
        }
        Ok(Some(live))
    }

    /// The intermediate result of `counts`, as the collector gives it (non-empty buckets in key
    /// order, no sub-aggregations).
    pub(crate) fn result(counts: BucketCounts) -> IntermediateAggregationResult {
        IntermediateAggregationResult::Bucket(IntermediateBucketResult::Histogram {
            // The columns counted here are numbers (dates are `i64` milliseconds in Lode).
            is_date_agg: false,
            buckets: counts
                .into_values()
                .filter(|&(_, n)| n > 0)
                .map(|(key, doc_count)| IntermediateHistogramBucketEntry {
                    key,
                    doc_count,
                    sub_aggregation: IntermediateAggregationResults::default(),
                })
                .collect(),
        })
    }
}

/// The first position at or after `from` whose value fails `within` (true for a prefix of the
/// values from `from` on, and for the value at `from`): doubling steps, then a binary search,
/// so a run of `n` values costs about `2 log n` comparisons.
fn gallop(points: &SortedPoints, from: usize, within: impl Fn(u64) -> bool) -> usize {
    let len = points.len();
    let mut lo = from + 1;
    let mut step = 1;
    let mut hi = lo;
    while hi < len && within(points.value(hi)) {
        lo = hi + 1;
        hi = (hi + step).min(len);
        step *= 2;
    }
    // Every position below `lo` is within; `hi` is past the run (or the end).
    let mut hi = hi.min(len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if within(points.value(mid)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gallop_finds_the_end_of_a_run() {
        let mut sb = tantivy::schema::Schema::builder();
        let f = sb.add_i64_field("v", tantivy::schema::FAST);
        let index = tantivy::Index::create_in_ram(sb.build());
        let mut w: tantivy::IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        let values: Vec<i64> = (0..1000).map(|i| (i * 7919) % 313).collect();
        for &v in &values {
            w.add_document(tantivy::doc!(f => v)).unwrap();
        }
        w.commit().unwrap();
        let reader = index.reader().unwrap();
        let searcher = reader.searcher();
        let points = sorted_points(searcher.segment_reader(0), f).unwrap();
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for from in [0, 1, 5, 400, 998, 999] {
            for cut in [-1, 0, 17, 150, 312, 400] {
                if sorted[from] >= cut {
                    continue;
                }
                let want = sorted.partition_point(|&v| v < cut);
                let got = gallop(&points, from, |raw| i64::from_u64(raw) < cut);
                assert_eq!(got, want, "from {from} cut {cut}");
            }
        }
    }
}

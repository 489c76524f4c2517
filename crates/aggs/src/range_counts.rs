//! `range` and `date_range` buckets counted from the points index instead of the values.
//!
//! Where the query matches a whole segment, a top-level range aggregation without
//! sub-aggregations needs only how many documents fall in each range. Elasticsearch answers
//! that shape filter by filter (`RangeAggregator.FromFilters`): each range becomes a range
//! query counted by Lucene's `Weight#count` from the points. Here each range costs two binary
//! searches in the segment's [`SortedPoints`] (each point is one document on a single-valued
//! field); a deleted document's value, which stays in the points until a merge, is read from
//! the column and taken off the ranges holding it. A multi-valued segment is collected as
//! before: a document counts once per range however many of its values fall in it.
//!
//! The counts are added to the result tantivy's collector gives over no documents, which has
//! every bucket with the key and bounds rendering expects, so merging and rendering stay the
//! collector's.

use super::plan::{Op, PlanNode};
use super::sources::NumericColumn;
use lode_engine::mapping::Storage;
use lode_query::points::sorted_points;
use tantivy::aggregation::intermediate_agg_result::{
    IntermediateAggregationResult, IntermediateBucketResult,
};
use tantivy::columnar::MonotonicallyMappableToU64;
use tantivy::schema::{Field, Schema};
use tantivy::SegmentReader;

/// A range node whose buckets can be counted from points.
pub(crate) struct CountedRanges<'n> {
    pub name: &'n str,
    field: Field,
    field_name: &'n str,
    column: NumericColumn,
    /// Each bucket's `[from, to)`, in the order of the source's unit ranges.
    ranges: Vec<(f64, f64)>,
    missing: Option<f64>,
}

/// The node's ranges, if its shape allows counting them: a `range` (or `date_range`) without
/// sub-aggregations on a mapped numeric or date field with a column (not a runtime field or
/// script, whose values have no points).
pub(crate) fn counted_ranges<'n>(node: &'n PlanNode, schema: &Schema) -> Option<CountedRanges<'n>> {
    let Op::Range(op) = &node.op else {
        return None;
    };
    if !node.subs.is_empty() {
        return None;
    }
    let column = match op.field.def.as_ref()?.storage() {
        Storage::I64 => NumericColumn::I64,
        Storage::F64 => NumericColumn::F64,
        _ => return None,
    };
    let field = schema.get_field(&op.field.name).ok()?;
    if !schema.get_field_entry(field).is_fast() {
        return None;
    }
    Some(CountedRanges {
        name: node.req.name.as_str(),
        field,
        field_name: op.field.name.as_str(),
        column,
        ranges: op
            .ranges
            .iter()
            .map(|d| {
                (
                    d.from.unwrap_or(f64::NEG_INFINITY),
                    d.to.unwrap_or(f64::INFINITY),
                )
            })
            .collect(),
        missing: op.missing,
    })
}

impl CountedRanges<'_> {
    /// The number of ranges (buckets).
    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    /// The value a column code stands for, as the range source reads it.
    fn decode(&self, raw: u64) -> f64 {
        match self.column {
            NumericColumn::I64 => i64::from_u64(raw) as f64,
            NumericColumn::F64 => f64::from_u64(raw),
        }
    }

    fn containing(&self, v: f64) -> impl Iterator<Item = usize> + '_ {
        self.ranges
            .iter()
            .enumerate()
            .filter(move |(_, &(from, to))| from <= v && v < to)
            .map(|(i, _)| i)
    }

    /// Adds the live documents of `segment` per range to `counts`, the query matching every
    /// document of it; `false` (nothing added) when the segment must be collected instead.
    pub(crate) fn add_segment(
        &self,
        segment: &SegmentReader,
        counts: &mut [u64],
    ) -> tantivy::Result<bool> {
        let points = sorted_points(segment, self.field)?;
        if points.multi_valued() {
            return Ok(false);
        }
        let below = |x: f64| -> usize {
            if x == f64::NEG_INFINITY {
                0
            } else if x == f64::INFINITY {
                points.len()
            } else {
                points.partition_point(|&raw| self.decode(raw) < x)
            }
        };
        let mut mine: Vec<u64> = self
            .ranges
            .iter()
            .map(|&(from, to)| below(to).saturating_sub(below(from)) as u64)
            .collect();
        let deleted = deleted_values(segment, self.field_name, self.column)?;
        for &v in &deleted {
            for i in self.containing(v) {
                mine[i] -= 1;
            }
        }
        let deleted_with_value = deleted.len() as u64;
        if let Some(m) = self.missing {
            // Live documents without a value read `missing`.
            let with_value = points.len() as u64 - deleted_with_value;
            let without = u64::from(segment.num_docs()).saturating_sub(with_value);
            for i in self.containing(m) {
                mine[i] += without;
            }
        }
        for (c, m) in counts.iter_mut().zip(mine) {
            *c += m;
        }
        Ok(true)
    }

    /// `counts` (per range) added to `empty`, the node's result collected over no documents.
    pub(crate) fn with_counts(
        &self,
        empty: IntermediateAggregationResult,
        counts: &[u64],
    ) -> tantivy::Result<IntermediateAggregationResult> {
        with_unit_counts(empty, counts)
    }
}

/// `counts` added to the buckets of `empty`, a result of range buckets over a computed
/// column's unit ranges (`range` buckets, `filters` buckets) collected over no documents.
pub(crate) fn with_unit_counts(
    mut empty: IntermediateAggregationResult,
    counts: &[u64],
) -> tantivy::Result<IntermediateAggregationResult> {
    {
        let IntermediateAggregationResult::Bucket(IntermediateBucketResult::Range(buckets)) =
            &mut empty
        else {
            return Err(tantivy::TantivyError::InternalError(
                "a range aggregation collected no range buckets".into(),
            ));
        };
        // The source emits range `i` as the unit range `[i + 1, i + 2)` (`plan::unit_ranges`);
        // the gap buckets tantivy adds around them stay empty.
        for bucket in buckets.buckets_mut() {
            let (Some(from), Some(to)) = (bucket.from, bucket.to) else {
                continue;
            };
            if from >= 1.0 && from.fract() == 0.0 && to == from + 1.0 {
                if let Some(&n) = counts.get(from as usize - 1) {
                    bucket.doc_count += n;
                }
            }
        }
    }
    Ok(empty)
}

/// The values of `segment`'s deleted documents that have one (single-valued columns: the first
/// value), as the range source reads them: the points still hold them until a merge.
pub(crate) fn deleted_values(
    segment: &SegmentReader,
    field_name: &str,
    column: NumericColumn,
) -> tantivy::Result<Vec<f64>> {
    let Some(alive) = segment.alive_bitset() else {
        return Ok(Vec::new());
    };
    let fast = segment.fast_fields();
    Ok(match column {
        NumericColumn::I64 => fast.column_opt::<i64>(field_name)?.map(|c| {
            alive
                .iter_deleted()
                .filter_map(|d| c.first(d).map(|v| v as f64))
                .collect()
        }),
        NumericColumn::F64 => fast
            .column_opt::<f64>(field_name)?
            .map(|c| alive.iter_deleted().filter_map(|d| c.first(d)).collect()),
    }
    .unwrap_or_default())
}

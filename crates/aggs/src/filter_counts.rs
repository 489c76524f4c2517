//! `filter` and `filters` buckets counted filter by filter instead of collected.
//!
//! Where the query matches a whole segment, a top-level `filters` aggregation without
//! sub-aggregations (and without an `other` bucket) needs only how many live documents each
//! filter matches: Elasticsearch answers that shape filter by filter
//! (`FilterByFilterAggregator`), each filter counted by Lucene's `Weight#count`, which
//! answers a term from its document frequency and a range from the points. Here each
//! filter's weight counts the segment the same way (`Weight::count`), instead of every
//! document being visited and its filters read back.
//!
//! The counts are added to the node's result collected over no documents, as
//! [`crate::range_counts`] does: `filters` buckets are the unit ranges of a computed column.

use super::plan::{Op, PlanNode, SourceSpec};
use tantivy::aggregation::intermediate_agg_result::IntermediateAggregationResult;
use tantivy::query::{EnableScoring, Weight};
use tantivy::{Searcher, SegmentReader};

/// A filters node whose buckets can be counted filter by filter.
pub(crate) struct CountedFilters<'n> {
    pub name: &'n str,
    weights: Vec<Box<dyn Weight>>,
}

/// The node's filters, if its shape allows counting them: a `filter`/`filters` without
/// sub-aggregations or `other` bucket.
pub(crate) fn counted_filters<'n>(
    node: &'n PlanNode,
    sources: &[SourceSpec],
    searcher: &Searcher,
) -> tantivy::Result<Option<CountedFilters<'n>>> {
    let Op::Filters(op) = &node.op else {
        return Ok(None);
    };
    if !node.subs.is_empty() || op.other.is_some() {
        return Ok(None);
    }
    let Some(SourceSpec::Filters {
        queries,
        other: false,
    }) = sources.get(op.source)
    else {
        return Ok(None);
    };
    let scoring = EnableScoring::disabled_from_searcher(searcher);
    let weights = queries
        .iter()
        .map(|q| q.weight(scoring))
        .collect::<tantivy::Result<Vec<_>>>()?;
    Ok(Some(CountedFilters {
        name: node.req.name.as_str(),
        weights,
    }))
}

impl CountedFilters<'_> {
    /// The number of filters (buckets).
    pub(crate) fn len(&self) -> usize {
        self.weights.len()
    }

    /// Adds the live documents of `segment` each filter matches to `counts`, the query
    /// matching every document of it.
    pub(crate) fn add_segment(
        &self,
        segment: &SegmentReader,
        counts: &mut [u64],
    ) -> tantivy::Result<()> {
        for (weight, count) in self.weights.iter().zip(counts) {
            *count += u64::from(weight.count(segment)?);
        }
        Ok(())
    }

    /// `counts` (per filter) added to `empty`, the node's result collected over no documents.
    pub(crate) fn with_counts(
        &self,
        empty: IntermediateAggregationResult,
        counts: &[u64],
    ) -> tantivy::Result<IntermediateAggregationResult> {
        super::range_counts::with_unit_counts(empty, counts)
    }
}

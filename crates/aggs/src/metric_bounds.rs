//! `min` and `max` answered from a column's header instead of its values.
//!
//! A tantivy column records the smallest and largest of its values when it is written. In a
//! segment the query matches entirely (see `term_counts` for how that is detected) and
//! without deleted documents (a deleted document's value stays in the bounds until a merge
//! drops it), a top-level `min`/`max` of a numeric or date field is that bound: O(1) per
//! segment instead of a pass over every value. This is the shortcut Elasticsearch's
//! `MinAggregator`/`MaxAggregator` take from Lucene's `PointValues.getMinPackedValue` when
//! the query matches everything. A multi-valued column's bound is still the least (greatest)
//! of all values, which is what the aggregations read.
//!
//! The bound becomes the same intermediate result tantivy's collector produces, converted
//! as it converts column values, so merging and rendering stay one code path.

use super::plan::{Op, PlanNode};
use super::request::{AggKind, MetricKind};
use lode_engine::mapping::Storage;
use tantivy::aggregation::intermediate_agg_result::{
    IntermediateAggregationResult, IntermediateMetricResult,
};
use tantivy::aggregation::metric::{IntermediateMax, IntermediateMin};
use tantivy::columnar::{ColumnType, MonotonicallyMappableToU64};
use tantivy::schema::Schema;
use tantivy::SegmentReader;

/// Which bound a node asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    Min,
    Max,
}

/// The bound and the column a `min`/`max` node may read from column headers, if its shape
/// allows it: no `missing` (it would add a value no column holds), on a mapped numeric or
/// date field with a column (not a runtime field or script, whose values no header holds).
pub(crate) fn bounded_field<'n>(node: &'n PlanNode, schema: &Schema) -> Option<(Bound, &'n str)> {
    let (AggKind::Metric(req), Op::Metric(op)) = (&node.req.kind, &node.op) else {
        return None;
    };
    let bound = match req.kind {
        MetricKind::Min => Bound::Min,
        MetricKind::Max => Bound::Max,
        _ => return None,
    };
    let def = op.field.def.as_ref()?;
    if req.missing.is_some()
        || !node.subs.is_empty()
        || !matches!(def.storage(), Storage::I64 | Storage::F64)
    {
        return None;
    }
    let field = schema.get_field(&op.field.name).ok()?;
    schema
        .get_field_entry(field)
        .is_fast()
        .then_some((bound, op.field.name.as_str()))
}

/// The bound of `field`'s column in `segment`, as the collector would compute it from the
/// values (`None`: the segment has no value for it). The caller makes sure every document of
/// the segment is matched and none is deleted.
pub(crate) fn segment_bound(
    segment: &SegmentReader,
    field: &str,
    bound: Bound,
) -> tantivy::Result<Option<f64>> {
    // The collector reads the first column of a numeric or date type under this name.
    let types = [
        ColumnType::F64,
        ColumnType::U64,
        ColumnType::I64,
        ColumnType::DateTime,
    ];
    let Some((column, ty)) = segment
        .fast_fields()
        .u64_lenient_for_type_all(Some(&types), field)?
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    if column.values.num_vals() == 0 {
        return Ok(None);
    }
    let raw = match bound {
        Bound::Min => column.min_value(),
        Bound::Max => column.max_value(),
    };
    Ok(Some(to_f64(raw, ty)))
}

/// A column's `u64` code as the value the metric collectors see (tantivy's
/// `f64_from_fastfield_u64`, which is not public).
pub(crate) fn to_f64(raw: u64, ty: ColumnType) -> f64 {
    match ty {
        ColumnType::I64 | ColumnType::DateTime => i64::from_u64(raw) as f64,
        ColumnType::F64 => f64::from_u64(raw),
        _ => raw as f64,
    }
}

/// Folds one segment's bound into the shard's.
pub(crate) fn fold(acc: Option<f64>, value: Option<f64>, bound: Bound) -> Option<f64> {
    match (acc, value) {
        (Some(a), Some(v)) => Some(match bound {
            Bound::Min => a.min(v),
            Bound::Max => a.max(v),
        }),
        (a, v) => a.or(v),
    }
}

/// The intermediate `min`/`max` result tantivy's collector would have produced for this
/// bound (`None`: no value, as an empty collection).
///
/// tantivy keeps the statistics' fields private, but the types are `Deserialize`: the result
/// is built through serde. Only the bound and a non-zero count are read for `min`/`max`.
pub(crate) fn bound_result(
    bound: Bound,
    value: Option<f64>,
) -> tantivy::Result<IntermediateAggregationResult> {
    let metric = match (bound, value) {
        (Bound::Min, None) => IntermediateMetricResult::Min(IntermediateMin::default()),
        (Bound::Max, None) => IntermediateMetricResult::Max(IntermediateMax::default()),
        (_, Some(v)) => {
            let stats = serde_json::json!({"stats": {
                "count": 1, "sum": v, "delta": 0.0, "min": v, "max": v,
            }});
            let bad = |e: serde_json::Error| {
                tantivy::TantivyError::InternalError(format!("column bound: {e}"))
            };
            match bound {
                Bound::Min => IntermediateMetricResult::Min(
                    serde_json::from_value::<IntermediateMin>(stats).map_err(bad)?,
                ),
                Bound::Max => IntermediateMetricResult::Max(
                    serde_json::from_value::<IntermediateMax>(stats).map_err(bad)?,
                ),
            }
        }
    };
    Ok(IntermediateAggregationResult::Metric(metric))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn final_value(bound: Bound, value: Option<f64>) -> Option<f64> {
        let res = bound_result(bound, value).unwrap();
        let IntermediateAggregationResult::Metric(m) = res else {
            panic!("not a metric");
        };
        match m {
            IntermediateMetricResult::Min(m) => m.finalize(),
            IntermediateMetricResult::Max(m) => m.finalize(),
            _ => panic!("not min/max"),
        }
    }

    #[test]
    fn bound_results_finalize_to_the_bound() {
        assert_eq!(final_value(Bound::Min, Some(-3.5)), Some(-3.5));
        assert_eq!(final_value(Bound::Max, Some(1e300)), Some(1e300));
        assert_eq!(final_value(Bound::Min, None), None);
        assert_eq!(final_value(Bound::Max, None), None);
    }

    #[test]
    fn column_codes_convert_as_the_collector_converts_them() {
        assert_eq!(to_f64((-7i64).to_u64(), ColumnType::I64), -7.0);
        assert_eq!(to_f64((-0.25f64).to_u64(), ColumnType::F64), -0.25);
        assert_eq!(to_f64(42, ColumnType::U64), 42.0);
    }

    #[test]
    fn folding_keeps_the_extreme_and_skips_empty_segments() {
        assert_eq!(fold(None, Some(2.0), Bound::Min), Some(2.0));
        assert_eq!(fold(Some(2.0), None, Bound::Min), Some(2.0));
        assert_eq!(fold(Some(2.0), Some(-1.0), Bound::Min), Some(-1.0));
        assert_eq!(fold(Some(2.0), Some(-1.0), Bound::Max), Some(2.0));
    }
}

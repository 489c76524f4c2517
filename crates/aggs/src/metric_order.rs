//! `terms` ordered by a metric sub-aggregation, counted densely by global ordinal.
//!
//! A shard's `shard_size` cut of a `terms` aggregation ordered by a metric (`"order":
//! {"s": "desc"}` over a `sum`, `avg`, `min`, `max`, `value_count`, or a `stats` path such as
//! `s.avg`) needs every bucket's metric before it can cut. tantivy's collector builds one
//! bucket per term of every segment, each holding its sub-aggregations' results, and merges
//! the segments' buckets by hashing their text: on a name field (a term per few documents)
//! that is most of a request's time. Here one pass over the query's documents adds each one's
//! count and metric values into arrays indexed by the keyword's global ordinal, as
//! Elasticsearch's `GlobalOrdinalsStringTermsAggregator` collects into dense per-ordinal
//! metric arrays; the cut is made on those arrays with Elasticsearch's order (the metric, an
//! empty metric last in either direction, then the key ascending), and only the kept buckets'
//! sub-aggregations are collected, by tantivy's collector over their documents
//! (`exec::collect_kept_buckets`), so every value a response shows comes from the one general
//! path. The cut buckets' documents go to `sum_other_doc_count`.

use super::global_ords::GlobalOrds;
use super::metric_bounds::to_f64;
use super::plan::{Op, PlanNode};
use super::request::{AggKind, MetricKind, OrderKey};
use lode_engine::mapping::{FieldType, Storage};
use std::cmp::Ordering;
use tantivy::columnar::{Column, ColumnType, StrColumn};
use tantivy::query::Scorer;
use tantivy::schema::{Field, Schema};
use tantivy::SegmentReader;

/// The value of a bucket's metric that the order reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OrderValue {
    Sum,
    Avg,
    Min,
    Max,
    /// The number of values (`value_count`, `stats.count`).
    Count,
}

impl OrderValue {
    /// The value as a `stats`/`extended_stats` path names it (`s.avg`).
    fn of_stats(name: &str) -> Option<OrderValue> {
        Some(match name {
            "sum" => OrderValue::Sum,
            "avg" => OrderValue::Avg,
            "min" => OrderValue::Min,
            "max" => OrderValue::Max,
            "count" => OrderValue::Count,
            _ => return None,
        })
    }
}

/// A `terms` node this module can cut: its keyword field, the metric's numeric field and which
/// of its values orders the buckets.
pub(crate) struct MetricOrdered<'n> {
    pub name: &'n str,
    pub field_name: &'n str,
    pub field: Field,
    pub metric_field: &'n str,
    pub value: OrderValue,
    pub asc: bool,
    pub shard_size: usize,
}

/// The node's shape, if it is one this module answers: a plain keyword `terms`
/// (`term_counts`' conditions: no `missing`, `include`/`exclude`, `min_doc_count: 0`,
/// partition or `shard_min_doc_count`) whose sub-aggregations are metrics without
/// sub-aggregations of their own, ordered by one of them (then by key ascending, the
/// tie-breaker every order ends with) on a mapped numeric or date field without `missing`.
pub(crate) fn metric_ordered<'n>(node: &'n PlanNode, schema: &Schema) -> Option<MetricOrdered<'n>> {
    let (Op::Terms(op), AggKind::Terms(req)) = (&node.op, &node.req.kind) else {
        return None;
    };
    let metrics_only = node
        .subs
        .iter()
        .all(|s| matches!(s.req.kind, AggKind::Metric(_)) && s.subs.is_empty());
    if !metrics_only || op.partition.is_some() || req.shard_min_doc_count > 0 {
        return None;
    }
    let [first, rest @ ..] = req.order.as_slice() else {
        return None;
    };
    if !rest.iter().all(|o| o.key == OrderKey::Key && o.asc) {
        return None;
    }
    let OrderKey::Path { agg, metric } = &first.key else {
        return None;
    };
    let sub = node.subs.iter().find(|s| s.req.name == *agg)?;
    let (AggKind::Metric(m), Op::Metric(mop)) = (&sub.req.kind, &sub.op) else {
        return None;
    };
    let value = match (m.kind, metric.as_deref()) {
        (MetricKind::Sum, None) => OrderValue::Sum,
        (MetricKind::Avg, None) => OrderValue::Avg,
        (MetricKind::Min, None) => OrderValue::Min,
        (MetricKind::Max, None) => OrderValue::Max,
        (MetricKind::ValueCount, None) => OrderValue::Count,
        (MetricKind::Stats | MetricKind::ExtendedStats, Some(name)) => OrderValue::of_stats(name)?,
        _ => return None,
    };
    let def = mop.field.def.as_ref()?;
    // The column holds the values the metric reads: a mapped long, double, date... (not a
    // scaled or unsigned number, a boolean, a runtime field or a computed source).
    let numeric = matches!(
        def.ty,
        FieldType::Long
            | FieldType::Integer
            | FieldType::Short
            | FieldType::Byte
            | FieldType::Double
            | FieldType::Float
            | FieldType::HalfFloat
            | FieldType::Date
    );
    if m.missing.is_some()
        || !numeric
        || !matches!(def.storage(), Storage::I64 | Storage::F64)
        || mop.field.name != def.path
        || !def.doc_values
    {
        return None;
    }
    // Counted with its metric by global ordinal, every term: no include/exclude here.
    if op.keyword_filters() != (None, None) {
        return None;
    }
    let field = super::term_counts::counted_terms_field(node, schema)?;
    Some(MetricOrdered {
        name: node.req.name.as_str(),
        field_name: op.field.name.as_str(),
        field,
        metric_field: mop.field.name.as_str(),
        value,
        asc: first.asc,
        shard_size: op.shard_size,
    })
}

/// Per global ordinal of a shard: the documents, and the metric's values folded as the order
/// needs them (Kahan-compensated sums, as tantivy's statistics add them).
pub(crate) struct OrdMetrics {
    value: OrderValue,
    docs: Vec<u32>,
    /// Values per ordinal (avg, min, max, count).
    values: Vec<u32>,
    /// The sum (sum, avg), or the least or greatest value (min, max).
    acc: Vec<f64>,
    /// The sums' compensation.
    delta: Vec<f64>,
}

impl OrdMetrics {
    pub(crate) fn new(value: OrderValue, global_len: usize) -> OrdMetrics {
        let sized = |needed: bool| if needed { global_len } else { 0 };
        OrdMetrics {
            value,
            docs: vec![0; global_len],
            values: vec![0; sized(value != OrderValue::Sum)],
            acc: vec![0.0; sized(value != OrderValue::Count)],
            delta: vec![0.0; sized(matches!(value, OrderValue::Sum | OrderValue::Avg))],
        }
    }

    #[inline]
    fn add_value(&mut self, g: usize, v: f64) {
        match self.value {
            OrderValue::Sum | OrderValue::Avg => {
                let y = v - self.delta[g];
                let t = self.acc[g] + y;
                self.delta[g] = (t - self.acc[g]) - y;
                self.acc[g] = t;
            }
            OrderValue::Min if self.values[g] == 0 || v < self.acc[g] => self.acc[g] = v,
            OrderValue::Max if self.values[g] == 0 || v > self.acc[g] => self.acc[g] = v,
            _ => {}
        }
        if self.value != OrderValue::Sum {
            self.values[g] += 1;
        }
    }

    /// Adds the live documents `scorer` matches in segment `seg` (its position among the
    /// shard's segments): each document's term of the single-valued keyword `terms` and every
    /// value of `metric_field`.
    pub(crate) fn add_segment(
        &mut self,
        global: &GlobalOrds,
        seg: usize,
        segment: &SegmentReader,
        terms: &StrColumn,
        metric_field: &str,
        scorer: &mut dyn Scorer,
    ) -> tantivy::Result<()> {
        let metric = metric_column(segment, metric_field)?;
        let single = metric
            .as_ref()
            .is_none_or(|(c, _)| !c.get_cardinality().is_multivalue());
        let ords = terms.ords();
        let mut term_ords = vec![None; tantivy::COLLECT_BLOCK_BUFFER_LEN];
        let mut values = vec![None; tantivy::COLLECT_BLOCK_BUFFER_LEN];
        super::term_counts::for_each_live_block(segment, scorer, |docs| {
            let term_ords = &mut term_ords[..docs.len()];
            ords.first_vals(docs, term_ords);
            if let (true, Some((column, _))) = (single, &metric) {
                column.first_vals(docs, &mut values[..docs.len()]);
            }
            for (i, (&doc, ord)) in docs.iter().zip(term_ords.iter()).enumerate() {
                let Some(ord) = *ord else { continue };
                let g = global.global(seg, ord as usize) as usize;
                self.docs[g] += 1;
                match &metric {
                    None => {}
                    Some((_, ty)) if single => {
                        if let Some(raw) = values[i] {
                            self.add_value(g, to_f64(raw, *ty));
                        }
                    }
                    Some((column, ty)) => {
                        for raw in column.values_for_doc(doc) {
                            self.add_value(g, to_f64(raw, *ty));
                        }
                    }
                }
            }
        });
        Ok(())
    }

    /// The order's value of global ordinal `g` (`None`: an empty avg, min or max, which sorts
    /// last either way), as rendering reads it from the metric's result.
    fn order_value(&self, g: usize) -> Option<f64> {
        let n = || self.values[g];
        match self.value {
            OrderValue::Sum => Some(self.acc[g]),
            OrderValue::Count => Some(f64::from(n())),
            OrderValue::Avg => (n() > 0).then(|| self.acc[g] / f64::from(n())),
            OrderValue::Min | OrderValue::Max => (n() > 0).then(|| self.acc[g]),
        }
        .filter(|v| !v.is_nan())
    }

    /// The shard's cut: the global ordinals of its `size` first buckets in Elasticsearch's
    /// order (in no particular order) with their documents, and the documents of the others.
    pub(crate) fn cut(&self, size: usize, asc: bool) -> (Vec<(u32, u64)>, u64) {
        let mut buckets: Vec<(Option<f64>, u32)> = (0..self.docs.len())
            .filter(|&g| self.docs[g] > 0)
            .map(|g| (self.order_value(g), g as u32))
            .collect();
        // Global ordinals run in term order: comparing them compares the keys.
        let order = |a: &(Option<f64>, u32), b: &(Option<f64>, u32)| {
            let by_value = match (a.0, b.0) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(x), Some(y)) if asc => x.total_cmp(&y),
                (Some(x), Some(y)) => y.total_cmp(&x),
            };
            by_value.then(a.1.cmp(&b.1))
        };
        if buckets.len() > size {
            buckets.select_nth_unstable_by(size, order);
        }
        let other = buckets
            .get(size..)
            .unwrap_or_default()
            .iter()
            .map(|&(_, g)| u64::from(self.docs[g as usize]))
            .sum();
        buckets.truncate(size);
        let kept = buckets
            .into_iter()
            .map(|(_, g)| (g, u64::from(self.docs[g as usize])))
            .collect();
        (kept, other)
    }
}

/// The numeric column `field` of `segment` as the metric collectors read it (its first numeric
/// or date column under that name) with its type.
fn metric_column(
    segment: &SegmentReader,
    field: &str,
) -> tantivy::Result<Option<(Column<u64>, ColumnType)>> {
    let types = [
        ColumnType::F64,
        ColumnType::U64,
        ColumnType::I64,
        ColumnType::DateTime,
    ];
    Ok(segment
        .fast_fields()
        .u64_lenient_for_type_all(Some(&types), field)?
        .into_iter()
        .next())
}

/// The kept global ordinals' terms, with their documents.
pub(crate) fn kept_terms(
    global: &GlobalOrds,
    columns: &[Option<StrColumn>],
    kept: Vec<(u32, u64)>,
) -> tantivy::Result<Vec<(String, u64)>> {
    let mut out = Vec::with_capacity(kept.len());
    for (g, n) in kept {
        let (seg, ord) = global.holder(g);
        let mut term = String::new();
        if let Some(column) = &columns[seg] {
            column.ord_to_str(ord, &mut term)?;
        }
        out.push((term, n));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(value: OrderValue, per_ord: &[(u32, &[f64])]) -> OrdMetrics {
        let mut m = OrdMetrics::new(value, per_ord.len());
        for (g, (docs, values)) in per_ord.iter().enumerate() {
            m.docs[g] = *docs;
            for &v in *values {
                m.add_value(g, v);
            }
        }
        m
    }

    fn sorted(mut kept: Vec<(u32, u64)>) -> Vec<(u32, u64)> {
        kept.sort();
        kept
    }

    #[test]
    fn cut_orders_by_the_metric_then_the_key() {
        // Sums 5, 7, 7, 1, 0 (no values): desc keeps 1 and 2 (ties by key), then 0.
        let m = metrics(
            OrderValue::Sum,
            &[
                (1, &[5.0]),
                (2, &[3.0, 4.0]),
                (1, &[7.0]),
                (4, &[1.0]),
                (3, &[]),
            ],
        );
        let (kept, other) = m.cut(2, false);
        assert_eq!(sorted(kept), vec![(1, 2), (2, 1)]);
        assert_eq!(other, 1 + 4 + 3);
        let (kept, other) = m.cut(3, false);
        assert_eq!(sorted(kept), vec![(0, 1), (1, 2), (2, 1)]);
        assert_eq!(other, 7);
        // Ascending: the empty sum is 0, first.
        let (kept, _) = m.cut(2, true);
        assert_eq!(sorted(kept), vec![(3, 4), (4, 3)]);
    }

    #[test]
    fn empty_metrics_sort_last_either_way() {
        for value in [OrderValue::Avg, OrderValue::Min, OrderValue::Max] {
            let m = metrics(value, &[(1, &[]), (1, &[2.0]), (1, &[-3.0]), (2, &[])]);
            for asc in [true, false] {
                let (kept, other) = m.cut(2, asc);
                assert_eq!(sorted(kept), vec![(1, 1), (2, 1)], "{value:?} asc {asc}");
                assert_eq!(other, 3);
            }
        }
    }

    #[test]
    fn values_fold_as_the_metric_reads_them() {
        let m = metrics(OrderValue::Avg, &[(2, &[1.0, 2.0, 6.0]), (1, &[])]);
        assert_eq!(m.order_value(0), Some(3.0));
        assert_eq!(m.order_value(1), None);
        let m = metrics(OrderValue::Min, &[(1, &[4.0, -2.0, 9.0])]);
        assert_eq!(m.order_value(0), Some(-2.0));
        let m = metrics(OrderValue::Max, &[(1, &[-4.0, -2.0, -9.0])]);
        assert_eq!(m.order_value(0), Some(-2.0));
        let m = metrics(OrderValue::Count, &[(3, &[1.0, 1.0, 5.0, 0.0]), (1, &[])]);
        assert_eq!(m.order_value(0), Some(4.0));
        assert_eq!(m.order_value(1), Some(0.0));
        // Compensated: a naive sum of these loses the small values.
        let m = metrics(OrderValue::Sum, &[(1, &[1e16, 1.0, 1.0, -1e16])]);
        assert_eq!(m.order_value(0), Some(2.0));
    }
}

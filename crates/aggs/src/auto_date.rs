//! `auto_date_histogram`: Elasticsearch picks the rounding from the data, so before planning,
//! the field's smallest and largest values in the query are read (one pass over the matches),
//! and the rounding is chosen as ES's final reduce chooses it (`InternalAutoDateHistogram`):
//! up ES's ladder (seconds, minutes, hours, days, months, years) until the buckets from the
//! first to the last key fit `buckets` times the rung's largest inner interval, then the
//! smallest inner interval (e.g. 7 days, 3 months) that brings the count to at most `buckets`,
//! consecutive buckets merged from the first. The aggregation then runs as a `date_histogram`
//! on that rounding (`IndexedRounding` with a `multiple`), with sub-aggregations, and renders
//! ES's `interval` (`"7d"`).
//!
//! Below a bucket aggregation every bucket has its own rounding, as ES's
//! `AutoDateHistogramAggregator` rounds per owning bucket: the enclosing bucket's documents
//! are read when it is rendered ([`bounds`]), the rounding chosen from them, and each of its
//! buckets counts and collects its sub-aggregations in a pass of its own.

use super::exec::{runtime_provider_in, AggTarget};
use super::plan::runtime_source_name;
use super::request::{AggKind, AggNode, AutoDateHistogramReq};
use super::rounding::{IndexedRounding, IndexedUnit};
use super::sources::{open_numeric, AnyColumn, NumericColumn, RuntimeProvider};
use lode_dates::{CalendarUnit, Tz};
use lode_engine::mapping::Storage;
use lode_engine::{EsError, EsResult};
use std::sync::Arc;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

/// One rung of ES's rounding ladder (`AutoDateHistogramAggregationBuilder.buildRoundings`).
pub(crate) struct Rung {
    pub name: &'static str,
    unit: Option<CalendarUnit>,
    rough_millis: i64,
    abbreviation: &'static str,
    inner: &'static [i64],
}

pub(crate) const LADDER: [Rung; 6] = [
    Rung {
        name: "second",
        unit: None,
        rough_millis: 1000,
        abbreviation: "s",
        inner: &[1, 5, 10, 30],
    },
    Rung {
        name: "minute",
        unit: Some(CalendarUnit::Minute),
        rough_millis: 60 * 1000,
        abbreviation: "m",
        inner: &[1, 5, 10, 30],
    },
    Rung {
        name: "hour",
        unit: Some(CalendarUnit::Hour),
        rough_millis: 3_600_000,
        abbreviation: "h",
        inner: &[1, 3, 12],
    },
    Rung {
        name: "day",
        unit: Some(CalendarUnit::Day),
        rough_millis: 86_400_000,
        abbreviation: "d",
        inner: &[1, 7],
    },
    Rung {
        name: "month",
        unit: Some(CalendarUnit::Month),
        rough_millis: 30 * 86_400_000,
        abbreviation: "M",
        inner: &[1, 3],
    },
    Rung {
        name: "year",
        unit: Some(CalendarUnit::Year),
        rough_millis: 365 * 86_400_000,
        abbreviation: "y",
        inner: &[1, 5, 10, 20, 50, 100],
    },
];

impl Rung {
    fn max_inner(&self) -> i64 {
        *self.inner.last().expect("inner intervals")
    }

    fn rounding(&self, tz: &Tz, multiple: i64, anchor: i64) -> IndexedRounding {
        IndexedRounding {
            unit: match self.unit {
                Some(u) => IndexedUnit::Calendar(u),
                None => IndexedUnit::LocalFixed(1000),
            },
            tz: tz.clone(),
            offset: 0,
            multiple,
            anchor,
        }
    }
}

/// The rounding chosen for one request, and ES's `interval` string.
#[derive(Debug, Clone)]
pub(crate) struct Choice {
    pub rounding: IndexedRounding,
    pub interval: String,
}

/// The number of rung-`r` buckets from the one holding `min` to the one holding `max`.
fn span(r: &IndexedRounding, min: i64, max: i64) -> i64 {
    r.bucket_of(max).0 - r.bucket_of(min).0 + 1
}

/// ES's choice for data from `min` to `max` (see the module documentation).
pub(crate) fn choose(req: &AutoDateHistogramReq, bounds: Option<(i64, i64)>) -> Choice {
    let tz = &req.hist.time_zone;
    let ladder = &LADDER[req.minimum_interval..];
    let target = req.buckets as i64;
    let Some((min, max)) = bounds else {
        let rung = &ladder[0];
        return Choice {
            rounding: rung.rounding(tz, 1, 0),
            interval: format!("1{}", rung.abbreviation),
        };
    };
    // A rough estimate first (ES's `getAppropriateRounding`), then exact counts upwards.
    let mut idx = 0;
    for (i, rung) in ladder.iter().enumerate().skip(1) {
        if (max - min) / rung.rough_millis < target * rung.max_inner() {
            idx = i - 1;
            break;
        }
    }
    while idx + 1 < ladder.len() {
        let r = ladder[idx].rounding(tz, 1, 0);
        if span(&r, min, max) <= target * ladder[idx].max_inner() {
            break;
        }
        idx += 1;
    }
    let rung = &ladder[idx];
    let base = rung.rounding(tz, 1, 0);
    let count = span(&base, min, max);
    let mut multiple = 1;
    if count > target {
        for &inner in rung.inner {
            if (count + inner - 1) / inner <= target {
                multiple = inner;
                break;
            }
        }
    }
    let anchor = base.bucket_of(min).0;
    Choice {
        rounding: rung.rounding(tz, multiple, anchor),
        interval: format!("{multiple}{}", rung.abbreviation),
    }
}

/// Chooses the rounding of every top-level `auto_date_histogram` from the data of all
/// targets (each resolving the field against its own mapping).
const TY: &str = "auto_date_histogram";

pub(crate) fn prepare(nodes: &[AggNode], targets: &[AggTarget]) -> EsResult<()> {
    for node in nodes {
        let AggKind::AutoDateHistogram(req) = &node.kind else {
            continue;
        };
        let parts: Vec<(&AggTarget, &dyn tantivy::query::Query)> =
            targets.iter().map(|t| (t, t.query)).collect();
        let b = bounds(req, &parts)?;
        *req.chosen.lock().unwrap_or_else(|e| e.into_inner()) = Some(choose(req, b));
    }
    Ok(())
}

/// The first and last value of the field over the documents of `parts` (a query per
/// target, each resolving the field against its own mapping), `missing` included.
pub(crate) fn bounds(
    req: &AutoDateHistogramReq,
    parts: &[(&AggTarget, &dyn tantivy::query::Query)],
) -> EsResult<Option<(i64, i64)>> {
    let mut bounds: Option<(i64, i64)> = None;
    for (t, query) in parts {
        let field = &req.hist.field;
        // Documents without a value have `missing`'s, which extends the range.
        let missing = super::plan::date_histogram_missing(t.ctx, &req.hist, TY)?;
        // A runtime field (or the aggregation's script) is read through its value source.
        let runtime = match t.ctx.runtime.get(field) {
            Some(_) => Some(
                runtime_provider_in(t.ctx, &runtime_source_name(field))
                    .ok_or_else(|| EsError::internal("auto_date_histogram: runtime field"))?,
            ),
            None => match t.ctx.mapping.field(field) {
                Some(def) if def.storage() == Storage::I64 => None,
                // An unmapped field: every document has the `missing` value.
                None if missing.is_some() => None,
                _ => continue, // planning reports the field or its type
            },
        };
        let collector = MinMax {
            field,
            runtime,
            missing,
        };
        for shard in t.shards {
            let found = lode_query::FieldStatistics::new(&shard.searcher)
                .search(&shard.searcher, *query, &collector)
                .map_err(|e| EsError::internal(format!("auto_date_histogram: {e}")))?;
            if let Some((lo, hi)) = found {
                bounds = Some(match bounds {
                    Some((a, b)) => (a.min(lo), b.max(hi)),
                    None => (lo, hi),
                });
            }
        }
    }
    Ok(bounds)
}

/// The smallest and largest value of an `i64` column (or a runtime field's values) over the
/// collected documents.
struct MinMax<'a> {
    field: &'a str,
    runtime: Option<Arc<RuntimeProvider>>,
    /// The value of documents without any.
    missing: Option<i64>,
}

struct SegmentMinMax {
    column: Option<AnyColumn>,
    missing: Option<i64>,
    values: Vec<f64>,
    bounds: Option<(i64, i64)>,
}

impl Collector for MinMax<'_> {
    type Fruit = Option<(i64, i64)>;
    type Child = SegmentMinMax;

    fn for_segment(
        &self,
        _: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentMinMax> {
        Ok(SegmentMinMax {
            column: open_numeric(
                reader,
                self.field,
                NumericColumn::I64,
                self.runtime.as_deref(),
            )?,
            missing: self.missing,
            values: Vec::new(),
            bounds: None,
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Option<(i64, i64)>>) -> tantivy::Result<Option<(i64, i64)>> {
        Ok(fruits
            .into_iter()
            .flatten()
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d))))
    }
}

impl SegmentCollector for SegmentMinMax {
    type Fruit = Option<(i64, i64)>;

    fn collect(&mut self, doc: DocId, _: Score) {
        match &mut self.column {
            Some(c) => c.values_into(doc, &mut self.values),
            None => self.values.clear(),
        }
        if self.values.is_empty() {
            self.values.extend(self.missing.map(|m| m as f64));
        }
        // Dates are whole milliseconds (a runtime date's values too).
        for v in self.values.iter().map(|v| *v as i64) {
            self.bounds = Some(match self.bounds {
                Some((a, b)) => (a.min(v), b.max(v)),
                None => (v, v),
            });
        }
    }

    fn harvest(self) -> Option<(i64, i64)> {
        self.bounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{parse_aggs, AggKind};
    use serde_json::json;

    fn choice(body: serde_json::Value, min: &str, max: &str) -> String {
        let req = parse_aggs(&json!({ "a": { "auto_date_histogram": body } })).unwrap();
        let AggKind::AutoDateHistogram(a) = &req.aggs[0].kind else {
            panic!()
        };
        let ms = |s: &str| {
            lode_dates::DateFormat::default_es()
                .parse_millis(s, &Tz::utc())
                .unwrap()
        };
        choose(a, Some((ms(min), ms(max)))).interval
    }

    #[test]
    fn ladder_and_inner_intervals() {
        let f = |b: usize| json!({"field": "d", "buckets": b});
        // Two days apart: 49 hourly buckets fit 10 x 12, merged by 12 into 5.
        assert_eq!(choice(f(10), "2020-01-01", "2020-01-03"), "12h");
        // ES's 330_auto_date_histogram.yml: 2020-03-01 to 03-09 in 2 buckets.
        assert_eq!(choice(f(2), "2020-03-01", "2020-03-09"), "7d");
        // 40 days: 40 daily buckets fit 10 x 7, merged by 7 into 6.
        assert_eq!(choice(f(10), "2020-01-01", "2020-02-09"), "7d");
        // 40 days into 2 buckets: months.
        assert_eq!(choice(f(2), "2020-01-01", "2020-02-09"), "1M");
        // 3 years, 10 buckets: 37 months merged by 3 into 13 > 10: years.
        assert_eq!(choice(f(10), "2020-01-01", "2023-01-01"), "1y");
        assert_eq!(
            choice(f(10), "2020-01-01T00:00:00", "2020-01-01T00:00:30"),
            "5s"
        );
        assert_eq!(
            choice(
                json!({"field": "d", "minimum_interval": "hour"}),
                "2020-01-01T00:00:00",
                "2020-01-01T00:00:30"
            ),
            "1h"
        );
    }
}

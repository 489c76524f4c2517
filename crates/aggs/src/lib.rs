//! Aggregations: Elasticsearch's `aggs` on top of tantivy's aggregation module.
//!
//! # Overview
//!
//! A search's `aggs` go through the same pipeline as the rest of a search:
//!
//! 1. **Parse** ([`parse_aggs`], `request`): the JSON becomes a typed tree ([`AggsRequest`]),
//!    with Elasticsearch's parse-time validation and messages. No mapping, no tantivy.
//! 2. **Plan** (`plan`): per index, the tree is resolved against the mapping (field types,
//!    formats, date math, text/doc-values errors) and translated into a tantivy aggregation
//!    request. What tantivy lacks is *translated*, not re-implemented: computed columns
//!    (`sources`) map documents to bucket indices for `filter(s)`, `missing`, `range`/
//!    `date_range` and calendar `date_histogram` buckets (`rounding`); tantivy's own `range`/
//!    `histogram` machinery runs over them, sub-aggregations included.
//! 3. **Execute** (`exec`): each shard is collected with a `DistributedAggregationCollector`
//!    and cut to `shard_size`; the shards merge with `merge_fruits` and become final results.
//!    `global` runs its own collection over all documents; `top_hits` re-queries its bucket
//!    (`top_hits`).
//! 4. **Render** (`render`): the final results become Elasticsearch's response objects,
//!    completing Elasticsearch's reduce (compound bucket orders, `size` cuts with
//!    `sum_other_doc_count`, terms error bounds, `key_as_string`, keyed buckets, typed keys,
//!    `search.max_buckets`).
//!
//! Field names are tantivy field names: the dotted Elasticsearch path of each mapped leaf.

// `EsError` is the workspace-wide error type; its size is a deliberate trade-off.
#![allow(clippy::result_large_err)]

mod auto_date;
mod breaker;
mod composite;
mod composite_counts;
mod digest;
mod dsl;
mod exec;
mod fields;
mod filter_counts;
mod format;
mod geogrid;
mod global_ords;
mod histogram_counts;
mod metric_bounds;
mod metric_order;
mod percentiles;
mod pipeline;
mod plan;
mod profile;
mod range_counts;
mod render;
mod request;
mod rounding;
mod significant;
mod significant_text;
mod sketch;
mod sources;
mod term_counts;
mod term_filter;
mod top_hits;
mod vwh;

#[cfg(test)]
mod tests;

pub use exec::AggTarget;
pub use request::{parse_aggs, AggsRequest, DEFAULT_MAX_BUCKETS};

use exec::{Exec, PlannedTarget};
use lode_engine::shard::ShardSearcher;
use lode_engine::EsResult;
use lode_query::QueryContext;
use plan::Plan;
use render::{Renderer, Scope};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Runs the aggregations over the matching documents of every shard of one index and returns the
/// ES `aggregations` response object. `query` is the planned search query (already a tantivy query),
/// `ctx` gives mapping/schema/analysis/now (see `lode_query::QueryContext`).
pub fn run_aggs(
    req: &AggsRequest,
    ctx: &QueryContext,
    shards: &[ShardSearcher],
    query: &dyn tantivy::query::Query,
    typed_keys: bool,
) -> EsResult<Value> {
    run_aggs_for_index(req, ctx, "", shards, query, typed_keys)
}

/// [`run_aggs`], naming the index in `top_hits` hits (`_index`).
pub fn run_aggs_for_index(
    req: &AggsRequest,
    ctx: &QueryContext,
    index_name: &str,
    shards: &[ShardSearcher],
    query: &dyn tantivy::query::Query,
    typed_keys: bool,
) -> EsResult<Value> {
    let target = AggTarget {
        index_name,
        ctx,
        shards,
        query,
        named: &[],
        named_scores: false,
    };
    run_aggs_multi(req, std::slice::from_ref(&target), typed_keys)
}

/// Runs the aggregations over several indices at once, each planned against its own mapping
/// (its own context and query): shard results of all indices merge before the final reduce,
/// exactly as Elasticsearch reduces the shards of a multi-index search. Rendering follows the
/// first index's mapping (formats, key types). No targets: an empty object.
pub fn run_aggs_multi(
    req: &AggsRequest,
    targets: &[AggTarget],
    typed_keys: bool,
) -> EsResult<Value> {
    Ok(run(req, targets, typed_keys, false)?.0)
}

/// [`run_aggs_multi`] for a profiled search: also Elasticsearch's `profile.shards[].aggregations`
/// of every shard (targets' shards in order), timed as `profile.rs` describes.
pub fn run_aggs_multi_profiled(
    req: &AggsRequest,
    targets: &[AggTarget],
    typed_keys: bool,
) -> EsResult<(Value, Vec<Vec<Value>>)> {
    run(req, targets, typed_keys, true)
}

fn run(
    req: &AggsRequest,
    targets: &[AggTarget],
    typed_keys: bool,
    profiled: bool,
) -> EsResult<(Value, Vec<Vec<Value>>)> {
    if targets.is_empty() {
        return Ok((Value::Object(Default::default()), Vec::new()));
    }
    // Aggregation scripts become runtime fields of the search, compiled once per index.
    let mut scripts = Vec::new();
    script_fields(&req.aggs, &mut scripts);
    let extended: Vec<QueryContext> = if scripts.is_empty() {
        Vec::new()
    } else {
        targets
            .iter()
            .map(|t| {
                let mut runtime = (*t.ctx.runtime).clone();
                for name in &scripts {
                    runtime.insert(name.clone(), Arc::new(script_field(name, t.ctx)?));
                }
                let mut ctx = t.ctx.clone();
                ctx.runtime = Arc::new(runtime);
                Ok(ctx)
            })
            .collect::<EsResult<_>>()?
    };
    let with_scripts: Vec<AggTarget> = targets
        .iter()
        .zip(&extended)
        .map(|(t, ctx)| AggTarget {
            index_name: t.index_name,
            ctx,
            shards: t.shards,
            query: t.query,
            named: t.named,
            named_scores: t.named_scores,
        })
        .collect();
    let targets = if scripts.is_empty() {
        targets
    } else {
        &with_scripts[..]
    };
    check_sizes(&req.aggs, req.max_buckets)?;
    auto_date::prepare(&req.aggs, targets)?;
    vwh::prepare(&req.aggs, targets, req.max_buckets)?;
    let planned = targets
        .iter()
        .map(|t| {
            Ok(PlannedTarget {
                target: t,
                plan: Plan::new(req, t.ctx, t.index_name)?,
            })
        })
        .collect::<EsResult<Vec<_>>>()?;
    let mut exec = Exec {
        targets: planned,
        max_buckets: req.max_buckets,
        terms_info: HashMap::new(),
        reserved: std::sync::Mutex::new(
            lode_engine::breaker::service().empty(lode_engine::breaker::Kind::Request),
        ),
        profile: profiled.then(Default::default),
    };
    let results = exec.collect_main()?;
    let mut renderer = Renderer {
        exec: &exec,
        pending: Vec::new(),
        typed_keys,
        max_buckets: req.max_buckets,
        buckets: 0,
        keep_sketches: req.pipelines.uses("cumulative_cardinality")
            || req.pipelines.uses("moving_percentiles"),
        kept: pipeline::Kept::default(),
    };
    let mut out = renderer.render_level(&exec.plan().roots, &results, &Scope::default(), true)?;
    renderer.fill_sketches(&mut out)?;
    pipeline::apply(&mut out, &req.pipelines, typed_keys, &renderer.kept)?;
    if renderer.keep_sketches {
        pipeline::strip_kept(&mut out);
    }
    let profile = exec
        .profile
        .take()
        .map(|p| p.into_inner().unwrap_or_else(|p| p.into_inner()))
        .unwrap_or_default();
    Ok((Value::Object(out), profile))
}

/// The field names standing for aggregation scripts in the tree.
fn script_fields(nodes: &[request::AggNode], out: &mut Vec<String>) {
    for n in nodes {
        let fields: Vec<&String> = match &n.kind {
            request::AggKind::Terms(t) => vec![&t.field],
            request::AggKind::Histogram(h) => vec![&h.field],
            request::AggKind::DateHistogram(d) => vec![&d.field],
            request::AggKind::AutoDateHistogram(a) => vec![&a.hist.field],
            request::AggKind::MultiTerms(m) => m.terms.iter().map(|t| &t.field).collect(),
            request::AggKind::Metric(m) => vec![&m.field],
            request::AggKind::Percentiles(p) => vec![&p.field],
            request::AggKind::Range(r) => vec![&r.field],
            request::AggKind::Missing { field } => vec![field],
            request::AggKind::WeightedAvg(w) => vec![&w.value.field, &w.weight.field],
            request::AggKind::Composite(c) => c.sources.iter().map(|s| &s.field).collect(),
            request::AggKind::VariableWidthHistogram(v) => vec![&v.field],
            _ => Vec::new(),
        };
        for f in fields {
            if f.starts_with(request::SCRIPT_MARK) && !out.contains(f) {
                out.push(f.clone());
            }
        }
        script_fields(&n.subs, out);
    }
}

/// An aggregation script as a runtime field: typed by `value_type`, else as its field (a
/// value script producing keys), else keyword keys or double values, as ES's defaults.
fn script_field(name: &str, ctx: &QueryContext) -> EsResult<lode_query::runtime::RuntimeField> {
    use lode_engine::mapping::Storage;
    use lode_query::runtime::{RuntimeField, RuntimeType};
    let spec = request::ScriptSpec::of(name)
        .ok_or_else(|| lode_engine::EsError::internal("bad aggregation script"))?;
    let ty = match spec.value_type.as_deref() {
        Some("string" | "keyword") => RuntimeType::Keyword,
        Some("long" | "integer" | "short" | "byte") => RuntimeType::Long,
        Some("double" | "float" | "number" | "numeric") => RuntimeType::Double,
        Some("date") => RuntimeType::Date,
        Some("boolean") => RuntimeType::Boolean,
        Some(other) => {
            return Err(lode_engine::EsError::illegal_argument(format!(
                "Unknown value type [{other}]"
            )))
        }
        None if spec.date => RuntimeType::Date,
        None if !spec.keys => RuntimeType::Double,
        None => match spec.field.as_deref().and_then(|f| ctx.mapping.field(f)) {
            Some(d) if d.ty.is_date() => RuntimeType::Date,
            Some(d) => match d.storage() {
                Storage::I64 => RuntimeType::Long,
                Storage::F64 => RuntimeType::Double,
                Storage::Bool => RuntimeType::Boolean,
                _ => RuntimeType::Keyword,
            },
            None => RuntimeType::Keyword,
        },
    };
    RuntimeField::agg_script(name.to_string(), ty, &spec.script, spec.field)
}

/// Requests that ask for more buckets than `search.max_buckets` up front fail before collecting.
fn check_sizes(nodes: &[request::AggNode], max_buckets: usize) -> EsResult<()> {
    for n in nodes {
        let extended_buckets = match &n.kind {
            request::AggKind::Composite(c) if c.size > max_buckets => {
                return Err(render::too_many_buckets(max_buckets));
            }
            request::AggKind::Histogram(h) if h.min_doc_count == 0 => {
                h.extended_bounds.and_then(|(lo, hi)| {
                    bounded_buckets(lo?, hi?, h.hard_bounds, h.interval, h.offset)
                })
            }
            request::AggKind::DateHistogram(d) if d.min_doc_count == 0 => {
                match (&d.interval, &d.extended_bounds) {
                    (request::DateInterval::Fixed(ms), Some((Some(lo), Some(hi)))) => {
                        let hard = d.hard_bounds.as_ref().map(|(a, b)| {
                            (
                                a.as_ref().and_then(Value::as_f64),
                                b.as_ref().and_then(Value::as_f64),
                            )
                        });
                        bounded_buckets(
                            lo.as_f64().unwrap_or(f64::NAN),
                            hi.as_f64().unwrap_or(f64::NAN),
                            hard,
                            *ms as f64,
                            d.offset as f64,
                        )
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        // Extended bounds fill empty buckets: a tiny interval over wide bounds would make
        // billions of them (and overflowed tantivy's memory estimate: a panic, a 500).
        if extended_buckets.is_some_and(|b| b > max_buckets as f64) {
            return Err(render::too_many_buckets(max_buckets));
        }
        check_sizes(&n.subs, max_buckets)?;
    }
    Ok(())
}

/// How many buckets `extended_bounds` [lo, hi] (clipped by `hard_bounds`) ask for.
fn bounded_buckets(
    lo: f64,
    hi: f64,
    hard: Option<(Option<f64>, Option<f64>)>,
    interval: f64,
    offset: f64,
) -> Option<f64> {
    let (hard_lo, hard_hi) = hard.unwrap_or((None, None));
    let lo = hard_lo.map_or(lo, |h| lo.max(h));
    let hi = hard_hi.map_or(hi, |h| hi.min(h));
    // NaN (a bound given as a date string) makes every comparison false: no estimate
    if !(interval > 0.0 && lo <= hi) {
        return None;
    }
    Some(((hi - offset) / interval).floor() - ((lo - offset) / interval).floor() + 1.0)
}

/// Milliseconds of a fixed-length calendar unit, for composite `date_histogram` sources.
pub(crate) fn composite_calendar_millis(unit: lode_dates::CalendarUnit) -> Option<f64> {
    use lode_dates::CalendarUnit::*;
    match unit {
        Minute => Some(rounding::MS_PER_MINUTE as f64),
        Hour => Some(rounding::MS_PER_HOUR as f64),
        Day => Some(rounding::MS_PER_DAY as f64),
        _ => None,
    }
}

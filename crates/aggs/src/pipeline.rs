//! Pipeline aggregations: they read other aggregations' results, not documents, so they run on
//! the reduced response, as ES runs them after the reduce phase. The request is split first:
//! pipeline definitions leave the aggregation tree (which the planner never sees) and are kept
//! with the place they were declared. After rendering, each level is processed bottom-up:
//!
//! - parent pipelines (`derivative`, `cumulative_sum`, `serial_diff`, `bucket_sort`,
//!   `bucket_script`, `bucket_selector`, `moving_fn`), declared among a multi-bucket
//!   aggregation's sub-aggregations, walk that aggregation's buckets and add their value to
//!   each bucket (or, for `bucket_sort` and `bucket_selector`, reorder, cut or filter the
//!   buckets), a pipeline that reads another one's output after it;
//! - sibling pipelines (`avg_bucket`, `sum_bucket`, `min_bucket`, `max_bucket`,
//!   `stats_bucket`, `extended_stats_bucket`, `percentiles_bucket`) read the buckets of a
//!   sibling multi-bucket aggregation through `buckets_path` and add one result beside it.
//!
//! `buckets_path` follows ES's syntax: `agg>agg.metric`, `agg['key']>metric`, `_count`, `_key`,
//! `_bucket_count`, `percentiles[99.9]`; `gap_policy` is `skip` (the default) or
//! `insert_zeros`; `keep_values` reads as `skip` except for the script pipelines, which
//! resolve values as ES's `BucketHelpers.resolveBucketValue`. Their scripts run on
//! `lode-painless` ([`lode_painless::AggScript`]).

use lode_engine::{EsError, EsResult};
use lode_hits::docvalues::DecimalFormat;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

mod parse;

const PARENT_KINDS: &[&str] = &[
    "derivative",
    "cumulative_sum",
    "serial_diff",
    "bucket_sort",
    "bucket_script",
    "bucket_selector",
    "moving_fn",
    "normalize",
    "cumulative_cardinality",
    "moving_percentiles",
];
/// Parent pipelines that run a script over any multi-bucket parent.
const SCRIPT_KINDS: &[&str] = &["bucket_script", "bucket_selector"];
const SIBLING_KINDS: &[&str] = &[
    "avg_bucket",
    "sum_bucket",
    "min_bucket",
    "max_bucket",
    "stats_bucket",
    "extended_stats_bucket",
    "percentiles_bucket",
];
/// Pipelines ES has that need a script or a model Lode does not run yet.
const REFUSED_KINDS: &[&str] = &["moving_avg", "inference"];
/// `normalize`'s methods (ES's `NormalizePipelineMethods`).
const NORMALIZE_METHODS: &[&str] = &[
    "rescale_0_1",
    "rescale_0_100",
    "percent_of_sum",
    "mean",
    "z-score",
    "softmax",
];

/// The key of a rendered `cardinality` result that holds the index of its distinct values
/// in [`Kept`] (present only while pipelines run, when a `cumulative_cardinality` reads them).
pub const KEPT_MARK: &str = "\u{0}kept";

/// What the pipelines read beside the rendered response: the exact distinct values of each
/// `cardinality` result marked with [`KEPT_MARK`] (`None`: past its exact limit).
#[derive(Default)]
pub struct Kept {
    pub distinct: Vec<Option<std::collections::HashSet<u64>>>,
    /// The digests of `percentiles` results (read by `moving_percentiles`), marked with
    /// [`KEPT_DIGEST_MARK`].
    pub digests: Vec<KeptDigest>,
}

/// The key of a rendered `percentiles` result that holds the index of its digest in
/// [`Kept`].
pub const KEPT_DIGEST_MARK: &str = "\u{0}kept_digest";

/// A `percentiles` result's digest and what renders one like it.
pub struct KeptDigest {
    pub(crate) state: crate::percentiles::State,
    pub(crate) percents: Vec<f64>,
    pub(crate) keyed: bool,
    pub(crate) method: crate::request::PercentilesMethod,
    pub(crate) format: crate::format::ValueFormat,
}

impl PipelineTree {
    /// Whether a pipeline of `kind` is declared anywhere in the tree.
    pub fn uses(&self, kind: &str) -> bool {
        self.here.iter().any(|p| p.kind == kind)
            || self.children.values().any(|(_, t)| t.uses(kind))
    }
}

/// Removes the [`KEPT_MARK`]s from a response.
pub fn strip_kept(level: &mut Map<String, Value>) {
    level.remove(KEPT_MARK);
    level.remove(KEPT_DIGEST_MARK);
    for v in level.values_mut() {
        match v {
            Value::Object(o) => strip_kept(o),
            Value::Array(a) => a
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(strip_kept),
            _ => {}
        }
    }
}

pub fn is_pipeline(kind: &str) -> bool {
    PARENT_KINDS.contains(&kind) || SIBLING_KINDS.contains(&kind) || REFUSED_KINDS.contains(&kind)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Gap {
    Skip,
    InsertZeros,
    /// Reads as `skip` except in ES's `resolveBucketValue` ([`resolve_es`]), where a value of
    /// an empty bucket is kept.
    KeepValues,
}

#[derive(Debug, Clone)]
struct Pipeline {
    name: String,
    kind: String,
    path: String,
    gap: Gap,
    format: Option<DecimalFormat>,
    format_text: Option<String>,
    /// `percentiles_bucket.percents`, `serial_diff.lag`, `bucket_sort` settings, `derivative.unit`.
    percents: Vec<f64>,
    lag: usize,
    sort: Vec<(String, bool)>,
    from: usize,
    size: Option<usize>,
    unit_ms: Option<f64>,
    sigma: f64,
    meta: Option<Value>,
    /// `bucket_script` / `bucket_selector`: variable → `buckets_path`.
    paths: Vec<(String, String)>,
    script: Option<std::sync::Arc<lode_painless::AggScript>>,
    /// `moving_fn`.
    window: Option<usize>,
    shift: i64,
    /// `normalize`.
    method: Option<String>,
}

/// The pipelines declared at one `aggs` level and below.
#[derive(Debug, Default, Clone)]
pub struct PipelineTree {
    here: Vec<Pipeline>,
    /// Per sub-aggregation name: the pipelines declared inside it, with its type.
    children: BTreeMap<String, (String, PipelineTree)>,
}

impl PipelineTree {
    pub fn is_empty(&self) -> bool {
        self.here.is_empty() && self.children.values().all(|(_, t)| t.is_empty())
    }
}

fn parse_error(msg: impl Into<String>) -> EsError {
    EsError::parsing(msg.into())
}

/// Takes the pipeline aggregations out of an `aggs` object: the rest goes to the planner.
pub fn split(aggs: &Value) -> EsResult<(Value, PipelineTree)> {
    let Value::Object(level) = aggs else {
        return Ok((aggs.clone(), PipelineTree::default()));
    };
    let mut rest = Map::new();
    let mut tree = PipelineTree::default();
    for (name, def) in level {
        let Some(obj) = def.as_object() else {
            rest.insert(name.clone(), def.clone());
            continue;
        };
        let kind = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "meta" | "aggs" | "aggregations"));
        match kind {
            Some(k) if is_pipeline(k) => {
                if obj.contains_key("aggs") || obj.contains_key("aggregations") {
                    return Err(EsError::new(
                        400,
                        "aggregation_initialization_exception",
                        format!("Aggregator [{name}] of type [{k}] cannot accept sub-aggregations"),
                    ));
                }
                tree.here
                    .push(parse_pipeline(name, k, &obj[k], obj.get("meta"))?);
            }
            Some(k) => {
                let mut def = obj.clone();
                for sub in ["aggs", "aggregations"] {
                    if let Some(s) = obj.get(sub) {
                        let (s_rest, s_tree) = split(s)?;
                        def.insert(sub.to_string(), s_rest);
                        if !s_tree.is_empty() {
                            tree.children.insert(name.clone(), (k.clone(), s_tree));
                        }
                    }
                }
                rest.insert(name.clone(), Value::Object(def));
            }
            None => {
                rest.insert(name.clone(), def.clone());
            }
        }
    }
    Ok((Value::Object(rest), tree))
}

fn parse_pipeline(
    name: &str,
    kind: &str,
    body: &Value,
    meta: Option<&Value>,
) -> EsResult<Pipeline> {
    if REFUSED_KINDS.contains(&kind) {
        return Err(EsError::illegal_argument(format!(
            "aggregation type [{kind}] is not supported"
        )));
    }
    let Value::Object(o) = body else {
        return Err(parse_error(format!(
            "Expected [START_OBJECT] under [{kind}], but got a [{}] in [{name}]",
            crate::request::token_name(body)
        )));
    };
    let p = Pipeline {
        name: name.to_string(),
        kind: kind.to_string(),
        path: String::new(),
        gap: Gap::Skip,
        format: None,
        format_text: None,
        percents: vec![1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0],
        lag: 1,
        sort: Vec::new(),
        from: 0,
        size: None,
        unit_ms: None,
        sigma: 2.0,
        meta: meta.cloned(),
        paths: Vec::new(),
        script: None,
        window: None,
        shift: 0,
        method: None,
    };
    let body = parse::parse_body(p, o)?;
    let (mut p, script_def) = (body.p, body.script);
    if let Some(def) = &script_def {
        let compiled = if kind == "moving_fn" {
            lode_painless::AggScript::compile_moving_fn(def, None)?
        } else {
            lode_painless::AggScript::compile_bucket(def, None)?
        };
        p.script = Some(std::sync::Arc::new(compiled));
    }
    Ok(p)
}

/// A `buckets_path` map value as ES reads it (`String.valueOf`).
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn unit_millis(u: &str) -> Option<f64> {
    let named = match u {
        "second" | "1s" => Some(1_000.0),
        "minute" | "1m" => Some(60_000.0),
        "hour" | "1h" => Some(3_600_000.0),
        "day" | "1d" => Some(86_400_000.0),
        "week" | "1w" => Some(604_800_000.0),
        _ => None,
    };
    named.or_else(|| {
        lode_dates::parse_time_value(u)
            .ok()
            .filter(|ms| *ms > 0)
            .map(|ms| ms as f64)
    })
}

// ---------------------------------------------------------------------------------------------
// Applying to a rendered response

/// Runs the pipelines on a rendered `aggregations` object.
pub fn apply(
    level: &mut Map<String, Value>,
    tree: &PipelineTree,
    typed: bool,
    kept: &Kept,
) -> EsResult<()> {
    for (name, (kind, sub)) in &tree.children {
        let Some(result) = find_mut(level, name) else {
            continue;
        };
        let mut failure = None;
        for_each_bucket(result, &mut |b| {
            if failure.is_none() {
                if let Err(e) = apply_bucket(b, sub, typed, kept) {
                    failure = Some(e);
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        for p in dependency_order(
            sub.here
                .iter()
                .filter(|p| PARENT_KINDS.contains(&p.kind.as_str()))
                .collect(),
        ) {
            apply_parent(p, kind, name, result, typed, kept)?;
        }
    }
    for p in tree.here.iter() {
        if SCRIPT_KINDS.contains(&p.kind.as_str()) || p.kind == "normalize" {
            return Err(EsError::illegal_argument(format!(
                "{} aggregation [{}] must be declared inside of another aggregation",
                p.kind, p.name
            )));
        }
        if PARENT_KINDS.contains(&p.kind.as_str()) {
            // A parent pipeline at the top level has no parent.
            return Err(EsError::illegal_argument(format!(
                "{} aggregation [{}] must have a histogram, date_histogram or auto_date_histogram as parent but doesn't have a parent",
                p.kind, p.name
            )));
        }
        let out = apply_sibling(p, level)?;
        level.insert(typed_name(p, typed), out);
    }
    Ok(())
}

/// The paths a pipeline reads.
fn paths_of(p: &Pipeline) -> Vec<&str> {
    if p.paths.is_empty() {
        let mut v = vec![p.path.as_str()];
        v.extend(p.sort.iter().map(|(s, _)| s.as_str()));
        v
    } else {
        p.paths.iter().map(|(_, s)| s.as_str()).collect()
    }
}

/// Parent pipelines run after the pipelines whose output they read (a `bucket_selector` on a
/// `bucket_script`, a `moving_fn` of a `derivative`), as ES orders them; otherwise in
/// declaration order.
fn dependency_order(mut pending: Vec<&Pipeline>) -> Vec<&Pipeline> {
    let first = |path: &str| -> String {
        path.split(['>', '.', '['])
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let mut done: Vec<&Pipeline> = Vec::new();
    while !pending.is_empty() {
        let ready = pending.iter().position(|p| {
            paths_of(p).iter().all(|path| {
                let f = first(path);
                !pending.iter().any(|q| q.name == f && q.name != p.name)
            })
        });
        // A cycle: keep declaration order (the read fails as ES's would).
        done.push(pending.remove(ready.unwrap_or(0)));
    }
    done
}

/// ES's `BucketHelpers.resolveBucketValue`: the value at `path` in a bucket, NaN for a gap
/// (a missing or non-finite value, or any value but `_count` of an empty bucket) unless the
/// gap policy fills it: `insert_zeros` with 0, `keep_values` with the value if it has one.
fn resolve_es(bucket: &Map<String, Value>, path: &str, gap: Gap) -> EsResult<f64> {
    let v = bucket_value(bucket, path)?;
    if path == "_count" {
        return Ok(v.unwrap_or(f64::NAN));
    }
    let finite = v.filter(|f| f.is_finite());
    let empty = bucket.get("doc_count").and_then(Value::as_f64) == Some(0.0);
    if finite.is_some() && !empty {
        return Ok(finite.unwrap_or(f64::NAN));
    }
    Ok(match gap {
        Gap::InsertZeros => 0.0,
        Gap::KeepValues => finite.unwrap_or(f64::NAN),
        Gap::Skip => f64::NAN,
    })
}

/// `moving_fn`'s windows, as ES's `MovFnPipelineAggregator`: the series is the non-NaN values;
/// the k-th of them gets the series' `[k - window + shift, k + shift)` (clamped to the series),
/// a NaN value (a skipped gap) gets no window.
fn moving_windows(
    values: &[f64],
    window: usize,
    shift: i64,
) -> (Vec<f64>, Vec<Option<std::ops::Range<usize>>>) {
    let series: Vec<f64> = values.iter().cloned().filter(|v| !v.is_nan()).collect();
    let clamp = |i: i64| i.clamp(0, series.len() as i64) as usize;
    let mut index = 0i64;
    let ranges = values
        .iter()
        .map(|v| {
            if v.is_nan() {
                return None;
            }
            let r = clamp(index - window as i64 + shift)..clamp(index + shift);
            index += 1;
            Some(r)
        })
        .collect();
    (series, ranges)
}

/// Sibling pipelines declared inside each bucket of a parent, and deeper levels.
fn apply_bucket(
    bucket: &mut Map<String, Value>,
    tree: &PipelineTree,
    typed: bool,
    kept: &Kept,
) -> EsResult<()> {
    let siblings_only = PipelineTree {
        here: tree
            .here
            .iter()
            .filter(|p| SIBLING_KINDS.contains(&p.kind.as_str()))
            .cloned()
            .collect(),
        children: tree.children.clone(),
    };
    apply(bucket, &siblings_only, typed, kept)
}

/// The result of sub-aggregation `name` at a level, under its plain or typed key.
fn find_mut<'a>(level: &'a mut Map<String, Value>, name: &str) -> Option<&'a mut Value> {
    let key = level
        .keys()
        .find(|k| *k == name || k.split_once('#').is_some_and(|(_, n)| n == name))?
        .clone();
    level.get_mut(&key)
}

fn find<'a>(level: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    level
        .iter()
        .find(|(k, _)| *k == name || k.split_once('#').is_some_and(|(_, n)| n == name))
        .map(|(_, v)| v)
}

/// Every bucket of a multi-bucket result (array or keyed), or the single bucket of a
/// single-bucket result.
fn for_each_bucket(result: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    match result.get_mut("buckets") {
        Some(Value::Array(a)) => a.iter_mut().filter_map(Value::as_object_mut).for_each(f),
        Some(Value::Object(m)) => m.values_mut().filter_map(Value::as_object_mut).for_each(f),
        _ => {
            if let Some(o) = result.as_object_mut() {
                if o.contains_key("doc_count") {
                    f(o)
                }
            }
        }
    }
}

fn typed_name(p: &Pipeline, typed: bool) -> String {
    if !typed {
        return p.name.clone();
    }
    let ty = match p.kind.as_str() {
        "min_bucket" | "max_bucket" => "bucket_metric_value",
        "derivative" => "derivative",
        "stats_bucket" => "stats_bucket",
        "extended_stats_bucket" => "extended_stats_bucket",
        "percentiles_bucket" => "percentiles_bucket",
        "cumulative_cardinality" => "simple_long_value",
        "moving_percentiles" => "tdigest_percentiles",
        _ => "simple_value",
    };
    format!("{ty}#{}", p.name)
}

/// One step of a `buckets_path`: an aggregation name with an optional `['key']`.
fn split_path(path: &str) -> (Vec<(String, Option<String>)>, Option<String>) {
    let mut steps = Vec::new();
    let parts: Vec<&str> = path.split('>').collect();
    let mut metric = None;
    for (i, part) in parts.iter().enumerate() {
        let mut part = part.to_string();
        if i + 1 == parts.len() {
            // `agg.metric`, `percentiles[99.9]`, `percentiles.99`
            if let Some(open) = part.find('[') {
                if part.ends_with(']') && !part[..open].is_empty() {
                    let inner = part[open + 1..part.len() - 1]
                        .trim_matches(['\'', '"'])
                        .to_string();
                    let agg = part[..open].to_string();
                    // `agg['key']` selects a bucket only when steps follow; last: a metric key.
                    steps.push((agg, None));
                    return (steps, Some(inner));
                }
            }
            if let Some((agg, m)) = part.split_once('.') {
                metric = Some(m.to_string());
                part = agg.to_string();
            }
        }
        let (name, key) = match part.find('[') {
            Some(open) if part.ends_with(']') => (
                part[..open].to_string(),
                Some(
                    part[open + 1..part.len() - 1]
                        .trim_matches(['\'', '"'])
                        .to_string(),
                ),
            ),
            _ => (part, None),
        };
        steps.push((name, key));
    }
    (steps, metric)
}

/// A bucket's value at `path` (`None`: missing or not a number).
fn bucket_value(bucket: &Map<String, Value>, path: &str) -> EsResult<Option<f64>> {
    match path {
        "_count" => return Ok(bucket.get("doc_count").and_then(Value::as_f64)),
        "_key" => return Ok(bucket.get("key").and_then(Value::as_f64)),
        _ => {}
    }
    let (steps, metric) = split_path(path);
    let mut current: &Map<String, Value> = bucket;
    for (i, (name, key)) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let result = find(current, name).ok_or_else(|| invalid_path(path))?;
        if let Some(k) = key {
            let b = select_bucket(result, k).ok_or_else(|| invalid_path(path))?;
            if last {
                return Ok(match metric.as_deref() {
                    Some(m) => metric_of(b, m),
                    None => b.get("doc_count").and_then(Value::as_f64),
                });
            }
            current = b;
            continue;
        }
        if last {
            return Ok(match metric.as_deref() {
                Some("_bucket_count") => result.get("buckets").map(|b| match b {
                    Value::Array(a) => a.len() as f64,
                    Value::Object(o) => o.len() as f64,
                    _ => 0.0,
                }),
                Some("_count") => result.get("doc_count").and_then(Value::as_f64),
                Some(m) => result.as_object().and_then(|o| metric_of(o, m)),
                None => match result.get("value") {
                    Some(v) => v.as_f64(),
                    None if result.get("doc_count").is_some() => {
                        result.get("doc_count").and_then(Value::as_f64)
                    }
                    None => return Err(invalid_path(path)),
                },
            });
        }
        current = result
            .as_object()
            .filter(|o| o.contains_key("doc_count"))
            .ok_or_else(|| invalid_path(path))?;
    }
    Err(invalid_path(path))
}

fn metric_of(o: &Map<String, Value>, m: &str) -> Option<f64> {
    if let Some(v) = o.get(m) {
        return v.as_f64();
    }
    // Percentiles: values keyed "99.0"; `99` and `99.9` both accepted.
    let values = o.get("values")?;
    let want: f64 = m.parse().ok()?;
    match values {
        Value::Object(vals) => vals
            .iter()
            .find(|(k, _)| k.parse::<f64>().ok() == Some(want))
            .and_then(|(_, v)| v.as_f64()),
        Value::Array(a) => a
            .iter()
            .find(|e| e.get("key").and_then(Value::as_f64) == Some(want))
            .and_then(|e| e.get("value").and_then(Value::as_f64)),
        _ => None,
    }
}

fn select_bucket<'a>(result: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    match result.get("buckets")? {
        Value::Object(m) => m.get(key).and_then(Value::as_object),
        Value::Array(a) => a.iter().filter_map(Value::as_object).find(|b| {
            b.get("key_as_string").and_then(Value::as_str) == Some(key)
                || match b.get("key") {
                    Some(Value::String(s)) => s == key,
                    Some(other) => other.to_string().as_str() == key,
                    None => false,
                }
        }),
        _ => None,
    }
}

fn invalid_path(path: &str) -> EsError {
    EsError::new(
        400,
        "aggregation_execution_exception",
        format!("No aggregation found for path [{path}]"),
    )
}

/// A bucket's value for a pipeline, `None` for a gap the policy leaves ([`resolve_es`]).
fn gap_value(bucket: &Map<String, Value>, path: &str, gap: Gap) -> EsResult<Option<f64>> {
    Ok(Some(resolve_es(bucket, path, gap)?).filter(|v| !v.is_nan()))
}

fn formatted(p: &Pipeline, value: Option<f64>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("value".into(), value.map_or(Value::Null, |v| json!(v)));
    if let (Some(f), Some(v)) = (&p.format, value) {
        out.insert("value_as_string".into(), json!(f.format(v)));
    }
    if let Some(m) = &p.meta {
        out.insert("meta".into(), m.clone());
    }
    out
}

/// A sibling pipeline over the buckets of `first>...` at this level.
fn apply_sibling(p: &Pipeline, level: &Map<String, Value>) -> EsResult<Value> {
    // `agg>rest`, or `agg.metric` (ES reads the metric as the next path element).
    let (first, rest) = match p.path.split_once('>').or_else(|| p.path.split_once('.')) {
        Some((a, r)) => (a.to_string(), r.to_string()),
        None => (p.path.clone(), "_count".to_string()),
    };
    let (first, key) = match first.find('[') {
        Some(i) => (first[..i].to_string(), Some(())),
        None => (first, None),
    };
    let result = find(level, &first).ok_or_else(|| invalid_path(&p.path))?;
    let buckets: Vec<&Map<String, Value>> = match result.get("buckets") {
        Some(Value::Array(a)) if key.is_none() => a.iter().filter_map(Value::as_object).collect(),
        Some(Value::Object(m)) if key.is_none() => m.values().filter_map(Value::as_object).collect(),
        _ => {
            return Err(EsError::illegal_argument(format!(
                "buckets_path must reference either a number value or a single value numeric metric aggregation, got: [{}] at aggregation [{first}]",
                result.get("buckets").map_or("object", |_| "buckets")
            )))
        }
    };
    let mut values: Vec<(String, f64)> = Vec::new();
    for b in buckets {
        if let Some(v) = gap_value(b, &rest, p.gap)? {
            let key = b
                .get("key_as_string")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| {
                    b.get("key")
                        .map(|k| k.as_str().map_or_else(|| k.to_string(), str::to_string))
                })
                .unwrap_or_default();
            values.push((key, v));
        }
    }
    let nums: Vec<f64> = values.iter().map(|(_, v)| *v).collect();
    let count = nums.len() as f64;
    let sum: f64 = nums.iter().sum();
    let min = nums.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = nums.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let avg = (count > 0.0).then(|| sum / count);
    let mut out = match p.kind.as_str() {
        "avg_bucket" => formatted(p, avg),
        "sum_bucket" => formatted(p, Some(sum)),
        "min_bucket" | "max_bucket" => {
            let best = if p.kind == "min_bucket" { min } else { max };
            let mut o = formatted(p, (count > 0.0).then_some(best));
            let keys: Vec<&String> = values
                .iter()
                .filter(|(_, v)| *v == best)
                .map(|(k, _)| k)
                .collect();
            o.insert("keys".into(), json!(keys));
            o
        }
        "stats_bucket" | "extended_stats_bucket" => {
            let mut o = Map::new();
            o.insert("count".into(), json!(nums.len()));
            let opt = |v: f64| if count > 0.0 { json!(v) } else { Value::Null };
            o.insert("min".into(), opt(min));
            o.insert("max".into(), opt(max));
            o.insert("avg".into(), avg.map_or(Value::Null, |a| json!(a)));
            o.insert("sum".into(), json!(sum));
            if p.kind == "extended_stats_bucket" {
                let sq: f64 = nums.iter().map(|v| v * v).sum();
                let var = avg.map(|a| (sq / count - a * a).max(0.0));
                let sd = var.map(f64::sqrt);
                let n = |v: Option<f64>| v.map_or(Value::Null, |x| json!(x));
                o.insert(
                    "sum_of_squares".into(),
                    if count > 0.0 { json!(sq) } else { Value::Null },
                );
                o.insert("variance".into(), n(var));
                o.insert("variance_population".into(), n(var));
                let var_s = (count > 1.0).then(|| var.unwrap_or(0.0) * count / (count - 1.0));
                o.insert("variance_sampling".into(), n(var_s));
                o.insert("std_deviation".into(), n(sd));
                o.insert("std_deviation_population".into(), n(sd));
                o.insert("std_deviation_sampling".into(), n(var_s.map(f64::sqrt)));
                let bound = |sign: f64| avg.zip(sd).map(|(a, s)| a + sign * p.sigma * s);
                o.insert(
                    "std_deviation_bounds".into(),
                    json!({
                        "upper": n(bound(1.0)), "lower": n(bound(-1.0)),
                        "upper_population": n(bound(1.0)), "lower_population": n(bound(-1.0)),
                        "upper_sampling": n(avg.zip(var_s).map(|(a, v)| a + p.sigma * v.sqrt())),
                        "lower_sampling": n(avg.zip(var_s).map(|(a, v)| a - p.sigma * v.sqrt())),
                    }),
                );
            }
            if let Some(m) = &p.meta {
                o.insert("meta".into(), m.clone());
            }
            o
        }
        "percentiles_bucket" => {
            let mut sorted = nums.clone();
            sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            let mut vals = Map::new();
            for pct in &p.percents {
                // ES: the nearest rank, index round(p/100 * (n-1)).
                let v = (!sorted.is_empty()).then(|| {
                    let i = ((pct / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
                    sorted[i.min(sorted.len() - 1)]
                });
                vals.insert(percent_key(*pct), v.map_or(Value::Null, |x| json!(x)));
            }
            let mut o = Map::new();
            o.insert("values".into(), Value::Object(vals));
            if let Some(m) = &p.meta {
                o.insert("meta".into(), m.clone());
            }
            o
        }
        other => unreachable!("not a sibling pipeline: {other}"),
    };
    if p.format_text.is_some()
        && matches!(
            p.kind.as_str(),
            "stats_bucket" | "extended_stats_bucket" | "percentiles_bucket"
        )
    {
        out.remove("value_as_string");
    }
    Ok(Value::Object(out))
}

fn percent_key(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.1}")
    } else {
        format!("{p}")
    }
}

/// A parent pipeline over the buckets of `parent` (of type `parent_kind`).
fn apply_parent(
    p: &Pipeline,
    parent_kind: &str,
    parent_name: &str,
    parent: &mut Value,
    typed: bool,
    kept: &Kept,
) -> EsResult<()> {
    let histogram = matches!(
        parent_kind,
        "histogram" | "date_histogram" | "auto_date_histogram"
    );
    if SCRIPT_KINDS.contains(&p.kind.as_str()) {
        return apply_bucket_script(p, parent_name, parent, typed);
    }
    if p.kind == "normalize" {
        return apply_normalize(p, parent, typed);
    }
    if p.kind != "bucket_sort" && !histogram {
        return Err(EsError::illegal_argument(format!(
            "{} aggregation [{}] must have a histogram, date_histogram or auto_date_histogram as parent",
            p.kind, p.name
        )));
    }
    let Some(Value::Array(buckets)) = parent.get_mut("buckets") else {
        return Err(EsError::illegal_argument(format!(
            "{} aggregation [{}] needs the buckets of [{parent_name}] as a list (keyed buckets are not supported)",
            p.kind, p.name
        )));
    };
    let key = typed_name(p, typed);
    match p.kind.as_str() {
        "derivative" => {
            // As ES: every bucket after the first gets a derivative, null when either value
            // is missing (a skipped gap is NaN there).
            let mut last: Option<(Option<f64>, Option<f64>)> = None;
            for b in buckets.iter_mut().filter_map(Value::as_object_mut) {
                let this = gap_value(b, &p.path, p.gap)?;
                let x = b.get("key").and_then(Value::as_f64);
                if let Some((prev, prev_x)) = last {
                    let gradient = this.zip(prev).map(|(c, p)| c - p);
                    let mut o = formatted(p, gradient);
                    if let (Some(unit), Some(g), Some(x), Some(px)) =
                        (p.unit_ms, gradient, x, prev_x)
                    {
                        o.insert("normalized_value".into(), json!(g / ((x - px) / unit)));
                    }
                    b.insert(key.clone(), Value::Object(o));
                }
                last = Some((this, x));
            }
        }
        "moving_percentiles" => apply_moving_percentiles(p, buckets, &key, kept)?,
        "cumulative_cardinality" => {
            // As ES's `CumulativeCardinalityPipelineAggregator`: the union of the buckets'
            // distinct values so far, each bucket's `cardinality` read at the path.
            let mut union: std::collections::HashSet<u64> = std::collections::HashSet::new();
            // Past a bucket's exact limit its values are not kept: its cardinality is added
            // (an upper bound of the union's growth).
            let mut extra = 0u64;
            for b in buckets.iter_mut().filter_map(Value::as_object_mut) {
                let target = cardinality_at(b, &p.path, &p.name)?;
                match target.get(KEPT_MARK).and_then(Value::as_u64) {
                    Some(i) => match kept.distinct.get(i as usize) {
                        Some(Some(set)) => union.extend(set.iter().copied()),
                        _ => extra += target.get("value").and_then(Value::as_u64).unwrap_or(0),
                    },
                    None => extra += target.get("value").and_then(Value::as_u64).unwrap_or(0),
                }
                let total = union.len() as u64 + extra;
                let mut o = Map::new();
                o.insert("value".into(), json!(total));
                if let Some(f) = &p.format {
                    o.insert("value_as_string".into(), json!(f.format(total as f64)));
                }
                if let Some(m) = &p.meta {
                    o.insert("meta".into(), m.clone());
                }
                b.insert(key.clone(), Value::Object(o));
            }
        }
        "cumulative_sum" => {
            let mut sum = 0.0;
            for b in buckets.iter_mut().filter_map(Value::as_object_mut) {
                sum += gap_value(b, &p.path, Gap::InsertZeros)?.unwrap_or(0.0);
                b.insert(key.clone(), Value::Object(formatted(p, Some(sum))));
            }
        }
        "serial_diff" => {
            let values: Vec<Option<f64>> = buckets
                .iter()
                .filter_map(Value::as_object)
                .map(|b| gap_value(b, &p.path, p.gap))
                .collect::<EsResult<_>>()?;
            for (i, b) in buckets
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .enumerate()
            {
                if i < p.lag {
                    continue;
                }
                if let (Some(cur), Some(prev)) = (values[i], values[i - p.lag]) {
                    b.insert(key.clone(), Value::Object(formatted(p, Some(cur - prev))));
                }
            }
        }
        "moving_fn" => {
            let script = p.script.as_ref().expect("parsed with a script");
            let values: Vec<f64> = buckets
                .iter()
                .filter_map(Value::as_object)
                .map(|b| resolve_es(b, &p.path, p.gap))
                .collect::<EsResult<_>>()?;
            let (series, ranges) = moving_windows(&values, p.window.unwrap_or(1), p.shift);
            for (b, range) in buckets
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .zip(ranges)
            {
                if let Some(r) = range {
                    let v = script.moving(&series[r])?;
                    b.insert(
                        key.clone(),
                        Value::Object(formatted(p, Some(v).filter(|v| v.is_finite()))),
                    );
                }
            }
        }
        "bucket_sort" => {
            if !p.sort.is_empty() {
                let mut keyed: Vec<(Vec<Option<f64>>, Value)> = Vec::new();
                for b in buckets.drain(..) {
                    let o = b.as_object().cloned().unwrap_or_default();
                    let ks = p
                        .sort
                        .iter()
                        .map(|(path, _)| bucket_value(&o, path))
                        .collect::<EsResult<Vec<_>>>()?;
                    keyed.push((ks, b));
                }
                keyed.sort_by(|(a, _), (b, _)| {
                    for ((x, y), (_, desc)) in a.iter().zip(b).zip(&p.sort) {
                        // Missing values sort last in either direction.
                        let o = match (x, y) {
                            (Some(x), Some(y)) => {
                                let o = x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal);
                                if *desc {
                                    o.reverse()
                                } else {
                                    o
                                }
                            }
                            (Some(_), None) => std::cmp::Ordering::Less,
                            (None, Some(_)) => std::cmp::Ordering::Greater,
                            (None, None) => std::cmp::Ordering::Equal,
                        };
                        if o != std::cmp::Ordering::Equal {
                            return o;
                        }
                    }
                    std::cmp::Ordering::Equal
                });
                buckets.extend(keyed.into_iter().map(|(_, b)| b));
            }
            let from = p.from.min(buckets.len());
            buckets.drain(..from);
            if let Some(size) = p.size {
                buckets.truncate(size);
            }
        }
        other => unreachable!("not a parent pipeline: {other}"),
    }
    Ok(())
}

/// `moving_percentiles`, as ES's `MovingPercentilesPipelineAggregator`: bucket `k` gets the
/// percentiles of the digests of the buckets `[k - window + shift, k + shift)` merged (none
/// when that window is empty), with the keys, `keyed` and format of the `percentiles` the path
/// names.
fn apply_moving_percentiles(
    p: &Pipeline,
    buckets: &mut [Value],
    key: &str,
    kept: &Kept,
) -> EsResult<()> {
    let mut digests: Vec<&KeptDigest> = Vec::with_capacity(buckets.len());
    for b in buckets.iter().filter_map(Value::as_object) {
        digests.push(digest_at(b, &p.path, kept)?);
    }
    let window = p.window.unwrap_or(1) as i64;
    let clamp = |i: i64| i.clamp(0, digests.len() as i64) as usize;
    for (index, b) in buckets
        .iter_mut()
        .filter_map(Value::as_object_mut)
        .enumerate()
    {
        let index = index as i64;
        let (from, to) = (clamp(index - window + p.shift), clamp(index + p.shift));
        if from >= to {
            continue;
        }
        let first = digests[from];
        let mut state = crate::percentiles::State::new(first.method);
        for d in &digests[from..to] {
            state.merge(d.state.clone());
        }
        let req = crate::request::PercentilesReq {
            field: String::new(),
            percents: first.percents.clone(),
            ranks: false,
            keyed: first.keyed,
            missing: None,
            format: None,
            method: first.method,
        };
        let values = crate::percentiles::values(&req, state)?;
        let key = match (key.split_once('#'), first.method) {
            (Some(_), crate::request::PercentilesMethod::Hdr { .. }) => {
                format!("hdr_percentiles#{}", p.name)
            }
            _ => key.to_string(),
        };
        let mut o = Map::new();
        crate::render::render_percentiles(first.keyed, &values, &first.format, &mut o);
        if let Some(m) = &p.meta {
            o.insert("meta".into(), m.clone());
        }
        b.insert(key, Value::Object(o));
    }
    Ok(())
}

/// The digest of the `percentiles` result at `path` in a bucket (ES's errors otherwise).
fn digest_at<'k>(
    bucket: &Map<String, Value>,
    path: &str,
    kept: &'k Kept,
) -> EsResult<&'k KeptDigest> {
    let not_percentiles = |got: &str| {
        let first = path.split(['>', '.', '[']).next().unwrap_or(path);
        EsError::illegal_argument(format!(
            "buckets_path must reference a TDigest percentiles aggregation, got: [{got}] at aggregation [{first}]"
        ))
    };
    let (steps, metric) = split_path(path);
    if metric.is_some() {
        return Err(not_percentiles("Double"));
    }
    let mut current = bucket;
    for (i, (step, k)) in steps.iter().enumerate() {
        let result = find(current, step).ok_or_else(|| {
            EsError::illegal_argument(
                "buckets_path must reference a percentiles percentile aggregation",
            )
        })?;
        let obj = match k {
            Some(k) => select_bucket(result, k).ok_or_else(|| invalid_path(path))?,
            None => result.as_object().ok_or_else(|| invalid_path(path))?,
        };
        if i + 1 == steps.len() {
            return match obj.get(KEPT_DIGEST_MARK).and_then(Value::as_u64) {
                Some(n) => kept
                    .digests
                    .get(n as usize)
                    .ok_or_else(|| EsError::internal("moving_percentiles: a digest not kept")),
                None => Err(not_percentiles(if obj.contains_key("doc_count") {
                    "InternalBucket"
                } else {
                    "InternalNumericMetricsAggregation"
                })),
            };
        }
        current = obj;
    }
    Err(invalid_path(path))
}

/// The `cardinality` result a `cumulative_cardinality` reads in a bucket: the path must
/// name the aggregation itself (ES resolves it to the `InternalCardinality`).
fn cardinality_at<'a>(
    bucket: &'a Map<String, Value>,
    path: &str,
    name: &str,
) -> EsResult<&'a Map<String, Value>> {
    let not_cardinality = |got: &str| {
        EsError::new(
            400,
            "aggregation_execution_exception",
            format!(
                "buckets_path must reference a cardinality aggregation, got: [{got}] at aggregation [{name}]"
            ),
        )
    };
    let (steps, metric) = split_path(path);
    if metric.is_some() || steps.is_empty() {
        return Err(not_cardinality("Double"));
    }
    let mut current = bucket;
    for (i, (step, key)) in steps.iter().enumerate() {
        let result = find(current, step).ok_or_else(|| invalid_path(path))?;
        let obj = match key {
            Some(k) => select_bucket(result, k).ok_or_else(|| invalid_path(path))?,
            None => result.as_object().ok_or_else(|| invalid_path(path))?,
        };
        if i + 1 == steps.len() {
            let is_metric = obj.get("value").is_some_and(|v| v.is_u64() || v.is_null())
                && !obj.contains_key("doc_count");
            if !is_metric {
                return Err(not_cardinality(if obj.contains_key("doc_count") {
                    "InternalBucket"
                } else {
                    "InternalAggregation"
                }));
            }
            return Ok(obj);
        }
        current = obj;
    }
    Err(invalid_path(path))
}

/// `normalize` over the buckets (a list or keyed) of any multi-bucket parent, as ES's
/// `NormalizePipelineAggregator`: every bucket's value read with the `skip` gap policy (a
/// gap is NaN), the method's statistics over the non-NaN values, and each bucket's value
/// normalized (a gap, or a non-finite result, renders `null`).
fn apply_normalize(p: &Pipeline, parent: &mut Value, typed: bool) -> EsResult<()> {
    let key = typed_name(p, typed);
    let mut values = Vec::new();
    let mut failure = None;
    for_each_bucket(parent, &mut |b| match resolve_es(b, &p.path, Gap::Skip) {
        Ok(v) => values.push(v),
        Err(e) => {
            failure.get_or_insert(e);
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let method = normalize_method(p.method.as_deref().unwrap_or("rescale_0_1"), &values);
    let mut i = 0;
    for_each_bucket(parent, &mut |b| {
        let v = values[i];
        i += 1;
        let out = if v.is_nan() { f64::NAN } else { method(v) };
        b.insert(
            key.clone(),
            Value::Object(formatted(p, Some(out).filter(|x| x.is_finite()))),
        );
    });
    Ok(())
}

/// ES's `NormalizePipelineMethods`, built from the series (NaN values left out of the
/// statistics; `max` starts at Java's `Double.MIN_VALUE`, as ES's does).
fn normalize_method(name: &str, values: &[f64]) -> Box<dyn Fn(f64) -> f64> {
    let (mut count, mut sum, mut min, mut max) = (0usize, 0.0f64, f64::MAX, f64::from_bits(1));
    for &v in values.iter().filter(|v| !v.is_nan()) {
        count += 1;
        min = min.min(v);
        max = max.max(v);
        sum += v;
    }
    let mean = if count == 0 {
        f64::NAN
    } else {
        sum / count as f64
    };
    match name {
        "rescale_0_100" => Box::new(move |v| 100.0 * (v - min) / (max - min)),
        "mean" => Box::new(move |v| (v - mean) / (max - min)),
        "percent_of_sum" => Box::new(move |v| v / sum),
        "z-score" => {
            let variance: f64 = values
                .iter()
                .filter(|v| !v.is_nan())
                .map(|v| (v - mean).powi(2))
                .sum();
            let stdev = (variance / count as f64).sqrt();
            Box::new(move |v| (v - mean) / stdev)
        }
        "softmax" => {
            let sum_exp: f64 = values.iter().filter(|v| !v.is_nan()).map(|v| v.exp()).sum();
            Box::new(move |v| v.exp() / sum_exp)
        }
        _ => Box::new(move |v| (v - min) / (max - min)),
    }
}

/// `bucket_script` and `bucket_selector` over the buckets (a list or keyed) of any
/// multi-bucket parent.
fn apply_bucket_script(
    p: &Pipeline,
    parent_name: &str,
    parent: &mut Value,
    typed: bool,
) -> EsResult<()> {
    let script = p.script.as_ref().expect("parsed with a script");
    let key = typed_name(p, typed);
    // The bucket's variables, or None when a gap skips the bucket.
    let vars_of = |b: &Map<String, Value>, skip: bool| -> EsResult<Option<Vec<(&str, f64)>>> {
        let mut vars = Vec::with_capacity(p.paths.len());
        for (var, path) in &p.paths {
            let v = resolve_es(b, path, p.gap)?;
            if skip && p.gap == Gap::Skip && v.is_nan() {
                return Ok(None);
            }
            vars.push((var.as_str(), v));
        }
        Ok(Some(vars))
    };
    let selector = p.kind == "bucket_selector";
    let keep = |b: &mut Map<String, Value>| -> EsResult<bool> {
        if selector {
            let vars = vars_of(b, false)?.unwrap_or_default();
            return script.select(&vars);
        }
        if let Some(vars) = vars_of(b, true)? {
            if let Some(v) = script.number(&vars)? {
                let out = formatted(p, Some(v).filter(|v| v.is_finite()));
                b.insert(key.clone(), Value::Object(out));
            }
        }
        Ok(true)
    };
    match parent.get_mut("buckets") {
        Some(Value::Array(buckets)) => {
            let mut kept = Vec::with_capacity(buckets.len());
            for mut b in buckets.drain(..) {
                let keep_it = match b.as_object_mut() {
                    Some(o) => keep(o)?,
                    None => true,
                };
                if keep_it {
                    kept.push(b);
                }
            }
            *buckets = kept;
        }
        Some(Value::Object(buckets)) => {
            let mut kept = Map::new();
            for (k, mut b) in std::mem::take(buckets) {
                let keep_it = match b.as_object_mut() {
                    Some(o) => keep(o)?,
                    None => true,
                };
                if keep_it {
                    kept.insert(k, b);
                }
            }
            *buckets = kept;
        }
        _ => {
            return Err(EsError::illegal_argument(format!(
                "{} aggregation [{}] must be declared inside a multi-bucket aggregation; [{parent_name}] has no buckets",
                p.kind, p.name
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let b = json!({"doc_count": 4, "key": 10, "s": {"value": 3.0}, "st": {"avg": 2.5},
                       "p": {"values": {"99.0": 7.0}},
                       "f": {"doc_count": 2, "m": {"value": 1.5}},
                       "t": {"buckets": [{"key": "a", "doc_count": 1, "m": {"value": 9.0}}]}});
        let b = b.as_object().unwrap();
        assert_eq!(bucket_value(b, "_count").unwrap(), Some(4.0));
        assert_eq!(bucket_value(b, "s").unwrap(), Some(3.0));
        assert_eq!(bucket_value(b, "st.avg").unwrap(), Some(2.5));
        assert_eq!(bucket_value(b, "p[99]").unwrap(), Some(7.0));
        assert_eq!(bucket_value(b, "p.99").unwrap(), Some(7.0));
        assert_eq!(bucket_value(b, "f>m").unwrap(), Some(1.5));
        assert_eq!(bucket_value(b, "t['a']>m").unwrap(), Some(9.0));
        assert_eq!(bucket_value(b, "t._bucket_count").unwrap(), Some(1.0));
        assert!(bucket_value(b, "nope").is_err());
    }

    #[test]
    fn split_takes_pipelines_out() {
        let aggs = json!({"h": {"histogram": {"field": "x", "interval": 1},
                                "aggs": {"s": {"sum": {"field": "y"}},
                                         "d": {"derivative": {"buckets_path": "s"}}}},
                          "m": {"max_bucket": {"buckets_path": "h>s"}}});
        let (rest, tree) = split(&aggs).unwrap();
        assert!(rest.get("m").is_none());
        assert!(rest["h"]["aggs"].get("d").is_none());
        assert_eq!(tree.here.len(), 1);
        assert_eq!(tree.children["h"].1.here.len(), 1);
    }

    #[test]
    fn normalize_methods_as_es() {
        // ES's NormalizePipelineMethodsTests data: the NaN is left out of the statistics.
        let data = [
            1.0,
            50.0,
            f64::NAN,
            8.0,
            10.0,
            4.0,
            3.0,
            0.0,
            10.0,
            -10.0,
            -4.0,
        ];
        let (min, max, sum, count) = (-10.0, 50.0, 72.0, 10.0);
        let mean = sum / count;
        let m = |name: &str| normalize_method(name, &data);
        assert_eq!(m("rescale_0_1")(8.0), (8.0 - min) / (max - min));
        assert_eq!(m("rescale_0_100")(8.0), 100.0 * (8.0 - min) / (max - min));
        assert_eq!(m("mean")(8.0), (8.0 - mean) / (max - min));
        assert_eq!(m("percent_of_sum")(8.0), 8.0 / sum);
        let variance: f64 = data
            .iter()
            .filter(|v| !v.is_nan())
            .map(|v| (v - mean).powi(2))
            .sum::<f64>()
            / count;
        assert_eq!(m("z-score")(8.0), (8.0 - mean) / variance.sqrt());
        let sum_exp: f64 = data.iter().filter(|v| !v.is_nan()).map(|v| v.exp()).sum();
        assert_eq!(m("softmax")(8.0), 8f64.exp() / sum_exp);
        // Java's `Double.MIN_VALUE` starts the maximum: all-negative data keeps it.
        assert_eq!(normalize_method("rescale_0_1", &[-2.0, -1.0])(-2.0), 0.0);
        assert!(normalize_method("rescale_0_1", &[-2.0, -1.0])(-1.0) < 1.0);
    }

    #[test]
    fn moving_fn_windows() {
        let nan = f64::NAN;
        let (series, ranges) = moving_windows(&[1.0, 2.0, nan, 3.0, 4.0], 2, 0);
        assert_eq!(series, vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            ranges,
            vec![Some(0..0), Some(0..1), None, Some(0..2), Some(1..3)]
        );
        // shift 1 includes the current value; a large shift clamps to the series.
        let (_, ranges) = moving_windows(&[1.0, 2.0, 3.0], 2, 1);
        assert_eq!(ranges, vec![Some(0..1), Some(0..2), Some(1..3)]);
        let (_, ranges) = moving_windows(&[1.0, 2.0, 3.0], 1, 5);
        assert_eq!(ranges, vec![Some(3..3), Some(3..3), Some(3..3)]);
        let (_, ranges) = moving_windows(&[1.0, 2.0, 3.0], 5, -1);
        assert_eq!(ranges, vec![Some(0..0), Some(0..0), Some(0..1)]);
    }

    #[test]
    fn resolve_with_gap_policies() {
        let empty = json!({"doc_count": 0, "s": {"value": 0.0}, "a": {"value": null}});
        let empty = empty.as_object().unwrap();
        assert!(resolve_es(empty, "s", Gap::Skip).unwrap().is_nan());
        assert_eq!(resolve_es(empty, "s", Gap::InsertZeros).unwrap(), 0.0);
        assert_eq!(resolve_es(empty, "s", Gap::KeepValues).unwrap(), 0.0);
        assert!(resolve_es(empty, "a", Gap::KeepValues).unwrap().is_nan());
        // `_count` never gaps.
        assert_eq!(resolve_es(empty, "_count", Gap::Skip).unwrap(), 0.0);
        let full = json!({"doc_count": 2, "s": {"value": 5.0}});
        assert_eq!(
            resolve_es(full.as_object().unwrap(), "s", Gap::Skip).unwrap(),
            5.0
        );
    }

    #[test]
    fn script_pipelines_parse_as_es() {
        let h = |pipe: Value| {
            json!({"h": {"histogram": {"field": "x", "interval": 1},
                         "aggs": {"s": {"sum": {"field": "y"}}, "p": pipe}}})
        };
        let (_, tree) = split(&h(json!({"bucket_script": {
            "buckets_path": {"a": "s", "b": "_count"}, "script": "params.a / params.b"}})))
        .unwrap();
        let p = &tree.children["h"].1.here[0];
        assert_eq!(
            p.paths,
            vec![("a".into(), "s".into()), ("b".into(), "_count".into())]
        );
        let (_, tree) = split(&h(json!({"bucket_selector": {
            "buckets_path": ["s", "_count"], "script": "params._value0 > params._value1"}})))
        .unwrap();
        assert_eq!(tree.children["h"].1.here[0].paths[1].0, "_value1");
        let err = |pipe: Value| split(&h(pipe)).unwrap_err().to_string();
        assert!(err(json!({"bucket_script": {"buckets_path": "s"}})).contains("Required [script]"));
        assert!(
            err(json!({"moving_fn": {"buckets_path": "s"}})).contains("Required [script, window]")
        );
        assert!(
            err(json!({"moving_fn": {"buckets_path": "s", "window": 0, "script": "1"}}))
                .contains("[window] must be a positive, non-zero integer.")
        );
        assert!(err(
            json!({"bucket_selector": {"buckets_path": "s", "script": "true", "format": "0"}})
        )
        .contains("Unknown key for a VALUE_STRING in [p]: [format]."));
    }

    #[test]
    fn selector_after_the_script_it_reads() {
        let aggs = json!({"h": {"histogram": {"field": "x", "interval": 1},
            "aggs": {"sel": {"bucket_selector": {"buckets_path": {"r": "ratio"}, "script": "params.r > 1"}},
                     "ratio": {"bucket_script": {"buckets_path": {"c": "_count"}, "script": "params.c"}}}}});
        let (_, tree) = split(&aggs).unwrap();
        let order: Vec<&str> = dependency_order(tree.children["h"].1.here.iter().collect())
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(order, vec!["ratio", "sel"]);
        let mut out = json!({"h": {"buckets": [
            {"key": 0.0, "doc_count": 1}, {"key": 1.0, "doc_count": 3}, {"key": 2.0, "doc_count": 0}]}});
        apply(out.as_object_mut().unwrap(), &tree, false, &Kept::default()).unwrap();
        let b = &out["h"]["buckets"];
        assert_eq!(b.as_array().unwrap().len(), 1);
        assert_eq!(b[0]["ratio"]["value"], json!(3.0));
    }
}

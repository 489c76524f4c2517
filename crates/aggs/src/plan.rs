//! Planning: the typed request against one index's mapping becomes
//! - a tantivy aggregation request (built as tantivy's ES-like JSON and deserialized), per
//!   execution [`Stage`],
//! - the computed columns ([`SourceSpec`]) that stand in for what tantivy lacks, and
//! - for every node, what rendering needs to know (formats, keys, bucket definitions).
//!
//! Field names are tantivy field names already (the dotted ES path).

use super::dsl::build_dsl;
use super::format::ValueFormat;
use super::request::*;
use super::rounding::{DateRounding, IndexedRounding};
use lode_dates::{parse_date_math, DateFormat, Tz};
use lode_engine::mapping::{FieldDef, FieldType, Storage};
use lode_engine::range_field::RangeKind;
use lode_engine::{EsError, EsResult};
use lode_query::QueryContext;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tantivy::query::{AllQuery, BooleanQuery, ExistsQuery, Occur, Query};

/// Terms sizes that stand for "everything" (kept far from `u32::MAX`: tantivy multiplies).
pub(crate) const ALL: u64 = 100_000_000;

/// Which tantivy request to build: the shard collection keeps every term (Elasticsearch
/// collects whole shards exactly), the shard prune cuts terms to `shard_size`, and the final
/// conversion keeps every merged bucket so that rendering can order and cut them the way
/// Elasticsearch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Collect,
    ShardPrune,
    Final,
}

/// A resolved field: `def` is `None` when the field is unmapped (or absent from the schema).
#[derive(Clone)]
pub(crate) struct FieldRef {
    pub name: String,
    pub def: Option<Arc<FieldDef>>,
}

impl FieldRef {
    pub fn storage(&self) -> Option<Storage> {
        self.def.as_ref().map(|d| d.storage())
    }

    pub fn is_date(&self) -> bool {
        self.def.as_ref().is_some_and(|d| d.ty.is_date())
    }

    fn ty(&self) -> Option<FieldType> {
        self.def.as_ref().map(|d| d.ty)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Any field with doc values (terms, value_count, cardinality, missing).
    Any,
    /// Numbers and dates (histogram, range, percentiles).
    Numeric,
    /// Numbers, dates and booleans (ES's `NUMERIC`, `DATE` and `BOOLEAN` values sources:
    /// `min`, `max`, `avg`, `sum`, `stats`, `extended_stats`).
    NumericOrBool,
}

/// A `top_metrics` metric: a number, a date or a keyword with doc values.
pub(crate) fn metric_field(ctx: &QueryContext, name: &str) -> EsResult<FieldRef> {
    let f = resolve_field(ctx, name, "top_metrics", Need::Any)?;
    match f.storage() {
        None | Some(Storage::I64 | Storage::F64 | Storage::Keyword) => Ok(f),
        Some(_) => Err(EsError::illegal_argument(format!(
            "Field [{name}] of type [{}] is not supported for aggregation [top_metrics]",
            f.def.as_ref().map_or("unknown", |d| d.ty.name())
        ))),
    }
}

/// A field name as errors show it: an aggregation script's stand-in name is its source.
fn shown_field(name: &str) -> String {
    match super::request::ScriptSpec::of(name) {
        Some(spec) => match &spec.script {
            Value::String(s) => format!("script: {s}"),
            other => format!(
                "script: {}",
                other.get("source").and_then(Value::as_str).unwrap_or("")
            ),
        },
        None => name.to_string(),
    }
}

/// The value source a runtime field is registered under (see `sources::RuntimeProvider`).
pub(crate) fn runtime_source_name(field: &str) -> String {
    format!("{RUNTIME_PREFIX}{field}")
}

const RUNTIME_PREFIX: &str = "__lode_runtime_";
/// Separates a runtime source's field from the `missing` value it gives.
const MISSING_MARK: char = '\u{1}';

fn is_runtime_source(name: &str) -> bool {
    name.starts_with(RUNTIME_PREFIX)
}

fn with_missing(source: &str, missing: &str) -> String {
    format!("{source}{MISSING_MARK}{missing}")
}

/// Marks a runtime keyword source that hands over every value a document emits: ES's
/// `StringScriptDocValues` sorts a runtime keyword's values but keeps repeats, which
/// `value_count` counts, while the bucketing aggregations count a document once per term.
const ALL_VALUES_MARK: char = '\u{2}';

fn with_all_values(source: &str) -> String {
    format!("{source}{ALL_VALUES_MARK}")
}

/// A runtime source name's field and `missing` value.
pub(crate) fn parse_runtime_source(name: &str) -> Option<(&str, Option<&str>)> {
    let rest = name.strip_prefix(RUNTIME_PREFIX)?;
    let (field, missing) = match rest.split_once(MISSING_MARK) {
        Some((f, m)) => (f, Some(m)),
        None => (rest, None),
    };
    Some((field.trim_end_matches(ALL_VALUES_MARK), missing))
}

/// Whether a runtime source keeps a document's repeated keywords (see [`ALL_VALUES_MARK`]).
pub(crate) fn runtime_source_keeps_repeats(name: &str) -> bool {
    name.strip_prefix(RUNTIME_PREFIX)
        .and_then(|rest| rest.split(MISSING_MARK).next())
        .is_some_and(|field| field.ends_with(ALL_VALUES_MARK))
}

/// The runtime sources a plan reads (see `sources::RuntimeProvider`).
pub(crate) fn runtime_sources(nodes: &[PlanNode], out: &mut Vec<String>) {
    for n in nodes {
        let names: Vec<&String> = match &n.op {
            Op::Terms(t) => vec![&t.field.name],
            Op::MultiTerms(ops) => ops.iter().map(|t| &t.field.name).collect(),
            Op::Histogram { field, .. } => vec![field],
            Op::DateHistogram(d) => vec![&d.field.name],
            Op::Metric(m) | Op::Percentiles(m) => vec![&m.field.name],
            _ => Vec::new(),
        };
        for name in names.into_iter().filter(|n| is_runtime_source(n)) {
            if !out.contains(name) {
                out.push(name.clone());
            }
        }
        runtime_sources(&n.subs, out);
    }
}

/// The aggregations that read a runtime field as a value source: their field is only handed
/// to tantivy (others read columns themselves and refuse runtime fields).
const RUNTIME_AGGS: &[&str] = &[
    "terms",
    "variable_width_histogram",
    "histogram",
    "date_histogram",
    "auto_date_histogram",
    "multi_terms",
    "range",
    "date_range",
    "missing",
    "weighted_avg",
    "percentile_ranks",
    "top_metrics",
    "avg",
    "sum",
    "min",
    "max",
    "stats",
    "extended_stats",
    "value_count",
    "cardinality",
    "percentiles",
    // Its sources read runtime fields as computed keys (`composite.rs`).
    "composite",
];

/// A runtime field as an aggregation field: a mapped field of its type, whose values come
/// from its value source.
fn runtime_field_ref(
    ctx: &QueryContext,
    f: &lode_query::runtime::RuntimeField,
    agg_type: &str,
    need: Need,
) -> EsResult<FieldRef> {
    use lode_query::runtime::RuntimeType;
    let shown = shown_field(&f.name);
    if !RUNTIME_AGGS.contains(&agg_type) {
        return Err(EsError::illegal_argument(format!(
            "aggregation of type [{agg_type}] on runtime field [{shown}] is not supported by Lode"
        )));
    }
    let refused = match need {
        Need::Any => false,
        Need::Numeric => matches!(f.ty, RuntimeType::Keyword | RuntimeType::Boolean),
        Need::NumericOrBool => f.ty == RuntimeType::Keyword,
    };
    if refused {
        return Err(EsError::illegal_argument(format!(
            "Field [{shown}] of type [{}] is not supported for aggregation [{agg_type}]",
            f.ty.name()
        )));
    }
    // A runtime date's `format` renders its keys and values, as a mapped date's does.
    let mut def = serde_json::json!({"type": f.ty.name()});
    if let Some((spec, _)) = &f.format {
        def["format"] = Value::String(spec.clone());
    }
    let mapping = lode_engine::mapping::compile(
        &serde_json::json!({"properties": {"f": def}}),
        ctx.analysis,
    )?;
    let mut def = (*mapping.fields["f"]).clone();
    def.path = f.name.clone();
    Ok(FieldRef {
        name: runtime_source_name(&f.name),
        def: Some(Arc::new(def)),
    })
}

fn resolve_field(ctx: &QueryContext, name: &str, agg_type: &str, need: Need) -> EsResult<FieldRef> {
    if let Some(f) = ctx.runtime.get(name) {
        return runtime_field_ref(ctx, f, agg_type, need);
    }
    if name == "_id" {
        return Err(lode_engine::schema::id_fielddata_error());
    }
    // `_ignored` is a keyword column of the metadata fields (absent from older indices).
    let ignored_meta;
    let def = match ctx.mapping.field(name) {
        None if name == lode_engine::schema::IGNORED && ctx.meta.ignored.is_some() => {
            ignored_meta = Arc::new(FieldDef::ignored_meta());
            Some(&ignored_meta)
        }
        d => d,
    };
    let Some(def) = def else {
        // A field the index has but this search's mapping does not (hidden by field-level
        // security) has no values for it: no column is read.
        let hidden = !name.starts_with('_') && ctx.schema.get_field(name).is_ok();
        return Ok(FieldRef {
            name: if hidden {
                "__lode_no_such_field".to_string()
            } else {
                name.to_string()
            },
            def: None,
        });
    };
    let ty = def.ty.name();
    match def.storage() {
        // ES's `MappedFieldType#fielddataBuilder` (not overridden by it).
        Storage::Text if def.ty == lode_engine::mapping::FieldType::SearchAsYouType => {
            return Err(EsError::illegal_argument(format!(
                "Fielddata is not supported on field [{name}] of type [search_as_you_type]"
            )))
        }
        // `MatchOnlyTextFieldType#fielddataBuilder`.
        Storage::Text if def.ty == lode_engine::mapping::FieldType::MatchOnlyText => {
            return Err(EsError::illegal_argument(
                "match_only_text fields do not support sorting and aggregations",
            ))
        }
        Storage::Text => {
            return Err(EsError::illegal_argument(format!(
                "Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{name}] in order to load field data by uninverting the inverted index. Note that this can use significant memory."
            )))
        }
        Storage::None | Storage::Completion | Storage::Range | Storage::GeoPoint => {
            return Err(EsError::illegal_argument(format!(
                "Field [{name}] of type [{ty}] is not supported for aggregation [{agg_type}]"
            )))
        }
        _ => {}
    }
    if !def.doc_values {
        return Err(EsError::illegal_argument(format!(
            "Can't load fielddata on [{name}] because fielddata is unsupported on fields of type [{ty}]. Use doc values instead."
        )));
    }
    let numeric = match need {
        Need::Any => true,
        Need::Numeric => matches!(def.storage(), Storage::I64 | Storage::F64),
        Need::NumericOrBool => matches!(def.storage(), Storage::I64 | Storage::F64 | Storage::Bool),
    };
    if !numeric {
        return Err(EsError::illegal_argument(format!(
            "Field [{name}] of type [{ty}] is not supported for aggregation [{agg_type}]"
        )));
    }
    let def = ctx.schema.get_field(name).is_ok().then(|| def.clone());
    Ok(FieldRef {
        name: name.to_string(),
        def,
    })
}

/// The planned aggregation tree of one index.
pub(crate) struct Plan<'r> {
    pub roots: Vec<PlanNode<'r>>,
    pub sources: Vec<SourceSpec>,
}

pub(crate) struct PlanNode<'r> {
    pub req: &'r AggNode,
    pub op: Op,
    pub subs: Vec<PlanNode<'r>>,
}

/// A computed column, registered under [`source_name`].
pub(crate) enum SourceSpec {
    /// Bucket `i` matches `queries[i]`; with `other`, bucket `n` matches none.
    Filters {
        queries: Vec<Box<dyn Query>>,
        other: bool,
    },
    /// `sampler`: bucket 1 holds each shard's `shard_size` best-scoring matches; with
    /// `diversify`, at most `.1` of them per value of the field `.0` (documents without one
    /// having the key `.2`, the `missing` value's).
    Sample {
        shard_size: usize,
        diversify: Option<(FieldRef, usize, Option<String>)>,
    },
    Ranges {
        field: String,
        column: super::sources::NumericColumn,
        ranges: Vec<(f64, f64)>,
        missing: Option<f64>,
    },
    Dates {
        field: String,
        rounding: IndexedRounding,
        /// The value (milliseconds) of documents without any (`missing`).
        missing: Option<i64>,
    },
    /// A field's values, and `missing` for documents without any (`histogram` and fixed
    /// `date_histogram`'s `missing`); `i64` values for dates.
    Values {
        field: String,
        column: super::sources::NumericColumn,
        missing: f64,
        as_i64: bool,
    },
    /// `histogram`/`date_histogram` on a range field: every bucket a document's ranges
    /// overlap.
    RangeBuckets {
        field: String,
        kind: RangeKind,
        bucketing: super::sources::RangeBucketing,
    },
    /// `geohash_grid`/`geotile_grid`: each document's distinct cells (ES's hash longs).
    GeoCells {
        field: String,
        grid: crate::geogrid::Grid,
    },
    /// `composite` over computed keys: each shard's page of keys, then each document's
    /// keys on it (`composite.rs`).
    CompositeKeys(Arc<crate::composite::KeySpec>),
    /// A boolean column's values (0/1) and `missing` for documents without any (`terms`'
    /// `missing` on a boolean field).
    Bools { field: String, missing: bool },
    /// A boolean column's values as doubles 0/1, and `missing`'s for documents without any
    /// (numeric metrics on a boolean field).
    BoolNumbers {
        field: String,
        missing: Option<bool>,
    },
    /// A keyword column with `missing` for documents without a value, as the term's ordinal
    /// where the segment has the term (`terms`' `missing` equal to an indexed term).
    KeywordMissing { field: String, missing: String },
    /// `weighted_avg`: per value of `value`, `value * weight` (`product`) or `weight`.
    Weighted {
        value: (String, super::sources::NumericColumn, Option<f64>),
        weight: (String, super::sources::NumericColumn, Option<f64>),
        product: bool,
    },
}

pub(crate) fn source_name(i: usize) -> String {
    format!("__lode_agg_source_{i}")
}

/// The `terms` key type, as typed keys name it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TermsKind {
    String,
    Long,
    Double,
    Bool,
}

pub(crate) struct TermsOp {
    pub field: FieldRef,
    pub kind: TermsKind,
    pub shard_size: usize,
    pub format: ValueFormat,
    /// Exact-value include/exclude on numeric fields (tantivy filters strings only).
    pub numeric_include: Option<Vec<f64>>,
    pub numeric_exclude: Option<Vec<f64>>,
    /// A keyword `include` (regex or values) applied when rendering, because the `missing`
    /// value passes it and tantivy's would drop the `missing` bucket.
    string_include: Option<StringInclude>,
    tantivy_missing: Option<Value>,
    /// `missing` on a boolean field, given by the computed column `source_field`.
    bool_missing: Option<bool>,
    /// What tantivy reads instead of the field (a computed column), if anything.
    source_field: Option<String>,
    tantivy_include: Option<Value>,
    tantivy_exclude: Option<Value>,
    /// A partition-based `include` (`partition`, `num_partitions`), applied when rendering.
    pub partition: Option<(u32, u32)>,
}

impl TermsOp {
    /// The keyword `include` / `exclude` tantivy's collector applies (a regex string or an
    /// array of terms), for counts taken by ordinal to apply the same.
    pub(crate) fn keyword_filters(&self) -> (Option<&Value>, Option<&Value>) {
        (self.tantivy_include.as_ref(), self.tantivy_exclude.as_ref())
    }

    /// Whether `key` is the bucket of the `missing` value (which holds the documents
    /// without a value).
    pub(crate) fn holds_missing(&self, key: &tantivy::aggregation::Key) -> bool {
        use tantivy::aggregation::Key;
        if let Some(b) = self.bool_missing {
            return super::render::key_f64(key) == f64::from(u8::from(b));
        }
        match (&self.tantivy_missing, key) {
            (None, _) => false,
            (Some(Value::String(m)), Key::Str(k)) => m == k,
            (Some(Value::String(_)), _) | (Some(_), Key::Str(_)) => false,
            (Some(m), k) => m.as_f64() == Some(super::render::key_f64(k)),
        }
    }
}

pub(crate) struct DateHistogramOp {
    pub field: FieldRef,
    pub rounding: DateRounding,
    pub source: Option<usize>,
    pub format: ValueFormat,
    extended_bounds: Option<(Option<i64>, Option<i64>)>,
    hard_bounds: Option<(Option<i64>, Option<i64>)>,
    /// On a range field: `source` emits the buckets, hard bounds already applied.
    range: bool,
    /// `missing`, parsed (milliseconds): with a fixed rounding `source` reads the field
    /// with it, with an indexed one the `Dates` source gives its bucket.
    pub missing: Option<i64>,
}

impl DateHistogramOp {
    /// On a range field.
    pub fn is_range(&self) -> bool {
        self.range
    }

    /// `hard_bounds`, parsed (milliseconds).
    pub fn hard_bounds(&self) -> Option<(Option<i64>, Option<i64>)> {
        self.hard_bounds
    }
}

pub(crate) struct RangeBucketDef {
    pub key: String,
    pub from: Option<f64>,
    pub to: Option<f64>,
}

pub(crate) struct RangeOp {
    pub field: FieldRef,
    pub source: usize,
    pub ranges: Vec<RangeBucketDef>,
    pub format: ValueFormat,
    /// The value of documents without one (`missing`).
    pub missing: Option<f64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FiltersStyle {
    /// `filter` and `missing`: one bucket rendered as the aggregation itself.
    Single,
    Keyed,
    Anonymous,
    /// Named filters with `keyed: false`: an array of buckets with keys.
    NamedList,
}

pub(crate) struct FiltersOp {
    pub source: usize,
    pub names: Vec<String>,
    pub other: Option<String>,
    /// `ip_range`: each bucket's `from` and `to`.
    pub ip_bounds: Option<crate::request::IpBounds>,
    pub style: FiltersStyle,
}

pub(crate) struct MetricOp {
    pub field: FieldRef,
    pub format: ValueFormat,
}

pub(crate) struct CompositeOp {
    /// Per source: the `format` that turns keys into strings (dates, when explicitly given).
    pub formats: Vec<Option<ValueFormat>>,
    pub fields: Vec<FieldRef>,
    /// Keys tantivy's composite cannot read from columns: `terms` over the
    /// [`SourceSpec::CompositeKeys`] source at this index (see `composite.rs`).
    pub computed: Option<usize>,
}

pub(crate) enum Op {
    Terms(TermsOp),
    Histogram {
        format: ValueFormat,
        /// What tantivy reads (a runtime field's value source).
        field: String,
        /// On a range field: `field` is a source of the buckets, hard bounds already applied.
        range: bool,
        /// The value of documents without one (`missing`).
        missing: Option<f64>,
    },
    DateHistogram(DateHistogramOp),
    Range(RangeOp),
    Filters(FiltersOp),
    Global,
    /// `nested`: its sub-aggregations run over the nested documents of `path` under the
    /// enclosing bucket's documents (`None`: the path is not mapped, no documents).
    Nested {
        path: Option<String>,
    },
    /// `reverse_nested` under a `nested` aggregation: its sub-aggregations run over the
    /// documents of the enclosing level `path` (`None`: the roots) holding the bucket's
    /// nested documents (`unmapped`: the path is not mapped, no documents).
    ReverseNested {
        path: Option<String>,
        unmapped: bool,
    },
    Composite(CompositeOp),
    Metric(MetricOp),
    /// `percentiles` and `percentile_ranks`: every bucket's TDigest or HDR histogram,
    /// collected in one pass after rendering (`sketch.rs`), not by tantivy.
    Percentiles(MetricOp),
    /// `median_absolute_deviation` and `boxplot`: the same per-bucket TDigest.
    DigestMetric(MetricOp),
    /// `string_stats` on a keyword field, collected as `percentiles` (`sketch.rs`).
    StringStats(FieldRef),
    /// `geo_bounds` and `geo_centroid`, collected as `percentiles` (`sketch.rs`).
    GeoMetric(FieldRef),
    /// `geohash_grid`/`geotile_grid`: `terms` over the [`SourceSpec::GeoCells`] `source`,
    /// ordered and cut at render time as ES's `BucketPriorityQueue`.
    GeoGrid {
        source: usize,
    },
    TopHits,
    /// `multi_terms`: nested `terms` on each field (under [`MULTI_TERMS_LEVEL`] below the
    /// first), uncut, flattened and ordered at render time.
    MultiTerms(Vec<TermsOp>),
    /// `significant_terms`: uncut `terms` (the foreground counts) and, under
    /// [`docs_count_name`], a one-bucket filter counting the foreground documents; the
    /// background is counted at render time.
    SignificantTerms {
        terms: TermsOp,
        docs: usize,
    },
    /// `top_metrics`: rendered by re-running the search per bucket (see `top_hits.rs`).
    TopMetrics,
    /// `auto_date_histogram` below a bucket aggregation: each enclosing bucket chooses its
    /// rounding from its own documents at render time (`auto_date.rs`), and each of its
    /// buckets collects its sub-aggregations in a pass of its own.
    AutoDatePerBucket(DateHistogramOp),
    /// `sampler`/`diversified_sampler` below a bucket aggregation: each enclosing bucket's
    /// best-scoring documents per shard, sampled at render time (ES's
    /// `BestDocsDeferringCollector` keeps a queue per owning bucket).
    SamplerPerBucket {
        shard_size: usize,
        diversify: Option<(FieldRef, usize, Option<String>)>,
    },
    /// `variable_width_histogram` below a bucket aggregation: clustered per bucket at
    /// render time (`vwh.rs`), its sub-aggregations collected per bucket.
    VariableWidthPerBucket {
        field: FieldRef,
        format: ValueFormat,
        /// The value of documents without one (`missing`).
        missing: Option<f64>,
    },
    /// `significant_text`: counted at render time from the bucket's documents' `_source`
    /// (`significant_text.rs`), nothing collected by tantivy.
    SignificantText,
    /// `rare_terms`: uncut `terms`, kept up to `max_doc_count` at render time.
    RareTerms(TermsOp),
    /// `weighted_avg`: a `sum` of the [`SourceSpec::Weighted`] products under the node's
    /// name, and one of the weights under [`weight_sum_name`].
    WeightedAvg {
        format: ValueFormat,
        product: usize,
        weight: usize,
    },
}

/// The name of the inner levels of a `multi_terms`' nested `terms` (`>` is not allowed in
/// aggregation names).
pub(crate) const MULTI_TERMS_LEVEL: &str = ">multi_terms";

/// The name of a `significant_terms`' count of foreground documents.
pub(crate) fn docs_count_name(name: &str) -> String {
    format!("{name}>docs")
}

/// The name of a `weighted_avg`'s sum of weights in tantivy's request and results (`>` is
/// not allowed in aggregation names, so it cannot clash with a sibling).
pub(crate) fn weight_sum_name(name: &str) -> String {
    format!("{name}>weight")
}

impl<'r> Plan<'r> {
    /// Plans `req` against the index `index_name` described by `ctx`.
    pub fn new(req: &'r AggsRequest, ctx: &QueryContext, index_name: &str) -> EsResult<Plan<'r>> {
        let mut sources = Vec::new();
        let mut roots = plan_level(&req.aggs, ctx, &mut sources, None)?;
        bind_index_name(&mut roots, index_name);
        Ok(Plan { roots, sources })
    }
}

/// `terms` on `_index`: every document of this index has the index name, which is the
/// `missing` value of a field no document has (so buckets merge across indices by name).
fn bind_index_name(nodes: &mut [PlanNode], index_name: &str) {
    for n in nodes {
        if let Op::Terms(op) = &mut n.op {
            if op.field.name == "_index" && op.field.def.is_none() {
                op.field.name = "__lode_no_such_field".to_string();
                op.tantivy_missing = Some(Value::String(index_name.to_string()));
            }
        }
        bind_index_name(&mut n.subs, index_name);
    }
}

/// Plans sibling aggregations; `parent` is the type of the enclosing aggregation, if any.
fn plan_level<'r>(
    nodes: &'r [AggNode],
    ctx: &QueryContext,
    sources: &mut Vec<SourceSpec>,
    parent: Option<&'static str>,
) -> EsResult<Vec<PlanNode<'r>>> {
    nodes
        .iter()
        .map(|n| plan_node(n, ctx, sources, parent))
        .collect()
}

fn plan_node<'r>(
    node: &'r AggNode,
    ctx: &QueryContext,
    sources: &mut Vec<SourceSpec>,
    parent: Option<&'static str>,
) -> EsResult<PlanNode<'r>> {
    let ty = node.kind.type_name();
    let op = match &node.kind {
        AggKind::Terms(t) => Op::Terms(plan_terms(node, t, ctx, sources)?),
        AggKind::Histogram(h) => {
            if let Some((def, kind)) = range_field(ctx, &h.field)? {
                if h.missing.is_some() {
                    return Err(range_missing_error());
                }
                if kind == RangeKind::Ip {
                    return Err(EsError::illegal_argument(format!(
                        "Expected numeric range type but found non-numeric range [{}]",
                        kind.type_name()
                    )));
                }
                let format = match &h.format {
                    _ if kind == RangeKind::Date => {
                        let field = FieldRef {
                            name: h.field.clone(),
                            def: Some(def),
                        };
                        date_format(&field, h.format.as_deref(), &Tz::utc())?
                    }
                    Some(f) => ValueFormat::decimal(f)?,
                    None => ValueFormat::Raw,
                };
                sources.push(SourceSpec::RangeBuckets {
                    field: h.field.clone(),
                    kind,
                    bucketing: super::sources::RangeBucketing::Numeric {
                        interval: h.interval,
                        offset: h.offset,
                        hard: h.hard_bounds.unwrap_or((None, None)),
                    },
                });
                Op::Histogram {
                    format,
                    field: source_name(sources.len() - 1),
                    range: true,
                    missing: None,
                }
            } else {
                plan_histogram(ctx, h, ty, sources)?
            }
        }
        AggKind::DateHistogram(d) => Op::DateHistogram(plan_date_histogram(d, ctx, sources, ty)?),
        AggKind::AutoDateHistogram(a) => {
            let chosen = a.chosen.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let Some(choice) = chosen else {
                // Below a bucket aggregation: each bucket chooses its rounding at render time.
                let op = plan_date_histogram(&a.hist, ctx, sources, ty)?;
                return finish_node(node, Op::AutoDatePerBucket(op), ctx, sources, ty);
            };
            let mut op = plan_date_histogram(&a.hist, ctx, sources, ty)?;
            sources.push(SourceSpec::Dates {
                field: op.field.name.clone(),
                rounding: choice.rounding.clone(),
                missing: op.missing,
            });
            op.source = Some(sources.len() - 1);
            op.rounding = DateRounding::Indexed(choice.rounding);
            Op::DateHistogram(op)
        }
        AggKind::Range(r) => Op::Range(plan_range(r, ty, ctx, sources)?),
        AggKind::VariableWidthHistogram(v) => {
            let chosen = v.chosen.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let field = resolve_field(ctx, &v.field, ty, Need::Numeric)?;
            let format = metric_format(&field, v.format.as_deref())?;
            let missing = v
                .missing
                .as_ref()
                .map(|m| numeric_missing(ctx, m, &format))
                .transpose()?;
            match chosen {
                // Below a bucket aggregation: clustered per bucket at render time.
                None => Op::VariableWidthPerBucket {
                    field,
                    format,
                    missing,
                },
                Some(buckets) => plan_vwh(&buckets, field, format, missing, sources),
            }
        }
        AggKind::Sampler { .. } | AggKind::DiversifiedSampler { .. } => {
            let (shard_size, diversify) = match &node.kind {
                AggKind::DiversifiedSampler {
                    shard_size,
                    field,
                    max_docs_per_value,
                    missing,
                } => {
                    let field = resolve_field(ctx, field, ty, Need::Any)?;
                    let missing = missing
                        .as_ref()
                        .map(|m| diversify_missing_key(ctx, &field, m))
                        .transpose()?;
                    (*shard_size, Some((field, *max_docs_per_value, missing)))
                }
                AggKind::Sampler { shard_size } => (*shard_size, None),
                _ => unreachable!(),
            };
            if parent.is_some() {
                // Below a bucket aggregation: each bucket sampled at render time.
                return finish_node(
                    node,
                    Op::SamplerPerBucket {
                        shard_size,
                        diversify,
                    },
                    ctx,
                    sources,
                    ty,
                );
            }
            sources.push(SourceSpec::Sample {
                shard_size,
                diversify,
            });
            Op::Filters(FiltersOp {
                source: sources.len() - 1,
                names: vec![node.name.clone()],
                other: None,
                ip_bounds: None,
                style: FiltersStyle::Single,
            })
        }
        AggKind::Filter(q) => {
            sources.push(SourceSpec::Filters {
                queries: vec![build_dsl(q, ctx)?],
                other: false,
            });
            Op::Filters(FiltersOp {
                source: sources.len() - 1,
                names: vec![node.name.clone()],
                other: None,
                ip_bounds: None,
                style: FiltersStyle::Single,
            })
        }
        AggKind::Filters(f) => {
            if let (true, Some((field, _))) = (f.geo_distance, &f.ip_bounds) {
                if let Some(def) = ctx
                    .mapping
                    .field(field)
                    .filter(|d| d.ty != FieldType::GeoPoint)
                {
                    return Err(EsError::illegal_argument(format!(
                        "Field [{field}] of type [{}] is not supported for aggregation [geo_distance]",
                        def.ty.name()
                    )));
                }
            } else if let Some((field, _)) = &f.ip_bounds {
                let r = resolve_field(ctx, field, ty, Need::Any)?;
                if let Some(def) = r.def.as_ref().filter(|_| r.storage() != Some(Storage::Ip)) {
                    return Err(EsError::illegal_argument(format!(
                        "Field [{field}] of type [{}] is not supported for aggregation [ip_range]",
                        def.ty.name()
                    )));
                }
            }
            let queries = f
                .filters
                .iter()
                .map(|(_, q)| build_dsl(q, ctx))
                .collect::<EsResult<Vec<_>>>()?;
            sources.push(SourceSpec::Filters {
                queries,
                other: f.other_bucket.is_some(),
            });
            let named = f
                .filters
                .iter()
                .enumerate()
                .any(|(i, (n, _))| *n != i.to_string());
            Op::Filters(FiltersOp {
                source: sources.len() - 1,
                names: f.filters.iter().map(|(n, _)| n.clone()).collect(),
                other: f.other_bucket.clone(),
                ip_bounds: f.ip_bounds.as_ref().map(|(_, b)| b.clone()),
                style: if f.keyed {
                    FiltersStyle::Keyed
                } else if named {
                    FiltersStyle::NamedList
                } else {
                    FiltersStyle::Anonymous
                },
            })
        }
        AggKind::Missing { field } => {
            let f = resolve_field(ctx, field, ty, Need::Any)?;
            let query: Box<dyn Query> = match f.def {
                // A runtime field (or script) without values, as the `exists` query reads it.
                Some(_) if is_runtime_source(&f.name) => Box::new(BooleanQuery::new(vec![
                    (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                    (
                        Occur::MustNot,
                        build_dsl(
                            &lode_query::Query::Exists {
                                field: field.clone(),
                                boost: 1.0,
                            },
                            ctx,
                        )?,
                    ),
                ])),
                None => Box::new(AllQuery),
                Some(_) => Box::new(BooleanQuery::new(vec![
                    (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                    (
                        Occur::MustNot,
                        Box::new(ExistsQuery::new(f.name.clone(), false)),
                    ),
                ])),
            };
            sources.push(SourceSpec::Filters {
                queries: vec![query],
                other: false,
            });
            Op::Filters(FiltersOp {
                source: sources.len() - 1,
                names: vec![node.name.clone()],
                other: None,
                ip_bounds: None,
                style: FiltersStyle::Single,
            })
        }
        AggKind::Nested { path } => {
            check_nested_subs(&node.subs)?;
            match ctx.mapping.objects.get(path.as_str()) {
                Some(o) if o.nested => Op::Nested {
                    path: Some(path.clone()),
                },
                Some(_) => {
                    return Err(EsError::illegal_argument(format!(
                        "[nested] nested path [{path}] is not nested"
                    )))
                }
                None => Op::Nested { path: None },
            }
        }
        AggKind::ReverseNested { path } => {
            // ES's `findNestedAggregatorFactory`: a `nested` aggregation above, at any depth.
            if NESTED_DEPTH.with(|c| c.get()) == 0 {
                return Err(EsError::illegal_argument(format!(
                    "Reverse nested aggregation [{}] can only be used inside a [nested] aggregation",
                    node.name
                )));
            }
            match path.as_deref().filter(|p| !p.is_empty()) {
                None => Op::ReverseNested {
                    path: None,
                    unmapped: false,
                },
                Some(p) => match ctx.mapping.objects.get(p) {
                    Some(o) if o.nested => Op::ReverseNested {
                        path: Some(p.to_string()),
                        unmapped: false,
                    },
                    Some(_) => {
                        return Err(EsError::illegal_argument(format!(
                            "[reverse_nested] nested path [{p}] is not nested"
                        )))
                    }
                    None => Op::ReverseNested {
                        path: None,
                        unmapped: true,
                    },
                },
            }
        }
        AggKind::Global => {
            if parent.is_some() {
                return Err(EsError::new(
                    400,
                    "aggregation_initialization_exception",
                    format!(
                        "Aggregation [{}] of type [global] cannot be a sub-aggregation",
                        node.name
                    ),
                ));
            }
            Op::Global
        }
        AggKind::Composite(c) => {
            if let Some(parent) = parent.filter(|p| *p != "nested") {
                return Err(EsError::illegal_argument(format!(
                    "[composite] aggregation cannot be used with a parent aggregation of type: [{parent}]"
                )));
            }
            check_after(c)?;
            let mut formats = Vec::new();
            let mut fields = Vec::new();
            let mut computed = false;
            for s in &c.sources {
                let f = match &s.kind {
                    CompositeSourceKind::GeoTile { .. } => {
                        if let Some(def) = ctx
                            .mapping
                            .field(&s.field)
                            .filter(|d| d.ty != FieldType::GeoPoint)
                        {
                            return Err(EsError::illegal_argument(format!(
                                "Field [{}] of type [{}] is not supported for aggregation [geotile_grid]",
                                s.field,
                                def.ty.name()
                            )));
                        }
                        computed = true;
                        FieldRef {
                            name: s.field.clone(),
                            def: None,
                        }
                    }
                    kind => {
                        let need = match kind {
                            CompositeSourceKind::Terms { .. } => Need::Any,
                            _ => Need::Numeric,
                        };
                        resolve_field(ctx, &s.field, "composite", need)?
                    }
                };
                computed |= ctx.runtime.contains_key(&s.field);
                match &s.kind {
                    CompositeSourceKind::DateHistogram {
                        interval,
                        time_zone,
                        offset,
                        ..
                    } => {
                        let fixed_len = match interval {
                            DateInterval::Fixed(_) => true,
                            DateInterval::Calendar(u) => {
                                super::composite_calendar_millis(*u).is_some()
                            }
                        };
                        computed |=
                            !fixed_len || !time_zone.is_utc() || *offset != 0 || s.missing_bucket;
                    }
                    CompositeSourceKind::Histogram { .. } => computed |= s.missing_bucket,
                    _ => {}
                }
                formats.push(match (&s.kind, &s.format) {
                    (CompositeSourceKind::DateHistogram { time_zone, .. }, Some(format)) => {
                        Some(date_format(&f, Some(format), time_zone)?)
                    }
                    (CompositeSourceKind::GeoTile { .. }, Some(_)) => {
                        return Err(EsError::illegal_argument(format!(
                            "Field [{}] of type [geo_point] does not support custom formats",
                            s.field
                        )))
                    }
                    (_, Some(format)) => match f.storage() {
                        Some(Storage::I64 | Storage::F64) => {
                            // A number or date format renders the key; tantivy's composite
                            // keys only plain columns, so a formatted source is computed.
                            computed = true;
                            Some(metric_format(&f, Some(format))?)
                        }
                        _ => {
                            return Err(EsError::illegal_argument(format!(
                                "Field [{}] of type [{}] does not support custom formats",
                                shown_field(&s.field),
                                f.def.as_ref().map_or("keyword", |d| d.ty.name())
                            )))
                        }
                    },
                    _ => None,
                });
                fields.push(f);
            }
            // Aggregations that re-query their bucket need its documents, which only
            // computed keys can name.
            computed |= rereads_bucket(&node.subs);
            let computed = if computed {
                let spec = composite_key_spec(ctx, c, &fields, &formats)?;
                sources.push(SourceSpec::CompositeKeys(Arc::new(spec)));
                Some(sources.len() - 1)
            } else {
                None
            };
            Op::Composite(CompositeOp {
                formats,
                fields,
                computed,
            })
        }
        AggKind::Metric(m) => {
            let need = if m.kind.is_numeric() {
                Need::NumericOrBool
            } else {
                Need::Any
            };
            let mut field = resolve_field(ctx, &m.field, ty, need)?;
            let boolean = m.kind.is_numeric() && field.storage() == Some(Storage::Bool);
            if boolean && is_runtime_source(&field.name) {
                // A runtime boolean's source gives its values as doubles 0/1.
                if m.format.is_some() {
                    return Err(EsError::illegal_argument(format!(
                        "Field [{}] of type [boolean] does not support custom formats",
                        shown_field(&m.field)
                    )));
                }
                check_metric_missing(m.missing.as_ref(), &field, false)?;
                Op::Metric(MetricOp {
                    field,
                    format: ValueFormat::Bool,
                })
            } else if boolean {
                // A boolean is a number 0/1 there (ES's `BOOLEAN` values source), with ES's
                // `DocValueFormat.BOOLEAN`; tantivy's metrics read no boolean column, so a
                // computed column gives the values as doubles.
                if m.format.is_some() {
                    return Err(EsError::illegal_argument(format!(
                        "Field [{}] of type [boolean] does not support custom formats",
                        m.field
                    )));
                }
                let missing = match &m.missing {
                    None => None,
                    Some(Value::Bool(b)) => Some(*b),
                    Some(v) => match scalar(v).as_str() {
                        "true" => Some(true),
                        "false" => Some(false),
                        other => {
                            return Err(EsError::illegal_argument(format!(
                                "Cannot parse boolean [{other}], expected either [true] or [false]"
                            )))
                        }
                    },
                };
                sources.push(SourceSpec::BoolNumbers {
                    field: field.name.clone(),
                    missing,
                });
                field.name = source_name(sources.len() - 1);
                Op::Metric(MetricOp {
                    field,
                    format: ValueFormat::Bool,
                })
            } else {
                let runtime_keyword =
                    is_runtime_source(&field.name) && field.storage() == Some(Storage::Keyword);
                if runtime_keyword && m.kind == MetricKind::ValueCount {
                    field.name = with_all_values(&field.name);
                }
                if let (true, Some(Value::String(missing))) = (runtime_keyword, &m.missing) {
                    field.name = with_missing(&field.name, missing);
                }
                check_metric_missing(
                    m.missing.as_ref(),
                    &field,
                    m.kind == MetricKind::Cardinality || m.kind == MetricKind::ValueCount,
                )?;
                let format = metric_format(&field, m.format.as_deref())?;
                Op::Metric(MetricOp { field, format })
            }
        }
        AggKind::Percentiles(p) => {
            let field = resolve_field(ctx, &p.field, ty, Need::Numeric)?;
            check_metric_missing(p.missing.as_ref(), &field, false)?;
            let format = metric_format(&field, p.format.as_deref())?;
            Op::Percentiles(MetricOp { field, format })
        }
        AggKind::StringStats { field, .. } => {
            let f = resolve_field(ctx, field, ty, Need::Any)?;
            if f.def.is_some() && f.storage() != Some(Storage::Keyword) {
                let t = ctx
                    .mapping
                    .field(field)
                    .map(|d| d.ty.name())
                    .unwrap_or("unknown");
                return Err(EsError::illegal_argument(format!(
                    "Field [{field}] of type [{t}] is not supported for aggregation [string_stats]"
                )));
            }
            Op::StringStats(f)
        }
        AggKind::GeoMetric { field, .. } => match ctx.mapping.field(field) {
            Some(def) if def.ty != FieldType::GeoPoint => {
                return Err(EsError::illegal_argument(format!(
                    "Field [{field}] of type [{}] is not supported for aggregation [{ty}]",
                    def.ty.name()
                )))
            }
            def => Op::GeoMetric(FieldRef {
                name: field.clone(),
                def: def.cloned(),
            }),
        },
        AggKind::GeoGrid(g) => {
            if let Some(def) = ctx
                .mapping
                .field(&g.field)
                .filter(|d| d.ty != FieldType::GeoPoint)
            {
                return Err(EsError::illegal_argument(format!(
                    "Field [{}] of type [{}] is not supported for aggregation [{ty}]",
                    g.field,
                    def.ty.name()
                )));
            }
            sources.push(SourceSpec::GeoCells {
                field: g.field.clone(),
                grid: g.grid.clone(),
            });
            Op::GeoGrid {
                source: sources.len() - 1,
            }
        }
        AggKind::DigestMetric(d) => {
            let field = resolve_field(ctx, &d.field, ty, Need::Numeric)?;
            check_metric_missing(d.missing.as_ref(), &field, false)?;
            let format = metric_format(&field, d.format.as_deref())?;
            Op::DigestMetric(MetricOp { field, format })
        }
        AggKind::TopHits(_) => Op::TopHits,
        AggKind::SignificantTerms {
            terms,
            background_filter,
            ..
        } => {
            let op = plan_terms(node, terms, ctx, sources)?;
            if is_runtime_source(&op.field.name) {
                return Err(EsError::illegal_argument(format!(
                    "[significant_terms] aggregation [{}] on a script or runtime field is not supported by Lode",
                    node.name
                )));
            }
            match (op.kind, op.field.storage()) {
                // ES's `numericSupplier` refuses floating-point values sources.
                (TermsKind::Double, _) => {
                    return Err(EsError::new(
                        500,
                        "unsupported_operation_exception",
                        "No support for examining floating point numerics",
                    ))
                }
                (TermsKind::String, Some(Storage::Keyword))
                | (TermsKind::Long | TermsKind::Bool, _) => {}
                // An unmapped field: no buckets (ES's `UnmappedSignificantTerms`).
                (TermsKind::String, None) => {}
                (TermsKind::String, Some(_)) => {
                    return Err(EsError::illegal_argument(format!(
                        "significant_terms on [{}] is not supported by Lode: keyword, numeric, date and boolean fields are",
                        terms.field
                    )));
                }
            }
            sources.push(SourceSpec::Filters {
                queries: vec![Box::new(tantivy::query::AllQuery)],
                other: false,
            });
            // The background filter is built again at render time: here it is validated.
            if let Some(q) = background_filter {
                build_dsl(q, ctx)?;
            }
            Op::SignificantTerms {
                terms: op,
                docs: sources.len() - 1,
            }
        }
        AggKind::SignificantText(t) => {
            // A bucket's documents are those holding the term in the field's index: with
            // either option ES's bucket holds other documents.
            if !node.subs.is_empty() && (t.filter_duplicate_text || t.source_fields.is_some()) {
                return Err(EsError::illegal_argument(format!(
                    "sub-aggregations under [significant_text] aggregation [{}] with [filter_duplicate_text] or [source_fields] are not supported by Lode",
                    node.name
                )));
            }
            match ctx.mapping.field(&t.terms.field) {
                None if ctx.runtime.contains_key(&t.terms.field) => {
                    return Err(EsError::illegal_argument(format!(
                        "Field [{}] of type [{}] is not supported for aggregation [significant_text]",
                        t.terms.field, "runtime"
                    )))
                }
                Some(def) if def.storage() != Storage::Text => {
                    return Err(EsError::illegal_argument(format!(
                        "Field [{}] of type [{}] is not supported for aggregation [significant_text]",
                        t.terms.field,
                        def.ty.name()
                    )))
                }
                _ => {}
            }
            super::significant_text::check_filters(t)?;
            if let Some(q) = &t.background_filter {
                build_dsl(q, ctx)?;
            }
            Op::SignificantText
        }
        AggKind::TopMetrics(t) => {
            // `index.top_metrics_max_size` is not a setting of Lode: its default holds.
            if t.size > 10 {
                return Err(EsError::illegal_argument(format!(
                    "[top_metrics.size] must not be more than [10] but was [{}]. This limit can be set by changing the [index.top_metrics_max_size] index level setting.",
                    t.size
                )));
            }
            for f in &t.metrics {
                metric_field(ctx, f)?;
            }
            Op::TopMetrics
        }
        AggKind::RareTerms { terms, .. } => {
            let op = plan_terms(node, terms, ctx, sources)?;
            if op.kind == TermsKind::Double {
                return Err(EsError::illegal_argument(
                    "RareTerms aggregation does not support floating point fields.",
                ));
            }
            Op::RareTerms(op)
        }
        AggKind::MultiTerms(m) => Op::MultiTerms(
            m.terms
                .iter()
                .map(|t| plan_terms(node, t, ctx, sources))
                .collect::<EsResult<Vec<_>>>()?,
        ),
        AggKind::WeightedAvg(w) => {
            let column = |f: &FieldRef| match f.storage() {
                Some(Storage::F64) => super::sources::NumericColumn::F64,
                _ => super::sources::NumericColumn::I64,
            };
            let value = resolve_field(ctx, &w.value.field, ty, Need::Numeric)?;
            let weight = resolve_field(ctx, &w.weight.field, ty, Need::Numeric)?;
            let missing = |m: &Option<Value>| m.as_ref().and_then(|m| m.as_f64());
            let format = metric_format(&value, w.format.as_deref())?;
            for product in [true, false] {
                sources.push(SourceSpec::Weighted {
                    value: (
                        value.name.clone(),
                        column(&value),
                        missing(&w.value.missing),
                    ),
                    weight: (
                        weight.name.clone(),
                        column(&weight),
                        missing(&w.weight.missing),
                    ),
                    product,
                });
            }
            Op::WeightedAvg {
                format,
                product: sources.len() - 2,
                weight: sources.len() - 1,
            }
        }
    };
    finish_node(node, op, ctx, sources, ty)
}

/// Plans `node`'s sub-aggregations under its `op`.
fn finish_node<'r>(
    node: &'r AggNode,
    op: Op,
    ctx: &QueryContext,
    sources: &mut Vec<SourceSpec>,
    ty: &'static str,
) -> EsResult<PlanNode<'r>> {
    let subs = if matches!(op, Op::Nested { .. }) {
        NESTED_DEPTH.with(|c| c.set(c.get() + 1));
        let subs = plan_level(&node.subs, ctx, sources, Some(ty));
        NESTED_DEPTH.with(|c| c.set(c.get() - 1));
        subs?
    } else {
        plan_level(&node.subs, ctx, sources, Some(ty))?
    };
    validate_order(node, &subs)?;
    Ok(PlanNode {
        req: node,
        op,
        subs,
    })
}

/// Refuses, under a `nested` aggregation, what Lode cannot run over a bucket of nested
/// documents: `significant_text` and the samplers (their shard samples are the query's
/// best root documents). `auto_date_histogram` and `variable_width_histogram` read their
/// values from each enclosing bucket's documents there, nested objects included.
fn check_nested_subs(subs: &[AggNode]) -> EsResult<()> {
    for n in subs {
        if matches!(
            n.kind,
            AggKind::SignificantText(_)
                | AggKind::Sampler { .. }
                | AggKind::DiversifiedSampler { .. }
        ) {
            return Err(EsError::illegal_argument(format!(
                "[{}] aggregation [{}] under a [nested] aggregation is not supported by Lode",
                n.kind.type_name(),
                n.name
            )));
        }
        check_nested_subs(&n.subs)?;
    }
    Ok(())
}

thread_local! {
    /// How many `nested` aggregations enclose the node being planned.
    static NESTED_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The format of a date field (or of `format` if given), in `tz`.
pub(crate) fn date_format(
    field: &FieldRef,
    format: Option<&str>,
    tz: &Tz,
) -> EsResult<ValueFormat> {
    match format {
        Some(f) => ValueFormat::date(f, tz),
        None => Ok(ValueFormat::Date(
            field
                .def
                .as_ref()
                .filter(|d| {
                    d.ty.is_date()
                        || d.ty == FieldType::Range(lode_engine::range_field::RangeKind::Date)
                })
                .map(|d| d.date_format.clone())
                .unwrap_or_else(DateFormat::default_es),
            tz.clone(),
        )),
    }
}

fn metric_format(field: &FieldRef, format: Option<&str>) -> EsResult<ValueFormat> {
    if field.is_date() {
        return date_format(field, format, &Tz::utc());
    }
    match format {
        Some(f) => ValueFormat::decimal(f),
        None => Ok(ValueFormat::Raw),
    }
}

fn validate_order(node: &AggNode, subs: &[PlanNode]) -> EsResult<()> {
    let orders = match &node.kind {
        AggKind::Terms(t) => &t.order,
        AggKind::MultiTerms(m) => &m.base.order,
        AggKind::Histogram(h) => &h.order,
        AggKind::DateHistogram(d) => &d.order,
        _ => return Ok(()),
    };
    for o in orders {
        let OrderKey::Path { agg, metric } = &o.key else {
            continue;
        };
        let invalid = |why: &str| {
            Err(EsError::new(
                400,
                "aggregation_execution_exception",
                format!(
                    "Invalid aggregation order path [{}]. {why}",
                    path_string(agg, metric)
                ),
            ))
        };
        let Some(sub) = subs.iter().find(|s| s.req.name == *agg) else {
            return invalid(&format!("Unknown aggregation [{agg}]"));
        };
        match (&sub.op, metric) {
            (Op::Filters(f), None) if f.style == FiltersStyle::Single => {}
            (Op::Filters(f), Some(m))
                if f.style == FiltersStyle::Single && (m == "doc_count" || m == "_count") => {}
            (Op::WeightedAvg { .. }, None) => {}
            (Op::WeightedAvg { .. }, Some(name)) if name == "value" => {}
            (Op::Metric(_), None) => {
                if let AggKind::Metric(m) = &sub.req.kind {
                    if matches!(m.kind, MetricKind::Stats | MetricKind::ExtendedStats) {
                        return invalid("When ordering on a multi-value metrics aggregation a metric name must be specified.");
                    }
                }
            }
            (Op::Metric(_), Some(name)) => {
                let ok = match &sub.req.kind {
                    AggKind::Metric(m) => match m.kind {
                        MetricKind::Stats => ["count", "min", "max", "avg", "sum"].contains(&name.as_str()),
                        MetricKind::ExtendedStats => [
                            "count", "min", "max", "avg", "sum", "sum_of_squares", "variance",
                            "std_deviation",
                        ]
                        .contains(&name.as_str()),
                        _ => name == "value",
                    },
                    _ => false,
                };
                if !ok {
                    return invalid(&format!("Unknown metric name [{name}] on multi-value metrics aggregation [{agg}]"));
                }
            }
            _ => return invalid("Buckets can only be sorted on a sub-aggregator path that is built out of zero or more single-bucket aggregations within the path and a final single-bucket or a metrics aggregation at the path end."),
        }
    }
    Ok(())
}

fn path_string(agg: &str, metric: &Option<String>) -> String {
    match metric {
        Some(m) => format!("{agg}.{m}"),
        None => agg.to_string(),
    }
}

fn plan_terms(
    node: &AggNode,
    t: &TermsReq,
    ctx: &QueryContext,
    sources: &mut Vec<SourceSpec>,
) -> EsResult<TermsOp> {
    let mut field = resolve_field(ctx, &t.field, "terms", Need::Any)?;
    if is_runtime_source(&field.name) {
        // tantivy filters and fills terms from a column's dictionary, which a runtime
        // field has not.
        let refused = if t.include.is_some() || t.exclude.is_some() {
            Some("include/exclude")
        } else if t.min_doc_count == 0 {
            Some("min_doc_count: 0")
        } else {
            None
        };
        if let Some(what) = refused {
            return Err(EsError::illegal_argument(format!(
                "[{what}] of aggregation [{}] on runtime field [{}] is not supported by Lode",
                node.name,
                shown_field(&t.field)
            )));
        }
    }
    let kind = match field.storage() {
        Some(Storage::I64) => TermsKind::Long,
        Some(Storage::F64) => TermsKind::Double,
        Some(Storage::Bool) => TermsKind::Bool,
        _ => TermsKind::String,
    };
    let format = if field.is_date() {
        date_format(&field, t.format.as_deref(), &Tz::utc())?
    } else {
        match (&t.format, kind) {
            (Some(f), TermsKind::Long | TermsKind::Double) => ValueFormat::decimal(f)?,
            _ => ValueFormat::Raw,
        }
    };
    // ES's `TermsAggregatorFactory`: without a `shard_size`, a shard returns `size * 1.5 + 10`
    // candidates, except under a key order (`_key` first), where the shard's top `size` by key
    // are the right ones and it returns exactly `size`.
    let key_order = matches!(t.order.first(), Some(o) if o.key == OrderKey::Key);
    let default_shard_size = if key_order {
        t.size
    } else {
        ((t.size as f64) * 1.5 + 10.0) as usize
    };
    let shard_size = t.shard_size.unwrap_or(default_shard_size).max(t.size);
    let tantivy_missing = match &t.missing {
        None => None,
        Some(m) => Some(match kind {
            TermsKind::String => Value::String(match m {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
            TermsKind::Long if field.is_date() => {
                let def = field.def.as_ref().expect("mapped");
                let ms = def.date_format.parse_json(m, &Tz::utc()).map_err(|e| {
                    EsError::illegal_argument(format!(
                        "failed to parse [missing] of [{}]: {}",
                        node.name, e.reason
                    ))
                })?;
                json!(ms)
            }
            TermsKind::Long | TermsKind::Double => json!(number(m).ok_or_else(|| {
                EsError::illegal_argument(format!("For input string: \"{}\"", scalar(m)))
            })?),
            // tantivy's terms takes no `missing` on a boolean column: a computed column
            // gives it (below), parsed as ES's boolean `DocValueFormat`.
            TermsKind::Bool => {
                if is_runtime_source(&field.name) {
                    return Err(EsError::illegal_argument(
                        "[missing] is not supported by Lode for terms aggregations on boolean runtime fields",
                    ));
                }
                match scalar(m).as_str() {
                    "true" => json!(true),
                    "false" => json!(false),
                    other => {
                        return Err(EsError::illegal_argument(format!(
                            "Cannot parse boolean [{other}], expected either [true] or [false]"
                        )))
                    }
                }
            }
        }),
    };
    let (tantivy_missing, bool_missing, mut source_field) = match tantivy_missing {
        Some(Value::Bool(b)) => {
            sources.push(SourceSpec::Bools {
                field: field.name.clone(),
                missing: b,
            });
            (None, Some(b), Some(source_name(sources.len() - 1)))
        }
        other => (other, None, None),
    }; // tantivy takes no text `missing` for a computed source: the runtime source gives it.
    let tantivy_missing = match tantivy_missing {
        Some(Value::String(m)) if is_runtime_source(&field.name) => {
            field.name = with_missing(&field.name, &m);
            None
        }
        // A keyword's `missing` equal to a term of a segment would collide with tantivy's
        // bucket for it: a computed column gives such documents the term instead.
        Some(Value::String(m))
            if source_field.is_none() && field.storage() == Some(Storage::Keyword) =>
        {
            sources.push(SourceSpec::KeywordMissing {
                field: field.name.clone(),
                missing: m.clone(),
            });
            source_field = Some(source_name(sources.len() - 1));
            Some(Value::String(m))
        }
        other => other,
    };

    let mut op = TermsOp {
        field,
        kind,
        shard_size,
        format,
        numeric_include: None,
        numeric_exclude: None,
        string_include: None,
        tantivy_missing,
        bool_missing,
        source_field,
        tantivy_include: None,
        tantivy_exclude: None,
        partition: None,
    };
    for (filter, is_include) in [(&t.include, true), (&t.exclude, false)] {
        let Some(filter) = filter else { continue };
        match (kind, filter) {
            (
                _,
                IncludeExclude::Partition {
                    partition,
                    num_partitions,
                },
            ) => op.partition = Some((*partition, *num_partitions)),
            (TermsKind::String, IncludeExclude::Regex(r)) => {
                regex::Regex::new(r).map_err(|e| {
                    EsError::illegal_argument(format!("Invalid regular expression [{r}]: {e}"))
                })?;
                let v = Some(Value::String(r.clone()));
                if is_include { op.tantivy_include = v } else { op.tantivy_exclude = v }
            }
            (TermsKind::String, IncludeExclude::Values(vals)) => {
                let v = Some(Value::Array(vals.iter().map(|x| Value::String(scalar(x))).collect()));
                if is_include { op.tantivy_include = v } else { op.tantivy_exclude = v }
            }
            (_, IncludeExclude::Values(vals)) => {
                let nums = vals
                    .iter()
                    .map(|x| {
                        if op.field.is_date() {
                            let def = op.field.def.as_ref().expect("mapped");
                            def.date_format.parse_json(x, &Tz::utc()).map(|v| v as f64).ok()
                        } else if kind == TermsKind::Bool {
                            match x {
                                Value::Bool(b) => Some(*b as u8 as f64),
                                Value::String(s) if s == "true" => Some(1.0),
                                Value::String(s) if s == "false" => Some(0.0),
                                other => number(other),
                            }
                        } else {
                            number(x)
                        }
                        .ok_or_else(|| EsError::illegal_argument(format!("For input string: \"{}\"", scalar(x))))
                    })
                    .collect::<EsResult<Vec<f64>>>()?;
                if is_include { op.numeric_include = Some(nums) } else { op.numeric_exclude = Some(nums) }
            }
            (_, IncludeExclude::Regex(_)) => {
                return Err(EsError::new(
                    400,
                    "aggregation_execution_exception",
                    format!(
                        "Aggregation [{}] cannot support regular expression style include/exclude settings as they can only be applied to string fields. Use an array of numeric values for include/exclude clauses used to filter numeric fields",
                        node.name
                    ),
                ))
            }
        }
    }
    // The `missing` value goes through `include`/`exclude` as a term (ES filters the values
    // `MissingValues` gives): tantivy's filters, resolved in each segment's dictionary, drop
    // its bucket under any `include` and keep it under any `exclude`.
    if let (TermsKind::String, Some(Value::String(m))) = (kind, &op.tantivy_missing) {
        let matches = |f: &Value| match f {
            Value::String(r) => {
                regex::Regex::new(&format!("^(?:{r})$")).is_ok_and(|r| r.is_match(m))
            }
            Value::Array(vals) => vals.iter().any(|v| v.as_str() == Some(m.as_str())),
            _ => false,
        };
        let included = op.tantivy_include.as_ref().is_none_or(matches);
        let excluded = op.tantivy_exclude.as_ref().is_some_and(matches);
        if !included || excluded {
            op.tantivy_missing = None;
        } else if op.tantivy_include.is_some() {
            // Kept: the include is applied when rendering instead.
            op.string_include = match op.tantivy_include.take() {
                Some(Value::String(r)) => Some(StringInclude::Regex(
                    regex::Regex::new(&format!("^(?:{r})$")).map_err(|e| {
                        EsError::illegal_argument(format!("Invalid regular expression [{r}]: {e}"))
                    })?,
                )),
                Some(Value::Array(vals)) => Some(StringInclude::Values(
                    vals.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect(),
                )),
                _ => None,
            };
        }
    }
    Ok(op)
}

/// A keyword `include` applied when rendering: an anchored regex or a set of terms.
pub(crate) enum StringInclude {
    Regex(regex::Regex),
    Values(std::collections::HashSet<String>),
}

impl TermsOp {
    /// Whether a bucket key passes the filters applied when rendering (numeric
    /// `include`/`exclude`, and a keyword `include` that `missing` passes).
    pub(crate) fn keeps(&self, key: &tantivy::aggregation::Key) -> bool {
        let x = super::render::key_f64(key);
        let string_ok = match (&self.string_include, key) {
            (None, _) => true,
            (Some(StringInclude::Regex(r)), tantivy::aggregation::Key::Str(k)) => r.is_match(k),
            (Some(StringInclude::Values(vals)), tantivy::aggregation::Key::Str(k)) => {
                vals.contains(k)
            }
            (Some(_), _) => false,
        };
        string_ok
            && self.partition.is_none_or(|(p, n)| {
                partition_accepts(
                    self.kind,
                    self.field.storage() == Some(Storage::Ip),
                    key,
                    p,
                    n,
                )
            })
            && self
                .numeric_include
                .as_ref()
                .is_none_or(|inc| inc.contains(&x))
            && self
                .numeric_exclude
                .as_ref()
                .is_none_or(|exc| !exc.contains(&x))
    }
}

/// Hppc's `BitMixer.mix64`, with which ES spreads numeric terms over partitions.
fn mix64(z: i64) -> i64 {
    let mut z = z as u64;
    z = (z ^ (z >> 32)).wrapping_mul(0x4cd6_944c_5cc2_0b6d);
    z = (z ^ (z >> 29)).wrapping_mul(0xfc12_c5b1_9d32_59e9);
    (z ^ (z >> 32)) as i64
}

/// Whether a bucket key falls in partition `p` of `n`, as ES's `IncludeExclude` decides it:
/// keywords by `floorMod(murmurhash3_x86_32(utf-8 bytes, seed 31), n)` (an `ip` by its
/// 16-byte encoding, IPv4 mapped to IPv6), longs, dates and booleans (0/1) by
/// `floorMod(mix64(value), n)`, doubles by `mix64` of `NumericUtils.doubleToSortableLong`.
pub(crate) fn partition_accepts(
    kind: TermsKind,
    is_ip: bool,
    key: &tantivy::aggregation::Key,
    p: u32,
    n: u32,
) -> bool {
    use tantivy::aggregation::Key;
    let n = n as i64;
    let hash = match (kind, key) {
        (TermsKind::String, Key::Str(s)) => {
            let ip = is_ip
                .then(|| s.parse::<std::net::IpAddr>().ok())
                .flatten()
                .map(|ip| match ip {
                    std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
                    std::net::IpAddr::V6(v6) => v6.octets(),
                });
            let h = match ip {
                Some(bytes) => lode_engine::index::murmur3_32_seeded::<31>(&bytes),
                None => lode_engine::index::murmur3_32_seeded::<31>(s.as_bytes()),
            };
            (h as i32) as i64
        }
        (TermsKind::Double, k) => {
            let bits = super::render::key_f64(k).to_bits() as i64;
            mix64(bits ^ ((bits >> 63) & 0x7fff_ffff_ffff_ffff))
        }
        (_, Key::I64(x)) => mix64(*x),
        (_, Key::U64(x)) => mix64(*x as i64),
        (_, k) => mix64(super::render::key_f64(k) as i64),
    };
    hash.rem_euclid(n) == p as i64
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A date bound (number, date string or date math) in milliseconds.
fn date_bound(v: &Value, format: &DateFormat, tz: &Tz, now: i64, what: &str) -> EsResult<i64> {
    match v {
        Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0) as i64),
        Value::String(s) => date_math(s, format, tz, now, what),
        other => Err(EsError::x_content_parse(format!(
            "[{what}] unsupported value [{other}]"
        ))),
    }
}

/// A `date_range` bound: numbers go through the format too (`1000` is 1000 seconds for an
/// `epoch_second` field), as Elasticsearch parses them.
fn date_range_bound(
    v: &Value,
    format: &DateFormat,
    tz: &Tz,
    now: i64,
    what: &str,
) -> EsResult<i64> {
    match v {
        Value::Number(n) => {
            let text = match n.as_i64() {
                Some(i) => i.to_string(),
                None => (n.as_f64().unwrap_or(0.0) as i64).to_string(),
            };
            date_math(&text, format, tz, now, what)
        }
        other => date_bound(other, format, tz, now, what),
    }
}

fn date_math(s: &str, format: &DateFormat, tz: &Tz, now: i64, what: &str) -> EsResult<i64> {
    parse_date_math(s, now, format, tz, false).map_err(|e| {
        EsError::new(
            400,
            "parse_exception",
            format!(
                "failed to parse date field [{s}] with format [{}]: [{}]",
                format.spec(),
                e.reason
            ),
        )
        .caused_by(EsError::illegal_argument(format!("failed to parse {what}")))
    })
}

fn plan_date_histogram(
    d: &DateHistogramReq,
    ctx: &QueryContext,
    sources: &mut Vec<SourceSpec>,
    ty: &str,
) -> EsResult<DateHistogramOp> {
    // `auto_date_histogram` reads numbers and dates only, as ES's.
    let range = if ty == "date_histogram" {
        range_field(ctx, &d.field)?
    } else {
        None
    };
    if let Some((_, kind)) = range {
        if d.missing.is_some() {
            return Err(range_missing_error());
        }
        if kind != RangeKind::Date {
            return Err(EsError::illegal_argument(format!(
                "Expected date range type but found range type [{}]",
                kind.type_name()
            )));
        }
    }
    let field = match &range {
        Some((def, _)) => FieldRef {
            name: d.field.clone(),
            def: Some(def.clone()),
        },
        None => resolve_field(ctx, &d.field, ty, Need::Numeric)?,
    };
    if field.storage() == Some(Storage::F64) {
        return Err(EsError::illegal_argument(format!(
            "Field [{}] of type [{}] is not supported for aggregation [{ty}]",
            field.name,
            field.ty().map(FieldType::name).unwrap_or("unknown")
        )));
    }
    let tz = &d.time_zone;
    let rounding = match d.interval {
        DateInterval::Calendar(unit) => DateRounding::calendar(unit, tz, d.offset),
        DateInterval::Fixed(ms) => DateRounding::fixed(ms, tz, d.offset),
    };
    let format = date_format(&field, d.format.as_deref(), tz)?;
    let parse_format = match &format {
        ValueFormat::Date(f, _) => f.clone(),
        _ => DateFormat::default_es(),
    };
    let bounds = |b: &Option<(Option<Value>, Option<Value>)>,
                  what: &str|
     -> EsResult<Option<(Option<i64>, Option<i64>)>> {
        let Some((min, max)) = b else { return Ok(None) };
        let min = min
            .as_ref()
            .map(|v| date_bound(v, &parse_format, tz, ctx.now_millis, what))
            .transpose()?;
        let max = max
            .as_ref()
            .map(|v| date_bound(v, &parse_format, tz, ctx.now_millis, what))
            .transpose()?;
        if let (Some(a), Some(b)) = (min, max) {
            if a > b {
                return Err(EsError::illegal_argument(format!(
                    "[{what}.min][{a}] cannot be greater than [{what}.max][{b}]."
                )));
            }
        }
        Ok(Some((min, max)))
    };
    let extended_bounds = bounds(&d.extended_bounds, "extended_bounds")?;
    let hard_bounds = bounds(&d.hard_bounds, "hard_bounds")?;
    let missing = d
        .missing
        .as_ref()
        .map(|v| date_range_bound(v, &parse_format, tz, ctx.now_millis, "missing"))
        .transpose()?;
    if range.is_some() {
        sources.push(SourceSpec::RangeBuckets {
            field: field.name.clone(),
            kind: RangeKind::Date,
            bucketing: super::sources::RangeBucketing::Date {
                rounding: rounding.clone(),
                hard: hard_bounds.unwrap_or((None, None)),
            },
        });
        return Ok(DateHistogramOp {
            field,
            rounding,
            source: Some(sources.len() - 1),
            format,
            extended_bounds,
            hard_bounds,
            range: true,
            missing: None,
        });
    }
    let source = match &rounding {
        DateRounding::Indexed(ix) => {
            sources.push(SourceSpec::Dates {
                field: field.name.clone(),
                rounding: ix.clone(),
                missing,
            });
            Some(sources.len() - 1)
        }
        // tantivy's histogram has no `missing`: it reads the field through a source that
        // gives it.
        DateRounding::Native { .. } => missing.map(|m| {
            sources.push(SourceSpec::Values {
                field: field.name.clone(),
                column: super::sources::NumericColumn::I64,
                missing: m as f64,
                as_i64: true,
            });
            sources.len() - 1
        }),
    };
    Ok(DateHistogramOp {
        field,
        rounding,
        source,
        format,
        extended_bounds,
        hard_bounds,
        range: false,
        missing,
    })
}

/// A numeric values source's `missing`, as ES's `ValuesSourceConfig` parses it: through the
/// date format (UTC) when the aggregation's format is one, as a double otherwise.
fn numeric_missing(ctx: &QueryContext, v: &Value, format: &ValueFormat) -> EsResult<f64> {
    Ok(match format {
        ValueFormat::Date(f, _) => {
            date_range_bound(v, f, &Tz::utc(), ctx.now_millis, "missing")? as f64
        }
        _ => number(v).ok_or_else(|| {
            EsError::illegal_argument(format!("For input string: \"{}\"", scalar(v)))
        })?,
    })
}

/// `variable_width_histogram`'s `missing` against an index's mapping (read before planning,
/// when its values are clustered).
pub(crate) fn vwh_missing(ctx: &QueryContext, req: &super::vwh::VwhReq) -> EsResult<Option<f64>> {
    let Some(v) = &req.missing else {
        return Ok(None);
    };
    let field = resolve_field(ctx, &req.field, "variable_width_histogram", Need::Numeric)?;
    let format = metric_format(&field, req.format.as_deref())?;
    numeric_missing(ctx, v, &format).map(Some)
}

/// `diversified_sampler`'s `missing` as the key a document's values make
/// (`sources::doc_key`): the keyword itself, or the number (a date in milliseconds, parsed
/// with the field's format) as the column's values print.
fn diversify_missing_key(ctx: &QueryContext, field: &FieldRef, v: &Value) -> EsResult<String> {
    let bad = || EsError::illegal_argument(format!("For input string: \"{}\"", scalar(v)));
    Ok(match field.storage() {
        Some(Storage::F64) => number(v).ok_or_else(bad)?.to_string(),
        Some(Storage::I64) if field.is_date() => {
            let format = match date_format(field, None, &Tz::utc())? {
                ValueFormat::Date(f, _) => f,
                _ => DateFormat::default_es(),
            };
            date_range_bound(v, &format, &Tz::utc(), ctx.now_millis, "missing")?.to_string()
        }
        Some(Storage::I64) => (number(v).ok_or_else(bad)?.floor() as i64).to_string(),
        _ => scalar(v),
    })
}

/// A `date_histogram`'s (or `auto_date_histogram`'s) `missing`, in milliseconds: parsed with
/// the aggregation's format (or the field's) and time zone, as planning parses it.
pub(crate) fn date_histogram_missing(
    ctx: &QueryContext,
    d: &DateHistogramReq,
    ty: &str,
) -> EsResult<Option<i64>> {
    let Some(v) = &d.missing else {
        return Ok(None);
    };
    let field = resolve_field(ctx, &d.field, ty, Need::Numeric)?;
    let parse_format = match date_format(&field, d.format.as_deref(), &d.time_zone)? {
        ValueFormat::Date(f, _) => f,
        _ => DateFormat::default_es(),
    };
    date_range_bound(v, &parse_format, &d.time_zone, ctx.now_millis, "missing").map(Some)
}

/// ES's range values source refuses `missing` (`CoreValuesSourceType.RANGE#replaceMissing`).
fn range_missing_error() -> EsError {
    EsError::illegal_argument(
        "Can't apply missing values on a class org.elasticsearch.search.aggregations.support.ValuesSource$Range",
    )
}

fn plan_histogram(
    ctx: &QueryContext,
    h: &HistogramReq,
    ty: &str,
    sources: &mut Vec<SourceSpec>,
) -> EsResult<Op> {
    let field = resolve_field(ctx, &h.field, ty, Need::Numeric)?;
    let format = match &h.format {
        _ if field.is_date() => date_format(&field, h.format.as_deref(), &Tz::utc())?,
        Some(f) => ValueFormat::decimal(f)?,
        None => ValueFormat::Raw,
    };
    // `missing` is parsed as ES's `ValuesSourceConfig` does: through the date format on a
    // date field, as a double otherwise. tantivy's histogram has none: a source gives it.
    let mut missing_value = None;
    let field = match &h.missing {
        None => field.name,
        Some(v) => {
            let missing = numeric_missing(ctx, v, &format)?;
            sources.push(SourceSpec::Values {
                column: match field.storage() {
                    Some(Storage::F64) => super::sources::NumericColumn::F64,
                    _ => super::sources::NumericColumn::I64,
                },
                field: field.name,
                missing,
                as_i64: false,
            });
            missing_value = Some(missing);
            source_name(sources.len() - 1)
        }
    };
    Ok(Op::Histogram {
        format,
        field,
        range: false,
        missing: missing_value,
    })
}

/// A range field's mapping and kind, when `name` is one (`histogram` and `date_histogram`
/// read them as ES's range aggregators do).
fn range_field(ctx: &QueryContext, name: &str) -> EsResult<Option<(Arc<FieldDef>, RangeKind)>> {
    if ctx.runtime.get(name).is_some() {
        return Ok(None);
    }
    let Some(def) = ctx.mapping.field(name) else {
        return Ok(None);
    };
    let FieldType::Range(kind) = def.ty else {
        return Ok(None);
    };
    if !def.doc_values {
        return Err(EsError::illegal_argument(format!(
            "Can't load fielddata on [{name}] because fielddata is unsupported on fields of type [{}]. Use doc values instead.",
            kind.type_name()
        )));
    }
    Ok(Some((def.clone(), kind)))
}

fn plan_range(
    r: &RangeReq,
    ty: &str,
    ctx: &QueryContext,
    sources: &mut Vec<SourceSpec>,
) -> EsResult<RangeOp> {
    let field = resolve_field(ctx, &r.field, ty, Need::Numeric)?;
    let tz = r.time_zone.clone().unwrap_or_else(Tz::utc);
    let dates = r.is_date || field.is_date();
    let format = if dates {
        date_format(&field, r.format.as_deref(), &tz)?
    } else {
        match &r.format {
            Some(f) => ValueFormat::decimal(f)?,
            None => ValueFormat::Raw,
        }
    };
    let parse_format = match &format {
        ValueFormat::Date(f, _) => f.clone(),
        _ => DateFormat::default_es(),
    };
    let bound = |v: &Option<Value>, what: &str| -> EsResult<Option<f64>> {
        match v {
            None => Ok(None),
            Some(v) if dates => {
                Ok(Some(
                    date_range_bound(v, &parse_format, &tz, ctx.now_millis, what)? as f64,
                ))
            }
            Some(v) => number(v).map(Some).ok_or_else(|| {
                EsError::illegal_argument(format!("For input string: \"{}\"", scalar(v)))
            }),
        }
    };
    let mut defs = Vec::new();
    for spec in &r.ranges {
        let from = bound(&spec.from, "from")?;
        let to = bound(&spec.to, "to")?;
        let key = match &spec.key {
            Some(k) => k.clone(),
            None => {
                let side = |b: Option<f64>| match b {
                    None => "*".to_string(),
                    Some(x) => format.format(x).unwrap_or_else(|| java_double(x)),
                };
                format!("{}-{}", side(from), side(to))
            }
        };
        defs.push(RangeBucketDef { key, from, to });
    }
    // Elasticsearch orders range buckets by `from`, then `to`.
    defs.sort_by(|a, b| {
        let lo = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
        let hi = |x: Option<f64>| x.unwrap_or(f64::INFINITY);
        lo(a.from)
            .total_cmp(&lo(b.from))
            .then(hi(a.to).total_cmp(&hi(b.to)))
    });
    let missing = match &r.missing {
        None => None,
        Some(v) if dates => {
            Some(date_range_bound(v, &parse_format, &tz, ctx.now_millis, "missing")? as f64)
        }
        Some(v) => Some(number(v).ok_or_else(|| {
            EsError::illegal_argument(format!("For input string: \"{}\"", scalar(v)))
        })?),
    };
    sources.push(SourceSpec::Ranges {
        field: field.name.clone(),
        column: match field.storage() {
            Some(Storage::F64) => super::sources::NumericColumn::F64,
            _ => super::sources::NumericColumn::I64,
        },
        ranges: defs
            .iter()
            .map(|d| {
                (
                    d.from.unwrap_or(f64::NEG_INFINITY),
                    d.to.unwrap_or(f64::INFINITY),
                )
            })
            .collect(),
        missing,
    });
    Ok(RangeOp {
        field,
        source: sources.len() - 1,
        ranges: defs,
        format,
        missing,
    })
}

/// A top-level `variable_width_histogram`: a `range` over its buckets' intervals, which its
/// sub-aggregations are collected under.
fn plan_vwh(
    buckets: &[super::vwh::Cluster],
    field: FieldRef,
    format: ValueFormat,
    missing: Option<f64>,
    sources: &mut Vec<SourceSpec>,
) -> Op {
    let mut ranges = super::vwh::bucket_ranges(buckets);
    if ranges.is_empty() {
        // No buckets: one range that matches nothing keeps tantivy's request valid.
        ranges.push((f64::INFINITY, f64::INFINITY));
    }
    sources.push(SourceSpec::Ranges {
        field: field.name.clone(),
        column: match field.storage() {
            Some(Storage::F64) => super::sources::NumericColumn::F64,
            _ => super::sources::NumericColumn::I64,
        },
        ranges: ranges.clone(),
        missing,
    });
    Op::Range(RangeOp {
        field,
        source: sources.len() - 1,
        ranges: ranges
            .iter()
            .map(|&(from, to)| RangeBucketDef {
                key: String::new(),
                from: Some(from),
                to: Some(to),
            })
            .collect(),
        format,
        missing,
    })
}

/// A double as Java's `Double.toString` prints it (`100.0`, `1.0E7`).
pub(crate) fn java_double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = x.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        let s = format!("{x}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    let s = format!("{x:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exp}")
}

// ---------------------------------------------------------------------------------------------
// The tantivy request

impl Plan<'_> {
    /// The tantivy request for `nodes` at `stage` (the roots, a `global` aggregation's
    /// sub-aggregations, or a node tantivy did not report in an empty bucket).
    pub fn request_for(
        nodes: &[PlanNode],
        stage: Stage,
    ) -> EsResult<tantivy::aggregation::agg_req::Aggregations> {
        to_aggregations(tantivy_level(nodes, stage))
    }
}

impl Plan<'_> {
    /// The request that applies `shard_min_doc_count` to a shard's exact results (with
    /// tantivy's final-mode prune: its `min_doc_count` filter, nothing cut), or `None` when no
    /// terms aggregation asks for it. Composite and multi-terms nodes are left out: their
    /// final-mode prune would trim them.
    pub fn shard_min_request(
        nodes: &[PlanNode],
    ) -> EsResult<Option<tantivy::aggregation::agg_req::Aggregations>> {
        fn asks(nodes: &[PlanNode]) -> bool {
            nodes.iter().any(|n| {
                matches!((&n.req.kind, &n.op), (AggKind::Terms(t), Op::Terms(_)) if t.shard_min_doc_count > 0)
                    || asks(&n.subs)
            })
        }
        if !asks(nodes) {
            return Ok(None);
        }
        let mut level = tantivy_level(nodes, Stage::ShardPrune);
        shard_min_level(nodes, &mut level);
        to_aggregations(level).map(Some)
    }
}

fn shard_min_level(nodes: &[PlanNode], level: &mut Map<String, Value>) {
    for n in nodes {
        if matches!(n.op, Op::MultiTerms(_) | Op::Composite(_)) {
            level.remove(&n.req.name);
            continue;
        }
        let Some(Value::Object(agg)) = level.get_mut(&n.req.name) else {
            continue;
        };
        if let (AggKind::Terms(t), Some(Value::Object(body))) = (&n.req.kind, agg.get_mut("terms"))
        {
            body.insert("size".into(), json!(ALL));
            body.insert("segment_size".into(), json!(ALL));
            body.insert("min_doc_count".into(), json!(t.shard_min_doc_count));
        }
        if let Some(Value::Object(subs)) = agg.get_mut("aggs") {
            shard_min_level(&n.subs, subs);
        }
    }
}

fn to_aggregations(v: Map<String, Value>) -> EsResult<tantivy::aggregation::agg_req::Aggregations> {
    serde_json::from_value(Value::Object(v))
        .map_err(|e| EsError::internal(format!("failed to build the aggregation request: {e}")))
}

fn tantivy_level(nodes: &[PlanNode], stage: Stage) -> Map<String, Value> {
    let mut out = Map::new();
    for n in nodes {
        if let Op::MultiTerms(ops) = &n.op {
            // Innermost level first: it holds the sub-aggregations.
            let mut inner: Option<Value> = None;
            for op in ops.iter().rev() {
                let mut body = json!({
                    "field": op.source_field.as_ref().unwrap_or(&op.field.name),
                    "size": ALL,
                    "segment_size": ALL,
                    "min_doc_count": 1,
                    "order": {"_count": "desc"},
                });
                if let Some(m) = &op.tantivy_missing {
                    body.as_object_mut()
                        .expect("object")
                        .insert("missing".into(), m.clone());
                }
                let mut agg = Map::new();
                agg.insert("terms".into(), body);
                let subs = match inner.take() {
                    Some(level) => {
                        let mut m = Map::new();
                        m.insert(MULTI_TERMS_LEVEL.to_string(), level);
                        m
                    }
                    None => tantivy_level(&n.subs, stage),
                };
                if !subs.is_empty() {
                    agg.insert("aggs".into(), Value::Object(subs));
                }
                inner = Some(Value::Object(agg));
            }
            if let Some(level) = inner {
                out.insert(n.req.name.clone(), level);
            }
            continue;
        }
        if let Some(body) = tantivy_node(n, stage) {
            let mut agg = Map::new();
            let (ty, def) = body;
            agg.insert(ty.to_string(), def);
            let subs = tantivy_level(&n.subs, stage);
            if !subs.is_empty() {
                agg.insert("aggs".into(), Value::Object(subs));
            }
            out.insert(n.req.name.clone(), Value::Object(agg));
        }
        if let Op::SignificantTerms { docs, .. } = &n.op {
            out.insert(
                docs_count_name(&n.req.name),
                json!({"range": {"field": source_name(*docs), "ranges": unit_ranges(1)}}),
            );
        }
        if let Op::WeightedAvg { weight, .. } = &n.op {
            out.insert(
                weight_sum_name(&n.req.name),
                json!({"sum": {"field": source_name(*weight)}}),
            );
        }
    }
    out
}

/// One unit range per bucket, over the 1-based bucket numbers the sources emit.
fn unit_ranges(n: usize) -> Value {
    Value::Array(
        (1..=n)
            .map(|i| json!({"from": i as f64, "to": (i + 1) as f64}))
            .collect(),
    )
}

fn tantivy_order(order: &BucketOrder) -> Value {
    let target = match &order.key {
        OrderKey::Count => "_count".to_string(),
        OrderKey::Key => "_key".to_string(),
        OrderKey::Path { agg, metric } => path_string(agg, metric),
    };
    json!({ target: if order.asc { "asc" } else { "desc" } })
}

fn bounds_json(b: Option<(Option<f64>, Option<f64>)>, extended: bool) -> Option<Value> {
    let (min, max) = b?;
    // One-sided bounds leave the other side to the data.
    let (lo, hi) = if extended {
        (min.unwrap_or(f64::MAX), max.unwrap_or(f64::MIN))
    } else {
        (min.unwrap_or(f64::MIN), max.unwrap_or(f64::MAX))
    };
    Some(json!({"min": lo, "max": hi}))
}

fn tantivy_node(n: &PlanNode, stage: Stage) -> Option<(&'static str, Value)> {
    let src = |i: usize| Value::String(source_name(i));
    Some(match (&n.req.kind, &n.op) {
        (AggKind::Terms(t), Op::Terms(op)) => {
            let orders_by_bucket = match &t.order[0].key {
                OrderKey::Path { agg, .. } => n
                    .subs
                    .iter()
                    .any(|s| s.req.name == *agg && !matches!(s.op, Op::Metric(_))),
                _ => false,
            };
            let order = if orders_by_bucket {
                // tantivy orders by metrics only: nothing is cut, rendering orders.
                json!({"_count": "desc"})
            } else {
                tantivy_order(&t.order[0])
            };
            let (size, segment_size) = match stage {
                Stage::Collect | Stage::Final => (ALL, ALL),
                Stage::ShardPrune
                    if orders_by_bucket
                        || op.numeric_include.is_some()
                        || op.numeric_exclude.is_some()
                        || op.string_include.is_some()
                        || op.partition.is_some() =>
                {
                    (ALL, ALL)
                }
                Stage::ShardPrune => (t.size as u64, op.shard_size as u64),
            };
            let mut body = json!({
                "field": op.source_field.as_ref().unwrap_or(&op.field.name),
                "size": size,
                "segment_size": segment_size,
                "show_term_doc_count_error": true,
                "min_doc_count": t.min_doc_count,
                "order": order,
            });
            let o = body.as_object_mut().expect("object");
            if let Some(m) = &op.tantivy_missing {
                o.insert("missing".into(), m.clone());
            }
            if let Some(i) = &op.tantivy_include {
                o.insert("include".into(), i.clone());
            }
            if let Some(e) = &op.tantivy_exclude {
                o.insert("exclude".into(), e.clone());
            }
            ("terms", body)
        }
        (AggKind::Histogram(h), Op::Histogram { field, range, .. }) => {
            let extended = if h.min_doc_count == 0 {
                clip(h.extended_bounds, h.hard_bounds)
            } else {
                None
            };
            let mut body = json!({
                "field": field,
                "interval": h.interval,
                "offset": h.offset,
                "min_doc_count": h.min_doc_count,
            });
            let o = body.as_object_mut().expect("object");
            if let Some(b) = bounds_json(extended, true) {
                o.insert("extended_bounds".into(), b);
            }
            if let Some(b) = bounds_json(h.hard_bounds.filter(|_| !range), false) {
                o.insert("hard_bounds".into(), b);
            }
            ("histogram", body)
        }
        (kind, Op::DateHistogram(op)) => {
            let d = kind
                .as_date_histogram()
                .expect("date histogram ops come from date histograms");
            let to_f = |b: Option<(Option<i64>, Option<i64>)>| {
                b.map(|(a, c)| (a.map(|x| x as f64), c.map(|x| x as f64)))
            };
            let (field, interval, offset, ext, hard) = match (&op.rounding, op.source) {
                (DateRounding::Native { interval, offset }, _) => (
                    // A range field's buckets, or the field with its `missing` value.
                    match op.source {
                        Some(s) => src(s),
                        None => Value::String(op.field.name.clone()),
                    },
                    *interval as f64,
                    *offset as f64,
                    to_f(op.extended_bounds),
                    to_f(op.hard_bounds),
                ),
                (DateRounding::Indexed(ix), Some(s)) => {
                    let index = |b: Option<(Option<i64>, Option<i64>)>| {
                        b.map(|(lo, hi)| {
                            (
                                lo.map(|t| ix.bucket_of(t).0 as f64),
                                hi.map(|t| ix.bucket_of(t).0 as f64),
                            )
                        })
                    };
                    (
                        src(s),
                        1.0,
                        0.0,
                        index(op.extended_bounds),
                        index(op.hard_bounds),
                    )
                }
                (DateRounding::Indexed(_), None) => unreachable!("indexed roundings have a source"),
            };
            let extended = if d.min_doc_count == 0 {
                clip(ext, hard)
            } else {
                None
            };
            let mut body = json!({
                "field": field,
                "interval": interval,
                "offset": offset,
                "min_doc_count": d.min_doc_count,
            });
            let o = body.as_object_mut().expect("object");
            if let Some(b) = bounds_json(extended, true) {
                o.insert("extended_bounds".into(), b);
            }
            if let Some(b) = bounds_json(hard.filter(|_| !op.range), false) {
                o.insert("hard_bounds".into(), b);
            }
            ("histogram", body)
        }
        (AggKind::Range(_) | AggKind::VariableWidthHistogram(_), Op::Range(op)) => (
            "range",
            json!({"field": src(op.source), "ranges": unit_ranges(op.ranges.len())}),
        ),
        (_, Op::Filters(op)) => (
            "range",
            json!({
                "field": src(op.source),
                "ranges": unit_ranges(op.names.len() + op.other.is_some() as usize),
            }),
        ),
        (
            AggKind::Composite(_),
            Op::Composite(CompositeOp {
                computed: Some(source),
                ..
            }),
        ) => (
            "terms",
            json!({
                "field": src(*source),
                "size": ALL,
                "segment_size": ALL,
                "min_doc_count": 1,
                // tantivy refuses `_key` order on a computed text source; nothing is cut
                // (each shard's page is at most `size` keys), rendering orders by key.
                "order": {"_count": "desc"},
            }),
        ),
        (AggKind::Composite(c), Op::Composite(op)) => {
            let sources: Vec<Value> = c
                .sources
                .iter()
                .map(|s| {
                    let order = if s.asc { "asc" } else { "desc" };
                    let body = match &s.kind {
                        CompositeSourceKind::Terms {
                            missing_bucket,
                            missing_order,
                        } => json!({"terms": {
                            "field": s.field, "order": order, "missing_bucket": missing_bucket,
                            "missing_order": missing_order,
                        }}),
                        CompositeSourceKind::Histogram { interval } => json!({"histogram": {
                            "field": s.field, "order": order, "interval": interval,
                        }}),
                        CompositeSourceKind::DateHistogram { interval, .. } => {
                            let ms = match interval {
                                DateInterval::Fixed(ms) => *ms as f64,
                                DateInterval::Calendar(u) => {
                                    super::composite_calendar_millis(*u).unwrap_or(1.0)
                                }
                            };
                            json!({"histogram": {"field": s.field, "order": order, "interval": ms}})
                        }
                        // Planned as computed keys.
                        CompositeSourceKind::GeoTile { .. } => Value::Null,
                    };
                    json!({ s.name.clone(): body })
                })
                .collect();
            let mut body = json!({"sources": sources, "size": c.size});
            if let Some(after) = &c.after {
                let after: Map<String, Value> = c
                    .sources
                    .iter()
                    .zip(&op.fields)
                    .zip(&op.formats)
                    .filter_map(|((s, f), format)| {
                        let v = after.get(&s.name)?;
                        Some((s.name.clone(), after_key(v, &s.kind, f, format.as_ref())))
                    })
                    .collect();
                body.as_object_mut()
                    .expect("object")
                    .insert("after".into(), Value::Object(after));
            }
            ("composite", body)
        }
        (AggKind::Metric(m), Op::Metric(op)) => {
            let mut body = json!({"field": op.field.name});
            // A cardinality (value_count) counts a text `missing` as a value of its own.
            let text_missing = match (&m.kind, &m.missing) {
                _ if op.field.name.contains(MISSING_MARK) => None,
                // A boolean's computed column gives `missing` itself.
                _ if matches!(op.format, ValueFormat::Bool) => {
                    return Some((m.kind.name(), json!({"field": op.field.name})));
                }
                (MetricKind::Cardinality | MetricKind::ValueCount, Some(Value::String(s)))
                    if metric_missing(m.missing.as_ref(), &op.field).is_none() =>
                {
                    Some(json!(s))
                }
                _ => None,
            };
            if let Some(missing) =
                text_missing.or_else(|| metric_missing(m.missing.as_ref(), &op.field))
            {
                body.as_object_mut()
                    .expect("object")
                    .insert("missing".into(), missing);
            }
            if m.kind == MetricKind::ExtendedStats {
                body.as_object_mut()
                    .expect("object")
                    .insert("sigma".into(), json!(m.sigma));
            }
            (m.kind.name(), body)
        }
        (_, Op::SignificantTerms { terms: op, .. }) | (_, Op::RareTerms(op)) => {
            let mut body = json!({
                "field": op.source_field.as_ref().unwrap_or(&op.field.name),
                "size": ALL,
                "segment_size": ALL,
                "min_doc_count": 1,
                "order": {"_count": "asc"},
            });
            let o = body.as_object_mut().expect("object");
            if let Some(m) = &op.tantivy_missing {
                o.insert("missing".into(), m.clone());
            }
            if let Some(i) = &op.tantivy_include {
                o.insert("include".into(), i.clone());
            }
            if let Some(e) = &op.tantivy_exclude {
                o.insert("exclude".into(), e.clone());
            }
            ("terms", body)
        }
        (AggKind::GeoGrid(g), Op::GeoGrid { source, .. }) => {
            let (size, segment_size) = match stage {
                Stage::Collect | Stage::Final => (ALL, ALL),
                Stage::ShardPrune => (g.shard_size as u64, g.shard_size as u64),
            };
            (
                "terms",
                json!({
                    "field": src(*source),
                    "size": size,
                    "segment_size": segment_size,
                    "min_doc_count": 1,
                    "order": {"_count": "desc"},
                }),
            )
        }
        (_, Op::WeightedAvg { product, .. }) => ("sum", json!({"field": src(*product)})),
        _ => return None,
    })
}

/// An Elasticsearch `after` value as tantivy's typed after key (`"<type>:<value>"`).
fn after_key(
    v: &Value,
    kind: &CompositeSourceKind,
    field: &FieldRef,
    format: Option<&ValueFormat>,
) -> Value {
    if let (Value::String(text), Some(ValueFormat::Date(f, tz))) = (v, format) {
        if let Ok(ms) = f.parse_millis(text, tz) {
            return Value::String(format!("f64:{}", ms as f64));
        }
    }
    let text = scalar(v);
    let typed = match (v, kind, field.storage()) {
        (Value::Null, _, _) => "null:".to_string(),
        (_, CompositeSourceKind::Terms { .. }, Some(Storage::I64)) => {
            format!("i64:{}", number(v).unwrap_or(0.0) as i64)
        }
        (_, CompositeSourceKind::Terms { .. }, Some(Storage::F64)) => {
            format!("f64:{}", number(v).unwrap_or(0.0))
        }
        (_, CompositeSourceKind::Terms { .. }, Some(Storage::Bool)) => {
            format!("bool:{}", text == "true" || text == "1")
        }
        (_, CompositeSourceKind::Terms { .. }, Some(Storage::Ip)) => format!("ip:{text}"),
        (_, CompositeSourceKind::Terms { .. }, _) => format!("str:{text}"),
        _ => format!("f64:{}", number(v).unwrap_or(0.0)),
    };
    Value::String(typed)
}

/// A metric's `missing` that is not a number (nor a date in the field's format), which ES
/// refuses (a cardinality's text `missing` is a value of its own).
fn check_metric_missing(missing: Option<&Value>, field: &FieldRef, text_ok: bool) -> EsResult<()> {
    match missing {
        Some(Value::String(_)) if text_ok => Ok(()),
        Some(m) if metric_missing(Some(m), field).is_none() => Err(EsError::illegal_argument(
            format!("For input string: \"{}\"", scalar(m)),
        )),
        _ => Ok(()),
    }
}

/// A metric's `missing` as tantivy takes it: a number (dates parsed with the field's format).
pub(crate) fn metric_missing(missing: Option<&Value>, field: &FieldRef) -> Option<Value> {
    let m = missing?;
    if field.is_date() {
        if let (Value::String(s), Some(def)) = (m, &field.def) {
            return def
                .date_format
                .parse_millis(s, &Tz::utc())
                .ok()
                .map(|ms| json!(ms as f64));
        }
    }
    match m {
        Value::Bool(b) => Some(json!(*b as u8 as f64)),
        other => number(other).map(|x| json!(x)),
    }
}

/// Extended bounds never reach outside hard bounds.
fn clip(
    ext: Option<(Option<f64>, Option<f64>)>,
    hard: Option<(Option<f64>, Option<f64>)>,
) -> Option<(Option<f64>, Option<f64>)> {
    let (mut lo, mut hi) = ext?;
    if let Some((hlo, hhi)) = hard {
        if let (Some(l), Some(h)) = (lo, hlo) {
            lo = Some(l.max(h));
        }
        if let (Some(l), Some(h)) = (hi, hhi) {
            hi = Some(l.min(h));
        }
    }
    Some((lo, hi))
}

/// The key sources of a `composite` over computed keys, with its `after` key encoded.
fn composite_key_spec(
    ctx: &QueryContext,
    c: &super::request::CompositeReq,
    fields: &[FieldRef],
    formats: &[Option<ValueFormat>],
) -> EsResult<crate::composite::KeySpec> {
    use crate::composite::{Bucketing, KeySource, KeySpec, KeyVal, Read};
    use lode_query::runtime::RuntimeType;
    let mut sources = Vec::with_capacity(c.sources.len());
    for (s, f) in c.sources.iter().zip(fields) {
        let read = if matches!(s.kind, CompositeSourceKind::GeoTile { .. }) {
            match ctx.mapping.field(&s.field) {
                Some(_) => Read::Geo(s.field.clone()),
                None => Read::Unmapped,
            }
        } else if ctx.runtime.contains_key(&s.field) {
            Read::Runtime(s.field.clone())
        } else if f.def.is_none() {
            Read::Unmapped
        } else if f.storage() == Some(Storage::Ip) {
            Read::Ip(s.field.clone())
        } else {
            Read::Mapped(s.field.clone())
        };
        let bucketing = match &s.kind {
            CompositeSourceKind::Terms { .. } => Bucketing::Raw,
            CompositeSourceKind::Histogram { interval } => Bucketing::Histogram(*interval),
            CompositeSourceKind::DateHistogram {
                interval,
                time_zone,
                offset,
                ..
            } => Bucketing::Date(match interval {
                DateInterval::Calendar(u) => DateRounding::calendar(*u, time_zone, *offset),
                DateInterval::Fixed(ms) => DateRounding::fixed(*ms, time_zone, *offset),
            }),
            CompositeSourceKind::GeoTile { grid } => Bucketing::Tile(grid.cells()),
        };
        sources.push(KeySource {
            read,
            bucketing,
            asc: s.asc,
            missing_bucket: s.missing_bucket,
            missing_first: s.missing_first,
        });
    }
    let mut spec = KeySpec {
        sources,
        size: c.size,
        after: None,
        bucket_docs: Default::default(),
    };
    if let Some(after) = &c.after {
        let mut key = Vec::with_capacity(c.sources.len());
        for ((s, f), format) in c.sources.iter().zip(fields).zip(formats) {
            let v = after.get(&s.name).unwrap_or(&Value::Null);
            let bad = || {
                EsError::illegal_argument(format!(
                    "Invalid value for [after.{}]: [{}]",
                    s.name,
                    scalar(v)
                ))
            };
            let runtime_ty = ctx.runtime.get(&s.field).map(|r| r.ty);
            let k = match (&s.kind, v) {
                (_, Value::Null) => KeyVal::Missing,
                (CompositeSourceKind::GeoTile { .. }, Value::String(t)) => {
                    let parts: Vec<u64> = t
                        .split('/')
                        .map(|p| p.trim().parse::<u64>())
                        .collect::<Result<_, _>>()
                        .map_err(|_| bad())?;
                    match parts[..] {
                        [z, x, y] if z <= 29 => {
                            KeyVal::Tile(crate::geogrid::tile_long(z as u32, x, y))
                        }
                        _ => return Err(bad()),
                    }
                }
                (CompositeSourceKind::GeoTile { .. }, _) => return Err(bad()),
                (CompositeSourceKind::Histogram { .. }, v) => {
                    KeyVal::F64(number(v).ok_or_else(bad)?)
                }
                (CompositeSourceKind::DateHistogram { time_zone, .. }, v) => {
                    KeyVal::I64(after_millis(v, f, format.as_ref(), time_zone).ok_or_else(bad)?)
                }
                (CompositeSourceKind::Terms { .. }, v) => {
                    let storage = match runtime_ty {
                        Some(RuntimeType::Keyword) => Some(Storage::Keyword),
                        Some(RuntimeType::Long | RuntimeType::Date) => Some(Storage::I64),
                        Some(RuntimeType::Double) => Some(Storage::F64),
                        Some(RuntimeType::Boolean) => Some(Storage::Bool),
                        None => f.storage(),
                    };
                    let is_date = f.is_date() || runtime_ty == Some(RuntimeType::Date);
                    match storage {
                        Some(Storage::I64) if is_date => KeyVal::I64(
                            after_millis(v, f, format.as_ref(), &Tz::utc()).ok_or_else(bad)?,
                        ),
                        Some(Storage::I64) => KeyVal::I64(
                            // Exact for longs beyond 2^53.
                            match v.as_i64().or_else(|| scalar(v).parse().ok()) {
                                Some(x) => x,
                                None => number(v).ok_or_else(bad)? as i64,
                            },
                        ),
                        Some(Storage::F64) => KeyVal::F64(number(v).ok_or_else(bad)?),
                        Some(Storage::Ip) => match scalar(v).parse::<std::net::IpAddr>() {
                            Ok(std::net::IpAddr::V4(v4)) => KeyVal::Ip(v4.to_ipv6_mapped()),
                            Ok(std::net::IpAddr::V6(v6)) => KeyVal::Ip(v6),
                            Err(_) => return Err(bad()),
                        },
                        Some(Storage::Bool) => match v {
                            Value::Bool(b) => KeyVal::Bool(*b),
                            _ => KeyVal::Bool(matches!(scalar(v).as_str(), "true" | "1")),
                        },
                        _ => KeyVal::Str(scalar(v)),
                    }
                }
            };
            key.push(k);
        }
        spec.after = Some(spec.encode(&key));
    }
    Ok(spec)
}

/// A date `after` value: a number of milliseconds, or a string in the source's `format`
/// (else the field's).
fn after_millis(v: &Value, f: &FieldRef, format: Option<&ValueFormat>, tz: &Tz) -> Option<i64> {
    match v {
        Value::String(text) => {
            if let Some(ValueFormat::Date(df, tz)) = format {
                return df.parse_millis(text, tz).ok();
            }
            if let Some(def) = &f.def {
                if let Ok(ms) = def.date_format.parse_millis(text, tz) {
                    return Some(ms);
                }
            }
            text.parse::<f64>().ok().map(|x| x as i64)
        }
        v => number(v).map(|x| x as i64),
    }
}

/// Whether an aggregation below re-queries its bucket's documents (see `render::Scope`).
/// `cardinality` is not counted: under a plain composite it stays tantivy's estimate rather
/// than key every segment's documents once per bucket.
fn rereads_bucket(nodes: &[AggNode]) -> bool {
    nodes.iter().any(|n| {
        matches!(
            n.kind.type_name(),
            "nested"
                | "reverse_nested"
                | "percentiles"
                | "percentile_ranks"
                | "median_absolute_deviation"
                | "boxplot"
                | "string_stats"
                | "geo_bounds"
                | "geo_centroid"
                | "top_hits"
                | "top_metrics"
        ) || rereads_bucket(&n.subs)
    })
}

/// ES's `CompositeAggregationBuilder#doBuild` checks of `after` (on the shards, so its
/// errors come as a failed search phase).
fn check_after(c: &super::request::CompositeReq) -> EsResult<()> {
    let Some(m) = &c.after else {
        return Ok(());
    };
    if m.len() != c.sources.len() {
        return Err(EsError::illegal_argument(format!(
            "[after] has {} value(s) but [sources] has {}",
            m.len(),
            c.sources.len()
        )));
    }
    for s in &c.sources {
        let got = match m.get(&s.name) {
            None => {
                return Err(EsError::illegal_argument(format!(
                    "Missing value for [after.{}]",
                    s.name
                )))
            }
            Some(Value::Null) if s.missing_bucket => continue,
            Some(Value::Null) => "null",
            Some(Value::Object(_)) => "LinkedHashMap",
            Some(Value::Array(_)) => "ArrayList",
            Some(_) => continue,
        };
        return Err(EsError::illegal_argument(format!(
            "Invalid value for [after.{}], expected comparable, got [{got}]",
            s.name
        )));
    }
    Ok(())
}

#[cfg(test)]
mod partition_tests {
    use super::{mix64, partition_accepts, TermsKind};
    use tantivy::aggregation::Key;

    /// hppc's `BitMixer.mix64` values (computed with a separate Python implementation of
    /// the reference, tests/python/test_aggs_terms_partition.py).
    #[test]
    fn mix64_matches_hppc() {
        assert_eq!(mix64(0), 0);
        assert_eq!(mix64(1), -2508561340476696217);
        assert_eq!(mix64(-5), -3352985118511919453);
        assert_eq!(mix64(1_600_000_000_000), 5300403118700597576);
    }

    /// A term is in exactly the partition `floorMod(hash, n)` names.
    #[test]
    fn partitions_follow_the_hash() {
        // murmurhash3_x86_32("term0", 31) = 1093292457; an ip by its 16-byte encoding.
        let k = Key::Str("term0".into());
        assert!(partition_accepts(
            TermsKind::String,
            false,
            &k,
            1093292457 % 7,
            7
        ));
        let ip = Key::Str("10.0.1.2".into());
        let want = (-1408868088i64).rem_euclid(5) as u32;
        assert!(partition_accepts(TermsKind::String, true, &ip, want, 5));
        assert!(!partition_accepts(
            TermsKind::String,
            true,
            &ip,
            (want + 1) % 5,
            5
        ));
        // doubles by their sortable long bits: mix64(sortable(-1.5)) = 8758102346884877609
        let d = Key::F64(-1.5);
        assert!(partition_accepts(
            TermsKind::Double,
            false,
            &d,
            (8758102346884877609i64 % 3) as u32,
            3
        ));
        let l = Key::I64(-5);
        let p = (-3352985118511919453i64).rem_euclid(4) as u32;
        assert!(partition_accepts(TermsKind::Long, false, &l, p, 4));
    }
}

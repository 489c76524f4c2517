//! Parsing: the `aggs` JSON of a search body into a typed tree, validated the way
//! Elasticsearch validates it at parse time. Nothing here looks at a mapping or at tantivy;
//! field resolution happens when the tree is planned against one index.

use super::dsl::{parse_dsl, DslQuery};
use crate::fields::{self, Source, Sourced};
use crate::significant::{heuristic_fields, Heuristic, Heuristics};
use lode_dates::{parse_time_value, CalendarUnit, Tz};
use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use lode_hits::source::SourceFilter;
use serde_json::{json, Map, Value};

/// Elasticsearch's `search.max_buckets` default.
pub const DEFAULT_MAX_BUCKETS: usize = 65_536;

/// Parsed and validated `aggs`/`aggregations` request for one search over some indices.
pub struct AggsRequest {
    pub(crate) aggs: Vec<AggNode>,
    pub(crate) max_buckets: usize,
    /// Pipeline aggregations, run on the rendered result.
    pub(crate) pipelines: crate::pipeline::PipelineTree,
}

impl AggsRequest {
    /// Overrides `search.max_buckets` (default 65536) for this request.
    pub fn set_max_buckets(&mut self, max_buckets: usize) {
        self.max_buckets = max_buckets;
    }

    pub fn max_buckets(&self) -> usize {
        self.max_buckets
    }

    /// Whether there is nothing to aggregate.
    pub fn is_empty(&self) -> bool {
        self.aggs.is_empty()
    }
}

impl std::fmt::Debug for AggsRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.aggs.iter().map(|a| a.name.as_str()).collect();
        f.debug_struct("AggsRequest").field("aggs", &names).finish()
    }
}

/// One named aggregation with its sub-aggregations.
pub(crate) struct AggNode {
    pub name: String,
    pub kind: AggKind,
    pub subs: Vec<AggNode>,
    pub meta: Option<Value>,
}

pub(crate) enum AggKind {
    Terms(TermsReq),
    Histogram(HistogramReq),
    DateHistogram(DateHistogramReq),
    Range(RangeReq),
    Filter(Box<DslQuery>),
    Filters(FiltersReq),
    Global,
    Missing {
        field: String,
    },
    /// `nested`: documents are stored flattened, so this is the parent documents that have
    /// values under `path` (sub-aggregations see parent documents).
    Nested {
        path: String,
    },
    /// `reverse_nested`: back to the parent documents, i.e. every document of the bucket.
    /// `path`: the nested path to join back to (`None` = the root).
    ReverseNested {
        path: Option<String>,
    },
    Composite(CompositeReq),
    Metric(MetricReq),
    Percentiles(PercentilesReq),
    /// `median_absolute_deviation` and `boxplot`, over a TDigest.
    DigestMetric(DigestMetricReq),
    /// `auto_date_histogram`: a `date_histogram` whose interval is chosen from the data.
    AutoDateHistogram(Box<AutoDateHistogramReq>),
    /// `variable_width_histogram`: buckets clustered from the data before planning (`vwh.rs`).
    VariableWidthHistogram(Box<crate::vwh::VwhReq>),
    /// `sampler`: the `shard_size` best-scoring documents of each shard.
    Sampler {
        shard_size: usize,
    },
    /// `diversified_sampler`: as `sampler`, at most `max_docs_per_value` per value of `field`.
    DiversifiedSampler {
        shard_size: usize,
        field: String,
        max_docs_per_value: usize,
        /// The value of documents without one (they share its key).
        missing: Option<Value>,
    },
    /// `string_stats` over a keyword field.
    StringStats {
        field: String,
        missing: Option<String>,
        show_distribution: bool,
    },
    TopHits(TopHitsReq),
    WeightedAvg(WeightedAvgReq),
    MultiTerms(MultiTermsReq),
    TopMetrics(TopMetricsReq),
    /// `significant_terms`: `terms` holds `field`, `size`, `min_doc_count` (default 3),
    /// `include`/`exclude`; scored by `heuristic`.
    SignificantTerms {
        terms: TermsReq,
        background_filter: Option<Box<DslQuery>>,
        heuristic: crate::significant::Heuristic,
    },
    /// `significant_text`: a text field's terms re-analyzed from `_source`, scored as
    /// `significant_terms` (`significant_text.rs`).
    SignificantText(Box<crate::significant_text::SignificantTextReq>),
    /// `rare_terms`: the terms with at most `max_doc_count` documents.
    RareTerms {
        terms: TermsReq,
        max_doc_count: u64,
    },
    /// `geo_bounds` (`centroid` false) or `geo_centroid` on a `geo_point` field.
    GeoMetric {
        centroid: bool,
        field: String,
        wrap_longitude: bool,
    },
    /// `geohash_grid` or `geotile_grid` on a `geo_point` field.
    GeoGrid(GeoGridReq),
}

/// `geohash_grid` / `geotile_grid` (ES's `GeoGridAggregationBuilder`).
#[derive(Debug, Clone)]
pub(crate) struct GeoGridReq {
    pub field: String,
    pub grid: crate::geogrid::Grid,
    pub size: usize,
    /// Resolved as ES's `innerBuild`: `size * 1.5 + 10` by default, at least `size`.
    pub shard_size: usize,
}

impl AggKind {
    /// The aggregation type as written in the request.
    pub fn type_name(&self) -> &'static str {
        match self {
            AggKind::Terms(_) => "terms",
            AggKind::Histogram(_) => "histogram",
            AggKind::DateHistogram(_) => "date_histogram",
            AggKind::Range(r) if r.is_date => "date_range",
            AggKind::Range(_) => "range",
            AggKind::Filter(_) => "filter",
            AggKind::Filters(f) if f.geo_distance => "geo_distance",
            AggKind::Filters(f) if f.ip_bounds.is_some() => "ip_range",
            AggKind::Filters(_) => "filters",
            AggKind::Global => "global",
            AggKind::Missing { .. } => "missing",
            AggKind::Nested { .. } => "nested",
            AggKind::ReverseNested { .. } => "reverse_nested",
            AggKind::Composite(_) => "composite",
            AggKind::Metric(m) => m.kind.name(),
            AggKind::Percentiles(p) if p.ranks => "percentile_ranks",
            AggKind::Percentiles(_) => "percentiles",
            AggKind::DigestMetric(d) => d.kind.name(),
            AggKind::StringStats { .. } => "string_stats",
            AggKind::AutoDateHistogram(_) => "auto_date_histogram",
            AggKind::VariableWidthHistogram(_) => "variable_width_histogram",
            AggKind::Sampler { .. } => "sampler",
            AggKind::DiversifiedSampler { .. } => "diversified_sampler",
            AggKind::TopHits(_) => "top_hits",
            AggKind::WeightedAvg(_) => "weighted_avg",
            AggKind::MultiTerms(_) => "multi_terms",
            AggKind::RareTerms { .. } => "rare_terms",
            AggKind::TopMetrics(_) => "top_metrics",
            AggKind::SignificantTerms { .. } => "significant_terms",
            AggKind::SignificantText(_) => "significant_text",
            AggKind::GeoMetric { centroid: true, .. } => "geo_centroid",
            AggKind::GeoMetric { .. } => "geo_bounds",
            AggKind::GeoGrid(g) if g.grid.tile => "geotile_grid",
            AggKind::GeoGrid(_) => "geohash_grid",
        }
    }

    fn accepts_sub_aggs(&self) -> bool {
        !matches!(
            self,
            AggKind::Metric(_)
                | AggKind::Percentiles(_)
                | AggKind::DigestMetric(_)
                | AggKind::StringStats { .. }
                | AggKind::GeoMetric { .. }
                | AggKind::TopHits(_)
                | AggKind::WeightedAvg(_)
                | AggKind::TopMetrics(_)
        )
    }
}

/// One criterion of a bucket `order`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BucketOrder {
    pub key: OrderKey,
    pub asc: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OrderKey {
    Count,
    Key,
    /// A sub-aggregation: `agg` or `agg.metric`.
    Path {
        agg: String,
        metric: Option<String>,
    },
}

pub(crate) enum IncludeExclude {
    Regex(String),
    Values(Vec<Value>),
    /// ES's partition-based include: the terms whose hash `floorMod num_partitions` is
    /// `partition` (see `plan::partition_accepts`).
    Partition {
        partition: u32,
        num_partitions: u32,
    },
}

pub(crate) struct TermsReq {
    pub field: String,
    pub size: usize,
    pub shard_size: Option<usize>,
    pub min_doc_count: u64,
    /// A shard drops its candidate buckets counted fewer times before the reduce.
    pub shard_min_doc_count: u64,
    pub order: Vec<BucketOrder>,
    pub missing: Option<Value>,
    pub include: Option<IncludeExclude>,
    pub exclude: Option<IncludeExclude>,
    pub show_term_doc_count_error: bool,
    pub format: Option<String>,
}

pub(crate) struct HistogramReq {
    pub field: String,
    pub interval: f64,
    pub offset: f64,
    pub min_doc_count: u64,
    pub extended_bounds: Option<(Option<f64>, Option<f64>)>,
    pub hard_bounds: Option<(Option<f64>, Option<f64>)>,
    pub keyed: bool,
    pub order: Vec<BucketOrder>,
    pub format: Option<String>,
    /// The value of documents without one (parsed against the field when planned).
    pub missing: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum DateInterval {
    Calendar(CalendarUnit),
    Fixed(i64),
}

pub(crate) struct DateHistogramReq {
    pub field: String,
    pub interval: DateInterval,
    pub time_zone: Tz,
    pub offset: i64,
    pub format: Option<String>,
    pub min_doc_count: u64,
    /// Bounds as given (numbers, date strings or date math), resolved against the field.
    pub extended_bounds: Option<(Option<Value>, Option<Value>)>,
    pub hard_bounds: Option<(Option<Value>, Option<Value>)>,
    pub keyed: bool,
    pub order: Vec<BucketOrder>,
    /// The value of documents without one (a date parsed with the agg's format and time
    /// zone when planned).
    pub missing: Option<Value>,
}

/// `auto_date_histogram`: `hist` holds the field, `time_zone`, `format` (and a key order, no
/// bounds); the interval is chosen before planning (`auto_date.rs`) into `chosen`.
pub(crate) struct AutoDateHistogramReq {
    pub hist: DateHistogramReq,
    pub buckets: usize,
    /// The first rung of ES's rounding ladder allowed (`minimum_interval`).
    pub minimum_interval: usize,
    pub chosen: std::sync::Mutex<Option<crate::auto_date::Choice>>,
}

impl AggKind {
    /// The `date_histogram` request behind a `date_histogram` or `auto_date_histogram`.
    pub fn as_date_histogram(&self) -> Option<&DateHistogramReq> {
        match self {
            AggKind::DateHistogram(d) => Some(d),
            AggKind::AutoDateHistogram(a) => Some(&a.hist),
            _ => None,
        }
    }
}

/// An `auto_date_histogram` body under construction.
struct AutoDateBody {
    name: String,
    source: Source,
    r: AutoDateHistogramReq,
}

impl Sourced for AutoDateBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type AF = Field<AutoDateBody>;

static AUTO_DATE_HISTOGRAM: ObjectParser<AutoDateBody> = ObjectParser {
    name: "auto_date_histogram",
    style: fields::AGG,
    fields: &[
        &[
            AF::new("buckets", "*", |b, at, v| {
                let n = int(at.parser, at.key, v)?;
                if n <= 0 {
                    return Err(EsError::illegal_argument(format!(
                        "[buckets] must be greater than 0 in [{}]",
                        b.name
                    )));
                }
                b.r.buckets = n as usize;
                Ok(())
            }),
            AF::new("minimum_interval", "*", |b, at, v| {
                let s = string(at.parser, at.key, v)?;
                b.r.minimum_interval = crate::auto_date::LADDER
                    .iter()
                    .position(|rung| rung.name == s)
                    .ok_or_else(|| {
                        EsError::illegal_argument(
                            "minimum_interval must be one of [second, minute, hour, day, month, year]",
                        )
                    })?;
                Ok(())
            }),
            AF::new("time_zone", "*", |b, _, v| {
                b.r.hist.time_zone = parse_time_zone(v)?;
                Ok(())
            }),
        ],
        &fields::field(),
        &fields::script(),
        &fields::value_type(),
        &fields::format(),
        &fields::missing_scalar(),
    ],
};

fn parse_auto_date_histogram(name: &str, o: &Map<String, Value>) -> EsResult<AutoDateHistogramReq> {
    let mut b = AutoDateBody {
        name: name.to_string(),
        source: Source::default(),
        r: AutoDateHistogramReq {
            hist: DateHistogramReq {
                field: String::new(),
                interval: DateInterval::Fixed(1000),
                time_zone: Tz::utc(),
                offset: 0,
                format: None,
                min_doc_count: 0,
                extended_bounds: None,
                hard_bounds: None,
                keyed: false,
                order: vec![BucketOrder {
                    key: OrderKey::Key,
                    asc: true,
                }],
                missing: None,
            },
            buckets: 10,
            minimum_interval: 0,
            chosen: std::sync::Mutex::new(None),
        },
    };
    AUTO_DATE_HISTOGRAM.parse_into(&mut b, o)?;
    let mut r = b.r;
    r.hist.field = b.source.field_or_script(false, true)?;
    r.hist.format = b.source.format;
    r.hist.missing = b.source.missing;
    Ok(r)
}

pub(crate) struct RangeSpec {
    pub key: Option<String>,
    pub from: Option<Value>,
    pub to: Option<Value>,
}

pub(crate) struct RangeReq {
    pub field: String,
    pub ranges: Vec<RangeSpec>,
    pub keyed: bool,
    pub format: Option<String>,
    pub time_zone: Option<Tz>,
    pub missing: Option<Value>,
    /// `date_range` rather than `range`.
    pub is_date: bool,
}

/// Each `ip_range` bucket's `from` and `to`, as rendered.
pub(crate) type IpBounds = Vec<(Option<Value>, Option<Value>)>;

pub(crate) struct FiltersReq {
    pub filters: Vec<(String, DslQuery)>,
    /// The named (object) form, rendered as an object of buckets unless `keyed: false`.
    pub keyed: bool,
    pub other_bucket: Option<String>,
    /// `ip_range`: the field, and per filter the range's `from` and `to` for rendering.
    pub ip_bounds: Option<(String, IpBounds)>,
    /// A `geo_distance` aggregation (its buckets' bounds in `ip_bounds`).
    pub geo_distance: bool,
}

pub(crate) enum CompositeSourceKind {
    Terms {
        missing_bucket: bool,
        /// `missing_order`: `first`, `last` or `default` (first ascending, last descending).
        missing_order: &'static str,
    },
    Histogram {
        interval: f64,
    },
    DateHistogram {
        interval: DateInterval,
        time_zone: Tz,
        /// `offset` in milliseconds.
        offset: i64,
    },
    /// `geotile_grid`: keys `"z/x/y"`, ordered by ES's tile long.
    GeoTile {
        grid: crate::geogrid::Grid,
    },
}

pub(crate) struct CompositeSource {
    pub name: String,
    /// The field, or the stand-in name of the source's `script` (see [`ScriptSpec`]).
    pub field: String,
    pub asc: bool,
    pub kind: CompositeSourceKind,
    /// `missing_bucket` (every source kind takes it, as ES's `CompositeValuesSourceBuilder`).
    pub missing_bucket: bool,
    /// Where the missing bucket sorts: first (`missing_order: first`, or `default`
    /// ascending) or last.
    pub missing_first: bool,
    /// `format`: renders the keys (and parses a date `after`).
    pub format: Option<String>,
}

pub(crate) struct CompositeReq {
    pub sources: Vec<CompositeSource>,
    pub size: usize,
    pub after: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetricKind {
    Avg,
    Sum,
    Min,
    Max,
    ValueCount,
    Stats,
    ExtendedStats,
    Cardinality,
}

impl MetricKind {
    pub fn name(self) -> &'static str {
        match self {
            MetricKind::Avg => "avg",
            MetricKind::Sum => "sum",
            MetricKind::Min => "min",
            MetricKind::Max => "max",
            MetricKind::ValueCount => "value_count",
            MetricKind::Stats => "stats",
            MetricKind::ExtendedStats => "extended_stats",
            MetricKind::Cardinality => "cardinality",
        }
    }

    /// Whether the metric needs numeric values (rather than any value).
    pub fn is_numeric(self) -> bool {
        !matches!(self, MetricKind::ValueCount | MetricKind::Cardinality)
    }
}

/// `multi_terms`: `base` holds the bucket parameters (`size`, `order`, ...), `terms` one
/// request per field (`field`, `missing`, `format`).
pub(crate) struct MultiTermsReq {
    pub base: TermsReq,
    pub terms: Vec<TermsReq>,
}

/// One of `weighted_avg`'s `value` and `weight`: a field and its `missing` value.
pub(crate) struct WeightedSource {
    pub field: String,
    pub missing: Option<Value>,
}

/// `weighted_avg`: `sum(value * weight) / sum(weight)`.
pub(crate) struct WeightedAvgReq {
    pub value: WeightedSource,
    pub weight: WeightedSource,
    pub format: Option<String>,
}

pub(crate) struct MetricReq {
    pub kind: MetricKind,
    pub field: String,
    pub missing: Option<Value>,
    pub format: Option<String>,
    pub sigma: f64,
    /// `cardinality`: counts are exact up to about this many distinct values (3000 by
    /// default, at most 40000, as ES caps it).
    pub precision_threshold: u64,
}

/// `percentiles`, and `percentile_ranks` (`ranks`), whose `values` are kept in `percents`.
pub(crate) struct PercentilesReq {
    pub field: String,
    /// The percents (`percentiles`) or the values to rank (`percentile_ranks`), sorted, distinct.
    pub percents: Vec<f64>,
    pub ranks: bool,
    pub keyed: bool,
    pub missing: Option<Value>,
    pub format: Option<String>,
    pub method: PercentilesMethod,
}

/// How percentiles are estimated: ES's `tdigest` (the default) or `hdr`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PercentilesMethod {
    TDigest {
        compression: f64,
        high_accuracy: bool,
    },
    Hdr {
        digits: u8,
    },
}

impl Default for PercentilesMethod {
    fn default() -> Self {
        PercentilesMethod::TDigest {
            compression: crate::digest::DEFAULT_COMPRESSION,
            high_accuracy: false,
        }
    }
}

/// The TDigest-based single metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DigestKind {
    /// `median_absolute_deviation`: the median of the deviations from the median.
    Mad,
    /// `boxplot`: min, max, quartiles and whiskers.
    Boxplot,
}

impl DigestKind {
    pub fn name(self) -> &'static str {
        match self {
            DigestKind::Mad => "median_absolute_deviation",
            DigestKind::Boxplot => "boxplot",
        }
    }
}

pub(crate) struct DigestMetricReq {
    pub kind: DigestKind,
    pub field: String,
    pub missing: Option<Value>,
    pub format: Option<String>,
    pub method: PercentilesMethod,
}

/// `median_absolute_deviation` (compression 1000 by default) and `boxplot` (100): `field`,
/// `missing`, `format`, `compression`, `execution_hint`.
fn parse_digest_metric(
    name: &str,
    kind: DigestKind,
    o: &Map<String, Value>,
) -> EsResult<DigestMetricReq> {
    static P: ObjectParser<SmallBody> = ObjectParser {
        name: "boxplot",
        style: fields::AGG,
        fields: &[
            &[
                SF::new("compression", "*", |b, at, v| {
                    b.compression = Some(tdigest_compression(&b.name, num(at.parser, at.key, v)?)?);
                    Ok(())
                }),
                SF::new("execution_hint", "*", |b, at, v| {
                    b.high_accuracy = tdigest_execution_hint(&string(at.parser, at.key, v)?)?;
                    Ok(())
                }),
            ],
            &fields::field(),
            &fields::missing(),
            &fields::format(),
            &fields::value_type(),
        ],
    };
    let ty = kind.name();
    let mut b = SmallBody {
        name: name.to_string(),
        ..SmallBody::default()
    };
    P.parse_named(ty, &mut b, o)?;
    b.source.check_value_type(ty)?;
    let compression = b.compression.unwrap_or(match kind {
        DigestKind::Mad => 1000.0,
        DigestKind::Boxplot => crate::digest::DEFAULT_COMPRESSION,
    });
    Ok(DigestMetricReq {
        kind,
        field: b.source.required_field()?,
        missing: b.source.missing,
        format: b.source.format,
        method: PercentilesMethod::TDigest {
            compression,
            high_accuracy: b.high_accuracy,
        },
    })
}

/// `tdigest: {compression, execution_hint}` (shared with `median_absolute_deviation` and
/// `boxplot`, where they are top-level keys).
pub(crate) fn tdigest_compression(name: &str, v: f64) -> EsResult<f64> {
    if v < 0.0 {
        return Err(EsError::illegal_argument(format!(
            "[compression] must be greater than or equal to 0. Found [{v:?}] in [{name}]"
        )));
    }
    Ok(v)
}

/// ES's `TDigestExecutionHint.parse`: `default` or `high_accuracy` (true).
pub(crate) fn tdigest_execution_hint(v: &str) -> EsResult<bool> {
    match v {
        "" | "default" => Ok(false),
        "high_accuracy" => Ok(true),
        other => Err(EsError::illegal_argument(format!(
            "Invalid execution_hint [{other}], valid values are [default, high_accuracy]"
        ))),
    }
}

/// `top_metrics`: the `metrics` fields of the `size` documents first in the (one) `sort`.
pub(crate) struct TopMetricsReq {
    pub metrics: Vec<String>,
    /// The one sort, as given (planned per index with the search sort).
    pub sort: Value,
    pub size: usize,
}

pub(crate) struct TopHitsReq {
    pub from: usize,
    pub size: usize,
    /// The `sort` as given: planned per index with the search sort (multi-key, `missing`,
    /// `mode`, `unmapped_type`).
    pub sort: Option<Value>,
    pub source: SourceFilter,
    pub track_scores: bool,
    pub version: bool,
    pub seq_no_primary_term: bool,
}

// ---------------------------------------------------------------------------------------------
// Parsing

pub fn parse_aggs(aggs: &Value) -> EsResult<AggsRequest> {
    let (aggs, pipelines) = crate::pipeline::split(aggs)?;
    Ok(AggsRequest {
        aggs: parse_level(&aggs, 0)?,
        max_buckets: DEFAULT_MAX_BUCKETS,
        pipelines,
    })
}

const MAX_DEPTH: usize = 100;

fn parse_level(v: &Value, depth: usize) -> EsResult<Vec<AggNode>> {
    let obj = match v {
        Value::Object(o) => o,
        other => {
            return Err(EsError::parsing(format!(
                "Expected [START_OBJECT] under [aggregations], but got a [{}]",
                token_name(other)
            )))
        }
    };
    if depth > MAX_DEPTH {
        return Err(EsError::parsing(format!(
            "The nested depth of the aggregations exceeds the maximum nested depth for aggregations of [{MAX_DEPTH}] set in [search.max_nested_depth]"
        )));
    }
    obj.iter()
        .map(|(name, def)| parse_named(name, def, depth))
        .collect()
}

fn parse_named(name: &str, def: &Value, depth: usize) -> EsResult<AggNode> {
    if name.contains(['[', ']', '>']) {
        return Err(EsError::parsing(format!(
            "Invalid aggregation name [{name}]. Aggregation names can contain any character except '[', ']', and '>'"
        )));
    }
    let obj = def.as_object().ok_or_else(|| {
        EsError::parsing(format!(
            "Expected [START_OBJECT] under [{name}], but got a [{}] in [{name}]",
            token_name(def)
        ))
    })?;
    let mut kind: Option<(String, AggKind)> = None;
    let mut subs: Option<Vec<AggNode>> = None;
    let mut meta = None;
    for (key, body) in obj {
        match key.as_str() {
            "meta" => {
                if !body.is_object() {
                    return Err(EsError::parsing(format!(
                        "Expected [START_OBJECT] under [meta], but got a [{}] in [{name}]",
                        token_name(body)
                    )));
                }
                meta = Some(body.clone());
            }
            "aggs" | "aggregations" => {
                if subs.is_some() {
                    return Err(EsError::parsing(format!(
                        "Found two sub aggregation definitions under [{name}]"
                    )));
                }
                subs = Some(parse_level(body, depth + 1)?);
            }
            ty => {
                if let Some((prev, _)) = &kind {
                    return Err(EsError::parsing(format!(
                        "Found two aggregation type definitions in [{name}]: [{prev}] and [{ty}]"
                    )));
                }
                let parsed = parse_kind(name, ty, body)?;
                kind = Some((ty.to_string(), parsed));
            }
        }
    }
    let (ty, kind) = kind
        .ok_or_else(|| EsError::parsing(format!("Missing definition for aggregation [{name}]")))?;
    let subs = subs.unwrap_or_default();
    if !subs.is_empty() && !kind.accepts_sub_aggs() {
        return Err(EsError::new(
            400,
            "aggregation_initialization_exception",
            format!("Aggregator [{name}] of type [{ty}] cannot accept sub-aggregations"),
        ));
    }
    Ok(AggNode {
        name: name.to_string(),
        kind,
        subs,
        meta,
    })
}

fn parse_kind(name: &str, ty: &str, body: &Value) -> EsResult<AggKind> {
    let unsupported =
        || EsError::illegal_argument(format!("aggregation type [{ty}] is not supported"));
    let obj = || -> EsResult<&Map<String, Value>> {
        body.as_object().ok_or_else(|| {
            EsError::parsing(format!(
                "Expected [START_OBJECT] under [{ty}], but got a [{}] in [{name}]",
                token_name(body)
            ))
        })
    };
    Ok(match ty {
        "terms" => AggKind::Terms(parse_terms(name, "terms", obj()?)?),
        "histogram" => AggKind::Histogram(parse_histogram(name, obj()?)?),
        "date_histogram" => AggKind::DateHistogram(parse_date_histogram(name, obj()?)?),
        "range" => AggKind::Range(parse_range(name, ty, obj()?, false)?),
        "date_range" => AggKind::Range(parse_range(name, ty, obj()?, true)?),
        "filter" => AggKind::Filter(Box::new(parse_dsl(body)?)),
        "filters" => AggKind::Filters(parse_filters(name, obj()?)?),
        "ip_range" => AggKind::Filters(parse_ip_range(obj()?)?),
        "geo_distance" => AggKind::Filters(parse_geo_distance_agg(obj()?)?),
        "global" => {
            small(&GLOBAL, name, obj()?)?;
            AggKind::Global
        }
        "missing" => AggKind::Missing {
            field: small(&MISSING, name, obj()?)?
                .source
                .field_or_script(true, false)?,
        },
        "nested" => match small(&NESTED, name, obj()?)?.path {
            Some(Value::String(p)) => AggKind::Nested { path: p },
            _ => {
                return Err(EsError::parsing(format!(
                    "[nested] requires 'path' field in [{name}]"
                )))
            }
        },
        "reverse_nested" => AggKind::ReverseNested {
            path: small(&REVERSE_NESTED, name, obj()?)?
                .path
                .and_then(|p| p.as_str().map(str::to_string)),
        },
        "composite" => AggKind::Composite(parse_composite(name, obj()?)?),
        "avg" | "sum" | "min" | "max" | "value_count" | "stats" | "extended_stats"
        | "cardinality" => AggKind::Metric(parse_metric(name, ty, obj()?)?),
        "percentiles" => AggKind::Percentiles(parse_percentiles(name, obj()?)?),
        "percentile_ranks" => AggKind::Percentiles(parse_percentile_ranks(name, obj()?)?),
        "median_absolute_deviation" => {
            AggKind::DigestMetric(parse_digest_metric(name, DigestKind::Mad, obj()?)?)
        }
        "sampler" => AggKind::Sampler {
            shard_size: small(&SAMPLER, name, obj()?)?.shard_size.unwrap_or(100),
        },
        "diversified_sampler" => {
            let b = small(&DIVERSIFIED_SAMPLER, name, obj()?)?;
            AggKind::DiversifiedSampler {
                shard_size: b.shard_size.unwrap_or(100),
                field: b.source.required_field()?,
                max_docs_per_value: b.max_docs_per_value.unwrap_or(1),
                missing: b
                    .source
                    .missing
                    .map(|v| missing_value(ty, &v))
                    .transpose()?,
            }
        }
        "auto_date_histogram" => {
            AggKind::AutoDateHistogram(Box::new(parse_auto_date_histogram(name, obj()?)?))
        }
        "string_stats" => {
            let b = small(&STRING_STATS, name, obj()?)?;
            let field = b.source.required_field()?;
            AggKind::StringStats {
                field,
                missing: b.source.missing.map(|m| match m {
                    Value::String(s) => s,
                    other => other.to_string(),
                }),
                show_distribution: b.show_distribution,
            }
        }
        "boxplot" => AggKind::DigestMetric(parse_digest_metric(name, DigestKind::Boxplot, obj()?)?),
        "top_hits" => AggKind::TopHits(parse_top_hits(obj()?)?),
        "rare_terms" => parse_rare_terms(name, obj()?)?,
        "significant_terms" => parse_significant_terms(name, obj()?)?,
        "significant_text" => parse_significant_text(name, obj()?)?,
        "variable_width_histogram" => {
            AggKind::VariableWidthHistogram(Box::new(crate::vwh::parse(name, obj()?)?))
        }
        "top_metrics" => AggKind::TopMetrics(parse_top_metrics(obj()?)?),
        "multi_terms" => AggKind::MultiTerms(parse_multi_terms(name, obj()?)?),
        "weighted_avg" => AggKind::WeightedAvg(parse_weighted_avg(name, obj()?)?),
        "geo_bounds" | "geo_centroid" => {
            let centroid = ty == "geo_centroid";
            let b = small(
                if centroid { &GEO_CENTROID } else { &GEO_BOUNDS },
                name,
                obj()?,
            )?;
            AggKind::GeoMetric {
                centroid,
                field: b.source.required_field()?,
                wrap_longitude: b.wrap_longitude.unwrap_or(true),
            }
        }
        "geohash_grid" | "geotile_grid" => AggKind::GeoGrid(parse_geo_grid(name, ty, obj()?)?),
        "adjacency_matrix"
        | "scripted_metric"
        | "t_test"
        | "matrix_stats"
        | "rate"
        | "bucket_sort"
        | "bucket_selector"
        | "bucket_script"
        | "derivative"
        | "cumulative_sum"
        | "avg_bucket"
        | "sum_bucket"
        | "min_bucket"
        | "max_bucket"
        | "stats_bucket"
        | "extended_stats_bucket"
        | "percentiles_bucket"
        | "moving_fn"
        | "serial_diff"
        | "random_sampler"
        | "children"
        | "parent"
        | "categorize_text"
        | "frequent_items"
        | "time_series" => return Err(unsupported()),
        other => {
            return Err(
                EsError::parsing(format!("Unknown aggregation type [{other}]")).caused_by(
                    EsError::new(
                        400,
                        "named_object_not_found_exception",
                        format!("unknown field [{other}]"),
                    ),
                ),
            )
        }
    })
}

/// The body of an aggregation with a few options of its own (`global`, `missing`, `nested`,
/// `reverse_nested`, the samplers, `string_stats`, `geo_bounds`, `geo_centroid`).
#[derive(Default)]
struct SmallBody {
    name: String,
    source: Source,
    path: Option<Value>,
    shard_size: Option<usize>,
    max_docs_per_value: Option<usize>,
    show_distribution: bool,
    wrap_longitude: Option<bool>,
    compression: Option<f64>,
    high_accuracy: bool,
}

impl Sourced for SmallBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type SF = Field<SmallBody>;

/// Parses `o` with `parser`, under its own name, for the aggregation `name`.
fn small(
    parser: &ObjectParser<SmallBody>,
    name: &str,
    o: &Map<String, Value>,
) -> EsResult<SmallBody> {
    let mut b = SmallBody {
        name: name.to_string(),
        ..SmallBody::default()
    };
    parser.parse_into(&mut b, o)?;
    Ok(b)
}

/// A count that must be positive, as ES's samplers check it (`es_key` names it).
fn positive(b: &SmallBody, at: &At<'_>, v: &Value, es_key: &str) -> EsResult<usize> {
    let n = int32(at.parser, at.key, v)?;
    if n <= 0 {
        return Err(EsError::illegal_argument(format!(
            "[{es_key}] must be greater than 0. Found [{n}] in [{}]",
            b.name
        )));
    }
    Ok(n as usize)
}

static GLOBAL: ObjectParser<SmallBody> = ObjectParser {
    name: "global",
    style: fields::AGG,
    fields: &[],
};

static MISSING: ObjectParser<SmallBody> = ObjectParser {
    name: "missing",
    style: fields::AGG,
    fields: &[&fields::field(), &fields::script(), &fields::value_type()],
};

static NESTED: ObjectParser<SmallBody> = ObjectParser {
    name: "nested",
    style: fields::AGG,
    fields: &[&[SF::new("path", "*", |b, _, v| {
        b.path = Some(v.clone());
        Ok(())
    })]],
};

static REVERSE_NESTED: ObjectParser<SmallBody> = ObjectParser {
    name: "reverse_nested",
    style: fields::AGG,
    fields: &[&[SF::new("path", "s", |b, _, v| {
        b.path = Some(v.clone());
        Ok(())
    })]],
};

static SAMPLER: ObjectParser<SmallBody> = ObjectParser {
    name: "sampler",
    style: fields::AGG,
    fields: &[&[SF::new("shard_size", "*", |b, at, v| {
        b.shard_size = Some(positive(b, at, v, "shardSize")?);
        Ok(())
    })]],
};

static DIVERSIFIED_SAMPLER: ObjectParser<SmallBody> = ObjectParser {
    name: "diversified_sampler",
    style: fields::AGG,
    fields: &[
        &[
            SF::new("shard_size", "*", |b, at, v| {
                b.shard_size = Some(positive(b, at, v, "shardSize")?);
                Ok(())
            }),
            SF::new("max_docs_per_value", "*", |b, at, v| {
                b.max_docs_per_value = Some(positive(b, at, v, "maxDocsPerValue")?);
                Ok(())
            }),
            // Only how ES finds the values: every hint gives the same sample.
            SF::new("execution_hint", "*", |_, at, v| {
                let h = string(at.parser, at.key, v)?;
                if !["map", "global_ordinals", "bytes_hash"].contains(&h.as_str()) {
                    return Err(EsError::illegal_argument(format!(
                        "Unknown `execution_hint`: [{h}], expected any of [map, global_ordinals, bytes_hash]"
                    )));
                }
                Ok(())
            }),
        ],
        &fields::field(),
        &fields::missing(),
    ],
};

static STRING_STATS: ObjectParser<SmallBody> = ObjectParser {
    name: "string_stats",
    style: fields::AGG,
    fields: &[
        &[
            // a value, kept as its text
            SF::new("missing", "v", |b, _, v| {
                b.source.missing = Some(v.clone());
                Ok(())
            }),
            SF::new("show_distribution", "*", |b, at, v| {
                b.show_distribution = boolean(at.parser, at.key, v)?;
                Ok(())
            }),
            SF::new("value_type", "*", |_, at, v| {
                string(at.parser, at.key, v).map(drop)
            }),
        ],
        &fields::field(),
    ],
};

static GEO_CENTROID: ObjectParser<SmallBody> = ObjectParser {
    name: "geo_centroid",
    style: fields::AGG,
    fields: &[&fields::field()],
};

static GEO_BOUNDS: ObjectParser<SmallBody> = ObjectParser {
    name: "geo_bounds",
    style: fields::AGG,
    fields: &[
        &[SF::new("wrap_longitude", "*", |b, at, v| match v {
            Value::Bool(w) => {
                b.wrap_longitude = Some(*w);
                Ok(())
            }
            _ => Err(EsError::x_content_parse(format!(
                "[{}] failed to parse field [{}]",
                at.parser, at.key
            ))),
        })],
        &fields::field(),
    ],
};

pub(crate) fn token_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "START_OBJECT",
        Value::Array(_) => "START_ARRAY",
        Value::String(_) => "VALUE_STRING",
        Value::Number(_) => "VALUE_NUMBER",
        Value::Bool(_) => "VALUE_BOOLEAN",
        Value::Null => "VALUE_NULL",
    }
}

/// Marks a field name that stands for an aggregation's `script` (see [`ScriptSpec`]).
pub(crate) const SCRIPT_MARK: char = '\u{2}';

/// An aggregation's `script`: with `field`, a value script (`_value` is each of the field's
/// values); without, the script's values. Carried as the aggregation's field name (JSON
/// after [`SCRIPT_MARK`]) and turned into a runtime field of the search when planned.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct ScriptSpec {
    pub script: Value,
    pub field: Option<String>,
    pub value_type: Option<String>,
    /// Values as keys (terms, cardinality, value_count): keywords unless typed.
    pub keys: bool,
    /// Values as dates (`date_histogram`, `date_range`): dates unless typed, as ES's
    /// `ValueType.DATE` default for them.
    #[serde(default)]
    pub date: bool,
}

impl ScriptSpec {
    pub fn of(name: &str) -> Option<ScriptSpec> {
        serde_json::from_str(name.strip_prefix(SCRIPT_MARK)?).ok()
    }
}

/// The aggregation's `field`, or the field name standing for its `script`, from the keys as
/// written.
pub(crate) fn field_or_script_of(
    field: Option<&Value>,
    script: Option<&Value>,
    value_type: Option<&Value>,
    keys: bool,
    date: bool,
) -> EsResult<String> {
    let Some(script) = script else {
        return required_field_of(field);
    };
    let field = match field {
        None => None,
        Some(_) => Some(required_field_of(field)?),
    };
    let value_type = match value_type {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(EsError::x_content_parse(format!(
                "[value_type] must be a string but was [{}]",
                token_name(other)
            )))
        }
    };
    let spec = ScriptSpec {
        script: script.clone(),
        field,
        value_type,
        keys,
        date,
    };
    Ok(format!(
        "{SCRIPT_MARK}{}",
        serde_json::to_string(&spec).map_err(|e| EsError::internal(e.to_string()))?
    ))
}

pub(crate) fn required_field(obj: &Map<String, Value>) -> EsResult<String> {
    required_field_of(obj.get("field"))
}

/// The `field` as written: a string, required.
pub(crate) fn required_field_of(field: Option<&Value>) -> EsResult<String> {
    match field {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(EsError::x_content_parse(format!(
            "[field] must be a string but was [{}]",
            token_name(other)
        ))),
        None => Err(EsError::illegal_argument(
            "Required one of fields [field, script], but none were specified. ",
        )),
    }
}

pub(crate) fn num(ty: &str, key: &str, v: &Value) -> EsResult<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        EsError::x_content_parse(format!("[{ty}] failed to parse field [{key}]")).caused_by(
            EsError::illegal_argument(format!(
                "[{key}] doesn't support values of type: {}",
                token_name(v)
            )),
        )
    })
}

pub(crate) fn int(ty: &str, key: &str, v: &Value) -> EsResult<i64> {
    let x = num(ty, key, v)?;
    if x.fract() != 0.0 {
        return Err(
            EsError::x_content_parse(format!("[{ty}] failed to parse field [{key}]")).caused_by(
                EsError::illegal_argument(format!("Value [{x}] has a decimal part")),
            ),
        );
    }
    Ok(x as i64)
}

/// A field Elasticsearch declares as `int` (`ObjectParser#declareInt`): a value outside
/// `i32` fails as Jackson's int coercion fails, instead of reaching tantivy's `u32` fields.
pub(crate) fn int32(ty: &str, key: &str, v: &Value) -> EsResult<i64> {
    let x = int(ty, key, v)?;
    if i32::try_from(x).is_err() {
        return Err(
            EsError::x_content_parse(format!("[{ty}] failed to parse field [{key}]")).caused_by(
                EsError::illegal_argument(format!(
                    "Numeric value ({x}) out of range of int (-2147483648 - 2147483647)"
                )),
            ),
        );
    }
    Ok(x)
}

pub(crate) fn boolean(ty: &str, key: &str, v: &Value) -> EsResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        _ => Err(EsError::x_content_parse(format!(
            "[{ty}] failed to parse field [{key}]"
        ))),
    }
}

pub(crate) fn string(ty: &str, key: &str, v: &Value) -> EsResult<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(EsError::x_content_parse(format!(
            "[{ty}] {key} doesn't support values of type: {}",
            token_name(v)
        ))),
    }
}

/// `order` (declared as an object or an array of objects): each object is one order, read as
/// ES's `InternalOrder.Parser#parseOrderParam` reads it (the last key names it, a direction
/// is `asc` or `desc` in any case); its refusals wrapped as the `ObjectParser` wraps a
/// field's failure.
fn parse_order(at: &At<'_>, v: &Value) -> EsResult<Vec<BucketOrder>> {
    let failed = |e: EsError| {
        EsError::x_content_parse(format!(
            "[{}] failed to parse field [{}]",
            at.parser, at.key
        ))
        .caused_by(e)
    };
    let items = match v {
        Value::Array(a) => a.as_slice(),
        other => std::slice::from_ref(other),
    };
    let mut out = Vec::new();
    for item in items {
        let o = item.as_object().ok_or_else(|| {
            failed(EsError::parsing(format!(
                "Unexpected token [{}] for [order]",
                token_name(item)
            )))
        })?;
        let mut last = None;
        for (k, dir) in o {
            let Value::String(d) = dir else {
                return Err(failed(EsError::parsing(format!(
                    "Unexpected token [{}] for [order]",
                    token_name(dir)
                ))));
            };
            let asc = if d.eq_ignore_ascii_case("asc") {
                true
            } else if d.eq_ignore_ascii_case("desc") {
                false
            } else {
                return Err(failed(EsError::parsing(format!(
                    "Unknown order direction [{d}]"
                ))));
            };
            last = Some((k, asc));
        }
        let (k, asc) = last.ok_or_else(|| {
            failed(EsError::parsing(
                "Must specify at least one field for [order]",
            ))
        })?;
        let key = match k.as_str() {
            "_count" => OrderKey::Count,
            "_key" | "_term" | "_time" => OrderKey::Key,
            path => {
                if path.contains('>') || path.contains('[') {
                    return Err(EsError::illegal_argument(format!(
                        "Invalid aggregation order path [{path}]: multi-level paths are not supported"
                    )));
                }
                match path.split_once('.') {
                    Some((agg, metric)) => OrderKey::Path {
                        agg: agg.to_string(),
                        metric: Some(metric.to_string()),
                    },
                    None => OrderKey::Path {
                        agg: path.to_string(),
                        metric: None,
                    },
                }
            }
        };
        out.push(BucketOrder { key, asc });
    }
    Ok(out)
}

fn parse_include_exclude(ty: &str, key: &str, v: &Value) -> EsResult<IncludeExclude> {
    match v {
        Value::String(s) => Ok(IncludeExclude::Regex(s.clone())),
        Value::Array(a) => Ok(IncludeExclude::Values(a.clone())),
        Value::Object(o) if key == "include" => parse_partition(ty, key, o),
        Value::Object(_) => Err(EsError::x_content_parse(format!(
            "[{ty}] failed to parse field [{key}]"
        ))
        .caused_by(EsError::illegal_argument(
            "Unrecognized token for an exclude [START_OBJECT]",
        ))),
        other => Err(EsError::x_content_parse(format!(
            "[{ty}] {key} doesn't support values of type: {}",
            token_name(other)
        ))),
    }
}

/// `include`'s partition object as read.
#[derive(Default)]
struct PartitionBody {
    partition: Option<i64>,
    num_partitions: Option<i64>,
}

/// ES's `IncludeExclude.parseInclude` for an object (hand-written there: any other key is a
/// `parse_exception`).
static PARTITION: ObjectParser<PartitionBody> = ObjectParser {
    name: "include",
    style: Style::Custom {
        unknown: |at, _, _| {
            EsError::new(
                400,
                "parse_exception",
                format!("Unknown parameter in Include/Exclude clause: {}", at.key),
            )
        },
        wrong_token: |at, t| {
            EsError::x_content_parse(format!(
                "[{}] {} doesn't support values of type: {}",
                at.parser,
                at.key,
                t.es_name()
            ))
        },
    },
    fields: &[&[
        Field::new("partition", "*", |b, at, v| {
            b.partition = Some(int32(at.parser, at.key, v)?);
            Ok(())
        }),
        Field::new("num_partitions", "*", |b, at, v| {
            b.num_partitions = Some(int32(at.parser, at.key, v)?);
            Ok(())
        }),
    ]],
};

/// ES's `IncludeExclude.parseInclude` for an object: `{"partition": p, "num_partitions": n}`
/// (ints), its errors wrapped as the `ObjectParser` wraps a field's failure.
fn parse_partition(ty: &str, key: &str, o: &Map<String, Value>) -> EsResult<IncludeExclude> {
    let wrap = |e: EsError| {
        EsError::x_content_parse(format!("[{ty}] failed to parse field [{key}]")).caused_by(e)
    };
    let mut b = PartitionBody::default();
    PARTITION.parse_named(ty, &mut b, o).map_err(|e| {
        // an int that does not parse is refused by the aggregation's parser itself
        if e.kind == "parse_exception" {
            wrap(e)
        } else {
            e
        }
    })?;
    let partition = b.partition.ok_or_else(|| {
        wrap(EsError::illegal_argument(
            "Missing [partition] parameter for partition-based include",
        ))
    })?;
    let num = b.num_partitions.ok_or_else(|| {
        wrap(EsError::illegal_argument(
            "Missing [num_partitions] parameter for partition-based include",
        ))
    })?;
    if partition < 0 || partition >= num {
        return Err(wrap(EsError::illegal_argument(format!(
            "Partition must be >=0 and < numPartition which is {num}"
        ))));
    }
    Ok(IncludeExclude::Partition {
        partition: partition as u32,
        num_partitions: num as u32,
    })
}

/// A `terms` body under construction.
struct TermsBody {
    name: String,
    source: Source,
    r: TermsReq,
}

impl Sourced for TermsBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type TF = Field<TermsBody>;

/// `include` or `exclude`, with ES's `IncludeExclude.merge` run as the second is parsed.
fn set_include_exclude(b: &mut TermsBody, at: &At<'_>, v: &Value) -> EsResult<()> {
    let f = Some(parse_include_exclude(at.parser, at.key, v)?);
    if at.key == "include" {
        b.r.include = f
    } else {
        b.r.exclude = f
    }
    if matches!(b.r.include, Some(IncludeExclude::Partition { .. })) && b.r.exclude.is_some() {
        return Err(EsError::x_content_parse(format!(
            "[{}] failed to parse field [{}]",
            at.parser, at.key
        ))
        .caused_by(EsError::illegal_argument(
            "Cannot specify any excludes when using a partition-based include",
        )));
    }
    Ok(())
}

static TERMS: ObjectParser<TermsBody> = ObjectParser {
    name: "terms",
    style: fields::AGG,
    fields: &[
        &[
            TF::new("size", "*", |b, at, v| {
                let n = int32(at.parser, at.key, v)?;
                if n <= 0 {
                    return Err(EsError::illegal_argument(format!(
                        "[size] must be greater than 0. Found [{n}] in [{}]",
                        b.name
                    )));
                }
                b.r.size = n as usize;
                Ok(())
            }),
            TF::new("shard_size", "*", |b, at, v| {
                let n = int32(at.parser, at.key, v)?;
                if n == 0 || n < -1 {
                    return Err(EsError::illegal_argument(format!(
                        "[shardSize] must be greater than 0. Found [{n}] in [{}]",
                        b.name
                    )));
                }
                b.r.shard_size = (n > 0).then_some(n as usize);
                Ok(())
            }),
            TF::new("min_doc_count", "*", |b, at, v| {
                let n = int(at.parser, at.key, v)?;
                if n < 0 {
                    return Err(EsError::illegal_argument(format!(
                        "[minDocCount] must be greater than or equal to 0. Found [{n}] in [{}]",
                        b.name
                    )));
                }
                b.r.min_doc_count = n as u64;
                Ok(())
            }),
            TF::new("shard_min_doc_count", "*", |b, at, v| {
                let n = int(at.parser, at.key, v)?;
                if n < 0 {
                    return Err(EsError::illegal_argument(format!(
                        "[shardMinDocCount] must be greater than or equal to 0. Found [{n}] in [{}]",
                        b.name
                    )));
                }
                b.r.shard_min_doc_count = n as u64;
                Ok(())
            }),
            // How ES collects the buckets: hints, validated as ES validates them; Lode's
            // counts are exact whichever is asked.
            TF::new("execution_hint", "s", |_, _, v| {
                let hint = v.as_str().unwrap_or_default();
                if !matches!(hint, "map" | "global_ordinals") {
                    return Err(EsError::illegal_argument(format!(
                        "Unknown `execution_hint`: [{hint}], expected any of [map, global_ordinals]"
                    )));
                }
                Ok(())
            }),
            TF::new("collect_mode", "s", |_, at, v| {
                let mode = v.as_str().unwrap_or_default();
                if !matches!(mode, "depth_first" | "breadth_first") {
                    return Err(failed_field(
                        at,
                        EsError::new(
                            400,
                            "parse_exception",
                            format!("no [collect_mode] found for value [{mode}]"),
                        ),
                    ));
                }
                Ok(())
            }),
            TF::new("order", "oa", |b, at, v| {
                b.r.order = parse_order(at, v)?;
                Ok(())
            }),
            TF::new("include", "*", set_include_exclude),
            TF::new("exclude", "*", set_include_exclude),
            TF::new("show_term_doc_count_error", "*", |b, at, v| {
                b.r.show_term_doc_count_error = boolean(at.parser, at.key, v)?;
                Ok(())
            }),
        ],
        &fields::values_source(),
    ],
};

/// The `terms` parameters of an aggregation of type `ty` (`terms`, or the aggregations that
/// pass their `terms` keys on: refusals name that type, as ES's parsers do).
fn parse_terms(name: &str, ty: &str, o: &Map<String, Value>) -> EsResult<TermsReq> {
    let mut b = TermsBody {
        name: name.to_string(),
        source: Source::default(),
        r: TermsReq {
            field: String::new(),
            size: 10,
            shard_size: None,
            min_doc_count: 1,
            shard_min_doc_count: 0,
            order: vec![BucketOrder {
                key: OrderKey::Count,
                asc: false,
            }],
            missing: None,
            include: None,
            exclude: None,
            show_term_doc_count_error: false,
            format: None,
        },
    };
    TERMS.parse_named(ty, &mut b, o)?;
    let mut r = b.r;
    r.field = b.source.field_or_script(true, false)?;
    r.missing = b.source.missing;
    r.format = b.source.format;
    // Every order ends with the key as tie-breaker, as Elasticsearch's compound orders do.
    if !r.order.iter().any(|o| o.key == OrderKey::Key) {
        r.order.push(BucketOrder {
            key: OrderKey::Key,
            asc: true,
        });
    }
    Ok(r)
}

/// The body of `significant_terms` and `significant_text` as their parsers read it: the keys
/// handed on to the `terms` parser, a background filter, a heuristic, and `significant_text`'s
/// own `filter_duplicate_text` and `source_fields`.
#[derive(Default)]
struct SignificantBody {
    background_filter: Option<Box<DslQuery>>,
    filter_duplicate_text: bool,
    source_fields: Option<Vec<String>>,
    heuristic: Option<Heuristic>,
    terms: Map<String, Value>,
}

impl Heuristics for SignificantBody {
    fn heuristic(&mut self) -> &mut Option<Heuristic> {
        &mut self.heuristic
    }
}

impl SignificantBody {
    /// A key read by the `terms` parser.
    fn pass_to_terms(&mut self, at: &At<'_>, v: &Value) -> EsResult<()> {
        self.terms.insert(at.key.to_string(), v.clone());
        Ok(())
    }
}

/// `significant_terms`: the `terms` parameters (`min_doc_count` defaults to 3), an optional
/// `background_filter`, and a significance heuristic (`jlh` by default, see `significant.rs`).
fn parse_significant_terms(name: &str, o: &Map<String, Value>) -> EsResult<AggKind> {
    const TY: &str = "significant_terms";
    type Body = SignificantBody;
    type BF = Field<Body>;
    static P: ObjectParser<Body> = ObjectParser {
        name: TY,
        style: fields::AGG,
        fields: &[
            &[BF::new("background_filter", "*", |b, _, v| {
                b.background_filter = Some(Box::new(parse_dsl(v)?));
                Ok(())
            })],
            &heuristic_fields(),
            // read by the `terms` parser; ES's parser declares the values-source fields
            // (`declareFields(PARSER, true, true, false)`): `script` is refused when planning.
            &[
                BF::new("field", "*", Body::pass_to_terms),
                BF::new("size", "*", Body::pass_to_terms),
                BF::new("shard_size", "*", Body::pass_to_terms),
                BF::new("min_doc_count", "*", Body::pass_to_terms),
                BF::new("shard_min_doc_count", "*", Body::pass_to_terms),
                BF::new("include", "*", Body::pass_to_terms),
                BF::new("exclude", "*", Body::pass_to_terms),
                BF::new("execution_hint", "*", Body::pass_to_terms),
                BF::new("value_type", "*", Body::pass_to_terms),
                BF::new("missing", "*", Body::pass_to_terms),
                BF::new("format", "*", Body::pass_to_terms),
                BF::new("script", "*", Body::pass_to_terms),
            ],
        ],
    };
    let mut b = Body::default();
    P.parse_into(&mut b, o)?;
    let heuristic = b.heuristic.unwrap_or(Heuristic::Jlh);
    let background_filter = b.background_filter;
    let only = b.terms;
    let mut terms = parse_terms(name, TY, &only)?;
    if !o.contains_key("min_doc_count") {
        terms.min_doc_count = 3;
    }
    Ok(AggKind::SignificantTerms {
        terms,
        background_filter,
        heuristic,
    })
}

/// `significant_text`: `field`, `size`, `shard_size`, `min_doc_count` (default 3),
/// `shard_min_doc_count`, `include`/`exclude` (read by the `terms` parser), `background_filter`,
/// `filter_duplicate_text`, `source_fields`, and a significance heuristic: the keys of ES's
/// `SignificantTextAggregationBuilder` parser.
fn parse_significant_text(name: &str, o: &Map<String, Value>) -> EsResult<AggKind> {
    const TY: &str = "significant_text";
    type Body = SignificantBody;
    type BF = Field<Body>;
    static P: ObjectParser<Body> = ObjectParser {
        name: TY,
        style: fields::AGG,
        fields: &[
            &[
                BF::new("field", "s", Body::pass_to_terms),
                BF::new("size", "*", Body::pass_to_terms),
                BF::new("shard_size", "*", Body::pass_to_terms),
                BF::new("min_doc_count", "*", Body::pass_to_terms),
                BF::new("shard_min_doc_count", "*", Body::pass_to_terms),
                BF::new("include", "*", Body::pass_to_terms),
                BF::new("exclude", "*", Body::pass_to_terms),
                BF::new("background_filter", "o", |b, _, v| {
                    b.background_filter = Some(Box::new(parse_dsl(v)?));
                    Ok(())
                }),
                BF::new("filter_duplicate_text", "bs", |b, at, v| {
                    b.filter_duplicate_text = boolean(at.parser, at.key, v)?;
                    Ok(())
                }),
                // `declareStringArray`: a string, or an array of strings
                BF::new("source_fields", "sa", |b, at, v| {
                    let items = match v {
                        Value::Array(a) => a.as_slice(),
                        other => std::slice::from_ref(other),
                    };
                    let fields = items
                        .iter()
                        .map(|x| {
                            x.as_str().map(str::to_string).ok_or_else(|| {
                                EsError::x_content_parse(format!(
                                    "[{}] {} doesn't support values of type: {}",
                                    at.parser,
                                    at.key,
                                    token_name(x)
                                ))
                            })
                        })
                        .collect::<EsResult<Vec<_>>>()?;
                    b.source_fields = Some(fields);
                    Ok(())
                }),
            ],
            &heuristic_fields(),
        ],
    };
    let mut b = Body::default();
    P.parse_into(&mut b, o)?;
    if !b.terms.contains_key("field") {
        required_field(&b.terms)?;
    }
    let mut terms = parse_terms(name, TY, &b.terms)?;
    if !b.terms.contains_key("min_doc_count") {
        terms.min_doc_count = 3;
    }
    Ok(AggKind::SignificantText(Box::new(
        crate::significant_text::SignificantTextReq {
            terms,
            background_filter: b.background_filter,
            filter_duplicate_text: b.filter_duplicate_text,
            source_fields: b.source_fields,
            heuristic: b.heuristic.unwrap_or(Heuristic::Jlh),
        },
    )))
}

/// `rare_terms`: `field`, `max_doc_count` (1 to 100), `precision` (validated: Lode counts
/// exactly), `include`, `exclude`, `missing`, `format`.
fn parse_rare_terms(name: &str, o: &Map<String, Value>) -> EsResult<AggKind> {
    const TY: &str = "rare_terms";
    #[derive(Default)]
    struct Body {
        name: String,
        max_doc_count: Option<u64>,
        terms: Map<String, Value>,
    }
    type BF = Field<Body>;
    static P: ObjectParser<Body> = ObjectParser {
        name: TY,
        style: fields::AGG,
        fields: &[&[
            BF::new("max_doc_count", "*", |b, at, v| {
                let failed = |reason: String| {
                    EsError::x_content_parse(format!(
                        "[{}] failed to parse field [{}]",
                        at.parser, at.key
                    ))
                    .caused_by(EsError::illegal_argument(reason))
                };
                let n = int(at.parser, at.key, v)?;
                if n <= 0 {
                    return Err(failed(format!(
                        "[max_doc_count] must be greater than 0. Found [{n}] in [{}]",
                        b.name
                    )));
                }
                if n > 100 {
                    // Elasticsearch's message, spaces as it has them.
                    return Err(failed(format!(
                        "[max_doc_count] must be smallerthan 100in [{}]",
                        b.name
                    )));
                }
                b.max_doc_count = Some(n as u64);
                Ok(())
            }),
            // validated only: Lode counts exactly
            BF::new("precision", "*", |_, at, v| {
                if num(at.parser, at.key, v)? < 0.00001 {
                    return Err(EsError::x_content_parse(format!(
                        "[{}] failed to parse field [{}]",
                        at.parser, at.key
                    ))
                    .caused_by(EsError::illegal_argument(
                        "[precision] must be greater than 0.00001",
                    )));
                }
                Ok(())
            }),
            // read by the `terms` parser
            BF::new("field", "*", to_terms),
            BF::new("include", "*", to_terms),
            BF::new("exclude", "*", to_terms),
            BF::new("missing", "*", to_terms),
            BF::new("format", "*", to_terms),
            BF::new("value_type", "*", to_terms),
        ]],
    };
    fn to_terms(b: &mut Body, at: &At<'_>, v: &Value) -> EsResult<()> {
        b.terms.insert(at.key.to_string(), v.clone());
        Ok(())
    }
    let mut b = Body {
        name: name.to_string(),
        ..Body::default()
    };
    P.parse_into(&mut b, o)?;
    let max_doc_count = b.max_doc_count.unwrap_or(1);
    let only = b.terms;
    let mut terms = parse_terms(name, TY, &only)?;
    terms.order = vec![
        BucketOrder {
            key: OrderKey::Count,
            asc: true,
        },
        BucketOrder {
            key: OrderKey::Key,
            asc: true,
        },
    ];
    Ok(AggKind::RareTerms {
        terms,
        max_doc_count,
    })
}

/// `multi_terms`: `terms` (at least two `{field, script, missing, format, value_type}`) and
/// the bucket parameters of `terms`, the keys of ES's `MultiTermsAggregationBuilder` parser.
fn parse_multi_terms(name: &str, o: &Map<String, Value>) -> EsResult<MultiTermsReq> {
    const TY: &str = "multi_terms";
    #[derive(Default)]
    struct Body {
        terms: Option<Vec<Map<String, Value>>>,
        base: Map<String, Value>,
    }
    type BF = Field<Body>;
    fn to_base(b: &mut Body, at: &At<'_>, v: &Value) -> EsResult<()> {
        b.base.insert(at.key.to_string(), v.clone());
        Ok(())
    }
    static P: ObjectParser<Body> = ObjectParser {
        name: TY,
        style: fields::AGG,
        fields: &[&[
            // `declareObjectArray`: an array of objects, or one object
            BF::new("terms", "oa", |b, at, v| {
                let items = match v {
                    Value::Array(a) => a.as_slice(),
                    other => std::slice::from_ref(other),
                };
                let entries = items
                    .iter()
                    .map(|x| {
                        x.as_object().cloned().ok_or_else(|| {
                            EsError::x_content_parse(format!(
                                "[{}] {} doesn't support values of type: {}",
                                at.parser,
                                at.key,
                                token_name(x)
                            ))
                        })
                    })
                    .collect::<EsResult<Vec<_>>>()?;
                b.terms = Some(entries);
                Ok(())
            }),
            // read by the `terms` parser
            BF::new("size", "*", to_base),
            BF::new("shard_size", "*", to_base),
            BF::new("min_doc_count", "*", to_base),
            BF::new("shard_min_doc_count", "*", to_base),
            BF::new("order", "*", to_base),
            BF::new("collect_mode", "*", to_base),
            BF::new("show_term_doc_count_error", "*", to_base),
        ]],
    };
    /// An entry of `terms` (ES's `MultiValuesSourceFieldConfig`), named after the key.
    #[derive(Default)]
    struct Entry {
        keys: Map<String, Value>,
    }
    fn to_entry(e: &mut Entry, at: &At<'_>, v: &Value) -> EsResult<()> {
        e.keys.insert(at.key.to_string(), v.clone());
        Ok(())
    }
    static ENTRY: ObjectParser<Entry> = ObjectParser {
        name: "terms",
        style: Style::Object,
        fields: &[&[
            Field::new("field", "*", to_entry),
            Field::new("script", "*", to_entry),
            Field::new("missing", "*", to_entry),
            Field::new("format", "*", to_entry),
            Field::new("value_type", "*", to_entry),
        ]],
    };
    let mut b = Body::default();
    P.parse_into(&mut b, o)?;
    let items = b.terms.unwrap_or_default();
    if items.len() < 2 {
        return Err(EsError::illegal_argument(format!(
            "The [terms] parameter in the aggregation [{name}] must be present and have at least 2 fields or scripts."
        )));
    }
    let mut terms = Vec::with_capacity(items.len());
    for item in &items {
        let e = ENTRY.parse(item)?;
        terms.push(parse_terms(name, TY, &e.keys)?);
    }
    let mut base_obj = b.base;
    base_obj.insert("field".into(), json!(""));
    let base = parse_terms(name, TY, &base_obj)?;
    Ok(MultiTermsReq { base, terms })
}

/// `extended_bounds` / `hard_bounds` as read (ES's `DoubleBounds` / `LongBounds` parsers:
/// `min` and `max`, each a value or null).
#[derive(Default)]
struct BoundsBody {
    min: Option<Value>,
    max: Option<Value>,
}

static BOUNDS: ObjectParser<BoundsBody> = ObjectParser {
    name: "bounds",
    style: Style::Object,
    fields: &[&[
        Field::new("min", "dsn", |b, _, v| {
            b.min = (!v.is_null()).then(|| v.clone());
            Ok(())
        }),
        Field::new("max", "dsn", |b, _, v| {
            b.max = (!v.is_null()).then(|| v.clone());
            Ok(())
        }),
    ]],
};

/// The bounds object under the key `key` of an aggregation of type `ty` (declared as an
/// object there); what its parser refuses is wrapped as ES's `ObjectParser` wraps it.
fn parse_bounds(ty: &str, key: &str, v: &Value) -> EsResult<(Option<Value>, Option<Value>)> {
    let o = v.as_object().ok_or_else(|| {
        EsError::x_content_parse(format!(
            "[{ty}] {key} doesn't support values of type: {}",
            token_name(v)
        ))
    })?;
    let mut b = BoundsBody::default();
    BOUNDS.parse_named(key, &mut b, o).map_err(|e| {
        EsError::x_content_parse(format!("[{ty}] failed to parse field [{key}]")).caused_by(e)
    })?;
    Ok((b.min, b.max))
}

fn numeric_bounds(ty: &str, key: &str, v: &Value) -> EsResult<(Option<f64>, Option<f64>)> {
    let (min, max) = parse_bounds(ty, key, v)?;
    let min = min.map(|m| num(key, "min", &m)).transpose()?;
    let max = max.map(|m| num(key, "max", &m)).transpose()?;
    if let (Some(a), Some(b)) = (min, max) {
        if a > b {
            return Err(EsError::illegal_argument(format!(
                "[{key}.min][{a}] cannot be greater than [{key}.max][{b}]."
            )));
        }
    }
    Ok((min, max))
}

/// A `histogram` body under construction.
struct HistogramBody {
    name: String,
    source: Source,
    interval: Option<f64>,
    r: HistogramReq,
}

impl Sourced for HistogramBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type HF = Field<HistogramBody>;

/// A histogram's `min_doc_count` (both kinds refuse a negative one in the same words).
fn histogram_min_doc_count(name: &str, at: &At, v: &Value) -> EsResult<u64> {
    let n = int(at.parser, at.key, v)?;
    if n < 0 {
        return Err(EsError::illegal_argument(format!(
            "[minDocCount] must be greater than or equal to 0. Found [{n}] in [{name}]"
        )));
    }
    Ok(n as u64)
}

static HISTOGRAM: ObjectParser<HistogramBody> = ObjectParser {
    name: "histogram",
    style: fields::AGG,
    fields: &[
        &[
            HF::new("interval", "*", |b, at, v| {
                b.interval = Some(num(at.parser, at.key, v)?);
                Ok(())
            }),
            HF::new("offset", "*", |b, at, v| {
                b.r.offset = num(at.parser, at.key, v)?;
                Ok(())
            }),
            HF::new("min_doc_count", "*", |b, at, v| {
                b.r.min_doc_count = histogram_min_doc_count(&b.name, at, v)?;
                Ok(())
            }),
            HF::new("extended_bounds", "*", |b, at, v| {
                b.r.extended_bounds = Some(numeric_bounds(at.parser, at.key, v)?);
                Ok(())
            }),
            HF::new("hard_bounds", "*", |b, at, v| {
                b.r.hard_bounds = Some(numeric_bounds(at.parser, at.key, v)?);
                Ok(())
            }),
            HF::new("keyed", "*", |b, at, v| {
                b.r.keyed = boolean(at.parser, at.key, v)?;
                Ok(())
            }),
            HF::new("order", "oa", |b, at, v| {
                b.r.order = parse_order(at, v)?;
                Ok(())
            }),
        ],
        &fields::field(),
        &fields::script(),
        &fields::missing_scalar(),
        &fields::format(),
    ],
};

fn parse_histogram(name: &str, o: &Map<String, Value>) -> EsResult<HistogramReq> {
    let mut b = HistogramBody {
        name: name.to_string(),
        source: Source::default(),
        interval: None,
        r: HistogramReq {
            field: String::new(),
            interval: 0.0,
            offset: 0.0,
            min_doc_count: 0,
            extended_bounds: None,
            hard_bounds: None,
            keyed: false,
            order: vec![BucketOrder {
                key: OrderKey::Key,
                asc: true,
            }],
            format: None,
            missing: None,
        },
    };
    HISTOGRAM.parse_into(&mut b, o)?;
    let mut r = b.r;
    r.field = b.source.field_or_script(false, false)?;
    r.interval = match b.interval {
        Some(i) if i > 0.0 && i.is_finite() => i,
        _ => {
            return Err(EsError::illegal_argument(format!(
                "[interval] must be >0 for histogram aggregation [{name}]"
            )))
        }
    };
    r.missing = b.source.missing;
    r.format = b.source.format;
    Ok(r)
}

/// A values source's `missing`: a scalar (ES's `XContentParser#objectText`: a string, a
/// number or a boolean).
fn missing_value(ty: &str, v: &Value) -> EsResult<Value> {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => Ok(v.clone()),
        other => Err(EsError::x_content_parse(format!(
            "[{ty}] missing doesn't support values of type: {}",
            token_name(other)
        ))),
    }
}

/// Parses an offset such as `+6h`, `-1d` or a number of milliseconds.
fn parse_offset(v: &Value) -> EsResult<i64> {
    match v {
        Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0) as i64),
        Value::String(s) => {
            let s = s.trim();
            let (neg, rest) = match s.strip_prefix('-') {
                Some(r) => (true, r),
                None => (false, s.strip_prefix('+').unwrap_or(s)),
            };
            let ms = parse_time_value(rest).map_err(|e| EsError::illegal_argument(e.reason))?;
            Ok(if neg { -ms } else { ms })
        }
        other => Err(EsError::x_content_parse(format!(
            "[date_histogram] offset doesn't support values of type: {}",
            token_name(other)
        ))),
    }
}

fn parse_time_zone(v: &Value) -> EsResult<Tz> {
    let s = v
        .as_str()
        .ok_or_else(|| EsError::x_content_parse("[time_zone] must be a string"))?;
    Tz::parse(s).map_err(|e| EsError::illegal_argument(e.reason))
}

pub(crate) fn parse_calendar(s: &str) -> EsResult<CalendarUnit> {
    CalendarUnit::parse(s).ok_or_else(|| {
        EsError::illegal_argument(format!(
            "The supplied interval [{s}] could not be parsed as a calendar interval."
        ))
    })
}

pub(crate) fn parse_fixed(s: &str) -> EsResult<i64> {
    let ms = lode_dates::parse_time_value_setting(s, "date_histogram.fixedInterval")
        .map_err(|e| EsError::illegal_argument(e.reason))?;
    if ms <= 0 {
        return Err(EsError::illegal_argument(format!(
            "The supplied interval [{s}] could not be parsed as a fixed interval."
        )));
    }
    Ok(ms)
}

/// A `date_histogram` body under construction.
struct DateHistogramBody {
    name: String,
    source: Source,
    calendar: Option<String>,
    fixed: Option<String>,
    legacy: Option<String>,
    r: DateHistogramReq,
}

impl Sourced for DateHistogramBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type DF = Field<DateHistogramBody>;

static DATE_HISTOGRAM: ObjectParser<DateHistogramBody> = ObjectParser {
    name: "date_histogram",
    style: fields::AGG,
    fields: &[
        &[
            DF::new("calendar_interval", "*", |b, at, v| {
                b.calendar = Some(string(at.parser, at.key, v)?);
                Ok(())
            }),
            DF::new("fixed_interval", "*", |b, at, v| {
                b.fixed = Some(string(at.parser, at.key, v)?);
                Ok(())
            }),
            DF::new("interval", "*", |b, at, v| {
                b.legacy = Some(string(at.parser, at.key, v)?);
                Ok(())
            }),
            DF::new("time_zone", "*", |b, _, v| {
                b.r.time_zone = parse_time_zone(v)?;
                Ok(())
            }),
            DF::new("offset", "*", |b, _, v| {
                b.r.offset = parse_offset(v)?;
                Ok(())
            }),
            DF::new("min_doc_count", "*", |b, at, v| {
                b.r.min_doc_count = histogram_min_doc_count(&b.name, at, v)?;
                Ok(())
            }),
            DF::new("extended_bounds", "*", |b, at, v| {
                b.r.extended_bounds = Some(parse_bounds(at.parser, at.key, v)?);
                Ok(())
            }),
            DF::new("hard_bounds", "*", |b, at, v| {
                b.r.hard_bounds = Some(parse_bounds(at.parser, at.key, v)?);
                Ok(())
            }),
            DF::new("keyed", "*", |b, at, v| {
                b.r.keyed = boolean(at.parser, at.key, v)?;
                Ok(())
            }),
            DF::new("order", "oa", |b, at, v| {
                b.r.order = parse_order(at, v)?;
                Ok(())
            }),
        ],
        &fields::field(),
        &fields::script(),
        &fields::value_type(),
        &fields::missing_scalar(),
        &fields::format(),
    ],
};

fn parse_date_histogram(name: &str, o: &Map<String, Value>) -> EsResult<DateHistogramReq> {
    let mut b = DateHistogramBody {
        name: name.to_string(),
        source: Source::default(),
        calendar: None,
        fixed: None,
        legacy: None,
        r: DateHistogramReq {
            field: String::new(),
            interval: DateInterval::Fixed(0),
            time_zone: Tz::utc(),
            offset: 0,
            format: None,
            min_doc_count: 0,
            extended_bounds: None,
            hard_bounds: None,
            keyed: false,
            order: vec![BucketOrder {
                key: OrderKey::Key,
                asc: true,
            }],
            missing: None,
        },
    };
    DATE_HISTOGRAM.parse_into(&mut b, o)?;
    let mut r = b.r;
    r.field = b.source.field_or_script(false, true)?;
    r.interval = match (b.calendar, b.fixed, b.legacy) {
        (Some(_), Some(_), _) => {
            return Err(EsError::illegal_argument(
                "Cannot use [fixed_interval] with [calendar_interval] configuration option.",
            ))
        }
        (Some(_), None, Some(_)) | (None, Some(_), Some(_)) => {
            return Err(EsError::illegal_argument(
                "Cannot use [interval] with [fixed_interval] or [calendar_interval] configuration options.",
            ))
        }
        (Some(c), None, None) => DateInterval::Calendar(parse_calendar(&c)?),
        (None, Some(f), None) => DateInterval::Fixed(parse_fixed(&f)?),
        (None, None, Some(l)) => match CalendarUnit::parse(&l) {
            Some(unit) => DateInterval::Calendar(unit),
            None => DateInterval::Fixed(parse_fixed(&l)?),
        },
        (None, None, None) => {
            return Err(EsError::illegal_argument(
                "Invalid interval specified, must be non-null and non-empty",
            ))
        }
    };
    r.missing = b.source.missing;
    r.format = b.source.format;
    Ok(r)
}

/// A `range` or `date_range` body under construction.
struct RangeBody {
    source: Source,
    ranges: Option<Vec<RangeSpec>>,
    keyed: bool,
    time_zone: Option<Tz>,
    is_date: bool,
}

impl Sourced for RangeBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type RF = Field<RangeBody>;

static RANGE: ObjectParser<RangeBody> = ObjectParser {
    name: "range",
    style: fields::AGG,
    fields: &[
        &[
            RF::new("ranges", "a", |b, at, v| {
                let ranges = v.as_array().expect("declared as an array");
                let mut out = Vec::with_capacity(ranges.len());
                for r in ranges {
                    out.push(range_spec(at.parser, b.is_date, r)?);
                }
                b.ranges = Some(out);
                Ok(())
            }),
            RF::new("keyed", "*", |b, at, v| {
                b.keyed = boolean(at.parser, at.key, v)?;
                Ok(())
            }),
            RF::new("time_zone", "*", |b, _, v| {
                b.time_zone = Some(parse_time_zone(v)?);
                Ok(())
            }),
        ],
        &fields::field(),
        &fields::script(),
        &fields::missing(),
        &fields::format(),
    ],
};

/// One of `ranges`: `{key, from, to}` (ES's `RangeAggregator.Range` parser, named `range`).
fn range_spec(ty: &str, is_date: bool, r: &Value) -> EsResult<RangeSpec> {
    struct Entry {
        ty: &'static str,
        spec: RangeSpec,
    }
    type EF = Field<Entry>;
    static P: ObjectParser<Entry> = ObjectParser {
        name: "range",
        style: Style::Object,
        fields: &[&[
            EF::new("key", "*", |e, at, v| {
                e.spec.key = Some(string(e.ty, at.key, v)?);
                Ok(())
            }),
            EF::new("from", "*", |e, _, v| {
                e.spec.from = (!v.is_null()).then(|| v.clone());
                Ok(())
            }),
            EF::new("to", "*", |e, _, v| {
                e.spec.to = (!v.is_null()).then(|| v.clone());
                Ok(())
            }),
        ]],
    };
    let ro = r
        .as_object()
        .ok_or_else(|| EsError::x_content_parse(format!("[{ty}] range must be an object")))?;
    let ty: &'static str = if is_date { "date_range" } else { "range" };
    let mut e = Entry {
        ty,
        spec: RangeSpec {
            key: None,
            from: None,
            to: None,
        },
    };
    P.parse_into(&mut e, ro)?;
    if !is_date {
        for b in [&e.spec.from, &e.spec.to].into_iter().flatten() {
            num(ty, "from", b)?;
        }
    }
    Ok(e.spec)
}

fn parse_range(name: &str, ty: &str, o: &Map<String, Value>, is_date: bool) -> EsResult<RangeReq> {
    let mut b = RangeBody {
        source: Source::default(),
        ranges: None,
        keyed: false,
        time_zone: None,
        is_date,
    };
    RANGE.parse_named(ty, &mut b, o)?;
    let field = b.source.field_or_script(false, is_date)?;
    let ranges = match b.ranges {
        Some(r) if !r.is_empty() => r,
        _ => {
            return Err(EsError::illegal_argument(format!(
                "No [ranges] specified for the [{name}] aggregation"
            )))
        }
    };
    Ok(RangeReq {
        field,
        ranges,
        keyed: b.keyed,
        format: b.source.format,
        time_zone: b.time_zone,
        missing: b.source.missing,
        is_date,
    })
}

/// A `filters` body under construction.
#[derive(Default)]
struct FiltersBody {
    name: String,
    filters: Option<(Vec<(String, DslQuery)>, bool)>,
    other_bucket: Option<bool>,
    other_bucket_key: Option<String>,
    keyed: Option<bool>,
}

type FF = Field<FiltersBody>;

static FILTERS: ObjectParser<FiltersBody> = ObjectParser {
    name: "filters",
    style: fields::AGG,
    fields: &[&[
        // named (an object) or anonymous (an array, keyed by position)
        FF::new("filters", "*", |b, _, v| {
            b.filters = Some(match v {
                Value::Object(m) => (
                    m.iter()
                        .map(|(k, q)| Ok((k.clone(), parse_dsl(q)?)))
                        .collect::<EsResult<Vec<_>>>()?,
                    true,
                ),
                Value::Array(a) => (
                    a.iter()
                        .enumerate()
                        .map(|(i, q)| Ok((i.to_string(), parse_dsl(q)?)))
                        .collect::<EsResult<Vec<_>>>()?,
                    false,
                ),
                other => {
                    return Err(EsError::parsing(format!(
                        "Unknown token {} in [{}].",
                        token_name(other),
                        b.name
                    )))
                }
            });
            Ok(())
        }),
        FF::new("other_bucket", "*", |b, at, v| {
            b.other_bucket = Some(boolean(at.parser, at.key, v)?);
            Ok(())
        }),
        FF::new("other_bucket_key", "*", |b, at, v| {
            b.other_bucket_key = Some(string(at.parser, at.key, v)?);
            Ok(())
        }),
        FF::new("keyed", "*", |b, at, v| {
            b.keyed = Some(boolean(at.parser, at.key, v)?);
            Ok(())
        }),
    ]],
};

fn parse_filters(name: &str, o: &Map<String, Value>) -> EsResult<FiltersReq> {
    let b = {
        let mut b = FiltersBody {
            name: name.to_string(),
            ..FiltersBody::default()
        };
        FILTERS.parse_into(&mut b, o)?;
        b
    };
    let Some((filters, named)) = b.filters else {
        return Err(EsError::illegal_argument(format!(
            "[filters] cannot be null in [{name}]"
        )));
    };
    let other = b.other_bucket.unwrap_or(b.other_bucket_key.is_some());
    Ok(FiltersReq {
        filters,
        keyed: b.keyed.unwrap_or(true) && named,
        other_bucket: other.then(|| b.other_bucket_key.unwrap_or_else(|| "_other_".to_string())),
        ip_bounds: None,
        geo_distance: false,
    })
}

/// `ip_range`: each range (`from`/`to`, or a CIDR `mask`) becomes a range filter on the
/// field, bounds compared as IPv6 (IPv4 addresses mapped), `to` excluded, as ES's ranges.
/// An `ip_range` range as read (ES's `IpRangeAggregationBuilder#parseRange`): each key's
/// text (`textOrNull` for `from` and `to`).
#[derive(Default)]
struct IpRangeEntry {
    key: Option<String>,
    from: Option<String>,
    to: Option<String>,
    mask: Option<String>,
}

fn ip_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Hand-written in ES: any other key is "Unexpected ip range parameter".
static IP_RANGE_ENTRY: ObjectParser<IpRangeEntry> = ObjectParser {
    name: "range",
    style: Style::Custom {
        unknown: |at, _, _| {
            EsError::parsing(format!("Unexpected ip range parameter: [{}]", at.key))
        },
        wrong_token: |at, t| {
            EsError::parsing(format!(
                "[{}] must be a string, got {}",
                at.key,
                t.es_name()
            ))
        },
    },
    fields: &[&[
        Field::new("key", "vn", |r, _, v| {
            r.key = ip_text(v);
            Ok(())
        }),
        Field::new("from", "vn", |r, _, v| {
            r.from = ip_text(v);
            Ok(())
        }),
        Field::new("to", "vn", |r, _, v| {
            r.to = ip_text(v);
            Ok(())
        }),
        Field::new("mask", "vn", |r, _, v| {
            r.mask = ip_text(v);
            Ok(())
        }),
    ]],
};

fn parse_ip_range(o: &Map<String, Value>) -> EsResult<FiltersReq> {
    use std::net::{IpAddr, Ipv6Addr};
    /// The body: a field, `ranges`, `keyed` and a scalar `missing` address.
    #[derive(Default)]
    struct Body {
        source: Source,
        ranges: Option<Value>,
        keyed: bool,
    }
    impl Sourced for Body {
        fn source(&mut self) -> &mut Source {
            &mut self.source
        }
    }
    type BF = Field<Body>;
    static P: ObjectParser<Body> = ObjectParser {
        name: "ip_range",
        style: fields::AGG,
        fields: &[
            &[
                BF::new("ranges", "oa", |b, _, v| {
                    b.ranges = Some(match v {
                        Value::Array(_) => v.clone(),
                        other => Value::Array(vec![other.clone()]),
                    });
                    Ok(())
                }),
                BF::new("keyed", "*", |b, at, v| {
                    b.keyed = boolean(at.parser, at.key, v)?;
                    Ok(())
                }),
            ],
            &fields::field(),
            &fields::missing_scalar(),
        ],
    };
    let mut b = Body::default();
    P.parse_into(&mut b, o)?;
    let field = b.source.required_field()?;
    let keyed = b.keyed;
    let ranges = b
        .ranges
        .as_ref()
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            EsError::illegal_argument("No [ranges] specified for the [ip_range] aggregation")
        })?;
    let parse_ip = |s: &str| -> EsResult<Ipv6Addr> {
        match s.parse::<IpAddr>() {
            Ok(IpAddr::V4(v4)) => Ok(v4.to_ipv6_mapped()),
            Ok(IpAddr::V6(v6)) => Ok(v6),
            Err(_) => Err(EsError::illegal_argument(format!(
                "'{s}' is not an IP string literal."
            ))),
        }
    };
    // `missing`: the address of documents without one (ES's `DocValueFormat.IP` parse).
    let missing = match &b.source.missing {
        None => None,
        Some(Value::String(s)) => Some(u128::from(parse_ip(s)?)),
        Some(v) => Some(u128::from(parse_ip(&v.to_string())?)),
    };
    let show = |ip: Ipv6Addr| match ip.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => ip.to_string(),
    };
    let mut specs: Vec<(Option<String>, Option<u128>, Option<u128>)> = Vec::new();
    for r in ranges {
        let r = r.as_object().ok_or_else(|| {
            EsError::parsing(format!(
                "[ranges] must contain objects, but hit a {}",
                token_name(r)
            ))
        })?;
        let r = IP_RANGE_ENTRY.parse(r)?;
        let key = r.key.clone();
        let spec = match r.mask {
            Some(mask) => {
                if r.from.is_some() || r.to.is_some() {
                    return Err(EsError::illegal_argument(
                        "one of [to] or [from] and [mask] may be set, not both",
                    ));
                }
                let bad =
                    || EsError::illegal_argument(format!("Expected [ip/prefix] but was [{mask}]"));
                let (addr, bits) = mask.split_once('/').ok_or_else(bad)?;
                let ip = addr.parse::<IpAddr>().map_err(|_| {
                    EsError::illegal_argument(format!("'{addr}' is not an IP string literal."))
                })?;
                let bits: u32 = bits.parse().map_err(|_| bad())?;
                let (ip, bits) = match ip {
                    IpAddr::V4(v4) if bits <= 32 => (v4.to_ipv6_mapped(), bits + 96),
                    IpAddr::V6(v6) if bits <= 128 => (v6, bits),
                    _ => {
                        return Err(EsError::illegal_argument(format!(
                            "Illegal prefix length [{bits}] in [{mask}]"
                        )))
                    }
                };
                let host = if bits == 128 { 0 } else { u128::MAX >> bits };
                let net = u128::from(ip) & !host;
                let to = net.checked_add(host).and_then(|b| b.checked_add(1));
                (key.or(Some(mask)), Some(net), to)
            }
            None => {
                let from = r.from.map(|s| parse_ip(&s)).transpose()?.map(u128::from);
                let to = r.to.map(|s| parse_ip(&s)).transpose()?.map(u128::from);
                (key, from, to)
            }
        };
        specs.push(spec);
    }
    // ES orders ip ranges by `from`, then `to`.
    specs.sort_by(|a, b| {
        a.1.unwrap_or(0)
            .cmp(&b.1.unwrap_or(0))
            .then(a.2.unwrap_or(u128::MAX).cmp(&b.2.unwrap_or(u128::MAX)))
    });
    let mut filters = Vec::new();
    let mut bounds = Vec::new();
    for (key, from, to) in specs {
        let (from_s, to_s) = (from.map(|f| show(f.into())), to.map(|t| show(t.into())));
        let key = key.unwrap_or_else(|| {
            format!(
                "{}-{}",
                from_s.as_deref().unwrap_or("*"),
                to_s.as_deref().unwrap_or("*")
            )
        });
        let mut range = Map::new();
        if let Some(f) = &from_s {
            range.insert("gte".into(), json!(f));
        }
        if let Some(t) = &to_s {
            range.insert("lt".into(), json!(t));
        }
        let q = if range.is_empty() {
            json!({"exists": {"field": field}})
        } else {
            json!({"range": {field.clone(): range}})
        };
        // The range holding the `missing` address holds the documents without one too.
        let holds_missing =
            missing.is_some_and(|m| from.is_none_or(|f| m >= f) && to.is_none_or(|t| m < t));
        let q = if holds_missing {
            json!({"bool": {"should": [q, {"bool": {"must_not": {"exists": {"field": field}}}}]}})
        } else {
            q
        };
        filters.push((key, parse_dsl(&q)?));
        bounds.push((from_s.map(Value::String), to_s.map(Value::String)));
    }
    Ok(FiltersReq {
        filters,
        keyed,
        other_bucket: None,
        ip_bounds: Some((field, bounds)),
        geo_distance: false,
    })
}

fn field_name(o: &Map<String, Value>) -> String {
    o.get("field")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A `geohash_grid` or `geotile_grid` body under construction.
#[derive(Default)]
struct GeoGridBody {
    name: String,
    tile: bool,
    field: Option<String>,
    precision: Option<u32>,
    size: Option<usize>,
    shard_size: Option<usize>,
    bounds: Option<crate::geogrid::BBox>,
}

type GF = Field<GeoGridBody>;

/// A setter's failure, wrapped as ES's `ObjectParser` wraps it.
fn failed_field(at: &At<'_>, cause: EsError) -> EsError {
    EsError::x_content_parse(format!(
        "[{}] failed to parse field [{}]",
        at.parser, at.key
    ))
    .caused_by(cause)
}

/// `precision` as `GeoUtils#parsePrecision` (geohash: a level or a distance) or
/// `GeoTileUtils#parsePrecision` (a zoom).
fn geo_grid_precision(b: &GeoGridBody, at: &At<'_>, v: &Value) -> EsResult<u32> {
    use crate::geogrid::{GEOHASH_MAX, TILE_MAX_ZOOM};
    let tile = b.tile;
    let number_format = |s: &str| {
        EsError::bad_request(
            "number_format_exception",
            format!("For input string: \"{s}\""),
        )
    };
    let check = |p: i64| -> Result<u32, EsError> {
        let (lo, hi) = if tile {
            (0, TILE_MAX_ZOOM as i64)
        } else {
            (1, GEOHASH_MAX as i64)
        };
        if p < lo || p > hi {
            return Err(EsError::illegal_argument(if tile {
                format!("Invalid geotile_grid precision of {p}. Must be between 0 and 29.")
            } else {
                format!("Invalid geohash aggregation precision of {p}. Must be between 1 and 12.")
            }));
        }
        Ok(p as u32)
    };
    let failed = |e| failed_field(at, e);
    match v {
        Value::Number(n) => {
            // `parser.intValue()`: a decimal is truncated.
            let x = n.as_f64().unwrap_or(0.0);
            if !(i32::MIN as f64..=i32::MAX as f64).contains(&x.trunc()) {
                return Err(failed(EsError::illegal_argument(format!(
                    "Numeric value ({n}) out of range of int (-2147483648 - 2147483647)"
                ))));
            }
            check(x.trunc() as i64).map_err(failed)
        }
        Value::String(s) => match s.parse::<i32>() {
            Ok(p) => check(p as i64).map_err(failed),
            Err(_) if tile => Err(failed(number_format(s))),
            Err(_) => {
                // A distance: the level whose cells are at most that wide.
                let meters = lode_engine::geo::parse_distance(&Value::String(s.clone()), 1.0)
                    .map_err(|_| failed(number_format(s)))?;
                let level = crate::geogrid::geohash_levels_for_precision(meters);
                check(level).map_err(|e| {
                    failed(
                        EsError::illegal_argument(format!("precision too high [{s}]")).caused_by(e),
                    )
                })
            }
        },
        _ => unreachable!("declared as a number or a string"),
    }
}

/// `size` and `shard_size` (`declareInt`, then the builder's positive check).
fn geo_grid_positive(b: &GeoGridBody, at: &At<'_>, v: &Value) -> EsResult<usize> {
    let n = int32(at.parser, at.key, v)?;
    if n <= 0 {
        let es_key = if at.key == "shard_size" {
            "shardSize"
        } else {
            at.key
        };
        return Err(failed_field(
            at,
            EsError::illegal_argument(format!(
                "[{es_key}] must be greater than 0. Found [{n}] in [{}]",
                b.name
            )),
        ));
    }
    Ok(n as usize)
}

/// ES's `GeoGridAggregationBuilder` parser: the geo values-source keys (no `script`, no
/// `format`), `precision`, `size`, `shard_size` and `bounds`.
static GEO_GRID: ObjectParser<GeoGridBody> = ObjectParser {
    name: "geohash_grid",
    style: Style::Object,
    fields: &[&[
        GF::new("field", "s", |b, _, v| {
            b.field = v.as_str().map(str::to_string);
            Ok(())
        }),
        // read after the walk by `missing_point`
        GF::new("missing", "vn", ignore),
        GF::new("value_type", "s", |_, at, _| {
            Err(EsError::illegal_argument(format!(
                "[{}] in [{}] aggregations is not supported by Lode",
                at.key, at.parser
            )))
        }),
        GF::new("precision", "ds", |b, at, v| {
            b.precision = Some(geo_grid_precision(b, at, v)?);
            Ok(())
        }),
        GF::new("size", "ds", |b, at, v| {
            b.size = Some(geo_grid_positive(b, at, v)?);
            Ok(())
        }),
        GF::new("shard_size", "ds", |b, at, v| {
            b.shard_size = Some(geo_grid_positive(b, at, v)?);
            Ok(())
        }),
        GF::new("bounds", "o", |b, at, v| {
            let (top, bottom, left, right) =
                lode_query::geo::parse_box(at.parser, v).map_err(|e| failed_field(at, e))?;
            b.bounds = Some(crate::geogrid::BBox {
                top,
                bottom,
                left,
                right,
            });
            Ok(())
        }),
    ]],
};

/// `geohash_grid` and `geotile_grid` (ES's `GeoGridAggregationBuilder`).
fn parse_geo_grid(name: &str, ty: &str, o: &Map<String, Value>) -> EsResult<GeoGridReq> {
    use crate::geogrid::Grid;
    let tile = ty == "geotile_grid";
    let mut b = GeoGridBody {
        name: name.to_string(),
        tile,
        ..GeoGridBody::default()
    };
    GEO_GRID.parse_named(ty, &mut b, o)?;
    let missing = missing_point(o)?;
    let field = b.field.ok_or_else(|| {
        EsError::illegal_argument("Required one of fields [field], but none were specified. ")
    })?;
    let size = b.size.unwrap_or(10_000);
    let shard_size = b
        .shard_size
        .unwrap_or_else(|| ((size as f64 * 1.5 + 10.0) as usize).min(i32::MAX as usize))
        .max(size);
    Ok(GeoGridReq {
        field,
        grid: Grid {
            tile,
            precision: b.precision.unwrap_or(if tile { 7 } else { 5 }),
            bounds: b.bounds,
            missing,
        },
        size,
        shard_size,
    })
}

/// `geo_distance` (ES's `GeoDistanceAggregationBuilder`): one bucket per range of distance
/// from `origin` (`from` inclusive, `to` exclusive, in `unit`), each a filter on the field's
/// points (`lode_query::geo`); ranges ordered by `from` then `to`, as ES's range aggregator.
/// A geo values source's `missing` point: ES's `new GeoPoint(missing.toString())`
/// (`"lat,lon"`, WKT or a geohash).
fn missing_point(o: &Map<String, Value>) -> EsResult<Option<(f64, f64)>> {
    match o.get("missing") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let (lat, lon) = lode_engine::geo::parse_point_str(&text, false)
                .and_then(|(lat, lon)| {
                    lode_engine::geo::check_range(lat, lon, &field_name(o)).map(|_| (lat, lon))
                })
                .map_err(EsError::illegal_argument)?;
            Ok(Some((lat, lon)))
        }
    }
}

/// A `geo_distance` body under construction.
#[derive(Default)]
struct GeoDistanceBody {
    field: Option<Value>,
    origin: Option<(f64, f64)>,
    unit: Option<f64>,
    plane: bool,
    keyed: bool,
    ranges: Option<Vec<DistanceRange>>,
}

type GeoDistanceField = Field<GeoDistanceBody>;

/// ES's `GeoDistanceAggregationBuilder` parser (its values source is a field).
static GEO_DISTANCE: ObjectParser<GeoDistanceBody> = ObjectParser {
    name: "geo_distance",
    style: fields::AGG,
    fields: &[&[
        GeoDistanceField::new("field", "*", |b, _, v| {
            b.field = Some(v.clone());
            Ok(())
        }),
        // read after the walk by `missing_point`
        GeoDistanceField::new("missing", "vn", ignore),
        GeoDistanceField::new("origin", "oas", |b, at, v| {
            b.origin = Some(
                lode_engine::geo::parse_point(v, true)
                    .map_err(|e| EsError::parsing(format!("[{}] {e}", at.parser)))?,
            );
            Ok(())
        }),
        GeoDistanceField::new("unit", "s", |b, _, v| {
            let u = v.as_str().unwrap_or_default();
            b.unit = Some(lode_engine::geo::unit_meters(u).ok_or_else(|| {
                EsError::illegal_argument(format!("No distance unit match [{u}]"))
            })?);
            Ok(())
        }),
        GeoDistanceField::new("distance_type", "s", |b, _, v| {
            let t = v.as_str().unwrap_or_default();
            let ty = lode_engine::geo::DistanceType::parse(t)
                .ok_or_else(|| EsError::illegal_argument(format!("No geo distance for [{t}]")))?;
            b.plane = ty == lode_engine::geo::DistanceType::Plane;
            Ok(())
        }),
        GeoDistanceField::new("keyed", "bs", |b, at, v| {
            b.keyed = boolean(at.parser, at.key, v)?;
            Ok(())
        }),
        GeoDistanceField::new("ranges", "oa", |b, at, v| {
            let items = match v {
                Value::Array(a) => a.as_slice(),
                other => std::slice::from_ref(other),
            };
            let ranges = items
                .iter()
                .map(|r| geo_distance_range(at.parser, r))
                .collect::<EsResult<Vec<_>>>()?;
            b.ranges = Some(ranges);
            Ok(())
        }),
    ]],
};

/// A `ranges` entry: `from`, `to` (numbers or numeric strings) and `key`.
type DistanceRange = (Option<String>, Option<f64>, Option<f64>);

#[derive(Default)]
struct DistanceRangeBody {
    key: Option<String>,
    from: Option<f64>,
    to: Option<f64>,
}

fn distance_bound(at: &At<'_>, v: &Value) -> EsResult<Option<f64>> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(n.as_f64()),
        Value::String(s) => {
            s.trim().parse().map(Some).map_err(|_| {
                EsError::parsing(format!("[geo_distance] failed to parse [{}]", at.key))
            })
        }
        _ => unreachable!("declared as a value or null"),
    }
}

static DISTANCE_RANGE: ObjectParser<DistanceRangeBody> = ObjectParser {
    name: "range",
    style: Style::Object,
    fields: &[&[
        Field::new("from", "dsn", |r, at, v| {
            r.from = distance_bound(at, v)?;
            Ok(())
        }),
        Field::new("to", "dsn", |r, at, v| {
            r.to = distance_bound(at, v)?;
            Ok(())
        }),
        Field::new("key", "sn", |r, _, v| {
            r.key = v.as_str().map(str::to_string);
            Ok(())
        }),
    ]],
};

fn geo_distance_range(ty: &str, r: &Value) -> EsResult<DistanceRange> {
    let r = r
        .as_object()
        .ok_or_else(|| EsError::parsing(format!("[{ty}] ranges must be objects")))?;
    let b = DISTANCE_RANGE.parse(r)?;
    Ok((b.key, b.from, b.to))
}

fn parse_geo_distance_agg(o: &Map<String, Value>) -> EsResult<FiltersReq> {
    const TY: &str = "geo_distance";
    let b = GEO_DISTANCE.parse(o)?;
    let field = required_field_of(b.field.as_ref())?;
    let missing = missing_point(o)?;
    let keyed = b.keyed;
    let (lat, lon) = b
        .origin
        .ok_or_else(|| EsError::illegal_argument("Required [origin]"))?;
    let unit = b.unit.unwrap_or(1.0);
    let plane = b.plane;
    let mut specs = b.ranges.filter(|r| !r.is_empty()).ok_or_else(|| {
        EsError::illegal_argument("No [ranges] specified for the [geo_distance] aggregation")
    })?;
    specs.sort_by(|a, b| {
        a.1.unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&b.1.unwrap_or(f64::NEG_INFINITY))
            .then(
                a.2.unwrap_or(f64::INFINITY)
                    .total_cmp(&b.2.unwrap_or(f64::INFINITY)),
            )
    });
    let show = crate::plan::java_double;
    let mut filters = Vec::new();
    let mut bounds = Vec::new();
    for (key, from, to) in specs {
        let key = key.unwrap_or_else(|| {
            format!(
                "{}-{}",
                from.map(show).unwrap_or_else(|| "*".into()),
                to.map(show).unwrap_or_else(|| "*".into())
            )
        });
        let q = lode_query::Query::Geo(lode_query::geo::GeoQuery {
            name: TY,
            field: field.clone(),
            shape: lode_query::geo::GeoShape::Ring {
                lat,
                lon,
                from: from.unwrap_or(f64::NEG_INFINITY),
                to: to.unwrap_or(f64::INFINITY),
                unit,
                plane,
            },
            validation: lode_query::geo::Validation::Strict,
            ignore_unmapped: true,
            boost: 1.0,
        });
        // The range holding the `missing` point's distance holds the documents without a
        // point too.
        let ty = if plane {
            lode_engine::geo::DistanceType::Plane
        } else {
            lode_engine::geo::DistanceType::Arc
        };
        let holds_missing = missing.is_some_and(|(mlat, mlon)| {
            let d = ty.meters(lat, lon, mlat, mlon) / unit;
            from.is_none_or(|f| f <= d) && to.is_none_or(|t| d < t)
        });
        let q = if holds_missing {
            let bool_query = |should, must_not| {
                lode_query::Query::Bool(lode_query::BoolQuery {
                    must: Vec::new(),
                    filter: Vec::new(),
                    should,
                    must_not,
                    minimum_should_match: None,
                    boost: 1.0,
                })
            };
            let without = bool_query(
                Vec::new(),
                vec![lode_query::Query::Exists {
                    field: field.clone(),
                    boost: 1.0,
                }],
            );
            bool_query(vec![q, without], Vec::new())
        } else {
            q
        };
        filters.push((key, q));
        // ES renders an open start as 0 (no distance is below it).
        bounds.push((Some(json!(from.unwrap_or(0.0))), to.map(|t| json!(t))));
    }
    Ok(FiltersReq {
        filters,
        keyed,
        other_bucket: None,
        ip_bounds: Some((field, bounds)),
        geo_distance: true,
    })
}

/// A composite source's body under construction (its type's options, then
/// `CompositeValuesSourceParserHelper`'s common ones).
#[derive(Default)]
struct SourceBody {
    source: Source,
    order: Option<String>,
    missing_bucket: bool,
    missing_order: Option<String>,
    interval: Option<Value>,
    calendar: Option<String>,
    fixed: Option<String>,
    time_zone: Option<Tz>,
    offset: Option<i64>,
}

impl Sourced for SourceBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type CF = Field<SourceBody>;

/// What every composite source takes (ES's `CompositeValuesSourceParserHelper`), its
/// `script` aside.
const SOURCE_COMMON: &[CF] = &[
    CF::new("order", "s", |b, _, v| {
        b.order = v.as_str().map(str::to_string);
        Ok(())
    }),
    CF::new("missing_bucket", "*", |b, at, v| {
        b.missing_bucket = boolean(at.parser, at.key, v)?;
        Ok(())
    }),
    CF::new("missing_order", "*", |b, at, v| {
        b.missing_order = Some(string(at.parser, at.key, v)?);
        Ok(())
    }),
];

const SOURCE_VALUES: [CF; 3] = {
    let [f] = fields::field::<SourceBody>();
    let [vt] = fields::value_type::<SourceBody>();
    let [fm] = fields::format::<SourceBody>();
    [f, vt, fm]
};

static TERMS_SOURCE: ObjectParser<SourceBody> = ObjectParser {
    name: "terms",
    style: fields::AGG,
    fields: &[SOURCE_COMMON, &SOURCE_VALUES, &fields::script()],
};

static HISTOGRAM_SOURCE: ObjectParser<SourceBody> = ObjectParser {
    name: "histogram",
    style: fields::AGG,
    fields: &[
        &[CF::new("interval", "*", |b, _, v| {
            b.interval = Some(v.clone());
            Ok(())
        })],
        SOURCE_COMMON,
        &SOURCE_VALUES,
        &fields::script(),
    ],
};

static DATE_HISTOGRAM_SOURCE: ObjectParser<SourceBody> = ObjectParser {
    name: "date_histogram",
    style: fields::AGG,
    fields: &[
        &[
            CF::new("calendar_interval", "*", |b, at, v| {
                b.calendar = Some(string(at.parser, at.key, v)?);
                Ok(())
            }),
            CF::new("fixed_interval", "*", |b, at, v| {
                b.fixed = Some(string(at.parser, at.key, v)?);
                Ok(())
            }),
            CF::new("interval", "*", |b, _, v| {
                b.interval = Some(v.clone());
                Ok(())
            }),
            CF::new("time_zone", "*", |b, _, v| {
                b.time_zone = Some(parse_time_zone(v)?);
                Ok(())
            }),
            CF::new("offset", "*", |b, _, v| {
                b.offset = Some(parse_offset(v)?);
                Ok(())
            }),
        ],
        SOURCE_COMMON,
        &SOURCE_VALUES,
        &fields::script(),
    ],
};

/// `precision` and `bounds` are read by the `geotile_grid` parser; a `script` is refused
/// once the walk is done, as ES's geo values sources refuse it.
static GEOTILE_SOURCE: ObjectParser<SourceBody> = ObjectParser {
    name: "geotile_grid",
    style: fields::AGG,
    fields: &[
        &[
            CF::new("precision", "*", ignore),
            CF::new("bounds", "*", ignore),
        ],
        SOURCE_COMMON,
        &SOURCE_VALUES,
        &fields::script(),
    ],
};

/// A composite's top level under construction.
#[derive(Default)]
struct CompositeBody {
    name: String,
    sources: Option<Vec<Value>>,
    size: Option<usize>,
    after: Option<Map<String, Value>>,
}

type CompositeField = Field<CompositeBody>;

/// ES's `CompositeAggregationBuilder` parser: `sources` (the sources' own parsers below),
/// `size`, `after`.
static COMPOSITE: ObjectParser<CompositeBody> = ObjectParser {
    name: "composite",
    style: fields::AGG,
    fields: &[&[
        // `declareObjectArray`: an array of objects, or one object
        CompositeField::new("sources", "oa", |b, _, v| {
            b.sources = Some(match v {
                Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            });
            Ok(())
        }),
        CompositeField::new("size", "ds", |b, at, v| {
            let n = int32(at.parser, at.key, v)?;
            if n <= 0 {
                return Err(EsError::illegal_argument(format!(
                    "[size] must be greater than 0. Found [{n}] in [{}]",
                    b.name
                )));
            }
            b.size = Some(n as usize);
            Ok(())
        }),
        CompositeField::new("after", "o", |b, _, v| {
            b.after = v.as_object().cloned();
            Ok(())
        }),
    ]],
};

/// `CompositeValuesSourceParserHelper#fromXContent`'s `ensureExpectedToken`.
fn expect_object(v: &Value) -> EsResult<&Map<String, Value>> {
    v.as_object().ok_or_else(|| {
        EsError::parsing(format!(
            "Failed to parse object: expecting token of type [START_OBJECT] but found [{}]",
            token_name(v)
        ))
    })
}

fn parse_composite(name: &str, o: &Map<String, Value>) -> EsResult<CompositeReq> {
    let mut c = CompositeBody {
        name: name.to_string(),
        ..CompositeBody::default()
    };
    COMPOSITE.parse_into(&mut c, o)?;
    let sources_json = match &c.sources {
        Some(a) if !a.is_empty() => a,
        None => return Err(EsError::x_content_parse("[composite] Required [sources]")),
        _ => {
            return Err(EsError::illegal_argument(
                "Composite [sources] cannot be null or empty",
            ))
        }
    };
    let mut sources = Vec::new();
    for s in sources_json {
        let so = expect_object(s)?;
        if so.len() != 1 {
            return Err(EsError::parsing(format!(
                "[{name}] each source must be an object with one name"
            )));
        }
        let (src_name, def) = so.iter().next().expect("one entry");
        let def = expect_object(def)?;
        if def.len() != 1 {
            return Err(EsError::parsing(format!(
                "[{src_name}] a source must be an object with one source type"
            )));
        }
        let (kind_name, body) = def.iter().next().expect("one entry");
        let body = expect_object(body)?;
        let parser = match kind_name.as_str() {
            "terms" => &TERMS_SOURCE,
            "histogram" => &HISTOGRAM_SOURCE,
            "date_histogram" => &DATE_HISTOGRAM_SOURCE,
            "geotile_grid" => &GEOTILE_SOURCE,
            other => return Err(EsError::parsing(format!("invalid source type: {other}"))),
        };
        let mut b = SourceBody::default();
        parser.parse_into(&mut b, body)?;
        let field = match kind_name.as_str() {
            "geotile_grid" => b.source.required_field()?,
            "terms" => b.source.field_or_script(true, false)?,
            "date_histogram" => b.source.field_or_script(false, true)?,
            _ => b.source.field_or_script(false, false)?,
        };
        if kind_name == "geotile_grid" && b.source.script.is_some() {
            return Err(EsError::unknown_field(kind_name, "script", &[]));
        }
        let asc = match b.order.as_deref() {
            None | Some("asc") => true,
            Some("desc") => false,
            Some(other) => {
                return Err(EsError::illegal_argument(format!(
                    "Unknown order [{other}]"
                )))
            }
        };
        let missing_bucket = b.missing_bucket;
        let missing_order = match b.missing_order.as_deref() {
            None | Some("default") => "default",
            Some("first") => "first",
            Some("last") => "last",
            Some(other) => {
                return Err(EsError::illegal_argument(format!(
                    "Unknown MissingOrder value [{other}]"
                )))
            }
        };
        if missing_order != "default" && !missing_bucket {
            return Err(EsError::illegal_argument(format!(
                "missingOrder can only be set if missingBucket is true: [{src_name}]"
            )));
        }
        let missing_first = match missing_order {
            "first" => true,
            "last" => false,
            _ => asc,
        };
        let format = b.source.format;
        let kind = match kind_name.as_str() {
            "geotile_grid" => {
                let mut grid_body = Map::new();
                for k in ["field", "precision", "bounds"] {
                    if let Some(v) = body.get(k) {
                        grid_body.insert(k.to_string(), v.clone());
                    }
                }
                let g = parse_geo_grid(src_name, "geotile_grid", &grid_body)?;
                CompositeSourceKind::GeoTile { grid: g.grid }
            }
            "terms" => CompositeSourceKind::Terms {
                missing_bucket,
                missing_order,
            },
            "histogram" => {
                let interval = num(
                    kind_name,
                    "interval",
                    b.interval.as_ref().unwrap_or(&Value::Null),
                )?;
                if interval <= 0.0 {
                    return Err(EsError::illegal_argument(format!(
                        "[interval] must be greater than 0 for [{src_name}]"
                    )));
                }
                CompositeSourceKind::Histogram { interval }
            }
            _ => {
                let interval = if let Some(c) = &b.calendar {
                    DateInterval::Calendar(parse_calendar(c)?)
                } else if let Some(f) = &b.fixed {
                    DateInterval::Fixed(parse_fixed(f)?)
                } else if let Some(l) = &b.interval {
                    let l = string(kind_name, "interval", l)?;
                    match CalendarUnit::parse(&l) {
                        Some(u) => DateInterval::Calendar(u),
                        None => DateInterval::Fixed(parse_fixed(&l)?),
                    }
                } else {
                    return Err(EsError::illegal_argument(
                        "Invalid interval specified, must be non-null and non-empty",
                    ));
                };
                CompositeSourceKind::DateHistogram {
                    interval,
                    time_zone: b.time_zone.unwrap_or_else(Tz::utc),
                    offset: b.offset.unwrap_or(0),
                }
            }
        };
        sources.push(CompositeSource {
            name: src_name.clone(),
            field,
            asc,
            kind,
            missing_bucket,
            missing_first,
            format,
        });
    }
    let mut names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    let mut dups: Vec<&str> = names
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    dups.dedup();
    if !dups.is_empty() {
        return Err(EsError::illegal_argument(format!(
            "Composite source names must be unique, found duplicates: [{}]",
            dups.join(", ")
        )));
    }
    Ok(CompositeReq {
        sources,
        size: c.size.unwrap_or(10),
        after: c.after,
    })
}

/// A metric's body under construction (`avg` ... `cardinality`).
struct MetricBody {
    name: String,
    source: Source,
    sigma: f64,
    precision_threshold: u64,
}

impl Sourced for MetricBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type MF = Field<MetricBody>;

/// `avg`, `sum`, `min`, `max`, `value_count` and `stats`: a values source and nothing else.
static METRIC: ObjectParser<MetricBody> = ObjectParser {
    name: "avg",
    style: fields::AGG,
    fields: &[&fields::values_source()],
};

static EXTENDED_STATS: ObjectParser<MetricBody> = ObjectParser {
    name: "extended_stats",
    style: fields::AGG,
    fields: &[
        &[MF::new("sigma", "*", |r, at, v| {
            r.sigma = num(at.parser, at.key, v)?;
            if r.sigma < 0.0 {
                return Err(EsError::illegal_argument(format!(
                    "[sigma] must be greater than or equal to 0. Found [{:?}] in [{}]",
                    r.sigma, r.name
                )));
            }
            Ok(())
        })],
        &fields::values_source(),
    ],
};

static CARDINALITY: ObjectParser<MetricBody> = ObjectParser {
    name: "cardinality",
    style: fields::AGG,
    fields: &[
        &[
            MF::new("precision_threshold", "*", |r, at, v| {
                let t = num(at.parser, at.key, v)?;
                if t < 0.0 {
                    return Err(EsError::illegal_argument(format!(
                        "[precisionThreshold] must be greater than or equal to 0. Found [{}] in [{}]",
                        t as i64, r.name
                    )));
                }
                r.precision_threshold = (t as u64).min(40000);
                Ok(())
            }),
            // Only the default (murmur3 rehashing of the values) exists in Lode.
            MF::new("rehash", "*", |_, at, v| {
                if boolean(at.parser, at.key, v)? {
                    return Ok(());
                }
                Err(EsError::parsing(format!(
                    "[{}] [rehash: false] is not supported by Lode",
                    at.parser
                )))
            }),
            MF::new("execution_hint", "*", |_, at, v| {
                string(at.parser, at.key, v).map(drop)
            }),
        ],
        &fields::values_source(),
    ],
};

fn parse_metric(name: &str, ty: &str, o: &Map<String, Value>) -> EsResult<MetricReq> {
    let (kind, parser) = match ty {
        "avg" => (MetricKind::Avg, &METRIC),
        "sum" => (MetricKind::Sum, &METRIC),
        "min" => (MetricKind::Min, &METRIC),
        "max" => (MetricKind::Max, &METRIC),
        "value_count" => (MetricKind::ValueCount, &METRIC),
        "stats" => (MetricKind::Stats, &METRIC),
        "extended_stats" => (MetricKind::ExtendedStats, &EXTENDED_STATS),
        _ => (MetricKind::Cardinality, &CARDINALITY),
    };
    let mut b = MetricBody {
        name: name.to_string(),
        source: Source::default(),
        sigma: 2.0,
        precision_threshold: 3000,
    };
    parser.parse_named(ty, &mut b, o)?;
    // a cardinality or value_count script's values are counted as keywords
    let field = b.source.field_or_script(
        matches!(kind, MetricKind::Cardinality | MetricKind::ValueCount),
        false,
    )?;
    b.source.check_value_type(ty)?;
    Ok(MetricReq {
        kind,
        field,
        missing: b.source.missing,
        format: b.source.format,
        sigma: b.sigma,
        precision_threshold: b.precision_threshold,
    })
}

/// A `weighted_avg` body under construction: its `value` and `weight` sources.
#[derive(Default)]
struct WeightedBody {
    source: Source,
    value: Option<WeightedSource>,
    weight: Option<WeightedSource>,
}

impl Sourced for WeightedBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type WF = Field<WeightedBody>;

/// `weighted_avg`: `value` and `weight` (each `{field, missing, script}`), `format`.
fn parse_weighted_avg(name: &str, o: &Map<String, Value>) -> EsResult<WeightedAvgReq> {
    const TY: &str = "weighted_avg";
    static P: ObjectParser<WeightedBody> = ObjectParser {
        name: TY,
        style: fields::AGG,
        fields: &[
            &[
                WF::new("value", "o", |b, at, v| {
                    b.value = Some(weighted_source(at.key, v)?);
                    Ok(())
                }),
                WF::new("weight", "o", |b, at, v| {
                    b.weight = Some(weighted_source(at.key, v)?);
                    Ok(())
                }),
            ],
            &fields::format(),
            &fields::value_type(),
        ],
    };
    let mut b = WeightedBody::default();
    P.parse_into(&mut b, o)?;
    let required = |s: Option<WeightedSource>, key: &str| {
        s.ok_or_else(|| {
            EsError::illegal_argument(format!("Required field [{key}] is missing in [{name}]"))
        })
    };
    let value = required(b.value, "value")?;
    let weight = required(b.weight, "weight")?;
    b.source.check_value_type(TY)?;
    Ok(WeightedAvgReq {
        value,
        weight,
        format: b.source.format,
    })
}

/// ES's `MultiValuesSourceFieldConfig`: a field or a script (its values as doubles), and
/// `missing`; `key` (`value` or `weight`) names its parser.
fn weighted_source(key: &str, v: &Value) -> EsResult<WeightedSource> {
    #[derive(Default)]
    struct Config {
        source: Source,
    }
    impl Sourced for Config {
        fn source(&mut self) -> &mut Source {
            &mut self.source
        }
    }
    static P: ObjectParser<Config> = ObjectParser {
        name: "value",
        style: Style::Object,
        fields: &[&fields::field(), &fields::missing(), &fields::script()],
    };
    let mut c = Config::default();
    P.parse_named(key, &mut c, v.as_object().expect("declared as an object"))?;
    let s = c.source;
    let missing = match &s.missing {
        None | Some(Value::Null) => None,
        Some(m) => Some(Value::from(num(key, "missing", m)?)),
    };
    let field =
        match (&s.field, &s.script) {
            (Some(_), Some(_)) => return Err(EsError::illegal_argument(
                "[field] and [script] cannot both be configured.  Please specify one or the other.",
            )),
            (None, None) => {
                return Err(EsError::illegal_argument(
                    "[field] and [script] cannot both be null.  Please specify one or the other.",
                ))
            }
            (Some(_), None) => s.required_field()?,
            (None, Some(_)) => s.field_or_script(false, false)?,
        };
    Ok(WeightedSource { field, missing })
}

/// A `percentiles` or `percentile_ranks` body under construction.
struct PercentilesBody {
    name: String,
    source: Source,
    percents: Option<Vec<f64>>,
    /// `percentile_ranks`' `values`, as written (`None`: absent or null).
    values: Option<Vec<f64>>,
    keyed: bool,
    method: Option<PercentilesMethod>,
}

impl Sourced for PercentilesBody {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }
}

type PF = Field<PercentilesBody>;

/// The options `percentiles` and `percentile_ranks` share (their list aside).
const fn percentiles_options() -> [PF; 3] {
    [
        PF::new("keyed", "*", |b, at, v| {
            b.keyed = boolean(at.parser, at.key, v)?;
            Ok(())
        }),
        PF::new("tdigest", "o", set_tdigest),
        PF::new("hdr", "o", set_hdr),
    ]
}

static PERCENTILES: ObjectParser<PercentilesBody> = ObjectParser {
    name: "percentiles",
    style: fields::AGG,
    fields: &[
        &[PF::new("percents", "*", |b, at, v| {
            let a = match v {
                Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            let mut p = Vec::new();
            for x in &a {
                let x = num(at.parser, at.key, x)?;
                if !(0.0..=100.0).contains(&x) {
                    return Err(EsError::illegal_argument(format!(
                        "percent must be in [0,100], got [{x:?}]: [{}]",
                        b.name
                    )));
                }
                p.push(x);
            }
            if p.is_empty() {
                return Err(EsError::illegal_argument(format!(
                    "[percents] must not be empty: [{}]",
                    b.name
                )));
            }
            p.sort_by(f64::total_cmp);
            p.dedup();
            b.percents = Some(p);
            Ok(())
        })],
        &percentiles_options(),
        &fields::values_source(),
    ],
};

static PERCENTILE_RANKS: ObjectParser<PercentilesBody> = ObjectParser {
    name: "percentile_ranks",
    style: fields::AGG,
    fields: &[
        &[PF::new("values", "*", |b, at, v| {
            b.values = match v {
                Value::Null => None,
                Value::Array(a) => Some(
                    a.iter()
                        .map(|x| num(at.parser, at.key, x))
                        .collect::<EsResult<_>>()?,
                ),
                other => Some(vec![num(at.parser, at.key, other)?]),
            };
            Ok(())
        })],
        &percentiles_options(),
        &fields::values_source(),
    ],
};

fn set_method(b: &mut PercentilesBody, at: &At<'_>, m: PercentilesMethod) -> EsResult<()> {
    if b.method.is_some() {
        return Err(EsError::illegal_argument(format!(
            "[{}] cannot use both [tdigest] and [hdr] methods: [{}]",
            at.parser, b.name
        )));
    }
    b.method = Some(m);
    Ok(())
}

/// A `tdigest` or `hdr` object as read (ES's `PercentilesConfig` parsers).
#[derive(Default)]
struct MethodBody {
    compression: Option<f64>,
    high_accuracy: bool,
    digits: Option<i64>,
}

type MethodField = Field<MethodBody>;

/// A method parser's failure inside the aggregation's parser, wrapped as ES wraps it.
fn wrap_method(at: &At<'_>, e: EsError) -> EsError {
    EsError::x_content_parse(format!(
        "[{}] failed to parse field [{}]",
        at.parser, at.key
    ))
    .caused_by(e)
}

static TDIGEST: ObjectParser<MethodBody> = ObjectParser {
    name: "tdigest",
    style: Style::Object,
    fields: &[&[
        MethodField::new("compression", "ds", |m, at, v| {
            m.compression = Some(num(at.parser, at.key, v)?);
            Ok(())
        }),
        MethodField::new("execution_hint", "s", |m, at, v| {
            m.high_accuracy = tdigest_execution_hint(&string(at.parser, at.key, v)?)?;
            Ok(())
        }),
    ]],
};

static HDR: ObjectParser<MethodBody> = ObjectParser {
    name: "hdr",
    style: Style::Object,
    fields: &[&[MethodField::new(
        "number_of_significant_value_digits",
        "ds",
        |m, at, v| {
            m.digits = Some(int32(at.parser, at.key, v)?);
            Ok(())
        },
    )]],
};

/// `tdigest: {compression, execution_hint}`.
fn set_tdigest(b: &mut PercentilesBody, at: &At<'_>, v: &Value) -> EsResult<()> {
    let o = v.as_object().expect("declared as an object");
    let m = TDIGEST.parse(o).map_err(|e| wrap_method(at, e))?;
    let compression = match m.compression {
        Some(c) => tdigest_compression(&b.name, c)?,
        None => crate::digest::DEFAULT_COMPRESSION,
    };
    set_method(
        b,
        at,
        PercentilesMethod::TDigest {
            compression,
            high_accuracy: m.high_accuracy,
        },
    )
}

/// `hdr: {number_of_significant_value_digits}`.
fn set_hdr(b: &mut PercentilesBody, at: &At<'_>, v: &Value) -> EsResult<()> {
    let o = v.as_object().expect("declared as an object");
    let m = HDR.parse(o).map_err(|e| wrap_method(at, e))?;
    let digits = m.digits.unwrap_or(3);
    if !(0..=5).contains(&digits) {
        return Err(EsError::illegal_argument(format!(
            "[numberOfSignificantValueDigits] must be between 0 and 5: [{}]",
            b.name
        )));
    }
    set_method(
        b,
        at,
        PercentilesMethod::Hdr {
            digits: digits as u8,
        },
    )
}

/// `percentile_ranks`: `percentiles` with required `values` instead of `percents`.
fn parse_percentile_ranks(name: &str, o: &Map<String, Value>) -> EsResult<PercentilesReq> {
    const TY: &str = "percentile_ranks";
    let b = parse_percentiles_body(&PERCENTILE_RANKS, name, o)?;
    // Elasticsearch checks `values` in the builder's constructor, which its object parser
    // calls once the whole object is read and wraps in a parse exception.
    let check_values = || {
        let reason = match &b.values {
            None => format!("[values] must not be null: [{name}]"),
            Some(v) if v.is_empty() => format!("[values] must not be an empty array: [{name}]"),
            Some(_) => return Ok(()),
        };
        Err(EsError::x_content_parse(format!(
            "Failed to build [{TY}] after last required field arrived"
        ))
        .caused_by(EsError::illegal_argument(reason)))
    };
    // The other options fail while parsing, before the constructor; a missing `field` is
    // only found when the aggregation is built, after it.
    if b.source.field.is_none() {
        check_values()?;
    }
    let mut r = percentiles_req(TY, &b)?;
    check_values()?;
    let mut parsed = b.values.clone().unwrap_or_default();
    parsed.sort_by(f64::total_cmp);
    parsed.dedup();
    r.percents = parsed;
    r.ranks = true;
    Ok(r)
}

fn parse_percentiles(name: &str, o: &Map<String, Value>) -> EsResult<PercentilesReq> {
    let b = parse_percentiles_body(&PERCENTILES, name, o)?;
    percentiles_req("percentiles", &b)
}

fn parse_percentiles_body(
    p: &ObjectParser<PercentilesBody>,
    name: &str,
    o: &Map<String, Value>,
) -> EsResult<PercentilesBody> {
    let mut b = PercentilesBody {
        name: name.to_string(),
        source: Source::default(),
        percents: None,
        values: None,
        keyed: true,
        method: None,
    };
    p.parse_into(&mut b, o)?;
    Ok(b)
}

/// The request of a parsed body: its values source, options and percents.
fn percentiles_req(ty: &str, b: &PercentilesBody) -> EsResult<PercentilesReq> {
    let field = b.source.field_or_script(false, false)?;
    b.source.check_value_type(ty)?;
    Ok(PercentilesReq {
        field,
        percents: b
            .percents
            .clone()
            .unwrap_or_else(|| vec![1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0]),
        ranks: false,
        keyed: b.keyed,
        missing: b.source.missing.clone(),
        format: b.source.format.clone(),
        method: b.method.unwrap_or_default(),
    })
}

/// Checks the shape of a `top_hits` sort (fields are resolved per index at execution).
fn parse_sort(v: &Value) -> EsResult<()> {
    let items: Vec<&Value> = match v {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    for item in items {
        match item {
            Value::String(_) => {}
            Value::Object(m) => {
                for spec in m.values() {
                    let dir = match spec {
                        Value::String(s) => Some(s.as_str()),
                        Value::Object(o) => o.get("order").and_then(Value::as_str),
                        _ => None,
                    };
                    if let Some(other) = dir.filter(|d| *d != "asc" && *d != "desc") {
                        return Err(EsError::illegal_argument(format!(
                            "Unknown order direction [{other}]"
                        )));
                    }
                }
            }
            other => {
                return Err(EsError::parsing(format!(
                    "[sort] doesn't support values of type: {}",
                    token_name(other)
                )))
            }
        }
    }
    Ok(())
}

/// `top_metrics`: `metrics` (`{field}` or a list of them), `sort` (exactly one), `size`.
fn parse_top_metrics(o: &Map<String, Value>) -> EsResult<TopMetricsReq> {
    #[derive(Default)]
    struct Body {
        metrics: Option<Vec<String>>,
        sort: Option<Value>,
        size: Option<usize>,
    }
    type BF = Field<Body>;
    /// One of `metrics`: `{field}` (ES's `MultiValuesSourceFieldConfig`, named `metrics`).
    #[derive(Default)]
    struct Metric {
        source: Source,
    }
    impl Sourced for Metric {
        fn source(&mut self) -> &mut Source {
            &mut self.source
        }
    }
    static METRIC: ObjectParser<Metric> = ObjectParser {
        name: "metrics",
        style: fields::AGG,
        fields: &[&fields::field()],
    };
    static P: ObjectParser<Body> = ObjectParser {
        name: "top_metrics",
        style: fields::AGG,
        fields: &[&[
            BF::new("metrics", "*", |b, at, v| {
                let metrics = match v {
                    Value::Array(a) => a.iter().collect(),
                    one => vec![one],
                };
                let mut fields = Vec::with_capacity(metrics.len());
                for m in metrics {
                    let Some(m) = m.as_object() else {
                        return Err(EsError::x_content_parse(format!(
                            "[{}] metrics doesn't support values of type: {}",
                            at.parser,
                            token_name(m)
                        )));
                    };
                    let mut c = Metric::default();
                    METRIC.parse_into(&mut c, m)?;
                    fields.push(c.source.required_field()?);
                }
                b.metrics = Some(fields);
                Ok(())
            }),
            BF::new("sort", "*", |b, at, v| {
                b.sort = Some(match v {
                    Value::Array(a) if a.len() != 1 => {
                        return Err(EsError::x_content_parse(format!(
                            "[{}] failed to parse field [sort]",
                            at.parser
                        ))
                        .caused_by(EsError::illegal_argument(
                            "[sort] must contain exactly one sort",
                        )))
                    }
                    Value::Array(a) => a[0].clone(),
                    one => one.clone(),
                });
                Ok(())
            }),
            BF::new("size", "*", |b, at, v| {
                let n = int32(at.parser, at.key, v)?;
                if n < 1 {
                    return Err(EsError::x_content_parse(format!(
                        "[{}] failed to parse field [size]",
                        at.parser
                    ))
                    .caused_by(EsError::illegal_argument(format!(
                        "[size] must be more than 0 but was [{n}]"
                    ))));
                }
                b.size = Some(n as usize);
                Ok(())
            }),
        ]],
    };
    let mut b = Body::default();
    P.parse_into(&mut b, o)?;
    let metrics = b
        .metrics
        .filter(|m| !m.is_empty())
        .ok_or_else(|| EsError::illegal_argument("Required [metrics]"))?;
    let sort = b
        .sort
        .ok_or_else(|| EsError::illegal_argument("Required [sort]"))?;
    Ok(TopMetricsReq {
        metrics,
        sort: Value::Array(vec![sort]),
        size: b.size.unwrap_or(1),
    })
}

type HitsF = Field<TopHitsReq>;

/// A `top_hits` option ES accepts and Lode's `top_hits` does not build yet: refused, never
/// ignored.
fn top_hits_unsupported(_: &mut TopHitsReq, at: &At<'_>, _: &Value) -> EsResult<()> {
    Err(EsError::parsing(format!(
        "[{}] [{}] is not supported by Lode",
        at.parser, at.key
    )))
}

static TOP_HITS: ObjectParser<TopHitsReq> = ObjectParser {
    name: "top_hits",
    style: fields::AGG,
    fields: &[&[
        HitsF::new("from", "*", |r, at, v| {
            let n = int32(at.parser, at.key, v)?;
            if n < 0 {
                return Err(EsError::illegal_argument(format!(
                    "[from] must be greater than or equal to 0. Found [{n}]"
                )));
            }
            r.from = n as usize;
            Ok(())
        }),
        HitsF::new("size", "*", |r, at, v| {
            let n = int32(at.parser, at.key, v)?;
            if n < 0 {
                return Err(EsError::illegal_argument(format!(
                    "[size] must be greater than or equal to 0. Found [{n}]"
                )));
            }
            r.size = n as usize;
            Ok(())
        }),
        HitsF::new("sort", "*", |r, _, v| {
            parse_sort(v)?;
            r.sort = Some(v.clone());
            Ok(())
        }),
        HitsF::new("_source", "*", |r, _, v| {
            r.source = SourceFilter::from_json(Some(v));
            Ok(())
        }),
        HitsF::new("track_scores", "*", |r, at, v| {
            r.track_scores = boolean(at.parser, at.key, v)?;
            Ok(())
        }),
        HitsF::new("version", "*", |r, at, v| {
            r.version = boolean(at.parser, at.key, v)?;
            Ok(())
        }),
        HitsF::new("seq_no_primary_term", "*", |r, at, v| {
            r.seq_no_primary_term = boolean(at.parser, at.key, v)?;
            Ok(())
        }),
        HitsF::new("explain", "*", |r, at, v| {
            if boolean(at.parser, at.key, v)? {
                return top_hits_unsupported(r, at, v);
            }
            Ok(())
        }),
        HitsF::new("stored_fields", "*", top_hits_unsupported),
        HitsF::new("docvalue_fields", "*", top_hits_unsupported),
        HitsF::new("highlight", "*", top_hits_unsupported),
    ]],
};

fn parse_top_hits(o: &Map<String, Value>) -> EsResult<TopHitsReq> {
    const TY: &str = "top_hits";
    let mut r = TopHitsReq {
        from: 0,
        size: 3,
        sort: None,
        source: SourceFilter::all(),
        track_scores: false,
        version: false,
        seq_no_primary_term: false,
    };
    TOP_HITS.parse_into(&mut r, o)?;
    if r.from + r.size > 100 {
        return Err(EsError::illegal_argument(format!(
            "Top hits result window is too large, the top hits aggregator [{TY}]'s from + size must be less than or equal to: [100] but was [{}]. This limit can be set by changing the [index.max_inner_result_window] index level setting.",
            r.from + r.size
        )));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> EsError {
        parse_aggs(&v).expect_err("an error")
    }

    #[test]
    fn parse_errors_read_like_elasticsearch() {
        let e = err(json!({"a": {"foo": {}}}));
        assert_eq!((e.status, e.kind.as_str()), (400, "parsing_exception"));
        assert_eq!(e.reason, "Unknown aggregation type [foo]");
        let e = err(json!({"a": {}}));
        assert_eq!(e.reason, "Missing definition for aggregation [a]");
        let e = err(json!({"a": {"terms": {"field": "x"}, "avg": {"field": "y"}}}));
        assert_eq!(
            e.reason,
            "Found two aggregation type definitions in [a]: [terms] and [avg]"
        );
        let e = err(json!({"a": {"terms": {}}}));
        assert_eq!(e.kind, "illegal_argument_exception");
        let e = err(json!({"a": {"terms": {"field": "x", "size": -1}}}));
        assert_eq!(e.reason, "[size] must be greater than 0. Found [-1] in [a]");
        // sizes Elasticsearch parses as `int`: out of range is a 400, not tantivy's u32 failure
        for agg in [
            json!({"a": {"terms": {"field": "x", "size": 10_000_000_000_i64}}}),
            json!({"a": {"terms": {"field": "x", "shard_size": 10_000_000_000_i64}}}),
            json!({"a": {"top_hits": {"size": 10_000_000_000_i64}}}),
            json!({"a": {"composite": {"size": 10_000_000_000_i64, "sources": [{"k": {"terms": {"field": "x"}}}]}}}),
        ] {
            let e = err(agg);
            assert_eq!(
                (e.status, e.kind.as_str()),
                (400, "x_content_parse_exception")
            );
        }
        let e = err(
            json!({"a": {"date_histogram": {"field": "d", "fixed_interval": "1d", "calendar_interval": "1d"}}}),
        );
        assert_eq!(
            e.reason,
            "Cannot use [fixed_interval] with [calendar_interval] configuration option."
        );
        let e = err(json!({"a": {"terms": {"field": "x", "foo": 1}}}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("x_content_parse_exception", "[terms] unknown field [foo]")
        );
        let e = err(json!({"a": {"avg": {"field": "x"}, "aggs": {"b": {"sum": {"field": "y"}}}}}));
        assert_eq!(e.kind, "aggregation_initialization_exception");
        let e = err(json!({"a>b": {"avg": {"field": "x"}}}));
        assert!(e.reason.starts_with("Invalid aggregation name [a>b]"));
        let e = err(json!({"a": {"date_histogram": {"field": "d", "calendar_interval": "2d"}}}));
        assert_eq!(
            e.reason,
            "The supplied interval [2d] could not be parsed as a calendar interval."
        );
    }

    #[test]
    fn terms_orders_get_a_key_tie_breaker() {
        let r = parse_aggs(&json!({"t": {"terms": {"field": "x", "order": {"_count": "asc"}}}}))
            .unwrap();
        let AggKind::Terms(t) = &r.aggs[0].kind else {
            panic!()
        };
        assert_eq!(t.order.len(), 2);
        assert_eq!(
            t.order[1],
            BucketOrder {
                key: OrderKey::Key,
                asc: true
            }
        );
    }
}

#[cfg(test)]
mod declared_tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> EsError {
        parse_aggs(&v).expect_err("an error")
    }

    #[test]
    fn unknown_keys_suggest_the_declared_names_shared_groups_included() {
        let e = err(json!({"a": {"avg": {"feild": "x"}}}));
        assert_eq!(e.kind, "x_content_parse_exception");
        assert_eq!(
            e.reason,
            "[avg] unknown field [feild] did you mean [field]?"
        );
        let e = err(json!({"a": {"extended_stats": {"field": "x", "sigmaa": 1}}}));
        assert_eq!(
            e.reason,
            "[extended_stats] unknown field [sigmaa] did you mean [sigma]?"
        );
        let e = err(json!({"a": {"terms": {"field": "x", "formatt": "0"}}}));
        assert_eq!(
            e.reason,
            "[terms] unknown field [formatt] did you mean [format]?"
        );
        // a script where the aggregation declares none
        let e = err(json!({"a": {"string_stats": {"script": "1"}}}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            (
                "illegal_argument_exception",
                "[script] is not supported in [string_stats] aggregations"
            )
        );
    }

    #[test]
    fn declared_tokens_are_refused_as_elasticsearch_does() {
        let e = err(json!({"a": {"histogram": {"field": "x", "interval": 1, "missing": {}}}}));
        assert_eq!(
            e.reason,
            "[histogram] missing doesn't support values of type: START_OBJECT"
        );
        let e = err(json!({"a": {"range": {"field": "x", "ranges": {}}}}));
        assert_eq!(
            e.reason,
            "[range] ranges doesn't support values of type: START_OBJECT"
        );
        // silently read as absent before; ES declares both as strings
        let e = err(json!({"a": {"reverse_nested": {"path": 1}}}));
        assert_eq!(
            e.reason,
            "[reverse_nested] path doesn't support values of type: VALUE_NUMBER"
        );
        let e = err(json!({"a": {"composite": {"sources": [
            {"k": {"terms": {"field": "x", "order": 1}}}
        ]}}}));
        assert_eq!(
            e.reason,
            "[terms] order doesn't support values of type: VALUE_NUMBER"
        );
    }

    #[test]
    fn the_first_refused_key_in_body_order_is_the_error() {
        // ES's ObjectParser walks the body in order
        let e = err(json!({"a": {"avg": {"format": {}, "bogus": 1, "field": "x"}}}));
        assert_eq!(
            e.reason,
            "[avg] format doesn't support values of type: START_OBJECT"
        );
        let e = err(json!({"a": {"avg": {"bogus": 1, "format": {}}}}));
        assert_eq!(e.reason, "[avg] unknown field [bogus]");
        // requirements across keys come after the walk
        let e = err(json!({"a": {"avg": {"format": "0.0"}}}));
        assert_eq!(
            e.reason,
            "Required one of fields [field, script], but none were specified. "
        );
    }

    #[test]
    fn declared_bodies_parse_their_values() {
        let r = parse_aggs(&json!({
            "p": {"percentiles": {"field": "x", "percents": [50, 1, 50], "hdr": {}}},
            "c": {"cardinality": {"field": "x", "precision_threshold": 100000}},
            "t": {"terms": {"field": "x", "size": 3, "order": {"_key": "asc"}}},
        }))
        .unwrap();
        for node in &r.aggs {
            match &node.kind {
                AggKind::Percentiles(p) => {
                    assert_eq!(p.percents, vec![1.0, 50.0]);
                    assert_eq!(p.method, PercentilesMethod::Hdr { digits: 3 });
                }
                AggKind::Metric(m) => assert_eq!(m.precision_threshold, 40000),
                AggKind::Terms(t) => {
                    assert_eq!((t.size, t.field.as_str()), (3, "x"));
                    assert_eq!(t.order.len(), 1);
                }
                _ => unreachable!(),
            }
        }
        let e = err(json!({"a": {"percentiles": {"field": "x", "tdigest": {}, "hdr": {}}}}));
        assert_eq!(
            e.reason,
            "[percentiles] cannot use both [tdigest] and [hdr] methods: [a]"
        );
    }
}

#[cfg(test)]
mod declared_rest_tests {
    //! One refusal per declaration ported from hand-written checks (issue 9, 2f).
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> (String, String, Option<String>) {
        let e = parse_aggs(&v).expect_err("an error");
        let cause = e.caused_by.as_ref().map(|c| c.reason.clone());
        (e.kind, e.reason, cause)
    }

    fn reason(v: Value) -> String {
        err(v).1
    }

    #[test]
    fn significant_text_and_multi_terms() {
        assert_eq!(
            reason(json!({"s": {"significant_text": {"field": "b", "filter_duplicate_txt": true}}})),
            "[significant_text] unknown field [filter_duplicate_txt] did you mean [filter_duplicate_text]?"
        );
        assert_eq!(
            reason(json!({"s": {"significant_text": {"field": "b", "source_fields": {}}}})),
            "[significant_text] source_fields doesn't support values of type: START_OBJECT"
        );
        assert_eq!(
            reason(json!({"m": {"multi_terms": {"terms": [{"field": "a"}, {"feld": "b"}]}}})),
            "[terms] unknown field [feld] did you mean [field]?"
        );
        assert_eq!(
            reason(json!({"m": {"multi_terms": {"terms": "a"}}})),
            "[multi_terms] terms doesn't support values of type: VALUE_STRING"
        );
        // the terms parser names the outer type
        assert_eq!(
            reason(
                json!({"m": {"multi_terms": {"terms": [{"field": "a"}, {"field": "b"}], "size": "x"}}})
            ),
            reason(json!({"t": {"terms": {"field": "a", "size": "x"}}}))
                .replace("[terms]", "[multi_terms]")
        );
        assert_eq!(
            reason(json!({"r": {"rare_terms": {"field": "a", "include": 1}}})),
            "[rare_terms] include doesn't support values of type: VALUE_NUMBER"
        );
    }

    #[test]
    fn geo_grids_and_geo_distance() {
        assert_eq!(
            reason(json!({"g": {"geohash_grid": {"field": "p", "precission": 3}}})),
            "[geohash_grid] unknown field [precission] did you mean [precision]?"
        );
        assert_eq!(
            reason(json!({"g": {"geotile_grid": {"field": "p", "bounds": "x"}}})),
            "[geotile_grid] bounds doesn't support values of type: VALUE_STRING"
        );
        assert_eq!(
            reason(
                json!({"d": {"geo_distance": {"field": "p", "origin": "1,1", "unt": "km",
                                                   "ranges": [{"to": 1}]}}})
            ),
            "[geo_distance] unknown field [unt] did you mean [unit]?"
        );
        assert_eq!(
            reason(json!({"d": {"geo_distance": {"field": "p", "origin": "1,1",
                                                   "ranges": [{"to": 1, "ky": "a"}]}}})),
            "[range] unknown field [ky] did you mean [key]?"
        );
        assert_eq!(
            reason(json!({"d": {"geo_distance": {"field": "p", "origin": "1,1",
                                                   "ranges": [{"to": []}]}}})),
            "[range] to doesn't support values of type: START_ARRAY"
        );
    }

    #[test]
    fn composite_top_level() {
        let src = json!([{"t": {"terms": {"field": "a"}}}]);
        assert_eq!(
            reason(json!({"c": {"composite": {"sources": src, "aftr": {}}}})),
            "[composite] unknown field [aftr] did you mean [after]?"
        );
        assert_eq!(
            reason(json!({"c": {"composite": {"sources": src, "after": 1}}})),
            "[composite] after doesn't support values of type: VALUE_NUMBER"
        );
        assert_eq!(
            err(json!({"c": {"composite": {"sources": [{"t": {"nope": {}}}]}}})),
            (
                "parsing_exception".into(),
                "invalid source type: nope".into(),
                None
            )
        );
    }

    #[test]
    fn nested_objects() {
        assert_eq!(
            err(
                json!({"r": {"ip_range": {"field": "ip", "ranges": [{"mask": "10.0.0.0/8", "bogus": 1}]}}})
            ),
            (
                "parsing_exception".into(),
                "Unexpected ip range parameter: [bogus]".into(),
                None
            )
        );
        assert_eq!(
            reason(json!({"r": {"ip_range": {"field": "ip", "ranges": [1]}}})),
            "[ranges] must contain objects, but hit a VALUE_NUMBER"
        );
        assert_eq!(
            err(
                json!({"h": {"histogram": {"field": "x", "interval": 1, "hard_bounds": {"min": []}}}})
            ),
            (
                "x_content_parse_exception".into(),
                "[histogram] failed to parse field [hard_bounds]".into(),
                Some("[hard_bounds] min doesn't support values of type: START_ARRAY".into())
            )
        );
        assert_eq!(
            err(json!({"t": {"terms": {"field": "x", "include": {"partition": 0, "parts": 2}}}})).2,
            Some("Unknown parameter in Include/Exclude clause: parts".into())
        );
        assert_eq!(
            err(json!({"t": {"terms": {"field": "x", "order": {"_count": "up"}}}})),
            (
                "x_content_parse_exception".into(),
                "[terms] failed to parse field [order]".into(),
                Some("Unknown order direction [up]".into())
            )
        );
        assert_eq!(
            reason(json!({"t": {"terms": {"field": "x", "order": "_count"}}})),
            "[terms] order doesn't support values of type: VALUE_STRING"
        );
        assert_eq!(
            err(json!({"p": {"percentiles": {"field": "x", "hdr": {"digits": 2}}}})).2,
            Some("[hdr] unknown field [digits]".into())
        );
        assert_eq!(
            reason(json!({"p": {"percentiles": {"field": "x", "tdigest": 100}}})),
            "[percentiles] tdigest doesn't support values of type: VALUE_NUMBER"
        );
        assert_eq!(
            reason(json!({"v": {"variable_width_histogram": {"field": "x", "initial_bufer": 5}}})),
            "[variable_width_histogram] unknown field [initial_bufer] did you mean [initial_buffer]?"
        );
    }

    #[test]
    fn order_objects_as_es() {
        let AggKind::Terms(t) = parse_aggs(&json!({"t": {"terms": {"field": "x",
            "order": [{"_count": "desc", "_key": "asc"}, {"s": "ASC"}]}}}))
        .unwrap()
        .aggs
        .remove(0)
        .kind
        else {
            panic!("terms")
        };
        // the last key of an object is its order; a key order ends the compound order
        assert_eq!(t.order.len(), 2);
        assert!(t.order[0].key == OrderKey::Key && t.order[0].asc);
    }

    #[test]
    fn terms_hints_and_shard_min_doc_count() {
        assert_eq!(
            reason(json!({"t": {"terms": {"field": "x", "execution_hint": "hash"}}})),
            "Unknown `execution_hint`: [hash], expected any of [map, global_ordinals]"
        );
        assert_eq!(
            err(json!({"t": {"terms": {"field": "x", "collect_mode": "wide"}}})).2,
            Some("no [collect_mode] found for value [wide]".into())
        );
        assert_eq!(
            reason(json!({"t": {"terms": {"field": "x", "shard_min_doc_count": -2}}})),
            "[shardMinDocCount] must be greater than or equal to 0. Found [-2] in [t]"
        );
        let AggKind::Terms(t) = parse_aggs(&json!({"t": {"terms": {"field": "x",
            "shard_min_doc_count": 4, "execution_hint": "map", "collect_mode": "depth_first"}}}))
        .unwrap()
        .aggs
        .remove(0)
        .kind
        else {
            panic!("terms")
        };
        assert_eq!(t.shard_min_doc_count, 4);
    }
}

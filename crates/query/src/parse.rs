//! Elasticsearch query JSON → [`Query`], a typed AST with no tantivy types inside.
//!
//! Parsing validates structure only (shapes, known keys, enums) and reports Elasticsearch's
//! own messages. Anything that needs the mapping (field types, analyzers, value conversion)
//! happens in `plan`.

use super::query_string::{self, QsNode};
use base64::Engine as _;
use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use serde_json::{Map, Value};

/// A search script as given and its program, compiled once when the request is parsed and
/// shared by every shard's plan (cloning shares the program). Equal when the JSON is.
#[derive(Debug, Clone)]
pub struct CompiledScript {
    pub json: Value,
    pub program: std::sync::Arc<lode_painless::SearchScript>,
}

impl CompiledScript {
    pub fn compile(script: Value) -> EsResult<CompiledScript> {
        let program = std::sync::Arc::new(lode_painless::SearchScript::compile(&script, None)?);
        Ok(CompiledScript {
            json: script,
            program,
        })
    }
}

impl PartialEq for CompiledScript {
    fn eq(&self, other: &CompiledScript) -> bool {
        self.json == other.json
    }
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    MatchAll {
        boost: f32,
    },
    MatchNone,
    Term(TermQuery),
    Terms(TermsQuery),
    Range(RangeQuery),
    Match(MatchQuery),
    /// `match_bool_prefix`: like `match`, the last term a prefix.
    MatchBoolPrefix(MatchQuery),
    MatchPhrase(PhraseQuery),
    MatchPhrasePrefix(PhraseQuery),
    MultiMatch(MultiMatchQuery),
    Bool(BoolQuery),
    Ids {
        values: Vec<String>,
        boost: f32,
    },
    Exists {
        field: String,
        boost: f32,
    },
    Prefix(PatternQuery),
    Wildcard(PatternQuery),
    /// Lucene regular expression syntax (`flags` are accepted and ignored).
    Regexp(PatternQuery),
    Fuzzy(FuzzyQuery),
    ConstantScore {
        filter: Box<Query>,
        boost: f32,
    },
    DisMax {
        queries: Vec<Query>,
        tie_breaker: f32,
        boost: f32,
    },
    Boosting {
        positive: Box<Query>,
        negative: Box<Query>,
        negative_boost: f32,
        boost: f32,
    },
    QueryString(QueryStringQuery),
    SimpleQueryString(QueryStringQuery),
    FunctionScore(FunctionScoreQuery),
    /// The inner query runs on the nested documents of `path`, joined to their parents
    /// (`crate::nested::ToParentQuery`).
    Nested {
        path: String,
        query: Box<Query>,
        ignore_unmapped: bool,
        score_mode: crate::nested::ScoreMode,
        /// The `inner_hits` object as given (rendered by the fetch phase).
        inner_hits: Option<Value>,
        /// The named queries of `query`: an inner hit's `matched_queries`.
        named: Vec<crate::named::NamedQuery>,
        boost: f32,
    },
    /// A Painless filter, compiled when parsed.
    Script {
        script: CompiledScript,
        boost: f32,
    },
    /// `script_score`: the inner query's matches, scored by a script that sees its `_score`.
    ScriptScore {
        query: Box<Query>,
        script: CompiledScript,
        min_score: Option<f32>,
        boost: f32,
    },
    /// `geo_distance` and `geo_bounding_box` (`crate::geo`).
    Geo(crate::geo::GeoQuery),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TermQuery {
    pub field: String,
    /// A JSON scalar (string, number or boolean).
    pub value: Value,
    pub case_insensitive: bool,
    pub boost: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TermsQuery {
    pub field: String,
    pub values: Vec<Value>,
    /// A terms lookup (`{"index":..,"id":..,"path":..}`); it must be resolved into `values`
    /// by the caller before planning.
    pub lookup: Option<TermsLookup>,
    pub boost: f32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TermsLookup {
    pub index: String,
    pub id: String,
    pub path: String,
    pub routing: Option<String>,
}

/// A `range` query, bounds already normalized from `gt`/`gte`/`lt`/`lte`/`from`/`to`.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeQuery {
    pub field: String,
    pub from: Option<Value>,
    pub to: Option<Value>,
    pub include_lower: bool,
    pub include_upper: bool,
    pub format: Option<String>,
    pub time_zone: Option<String>,
    /// How a range field's ranges must relate to this one (other fields ignore it, as ES).
    pub relation: lode_engine::range_field::Relation,
    pub boost: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Or,
    And,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroTerms {
    None,
    All,
}

/// Edit distance for fuzzy matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fuzziness {
    /// `AUTO[:low,high]`: 0 edits below `low` characters, 1 below `high`, else 2.
    Auto {
        low: usize,
        high: usize,
    },
    Edits(u8),
}

impl Fuzziness {
    pub const AUTO: Fuzziness = Fuzziness::Auto { low: 3, high: 6 };

    /// The edit distance for a term of `term` (counted in characters).
    pub fn distance(&self, term: &str) -> u8 {
        match *self {
            Fuzziness::Edits(n) => n.min(2),
            Fuzziness::Auto { low, high } => {
                let len = term.chars().count();
                if len < low {
                    0
                } else if len < high {
                    1
                } else {
                    2
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MatchQuery {
    pub field: String,
    /// A string, number or boolean.
    pub query: Value,
    pub operator: Operator,
    pub minimum_should_match: Option<String>,
    pub fuzziness: Option<Fuzziness>,
    pub prefix_length: u32,
    pub max_expansions: u32,
    pub fuzzy_transpositions: bool,
    /// `fuzzy_rewrite`, checked when the shard builds the query (as ES parses it).
    pub fuzzy_rewrite: Option<String>,
    pub analyzer: Option<String>,
    pub lenient: bool,
    pub zero_terms_query: ZeroTerms,
    pub boost: f32,
}

impl MatchQuery {
    pub fn new(field: impl Into<String>, query: Value) -> MatchQuery {
        MatchQuery {
            field: field.into(),
            query,
            operator: Operator::Or,
            minimum_should_match: None,
            fuzziness: None,
            prefix_length: 0,
            max_expansions: 50,
            fuzzy_transpositions: true,
            fuzzy_rewrite: None,
            analyzer: None,
            lenient: false,
            zero_terms_query: ZeroTerms::None,
            boost: 1.0,
        }
    }
}

/// `match_phrase` and `match_phrase_prefix`.
#[derive(Debug, Clone, PartialEq)]
pub struct PhraseQuery {
    pub field: String,
    pub query: Value,
    pub slop: u32,
    pub analyzer: Option<String>,
    pub zero_terms_query: ZeroTerms,
    /// Only for `match_phrase_prefix`.
    pub max_expansions: u32,
    pub boost: f32,
}

impl PhraseQuery {
    pub fn new(field: impl Into<String>, query: Value) -> PhraseQuery {
        PhraseQuery {
            field: field.into(),
            query,
            slop: 0,
            analyzer: None,
            zero_terms_query: ZeroTerms::None,
            max_expansions: 50,
            boost: 1.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultiMatchType {
    BestFields,
    MostFields,
    CrossFields,
    Phrase,
    PhrasePrefix,
    BoolPrefix,
}

impl MultiMatchType {
    fn parse(s: &str) -> Option<MultiMatchType> {
        Some(match s.to_ascii_lowercase().as_str() {
            "best_fields" | "boolean" | "bestfields" => MultiMatchType::BestFields,
            "most_fields" | "mostfields" => MultiMatchType::MostFields,
            "cross_fields" | "crossfields" => MultiMatchType::CrossFields,
            "phrase" => MultiMatchType::Phrase,
            "phrase_prefix" | "phraseprefix" => MultiMatchType::PhrasePrefix,
            "bool_prefix" | "boolprefix" => MultiMatchType::BoolPrefix,
            _ => return None,
        })
    }
}

/// A field pattern (`title`, `user.*`) with its `^boost`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldBoost {
    pub pattern: String,
    pub boost: f32,
}

impl FieldBoost {
    /// Parses `name^2.5` (a malformed boost is kept as part of the name, as ES does).
    pub fn parse(s: &str) -> FieldBoost {
        if let Some((name, b)) = s.rsplit_once('^') {
            if let Ok(boost) = b.parse::<f32>() {
                return FieldBoost {
                    pattern: name.to_string(),
                    boost,
                };
            }
        }
        FieldBoost {
            pattern: s.to_string(),
            boost: 1.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MultiMatchQuery {
    pub query: Value,
    /// Empty: the index default (`*`, all fields, lenient).
    pub fields: Vec<FieldBoost>,
    pub kind: MultiMatchType,
    pub operator: Operator,
    pub minimum_should_match: Option<String>,
    pub tie_breaker: Option<f32>,
    pub fuzziness: Option<Fuzziness>,
    pub prefix_length: u32,
    pub max_expansions: u32,
    pub fuzzy_transpositions: bool,
    pub fuzzy_rewrite: Option<String>,
    pub analyzer: Option<String>,
    pub slop: u32,
    pub lenient: bool,
    pub zero_terms_query: ZeroTerms,
    pub boost: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BoolQuery {
    pub must: Vec<Query>,
    pub filter: Vec<Query>,
    pub should: Vec<Query>,
    pub must_not: Vec<Query>,
    pub minimum_should_match: Option<String>,
    pub boost: f32,
}

/// `prefix`, `wildcard` and `regexp`.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternQuery {
    pub field: String,
    pub value: String,
    pub case_insensitive: bool,
    pub boost: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FuzzyQuery {
    pub field: String,
    pub value: Value,
    pub fuzziness: Fuzziness,
    pub prefix_length: u32,
    pub max_expansions: u32,
    pub transpositions: bool,
    /// `rewrite`, checked when the shard builds the query (as ES parses it).
    pub rewrite: Option<String>,
    pub boost: f32,
}

/// `function_score`: the inner query's score combined with per-document functions.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionScoreQuery {
    pub query: Box<Query>,
    pub functions: Vec<ScoreFunction>,
    pub score_mode: ScoreMode,
    pub boost_mode: BoostMode,
    pub max_boost: f32,
    pub min_score: Option<f32>,
    pub boost: f32,
}

/// One function: it applies to documents matching `filter` (all when absent).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreFunction {
    pub filter: Option<Query>,
    /// Multiplies the function's value (a function of only a weight yields the weight).
    pub weight: Option<f32>,
    pub kind: FunctionKind,
}

// Built once per request; boxing the decay variant would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionKind {
    Weight,
    FieldValueFactor {
        field: String,
        factor: f32,
        modifier: Modifier,
        missing: Option<f64>,
    },
    RandomScore {
        seed: Option<i64>,
    },
    /// `script_score`: the `script`, compiled when parsed.
    ScriptScore {
        script: CompiledScript,
    },
    Decay {
        shape: DecayShape,
        field: String,
        origin: Option<Value>,
        scale: Value,
        offset: Option<Value>,
        decay: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modifier {
    None,
    Log,
    Log1p,
    Log2p,
    Ln,
    Ln1p,
    Ln2p,
    Square,
    Sqrt,
    Reciprocal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecayShape {
    Gauss,
    Exp,
    Linear,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreMode {
    Multiply,
    Sum,
    Avg,
    First,
    Max,
    Min,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoostMode {
    Multiply,
    Replace,
    Sum,
    Avg,
    Max,
    Min,
}

/// `query_string` and `simple_query_string`: the options plus the parsed query text.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryStringQuery {
    pub query: String,
    pub tree: QsNode,
    pub default_field: Option<String>,
    pub fields: Vec<FieldBoost>,
    pub default_operator: Operator,
    pub analyzer: Option<String>,
    pub quote_analyzer: Option<String>,
    pub allow_leading_wildcard: bool,
    pub lenient: Option<bool>,
    pub fuzziness: Fuzziness,
    pub fuzzy_transpositions: bool,
    pub fuzzy_prefix_length: u32,
    pub fuzzy_max_expansions: u32,
    pub fuzzy_rewrite: Option<String>,
    pub phrase_slop: u32,
    pub minimum_should_match: Option<String>,
    pub tie_breaker: Option<f32>,
    pub kind: MultiMatchType,
    pub time_zone: Option<String>,
    pub boost: f32,
}

/// Parses one query object such as `{"match":{"title":"quick"}}`.
pub fn parse_query(v: &Value) -> EsResult<Query> {
    crate::named::in_slot(|| parse_one(v))
}

fn parse_one(v: &Value) -> EsResult<Query> {
    let obj = match v {
        Value::Object(o) => o,
        _ => {
            return Err(EsError::parsing(
                "[_na] query malformed, must start with start_object",
            ))
        }
    };
    let mut it = obj.iter();
    let (name, body) = match it.next() {
        Some(e) => e,
        None => {
            return Err(EsError::illegal_argument(
                "query malformed, empty clause found",
            ));
        }
    };
    if it.next().is_some() {
        return Err(EsError::parsing(format!(
            "[{name}] malformed query, expected [END_OBJECT] but found [FIELD_NAME]"
        )));
    }
    let body = match body {
        Value::Object(b) => b,
        _ => {
            return Err(EsError::parsing(format!(
                "[{name}] query malformed, no start_object after query name"
            )))
        }
    };
    match name.as_str() {
        "match_all" => parse_match_all(body),
        "match_none" => parse_match_none(body),
        "term" => parse_term(body),
        "terms" => parse_terms(body),
        "range" => parse_range(body),
        "match" => Ok(Query::Match(parse_match(body, "match")?)),
        "match_bool_prefix" => Ok(Query::MatchBoolPrefix(parse_match(
            body,
            "match_bool_prefix",
        )?)),
        "match_phrase" => Ok(Query::MatchPhrase(parse_phrase(body, "match_phrase")?)),
        "match_phrase_prefix" => Ok(Query::MatchPhrasePrefix(parse_phrase(
            body,
            "match_phrase_prefix",
        )?)),
        "multi_match" => parse_multi_match(body),
        "combined_fields" => parse_combined_fields(body),
        "bool" => parse_bool(body),
        "ids" => parse_ids(body),
        "exists" => parse_exists(body),
        "prefix" => Ok(Query::Prefix(parse_pattern(body, "prefix")?)),
        "wildcard" => Ok(Query::Wildcard(parse_pattern(body, "wildcard")?)),
        "regexp" => Ok(Query::Regexp(parse_pattern(body, "regexp")?)),
        "fuzzy" => parse_fuzzy(body),
        "constant_score" => parse_constant_score(body),
        "dis_max" => parse_dis_max(body),
        "boosting" => parse_boosting(body),
        "query_string" => parse_query_string(body),
        "simple_query_string" => parse_simple_query_string(body),
        "nested" => parse_nested(body),
        "wrapper" => parse_wrapper(body),
        "function_score" => parse_function_score(body),
        "script" => parse_script(body),
        "script_score" => parse_script_score(body),
        "geo_distance" => Ok(Query::Geo(crate::geo::parse_geo_distance(body)?)),
        "geo_bounding_box" => Ok(Query::Geo(crate::geo::parse_geo_bounding_box(body)?)),
        "geo_shape" => Ok(Query::Geo(crate::geo::parse_geo_shape(body)?)),
        other if UNSUPPORTED.contains(&other) => Err(EsError::parsing(format!(
            "[{other}] query is not supported by Lode"
        ))),
        other => Err(EsError::parsing(format!("unknown query [{other}]"))),
    }
}

/// Elasticsearch queries Lode knows of but does not implement.
const UNSUPPORTED: &[&str] = &[
    "more_like_this",
    "terms_set",
    "intervals",
    "span_term",
    "span_multi",
    "span_near",
    "span_or",
    "span_not",
    "span_first",
    "span_containing",
    "span_within",
    "field_masking_span",
    "geo_polygon",
    "shape",
    "has_child",
    "has_parent",
    "parent_id",
    "percolate",
    "distance_feature",
    "rank_feature",
    "pinned",
    "knn",
    "sparse_vector",
    "text_expansion",
    "weighted_tokens",
    "semantic",
    "rule",
];

// ----------------------------------------------------------------------------------------------
// Small helpers

fn unsupported_key(query: &str, key: &str) -> EsError {
    EsError::parsing(format!("[{query}] query does not support [{key}]"))
}

fn multiple_fields(query: &str, first: &str, second: &str) -> EsError {
    EsError::parsing(format!(
        "[{query}] query doesn't support multiple fields, found [{first}] and [{second}]"
    ))
}

fn field_value_error(query: &str, key: &str) -> EsError {
    EsError::x_content_parse(format!("[{query}] failed to parse field [{key}]"))
}

pub(crate) fn as_f32(query: &str, key: &str, v: &Value) -> EsResult<f32> {
    let f = match v {
        Value::Number(n) => n.as_f64().map(|f| f as f32),
        Value::String(s) => s.trim().parse::<f32>().ok(),
        _ => None,
    }
    .ok_or_else(|| field_value_error(query, key))?;
    if key == "boost" && f < 0.0 {
        return Err(EsError::illegal_argument(
            "negative [boost] are not allowed.",
        ));
    }
    Ok(f)
}

fn as_u32(query: &str, key: &str, v: &Value) -> EsResult<u32> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|u| u32::try_from(u).ok()),
        Value::String(s) => s.trim().parse::<u32>().ok(),
        _ => None,
    }
    .ok_or_else(|| field_value_error(query, key))
}

pub(crate) fn as_bool(query: &str, key: &str, v: &Value) -> EsResult<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s == "true" => Some(true),
        Value::String(s) if s == "false" => Some(false),
        _ => None,
    }
    .ok_or_else(|| field_value_error(query, key))
}

fn as_string(query: &str, key: &str, v: &Value) -> EsResult<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(field_value_error(query, key)),
    }
}

/// `minimum_should_match` may be a number or a string.
fn as_msm(query: &str, v: &Value) -> EsResult<Option<String>> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(field_value_error(query, "minimum_should_match")),
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

pub(crate) fn parse_operator(v: &Value) -> EsResult<Operator> {
    let s = match v {
        Value::String(s) => s.as_str(),
        other => {
            return Err(EsError::illegal_argument(format!(
                "operator needs to be either [OR, AND], but not [{other}]"
            )))
        }
    };
    match s.to_ascii_lowercase().as_str() {
        "or" => Ok(Operator::Or),
        "and" => Ok(Operator::And),
        _ => Err(EsError::illegal_argument(format!(
            "operator needs to be either [OR, AND], but not [{s}]"
        ))),
    }
}

fn parse_zero_terms(v: &Value) -> EsResult<ZeroTerms> {
    let s = v.as_str().unwrap_or_default();
    match s.to_ascii_lowercase().as_str() {
        "none" => Ok(ZeroTerms::None),
        "all" => Ok(ZeroTerms::All),
        _ => Err(EsError::parsing(format!(
            "Unsupported zero_terms_query value [{}]",
            scalar_text(v)
        ))),
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `fuzziness`: `AUTO`, `AUTO:low,high`, or an edit count (0, 1, 2; as a number or string).
pub fn parse_fuzziness(v: &Value) -> EsResult<Fuzziness> {
    let invalid =
        || EsError::illegal_argument(format!("Invalid fuzziness value: {}", scalar_text(v)));
    match v {
        Value::Number(n) => {
            let f = n.as_f64().ok_or_else(invalid)?;
            if f < 0.0 {
                return Err(invalid());
            }
            Ok(Fuzziness::Edits(f.min(2.0) as u8))
        }
        Value::String(s) => {
            let t = s.trim();
            if t.eq_ignore_ascii_case("auto") {
                return Ok(Fuzziness::AUTO);
            }
            let auto_args = t
                .get(..5)
                .filter(|head| head.eq_ignore_ascii_case("auto:"))
                .map(|_| &t[5..]);
            if let Some(args) = auto_args {
                let (lo, hi) = args.split_once(',').ok_or_else(invalid)?;
                let low: usize = lo.trim().parse().map_err(|_| invalid())?;
                let high: usize = hi.trim().parse().map_err(|_| invalid())?;
                if low > high {
                    return Err(invalid());
                }
                return Ok(Fuzziness::Auto { low, high });
            }
            let f: f64 = t.parse().map_err(|_| invalid())?;
            if f < 0.0 {
                return Err(invalid());
            }
            Ok(Fuzziness::Edits(f.min(2.0) as u8))
        }
        _ => Err(invalid()),
    }
}

/// The single `field: value-or-object` entry of term-level and full-text leaf queries.
fn single_field<'a>(query: &str, body: &'a Map<String, Value>) -> EsResult<(&'a str, &'a Value)> {
    let mut it = body.iter();
    let (field, v) = it.next().ok_or_else(|| {
        EsError::illegal_argument(format!("[{query}] query requires a field name"))
    })?;
    if let Some((second, _)) = it.next() {
        return Err(multiple_fields(query, field, second));
    }
    if field.is_empty() {
        return Err(EsError::illegal_argument("field name is null or empty"));
    }
    Ok((field, v))
}

// ----------------------------------------------------------------------------------------------
// Declarations: each query body is a static `ObjectParser` (lode_engine::object_parser); its
// setters give the messages below, and keys or tokens it does not declare are refused with
// ES's "[q] query does not support [k]".

/// A query under construction that has a `boost` (every query's, declared in [`common`]).
pub(crate) trait Boosted {
    fn boost_mut(&mut self) -> &mut f32;
}

macro_rules! boosted {
    ($($t:ty),* $(,)?) => {$(
        impl Boosted for $t {
            fn boost_mut(&mut self) -> &mut f32 {
                &mut self.boost
            }
        }
    )*};
}

boosted!(
    Only,
    Terms,
    TermQuery,
    RangeQuery,
    MatchQuery,
    PhraseQuery,
    MultiMatch,
    CombinedFields,
    BoolQuery,
    Ids,
    Exists,
    Pattern,
    FuzzyQuery,
    ConstantScore,
    DisMax,
    ScriptQ,
    ScriptScore,
    Boosting,
    Nested,
);

/// The fields of `AbstractQueryBuilder` every query takes: `boost` and `_name`, declared once.
/// `_name` names the query being parsed (`crate::named`).
pub(crate) const fn common<T: Boosted>() -> [Field<T>; 2] {
    [
        Field::new("boost", "*", set_boost::<T>),
        Field::new("_name", "vn", set_name::<T>),
    ]
}

fn set_name<T>(_: &mut T, at: &At<'_>, v: &Value) -> EsResult<()> {
    // ES reads `_name` with `XContentParser#text`: a number or boolean is its text, null none
    if !v.is_null() {
        crate::named::set_name(as_string(at.parser, at.key, v)?);
    }
    Ok(())
}

fn set_boost<T: Boosted>(q: &mut T, at: &At<'_>, v: &Value) -> EsResult<()> {
    *q.boost_mut() = as_f32(at.parser, at.key, v)?;
    Ok(())
}

/// A query with nothing but the common fields.
struct Only {
    boost: f32,
}

impl Default for Only {
    fn default() -> Self {
        Only { boost: 1.0 }
    }
}

// Setters shared by several queries.

fn set_f32(at: &At<'_>, v: &Value) -> EsResult<f32> {
    as_f32(at.parser, at.key, v)
}

fn set_u32(at: &At<'_>, v: &Value) -> EsResult<u32> {
    as_u32(at.parser, at.key, v)
}

fn set_bool(at: &At<'_>, v: &Value) -> EsResult<bool> {
    as_bool(at.parser, at.key, v)
}

fn set_string(at: &At<'_>, v: &Value) -> EsResult<String> {
    as_string(at.parser, at.key, v)
}

// ----------------------------------------------------------------------------------------------
// Individual queries

fn parse_match_all(body: &Map<String, Value>) -> EsResult<Query> {
    static P: ObjectParser<Only> = ObjectParser {
        name: "match_all",
        style: Style::Query,
        fields: &[&common()],
    };
    Ok(Query::MatchAll {
        boost: P.parse(body)?.boost,
    })
}

fn parse_match_none(body: &Map<String, Value>) -> EsResult<Query> {
    static P: ObjectParser<Only> = ObjectParser {
        name: "match_none",
        style: Style::Query,
        fields: &[&common()],
    };
    P.parse(body)?;
    Ok(Query::MatchNone)
}

fn parse_term(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "term";
    type F = Field<TermQuery>;
    static P: ObjectParser<TermQuery> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("value", "*", |q, _, v| {
                    if v.is_array() || v.is_object() {
                        return Err(EsError::parsing(format!(
                            "[{Q}] query does not support array of values"
                        )));
                    }
                    q.value = v.clone();
                    Ok(())
                }),
                F::new("case_insensitive", "*", |q, at, v| {
                    q.case_insensitive = set_bool(at, v)?;
                    Ok(())
                }),
            ],
            &common(),
        ],
    };
    let (field, spec) = single_field(Q, body)?;
    let mut q = TermQuery {
        field: field.to_string(),
        value: Value::Null,
        case_insensitive: false,
        boost: 1.0,
    };
    match spec {
        Value::Object(o) => P.parse_into(&mut q, o)?,
        Value::Array(_) => {
            return Err(EsError::parsing(format!(
                "[{Q}] query does not support array of values"
            )))
        }
        v => q.value = v.clone(),
    }
    if q.value.is_null() {
        return Err(EsError::illegal_argument("value cannot be null"));
    }
    Ok(Query::Term(q))
}

/// `terms` under construction: the one field (any key not declared) names the terms.
struct Terms {
    field: Option<String>,
    boost: f32,
}

fn parse_terms(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "terms";
    static P: ObjectParser<Terms> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &common(),
            &[Field::other("oa", |q, at, _| {
                if q.field.is_some() {
                    return Err(EsError::parsing(format!(
                        "[{Q}] query does not support multiple fields"
                    )));
                }
                q.field = Some(at.key.to_string());
                Ok(())
            })],
        ],
    };
    let mut t = Terms {
        field: None,
        boost: 1.0,
    };
    P.parse_into(&mut t, body)?;
    let field = t.field.ok_or_else(|| {
        EsError::parsing(format!(
            "[{Q}] query requires a field name, followed by array of terms or a document lookup specification"
        ))
    })?;
    let spec = &body[&field];
    let boost = t.boost;
    let mut q = TermsQuery {
        field,
        values: Vec::new(),
        lookup: None,
        boost,
    };
    match spec {
        Value::Array(items) => {
            for item in items {
                if item.is_null() {
                    return Err(EsError::illegal_argument(
                        "No value specified for terms query",
                    ));
                }
                if !is_scalar(item) {
                    return Err(EsError::parsing(format!(
                        "[{Q}] query does not support [{}]",
                        q.field
                    )));
                }
                q.values.push(item.clone());
            }
        }
        Value::Object(o) => {
            let text = |k: &str| o.get(k).map(scalar_text);
            let (index, id, path) = match (text("index"), text("id"), text("path")) {
                (Some(i), Some(d), Some(p)) => (i, d, p),
                _ => {
                    return Err(EsError::parsing(format!(
                        "[{Q}] query lookup element requires specifying the index, id and path"
                    )))
                }
            };
            q.lookup = Some(TermsLookup {
                index,
                id,
                path,
                routing: text("routing"),
            });
        }
        _ => unreachable!("checked above"),
    }
    Ok(Query::Terms(q))
}

fn parse_range(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "range";
    type F = Field<RangeQuery>;
    fn bound(at: &At<'_>, v: &Value) -> EsResult<Option<Value>> {
        match v {
            Value::Null => Ok(None),
            v if is_scalar(v) => Ok(Some(v.clone())),
            _ => Err(field_value_error(at.parser, at.key)),
        }
    }
    static P: ObjectParser<RangeQuery> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("from", "*", |q, at, v| {
                    q.from = bound(at, v)?;
                    Ok(())
                }),
                F::new("to", "*", |q, at, v| {
                    q.to = bound(at, v)?;
                    Ok(())
                }),
                F::new("include_lower", "*", |q, at, v| {
                    q.include_lower = set_bool(at, v)?;
                    Ok(())
                }),
                F::new("include_upper", "*", |q, at, v| {
                    q.include_upper = set_bool(at, v)?;
                    Ok(())
                }),
                F::new("gt", "*", |q, at, v| {
                    q.from = bound(at, v)?;
                    q.include_lower = false;
                    Ok(())
                }),
                F::new("gte", "*", |q, at, v| {
                    q.from = bound(at, v)?;
                    q.include_lower = true;
                    Ok(())
                }),
                F::new("lt", "*", |q, at, v| {
                    q.to = bound(at, v)?;
                    q.include_upper = false;
                    Ok(())
                }),
                F::new("lte", "*", |q, at, v| {
                    q.to = bound(at, v)?;
                    q.include_upper = true;
                    Ok(())
                }),
                F::new("format", "*", |q, at, v| {
                    q.format = Some(set_string(at, v)?);
                    Ok(())
                }),
                F::new("time_zone", "*", |q, at, v| {
                    q.time_zone = Some(set_string(at, v)?);
                    Ok(())
                }),
                F::new("relation", "*", |q, at, v| {
                    let r = set_string(at, v)?;
                    q.relation =
                        lode_engine::range_field::Relation::parse(&r).ok_or_else(|| {
                            EsError::parsing(format!("[{Q}] query does not support relation [{r}]"))
                        })?;
                    Ok(())
                }),
            ],
            &common(),
        ],
    };
    let (field, spec) = single_field(Q, body)?;
    let spec = match spec {
        Value::Object(o) => o,
        _ => return Err(unsupported_key(Q, field)),
    };
    let mut q = RangeQuery {
        field: field.to_string(),
        from: None,
        to: None,
        include_lower: true,
        include_upper: true,
        format: None,
        time_zone: None,
        relation: lode_engine::range_field::Relation::Intersects,
        boost: 1.0,
    };
    P.parse_into(&mut q, spec)?;
    Ok(Query::Range(q))
}

/// `match` and `match_bool_prefix` (one declaration, read under either name).
static MATCH: ObjectParser<MatchQuery> = ObjectParser {
    name: "match",
    style: Style::Query,
    fields: &[
        &[
            Field::<MatchQuery>::new("query", "*", |q, _, v| {
                q.query = v.clone();
                Ok(())
            }),
            Field::new("operator", "*", |q, _, v| {
                q.operator = parse_operator(v)?;
                Ok(())
            }),
            Field::new("minimum_should_match", "*", |q, at, v| {
                q.minimum_should_match = as_msm(at.parser, v)?;
                Ok(())
            }),
            Field::new("fuzziness", "*", |q, _, v| {
                q.fuzziness = Some(parse_fuzziness(v)?);
                Ok(())
            }),
            Field::new("prefix_length", "*", |q, at, v| {
                q.prefix_length = set_u32(at, v)?;
                Ok(())
            }),
            Field::new("max_expansions", "*", |q, at, v| {
                q.max_expansions = set_u32(at, v)?;
                Ok(())
            }),
            Field::new("fuzzy_transpositions", "*", |q, at, v| {
                q.fuzzy_transpositions = set_bool(at, v)?;
                Ok(())
            }),
            Field::new("analyzer", "*", |q, at, v| {
                q.analyzer = Some(set_string(at, v)?);
                Ok(())
            }),
            Field::new("lenient", "*", |q, at, v| {
                q.lenient = set_bool(at, v)?;
                Ok(())
            }),
            Field::new("zero_terms_query", "*", |q, _, v| {
                q.zero_terms_query = parse_zero_terms(v)?;
                Ok(())
            }),
            Field::new("fuzzy_rewrite", "*", |q, at, v| {
                q.fuzzy_rewrite = Some(set_string(at, v)?);
                Ok(())
            }),
            Field::new("auto_generate_synonyms_phrase_query", "*", ignore),
        ],
        &common(),
    ],
};

fn parse_match(body: &Map<String, Value>, name: &str) -> EsResult<MatchQuery> {
    let (field, spec) = single_field(name, body)?;
    let mut q = MatchQuery::new(field, Value::Null);
    match spec {
        Value::Object(o) => MATCH.parse_named(name, &mut q, o)?,
        v => q.query = v.clone(),
    }
    if !is_scalar(&q.query) {
        return Err(if q.query.is_null() {
            EsError::illegal_argument(format!("[{name}] requires query value"))
        } else {
            EsError::parsing(format!(
                "[{name}] unknown token [START_{}] after [query]",
                token_kind(&q.query)
            ))
        });
    }
    Ok(q)
}

fn token_kind(v: &Value) -> &'static str {
    if v.is_array() {
        "ARRAY"
    } else {
        "OBJECT"
    }
}

/// The fields of `match_phrase`; `match_phrase_prefix` adds `max_expansions`.
static PHRASE_FIELDS: &[Field<PhraseQuery>] = &[
    Field::new("query", "*", |q, _, v| {
        q.query = v.clone();
        Ok(())
    }),
    Field::new("slop", "*", |q, at, v| {
        q.slop = set_u32(at, v)?;
        Ok(())
    }),
    Field::new("analyzer", "*", |q, at, v| {
        q.analyzer = Some(set_string(at, v)?);
        Ok(())
    }),
    Field::new("zero_terms_query", "*", |q, _, v| {
        q.zero_terms_query = parse_zero_terms(v)?;
        Ok(())
    }),
];

static MATCH_PHRASE: ObjectParser<PhraseQuery> = ObjectParser {
    name: "match_phrase",
    style: Style::Query,
    fields: &[PHRASE_FIELDS, &common()],
};

static MATCH_PHRASE_PREFIX: ObjectParser<PhraseQuery> = ObjectParser {
    name: "match_phrase_prefix",
    style: Style::Query,
    fields: &[
        PHRASE_FIELDS,
        &[Field::new("max_expansions", "*", |q, at, v| {
            q.max_expansions = set_u32(at, v)?;
            Ok(())
        })],
        &common(),
    ],
};

fn parse_phrase(body: &Map<String, Value>, name: &str) -> EsResult<PhraseQuery> {
    let (field, spec) = single_field(name, body)?;
    let mut q = PhraseQuery::new(field, Value::Null);
    match spec {
        Value::Object(o) => {
            let parser = if name == "match_phrase_prefix" {
                &MATCH_PHRASE_PREFIX
            } else {
                &MATCH_PHRASE
            };
            parser.parse_into(&mut q, o)?;
        }
        v => q.query = v.clone(),
    }
    if !is_scalar(&q.query) {
        return Err(if q.query.is_null() {
            EsError::illegal_argument(format!("[{name}] requires query value"))
        } else {
            EsError::parsing(format!(
                "[{name}] unknown token [START_{}] after [query]",
                token_kind(&q.query)
            ))
        });
    }
    Ok(q)
}

fn parse_fields(query: &str, v: &Value) -> EsResult<Vec<FieldBoost>> {
    match v {
        Value::String(s) => Ok(vec![FieldBoost::parse(s)]),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(FieldBoost::parse(s)),
                _ => Err(EsError::parsing(format!(
                    "[{query}] query does not support [fields]"
                ))),
            })
            .collect(),
        _ => Err(EsError::parsing(format!(
            "[{query}] query does not support [fields]"
        ))),
    }
}

/// `multi_match` under construction: whether `slop` was given matters for `bool_prefix`.
struct MultiMatch {
    q: MultiMatchQuery,
    slop_set: bool,
    boost: f32,
}

fn parse_multi_match(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "multi_match";
    type F = Field<MultiMatch>;
    static P: ObjectParser<MultiMatch> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("query", "*", |m, _, v| {
                    m.q.query = v.clone();
                    Ok(())
                }),
                F::new("fields", "*", |m, at, v| {
                    m.q.fields = parse_fields(at.parser, v)?;
                    Ok(())
                }),
                F::new("type", "*", |m, at, v| {
                    let s = set_string(at, v)?;
                    m.q.kind = MultiMatchType::parse(&s).ok_or_else(|| {
                        EsError::bad_request(
                            "parse_exception",
                            format!("failed to parse [{Q}] query type [{s}]. unknown type."),
                        )
                    })?;
                    Ok(())
                }),
                F::new("operator", "*", |m, _, v| {
                    m.q.operator = parse_operator(v)?;
                    Ok(())
                }),
                F::new("minimum_should_match", "*", |m, at, v| {
                    m.q.minimum_should_match = as_msm(at.parser, v)?;
                    Ok(())
                }),
                F::new("tie_breaker", "*", |m, at, v| {
                    m.q.tie_breaker = Some(set_f32(at, v)?);
                    Ok(())
                }),
                F::new("fuzziness", "*", |m, _, v| {
                    m.q.fuzziness = Some(parse_fuzziness(v)?);
                    Ok(())
                }),
                F::new("prefix_length", "*", |m, at, v| {
                    m.q.prefix_length = set_u32(at, v)?;
                    Ok(())
                }),
                F::new("max_expansions", "*", |m, at, v| {
                    m.q.max_expansions = set_u32(at, v)?;
                    Ok(())
                }),
                F::new("fuzzy_transpositions", "*", |m, at, v| {
                    m.q.fuzzy_transpositions = set_bool(at, v)?;
                    Ok(())
                }),
                F::new("analyzer", "*", |m, at, v| {
                    m.q.analyzer = Some(set_string(at, v)?);
                    Ok(())
                }),
                F::new("slop", "*", |m, at, v| {
                    m.q.slop = set_u32(at, v)?;
                    m.slop_set = true;
                    Ok(())
                }),
                F::new("lenient", "*", |m, at, v| {
                    m.q.lenient = set_bool(at, v)?;
                    Ok(())
                }),
                F::new("zero_terms_query", "*", |m, _, v| {
                    m.q.zero_terms_query = parse_zero_terms(v)?;
                    Ok(())
                }),
                F::new("fuzzy_rewrite", "*", |m, at, v| {
                    m.q.fuzzy_rewrite = Some(set_string(at, v)?);
                    Ok(())
                }),
                F::new("auto_generate_synonyms_phrase_query", "*", ignore),
            ],
            &common(),
        ],
    };
    let mut m = MultiMatch {
        q: MultiMatchQuery {
            query: Value::Null,
            fields: Vec::new(),
            kind: MultiMatchType::BestFields,
            operator: Operator::Or,
            minimum_should_match: None,
            tie_breaker: None,
            fuzziness: None,
            prefix_length: 0,
            max_expansions: 50,
            fuzzy_transpositions: true,
            fuzzy_rewrite: None,
            analyzer: None,
            slop: 0,
            lenient: false,
            zero_terms_query: ZeroTerms::None,
            boost: 1.0,
        },
        slop_set: false,
        boost: 1.0,
    };
    P.parse_into(&mut m, body)?;
    let MultiMatch {
        mut q,
        slop_set,
        boost,
    } = m;
    q.boost = boost;
    if q.query.is_null() {
        return Err(EsError::illegal_argument(format!(
            "[{Q}] requires query value"
        )));
    }
    if !is_scalar(&q.query) {
        return Err(EsError::parsing(format!(
            "[{Q}] unknown token [START_{}] after [query]",
            token_kind(&q.query)
        )));
    }
    if q.fuzziness.is_some()
        && matches!(
            q.kind,
            MultiMatchType::CrossFields | MultiMatchType::Phrase | MultiMatchType::PhrasePrefix
        )
    {
        return Err(EsError::parsing(format!(
            "Fuzziness not allowed for type [{}]",
            multi_match_type_name(q.kind)
        )));
    }
    if slop_set && matches!(q.kind, MultiMatchType::BoolPrefix) {
        return Err(EsError::parsing("slop not allowed for type [bool_prefix]"));
    }
    Ok(Query::MultiMatch(q))
}

fn multi_match_type_name(t: MultiMatchType) -> &'static str {
    match t {
        MultiMatchType::BestFields => "best_fields",
        MultiMatchType::MostFields => "most_fields",
        MultiMatchType::CrossFields => "cross_fields",
        MultiMatchType::Phrase => "phrase",
        MultiMatchType::PhrasePrefix => "phrase_prefix",
        MultiMatchType::BoolPrefix => "bool_prefix",
    }
}

/// `combined_fields` is planned as a `cross_fields` multi_match (term-centric over the fields).
struct CombinedFields {
    query: Value,
    fields: Vec<FieldBoost>,
    operator: Operator,
    msm: Option<String>,
    zero: ZeroTerms,
    boost: f32,
}

fn parse_combined_fields(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "combined_fields";
    type F = Field<CombinedFields>;
    static P: ObjectParser<CombinedFields> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("query", "*", |c, _, v| {
                    c.query = v.clone();
                    Ok(())
                }),
                F::new("fields", "*", |c, at, v| {
                    c.fields = parse_fields(at.parser, v)?;
                    Ok(())
                }),
                F::new("operator", "*", |c, _, v| {
                    c.operator = parse_operator(v)?;
                    Ok(())
                }),
                F::new("minimum_should_match", "*", |c, at, v| {
                    c.msm = as_msm(at.parser, v)?;
                    Ok(())
                }),
                F::new("zero_terms_query", "*", |c, _, v| {
                    c.zero = parse_zero_terms(v)?;
                    Ok(())
                }),
                F::new("auto_generate_synonyms_phrase_query", "*", ignore),
            ],
            &common(),
        ],
    };
    let mut c = CombinedFields {
        query: Value::Null,
        fields: Vec::new(),
        operator: Operator::Or,
        msm: None,
        zero: ZeroTerms::None,
        boost: 1.0,
    };
    P.parse_into(&mut c, body)?;
    if !is_scalar(&c.query) {
        return Err(EsError::illegal_argument(format!(
            "[{Q}] requires query value"
        )));
    }
    if c.fields.is_empty() {
        return Err(EsError::illegal_argument(format!(
            "[{Q}] requires field list"
        )));
    }
    Ok(Query::MultiMatch(MultiMatchQuery {
        query: c.query,
        fields: c.fields,
        kind: MultiMatchType::CrossFields,
        operator: c.operator,
        minimum_should_match: c.msm,
        tie_breaker: Some(0.0),
        fuzziness: None,
        prefix_length: 0,
        max_expansions: 50,
        fuzzy_transpositions: true,
        fuzzy_rewrite: None,
        analyzer: None,
        slop: 0,
        lenient: false,
        zero_terms_query: c.zero,
        boost: c.boost,
    }))
}

fn parse_clauses(v: &Value) -> EsResult<Vec<Query>> {
    match v {
        Value::Array(items) => items.iter().map(parse_query).collect(),
        Value::Object(_) => Ok(vec![parse_query(v)?]),
        _ => Err(EsError::parsing(
            "[_na] query malformed, must start with start_object",
        )),
    }
}

fn parse_bool(body: &Map<String, Value>) -> EsResult<Query> {
    type F = Field<BoolQuery>;
    static P: ObjectParser<BoolQuery> = ObjectParser {
        name: "bool",
        style: Style::Query,
        fields: &[
            &[
                F::new("must", "*", |q, _, v| {
                    q.must.extend(parse_clauses(v)?);
                    Ok(())
                }),
                F::new("filter", "*", |q, _, v| {
                    q.filter.extend(parse_clauses(v)?);
                    Ok(())
                }),
                F::new("should", "*", |q, _, v| {
                    q.should.extend(parse_clauses(v)?);
                    Ok(())
                }),
                F::new("must_not", "*", |q, _, v| {
                    q.must_not.extend(parse_clauses(v)?);
                    Ok(())
                })
                .aliases(&["mustNot"]),
                F::new("minimum_should_match", "*", |q, at, v| {
                    q.minimum_should_match = as_msm(at.parser, v)?;
                    Ok(())
                }),
                F::new("adjust_pure_negative", "*", |_, at, v| {
                    set_bool(at, v)?;
                    Ok(())
                }),
            ],
            &common(),
        ],
    };
    let mut q = BoolQuery {
        must: Vec::new(),
        filter: Vec::new(),
        should: Vec::new(),
        must_not: Vec::new(),
        minimum_should_match: None,
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    Ok(Query::Bool(q))
}

struct Ids {
    values: Vec<String>,
    boost: f32,
}

fn parse_ids(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "ids";
    static P: ObjectParser<Ids> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[Field::new("values", "*", |q, _, v| {
                let bad = || EsError::parsing(format!("[{Q}] failed to parse field [values]"));
                for i in v.as_array().ok_or_else(bad)? {
                    match i {
                        Value::String(s) => q.values.push(s.clone()),
                        Value::Number(n) => q.values.push(n.to_string()),
                        _ => return Err(bad()),
                    }
                }
                Ok(())
            })],
            &common(),
        ],
    };
    let mut q = Ids {
        values: Vec::new(),
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    Ok(Query::Ids {
        values: q.values,
        boost: q.boost,
    })
}

struct Exists {
    field: Option<String>,
    boost: f32,
}

fn parse_exists(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "exists";
    static P: ObjectParser<Exists> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[Field::new("field", "*", |q, at, v| {
                q.field = Some(set_string(at, v)?);
                Ok(())
            })],
            &common(),
        ],
    };
    let mut q = Exists {
        field: None,
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    let field = q
        .field
        .ok_or_else(|| EsError::parsing(format!("[{Q}] must be provided with a [field]")))?;
    Ok(Query::Exists {
        field,
        boost: q.boost,
    })
}

/// `prefix`, `wildcard` or `regexp` under construction.
struct Pattern {
    value: Option<String>,
    case_insensitive: bool,
    boost: f32,
}

/// The fields the three pattern queries share.
static PATTERN_FIELDS: &[Field<Pattern>] = &[
    Field::new("value", "*", set_pattern_value),
    Field::new("case_insensitive", "*", |q, at, v| {
        q.case_insensitive = set_bool(at, v)?;
        Ok(())
    }),
    Field::new("rewrite", "*", |_, at, v| constant_rewrite(at, v)),
];

/// The `rewrite` of `prefix`, `wildcard` and `regexp` (and of `query_string`'s terms of those
/// kinds), as ES's `QueryParsers#parseRewriteMethod` reads it. Lode scores their matches with
/// the query's boost, which is what the constant-score methods give; a scoring method is
/// refused rather than scored otherwise.
fn constant_rewrite(at: &At<'_>, v: &Value) -> EsResult<()> {
    let name = set_string(at, v)?;
    let why = match crate::fuzzy::Rewrite::parse(&name) {
        Ok(rewrite) if rewrite.is_constant() => return Ok(()),
        Ok(_) => format!(
            "rewrite [{name}] is not supported on prefix, wildcard and regexp terms: their \
             matches score the query's boost (constant_score)"
        ),
        Err(why) => why,
    };
    Err(EsError::bad_request(
        "query_shard_exception",
        format!("failed to create query: {why}"),
    )
    .caused_by(EsError::illegal_argument(why)))
}

fn set_pattern_value(q: &mut Pattern, at: &At<'_>, v: &Value) -> EsResult<()> {
    q.value = Some(set_string(at, v)?);
    Ok(())
}

static PREFIX: ObjectParser<Pattern> = ObjectParser {
    name: "prefix",
    style: Style::Query,
    fields: &[PATTERN_FIELDS, &common()],
};

static WILDCARD: ObjectParser<Pattern> = ObjectParser {
    name: "wildcard",
    style: Style::Query,
    fields: &[
        PATTERN_FIELDS,
        &[Field::new("wildcard", "*", set_pattern_value)],
        &common(),
    ],
};

static REGEXP: ObjectParser<Pattern> = ObjectParser {
    name: "regexp",
    style: Style::Query,
    fields: &[
        PATTERN_FIELDS,
        // Validated as ES validates them; the regex engine takes its syntax whole.
        &[
            Field::new("flags", "*", |_, at, v| {
                check_regexp_flags(&set_string(at, v)?)
            }),
            Field::new("flags_value", "*", |_, at, v| set_u32(at, v).map(drop)),
            Field::new("max_determinized_states", "*", |_, at, v| {
                set_u32(at, v).map(drop)
            }),
        ],
        &common(),
    ],
};

fn parse_pattern(body: &Map<String, Value>, name: &str) -> EsResult<PatternQuery> {
    let (field, spec) = single_field(name, body)?;
    let mut q = Pattern {
        value: None,
        case_insensitive: false,
        boost: 1.0,
    };
    match spec {
        Value::Object(o) => {
            let parser = match name {
                "wildcard" => &WILDCARD,
                "regexp" => &REGEXP,
                _ => &PREFIX,
            };
            parser.parse_into(&mut q, o)?;
        }
        v if is_scalar(v) => q.value = Some(scalar_text(v)),
        _ => {
            return Err(EsError::parsing(format!(
                "[{name}] query does not support array of values"
            )))
        }
    }
    Ok(PatternQuery {
        field: field.to_string(),
        value: q
            .value
            .ok_or_else(|| EsError::illegal_argument("value cannot be null"))?,
        case_insensitive: q.case_insensitive,
        boost: q.boost,
    })
}

/// ES's `RegexpFlag.resolveValue`: `|`-separated flag names, case-insensitive.
fn check_regexp_flags(flags: &str) -> EsResult<()> {
    const FLAGS: [&str; 7] = [
        "INTERSECTION",
        "COMPLEMENT",
        "EMPTY",
        "ANYSTRING",
        "INTERVAL",
        "NONE",
        "ALL",
    ];
    for f in flags.split('|').map(str::trim).filter(|f| !f.is_empty()) {
        if !FLAGS.iter().any(|n| n.eq_ignore_ascii_case(f)) {
            return Err(EsError::illegal_argument(format!(
                "Unknown regexp flag [{f}]"
            )));
        }
    }
    Ok(())
}

fn parse_fuzzy(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "fuzzy";
    type F = Field<FuzzyQuery>;
    static P: ObjectParser<FuzzyQuery> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("value", "*", |q, _, v| {
                    q.value = v.clone();
                    Ok(())
                }),
                F::new("fuzziness", "*", |q, _, v| {
                    q.fuzziness = parse_fuzziness(v)?;
                    Ok(())
                }),
                F::new("prefix_length", "*", |q, at, v| {
                    q.prefix_length = set_u32(at, v)?;
                    Ok(())
                }),
                F::new("max_expansions", "*", |q, at, v| {
                    q.max_expansions = set_u32(at, v)?;
                    Ok(())
                }),
                F::new("transpositions", "*", |q, at, v| {
                    q.transpositions = set_bool(at, v)?;
                    Ok(())
                }),
                F::new("rewrite", "*", |q, at, v| {
                    q.rewrite = Some(set_string(at, v)?);
                    Ok(())
                }),
            ],
            &common(),
        ],
    };
    let (field, spec) = single_field(Q, body)?;
    let mut q = FuzzyQuery {
        field: field.to_string(),
        value: Value::Null,
        fuzziness: Fuzziness::AUTO,
        prefix_length: 0,
        max_expansions: 50,
        transpositions: true,
        rewrite: None,
        boost: 1.0,
    };
    match spec {
        Value::Object(o) => P.parse_into(&mut q, o)?,
        v => q.value = v.clone(),
    }
    if !is_scalar(&q.value) {
        return Err(EsError::illegal_argument("query value cannot be null"));
    }
    Ok(Query::Fuzzy(q))
}

struct ConstantScore {
    filter: Option<Query>,
    boost: f32,
}

fn parse_constant_score(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "constant_score";
    static P: ObjectParser<ConstantScore> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[Field::new("filter", "o", |q, _, v| {
                q.filter = Some(parse_query(v)?);
                Ok(())
            })],
            &common(),
        ],
    };
    let mut q = ConstantScore {
        filter: None,
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    let filter = q
        .filter
        .ok_or_else(|| EsError::parsing(format!("[{Q}] requires a 'filter' element")))?;
    Ok(Query::ConstantScore {
        filter: Box::new(filter),
        boost: q.boost,
    })
}

struct DisMax {
    queries: Vec<Query>,
    tie_breaker: f32,
    boost: f32,
}

fn parse_dis_max(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "dis_max";
    type F = Field<DisMax>;
    static P: ObjectParser<DisMax> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("queries", "*", |q, _, v| {
                    q.queries = parse_clauses(v)?;
                    Ok(())
                }),
                F::new("tie_breaker", "*", |q, at, v| {
                    q.tie_breaker = set_f32(at, v)?;
                    Ok(())
                }),
            ],
            &common(),
        ],
    };
    let mut q = DisMax {
        queries: Vec::new(),
        tie_breaker: 0.0,
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    if q.queries.is_empty() {
        return Err(EsError::parsing(format!(
            "[{Q}] requires 'queries' field with at least one clause"
        )));
    }
    Ok(Query::DisMax {
        queries: q.queries,
        tie_breaker: q.tie_breaker,
        boost: q.boost,
    })
}

struct ScriptQ {
    script: Option<Value>,
    boost: f32,
}

fn parse_script(body: &Map<String, Value>) -> EsResult<Query> {
    static P: ObjectParser<ScriptQ> = ObjectParser {
        name: "script",
        style: Style::Query,
        fields: &[
            &[Field::new("script", "*", |q, _, v| {
                q.script = Some(v.clone());
                Ok(())
            })],
            &common(),
        ],
    };
    let mut q = ScriptQ {
        script: None,
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    let script = q
        .script
        .ok_or_else(|| EsError::parsing("script must be provided with a [script] filter"))?;
    // Reading the script (source, params, lang) fails here as in ES, before any index is seen;
    // the program is compiled once for the request.
    let script = CompiledScript::compile(script)?;
    Ok(Query::Script {
        script,
        boost: q.boost,
    })
}

struct ScriptScore {
    query: Option<Query>,
    script: Option<Value>,
    min_score: Option<f32>,
    boost: f32,
}

fn parse_script_score(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "script_score";
    type F = Field<ScriptScore>;
    static P: ObjectParser<ScriptScore> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("query", "*", |q, _, v| {
                    q.query = Some(parse_query(v)?);
                    Ok(())
                }),
                F::new("script", "*", |q, _, v| {
                    q.script = Some(v.clone());
                    Ok(())
                }),
                F::new("min_score", "*", |q, at, v| {
                    q.min_score = Some(set_f32(at, v)?);
                    Ok(())
                }),
            ],
            &common(),
        ],
    };
    let mut q = ScriptScore {
        query: None,
        script: None,
        min_score: None,
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    let query = q
        .query
        .ok_or_else(|| EsError::parsing(format!("[{Q}] requires 'query' field")))?;
    let script = q
        .script
        .ok_or_else(|| EsError::parsing(format!("[{Q}] requires 'script' field")))?;
    let script = CompiledScript::compile(script)?;
    Ok(Query::ScriptScore {
        query: Box::new(query),
        script,
        min_score: q.min_score,
        boost: q.boost,
    })
}

struct Boosting {
    positive: Option<Query>,
    negative: Option<Query>,
    negative_boost: f32,
    boost: f32,
}

fn parse_boosting(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "boosting";
    type F = Field<Boosting>;
    static P: ObjectParser<Boosting> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("positive", "*", |q, _, v| {
                    q.positive = Some(parse_query(v)?);
                    Ok(())
                }),
                F::new("negative", "*", |q, _, v| {
                    q.negative = Some(parse_query(v)?);
                    Ok(())
                }),
                F::new("negative_boost", "*", |q, at, v| {
                    q.negative_boost = set_f32(at, v)?;
                    Ok(())
                }),
            ],
            &common(),
        ],
    };
    let mut q = Boosting {
        positive: None,
        negative: None,
        negative_boost: -1.0,
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    let positive = q
        .positive
        .ok_or_else(|| EsError::parsing(format!("[{Q}] query requires 'positive' query")))?;
    let negative = q
        .negative
        .ok_or_else(|| EsError::parsing(format!("[{Q}] query requires 'negative' query")))?;
    if q.negative_boost < 0.0 {
        return Err(EsError::parsing(format!(
            "[{Q}] query requires 'negative_boost' to be set to be a positive value'"
        )));
    }
    Ok(Query::Boosting {
        positive: Box::new(positive),
        negative: Box::new(negative),
        negative_boost: q.negative_boost,
        boost: q.boost,
    })
}

struct Nested {
    path: Option<String>,
    query: Option<Query>,
    ignore_unmapped: bool,
    score_mode: crate::nested::ScoreMode,
    inner_hits: Option<Value>,
    named: Vec<crate::named::NamedQuery>,
    boost: f32,
}

fn parse_nested(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "nested";
    type F = Field<Nested>;
    static P: ObjectParser<Nested> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("path", "*", |q, at, v| {
                    q.path = Some(set_string(at, v)?);
                    Ok(())
                }),
                F::new("query", "*", |q, _, v| {
                    let (query, named) = crate::named::within(|| parse_query(v))?;
                    q.query = Some(query);
                    q.named = crate::named::dedup(named);
                    Ok(())
                }),
                F::new("ignore_unmapped", "*", |q, at, v| {
                    q.ignore_unmapped = set_bool(at, v)?;
                    Ok(())
                }),
                F::new("score_mode", "*", |q, at, v| {
                    let m = set_string(at, v)?;
                    q.score_mode = crate::nested::ScoreMode::parse(&m).ok_or_else(|| {
                        EsError::illegal_argument(format!(
                            "No enum constant org.apache.lucene.search.join.ScoreMode.{}",
                            m.to_ascii_uppercase()
                        ))
                    })?;
                    Ok(())
                }),
                F::new("inner_hits", "*", |q, _, v| {
                    if !v.is_object() {
                        return Err(EsError::parsing(format!(
                            "[{Q}] query malformed, [inner_hits] must be an object"
                        )));
                    }
                    q.inner_hits = Some(v.clone());
                    Ok(())
                }),
            ],
            &common(),
        ],
    };
    let mut q = Nested {
        path: None,
        query: None,
        ignore_unmapped: false,
        score_mode: crate::nested::ScoreMode::Avg,
        inner_hits: None,
        named: Vec::new(),
        boost: 1.0,
    };
    P.parse_into(&mut q, body)?;
    let query = q
        .query
        .ok_or_else(|| EsError::parsing(format!("[{Q}] requires 'query' field")))?;
    let path = q
        .path
        .ok_or_else(|| EsError::parsing(format!("[{Q}] requires 'path' field")))?;
    Ok(Query::Nested {
        path,
        query: Box::new(query),
        ignore_unmapped: q.ignore_unmapped,
        score_mode: q.score_mode,
        inner_hits: q.inner_hits,
        named: q.named,
        boost: q.boost,
    })
}

fn parse_wrapper(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "wrapper";
    // `wrapper` alone takes neither `boost` nor `_name` (ES's WrapperQueryBuilder).
    static P: ObjectParser<Option<String>> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[&[Field::new("query", "*", |s, at, v| {
            *s = Some(set_string(at, v)?);
            Ok(())
        })]],
    };
    let source = P
        .parse(body)?
        .ok_or_else(|| EsError::parsing(format!("[{Q}] query text missing")))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(source.trim())
        .map_err(|e| {
            EsError::illegal_argument(format!("[{Q}] query is not base64 encoded: {e}"))
        })?;
    let json: Value = serde_json::from_slice(&bytes)
        .map_err(|e| EsError::parsing(format!("[{Q}] query malformed: {e}")))?;
    parse_query(&json)
}

/// `function_score` under construction: a single function may be given inline (its name as a
/// key, with a top-level `weight`) or several in `functions`, not both.
struct FunctionScore {
    q: FunctionScoreQuery,
    single: Option<ScoreFunction>,
    single_weight: Option<f32>,
    array_seen: bool,
}

impl Boosted for FunctionScore {
    fn boost_mut(&mut self) -> &mut f32 {
        &mut self.q.boost
    }
}

fn parse_function_score(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "function_score";
    type F = Field<FunctionScore>;
    static P: ObjectParser<FunctionScore> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[
            &[
                F::new("query", "*", |s, _, v| {
                    *s.q.query = parse_query(v)?;
                    Ok(())
                }),
                F::new("max_boost", "*", |s, at, v| {
                    s.q.max_boost = set_f32(at, v)?;
                    Ok(())
                }),
                F::new("min_score", "*", |s, at, v| {
                    s.q.min_score = Some(set_f32(at, v)?);
                    Ok(())
                }),
                F::new("score_mode", "*", |s, at, v| {
                    let m = set_string(at, v)?;
                    s.q.score_mode = match m.as_str() {
                        "multiply" => ScoreMode::Multiply,
                        "sum" => ScoreMode::Sum,
                        "avg" => ScoreMode::Avg,
                        "first" => ScoreMode::First,
                        "max" => ScoreMode::Max,
                        "min" => ScoreMode::Min,
                        _ => {
                            return Err(EsError::illegal_argument(format!(
                                "illegal score_mode [{m}]"
                            )))
                        }
                    };
                    Ok(())
                }),
                F::new("boost_mode", "*", |s, at, v| {
                    let m = set_string(at, v)?;
                    s.q.boost_mode = match m.as_str() {
                        "multiply" => BoostMode::Multiply,
                        "replace" => BoostMode::Replace,
                        "sum" => BoostMode::Sum,
                        "avg" => BoostMode::Avg,
                        "max" => BoostMode::Max,
                        "min" => BoostMode::Min,
                        _ => {
                            return Err(EsError::illegal_argument(format!(
                                "illegal boost_mode [{m}]"
                            )))
                        }
                    };
                    Ok(())
                }),
                F::new("functions", "*", |s, _, v| {
                    if s.single.is_some() {
                        return Err(EsError::parsing(format!(
                            "failed to parse [{Q}] query. already found function [{}], now encountering [functions].",
                            "single"
                        )));
                    }
                    s.array_seen = true;
                    let items = v.as_array().ok_or_else(|| {
                        EsError::parsing(format!(
                            "failed to parse [{Q}] query. [functions] must be an array"
                        ))
                    })?;
                    for item in items {
                        s.q.functions.push(parse_score_function(item)?);
                    }
                    Ok(())
                }),
                F::new("weight", "*", |s, at, v| {
                    s.single_weight = Some(set_f32(at, v)?);
                    Ok(())
                }),
            ],
            &common(),
            // Any other key names the single function.
            &[F::other("*", |s, at, v| {
                if s.array_seen {
                    return Err(EsError::parsing(format!(
                        "failed to parse [{Q}] query. already found [functions] array, now encountering [{}].",
                        at.key
                    )));
                }
                s.single = Some(ScoreFunction {
                    filter: None,
                    weight: None,
                    kind: parse_function_kind(at.key, v)?,
                });
                Ok(())
            })],
        ],
    };
    let mut s = FunctionScore {
        q: FunctionScoreQuery {
            query: Box::new(Query::MatchAll { boost: 1.0 }),
            functions: Vec::new(),
            score_mode: ScoreMode::Multiply,
            boost_mode: BoostMode::Multiply,
            max_boost: f32::MAX,
            min_score: None,
            boost: 1.0,
        },
        single: None,
        single_weight: None,
        array_seen: false,
    };
    P.parse_into(&mut s, body)?;
    let mut q = s.q;
    match (s.single, s.single_weight) {
        (Some(mut f), w) => {
            f.weight = w;
            q.functions.push(f);
        }
        (None, Some(w)) => q.functions.push(ScoreFunction {
            filter: None,
            weight: Some(w),
            kind: FunctionKind::Weight,
        }),
        (None, None) => {}
    }
    Ok(Query::FunctionScore(q))
}

/// One entry of `functions` under construction.
struct ScoreFn {
    f: ScoreFunction,
    kind_seen: bool,
}

fn parse_score_function(v: &Value) -> EsResult<ScoreFunction> {
    const Q: &str = "function_score";
    type F = Field<ScoreFn>;
    static P: ObjectParser<ScoreFn> = ObjectParser {
        name: Q,
        style: Style::Query,
        fields: &[&[
            F::new("filter", "*", |s, _, v| {
                s.f.filter = Some(parse_query(v)?);
                Ok(())
            }),
            F::new("weight", "*", |s, at, v| {
                s.f.weight = Some(set_f32(at, v)?);
                Ok(())
            }),
            // Any other key names the function.
            F::other("*", |s, at, v| {
                if s.kind_seen {
                    return Err(EsError::parsing(format!(
                        "failed to parse function_score functions. already found [{}], now encountering [{}].",
                        function_name(&s.f.kind),
                        at.key
                    )));
                }
                s.kind_seen = true;
                s.f.kind = parse_function_kind(at.key, v)?;
                Ok(())
            }),
        ]],
    };
    let obj = v.as_object().ok_or_else(|| {
        EsError::parsing(format!(
            "failed to parse [{Q}] query. malformed query, expected a [START_OBJECT]"
        ))
    })?;
    let mut s = ScoreFn {
        f: ScoreFunction {
            filter: None,
            weight: None,
            kind: FunctionKind::Weight,
        },
        kind_seen: false,
    };
    P.parse_into(&mut s, obj)?;
    if !s.kind_seen && s.f.weight.is_none() {
        return Err(EsError::parsing(format!(
            "failed to parse [{Q}] query. function has neither a score function nor a weight"
        )));
    }
    Ok(s.f)
}

fn function_name(k: &FunctionKind) -> &'static str {
    match k {
        FunctionKind::Weight => "weight",
        FunctionKind::FieldValueFactor { .. } => "field_value_factor",
        FunctionKind::RandomScore { .. } => "random_score",
        FunctionKind::ScriptScore { .. } => "script_score",
        FunctionKind::Decay {
            shape: DecayShape::Gauss,
            ..
        } => "gauss",
        FunctionKind::Decay {
            shape: DecayShape::Exp,
            ..
        } => "exp",
        FunctionKind::Decay {
            shape: DecayShape::Linear,
            ..
        } => "linear",
    }
}

/// The score functions word an unknown key without brackets: "random_score query does not
/// support [k]".
const FUNCTION_STYLE: Style = Style::Custom {
    unknown: |at, _, _| function_unsupported(at),
    wrong_token: |at, _| function_unsupported(at),
};

fn function_unsupported(at: &At<'_>) -> EsError {
    EsError::parsing(format!("{} query does not support [{}]", at.parser, at.key))
}

/// `field_value_factor` under construction.
struct FieldValueFactor {
    field: Option<String>,
    factor: f32,
    modifier: Modifier,
    missing: Option<f64>,
}

/// `gauss`, `exp` and `linear`: the field (any key not declared) and its decay.
struct Decay {
    field: Option<String>,
    origin: Option<Value>,
    scale: Option<Value>,
    offset: Option<Value>,
    decay: f64,
}

fn parse_function_kind(name: &str, v: &Value) -> EsResult<FunctionKind> {
    let obj = v.as_object();
    match name {
        "field_value_factor" => {
            const Q: &str = "field_value_factor";
            type F = Field<FieldValueFactor>;
            static P: ObjectParser<FieldValueFactor> = ObjectParser {
                name: Q,
                style: FUNCTION_STYLE,
                fields: &[&[
                    F::new("field", "*", |f, at, v| {
                        f.field = Some(set_string(at, v)?);
                        Ok(())
                    }),
                    F::new("factor", "*", |f, at, v| {
                        f.factor = set_f32(at, v)?;
                        Ok(())
                    }),
                    F::new("missing", "*", |f, at, v| {
                        f.missing = Some(set_f32(at, v)? as f64);
                        Ok(())
                    }),
                    F::new("modifier", "*", |f, at, v| {
                        let m = set_string(at, v)?;
                        f.modifier = match m.to_ascii_lowercase().as_str() {
                            "none" => Modifier::None,
                            "log" => Modifier::Log,
                            "log1p" => Modifier::Log1p,
                            "log2p" => Modifier::Log2p,
                            "ln" => Modifier::Ln,
                            "ln1p" => Modifier::Ln1p,
                            "ln2p" => Modifier::Ln2p,
                            "square" => Modifier::Square,
                            "sqrt" => Modifier::Sqrt,
                            "reciprocal" => Modifier::Reciprocal,
                            _ => {
                                return Err(EsError::illegal_argument(format!(
                                    "Illegal modifier [{m}]"
                                )))
                            }
                        };
                        Ok(())
                    }),
                ]],
            };
            let obj = obj.ok_or_else(|| EsError::parsing(format!("[{Q}] must be an object")))?;
            let mut f = FieldValueFactor {
                field: None,
                factor: 1.0,
                modifier: Modifier::None,
                missing: None,
            };
            P.parse_into(&mut f, obj)?;
            let field = f
                .field
                .ok_or_else(|| EsError::parsing(format!("[{Q}] required field 'field' missing")))?;
            Ok(FunctionKind::FieldValueFactor {
                field,
                factor: f.factor,
                modifier: f.modifier,
                missing: f.missing,
            })
        }
        "random_score" => {
            static P: ObjectParser<Option<i64>> = ObjectParser {
                name: "random_score",
                style: FUNCTION_STYLE,
                fields: &[&[
                    Field::new("seed", "*", |seed, at, v| {
                        *seed = Some(match v {
                            Value::Number(n) => n
                                .as_i64()
                                .unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i64),
                            Value::String(s) => s.parse::<i64>().unwrap_or_else(|_| {
                                s.bytes()
                                    .fold(0i64, |h, b| h.wrapping_mul(31).wrapping_add(b as i64))
                            }),
                            _ => return Err(field_value_error(at.parser, at.key)),
                        });
                        Ok(())
                    }),
                    Field::new("field", "*", ignore),
                ]],
            };
            let seed = match obj {
                Some(o) => P.parse(o)?,
                None => None,
            };
            Ok(FunctionKind::RandomScore { seed })
        }
        "gauss" | "exp" | "linear" => {
            type F = Field<Decay>;
            // Read under the function's name.
            static P: ObjectParser<Decay> = ObjectParser {
                name: "decay",
                style: Style::Query,
                fields: &[&[
                    F::new("multi_value_mode", "*", ignore),
                    // The last field object wins.
                    F::other("o", |d, at, _| {
                        d.field = Some(at.key.to_string());
                        Ok(())
                    }),
                ]],
            };
            static SPEC: ObjectParser<Decay> = ObjectParser {
                name: "decay",
                style: Style::Query,
                fields: &[&[
                    F::new("origin", "*", |d, _, v| {
                        d.origin = Some(v.clone());
                        Ok(())
                    }),
                    F::new("scale", "*", |d, _, v| {
                        d.scale = Some(v.clone());
                        Ok(())
                    }),
                    F::new("offset", "*", |d, _, v| {
                        d.offset = Some(v.clone());
                        Ok(())
                    }),
                    F::new("decay", "*", |d, at, v| {
                        d.decay = set_f32(at, v)? as f64;
                        Ok(())
                    }),
                ]],
            };
            let shape = match name {
                "gauss" => DecayShape::Gauss,
                "exp" => DecayShape::Exp,
                _ => DecayShape::Linear,
            };
            let obj = obj.ok_or_else(|| EsError::parsing(format!("[{name}] must be an object")))?;
            let mut d = Decay {
                field: None,
                origin: None,
                scale: None,
                offset: None,
                decay: 0.5,
            };
            P.parse_named(name, &mut d, obj)?;
            let field = d
                .field
                .take()
                .ok_or_else(|| EsError::parsing(format!("[{name}] requires a field")))?;
            let Some(Value::Object(spec)) = obj.get(&field) else {
                unreachable!("the field's token is an object")
            };
            SPEC.parse_named(name, &mut d, spec)?;
            let scale = d
                .scale
                .ok_or_else(|| EsError::parsing(format!("[{name}] must have a scale")))?;
            let decay = d.decay;
            if !(decay > 0.0 && decay < 1.0) {
                return Err(EsError::illegal_argument(format!(
                    "decay must be in the range [0..1] (exclusive), but was [{decay}]"
                )));
            }
            Ok(FunctionKind::Decay {
                shape,
                field,
                origin: d.origin,
                scale,
                offset: d.offset,
                decay,
            })
        }
        "script_score" => {
            static P: ObjectParser<Option<Value>> = ObjectParser {
                name: "script_score",
                style: FUNCTION_STYLE,
                fields: &[&[Field::new("script", "*", |s, _, v| {
                    *s = Some(v.clone());
                    Ok(())
                })]],
            };
            let obj = obj.ok_or_else(|| EsError::parsing("[script_score] must be an object"))?;
            let script = P
                .parse(obj)?
                .ok_or_else(|| EsError::parsing("script_score function requires a [script]"))?;
            let script = CompiledScript::compile(script)?;
            Ok(FunctionKind::ScriptScore { script })
        }
        other => Err(EsError::parsing(format!(
            "function_score query does not support [{other}]"
        ))),
    }
}

fn qs_defaults(query: String, tree: QsNode) -> QueryStringQuery {
    QueryStringQuery {
        query,
        tree,
        default_field: None,
        fields: Vec::new(),
        default_operator: Operator::Or,
        analyzer: None,
        quote_analyzer: None,
        allow_leading_wildcard: true,
        lenient: None,
        fuzziness: Fuzziness::AUTO,
        fuzzy_transpositions: true,
        fuzzy_prefix_length: 0,
        fuzzy_max_expansions: 50,
        fuzzy_rewrite: None,
        phrase_slop: 0,
        minimum_should_match: None,
        tie_breaker: None,
        kind: MultiMatchType::BestFields,
        time_zone: None,
        boost: 1.0,
    }
}

/// `query_string` or `simple_query_string` under construction: the options and the text.
struct Qs {
    q: QueryStringQuery,
    text: Option<String>,
}

impl Boosted for Qs {
    fn boost_mut(&mut self) -> &mut f32 {
        &mut self.q.boost
    }
}

/// The fields both query-string queries take.
static QS_FIELDS: &[Field<Qs>] = &[
    Field::new("query", "*", |s, at, v| {
        s.text = Some(set_string(at, v)?);
        Ok(())
    }),
    Field::new("fields", "*", |s, at, v| {
        s.q.fields = parse_fields(at.parser, v)?;
        Ok(())
    }),
    Field::new("default_operator", "*", |s, _, v| {
        s.q.default_operator = parse_operator(v)?;
        Ok(())
    }),
    Field::new("analyzer", "*", |s, at, v| {
        s.q.analyzer = Some(set_string(at, v)?);
        Ok(())
    }),
    Field::new("lenient", "*", |s, at, v| {
        s.q.lenient = Some(set_bool(at, v)?);
        Ok(())
    }),
    Field::new("fuzzy_transpositions", "*", |s, at, v| {
        s.q.fuzzy_transpositions = set_bool(at, v)?;
        Ok(())
    }),
    Field::new("minimum_should_match", "*", |s, at, v| {
        s.q.minimum_should_match = as_msm(at.parser, v)?;
        Ok(())
    }),
    Field::new("fuzzy_max_expansions", "*", |s, at, v| {
        s.q.fuzzy_max_expansions = set_u32(at, v)?;
        Ok(())
    }),
    Field::new("fuzzy_prefix_length", "*", |s, at, v| {
        s.q.fuzzy_prefix_length = set_u32(at, v)?;
        Ok(())
    }),
    Field::new("quote_field_suffix", "*", ignore),
    Field::new("analyze_wildcard", "*", ignore),
    Field::new("auto_generate_synonyms_phrase_query", "*", ignore),
];

static QUERY_STRING: ObjectParser<Qs> = ObjectParser {
    name: "query_string",
    style: Style::Query,
    fields: &[
        QS_FIELDS,
        &[
            Field::new("default_field", "*", |s, at, v| {
                s.q.default_field = Some(set_string(at, v)?);
                Ok(())
            }),
            Field::new("quote_analyzer", "*", |s, at, v| {
                s.q.quote_analyzer = Some(set_string(at, v)?);
                Ok(())
            }),
            Field::new("allow_leading_wildcard", "*", |s, at, v| {
                s.q.allow_leading_wildcard = set_bool(at, v)?;
                Ok(())
            }),
            Field::new("fuzziness", "*", |s, _, v| {
                s.q.fuzziness = parse_fuzziness(v)?;
                Ok(())
            }),
            Field::new("phrase_slop", "*", |s, at, v| {
                s.q.phrase_slop = set_u32(at, v)?;
                Ok(())
            }),
            Field::new("tie_breaker", "*", |s, at, v| {
                s.q.tie_breaker = Some(set_f32(at, v)?);
                Ok(())
            }),
            Field::new("type", "*", |s, at, v| {
                let t = set_string(at, v)?;
                s.q.kind = MultiMatchType::parse(&t).ok_or_else(|| {
                    EsError::bad_request(
                        "parse_exception",
                        format!("failed to parse [multi_match] query type [{t}]. unknown type."),
                    )
                })?;
                Ok(())
            }),
            Field::new("time_zone", "*", |s, at, v| {
                s.q.time_zone = Some(set_string(at, v)?);
                Ok(())
            }),
            Field::new("enable_position_increments", "*", ignore),
            Field::new("fuzzy_rewrite", "*", |s, at, v| {
                s.q.fuzzy_rewrite = Some(set_string(at, v)?);
                Ok(())
            }),
            Field::new("max_determinized_states", "*", ignore),
            Field::new("rewrite", "*", |_, at, v| constant_rewrite(at, v)),
            Field::new("escape", "*", ignore),
        ],
        &common(),
    ],
};

static SIMPLE_QUERY_STRING: ObjectParser<Qs> = ObjectParser {
    name: "simple_query_string",
    style: Style::Query,
    fields: &[QS_FIELDS, &[Field::new("flags", "*", ignore)], &common()],
};

fn parse_query_string(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "query_string";
    let mut s = Qs {
        q: qs_defaults(String::new(), QsNode::MatchAll { boost: 1.0 }),
        text: None,
    };
    QUERY_STRING.parse_into(&mut s, body)?;
    let Qs { mut q, text } = s;
    let text =
        text.ok_or_else(|| EsError::parsing(format!("[{Q}] must be provided with a [query]")))?;
    q.tree = query_string::parse_classic(&text, q.default_operator).map_err(|e| {
        EsError::bad_request(
            "query_shard_exception",
            format!("Failed to parse query [{text}]"),
        )
        .caused_by(EsError::bad_request(
            "parse_exception",
            format!("Cannot parse '{text}': {e}"),
        ))
    })?;
    if !q.allow_leading_wildcard && q.tree.has_leading_wildcard() {
        return Err(EsError::bad_request(
            "query_shard_exception",
            format!("Failed to parse query [{text}]"),
        )
        .caused_by(EsError::bad_request(
            "parse_exception",
            format!(
                "Cannot parse '{text}': '*' or '?' not allowed as first character in WildcardQuery"
            ),
        )));
    }
    q.query = text;
    Ok(Query::QueryString(q))
}

fn parse_simple_query_string(body: &Map<String, Value>) -> EsResult<Query> {
    const Q: &str = "simple_query_string";
    let mut s = Qs {
        q: qs_defaults(String::new(), QsNode::MatchAll { boost: 1.0 }),
        text: None,
    };
    s.q.kind = MultiMatchType::MostFields;
    SIMPLE_QUERY_STRING.parse_into(&mut s, body)?;
    let Qs { mut q, text } = s;
    let text = text.ok_or_else(|| EsError::parsing(format!("[{Q}] query text missing")))?;
    q.tree = query_string::parse_simple(&text, q.default_operator);
    q.query = text;
    Ok(Query::SimpleQueryString(q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(v: Value) -> Query {
        parse_query(&v).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    fn err(v: Value) -> EsError {
        parse_query(&v).expect_err(&v.to_string())
    }

    #[test]
    fn envelope_errors() {
        let e = err(json!({"foo": {}}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("parsing_exception", "unknown query [foo]")
        );
        let e = err(json!({"term": "x"}));
        assert_eq!(
            e.reason,
            "[term] query malformed, no start_object after query name"
        );
        assert_eq!(e.status, 400);
        let e = err(json!({"term": {"a": "b"}, "match": {"a": "b"}}));
        assert_eq!(
            e.reason,
            "[term] malformed query, expected [END_OBJECT] but found [FIELD_NAME]"
        );
        let e = err(json!({}));
        assert_eq!(e.kind, "illegal_argument_exception");
        let e = err(json!("match_all"));
        assert_eq!(
            e.reason,
            "[_na] query malformed, must start with start_object"
        );
        let e = err(json!({"span_term": {"a": "b"}}));
        assert_eq!(e.kind, "parsing_exception");
        assert!(e.reason.contains("not supported"), "{}", e.reason);
    }

    #[test]
    fn match_all_and_none() {
        assert_eq!(p(json!({"match_all": {}})), Query::MatchAll { boost: 1.0 });
        assert_eq!(
            p(json!({"match_all": {"boost": 2}})),
            Query::MatchAll { boost: 2.0 }
        );
        assert_eq!(p(json!({"match_none": {}})), Query::MatchNone);
        assert_eq!(
            err(json!({"match_all": {"boost": -1}})).reason,
            "negative [boost] are not allowed."
        );
        assert_eq!(
            err(json!({"match_all": {"x": 1}})).reason,
            "[match_all] query does not support [x]"
        );
    }

    #[test]
    fn term_forms() {
        let Query::Term(t) = p(json!({"term": {"user": "kimchy"}})) else {
            panic!()
        };
        assert_eq!(
            (t.field.as_str(), &t.value, t.boost),
            ("user", &json!("kimchy"), 1.0)
        );
        let Query::Term(t) =
            p(json!({"term": {"age": {"value": 5, "boost": 2.0, "case_insensitive": true}}}))
        else {
            panic!()
        };
        assert_eq!(
            (t.value, t.boost, t.case_insensitive),
            (json!(5), 2.0, true)
        );
        assert_eq!(
            err(json!({"term": {"a": "x", "b": "y"}})).reason,
            "[term] query doesn't support multiple fields, found [a] and [b]"
        );
        assert_eq!(
            err(json!({"term": {"a": {"value": "x", "foo": 1}}})).reason,
            "[term] query does not support [foo]"
        );
        assert_eq!(
            err(json!({"term": {"a": ["x"]}})).reason,
            "[term] query does not support array of values"
        );
        assert_eq!(
            err(json!({"term": {"a": {"boost": 1}}})).reason,
            "value cannot be null"
        );
    }

    #[test]
    fn terms_forms() {
        let Query::Terms(t) = p(json!({"terms": {"tags": ["a", 1, true], "boost": 3}})) else {
            panic!()
        };
        assert_eq!(t.values, vec![json!("a"), json!(1), json!(true)]);
        assert_eq!(t.boost, 3.0);
        let Query::Terms(t) = p(json!({"terms": {"tags": {"index": "i", "id": "1", "path": "p"}}}))
        else {
            panic!()
        };
        assert_eq!(t.lookup.unwrap().path, "p");
        assert_eq!(
            err(json!({"terms": {"a": ["x"], "b": ["y"]}})).reason,
            "[terms] query does not support multiple fields"
        );
        assert_eq!(
            err(json!({"terms": {"a": "x"}})).reason,
            "[terms] query does not support [a]"
        );
        assert_eq!(
            err(json!({"terms": {"a": [null]}})).reason,
            "No value specified for terms query"
        );
        assert!(err(json!({"terms": {}}))
            .reason
            .starts_with("[terms] query requires a field name"));
    }

    #[test]
    fn range_forms() {
        let Query::Range(r) = p(json!({"range": {"age": {"gte": 10, "lt": 20, "boost": 2}}}))
        else {
            panic!()
        };
        assert_eq!(
            (r.from, r.to, r.include_lower, r.include_upper),
            (Some(json!(10)), Some(json!(20)), true, false)
        );
        let Query::Range(r) =
            p(json!({"range": {"age": {"from": 1, "to": null, "include_lower": false}}}))
        else {
            panic!()
        };
        assert_eq!(
            (r.from, r.to, r.include_lower, r.include_upper),
            (Some(json!(1)), None, false, true)
        );
        let Query::Range(r) =
            p(json!({"range": {"d": {"gt": "now-1d/d", "format": "yyyy", "time_zone": "+01:00"}}}))
        else {
            panic!()
        };
        assert_eq!(r.format.as_deref(), Some("yyyy"));
        assert_eq!(r.time_zone.as_deref(), Some("+01:00"));
        assert_eq!(
            err(json!({"range": {"a": {"gte": 1, "foo": 2}}})).reason,
            "[range] query does not support [foo]"
        );
        assert_eq!(
            err(json!({"range": {"a": 5}})).reason,
            "[range] query does not support [a]"
        );
        assert!(err(json!({"range": {"a": {}, "b": {}}}))
            .reason
            .contains("multiple fields"));
    }

    #[test]
    fn match_forms() {
        let Query::Match(m) = p(json!({"match": {"title": "quick fox"}})) else {
            panic!()
        };
        assert_eq!((m.operator, m.query), (Operator::Or, json!("quick fox")));
        let Query::Match(m) = p(
            json!({"match": {"title": {"query": 12, "operator": "AND", "minimum_should_match": 2,
            "fuzziness": "AUTO", "zero_terms_query": "all", "lenient": true}}}),
        ) else {
            panic!()
        };
        assert_eq!(m.operator, Operator::And);
        assert_eq!(m.minimum_should_match.as_deref(), Some("2"));
        assert_eq!(m.fuzziness, Some(Fuzziness::AUTO));
        assert_eq!(m.zero_terms_query, ZeroTerms::All);
        assert!(m.lenient);
        assert_eq!(
            err(json!({"match": {"t": {"query": "x", "type": "phrase"}}})).reason,
            "[match] query does not support [type]"
        );
        assert_eq!(
            err(json!({"match": {"t": {"query": "x", "zero_terms_query": "some"}}})).reason,
            "Unsupported zero_terms_query value [some]"
        );
        assert_eq!(
            err(json!({"match": {"t": {"query": "x", "operator": "xor"}}})).reason,
            "operator needs to be either [OR, AND], but not [xor]"
        );
        assert_eq!(
            err(json!({"match": {"t": {"operator": "or"}}})).kind,
            "illegal_argument_exception"
        );
        assert!(matches!(
            p(json!({"match_bool_prefix": {"t": "qu"}})),
            Query::MatchBoolPrefix(_)
        ));
    }

    #[test]
    fn fuzziness_forms() {
        assert_eq!(parse_fuzziness(&json!("AUTO")).unwrap(), Fuzziness::AUTO);
        assert_eq!(
            parse_fuzziness(&json!("auto:2,5")).unwrap(),
            Fuzziness::Auto { low: 2, high: 5 }
        );
        assert_eq!(parse_fuzziness(&json!(1)).unwrap(), Fuzziness::Edits(1));
        assert_eq!(parse_fuzziness(&json!("2")).unwrap(), Fuzziness::Edits(2));
        assert_eq!(parse_fuzziness(&json!(5)).unwrap(), Fuzziness::Edits(2));
        assert!(parse_fuzziness(&json!("lots")).is_err());
        // A multi-byte character across byte 5 once sliced mid-character.
        assert!(parse_fuzziness(&json!("ꨡ🕴<H")).is_err());
        assert_eq!(Fuzziness::AUTO.distance("ab"), 0);
        assert_eq!(Fuzziness::AUTO.distance("abc"), 1);
        assert_eq!(Fuzziness::AUTO.distance("abcdef"), 2);
        assert_eq!(Fuzziness::AUTO.distance("江苏千"), 1);
    }

    #[test]
    fn phrase_forms() {
        let Query::MatchPhrase(m) = p(json!({"match_phrase": {"t": {"query": "a b", "slop": 2}}}))
        else {
            panic!()
        };
        assert_eq!(m.slop, 2);
        let Query::MatchPhrasePrefix(m) =
            p(json!({"match_phrase_prefix": {"t": {"query": "a b", "max_expansions": 5}}}))
        else {
            panic!()
        };
        assert_eq!(m.max_expansions, 5);
        assert_eq!(
            err(json!({"match_phrase": {"t": {"query": "a", "max_expansions": 5}}})).reason,
            "[match_phrase] query does not support [max_expansions]"
        );
    }

    #[test]
    fn multi_match_forms() {
        let Query::MultiMatch(m) = p(
            json!({"multi_match": {"query": "x", "fields": ["title^2", "body", "user.*"],
            "type": "most_fields", "tie_breaker": 0.3}}),
        ) else {
            panic!()
        };
        assert_eq!(
            m.fields[0],
            FieldBoost {
                pattern: "title".into(),
                boost: 2.0
            }
        );
        assert_eq!(m.fields[2].pattern, "user.*");
        assert_eq!(m.kind, MultiMatchType::MostFields);
        assert_eq!(m.tie_breaker, Some(0.3));
        let e = err(json!({"multi_match": {"query": "x", "type": "nope"}}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            (
                "parse_exception",
                "failed to parse [multi_match] query type [nope]. unknown type."
            )
        );
        assert_eq!(
            err(json!({"multi_match": {"query": "x", "type": "cross_fields", "fuzziness": 1}}))
                .reason,
            "Fuzziness not allowed for type [cross_fields]"
        );
        assert!(matches!(
            p(json!({"combined_fields": {"query": "x", "fields": ["a", "b"]}})),
            Query::MultiMatch(MultiMatchQuery {
                kind: MultiMatchType::CrossFields,
                ..
            })
        ));
    }

    #[test]
    fn declared_common_fields_and_aliases() {
        // `boost` and `_name`, declared once, apply to every query
        for q in [
            json!({"match_none": {"boost": 2, "_name": "n"}}),
            json!({"ids": {"values": ["1"], "_name": "n"}}),
            json!({"term": {"f": {"value": "v", "_name": "n", "boost": 1.5}}}),
            json!({"prefix": {"f": {"value": "v", "_name": null}}}),
        ] {
            p(q);
        }
        assert_eq!(
            p(json!({"match_all": {"boost": 3}})),
            Query::MatchAll { boost: 3.0 }
        );
        // a name is a value, not an object
        let e = err(json!({"bool": {"_name": {"a": 1}}}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("parsing_exception", "[bool] query does not support [_name]")
        );
        // boost is checked for match_none too, as ES does
        assert_eq!(
            err(json!({"match_none": {"boost": "x"}})).reason,
            "[match_none] failed to parse field [boost]"
        );
        // the deprecated name of must_not
        let Query::Bool(b) = p(json!({"bool": {"mustNot": {"match_all": {}}}})) else {
            panic!()
        };
        assert_eq!(b.must_not.len(), 1);
        // a field declared for one query only
        assert_eq!(
            err(json!({"prefix": {"f": {"value": "v", "flags": "ALL"}}})).reason,
            "[prefix] query does not support [flags]"
        );
        assert_eq!(
            err(json!({"match_phrase": {"f": {"query": "v", "max_expansions": 3}}})).reason,
            "[match_phrase] query does not support [max_expansions]"
        );
        // a query shared by two names words its errors under the name used
        assert_eq!(
            err(json!({"match_bool_prefix": {"f": {"query": "v", "prefix_length": "x"}}})).reason,
            "[match_bool_prefix] failed to parse field [prefix_length]"
        );
        // field-keyed queries: any key not declared is the field
        assert_eq!(
            err(json!({"terms": {"a": ["x"], "boost": 2, "b": ["y"]}})).reason,
            "[terms] query does not support multiple fields"
        );
        assert_eq!(
            err(json!({"terms": {"a": "x"}})).reason,
            "[terms] query does not support [a]"
        );
        p(json!({"geo_bounding_box": {"p": {"topLeft": [0, 1], "bottom_right": [1, 0]}}}));
        assert_eq!(
            err(json!({"geo_bounding_box": {"p": {"top_left": [0, 1], "nope": 1}}})).reason,
            "failed to parse bounding box. unexpected field [nope]"
        );
        assert_eq!(
            err(json!({"function_score": {"gauss": {"f": {"scale": 1, "x": 1}}}})).reason,
            "[gauss] query does not support [x]"
        );
        assert_eq!(
            err(json!({"function_score": {"random_score": {"x": 1}}})).reason,
            "random_score query does not support [x]"
        );
        // `wrapper` takes no boost
        assert_eq!(
            err(json!({"wrapper": {"query": "e30=", "boost": 1}})).reason,
            "[wrapper] query does not support [boost]"
        );
    }

    #[test]
    fn bool_forms() {
        let Query::Bool(b) = p(json!({"bool": {
            "must": {"match_all": {}},
            "filter": [{"term": {"a": 1}}, {"term": {"b": 2}}],
            "should": [],
            "must_not": {"exists": {"field": "c"}},
            "minimum_should_match": "75%",
            "boost": 2}}))
        else {
            panic!()
        };
        assert_eq!(
            (
                b.must.len(),
                b.filter.len(),
                b.should.len(),
                b.must_not.len()
            ),
            (1, 2, 0, 1)
        );
        assert_eq!(b.minimum_should_match.as_deref(), Some("75%"));
        assert_eq!(
            err(json!({"bool": {"shoud": []}})).reason,
            "[bool] query does not support [shoud]"
        );
        assert_eq!(
            err(json!({"bool": {"must": [{"nope": {}}]}})).reason,
            "unknown query [nope]"
        );
    }

    #[test]
    fn ids_exists_patterns_fuzzy() {
        assert_eq!(
            p(json!({"ids": {"values": ["1", 2]}})),
            Query::Ids {
                values: vec!["1".into(), "2".into()],
                boost: 1.0
            }
        );
        assert_eq!(
            p(json!({"exists": {"field": "a"}})),
            Query::Exists {
                field: "a".into(),
                boost: 1.0
            }
        );
        assert_eq!(
            err(json!({"exists": {}})).reason,
            "[exists] must be provided with a [field]"
        );
        let Query::Prefix(q) =
            p(json!({"prefix": {"user": {"value": "ki", "case_insensitive": true}}}))
        else {
            panic!()
        };
        assert_eq!((q.value.as_str(), q.case_insensitive), ("ki", true));
        let Query::Wildcard(q) = p(json!({"wildcard": {"user": {"wildcard": "ki*y"}}})) else {
            panic!()
        };
        assert_eq!(q.value, "ki*y");
        let e = err(json!({"regexp": {"user": {"value": "a", "flags": "ALL|NOPE"}}}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("illegal_argument_exception", "Unknown regexp flag [NOPE]")
        );
        let e = err(json!({"regexp": {"user": {"value": "a", "max_determinized_states": "x"}}}));
        assert_eq!(e.status, 400);
        p(
            json!({"regexp": {"user": {"value": "a", "flags": "intersection|COMPLEMENT", "max_determinized_states": 100}}}),
        );
        let Query::Regexp(q) = p(json!({"regexp": {"user": {"value": "k.*y", "flags": "ALL"}}}))
        else {
            panic!()
        };
        assert_eq!(q.value, "k.*y");
        assert_eq!(
            err(json!({"prefix": {"user": {"flags": "ALL", "value": "a"}}})).reason,
            "[prefix] query does not support [flags]"
        );
        let Query::Fuzzy(q) = p(json!({"fuzzy": {"user": {"value": "ki", "fuzziness": 2}}})) else {
            panic!()
        };
        assert_eq!(q.fuzziness, Fuzziness::Edits(2));
        let Query::Fuzzy(q) = p(json!({"fuzzy": {"user": "kimchy"}})) else {
            panic!()
        };
        assert_eq!(q.fuzziness, Fuzziness::AUTO);
    }

    #[test]
    fn compound_forms() {
        assert!(
            matches!(p(json!({"constant_score": {"filter": {"match_all": {}}, "boost": 3}})), Query::ConstantScore { boost, .. } if boost == 3.0)
        );
        assert_eq!(
            err(json!({"constant_score": {}})).reason,
            "[constant_score] requires a 'filter' element"
        );
        assert!(
            matches!(p(json!({"dis_max": {"queries": [{"match_all": {}}], "tie_breaker": 0.7}})), Query::DisMax { tie_breaker, .. } if (tie_breaker - 0.7).abs() < 1e-6)
        );
        assert_eq!(
            err(json!({"dis_max": {"queries": []}})).reason,
            "[dis_max] requires 'queries' field with at least one clause"
        );
        assert!(matches!(
            p(
                json!({"boosting": {"positive": {"match_all": {}}, "negative": {"match_none": {}}, "negative_boost": 0.5}})
            ),
            Query::Boosting { .. }
        ));
        assert_eq!(
            err(
                json!({"boosting": {"positive": {"match_all": {}}, "negative": {"match_none": {}}}})
            )
            .reason,
            "[boosting] query requires 'negative_boost' to be set to be a positive value'"
        );
        assert_eq!(
            err(json!({"boosting": {"negative": {"match_all": {}}}})).reason,
            "[boosting] query requires 'positive' query"
        );
        assert!(matches!(
            p(json!({"nested": {"path": "a", "query": {"match_all": {}}, "score_mode": "max"}})),
            Query::Nested { .. }
        ));
        assert_eq!(
            err(json!({"nested": {"query": {"match_all": {}}}})).reason,
            "[nested] requires 'path' field"
        );
        assert_eq!(
            err(json!({"nested": {"path": "a"}})).reason,
            "[nested] requires 'query' field"
        );
    }

    #[test]
    fn query_string_forms() {
        let Query::QueryString(q) = p(
            json!({"query_string": {"query": "title:quick AND fox", "default_operator": "and",
            "fields": ["a^2"], "phrase_slop": 1}}),
        ) else {
            panic!()
        };
        assert_eq!(q.default_operator, Operator::And);
        assert_eq!(q.fields[0].boost, 2.0);
        assert!(matches!(q.tree, QsNode::Bool { .. }));
        assert_eq!(
            err(json!({"query_string": {}})).reason,
            "[query_string] must be provided with a [query]"
        );
        let e = err(json!({"query_string": {"query": "foo AND"}}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("query_shard_exception", "Failed to parse query [foo AND]")
        );
        let e = err(json!({"query_string": {"query": "*foo", "allow_leading_wildcard": false}}));
        assert_eq!(e.kind, "query_shard_exception");
        let Query::SimpleQueryString(q) =
            p(json!({"simple_query_string": {"query": "a +b", "flags": "ALL"}}))
        else {
            panic!()
        };
        assert_eq!(q.query, "a +b");
        assert_eq!(
            err(json!({"simple_query_string": {}})).reason,
            "[simple_query_string] query text missing"
        );
    }

    #[test]
    fn function_score_forms() {
        let Query::FunctionScore(f) = p(
            json!({"function_score": {"query": {"match_all": {}}, "weight": 2,
            "boost_mode": "sum", "score_mode": "max", "max_boost": 10, "min_score": 1}}),
        ) else {
            panic!()
        };
        assert_eq!(
            f.functions,
            vec![ScoreFunction {
                filter: None,
                weight: Some(2.0),
                kind: FunctionKind::Weight
            }]
        );
        assert_eq!(
            (f.boost_mode, f.score_mode, f.max_boost, f.min_score),
            (BoostMode::Sum, ScoreMode::Max, 10.0, Some(1.0))
        );
        let Query::FunctionScore(f) = p(json!({"function_score": {"functions": [
            {"filter": {"term": {"a": "b"}}, "weight": 3},
            {"field_value_factor": {"field": "likes", "modifier": "log1p", "missing": 1}},
            {"gauss": {"date": {"origin": "now", "scale": "10d"}}, "weight": 2},
            {"random_score": {"seed": 7, "field": "_seq_no"}}]}}))
        else {
            panic!()
        };
        assert_eq!(f.functions.len(), 4);
        assert!(
            matches!(f.functions[1].kind, FunctionKind::FieldValueFactor { modifier: Modifier::Log1p, missing: Some(m), .. } if m == 1.0)
        );
        assert!(
            matches!(&f.functions[2].kind, FunctionKind::Decay { shape: DecayShape::Gauss, decay, .. } if *decay == 0.5)
        );
        assert_eq!(
            f.functions[3].kind,
            FunctionKind::RandomScore { seed: Some(7) }
        );
        assert!(matches!(
            &p(json!({"function_score": {"script_score": {"script": "1"}}})),
            Query::FunctionScore(f) if matches!(f.functions[0].kind, FunctionKind::ScriptScore { .. })
        ));
        assert!(
            err(json!({"function_score": {"script_score": {"script": "1 +"}}}))
                .reason
                .contains("compile error")
        );
        assert_eq!(
            err(json!({"function_score": {"boost_mode": "nope"}})).reason,
            "illegal boost_mode [nope]"
        );
        assert_eq!(
            err(json!({"function_score": {"functions": [{"filter": {"match_all": {}}}]}})).kind,
            "parsing_exception"
        );
        assert_eq!(
            err(json!({"function_score": {"gauss": {"d": {"origin": 1, "scale": 2, "decay": 2}}}}))
                .kind,
            "illegal_argument_exception"
        );
    }

    #[test]
    fn wrapper_decodes() {
        let enc = base64::engine::general_purpose::STANDARD.encode(br#"{"term":{"a":"b"}}"#);
        assert!(matches!(
            p(json!({"wrapper": {"query": enc}})),
            Query::Term(_)
        ));
    }
}

/// Generative tests: random and mutated JSON into `parse_query` gives Ok or a 4xx, never a
/// panic or a 5xx.
#[cfg(test)]
mod proptests {
    use super::parse_query;
    use crate::arb_json::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn check(v: &Value) -> Result<(), TestCaseError> {
        client_error_or_ok(
            parse_query(v)
                .err()
                .map(|e| (e.status, format!("{} {} for {v}", e.kind, e.reason))),
        )
    }

    fn seeds() -> Vec<Value> {
        vec![
            json!({"bool": {"must": [{"term": {"k": "a"}}], "filter": {"range": {"n": {"gte": 1, "lt": 5}}},
                            "should": [{"match": {"t": {"query": "x y", "operator": "and"}}}],
                            "minimum_should_match": 1}}),
            json!({"function_score": {"query": {"match_all": {}}, "functions": [{"weight": 2}], "score_mode": "sum"}}),
            json!({"query_string": {"query": "t:(a OR b) AND n:[1 TO 5]", "default_field": "t"}}),
            json!({"multi_match": {"query": "a", "fields": ["t^2", "k"], "type": "best_fields"}}),
            json!({"dis_max": {"queries": [{"prefix": {"k": "a"}}, {"wildcard": {"k": "a*b"}}], "tie_breaker": 0.3}}),
            json!({"regexp": {"k": {"value": "a.*b", "flags": "ALL"}}}),
            json!({"fuzzy": {"k": {"value": "abc", "fuzziness": "AUTO"}}}),
            json!({"terms": {"k": ["a", "b"], "boost": 2}}),
            json!({"script": {"script": {"source": "doc['n'].value > params.x", "params": {"x": 1}}}}),
            json!({"constant_score": {"filter": {"exists": {"field": "n"}}, "boost": 1.5}}),
        ]
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn random_json(v in json()) {
            check(&v)?;
        }

        #[test]
        fn random_named_query(v in named(json())) {
            check(&v)?;
        }

        #[test]
        fn random_field_query(name in proptest::sample::select(WORDS), field in word(), body in json()) {
            check(&json!({name: {field: body}}))?;
        }

        #[test]
        fn grafted_seed(seed in proptest::sample::select(seeds()), pick in any::<usize>(), with in json()) {
            check(&graft(&seed, pick, with))?;
        }

        #[test]
        fn byte_mutated_seed(seed in proptest::sample::select(seeds()), edits in edits()) {
            let bytes = mutate_bytes(seed.to_string().as_bytes(), &edits);
            if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                check(&v)?;
            }
        }
    }
}

//! [`Query`] → tantivy query, against one index's mapping.
//!
//! - Every leaf resolves its field through the mapping: unmapped fields match nothing (as in
//!   ES); `_id` and `_routing` are raw strings; `index: false` fields with doc values are
//!   searched through their fast column where tantivy can (exact values and ranges).
//! - Scoring follows ES: `term`/`match`/phrase leaves score with BM25 (scaled by 1/(1+k1),
//!   because tantivy keeps the (k1+1) numerator that Lucene dropped, so scores come out on
//!   Lucene's scale); term-level queries on non-text fields, `terms`, `range`, `exists`,
//!   `ids`, `prefix`, `wildcard` and `regexp` score a constant `boost`.
//! - Filter context (`bool.filter`, `must_not`, `constant_score`) plans with scoring off:
//!   cheaper postings (no frequencies) and a zero score contribution.

use super::boosting::BoostingQuery;
use super::function_score::{
    Compiled, FunctionScoreQuery as FunctionScoreQueryImpl, NumericField, PlannedFunction,
};
use super::msm::min_should_match;
use super::parse::{
    BoolQuery, FieldBoost, FunctionKind, FunctionScoreQuery, FuzzyQuery, MatchQuery,
    MultiMatchQuery, MultiMatchType, Operator, PatternQuery, PhraseQuery, Query, QueryStringQuery,
    RangeQuery, TermQuery, TermsQuery, ZeroTerms,
};
use super::patterns::{
    literal_regex, lucene_to_regex, wildcard_literal, wildcard_prefix, wildcard_to_regex,
};
use super::query_string::{Occur, QsNode, QsTerm};
use super::values::{self, scalar_string, FloatBound};
use super::QueryContext;
use crate::fuzzy::Rewrite;
use crate::points::PointRangeQuery;
use lode_analysis::AnalysisError;
use lode_dates::{parse_date_math, parse_time_value, DateFormat, Tz};
use lode_engine::mapping::{FieldDef, SaytRole, Storage, SAYT_INDEX_PREFIX};
use lode_engine::{EsError, EsResult};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::Ipv6Addr;
use std::ops::Bound;
use tantivy::columnar::MonotonicallyMappableToU64;
use tantivy::query::{
    self as tq, AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery,
    EmptyQuery, FastFieldRangeQuery, InvertedIndexRangeQuery, PhrasePrefixQuery,
    PhraseQuery as TPhraseQuery, RangeQuery as TRangeQuery, RegexQuery, TermQuery as TTermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

type Q = Box<dyn tq::Query>;

/// Plans `q` in query (scoring) context.
pub fn build_query(q: &Query, ctx: &QueryContext) -> EsResult<Box<dyn tq::Query>> {
    Planner::new(ctx).build(q, true)
}

/// The DSL leaves a `query_string` or `simple_query_string` stands for on this index: per
/// clause that is not excluded (`-`, `NOT`) and per field it expands to, the `match`,
/// `match_phrase`, `prefix`, `wildcard`, `regexp` or `fuzzy` query it plans as. Highlighting
/// reads what each leaf looks for (every term a wildcard expands to, as ES's highlighters).
/// Empty for any other query.
pub fn query_string_leaves(q: &Query, ctx: &QueryContext) -> Vec<Query> {
    let qs = match q {
        Query::QueryString(qs) | Query::SimpleQueryString(qs) => qs,
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    let defaults = qs_default_fields(qs, ctx);
    Planner::new(ctx).qs_leaves(&qs.tree, None, qs, &defaults, &mut out);
    out
}

/// A query string's default fields: `fields`, else `default_field`, else the index's
/// `index.query.default_field`.
fn qs_default_fields(qs: &QueryStringQuery, ctx: &QueryContext) -> Vec<FieldBoost> {
    if !qs.fields.is_empty() {
        qs.fields.clone()
    } else if let Some(df) = &qs.default_field {
        vec![FieldBoost::parse(df)]
    } else {
        index_default_fields(ctx)
    }
}

/// `index.query.default_field` (ES's `SearchExecutionContext#defaultFields`, boosts
/// allowed as in `fields`): every field (`*`) unless set.
fn index_default_fields(ctx: &QueryContext) -> Vec<FieldBoost> {
    if ctx.default_fields.is_empty() {
        return vec![FieldBoost {
            pattern: "*".to_string(),
            boost: 1.0,
        }];
    }
    ctx.default_fields
        .iter()
        .map(|f| FieldBoost::parse(f))
        .collect()
}

/// Plans a top-level `nested` query's inner `query` on the nested documents of `path` (for
/// its `inner_hits`), scored. `None` when the index has no nested documents.
pub fn build_nested_children(
    path: &str,
    query: &Query,
    ctx: &QueryContext,
) -> EsResult<Option<Box<dyn tq::Query>>> {
    match ctx.meta.nested {
        Some(field) => Planner::new(ctx)
            .nested_children(path, query, true, field)
            .map(Some),
        None => Ok(None),
    }
}

/// Plans `q` in filter context (`post_filter`, filter aggregations, counting): same
/// matches, constant scores, cheaper postings.
pub fn build_filter(q: &Query, ctx: &QueryContext) -> EsResult<Box<dyn tq::Query>> {
    Planner::new(ctx).build(q, false)
}

/// Plans `q` in query context for a profiled search: every DSL node of the plan is a
/// [`crate::profile::ProfiledQuery`]; the returned node is the root of their tree.
pub fn build_query_profiled(
    q: &Query,
    ctx: &QueryContext,
) -> EsResult<(
    Box<dyn tq::Query>,
    std::sync::Arc<crate::profile::ProfileNode>,
)> {
    let mut planner = Planner::new(ctx);
    planner.profile = Some(Default::default());
    let built = planner.build(q, true)?;
    let node = built
        .downcast_ref::<crate::profile::ProfiledQuery>()
        .map(|p| p.node.clone())
        .ok_or_else(|| lode_engine::EsError::internal("profiled plan without a root node"))?;
    Ok((built, node))
}

/// The field a leaf query names.
fn leaf_field(q: &Query) -> Option<&str> {
    Some(match q {
        Query::Term(t) => &t.field,
        Query::Terms(t) => &t.field,
        Query::Match(m) | Query::MatchBoolPrefix(m) => &m.field,
        Query::Exists { field, .. } => field,
        Query::Range(r) => &r.field,
        Query::Prefix(p) | Query::Wildcard(p) | Query::Regexp(p) => &p.field,
        Query::Fuzzy(f) => &f.field,
        Query::MatchPhrase(p) | Query::MatchPhrasePrefix(p) => &p.field,
        _ => return None,
    })
}

/// A fuzzy term's options, from a `fuzzy` query or a full-text query's `fuzziness`.
struct FuzzyOptions<'a> {
    distance: u8,
    prefix_length: u32,
    max_expansions: u32,
    transpositions: bool,
    rewrite: Option<&'a str>,
}

impl<'a> FuzzyOptions<'a> {
    /// A `match` term's, when the `match` has `fuzziness` (ES builds a fuzzy query for every
    /// term then, even one of no edits).
    fn of_match(m: &'a MatchQuery, token: &str) -> Option<FuzzyOptions<'a>> {
        Some(FuzzyOptions {
            distance: m.fuzziness?.distance(token),
            prefix_length: m.prefix_length,
            max_expansions: m.max_expansions,
            transpositions: m.fuzzy_transpositions,
            rewrite: m.fuzzy_rewrite.as_deref(),
        })
    }

    fn of_multi_match(m: &'a MultiMatchQuery, token: &str) -> Option<FuzzyOptions<'a>> {
        Some(FuzzyOptions {
            distance: m.fuzziness?.distance(token),
            prefix_length: m.prefix_length,
            max_expansions: m.max_expansions,
            transpositions: m.fuzzy_transpositions,
            rewrite: m.fuzzy_rewrite.as_deref(),
        })
    }
}

// ----------------------------------------------------------------------------------------------
// Small constructors

fn none() -> Q {
    Box::new(EmptyQuery)
}

fn all() -> Q {
    Box::new(AllQuery)
}

fn boosted(q: Q, boost: f32) -> Q {
    if boost == 1.0 {
        q
    } else {
        Box::new(BoostQuery::new(q, boost))
    }
}

/// A constant `boost` score when scoring, the bare matcher otherwise.
fn constant(q: Q, boost: f32, score: bool) -> Q {
    if score {
        Box::new(ConstScoreQuery::new(q, boost))
    } else {
        q
    }
}

fn bm25(q: Q, boost: f32, score: bool) -> Q {
    // tantivy's BM25 keeps the (k1 + 1) factor, as ES's default LegacyBM25Similarity does.
    if score && boost != 1.0 {
        Box::new(BoostQuery::new(q, boost))
    } else {
        q
    }
}

/// What a term query reads: frequencies when it scores. tantivy gives a field indexed
/// without them (a keyword's default `index_options: docs`) tf = 1, as Lucene does, so the
/// frequencies of a keyword with `freqs` count and the others score as before.
fn scored(score: bool) -> IndexRecordOption {
    if score {
        IndexRecordOption::WithFreqs
    } else {
        IndexRecordOption::Basic
    }
}

fn term_query(term: Term, option: IndexRecordOption) -> Q {
    Box::new(TTermQuery::new(term, option))
}

/// One analyzed term's clause: BM25 when scoring, or 1 on a field that scores constantly
/// (ES's `match_only_text` and `wildcard` wrap each term query in `ConstantScoreQuery`).
fn term_clause(term: Term, constant_score: bool, score: bool) -> Q {
    if !score {
        term_query(term, IndexRecordOption::Basic)
    } else if constant_score {
        constant(term_query(term, IndexRecordOption::Basic), 1.0, true)
    } else {
        bm25(term_query(term, IndexRecordOption::WithFreqs), 1.0, true)
    }
}

/// Matches any of `terms` (all on one field): a term query for one, a term set otherwise.
fn term_set(mut terms: Vec<Term>) -> Q {
    match terms.len() {
        0 => none(),
        1 => term_query(terms.pop().expect("one term"), IndexRecordOption::Basic),
        _ => Box::new(crate::term_set::TermSetLookup::new(terms)),
    }
}

fn union(mut queries: Vec<Q>) -> Q {
    match queries.len() {
        0 => none(),
        1 => queries.pop().expect("one query"),
        _ => Box::new(BooleanQuery::with_minimum_required_clauses(
            queries
                .into_iter()
                .map(|q| (tq::Occur::Should, q))
                .collect(),
            1,
        )),
    }
}

fn sum(queries: Vec<Q>) -> Q {
    union(queries)
}

fn dis_max(mut queries: Vec<Q>, tie_breaker: f32, score: bool) -> Q {
    if queries.len() <= 1 {
        return queries.pop().unwrap_or_else(none);
    }
    if !score {
        return union(queries);
    }
    Box::new(DisjunctionMaxQuery::with_tie_breaker(queries, tie_breaker))
}

fn range_inclusive(lo: Term, hi: Term) -> Q {
    Box::new(TRangeQuery::new(Bound::Included(lo), Bound::Included(hi)))
}

/// The smallest byte string greater than every string starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// A keyword searched through its doc values alone: the values of its column within
/// `distance` edits of `term` sharing its first `prefix` characters (ES's
/// `StringScriptFieldFuzzyQuery`).
fn column_fuzzy(def: &FieldDef, term: &str, distance: u8, prefix: u32, transpositions: bool) -> Q {
    let matcher = crate::column_terms::ValueMatcher::Fuzzy {
        term: term.chars().collect(),
        distance,
        prefix: prefix as usize,
        transpositions,
    };
    Box::new(crate::column_terms::ColumnTermsQuery::new(
        &def.path, matcher,
    ))
}

/// `index.max_regex_length` (ES's `Setting.intSetting`, default 1000), in UTF-16 units as
/// Java's `String#length`.
fn check_regex_length(regex: &str, max: usize) -> EsResult<()> {
    let len = regex.encode_utf16().count();
    if len > max {
        return Err(EsError::illegal_argument(format!(
            "The length of regex [{len}] used in the Regexp Query request has exceeded the allowed maximum of \
             [{max}]. This maximum can be set by changing the [index.max_regex_length] index level \
             setting."
        )));
    }
    Ok(())
}

/// A `query_shard_exception` as ES raises it directly.
fn shard_exception(reason: impl Into<String>) -> EsError {
    EsError::bad_request("query_shard_exception", reason)
}

/// A conversion failure, which ES reports as `failed to create query: ...`.
fn shard_error(reason: impl std::fmt::Display) -> EsError {
    EsError::bad_request(
        "query_shard_exception",
        format!("failed to create query: {reason}"),
    )
}

/// ES's `TextFieldType#checkForPositions` (an `IllegalStateException`), raised while the
/// shard builds the query and so wrapped as `failed to create query`.
fn without_positions(path: &str) -> EsError {
    let why = format!("field:[{path}] was indexed without position data; cannot run PhraseQuery");
    shard_error(&why).caused_by(EsError::new(500, "illegal_state_exception", why))
}

fn analysis_error(e: AnalysisError) -> EsError {
    EsError::new(400, e.kind, e.reason)
}

// ----------------------------------------------------------------------------------------------

/// Where a query's field lives.
enum Target<'a> {
    Field(Field, &'a FieldDef),
    /// `_id`, `_routing`: raw indexed strings.
    Meta(Field),
    Missing,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum MatchKind {
    Boolean,
    BoolPrefix,
}

impl MatchKind {
    fn name(self) -> &'static str {
        match self {
            MatchKind::Boolean => "match",
            MatchKind::BoolPrefix => "match_bool_prefix",
        }
    }
}

/// Options a query string passes down to its leaves.
struct QsOptions<'q> {
    qs: &'q QueryStringQuery,
    defaults: Vec<FieldBoost>,
    lenient: bool,
    simple: bool,
}

struct Planner<'c, 'a> {
    ctx: &'c QueryContext<'a>,
    /// Profiling (`"profile": true`): the levels of nodes planned so far, and the
    /// descriptions of the DSL nodes planned (by address, for their parents' descriptions).
    profile: Option<(
        crate::profile::Frames,
        std::cell::RefCell<std::collections::HashMap<usize, String>>,
    )>,
    /// Leaf queries planned so far, for the max clause count.
    leaves: std::cell::Cell<usize>,
    /// The nested paths of the enclosing `nested` queries (innermost last): the parent level
    /// a `nested` query joins to.
    scope: std::cell::RefCell<Vec<String>>,
}

impl<'c, 'a> Planner<'c, 'a> {
    fn new(ctx: &'c QueryContext<'a>) -> Self {
        Planner {
            ctx,
            profile: None,
            leaves: std::cell::Cell::new(0),
            scope: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Lucene's clause limit over the whole query (`IndexSearcher`'s nested clause check:
    /// every leaf query counts one, and the check fails at a leaf once more than
    /// `maxClauseCount` were counted before it).
    fn count_leaf(&self, q: &Query) -> EsResult<()> {
        let compound = matches!(
            q,
            Query::Bool(_)
                | Query::ConstantScore { .. }
                | Query::DisMax { .. }
                | Query::Boosting { .. }
                | Query::FunctionScore(_)
                | Query::ScriptScore { .. }
                | Query::Nested { .. }
        );
        if compound {
            return Ok(());
        }
        let n = self.leaves.get();
        if n > self.ctx.max_clause_count {
            return Err(EsError::bad_request(
                "too_many_nested_clauses",
                format!(
                    "Query contains too many nested clauses; maxClauseCount is set to {}",
                    self.ctx.max_clause_count
                ),
            ));
        }
        self.leaves.set(n + 1);
        Ok(())
    }

    /// The keyed companion field of the `flattened` field `path` is a key of (`f.a.b` for a
    /// flattened `f`), with the term prefix `a.b\0` its values carry there. `None` when
    /// `path` is mapped or under no flattened field.
    fn keyed_target(&self, path: &str) -> Option<(Option<Field>, &'a FieldDef, String)> {
        let mapping: &'a lode_engine::mapping::Mapping = self.ctx.mapping;
        if mapping.fields.contains_key(path) || self.ctx.runtime.contains_key(path) {
            return None;
        }
        for (i, _) in path.match_indices('.') {
            if let Some(def) = mapping.fields.get(&path[..i]) {
                if def.ty != lode_engine::mapping::FieldType::Flattened {
                    return None;
                }
                let field = def
                    .keyed_path()
                    .and_then(|k| self.ctx.schema.get_field(&k).ok())
                    .filter(|_| def.index);
                return Some((field, def, format!("{}\0", &path[i + 1..])));
            }
        }
        None
    }

    /// Whether `path` is unmapped and under a mapped `flattened` field.
    fn flattened_key(&self, path: &str) -> bool {
        let fields = &self.ctx.mapping.fields;
        !fields.contains_key(path)
            && path
                .match_indices('.')
                .find_map(|(i, _)| fields.get(&path[..i]))
                .is_some_and(|d| d.ty == lode_engine::mapping::FieldType::Flattened)
    }

    /// [`Self::keyed_query`] for the query `dsl` builds, when `path` is a key of a
    /// flattened field (the planner's direct entry points: query strings, `multi_match`).
    fn keyed_first(
        &self,
        path: &str,
        dsl: impl FnOnce() -> Query,
        score: bool,
    ) -> EsResult<Option<Q>> {
        if self.keyed_target(path).is_none() {
            return Ok(None);
        }
        self.keyed_query(&dsl(), score)
    }

    /// A query on a key of a `flattened` field (ES's `KeyedFlattenedFieldType`): `term`,
    /// `terms`, `match` (the whole value, as a keyword), `range` (bounds compared as strings),
    /// `prefix` and `exists` read the keyed companion's `key\0value` terms; `wildcard`,
    /// `regexp` and `fuzzy` are refused as ES refuses them.
    fn keyed_query(&self, q: &Query, score: bool) -> EsResult<Option<Q>> {
        let Some(path) = leaf_field(q) else {
            return Ok(None);
        };
        let Some((field, def, prefix)) = self.keyed_target(path) else {
            return Ok(None);
        };
        let text = |v: &Value| -> EsResult<String> {
            match v {
                Value::String(s) => Ok(s.clone()),
                Value::Bool(b) => Ok(b.to_string()),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(EsError::illegal_argument(format!(
                    "[{path}] cannot be queried with the value {other}"
                ))),
            }
        };
        // An `UnsupportedOperationException`, wrapped as `failed to create query` by ES's
        // `SearchExecutionContext#toQuery`.
        let unsupported = |what: &str| {
            let why = format!(
                "[{what}] queries are not currently supported on keyed [flattened] fields."
            );
            Err(shard_error(&why)
                .caused_by(EsError::bad_request("unsupported_operation_exception", why)))
        };
        // `StringFieldType#prefixQuery` and `#rangeQuery` check the setting before the index.
        if !self.ctx.allow_expensive_queries {
            match q {
                Query::Prefix(_) => return Err(crate::expensive::prefix()),
                Query::Range(_) => return Err(crate::expensive::range()),
                _ => {}
            }
        }
        let Some(field) = field else {
            // ES's `KeyedFlattenedFieldType` is a `StringFieldType` on `{root}._keyed`: the
            // queries it builds from terms fail when the root is not indexed (`exists` reads
            // a prefix of terms and finds none). An indexed root no document has written
            // yet matches nothing.
            return match q {
                Query::Wildcard(_) => unsupported("wildcard"),
                Query::Regexp(_) => unsupported("regexp"),
                Query::Fuzzy(_) => unsupported("fuzzy"),
                Query::Exists { .. } => Ok(Some(none())),
                _ if !def.index => Err(crate::searchable::refused(format!(
                    "Cannot search on field [{}._keyed] since it is not indexed.",
                    def.path
                ))),
                _ => Ok(Some(none())),
            };
        };
        let term = |v: &str| Term::from_field_text(field, &format!("{prefix}{v}"));
        let q: Q = match q {
            Query::Term(t) => {
                if t.case_insensitive {
                    return Err(EsError::parsing(
                        "[term] [case_insensitive] on keyed [flattened] fields is not supported by Lode",
                    ));
                }
                bm25(
                    term_query(term(&text(&t.value)?), scored(score)),
                    t.boost,
                    score,
                )
            }
            Query::Match(m) => bm25(
                term_query(term(&text(&m.query)?), scored(score)),
                m.boost,
                score,
            ),
            Query::Terms(t) => {
                let terms = t
                    .values
                    .iter()
                    .map(|v| text(v).map(|s| term(&s)))
                    .collect::<EsResult<Vec<_>>>()?;
                constant(term_set(terms), t.boost, score)
            }
            Query::Exists { boost, .. } => constant(self.prefix_range(field, &prefix, false), *boost, score),
            Query::Prefix(p) => {
                if p.case_insensitive {
                    return Err(EsError::parsing(
                        "[prefix] [case_insensitive] on keyed [flattened] fields is not supported by Lode",
                    ));
                }
                constant(
                    self.prefix_range(field, &format!("{prefix}{}", p.value), false),
                    p.boost,
                    score,
                )
            }
            Query::Range(r) => {
                if r.format.is_some() || r.time_zone.is_some() {
                    return Err(EsError::parsing(
                        "[range] [format] and [time_zone] on keyed [flattened] fields are not supported by Lode",
                    ));
                }
                let lo = match &r.from {
                    None => Bound::Included(term("")),
                    Some(v) if r.include_lower => Bound::Included(term(&text(v)?)),
                    Some(v) => Bound::Excluded(term(&text(v)?)),
                };
                let hi = match &r.to {
                    // Every value of the key: up to the prefix's end (`\0` + 1).
                    None => match prefix_end(prefix.as_bytes()) {
                        Some(end) => Bound::Excluded(Term::from_field_bytes(field, &end)),
                        None => Bound::Unbounded,
                    },
                    Some(v) if r.include_upper => Bound::Included(term(&text(v)?)),
                    Some(v) => Bound::Excluded(term(&text(v)?)),
                };
                constant(Box::new(InvertedIndexRangeQuery::new(lo, hi)), r.boost, score)
            }
            Query::Wildcard(_) => return unsupported("wildcard"),
            Query::Regexp(_) => return unsupported("regexp"),
            Query::Fuzzy(_) => return unsupported("fuzzy"),
            Query::MatchPhrase(_) | Query::MatchPhrasePrefix(_) | Query::MatchBoolPrefix(_) => {
                return Err(EsError::parsing(format!(
                    "phrase and prefix [match] queries on keyed [flattened] field [{path}] are not supported by Lode"
                )))
            }
            _ => return Ok(None),
        };
        Ok(Some(q))
    }

    /// A query on a runtime field: a per-document filter over the field's values (it
    /// shadows a mapped field of the same name, as in ES).
    fn runtime_query(&self, q: &Query) -> EsResult<Option<Q>> {
        use crate::runtime::{self, Pred};
        let (field, pred, boost): (&str, Pred, f32) = match q {
            Query::Term(t) => match self.ctx.runtime.get(&t.field) {
                Some(f) => {
                    let want = runtime::query_value(f, &t.value)?;
                    let ci = t.case_insensitive;
                    let pred: Pred = std::sync::Arc::new(move |vals: &[serde_json::Value]| {
                        vals.iter().any(|v| runtime::same(v, &want, ci))
                    });
                    (&t.field, pred, t.boost)
                }
                None => return Ok(None),
            },
            Query::Terms(t) => match self.ctx.runtime.get(&t.field) {
                Some(f) => {
                    let want = t
                        .values
                        .iter()
                        .map(|v| runtime::query_value(f, v))
                        .collect::<EsResult<Vec<_>>>()?;
                    let pred: Pred = std::sync::Arc::new(move |vals: &[serde_json::Value]| {
                        vals.iter()
                            .any(|v| want.iter().any(|w| runtime::same(v, w, false)))
                    });
                    (&t.field, pred, t.boost)
                }
                None => return Ok(None),
            },
            Query::Match(m) => match self.ctx.runtime.get(&m.field) {
                Some(f) => {
                    let want = runtime::query_value(f, &m.query)?;
                    let pred: Pred = std::sync::Arc::new(move |vals: &[serde_json::Value]| {
                        vals.iter().any(|v| runtime::same(v, &want, false))
                    });
                    (&m.field, pred, m.boost)
                }
                None => return Ok(None),
            },
            Query::Exists { field, boost } => match self.ctx.runtime.get(field) {
                Some(_) => {
                    let pred: Pred =
                        std::sync::Arc::new(|vals: &[serde_json::Value]| !vals.is_empty());
                    (field, pred, *boost)
                }
                None => return Ok(None),
            },
            Query::Range(r) => match self.ctx.runtime.get(&r.field) {
                Some(f) => {
                    if r.format.is_some() || r.time_zone.is_some() {
                        return Err(EsError::parsing(
                            "[range] [format] and [time_zone] on a runtime field are not supported by Lode",
                        ));
                    }
                    let from = r
                        .from
                        .as_ref()
                        .map(|v| runtime::query_value(f, v))
                        .transpose()?;
                    let to =
                        r.to.as_ref()
                            .map(|v| runtime::query_value(f, v))
                            .transpose()?;
                    let (il, iu) = (r.include_lower, r.include_upper);
                    let pred: Pred = std::sync::Arc::new(move |vals: &[serde_json::Value]| {
                        vals.iter()
                            .any(|v| runtime::in_range(v, from.as_ref(), to.as_ref(), il, iu))
                    });
                    (&r.field, pred, r.boost)
                }
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let f = self.ctx.runtime[field].clone();
        Ok(Some(Box::new(crate::script::ScriptQuery {
            script: crate::script::DocFilter::Runtime(f, pred),
            fields: crate::script::fields_of(self.ctx.mapping),
            runtime: self.ctx.runtime.clone(),
            errors: self.ctx.script_errors.clone(),
            boost,
            level: self.script_level(),
        })))
    }

    fn build(&self, q: &Query, score: bool) -> EsResult<Q> {
        let Some((frames, described)) = &self.profile else {
            return self.build_node(q, score);
        };
        frames.open();
        let built = self.build_node(q, score);
        let children = frames.close();
        let built = built?;
        let (type_name, description) = {
            let described = described.borrow();
            let lookup = |c: &Query| described.get(&(c as *const Query as usize)).cloned();
            crate::profile::describe(q, &*built, self.ctx.schema, &lookup)
        };
        described
            .borrow_mut()
            .insert(q as *const Query as usize, description.clone());
        let node = std::sync::Arc::new(crate::profile::ProfileNode::new(
            type_name,
            description,
            children,
        ));
        frames.add(node.clone());
        Ok(Box::new(crate::profile::ProfiledQuery::new(built, node)))
    }

    fn build_node(&self, q: &Query, score: bool) -> EsResult<Q> {
        if !self.ctx.allow_expensive_queries {
            self.check_expensive(q)?;
        }
        self.count_leaf(q)?;
        if let Some(q) = self.runtime_query(q)? {
            return Ok(q);
        }
        if let Some(decided) = crate::constant_keyword::decide(q, self.ctx.mapping) {
            return Ok(match decided? {
                crate::constant_keyword::Decided::All(boost) => constant(all(), boost, score),
                crate::constant_keyword::Decided::None => none(),
            });
        }
        if let Some(q) = self.keyed_query(q, score)? {
            return Ok(q);
        }
        Ok(match q {
            Query::MatchAll { boost } => {
                if score {
                    boosted(all(), *boost)
                } else {
                    all()
                }
            }
            Query::MatchNone => none(),
            Query::Term(t) => self.term(t, score)?,
            Query::Terms(t) => self.terms(t, score)?,
            Query::Range(r) => self.range(r, score)?,
            Query::Match(m) => self.match_query(m, score, MatchKind::Boolean)?,
            Query::MatchBoolPrefix(m) => self.match_query(m, score, MatchKind::BoolPrefix)?,
            Query::MatchPhrase(p) => self.phrase(p, score, false, false)?,
            Query::MatchPhrasePrefix(p) => self.phrase(p, score, true, false)?,
            Query::MultiMatch(m) => self.multi_match(m, score)?,
            Query::Bool(b) => self.bool_query(b, score)?,
            Query::Ids { values, boost } => self.ids(values, *boost, score),
            Query::Exists { field, boost } => self.exists(field, *boost, score)?,
            Query::Geo(g) => self.geo(g, score)?,
            Query::Prefix(p) => self.prefix(p, score)?,
            Query::Wildcard(p) => self.wildcard(p, score)?,
            Query::Regexp(p) => self.regexp(p, score)?,
            Query::Fuzzy(f) => self.fuzzy(f, score)?,
            Query::ConstantScore { filter, boost } => {
                constant(self.build(filter, false)?, *boost, score)
            }
            Query::DisMax {
                queries,
                tie_breaker,
                boost,
            } => {
                let qs = queries
                    .iter()
                    .map(|q| self.build(q, score))
                    .collect::<EsResult<Vec<_>>>()?;
                boosted(dis_max(qs, *tie_breaker, score), *boost)
            }
            Query::Script { script, boost } => {
                let q: Q = Box::new(crate::script::ScriptQuery {
                    script: crate::script::DocFilter::Script(script.program.clone()),
                    fields: crate::script::fields_of(self.ctx.mapping),
                    runtime: self.ctx.runtime.clone(),
                    errors: self.ctx.script_errors.clone(),
                    boost: *boost,
                    level: self.script_level(),
                });
                q
            }
            Query::ScriptScore {
                query,
                script,
                min_score,
                boost,
            } => {
                let inner = self.at_level(self.build(query, true)?);
                let q: Q = Box::new(crate::script::ScriptScoreQuery {
                    query: inner,
                    script: script.program.clone(),
                    fields: crate::script::fields_of(self.ctx.mapping),
                    runtime: self.ctx.runtime.clone(),
                    errors: self.ctx.script_errors.clone(),
                    min_score: *min_score,
                    boost: *boost,
                });
                q
            }
            Query::Boosting {
                positive,
                negative,
                negative_boost,
                boost,
            } => {
                let pos = self.build(positive, score)?;
                if !score {
                    pos
                } else {
                    let neg = self.build(negative, false)?;
                    boosted(
                        Box::new(BoostingQuery::new(pos, neg, *negative_boost)),
                        *boost,
                    )
                }
            }
            Query::FunctionScore(f) => self.function_score(f, score)?,
            Query::QueryString(qs) => self.query_string(qs, score, false)?,
            Query::SimpleQueryString(qs) => self.query_string(qs, score, true)?,
            Query::Nested {
                path,
                query,
                ignore_unmapped,
                score_mode,
                boost,
                ..
            } => match self.ctx.mapping.objects.get(path.as_str()) {
                Some(o) if o.nested => {
                    boosted(self.nested(path, query, *score_mode, score)?, *boost)
                }
                Some(_) => {
                    return Err(shard_exception(format!(
                        "[nested] nested object under path [{path}] is not of nested type"
                    )))
                }
                None if *ignore_unmapped => none(),
                None => {
                    return Err(shard_exception(format!(
                        "[nested] failed to find nested object under path [{path}]"
                    )))
                }
            },
        })
    }

    /// ES's refusals under `search.allow_expensive_queries: false` that a query's builder
    /// raises before looking at its field or inner query (`crate::expensive`).
    fn check_expensive(&self, q: &Query) -> EsResult<()> {
        match q {
            Query::Script { .. } => Err(crate::expensive::query("script")),
            Query::ScriptScore { .. } => Err(crate::expensive::query("script score")),
            Query::Nested { .. } => Err(crate::expensive::query("joining")),
            _ => match leaf_field(q) {
                // A key of a flattened field read from `_source` for aggregations and sorts
                // is a runtime field of Lode's own, not one of the request's or mapping's.
                Some(f) if self.ctx.runtime.contains_key(f) && !self.flattened_key(f) => {
                    Err(crate::expensive::runtime_field())
                }
                _ => Ok(()),
            },
        }
    }

    /// The nesting level a per-document query is planned at, on an index with nested
    /// documents (see `ScriptQuery::level`).
    fn script_level(&self) -> Option<(Field, Option<String>)> {
        let field = self.ctx.meta.nested?;
        Some((field, self.scope.borrow().last().cloned()))
    }

    /// `q` restricted to the documents of the level it is planned at, on an index with
    /// nested documents: a query that runs a script on each of its matches (`script_score`)
    /// must not run it on another level's documents (an inner `match_all` matches them all).
    fn at_level(&self, q: Q) -> Q {
        let Some((field, path)) = self.script_level() else {
            return q;
        };
        match path {
            None => crate::nested::non_nested(q, Some(field)),
            Some(path) => on_path(q, field, &path),
        }
    }

    /// A `nested` query: the inner query on `path`'s nested documents, joined to the
    /// current nested scope (the root, or the path of the enclosing `nested` query).
    fn nested(
        &self,
        path: &str,
        query: &Query,
        mode: crate::nested::ScoreMode,
        score: bool,
    ) -> EsResult<Q> {
        let Some(field) = self.ctx.meta.nested else {
            // A nested mapping always adds the field; without it no nested document exists.
            return Ok(none());
        };
        let levels: Vec<String> = self.scope.borrow().clone();
        let child = self.nested_children(
            path,
            query,
            score && mode != crate::nested::ScoreMode::None,
            field,
        )?;
        Ok(Box::new(crate::nested::ToParentQuery::new(
            child, field, levels, mode,
        )))
    }

    /// `query` on the nested documents of `path`, planned inside that nested scope.
    fn nested_children(&self, path: &str, query: &Query, score: bool, field: Field) -> EsResult<Q> {
        let levels: Vec<String> = self.scope.borrow().clone();
        if let Some(outer) = levels.last() {
            if !path.starts_with(&format!("{outer}.")) {
                return Err(shard_exception(format!(
                    "[nested] nested path [{path}] is not a child of current nested path [{outer}]"
                )));
            }
        }
        self.scope.borrow_mut().push(path.to_string());
        let inner = self.build(query, score);
        self.scope.borrow_mut().pop();
        Ok(on_path(inner?, field, path))
    }

    /// A `geo_distance` or `geo_bounding_box` query (`crate::geo`), as ES's builders check
    /// the field first.
    fn geo(&self, g: &crate::geo::GeoQuery, score: bool) -> EsResult<Q> {
        let Some(def) = self.ctx.mapping.fields.get(&g.field) else {
            if g.ignore_unmapped {
                return Ok(none());
            }
            return Err(shard_exception(format!(
                "failed to find geo field [{}]",
                g.field
            )));
        };
        if def.ty != lode_engine::mapping::FieldType::GeoPoint {
            return Err(shard_exception(format!(
                "type [{}] for field [{}] is not supported for [{}] queries",
                def.ty.name(),
                g.field,
                g.name
            )));
        }
        if let Some(e) = self.refusal(def) {
            return Err(e);
        }
        if self.ctx.schema.get_field(&g.field).is_err() {
            return Ok(none());
        }
        let q: Q = Box::new(crate::geo::GeoPointQuery {
            field: g.field.clone(),
            shape: g.shape.clone(),
        });
        Ok(constant(q, g.boost, score))
    }

    /// ES's refusal of any query but `exists` on `def` ([`crate::searchable::refusal`]), and
    /// of one searched through doc values alone while expensive queries are not allowed.
    fn refusal(&self, def: &FieldDef) -> Option<EsError> {
        crate::searchable::refusal(def).or_else(|| {
            (!self.ctx.allow_expensive_queries && crate::searchable::doc_values_only(def))
                .then(|| crate::expensive::doc_values_only(&def.path))
        })
    }

    /// [`Self::resolve`] for a query on one named field: a field whose type Lode keeps in
    /// `_source` only (geo, range, ... types) is refused rather than matching nothing.
    fn resolve_for(&self, path: &str, query: &str) -> EsResult<Target<'a>> {
        if let Some(def) = self.ctx.mapping.fields.get(path) {
            if let lode_engine::mapping::FieldType::SourceOnly(ty) = def.ty {
                return Err(shard_exception(format!(
                    "[{query}] queries on field [{path}] of type [{ty}] are not supported by Lode"
                )));
            }
            if def.ty == lode_engine::mapping::FieldType::GeoPoint {
                // ES's `AbstractGeometryFieldType` and `MappedFieldType` refusals.
                let ty = "geo_point";
                return Err(match query {
                    "term" | "terms" | "match" | "match_phrase" => shard_exception(format!(
                        "Geometry fields do not support exact searching, use dedicated geometry queries instead: [{path}]"
                    )),
                    "range" => EsError::illegal_argument(format!(
                        "Field [{path}] of type [{ty}] does not support range queries"
                    )),
                    "prefix" | "wildcard" => shard_exception(format!(
                        "Can only use {query} queries on keyword, text and wildcard fields - not on [{path}] which is of type [{ty}]"
                    )),
                    _ => shard_exception(format!(
                        "Can only use {query} queries on keyword and text fields - not on [{path}] which is of type [{ty}]"
                    )),
                });
            }
        }
        let target = self.resolve(path);
        if let Target::Field(_, def) = &target {
            // Types that refuse the query outright say so first (`string_target`), and a
            // phrase on text asks for positions first (`phrase`).
            let decided_later = match query {
                "prefix" | "wildcard" | "regexp" | "fuzzy" => {
                    !matches!(def.storage(), Storage::Text | Storage::Keyword)
                }
                "match_phrase" => def.storage() == Storage::Text,
                _ => false,
            };
            if let Some(e) = self.refusal(def).filter(|_| !decided_later) {
                return Err(e);
            }
        }
        Ok(target)
    }

    /// [`Self::resolve_for`] for a `lenient` query, to which a field that cannot be searched
    /// is a field that matches nothing (ES's `MatchQueryParser` catches the refusal).
    fn resolve_lenient(&self, path: &str, query: &str, lenient: bool) -> EsResult<Target<'a>> {
        match self.resolve_for(path, query) {
            Err(e) if lenient && crate::searchable::is_refusal(&e) => Ok(Target::Missing),
            other => other,
        }
    }

    fn resolve(&self, path: &str) -> Target<'a> {
        let meta = &self.ctx.meta;
        match path {
            "_id" => return Target::Meta(meta.id),
            "_routing" => return Target::Meta(meta.routing),
            "_ignored" => {
                return match meta.ignored {
                    Some(f) => Target::Meta(f),
                    None => Target::Missing,
                }
            }
            _ => {}
        }
        let mapping: &'a lode_engine::mapping::Mapping = self.ctx.mapping;
        match mapping.fields.get(path) {
            Some(def) if !matches!(def.storage(), Storage::None | Storage::Completion) => {
                match self.ctx.schema.get_field(path) {
                    Ok(f) => Target::Field(f, def),
                    Err(_) => Target::Missing,
                }
            }
            _ => Target::Missing,
        }
    }

    fn normalize(&self, def: &FieldDef, s: &str) -> EsResult<String> {
        match &def.normalizer {
            Some(n) => Ok(self
                .ctx
                .analysis
                .normalizer(n)
                .map_err(analysis_error)?
                .normalize(s)),
            None => Ok(s.to_string()),
        }
    }

    /// The analyzer to use: an explicit `analyzer` parameter must exist (ES checks it before
    /// anything else), otherwise the field's.
    fn search_analyzer<'x>(
        &self,
        query: &str,
        explicit: Option<&'x str>,
        field_default: &'x str,
    ) -> EsResult<&'x str> {
        match explicit {
            Some(name) => {
                if self.ctx.analysis.analyzer(name).is_err() {
                    return Err(shard_exception(format!(
                        "[{query}] analyzer [{name}] not found"
                    )));
                }
                Ok(name)
            }
            None => Ok(field_default),
        }
    }

    /// The analyzed tokens of `text`, grouped by position (same-position tokens together).
    fn analyze(&self, analyzer: &str, text: &str) -> EsResult<Vec<(usize, Vec<String>)>> {
        let a = self
            .ctx
            .analysis
            .analyzer(analyzer)
            .map_err(analysis_error)?;
        let mut by_pos: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for t in a.analyze(text) {
            let slot = by_pos.entry(t.position).or_default();
            if !slot.contains(&t.token) {
                slot.push(t.token);
            }
        }
        Ok(by_pos.into_iter().collect())
    }

    fn date_millis(
        &self,
        v: &Value,
        format: &DateFormat,
        tz: &Tz,
        round_up: bool,
    ) -> EsResult<i64> {
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => other.to_string(),
        };
        parse_date_math(&s, self.ctx.now_millis, format, tz, round_up)
            .map_err(|e| EsError::bad_request("parse_exception", e.reason))
    }

    /// A bound on a `date_nanos` field in epoch nanoseconds, and its nanosecond column: a
    /// date the format reads keeps its digits below the millisecond; date math is resolved
    /// in milliseconds (rounding up fills the sub-millisecond digits). `None` when the
    /// index's schema predates the nanosecond column (the milliseconds one answers).
    fn date_nanos_bound(
        &self,
        def: &FieldDef,
        v: &Value,
        format: &DateFormat,
        tz: &Tz,
        round_up: bool,
    ) -> EsResult<Option<(Field, i64)>> {
        let Some(field) = def
            .nanos_path()
            .and_then(|p| self.ctx.schema.get_field(&p).ok())
        else {
            return Ok(None);
        };
        let text = scalar_string(v);
        if !text.starts_with("now") && !text.contains("||") {
            if let Ok(n) = format.parse_nanos(&text, tz, round_up) {
                return Ok(Some((field, n)));
            }
        }
        let ms = self.date_millis(v, format, tz, round_up)?;
        let n = ms
            .saturating_mul(1_000_000)
            .saturating_add(if round_up { 999_999 } else { 0 });
        Ok(Some((field, n)))
    }

    /// Ok(none) when lenient, the ES error otherwise.
    fn value_error(&self, e: EsError, lenient: bool) -> EsResult<Q> {
        if lenient {
            Ok(none())
        } else {
            Err(e)
        }
    }

    // ------------------------------------------------------------------------------------------
    // Term-level

    fn term(&self, t: &TermQuery, score: bool) -> EsResult<Q> {
        let target = self.resolve_for(&t.field, "term")?;
        if t.case_insensitive {
            let field = match &target {
                Target::Meta(f) => Some((*f, None)),
                Target::Field(_, d) if crate::searchable::doc_values_only(d) => {
                    let s = self.normalize(d, &scalar_string(&t.value))?;
                    let q = self.column_regex(d, &literal_regex(&s, true, false))?;
                    return Ok(constant(q, t.boost, score));
                }
                Target::Field(f, d)
                    if matches!(d.storage(), Storage::Text | Storage::Keyword) && d.index =>
                {
                    Some((*f, Some(*d)))
                }
                _ => None,
            };
            if let Some((field, def)) = field {
                let s = scalar_string(&t.value);
                let s = match def {
                    Some(d) if d.storage() == Storage::Keyword => self.normalize(d, &s)?,
                    _ => s,
                };
                let q = self.regex_query(&literal_regex(&s, true, false), field, def)?;
                return Ok(constant(q, t.boost, score));
            }
        }
        self.exact(&target, &t.value, t.boost, score, false)
    }

    /// A query on a range field: its bounds read as the field's values (dates with the
    /// query's `format` and `time_zone` and date math, rounded as a date `range` rounds),
    /// exclusive ones moved to the next value inward.
    #[allow(clippy::too_many_arguments)]
    fn range_field_query(
        &self,
        def: &FieldDef,
        kind: lode_engine::range_field::RangeKind,
        lower: (Option<&Value>, bool),
        upper: (Option<&Value>, bool),
        relation: lode_engine::range_field::Relation,
        (format, time_zone): (Option<&str>, Option<&str>),
        boost: f32,
        score: bool,
    ) -> EsResult<Q> {
        let format = match format {
            Some(f) => DateFormat::parse(f).map_err(|e| EsError::illegal_argument(e.reason))?,
            None => def.date_format.clone(),
        };
        let tz = match time_zone {
            Some(z) => Tz::parse(z).map_err(|e| EsError::illegal_argument(e.reason))?,
            None => Tz::utc(),
        };
        let encode = |v: &Value, round_up: bool| -> EsResult<Vec<u8>> {
            let date = |v: &Value| {
                self.date_millis(v, &format, &tz, round_up)
                    .map_err(|e| e.reason)
            };
            kind.encode(v, &date).map_err(shard_error)
        };
        let lo = match lower {
            (None, _) => kind.min(),
            (Some(v), true) => encode(v, false)?,
            (Some(v), false) => match kind.next_up(&encode(v, true)?) {
                Some(e) => e,
                None => return Ok(none()),
            },
        };
        let hi = match upper {
            (None, _) => kind.max(),
            (Some(v), true) => encode(v, true)?,
            (Some(v), false) => match kind.next_down(&encode(v, false)?) {
                Some(e) => e,
                None => return Ok(none()),
            },
        };
        if lo > hi {
            return Ok(none());
        }
        let q: Q = Box::new(crate::range_field::RangeFieldQuery {
            field: def.path.clone(),
            width: kind.width(),
            lo,
            hi,
            relation,
        });
        Ok(constant(q, boost, score))
    }

    /// Documents whose field holds exactly `v`.
    fn exact(
        &self,
        target: &Target,
        v: &Value,
        boost: f32,
        score: bool,
        lenient: bool,
    ) -> EsResult<Q> {
        let (field, def) = match target {
            Target::Missing => return Ok(none()),
            Target::Meta(f) => {
                let term = Term::from_field_text(*f, &scalar_string(v));
                return Ok(constant(
                    term_query(term, IndexRecordOption::Basic),
                    boost,
                    score,
                ));
            }
            Target::Field(f, d) => (*f, *d),
        };
        // Reached per field by `multi_match` and `query_string` (a lone `term` or `match` is
        // decided before planning, in `build_node`).
        if def.ty == lode_engine::mapping::FieldType::ConstantKeyword {
            return Ok(if crate::constant_keyword::exact_matches(def, v) {
                constant(all(), boost, score)
            } else {
                none()
            });
        }
        if let Some(e) = self.refusal(def) {
            return self.value_error(e, lenient);
        }
        let point = |term: Term| -> Q {
            let q = if def.index {
                term_query(term, IndexRecordOption::Basic)
            } else {
                range_inclusive(term.clone(), term)
            };
            constant(q, boost, score)
        };
        if let lode_engine::mapping::FieldType::Range(kind) = def.ty {
            return self.range_field_query(
                def,
                kind,
                (Some(v), true),
                (Some(v), true),
                lode_engine::range_field::Relation::Intersects,
                (None, None),
                boost,
                score,
            );
        }
        Ok(match def.storage() {
            Storage::Text => {
                let term = Term::from_field_text(field, &scalar_string(v));
                bm25(
                    term_clause(term, def.ty.constant_score(), score),
                    boost,
                    score,
                )
            }
            Storage::Keyword => {
                let term = Term::from_field_text(field, &self.normalize(def, &scalar_string(v))?);
                if def.index && def.ty.constant_score() {
                    constant(term_query(term, IndexRecordOption::Basic), boost, score)
                } else if def.index {
                    bm25(term_query(term, scored(score)), boost, score)
                } else {
                    point(term)
                }
            }
            Storage::I64 if def.nanos_path().is_some() => {
                let tz = Tz::utc();
                let lo = match self.date_nanos_bound(def, v, &def.date_format, &tz, false) {
                    Ok(b) => b,
                    Err(e) => return self.value_error(e, lenient),
                };
                let hi = self.date_nanos_bound(def, v, &def.date_format, &tz, true)?;
                match (lo, hi) {
                    (Some((nf, lo)), Some((_, hi))) => {
                        return Ok(self.i64_range(nf, def, (lo, hi), boost, score))
                    }
                    _ => {
                        let lo = self.date_millis(v, &def.date_format, &tz, false)?;
                        let hi = self.date_millis(v, &def.date_format, &tz, true)?;
                        self.i64_range(field, def, (lo, hi), boost, score)
                    }
                }
            }
            Storage::I64 if def.ty.is_date() => {
                let tz = Tz::utc();
                let lo = match self.date_millis(v, &def.date_format, &tz, false) {
                    Ok(ms) => ms,
                    Err(e) => return self.value_error(e, lenient),
                };
                let hi = self.date_millis(v, &def.date_format, &tz, true)?;
                constant(
                    range_inclusive(
                        Term::from_field_i64(field, lo),
                        Term::from_field_i64(field, hi),
                    ),
                    boost,
                    score,
                )
            }
            Storage::I64 => match values::int_term(def.ty, v) {
                Ok(Some(n)) if def.points() => self.i64_range(field, def, (n, n), boost, score),
                Ok(Some(n)) => point(Term::from_field_i64(field, n)),
                Ok(None) => none(),
                Err(e) => return self.value_error(shard_error(e), lenient),
            },
            Storage::F64 => match values::float_value(def, v) {
                Ok(x) if def.points() => {
                    let t = Term::from_field_f64(field, x);
                    let fallback = range_inclusive(t.clone(), t);
                    let u = x.to_u64();
                    self.point_range(field, def, (u, u), fallback, boost, score)
                }
                Ok(x) => point(Term::from_field_f64(field, x)),
                Err(e) => return self.value_error(shard_error(e), lenient),
            },
            Storage::Bool => match values::bool_value(v) {
                Ok(b) if !def.index => constant(
                    Box::new(crate::column_terms::ColumnBoolQuery::new(&def.path, b)),
                    boost,
                    score,
                ),
                Ok(b) => point(Term::from_field_bool(field, b)),
                Err(e) => return self.value_error(shard_error(e), lenient),
            },
            Storage::Ip => {
                let s = scalar_string(v);
                if s.contains('/') {
                    match values::cidr_range(&s) {
                        Ok((lo, hi)) => constant(
                            range_inclusive(
                                Term::from_field_ip_addr(field, lo),
                                Term::from_field_ip_addr(field, hi),
                            ),
                            boost,
                            score,
                        ),
                        Err(e) => return self.value_error(shard_error(e), lenient),
                    }
                } else {
                    match values::ip_value(&s) {
                        Ok(ip) => point(Term::from_field_ip_addr(field, ip)),
                        Err(e) => return self.value_error(shard_error(e), lenient),
                    }
                }
            }
            Storage::None | Storage::Completion | Storage::Range | Storage::GeoPoint => none(),
        })
    }

    fn terms(&self, t: &TermsQuery, score: bool) -> EsResult<Q> {
        if let Some(l) = &t.lookup {
            let values = self
                .ctx
                .terms_lookups
                .and_then(|m| m.get(l))
                .ok_or_else(|| {
                    EsError::illegal_argument(format!(
                        "terms lookup ([{}] of document [{}] in index [{}]) is not supported here; pass the terms as an array",
                        l.path, l.id, l.index
                    ))
                })?;
            let looked_up = TermsQuery {
                values: values.clone(),
                lookup: None,
                ..t.clone()
            };
            return self.terms(&looked_up, score);
        }
        if t.values.len() > self.ctx.max_terms_count {
            return Err(EsError::illegal_argument(format!(
                "The number of terms [{}] used in the Terms Query request has exceeded the allowed maximum of [{}]. \
                 This maximum can be set by changing the [index.max_terms_count] index level setting.",
                t.values.len(),
                self.ctx.max_terms_count
            )));
        }
        let target = self.resolve_for(&t.field, "terms")?;
        let (field, def) = match &target {
            Target::Missing => return Ok(none()),
            Target::Meta(f) => {
                let terms = t
                    .values
                    .iter()
                    .map(|v| Term::from_field_text(*f, &scalar_string(v)))
                    .collect();
                return Ok(constant(term_set(terms), t.boost, score));
            }
            Target::Field(f, d) => (*f, *d),
        };
        // A terms lookup's values arrive here, past the decision in `build_node`.
        if def.ty == lode_engine::mapping::FieldType::ConstantKeyword {
            return Ok(
                if t.values
                    .iter()
                    .any(|v| crate::constant_keyword::exact_matches(def, v))
                {
                    constant(all(), t.boost, score)
                } else {
                    none()
                },
            );
        }
        let per_value = || -> EsResult<Q> {
            let qs = t
                .values
                .iter()
                .map(|v| self.exact(&target, v, 1.0, false, false))
                .collect::<EsResult<Vec<_>>>()?;
            Ok(constant(union(qs), t.boost, score))
        };
        if def.points() || def.storage() == Storage::Range {
            return per_value();
        }
        if !def.index {
            // Through doc values (`exact` refuses a field without them).
            return per_value();
        }
        let mut terms = Vec::with_capacity(t.values.len());
        for v in &t.values {
            match def.storage() {
                Storage::Text => terms.push(Term::from_field_text(field, &scalar_string(v))),
                Storage::Keyword => terms.push(Term::from_field_text(
                    field,
                    &self.normalize(def, &scalar_string(v))?,
                )),
                Storage::I64 if def.ty.is_date() => return per_value(),
                Storage::I64 => {
                    if let Some(n) = values::int_term(def.ty, v).map_err(shard_error)? {
                        terms.push(Term::from_field_i64(field, n));
                    }
                }
                Storage::F64 => terms.push(Term::from_field_f64(
                    field,
                    values::float_value(def, v).map_err(shard_error)?,
                )),
                Storage::Bool => terms.push(Term::from_field_bool(
                    field,
                    values::bool_value(v).map_err(shard_error)?,
                )),
                Storage::Ip => {
                    let s = scalar_string(v);
                    if s.contains('/') {
                        return per_value();
                    }
                    terms.push(Term::from_field_ip_addr(
                        field,
                        values::ip_value(&s).map_err(shard_error)?,
                    ));
                }
                Storage::None | Storage::Completion | Storage::Range | Storage::GeoPoint => {}
            }
        }
        Ok(constant(term_set(terms), t.boost, score))
    }

    fn range(&self, r: &RangeQuery, score: bool) -> EsResult<Q> {
        if let Some(q) = self.keyed_first(&r.field, || Query::Range(r.clone()), score)? {
            return Ok(q);
        }
        let target = self.resolve_for(&r.field, "range")?;
        let (field, def) = match target {
            Target::Missing => return Ok(none()),
            Target::Meta(f) => {
                self.check_multi_term("range", None, "")?;
                let lo = r
                    .from
                    .as_ref()
                    .map(|v| Term::from_field_text(f, &scalar_string(v)));
                let hi =
                    r.to.as_ref()
                        .map(|v| Term::from_field_text(f, &scalar_string(v)));
                let q = self.term_range(
                    lo,
                    r.include_lower,
                    hi,
                    r.include_upper,
                    Term::from_field_text(f, ""),
                );
                return Ok(constant(q, r.boost, score));
            }
            Target::Field(f, d) => (f, d),
        };
        if let Some(e) = self.refusal(def) {
            return Err(e);
        }
        if let lode_engine::mapping::FieldType::Range(kind) = def.ty {
            return self.range_field_query(
                def,
                kind,
                (r.from.as_ref(), r.include_lower),
                (r.to.as_ref(), r.include_upper),
                r.relation,
                (r.format.as_deref(), r.time_zone.as_deref()),
                r.boost,
                score,
            );
        }
        let q = match def.storage() {
            Storage::Text | Storage::Keyword => {
                self.check_multi_term("range", Some(def), "")?;
                let text = |v: &Value| -> EsResult<Term> {
                    let s = scalar_string(v);
                    let s = if def.storage() == Storage::Keyword {
                        self.normalize(def, &s)?
                    } else {
                        s
                    };
                    Ok(Term::from_field_text(field, &s))
                };
                let lo = r.from.as_ref().map(text).transpose()?;
                let hi = r.to.as_ref().map(text).transpose()?;
                self.term_range(
                    lo,
                    r.include_lower,
                    hi,
                    r.include_upper,
                    Term::from_field_text(field, ""),
                )
            }
            Storage::I64 if def.ty.is_date() => {
                let format = match &r.format {
                    Some(f) => {
                        DateFormat::parse(f).map_err(|e| EsError::illegal_argument(e.reason))?
                    }
                    None => def.date_format.clone(),
                };
                let tz = match &r.time_zone {
                    Some(z) => Tz::parse(z).map_err(|e| EsError::illegal_argument(e.reason))?,
                    None => Tz::utc(),
                };
                if def.nanos_path().is_some() {
                    let bound = |v: &Value, round_up: bool| {
                        self.date_nanos_bound(def, v, &format, &tz, round_up)
                    };
                    let lo = match &r.from {
                        None => Some(None),
                        Some(v) => bound(v, !r.include_lower)?.map(|(f, n)| {
                            Some((
                                f,
                                if r.include_lower {
                                    Some(n)
                                } else {
                                    n.checked_add(1)
                                },
                            ))
                        }),
                    };
                    let hi = match &r.to {
                        None => Some(None),
                        Some(v) => bound(v, r.include_upper)?.map(|(f, n)| {
                            Some((
                                f,
                                if r.include_upper {
                                    Some(n)
                                } else {
                                    n.checked_sub(1)
                                },
                            ))
                        }),
                    };
                    if let (Some(lo), Some(hi)) = (lo, hi) {
                        let nf = lo.or(hi).map(|(f, _)| f);
                        let lo = lo.map_or(Some(i64::MIN), |(_, n)| n);
                        let hi = hi.map_or(Some(i64::MAX), |(_, n)| n);
                        return Ok(match (nf, lo, hi) {
                            (_, Some(lo), Some(hi)) if lo > hi => none(),
                            (Some(nf), Some(lo), Some(hi)) => {
                                self.i64_range(nf, def, (lo, hi), r.boost, score)
                            }
                            // No bound: every document with a value.
                            (None, _, _) => {
                                self.i64_range(field, def, (i64::MIN, i64::MAX), r.boost, score)
                            }
                            _ => none(),
                        });
                    }
                }
                // gt and lte round up, gte and lt round down (ES date math rounding).
                let lo = match &r.from {
                    None => i64::MIN,
                    Some(v) => {
                        let ms = self.date_millis(v, &format, &tz, !r.include_lower)?;
                        if r.include_lower {
                            ms
                        } else {
                            match ms.checked_add(1) {
                                Some(x) => x,
                                None => return Ok(none()),
                            }
                        }
                    }
                };
                let hi = match &r.to {
                    None => i64::MAX,
                    Some(v) => {
                        let ms = self.date_millis(v, &format, &tz, r.include_upper)?;
                        if r.include_upper {
                            ms
                        } else {
                            match ms.checked_sub(1) {
                                Some(x) => x,
                                None => return Ok(none()),
                            }
                        }
                    }
                };
                if lo > hi {
                    return Ok(none());
                }
                return Ok(self.i64_range(field, def, (lo, hi), r.boost, score));
            }
            Storage::I64 => {
                match values::int_range(
                    def.ty,
                    r.from.as_ref(),
                    r.include_lower,
                    r.to.as_ref(),
                    r.include_upper,
                )
                .map_err(shard_error)?
                {
                    Some(bounds) => return Ok(self.i64_range(field, def, bounds, r.boost, score)),
                    None => return Ok(none()),
                }
            }
            Storage::F64 => {
                let lo = match &r.from {
                    Some(v) => {
                        values::float_bound(def, v, r.include_lower, true).map_err(shard_error)?
                    }
                    None => FloatBound::Included(f64::NEG_INFINITY),
                };
                let hi = match &r.to {
                    Some(v) => {
                        values::float_bound(def, v, r.include_upper, false).map_err(shard_error)?
                    }
                    None => FloatBound::Included(f64::INFINITY),
                };
                let to_bound = |b: FloatBound| match b {
                    FloatBound::Included(x) => Bound::Included(Term::from_field_f64(field, x)),
                    FloatBound::Excluded(x) => Bound::Excluded(Term::from_field_f64(field, x)),
                };
                // The same bounds, inclusive, in the column's order-preserving u64 mapping.
                let lo_u = match lo {
                    FloatBound::Included(x) => Some(x.to_u64()),
                    FloatBound::Excluded(x) => x.to_u64().checked_add(1),
                };
                let hi_u = match hi {
                    FloatBound::Included(x) => Some(x.to_u64()),
                    FloatBound::Excluded(x) => x.to_u64().checked_sub(1),
                };
                let q: Q = Box::new(TRangeQuery::new(to_bound(lo), to_bound(hi)));
                return Ok(match (lo_u, hi_u) {
                    (Some(lo), Some(hi)) if lo <= hi => {
                        self.point_range(field, def, (lo, hi), q, r.boost, score)
                    }
                    _ => none(),
                });
            }
            Storage::Bool => {
                // tantivy has no boolean range: enumerate false < true within the bounds
                // (as terms, or as values of the column when searched through doc values).
                let b = |v: &Value| values::bool_value(v).map_err(shard_error);
                let lo = r.from.as_ref().map(b).transpose()?;
                let hi = r.to.as_ref().map(b).transpose()?;
                let within = |x: bool| {
                    let (x, lo, hi) = (u8::from(x), lo.map(u8::from), hi.map(u8::from));
                    lo.is_none_or(|l| if r.include_lower { x >= l } else { x > l })
                        && hi.is_none_or(|h| if r.include_upper { x <= h } else { x < h })
                };
                let wanted = [false, true].into_iter().filter(|x| within(*x));
                if def.index {
                    term_set(wanted.map(|x| Term::from_field_bool(field, x)).collect())
                } else {
                    union(
                        wanted
                            .map(|x| -> Q {
                                Box::new(crate::column_terms::ColumnBoolQuery::new(&def.path, x))
                            })
                            .collect(),
                    )
                }
            }
            Storage::Ip => {
                let ip = |v: &Value| {
                    values::ip_value(&scalar_string(v))
                        .map(|ip| Term::from_field_ip_addr(field, ip))
                        .map_err(shard_error)
                };
                let lo = r.from.as_ref().map(ip).transpose()?;
                let hi = r.to.as_ref().map(ip).transpose()?;
                self.term_range(
                    lo,
                    r.include_lower,
                    hi,
                    r.include_upper,
                    Term::from_field_ip_addr(field, Ipv6Addr::UNSPECIFIED),
                )
            }
            Storage::None | Storage::Completion | Storage::Range | Storage::GeoPoint => {
                return Ok(none())
            }
        };
        Ok(constant(q, r.boost, score))
    }

    /// `[lo, hi]` on an integer or date field, scoring `boost` when `score`.
    fn i64_range(
        &self,
        field: Field,
        def: &FieldDef,
        (lo, hi): (i64, i64),
        boost: f32,
        score: bool,
    ) -> Q {
        let q = range_inclusive(
            Term::from_field_i64(field, lo),
            Term::from_field_i64(field, hi),
        );
        self.point_range(field, def, (lo.to_u64(), hi.to_u64()), q, boost, score)
    }

    /// `[lo, hi]` (inclusive, in the column's u64 mapping) on a numeric or date field: from
    /// the points index or the column, chosen per segment ([`PointRangeQuery`], which scores
    /// by itself so that a range covering a segment stays a recognisable `AllScorer`), when
    /// the field has doc values; otherwise `fallback`, tantivy's range on the same bounds.
    fn point_range(
        &self,
        field: Field,
        def: &FieldDef,
        (lo, hi): (u64, u64),
        fallback: Q,
        boost: f32,
        score: bool,
    ) -> Q {
        if !def.doc_values {
            return constant(fallback, boost, score);
        }
        let points = PointRangeQuery::new(field, lo, hi, fallback);
        Box::new(if score {
            points.with_score(boost)
        } else {
            points
        })
    }

    /// A range over terms; an open lower end starts at `min` so that only documents with a
    /// value match (tantivy treats a fully open range as "all documents").
    fn term_range(
        &self,
        lo: Option<Term>,
        include_lower: bool,
        hi: Option<Term>,
        include_upper: bool,
        min: Term,
    ) -> Q {
        let lo = match lo {
            Some(t) if include_lower => Bound::Included(t),
            Some(t) => Bound::Excluded(t),
            None => Bound::Included(min),
        };
        let hi = match hi {
            Some(t) if include_upper => Bound::Included(t),
            Some(t) => Bound::Excluded(t),
            None => Bound::Unbounded,
        };
        Box::new(TRangeQuery::new(lo, hi))
    }

    fn ids(&self, values: &[String], boost: f32, score: bool) -> Q {
        let f = self.ctx.meta.id;
        let terms = values.iter().map(|v| Term::from_field_text(f, v)).collect();
        constant(term_set(terms), boost, score)
    }

    /// Through the field's column, its norms or `_field_names`, which lists the other leaf
    /// paths that had a value; an object path matches when any field below it does.
    fn exists(&self, field: &str, boost: f32, score: bool) -> EsResult<Q> {
        let exists = || Query::Exists {
            field: field.to_string(),
            boost,
        };
        if let Some(q) = self.keyed_first(field, exists, score)? {
            return Ok(q);
        }
        let mapping = self.ctx.mapping;
        let names: Vec<&str> = if matches!(
            field,
            "_id" | "_index" | "_seq_no" | "_version" | "_primary_term"
        ) {
            return Ok(constant(all(), boost, score));
        } else if field == "_routing" || field == "_ignored" {
            let f = if field == "_routing" {
                self.ctx.meta.routing
            } else {
                match self.ctx.meta.ignored {
                    Some(f) => f,
                    None => return Ok(none()),
                }
            };
            return Ok(constant(
                self.term_range(None, true, None, true, Term::from_field_text(f, "")),
                boost,
                score,
            ));
        } else if field == "_source" {
            return Err(shard_exception("The _source field is not searchable"));
        } else if field.contains('*') {
            let mut names: Vec<&str> = mapping
                .fields
                .keys()
                .filter(|p| lode_engine::mapping::wildcard_match(field, p))
                .map(String::as_str)
                .collect();
            for obj in mapping
                .objects
                .keys()
                .filter(|p| lode_engine::mapping::wildcard_match(field, p))
            {
                let prefix = format!("{obj}.");
                names.extend(
                    mapping
                        .fields
                        .keys()
                        .filter(|p| p.starts_with(&prefix))
                        .map(String::as_str),
                );
            }
            names
        } else if mapping.fields.contains_key(field) {
            vec![field]
        } else if mapping.objects.contains_key(field) {
            let prefix = format!("{field}.");
            mapping
                .fields
                .keys()
                .filter(|p| p.starts_with(&prefix))
                .map(String::as_str)
                .collect()
        } else {
            Vec::new()
        };
        // Fields with doc values answer from their column (as ES answers from doc values),
        // text fields from their norms and `_field_names` (which lists the values that
        // yielded no token), the others from `_field_names`.
        let f = self.ctx.meta.field_names;
        let schema = self.ctx.schema;
        let mut parts: Vec<Q> = Vec::new();
        let mut listed: Vec<Term> = Vec::new();
        for n in names {
            let field = schema.get_field(n).ok();
            let def = mapping.fields.get(n);
            if let (Some(_), Some(true)) = (field, def.map(|d| d.exists_from_column())) {
                parts.push(Box::new(crate::column_exists::ColumnExistsQuery::new(
                    n.to_string(),
                )));
                continue;
            }
            let listed_term = Term::from_field_text(f, n);
            match field.filter(|&fd| crate::norms::has_norms(schema, fd)) {
                Some(field) => parts.push(Box::new(crate::norms::NormsExistQuery::new(
                    field,
                    listed_term,
                ))),
                None => listed.push(listed_term),
            }
        }
        if !listed.is_empty() {
            parts.push(term_set(listed));
        }
        Ok(constant(union(parts), boost, score))
    }

    /// The field of a string-typed query (`prefix`, `wildcard`, `regexp`, `fuzzy`), or the
    /// ES error for other types; `Ok(None)` when it can only match nothing.
    fn string_target(
        &self,
        target: &Target<'a>,
        query: &str,
        field: &str,
    ) -> EsResult<Option<(Field, Option<&'a FieldDef>)>> {
        match target {
            Target::Missing => Ok(None),
            Target::Meta(f) => Ok(Some((*f, None))),
            Target::Field(f, def) => match def.storage() {
                Storage::Text | Storage::Keyword => Ok(Some((*f, Some(*def)))),
                _ => Err(shard_error(format!(
                    "Can only use {query} queries on keyword{} fields - not on [{field}] which is of type [{}]",
                    match query {
                        "regexp" | "fuzzy" => " and text",
                        _ => ", text and wildcard",
                    },
                    def.ty.name()
                ))),
            },
        }
    }

    /// ES's `StringFieldType` refusal of a `prefix`, `wildcard`, `regexp`, `fuzzy` or `range`
    /// query on a string field (`def`; `None` for `_id`, `_routing`, `_ignored`) while
    /// expensive queries are not allowed. `wildcard` and `constant_keyword` fields are types
    /// of their own in ES, which take these queries; a prefix the field's prefix index holds
    /// is one term.
    fn check_multi_term(&self, query: &str, def: Option<&FieldDef>, value: &str) -> EsResult<()> {
        use lode_engine::mapping::FieldType;
        if self.ctx.allow_expensive_queries
            || def.is_some_and(|d| matches!(d.ty, FieldType::Wildcard | FieldType::ConstantKeyword))
        {
            return Ok(());
        }
        Err(match query {
            "prefix" if def.is_some_and(|d| self.prefix_indexed(d, value)) => return Ok(()),
            "prefix" => crate::expensive::prefix(),
            "range" => crate::expensive::range(),
            other => crate::expensive::query(other),
        })
    }

    /// Whether the prefix field of `def` holds `prefix` as one term: `index_prefixes` on a
    /// text field (`TextFieldType#prefixQuery`), the `._index_prefix` subfield of a
    /// `search_as_you_type` root or shingle field (`PrefixFieldType#termLengthWithinBounds`,
    /// up to 20 UTF-16 units).
    fn prefix_indexed(&self, def: &FieldDef, prefix: &str) -> bool {
        match def.sayt.map(|s| s.role) {
            Some(SaytRole::Root | SaytRole::Shingle(_)) => {
                prefix.encode_utf16().count() <= lode_analysis::SAYT_MAX_PREFIX_CHARS
            }
            Some(SaytRole::IndexPrefix) => false,
            None => {
                crate::expensive::index_prefixes_hold(&self.ctx.mapping.json, &def.path, prefix)
            }
        }
    }

    /// `def`: the field's mapping (`None` for metadata fields). A keyword with doc values runs
    /// the automaton over its column's dictionary (`column_pattern.rs`).
    fn regex_query(&self, pattern: &str, field: Field, def: Option<&FieldDef>) -> EsResult<Q> {
        let invalid =
            |e: tantivy::TantivyError| shard_error(format!("invalid regular expression: {e}"));
        // Keyword and wildcard fields index and store in their column the same values (one
        // tokenizer); flattened fields keep keyed values besides.
        let same_terms = |d: &&FieldDef| {
            matches!(
                d.ty,
                lode_engine::mapping::FieldType::Keyword
                    | lode_engine::mapping::FieldType::Wildcard
            ) && d.index
                && d.doc_values
        };
        if let Some(d) = def.filter(same_terms) {
            let q = crate::column_pattern::KeywordPatternQuery::new(field, &d.path, pattern)
                .map_err(invalid)?;
            return Ok(Box::new(q));
        }
        let q = RegexQuery::from_pattern(pattern, field).map_err(invalid)?;
        Ok(Box::new(q))
    }

    /// A keyword searched through its doc values alone: the values of its column that
    /// `pattern` matches entirely.
    fn column_regex(&self, def: &FieldDef, pattern: &str) -> EsResult<Q> {
        let matcher = crate::column_terms::ValueMatcher::regex(pattern)
            .map_err(|e| shard_error(format!("invalid regular expression: {e}")))?;
        Ok(Box::new(crate::column_terms::ColumnTermsQuery::new(
            &def.path, matcher,
        )))
    }

    /// Terms starting with `prefix`: a term-dictionary range `[prefix, prefix_end)`.
    fn prefix_range(&self, field: Field, prefix: &str, fast_only: bool) -> Q {
        let lo = Bound::Included(Term::from_field_text(field, prefix));
        let hi = match prefix_end(prefix.as_bytes()) {
            Some(end) if !prefix.is_empty() => Bound::Excluded(Term::from_field_bytes(field, &end)),
            _ => Bound::Unbounded,
        };
        if fast_only {
            Box::new(FastFieldRangeQuery::new(lo, hi))
        } else {
            // Every term of the range read into the segment's bitset: once per request.
            Box::new(crate::gathering::Gathering::new(Box::new(
                InvertedIndexRangeQuery::new(lo, hi),
            )))
        }
    }

    fn prefix(&self, p: &PatternQuery, score: bool) -> EsResult<Q> {
        if let Some(q) = self.keyed_first(&p.field, || Query::Prefix(p.clone()), score)? {
            return Ok(q);
        }
        let target = self.resolve_for(&p.field, "prefix")?;
        let Some((field, def)) = self.string_target(&target, "prefix", &p.field)? else {
            return Ok(none());
        };
        self.check_multi_term("prefix", def, &p.value)?;
        let value = match def {
            Some(d) if d.storage() == Storage::Keyword => self.normalize(d, &p.value)?,
            _ => p.value.clone(),
        };
        let q = match def {
            Some(d) if crate::searchable::doc_values_only(d) && p.case_insensitive => {
                self.column_regex(d, &literal_regex(&value, true, true))?
            }
            Some(d) if crate::searchable::doc_values_only(d) => {
                self.prefix_range(field, &value, true)
            }
            _ if p.case_insensitive => {
                self.regex_query(&literal_regex(&value, true, true), field, def)?
            }
            // ES's `SearchAsYouTypeFieldType#prefixQuery`: a prefix of at most 20 characters
            // is one term of the `._index_prefix` field.
            Some(d) => self.text_prefix(d, field, &value),
            _ => self.prefix_range(field, &value, false),
        };
        Ok(constant(q, p.boost, score))
    }

    /// The `._index_prefix` field of a `search_as_you_type` root field, when it holds
    /// `prefix` as one term (1 to 20 characters, as ES's `PrefixFieldType#termLengthWithinBounds`).
    fn sayt_prefix_field(&self, def: &FieldDef, prefix: &str) -> Option<Field> {
        let sayt = def.sayt?;
        let root = match sayt.role {
            SaytRole::Root => def.path.as_str(),
            // ES's `ShingleFieldType#prefixQuery` delegates to the same prefix field.
            SaytRole::Shingle(_) => def.parent.as_deref()?,
            SaytRole::IndexPrefix => return None,
        };
        let chars = prefix.chars().count();
        if !def.index || chars == 0 || chars > lode_analysis::SAYT_MAX_PREFIX_CHARS {
            return None;
        }
        self.ctx
            .schema
            .get_field(&format!("{root}{SAYT_INDEX_PREFIX}"))
            .ok()
    }

    /// Terms of a text field starting with `prefix`: one `._index_prefix` term for a
    /// `search_as_you_type` field when it holds the prefix, else a term-dictionary range.
    fn text_prefix(&self, def: &FieldDef, field: Field, prefix: &str) -> Q {
        match self.sayt_prefix_field(def, prefix) {
            Some(pf) => term_query(Term::from_field_text(pf, prefix), IndexRecordOption::Basic),
            None => self.prefix_range(field, prefix, false),
        }
    }

    fn wildcard(&self, p: &PatternQuery, score: bool) -> EsResult<Q> {
        if let Some(q) = self.keyed_first(&p.field, || Query::Wildcard(p.clone()), score)? {
            return Ok(q);
        }
        let target = self.resolve_for(&p.field, "wildcard")?;
        let Some((field, def)) = self.string_target(&target, "wildcard", &p.field)? else {
            return Ok(none());
        };
        self.check_multi_term("wildcard", def, &p.value)?;
        let value = match def {
            Some(d) if d.storage() == Storage::Keyword => self.normalize(d, &p.value)?,
            _ => p.value.clone(),
        };
        if let Some(d) = def.filter(|d| crate::searchable::doc_values_only(d)) {
            let q = self.column_regex(d, &wildcard_to_regex(&value, p.case_insensitive))?;
            return Ok(constant(q, p.boost, score));
        }
        let q = if p.case_insensitive {
            self.regex_query(&wildcard_to_regex(&value, true), field, def)?
        } else if let Some(lit) = wildcard_literal(&value) {
            term_query(Term::from_field_text(field, &lit), IndexRecordOption::Basic)
        } else if let Some(prefix) = wildcard_prefix(&value) {
            self.prefix_range(field, &prefix, false)
        } else {
            self.regex_query(&wildcard_to_regex(&value, false), field, def)?
        };
        Ok(constant(q, p.boost, score))
    }

    fn regexp(&self, p: &PatternQuery, score: bool) -> EsResult<Q> {
        if let Some(q) = self.keyed_first(&p.field, || Query::Regexp(p.clone()), score)? {
            return Ok(q);
        }
        check_regex_length(&p.value, self.ctx.max_regex_length)?;
        let target = self.resolve_for(&p.field, "regexp")?;
        let Some((field, def)) = self.string_target(&target, "regexp", &p.field)? else {
            return Ok(none());
        };
        self.check_multi_term("regexp", def, &p.value)?;
        let re = lucene_to_regex(&p.value, p.case_insensitive).map_err(shard_error)?;
        if let Some(d) = def.filter(|d| crate::searchable::doc_values_only(d)) {
            return Ok(constant(self.column_regex(d, &re)?, p.boost, score));
        }
        Ok(constant(self.regex_query(&re, field, def)?, p.boost, score))
    }

    /// Lucene's `FuzzyQuery` on one term, rewritten as its `rewrite` says (see
    /// [`crate::fuzzy`]). On a field that scores constantly, the matches all score 1 (ES's
    /// `ConstantScoreQuery` around the fuzzy query), as with a `constant_score*` rewrite.
    fn fuzzy_term(
        &self,
        term: Term,
        fuzzy: &FuzzyOptions<'_>,
        constant_score: bool,
        score: bool,
    ) -> EsResult<Q> {
        // Lucene's `FuzzyQuery` constructor, whatever the rewrite.
        if fuzzy.max_expansions == 0 {
            let why = "maxExpansions must be positive.";
            return Err(shard_error(why).caused_by(EsError::illegal_argument(why)));
        }
        let rewrite = match fuzzy.rewrite {
            None => Rewrite::TopTermsBlendedFreqs(fuzzy.max_expansions as usize),
            Some(name) => Rewrite::parse(name).map_err(|why| {
                shard_error(&why).caused_by(EsError::illegal_argument(why.clone()))
            })?,
        };
        let q: Q = Box::new(crate::fuzzy::FuzzyQuery::new(
            term,
            fuzzy.distance,
            fuzzy.prefix_length as usize,
            fuzzy.transpositions,
            rewrite,
            self.ctx.max_clause_count,
        ));
        Ok(if score && (constant_score || rewrite.is_constant()) {
            constant(q, 1.0, true)
        } else {
            q
        })
    }

    fn fuzzy(&self, f: &FuzzyQuery, score: bool) -> EsResult<Q> {
        if let Some(q) = self.keyed_first(&f.field, || Query::Fuzzy(f.clone()), score)? {
            return Ok(q);
        }
        let target = self.resolve_for(&f.field, "fuzzy")?;
        let Some((field, def)) = self.string_target(&target, "fuzzy", &f.field)? else {
            return Ok(none());
        };
        self.check_multi_term("fuzzy", def, "")?;
        let s = scalar_string(&f.value);
        let s = match def {
            Some(d) if d.storage() == Storage::Keyword => self.normalize(d, &s)?,
            _ => s,
        };
        let distance = f.fuzziness.distance(&s);
        if let Some(d) = def.filter(|d| crate::searchable::doc_values_only(d)) {
            let q = column_fuzzy(d, &s, distance, f.prefix_length, f.transpositions);
            return Ok(constant(q, f.boost, score));
        }
        let term = Term::from_field_text(field, &s);
        let constant_score = def.is_some_and(|d| d.ty.constant_score());
        let options = FuzzyOptions {
            distance,
            prefix_length: f.prefix_length,
            max_expansions: f.max_expansions,
            transpositions: f.transpositions,
            rewrite: f.rewrite.as_deref(),
        };
        let q = self.fuzzy_term(term, &options, constant_score, score)?;
        Ok(boosted(q, f.boost))
    }

    // ------------------------------------------------------------------------------------------
    // Full text

    /// One analyzed position: its token (or same-position tokens, any of which may match).
    fn position_query(
        &self,
        (field, def): (Field, &FieldDef),
        tokens: &[String],
        fuzzy: Option<&MatchQuery>,
        score: bool,
    ) -> EsResult<Q> {
        let constant_score = def.ty.constant_score();
        let qs = tokens
            .iter()
            .map(|tok| {
                let term = Term::from_field_text(field, tok);
                match fuzzy.and_then(|m| FuzzyOptions::of_match(m, tok)) {
                    Some(options) => self.fuzzy_term(term, &options, constant_score, score),
                    None => Ok(term_clause(term, constant_score, score)),
                }
            })
            .collect::<EsResult<_>>()?;
        Ok(union(qs))
    }

    /// Combines per-position clauses the way `match` does: all required with `and`,
    /// otherwise `minimum_should_match` of them (at least one).
    fn combine_positions(
        &self,
        mut clauses: Vec<Q>,
        operator: Operator,
        msm: Option<&str>,
        boost: f32,
    ) -> EsResult<Q> {
        if clauses.len() == 1 {
            return Ok(boosted(clauses.pop().expect("one clause"), boost));
        }
        let n = clauses.len();
        let q: Q = match operator {
            Operator::And => Box::new(BooleanQuery::with_minimum_required_clauses(
                clauses.into_iter().map(|c| (tq::Occur::Must, c)).collect(),
                0,
            )),
            Operator::Or => {
                let min = match msm {
                    Some(spec) => min_should_match(n, spec).map_err(shard_error)?,
                    None => 1,
                };
                if min > n {
                    return Ok(none());
                }
                Box::new(BooleanQuery::with_minimum_required_clauses(
                    clauses
                        .into_iter()
                        .map(|c| (tq::Occur::Should, c))
                        .collect(),
                    min.max(1),
                ))
            }
        };
        Ok(boosted(q, boost))
    }

    fn zero_terms(zero: ZeroTerms, boost: f32, score: bool) -> Q {
        match zero {
            ZeroTerms::None => none(),
            ZeroTerms::All => {
                if score {
                    boosted(all(), boost)
                } else {
                    all()
                }
            }
        }
    }

    fn match_query(&self, m: &MatchQuery, score: bool, kind: MatchKind) -> EsResult<Q> {
        let as_dsl = || match kind {
            MatchKind::Boolean => Query::Match(m.clone()),
            MatchKind::BoolPrefix => Query::MatchBoolPrefix(m.clone()),
        };
        if let Some(q) = self.keyed_first(&m.field, as_dsl, score)? {
            return Ok(q);
        }
        let target = self.resolve_lenient(&m.field, "match", m.lenient)?;
        let (field, def) = match &target {
            Target::Missing => return Ok(none()),
            Target::Meta(_) => return self.exact(&target, &m.query, m.boost, score, m.lenient),
            Target::Field(f, d) => (*f, *d),
        };
        if def.storage() != Storage::Text {
            if crate::searchable::doc_values_only(def) && def.storage() == Storage::Keyword {
                let s = self.normalize(def, &scalar_string(&m.query))?;
                let distance = m.fuzziness.map_or(0, |fz| fz.distance(&s));
                let q = if kind == MatchKind::BoolPrefix {
                    self.prefix_range(field, &s, true)
                } else if distance > 0 {
                    column_fuzzy(def, &s, distance, m.prefix_length, m.fuzzy_transpositions)
                } else {
                    return self.exact(&target, &m.query, m.boost, score, m.lenient);
                };
                return Ok(constant(q, m.boost, score));
            }
            if def.storage() == Storage::Keyword && def.index {
                let s = self.normalize(def, &scalar_string(&m.query))?;
                // ES's keyword-analyzed `match`: one prefix query, or one term query (fuzzy
                // when `fuzziness` is given), refused as the lenient parser allows.
                let multi_term = match kind {
                    MatchKind::BoolPrefix => Some("prefix"),
                    MatchKind::Boolean => m.fuzziness.map(|_| "fuzzy"),
                };
                if let Some(query) = multi_term {
                    if let Err(e) = self.check_multi_term(query, Some(def), &s) {
                        return self.value_error(e, m.lenient);
                    }
                }
                if kind == MatchKind::BoolPrefix {
                    return Ok(constant(
                        self.prefix_range(field, &s, false),
                        m.boost,
                        score,
                    ));
                }
                if let Some(options) = FuzzyOptions::of_match(m, &s) {
                    let q = self.fuzzy_term(
                        Term::from_field_text(field, &s),
                        &options,
                        def.ty.constant_score(),
                        score,
                    )?;
                    return Ok(boosted(q, m.boost));
                }
            }
            return self.exact(&target, &m.query, m.boost, score, m.lenient);
        }
        let analyzer =
            self.search_analyzer(kind.name(), m.analyzer.as_deref(), &def.search_analyzer)?;
        let positions = self.analyze(analyzer, &scalar_string(&m.query))?;
        if positions.is_empty() {
            return Ok(Self::zero_terms(m.zero_terms_query, m.boost, score));
        }
        let n = positions.len();
        if let Err(e) = self.check_match_terms(def, kind, m.fuzziness.is_some(), &positions) {
            return self.value_error(e, m.lenient);
        }
        let clauses = positions
            .iter()
            .enumerate()
            .map(|(i, (_, toks))| {
                if kind == MatchKind::BoolPrefix && i + 1 == n {
                    let prefixes = toks
                        .iter()
                        .map(|t| self.text_prefix(def, field, t))
                        .collect();
                    Ok(constant(union(prefixes), 1.0, score))
                } else {
                    self.position_query((field, def), toks, Some(m), score)
                }
            })
            .collect::<EsResult<_>>()?;
        self.combine_positions(
            clauses,
            m.operator,
            m.minimum_should_match.as_deref(),
            m.boost,
        )
    }

    /// The expensive-query checks of the term queries a `match` on a text field builds, in
    /// ES's order (`MatchQueryParser`): every position but a `match_bool_prefix`'s last is a
    /// term query (fuzzy with `fuzziness`), that last one a prefix query per token.
    fn check_match_terms(
        &self,
        def: &FieldDef,
        kind: MatchKind,
        fuzzy: bool,
        positions: &[(usize, Vec<String>)],
    ) -> EsResult<()> {
        let terms = match kind {
            MatchKind::Boolean => positions.len(),
            MatchKind::BoolPrefix => positions.len() - 1,
        };
        if fuzzy && terms > 0 {
            self.check_multi_term("fuzzy", Some(def), "")?;
        }
        if kind == MatchKind::BoolPrefix {
            for tok in &positions[positions.len() - 1].1 {
                self.check_multi_term("prefix", Some(def), tok)?;
            }
        }
        Ok(())
    }

    fn phrase(&self, p: &PhraseQuery, score: bool, prefix: bool, lenient: bool) -> EsResult<Q> {
        if let Some(q) = self.keyed_first(&p.field, || Query::MatchPhrase(p.clone()), score)? {
            return Ok(q);
        }
        let target = self.resolve_lenient(&p.field, "match_phrase", lenient)?;
        let (field, def) = match &target {
            Target::Missing => return Ok(none()),
            Target::Meta(_) => return self.exact(&target, &p.query, p.boost, score, lenient),
            Target::Field(f, d) => (*f, *d),
        };
        if def.storage() != Storage::Text {
            let searched = def.index || crate::searchable::doc_values_only(def);
            if prefix && def.storage() == Storage::Keyword && searched {
                let s = self.normalize(def, &scalar_string(&p.query))?;
                return Ok(constant(
                    self.prefix_range(field, &s, !def.index),
                    p.boost,
                    score,
                ));
            }
            return self.exact(&target, &p.query, p.boost, score, lenient);
        }
        let name = if prefix {
            "match_phrase_prefix"
        } else {
            "match_phrase"
        };
        let analyzer =
            self.search_analyzer(name, p.analyzer.as_deref(), &def.search_quote_analyzer)?;
        let positions = self.analyze(analyzer, &scalar_string(&p.query))?;
        if positions.is_empty() {
            return Ok(Self::zero_terms(p.zero_terms_query, p.boost, score));
        }
        // One position is a term query in ES (Lucene's `QueryBuilder` builds no phrase), so
        // only a longer phrase needs positions; a phrase prefix asks once it has more than one
        // token (`TextFieldType#phrasePrefixQuery`) or, on a search_as_you_type field, more
        // than one position.
        let needs_positions = if prefix && def.sayt.is_none() {
            positions.iter().map(|(_, toks)| toks.len()).sum::<usize>() > 1
        } else {
            positions.len() > 1
        };
        // ES's `TextFieldType` asks a phrase for positions before anything else, and a single
        // term for an indexed field (`failIfNotIndexed`).
        if !needs_positions {
            if let Some(e) = self.refusal(def) {
                return self.value_error(e, lenient);
            }
        }
        if needs_positions && def.ty == lode_engine::mapping::FieldType::MatchOnlyText {
            return self.source_confirmed_phrase(def, field, &positions, p, prefix, score);
        }
        if needs_positions && !lode_engine::mapping::schema_has_positions(self.ctx.schema, field) {
            // A lenient query matches nothing instead (ES's `MatchQueryParser` with `lenient`).
            return if lenient {
                Ok(none())
            } else {
                Err(without_positions(&def.path))
            };
        }
        let first = positions[0].0;
        if positions.len() == 1 {
            let toks = &positions[0].1;
            return Ok(if prefix {
                let prefixes = toks
                    .iter()
                    .map(|t| self.prefix_range(field, t, false))
                    .collect();
                constant(union(prefixes), p.boost, score)
            } else {
                boosted(
                    self.position_query((field, def), toks, None, score)?,
                    p.boost,
                )
            });
        }
        // A `search_as_you_type` field answers a phrase prefix of up to `max_shingle_size`
        // consecutive words from its `._index_prefix` field: the words joined by spaces are
        // the start of one indexed shingle (ES's `SearchAsYouTypeFieldType#phrasePrefixQuery`).
        if prefix
            && def
                .sayt
                .is_some_and(|s| positions.len() <= s.max_shingle_size)
            && positions
                .iter()
                .enumerate()
                .all(|(i, (pos, toks))| pos - first == i && toks.len() == 1)
        {
            let joined = positions
                .iter()
                .map(|(_, toks)| toks[0].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if let Some(pf) = self.sayt_prefix_field(def, &joined) {
                let q = term_query(
                    Term::from_field_text(pf, &joined),
                    IndexRecordOption::WithFreqs,
                );
                return Ok(bm25(q, p.boost, score));
            }
        }
        // Phrases take the first token of each position.
        let terms: Vec<(usize, Term)> = positions
            .iter()
            .map(|(pos, toks)| (pos - first, Term::from_field_text(field, &toks[0])))
            .collect();
        let q: Q = if prefix {
            let mut q = PhrasePrefixQuery::new_with_offset(terms);
            q.set_max_expansions(p.max_expansions.max(1));
            Box::new(q)
        } else {
            Box::new(TPhraseQuery::new_with_offset_and_slop(terms, p.slop))
        };
        Ok(bm25(q, p.boost, score))
    }

    /// ES's `SourceConfirmedTextQuery` for a phrase on a `match_only_text` field (see
    /// `crate::source_confirmed`): the documents with every term (the last one's prefix
    /// range for a phrase prefix), confirmed from `_source`, scored by the boost.
    fn source_confirmed_phrase(
        &self,
        def: &FieldDef,
        field: Field,
        positions: &[(usize, Vec<String>)],
        p: &PhraseQuery,
        prefix: bool,
        score: bool,
    ) -> EsResult<Q> {
        if !self.ctx.mapping.source_enabled {
            let why = format!(
                "Field [{}] of type [match_only_text] cannot run positional queries since [_source] is disabled.",
                def.path
            );
            return Err(shard_error(&why).caused_by(EsError::illegal_argument(why)));
        }
        let first = positions[0].0;
        let last = positions.len() - 1;
        let terms: Vec<(usize, String)> = positions
            .iter()
            .map(|(pos, toks)| (pos - first, toks[0].clone()))
            .collect();
        let candidates: Vec<(tq::Occur, Q)> = terms
            .iter()
            .enumerate()
            .map(|(i, (_, t))| {
                let q = if prefix && i == last {
                    self.prefix_range(field, t, false)
                } else {
                    term_query(Term::from_field_text(field, t), IndexRecordOption::Basic)
                };
                (tq::Occur::Must, q)
            })
            .collect();
        let check = crate::source_confirmed::PhraseCheck {
            analyzer: self
                .ctx
                .analysis
                .analyzer(&def.analyzer)
                .map_err(analysis_error)?,
            terms,
            slop: p.slop,
            prefix_last: prefix,
        };
        let pred: crate::runtime::Pred =
            std::sync::Arc::new(move |vals: &[Value]| check.matches(vals));
        // A multi-field's values are its parent's in `_source`.
        let source_path = def.parent.as_deref().unwrap_or(&def.path);
        let confirm: Q = Box::new(crate::script::ScriptQuery {
            script: crate::script::DocFilter::Runtime(
                std::sync::Arc::new(crate::runtime::RuntimeField::from_source_keyword(
                    source_path,
                )),
                pred,
            ),
            fields: crate::script::fields_of(self.ctx.mapping),
            runtime: self.ctx.runtime.clone(),
            errors: self.ctx.script_errors.clone(),
            boost: 1.0,
            level: self.script_level(),
        });
        let mut clauses = candidates;
        clauses.push((tq::Occur::Must, confirm));
        let q: Q = Box::new(BooleanQuery::new(clauses));
        Ok(constant(q, p.boost, score))
    }

    /// `fields` patterns (none: `index.query.default_field`) → concrete field paths with
    /// boosts; the flag tells whether `*` was used, which makes queries lenient as in ES.
    fn expand_fields(&self, patterns: &[FieldBoost]) -> (Vec<(String, f32)>, bool) {
        let default = index_default_fields(self.ctx);
        let patterns = if patterns.is_empty() {
            &default[..]
        } else {
            patterns
        };
        let mut out: Vec<(String, f32)> = Vec::new();
        let mut all_fields = false;
        for fb in patterns {
            if fb.pattern.contains('*') {
                all_fields |= fb.pattern == "*";
                for def in self.ctx.mapping.matching_fields(&fb.pattern) {
                    if !matches!(
                        def.storage(),
                        Storage::None | Storage::Completion | Storage::Range | Storage::GeoPoint
                    )
                        // ES's `QueryParserHelper#resolveMappingField` expands to indexed
                        // fields only ("doc-value-only fields search very slowly").
                        && def.index
                        // A `search_as_you_type` field's subfields are internal (ES's
                        // `mayExistInIndex` is false for them): patterns skip them.
                        && def.sayt.is_none_or(|s| s.role == SaytRole::Root)
                        && !out.iter().any(|(p, _)| *p == def.path)
                    {
                        out.push((def.path.clone(), fb.boost));
                    }
                }
            } else if !out.iter().any(|(p, _)| *p == fb.pattern) {
                out.push((fb.pattern.clone(), fb.boost));
            }
        }
        (out, all_fields)
    }

    fn multi_match(&self, m: &MultiMatchQuery, score: bool) -> EsResult<Q> {
        let (fields, all_fields) = self.expand_fields(&m.fields);
        let lenient = m.lenient || all_fields;
        if fields.is_empty() {
            return Ok(none());
        }
        if m.kind == MultiMatchType::CrossFields {
            return self.cross_fields(m, &fields, lenient, score);
        }
        let mut queries = Vec::with_capacity(fields.len());
        for (path, fboost) in &fields {
            let q = match m.kind {
                MultiMatchType::Phrase | MultiMatchType::PhrasePrefix => {
                    let p = PhraseQuery {
                        field: path.clone(),
                        query: m.query.clone(),
                        slop: m.slop,
                        analyzer: m.analyzer.clone(),
                        zero_terms_query: m.zero_terms_query,
                        max_expansions: m.max_expansions,
                        boost: *fboost,
                    };
                    self.phrase(&p, score, m.kind == MultiMatchType::PhrasePrefix, lenient)
                }
                _ => {
                    let mq = MatchQuery {
                        field: path.clone(),
                        query: m.query.clone(),
                        operator: m.operator,
                        minimum_should_match: m.minimum_should_match.clone(),
                        fuzziness: m.fuzziness,
                        prefix_length: m.prefix_length,
                        max_expansions: m.max_expansions,
                        fuzzy_transpositions: m.fuzzy_transpositions,
                        fuzzy_rewrite: m.fuzzy_rewrite.clone(),
                        analyzer: m.analyzer.clone(),
                        lenient,
                        zero_terms_query: m.zero_terms_query,
                        boost: *fboost,
                    };
                    let kind = if m.kind == MultiMatchType::BoolPrefix {
                        MatchKind::BoolPrefix
                    } else {
                        MatchKind::Boolean
                    };
                    self.match_query(&mq, score, kind)
                }
            };
            match q {
                Ok(q) => queries.push(q),
                Err(_) if lenient => {}
                Err(e) => return Err(e),
            }
        }
        let combined = match m.kind {
            MultiMatchType::MostFields | MultiMatchType::BoolPrefix => sum(queries),
            _ => dis_max(queries, m.tie_breaker.unwrap_or(0.0), score),
        };
        Ok(boosted(combined, m.boost))
    }

    /// Term-centric matching: each query term may match in any of the fields (fields that
    /// share a search analyzer form one group; the term's per-field scores combine with
    /// dis_max). Unlike ES, IDFs are not blended across fields.
    fn cross_fields(
        &self,
        m: &MultiMatchQuery,
        fields: &[(String, f32)],
        lenient: bool,
        score: bool,
    ) -> EsResult<Q> {
        let mut groups: BTreeMap<String, Vec<(Field, f32, bool)>> = BTreeMap::new();
        let mut others: Vec<(String, f32)> = Vec::new();
        for (path, boost) in fields {
            match self.resolve(path) {
                // A text field that is not indexed goes with the others: `exact` refuses it.
                Target::Field(f, def) if def.storage() == Storage::Text && def.index => {
                    let analyzer = m
                        .analyzer
                        .clone()
                        .unwrap_or_else(|| def.search_analyzer.clone());
                    groups
                        .entry(analyzer)
                        .or_default()
                        .push((f, *boost, def.ty.constant_score()));
                }
                Target::Missing => {}
                _ => others.push((path.clone(), *boost)),
            }
        }
        let tie = m.tie_breaker.unwrap_or(0.0);
        let text = scalar_string(&m.query);
        let mut parts = Vec::new();
        for (analyzer, group) in &groups {
            let positions = self.analyze(analyzer, &text)?;
            if positions.is_empty() {
                continue;
            }
            let clauses = positions
                .iter()
                .map(|(_, toks)| {
                    let per_token = toks
                        .iter()
                        .map(|tok| {
                            let per_field = group
                                .iter()
                                .map(|(f, b, constant_score)| {
                                    let term = Term::from_field_text(*f, tok);
                                    let q = match FuzzyOptions::of_multi_match(m, tok) {
                                        Some(options) => {
                                            self.fuzzy_term(term, &options, *constant_score, score)?
                                        }
                                        None => term_clause(term, *constant_score, score),
                                    };
                                    Ok(if score { boosted(q, *b) } else { q })
                                })
                                .collect::<EsResult<_>>()?;
                            Ok(dis_max(per_field, tie, score))
                        })
                        .collect::<EsResult<_>>()?;
                    Ok(union(per_token))
                })
                .collect::<EsResult<_>>()?;
            parts.push(self.combine_positions(
                clauses,
                m.operator,
                m.minimum_should_match.as_deref(),
                1.0,
            )?);
        }
        for (path, boost) in &others {
            let target = self.resolve(path);
            match self.exact(&target, &m.query, *boost, score, lenient) {
                Ok(q) => parts.push(q),
                Err(_) if lenient => {}
                Err(e) => return Err(e),
            }
        }
        if parts.is_empty() {
            return Ok(Self::zero_terms(m.zero_terms_query, m.boost, score));
        }
        Ok(boosted(dis_max(parts, tie, score), m.boost))
    }

    // ------------------------------------------------------------------------------------------
    // Compound

    fn bool_query(&self, b: &BoolQuery, score: bool) -> EsResult<Q> {
        // Lucene's `BooleanQuery.Builder#add` refuses a clause beyond the limit, which ES
        // reports while creating the query.
        let clauses = b.must.len() + b.filter.len() + b.should.len() + b.must_not.len();
        if clauses > self.ctx.max_clause_count {
            let why = format!("maxClauseCount is set to {}", self.ctx.max_clause_count);
            return Err(shard_error(&why).caused_by(EsError::bad_request("too_many_clauses", why)));
        }
        let must = b
            .must
            .iter()
            .map(|q| self.build(q, score))
            .collect::<EsResult<Vec<_>>>()?;
        let filter = b
            .filter
            .iter()
            .map(|q| self.build(q, false))
            .collect::<EsResult<Vec<_>>>()?;
        let should = b
            .should
            .iter()
            .map(|q| self.build(q, score))
            .collect::<EsResult<Vec<_>>>()?;
        let must_not = b
            .must_not
            .iter()
            .map(|q| self.build(q, false))
            .collect::<EsResult<Vec<_>>>()?;
        self.combine_bool(
            must,
            filter,
            should,
            must_not,
            b.minimum_should_match.as_deref(),
            b.boost,
            score,
        )
    }

    /// ES bool semantics: without must/filter at least one should must match, otherwise
    /// should clauses only add score (unless `minimum_should_match`); filter and must_not do
    /// not score; a bool of only must_not matches every other document (score 0); an empty
    /// bool matches everything (score 1).
    #[allow(clippy::too_many_arguments)]
    fn combine_bool(
        &self,
        mut must: Vec<Q>,
        mut filter: Vec<Q>,
        should: Vec<Q>,
        must_not: Vec<Q>,
        msm: Option<&str>,
        boost: f32,
        score: bool,
    ) -> EsResult<Q> {
        let n_should = should.len();
        let min = match msm {
            Some(spec) => min_should_match(n_should, spec).map_err(shard_error)?,
            None => usize::from(must.is_empty() && filter.is_empty() && n_should > 0),
        };
        if min > n_should {
            return Ok(none());
        }
        if must.is_empty() && filter.is_empty() && should.is_empty() {
            if must_not.is_empty() {
                return Ok(if score { boosted(all(), boost) } else { all() });
            }
            filter.push(all());
        }
        // Clauses that only filter are ANDed together as bitsets where they are dense
        // (`FilterConjunction`); profiled clauses keep their own nodes in the profile tree.
        let is_script = |q: &Q| q.downcast_ref::<crate::script::ScriptQuery>().is_some();
        let filtering =
            |q: &Q| !is_script(q) && q.downcast_ref::<crate::profile::ProfiledQuery>().is_none();
        if !score {
            filter.append(&mut must);
        }
        let (grouped, mut filter): (Vec<Q>, Vec<Q>) = filter.into_iter().partition(filtering);
        match grouped.len() {
            0 => {}
            1 => filter.extend(grouped),
            _ => filter.push(Box::new(crate::conjunction::FilterConjunction::new(
                grouped,
            ))),
        }
        // Single-clause shortcuts.
        if must_not.is_empty() && should.is_empty() {
            if must.len() == 1 && filter.is_empty() {
                return Ok(boosted(must.pop().expect("one clause"), boost));
            }
            if must.is_empty() && filter.len() == 1 {
                return Ok(constant(filter.pop().expect("one clause"), 0.0, score));
            }
        }
        let mut clauses: Vec<(tq::Occur, Q)> =
            Vec::with_capacity(must.len() + filter.len() + n_should + must_not.len());
        // Script filters go last: tantivy aligns a conjunction's clauses in this order, so a
        // script is then only asked about documents the other clauses already proposed (as
        // Lucene's two-phase iteration asks it), never about ones they exclude.
        let mut required: Vec<(bool, Q)> = must
            .into_iter()
            .map(|q| (is_script(&q), q))
            .chain(
                filter
                    .into_iter()
                    .map(|q| (is_script(&q), constant(q, 0.0, score))),
            )
            .collect();
        required.sort_by_key(|(late, _)| *late);
        clauses.extend(required.into_iter().map(|(_, q)| (tq::Occur::Must, q)));
        clauses.extend(should.into_iter().map(|q| (tq::Occur::Should, q)));
        clauses.extend(must_not.into_iter().map(|q| (tq::Occur::MustNot, q)));
        let q: Q = Box::new(BooleanQuery::with_minimum_required_clauses(clauses, min));
        Ok(if score { boosted(q, boost) } else { q })
    }

    // ------------------------------------------------------------------------------------------
    // function_score

    fn function_score(&self, f: &FunctionScoreQuery, score: bool) -> EsResult<Q> {
        if !score && f.min_score.is_none() {
            return self.build(&f.query, false);
        }
        let query = self.build(&f.query, true)?;
        let functions = f
            .functions
            .iter()
            .map(|func| {
                Ok(PlannedFunction {
                    filter: func
                        .filter
                        .as_ref()
                        .map(|q| self.build(q, false))
                        .transpose()?,
                    weight: func.weight.unwrap_or(1.0),
                    kind: self.compile_function(&func.kind)?,
                })
            })
            .collect::<EsResult<Vec<_>>>()?;
        let q: Q = Box::new(FunctionScoreQueryImpl {
            query,
            functions,
            score_mode: f.score_mode,
            boost_mode: f.boost_mode,
            max_boost: f.max_boost,
            min_score: f.min_score,
        });
        Ok(if score { boosted(q, f.boost) } else { q })
    }

    /// The numeric fast field a function reads; `Ok(None)` when unmapped.
    fn numeric_field(
        &self,
        name: &str,
        function: &str,
    ) -> EsResult<Option<(NumericField, &'a FieldDef)>> {
        match self.resolve(name) {
            Target::Field(_, def) if matches!(def.storage(), Storage::I64 | Storage::F64) => {
                if !def.doc_values {
                    return Err(shard_exception(format!(
                        "[{function}] can only be used on fields with doc values, but [{name}] has none"
                    )));
                }
                Ok(Some((
                    NumericField {
                        name: def.path.clone(),
                        float: def.storage() == Storage::F64,
                    },
                    def,
                )))
            }
            Target::Field(_, def) => Err(shard_exception(format!(
                "field [{name}] is of type [{}], but only numeric types are supported.",
                def.ty.name()
            ))),
            Target::Meta(_) => Err(shard_exception(format!(
                "field [{name}] is a metadata field; only numeric fields are supported."
            ))),
            Target::Missing => Ok(None),
        }
    }

    fn compile_function(&self, kind: &FunctionKind) -> EsResult<Compiled> {
        Ok(match kind {
            FunctionKind::Weight => Compiled::Const,
            FunctionKind::ScriptScore { script } => Compiled::Script {
                script: script.program.clone(),
                fields: crate::script::fields_of(self.ctx.mapping),
                runtime: self.ctx.runtime.clone(),
                errors: self.ctx.script_errors.clone(),
            },
            FunctionKind::RandomScore { seed } => Compiled::Random {
                seed: match seed {
                    Some(s) => *s as u64,
                    None => rand::random::<u64>(),
                },
            },
            FunctionKind::FieldValueFactor {
                field,
                factor,
                modifier,
                missing,
            } => {
                let resolved = self.numeric_field(field, "field_value_factor")?;
                if resolved.is_none() && missing.is_none() {
                    return Err(shard_exception(format!(
                        "Unable to find a field mapper for field [{field}]. No 'missing' value defined."
                    )));
                }
                Compiled::FieldValueFactor {
                    field: resolved.map(|(f, _)| f),
                    factor: f64::from(*factor),
                    modifier: *modifier,
                    missing: *missing,
                }
            }
            FunctionKind::Decay {
                shape,
                field,
                origin,
                scale,
                offset,
                decay,
            } => {
                let (numeric, def) =
                    self.numeric_field(field, "decay function")?
                        .ok_or_else(|| {
                            EsError::bad_request(
                                "parse_exception",
                                format!("unknown field [{field}]"),
                            )
                        })?;
                let (origin, scale, offset) = if def.ty.is_date() {
                    let origin = match origin {
                        Some(v) => self.date_millis(v, &def.date_format, &Tz::utc(), false)?,
                        None => self.ctx.now_millis,
                    };
                    let duration = |v: &Value| -> EsResult<f64> {
                        match v {
                            Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0)),
                            other => parse_time_value(&scalar_string(other))
                                .map(|ms| ms as f64)
                                .map_err(|e| EsError::bad_request("parse_exception", e.reason)),
                        }
                    };
                    (
                        origin as f64,
                        duration(scale)?,
                        offset.as_ref().map(duration).transpose()?.unwrap_or(0.0),
                    )
                } else {
                    let number = |v: &Value| -> EsResult<f64> {
                        match values::parse_num(v).map_err(shard_error)? {
                            values::Num::Int(i) => Ok(i as f64),
                            values::Num::Float(x) => Ok(x),
                        }
                    };
                    let origin = origin.as_ref().ok_or_else(|| {
                        EsError::parsing(format!("[{field}] decay function requires an origin"))
                    })?;
                    (
                        number(origin)?,
                        number(scale)?,
                        offset.as_ref().map(number).transpose()?.unwrap_or(0.0),
                    )
                };
                if scale <= 0.0 {
                    return Err(EsError::illegal_argument(format!(
                        "[scale] must be greater than 0 for decay function on [{field}]"
                    )));
                }
                Compiled::Decay {
                    field: numeric,
                    shape: *shape,
                    origin,
                    scale,
                    offset,
                    decay: *decay,
                }
            }
        })
    }

    // ------------------------------------------------------------------------------------------
    // Query strings

    fn query_string(&self, qs: &QueryStringQuery, score: bool, simple: bool) -> EsResult<Q> {
        let defaults = qs_default_fields(qs, self.ctx);
        let all_fields = defaults.iter().any(|f| f.pattern == "*");
        let opts = QsOptions {
            qs,
            defaults,
            lenient: qs
                .lenient
                .unwrap_or(all_fields || self.ctx.query_string_lenient),
            simple,
        };
        let msm = qs.minimum_should_match.as_deref();
        let q = self.qs_node(&qs.tree, None, &opts, score, msm)?;
        Ok(boosted(q, qs.boost))
    }

    fn qs_node(
        &self,
        node: &QsNode,
        scope: Option<&str>,
        o: &QsOptions,
        score: bool,
        msm: Option<&str>,
    ) -> EsResult<Q> {
        match node {
            QsNode::MatchNone => Ok(none()),
            QsNode::MatchAll { boost } => Ok(if score { boosted(all(), *boost) } else { all() }),
            QsNode::Scoped { field, node } => self.qs_node(node, Some(field), o, score, msm),
            QsNode::Bool { clauses, boost } => {
                let (mut must, mut should, mut must_not) = (Vec::new(), Vec::new(), Vec::new());
                for (occur, child) in clauses {
                    match occur {
                        Occur::Must => must.push(self.qs_node(child, scope, o, score, None)?),
                        Occur::Should => should.push(self.qs_node(child, scope, o, score, None)?),
                        Occur::MustNot => {
                            must_not.push(self.qs_node(child, scope, o, false, None)?)
                        }
                    }
                }
                self.combine_bool(must, Vec::new(), should, must_not, msm, *boost, score)
            }
            QsNode::Leaf { field, term, boost } => {
                let patterns: Vec<FieldBoost> = match field.as_deref().or(scope) {
                    Some(f) => vec![FieldBoost::parse(f)],
                    None => o.defaults.clone(),
                };
                if matches!(term, QsTerm::Exists) && patterns.iter().any(|p| p.pattern == "*") {
                    return Ok(if score { boosted(all(), *boost) } else { all() });
                }
                if let QsTerm::Regex(r) = term {
                    check_regex_length(r, self.ctx.max_regex_length)?;
                }
                let (fields, all_fields) = self.expand_fields(&patterns);
                let lenient = o.lenient || all_fields;
                let mut queries = Vec::with_capacity(fields.len());
                for (path, fboost) in &fields {
                    match self.qs_leaf(path, term, o, lenient, score, msm) {
                        Ok(q) => queries.push(boosted(q, *fboost)),
                        Err(_) if lenient => {}
                        Err(e) => return Err(e),
                    }
                }
                let combined = if o.simple || o.qs.kind == MultiMatchType::MostFields {
                    sum(queries)
                } else {
                    dis_max(queries, o.qs.tie_breaker.unwrap_or(0.0), score)
                };
                Ok(boosted(combined, *boost))
            }
        }
    }

    /// The DSL leaves of a query string tree (see [`query_string_leaves`]).
    fn qs_leaves(
        &self,
        node: &QsNode,
        scope: Option<&str>,
        qs: &QueryStringQuery,
        defaults: &[FieldBoost],
        out: &mut Vec<Query>,
    ) {
        match node {
            QsNode::Scoped { field, node } => self.qs_leaves(node, Some(field), qs, defaults, out),
            QsNode::Bool { clauses, .. } => {
                for (occur, child) in clauses {
                    if *occur != Occur::MustNot {
                        self.qs_leaves(child, scope, qs, defaults, out);
                    }
                }
            }
            QsNode::Leaf { field, term, .. } => {
                let patterns: Vec<FieldBoost> = match field.as_deref().or(scope) {
                    Some(f) => vec![FieldBoost::parse(f)],
                    None => defaults.to_vec(),
                };
                let (fields, _) = self.expand_fields(&patterns);
                for (path, _) in &fields {
                    out.extend(self.qs_leaf_dsl(path, term, qs));
                }
            }
            QsNode::MatchAll { .. } | QsNode::MatchNone => {}
        }
    }

    /// The DSL query a query string leaf is on `path` (ranges and `exists` have no terms).
    fn qs_leaf_dsl(&self, path: &str, term: &QsTerm, qs: &QueryStringQuery) -> Option<Query> {
        let is_text =
            matches!(self.resolve(path), Target::Field(_, d) if d.storage() == Storage::Text);
        let normalize = |s: &str| {
            if is_text {
                s.to_lowercase()
            } else {
                s.to_string()
            }
        };
        let pattern = |value: String| PatternQuery {
            field: path.to_string(),
            value,
            case_insensitive: false,
            boost: 1.0,
        };
        Some(match term {
            QsTerm::Term(text) => {
                let mut m = MatchQuery::new(path, Value::String(text.clone()));
                m.analyzer = qs.analyzer.clone();
                m.lenient = true;
                Query::Match(m)
            }
            QsTerm::Phrase { text, slop } => {
                let mut p = PhraseQuery::new(path, Value::String(text.clone()));
                p.slop = slop.unwrap_or(qs.phrase_slop);
                p.analyzer = qs.quote_analyzer.clone().or_else(|| qs.analyzer.clone());
                Query::MatchPhrase(p)
            }
            QsTerm::Prefix(p) => Query::Prefix(pattern(normalize(p))),
            QsTerm::Wildcard(p) => Query::Wildcard(pattern(normalize(p))),
            QsTerm::Regex(r) => Query::Regexp(pattern(r.clone())),
            QsTerm::Fuzzy { text, fuzziness } => Query::Fuzzy(FuzzyQuery {
                field: path.to_string(),
                value: Value::String(normalize(text)),
                fuzziness: fuzziness.unwrap_or(qs.fuzziness),
                prefix_length: qs.fuzzy_prefix_length,
                max_expansions: qs.fuzzy_max_expansions,
                transpositions: qs.fuzzy_transpositions,
                rewrite: qs.fuzzy_rewrite.clone(),
                boost: 1.0,
            }),
            QsTerm::Range { .. } | QsTerm::Exists => return None,
        })
    }

    fn qs_leaf(
        &self,
        path: &str,
        term: &QsTerm,
        o: &QsOptions,
        lenient: bool,
        score: bool,
        msm: Option<&str>,
    ) -> EsResult<Q> {
        let qs = o.qs;
        let is_text =
            matches!(self.resolve(path), Target::Field(_, d) if d.storage() == Storage::Text);
        // Multi-term queries on text fields see the analyzer's normalization (lowercasing).
        let normalize = |s: &str| {
            if is_text {
                s.to_lowercase()
            } else {
                s.to_string()
            }
        };
        let pattern = |value: String| PatternQuery {
            field: path.to_string(),
            value,
            case_insensitive: false,
            boost: 1.0,
        };
        match term {
            QsTerm::Term(text) => {
                let mut m = MatchQuery::new(path, Value::String(text.clone()));
                m.operator = qs.default_operator;
                m.minimum_should_match = msm.map(str::to_string);
                m.analyzer = qs.analyzer.clone();
                m.lenient = lenient;
                self.match_query(&m, score, MatchKind::Boolean)
            }
            QsTerm::Phrase { text, slop } => {
                let mut p = PhraseQuery::new(path, Value::String(text.clone()));
                p.slop = slop.unwrap_or(qs.phrase_slop);
                p.analyzer = qs.quote_analyzer.clone().or_else(|| qs.analyzer.clone());
                self.phrase(&p, score, false, lenient)
            }
            QsTerm::Prefix(p) => self.prefix(&pattern(normalize(p)), score),
            QsTerm::Wildcard(p) => self.wildcard(&pattern(normalize(p)), score),
            QsTerm::Regex(r) => self.regexp(&pattern(r.clone()), score),
            QsTerm::Fuzzy { text, fuzziness } => {
                let f = FuzzyQuery {
                    field: path.to_string(),
                    value: Value::String(normalize(text)),
                    fuzziness: fuzziness.unwrap_or(qs.fuzziness),
                    prefix_length: qs.fuzzy_prefix_length,
                    max_expansions: qs.fuzzy_max_expansions,
                    transpositions: qs.fuzzy_transpositions,
                    rewrite: qs.fuzzy_rewrite.clone(),
                    boost: 1.0,
                };
                self.fuzzy(&f, score)
            }
            QsTerm::Range {
                from,
                to,
                include_lower,
                include_upper,
            } => {
                let r = RangeQuery {
                    field: path.to_string(),
                    from: from.clone().map(Value::String),
                    to: to.clone().map(Value::String),
                    include_lower: *include_lower,
                    include_upper: *include_upper,
                    format: None,
                    time_zone: qs.time_zone.clone(),
                    relation: lode_engine::range_field::Relation::Intersects,
                    boost: 1.0,
                };
                self.range(&r, score)
            }
            QsTerm::Exists => self.exists(path, 1.0, score),
        }
    }
}

/// `q` restricted to the nested documents of `path`, scored as `q`.
fn on_path(q: Q, field: Field, path: &str) -> Q {
    Box::new(BooleanQuery::new(vec![
        (tq::Occur::Must, q),
        (
            tq::Occur::Must,
            Box::new(ConstScoreQuery::new(
                crate::nested::path_query(field, path),
                0.0,
            )),
        ),
    ]))
}

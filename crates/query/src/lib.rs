//! The Query DSL: `parse` turns Elasticsearch query JSON into a typed `Query` (no tantivy
//! types), `plan` turns a `Query` into a tantivy query against one index's mapping.
//!
//! - `parse`: JSON → [`Query`], with Elasticsearch's parsing errors.
//! - `query_string`: the `query_string` (Lucene classic) and `simple_query_string` syntaxes,
//!   parsed into trees that `plan` expands over the mapping.
//! - `plan`: [`Query`] → `Box<dyn tantivy::query::Query>` ([`build_query`]): field
//!   resolution, analysis, value conversion, date math, ES scoring and bool semantics.
//! - `msm`, `values`, `patterns`, `boosting`: `minimum_should_match`, value conversion,
//!   wildcard/regexp translation, and the `boosting` query tantivy lacks.
//! - `stats`: [`FieldStatistics`], BM25 statistics per field as Lucene computes them; every
//!   search that scores builds its weights with it, for Elasticsearch's scores.
//!
//! Supported queries: match_all, match_none, term, terms, range, match, match_phrase,
//! match_phrase_prefix, match_bool_prefix, multi_match (all types; cross_fields without
//! blended IDF), combined_fields, bool, ids, exists, prefix, wildcard, regexp, fuzzy,
//! constant_score, dis_max, boosting, query_string, simple_query_string, nested (on the
//! flattened fields), wrapper, script (a Painless filter verified last) and script_score.

// `EsError` is the workspace-wide error type; its size is a deliberate trade-off.
#![allow(clippy::result_large_err)]

mod boosting;
mod column_exists;
mod column_pattern;
mod column_terms;
pub mod conjunction;
mod constant_keyword;
mod derived_terms;
mod early_stop;
pub mod expensive;
mod function_score;
mod fuzzy;
mod gathering;
pub mod geo;
mod min_score;
mod msm;
pub mod named;
pub mod nested;
mod norms;
mod parse;
mod patterns;
mod plan;
pub mod points;
pub mod profile;
mod query_string;
mod range_field;
mod reversed_terms;
mod term_arena;
pub use range_field::RangeFieldQuery;
pub mod runtime;
pub mod script;
mod searchable;
mod slice;
mod source_confirmed;
mod stats;
mod term_set;
mod top_score;
mod values;

/// proptest strategies shared with lode-engine and lode-api (one file, test builds only).
#[cfg(test)]
#[path = "../../engine/src/testing/arb_json.rs"]
mod arb_json;
#[cfg(test)]
mod msm_pruning_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod top_score_tests;

pub use early_stop::{
    matches_every_doc, planned_match_all, unwatched, watched_like, EarlyStopQuery, Stopped,
    TokenCheck,
};
pub use expensive::{allow_expensive_queries, set_allow_expensive_queries};
pub use min_score::MinScoreQuery;
pub use msm::min_should_match;
pub use parse::{
    parse_fuzziness, parse_query, BoolQuery, BoostMode, CompiledScript, DecayShape, FieldBoost,
    FunctionKind, FunctionScoreQuery, Fuzziness, FuzzyQuery, MatchQuery, Modifier, MultiMatchQuery,
    MultiMatchType, Operator, PatternQuery, PhraseQuery, Query, QueryStringQuery, RangeQuery,
    ScoreFunction, ScoreMode, TermQuery, TermsLookup, TermsQuery, ZeroTerms,
};
pub use plan::{
    build_filter, build_nested_children, build_query, build_query_profiled, query_string_leaves,
};
pub use query_string::{Occur, QsNode, QsTerm};
pub use script::{DocColumns, ScriptErrors};
pub use slice::IdSliceQuery;
pub use stats::FieldStatistics;
pub use term_set::TermSetLookup;
pub use top_score::TopScoreCarried;

use lode_analysis::AnalysisRegistry;
use lode_engine::mapping::Mapping;
use lode_engine::schema::MetaFields;
use tantivy::schema::Schema;

/// Everything planning needs to know about the index being searched.
#[derive(Clone)]
pub struct QueryContext<'a> {
    pub mapping: &'a Mapping,
    pub schema: &'a Schema,
    pub meta: MetaFields,
    pub analysis: &'a AnalysisRegistry,
    /// "now" for date math, fixed once per request.
    pub now_millis: i64,
    pub max_terms_count: usize,
    /// `index.max_regex_length`.
    pub max_regex_length: usize,
    /// Lucene's max clause count (`indices.query.bool.max_clause_count`).
    pub max_clause_count: usize,
    /// `index.query_string.lenient`.
    pub query_string_lenient: bool,
    /// `index.query.default_field` (empty: every field, `*`).
    pub default_fields: std::sync::Arc<Vec<String>>,
    /// The terms of `terms` lookups, fetched by the caller before planning.
    pub terms_lookups: Option<&'a TermsLookups>,
    /// Where scripts record the first runtime error; the caller fails the request with it
    /// after searching ([`take_script_error`]).
    pub script_errors: ScriptErrors,
    /// The request's runtime fields (`runtime_mappings`); they shadow mapped fields.
    pub runtime: runtime::RuntimeFields,
    /// `search.allow_expensive_queries` when the request started ([`expensive`]).
    pub allow_expensive_queries: bool,
}

/// Lode's default max clause count (see docs/compatibility.md: ES 8 derives its default
/// from the heap and the search thread pool, never below 1024).
pub const MAX_CLAUSE_COUNT: usize = 4096;

static CLAUSE_LIMIT: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(MAX_CLAUSE_COUNT);

/// Sets the node's max clause count (`indices.query.bool.max_clause_count`), process-wide as
/// Lucene's `IndexSearcher#setMaxClauseCount`.
/// The explanation of a weight whose score is its scorer's (a constant, a computed join):
/// `description` with the score its scorer gives `doc`, or tantivy's error when `doc` does
/// not match.
pub(crate) fn explain_by_seek(
    weight: &dyn tantivy::query::Weight,
    reader: &tantivy::SegmentReader,
    doc: tantivy::DocId,
    description: &'static str,
) -> tantivy::Result<tantivy::query::Explanation> {
    use tantivy::DocSet;
    let mut scorer = weight.scorer(reader, 1.0)?;
    if scorer.seek(doc) != doc {
        return Err(tantivy::TantivyError::InvalidArgument(format!(
            "Document #({doc}) does not match"
        )));
    }
    Ok(tantivy::query::Explanation::new(
        description,
        scorer.score(),
    ))
}

pub fn set_max_clause_count(n: usize) {
    CLAUSE_LIMIT.store(n, std::sync::atomic::Ordering::Relaxed);
}

/// The node's max clause count.
pub fn max_clause_count() -> usize {
    CLAUSE_LIMIT.load(std::sync::atomic::Ordering::Relaxed)
}

/// The first runtime error a script of this request hit, if any.
pub fn take_script_error(ctx: &QueryContext) -> Option<lode_engine::EsError> {
    ctx.script_errors.lock().take()
}

/// Terms fetched for each `terms` lookup of a request.
pub type TermsLookups = std::collections::HashMap<TermsLookup, Vec<serde_json::Value>>;

/// Whether `q` matches every document (scores aside): `match_all`, and compounds that only
/// wrap match-all clauses (an empty `bool`, a `bool` of match-all must/filter clauses,
/// `constant_score` of match-all).
pub fn is_match_all(q: &Query) -> bool {
    match q {
        Query::MatchAll { .. } => true,
        Query::ConstantScore { filter, .. } => is_match_all(filter),
        Query::Bool(b) => {
            b.must_not.is_empty()
                && b.minimum_should_match.is_none()
                && b.must.iter().chain(&b.filter).all(is_match_all)
                && (b.should.is_empty()
                    || !b.must.is_empty()
                    || !b.filter.is_empty()
                    || b.should.iter().any(is_match_all))
        }
        Query::Nested { query, .. } => is_match_all(query),
        Query::QueryString(qs) | Query::SimpleQueryString(qs) => {
            matches!(qs.tree, QsNode::MatchAll { .. })
        }
        _ => false,
    }
}

/// Whether `q` uses date math relative to `now`, or is otherwise not repeatable (an unseeded
/// `random_score`): such results must not be cached across requests. Conservative: any
/// range bound or query-string range mentioning `now` counts.
pub fn uses_now(q: &Query) -> bool {
    let mentions_now = |v: &Option<serde_json::Value>| {
        v.as_ref()
            .and_then(|v| v.as_str())
            .is_some_and(|s| s.contains("now"))
    };
    match q {
        Query::Range(r) => mentions_now(&r.from) || mentions_now(&r.to),
        Query::Term(t) => t.value.as_str().is_some_and(|s| s.starts_with("now")),
        Query::Terms(t) => t
            .values
            .iter()
            .any(|v| v.as_str().is_some_and(|s| s.starts_with("now"))),
        Query::Match(m) | Query::MatchBoolPrefix(m) => {
            m.query.as_str().is_some_and(|s| s.starts_with("now"))
        }
        Query::Bool(b) => b
            .must
            .iter()
            .chain(&b.filter)
            .chain(&b.should)
            .chain(&b.must_not)
            .any(uses_now),
        Query::ConstantScore { filter, .. } => uses_now(filter),
        Query::DisMax { queries, .. } => queries.iter().any(uses_now),
        Query::Boosting {
            positive, negative, ..
        } => uses_now(positive) || uses_now(negative),
        Query::Nested { query, .. } => uses_now(query),
        Query::FunctionScore(f) => {
            uses_now(&f.query)
                || f.functions.iter().any(|func| {
                    func.filter.as_ref().is_some_and(uses_now)
                        || matches!(&func.kind, FunctionKind::Decay { origin: None, .. })
                        || matches!(&func.kind, FunctionKind::RandomScore { seed: None })
                })
        }
        Query::QueryString(qs) | Query::SimpleQueryString(qs) => qs.tree.uses_now(),
        _ => false,
    }
}

/// The number of documents of `reader` that the planned query `q` matches, when it is known
/// without visiting them (Lucene's `Weight#count` contract: an answer only when it is cheap):
/// `match_all`, and a lone range the points index counts. `None` otherwise.
pub fn cheap_count(
    q: &dyn tantivy::query::Query,
    reader: &tantivy::SegmentReader,
) -> tantivy::Result<Option<u32>> {
    if let Some(watched) = q.downcast_ref::<EarlyStopQuery>().and_then(|w| w.watched()) {
        return cheap_count(watched, reader);
    }
    if q.downcast_ref::<tantivy::query::AllQuery>().is_some() {
        return Ok(Some(reader.num_docs()));
    }
    match q.downcast_ref::<points::PointRangeQuery>() {
        Some(range) => range.cheap_count(reader),
        None => Ok(None),
    }
}

/// The range `q` matches as, seen through a cancellation-only watch and a constant score (a
/// `bool` of one `filter`): its matches are exactly the documents with a value of the range's
/// field inside its bounds.
pub fn sole_point_range(q: &dyn tantivy::query::Query) -> Option<&points::PointRangeQuery> {
    if let Some(watched) = q.downcast_ref::<EarlyStopQuery>().and_then(|w| w.watched()) {
        return sole_point_range(watched);
    }
    if let Some(c) = q.downcast_ref::<tantivy::query::ConstScoreQuery>() {
        return sole_point_range(c.query());
    }
    q.downcast_ref::<points::PointRangeQuery>()
}

/// Live documents of the segment that `q` surely matches (0 when no cheap bound is known):
/// a total tracked up to N is "at least N" once these bounds reach it, without reading a
/// match. A term matches its document frequency less the segment's deleted documents, a
/// range on a single-valued field its points less them; a disjunction (one clause required)
/// at least what its largest clause matches.
pub fn count_lower_bound(
    q: &dyn tantivy::query::Query,
    reader: &tantivy::SegmentReader,
) -> tantivy::Result<u64> {
    use tantivy::query::{BooleanQuery, Occur, TermQuery};
    if let Some(watched) = q.downcast_ref::<EarlyStopQuery>().and_then(|w| w.watched()) {
        return count_lower_bound(watched, reader);
    }
    if let Some(n) = cheap_count(q, reader)? {
        return Ok(n.into());
    }
    if let Some(r) = q.downcast_ref::<points::PointRangeQuery>() {
        return r.count_lower_bound(reader);
    }
    if let Some(t) = q.downcast_ref::<TermQuery>() {
        let term = t.term();
        let df = reader.inverted_index(term.field())?.doc_freq(term)?;
        return Ok(df.saturating_sub(reader.num_deleted_docs()).into());
    }
    if let Some(b) = q.downcast_ref::<BooleanQuery>() {
        let clauses = b.clauses();
        if b.get_minimum_number_should_match() <= 1
            && clauses.iter().all(|(o, _)| *o == Occur::Should)
        {
            let mut best = 0;
            for (_, c) in clauses {
                best = best.max(count_lower_bound(&**c, reader)?);
            }
            return Ok(best);
        }
    }
    Ok(0)
}

/// The inclusive bounds (in the column's `u64` mapping, as [`points::SortedPoints`] holds
/// them) that `q`'s required clauses put on `field`: every match has a value inside, so a
/// document without one cannot match. `None` when no required range is on the field.
pub fn required_point_bounds(
    q: &Query,
    field: &str,
    ctx: &QueryContext,
) -> lode_engine::EsResult<Option<(u64, u64)>> {
    Ok(match q {
        Query::Range(r) if r.field == field => {
            let planned = build_filter(q, ctx)?;
            planned
                .downcast_ref::<points::PointRangeQuery>()
                .map(|p| p.bounds())
        }
        Query::ConstantScore { filter, .. } => required_point_bounds(filter, field, ctx)?,
        Query::Bool(b) => {
            let mut out: Option<(u64, u64)> = None;
            for c in b.must.iter().chain(&b.filter) {
                if let Some((lo, hi)) = required_point_bounds(c, field, ctx)? {
                    out = Some(match out {
                        Some((a, b)) => (a.max(lo), b.min(hi)),
                        None => (lo, hi),
                    });
                }
            }
            out
        }
        _ => None,
    })
}

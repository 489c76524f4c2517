//! Search: `_search`, `_count`, `_msearch`, scroll. The request reads top to bottom:
//! parse the body → plan the query per index → collect on every shard in parallel → merge
//! hits, totals and aggregations → fetch `_source` → render Elasticsearch's JSON.

mod body;
mod collapse;
mod completion;
mod inner_hits;
mod matched;
mod phrase;
mod profile;
pub(crate) mod raw_source;
pub mod request_cache;
mod rescore;
mod scroll_hits;
mod shard_failures;
mod suggest;

use crate::rest::{RestRequest, RestResponse};
use lode_aggs::{self as aggs, AggsRequest};
use lode_engine::cancel::CancelToken;
use lode_engine::field_security::FieldPermissions;
use lode_engine::float::float_value;
use lode_engine::index::{now_millis, IndexService, MappingState};
use lode_engine::node::ResolveOptions;
use lode_engine::schema::MetaFields;
use lode_engine::shard::{add_elapsed, ShardSearcher, PRIMARY_TERM};
use lode_engine::{EsError, EsResult, Node};
use lode_hits::highlight::{HighlightRequest, Highlighter};
use lode_hits::sort::{self, SortKey, SortKind, SortValue};
use lode_hits::source::SourceFilter;
use lode_hits::walk;
use lode_query::{self as query, QueryContext};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tantivy::collector::Count;
use tantivy::DocAddress;

use raw_source::RawSources;

/// How a search's answer carries its hits' whole `_source`: as trees (what every caller that
/// reads the hits needs), or as the stored bytes spliced into the serialized response, as
/// Elasticsearch returns them (only the REST routes, which hand the answer to the client).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HitSources {
    #[default]
    Tree,
    Raw,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TrackTotal {
    Exact,
    UpTo(u64),
    Off,
}

/// A parsed search body (index independent).
pub struct SearchRequest {
    /// `search.max_open_scroll_context`, read from the cluster settings by the handler.
    pub max_scroll_contexts: usize,
    /// `runtime_mappings`: the request's runtime fields.
    pub runtime: lode_query::runtime::RuntimeFields,
    /// The `aggs` as sent: checked against each index's runtime fields.
    pub aggs_json: Option<Value>,
    /// The field names the `aggs` and `sort` read: those that are keys of a `flattened`
    /// field become runtime fields of their `_source` values (see [`context`]).
    pub field_refs: Vec<String>,
    pub query: Option<query::Query>,
    pub post_filter: Option<query::Query>,
    /// The named queries of `query` and `post_filter` (`matched_queries`).
    pub named: Vec<query::named::NamedQuery>,
    /// `include_named_queries_score`: `matched_queries` maps each name to its score.
    pub named_scores: bool,
    pub from: usize,
    pub size: usize,
    pub sort: Option<Value>,
    pub source: SourceFilter,
    pub track_total: TrackTotal,
    pub track_scores: bool,
    pub search_after: Option<Vec<Value>>,
    pub aggs: Option<AggsRequest>,
    pub docvalue_fields: Vec<(String, Option<String>)>,
    /// `fields`: patterns with their optional format.
    pub fields: Vec<(String, Option<String>)>,
    pub stored_fields_none: bool,
    /// `stored_fields` patterns: the `store: true` fields among them are returned in `fields`.
    pub stored_fields: Vec<String>,
    pub version: bool,
    pub seq_no_primary_term: bool,
    pub min_score: Option<f32>,
    pub terminate_after: Option<usize>,
    pub rest_total_hits_as_int: bool,
    pub typed_keys: bool,
    /// `allow_partial_search_results`: false turns a timed-out search into an error.
    pub allow_partial_results: bool,
    /// How many `script_fields` were asked for (checked against `index.max_script_fields`).
    pub script_fields: usize,
    /// `script_fields`: name, compiled script, `ignore_failure`.
    pub script_field_specs: Vec<(String, Arc<lode_painless::SearchScript>, bool)>,
    /// The largest rescore `window_size` (checked against `index.max_rescore_window`).
    pub rescore_window: Option<usize>,
    pub rescore: Vec<rescore::Rescorer>,
    /// `stats` groups the request's search statistics are also counted under.
    pub stats_groups: Vec<String>,
    /// `routing`: only the shards these values route to are searched.
    pub routing: Vec<String>,
    /// `indices_boost`: score multipliers per index name or pattern (the first match wins).
    pub indices_boost: Vec<(String, f32)>,
    /// `timeout` in milliseconds.
    pub timeout: Option<u64>,
    /// `collapse.field`: one hit per value of this field.
    pub collapse: Option<String>,
    /// `collapse.inner_hits`: each collapsed hit's group, searched per hit.
    pub collapse_inner_hits: Vec<body::InnerHits>,
    /// The body's `query` and `runtime_mappings` as sent (a group's search repeats them).
    pub query_json: Option<Value>,
    pub runtime_json: Option<Value>,
    pub highlight: Option<HighlightRequest>,
    /// `explain`: each hit carries how its score was computed.
    pub explain: bool,
    /// `profile`: the response carries the shards' timings (`profile.shards`).
    pub profile: bool,
    /// The node's id, as a profiled response names its shards (`[node][index][shard]`).
    pub node_id: String,
    /// Some script params hold integers beyond 64 bits (`big_integers`): a script may hand
    /// one back, which the response writes as its digits.
    pub big_params: bool,
    /// `search_type=dfs_query_then_fetch`: scores use index-wide term statistics.
    pub dfs: bool,
    /// `slice` of a sliced scroll.
    pub slice: Option<body::Slice>,
    /// The terms of the request's `terms` lookups ([`SearchRequest::resolve_lookups`]).
    pub terms_lookups: query::TermsLookups,
    /// `suggest`: the term suggestions to run alongside the query.
    pub suggest: Option<suggest::SuggestRequest>,
}

/// A `from`/`size`-like count: a non-negative integer.
fn as_usize(v: &Value, name: &str) -> EsResult<usize> {
    let n = body::read_int(v)?;
    if n < 0 {
        return Err(EsError::illegal_argument(format!(
            "[{name}] parameter cannot be negative, found [{n}]"
        )));
    }
    Ok(n as usize)
}

impl SearchRequest {
    pub fn parse(body: Option<&Value>, req: &RestRequest) -> EsResult<SearchRequest> {
        let empty = Map::new();
        let b = match body {
            Some(Value::Object(m)) => m,
            Some(Value::Null) | None => &empty,
            Some(_) => {
                return Err(EsError::parsing(
                    "Expected [START_OBJECT] but found [VALUE_STRING]",
                ))
            }
        };
        body::check_keys(b)?;
        let mut named = Vec::new();
        let mut query = match b.get("query") {
            Some(q) => {
                let (q, n) = query::named::parse_query_named(q)?;
                named = n;
                Some(q)
            }
            None => None,
        };
        if let Some(qs) = q_param_query(req) {
            query = Some(query::parse_query(&qs)?);
            named.clear();
        }
        let post_filter = match b.get("post_filter") {
            Some(pf) => {
                // ES adds the post filter's names after the query's: the same name in both
                // is the post filter's
                let (pf, n) = query::named::parse_query_named(pf)?;
                named = query::named::dedup(named.into_iter().chain(n).collect());
                Some(pf)
            }
            None => None,
        };
        let named_scores = req.bool_param("include_named_queries_score", false)?;
        let from = match req.param("from") {
            Some(f) => as_usize(&json!(f), "from")?,
            None => b
                .get("from")
                .map(|v| as_usize(v, "from"))
                .transpose()?
                .unwrap_or(0),
        };
        let size = match req.param("size") {
            Some(s) => as_usize(&json!(s), "size")?,
            None => b
                .get("size")
                .map(|v| as_usize(v, "size"))
                .transpose()?
                .unwrap_or(10),
        };
        let sort = match req.param("sort") {
            Some(s) => Some(Value::Array(
                crate::rest::list_param(Some(s))
                    .into_iter()
                    .map(Value::String)
                    .collect(),
            )),
            None => b.get("sort").cloned(),
        };
        // read with the body, as ES's `SearchSourceBuilder` does: its errors are the
        // request's, not the shards'
        if let Some(s) = &sort {
            sort::check_sort(s)?;
        }
        let mut source =
            if req.has("_source") || req.has("_source_includes") || req.has("_source_excludes") {
                SourceFilter::from_params(
                    req.param("_source"),
                    req.param("_source_includes"),
                    req.param("_source_excludes"),
                )
            } else {
                if let Some(v) = b.get("_source") {
                    body::check_source(v)?;
                }
                SourceFilter::from_json(b.get("_source"))
            };
        let track_total = match req
            .param("track_total_hits")
            .map(|s| json!(s))
            .or_else(|| b.get("track_total_hits").cloned())
        {
            None => TrackTotal::UpTo(10_000),
            Some(Value::Bool(true)) => TrackTotal::Exact,
            Some(Value::Bool(false)) => TrackTotal::Off,
            Some(Value::String(s)) if s == "true" => TrackTotal::Exact,
            Some(Value::String(s)) if s == "false" => TrackTotal::Off,
            Some(v) => match v
                .as_i64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            {
                Some(n) if n >= 0 => TrackTotal::UpTo(n as u64),
                Some(-1) => TrackTotal::Exact,
                _ => {
                    return Err(EsError::illegal_argument(format!(
                        "[track_total_hits] parameter must be positive or equals to -1, got {}",
                        v.as_str().map_or_else(|| v.to_string(), str::to_string)
                    )))
                }
            },
        };
        let rest_total_hits_as_int = req.bool_param("rest_total_hits_as_int", false)?;
        let track_total = match track_total {
            TrackTotal::UpTo(10_000) if rest_total_hits_as_int => TrackTotal::Exact,
            TrackTotal::UpTo(n) if rest_total_hits_as_int => {
                return Err(EsError::illegal_argument(format!(
                    "[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got {n}"
                )))
            }
            t => t,
        };
        let dfs = match req.param("search_type") {
            None | Some("query_then_fetch") => false,
            Some("dfs_query_then_fetch") => true,
            Some(t @ ("query_and_fetch" | "dfs_query_and_fetch")) => {
                return Err(EsError::illegal_argument(format!(
                    "Unsupported search type [{t}]"
                )))
            }
            Some(t) => {
                return Err(EsError::illegal_argument(format!(
                    "No search type for [{t}]"
                )))
            }
        };
        let script_fields = b
            .get("script_fields")
            .and_then(|v| v.as_object())
            .map_or(0, |o| o.len());
        let script_field_specs = match b.get("script_fields") {
            Some(Value::Object(o)) => o
                .iter()
                .map(|(name, spec)| script_field(name, spec))
                .collect::<EsResult<Vec<_>>>()?,
            _ => Vec::new(),
        };
        let rescorers = b
            .get("rescore")
            .map(rescore::parse)
            .transpose()?
            .unwrap_or_default();
        let rescore_window = rescorers.iter().map(|r| r.window_size).max();
        let search_after = match b.get("search_after") {
            Some(Value::Array(a)) => Some(a.clone()),
            Some(_) => return Err(EsError::parsing("[search_after] must be an array")),
            None => None,
        };
        let aggs = match b.get("aggs").or(b.get("aggregations")) {
            Some(a) => Some(aggs::parse_aggs(a)?),
            None => None,
        };
        let docvalue_fields = match req.param("docvalue_fields") {
            Some(list) => crate::rest::list_param(Some(list))
                .into_iter()
                .map(|f| (f, None))
                .collect(),
            None => match b.get("docvalue_fields") {
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| body::read_field_and_format(v).map(|f| (f.field, f.format)))
                    .collect::<EsResult<Vec<_>>>()?,
                _ => Vec::new(),
            },
        };
        let fields = match b.get("fields") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| body::read_field_and_format(v).map(|f| (f.field, f.format)))
                .collect::<EsResult<Vec<_>>>()?,
            _ => Vec::new(),
        };
        let stored: Option<Vec<String>> = match req.param("stored_fields") {
            Some(p) => Some(crate::rest::list_param(Some(p))),
            None => b
                .get("stored_fields")
                .map(|v| body::read_strings(v, "stored_fields"))
                .transpose()?,
        };
        let stored_fields_none = matches!(stored.as_deref(), Some([one]) if one == "_none_");
        if stored_fields_none
            && (b.get("_source").is_some_and(|v| v != &json!(false)) || req.has("_source"))
        {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: [stored_fields] cannot be disabled if [_source] is requested;",
            ));
        }
        let explicit_source = b.get("_source").is_some() || req.has("_source");
        if let (Some(list), false) = (&stored, explicit_source) {
            // Stored fields replace `_source` unless it is named among them.
            source.fetch = list.iter().any(|f| f == "_source");
        }
        let stored_fields = stored
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f != "_none_" && f != "_source")
            .collect();
        let bool_opt = |k: &str| -> EsResult<bool> {
            if req.has(k) {
                return req.bool_param(k, false);
            }
            b.get(k).map_or(Ok(false), |v| body::read_bool(v, k))
        };
        if let Some(ext) = b.get("ext").and_then(Value::as_object) {
            // Search extensions belong to plugins; Lode has none.
            if let Some(name) = ext.keys().next() {
                return Err(
                    EsError::parsing(format!("Unknown NamedObject [search_ext] [{name}]"))
                        .caused_by(EsError::bad_request(
                            "named_object_not_found_exception",
                            format!("[1:1] unknown field [{name}]"),
                        )),
                );
            }
        }
        let runtime = b
            .get("runtime_mappings")
            .map(lode_query::runtime::parse_runtime_mappings)
            .transpose()?
            .unwrap_or_default();
        let collapse = b.get("collapse").map(body::read_collapse).transpose()?;
        let mut field_refs = Vec::new();
        for (v, in_sort) in [
            (b.get("aggs"), false),
            (b.get("aggregations"), false),
            (b.get("sort"), true),
        ] {
            if let Some(v) = v {
                referenced_fields(v, in_sort, &mut field_refs);
            }
        }
        Ok(SearchRequest {
            max_scroll_contexts: 500,
            runtime,
            field_refs,
            aggs_json: b.get("aggs").or(b.get("aggregations")).cloned(),
            query,
            post_filter,
            named,
            named_scores,
            from,
            size,
            sort,
            source,
            track_total,
            track_scores: bool_opt("track_scores")?,
            search_after,
            aggs,
            docvalue_fields,
            fields,
            stored_fields_none,
            stored_fields,
            version: bool_opt("version")?,
            seq_no_primary_term: bool_opt("seq_no_primary_term")?,
            min_score: b
                .get("min_score")
                .map(body::read_float)
                .transpose()?
                .map(|f| f as f32),
            terminate_after: match req.usize_param("terminate_after")? {
                Some(n) => Some(n),
                None => b
                    .get("terminate_after")
                    .map(|v| as_usize(v, "terminate_after"))
                    .transpose()?,
            }
            .filter(|n| *n > 0),
            rest_total_hits_as_int,
            typed_keys: req.bool_param("typed_keys", false)?,
            allow_partial_results: req.bool_param("allow_partial_search_results", true)?,
            script_fields,
            script_field_specs,
            rescore_window,
            rescore: rescorers,
            routing: crate::rest::list_param(req.param("routing")),
            stats_groups: b
                .get("stats")
                .map(|v| body::read_strings(v, "stats"))
                .transpose()?
                .unwrap_or_default(),
            indices_boost: b
                .get("indices_boost")
                .map(body::read_indices_boost)
                .transpose()?
                .unwrap_or_default(),
            timeout: match req.param("timeout") {
                Some(t) => body::read_time(&json!(t), "timeout")?,
                None => b
                    .get("timeout")
                    .map(|v| body::read_time(v, "timeout"))
                    .transpose()?
                    .flatten(),
            },
            collapse: collapse.as_ref().map(|c| c.field.clone()),
            collapse_inner_hits: collapse.map(|c| c.inner_hits).unwrap_or_default(),
            query_json: b.get("query").cloned(),
            runtime_json: b.get("runtime_mappings").cloned(),
            explain: bool_opt("explain")?,
            profile: bool_opt("profile")?,
            node_id: String::new(),
            big_params: false,
            dfs,
            slice: b.get("slice").map(body::read_slice).transpose()?,
            terms_lookups: Default::default(),
            suggest: b.get("suggest").map(suggest::parse).transpose()?,
            highlight: b
                .get("highlight")
                .map(HighlightRequest::parse)
                .transpose()?,
        })
    }
}

impl SearchRequest {
    /// Fetches the terms of every `terms` lookup in the body (queries, filters, aggregation
    /// filters alike), as ES fetches them before the shards plan the query: the document is
    /// read in real time, a missing document gives no terms, a missing index is an error.
    pub fn resolve_lookups(
        &mut self,
        node: &Node,
        body: Option<&Value>,
        req: &RestRequest,
    ) -> EsResult<()> {
        self.terms_lookups = terms_lookups(node, body, req)?;
        Ok(())
    }
}

/// The terms of every `terms` lookup in a request body, each read from its document as the
/// request's subject may read it (a document hidden by document-level security gives no
/// terms, fields hidden by field-level security none either), as ES's lookup runs a get
/// with the subject's permissions: a subject without `indices:data/read/get` on the lookup
/// index is refused with ES's 403, before the index is resolved.
pub fn terms_lookups(
    node: &Node,
    body: Option<&Value>,
    req: &RestRequest,
) -> EsResult<query::TermsLookups> {
    let mut found = Vec::new();
    if let Some(b) = body {
        collect_lookups(b, &mut found);
    }
    let mut out = query::TermsLookups::new();
    for l in found {
        if out.contains_key(&l) {
            continue;
        }
        if let Some(auth) = &req.authorized {
            auth.require(LOOKUP_GET_ACTION, &l.index)?;
        }
        let index = node.read_target(&l.index)?;
        let mut values = Vec::new();
        let doc = if crate::docs::dls_hidden(req, &index, &l.index, &l.id)? {
            None
        } else {
            index.get_doc(&l.id, l.routing.as_deref(), true)?
        };
        if let Some(doc) = doc {
            if !doc.source.is_empty() {
                let src: Value = crate::rest::parse_json(&doc.source)?;
                let src = match crate::docs::fls_of(req, &index, &l.index) {
                    Some(p) => p.filter_source(&src),
                    None => src,
                };
                path_values(&src, &l.path.split('.').collect::<Vec<_>>(), &mut values);
            }
        }
        out.insert(l, values);
    }
    Ok(out)
}

#[cfg(test)]
mod scroll_id_tests {
    #[test]
    fn scroll_ids_parse_as_the_store_makes_them() {
        let id = lode_engine::index::new_uuid() + &lode_engine::index::new_uuid();
        super::check_scroll_id(&id).unwrap();
        for bad in ["not-a-scroll", "", &id[1..], "é".repeat(22).as_str()] {
            let e = super::check_scroll_id(bad).unwrap_err();
            assert_eq!(
                (e.status, e.kind.as_str()),
                (400, "illegal_argument_exception")
            );
            assert_eq!(e.reason, "Cannot parse scroll id");
        }
    }
}

/// The action a `terms` lookup's get is authorized as (ES's `TermsQueryBuilder#fetch` runs a
/// `GetRequest` as the searching user).
pub const LOOKUP_GET_ACTION: &str = "indices:data/read/get";

/// The `terms` lookups anywhere in a request body.
fn collect_lookups(v: &Value, out: &mut Vec<query::TermsLookup>) {
    match v {
        Value::Object(m) => {
            if let Some(inner @ Value::Object(_)) = m.get("terms") {
                if let Ok(query::Query::Terms(t)) = query::parse_query(&json!({"terms": inner})) {
                    if let Some(l) = t.lookup {
                        out.push(l);
                    }
                }
            }
            m.values().for_each(|c| collect_lookups(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| collect_lookups(c, out)),
        _ => {}
    }
}

/// The scalar values at a dotted path of a document, arrays flattened.
fn path_values(v: &Value, path: &[&str], out: &mut Vec<Value>) {
    match (v, path.split_first()) {
        (Value::Array(a), _) => a.iter().for_each(|c| path_values(c, path, out)),
        (Value::Object(m), Some((head, rest))) => {
            if let Some(c) = m.get(*head) {
                path_values(c, rest, out);
            }
        }
        (Value::Object(_), None) | (Value::Null, _) => {}
        (scalar, None) => out.push(scalar.clone()),
        (_, Some(_)) => {}
    }
}

/// What a slice of a sliced scroll takes of one shard.
enum SliceOfShard {
    None,
    All,
    Part(Box<dyn tantivy::query::Query>),
}

/// ES's `SliceBuilder#toFilter` for `_id` slices: with at least as many slices as shards,
/// each shard is cut into the slices that map to it; with fewer, whole shards go to slices.
fn shard_slice(
    slice: body::Slice,
    shard: usize,
    num_shards: usize,
    id_field: tantivy::schema::Field,
) -> SliceOfShard {
    let (id, max) = (slice.id as usize, slice.max as usize);
    let part = |id: usize, max: usize| {
        SliceOfShard::Part(Box::new(query::IdSliceQuery::new(
            id_field, id as u32, max as u32,
        )))
    };
    if num_shards == 1 {
        return part(id, max);
    }
    if max >= num_shards {
        let target = id % num_shards;
        if target != shard {
            return SliceOfShard::None;
        }
        let in_shard = max / num_shards + usize::from(max % num_shards > target);
        if in_shard == 1 {
            return SliceOfShard::All;
        }
        return part(id / num_shards, in_shard);
    }
    if shard % max == id {
        SliceOfShard::All
    } else {
        SliceOfShard::None
    }
}

/// One hit before fetch.
struct Candidate {
    index: usize,
    shard: usize,
    addr: DocAddress,
    score: Option<f32>,
    sort: Option<Vec<SortValue>>,
    /// The value of the `collapse` field (`null` when the document has none); boxed, as
    /// most searches do not collapse and a scroll keeps every remaining candidate.
    group: Option<Box<Value>>,
}

const _: () = assert!(std::mem::size_of::<Candidate>() <= 64);

/// The results of the query phase over all indices.
struct QueryPhase {
    total: u64,
    max_score: Option<f32>,
    hits: Vec<Candidate>,
    aggs: Option<Value>,
    keys: Option<Vec<SortKey>>,
    shards: usize,
    /// Some shard stopped at `terminate_after`.
    terminated_early: bool,
    /// Some shard stopped at the `timeout` deadline.
    timed_out: bool,
    /// A profiled search: each shard's query profile, and its aggregations' profile by
    /// (index position, shard id).
    profiles: Vec<profile::ShardQueryProfile>,
    agg_profiles: HashMap<(usize, usize), Vec<Value>>,
    /// The shards that failed (counted in `shards`), for `_shards.failures`.
    failures: Vec<shard_failures::ShardFailure>,
}

/// Per-index searchers pinned for the fetch phase (and for scrolls).
struct Target {
    index: Arc<IndexService>,
    searchers: Vec<ShardSearcher>,
    alias_filter: Option<query::Query>,
    /// Field-level security: the readable fields, and the index's mapping without the others,
    /// which the search plans against so that the other fields do not exist for it.
    fls: Option<(Arc<FieldPermissions>, Arc<MappingState>)>,
}

impl Target {
    /// The mapping this search sees: the index's, less what field-level security hides.
    fn mapping_state(&self) -> Arc<MappingState> {
        match &self.fls {
            Some((_, state)) => state.clone(),
            None => self.index.mapping_state(),
        }
    }

    fn mapping(&self) -> Arc<lode_engine::mapping::Mapping> {
        match &self.fls {
            Some((_, state)) => state.mapping.clone(),
            None => self.index.mapping(),
        }
    }
}

/// The search query on one index as every collector of the query phase sees it: restricted by
/// its alias filter (scoring untouched), boosted by `indices_boost`, cut at `min_score`, and
/// stopped after `terminate_after` documents per shard or at the `timeout` deadline (noting
/// either in `stopped`).
fn base_query(
    t: &Target,
    sreq: &SearchRequest,
    ctx: &QueryContext,
    early: &EarlyStop,
) -> EsResult<Box<dyn tantivy::query::Query>> {
    Ok(base_query_with(t, sreq, ctx, early, false)?.0)
}

/// A planned query and, when profiled, the root of its profile tree.
type ProfiledPlan = (
    Box<dyn tantivy::query::Query>,
    Option<Arc<query::profile::ProfileNode>>,
);

/// [`base_query`], with the search query profiled when `profiled` (its profile tree's root
/// returned beside it).
fn base_query_with(
    t: &Target,
    sreq: &SearchRequest,
    ctx: &QueryContext,
    early: &EarlyStop,
    profiled: bool,
) -> EsResult<ProfiledPlan> {
    let (mut q, node) = filtered_query(t, sreq, ctx, profiled)?;
    if let Some(boost) = index_boost(&sreq.indices_boost, &t.index.name) {
        q = Box::new(tantivy::query::BoostQuery::new(q, boost));
    }
    if let Some(min) = sreq.min_score {
        q = Box::new(query::MinScoreQuery::new(q, min));
    }
    if sreq.terminate_after.is_some() || early.deadline.is_some() || early.cancel.is_some() {
        q = Box::new(query::EarlyStopQuery::new(
            q,
            sreq.terminate_after.map(|n| n as u64),
            early.deadline,
            early.cancel.clone(),
            early.stopped.clone(),
        ));
    }
    Ok((q, node))
}

/// When shards stop collecting, and whether they did. `cancel` is the request's task token
/// (`_cancel`, a closed connection), observed at the same checks as the deadline.
struct EarlyStop {
    deadline: Option<Instant>,
    cancel: Option<CancelToken>,
    stopped: Arc<query::Stopped>,
}

/// The first `indices_boost` entry naming the index (or a pattern matching it), as in ES.
fn index_boost(boosts: &[(String, f32)], index: &str) -> Option<f32> {
    boosts
        .iter()
        .find(|(pattern, _)| lode_engine::mapping::wildcard_match(pattern, index))
        .map(|(_, boost)| *boost)
}

/// The search query restricted by the index's alias filter.
fn filtered_query(
    t: &Target,
    sreq: &SearchRequest,
    ctx: &QueryContext,
    profiled: bool,
) -> EsResult<ProfiledPlan> {
    let (q, node): (Box<dyn tantivy::query::Query>, _) = match &sreq.query {
        Some(q) if profiled => {
            let (q, node) = query::build_query_profiled(q, ctx)?;
            (q, Some(node))
        }
        None if profiled => {
            let all = query::Query::MatchAll { boost: 1.0 };
            let (q, node) = query::build_query_profiled(&all, ctx)?;
            (q, Some(node))
        }
        Some(q) => (query::build_query(q, ctx)?, None),
        None => (Box::new(tantivy::query::AllQuery), None),
    };
    let q = match &t.alias_filter {
        Some(f) => Box::new(tantivy::query::BooleanQuery::new(vec![
            (tantivy::query::Occur::Must, q),
            (
                tantivy::query::Occur::Must,
                Box::new(tantivy::query::ConstScoreQuery::new(
                    build_unrestricted(f, &t.index, t.fls.is_some(), ctx)?,
                    0.0,
                )),
            ),
        ])),
        None => q,
    };
    Ok((query::nested::non_nested(q, ctx.meta.nested), node))
}

/// The sort of a search under field-level security: a field the index maps but the subject
/// may not read sorts as a field without values (`unmapped_type` of its own type), as
/// ES's `FieldSubsetReader` leaves it mapped with no doc values.
fn sort_hidden_as_missing(
    sort: &Value,
    full: &lode_engine::mapping::Mapping,
    seen: &lode_engine::mapping::Mapping,
) -> Value {
    let hidden = |f: &str| full.field(f).filter(|_| seen.field(f).is_none());
    let item = |v: &Value| -> Value {
        let (field, mut opts) = match v {
            Value::String(s) => match s.split_once(':') {
                Some((f, o)) => (f.to_string(), json!({ "order": o })),
                None => (s.clone(), json!({})),
            },
            Value::Object(o) if o.len() == 1 => {
                let (f, spec) = o.iter().next().expect("one key");
                match spec {
                    Value::String(order) => (f.clone(), json!({ "order": order })),
                    Value::Object(_) => (f.clone(), spec.clone()),
                    _ => return v.clone(),
                }
            }
            _ => return v.clone(),
        };
        match (hidden(&field), opts.as_object_mut()) {
            (Some(def), Some(o)) if !o.contains_key("unmapped_type") => {
                o.insert("unmapped_type".into(), json!(def.ty.name()));
                json!({ field: opts })
            }
            _ => v.clone(),
        }
    };
    match sort {
        Value::Array(a) => Value::Array(a.iter().map(item).collect()),
        other => item(other),
    }
}

/// Plans an alias or role filter: against the index's whole mapping when field-level
/// security hides fields from the search's own (ES applies the role query to the index
/// before it hides fields).
fn build_unrestricted(
    f: &query::Query,
    index: &IndexService,
    fls: bool,
    ctx: &QueryContext,
) -> EsResult<Box<dyn tantivy::query::Query>> {
    if !fls {
        return query::build_query(f, ctx);
    }
    let full = index.mapping_state();
    let fctx = QueryContext {
        mapping: &full.mapping,
        schema: &full.schema,
        ..ctx.clone()
    };
    query::build_query(f, &fctx)
}

fn resolve_opts(req: &RestRequest) -> EsResult<ResolveOptions> {
    let mut o = ResolveOptions {
        ignore_unavailable: req.bool_param("ignore_unavailable", false)?,
        allow_no_indices: req.bool_param("allow_no_indices", true)?,
        ..Default::default()
    };
    if let Some(ew) = req.param("expand_wildcards") {
        o = o.expand_wildcards(ew)?;
    }
    Ok(o)
}

/// The URL `q` parameter (with `df`, `default_operator`, `analyzer`) as a `query_string` query.
pub fn q_param_query(req: &RestRequest) -> Option<Value> {
    let q = req.param("q")?;
    let mut qs = json!({"query_string": {"query": q}});
    for (param, key) in [
        ("df", "default_field"),
        ("default_operator", "default_operator"),
        ("analyzer", "analyzer"),
        ("lenient", "lenient"),
        ("analyze_wildcard", "analyze_wildcard"),
    ] {
        if let Some(v) = req.param(param) {
            // A flag given without a value is true, as for every boolean parameter.
            let flag = matches!(param, "lenient" | "analyze_wildcard");
            qs["query_string"][key] = json!(if flag && v.is_empty() { "true" } else { v });
        }
    }
    Some(qs)
}

/// The shards `routing` values select (every shard when there are none).
fn routed(index: &IndexService, routing: &[String], shard: usize) -> bool {
    routing.is_empty()
        || routing
            .iter()
            .any(|r| index.shard_for("", Some(r)) == shard)
}

/// An index a request searches, and the filter of the aliases it was reached through.
pub struct Searched {
    pub index: Arc<IndexService>,
    /// The alias filters, OR-ed (ES): `None` when an alias without filter, the index name or a
    /// wildcard also named the index.
    pub filter: Option<Value>,
    /// Whether document-level security filters this index for the request's subject.
    pub dls: bool,
    /// Field-level security: the fields the request's subject may read of this index.
    pub fls: Option<Arc<FieldPermissions>>,
}

pub fn targets(node: &Node, indices: &str, req: &RestRequest) -> EsResult<Vec<Searched>> {
    let list = node.resolve_detailed(indices, resolve_opts(req)?)?;
    let mut out = Vec::with_capacity(list.len());
    for r in list {
        if r.index.is_closed() {
            return Err(EsError::index_closed(&r.index.name, &r.index.uuid));
        }
        // As `TransportSearchAction`: the first index with a read block fails the search.
        r.index.check_block(lode_engine::blocks::Level::Read)?;
        let alias_names: Vec<String> = r
            .via_aliases
            .as_ref()
            .map(|v| v.iter().map(|(a, _)| a.clone()).collect())
            .unwrap_or_default();
        let dls = req
            .doc_security
            .as_ref()
            .and_then(|d| d.filter(&r.index.name, &alias_names));
        let filter = r.via_aliases.and_then(|aliases| {
            let filters: Option<Vec<Value>> =
                aliases.into_iter().map(|(_, meta)| meta.filter).collect();
            match filters {
                Some(mut f) if f.len() == 1 => f.pop(),
                Some(f) => Some(json!({"bool": {"should": f, "minimum_should_match": 1}})),
                None => None,
            }
        });
        // document-level security: the role query filters as an alias filter does
        let has_dls = dls.is_some();
        let filter = match (filter, dls) {
            (f, None) => f,
            (None, Some(d)) => Some(d),
            (Some(f), Some(d)) => Some(json!({"bool": {"filter": [f, d]}})),
        };
        let fls = req
            .field_security
            .as_ref()
            .and_then(|f| f.permissions(&r.index.name, &alias_names))
            .map(Arc::new);
        out.push(Searched {
            index: r.index,
            filter,
            dls: has_dls,
            fls,
        });
    }
    Ok(out)
}

/// `fields` on runtime fields: each requested name (or `*` pattern) that is a runtime field
/// gets the values its script emits for the hit (dates formatted, `format` honoured). `docs`
/// is the hit's segment's `doc`, kept by the caller from hit to hit (the fields' evaluation
/// state with it).
#[allow(clippy::too_many_arguments)]
fn runtime_fields_values(
    wanted: &[(String, Option<String>)],
    runtime: &lode_query::runtime::RuntimeFields,
    mapping: &lode_engine::mapping::Mapping,
    s: &ShardSearcher,
    addr: tantivy::DocAddress,
    docs: &mut Option<query::DocColumns>,
    out: &mut Map<String, Value>,
) -> EsResult<()> {
    use lode_query::runtime::RuntimeType;
    if let Some(d) = docs.as_mut() {
        d.doc = addr.doc_id;
    }
    for (pattern, format) in wanted {
        for (name, f) in runtime.iter() {
            if !lode_engine::mapping::wildcard_match(pattern, name) {
                continue;
            }
            let docs = docs.get_or_insert_with(|| {
                let reader = s.searcher.segment_reader(addr.segment_ord);
                let mut d = query::DocColumns::new(reader, query::script::fields_of(mapping))
                    .with_runtime(runtime.clone());
                d.doc = addr.doc_id;
                d
            });
            let vals = f.values(docs).map_err(search_phase_error)?;
            if vals.is_empty() {
                out.remove(name);
                continue;
            }
            let vals = if f.ty == RuntimeType::Date {
                let fmt = match format {
                    Some(spec) => lode_dates::DateFormat::parse(spec)
                        .map_err(|e| EsError::illegal_argument(e.to_string()))?,
                    None => match &f.format {
                        Some((_, own)) => own.clone(),
                        None => lode_dates::DateFormat::default_es(),
                    },
                };
                vals.iter()
                    .map(|v| {
                        json!(fmt.format_millis(v.as_i64().unwrap_or(0), &lode_dates::Tz::utc()))
                    })
                    .collect()
            } else {
                vals
            };
            out.insert(name.clone(), Value::Array(vals));
        }
    }
    Ok(())
}

/// Field names an `aggs` or `sort` section reads: `field` values anywhere in the
/// aggregations, and sort keys (a name, or an object's keys, not `_score`-like ones).
fn referenced_fields(v: &Value, in_sort: bool, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                if k == "field" {
                    if let Some(s) = x.as_str() {
                        out.push(s.to_string());
                    }
                }
                if in_sort && !k.starts_with('_') {
                    out.push(k.clone());
                }
                referenced_fields(x, false, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| referenced_fields(x, in_sort, out)),
        Value::String(s) if in_sort => out.push(s.clone()),
        _ => {}
    }
}

/// A key of a `flattened` field (`f.a.b`, `f` flattened): an unmapped path whose first
/// mapped prefix is a flattened field.
fn is_flattened_key(mapping: &lode_engine::mapping::Mapping, path: &str) -> bool {
    !mapping.fields.contains_key(path)
        && path
            .match_indices('.')
            .find_map(|(i, _)| mapping.fields.get(&path[..i]))
            .is_some_and(|d| d.ty == lode_engine::mapping::FieldType::Flattened)
}

fn context<'a>(
    index: &'a IndexService,
    state: &'a lode_engine::index::MappingState,
    now: i64,
    lookups: &'a query::TermsLookups,
    runtime: &lode_query::runtime::RuntimeFields,
    field_refs: &[String],
) -> EsResult<QueryContext<'a>> {
    // The index mapping's runtime fields, shadowed by the request's `runtime_mappings`.
    let mut runtime = lode_query::runtime::effective(&state.mapping.json, runtime)?;
    // Aggregations and sorts on a key of a `flattened` field read its `_source` values as a
    // keyword runtime field would (ES reads the keyed doc values: the same strings).
    let keyed: Vec<&String> = field_refs
        .iter()
        .filter(|n| !runtime.contains_key(*n) && is_flattened_key(&state.mapping, n))
        .collect();
    if !keyed.is_empty() {
        let mut all = (*runtime).clone();
        for n in keyed {
            all.insert(
                n.clone(),
                std::sync::Arc::new(lode_query::runtime::RuntimeField::from_source_keyword(n)),
            );
        }
        runtime = std::sync::Arc::new(all);
    }
    Ok(QueryContext {
        mapping: &state.mapping,
        schema: &state.schema,
        meta: MetaFields::of(&state.schema),
        analysis: &index.analysis,
        now_millis: now,
        max_terms_count: index.config().max_terms_count,
        max_regex_length: index.config().max_regex_length,
        max_clause_count: query::max_clause_count(),
        query_string_lenient: index.config().query_string_lenient,
        default_fields: index.config().query_default_fields.clone(),
        terms_lookups: Some(lookups),
        script_errors: Default::default(),
        runtime,
        allow_expensive_queries: query::allow_expensive_queries(),
    })
}

fn search_phase_error(e: EsError) -> EsError {
    if e.status >= 500 || e.kind == "search_phase_execution_exception" {
        return e;
    }
    let mut outer = EsError::new(
        e.status,
        "search_phase_execution_exception",
        "all shards failed",
    );
    outer.extra.insert("phase".into(), json!("query"));
    outer.extra.insert("grouped".into(), json!(true));
    outer.extra.insert(
        "failed_shards".into(),
        json!([{"shard": 0, "index": e.extra.get("index").cloned().unwrap_or(Value::Null), "node": "lode", "reason": e.to_cause_json()}]),
    );
    // ES's `guessRootCauses` descends to the innermost `ElasticsearchException`: the
    // `exception` an expensive-query refusal wraps.
    let root = match &e.caused_by {
        Some(cause) if query::expensive::is_refusal(&e) => (**cause).clone(),
        _ => e.clone(),
    };
    outer.root_causes = vec![root];
    outer.caused_by = Some(Box::new(e));
    outer
}

/// The BM25 statistics a shard scores with: its own, or with `dfs_query_then_fetch` the
/// index's (ES's DFS phase gathers them from every shard before the query phase).
fn scoring_statistics<'s>(
    t: &'s Target,
    sreq: &SearchRequest,
    searcher: &'s tantivy::Searcher,
) -> query::FieldStatistics<'s> {
    if sreq.dfs && t.searchers.len() > 1 {
        query::FieldStatistics::across(t.searchers.iter().map(|s| &s.searcher).collect())
    } else {
        query::FieldStatistics::new(searcher)
    }
}

/// The total hits `track` asks for: none, up to one past its threshold (enough to say
/// "gte"), or exact.
/// `scripted`: the query holds a script. tantivy's `Count` counts dense conjunctions block by
/// block, filling every clause's bitset on its own, which would run a script filter on
/// documents the other clauses exclude (and fail on those without its field); walking the
/// matches only asks the script about the conjunction's candidates, as ES does.
fn count_total(
    searcher: &tantivy::Searcher,
    q: &dyn tantivy::query::Query,
    track: TrackTotal,
    scripted: bool,
) -> tantivy::Result<u64> {
    Ok(match track {
        TrackTotal::Off => 0,
        TrackTotal::UpTo(n) => count_up_to(searcher, q, n + 1)?,
        TrackTotal::Exact if scripted => count_up_to(searcher, q, u64::MAX)?,
        TrackTotal::Exact => {
            query::FieldStatistics::new(searcher).search(searcher, q, &Count)? as u64
        }
    })
}

/// Counts matches, stopping at `cap`: with `track_total_hits: N` a larger total is only ever
/// reported as "at least N", so reading further matches is wasted (ES stops early too).
fn count_up_to(
    searcher: &tantivy::Searcher,
    q: &dyn tantivy::query::Query,
    cap: u64,
) -> tantivy::Result<u64> {
    use tantivy::{DocSet, TERMINATED};
    let weight = q.weight(tantivy::query::EnableScoring::disabled_from_searcher(
        searcher,
    ))?;
    if cap != u64::MAX {
        let mut sure = 0u64;
        for seg in searcher.segment_readers() {
            sure += lode_query::count_lower_bound(q, seg)?;
            if sure >= cap {
                return Ok(cap);
            }
        }
    }
    let mut total = 0u64;
    for seg in searcher.segment_readers() {
        if let Some(n) = lode_query::cheap_count(q, seg)? {
            total += u64::from(n);
            if total >= cap {
                return Ok(cap);
            }
            continue;
        }
        let mut scorer = weight.scorer(seg, 1.0)?;
        let alive = seg.alive_bitset();
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                total += 1;
                if total >= cap {
                    return Ok(total);
                }
            }
            doc = scorer.advance();
        }
    }
    Ok(total)
}

/// Runs the query phase: every shard of every target index, in parallel.
fn query_phase(
    targets: &[Target],
    sreq: &SearchRequest,
    limit: usize,
    now: i64,
) -> EsResult<QueryPhase> {
    if let Some(q) = &sreq.query {
        // `inner_hits` definitions are checked even when no hit is fetched.
        inner_hits::specs(q)?;
    }
    let mut all_hits: Vec<Candidate> = Vec::new();
    let mut total = 0u64;
    let mut max_score: Option<f32> = None;
    let mut aggs_out: Option<Value> = None;
    let mut shards = 0;
    let mut keys_out: Option<Vec<SortKey>> = None;
    let profiles: std::sync::Mutex<Vec<profile::ShardQueryProfile>> = Default::default();
    let mut agg_profiles = HashMap::new();
    let early = EarlyStop {
        deadline: sreq
            .timeout
            .map(|ms| Instant::now() + Duration::from_millis(ms)),
        cancel: CancelToken::current(),
        stopped: Arc::default(),
    };
    let mut failures: Vec<shard_failures::ShardFailure> = Vec::new();
    for (ti, t) in targets.iter().enumerate() {
        if let Some(c) = &early.cancel {
            c.check()?;
        }
        // A query ES plans on each shard fails this index's shards only (ES plans per shard:
        // an index whose mapping refuses the query fails, the others answer).
        macro_rules! or_fail_shards {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) if shard_failures::fails_shard(&e) => {
                        failures.extend(t.searchers.iter().map(|s| shard_failures::ShardFailure {
                            index: t.index.name.clone(),
                            shard: s.shard_id,
                            error: e.clone(),
                        }));
                        shards += t.searchers.len();
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            };
        }
        let state = t.mapping_state();
        let ctx = or_fail_shards!(context(
            &t.index,
            &state,
            now,
            &sreq.terms_lookups,
            &sreq.runtime,
            &sreq.field_refs,
        ));
        let mut q = or_fail_shards!(base_query(t, sreq, &ctx, &early));
        if let Some(pf) = &sreq.post_filter {
            let f = or_fail_shards!(query::build_query(pf, &ctx));
            q = Box::new(tantivy::query::BooleanQuery::new(vec![
                (tantivy::query::Occur::Must, q),
                (
                    tantivy::query::Occur::Must,
                    Box::new(tantivy::query::ConstScoreQuery::new(f, 0.0)),
                ),
            ]));
        }
        // Every planned script query holds a clone of the request's error slot.
        let scripted = std::sync::Arc::strong_count(&ctx.script_errors) > 1;
        let fls_sort = match (&sreq.sort, &t.fls) {
            (Some(s), Some(_)) => Some(sort_hidden_as_missing(
                s,
                &t.index.mapping(),
                &state.mapping,
            )),
            _ => None,
        };
        let sort_spec = fls_sort.as_ref().or(sreq.sort.as_ref());
        let parse_keys = |ctx: &QueryContext| {
            sort_spec
                .map(|s| {
                    sort::parse_sort(
                        s,
                        &state.mapping,
                        &ctx.script_errors,
                        &ctx.runtime,
                        Some(ctx),
                    )
                })
                .transpose()
        };
        let keys = or_fail_shards!(parse_keys(&ctx));
        // Scripts record their first error in one slot per plan: with several shards, each
        // shard plans its own so that a script's failure fails only the shard it ran on.
        let per_shard_scripts =
            t.searchers.len() > 1 && std::sync::Arc::strong_count(&ctx.script_errors) > 1;
        let collapse = or_fail_shards!(sreq
            .collapse
            .as_deref()
            .map(|f| collapse::field(&state.mapping, f))
            .transpose());
        let score_only = keys
            .as_ref()
            .map(|k| k.len() == 1 && k[0].kind == SortKind::Score && k[0].desc)
            .unwrap_or(true)
            && sreq.search_after.is_none();
        let after = or_fail_shards!(match (&sreq.search_after, &keys) {
            (Some(a), Some(k)) if a.len() != k.len() => Err(EsError::illegal_argument(format!(
                "search_after has {} value(s) but sort has {}.",
                a.len(),
                k.len()
            ))),
            (Some(a), Some(k)) => a
                .iter()
                .zip(k)
                .map(|(v, key)| search_after_value(v, key, &state.mapping))
                .collect::<EsResult<Vec<_>>>()
                .map(Some),
            (Some(_), None) => Err(EsError::illegal_argument(
                "Sort must contain at least one field.",
            )),
            _ => Ok(None),
        });
        let dfs = sreq.dfs && t.searchers.len() > 1;
        let num_shards = t.index.num_shards();
        let run_shard = |s: &ShardSearcher| -> EsResult<(u64, Vec<Candidate>)> {
            let own_ctx = per_shard_scripts.then(|| {
                let mut c = ctx.clone();
                c.script_errors = Default::default();
                c
            });
            let ctx = own_ctx.as_ref().unwrap_or(&ctx);
            let (q, keys) = match &own_ctx {
                Some(c) => {
                    let mut q = base_query(t, sreq, c, &early)?;
                    if let Some(pf) = &sreq.post_filter {
                        q = Box::new(tantivy::query::BooleanQuery::new(vec![
                            (tantivy::query::Occur::Must, q),
                            (
                                tantivy::query::Occur::Must,
                                Box::new(tantivy::query::ConstScoreQuery::new(
                                    query::build_query(pf, c)?,
                                    0.0,
                                )),
                            ),
                        ]));
                    }
                    (q, parse_keys(c)?)
                }
                None => (q.box_clone(), keys.clone()),
            };
            // A profiled search plans its query per shard, each shard timing its own nodes.
            let (base, profiled) = if sreq.profile {
                let started = Instant::now();
                let (bq, node) = base_query_with(t, sreq, ctx, &early, true)?;
                let bq: Box<dyn tantivy::query::Query> = match &sreq.post_filter {
                    Some(pf) => Box::new(tantivy::query::BooleanQuery::new(vec![
                        (tantivy::query::Occur::Must, bq),
                        (
                            tantivy::query::Occur::Must,
                            Box::new(tantivy::query::ConstScoreQuery::new(
                                query::build_query(pf, ctx)?,
                                0.0,
                            )),
                        ),
                    ])),
                    None => bq,
                };
                (bq, node.map(|n| (n, started.elapsed().as_nanos() as u64)))
            } else {
                (q.box_clone(), None)
            };
            let q = match sreq.slice {
                None => base,
                Some(slice) => match shard_slice(slice, s.shard_id, num_shards, s.meta.id) {
                    SliceOfShard::None => return Ok((0, Vec::new())),
                    SliceOfShard::All => base,
                    SliceOfShard::Part(part) => Box::new(tantivy::query::BooleanQuery::new(vec![
                        (tantivy::query::Occur::Must, base),
                        (
                            tantivy::query::Occur::Must,
                            Box::new(tantivy::query::ConstScoreQuery::new(part, 0.0)),
                        ),
                    ])),
                },
            };
            let keys = keys.clone();
            let after = after.clone();
            let started = Instant::now();
            let shard = t.index.shard(s.shard_id)?;
            let shard_stats = &shard.stats;
            let searcher = &s.searcher;
            let scoring = scoring_statistics(t, sreq, searcher);
            let collect = |limit: usize| -> EsResult<(u64, Vec<Candidate>)> {
                // Never reserve more slots than the shard has documents (scrolls ask for all).
                let limit = limit.min(searcher.num_docs() as usize);
                Ok(if score_only {
                    if limit == 0 {
                        (
                            count_total(searcher, &*q, sreq.track_total, scripted)?,
                            Vec::new(),
                        )
                    } else {
                        // Each segment starts at the k-th best score of the ones before it.
                        let top_docs = lode_query::TopScoreCarried::new(limit);
                        let (c, top) = if matches!(sreq.track_total, TrackTotal::Exact)
                            || sreq.terminate_after.is_some()
                            || sreq.profile
                            || dfs
                        {
                            let (c, top) = scoring.search(searcher, &*q, &(Count, top_docs))?;
                            (c as u64, top)
                        } else {
                            // Counted on its own up to the threshold, the top hits keep
                            // tantivy's pruning (block-max WAND), which a full count beside
                            // them would defeat; a `terminate_after` budget is charged once
                            // per document, a profile shows one weight, and a `min_score`
                            // under global statistics must count with them, so they keep
                            // the one pass.
                            let top = scoring.search(searcher, &*q, &top_docs)?;
                            (count_total(searcher, &*q, sreq.track_total, scripted)?, top)
                        };
                        (
                            c,
                            top.into_iter()
                                .map(|(score, addr)| Candidate {
                                    index: ti,
                                    shard: s.shard_id,
                                    addr,
                                    score: Some(score),
                                    sort: None,
                                    group: None,
                                })
                                .collect(),
                        )
                    }
                } else {
                    let keys = keys.clone().unwrap_or_else(|| {
                        vec![SortKey {
                            kind: SortKind::Score,
                            desc: true,
                            missing_first: false,
                            missing_value: None,
                            mode: None,
                            nested: None,
                        }]
                    });
                    let coll = sort::FieldSortCollector {
                        keys: keys.clone(),
                        limit,
                        after: after.clone(),
                        shard_id: s.shard_id,
                        track_scores: sreq.track_scores,
                    };
                    // The walk visits a segment in several passes: it cannot count a
                    // terminate_after budget once per document.
                    let bounds = match (&sreq.query, keys.first()) {
                        _ if sreq.terminate_after.is_some() => None,
                        (
                            Some(query),
                            Some(SortKey {
                                kind: SortKind::Field { name, .. },
                                ..
                            }),
                        ) => lode_query::required_point_bounds(query, name, ctx)?,
                        _ => None,
                    };
                    let (c, hits) = match walk::top_hits(searcher, &scoring, &*q, &coll, bounds)? {
                        Some(hits) => (
                            count_total(searcher, &*q, sreq.track_total, scripted)?,
                            hits,
                        ),
                        None => {
                            let (c, hits) = scoring.search(searcher, &*q, &(Count, coll))?;
                            (c as u64, hits)
                        }
                    };
                    let with_score =
                        keys.iter().any(|k| k.kind == SortKind::Score) || sreq.track_scores;
                    (
                        c,
                        hits.into_iter()
                            .map(|h| Candidate {
                                index: ti,
                                shard: s.shard_id,
                                addr: h.addr,
                                score: if with_score { Some(h.score) } else { None },
                                sort: Some(h.values),
                                group: None,
                            })
                            .collect(),
                    )
                })
            };
            let (count, cands) = match &collapse {
                None if !sreq.rescore.is_empty() => {
                    let window = sreq.rescore_window.unwrap_or(0);
                    let (count, mut cands) = collect(limit.max(window))?;
                    rescore::apply(&sreq.rescore, searcher, &scoring, ctx, &mut cands)?;
                    (count, cands)
                }
                None => collect(limit)?,
                Some(def) => collapse::top_groups(
                    limit,
                    searcher.num_docs() as usize,
                    collect,
                    |c: &mut Candidate| {
                        let group = collapse::group_value(searcher, c.addr, def)?;
                        c.group = Some(Box::new(group.clone()));
                        Ok(group)
                    },
                )?,
            };
            if let Some(e) = own_ctx.as_ref().and_then(query::take_script_error) {
                return Err(e);
            }
            if let Some((node, rewrite_nanos)) = profiled {
                let (name, reason) = match (score_only, limit) {
                    (true, 0) => ("TotalHitCountCollector", "search_count"),
                    (true, _) => ("SimpleTopScoreDocCollector", "search_top_hits"),
                    (false, _) => ("SimpleFieldCollector", "search_top_hits"),
                };
                let elapsed = started.elapsed().as_nanos() as u64;
                profiles.lock().unwrap_or_else(|p| p.into_inner()).push(
                    profile::ShardQueryProfile {
                        index: ti,
                        shard: s.shard_id,
                        // the collector's time: the shard's search outside the query's calls
                        collector_nanos: elapsed.saturating_sub(node.time_in_nanos()),
                        query: node,
                        rewrite_nanos,
                        collector: name,
                        reason,
                    },
                );
            }
            shard_stats.query_total.fetch_add(1, Ordering::Relaxed);
            add_elapsed(&shard_stats.query_time_nanos, started);
            shard_stats.record_groups(
                &sreq.stats_groups,
                false,
                started.elapsed().as_nanos() as u64,
            );
            Ok((count, cands))
        };
        // One shard runs on this thread; several run in parallel (a thread each).
        let mut results: Vec<EsResult<(u64, Vec<Candidate>)>> = if t.searchers.len() == 1 {
            vec![run_shard(&t.searchers[0])]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = t
                    .searchers
                    .iter()
                    .map(|s| scope.spawn(|| run_shard(s)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(EsError::internal("shard search panicked")))
                    })
                    .collect()
            })
        };
        // A script error in the index's own plan: a one-shard index plans once, so the
        // error is its shard's (several shards with scripts plan their own, above).
        if let Some(e) = query::take_script_error(&ctx) {
            for r in results.iter_mut().filter(|r| r.is_ok()) {
                *r = Err(e.clone());
            }
        }
        for (s, r) in t.searchers.iter().zip(results) {
            let (c, cands) = match r {
                Ok(v) => v,
                Err(e) if shard_failures::fails_shard(&e) => {
                    failures.push(shard_failures::ShardFailure {
                        index: t.index.name.clone(),
                        shard: s.shard_id,
                        error: e,
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            total += c;
            for cand in &cands {
                if let Some(s) = cand.score {
                    max_score = Some(max_score.map_or(s, |m: f32| m.max(s)));
                }
            }
            all_hits.extend(cands);
        }
        shards += t.searchers.len();
        if keys_out.is_none() {
            keys_out = keys;
        }
    }
    if !failures.is_empty() && (failures.len() == shards || !sreq.allow_partial_results) {
        return Err(shard_failures::phase_error(
            &failures,
            failures.len() == shards,
            &sreq.node_id,
        ));
    }
    // Aggregations run over the shards of every index that answered, each planned against its
    // own mapping, and reduce together as in Elasticsearch.
    let answered: Vec<Target>;
    let targets: &[Target] = if failures.is_empty() {
        targets
    } else {
        answered = targets
            .iter()
            .map(|t| Target {
                index: t.index.clone(),
                searchers: t
                    .searchers
                    .iter()
                    .filter(|s| {
                        !failures
                            .iter()
                            .any(|f| f.index == t.index.name && f.shard == s.shard_id)
                    })
                    .cloned()
                    .collect(),
                alias_filter: t.alias_filter.clone(),
                fls: t.fls.clone(),
            })
            .collect();
        &answered
    };
    if let Some(a) = sreq.aggs.as_ref().filter(|_| !targets.is_empty()) {
        let states: Vec<_> = targets.iter().map(|t| t.mapping_state()).collect();
        let ctxs: Vec<_> = targets
            .iter()
            .zip(&states)
            .map(|(t, st)| {
                context(
                    &t.index,
                    st,
                    now,
                    &sreq.terms_lookups,
                    &sreq.runtime,
                    &sreq.field_refs,
                )
            })
            .collect::<EsResult<_>>()?;
        let queries = targets
            .iter()
            .zip(&ctxs)
            .map(|(t, ctx)| base_query(t, sreq, ctx, &early))
            .collect::<EsResult<Vec<_>>>()?;
        let agg_targets: Vec<aggs::AggTarget> = targets
            .iter()
            .zip(&ctxs)
            .zip(&queries)
            .map(|((t, ctx), q)| aggs::AggTarget {
                index_name: &t.index.name,
                ctx,
                shards: &t.searchers,
                query: &**q,
                named: &sreq.named,
                named_scores: sreq.named_scores,
            })
            .collect();
        let out = if sreq.profile {
            let (out, shards) = aggs::run_aggs_multi_profiled(a, &agg_targets, sreq.typed_keys)?;
            let order = targets
                .iter()
                .enumerate()
                .flat_map(|(ti, t)| t.searchers.iter().map(move |s| (ti, s.shard_id)));
            agg_profiles.extend(order.zip(shards));
            out
        } else {
            aggs::run_aggs_multi(a, &agg_targets, sreq.typed_keys)?
        };
        aggs_out = Some(out);
        if let Some(e) = ctxs.iter().find_map(query::take_script_error) {
            return Err(e);
        }
    }
    // Merge across shards and indices.
    match &keys_out {
        None => all_hits.sort_by(|a, b| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.index.cmp(&b.index))
                .then(a.shard.cmp(&b.shard))
                .then(a.addr.segment_ord.cmp(&b.addr.segment_ord))
                .then(a.addr.doc_id.cmp(&b.addr.doc_id))
        }),
        Some(keys) => all_hits.sort_by(|a, b| {
            let (x, y) = (
                a.sort.as_deref().unwrap_or(&[]),
                b.sort.as_deref().unwrap_or(&[]),
            );
            sort::cmp_rows(x, y, keys)
                .then(
                    b.score
                        .partial_cmp(&a.score)
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
                .then(a.index.cmp(&b.index))
                .then(a.shard.cmp(&b.shard))
                .then(a.addr.segment_ord.cmp(&b.addr.segment_ord))
                .then(a.addr.doc_id.cmp(&b.addr.doc_id))
        }),
    }
    if sreq.collapse.is_some() {
        collapse::first_of_each_group(&mut all_hits, |c| c.group.as_deref());
    }
    all_hits.truncate(limit);
    if keys_out
        .as_ref()
        .map(|k| !(k.len() == 1 && k[0].kind == SortKind::Score))
        .unwrap_or(false)
        && !sreq.track_scores
    {
        max_score = None;
    }
    check_cancelled(early.cancel.as_ref())?;
    Ok(QueryPhase {
        total,
        max_score,
        hits: all_hits,
        aggs: aggs_out,
        keys: keys_out,
        shards,
        terminated_early: early.stopped.terminated.load(Ordering::Relaxed),
        timed_out: early.stopped.timed_out.load(Ordering::Relaxed),
        profiles: profiles.into_inner().unwrap_or_else(|p| p.into_inner()),
        agg_profiles,
        failures,
    })
}

/// ES's answer to a search whose task was cancelled: each shard fails with
/// `task_cancelled_exception` (a 400), grouped as `search_phase_execution_exception`.
fn check_cancelled(cancel: Option<&CancelToken>) -> EsResult<()> {
    match cancel {
        Some(c) => c.check(),
        None => Ok(()),
    }
}

fn render_total(total: u64, track: TrackTotal, as_int: bool) -> Option<Value> {
    let (value, relation) = match track {
        TrackTotal::Off if as_int => return Some(json!(-1)),
        TrackTotal::Off => return None,
        TrackTotal::Exact => (total, "eq"),
        TrackTotal::UpTo(n) if total > n => (n, "gte"),
        TrackTotal::UpTo(_) => (total, "eq"),
    };
    Some(if as_int {
        json!(value)
    } else {
        json!({"value": value, "relation": relation})
    })
}

/// Loads and renders the hits.
/// One `script_fields` entry: `{"script": ..., "ignore_failure": bool}`.
/// A `script_fields` entry as read (ES's `SearchSourceBuilder.ScriptField`).
#[derive(Default)]
struct ScriptField {
    script: Option<Value>,
    ignore_failure: bool,
}

static SCRIPT_FIELD: lode_engine::object_parser::ObjectParser<ScriptField> =
    lode_engine::object_parser::ObjectParser {
        name: "script_fields",
        style: lode_engine::object_parser::Style::Custom {
            unknown: |at, t, _| body::unknown_key(at, t),
            wrong_token: body::unknown_key,
        },
        fields: &[&[
            lode_engine::object_parser::Field::new("script", "*", |f, _, v| {
                f.script = Some(v.clone());
                Ok(())
            }),
            lode_engine::object_parser::Field::new("ignore_failure", "*", |f, at, v| {
                f.ignore_failure = v
                    .as_bool()
                    .ok_or_else(|| body::unknown_key(at, body::Token::of(v)))?;
                Ok(())
            }),
        ]],
    };

fn script_field(
    name: &str,
    spec: &Value,
) -> EsResult<(String, Arc<lode_painless::SearchScript>, bool)> {
    let Value::Object(o) = spec else {
        return Err(EsError::parsing(format!(
            "Expected [START_OBJECT] under [{name}], but got a [{}] in [script_fields]",
            match spec {
                Value::Array(_) => "START_ARRAY",
                Value::String(_) => "VALUE_STRING",
                _ => "VALUE",
            }
        )));
    };
    let mut f = ScriptField::default();
    SCRIPT_FIELD.parse_into(&mut f, o)?;
    let ScriptField {
        script,
        ignore_failure,
    } = f;
    let script = script
        .ok_or_else(|| EsError::parsing(format!("script_fields [{name}] requires a [script]")))?;
    let script = lode_painless::SearchScript::compile(&script, None)?;
    Ok((name.to_string(), Arc::new(script), ignore_failure))
}

/// A segment's `doc` for `script_fields`, with one scratch per script.
type ScriptFieldState = (query::DocColumns, Vec<lode_painless::Scratch>);

fn fetch_phase(
    targets: &[Target],
    hits: &[Candidate],
    sreq: &SearchRequest,
    keys: Option<&[SortKey]>,
    mut prof: Option<&mut profile::FetchProfiles>,
    mut raw: Option<&mut RawSources>,
) -> EsResult<Vec<Value>> {
    let mut out = Vec::with_capacity(hits.len());
    let now = now_millis();
    let states: Vec<_> = targets.iter().map(|t| t.mapping_state()).collect();
    let ctxs: Vec<_> = targets
        .iter()
        .zip(&states)
        .map(|(t, st)| {
            context(
                &t.index,
                st,
                now,
                &sreq.terms_lookups,
                &sreq.runtime,
                &sreq.field_refs,
            )
        })
        .collect::<EsResult<_>>()?;
    let highlighters = match &sreq.highlight {
        Some(hl) => targets
            .iter()
            .zip(&ctxs)
            .map(|(t, ctx)| {
                Highlighter::new(
                    hl,
                    sreq.query.as_ref(),
                    ctx,
                    t.index
                        .usize_setting("index.highlight.max_analyzed_offset", 1_000_000),
                    &t.index.name,
                )
                .map(Some)
            })
            .collect::<EsResult<Vec<_>>>()?,
        None => Vec::new(),
    };
    let explained = if sreq.explain {
        let early = EarlyStop {
            deadline: None,
            cancel: None,
            stopped: Arc::default(),
        };
        targets
            .iter()
            .zip(&ctxs)
            .map(|(t, ctx)| base_query(t, sreq, ctx, &early))
            .collect::<EsResult<Vec<_>>>()?
    } else {
        Vec::new()
    };
    let inner_specs = match &sreq.query {
        Some(q) => inner_hits::specs(q)?,
        None => Vec::new(),
    };
    let matched = matched::of_hits(targets, hits, &sreq.named, &ctxs)?;
    let cancel = CancelToken::current();
    let mut ignored_in_segment: HashMap<(usize, usize, u32), bool> = HashMap::new();
    // `script_fields`: each segment's `doc` and the scripts' buffers, reused from hit to hit
    // (a hit then allocates only the values it returns)
    let mut script_docs: HashMap<(usize, usize, u32), ScriptFieldState> = HashMap::new();
    // `fields` on runtime fields: the same, for the fields' evaluation state
    let mut runtime_docs: HashMap<(usize, usize, u32), Option<query::DocColumns>> = HashMap::new();
    for (pos, h) in hits.iter().enumerate() {
        check_cancelled(cancel.as_ref())?;
        let t = &targets[h.index];
        let s = &t
            .searchers
            .iter()
            .find(|s| s.shard_id == h.shard)
            .expect("shard searcher");
        let started = Instant::now();
        let mut doc = s.stored(h.addr)?;
        let stored_nanos = started.elapsed().as_nanos() as u64;
        let id = doc.id.clone().unwrap_or_default();
        let mut hit = Map::new();
        hit.insert("_index".into(), json!(t.index.name));
        if !sreq.stored_fields_none {
            hit.insert("_id".into(), json!(id));
        }
        hit.insert(
            "_score".into(),
            h.score.map(float_value).unwrap_or(Value::Null),
        );
        if let Some(r) = &doc.routing {
            hit.insert("_routing".into(), json!(r));
        }
        // ES returns the `_ignored` metadata field with every hit that has one. Most segments
        // have none: their term dictionary says so without opening the column for each hit.
        let may_have_ignored = s.meta.ignored.is_some_and(|field| {
            *ignored_in_segment
                .entry((h.index, h.shard, h.addr.segment_ord))
                .or_insert_with(|| {
                    s.searcher
                        .segment_reader(h.addr.segment_ord)
                        .inverted_index(field)
                        .map_or(true, |ii| ii.terms().num_terms() > 0)
                })
        });
        if may_have_ignored && !sreq.stored_fields_none {
            let def = lode_engine::mapping::FieldDef::ignored_meta();
            let ignored = lode_hits::docvalues::read(&s.searcher, h.addr, &def, None)?;
            if !ignored.is_empty() {
                hit.insert("_ignored".into(), Value::Array(ignored));
            }
        }
        if sreq.version || sreq.seq_no_primary_term {
            let (seq_no, version) = s.seq_no_version(h.addr)?;
            if sreq.version {
                hit.insert("_version".into(), json!(version));
            }
            if sreq.seq_no_primary_term {
                hit.insert("_seq_no".into(), json!(seq_no));
                hit.insert("_primary_term".into(), json!(PRIMARY_TERM));
            }
        }
        // The whole source, unfiltered, goes out as the stored bytes when the caller splices.
        let raw = raw
            .as_deref_mut()
            .filter(|_| sreq.source.is_identity() && t.fls.is_none())
            .filter(|_| RawSources::can_splice(doc.source_bytes()));
        let needs_tree = !sreq.fields.is_empty()
            || !sreq.stored_fields.is_empty()
            || sreq.highlight.is_some()
            || !inner_specs.is_empty();
        let spliced = raw.is_some();
        let needs_source = (sreq.source.fetch && !spliced) || needs_tree;
        let source_started = Instant::now();
        let source: Option<Value> = if needs_source {
            let bytes = doc.source_bytes();
            // No stored bytes means `_source.enabled: false`: ES then omits `_source`.
            (!bytes.is_empty()).then(|| {
                let src = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                // field-level security: the hidden fields are not in `_source`
                match &t.fls {
                    Some((p, _)) => p.filter_source(&src),
                    None => src,
                }
            })
        } else {
            None
        };
        let source_nanos = source_started.elapsed().as_nanos() as u64;
        if let Some(raw) = raw {
            let bytes = doc.source.take().unwrap_or_default();
            hit.insert("_source".into(), raw.keep(bytes));
        } else if let (true, Some(src)) = (sreq.source.fetch, &source) {
            if let Some(f) = sreq.source.apply(src) {
                hit.insert("_source".into(), f);
            }
        }
        let mut fields = Map::new();
        if !sreq.docvalue_fields.is_empty() {
            let mapping = t.mapping();
            for (pattern, format) in &sreq.docvalue_fields {
                for def in mapping.matching_fields(pattern) {
                    let vals =
                        lode_hits::docvalues::read(&s.searcher, h.addr, &def, format.as_deref())?;
                    if !vals.is_empty() {
                        fields.insert(def.path.clone(), Value::Array(vals));
                    }
                }
            }
        }
        if !sreq.fields.is_empty() && source.is_none() {
            return Err(EsError::illegal_argument(format!(
                "Unable to retrieve the requested [fields] since _source is disabled in the mappings for index [{}]",
                t.index.name
            )));
        }
        if let (false, Some(src)) = (sreq.fields.is_empty(), &source) {
            let mapping = t.mapping();
            for (pattern, format) in &sreq.fields {
                for def in mapping.matching_fields(pattern) {
                    // ES's `TokenCountFieldMapper` fetches the counts from doc values (none
                    // without them), not the text in `_source`.
                    let vals = if def.ty == lode_engine::mapping::FieldType::TokenCount {
                        if !def.doc_values {
                            continue;
                        }
                        lode_hits::docvalues::read(&s.searcher, h.addr, &def, format.as_deref())?
                    } else {
                        lode_hits::docvalues::from_source(src, &def, format.as_deref())?
                    };
                    if !vals.is_empty() {
                        fields.insert(def.path.clone(), Value::Array(vals));
                    }
                }
            }
        }
        if !sreq.fields.is_empty() && !ctxs[h.index].runtime.is_empty() {
            runtime_fields_values(
                &sreq.fields,
                &ctxs[h.index].runtime,
                &states[h.index].mapping,
                s,
                h.addr,
                runtime_docs
                    .entry((h.index, h.shard, h.addr.segment_ord))
                    .or_default(),
                &mut fields,
            )?;
        }
        if !sreq.stored_fields.is_empty() {
            // Lode reads stored fields' values from `_source` and renders them as ES renders
            // stored values; without `_source` it has nothing to read them from.
            let mapping = t.mapping();
            for pattern in &sreq.stored_fields {
                for def in mapping.matching_fields(pattern) {
                    if !def.store || fields.contains_key(&def.path) {
                        continue;
                    }
                    let Some(src) = &source else {
                        return Err(body::not_supported(
                            "stored_fields of an index whose _source is disabled",
                        ));
                    };
                    let vals = lode_hits::docvalues::from_source(src, &def, None)?;
                    if !vals.is_empty() {
                        fields.insert(def.path.clone(), Value::Array(vals));
                    }
                }
            }
        }
        if let (Some(field), Some(group)) = (&sreq.collapse, &h.group) {
            fields.insert(field.clone(), json!([group]));
        }
        if !sreq.script_field_specs.is_empty() {
            let (docs, scratches) = script_docs
                .entry((h.index, h.shard, h.addr.segment_ord))
                .or_insert_with(|| {
                    let mapping = t.mapping();
                    let reader = s.searcher.segment_reader(h.addr.segment_ord);
                    let docs = query::DocColumns::new(reader, query::script::fields_of(&mapping))
                        .with_runtime(ctxs[h.index].runtime.clone());
                    let scratches = sreq
                        .script_field_specs
                        .iter()
                        .map(|_| lode_painless::Scratch::default())
                        .collect();
                    (docs, scratches)
                });
            docs.doc = h.addr.doc_id;
            let score = f64::from(h.score.unwrap_or(0.0));
            for ((name, script, ignore_failure), sc) in
                sreq.script_field_specs.iter().zip(scratches.iter_mut())
            {
                match script.value_in(sc, docs, score) {
                    Ok(Value::Array(a)) => {
                        fields.insert(name.clone(), Value::Array(a));
                    }
                    Ok(v) => {
                        fields.insert(name.clone(), json!([v]));
                    }
                    Err(_) if *ignore_failure => {}
                    Err(e) => return Err(search_phase_error(e)),
                }
            }
        }
        if !fields.is_empty() {
            hit.insert("fields".into(), Value::Object(fields));
        }
        if let (Some(Some(hl)), Some(src)) = (highlighters.get(h.index), &source) {
            // A shard's fetch failure (e.g. `index.highlight.max_analyzed_offset`) fails the
            // search as ES reports it: a search phase failure around the shard's error.
            if let Some(v) = hl.highlight(src, &id).map_err(search_phase_error)? {
                hit.insert("highlight".into(), v);
            }
        }
        if let Some(m) = lode_hits::matched::render(&matched[pos], sreq.named_scores) {
            hit.insert("matched_queries".into(), m);
        }
        if !inner_specs.is_empty() {
            let inner = inner_hits::render(
                &inner_specs,
                &ctxs[h.index],
                s,
                h.addr,
                &t.index.name,
                &id,
                source.as_ref(),
                t.index
                    .usize_setting("index.highlight.max_analyzed_offset", 1_000_000),
                sreq.named_scores,
            )?;
            hit.insert("inner_hits".into(), inner);
        }
        if let Some(q) = explained.get(h.index) {
            hit.insert(
                "_shard".into(),
                json!(format!("[{}][{}]", t.index.name, h.shard)),
            );
            let stats = scoring_statistics(t, sreq, &s.searcher);
            let e = q
                .weight(stats.scoring(&s.searcher))?
                .explain(s.searcher.segment_reader(h.addr.segment_ord), h.addr.doc_id)?;
            let e = serde_json::to_value(e).map_err(|e| EsError::internal(e.to_string()))?;
            hit.insert("_explanation".into(), es_explanation(e));
        }
        if let (Some(vals), Some(keys)) = (&h.sort, keys) {
            hit.insert(
                "sort".into(),
                Value::Array(vals.iter().zip(keys).map(|(v, k)| v.to_json(k)).collect()),
            );
        }
        if let Ok(shard) = t.index.shard(h.shard) {
            let st = &shard.stats;
            st.fetch_total.fetch_add(1, Ordering::Relaxed);
            add_elapsed(&st.fetch_time_nanos, started);
            st.record_groups(
                &sreq.stats_groups,
                true,
                started.elapsed().as_nanos() as u64,
            );
        }
        if let Some(p) = prof.as_deref_mut() {
            p.record(
                (h.index, h.shard),
                stored_nanos,
                // a spliced source is loaded too, only not parsed
                (needs_source || spliced).then_some(source_nanos),
                started.elapsed().as_nanos() as u64,
            );
        }
        out.push(Value::Object(hit));
    }
    Ok(out)
}

/// `collapse.inner_hits`, as ES's `ExpandSearchPhase`: per collapsed hit and inner hits
/// definition, a search of the hit's group (the request's query, filtered on the group's value
/// or, for the null group, on documents without the field) with the definition's `from`,
/// `size`, `sort`, `_source`, a second-level `collapse`, ...; its hits go in the hit's
/// `inner_hits.<name>`.
fn expand_groups(
    targets: &[Target],
    sreq: &SearchRequest,
    page: &[Candidate],
    rendered: &mut [Value],
    now: i64,
) -> EsResult<()> {
    let Some(field) = sreq.collapse.as_deref() else {
        return Ok(());
    };
    if sreq.collapse_inner_hits.is_empty() {
        return Ok(());
    }
    let params = RestRequest {
        doc_security: None,
        field_security: None,
        authorized: None,
        method: crate::rest::Method::Post,
        path: String::new(),
        params: Default::default(),
        body: Vec::new(),
    };
    for (cand, hit) in page.iter().zip(rendered.iter_mut()) {
        let group = cand.group.as_deref().cloned().unwrap_or(Value::Null);
        let mut bool_q = Map::new();
        if group.is_null() {
            bool_q.insert("must_not".into(), json!([{"exists": {"field": field}}]));
        } else {
            bool_q.insert("filter".into(), json!([{"term": {field: group}}]));
        }
        if let Some(q) = &sreq.query_json {
            bool_q.insert("must".into(), json!([q]));
        }
        let mut inner_hits = Map::new();
        for spec in &sreq.collapse_inner_hits {
            let mut body = spec.body.clone();
            body.insert("query".into(), json!({"bool": bool_q}));
            body.insert("track_total_hits".into(), json!(true));
            if let Some(rt) = &sreq.runtime_json {
                body.insert("runtime_mappings".into(), rt.clone());
            }
            let body = Value::Object(body);
            let mut inner = SearchRequest::parse(Some(&body), &params)?;
            inner.terms_lookups = sreq.terms_lookups.clone();
            inner.typed_keys = sreq.typed_keys;
            // the group's hits render as the response's do
            inner.named_scores = sreq.named_scores;
            let qp = query_phase(targets, &inner, inner.from + inner.size, now)?;
            let mut hits = qp.hits;
            hits.drain(..inner.from.min(hits.len()));
            hits.truncate(inner.size);
            let mut inner_rendered =
                fetch_phase(targets, &hits, &inner, qp.keys.as_deref(), None, None)?;
            expand_groups(targets, &inner, &hits, &mut inner_rendered, now)?;
            inner_hits.insert(
                spec.name.clone(),
                json!({"hits": {
                    "total": {"value": qp.total, "relation": "eq"},
                    "max_score": qp.max_score.map(float_value).unwrap_or(Value::Null),
                    "hits": inner_rendered,
                }}),
            );
        }
        if let Some(o) = hit.as_object_mut() {
            o.insert("inner_hits".into(), Value::Object(inner_hits));
        }
    }
    Ok(())
}

/// A `search_after` value for one sort key: a date may be given formatted, in the field's
/// date format (as the sort values of `fields` show it), as ES accepts it.
fn search_after_value(
    v: &Value,
    key: &SortKey,
    mapping: &lode_engine::mapping::Mapping,
) -> EsResult<SortValue> {
    if let (
        SortKind::Field {
            name,
            is_date: true,
            ..
        },
        Value::String(text),
    ) = (&key.kind, v)
    {
        if text.parse::<i64>().is_err() {
            let field = name
                .strip_suffix(lode_engine::mapping::NANOS_SUFFIX)
                .unwrap_or(name);
            if let Some(def) = mapping.field(field) {
                let parsed = if def.nanos_path().is_some() {
                    def.date_format.parse_json_nanos(v, &lode_dates::Tz::utc())
                } else {
                    def.date_format.parse_json(v, &lode_dates::Tz::utc())
                };
                if let Ok(x) = parsed {
                    return Ok(SortValue::I64(x));
                }
            }
        }
    }
    SortValue::from_json(v, key)
}

/// tantivy's explanation in ES's shape: `value`, `description`, `details` (always present).
fn es_explanation(e: Value) -> Value {
    let details = match e.get("details") {
        Some(Value::Array(d)) => d.iter().cloned().map(es_explanation).collect(),
        _ => Vec::new(),
    };
    let mut description = e["description"].as_str().unwrap_or_default().to_string();
    if let Some(Value::Array(ctx)) = e.get("context") {
        for c in ctx.iter().filter_map(Value::as_str) {
            description.push_str(", ");
            description.push_str(c);
        }
    }
    let value = match e["value"].as_f64() {
        Some(v) => float_value(v as f32),
        None => e["value"].clone(),
    };
    json!({"value": value, "description": description, "details": details})
}

/// One shard failure of a shard with no started copy, as ES renders it in `failed_shards`
/// and `_shards.failures` (`NoShardAvailableActionException#forOnShardFailureWrapper`: no
/// message, no node).
fn unavailable_shard_failure(index: &str, shard: usize) -> Value {
    json!({"shard": shard, "index": index, "node": null,
           "reason": {"type": "no_shard_available_action_exception", "reason": null}})
}

/// The searched indices with shards that failed to open, each with those of them the request
/// would have searched (ES groups shard failures by index and cause: one entry per index).
fn unavailable(list: &[Searched], routing: &[String]) -> Vec<(String, Vec<usize>)> {
    list.iter()
        .filter(|s| !s.index.is_closed())
        .map(|s| {
            let shards: Vec<usize> = s
                .index
                .allocation_failures()
                .into_keys()
                .filter(|i| routed(&s.index, routing, *i))
                .collect();
            (s.index.name.clone(), shards)
        })
        .filter(|(_, shards)| !shards.is_empty())
        .collect()
}

/// Whether a searched index has a started shard the request routes to.
fn has_started_shard(s: &Searched, routing: &[String]) -> bool {
    s.index.is_closed()
        || (0..s.index.num_shards())
            .any(|i| routed(&s.index, routing, i) && s.index.shard_failure(i).is_none())
}

/// ES's answer when no searched shard has a started copy: 503 "all shards failed".
pub(crate) fn all_shards_unavailable(missing: &[(String, Vec<usize>)]) -> EsError {
    let cause = EsError::no_shard_available("").with("reason", Value::Null);
    let mut outer = EsError::new(503, "search_phase_execution_exception", "all shards failed");
    outer.extra.insert("phase".into(), json!("query"));
    outer.extra.insert("grouped".into(), json!(true));
    outer.extra.insert(
        "failed_shards".into(),
        Value::Array(
            missing
                .iter()
                .map(|(i, shards)| {
                    unavailable_shard_failure(i, shards.first().copied().unwrap_or(0))
                })
                .collect(),
        ),
    );
    outer.root_causes = vec![cause];
    outer
}

/// Takes the indices whose shards failed to open out of a search: an error when nothing is
/// left or `allow_partial_search_results` is false (ES's `AbstractSearchAsyncAction#run`),
/// else the shard failures to report in `_shards`.
fn split_unavailable(
    list: &mut Vec<Searched>,
    routing: &[String],
    allow_partial: bool,
) -> EsResult<Vec<(String, Vec<usize>)>> {
    let missing = unavailable(list, routing);
    if missing.is_empty() {
        return Ok(missing);
    }
    if !allow_partial {
        let names: Vec<String> = missing
            .iter()
            .flat_map(|(i, shards)| shards.iter().map(move |s| format!("[{i}][{s}]")))
            .collect();
        let mut e = EsError::new(
            503,
            "search_phase_execution_exception",
            format!(
                "Search rejected due to missing shards [{}]. Consider using `allow_partial_search_results` setting to bypass this error.",
                names.join(", ")
            ),
        );
        e.extra.insert("phase".into(), json!("query"));
        e.extra.insert("grouped".into(), json!(true));
        e.extra.insert("failed_shards".into(), json!([]));
        return Err(e);
    }
    list.retain(|s| has_started_shard(s, routing));
    if list.is_empty() {
        return Err(all_shards_unavailable(&missing));
    }
    Ok(missing)
}

/// Adds the shards that had no started copy to a response's `_shards` header.
fn report_unavailable(out: &mut Value, missing: &[(String, Vec<usize>)]) {
    if missing.is_empty() {
        return;
    }
    let n: usize = missing.iter().map(|(_, s)| s.len()).sum();
    if let Some(h) = out.get_mut("_shards").and_then(Value::as_object_mut) {
        let total = h.get("total").and_then(Value::as_u64).unwrap_or(0);
        let failed = h.get("failed").and_then(Value::as_u64).unwrap_or(0);
        h.insert("total".into(), json!(total + n as u64));
        h.insert("failed".into(), json!(failed + n as u64));
        let failures = h.entry("failures").or_insert_with(|| json!([]));
        if let Some(a) = failures.as_array_mut() {
            for (i, shards) in missing {
                a.push(unavailable_shard_failure(
                    i,
                    shards.first().copied().unwrap_or(0),
                ));
            }
        }
    }
}

/// The searched indices' shards count as searched (search idleness), and those that skipped
/// refreshes while idle are refreshed before their readers are taken.
fn mark_searched(indices: &[Searched]) -> EsResult<()> {
    indices.iter().try_for_each(|s| s.index.search_access())
}

fn pin(indices: Vec<Searched>, routing: &[String]) -> EsResult<Vec<Target>> {
    // `split_unavailable` took out the indices with no started shard to search; the started
    // shards of the others are searched, their unassigned ones reported by the caller.
    let missing: Vec<(String, Vec<usize>)> = unavailable(&indices, routing)
        .into_iter()
        .filter(|(name, _)| {
            indices
                .iter()
                .any(|s| &s.index.name == name && !has_started_shard(s, routing))
        })
        .collect();
    if !missing.is_empty() {
        return Err(all_shards_unavailable(&missing));
    }
    mark_searched(&indices)?;
    indices
        .into_iter()
        .map(|s| {
            let searchers = s
                .index
                .started_shards()?
                .iter()
                .filter(|sh| routed(&s.index, routing, sh.id))
                .map(|sh| sh.searcher())
                .collect();
            let alias_filter = s.filter.as_ref().map(query::parse_query).transpose()?;
            let fls = s.fls.map(|p| {
                let st = s.index.mapping_state();
                let state = Arc::new(MappingState {
                    mapping: Arc::new(p.filter_mapping(&st.mapping)),
                    schema: st.schema.clone(),
                });
                (p, state)
            });
            Ok(Target {
                index: s.index,
                searchers,
                alias_filter,
                fls,
            })
        })
        .collect()
}

/// Executes one search over resolved indices and renders the response; with `raw`, the hits'
/// whole sources are kept there and only marked in the tree.
fn execute(
    indices: Vec<Searched>,
    sreq: &SearchRequest,
    scroll: Option<Duration>,
    raw: Option<&mut RawSources>,
) -> EsResult<Value> {
    let started = Instant::now();
    let now = now_millis();
    for i in indices.iter().map(|s| &s.index) {
        let max = i.config().max_result_window;
        if scroll.is_some() && sreq.size > max {
            return Err(search_phase_error(EsError::illegal_argument(format!(
                "Batch size is too large, size must be less than or equal to: [{max}] but was [{}]. Scroll batch sizes cost as much memory as result windows so they are controlled by the [index.max_result_window] index level setting.",
                sreq.size
            )).with("index", i.name.clone())));
        }
        let max_rescore = i.usize_setting("index.max_rescore_window", max);
        if let Some(w) = sreq.rescore_window.filter(|w| *w > max_rescore) {
            return Err(search_phase_error(EsError::illegal_argument(format!(
                "Rescore window [{w}] is too large. It must be less than [{max_rescore}]. This prevents allocating massive heaps for storing the results to be rescored. This limit can be set by changing the [index.max_rescore_window] index level setting."
            ))));
        }
        let max_dv = i.usize_setting("index.max_docvalue_fields_search", 100);
        if sreq.docvalue_fields.len() > max_dv {
            return Err(search_phase_error(EsError::illegal_argument(format!(
                "Trying to retrieve too many docvalue_fields. Must be less than or equal to: [{max_dv}] but was [{}]. This limit can be set by changing the [index.max_docvalue_fields_search] index level setting.",
                sreq.docvalue_fields.len()
            ))));
        }
        let max_sf = i.usize_setting("index.max_script_fields", 32);
        if sreq.script_fields > max_sf {
            return Err(search_phase_error(EsError::illegal_argument(format!(
                "Trying to retrieve too many script_fields. Must be less than or equal to: [{max_sf}] but was [{}]. This limit can be set by changing the [index.max_script_fields] index level setting.",
                sreq.script_fields
            ))));
        }
        if scroll.is_none() && sreq.from + sreq.size > max {
            return Err(search_phase_error(EsError::illegal_argument(format!(
                "Result window is too large, from + size must be less than or equal to: [{max}] but was [{}]. See the scroll api for a more efficient way to request large data sets. This limit can be set by changing the [index.max_result_window] index level setting.",
                sreq.from + sreq.size
            )).with("index", i.name.clone())));
        }
        if sreq.search_after.is_some() && sreq.from > 0 {
            return Err(search_phase_error(EsError::illegal_argument(
                "`from` parameter must be set to 0 when `search_after` is used.",
            )));
        }
    }
    if sreq.collapse.is_some() {
        collapse::check_request(sreq, scroll.is_some())?;
    }
    if let Some(slice) = sreq.slice {
        if scroll.is_none() {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: [slice] can only be used with [scroll] or [point-in-time] requests;",
            ));
        }
        if sreq.aggs.is_some() {
            return Err(body::not_supported("slice with aggregations"));
        }
        for i in indices.iter().map(|s| &s.index) {
            let most = i.usize_setting("index.max_slices_per_scroll", 1024);
            if slice.max as usize > most {
                return Err(search_phase_error(EsError::illegal_argument(format!(
                    "The number of slices [{}] is too large. It must be less than [{most}]. This limit can be set by changing the [index.max_slices_per_scroll] index level setting.",
                    slice.max
                ))));
            }
        }
    }
    if !sreq.rescore.is_empty() {
        let by_score = match &sreq.sort {
            None => true,
            Some(s) => {
                let is_score = |v: &Value| match v {
                    Value::String(f) => f == "_score",
                    Value::Object(o) => o.len() == 1 && o.contains_key("_score"),
                    _ => false,
                };
                match s {
                    Value::Array(a) => a.iter().all(is_score),
                    other => is_score(other),
                }
            }
        };
        if !by_score {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: Cannot use [sort] option in conjunction with [rescore].;",
            ));
        }
        if sreq.collapse.is_some() {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: cannot use `collapse` in conjunction with `rescore`;",
            ));
        }
    }
    let targets = pin(indices, &sreq.routing)?;
    let limit = match scroll {
        Some(_) => usize::MAX / 4,
        None => sreq.from + sreq.size,
    };
    let qp = query_phase(
        &targets,
        sreq,
        if scroll.is_some() { 1 << 30 } else { limit },
        now,
    )
    .map_err(search_phase_error)?;
    if qp.timed_out && !sreq.allow_partial_results {
        // ES's shards throw instead of answering partially, and the search fails with them.
        let mut e = search_phase_error(EsError::bad_request(
            "search_timeout_exception",
            "Time exceeded",
        ));
        e.status = 504;
        if let Some(cause) = e.caused_by.as_mut() {
            cause.status = 504;
        }
        return Err(e);
    }
    let keys = qp.keys.clone();
    let failures = qp.failures;
    let (page, rest): (Vec<Candidate>, Vec<Candidate>) = {
        let mut hits = qp.hits;
        let from = if scroll.is_some() {
            0
        } else {
            sreq.from.min(hits.len())
        };
        hits.drain(..from);
        let take = sreq.size.min(hits.len());
        let page_hits: Vec<Candidate> = hits.drain(..take).collect();
        (page_hits, hits)
    };
    let mut fetch_prof = sreq.profile.then(profile::FetchProfiles::default);
    let index_names: Vec<String> = targets.iter().map(|t| t.index.name.clone()).collect();
    let mut rendered = fetch_phase(
        &targets,
        &page,
        sreq,
        keys.as_deref(),
        fetch_prof.as_mut(),
        raw,
    )?;
    expand_groups(&targets, sreq, &page, &mut rendered, now)?;
    // With no shard to ask (a wildcard matching nothing), ES's empty response has no
    // `suggest` section.
    let suggest_out = match &sreq.suggest {
        Some(s) if targets.iter().any(|t| !t.searchers.is_empty()) => {
            if targets.iter().all(|t| t.fls.is_none()) {
                let shards: Vec<_> = targets
                    .iter()
                    .map(|t| (&t.index, t.searchers.as_slice()))
                    .collect();
                Some(
                    suggest::run(s, &shards, sreq.typed_keys, &sreq.source)
                        .map_err(search_phase_error)?,
                )
            } else {
                // field-level security: a suggester reads the terms of its fields only in the
                // indices where the subject may read them (elsewhere the index analyzes the
                // text but has no terms to offer)
                let mut out = Map::new();
                for one in &s.suggestions {
                    let fields = suggest::fields_read(&one.1);
                    let shards: Vec<_> = targets
                        .iter()
                        .map(|t| {
                            let visible = t
                                .fls
                                .as_ref()
                                .is_none_or(|(p, _)| fields.iter().all(|f| p.allows(f)));
                            let searchers: &[ShardSearcher] =
                                if visible { &t.searchers } else { &[] };
                            (&t.index, searchers)
                        })
                        .collect();
                    let single = suggest::SuggestRequest {
                        global_text: s.global_text.clone(),
                        suggestions: vec![one.clone()],
                    };
                    let v = suggest::run(&single, &shards, sreq.typed_keys, &sreq.source)
                        .map_err(search_phase_error)?;
                    if let Value::Object(m) = v {
                        out.extend(m);
                    }
                }
                Some(Value::Object(out))
            }
        }
        _ => None,
    };
    let mut hits = Map::new();
    if let Some(t) = render_total(qp.total, sreq.track_total, sreq.rest_total_hits_as_int) {
        hits.insert("total".into(), t);
    }
    hits.insert(
        "max_score".into(),
        qp.max_score.map(float_value).unwrap_or(Value::Null),
    );
    hits.insert("hits".into(), Value::Array(rendered));
    let mut body = Map::new();
    if let Some(ttl) = scroll {
        let contexts = targets.iter().map(|t| t.searchers.len()).sum();
        let rest = scroll_hits::ScrollHits::new(rest);
        let bytes = scroll_bytes(targets.len(), rest.bytes());
        let id = scroll_store().insert(
            sreq.max_scroll_contexts,
            contexts,
            bytes,
            ScrollCtx {
                reservation: None,
                contexts: 0,
                remaining: rest,
                expires: Instant::now() + ttl,
                page: Arc::new(ScrollPage {
                    targets,
                    size: sreq.size,
                    keys: keys.clone(),
                    total: qp.total,
                    track: sreq.track_total,
                    source: sreq.source.clone(),
                    version: sreq.version,
                    seq_no_primary_term: sreq.seq_no_primary_term,
                    docvalue_fields: sreq.docvalue_fields.clone(),
                    fields: sreq.fields.clone(),
                    script_field_specs: sreq.script_field_specs.clone(),
                    stored_fields_none: sreq.stored_fields_none,
                    stored_fields: sreq.stored_fields.clone(),
                    stats_groups: sreq.stats_groups.clone(),
                    highlight: sreq.highlight.clone(),
                    query: sreq.query.clone(),
                    named: sreq.named.clone(),
                    terms_lookups: sreq.terms_lookups.clone(),
                    as_int: sreq.rest_total_hits_as_int,
                    big_params: sreq.big_params,
                }),
            },
        )?;
        body.insert("_scroll_id".into(), json!(id));
    }
    body.insert("took".into(), json!(started.elapsed().as_millis() as u64));
    body.insert("timed_out".into(), json!(qp.timed_out));
    if sreq.terminate_after.is_some() {
        body.insert("terminated_early".into(), json!(qp.terminated_early));
    }
    body.insert(
        "_shards".into(),
        json!({"total": qp.shards, "successful": qp.shards, "skipped": 0, "failed": 0}),
    );
    body.insert("hits".into(), Value::Object(hits));
    if let Some(a) = qp.aggs {
        body.insert("aggregations".into(), a);
    }
    if let Some(s) = suggest_out {
        body.insert("suggest".into(), s);
    }
    if sreq.profile {
        let names: Vec<&str> = index_names.iter().map(String::as_str).collect();
        body.insert(
            "profile".into(),
            profile::render(
                &sreq.node_id,
                &names,
                qp.profiles,
                qp.agg_profiles,
                fetch_prof.unwrap_or_default(),
            ),
        );
    }
    let mut out = Value::Object(body);
    shard_failures::report(&mut out, &failures, &sreq.node_id);
    Ok(out)
}

/// `search.max_keep_alive`: longer scroll keep-alives are refused, as in ES.
fn check_keep_alive(node: &Node, keep: Option<Duration>) -> EsResult<()> {
    let max = crate::cluster_settings::max_keep_alive(node);
    match keep {
        Some(k) if k > max => Err(EsError::illegal_argument(format!(
            "Keep alive for request ({}) is too large. It must be less than ({}). This limit can be set by changing the [search.max_keep_alive] cluster level setting.",
            crate::cluster_settings::time_string(k),
            crate::cluster_settings::time_string(max)
        ))),
        _ => Ok(()),
    }
}

fn parse_keep_alive(s: &str) -> EsResult<Duration> {
    let ms = lode_dates::parse_time_value(s).map_err(|_| {
        EsError::illegal_argument(format!("failed to parse setting [scroll] with value [{s}] as a time value: unit is missing or unrecognized"))
    })?;
    Ok(Duration::from_millis(ms.max(0) as u64))
}

/// `GET|POST /{index}/_search`, `/_search`.
pub fn search(
    node: &Node,
    indices: &str,
    req: &RestRequest,
    sources: HitSources,
) -> EsResult<RestResponse> {
    let mut body = req.json_body()?;
    let mut big_params = false;
    if let Some(b) = body.as_mut() {
        big_params = crate::big_integers::exact_script_params(&req.body, b)?;
        crate::stored_scripts::inline_all(node, b)?;
    }
    let mut sreq = SearchRequest::parse(body.as_ref(), req)?;
    sreq.resolve_lookups(node, body.as_ref(), req)?;
    sreq.big_params = big_params;
    // profiles and shard failures name the node
    sreq.node_id = crate::cluster::node_id(node);
    if let (Some(a), Some(m)) = (
        sreq.aggs.as_mut(),
        crate::cluster_settings::max_buckets(node),
    ) {
        a.set_max_buckets(m);
    }
    let scroll = req.param("scroll").map(parse_keep_alive).transpose()?;
    sreq.max_scroll_contexts = max_open_scroll_context(node);
    check_keep_alive(node, scroll)?;
    if scroll.is_some() && sreq.search_after.is_some() {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: using [search_after] is not allowed in a scroll context;",
        ));
    }
    let mut list = targets(node, indices, req)?;
    let missing = split_unavailable(&mut list, &sreq.routing, sreq.allow_partial_results)?;
    check_dls_features(&sreq, &list)?;
    let _hits = reserve_hits_window(&sreq, &list)?;
    let cache_key = cache_key(body.as_ref(), req, &sreq, scroll.is_some(), &list)?;
    let mut raw = (sources == HitSources::Raw).then(RawSources::fresh);
    let mut out = execute_cached(list, &sreq, scroll, cache_key, raw.as_mut())?;
    report_unavailable(&mut out, &missing);
    raw_source::respond_with(out, raw, sreq.big_params)
}

/// What ES refuses in a search under document-level security (its `DlsFlsRequestValidator`):
/// suggesters (they read terms of every document) and profiling.
fn check_dls_features(sreq: &SearchRequest, list: &[Searched]) -> EsResult<()> {
    if !list.iter().any(|s| s.dls) {
        return Ok(());
    }
    if sreq.suggest.is_some() {
        return Err(EsError::new(
            400,
            "security_exception",
            "Suggest isn't supported if document level security is enabled",
        ));
    }
    if sreq.profile {
        return Err(EsError::new(
            400,
            "security_exception",
            "A search request cannot be profiled if document level security is enabled",
        ));
    }
    Ok(())
}

/// Estimated bytes of one hit kept by a shard's query phase and the merge (score, sort
/// values, shard and document ids).
pub const HIT_BYTES: i64 = 96;

/// Reserves the result window on the `request` breaker while the search runs: every shard
/// keeps `from + size` hits, and so does the merge.
fn reserve_hits_window(
    sreq: &SearchRequest,
    list: &[Searched],
) -> EsResult<lode_engine::breaker::Reservation<'static>> {
    let window = sreq.from.saturating_add(sreq.size);
    let breakers = lode_engine::breaker::service();
    if list
        .iter()
        .any(|s| window > s.index.config().max_result_window)
    {
        // Refused by `index.max_result_window` (a 400) before anything is held, as in ES.
        return Ok(breakers.empty(lode_engine::breaker::Kind::Request));
    }
    let window = window as i64;
    let shards: i64 = list.iter().map(|s| s.index.num_shards() as i64).sum();
    let bytes = window.saturating_mul(shards + 1).saturating_mul(HIT_BYTES);
    breakers.reserve(lode_engine::breaker::Kind::Request, bytes, "<search_hits>")
}

/// The request part of a request-cache key, when the request may be cached: `size: 0`, not a
/// scroll, no `now`, and `request_cache` / `index.requests.cache.enable` not off.
fn cache_key(
    body: Option<&Value>,
    req: &RestRequest,
    sreq: &SearchRequest,
    scroll: bool,
    list: &[Searched],
) -> EsResult<Option<String>> {
    // A profiled search measures its own execution: never answered from the cache.
    if sreq.profile {
        return Ok(None);
    }
    let enabled = match req.param("request_cache") {
        Some(_) => req.bool_param("request_cache", true)?,
        None => list.iter().all(|s| {
            s.index
                .settings()
                .get("index.requests.cache.enable")
                .map(|v| {
                    v.as_str()
                        .map_or(v.as_bool() != Some(false), |t| t != "false")
                })
                .unwrap_or(true)
        }),
    };
    let text = body.map(|b| b.to_string()).unwrap_or_default();
    if !enabled || scroll || sreq.size != 0 || request_cache::uses_now(&text) {
        return Ok(None);
    }
    // The looked-up terms live in another document: they are part of the key.
    let text = if sreq.terms_lookups.is_empty() {
        text
    } else {
        let mut looked: Vec<String> = sreq
            .terms_lookups
            .iter()
            .map(|(l, v)| format!("{l:?}={}", Value::Array(v.clone())))
            .collect();
        looked.sort();
        format!("{text}|{}", looked.join("|"))
    };
    // A mapping's runtime fields change the answer without a new reader generation (a PUT
    // mapping replaces a script): they are part of the key.
    let mut text = text;
    for s in list {
        if let Some(rt) = s.index.mapping().json.get("runtime") {
            text = format!("{text}|runtime:{}={rt}", s.index.name);
        }
        // field-level security changes what the aggregations see
        if let Some(p) = &s.fls {
            text = format!("{text}|fls:{}={:?}", s.index.name, p.limits);
        }
    }
    // A refusal under `search.allow_expensive_queries: false` happens while planning, which a
    // cached answer skips: an answer computed while expensive queries were allowed is not one
    // to give while they are not.
    if !query::allow_expensive_queries() {
        text.push_str("|allow_expensive_queries=false");
    }
    // Parameters that only shape the rendering (applied later, in the HTTP layer) stay out.
    let params: Vec<String> = req
        .params
        .iter()
        .filter(|(k, _)| {
            !matches!(
                String::as_str(k),
                "request_cache" | "filter_path" | "pretty" | "human" | "error_trace"
            )
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if params.iter().any(|p| request_cache::uses_now(p)) {
        return Ok(None);
    }
    Ok(Some(format!("{text}|{}", params.join("&"))))
}

fn execute_cached(
    indices: Vec<Searched>,
    sreq: &SearchRequest,
    scroll: Option<Duration>,
    key: Option<String>,
    raw: Option<&mut RawSources>,
) -> EsResult<Value> {
    let Some(base) = key else {
        return execute(indices, sreq, scroll, raw);
    };
    // Before the readers are keyed: a refresh of an idle shard changes them.
    mark_searched(&indices)?;
    let started = Instant::now();
    // Each searched shard's reader generation: a refresh that changed a shard changes the key.
    let mut key = base;
    let mut readers = Vec::new();
    for s in &indices {
        key.push('|');
        key.push_str(&s.index.uuid);
        if let Some(f) = &s.filter {
            key.push_str(&f.to_string());
        }
        for shard in s.index.started_shards()? {
            let (reader_id, generation) = shard.searcher().view();
            key.push_str(&format!(":{reader_id}.{generation}"));
            readers.push(request_cache::ShardReader {
                uuid: s.index.uuid.clone(),
                shard: shard.id,
                view: (reader_id, generation),
            });
        }
    }
    if let Some(mut hit) = request_cache::get(&key, &readers) {
        // As in ES, a query phase answered from the cache still counts in `search.query_total`.
        for s in &indices {
            for shard in s.index.started_shards()? {
                if routed(&s.index, &sreq.routing, shard.id) {
                    shard.stats.query_total.fetch_add(1, Ordering::Relaxed);
                    add_elapsed(&shard.stats.query_time_nanos, started);
                    shard.stats.record_groups(
                        &sreq.stats_groups,
                        false,
                        started.elapsed().as_nanos() as u64,
                    );
                }
            }
        }
        hit["took"] = json!(started.elapsed().as_millis() as u64);
        return Ok(hit);
    }
    // A cached answer is a whole tree: markers would outlive their response.
    let out = execute(indices, sreq, scroll, None)?;
    // Partial results are not the answer for the next request (ES caches only complete ones).
    if out["timed_out"] != json!(true) && out["_shards"]["failed"] == json!(0) {
        request_cache::put(key, out.clone(), readers);
    }
    Ok(out)
}

/// `GET|POST /{index}/_count`.
pub fn count(node: &Node, indices: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let mut body = req.json_body()?;
    if let Some(b) = body.as_mut() {
        crate::big_integers::exact_script_params(&req.body, b)?;
        crate::stored_scripts::inline_all(node, b)?;
    }
    if let Some(Value::Object(m)) = &body {
        for k in m.keys() {
            if k != "query" {
                return Err(EsError::parsing(format!("request does not support [{k}]")));
            }
        }
    }
    let mut sreq = SearchRequest::parse(body.as_ref(), req)?;
    sreq.resolve_lookups(node, body.as_ref(), req)?;
    sreq.size = 0;
    sreq.track_total = TrackTotal::Exact;
    sreq.node_id = crate::cluster::node_id(node);
    let mut list = targets(node, indices, req)?;
    let missing = split_unavailable(&mut list, &sreq.routing, sreq.allow_partial_results)?;
    let targets = pin(list, &sreq.routing)?;
    let qp = query_phase(&targets, &sreq, 0, now_millis()).map_err(search_phase_error)?;
    let mut out = json!({
        "count": qp.total,
        "_shards": {"total": qp.shards, "successful": qp.shards, "skipped": 0, "failed": 0},
    });
    shard_failures::report(&mut out, &qp.failures, &sreq.node_id);
    report_unavailable(&mut out, &missing);
    Ok(RestResponse::ok(out))
}

/// `POST /_msearch`, `/{index}/_msearch`. With [`HitSources::Raw`], every search's hits carry
/// markers of one [`RawSources`], spliced once over the whole response.
pub fn msearch(
    node: &Node,
    default_indices: Option<&str>,
    req: &RestRequest,
    sources: HitSources,
) -> EsResult<RestResponse> {
    let started = Instant::now();
    let mut raw = (sources == HitSources::Raw).then(RawSources::fresh);
    let text = std::str::from_utf8(&req.body)
        .map_err(|_| EsError::parsing("msearch body is not UTF-8"))?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut responses = Vec::new();
    let mut big_params = false;
    let mut i = 0;
    while i < lines.len() {
        let header: Value = crate::rest::parse_json(str::as_bytes(lines[i]))?;
        let mut body: Value = match lines.get(i + 1) {
            Some(l) => {
                let mut body = crate::rest::parse_json(str::as_bytes(l))?;
                let big = crate::big_integers::exact_script_params(str::as_bytes(l), &mut body)?;
                big_params |= big;
                body
            }
            None => {
                return Err(EsError::parsing(
                    "msearch body must be pairs of header and body lines",
                ))
            }
        };
        i += 2;
        let indices = match header.get("index") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(","),
            _ => default_indices.unwrap_or("_all").to_string(),
        };
        let mut sub = RestRequest {
            doc_security: req.doc_security.clone(),
            field_security: req.field_security.clone(),
            authorized: req.authorized.clone(),
            method: crate::rest::Method::Post,
            path: String::new(),
            params: req.params.clone(),
            body: Vec::new(),
        };
        for k in [
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "search_type",
            "request_cache",
            "routing",
            "preference",
            "allow_partial_search_results",
        ] {
            if let Some(v) = header.get(k) {
                sub.params.insert(
                    k.to_string(),
                    match v {
                        Value::String(s) => s.clone(),
                        o => o.to_string(),
                    },
                );
            }
        }
        // Each item is a child task of the `_msearch` task (ES's per-item search task).
        let child = crate::tasks::start_child(
            "indices:data/read/search",
            crate::tasks::search_description(
                &indices,
                sub.param("search_type"),
                body.to_string().as_bytes(),
            ),
        );
        let inlined = crate::stored_scripts::inline_all(node, &mut body);
        let body = &body;
        let result = inlined
            .and_then(|_| SearchRequest::parse(Some(body), &sub))
            .and_then(|mut sreq| {
                sreq.resolve_lookups(node, Some(body), &sub)?;
                sreq.node_id = crate::cluster::node_id(node);
                targets(node, &indices, &sub).and_then(|mut list| {
                    let missing =
                        split_unavailable(&mut list, &sreq.routing, sreq.allow_partial_results)?;
                    check_dls_features(&sreq, &list)?;
                    let _hits = reserve_hits_window(&sreq, &list)?;
                    // As in ES, an item is a search of its own for the request cache (which
                    // keeps trees: a cached search is executed without markers).
                    let key = cache_key(Some(body), &sub, &sreq, false, &list)?;
                    let raw = raw.as_mut();
                    let mut out = match &child {
                        Some(c) => c.run(|| execute_cached(list, &sreq, None, key, raw)),
                        None => execute_cached(list, &sreq, None, key, raw),
                    }?;
                    report_unavailable(&mut out, &missing);
                    Ok(out)
                })
            });
        drop(child);
        responses.push(match result {
            Ok(mut v) => {
                v["status"] = json!(200);
                v
            }
            Err(e) => json!({"error": e.to_error_json(), "status": e.status}),
        });
    }
    raw_source::respond_with(
        json!({"took": started.elapsed().as_millis() as u64, "responses": responses}),
        raw,
        big_params,
    )
}

struct ScrollCtx {
    /// The context's memory on the `request` breaker, released when it is dropped (cleared,
    /// expired or replaced).
    reservation: Option<lode_engine::breaker::Reservation<'static>>,
    /// How many shard contexts it holds (one per searched shard, as ES counts them).
    contexts: usize,
    /// Taken from the front a page at a time.
    remaining: scroll_hits::ScrollHits,
    expires: Instant,
    /// What fetching a page needs, shared with the pages being fetched: a page is fetched
    /// after the store's lock is released, so scrolls do not wait for one another.
    page: Arc<ScrollPage>,
}

/// The pinned searchers and what every page fetches, as the first page did.
struct ScrollPage {
    targets: Vec<Target>,
    size: usize,
    keys: Option<Vec<SortKey>>,
    total: u64,
    track: TrackTotal,
    source: SourceFilter,
    version: bool,
    seq_no_primary_term: bool,
    docvalue_fields: Vec<(String, Option<String>)>,
    fields: Vec<(String, Option<String>)>,
    script_field_specs: Vec<(String, Arc<lode_painless::SearchScript>, bool)>,
    stored_fields_none: bool,
    stored_fields: Vec<String>,
    stats_groups: Vec<String>,
    highlight: Option<HighlightRequest>,
    /// The search query, for highlighting.
    query: Option<query::Query>,
    /// The named queries (every page's `matched_queries`) and the terms they look up.
    named: Vec<query::named::NamedQuery>,
    terms_lookups: query::TermsLookups,
    as_int: bool,
    /// The search's [`SearchRequest::big_params`].
    big_params: bool,
}

struct ScrollStore {
    map: Mutex<HashMap<String, ScrollCtx>>,
}

fn scroll_store() -> &'static ScrollStore {
    static STORE: OnceLock<ScrollStore> = OnceLock::new();
    STORE.get_or_init(|| ScrollStore {
        map: Mutex::new(HashMap::new()),
    })
}

/// Estimated bytes of a scroll context: the pinned searchers of each target and the hits
/// it still has to return.
fn scroll_bytes(targets: usize, remaining: i64) -> i64 {
    const TARGET_BYTES: i64 = 1024;
    (targets as i64)
        .saturating_mul(TARGET_BYTES)
        .saturating_add(remaining)
}

/// `search.max_open_scroll_context` (ES's default 500).
fn max_open_scroll_context(node: &Node) -> usize {
    crate::cluster_settings::value(node, "search.max_open_scroll_context")
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn too_many_scroll_contexts(max: usize) -> EsError {
    let inner = EsError::new(
        429,
        "too_many_scroll_contexts_exception",
        format!("Trying to create too many scroll contexts. Must be less than or equal to: [{max}]. This limit can be set by changing the [search.max_open_scroll_context] setting."),
    );
    let mut outer = EsError::new(429, "search_phase_execution_exception", "all shards failed");
    outer.root_causes = vec![inner.clone()];
    outer.caused_by = Some(Box::new(inner));
    outer
}

impl ScrollStore {
    /// Registers a scroll holding `contexts` shard contexts and about `bytes` of memory:
    /// refused when the open shard contexts would exceed `search.max_open_scroll_context`
    /// (429 `too_many_scroll_contexts_exception`) or the `request` breaker trips.
    fn insert(
        &self,
        max: usize,
        contexts: usize,
        bytes: i64,
        mut ctx: ScrollCtx,
    ) -> EsResult<String> {
        start_reaper();
        let id = lode_engine::index::new_uuid() + &lode_engine::index::new_uuid();
        let mut m = self.map.lock();
        let now = Instant::now();
        m.retain(|_, c| c.expires > now);
        let open: usize = m.values().map(|c| c.contexts).sum();
        if open.saturating_add(contexts) > max {
            return Err(too_many_scroll_contexts(max));
        }
        let breakers = lode_engine::breaker::service();
        ctx.reservation = Some(breakers.reserve(
            lode_engine::breaker::Kind::Request,
            bytes,
            "<scroll_context>",
        )?);
        ctx.contexts = contexts;
        m.insert(id.clone(), ctx);
        Ok(id)
    }

    /// Drops the expired contexts (releasing their memory); returns how many remain open.
    fn reap(&self) -> usize {
        let mut m = self.map.lock();
        let now = Instant::now();
        m.retain(|_, c| c.expires > now);
        m.values().map(|c| c.contexts).sum()
    }
}

/// The open scroll contexts (one per shard of each open scroll), for the stats APIs.
pub fn open_scroll_contexts() -> usize {
    scroll_store().reap()
}

/// The open scroll contexts of each shard, by shard directory (`scroll_current`).
pub fn open_scroll_contexts_by_shard() -> HashMap<std::path::PathBuf, u64> {
    let store = scroll_store();
    store.reap();
    let mut out: HashMap<std::path::PathBuf, u64> = HashMap::new();
    for ctx in store.map.lock().values() {
        for t in &ctx.page.targets {
            for s in &t.searchers {
                *out.entry(t.index.path().join(s.shard_id.to_string()))
                    .or_default() += 1;
            }
        }
    }
    out
}

/// A background thread that frees expired scroll contexts every second, as ES's keep-alive
/// reaper does (`search.keep_alive_interval`), so an abandoned scroll's memory returns to the
/// breaker without waiting for the next scroll request.
fn start_reaper() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("scroll-reaper".into())
            .spawn(|| loop {
                std::thread::sleep(Duration::from_secs(1));
                scroll_store().reap();
            });
    });
}

/// The id of a scroll as `ScrollStore::insert` makes it: two random UUIDs, each 16 bytes in
/// URL-safe base64 without padding.
fn parseable_scroll_id(id: &str) -> bool {
    use base64::Engine;
    let uuid = |s: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s)
            .is_ok_and(|b| b.len() == 16)
    };
    id.len() == 44 && id.is_char_boundary(22) && uuid(&id[..22]) && uuid(&id[22..])
}

/// ES's `TransportSearchHelper#parseScrollId` refuses an id it cannot decode (400) before
/// looking for its context (a well-formed id of no open scroll is a 404).
fn check_scroll_id(id: &str) -> EsResult<()> {
    if parseable_scroll_id(id) {
        Ok(())
    } else {
        Err(EsError::illegal_argument("Cannot parse scroll id"))
    }
}

fn scroll_missing(id: &str) -> EsError {
    let inner = EsError::new(
        404,
        "search_context_missing_exception",
        format!("No search context found for id [{id}]"),
    );
    let mut outer = EsError::new(404, "search_phase_execution_exception", "all shards failed");
    outer.root_causes = vec![inner.clone()];
    outer.caused_by = Some(Box::new(inner));
    outer
}

/// `GET|POST /_search/scroll`.
pub fn scroll(
    node: &Node,
    req: &RestRequest,
    path_id: Option<&str>,
    sources: HitSources,
) -> EsResult<RestResponse> {
    let body = req.json_body()?;
    // ES's `RestSearchScrollAction`: what the body names takes precedence over the URL.
    let id = body
        .as_ref()
        .and_then(|b| b.get("scroll_id"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .or_else(|| path_id.map(str::to_string))
        .or_else(|| req.param("scroll_id").map(str::to_string))
        .ok_or_else(|| {
            EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: scrollId is missing;",
            )
        })?;
    let keep = body
        .as_ref()
        .and_then(|b| b.get("scroll"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .or_else(|| req.param("scroll").map(str::to_string))
        .map(|s| parse_keep_alive(&s))
        .transpose()?;
    check_keep_alive(node, keep)?;
    check_scroll_id(&id)?;
    let started = Instant::now();
    let (page, ctx) = {
        let mut map = scroll_store().map.lock();
        let ctx = match map.get_mut(&id) {
            Some(c) if c.expires > Instant::now() => c,
            _ => {
                map.remove(&id);
                return Err(scroll_missing(&id));
            }
        };
        if let Some(k) = keep {
            ctx.expires = Instant::now() + k;
        }
        let before = ctx.remaining.bytes();
        let page = ctx.remaining.take(ctx.page.size);
        let freed = before - ctx.remaining.bytes();
        if let Some(r) = ctx.reservation.as_mut() {
            r.release(freed);
        }
        (page, ctx.page.clone())
    };
    let sreq = SearchRequest {
        max_scroll_contexts: 500,
        runtime: Default::default(),
        field_refs: Vec::new(),
        aggs_json: None,
        post_filter: None,
        named: ctx.named.clone(),
        // the scroll API has no `include_named_queries_score`: ES renders the names
        named_scores: false,
        from: 0,
        size: ctx.size,
        sort: None,
        source: ctx.source.clone(),
        track_total: ctx.track,
        track_scores: false,
        search_after: None,
        aggs: None,
        docvalue_fields: ctx.docvalue_fields.clone(),
        fields: ctx.fields.clone(),
        stored_fields_none: ctx.stored_fields_none,
        stored_fields: ctx.stored_fields.clone(),
        version: ctx.version,
        seq_no_primary_term: ctx.seq_no_primary_term,
        min_score: None,
        terminate_after: None,
        rest_total_hits_as_int: ctx.as_int || req.bool_param("rest_total_hits_as_int", false)?,
        typed_keys: false,
        allow_partial_results: true,
        script_fields: 0,
        script_field_specs: ctx.script_field_specs.clone(),
        rescore_window: None,
        rescore: Vec::new(),
        stats_groups: ctx.stats_groups.clone(),
        routing: Vec::new(),
        indices_boost: Vec::new(),
        timeout: None,
        collapse: None,
        collapse_inner_hits: Vec::new(),
        query_json: None,
        runtime_json: None,
        highlight: ctx.highlight.clone(),
        explain: false,
        profile: false,
        node_id: String::new(),
        big_params: ctx.big_params,
        dfs: false,
        slice: None,
        terms_lookups: ctx.terms_lookups.clone(),
        suggest: None,
        query: ctx.query.clone(),
    };
    let mut raw = (sources == HitSources::Raw).then(RawSources::fresh);
    let rendered = fetch_phase(
        &ctx.targets,
        &page,
        &sreq,
        ctx.keys.as_deref(),
        None,
        raw.as_mut(),
    )?;
    for t in &ctx.targets {
        if let Ok(shards) = t.index.started_shards() {
            for s in shards {
                s.stats.scroll_total.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let shards: usize = ctx.targets.iter().map(|t| t.searchers.len()).sum();
    let mut hits = Map::new();
    if let Some(t) = render_total(ctx.total, ctx.track, sreq.rest_total_hits_as_int) {
        hits.insert("total".into(), t);
    }
    hits.insert("max_score".into(), Value::Null);
    hits.insert("hits".into(), Value::Array(rendered));
    let out = json!({
        "_scroll_id": id,
        "took": started.elapsed().as_millis() as u64,
        "timed_out": false,
        "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0},
        "hits": hits,
    });
    raw_source::respond_with(out, raw, sreq.big_params)
}

/// `DELETE /_search/scroll`.
pub fn clear_scroll(req: &RestRequest, path_ids: Option<&str>) -> EsResult<RestResponse> {
    let body = req.json_body()?;
    // ES's `RestClearScrollAction`: a body's scroll ids replace the URL's.
    let ids: Vec<String> = match body.as_ref().and_then(|b| b.get("scroll_id")) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => {
            let mut ids = crate::rest::list_param(path_ids);
            if let Some(p) = req.param("scroll_id") {
                ids.extend(crate::rest::list_param(Some(p)));
            }
            ids
        }
    };
    let all = ids.iter().any(|i| i == "_all");
    if !all {
        for id in &ids {
            check_scroll_id(id)?;
        }
    }
    let mut map = scroll_store().map.lock();
    let mut freed = 0;
    if all {
        freed = map.len();
        map.clear();
    } else {
        for id in &ids {
            if map.remove(id).is_some() {
                freed += 1;
            }
        }
    }
    let status = if freed == 0 && !ids.is_empty() {
        404
    } else {
        200
    };
    Ok(RestResponse::json(
        status,
        json!({"succeeded": true, "num_freed": freed}),
    ))
}

/// The ids (and seq_no) of every document a query matches in one index, for by-query APIs.
pub fn matching_ids(
    index: &IndexService,
    query: Option<&Value>,
    alias_filter: Option<&Value>,
    lookups: &query::TermsLookups,
    fls: Option<&FieldPermissions>,
) -> EsResult<Vec<(String, Option<String>, u64)>> {
    let full = index.mapping_state();
    // field-level security: the query sees the readable fields only
    let state = match fls {
        Some(p) => Arc::new(MappingState {
            mapping: Arc::new(p.filter_mapping(&full.mapping)),
            schema: full.schema.clone(),
        }),
        None => full.clone(),
    };
    let ctx = context(
        index,
        &state,
        now_millis(),
        lookups,
        &Default::default(),
        &[],
    )?;
    let mut q: Box<dyn tantivy::query::Query> = match query {
        Some(q) => query::build_query(&query::parse_query(q)?, &ctx)?,
        None => Box::new(tantivy::query::AllQuery),
    };
    if let Some(f) = alias_filter {
        let f = build_unrestricted(&query::parse_query(f)?, index, fls.is_some(), &ctx)?;
        q = Box::new(tantivy::query::BooleanQuery::new(vec![
            (tantivy::query::Occur::Must, q),
            (tantivy::query::Occur::Must, f),
        ]));
    }
    let q = query::nested::non_nested(q, ctx.meta.nested);
    index.search_access()?;
    let mut out = Vec::new();
    for shard in index.shards()? {
        let s = shard.searcher();
        let docs = query::FieldStatistics::new(&s.searcher).search(
            &s.searcher,
            &*q,
            &tantivy::collector::DocSetCollector,
        )?;
        if let Some(e) = query::take_script_error(&ctx) {
            return Err(e);
        }
        let mut docs: Vec<DocAddress> = docs.into_iter().collect();
        docs.sort();
        for addr in docs {
            let d = s.stored(addr)?;
            let id = d.id.unwrap_or_default();
            let routing = d.routing;
            let (seq, _) = s.seq_no_version(addr)?;
            out.push((id, routing, seq));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod unavailable_tests {
    use super::*;

    /// The shapes ES 8 gives shards with no started copy (`AbstractSearchAsyncAction`).
    #[test]
    fn unavailable_shards_render_as_es() {
        let mut out = json!({"_shards": {"total": 3, "successful": 3, "skipped": 0, "failed": 0}});
        report_unavailable(&mut out, &[("red".into(), vec![0, 1])]);
        let failure = json!({"shard": 0, "index": "red", "node": null,
            "reason": {"type": "no_shard_available_action_exception", "reason": null}});
        assert_eq!(
            out["_shards"],
            json!({"total": 5, "successful": 3, "skipped": 0, "failed": 2,
                   "failures": [failure.clone()]})
        );
        let e = all_shards_unavailable(&[("red".into(), vec![0])]);
        assert_eq!(
            e.to_response_json(),
            json!({"error": {
                "root_cause": [{"type": "no_shard_available_action_exception", "reason": null}],
                "type": "search_phase_execution_exception", "reason": "all shards failed",
                "phase": "query", "grouped": true, "failed_shards": [failure]},
                "status": 503})
        );
    }
}

#[cfg(test)]
mod fls_tests {
    use super::*;
    use lode_engine::field_security::{FieldGrant, FieldPermissions};

    #[test]
    fn a_sort_on_a_hidden_field_sorts_as_an_unmapped_field_of_its_type() {
        let analysis = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let full = lode_engine::mapping::compile(
            &json!({"properties": {"pay": {"type": "integer"}, "name": {"type": "keyword"}}}),
            &analysis,
        )
        .unwrap();
        let fls = FieldPermissions::union(vec![FieldGrant {
            grant: Some(vec!["name".into()]),
            except: vec![],
        }])
        .unwrap();
        let seen = fls.filter_mapping(&full);
        assert!(seen.field("pay").is_none() && seen.field("name").is_some());
        let sort = json!(["pay:desc", {"name": "asc"}, {"pay": {"order": "asc", "missing": "_first"}},
            {"pay": {"unmapped_type": "long"}}, "_score"]);
        assert_eq!(
            sort_hidden_as_missing(&sort, &full, &seen),
            json!([
                {"pay": {"order": "desc", "unmapped_type": "integer"}},
                {"name": "asc"},
                {"pay": {"order": "asc", "missing": "_first", "unmapped_type": "integer"}},
                {"pay": {"unmapped_type": "long"}},
                "_score"
            ])
        );
    }
}

#[cfg(test)]
mod hit_sources_tests {
    use super::*;
    use crate::rest::RestBody;
    use lode_engine::shard::VersionReq;

    fn request(path: &str, body: &str) -> RestRequest {
        RestRequest::test_post(path, body)
    }

    /// Only a caller that asks for raw sources gets bytes: the default answer is a tree, with
    /// the source as serde_json reads it and no marker left in it.
    #[test]
    fn raw_sources_are_opt_in() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let idx = node
            .create_index(
                "t",
                &json!({"number_of_shards": 1}),
                &json!({"dynamic": false, "properties": {"k": {"type": "keyword"}}}),
            )
            .unwrap();
        let sent = "\n{ \"k\" : \"x\", \"big\": 18446744073709551616, \"s\": \"\\u00e9\" }\n";
        let src = crate::rest::parse_json(sent.as_bytes()).unwrap();
        idx.index_doc(
            Some("1"),
            &src,
            Arc::from(sent.as_bytes()),
            None,
            VersionReq::Internal,
            false,
        )
        .unwrap();
        idx.refresh().unwrap();
        let req = request("/t/_search", "{}");

        let tree = search(&node, "t", &req, HitSources::default()).unwrap();
        let RestBody::Json(v) = tree.body else {
            panic!("a tree by default: {:?}", tree.body);
        };
        assert_eq!(
            v["hits"]["hits"][0]["_source"],
            json!({"k": "x", "big": 18446744073709551616.0, "s": "\u{e9}"})
        );
        assert!(!v.to_string().contains("lode-source:"));

        let raw = search(&node, "t", &req, HitSources::Raw).unwrap();
        let RestBody::JsonBytes(b) = raw.body else {
            panic!("bytes: {:?}", raw.body);
        };
        let text = String::from_utf8(b).unwrap();
        assert!(
            text.contains(&format!("\"_source\":{}}}]}}}}", sent.trim())),
            "{text}"
        );

        let ms = request(
            "/_msearch",
            "{\"index\":\"t\"}\n{}\n{\"index\":\"t\"}\n{\"_source\":[\"k\"]}\n",
        );
        let RestBody::Json(v) = msearch(&node, None, &ms, HitSources::default())
            .unwrap()
            .body
        else {
            panic!("msearch answers a tree by default");
        };
        assert_eq!(
            v["responses"][0]["hits"]["hits"][0]["_source"]["big"],
            json!(18446744073709551616.0)
        );
        assert_eq!(
            v["responses"][1]["hits"]["hits"][0]["_source"],
            json!({"k": "x"})
        );

        // Raw: the whole source is spliced, the filtered one stays a tree.
        let RestBody::JsonBytes(b) = msearch(&node, None, &ms, HitSources::Raw).unwrap().body
        else {
            panic!("msearch with raw sources answers bytes");
        };
        let text = String::from_utf8(b).unwrap();
        assert!(
            text.contains(&format!("\"_source\":{}}}]}}", sent.trim())),
            "{text}"
        );
        assert!(text.contains("\"_source\":{\"k\":\"x\"}}]}"), "{text}");
        assert!(!text.contains("lode-source:"), "{text}");

        // A search that fails keeps no marker in the answer; the others are still spliced.
        let failing = request(
            "/_msearch",
            "{\"index\":\"t\"}\n{\"query\":{\"nope\":{}}}\n{\"index\":\"t\"}\n{}\n",
        );
        let RestBody::JsonBytes(b) = msearch(&node, None, &failing, HitSources::Raw)
            .unwrap()
            .body
        else {
            panic!("bytes");
        };
        let text = String::from_utf8(b).unwrap();
        assert!(text.contains(sent.trim()), "{text}");
        assert!(!text.contains("lode-source:"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["responses"][0]["status"], json!(400));
        assert_eq!(v["responses"][1]["status"], json!(200));
    }
}

//! The REST APIs' Elasticsearch semantics on top of the engine: search execution (query and
//! fetch phases, scroll, msearch, count), the document, index, alias, cluster, stats and
//! `_cat` APIs, by-query tasks. The Query DSL (`lode-query`), aggregations (`lode-aggs`), hit
//! sorting and shaping (`lode-hits`) and Painless (`lode-painless`) are crates of their own.
//! Requests arrive here already routed and with their JSON bodies parsed; responses leave as
//! `serde_json::Value` in Elasticsearch's shapes.

// `EsError` carries Elasticsearch's error details (extras, causes) by value; errors are the
// rare path, so the size of `Result<_, EsError>` is not worth boxing every error for.
#![allow(clippy::result_large_err)]

pub mod aliases;
pub mod allocation_explain;
/// proptest strategies shared with lode-engine and lode-query (one file, test builds only).
#[cfg(test)]
#[path = "../../engine/src/testing/arb_json.rs"]
mod arb_json;
mod big_integers;
pub mod by_query;
pub mod cat;
pub mod cluster;
pub mod cluster_settings;
pub mod docs;
pub mod http_stats;
pub mod indices;
pub mod monitoring;
pub mod rest;
pub mod search;
pub mod stats;
pub mod stored_scripts;
pub mod tasks;
pub mod thread_pool;
pub mod url_params;

/// The node-wide max clause count of the Query DSL (`indices.query.bool.max_clause_count`).
pub use lode_query::set_max_clause_count;

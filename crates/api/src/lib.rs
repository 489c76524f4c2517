//! Elasticsearch semantics on top of the engine: the Query DSL, aggregations, search
//! execution and the document and index APIs. Requests arrive here already routed and with
//! their JSON bodies parsed; responses leave as `serde_json::Value` in Elasticsearch's shapes.

// `EsError` carries Elasticsearch's error details (extras, causes) by value; errors are the
// rare path, so the size of `Result<_, EsError>` is not worth boxing every error for.
#![allow(clippy::result_large_err)]

pub mod aggs;
pub mod aliases;
pub mod by_query;
pub mod cat;
pub mod cluster;
pub mod cluster_settings;
pub mod docs;
pub mod docvalues;
pub mod indices;
pub mod query;
pub mod rest;
pub mod script;
pub mod search;
pub mod source;
pub mod stats;
pub mod stored_scripts;
pub mod tasks;

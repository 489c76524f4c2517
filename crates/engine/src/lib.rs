//! Lode's storage engine: indices made of shards, each shard a tantivy index plus a translog.
//!
//! - `mapping` / `schema` / `document`: Elasticsearch mappings, the tantivy schema derived from
//!   them, and the conversion of `_source` JSON into tantivy documents.
//! - `shard`: the write path (versions, seq_no, translog, live version map), refresh, flush,
//!   merges and segment statistics.
//! - `translog`: the checksummed write-ahead log with group-commit fsync.
//! - `directory`: a tantivy directory that defers fsync to flush time.
//! - `index` / `node`: index lifecycle, settings, persistence and name resolution.
//!
//! Nothing here parses HTTP or renders Elasticsearch JSON responses; that is `lode-http` and
//! `lode-api`. Errors are `EsError`, which already knows its Elasticsearch type and status.

// `EsError` carries Elasticsearch's error details (extras, causes) by value; errors are the
// rare path, so the size of `Result<_, EsError>` is not worth boxing every error for.
#![allow(clippy::result_large_err)]

pub mod alias;
pub mod archived_settings;
pub mod blocks;
pub mod breaker;
pub mod cancel;
pub mod date_math_name;
pub mod directory;
pub mod disk;
pub mod disk_usage;
pub mod doc_location;
pub mod document;
pub mod durability;
pub mod error;
pub mod field_security;
mod fieldnorms;
pub mod float;
pub mod geo;
pub mod index;
pub mod mapping;
mod merge_priority;
pub mod node;
pub mod object_parser;
pub mod points;
pub mod range_field;
pub mod schema;
pub mod settings;
pub mod shard;
pub mod source_store;
pub mod translog;

pub use error::{EsError, EsResult};

#[cfg(test)]
mod segment_flush_tests;

/// proptest strategies for the generative tests (also included by lode-query and lode-api).
#[cfg(test)]
#[path = "testing/arb_json.rs"]
pub(crate) mod arb_json;
pub use index::IndexService;
pub use node::Node;

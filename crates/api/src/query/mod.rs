//! The Query DSL: `parse` turns Elasticsearch query JSON into a typed `Query` (no tantivy
//! types), `plan` turns a `Query` into a tantivy query against one index's mapping.

use lode_analysis::AnalysisRegistry;
use lode_engine::mapping::Mapping;
use lode_engine::schema::MetaFields;
use tantivy::schema::Schema;

/// Everything planning needs to know about the index being searched.
pub struct QueryContext<'a> {
    pub mapping: &'a Mapping,
    pub schema: &'a Schema,
    pub meta: MetaFields,
    pub analysis: &'a AnalysisRegistry,
    /// "now" for date math, fixed once per request.
    pub now_millis: i64,
    pub max_terms_count: usize,
}

//! The Query DSL as `filter` and `filters` bodies use it: parsed with the request, planned in
//! filter context (constant scores) per index.

use lode_engine::EsResult;
use lode_query::{build_filter, parse_query, Query, QueryContext};
use serde_json::Value;

/// A parsed Query DSL body.
pub(crate) type DslQuery = Query;

pub(crate) fn parse_dsl(v: &Value) -> EsResult<DslQuery> {
    parse_query(v)
}

pub(crate) fn build_dsl(
    q: &DslQuery,
    ctx: &QueryContext,
) -> EsResult<Box<dyn tantivy::query::Query>> {
    build_filter(q, ctx)
}

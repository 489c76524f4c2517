//! The Query DSL as `filter`, `filters` and `missing` use it: parsed with the request, built
//! into a tantivy query per index.
//!
//! TEMPORARY: `crate::query::{parse_query, build_query}` are being written; until they land
//! this holds a minimal stand-in (match_all, term, terms, range, exists, bool) so the
//! aggregations can be built and tested. Switch to the real functions when they exist.

use crate::query::QueryContext;
use lode_engine::mapping::Storage;
use lode_engine::{EsError, EsResult};
use serde_json::Value;
use std::ops::Bound;
use tantivy::query::{AllQuery, BooleanQuery, EmptyQuery, ExistsQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::Term;

/// A parsed Query DSL body.
pub(crate) type DslQuery = Value;

pub(crate) fn parse_dsl(v: &Value) -> EsResult<DslQuery> {
    match v.as_object() {
        Some(o) if o.len() == 1 => Ok(v.clone()),
        _ => Err(EsError::parsing("[_na] query malformed, must start with start_object")),
    }
}

pub(crate) fn build_dsl(q: &DslQuery, ctx: &QueryContext) -> EsResult<Box<dyn Query>> {
    let (kind, body) = q.as_object().and_then(|o| o.iter().next()).ok_or_else(|| {
        EsError::parsing("query malformed, empty clause found")
    })?;
    Ok(match kind.as_str() {
        "match_all" => Box::new(AllQuery),
        "match_none" => Box::new(EmptyQuery),
        "exists" => {
            let f = body.get("field").and_then(Value::as_str).unwrap_or_default();
            if ctx.schema.get_field(f).is_err() {
                return Ok(Box::new(EmptyQuery));
            }
            Box::new(ExistsQuery::new(f.to_string(), false))
        }
        "term" | "terms" => {
            let (field, v) = body
                .as_object()
                .and_then(|o| o.iter().next())
                .ok_or_else(|| EsError::parsing("[term] query malformed"))?;
            let values: Vec<Value> = match (kind.as_str(), v) {
                ("terms", Value::Array(a)) => a.clone(),
                (_, Value::Object(o)) => vec![o.get("value").cloned().unwrap_or(Value::Null)],
                (_, other) => vec![other.clone()],
            };
            let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            for value in values {
                if let Some(t) = term(ctx, field, &value)? {
                    clauses.push((Occur::Should, Box::new(TermQuery::new(t, IndexRecordOption::Basic))));
                }
            }
            Box::new(BooleanQuery::new(clauses))
        }
        "range" => {
            let (field, spec) = body
                .as_object()
                .and_then(|o| o.iter().next())
                .ok_or_else(|| EsError::parsing("[range] query malformed"))?;
            let bound = |k: &str, incl: bool| -> EsResult<Bound<Term>> {
                match spec.get(k) {
                    Some(v) => Ok(match term(ctx, field, v)? {
                        Some(t) if incl => Bound::Included(t),
                        Some(t) => Bound::Excluded(t),
                        None => Bound::Unbounded,
                    }),
                    None => Ok(Bound::Unbounded),
                }
            };
            let lower = match bound("gte", true)? {
                Bound::Unbounded => bound("gt", false)?,
                b => b,
            };
            let upper = match bound("lte", true)? {
                Bound::Unbounded => bound("lt", false)?,
                b => b,
            };
            if matches!((&lower, &upper), (Bound::Unbounded, Bound::Unbounded)) {
                return Ok(Box::new(EmptyQuery));
            }
            Box::new(RangeQuery::new(lower, upper))
        }
        "bool" => {
            let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            let o = body.as_object().cloned().unwrap_or_default();
            for (k, occur) in [("must", Occur::Must), ("filter", Occur::Must), ("should", Occur::Should), ("must_not", Occur::MustNot)] {
                let items: Vec<Value> = match o.get(k) {
                    Some(Value::Array(a)) => a.clone(),
                    Some(v) => vec![v.clone()],
                    None => vec![],
                };
                for item in items {
                    clauses.push((occur, build_dsl(&item, ctx)?));
                }
            }
            if clauses.iter().all(|(o, _)| *o == Occur::MustNot) {
                clauses.push((Occur::Must, Box::new(AllQuery)));
            }
            Box::new(BooleanQuery::new(clauses))
        }
        other => return Err(EsError::parsing(format!("unknown query [{other}]"))),
    })
}

fn term(ctx: &QueryContext, field: &str, v: &Value) -> EsResult<Option<Term>> {
    let Some(def) = ctx.mapping.field(field) else { return Ok(None) };
    let Ok(f) = ctx.schema.get_field(field) else { return Ok(None) };
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let bad = || EsError::illegal_argument(format!("failed to parse [{s}] for field [{field}]"));
    Ok(Some(match def.storage() {
        Storage::Keyword | Storage::Text => Term::from_field_text(f, &s),
        Storage::I64 if def.ty.is_date() => {
            let ms = def.date_format.parse_json(v, &lode_dates::Tz::utc()).map_err(|_| bad())?;
            Term::from_field_i64(f, ms)
        }
        Storage::I64 => Term::from_field_i64(f, s.parse::<f64>().map_err(|_| bad())? as i64),
        Storage::F64 => Term::from_field_f64(f, s.parse::<f64>().map_err(|_| bad())?),
        Storage::Bool => Term::from_field_bool(f, s == "true"),
        _ => return Ok(None),
    }))
}

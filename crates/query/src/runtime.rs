//! Runtime fields (`runtime_mappings`): a per-document value source backed by a compiled
//! Painless script whose `emit(...)` calls are the field's values. Queries on a runtime field
//! are per-document filters (as the `script` query: a verification step inside a
//! conjunction), and sort and `fields` read the same values.

use crate::script::{ScriptErrors, SegmentDocs};
use lode_engine::{EsError, EsResult};
use lode_painless::SearchScript;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeType {
    Keyword,
    Long,
    Double,
    Date,
    Boolean,
}

impl RuntimeType {
    pub fn name(self) -> &'static str {
        match self {
            RuntimeType::Keyword => "keyword",
            RuntimeType::Long => "long",
            RuntimeType::Double => "double",
            RuntimeType::Date => "date",
            RuntimeType::Boolean => "boolean",
        }
    }
}

#[derive(Debug)]
pub struct RuntimeField {
    pub name: String,
    pub ty: RuntimeType,
    pub script: SearchScript,
}

/// The request's runtime fields by name.
pub type RuntimeFields = Arc<BTreeMap<String, Arc<RuntimeField>>>;

/// Parses `runtime_mappings` (ES's `RuntimeField.parseRuntimeFields`).
pub fn parse_runtime_mappings(v: &Value) -> EsResult<RuntimeFields> {
    let o = v
        .as_object()
        .ok_or_else(|| EsError::parsing("Expected map for runtime block but got a non-object"))?;
    let mut out = BTreeMap::new();
    for (name, def) in o {
        let d = def.as_object().ok_or_else(|| {
            mapper_parsing(format!(
                "Expected map for runtime field [{name}] definition but got a {}",
                if def.is_string() {
                    "java.lang.String"
                } else {
                    "non-object"
                }
            ))
        })?;
        let ty = match d.get("type") {
            None => {
                return Err(mapper_parsing(format!(
                    "No type specified for runtime field [{name}]"
                )))
            }
            Some(t) => match t.as_str().unwrap_or_default() {
                "keyword" => RuntimeType::Keyword,
                "long" => RuntimeType::Long,
                "double" => RuntimeType::Double,
                "date" => RuntimeType::Date,
                "boolean" => RuntimeType::Boolean,
                "ip" | "geo_point" | "composite" | "lookup" => {
                    return Err(mapper_parsing(format!(
                        "runtime field [{name}] of type [{}] is not supported by Lode",
                        t.as_str().unwrap_or_default()
                    )))
                }
                other => {
                    return Err(mapper_parsing(format!(
                        "No handler for type [{other}] declared on runtime field [{name}]"
                    )))
                }
            },
        };
        for k in d.keys() {
            match k.as_str() {
                "type" | "script" => {}
                "format" if ty == RuntimeType::Date => {
                    return Err(mapper_parsing(format!(
                        "runtime field [{name}]: [format] is not supported by Lode"
                    )))
                }
                _ => {
                    return Err(mapper_parsing(format!(
                        "unknown parameter [{k}] on runtime field [{name}] of type [{}]",
                        ty.name()
                    )))
                }
            }
        }
        let Some(script) = d.get("script") else {
            return Err(mapper_parsing(format!(
                "runtime field [{name}] without a [script] (read from _source) is not supported by Lode"
            )));
        };
        let script = SearchScript::compile_runtime(script)?;
        out.insert(
            name.clone(),
            Arc::new(RuntimeField {
                name: name.clone(),
                ty,
                script,
            }),
        );
    }
    Ok(Arc::new(out))
}

impl RuntimeField {
    /// The document's values (`docs.doc`), each of the field's type, as JSON: strings,
    /// integers (long, and date as epoch milliseconds), doubles, booleans.
    pub fn values(&self, docs: &mut SegmentDocs) -> EsResult<Vec<Value>> {
        let emitted = self.script.emit(docs)?;
        emitted.into_iter().map(|v| self.coerce(v)).collect()
    }

    fn coerce(&self, v: Value) -> EsResult<Value> {
        let bad = |v: &Value| {
            EsError::bad_request(
                "script_exception",
                format!(
                    "runtime error: cannot emit [{v}] into runtime field [{}] of type [{}]",
                    self.name,
                    self.ty.name()
                ),
            )
        };
        Ok(match (self.ty, &v) {
            (RuntimeType::Keyword, Value::String(_)) => v,
            (RuntimeType::Long | RuntimeType::Date, Value::Number(n)) if n.is_i64() => v,
            (RuntimeType::Double, Value::Number(n)) => Value::from(n.as_f64().unwrap_or(0.0)),
            (RuntimeType::Boolean, Value::Bool(_)) => v,
            _ => return Err(bad(&v)),
        })
    }

    /// Runs the field on a document, recording a runtime error in `errors` (empty then).
    pub fn values_or_record(&self, docs: &mut SegmentDocs, errors: &ScriptErrors) -> Vec<Value> {
        if errors.lock().is_some() {
            return Vec::new();
        }
        self.values(docs).unwrap_or_else(|e| {
            errors.lock().get_or_insert(e);
            Vec::new()
        })
    }
}

fn mapper_parsing(reason: impl Into<String>) -> EsError {
    EsError::bad_request("mapper_parsing_exception", reason)
}

/// A predicate over a document's runtime values.
pub type Pred = Arc<dyn Fn(&[Value]) -> bool + Send + Sync>;

/// A query value read as the field's type (a date as epoch milliseconds or an ISO date).
pub fn query_value(f: &RuntimeField, v: &Value) -> EsResult<Value> {
    let bad = || {
        EsError::bad_request(
            "query_shard_exception",
            format!(
                "failed to create query: cannot parse [{v}] for runtime field [{}] of type [{}]",
                f.name,
                f.ty.name()
            ),
        )
    };
    Ok(match f.ty {
        RuntimeType::Keyword => match v {
            Value::String(_) => v.clone(),
            other => Value::String(other.to_string()),
        },
        RuntimeType::Long => match v {
            Value::Number(n) if n.is_i64() => v.clone(),
            Value::Number(n) => Value::from(n.as_f64().unwrap_or(0.0) as i64),
            Value::String(s) => Value::from(s.parse::<i64>().map_err(|_| bad())?),
            _ => return Err(bad()),
        },
        RuntimeType::Date => match v {
            Value::Number(n) => Value::from(n.as_i64().ok_or_else(bad)?),
            Value::String(s) => match s.parse::<i64>() {
                Ok(i) => Value::from(i),
                Err(_) => Value::from(
                    lode_dates::DateFormat::default()
                        .parse_json(v, &lode_dates::Tz::utc())
                        .map_err(|_| bad())?,
                ),
            },
            _ => return Err(bad()),
        },
        RuntimeType::Double => match v {
            Value::Number(n) => Value::from(n.as_f64().unwrap_or(0.0)),
            Value::String(s) => Value::from(s.parse::<f64>().map_err(|_| bad())?),
            _ => return Err(bad()),
        },
        RuntimeType::Boolean => match v {
            Value::Bool(_) => v.clone(),
            Value::String(s) if s == "true" || s == "false" => Value::Bool(s == "true"),
            _ => return Err(bad()),
        },
    })
}

/// Whether a document value equals a query value (both of the field's type).
pub fn same(v: &Value, want: &Value, case_insensitive: bool) -> bool {
    match (v, want) {
        (Value::String(a), Value::String(b)) if case_insensitive => {
            a.to_lowercase() == b.to_lowercase()
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => v == want,
    }
}

fn cmp(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Whether a document value lies within a range's bounds.
pub fn in_range(v: &Value, from: Option<&Value>, to: Option<&Value>, il: bool, iu: bool) -> bool {
    use std::cmp::Ordering::*;
    let lo =
        from.is_none_or(|f| matches!((cmp(v, f), il), (Some(Greater), _) | (Some(Equal), true)));
    let hi = to.is_none_or(|t| matches!((cmp(v, t), iu), (Some(Less), _) | (Some(Equal), true)));
    lo && hi
}

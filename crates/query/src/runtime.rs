//! Runtime fields (`runtime_mappings`): a per-document value source backed by a compiled
//! Painless script whose `emit(...)` calls are the field's values. Queries on a runtime field
//! are per-document filters (as the `script` query: a verification step inside a
//! conjunction), and sort and `fields` read the same values.

use crate::script::{ScriptErrors, SegmentDocs};
use lode_engine::object_parser::{ignore, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use lode_painless::{Emitted, Scratch, SearchScript};
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
    /// None: the values of the same-named field in `_source`, as ES reads them.
    pub script: Option<SearchScript>,
    /// An aggregation's `script` standing in for a field: its values are what the script
    /// returns (not `emit`s), per value of `value_of` (as `_value`) for a value script.
    pub agg: Option<AggEval>,
    /// A `date` field's `format` (ES's default `strict_date_optional_time||epoch_millis`
    /// when none is given): parses `_source` and emitted strings, renders keys and `fields`.
    pub format: Option<(String, lode_dates::DateFormat)>,
    /// `on_script_error: continue`: a document whose script fails has no values (ES's
    /// `AbstractFieldScript#runForDoc`) instead of failing the search.
    pub continue_on_error: bool,
}

#[derive(Debug)]
pub struct AggEval {
    pub value_of: Option<String>,
}

impl RuntimeField {
    /// A `keyword` field without a script: the values at `name` in `_source` (the keys of a
    /// `flattened` field are read this way by aggregations and sorts).
    pub fn from_source_keyword(name: &str) -> RuntimeField {
        RuntimeField {
            name: name.to_string(),
            ty: RuntimeType::Keyword,
            script: None,
            agg: None,
            format: None,
            continue_on_error: false,
        }
    }

    /// An aggregation's script as a field of type `ty` (compiled once, run per document).
    pub fn agg_script(
        name: String,
        ty: RuntimeType,
        script: &Value,
        value_of: Option<String>,
    ) -> EsResult<RuntimeField> {
        Ok(RuntimeField {
            name,
            ty,
            script: Some(SearchScript::compile_agg(script, None)?),
            agg: Some(AggEval { value_of }),
            format: None,
            continue_on_error: false,
        })
    }

    /// An aggregation script's values on the current document (appended to `st.out`, the
    /// field's type applied by the caller): per value of `value_of` as `_value` for a value
    /// script, the column's values read into the state's reused buffer.
    fn agg_into(
        &self,
        script: &SearchScript,
        agg: &AggEval,
        docs: &mut SegmentDocs,
        st: &mut RtState,
    ) -> EsResult<()> {
        use lode_painless::{DocField, DocLookup, ScriptValue};
        let Some(f) = &agg.value_of else {
            return script.agg_value_in(&mut st.scratch, docs, None, &mut st.out);
        };
        let mut input = st.input.take().unwrap_or(DocField::Long(Vec::new()));
        let r = docs
            .field_into(f, &mut input)
            .map_err(EsError::illegal_argument)
            .and_then(|()| {
                let n = match &input {
                    DocField::Long(v) | DocField::Date(v) => v.len(),
                    DocField::Double(v) => v.len(),
                    DocField::Str(v) => v.len(),
                    DocField::Bool(v) => v.len(),
                };
                for i in 0..n {
                    let value = match &input {
                        DocField::Long(v) | DocField::Date(v) => ScriptValue::Long(v[i]),
                        DocField::Double(v) => ScriptValue::Double(v[i]),
                        DocField::Str(v) => ScriptValue::Str(&v[i]),
                        DocField::Bool(v) => ScriptValue::Bool(v[i]),
                    };
                    script.agg_value_in(&mut st.scratch, docs, Some(value), &mut st.out)?;
                }
                Ok(())
            });
        st.input = Some(input);
        r
    }

    /// An aggregation script's value read as the field's type, in place; `false` drops it.
    fn agg_coerce(&self, v: &mut Value, st: &mut String) -> bool {
        use std::fmt::Write;
        match (self.ty, &*v) {
            (_, Value::Null | Value::Array(_) | Value::Object(_)) => false,
            (RuntimeType::Keyword, Value::String(_)) => true,
            (RuntimeType::Keyword, other) => {
                st.clear();
                let _ = write!(st, "{other}");
                true
            }
            (RuntimeType::Boolean, Value::Bool(_)) => true,
            (RuntimeType::Long | RuntimeType::Date, Value::Number(n)) => {
                match n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)) {
                    Some(i) => {
                        *v = Value::from(i);
                        true
                    }
                    None => false,
                }
            }
            (RuntimeType::Double, Value::Number(n)) => match n.as_f64() {
                Some(f) => {
                    *v = Value::from(f);
                    true
                }
                None => false,
            },
            (RuntimeType::Double, Value::Bool(b)) => {
                *v = Value::from(u8::from(*b) as f64);
                true
            }
            (RuntimeType::Date, Value::String(_)) => match self.parse_date(v) {
                Some(ms) => {
                    *v = Value::from(ms);
                    true
                }
                None => false,
            },
            (RuntimeType::Double | RuntimeType::Long, Value::String(s)) => match s.parse::<f64>() {
                Ok(f) => {
                    *v = match self.ty {
                        RuntimeType::Double => Value::from(f),
                        _ => Value::from(f as i64),
                    };
                    true
                }
                Err(_) => false,
            },
            _ => false,
        }
    }
}

/// A runtime field's evaluation state on one segment, kept by the segment's [`SegmentDocs`]
/// and reused from document to document: the script's [`Scratch`], the buffer its values are
/// written into, and a value script's input column values. Evaluating a document allocates
/// nothing once these have grown (a field without a script reads `_source`, which does).
#[derive(Default)]
pub struct RtState {
    scratch: Scratch,
    out: Emitted,
    input: Option<lode_painless::DocField>,
    text: String,
}

/// The request's runtime fields by name.
pub type RuntimeFields = Arc<BTreeMap<String, Arc<RuntimeField>>>;

/// A runtime field definition as read: its name and type (read first, as ES's type parser
/// is chosen by `type`), then its parameters.
struct RuntimeDef {
    name: String,
    ty: RuntimeType,
    script: Option<Value>,
    format: Option<(String, lode_dates::DateFormat)>,
    /// `on_script_error` as given (`Some(true)`: `continue`).
    on_script_error: Option<bool>,
}

fn unknown_parameter(d: &RuntimeDef, key: &str) -> EsError {
    mapper_parsing(format!(
        "unknown parameter [{key}] on runtime field [{}] of type [{}]",
        d.name,
        d.ty.name()
    ))
}

/// The parameters of a runtime field (ES's `AbstractScriptFieldType.Builder`): `type`,
/// `script`, `on_script_error`, `meta`, and `format` and `locale` for a `date`; any other is
/// an unknown parameter of its type.
static RUNTIME_FIELD: ObjectParser<RuntimeDef> = ObjectParser {
    name: "runtime",
    style: Style::Object,
    fields: &[&[
        Field::new("type", "*", ignore),
        Field::new("script", "*", |d, _, v| {
            d.script = Some(v.clone());
            Ok(())
        }),
        Field::new("on_script_error", "*", |d, at, v| {
            d.on_script_error = Some(match v.as_str() {
                Some("fail") => false,
                Some("continue") => true,
                _ => {
                    let shown = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    return Err(mapper_parsing(format!(
                        "Unknown value [{shown}] for field [{}] - accepted values are [fail, continue]",
                        at.key
                    )));
                }
            });
            Ok(())
        }),
        // kept as given in the mapping (the mapping GET returns it); only checked here
        Field::new("meta", "*", |d, _, v| {
            lode_engine::mapping::check_meta(&d.name, v)
        }),
        Field::new("locale", "*", |d, at, v| {
            if d.ty != RuntimeType::Date {
                return Err(unknown_parameter(d, at.key));
            }
            lode_dates::check_locale(v).map_err(|reason| {
                mapper_parsing(format!("[locale] of runtime field [{}]: {reason}", d.name))
            })
        }),
        Field::new("format", "*", |d, at, v| {
            if d.ty != RuntimeType::Date {
                return Err(unknown_parameter(d, at.key));
            }
            let name = &d.name;
            let spec = v.as_str().ok_or_else(|| {
                mapper_parsing(format!(
                    "Wrong value for format of runtime field [{name}]: [{v}]"
                ))
            })?;
            let f = lode_dates::DateFormat::parse(spec).map_err(|e| {
                mapper_parsing(format!("Error parsing [format] on field [{name}]: {e}"))
            })?;
            d.format = Some((spec.to_string(), f));
            Ok(())
        }),
        Field::other("*", |d, at, _| Err(unknown_parameter(d, at.key))),
    ]],
};

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
        let mut def = RuntimeDef {
            name: name.clone(),
            ty,
            script: None,
            format: None,
            on_script_error: None,
        };
        RUNTIME_FIELD.parse_into(&mut def, d)?;
        let RuntimeDef {
            script,
            format,
            on_script_error,
            ..
        } = def;
        let script = match script {
            None | Some(Value::Null) => None,
            Some(script) => Some(SearchScript::compile_runtime(&script)?),
        };
        // ES's `onScriptErrorParam` requires a script once it is set to other than `fail`
        if on_script_error == Some(true) && script.is_none() {
            return Err(mapper_parsing(
                "Field [on_script_error] requires field [script] to be configured",
            ));
        }
        out.insert(
            name.clone(),
            Arc::new(RuntimeField {
                name: name.clone(),
                ty,
                script,
                agg: None,
                format,
                continue_on_error: on_script_error == Some(true),
            }),
        );
    }
    Ok(Arc::new(out))
}

impl RuntimeField {
    /// The document's values (`docs.doc`), each of the field's type, as JSON: strings,
    /// integers (long, and date as epoch milliseconds), doubles, booleans. A new vector: a
    /// per-document reader uses [`RuntimeField::with_values`].
    pub fn values(&self, docs: &mut SegmentDocs) -> EsResult<Vec<Value>> {
        self.with_values(docs, <[Value]>::to_vec)
    }

    /// Calls `f` with the document's values (as [`RuntimeField::values`]), evaluated into
    /// the segment's reused state for this field (see [`RtState`]).
    pub fn with_values<R>(
        &self,
        docs: &mut SegmentDocs,
        f: impl FnOnce(&[Value]) -> R,
    ) -> EsResult<R> {
        let key = self as *const RuntimeField as usize;
        let mut st = docs.take_rt_state(key);
        let r = self.eval_into(docs, &mut st).map(|()| f(st.out.values()));
        docs.put_rt_state(key, st);
        r
    }

    fn eval_into(&self, docs: &mut SegmentDocs, st: &mut RtState) -> EsResult<()> {
        st.out.clear();
        let Some(script) = &self.script else {
            let source = docs
                .source()
                .map_err(|e| EsError::bad_request("illegal_state_exception", e))?;
            let mut raw = Vec::new();
            source_values(&source, &self.name, &mut raw);
            for v in raw {
                if let Some(v) = self.read_source_value(v) {
                    st.out.push(v);
                }
            }
            return Ok(());
        };
        if let Some(agg) = &self.agg {
            self.agg_into(script, agg, docs, st)?;
            let RtState { out, text, .. } = st;
            // a keyword's non-string value is written as its string into the slot's buffer
            for i in 0..out.len() {
                let v = &mut out.values_mut()[i];
                if !self.agg_coerce(v, text) {
                    *v = Value::Null;
                } else if self.ty == RuntimeType::Keyword && !v.is_string() {
                    out.set_string_with(i, |b| b.push_str(text));
                }
            }
            out.retain(|v| !v.is_null());
            return Ok(());
        }
        let emitted = script
            .emit_in(&mut st.scratch, docs, &mut st.out)
            .and_then(|()| {
                st.out
                    .values_mut()
                    .iter_mut()
                    .try_for_each(|v| self.coerce(v))
            });
        match emitted {
            Err(_) if self.continue_on_error => {
                st.out.clear();
                Ok(())
            }
            r => r,
        }
    }

    /// A `_source` value read as the field's type; a value that does not parse is skipped.
    fn read_source_value(&self, v: &Value) -> Option<Value> {
        match self.ty {
            RuntimeType::Keyword => match v {
                Value::String(_) => Some(v.clone()),
                Value::Number(_) | Value::Bool(_) => Some(Value::String(v.to_string())),
                _ => None,
            },
            RuntimeType::Long => match v {
                Value::Number(n) => n
                    .as_i64()
                    .or_else(|| n.as_f64().map(|f| f as i64))
                    .map(Value::from),
                Value::String(s) => s
                    .parse::<i64>()
                    .ok()
                    .or_else(|| s.parse::<f64>().ok().map(|f| f as i64))
                    .map(Value::from),
                _ => None,
            },
            RuntimeType::Double => match v {
                Value::Number(n) => n.as_f64().map(Value::from),
                Value::String(s) => s.parse::<f64>().ok().map(Value::from),
                _ => None,
            },
            RuntimeType::Boolean => match v {
                Value::Bool(_) => Some(v.clone()),
                Value::String(s) if s == "true" || s == "false" => Some(Value::Bool(s == "true")),
                _ => None,
            },
            RuntimeType::Date => match v {
                Value::Number(n) => n.as_i64().map(Value::from),
                Value::String(_) => self.parse_date(v).map(Value::from),
                _ => None,
            },
        }
    }

    /// The field's date format (ES's default when the definition has none).
    pub fn date_format(&self) -> lode_dates::DateFormat {
        match &self.format {
            Some((_, f)) => f.clone(),
            None => lode_dates::DateFormat::default(),
        }
    }

    /// A date string read with the field's format, as epoch milliseconds.
    fn parse_date(&self, v: &Value) -> Option<i64> {
        static DEFAULT: std::sync::OnceLock<lode_dates::DateFormat> = std::sync::OnceLock::new();
        let f = match &self.format {
            Some((_, f)) => f,
            None => DEFAULT.get_or_init(lode_dates::DateFormat::default),
        };
        f.parse_json(v, &lode_dates::Tz::utc()).ok()
    }

    /// An emitted value read as the field's type, in place (a date string parsed).
    fn coerce(&self, v: &mut Value) -> EsResult<()> {
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
        match (self.ty, &*v) {
            (RuntimeType::Keyword, Value::String(_)) => {}
            (RuntimeType::Long | RuntimeType::Date, Value::Number(n)) if n.is_i64() => {}
            // A date string is read with the field's format.
            (RuntimeType::Date, Value::String(_)) => match self.parse_date(v) {
                Some(ms) => *v = Value::from(ms),
                None => return Err(bad(v)),
            },
            (RuntimeType::Double, Value::Number(n)) => *v = Value::from(n.as_f64().unwrap_or(0.0)),
            (RuntimeType::Boolean, Value::Bool(_)) => {}
            _ => return Err(bad(v)),
        }
        Ok(())
    }

    /// Runs the field on a document, recording a runtime error in `errors` (empty then).
    pub fn values_or_record(&self, docs: &mut SegmentDocs, errors: &ScriptErrors) -> Vec<Value> {
        self.with_values_or_record(docs, errors, <[Value]>::to_vec)
    }

    /// [`RuntimeField::with_values`], a runtime error recorded in `errors` (`f` then sees no
    /// values).
    pub fn with_values_or_record<R>(
        &self,
        docs: &mut SegmentDocs,
        errors: &ScriptErrors,
        f: impl FnOnce(&[Value]) -> R,
    ) -> R {
        if errors.lock().is_some() {
            return f(&[]);
        }
        let mut f = Some(f);
        match self.with_values(docs, |v| (f.take().expect("once"))(v)) {
            Ok(r) => r,
            Err(e) => {
                errors.lock().get_or_insert(e);
                (f.take().expect("not called"))(&[])
            }
        }
    }
}

/// The leaf values at a dotted `path` of a `_source` object (object levels or dotted keys),
/// arrays flattened, nulls left out.
pub fn source_values<'v>(src: &'v Value, path: &str, out: &mut Vec<&'v Value>) {
    match src {
        Value::Array(a) => {
            for v in a {
                source_values(v, path, out);
            }
        }
        Value::Object(o) => {
            if let Some(v) = o.get(path) {
                leaves(v, out);
            }
            let mut i = 0;
            while let Some(dot) = path[i..].find('.') {
                let (head, rest) = (&path[..i + dot], &path[i + dot + 1..]);
                if let Some(v) = o.get(head) {
                    source_values(v, rest, out);
                }
                i += dot + 1;
            }
        }
        _ => {}
    }
}

fn leaves<'v>(v: &'v Value, out: &mut Vec<&'v Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|v| leaves(v, out)),
        Value::Null | Value::Object(_) => {}
        _ => out.push(v),
    }
}

/// The index mapping's `runtime` section, compiled (empty when it has none). The section
/// was validated when the mapping was put.
pub fn from_mapping(mapping: &Value) -> EsResult<RuntimeFields> {
    match mapping.get("runtime") {
        Some(Value::Object(o)) if !o.is_empty() => {
            parse_runtime_mappings(&Value::Object(o.clone()))
        }
        _ => Ok(Default::default()),
    }
}

/// The runtime fields of a search on an index: the mapping's, shadowed by the request's
/// `runtime_mappings` of the same name.
pub fn effective(mapping: &Value, request: &RuntimeFields) -> EsResult<RuntimeFields> {
    let from_index = from_mapping(mapping)?;
    if from_index.is_empty() {
        return Ok(request.clone());
    }
    if request.is_empty() {
        return Ok(from_index);
    }
    let mut all = (*from_index).clone();
    all.extend(request.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(Arc::new(all))
}

/// Validates the `runtime` section of a mapping being created or put (`null` entries remove
/// a field and are not checked).
pub fn validate_mapping(mappings: &Value) -> EsResult<()> {
    let Some(section) = mappings.get("runtime") else {
        return Ok(());
    };
    let section = match section {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => {
            return Err(mapper_parsing(
                "Failed to parse mapping: Expected map for runtime block but got a non-object",
            ))
        }
    };
    parse_runtime_mappings(&section).map(|_| ()).map_err(|e| {
        if e.kind == "mapper_parsing_exception" {
            mapper_parsing(format!("Failed to parse mapping: {}", e.reason))
        } else {
            mapper_parsing(format!("Failed to parse mapping: {}", e.reason)).caused_by(e)
        }
    })
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
                Err(_) => Value::from(f.parse_date(v).ok_or_else(bad)?),
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
        (Value::String(a), Value::String(b)) if case_insensitive => a
            .chars()
            .flat_map(char::to_lowercase)
            .eq(b.chars().flat_map(char::to_lowercase)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn on_script_error_meta_and_locale() {
        let ok = parse_runtime_mappings(&json!({
            "c": {"type": "long", "script": "emit(1)", "on_script_error": "continue",
                  "meta": {"unit": "ms"}},
            "f": {"type": "long", "script": "emit(1)", "on_script_error": "fail"},
            "s": {"type": "keyword", "on_script_error": "fail"},
            "d": {"type": "date", "locale": "en_US"},
        }))
        .unwrap();
        assert!(ok["c"].continue_on_error);
        assert!(!ok["f"].continue_on_error && !ok["s"].continue_on_error);
        let reason = |v: Value| parse_runtime_mappings(&v).unwrap_err().reason;
        assert_eq!(
            reason(json!({"s": {"type": "keyword", "on_script_error": "continue"}})),
            "Field [on_script_error] requires field [script] to be configured"
        );
        assert_eq!(
            reason(json!({"c": {"type": "long", "script": "emit(1)", "on_script_error": 1}})),
            "Unknown value [1] for field [on_script_error] - accepted values are [fail, continue]"
        );
        assert_eq!(
            reason(json!({"c": {"type": "long", "meta": {"a": 1}}})),
            "[meta] values can only be strings, but got Integer[1] for field [c]"
        );
        assert!(reason(json!({"d": {"type": "date", "locale": "de"}}))
            .contains("not supported by Lode"));
        assert_eq!(
            reason(json!({"k": {"type": "keyword", "locale": "en"}})),
            "unknown parameter [locale] on runtime field [k] of type [keyword]"
        );
    }

    #[test]
    fn source_values_follow_objects_dotted_keys_and_arrays() {
        let src = json!({"a": {"b": [1, {"c": 2}], "c": null}, "a.b": 3, "x": [[4, null], 5]});
        let mut out = Vec::new();
        source_values(&src, "a.b", &mut out);
        assert_eq!(out, vec![&json!(3), &json!(1)]);
        let mut out = Vec::new();
        source_values(&src, "x", &mut out);
        assert_eq!(out, vec![&json!(4), &json!(5)]);
        let mut out = Vec::new();
        source_values(&src, "a.c", &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn mapping_section_validation() {
        assert!(validate_mapping(&json!({"runtime": {"x": {"type": "long"}, "y": null}})).is_ok());
        for bad in [
            json!({"runtime": {"x": {"type": "nope"}}}),
            json!({"runtime": {"x": {"type": "long", "script": "emit("}}}),
            json!({"runtime": []}),
        ] {
            let e = validate_mapping(&bad).unwrap_err();
            assert_eq!(e.kind, "mapper_parsing_exception", "{bad}");
            assert!(
                e.reason.starts_with("Failed to parse mapping: "),
                "{}",
                e.reason
            );
        }
    }

    #[test]
    fn request_fields_shadow_mapping_fields() {
        let mapping = json!({"runtime": {"x": {"type": "long"}, "y": {"type": "keyword"}}});
        let req = parse_runtime_mappings(&json!({"x": {"type": "double"}})).unwrap();
        let all = effective(&mapping, &req).unwrap();
        assert_eq!(all["x"].ty, RuntimeType::Double);
        assert_eq!(all["y"].ty, RuntimeType::Keyword);
        assert!(all["y"].script.is_none());
    }

    #[test]
    fn runtime_field_parameters_are_declared_per_type() {
        let err = |v: Value| parse_runtime_mappings(&v).err().unwrap().reason;
        assert_eq!(
            err(serde_json::json!({"f": {"type": "long", "format": "yyyy"}})),
            "unknown parameter [format] on runtime field [f] of type [long]"
        );
        assert_eq!(
            err(serde_json::json!({"f": {"type": "date", "sript": "emit(1)"}})),
            "unknown parameter [sript] on runtime field [f] of type [date]"
        );
        let all = parse_runtime_mappings(
            &serde_json::json!({"d": {"type": "date", "format": "yyyy", "script": null}}),
        )
        .unwrap();
        assert_eq!(all["d"].format.as_ref().map(|f| f.0.as_str()), Some("yyyy"));
        assert!(all["d"].script.is_none());
    }
}

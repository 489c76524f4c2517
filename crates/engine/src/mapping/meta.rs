//! A field's `meta` (ES's `TypeParsers#parseMeta`): an object of at most 5 short strings,
//! kept as given in the mapping and never used by Lode itself.

use crate::{EsError, EsResult};
use serde_json::Value;

/// Checks a field's `meta` object with ES's limits and messages.
pub fn check_meta(field: &str, v: &Value) -> EsResult<()> {
    let refuse = |reason: String| Err(EsError::bad_request("mapper_parsing_exception", reason));
    let Value::Object(meta) = v else {
        return refuse(format!(
            "[meta] must be an object, got {} for field [{field}]",
            java_repr(v)
        ));
    };
    if meta.len() > 5 {
        return refuse(format!(
            "[meta] can't have more than 5 entries, but got {} on field [{field}]",
            meta.len()
        ));
    }
    if let Some(key) = meta.keys().find(|k| k.chars().count() > 20) {
        return refuse(format!(
            "[meta] keys can't be longer than 20 chars, but got [{key}] for field [{field}]"
        ));
    }
    for value in meta.values() {
        match value {
            Value::String(s) if s.chars().count() > 50 => {
                return refuse(format!(
                    "[meta] values can't be longer than 50 chars, but got [{s}] for field [{field}]"
                ))
            }
            Value::String(_) => {}
            Value::Null => return refuse(format!("[meta] values can't be null (field [{field}])")),
            other => {
                return refuse(format!(
                    "[meta] values can only be strings, but got {} for field [{field}]",
                    java_repr(other)
                ))
            }
        }
    }
    Ok(())
}

/// A JSON value as ES's message shows the Java object it parsed into: `Class[toString]`.
fn java_repr(v: &Value) -> String {
    let class = match v {
        Value::Null => "null",
        Value::Bool(_) => "Boolean",
        Value::Number(n) if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) => "Integer",
        Value::Number(n) if n.is_i64() || n.is_u64() => "Long",
        Value::Number(_) => "Double",
        Value::String(_) => "String",
        Value::Array(_) => "ArrayList",
        Value::Object(_) => "LinkedHashMap",
    };
    format!("{class}[{}]", java_text(v))
}

fn java_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(java_text).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{k}={}", java_text(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(v: Value) -> String {
        check_meta("foo", &v).unwrap_err().reason
    }

    #[test]
    fn es_limits_and_messages() {
        assert!(check_meta("foo", &json!({"unit": "ms", "a": "b"})).is_ok());
        assert_eq!(
            reason(json!(3)),
            "[meta] must be an object, got Integer[3] for field [foo]"
        );
        assert_eq!(
            reason(json!({"veryloooooooooooongkey": "x"})),
            "[meta] keys can't be longer than 20 chars, but got [veryloooooooooooongkey] for field [foo]"
        );
        assert_eq!(
            reason(json!({"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6"})),
            "[meta] can't have more than 5 entries, but got 6 on field [foo]"
        );
        assert_eq!(
            reason(json!({"bar": "baz", "foo": 3})),
            "[meta] values can only be strings, but got Integer[3] for field [foo]"
        );
        assert_eq!(
            reason(json!({"foo": {"bar": "baz"}})),
            "[meta] values can only be strings, but got LinkedHashMap[{bar=baz}] for field [foo]"
        );
        assert_eq!(
            reason(json!({"foo": null})),
            "[meta] values can't be null (field [foo])"
        );
        assert!(reason(json!({"foo": "x".repeat(51)}))
            .starts_with("[meta] values can't be longer than 50 chars"));
    }
}

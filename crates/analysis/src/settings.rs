//! Reading Elasticsearch analysis settings: typed parameters with ES-style errors, and
//! expansion of flat dotted keys (`"analyzer.my.tokenizer": "standard"`) into nested objects.

use serde_json::{Map, Value};

use crate::error::{illegal, AnalysisError};

pub(crate) type Obj = Map<String, Value>;

/// Expands dotted keys into nested objects, merging with existing objects.
pub(crate) fn expand_dotted(value: &Value) -> Value {
    let Value::Object(map) = value else {
        return value.clone();
    };
    let mut out = Map::new();
    for (key, v) in map {
        let v = expand_dotted(v);
        let mut parts: Vec<&str> = key.split('.').collect();
        let last = parts.pop().unwrap_or_default();
        let mut target = &mut out;
        for part in parts {
            let entry = target
                .entry(part.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            target = entry.as_object_mut().expect("just made an object");
        }
        match target.get_mut(last) {
            Some(existing) => merge(existing, v),
            None => {
                target.insert(last.to_string(), v);
            }
        }
    }
    Value::Object(out)
}

/// Deep-merges `new` into `existing` (objects merge key by key; anything else replaces).
fn merge(existing: &mut Value, new: Value) {
    match (existing, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in new {
                match old.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        old.insert(key, value);
                    }
                }
            }
        }
        (slot, new) => *slot = new,
    }
}

/// The object of a component definition, or an error naming it.
pub(crate) fn as_object<'a>(
    component: &str,
    name: &str,
    value: &'a Value,
) -> Result<&'a Obj, AnalysisError> {
    value.as_object().ok_or_else(|| {
        illegal(format!(
            "{component} [{name}] must be an object, got [{value}]"
        ))
    })
}

/// A setting value as a string, as Elasticsearch flattens settings.
fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(crate) fn get_str<'a>(obj: &'a Obj, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

pub(crate) fn get_usize(obj: &Obj, key: &str, default: usize) -> Result<usize, AnalysisError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => {
            let s = scalar_string(v).unwrap_or_else(|| v.to_string());
            s.trim().parse::<usize>().map_err(|_| {
                illegal(format!(
                    "Failed to parse int setting [{key}] with value [{s}]"
                ))
            })
        }
    }
}

pub(crate) fn get_bool(obj: &Obj, key: &str, default: bool) -> Result<bool, AnalysisError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" => Ok(true),
        Some(Value::String(s)) if s == "false" => Ok(false),
        Some(v) => {
            let s = scalar_string(v).unwrap_or_else(|| v.to_string());
            Err(illegal(format!(
                "Failed to parse value [{s}] as only [true] or [false] are allowed."
            )))
        }
    }
}

/// A list setting: an array of strings, or a single string.
pub(crate) fn get_list(obj: &Obj, key: &str) -> Result<Vec<String>, AnalysisError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                scalar_string(v)
                    .ok_or_else(|| illegal(format!("setting [{key}] must be a list of strings")))
            })
            .collect(),
        Some(v) => scalar_string(v)
            .map(|s| vec![s])
            .ok_or_else(|| illegal(format!("setting [{key}] must be a list of strings"))),
    }
}

/// Rejects `*_path` settings that refer to files, which Lode does not read.
pub(crate) fn reject_path(obj: &Obj, key: &str) -> Result<(), AnalysisError> {
    if obj.contains_key(key) {
        return Err(illegal(format!(
            "setting [{key}] is not supported: file-based analysis resources are not available"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expands_dotted_keys() {
        let v = json!({"analyzer.my.tokenizer": "standard", "analyzer": {"my": {"filter": ["lowercase"]}}});
        assert_eq!(
            expand_dotted(&v),
            json!({"analyzer": {"my": {"tokenizer": "standard", "filter": ["lowercase"]}}})
        );
    }

    #[test]
    fn parses_lenient_scalars() {
        let o = json!({"a": "5", "b": 7, "c": "true", "d": "yes", "e": "x"});
        let o = o.as_object().unwrap();
        assert_eq!(get_usize(o, "a", 0).unwrap(), 5);
        assert_eq!(get_usize(o, "b", 0).unwrap(), 7);
        assert_eq!(get_usize(o, "zz", 3).unwrap(), 3);
        assert!(get_bool(o, "c", false).unwrap());
        assert_eq!(
            get_bool(o, "d", false).unwrap_err().reason,
            "Failed to parse value [yes] as only [true] or [false] are allowed."
        );
        assert_eq!(
            get_usize(o, "e", 0).unwrap_err().reason,
            "Failed to parse int setting [e] with value [x]"
        );
    }
}

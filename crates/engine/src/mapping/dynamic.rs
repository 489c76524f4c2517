//! Elasticsearch's dynamic mapping rules: what type a new field gets from its first value.

use super::Mapping;
use lode_dates::Tz;
use serde_json::{json, Value};

/// The mapping definition for a new field first seen with `value`, or `None` when the value
/// (null, an empty array) does not decide a type yet.
pub fn infer_dynamic(mapping: &Mapping, value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Bool(_) => Some(json!({"type": "boolean"})),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                Some(json!({"type": "long"}))
            } else {
                Some(json!({"type": "float"}))
            }
        }
        Value::String(s) => {
            if mapping.date_detection {
                let utc = Tz::utc();
                if let Some(f) = mapping
                    .dynamic_date_formats
                    .iter()
                    .find(|f| f.parse_millis(s, &utc).is_ok())
                {
                    if f.spec() == "strict_date_optional_time" {
                        return Some(json!({"type": "date"}));
                    }
                    return Some(json!({"type": "date", "format": f.spec()}));
                }
            }
            if mapping.numeric_detection {
                if s.parse::<i64>().is_ok() {
                    return Some(json!({"type": "long"}));
                }
                if s.parse::<f64>().is_ok() {
                    return Some(json!({"type": "float"}));
                }
            }
            Some(
                json!({"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}),
            )
        }
        Value::Array(items) => items.iter().find_map(|v| infer_dynamic(mapping, v)),
        Value::Object(_) => Some(json!({"properties": {}})),
    }
}

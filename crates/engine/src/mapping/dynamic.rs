//! Elasticsearch's dynamic mapping rules: what type a new field gets from its first value.

use super::{DetectedType, Mapping};
use lode_dates::Tz;
use serde_json::{json, Map, Value};

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

/// A new field's definition from a dynamic template: a mapped field, or a runtime one.
#[derive(Debug, Clone, PartialEq)]
pub enum Templated {
    Mapped(Value),
    Runtime(Value),
}

/// The definition the first matching `dynamic_templates` entry gives a new leaf at `path`
/// first seen with `value` (a scalar), as ES's `DynamicFieldsBuilder` looks templates up
/// with the type it detected; `None` when no template matches.
pub fn template_field(mapping: &Mapping, path: &str, value: &Value) -> Option<Templated> {
    if mapping.dynamic_templates.is_empty() {
        return None;
    }
    let detected = infer_dynamic(mapping, value)?;
    let ty = match detected.get("type").and_then(Value::as_str)? {
        "boolean" => DetectedType::Boolean,
        "long" => DetectedType::Long,
        "float" => DetectedType::Double,
        "date" => DetectedType::Date,
        _ => DetectedType::String,
    };
    let name = path.rsplit('.').next().unwrap_or(path);
    let t = mapping
        .dynamic_templates
        .iter()
        .find(|t| t.matches(path, name, ty))?;
    let mut def = t.definition(name, ty);
    // The detected date format is the field's default one, as ES parses the template's
    // mapping with the formatter it detected.
    let is_date = matches!(
        def.get("type").and_then(Value::as_str),
        Some("date" | "date_nanos")
    );
    if let (true, false, Some(format)) =
        (is_date, def.contains_key("format"), detected.get("format"))
    {
        def.insert("format".into(), format.clone());
    }
    Some(if t.runtime {
        Templated::Runtime(Value::Object(def))
    } else {
        Templated::Mapped(Value::Object(def))
    })
}

/// The definition the first `dynamic_templates` entry matching a new object at `path` gives
/// it (ES's `findTemplateBuilderForObject`), `type: object` left implicit as ES shows it.
pub fn template_object(mapping: &Mapping, path: &str) -> Option<Map<String, Value>> {
    let name = path.rsplit('.').next().unwrap_or(path);
    let t = mapping
        .dynamic_templates
        .iter()
        .find(|t| t.matches(path, name, DetectedType::Object))?;
    let mut def = t.definition(name, DetectedType::Object);
    if def.get("type").and_then(Value::as_str) == Some("object") {
        def.remove("type");
    }
    Some(def)
}

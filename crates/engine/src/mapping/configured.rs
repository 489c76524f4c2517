//! A mapping keeps the parameters that are configured, as ES 8 serializes them.
//!
//! ES builds `GET _mapping` from its mappers, and a parameter is written when
//! `include_defaults` is asked (only `GET _mapping/field` takes it) or when it is configured:
//! `Parameter#isConfigured` is "set, and not equal to its default". So `"index": true`
//! stated in a request is not echoed, and a later update that leaves it out changes nothing.
//! Lode keeps the mapping JSON as the source of truth; the parameters stated with their
//! default are taken out of it when it is merged (create, update, dynamic update) and when a
//! stored mapping is read back.
//!
//! Only parameters whose default is fixed by the type are compared (not those that follow
//! index settings, such as `ignore_malformed` and `coerce`, nor analyzers, which ES compares
//! by their resolved analyzer), and only valid values of parameters the type has: anything
//! else stays for the compiler to judge.

use super::parse::{default_value, is_leaf_param, same_value};
use super::{FieldType, IndexOptions};
use serde_json::{Map, Value};

/// The parameters taken out when stated with their default: plain ES `Parameter`s. Not
/// those ES always serializes (`completion`'s `preserve_separators`,
/// `preserve_position_increments`, `max_input_length`), which stay as given.
const COMPARED: &[&str] = &[
    "index",
    "doc_values",
    "store",
    "norms",
    "index_phrases",
    "term_vector",
    "index_options",
    "format",
    "eager_global_ordinals",
    "fielddata",
    "split_queries_on_whitespace",
];

/// Removes, in every field of `mapping` (multi-fields included), the parameters stated with
/// their default value.
pub fn drop_stated_defaults(mapping: &mut Value) {
    if let Some(Value::Object(props)) = mapping.get_mut("properties") {
        in_properties(props);
    }
}

fn in_properties(props: &mut Map<String, Value>) {
    for def in props.values_mut() {
        let Value::Object(def) = def else { continue };
        if let Some(Value::Object(props)) = def.get_mut("properties") {
            in_properties(props);
        }
        let Some(ty) = def.get("type").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        let Some(field_type) = FieldType::parse(&ty).filter(|t| t.is_leaf()) else {
            continue;
        };
        def.retain(|k, v| !is_stated_default(field_type, &ty, k, v));
        if let Some(Value::Object(fields)) = def.get_mut("fields") {
            in_properties(fields);
        }
    }
}

fn is_stated_default(field_type: FieldType, ty: &str, k: &str, v: &Value) -> bool {
    if !COMPARED.contains(&k) || !is_leaf_param(field_type, k) || !valid(field_type, k, v) {
        return false;
    }
    default_of(ty, k).is_some_and(|d| same_value(ty, k, v, &d))
}

/// The updateable parameters' defaults (the fixed ones are `parse::default_value`'s).
fn default_of(ty: &str, k: &str) -> Option<Value> {
    match k {
        "eager_global_ordinals" | "fielddata" | "split_queries_on_whitespace" => {
            Some(Value::Bool(false))
        }
        _ => default_value(ty, k),
    }
}

fn valid(ty: FieldType, k: &str, v: &Value) -> bool {
    match k {
        "index_options" => IndexOptions::parse(ty, Some(v)).is_ok(),
        "term_vector" | "format" => v.is_string(),
        _ => v.is_boolean() || matches!(v.as_str(), Some("true" | "false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_stated_with_their_default_are_not_kept() {
        let mut m = json!({"properties": {
            "k": {"type": "keyword", "index": true, "doc_values": "true", "store": false,
                  "norms": false, "index_options": "docs", "ignore_above": 256,
                  "fields": {"t": {"type": "text", "norms": true, "index_options": "positions",
                                   "term_vector": "no", "analyzer": "standard"}}},
            "o": {"properties": {"d": {"type": "date", "format": "strict_date_optional_time||epoch_millis"},
                                 "n": {"type": "date_nanos", "format": "strict_date_optional_time||epoch_millis"}}},
            "b": {"type": "binary", "doc_values": false},
            "c": {"type": "completion", "max_input_length": 50, "preserve_separators": true}
        }});
        let completion = m["properties"]["c"].clone();
        drop_stated_defaults(&mut m);
        assert_eq!(
            m,
            json!({"properties": {
                "k": {"type": "keyword", "ignore_above": 256,
                      "fields": {"t": {"type": "text", "analyzer": "standard"}}},
                "o": {"properties": {"d": {"type": "date"},
                                     "n": {"type": "date_nanos", "format": "strict_date_optional_time||epoch_millis"}}},
                "b": {"type": "binary"},
                "c": completion
            }})
        );
    }

    #[test]
    fn values_other_than_the_default_and_invalid_ones_stay() {
        let before = json!({"properties": {
            "k": {"type": "keyword", "index": false, "doc_values": "yes",
                  "index_options": "offsets"},
            "w": {"type": "wildcard", "index": true},
            "b": {"type": "binary", "index": true},
            "t": {"type": "text", "norms": false, "index_phrases": true}
        }});
        let mut m = before.clone();
        drop_stated_defaults(&mut m);
        assert_eq!(m, before);
    }
}

//! Index aliases: alternative names for one or more indices, kept in each index's state (as
//! Elasticsearch keeps them in index metadata), with optional filter, routing and write flag.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::{EsError, EsResult};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AliasMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_routing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_routing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_write_index: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_hidden: Option<bool>,
}

fn string_value(v: &Value, key: &str) -> EsResult<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(EsError::parsing(format!("[{key}] must be a string"))),
    }
}

fn bool_value(v: &Value, key: &str) -> EsResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        _ => Err(EsError::parsing(format!("[{key}] must be a boolean"))),
    }
}

impl AliasMeta {
    /// Parses an alias body (`filter`, `routing`, `index_routing`, `search_routing`,
    /// `is_write_index`, `is_hidden`); `routing` sets both routings unless they are given.
    pub fn parse(body: &Value) -> EsResult<AliasMeta> {
        let mut meta = AliasMeta::default();
        let Some(o) = body.as_object() else {
            return if body.is_null() {
                Ok(meta)
            } else {
                Err(EsError::parsing("alias definition must be an object"))
            };
        };
        let mut routing = None;
        for (k, v) in o {
            match k.as_str() {
                "filter" => {
                    if !v.is_object() {
                        return Err(EsError::parsing("[filter] must be an object"));
                    }
                    meta.filter = Some(v.clone());
                }
                "routing" => routing = Some(string_value(v, k)?),
                "index_routing" | "indexRouting" | "index-routing" => {
                    meta.index_routing = Some(string_value(v, k)?)
                }
                "search_routing" | "searchRouting" | "search-routing" => {
                    meta.search_routing = Some(string_value(v, k)?)
                }
                "is_write_index" => meta.is_write_index = Some(bool_value(v, k)?),
                "is_hidden" => meta.is_hidden = Some(bool_value(v, k)?),
                // Keys of the action object itself, consumed by the caller.
                "index" | "indices" | "alias" | "aliases" | "must_exist" => {}
                other => {
                    return Err(EsError::illegal_argument(format!(
                        "[alias] unknown field [{other}]"
                    )))
                }
            }
        }
        if let Some(r) = routing {
            meta.index_routing.get_or_insert(r.clone());
            meta.search_routing.get_or_insert(r);
        }
        if meta
            .index_routing
            .as_deref()
            .is_some_and(|r| r.contains(','))
        {
            return Err(EsError::illegal_argument(format!(
                "alias [index_routing] cannot contain multiple values, got [{}]",
                meta.index_routing.as_deref().unwrap_or_default()
            )));
        }
        Ok(meta)
    }

    /// The alias as `GET _alias` shows it.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if let Some(f) = &self.filter {
            m.insert("filter".into(), f.clone());
        }
        if let Some(r) = &self.index_routing {
            m.insert("index_routing".into(), json!(r));
        }
        if let Some(r) = &self.search_routing {
            m.insert("search_routing".into(), json!(r));
        }
        if let Some(w) = self.is_write_index {
            m.insert("is_write_index".into(), json!(w));
        }
        if let Some(h) = self.is_hidden {
            m.insert("is_hidden".into(), json!(h));
        }
        Value::Object(m)
    }
}

/// Alias names follow index-name rules (ES validates them the same way).
pub fn validate_alias_name(name: &str) -> EsResult<()> {
    crate::node::validate_index_name(name).map_err(|e| {
        EsError::bad_request(
            "invalid_alias_name_exception",
            e.reason.replace("Invalid index name", "Invalid alias name"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_sets_both_unless_given() {
        let m = AliasMeta::parse(&json!({"routing": "1", "search_routing": "2"})).unwrap();
        assert_eq!(m.index_routing.as_deref(), Some("1"));
        assert_eq!(m.search_routing.as_deref(), Some("2"));
    }

    #[test]
    fn rejects_unknown_fields_and_multi_index_routing() {
        assert!(AliasMeta::parse(&json!({"bogus": 1})).is_err());
        assert!(AliasMeta::parse(&json!({"index_routing": "1,2"})).is_err());
    }

    #[test]
    fn renders_only_set_fields() {
        let m = AliasMeta::parse(&json!({"is_write_index": true})).unwrap();
        assert_eq!(m.to_json(), json!({"is_write_index": true}));
    }
}

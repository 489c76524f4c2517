//! Index settings: kept as Elasticsearch keeps them (a flat map of `index.*` keys whose values
//! are strings or string arrays) and read through a typed view.

use crate::error::{EsError, EsResult};
use crate::mapping::MappingLimits;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

pub type FlatSettings = BTreeMap<String, Value>;

/// Flattens `{"index":{"number_of_shards":1}}`, `{"number_of_shards":1}` and
/// `{"index.number_of_shards":"1"}` alike into `index.number_of_shards = "1"`.
pub fn flatten(settings: &Value) -> EsResult<FlatSettings> {
    let mut out = FlatSettings::new();
    match settings {
        Value::Object(m) => flatten_into("", m, &mut out),
        Value::Null => {}
        _ => return Err(EsError::illegal_argument("settings must be an object")),
    }
    let mut normalized = FlatSettings::new();
    for (k, v) in out {
        // As ES's `Settings.Builder#normalizePrefix`: a pattern (`archived.*`) is left as is.
        let key = if k.starts_with("index.") || k.ends_with('*') {
            k
        } else {
            format!("index.{k}")
        };
        normalized.insert(key, v);
    }
    Ok(normalized)
}

fn flatten_into(prefix: &str, m: &Map<String, Value>, out: &mut FlatSettings) {
    for (k, v) in m {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) => flatten_into(&key, inner, out),
            Value::Array(items) => {
                out.insert(key, Value::Array(items.iter().map(stringify).collect()));
            }
            other => {
                out.insert(key, stringify(other));
            }
        }
    }
}

fn stringify(v: &Value) -> Value {
    match v {
        Value::String(_) | Value::Null => v.clone(),
        Value::Number(n) => Value::String(n.to_string()),
        Value::Bool(b) => Value::String(b.to_string()),
        other => Value::String(other.to_string()),
    }
}

/// Renders a flat map nested by dots, as `GET _settings` shows it (without `flat_settings`).
pub fn nest(flat: &FlatSettings) -> Value {
    let mut root = Map::new();
    for (k, v) in flat {
        let parts: Vec<&str> = k.split('.').collect();
        let mut cur = &mut root;
        for p in &parts[..parts.len() - 1] {
            let entry = cur
                .entry(p.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            cur = entry.as_object_mut().unwrap();
        }
        cur.insert(parts[parts.len() - 1].to_string(), v.clone());
    }
    Value::Object(root)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    Request,
    Async,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Default,
    BestCompression,
}

/// Settings that can be changed on an open index with `PUT _settings` (exact keys, or a
/// family when the entry ends with `.` or `_`), following Elasticsearch's dynamic settings.
const DYNAMIC_SETTINGS: &[&str] = &[
    "index.number_of_replicas",
    "index.query_string.lenient",
    "index.refresh_interval",
    "index.translog.durability",
    "index.translog.sync_interval",
    "index.translog.flush_threshold_size",
    "index.translog.generation_threshold_size",
    "index.translog.retention.",
    "index.requests.cache.enable",
    "index.auto_expand_replicas",
    "index.max_",
    "index.search.idle.after",
    "index.search.slowlog.",
    "index.indexing.slowlog.",
    "index.blocks.",
    "index.number_of_routing_shards",
    "index.mapping.total_fields.limit",
    "index.mapping.depth.limit",
    "index.mapping.nested_fields.limit",
    "index.mapping.nested_objects.limit",
    "index.mapping.field_name_length.limit",
    "index.mapping.ignore_malformed",
    "index.mapping.coerce",
    "index.gc_deletes",
    "index.priority",
    "index.hidden",
    "index.routing.allocation.",
    "index.routing.rebalance.",
    "index.allocation.max_retries",
    "index.unassigned.node_left.delayed_timeout",
    "index.merge.scheduler.",
    "index.merge.policy.",
    "index.default_pipeline",
    "index.final_pipeline",
    "index.lifecycle.",
    "index.query.default_field",
    "index.write.wait_for_active_shards",
    "index.highlight.max_analyzed_offset",
];

/// Whether `PUT _settings` may change `key` on an open index.
pub fn is_dynamic(key: &str) -> bool {
    DYNAMIC_SETTINGS
        .iter()
        .any(|p| key == *p || ((p.ends_with('.') || p.ends_with('_')) && key.starts_with(p)))
}

/// Settings that may change only while the index is closed.
pub const CLOSED_ONLY_SETTINGS: &[&str] = &["index.codec"];

/// The typed view of the settings the engine acts on.
#[derive(Debug, Clone)]
pub struct IndexConfig {
    pub number_of_shards: usize,
    pub number_of_replicas: usize,
    /// `None` when `-1` (periodic refresh disabled).
    pub refresh_interval: Option<Duration>,
    /// Whether `index.refresh_interval` is set: only the default interval yields to search
    /// idleness, as in ES (`IndexSettings#isExplicitRefresh`).
    pub explicit_refresh: bool,
    /// `index.search.idle.after`: a shard not searched for this long skips its scheduled
    /// refreshes until the next search, which refreshes it first.
    pub search_idle_after: Duration,
    pub max_result_window: usize,
    pub durability: Durability,
    pub sync_interval: Duration,
    pub flush_threshold_size: u64,
    pub codec: Codec,
    pub requests_cache_enable: bool,
    pub max_terms_count: usize,
    /// `index.max_regex_length`.
    pub max_regex_length: usize,
    /// `index.query_string.lenient`: the default `lenient` of `query_string` queries.
    pub query_string_lenient: bool,
    /// `index.query.default_field`: the fields (or patterns) `query_string`,
    /// `simple_query_string` and `multi_match` search when the query names none; empty for
    /// ES's default `*`.
    pub query_default_fields: std::sync::Arc<Vec<String>>,
    /// `index.mapping.total_fields.limit`, `index.mapping.depth.limit`,
    /// `index.mapping.field_name_length.limit`.
    pub mapping_limits: MappingLimits,
    /// `index.mapping.coerce` and `index.mapping.ignore_malformed`.
    pub field_defaults: crate::mapping::FieldDefaults,
}

impl IndexConfig {
    pub fn from_flat(flat: &FlatSettings) -> EsResult<IndexConfig> {
        let s = |k: &str| flat.get(k).and_then(|v| v.as_str().map(str::to_string));
        // The `index.blocks.*` booleans (enforced by `crate::blocks`).
        for b in crate::blocks::Block::ALL {
            let v = flat.get(b.setting()).map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            parse_bool(v, false, b.setting())?;
        }
        let number_of_shards =
            parse_usize(s("index.number_of_shards"), 1, "index.number_of_shards")?;
        if number_of_shards == 0 || number_of_shards > 1024 {
            return Err(EsError::illegal_argument(format!(
                "Failed to parse value [{number_of_shards}] for setting [index.number_of_shards] must be >= 1"
            )));
        }
        let number_of_replicas =
            parse_usize(s("index.number_of_replicas"), 1, "index.number_of_replicas")?;
        let refresh_interval = match s("index.refresh_interval") {
            None => Some(Duration::from_secs(1)),
            Some(v) if v == "-1" => None,
            Some(v) => {
                let ms = parse_time(&v, "index.refresh_interval")?;
                if ms < 0 {
                    None
                } else {
                    Some(Duration::from_millis(ms as u64))
                }
            }
        };
        let explicit_refresh = s("index.refresh_interval").is_some();
        let search_idle_after = match s("index.search.idle.after") {
            None => Duration::from_secs(30),
            Some(v) => {
                let ms = parse_time(&v, "index.search.idle.after")?;
                if ms < 0 {
                    return Err(EsError::illegal_argument(format!(
                        "failed to parse value [{v}] for setting [index.search.idle.after] must be >= 0s"
                    )));
                }
                Duration::from_millis(ms as u64)
            }
        };
        let max_result_window = parse_usize(
            s("index.max_result_window"),
            10_000,
            "index.max_result_window",
        )?;
        let durability = match s("index.translog.durability").as_deref() {
            None => Durability::Request,
            Some(v) if v.eq_ignore_ascii_case("request") => Durability::Request,
            Some(v) if v.eq_ignore_ascii_case("async") => Durability::Async,
            Some(v) => {
                return Err(EsError::illegal_argument(format!(
                    "No enum constant org.elasticsearch.index.translog.Translog.Durability.{}",
                    v.to_uppercase()
                )))
            }
        };
        let sync_interval = match s("index.translog.sync_interval") {
            None => Duration::from_secs(5),
            Some(v) => {
                let ms = parse_time(&v, "index.translog.sync_interval")?;
                if ms < 100 {
                    return Err(EsError::illegal_argument(format!(
                        "failed to parse value [{v}] for setting [index.translog.sync_interval], must be >= [100ms]"
                    )));
                }
                Duration::from_millis(ms as u64)
            }
        };
        let flush_threshold_size = match s("index.translog.flush_threshold_size") {
            None => 512 * 1024 * 1024,
            Some(v) => parse_bytes(&v, "index.translog.flush_threshold_size")?,
        };
        let codec = match s("index.codec").as_deref() {
            None | Some("default") | Some("lz4") => Codec::Default,
            Some("best_compression") | Some("zstd") => Codec::BestCompression,
            Some(other) => {
                return Err(EsError::illegal_argument(format!(
                    "unknown value for [index.codec] must be one of [default, best_compression] but was: {other}"
                )))
            }
        };
        let requests_cache_enable = parse_bool(
            s("index.requests.cache.enable"),
            true,
            "index.requests.cache.enable",
        )?;
        let max_terms_count =
            parse_usize(s("index.max_terms_count"), 65_536, "index.max_terms_count")?;
        let max_regex_length = parse_long(
            s("index.max_regex_length"),
            1000,
            0,
            "index.max_regex_length",
        )? as usize;
        // A list setting: an array, or one comma-separated string (ES's `Settings#getAsList`).
        let query_default_fields =
            std::sync::Arc::new(match flat.get("index.query.default_field") {
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .filter_map(|v| v.as_str())
                    .map(str::to_string)
                    .collect(),
                Some(serde_json::Value::String(v)) => v
                    .split(',')
                    .map(|f| f.trim().to_string())
                    .filter(|f| !f.is_empty())
                    .collect(),
                _ => Vec::new(),
            });
        let query_string_lenient = parse_bool(
            s("index.query_string.lenient"),
            false,
            "index.query_string.lenient",
        )?;
        if parse_bool(
            s("index.mapping.total_fields.ignore_dynamic_beyond_limit"),
            false,
            "index.mapping.total_fields.ignore_dynamic_beyond_limit",
        )? {
            return Err(EsError::illegal_argument(
                "[index.mapping.total_fields.ignore_dynamic_beyond_limit] set to [true] is not supported by Lode",
            ));
        }
        let defaults = MappingLimits::default();
        let mapping_limits = MappingLimits {
            total_fields: parse_long(
                s("index.mapping.total_fields.limit"),
                defaults.total_fields,
                0,
                "index.mapping.total_fields.limit",
            )?,
            depth: parse_long(
                s("index.mapping.depth.limit"),
                defaults.depth,
                1,
                "index.mapping.depth.limit",
            )?,
            field_name_length: parse_long(
                s("index.mapping.field_name_length.limit"),
                defaults.field_name_length,
                1,
                "index.mapping.field_name_length.limit",
            )?,
            nested_fields: parse_long(
                s("index.mapping.nested_fields.limit"),
                defaults.nested_fields,
                0,
                "index.mapping.nested_fields.limit",
            )?,
            nested_objects: parse_long(
                s("index.mapping.nested_objects.limit"),
                defaults.nested_objects,
                0,
                "index.mapping.nested_objects.limit",
            )?,
        };
        let field_defaults = crate::mapping::FieldDefaults {
            coerce: parse_bool(s("index.mapping.coerce"), true, "index.mapping.coerce")?,
            ignore_malformed: parse_bool(
                s("index.mapping.ignore_malformed"),
                false,
                "index.mapping.ignore_malformed",
            )?,
        };
        Ok(IndexConfig {
            field_defaults,
            mapping_limits,
            query_string_lenient,
            query_default_fields,
            number_of_shards,
            number_of_replicas,
            refresh_interval,
            explicit_refresh,
            search_idle_after,
            max_result_window,
            durability,
            sync_interval,
            flush_threshold_size,
            codec,
            requests_cache_enable,
            max_terms_count,
            max_regex_length,
        })
    }
}

fn parse_usize(v: Option<String>, default: usize, key: &str) -> EsResult<usize> {
    match v {
        None => Ok(default),
        Some(s) => s.trim().parse::<usize>().map_err(|_| {
            EsError::illegal_argument(format!("Failed to parse value [{s}] for setting [{key}]"))
        }),
    }
}

/// A `Setting.longSetting` with a minimum, and ES's messages for a value that is not a
/// number or is below the minimum.
fn parse_long(v: Option<String>, default: u64, min: i64, key: &str) -> EsResult<u64> {
    let Some(s) = v else {
        return Ok(default);
    };
    let n: i64 = s.trim().parse().map_err(|_| {
        EsError::illegal_argument(format!("Failed to parse value [{s}] for setting [{key}]"))
    })?;
    if n < min {
        return Err(EsError::illegal_argument(format!(
            "Failed to parse value [{s}] for setting [{key}] must be >= {min}"
        )));
    }
    Ok(n as u64)
}

fn parse_bool(v: Option<String>, default: bool, key: &str) -> EsResult<bool> {
    match v.as_deref() {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(s) => Err(EsError::illegal_argument(format!(
            "Failed to parse value [{s}] as only [true] or [false] are allowed. for setting [{key}]"
        ))),
    }
}

/// Time values such as `1s`, `500ms`, `-1`.
pub fn parse_time(v: &str, key: &str) -> EsResult<i64> {
    if v.trim() == "-1" {
        return Ok(-1);
    }
    lode_dates::parse_time_value(v).map_err(|_| {
        EsError::illegal_argument(format!(
            "failed to parse setting [{key}] with value [{v}] as a time value: unit is missing or unrecognized"
        ))
    })
}

impl IndexConfig {
    /// How long a shard may go unsearched before its scheduled refreshes wait for a search
    /// (`None`: never, as with an explicit `index.refresh_interval`).
    pub fn search_idle_after(&self) -> Option<Duration> {
        (!self.explicit_refresh && self.refresh_interval.is_some())
            .then_some(self.search_idle_after)
    }
}

/// Byte sizes such as `512mb`, `1gb`, `100b`.
pub fn parse_bytes(v: &str, key: &str) -> EsResult<u64> {
    let t = v.trim().to_ascii_lowercase();
    let (num, mult) = [
        ("pb", 1u64 << 50),
        ("tb", 1 << 40),
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n.trim().to_string(), *m)))
    .unwrap_or((t.clone(), 0));
    if mult == 0 {
        return Err(EsError::illegal_argument(format!(
            "failed to parse setting [{key}] with value [{v}] as a size in bytes: unit is missing or unrecognized"
        )));
    }
    let n: f64 = num.parse().map_err(|_| {
        EsError::illegal_argument(format!("failed to parse [{v}] for setting [{key}]"))
    })?;
    Ok((n * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flatten_accepts_every_form() {
        let a = flatten(&json!({"index":{"number_of_shards":2,"analysis":{"analyzer":{"a":{"filter":["lowercase"]}}}}})).unwrap();
        let b =
            flatten(&json!({"number_of_shards":"2","analysis.analyzer.a.filter":["lowercase"]}))
                .unwrap();
        assert_eq!(a, b);
        assert_eq!(a["index.number_of_shards"], json!("2"));
        assert_eq!(
            nest(&a)["index"]["analysis"]["analyzer"]["a"]["filter"],
            json!(["lowercase"])
        );
    }

    #[test]
    fn typed_view_defaults_and_errors() {
        let c = IndexConfig::from_flat(&FlatSettings::new()).unwrap();
        assert_eq!(c.number_of_shards, 1);
        assert_eq!(c.refresh_interval, Some(Duration::from_secs(1)));
        assert_eq!(c.durability, Durability::Request);
        let f = flatten(&json!({"refresh_interval":"-1","translog":{"durability":"async","sync_interval":"50ms"}})).unwrap();
        assert!(IndexConfig::from_flat(&f).is_err());
        assert_eq!(parse_bytes("512mb", "x").unwrap(), 512 << 20);
    }

    #[test]
    fn mapping_limits_parse_as_es_long_settings() {
        let c = IndexConfig::from_flat(&FlatSettings::new()).unwrap();
        assert_eq!(c.mapping_limits, MappingLimits::default());
        let f = flatten(&json!({"mapping":{"total_fields":{"limit":5},"depth":{"limit":"3"}}}))
            .unwrap();
        let c = IndexConfig::from_flat(&f).unwrap();
        assert_eq!(c.mapping_limits.total_fields, 5);
        assert_eq!(c.mapping_limits.depth, 3);
        let f = flatten(&json!({"mapping.depth.limit": 0})).unwrap();
        assert_eq!(
            IndexConfig::from_flat(&f).unwrap_err().reason,
            "Failed to parse value [0] for setting [index.mapping.depth.limit] must be >= 1"
        );
        let f = flatten(&json!({"mapping.total_fields.limit": "x"})).unwrap();
        assert_eq!(
            IndexConfig::from_flat(&f).unwrap_err().reason,
            "Failed to parse value [x] for setting [index.mapping.total_fields.limit]"
        );
    }
}

//! Cluster-wide dynamic settings (`PUT|GET /_cluster/settings`): `persistent` ones survive
//! restarts (kept in the data directory), `transient` ones do not; transient wins. The ones
//! Lode acts on are `search.max_buckets`, the scroll keep-alive limits, the disk watermarks,
//! the circuit breaker limits and `search.allow_expensive_queries`; the others ES users
//! commonly set are accepted and reported.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use lode_engine::settings::{nest, FlatSettings};
use lode_engine::{EsError, EsResult, Node};
use serde_json::{json, Value};

use crate::rest::{RestRequest, RestResponse};

#[derive(Default, Clone)]
struct Settings {
    persistent: FlatSettings,
    transient: FlatSettings,
    /// Node-level defaults (not shown by `GET _cluster/settings`).
    node: BTreeMap<String, String>,
}

fn store() -> &'static Mutex<HashMap<PathBuf, Settings>> {
    static STORE: OnceLock<Mutex<HashMap<PathBuf, Settings>>> = OnceLock::new();
    STORE.get_or_init(Default::default)
}

fn file(node: &Node) -> PathBuf {
    node.data.join("_cluster_settings.json")
}

fn with<T>(node: &Node, f: impl FnOnce(&mut Settings) -> T) -> T {
    let mut all = store().lock().unwrap();
    let s = all.entry(node.data.clone()).or_insert_with(|| Settings {
        persistent: std::fs::read(file(node))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default(),
        transient: BTreeMap::new(),
        node: BTreeMap::new(),
    });
    f(s)
}

/// Settings ES users set on clusters, by exact key or family prefix.
const KNOWN: &[&str] = &[
    "search.max_buckets",
    "search.default_keep_alive",
    "search.max_keep_alive",
    "search.max_open_scroll_context",
    "search.allow_expensive_queries",
    "search.default_search_timeout",
    "action.destructive_requires_name",
    "action.auto_create_index",
    "cluster.routing.",
    "cluster.max_shards_per_node",
    "cluster.info.update.interval",
    "cluster.blocks.",
    "indices.",
    "network.breaker.inflight_requests.limit",
    "network.breaker.inflight_requests.overhead",
    "logger.",
    "script.",
];

fn known(key: &str) -> bool {
    KNOWN
        .iter()
        .any(|k| key == *k || (k.ends_with('.') && key.starts_with(k)))
}

fn validate(key: &str, v: &Value, scope: &str) -> EsResult<()> {
    // Thread pools are sized by node settings (`thread_pool.*`, see thread_pool.rs), which ES 8
    // does not let the cluster settings API change.
    if key.starts_with("thread_pool.") || lode_engine::breaker::STATIC.contains(&key) {
        return Err(EsError::illegal_argument(format!(
            "{scope} setting [{key}], not dynamically updateable"
        )));
    }
    // The watermarks' `max_headroom` companions are not implemented: refused, not ignored.
    if !known(key)
        || (key.starts_with("cluster.routing.allocation.disk.") && key.ends_with(".max_headroom"))
    {
        return Err(EsError::illegal_argument(format!(
            "{scope} setting [{key}], not recognized"
        )));
    }
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let bad =
        || EsError::illegal_argument(format!("failed to parse value [{s}] for setting [{key}]"));
    match key {
        "search.max_buckets" | "search.max_open_scroll_context" => {
            s.parse::<u64>().map_err(|_| bad())?;
        }
        "search.default_keep_alive" | "search.max_keep_alive" => {
            lode_dates::parse_time_value(&s).map_err(|_| bad())?;
        }
        "action.destructive_requires_name" | "search.allow_expensive_queries" => {
            s.parse::<bool>().map_err(|_| bad())?;
        }
        _ => {}
    }
    Ok(())
}

fn apply(target: &mut FlatSettings, update: &FlatSettings) {
    for (k, v) in update {
        if v.is_null() {
            // `null` resets; a trailing wildcard resets a family, as in ES.
            match k.strip_suffix('*') {
                Some(prefix) => target.retain(|t, _| !t.starts_with(prefix)),
                None => {
                    target.remove(k);
                }
            }
        } else {
            let v = match v {
                Value::String(_) => v.clone(),
                other => json!(other.to_string()),
            };
            target.insert(k.clone(), v);
        }
    }
}

/// Dotted keys of a (possibly nested) settings object; values kept as given.
fn flatten(v: &Value) -> EsResult<FlatSettings> {
    fn walk(prefix: &str, v: &Value, out: &mut FlatSettings) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, x, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.clone());
            }
        }
    }
    if !v.is_object() {
        return Err(EsError::parsing("settings must be an object"));
    }
    let mut out = FlatSettings::new();
    walk("", v, &mut out);
    Ok(out)
}

fn render(flat: &FlatSettings, flat_settings: bool) -> Value {
    if flat_settings {
        json!(flat)
    } else {
        nest(flat)
    }
}

/// `PUT /_cluster/settings`.
/// `ClusterUpdateSettingsRequest#fromXContent` (an `ObjectParser` that refuses unknown
/// fields): the body is an object of `persistent` and `transient` only.
fn check_body_shape(body: &Value) -> EsResult<()> {
    const NAME: &str = "cluster_update_settings_request";
    let Some(obj) = body.as_object() else {
        let token = match body {
            Value::Array(_) => "START_ARRAY",
            Value::String(_) => "VALUE_STRING",
            Value::Number(_) => "VALUE_NUMBER",
            Value::Bool(_) => "VALUE_BOOLEAN",
            _ => "VALUE_NULL",
        };
        return Err(EsError::x_content_parse(format!(
            "[1:1] [{NAME}] Expected START_OBJECT but was: {token}"
        )));
    };
    match obj
        .keys()
        .find(|k| !matches!(k.as_str(), "persistent" | "transient"))
    {
        Some(k) => Err(EsError::x_content_parse(format!(
            "[1:2] [{NAME}] unknown field [{k}]{}",
            lode_engine::error::did_you_mean(k, &["persistent", "transient"])
        ))),
        None => Ok(()),
    }
}

pub fn put(node: &Node, req: &RestRequest) -> EsResult<RestResponse> {
    let body = req.required_body()?;
    check_body_shape(&body)?;
    let scope = |k: &str| -> EsResult<FlatSettings> {
        match body.get(k) {
            None | Some(Value::Null) => Ok(FlatSettings::new()),
            Some(v) => flatten(v),
        }
    };
    let (persistent, transient) = (scope("persistent")?, scope("transient")?);
    for (k, v) in &persistent {
        if !v.is_null() {
            validate(k, v, "persistent")?;
        }
    }
    for (k, v) in &transient {
        if !v.is_null() {
            validate(k, v, "transient")?;
        }
    }
    let (disk, breakers, expensive) = with(node, |s| -> EsResult<_> {
        // Validated on the settings as they would be (ES checks the watermarks together).
        let mut next = s.clone();
        apply(&mut next.persistent, &persistent);
        apply(&mut next.transient, &transient);
        let disk = disk_settings(&next)?;
        let breakers = breaker_settings(&next)?;
        *s = next;
        let tmp = node.data.join("_cluster_settings.json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(&s.persistent).unwrap_or_default(),
        )?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, file(node))?;
        Ok((disk, breakers, allow_expensive_queries(s)))
    })?;
    // The monitor checks the disk again right away with the new thresholds.
    node.disk.configure(disk);
    lode_engine::breaker::service().apply(&breakers);
    lode_query::set_allow_expensive_queries(expensive);
    let shown = |u: &FlatSettings| -> FlatSettings {
        u.iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let flat = req.bool_param("flat_settings", false)?;
    Ok(RestResponse::ok(json!({
        "acknowledged": true,
        "persistent": render(&shown(&persistent), flat),
        "transient": render(&shown(&transient), flat),
    })))
}

/// `GET /_cluster/settings` (`flat_settings`, `include_defaults`).
pub fn get(node: &Node, req: &RestRequest) -> EsResult<RestResponse> {
    let s = with(node, |s| s.clone());
    let flat = req.bool_param("flat_settings", false)?;
    let mut body = json!({
        "persistent": render(&s.persistent, flat),
        "transient": render(&s.transient, flat),
    });
    if req.bool_param("include_defaults", false)? {
        let defaults: FlatSettings = [
            ("search.max_buckets", "65536"),
            ("search.default_keep_alive", "5m"),
            ("search.max_keep_alive", "24h"),
            ("search.allow_expensive_queries", "true"),
            ("action.destructive_requires_name", "true"),
            ("cluster.routing.allocation.disk.threshold_enabled", "true"),
            ("cluster.routing.allocation.disk.watermark.low", "85%"),
            ("cluster.routing.allocation.disk.watermark.high", "90%"),
            (
                "cluster.routing.allocation.disk.watermark.flood_stage",
                "95%",
            ),
            ("cluster.info.update.interval", "30s"),
            ("indices.breaker.total.limit", "95%"),
            ("indices.breaker.total.use_real_memory", "true"),
            ("indices.breaker.request.limit", "60%"),
            ("indices.breaker.request.overhead", "1.0"),
            ("indices.breaker.fielddata.limit", "40%"),
            ("indices.breaker.fielddata.overhead", "1.03"),
            ("network.breaker.inflight_requests.limit", "100%"),
            ("network.breaker.inflight_requests.overhead", "2.0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
        body["defaults"] = render(&defaults, flat);
    }
    Ok(RestResponse::ok(body))
}

fn effective(s: &Settings, key: &str) -> Option<String> {
    s.transient
        .get(key)
        .or_else(|| s.persistent.get(key))
        .and_then(|v| v.as_str().map(str::to_string))
        .or_else(|| s.node.get(key).cloned())
}

/// Node settings (`-E`, `lode.yml`) that default cluster settings (the disk thresholds):
/// cluster settings override them, as ES's node settings under `PUT _cluster/settings`.
pub fn set_node_defaults(node: &Node, defaults: BTreeMap<String, String>) {
    with(node, |s| s.node = defaults);
}

fn disk_settings(s: &Settings) -> EsResult<lode_engine::disk::DiskSettings> {
    lode_engine::disk::DiskSettings::from_lookup(|k| effective(s, k))
}

fn breaker_settings(s: &Settings) -> EsResult<lode_engine::breaker::BreakerSettings> {
    lode_engine::breaker::BreakerSettings::from_lookup(
        |k| effective(s, k),
        lode_engine::breaker::machine_memory(),
    )
}

/// `search.allow_expensive_queries` (default `true`; validated as a boolean when put).
fn allow_expensive_queries(s: &Settings) -> bool {
    effective(s, "search.allow_expensive_queries").is_none_or(|v| v != "false")
}

/// Hands the persisted `search.allow_expensive_queries` to query planning (at startup).
pub fn configure_search(node: &Node) {
    lode_query::set_allow_expensive_queries(with(node, |s| allow_expensive_queries(s)));
}

/// Applies the circuit breaker settings (node settings under persisted cluster settings) to
/// the node's breakers (at startup).
pub fn configure_breakers(node: &Node) {
    match with(node, |s| breaker_settings(s)) {
        Ok(b) => lode_engine::breaker::service().apply(&b),
        Err(e) => {
            tracing::warn!(error = %e, "invalid persisted circuit breaker settings; using defaults")
        }
    }
}

/// Hands the persisted disk watermark settings to the node's disk monitor (at startup).
pub fn configure_disk(node: &Node) {
    match with(node, |s| disk_settings(s)) {
        Ok(d) => node.disk.configure(d),
        Err(e) => {
            tracing::warn!(error = %e, "invalid persisted disk watermark settings; using defaults")
        }
    }
}

/// The effective value of a cluster setting (transient over persistent).
pub fn value(node: &Node, key: &str) -> Option<String> {
    with(node, |s| {
        s.transient
            .get(key)
            .or_else(|| s.persistent.get(key))
            .and_then(|v| v.as_str().map(str::to_string))
    })
}

pub fn max_buckets(node: &Node) -> Option<usize> {
    value(node, "search.max_buckets").and_then(|v| v.parse().ok())
}

fn duration(node: &Node, key: &str) -> Option<Duration> {
    value(node, key)
        .and_then(|v| lode_dates::parse_time_value(&v).ok())
        .map(|ms| Duration::from_millis(ms.max(0) as u64))
}

/// `search.max_keep_alive` (ES default 24h): longer scroll keep-alives are refused.
pub fn max_keep_alive(node: &Node) -> Duration {
    duration(node, "search.max_keep_alive").unwrap_or(Duration::from_secs(24 * 3600))
}

/// A duration as ES prints time values (`2m`, `24h`, `1500ms`).
pub fn time_string(d: Duration) -> String {
    let ms = d.as_millis() as u64;
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::{allow_expensive_queries, check_body_shape, Settings};
    use serde_json::json;

    #[test]
    fn allow_expensive_queries_is_transient_over_persistent_and_true_by_default() {
        let mut s = Settings::default();
        assert!(allow_expensive_queries(&s));
        let key = "search.allow_expensive_queries".to_string();
        s.persistent.insert(key.clone(), json!("false"));
        assert!(!allow_expensive_queries(&s));
        s.transient.insert(key.clone(), json!("true"));
        assert!(allow_expensive_queries(&s));
        s.transient.insert(key, json!("false"));
        assert!(!allow_expensive_queries(&s));
    }

    #[test]
    fn the_body_is_an_object_of_persistent_and_transient() {
        check_body_shape(&json!({"persistent": {}, "transient": {"a": 1}})).unwrap();
        check_body_shape(&json!({})).unwrap();
        let e = check_body_shape(&json!([1])).unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "x_content_parse_exception")
        );
        assert_eq!(
            e.reason,
            "[1:1] [cluster_update_settings_request] Expected START_OBJECT but was: START_ARRAY"
        );
        let e = check_body_shape(&json!({"persistant": {}})).unwrap_err();
        assert_eq!(
            e.reason,
            "[1:2] [cluster_update_settings_request] unknown field [persistant] did you mean [persistent]?"
        );
    }
}

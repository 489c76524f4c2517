//! Stored scripts (`PUT|GET|DELETE /_scripts/{id}`), kept in the node's data directory as ES
//! keeps them in cluster state, and looked up by `{"script": {"id": ...}}` in updates.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use lode_engine::{EsError, EsResult, Node};
use serde_json::{json, Value};

use crate::rest::{RestRequest, RestResponse};

type Scripts = BTreeMap<String, Value>;

fn stores() -> &'static Mutex<HashMap<PathBuf, Scripts>> {
    static STORES: OnceLock<Mutex<HashMap<PathBuf, Scripts>>> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

fn file(data: &Path) -> PathBuf {
    data.join("_scripts.json")
}

fn with_store<T>(node: &Node, f: impl FnOnce(&mut Scripts) -> T) -> T {
    let mut all = stores().lock().unwrap();
    let scripts = all.entry(node.data.clone()).or_insert_with(|| {
        std::fs::read(file(&node.data))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    });
    f(scripts)
}

fn persist(node: &Node, scripts: &Scripts) -> EsResult<()> {
    let tmp = node.data.join("_scripts.json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(scripts).unwrap_or_default())?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, file(&node.data))?;
    Ok(())
}

/// The stored script `id` as `{"lang", "source"}`, for script resolution.
pub fn lookup(node: &Node, id: &str) -> Option<Value> {
    with_store(node, |s| s.get(id).cloned())
}

/// Inlines every stored-script reference of a request body: each `script` object with an
/// `id` (in queries, `script_fields`, aggregations, sorts), wherever ES's `Script` parser
/// would resolve it. A missing script is ES's `resource_not_found_exception`.
pub fn inline_all(node: &Node, body: &mut Value) -> EsResult<()> {
    let stored = |id: &str| lookup(node, id);
    inline_walk(body, &stored)
}

fn inline_walk(v: &mut Value, stored: lode_painless::StoredScripts) -> EsResult<()> {
    match v {
        Value::Object(o) => {
            for (k, child) in o.iter_mut() {
                if k == "script" {
                    lode_painless::inline_stored(child, stored)?;
                }
                inline_walk(child, stored)?;
            }
        }
        Value::Array(items) => {
            for item in items {
                inline_walk(item, stored)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `PUT|POST /_scripts/{id}` with `{"script": {"lang": "painless", "source": "..."}}`.
pub fn put(node: &Node, id: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let body = req.required_body()?;
    let Some(script) = body.get("script").filter(|s| s.is_object()) else {
        return Err(EsError::parsing(
            "[script] is missing, required to store a script",
        ));
    };
    let lang = script
        .get("lang")
        .and_then(|l| l.as_str())
        .unwrap_or("painless");
    let Some(source) = script.get("source").and_then(|s| s.as_str()) else {
        return Err(EsError::illegal_argument(
            "must specify source for stored script",
        ));
    };
    let stored = json!({"lang": lang, "source": source});
    // Compile now, as ES does, so a broken script is rejected when stored. Without a context
    // it may be meant for updates (`ctx`) or for searches (`doc`, `_score`): either will do.
    if let Err(e) = lode_painless::Script::compile(&stored, None) {
        lode_painless::SearchScript::compile(&stored, None).map_err(|_| e)?;
    }
    with_store(node, |s| {
        s.insert(id.to_string(), stored);
        persist(node, s)
    })?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `GET /_scripts/{id}`.
pub fn get(node: &Node, id: &str) -> EsResult<RestResponse> {
    Ok(match lookup(node, id) {
        Some(script) => RestResponse::ok(json!({"_id": id, "found": true, "script": script})),
        None => RestResponse::json(404, json!({"_id": id, "found": false})),
    })
}

/// `DELETE /_scripts/{id}`.
pub fn delete(node: &Node, id: &str) -> EsResult<RestResponse> {
    with_store(node, |s| match s.remove(id) {
        Some(_) => persist(node, s),
        None => Err(EsError::new(
            404,
            "resource_not_found_exception",
            format!("stored script [{id}] does not exist"),
        )),
    })?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

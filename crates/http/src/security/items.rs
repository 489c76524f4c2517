//! Authorization of requests whose indices are in the body, as ES authorizes them: `_bulk`
//! items one by one (a forbidden item fails with a 403 in its item, the others run), `_mget`
//! documents one by one, `_msearch` searches one by one (each with the wildcard expansion of a
//! search), and alias changes (privilege on both the indices and the aliases, or the whole
//! request is refused). Forbidden items are taken out of the body before the handler runs and
//! their failures put back in place in its response.

use super::{authorize_expression, Subject};
use lode_api::rest::{RestBody, RestResponse};
use lode_engine::{EsError, Node};
use serde_json::{json, Value};

pub enum Outcome {
    /// run the handler on `body`, then put `failures` (position, item) into the response
    Proceed {
        body: Vec<u8>,
        failures: Vec<(usize, Value)>,
        list: &'static str,
    },
    /// answer without running the handler
    Answer(RestResponse),
    Deny(EsError),
}

fn unchanged(body: Vec<u8>) -> Outcome {
    Outcome::Proceed {
        body,
        failures: vec![],
        list: "",
    }
}

fn error_json(e: &EsError) -> Value {
    e.to_response_json()["error"].clone()
}

/// `segs`: the decoded path; `action`: the request's action (`Target::Items`).
pub fn check(
    node: &Node,
    subject: &Subject,
    action: &str,
    segs: &[String],
    body: Vec<u8>,
) -> Outcome {
    let default_index = segs.first().filter(|s| !s.starts_with('_')).cloned();
    match action {
        "indices:data/write/bulk" => bulk(node, subject, default_index.as_deref(), body),
        "indices:data/read/mget" => mget(subject, default_index.as_deref(), body),
        "indices:data/read/msearch" => msearch(node, subject, default_index.as_deref(), body),
        "indices:admin/aliases" => aliases(subject, segs, body),
        _ => unchanged(body),
    }
}

fn lines(body: &[u8]) -> Vec<&[u8]> {
    body.split(|b| *b == b'\n')
        .filter(|l| l.iter().any(|c| !c.is_ascii_whitespace()))
        .collect()
}

fn bulk(node: &Node, subject: &Subject, default_index: Option<&str>, body: Vec<u8>) -> Outcome {
    if !body.ends_with(b"\n") {
        return unchanged(body);
    }
    let ls = lines(&body);
    let mut kept: Vec<u8> = Vec::with_capacity(body.len());
    let mut failures = Vec::new();
    let (mut i, mut pos) = (0, 0);
    while i < ls.len() {
        let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(ls[i]) else {
            // malformed: the handler refuses the whole request before running any item
            return unchanged(body);
        };
        let Some((op, meta)) = o.iter().next() else {
            return unchanged(body);
        };
        let has_source = op != "delete";
        let index = meta
            .get("_index")
            .and_then(Value::as_str)
            .or(default_index)
            .map(str::to_string);
        let item_action = match op.as_str() {
            "index" => "indices:data/write/index:op_type/index",
            "create" => "indices:data/write/index:op_type/create",
            "update" => "indices:data/write/update",
            "delete" => "indices:data/write/delete",
            _ => return unchanged(body),
        };
        let n = if has_source { 2 } else { 1 };
        // an item that would create its index also needs the index creation privilege
        let creates = |ix: &str| {
            op != "delete" && node.get(ix).is_none() && node.alias_indices(ix).is_empty()
        };
        let denied_action = match &index {
            // no index: the handler's own per-item error
            None => None,
            Some(ix) if !subject.can_index(item_action, ix) => Some(item_action),
            Some(ix) if creates(ix) && !subject.can_index("indices:admin/auto_create", ix) => {
                Some("indices:admin/auto_create")
            }
            Some(_) => None,
        };
        // ES's `BulkShardRequestInterceptor`: an update item under document- or field-level
        // security fails on its own (400)
        let restricted = denied_action.is_none()
            && op == "update"
            && index.as_deref().is_some_and(|ix| {
                super::update_restricted(node, subject, "indices:data/write/bulk[s]", ix)
            });
        if restricted {
            let e = EsError::new(
                400,
                "security_exception",
                "Can't execute a bulk item request with update requests embedded if field or document level security is enabled",
            );
            let mut item = serde_json::Map::new();
            item.insert("_index".into(), json!(index.clone().unwrap_or_default()));
            if let Some(id) = meta.get("_id") {
                item.insert("_id".into(), id.clone());
            }
            item.insert("status".into(), json!(400));
            item.insert("error".into(), error_json(&e));
            failures.push((pos, json!({ op.as_str(): item })));
        } else if denied_action.is_none() {
            for l in &ls[i..(i + n).min(ls.len())] {
                kept.extend_from_slice(l);
                kept.push(b'\n');
            }
        } else {
            let ix = index.unwrap_or_default();
            let e = subject.index_denied(
                denied_action.unwrap_or(item_action),
                std::slice::from_ref(&ix),
            );
            let mut item = serde_json::Map::new();
            item.insert("_index".into(), json!(ix));
            if let Some(id) = meta.get("_id") {
                item.insert("_id".into(), id.clone());
            }
            item.insert("status".into(), json!(403));
            item.insert("error".into(), error_json(&e));
            failures.push((pos, json!({ op.as_str(): item })));
        }
        i += n;
        pos += 1;
    }
    if failures.is_empty() {
        return unchanged(body);
    }
    if kept.is_empty() {
        let items: Vec<Value> = failures.into_iter().map(|(_, v)| v).collect();
        return Outcome::Answer(RestResponse::ok(
            json!({"errors": true, "took": 0, "items": items}),
        ));
    }
    Outcome::Proceed {
        body: kept,
        failures,
        list: "items",
    }
}

fn mget(subject: &Subject, default_index: Option<&str>, body: Vec<u8>) -> Outcome {
    const ACTION: &str = "indices:data/read/mget[shard]";
    let Ok(Value::Object(mut o)) = serde_json::from_slice::<Value>(&body) else {
        return unchanged(body);
    };
    let denied = |ix: &str, id: &Value| {
        let e = subject.index_denied(ACTION, &[ix.to_string()]);
        json!({"_index": ix, "_id": id, "error": error_json(&e)})
    };
    if let Some(Value::Array(ids)) = o.get("ids") {
        let Some(ix) = default_index else {
            return unchanged(body);
        };
        if subject.can_index(ACTION, ix) {
            return unchanged(body);
        }
        let docs: Vec<Value> = ids.iter().map(|id| denied(ix, id)).collect();
        return Outcome::Answer(RestResponse::ok(json!({ "docs": docs })));
    }
    let Some(Value::Array(docs)) = o.get("docs") else {
        return unchanged(body);
    };
    let mut kept = Vec::new();
    let mut failures = Vec::new();
    for (pos, d) in docs.iter().enumerate() {
        let ix = d.get("_index").and_then(Value::as_str).or(default_index);
        match ix {
            Some(ix) if !subject.can_index(ACTION, ix) => {
                failures.push((pos, denied(ix, d.get("_id").unwrap_or(&Value::Null))))
            }
            _ => kept.push(d.clone()),
        }
    }
    if failures.is_empty() {
        return unchanged(body);
    }
    if kept.is_empty() {
        let docs: Vec<Value> = failures.into_iter().map(|(_, v)| v).collect();
        return Outcome::Answer(RestResponse::ok(json!({ "docs": docs })));
    }
    o.insert("docs".into(), Value::Array(kept));
    Outcome::Proceed {
        body: serde_json::to_vec(&o).unwrap_or_default(),
        failures,
        list: "docs",
    }
}

fn msearch(node: &Node, subject: &Subject, default_index: Option<&str>, body: Vec<u8>) -> Outcome {
    const ACTION: &str = "indices:data/read/search";
    let ls = lines(&body);
    if ls.len() & 1 == 1 {
        return unchanged(body);
    }
    let mut kept: Vec<u8> = Vec::with_capacity(body.len());
    let mut failures = Vec::new();
    for (pos, pair) in ls.chunks(2).enumerate() {
        let Ok(Value::Object(mut header)) = serde_json::from_slice::<Value>(pair[0]) else {
            return unchanged(body);
        };
        let expr = match header.get("index") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
            _ => default_index.unwrap_or("_all").to_string(),
        };
        match authorize_expression(node, subject, ACTION, &expr) {
            Err(e) => failures.push((pos, json!({"error": error_json(&e), "status": 403}))),
            Ok(rewritten) => {
                if let Some(new) = rewritten {
                    header.insert("index".into(), Value::String(new));
                }
                kept.extend(serde_json::to_vec(&header).unwrap_or_default());
                kept.push(b'\n');
                kept.extend_from_slice(pair[1]);
                kept.push(b'\n');
            }
        }
    }
    if failures.is_empty() {
        return Outcome::Proceed {
            body: kept,
            failures,
            list: "",
        };
    }
    if kept.is_empty() {
        let responses: Vec<Value> = failures.into_iter().map(|(_, v)| v).collect();
        return Outcome::Answer(RestResponse::ok(json!({"took": 0, "responses": responses})));
    }
    Outcome::Proceed {
        body: kept,
        failures,
        list: "responses",
    }
}

fn aliases(subject: &Subject, segs: &[String], body: Vec<u8>) -> Outcome {
    const ACTION: &str = "indices:admin/aliases";
    let mut names: Vec<(String, &'static str)> = Vec::new();
    if segs.len() == 3 {
        // PUT/DELETE /{index}/_alias/{name}
        for i in segs[0].split(',') {
            names.push((i.to_string(), ACTION));
        }
        for a in segs[2].split(',') {
            names.push((a.to_string(), ACTION));
        }
    } else if let Ok(v) = serde_json::from_slice::<Value>(&body) {
        let list = |a: &Value, one: &str, many: &str| -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            if let Some(s) = a.get(one).and_then(Value::as_str) {
                out.push(s.to_string());
            }
            if let Some(arr) = a.get(many).and_then(Value::as_array) {
                out.extend(arr.iter().filter_map(Value::as_str).map(str::to_string));
            }
            out
        };
        for act in v
            .get("actions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some((kind, a)) = act.as_object().and_then(|o| o.iter().next()) else {
                continue;
            };
            let action = if kind == "remove_index" {
                "indices:admin/delete"
            } else {
                ACTION
            };
            for n in list(a, "index", "indices") {
                names.push((n, action));
            }
            for n in list(a, "alias", "aliases") {
                names.push((n, ACTION));
            }
        }
    }
    for (n, action) in &names {
        if !subject.can_index(action, n) {
            return Outcome::Deny(subject.index_denied(action, std::slice::from_ref(n)));
        }
    }
    unchanged(body)
}

/// Puts the forbidden items' failures back in place in the handler's response.
pub fn merge(response: RestResponse, failures: Vec<(usize, Value)>, list: &str) -> RestResponse {
    if failures.is_empty() || response.status >= 300 {
        return response;
    }
    let mut v: Value = match response.body {
        RestBody::Json(v) => v,
        RestBody::JsonBytes(b) => {
            // `_mget` and `_msearch` answers hold stored sources as sent: they stay bytes
            // (a bulk answer's `errors` is rewritten below, on the tree)
            let spliced = (list != "items")
                .then(|| super::splice_items::insert_items(&b, list, &failures))
                .flatten();
            if let Some(out) = spliced {
                return RestResponse::json_bytes(response.status, out);
            }
            match serde_json::from_slice(&b) {
                Ok(v) => v,
                Err(_) => return RestResponse::json_bytes(response.status, b),
            }
        }
        other => {
            return RestResponse {
                status: response.status,
                body: other,
            }
        }
    };
    if let Some(Value::Array(arr)) = v.get_mut(list) {
        for (pos, item) in failures {
            let at = pos.min(arr.len());
            arr.insert(at, item);
        }
    }
    if list == "items" {
        v["errors"] = Value::Bool(true);
    }
    RestResponse::json(response.status, v)
}

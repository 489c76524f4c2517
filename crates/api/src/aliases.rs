//! The alias APIs: `PUT|DELETE /{index}/_alias/{name}`, `POST /_aliases` (atomic actions),
//! `GET|HEAD [/{index}]/_alias[/{name}]`, and aliases given at index creation.

use std::collections::BTreeMap;
use std::sync::Arc;

use lode_engine::alias::{validate_alias_name, AliasMeta};
use lode_engine::mapping::wildcard_match;
use lode_engine::node::ResolveOptions;
use lode_engine::{EsError, EsResult, IndexService, Node};
use serde_json::{json, Map, Value};

use crate::rest::{list_param, RestRequest, RestResponse};

/// One planned change, validated before anything is applied.
enum Action {
    Add(Arc<IndexService>, String, AliasMeta),
    Remove(Arc<IndexService>, String),
    RemoveIndex(Arc<IndexService>),
}

fn index_opts() -> ResolveOptions {
    ResolveOptions {
        ignore_unavailable: false,
        allow_no_indices: false,
        open: true,
        closed: true,
        hidden: false,
        aliases: true,
    }
}

/// Resolves the indices of an alias action; aliases are not valid targets there.
fn concrete_indices(node: &Node, expr: &str) -> EsResult<Vec<Arc<IndexService>>> {
    let resolved = node.resolve_detailed(expr, index_opts())?;
    if let Some(r) = resolved.iter().find(|r| r.via_aliases.is_some()) {
        let alias = &r.via_aliases.as_ref().unwrap()[0].0;
        return Err(EsError::illegal_argument(format!(
            "The provided expression [{alias}] matches an alias, specify the corresponding concrete indices instead."
        )));
    }
    Ok(resolved.into_iter().map(|r| r.index).collect())
}

fn check_write_indices(node: &Node, actions: &[Action]) -> EsResult<()> {
    // After the actions, an alias may have at most one write index.
    let mut writes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in actions {
        if let Action::Add(i, name, meta) = a {
            if meta.is_write_index == Some(true) {
                writes.entry(name).or_default().push(&i.name);
            }
        }
    }
    for (alias, new_writers) in writes {
        let mut all: Vec<String> = new_writers.iter().map(|s| s.to_string()).collect();
        for holder in node.alias_indices(alias) {
            let removed = actions.iter().any(|a| match a {
                Action::Remove(i, n) => i.name == holder.name && n == alias,
                Action::RemoveIndex(i) => i.name == holder.name,
                Action::Add(i, n, _) => i.name == holder.name && n == alias,
            });
            if !removed && holder.alias(alias).and_then(|m| m.is_write_index) == Some(true) {
                all.push(holder.name.clone());
            }
        }
        if all.len() > 1 {
            return Err(EsError::illegal_argument(format!(
                "alias [{alias}] has more than one write index [{}]",
                all.join(",")
            )));
        }
    }
    Ok(())
}

/// An index's alias additions and removals.
type IndexChanges = (Arc<IndexService>, Vec<(String, AliasMeta)>, Vec<String>);

fn apply(node: &Node, actions: Vec<Action>) -> EsResult<()> {
    // `TransportIndicesAliasesAction#checkBlock`: metadata writes of every index named.
    let mut named: Vec<Arc<IndexService>> = Vec::new();
    for a in &actions {
        let i = match a {
            Action::Add(i, ..) | Action::Remove(i, _) | Action::RemoveIndex(i) => i,
        };
        if !named.iter().any(|n| n.name == i.name) {
            named.push(i.clone());
        }
    }
    lode_engine::blocks::check_all(&named, lode_engine::blocks::Level::MetadataWrite)?;
    apply_unchecked(node, actions)
}

/// Applies alias actions without the block check (aliases given at index creation).
fn apply_unchecked(node: &Node, actions: Vec<Action>) -> EsResult<()> {
    check_write_indices(node, &actions)?;
    let mut per_index: BTreeMap<String, IndexChanges> = BTreeMap::new();
    let mut drop_indices = Vec::new();
    for a in actions {
        match a {
            Action::Add(i, name, meta) => {
                if node.get(&name).is_some() {
                    return Err(EsError::bad_request(
                        "invalid_alias_name_exception",
                        format!("Invalid alias name [{name}]: an index or data stream exists with the same name as the alias"),
                    ));
                }
                per_index
                    .entry(i.name.clone())
                    .or_insert_with(|| (i.clone(), vec![], vec![]))
                    .1
                    .push((name, meta));
            }
            Action::Remove(i, name) => {
                per_index
                    .entry(i.name.clone())
                    .or_insert_with(|| (i.clone(), vec![], vec![]))
                    .2
                    .push(name);
            }
            Action::RemoveIndex(i) => drop_indices.push(i.name.clone()),
        }
    }
    for (_, (index, add, remove)) in per_index {
        index.update_aliases(&add, &remove)?;
    }
    for name in drop_indices {
        node.delete_index(&name)?;
    }
    Ok(())
}

fn names_of(v: Option<&Value>) -> EsResult<Vec<String>> {
    match v {
        None => Ok(vec![]),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| EsError::parsing("alias action names must be strings"))
            })
            .collect(),
        Some(_) => Err(EsError::parsing("alias action names must be strings")),
    }
}

/// `POST /_aliases` with `{"actions": [{"add"|"remove"|"remove_index": {...}}]}`.
pub fn update_aliases(node: &Node, req: &RestRequest) -> EsResult<RestResponse> {
    let body = req.required_body()?;
    let Some(list) = body.get("actions").and_then(|a| a.as_array()) else {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: no actions specified;",
        ));
    };
    let mut actions = Vec::new();
    for entry in list {
        let Some((kind, spec)) = entry.as_object().and_then(|o| o.iter().next()) else {
            return Err(EsError::parsing("alias action must be an object"));
        };
        let mut indices = names_of(spec.get("index"))?;
        indices.extend(names_of(spec.get("indices"))?);
        if indices.is_empty() {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: One of [index] or [indices] is required;",
            ));
        }
        let targets = concrete_indices(node, &indices.join(","))?;
        match kind.as_str() {
            "add" | "remove" => {
                let mut aliases = names_of(spec.get("alias"))?;
                aliases.extend(names_of(spec.get("aliases"))?);
                if aliases.is_empty() {
                    return Err(EsError::bad_request(
                        "action_request_validation_exception",
                        "Validation Failed: 1: One of [alias] or [aliases] is required;",
                    ));
                }
                if kind == "add" {
                    let meta = AliasMeta::parse(spec)?;
                    for a in &aliases {
                        validate_alias_name(a)?;
                        for t in &targets {
                            actions.push(Action::Add(t.clone(), a.clone(), meta.clone()));
                        }
                    }
                } else {
                    let must_exist = spec.get("must_exist").and_then(|v| v.as_bool());
                    let mut removed_any = false;
                    for t in &targets {
                        for (name, _) in t.aliases() {
                            if aliases
                                .iter()
                                .any(|p| p == "_all" || wildcard_match(p, &name))
                            {
                                removed_any = true;
                                actions.push(Action::Remove(t.clone(), name));
                            }
                        }
                    }
                    if !removed_any && must_exist != Some(false) {
                        return Err(aliases_missing(&aliases));
                    }
                }
            }
            "remove_index" => {
                for t in targets {
                    actions.push(Action::RemoveIndex(t));
                }
            }
            other => {
                return Err(EsError::parsing(format!(
                    "[aliases] unknown field [{other}]"
                )))
            }
        }
    }
    apply(node, actions)?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

fn aliases_missing(names: &[String]) -> EsError {
    EsError::new(
        404,
        "aliases_not_found_exception",
        format!("aliases [{}] missing", names.join(",")),
    )
    .with("resource.type", "aliases")
    .with("resource.id", names.join(","))
}

/// `PUT|POST /{index}/_alias/{name}` (body: filter, routing, is_write_index, ...).
pub fn put_alias(node: &Node, expr: &str, name: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let body = req.json_body()?.unwrap_or(Value::Null);
    let mut meta = AliasMeta::parse(&body)?;
    if let Some(r) = req.param("routing") {
        meta.index_routing.get_or_insert(r.to_string());
        meta.search_routing.get_or_insert(r.to_string());
    }
    let targets = concrete_indices(node, expr)?;
    let mut actions = Vec::new();
    for n in list_param(Some(name)) {
        validate_alias_name(&n)?;
        for t in &targets {
            actions.push(Action::Add(t.clone(), n.clone(), meta.clone()));
        }
    }
    apply(node, actions)?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `DELETE /{index}/_alias/{name}` (names may be wildcards or `_all`).
pub fn delete_alias(node: &Node, expr: &str, name: &str) -> EsResult<RestResponse> {
    let targets = concrete_indices(node, expr)?;
    let patterns = list_param(Some(name));
    let mut actions = Vec::new();
    for t in &targets {
        for (n, _) in t.aliases() {
            if patterns
                .iter()
                .any(|p| p == "_all" || wildcard_match(p, &n))
            {
                actions.push(Action::Remove(t.clone(), n));
            }
        }
    }
    if actions.is_empty() {
        return Err(aliases_missing(&patterns));
    }
    apply(node, actions)?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// Aliases given in `PUT /{index}` (`{"aliases": {"name": {...}}}`), applied after creation.
pub fn create_with(node: &Node, index: &str, aliases: &Value) -> EsResult<()> {
    let Some(map) = aliases.as_object() else {
        return Err(EsError::parsing("[aliases] must be an object"));
    };
    let idx = node.index(index)?;
    let mut actions = Vec::new();
    for (name, spec) in map {
        validate_alias_name(name)?;
        actions.push(Action::Add(
            idx.clone(),
            name.clone(),
            AliasMeta::parse(spec)?,
        ));
    }
    apply_unchecked(node, actions)
}

/// Validates creation-time aliases before the index exists (so a bad alias creates nothing).
pub fn validate_create(node: &Node, aliases: &Value) -> EsResult<()> {
    let Some(map) = aliases.as_object() else {
        return Err(EsError::parsing("[aliases] must be an object"));
    };
    for (name, spec) in map {
        validate_alias_name(name)?;
        AliasMeta::parse(spec)?;
        if node.get(name).is_some() {
            return Err(EsError::bad_request(
                "invalid_alias_name_exception",
                format!("Invalid alias name [{name}]: an index or data stream exists with the same name as the alias"),
            ));
        }
    }
    Ok(())
}

/// The `aliases` object of one index, for `GET /{index}`.
pub fn index_aliases_json(index: &IndexService) -> Value {
    Value::Object(
        index
            .aliases()
            .into_iter()
            .map(|(n, m)| (n, m.to_json()))
            .collect(),
    )
}

/// `GET [/{index}]/_alias[/{name}]` and `HEAD` of the same.
pub fn get_alias(
    node: &Node,
    expr: Option<&str>,
    name: Option<&str>,
    req: &RestRequest,
    head: bool,
) -> EsResult<RestResponse> {
    let mut opts = ResolveOptions {
        ignore_unavailable: req.bool_param("ignore_unavailable", false)?,
        allow_no_indices: true,
        open: true,
        closed: false,
        hidden: expr.is_none(),
        aliases: true,
    };
    if let Some(ew) = req.param("expand_wildcards") {
        opts = opts.expand_wildcards(ew)?;
    }
    let indices = node.resolve(expr.unwrap_or("_all"), opts)?;
    // `TransportGetAliasesAction#checkBlock`: metadata reads of every index resolved.
    lode_engine::blocks::check_all(&indices, lode_engine::blocks::Level::MetadataRead)?;
    let patterns = list_param(name);
    let wanted = |n: &str| {
        patterns.is_empty() || patterns.iter().any(|p| p == "_all" || wildcard_match(p, n))
    };
    let mut out = Map::new();
    let mut seen: Vec<String> = Vec::new();
    for idx in &indices {
        let mut aliases = Map::new();
        for (n, meta) in idx.aliases() {
            if wanted(&n) {
                seen.push(n.clone());
                aliases.insert(n, meta.to_json());
            }
        }
        // Without a name filter every index is listed; with one, only indices that match.
        if patterns.is_empty() || !aliases.is_empty() {
            out.insert(idx.name.clone(), json!({ "aliases": aliases }));
        }
    }
    let missing: Vec<&String> = patterns
        .iter()
        .filter(|p| *p != "_all" && !p.contains('*') && !seen.contains(p))
        .collect();
    if head {
        let status = if missing.is_empty() && (patterns.is_empty() || !seen.is_empty()) {
            200
        } else {
            404
        };
        return Ok(RestResponse::empty(status));
    }
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        let msg = if names.len() == 1 {
            format!("alias [{}] missing", names[0])
        } else {
            format!("aliases [{}] missing", names.join(","))
        };
        let mut body = Map::new();
        body.insert("error".into(), json!(msg));
        body.insert("status".into(), json!(404));
        body.extend(out);
        return Ok(RestResponse::json(404, Value::Object(body)));
    }
    if !patterns.is_empty()
        && out.is_empty()
        && patterns.iter().all(|p| p.contains('*') || p == "_all")
    {
        return Ok(RestResponse::ok(json!({})));
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

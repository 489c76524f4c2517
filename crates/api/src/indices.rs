//! Index APIs: create, delete, exists, get, mappings, settings, refresh, flush, force merge,
//! open/close, `_analyze`, and the by-query APIs.

use crate::rest::{list_param, shards_header, RestRequest, RestResponse};
use lode_engine::blocks::Level;
use lode_engine::index::IndexService;
use lode_engine::node::ResolveOptions;
use lode_engine::settings::{self, FlatSettings};
use lode_engine::{EsError, EsResult, Node};
use serde_json::{json, Map, Value};
use std::sync::Arc;

fn opts(req: &RestRequest, default_closed: bool) -> EsResult<ResolveOptions> {
    let mut o = ResolveOptions {
        ignore_unavailable: req.bool_param("ignore_unavailable", false)?,
        allow_no_indices: req.bool_param("allow_no_indices", true)?,
        open: true,
        closed: default_closed,
        hidden: false,
        aliases: true,
    };
    if let Some(ew) = req.param("expand_wildcards") {
        o = o.expand_wildcards(ew)?;
    }
    Ok(o)
}

/// Resolves an index expression; a bare wildcard that matches nothing is an error only when
/// `allow_no_indices=false`.
pub fn resolve(
    node: &Node,
    expr: &str,
    req: &RestRequest,
    closed: bool,
) -> EsResult<Vec<Arc<IndexService>>> {
    node.resolve(expr, opts(req, closed)?)
}

/// `PUT /{index}`.
pub fn create(node: &Node, name: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let body = req.json_body()?.unwrap_or(json!({}));
    let obj = body
        .as_object()
        .ok_or_else(|| EsError::parsing("index body must be an object"))?;
    for k in obj.keys() {
        if !matches!(k.as_str(), "settings" | "mappings" | "aliases") {
            // ES's CreateIndexRequest throws an ElasticsearchParseException: `parse_exception`.
            return Err(EsError::bad_request(
                "parse_exception",
                format!("unknown key [{k}] for create index"),
            ));
        }
    }
    let settings = obj.get("settings").cloned().unwrap_or(Value::Null);
    let mappings = obj.get("mappings").cloned().unwrap_or(Value::Null);
    if let Some(a) = obj.get("aliases") {
        crate::aliases::validate_create(node, a)?;
    }
    let unwrapped = match &mappings {
        Value::Object(m) if m.len() == 1 && m.get("_doc").is_some_and(Value::is_object) => {
            &m["_doc"]
        }
        m => m,
    };
    lode_query::runtime::validate_mapping(unwrapped)?;
    // A date math name (`<logs-{now/d}>`) is resolved once, by the creation.
    let created = node.create_index(name, &settings, &mappings)?;
    let name = created.name.as_str();
    if let Some(a) = obj.get("aliases") {
        crate::aliases::create_with(node, name, a)?;
    }
    let started =
        crate::by_query::shards_acknowledged(&created, req.param("wait_for_active_shards"))?;
    Ok(RestResponse::ok(
        json!({"acknowledged": true, "shards_acknowledged": started, "index": name}),
    ))
}

/// `DELETE /{index}` (comma lists and wildcards).
pub fn delete(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    if expr == "_all" || expr == "*" {
        // ES refuses wildcard deletes only with action.destructive_requires_name; allow it.
    }
    let mut o = opts(req, true)?;
    o.closed = true;
    o.aliases = false;
    // ES never deletes through an alias: naming one is an error (or skipped with
    // ignore_unavailable), and wildcards do not expand to aliases.
    let mut parts = Vec::new();
    for part in expr.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let concrete = !part.contains('*') && !part.starts_with('-') && part != "_all";
        if concrete && node.get(part).is_none() && !node.alias_indices(part).is_empty() {
            if o.ignore_unavailable {
                continue;
            }
            return Err(EsError::illegal_argument(format!(
                "The provided expression [{part}] matches an alias, specify the corresponding concrete indices instead."
            )));
        }
        parts.push(part);
    }
    if parts.is_empty() {
        return Ok(RestResponse::ok(json!({"acknowledged": true})));
    }
    let list = node.resolve(&parts.join(","), o)?;
    // `read_only` and `metadata` blocks refuse deletion; `read_only_allow_delete` allows it.
    lode_engine::blocks::check_all(&list, Level::MetadataWrite)?;
    for i in list {
        node.delete_index(&i.name)?;
        crate::search::request_cache::clear(&i.uuid);
    }
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `HEAD /{index}`.
pub fn exists(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let mut o = opts(req, true)?;
    o.allow_no_indices = req.bool_param("allow_no_indices", false)?;
    match node.resolve(expr, o) {
        Ok(list) if !list.is_empty() => Ok(RestResponse::empty(200)),
        _ => Ok(RestResponse::empty(404)),
    }
}

fn settings_json(index: &IndexService, flat_settings: bool, include_defaults: bool) -> Value {
    let flat = index.settings();
    let mut v = if flat_settings {
        json!(flat)
    } else {
        settings::nest(&flat)
    };
    if include_defaults {
        let mut defaults = FlatSettings::new();
        for (k, d) in [
            ("index.refresh_interval", "1s"),
            ("index.max_result_window", "10000"),
            ("index.translog.durability", "REQUEST"),
            ("index.translog.sync_interval", "5s"),
            ("index.translog.flush_threshold_size", "512mb"),
            ("index.codec", "default"),
            ("index.requests.cache.enable", "true"),
            ("index.max_terms_count", "65536"),
            ("index.number_of_replicas", "1"),
        ] {
            if !flat.contains_key(k) {
                defaults.insert(k.to_string(), json!(d));
            }
        }
        let d = if flat_settings {
            json!(defaults)
        } else {
            settings::nest(&defaults)
        };
        v = json!({"settings": v, "defaults": d});
        return v;
    }
    json!({ "settings": v })
}

/// `GET /{index}`.
pub fn get(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let list = resolve(node, expr, req, true)?;
    if list.is_empty() && !expr.contains('*') && expr != "_all" {
        return Err(EsError::index_not_found(expr));
    }
    lode_engine::blocks::check_all(&list, Level::MetadataRead)?;
    let flat = req.bool_param("flat_settings", false)?;
    let mut out = Map::new();
    for i in list {
        let s = settings_json(&i, flat, req.bool_param("include_defaults", false)?);
        let mut entry = json!({"aliases": crate::aliases::index_aliases_json(&i), "mappings": visible_mapping(&i, req, "indices:admin/get"), "settings": s["settings"]});
        if let Some(d) = s.get("defaults") {
            entry["defaults"] = d.clone();
        }
        out.insert(i.name.clone(), entry);
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

/// `GET /{index}/_mapping`, `GET /_mapping`.
pub fn get_mapping(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let list = resolve(node, expr, req, true)?;
    lode_engine::blocks::check_all(&list, Level::MetadataRead)?;
    let mut out = Map::new();
    for i in list {
        out.insert(
            i.name.clone(),
            json!({"mappings": visible_mapping(&i, req, "indices:admin/mappings/get")}),
        );
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

/// An index's mapping as the request's subject may see it: under field-level security for
/// `action`, without the fields it may not read, as ES's `MapperPlugin#getFieldFilter` filters
/// get mapping and get index.
fn visible_mapping(index: &IndexService, req: &RestRequest, action: &str) -> Value {
    let mut json = index.mapping().json.clone();
    let fls = req
        .field_security
        .as_ref()
        .and_then(|f| f.permissions_for(action, &index.name));
    if let (Some(p), Some(props)) = (
        fls,
        json.get_mut("properties").and_then(Value::as_object_mut),
    ) {
        p.filter_properties(props, "");
    }
    json
}

/// `PUT /{index}/_mapping`.
pub fn put_mapping(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let body = req.required_body()?;
    // ES 8 refuses a mapping wrapped in a type name (`{"_doc": {"properties": ..}}`).
    if matches!(&body, Value::Object(m) if m.len() == 1 && m.get("_doc").is_some_and(Value::is_object))
    {
        return Err(EsError::illegal_argument(
            "Types cannot be provided in put mapping requests",
        ));
    }
    let list = resolve(node, expr, req, false)?;
    if list.is_empty() {
        return Err(EsError::index_not_found(expr));
    }
    lode_engine::blocks::check_all(&list, Level::MetadataWrite)?;
    lode_query::runtime::validate_mapping(&body)?;
    for i in list {
        i.update_mapping(&body)?;
    }
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `GET /{index}/_settings[/{name}]`.
pub fn get_settings(
    node: &Node,
    expr: &str,
    name: Option<&str>,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let list = resolve(node, expr, req, true)?;
    lode_engine::blocks::check_all(&list, Level::MetadataRead)?;
    let flat = req.bool_param("flat_settings", false)?;
    let include_defaults = req.bool_param("include_defaults", false)?;
    let names = list_param(name);
    let mut out = Map::new();
    for i in list {
        let mut s = settings_json(&i, true, include_defaults);
        if !names.is_empty() {
            for part in ["settings", "defaults"] {
                if let Some(Value::Object(m)) = s.get_mut(part) {
                    m.retain(|k, _| {
                        names
                            .iter()
                            .any(|n| lode_engine::mapping::wildcard_match(n, k))
                    });
                }
            }
        }
        if !flat {
            for part in ["settings", "defaults"] {
                if let Some(v) = s.get(part).cloned() {
                    let f: FlatSettings = serde_json::from_value(v).unwrap_or_default();
                    s[part] = settings::nest(&f);
                }
            }
        }
        out.insert(i.name.clone(), s);
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

/// `PUT /{index}/_settings`, `PUT /_settings`.
pub fn put_settings(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let body = req.required_body()?;
    let body = match body.get("settings") {
        Some(s) if body.as_object().map(|o| o.len() == 1).unwrap_or(false) => s.clone(),
        _ => body,
    };
    let list = resolve(node, expr, req, true)?;
    if list.is_empty() && !(expr.contains('*') || expr == "_all" || expr.is_empty()) {
        return Err(EsError::index_not_found(expr));
    }
    if !lode_engine::blocks::settings_update_exempt(&settings::flatten(&body)?) {
        lode_engine::blocks::check_all(&list, Level::MetadataWrite)?;
    }
    let preserve = req.bool_param("preserve_existing", false)?;
    for i in list {
        if preserve {
            // Only settings the index does not have yet are applied.
            let existing = i.settings();
            let fresh: Map<String, Value> = lode_engine::settings::flatten(&body)?
                .into_iter()
                .filter(|(k, _)| !existing.contains_key(k))
                .collect();
            if !fresh.is_empty() {
                i.update_settings(&Value::Object(fresh))?;
            }
            continue;
        }
        i.update_settings(&body)?;
    }
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

fn broadcast(
    list: &[Arc<IndexService>],
    f: impl Fn(&IndexService) -> EsResult<()>,
) -> EsResult<Value> {
    let (mut total, mut done) = (0, 0);
    for i in list {
        total += i.num_shards();
        // Unassigned shards count in `total` only (ES's broadcast actions skip shards with no
        // started copy without calling them failures).
        let started = i.num_shards() - i.allocation_failures().len();
        if started == 0 {
            continue;
        }
        f(i)?;
        done += started;
    }
    let mut header = shards_header(total);
    header["successful"] = json!(done);
    Ok(json!({"_shards": header}))
}

/// `POST /{index}/_refresh`.
pub fn refresh(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let list = resolve(node, expr, req, false)?;
    Ok(RestResponse::ok(broadcast(&list, |i| i.refresh())?))
}

/// `POST /{index}/_flush`.
pub fn flush(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    // Lode's flush always commits and waits for a flush in progress, which is what `force`
    // asks and what `wait_if_ongoing` (the default) means; only their conflict is refused.
    let force = req.bool_param("force", false)?;
    if force && !req.bool_param("wait_if_ongoing", true)? {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: wait_if_ongoing must be true for a force flush;",
        ));
    }
    let list = resolve(node, expr, req, false)?;
    Ok(RestResponse::ok(broadcast(&list, |i| i.flush())?))
}

/// `POST /{index}/_forcemerge`.
pub fn forcemerge(node: &Arc<Node>, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let list = resolve(node, expr, req, false)?;
    // `TransportForceMergeAction#checkRequestBlock`.
    lode_engine::blocks::check_all(&list, Level::MetadataWrite)?;
    let max = req.usize_param("max_num_segments")?;
    let expunge = req.bool_param("only_expunge_deletes", false)?;
    if expunge && max.is_some() {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: cannot set only_expunge_deletes and max_num_segments at the same time, those two parameters are mutually exclusive;",
        ));
    }
    let flush = req.bool_param("flush", true)?;
    if !req.bool_param("wait_for_completion", true)? {
        let names: Vec<&str> = list.iter().map(|i| i.name.as_str()).collect();
        let task = crate::tasks::register(
            "indices:admin/forcemerge",
            format!(
                "Force-merge indices [{}], maxSegments[{}], onlyExpungeDeletes[{expunge}], flush[{flush}]",
                names.join(", "),
                max.map_or(-1, |m| m as i64)
            ),
            f64::INFINITY,
        );
        let (node2, task2) = (node.clone(), task.clone());
        std::thread::Builder::new()
            .name(format!("lode-task-{}", task.id))
            .spawn(move || {
                let outcome = broadcast(&list, |i| i.force_merge(max, expunge, flush))
                    .map_err(|e| e.to_error_json());
                crate::tasks::finish(&node2, &task2, outcome, true);
            })
            .map_err(|e| EsError::internal(format!("could not start task: {e}")))?;
        let id = format!("{}:{}", crate::cluster::node_id(node), task.id);
        return Ok(RestResponse::ok(json!({ "task": id })));
    }
    Ok(RestResponse::ok(broadcast(&list, |i| {
        i.force_merge(max, expunge, flush)
    })?))
}

/// `POST [/{index}]/_cache/clear`: empties the request cache of the indices (Lode's only cache
/// that holds results; the query and fielddata flags are accepted).
pub fn clear_cache(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let list = resolve(node, expr, req, false)?;
    let mut shards = 0;
    for i in &list {
        crate::search::request_cache::clear(&i.uuid);
        shards += i.num_shards();
    }
    Ok(RestResponse::ok(
        json!({ "_shards": shards_header(shards) }),
    ))
}

/// `POST /{index}/_close`.
pub fn close(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let list = resolve(node, expr, req, false)?;
    lode_engine::blocks::check_all(&list, Level::MetadataWrite)?;
    let mut indices = Map::new();
    let mut started = true;
    for i in &list {
        i.close()?;
        indices.insert(i.name.clone(), json!({"closed": true}));
        started &= crate::by_query::shards_acknowledged(i, req.param("wait_for_active_shards"))?;
    }
    Ok(RestResponse::ok(
        json!({"acknowledged": true, "shards_acknowledged": started, "indices": indices}),
    ))
}

/// `PUT /{index}/_block/{block}` (ES's add index block API): sets `index.blocks.{block}` on
/// every index the expression names. Adding a block that itself blocks metadata writes
/// (`read_only`, `metadata`) is allowed on an index with a metadata-write block; any other
/// is refused there, as `TransportAddIndexBlockAction#checkBlock`.
pub fn add_block(
    node: &Node,
    expr: &str,
    block: &str,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let block = lode_engine::blocks::Block::from_name(block)
        .ok_or_else(|| EsError::illegal_argument(format!("No block found with name {block}")))?;
    let list = resolve(node, expr, req, false)?;
    if list.is_empty() {
        return Err(EsError::index_not_found(expr));
    }
    if !block.blocks(Level::MetadataWrite) {
        lode_engine::blocks::check_all(&list, Level::MetadataWrite)?;
    }
    let mut indices = Vec::new();
    for i in &list {
        if i.is_closed() {
            return Err(EsError::index_closed(&i.name, &i.uuid));
        }
        i.set_block(block, true)?;
        indices.push(json!({"name": i.name, "blocked": true}));
    }
    Ok(RestResponse::ok(json!({
        "acknowledged": true,
        "shards_acknowledged": true,
        "indices": indices,
    })))
}

/// `POST /{index}/_open`.
pub fn open(node: &Node, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let mut o = opts(req, true)?;
    o.closed = true;
    let list = node.resolve(expr, o)?;
    lode_engine::blocks::check_all(&list, Level::MetadataWrite)?;
    let mut started = true;
    for i in &list {
        i.open_index()?;
        started &= crate::by_query::shards_acknowledged(i, req.param("wait_for_active_shards"))?;
    }
    Ok(RestResponse::ok(
        json!({"acknowledged": true, "shards_acknowledged": started}),
    ))
}

/// `POST /_analyze`, `/{index}/_analyze`.
pub fn analyze(node: &Node, index: Option<&str>, req: &RestRequest) -> EsResult<RestResponse> {
    let body = req.required_body()?;
    let registry = match index {
        Some(i) => node.index(i)?.analysis.clone(),
        None => lode_analysis::AnalysisRegistry::new(None)
            .map_err(|e| EsError::new(400, e.kind, e.reason))?,
    };
    let texts: Vec<String> = match body.get("text") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect(),
        _ => {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: text is missing;",
            ))
        }
    };
    let to_err = |e: lode_analysis::AnalysisError| EsError::new(400, e.kind, e.reason);
    // Values of one field are separated by `position_increment_gap` (100 for text fields and
    // custom analyzers); built-in analyzers, tokenizer chains and normalizers have none.
    let mut gap = 0;
    let analyzer = if let Some(field) = body.get("field").and_then(|f| f.as_str()) {
        let idx = node
            .index(index.ok_or_else(|| {
                EsError::illegal_argument("analyze with field requires an index")
            })?)?;
        let mapping = idx.mapping();
        match mapping.field(field) {
            Some(def) if def.storage() == lode_engine::mapping::Storage::Text => {
                gap = 100;
                registry.analyzer(&def.analyzer).map_err(to_err)?
            }
            Some(def) => match &def.normalizer {
                Some(n) => registry.normalizer(n).map_err(to_err)?,
                None => registry
                    .build_custom(&json!("keyword"), &[], &[])
                    .map_err(to_err)?,
            },
            None => registry.analyzer("standard").map_err(to_err)?,
        }
    } else if let Some(a) = body.get("analyzer").and_then(|a| a.as_str()) {
        let prefix = format!("index.analysis.analyzer.{a}.");
        if let Some(idx) = index.and_then(|i| node.get(i)) {
            if idx.settings().keys().any(|k| k.starts_with(&prefix)) {
                gap = 100;
            }
        }
        registry.analyzer(a).map_err(to_err)?
    } else if body.get("tokenizer").is_some()
        || body.get("filter").is_some()
        || body.get("char_filter").is_some()
    {
        let tokenizer = body.get("tokenizer").cloned().unwrap_or(json!("keyword"));
        let arr = |k: &str| {
            body.get(k)
                .and_then(|v| v.as_array())
                .cloned()
                .unwrap_or_default()
        };
        registry
            .build_custom(&tokenizer, &arr("filter"), &arr("char_filter"))
            .map_err(to_err)?
    } else if let Some(n) = body.get("normalizer").and_then(|a| a.as_str()) {
        registry.normalizer(n).map_err(to_err)?
    } else {
        registry.analyzer("standard").map_err(to_err)?
    };
    let mut tokens = Vec::new();
    let mut pos_base = 0usize;
    let mut offset_base = 0usize;
    for (ti, text) in texts.iter().enumerate() {
        let toks = analyzer.analyze(text);
        let mut last_pos = 0;
        for t in &toks {
            let mut token = json!({
                "token": t.token,
                "start_offset": t.start_offset + offset_base,
                "end_offset": t.end_offset + offset_base,
                "type": t.token_type,
                "position": t.position + pos_base,
            });
            if t.position_length > 1 {
                token["positionLength"] = json!(t.position_length);
            }
            tokens.push(token);
            last_pos = t.position + pos_base;
        }
        if ti + 1 < texts.len() {
            pos_base = if toks.is_empty() {
                pos_base
            } else {
                last_pos + gap + 1
            };
            offset_base += text.encode_utf16().count() + 1;
        }
    }
    Ok(RestResponse::ok(json!({ "tokens": tokens })))
}

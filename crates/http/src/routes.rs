//! The route table: Elasticsearch paths and methods to API handlers.

use lode_api::cluster::NodeInfo;
use lode_api::rest::{Method, RestRequest, RestResponse};
use lode_api::url_params::*;
use lode_api::{
    aliases, allocation_explain, by_query, cat, cluster, cluster_settings, docs, indices, search,
    stats, stored_scripts, tasks,
};
use lode_engine::{EsError, EsResult, Node};
use std::cell::Cell;
use std::sync::Arc;

use Method::*;

fn method_not_allowed(req: &RestRequest, allowed: &str) -> EsError {
    EsError::new(
        405,
        "method_not_allowed",
        format!(
            "Incorrect HTTP method for uri [{}] and method [{:?}], allowed: [{allowed}]",
            req.path, req.method
        )
        .replace("Get", "GET")
        .replace("Post", "POST")
        .replace("Put", "PUT")
        .replace("Delete", "DELETE")
        .replace("Head", "HEAD"),
    )
}

fn method_name(m: Method) -> &'static str {
    match m {
        Get => "GET",
        Head => "HEAD",
        Post => "POST",
        Put => "PUT",
        Delete => "DELETE",
    }
}

/// Dispatches one request. `segs` are the percent-decoded path segments.
pub fn route(
    node: &Arc<Node>,
    info: &NodeInfo,
    segs: &[String],
    req: &RestRequest,
) -> EsResult<RestResponse> {
    dispatch(node, info, segs, req, None)
}

/// The API a request is routed to, without running it (`None` for the requests the table
/// refuses itself): the HTTP layer admits the request by its API's thread pool first.
pub fn api_of(
    node: &Arc<Node>,
    info: &NodeInfo,
    segs: &[String],
    req: &RestRequest,
) -> Option<&'static ApiParams> {
    let found = Cell::new(None);
    let _ = dispatch(node, info, segs, req, Some(&found));
    found.get()
}

/// The route table. With `resolve`, an arm records its API there instead of running it, so
/// the table is written once for both uses.
fn dispatch(
    node: &Arc<Node>,
    info: &NodeInfo,
    segs: &[String],
    req: &RestRequest,
    resolve: Option<&Cell<Option<&'static ApiParams>>>,
) -> EsResult<RestResponse> {
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let m = req.method;
    // Each arm names the API's URL parameters (lode_api::url_params), checked before the
    // handler runs.
    let call = |params: &'static ApiParams, handler: &dyn Fn() -> EsResult<RestResponse>| {
        if let Some(found) = resolve {
            found.set(Some(params));
            return Ok(RestResponse::empty(200));
        }
        params.check(req)?;
        if !params.body && !req.body.is_empty() {
            return Err(EsError::illegal_argument(format!(
                "request [{} {}] does not support having a body",
                method_name(req.method),
                req.path
            )));
        }
        handler()
    };
    match (m, s.as_slice()) {
        (Get | Head, []) => call(&INFO, &|| cluster::info(node, info)),
        // Cluster and node level.
        (Put, ["_cluster", "settings"]) => {
            call(&CLUSTER_PUT_SETTINGS, &|| cluster_settings::put(node, req))
        }
        (Get, ["_cluster", "settings"]) => {
            call(&CLUSTER_GET_SETTINGS, &|| cluster_settings::get(node, req))
        }
        (Get | Post, ["_cluster", "allocation", "explain"]) => {
            call(&CLUSTER_ALLOCATION_EXPLAIN, &|| {
                allocation_explain::explain(node, info, req)
            })
        }
        (Post, ["_cluster", "reroute"]) => call(&CLUSTER_REROUTE, &|| cluster::reroute(node, req)),
        (Get, ["_cluster", "health"]) => {
            call(&CLUSTER_HEALTH, &|| cluster::health(node, info, None, req))
        }
        (Get, ["_cluster", "health", idx]) => call(&CLUSTER_HEALTH, &|| {
            cluster::health(node, info, Some(idx), req)
        }),
        (Get, ["_nodes", "stats"])
        | (Get, ["_nodes", _, "stats"])
        | (Get, ["_nodes", "stats", _])
        | (Get, ["_nodes", _, "stats", _])
        | (Get, ["_nodes", "stats", _, _])
        | (Get, ["_nodes", _, "stats", _, _])
        | (Get, ["_nodes"])
        | (Get, ["_nodes", _]) => call(&NODES, &|| cluster::nodes_stats(node, info, req)),
        (Get, ["_cat", what]) => call(&CAT_API, &|| cat::cat(node, info, what, None, req)),
        (Get, ["_cat", what, target]) => {
            call(&CAT_API, &|| cat::cat(node, info, what, Some(target), req))
        }
        (Post, ["_aliases"]) => call(&ALIASES_UPDATE, &|| aliases::update_aliases(node, req)),
        (Get, ["_alias" | "_aliases"]) => call(&ALIASES_GET, &|| {
            aliases::get_alias(node, None, None, req, false)
        }),
        (Get, ["_alias", name]) => call(&ALIASES_GET, &|| {
            aliases::get_alias(node, None, Some(name), req, false)
        }),
        (Head, ["_alias", name]) => call(&ALIASES_GET, &|| {
            aliases::get_alias(node, None, Some(name), req, true)
        }),
        (Get, [idx, "_alias" | "_aliases"]) => call(&ALIASES_GET, &|| {
            aliases::get_alias(node, Some(idx), None, req, false)
        }),
        (Get, [idx, "_alias" | "_aliases", name]) => call(&ALIASES_GET, &|| {
            aliases::get_alias(node, Some(idx), Some(name), req, false)
        }),
        (Head, [idx, "_alias" | "_aliases", name]) => call(&ALIASES_GET, &|| {
            aliases::get_alias(node, Some(idx), Some(name), req, true)
        }),
        (Put | Post, [idx, "_alias" | "_aliases", name]) => {
            call(&ALIAS_PUT, &|| aliases::put_alias(node, idx, name, req))
        }
        (Delete, [idx, "_alias" | "_aliases", name]) => {
            call(&ALIAS_DELETE, &|| aliases::delete_alias(node, idx, name))
        }
        (Put | Post, ["_scripts", id]) | (Put | Post, ["_scripts", id, _]) => {
            call(&SCRIPT_PUT, &|| stored_scripts::put(node, id, req))
        }
        (Get, ["_scripts", id]) => call(&SCRIPT_GET, &|| stored_scripts::get(node, id)),
        (Delete, ["_scripts", id]) => call(&SCRIPT_DELETE, &|| stored_scripts::delete(node, id)),
        (Get, ["_tasks"]) => call(&TASKS_LIST, &|| tasks::list(node, req)),
        (Get, ["_tasks", id]) => call(&TASKS_GET, &|| tasks::get(node, id, req)),
        (Post, ["_tasks", "_cancel"]) => call(&TASKS_CANCEL, &|| tasks::cancel_matching(node, req)),
        (Post, ["_tasks", id, "_cancel"]) => call(&TASKS_CANCEL, &|| tasks::cancel(node, id)),
        (Post, ["_delete_by_query" | "_update_by_query" | "_reindex", id, "_rethrottle"]) => {
            call(&RETHROTTLE, &|| tasks::rethrottle(node, id, req))
        }
        (Post, ["_delete_by_query"]) => call(&BY_QUERY, &|| {
            by_query::run(node, by_query::Kind::Delete, "_all", req)
        }),
        (Post, ["_update_by_query"]) => call(&BY_QUERY, &|| {
            by_query::run(node, by_query::Kind::Update, "_all", req)
        }),
        (Get, ["_stats"]) => call(&INDICES_STATS, &|| {
            stats::index_stats(node, None, None, req)
        }),
        (Get, ["_stats", metric]) => call(&INDICES_STATS, &|| {
            stats::index_stats(node, None, Some(metric), req)
        }),
        (Get, ["_segments"]) => call(&SEGMENTS, &|| stats::segments(node, None, req)),
        (Post | Get, ["_analyze"]) => call(&ANALYZE, &|| indices::analyze(node, None, req)),
        (Get, ["_mapping"]) => call(&GET_MAPPING, &|| indices::get_mapping(node, "_all", req)),
        (Get, ["_settings"]) => call(&GET_SETTINGS, &|| {
            indices::get_settings(node, "_all", None, req)
        }),
        (Get, ["_settings", name]) => call(&GET_SETTINGS, &|| {
            indices::get_settings(node, "_all", Some(name), req)
        }),
        (Put, ["_settings"]) => call(&PUT_SETTINGS, &|| indices::put_settings(node, "_all", req)),
        (Post, ["_cache", "clear"]) => {
            call(&CLEAR_CACHE, &|| indices::clear_cache(node, "_all", req))
        }
        (Post, [idx, "_cache", "clear"]) => {
            call(&CLEAR_CACHE, &|| indices::clear_cache(node, idx, req))
        }
        (Post | Get, ["_refresh"]) => call(&REFRESH, &|| indices::refresh(node, "_all", req)),
        (Post | Get, ["_flush"]) => call(&FLUSH, &|| indices::flush(node, "_all", req)),
        (Post, ["_forcemerge"]) => call(&FORCEMERGE, &|| indices::forcemerge(node, "_all", req)),
        // Search without an index.
        (Get | Post, ["_search"]) => call(&SEARCH, &|| {
            search::search(node, "_all", req, search::HitSources::Raw)
        }),
        (Get | Post, ["_count"]) => call(&COUNT, &|| search::count(node, "_all", req)),
        (Get | Post, ["_msearch"]) => call(&MSEARCH, &|| {
            search::msearch(node, None, req, search::HitSources::Raw)
        }),
        (Get | Post, ["_search", "scroll"]) => call(&SCROLL, &|| {
            search::scroll(node, req, None, search::HitSources::Raw)
        }),
        (Get | Post, ["_search", "scroll", id]) => call(&SCROLL, &|| {
            search::scroll(node, req, Some(id), search::HitSources::Raw)
        }),
        (Delete, ["_search", "scroll"]) => call(&CLEAR_SCROLL, &|| search::clear_scroll(req, None)),
        (Delete, ["_search", "scroll", ids]) => {
            call(&CLEAR_SCROLL, &|| search::clear_scroll(req, Some(ids)))
        }
        (Post | Put, ["_bulk"]) => call(&BULK, &|| docs::bulk(node, None, req)),
        (Get | Post, ["_mget"]) => call(&MGET, &|| {
            docs::mget(node, None, req, search::HitSources::Raw)
        }),
        // Point in time (open: POST /{index}/_pit, close: DELETE /_pit) is not implemented:
        // refused as ES refuses a request it cannot serve, never routed elsewhere (DELETE
        // /_pit would otherwise read as deleting an index named `_pit`).
        (Post, [_, "_pit"]) | (Delete, ["_pit"]) => Err(EsError::illegal_argument(
            "point in time ([_pit]) is not supported by Lode",
        )),
        // Index level.
        (Put, [idx]) => call(&CREATE_INDEX, &|| indices::create(node, idx, req)),
        (Delete, [idx]) => call(&DELETE_INDEX, &|| indices::delete(node, idx, req)),
        (Head, [idx]) => call(&EXISTS_INDEX, &|| indices::exists(node, idx, req)),
        (Get, [idx]) => call(&GET_INDEX, &|| indices::get(node, idx, req)),
        (Get, [idx, "_mapping"]) => call(&GET_MAPPING, &|| indices::get_mapping(node, idx, req)),
        (Put | Post, [idx, "_mapping"]) => {
            call(&PUT_MAPPING, &|| indices::put_mapping(node, idx, req))
        }
        (Get, [idx, "_settings"]) => call(&GET_SETTINGS, &|| {
            indices::get_settings(node, idx, None, req)
        }),
        (Get, [idx, "_settings", name]) => call(&GET_SETTINGS, &|| {
            indices::get_settings(node, idx, Some(name), req)
        }),
        (Put, [idx, "_settings"]) => call(&PUT_SETTINGS, &|| indices::put_settings(node, idx, req)),
        (Post | Get, [idx, "_refresh"]) => call(&REFRESH, &|| indices::refresh(node, idx, req)),
        (Post | Get, [idx, "_flush"]) => call(&FLUSH, &|| indices::flush(node, idx, req)),
        (Post, [idx, "_forcemerge"]) => call(&FORCEMERGE, &|| indices::forcemerge(node, idx, req)),
        (Post, [idx, "_close"]) => call(&CLOSE_INDEX, &|| indices::close(node, idx, req)),
        (Put, [idx, "_block", block]) => {
            call(&ADD_BLOCK, &|| indices::add_block(node, idx, block, req))
        }
        (Post, [idx, "_open"]) => call(&OPEN_INDEX, &|| indices::open(node, idx, req)),
        (Post | Get, [idx, "_analyze"]) => {
            call(&ANALYZE, &|| indices::analyze(node, Some(idx), req))
        }
        (Get, [idx, "_stats"]) => call(&INDICES_STATS, &|| {
            stats::index_stats(node, Some(idx), None, req)
        }),
        (Get, [idx, "_stats", metric]) => call(&INDICES_STATS, &|| {
            stats::index_stats(node, Some(idx), Some(metric), req)
        }),
        (Post, [idx, "_disk_usage"]) => call(&DISK_USAGE, &|| stats::disk_usage(node, idx, req)),
        (Get, [idx, "_segments"]) => call(&SEGMENTS, &|| stats::segments(node, Some(idx), req)),
        (Get | Post, [idx, "_search"]) => call(&SEARCH, &|| {
            search::search(node, idx, req, search::HitSources::Raw)
        }),
        (Get | Post, [idx, "_count"]) => call(&COUNT, &|| search::count(node, idx, req)),
        (Get | Post, [idx, "_msearch"]) => call(&MSEARCH, &|| {
            search::msearch(node, Some(idx), req, search::HitSources::Raw)
        }),
        (Post, [idx, "_delete_by_query"]) => call(&BY_QUERY, &|| {
            by_query::run(node, by_query::Kind::Delete, idx, req)
        }),
        (Post, [idx, "_update_by_query"]) => call(&BY_QUERY, &|| {
            by_query::run(node, by_query::Kind::Update, idx, req)
        }),
        (Post | Put, [idx, "_bulk"]) => call(&BULK, &|| docs::bulk(node, Some(idx), req)),
        (Get | Post, [idx, "_mget"]) => call(&MGET, &|| {
            docs::mget(node, Some(idx), req, search::HitSources::Raw)
        }),
        // Documents.
        (Post, [idx, "_doc"]) => call(&INDEX_DOC, &|| docs::index(node, idx, None, false, req)),
        (Put | Post, [idx, "_doc", id]) => {
            call(&INDEX_DOC, &|| docs::index(node, idx, Some(id), false, req))
        }
        (Put | Post, [idx, "_create", id]) => {
            call(&INDEX_DOC, &|| docs::index(node, idx, Some(id), true, req))
        }
        (Get | Head, [idx, "_doc", id]) => call(&GET_DOC, &|| docs::get(node, idx, id, req)),
        (Delete, [idx, "_doc", id]) => call(&DELETE_DOC, &|| docs::delete(node, idx, id, req)),
        (Get | Head, [idx, "_source", id]) => {
            call(&GET_SOURCE, &|| docs::get_source(node, idx, id, req))
        }
        (Post, [idx, "_update", id]) => call(&UPDATE_DOC, &|| docs::update(node, idx, id, req)),
        (_, [idx, "_doc"]) if !idx.starts_with('_') => Err(method_not_allowed(req, "POST")),
        (_, [_]) => Err(method_not_allowed(req, "HEAD, DELETE, PUT, GET")),
        _ => Err(EsError::bad_request(
            "illegal_argument_exception",
            format!(
                "request [{}] contains unrecognized parameters or path",
                req.path
            ),
        )
        .with("status", 400)),
    }
}

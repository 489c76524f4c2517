//! The route table: Elasticsearch paths and methods to API handlers.

use lode_api::cluster::NodeInfo;
use lode_api::rest::{Method, RestRequest, RestResponse};
use lode_api::{
    aliases, by_query, cat, cluster, cluster_settings, docs, indices, search, stats,
    stored_scripts, tasks,
};
use lode_engine::{EsError, EsResult, Node};
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

/// Dispatches one request. `segs` are the percent-decoded path segments.
pub fn route(
    node: &Arc<Node>,
    info: &NodeInfo,
    segs: &[String],
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let m = req.method;
    match (m, s.as_slice()) {
        (Get | Head, []) => cluster::info(node, info),
        // Cluster and node level.
        (Put, ["_cluster", "settings"]) => cluster_settings::put(node, req),
        (Get, ["_cluster", "settings"]) => cluster_settings::get(node, req),
        (Get, ["_cluster", "health"]) => cluster::health(node, info, None, req),
        (Get, ["_cluster", "health", idx]) => cluster::health(node, info, Some(idx), req),
        (Get, ["_nodes", "stats"]) | (Get, ["_nodes", _, "stats"]) => {
            cluster::nodes_stats(node, info, req)
        }
        (Get, ["_nodes", "stats", _]) | (Get, ["_nodes", _, "stats", _]) => {
            cluster::nodes_stats(node, info, req)
        }
        (Get, ["_nodes"]) | (Get, ["_nodes", _]) => cluster::nodes_stats(node, info, req),
        (Get, ["_cat", what]) => cat::cat(node, info, what, None, req),
        (Get, ["_cat", what, target]) => cat::cat(node, info, what, Some(target), req),
        (Post, ["_aliases"]) => aliases::update_aliases(node, req),
        (Get, ["_alias" | "_aliases"]) => aliases::get_alias(node, None, None, req, false),
        (Get, ["_alias", name]) => aliases::get_alias(node, None, Some(name), req, false),
        (Head, ["_alias", name]) => aliases::get_alias(node, None, Some(name), req, true),
        (Get, [idx, "_alias" | "_aliases"]) => {
            aliases::get_alias(node, Some(idx), None, req, false)
        }
        (Get, [idx, "_alias" | "_aliases", name]) => {
            aliases::get_alias(node, Some(idx), Some(name), req, false)
        }
        (Head, [idx, "_alias" | "_aliases", name]) => {
            aliases::get_alias(node, Some(idx), Some(name), req, true)
        }
        (Put | Post, [idx, "_alias" | "_aliases", name]) => {
            aliases::put_alias(node, idx, name, req)
        }
        (Delete, [idx, "_alias" | "_aliases", name]) => aliases::delete_alias(node, idx, name),
        (Put | Post, ["_scripts", id]) | (Put | Post, ["_scripts", id, _]) => {
            stored_scripts::put(node, id, req)
        }
        (Get, ["_scripts", id]) => stored_scripts::get(node, id),
        (Delete, ["_scripts", id]) => stored_scripts::delete(node, id),
        (Get, ["_tasks"]) => tasks::list(node, req),
        (Get, ["_tasks", id]) => tasks::get(node, id, req),
        (Post, ["_tasks", id, "_cancel"]) => tasks::cancel(node, id),
        (Post, ["_delete_by_query" | "_update_by_query" | "_reindex", id, "_rethrottle"]) => {
            tasks::rethrottle(node, id, req)
        }
        (Post, ["_delete_by_query"]) => by_query::run(node, by_query::Kind::Delete, "_all", req),
        (Post, ["_update_by_query"]) => by_query::run(node, by_query::Kind::Update, "_all", req),
        (Get, ["_stats"]) => stats::index_stats(node, None, None, req),
        (Get, ["_stats", metric]) => stats::index_stats(node, None, Some(metric), req),
        (Get, ["_segments"]) => stats::segments(node, None, req),
        (Post | Get, ["_analyze"]) => indices::analyze(node, None, req),
        (Get, ["_mapping"]) => indices::get_mapping(node, "_all", req),
        (Get, ["_settings"]) => indices::get_settings(node, "_all", None, req),
        (Get, ["_settings", name]) => indices::get_settings(node, "_all", Some(name), req),
        (Put, ["_settings"]) => indices::put_settings(node, "_all", req),
        (Post, ["_cache", "clear"]) => indices::clear_cache(node, "_all", req),
        (Post, [idx, "_cache", "clear"]) => indices::clear_cache(node, idx, req),
        (Post | Get, ["_refresh"]) => indices::refresh(node, "_all", req),
        (Post | Get, ["_flush"]) => indices::flush(node, "_all", req),
        (Post, ["_forcemerge"]) => indices::forcemerge(node, "_all", req),
        // Search without an index.
        (Get | Post, ["_search"]) => search::search(node, "_all", req),
        (Get | Post, ["_count"]) => search::count(node, "_all", req),
        (Get | Post, ["_msearch"]) => search::msearch(node, None, req),
        (Get | Post, ["_search", "scroll"]) => search::scroll(node, req, None),
        (Get | Post, ["_search", "scroll", id]) => search::scroll(node, req, Some(id)),
        (Delete, ["_search", "scroll"]) => search::clear_scroll(req, None),
        // Point in time (open: POST /{index}/_pit, close: DELETE /_pit) is not implemented:
        // refused as ES refuses a request it cannot serve, never routed elsewhere (DELETE
        // /_pit would otherwise read as deleting an index named `_pit`).
        (Post, [_, "_pit"]) | (Delete, ["_pit"]) => Err(EsError::illegal_argument(
            "point in time ([_pit]) is not supported by Lode",
        )),
        (Delete, ["_search", "scroll", ids]) => search::clear_scroll(req, Some(ids)),
        (Post | Put, ["_bulk"]) => docs::bulk(node, None, req),
        (Get | Post, ["_mget"]) => docs::mget(node, None, req),
        // Index level.
        (Put, [idx]) => indices::create(node, idx, req),
        (Delete, [idx]) => indices::delete(node, idx, req),
        (Head, [idx]) => indices::exists(node, idx, req),
        (Get, [idx]) => indices::get(node, idx, req),
        (Get, [idx, "_mapping"]) => indices::get_mapping(node, idx, req),
        (Put | Post, [idx, "_mapping"]) => indices::put_mapping(node, idx, req),
        (Get, [idx, "_settings"]) => indices::get_settings(node, idx, None, req),
        (Get, [idx, "_settings", name]) => indices::get_settings(node, idx, Some(name), req),
        (Put, [idx, "_settings"]) => indices::put_settings(node, idx, req),
        (Post | Get, [idx, "_refresh"]) => indices::refresh(node, idx, req),
        (Post | Get, [idx, "_flush"]) => indices::flush(node, idx, req),
        (Post, [idx, "_forcemerge"]) => indices::forcemerge(node, idx, req),
        (Post, [idx, "_close"]) => indices::close(node, idx, req),
        (Post, [idx, "_open"]) => indices::open(node, idx, req),
        (Post | Get, [idx, "_analyze"]) => indices::analyze(node, Some(idx), req),
        (Get, [idx, "_stats"]) => stats::index_stats(node, Some(idx), None, req),
        (Get, [idx, "_stats", metric]) => stats::index_stats(node, Some(idx), Some(metric), req),
        (Get, [idx, "_segments"]) => stats::segments(node, Some(idx), req),
        (Get | Post, [idx, "_search"]) => search::search(node, idx, req),
        (Get | Post, [idx, "_count"]) => search::count(node, idx, req),
        (Get | Post, [idx, "_msearch"]) => search::msearch(node, Some(idx), req),
        (Post, [idx, "_delete_by_query"]) => by_query::run(node, by_query::Kind::Delete, idx, req),
        (Post, [idx, "_update_by_query"]) => by_query::run(node, by_query::Kind::Update, idx, req),
        (Post | Put, [idx, "_bulk"]) => docs::bulk(node, Some(idx), req),
        (Get | Post, [idx, "_mget"]) => docs::mget(node, Some(idx), req),
        // Documents.
        (Post, [idx, "_doc"]) => docs::index(node, idx, None, false, req),
        (Put | Post, [idx, "_doc", id]) => docs::index(node, idx, Some(id), false, req),
        (Put | Post, [idx, "_create", id]) => docs::index(node, idx, Some(id), true, req),
        (Get | Head, [idx, "_doc", id]) => docs::get(node, idx, id, req),
        (Delete, [idx, "_doc", id]) => docs::delete(node, idx, id, req),
        (Get | Head, [idx, "_source", id]) => docs::get_source(node, idx, id, req),
        (Post, [idx, "_update", id]) => docs::update(node, idx, id, req),
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

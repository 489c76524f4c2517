//! The `endpoint` label of the HTTP metrics: a request path reduced to its route pattern
//! (`/my-index/_doc/42` → `/{index}/_doc/{id}`), so the label takes a bounded set of values
//! whatever the clients send. Elasticsearch's API names (`_search`, `_cat`, ...) and the fixed
//! words of its routes (`_cluster/health`, `_search/scroll`, `_cat/indices`) are kept; every
//! free segment becomes a placeholder named as Elasticsearch's route specs name it (`{index}`,
//! `{id}`, `{name}`, `{task_id}`, `{scroll_id}`, `{metric}`, `{node_id}`, ...); an
//! underscore name Elasticsearch does not have becomes `{unknown}`. This reads only the path,
//! so it stays independent of the route table (`routes.rs`).

/// Elasticsearch's `_`-prefixed API names (8.x REST specs), the ones Lode serves included.
const API_NAMES: &[&str] = &[
    "_alias",
    "_aliases",
    "_analyze",
    "_application",
    "_async_search",
    "_autoscaling",
    "_block",
    "_bulk",
    "_cache",
    "_cancel",
    "_cat",
    "_ccr",
    "_clone",
    "_close",
    "_cluster",
    "_component_template",
    "_connector",
    "_count",
    "_create",
    "_dangling",
    "_data_stream",
    "_delete_by_query",
    "_disk_usage",
    "_doc",
    "_enrich",
    "_eql",
    "_explain",
    "_features",
    "_field_caps",
    "_fleet",
    "_flush",
    "_forcemerge",
    "_freeze",
    "_graph",
    "_health_report",
    "_ilm",
    "_index_template",
    "_inference",
    "_ingest",
    "_knn_search",
    "_license",
    // Lode's console (`console.rs`), not an Elasticsearch API.
    "_lode",
    "_mapping",
    "_mappings",
    "_mget",
    "_migration",
    "_ml",
    "_monitoring",
    "_msearch",
    "_mtermvectors",
    "_mvt",
    "_nodes",
    "_open",
    "_pit",
    "_prometheus",
    "_query",
    "_query_rules",
    "_rank_eval",
    "_recovery",
    "_refresh",
    "_reindex",
    "_remote",
    "_render",
    "_resolve",
    "_rethrottle",
    "_rollover",
    "_rollup",
    "_scripts",
    "_search",
    "_search_shards",
    "_searchable_snapshots",
    "_security",
    "_segments",
    "_settings",
    "_shard_stores",
    "_shrink",
    "_slm",
    "_snapshot",
    "_source",
    "_split",
    "_sql",
    "_stats",
    "_synonyms",
    "_tasks",
    "_template",
    "_terms_enum",
    "_termvectors",
    "_text_structure",
    "_transform",
    "_unfreeze",
    "_update",
    "_update_by_query",
    "_upgrade",
    "_validate",
    "_watcher",
    "_xpack",
];

/// `_cat/{what}` names.
const CAT_NAMES: &[&str] = &[
    "aliases",
    "allocation",
    "anomaly_detectors",
    "component_templates",
    "count",
    "datafeeds",
    "fielddata",
    "health",
    "indices",
    "master",
    "ml",
    "nodeattrs",
    "nodes",
    "pending_tasks",
    "plugins",
    "recovery",
    "repositories",
    "segments",
    "shards",
    "snapshots",
    "tasks",
    "templates",
    "thread_pool",
    "trained_models",
    "transforms",
];

/// Longer paths are cut here (no Elasticsearch route is longer), so depth cannot grow labels.
const MAX_SEGMENTS: usize = 6;

/// The fixed words a route allows after `prev` (the previous label token).
fn literals_after(prev: &str) -> &'static [&'static str] {
    match prev {
        "_cluster" => &[
            "allocation",
            "health",
            "pending_tasks",
            "reroute",
            "settings",
            "state",
            "stats",
        ],
        "_nodes" | "{node_id}" => &["hot_threads", "reload_secure_settings", "stats", "usage"],
        "_cat" => CAT_NAMES,
        "allocation" => &["explain"],
        "_cache" => &["clear"],
        "_search" => &["scroll", "template"],
        "_prometheus" => &["metrics"],
        "_lode" => &["api", "index.html", "console.css", "console.js"],
        "api" => &["http_stats"],
        "_mapping" | "_mappings" => &["field"],
        _ => &[],
    }
}

/// The placeholder for a free segment after `prev`.
fn placeholder(prev: &str) -> &'static str {
    match prev {
        "_doc" | "_create" | "_update" | "_source" | "_explain" | "_termvectors" | "_scripts" => {
            "{id}"
        }
        "_alias" | "_aliases" | "_settings" | "templates" | "component_templates" => "{name}",
        "_tasks" | "_delete_by_query" | "_update_by_query" | "_reindex" => "{task_id}",
        "scroll" => "{scroll_id}",
        "_stats" | "stats" => "{metric}",
        "{metric}" => "{index_metric}",
        "_nodes" => "{node_id}",
        "_cat" => "{what}",
        "field" | "fielddata" => "{fields}",
        "thread_pool" => "{thread_pool_patterns}",
        "snapshots" => "{repository}",
        "health" | "indices" | "count" | "shards" | "segments" | "recovery" => "{index}",
        "{id}" => "{context}",
        _ => "{name}",
    }
}

/// The route pattern of a request path given as its percent-decoded, non-empty segments.
pub(crate) fn label<S: AsRef<str>>(segs: &[S]) -> String {
    let mut tokens: Vec<&str> = Vec::with_capacity(segs.len().min(MAX_SEGMENTS) + 1);
    for (i, seg) in segs.iter().enumerate() {
        if i == MAX_SEGMENTS {
            tokens.push("{...}");
            break;
        }
        let s = seg.as_ref();
        let token = match tokens.last() {
            // An index expression (`_all` is one), or an API name.
            None if s.starts_with('_') && s != "_all" => known_api(s).unwrap_or("{unknown}"),
            None => "{index}",
            Some(&prev) => {
                if let Some(api) = s.starts_with('_').then(|| known_api(s)).flatten() {
                    if matches!(
                        prev,
                        "_doc" | "_create" | "_update" | "_source" | "_explain" | "_termvectors"
                    ) {
                        "{id}"
                    } else {
                        api
                    }
                } else if let Some(lit) = literals_after(prev).iter().find(|l| **l == s) {
                    lit
                } else {
                    placeholder(prev)
                }
            }
        };
        tokens.push(token);
    }
    let mut out = String::with_capacity(32);
    for t in &tokens {
        out.push('/');
        out.push_str(t);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

fn known_api(s: &str) -> Option<&'static str> {
    API_NAMES.iter().copied().find(|a| *a == s)
}

#[cfg(test)]
mod tests {
    use super::label;

    fn l(path: &str) -> String {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        label(&segs)
    }

    #[test]
    fn index_names_and_ids_become_placeholders() {
        assert_eq!(l("/"), "/");
        assert_eq!(l("/my-index"), "/{index}");
        assert_eq!(l("/logs-*,other/_search"), "/{index}/_search");
        assert_eq!(l("/_all/_search"), "/{index}/_search");
        assert_eq!(l("/_search"), "/_search");
        assert_eq!(l("/idx/_doc"), "/{index}/_doc");
        assert_eq!(l("/idx/_doc/42"), "/{index}/_doc/{id}");
        // A document id that looks like an API name is still an id.
        assert_eq!(l("/idx/_doc/_search"), "/{index}/_doc/{id}");
        assert_eq!(l("/idx/_create/a b"), "/{index}/_create/{id}");
        assert_eq!(l("/idx/_update/x"), "/{index}/_update/{id}");
        assert_eq!(l("/idx/_source/x"), "/{index}/_source/{id}");
        // An index named like a fixed word is still an index.
        assert_eq!(l("/health/_count"), "/{index}/_count");
        assert_eq!(l("/stats"), "/{index}");
    }

    #[test]
    fn api_words_are_kept_and_free_segments_named() {
        assert_eq!(l("/_cluster/health"), "/_cluster/health");
        assert_eq!(l("/_cluster/health/idx"), "/_cluster/health/{index}");
        assert_eq!(l("/_cluster/settings"), "/_cluster/settings");
        assert_eq!(l("/_nodes"), "/_nodes");
        assert_eq!(l("/_nodes/stats"), "/_nodes/stats");
        assert_eq!(l("/_nodes/stats/jvm,os"), "/_nodes/stats/{metric}");
        assert_eq!(l("/_nodes/_local/stats"), "/_nodes/{node_id}/stats");
        assert_eq!(
            l("/_nodes/stats/indices/search"),
            "/_nodes/stats/{metric}/{index_metric}"
        );
        assert_eq!(
            l("/_nodes/abc/stats/process"),
            "/_nodes/{node_id}/stats/{metric}"
        );
        assert_eq!(l("/_cat/indices"), "/_cat/indices");
        assert_eq!(l("/_cat/indices/idx*"), "/_cat/indices/{index}");
        assert_eq!(l("/_cat/whatever"), "/_cat/{what}");
        assert_eq!(l("/_alias/al1"), "/_alias/{name}");
        assert_eq!(l("/idx/_alias/al1"), "/{index}/_alias/{name}");
        assert_eq!(l("/_scripts/my-script"), "/_scripts/{id}");
        assert_eq!(l("/_scripts/s/score"), "/_scripts/{id}/{context}");
        assert_eq!(l("/_tasks/node:12"), "/_tasks/{task_id}");
        assert_eq!(l("/_tasks/node:12/_cancel"), "/_tasks/{task_id}/_cancel");
        assert_eq!(
            l("/_delete_by_query/n:1/_rethrottle"),
            "/_delete_by_query/{task_id}/_rethrottle"
        );
        assert_eq!(l("/_search/scroll"), "/_search/scroll");
        assert_eq!(
            l("/_search/scroll/DXF1ZXJ5QW5kRmV0Y2gB"),
            "/_search/scroll/{scroll_id}"
        );
        assert_eq!(l("/idx/_stats/docs"), "/{index}/_stats/{metric}");
        assert_eq!(l("/idx/_settings/index.*"), "/{index}/_settings/{name}");
        assert_eq!(l("/idx/_cache/clear"), "/{index}/_cache/clear");
        assert_eq!(l("/_prometheus/metrics"), "/_prometheus/metrics");
        assert_eq!(l("/_lode/console.js"), "/_lode/console.js");
        assert_eq!(l("/_lode/api/http_stats"), "/_lode/api/http_stats");
    }

    #[test]
    fn labels_stay_bounded() {
        assert_eq!(l("/_nonsense"), "/{unknown}");
        assert_eq!(l("/_nonsense/x"), "/{unknown}/{name}");
        assert_eq!(l("/idx/_nonsense"), "/{index}/{name}");
        assert_eq!(
            l("/a/b/c/d/e/f/g/h/i"),
            "/{index}/{name}/{name}/{name}/{name}/{name}/{...}"
        );
        // Many distinct raw paths, few labels.
        let labels: std::collections::BTreeSet<String> = (0..1000)
            .flat_map(|i| {
                [
                    l(&format!("/index-{i}/_doc/{i}")),
                    l(&format!("/_tasks/n:{i}")),
                    l(&format!("/_x{i}")),
                    l(&format!("/i{i}/_search")),
                ]
            })
            .collect();
        assert_eq!(labels.len(), 4, "{labels:?}");
    }
}

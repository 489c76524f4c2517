//! The URL parameters each REST API accepts, declared once per API next to its handler.
//!
//! Elasticsearch refuses a request whose handler did not consume every parameter
//! ("request [/i/_search] contains unrecognized parameter: [sise] -> did you mean [size]?").
//! Lode's handlers parse and act in one pass, so the check cannot come after them: the route
//! table checks the declared list before the handler runs, and nothing is written for a request
//! that is then refused.

use crate::rest::{unrecognized, RestRequest};
use lode_engine::{EsError, EsResult};

/// One API's parameters.
pub struct ApiParams {
    /// Elasticsearch's name of the API (`search`, `indices.create`).
    pub api: &'static str,
    /// Implemented, or without effect on a single node (docs/compatibility.md lists those),
    /// in groups so that shared sets such as [`INDICES_OPTIONS`] are written once.
    pub accepted: &'static [&'static [&'static str]],
    /// Parameters Elasticsearch defines for this API that Lode does not implement: refused by
    /// name rather than reported as unknown or silently ignored.
    pub unsupported: &'static [&'static str],
    /// Whether the API reads a request body (the `body` of its REST specification). A body
    /// sent to one that does not is refused as ES's `BaseRestHandler` refuses content the
    /// handler did not consume: "request [GET /] does not support having a body".
    pub body: bool,
}

/// Accepted by every API: response shaping the HTTP layer applies (`pretty`, `human`,
/// `filter_path`), `error_trace` (Lode has no stack traces to add), and the request body
/// passed as `source` with its `source_content_type`.
pub const GLOBAL: &[&str] = &[
    "pretty",
    "human",
    "error_trace",
    "filter_path",
    "source",
    "source_content_type",
];

impl ApiParams {
    fn accepted(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.accepted.iter().flat_map(|group| group.iter().copied())
    }

    /// Refuses a parameter this API does not accept, as Elasticsearch does.
    pub fn check(&self, req: &RestRequest) -> EsResult<()> {
        let mut unknown = Vec::new();
        for name in req.params.keys() {
            let name = name.as_str();
            if self.accepted().any(|a| a == name) || GLOBAL.contains(&name) {
                continue;
            }
            if self.unsupported.contains(&name) {
                return Err(EsError::illegal_argument(format!(
                    "request [{}] contains parameter [{name}] of [{}], which Lode does not support",
                    req.path, self.api
                )));
            }
            unknown.push(name.to_string());
        }
        if unknown.is_empty() {
            for (name, value) in &req.params {
                if let Some((_, kind)) = VALUE_KINDS.iter().find(|(n, _)| *n == name.as_str()) {
                    kind.check(name, value)?;
                }
            }
            return Ok(());
        }
        let candidates: Vec<&str> = self
            .accepted()
            .chain(self.unsupported.iter().copied())
            .chain(GLOBAL.iter().copied())
            .collect();
        Err(unrecognized(req, &unknown, &candidates, "parameter"))
    }
}

/// How a parameter's value is read, once per kind of value, as Elasticsearch's `RestRequest`
/// reads it (`paramAsTime`, `paramAsInt`) before its setter validates it. A parameter name
/// has the same kind in every API that accepts it.
#[derive(Clone, Copy, Debug)]
pub enum ValueKind {
    /// A time value (`30s`, `1m`, `-1`, `0`): `TimeValue.parseTimeValue`, whose failures are
    /// `parse_exception`s naming the parameter.
    Time,
    /// An `int` (`RestRequest#paramAsInt`) that the request's setter requires to be at least
    /// `min`, failing with "`setter` must be >= `min`" (`SearchRequest#setBatchedReduceSize`).
    IntAtLeast { min: i64, setter: &'static str },
}

/// The parameters whose values are checked before a handler runs, with their kind.
pub const VALUE_KINDS: &[(&str, ValueKind)] = &[
    ("timeout", ValueKind::Time),
    ("master_timeout", ValueKind::Time),
    ("cluster_manager_timeout", ValueKind::Time),
    (
        "batched_reduce_size",
        ValueKind::IntAtLeast {
            min: 2,
            setter: "batchedReduceSize",
        },
    ),
    (
        "pre_filter_shard_size",
        ValueKind::IntAtLeast {
            min: 1,
            setter: "preFilterShardSize",
        },
    ),
    (
        "max_concurrent_shard_requests",
        ValueKind::IntAtLeast {
            min: 1,
            setter: "maxConcurrentShardRequests",
        },
    ),
];

impl ValueKind {
    /// Refuses `value` of parameter `name` as Elasticsearch does.
    pub fn check(self, name: &str, value: &str) -> EsResult<()> {
        match self {
            ValueKind::Time => parse_time_param(name, value).map(|_| ()),
            ValueKind::IntAtLeast { min, setter } => {
                let n = parse_int_param(name, value)?;
                if i64::from(n) < min {
                    return Err(EsError::illegal_argument(format!(
                        "{setter} must be >= {min}"
                    )));
                }
                Ok(())
            }
        }
    }
}

/// `RestRequest#paramAsInt`: a Java `int` (`Integer.parseInt`: an optional sign and digits).
pub fn parse_int_param(name: &str, value: &str) -> EsResult<i32> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_int(name, value));
    }
    value.parse::<i32>().map_err(|_| bad_int(name, value))
}

fn bad_int(name: &str, value: &str) -> EsError {
    EsError::illegal_argument(format!(
        "Failed to parse int parameter [{name}] with value [{value}]"
    ))
}

/// `TimeValue.parseTimeValue` of a URL parameter, in milliseconds (`None` for `-1`): a unit is
/// required except for `0` and `-1`; failures are `parse_exception`s naming the parameter.
pub fn parse_time_param(name: &str, value: &str) -> EsResult<Option<u64>> {
    let bare_number = value.trim().parse::<f64>().is_ok();
    match lode_dates::parse_time_value_setting(value, name) {
        Ok(ms) if ms < 0 => Ok(None),
        Ok(ms) if ms >= 0 && (!bare_number || ms == 0) => Ok(Some(ms as u64)),
        Ok(_) => Err(EsError::bad_request(
            "parse_exception",
            format!(
                "failed to parse setting [{name}] with value [{value}] as a time value: unit is missing or unrecognized"
            ),
        )),
        Err(e) => Err(EsError::bad_request("parse_exception", e.reason)),
    }
}

// The table, one entry per API, checked against Elasticsearch's REST API specification
// (`rest-api-spec/api/*.json`). What the handler reads is accepted, and so is what cannot change
// an answer on a single node (the `NO_EFFECT` group below). Everything else the specification
// lists for the API is unsupported.

/// `ignore_unavailable`, `allow_no_indices`, `expand_wildcards`: how index expressions resolve.
pub const INDICES_OPTIONS: &[&str] =
    &["ignore_unavailable", "allow_no_indices", "expand_wildcards"];
/// Without effect on one node: there is no master to wait for (`master_timeout`, OpenSearch's
/// `cluster_manager_timeout`), and an acknowledged change is applied before Lode answers, so
/// there is nothing to time out (`timeout`).
pub const NO_EFFECT: &[&str] = &["master_timeout", "cluster_manager_timeout", "timeout"];
/// `_source` filtering of returned documents.
pub const SOURCE_FILTER: &[&str] = &[
    "_source",
    "_source_includes",
    "_source_excludes",
    "_source_include",
    "_source_exclude",
];
/// Optimistic concurrency control and external versions.
pub const VERSIONING: &[&str] = &["version", "version_type", "if_seq_no", "if_primary_term"];
/// `q` and the query_string options that go with it.
pub const Q: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "analyzer",
    "lenient",
    "analyze_wildcard",
];
/// The `_cat` APIs' common display parameters.
pub const CAT: &[&str] = &[
    "format", "h", "help", "s", "v", "bytes", "time", "ts", "local",
];

const fn api(
    api: &'static str,
    accepted: &'static [&'static [&'static str]],
    unsupported: &'static [&'static str],
) -> ApiParams {
    ApiParams {
        api,
        accepted,
        unsupported,
        body: false,
    }
}

impl ApiParams {
    /// Declares that the API reads a request body.
    const fn with_body(self) -> ApiParams {
        ApiParams { body: true, ..self }
    }
}

pub const INFO: ApiParams = api("info", &[], &[]);
/// Lode's own `GET /_prometheus/metrics`.
pub const PROMETHEUS: ApiParams = api("prometheus.metrics", &[], &[]);
pub const CLUSTER_HEALTH: ApiParams = api(
    "cluster.health",
    &[
        NO_EFFECT,
        INDICES_OPTIONS,
        &[
            "level",
            "local",
            "wait_for_status",
            "wait_for_nodes",
            "wait_for_active_shards",
            "wait_for_events",
            "wait_for_no_relocating_shards",
            "wait_for_no_initializing_shards",
        ],
    ],
    &["awareness_attribute", "ensure_node_weighed_in"],
);
pub const CLUSTER_ALLOCATION_EXPLAIN: ApiParams = api(
    "cluster.allocation_explain",
    &[NO_EFFECT, &["include_disk_info", "include_yes_decisions"]],
    &[],
)
.with_body();
pub const CLUSTER_REROUTE: ApiParams = api(
    "cluster.reroute",
    &[NO_EFFECT, &["dry_run", "explain", "retry_failed", "metric"]],
    &[],
)
.with_body();
pub const CLUSTER_PUT_SETTINGS: ApiParams = api(
    "cluster.put_settings",
    &[NO_EFFECT, &["flat_settings"]],
    &[],
)
.with_body();
pub const CLUSTER_GET_SETTINGS: ApiParams = api(
    "cluster.get_settings",
    &[NO_EFFECT, &["flat_settings", "include_defaults", "local"]],
    &[],
);
pub const NODES: ApiParams = api(
    "nodes.stats",
    &[
        NO_EFFECT,
        &[
            "level",
            "groups",
            "include_segment_file_sizes",
            "include_unloaded_segments",
            "completion_fields",
            "fielddata_fields",
            "fields",
        ],
    ],
    &["types", "flat_settings"],
);
pub const CAT_API: ApiParams = api(
    "cat",
    &[
        NO_EFFECT,
        CAT,
        &[
            "health",
            "full_id",
            "expand_wildcards",
            "include_unloaded_segments",
        ],
    ],
    &[
        "pri",
        "nodes",
        "actions",
        "detailed",
        "parent_task_id",
        "active_only",
    ],
);
pub const ALIASES_UPDATE: ApiParams = api("indices.update_aliases", &[NO_EFFECT], &[]).with_body();
pub const ALIASES_GET: ApiParams = api(
    "indices.get_alias",
    &[NO_EFFECT, INDICES_OPTIONS, &["local"]],
    &[],
);
pub const ALIAS_PUT: ApiParams =
    api("indices.put_alias", &[NO_EFFECT, &["routing"]], &[]).with_body();
pub const ALIAS_DELETE: ApiParams = api("indices.delete_alias", &[NO_EFFECT], &[]);
pub const SCRIPT_PUT: ApiParams = api("put_script", &[NO_EFFECT], &["context"]).with_body();
pub const SCRIPT_GET: ApiParams = api("get_script", &[NO_EFFECT], &[]);
pub const SCRIPT_DELETE: ApiParams = api("delete_script", &[NO_EFFECT], &[]);
pub const TASKS_LIST: ApiParams = api(
    "tasks.list",
    &[NO_EFFECT, &["actions", "detailed"]],
    &["group_by", "nodes", "parent_task_id", "wait_for_completion"],
);
pub const TASKS_GET: ApiParams = api("tasks.get", &[&["timeout", "wait_for_completion"]], &[]);
pub const TASKS_CANCEL: ApiParams = api(
    "tasks.cancel",
    &[&["actions", "parent_task_id"]],
    &["nodes", "wait_for_completion"],
);
pub const RETHROTTLE: ApiParams = api("reindex_rethrottle", &[&["requests_per_second"]], &[]);
pub const BY_QUERY: ApiParams = api(
    "delete_by_query",
    &[
        INDICES_OPTIONS,
        Q,
        &[
            "conflicts",
            "refresh",
            "requests_per_second",
            "scroll_size",
            "slices",
            "timeout",
            "wait_for_active_shards",
            "wait_for_completion",
            "size",
            "max_docs",
        ],
    ],
    &[
        "from",
        "preference",
        "request_cache",
        "routing",
        "scroll",
        "search_timeout",
        "search_type",
        "sort",
        "stats",
        "terminate_after",
        "version",
        "version_type",
        "pipeline",
        "_source",
        "_source_includes",
        "_source_excludes",
    ],
)
.with_body();
pub const INDICES_STATS: ApiParams = api(
    "indices.stats",
    &[
        INDICES_OPTIONS,
        &[
            "level",
            "groups",
            "forbid_closed_indices",
            "include_segment_file_sizes",
            "include_unloaded_segments",
            "completion_fields",
            "fielddata_fields",
            "fields",
        ],
    ],
    &[],
);
pub const DISK_USAGE: ApiParams = api(
    "indices.disk_usage",
    &[INDICES_OPTIONS, &["flush", "run_expensive_tasks"]],
    &[],
);
pub const SEGMENTS: ApiParams = api("indices.segments", &[INDICES_OPTIONS, &["verbose"]], &[]);
pub const ANALYZE: ApiParams = api("indices.analyze", &[], &["index"]).with_body();
pub const GET_MAPPING: ApiParams = api(
    "indices.get_mapping",
    &[NO_EFFECT, INDICES_OPTIONS, &["local"]],
    &[],
);
pub const PUT_MAPPING: ApiParams = api(
    "indices.put_mapping",
    &[NO_EFFECT, INDICES_OPTIONS],
    &["write_index_only"],
)
.with_body();
pub const GET_SETTINGS: ApiParams = api(
    "indices.get_settings",
    &[
        NO_EFFECT,
        INDICES_OPTIONS,
        &["flat_settings", "include_defaults", "local"],
    ],
    &[],
);
pub const PUT_SETTINGS: ApiParams = api(
    "indices.put_settings",
    &[
        NO_EFFECT,
        INDICES_OPTIONS,
        &["flat_settings", "preserve_existing"],
    ],
    &["reopen"],
)
.with_body();
pub const CLEAR_CACHE: ApiParams = api(
    "indices.clear_cache",
    // Clearing a cache never changes an answer, so clearing the request cache whichever
    // caches are named is correct.
    &[
        INDICES_OPTIONS,
        &["query", "request", "fielddata", "fields", "index"],
    ],
    &[],
);
pub const REFRESH: ApiParams = api("indices.refresh", &[INDICES_OPTIONS], &[]);
pub const FLUSH: ApiParams = api(
    "indices.flush",
    &[INDICES_OPTIONS, &["force", "wait_if_ongoing"]],
    &[],
);
pub const FORCEMERGE: ApiParams = api(
    "indices.forcemerge",
    &[
        INDICES_OPTIONS,
        &[
            "flush",
            "max_num_segments",
            "only_expunge_deletes",
            "wait_for_completion",
        ],
    ],
    &["primary_only"],
);
pub const CREATE_INDEX: ApiParams = api(
    "indices.create",
    &[NO_EFFECT, &["wait_for_active_shards"]],
    &[],
)
.with_body();
pub const DELETE_INDEX: ApiParams = api("indices.delete", &[NO_EFFECT, INDICES_OPTIONS], &[]);
pub const EXISTS_INDEX: ApiParams = api(
    "indices.exists",
    &[
        INDICES_OPTIONS,
        &["flat_settings", "include_defaults", "local"],
    ],
    &[],
);
pub const GET_INDEX: ApiParams = api(
    "indices.get",
    &[
        NO_EFFECT,
        INDICES_OPTIONS,
        &["flat_settings", "include_defaults", "local"],
    ],
    &["features"],
);
pub const CLOSE_INDEX: ApiParams = api(
    "indices.close",
    &[NO_EFFECT, INDICES_OPTIONS, &["wait_for_active_shards"]],
    &[],
);
pub const ADD_BLOCK: ApiParams = api("indices.add_block", &[NO_EFFECT, INDICES_OPTIONS], &[]);
pub const OPEN_INDEX: ApiParams = api(
    "indices.open",
    &[NO_EFFECT, INDICES_OPTIONS, &["wait_for_active_shards"]],
    &["wait_for_completion", "task_execution_timeout"],
);
pub const SEARCH: ApiParams = api(
    "search",
    &[
        INDICES_OPTIONS,
        SOURCE_FILTER,
        Q,
        &[
            "from",
            "size",
            "sort",
            "track_total_hits",
            "track_scores",
            "rest_total_hits_as_int",
            "search_type",
            "docvalue_fields",
            "stored_fields",
            "terminate_after",
            "timeout",
            "typed_keys",
            "routing",
            "version",
            "seq_no_primary_term",
            "explain",
            "include_named_queries_score",
            "request_cache",
            "scroll",
            "preference",
            "pre_filter_shard_size",
            "max_concurrent_shard_requests",
            "batched_reduce_size",
            "ccs_minimize_roundtrips",
            "ignore_throttled",
            "allow_partial_search_results",
        ],
    ],
    &[
        "stats",
        "suggest_field",
        "suggest_mode",
        "suggest_size",
        "suggest_text",
        "min_compatible_shard_node",
        "phase_took",
        "cancel_after_time_interval",
        "search_pipeline",
    ],
)
.with_body();
pub const COUNT: ApiParams = api(
    "count",
    &[
        INDICES_OPTIONS,
        Q,
        &[
            "routing",
            "terminate_after",
            "preference",
            "ignore_throttled",
        ],
    ],
    &["min_score"],
)
.with_body();
pub const MSEARCH: ApiParams = api(
    "msearch",
    &[
        INDICES_OPTIONS,
        &[
            "rest_total_hits_as_int",
            "search_type",
            "typed_keys",
            "max_concurrent_searches",
            "max_concurrent_shard_requests",
            "pre_filter_shard_size",
            "ccs_minimize_roundtrips",
            "include_named_queries_score",
        ],
    ],
    &[],
)
.with_body();
pub const SCROLL: ApiParams = api(
    "scroll",
    &[&["scroll", "scroll_id", "rest_total_hits_as_int"]],
    &[],
)
.with_body();
pub const CLEAR_SCROLL: ApiParams = api("clear_scroll", &[&["scroll_id"]], &[]).with_body();
pub const BULK: ApiParams = api(
    "bulk",
    &[&[
        "refresh",
        "routing",
        "require_alias",
        "timeout",
        "wait_for_active_shards",
        "_source",
        "_source_includes",
        "_source_excludes",
    ]],
    &[
        "pipeline",
        "require_data_stream",
        "list_executed_pipelines",
        "type",
        "batch_size",
    ],
)
.with_body();
pub const MGET: ApiParams = api(
    "mget",
    &[
        SOURCE_FILTER,
        &[
            "realtime",
            "refresh",
            "routing",
            "stored_fields",
            "preference",
        ],
    ],
    &[],
)
.with_body();
pub const INDEX_DOC: ApiParams = api(
    "index",
    &[
        VERSIONING,
        &[
            "op_type",
            "refresh",
            "routing",
            "require_alias",
            "timeout",
            "wait_for_active_shards",
        ],
    ],
    &["pipeline", "require_data_stream", "include_source_on_error"],
)
.with_body();
pub const GET_DOC: ApiParams = api(
    "get",
    &[
        SOURCE_FILTER,
        &[
            "realtime",
            "refresh",
            "routing",
            "stored_fields",
            "version",
            "version_type",
            "preference",
        ],
    ],
    &[],
);
pub const GET_SOURCE: ApiParams = api(
    "get_source",
    &[
        SOURCE_FILTER,
        &[
            "realtime",
            "refresh",
            "routing",
            "version",
            "version_type",
            "preference",
        ],
    ],
    &[],
);
pub const DELETE_DOC: ApiParams = api(
    "delete",
    &[
        VERSIONING,
        &["refresh", "routing", "timeout", "wait_for_active_shards"],
    ],
    &[],
);
pub const UPDATE_DOC: ApiParams = api(
    "update",
    &[
        SOURCE_FILTER,
        &[
            "if_seq_no",
            "if_primary_term",
            "refresh",
            "routing",
            "retry_on_conflict",
            "require_alias",
            "timeout",
            "wait_for_active_shards",
        ],
    ],
    &["lang", "include_source_on_error"],
)
.with_body();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::Method;

    const DEMO: ApiParams = ApiParams {
        api: "demo",
        accepted: &[&["size", "from"], &["routing"]],
        unsupported: &["preference"],
        body: false,
    };

    fn req(params: &[(&str, &str)]) -> RestRequest {
        RestRequest {
            doc_security: None,
            field_security: None,
            authorized: None,
            method: Method::Get,
            path: "/i/_search".into(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    const SEARCHY: ApiParams = ApiParams {
        api: "demo",
        accepted: &[&[
            "timeout",
            "batched_reduce_size",
            "pre_filter_shard_size",
            "max_concurrent_shard_requests",
        ]],
        unsupported: &[],
        body: false,
    };

    #[test]
    fn time_values_are_parsed_as_timevalue_does() {
        for ok in ["1s", "30m", "0", "-1", "500ms", "2d", " 1S "] {
            SEARCHY.check(&req(&[("timeout", ok)])).unwrap();
        }
        assert_eq!(parse_time_param("timeout", "2s").unwrap(), Some(2000));
        assert_eq!(parse_time_param("timeout", "-1").unwrap(), None);
        let e = SEARCHY.check(&req(&[("timeout", "-5x")])).unwrap_err();
        assert_eq!((e.status, e.kind.as_str()), (400, "parse_exception"));
        assert_eq!(
            e.reason,
            "failed to parse setting [timeout] with value [-5x] as a time value: unit is missing or unrecognized"
        );
        let e = SEARCHY.check(&req(&[("timeout", "5")])).unwrap_err();
        assert!(e.reason.contains("unit is missing"), "{}", e.reason);
        let e = SEARCHY.check(&req(&[("timeout", "-5s")])).unwrap_err();
        assert!(e.reason.contains("negative durations"), "{}", e.reason);
    }

    #[test]
    fn int_parameters_are_parsed_then_bounded_by_their_setter() {
        SEARCHY
            .check(&req(&[
                ("batched_reduce_size", "2"),
                ("pre_filter_shard_size", "+1"),
                ("max_concurrent_shard_requests", "5"),
            ]))
            .unwrap();
        let e = SEARCHY
            .check(&req(&[("batched_reduce_size", "1")]))
            .unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "illegal_argument_exception")
        );
        assert_eq!(e.reason, "batchedReduceSize must be >= 2");
        let e = SEARCHY
            .check(&req(&[("max_concurrent_shard_requests", "0")]))
            .unwrap_err();
        assert_eq!(e.reason, "maxConcurrentShardRequests must be >= 1");
        let e = SEARCHY
            .check(&req(&[("pre_filter_shard_size", "x")]))
            .unwrap_err();
        assert_eq!(e.kind, "illegal_argument_exception");
        assert_eq!(
            e.reason,
            "Failed to parse int parameter [pre_filter_shard_size] with value [x]"
        );
        // Integer.parseInt: no spaces, no decimals, within an int
        for bad in [" 3", "3.0", "", "2147483648", "1e3"] {
            assert!(parse_int_param("p", bad).is_err(), "{bad}");
        }
        assert_eq!(parse_int_param("p", "-2147483648").unwrap(), i32::MIN);
    }

    #[test]
    fn accepts_declared_and_global_parameters() {
        DEMO.check(&req(&[("size", "1"), ("pretty", ""), ("filter_path", "a")]))
            .unwrap();
    }

    #[test]
    fn unknown_parameters_get_elasticsearchs_message() {
        let e = DEMO.check(&req(&[("sise", "1")])).unwrap_err();
        assert_eq!(e.status, 400);
        assert_eq!(e.kind, "illegal_argument_exception");
        assert_eq!(
            e.reason,
            "request [/i/_search] contains unrecognized parameter: [sise] -> did you mean [size]?"
        );
        let e = DEMO.check(&req(&[("zzz", "1"), ("qqq", "")])).unwrap_err();
        assert_eq!(
            e.reason,
            "request [/i/_search] contains unrecognized parameters: [qqq], [zzz]"
        );
    }

    #[test]
    fn unsupported_parameters_are_refused_by_name() {
        let e = DEMO.check(&req(&[("preference", "_local")])).unwrap_err();
        assert_eq!(e.status, 400);
        assert!(e.reason.contains("[preference]"), "{}", e.reason);
    }
}

//! `GET|POST /_cluster/allocation/explain`: ES's `TransportClusterAllocationExplainAction` and
//! `ClusterAllocationExplanation` for the shards of this single node.
//!
//! On one node a shard copy is in one of three states: a started primary (every primary of
//! an open or closed index whose shards opened), an unassigned primary (the index's shards
//! failed to open: `ALLOCATION_FAILED`), or an unassigned replica (`INDEX_CREATED`: a replica
//! can never be allocated beside its primary). The explanation renders the decisions ES's
//! allocators and deciders take for each on a one-node cluster:
//! - a store that holds data but cannot be opened (no commit point, a corrupt one) is ES's
//!   `PrimaryShardAllocator` finding no valid copy: `no_valid_shard_copy`, with the store
//!   exception on the node's decision;
//! - any other failure is retried by the node until `index.allocation.max_retries`; while a
//!   retry is due the shard can be allocated (`yes`), after it the `max_retry` decider says no;
//! - a replica is refused by `same_shard` (the primary is here) or `replica_after_primary_active`.

use crate::cat::iso_date;
use crate::cluster::{self, NodeInfo};
use crate::rest::{RestRequest, RestResponse};
use crate::stats::{self, StatsOptions};
use lode_engine::error::{EsError, EsResult};
use lode_engine::index::{AllocationFailure, IndexService};
use lode_engine::node::Node;
use lode_engine::object_parser::{At, Field, ObjectParser, Style};
use serde_json::{json, Map, Value};

const ALL_COPIES_INVALID: &str = "Elasticsearch can't allocate this shard because all the copies of its data in the cluster are stale or corrupt. Elasticsearch will allocate this shard when a node containing a good copy of its data joins the cluster. If no such node is available, restore this index from a recent snapshot.";
const ALL_NODES_FORBIDDEN: &str = "Elasticsearch isn't allowed to allocate this shard to any of the nodes in the cluster. Choose a node to which you expect this shard to be allocated, find this node in the node-by-node explanation, and address the reasons which prevent Elasticsearch from allocating this shard there.";
const EXISTING_STORES_FORBIDDEN: &str = "Elasticsearch isn't allowed to allocate this shard to any of the nodes in the cluster that hold an in-sync copy of its data. Choose a node to which you expect this shard to be allocated, find this node in the node-by-node explanation, and address the reasons which prevent Elasticsearch from allocating this shard there.";
const CAN_ALLOCATE: &str = "Elasticsearch can allocate the shard.";
const ALREADY_BALANCED: &str = "Elasticsearch cannot rebalance this shard to another node since there is no node to which allocation is permitted which would improve the cluster balance. If you expect this shard to be rebalanced to another node, find this node in the node-by-node explanation and address the reasons which prevent Elasticsearch from rebalancing this shard there.";
const NO_SHARD_SPECIFIED: &str = "No shard was specified in the request which means the response should explain a randomly-chosen unassigned shard, but there are no unassigned shards in this cluster. To explain the allocation of an assigned shard you must specify the target shard in the request.";
const RANDOM_SHARD_NOTE: &str = "No shard was specified in the explain API request, so this response explains a randomly chosen unassigned shard. There may be other unassigned shards in this cluster which cannot be assigned for different reasons. It may not be possible to assign this shard until one of the other shards is assigned correctly. To explain the allocation of other shards (whether assigned or unassigned) you must specify the target shard in the request to this API.";

/// The request body (ES's `ClusterAllocationExplainRequest` parser).
#[derive(Debug, Default)]
struct Request {
    index: Option<String>,
    shard: Option<i64>,
    primary: Option<bool>,
    current_node: Option<String>,
}

impl Request {
    fn use_any_unassigned(&self) -> bool {
        self.index.is_none()
            && self.shard.is_none()
            && self.primary.is_none()
            && self.current_node.is_none()
    }

    /// ES's `ClusterAllocationExplainRequest#toString`.
    fn describe(&self, include_yes: bool) -> String {
        let mut s = String::from("ClusterAllocationExplainRequest[");
        if self.use_any_unassigned() {
            s.push_str("useAnyUnassignedShard=true");
        } else {
            s.push_str(&format!(
                "index={},shard={},primary?={}",
                self.index.as_deref().unwrap_or("null"),
                self.shard.map_or("null".into(), |s| s.to_string()),
                self.primary.map_or("null".into(), |p| p.to_string())
            ));
            if let Some(n) = &self.current_node {
                s.push_str(&format!(",currentNode={n}"));
            }
        }
        s.push_str(&format!(",includeYesDecisions?={include_yes}]"));
        s
    }
}

fn bad(at: &At<'_>) -> EsError {
    EsError::x_content_parse(format!(
        "[1:2] [{}] failed to parse field [{}]",
        at.parser, at.key
    ))
}

/// ES's `ClusterAllocationExplainRequest` parser. Lode keeps no positions in this body: an
/// error says `[1:2]`, the first key's.
static EXPLAIN_REQUEST: ObjectParser<Request> = ObjectParser {
    name: "cluster/allocation/explain",
    style: Style::Custom {
        unknown: lode_engine::object_parser::unknown_field_at_first_key,
        wrong_token: |at, _| bad(at),
    },
    fields: &[&[
        Field::new("index", "*", |r, at, v| {
            r.index = Some(v.as_str().ok_or_else(|| bad(at))?.to_string());
            Ok(())
        }),
        Field::new("shard", "*", |r, at, v| {
            r.shard = Some(match v {
                Value::Number(n) => n.as_i64().ok_or_else(|| bad(at))?,
                Value::String(s) => s.parse().map_err(|_| bad(at))?,
                _ => return Err(bad(at)),
            });
            Ok(())
        }),
        Field::new("primary", "*", |r, at, v| {
            r.primary = Some(match v {
                Value::Bool(b) => *b,
                Value::String(s) if s == "true" => true,
                Value::String(s) if s == "false" => false,
                _ => return Err(bad(at)),
            });
            Ok(())
        }),
        Field::new("current_node", "*", |r, at, v| {
            r.current_node = Some(v.as_str().ok_or_else(|| bad(at))?.to_string());
            Ok(())
        }),
    ]],
};

fn parse_request(body: Option<Value>) -> EsResult<Request> {
    let mut r = Request::default();
    let Some(body) = body else { return Ok(r) };
    let Some(obj) = body.as_object() else {
        return Err(EsError::x_content_parse(
            "[1:1] [cluster/allocation/explain] Expected START_OBJECT but was: VALUE",
        ));
    };
    EXPLAIN_REQUEST.parse_into(&mut r, obj)?;
    Ok(r)
}

/// One shard copy on this node.
enum Copy {
    Started,
    /// The primary could not be opened (the index's shards failed to open).
    FailedPrimary(AllocationFailure),
    /// A replica: never allocated on a single node.
    Replica {
        primary_active: bool,
    },
}

fn copy_of(idx: &IndexService, shard: usize, primary: bool) -> Copy {
    let failure = idx.shard_failure(shard).filter(|_| !idx.is_closed());
    match (primary, failure) {
        (true, Some(f)) => Copy::FailedPrimary(f),
        (true, None) => Copy::Started,
        (false, f) => Copy::Replica {
            primary_active: f.is_none(),
        },
    }
}

/// The node's identity as ES's `discoveryNodeToXContent` (with the id; `attributes` only
/// when the node has some, and Lode's has none).
fn node_json(node: &Node, info: &NodeInfo) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), json!(cluster::node_id(node)));
    m.insert("name".into(), json!(info.node_name));
    m.insert("transport_address".into(), json!(info.transport_address()));
    m.insert("roles".into(), json!(cluster::ROLES));
    m
}

/// The head of a node's entry in `node_allocation_decisions` (`NodeAllocationResult`).
fn node_decision_head(node: &Node, info: &NodeInfo) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("node_id".into(), json!(cluster::node_id(node)));
    m.insert("node_name".into(), json!(info.node_name));
    m.insert("transport_address".into(), json!(info.transport_address()));
    m.insert("roles".into(), json!(cluster::ROLES));
    m
}

fn decider(name: &str, yes: bool, explanation: String) -> Value {
    json!({"decider": name, "decision": if yes { "YES" } else { "NO" }, "explanation": explanation})
}

/// `[index][shard], node[id], [P], s[STARTED]`: ES's `ShardRouting#shortSummary` of a started
/// primary (Lode keeps no allocation ids).
fn started_summary(node: &Node, idx: &IndexService, shard: usize) -> String {
    format!(
        "[{}][{shard}], node[{}], [P], s[STARTED]",
        idx.name,
        cluster::node_id(node)
    )
}

/// Whether a failure is of the shard's store itself (no commit point, a corrupt one): ES's
/// gateway allocator then has no valid copy to allocate.
fn store_failure(f: &AllocationFailure) -> bool {
    matches!(
        f.error.kind.as_str(),
        "index_shard_recovery_exception" | "corrupt_index_exception"
    )
}

/// ES's `UnassignedInfo#shortSummary` inside `unassigned_info[..]`.
fn unassigned_summary(node: &Node, idx: &IndexService, f: &AllocationFailure) -> String {
    format!(
        "unassigned_info[[reason=ALLOCATION_FAILED], at[{}], failed_attempts[{}], failed_nodes[[{}]], delayed=false, details[{}], allocation_status[deciders_no]]",
        iso_date(f.at),
        f.attempts,
        cluster::node_id(node),
        f.details(&idx.name, &idx.uuid)
    )
}

fn explain_failed_primary(
    node: &Node,
    info: &NodeInfo,
    idx: &IndexService,
    f: &AllocationFailure,
    include_yes: bool,
    out: &mut Map<String, Value>,
) {
    let max = idx.usize_setting("index.allocation.max_retries", 5) as u32;
    let store_bad = store_failure(f);
    let retry_due = f.next_retry.is_some();
    let last_status = if store_bad {
        "no_valid_shard_copy"
    } else if retry_due {
        "no_attempt"
    } else {
        "no"
    };
    out.insert(
        "unassigned_info".into(),
        json!({
            "reason": "ALLOCATION_FAILED",
            "at": iso_date(f.at),
            "failed_allocation_attempts": f.attempts,
            "details": f.details(&idx.name, &idx.uuid),
            "last_allocation_status": last_status,
        }),
    );
    let mut decision = node_decision_head(node, info);
    let mut store = Map::new();
    store.insert("in_sync".into(), json!(true));
    if store_bad {
        store.insert("store_exception".into(), f.error.to_cause_json());
        out.insert("can_allocate".into(), json!("no_valid_shard_copy"));
        out.insert("allocate_explanation".into(), json!(ALL_COPIES_INVALID));
        decision.insert("node_decision".into(), json!("no"));
        decision.insert("store".into(), Value::Object(store));
    } else if retry_due {
        out.insert("can_allocate".into(), json!("yes"));
        out.insert("allocate_explanation".into(), json!(CAN_ALLOCATE));
        out.insert("target_node".into(), Value::Object(node_json(node, info)));
        decision.insert("node_decision".into(), json!("yes"));
        decision.insert("store".into(), Value::Object(store));
        if include_yes {
            decision.insert(
                "deciders".into(),
                json!([decider(
                    "max_retry",
                    true,
                    format!(
                        "shard has failed allocating [{}] times but [{max}] retries are allowed",
                        f.attempts
                    )
                )]),
            );
        }
    } else {
        out.insert("can_allocate".into(), json!("no"));
        out.insert(
            "allocate_explanation".into(),
            json!(EXISTING_STORES_FORBIDDEN),
        );
        decision.insert("node_decision".into(), json!("no"));
        decision.insert("store".into(), Value::Object(store));
        decision.insert(
            "deciders".into(),
            json!([decider(
                "max_retry",
                false,
                format!(
                    "shard has exceeded the maximum number of retries [{max}] on failed allocation attempts - manually call [POST /_cluster/reroute?retry_failed] to retry, [{}]",
                    unassigned_summary(node, idx, f)
                )
            )]),
        );
    }
    out.insert("node_allocation_decisions".into(), json!([decision]));
}

fn explain_replica(
    node: &Node,
    info: &NodeInfo,
    idx: &IndexService,
    shard: usize,
    primary_active: bool,
    out: &mut Map<String, Value>,
) {
    out.insert(
        "unassigned_info".into(),
        json!({
            "reason": "INDEX_CREATED",
            "at": iso_date(idx.creation_date),
            "last_allocation_status": "no_attempt",
        }),
    );
    out.insert("can_allocate".into(), json!("no"));
    out.insert("allocate_explanation".into(), json!(ALL_NODES_FORBIDDEN));
    let mut decision = node_decision_head(node, info);
    decision.insert("node_decision".into(), json!("no"));
    decision.insert("weight_ranking".into(), json!(1));
    let decider = if primary_active {
        decider(
            "same_shard",
            false,
            format!(
                "a copy of this shard is already allocated to this node [{}]",
                started_summary(node, idx, shard)
            ),
        )
    } else {
        decider(
            "replica_after_primary_active",
            false,
            "primary shard for this replica is not yet active".into(),
        )
    };
    decision.insert("deciders".into(), json!([decider]));
    out.insert("node_allocation_decisions".into(), json!([decision]));
}

fn explain_started(node: &Node, info: &NodeInfo, out: &mut Map<String, Value>) {
    let mut current = node_json(node, info);
    current.insert("weight_ranking".into(), json!(1));
    out.insert("current_node".into(), Value::Object(current));
    out.insert("can_remain_on_current_node".into(), json!("yes"));
    out.insert("can_rebalance_cluster".into(), json!("yes"));
    out.insert("can_rebalance_to_other_node".into(), json!("no"));
    out.insert("rebalance_explanation".into(), json!(ALREADY_BALANCED));
}

/// ES's `ClusterInfo#toXContent` for this node: its data path's disk usage and the sizes of
/// its started shards.
fn cluster_info(node: &Node, info: &NodeInfo) -> Value {
    let path = node.data.display().to_string();
    let mut nodes = Map::new();
    if let Ok((total, free)) = lode_engine::disk::usage(&node.data) {
        let used = total.saturating_sub(free);
        let pct = |n: u64| {
            if total == 0 {
                0.0
            } else {
                (n as f64 * 100.0 / total as f64 * 10.0).round() / 10.0
            }
        };
        let usage = json!({
            "path": path,
            "total_bytes": total,
            "used_bytes": used,
            "free_bytes": free,
            "free_disk_percent": pct(free),
            "used_disk_percent": pct(used),
        });
        nodes.insert(
            cluster::node_id(node),
            json!({"node_name": info.node_name, "least_available": usage, "most_available": usage}),
        );
    }
    let mut sizes = Map::new();
    let mut paths = Map::new();
    let mut all = node.all();
    all.sort_by(|a, b| a.name.cmp(&b.name));
    for idx in all {
        if idx.is_closed() {
            continue;
        }
        for (shard, n) in stats::shard_numbers_by_id(&idx, &StatsOptions::default()) {
            let key = format!("[{}][{shard}][p]_bytes", idx.name);
            sizes.insert(key, json!(n.store_bytes));
            paths.insert(started_summary(node, &idx, shard), json!(path));
        }
    }
    json!({
        "nodes": nodes,
        "shard_sizes": sizes.clone(),
        "shard_data_set_sizes": sizes,
        "shard_paths": paths,
        "reserved_sizes": [],
    })
}

/// The first unassigned shard, primaries first (ES's `findShardToExplain` with no shard).
fn first_unassigned(node: &Node) -> Option<(std::sync::Arc<IndexService>, usize, bool)> {
    let mut all = node.all();
    all.sort_by(|a, b| a.name.cmp(&b.name));
    for idx in &all {
        if idx.is_closed() {
            continue;
        }
        if let Some(f) = idx.allocation_failure() {
            return Some((idx.clone(), f.shard, true));
        }
    }
    all.into_iter()
        .find(|idx| cluster::effective_replicas(idx) > 0)
        .map(|idx| (idx, 0, false))
}

/// `GET|POST /_cluster/allocation/explain`.
pub fn explain(node: &Node, info: &NodeInfo, req: &RestRequest) -> EsResult<RestResponse> {
    let include_disk = req.bool_param("include_disk_info", false)?;
    let include_yes = req.bool_param("include_yes_decisions", false)?;
    let r = parse_request(req.json_body()?)?;
    let specific = !r.use_any_unassigned();
    let (idx, shard, primary) = if specific {
        let mut missing = Vec::new();
        if r.index.is_none() {
            missing.push("index must be specified");
        }
        if r.shard.is_none() {
            missing.push("shard must be specified");
        }
        if r.primary.is_none() {
            missing.push("primary must be specified");
        }
        if !missing.is_empty() {
            let listed: String = missing
                .iter()
                .enumerate()
                .map(|(i, m)| format!("{}: {m};", i + 1))
                .collect();
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                format!("Validation Failed: {listed}"),
            ));
        }
        let name = r.index.clone().unwrap_or_default();
        let idx = node
            .get(&name)
            .ok_or_else(|| EsError::index_not_found(&name))?;
        let shard = r.shard.unwrap_or(0);
        if shard < 0 || shard as usize >= idx.num_shards() {
            return Err(
                EsError::new(404, "shard_not_found_exception", "no such shard")
                    .with("index_uuid", idx.uuid.clone())
                    .with("shard", shard.to_string())
                    .with("index", idx.name.clone()),
            );
        }
        let primary = r.primary.unwrap_or(true);
        if let Some(n) = &r.current_node {
            let id = cluster::node_id(node);
            if n != &id && n != &info.node_name && n != "_local" && n != "_master" {
                return Err(EsError::illegal_argument(format!(
                    "failed to resolve [{n}], no matching nodes"
                )));
            }
            if primary && idx.shard_failure(shard as usize).is_some() && !idx.is_closed() {
                return Err(EsError::illegal_argument(format!(
                    "unable to find primary shard assigned to node [{n}]"
                )));
            }
            if !primary {
                return Err(EsError::illegal_argument(format!(
                    "unable to find a replica shard assigned to node [{n}]"
                )));
            }
        }
        if !primary && cluster::effective_replicas(&idx) == 0 {
            return Err(EsError::illegal_argument(format!(
                "unable to find any shards to explain [{}] in the routing table",
                r.describe(include_yes)
            )));
        }
        (idx, shard as usize, primary)
    } else {
        first_unassigned(node).ok_or_else(|| EsError::illegal_argument(NO_SHARD_SPECIFIED))?
    };

    let mut out = Map::new();
    if !specific {
        out.insert("note".into(), json!(RANDOM_SHARD_NOTE));
    }
    out.insert("index".into(), json!(idx.name));
    out.insert("shard".into(), json!(shard));
    out.insert("primary".into(), json!(primary));
    let copy = copy_of(&idx, shard, primary);
    let state = match copy {
        Copy::Started => "started",
        _ => "unassigned",
    };
    out.insert("current_state".into(), json!(state));
    // ES writes `unassigned_info`, then `current_node`, then `cluster_info`, then the decision.
    let mut decision = Map::new();
    match &copy {
        Copy::Started => explain_started(node, info, &mut decision),
        Copy::FailedPrimary(f) => {
            explain_failed_primary(node, info, &idx, f, include_yes, &mut decision)
        }
        Copy::Replica { primary_active } => {
            explain_replica(node, info, &idx, shard, *primary_active, &mut decision)
        }
    }
    if let Some(u) = decision.remove("unassigned_info") {
        out.insert("unassigned_info".into(), u);
    }
    if let Some(c) = decision.remove("current_node") {
        out.insert("current_node".into(), c);
    }
    if include_disk {
        out.insert("cluster_info".into(), cluster_info(node, info));
    }
    out.extend(decision);
    Ok(RestResponse::ok(Value::Object(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_describes_the_request() {
        let r = parse_request(Some(json!({"index": "a", "shard": "1", "primary": false}))).unwrap();
        assert_eq!(
            (r.index.as_deref(), r.shard, r.primary),
            (Some("a"), Some(1), Some(false))
        );
        assert!(!r.use_any_unassigned());
        assert_eq!(
            r.describe(false),
            "ClusterAllocationExplainRequest[index=a,shard=1,primary?=false,includeYesDecisions?=false]"
        );
        assert!(parse_request(None).unwrap().use_any_unassigned());
        let e = parse_request(Some(json!({"nope": 1}))).unwrap_err();
        assert_eq!(e.kind, "x_content_parse_exception");
        assert!(e
            .reason
            .ends_with("[cluster/allocation/explain] unknown field [nope]"));
        let e = parse_request(Some(json!({"shard": "x"}))).unwrap_err();
        assert!(e.reason.ends_with("failed to parse field [shard]"));
    }
}

//! Cluster-level APIs of a single-node cluster: `GET /` (info), `GET /_cluster/health`,
//! `GET /_nodes` and `GET /_nodes/stats`.
//!
//! Also home of what `cat` and `stats` share: index resolution with `expand_wildcards`
//! (including hidden indices), per-index health, the node's id and the `/proc` probes.

#![allow(clippy::result_large_err)] // EsError is the project-wide error type (engine).

use crate::rest::{RestRequest, RestResponse};
use lode_engine::index::{now_millis, IndexService};
use lode_engine::mapping::wildcard_match;
use lode_engine::node::ResolveOptions;
use lode_engine::{EsError, EsResult, Node};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The Elasticsearch version Lode answers as.
pub const ES_VERSION: &str = "8.15.0";
pub const LUCENE_VERSION: &str = "9.11.1";
const BUILD_HASH: &str = match option_env!("LODE_BUILD_HASH") {
    Some(h) => h,
    None => "0000000000000000000000000000000000000000",
};
const BUILD_DATE: &str = match option_env!("LODE_BUILD_DATE") {
    Some(d) => d,
    None => "2024-08-05T10:05:34.233336849Z",
};

/// What the HTTP layer knows about the running node.
pub struct NodeInfo {
    pub node_name: String,
    pub cluster_name: String,
    /// The bound HTTP address, `host:port`.
    pub http_address: String,
    pub started: Instant,
    /// The node's thread pools (admission and their counters).
    pub pools: std::sync::Arc<crate::thread_pool::ThreadPools>,
}

impl NodeInfo {
    /// The address other nodes and clients would reach (an unspecified bind address publishes
    /// as loopback, as a single node with default network settings does).
    pub(crate) fn publish_host(&self) -> String {
        let host = match self.http_address.rsplit_once(':') {
            Some((h, _)) => h.trim_start_matches('[').trim_end_matches(']').to_string(),
            None => self.http_address.clone(),
        };
        match host.as_str() {
            "" | "0.0.0.0" | "::" | "localhost" => "127.0.0.1".to_string(),
            _ => host,
        }
    }

    pub(crate) fn http_port(&self) -> u16 {
        self.http_address
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or(9200)
    }

    pub(crate) fn publish_address(&self) -> String {
        format!("{}:{}", self.publish_host(), self.http_port())
    }

    pub(crate) fn transport_address(&self) -> String {
        format!("{}:9300", self.publish_host())
    }
}

/// The node's id: 22 URL-safe base64 characters, stable for a data path.
pub(crate) fn node_id(node: &Node) -> String {
    use base64::Engine;
    let key = format!("{}/{}", node.cluster_uuid, node.data.display());
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(4).enumerate() {
        let h = lode_engine::index::murmur3_32(format!("{i}:{key}").as_bytes());
        chunk.copy_from_slice(&h.to_le_bytes());
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) const ROLES: &[&str] = &[
    "data",
    "data_cold",
    "data_content",
    "data_frozen",
    "data_hot",
    "data_warm",
    "ingest",
    "master",
    "remote_cluster_client",
];

/// The `node.role` abbreviation `_cat/nodes` shows for [`ROLES`].
pub(crate) const ROLE_LETTERS: &str = "cdfhimrsw";

// ---------------------------------------------------------------------------------------------
// GET /
// ---------------------------------------------------------------------------------------------

/// `GET /`: the banner.
pub fn info(node: &Node, settings: &NodeInfo) -> EsResult<RestResponse> {
    Ok(RestResponse::ok(json!({
        "name": settings.node_name,
        "cluster_name": settings.cluster_name,
        "cluster_uuid": node.cluster_uuid,
        "version": {
            "number": ES_VERSION,
            "build_flavor": "default",
            "build_type": "tar",
            "build_hash": BUILD_HASH,
            "build_date": BUILD_DATE,
            "build_snapshot": false,
            "lucene_version": LUCENE_VERSION,
            "minimum_wire_compatibility_version": "7.17.0",
            "minimum_index_compatibility_version": "7.0.0"
        },
        "tagline": "You Know, for Search"
    })))
}

// ---------------------------------------------------------------------------------------------
// Index resolution shared by cluster, cat and stats
// ---------------------------------------------------------------------------------------------

/// Which indices a wildcard expands to (`expand_wildcards`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expand {
    pub open: bool,
    pub closed: bool,
    pub hidden: bool,
}

impl Expand {
    pub const OPEN: Expand = Expand {
        open: true,
        closed: false,
        hidden: false,
    };
    pub const OPEN_CLOSED: Expand = Expand {
        open: true,
        closed: true,
        hidden: false,
    };
    pub const ALL: Expand = Expand {
        open: true,
        closed: true,
        hidden: true,
    };

    /// Reads `expand_wildcards`, falling back to `default`.
    pub fn from_request(req: &RestRequest, default: Expand) -> EsResult<Expand> {
        let Some(v) = req.param("expand_wildcards") else {
            return Ok(default);
        };
        // One parser for `expand_wildcards`: the engine's.
        let o = ResolveOptions::default().expand_wildcards(v)?;
        Ok(Expand {
            open: o.open,
            closed: o.closed,
            hidden: o.hidden,
        })
    }
}

/// The names of an expression that are concrete (no wildcard, no exclusion, not `_all`).
fn concrete_names(expr: &str) -> Vec<&str> {
    expr.split(',')
        .map(str::trim)
        .enumerate()
        .filter(|(i, p)| {
            let exclusion = *i > 0 && p.starts_with('-');
            !(p.is_empty() || p.contains('*') || *p == "_all" || exclusion)
        })
        .map(|(_, p)| p)
        .collect()
}

/// Resolves an index expression (`None`, empty, `_all` and `*` mean every index) with
/// Elasticsearch's wildcard rules: closed indices only when `expand` says so, hidden indices
/// only when named, when `expand.hidden`, or (dot-prefixed ones) for a pattern starting with `.`.
/// Explicitly named closed indices are returned; callers decide whether that is an error.
pub(crate) fn resolve_indices(
    node: &Node,
    expr: Option<&str>,
    expand: Expand,
    ignore_unavailable: bool,
    allow_no_indices: bool,
) -> EsResult<Vec<Arc<IndexService>>> {
    let expr = expr
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .unwrap_or("_all");
    let opts = ResolveOptions {
        ignore_unavailable,
        allow_no_indices: true,
        open: expand.open,
        closed: expand.closed,
        hidden: expand.hidden,
        aliases: true,
    };
    let out = node.resolve(expr, opts)?;
    if out.is_empty() && !allow_no_indices {
        return Err(EsError::index_not_found(expr));
    }
    Ok(out)
}

/// `ignore_unavailable` / `allow_no_indices` from the request.
pub(crate) fn lenience(
    req: &RestRequest,
    ignore_default: bool,
    allow_no_default: bool,
) -> EsResult<(bool, bool)> {
    Ok((
        req.bool_param("ignore_unavailable", ignore_default)?,
        req.bool_param("allow_no_indices", allow_no_default)?,
    ))
}

// ---------------------------------------------------------------------------------------------
// Health
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Health {
    Green,
    Yellow,
    Red,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Green => "green",
            Health::Yellow => "yellow",
            Health::Red => "red",
        }
    }

    pub fn parse(s: &str) -> EsResult<Health> {
        match s.to_ascii_lowercase().as_str() {
            "green" => Ok(Health::Green),
            "yellow" => Ok(Health::Yellow),
            "red" => Ok(Health::Red),
            _ => Err(EsError::illegal_argument(format!(
                "unknown cluster health status [{s}]"
            ))),
        }
    }
}

/// The replica count a single node ends up configured with: `index.auto_expand_replicas`
/// (`0-1`, `0-all`) expands to `min(upper, nodes - 1)` but never below its lower bound.
pub(crate) fn effective_replicas(idx: &IndexService) -> usize {
    let settings = idx.settings();
    if let Some(range) = settings
        .get("index.auto_expand_replicas")
        .and_then(|v| v.as_str())
    {
        if let Some((lo, _hi)) = range.split_once('-') {
            if let Ok(lo) = lo.trim().parse::<usize>() {
                // One data node: nodes - 1 = 0 replicas can be placed.
                return lo;
            }
        }
    }
    idx.config().number_of_replicas
}

/// Shard allocation of one index on this single node: every primary is started (closed
/// indices too: their shards are replicated and allocated since 7.2), no replica can be.
#[derive(Debug, Clone)]
pub(crate) struct IndexHealth {
    pub name: String,
    pub status: Health,
    pub shards: usize,
    pub replicas: usize,
    pub active_primary: usize,
    pub active: usize,
    pub unassigned: usize,
    /// Primaries unassigned because the index's shards failed to open: the index is red.
    pub unassigned_primary: usize,
    /// The ids of those shards.
    pub failed: Vec<usize>,
}

pub(crate) fn index_health(idx: &IndexService) -> IndexHealth {
    let shards = idx.num_shards();
    let replicas = effective_replicas(idx);
    let failed: Vec<usize> = if idx.is_closed() {
        Vec::new()
    } else {
        idx.allocation_failures().into_keys().collect()
    };
    if !failed.is_empty() {
        let started = shards - failed.len();
        return IndexHealth {
            name: idx.name.clone(),
            status: Health::Red,
            shards,
            replicas,
            active_primary: started,
            active: started,
            unassigned: shards * replicas + failed.len(),
            unassigned_primary: failed.len(),
            failed,
        };
    }
    let unassigned = shards * replicas;
    IndexHealth {
        name: idx.name.clone(),
        status: if unassigned > 0 {
            Health::Yellow
        } else {
            Health::Green
        },
        shards,
        replicas,
        active_primary: shards,
        active: shards,
        unassigned,
        unassigned_primary: 0,
        failed,
    }
}

/// Cluster-wide (or per-expression) allocation counts.
#[derive(Debug, Clone)]
pub(crate) struct ClusterHealth {
    pub status: Health,
    pub active_primary: usize,
    pub active: usize,
    pub unassigned: usize,
    pub unassigned_primary: usize,
    pub indices: Vec<IndexHealth>,
    /// Concrete names of the expression that do not exist.
    pub missing: Vec<String>,
}

impl ClusterHealth {
    pub fn active_percent(&self) -> f64 {
        let total = self.active + self.unassigned;
        if total == 0 {
            100.0
        } else {
            self.active as f64 * 100.0 / total as f64
        }
    }
}

pub(crate) fn cluster_health(
    node: &Node,
    expr: Option<&str>,
    expand: Expand,
) -> EsResult<ClusterHealth> {
    let list = resolve_indices(node, expr, expand, true, true)?;
    let missing: Vec<String> = expr
        .map(|e| {
            concrete_names(e)
                .into_iter()
                .filter(|n| node.get(n).is_none())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let indices: Vec<IndexHealth> = list.iter().map(|i| index_health(i)).collect();
    let mut status = indices
        .iter()
        .map(|i| i.status)
        .max()
        .unwrap_or(Health::Green);
    if !missing.is_empty() {
        status = Health::Red;
    }
    Ok(ClusterHealth {
        status,
        active_primary: indices.iter().map(|i| i.active_primary).sum(),
        active: indices.iter().map(|i| i.active).sum(),
        unassigned: indices.iter().map(|i| i.unassigned).sum(),
        unassigned_primary: indices.iter().map(|i| i.unassigned_primary).sum(),
        indices,
        missing,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Cluster,
    Indices,
    Shards,
}

#[derive(Debug, Clone, Copy)]
enum NodesCheck {
    Eq(usize),
    Ge(usize),
    Le(usize),
    Gt(usize),
    Lt(usize),
}

impl NodesCheck {
    fn parse(s: &str) -> EsResult<NodesCheck> {
        let s = s.trim();
        let num = |t: &str| {
            t.trim().parse::<usize>().map_err(|_| {
                EsError::illegal_argument(format!("failed to parse [wait_for_nodes] value [{s}]"))
            })
        };
        let inner = |t: &str, prefix: &str| {
            t.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(')'))
                .map(str::to_string)
        };
        if let Some(r) = s.strip_prefix(">=") {
            return Ok(NodesCheck::Ge(num(r)?));
        }
        if let Some(r) = s.strip_prefix("<=") {
            return Ok(NodesCheck::Le(num(r)?));
        }
        if let Some(r) = s.strip_prefix('>') {
            return Ok(NodesCheck::Gt(num(r)?));
        }
        if let Some(r) = s.strip_prefix('<') {
            return Ok(NodesCheck::Lt(num(r)?));
        }
        if let Some(r) = inner(s, "ge(") {
            return Ok(NodesCheck::Ge(num(&r)?));
        }
        if let Some(r) = inner(s, "le(") {
            return Ok(NodesCheck::Le(num(&r)?));
        }
        if let Some(r) = inner(s, "gt(") {
            return Ok(NodesCheck::Gt(num(&r)?));
        }
        if let Some(r) = inner(s, "lt(") {
            return Ok(NodesCheck::Lt(num(&r)?));
        }
        Ok(NodesCheck::Eq(num(s)?))
    }

    fn holds(self, n: usize) -> bool {
        match self {
            NodesCheck::Eq(v) => n == v,
            NodesCheck::Ge(v) => n >= v,
            NodesCheck::Le(v) => n <= v,
            NodesCheck::Gt(v) => n > v,
            NodesCheck::Lt(v) => n < v,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum ActiveShards {
    All,
    Count(usize),
}

struct Waits {
    status: Option<Health>,
    nodes: Option<NodesCheck>,
    active_shards: Option<ActiveShards>,
}

pub(crate) fn parse_timeout(req: &RestRequest, key: &str, default: Duration) -> EsResult<Duration> {
    match req.param(key) {
        None => Ok(default),
        Some(v) if v.trim() == "-1" => Ok(Duration::from_secs(365 * 24 * 3600)),
        Some(v) => lode_dates::parse_time_value(v)
            .map(|ms| Duration::from_millis(ms.max(0) as u64))
            .map_err(|_| {
                EsError::new(
                    400,
                    "parse_exception",
                    format!("failed to parse setting [{key}] with value [{v}] as a time value: unit is missing or unrecognized"),
                )
            }),
    }
}

/// `POST /_cluster/reroute`: one node has nowhere to move a shard, so `commands` are
/// refused; `retry_failed` retries opening every index whose shards failed to open,
/// resetting their failed attempts, as ES resets `index.allocation.max_retries`' count.
/// ES's `ClusterRerouteRequest` body parser: `commands`, of which Lode takes only none (a
/// single node has no shard to move, allocate or cancel). Lode keeps no positions in this
/// body: an unknown key says `[1:2]`, the first key's.
static REROUTE: lode_engine::object_parser::ObjectParser<()> =
    lode_engine::object_parser::ObjectParser {
        name: "cluster_reroute",
        style: lode_engine::object_parser::Style::Custom {
            unknown: lode_engine::object_parser::unknown_field_at_first_key,
            wrong_token: |_, _| EsError::internal("every token is declared"),
        },
        fields: &[&[lode_engine::object_parser::Field::new(
            "commands",
            "*",
            |_, _, v| {
                if v.as_array().is_some_and(|a| a.is_empty()) {
                    return Ok(());
                }
                Err(EsError::illegal_argument(
                    "[commands] is not supported by Lode: a single node has no shard to move, allocate or cancel",
                ))
            },
        )]],
    };

pub fn reroute(node: &Node, req: &RestRequest) -> EsResult<RestResponse> {
    let dry_run = req.bool_param("dry_run", false)?;
    let explain = req.bool_param("explain", false)?;
    let retry_failed = req.bool_param("retry_failed", false)?;
    if let Some(body) = req.json_body()? {
        let Some(obj) = body.as_object() else {
            return Err(EsError::parsing("request body must be an object"));
        };
        REROUTE.parse_into(&mut (), obj)?;
    }
    if retry_failed && !dry_run {
        node.retry_failed();
    }
    let mut out = Map::new();
    out.insert("acknowledged".into(), json!(true));
    if explain {
        out.insert("explanations".into(), json!([]));
    }
    if req.param("metric").map(str::trim) != Some("none") {
        out.insert("state".into(), json!({"cluster_uuid": node.cluster_uuid}));
    }
    Ok(RestResponse::ok(Value::Object(out)))
}

/// `GET /_cluster/health[/{index}]`.
pub fn health(
    node: &Node,
    info: &NodeInfo,
    indices: Option<&str>,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let level = match req.param("level").unwrap_or("cluster").to_ascii_lowercase().as_str() {
        "cluster" => Level::Cluster,
        "indices" => Level::Indices,
        "shards" => Level::Shards,
        other => {
            return Err(EsError::illegal_argument(format!(
                "No enum constant org.elasticsearch.action.admin.cluster.health.ClusterHealthRequest.Level.{}",
                other.to_uppercase()
            )))
        }
    };
    let waits = Waits {
        status: req
            .param("wait_for_status")
            .filter(|s| !s.is_empty())
            .map(Health::parse)
            .transpose()?,
        nodes: req
            .param("wait_for_nodes")
            .filter(|s| !s.is_empty())
            .map(NodesCheck::parse)
            .transpose()?,
        active_shards: match req.param("wait_for_active_shards") {
            None | Some("") => None,
            Some(v) if v.eq_ignore_ascii_case("all") => Some(ActiveShards::All),
            Some(v) => Some(ActiveShards::Count(v.trim().parse::<usize>().map_err(
                |_| {
                    EsError::illegal_argument(format!(
                        "failed to parse value [{v}] for [wait_for_active_shards]"
                    ))
                },
            )?)),
        },
    };
    if let Some(ev) = req.param("wait_for_events") {
        if !matches!(
            ev.to_ascii_lowercase().as_str(),
            "immediate" | "urgent" | "high" | "normal" | "low" | "languid"
        ) {
            return Err(EsError::illegal_argument(format!(
                "No enum constant org.elasticsearch.common.Priority.{}",
                ev.to_uppercase()
            )));
        }
    }
    // Nothing ever relocates or initializes on one node.
    req.bool_param("wait_for_no_relocating_shards", false)?;
    req.bool_param("wait_for_no_initializing_shards", false)?;
    req.bool_param("local", false)?;
    let timeout = parse_timeout(req, "timeout", Duration::from_secs(30))?;
    parse_timeout(req, "master_timeout", Duration::from_secs(30))?;
    let expand = Expand::from_request(req, Expand::ALL)?;
    let deadline = Instant::now() + timeout;
    loop {
        let h = cluster_health(node, indices, expand)?;
        let met = waits_met(&waits, &h);
        let now = Instant::now();
        if met || now >= deadline {
            let timed_out = !met;
            let body = health_json(info, &h, level, timed_out);
            return Ok(RestResponse::json(if timed_out { 408 } else { 200 }, body));
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
    }
}

fn waits_met(w: &Waits, h: &ClusterHealth) -> bool {
    if !h.missing.is_empty() {
        return false;
    }
    if let Some(s) = w.status {
        if h.status > s {
            return false;
        }
    }
    if let Some(n) = w.nodes {
        if !n.holds(1) {
            return false;
        }
    }
    match w.active_shards {
        Some(ActiveShards::All) if h.unassigned > 0 => return false,
        Some(ActiveShards::Count(c)) if h.active < c => return false,
        _ => {}
    }
    true
}

fn health_json(info: &NodeInfo, h: &ClusterHealth, level: Level, timed_out: bool) -> Value {
    let mut m = Map::new();
    m.insert("cluster_name".into(), json!(info.cluster_name));
    m.insert("status".into(), json!(h.status.as_str()));
    m.insert("timed_out".into(), json!(timed_out));
    m.insert("number_of_nodes".into(), json!(1));
    m.insert("number_of_data_nodes".into(), json!(1));
    m.insert("active_primary_shards".into(), json!(h.active_primary));
    m.insert("active_shards".into(), json!(h.active));
    m.insert("relocating_shards".into(), json!(0));
    m.insert("initializing_shards".into(), json!(0));
    m.insert("unassigned_shards".into(), json!(h.unassigned));
    m.insert(
        "unassigned_primary_shards".into(),
        json!(h.unassigned_primary),
    );
    m.insert("delayed_unassigned_shards".into(), json!(0));
    m.insert("number_of_pending_tasks".into(), json!(0));
    m.insert("number_of_in_flight_fetch".into(), json!(0));
    m.insert("task_max_waiting_in_queue_millis".into(), json!(0));
    m.insert(
        "active_shards_percent_as_number".into(),
        json!(h.active_percent()),
    );
    if level != Level::Cluster {
        let mut indices = Map::new();
        for i in &h.indices {
            let mut im = Map::new();
            im.insert("status".into(), json!(i.status.as_str()));
            im.insert("number_of_shards".into(), json!(i.shards));
            im.insert("number_of_replicas".into(), json!(i.replicas));
            im.insert("active_primary_shards".into(), json!(i.active_primary));
            im.insert("active_shards".into(), json!(i.active));
            im.insert("relocating_shards".into(), json!(0));
            im.insert("initializing_shards".into(), json!(0));
            im.insert("unassigned_shards".into(), json!(i.unassigned));
            im.insert(
                "unassigned_primary_shards".into(),
                json!(i.unassigned_primary),
            );
            if level == Level::Shards {
                let mut shards = Map::new();
                for s in 0..i.shards {
                    let red = i.failed.contains(&s);
                    let status = if red {
                        Health::Red
                    } else if i.replicas > 0 {
                        Health::Yellow
                    } else {
                        Health::Green
                    };
                    shards.insert(
                        s.to_string(),
                        json!({
                            "status": status.as_str(),
                            "primary_active": !red,
                            "active_shards": if red { 0 } else { 1 },
                            "relocating_shards": 0,
                            "initializing_shards": 0,
                            "unassigned_shards": i.replicas + usize::from(red),
                            "unassigned_primary_shards": usize::from(red)
                        }),
                    );
                }
                im.insert("shards".into(), Value::Object(shards));
            }
            indices.insert(i.name.clone(), Value::Object(im));
        }
        m.insert("indices".into(), Value::Object(indices));
    }
    Value::Object(m)
}

// ---------------------------------------------------------------------------------------------
// /proc probes (Linux)
// ---------------------------------------------------------------------------------------------

/// Kernel clock ticks per second; 100 on every Linux configuration Lode targets.
const CLK_TCK: u64 = 100;

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `Key:   123 kB` lines of `/proc/meminfo` and `/proc/self/status`, in bytes.
fn kb_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let mut it = rest.split_whitespace();
        let n: u64 = it.next()?.parse().ok()?;
        Some(match it.next() {
            Some("kB") => n * 1024,
            _ => n,
        })
    })
}

#[derive(Debug, Default, Clone)]
pub(crate) struct ProcessProbe {
    pub pid: u32,
    pub open_fds: u64,
    pub max_fds: u64,
    pub cpu_ms: u64,
    pub cpu_percent: u64,
    pub virtual_bytes: u64,
    pub resident_bytes: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub threads: u64,
    /// When the process started, in seconds since the Unix epoch (0 when unknown).
    pub start_time_secs: f64,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct OsProbe {
    pub mem_total: u64,
    pub mem_free: u64,
    pub swap_total: u64,
    pub swap_free: u64,
    pub load: Option<[f64; 3]>,
    pub cpu_percent: u64,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct FsProbe {
    pub path: String,
    pub mount: String,
    pub fs_type: String,
    pub total: u64,
    pub free: u64,
    pub available: u64,
}

static PROCESS_CPU: parking_lot::Mutex<Option<(Instant, u64)>> = parking_lot::Mutex::new(None);
static OS_CPU: parking_lot::Mutex<Option<(u64, u64)>> = parking_lot::Mutex::new(None);

fn processors() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

pub(crate) fn probe_process(started: Instant) -> ProcessProbe {
    let mut p = read_process();
    let now = Instant::now();
    p.cpu_percent = {
        let mut prev = PROCESS_CPU.lock();
        let (since, base) = prev.unwrap_or((started, 0));
        let wall = now.duration_since(since).as_millis() as u64;
        *prev = Some((now, p.cpu_ms));
        if wall == 0 {
            0
        } else {
            (p.cpu_ms.saturating_sub(base) * 100 / (wall * processors() as u64)).min(100)
        }
    };
    p
}

/// The process's numbers from `/proc/self` without `cpu_percent` (which is measured between
/// two `_nodes/stats` calls, so other readers, such as the Prometheus scrape, leave it alone).
pub(crate) fn read_process() -> ProcessProbe {
    let stat = read("/proc/self/stat");
    let fields: Vec<&str> = stat
        .rfind(')')
        .map(|i| stat[i + 1..].split_whitespace().collect())
        .unwrap_or_default();
    // Fields after the command name, 0-based from field 3 (`state`) of proc(5).
    let f = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let cpu_ms = (f(14) + f(15)) * 1000 / CLK_TCK;
    let status = read("/proc/self/status");
    let max_fds = read("/proc/self/limits")
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| {
            l["Max open files".len()..]
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0);
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count() as u64)
        .unwrap_or(0);
    // `starttime` (field 22) counts clock ticks since boot; `btime` in /proc/stat is the boot
    // time in seconds since the epoch.
    let boot = read("/proc/stat")
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<u64>().ok());
    let start_time_secs = boot
        .map(|b| b as f64 + f(22) as f64 / CLK_TCK as f64)
        .unwrap_or(0.0);
    ProcessProbe {
        pid: std::process::id(),
        open_fds,
        max_fds,
        cpu_ms,
        cpu_percent: 0,
        start_time_secs,
        virtual_bytes: f(23),
        resident_bytes: kb_field(&status, "VmRSS").unwrap_or(0),
        minor_faults: f(10),
        major_faults: f(12),
        threads: f(20),
    }
}

/// The `jvm` section of node stats for a process without a JVM (docs/compatibility.md): the
/// heap is the process's resident memory, bounded by the machine's memory (Lode has no heap
/// limit of its own); there is no garbage collector, so both collectors report zero
/// collections; threads are the process's threads. Tools that read these (Rally's and
/// OpenSearch Benchmark's telemetry) see true numbers, not a JVM's.
fn jvm_stats(info: &NodeInfo, now: i64) -> Value {
    let p = probe_process(info.started);
    let os = probe_os();
    let max = os.mem_total.max(p.resident_bytes).max(1);
    let zero_gc = json!({"collection_count": 0, "collection_time_in_millis": 0});
    json!({
        "timestamp": now,
        "uptime_in_millis": info.started.elapsed().as_millis() as u64,
        "mem": {
            "heap_used_in_bytes": p.resident_bytes,
            "heap_used_percent": p.resident_bytes * 100 / max,
            "heap_committed_in_bytes": p.resident_bytes,
            "heap_max_in_bytes": max,
            "non_heap_used_in_bytes": 0,
            "non_heap_committed_in_bytes": 0,
            "pools": {
                "young": {"used_in_bytes": 0, "max_in_bytes": 0, "peak_used_in_bytes": 0, "peak_max_in_bytes": 0},
                "survivor": {"used_in_bytes": 0, "max_in_bytes": 0, "peak_used_in_bytes": 0, "peak_max_in_bytes": 0},
                "old": {"used_in_bytes": p.resident_bytes, "max_in_bytes": max,
                        "peak_used_in_bytes": p.resident_bytes, "peak_max_in_bytes": max}
            }
        },
        "threads": {"count": p.threads, "peak_count": p.threads},
        "gc": {"collectors": {"young": zero_gc.clone(), "old": zero_gc}},
        "buffer_pools": {},
        "classes": {"current_loaded_count": 0, "total_loaded_count": 0, "total_unloaded_count": 0}
    })
}

pub(crate) fn probe_os() -> OsProbe {
    let meminfo = read("/proc/meminfo");
    let mem_total = kb_field(&meminfo, "MemTotal").unwrap_or(0);
    let mem_free = kb_field(&meminfo, "MemAvailable")
        .or_else(|| kb_field(&meminfo, "MemFree"))
        .unwrap_or(0);
    let load = {
        let l = read("/proc/loadavg");
        let v: Vec<f64> = l
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        (v.len() == 3).then(|| [v[0], v[1], v[2]])
    };
    let cpu_percent = {
        let stat = read("/proc/stat");
        let nums: Vec<u64> = stat
            .lines()
            .next()
            .filter(|l| l.starts_with("cpu "))
            .map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        if nums.len() >= 4 {
            let total: u64 = nums.iter().take(8).sum();
            let idle = nums[3] + nums.get(4).copied().unwrap_or(0);
            let mut prev = OS_CPU.lock();
            let (pt, pi) = prev.unwrap_or((0, 0));
            *prev = Some((total, idle));
            let dt = total.saturating_sub(pt);
            let di = idle.saturating_sub(pi);
            (dt.saturating_sub(di) * 100)
                .checked_div(dt)
                .map_or(0, |p| p.min(100))
        } else {
            0
        }
    };
    OsProbe {
        mem_total,
        mem_free,
        swap_total: kb_field(&meminfo, "SwapTotal").unwrap_or(0),
        swap_free: kb_field(&meminfo, "SwapFree").unwrap_or(0),
        load,
        cpu_percent,
    }
}

/// Disk space of the file system holding `path`, via `df -Pk` (POSIX output, 1 KiB blocks).
pub(crate) fn probe_fs(path: &std::path::Path) -> FsProbe {
    let mut out = FsProbe {
        path: path.display().to_string(),
        ..FsProbe::default()
    };
    let Ok(res) = std::process::Command::new("df")
        .arg("-Pk")
        .arg(path)
        .output()
    else {
        return out;
    };
    let text = String::from_utf8_lossy(&res.stdout);
    if let Some(line) = text.lines().nth(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() >= 6 {
            let n = |i: usize| cols[i].parse::<u64>().unwrap_or(0) * 1024;
            out.total = n(1);
            out.free = n(1).saturating_sub(n(2));
            out.available = n(3);
            out.mount = cols[5..].join(" ");
        }
    }
    if !out.mount.is_empty() {
        out.fs_type = read("/proc/self/mounts")
            .lines()
            .rev()
            .find_map(|l| {
                let c: Vec<&str> = l.split_whitespace().collect();
                (c.len() >= 3 && c[1] == out.mount).then(|| c[2].to_string())
            })
            .unwrap_or_default();
    }
    out
}

// ---------------------------------------------------------------------------------------------
// GET /_nodes, GET /_nodes/stats
// ---------------------------------------------------------------------------------------------

const NODE_STATS_METRICS: &[&str] = &[
    "_all",
    "indices",
    "os",
    "process",
    "jvm",
    "thread_pool",
    "fs",
    "transport",
    "http",
    "breaker",
    "script",
    "discovery",
    "ingest",
    "adaptive_selection",
    "script_cache",
    "indexing_pressure",
    "repositories",
    "allocations",
];

const NODE_INFO_METRICS: &[&str] = &[
    "_all",
    "_none",
    "settings",
    "os",
    "process",
    "jvm",
    "thread_pool",
    "transport",
    "http",
    "plugins",
    "ingest",
    "aggregations",
    "indices",
    "remote_cluster_server",
];

/// Whether a `_nodes/{node_id}` filter selects this node.
fn node_matches(filter: &str, id: &str, info: &NodeInfo) -> bool {
    filter.split(',').map(str::trim).any(|f| {
        matches!(
            f,
            "_local" | "_all" | "_master" | "*" | "master:true" | "data:true" | "ingest:true"
        ) || f == id
            || wildcard_match(f, &info.node_name)
            || f == info.publish_host()
            || f == info.node_name
    })
}

fn metric_list(raw: Option<&str>, allowed: &[&str], req: &RestRequest) -> EsResult<Vec<String>> {
    let list = crate::rest::list_param(raw);
    if list.is_empty() {
        return Ok(vec!["_all".into()]);
    }
    let bad: Vec<String> = list
        .iter()
        .filter(|m| !allowed.contains(&m.as_str()))
        .cloned()
        .collect();
    if !bad.is_empty() {
        return Err(crate::rest::unrecognized(req, &bad, allowed, "metric"));
    }
    if list.len() > 1 && list.iter().any(|m| m == "_all") {
        return Err(EsError::illegal_argument(format!(
            "request [{}] contains _all and individual metrics [{}]",
            req.path,
            list.join(",")
        )));
    }
    Ok(list)
}

/// `GET /_nodes[/{node_id}|/{metric}]`, `GET /_nodes[/{node_id}]/stats[/{metric}]`.
pub fn nodes_stats(node: &Node, info: &NodeInfo, req: &RestRequest) -> EsResult<RestResponse> {
    let segs: Vec<&str> = req.path.split('/').filter(|s| !s.is_empty()).collect();
    let rest: &[&str] = match segs.iter().position(|s| *s == "_nodes") {
        Some(p) => &segs[p + 1..],
        None => &[],
    };
    let id = node_id(node);
    // `{index_metric}`: which groups of the `indices` section (the `_stats` metrics).
    let index_metric = match rest {
        ["stats", _, im] | [_, "stats", _, im] => Some(*im),
        _ => None,
    };
    let (filter, stats, metrics) = match rest {
        ["stats"] => (None, true, None),
        ["stats", m] | ["stats", m, _] => (None, true, Some(*m)),
        [f, "stats"] => (Some(*f), true, None),
        [f, "stats", m, ..] => (Some(*f), true, Some(*m)),
        [] => (None, false, None),
        [x] => {
            // `_nodes/{metrics}` when every part is an info metric, else a node filter.
            if x.split(',').all(|p| NODE_INFO_METRICS.contains(&p)) {
                (None, false, Some(*x))
            } else {
                (Some(*x), false, None)
            }
        }
        [f, m, ..] => (Some(*f), false, Some(*m)),
    };
    let selected = filter.map(|f| node_matches(f, &id, info)).unwrap_or(true);
    let mut nodes = Map::new();
    if stats {
        let metrics = metric_list(metrics, NODE_STATS_METRICS, req)?;
        let index_metrics = match index_metric {
            None => crate::stats::all_metrics(),
            Some(im) => {
                // ES's RestNodesStatsAction: index metrics only with the `indices` metric.
                if !wants(&metrics, "indices") {
                    return Err(EsError::illegal_argument(format!(
                        "request [{}] contains index metrics [{im}] but indices stats not requested",
                        req.path
                    )));
                }
                crate::stats::parse_metrics(Some(im), req)?
            }
        };
        if selected {
            nodes.insert(
                id.clone(),
                node_stats_json(node, info, &metrics, &index_metrics, req)?,
            );
        }
    } else {
        let metrics = metric_list(metrics, NODE_INFO_METRICS, req)?;
        if selected {
            nodes.insert(id.clone(), node_info_json(node, info, &metrics));
        }
    }
    let n = nodes.len();
    Ok(RestResponse::ok(json!({
        "_nodes": {"total": n, "successful": n, "failed": 0},
        "cluster_name": info.cluster_name,
        "nodes": nodes
    })))
}

fn wants(metrics: &[String], m: &str) -> bool {
    metrics.iter().any(|x| x == "_all" || x == m)
}

fn node_header(info: &NodeInfo) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), json!(info.node_name));
    m.insert("transport_address".into(), json!(info.transport_address()));
    m.insert("host".into(), json!(info.publish_host()));
    m.insert("ip".into(), json!(info.publish_host()));
    m
}

fn os_name_version() -> (String, String, String) {
    let name = read("/proc/sys/kernel/ostype").trim().to_string();
    let version = read("/proc/sys/kernel/osrelease").trim().to_string();
    let pretty = read("/etc/os-release")
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| name.clone());
    (
        if name.is_empty() {
            "Linux".into()
        } else {
            name
        },
        pretty,
        version,
    )
}

fn java_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        other => other,
    }
}

fn node_info_json(node: &Node, info: &NodeInfo, metrics: &[String]) -> Value {
    let mut m = node_header(info);
    m.insert("version".into(), json!(ES_VERSION));
    m.insert("transport_version".into(), json!(8_702_002));
    m.insert("build_flavor".into(), json!("default"));
    m.insert("build_type".into(), json!("tar"));
    m.insert("build_hash".into(), json!(BUILD_HASH));
    m.insert("roles".into(), json!(ROLES));
    m.insert("attributes".into(), json!({}));
    if wants(metrics, "settings") {
        m.insert(
            "settings".into(),
            json!({
                "cluster": {"name": info.cluster_name},
                "node": {"name": info.node_name},
                "path": {"data": [node.data.display().to_string()]},
                "http": {"port": info.http_port().to_string()}
            }),
        );
    }
    if wants(metrics, "os") {
        let (name, pretty, version) = os_name_version();
        let p = processors();
        m.insert(
            "os".into(),
            json!({
                "refresh_interval_in_millis": 1000,
                "name": name,
                "pretty_name": pretty,
                "arch": java_arch(),
                "version": version,
                "available_processors": p,
                "allocated_processors": p
            }),
        );
    }
    if wants(metrics, "process") {
        m.insert(
            "process".into(),
            json!({"refresh_interval_in_millis": 1000, "id": std::process::id(), "mlockall": false}),
        );
    }
    if wants(metrics, "thread_pool") {
        m.insert("thread_pool".into(), info.pools.info_json());
    }
    if wants(metrics, "http") {
        m.insert(
            "http".into(),
            json!({
                "bound_address": [info.http_address],
                "publish_address": info.publish_address(),
                "max_content_length_in_bytes": 104_857_600
            }),
        );
    }
    if wants(metrics, "plugins") {
        m.insert("plugins".into(), json!([]));
        m.insert("modules".into(), json!([]));
    }
    Value::Object(m)
}

fn node_stats_json(
    node: &Node,
    info: &NodeInfo,
    metrics: &[String],
    index_metrics: &[&str],
    req: &RestRequest,
) -> EsResult<Value> {
    let now = now_millis();
    let mut m = Map::new();
    m.insert("timestamp".into(), json!(now));
    for (k, v) in node_header(info) {
        m.insert(k, v);
    }
    m.insert("roles".into(), json!(ROLES));
    m.insert("attributes".into(), json!({}));
    if wants(metrics, "indices") {
        let open: Vec<Arc<IndexService>> =
            node.all().into_iter().filter(|i| !i.is_closed()).collect();
        let opts = crate::stats::StatsOptions::from_request(req)?;
        let total = crate::stats::aggregate_indices(&open, &opts);
        m.insert(
            "indices".into(),
            crate::stats::render_stats(&total, index_metrics, &opts),
        );
    }
    if wants(metrics, "os") {
        let os = probe_os();
        let used = os.mem_total.saturating_sub(os.mem_free);
        let pct = |part: u64, whole: u64| (part * 100 + whole / 2).checked_div(whole).unwrap_or(0);
        let mut cpu = Map::new();
        cpu.insert("percent".into(), json!(os.cpu_percent));
        if let Some([a, b, c]) = os.load {
            cpu.insert("load_average".into(), json!({"1m": a, "5m": b, "15m": c}));
        }
        m.insert(
            "os".into(),
            json!({
                "timestamp": now,
                "cpu": cpu,
                "mem": {
                    "total_in_bytes": os.mem_total,
                    "adjusted_total_in_bytes": os.mem_total,
                    "free_in_bytes": os.mem_free,
                    "used_in_bytes": used,
                    "free_percent": pct(os.mem_free, os.mem_total),
                    "used_percent": pct(used, os.mem_total)
                },
                "swap": {
                    "total_in_bytes": os.swap_total,
                    "free_in_bytes": os.swap_free,
                    "used_in_bytes": os.swap_total.saturating_sub(os.swap_free)
                }
            }),
        );
    }
    if wants(metrics, "process") {
        let p = probe_process(info.started);
        m.insert(
            "process".into(),
            json!({
                "timestamp": now,
                "open_file_descriptors": p.open_fds,
                "max_file_descriptors": p.max_fds,
                "cpu": {"percent": p.cpu_percent, "total_in_millis": p.cpu_ms},
                "mem": {"total_virtual_in_bytes": p.virtual_bytes, "resident_in_bytes": p.resident_bytes},
                "page_faults": {"minor": p.minor_faults, "major": p.major_faults},
                "threads": p.threads
            }),
        );
    }
    if wants(metrics, "fs") {
        let fs = probe_fs(&node.data);
        m.insert(
            "fs".into(),
            json!({
                "timestamp": now,
                "total": {
                    "total_in_bytes": fs.total,
                    "free_in_bytes": fs.free,
                    "available_in_bytes": fs.available
                },
                "data": [{
                    "path": fs.path,
                    "mount": fs.mount,
                    "type": fs.fs_type,
                    "total_in_bytes": fs.total,
                    "free_in_bytes": fs.free,
                    "available_in_bytes": fs.available
                }]
            }),
        );
    }
    if wants(metrics, "jvm") {
        m.insert("jvm".into(), jvm_stats(info, now));
    }
    if wants(metrics, "thread_pool") {
        m.insert("thread_pool".into(), info.pools.stats_json());
    }
    if wants(metrics, "http") {
        let (open, total) = crate::http_stats::snapshot();
        m.insert(
            "http".into(),
            json!({"current_open": open, "total_opened": total}),
        );
    }
    if wants(metrics, "breaker") {
        // ES names the metric `breaker` and the section `breakers`.
        m.insert(
            "breakers".into(),
            lode_engine::breaker::service().stats_json(),
        );
    }
    if wants(metrics, "script") || wants(metrics, "script_cache") {
        // No compiled-script cache (see lode_painless::compilations): no evictions, no
        // compilation rate limit.
        let counts = json!({
            "compilations": lode_painless::compilations(),
            "cache_evictions": 0,
            "compilation_limit_triggered": 0
        });
        if wants(metrics, "script") {
            m.insert("script".into(), counts.clone());
        }
        if wants(metrics, "script_cache") {
            m.insert("script_cache".into(), json!({"sum": counts}));
        }
    }
    // Sections of what a single node without ingest pipelines, transport or snapshot
    // repositories truly has: nothing ran, so every count is zero and every map empty.
    if wants(metrics, "ingest") {
        m.insert(
            "ingest".into(),
            json!({
                "total": {"count": 0, "time_in_millis": 0, "current": 0, "failed": 0},
                "pipelines": {}
            }),
        );
    }
    if wants(metrics, "transport") {
        m.insert(
            "transport".into(),
            json!({
                "server_open": 0,
                "total_outbound_connections": 0,
                "rx_count": 0,
                "rx_size_in_bytes": 0,
                "tx_count": 0,
                "tx_size_in_bytes": 0
            }),
        );
    }
    if wants(metrics, "discovery") {
        m.insert(
            "discovery".into(),
            json!({
                "cluster_state_queue": {"total": 0, "pending": 0, "committed": 0},
                "published_cluster_states": {
                    "full_states": 0,
                    "incompatible_diffs": 0,
                    "compatible_diffs": 0
                }
            }),
        );
    }
    if wants(metrics, "adaptive_selection") {
        m.insert("adaptive_selection".into(), json!({}));
    }
    if wants(metrics, "repositories") {
        m.insert("repositories".into(), json!({}));
    }
    Ok(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::Method;
    use std::collections::BTreeMap;

    pub(crate) fn request(path: &str, params: &[(&str, &str)]) -> RestRequest {
        RestRequest {
            doc_security: None,
            field_security: None,
            authorized: None,
            method: Method::Get,
            path: path.to_string(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            body: Vec::new(),
        }
    }

    pub(crate) fn node_info() -> NodeInfo {
        NodeInfo {
            node_name: "lode-1".into(),
            cluster_name: "lode".into(),
            http_address: "0.0.0.0:9200".into(),
            started: Instant::now(),
            pools: std::sync::Arc::new(crate::thread_pool::ThreadPools::with_defaults("lode-1")),
        }
    }

    fn body(r: &RestResponse) -> &Value {
        match &r.body {
            crate::rest::RestBody::Json(v) => v,
            other => panic!("not json: {other:?}"),
        }
    }

    #[test]
    fn info_banner() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let r = info(&node, &node_info()).unwrap();
        let b = body(&r);
        assert_eq!(b["version"]["number"], "8.15.0");
        assert_eq!(b["cluster_uuid"], json!(node.cluster_uuid));
        assert_eq!(b["tagline"], "You Know, for Search");
    }

    #[test]
    fn health_counts_replicas_as_unassigned() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let i = node_info();
        let r = health(&node, &i, None, &request("/_cluster/health", &[])).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(body(&r)["status"], "green");
        assert_eq!(body(&r)["active_shards_percent_as_number"], json!(100.0));
        node.create_index(
            "a",
            &json!({"number_of_shards": 2, "number_of_replicas": 0}),
            &Value::Null,
        )
        .unwrap();
        node.create_index(
            "b",
            &json!({"number_of_shards": 1, "number_of_replicas": 1}),
            &Value::Null,
        )
        .unwrap();
        let r = health(
            &node,
            &i,
            None,
            &request("/_cluster/health", &[("level", "shards")]),
        )
        .unwrap();
        let b = body(&r);
        assert_eq!(b["status"], "yellow");
        assert_eq!(b["active_shards"], 3);
        assert_eq!(b["unassigned_shards"], 1);
        assert_eq!(b["active_shards_percent_as_number"], json!(75.0));
        assert_eq!(b["indices"]["a"]["status"], "green");
        assert_eq!(b["indices"]["b"]["shards"]["0"]["unassigned_shards"], 1);
        let r = health(
            &node,
            &i,
            Some("a"),
            &request("/_cluster/health/a", &[("wait_for_status", "green")]),
        )
        .unwrap();
        assert_eq!(r.status, 200);
        assert!(body(&r).get("indices").is_none());
        // yellow can't become green: times out with 408.
        let r = health(
            &node,
            &i,
            None,
            &request(
                "/_cluster/health",
                &[("wait_for_status", "green"), ("timeout", "10ms")],
            ),
        )
        .unwrap();
        assert_eq!(r.status, 408);
        assert_eq!(body(&r)["timed_out"], true);
        // A missing index is red and waits for the index to appear.
        let r = health(
            &node,
            &i,
            Some("nope"),
            &request("/_cluster/health/nope", &[("timeout", "10ms")]),
        )
        .unwrap();
        assert_eq!(r.status, 408);
        assert_eq!(body(&r)["status"], "red");
        let r = health(
            &node,
            &i,
            None,
            &request(
                "/_cluster/health",
                &[("wait_for_nodes", "10"), ("timeout", "1ms")],
            ),
        )
        .unwrap();
        assert_eq!(r.status, 408);
        let r = health(
            &node,
            &i,
            None,
            &request("/_cluster/health", &[("wait_for_nodes", ">=1")]),
        )
        .unwrap();
        assert_eq!(r.status, 200);
        assert!(health(
            &node,
            &i,
            None,
            &request("/_cluster/health", &[("level", "nope")])
        )
        .is_err());
    }

    #[test]
    fn health_expand_wildcards_and_closed() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let i = node_info();
        node.create_index(
            "index-1",
            &json!({"number_of_shards": 1, "number_of_replicas": 0}),
            &Value::Null,
        )
        .unwrap();
        node.create_index(
            "index-2",
            &json!({"number_of_shards": 2, "number_of_replicas": 0}),
            &Value::Null,
        )
        .unwrap();
        node.index("index-2").unwrap().close().unwrap();
        let h = |ew: &str| {
            let r = health(
                &node,
                &i,
                Some("index-*"),
                &request(
                    "/_cluster/health/index-*",
                    &[("level", "indices"), ("expand_wildcards", ew)],
                ),
            )
            .unwrap();
            body(&r).clone()
        };
        let b = h("open");
        assert_eq!(b["active_shards"], 1);
        assert!(b["indices"].get("index-2").is_none());
        let b = h("closed");
        assert_eq!(b["active_shards"], 2);
        assert_eq!(b["indices"]["index-2"]["status"], "green");
        assert_eq!(h("all")["active_shards"], 3);
        assert_eq!(h("none")["active_shards"], 0);
    }

    #[test]
    fn hidden_indices_need_expansion() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        node.create_index("visible", &Value::Null, &Value::Null)
            .unwrap();
        node.create_index("hid", &json!({"index": {"hidden": true}}), &Value::Null)
            .unwrap();
        node.create_index(".dot", &json!({"index": {"hidden": true}}), &Value::Null)
            .unwrap();
        let names = |expr: Option<&str>, e: Expand| -> Vec<String> {
            resolve_indices(&node, expr, e, false, true)
                .unwrap()
                .iter()
                .map(|i| i.name.clone())
                .collect()
        };
        assert_eq!(names(None, Expand::OPEN), vec!["visible"]);
        assert_eq!(names(Some("hid"), Expand::OPEN), vec!["hid"]);
        assert_eq!(names(Some(".*"), Expand::OPEN), vec![".dot"]);
        assert_eq!(
            names(None, Expand::ALL).len(),
            3,
            "`hidden` expands to every index"
        );
        assert!(resolve_indices(&node, Some("nope"), Expand::OPEN, false, true).is_err());
        assert!(resolve_indices(&node, Some("nope*"), Expand::OPEN, false, false).is_err());
    }

    #[test]
    fn nodes_info_and_stats() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let i = node_info();
        let id = node_id(&node);
        assert_eq!(id.len(), 22);
        let r = nodes_stats(&node, &i, &request("/_nodes/stats", &[])).unwrap();
        let b = body(&r);
        let n = &b["nodes"][&id];
        assert_eq!(n["name"], "lode-1");
        assert_eq!(n["host"], "127.0.0.1");
        assert!(n["process"]["open_file_descriptors"].as_u64().unwrap() > 0);
        assert!(n["process"]["mem"]["resident_in_bytes"].as_u64().unwrap() > 0);
        assert!(n["os"]["mem"]["total_in_bytes"].as_u64().unwrap() > 0);
        assert!(n["indices"]["docs"].is_object());
        // No JVM: the heap is the resident memory, and there is no collector to count.
        assert!(n["jvm"]["mem"]["heap_used_in_bytes"].as_u64().unwrap() > 0);
        assert_eq!(n["jvm"]["gc"]["collectors"]["old"]["collection_count"], 0);
        let r = nodes_stats(&node, &i, &request("/_nodes/_local/stats/process", &[])).unwrap();
        let n = &body(&r)["nodes"][&id];
        assert!(n["process"].is_object() && n.get("os").is_none());
        let r = nodes_stats(&node, &i, &request("/_nodes/other-node/stats", &[])).unwrap();
        assert_eq!(body(&r)["_nodes"]["total"], 0);
        let e = nodes_stats(&node, &i, &request("/_nodes/stats/proces", &[])).unwrap_err();
        assert_eq!(e.reason, "request [/_nodes/stats/proces] contains unrecognized metric: [proces] -> did you mean [process]?");
        let r = nodes_stats(&node, &i, &request("/_nodes", &[])).unwrap();
        let n = &body(&r)["nodes"][&id];
        assert_eq!(n["version"], "8.15.0");
        assert_eq!(n["http"]["publish_address"], "127.0.0.1:9200");
    }
}

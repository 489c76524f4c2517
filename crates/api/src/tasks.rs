//! The node's task manager: long-running requests (`_delete_by_query`, `_update_by_query`,
//! `_forcemerge` with `wait_for_completion=false`) run as tasks that `GET /_tasks` lists,
//! `GET /_tasks/{id}` waits on, `_rethrottle` re-paces and `_cancel` stops.
//!
//! As in Elasticsearch, a task started with `wait_for_completion=false` stores its outcome in the
//! hidden `.tasks` index when it ends, so `GET /_tasks/{id}` answers after the task has left the
//! registry and across restarts.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lode_engine::cancel::CancelToken;
use lode_engine::shard::VersionReq;
use lode_engine::{EsError, EsResult, Node};
use serde_json::{json, Value};

use crate::rest::{RestRequest, RestResponse};

const TASKS_INDEX: &str = ".tasks";

/// One running task. Workers update `status` as they go and poll `cancel` between batches;
/// searches observe it through their early-stop checks (lode_engine::cancel).
pub struct Task {
    pub id: u64,
    pub action: &'static str,
    description: Description,
    start_millis: u64,
    started: Instant,
    status: Mutex<Value>,
    pub cancel: CancelToken,
    /// The request's `X-Opaque-Id`, as ES's task `headers`.
    headers: BTreeMap<String, String>,
    parent: Option<u64>,
    throttle: Mutex<f64>,
    wake: Condvar,
    outcome: Mutex<Option<Result<Value, Value>>>,
    done: Condvar,
}

impl Task {
    pub fn set_status(&self, status: Value) {
        *self.status.lock().unwrap() = status;
    }

    /// Requests per second; `f64::INFINITY` when unthrottled (`-1` on the wire).
    pub fn requests_per_second(&self) -> f64 {
        *self.throttle.lock().unwrap()
    }

    /// Sleeps until `docs` operations started at `batch_start` are within the throttle, waking
    /// early when rethrottled or cancelled. Returns the time spent waiting.
    pub fn throttle(&self, docs: usize, batch_start: Instant) -> Duration {
        let waited_from = Instant::now();
        let mut rps = self.throttle.lock().unwrap();
        loop {
            if self.is_cancelled() || !rps.is_finite() || docs == 0 {
                break;
            }
            let deadline = batch_start + Duration::from_secs_f64((docs as f64 / *rps).min(1e9));
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            rps = self.wake.wait_timeout(rps, deadline - now).unwrap().0;
        }
        waited_from.elapsed()
    }

    /// Marks the task cancelled and wakes it if it waits on its throttle. The flag is set and
    /// the waiter notified under the throttle lock, so a worker between its check of the flag
    /// and its wait cannot miss the wake-up.
    pub fn cancel(&self, reason: &str) {
        let _throttle = self.throttle.lock().unwrap();
        self.cancel.cancel(reason);
        self.wake.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn info_json(&self, node_id: &str) -> Value {
        let mut info = json!({
            "node": node_id,
            "id": self.id,
            "type": "transport",
            "action": self.action,
            "status": self.status.lock().unwrap().clone(),
            "description": self.description(),
            "start_time_in_millis": self.start_millis,
            "running_time_in_nanos": self.started.elapsed().as_nanos() as u64,
            "cancellable": true,
            "cancelled": self.cancel.is_marked_cancelled(),
            "headers": self.headers,
        });
        // ES's search tasks have no status (the field is left out).
        if self.action.starts_with("indices:data/read") && info["status"] == json!({}) {
            info.as_object_mut().map(|o| o.remove("status"));
        }
        if let Some(p) = self.parent {
            info["parent_task_id"] = json!(format!("{node_id}:{p}"));
        }
        info
    }
}

#[derive(Default)]
struct Registry {
    next: AtomicU64,
    running: Mutex<BTreeMap<u64, Arc<Task>>>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

/// Registers a task; it leaves the registry when `finish` is called.
pub fn register(action: &'static str, description: String, requests_per_second: f64) -> Arc<Task> {
    register_with(
        action,
        Description::Text(description),
        requests_per_second,
        CancelToken::new(),
        BTreeMap::new(),
        None,
    )
}

fn register_with(
    action: &'static str,
    description: Description,
    requests_per_second: f64,
    cancel: CancelToken,
    headers: BTreeMap<String, String>,
    parent: Option<u64>,
) -> Arc<Task> {
    let reg = registry();
    let id = reg.next.fetch_add(1, Ordering::Relaxed) + 1;
    let task = Arc::new(Task {
        id,
        action,
        description,
        start_millis: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        started: Instant::now(),
        status: Mutex::new(json!({})),
        cancel,
        headers,
        parent,
        throttle: Mutex::new(requests_per_second),
        wake: Condvar::new(),
        outcome: Mutex::new(None),
        done: Condvar::new(),
    });
    reg.running.lock().unwrap().insert(id, task.clone());
    task
}

/// Ends a task; with `store`, persists `{completed, task, response|error}` into `.tasks`.
pub fn finish(node: &Node, task: &Arc<Task>, outcome: Result<Value, Value>, store: bool) {
    if store {
        let node_id = crate::cluster::node_id(node);
        let mut doc = json!({"completed": true, "task": task.info_json(&node_id)});
        match &outcome {
            Ok(v) => doc["response"] = v.clone(),
            Err(e) => doc["error"] = e.clone(),
        }
        if let Err(e) = store_result(node, &format!("{node_id}:{}", task.id), &doc) {
            tracing::warn!(task = task.id, error = %e.reason, "could not store task result");
        }
    }
    *task.outcome.lock().unwrap() = Some(outcome);
    task.done.notify_all();
    registry().running.lock().unwrap().remove(&task.id);
}

fn store_result(node: &Node, id: &str, doc: &Value) -> EsResult<()> {
    let index = match node.get(TASKS_INDEX) {
        Some(i) => i,
        None => {
            let settings =
                json!({"index": {"number_of_shards": 1, "number_of_replicas": 0, "hidden": true}});
            let mappings = json!({"dynamic": false, "properties": {
                    "completed": {"type": "boolean"},
                    "task": {"properties": {
                        "action": {"type": "keyword"},
                        "node": {"type": "keyword"},
                        "id": {"type": "long"},
                        "type": {"type": "keyword"},
                        "start_time_in_millis": {"type": "long"},
                        "running_time_in_nanos": {"type": "long"},
                        "cancellable": {"type": "boolean"},
                        "description": {"type": "text"},
                    }},
            }});
            match node.create_index(TASKS_INDEX, &settings, &mappings) {
                Ok(i) => i,
                Err(e) if e.kind == "resource_already_exists_exception" => {
                    node.index(TASKS_INDEX)?
                }
                Err(e) => return Err(e),
            }
        }
    };
    let raw: Arc<[u8]> = serde_json::to_vec(doc).unwrap_or_default().into();
    let w = index.index_doc(Some(id), doc, raw, None, VersionReq::Internal, false)?;
    index.ensure_durable(w.shard, w.result.location)?;
    // Searchable at once, so a client that saw the task finish also finds its result.
    index.refresh()
}

fn parse_task_id(node: &Node, id: &str) -> EsResult<u64> {
    let bad = || EsError::illegal_argument(format!("malformed task id {id}"));
    let (node_part, num) = id.split_once(':').ok_or_else(bad)?;
    let n: u64 = num.parse().map_err(|_| bad())?;
    if node_part != crate::cluster::node_id(node) {
        return Err(task_missing(id));
    }
    Ok(n)
}

fn task_missing(id: &str) -> EsError {
    EsError::new(
        404,
        "resource_not_found_exception",
        format!("task [{id}] isn't running and hasn't stored its results"),
    )
}

fn running(n: u64) -> Option<Arc<Task>> {
    registry().running.lock().unwrap().get(&n).cloned()
}

/// `GET /_tasks/{task_id}` (`wait_for_completion`, `timeout`).
pub fn get(node: &Node, id: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let n = parse_task_id(node, id)?;
    let node_id = crate::cluster::node_id(node);
    if let Some(task) = running(n) {
        if !req.bool_param("wait_for_completion", false)? {
            return Ok(RestResponse::ok(
                json!({"completed": false, "task": task.info_json(&node_id)}),
            ));
        }
        let timeout = crate::cluster::parse_timeout(req, "timeout", Duration::from_secs(30))?;
        let guard = task.outcome.lock().unwrap();
        let (guard, waited) = task
            .done
            .wait_timeout_while(guard, timeout, |o| o.is_none())
            .unwrap();
        if waited.timed_out() {
            return Err(EsError::new(
                408,
                "elasticsearch_timeout_exception",
                format!("Timed out waiting for completion of task [{id}]"),
            ));
        }
        drop(guard);
    }
    // Finished: the stored result is the answer (as in Elasticsearch, whose task manager forgets
    // tasks that end and answers from the `.tasks` index).
    let stored = node
        .get(TASKS_INDEX)
        .map(|i| i.get_doc(id, None, true))
        .transpose()?
        .flatten();
    match stored {
        Some(doc) => Ok(RestResponse::ok(crate::rest::parse_json(&doc.source)?)),
        None => Err(task_missing(id)),
    }
}

/// `GET /_tasks` (`actions` filter, `detailed`).
pub fn list(node: &Node, req: &RestRequest) -> EsResult<RestResponse> {
    let node_id = crate::cluster::node_id(node);
    let actions = crate::rest::list_param(req.param("actions"));
    let detailed = req.bool_param("detailed", false)?;
    let mut tasks = serde_json::Map::new();
    for task in registry().running.lock().unwrap().values() {
        if !actions.is_empty()
            && !actions
                .iter()
                .any(|p| lode_engine::mapping::wildcard_match(p, task.action))
        {
            continue;
        }
        let mut info = task.info_json(&node_id);
        if !detailed {
            info.as_object_mut().map(|o| o.remove("status"));
            info.as_object_mut().map(|o| o.remove("description"));
        }
        tasks.insert(format!("{node_id}:{}", task.id), info);
    }
    Ok(RestResponse::ok(json!({
        "nodes": {
            node_id.clone(): {
                "name": node_id,
                "roles": ["data", "ingest", "master"],
                "tasks": tasks,
            }
        }
    })))
}

/// `POST /_tasks/{task_id}/_cancel`.
pub fn cancel(node: &Node, id: &str) -> EsResult<RestResponse> {
    let n = parse_task_id(node, id)?;
    let task = running(n).ok_or_else(|| task_missing(id))?;
    task.cancel(BY_USER);
    node_tasks_response(node, &task)
}

const BY_USER: &str = "by user request";

/// `POST /_tasks/_cancel` (`actions`, `parent_task_id`): cancels every matching task, answering
/// with the list of tasks it cancelled, as ES does.
pub fn cancel_matching(node: &Node, req: &RestRequest) -> EsResult<RestResponse> {
    let node_id = crate::cluster::node_id(node);
    let actions = crate::rest::list_param(req.param("actions"));
    let parent = req
        .param("parent_task_id")
        .map(|p| parse_task_id(node, p))
        .transpose()?;
    let tasks: Vec<Arc<Task>> = registry()
        .running
        .lock()
        .unwrap()
        .values()
        .filter(|t| {
            actions.is_empty()
                || actions
                    .iter()
                    .any(|p| lode_engine::mapping::wildcard_match(p, t.action))
        })
        .filter(|t| parent.is_none() || t.parent == parent)
        .cloned()
        .collect();
    let mut out = serde_json::Map::new();
    for task in &tasks {
        task.cancel(BY_USER);
        out.insert(format!("{node_id}:{}", task.id), task.info_json(&node_id));
    }
    if out.is_empty() {
        return Ok(RestResponse::ok(json!({"nodes": {}})));
    }
    Ok(RestResponse::ok(json!({
        "nodes": {
            node_id.clone(): {
                "name": node_id,
                "roles": ["data", "ingest", "master"],
                "tasks": out,
            }
        }
    })))
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Task>>> = const { RefCell::new(None) };
}

/// A search request's task (`_search`, `_count`, `_msearch`, scroll continuations), registered
/// by the HTTP layer while the request runs; it leaves the registry when dropped.
pub struct RequestTask {
    task: Arc<Task>,
}

impl RequestTask {
    pub fn token(&self) -> CancelToken {
        self.task.cancel.clone()
    }

    /// Runs the handler with this task (and its token) current on the thread.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let prev = CURRENT.with(|c| c.borrow_mut().replace(self.task.clone()));
        let out = CancelToken::run_current(Some(self.task.cancel.clone()), f);
        CURRENT.with(|c| *c.borrow_mut() = prev);
        out
    }
}

impl Drop for RequestTask {
    fn drop(&mut self) {
        *self.task.outcome.lock().unwrap() = Some(Ok(json!({})));
        self.task.done.notify_all();
        registry().running.lock().unwrap().remove(&self.task.id);
    }
}

/// ES's transport action of a REST API run as a cancellable task, if it is one.
fn search_action(api: &str) -> Option<&'static str> {
    Some(match api {
        // `_count` runs as a search in ES (RestCountAction).
        "search" | "count" => "indices:data/read/search",
        "msearch" => "indices:data/read/msearch",
        "scroll" => "indices:data/read/scroll",
        _ => return None,
    })
}

/// What a task's `description` says. A search's is written out only when `_tasks` shows it:
/// it re-serialises the request body, which every search would otherwise pay for.
pub enum Description {
    Text(String),
    Search {
        indices: String,
        search_type: Option<String>,
        body: Vec<u8>,
    },
}

impl Task {
    /// ES's `description` (a search's: `SearchRequest#getDescription`).
    pub fn description(&self) -> String {
        match &self.description {
            Description::Text(s) => s.clone(),
            Description::Search {
                indices,
                search_type,
                body,
            } => {
                let indices = if indices == "_all" { "" } else { indices };
                let search_type = search_type
                    .as_deref()
                    .unwrap_or("query_then_fetch")
                    .to_ascii_uppercase();
                let source = serde_json::from_slice::<Value>(body)
                    .ok()
                    .map(|v| v.to_string())
                    .unwrap_or_default();
                format!("indices[{indices}], search_type[{search_type}], source[{source}]")
            }
        }
    }
}

/// ES's `SearchRequest#getDescription`: `indices[a,b], search_type[QUERY_THEN_FETCH],
/// source[{...}]`, rendered when asked.
pub fn search_description(indices: &str, search_type: Option<&str>, body: &[u8]) -> Description {
    Description::Search {
        indices: indices.to_string(),
        search_type: search_type.map(str::to_string),
        body: body.to_vec(),
    }
}

/// Registers the task of a search-type request (`api` as in lode_api::url_params), or `None`
/// for other APIs. `segs` are the path segments; `opaque_id` the `X-Opaque-Id` header.
pub fn start_request_task(
    api: &str,
    segs: &[String],
    req: &RestRequest,
    opaque_id: Option<&str>,
) -> Option<RequestTask> {
    let action = search_action(api)?;
    let description = match api {
        "search" | "count" => {
            let indices = segs.first().filter(|s| !s.starts_with('_'));
            search_description(
                indices.map(String::as_str).unwrap_or(""),
                req.param("search_type"),
                &req.body,
            )
        }
        "msearch" => Description::Text(format!(
            "requests[{}], indices[]",
            req.body
                .split(|b| *b == b'\n')
                .filter(|l| l.iter().any(|b| !b.is_ascii_whitespace()))
                .count()
                / 2
        )),
        _ => Description::Text("scroll".to_string()),
    };
    let mut headers = BTreeMap::new();
    if let Some(id) = opaque_id {
        headers.insert("X-Opaque-Id".to_string(), id.to_string());
    }
    let task = register_with(
        action,
        description,
        f64::INFINITY,
        CancelToken::new(),
        headers,
        None,
    );
    Some(RequestTask { task })
}

/// A child task of the current request's task (an `_msearch` item): cancelled with its parent,
/// or on its own. `None` when the thread runs no task.
pub fn start_child(action: &'static str, description: Description) -> Option<RequestTask> {
    let parent = CURRENT.with(|c| c.borrow().clone())?;
    let task = register_with(
        action,
        description,
        f64::INFINITY,
        parent.cancel.child(),
        parent.headers.clone(),
        Some(parent.id),
    );
    Some(RequestTask { task })
}

/// Cancels every running task, as `_cancel` cancels one (node shutdown: by-query workers stop
/// at their next batch instead of writing on while the node flushes). Returns how many.
pub fn cancel_all() -> usize {
    let tasks: Vec<Arc<Task>> = registry()
        .running
        .lock()
        .unwrap()
        .values()
        .cloned()
        .collect();
    for task in &tasks {
        task.cancel("node shutdown");
    }
    tasks.len()
}

/// `POST /_delete_by_query/{task_id}/_rethrottle` (and `_update_by_query`, `_reindex`).
pub fn rethrottle(node: &Node, id: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let rps = crate::by_query::requests_per_second(req.param("requests_per_second"))?.ok_or_else(
        || {
            EsError::bad_request(
                "action_request_validation_exception",
                "Validation Failed: 1: requests_per_second must be set;",
            )
        },
    )?;
    let n = parse_task_id(node, id)?;
    let task = running(n).ok_or_else(|| task_missing(id))?;
    *task.throttle.lock().unwrap() = rps;
    task.wake.notify_all();
    node_tasks_response(node, &task)
}

fn node_tasks_response(node: &Node, task: &Task) -> EsResult<RestResponse> {
    let node_id = crate::cluster::node_id(node);
    Ok(RestResponse::ok(json!({
        "nodes": {
            node_id.clone(): {
                "name": node_id,
                "tasks": { format!("{node_id}:{}", task.id): task.info_json(&node_id) },
            }
        }
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_all_cancels_and_wakes_throttled_tasks() {
        // One document per 1000 s: without the wake-up, `throttle` would sleep for 1000 s.
        let task = register("indices:data/write/update/byquery", "test".into(), 0.001);
        let worker = task.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            worker.throttle(1, Instant::now());
            let _ = tx.send(());
        });
        assert!(cancel_all() >= 1);
        assert!(task.is_cancelled());
        rx.recv_timeout(Duration::from_secs(60))
            .expect("a cancelled task stops waiting on its throttle");
        registry().running.lock().unwrap().remove(&task.id);
    }
}

#[cfg(test)]
mod search_task_tests {
    use super::*;

    fn req(body: &str) -> RestRequest {
        RestRequest {
            doc_security: None,
            field_security: None,
            authorized: None,
            method: crate::rest::Method::Post,
            path: "/x/_search".into(),
            params: Default::default(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_search_task_is_listed_while_it_runs_and_its_children_cancel_with_it() {
        let r = req(r#"{"size": 0}"#);
        let t = start_request_task("search", &["x".into(), "_search".into()], &r, Some("op"))
            .expect("search is a task");
        let id = t.task.id;
        assert_eq!(t.task.action, "indices:data/read/search");
        assert_eq!(
            t.task.description(),
            r#"indices[x], search_type[QUERY_THEN_FETCH], source[{"size":0}]"#
        );
        assert_eq!(
            t.task.headers.get("X-Opaque-Id").map(String::as_str),
            Some("op")
        );
        assert!(running(id).is_some());
        let child = t.run(|| {
            assert!(CancelToken::current().is_some());
            start_child("indices:data/read/search", Description::Text("c".into())).expect("a child")
        });
        assert_eq!(child.task.parent, Some(id));
        t.task.cancel(BY_USER);
        assert!(child.task.is_cancelled());
        drop(child);
        drop(t);
        assert!(running(id).is_none());
        assert!(start_request_task("index", &[], &r, None).is_none());
    }
}

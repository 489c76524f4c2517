//! Elasticsearch's thread pools as admission control: every REST request is admitted by the
//! pool of its API (`search`, `write`, `get`, `management`, ...) before its handler runs.
//!
//! A pool has ES's name, type (`fixed` or `scaling`) and default sizes for the node's
//! processors (`DefaultBuiltInExecutorBuilders` in ES 8), overridable by the node settings
//! `thread_pool.{name}.size|queue_size` (fixed) and `thread_pool.{name}.core|max|keep_alive`
//! (scaling). At most `size` (`max`) requests of a pool run at once; the others wait in the
//! pool's queue, and a request that finds the queue full is refused with ES's 429
//! `es_rejected_execution_exception`. Scaling pools and `queue_size: -1` queue without bound.
//!
//! The bound is a [`tokio::sync::Semaphore`] (fair, so waiters run in arrival order) plus an
//! atomic count of waiters; the work itself still runs on Tokio's blocking threads. The
//! counters are the ones `_nodes/stats/thread_pool` and `_cat/thread_pool` report. Lode has no
//! threads per pool, so `threads` is the number of slots a Java pool would keep alive: every
//! slot ever used for a fixed pool (whose threads never time out), and for a scaling pool the
//! running slots, or at idle those kept below `core`.

use lode_engine::EsError;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fixed,
    Scaling,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Fixed => "fixed",
            Kind::Scaling => "scaling",
        }
    }
}

/// One pool: its configuration and live counters.
#[derive(Debug)]
pub struct Pool {
    pub name: &'static str,
    pub kind: Kind,
    /// Scaling: threads kept when idle. Fixed: the size.
    pub core: usize,
    /// Fixed: the size. Scaling: the most threads.
    pub max: usize,
    /// The queue's capacity; `-1` is unbounded.
    pub queue_size: i64,
    /// Scaling pools' `keep_alive`, as configured (no effect: Lode keeps no idle threads).
    pub keep_alive: Option<String>,
    node_name: String,
    permits: Arc<Semaphore>,
    queued: AtomicUsize,
    active: AtomicUsize,
    largest: AtomicUsize,
    rejected: AtomicU64,
    completed: AtomicU64,
}

/// A pool's counters, as `_nodes/stats/thread_pool` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    pub threads: usize,
    pub queue: usize,
    pub active: usize,
    pub rejected: u64,
    pub largest: usize,
    pub completed: u64,
}

/// A request running in a pool: holds one of its slots until dropped.
#[derive(Debug)]
pub struct Running {
    pool: Arc<Pool>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Before the permit is released (fields drop after this body), so `active` never
        // counts more than the pool's size.
        self.pool.active.fetch_sub(1, SeqCst);
        self.pool.completed.fetch_add(1, SeqCst);
    }
}

/// Decrements the queue count when a queued request leaves it: admitted, or dropped while
/// waiting (its client went away).
struct Queued<'a>(&'a Pool);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.queued.fetch_sub(1, SeqCst);
    }
}

impl Pool {
    fn new(
        node_name: &str,
        name: &'static str,
        kind: Kind,
        core: usize,
        max: usize,
        queue_size: i64,
        keep_alive: Option<String>,
    ) -> Pool {
        Pool {
            name,
            kind,
            core,
            max,
            queue_size,
            keep_alive,
            node_name: node_name.to_string(),
            permits: Arc::new(Semaphore::new(max)),
            queued: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            largest: AtomicUsize::new(0),
            rejected: AtomicU64::new(0),
            completed: AtomicU64::new(0),
        }
    }

    /// Admits one task: runs it at once when a slot is free, else queues it until one is, or
    /// refuses it with ES's 429 when the queue is full. `task` names it in the error.
    pub async fn admit(self: &Arc<Self>, task: &str) -> Result<Running, EsError> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                if self.queue_size >= 0 {
                    let cap = self.queue_size as usize;
                    if self
                        .queued
                        .fetch_update(SeqCst, SeqCst, |q| (q < cap).then_some(q + 1))
                        .is_err()
                    {
                        self.rejected.fetch_add(1, SeqCst);
                        return Err(self.rejection(task));
                    }
                } else {
                    self.queued.fetch_add(1, SeqCst);
                }
                let _queued = Queued(self);
                self.permits
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("pool semaphores are never closed")
            }
        };
        let now = self.active.fetch_add(1, SeqCst) + 1;
        self.largest.fetch_max(now, SeqCst);
        Ok(Running {
            pool: self.clone(),
            _permit: permit,
        })
    }

    /// ES's `EsRejectedExecutionException` for a task refused by this pool, in the shape of
    /// ES's message (`EsAbortPolicy`: "rejected execution of TASK on EXECUTOR").
    fn rejection(&self, task: &str) -> EsError {
        let s = self.stats();
        let capacity = if self.queue_size >= 0 {
            format!("queue capacity = {}, ", self.queue_size)
        } else {
            String::new()
        };
        EsError::new(
            429,
            "es_rejected_execution_exception",
            format!(
                "rejected execution of {task} on EsThreadPoolExecutor[name = {}/{}, {capacity}\
                 lode.ThreadPool[Running, pool size = {}, active threads = {}, queued tasks = {}, \
                 completed tasks = {}]]",
                self.node_name, self.name, s.threads, s.active, s.queue, s.completed
            ),
        )
    }

    pub fn stats(&self) -> PoolStats {
        let active = self.active.load(SeqCst);
        let largest = self.largest.load(SeqCst);
        let threads = match self.kind {
            Kind::Fixed => largest,
            Kind::Scaling => active.max(largest.min(self.core)),
        };
        PoolStats {
            threads,
            queue: self.queued.load(SeqCst),
            active,
            rejected: self.rejected.load(SeqCst),
            largest,
            completed: self.completed.load(SeqCst),
        }
    }

    /// The pool's `_nodes/thread_pool` info.
    pub fn info_json(&self) -> Value {
        match self.kind {
            Kind::Fixed => {
                json!({"type": "fixed", "size": self.max, "queue_size": self.queue_size})
            }
            Kind::Scaling => json!({
                "type": "scaling",
                "core": self.core,
                "max": self.max,
                "keep_alive": self.keep_alive.clone().unwrap_or_default(),
                "queue_size": -1
            }),
        }
    }
}

/// The node's pools, by name.
#[derive(Debug)]
pub struct ThreadPools {
    pools: BTreeMap<&'static str, Arc<Pool>>,
}

pub const SEARCH: &str = "search";
pub const WRITE: &str = "write";
pub const GET: &str = "get";
pub const MANAGEMENT: &str = "management";
pub const GENERIC: &str = "generic";

/// The pool an API's requests run on, by Elasticsearch's API name (`url_params.rs`).
pub fn pool_for_api(api: &str) -> &'static str {
    match api {
        "search" | "count" | "msearch" | "scroll" => SEARCH,
        "index" | "bulk" | "delete" | "update" => WRITE,
        "get" | "get_source" | "mget" => GET,
        // `TransportAnalyzeIndexDiskUsageAction` runs on ES's `analyze` pool too.
        "indices.analyze" | "indices.disk_usage" => "analyze",
        "indices.refresh" => "refresh",
        "indices.flush" => "flush",
        "indices.forcemerge" => "force_merge",
        // Long-running coordination and waits (by-query tasks, waiting on tasks, health's
        // `wait_for_*`, which ES waits for without a thread): ES's large `generic` pool, so
        // that a wait never holds one of the few `management` slots.
        "delete_by_query" | "update_by_query" | "reindex" | "reindex_rethrottle" | "tasks.list"
        | "tasks.get" | "tasks.cancel" | "cluster.health" => GENERIC,
        _ => MANAGEMENT,
    }
}

/// `boundedBy(value, min, max)` of ES's `ThreadPool`.
fn bounded(v: usize, min: usize, max: usize) -> usize {
    v.clamp(min, max)
}

/// One pool's defaults: (name, kind, core, max, queue_size, keep_alive).
type Default = (&'static str, Kind, usize, usize, i64, Option<&'static str>);

/// ES 8's defaults for a node with `n` allocated processors.
fn defaults(n: usize) -> Vec<Default> {
    let n = n.max(1);
    let half = n.div_ceil(2);
    let search_or_get = n * 3 / 2 + 1;
    use Kind::*;
    vec![
        ("analyze", Fixed, 1, 1, 16, None),
        ("flush", Scaling, 1, bounded(half, 1, 5), -1, Some("5m")),
        (
            "force_merge",
            Fixed,
            (n / 8).max(1),
            (n / 8).max(1),
            -1,
            None,
        ),
        (
            GENERIC,
            Scaling,
            4,
            bounded(4 * n, 128, 512),
            -1,
            Some("30s"),
        ),
        (GET, Fixed, search_or_get, search_or_get, 1000, None),
        (MANAGEMENT, Scaling, 1, bounded(n, 1, 5), -1, Some("5m")),
        ("refresh", Scaling, 1, bounded(half, 1, 10), -1, Some("5m")),
        (SEARCH, Fixed, search_or_get, search_or_get, 1000, None),
        (WRITE, Fixed, n, n, 10_000, None),
    ]
}

fn parse_int(key: &str, v: &str) -> Result<i64, String> {
    v.trim()
        .parse::<i64>()
        .ok()
        .filter(|n| i32::try_from(*n).is_ok())
        .ok_or_else(|| format!("Failed to parse value [{v}] for setting [{key}]"))
}

fn at_least(key: &str, v: &str, n: i64, min: i64) -> Result<usize, String> {
    if n < min {
        return Err(format!(
            "Failed to parse value [{v}] for setting [{key}] must be >= {min}"
        ));
    }
    Ok(n as usize)
}

impl ThreadPools {
    /// ES's pools for `processors` processors, with the node's `thread_pool.*` settings
    /// (`settings` may hold other keys; those are not looked at). An unknown pool or key, or a
    /// bad value, is an error with ES's message.
    pub fn from_settings(
        node_name: &str,
        processors: usize,
        settings: &BTreeMap<String, String>,
    ) -> Result<ThreadPools, String> {
        let mut pools = BTreeMap::new();
        let all = defaults(processors);
        for (key, v) in settings {
            let Some(rest) = key.strip_prefix("thread_pool.") else {
                continue;
            };
            let known = rest.split_once('.').is_some_and(|(pool, k)| {
                all.iter().any(|d| {
                    d.0 == pool
                        && match d.1 {
                            Kind::Fixed => matches!(k, "size" | "queue_size"),
                            Kind::Scaling => matches!(k, "core" | "max" | "keep_alive"),
                        }
                })
            });
            if !known {
                return Err(format!("unknown setting [{key}]"));
            }
            if key.ends_with(".keep_alive") {
                lode_engine::settings::parse_time(v, key).map_err(|e| e.reason)?;
            }
        }
        for (name, kind, core, max, queue, keep_alive) in all {
            let get = |k: &str| {
                let key = format!("thread_pool.{name}.{k}");
                settings.get(&key).map(|v| (key, v.clone()))
            };
            let (core, max, queue) = match kind {
                Kind::Fixed => {
                    let size = match get("size") {
                        None => max,
                        Some((key, v)) => {
                            let n = parse_int(&key, &v)?;
                            let size = at_least(&key, &v, n, 1)?;
                            // ES bounds the write pool by the processors + 1.
                            if name == WRITE && size > processors.max(1) + 1 {
                                return Err(format!(
                                    "Failed to parse value [{v}] for setting [{key}] must be <= {}",
                                    processors.max(1) + 1
                                ));
                            }
                            size
                        }
                    };
                    let queue = match get("queue_size") {
                        None => queue,
                        Some((key, v)) => parse_int(&key, &v)?.max(-1),
                    };
                    (size, size, queue)
                }
                Kind::Scaling => {
                    let core = match get("core") {
                        None => core,
                        Some((key, v)) => at_least(&key, &v, parse_int(&key, &v)?, 0)?,
                    };
                    let max = match get("max") {
                        None => max.max(core),
                        Some((key, v)) => at_least(&key, &v, parse_int(&key, &v)?, 1)?,
                    };
                    if core > max {
                        return Err(format!(
                            "core threads [{core}] of thread pool [{name}] must be <= max threads [{max}]"
                        ));
                    }
                    (core, max, -1)
                }
            };
            let keep_alive = get("keep_alive")
                .map(|(_, v)| v)
                .or(keep_alive.map(str::to_string));
            pools.insert(
                name,
                Arc::new(Pool::new(
                    node_name, name, kind, core, max, queue, keep_alive,
                )),
            );
        }
        Ok(ThreadPools { pools })
    }

    /// ES's default pools for this machine's processors.
    pub fn with_defaults(node_name: &str) -> ThreadPools {
        ThreadPools::from_settings(node_name, processors(), &BTreeMap::new())
            .expect("the defaults are valid")
    }

    /// The pool of this name; `management` for an unknown one.
    pub fn get(&self, name: &str) -> &Arc<Pool> {
        self.pools
            .get(name)
            .or_else(|| self.pools.get(MANAGEMENT))
            .expect("the management pool exists")
    }

    /// Every pool, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Pool>> {
        self.pools.values()
    }

    /// `_nodes/stats` `thread_pool`.
    pub fn stats_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        for p in self.iter() {
            let s = p.stats();
            m.insert(
                p.name.into(),
                json!({
                    "threads": s.threads,
                    "queue": s.queue,
                    "active": s.active,
                    "rejected": s.rejected,
                    "largest": s.largest,
                    "completed": s.completed
                }),
            );
        }
        Value::Object(m)
    }

    /// `_nodes` `thread_pool` info.
    pub fn info_json(&self) -> Value {
        Value::Object(
            self.iter()
                .map(|p| (p.name.to_string(), p.info_json()))
                .collect(),
        )
    }
}

/// The node's allocated processors (cgroup-aware, as ES's).
pub fn processors() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pools(settings: &[(&str, &str)]) -> Result<ThreadPools, String> {
        let s = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ThreadPools::from_settings("n1", 4, &s)
    }

    #[test]
    fn defaults_follow_elasticsearch_sizing() {
        let p = pools(&[]).unwrap();
        let search = p.get("search");
        assert_eq!(
            (search.kind, search.max, search.queue_size),
            (Kind::Fixed, 7, 1000)
        );
        assert_eq!((p.get("get").max, p.get("get").queue_size), (7, 1000));
        assert_eq!((p.get("write").max, p.get("write").queue_size), (4, 10_000));
        let m = p.get("management");
        assert_eq!(
            (m.kind, m.core, m.max, m.queue_size),
            (Kind::Scaling, 1, 4, -1)
        );
        assert_eq!(p.get("refresh").max, 2);
        assert_eq!(p.get("flush").max, 2);
        assert_eq!(p.get("force_merge").max, 1);
        assert_eq!(p.get("generic").max, 128);
        assert_eq!(p.get("nope").name, "management");
        let names: Vec<&str> = p.iter().map(|p| p.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn settings_override_and_are_validated() {
        let p = pools(&[
            ("thread_pool.search.size", "1"),
            ("thread_pool.search.queue_size", "2"),
            ("thread_pool.management.max", "2"),
            ("thread_pool.management.keep_alive", "1m"),
            ("other.setting", "x"),
        ])
        .unwrap();
        assert_eq!((p.get("search").max, p.get("search").queue_size), (1, 2));
        assert_eq!(p.get("management").max, 2);
        assert_eq!(p.get("management").info_json()["keep_alive"], "1m");
        assert_eq!(
            pools(&[("thread_pool.search.size", "0")]).err().unwrap(),
            "Failed to parse value [0] for setting [thread_pool.search.size] must be >= 1"
        );
        assert_eq!(
            pools(&[("thread_pool.search.size", "x")]).err().unwrap(),
            "Failed to parse value [x] for setting [thread_pool.search.size]"
        );
        assert_eq!(
            pools(&[("thread_pool.write.size", "6")]).err().unwrap(),
            "Failed to parse value [6] for setting [thread_pool.write.size] must be <= 5"
        );
        assert_eq!(
            pools(&[("thread_pool.nope.size", "1")]).err().unwrap(),
            "unknown setting [thread_pool.nope.size]"
        );
        assert_eq!(
            pools(&[("thread_pool.management.size", "1")])
                .err()
                .unwrap(),
            "unknown setting [thread_pool.management.size]"
        );
        assert_eq!(
            pools(&[("thread_pool.search.queue_size", "-5")])
                .unwrap()
                .get("search")
                .queue_size,
            -1
        );
    }

    #[tokio::test]
    async fn a_full_queue_rejects_and_counters_follow() {
        let p = pools(&[
            ("thread_pool.search.size", "2"),
            ("thread_pool.search.queue_size", "1"),
        ])
        .unwrap();
        let search = p.get("search").clone();
        let a = search.admit("t").await.unwrap();
        let b = search.admit("t").await.unwrap();
        assert_eq!(search.stats().active, 2);
        // the third waits in the queue
        let s2 = search.clone();
        let queued = tokio::spawn(async move { s2.admit("t").await.map(|_r| ()) });
        while search.stats().queue == 0 {
            tokio::task::yield_now().await;
        }
        // the fourth finds the queue full
        let e = search.admit("[GET /i/_search]").await.unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (429, "es_rejected_execution_exception")
        );
        assert_eq!(
            e.reason,
            "rejected execution of [GET /i/_search] on EsThreadPoolExecutor[name = n1/search, \
             queue capacity = 1, lode.ThreadPool[Running, pool size = 2, active threads = 2, \
             queued tasks = 1, completed tasks = 0]]"
        );
        assert_eq!(search.stats().rejected, 1);
        drop(a);
        queued.await.unwrap().unwrap();
        drop(b);
        assert_eq!(
            search.stats(),
            PoolStats {
                threads: 2,
                queue: 0,
                active: 0,
                rejected: 1,
                largest: 2,
                completed: 3
            }
        );
    }

    #[tokio::test]
    async fn a_dropped_waiter_leaves_the_queue_and_unbounded_queues_never_reject() {
        let p = pools(&[
            ("thread_pool.search.size", "1"),
            ("thread_pool.search.queue_size", "1"),
            ("thread_pool.management.max", "1"),
        ])
        .unwrap();
        let search = p.get("search").clone();
        let held = search.admit("t").await.unwrap();
        let s2 = search.clone();
        let waiter = tokio::spawn(async move { s2.admit("t").await.map(|_r| ()) });
        while search.stats().queue == 0 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(search.stats().queue, 0);
        // the queue has room again
        let s3 = search.clone();
        let next = tokio::spawn(async move { s3.admit("t").await.map(|_r| ()) });
        while search.stats().queue == 0 {
            tokio::task::yield_now().await;
        }
        drop(held);
        next.await.unwrap().unwrap();
        assert_eq!(search.stats().rejected, 0);

        let m = p.get("management").clone();
        let held = m.admit("t").await.unwrap();
        let mut waiting = Vec::new();
        for _ in 0..50 {
            let m = m.clone();
            waiting.push(tokio::spawn(async move { m.admit("t").await.map(|_r| ()) }));
        }
        while m.stats().queue < 50 {
            tokio::task::yield_now().await;
        }
        assert_eq!(m.stats().threads, 1);
        drop(held);
        for w in waiting {
            w.await.unwrap().unwrap();
        }
        assert_eq!((m.stats().rejected, m.stats().completed), (0, 51));
    }

    #[test]
    fn apis_map_to_their_pools() {
        assert_eq!(pool_for_api("msearch"), "search");
        assert_eq!(pool_for_api("bulk"), "write");
        assert_eq!(pool_for_api("mget"), "get");
        assert_eq!(pool_for_api("cat"), "management");
        assert_eq!(pool_for_api("indices.refresh"), "refresh");
    }
}

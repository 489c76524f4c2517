//! Administrative requests to the target, outside the measured load: server info, index
//! creation, refresh, counts, `_stats` counters, `_nodes/stats` resources, force merge.
//!
//! Only standard Elasticsearch endpoints are used, so the same calls work against
//! Elasticsearch, OpenSearch and Lode.

use crate::http::{Connection, Request, Target};
use anyhow::{bail, Context, Result};
use hyper::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A connection for administrative calls.
pub struct Control {
    target: Arc<Target>,
    conn: tokio::sync::Mutex<Connection>,
}

/// Cluster-wide operation counters from `GET /_stats` (`_all.total`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// `search.query_total`: shard-level query phases (one per `_search` on a 1-shard index).
    pub search_query_total: u64,
    /// `indexing.index_total`: documents indexed.
    pub indexing_index_total: u64,
    /// `get.total`: real-time gets (`GET /index/_doc/id`).
    pub get_total: u64,
}

impl Counters {
    /// `self - before`, per counter (saturating).
    pub fn delta(&self, before: &Counters) -> Counters {
        Counters {
            search_query_total: self
                .search_query_total
                .saturating_sub(before.search_query_total),
            indexing_index_total: self
                .indexing_index_total
                .saturating_sub(before.indexing_index_total),
            get_total: self.get_total.saturating_sub(before.get_total),
        }
    }
}

/// One reading of `GET /_nodes/stats` summed over nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeReading {
    /// `process.cpu.total_in_millis`.
    pub cpu_total_ms: Option<u64>,
    /// `process.timestamp`: when the server took its process reading (Elasticsearch and
    /// OpenSearch cache it for up to a second), epoch ms, the largest over nodes.
    pub process_timestamp_ms: Option<u64>,
    /// `process.mem.resident_in_bytes` (reported by Lode; Elasticsearch and OpenSearch do not
    /// report the resident set size).
    pub rss_bytes: Option<u64>,
    /// `jvm.mem.heap_used_in_bytes` (JVM servers).
    pub heap_used_bytes: Option<u64>,
    /// `indices.store.size_in_bytes`: index size on disk.
    pub store_bytes: Option<u64>,
    /// `fs.total.available_in_bytes`.
    pub fs_available_bytes: Option<u64>,
    /// `indices.segments.count`.
    pub segments: Option<u64>,
    /// `indices.refresh.total`.
    pub refresh_total: Option<u64>,
    /// `indices.merges.total`.
    pub merges_total: Option<u64>,
    /// `indices.merges.current`.
    pub merges_current: Option<u64>,
}

fn sum_nodes(nodes: &serde_json::Map<String, Value>, ptr: &str) -> Option<u64> {
    let vals: Vec<u64> = nodes
        .values()
        .filter_map(|n| n.pointer(ptr).and_then(Value::as_u64))
        .collect();
    (!vals.is_empty()).then(|| vals.iter().sum())
}

impl NodeReading {
    /// Extracts the fields from a `_nodes/stats` response.
    pub fn from_json(v: &Value) -> Option<NodeReading> {
        let nodes = v.get("nodes")?.as_object()?;
        let r = NodeReading {
            cpu_total_ms: sum_nodes(nodes, "/process/cpu/total_in_millis"),
            process_timestamp_ms: nodes
                .values()
                .filter_map(|n| n.pointer("/process/timestamp").and_then(Value::as_u64))
                .max(),
            rss_bytes: sum_nodes(nodes, "/process/mem/resident_in_bytes"),
            heap_used_bytes: sum_nodes(nodes, "/jvm/mem/heap_used_in_bytes"),
            store_bytes: sum_nodes(nodes, "/indices/store/size_in_bytes"),
            fs_available_bytes: sum_nodes(nodes, "/fs/total/available_in_bytes"),
            segments: sum_nodes(nodes, "/indices/segments/count"),
            refresh_total: sum_nodes(nodes, "/indices/refresh/total"),
            merges_total: sum_nodes(nodes, "/indices/merges/total"),
            merges_current: sum_nodes(nodes, "/indices/merges/current"),
        };
        (r != NodeReading::default()).then_some(r)
    }
}

const CALL_TIMEOUT: Duration = Duration::from_secs(120);

impl Control {
    /// A control connection to `target`.
    pub fn new(target: Arc<Target>) -> Control {
        Control {
            conn: tokio::sync::Mutex::new(Connection::new(target.clone(), true)),
            target,
        }
    }

    /// The target URL.
    pub fn url(&self) -> &str {
        &self.target.url
    }

    /// Sends a request; returns the status and the body parsed as JSON (`Null` if it is not).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        timeout: Option<Duration>,
    ) -> Result<(u16, Value)> {
        let req = Request::json(method, path, body.unwrap_or_default());
        let mut conn = self.conn.lock().await;
        let resp = conn
            .send_timeout(&req, timeout.or(Some(CALL_TIMEOUT)))
            .await
            .with_context(|| format!("{} {}{}", req.method, self.target.url, path))?;
        let v = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
        Ok((resp.status, v))
    }

    /// Like [`Control::call`], failing on a non-2xx status.
    pub async fn call_ok(&self, method: Method, path: &str, body: Option<String>) -> Result<Value> {
        let (status, v) = self.call(method.clone(), path, body, None).await?;
        if !(200..300).contains(&status) {
            bail!("{method} {path}: HTTP {status}: {v}");
        }
        Ok(v)
    }

    /// `GET /`: distribution, version and node name, e.g. `opensearch 2.19.1 (node-1)`.
    pub async fn server_name(&self) -> Option<String> {
        let (status, v) = self.call(Method::GET, "/", None, None).await.ok()?;
        if status != 200 {
            return None;
        }
        let version = v.pointer("/version/number")?.as_str()?;
        let dist = v
            .pointer("/version/distribution")
            .and_then(Value::as_str)
            .unwrap_or("elasticsearch");
        match v.get("name").and_then(Value::as_str) {
            Some(node) => Some(format!("{dist} {version} ({node})")),
            None => Some(format!("{dist} {version}")),
        }
    }

    /// Operation counters of all indices.
    pub async fn counters(&self) -> Result<Counters> {
        let (status, mut v) = self
            .call(Method::GET, "/_stats/search,indexing,get", None, None)
            .await?;
        if !(200..300).contains(&status) {
            v = self.call_ok(Method::GET, "/_stats", None).await?;
        }
        let total = v
            .pointer("/_all/total")
            .context("_stats response without _all.total")?;
        let get = |p: &str| total.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        Ok(Counters {
            search_query_total: get("/search/query_total"),
            indexing_index_total: get("/indexing/index_total"),
            get_total: get("/get/total"),
        })
    }

    /// Resource reading from `_nodes/stats`, `None` where the target does not expose it.
    pub async fn node_reading(&self) -> Option<NodeReading> {
        let (status, v) = self
            .call(
                Method::GET,
                "/_nodes/stats/process,jvm,fs,indices",
                None,
                Some(Duration::from_secs(5)),
            )
            .await
            .ok()?;
        if !(200..300).contains(&status) {
            return None;
        }
        NodeReading::from_json(&v)
    }

    /// `GET /{index}/_count`.
    pub async fn count(&self, index: &str) -> Result<u64> {
        let v = self
            .call_ok(Method::GET, &format!("/{index}/_count"), None)
            .await?;
        v["count"].as_u64().context("_count without count")
    }

    /// `POST /{index}/_refresh`.
    pub async fn refresh(&self, index: &str) -> Result<()> {
        self.call_ok(Method::POST, &format!("/{index}/_refresh"), None)
            .await
            .map(drop)
    }

    /// Deletes `index` if it exists and creates it with `body` (settings + mappings).
    pub async fn recreate_index(&self, index: &str, body: &str) -> Result<()> {
        let (status, v) = self
            .call(Method::DELETE, &format!("/{index}"), None, None)
            .await?;
        if !(200..300).contains(&status) && status != 404 {
            bail!("DELETE /{index}: HTTP {status}: {v}");
        }
        self.call_ok(Method::PUT, &format!("/{index}"), Some(body.to_string()))
            .await
            .map(drop)
    }

    /// `POST /{index}/_forcemerge?max_num_segments=1` (waits for the merge).
    pub async fn force_merge(&self, index: &str) -> Result<()> {
        let path = format!("/{index}/_forcemerge?max_num_segments=1");
        let (status, v) = self
            .call(Method::POST, &path, None, Some(Duration::from_secs(3600)))
            .await?;
        if !(200..300).contains(&status) {
            bail!("POST {path}: HTTP {status}: {v}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_reading_sums_nodes_and_tolerates_missing_fields() {
        let v: Value = serde_json::json!({"nodes": {
            "a": {"process": {"cpu": {"total_in_millis": 100}, "mem": {"resident_in_bytes": 10}},
                  "indices": {"store": {"size_in_bytes": 5}}},
            "b": {"process": {"cpu": {"total_in_millis": 50}},
                  "jvm": {"mem": {"heap_used_in_bytes": 7}}}
        }});
        let r = NodeReading::from_json(&v).unwrap();
        assert_eq!(r.process_timestamp_ms, None);
        assert_eq!(r.cpu_total_ms, Some(150));
        assert_eq!(r.rss_bytes, Some(10));
        assert_eq!(r.heap_used_bytes, Some(7));
        assert_eq!(r.store_bytes, Some(5));
        assert_eq!(r.segments, None);
        assert!(NodeReading::from_json(&serde_json::json!({"nodes": {}})).is_none());
        assert!(NodeReading::from_json(&serde_json::json!({"error": "x"})).is_none());
    }

    #[test]
    fn counter_deltas() {
        let a = Counters {
            search_query_total: 10,
            indexing_index_total: 5,
            get_total: 1,
        };
        let b = Counters {
            search_query_total: 25,
            indexing_index_total: 5,
            get_total: 3,
        };
        assert_eq!(
            b.delta(&a),
            Counters {
                search_query_total: 15,
                indexing_index_total: 0,
                get_total: 2
            }
        );
    }
}

//! Numbers for metrics exporters (`GET /_prometheus/metrics`, rendered in `lode-http`): the
//! per-index figures `GET _stats` reports and the process figures `GET _nodes/stats` reports,
//! in raw units (nanoseconds, bytes), taken from the same code so the two never disagree.

#![allow(clippy::result_large_err)] // EsError is the project-wide error type (engine).

use crate::cluster::{self, Expand};
use crate::rest::RestRequest;
use crate::stats::{self, StatsOptions};
use lode_engine::{EsResult, Node};

/// One index's numbers, summed over its primaries, as `GET {index}/_stats` reports them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexMetrics {
    pub index: String,
    pub docs: u64,
    pub docs_deleted: u64,
    pub store_bytes: u64,
    pub segments: u64,
    pub index_total: u64,
    pub index_time_ns: u64,
    pub index_failed: u64,
    pub delete_total: u64,
    pub delete_time_ns: u64,
    pub query_total: u64,
    pub query_time_ns: u64,
    pub fetch_total: u64,
    pub fetch_time_ns: u64,
    pub refresh_total: u64,
    pub refresh_time_ns: u64,
    pub flush_total: u64,
    pub flush_time_ns: u64,
    pub merge_total: u64,
    pub merge_docs: u64,
    pub merge_time_ns: u64,
    pub translog_operations: u64,
    pub translog_bytes: u64,
    /// Lode has no node query cache in Elasticsearch's sense (see docs/compatibility.md):
    /// these are the zeros `_stats.query_cache` reports.
    pub query_cache_bytes: u64,
    pub query_cache_hits: u64,
    pub query_cache_misses: u64,
    pub query_cache_evictions: u64,
    pub request_cache_bytes: u64,
    pub request_cache_hits: u64,
    pub request_cache_misses: u64,
    pub request_cache_evictions: u64,
}

/// Every index `GET _stats` reports (open, not hidden), sorted by name. Reads the shards'
/// counters, searchers, translog sizes and store sizes; takes no write lock.
pub fn index_metrics(node: &Node) -> EsResult<Vec<IndexMetrics>> {
    let mut list = cluster::resolve_indices(node, None, Expand::OPEN, true, true)?;
    list.retain(|i| !i.is_closed());
    list.sort_by(|a, b| a.name.cmp(&b.name));
    let opts = StatsOptions::default();
    Ok(list
        .iter()
        .map(|idx| {
            let n = stats::aggregate_indices(std::slice::from_ref(idx), &opts);
            IndexMetrics {
                index: idx.name.clone(),
                docs: n.docs_count,
                docs_deleted: n.docs_deleted,
                store_bytes: n.store_bytes,
                segments: n.segments,
                index_total: n.index_total,
                index_time_ns: n.index_time_ns,
                index_failed: n.index_failed,
                delete_total: n.delete_total,
                delete_time_ns: n.delete_time_ns,
                query_total: n.query_total,
                query_time_ns: n.query_time_ns,
                fetch_total: n.fetch_total,
                fetch_time_ns: n.fetch_time_ns,
                refresh_total: n.refresh_total,
                refresh_time_ns: n.refresh_time_ns,
                flush_total: n.flush_total,
                flush_time_ns: n.flush_time_ns,
                merge_total: n.merge_total,
                merge_docs: n.merge_docs,
                merge_time_ns: n.merge_time_ns,
                translog_operations: n.translog_ops,
                translog_bytes: n.translog_bytes,
                query_cache_bytes: 0,
                query_cache_hits: 0,
                query_cache_misses: 0,
                query_cache_evictions: 0,
                request_cache_bytes: n.request_cache.memory_bytes,
                request_cache_hits: n.request_cache.hits,
                request_cache_misses: n.request_cache.misses,
                request_cache_evictions: n.request_cache.evictions,
            }
        })
        .collect())
}

/// The process's numbers, as `_nodes/stats.process` reads them from `/proc/self` (zeros on a
/// system without `/proc`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessMetrics {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    pub max_fds: u64,
    pub start_time_seconds: f64,
    pub threads: u64,
}

pub fn process_metrics() -> ProcessMetrics {
    let p = cluster::read_process();
    ProcessMetrics {
        cpu_seconds: p.cpu_ms as f64 / 1000.0,
        resident_bytes: p.resident_bytes,
        virtual_bytes: p.virtual_bytes,
        open_fds: p.open_fds,
        max_fds: p.max_fds,
        start_time_seconds: p.start_time_secs,
        threads: p.threads,
    }
}

/// Query parameters a metrics endpoint accepts: Elasticsearch's global ones only (the
/// exposition format has no options).
pub fn check_params(req: &RestRequest) -> EsResult<()> {
    crate::url_params::PROMETHEUS.check(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::Method;
    use serde_json::{json, Value};

    #[test]
    fn index_metrics_match_the_documents() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        node.create_index("b-idx", &Value::Null, &Value::Null)
            .unwrap();
        node.create_index("a-idx", &Value::Null, &Value::Null)
            .unwrap();
        node.create_index("hid", &json!({"index": {"hidden": true}}), &Value::Null)
            .unwrap();
        let m = index_metrics(&node).unwrap();
        let names: Vec<&str> = m.iter().map(|i| i.index.as_str()).collect();
        assert_eq!(names, vec!["a-idx", "b-idx"], "open, not hidden, sorted");
        assert!(m.iter().all(|i| i.docs == 0 && i.query_cache_hits == 0));
        // An empty translog still counts its header, as `_stats` reports it.
        assert!(m[0].translog_bytes > 0);
    }

    #[test]
    fn process_metrics_read_proc() {
        let p = process_metrics();
        if std::path::Path::new("/proc/self/stat").exists() {
            assert!(p.resident_bytes > 0 && p.virtual_bytes >= p.resident_bytes);
            assert!(p.open_fds > 0 && p.max_fds >= p.open_fds);
            assert!(p.threads >= 1);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64();
            assert!(p.start_time_seconds > 1.0e9 && p.start_time_seconds <= now + 1.0);
        }
    }

    #[test]
    fn only_global_parameters() {
        let req = |params: &[(&str, &str)]| RestRequest {
            doc_security: None,
            field_security: None,
            authorized: None,
            method: Method::Get,
            path: "/_prometheus/metrics".into(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        };
        assert!(check_params(&req(&[("pretty", "")])).is_ok());
        let e = check_params(&req(&[("prety", "")])).unwrap_err();
        assert_eq!(e.status, 400);
        assert_eq!(e.reason, "request [/_prometheus/metrics] contains unrecognized parameter: [prety] -> did you mean [pretty]?");
    }
}

//! `"profile": true`: Elasticsearch 8's `profile.shards[]` from what the phases measured —
//! the query tree (`lode_query::profile`), the collector, the aggregations
//! (`lode_aggs`'s profiler) and the fetch phase.

use lode_query::profile::ProfileNode;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// What one shard's query phase measured.
pub struct ShardQueryProfile {
    /// The index's position among the search's targets.
    pub index: usize,
    pub shard: usize,
    pub query: Arc<ProfileNode>,
    /// Planning the query for the shard (ES's rewrite).
    pub rewrite_nanos: u64,
    pub collector: &'static str,
    pub reason: &'static str,
    pub collector_nanos: u64,
}

/// The fetch phase's timings per (index position, shard): nanoseconds and counts of loading
/// stored fields, parsing `_source`, and the whole of each hit's fetch.
#[derive(Default)]
pub struct FetchProfiles(HashMap<(usize, usize), [u64; 6]>);

impl FetchProfiles {
    pub fn record(&mut self, shard: (usize, usize), stored: u64, source: Option<u64>, total: u64) {
        let t = self.0.entry(shard).or_default();
        t[0] += stored;
        t[1] += 1;
        if let Some(s) = source {
            t[2] += s;
            t[3] += 1;
        }
        t[4] += total;
        t[5] += 1;
    }
}

fn fetch_json(t: &[u64; 6]) -> Value {
    let process = t[4].saturating_sub(t[0] + t[2]);
    json!({
        "type": "fetch",
        "description": "",
        "time_in_nanos": t[4],
        "breakdown": {
            "load_stored_fields": t[0],
            "load_stored_fields_count": t[1],
            "next_reader": 0,
            "next_reader_count": 0,
            "load_source": t[2],
            "load_source_count": t[3],
        },
        "debug": {"stored_fields": ["_id", "_routing", "_source"]},
        "children": [{
            "type": "FetchSourcePhase",
            "description": "",
            "time_in_nanos": process,
            "breakdown": {
                "process": process,
                "process_count": t[5],
                "next_reader": 0,
                "next_reader_count": 0,
            },
            "debug": {"fast_path": 0},
        }],
    })
}

/// Elasticsearch's `profile` section: one entry per shard, ordered by shard id.
pub fn render(
    node_id: &str,
    index_names: &[&str],
    queries: Vec<ShardQueryProfile>,
    mut aggs: HashMap<(usize, usize), Vec<Value>>,
    fetch: FetchProfiles,
) -> Value {
    let mut shards: Vec<(String, Value)> = queries
        .into_iter()
        .map(|q| {
            let index = index_names.get(q.index).copied().unwrap_or("");
            let id = format!("[{node_id}][{index}][{}]", q.shard);
            let agg_entries = aggs.remove(&(q.index, q.shard)).unwrap_or_default();
            let agg_names: Vec<&str> = agg_entries
                .iter()
                .filter_map(|a| a["description"].as_str())
                .collect();
            let agg_nanos: u64 = agg_entries
                .iter()
                .filter_map(|a| a["time_in_nanos"].as_u64())
                .sum();
            let mut children = vec![json!({
                "name": q.collector,
                "reason": q.reason,
                "time_in_nanos": q.collector_nanos,
            })];
            if !agg_entries.is_empty() {
                children.push(json!({
                    "name": format!("AggregatorCollector: [{}]", agg_names.join(", ")),
                    "reason": "aggregation",
                    "time_in_nanos": agg_nanos,
                }));
            }
            let mut shard = json!({
                "id": id,
                "node_id": node_id,
                "shard_id": q.shard,
                "index": index,
                "cluster": "(local)",
                "searches": [{
                    "query": [q.query.to_json()],
                    "rewrite_time": q.rewrite_nanos,
                    "collector": [{
                        "name": "QueryPhaseCollector",
                        "reason": "search_query_phase",
                        "time_in_nanos": q.collector_nanos + agg_nanos,
                        "children": children,
                    }],
                }],
                "aggregations": agg_entries,
            });
            if let Some(t) = fetch.0.get(&(q.index, q.shard)) {
                shard["fetch"] = fetch_json(t);
            }
            (id, shard)
        })
        .collect();
    shards.sort_by(|a, b| a.0.cmp(&b.0));
    json!({"shards": shards.into_iter().map(|(_, s)| s).collect::<Vec<_>>()})
}

//! `GET [/{index}]/_stats[/{metric}]` and `GET [/{index}]/_segments`.
//!
//! Numbers come from the shards' counters (`ShardStats`, kept in nanoseconds and reported in
//! milliseconds), their searchers, store sizes and translogs. On a single node every primary is
//! started and no replica is, so `total` equals `primaries` and `_shards.total` counts the
//! unassigned replicas too, as Elasticsearch does.

#![allow(clippy::result_large_err)] // EsError is the project-wide error type (engine).

use crate::cluster::{self, Expand};
use crate::rest::{list_param, RestRequest, RestResponse};
use lode_engine::disk_usage::FieldDiskUsage;
use lode_engine::index::IndexService;
use lode_engine::settings::Codec;
use lode_engine::shard::Shard;
use lode_engine::{EsError, EsResult, Node};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Metrics `_stats/{metric}` accepts.
const METRICS: &[&str] = &[
    "_all",
    "docs",
    "store",
    "indexing",
    "get",
    "search",
    "merge",
    "refresh",
    "flush",
    "warmer",
    "query_cache",
    "fielddata",
    "completion",
    "segments",
    "translog",
    "request_cache",
    "recovery",
    "bulk",
    "shard_stats",
    "mappings",
    "dense_vector",
    "sparse_vector",
];

/// Every metric, as `_stats` without a metric (or with `_all`) reports them.
pub(crate) fn all_metrics() -> Vec<&'static str> {
    METRICS[1..].to_vec()
}

/// An empty translog: the engine counts the generation header (55 bytes), as Lucene's does.
const EMPTY_TRANSLOG_BYTES: u64 = 55;

/// Summed statistics of one or more shards.
#[derive(Debug, Default, Clone)]
pub(crate) struct Numbers {
    pub shards: u64,
    pub docs_count: u64,
    pub docs_deleted: u64,
    pub store_bytes: u64,
    pub index_total: u64,
    pub index_time_ns: u64,
    pub index_failed: u64,
    pub delete_total: u64,
    pub delete_time_ns: u64,
    pub noop_update_total: u64,
    pub get_total: u64,
    pub get_time_ns: u64,
    pub get_exists: u64,
    pub get_missing: u64,
    pub query_total: u64,
    pub query_time_ns: u64,
    pub fetch_total: u64,
    pub fetch_time_ns: u64,
    pub scroll_total: u64,
    /// Open scroll contexts (ES's `scroll_current` and, without point-in-time readers,
    /// `open_contexts`).
    pub scroll_current: u64,
    pub refresh_total: u64,
    pub refresh_time_ns: u64,
    pub external_refresh_total: u64,
    pub flush_total: u64,
    pub flush_time_ns: u64,
    pub merge_total: u64,
    pub merge_docs: u64,
    pub merge_time_ns: u64,
    pub segments: u64,
    pub translog_ops: u64,
    pub translog_bytes: u64,
    pub translog_uncommitted_ops: u64,
    pub translog_uncommitted_bytes: u64,
    pub translog_fsyncs: u64,
    pub translog_age: u64,
    pub max_seq_no: i64,
    /// Segment file bytes by file extension (`include_segment_file_sizes`).
    pub file_sizes: BTreeMap<String, u64>,
    pub search_groups: BTreeMap<String, lode_engine::shard::GroupStats>,
    pub request_cache: crate::search::request_cache::CacheStats,
    /// Bytes of each `completion` field's indexed inputs (the suggester's structure).
    pub completion: BTreeMap<String, u64>,
}

impl Numbers {
    pub fn add(&mut self, o: &Numbers) {
        self.shards += o.shards;
        self.docs_count += o.docs_count;
        self.docs_deleted += o.docs_deleted;
        self.store_bytes += o.store_bytes;
        self.index_total += o.index_total;
        self.index_time_ns += o.index_time_ns;
        self.index_failed += o.index_failed;
        self.delete_total += o.delete_total;
        self.delete_time_ns += o.delete_time_ns;
        self.noop_update_total += o.noop_update_total;
        self.get_total += o.get_total;
        self.get_time_ns += o.get_time_ns;
        self.get_exists += o.get_exists;
        self.get_missing += o.get_missing;
        self.query_total += o.query_total;
        self.query_time_ns += o.query_time_ns;
        self.fetch_total += o.fetch_total;
        self.fetch_time_ns += o.fetch_time_ns;
        self.scroll_total += o.scroll_total;
        self.scroll_current += o.scroll_current;
        self.refresh_total += o.refresh_total;
        self.refresh_time_ns += o.refresh_time_ns;
        self.external_refresh_total += o.external_refresh_total;
        self.flush_total += o.flush_total;
        self.flush_time_ns += o.flush_time_ns;
        self.merge_total += o.merge_total;
        self.merge_docs += o.merge_docs;
        self.merge_time_ns += o.merge_time_ns;
        self.segments += o.segments;
        self.translog_ops += o.translog_ops;
        self.translog_bytes += o.translog_bytes;
        self.translog_uncommitted_ops += o.translog_uncommitted_ops;
        self.translog_uncommitted_bytes += o.translog_uncommitted_bytes;
        self.translog_fsyncs += o.translog_fsyncs;
        self.translog_age = self.translog_age.max(o.translog_age);
        self.max_seq_no = self.max_seq_no.max(o.max_seq_no);
        for (k, v) in &o.file_sizes {
            *self.file_sizes.entry(k.clone()).or_insert(0) += v;
        }
        self.request_cache.hits += o.request_cache.hits;
        self.request_cache.misses += o.request_cache.misses;
        self.request_cache.evictions += o.request_cache.evictions;
        self.request_cache.memory_bytes += o.request_cache.memory_bytes;
        for (k, v) in &o.completion {
            *self.completion.entry(k.clone()).or_insert(0) += v;
        }
        for (k, g) in &o.search_groups {
            let e = self.search_groups.entry(k.clone()).or_default();
            e.query_total += g.query_total;
            e.query_time_nanos += g.query_time_nanos;
            e.fetch_total += g.fetch_total;
            e.fetch_time_nanos += g.fetch_time_nanos;
        }
    }

    /// Time split by outcome: the engine times GETs as a whole, so the time is apportioned by
    /// the share of hits and misses.
    fn get_split_ms(&self) -> (u64, u64) {
        let total = ms(self.get_time_ns);
        if self.get_total == 0 {
            return (0, 0);
        }
        let exists = total * self.get_exists / self.get_total;
        (exists, total - exists)
    }

    /// Refresh time attributed to externally requested refreshes (not timed separately).
    pub fn external_refresh_ms(&self) -> u64 {
        (ms(self.refresh_time_ns) * self.external_refresh_total.min(self.refresh_total))
            .checked_div(self.refresh_total)
            .unwrap_or(0)
    }
}

pub(crate) fn ms(nanos: u64) -> u64 {
    nanos / 1_000_000
}

/// Query options that shape the stats.
#[derive(Debug, Clone, Default)]
pub(crate) struct StatsOptions {
    pub file_sizes: bool,
    pub unloaded_segments: bool,
    /// `groups`: the search stats groups to report (wildcards allowed).
    pub groups: Vec<String>,
    /// `completion_fields` (or `fields`): completion fields reported one by one.
    pub completion_fields: Vec<String>,
    /// `fielddata_fields` (or `fields`): fields whose loaded fielddata is reported.
    pub fielddata_fields: Vec<String>,
}

impl StatsOptions {
    pub fn from_request(req: &RestRequest) -> EsResult<StatsOptions> {
        Ok(StatsOptions {
            file_sizes: req.bool_param("include_segment_file_sizes", false)?,
            unloaded_segments: req.bool_param("include_unloaded_segments", false)?,
            groups: crate::rest::list_param(req.param("groups")),
            completion_fields: list_param(req.param("completion_fields").or(req.param("fields"))),
            fielddata_fields: list_param(req.param("fielddata_fields").or(req.param("fields"))),
        })
    }
}

/// The numbers of one open shard.
pub(crate) fn shard_numbers(shard: &Shard, shard_dir: &Path, opts: &StatsOptions) -> Numbers {
    let s = &shard.stats;
    let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let (docs, deleted) = shard.doc_counts();
    let t = shard.translog_stats();
    let mut n = Numbers {
        shards: 1,
        docs_count: docs,
        docs_deleted: deleted,
        store_bytes: shard.store_size(),
        index_total: l(&s.index_total),
        index_time_ns: l(&s.index_time_nanos),
        index_failed: l(&s.index_failed),
        delete_total: l(&s.delete_total),
        delete_time_ns: l(&s.delete_time_nanos),
        noop_update_total: l(&s.noop_update_total),
        get_total: l(&s.get_total),
        get_time_ns: l(&s.get_time_nanos),
        get_exists: l(&s.get_exists),
        get_missing: l(&s.get_missing),
        query_total: l(&s.query_total),
        query_time_ns: l(&s.query_time_nanos),
        fetch_total: l(&s.fetch_total),
        fetch_time_ns: l(&s.fetch_time_nanos),
        scroll_total: l(&s.scroll_total),
        scroll_current: crate::search::open_scroll_contexts_by_shard()
            .get(shard_dir)
            .copied()
            .unwrap_or(0),
        refresh_total: l(&s.refresh_total),
        refresh_time_ns: l(&s.refresh_time_nanos),
        external_refresh_total: l(&s.external_refresh_total),
        flush_total: l(&s.flush_total),
        flush_time_ns: l(&s.flush_time_nanos),
        merge_total: s.merge_total.load(Ordering::Relaxed),
        merge_docs: s.merge_docs.load(Ordering::Relaxed),
        merge_time_ns: l(&s.merge_time_nanos),
        segments: shard.searcher().searcher.segment_readers().len() as u64,
        translog_ops: t.operations,
        translog_bytes: t.size_in_bytes,
        translog_uncommitted_ops: t.uncommitted_operations,
        translog_uncommitted_bytes: t.uncommitted_size_in_bytes,
        translog_fsyncs: t.fsyncs,
        translog_age: t.earliest_last_modified_age,
        max_seq_no: shard.max_seq_no(),
        file_sizes: BTreeMap::new(),
        search_groups: s.search_groups.lock().clone(),
        request_cache: Default::default(),
        completion: BTreeMap::new(),
    };
    if opts.file_sizes {
        n.file_sizes = segment_file_sizes(&shard_dir.join("index"));
    }
    n
}

/// The numbers of a closed index's shard, read from its last commit on disk (as a closed
/// shard's no-op engine does): docs and store, segments only with `include_unloaded_segments`.
pub(crate) fn closed_shard_numbers(shard_dir: &Path, opts: &StatsOptions) -> Numbers {
    let index_dir = shard_dir.join("index");
    let meta: Value = std::fs::read(index_dir.join("meta.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let segs = meta["segments"].as_array().cloned().unwrap_or_default();
    let mut docs = 0u64;
    let mut deleted = 0u64;
    for s in &segs {
        let max = s["max_doc"].as_u64().unwrap_or(0);
        let del = s["deletes"]["num_deleted_docs"].as_u64().unwrap_or(0);
        docs += max.saturating_sub(del);
        deleted += del;
    }
    let store_bytes = std::fs::read_dir(&index_dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    Numbers {
        shards: 1,
        docs_count: docs,
        docs_deleted: deleted,
        store_bytes,
        segments: if opts.unloaded_segments {
            segs.len() as u64
        } else {
            0
        },
        translog_bytes: EMPTY_TRANSLOG_BYTES,
        translog_uncommitted_bytes: EMPTY_TRANSLOG_BYTES,
        max_seq_no: -1,
        file_sizes: if opts.file_sizes {
            segment_file_sizes(&index_dir)
        } else {
            BTreeMap::new()
        },
        ..Numbers::default()
    }
}

/// Bytes of segment files by extension (tantivy names them `<segment uuid>.<ext>`).
fn segment_file_sizes(index_dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(index_dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some((stem, _)) = name.split_once('.') else {
                continue;
            };
            if stem.len() != 32 || !stem.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let ext = name.rsplit('.').next().unwrap_or_default().to_string();
            *out.entry(ext).or_insert(0) += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    out
}

fn file_description(ext: &str) -> &'static str {
    match ext {
        "idx" => "Postings",
        "pos" => "Positions",
        "term" => "Term Dictionary",
        "store" => "Stored Fields",
        "fast" => "Fast Fields (doc values)",
        "fieldnorm" => "Field Norms",
        "del" => "Deleted Documents",
        "temp" => "Temporary Stored Fields",
        _ => "Others",
    }
}

fn matches_any(patterns: &[String], name: &str) -> bool {
    patterns
        .iter()
        .any(|p| lode_engine::mapping::wildcard_match(p, name))
}

/// Per-shard numbers of an index's started shards, in shard order (closed indices from disk).
pub(crate) fn index_shard_numbers(idx: &IndexService, opts: &StatsOptions) -> Vec<Numbers> {
    shard_numbers_by_id(idx, opts)
        .into_iter()
        .map(|(_, n)| n)
        .collect()
}

/// [`index_shard_numbers`] with each shard's id (an unassigned shard has none).
pub(crate) fn shard_numbers_by_id(
    idx: &IndexService,
    opts: &StatsOptions,
) -> Vec<(usize, Numbers)> {
    if idx.is_closed() {
        return (0..idx.num_shards())
            .map(|i| {
                (
                    i,
                    closed_shard_numbers(&idx.path().join(i.to_string()), opts),
                )
            })
            .collect();
    }
    match idx.started_shards() {
        Ok(shards) => {
            let mut out: Vec<Numbers> = shards
                .iter()
                .map(|s| shard_numbers(s, &idx.path().join(s.id.to_string()), opts))
                .collect();
            let mapping = idx.mapping();
            let completion: Vec<&str> = mapping
                .fields
                .values()
                .filter(|f| f.ty == lode_engine::mapping::FieldType::Completion)
                .map(|f| f.path.as_str())
                .collect();
            if !completion.is_empty() {
                for (n, shard) in out.iter_mut().zip(&shards) {
                    let searcher = &shard.searcher().searcher;
                    n.completion =
                        lode_engine::disk_usage::inverted_index_bytes(searcher, &completion)
                            .unwrap_or_default();
                }
            }
            // The request cache keeps whole-index results; its numbers go to the first shard.
            if let Some(first) = out.first_mut() {
                first.request_cache = crate::search::request_cache::stats(&idx.uuid);
            }
            shards.iter().map(|s| s.id).zip(out).collect()
        }
        Err(_) => Vec::new(),
    }
}

/// The sum over the primaries of several indices.
pub(crate) fn aggregate_indices(indices: &[Arc<IndexService>], opts: &StatsOptions) -> Numbers {
    let mut total = Numbers {
        max_seq_no: -1,
        ..Numbers::default()
    };
    for idx in indices {
        for n in index_shard_numbers(idx, opts) {
            total.add(&n);
        }
    }
    total
}

fn sum(list: &[Numbers]) -> Numbers {
    let mut total = Numbers {
        max_seq_no: -1,
        ..Numbers::default()
    };
    for n in list {
        total.add(n);
    }
    total
}

/// Renders the blocks of `metrics` (`merge` renders `merges`) in Elasticsearch's order.
pub(crate) fn render_stats(n: &Numbers, metrics: &[&str], opts: &StatsOptions) -> Value {
    let on = |m: &str| metrics.contains(&m);
    let mut o = Map::new();
    if on("docs") {
        o.insert(
            "docs".into(),
            json!({"count": n.docs_count, "deleted": n.docs_deleted}),
        );
    }
    if on("shard_stats") {
        o.insert("shard_stats".into(), json!({"total_count": n.shards}));
    }
    if on("store") {
        o.insert(
            "store".into(),
            json!({"size_in_bytes": n.store_bytes, "total_data_set_size_in_bytes": n.store_bytes, "reserved_in_bytes": 0}),
        );
    }
    if on("indexing") {
        o.insert(
            "indexing".into(),
            json!({
                "index_total": n.index_total,
                "index_time_in_millis": ms(n.index_time_ns),
                "index_current": 0,
                "index_failed": n.index_failed,
                "delete_total": n.delete_total,
                "delete_time_in_millis": ms(n.delete_time_ns),
                "delete_current": 0,
                "noop_update_total": n.noop_update_total,
                "is_throttled": false,
                "throttle_time_in_millis": 0,
                "write_load": 0.0
            }),
        );
    }
    if on("get") {
        let (exists_ms, missing_ms) = n.get_split_ms();
        o.insert(
            "get".into(),
            json!({
                "total": n.get_total,
                "time_in_millis": ms(n.get_time_ns),
                "exists_total": n.get_exists,
                "exists_time_in_millis": exists_ms,
                "missing_total": n.get_missing,
                "missing_time_in_millis": missing_ms,
                "current": 0
            }),
        );
    }
    if on("search") {
        o.insert(
            "search".into(),
            json!({
                "open_contexts": n.scroll_current,
                "query_total": n.query_total,
                "query_time_in_millis": ms(n.query_time_ns),
                "query_current": 0,
                "fetch_total": n.fetch_total,
                "fetch_time_in_millis": ms(n.fetch_time_ns),
                "fetch_current": 0,
                "scroll_total": n.scroll_total,
                "scroll_time_in_millis": 0,
                "scroll_current": n.scroll_current,
                "suggest_total": 0,
                "suggest_time_in_millis": 0,
                "suggest_current": 0
            }),
        );
        let groups: Map<String, Value> = n
            .search_groups
            .iter()
            .filter(|(name, _)| {
                opts.groups
                    .iter()
                    .any(|p| p == "_all" || lode_engine::mapping::wildcard_match(p, name))
            })
            .map(|(name, g)| {
                (
                    name.clone(),
                    json!({
                        "query_total": g.query_total,
                        "query_time_in_millis": ms(g.query_time_nanos),
                        "query_current": 0,
                        "fetch_total": g.fetch_total,
                        "fetch_time_in_millis": ms(g.fetch_time_nanos),
                        "fetch_current": 0,
                        "scroll_total": 0,
                        "scroll_time_in_millis": 0,
                        "scroll_current": 0,
                        "suggest_total": 0,
                        "suggest_time_in_millis": 0,
                        "suggest_current": 0
                    }),
                )
            })
            .collect();
        if !groups.is_empty() {
            o["search"]["groups"] = Value::Object(groups);
        }
    }
    if on("merge") {
        o.insert(
            "merges".into(),
            json!({
                "current": 0,
                "current_docs": 0,
                "current_size_in_bytes": 0,
                "total": n.merge_total,
                "total_time_in_millis": ms(n.merge_time_ns),
                "total_docs": n.merge_docs,
                "total_size_in_bytes": 0,
                "total_stopped_time_in_millis": 0,
                "total_throttled_time_in_millis": 0,
                "total_auto_throttle_in_bytes": 0
            }),
        );
    }
    if on("refresh") {
        o.insert(
            "refresh".into(),
            json!({
                "total": n.refresh_total,
                "total_time_in_millis": ms(n.refresh_time_ns),
                "external_total": n.external_refresh_total,
                "external_total_time_in_millis": n.external_refresh_ms(),
                "listeners": 0
            }),
        );
    }
    if on("flush") {
        o.insert(
            "flush".into(),
            json!({"total": n.flush_total, "periodic": 0, "total_time_in_millis": ms(n.flush_time_ns)}),
        );
    }
    if on("warmer") {
        o.insert(
            "warmer".into(),
            json!({"current": 0, "total": 0, "total_time_in_millis": 0}),
        );
    }
    if on("query_cache") {
        o.insert(
            "query_cache".into(),
            json!({
                "memory_size_in_bytes": 0,
                "total_count": 0,
                "hit_count": 0,
                "miss_count": 0,
                "cache_size": 0,
                "cache_count": 0,
                "evictions": 0
            }),
        );
    }
    if on("fielddata") {
        // Lode keeps no fielddata cache (text aggregations read the index), so no field has
        // fielddata loaded: `fields` lists none.
        let mut f = json!({"memory_size_in_bytes": 0, "evictions": 0, "global_ordinals": {"build_time_in_millis": 0}});
        if !opts.fielddata_fields.is_empty() {
            f["fields"] = json!({});
        }
        o.insert("fielddata".into(), f);
    }
    if on("completion") {
        let mut c = json!({"size_in_bytes": n.completion.values().sum::<u64>()});
        if !opts.completion_fields.is_empty() {
            let fields: Map<String, Value> = n
                .completion
                .iter()
                .filter(|(name, _)| matches_any(&opts.completion_fields, name))
                .map(|(name, bytes)| (name.clone(), json!({"size_in_bytes": bytes})))
                .collect();
            c["fields"] = Value::Object(fields);
        }
        o.insert("completion".into(), c);
    }
    if on("segments") {
        let mut seg = json!({
            "count": n.segments,
            "memory_in_bytes": 0,
            "terms_memory_in_bytes": 0,
            "stored_fields_memory_in_bytes": 0,
            "term_vectors_memory_in_bytes": 0,
            "norms_memory_in_bytes": 0,
            "points_memory_in_bytes": 0,
            "doc_values_memory_in_bytes": 0,
            "index_writer_memory_in_bytes": 0,
            "version_map_memory_in_bytes": 0,
            "fixed_bit_set_memory_in_bytes": 0,
            "max_unsafe_auto_id_timestamp": -1
        });
        let mut files = Map::new();
        if opts.file_sizes {
            for (ext, bytes) in &n.file_sizes {
                files.insert(
                    ext.clone(),
                    json!({"size_in_bytes": bytes, "description": file_description(ext)}),
                );
            }
        }
        seg["file_sizes"] = Value::Object(files);
        o.insert("segments".into(), seg);
    }
    if on("translog") {
        o.insert(
            "translog".into(),
            json!({
                "operations": n.translog_ops,
                "size_in_bytes": n.translog_bytes,
                "uncommitted_operations": n.translog_uncommitted_ops,
                "uncommitted_size_in_bytes": n.translog_uncommitted_bytes,
                "earliest_last_modified_age": n.translog_age,
                "fsync_total": n.translog_fsyncs
            }),
        );
    }
    if on("request_cache") {
        o.insert(
            "request_cache".into(),
            json!({
                "memory_size_in_bytes": n.request_cache.memory_bytes,
                "evictions": n.request_cache.evictions,
                "hit_count": n.request_cache.hits,
                "miss_count": n.request_cache.misses
            }),
        );
    }
    if on("recovery") {
        o.insert(
            "recovery".into(),
            json!({"current_as_source": 0, "current_as_target": 0, "throttle_time_in_millis": 0}),
        );
    }
    if on("bulk") {
        o.insert(
            "bulk".into(),
            json!({
                "total_operations": 0,
                "total_time_in_millis": 0,
                "total_size_in_bytes": 0,
                "avg_time_in_millis": 0,
                "avg_size_in_bytes": 0
            }),
        );
    }
    if on("dense_vector") {
        o.insert("dense_vector".into(), json!({"value_count": 0}));
    }
    if on("sparse_vector") {
        o.insert("sparse_vector".into(), json!({"value_count": 0}));
    }
    Value::Object(o)
}

/// Parses the `{metric}` path part: comma list, `_all`, unknown names rejected with a
/// suggestion as Elasticsearch does.
pub(crate) fn parse_metrics(raw: Option<&str>, req: &RestRequest) -> EsResult<Vec<&'static str>> {
    let list = list_param(raw);
    if list.is_empty() {
        return Ok(all_metrics());
    }
    let bad: Vec<String> = list
        .iter()
        .filter(|m| !METRICS.contains(&m.as_str()))
        .cloned()
        .collect();
    if !bad.is_empty() {
        return Err(crate::rest::unrecognized(req, &bad, METRICS, "metric"));
    }
    if list.iter().any(|m| m == "_all") {
        if list.len() > 1 {
            return Err(EsError::illegal_argument(format!(
                "request [{}] contains _all and individual metrics [{}]",
                req.path,
                list.join(",")
            )));
        }
        return Ok(all_metrics());
    }
    Ok(METRICS
        .iter()
        .copied()
        .filter(|m| list.iter().any(|x| x == m))
        .collect())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Cluster,
    Indices,
    Shards,
}

/// Resolves the targets of `_stats` / `_segments`: open indices by default; a closed one
/// named explicitly (or expanded with `expand_wildcards`) fails unless `ignore_unavailable`,
/// or, for `_stats`, `forbid_closed_indices=false` lets it through.
fn resolve_for_stats(
    node: &Node,
    indices: Option<&str>,
    req: &RestRequest,
    forbid_closed: bool,
) -> EsResult<Vec<Arc<IndexService>>> {
    let expand = Expand::from_request(req, Expand::OPEN)?;
    let (ignore_unavailable, allow_no_indices) = cluster::lenience(req, false, true)?;
    let mut list =
        cluster::resolve_indices(node, indices, expand, ignore_unavailable, allow_no_indices)?;
    if forbid_closed {
        if !ignore_unavailable {
            if let Some(c) = list.iter().find(|i| i.is_closed()) {
                return Err(EsError::index_closed(&c.name, &c.uuid));
            }
        }
        list.retain(|i| !i.is_closed());
    }
    list.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(list)
}

/// `GET /_stats`, `/{index}/_stats`, `/_stats/{metric}`, `/{index}/_stats/{metric}`.
pub fn index_stats(
    node: &Node,
    indices: Option<&str>,
    metrics: Option<&str>,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let metrics = parse_metrics(metrics, req)?;
    let level = match req.param("level").unwrap_or("indices") {
        "cluster" => Level::Cluster,
        "indices" => Level::Indices,
        "shards" => Level::Shards,
        other => {
            return Err(EsError::illegal_argument(format!(
            "level parameter must be one of [cluster] or [indices] or [shards] but was [{other}]"
        )))
        }
    };
    let opts = StatsOptions::from_request(req)?;
    let forbid_closed = req.bool_param("forbid_closed_indices", true)?;
    let list = resolve_for_stats(node, indices, req, forbid_closed)?;
    let node_id = cluster::node_id(node);
    let mut all = Numbers {
        max_seq_no: -1,
        ..Numbers::default()
    };
    let mut shard_copies = 0usize;
    let mut started = 0usize;
    let mut per_index = Map::new();
    for idx in &list {
        let by_id = shard_numbers_by_id(idx, &opts);
        let shards: Vec<Numbers> = by_id.iter().map(|(_, n)| n.clone()).collect();
        let health = cluster::index_health(idx);
        shard_copies += health.shards * (1 + health.replicas);
        started += shards.len();
        let primaries = sum(&shards);
        all.add(&primaries);
        if level == Level::Cluster {
            continue;
        }
        let rendered = render_stats(&primaries, &metrics, &opts);
        let mut im = Map::new();
        im.insert("uuid".into(), json!(idx.uuid));
        im.insert("health".into(), json!(health.status.as_str()));
        im.insert(
            "status".into(),
            json!(if idx.is_closed() { "close" } else { "open" }),
        );
        im.insert("primaries".into(), rendered.clone());
        im.insert("total".into(), rendered);
        if level == Level::Shards {
            let mut sm = Map::new();
            for (i, n) in &by_id {
                let mut entry = Map::new();
                entry.insert(
                    "routing".into(),
                    json!({"state": "STARTED", "primary": true, "node": node_id, "relocating_node": null}),
                );
                if let Value::Object(blocks) = render_stats(n, &metrics, &opts) {
                    entry.extend(blocks);
                }
                entry.insert(
                    "seq_no".into(),
                    json!({"max_seq_no": n.max_seq_no, "local_checkpoint": n.max_seq_no, "global_checkpoint": n.max_seq_no}),
                );
                let path = idx.path().join(i.to_string()).display().to_string();
                entry.insert(
                    "shard_path".into(),
                    json!({"state_path": path, "data_path": path, "is_custom_data_path": false}),
                );
                if let Ok(shard) = idx.shard(*i) {
                    let idle_after = idx.config().search_idle_after();
                    entry.insert(
                        "search_idle".into(),
                        json!(shard.is_search_idle(idle_after)),
                    );
                    entry.insert(
                        "search_idle_time".into(),
                        json!(shard.search_idle_time().as_millis() as u64),
                    );
                }
                sm.insert(i.to_string(), json!([Value::Object(entry)]));
            }
            im.insert("shards".into(), Value::Object(sm));
        }
        per_index.insert(idx.name.clone(), Value::Object(im));
    }
    let rendered_all = render_stats(&all, &metrics, &opts);
    let mut body = Map::new();
    body.insert(
        "_shards".into(),
        json!({"total": shard_copies, "successful": started, "failed": 0}),
    );
    body.insert(
        "_all".into(),
        json!({"primaries": rendered_all.clone(), "total": rendered_all}),
    );
    if level != Level::Cluster {
        body.insert("indices".into(), Value::Object(per_index));
    }
    Ok(RestResponse::ok(Value::Object(body)))
}

/// `GET /_segments`, `GET /{index}/_segments`.
pub fn segments(node: &Node, indices: Option<&str>, req: &RestRequest) -> EsResult<RestResponse> {
    req.bool_param("verbose", false)?;
    let list = resolve_for_stats(node, indices, req, true)?;
    let node_id = cluster::node_id(node);
    let mut shard_copies = 0usize;
    let mut started = 0usize;
    let mut out = Map::new();
    for idx in &list {
        let health = cluster::index_health(idx);
        shard_copies += health.shards * (1 + health.replicas);
        // Unassigned shards count in `total` only.
        let shards = idx.started_shards()?;
        started += shards.len();
        let mode = match shards.first().map(|s| s.codec()) {
            Some(Codec::BestCompression) => "BEST_COMPRESSION",
            _ => "BEST_SPEED",
        };
        let mut sm = Map::new();
        for s in &shards {
            let infos = s.segments()?;
            let mut segs = Map::new();
            for g in &infos {
                segs.insert(
                    g.name.clone(),
                    json!({
                        "generation": g.generation,
                        "num_docs": g.num_docs,
                        "deleted_docs": g.deleted_docs,
                        "size_in_bytes": g.size_in_bytes,
                        "memory_in_bytes": 0,
                        "committed": g.committed,
                        "search": g.search,
                        "version": cluster::LUCENE_VERSION,
                        "compound": false,
                        "attributes": {"Lucene90StoredFieldsFormat.mode": mode}
                    }),
                );
            }
            sm.insert(
                s.id.to_string(),
                json!([{
                    "routing": {"state": "STARTED", "primary": true, "node": node_id},
                    "num_committed_segments": infos.iter().filter(|g| g.committed).count(),
                    "num_search_segments": infos.iter().filter(|g| g.search).count(),
                    "segments": segs
                }]),
            );
        }
        out.insert(idx.name.clone(), json!({"shards": sm}));
    }
    Ok(RestResponse::ok(json!({
        "_shards": {"total": shard_copies, "successful": started, "failed": 0},
        "indices": out
    })))
}

/// `POST /{index}/_disk_usage` (ES's `RestAnalyzeIndexDiskUsageAction`): per index, the store
/// size and each field's bytes by structure, summed over the primary shards.
pub fn disk_usage(node: &Node, indices: &str, req: &RestRequest) -> EsResult<RestResponse> {
    // `Booleans.parseBoolean(request.param("run_expensive_tasks"), false)`: absent or empty is
    // false, anything but `true`/`false` fails to parse.
    let run = match req.param("run_expensive_tasks") {
        None | Some("") => false,
        Some(_) => req.bool_param("run_expensive_tasks", false)?,
    };
    if !run {
        return Err(EsError::illegal_argument(
            "analyzing the disk usage of an index is expensive and resource-intensive, \
             the parameter [run_expensive_tasks] must be set to [true] in order for the task to be performed.",
        ));
    }
    // `AnalyzeIndexDiskUsageRequest.DEFAULT_INDICES_OPTIONS`:
    // `IndicesOptions.fromOptions(false, false, false, true)`, so wildcards expand to closed
    // indices only unless `expand_wildcards` says otherwise, and no index is an error.
    let expand = Expand::from_request(
        req,
        Expand {
            open: false,
            closed: true,
            hidden: false,
        },
    )?;
    let (ignore_unavailable, allow_no_indices) = cluster::lenience(req, false, false)?;
    let flush = req.bool_param("flush", true)?;
    let mut list = cluster::resolve_indices(
        node,
        Some(indices),
        expand,
        ignore_unavailable,
        allow_no_indices,
    )?;
    if !ignore_unavailable {
        if let Some(c) = list.iter().find(|i| i.is_closed()) {
            return Err(EsError::index_closed(&c.name, &c.uuid));
        }
    }
    list.retain(|i| !i.is_closed());
    list.sort_by(|a, b| a.name.cmp(&b.name));
    let mut shard_copies = 0usize;
    let mut started = 0usize;
    let mut out = Map::new();
    for idx in &list {
        if flush {
            idx.flush()?;
        }
        // One copy of each shard is analyzed (ES groups the shards by id and picks one copy),
        // so unassigned replicas do not count in `_shards.total`.
        let shards = idx.shards()?;
        shard_copies += shards.len();
        started += shards.len();
        let mut store = 0u64;
        let mut fields: BTreeMap<String, FieldDiskUsage> = BTreeMap::new();
        for s in &shards {
            for (name, usage) in s.disk_usage()? {
                fields.entry(name).or_default().add(&usage);
            }
            store += s.store_size();
        }
        out.insert(idx.name.clone(), render_disk_usage(store, &fields));
    }
    let mut body = Map::new();
    body.insert(
        "_shards".into(),
        json!({"total": shard_copies, "successful": started, "failed": 0}),
    );
    body.extend(out);
    Ok(RestResponse::ok(Value::Object(body)))
}

/// `IndexDiskUsageStats#toXContent`: readable sizes are always written, before the raw ones.
fn render_disk_usage(store: u64, fields: &BTreeMap<String, FieldDiskUsage>) -> Value {
    let mut all = FieldDiskUsage::default();
    fields.values().for_each(|u| all.add(u));
    let mut per_field = Map::new();
    for (name, u) in fields {
        per_field.insert(name.clone(), render_field_usage(u));
    }
    json!({
        "store_size": size(store),
        "store_size_in_bytes": store,
        "all_fields": render_field_usage(&all),
        "fields": per_field,
    })
}

fn size(bytes: u64) -> String {
    lode_engine::breaker::byte_size_string(bytes as i64)
}

fn render_field_usage(u: &FieldDiskUsage) -> Value {
    json!({
        "total": size(u.total()),
        "total_in_bytes": u.total(),
        "inverted_index": {"total": size(u.inverted_index), "total_in_bytes": u.inverted_index},
        "stored_fields": size(u.stored_fields),
        "stored_fields_in_bytes": u.stored_fields,
        "doc_values": size(u.doc_values),
        "doc_values_in_bytes": u.doc_values,
        "points": size(u.points),
        "points_in_bytes": u.points,
        "norms": size(u.norms),
        "norms_in_bytes": u.norms,
        "term_vectors": size(u.term_vectors),
        "term_vectors_in_bytes": u.term_vectors,
        "knn_vectors": size(u.knn_vectors),
        "knn_vectors_in_bytes": u.knn_vectors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::{Method, RestBody};
    use lode_engine::shard::VersionReq;

    fn request(path: &str, params: &[(&str, &str)]) -> RestRequest {
        RestRequest {
            doc_security: None,
            field_security: None,
            authorized: None,
            method: Method::Get,
            path: path.to_string(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    fn body(r: RestResponse) -> Value {
        match r.body {
            RestBody::Json(v) => v,
            other => panic!("not json: {other:?}"),
        }
    }

    fn index_docs(idx: &IndexService, n: usize) {
        for i in 0..n {
            let src = json!({"foo": format!("bar {i}")});
            let raw: Arc<[u8]> = serde_json::to_vec(&src).unwrap().into();
            idx.index_doc(
                Some(&i.to_string()),
                &src,
                raw,
                None,
                VersionReq::Internal,
                false,
            )
            .unwrap();
        }
    }

    fn setup() -> (tempfile::TempDir, Arc<Node>) {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let a = node
            .create_index(
                "test1",
                &json!({"number_of_shards": 2, "number_of_replicas": 1}),
                &Value::Null,
            )
            .unwrap();
        let b = node
            .create_index(
                "test2",
                &json!({"number_of_shards": 1, "number_of_replicas": 0}),
                &Value::Null,
            )
            .unwrap();
        index_docs(&a, 5);
        index_docs(&b, 2);
        a.refresh().unwrap();
        b.refresh().unwrap();
        (dir, node)
    }

    #[test]
    fn stats_shape_and_shard_counts() {
        let (_d, node) = setup();
        let b = body(index_stats(&node, None, None, &request("/_stats", &[])).unwrap());
        assert_eq!(
            b["_shards"],
            json!({"total": 5, "successful": 3, "failed": 0})
        );
        assert_eq!(b["_all"]["primaries"]["docs"]["count"], 7);
        assert_eq!(b["_all"]["total"]["indexing"]["index_total"], 7);
        assert_eq!(b["indices"]["test1"]["health"], "yellow");
        assert_eq!(b["indices"]["test2"]["status"], "open");
        assert!(b["indices"]["test1"]["uuid"].is_string());
        assert!(
            b["_all"]["total"]["store"]["size_in_bytes"]
                .as_u64()
                .unwrap()
                > 0
        );
        assert_eq!(b["_all"]["total"]["translog"]["operations"], 7);
        assert!(b["_all"]["total"]["translog"]["fsync_total"]
            .as_u64()
            .is_some());
        assert!(b["_all"]["total"]["segments"]["count"].as_u64().unwrap() >= 2);
        let keys: Vec<&String> = b["_all"]["total"].as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "docs");
        assert!(keys.iter().any(|k| *k == "merges") && keys.iter().any(|k| *k == "recovery"));

        let b = body(
            index_stats(
                &node,
                Some("test1"),
                Some("docs,merge"),
                &request("/test1/_stats/docs,merge", &[]),
            )
            .unwrap(),
        );
        assert_eq!(b["_shards"]["total"], 4);
        let keys: Vec<&String> = b["indices"]["test1"]["primaries"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, vec!["docs", "merges"]);

        let b =
            body(index_stats(&node, Some("bla*"), None, &request("/bla*/_stats", &[])).unwrap());
        assert_eq!(b["_shards"]["total"], 0);
        assert!(b["_all"]["primaries"].is_object());

        let b = body(
            index_stats(
                &node,
                None,
                None,
                &request("/_stats", &[("level", "shards")]),
            )
            .unwrap(),
        );
        assert_eq!(
            b["indices"]["test1"]["shards"]["1"][0]["routing"]["primary"],
            true
        );
        let b = body(
            index_stats(
                &node,
                None,
                None,
                &request("/_stats", &[("level", "cluster")]),
            )
            .unwrap(),
        );
        assert!(b.get("indices").is_none());
    }

    #[test]
    fn metric_errors() {
        let (_d, node) = setup();
        let e = index_stats(
            &node,
            None,
            Some("fieldata"),
            &request("/_stats/fieldata", &[]),
        )
        .unwrap_err();
        assert_eq!(e.status, 400);
        assert_eq!(e.reason, "request [/_stats/fieldata] contains unrecognized metric: [fieldata] -> did you mean [fielddata]?");
        let e = index_stats(
            &node,
            None,
            Some("_all,docs"),
            &request("/_stats/_all,docs", &[]),
        )
        .unwrap_err();
        assert_eq!(e.kind, "illegal_argument_exception");
        assert!(
            index_stats(
                &node,
                Some("missing"),
                None,
                &request("/missing/_stats", &[])
            )
            .unwrap_err()
            .status
                == 404
        );
        assert!(index_stats(&node, None, None, &request("/_stats", &[("level", "x")])).is_err());
    }

    #[test]
    fn closed_indices_in_stats() {
        let (_d, node) = setup();
        let b = node.index("test2").unwrap();
        b.flush().unwrap();
        b.close().unwrap();
        assert_eq!(
            index_stats(&node, Some("test2"), None, &request("/test2/_stats", &[]))
                .unwrap_err()
                .kind,
            "index_closed_exception"
        );
        let all = body(index_stats(&node, None, None, &request("/_stats", &[])).unwrap());
        assert!(all["indices"].get("test2").is_none());
        let params = [
            ("expand_wildcards", "all"),
            ("forbid_closed_indices", "false"),
        ];
        let v = body(
            index_stats(
                &node,
                None,
                Some("translog,segments,docs"),
                &request("/_stats", &params),
            )
            .unwrap(),
        );
        let p = &v["indices"]["test2"]["primaries"];
        assert_eq!(p["translog"]["operations"], 0);
        assert_eq!(p["segments"]["count"], 0);
        assert_eq!(p["docs"]["count"], 2);
        let params = [
            ("expand_wildcards", "closed"),
            ("forbid_closed_indices", "false"),
            ("include_unloaded_segments", "true"),
        ];
        let v =
            body(index_stats(&node, None, Some("segments"), &request("/_stats", &params)).unwrap());
        assert!(
            v["indices"]["test2"]["primaries"]["segments"]["count"]
                .as_u64()
                .unwrap()
                >= 1
        );
    }

    #[test]
    fn segment_file_sizes_and_translog() {
        let (_d, node) = setup();
        let v = body(
            index_stats(
                &node,
                Some("test2"),
                Some("segments"),
                &request(
                    "/test2/_stats/segments",
                    &[("include_segment_file_sizes", "true")],
                ),
            )
            .unwrap(),
        );
        let files = v["_all"]["total"]["segments"]["file_sizes"]
            .as_object()
            .unwrap();
        assert!(
            files.contains_key("store") && files.contains_key("idx"),
            "{files:?}"
        );
        let idx = node.index("test2").unwrap();
        idx.flush().unwrap();
        let v = body(
            index_stats(
                &node,
                Some("test2"),
                Some("translog"),
                &request("/test2/_stats/translog", &[]),
            )
            .unwrap(),
        );
        assert_eq!(
            v["indices"]["test2"]["primaries"]["translog"]["operations"],
            0
        );
    }

    #[test]
    fn segments_api() {
        let (_d, node) = setup();
        let v = body(segments(&node, Some("test2"), &request("/test2/_segments", &[])).unwrap());
        assert_eq!(v["_shards"]["total"], 1);
        let shard = &v["indices"]["test2"]["shards"]["0"][0];
        assert_eq!(shard["routing"]["primary"], true);
        let segs = shard["segments"].as_object().unwrap();
        assert_eq!(
            segs.values()
                .map(|g| g["num_docs"].as_u64().unwrap())
                .sum::<u64>(),
            2
        );
        assert_eq!(shard["segments"]["_0"]["version"], "9.11.1");
        assert_eq!(
            shard["segments"]["_0"]["attributes"]["Lucene90StoredFieldsFormat.mode"],
            "BEST_SPEED"
        );
        assert_eq!(shard["num_search_segments"], json!(segs.len()));

        let dir = tempfile::tempdir().unwrap();
        let empty = Node::open(dir.path()).unwrap();
        let v = body(segments(&empty, None, &request("/_segments", &[])).unwrap());
        assert_eq!(
            v,
            json!({"_shards": {"total": 0, "successful": 0, "failed": 0}, "indices": {}})
        );
        assert_eq!(
            segments(
                &empty,
                None,
                &request("/_segments", &[("allow_no_indices", "false")])
            )
            .unwrap_err()
            .status,
            404
        );

        node.index("test2").unwrap().close().unwrap();
        assert_eq!(
            segments(&node, Some("test2"), &request("/test2/_segments", &[]))
                .unwrap_err()
                .status,
            400
        );
        let v = body(
            segments(
                &node,
                Some("test2"),
                &request("/test2/_segments", &[("ignore_unavailable", "true")]),
            )
            .unwrap(),
        );
        assert_eq!(v["_shards"]["total"], 0);
    }

    #[test]
    fn disk_usage_renders_es_shape() {
        let mut fields = BTreeMap::new();
        fields.insert(
            "title".to_string(),
            FieldDiskUsage {
                inverted_index: 2048,
                norms: 100,
                ..FieldDiskUsage::default()
            },
        );
        fields.insert(
            "_source".to_string(),
            FieldDiskUsage {
                stored_fields: 1_500_000,
                ..FieldDiskUsage::default()
            },
        );
        let v = render_disk_usage(1_600_000, &fields);
        assert_eq!(v["store_size"], "1.5mb");
        assert_eq!(v["store_size_in_bytes"], 1_600_000);
        assert_eq!(v["all_fields"]["total_in_bytes"], 1_502_148);
        assert_eq!(v["all_fields"]["inverted_index"]["total"], "2kb");
        assert_eq!(v["fields"]["title"]["norms"], "100b");
        let keys: Vec<&String> = v["fields"]["title"].as_object().unwrap().keys().collect();
        assert_eq!(keys[..3], ["total", "total_in_bytes", "inverted_index"]);
        assert_eq!(keys.last().unwrap().as_str(), "knn_vectors_in_bytes");
    }
}

//! An index: its settings, mapping (with the tantivy schema derived from it), analyzers and
//! shards, persisted under `path.data/indices/<uuid>/`.

use crate::alias::AliasMeta;
use crate::document::{DocParser, Parsed, ParsedDoc};
use crate::error::{EsError, EsResult};
use crate::mapping::{self, Mapping};
use crate::schema::{self, MetaFields};
use crate::settings::{self, Durability, FlatSettings, IndexConfig};
use crate::shard::{Shard, VersionReq, WriteResult};
use crate::translog::OpKind;
use lode_analysis::AnalysisRegistry;
use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tantivy::schema::Schema;
use tantivy::tokenizer::TextAnalyzer;

/// The mapping and the schema compiled from it, swapped together.
pub struct MappingState {
    pub mapping: Arc<Mapping>,
    pub schema: Schema,
}

pub struct IndexService {
    pub name: String,
    pub uuid: String,
    pub creation_date: i64,
    path: PathBuf,
    pub analysis: AnalysisRegistry,
    settings: RwLock<FlatSettings>,
    config: RwLock<IndexConfig>,
    mapping: RwLock<Arc<MappingState>>,
    /// The shards by id; `None` while a shard is unassigned (it failed to open).
    shards: RwLock<Vec<Option<Arc<Shard>>>>,
    closed: AtomicBool,
    state_lock: Mutex<()>,
    /// Bumped whenever searchable data may have changed (request-cache invalidation).
    pub data_version: AtomicU64,
    last_refresh: Mutex<Instant>,
    aliases: RwLock<BTreeMap<String, AliasMeta>>,
    /// ES's `routing_num_shards` (index metadata, not a setting): documents route to
    /// `floorMod(murmur3(routing as UTF-16), routing_num_shards) / routing_factor`. `None` for
    /// indices created before Lode routed as ES (they keep the hash they were written with).
    routing_num_shards: Option<usize>,
    /// The shards that could not be opened, by id (ES: those primaries are unassigned with
    /// `ALLOCATION_FAILED`): the index stays in the node, red, its other shards serve, and
    /// opening the failed ones is retried.
    failures: RwLock<BTreeMap<usize, AllocationFailure>>,
    /// Set once the index is deleted, so an opening retry in flight gives up.
    deleted: AtomicBool,
}

/// Why an index's shards are unassigned: ES's `UnassignedInfo` for `ALLOCATION_FAILED`.
#[derive(Debug, Clone)]
pub struct AllocationFailure {
    /// The error opening a shard gave (ES's `details`).
    pub error: EsError,
    /// The shard that failed to open.
    pub shard: usize,
    /// When the last attempt failed, epoch milliseconds (ES's `at`).
    pub at: i64,
    /// Failed attempts so far (ES's `failed_allocation_attempts`).
    pub attempts: u32,
    /// When the next automatic retry is due (`None` once `index.allocation.max_retries` is reached).
    pub next_retry: Option<Instant>,
}

impl AllocationFailure {
    /// ES's `UnassignedInfo#getDetails` text: "failed shard on node [..]: failed recovery, failure ..".
    pub fn details(&self, index: &str, uuid: &str) -> String {
        format!(
            "failed shard on node [lode]: failed to create shard, failure [{index}/{uuid}][{}] {}: {}",
            self.shard, self.error.kind, self.error.reason
        )
    }
}

/// The delay before automatic retry `n` (1-based) of opening an index: 5 s, doubling, at most
/// a minute. ES retries at each reroute; one node has no cluster changes to trigger them.
fn retry_delay(n: u32) -> std::time::Duration {
    std::time::Duration::from_secs((5u64 << (n.saturating_sub(1)).min(4)).min(60))
}

/// Where an acknowledged write landed, so the caller can wait for durability/visibility.
#[derive(Debug, Clone)]
pub struct DocWrite {
    pub id: String,
    pub shard: usize,
    pub result: WriteResult,
}

/// What `assemble` does with the shards: open them (a failure fails the creation), recover
/// them (a failure leaves the index unassigned), or nothing (a closed index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpenMode {
    Create,
    Recover,
    Closed,
}

/// The shard slots of an index of `n` shards holding the opened ones.
fn opened_slots(n: usize, opened: Vec<Arc<Shard>>) -> Vec<Option<Arc<Shard>>> {
    let mut slots: Vec<Option<Arc<Shard>>> = vec![None; n];
    for s in opened {
        let id = s.id;
        slots[id] = Some(s);
    }
    slots
}

fn state_path(path: &Path) -> PathBuf {
    path.join("_state.json")
}

impl IndexService {
    /// Creates a new index on disk.
    pub fn create(
        dir: &Path,
        name: &str,
        settings_json: &Value,
        mappings_json: &Value,
    ) -> EsResult<IndexService> {
        let mut flat = settings::flatten(settings_json)?;
        validate_settings_keys(&flat)?;
        let config = IndexConfig::from_flat(&flat)?;
        flat.entry("index.number_of_shards".into())
            .or_insert_with(|| json!(config.number_of_shards.to_string()));
        flat.entry("index.number_of_replicas".into())
            .or_insert_with(|| json!(config.number_of_replicas.to_string()));
        let uuid = new_uuid();
        let creation_date = now_millis();
        flat.insert("index.uuid".into(), json!(uuid));
        flat.insert(
            "index.creation_date".into(),
            json!(creation_date.to_string()),
        );
        flat.insert("index.provided_name".into(), json!(name));
        flat.insert("index.version.created".into(), json!("8500003"));
        let routing_num_shards = routing_num_shards(&flat, config.number_of_shards)?;
        let analysis = build_analysis(&flat)?;
        let mappings_json = unwrap_type(mappings_json);
        // Compiled from the merged form, where dotted field names are objects.
        let mapping_json = mapping::merge(&json!({}), &mappings_json)?;
        let mapping = mapping::compile_with(&mapping_json, &analysis, config.field_defaults)?;
        let mapping = Mapping {
            json: mapping_json,
            ..mapping
        };
        mapping::check_limits(&mapping, &config.mapping_limits)?;
        let path = dir.join(&uuid);
        std::fs::create_dir_all(&path)?;
        let svc = IndexService::assemble(
            path,
            name.to_string(),
            uuid,
            creation_date,
            flat,
            config,
            analysis,
            mapping,
            None,
            Some(routing_num_shards),
            OpenMode::Create,
        )?;
        svc.persist()?;
        Ok(svc)
    }

    /// Opens an index from its directory (recovering each shard's translog).
    pub fn open(path: &Path) -> EsResult<IndexService> {
        let raw = std::fs::read(state_path(path))?;
        let state: Value = serde_json::from_slice(&raw).map_err(|e| {
            EsError::internal(format!("corrupt index state in {}: {e}", path.display()))
        })?;
        let flat: FlatSettings = serde_json::from_value(state["settings"].clone())
            .map_err(|e| EsError::internal(e.to_string()))?;
        let name = state["name"].as_str().unwrap_or_default().to_string();
        // Accepted when they were written: a setting refused today is archived, not fatal.
        let flat = crate::archived_settings::archive_invalid(&name, flat, |f| {
            IndexConfig::from_flat(f)?;
            build_analysis(f).map(|_| ())
        });
        let config = IndexConfig::from_flat(&flat)?;
        let analysis = build_analysis(&flat)?;
        // Parsed leniently: it was accepted when it was written (see `mapping::compile_stored`).
        let mapping =
            mapping::compile_stored(&name, &state["mappings"], &analysis, config.field_defaults)?;
        let schema: Option<Schema> = serde_json::from_value(state["schema"].clone()).ok();
        let closed = state["state"] == "close";
        let svc = IndexService::assemble(
            path.to_path_buf(),
            name,
            state["uuid"].as_str().unwrap_or_default().to_string(),
            state["creation_date"].as_i64().unwrap_or(0),
            flat,
            config,
            analysis,
            mapping,
            schema,
            state["routing_num_shards"].as_u64().map(|n| n as usize),
            if closed {
                OpenMode::Closed
            } else {
                OpenMode::Recover
            },
        )?;
        if let Ok(aliases) = serde_json::from_value(state["aliases"].clone()) {
            *svc.aliases.write() = aliases;
        }
        if closed {
            svc.closed.store(true, Ordering::SeqCst);
        }
        Ok(svc)
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        path: PathBuf,
        name: String,
        uuid: String,
        creation_date: i64,
        flat: FlatSettings,
        config: IndexConfig,
        analysis: AnalysisRegistry,
        mapping: Mapping,
        schema: Option<Schema>,
        routing_num_shards: Option<usize>,
        mode: OpenMode,
    ) -> EsResult<IndexService> {
        let schema = schema::extend(schema.as_ref(), &mapping);
        let svc = IndexService {
            name,
            uuid,
            creation_date,
            path,
            analysis,
            settings: RwLock::new(flat),
            config: RwLock::new(config),
            mapping: RwLock::new(Arc::new(MappingState {
                mapping: Arc::new(mapping),
                schema,
            })),
            shards: RwLock::new(Vec::new()),
            closed: AtomicBool::new(false),
            state_lock: Mutex::new(()),
            data_version: AtomicU64::new(0),
            last_refresh: Mutex::new(Instant::now()),
            aliases: RwLock::new(BTreeMap::new()),
            routing_num_shards,
            failures: RwLock::new(BTreeMap::new()),
            deleted: AtomicBool::new(false),
        };
        match mode {
            OpenMode::Create => svc.open_all()?,
            OpenMode::Recover => {
                let n = svc.num_shards();
                let (opened, failed) = svc.open_shards(&(0..n).collect::<Vec<_>>());
                *svc.shards.write() = opened_slots(n, opened);
                for f in failed {
                    svc.record_failure(f);
                }
            }
            OpenMode::Closed => {}
        }
        Ok(svc)
    }

    /// Opens every shard, or none: the first failure is the error (a new or reopened index).
    fn open_all(&self) -> EsResult<()> {
        let n = self.num_shards();
        let (opened, failed) = self.open_shards(&(0..n).collect::<Vec<_>>());
        if let Some((_, e)) = failed.into_iter().next() {
            return Err(e);
        }
        *self.shards.write() = opened_slots(n, opened);
        Ok(())
    }

    /// Records a failed attempt to open a shard, scheduling the next retry while
    /// `index.allocation.max_retries` (default 5) allows one.
    fn record_failure(&self, (shard, error): (usize, EsError)) {
        let max = self.usize_setting("index.allocation.max_retries", 5) as u32;
        let mut failures = self.failures.write();
        let attempts = failures.get(&shard).map_or(0, |f| f.attempts) + 1;
        tracing::error!(index = %self.name, shard, attempts, error = %error, "could not open a shard of the index: it stays red and the shard unassigned");
        failures.insert(
            shard,
            AllocationFailure {
                error,
                shard,
                at: now_millis(),
                attempts,
                next_retry: (attempts < max).then(|| Instant::now() + retry_delay(attempts)),
            },
        );
    }

    /// Why the index's first unassigned shard is unassigned, when one is (the index is red).
    pub fn allocation_failure(&self) -> Option<AllocationFailure> {
        self.failures.read().values().next().cloned()
    }

    /// Every unassigned shard of the index, by shard id.
    pub fn allocation_failures(&self) -> BTreeMap<usize, AllocationFailure> {
        self.failures.read().clone()
    }

    /// Why one shard is unassigned, when it is.
    pub fn shard_failure(&self, shard: usize) -> Option<AllocationFailure> {
        self.failures.read().get(&shard).cloned()
    }

    /// Tries to open the shards of an index that failed to open. `reset` clears the failed
    /// attempts count first (`POST _cluster/reroute?retry_failed=true`). Returns whether the
    /// index is open now.
    pub fn retry_open(&self, reset: bool) -> bool {
        let _one = self.state_lock.lock();
        if self.deleted.load(Ordering::SeqCst) || self.failures.read().is_empty() {
            return self.failures.read().is_empty();
        }
        if reset {
            for f in self.failures.write().values_mut() {
                f.attempts = 0;
            }
        }
        let failed: Vec<usize> = self.failures.read().keys().copied().collect();
        let (opened, still) = self.open_shards(&failed);
        if !opened.is_empty() {
            let mut slots = self.shards.write();
            let mut failures = self.failures.write();
            for shard in opened {
                tracing::info!(index = %self.name, shard = shard.id, "the shard opened on retry");
                failures.remove(&shard.id);
                if let Some(slot) = slots.get_mut(shard.id) {
                    *slot = Some(shard);
                }
            }
            self.data_version.fetch_add(1, Ordering::Relaxed);
        }
        for f in still {
            self.record_failure(f);
        }
        self.failures.read().is_empty()
    }

    /// Marks the index deleted (waiting for an opening retry in flight to finish).
    pub fn mark_deleted(&self) {
        let _one = self.state_lock.lock();
        self.deleted.store(true, Ordering::SeqCst);
    }

    /// Opens the given shards (recovering their translogs): those that opened, and those
    /// that failed with why.
    #[allow(clippy::type_complexity)]
    fn open_shards(&self, which: &[usize]) -> (Vec<Arc<Shard>>, Vec<(usize, EsError)>) {
        let mut opened = Vec::new();
        let mut failed = Vec::new();
        for &i in which {
            match self.open_shard(i) {
                Ok(shard) => opened.push(shard),
                Err(e) => failed.push((i, e)),
            }
        }
        (opened, failed)
    }

    /// Opens one shard, recovering its translog.
    fn open_shard(&self, i: usize) -> EsResult<Arc<Shard>> {
        let config = self.config();
        let state = self.mapping_state();
        let tokenizers = self.tokenizer_registrar(&state.mapping);
        let (shard, pending) = Shard::open(
            &self.path.join(i.to_string()),
            i,
            &state.schema,
            &tokenizers,
            &config,
        )?;
        shard.set_store_source(state.mapping.source_enabled);
        if !pending.is_empty() {
            let parser = DocParser {
                mapping: &state.mapping,
                schema: &state.schema,
                meta: MetaFields::of(&state.schema),
                nested_objects_limit: config.mapping_limits.nested_objects as usize,
            };
            let mut ops = Vec::with_capacity(pending.len());
            for op in pending {
                let doc = if op.kind == OpKind::Index {
                    let parsed = serde_json::from_slice::<Value>(&op.source)
                        .ok()
                        .and_then(|src| parser.parse(&op.id, &src).ok());
                    match parsed {
                        Some(Parsed::Doc(d)) => Some(*d),
                        _ => {
                            tracing::warn!(index = %self.name, id = %op.id, "translog operation no longer parses; skipped");
                            continue;
                        }
                    }
                } else {
                    None
                };
                ops.push((op, doc));
            }
            let n = shard.replay(ops)?;
            tracing::info!(index = %self.name, shard = i, operations = n, "recovered operations from translog");
        }
        Ok(Arc::new(shard))
    }

    /// Registers the index's analyzers and keyword normalizers with a tantivy index.
    fn tokenizer_registrar(&self, mapping: &Mapping) -> impl Fn(&tantivy::Index) {
        let analysis = self.analysis.clone();
        let mapping = mapping.clone();
        move |index: &tantivy::Index| {
            register_tokenizers(&analysis, &mapping, index);
            register_constant_columns(&mapping, index);
        }
    }

    fn persist(&self) -> EsResult<()> {
        let state = self.mapping_state();
        let body = json!({
            "name": self.name,
            "uuid": self.uuid,
            "creation_date": self.creation_date,
            "state": if self.is_closed() { "close" } else { "open" },
            "settings": *self.settings.read(),
            "mappings": state.mapping.json,
            "schema": serde_json::to_value(&state.schema).map_err(|e| EsError::internal(e.to_string()))?,
            "aliases": *self.aliases.read(),
            "routing_num_shards": self.routing_num_shards,
        });
        let tmp = self.path.join("_state.json.tmp");
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(serde_json::to_vec_pretty(&body).unwrap().as_slice())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, state_path(&self.path))?;
        std::fs::File::open(&self.path)?.sync_all()?;
        Ok(())
    }

    pub fn config(&self) -> IndexConfig {
        self.config.read().clone()
    }

    pub fn aliases(&self) -> BTreeMap<String, AliasMeta> {
        self.aliases.read().clone()
    }

    pub fn alias(&self, name: &str) -> Option<AliasMeta> {
        self.aliases.read().get(name).cloned()
    }

    /// Applies alias additions and removals together and persists them once.
    pub fn update_aliases(&self, add: &[(String, AliasMeta)], remove: &[String]) -> EsResult<()> {
        let _g = self.state_lock.lock();
        {
            let mut a = self.aliases.write();
            for r in remove {
                a.remove(r);
            }
            for (name, meta) in add {
                a.insert(name.clone(), meta.clone());
            }
        }
        self.persist()
    }

    /// `index.hidden`: wildcards skip the index unless `expand_wildcards` includes `hidden`.
    pub fn is_hidden(&self) -> bool {
        self.settings
            .read()
            .get("index.hidden")
            .map(|v| match v {
                serde_json::Value::Bool(b) => *b,
                v => v.as_str().is_some_and(|s| s.eq_ignore_ascii_case("true")),
            })
            .unwrap_or(false)
    }

    /// A numeric index setting, or `default` when unset or unparsable.
    pub fn usize_setting(&self, key: &str, default: usize) -> usize {
        self.settings
            .read()
            .get(key)
            .and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            })
            .map_or(default, |v| v as usize)
    }

    pub fn settings(&self) -> FlatSettings {
        self.settings.read().clone()
    }

    /// Fails with ES's `cluster_block_exception` when an `index.blocks.*` setting blocks `level`.
    pub fn check_block(&self, level: crate::blocks::Level) -> EsResult<()> {
        crate::blocks::check(&self.name, &self.settings.read(), level)
    }

    /// Sets (`on`) or removes an `index.blocks.*` setting, bypassing the metadata-write check
    /// (the caller has applied ES's rule for the API at hand).
    pub fn set_block(&self, block: crate::blocks::Block, on: bool) -> EsResult<()> {
        let _one = self.state_lock.lock();
        let mut flat = self.settings();
        if on {
            flat.insert(block.setting().to_string(), Value::String("true".into()));
        } else {
            flat.remove(block.setting());
        }
        *self.settings.write() = flat;
        self.persist()
    }

    /// The blocks of this index that block `level` (empty when none).
    pub fn blocks_for(&self, level: crate::blocks::Level) -> Vec<crate::blocks::Block> {
        crate::blocks::blocking(&self.settings.read(), level)
    }

    pub fn mapping_state(&self) -> Arc<MappingState> {
        self.mapping.read().clone()
    }

    pub fn mapping(&self) -> Arc<Mapping> {
        self.mapping.read().mapping.clone()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Every shard of the index: an error while one is unassigned (see [`Self::started_shards`]
    /// for the ones that serve).
    pub fn shards(&self) -> EsResult<Vec<Arc<Shard>>> {
        if self.is_closed() {
            return Err(EsError::index_closed(&self.name, &self.uuid));
        }
        if let Some(f) = self.failures.read().values().next() {
            return Err(EsError::no_shard_available(format!(
                "No shard available for [[{}][{}]]",
                self.name, f.shard
            )));
        }
        Ok(self.shards.read().iter().flatten().cloned().collect())
    }

    /// The started shards (every shard but the unassigned ones), in shard order.
    pub fn started_shards(&self) -> EsResult<Vec<Arc<Shard>>> {
        if self.is_closed() {
            return Err(EsError::index_closed(&self.name, &self.uuid));
        }
        Ok(self.shards.read().iter().flatten().cloned().collect())
    }

    /// One shard: ES's 503 `no_shard_available_action_exception` while it is unassigned.
    pub fn shard(&self, id: usize) -> EsResult<Arc<Shard>> {
        if self.is_closed() {
            return Err(EsError::index_closed(&self.name, &self.uuid));
        }
        self.shards
            .read()
            .get(id)
            .cloned()
            .flatten()
            .ok_or_else(|| {
                EsError::no_shard_available(format!(
                    "No shard available for [[{}][{id}]]",
                    self.name
                ))
            })
    }

    /// Waits up to `timeout` for the shards of an index that failed to open to come back
    /// (ES's replication actions wait for an active primary, then answer
    /// `unavailable_shards_exception`). `Err` holds the failure still in place.
    pub fn wait_active(&self, timeout: std::time::Duration) -> Result<(), AllocationFailure> {
        self.wait_shard_active(None, timeout)
    }

    /// [`Self::wait_active`] for one shard (`None`: every shard).
    pub fn wait_shard_active(
        &self,
        shard: Option<usize>,
        timeout: std::time::Duration,
    ) -> Result<(), AllocationFailure> {
        let deadline = Instant::now() + timeout;
        loop {
            let failure = match shard {
                Some(s) => self.shard_failure(s),
                None => self.allocation_failure(),
            };
            let Some(f) = failure else {
                return Ok(());
            };
            let now = Instant::now();
            if now >= deadline || self.deleted.load(Ordering::SeqCst) {
                return Err(f);
            }
            std::thread::sleep((deadline - now).min(std::time::Duration::from_millis(50)));
        }
    }

    pub fn num_shards(&self) -> usize {
        self.config.read().number_of_shards
    }

    /// The shard a document id (or explicit routing value) lives on.
    pub fn shard_for(&self, id: &str, routing: Option<&str>) -> usize {
        let key = routing.unwrap_or(id);
        let shards = self.num_shards();
        if shards == 1 {
            // Every hash lands on shard 0: skip hashing each document's id.
            return 0;
        }
        match self.routing_num_shards {
            Some(routing_shards) => {
                let hash = routing_hash(key) as i64;
                (hash.rem_euclid(routing_shards as i64) as usize) / (routing_shards / shards)
            }
            None => (murmur3_32(key.as_bytes()) as usize) % shards,
        }
    }

    /// Merges a `PUT _mapping` update, growing the schema of every shard.
    pub fn update_mapping(&self, update: &Value) -> EsResult<()> {
        self.check_block(crate::blocks::Level::MetadataWrite)?;
        self.merge_mapping(update, None).map(|_| ())
    }

    /// Merges a mapping update, growing the schema of every shard. `dynamic` is set for a
    /// document's dynamic update, with the number of fields that document added in earlier
    /// passes: its new fields are checked against the total fields limit one by one (the
    /// error is ES's document parsing error), and the number it has added is returned.
    fn merge_mapping(&self, update: &Value, dynamic: Option<u64>) -> EsResult<u64> {
        let _one = self.state_lock.lock();
        let update = unwrap_type(update);
        let current = self.mapping_state();
        let limits = self.config.read().mapping_limits;
        let added = match dynamic {
            Some(before) => {
                mapping::check_dynamic_update(&current.mapping, &update, before, &limits).map_err(
                    |cause| {
                        EsError::bad_request(
                            "document_parsing_exception",
                            format!("failed to parse: {}", cause.reason),
                        )
                        .caused_by(cause)
                    },
                )?
            }
            None => 0,
        };
        let merged_json = mapping::merge(&current.mapping.json, &update)?;
        if merged_json == current.mapping.json {
            return Ok(added);
        }
        let field_defaults = self.config.read().field_defaults;
        let compiled = mapping::compile_with(&merged_json, &self.analysis, field_defaults)?;
        let compiled = Mapping {
            json: merged_json,
            ..compiled
        };
        mapping::check_limits(&compiled, &limits)?;
        let mut guard = self.mapping.write();
        let schema = if schema::needs_extension(&guard.schema, &compiled) {
            let schema = schema::extend(Some(&guard.schema), &compiled);
            let registrar = self.tokenizer_registrar(&compiled);
            for shard in self.shards.read().iter().flatten() {
                shard.extend_schema(&schema, &registrar)?;
            }
            schema
        } else {
            guard.schema.clone()
        };
        // A value set by this update (a document's first constant_keyword value) reaches
        // the shards whose schema did not change.
        for shard in self.shards.read().iter().flatten() {
            shard.set_constant_columns(&compiled);
        }
        *guard = Arc::new(MappingState {
            mapping: Arc::new(compiled),
            schema,
        });
        drop(guard);
        self.persist()?;
        self.data_version.fetch_add(1, Ordering::Relaxed);
        Ok(added)
    }

    /// Parses `source` and indexes it, applying a dynamic mapping update first when needed.
    #[allow(clippy::too_many_arguments)]
    pub fn index_doc(
        &self,
        id: Option<&str>,
        source: &Value,
        raw: Arc<[u8]>,
        routing: Option<&str>,
        req: VersionReq,
        create_only: bool,
    ) -> EsResult<DocWrite> {
        let (id, auto_id) = match id {
            Some(i) => (i.to_string(), false),
            None => (new_doc_id(), true),
        };
        validate_id(&id)?;
        self.check_block(crate::blocks::Level::Write)?;
        let shard_id = self.shard_for(&id, routing);
        let mut added = 0;
        loop {
            let guard = self.mapping.read();
            let state = guard.clone();
            let parser = DocParser {
                mapping: &state.mapping,
                schema: &state.schema,
                meta: MetaFields::of(&state.schema),
                nested_objects_limit: self.config().mapping_limits.nested_objects as usize,
            };
            let parsed = parser
                .parse(&id, source)
                .map_err(|e| crate::doc_location::locate(e, source, &raw))?;
            match parsed {
                Parsed::Doc(doc) => {
                    let shard = &self.shard(shard_id)?;
                    let result = shard.index(
                        &id,
                        raw,
                        *doc,
                        routing,
                        req,
                        create_only,
                        auto_id,
                        &self.name,
                        &self.uuid,
                    );
                    drop(guard);
                    if result.is_err() {
                        shard.stats.index_failed.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(DocWrite {
                        id,
                        shard: shard_id,
                        result: result?,
                    });
                }
                Parsed::MappingUpdate(update) => {
                    drop(guard);
                    added = self.merge_mapping(&update, Some(added))?;
                }
            }
        }
    }

    /// Parses a document without indexing it (validation for update-by-query and friends).
    pub fn parse_only(&self, id: &str, source: &Value) -> EsResult<Option<ParsedDoc>> {
        let state = self.mapping_state();
        let parser = DocParser {
            mapping: &state.mapping,
            schema: &state.schema,
            meta: MetaFields::of(&state.schema),
            nested_objects_limit: self.config().mapping_limits.nested_objects as usize,
        };
        Ok(match parser.parse(id, source)? {
            Parsed::Doc(d) => Some(*d),
            Parsed::MappingUpdate(_) => None,
        })
    }

    pub fn delete_doc(
        &self,
        id: &str,
        routing: Option<&str>,
        req: VersionReq,
    ) -> EsResult<DocWrite> {
        self.check_block(crate::blocks::Level::Write)?;
        let shard_id = self.shard_for(id, routing);
        let result = self
            .shard(shard_id)?
            .delete(id, req, &self.name, &self.uuid)?;
        Ok(DocWrite {
            id: id.to_string(),
            shard: shard_id,
            result,
        })
    }

    pub fn get_doc(
        &self,
        id: &str,
        routing: Option<&str>,
        realtime: bool,
    ) -> EsResult<Option<crate::shard::StoredDoc>> {
        let shard_id = self.shard_for(id, routing);
        if self.shard_failure(shard_id).is_some() && !self.is_closed() {
            // ES's `TransportSingleShardAction` with no started copy, `GetRequest#toString`.
            return Err(EsError::no_shard_available(format!(
                "No shard available for [get [{}][{id}]: routing [{}]]",
                self.name,
                routing.unwrap_or("null")
            )));
        }
        let shard = self.shard(shard_id)?;
        // A GET counts as a search of the shard, as in ES; a non-realtime one reads the
        // searcher, so an idle shard's skipped refresh is made first.
        let idle_after = self.config.read().search_idle_after();
        if shard.search_access(idle_after.filter(|_| !realtime))? {
            self.data_version.fetch_add(1, Ordering::Relaxed);
        }
        shard.get(id, realtime)
    }

    /// Waits for a write to be durable (durability `request`). Inside
    /// [`crate::durability::deferred`] the wait is recorded instead, for the caller to await.
    pub fn ensure_durable(&self, shard: usize, loc: crate::translog::Location) -> EsResult<()> {
        if self.config.read().durability == Durability::Request {
            let shard = self.shard(shard)?;
            if let Some((shard, loc)) = crate::durability::defer(shard, loc) {
                shard.sync_translog(loc)?;
            }
        }
        Ok(())
    }

    pub fn refresh(&self) -> EsResult<()> {
        let mut changed = false;
        for s in self.started_shards()? {
            changed |= s.refresh(false)?;
            s.stats
                .external_refresh_total
                .fetch_add(1, Ordering::Relaxed);
        }
        if changed {
            self.data_version.fetch_add(1, Ordering::Relaxed);
        }
        *self.last_refresh.lock() = Instant::now();
        Ok(())
    }

    /// A search (or count, by-query, explain...) is about to read the index: its search-idle
    /// shards with skipped refreshes are refreshed first (ES's `awaitShardSearchActive`).
    pub fn search_access(&self) -> EsResult<()> {
        let idle_after = self.config.read().search_idle_after();
        let mut changed = false;
        for s in self.started_shards()? {
            changed |= s.search_access(idle_after)?;
        }
        if changed {
            self.data_version.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `refresh=wait_for`: returns once the write with `seq_no` on `shard` is searchable.
    pub fn wait_for_refresh(&self, shard: usize, seq_no: u64) -> EsResult<()> {
        let periodic = self.config.read().refresh_interval.is_some();
        self.shard(shard)?.wait_for_refresh(seq_no, periodic)?;
        self.data_version.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub fn flush(&self) -> EsResult<()> {
        for s in self.started_shards()? {
            s.flush()?;
        }
        self.data_version.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub fn force_merge(
        &self,
        max_num_segments: Option<usize>,
        only_expunge_deletes: bool,
        flush: bool,
    ) -> EsResult<()> {
        for s in self.started_shards()? {
            s.force_merge(max_num_segments, only_expunge_deletes)?;
            if flush {
                s.flush()?;
            }
        }
        self.data_version.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Periodic work: scheduled refresh, async translog sync, size-triggered flush.
    pub fn maintain(&self) {
        if self.is_closed() {
            return;
        }
        let due = self
            .failures
            .read()
            .values()
            .any(|f| f.next_retry.is_some_and(|t| Instant::now() >= t));
        // Shards that failed to open: the retry, when due; the started ones are maintained.
        if due {
            self.retry_open(false);
        }
        let config = self.config();
        let Ok(shards) = self.started_shards() else {
            return;
        };
        if let Some(interval) = config.refresh_interval {
            let due = self.last_refresh.lock().elapsed() >= interval;
            if due {
                let mut changed = false;
                let idle_after = config.search_idle_after();
                for s in shards
                    .iter()
                    .filter(|s| !s.skip_scheduled_refresh(idle_after))
                {
                    match s.refresh(false) {
                        Ok(c) => changed |= c,
                        Err(e) => {
                            tracing::warn!(index = %self.name, error = %e, "scheduled refresh failed")
                        }
                    }
                }
                if changed {
                    self.data_version.fetch_add(1, Ordering::Relaxed);
                }
                *self.last_refresh.lock() = Instant::now();
            }
        }
        for s in &shards {
            if config.durability == Durability::Async {
                if let Err(e) = s.sync_translog_if_due(config.sync_interval) {
                    tracing::warn!(index = %self.name, error = %e, "translog sync failed");
                }
            }
            if s.translog_size() >= config.flush_threshold_size {
                if let Err(e) = s.flush() {
                    tracing::warn!(index = %self.name, error = %e, "threshold flush failed");
                }
            }
        }
    }

    /// Applies `PUT _settings` (dynamic settings, or closed-only ones on a closed index).
    pub fn update_settings(&self, body: &Value) -> EsResult<()> {
        let _one = self.state_lock.lock();
        let mut update = settings::flatten(body)?;
        let archived_removals = take_archived_removals(&mut update);
        validate_settings_keys(&update)?;
        if !crate::blocks::settings_update_exempt(&update) {
            self.check_block(crate::blocks::Level::MetadataWrite)?;
        }
        let closed = self.is_closed();
        for k in update.keys() {
            let k = k.as_str();
            let dynamic = settings::is_dynamic(k);
            let closed_ok = closed
                && (settings::CLOSED_ONLY_SETTINGS.contains(&k)
                    || k.starts_with("index.analysis."));
            if !dynamic && !closed_ok {
                if k == "index.number_of_shards"
                    || k.starts_with("index.analysis.")
                    || settings::CLOSED_ONLY_SETTINGS.contains(&k)
                    || is_known_static(k)
                {
                    return Err(EsError::illegal_argument(format!(
                        "Can't update non dynamic settings [[{k}]] for open indices [[{}/{}]]",
                        self.name, self.uuid
                    )));
                }
                return Err(EsError::illegal_argument(format!(
                    "unknown setting [{k}] please check that any required plugins are installed, or check the breaking changes documentation for removed settings"
                )));
            }
        }
        let mut flat = self.settings();
        for pattern in archived_removals {
            let prefix = pattern.trim_end_matches('*');
            flat.retain(|k, _| !k.starts_with(prefix));
        }
        for (k, v) in update {
            if v.is_null() {
                flat.remove(&k);
            } else {
                flat.insert(k, v);
            }
        }
        let config = IndexConfig::from_flat(&flat)?;
        *self.settings.write() = flat;
        *self.config.write() = config;
        self.persist()
    }

    pub fn close(&self) -> EsResult<()> {
        self.check_block(crate::blocks::Level::MetadataWrite)?;
        let _one = self.state_lock.lock();
        if self.is_closed() {
            return Ok(());
        }
        for s in self.shards()? {
            s.flush()?;
        }
        self.closed.store(true, Ordering::SeqCst);
        self.shards.write().clear();
        self.persist()
    }

    pub fn open_index(&self) -> EsResult<()> {
        self.check_block(crate::blocks::Level::MetadataWrite)?;
        let _one = self.state_lock.lock();
        if !self.is_closed() {
            return Ok(());
        }
        self.open_all()?;
        self.closed.store(false, Ordering::SeqCst);
        self.persist()
    }

    /// Flushes every started shard (clean shutdown).
    pub fn shutdown(&self) {
        if let Ok(shards) = self.started_shards() {
            for s in shards {
                if let Err(e) = s.flush() {
                    tracing::warn!(index = %self.name, error = %e, "flush on shutdown failed");
                }
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn is_known_static(k: &str) -> bool {
    matches!(
        k,
        "index.uuid"
            | "index.creation_date"
            | "index.provided_name"
            | "index.version.created"
            | "index.routing_partition_size"
            | "index.number_of_routing_shards"
    )
}

/// Elasticsearch 8's index settings (`IndexScopedSettings`), by name; an entry ending in `.`
/// is a group whose members are free (analysis components, allocation filters, slow log
/// thresholds, merge policy knobs). Anything else is ES's "unknown setting" error, so a typo
/// is refused rather than kept and ignored.
const KNOWN_SETTINGS: &[&str] = &[
    "index.number_of_shards",
    "index.number_of_replicas",
    "index.number_of_routing_shards",
    "index.routing_partition_size",
    "index.auto_expand_replicas",
    "index.refresh_interval",
    "index.max_result_window",
    "index.max_inner_result_window",
    "index.max_rescore_window",
    "index.max_docvalue_fields_search",
    "index.max_script_fields",
    "index.max_ngram_diff",
    "index.max_shingle_diff",
    "index.max_refresh_listeners",
    "index.max_terms_count",
    "index.max_regex_length",
    "index.max_slices_per_scroll",
    "index.max_adjacency_matrix_filters",
    "index.analyze.max_token_count",
    "index.highlight.max_analyzed_offset",
    "index.codec",
    "index.hidden",
    "index.priority",
    "index.gc_deletes",
    "index.default_pipeline",
    "index.final_pipeline",
    "index.requests.cache.enable",
    "index.queries.cache.enabled",
    "index.load_fixed_bitset_filters_eagerly",
    "index.shard.check_on_startup",
    "index.write.wait_for_active_shards",
    "index.blocks.read_only",
    "index.blocks.read_only_allow_delete",
    "index.blocks.read",
    "index.blocks.write",
    "index.blocks.metadata",
    "index.query.default_field",
    "index.query.parse.allow_unmapped_fields",
    "index.query_string.lenient",
    "index.search.idle.after",
    "index.search.throttled",
    "index.search.slowlog.",
    "index.indexing.slowlog.",
    "index.translog.durability",
    "index.translog.sync_interval",
    "index.translog.flush_threshold_size",
    "index.translog.generation_threshold_size",
    "index.translog.retention.age",
    "index.translog.retention.size",
    "index.soft_deletes.enabled",
    "index.soft_deletes.retention.operations",
    "index.soft_deletes.retention_lease.period",
    "index.mapping.total_fields.limit",
    "index.mapping.total_fields.ignore_dynamic_beyond_limit",
    "index.mapping.depth.limit",
    "index.mapping.nested_fields.limit",
    "index.mapping.nested_objects.limit",
    "index.mapping.field_name_length.limit",
    "index.mapping.dimension_fields.limit",
    "index.mapping.ignore_malformed",
    "index.mapping.coerce",
    "index.mapping.source.mode",
    "index.sort.field",
    "index.sort.order",
    "index.sort.mode",
    "index.sort.missing",
    "index.store.type",
    "index.store.preload",
    "index.store.stats_refresh_interval",
    "index.store.fs.fs_lock",
    "index.unassigned.node_left.delayed_timeout",
    "index.allocation.max_retries",
    "index.routing.rebalance.enable",
    "index.routing.allocation.enable",
    "index.routing.allocation.total_shards_per_node",
    "index.routing.allocation.include.",
    "index.routing.allocation.exclude.",
    "index.routing.allocation.require.",
    "index.routing.allocation.disk.watermark.ignore",
    "index.flush_after_merge",
    "index.format",
    "index.version.created",
    "index.version.upgraded",
    "index.uuid",
    "index.creation_date",
    "index.provided_name",
    "index.verified_before_close",
    "index.lifecycle.",
    "index.merge.policy.",
    "index.merge.scheduler.max_thread_count",
    "index.merge.scheduler.max_merge_count",
    "index.merge.scheduler.auto_throttle",
    "index.similarity.",
    "index.analysis.",
    "index.warmer.enabled",
    "index.mode",
    "index.routing_path",
    "index.time_series.",
];

/// Takes out of a settings update its removals of archived settings (a pattern such as
/// `archived.*` set to `null`), the one change ES allows on them. A key without `*` gets the
/// `index.` prefix as any other, so setting `archived.x` stays ES's "unknown setting".
fn take_archived_removals(update: &mut FlatSettings) -> Vec<String> {
    let prefix = crate::archived_settings::ARCHIVED_PREFIX;
    let removals: Vec<String> = update
        .iter()
        .filter(|(k, v)| k.starts_with(prefix) && k.ends_with('*') && v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    for k in &removals {
        update.remove(k);
    }
    removals
}

fn validate_settings_keys(flat: &FlatSettings) -> EsResult<()> {
    for k in flat.keys() {
        if !KNOWN_SETTINGS
            .iter()
            .any(|p| k == p || (p.ends_with('.') && k.starts_with(p)))
        {
            return Err(EsError::illegal_argument(format!(
                "unknown setting [{k}] please check that any required plugins are installed, or check the breaking changes documentation for removed settings"
            )));
        }
    }
    Ok(())
}

fn build_analysis(flat: &FlatSettings) -> EsResult<AnalysisRegistry> {
    let nested = settings::nest(flat);
    let analysis = nested.get("index").and_then(|i| i.get("analysis"));
    let max_shingle_diff = match flat.get("index.max_shingle_diff") {
        None => lode_analysis::DEFAULT_MAX_SHINGLE_DIFF,
        Some(v) => {
            let s = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            s.trim().parse::<usize>().map_err(|_| {
                EsError::illegal_argument(format!(
                    "Failed to parse value [{s}] for setting [index.max_shingle_diff]"
                ))
            })?
        }
    };
    AnalysisRegistry::with_limits(analysis, max_shingle_diff)
        .map_err(|e| EsError::new(400, e.kind, e.reason))
}

/// Accepts `{"_doc": {"properties": ..}}` as older clients send it.
fn unwrap_type(mappings: &Value) -> Value {
    if let Value::Object(m) = mappings {
        if m.len() == 1 {
            if let Some(inner) = m.get("_doc") {
                if inner.is_object() {
                    return inner.clone();
                }
            }
        }
    }
    if mappings.is_null() {
        return json!({});
    }
    mappings.clone()
}

pub fn validate_id(id: &str) -> EsResult<()> {
    if id.is_empty() {
        return Err(EsError::illegal_argument(
            "if _id is specified it must not be empty",
        ));
    }
    if id.len() > 512 {
        return Err(EsError::illegal_argument(format!(
            "id [{id}] is too long, must be no longer than 512 bytes but was: {}",
            id.len()
        )));
    }
    Ok(())
}

pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A 22-character URL-safe id, like Elasticsearch's time-based UUIDs.
pub fn new_uuid() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(uuid::Uuid::new_v4().as_bytes())
}

/// Auto-generated document ids: time-prefixed so that they sort roughly by creation.
pub fn new_doc_id() -> String {
    use base64::Engine;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 15];
    let t = now_millis() as u64;
    bytes[..6].copy_from_slice(&t.to_be_bytes()[2..]);
    let c = COUNTER.fetch_add(1, Ordering::Relaxed);
    bytes[6..9].copy_from_slice(&c.to_be_bytes()[5..]);
    let r: [u8; 6] = rand::random();
    bytes[9..].copy_from_slice(&r);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// ES's `Murmur3HashFunction.hash(String)`: MurmurHash3 over the UTF-16 code units, each
/// as two little-endian bytes, read as a signed int.
pub fn routing_hash(routing: &str) -> i32 {
    let bytes: Vec<u8> = routing.encode_utf16().flat_map(u16::to_le_bytes).collect();
    murmur3_32(&bytes) as i32
}

/// ES's `routing_num_shards`: `index.number_of_routing_shards` when set, otherwise as many
/// as let the index split by powers of two up to 1,024 shards (at least one split).
fn routing_num_shards(flat: &FlatSettings, shards: usize) -> EsResult<usize> {
    let set = flat.get("index.number_of_routing_shards").map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let partition = flat.get("index.routing_partition_size").map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    if partition.is_some_and(|p| p != "1") {
        // Partitioned routing spreads a routing value over several shards; not built.
        return Err(EsError::illegal_argument(
            "setting [index.routing_partition_size] other than 1 is not supported by Lode",
        ));
    }
    let Some(set) = set else {
        let log2_shards = usize::BITS - (shards.max(1) - 1).leading_zeros();
        let splits = 10u32.saturating_sub(log2_shards).max(1);
        return Ok(shards << splits);
    };
    let n: usize = set.parse().map_err(|_| {
        EsError::illegal_argument(format!(
            "Failed to parse value [{set}] for setting [index.number_of_routing_shards]"
        ))
    })?;
    if n < shards {
        return Err(EsError::illegal_argument(format!(
            "index.number_of_routing_shards [{n}] must be >= index.number_of_shards [{shards}]"
        )));
    }
    if !n.is_multiple_of(shards) {
        return Err(EsError::illegal_argument(format!(
            "the number of source shards [{shards}] must be a factor of [{n}]"
        )));
    }
    Ok(n)
}

/// MurmurHash3 x86 32-bit (seed 0), the hash Elasticsearch routes with.
pub fn murmur3_32(data: &[u8]) -> u32 {
    murmur3_32_seeded::<0>(data)
}

/// MurmurHash3 x86 32-bit with a seed (slices hash `_id` terms with 7919, as ES), from the
/// `murmurhash32` crate (whose plain `murmurhash3` uses a seed of its own, not 0).
pub fn murmur3_32_seeded<const SEED: u32>(data: &[u8]) -> u32 {
    murmurhash32::murmurhash3_with_seed::<SEED>(data)
}

/// Registers `analysis`'s analyzers, those derived for `mapping`'s `search_as_you_type`
/// subfields (not in the registry's list) and `mapping`'s keyword normalizers (for the terms
/// and for the columns) with a tantivy index.
pub fn register_tokenizers(analysis: &AnalysisRegistry, mapping: &Mapping, index: &tantivy::Index) {
    let derived = mapping
        .fields
        .values()
        .filter(|f| f.sayt.is_some_and(|s| s.role != mapping::SaytRole::Root))
        .map(|f| f.analyzer.clone());
    for name in analysis.analyzer_names().into_iter().chain(derived) {
        if let Ok(a) = analysis.analyzer(&name) {
            index.tokenizers().register(&name, TextAnalyzer::from(a));
        }
    }
    for n in mapping
        .fields
        .values()
        .filter_map(|f| f.normalizer.as_ref())
    {
        if let Ok(a) = analysis.normalizer(n) {
            let tn = mapping::normalizer_tokenizer_name(n);
            index
                .tokenizers()
                .register(&tn, TextAnalyzer::from(a.clone()));
            index
                .fast_field_tokenizer()
                .register(&tn, TextAnalyzer::from(a));
        }
    }
}

/// Every `constant_keyword` field with a value is read as a column holding it on every row
/// (tantivy's `ConstantColumns`, a Lode patch), as ES's `ConstantIndexFieldData` gives it to
/// every document of the index: documents indexed before a document set the value stored
/// none, and aggregations, sorts, doc values and scripts must see it on them too.
pub fn register_constant_columns(mapping: &Mapping, index: &tantivy::Index) {
    let values = mapping
        .fields
        .values()
        .filter(|f| f.ty == mapping::FieldType::ConstantKeyword)
        .filter_map(|f| Some((f.path.clone(), f.value.clone()?)))
        .collect();
    index.constant_columns().set(values);
}

#[cfg(test)]
mod constant_column_tests {
    use super::*;
    use tantivy::schema::{FAST, STRING};

    fn terms_of(column: &tantivy::columnar::StrColumn, doc: u32) -> Vec<String> {
        column
            .term_ords(doc)
            .map(|ord| {
                let mut s = String::new();
                column.ord_to_str(ord, &mut s).unwrap();
                s
            })
            .collect()
    }

    #[test]
    fn a_constant_keyword_value_is_read_on_every_row_stored_or_not() {
        let mut builder = Schema::builder();
        let c = builder.add_text_field("c", STRING | FAST);
        let other = builder.add_text_field("other", STRING | FAST);
        let index = tantivy::Index::create_in_ram(builder.build());
        let mut writer: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
        writer.add_document(tantivy::doc!(other => "x")).unwrap();
        writer.add_document(tantivy::doc!(c => "v")).unwrap();
        writer.add_document(tantivy::doc!(other => "y")).unwrap();
        writer.commit().unwrap();
        let reg = lode_analysis::AnalysisRegistry::new(None).unwrap();
        let unset = json!({"properties": {"c": {"type": "constant_keyword"}}});
        register_constant_columns(&mapping::compile(&unset, &reg).unwrap(), &index);
        let reader = index.reader().unwrap();
        let column = reader.searcher().segment_reader(0).fast_fields().str("c");
        // No value in the mapping: the stored column, as it is.
        let stored = column.unwrap().unwrap();
        assert_eq!(terms_of(&stored, 0), Vec::<String>::new());
        assert_eq!(terms_of(&stored, 1), ["v"]);

        let set = json!({"properties": {"c": {"type": "constant_keyword", "value": "v"}}});
        register_constant_columns(&mapping::compile(&set, &reg).unwrap(), &index);
        let searcher = reader.searcher();
        let fast = searcher.segment_reader(0).fast_fields();
        let column = fast.str("c").unwrap().unwrap();
        for doc in 0..3 {
            assert_eq!(terms_of(&column, doc), ["v"], "doc {doc}");
        }
        // Other columns are read as stored.
        let other = fast.str("other").unwrap().unwrap();
        assert_eq!(terms_of(&other, 1), Vec::<String>::new());
    }
}

#[cfg(test)]
mod routing_tests {
    use super::*;

    /// The reference MurmurHash3_x86_32's values, seed 0 and ES's slice seed 7919.
    #[test]
    fn murmur3_32_known_values() {
        assert_eq!(murmur3_32(b"hello"), 0x248b_fa47);
        assert_eq!(murmur3_32(b""), 0);
        assert_eq!(murmur3_32_seeded::<7919>(b"hello"), 0x1da2_ba2f);
        assert_eq!(murmur3_32_seeded::<7919>(b"abcdefg"), 0x4836_2aad);
    }

    /// Shards Elasticsearch 8 puts these ids on (computed with ES's `Murmur3HashFunction`).
    #[test]
    fn ids_route_to_the_shards_elasticsearch_picks() {
        let shard = |id: &str, routing_shards: i64, shards: i64| {
            (routing_hash(id) as i64).rem_euclid(routing_shards) / (routing_shards / shards)
        };
        let ids = ["1", "2", "3", "4"];
        let explicit: Vec<i64> = ids.iter().map(|id| shard(id, 5, 5)).collect();
        assert_eq!(explicit, [3, 2, 4, 2]);
        let default: Vec<i64> = ids.iter().map(|id| shard(id, 640, 5)).collect();
        assert_eq!(default, [4, 3, 0, 1]);
        assert_eq!(routing_hash("1"), -126235597);
    }

    #[test]
    fn default_routing_shards_allow_splitting_to_1024() {
        let flat = FlatSettings::default();
        let n = |shards| routing_num_shards(&flat, shards).unwrap();
        assert_eq!(n(1), 1024);
        assert_eq!(n(5), 640);
        assert_eq!(n(2), 1024);
        assert_eq!(n(3), 768);
        assert_eq!(n(1024), 2048);
    }
}

//! A shard: one tantivy index, its translog, and the live version map that gives realtime GET
//! and version checks for operations not yet refreshed.
//!
//! Write path (under the shard's write lock, so seq_no order = translog order = index order):
//! version check → assign seq_no → append to translog → tantivy add/delete → live version map.
//! The caller then waits for durability (`sync_translog`) outside the lock.

use crate::directory::LazySyncDirectory;
use crate::document::ParsedDoc;
use crate::error::{EsError, EsResult};
use crate::points::PointsWarmer;
use crate::schema::{self, nested_parent_term, MetaFields};
use crate::settings::{Codec, IndexConfig};
use crate::source_store::{self, SegmentStore, StoredFields};
use crate::translog::{Location, OpKind, Translog, TranslogOp, TranslogStats};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tantivy::index::SegmentId;
use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy, UserOperation};
use tantivy::schema::{IndexRecordOption, Schema};
use tantivy::store::{Compressor, ZstdCompressor};
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, Searcher,
    SegmentMeta, TantivyDocument, Term, TERMINATED,
};

pub const PRIMARY_TERM: u64 = 1;
/// How long a delete's version is remembered (`index.gc_deletes`).
const GC_DELETES: Duration = Duration::from_secs(60);
/// Unrefreshed operations kept for realtime GET before an internal refresh is forced.
const MAX_LIVE_ENTRIES: usize = 250_000;

/// How a write's version is checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VersionReq {
    Internal,
    IfSeqNo { seq_no: u64, primary_term: u64 },
    External(u64),
    ExternalGte(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    Created,
    Updated,
    Deleted,
    NotFound,
    Noop,
}

impl WriteOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteOutcome::Created => "created",
            WriteOutcome::Updated => "updated",
            WriteOutcome::Deleted => "deleted",
            WriteOutcome::NotFound => "not_found",
            WriteOutcome::Noop => "noop",
        }
    }
}

#[derive(Debug, Clone)]
pub struct WriteResult {
    pub seq_no: u64,
    pub version: u64,
    pub outcome: WriteOutcome,
    pub location: Location,
}

/// A document as GET returns it.
#[derive(Debug, Clone)]
pub struct StoredDoc {
    pub seq_no: u64,
    pub version: u64,
    pub source: Arc<[u8]>,
    pub routing: Option<String>,
}

/// The version map: the writes since the searcher last moved, by document id.
type LiveMap = HashMap<String, LiveEntry, foldhash::fast::RandomState>;

#[derive(Clone)]
struct LiveEntry {
    seq_no: u64,
    version: u64,
    /// `None` for a delete (a tombstone).
    source: Option<Arc<[u8]>>,
    routing: Option<String>,
    at: Instant,
}

/// The current state of a document id, for version checks.
#[derive(Debug, Clone, Copy)]
struct Current {
    seq_no: u64,
    version: u64,
    exists: bool,
    /// Whether a tantivy document for this id may exist (so it must be deleted first).
    in_index: bool,
}

/// Counters reported by `_stats`.
#[derive(Default)]
pub struct ShardStats {
    pub index_total: AtomicU64,
    pub index_time_nanos: AtomicU64,
    pub index_failed: AtomicU64,
    pub delete_total: AtomicU64,
    pub delete_time_nanos: AtomicU64,
    pub noop_update_total: AtomicU64,
    pub get_total: AtomicU64,
    pub get_time_nanos: AtomicU64,
    pub get_exists: AtomicU64,
    pub get_missing: AtomicU64,
    pub query_total: AtomicU64,
    pub query_time_nanos: AtomicU64,
    pub fetch_total: AtomicU64,
    pub fetch_time_nanos: AtomicU64,
    pub scroll_total: AtomicU64,
    pub refresh_total: AtomicU64,
    pub refresh_time_nanos: AtomicU64,
    pub external_refresh_total: AtomicU64,
    pub flush_total: AtomicU64,
    pub flush_time_nanos: AtomicU64,
    pub merge_total: Arc<AtomicU64>,
    pub merge_docs: Arc<AtomicU64>,
    pub merge_time_nanos: AtomicU64,
    /// Search statistics per `stats` group named in search requests.
    pub search_groups: Mutex<std::collections::BTreeMap<String, GroupStats>>,
}

/// Search counters of one stats group (`"stats": ["group"]` in a search body).
#[derive(Default, Clone, Copy, Debug)]
pub struct GroupStats {
    pub query_total: u64,
    pub query_time_nanos: u64,
    pub fetch_total: u64,
    pub fetch_time_nanos: u64,
}

impl ShardStats {
    /// Adds one query (`fetch` false) or fetch phase to each named group.
    pub fn record_groups(&self, groups: &[String], fetch: bool, nanos: u64) {
        if groups.is_empty() {
            return;
        }
        let mut map = self.search_groups.lock();
        for g in groups {
            let e = map.entry(g.clone()).or_default();
            if fetch {
                e.fetch_total += 1;
                e.fetch_time_nanos += nanos;
            } else {
                e.query_total += 1;
                e.query_time_nanos += nanos;
            }
        }
    }
}

pub fn add_elapsed(counter: &AtomicU64, since: Instant) {
    counter.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

/// The background merge policy: tantivy's log-structured policy, counting the merges it starts,
/// and starting none while a force merge runs (`paused`).
#[derive(Debug)]
struct CountingMergePolicy {
    inner: LogMergePolicy,
    merges: Arc<AtomicU64>,
    docs: Arc<AtomicU64>,
    paused: Arc<AtomicBool>,
}

/// Set while the node's disk is over the flood-stage watermark (`disk.rs`): a merge needs
/// room for its result before the merged segments go, and it was merges, after writes were
/// blocked, that took a disk from the flood stage to full (I/O errors, a killed index writer).
static DISK_FLOOD: AtomicBool = AtomicBool::new(false);

/// Holds back (or lets go) every shard's background merges for the disk.
pub(crate) fn hold_merges_for_disk(on: bool) {
    if DISK_FLOOD.swap(on, Ordering::Relaxed) != on {
        tracing::warn!(
            held = on,
            "background merges held back for the flood-stage watermark"
        );
    }
}

impl MergePolicy for CountingMergePolicy {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        if self.paused.load(Ordering::Relaxed) || DISK_FLOOD.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let c = self.inner.compute_merge_candidates(segments);
        for cand in &c {
            self.merges.fetch_add(1, Ordering::Relaxed);
            let docs: u64 = segments
                .iter()
                .filter(|s| cand.0.contains(&s.id()))
                .map(|s| s.num_docs() as u64)
                .sum();
            self.docs.fetch_add(docs, Ordering::Relaxed);
        }
        c
    }
}

struct Engine {
    index: Index,
    reader: IndexReader,
    /// Held here because the reader keeps only weak references.
    _warmers: Warmers,
    schema: Schema,
    meta: MetaFields,
    /// This reader's number among every reader the process opened ([`next_reader_id`]).
    reader_id: u64,
}

/// A process-wide number for each `IndexReader` opened: tantivy numbers a reader's searcher
/// generations from zero, so (reader id, generation) is what identifies a searcher's view
/// across reopens (the schema growing, an index closed and opened again).
fn next_reader_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

struct WriteState {
    /// `None` while a refresh or flush commits it outside the lock (`commit_concurrently`);
    /// writes meanwhile queue their index changes in `pending`.
    writer: Option<IndexWriter>,
    /// Index changes made while the writer was out, in seq_no order.
    pending: Vec<IndexChange>,
    next_seq_no: u64,
    ops_since_refresh: u64,
}

/// One change to the tantivy index, as a write makes it.
enum IndexChange {
    DeleteBlock(String),
    AddBlock(ParsedDoc),
}

/// Writes queue at most this many changes while a commit holds the writer, then wait for it:
/// the back-pressure tantivy's bounded document channel gives when the writer is in place.
const MAX_PENDING: usize = 20_000;
/// A commit applies the queued changes to the writer outside the write lock while more than
/// this many are queued (at most `DRAIN_ROUNDS` times), then the rest under the lock.
const DRAIN_UNDER_LOCK: usize = 512;
const DRAIN_ROUNDS: usize = 4;

/// A searcher pinned to one point in time, with the schema it was opened with.
#[derive(Clone)]
pub struct ShardSearcher {
    pub shard_id: usize,
    pub searcher: Searcher,
    pub schema: Schema,
    pub meta: MetaFields,
    /// The `_seq_no` and `_version` columns of each segment, opened once per reader
    /// generation (opening a column decodes its block index: too slow for every GET).
    pub versions: Option<Arc<VersionColumns>>,
    /// Each segment's stored documents (by ordinal), opened once per segment.
    pub stores: Arc<Vec<Arc<SegmentStore>>>,
    /// The reader this searcher comes from (see [`ShardSearcher::view`]).
    pub reader_id: u64,
}

impl ShardSearcher {
    /// A searcher over `searcher`'s segments, their stores opened now (no cache: tests and tools).
    pub fn open(
        shard_id: usize,
        searcher: Searcher,
        schema: Schema,
        meta: MetaFields,
    ) -> EsResult<ShardSearcher> {
        let stores = searcher
            .segment_readers()
            .iter()
            .map(|seg| SegmentStore::open(seg).map(Arc::new))
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(ShardSearcher {
            shard_id,
            searcher,
            schema,
            meta,
            versions: None,
            stores: Arc::new(stores),
            reader_id: 0,
        })
    }

    /// What identifies the data this searcher sees, ordered in time: a newer view of the
    /// shard compares greater (a refresh raises the generation, a reopen the reader id).
    pub fn view(&self) -> (u64, u64) {
        (self.reader_id, self.searcher.generation().generation_id())
    }

    /// A document's stored `_id`, `_routing` and `_source`.
    pub fn stored(&self, addr: DocAddress) -> EsResult<StoredFields> {
        let store = self
            .stores
            .get(addr.segment_ord as usize)
            .ok_or_else(|| EsError::internal("segment ordinal out of range"))?;
        Ok(store.get(addr.doc_id)?)
    }

    /// A document's `_seq_no` and `_version`, from their columns.
    pub fn seq_no_version(&self, addr: DocAddress) -> EsResult<(u64, u64)> {
        let doc = addr.doc_id;
        let cached = self
            .versions
            .as_ref()
            .and_then(|v| v.0.get(addr.segment_ord as usize)?.as_ref());
        let (seq, ver) = match cached {
            Some((seq, ver)) => (seq.first(doc), ver.first(doc)),
            None => {
                let ff = self.searcher.segment_reader(addr.segment_ord).fast_fields();
                (
                    ff.u64(schema::SEQ_NO)?.first(doc),
                    ff.u64(schema::VERSION)?.first(doc),
                )
            }
        };
        Ok((seq.unwrap_or(0), ver.unwrap_or(1)))
    }
}

/// Per segment (by ordinal): the `_seq_no` and `_version` columns.
pub struct VersionColumns(
    Vec<
        Option<(
            tantivy::columnar::Column<u64>,
            tantivy::columnar::Column<u64>,
        )>,
    >,
);

type VersionPair = (
    tantivy::columnar::Column<u64>,
    tantivy::columnar::Column<u64>,
);

impl VersionColumns {
    fn load_segment(seg: &tantivy::SegmentReader) -> Option<VersionPair> {
        let ff = seg.fast_fields();
        Some((ff.u64(schema::SEQ_NO).ok()?, ff.u64(schema::VERSION).ok()?))
    }
}

/// One segment as `_segments` reports it.
#[derive(Debug, Clone)]
pub struct SegmentInfo {
    pub name: String,
    pub generation: u64,
    pub num_docs: u64,
    pub deleted_docs: u64,
    pub size_in_bytes: u64,
    pub committed: bool,
    pub search: bool,
}

pub struct Shard {
    pub id: usize,
    path: PathBuf,
    dir: LazySyncDirectory,
    engine: RwLock<Engine>,
    write: Mutex<WriteState>,
    translog: Translog,
    live: Mutex<LiveMap>,
    refreshed: Mutex<u64>,
    refreshed_cv: Condvar,
    flush_lock: Mutex<()>,
    /// Held by whoever takes the writer out of `write` or needs it in place while not holding
    /// `write` throughout (refresh, flush, merges, schema changes). Lock order: `commit`, then
    /// `write`.
    commit: Mutex<()>,
    /// Signalled when queued changes were taken or the writer is back (`MAX_PENDING`).
    writer_back: Condvar,
    /// Set while a force merge runs: background merges start none.
    merges_paused: Arc<AtomicBool>,
    flushed_segments: Mutex<HashSet<SegmentId>>,
    generations: Mutex<HashMap<SegmentId, u64>>,
    max_seq_no: AtomicU64,
    pub stats: ShardStats,
    last_write: Mutex<Instant>,
    /// Search idleness (ES's `index.search.idle.after`): when a search last reached the shard,
    /// whether a scheduled refresh was skipped since, and how many `refresh=wait_for` writes
    /// wait (they still get scheduled refreshes).
    /// Milliseconds since `opened` (an atomic: every GET marks it).
    last_search: AtomicU64,
    opened: Instant,
    refresh_skipped: AtomicBool,
    refresh_waiters: AtomicUsize,
    codec: Codec,
    /// `_source.enabled`: when false the source is kept only in the translog (for recovery),
    /// never in the index, as Elasticsearch does.
    store_source: AtomicBool,
    version_columns: Mutex<HashMap<SegmentId, Option<VersionPair>>>,
    source_stores: Arc<Mutex<HashMap<SegmentId, Arc<SegmentStore>>>>,
}

fn tantivy_settings(codec: Codec) -> IndexSettings {
    match codec {
        // 32 KiB blocks instead of tantivy's 16: LZ4 finds more repeats across documents
        // (the reference _source compresses 9% smaller) for a few µs more per fetched document.
        Codec::Default => IndexSettings {
            docstore_compression: Compressor::Lz4,
            docstore_blocksize: 32 * 1024,
            ..IndexSettings::default()
        },
        Codec::BestCompression => IndexSettings {
            docstore_compression: Compressor::Zstd(ZstdCompressor {
                compression_level: Some(3),
            }),
            docstore_blocksize: 240 * 1024,
            ..IndexSettings::default()
        },
    }
}

/// Operations recovered from the translog that the caller must parse and replay.
pub type PendingReplay = Vec<TranslogOp>;

impl WriteState {
    fn writer_mut(&mut self) -> &mut IndexWriter {
        self.writer.as_mut().expect("index writer is open")
    }

    /// Deletes the document `id` (and its nested block), now or once the writer is back.
    fn delete_block(&mut self, meta: MetaFields, id: &str) {
        match &self.writer {
            Some(writer) => delete_block(writer, meta, id),
            None => self.pending.push(IndexChange::DeleteBlock(id.to_string())),
        }
    }

    /// Adds a document (and its nested block), now or once the writer is back.
    fn add_block(&mut self, doc: ParsedDoc) -> EsResult<()> {
        match &self.writer {
            Some(writer) => add_block(writer, doc),
            None => {
                self.pending.push(IndexChange::AddBlock(doc));
                Ok(())
            }
        }
    }
}

/// Applies queued changes in order; the first error is returned after all were tried (an
/// error means the writer is broken, which every later write then reports too).
fn apply_changes(
    writer: &IndexWriter,
    meta: MetaFields,
    changes: Vec<IndexChange>,
) -> EsResult<()> {
    let mut first_err = None;
    for change in changes {
        match change {
            IndexChange::DeleteBlock(id) => delete_block(writer, meta, &id),
            IndexChange::AddBlock(doc) => {
                if let Err(e) = add_block(writer, doc) {
                    first_err.get_or_insert(e);
                }
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// What `commit_concurrently` committed.
struct Committed {
    /// The first seq_no the commit does not cover.
    refreshed_to: u64,
    /// Whether any operation was written since the previous commit.
    had_ops: bool,
    /// The translog generation started at the commit point, when asked to roll.
    new_generation: Option<u64>,
}

/// Stops background merges from starting for as long as it lives.
struct PauseMerges<'a>(&'a AtomicBool);

impl<'a> PauseMerges<'a> {
    fn new(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Relaxed);
        PauseMerges(flag)
    }
}

impl Drop for PauseMerges<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// The segments a force merge is due to merge: those present when it started and what its own
/// merges made of them. A background merge already running when it started may still take
/// some of them; its result (which appears as they vanish) joins the scope.
struct MergeScope {
    covered: HashSet<SegmentId>,
    /// Every segment seen at the last listing.
    seen: HashSet<SegmentId>,
}

impl MergeScope {
    fn new(ids: Vec<SegmentId>) -> Self {
        let covered: HashSet<SegmentId> = ids.into_iter().collect();
        MergeScope {
            seen: covered.clone(),
            covered,
        }
    }

    /// Takes in the segments searchable now.
    fn observe(&mut self, alive: impl Iterator<Item = SegmentId>) {
        let alive: HashSet<SegmentId> = alive.collect();
        if self.covered.iter().any(|id| !alive.contains(id)) {
            // Taken by another merge: its result is among the segments new since the last
            // listing (maybe with a refreshed one, merged in too, which is harmless).
            let appeared: Vec<SegmentId> = alive.difference(&self.seen).copied().collect();
            self.covered.extend(appeared);
            self.covered.retain(|id| alive.contains(id));
        }
        self.seen = alive;
    }

    fn covers(&self, id: SegmentId) -> bool {
        self.covered.contains(&id)
    }

    /// Records one of the force merge's own merges.
    fn merged(&mut self, inputs: &[SegmentId], output: Option<SegmentId>) {
        for id in inputs {
            self.covered.remove(id);
        }
        self.covered.extend(output);
        self.seen.extend(output);
    }
}

impl Shard {
    /// Opens (or creates) shard `id` in `path`. Returns the operations the translog holds
    /// beyond the last flush; the caller parses them and passes them to `replay`.
    pub fn open(
        path: &Path,
        id: usize,
        schema: &Schema,
        tokenizers: &dyn Fn(&Index),
        config: &IndexConfig,
    ) -> EsResult<(Shard, PendingReplay)> {
        let index_path = path.join("index");
        // A shard directory that holds data but no commit point is never made a new, empty
        // index: that would lose the documents and let the new index's garbage collection
        // delete the old files (ES's `StoreRecovery`: the shard fails and stays unassigned).
        if !index_path.join("meta.json").exists() {
            let present = shard_data_files(path);
            if !present.is_empty() {
                return Err(missing_commit(&index_path, &present));
            }
        }
        let dir = LazySyncDirectory::open(&index_path)?;
        let index = if Index::exists(&dir).unwrap_or(false) {
            let existing =
                Index::open(dir.clone()).map_err(|e| unreadable_commit(&index_path, e))?;
            if existing.schema() != *schema
                || existing.settings().docstore_compression
                    != tantivy_settings(config.codec).docstore_compression
            {
                drop(existing);
                rewrite_meta(&dir, schema, config.codec)?;
            }
            let index = open_index(&dir, config.codec)?;
            // Also repairs segments an older Lode left without norms for later fields.
            crate::fieldnorms::backfill(&index, &dir, &index_path)?;
            index
        } else {
            let mut builder = Index::builder()
                .schema(schema.clone())
                .settings(tantivy_settings(config.codec));
            if source_store::uses_plugin(schema) {
                builder = builder.register_plugin(source_plugin(config.codec));
            }
            builder.open_or_create(dir.clone())?
        };
        tokenizers(&index);
        let stats = ShardStats::default();
        let merges_paused = Arc::new(AtomicBool::new(false));
        let source_stores = Arc::new(Mutex::new(HashMap::new()));
        let (writer, reader, warmers) =
            open_writer_reader(&index, &stats, &merges_paused, &source_stores)?;
        // A crash can leave files registered in `.managed.json` that no commit references
        // (e.g. `<segment>.<opstamp>.del` of a commit that never finished). The reopened
        // writer counts opstamps from the last commit again, so replay would pick the same
        // name and tantivy refuses to overwrite it: collect that garbage before any commit.
        writer.garbage_collect_files().wait()?;
        let committed_max = committed_max_seq_no(&index);
        let (translog, recovered) = Translog::open(&path.join("translog"))?;
        if recovered.truncated_bytes > 0 {
            tracing::warn!(
                shard = id,
                bytes = recovered.truncated_bytes,
                "translog had a torn or corrupted tail; truncated it"
            );
        }
        let flushed: HashSet<SegmentId> = index.searchable_segment_ids()?.into_iter().collect();
        let next = committed_max.map(|m| m + 1).unwrap_or(0);
        let shard = Shard {
            id,
            path: path.to_path_buf(),
            dir,
            engine: RwLock::new(Engine {
                meta: MetaFields::of(schema),
                schema: schema.clone(),
                index,
                reader,
                _warmers: warmers,
                reader_id: next_reader_id(),
            }),
            write: Mutex::new(WriteState {
                writer: Some(writer),
                pending: Vec::new(),
                next_seq_no: next,
                ops_since_refresh: 0,
            }),
            translog,
            live: Mutex::new(LiveMap::default()),
            refreshed: Mutex::new(next),
            refreshed_cv: Condvar::new(),
            flush_lock: Mutex::new(()),
            commit: Mutex::new(()),
            writer_back: Condvar::new(),
            merges_paused,
            flushed_segments: Mutex::new(flushed),
            generations: Mutex::new(HashMap::new()),
            max_seq_no: AtomicU64::new(next),
            stats,
            last_write: Mutex::new(Instant::now()),
            last_search: AtomicU64::new(0),
            opened: Instant::now(),
            refresh_skipped: AtomicBool::new(false),
            refresh_waiters: AtomicUsize::new(0),
            codec: config.codec,
            store_source: AtomicBool::new(true),
            version_columns: Mutex::new(HashMap::new()),
            source_stores,
        };
        Ok((shard, recovered.ops))
    }

    /// Re-applies recovered operations (with their parsed documents), then flushes so the
    /// translog starts empty. Idempotent: each operation sets the id's final state.
    ///
    /// The translog holds everything since the last flush, most of which the last refresh
    /// commit usually holds too (refresh commits are not fsynced, so they cannot be trusted
    /// to exist, but they can be read): an operation whose id the opened index already holds
    /// at the same or a later seq_no is skipped. Re-indexing it would write the data again
    /// (a restart after a crash re-indexed up to 512 MB of translog, and on a disk near full
    /// that failed and left the index closed).
    pub fn replay(&self, ops: Vec<(TranslogOp, Option<ParsedDoc>)>) -> EsResult<usize> {
        let n = ops.len();
        if n == 0 {
            return Ok(0);
        }
        let committed = self.searcher();
        {
            let mut w = self.lock_write();
            let meta = self.engine.read().meta;
            let mut max_seq = w.next_seq_no;
            let mut applied = 0u64;
            for (op, doc) in ops {
                max_seq = max_seq.max(op.seq_no + 1);
                if lookup(&committed, &op.id)?.is_some_and(|(_, seq, _)| seq >= op.seq_no) {
                    continue;
                }
                applied += 1;
                w.delete_block(meta, &op.id);
                if let (OpKind::Index, Some(mut doc)) = (op.kind, doc) {
                    add_meta(
                        &mut doc.root,
                        meta,
                        &op.id,
                        self.stored(&op.source),
                        op.seq_no,
                        op.version,
                        op.routing.as_deref(),
                    );
                    w.add_block(doc)?;
                }
            }
            w.next_seq_no = max_seq;
            w.ops_since_refresh += applied;
        }
        self.refresh(false)?;
        self.flush()?;
        Ok(n)
    }

    pub fn searcher(&self) -> ShardSearcher {
        let e = self.engine.read();
        let searcher = e.reader.searcher();
        // Columns are immutable per segment: cache them by segment id (a reader generation id is
        // not unique once the schema grows and the reader is reopened).
        let versions = {
            let segs = searcher.segment_readers();
            let mut cache = self.version_columns.lock();
            let cols: Vec<Option<VersionPair>> = segs
                .iter()
                .map(|seg| {
                    cache
                        .entry(seg.segment_id())
                        .or_insert_with(|| VersionColumns::load_segment(seg))
                        .clone()
                })
                .collect();
            cache.retain(|id, _| segs.iter().any(|seg| seg.segment_id() == *id));
            Arc::new(VersionColumns(cols))
        };
        ShardSearcher {
            shard_id: self.id,
            stores: Arc::new(self.segment_stores(&searcher)),
            searcher,
            schema: e.schema.clone(),
            meta: e.meta,
            versions: Some(versions),
            reader_id: e.reader_id,
        }
    }

    /// The stores the warmer opened for `searcher`'s segments. A segment it has not seen (a
    /// searcher from before a reopen) is opened now; one that cannot be opened fails each read
    /// of it, not the whole searcher.
    fn segment_stores(&self, searcher: &Searcher) -> Vec<Arc<SegmentStore>> {
        let mut cache = self.source_stores.lock();
        searcher
            .segment_readers()
            .iter()
            .map(|seg| {
                cache
                    .entry(seg.segment_id())
                    .or_insert_with(|| {
                        Arc::new(
                            SegmentStore::open(seg)
                                .unwrap_or_else(|e| SegmentStore::Broken(e.to_string())),
                        )
                    })
                    .clone()
            })
            .collect()
    }

    fn current(&self, id: &str, live: &LiveMap) -> EsResult<Option<Current>> {
        if let Some(e) = live.get(id) {
            return Ok(Some(Current {
                seq_no: e.seq_no,
                version: e.version,
                exists: e.source.is_some(),
                in_index: e.source.is_some(),
            }));
        }
        // Most writes bring new ids: look the id up before paying for a `ShardSearcher`.
        let (searcher, id_field) = {
            let e = self.engine.read();
            (e.reader.searcher(), e.meta.id)
        };
        if find_live(&searcher, id_field, id)?.is_none() {
            return Ok(None);
        }
        let s = self.searcher();
        Ok(lookup(&s, id)?.map(|(_, seq_no, version)| Current {
            seq_no,
            version,
            exists: true,
            in_index: true,
        }))
    }

    /// Indexes one document. `doc` holds the mapped fields; metadata fields are added here.
    #[allow(clippy::too_many_arguments)]
    pub fn index(
        &self,
        id: &str,
        source: Arc<[u8]>,
        mut doc: ParsedDoc,
        routing: Option<&str>,
        req: VersionReq,
        create_only: bool,
        auto_id: bool,
        index_name: &str,
        uuid: &str,
    ) -> EsResult<WriteResult> {
        let started = Instant::now();
        let mut w = self.lock_write();
        let mut live = self.live.lock();
        let current = if auto_id {
            None
        } else {
            self.current(id, &live)?
        };
        let existing = current.filter(|c| c.exists);
        if create_only {
            if let Some(c) = existing {
                return Err(EsError::version_conflict(
                    index_name,
                    uuid,
                    self.id,
                    id,
                    format!(
                        "version conflict, document already exists (current version [{}])",
                        c.version
                    ),
                ));
            }
        }
        let version = check_version(req, existing, current, id, index_name, uuid, self.id)?;
        let seq_no = w.next_seq_no;
        let meta = self.engine.read().meta;
        let op = TranslogOp {
            kind: OpKind::Index,
            seq_no,
            version,
            id: id.to_string(),
            routing: routing.map(str::to_string),
            source: source.to_vec(),
        };
        let location = self.translog.append(&op)?;
        w.next_seq_no += 1;
        add_meta(
            &mut doc.root,
            meta,
            id,
            self.stored(&source),
            seq_no,
            version,
            routing,
        );
        if current.map(|c| c.in_index).unwrap_or(false) {
            w.delete_block(meta, id);
        }
        w.add_block(doc)?;
        w.ops_since_refresh += 1;
        live.insert(
            id.to_string(),
            LiveEntry {
                seq_no,
                version,
                source: Some(match self.stored(&source) {
                    Some(_) => source,
                    None => Arc::from(&[][..]),
                }),
                routing: routing.map(str::to_string),
                at: Instant::now(),
            },
        );
        let live_len = live.len();
        drop(live);
        drop(w);
        self.max_seq_no.fetch_max(seq_no + 1, Ordering::Relaxed);
        *self.last_write.lock() = Instant::now();
        self.stats.index_total.fetch_add(1, Ordering::Relaxed);
        add_elapsed(&self.stats.index_time_nanos, started);
        if live_len > MAX_LIVE_ENTRIES {
            self.refresh(false)?;
        }
        Ok(WriteResult {
            seq_no,
            version,
            outcome: if existing.is_some() {
                WriteOutcome::Updated
            } else {
                WriteOutcome::Created
            },
            location,
        })
    }

    /// Deletes a document; a missing one still takes a seq_no and answers `not_found`.
    pub fn delete(
        &self,
        id: &str,
        req: VersionReq,
        index_name: &str,
        uuid: &str,
    ) -> EsResult<WriteResult> {
        let started = Instant::now();
        let mut w = self.lock_write();
        let mut live = self.live.lock();
        let current = self.current(id, &live)?;
        let existing = current.filter(|c| c.exists);
        if let (
            VersionReq::IfSeqNo {
                seq_no,
                primary_term,
            },
            None,
        ) = (req, existing)
        {
            return Err(EsError::version_conflict(
                index_name,
                uuid,
                self.id,
                id,
                format!("version conflict, required seqNo [{seq_no}], primary term [{primary_term}] but no document was found"),
            ));
        }
        let version = check_version(req, existing, current, id, index_name, uuid, self.id)?;
        let seq_no = w.next_seq_no;
        let meta = self.engine.read().meta;
        let op = TranslogOp {
            kind: OpKind::Delete,
            seq_no,
            version,
            id: id.to_string(),
            routing: None,
            source: Vec::new(),
        };
        let location = self.translog.append(&op)?;
        w.next_seq_no += 1;
        if current.map(|c| c.in_index).unwrap_or(false) {
            w.delete_block(meta, id);
            w.ops_since_refresh += 1;
        }
        live.insert(
            id.to_string(),
            LiveEntry {
                seq_no,
                version,
                source: None,
                routing: None,
                at: Instant::now(),
            },
        );
        drop(live);
        drop(w);
        self.max_seq_no.fetch_max(seq_no + 1, Ordering::Relaxed);
        *self.last_write.lock() = Instant::now();
        self.stats.delete_total.fetch_add(1, Ordering::Relaxed);
        add_elapsed(&self.stats.delete_time_nanos, started);
        Ok(WriteResult {
            seq_no,
            version,
            outcome: if existing.is_some() {
                WriteOutcome::Deleted
            } else {
                WriteOutcome::NotFound
            },
            location,
        })
    }

    /// Waits until the translog holds `loc` durably (durability `request`).
    pub fn sync_translog(&self, loc: Location) -> EsResult<()> {
        Ok(self.translog.sync_to(loc)?)
    }

    /// Calls `done` once `loc` is durable, without blocking the caller: the first waiter
    /// starts a group-commit leader thread that fsyncs for every waiter.
    pub fn sync_translog_async(
        self: &Arc<Self>,
        loc: Location,
        done: crate::translog::SyncCallback,
    ) {
        if self.translog.enqueue_sync(loc, done) {
            let shard = self.clone();
            let spawned = std::thread::Builder::new()
                .name("lode-translog-sync".into())
                .spawn(move || shard.translog.run_async_leader());
            if let Err(e) = spawned {
                // No thread: lead from here rather than leave the waiters hanging.
                tracing::warn!(error = %e, "could not start a translog sync thread");
                self.translog.run_async_leader();
            }
        }
    }

    /// Fsyncs the translog if it has unsynced operations (durability `async`).
    pub fn sync_translog_if_due(&self, interval: Duration) -> EsResult<()> {
        if self.translog.since_last_sync() >= interval {
            self.translog.sync()?;
        }
        Ok(())
    }

    pub fn translog_stats(&self) -> TranslogStats {
        self.translog.stats()
    }

    pub fn translog_size(&self) -> u64 {
        self.translog.uncommitted_bytes()
    }

    /// Realtime (or, with `realtime = false`, searchable) GET by id.
    pub fn set_store_source(&self, enabled: bool) {
        self.store_source.store(enabled, Ordering::Relaxed);
    }

    fn stored<'a>(&self, source: &'a [u8]) -> Option<&'a [u8]> {
        self.store_source.load(Ordering::Relaxed).then_some(source)
    }

    pub fn get(&self, id: &str, realtime: bool) -> EsResult<Option<StoredDoc>> {
        let started = Instant::now();
        let out = self.get_inner(id, realtime);
        self.stats.get_total.fetch_add(1, Ordering::Relaxed);
        add_elapsed(&self.stats.get_time_nanos, started);
        match &out {
            Ok(Some(_)) => self.stats.get_exists.fetch_add(1, Ordering::Relaxed),
            _ => self.stats.get_missing.fetch_add(1, Ordering::Relaxed),
        };
        out
    }

    fn get_inner(&self, id: &str, realtime: bool) -> EsResult<Option<StoredDoc>> {
        if realtime {
            if let Some(e) = self.live.lock().get(id) {
                return Ok(e.source.clone().map(|source| StoredDoc {
                    seq_no: e.seq_no,
                    version: e.version,
                    source,
                    routing: e.routing.clone(),
                }));
            }
        }
        let s = self.searcher();
        let Some((addr, seq_no, version)) = lookup(&s, id)? else {
            return Ok(None);
        };
        let doc = s.stored(addr)?;
        Ok(Some(StoredDoc {
            seq_no,
            version,
            source: doc.source.unwrap_or_default().into(),
            routing: doc.routing,
        }))
    }

    /// Makes every operation so far searchable (a tantivy commit without fsync).
    /// Returns whether anything changed.
    pub fn refresh(&self, force: bool) -> EsResult<bool> {
        let started = Instant::now();
        let _commit = self.commit.lock();
        if self.write.lock().ops_since_refresh == 0 && !force {
            return self.publish_merges();
        }
        let c = self.commit_concurrently(false)?;
        self.publish(c.refreshed_to)?;
        self.stats.refresh_total.fetch_add(1, Ordering::Relaxed);
        add_elapsed(&self.stats.refresh_time_nanos, started);
        Ok(true)
    }

    /// Publishes segments that background merges committed since the last reload: without
    /// it an idle index would keep searching (and keep on disk) the segments merged away.
    /// Returns whether the searcher changed.
    fn publish_merges(&self) -> EsResult<bool> {
        let e = self.engine.read();
        let committed: HashSet<SegmentId> = e.index.searchable_segment_ids()?.into_iter().collect();
        let searched = e.reader.searcher();
        let current = searched.segment_readers().len() == committed.len()
            && searched
                .segment_readers()
                .iter()
                .all(|r| committed.contains(&r.segment_id()));
        if current {
            return Ok(false);
        }
        reload(&e.reader)?;
        Ok(true)
    }

    /// The write state, once a commit in progress has room for more queued changes.
    fn lock_write(&self) -> MutexGuard<'_, WriteState> {
        let mut w = self.write.lock();
        while w.writer.is_none() && w.pending.len() >= MAX_PENDING {
            self.writer_back.wait(&mut w);
        }
        w
    }

    /// A tantivy commit of everything written so far (no fsync: see `LazySyncDirectory`),
    /// without holding writes up while tantivy finishes and writes the segment (a third of a
    /// second per refresh under a bulk load, which became every bulk request's p99). The
    /// commit point is fixed under the write lock: the writer is taken out, the translog
    /// rolled there when `roll`; writes go on meanwhile (seq_no, translog, live map as
    /// always) and queue their index changes, which are applied in order before the writer
    /// goes back. The caller holds `self.commit`.
    fn commit_concurrently(&self, roll: bool) -> EsResult<Committed> {
        let (mut writer, committed) = {
            let mut w = self.write.lock();
            let new_generation = if roll {
                Some(self.translog.roll()?)
            } else {
                None
            };
            let writer = w.writer.take().expect("index writer is open");
            let committed = Committed {
                refreshed_to: w.next_seq_no,
                had_ops: w.ops_since_refresh > 0,
                new_generation,
            };
            w.ops_since_refresh = 0;
            (writer, committed)
        };
        let payload =
            serde_json::json!({ "max_seq_no": committed.refreshed_to as i64 - 1 }).to_string();
        let result = writer.prepare_commit().and_then(|mut prepared| {
            prepared.set_payload(&payload);
            prepared.commit()
        });
        self.put_writer_back(writer)?;
        result?;
        Ok(committed)
    }

    /// Applies the changes queued while the writer was out, then puts it back: batches outside
    /// the write lock while many are queued, the last ones under it.
    fn put_writer_back(&self, writer: IndexWriter) -> EsResult<()> {
        let meta = self.engine.read().meta;
        let mut result = Ok(());
        for round in 0.. {
            let mut w = self.write.lock();
            if w.pending.len() <= DRAIN_UNDER_LOCK || round == DRAIN_ROUNDS {
                let changes = std::mem::take(&mut w.pending);
                let last = apply_changes(&writer, meta, changes);
                w.writer = Some(writer);
                drop(w);
                self.writer_back.notify_all();
                return result.and(last);
            }
            let changes = std::mem::take(&mut w.pending);
            drop(w);
            self.writer_back.notify_all();
            result = result.and(apply_changes(&writer, meta, changes));
        }
        unreachable!("the last round puts the writer back")
    }

    /// Makes a commit searchable: reloads the reader, forgets live-map entries the searcher
    /// now answers (keeping recent delete tombstones for versioning), wakes `wait_for` callers.
    fn publish(&self, refreshed_to: u64) -> EsResult<()> {
        reload(&self.engine.read().reader)?;
        {
            let mut live = self.live.lock();
            let written = live.len();
            live.retain(|_, e| {
                e.seq_no >= refreshed_to || (e.source.is_none() && e.at.elapsed() < GC_DELETES)
            });
            // A bulk load grows the table to the writes of one refresh interval; it keeps that
            // capacity (tens of MiB) forever unless given back once the writes calm down. While
            // they do not, the next interval refills it: shrinking then would only rehash it
            // up again (2% of a bulk load's CPU, page faults included).
            if live.capacity() > 4096 && written * 4 < live.capacity() {
                let kept = live.len();
                live.shrink_to(kept * 2);
            }
        }
        *self.refreshed.lock() = refreshed_to;
        self.refreshed_cv.notify_all();
        Ok(())
    }

    /// A search reaches the shard: if it is search idle (unsearched for `idle_after`) with
    /// writes whose scheduled refresh was skipped, they are refreshed first, so the search sees
    /// them as it would have without idleness (ES refreshes such a shard before searching it).
    /// Returns whether the searcher changed.
    pub fn search_access(&self, idle_after: Option<Duration>) -> EsResult<bool> {
        self.last_search
            .fetch_max(self.opened.elapsed().as_millis() as u64, Ordering::Relaxed);
        // Cleared only after the refresh, so that a concurrent search of the same shard waits
        // for it (on the commit lock) instead of searching the older reader.
        if idle_after.is_none() || !self.refresh_skipped.load(Ordering::Acquire) {
            return Ok(false);
        }
        let changed = self.refresh(false)?;
        self.refresh_skipped.store(false, Ordering::Release);
        Ok(changed)
    }

    /// A scheduled refresh is due: whether to skip it because the shard is search idle
    /// (remembering that a search must refresh first). `refresh=wait_for` writes still get it.
    pub fn skip_scheduled_refresh(&self, idle_after: Option<Duration>) -> bool {
        let Some(idle_after) = idle_after else {
            return false;
        };
        if self.search_idle_time() < idle_after || self.refresh_waiters.load(Ordering::Acquire) > 0
        {
            return false;
        }
        if self.has_pending_refresh() {
            self.refresh_skipped.store(true, Ordering::Release);
            return true;
        }
        // Nothing to make searchable: the refresh only publishes finished merges.
        false
    }

    /// Whether the shard was unsearched for `idle_after` (ES's `search_idle` shard stat).
    pub fn is_search_idle(&self, idle_after: Option<Duration>) -> bool {
        idle_after.is_some_and(|d| self.search_idle_time() >= d)
    }

    /// How long since a search last reached the shard (ES's `search_idle_time`).
    pub fn search_idle_time(&self) -> Duration {
        let since = self.opened.elapsed().as_millis() as u64;
        Duration::from_millis(since.saturating_sub(self.last_search.load(Ordering::Relaxed)))
    }

    /// Blocks until an operation with `seq_no` is searchable (`refresh=wait_for`), refreshing
    /// itself when periodic refresh is off.
    pub fn wait_for_refresh(&self, seq_no: u64, periodic: bool) -> EsResult<()> {
        if !periodic {
            self.refresh(false)?;
            return Ok(());
        }
        self.refresh_waiters.fetch_add(1, Ordering::AcqRel);
        let waited = self.wait_refreshed(seq_no);
        self.refresh_waiters.fetch_sub(1, Ordering::AcqRel);
        waited
    }

    fn wait_refreshed(&self, seq_no: u64) -> EsResult<()> {
        let mut r = self.refreshed.lock();
        let deadline = Instant::now() + Duration::from_secs(30);
        while *r <= seq_no {
            if self.refreshed_cv.wait_until(&mut r, deadline).timed_out() {
                drop(r);
                self.refresh(false)?;
                return Ok(());
            }
        }
        Ok(())
    }

    pub fn has_pending_refresh(&self) -> bool {
        self.write.lock().ops_since_refresh > 0
    }

    /// Makes all indexed data durable and trims the translog (Elasticsearch's flush).
    pub fn flush(&self) -> EsResult<()> {
        let _one = self.flush_lock.lock();
        let started = Instant::now();
        // The translog rolls at the commit point, so the older generations hold exactly the
        // operations in this commit.
        let new_gen = {
            let _commit = self.commit.lock();
            let c = self.commit_concurrently(true)?;
            if c.had_ops {
                self.publish(c.refreshed_to)?;
            }
            c.new_generation.expect("rolled")
        };
        self.dir.sync_all()?;
        self.translog.trim_below(new_gen)?;
        let ids = self.engine.read().index.searchable_segment_ids()?;
        *self.flushed_segments.lock() = ids.into_iter().collect();
        self.stats.flush_total.fetch_add(1, Ordering::Relaxed);
        add_elapsed(&self.stats.flush_time_nanos, started);
        Ok(())
    }

    /// Merges segments down to `max_num_segments` (or only rewrites segments with deletes),
    /// blocking until done.
    ///
    /// As Lucene's `forceMerge`, it merges the segments present when it starts (and what its
    /// own merges make of them), not those later refreshes add: under steady writes a merge of
    /// the whole index takes seconds, during which new segments appear, so "until one segment
    /// is left" would never end. Background merges start none meanwhile, so none takes a
    /// segment this merge is due to merge.
    pub fn force_merge(
        &self,
        max_num_segments: Option<usize>,
        only_expunge_deletes: bool,
    ) -> EsResult<()> {
        let started = Instant::now();
        self.refresh(false)?;
        let _paused = PauseMerges::new(&self.merges_paused);
        reload(&self.engine.read().reader)?;
        let mut scope = MergeScope::new(self.engine.read().index.searchable_segment_ids()?);
        // A background merge that was already running may hold some of the chosen segments;
        // tantivy then refuses the merge, so list again and retry.
        let mut attempt = 0;
        loop {
            match self.force_merge_once(max_num_segments, only_expunge_deletes, &mut scope) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) if attempt < 20 => {
                    tracing::debug!(error = %e.reason, attempt, "force merge raced a background merge; retrying");
                }
                Err(e) => return Err(e),
            }
            attempt += 1;
            if attempt > 20 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        add_elapsed(&self.stats.merge_time_nanos, started);
        reload(&self.engine.read().reader)?;
        Ok(())
    }

    /// One force-merge pass over the segments in scope; `true` once nothing is left to merge.
    fn force_merge_once(
        &self,
        max_num_segments: Option<usize>,
        only_expunge_deletes: bool,
        scope: &mut MergeScope,
    ) -> EsResult<bool> {
        reload(&self.engine.read().reader)?;
        let all = self.engine.read().index.searchable_segment_metas()?;
        scope.observe(all.iter().map(|m| m.id()));
        let metas: Vec<SegmentMeta> = all.into_iter().filter(|m| scope.covers(m.id())).collect();
        let mut groups: Vec<Vec<SegmentId>> = Vec::new();
        if only_expunge_deletes {
            for m in metas.iter().filter(|m| m.num_deleted_docs() > 0) {
                groups.push(vec![m.id()]);
            }
        } else {
            let target = max_num_segments.unwrap_or(1).max(1);
            let mut sorted = metas.clone();
            sorted.sort_by_key(|m| m.num_docs());
            if sorted.len() > target {
                let take = sorted.len() - target + 1;
                groups.push(sorted.iter().take(take).map(|m| m.id()).collect());
            } else if target == 1 && sorted.len() == 1 && sorted[0].num_deleted_docs() > 0 {
                groups.push(vec![sorted[0].id()]);
            }
        }
        if groups.is_empty() {
            return Ok(true);
        }
        for g in groups {
            let fut = {
                let _commit = self.commit.lock();
                let mut w = self.write.lock();
                w.writer_mut().merge(&g)
            };
            let merged = fut.wait()?;
            #[cfg(test)]
            tests::FORCE_MERGES.with(|n| n.set(n.get() + 1));
            scope.merged(&g, merged.map(|m| m.id()));
            self.stats.merge_total.fetch_add(1, Ordering::Relaxed);
        }
        // Expunging is one pass; a merge to N segments is done when N remain.
        Ok(only_expunge_deletes)
    }

    /// Swaps in a grown schema (after a mapping update). Pending operations are committed
    /// first; the writer and reader are reopened on the new schema.
    pub fn extend_schema(&self, schema: &Schema, tokenizers: &dyn Fn(&Index)) -> EsResult<()> {
        let _commit = self.commit.lock();
        let mut w = self.write.lock();
        let mut e = self.engine.write();
        if e.schema == *schema {
            return Ok(());
        }
        // The commit carries the seq_no checkpoint like every other: without it a crash before
        // the next commit restarts the shard's sequence at 0 (nothing newer to replay).
        let payload = serde_json::json!({ "max_seq_no": w.next_seq_no as i64 - 1 }).to_string();
        let mut prepared = w.writer_mut().prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        // The writer must be gone (merges finished) before meta.json changes under it.
        if let Some(old) = w.writer.take() {
            old.wait_merging_threads()?;
        }
        rewrite_meta(&self.dir, schema, self.codec)?;
        let index = open_index(&self.dir, self.codec)?;
        crate::fieldnorms::backfill(&index, &self.dir, &self.path.join("index"))?;
        tokenizers(&index);
        let (writer, reader, warmers) = open_writer_reader(
            &index,
            &self.stats,
            &self.merges_paused,
            &self.source_stores,
        )?;
        w.writer = Some(writer);
        *e = Engine {
            meta: MetaFields::of(schema),
            schema: schema.clone(),
            index,
            reader,
            _warmers: warmers,
            reader_id: next_reader_id(),
        };
        Ok(())
    }

    /// Registers `mapping`'s constant_keyword values as constant columns of the shard's index.
    pub fn set_constant_columns(&self, mapping: &crate::mapping::Mapping) {
        crate::index::register_constant_columns(mapping, &self.engine.read().index);
    }

    pub fn segments(&self) -> EsResult<Vec<SegmentInfo>> {
        let e = self.engine.read();
        let searcher = e.reader.searcher();
        let flushed = self.flushed_segments.lock().clone();
        let mut gens = self.generations.lock();
        let mut next_gen = gens.values().copied().max().map(|g| g + 1).unwrap_or(0);
        let sizes = segment_file_sizes(&self.path.join("index"));
        let mut out = Vec::new();
        let mut metas = e.index.searchable_segment_metas()?;
        let searchable: HashSet<SegmentId> = searcher
            .segment_readers()
            .iter()
            .map(|r| r.segment_id())
            .collect();
        metas.sort_by_key(|m| m.id().uuid_string());
        for m in metas {
            let g = *gens.entry(m.id()).or_insert_with(|| {
                next_gen += 1;
                next_gen - 1
            });
            out.push(SegmentInfo {
                name: format!("_{}", radix36(g)),
                generation: g,
                num_docs: m.num_docs() as u64,
                deleted_docs: m.num_deleted_docs() as u64,
                size_in_bytes: sizes.get(&m.id().uuid_string()).copied().unwrap_or(0),
                committed: flushed.contains(&m.id()),
                search: searchable.contains(&m.id()),
            });
        }
        out.sort_by_key(|s| s.generation);
        Ok(out)
    }

    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Per-field disk usage of the segments the current searcher holds (`_disk_usage`).
    pub fn disk_usage(
        &self,
    ) -> EsResult<std::collections::BTreeMap<String, crate::disk_usage::FieldDiskUsage>> {
        let searcher = self.engine.read().reader.searcher();
        crate::disk_usage::analyze(&searcher)
    }

    pub fn store_size(&self) -> u64 {
        self.dir.size_in_bytes()
    }

    pub fn max_seq_no(&self) -> i64 {
        self.max_seq_no.load(Ordering::Relaxed) as i64 - 1
    }

    pub fn idle_for(&self) -> Duration {
        self.last_write.lock().elapsed()
    }

    /// Live root documents (`_count` and `_cat/count`): `doc_counts` less the live nested
    /// documents, which Lucene-level counts (`_stats`, `_cat/indices`) include, as in ES.
    pub fn root_doc_count(&self) -> EsResult<u64> {
        let e = self.engine.read();
        let searcher = e.reader.searcher();
        let mut n = searcher.num_docs();
        if let Some(nested) = e.meta.nested {
            let term = Term::from_field_text(nested, schema::NESTED_CHILD);
            for seg in searcher.segment_readers() {
                let inv = seg.inverted_index(nested)?;
                if let Some(mut p) = inv.read_postings(&term, IndexRecordOption::Basic)? {
                    let mut d = p.doc();
                    while d != TERMINATED {
                        if !seg.is_deleted(d) {
                            n -= 1;
                        }
                        d = p.advance();
                    }
                }
            }
        }
        Ok(n)
    }

    pub fn doc_counts(&self) -> (u64, u64) {
        let s = self.engine.read().reader.searcher();
        let docs = s
            .segment_readers()
            .iter()
            .map(|r| r.num_docs() as u64)
            .sum();
        let deleted = s
            .segment_readers()
            .iter()
            .map(|r| r.num_deleted_docs() as u64)
            .sum();
        (docs, deleted)
    }
}

fn radix36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut s = Vec::new();
    while n > 0 {
        s.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    s.reverse();
    String::from_utf8(s).unwrap()
}

fn segment_file_sizes(dir: &Path) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some((stem, _)) = name.split_once('.') {
                if stem.len() == 32 {
                    *out.entry(stem.to_string()).or_insert(0) +=
                        e.metadata().map(|m| m.len()).unwrap_or(0);
                }
            }
        }
    }
    out
}

fn source_plugin(codec: Codec) -> Arc<source_store::SourcePlugin> {
    source_store::SourcePlugin::new(match codec {
        Codec::Default => source_store::StoreCodec::DEFAULT,
        Codec::BestCompression => source_store::StoreCodec::BEST_COMPRESSION,
    })
}

/// Opens an existing index with the source store plugin when its schema keeps `_source` there
/// (plugins are not persisted: tantivy refuses to write or merge without them).
fn open_index(dir: &LazySyncDirectory, codec: Codec) -> EsResult<Index> {
    let mut index = Index::open(dir.clone())?;
    if source_store::uses_plugin(&index.schema()) {
        index.register_plugin(source_plugin(codec));
    }
    Ok(index)
}

type SourceStores = Arc<Mutex<HashMap<SegmentId, Arc<SegmentStore>>>>;

type Warmers = (Arc<PointsWarmer>, Arc<SourceWarmer>);

/// Opens each new segment's stored fields while its searcher is created. tantivy's garbage
/// collection deletes a merged-away segment's files even while an older searcher maps them (the
/// open mappings stay valid); a file first opened after that would be gone, so it is opened
/// before the searcher is published (a reload that loses that race is retried: `reload`).
pub struct SourceWarmer(SourceStores);

impl tantivy::Warmer for SourceWarmer {
    fn warm(&self, searcher: &Searcher) -> tantivy::Result<()> {
        for seg in searcher.segment_readers() {
            if self.0.lock().contains_key(&seg.segment_id()) {
                continue;
            }
            let store = Arc::new(SegmentStore::open(seg)?);
            self.0.lock().insert(seg.segment_id(), store);
        }
        Ok(())
    }

    fn garbage_collect(&self, live: &[&tantivy::SearcherGeneration]) {
        self.0
            .lock()
            .retain(|id, _| live.iter().any(|g| g.segments().contains_key(id)));
    }
}

/// Reloads the reader; a reload whose segments were merged away and deleted before their stored
/// fields were opened (see [`SourceWarmer`]) is retried, and sees the merged segment instead.
fn reload(reader: &IndexReader) -> tantivy::Result<()> {
    let mut attempt = 0;
    loop {
        match reader.reload() {
            Err(e) if attempt < 5 && is_missing_file(&e) => attempt += 1,
            other => return other,
        }
    }
}

fn is_missing_file(e: &tantivy::TantivyError) -> bool {
    matches!(
        e,
        tantivy::TantivyError::OpenReadError(
            tantivy::directory::error::OpenReadError::FileDoesNotExist(_)
        )
    )
}

fn open_writer_reader(
    index: &Index,
    stats: &ShardStats,
    merges_paused: &Arc<AtomicBool>,
    source_stores: &SourceStores,
) -> EsResult<(IndexWriter, IndexReader, Warmers)> {
    // One indexing thread per shard: the request threads already parse and prepare documents in
    // parallel, and one thread's segments are twice as large as two threads' at each refresh
    // (fewer term dictionaries to build, fewer merges: 12% less CPU for the reference load).
    let threads = 1;
    let writer: IndexWriter = index.writer_with_num_threads(threads, 192 * 1024 * 1024)?;
    writer.set_merge_policy(Box::new(CountingMergePolicy {
        inner: LogMergePolicy::default(),
        merges: stats.merge_total.clone(),
        docs: stats.merge_docs.clone(),
        paused: merges_paused.clone(),
    }));
    let points = Arc::new(PointsWarmer::default());
    let sources = Arc::new(SourceWarmer(source_stores.clone()));
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .warmers(vec![
            Arc::downgrade(&points) as std::sync::Weak<dyn tantivy::Warmer>,
            Arc::downgrade(&sources) as std::sync::Weak<dyn tantivy::Warmer>,
        ])
        .try_into()?;
    Ok((writer, reader, (points, sources)))
}

/// The files of a shard directory that are index data: everything but tantivy's lock files
/// (which a new index leaves behind too), as paths relative to the shard directory, sorted.
fn shard_data_files(shard: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
                continue;
            }
            let name = entry.file_name();
            if matches!(
                name.to_str(),
                Some(".tantivy-writer.lock" | ".tantivy-meta.lock")
            ) {
                continue;
            }
            if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(shard, shard, &mut out);
    out.sort();
    out
}

/// ES's failure for a store with files but no commit point: `StoreRecovery` throws
/// `IndexShardRecoveryException` caused by Lucene's `IndexNotFoundException`.
fn missing_commit(index_path: &Path, files: &[String]) -> EsError {
    let listed = format!("[{}]", files.join(", "));
    EsError::new(
        500,
        "index_shard_recovery_exception",
        format!("shard allocated for local recovery (post api), should exist, but doesn't, current files: {listed}"),
    )
    .caused_by(EsError::new(
        500,
        "index_not_found_exception",
        format!(
            "no segments* file found in store({}): files: {listed}",
            index_path.display()
        ),
    ))
}

/// An existing commit point that cannot be read: Lucene's `CorruptIndexException` when its
/// contents do not parse, the I/O failure otherwise.
fn unreadable_commit(index_path: &Path, e: tantivy::TantivyError) -> EsError {
    match e {
        e @ tantivy::TantivyError::DataCorruption(_) => EsError::new(
            500,
            "corrupt_index_exception",
            format!(
                "{e} (resource=store({}))",
                index_path.join("meta.json").display()
            ),
        ),
        other => EsError::from(other),
    }
}

/// Rewrites meta.json with a new schema and doc-store codec (segments are untouched: fields
/// only ever get appended, so existing segments stay valid).
fn rewrite_meta(dir: &LazySyncDirectory, schema: &Schema, codec: Codec) -> EsResult<()> {
    use tantivy::directory::Directory;
    let bytes = dir
        .atomic_read(Path::new("meta.json"))
        .map_err(|e| EsError::internal(format!("cannot read index metadata: {e}")))?;
    let mut meta: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| EsError::internal(format!("corrupt index metadata: {e}")))?;
    meta["schema"] = serde_json::to_value(schema).map_err(|e| EsError::internal(e.to_string()))?;
    let settings = tantivy_settings(codec);
    meta["index_settings"]["docstore_compression"] =
        serde_json::to_value(settings.docstore_compression)
            .map_err(|e| EsError::internal(e.to_string()))?;
    meta["index_settings"]["docstore_blocksize"] = serde_json::json!(settings.docstore_blocksize);
    let out = serde_json::to_vec_pretty(&meta).map_err(|e| EsError::internal(e.to_string()))?;
    dir.atomic_write(Path::new("meta.json"), &out)?;
    dir.sync_all()?;
    Ok(())
}

fn committed_max_seq_no(index: &Index) -> Option<u64> {
    let metas = index.load_metas().ok()?;
    let payload = metas.payload?;
    let v: serde_json::Value = serde_json::from_str(&payload).ok()?;
    let m = v.get("max_seq_no")?.as_i64()?;
    if m < 0 {
        None
    } else {
        Some(m as u64)
    }
}

/// Deletes the document `id` and, in an index with `nested` mappings, its nested documents.
fn delete_block(writer: &IndexWriter, meta: MetaFields, id: &str) {
    writer.delete_term(Term::from_field_text(meta.id, id));
    if let Some(nested) = meta.nested {
        writer.delete_term(Term::from_field_text(nested, &nested_parent_term(id)));
    }
}

/// Adds a parsed document. With nested documents, they and the root go in one batch
/// (`IndexWriter::run`), which tantivy adds to one segment with contiguous doc ids, the root
/// last: the block join (Lucene's `addDocuments`). Merges keep the block's order.
fn add_block(writer: &IndexWriter, doc: ParsedDoc) -> EsResult<()> {
    if doc.nested.is_empty() {
        writer.add_document(doc.root)?;
        return Ok(());
    }
    let ops: Vec<UserOperation> = doc
        .nested
        .into_iter()
        .chain(std::iter::once(doc.root))
        .map(UserOperation::Add)
        .collect();
    writer.run(ops)?;
    Ok(())
}

fn add_meta(
    doc: &mut TantivyDocument,
    meta: MetaFields,
    id: &str,
    source: Option<&[u8]>,
    seq_no: u64,
    version: u64,
    routing: Option<&str>,
) {
    doc.add_text(meta.id, id);
    if let Some(source) = source {
        doc.add_bytes(meta.source, source);
    }
    doc.add_u64(meta.seq_no, seq_no);
    doc.add_u64(meta.version, version);
    if let Some(r) = routing {
        doc.add_text(meta.routing, r);
    }
}

/// Finds the live document for `id` in a searcher: (address, seq_no, version).
pub fn lookup(s: &ShardSearcher, id: &str) -> EsResult<Option<(DocAddress, u64, u64)>> {
    let Some(addr) = find_live(&s.searcher, s.meta.id, id)? else {
        return Ok(None);
    };
    let (seq, ver) = s.seq_no_version(addr)?;
    Ok(Some((addr, seq, ver)))
}

/// The live document with this `_id`, if any.
fn find_live(
    searcher: &Searcher,
    id_field: tantivy::schema::Field,
    id: &str,
) -> EsResult<Option<DocAddress>> {
    let term = Term::from_field_text(id_field, id);
    for (ord, seg) in searcher.segment_readers().iter().enumerate() {
        let inv = seg.inverted_index(id_field)?;
        let Some(mut postings) = inv.read_postings(&term, IndexRecordOption::Basic)? else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if !seg.is_deleted(doc) {
                return Ok(Some(DocAddress::new(ord as u32, doc)));
            }
            doc = postings.advance();
        }
    }
    Ok(None)
}

/// Applies Elasticsearch's version rules; returns the new version.
fn check_version(
    req: VersionReq,
    existing: Option<Current>,
    any: Option<Current>,
    id: &str,
    index_name: &str,
    uuid: &str,
    shard: usize,
) -> EsResult<u64> {
    let conflict = |reason: String| EsError::version_conflict(index_name, uuid, shard, id, reason);
    match req {
        VersionReq::Internal => Ok(any.map(|c| c.version + 1).unwrap_or(1)),
        VersionReq::IfSeqNo { seq_no, primary_term } => match existing {
            None => Err(conflict(format!(
                "version conflict, required seqNo [{seq_no}], primary term [{primary_term}] but no document was found"
            ))),
            Some(c) if c.seq_no != seq_no || primary_term != PRIMARY_TERM => Err(conflict(format!(
                "version conflict, required seqNo [{seq_no}], primary term [{primary_term}]. current document has seqNo [{}] and primary term [{PRIMARY_TERM}]",
                c.seq_no
            ))),
            Some(c) => Ok(c.version + 1),
        },
        VersionReq::External(v) => match any {
            Some(c) if c.version >= v => Err(conflict(format!(
                "version conflict, current version [{}] is higher or equal to the one provided [{v}]",
                c.version
            ))),
            _ => Ok(v),
        },
        VersionReq::ExternalGte(v) => match any {
            Some(c) if c.version > v => Err(conflict(format!(
                "version conflict, current version [{}] is higher than the one provided [{v}]",
                c.version
            ))),
            _ => Ok(v),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Mapping;
    use crate::settings::FlatSettings;
    use tantivy::collector::Count;
    use tantivy::query::{AllQuery, TermQuery};

    thread_local! {
        /// Merges `force_merge` made on this thread.
        pub(super) static FORCE_MERGES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn open(path: &Path) -> Shard {
        let schema = schema::extend(None, &Mapping::empty());
        let config = IndexConfig::from_flat(&FlatSettings::default()).unwrap();
        Shard::open(path, 0, &schema, &|_| {}, &config).unwrap().0
    }

    fn put(shard: &Shard, id: &str, body: &str) -> WriteResult {
        let doc = ParsedDoc {
            root: TantivyDocument::default(),
            nested: Vec::new(),
        };
        let source: Arc<[u8]> = Arc::from(body.as_bytes());
        shard
            .index(
                id,
                source,
                doc,
                None,
                VersionReq::Internal,
                false,
                false,
                "t",
                "u",
            )
            .unwrap()
    }

    // A count: no score, so tantivy's statistics do not matter (and lode-query is out of reach).
    #[allow(clippy::disallowed_methods)]
    fn count(shard: &Shard, id: Option<&str>) -> usize {
        let s = shard.searcher();
        match id {
            None => s.searcher.search(&AllQuery, &Count).unwrap(),
            Some(id) => {
                let term = Term::from_field_text(s.meta.id, id);
                let q = TermQuery::new(term, IndexRecordOption::Basic);
                s.searcher.search(&q, &Count).unwrap()
            }
        }
    }

    /// A shard directory with data but no commit point (or an unreadable one) fails to open
    /// and is left byte for byte as it was; an empty directory still becomes a new index.
    #[test]
    fn a_store_without_its_commit_is_refused_untouched() {
        fn tree(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
            let mut out = std::collections::BTreeMap::new();
            for rel in shard_data_files(root) {
                out.insert(rel.clone(), std::fs::read(root.join(&rel)).unwrap());
            }
            out
        }
        let schema = schema::extend(None, &Mapping::empty());
        let config = IndexConfig::from_flat(&FlatSettings::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        {
            let shard = open(dir.path());
            put(&shard, "a", "{}");
            shard.flush().unwrap();
            put(&shard, "b", "{}");
            // Committed (not flushed: the translog keeps b), so that no indexing thread is
            // still writing a segment while the files are compared below.
            shard.refresh(true).unwrap();
        }
        let meta = dir.path().join("index").join("meta.json");
        let saved = std::fs::read(&meta).unwrap();
        std::fs::remove_file(&meta).unwrap();
        let before = tree(dir.path());
        let err = Shard::open(dir.path(), 0, &schema, &|_| {}, &config)
            .err()
            .unwrap();
        assert_eq!(err.kind, "index_shard_recovery_exception");
        assert!(err.reason.contains("should exist, but doesn't"));
        assert_eq!(err.caused_by.unwrap().kind, "index_not_found_exception");
        assert_eq!(tree(dir.path()), before);

        std::fs::write(&meta, b"{not json").unwrap();
        let before = tree(dir.path());
        let err = Shard::open(dir.path(), 0, &schema, &|_| {}, &config)
            .err()
            .unwrap();
        assert_eq!(err.kind, "corrupt_index_exception");
        assert_eq!(tree(dir.path()), before);

        std::fs::write(&meta, saved).unwrap();
        let (shard, ops) = Shard::open(dir.path(), 0, &schema, &|_| {}, &config).unwrap();
        assert_eq!(count(&shard, Some("a")), 1);
        assert_eq!(ops.len(), 1, "the translog still holds b");

        let fresh = tempfile::tempdir().unwrap();
        assert_eq!(count(&open(&fresh.path().join("new")), None), 0);
    }

    /// Writes made while a commit holds the writer queue, and land in order once it is back:
    /// an update replaces the queued add, a delete removes it.
    #[test]
    fn writes_during_a_commit_are_applied_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let shard = open(dir.path());
        put(&shard, "kept", "{}");
        put(&shard, "gone", "{}");
        shard.refresh(true).unwrap();
        let commit = shard.commit.lock();
        let writer = shard.write.lock().writer.take().unwrap();
        put(&shard, "new", r#"{"v":1}"#);
        let updated = put(&shard, "new", r#"{"v":2}"#);
        assert_eq!(updated.version, 2);
        put(&shard, "kept", r#"{"v":2}"#);
        shard
            .delete("gone", VersionReq::Internal, "t", "u")
            .unwrap();
        assert_eq!(shard.write.lock().pending.len(), 6);
        // Realtime reads see the queued writes already.
        let got = shard.get("new", true).unwrap().unwrap();
        assert_eq!(&*got.source, br#"{"v":2}"#);
        shard.put_writer_back(writer).unwrap();
        drop(commit);
        shard.refresh(true).unwrap();
        assert_eq!(count(&shard, None), 2);
        assert_eq!(count(&shard, Some("new")), 1);
        assert_eq!(count(&shard, Some("kept")), 1);
        assert_eq!(count(&shard, Some("gone")), 0);
        assert!(shard.write.lock().pending.is_empty());
    }

    /// A force merge under steady writes merges the segments present when it started, in one
    /// merge, and returns: the segments refreshes add meanwhile are left out (as Lucene's).
    #[test]
    fn force_merge_under_writes_merges_the_segments_it_found() {
        let dir = tempfile::tempdir().unwrap();
        let shard = open(dir.path());
        for seg in 0..6 {
            for i in 0..50 {
                put(&shard, &format!("{seg}-{i}"), "{}");
            }
            shard.refresh(true).unwrap();
        }
        FORCE_MERGES.with(|n| n.set(0));
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut i = 0;
                while !done.load(Ordering::Relaxed) {
                    put(&shard, &format!("w-{i}"), "{}");
                    if i % 20 == 0 {
                        shard.refresh(true).unwrap();
                    }
                    i += 1;
                }
            });
            shard.force_merge(Some(1), false).unwrap();
            done.store(true, Ordering::Relaxed);
        });
        // One merge of the segments it found (a background merge the refreshes started before
        // the pause may also be counted in `merge_total`, so count the force merge's own).
        assert_eq!(FORCE_MERGES.with(|n| n.get()), 1);
        let s = shard.searcher();
        let largest = s
            .searcher
            .segment_readers()
            .iter()
            .map(|r| r.num_docs())
            .max();
        assert!(largest >= Some(300), "{largest:?}");
        assert!(!shard.merges_paused.load(Ordering::Relaxed));
    }

    #[test]
    fn merge_scope_follows_its_own_and_others_merges() {
        let ids: Vec<SegmentId> = (0..6).map(|_| SegmentId::generate_random()).collect();
        let mut scope = MergeScope::new(ids[..3].to_vec());
        // A refreshed segment appears: out of scope.
        scope.observe(ids[..4].iter().copied());
        assert!(!scope.covers(ids[3]));
        // Our merge of 0 and 1 into 4.
        scope.merged(&ids[..2], Some(ids[4]));
        scope.observe([ids[2], ids[3], ids[4]].into_iter());
        assert!(scope.covers(ids[4]) && scope.covers(ids[2]) && !scope.covers(ids[0]));
        // A merge already running took 2 and made 5: 5 joins the scope.
        scope.observe([ids[3], ids[4], ids[5]].into_iter());
        assert!(scope.covers(ids[5]) && scope.covers(ids[4]) && !scope.covers(ids[3]));
    }

    /// Replay after a crash skips what the last (refresh) commit already holds and re-applies
    /// the rest: nothing is written twice, and an older operation never overwrites newer state.
    #[test]
    fn replay_skips_operations_the_commit_holds() {
        let dir = tempfile::tempdir().unwrap();
        {
            let shard = open(dir.path());
            put(&shard, "a", r#"{"v":1}"#);
            put(&shard, "a", r#"{"v":2}"#);
            put(&shard, "b", "{}");
            shard.refresh(true).unwrap();
            put(&shard, "c", "{}");
            // Dropped without a flush: the translog holds all four operations.
        }
        let schema = schema::extend(None, &Mapping::empty());
        let config = IndexConfig::from_flat(&FlatSettings::default()).unwrap();
        let (shard, ops) = Shard::open(dir.path(), 0, &schema, &|_| {}, &config).unwrap();
        assert_eq!(ops.len(), 4);
        let parsed = ops
            .into_iter()
            .map(|op| {
                let doc = ParsedDoc {
                    root: TantivyDocument::default(),
                    nested: Vec::new(),
                };
                (op, Some(doc))
            })
            .collect();
        let before = shard.write.lock().ops_since_refresh;
        shard.replay(parsed).unwrap();
        assert_eq!(before, 0);
        assert_eq!(count(&shard, None), 3);
        assert_eq!(count(&shard, Some("a")), 1);
        assert_eq!(shard.get("a", false).unwrap().unwrap().version, 2);
        assert_eq!(count(&shard, Some("c")), 1);
        // Only `c` was indexed again: the committed segment's 3 documents (one deleted) + 1.
        let s = shard.searcher();
        let max_docs: u32 = s
            .searcher
            .segment_readers()
            .iter()
            .map(|r| r.max_doc())
            .sum();
        assert_eq!(max_docs, 4);
        // The next write continues the sequence.
        assert_eq!(put(&shard, "d", "{}").seq_no, 4);
    }

    /// Writers running while refreshes and flushes commit lose nothing and duplicate nothing.
    #[test]
    fn concurrent_writes_refreshes_and_flushes() {
        let dir = tempfile::tempdir().unwrap();
        let shard = open(dir.path());
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut n = 0;
                while !done.load(Ordering::Relaxed) {
                    if n % 5 == 4 {
                        shard.flush().unwrap();
                    } else {
                        shard.refresh(true).unwrap();
                    }
                    n += 1;
                }
            });
            let writers: Vec<_> = (0..3)
                .map(|t| {
                    let shard = &shard;
                    s.spawn(move || {
                        for i in 0..2_000 {
                            // Every id written twice: the second write must replace the first.
                            let id = format!("{t}-{}", i % 1_000);
                            put(shard, &id, &format!(r#"{{"i":{i}}}"#));
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            done.store(true, Ordering::Relaxed);
        });
        shard.refresh(true).unwrap();
        assert_eq!(count(&shard, None), 3_000);
        for id in ["0-0", "1-999", "2-500"] {
            assert_eq!(count(&shard, Some(id)), 1, "{id}");
            assert_eq!(shard.get(id, false).unwrap().unwrap().version, 2);
        }
    }
}
